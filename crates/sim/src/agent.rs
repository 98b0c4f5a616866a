//! The agent: connects a [`Simulator`] to the gateway's WebSocket endpoint
//! (or, for an `http(s)://` URL, through the HTTP long-poll binding:
//! `crate::poll`, which feeds the same serve loop) and speaks agent protocol
//! v1.
//!
//! One connection at a time: `hello` → `welcome`, then requests are answered
//! concurrently (each on its own task, the broker work on the blocking pool),
//! pings go out every `heartbeat_interval_ms`, gateway pings are answered,
//! ticks are pushed at most once per symbol per 250 ms (and an unchanged
//! quote again every 500 ms, as a refresh), trade transactions
//! and account snapshots as they happen. A dropped connection, a silent
//! gateway or a refused handshake leads to a reconnection after an
//! exponential backoff (100 ms doubling to 10 s, with seeded jitter). Frames
//! the agent cannot parse are logged and ignored; a request whose command is
//! unknown or malformed is answered with an error so the gateway need not
//! wait for its timeout.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tradeterm_protocol::agent::{AgentFrame, ErrorBody, Event, GatewayFrame, PROTOCOL_VERSION, Response, codes};

use crate::Simulator;
use crate::rng::{Rng, hash};

/// Where and as whom the agent connects.
#[derive(Clone)]
pub struct AgentSettings {
    /// The gateway's agent endpoint, e.g. `ws://127.0.0.1:8081/agent/v1`;
    /// an `http(s)://HOST:PORT` URL selects the HTTP long-poll binding
    /// instead ([`crate::Transport`]).
    pub url: String,
    /// The terminal key (a secret: never logged).
    pub terminal_key: String,
    /// Stable identifier of this terminal installation.
    pub uid: String,
    /// Extra trusted certificates (PEM) for a `wss://` gateway with a
    /// self-signed or private-CA certificate, on top of the system's roots.
    pub ca_file: Option<std::path::PathBuf>,
}

impl fmt::Debug for AgentSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSettings")
            .field("url", &self.url)
            .field("terminal_key", &"<redacted>")
            .field("uid", &self.uid)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

/// Handle to a running agent. Dropping it stops the agent as well; prefer
/// [`AgentHandle::shutdown`], which also waits for it to finish.
#[derive(Debug)]
pub struct AgentHandle {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) connected: AtomicBool,
    pub(crate) terminal_id: Mutex<Option<String>>,
}

impl AgentHandle {
    /// Whether the agent is connected and welcomed by the gateway now.
    pub fn is_connected(&self) -> bool {
        self.shared.connected.load(Ordering::SeqCst)
    }

    /// The terminal id of the last `welcome`.
    pub fn terminal_id(&self) -> Option<String> {
        self.shared
            .terminal_id
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Closes the connection and waits for the agent to stop.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Starts the agent on the current tokio runtime.
pub fn spawn_agent(sim: Simulator, agent: AgentSettings) -> AgentHandle {
    let shared = Arc::new(Shared::default());
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(run(sim, agent, shared.clone(), stop_rx));
    AgentHandle { shared, stop, task }
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const WELCOME_TIMEOUT: Duration = Duration::from_secs(10);
const EVENT_POLL: Duration = Duration::from_millis(100);
const TICK_THROTTLE: Duration = Duration::from_millis(250);
/// A symbol's unchanged quote is pushed again after this long, so that the
/// gateway knows the quote it holds is still current (docs/agent-protocol.md).
const TICK_REFRESH: Duration = Duration::from_millis(500);
const BACKOFF_MIN_MS: u64 = 100;
const BACKOFF_MAX_MS: u64 = 10_000;
pub(crate) const OUTBOX: usize = 1024;

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Shutdown,
    Lost { welcomed: bool },
}

/// Delay before reconnection attempt number `failures` (0-based): 100 ms
/// doubling up to 10 s, each delay drawn in [d/2, d) for jitter.
fn backoff(failures: u32, rng: &mut Rng) -> Duration {
    let d = BACKOFF_MIN_MS
        .saturating_mul(1u64 << failures.min(10))
        .min(BACKOFF_MAX_MS);
    Duration::from_millis(d / 2 + (rng.f64() * (d / 2) as f64) as u64)
}

/// Resolves once shutdown is asked for (or the handle is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        if stop.changed().await.is_err() {
            return;
        }
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

async fn run(sim: Simulator, settings: AgentSettings, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut rng = Rng::new(hash(&[sim.settings().seed, 0x0BAC_00FF]));
    let mut failures = 0u32;
    loop {
        let end = match settings.transport() {
            crate::Transport::WebSocket => session(&sim, &settings, &shared, &mut stop).await,
            crate::Transport::Poll => crate::poll::session(&sim, &settings, &shared, &mut stop).await,
        };
        shared.connected.store(false, Ordering::SeqCst);
        match end {
            End::Shutdown => break,
            End::Lost { welcomed: true } => failures = 0,
            End::Lost { welcomed: false } => {}
        }
        let delay = backoff(failures, &mut rng);
        failures = failures.saturating_add(1);
        if failures == 3 || failures.is_multiple_of(50) {
            tracing::info!(url = %settings.url, attempts = failures, "still trying to reach the gateway");
        }
        tracing::debug!(
            delay_ms = delay.as_millis() as u64,
            "reconnecting to the gateway after a pause"
        );
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stopped(&mut stop) => break,
        }
    }
    tracing::info!(login = sim.settings().login, "simulated terminal agent stopped");
}

