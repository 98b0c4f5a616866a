//! The error envelope of the gateway's HTTP routes: `{ "error": { "code", "message", "request_id" } }`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

/// An HTTP error with a spec error code. Internal errors are logged with a
/// request id and answered with a generic message.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// `Retry-After` of a 429, seconds.
    retry_after: Option<u64>,
}

impl ApiError {
    /// An error with an explicit status and code.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 429 `RATE_LIMITED` with `Retry-After`: the credential-guessing
    /// throttle refused the source before its credential was checked.
    pub fn throttled(blocked: &tradeterm_cluster::guess::Blocked) -> Self {
        Self {
            retry_after: Some(blocked.retry_after_secs()),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", blocked.message())
        }
    }

    /// `Retry-After` of a 429, seconds.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// 401 `UNAUTHORIZED`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }

    /// 400 `VALIDATION_ERROR`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
    }

    /// 404 `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }

    /// 500 `INTERNAL_ERROR`: logs `detail` with a fresh request id and answers
    /// only the id (never the detail).
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        let request_id =
            tradeterm_telemetry::request_id::current().unwrap_or_else(tradeterm_telemetry::RequestId::generate);
        tracing::error!(%request_id, error = %detail, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            format!("internal error (request id {request_id})"),
        )
    }

    /// The error code.
    pub fn code(&self) -> &'static str {
        self.code
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut body = json!({ "error": { "code": self.code, "message": self.message } });
        // The request's id (also in `X-Request-Id`), to quote when reporting a problem.
        if let Some(id) = tradeterm_telemetry::request_id::current() {
            body["error"]["request_id"] = json!(id.as_str());
        }
        let mut res = HttpResponse::build(self.status);
        if let Some(secs) = self.retry_after {
            res.insert_header((actix_web::http::header::RETRY_AFTER, secs.to_string()));
        }
        res.json(body)
    }
}

impl From<tradeterm_store::StoreError> for ApiError {
    fn from(e: tradeterm_store::StoreError) -> Self {
        use tradeterm_store::StoreError;
        match e {
            StoreError::ApiKeyLimit => Self::new(StatusCode::CONFLICT, "API_KEY_LIMIT", e.to_string()),
            StoreError::WebhookLimit => Self::new(StatusCode::CONFLICT, "WEBHOOK_LIMIT", e.to_string()),
            StoreError::NotFound(what) => Self::not_found(format!("{what} not found")),
            StoreError::Invalid(m) => Self::bad_request(m),
            StoreError::Database(_) => Self::internal(e),
        }
    }
}
