//! The gateway's metrics hooks (`docs/observability.md`): dispatches timed
//! by command and outcome where the agent is reached ([`metered`]), and the
//! connected-agents gauge kept by the registry ([`agent_connected`],
//! [`agent_gone`]). Small functions so that `registry.rs` only calls them.

use std::future::Future;

use tradeterm_protocol::agent::Platform;
use tradeterm_protocol::{Command, CommandResult, DispatchError};
use tradeterm_telemetry::record::{self, DispatchSide, DispatchTimer};

use crate::registry::Conn;

/// Runs `dispatch(command)` and counts it in `tradeterm_dispatch_total` and
/// `tradeterm_dispatch_duration_seconds` (`side="gateway"`), logging the
/// outcome at debug level (inside the request's span, so with its id).
pub(crate) async fn metered<F, Fut>(
    terminal_id: &str,
    command: Command,
    dispatch: F,
) -> Result<CommandResult, DispatchError>
where
    F: FnOnce(Command) -> Fut,
    Fut: Future<Output = Result<CommandResult, DispatchError>>,
{
    let name = command.name();
    let timer = DispatchTimer::start(DispatchSide::Gateway, name);
    let result = dispatch(command).await;
    let outcome = DispatchError::outcome_of(&result);
    let elapsed = timer.finish(outcome);
    tracing::debug!(
        terminal = %terminal_id,
        cmd = name,
        outcome,
        elapsed_ms = elapsed.as_secs_f64() * 1000.0,
        "dispatch"
    );
    result
}

fn platform(p: Platform) -> &'static str {
    match p {
        Platform::MT4 => "MT4",
        Platform::MT5 => "MT5",
    }
}

/// A connection entered the registry.
pub(crate) fn agent_connected(conn: &Conn) {
    record::agent_connected(conn.outbound.transport(), platform(conn.terminal.platform));
}

/// A connection left the registry (removed, or replaced by a newer one).
pub(crate) fn agent_gone(conn: &Conn) {
    record::agent_disconnected(conn.outbound.transport(), platform(conn.terminal.platform));
}

/// A dispatch channel opened (`crate::channel`).
pub(crate) fn channel_opened() {
    record::dispatch_channel_opened();
}

/// A dispatch channel closed.
pub(crate) fn channel_closed() {
    record::dispatch_channel_closed();
}

/// The readiness checks of a gateway listener bound at `addr`: the database,
/// Redis when configured, and the listener itself (it accepts connections).
pub(crate) fn readiness(gateway: &crate::Gateway, addr: std::net::SocketAddr) -> tradeterm_telemetry::Readiness {
    let readiness = tradeterm_telemetry::Readiness::new();
    let store = gateway.store().clone();
    readiness.add("database", move || {
        let store = store.clone();
        async move { store.ping().await.map_err(|e| e.to_string()) }
    });
    if let Some(pool) = &gateway.settings().redis {
        readiness.add_redis(pool.clone());
    }
    readiness.add_listener("listener", addr);
    readiness
}
