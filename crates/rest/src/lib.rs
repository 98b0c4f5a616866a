//! # tradeterm-rest
//!
//! The REST API under `/api/v1` (actix-web): authentication (REST API keys
//! exchanged with the gateway for a JWT on first use and cached 60 s, or
//! RS256 JWTs verified with the public key), per-license rate limits shared
//! through Redis, terminal targeting with `X-Terminal-Id`, the spec's
//! envelopes and error codes, the named routes of the spec, and
//! `POST /api/v1/tools/{name}` for every tool of the catalog, and the spec's
//! management endpoints (`/api/prop-firm-rules`, `/api/news-guard`,
//! `/api/cb-stance`) with the license's master key. `GET /metrics` and
//! `GET /readyz` (`tradeterm-telemetry`); every answer carries the request's
//! `X-Request-Id`, and error envelopes carry it as `error.request_id`.
//!
//! Every tool call goes through [`tradeterm_tools::invoke`] over the process's
//! [`Services`]; this crate only authenticates, rate-limits, reads the input
//! from the path, query and body, and maps errors onto the envelope.
//!
//! **Architecture invariant:** routes are data ([`routes::ROUTES`]) mapped
//! onto catalog tools; there is no per-tool glue here. This crate never
//! depends on the gateway or the MCP adapter: terminals are reached through
//! [`tradeterm_protocol::Dispatch`], the token exchange through
//! [`tradeterm_protocol::http_client::GatewayClient`].

pub mod auth;
pub mod docs;
mod error;
pub mod events;
pub mod openapi;
pub mod ratelimit;
pub mod routes;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

pub use actix_web::dev::ServerHandle;
pub use error::RestError;
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_protocol::token::TokenVerifier;
use tradeterm_tools::Services;

/// Settings of the REST server itself. Production mode, rate limits and the
/// dispatch timeout are the process's [`Services`] settings, shared with MCP.
#[derive(Debug, Clone)]
pub struct RestSettings {
    /// How long an API-key exchange is cached (60 s).
    pub exchange_cache: Duration,
    /// HTTP worker threads.
    pub workers: usize,
    /// The credential-guessing throttle of bad API keys, tokens and master
    /// keys (`docs/security.md`); one per process.
    pub guess: Arc<tradeterm_cluster::guess::GuessGuard>,
    /// Request body limits per route (`REST_MAX_*_BODY_BYTES`).
    pub body_limits: BodyLimits,
}

/// The largest request body of each kind of route, bytes: a larger one is
/// refused with 413 `PAYLOAD_TOO_LARGE` (as soon as `Content-Length` says
/// so, else when the body passes the limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Every route not named below (`REST_MAX_BODY_BYTES`, default 256 KiB).
    pub default: usize,
    /// Trading tools: orders, positions (`REST_MAX_ORDER_BODY_BYTES`, default 16 KiB).
    pub orders: usize,
    /// Backtests (`REST_MAX_BACKTEST_BODY_BYTES`, default 4 MiB).
    pub backtests: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        Self {
            default: 256 * 1024,
            orders: 16 * 1024,
            backtests: 4 * 1024 * 1024,
        }
    }
}

impl BodyLimits {
    /// The largest body the tool `tool` takes.
    pub fn for_tool(&self, tool: &str) -> usize {
        match tradeterm_tools::find(tool) {
            Some(_) if tool.contains("backtest") => self.backtests,
            Some(spec) if spec.capability == tradeterm_core::license::Capability::Trade => self.orders,
            _ => self.default,
        }
    }

    /// The largest body any route takes (what is read before routing).
    pub fn largest(&self) -> usize {
        self.default.max(self.orders).max(self.backtests)
    }
}

impl Default for RestSettings {
    fn default() -> Self {
        Self {
            exchange_cache: Duration::from_secs(60),
            workers: 2,
            guess: Arc::default(),
            body_limits: BodyLimits::default(),
        }
    }
}

