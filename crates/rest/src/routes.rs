//! The routes of `/api/v1`, as data: each named route maps onto one catalog
//! tool; `POST /api/v1/tools/{name}` serves every tool. The OpenAPI document
//! is generated from the same table and the catalog. The spec's management
//! endpoints are rows of the same table, authenticated with the license's
//! master key ([`Auth::MasterKey`]).
//!
//! Every call ends in [`tradeterm_tools::invoke`]; the tool names of the table
//! are checked against the catalog when the server is built ([`check`]).

use std::sync::Arc;

use actix_web::http::Method;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use serde_json::{Map, Value, json};
use tradeterm_telemetry::actix::RouteLabel;
use tradeterm_tools::{Invocation, Target, TerminalChoice, Tool};

use crate::auth::{Caller, Standing};
use crate::ratelimit::Decision;
use crate::{AppState, RestError};

/// Where a route's tool input comes from, besides path parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFrom {
    /// The JSON body.
    Body,
    /// The query string.
    Query,
}

/// How a route authenticates its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// A REST API key or a session token (`Authorization: Bearer`), rate-limited.
    Bearer,
    /// The license's master key (`Authorization: Bearer <LICENSE_KEY>`): the
    /// spec's management endpoints, whose client is the dashboard.
    MasterKey,
}

/// One named route.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// HTTP method.
    pub method: &'static str,
    /// Path (actix syntax, `{param}`), under the server root.
    pub path: &'static str,
    /// Catalog tool it runs.
    pub tool: &'static str,
    /// Where the rest of the input comes from.
    pub input: InputFrom,
    /// How the caller authenticates.
    pub auth: Auth,
}

