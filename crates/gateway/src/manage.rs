//! The gateway's management routes that are not tools, with the license's
//! **master key**: `GET /api/dashboard/support/identity` (the support
//! widget's identity verification) and `GET`/`PUT
//! /api/dashboard/license-settings` (the owner's settings of the license:
//! whether live MCP trades ask the user first, `docs/mcp.md`, "Trade
//! confirmation").
//!
//! The spec's other management endpoints (`/api/prop-firm-rules`,
//! `/api/news-guard`, `/api/cb-stance`) run catalog tools, so they are rows of
//! the REST route table (master-key authentication), which the single-node
//! binary also serves on the gateway's port: the gateway dispatches and never
//! computes tools.

use actix_web::{HttpRequest, HttpResponse, web};
use aws_lc_rs::hmac;
use serde::Deserialize;
use serde_json::json;
use tradeterm_store::LicenseSettings;

use crate::error::ApiError;
use crate::{Gateway, http};

pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/api/dashboard/support/identity", web::get().to(support_identity))
        .service(
            web::resource("/api/dashboard/license-settings")
                .route(web::get().to(license_settings))
                .route(web::put().to(set_license_settings)),
        );
}

/// `GET /api/dashboard/license-settings`: the owner's settings of the license.
async fn license_settings(req: HttpRequest, gateway: web::Data<Gateway>) -> Result<HttpResponse, ApiError> {
    let license = http::master(&req, &gateway).await?;
    let settings = gateway.store().license_settings(&license.id).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": settings })))
}

/// The body of `PUT /api/dashboard/license-settings`: the settings to
/// change (absent ones keep their value).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsChange {
    mcp_trade_confirmation: Option<bool>,
}

/// `PUT /api/dashboard/license-settings`: changes the owner's settings and
/// answers them all. `{"mcp_trade_confirmation": false}` lets live trades
/// over MCP go without asking the user (the license owner's decision).
async fn set_license_settings(
    req: HttpRequest,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = http::master(&req, &gateway).await?;
    let change: SettingsChange = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(format!(
            "invalid JSON body: {e}; expected {{ \"mcp_trade_confirmation\": true | false }}"
        ))
    })?;
    let mut settings: LicenseSettings = gateway.store().license_settings(&license.id).await?;
    if let Some(on) = change.mcp_trade_confirmation {
        settings.mcp_trade_confirmation = on;
    }
    gateway.store().set_license_settings(&license.id, &settings).await?;
    tracing::info!(
        license = %license.id,
        mcp_trade_confirmation = settings.mcp_trade_confirmation,
        "license settings changed"
    );
    Ok(HttpResponse::Ok().json(json!({ "data": settings })))
}

/// `GET /api/dashboard/support/identity`: the HMAC-SHA256 of the license id
/// under the support widget's secret (`SUPPORT_IDENTITY_SECRET`), so the
/// widget can verify who is writing. 404 when no secret is configured.
async fn support_identity(req: HttpRequest, gateway: web::Data<Gateway>) -> Result<HttpResponse, ApiError> {
    let license = http::master(&req, &gateway).await?;
    let Some(secret) = gateway.settings().support_identity_secret.as_deref() else {
        return Err(ApiError::not_found(
            "the support widget is not configured on this gateway",
        ));
    };
    let hash = hex::encode(hmac_sha256(secret.as_bytes(), license.id.as_bytes()));
    Ok(HttpResponse::Ok().json(json!({ "data": {
        "user_id": license.id,
        "name": license.name,
        "user_hash": hash,
        "algorithm": "HMAC-SHA256",
    } })))
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`, computed by aws-lc-rs.
fn hmac_sha256(key: &[u8], message: &[u8]) -> hmac::Tag {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // Test cases 1, 2 and 6 (a key longer than the block).
        assert_eq!(
            hex::encode(hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}
