//! The single-node stack behind `tradeterm serve`: store, gateway, REST and
//! MCP listeners, simulated terminals connected over the real agent
//! protocol on loopback, and the live monitor of equity guards and prop-firm
//! rules (fed with the agents' `account` events from `Gateway::subscribe()`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tradeterm_gateway::{Gateway, GatewaySettings, ServerHandle};
use tradeterm_protocol::agent::Event;
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_sim::{AgentHandle, AgentSettings, Clock, SimSettings, Simulator, SystemClock};
use tradeterm_store::Store;
use tradeterm_tools::alert_engine::{self, EngineEvent, EngineHandle, EngineSettings};
use tradeterm_tools::managed::engine::{self as managed_engine, ManagedEvent, ManagedHandle, ManagedSettings};
use tradeterm_tools::monitor::{self, AccountUpdate, MonitorHandle, MonitorSettings};

use crate::demo::{DemoCredentials, Urls};
use crate::settings::AgentUrls;
use crate::{Settings, keys};

/// What to start.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// Where SQLite, keys and the demo credentials live.
    pub data_dir: PathBuf,
    /// Number of simulated terminals to start in process.
    pub sim_terminals: usize,
    /// Whether the simulated agents have their allow-trading input on.
    pub sim_allow_trading: bool,
    /// Start of the simulated terminals' clock (unix ms); `None` is now. The
    /// simulated FX market is closed at weekends, as the real one is.
    pub sim_start_ms: Option<i64>,
    /// Deployment settings.
    pub settings: Settings,
}

/// Hooks for tests and embedders of [`Stack::start_with`].
#[derive(Default)]
pub struct StackHooks {
    /// The simulated terminals' clock (e.g. a `ManualClock` a test moves);
    /// `None`: a system clock from [`StackOptions::sim_start_ms`].
    pub sim_clock: Option<Arc<dyn Clock>>,
    /// Timing of the equity-guard monitor.
    pub monitor: MonitorSettings,
    /// Timing of the managed exits' engine.
    pub managed: ManagedSettings,
    /// Timing of the news guard's watcher (`news_guard.alert` events).
    pub news_watch: tradeterm_tools::news_watch::NewsWatchSettings,
}

impl std::fmt::Debug for StackHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackHooks")
            .field("sim_clock", &self.sim_clock.is_some())
            .field("monitor", &self.monitor)
            .field("managed", &self.managed)
            .field("news_watch", &self.news_watch)
            .finish()
    }
}

/// A running stack.
pub struct Stack {
    /// The gateway state (implements `Dispatch`).
    pub gateway: Gateway,
    /// The store.
    pub store: Arc<dyn Store>,
    /// Port the gateway listens on.
    pub gateway_port: u16,
    /// Port the REST API listens on.
    pub rest_port: u16,
    /// Port the MCP server (`/mcp/v1`) listens on.
    pub mcp_port: u16,
    /// The MCP server's shared state (token-exchange counters; building more MCP servers in tests).
    pub mcp_state: tradeterm_mcp::McpState,
    /// The license of this node and its keys (created on first start,
    /// whatever the number of simulated terminals; always `Some`).
    pub credentials: Option<DemoCredentials>,
    /// Where agents reach the gateway (`ws://` or `wss://`, long-poll base).
    pub agent_urls: AgentUrls,
    /// Whether the demo credentials were created by this start.
    pub credentials_created: bool,
    /// The event pipeline of this node (gateway, rule engines, REST stream).
    pub events: tradeterm_events::Publisher,
    sims: Vec<Option<AgentHandle>>,
    sim_agents: Vec<AgentSettings>,
    simulators: Vec<Simulator>,
    gateway_handle: ServerHandle,
    gateway_task: tokio::task::JoinHandle<std::io::Result<()>>,
    rest_handle: tradeterm_rest::ServerHandle,
    rest_task: tokio::task::JoinHandle<std::io::Result<()>>,
    mcp_handle: tradeterm_mcp::McpHandle,
    mcp_task: tokio::task::JoinHandle<std::io::Result<()>>,
    monitor: MonitorHandle,
    alert_engine: EngineHandle,
    managed: Option<ManagedHandle>,
    news_watch: tradeterm_tools::news_watch::NewsWatchHandle,
    bar_watch: tradeterm_tools::bar_watch::BarWatchHandle,
    services: Arc<tradeterm_tools::Services>,
    webhooks: tradeterm_tools::webhooks::worker::WebhookHandle,
    monitor_feed: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("gateway_port", &self.gateway_port)
            .field("rest_port", &self.rest_port)
            .field("mcp_port", &self.mcp_port)
            .field("simulators", &self.simulators.len())
            .finish_non_exhaustive()
    }
}

