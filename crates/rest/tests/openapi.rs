//! The OpenAPI document and the interactive reference.
//!
//! - The document validates as OpenAPI 3.1 with `openapi-spec-validator`
//!   (Python; `pip install -r scripts/requirements-test.txt`). A missing
//!   validator fails the test: it is never skipped.
//! - It covers every catalog tool, every route of `ROUTES` and the fixed
//!   routes, with unique operationIds, bearer security on everything but the
//!   public routes, rate-limit headers and resolvable `$ref`s.
//! - `GET /api/v1/docs` on a real server loads Swagger UI from embedded
//!   assets only.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::process::Command as Process;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_protocol::token::{DEFAULT_AUDIENCE, DEFAULT_ISSUER, TokenVerifier, generate_rsa_pem_pair};
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError, TerminalStatus};
use tradeterm_rest::openapi::{ERROR_CODES, document, path_params};
use tradeterm_rest::routes::{Auth, InputFrom, ROUTES};
use tradeterm_rest::{AppState, RestServer, RestSettings};
use tradeterm_tools::{Gate, Target, ToolError, catalog};

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const PUBLIC: [(&str, &str); 4] = [
    ("post", "/api/token"),
    ("get", "/healthz"),
    ("get", "/api/v1/openapi.json"),
    ("get", "/api/v1/docs"),
];

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            assert!(METHODS.contains(&method.as_str()), "{path}: unexpected key {method}");
            out.push((method.clone(), path.clone(), op));
        }
    }
    out
}

fn resolve<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("non-local $ref {reference}"));
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("$ref {reference} does not resolve"))
}

fn deref<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(doc, r),
        None => v,
    }
}

