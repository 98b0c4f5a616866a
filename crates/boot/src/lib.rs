//! # tradeterm-boot
//!
//! Start-up glue shared by the tradeterm binaries: typed [`Settings`]
//! (defaults → TOML file → the spec's environment variables), the one
//! `tradeterm_tools::Services` bundle of a process (`Settings::services`,
//! feature `services`),
//! the store ([`startup::open_store`]), the RS256 keys ([`keys`]), the
//! clients of a remote gateway ([`startup::remote_gateway`]) and tracing
//! (text or JSON lines, `LOG_FORMAT`) with the metrics recorder.
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

/// Installs the tracing subscriber (`RUST_LOG`, default `info`), writing to
/// stderr as text or, with `LOG_FORMAT=json`, one JSON object per line
/// (`tradeterm_telemetry::logging`), and the process's metrics recorder
/// (served at `/metrics` by every listener). An unknown `LOG_FORMAT` is
/// reported and text is used.
pub fn init_tracing() {
    let (format, bad) = match std::env::var("LOG_FORMAT") {
        Ok(v) => match tradeterm_telemetry::logging::LogFormat::parse(&v) {
            Ok(f) => (f, None),
            Err(e) => (Default::default(), Some(e)),
        },
        Err(_) => (Default::default(), None),
    };
    tradeterm_telemetry::logging::init(format);
    if let Some(e) = bad {
        tracing::warn!("{e}; logging as text");
    }
    tradeterm_telemetry::metrics::install();
}
