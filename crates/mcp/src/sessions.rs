//! What an MCP session keeps while it is idle: a small record, not rmcp's
//! session worker.
//!
//! rmcp runs every session as a worker task, a service task and six Tokio
//! channels whose first block (32 slots of a JSON-RPC message, about 12 KiB
//! each) is allocated when the channel is made: about 100 KiB per session in a
//! debug build, 95% of it rmcp's (`docs/performance.md`, "MCP sessions"),
//! whether the session is used or not. So a session that has no request in
//! flight, no open stream and no resource subscription is **parked** after
//! [`crate::McpSettings::session_park`]: its worker is closed, and what the
//! session is (owner, trading mode, tool list, the client's `initialize`
//! parameters, the credential's slot) stays in a [`SessionRecord`] of a few
//! hundred bytes in [`Sessions`]. The next request of the session brings it
//! back: [`Sessions`] is the rmcp [`SessionStore`] that the streamable HTTP
//! service restores unknown session ids from (it replays `initialize` with
//! the stored parameters, and [`crate::server::Session`] takes the record
//! back, so a `paper` session stays `paper`).
//!
//! A record unused for [`crate::McpSettings::session_idle`] expires: the
//! sweep ([`sweep`]) drops it (its slot, and the `tradeterm_mcp_sessions_open`
//! gauge with it) and closes its worker if one runs, so the cap and the idle
//! expiry are counted in records, parked or not. `DELETE /mcp/v1` removes the
//! record at once (rmcp deletes the session from its store).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use tokio_util::sync::CancellationToken;

use crate::server::TradingMode;
use crate::tools::ToolListOptions;

/// One MCP session, parked or not: what it is, and when it was last used.
#[derive(Debug)]
pub(crate) struct SessionRecord {
    /// The session's trading mode.
    pub(crate) mode: Mutex<TradingMode>,
    /// License and terminal that opened the session.
    pub(crate) owner: OnceLock<(String, String)>,
    /// The tool list, fixed at `initialize`.
    pub(crate) list: OnceLock<ToolListOptions>,
    /// The client's `initialize` parameters, replayed when the session comes back.
    pub(crate) init: OnceLock<InitializeRequestParams>,
    /// Whether the session has resource subscriptions (never parked then:
    /// their feed lives in the worker).
    pub(crate) subscribed: AtomicBool,
    /// Requests and streams of the session in flight.
    busy: AtomicUsize,
    /// Handlers alive (0: parked).
    live: AtomicUsize,
    /// End of the last request or stream.
    last_used: Mutex<Instant>,
    /// The credential's session slot.
    _slot: Arc<crate::SessionSlot>,
    /// Counts the session in `tradeterm_mcp_sessions_open` while it lives.
    _open: tradeterm_telemetry::record::McpSessionGuard,
}

impl SessionRecord {
    /// A new session's record, holding the slot its opening request took.
    pub(crate) fn new(slot: Arc<crate::SessionSlot>) -> Self {
        Self {
            mode: Mutex::new(TradingMode::Live),
            owner: OnceLock::new(),
            list: OnceLock::new(),
            init: OnceLock::new(),
            subscribed: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
            _slot: slot,
            _open: tradeterm_telemetry::record::McpSessionGuard::open(),
        }
    }

    fn touch(&self) {
        if let Ok(mut at) = self.last_used.lock() {
            *at = Instant::now();
        }
    }

    fn idle(&self) -> Duration {
        self.last_used.lock().map(|at| at.elapsed()).unwrap_or_default()
    }

    /// Marks a request (and its answer's stream) of the session in flight
    /// until the guard drops.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.touch();
        Busy(self.clone())
    }

    /// Counts a handler (a running rmcp worker) until the guard drops.
    pub(crate) fn live(self: &Arc<Self>) -> Live {
        self.live.fetch_add(1, Ordering::SeqCst);
        Live(self.clone())
    }
}

/// A request of a session in flight ([`SessionRecord::busy`]).
#[derive(Debug)]
pub(crate) struct Busy(Arc<SessionRecord>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `body`, with the session marked in flight until it ends or is dropped
/// (the client went): an answer's SSE stream, or a `GET` stream held open.
pub(crate) fn busy_while_streaming(body: axum::body::Body, busy: Busy) -> axum::body::Body {
    use futures_util::StreamExt;
    let stream = body.into_data_stream().map(move |chunk| {
        let _held = &busy;
        chunk
    });
    axum::body::Body::from_stream(stream)
}

/// A running handler of a session ([`SessionRecord::live`]).
#[derive(Debug)]
pub(crate) struct Live(Arc<SessionRecord>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The records of one MCP server's sessions, by session id; rmcp's session
/// store (parked sessions come back from it).
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    records: Mutex<HashMap<String, Arc<SessionRecord>>>,
}

/// What the sweep does to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Due {
    Park,
    Expire,
}

impl Sessions {
    pub(crate) fn get(&self, id: &str) -> Option<Arc<SessionRecord>> {
        self.records.lock().ok()?.get(id).cloned()
    }

    /// Keeps `record` under `id` (once its `initialize` succeeded).
    pub(crate) fn insert(&self, id: &str, record: Arc<SessionRecord>) {
        if record.init.get().is_none() {
            return;
        }
        if let Ok(mut records) = self.records.lock() {
            records.insert(id.to_owned(), record);
        }
    }