impl Stack {
    /// Opens the store, binds the gateway, creates or reuses the demo
    /// credentials and starts the simulated terminals.
    pub async fn start(opts: StackOptions) -> anyhow::Result<Self> {
        Self::start_with(opts, StackHooks::default()).await
    }

    /// As [`Stack::start`], with hooks (the simulated terminals' clock, the
    /// monitor's timing).
    pub async fn start_with(opts: StackOptions, hooks: StackHooks) -> anyhow::Result<Self> {
        let settings = &opts.settings;
        let tls = crate::gateway_tls(settings)?;
        std::fs::create_dir_all(&opts.data_dir)
            .with_context(|| format!("creating data dir {}", opts.data_dir.display()))?;
        let store = crate::boot::open_store(settings, &opts.data_dir).await?;
        let key_paths = keys::resolve(settings, &opts.data_dir)?;
        let signer = keys::signer(settings, &key_paths)?;

        // One event pipeline for the gateway (what agents push) and the
        // services (rule engines, the REST event stream).
        let events = settings.event_publisher()?;
        // One credential-guessing throttle for the gateway, REST and MCP of this node.
        let guess = settings.guess_guard()?;
        let gw_settings = GatewaySettings {
            guess: guess.clone(),
            hello_max_frame: settings.agent_hello_max_frame_bytes,
            max_frame: settings.agent_max_frame_bytes,
            events: Some(events.clone()),
            token_lifetime: Duration::from_secs(settings.token_lifetime_secs),
            heartbeat_interval: settings.heartbeat_interval(),
            heartbeat_timeout: settings.heartbeat_timeout(),
            quote_cache: settings.quote_cache(),
            internal_token: settings.gateway_internal_token.clone(),
            support_identity_secret: settings.support_identity_secret.clone(),
            production: settings.production(),
            redis: settings.keyvalue_pool()?,
            tls: tls.clone(),
            workers: settings.gateway_workers,
            ..GatewaySettings::default()
        };
        let gateway = Gateway::new(gw_settings, store.clone(), signer);
        // The one service bundle of this node (in-process dispatch). Before
        // anything listens: a bad calendar file stops the start.
        let services = settings.services_with_events(Arc::new(gateway.clone()), store.clone(), events.clone())?;
        // The live monitor of equity guards and prop-firm rules, fed with
        // every `account` event an agent pushes (docs/equity-guard.md).
        let (monitor, alert_engine, managed, monitor_feed) =
            spawn_monitor(&gateway, services.clone(), hooks.monitor, hooks.managed, &events);
        // Webhook deliveries from the store's outbox (docs/events.md, "Webhooks").
        let webhooks = tradeterm_tools::webhooks::worker::spawn(services.clone(), services.webhooks);
        let services_handle = services.clone();
        // news_guard.alert events (docs/events.md).
        let news_watch = tradeterm_tools::news_watch::spawn(services.clone(), hooks.news_watch);
        // bar.closed events for the bars the streams ask for (docs/events.md).
        let bar_watch = tradeterm_tools::bar_watch::spawn(services.clone(), Default::default());
        let listener = TcpListener::bind((settings.host.as_str(), settings.gateway_port))
            .with_context(|| format!("binding the gateway on {}:{}", settings.host, settings.gateway_port))?;
        let gateway_addr = listener.local_addr()?;
        let gateway_port = gateway_addr.port();

        let host = settings.local_host();
        // With TLS, this node's own clients (REST and MCP token exchange,
        // simulated terminals) connect under a name the certificate holds and
        // trust the served certificate (docs/gateway.md, "TLS").
        let agent_host = match &tls {
            Some(t) => t.loopback_name(host).unwrap_or_else(|e| {
                tracing::warn!(
                    error = %e,
                    "this node's own clients cannot verify the gateway certificate (GATEWAY_TLS_CERT); \
                     the REST and MCP key exchange and the simulated terminals will fail"
                );
                host.to_owned()
            }),
            None => host.to_owned(),
        };
        let agent_urls = settings.agent_urls(&agent_host, gateway_port);
        // The adapters throttle their own clients' guesses; the gateway leaves them to it.
        let gateway_client = || {
            local_gateway_client(settings, host, &agent_host, gateway_port, &agent_urls)
                .map(|c| c.with_internal_token(Some(gateway.adapter_token())))
        };

        // REST API: API-key exchange with the local gateway over loopback.
        let rest_state = tradeterm_rest::AppState::new(
            tradeterm_rest::RestSettings {
                guess: guess.clone(),
                body_limits: tradeterm_rest::BodyLimits {
                    default: settings.rest_max_body_bytes,
                    orders: settings.rest_max_order_body_bytes,
                    backtests: settings.rest_max_backtest_body_bytes,
                },
                ..Default::default()
            },
            services.clone(),
            keys::verifier(settings, &key_paths)?,
            gateway_client()?,
        );
        // Ready only while the in-process gateway's listener accepts (`/readyz`).
        rest_state.readiness().add_listener("gateway", gateway_addr);
        // The gateway's listener also serves the spec's management routes
        // (REST rows with the master key), so `{gateway_url}/api/...` works,
        // and the dashboard, whose rules-and-alerts panel runs the same tools.
        let management = rest_state.clone();
        let rest_listener = TcpListener::bind((settings.host.as_str(), settings.port))
            .with_context(|| format!("binding the REST API on {}:{}", settings.host, settings.port))?;
        let rest_url = format!("http://{host}:{}", rest_listener.local_addr()?.port());
        let dashboard = crate::dashboard::dashboard(
            &gateway,
            crate::dashboard::settings(settings, Some(rest_url)),
            services.clone(),
        );
        let server = gateway.server_with(listener, move |cfg| {
            management.configure_management(cfg);
            dashboard.configure(cfg);
        })?;
        let gateway_handle = server.handle();
        let gateway_task = tokio::spawn(server.run_until_stopped());

        let rest = tradeterm_rest::RestServer::build(rest_state, rest_listener)?;
        let rest_port = rest.port();
        let rest_handle = rest.handle();
        let rest_task = tokio::spawn(rest.run_until_stopped());

        // MCP server: the same services; terminal keys exchanged with the local gateway.
        let mcp_state = tradeterm_mcp::McpState::new(
            tradeterm_mcp::McpSettings {
                allowed_hosts: settings.mcp_allowed_hosts(),
                guess,
                max_sessions_per_key: settings.mcp_max_sessions_per_key,
                session_idle: Duration::from_secs(settings.mcp_session_idle_secs),
                trade_confirm_timeout: Duration::from_secs(settings.mcp_trade_confirm_timeout_secs),
                ..tradeterm_mcp::McpSettings::with_list_defaults(
                    settings.mcp_tool_groups.as_deref(),
                    settings.mcp_output_schemas.as_deref(),
                )?
            },
            services,
            keys::verifier(settings, &key_paths)?,
            gateway_client()?,
        );
        mcp_state.readiness().add_listener("gateway", gateway_addr);
        let mcp_listener = TcpListener::bind((settings.host.as_str(), settings.mcp_port))
            .with_context(|| format!("binding the MCP server on {}:{}", settings.host, settings.mcp_port))?;
        let mcp = tradeterm_mcp::McpServer::build(mcp_state.clone(), mcp_listener)?;
        let mcp_port = mcp.port();
        let mcp_handle = mcp.handle();
        let mcp_task = tokio::spawn(mcp.run_until_stopped());
        let mut sims = Vec::new();
        let mut sim_agents = Vec::new();
        let mut simulators = Vec::new();
        // The license of this node: created on first start, reused afterwards.
        let urls = Urls {
            rest: format!("http://{host}:{rest_port}"),
            gateway: agent_urls.base.clone(),
            mcp: format!("http://{host}:{mcp_port}{}", tradeterm_mcp::MCP_PATH),
        };
        let (creds, credentials_created) =
            crate::demo::ensure(store.as_ref(), &opts.data_dir, opts.sim_terminals, &urls).await?;
        for (i, t) in creds.terminals.iter().take(opts.sim_terminals).enumerate() {
            let mut sim_settings = SimSettings::demo(i as u32);
            sim_settings.allow_trading = opts.sim_allow_trading;
            let clock: Arc<dyn Clock> = match (&hooks.sim_clock, opts.sim_start_ms) {
                (Some(c), _) => c.clone(),
                (None, Some(start)) => Arc::new(SystemClock::starting_at(start, 1.0)),
                (None, None) => Arc::new(SystemClock::new(1.0)),
            };
            let sim = Simulator::new(sim_settings, clock);
            simulators.push(sim.clone());
            let agent = AgentSettings {
                url: agent_urls.websocket.clone(),
                terminal_key: t.key.clone(),
                uid: format!("tradeterm-sim-{}", t.id),
                // The served certificate is trusted as a root.
                ca_file: tls.as_ref().and(settings.gateway_tls_cert.clone()),
            };
            let handle = tradeterm_sim::spawn_agent(sim, agent.clone());
            sim_agents.push(agent);
            sims.push(Some(handle));
        }
        let credentials = Some(creds);
        Ok(Self {
            gateway,
            store,
            gateway_port,
            rest_port,
            mcp_port,
            mcp_state,
            credentials,
            credentials_created,
            events,
            agent_urls,
            sims,
            sim_agents,
            simulators,
            gateway_handle,
            gateway_task,
            rest_handle,
            rest_task,
            mcp_handle,
            mcp_task,
            monitor,
            alert_engine,
            managed: Some(managed),
            news_watch,
            bar_watch,
            services: services_handle,
            webhooks,
            monitor_feed,
        })
    }

