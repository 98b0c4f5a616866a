//! Start-up pieces shared by the binaries: the store, the token verifier and
//! the clients of a remote gateway.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use tradeterm_protocol::Dispatch;
use tradeterm_protocol::http_client::{GatewayClient, HttpDispatch};
use tradeterm_protocol::token::TokenVerifier;
use tradeterm_store::{SqlStore, Store};

use crate::Settings;

/// Opens `DATABASE_URL`, or SQLite at `data_dir/tradeterm.db` (created if
/// missing). Only for the single node (`tradeterm serve`) and the admin
/// commands working on its data dir; the split binaries use
/// [`open_shared_store`], which never falls back to a private file.
pub async fn open_store(settings: &Settings, data_dir: &Path) -> anyhow::Result<Arc<dyn Store>> {
    let url = match &settings.database_url {
        Some(u) => u.clone(),
        None => {
            std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
            format!("sqlite://{}?mode=rwc", data_dir.join("tradeterm.db").display())
        }
    };
    connect(&url).await
}

/// Opens the store every instance of a split deployment shares:
/// `DATABASE_URL`, required (checked with the other settings by
/// [`Settings::check_split_start`]).
pub async fn open_shared_store(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    let Some(url) = settings.database_url.as_deref().filter(|u| !u.trim().is_empty()) else {
        bail!("DATABASE_URL is required: the database every gateway, API and MCP instance shares");
    };
    connect(url).await
}

async fn connect(url: &str) -> anyhow::Result<Arc<dyn Store>> {
    let store = Arc::new(
        SqlStore::connect(url)
            .await
            .context("opening the database (DATABASE_URL)")?,
    );
    tokio::spawn(purge_idempotency_records(store.clone()));
    Ok(store)
}

/// How long idempotency records (outcomes of live calls made with an
/// `Idempotency-Key`) are kept: a retry within this time gets the first
/// outcome; after it the key may be used again.
pub const IDEMPOTENCY_RETENTION: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Deletes idempotency records older than [`IDEMPOTENCY_RETENTION`], at start
/// and then every hour, for as long as the process runs. Every process that
/// opens the store does it; the deletes are idempotent.
async fn purge_idempotency_records(store: Arc<SqlStore>) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
    loop {
        every.tick().await;
        let before = chrono::Utc::now().timestamp_millis() - IDEMPOTENCY_RETENTION.as_millis() as i64;
        match store.purge_idempotency(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(records = n, "purged expired idempotency records"),
            Err(e) => tracing::warn!(error = %e, "could not purge idempotency records"),
        }
    }
}

/// The verifier of `JWT_PUBLIC_KEY_PATH`, required by adapters that run
/// without the gateway in-process (spec §5.9: refuse to start without it).
pub fn required_verifier(settings: &Settings) -> anyhow::Result<TokenVerifier> {
    let Some(public) = &settings.jwt_public_key_path else {
        bail!("JWT_PUBLIC_KEY_PATH is required: the RS256 public key (PEM) that verifies session tokens");
    };
    let pem = std::fs::read(public).with_context(|| format!("reading {}", public.display()))?;
    TokenVerifier::from_pem(&pem, &settings.jwt_issuer, &settings.jwt_audience)
        .with_context(|| format!("{} is not an RSA public key PEM", public.display()))
}

/// What an adapter process needs to reach a remote gateway.
pub struct RemoteGateway {
    /// The gateway's base URL.
    pub url: String,
    /// Dispatch over the gateway's internal route.
    pub dispatch: Arc<dyn Dispatch>,
    /// Token exchange client.
    pub client: GatewayClient,
}

impl std::fmt::Debug for RemoteGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteGateway")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Clients of the gateway at `GATEWAY_URL` (default the local one on
/// `GATEWAY_PORT`), authenticated with `GATEWAY_INTERNAL_TOKEN` (required).
/// With `KEYVALUE_URL`, dispatch follows the gateways' route table
/// (`tradeterm_cluster::RoutedDispatch`) and `GATEWAY_URL` is the entry for
/// terminals no instance holds, terminal lists and token exchange: in a
/// scaled-out deployment, the load balancer's address of the gateways.
pub fn remote_gateway(settings: &Settings) -> anyhow::Result<RemoteGateway> {
    let url = settings
        .gateway_url
        .clone()
        .unwrap_or_else(|| format!("http://127.0.0.1:{}", settings.gateway_port));
    let Some(internal) = &settings.gateway_internal_token else {
        bail!(
            "GATEWAY_INTERNAL_TOKEN is required: the shared secret of the gateway's internal dispatch route, the \
             same value on the gateway (docs/deploy.md)"
        );
    };
    let mut entry = HttpDispatch::new(&url, internal).map_err(|e| anyhow::anyhow!("{e}"))?;
    if !settings.gateway_dispatch_channel {
        entry = entry.without_channels();
    }
    let client = GatewayClient::new(&url)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .with_internal_token(Some(internal));
    // Scaled out (KEYVALUE_URL): each command goes to the gateway instance
    // holding its terminal, found in the route table the gateways keep.
    let dispatch: Arc<dyn Dispatch> = match (settings.keyvalue_pool()?, &settings.keyvalue_url) {
        (Some(pool), Some(url)) => {
            let routed = tradeterm_cluster::RoutedDispatch::new(
                tradeterm_cluster::RouteTable::new(pool, settings.heartbeat_timeout()),
                entry,
            );
            // Reads then skip the table while no move of their terminal was heard.
            routed.watch_moves(url).map_err(|e| anyhow::anyhow!("{e}"))?;
            Arc::new(routed)
        }
        _ => Arc::new(entry),
    };
    Ok(RemoteGateway { url, dispatch, client })
}
