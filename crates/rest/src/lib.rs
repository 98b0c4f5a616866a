//! # tradeterm-rest
//!
//! The REST API under `/api/v1` (actix-web): authentication (REST API keys
//! exchanged with the gateway for a JWT on first use and cached 60 s, or
//! RS256 JWTs verified with the public key), per-license rate limits shared
//! through Redis, terminal targeting with `X-Terminal-Id`, the spec's
//! envelopes and error codes, the named routes of the spec, and
//! `POST /api/v1/tools/{name}` for every tool of the catalog.
//!
//! **Architecture invariant:** routes are data ([`routes::ROUTES`]) mapped
//! onto catalog tools; there is no per-tool glue here. This crate never
//! depends on the gateway or the MCP adapter: terminals are reached through
//! [`tradeterm_protocol::Dispatch`], the token exchange through
//! [`tradeterm_protocol::http_client::GatewayClient`].

pub mod auth;
pub mod docs;
mod error;
pub mod openapi;
pub mod ratelimit;
pub mod routes;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

pub use actix_web::dev::ServerHandle;
pub use error::RestError;
use tradeterm_protocol::Dispatch;
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_protocol::token::TokenVerifier;
use tradeterm_store::Store;

/// Settings of the REST server (spec §5.9).
#[derive(Debug, Clone)]
pub struct RestSettings {
    /// `NODE_ENV=production`: internal error details are hidden.
    pub production: bool,
    /// Rate-limit window (`API_RATE_LIMIT_WINDOW_MS`, default 60 000 ms).
    pub rate_window: Duration,
    /// Requests per window per tier (`API_RATE_LIMIT_FREE/_PRO/_TEAM/_ENTERPRISE`).
    pub rate_limits: ratelimit::TierLimits,
    /// How long an API-key exchange is cached (60 s).
    pub exchange_cache: Duration,
    /// Dispatch timeout per command.
    pub dispatch_timeout: Duration,
    /// HTTP worker threads.
    pub workers: usize,
}

impl Default for RestSettings {
    fn default() -> Self {
        Self {
            production: false,
            rate_window: Duration::from_millis(60_000),
            rate_limits: ratelimit::TierLimits::default(),
            exchange_cache: Duration::from_secs(60),
            dispatch_timeout: tradeterm_protocol::dispatch::DEFAULT_TIMEOUT,
            workers: 2,
        }
    }
}

/// What the REST server is built from.
#[derive(Clone)]
pub struct RestDeps {
    /// Path to terminals.
    pub dispatch: Arc<dyn Dispatch>,
    /// Persistence (journal, idempotency, key revocation checks).
    pub store: Arc<dyn Store>,
    /// Verifies session tokens.
    pub verifier: TokenVerifier,
    /// Gateway client for the API-key exchange and the `/api/token` proxy.
    pub gateway: GatewayClient,
    /// Redis pool for rate limiting (`None`: rate limiting off).
    pub redis: Option<deadpool_redis::Pool>,
    /// The server's economic calendar (`CALENDAR_FILE`; empty when unset),
    /// used by the calendar tools when a terminal has none.
    pub calendar: Arc<tradeterm_tools::events::ServerCalendar>,
    /// The server's news provider (`NEWS_API_KEY`; a no-op when unset).
    pub news: Arc<tradeterm_tools::news::NewsService>,
    /// The server's ETF flows data (`ETF_FLOWS_FILE`; the tool is disabled when unset).
    pub etf_flows: Arc<tradeterm_tools::etf::EtfFlows>,
}

impl std::fmt::Debug for RestDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestDeps")
            .field("gateway", &self.gateway.base_url())
            .finish_non_exhaustive()
    }
}

/// Shared state of all workers.
#[derive(Clone)]
pub struct AppState {
    pub(crate) settings: RestSettings,
    pub(crate) deps: RestDeps,
    pub(crate) auth: Arc<auth::Authenticator>,
    pub(crate) limiter: Option<Arc<ratelimit::RateLimiter>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

impl AppState {
    /// Builds the shared state.
    pub fn new(settings: RestSettings, deps: RestDeps) -> Self {
        let auth = Arc::new(auth::Authenticator::new(
            deps.verifier.clone(),
            deps.gateway.clone(),
            deps.store.clone(),
            settings.exchange_cache,
        ));
        let limiter = deps.redis.clone().map(|pool| {
            Arc::new(ratelimit::RateLimiter::new(
                pool,
                settings.rate_window,
                settings.rate_limits,
            ))
        });
        Self {
            settings,
            deps,
            auth,
            limiter,
        }
    }

    /// The authenticator (revocation hooks for tests and in-process wiring).
    pub fn authenticator(&self) -> &Arc<auth::Authenticator> {
        &self.auth
    }

    /// The rate limiter, when on.
    pub fn limiter(&self) -> Option<&Arc<ratelimit::RateLimiter>> {
        self.limiter.as_ref()
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
    pub fn build(state: AppState, listener: TcpListener) -> std::io::Result<Self> {
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
                .configure(|cfg| routes::configure(cfg, state.clone()))
        })
        .workers(workers)
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
