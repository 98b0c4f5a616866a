//! The dispatch interface: how the REST and MCP adapters reach terminals.
//!
//! A binary wires [`Dispatch`] either to the in-process gateway (single node)
//! or to [`crate::http_client::HttpDispatch`], the client of a remote
//! gateway's dispatch route (scaled out). Both enforce license scoping: a
//! terminal of another license is reported exactly like one that does not
//! exist ([`DispatchError::NotFound`]).

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::TradeMode;
use tradeterm_core::time::{UnixMs, iso};

use crate::agent::{Command, CommandResult, ErrorBody, Permissions, Platform};

/// Status of one terminal of a license, as the gateway knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalStatus {
    /// Terminal id (`X-Terminal-Id`).
    pub id: String,
    /// Label given when the terminal key was created.
    pub name: String,
    /// Whether an agent is connected now.
    pub connected: bool,
    /// Whether a terminal installation has bound the key.
    pub bound: bool,
    /// MT4 or MT5, once known.
    pub platform: Option<Platform>,
    /// Terminal build, once known.
    pub build: Option<u32>,
    /// Account number, once known.
    pub account_login: Option<u64>,
    /// Trade server, once known.
    pub account_server: Option<String>,
    /// Deposit currency, once known.
    pub account_currency: Option<String>,
    /// Demo, real or contest, as reported by the terminal.
    pub trade_mode: Option<TradeMode>,
    /// Trading permissions last reported.
    pub permissions: Permissions,
    /// Last frame received.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub last_seen: Option<UnixMs>,
    /// When the current connection started.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub connected_since: Option<UnixMs>,
}

/// Why a dispatch failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DispatchError {
    /// No such terminal for this license (or it belongs to another license).
    #[error("terminal not found")]
    NotFound,
    /// The terminal exists but no agent is connected.
    #[error("terminal is not connected")]
    Unreachable,
    /// The agent did not answer within the timeout.
    #[error("terminal did not answer within {0:?}")]
    Timeout(Duration),
    /// The agent answered with an error.
    #[error("command failed: {} ({})", .0.message, .0.code)]
    CommandFailed(ErrorBody),
    /// The gateway itself could not be reached or answered nonsense.
    #[error("gateway error: {0}")]
    Gateway(String),
}

impl DispatchError {
    /// A stable code for the wire form of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "TERMINAL_NOT_FOUND",
            Self::Unreachable => "TERMINAL_UNREACHABLE",
            Self::Timeout(_) => "TERMINAL_TIMEOUT",
            Self::CommandFailed(_) => "COMMAND_FAILED",
            Self::Gateway(_) => "GATEWAY_ERROR",
        }
    }

    /// The `outcome` label of the dispatch metrics (`docs/observability.md`).
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Unreachable => "unreachable",
            Self::Timeout(_) => "timeout",
            Self::CommandFailed(_) => "command_failed",
            Self::Gateway(_) => "gateway_error",
        }
    }

    /// The `outcome` label of a dispatch result: `ok` or [`DispatchError::outcome`].
    pub fn outcome_of<T>(result: &Result<T, Self>) -> &'static str {
        match result {
            Ok(_) => "ok",
            Err(e) => e.outcome(),
        }
    }
}

/// Redis key marking a revoked credential (an API key id), set by whoever
/// revokes it and checked by the REST rate limiter in the same round trip as
/// the count, so that a revoked key stops working at once on every instance.
pub fn revocation_key(credential_id: &str) -> String {
    format!("tt:revoked:{credential_id}")
}

/// Redis channel on which every writer of a revocation mark also publishes
/// the credential's id, so that instances caching what Redis last told of a
/// credential (the REST rate limiter counting calls behind their work)
/// forget it at once.
pub const REVOCATIONS_CHANNEL: &str = "tt:revoked";

/// A listener of [`revoked_here`].
pub type RevocationListener = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// What [`LISTENERS`] keeps of a listener.
type WeakListener = std::sync::Weak<dyn Fn(&str) + Send + Sync>;

static LISTENERS: std::sync::Mutex<Vec<WeakListener>> = std::sync::Mutex::new(Vec::new());

/// Registers `listener` to hear of every credential revoked in this process
/// ([`revoked_here`]), for as long as the caller keeps it.
pub fn listen_to_revocations_here(listener: &RevocationListener) {
    let mut all = LISTENERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    all.retain(|l| l.strong_count() > 0);
    all.push(std::sync::Arc::downgrade(listener));
}

/// Tells every listener of this process that `credential_id` was revoked,
/// at once (the [`REVOCATIONS_CHANNEL`] message reaches other processes,
/// and this one, a moment later). Called by whoever revokes, after the
/// revocation mark is written.
pub fn revoked_here(credential_id: &str) {
    let live: Vec<RevocationListener> = {
        let all = LISTENERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.iter().filter_map(std::sync::Weak::upgrade).collect()
    };
    for listener in live {
        listener(credential_id);
    }
}

/// How long a revocation mark lives from the revocation, seconds: longer
/// than any token exchanged for an API key (15 min) plus the exchange cache
/// (60 s). Every writer of [`revocation_key`] uses it.
pub const REVOCATION_MARK_SECS: u64 = 24 * 3600;

/// Header carrying the shared secret of the gateway's internal routes.
pub const INTERNAL_TOKEN_HEADER: &str = "x-tradeterm-internal-token";

