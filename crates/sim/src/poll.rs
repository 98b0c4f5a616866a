//! The agent's HTTP long-poll transport (`docs/agent-protocol.md`, "HTTP
//! long-poll binding"), chosen by an `http://` or `https://` gateway URL.
//!
//! The session behaves as the WebSocket one does (same request handling,
//! events, heartbeats and reconnection in `agent.rs`): a pump task turns the
//! agent's outbox into batches and the gateway's replies into incoming
//! frames. Outgoing frames go out at once in a batch that is not held
//! (`wait_ms` 0; everything ready is sent together); with nothing to send,
//! an empty batch is held by the gateway until it has a frame (a new
//! exchange makes the gateway answer the held one at once). A batch whose
//! reply is lost is sent again with the same `seq` and frames, so the
//! gateway processes it once; gateway frames are taken only when their `seq`
//! is above the highest seen, so a re-sent request is never executed twice.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures_util::Stream;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tradeterm_protocol::poll::{POLL_WAIT_MAX_MS, PollBatch, PollClient, PollError, PollReply, PollWelcome};

use crate::Simulator;
use crate::agent::{AgentSettings, End, OUTBOX, Shared, Welcome, serve, stopped};

/// Largest batch body the agent builds (below the gateway's 16 MiB limit);
/// a single larger frame is still sent alone.
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Pause between retries of an exchange that got no answer.
const RETRY_PAUSE: Duration = Duration::from_millis(250);
/// Time limit of closing a session at shutdown.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How the agent reaches the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// WebSocket, `ws(s)://HOST:PORT/agent/v1` (the default).
    #[default]
    WebSocket,
    /// The HTTP long-poll binding, `http(s)://HOST:PORT`.
    Poll,
}

impl Transport {
    /// The transport a gateway URL names: `http://` and `https://` are the
    /// long-poll binding, anything else WebSocket.
    pub fn of_url(url: &str) -> Self {
        let lower = url.trim_start().to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            Self::Poll
        } else {
            Self::WebSocket
        }
    }

    /// `url` rewritten for this transport: the scheme (`ws` ↔ `http`, `wss`
    /// ↔ `https`) and, for WebSocket, the `/agent/v1` path when none is
    /// given. So `ws://h:8081/agent/v1` becomes `http://h:8081/agent/v1`
    /// for poll (the client strips the path) and `http://h:8081` becomes
    /// `ws://h:8081/agent/v1` for WebSocket.
    pub fn url(self, url: &str) -> String {
        let url = url.trim();
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let secure = matches!(scheme.to_ascii_lowercase().as_str(), "https" | "wss");
        match self {
            Self::Poll => format!("{}://{rest}", if secure { "https" } else { "http" }),
            Self::WebSocket => {
                let rest = rest.trim_end_matches('/');
                let rest = rest.strip_suffix("/poll").unwrap_or(rest);
                let path = if rest.contains('/') { "" } else { "/agent/v1" };
                format!("{}://{rest}{path}", if secure { "wss" } else { "ws" })
            }
        }
    }
}

impl FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "ws" | "wss" | "websocket" => Ok(Self::WebSocket),
            "poll" | "http" | "long-poll" => Ok(Self::Poll),
            _ => Err(format!("unknown transport `{s}` (ws or poll)")),
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::WebSocket => "ws",
            Self::Poll => "poll",
        })
    }
}

impl AgentSettings {
    /// The transport of [`AgentSettings::url`], see [`Transport::of_url`].
    pub fn transport(&self) -> Transport {
        Transport::of_url(&self.url)
    }
}

/// The HTTP client: the system's roots plus the CA file's certificates.
fn http_client(settings: &AgentSettings) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(2);
    if let Some(path) = &settings.ca_file {
        let certs = crate::tls::read_ca_file(path).map_err(|e| e.to_string())?;
        let certs = certs
            .iter()
            .map(|der| reqwest::Certificate::from_der(der.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("CA file {}: {e}", path.display()))?;
        builder = builder.tls_certs_merge(certs);
    }
    builder.build().map_err(|e| e.to_string())
}