#[test]
fn document_passes_openapi_spec_validator() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).expect("serialise")).expect("write");
    // `OPENAPI_OUT=<file>` keeps a copy to look at.
    if let Some(out) = std::env::var_os("OPENAPI_OUT") {
        std::fs::copy(&file, out).expect("copy to OPENAPI_OUT");
    }
    let hint = "run `pip install -r scripts/requirements-test.txt` (from the repository root) to install the OpenAPI validator";
    let out = match Process::new("python3")
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("could not run python3 ({e}): install Python 3, then {hint}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("No module named") {
        panic!("openapi-spec-validator is not installed: {hint}\n{stderr}");
    }
    assert!(
        out.status.success() && stdout.contains(&format!("{}: OK", file.display())),
        "openapi-spec-validator rejected the document ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn every_tool_has_exactly_one_generic_operation() {
    let doc = document();
    for tool in catalog() {
        let path = format!("/api/v1/tools/{}", tool.name);
        let item = doc["paths"][&path]
            .as_object()
            .unwrap_or_else(|| panic!("{path} missing"));
        assert_eq!(item.keys().collect::<Vec<_>>(), vec!["post"], "{path}");
        let op = &item["post"];
        assert_eq!(op["operationId"], format!("tool_{}", tool.name));
        assert_eq!(op["summary"], tool.title);
        assert!(
            op["description"].as_str().unwrap().starts_with(tool.description),
            "{path}"
        );
        assert_eq!(op["x-capability"], tool.capability.as_str());
        let body = deref(&doc, &op["requestBody"]["content"]["application/json"]["schema"]);
        assert_eq!(body["type"], "object", "{path}: body is the input schema");
        let input_props: BTreeSet<&String> = tool.input_schema["properties"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let body_props: BTreeSet<&String> = body["properties"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(input_props, body_props, "{path}");
    }
    let generic = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|p| p.starts_with("/api/v1/tools/"))
        .count();
    assert_eq!(
        generic,
        catalog().len(),
        "one /api/v1/tools/<name> path per tool, no others"
    );
}

#[test]
fn every_route_has_its_operation() {
    let doc = document();
    for route in ROUTES {
        let tool = tradeterm_tools::find(route.tool).unwrap_or_else(|| panic!("{} names unknown tool", route.path));
        let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
        assert!(op.is_object(), "{} {} missing", route.method, route.path);
        assert_eq!(op["x-tool"], route.tool);
        assert_eq!(op["summary"], tool.title);
        assert_eq!(op["x-capability"], tool.capability.as_str());
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|a| a.iter().map(|p| deref(&doc, p)).collect())
            .unwrap_or_default();
        let named = |name: &str, place: &str| params.iter().find(|p| p["name"] == name && p["in"] == place).copied();
        for name in path_params(route.path) {
            let p = named(name, "path").unwrap_or_else(|| panic!("{}: no path parameter {name}", route.path));
            assert_eq!(p["required"], true);
            assert!(
                tool.input_schema["properties"].get(name).is_some(),
                "{}: `{name}` is not an input of {}",
                route.path,
                tool.name
            );
            let want = &tool.input_schema["properties"][name]["type"];
            if let Some(t) = want.as_str() {
                assert_eq!(
                    p["schema"]["type"], t,
                    "{}: `{name}` typed from the input schema",
                    route.path
                );
            }
        }
        assert_eq!(
            named("X-Terminal-Id", "header").is_some(),
            tool.target == Target::Terminal,
            "{}",
            route.path
        );
        assert_eq!(
            named("Idempotency-Key", "header").is_some(),
            tool.gate == Gate::LiveOnly,
            "{}",
            route.path
        );
        let others: BTreeSet<String> = tool.input_schema["properties"]
            .as_object()
            .map(|m| {
                m.keys()
                    .filter(|k| !path_params(route.path).contains(&k.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        match route.input {
            InputFrom::Query => {
                assert!(op.get("requestBody").is_none(), "{}", route.path);
                let query: BTreeSet<String> = params
                    .iter()
                    .filter(|p| p["in"] == "query")
                    .map(|p| p["name"].as_str().unwrap().to_owned())
                    .collect();
                assert_eq!(query, others, "{}: query parameters are the other inputs", route.path);
            }
            InputFrom::Body => {
                assert!(params.iter().all(|p| p["in"] != "query"), "{}", route.path);
                let body = deref(&doc, &op["requestBody"]["content"]["application/json"]["schema"]);
                let props: BTreeSet<String> = body["properties"]
                    .as_object()
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default();
                assert_eq!(
                    props, others,
                    "{}: the body is the input minus the path parameters",
                    route.path
                );
            }
        }
    }
    for (method, path) in [
        ("post", "/api/token"),
        ("get", "/api/v1/tools"),
        ("get", "/api/v1/openapi.json"),
        ("get", "/api/v1/docs"),
        ("get", "/healthz"),
        ("get", "/api/v1/events"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path} missing");
    }
    // Nothing but the routes above.
    let expected = ROUTES.len() + catalog().len() + 6;
    assert_eq!(operations(&doc).len(), expected);
}

#[test]
fn operation_ids_security_and_headers() {
    let doc = document();
    assert_eq!(doc["components"]["securitySchemes"]["bearerAuth"]["type"], "http");
    assert_eq!(doc["components"]["securitySchemes"]["bearerAuth"]["scheme"], "bearer");
    let mut ids = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path}: no operationId"));
        assert!(ids.insert(id.to_owned()), "duplicate operationId {id}");
        let public = PUBLIC.contains(&(method.as_str(), path.as_str()));
        // The management rows take the master key and are not rate-limited.
        let master = ROUTES
            .iter()
            .any(|r| r.auth == Auth::MasterKey && r.path == path && r.method.eq_ignore_ascii_case(&method));
        let security = op.get("security").unwrap_or(&doc["security"]);
        if public {
            assert_eq!(security, &serde_json::json!([]), "{method} {path} is public");
        } else if master && path == "/api/v1/audit" {
            // The master key, or a REST credential holding `audit` (docs/audit.md).
            assert_eq!(
                security,
                &serde_json::json!([{ "masterKey": [] }, { "bearerAuth": [] }]),
                "{method} {path}: the master key or an audit-scoped key"
            );
        } else if master {
            assert_eq!(
                security,
                &serde_json::json!([{ "masterKey": [] }]),
                "{method} {path} needs the master key"
            );
        } else {
            assert_eq!(
                security,
                &serde_json::json!([{ "bearerAuth": [] }]),
                "{method} {path} needs the bearer"
            );
        }
        let responses = op["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path}: no responses"));
        assert!(responses.contains_key("200"), "{method} {path}");
        for (status, r) in responses {
            let r = deref(&doc, r);
            let headers = &r["headers"];
            // 401 and 405 are answered before the request is counted.
            if !public && !master && status != "401" && status != "405" {
                for h in ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"] {
                    let header = deref(&doc, &headers[h]);
                    assert!(header.is_object(), "{method} {path} {status}: no {h}");
                }
            }
            if status == "405" {
                let allow = deref(&doc, &headers["Allow"]);
                assert_eq!(allow["required"], true, "{method} {path}: 405 without Allow");
            }
            if status == "429" {
                assert!(
                    deref(&doc, &headers["Retry-After"]).is_object(),
                    "{method} {path}: 429 without Retry-After"
                );
            }
            if status != "200" {
                let schema = &r["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/ErrorEnvelope", "{method} {path} {status}");
                for (code, example) in r["content"]["application/json"]["examples"].as_object().unwrap() {
                    let known = ERROR_CODES.iter().find(|c| c.code == code).expect("known code");
                    assert_eq!(known.status.to_string(), *status, "{code} under {status}");
                    assert_eq!(example["value"]["error"]["code"], code.as_str());
                }
            }
        }
        if !public {
            for s in ["401", "500"] {
                assert!(responses.contains_key(s), "{method} {path}: no {s}");
            }
            // 429: the license's rate limit, or (master-key routes too) the
            // guessing throttle of failed authentications.
            assert!(responses.contains_key("429"), "{method} {path}: no 429");
        }
        assert!(responses.contains_key("405"), "{method} {path}: no 405");
        if op.get("x-tool").is_some() {
            let tool = tradeterm_tools::find(op["x-tool"].as_str().unwrap()).unwrap();
            let data = &responses["200"]["content"]["application/json"]["schema"]["properties"]["data"];
            assert!(
                deref(&doc, data).is_object(),
                "{method} {path}: 200 data is the output schema"
            );
            assert!(["read", "analytics", "trade", "audit"].contains(&op["x-capability"].as_str().unwrap()));
            let codes: BTreeSet<&str> = responses
                .values()
                .flat_map(|r| deref(&doc, r)["content"]["application/json"]["examples"].as_object())
                .flat_map(|m| m.keys().map(String::as_str))
                .collect();
            assert!(
                codes.contains("VALIDATION_ERROR") && codes.contains("GATEWAY_ERROR"),
                "{path}"
            );
            if tool.target == Target::Terminal {
                assert!(
                    codes.contains("MISSING_TERMINAL") && codes.contains("TERMINAL_ID_REQUIRED"),
                    "{path}"
                );
            }
            if tool.gate == Gate::LiveOnly {
                assert!(
                    codes.contains("TRADING_DISABLED") && codes.contains("ORDER_REJECTED"),
                    "{path}"
                );
                assert!(codes.contains("IDEMPOTENCY_CONFLICT"), "{path}");
            } else {
                assert!(codes.contains("FORBIDDEN"), "{path}");
            }
        }
    }
}

