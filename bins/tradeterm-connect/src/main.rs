//! `tradeterm-connect`: a local AI client starts this program and speaks MCP
//! with it over stdin/stdout; every message is forwarded to a hosted
//! tradeterm endpoint (`--url`, `/mcp/v1`) with the terminal key
//! (`TRADETERM_TERMINAL_KEY` or `--terminal-key`). Logs go to stderr, never
//! stdout, which carries the protocol. The key is never logged.

use std::time::Duration;

use clap::Parser;
use tradeterm_mcp::connect::{self, ConnectSettings};

#[derive(Parser)]
#[command(
    name = "tradeterm-connect",
    version,
    about = "Stdio MCP connector for a hosted tradeterm /mcp/v1 endpoint"
)]
struct Cli {
    /// URL of the hosted MCP endpoint.
    #[arg(long, env = "TRADETERM_MCP_URL", default_value = "http://127.0.0.1:8090/mcp/v1")]
    url: String,
    /// Terminal key (prefer the environment variable: command lines are visible to other local users).
    #[arg(long, env = "TRADETERM_TERMINAL_KEY", hide_env_values = true)]
    terminal_key: String,
    /// How long to keep retrying while the endpoint is unreachable, in seconds.
    #[arg(long, default_value_t = 60)]
    reconnect_secs: u64,
}

impl std::fmt::Debug for Cli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cli").field("url", &self.url).finish_non_exhaustive()
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,tradeterm_mcp=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let cli = Cli::parse();
    let settings = ConnectSettings {
        reconnect_for: Duration::from_secs(cli.reconnect_secs),
        ..ConnectSettings::new(cli.url, cli.terminal_key)
    };
    match connect::run_stdio(settings).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tradeterm-connect: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
