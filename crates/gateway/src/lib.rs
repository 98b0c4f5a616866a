//! # tradeterm-gateway
//!
//! The gateway is where terminal-side agents connect (one connection per
//! terminal) and where credentials turn into session tokens. It:
//!
//! - authenticates agents with terminal keys over the WebSocket endpoint
//!   `GET /agent/v1` or the HTTP long-poll binding `POST /agent/v1/poll/*`
//!   (agents with plain HTTP only), binds each key to the first terminal
//!   installation that presents it, keeps the connection alive with
//!   heartbeats and marks the terminal disconnected when they stop;
//! - exchanges terminal keys (`POST /api/token`) and REST API keys
//!   (`POST /api/token/api-key`) for RS256 session tokens;
//! - manages REST API keys and terminals for a license
//!   (`/api/dashboard/api-keys`, `/api/dashboard/terminals`, authenticated
//!   with the license's master key);
//! - dispatches commands to terminals with per-command timeouts, in process
//!   through [`Gateway`]'s [`Dispatch`] implementation or over HTTP through
//!   `/internal/v1/dispatch` for adapters in other processes;
//! - terminates TLS itself when given a certificate ([`tls`]): agents then
//!   connect with `wss://` and every route is HTTPS;
//! - serves `GET /metrics` and `GET /readyz` (database, Redis when
//!   configured, its own listener) and answers every request's id in
//!   `X-Request-Id`, which also prefixes the agent's request ids
//!   (`docs/observability.md`).
//!
//! It also serves the support widget's identity route
//! (`GET /api/dashboard/support/identity`). The dashboard web page
//! (`crates/dashboard`) is mounted on its listener by the binaries, on top of
//! the same owner operations ([`Gateway::revoke_api_key`],
//! [`Gateway::rotate_terminal_key`]). The spec's management endpoints
//! that run tools (`/api/prop-firm-rules`, `/api/news-guard`,
//! `/api/cb-stance`) are REST routes; the single-node binary mounts them on
//! this listener with [`Gateway::server_with`].
//!
//! **Architecture invariant:** the gateway dispatches and never computes
//! tools; it depends on `protocol` and `store`, never on the tool catalog or
//! the REST or MCP adapters (`cargo xtask layering` checks it). Nothing of one license is reachable with another license's
//! credentials: a terminal of another license is reported as not found.

mod agent;
mod channel;
mod cluster;
mod command;
mod error;
mod executions;
mod frames;
mod guess;
mod http;
mod manage;
mod marks;
mod owner;
mod poll;
mod registry;
mod seen;
mod telemetry;
pub mod tls;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
pub use actix_web::dev::ServerHandle;
pub use cluster::ClusterSettings;
pub use error::ApiError;
pub use owner::KeyRotation;
pub use registry::TerminalEvent;
pub use tls::{TlsConfig, TlsError};
use tradeterm_protocol::token::TokenSigner;
pub use tradeterm_protocol::{Dispatch, DispatchError};
use tradeterm_store::Store;