    /// The in-process simulated terminals, in the order of the demo terminals.
    pub fn simulators(&self) -> &[Simulator] {
        &self.simulators
    }

    /// The one service bundle of this node (what its engines and servers use).
    pub fn services(&self) -> &Arc<tradeterm_tools::Services> {
        &self.services
    }

    /// Takes this node's managed exits' engine out (a test stops or aborts it
    /// to see another engine take its rules over).
    pub fn take_managed_engine(&mut self) -> Option<ManagedHandle> {
        self.managed.take()
    }

    /// Disconnects the agent of simulated terminal `i` (the terminal and its
    /// market go on; tests of a terminal going away).
    pub async fn disconnect_sim(&mut self, i: usize) {
        if let Some(handle) = self.sims.get_mut(i).and_then(Option::take) {
            handle.shutdown().await;
        }
    }

    /// Connects the agent of simulated terminal `i` again (after
    /// [`Stack::disconnect_sim`]).
    pub fn reconnect_sim(&mut self, i: usize) {
        if let (Some(slot), Some(sim), Some(agent)) =
            (self.sims.get_mut(i), self.simulators.get(i), self.sim_agents.get(i))
            && slot.is_none()
        {
            *slot = Some(tradeterm_sim::spawn_agent(sim.clone(), agent.clone()));
        }
    }

