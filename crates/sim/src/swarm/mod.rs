//! Lightweight agents: many terminal connections in one process, for
//! measuring what one gateway holds (`tradeterm-sim swarm`,
//! `cargo xtask bench scale`, `docs/performance.md`, "Capacity").
//!
//! Each light agent speaks the real agent protocol v1 over WebSocket exactly
//! as [`spawn_agent`](crate::spawn_agent) does — `hello` with its terminal key
//! and installation uid, `welcome`, pings every `heartbeat_interval_ms`,
//! gateway pings answered, silence past `heartbeat_timeout_ms` ends the
//! connection, reconnection with backoff — but has no market and no broker:
//! every command gets a fixed, cheap answer ([`answer`]). One task per
//! agent, no writer task and no channel, and a small WebSocket read buffer,
//! so that ten thousand agents fit in one process.
//!
//! The time an agent spends on a request (from the request frame read off
//! the socket to its response written) is recorded, so that a load generator
//! ([`load`]) can report what the gateway and the API add on top of the
//! terminal's own answer time.

pub mod load;
pub mod provision;

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tradeterm_core::{AccountInfo, Tick, TradeMode};
use tradeterm_protocol::agent::{
    AccountIdentity, AgentFrame, AgentInfo, Command, CommandResult, ErrorBody, GatewayFrame, Hello, PROTOCOL_VERSION,
    Permissions, Platform, Response, TerminalIdentity, codes,
};

use crate::agent::stopped;

/// Name light agents report in `hello`.
pub const SWARM_AGENT_NAME: &str = "tradeterm-sim-swarm";

/// Bid of every quote a light agent answers.
pub const SWARM_BID: f64 = 1.08412;
/// Ask of every quote a light agent answers.
pub const SWARM_ASK: f64 = 1.08418;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const WELCOME_TIMEOUT: Duration = Duration::from_secs(10);
/// WebSocket read buffer of one light agent (tungstenite's default, 128 KiB,
/// would be 1.3 GB for ten thousand agents). Frames larger than this are
/// still read, in several chunks.
const READ_BUFFER: usize = 4 * 1024;

/// The credentials of one light agent.
#[derive(Clone)]
pub struct SwarmKey {
    /// The terminal key (a secret: never logged).
    pub terminal_key: String,
    /// The installation uid presented in `hello` (the key is bound to it).
    pub uid: String,
}

impl fmt::Debug for SwarmKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SwarmKey")
            .field("terminal_key", &"<redacted>")
            .field("uid", &self.uid)
            .finish()
    }
}

/// Settings of a swarm.
#[derive(Debug, Clone)]
pub struct SwarmSettings {
    /// The gateway's WebSocket agent endpoint, `ws://HOST:PORT/agent/v1`.
    pub url: String,
    /// One agent per key.
    pub keys: Vec<SwarmKey>,
    /// Agents started per second (the ramp): each connection costs the
    /// gateway a key lookup and two writes in its store.
    pub connects_per_sec: f64,
}

/// What the agents of a swarm share with its handle.
#[derive(Debug)]
struct Shared {
    connected: AtomicUsize,
    /// Connections ever welcomed (reconnections included).
    welcomed: AtomicU64,
    /// Connections that ended after their welcome.
    lost: AtomicU64,
    /// Handshakes the gateway refused or that failed before `welcome`.
    failed: AtomicU64,
    /// Requests answered.
    answered: AtomicU64,
    /// Terminal id of each agent's last `welcome`, by agent index.
    terminal_ids: Mutex<Vec<Option<String>>>,
    /// Answer times in microseconds while recording is on.
    answer_us: Mutex<Vec<u32>>,
    recording: std::sync::atomic::AtomicBool,
}

/// Counters of a swarm at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwarmStatus {
    /// Agents connected and welcomed now.
    pub connected: usize,
    /// Connections ever welcomed.
    pub welcomed: u64,
    /// Welcomed connections that ended.
    pub lost: u64,
    /// Connection attempts that failed before `welcome`.
    pub failed: u64,
    /// Requests answered.
    pub answered: u64,
}

/// Handle to a running swarm. Dropping it stops the agents; prefer
/// [`Swarm::shutdown`], which closes every connection and waits.
#[derive(Debug)]
pub struct Swarm {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    size: usize,
}

