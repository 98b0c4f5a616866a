//! Live agent connections and request/response correlation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::{Notify, broadcast, oneshot};
use tradeterm_core::Tick;
use tradeterm_protocol::agent::{
    AccountIdentity, ErrorBody, Event, GatewayFrame, Permissions, Response, TerminalIdentity, codes,
};
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError, TerminalStatus};

use crate::Gateway;

/// Most symbols whose pushed quotes one connection keeps.
const MAX_CACHED_SYMBOLS: usize = 4096;

/// Longest timeout a caller may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(120);

/// An event pushed by an agent, tagged with where it came from.
#[derive(Debug, Clone)]
pub struct TerminalEvent {
    /// License owning the terminal.
    pub license_id: String,
    /// Terminal that pushed it.
    pub terminal_id: String,
    /// The event.
    pub event: Event,
}

/// Where the gateway's frames for one agent go: its WebSocket, or the queue
/// of its long-poll session (`crate::poll`), which the agent drains with its
/// exchanges.
pub(crate) enum Outbound {
    /// A WebSocket connection (`GET /agent/v1`).
    WebSocket(actix_ws::Session),
    /// A long-poll session (`POST /agent/v1/poll/open`).
    Poll(Arc<crate::poll::Queue>),
}

impl Outbound {
    /// Sends (WebSocket) or queues (poll) a frame; `false` when the
    /// connection is gone and the frame will never reach the agent.
    pub async fn send(&self, frame: &GatewayFrame) -> bool {
        match self {
            Self::WebSocket(session) => session.clone().text(frame.to_json()).await.is_ok(),
            Self::Poll(queue) => queue.push(frame),
        }
    }

    /// Takes back a request the agent has not received yet (poll sessions;
    /// a WebSocket frame, once written, cannot be recalled). Whether it was.
    pub fn withdraw(&self, request_id: &str) -> bool {
        match self {
            Self::WebSocket(_) => false,
            Self::Poll(queue) => queue.withdraw(request_id),
        }
    }

    /// The transport's name, for logs.
    pub fn transport(&self) -> &'static str {
        match self {
            Self::WebSocket(_) => "websocket",
            Self::Poll(_) => "poll",
        }
    }
}

/// One live agent connection.
pub(crate) struct Conn {
    pub conn_id: u64,
    pub license_id: String,
    pub terminal_id: String,
    pub terminal: TerminalIdentity,
    pub account: AccountIdentity,
    pub permissions: Mutex<Permissions>,
    pub connected_since: i64,
    pub last_seen: AtomicI64,
    /// When the agent's last `ping` was answered (ms since the epoch; 0:
    /// never). While the agent pings, the gateway's `pong`s are its sign of
    /// life and the gateway sends no pings of its own (`agent::serve`).
    pub pinged: AtomicI64,
    /// Where requests for the agent go.
    pub outbound: Outbound,
    pub pending: Mutex<HashMap<String, oneshot::Sender<Response>>>,
    /// Last quote pushed per symbol, with when it arrived.
    pub quotes: Mutex<HashMap<String, (Tick, Instant)>>,
    /// Notified to make the connection task close this connection.
    pub kill: Notify,
    /// Record id of the terminal key the agent authenticated with.
    pub key_id: String,
    /// Set (before `kill` is notified) when that key was revoked.
    pub key_revoked: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("conn_id", &self.conn_id)
            .field("terminal_id", &self.terminal_id)
            .field("transport", &self.outbound.transport())
            .finish()
    }
}

impl Conn {
    /// Records a quote pushed by the agent.
    pub fn remember_quote(&self, tick: &Tick) {
        let Ok(mut q) = self.quotes.lock() else { return };
        let full = q.len() >= MAX_CACHED_SYMBOLS;
        match q.get_mut(tick.symbol.as_str()) {
            // Never replace a newer quote by an older one.
            Some((old, at)) if old.time <= tick.time => {
                *old = tick.clone();
                *at = Instant::now();
            }
            Some(_) => {}
            None if !full => {
                q.insert(tick.symbol.clone(), (tick.clone(), Instant::now()));
            }
            None => {}
        }
    }

    /// The last pushed quote of `symbol`, if it arrived within `max_age`.
    pub fn fresh_quote(&self, symbol: &str, max_age: Duration) -> Option<Tick> {
        if max_age.is_zero() {
            return None;
        }
        let q = self.quotes.lock().ok()?;
        let (tick, at) = q.get(symbol)?;
        (at.elapsed() < max_age).then(|| tick.clone())
    }

    /// Delivers a response to the waiting dispatcher, if any.
    pub fn complete(&self, response: Response) -> bool {
        let waiter = self.pending.lock().map(|mut p| p.remove(&response.id)).ok().flatten();
        match waiter {
            Some(tx) => tx.send(response).is_ok(),
            None => false,
        }
    }

