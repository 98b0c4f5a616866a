//! `tradeterm-sim`: one simulated terminal connected to a tradeterm gateway.
//!
//! ```text
//! tradeterm-sim --gateway ws://127.0.0.1:8081/agent/v1 --terminal-key KEY [--seed N]
//!               [--platform MT5] [--allow-trading] [--speed X] [--ca-file PEM]
//!               [--transport ws|poll]
//! ```
//! The key can come from `TRADETERM_TERMINAL_KEY` instead; it is never printed.

use anyhow::{Context, bail};
use clap::Parser;
use tradeterm_protocol::agent::Platform;
use tradeterm_sim::{AgentSettings, SimSettings, Simulator, Transport, spawn_agent};

/// Runs a simulated MetaTrader-style terminal and broker that connects to a
/// tradeterm gateway as a real terminal agent would.
#[derive(Debug, Parser)]
#[command(name = "tradeterm-sim", version)]
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
    /// Terminal key issued by the gateway.
    #[arg(long, env = "TRADETERM_TERMINAL_KEY", hide_env_values = true)]
    terminal_key: String,
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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    if !(args.speed.is_finite() && args.speed > 0.0) {
        bail!("--speed must be a positive number");
    }
    if args.terminal_key.trim().is_empty() {
        bail!("the terminal key is empty");
    }
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
            terminal_key: args.terminal_key,
            uid,
            ca_file: args.ca_file,
        },
    );
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    tracing::info!("shutting down");
    agent.shutdown().await;
    Ok(())
}