fn walk<'a>(v: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                walk(x, format!("{at}/{k}"), out);
            }
            out.push((at, v));
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn schemas_live_in_components_and_every_ref_resolves() {
    let doc = document();
    let mut nodes = Vec::new();
    walk(&doc, String::new(), &mut nodes);
    for (at, node) in &nodes {
        let o = node.as_object().unwrap();
        // `properties/$schema` would be a property name; none exists in this catalog.
        assert!(!o.contains_key("$schema"), "$schema at {at}");
        assert!(!o.contains_key("$defs"), "$defs at {at}");
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            assert!(!r.contains("$defs"), "{at}: {r}");
            resolve(&doc, r);
        }
    }
    for name in doc["components"]["schemas"].as_object().unwrap().keys() {
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
            "component name {name}"
        );
    }
    // Every schemars definition of the catalog made it into the components.
    for tool in catalog() {
        for schema in [&tool.input_schema, &tool.output_schema] {
            for def in schema
                .get("$defs")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|m| m.keys())
            {
                let found = doc["components"]["schemas"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .any(|k| k == def || k.strip_prefix(def.as_str()).is_some_and(|s| s.starts_with('_')));
                assert!(found, "{}: $defs/{def} not in components", tool.name);
            }
        }
    }
    let envelope = &doc["components"]["schemas"]["ErrorEnvelope"];
    let codes: Vec<&str> = envelope["properties"]["error"]["properties"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(codes, ERROR_CODES.iter().map(|c| c.code).collect::<Vec<_>>());
}

