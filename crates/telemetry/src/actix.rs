//! actix-web wiring (feature `actix`): the per-request middleware
//! ([`observe`]) and the two routes ([`configure`]: `GET /metrics`,
//! `GET /readyz`).
//!
//! ```ignore
//! App::new()
//!     .wrap_fn(|req, srv| tradeterm_telemetry::actix::observe("rest", req, srv))
//!     .configure(|cfg| tradeterm_telemetry::actix::configure(cfg, readiness.clone()))
//! ```

use std::future::Future;
use std::time::Instant;

use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpMessage, HttpResponse, web};
use tracing::Instrument;

use crate::readiness::Readiness;
use crate::record::{self, UNMATCHED_ROUTE};
use crate::request_id::{self, REQUEST_ID_HEADER, RequestId};

/// The route pattern of a request that actix did not route itself (a
/// handler that matches paths on its own puts it in the request's
/// extensions); otherwise the pattern actix matched is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteLabel(pub &'static str);

/// The middleware of every actix listener, for `service` (`rest`,
/// `gateway`): takes the request's `X-Request-Id` (or makes one), runs the
/// request inside a `request` span and [`request_id::scope`], answers the
/// id in `X-Request-Id`, counts the request in the HTTP metrics by route
/// pattern, and logs one `tradeterm::access` line at debug level.
pub fn observe<S, B>(
    service: &'static str,
    req: ServiceRequest,
    srv: &S,
) -> impl Future<Output = Result<ServiceResponse<B>, actix_web::Error>> + use<S, B>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
    S::Future: 'static,
    B: 'static,
{
    let started = Instant::now();
    let id = RequestId::from_header(req.headers().get(REQUEST_ID_HEADER).map(HeaderValue::as_bytes));
    req.extensions_mut().insert(id.clone());
    let method = req.method().clone();
    let span = tracing::info_span!(target: crate::logging::REQUEST_SPAN_TARGET, "request", request_id = %id, service, method = %method, path = %req.path());
    let fut = request_id::scope(id.clone(), srv.call(req)).instrument(span.clone());
    async move {
        let result = fut.await;
        let (status, route) = match &result {
            Ok(res) => (res.status().as_u16(), route_of(res.request())),
            Err(e) => (e.as_response_error().status_code().as_u16(), UNMATCHED_ROUTE.to_owned()),
        };
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
        let mut res = result?;
        if let Ok(value) = HeaderValue::from_str(id.as_str()) {
            res.headers_mut()
                .insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
        }
        Ok(res)
    }
}

/// The route label of a request: its [`RouteLabel`], the pattern actix
/// matched, or `unmatched`.
fn route_of(req: &actix_web::HttpRequest) -> String {
    if let Some(RouteLabel(label)) = req.extensions().get::<RouteLabel>() {
        return (*label).to_owned();
    }
    req.match_pattern().unwrap_or_else(|| UNMATCHED_ROUTE.to_owned())
}

/// Registers `GET /metrics` (the process's metrics, Prometheus text) and
/// `GET /readyz` (`readiness`: 200 or 503 with a JSON body).
pub fn configure(cfg: &mut web::ServiceConfig, readiness: Readiness) {
    crate::metrics::install();
    cfg.route("/metrics", web::get().to(metrics)).route(
        "/readyz",
        web::get().to(move || {
            let readiness = readiness.clone();
            async move { readyz(&readiness).await }
        }),
    );
}

async fn metrics() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(crate::METRICS_CONTENT_TYPE)
        .body(crate::metrics::render())
}

async fn readyz(readiness: &Readiness) -> HttpResponse {
    let report = readiness.report().await;
    let status = actix_web::http::StatusCode::from_u16(report.status())
        .unwrap_or(actix_web::http::StatusCode::SERVICE_UNAVAILABLE);
    HttpResponse::build(status)
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(report.body())
}
