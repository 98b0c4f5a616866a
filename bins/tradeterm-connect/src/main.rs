//! `tradeterm-connect`: a local AI client starts this program and speaks MCP
//! with it over stdin/stdout; every message is forwarded to a hosted
//! tradeterm endpoint (`--url`, `/mcp/v1`) with the terminal key
//! (`TRADETERM_TERMINAL_KEY` or `--terminal-key`). Logs go to stderr, never
//! stdout, which carries the protocol. The key is never logged.
//!
//! The relay is `tradeterm-mcp-connect`; this binary links nothing else of
//! tradeterm (no store, no database driver, no server). `tradeterm connect`
//! is the same command in the all-in-one binary.

use clap::Parser;
use tradeterm_mcp_connect::ConnectArgs;

#[derive(Debug, Parser)]
#[command(
    name = "tradeterm-connect",
    version,
    about = "Stdio MCP connector for a hosted tradeterm /mcp/v1 endpoint"
)]
struct Cli {
    #[command(flatten)]
    args: ConnectArgs,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,tradeterm_mcp_connect=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    match tradeterm_mcp_connect::run_stdio(Cli::parse().args.settings()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tradeterm-connect: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
