//! `tradeterm-gateway`: the gateway alone (agents, tokens, keys, dispatch,
//! the dashboard web page), for deployments that run REST and MCP in other
//! processes. Requires `DATABASE_URL` (never a private SQLite file); in
//! production also `KEYVALUE_URL` (revocation marks, rate limits, the terminal
//! registry), the RS256 key pair, `GATEWAY_INTERNAL_TOKEN` and TLS. Every
//! setting: `docs/deploy.md`.

/// mimalloc, as in `tradeterm` (see docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use tradeterm_boot::{Role, Settings, keys};
use tradeterm_gateway::{ClusterSettings, Gateway, GatewaySettings};

#[derive(Debug, Parser)]
#[command(name = "tradeterm-gateway", version, about = "tradeterm gateway")]
struct Cli {
    /// Optional TOML configuration file (environment variables override it).
    #[arg(long, env = "TRADETERM_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory of the development key pair (generated on first start
    /// when JWT_PRIVATE_KEY_PATH / JWT_PUBLIC_KEY_PATH are unset; production
    /// requires them).
    #[arg(long, default_value = ".tradeterm", env = "TRADETERM_DATA_DIR")]
    data_dir: PathBuf,
}

/// How long in-flight commands may take to be answered on shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tradeterm_boot::init_tracing();
    raise_open_file_limit();
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Every agent connection is a file descriptor: the soft limit (often 1 024)
/// is raised to the hard limit so that one gateway can hold tens of
/// thousands of agents (docs/performance.md, "Capacity").
fn raise_open_file_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = Settings::load(cli.config.as_deref())?;
    // Every missing setting named at once (DATABASE_URL, KEYVALUE_URL, keys,
    // the internal token, TLS in production), before anything is opened.
    settings.check_split_start(Role::Gateway)?;
    // Before anything else: a bad certificate, or production without TLS, stops the start.
    let tls = settings
        .gateway_tls_files()?
        .map(|(cert, key)| tradeterm_gateway::load_tls(cert, key).map_err(anyhow::Error::msg))
        .transpose()?;
    let store = tradeterm_boot::startup::open_shared_store(&settings).await?;
    let key_paths = keys::resolve(&settings, &cli.data_dir)?;
    let gateway = Gateway::new(
        GatewaySettings {
            token_lifetime: Duration::from_secs(settings.token_lifetime_secs),
            heartbeat_interval: settings.heartbeat_interval(),
            heartbeat_timeout: settings.heartbeat_timeout(),
            quote_cache: settings.quote_cache(),
            internal_token: settings.gateway_internal_token.clone(),
            support_identity_secret: settings.support_identity_secret.clone(),
            production: settings.production(),
            redis: settings.keyvalue_pool()?,
            tls,
            cluster: settings
                .gateway_cluster()?
                .map(|(instance, advertise_url)| ClusterSettings {
                    instance,
                    advertise_url,
                }),
            workers: settings.gateway_workers,
            guess: settings.guess_guard()?,
            hello_max_frame: settings.agent_hello_max_frame_bytes,
            max_frame: settings.agent_max_frame_bytes,
            // What agents push, as client events, on Redis Streams.
            events: Some(settings.event_publisher()?),
            ..GatewaySettings::default()
        },
        store,
        keys::signer(&settings, &key_paths)?,
    );
    let listener = std::net::TcpListener::bind((settings.host.as_str(), settings.gateway_port))
        .with_context(|| format!("binding {}:{}", settings.host, settings.gateway_port))?;
    // The dashboard web page; rules and alerts are the tool catalog's, which
    // this process does not link (its panel says where to read them).
    let dashboard = tradeterm_dashboard::Dashboard::new(
        gateway.clone(),
        tradeterm_dashboard::DashboardSettings {
            session_idle: settings.dashboard_session_idle(),
            ..tradeterm_dashboard::DashboardSettings::default()
        },
    );
    let server = gateway.server_with(listener, move |cfg| dashboard.configure(cfg))?;
    tracing::info!(port = server.port(), tls = server.is_tls(), "gateway listening");
    let handle = server.handle();
    let task = tokio::spawn(server.run_until_stopped());
    let signal = tradeterm_boot::signal::shutdown_signal().await?;
    tracing::info!(signal, "shutting down: draining agents and in-flight commands");
    gateway.shutdown(SHUTDOWN_GRACE).await;
    handle.stop(true).await;
    task.await??;
    Ok(())
}