pub(crate) struct Welcome {
    pub(crate) terminal_id: String,
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
}

type WsStream = futures_util::stream::SplitStream<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
>;

async fn session(sim: &Simulator, settings: &AgentSettings, shared: &Shared, stop: &mut watch::Receiver<bool>) -> End {
    let connector = match crate::tls::connector_for(&settings.url, settings.ca_file.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(url = %settings.url, error = %e, "cannot set up TLS for the gateway");
            return End::Lost { welcomed: false };
        }
    };
    let connect = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio_tungstenite::connect_async_tls_with_config(settings.url.as_str(), None, false, connector),
    );
    let ws = tokio::select! {
        r = connect => match r {
            Ok(Ok((ws, _))) => ws,
            Ok(Err(e)) => {
                tracing::debug!(url = %settings.url, error = %e, "gateway not reachable");
                return End::Lost { welcomed: false };
            }
            Err(_) => {
                tracing::debug!(url = %settings.url, "connecting to the gateway timed out");
                return End::Lost { welcomed: false };
            }
        },
        _ = stopped(stop) => return End::Shutdown,
    };
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::channel::<Message>(OUTBOX);
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            let close = matches!(m, Message::Close(_));
            if sink.send(m).await.is_err() || close {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let hello = AgentFrame::Hello(Box::new(sim.hello(&settings.terminal_key, &settings.uid)));
    let end = match tx.send(text(&hello)).await {
        Err(_) => End::Lost { welcomed: false },
        Ok(()) => match await_welcome(&mut stream, &tx, stop).await {
            Err(end) => end,
            Ok(w) => {
                *shared.terminal_id.lock().unwrap_or_else(|e| e.into_inner()) = Some(w.terminal_id.clone());
                shared.connected.store(true, Ordering::SeqCst);
                tracing::info!(terminal_id = %w.terminal_id, login = sim.settings().login, "connected to the gateway");
                serve(sim, &mut stream, &tx, stop, &w).await
            }
        },
    };
    shared.connected.store(false, Ordering::SeqCst);
    if end == End::Shutdown {
        let _ = tx.send(Message::Close(None)).await;
    }
    drop(tx);
    if tokio::time::timeout(Duration::from_secs(1), writer).await.is_err() {
        tracing::debug!("writer did not finish in time");
    }
    if let End::Lost { welcomed: true } = end {
        tracing::warn!(login = sim.settings().login, "connection to the gateway lost");
    }
    end
}

async fn await_welcome(
    stream: &mut WsStream,
    tx: &mpsc::Sender<Message>,
    stop: &mut watch::Receiver<bool>,
) -> Result<Welcome, End> {
    let deadline = tokio::time::sleep(WELCOME_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        let msg = tokio::select! {
            _ = &mut deadline => {
                tracing::warn!("no welcome from the gateway in time");
                return Err(End::Lost { welcomed: false });
            }
            _ = stopped(stop) => return Err(End::Shutdown),
            msg = stream.next() => msg,
        };
        let text = match msg {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Err(End::Lost { welcomed: false }),
            Some(Ok(_)) => continue,
        };
        match GatewayFrame::parse(text.as_str()) {
            Ok(GatewayFrame::Welcome {
                protocol_version,
                terminal_id,
                heartbeat_interval_ms,
                heartbeat_timeout_ms,
            }) => {
                if protocol_version != PROTOCOL_VERSION {
                    tracing::warn!(protocol_version, "gateway speaks another protocol version");
                }
                let interval = Duration::from_millis(heartbeat_interval_ms.max(100));
                let timeout = Duration::from_millis(heartbeat_timeout_ms.max(heartbeat_interval_ms).max(500));
                return Ok(Welcome {
                    terminal_id,
                    interval,
                    timeout,
                });
            }
            Ok(GatewayFrame::Error { error, .. }) => {
                tracing::warn!(code = %error.code, message = %error.message, "the gateway refused the connection");
                return Err(End::Lost { welcomed: false });
            }
            Ok(GatewayFrame::Ping { ts }) => {
                let _ = tx.send(text_frame(AgentFrame::Pong { ts })).await;
            }
            Ok(other) => tracing::debug!(frame = ?other, "frame before welcome ignored"),
            Err(e) => tracing::warn!(error = %e, "malformed frame from the gateway ignored"),
        }
    }
}

