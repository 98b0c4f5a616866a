//! The interactive API reference, `GET /api/v1/docs`: Swagger UI over
//! `/api/v1/openapi.json`, entirely from the binary.
//!
//! Swagger UI is swagger-ui-dist [`SWAGGER_UI_VERSION`] from npm, vendored in
//! `crates/rest/assets/swagger-ui-dist/` (see the README there for how to
//! refresh it) and embedded with `include_bytes!`. The page loads only
//! same-origin assets under `/api/v1/docs/assets/` and sends a
//! Content-Security-Policy that forbids anything else, so the reference works
//! offline and never calls a third party (the online validator badge is off:
//! `validatorUrl: null`).
//!
//! Asset URLs carry `?v=<content hash>` and are served with a year-long
//! immutable cache; the page itself is `no-cache`.

use std::sync::OnceLock;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use sha2::{Digest, Sha256};

/// Version of the vendored swagger-ui-dist.
pub const SWAGGER_UI_VERSION: &str = "5.35.0";

/// Path of the page.
pub const DOCS_PATH: &str = "/api/v1/docs";

/// Prefix of the page's assets.
pub const ASSETS_PATH: &str = "/api/v1/docs/assets";

const BUNDLE_JS: &[u8] = include_bytes!("../assets/swagger-ui-dist/swagger-ui-bundle.js");
const CSS: &[u8] = include_bytes!("../assets/swagger-ui-dist/swagger-ui.css");
const LICENSE: &[u8] = include_bytes!("../assets/swagger-ui-dist/LICENSE");

/// Starts Swagger UI; a file of its own so the page needs no inline script.
const INIT_JS: &str = r##""use strict";
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/api/v1/openapi.json",
    dom_id: "#swagger-ui",
    validatorUrl: null,
    persistAuthorization: true,
    deepLinking: true,
    displayOperationId: true,
    displayRequestDuration: true,
    filter: true,
    docExpansion: "list",
    tryItOutEnabled: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
"##;

/// Content-Security-Policy of the page: same-origin only.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                        font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'";

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    /// First 16 hex digits of the SHA-256 of `body`.
    hash: String,
}

fn assets() -> &'static [Asset] {
    static ASSETS: OnceLock<Vec<Asset>> = OnceLock::new();
    ASSETS.get_or_init(|| {
        [
            ("swagger-ui.css", "text/css; charset=utf-8", CSS),
            ("swagger-ui-bundle.js", "text/javascript; charset=utf-8", BUNDLE_JS),
            (
                "swagger-initializer.js",
                "text/javascript; charset=utf-8",
                INIT_JS.as_bytes(),
            ),
            ("LICENSE.txt", "text/plain; charset=utf-8", LICENSE),
        ]
        .into_iter()
        .map(|(name, content_type, body)| Asset {
            name,
            content_type,
            body,
            hash: hex::encode(&Sha256::digest(body)[..8]),
        })
        .collect()
    })
}

fn asset_url(name: &str) -> String {
    let hash = assets()
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.hash.as_str())
        .unwrap_or_default();
    format!("{ASSETS_PATH}/{name}?v={hash}")
}

/// The HTML of the page.
pub fn page() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        format!(
            r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>tradeterm REST API reference</title>
  <link rel="stylesheet" href="{css}">
</head>
<body>
  <noscript>This reference needs JavaScript. The raw description is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</noscript>
  <div id="swagger-ui"></div>
  <script src="{bundle}"></script>
  <script src="{init}"></script>
</body>
</html>
<!-- Swagger UI {version} (swagger-ui-dist), Apache-2.0: {license} -->
"#,
            css = asset_url("swagger-ui.css"),
            bundle = asset_url("swagger-ui-bundle.js"),
            init = asset_url("swagger-initializer.js"),
            license = asset_url("LICENSE.txt"),
            version = SWAGGER_UI_VERSION,
        )
    })
}

/// Registers `GET /api/v1/docs` and its assets.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(DOCS_PATH, web::get().to(docs_page))
        .route("/api/v1/docs/", web::get().to(redirect_to_docs))
        // A static scope, so that other requests never try the `{file}` pattern.
        .service(
            web::scope("/api/v1/docs/assets")
                .route("/{file}", web::get().to(asset))
                .default_service(web::to(|req: HttpRequest| async move {
                    Err::<HttpResponse, _>(crate::routes::no_route(req.path()))
                })),
        );
}

async fn docs_page() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .body(page())
}

async fn redirect_to_docs() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, DOCS_PATH))
        .finish()
}

async fn asset(req: HttpRequest, file: web::Path<String>) -> HttpResponse {
    let Some(a) = assets().iter().find(|a| a.name == file.as_str()) else {
        return HttpResponse::NotFound()
            .content_type("application/json")
            .body(r#"{"error":{"code":"NOT_FOUND","message":"no such docs asset"}}"#);
    };
    let etag = format!("\"{}\"", a.hash);
    let not_modified = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut resp = if not_modified {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    resp.insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .insert_header((header::ETAG, etag))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if not_modified {
        return resp.finish();
    }
    resp.content_type(a.content_type).body(a.body)
}
