//! # tradeterm-mcp
//!
//! The MCP (Model Context Protocol) surface of tradeterm, and the stdio
//! connector that brings it to a local AI client.
//!
//! - **Server** ([`McpServer`]): MCP streamable HTTP at `/mcp/v1` (rmcp's
//!   tower service mounted in axum on its own listener), `GET /healthz`, and
//!   `GET /metrics` and `GET /readyz` (`tradeterm-telemetry`). Every answer
//!   carries the request's `X-Request-Id`; a tool call runs with that id, so
//!   the gateway and the agent see it (`docs/observability.md`).
//!   Every request carries `Authorization: Bearer <TERMINAL_KEY>`; the server
//!   exchanges the key at the gateway for a session token, verifies it, and
//!   refreshes it before it expires, so a client never handles tokens
//!   ([`auth`]). The key must already be bound to a terminal, and that
//!   terminal is the target of every call.
//! - **Tools**: the catalog of `tradeterm-tools`, listed with the same names,
//!   descriptions, schemas and annotations, and run through
//!   [`tradeterm_tools::invoke`] over the process's [`Services`], as REST
//!   runs them (the terminal is the key's; capabilities enforced there). Two
//!   session tools exist only here: `set_mode` and `get_mode` (trading mode
//!   `live` or `paper`; in `paper` every trading tool is forced to a dry run).
//!   Tool failures are MCP tool errors (`isError: true`) carrying the spec's
//!   code in structured content `{ "code", "message" }` and in the text.
//! - **Traffic**: tool calls count against a per-license `mcp` bucket with
//!   the REST tier limits ([`tradeterm_tools::ratelimit`]).
//! - **Connector**: the stdio relay to a hosted `/mcp/v1` lives in its own
//!   small crate, `tradeterm-mcp-connect` (crates/mcp-connect), so that the
//!   `tradeterm-connect` binary links no server, store or database code.
//!
//! **Why axum:** rmcp's streamable HTTP server is a tower service; axum mounts
//! it natively. The REST API is actix-web, but MCP has its own listener, so the
//! two never share a router and the adapters stay independent.
//!
//! **Architecture invariant:** this crate never depends on the REST adapter or
//! the gateway: terminals are reached through [`tradeterm_protocol::Dispatch`]
//! and the token exchange through
//! [`tradeterm_protocol::http_client::GatewayClient`], like REST does.

pub mod auth;
pub mod compact;
mod confirm;
pub mod prompts;
pub mod resources;
mod server;
mod sessions;
mod tools;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_protocol::token::TokenVerifier;
use tradeterm_tools::Services;
use tradeterm_tools::ratelimit::RateLimiter;

pub use auth::{AuthError, Caller};
pub use server::{SESSION_TOOLS, TradingMode};
pub use tools::{ToolListOptions, lean_level, list_for, mcp_tools, mcp_tools_with_output_schemas};
use tradeterm_tools::groups::{ToolGroup, UnknownGroup, parse_groups};

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp/v1";

/// Settings of the MCP server itself. Production mode, rate limits (the
/// REST tier limits, counted in the `mcp` bucket) and the dispatch timeout are
/// the process's [`Services`] settings.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// Accepted `Host` header values (names or `host:port`). Loopback names are
    /// always accepted; a public deployment adds its own host names.
    pub allowed_hosts: Vec<String>,
    /// How long an exchanged session token is used before the terminal key is
    /// exchanged again (so a revoked key stops working within this time even
    /// when the token lives longer). Tokens are also refreshed before expiry.
    pub key_recheck: Duration,
    /// Interval of SSE keep-alive pings.
    pub sse_keep_alive: Duration,
    /// Tool groups a session lists when its client picks none
    /// (`MCP_TOOL_GROUPS`, default every group).
    pub tool_groups: Vec<ToolGroup>,
    /// Whether sessions get output schemas unless their client says
    /// otherwise (`MCP_OUTPUT_SCHEMAS`, default `false`).
    pub output_schemas: bool,
    /// The credential-guessing throttle of bad terminal keys
    /// (`docs/security.md`); one per process.
    pub guess: Arc<tradeterm_cluster::guess::GuessGuard>,
    /// MCP sessions one credential may hold open at once
    /// (`MCP_MAX_SESSIONS_PER_KEY`, default 50): one more `initialize` is
    /// refused with 429 until one closes or expires.
    pub max_sessions_per_key: usize,
    /// A session without a request for this long is closed
    /// (`MCP_SESSION_IDLE_SECS`, default 5 min).
    pub session_idle: Duration,
    /// A session with nothing in flight, no open stream and no resource
    /// subscription for this long is parked: its rmcp worker (about 100 KiB)
    /// is closed and a record of a few hundred bytes keeps the session until
    /// its next request brings it back, or `session_idle` expires it
    /// (default 1 s; [`sessions`]).
    pub session_park: Duration,
    /// How long the user has to confirm a live trade before nothing is sent
    /// (`MCP_TRADE_CONFIRM_TIMEOUT_SECS`, default 120 s; `docs/mcp.md`,
    /// "Trade confirmation").
    pub trade_confirm_timeout: Duration,
}