    /// Stops only the gateway's HTTP listener (agents disconnect; tests of
    /// gateway outages).
    pub async fn stop_gateway(&self) {
        self.gateway_handle.stop(true).await;
    }

    /// Waits until every simulated terminal is connected, or the deadline passes.
    pub async fn wait_connected(&self, deadline: Duration) -> bool {
        let until = tokio::time::Instant::now() + deadline;
        while tokio::time::Instant::now() < until {
            if self.sims.iter().flatten().all(AgentHandle::is_connected)
                && let Some(c) = &self.credentials
                && c.terminals
                    .iter()
                    .take(self.sims.len())
                    .all(|t| self.gateway.is_connected(&t.id))
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Stops the simulated terminals, the REST and MCP servers, then the gateway.
    pub async fn stop(self) {
        for s in self.sims.into_iter().flatten() {
            s.shutdown().await;
        }
        self.monitor_feed.abort();
        self.monitor.stop().await;
        self.alert_engine.stop().await;
        if let Some(m) = self.managed {
            m.stop().await;
        }
        self.news_watch.stop().await;
        self.bar_watch.stop().await;
        self.webhooks.stop().await;
        self.mcp_handle.stop();
        let _ = self.mcp_task.await;
        self.rest_handle.stop(true).await;
        let _ = self.rest_task.await;
        self.gateway_handle.stop(true).await;
        let _ = self.gateway_task.await;
    }
}

/// Starts the equity-guard monitor, the alert engine, the managed exits'
/// engine and the task forwarding the gateway's `account`, `tick` and trade
/// events to them (a lagging receiver skips what it missed: their polling
/// covers the gap); the managed exits also hear the terminals' connections
/// from the event pipeline.
fn spawn_monitor(
    gateway: &Gateway,
    services: Arc<tradeterm_tools::Services>,
    settings: MonitorSettings,
    managed: ManagedSettings,
    events_pipeline: &tradeterm_events::Publisher,
) -> (MonitorHandle, EngineHandle, ManagedHandle, tokio::task::JoinHandle<()>) {
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    let (alert_tx, alert_rx) = tokio::sync::mpsc::channel(4096);
    let (managed_tx, managed_rx) = tokio::sync::mpsc::channel(4096);
    managed_engine::forward_bus(events_pipeline, managed_tx.clone(), true);
    let mut events = gateway.subscribe();
    let feed = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(e) => {
                    let (license_id, terminal_id) = (e.license_id, e.terminal_id);
                    match e.event {
                        Event::Account(account) => {
                            let engine = EngineEvent::Account {
                                license_id: license_id.clone(),
                                terminal_id: terminal_id.clone(),
                                account: account.clone(),
                            };
                            // The engine may drop an event under load (it polls).
                            let _ = alert_tx.try_send(engine);
                            let update = AccountUpdate {
                                license_id,
                                terminal_id,
                                account,
                            };
                            if tx.send(update).await.is_err() {
                                break;
                            }
                        }
                        Event::Tick(tick) => {
                            let _ = managed_tx.try_send(ManagedEvent::Quote {
                                license_id: license_id.clone(),
                                terminal_id: terminal_id.clone(),
                                tick: tick.clone(),
                            });
                            let _ = alert_tx.try_send(EngineEvent::Quote {
                                license_id,
                                terminal_id,
                                tick,
                            });
                        }
                        Event::TradeTransaction { .. } => {
                            let _ = managed_tx.try_send(ManagedEvent::Trade {
                                license_id,
                                terminal_id,
                            });
                        }
                        _ => {}
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::debug!(skipped = n, "equity guard monitor and alert engine: events skipped");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    let engine = alert_engine::spawn(services.clone(), EngineSettings::default(), Some(alert_rx));
    let managed = managed_engine::spawn(services.clone(), managed, Some(managed_rx));
    (monitor::spawn(services, settings, Some(rx)), engine, managed, feed)
}

/// The client of this node's own gateway used by the REST and MCP servers to
/// exchange keys for tokens. With TLS it trusts the served certificate and,
/// when the certificate names another host than `host`, reaches that name at
/// `host` (loopback) rather than through DNS.
fn local_gateway_client(
    settings: &Settings,
    host: &str,
    agent_host: &str,
    port: u16,
    urls: &AgentUrls,
) -> anyhow::Result<GatewayClient> {
    let client = match (&settings.gateway_tls_cert, settings.gateway_tls_enabled()) {
        (Some(cert), true) => {
            let pem = std::fs::read(cert).with_context(|| format!("GATEWAY_TLS_CERT: reading {}", cert.display()))?;
            let resolve = if agent_host == host {
                None
            } else {
                use std::net::ToSocketAddrs;
                let addr = (host, port)
                    .to_socket_addrs()
                    .with_context(|| format!("resolving HOST {host}"))?
                    .next()
                    .with_context(|| format!("HOST {host} has no address"))?;
                Some((agent_host, addr))
            };
            GatewayClient::with_tls(&urls.base, &pem, resolve)
        }
        _ => GatewayClient::new(&urls.base),
    };
    client.map_err(|e| anyhow::anyhow!("gateway client: {e}"))
}