/// The named routes of the spec (§4) and their siblings, then the spec's
/// management endpoints (master key).
pub const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/api/v1/account/info",
        tool: "get_account_info",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/market/tick/{symbol}",
        tool: "get_tick",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/market/symbols",
        tool: "get_symbols",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/market/symbols/{symbol}",
        tool: "get_symbol_spec",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/market/bars/{symbol}",
        tool: "get_bars",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/market/depth/{symbol}",
        tool: "get_market_depth",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/terminals",
        tool: "list_terminals",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/orders",
        tool: "place_order",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/orders",
        tool: "get_orders",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "DELETE",
        path: "/api/v1/orders/{ticket}",
        tool: "cancel_order",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    // PATCH, not PUT: the body is a partial change (absent fields keep the
    // order's values), not a full replacement of the resource.
    Route {
        method: "PATCH",
        path: "/api/v1/orders/{ticket}",
        tool: "modify_order",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/orders/cancel-all",
        tool: "cancel_all_orders",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/positions",
        tool: "get_positions",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/positions/{ticket}",
        tool: "get_position",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/positions/{ticket}/close",
        tool: "close_position",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/positions/{ticket}/modify",
        tool: "modify_position",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/positions/{ticket}/reverse",
        tool: "reverse_position",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/positions/{ticket}/close-by",
        tool: "close_by",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/positions/close-all",
        tool: "close_all_positions",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/history/deals",
        tool: "get_deal_history",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/history/orders",
        tool: "get_order_history",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/journal",
        tool: "get_journal",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "POST",
        path: "/api/v1/journal",
        tool: "add_journal_entry",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "GET",
        path: "/api/v1/journal/{id}",
        tool: "get_journal_entry",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    Route {
        method: "PUT",
        path: "/api/v1/journal/{id}",
        tool: "update_journal_entry",
        input: InputFrom::Body,
        auth: Auth::Bearer,
    },
    Route {
        method: "DELETE",
        path: "/api/v1/journal/{id}",
        tool: "delete_journal_entry",
        input: InputFrom::Query,
        auth: Auth::Bearer,
    },
    // The spec's management endpoints (§4), served on the gateway's port too.
    Route {
        method: "PUT",
        path: "/api/prop-firm-rules",
        tool: "set_prop_firm_rules",
        input: InputFrom::Body,
        auth: Auth::MasterKey,
    },
    Route {
        method: "GET",
        path: "/api/prop-firm-rules",
        tool: "get_prop_firm_status",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
    Route {
        method: "DELETE",
        path: "/api/prop-firm-rules",
        tool: "remove_prop_firm_rules",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
    Route {
        method: "PUT",
        path: "/api/news-guard",
        tool: "set_news_guard",
        input: InputFrom::Body,
        auth: Auth::MasterKey,
    },
    Route {
        method: "GET",
        path: "/api/news-guard",
        tool: "get_news_guard_status",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
    Route {
        method: "DELETE",
        path: "/api/news-guard",
        tool: "remove_news_guard",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
    Route {
        method: "GET",
        path: "/api/cb-stance",
        tool: "get_cb_stance",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    }, // Webhooks (docs/events.md, "Webhooks"): the license owner's endpoints.
    Route {
        method: "POST",
        path: "/api/webhooks",
        tool: "create_webhook",
        input: InputFrom::Body,
        auth: Auth::MasterKey,
    },
    Route {
        method: "GET",
        path: "/api/webhooks",
        tool: "list_webhooks",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
    Route {
        method: "GET",
        path: "/api/webhooks/{webhook_id}",
        tool: "get_webhook",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
    Route {
        method: "PATCH",
        path: "/api/webhooks/{webhook_id}",
        tool: "update_webhook",
        input: InputFrom::Body,
        auth: Auth::MasterKey,
    },
    Route {
        method: "DELETE",
        path: "/api/webhooks/{webhook_id}",
        tool: "delete_webhook",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
    Route {
        method: "POST",
        path: "/api/webhooks/{webhook_id}/test",
        tool: "test_webhook",
        input: InputFrom::Body,
        auth: Auth::MasterKey,
    },
    // The trade audit log (docs/audit.md); `format=csv` answers text/csv.
    Route {
        method: "GET",
        path: "/api/v1/audit",
        tool: "get_audit_log",
        input: InputFrom::Query,
        auth: Auth::MasterKey,
    },
];

/// Largest request body, bytes.
pub const MAX_BODY: usize = 256 * 1024;

/// Header selecting the terminal.
pub const TERMINAL_HEADER: &str = "x-terminal-id";

/// The routes registered with actix in `configure` (and `docs::configure`)
/// rather than matched here, as `(method, path)`: what a wrong method on one
/// of these paths is told in `Allow`. The docs assets are handled apart.
pub const FIXED_ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("POST", "/api/token"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/api/v1/tools"),
    ("GET", crate::events::EVENTS_PATH),
    ("GET", crate::docs::DOCS_PATH),
    ("GET", "/api/v1/docs/"),
];

/// Methods in the order `Allow` lists them.
const METHOD_ORDER: [&str; 8] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"];

pub(crate) fn configure(cfg: &mut web::ServiceConfig, state: AppState) {
    tradeterm_telemetry::actix::configure(cfg, state.readiness.clone());
    cfg.app_data(web::Data::new(state))
        .app_data(web::PayloadConfig::new(MAX_BODY))
        .route("/healthz", web::get().to(healthz))
        .route("/api/token", web::post().to(token_proxy))
        .route("/api/v1/openapi.json", web::get().to(openapi_json))
        .configure(crate::docs::configure)
        .route("/api/v1/tools", web::get().to(list_tools))
        .route(crate::events::EVENTS_PATH, web::get().to(crate::events::stream));
    // The named routes and `POST /api/v1/tools/{name}` are matched here,
    // segment by segment, rather than registered with actix: actix matches
    // every pattern with a parameter by a regular expression, tried in turn
    // on every request, which cost about 5 % of the CPU of the hottest route
    // (`GET /api/v1/market/tick/{symbol}`). Only static patterns (and the
    // docs assets, behind a static scope) are left to actix.
    cfg.default_service(web::to(
        |req: HttpRequest, payload: web::Payload, state: web::Data<AppState>| async move {
            let limits = state.settings.body_limits;
            if req.method() == Method::POST
                && let Some(name) = req.path().strip_prefix("/api/v1/tools/")
                && !name.is_empty()
                && !name.contains('/')
            {
                let name = percent_decode(name).unwrap_or_default();
                req.extensions_mut().insert(RouteLabel("/api/v1/tools/{name}"));
                let body = read_body(&req, payload, limits.for_tool(&name)).await?;
                return call_tool(req, name, body, state).await;
            }
            match match_named(req.method(), req.path())? {
                Some(matched) => {
                    req.extensions_mut().insert(RouteLabel(matched.0.path));
                    let body = read_body(&req, payload, limits.for_tool(matched.0.tool)).await?;
                    named(matched, req, body, state).await
                }
                None => Err(no_route(req.path())),
            }
        },
    ));
}

/// Registers the management rows ([`Auth::MasterKey`]) as actix resources,
/// for the gateway's listener in the single-node binary. They answer exactly
/// as on the REST listener.
pub(crate) fn configure_management(cfg: &mut web::ServiceConfig, state: AppState) {
    let state = web::Data::new(state);
    let mut paths: Vec<&'static str> = Vec::new();
    for r in ROUTES.iter().filter(|r| r.auth == Auth::MasterKey) {
        if !paths.contains(&r.path) {
            paths.push(r.path);
        }
    }
    for path in paths {
        let resource = web::resource(path)
            .app_data(state.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY))
            .default_service(web::to(
                |req: HttpRequest, payload: web::Payload, state: web::Data<AppState>| async move {
                    match match_named(req.method(), req.path())? {
                        Some(matched) if matched.0.auth == Auth::MasterKey => {
                            let limit = state.settings.body_limits.for_tool(matched.0.tool);
                            let body = read_body(&req, payload, limit).await?;
                            named(matched, req, body, state).await
                        }
                        _ => Err(no_route(req.path())),
                    }
                },
            ));
        cfg.service(resource);
    }
}

/// Reads a request body of at most `limit` bytes: 413 `PAYLOAD_TOO_LARGE`
/// (counted in `tradeterm_limit_refusals_total`) as soon as
/// `Content-Length` says more, or when the body passes the limit.
pub(crate) async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<web::Bytes, RestError> {
    use futures_util::StreamExt;
    let too_large = || {
        tradeterm_telemetry::record::limit_refused("body", "rest");
        RestError::new(
            413,
            "PAYLOAD_TOO_LARGE",
            format!("request body larger than {limit} bytes, the limit of this route"),
        )
    };
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = web::BytesMut::with_capacity(declared.unwrap_or(0).min(limit as u64) as usize);
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| RestError::invalid(format!("could not read the request body: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The answer to a path that names no route.
pub(crate) fn not_found() -> RestError {
    RestError::new(404, "NOT_FOUND", "no such route; see GET /api/v1/docs")
}

/// The answer to a request no route takes: 405 with `Allow` when the path
/// is known (another method serves it), else 404. Answered before
/// authentication, as routing comes first.
pub(crate) fn no_route(path: &str) -> RestError {
    let allowed = allowed_methods(path);
    if allowed.is_empty() {
        not_found()
    } else {
        RestError::method_not_allowed(&allowed)
    }
}

/// Every method some route serves on `path` (`GET` first, then `POST`,
/// `PUT`, `PATCH`, `DELETE`, as `Allow` lists them); empty for
/// an unknown path. `/api/v1/tools/<name>` is known only for a catalog tool.
pub fn allowed_methods(path: &str) -> Vec<&'static str> {
    let mut found: Vec<&'static str> = FIXED_ROUTES
        .iter()
        .filter(|(_, p)| *p == path)
        .map(|(m, _)| *m)
        .collect();
    let single_segment = |prefix: &str| {
        path.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
    };
    if single_segment(crate::docs::ASSETS_PATH).is_some() {
        found.push("GET");
    }
    if single_segment("/api/v1/tools")
        .and_then(percent_decode)
        .is_some_and(|name| tradeterm_tools::find(&name).is_some())
    {
        found.push("POST");
    }
    if let Some(rest) = path.strip_prefix('/') {
        let segments: Vec<&str> = rest.split('/').collect();
        for m in matchers() {
            if fits(&m.segments, &segments) {
                found.push(m.route.method);
            }
        }
    }
    let mut ordered: Vec<&'static str> = METHOD_ORDER.into_iter().filter(|m| found.contains(m)).collect();
    // A route table with a method outside METHOD_ORDER still reports it.
    for m in found {
        if !ordered.contains(&m) {
            ordered.push(m);
        }
    }
    ordered
}

/// Whether the request's segments fit `want`, unless another route names
/// literally a segment `want` takes as a parameter: a literal path shadows
/// a parameter (`/api/v1/orders/cancel-all` is not order `cancel-all` of
/// `/api/v1/orders/{ticket}`), whatever the method.
fn fits(want: &[Segment], got: &[&str]) -> bool {
    fits_shape(want, got)
        && !matchers()
            .iter()
            .any(|m| fits_shape(&m.segments, got) && more_specific(&m.segments, want))
}

/// Whether a request's path segments fit a route's: same count, literals
/// equal, parameters non-empty.
fn fits_shape(want: &[Segment], got: &[&str]) -> bool {
    want.len() == got.len()
        && want.iter().zip(got).all(|(want, got)| match want {
            Segment::Literal(l) => l == got,
            Segment::Param(_) => !got.is_empty(),
        })
}

/// `a` has a literal wherever `b` has one, and at least one where `b` has a parameter.
fn more_specific(a: &[Segment], b: &[Segment]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| match b {
            Segment::Literal(_) => a == b,
            Segment::Param(_) => true,
        })
        && a.iter()
            .zip(b)
            .any(|(a, b)| matches!((a, b), (Segment::Literal(_), Segment::Param(_))))
}

/// `{ "data": <data> }`, serialised straight into the body (the same bytes
/// as building the envelope as a JSON value first, one map fewer per request).
fn data_envelope(data: &Value) -> HttpResponse {
    let mut body = Vec::with_capacity(128);
    body.extend_from_slice(b"{\"data\":");
    // Serialising a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut body, data);
    body.push(b'}');
    HttpResponse::Ok().content_type("application/json").body(body)
}

/// One segment of a named route's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Segment {
    /// Must equal the request's segment.
    Literal(&'static str),
    /// `{name}`: any non-empty segment, captured.
    Param(&'static str),
}

/// A named route prepared for matching, with its catalog tool.
struct Matcher {
    route: Route,
    tool: &'static Tool,
    method: Method,
    segments: Vec<Segment>,
}

/// Checks that every route of [`ROUTES`] names a catalog tool. Called when a
/// server is built, so a misspelt name stops the start instead of answering 500.
pub fn check() -> Result<(), String> {
    let missing: Vec<String> = ROUTES
        .iter()
        .filter(|r| tradeterm_tools::find(r.tool).is_none())
        .map(|r| format!("{} {} names unknown tool `{}`", r.method, r.path, r.tool))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing.join("; "))
    }
}

/// The named routes whose tool exists ([`check`] refuses to start otherwise).
fn matchers() -> &'static [Matcher] {
    static MATCHERS: std::sync::OnceLock<Vec<Matcher>> = std::sync::OnceLock::new();
    MATCHERS.get_or_init(|| {
        ROUTES
            .iter()
            .filter_map(|r| Some((r, tradeterm_tools::find(r.tool)?)))
            .map(|(r, tool)| Matcher {
                route: *r,
                tool,
                method: Method::from_bytes(r.method.as_bytes()).unwrap_or(Method::GET),
                segments: r
                    .path
                    .split('/')
                    .skip(1)
                    .map(|seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                        Some(name) => Segment::Param(name),
                        None => Segment::Literal(seg),
                    })
                    .collect(),
            })
            .collect()
    })
}

/// Percent-decodes one path segment (`%41` → `A`); the result must be UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    // The `percent-encoding` crate decodes; it passes malformed escapes
    // (`%zz`, a trailing `%4`) through as text, which a path parameter must
    // not silently do, so those are refused first.
    let bytes = segment.as_bytes();
    let malformed = bytes.iter().enumerate().any(|(i, b)| {
        *b == b'%'
            && !bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if malformed {
        return None;
    }
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

/// Decoded path parameters of a named route, by name.
type PathParams = Vec<(&'static str, String)>;

/// A matched named route: the route, its tool and its path parameters.
type Matched = (Route, &'static Tool, PathParams);

/// The named route of `method` and `path` with its decoded path parameters,
/// if any: literal segments must be equal, parameters non-empty, and the
/// segment counts the same (so a trailing `/` matches nothing, as in actix).
fn match_named(method: &Method, path: &str) -> Result<Option<Matched>, RestError> {
    let Some(rest) = path.strip_prefix('/') else {
        return Ok(None);
    };
    let segments: Vec<&str> = rest.split('/').collect();
    for m in matchers() {
        if m.method != *method || !fits(&m.segments, &segments) {
            continue;
        }
        let mut params = Vec::new();
        for (want, got) in m.segments.iter().zip(&segments) {
            if let Segment::Param(name) = want {
                let value = percent_decode(got).ok_or_else(|| {
                    RestError::invalid(format!("path parameter `{name}` is not valid percent-encoded UTF-8"))
                })?;
                params.push((*name, value));
            }
        }
        return Ok(Some((m.route, m.tool, params)));
    }
    Ok(None)
}

/// Adds the rate-limit headers recorded for the request to its response.
pub fn add_rate_headers<B>(res: &mut actix_web::dev::ServiceResponse<B>) {
    let decision = res.request().extensions().get::<Decision>().copied();
    if let Some(d) = decision {
        let h = res.headers_mut();
        for (name, value) in [
            ("x-ratelimit-limit", d.limit),
            ("x-ratelimit-remaining", d.remaining),
            ("x-ratelimit-reset", d.reset),
        ] {
            h.insert(HeaderName::from_static(name), HeaderValue::from(value));
        }
    }
}

async fn openapi_json() -> HttpResponse {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let body = DOC.get_or_init(|| crate::openapi::document().to_string());
    HttpResponse::Ok().content_type("application/json").body(body.as_str())
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok", "service": "tradeterm-rest" }))
}

/// `POST /api/token`: forwards `{ "license_key" }` (a terminal key) to the gateway.
async fn token_proxy(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> Result<HttpResponse, RestError> {
    let value: Value = serde_json::from_slice(&body)
        .map_err(|_| RestError::invalid("body must be JSON: { \"license_key\": \"<TERMINAL_KEY>\" }"))?;
    let Some(key) = value.get("license_key").and_then(Value::as_str) else {
        return Err(RestError::invalid("`license_key` (a terminal key) is required"));
    };
    /// A refusal (counted as a guess, answered as the gateway said) or a failure.
    enum Proxied {
        Refused(u16, Value),
        Failed(RestError),
    }
    let exchange = async {
        match state.gateway.proxy_token(json!({ "license_key": key })).await {
            Ok((401, answer)) => Err(Proxied::Refused(401, answer)),
            Ok(answer) => Ok(answer),
            Err(e) => {
                tracing::warn!(error = %e, "token proxy failed");
                Err(Proxied::Failed(RestError::new(
                    502,
                    "GATEWAY_ERROR",
                    "the gateway could not be reached",
                )))
            }
        }
    };
    let source = client_address(&req, &state);
    let (status, answer) = match state
        .settings
        .guess
        .guard("rest", source, Some(key), exchange, |e| {
            matches!(e, Proxied::Refused(..))
        })
        .await
    {
        Err(blocked) => return Err(RestError::limited(blocked.message(), blocked.retry_after_secs())),
        Ok(Ok(answer)) => answer,
        Ok(Err(Proxied::Refused(status, answer))) => (status, answer),
        Ok(Err(Proxied::Failed(e))) => return Err(e),
    };
    let status = actix_web::http::StatusCode::from_u16(status).unwrap_or(actix_web::http::StatusCode::BAD_GATEWAY);
    Ok(HttpResponse::build(status).json(answer))
}

async fn list_tools(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, RestError> {
    admit(&req, &state).await?;
    static BODY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let body = BODY.get_or_init(|| {
        let tools: Vec<Value> = tradeterm_tools::catalog()
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "title": t.title,
                    "description": t.description,
                    "capability": t.capability,
                    "annotations": t.annotations,
                    "terminal": t.target == Target::Terminal,
                    "input_schema": t.input_schema,
                    "output_schema": t.output_schema,
                    "route": format!("/api/v1/tools/{}", t.name),
                    "chart": t.chart.map(|k| k.name()),
                })
            })
            .collect();
        json!({ "data": tools }).to_string()
    });
    Ok(HttpResponse::Ok().content_type("application/json").body(body.as_str()))
}

/// Authenticates and rate-limits a request; records the decision for the headers middleware.
async fn admit(req: &HttpRequest, state: &AppState) -> Result<Caller, RestError> {
    let caller = authenticate(req, state).await?;
    count_fresh(req, state, caller, true).await
}

pub(crate) async fn authenticate(req: &HttpRequest, state: &AppState) -> Result<Caller, RestError> {
    let header = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Some(credential) = header.and_then(tradeterm_protocol::auth::parse_bearer) else {
        return state.auth.authenticate(header).await;
    };
    // A credential known valid here (the hot path) is checked against this
    // process's own blocks only, with no Redis call; anything else, a guess
    // among them, goes through the shared throttle.
    if let Some(caller) = state.auth.known(header) {
        state
            .settings
            .guess
            .check_known("rest", client_address(req, state), Some(credential))
            .map_err(|blocked| RestError::limited(blocked.message(), blocked.retry_after_secs()))?;
        return Ok(caller);
    }
    guarded(req, state, credential, state.auth.authenticate(header)).await
}

/// The client address of a REST request: the peer, or what a trusted
/// proxy's `X-Forwarded-For` says (`TRUSTED_PROXIES`).
pub(crate) fn client_address(req: &HttpRequest, state: &AppState) -> std::net::IpAddr {
    let peer = req
        .peer_addr()
        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |a| a.ip());
    let forwarded = req.headers().get_all("x-forwarded-for").filter_map(|v| v.to_str().ok());
    state.settings.guess.source(peer, forwarded)
}

/// `check` runs the credential check of `credential` under the guessing
/// throttle (`docs/security.md`): 429 `RATE_LIMITED` with `Retry-After`
/// when the client's address is blocked, a 401 counted against it.
async fn guarded<T>(
    req: &HttpRequest,
    state: &AppState,
    credential: &str,
    check: impl std::future::Future<Output = Result<T, RestError>>,
) -> Result<T, RestError> {
    let source = client_address(req, state);
    state
        .settings
        .guess
        .guard("rest", source, Some(credential), check, |e: &RestError| {
            e.code() == "UNAUTHORIZED"
        })
        .await
        .map_err(|blocked| RestError::limited(blocked.message(), blocked.retry_after_secs()))?
}

/// Counts an authenticated request (rate limit and revocation); records the
/// decision for the headers middleware. With `with_route`, the dispatch to
/// the terminal named by `X-Terminal-Id` gets ready beside the count.
pub(crate) async fn count(
    req: &HttpRequest,
    state: &AppState,
    caller: &Caller,
    with_route: bool,
) -> Result<(), RestError> {
    match count_standing(req, state, caller, with_route).await? {
        Standing::Current => Ok(()),
        Standing::Outdated => Err(crate::auth::outdated(caller)),
        Standing::Revoked => Err(crate::auth::revoked(caller)),
    }
}

/// [`count`], and when the caller's cached exchange of an API key is
/// outdated (the key's scope changed since: its previous generation is
/// marked like a revoked key), the key is exchanged again once and the
/// request counted with the fresh caller, which is returned: the call runs
/// under the key's new scope. A session token of an outdated generation
/// is refused (its holder requests a new one).
pub(crate) async fn count_fresh(
    req: &HttpRequest,
    state: &AppState,
    caller: Caller,
    with_route: bool,
) -> Result<Caller, RestError> {
    match count_standing(req, state, &caller, with_route).await? {
        Standing::Current => Ok(caller),
        Standing::Outdated if bearer_is_api_key(req) => {
            // The cache entry is gone: this exchanges the key again.
            let fresh = authenticate(req, state).await?;
            count(req, state, &fresh, with_route).await?;
            Ok(fresh)
        }
        Standing::Outdated => Err(crate::auth::outdated(&caller)),
        Standing::Revoked => Err(crate::auth::revoked(&caller)),
    }
}

/// Whether the request's bearer credential is an API key (not a token).
fn bearer_is_api_key(req: &HttpRequest) -> bool {
    req.headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(tradeterm_protocol::auth::parse_bearer)
        .is_some_and(|k| k.starts_with(crate::auth::API_KEY_PREFIX))
}

/// Counts the request and tells the standing of its credential; a
/// credential that is not current is not counted and its cached exchanges
/// are dropped.
async fn count_standing(
    req: &HttpRequest,
    state: &AppState,
    caller: &Caller,
    with_route: bool,
) -> Result<Standing, RestError> {
    let Some(limiter) = &state.limiter else {
        // No Redis: revocation (and a scope change) is checked in the store on every request.
        let standing = state.auth.standing(caller).await?;
        if standing != Standing::Current {
            state.auth.forget(caller);
        }
        return Ok(standing);
    };
    let now = chrono::Utc::now().timestamp_millis().max(0) as u64;
    // The count and the revocation check of the credential (an API key, or
    // the terminal key a session token was exchanged for) are one atomic
    // Redis call. The dispatch to the named terminal gets ready beside it (a
    // scaled-out deployment reads the route table then): the two Redis
    // calls share one round trip instead of following each other.
    let credential = caller.claims.credential();
    let count = limiter.check_credential(caller.license_id(), caller.claims.tier, now, &credential);
    let terminal = req
        .headers()
        .get(TERMINAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|id| with_route && tradeterm_tools::valid_terminal_id(id));
    let d = match terminal {
        Some(id) => {
            let prepare = state.services.dispatch.prepare(caller.license_id(), id);
            tokio::join!(count, prepare).0
        }
        None => count.await,
    };
    if d.revoked {
        state.auth.forget(caller);
        // Marked: revoked, or the key's scope changed (the store tells which).
        return Ok(match state.auth.standing(caller).await? {
            Standing::Outdated => Standing::Outdated,
            _ => Standing::Revoked,
        });
    }
    if !limiter.redis_healthy() {
        // Redis unreachable: revocations are not known there; ask the store.
        let standing = state.auth.standing(caller).await?;
        if standing != Standing::Current {
            state.auth.forget(caller);
            return Ok(standing);
        }
    }
    req.extensions_mut().insert(d);
    if !d.allowed {
        return Err(RestError::rate_limited(d.retry_after));
    }
    Ok(Standing::Current)
}

/// Authenticates and counts a call of `tool`, then runs `work` for the
/// caller. A call of a tool that only reads from the terminal, by a
/// credential with ample room left, does not wait for its count: under
/// steady traffic its count is queued and reaches Redis shortly after
/// ([`tradeterm_tools::ratelimit::RateLimiter::count_behind`]); otherwise it
/// starts its work while the count is in flight
/// ([`tradeterm_tools::ratelimit::RateLimiter::ahead`]): the answer waits for
/// the count, a refusal answers at once and drops the work, so a refused
/// call returns nothing of it and has changed nothing. Saves the count's
/// round trip on the common path.
async fn counted<W>(req: &HttpRequest, state: &AppState, tool: &Tool, work: W) -> Result<HttpResponse, RestError>
where
    W: AsyncFn(tradeterm_tools::Caller) -> Result<HttpResponse, RestError>,
{
    let caller = authenticate(req, state).await?;
    scoped_by(req, &caller);
    let reads = state
        .limiter
        .as_ref()
        .filter(|_| tradeterm_tools::reads_terminal_only(tool));
    let now = chrono::Utc::now().timestamp_millis().max(0) as u64;
    let credential = caller.claims.credential();
    if let Some(d) = reads.and_then(|l| l.count_behind(caller.license_id(), caller.claims.tier, now, &credential)) {
        req.extensions_mut().insert(d);
        return work(tool_caller(&caller)).await;
    }
    let ahead = reads.and_then(|l| l.ahead(caller.license_id(), caller.claims.tier, now, &credential));
    let Some(_ahead) = ahead else {
        let caller = count_fresh(req, state, caller.clone(), true).await?;
        scoped_by(req, &caller);
        return work(tool_caller(&caller)).await;
    };
    let counted = count_standing(req, state, &caller, false);
    let ran = work(tool_caller(&caller));
    tokio::pin!(counted, ran);
    let (standing, out) = tokio::select! {
        biased;
        c = &mut counted => {
            match c? {
                Standing::Current => return ran.await,
                // The work of an outdated scope is dropped unanswered.
                other => (other, None),
            }
        }
        out = &mut ran => (counted.await?, Some(out)),
    };
    match standing {
        Standing::Current => out.unwrap_or_else(|| Err(RestError::internal("a counted call lost its answer", true))),
        Standing::Outdated if bearer_is_api_key(req) => {
            // Read-only work (only such calls go ahead): run again under the new scope.
            let fresh = authenticate(req, state).await?;
            count(req, state, &fresh, true).await?;
            scoped_by(req, &fresh);
            work(tool_caller(&fresh)).await
        }
        Standing::Outdated => Err(crate::auth::outdated(&caller)),
        Standing::Revoked => Err(crate::auth::revoked(&caller)),
    }
}

/// Keeps a scoped caller's claims with the request for [`run`] (and forgets
/// them when a fresh exchange has no scope).
fn scoped_by(req: &HttpRequest, caller: &Caller) {
    if caller.claims.scope.is_some() {
        req.extensions_mut().insert(ScopedBy(caller.claims.clone()));
    } else {
        req.extensions_mut().remove::<ScopedBy>();
    }
}

/// The claims of a scoped credential, kept with its request for [`run`].
struct ScopedBy(Arc<tradeterm_protocol::token::Claims>);

/// The tool caller of an authenticated REST request.
fn tool_caller(caller: &Caller) -> tradeterm_tools::Caller {
    tradeterm_tools::Caller {
        license_id: caller.license_id().to_owned(),
        credential: caller.claims.cred_id.clone(),
        caps: caller.claims.caps.clone(),
    }
}

/// Authenticates a management request with the license's master key (not
/// rate-limited, as the gateway's dashboard routes are not).
async fn master(req: &HttpRequest, state: &AppState) -> Result<tradeterm_tools::Caller, RestError> {
    let key = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(tradeterm_protocol::auth::parse_bearer);
    let Some(key) = key else {
        return Err(RestError::unauthorized(
            "missing master license key: send `Authorization: Bearer <LICENSE_KEY>`",
        ));
    };
    let production = state.services.settings.production;
    let lookup = async {
        state
            .services
            .store
            .license_by_master_key(key)
            .await
            .map_err(|e| RestError::internal(e.to_string(), production))?
            .ok_or_else(|| RestError::unauthorized("management endpoints require the license's master key"))
    };
    let license = guarded(req, state, key, lookup).await?;
    // The master key also reads the trade audit log (`audit`, held by no tier).
    let mut caps = license.tier.capabilities().to_vec();
    caps.push(tradeterm_tools::Capability::Audit);
    Ok(tradeterm_tools::Caller {
        credential: format!("master:{}", license.id),
        caps,
        license_id: license.id,
    })
}

async fn call_tool(
    req: HttpRequest,
    path: String,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> Result<HttpResponse, RestError> {
    let Some(tool) = tradeterm_tools::find(&path) else {
        admit(&req, &state).await?;
        return Err(RestError::new(
            404,
            "NOT_FOUND",
            "unknown tool; GET /api/v1/tools lists them",
        ));
    };
    counted(&req, &state, tool, async |caller| {
        // No body is `{}`; anything else must be a JSON object (whitespace
        // alone is not JSON, and its schema says so).
        let input = if body.is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(&body).map_err(|e| RestError::invalid(format!("body is not valid JSON: {e}")))?
        };
        if !input.is_object() {
            return Err(RestError::invalid("the body must be a JSON object"));
        }
        run(tool, caller, &req, input, &state).await
    })
    .await
}

async fn named(
    (route, tool, params): Matched,
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> Result<HttpResponse, RestError> {
    match route.auth {
        Auth::Bearer => {
            counted(&req, &state, tool, async |caller| {
                named_run(route, tool, params.clone(), caller, &req, &body, &state).await
            })
            .await
        }
        // The audit log also answers a REST credential (an API key or a
        // session token) holding `audit` (a key scoped with it,
        // docs/audit.md); the tool's capability gate refuses the others (403).
        Auth::MasterKey if route.tool == "get_audit_log" && bearer_is_credential(&req) => {
            counted(&req, &state, tool, async |caller| {
                named_run(route, tool, params.clone(), caller, &req, &body, &state).await
            })
            .await
        }
        Auth::MasterKey => {
            let caller = master(&req, &state).await?;
            named_run(route, tool, params, caller, &req, &body, &state).await
        }
    }
}

/// Whether the request's bearer is a REST credential (an API key or a
/// session token, `a.b.c`) rather than a master key.
fn bearer_is_credential(req: &HttpRequest) -> bool {
    req.headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(tradeterm_protocol::auth::parse_bearer)
        .is_some_and(|k| k.starts_with(crate::auth::API_KEY_PREFIX) || k.split('.').count() == 3)
}

/// The input of a named route's call (body or query string, and the path
/// parameters), and the call.
async fn named_run(
    route: Route,
    tool: &'static Tool,
    params: PathParams,
    caller: tradeterm_tools::Caller,
    req: &HttpRequest,
    body: &web::Bytes,
    state: &AppState,
) -> Result<HttpResponse, RestError> {
    let mut input = match route.input {
        InputFrom::Body if !body.is_empty() => match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(RestError::invalid("the body must be a JSON object")),
            Err(e) => return Err(RestError::invalid(format!("body is not valid JSON: {e}"))),
        },
        InputFrom::Body => Map::new(),
        InputFrom::Query => query_input(tool, req.query_string())?,
    };
    for (name, value) in &params {
        if input.contains_key(*name) {
            return Err(RestError::invalid(format!(
                "`{name}` is given by the path; do not repeat it"
            )));
        }
        input.insert((*name).to_owned(), coerce(tool, name, value));
    }
    run(tool, caller, req, Value::Object(input), state).await
}

/// The input of a query-string route: each parameter once, typed by the
/// tool's schema (see [`coerce`]).
fn query_input(tool: &Tool, query: &str) -> Result<Map<String, Value>, RestError> {
    let mut input = Map::new();
    if query.is_empty() {
        return Ok(input);
    }
    let pairs = web::Query::<Vec<(String, String)>>::from_query(query)
        .map_err(|e| RestError::invalid(format!("bad query string: {e}")))?;
    for (k, v) in pairs.into_inner() {
        let coerced = coerce(tool, &k, &v);
        if input.insert(k.clone(), coerced).is_some() {
            return Err(RestError::invalid(format!("query parameter `{k}` is repeated")));
        }
    }
    Ok(input)
}

/// Turns a query or path string into the JSON type the tool's schema wants:
/// integers, numbers and booleans by their type; a comma-separated list for
/// an array.
fn coerce(tool: &Tool, name: &str, raw: &str) -> Value {
    let prop = &tool.input_schema["properties"][name];
    let types: Vec<&str> = match &prop["type"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"integer")
        && let Ok(n) = raw.parse::<i64>()
    {
        return json!(n);
    }
    if types.contains(&"integer")
        && let Ok(n) = raw.parse::<u64>()
    {
        return json!(n);
    }
    // An integral number with a fraction or exponent (`48.0`) is an integer
    // to JSON Schema; the tool's input reading takes it as one.
    if types.contains(&"integer")
        && let Ok(n) = raw.parse::<f64>()
        && n.is_finite()
        && n.fract() == 0.0
    {
        return json!(n);
    }
    if types.contains(&"number")
        && let Ok(n) = raw.parse::<f64>()
        && n.is_finite()
    {
        return json!(n);
    }
    if types.contains(&"boolean") {
        match raw {
            "true" | "1" => return json!(true),
            "false" | "0" => return json!(false),
            _ => {}
        }
    }
    if types.contains(&"array") {
        return Value::Array(
            raw.split(',')
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_owned()))
                .collect(),
        );
    }
    json!(raw)
}

/// Runs a tool through [`tradeterm_tools::invoke`] and answers its envelope.
async fn run(
    tool: &Tool,
    caller: tradeterm_tools::Caller,
    req: &HttpRequest,
    input: Value,
    state: &AppState,
) -> Result<HttpResponse, RestError> {
    let header = match req.headers().get(TERMINAL_HEADER) {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| RestError::invalid("X-Terminal-Id must be ASCII"))?
                .to_owned(),
        ),
        None => None,
    };
    let mut call = Invocation::new("rest", caller, TerminalChoice::Header(header));
    call.scope = req
        .extensions()
        .get::<ScopedBy>()
        .and_then(|s| s.0.scope.clone())
        .map(Arc::new);
    call.source = Some(client_address(req, state));
    call.idempotency_key = match req.headers().get("idempotency-key") {
        // Checked for dry runs too (which ignore it): the document states its shape.
        Some(v) => match v.to_str() {
            Ok(key) if tradeterm_tools::schema::is_idempotency_key(key) => Some(key.to_owned()),
            _ => {
                return Err(RestError::invalid(
                    "Idempotency-Key must be 1-255 printable ASCII characters",
                ));
            }
        },
        None => None,
    };
    let production = state.services.settings.production;
    let image = tool.chart.is_some() && accepts_png(req);
    let mut input = input;
    if image && let Some(obj) = input.as_object_mut() {
        obj.insert(tradeterm_tools::chart::CHART_PROPERTY.into(), Value::Bool(true));
    }
    // Boxed: the tool call's state is large, and each future holding it
    // inline (this one, `counted`'s, the route's) is copied whole on every
    // move; boxed, they move a pointer (docs/performance.md).
    let charted = Box::pin(tradeterm_tools::invoke_charted(&state.services, tool, call, input))
        .await
        .map_err(|e| RestError::from_tool(e, production))?;
    let Some(chart) = charted.chart else {
        if let Some(document) = document(&charted.output) {
            return Ok(document);
        }
        return Ok(data_envelope(&charted.output));
    };
    // Drawing takes tens of milliseconds of CPU: on actix's blocking pool.
    let (output, png) = web::block(move || {
        let png = tradeterm_charts::render_tool_chart(chart.kind.name(), &charted.output, chart.bars.as_ref());
        (charted.output, png)
    })
    .await
    .map_err(|e| RestError::internal(format!("chart task: {e}"), production))?;
    let png = png.map_err(|e| RestError::internal(format!("chart of `{}`: {e}", tool.name), production))?;
    if image {
        return Ok(HttpResponse::Ok()
            .content_type(tradeterm_charts::PNG_MIME)
            .insert_header((
                actix_web::http::header::CONTENT_DISPOSITION,
                format!("inline; filename=\"{}.png\"", tool.name),
            ))
            .body(png.bytes));
    }
    Ok(chart_envelope(&output, &png))
}

/// A tool output that carries a `document` (`get_audit_log` with
/// `format=csv`) is answered as that document: its media type, its text as
/// the body, a download name, and `X-Next-Cursor` when there is a next page.
fn document(output: &Value) -> Option<HttpResponse> {
    let doc = output.get("document")?;
    let media_type = doc.get("media_type")?.as_str()?;
    let text = doc.get("text")?.as_str()?;
    let filename = doc.get("filename").and_then(Value::as_str).unwrap_or("document");
    let mut answer = HttpResponse::Ok();
    answer.content_type(media_type).insert_header((
        actix_web::http::header::CONTENT_DISPOSITION,
        format!("attachment; filename=\"{filename}\""),
    ));
    if let Some(cursor) = output.get("next_cursor").and_then(Value::as_str) {
        answer.insert_header(("x-next-cursor", cursor.to_owned()));
    }
    Some(answer.body(text.to_owned()))
}

/// Whether the request's `Accept` lists `image/png` (or `image/*`) with a
/// non-zero quality: a chartable tool then answers its chart as the body.
fn accepts_png(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(actix_web::http::header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default().to_ascii_lowercase();
            let zero = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (media == "image/png" || media == "image/*") && !zero
        })
}