impl Swarm {
    /// Number of agents (keys).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Counters now.
    pub fn status(&self) -> SwarmStatus {
        let s = &self.shared;
        SwarmStatus {
            connected: s.connected.load(Ordering::SeqCst),
            welcomed: s.welcomed.load(Ordering::SeqCst),
            lost: s.lost.load(Ordering::SeqCst),
            failed: s.failed.load(Ordering::SeqCst),
            answered: s.answered.load(Ordering::SeqCst),
        }
    }

    /// Terminal ids of the agents welcomed so far, in agent order.
    pub fn terminal_ids(&self) -> Vec<String> {
        lock(&self.shared.terminal_ids).iter().flatten().cloned().collect()
    }

    /// Starts recording answer times (clearing earlier ones).
    pub fn start_recording(&self) {
        lock(&self.shared.answer_us).clear();
        self.shared.recording.store(true, Ordering::SeqCst);
    }

    /// Stops recording and returns the answer times recorded, in microseconds.
    pub fn take_recording(&self) -> Vec<u32> {
        self.shared.recording.store(false, Ordering::SeqCst);
        std::mem::take(&mut *lock(&self.shared.answer_us))
    }

    /// Closes every connection and waits for the agents to stop.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts a swarm on the current tokio runtime: agent `i` starts
/// `i / connects_per_sec` seconds after the first.
pub fn spawn_swarm(settings: SwarmSettings) -> Swarm {
    let size = settings.keys.len();
    let shared = Arc::new(Shared {
        connected: AtomicUsize::new(0),
        welcomed: AtomicU64::new(0),
        lost: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        answered: AtomicU64::new(0),
        terminal_ids: Mutex::new(vec![None; size]),
        answer_us: Mutex::new(Vec::new()),
        recording: std::sync::atomic::AtomicBool::new(false),
    });
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(ramp(settings, shared.clone(), stop_rx));
    Swarm {
        shared,
        stop,
        task,
        size,
    }
}

/// Starts the agents at the ramp's pace, then waits for all of them.
async fn ramp(settings: SwarmSettings, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let rate = if settings.connects_per_sec.is_finite() && settings.connects_per_sec > 0.0 {
        settings.connects_per_sec
    } else {
        f64::MAX
    };
    let url: Arc<str> = settings.url.into();
    let start = tokio::time::Instant::now();
    let mut agents = tokio::task::JoinSet::new();
    for (index, key) in settings.keys.into_iter().enumerate() {
        let at = start + Duration::from_secs_f64(index as f64 / rate);
        tokio::select! {
            _ = tokio::time::sleep_until(at) => {}
            _ = stopped(&mut stop) => break,
        }
        agents.spawn(run_agent(index, key, url.clone(), shared.clone(), stop.clone()));
    }
    while agents.join_next().await.is_some() {}
}

/// How one connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Shutdown,
    Lost { welcomed: bool },
}

/// One light agent: connects, serves, reconnects after a pause, until stopped.
async fn run_agent(index: usize, key: SwarmKey, url: Arc<str>, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut failures = 0u32;
    loop {
        let end = session(index, &key, &url, &shared, &mut stop).await;
        match end {
            End::Shutdown => return,
            End::Lost { welcomed: true } => {
                shared.lost.fetch_add(1, Ordering::SeqCst);
                failures = 0;
            }
            End::Lost { welcomed: false } => {
                shared.failed.fetch_add(1, Ordering::SeqCst);
            }
        }
        // 100 ms doubling to 10 s, spread by the agent's index.
        let base = (100u64 << failures.min(7)).min(10_000);
        let delay = Duration::from_millis(base / 2 + (index as u64 * 7919) % (base / 2).max(1));
        failures = failures.saturating_add(1);
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stopped(&mut stop) => return,
        }
    }
}