/// Settings of a gateway instance.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// Lifetime of tokens exchanged for terminal keys (default 24 h).
    pub token_lifetime: Duration,
    /// Lifetime of tokens exchanged for REST API keys (default 15 min).
    pub api_token_lifetime: Duration,
    /// How often the gateway pings agents and expects their pings (default 10 s).
    pub heartbeat_interval: Duration,
    /// Silence after which a connection is declared dead (default 30 s).
    pub heartbeat_timeout: Duration,
    /// Time an agent has to send `hello` after connecting (default 10 s).
    pub hello_timeout: Duration,
    /// Shared secret of `/internal/v1/*`; those routes answer 404 when unset.
    pub internal_token: Option<String>,
    /// HTTP worker threads (default 2).
    pub workers: usize,
    /// Production mode hides internal error details.
    pub production: bool,
    /// Redis shared with the REST instances: revoked API keys are marked there
    /// so that every instance refuses them at once (`None` in development).
    pub redis: Option<deadpool_redis::Pool>,
    /// How long a quote pushed by an agent (`tick` event) answers `tick`
    /// commands for its symbol without a round trip to the terminal
    /// (default 1 s; zero turns the quote cache off). Agents push a symbol's
    /// quote whenever it changes, at most a few times per second, so a cached
    /// quote is at most one push interval behind the terminal; past this age
    /// the terminal is asked, which also covers agents that stopped pushing a
    /// symbol. See `docs/gateway.md`.
    pub quote_cache: Duration,
    /// How often a connected agent's terminal key is checked again in the
    /// store (default 60 s): an agent whose key was revoked or rotated by
    /// another process (`tradeterm admin rotate-terminal-key`) is
    /// disconnected within this time. A rotation through this gateway's
    /// dashboard disconnects it at once.
    pub key_recheck: Duration,
    /// Secret of the support widget's identity verification
    /// (`GET /api/dashboard/support/identity`, HMAC-SHA256 of the license
    /// id); `None` answers 404 there.
    pub support_identity_secret: Option<String>,
    /// TLS of the listener (`None`: plain HTTP and `ws://`). With it, every
    /// route of the gateway is HTTPS and agents connect with `wss://`. See
    /// [`tls`] and `docs/gateway.md`.
    pub tls: Option<TlsConfig>,
    /// Membership of a scaled-out deployment (with [`GatewaySettings::redis`]):
    /// the terminals connected here are announced in the Redis route table
    /// and commands for terminals held elsewhere are relayed there
    /// (`tradeterm-cluster`, `docs/deploy.md`). `None`: a lone gateway.
    pub cluster: Option<ClusterSettings>,
    /// Where the client-facing events go (`tradeterm-events`): connections,
    /// disconnections and what agents push, translated (`docs/events.md`).
    /// `None`: no events are published.
    pub events: Option<tradeterm_events::Publisher>,
    /// The credential-guessing throttle (`tradeterm_cluster::guess`) of the
    /// token exchange, the agents' `hello`, the master-key routes and the
    /// dashboard sign-in; one per process, shared with REST and MCP there.
    pub guess: Arc<tradeterm_cluster::guess::GuessGuard>,
    /// Largest WebSocket frame an agent may send before its `hello`
    /// (default 64 KiB): refused as soon as a frame header announces more.
    pub hello_max_frame: usize,
    /// Largest WebSocket frame (and message) after the handshake (default 16 MiB).
    pub max_frame: usize,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            token_lifetime: Duration::from_secs(tradeterm_protocol::token::DEFAULT_LIFETIME_SECS),
            api_token_lifetime: Duration::from_secs(15 * 60),
            heartbeat_interval: Duration::from_secs(10),
            heartbeat_timeout: Duration::from_secs(30),
            hello_timeout: Duration::from_secs(10),
            internal_token: None,
            workers: 2,
            production: false,
            redis: None,
            quote_cache: Duration::from_secs(1),
            key_recheck: Duration::from_secs(60),
            support_identity_secret: None,
            tls: None,
            cluster: None,
            events: None,
            guess: Arc::default(),
            hello_max_frame: 64 * 1024,
            max_frame: tradeterm_protocol::agent::MAX_FRAME_BYTES,
        }
    }
}

/// Loads the listener's TLS from the files of `GATEWAY_TLS_CERT` (`cert`)
/// and `GATEWAY_TLS_KEY` (`key`), as [`TlsConfig::load`] does; the message of
/// a failure starts with the setting at fault, for the operator.
///
/// # Errors
/// A file is missing or invalid, or the key does not match the certificate.
pub fn load_tls(cert: &std::path::Path, key: &std::path::Path) -> Result<TlsConfig, String> {
    TlsConfig::load(cert, key).map_err(|e| {
        let setting = match e.file() {
            Some(tls::TlsFile::Certificate) => "GATEWAY_TLS_CERT",
            Some(tls::TlsFile::PrivateKey) => "GATEWAY_TLS_KEY",
            None => "GATEWAY_TLS_CERT/GATEWAY_TLS_KEY",
        };
        format!("{setting}: {e}")
    })
}