fn text_frame(f: AgentFrame) -> Message {
    text(&f)
}

pub(crate) async fn serve<S>(
    sim: &Simulator,
    stream: &mut S,
    tx: &mpsc::Sender<Message>,
    stop: &mut watch::Receiver<bool>,
    w: &Welcome,
) -> End
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    // Events from before this connection are stale: the gateway re-reads state.
    let stale = {
        let sim = sim.clone();
        tokio::task::spawn_blocking(move || (sim.drain_events().len(), sim.account_info())).await
    };
    if let Ok((dropped, account)) = stale {
        if dropped > 0 {
            tracing::debug!(dropped, "events from before the connection dropped");
        }
        let _ = tx
            .send(text_frame(AgentFrame::Event {
                event: Event::Account(account),
            }))
            .await;
    }
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + w.interval, w.interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut poll = tokio::time::interval(EVENT_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    let mut sent_ticks: HashMap<String, (Instant, i64)> = HashMap::new();
    loop {
        tokio::select! {
            _ = stopped(stop) => return End::Shutdown,
            msg = stream.next() => {
                match msg {
                    Some(Ok(Message::Text(t))) => {
                        last_heard = Instant::now();
                        on_text(sim, tx, t.as_str()).await;
                    }
                    Some(Ok(Message::Binary(_))) => {
                        last_heard = Instant::now();
                        tracing::warn!("binary frame from the gateway ignored");
                    }
                    Some(Ok(Message::Close(_))) | None => return End::Lost { welcomed: true },
                    Some(Err(e)) => {
                        tracing::debug!(error = %e, "websocket error");
                        return End::Lost { welcomed: true };
                    }
                    Some(Ok(_)) => last_heard = Instant::now(),
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > w.timeout {
                    tracing::warn!(silent_ms = last_heard.elapsed().as_millis() as u64, "the gateway went silent");
                    return End::Lost { welcomed: true };
                }
                if tx.send(text_frame(AgentFrame::Ping { ts: wall_ms() })).await.is_err() {
                    return End::Lost { welcomed: true };
                }
            }
            _ = poll.tick() => {
                let sim = sim.clone();
                let Ok((events, ticks)) =
                    tokio::task::spawn_blocking(move || (sim.drain_events(), sim.latest_ticks())).await
                else {
                    continue;
                };
                for event in events {
                    if tx.send(text_frame(AgentFrame::Event { event })).await.is_err() {
                        return End::Lost { welcomed: true };
                    }
                }
                for tick in ticks {
                    let due = sent_ticks
                        .get(&tick.symbol)
                        .is_none_or(|(at, time)| tick_due(at.elapsed(), *time != tick.time));
                    if due {
                        sent_ticks.insert(tick.symbol.clone(), (Instant::now(), tick.time));
                        // Ticks are droppable when the outbox is full.
                        let _ = tx.try_send(text_frame(AgentFrame::Event { event: Event::Tick(tick) }));
                    }
                }
            }
        }
    }
}

/// Whether a symbol's quote is pushed now, `since` the last push: a new
/// quote once the throttle has passed, an unchanged one as a refresh.
fn tick_due(since: Duration, changed: bool) -> bool {
    if changed {
        since >= TICK_THROTTLE
    } else {
        since >= TICK_REFRESH
    }
}

/// Handles one text frame from the gateway.
async fn on_text(sim: &Simulator, tx: &mpsc::Sender<Message>, text: &str) {
    match GatewayFrame::parse(text) {
        Ok(GatewayFrame::Request {
            id,
            timeout_ms: _,
            command,
        }) => {
            let sim = sim.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let name = command.name();
                let started = Instant::now();
                let outcome = tokio::task::spawn_blocking(move || sim.execute(command)).await;
                let response = match outcome {
                    Ok(Ok(result)) => Response::ok(id, result),
                    Ok(Err(error)) => Response::err(id, error),
                    Err(e) => {
                        tracing::error!(command = name, error = %e, "command handler failed");
                        Response::err(
                            id,
                            ErrorBody::new(codes::INTERNAL, "the simulator failed to run the command"),
                        )
                    }
                };
                tracing::debug!(
                    // The gateway's request id: the HTTP request id that asked, then 16 hex digits.
                    request = %response.id,
                    command = name,
                    ms = started.elapsed().as_millis() as u64,
                    ok = response.error.is_none(),
                    "request answered"
                );
                let _ = tx.send(text_frame(AgentFrame::Response(response))).await;
            });
        }
        Ok(GatewayFrame::Ping { ts }) => {
            let _ = tx.send(text_frame(AgentFrame::Pong { ts })).await;
        }
        Ok(GatewayFrame::Pong { .. }) => {}
        Ok(GatewayFrame::Error { id, error }) => {
            tracing::warn!(id = ?id, code = %error.code, message = %error.message, "error frame from the gateway");
        }
        Ok(GatewayFrame::Welcome { .. }) => tracing::debug!("repeated welcome ignored"),
        Err(e) => {
            // A request we cannot decode still deserves an answer.
            if let Some((id, error)) = undecodable_request(text, &e.to_string()) {
                let _ = tx
                    .send(text_frame(AgentFrame::Response(Response::err(id, error))))
                    .await;
            }
            tracing::warn!(error = %e, "malformed frame from the gateway ignored");
        }
    }
}