/// Shared state of all workers.
#[derive(Clone)]
pub struct AppState {
    pub(crate) settings: RestSettings,
    pub(crate) services: Arc<Services>,
    pub(crate) gateway: GatewayClient,
    pub(crate) auth: Arc<auth::Authenticator>,
    pub(crate) limiter: Option<Arc<ratelimit::RateLimiter>>,
    pub(crate) readiness: tradeterm_telemetry::Readiness,
    /// Event streams open on this instance, per license.
    pub(crate) streams: Arc<events::StreamSlots>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("gateway", &self.gateway.base_url())
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Builds the shared state over the process's `services`: tokens are
    /// verified with `verifier`; API keys are exchanged, and `POST /api/token`
    /// forwarded, at `gateway`; tool calls count in the `rest` bucket of the
    /// services' rate limits.
    pub fn new(
        settings: RestSettings,
        services: Arc<Services>,
        verifier: TokenVerifier,
        gateway: GatewayClient,
    ) -> Self {
        let auth = Arc::new(auth::Authenticator::new(
            verifier,
            gateway.clone(),
            services.store.clone(),
            settings.exchange_cache,
        ));
        let limiter = services.rate_limits.shared("rest");
        let readiness = services.readiness();
        Self {
            settings,
            services,
            gateway,
            auth,
            limiter,
            readiness,
            streams: Default::default(),
        }
    }

    /// The checks of `GET /readyz`: the database, and Redis when rate
    /// limiting uses it. A binary adds its own (the single node adds the
    /// gateway's listener); clones share them.
    pub fn readiness(&self) -> &tradeterm_telemetry::Readiness {
        &self.readiness
    }

    /// The authenticator (revocation hooks for tests and in-process wiring).
    pub fn authenticator(&self) -> &Arc<auth::Authenticator> {
        &self.auth
    }

    /// The rate limiter, when on.
    pub fn limiter(&self) -> Option<&Arc<ratelimit::RateLimiter>> {
        self.limiter.as_ref()
    }

    /// Registers the management routes of the spec (the rows of
    /// [`routes::ROUTES`] with [`routes::Auth::MasterKey`]) on another
    /// listener's app: the single-node binary serves them on the gateway's
    /// port too, so `{gateway_url}/api/prop-firm-rules` works as the spec says.
    pub fn configure_management(&self, cfg: &mut actix_web::web::ServiceConfig) {
        routes::configure_management(cfg, self.clone());
    }
}

/// A bound REST server.
pub struct RestServer {
    port: u16,
    server: actix_web::dev::Server,
}

impl std::fmt::Debug for RestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestServer")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl RestServer {
    /// Binds the server on `listener` with the given state.
    ///
    /// # Errors
    /// Binding fails, or a route of [`routes::ROUTES`] names a tool the
    /// catalog does not have (checked here, at start-up, never as a 500).
    pub fn build(state: AppState, listener: TcpListener) -> std::io::Result<Self> {
        routes::check().map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let port = listener.local_addr()?.port();
        let workers = state.settings.workers.max(1);
        let server = actix_web::HttpServer::new(move || {
            actix_web::App::new()
                .wrap_fn(|req, srv| {
                    use actix_web::dev::Service;
                    let fut = srv.call(req);
                    async move {
                        let mut res = fut.await?;
                        routes::add_rate_headers(&mut res);
                        Ok(res)
                    }
                })
                .wrap_fn(|req, srv| tradeterm_telemetry::actix::observe("rest", req, srv))
                .configure(|cfg| routes::configure(cfg, state.clone()))
        })
        .workers(workers)
        // No Nagle delay on answers (actix keeps the OS default otherwise).
        .tcp_nodelay(true)
        .disable_signals()
        .shutdown_timeout(5)
        .listen(listener)?
        .run();
        Ok(Self { port, server })
    }

    /// The port actually bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A handle that stops the server.
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}
