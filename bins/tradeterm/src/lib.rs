//! # tradeterm (application)
//!
//! Start-up glue shared by the tradeterm binaries: typed settings, RS256 key
//! loading (generated into the data dir in development, required in
//! production), the demo license of the local stack, and [`stack::Stack`],
//! which runs the gateway and the in-process simulated terminals.
//!
//! **Invariant:** no domain logic lives here; this crate only reads
//! configuration, builds the pieces and runs them.

pub mod agent_check;
pub mod boot;
pub mod demo;
pub mod keys;
pub mod settings;
pub mod stack;

pub use settings::Settings;

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
