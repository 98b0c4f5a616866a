//! # tradeterm-telemetry
//!
//! What an operator sees of a running tradeterm server, in one small crate
//! shared by every listener (REST, MCP, gateway):
//!
//! - [`metrics`]: the process's Prometheus recorder (installed once,
//!   [`metrics::install`]), its text rendering for `GET /metrics`
//!   ([`metrics::render`]), the metric names ([`names`], each documented with
//!   its labels) and one recording function per event ([`record`]), so that
//!   label sets stay bounded and spelt the same everywhere.
//! - [`request_id`]: the `X-Request-Id` of a request (a well-formed incoming
//!   one is kept, otherwise one is generated), carried through the request's
//!   task so that the gateway client can pass it on and the gateway can put
//!   it into the agent protocol's request ids ([`request_id::command_id`]).
//! - [`readiness`]: the checks behind `GET /readyz` (database, Redis, the
//!   gateway's listener), answered 200 or 503 with the names of what is down.
//! - [`scrape`]: a reader of the text format, for the tests that scrape a
//!   running server.
//! - [`logging`]: `LOG_FORMAT=json|text`, the subscriber every binary
//!   installs (one JSON object per line, or human text).
//! - With the `actix` and `axum` features, the per-request middleware
//!   (request id, span, HTTP metrics) and the two routes for each web
//!   framework.
//!
//! See `docs/observability.md` for the metric list, the readiness semantics
//! and the request-id flow.
//!
//! **Architecture invariant:** this crate knows no other workspace crate
//! (adapters, the store and the protocol client depend on it, never the
//! reverse) and no domain: it records what it is told, with labels from
//! closed sets (route patterns, never raw paths). Core never depends on it.

pub mod logging;
pub mod metrics;
pub mod names;
pub mod readiness;
pub mod record;
pub mod request_id;
pub mod scrape;

#[cfg(feature = "actix")]
pub mod actix;
#[cfg(feature = "axum")]
pub mod axum;

pub use readiness::{Readiness, Report};
pub use request_id::{REQUEST_ID_HEADER, RequestId};

/// Content type of the Prometheus text exposition format served at `/metrics`.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
