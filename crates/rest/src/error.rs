//! REST errors in the spec's envelope `{ "error": { "code", "message" } }`,
//! plus `request_id` (the request's `X-Request-Id`) when answered inside a
//! request, and `retcode` for order rejections.

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
    /// `Allow` header of a 405.
    allow: Option<String>,
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
            allow: None,
        }
    }

    /// 405 `METHOD_NOT_ALLOWED` for a known path, with `Allow: <allowed>`.
    pub fn method_not_allowed(allowed: &[&str]) -> Self {
        let allow = allowed.join(", ");
        Self {
            allow: Some(allow.clone()),
            ..Self::new(
                405,
                "METHOD_NOT_ALLOWED",
                format!("this path does not serve this method; it serves {allow}"),
            )
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
        Self {
            retry_after: Some(retry_after),
            ..Self::new(429, "RATE_LIMITED", "too many requests; retry later")
        }
    }

    /// 429 `RATE_LIMITED` with `Retry-After` and a message saying which limit.
    pub fn limited(message: impl Into<String>, retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(429, "RATE_LIMITED", message)
        }
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
        Self {
            retcode,
            ..Self::new(e.http_status(), e.code(), message)
        }
    }

    /// 500 `INTERNAL_ERROR`; `detail` is logged with a request id and shown only outside production.
    pub fn internal(detail: impl std::fmt::Display, production: bool) -> Self {
        let request_id =
            tradeterm_telemetry::request_id::current().unwrap_or_else(tradeterm_telemetry::RequestId::generate);
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
        // The request's id (also answered in `X-Request-Id`), to quote when reporting a problem.
        if let Some(id) = tradeterm_telemetry::request_id::current() {
            body["error"]["request_id"] = json!(id.as_str());
        }
        let mut resp = HttpResponse::build(self.status);
        if let Some(s) = self.retry_after {
            resp.insert_header(("Retry-After", s.to_string()));
        }
        if let Some(a) = &self.allow {
            resp.insert_header((actix_web::http::header::ALLOW, a.as_str()));
        }
        resp.json(body)
    }
}

#[cfg(test)]
mod tests {
    use actix_web::body::MessageBody;

    use super::*;

    fn body(e: &RestError) -> serde_json::Value {
        let bytes = e.error_response().into_body().try_into_bytes().unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn production_hides_internal_details_behind_a_request_id() {
        let secret = "connection to postgres://admin:hunter2@db failed";
        let dev = RestError::from_tool(ToolError::Internal(secret.into()), false);
        let prod = RestError::from_tool(ToolError::Internal(secret.into()), true);
        assert_eq!(dev.status_code(), 500);
        assert!(body(&dev)["error"]["message"].as_str().unwrap().contains("hunter2"));
        let msg = body(&prod)["error"]["message"].as_str().unwrap().to_owned();
        assert!(!msg.contains("hunter2") && !msg.contains("postgres"), "{msg}");
        assert!(msg.starts_with("internal error (request id "), "{msg}");
        assert_eq!(body(&prod)["error"]["code"], "INTERNAL_ERROR");
        let gw = RestError::from_tool(ToolError::Gateway("dns error: gw.internal:8081".into()), true);
        assert!(!body(&gw)["error"]["message"].as_str().unwrap().contains("gw.internal"));
        assert_eq!(gw.status_code(), 502);
    }

    #[test]
    fn client_errors_keep_their_codes_and_retcodes() {
        let e = RestError::from_tool(
            ToolError::Rejected {
                retcode: "no_money".into(),
                message: "not enough".into(),
            },
            true,
        );
        assert_eq!(e.status_code(), 422);
        let b = body(&e);
        assert_eq!(
            (b["error"]["code"].as_str(), b["error"]["retcode"].as_str()),
            (Some("ORDER_REJECTED"), Some("no_money"))
        );
        let r = RestError::rate_limited(17).error_response();
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers().get("retry-after").unwrap(), "17");
        assert_eq!(
            RestError::from_tool(ToolError::TerminalRequired, true).code(),
            "MISSING_TERMINAL"
        );
    }

    #[tokio::test]
    async fn inside_a_request_the_envelope_and_the_internal_message_carry_its_id() {
        use tradeterm_telemetry::request_id::{RequestId, scope};

        assert!(body(&RestError::invalid("x"))["error"].get("request_id").is_none());
        let id = RequestId::parse("rid-unit-1").unwrap();
        let (invalid, internal) = scope(id, async {
            (
                body(&RestError::invalid("x")),
                body(&RestError::internal("db down", true)),
            )
        })
        .await;
        assert_eq!(invalid["error"]["request_id"], "rid-unit-1");
        assert_eq!(invalid["error"]["code"], "VALIDATION_ERROR");
        assert_eq!(internal["error"]["request_id"], "rid-unit-1");
        assert_eq!(internal["error"]["message"], "internal error (request id rid-unit-1)");
    }

    #[test]
    fn method_not_allowed_names_the_allowed_methods() {
        let e = RestError::method_not_allowed(&["GET", "POST"]);
        let r = e.error_response();
        assert_eq!(r.status(), 405);
        assert_eq!(r.headers().get("allow").unwrap(), "GET, POST");
        assert_eq!(body(&e)["error"]["code"], "METHOD_NOT_ALLOWED");
        assert!(
            RestError::invalid("x")
                .error_response()
                .headers()
                .get("allow")
                .is_none()
        );
    }
}