/// A setting of the MCP server's environment that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// `MCP_TOOL_GROUPS` names an unknown group.
    #[error("MCP_TOOL_GROUPS: {0}")]
    Groups(#[from] UnknownGroup),
    /// `MCP_OUTPUT_SCHEMAS` is not a boolean.
    #[error("MCP_OUTPUT_SCHEMAS must be true or false, not `{0}`")]
    OutputSchemas(String),
}

/// Query parameter (and header) naming a session's tool groups.
pub const GROUPS_PARAM: &str = "groups";
/// Header naming a session's tool groups.
pub const GROUPS_HEADER: &str = "x-mcp-tool-groups";
/// Query parameter asking for output schemas (`true` / `false`).
pub const OUTPUT_SCHEMAS_PARAM: &str = "output_schemas";
/// Header asking for output schemas (`true` / `false`).
pub const OUTPUT_SCHEMAS_HEADER: &str = "x-mcp-output-schemas";

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

impl McpSettings {
    /// The defaults with the operator's tool groups (comma-separated
    /// groups, or `all`; the binary reads `MCP_TOOL_GROUPS`) and output
    /// schemas (`true`/`false`; `MCP_OUTPUT_SCHEMAS`) applied. Empty or
    /// absent values keep the defaults.
    pub fn with_list_defaults(tool_groups: Option<&str>, output_schemas: Option<&str>) -> Result<Self, SettingsError> {
        let mut s = Self::default();
        if let Some(groups) = tool_groups.filter(|g| !g.trim().is_empty()) {
            s.tool_groups = parse_groups(groups)?;
        }
        if let Some(v) = output_schemas.filter(|v| !v.trim().is_empty()) {
            s.output_schemas = parse_bool(v).ok_or_else(|| SettingsError::OutputSchemas(v.to_owned()))?;
        }
        Ok(s)
    }
}

/// The tool list a session asks for in its `initialize` request: groups
/// from `?groups=` or `X-MCP-Tool-Groups`, output schemas from
/// `?output_schemas=` or `X-MCP-Output-Schemas`; the operator's defaults for
/// what it does not say.
pub(crate) fn list_options(state: &McpState, parts: &axum::http::request::Parts) -> Result<ToolListOptions, String> {
    let mut options = state.default_list();
    let query: Vec<(String, String)> = parts
        .uri
        .query()
        .map(|q| {
            q.split('&')
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    Some((percent_decode(k)?, percent_decode(v)?))
                })
                .collect()
        })
        .unwrap_or_default();
    let find = |param: &str, header: &str| -> Option<String> {
        query
            .iter()
            .rev()
            .find(|(k, _)| k == param)
            .map(|(_, v)| v.clone())
            .or_else(|| {
                parts
                    .headers
                    .get(header)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            })
    };
    if let Some(groups) = find(GROUPS_PARAM, GROUPS_HEADER) {
        options.groups = parse_groups(&groups).map_err(|e| e.to_string())?;
    }
    if let Some(v) = find(OUTPUT_SCHEMAS_PARAM, OUTPUT_SCHEMAS_HEADER) {
        options.output_schemas =
            parse_bool(&v).ok_or_else(|| format!("output_schemas must be true or false, not `{v}`"))?;
    }
    Ok(options)
}

/// Decodes `%XX` escapes and `+` of a query component; `None` if malformed.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// How long an idle session keeps its worker by default ([`sessions`]).
pub const DEFAULT_SESSION_PARK: Duration = Duration::from_secs(1);

/// How long the user has to confirm a live trade by default.
pub const DEFAULT_TRADE_CONFIRM_TIMEOUT: Duration = Duration::from_secs(120);

/// Host names every MCP listener accepts.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            key_recheck: Duration::from_secs(60),
            sse_keep_alive: Duration::from_secs(15),
            tool_groups: ToolGroup::ALL.to_vec(),
            output_schemas: false,
            guess: Arc::default(),
            max_sessions_per_key: 50,
            session_idle: Duration::from_secs(300),
            session_park: DEFAULT_SESSION_PARK,
            trade_confirm_timeout: DEFAULT_TRADE_CONFIRM_TIMEOUT,
        }
    }
}

