//! `tradeterm-mcp`: the MCP server alone, at `/mcp/v1` on `MCP_PORT` (default
//! 8090). Terminal keys are exchanged at the gateway (`GATEWAY_URL`) and
//! terminals are reached through its dispatch route (`GATEWAY_INTERNAL_TOKEN`);
//! tokens are verified with `JWT_PUBLIC_KEY_PATH` (required); the store is
//! `DATABASE_URL` (required: never a private SQLite file; `postgres://` in
//! production); rate limits and revocations use `KEYVALUE_URL` (required in
//! production); `MCP_ALLOWED_HOSTS` lists the public host names clients use.
//! Every setting: `docs/deploy.md`.

/// mimalloc, as in `tradeterm` (see docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use tradeterm_boot::{Role, Settings};
use tradeterm_mcp::{McpServer, McpState};

#[derive(Debug, Parser)]
#[command(
    name = "tradeterm-mcp",
    version,
    about = "tradeterm MCP server (streamable HTTP at /mcp/v1)"
)]
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
    settings.check_split_start(Role::Mcp)?;
    let verifier = tradeterm_boot::startup::required_verifier(&settings)?;
    let remote = tradeterm_boot::startup::remote_gateway(&settings)?;
    let store = tradeterm_boot::startup::open_shared_store(&settings).await?;
    let services = settings.services(remote.dispatch, store)?;
    let state = McpState::new(
        tradeterm_mcp::McpSettings {
            allowed_hosts: settings.mcp_allowed_hosts(),
            guess: settings.guess_guard()?,
            max_sessions_per_key: settings.mcp_max_sessions_per_key,
            session_idle: std::time::Duration::from_secs(settings.mcp_session_idle_secs),
            trade_confirm_timeout: std::time::Duration::from_secs(settings.mcp_trade_confirm_timeout_secs),
            ..tradeterm_mcp::McpSettings::with_list_defaults(
                settings.mcp_tool_groups.as_deref(),
                settings.mcp_output_schemas.as_deref(),
            )?
        },
        services,
        verifier,
        remote.client,
    );
    let listener = std::net::TcpListener::bind((settings.host.as_str(), settings.mcp_port))
        .with_context(|| format!("binding {}:{}", settings.host, settings.mcp_port))?;
    let server = McpServer::build(state, listener)?;
    tracing::info!(port = server.port(), gateway = %remote.url, "MCP server listening at /mcp/v1");
    let handle = server.handle();
    let task = tokio::spawn(server.run_until_stopped());
    let signal = tradeterm_boot::signal::shutdown_signal().await?;
    tracing::info!(signal, "shutting down: draining in-flight requests");
    handle.stop();
    // In-flight requests finish; streams still open after this are cut.
    match tokio::time::timeout(std::time::Duration::from_secs(30), task).await {
        Ok(served) => served??,
        Err(_) => tracing::warn!("connections still open after 30 s: closing them"),
    }
    Ok(())
}
