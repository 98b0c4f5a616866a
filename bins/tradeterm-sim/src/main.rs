//! `tradeterm-sim`: one simulated terminal connected to a tradeterm gateway.
//!
//! ```text
//! tradeterm-sim --gateway ws://127.0.0.1:8081/agent/v1 --terminal-key KEY [--seed N]
//!               [--platform MT5] [--allow-trading] [--speed X] [--ca-file PEM]
//!               [--transport ws|poll]
//! ```
//! The key can come from `TRADETERM_TERMINAL_KEY` instead; it is never printed.
//!
//! Two more subcommands serve the capacity benchmark (`cargo xtask bench
//! scale`, `docs/performance.md`), see `swarm.rs`:
//!
//! ```text
//! tradeterm-sim provision --gateway-http http://127.0.0.1:8081 --count N --out KEYS.json
//!               (master key in TRADETERM_MASTER_KEY)
//! tradeterm-sim swarm --gateway ws://127.0.0.1:8081/agent/v1 --keys-file KEYS.json
//!               [--agents N] [--connects-per-sec R] [--dispatch-url URL] [--api-url URL]
//!               (internal token in GATEWAY_INTERNAL_TOKEN)
//! ```

mod swarm;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use tradeterm_protocol::agent::Platform;
use tradeterm_sim::{AgentSettings, SimSettings, Simulator, Transport, spawn_agent};

/// Runs a simulated MetaTrader-style terminal and broker that connects to a
/// tradeterm gateway as a real terminal agent would.
#[derive(Debug, Parser)]
#[command(name = "tradeterm-sim", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    single: Args,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Many light agents (real protocol, fixed answers, no market) in one
    /// process, driven over stdin for the capacity benchmark.
    Swarm(swarm::SwarmArgs),
    /// Creates terminals and a REST API key for a swarm through the
    /// gateway's management API and writes them to a keys file (mode 0600).
    Provision(swarm::ProvisionArgs),
}

/// One simulated terminal.
#[derive(Debug, clap::Args)]
struct Args {
    /// The gateway's agent endpoint (`ws(s)://HOST:PORT/agent/v1`; with
    /// `--transport poll` the gateway base `http(s)://HOST:PORT`, and a
    /// `ws(s)://` URL is converted).
    #[arg(long, env = "TRADETERM_GATEWAY_URL", default_value = "ws://127.0.0.1:8081/agent/v1")]
    gateway: String,
    /// How to reach the gateway: `ws` (WebSocket) or `poll` (the HTTP
    /// long-poll binding, as MetaTrader 4 agents do).
    #[arg(long, env = "TRADETERM_TRANSPORT", default_value = "ws")]
    transport: Transport,
    /// Terminal key issued by the gateway (required without a subcommand).
    // Checked at run time: clap would otherwise ask for it with `swarm` and
    // `provision` too.
    #[arg(long, env = "TRADETERM_TERMINAL_KEY", hide_env_values = true)]
    terminal_key: Option<String>,
    /// Seed of prices, spreads and tick times (same seed, same market).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// MT4 or MT5.
    #[arg(long, default_value = "MT5", value_parser = parse_platform)]
    platform: Platform,
    /// Turn the agent's allow-trading input on (off by default).
    #[arg(long)]
    allow_trading: bool,
    /// Clock acceleration (1 = real time).
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Trade around the clock, ignoring market sessions (for demos at weekends).
    #[arg(long)]
    always_open: bool,
    /// Account number (default: derived from the seed).
    #[arg(long)]
    login: Option<u64>,
    /// Stable installation id sent to the gateway (default: derived from the login).
    #[arg(long)]
    uid: Option<String>,
    /// PEM file of certificates to trust for a `wss://` gateway (a self-signed
    /// or private-CA certificate), in addition to the system's roots.
    #[arg(long, env = "TRADETERM_CA_FILE")]
    ca_file: Option<std::path::PathBuf>,
}

fn parse_platform(s: &str) -> Result<Platform, String> {
    match s.to_ascii_uppercase().as_str() {
        "MT4" => Ok(Platform::MT4),
        "MT5" => Ok(Platform::MT5),
        _ => Err(format!("unknown platform `{s}` (MT4 or MT5)")),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    if cli.command.is_some() {
        // stdout carries the swarm's reports (JSON lines).
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).init();
    }
    // Many connections (a swarm) need many file descriptors.
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        tracing::warn!(error = %e, "could not raise the open-file limit");
    }
    match cli.command {
        Some(Sub::Swarm(a)) => swarm::swarm(a).await,
        Some(Sub::Provision(a)) => swarm::provision(a).await,
        None => single(cli.single).await,
    }
}

async fn single(args: Args) -> anyhow::Result<()> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        bail!("--speed must be a positive number");
    }
    let Some(terminal_key) = args.terminal_key.filter(|k| !k.trim().is_empty()) else {
        bail!("a terminal key is required: --terminal-key or TRADETERM_TERMINAL_KEY");
    };
    if let Some(ca) = &args.ca_file {
        // Refuse a bad CA file now rather than retrying with it forever.
        tradeterm_sim::tls::client_config(Some(ca)).context("--ca-file")?;
    }
    let mut settings = SimSettings::demo(0);
    settings.seed = args.seed;
    settings.platform = args.platform;
    settings.allow_trading = args.allow_trading;
    settings.speed = args.speed;
    settings.always_open = args.always_open;
    settings.login = args.login.unwrap_or(7_000_000 + args.seed % 1_000_000);
    let uid = args.uid.unwrap_or_else(|| format!("tradeterm-sim-{}", settings.login));
    let sim = Simulator::new(settings.clone(), settings.system_clock());
    let gateway = args.transport.url(&args.gateway);
    tracing::info!(
        %gateway,
        transport = %args.transport,
        login = settings.login,
        seed = settings.seed,
        platform = ?settings.platform,
        allow_trading = settings.allow_trading,
        speed = settings.speed,
        "simulated terminal starting"
    );
    let agent = spawn_agent(
        sim,
        AgentSettings {
            url: gateway,
            terminal_key,
            uid,
            ca_file: args.ca_file,
        },
    );
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    tracing::info!("shutting down");
    agent.shutdown().await;
    Ok(())
}
