//! # tradeterm-boot
//!
//! Start-up glue shared by the tradeterm binaries: typed [`Settings`]
//! (defaults → TOML file → the spec's environment variables), the one
//! `tradeterm_tools::Services` bundle of a process (`Settings::services`,
//! feature `services`),
//! the store ([`startup::open_store`]), the RS256 keys ([`keys`]), the
//! clients of a remote gateway ([`startup::remote_gateway`]) and tracing.
//!
//! **Architecture invariant:** no adapter is known here (no gateway, REST,
//! MCP or simulator crate), and the tool catalog only with the `services`
//! feature, so a binary that serves one adapter links only that adapter: `tradeterm-api` builds its REST server from these pieces and
//! links no gateway or MCP code. No domain logic lives here; this crate only
//! reads configuration and builds the shared pieces.

pub mod keys;
#[cfg(feature = "services")]
pub mod services;
pub mod settings;
pub mod signal;
pub mod startup;

pub use settings::{Role, Settings};

/// Installs the tracing subscriber (`RUST_LOG`, default `info`), writing to stderr.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,actix_server=warn,sqlx=warn,rmcp=warn"));
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