#[test]
fn document_is_deterministic() {
    assert_eq!(document().to_string(), document().to_string());
}

/// Keeps [`ERROR_CODES`] in step with the tool errors and the codes this crate answers with.
#[test]
fn error_codes_cover_every_answered_code() {
    let samples = [
        ToolError::InvalidInput(String::new()),
        ToolError::Forbidden(String::new()),
        ToolError::TradingDisabled(String::new()),
        ToolError::NotConfirmed(String::new()),
        ToolError::TerminalRequired,
        ToolError::NoTerminalConnected,
        ToolError::TerminalAmbiguous,
        ToolError::NotFound(String::new()),
        ToolError::Rejected {
            retcode: String::new(),
            message: String::new(),
        },
        ToolError::Conflict(String::new()),
        ToolError::LimitReached {
            code: "API_KEY_LIMIT",
            message: String::new(),
        },
        ToolError::LimitReached {
            code: "WEBHOOK_LIMIT",
            message: String::new(),
        },
        ToolError::Dispatch(String::new()),
        ToolError::Gateway(String::new()),
        ToolError::Internal(String::new()),
    ];
    for e in &samples {
        // A new variant fails to compile here: add it to `samples` and, if its code is new, to ERROR_CODES.
        match e {
            ToolError::InvalidInput(_)
            | ToolError::Forbidden(_)
            | ToolError::TradingDisabled(_)
            | ToolError::NotConfirmed(_)
            | ToolError::TerminalRequired
            | ToolError::NoTerminalConnected
            | ToolError::TerminalAmbiguous
            | ToolError::NotFound(_)
            | ToolError::Rejected { .. }
            | ToolError::Conflict(_)
            | ToolError::LimitReached { .. }
            | ToolError::Dispatch(_)
            | ToolError::Gateway(_)
            | ToolError::Internal(_) => {}
        }
        assert!(
            ERROR_CODES
                .iter()
                .any(|c| c.code == e.code() && c.status == e.http_status()),
            "{} ({}) missing from ERROR_CODES",
            e.code(),
            e.http_status()
        );
    }
    // Codes written into this crate's sources (`RestError::new(status, "CODE", …)` and the helpers).
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = BTreeMap::new();
    for entry in std::fs::read_dir(&src).expect("src") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        for (i, _) in text.match_indices("::new(") {
            let rest = &text[i + "::new(".len()..];
            let Some((status, rest)) = rest.split_once(',') else {
                continue;
            };
            let Ok(status) = status.trim().parse::<u16>() else {
                continue;
            };
            let Some(code) = rest.trim_start().strip_prefix('"').and_then(|r| r.split('"').next()) else {
                continue;
            };
            if code.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                seen.insert(code.to_owned(), status);
            }
        }
    }
    assert!(seen.contains_key("GATEWAY_ERROR"), "the scan found nothing: {seen:?}");
    for (code, status) in seen {
        assert!(
            ERROR_CODES.iter().any(|c| c.code == code && c.status == status),
            "{code} ({status}) is answered by the REST crate but missing from ERROR_CODES"
        );
    }
    for (code, status) in [
        ("UNAUTHORIZED", 401),
        ("RATE_LIMITED", 429),
        ("VALIDATION_ERROR", 400),
        ("INTERNAL_ERROR", 500),
    ] {
        assert!(
            ERROR_CODES.iter().any(|c| c.code == code && c.status == status),
            "{code}"
        );
    }
}