    /// Why `kill` was notified.
    pub fn kill_reason(&self) -> &'static str {
        if self.key_revoked.load(std::sync::atomic::Ordering::Relaxed) {
            "terminal key revoked or rotated"
        } else {
            "replaced by a newer connection"
        }
    }

    /// The terminal's status from this live connection, under `name`.
    pub fn status(&self, name: String) -> TerminalStatus {
        TerminalStatus {
            id: self.terminal_id.clone(),
            name,
            connected: true,
            bound: true,
            platform: Some(self.terminal.platform),
            build: Some(self.terminal.build),
            account_login: Some(self.account.login),
            account_server: Some(self.account.server.clone()),
            account_currency: Some(self.account.currency.clone()),
            trade_mode: Some(self.account.trade_mode),
            permissions: self.permissions.lock().map(|p| *p).unwrap_or_default(),
            last_seen: Some(self.last_seen.load(Ordering::Relaxed)),
            connected_since: Some(self.connected_since),
        }
    }

    /// Whether a command sent to the agent still awaits its answer.
    pub fn has_pending(&self) -> bool {
        self.pending.lock().map(|p| !p.is_empty()).unwrap_or(false)
    }

    /// Drops every waiting dispatcher (they see the terminal as unreachable).
    pub fn fail_all(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
    }
}

/// Registry of live connections, by terminal id.
#[derive(Debug)]
pub(crate) struct Registry {
    conns: RwLock<HashMap<String, Arc<Conn>>>,
    next_id: AtomicU64,
    events: broadcast::Sender<TerminalEvent>,
    /// Long-poll sessions by id (live ones, and ended ones for a while).
    pub polls: crate::poll::Sessions,
}

