//! The gateway's management endpoints of the spec (§4, "Gateway management
//! endpoints"): `PUT/GET/DELETE /api/prop-firm-rules`, `PUT/GET/DELETE
//! /api/news-guard`, `GET /api/cb-stance`, and `GET
//! /api/dashboard/support/identity`.
//!
//! Like the dashboard routes they take the license's **master key** (the
//! dashboard is their client), and each runs the catalog tool of the same
//! purpose with the license's capabilities, so REST, MCP and the gateway
//! answer alike: `set_prop_firm_rules` / `get_prop_firm_status` /
//! `remove_prop_firm_rules` (capability `trade`), `set_news_guard` /
//! `get_news_guard_status` / `remove_news_guard` and `get_cb_stance`
//! (`analytics`). Terminal-scoped ones take `X-Terminal-Id`, or the only
//! connected terminal of the license. Bodies and answers are the tools'
//! (`{ "data": … }`); errors the tools' codes and statuses. The server
//! calendar, news provider and ETF flows are those of `GatewaySettings`.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tradeterm_protocol::Dispatch;
use tradeterm_tools::{Gate, Target, ToolContext, ToolError};

use crate::error::ApiError;
use crate::{Gateway, http};

/// Dispatch timeout of the tools run here.
const TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/prop-firm-rules")
            .route(web::put().to(|r, b, g| run(r, b, g, "set_prop_firm_rules")))
            .route(web::get().to(|r, g| run_query(r, g, "get_prop_firm_status")))
            .route(web::delete().to(|r, g| run_query(r, g, "remove_prop_firm_rules"))),
    )
    .service(
        web::resource("/api/news-guard")
            .route(web::put().to(|r, b, g| run(r, b, g, "set_news_guard")))
            .route(web::get().to(|r, g| run_query(r, g, "get_news_guard_status")))
            .route(web::delete().to(|r, g| run_query(r, g, "remove_news_guard"))),
    )
    .route("/api/cb-stance", web::get().to(|r, g| run_query(r, g, "get_cb_stance")))
    .route("/api/dashboard/support/identity", web::get().to(support_identity));
}

fn tool_error(e: ToolError, production: bool) -> ApiError {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if e.is_internal() {
        return if production {
            ApiError::internal(e)
        } else {
            ApiError::new(status, e.code(), e.to_string())
        };
    }
    ApiError::new(status, e.code(), e.to_string())
}

/// The target terminal: `X-Terminal-Id`, or the license's only connected one.
async fn terminal(req: &HttpRequest, gateway: &Gateway, license_id: &str) -> Result<String, ApiError> {
    if let Some(v) = req.headers().get("x-terminal-id") {
        let id = v.to_str().map(str::trim).unwrap_or_default();
        if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(ApiError::bad_request("X-Terminal-Id is not a valid terminal id"));
        }
        return Ok(id.to_owned());
    }
    let list = gateway.terminals(license_id).await.map_err(ApiError::internal)?;
    let mut connected = list.into_iter().filter(|t| t.connected);
    match (connected.next(), connected.next()) {
        (Some(only), None) => Ok(only.id),
        (Some(_), Some(_)) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "TERMINAL_ID_REQUIRED",
            "more than one terminal is connected: choose one with the X-Terminal-Id header",
        )),
        (None, _) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "MISSING_TERMINAL",
            "X-Terminal-Id header required (no terminal of this license is connected)",
        )),
    }
}

async fn call(req: &HttpRequest, gateway: &Gateway, name: &str, input: Value) -> Result<HttpResponse, ApiError> {
    let license = http::master(req, gateway).await?;
    let tool = tradeterm_tools::find(name).ok_or_else(|| ApiError::internal(format!("tool {name} is missing")))?;
    let caps = license.tier.capabilities().to_vec();
    if tool.gate == Gate::Always && !caps.contains(&tool.capability) {
        return Err(tool_error(
            ToolError::Forbidden(format!(
                "`{name}` needs the `{}` capability, which this license's tier does not include",
                tool.capability.as_str()
            )),
            false,
        ));
    }
    let terminal_id = match tool.target {
        Target::Terminal => Some(terminal(req, gateway, &license.id).await?),
        Target::License => None,
    };
    let ctx = ToolContext {
        license_id: license.id.clone(),
        caller: format!("master:{}", license.id),
        caps,
        terminal_id,
        dispatch: Arc::new(gateway.clone()) as Arc<dyn Dispatch>,
        store: gateway.store().clone(),
        force_dry_run: false,
        idempotency_key: None,
        timeout: TIMEOUT,
        now_ms: chrono::Utc::now().timestamp_millis(),
        calendar: gateway.settings().calendar.clone(),
        news: gateway.settings().news.clone(),
        etf_flows: gateway.settings().etf_flows.clone(),
    };
    let production = gateway.settings().production;
    match tool.call(ctx, input).await {
        Ok(data) => Ok(HttpResponse::Ok().json(json!({ "data": data }))),
        Err(e) => {
            tracing::info!(license = %license.id, tool = name, code = e.code(), "management call failed");
            Err(tool_error(e, production))
        }
    }
}

async fn run(
    req: HttpRequest,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
    name: &'static str,
) -> Result<HttpResponse, ApiError> {
    let input: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?
    };
    call(&req, &gateway, name, input).await
}

/// GET and DELETE: the query string as the input (`a=1&b=x,y`: numbers stay
/// numbers, comma lists become arrays for the list fields).
async fn run_query(
    req: HttpRequest,
    gateway: web::Data<Gateway>,
    name: &'static str,
) -> Result<HttpResponse, ApiError> {
    let mut input = serde_json::Map::new();
    let pairs = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))?;
    for (k, v) in pairs.into_inner() {
        let value = if k == "currencies" || k == "symbols" {
            Value::Array(
                v.split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| Value::String(s.to_owned()))
                    .collect(),
            )
        } else if let Ok(n) = v.parse::<i64>() {
            json!(n)
        } else {
            Value::String(v)
        };
        if input.insert(k.clone(), value).is_some() {
            return Err(ApiError::bad_request(format!("query parameter `{k}` is repeated")));
        }
    }
    call(&req, &gateway, name, Value::Object(input)).await
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

/// HMAC-SHA256 (RFC 2104).
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| k.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
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