/// Knows no terminal.
#[derive(Debug)]
struct NoTerminals;

#[async_trait]
impl Dispatch for NoTerminals {
    async fn execute(&self, _: &str, _: &str, _: Command, _: Duration) -> Result<CommandResult, DispatchError> {
        Err(DispatchError::NotFound)
    }

    async fn terminals(&self, _: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        Err(DispatchError::NotFound)
    }
}

async fn start_server() -> (String, tradeterm_rest::ServerHandle) {
    let store = tradeterm_store::SqlStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let (_private, public) = generate_rsa_pem_pair().expect("keys");
    let verifier = TokenVerifier::from_pem(public.as_bytes(), DEFAULT_ISSUER, DEFAULT_AUDIENCE).expect("verifier");
    let services = Arc::new(tradeterm_tools::Services::new(Arc::new(NoTerminals), Arc::new(store)));
    let state = AppState::new(
        RestSettings {
            workers: 1,
            ..RestSettings::default()
        },
        services,
        verifier,
        GatewayClient::new("http://127.0.0.1:9").expect("gateway client"),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let server = RestServer::build(state, listener).expect("server");
    let base = format!("http://127.0.0.1:{}", server.port());
    let handle = server.handle();
    tokio::spawn(server.run_until_stopped());
    (base, handle)
}

/// `href="…"` and `src="…"` values of a page.
fn references(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        for (i, _) in html.match_indices(attr) {
            let rest = &html[i + attr.len()..];
            if let Some(end) = rest.find('"') {
                out.push(rest[..end].to_owned());
            }
        }
    }
    out
}

#[tokio::test]
async fn docs_page_loads_swagger_ui_from_embedded_assets() {
    let (base, handle) = start_server().await;
    let http = reqwest::Client::new();

    let page = http.get(format!("{base}/api/v1/docs")).send().await.expect("page");
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page names an external URL:\n{html}"
    );
    assert!(!html.contains("<script>"), "no inline script (the CSP forbids it)");

    let refs = references(&html);
    let assets: Vec<&String> = refs.iter().filter(|r| r.starts_with("/api/v1/docs/assets/")).collect();
    for wanted in ["swagger-ui.css", "swagger-ui-bundle.js", "swagger-initializer.js"] {
        assert!(
            assets
                .iter()
                .any(|a| a.starts_with(&format!("/api/v1/docs/assets/{wanted}?v="))),
            "page does not load {wanted}: {refs:?}"
        );
    }
    let mut initializer = String::new();
    for r in &refs {
        assert!(r.starts_with('/'), "reference {r} is not same-origin");
        let resp = http.get(format!("{base}{r}")).send().await.expect("asset");
        assert_eq!(resp.status(), 200, "{r}");
        let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
        let path = r.split('?').next().unwrap();
        let want = match path.rsplit('.').next().unwrap() {
            "css" => "text/css; charset=utf-8",
            "js" => "text/javascript; charset=utf-8",
            "txt" => "text/plain; charset=utf-8",
            "json" => "application/json",
            other => panic!("unexpected asset kind {other} ({r})"),
        };
        assert_eq!(content_type, want, "{r}");
        if path.starts_with("/api/v1/docs/assets/") {
            let cache = resp.headers()["cache-control"].to_str().unwrap().to_owned();
            assert!(
                cache.contains("max-age=31536000") && cache.contains("immutable"),
                "{r}: {cache}"
            );
            let etag = resp.headers()["etag"].clone();
            let body = resp.bytes().await.unwrap();
            assert!(!body.is_empty(), "{r}");
            if path.ends_with("swagger-initializer.js") {
                initializer = String::from_utf8(body.to_vec()).unwrap();
            }
            if path.ends_with("swagger-ui-bundle.js") {
                assert!(body.len() > 1_000_000, "the real bundle");
                assert!(String::from_utf8_lossy(&body[..]).contains("SwaggerUIBundle"));
            }
            let again = http
                .get(format!("{base}{r}"))
                .header("if-none-match", etag)
                .send()
                .await
                .unwrap();
            assert_eq!(again.status(), 304, "{r}: revalidation");
        }
    }
    for needle in [
        r#"url: "/api/v1/openapi.json""#,
        "validatorUrl: null",
        "persistAuthorization: true",
    ] {
        assert!(
            initializer.contains(needle),
            "initializer lacks {needle}:\n{initializer}"
        );
    }
    assert!(!initializer.contains("http://") && !initializer.contains("https://"));

    // The description it loads.
    let spec = http.get(format!("{base}/api/v1/openapi.json")).send().await.unwrap();
    assert_eq!(spec.status(), 200);
    assert_eq!(spec.headers()["content-type"], "application/json");
    let served: Value = spec.json().await.unwrap();
    assert_eq!(served, document());

    let missing = http
        .get(format!("{base}/api/v1/docs/assets/nope.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let slash = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{base}/api/v1/docs/"))
        .send()
        .await
        .unwrap();
    assert_eq!(slash.status(), 308);
    assert_eq!(slash.headers()["location"], "/api/v1/docs");

    handle.stop(true).await;
}