impl Registry {
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(4096);
        Self {
            conns: RwLock::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            events,
            polls: crate::poll::Sessions::default(),
        }
    }

    pub fn next_conn_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn get(&self, terminal_id: &str) -> Option<Arc<Conn>> {
        self.conns.read().ok().and_then(|m| m.get(terminal_id).cloned())
    }

    /// Every live connection.
    pub fn all(&self) -> Vec<Arc<Conn>> {
        self.conns
            .read()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Number of live connections.
    pub fn len(&self) -> usize {
        self.conns.read().map(|m| m.len()).unwrap_or(0)
    }

    /// Registers a connection, returning the one it replaces (if any).
    pub fn insert(&self, conn: Arc<Conn>) -> Option<Arc<Conn>> {
        crate::telemetry::agent_connected(&conn);
        let replaced = self
            .conns
            .write()
            .ok()
            .and_then(|mut m| m.insert(conn.terminal_id.clone(), conn));
        replaced.inspect(|old| crate::telemetry::agent_gone(old))
    }

    /// Removes the connection if it is still the registered one; whether it was.
    pub fn remove(&self, terminal_id: &str, conn_id: u64) -> bool {
        if let Ok(mut m) = self.conns.write()
            && m.get(terminal_id).is_some_and(|c| c.conn_id == conn_id)
            && let Some(gone) = m.remove(terminal_id)
        {
            crate::telemetry::agent_gone(&gone);
            return true;
        }
        false
    }

    /// Disconnects the terminal's agent if it authenticated with one of
    /// these (now revoked) keys. Whether one was connected.
    pub fn drop_revoked(&self, terminal_id: &str, key_ids: &[String]) -> bool {
        match self.get(terminal_id) {
            Some(conn) if key_ids.contains(&conn.key_id) => {
                conn.key_revoked.store(true, std::sync::atomic::Ordering::Relaxed);
                conn.kill.notify_one();
                true
            }
            _ => false,
        }
    }

    pub fn publish(&self, event: TerminalEvent) {
        // No subscriber is fine.
        let _ = self.events.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<TerminalEvent> {
        self.events.subscribe()
    }
}

#[async_trait]
impl Dispatch for Gateway {
    async fn execute(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        self.execute_here_or_relay(license_id, terminal_id, command, timeout, true)
            .await
    }

    async fn terminals(&self, license_id: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        let stored = self
            .inner
            .store
            .list_terminals(license_id)
            .await
            .map_err(|e| DispatchError::Gateway(format!("store: {e}")))?;
        let mut list: Vec<TerminalStatus> = stored
            .into_iter()
            .map(|t| {
                let live = self.inner.registry.get(&t.id).filter(|c| c.license_id == license_id);
                match live {
                    Some(c) => c.status(t.name),
                    None => stored_status(t),
                }
            })
            .collect();
        crate::cluster::merge(self, license_id, &mut list).await;
        Ok(list)
    }
}

/// The status of a terminal no agent is connected for, from the store.
fn stored_status(t: tradeterm_store::Terminal) -> TerminalStatus {
    let info = t.info.as_ref();
    TerminalStatus {
        id: t.id.clone(),
        name: t.name.clone(),
        connected: false,
        bound: t.fingerprint.is_some(),
        platform: info.and_then(|i| match i.platform.as_str() {
            "MT4" => Some(tradeterm_protocol::agent::Platform::MT4),
            "MT5" => Some(tradeterm_protocol::agent::Platform::MT5),
            _ => None,
        }),
        build: info.map(|i| i.build),
        account_login: info.map(|i| i.account_login),
        account_server: info.map(|i| i.account_server.clone()),
        account_currency: info.map(|i| i.account_currency.clone()),
        trade_mode: info.and_then(|i| match i.trade_mode.as_str() {
            "demo" => Some(tradeterm_core::TradeMode::Demo),
            "real" => Some(tradeterm_core::TradeMode::Real),
            "contest" => Some(tradeterm_core::TradeMode::Contest),
            _ => None,
        }),
        permissions: Permissions::default(),
        last_seen: t.last_seen,
        connected_since: None,
    }
}

impl Gateway {
    /// Runs `command` on the terminal's agent if it is connected here;
    /// otherwise, when `relay` is allowed and the route table names another
    /// instance, on that instance; otherwise answers from the store (not
    /// found, or not connected). Timed and counted
    /// (`crate::telemetry::metered`).
    pub(crate) async fn execute_here_or_relay(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
        relay: bool,
    ) -> Result<CommandResult, DispatchError> {
        crate::telemetry::metered(terminal_id, command, |command| {
            self.execute_unmetered(license_id, terminal_id, command, timeout, relay)
        })
        .await
    }

    /// [`Gateway::execute_here_or_relay`] without its metrics.
    async fn execute_unmetered(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
        relay: bool,
    ) -> Result<CommandResult, DispatchError> {
        let timeout = timeout.min(MAX_TIMEOUT);
        let Some(conn) = self
            .inner
            .registry
            .get(terminal_id)
            .filter(|c| c.license_id == license_id)
        else {
            if relay && let Some(holder) = crate::cluster::holder(self, license_id, terminal_id).await {
                return holder.execute(license_id, terminal_id, command, timeout).await;
            }
            return match self.inner.store.terminal(license_id, terminal_id).await {
                Ok(Some(_)) => Err(DispatchError::Unreachable),
                Ok(None) => Err(DispatchError::NotFound),
                Err(e) => Err(DispatchError::Gateway(format!("store: {e}"))),
            };
        };
        // The hottest read: answer from the quotes the agent pushes when fresh.
        if let Command::Tick { symbol } = &command
            && let Some(tick) = conn.fresh_quote(symbol, self.inner.settings.quote_cache)
        {
            return Ok(CommandResult::Tick(tick));
        }
        // Fail closed: the gateway also refuses trade commands when it knows
        // trading is switched off on the terminal side.
        if command.is_trade() {
            let perms = conn.permissions.lock().map(|p| *p).unwrap_or_default();
            if !perms.trading_enabled() {
                return Err(DispatchError::CommandFailed(ErrorBody::new(
                    codes::TRADING_DISABLED,
                    "live trading is disabled on the terminal (the allow-trading input, the automated-trading switch, or the broker's trading permission for the account or for experts is off)",
                )));
            }
        }
        // Carries the request id of the HTTP request that asked (docs/observability.md).
        let id = tradeterm_telemetry::request_id::command_id();
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = conn.pending.lock() {
            p.insert(id.clone(), tx);
        }
        let cmd_name = command.name();
        let probe = crate::executions::Probe::start(license_id, terminal_id, &command, &conn);
        let frame = GatewayFrame::Request {
            id: id.clone(),
            timeout_ms: timeout.as_millis() as u64,
            command,
        };
        if !conn.outbound.send(&frame).await {
            conn.pending.lock().map(|mut p| p.remove(&id)).ok();
            return Err(DispatchError::Unreachable);
        }
        let result = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Response {
                result: Some(result),
                error: None,
                ..
            })) => Ok(result),
            Ok(Ok(Response { error: Some(error), .. })) => Err(DispatchError::CommandFailed(error)),
            Ok(Ok(_)) => Err(DispatchError::CommandFailed(ErrorBody::new(
                codes::MALFORMED_FRAME,
                "agent response had neither result nor error",
            ))),
            Ok(Err(_)) => Err(DispatchError::Unreachable),
            Err(_) => {
                conn.pending.lock().map(|mut p| p.remove(&id)).ok();
                let withdrawn = conn.outbound.withdraw(&id);
                tracing::warn!(terminal = %terminal_id, cmd = cmd_name, ?timeout, withdrawn, "dispatch timed out");
                Err(DispatchError::Timeout(timeout))
            }
        };
        if let Some(probe) = probe {
            probe.finish(&self.inner.store, &result);
        }
        result
    }
}