/// The `hello` of light agent `index`.
pub fn hello(index: usize, key: &SwarmKey) -> Hello {
    Hello {
        protocol_version: PROTOCOL_VERSION,
        terminal_key: key.terminal_key.clone(),
        terminal: TerminalIdentity {
            uid: key.uid.clone(),
            platform: Platform::MT5,
            build: 4620,
        },
        account: AccountIdentity {
            login: 8_000_000 + index as u64,
            server: "TradeTerm-Swarm".into(),
            company: "tradeterm light agents".into(),
            currency: "USD".into(),
            leverage: 100,
            trade_mode: TradeMode::Demo,
        },
        permissions: Permissions {
            allow_trading: false,
            automated_trading: true,
        },
        agent: AgentInfo {
            name: SWARM_AGENT_NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
    }
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn text(frame: &AgentFrame) -> Message {
    Message::text(frame.to_json())
}

/// The fixed answer of a light agent to `command`: a quote of
/// [`SWARM_BID`]/[`SWARM_ASK`] stamped now for `tick`, a flat 10 000 USD
/// account, no positions, orders or history, one symbol (`EURUSD`); trade
/// commands are refused (`TRADING_DISABLED`, the agent's allow-trading input
/// is off) and the rest are `NOT_SUPPORTED`.
pub fn answer(index: usize, command: Command) -> Result<CommandResult, ErrorBody> {
    match command {
        Command::Tick { symbol } => Ok(CommandResult::Tick(Tick {
            symbol,
            bid: SWARM_BID,
            ask: SWARM_ASK,
            time: wall_ms(),
        })),
        Command::AccountInfo => Ok(CommandResult::AccountInfo(AccountInfo {
            login: 8_000_000 + index as u64,
            name: format!("Swarm Trader {}", index + 1),
            server: "TradeTerm-Swarm".into(),
            company: "tradeterm light agents".into(),
            currency: "USD".into(),
            leverage: 100,
            trade_mode: TradeMode::Demo,
            balance: 10_000.0,
            equity: 10_000.0,
            margin: 0.0,
            free_margin: 10_000.0,
            margin_level: None,
            profit: 0.0,
        })),
        Command::Positions { .. } => Ok(CommandResult::Positions { positions: Vec::new() }),
        Command::Orders { .. } => Ok(CommandResult::Orders { orders: Vec::new() }),
        Command::HistoryDeals { .. } => Ok(CommandResult::Deals { deals: Vec::new() }),
        Command::HistoryOrders { .. } => Ok(CommandResult::HistoryOrders { orders: Vec::new() }),
        Command::Symbols => Ok(CommandResult::Symbols {
            symbols: vec!["EURUSD".into()],
        }),
        c if c.is_trade() || matches!(c, Command::ReversePosition { .. }) => Err(ErrorBody::new(
            codes::TRADING_DISABLED,
            "a light agent never trades (allow-trading is off)",
        )),
        c => Err(ErrorBody::new(
            codes::NOT_SUPPORTED,
            format!("a light agent does not answer `{}`", c.name()),
        )),
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_frame_size(Some(tradeterm_protocol::agent::MAX_FRAME_BYTES))
        .max_message_size(Some(tradeterm_protocol::agent::MAX_FRAME_BYTES))
}

/// Heartbeat settings from `welcome`.
struct Beat {
    interval: Duration,
    timeout: Duration,
}

async fn session(index: usize, key: &SwarmKey, url: &str, shared: &Shared, stop: &mut watch::Receiver<bool>) -> End {
    let connect = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio_tungstenite::connect_async_with_config(url, Some(ws_config()), true),
    );
    let mut ws = tokio::select! {
        r = connect => match r {
            Ok(Ok((ws, _))) => ws,
            Ok(Err(e)) => {
                tracing::debug!(index, error = %e, "gateway not reachable");
                return End::Lost { welcomed: false };
            }
            Err(_) => return End::Lost { welcomed: false },
        },
        _ = stopped(stop) => return End::Shutdown,
    };
    let hello = AgentFrame::Hello(Box::new(hello(index, key)));
    if ws.send(text(&hello)).await.is_err() {
        return End::Lost { welcomed: false };
    }
    let beat = match await_welcome(index, &mut ws, shared, stop).await {
        Ok(beat) => beat,
        Err(end) => return end,
    };
    shared.welcomed.fetch_add(1, Ordering::SeqCst);
    shared.connected.fetch_add(1, Ordering::SeqCst);
    let end = serve(index, &mut ws, shared, stop, &beat).await;
    shared.connected.fetch_sub(1, Ordering::SeqCst);
    if end == End::Shutdown {
        let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
    }
    end
}

async fn await_welcome(
    index: usize,
    ws: &mut Ws,
    shared: &Shared,
    stop: &mut watch::Receiver<bool>,
) -> Result<Beat, End> {
    let deadline = tokio::time::sleep(WELCOME_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        let msg = tokio::select! {
            _ = &mut deadline => return Err(End::Lost { welcomed: false }),
            _ = stopped(stop) => return Err(End::Shutdown),
            msg = ws.next() => msg,
        };
        let t = match msg {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Err(End::Lost { welcomed: false }),
            Some(Ok(_)) => continue,
        };
        match GatewayFrame::parse(t.as_str()) {
            Ok(GatewayFrame::Welcome {
                terminal_id,
                heartbeat_interval_ms,
                heartbeat_timeout_ms,
                ..
            }) => {
                if let Some(slot) = lock(&shared.terminal_ids).get_mut(index) {
                    *slot = Some(terminal_id);
                }
                return Ok(Beat {
                    interval: Duration::from_millis(heartbeat_interval_ms.max(100)),
                    timeout: Duration::from_millis(heartbeat_timeout_ms.max(heartbeat_interval_ms).max(500)),
                });
            }
            Ok(GatewayFrame::Error { error, .. }) => {
                tracing::warn!(index, code = %error.code, message = %error.message, "the gateway refused a light agent");
                return Err(End::Lost { welcomed: false });
            }
            Ok(GatewayFrame::Ping { ts }) => {
                if ws.send(text(&AgentFrame::Pong { ts })).await.is_err() {
                    return Err(End::Lost { welcomed: false });
                }
            }
            Ok(_) | Err(_) => {}
        }
    }
}

async fn serve(index: usize, ws: &mut Ws, shared: &Shared, stop: &mut watch::Receiver<bool>, beat: &Beat) -> End {
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + beat.interval, beat.interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    loop {
        tokio::select! {
            _ = stopped(stop) => return End::Shutdown,
            msg = ws.next() => {
                let received = Instant::now();
                last_heard = received;
                let t = match msg {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return End::Lost { welcomed: true },
                    Some(Ok(_)) => continue,
                };
                let reply = match GatewayFrame::parse(t.as_str()) {
                    Ok(GatewayFrame::Request { id, command, .. }) => {
                        let response = match answer(index, command) {
                            Ok(result) => Response::ok(id, result),
                            Err(error) => Response::err(id, error),
                        };
                        if ws.send(text(&AgentFrame::Response(response))).await.is_err() {
                            return End::Lost { welcomed: true };
                        }
                        // Recorded before it is counted: once `answered`
                        // shows an answer, its time is in the recording.
                        if shared.recording.load(Ordering::Relaxed) {
                            let us = received.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                            lock(&shared.answer_us).push(us);
                        }
                        shared.answered.fetch_add(1, Ordering::SeqCst);
                        None
                    }
                    Ok(GatewayFrame::Ping { ts }) => Some(AgentFrame::Pong { ts }),
                    Ok(_) => None,
                    Err(e) => {
                        tracing::debug!(index, error = %e, "malformed frame from the gateway ignored");
                        None
                    }
                };
                if let Some(frame) = reply
                    && ws.send(text(&frame)).await.is_err()
                {
                    return End::Lost { welcomed: true };
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > beat.timeout {
                    tracing::debug!(index, "the gateway went silent");
                    return End::Lost { welcomed: true };
                }
                if ws.send(text(&AgentFrame::Ping { ts: wall_ms() })).await.is_err() {
                    return End::Lost { welcomed: true };
                }
            }
        }
    }
}

/// Percentile `p` (0–100) of sorted microsecond samples, nearest rank.
pub fn percentile(sorted: &[u32], p: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[7], 99.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn answers_are_fixed_and_trades_refused() {
        match answer(
            3,
            Command::Tick {
                symbol: "GBPUSD".into(),
            },
        ) {
            Ok(CommandResult::Tick(t)) => {
                assert_eq!(t.symbol, "GBPUSD");
                assert_eq!((t.bid, t.ask), (SWARM_BID, SWARM_ASK));
            }
            other => panic!("{other:?}"),
        }
        match answer(3, Command::AccountInfo) {
            Ok(CommandResult::AccountInfo(a)) => assert_eq!(a.login, 8_000_003),
            other => panic!("{other:?}"),
        }
        let e = answer(0, Command::CancelOrder { ticket: 1 }).unwrap_err();
        assert_eq!(e.code, codes::TRADING_DISABLED);
        let e = answer(
            0,
            Command::SymbolSpec {
                symbol: "EURUSD".into(),
            },
        )
        .unwrap_err();
        assert_eq!(e.code, codes::NOT_SUPPORTED);
    }

    #[test]
    fn keys_are_redacted() {
        let k = SwarmKey {
            terminal_key: "tt_term_secret".into(),
            uid: "u1".into(),
        };
        assert!(!format!("{k:?}").contains("secret"));
    }
}
