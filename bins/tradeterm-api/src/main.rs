//! `tradeterm-api`: the REST API alone. Terminals are reached through a
//! gateway over HTTP (`GATEWAY_URL`, `GATEWAY_INTERNAL_TOKEN`); tokens are
//! verified with `JWT_PUBLIC_KEY_PATH` (required); rate limits use
//! `KEYVALUE_URL` (required in production).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use tradeterm::Settings;
use tradeterm_protocol::http_client::{GatewayClient, HttpDispatch};
use tradeterm_protocol::token::TokenVerifier;
use tradeterm_rest::{AppState, RestDeps, RestServer};
use tradeterm_store::{SqlStore, Store};

#[derive(Debug, Parser)]
#[command(name = "tradeterm-api", version, about = "tradeterm REST API")]
struct Cli {
    /// Optional TOML configuration file (environment variables override it).
    #[arg(long, env = "TRADETERM_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory (SQLite when DATABASE_URL is not set).
    #[arg(long, default_value = ".tradeterm", env = "TRADETERM_DATA_DIR")]
    data_dir: PathBuf,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tradeterm::init_tracing();
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
    let Some(public) = &settings.jwt_public_key_path else {
        bail!("JWT_PUBLIC_KEY_PATH is required: the RS256 public key (PEM) that verifies session tokens");
    };
    let pem = std::fs::read(public).with_context(|| format!("reading {}", public.display()))?;
    let verifier = TokenVerifier::from_pem(&pem, &settings.jwt_issuer, &settings.jwt_audience)
        .with_context(|| format!("{} is not an RSA public key PEM", public.display()))?;
    let gateway_url = settings
        .gateway_url
        .clone()
        .unwrap_or_else(|| format!("http://127.0.0.1:{}", settings.gateway_port));
    let Some(internal) = &settings.gateway_internal_token else {
        bail!("GATEWAY_INTERNAL_TOKEN is required: the shared secret of the gateway's dispatch route");
    };
    let dispatch = HttpDispatch::new(&gateway_url, internal).map_err(|e| anyhow::anyhow!("{e}"))?;
    let gateway = GatewayClient::new(&gateway_url).map_err(|e| anyhow::anyhow!("{e}"))?;
    std::fs::create_dir_all(&cli.data_dir)?;
    let db = settings
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}?mode=rwc", cli.data_dir.join("tradeterm.db").display()));
    let store: Arc<dyn Store> = Arc::new(SqlStore::connect(&db).await.context("opening the database")?);
    let redis = settings.redis_pool()?;
    if redis.is_none() {
        tracing::info!("KEYVALUE_URL is not set: rate limiting is off (development)");
    }
    let state = AppState::new(
        settings.rest_settings(),
        RestDeps {
            dispatch: Arc::new(dispatch),
            store,
            verifier,
            gateway,
            redis,
        },
    );
    let listener = std::net::TcpListener::bind((settings.host.as_str(), settings.port))
        .with_context(|| format!("binding {}:{}", settings.host, settings.port))?;
    let server = RestServer::build(state, listener)?;
    tracing::info!(port = server.port(), gateway = %gateway_url, "REST API listening");
    let handle = server.handle();
    let task = tokio::spawn(server.run_until_stopped());
    tokio::signal::ctrl_c().await?;
    handle.stop(true).await;
    task.await??;
    Ok(())
}