/// Default time a command may take before [`DispatchError::Timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends commands to terminals and lists them.
#[async_trait]
pub trait Dispatch: Send + Sync + 'static {
    /// Executes `command` on terminal `terminal_id` of license `license_id`.
    async fn execute(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError>;

    /// Lists the terminals of a license with their status.
    async fn terminals(&self, license_id: &str) -> Result<Vec<TerminalStatus>, DispatchError>;

    /// Gets ready for a command to `terminal_id` that is about to follow, so
    /// that the caller can overlap the preparation with its own work (the
    /// REST API runs it beside its rate-limit call): a scaled-out deployment
    /// reads the route table here. Never fails; the default does nothing.
    async fn prepare(&self, _license_id: &str, _terminal_id: &str) {}
}

/// Body of `POST /internal/v1/revoked` on a gateway: the terminal's agent
/// must be disconnected if it authenticated with one of these (now revoked)
/// terminal keys. Sent by the instance that rotated the key to the instance
/// holding the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RevokedKeys {
    /// The terminal.
    pub terminal_id: String,
    /// Record ids of the revoked keys.
    pub key_ids: Vec<String>,
}

/// Body of `POST /internal/v1/dispatch` on the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DispatchRequest {
    /// License the caller acts for.
    pub license_id: String,
    /// Target terminal.
    pub terminal_id: String,
    /// Command to run.
    pub command: Command,
    /// Timeout in ms (capped by the gateway at 120 000).
    pub timeout_ms: u64,
    /// Sent by a client that already followed the route table to the
    /// gateway holding the terminal (or by a gateway relaying to it): the
    /// receiving gateway answers from its own connections only and never
    /// relays again, so a stale route cannot bounce a command around.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relayed: bool,
}

/// Path of the gateway's dispatch channel: a WebSocket (`GET`, with the
/// internal token in [`INTERNAL_TOKEN_HEADER`]) that carries
/// [`ChannelRequest`]s to the gateway and [`ChannelReply`]s back, many at a
/// time and in any order, instead of one `POST /internal/v1/dispatch` per
/// command (`docs/gateway.md`, "The dispatch channel").
pub const CHANNEL_PATH: &str = "/internal/v1/channel";

/// A dispatch on the channel: the body of `POST /internal/v1/dispatch`,
/// numbered by the client, with the request id that route takes from
/// `X-Request-Id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelRequest {
    /// The client's number for this request, echoed by its reply.
    pub seq: u64,
    /// Request id of the call that caused the dispatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The dispatch.
    pub dispatch: DispatchRequest,
}

/// The answer to a [`ChannelRequest`]: what the dispatch route answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelReply {
    /// The request's `seq`.
    pub seq: u64,
    /// The answer.
    pub reply: DispatchReply,
}

/// Body of the answer of the dispatch route (HTTP 200 in both cases).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DispatchReply {
    /// Result on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CommandResult>,
    /// Error on failure: `code` is one of [`DispatchError::code`]; for
    /// `COMMAND_FAILED` `detail` carries the agent's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<DispatchReplyError>,
}

/// Error part of a [`DispatchReply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DispatchReplyError {
    /// [`DispatchError::code`].
    pub code: String,
    /// Human text.
    pub message: String,
    /// The agent's error for `COMMAND_FAILED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<ErrorBody>,
    /// The timeout for `TERMINAL_TIMEOUT`, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl From<Result<CommandResult, DispatchError>> for DispatchReply {
    fn from(r: Result<CommandResult, DispatchError>) -> Self {
        match r {
            Ok(result) => Self {
                result: Some(result),
                error: None,
            },
            Err(e) => Self {
                result: None,
                error: Some(DispatchReplyError::from(&e)),
            },
        }
    }
}

impl From<&DispatchError> for DispatchReplyError {
    fn from(e: &DispatchError) -> Self {
        Self {
            code: e.code().to_owned(),
            message: e.to_string(),
            detail: match e {
                DispatchError::CommandFailed(b) => Some(b.clone()),
                _ => None,
            },
            timeout_ms: match e {
                DispatchError::Timeout(d) => Some(d.as_millis() as u64),
                _ => None,
            },
        }
    }
}

impl DispatchReply {
    /// Turns the wire form back into the typed result.
    pub fn into_result(self) -> Result<CommandResult, DispatchError> {
        match (self.result, self.error) {
            (Some(r), None) => Ok(r),
            (_, Some(e)) => Err(match e.code.as_str() {
                "TERMINAL_NOT_FOUND" => DispatchError::NotFound,
                "TERMINAL_UNREACHABLE" => DispatchError::Unreachable,
                "TERMINAL_TIMEOUT" => DispatchError::Timeout(Duration::from_millis(e.timeout_ms.unwrap_or(0))),
                "COMMAND_FAILED" => DispatchError::CommandFailed(
                    e.detail
                        .unwrap_or_else(|| ErrorBody::new(crate::agent::codes::INTERNAL, e.message)),
                ),
                _ => DispatchError::Gateway(e.message),
            }),
            (None, None) => Err(DispatchError::Gateway("empty dispatch reply".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_round_trips_every_error() {
        let errors = [
            DispatchError::NotFound,
            DispatchError::Unreachable,
            DispatchError::Timeout(Duration::from_millis(1500)),
            DispatchError::CommandFailed(ErrorBody::rejected("invalid_stops", "SL too close")),
            DispatchError::Gateway("boom".into()),
        ];
        for e in errors {
            let reply = DispatchReply::from(Err(e.clone()));
            let text = serde_json::to_string(&reply).unwrap();
            let back: DispatchReply = serde_json::from_str(&text).unwrap();
            let got = back.into_result().unwrap_err();
            match (&e, &got) {
                (DispatchError::Gateway(_), DispatchError::Gateway(_)) => {}
                _ => assert_eq!(got, e),
            }
        }
    }
}
