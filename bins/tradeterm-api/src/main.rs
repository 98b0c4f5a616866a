//! `tradeterm-api`: the REST API alone. Terminals are reached through a
//! gateway over HTTP (`GATEWAY_URL`, `GATEWAY_INTERNAL_TOKEN`); tokens are
//! verified with `JWT_PUBLIC_KEY_PATH` (required); the store is `DATABASE_URL`
//! (required: never a private SQLite file; `postgres://` in production); rate
//! limits and revocations use `KEYVALUE_URL` (required in production); every
//! setting: `docs/deploy.md`. It also runs the live monitor of
//! equity guards and prop-firm rules, polling the guarded terminals' accounts
//! through the gateway (`docs/equity-guard.md`, "Split deployment"), the
//! webhook worker (`docs/events.md`, "Webhooks") and the watchers of the
//! news guard and of the bars its streams ask for (`bar.closed`).

/// mimalloc, as in `tradeterm` (see docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use tradeterm_boot::{Role, Settings};
use tradeterm_rest::{AppState, RestServer};

#[derive(Debug, Parser)]
#[command(name = "tradeterm-api", version, about = "tradeterm REST API")]
struct Cli {
    /// Optional TOML configuration file (environment variables override it).
    #[arg(long, env = "TRADETERM_CONFIG")]
    config: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tradeterm_boot::init_tracing();
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = Settings::load(cli.config.as_deref())?;
    // Every missing setting named at once, before anything is opened.
    settings.check_split_start(Role::Api)?;
    let verifier = tradeterm_boot::startup::required_verifier(&settings)?;
    let remote = tradeterm_boot::startup::remote_gateway(&settings)?;
    let store = tradeterm_boot::startup::open_shared_store(&settings).await?;
    let services = settings.services(remote.dispatch, store)?;
    // Poll only: agent events reach the gateway process, not this one.
    let monitor = tradeterm_tools::monitor::spawn(services.clone(), Default::default(), None);
    let alerts = tradeterm_tools::alert_engine::spawn(services.clone(), Default::default(), None);
    // Managed exits: one engine per instance, each rule claimed by one of
    // them; quotes, trades and connections from the event pipeline's live
    // feed (every instance hears it), polling beside it.
    let feed = services
        .events
        .as_ref()
        .map(tradeterm_tools::managed::engine::feed_from_bus);
    let managed = tradeterm_tools::managed::engine::spawn(services.clone(), Default::default(), feed);
    // news_guard.alert events: each instance evaluates, each alert published once.
    let news_watch = tradeterm_tools::news_watch::spawn(services.clone(), Default::default());
    // bar.closed events: each instance watches what its own streams ask,
    // from the quotes on the live feed; each bar published once.
    let bar_watch = tradeterm_tools::bar_watch::spawn(services.clone(), Default::default());
    // Webhook deliveries: every instance enqueues from the shared event log
    // and claims deliveries in the shared store (one sender per delivery).
    let webhooks = tradeterm_tools::webhooks::worker::spawn(services.clone(), services.webhooks);
    let guess = settings.guess_guard()?;
    let state = AppState::new(
        tradeterm_rest::RestSettings {
            guess: guess.clone(),
            body_limits: tradeterm_rest::BodyLimits {
                default: settings.rest_max_body_bytes,
                orders: settings.rest_max_order_body_bytes,
                backtests: settings.rest_max_backtest_body_bytes,
            },
            ..Default::default()
        },
        services,
        verifier,
        remote.client,
    );
    let listener = std::net::TcpListener::bind((settings.host.as_str(), settings.port))
        .with_context(|| format!("binding {}:{}", settings.host, settings.port))?;
    let server = RestServer::build(state, listener)?;
    tracing::info!(port = server.port(), gateway = %remote.url, "REST API listening");
    let handle = server.handle();
    let task = tokio::spawn(server.run_until_stopped());
    let signal = tradeterm_boot::signal::shutdown_signal().await?;
    tracing::info!(signal, "shutting down: draining in-flight requests");
    handle.stop(true).await;
    monitor.stop().await;
    alerts.stop().await;
    managed.stop().await;
    news_watch.stop().await;
    bar_watch.stop().await;
    webhooks.stop().await;
    task.await??;
    Ok(())
}