/// One long-poll session: open, serve until it ends, close at shutdown.
pub(crate) async fn session(
    sim: &Simulator,
    settings: &AgentSettings,
    shared: &Shared,
    stop: &mut watch::Receiver<bool>,
) -> End {
    let client = match http_client(settings) {
        Ok(http) => PollClient::new(http, &settings.url),
        Err(e) => {
            tracing::warn!(url = %settings.url, error = %e, "cannot set up HTTP for the gateway");
            return End::Lost { welcomed: false };
        }
    };
    let hello = sim.hello(&settings.terminal_key, &settings.uid);
    let opened = tokio::select! {
        r = client.open(&hello) => r,
        _ = stopped(stop) => return End::Shutdown,
    };
    let opened = match opened {
        Ok(w) => w,
        Err(PollError::Transport(e)) => {
            tracing::debug!(url = %client.base_url(), error = %e, "gateway not reachable");
            return End::Lost { welcomed: false };
        }
        Err(e) => {
            tracing::warn!(error = %e, "the gateway refused the connection");
            return End::Lost { welcomed: false };
        }
    };
    let w = welcome(&opened);
    *shared.terminal_id.lock().unwrap_or_else(|e| e.into_inner()) = Some(w.terminal_id.clone());
    shared.connected.store(true, Ordering::SeqCst);
    tracing::info!(terminal_id = %w.terminal_id, login = sim.settings().login, transport = "poll", "connected to the gateway");

    let (tx, outbox) = mpsc::channel::<Message>(OUTBOX);
    let (inbox_tx, inbox) = mpsc::channel::<Result<Message, WsError>>(OUTBOX);
    let wait_ms = opened.poll_wait_max_ms.clamp(1, POLL_WAIT_MAX_MS);
    let pump = tokio::spawn(pump(
        client.clone(),
        opened.session.clone(),
        outbox,
        inbox_tx,
        w.timeout,
        wait_ms,
    ));
    let mut incoming = Box::pin(received(inbox));
    let end = serve(sim, &mut incoming, &tx, stop, &w).await;
    shared.connected.store(false, Ordering::SeqCst);
    pump.abort();
    match end {
        End::Shutdown => {
            if let Ok(Err(e)) = tokio::time::timeout(CLOSE_TIMEOUT, client.close(&opened.session)).await {
                tracing::debug!(error = %e, "closing the poll session failed");
            }
        }
        End::Lost { .. } => tracing::warn!(login = sim.settings().login, "connection to the gateway lost"),
    }
    end
}

fn welcome(w: &PollWelcome) -> Welcome {
    Welcome {
        terminal_id: w.terminal_id.clone(),
        interval: Duration::from_millis(w.heartbeat_interval_ms.max(100)),
        timeout: Duration::from_millis(w.heartbeat_timeout_ms.max(w.heartbeat_interval_ms).max(500)),
    }
}

/// The frames the pump received, as the stream of WebSocket messages the
/// agent's serve loop reads.
fn received(inbox: mpsc::Receiver<Result<Message, WsError>>) -> impl Stream<Item = Result<Message, WsError>> {
    futures_util::stream::unfold(inbox, |mut inbox| async move { inbox.recv().await.map(|m| (m, inbox)) })
}

/// Frames waiting to be sent, as JSON values with their size.
#[derive(Default)]
struct Outgoing {
    frames: VecDeque<(Value, usize)>,
}

impl Outgoing {
    fn push(&mut self, message: Message) {
        let Message::Text(text) = message else { return };
        match serde_json::from_str::<Value>(text.as_str()) {
            Ok(v) => self.frames.push_back((v, text.len())),
            Err(e) => tracing::warn!(error = %e, "unserialisable outgoing frame dropped"),
        }
    }