/// State shared by every session of one MCP server. Cheap to clone.
#[derive(Clone)]
pub struct McpState {
    inner: Arc<Inner>,
}

struct Inner {
    settings: McpSettings,
    services: Arc<Services>,
    auth: auth::Authenticator,
    limiter: Option<RateLimiter>,
    readiness: tradeterm_telemetry::Readiness,
    /// Open sessions per credential id.
    slots: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    /// Every session's record, parked or not, by session id.
    sessions: Arc<sessions::Sessions>,
}

/// One open MCP session of a credential, counted while it lives (in the
/// request that opens it, then in the session's handler).
#[derive(Debug)]
pub(crate) struct SessionSlot {
    pub(crate) credential: String,
    pub(crate) slots: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.slots.lock()
            && let Some(n) = slots.get_mut(&self.credential)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                slots.remove(&self.credential);
            }
        }
    }
}

impl std::fmt::Debug for McpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpState")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl McpState {
    /// Builds the shared state over the process's `services`: terminal keys
    /// are exchanged at `gateway` and the tokens verified with `verifier`;
    /// tool calls count in the `mcp` bucket of the services' rate limits, and
    /// with their Redis every request checks the key's revocation mark.
    pub fn new(
        settings: McpSettings,
        services: Arc<Services>,
        verifier: TokenVerifier,
        gateway: GatewayClient,
    ) -> Self {
        let auth = auth::Authenticator::new(gateway, verifier, services.store.clone(), settings.key_recheck)
            .with_revocation_marks(services.rate_limits.redis.clone());
        let limiter = services.rate_limits.limiter("mcp");
        let readiness = services.readiness();
        Self {
            inner: Arc::new(Inner {
                settings,
                services,
                auth,
                limiter,
                readiness,
                slots: Arc::default(),
                sessions: Arc::default(),
            }),
        }
    }

    /// The checks of `GET /readyz`: the database, and Redis when rate
    /// limiting uses it. A binary adds its own; clones share them.
    pub fn readiness(&self) -> &tradeterm_telemetry::Readiness {
        &self.inner.readiness
    }

    /// The authenticator (token exchange counters for tests and metrics).
    pub fn authenticator(&self) -> &auth::Authenticator {
        &self.inner.auth
    }

    /// The rate limiter, when on.
    pub fn limiter(&self) -> Option<&RateLimiter> {
        self.inner.limiter.as_ref()
    }

    /// The tool list of a session whose client picks nothing.
    pub fn default_list(&self) -> ToolListOptions {
        ToolListOptions {
            groups: self.inner.settings.tool_groups.clone(),
            output_schemas: self.inner.settings.output_schemas,
        }
    }

    /// MCP sessions open now for the credential `credential_id` (a terminal
    /// key's id): what `MCP_MAX_SESSIONS_PER_KEY` caps.
    pub fn open_sessions(&self, credential_id: &str) -> usize {
        self.inner
            .slots
            .lock()
            .map(|s| s.get(credential_id).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// MCP sessions this server keeps now, parked or not (all credentials).
    pub fn sessions_kept(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Of those, the parked ones (no rmcp worker; `McpSettings::session_park`).
    pub fn sessions_parked(&self) -> usize {
        self.inner.sessions.parked()
    }

    pub(crate) fn sessions(&self) -> &Arc<sessions::Sessions> {
        &self.inner.sessions
    }

    /// A slot for one more session of `credential`, or `None` at the cap.
    fn take_slot(&self, credential: &str) -> Option<Arc<SessionSlot>> {
        let mut slots = self.inner.slots.lock().ok()?;
        let n = slots.entry(credential.to_owned()).or_insert(0);
        if *n >= self.inner.settings.max_sessions_per_key {
            return None;
        }
        *n += 1;
        Some(Arc::new(SessionSlot {
            credential: credential.to_owned(),
            slots: self.inner.slots.clone(),
        }))
    }

    pub(crate) fn settings(&self) -> &McpSettings {
        &self.inner.settings
    }

    pub(crate) fn services(&self) -> &Arc<Services> {
        &self.inner.services
    }
}

/// Stops a running [`McpServer`]: ends every MCP session and the listener.
#[derive(Debug, Clone)]
pub struct McpHandle {
    shutdown: CancellationToken,
}

impl McpHandle {
    /// Asks the server to stop; [`McpServer::run_until_stopped`] returns once
    /// open connections are closed.
    pub fn stop(&self) {
        self.shutdown.cancel();
    }
}

/// A bound MCP server.
pub struct McpServer {
    port: u16,
    state: McpState,
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Builds the server on `listener`. Must be called inside a Tokio runtime.
    pub fn build(state: McpState, listener: TcpListener) -> std::io::Result<Self> {
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let shutdown = CancellationToken::new();
        let router = router(state.clone(), shutdown.clone());
        Ok(Self {
            port,
            state,
            listener,
            router,
            shutdown,
        })
    }

    /// The port actually bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's shared state (token-exchange counters for tests and metrics).
    pub fn state(&self) -> &McpState {
        &self.state
    }

    /// A handle that stops the server.
    pub fn handle(&self) -> McpHandle {
        McpHandle {
            shutdown: self.shutdown.clone(),
        }
    }

    /// Serves until stopped through [`McpServer::handle`].
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let stop = self.shutdown.clone();
        use axum::serve::ListenerExt;
        // No Nagle delay on answers and streamed events.
        let listener = self.listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY not set on an MCP connection");
            }
        });
        // The peer address reaches the handlers (the guessing throttle's source).
        let app = self
            .router
            .into_make_service_with_connect_info::<std::net::SocketAddr>();
        axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await
    }
}

