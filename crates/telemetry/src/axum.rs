//! axum wiring (feature `axum`): the per-request middleware ([`observe`])
//! and the two routes ([`routes`]: `GET /metrics`, `GET /readyz`).
//!
//! ```ignore
//! router
//!     .merge(tradeterm_telemetry::axum::routes(readiness))
//!     .layer(axum::middleware::from_fn_with_state("mcp", tradeterm_telemetry::axum::observe))
//! ```
//!
//! The request's [`RequestId`] is also put into the request's extensions,
//! so that a handler running in another task (rmcp runs MCP tool calls in
//! the session's task) can scope its work with it.

use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tracing::Instrument;

use crate::readiness::Readiness;
use crate::record::{self, UNMATCHED_ROUTE};
use crate::request_id::{self, REQUEST_ID_HEADER, RequestId};

/// The middleware of an axum listener, for `service` (`mcp`): as
/// [`crate::actix::observe`] (request id, span, metrics by matched path,
/// `X-Request-Id` answered). Add it with `Router::layer`, so the matched
/// path is known.
pub async fn observe(State(service): State<&'static str>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = RequestId::from_header(req.headers().get(REQUEST_ID_HEADER).map(HeaderValue::as_bytes));
    req.extensions_mut().insert(id.clone());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED_ROUTE.to_owned(), |p| p.as_str().to_owned());
    let method = req.method().clone();
    let span = tracing::info_span!(target: crate::logging::REQUEST_SPAN_TARGET, "request", request_id = %id, service, method = %method, path = %req.uri().path());
    let mut res = request_id::scope(id.clone(), next.run(req))
        .instrument(span.clone())
        .await;
    let status = res.status().as_u16();
    let elapsed = started.elapsed();
    record::http_request(service, &route, method.as_str(), status, elapsed);
    tracing::debug!(
        target: "tradeterm::access",
        parent: &span,
        status,
        route = %route,
        elapsed_ms = elapsed.as_secs_f64() * 1000.0,
        "request"
    );
    if let Ok(value) = HeaderValue::from_str(id.as_str()) {
        res.headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
    }
    res
}

/// `GET /metrics` and `GET /readyz` over `readiness`.
pub fn routes<S: Clone + Send + Sync + 'static>(readiness: Readiness) -> Router<S> {
    crate::metrics::install();
    Router::new().route("/metrics", get(metrics)).route(
        "/readyz",
        get(move || {
            let readiness = readiness.clone();
            async move { readyz(&readiness).await }
        }),
    )
}

async fn metrics() -> Response {
    (
        [(header::CONTENT_TYPE, crate::METRICS_CONTENT_TYPE)],
        crate::metrics::render(),
    )
        .into_response()
}

async fn readyz(readiness: &Readiness) -> Response {
    let report = readiness.report().await;
    let status = StatusCode::from_u16(report.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    (status, [(header::CACHE_CONTROL, "no-store")], axum::Json(report.body())).into_response()
}
