//! `last_seen` of the connected terminals, written in batches.
//!
//! Every heartbeat interval one round writes `last_seen` for every agent
//! connected to this instance in a few statements
//! ([`tradeterm_store::Store::touch_terminals`], 500 terminals each), in
//! place of one `UPDATE` per connection and heartbeat: 10 000 agents with a
//! 10 s heartbeat made 1 000 database writes per second, which competed
//! with everything else for the machine. A disconnect still writes its own
//! `last_seen` at once (`agent::disconnected`).

use std::sync::Arc;

use crate::Inner;

/// Starts the round, for as long as the gateway lives.
pub(crate) fn spawn_toucher(inner: &Arc<Inner>) {
    let every = inner.settings.heartbeat_interval;
    crate::spawn_round(inner, "last_seen", every, async |inner| {
        touch_connected(&inner).await;
    });
}

/// Writes `last_seen` = now for every terminal connected here; how many.
pub(crate) async fn touch_connected(inner: &Inner) -> u64 {
    let ids: Vec<String> = inner.registry.all().iter().map(|c| c.terminal_id.clone()).collect();
    if ids.is_empty() {
        return 0;
    }
    match inner.store.touch_terminals(&ids).await {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, agents = ids.len(), "could not record last_seen of the connected terminals");
            0
        }
    }
}