/// The gateway's shared state: store, token signer and live connections.
/// Cheap to clone. Implements [`Dispatch`] for in-process adapters.
#[derive(Clone, Debug)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    signer: TokenSigner,
    settings: GatewaySettings,
    registry: registry::Registry,
    /// This instance's part in a cluster, if any.
    cluster: Option<cluster::Cluster>,
    /// Set on shutdown: no new agents, routes withdrawn.
    draining: std::sync::atomic::AtomicBool,
    /// Set to `true` at the end of [`Gateway::shutdown`]: the dispatch
    /// channels close (`channel.rs`).
    channels_stop: tokio::sync::watch::Sender<bool>,
    /// What an adapter of this deployment sends with its token exchanges
    /// (`crate::guess`): the internal token, or one made for this process.
    adapter_token: String,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Runs `round` every `every` (first one period after the start) for as
/// long as the gateway lives; `what` names it in the warning logged when
/// there is no runtime to run it on.
pub(crate) fn spawn_round<F, Fut>(inner: &Arc<Inner>, what: &'static str, every: Duration, round: F)
where
    F: Fn(Arc<Inner>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(round = what, "no runtime: this background round does not run");
        return;
    };
    let weak = Arc::downgrade(inner);
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            round(inner).await;
        }
    });
}

impl Gateway {
    /// Builds the gateway state.
    pub fn new(settings: GatewaySettings, store: Arc<dyn Store>, signer: TokenSigner) -> Self {
        let adapter_token = settings
            .internal_token
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple()));
        let inner = Arc::new(Inner {
            adapter_token,
            store,
            signer,
            cluster: cluster::Cluster::from_settings(&settings),
            settings,
            registry: registry::Registry::new(),
            draining: std::sync::atomic::AtomicBool::new(false),
            channels_stop: tokio::sync::watch::Sender::new(false),
        });
        cluster::spawn_refresher(&inner);
        seen::spawn_toucher(&inner);
        marks::spawn_keeper(&inner);
        Self { inner }
    }

    /// The token an adapter in this process (or deployment) sends with its
    /// token exchanges (`GatewayClient::with_internal_token`) so that the
    /// gateway leaves the guessing throttle of its clients to it: the
    /// internal token when set, else a secret made for this process. Never log it.
    pub fn adapter_token(&self) -> &str {
        &self.inner.adapter_token
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The settings.
    pub fn settings(&self) -> &GatewaySettings {
        &self.inner.settings
    }

    /// Subscribes to events pushed by every connected agent (ticks, trades,
    /// account and permission changes), tagged with license and terminal.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<TerminalEvent> {
        self.inner.registry.subscribe()
    }

    /// Turns `true` when the dispatch channels must close.
    pub(crate) fn channels_stop(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.channels_stop.subscribe()
    }

    /// Whether [`Gateway::shutdown`] has begun.
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Number of agents connected to this instance now.
    pub fn connected_agents(&self) -> usize {
        self.inner.registry.len()
    }

    /// Graceful shutdown (SIGTERM), before the HTTP server is stopped: new
    /// agents are refused with `SHUTTING_DOWN`; commands already sent to
    /// agents get their answers (for at most `grace`); then every agent
    /// gets a `SHUTTING_DOWN` error and its connection is closed (WebSocket
    /// close code 1012, "service restart"; a long-poll session's next
    /// exchange answers 503), which agents take as "reconnect" (behind a
    /// load balancer, to another instance). The routes of this instance are
    /// withdrawn from the cluster's route table, and the dispatch channels
    /// answer what they are running and close (`channel.rs`). Returns the
    /// number of agents disconnected.
    pub async fn shutdown(&self, grace: Duration) -> usize {
        use std::sync::atomic::Ordering;
        self.inner.draining.store(true, Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let busy = self.inner.registry.all().iter().filter(|c| c.has_pending()).count();
            if busy == 0 || tokio::time::Instant::now() >= deadline {
                if busy > 0 {
                    tracing::warn!(busy, "shutting down with commands still unanswered");
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cluster::withdraw_all(&self.inner).await;
        let conns = self.inner.registry.all();
        for conn in &conns {
            conn.kill.notify_one();
        }
        // Let the connection tasks send their goodbyes.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.inner.registry.len() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Dispatch channels: whatever they are still running answers
        // (`channel::DRAIN_FOR`), then they close and their clients move on.
        self.inner.channels_stop.send_replace(true);
        tracing::info!(agents = conns.len(), "gateway drained");
        conns.len()
    }

    /// Whether an agent is connected for this terminal now.
    pub fn is_connected(&self, terminal_id: &str) -> bool {
        self.inner.registry.get(terminal_id).is_some()
    }

    /// Binds an HTTP server for this gateway on `listener`.
    pub fn server(&self, listener: TcpListener) -> std::io::Result<GatewayServer> {
        GatewayServer::build(self.clone(), listener, |_| {})
    }

    /// Binds an HTTP server for this gateway on `listener` that also serves
    /// the routes `extra` registers (before the gateway's own). The
    /// single-node binary passes the REST app's management routes, so the
    /// spec's `{gateway_url}/api/prop-firm-rules` works without the gateway
    /// knowing any tool.
    pub fn server_with<F>(&self, listener: TcpListener, extra: F) -> std::io::Result<GatewayServer>
    where
        F: Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static,
    {
        GatewayServer::build(self.clone(), listener, extra)
    }
}

/// Time a client has to finish the TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A running gateway HTTP server.
pub struct GatewayServer {
    port: u16,
    tls: bool,
    server: Server,
}

impl std::fmt::Debug for GatewayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayServer")
            .field("port", &self.port)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl GatewayServer {
    fn build<F>(gateway: Gateway, listener: TcpListener, extra: F) -> std::io::Result<Self>
    where
        F: Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static,
    {
        let port = listener.local_addr()?.port();
        let workers = gateway.settings().workers.max(1);
        let tls = gateway.settings().tls.clone();
        let readiness = telemetry::readiness(&gateway, listener.local_addr()?);
        let server = actix_web::HttpServer::new(move || {
            actix_web::App::new()
                .wrap_fn(|req, srv| tradeterm_telemetry::actix::observe("gateway", req, srv))
                .configure(|cfg| tradeterm_telemetry::actix::configure(cfg, readiness.clone()))
                .configure(extra.clone())
                .configure(|cfg| http::configure(cfg, gateway.clone()))
        })
        .workers(workers)
        // Agents get each command frame at once: with Nagle's algorithm a
        // frame written while an earlier one is unacknowledged waits for the
        // agent's (possibly delayed, up to 40 ms) ACK.
        .tcp_nodelay(true)
        .disable_signals()
        .shutdown_timeout(5);
        let server = match &tls {
            Some(tls) => server
                .tls_handshake_timeout(TLS_HANDSHAKE_TIMEOUT)
                .listen_rustls_0_23(listener, tls.server_config().clone())?,
            None => server.listen(listener)?,
        };
        Ok(Self {
            port,
            tls: tls.is_some(),
            server: server.run(),
        })
    }

    /// The port actually bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the listener speaks TLS (`https://`, `wss://`).
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// A handle that stops the server.
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped through [`GatewayServer::handle`].
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_load_errors_name_the_setting_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (c, k) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        let missing = std::path::Path::new("/nonexistent/cert.pem");
        let err = load_tls(missing, &k).unwrap_err();
        assert!(
            err.starts_with("GATEWAY_TLS_CERT: ") && err.contains("/nonexistent/cert.pem"),
            "{err}"
        );
        let err = load_tls(&c, &c).unwrap_err();
        assert!(err.starts_with("GATEWAY_TLS_KEY: "), "{err}");
        assert!(load_tls(&c, &k).is_ok());
    }
}
