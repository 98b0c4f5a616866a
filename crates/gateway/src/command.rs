//! The raw command route of the dashboard:
//! `POST /api/dashboard/terminals/{id}/command` (master key).
//!
//! It sends one agent-protocol [`Command`] to a terminal of the license and
//! answers the agent's [`CommandResult`] as it came, without any tool in
//! between. Its client is the conformance kit (`tradeterm agent check`), and
//! it serves anyone who needs to see exactly what an agent answers.
//!
//! Body: `{ "command": <Command>, "timeout_ms"?: 1..=120000 (default 10000),
//! "live"?: bool }`. Trade commands (`place_order`, `close_position`,
//! `modify_position`, `cancel_order`, `reverse_position`) are refused with
//! 400 unless `"live": true`; they then go through [`Dispatch::execute`] like
//! every other command, so the license scoping (a terminal of another license
//! is not found) and the fail-closed trading check (`TRADING_DISABLED` when
//! the terminal reported trading off) apply unchanged.
//!
//! Answers: 200 `{ "result": <CommandResult>, "elapsed_ms": f64 }`; a
//! terminal that does not exist on this license → 404 `NOT_FOUND`; not
//! connected → 502 `TERMINAL_UNREACHABLE`; no answer in time → 504
//! `TERMINAL_TIMEOUT` (with `timeout_ms`); an agent error → 502
//! `COMMAND_FAILED` with the agent's body as `detail` (`code`, `message`,
//! `retcode`). All in the gateway's envelope `{ "error": { "code", "message", … } }`.

use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::json;
use tradeterm_protocol::dispatch::DEFAULT_TIMEOUT;
use tradeterm_protocol::{Command, Dispatch, DispatchError};

use crate::error::ApiError;
use crate::{Gateway, http};

/// Longest `timeout_ms` accepted (the dispatch's own cap).
const MAX_TIMEOUT_MS: u64 = 120_000;

/// Body of the route.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandBody {
    /// The protocol command.
    command: Command,
    /// How long to wait for the agent, ms.
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Must be `true` for trade commands.
    #[serde(default)]
    live: bool,
}

/// Registers the route.
pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/api/dashboard/terminals/{id}/command", web::post().to(command));
}

fn valid_terminal_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

async fn command(
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = http::master(&req, &gateway).await?;
    let terminal_id = path.into_inner();
    if !valid_terminal_id(&terminal_id) {
        return Err(ApiError::bad_request("not a valid terminal id"));
    }
    let body: CommandBody =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    let timeout = match body.timeout_ms {
        None => DEFAULT_TIMEOUT,
        Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Duration::from_millis(ms),
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "`timeout_ms` must be between 1 and {MAX_TIMEOUT_MS}"
            )));
        }
    };
    let name = body.command.name();
    if body.command.is_trade() {
        if !body.live {
            return Err(ApiError::bad_request(format!(
                "`{name}` changes the account: send `\"live\": true` to execute it"
            )));
        }
        tracing::info!(license = %license.id, terminal = %terminal_id, cmd = name, "raw trade command");
    }
    let started = Instant::now();
    let result = gateway.execute(&license.id, &terminal_id, body.command, timeout).await;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    match result {
        Ok(result) => Ok(HttpResponse::Ok().json(json!({ "result": result, "elapsed_ms": elapsed_ms }))),
        Err(DispatchError::NotFound) => Err(ApiError::not_found("no terminal with this id on this license")),
        Err(e) => Ok(dispatch_error(&e, elapsed_ms)),
    }
}

/// The gateway's error envelope for a failed dispatch, with the agent's error
/// body (`detail`) or the timeout.
fn dispatch_error(e: &DispatchError, elapsed_ms: f64) -> HttpResponse {
    let status = match e {
        DispatchError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::BAD_GATEWAY,
    };
    let mut error = json!({ "code": e.code(), "message": e.to_string(), "elapsed_ms": elapsed_ms });
    match e {
        DispatchError::CommandFailed(body) => error["detail"] = json!(body),
        DispatchError::Timeout(d) => error["timeout_ms"] = json!(d.as_millis() as u64),
        _ => {}
    }
    HttpResponse::build(status).json(json!({ "error": error }))
}