/// The vendored files are the published swagger-ui-dist files (see assets/README.md).
#[test]
fn vendored_swagger_ui_matches_its_checksums() {
    use sha2::{Digest, Sha256};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/swagger-ui-dist");
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("SHA256SUMS");
    let mut checked = 0;
    for line in sums.lines().filter(|l| !l.trim().is_empty()) {
        let (sum, name) = line.split_once("  ").expect("`<sha256>  <file>` lines");
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            hex::encode(Sha256::digest(&bytes)),
            sum,
            "{name} differs from swagger-ui-dist"
        );
        checked += 1;
    }
    assert!(checked >= 3);
    assert!(
        std::fs::read_to_string(dir.join("../README.md"))
            .unwrap()
            .contains(tradeterm_rest::docs::SWAGGER_UI_VERSION)
    );
}

/// A path of the document with its parameters filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "X1" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every path of the served document answers every method it does not
/// declare with 405, `Allow` = the declared methods and the error envelope,
/// before authentication; the declared methods still reach their routes;
/// unknown paths (and unknown tool names) stay 404.
#[tokio::test]
async fn undeclared_methods_are_405_with_allow_and_unknown_paths_404() {
    let (base, handle) = start_server().await;
    let http = reqwest::Client::new();
    let doc: Value = http
        .get(format!("{base}/api/v1/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() > catalog().len(), "the served document lists every path");
    let mut checked = 0;
    for (path, item) in paths {
        let url = format!("{base}{}", concrete(path));
        let declared: BTreeSet<String> = item
            .as_object()
            .unwrap()
            .keys()
            .map(|m| m.to_ascii_uppercase())
            .collect();
        for method in METHODS {
            let method = method.to_ascii_uppercase();
            let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            let resp = http.request(m, &url).send().await.unwrap();
            let status = resp.status().as_u16();
            if declared.contains(&method) {
                assert!(
                    status != 405 && status != 404,
                    "{method} {path} is declared but answered {status}"
                );
                continue;
            }
            assert_eq!(status, 405, "{method} {path}");
            let allow: BTreeSet<String> = resp
                .headers()
                .get("allow")
                .unwrap_or_else(|| panic!("{method} {path}: no Allow"))
                .to_str()
                .unwrap()
                .split(',')
                .map(|m| m.trim().to_owned())
                .collect();
            assert_eq!(allow, declared, "{method} {path}: Allow");
            if method != "HEAD" {
                let body: Value = resp.json().await.unwrap();
                assert_eq!(body["error"]["code"], "METHOD_NOT_ALLOWED", "{method} {path}");
                assert!(body["error"]["message"].is_string());
            }
            checked += 1;
        }
    }
    assert!(checked > paths.len() * 5, "{checked}");

    // With a (bad) token too: the method is checked first.
    let resp = http
        .get(format!("{base}/api/v1/tools/get_tick"))
        .bearer_auth("svc_api_nonsense")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "POST");

    for (method, path) in [
        ("GET", "/api/v1/nope"),
        ("POST", "/api/v1/nope"),
        ("GET", "/api/v1/tools/no_such_tool"),
        ("DELETE", "/api/v1/tools/no_such_tool"),
        ("GET", "/api/v1/positions/"),
        ("GET", "/api/v1/positions/1/close/more"),
        ("PUT", "/"),
    ] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let resp = http.request(m, format!("{base}{path}")).send().await.unwrap();
        assert_eq!(resp.status(), 404, "{method} {path}");
        assert!(resp.headers().get("allow").is_none(), "{method} {path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "NOT_FOUND", "{method} {path}");
    }
    // An unknown tool name keeps its answer: authentication first, then 404.
    let resp = http
        .post(format!("{base}/api/v1/tools/no_such_tool"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    handle.stop(true).await;
}

/// Every `format` value in a schema document (skipping literal data:
/// `default`, `examples`, `const`, `enum`), with where it is.
fn formats(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if ["default", "examples", "example", "const", "enum"].contains(&k.as_str()) {
                    continue;
                }
                if k == "format"
                    && let Some(f) = x.as_str()
                {
                    out.push((format!("{at}/format"), f.to_owned()));
                }
                formats(x, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                formats(x, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// No schema of the served document, nor of the catalog (`GET /api/v1/tools`
/// lists those), carries a `format` outside JSON Schema 2020-12's; integer
/// widths are bounds instead.
#[tokio::test]
async fn schemas_use_only_standard_formats_and_state_integer_widths() {
    let (base, handle) = start_server().await;
    let doc: Value = reqwest::get(format!("{base}/api/v1/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    handle.stop(true).await;
    let allowed: BTreeSet<&str> = tradeterm_tools::schema::STANDARD_FORMATS.iter().copied().collect();
    let mut found = Vec::new();
    formats(&doc, "", &mut found);
    for tool in catalog() {
        formats(&tool.input_schema, &format!("{}/input", tool.name), &mut found);
        formats(&tool.output_schema, &format!("{}/output", tool.name), &mut found);
    }
    let bad: Vec<&(String, String)> = found.iter().filter(|(_, f)| !allowed.contains(f.as_str())).collect();
    assert!(bad.is_empty(), "non-standard formats: {bad:?}");

    // `get_bars.count` is a `u32`: in its component and as a query parameter.
    let input = tradeterm_tools::find("get_bars").unwrap();
    let component = input.input_schema["title"].as_str().unwrap();
    let count = &doc["components"]["schemas"][component]["properties"]["count"];
    // The range its check enforces (1–MAX_BARS), not only the u32 width.
    assert_eq!(
        (&count["minimum"], &count["maximum"]),
        (&json!(1), &json!(10_000)),
        "{count}"
    );
    let params = doc["paths"]["/api/v1/market/bars/{symbol}"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let param = params.iter().find(|p| p["name"] == "count").expect("count parameter");
    assert_eq!(param["schema"]["minimum"], 1);
    assert_eq!(param["schema"]["maximum"], 10_000);
    // A u32 without a range of its own states its width.
    let order = tradeterm_tools::find("place_order").unwrap();
    let order_component = order.input_schema["title"].as_str().unwrap();
    let deviation = &doc["components"]["schemas"][order_component]["properties"]["deviation_points"];
    assert_eq!(
        (&deviation["minimum"], &deviation["maximum"]),
        (&json!(0), &json!(4_294_967_295_u64)),
        "{deviation}"
    );
}