/// `{ "data": <data>, "chart": { "mime_type", "width", "height", "data" } }`:
/// the tool's output and its chart as base64 PNG.
fn chart_envelope(data: &Value, png: &tradeterm_charts::Png) -> HttpResponse {
    let body = json!({
        "data": data,
        "chart": {
            "mime_type": tradeterm_charts::PNG_MIME,
            "width": png.width,
            "height": png.height,
            "data": png.base64(),
        },
    });
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(method: Method, path: &str) -> Option<(&'static str, PathParams)> {
        match_named(&method, path).unwrap().map(|(r, _, p)| (r.tool, p))
    }

    #[test]
    fn every_route_names_a_catalog_tool() {
        assert_eq!(check(), Ok(()));
        assert_eq!(matchers().len(), ROUTES.len());
        for m in matchers() {
            assert_eq!(m.tool.name, m.route.tool);
        }
    }

    #[test]
    fn query_parameters_are_typed_by_the_schema_and_never_repeated() {
        let tool = tradeterm_tools::find("get_cb_stance").unwrap();
        let input = query_input(tool, "currencies=USD,EUR&lookback_days=180").unwrap();
        assert_eq!(
            Value::Object(input),
            json!({ "currencies": ["USD", "EUR"], "lookback_days": 180 })
        );
        let e = query_input(tool, "lookback_days=1&lookback_days=2").unwrap_err();
        assert_eq!(e.code(), "VALIDATION_ERROR");
    }

    #[test]
    fn every_named_route_matches_itself_and_nothing_else_does() {
        for r in ROUTES {
            let method = Method::from_bytes(r.method.as_bytes()).unwrap();
            let path = r.path.replace('{', "x").replace('}', "");
            let (tool, params) = hit(method, &path).unwrap_or_else(|| panic!("{} {}", r.method, r.path));
            assert_eq!(tool, r.tool, "{} {}", r.method, r.path);
            assert_eq!(params.len(), r.path.matches('{').count());
        }
        assert_eq!(
            hit(Method::GET, "/api/v1/market/tick/EURUSD").unwrap().1,
            [("symbol", "EURUSD".to_owned())]
        );
        assert_eq!(hit(Method::GET, "/api/v1/positions").unwrap().0, "get_positions");
        assert_eq!(hit(Method::GET, "/api/v1/positions/42").unwrap().0, "get_position");
        assert_eq!(
            hit(Method::POST, "/api/v1/positions/42/close").unwrap().0,
            "close_position"
        );
        // Wrong method, trailing slash, empty parameter, extra or missing segments.
        assert_eq!(hit(Method::PATCH, "/api/v1/orders"), None);
        assert_eq!(hit(Method::GET, "/api/v1/positions/"), None);
        assert_eq!(hit(Method::GET, "/api/v1/market/tick/"), None);
        assert_eq!(hit(Method::GET, "/api/v1/market/tick/EURUSD/x"), None);
        assert_eq!(hit(Method::GET, "/api/v1/market"), None);
        assert_eq!(hit(Method::GET, "api/v1/positions"), None);
        assert_eq!(hit(Method::GET, ""), None);
    }

    #[test]
    fn known_paths_list_their_methods_and_unknown_paths_none() {
        let cases: [(&str, &[&str]); 19] = [
            ("/api/v1/orders", &["GET", "POST"]),
            ("/api/news-guard", &["GET", "PUT", "DELETE"]),
            ("/api/cb-stance", &["GET"]),
            ("/api/v1/journal/abc", &["GET", "PUT", "DELETE"]),
            ("/api/v1/orders/7", &["PATCH", "DELETE"]),
            ("/api/v1/orders/cancel-all", &["POST"]),
            ("/api/v1/positions/close-all", &["POST"]),
            ("/api/v1/positions/7/close-by", &["POST"]),
            ("/api/v1/market/tick/US%20500", &["GET"]),
            ("/api/v1/positions/1/close", &["POST"]),
            ("/api/v1/tools/get_tick", &["POST"]),
            ("/api/v1/tools/get%5Ftick", &["POST"]),
            ("/api/v1/tools", &["GET"]),
            ("/healthz", &["GET"]),
            ("/readyz", &["GET"]),
            ("/metrics", &["GET"]),
            ("/api/token", &["POST"]),
            ("/api/v1/docs/", &["GET"]),
            ("/api/v1/docs/assets/nope.js", &["GET"]),
        ];
        for (path, methods) in cases {
            assert_eq!(allowed_methods(path), methods, "{path}");
            assert_eq!(no_route(path).code(), "METHOD_NOT_ALLOWED", "{path}");
        }
        for unknown in [
            "/",
            "",
            "/api/v1/tools/nope",
            "/api/v1/tools/",
            "/api/v1/positions/",
            "/api/v1/positions/1/close/x",
            "/api/v1/nope",
            "/api/v1/docs/assets",
            "/api/v1/docs/assets/a/b",
            "/healthz/",
        ] {
            assert!(allowed_methods(unknown).is_empty(), "{unknown}");
            assert_eq!(no_route(unknown).code(), "NOT_FOUND", "{unknown}");
        }
    }

    #[test]
    fn the_data_envelope_is_the_json_of_data_under_data() {
        for data in [
            json!({ "bid": 1.1, "symbol": "EUR\"USD" }),
            json!([1, null]),
            json!(null),
            json!("x"),
        ] {
            let body = actix_web::body::to_bytes(data_envelope(&data).into_body());
            let body = futures_util::FutureExt::now_or_never(body).unwrap().unwrap();
            assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), json!({ "data": data }));
        }
    }

    #[test]
    fn path_parameters_are_percent_decoded_and_bad_encodings_refused() {
        assert_eq!(
            hit(Method::GET, "/api/v1/market/tick/US%20500").unwrap().1,
            [("symbol", "US 500".to_owned())]
        );
        assert_eq!(percent_decode("a%2Fb"), Some("a/b".into()));
        assert_eq!(percent_decode("%C3%A9"), Some("é".into()));
        for bad in ["%", "%4", "%zz", "%FF", "a%C3"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
        let e = match_named(&Method::GET, "/api/v1/market/tick/%FF").unwrap_err();
        assert_eq!(e.code(), "VALIDATION_ERROR");
    }
}