/// For a frame that looks like a request but does not decode: its id and the
/// error to answer with (`UNKNOWN_COMMAND` for an unknown `cmd`).
fn undecodable_request(text: &str, why: &str) -> Option<(String, ErrorBody)> {
    const KNOWN: &[&str] = &[
        "account_info",
        "positions",
        "orders",
        "history_deals",
        "history_orders",
        "symbols",
        "symbol_spec",
        "tick",
        "bars",
        "ticks",
        "order_check",
        "place_order",
        "close_position",
        "modify_position",
        "cancel_order",
        "reverse_position",
        "calendar",
        "modify_order",
        "close_by",
        "market_book_add",
        "market_book_get",
        "market_book_release",
    ];
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    if v.get("type")?.as_str()? != "request" {
        return None;
    }
    let id = v.get("id")?.as_str()?.to_owned();
    let cmd = v.get("command").and_then(|c| c.get("cmd")).and_then(|c| c.as_str());
    let error = match cmd {
        Some(c) if !KNOWN.contains(&c) => ErrorBody::new(
            codes::UNKNOWN_COMMAND,
            format!("unknown command `{}`", c.chars().take(64).collect::<String>()),
        ),
        _ => ErrorBody::new(codes::INVALID_ARGUMENT, format!("malformed command: {why}")),
    };
    Some((id, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_throttled_when_they_change_and_refreshed_when_they_do_not() {
        let ms = Duration::from_millis;
        assert!(!tick_due(ms(100), true), "changes wait for the throttle");
        assert!(tick_due(ms(250), true));
        assert!(
            !tick_due(ms(250), false),
            "an unchanged quote is not re-sent at the throttle"
        );
        assert!(!tick_due(ms(499), false));
        assert!(tick_due(ms(500), false), "an unchanged quote is refreshed");
        // The refresh comes well within the gateway's default quote age (1 s).
        assert!(TICK_REFRESH + EVENT_POLL < Duration::from_secs(1));
    }

    #[test]
    fn backoff_doubles_to_ten_seconds_with_jitter() {
        let mut rng = Rng::new(1);
        let d0 = backoff(0, &mut rng).as_millis();
        assert!((50..100).contains(&d0), "{d0}");
        let d3 = backoff(3, &mut rng).as_millis();
        assert!((400..800).contains(&d3), "{d3}");
        for f in [7, 8, 20, u32::MAX] {
            let d = backoff(f, &mut rng).as_millis();
            assert!((5_000..10_000).contains(&d), "{f}: {d}");
        }
    }

    #[test]
    fn undecodable_requests_are_answered() {
        let (id, e) = undecodable_request(
            r#"{"type":"request","id":"r9","timeout_ms":5,"command":{"cmd":"fly"}}"#,
            "x",
        )
        .unwrap();
        assert_eq!(id, "r9");
        assert_eq!(e.code, codes::UNKNOWN_COMMAND);
        let (_, e) = undecodable_request(
            r#"{"type":"request","id":"r9","timeout_ms":5,"command":{"cmd":"tick"}}"#,
            "x",
        )
        .unwrap();
        assert_eq!(e.code, codes::INVALID_ARGUMENT);
        assert!(undecodable_request("garbage", "x").is_none());
        assert!(undecodable_request(r#"{"type":"ping"}"#, "x").is_none());
    }

    #[test]
    fn settings_debug_hides_the_key() {
        let s = AgentSettings {
            url: "ws://x".into(),
            terminal_key: "tk_secret".into(),
            uid: "u".into(),
            ca_file: None,
        };
        assert!(!format!("{s:?}").contains("tk_secret"));
    }
}
