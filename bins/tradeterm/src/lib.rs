//! # tradeterm (application)
//!
//! The all-in-one single node behind `tradeterm serve` ([`stack::Stack`]:
//! gateway, REST and MCP listeners and in-process simulated terminals), its
//! demo license, and the conformance kit (`tradeterm agent check`). The
//! start-up pieces every binary shares (settings, the service bundle, the
//! store, keys, tracing) are `tradeterm-boot`, re-exported here.
//!
//! **Invariant:** no domain logic lives here; this crate only reads
//! configuration, builds the pieces and runs them. The single-purpose
//! binaries (`tradeterm-api`, `tradeterm-mcp`, `tradeterm-gateway`) do not
//! depend on this crate, so they link only what they serve.

pub mod agent_check;
pub mod audit_cli;
pub mod dashboard;
pub mod demo;
pub mod events_cli;
pub mod stack;

pub use tradeterm_boot::startup as boot;
pub use tradeterm_boot::{Settings, init_tracing, keys, settings};

/// The gateway's TLS from `GATEWAY_TLS_CERT` / `GATEWAY_TLS_KEY` (`None`:
/// plain HTTP and `ws://`); see [`Settings::gateway_tls_files`] and
/// [`tradeterm_gateway::load_tls`].
///
/// # Errors
/// Half a pair, production without TLS (unless `AGENT_ALLOW_PLAIN_WS`), or
/// an unusable file; every message names the setting.
pub fn gateway_tls(settings: &Settings) -> anyhow::Result<Option<tradeterm_gateway::TlsConfig>> {
    settings
        .gateway_tls_files()?
        .map(|(cert, key)| tradeterm_gateway::load_tls(cert, key).map_err(anyhow::Error::msg))
        .transpose()
}
