//! REST errors in the spec's envelope `{ "error": { "code", "message" } }`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use tradeterm_tools::ToolError;

/// An error answered to a REST client.
#[derive(Debug, Clone)]
pub struct RestError {
    status: StatusCode,
    code: &'static str,
    message: String,
    retcode: Option<String>,
    retry_after: Option<u64>,
}

impl RestError {
    /// Explicit status, code and message.
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            code,
            message: message.into(),
            retcode: None,
            retry_after: None,
        }
    }

    /// 401 `UNAUTHORIZED`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, "UNAUTHORIZED", message)
    }

    /// 400 `VALIDATION_ERROR`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(400, "VALIDATION_ERROR", message)
    }

    /// 429 `RATE_LIMITED` with `Retry-After`.
    pub fn rate_limited(retry_after: u64) -> Self {
        Self { retry_after: Some(retry_after), ..Self::new(429, "RATE_LIMITED", "too many requests; retry later") }
    }

    /// A tool error; in production, internal details are replaced by a request id (and logged).
    pub fn from_tool(e: ToolError, production: bool) -> Self {
        if e.is_internal() {
            return Self::internal(e.to_string(), production);
        }
        let retcode = match &e {
            ToolError::Rejected { retcode, .. } => Some(retcode.clone()),
            _ => None,
        };
        let message = match (&e, production) {
            // Transport details of gateway failures stay in the logs in production.
            (ToolError::Gateway(detail), true) => {
                tracing::warn!(error = %detail, "gateway failure");
                "the gateway could not be reached".to_owned()
            }
            _ => e.to_string(),
        };
        Self { retcode, ..Self::new(e.http_status(), e.code(), message) }
    }

    /// 500 `INTERNAL_ERROR`; `detail` is logged with a request id and shown only outside production.
    pub fn internal(detail: impl std::fmt::Display, production: bool) -> Self {
        let request_id = uuid::Uuid::new_v4().simple().to_string();
        tracing::error!(%request_id, error = %detail, "internal error");
        let message = if production {
            format!("internal error (request id {request_id})")
        } else {
            format!("internal error (request id {request_id}): {detail}")
        };
        Self::new(500, "INTERNAL_ERROR", message)
    }

    /// The code.
    pub fn code(&self) -> &'static str {
        self.code
    }
}

impl std::fmt::Display for RestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl ResponseError for RestError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut body = json!({ "error": { "code": self.code, "message": self.message } });
        if let Some(r) = &self.retcode {
            body["error"]["retcode"] = json!(r);
        }
        let mut resp = HttpResponse::build(self.status);
        if let Some(s) = self.retry_after {
            resp.insert_header(("Retry-After", s.to_string()));
        }
        resp.json(body)
    }
}