    /// Takes everything queued on `outbox` now. `false` once it is closed.
    fn collect(&mut self, outbox: &mut mpsc::Receiver<Message>) -> bool {
        loop {
            match outbox.try_recv() {
                Ok(m) => self.push(m),
                Err(mpsc::error::TryRecvError::Empty) => return true,
                Err(mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// The next batch's frames: as many as fit in [`MAX_BATCH_BYTES`], at
    /// least one.
    fn take(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut bytes = 0;
        while let Some((_, len)) = self.frames.front() {
            if !out.is_empty() && bytes + len > MAX_BATCH_BYTES {
                break;
            }
            bytes += len;
            if let Some((v, _)) = self.frames.pop_front() {
                out.push(v);
            }
        }
        out
    }
}

/// A held exchange running on its own task (so that its HTTP request goes on
/// while the pump sends other batches); aborted when dropped.
struct HeldExchange(tokio::task::JoinHandle<Result<PollReply, PollError>>);

impl Drop for HeldExchange {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The pump's side of the sequence numbers, and where new frames go.
struct Cursor {
    /// `seq` of the last batch built.
    seq: u64,
    /// Highest gateway-frame `seq` passed on.
    ack: u64,
    inbox: mpsc::Sender<Result<Message, WsError>>,
    last_answer: Instant,
}

impl Cursor {
    fn batch(&mut self, frames: Vec<Value>, wait_ms: u64) -> PollBatch {
        self.seq += 1;
        PollBatch {
            seq: self.seq,
            ack: self.ack,
            wait_ms,
            frames,
        }
    }

    /// Passes on the reply's frames not seen before. `false` once the serve
    /// loop is gone.
    async fn accept(&mut self, reply: PollReply) -> bool {
        self.last_answer = Instant::now();
        // Any answer is a sign of life for the serve loop.
        if self.inbox.send(Ok(Message::Pong(Default::default()))).await.is_err() {
            return false;
        }
        for frame in reply.frames {
            let Some(seq) = frame.get("seq").and_then(Value::as_u64) else {
                tracing::warn!("gateway frame without seq ignored");
                continue;
            };
            if seq <= self.ack {
                continue;
            }
            self.ack = seq;
            if self.inbox.send(Ok(Message::text(frame.to_string()))).await.is_err() {
                return false;
            }
        }
        true
    }

    /// After a failed exchange: whether to go on (the gateway has not been
    /// silent for longer than `timeout`), after a short pause.
    async fn failed(&self, error: &PollError, timeout: Duration) -> bool {
        if error.session_lost() {
            tracing::warn!(error = %error, "the gateway ended the poll session");
            return false;
        }
        if self.last_answer.elapsed() > timeout {
            tracing::warn!(
                silent_ms = self.last_answer.elapsed().as_millis() as u64,
                error = %error,
                "the gateway went silent"
            );
            return false;
        }
        tokio::time::sleep(RETRY_PAUSE).await;
        true
    }
}

/// Sends the outbox in batches and passes the gateway's new frames on, until
/// the session is lost (the inbox then closes) or the agent stops.
///
/// With nothing to send, one empty batch is held by the gateway on its own
/// task. Frames to send go out at once in a new exchange (not held), which
/// also makes the gateway answer the held one; the pump then holds again.
async fn pump(
    client: PollClient,
    session: String,
    mut outbox: mpsc::Receiver<Message>,
    inbox: mpsc::Sender<Result<Message, WsError>>,
    timeout: Duration,
    wait_ms: u64,
) {
    let mut outgoing = Outgoing::default();
    let mut cursor = Cursor {
        seq: 0,
        ack: 0,
        inbox,
        last_answer: Instant::now(),
    };
    let mut retry: Option<PollBatch> = None;
    let mut held: Option<HeldExchange> = None;
    loop {
        if !outgoing.collect(&mut outbox) {
            return;
        }
        if retry.is_some() || !outgoing.frames.is_empty() {
            let batch = match retry.take() {
                Some(batch) => batch,
                None => {
                    let frames = outgoing.take();
                    cursor.batch(frames, 0)
                }
            };
            match client.exchange(&session, &batch).await {
                Ok(reply) => {
                    if !cursor.accept(reply).await {
                        return;
                    }
                }
                Err(e) => {
                    if let PollError::Transport(_) = e {
                        // The gateway may have processed it: same seq, same frames.
                        retry = Some(batch);
                    } else if !e.session_lost() {
                        tracing::warn!(error = %e, "exchange refused; its frames are dropped");
                    }
                    if !cursor.failed(&e, timeout).await {
                        return;
                    }
                }
            }
            continue;
        }
        let exchange = held.get_or_insert_with(|| {
            let batch = cursor.batch(Vec::new(), wait_ms);
            let client = client.clone();
            let session = session.clone();
            HeldExchange(tokio::spawn(async move { client.exchange(&session, &batch).await }))
        });
        tokio::select! {
            r = &mut exchange.0 => {
                held = None;
                let r = r.unwrap_or_else(|e| Err(PollError::Transport(e.to_string())));
                match r {
                    Ok(reply) => {
                        if !cursor.accept(reply).await {
                            return;
                        }
                    }
                    Err(e) => {
                        if !cursor.failed(&e, timeout).await {
                            return;
                        }
                    }
                }
            }
            m = outbox.recv() => match m {
                Some(m) => outgoing.push(m),
                None => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_scheme_names_the_transport_and_urls_convert() {
        assert_eq!(Transport::of_url("http://127.0.0.1:8081"), Transport::Poll);
        assert_eq!(Transport::of_url("HTTPS://gw.example/agent/v1/poll"), Transport::Poll);
        assert_eq!(Transport::of_url("ws://127.0.0.1:8081/agent/v1"), Transport::WebSocket);
        assert_eq!(Transport::of_url("wss://gw/agent/v1"), Transport::WebSocket);
        assert_eq!(
            Transport::Poll.url("ws://127.0.0.1:8081/agent/v1"),
            "http://127.0.0.1:8081/agent/v1"
        );
        assert_eq!(Transport::Poll.url("wss://gw:443/agent/v1"), "https://gw:443/agent/v1");
        assert_eq!(Transport::Poll.url("http://gw:1"), "http://gw:1");
        assert_eq!(Transport::WebSocket.url("http://gw:1"), "ws://gw:1/agent/v1");
        assert_eq!(
            Transport::WebSocket.url("https://gw:1/agent/v1/poll"),
            "wss://gw:1/agent/v1"
        );
        assert_eq!(Transport::WebSocket.url("ws://gw:1/agent/v1"), "ws://gw:1/agent/v1");
        assert_eq!("poll".parse::<Transport>(), Ok(Transport::Poll));
        assert_eq!("WS".parse::<Transport>(), Ok(Transport::WebSocket));
        assert!("carrier-pigeon".parse::<Transport>().is_err());
        assert_eq!(Transport::Poll.to_string(), "poll");
    }

    #[test]
    fn batches_stay_under_the_size_limit_but_take_at_least_one_frame() {
        let mut out = Outgoing::default();
        let big = "x".repeat(MAX_BATCH_BYTES / 2);
        for i in 0..3 {
            out.push(Message::text(format!(r#"{{"type":"event","n":{i},"pad":"{big}"}}"#)));
        }
        out.push(Message::text("not json"));
        out.push(Message::Ping(Default::default()));
        assert_eq!(out.frames.len(), 3, "only text frames that parse are kept");
        assert_eq!(out.take().len(), 1, "two halves plus overhead exceed the limit");
        assert_eq!(out.take().len(), 1);
        assert_eq!(out.take().len(), 1);
        assert!(out.take().is_empty());
        let huge = "y".repeat(MAX_BATCH_BYTES + 10);
        out.push(Message::text(format!(r#"{{"pad":"{huge}"}}"#)));
        assert_eq!(out.take().len(), 1, "an oversized frame still goes alone");
    }
}