/// The axum router: `/mcp/v1` (authenticated), `/healthz`, `/metrics` and
/// `/readyz`, every request observed (request id, span, HTTP metrics).
fn router(state: McpState, shutdown: CancellationToken) -> Router {
    let settings = state.settings();
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    hosts.extend(settings.allowed_hosts.iter().filter(|h| !h.is_empty()).cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_sse_keep_alive(Some(settings.sse_keep_alive))
        .with_cancellation_token(shutdown.child_token());
    // Parked sessions come back from their records (crate::sessions).
    config.session_store = Some(state.sessions().clone());
    let factory_state = state.clone();
    let mut manager = LocalSessionManager::default();
    // A worker with no event for this long ends (as a safety net: the sweep
    // parks idle sessions and expires their records, crate::sessions).
    manager.session_config.keep_alive = Some(settings.session_idle);
    let sessions = Arc::new(manager);
    tokio::spawn(sessions::sweep(
        state.sessions().clone(),
        sessions.clone(),
        settings.session_park.min(settings.session_idle),
        settings.session_idle,
        shutdown.clone(),
    ));
    let mcp = StreamableHttpService::new(
        move || Ok(server::Session::new(factory_state.clone())),
        sessions.clone(),
        config,
    );
    let readiness = state.readiness().clone();
    Router::new()
        .route_service(MCP_PATH, mcp)
        .route_layer(axum::middleware::from_fn_with_state(
            (sessions, state.sessions().clone()),
            session_close_status,
        ))
        .route_layer(axum::middleware::from_fn_with_state(state, authenticate))
        .route("/healthz", get(healthz))
        .merge(tradeterm_telemetry::axum::routes(readiness))
        .layer(axum::middleware::from_fn_with_state(
            "mcp",
            tradeterm_telemetry::axum::observe,
        ))
}

/// The status of a session-closing `DELETE /mcp/v1`, as MCP clients expect it.
///
/// rmcp closes the session and answers 202 Accepted, for a session that
/// exists or not; the streamable HTTP transport expects 200 or 204 (the
/// official Python SDK logs "Session termination failed: 202" otherwise), and
/// 404 for a session it does not know, as for any other request. So a 202 to
/// a `DELETE` becomes 204 No Content when the session existed, and 404 when
/// it did not. rmcp's own checks (session id present, protocol version
/// header) come first and keep their answers.
async fn session_close_status(
    State((sessions, records)): State<(Arc<LocalSessionManager>, Arc<sessions::Sessions>)>,
    req: Request,
    next: Next,
) -> Response {
    use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};

    if req.method() != axum::http::Method::DELETE {
        return next.run(req).await;
    }
    let id: Option<SessionId> = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(Into::into);
    let existed = match &id {
        // The local manager cannot fail; were it to, the close is not called a 404.
        // A parked session exists too (its record).
        Some(id) => records.get(id).is_some() || sessions.has_session(id).await.unwrap_or(true),
        None => false,
    };
    let mut res = next.run(req).await;
    if res.status() == axum::http::StatusCode::ACCEPTED {
        if existed {
            *res.status_mut() = axum::http::StatusCode::NO_CONTENT;
        } else {
            return (axum::http::StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
    }
    res
}

async fn healthz() -> Response {
    axum::Json(serde_json::json!({ "status": "ok", "service": "tradeterm-mcp" })).into_response()
}

/// Authenticates every `/mcp/v1` request and hands the caller to rmcp in the
/// request extensions (rmcp passes the HTTP parts on to the handlers).
///
/// Bad terminal keys count against the client's address in the
/// credential-guessing throttle (429 once it is blocked); a request that
/// opens a session (a `POST` without `Mcp-Session-Id`) takes one of the
/// credential's session slots, or is refused with 429 at the cap.
async fn authenticate(State(state): State<McpState>, mut req: Request, next: Next) -> Response {
    let header = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let credential = header.and_then(tradeterm_protocol::auth::parse_bearer);
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    let forwarded = req
        .headers()
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok());
    let guess = &state.inner.settings.guess;
    let source = guess.source(peer, forwarded);
    let checked = match credential {
        Some(key) => guess
            .guard(
                "mcp",
                source,
                Some(key),
                state.inner.auth.authenticate(header),
                |e: &AuthError| e.status == 401,
            )
            .await
            .map_err(|blocked| AuthError::limited(blocked.message(), blocked.retry_after_secs())),
        None => Ok(state.inner.auth.authenticate(header).await),
    };
    let caller = match checked {
        Ok(Ok(caller)) => caller,
        Ok(Err(e)) | Err(e) => return e.into_response(),
    };
    let session_id = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let opens_session = req.method() == axum::http::Method::POST && session_id.is_none();
    let mut opened = None;
    let mut busy = None;
    if let Some(record) = session_id.as_deref().and_then(|id| state.sessions().get(id)) {
        // Another key's session is refused here, parked or not, with the
        // handler's own message (Session::authorized): a parked session is
        // not brought back for it, and the answer does not depend on whether
        // the session was parked.
        let me = (caller.license_id().to_owned(), caller.terminal_id().to_owned());
        if record.owner.get().is_some_and(|owner| *owner != me) {
            return not_the_owner();
        }
        busy = Some(record.busy());
    }
    if opens_session {
        match state.take_slot(&caller.claims.cred_id) {
            Some(slot) => {
                let record = Arc::new(sessions::SessionRecord::new(slot));
                req.extensions_mut().insert(record.clone());
                busy = Some(record.busy());
                opened = Some(record);
            }
            None => {
                tradeterm_telemetry::record::limit_refused("mcp_sessions", "mcp");
                let cap = state.inner.settings.max_sessions_per_key;
                return AuthError::limited(
                    format!(
                        "this key has {cap} MCP sessions open, the most it may (MCP_MAX_SESSIONS_PER_KEY); close one \
                         (DELETE /mcp/v1 with its Mcp-Session-Id) or let an idle one expire"
                    ),
                    state.inner.settings.session_idle.as_secs().max(1),
                )
                .into_response();
            }
        }
    }
    req.extensions_mut().insert(ClientSource(source));
    req.extensions_mut().insert(caller);
    let res = next.run(req).await;
    // The new session's record is kept under the id rmcp gave it.
    if let Some(record) = opened
        && let Some(id) = res.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())
    {
        state.sessions().insert(id, record);
    }
    match busy {
        // In flight until its answer's stream ends (an SSE stream may stay open).
        Some(busy) => res.map(|body| sessions::busy_while_streaming(body, busy)),
        None => res,
    }
}

/// The answer to a request on another terminal key's session: 403 with a
/// JSON-RPC error (no request id: the body is not read), the message the
/// session's handler gives.
fn not_the_owner() -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32600, "message": "this MCP session belongs to another terminal key" },
    });
    (axum::http::StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}

/// The client's address of an MCP request (the trusted proxy's
/// `X-Forwarded-For` honoured), for the trade audit log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientSource(pub(crate) std::net::IpAddr);

#[cfg(test)]
mod list_defaults_tests {
    use super::*;

    #[test]
    fn operator_defaults_are_parsed_and_bad_values_named() {
        let all = McpSettings::default();
        let s = McpSettings::with_list_defaults(None, Some("")).unwrap();
        assert_eq!(
            (s.tool_groups.clone(), s.output_schemas),
            (all.tool_groups.clone(), false)
        );
        let s = McpSettings::with_list_defaults(Some("market"), Some("true")).unwrap();
        assert!(s.output_schemas);
        assert_ne!(s.tool_groups, all.tool_groups, "one group is not all groups");
        assert!(McpSettings::with_list_defaults(Some("no_such_group"), None).is_err());
        assert!(McpSettings::with_list_defaults(None, Some("maybe")).is_err());
    }
}
