//! The dashboard's stylesheet and script, embedded in the binary
//! (`crates/dashboard/assets/`), served under `/dashboard/assets/` with a
//! year-long immutable cache; pages link them with `?v=<content hash>`, so a
//! new binary's assets are fetched afresh.

use std::sync::OnceLock;

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use sha2::{Digest, Sha256};

const CSS: &[u8] = include_bytes!("../assets/dashboard.css");
const JS: &[u8] = include_bytes!("../assets/dashboard.js");

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    /// First 16 hex digits of the SHA-256 of `body`.
    hash: String,
}

fn all() -> &'static [Asset] {
    static ASSETS: OnceLock<Vec<Asset>> = OnceLock::new();
    ASSETS.get_or_init(|| {
        [
            ("dashboard.css", "text/css; charset=utf-8", CSS),
            ("dashboard.js", "text/javascript; charset=utf-8", JS),
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

/// The URL of an embedded asset, with its content hash.
pub(crate) fn url(name: &str) -> String {
    let hash = all().iter().find(|a| a.name == name).map_or("", |a| a.hash.as_str());
    format!("{}/assets/{name}?v={hash}", crate::PATH)
}

/// `GET /dashboard/assets/{name}`.
pub(crate) async fn serve(name: web::Path<String>) -> HttpResponse {
    match all().iter().find(|a| a.name == name.as_str()) {
        Some(a) => HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, a.content_type))
            .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .body(a.body),
        None => HttpResponse::NotFound().finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asset_urls_carry_their_content_hash() {
        let css = url("dashboard.css");
        assert!(css.starts_with("/dashboard/assets/dashboard.css?v="), "{css}");
        assert_eq!(css.len(), "/dashboard/assets/dashboard.css?v=".len() + 16);
        assert_ne!(url("dashboard.css"), url("dashboard.js").replace(".js", ".css"));
    }
}
