//! Errors of tool calls, with the spec's codes.

use tradeterm_protocol::DispatchError;
use tradeterm_protocol::agent::codes;

/// Why a tool call failed. Each variant maps to one error code and HTTP status
/// (see [`ToolError::code`] and [`ToolError::http_status`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// Input does not match the schema or is out of range → 400 `VALIDATION_ERROR`.
    #[error("{0}")]
    InvalidInput(String),
    /// Capability missing → 403 `FORBIDDEN`.
    #[error("{0}")]
    Forbidden(String),
    /// Live call without the trade capability or terminal permission → 403 `TRADING_DISABLED`.
    #[error("{0}")]
    TradingDisabled(String),
    /// A live trade a human had to confirm (MCP elicitation) was declined,
    /// cancelled, not answered in time, or could not be asked (the client has
    /// no elicitation capability): nothing was sent → 403 `TRADE_NOT_CONFIRMED`.
    #[error("{0}")]
    NotConfirmed(String),
    /// A terminal-scoped tool ran without a terminal → 400 `MISSING_TERMINAL`.
    #[error("X-Terminal-Id header required")]
    TerminalRequired,
    /// No `X-Terminal-Id` and no terminal of the license connected → 400 `MISSING_TERMINAL`.
    #[error("X-Terminal-Id header required (no terminal of this license is connected)")]
    NoTerminalConnected,
    /// No `X-Terminal-Id` and several terminals connected → 400 `TERMINAL_ID_REQUIRED`.
    #[error(
        "more than one terminal is connected: choose one with the X-Terminal-Id header (GET /api/v1/terminals lists them)"
    )]
    TerminalAmbiguous,
    /// The referenced position, order, entry or terminal does not exist → 404 `NOT_FOUND`.
    #[error("{0}")]
    NotFound(String),
    /// The order would be (or was) refused: `retcode` says why → 422 `ORDER_REJECTED`.
    #[error("{message}")]
    Rejected {
        /// Trade-server return code (`invalid_volume`, `invalid_stops`, `no_money`, ...).
        retcode: String,
        /// Explanation for a trader.
        message: String,
    },
    /// An idempotency key is being used by a request still in progress, or with other input → 409 `IDEMPOTENCY_CONFLICT`.
    #[error("{0}")]
    Conflict(String),
    /// A per-license limit is reached (active API keys, webhook endpoints):
    /// `code` names it → 409 `API_KEY_LIMIT` or `WEBHOOK_LIMIT`.
    #[error("{message}")]
    LimitReached {
        /// `API_KEY_LIMIT` or `WEBHOOK_LIMIT`.
        code: &'static str,
        /// What to do about it.
        message: String,
    },
    /// Terminal unreachable, timed out, or the command failed → 502 `DISPATCH_ERROR`.
    #[error("{0}")]
    Dispatch(String),
    /// Gateway communication failure → 502 `GATEWAY_ERROR`.
    #[error("{0}")]
    Gateway(String),
    /// Unexpected failure (details are logged, not returned in production) → 500 `INTERNAL_ERROR`.
    #[error("{0}")]
    Internal(String),
}

impl ToolError {
    /// The error code of the spec's envelope.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidInput(_) => "VALIDATION_ERROR",
            Self::Forbidden(_) => "FORBIDDEN",
            Self::TradingDisabled(_) => "TRADING_DISABLED",
            Self::NotConfirmed(_) => "TRADE_NOT_CONFIRMED",
            Self::TerminalRequired | Self::NoTerminalConnected => "MISSING_TERMINAL",
            Self::TerminalAmbiguous => "TERMINAL_ID_REQUIRED",
            Self::NotFound(_) => "NOT_FOUND",
            Self::Rejected { .. } => "ORDER_REJECTED",
            Self::Conflict(_) => "IDEMPOTENCY_CONFLICT",
            Self::LimitReached { code, .. } => code,
            Self::Dispatch(_) => "DISPATCH_ERROR",
            Self::Gateway(_) => "GATEWAY_ERROR",
            Self::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// The HTTP status of the REST surface.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::InvalidInput(_) | Self::TerminalRequired | Self::NoTerminalConnected | Self::TerminalAmbiguous => 400,
            Self::Forbidden(_) | Self::TradingDisabled(_) | Self::NotConfirmed(_) => 403,
            Self::NotFound(_) => 404,
            Self::Conflict(_) | Self::LimitReached { .. } => 409,
            Self::Rejected { .. } => 422,
            Self::Dispatch(_) | Self::Gateway(_) => 502,
            Self::Internal(_) => 500,
        }
    }

    /// Whether the message is safe to show in production (everything but internal errors).
    pub fn is_internal(&self) -> bool {
        matches!(self, Self::Internal(_))
    }
}

impl From<DispatchError> for ToolError {
    fn from(error: DispatchError) -> Self {
        match error {
            DispatchError::NotFound => Self::NotFound("terminal not found".into()),
            DispatchError::Unreachable => Self::Dispatch("terminal unreachable: no agent is connected".into()),
            DispatchError::Timeout(d) => Self::Dispatch(format!("terminal did not answer within {} ms", d.as_millis())),
            DispatchError::CommandFailed(body) => match body.code.as_str() {
                codes::TRADING_DISABLED => Self::TradingDisabled(body.message),
                codes::NOT_FOUND => Self::NotFound(body.message),
                codes::INVALID_ARGUMENT => Self::InvalidInput(body.message),
                codes::TRADE_REJECTED => Self::Rejected {
                    retcode: body.retcode.unwrap_or_else(|| "rejected".into()),
                    message: body.message,
                },
                _ => Self::Dispatch(format!("command failed: {} ({})", body.message, body.code)),
            },
            DispatchError::Gateway(m) => Self::Gateway(m),
        }
    }
}

impl From<tradeterm_store::StoreError> for ToolError {
    fn from(e: tradeterm_store::StoreError) -> Self {
        use tradeterm_store::StoreError;
        match e {
            StoreError::NotFound(what) => Self::NotFound(format!("{what} not found")),
            StoreError::Invalid(m) => Self::InvalidInput(m),
            StoreError::ApiKeyLimit => Self::LimitReached {
                code: "API_KEY_LIMIT",
                message: e.to_string(),
            },
            StoreError::WebhookLimit => Self::LimitReached {
                code: "WEBHOOK_LIMIT",
                message: e.to_string(),
            },
            StoreError::Database(m) => Self::Internal(m),
        }
    }
}

impl From<tradeterm_core::trading::Rejection> for ToolError {
    fn from(r: tradeterm_core::trading::Rejection) -> Self {
        Self::Rejected {
            retcode: r.retcode.to_owned(),
            message: r.message,
        }
    }
}