    fn remove(&self, id: &str) -> Option<Arc<SessionRecord>> {
        self.records.lock().ok()?.remove(id)
    }

    /// Records known now.
    pub(crate) fn len(&self) -> usize {
        self.records.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// Records without a running handler.
    pub(crate) fn parked(&self) -> usize {
        self.records
            .lock()
            .map(|r| r.values().filter(|r| r.live.load(Ordering::SeqCst) == 0).count())
            .unwrap_or(0)
    }

    /// Sessions to park (idle for `park`, live, nothing in flight, no
    /// subscription) and to expire (idle for `idle`, nothing in flight).
    fn due(&self, park: Duration, idle: Duration) -> Vec<(String, Due)> {
        let Ok(records) = self.records.lock() else {
            return Vec::new();
        };
        records
            .iter()
            .filter(|(_, r)| r.busy.load(Ordering::SeqCst) == 0)
            .filter_map(|(id, r)| {
                let for_ = r.idle();
                if for_ >= idle {
                    Some((id.clone(), Due::Expire))
                } else if for_ >= park && r.live.load(Ordering::SeqCst) > 0 && !r.subscribed.load(Ordering::SeqCst) {
                    Some((id.clone(), Due::Park))
                } else {
                    None
                }
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl SessionStore for Sessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(self
            .get(session_id)
            .and_then(|r| r.init.get().cloned())
            .map(SessionState::new))
    }

    /// The record already holds the parameters (the handler's `initialize`
    /// put them there), and is kept by the session's opening request.
    async fn store(&self, _session_id: &str, _state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    /// A `DELETE /mcp/v1`: the record goes (and the slot with it, once the
    /// worker has ended).
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.remove(session_id);
        Ok(())
    }
}

/// How often the sweep looks: a quarter of the shorter delay, 50 ms to 5 s.
fn sweep_period(park: Duration, idle: Duration) -> Duration {
    (park.min(idle) / 4).clamp(Duration::from_millis(50), Duration::from_secs(5))
}

/// Parks and expires the sessions of `sessions` until `stop`.
pub(crate) async fn sweep(
    sessions: Arc<Sessions>,
    manager: Arc<LocalSessionManager>,
    park: Duration,
    idle: Duration,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(sweep_period(park, idle));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        for (id, due) in sessions.due(park, idle) {
            // A request may have come since `due` looked: it keeps its worker.
            if due == Due::Park && sessions.get(&id).is_none_or(|r| r.busy.load(Ordering::SeqCst) > 0) {
                continue;
            }
            if due == Due::Expire {
                sessions.remove(&id);
                tracing::debug!(session = %id, "idle MCP session expired");
            }
            // The worker ends; a parked session comes back from the record.
            let id = id.into();
            if let Err(e) = manager.close_session(&id).await {
                tracing::debug!(error = %e, "closing an idle MCP session's worker");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Arc<SessionRecord> {
        let slots = Arc::default();
        let slot = Arc::new(crate::SessionSlot {
            credential: "tkey_1".into(),
            slots,
        });
        let r = Arc::new(SessionRecord::new(slot));
        let _ = r.init.set(InitializeRequestParams::default());
        r
    }

    #[test]
    fn idle_live_sessions_are_parked_and_old_ones_expire_unless_busy() {
        let sessions = Sessions::default();
        let r = record();
        sessions.insert("s1", r.clone());
        let (park, idle) = (Duration::from_millis(20), Duration::from_millis(200));
        // Parked: nothing to do until a handler runs.
        std::thread::sleep(park * 2);
        assert_eq!(sessions.due(park, idle), vec![]);
        let live = r.live();
        assert_eq!(sessions.due(park, idle), vec![("s1".to_owned(), Due::Park)]);
        // In flight, or subscribed: never parked.
        let busy = r.busy();
        assert_eq!(sessions.due(park, idle), vec![]);
        drop(busy);
        r.subscribed.store(true, Ordering::SeqCst);
        std::thread::sleep(park * 2);
        assert_eq!(sessions.due(park, idle), vec![]);
        drop(live);
        std::thread::sleep(idle);
        assert_eq!(sessions.due(park, idle), vec![("s1".to_owned(), Due::Expire)]);
        // The store: load gives the parameters back, delete forgets.
        assert!(sessions.get("s1").is_some_and(|r| r.init.get().is_some()));
        sessions.remove("s1");
        assert_eq!(sessions.len(), 0);
    }

    #[test]
    fn a_record_without_initialize_is_not_kept() {
        let sessions = Sessions::default();
        let slot = Arc::new(crate::SessionSlot {
            credential: "tkey_1".into(),
            slots: Arc::default(),
        });
        sessions.insert("s1", Arc::new(SessionRecord::new(slot)));
        assert_eq!(sessions.len(), 0);
    }

    #[test]
    fn the_sweep_period_follows_the_delays() {
        assert_eq!(
            sweep_period(Duration::from_secs(1), Duration::from_secs(300)),
            Duration::from_millis(250)
        );
        assert_eq!(
            sweep_period(Duration::from_secs(60), Duration::from_secs(300)),
            Duration::from_secs(5)
        );
        assert_eq!(
            sweep_period(Duration::ZERO, Duration::from_secs(2)),
            Duration::from_millis(50)
        );
    }
}
