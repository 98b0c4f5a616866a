//! The HTTP long-poll binding of agent protocol v1, for agents that only have
//! plain HTTP (MQL's `WebRequest`): the same frames as the WebSocket
//! endpoint, carried by `POST /agent/v1/poll/open` (the `hello`),
//! `POST /agent/v1/poll` (exchanges) and `POST /agent/v1/poll/close`.
//! `docs/agent-protocol.md`, "HTTP long-poll binding", is the specification;
//! `tradeterm_protocol::poll` holds the wire types.
//!
//! A session is a live connection like a WebSocket one ([`Outbound::Poll`]):
//! the same handshake checks ([`agent::admit`]), registration replacing the
//! terminal's previous connection ([`agent::register`]), frame handling
//! ([`agent::handle_frame`]), and the same end: a supervisor task per session
//! ends it on heartbeat silence, key revocation (at once through
//! `drop_revoked`, or at the periodic key check), replacement, or close.
//!
//! **Invariants.** Gateway frames get per-session sequence numbers and stay
//! queued (re-sent in every reply) until the agent acknowledges them; an
//! agent batch is processed only if its `seq` is above the last processed
//! one, so a replayed batch never completes a request or publishes an event
//! twice. Only the newest exchange of a session is held. Nothing an agent
//! sends makes the gateway panic; bodies above 16 MiB are refused unread.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use actix_web::http::header::CACHE_CONTROL;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use rand::Rng;
use serde_json::Value;
use tokio::sync::Notify;
use tradeterm_protocol::agent::{AgentFrame, FrameError, GatewayFrame, PROTOCOL_VERSION, codes};
use tradeterm_protocol::poll::{
    CLOSE_PATH, EXCHANGE_PATH, MAX_BODY_BYTES, MAX_SESSION_CHARS, OPEN_PATH, POLL_WAIT_MAX_MS, PollBatch, PollReply,
    PollWelcome, SESSION_EXPIRED, SESSION_HEADER, parse_agent_frame, with_seq,
};

use crate::Gateway;
use crate::agent::{self, KEY_REVOKED, Refusal, now_ms};
use crate::registry::{Conn, Outbound};

/// Most gateway frames queued (unacknowledged) for one session; past it,
/// dispatches to the terminal fail as unreachable instead of piling up.
const MAX_QUEUED: usize = 10_000;

/// Shortest time an ended session is remembered, so that its agent's next
/// exchange learns why (401 for a revoked key rather than 404).
const MIN_TOMBSTONE: Duration = Duration::from_secs(10);

/// Registers the binding's routes.
pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(OPEN_PATH, web::post().to(open))
        .route(EXCHANGE_PATH, web::post().to(exchange))
        .route(CLOSE_PATH, web::post().to(close));
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// No exchange for the heartbeat timeout.
    Expired,
    /// A newer connection of the terminal (either transport) replaced it.
    Replaced,
    /// The terminal key was revoked or rotated.
    Revoked,
    /// The agent closed it.
    Closed,
    /// The gateway is shutting down.
    ShuttingDown,
}

impl Ended {
    fn reason(self) -> &'static str {
        match self {
            Self::Expired => "heartbeat timeout",
            Self::Replaced => "replaced by a newer connection",
            Self::Revoked => "terminal key revoked or rotated",
            Self::Closed => "agent closed the session",
            Self::ShuttingDown => "gateway shutting down",
        }
    }

    /// The answer to an exchange on the ended session.
    fn reply(self) -> HttpResponse {
        match self {
            Self::Revoked => error_reply(StatusCode::UNAUTHORIZED, codes::AUTH_FAILED, KEY_REVOKED),
            Self::ShuttingDown => error_reply(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::SHUTTING_DOWN,
                agent::SHUTTING_DOWN,
            ),
            other => error_reply(
                StatusCode::NOT_FOUND,
                SESSION_EXPIRED,
                format!("the session has ended ({}); open a new one", other.reason()),
            ),
        }
    }
}

/// The gateway's side of one session: frames waiting for the agent, and the
/// sequence numbers of both directions.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    state: Mutex<QueueState>,
    /// Notified when a frame is queued, an exchange starts, or the session ends.
    changed: Notify,
}

/// One frame waiting for the agent's acknowledgement.
#[derive(Debug)]
struct Queued {
    seq: u64,
    /// The frame as sent, with its `seq`.
    frame: Value,
    /// Id of the request it carries, if it is a request.
    request_id: Option<String>,
    /// Whether an exchange's reply has carried it (the agent may have it).
    delivered: bool,
}

#[derive(Debug, Default)]
struct QueueState {
    /// `seq` of the last frame queued (0: none yet).
    last_seq: u64,
    /// Unacknowledged frames, oldest first, as sent (with their `seq`).
    frames: VecDeque<Queued>,
    /// `seq` of the last agent batch processed.
    last_batch: u64,
    /// Number of the newest exchange; an older held one returns at once.
    exchange: u64,
    /// Exchanges in progress (a held exchange is a sign of life).
    held: usize,
    ended: Option<Ended>,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a frame for the agent under the next `seq`; `false` when the
    /// session has ended or its agent stopped draining it.
    pub fn push(&self, frame: &GatewayFrame) -> bool {
        {
            let mut st = self.lock();
            if st.ended.is_some() || st.frames.len() >= MAX_QUEUED {
                return false;
            }
            st.last_seq += 1;
            let seq = st.last_seq;
            let request_id = match frame {
                GatewayFrame::Request { id, .. } => Some(id.clone()),
                _ => None,
            };
            st.frames.push_back(Queued {
                seq,
                frame: with_seq(frame, seq),
                request_id,
                delivered: false,
            });
        }
        self.changed.notify_waiters();
        true
    }

    /// Starts an exchange carrying batch `seq` and acknowledging `ack`:
    /// forgets the acknowledged frames and makes any older held exchange
    /// return. Whether the batch's frames are to be processed (its `seq` is
    /// new), and the exchange's number.
    fn begin(&self, seq: u64, ack: u64) -> Result<(bool, u64), Ended> {
        let started = {
            let mut st = self.lock();
            if let Some(ended) = st.ended {
                return Err(ended);
            }
            let fresh = seq > st.last_batch;
            if fresh {
                st.last_batch = seq;
            }
            // An ack of frames never sent acknowledges only those that were.
            let ack = ack.min(st.last_seq);
            while st.frames.front().is_some_and(|q| q.seq <= ack) {
                st.frames.pop_front();
            }
            st.exchange += 1;
            st.held += 1;
            (fresh, st.exchange)
        };
        self.changed.notify_waiters();
        Ok(started)
    }

    /// Waits until frames are queued (returns all unacknowledged ones), a
    /// newer exchange starts or `wait` passes (returns none), or the session
    /// ends.
    async fn wait(&self, exchange: u64, wait: Duration) -> Result<Vec<Value>, Ended> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                if let Some(ended) = st.ended {
                    return Err(ended);
                }
                if st.exchange != exchange {
                    return Ok(Vec::new());
                }
                if !st.frames.is_empty() {
                    return Ok(st
                        .frames
                        .iter_mut()
                        .map(|q| {
                            q.delivered = true;
                            q.frame.clone()
                        })
                        .collect());
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Ok(Vec::new());
            }
        }
    }

    /// Takes back the request `id` if no reply has carried it yet, so that a
    /// request whose caller was already told `TERMINAL_TIMEOUT` can never be
    /// executed later by a slowly polling agent. The gap it leaves in the
    /// seqs is harmless: agents only compare a frame's seq with the highest
    /// they processed. Whether it was taken back (`false`: the agent may
    /// have it, or it was acknowledged).
    pub fn withdraw(&self, id: &str) -> bool {
        let mut st = self.lock();
        let Some(at) = st
            .frames
            .iter()
            .position(|q| !q.delivered && q.request_id.as_deref() == Some(id))
        else {
            return false;
        };
        st.frames.remove(at);
        true
    }

    fn last_batch(&self) -> u64 {
        self.lock().last_batch
    }

    fn ended(&self) -> Option<Ended> {
        self.lock().ended
    }

    fn is_held(&self) -> bool {
        self.lock().held > 0
    }

    /// Ends the session (the first reason sticks) and drops its frames.
    /// Whether this call ended it.
    fn end(&self, why: Ended) -> bool {
        let first = {
            let mut st = self.lock();
            let first = st.ended.is_none();
            if first {
                st.ended = Some(why);
            }
            st.frames.clear();
            first
        };
        self.changed.notify_waiters();
        first
    }
}

/// Counts an exchange as in progress until dropped (also when the request
/// is abandoned mid-hold).
struct Held<'a>(&'a Queue);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.held = st.held.saturating_sub(1);
    }
}

/// One long-poll session.
struct PollSession {
    /// The session id (a secret: never logged).
    id: String,
    conn: Arc<Conn>,
    queue: Arc<Queue>,
    /// Notified by close, to end the supervisor.
    closed: Notify,
}

/// The sessions of this gateway by id: live ones, and ended ones until
/// their tombstone time passes.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<PollSession>>>,
}

impl fmt::Debug for Sessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.map.lock().map(|m| m.len()).unwrap_or_default();
        f.debug_struct("Sessions").field("count", &n).finish()
    }
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<PollSession>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, id: &str) -> Option<Arc<PollSession>> {
        self.lock().get(id).cloned()
    }

    fn insert(&self, session: Arc<PollSession>) {
        self.lock().insert(session.id.clone(), session);
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// A fresh session id: 128 random bits from the thread's CSPRNG, as hex.
fn new_session_id() -> String {
    format!("{:032x}", rand::rng().random::<u128>())
}

/// Longest hold of an exchange: 25 s, or the heartbeat timeout if shorter.
fn wait_max(gateway: &Gateway) -> Duration {
    Duration::from_millis(POLL_WAIT_MAX_MS).min(gateway.settings().heartbeat_timeout)
}

fn json_reply(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((CACHE_CONTROL, "no-store"))
        .content_type("application/json")
        .body(body)
}

/// A failure answer: `{ "type": "error", "code", "message" }`.
fn error_reply(status: StatusCode, code: &str, message: impl Into<String>) -> HttpResponse {
    json_reply(status, GatewayFrame::error(None, code, message).to_json())
}

fn refused(refusal: Refusal) -> HttpResponse {
    let status = match refusal.code {
        codes::AUTH_FAILED => StatusCode::UNAUTHORIZED,
        codes::RATE_LIMITED => StatusCode::TOO_MANY_REQUESTS,
        codes::INTERNAL | codes::SHUTTING_DOWN => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    };
    let mut reply = error_reply(status, refusal.code, refusal.message);
    if let Some(secs) = refusal.retry_after
        && let Ok(value) = actix_web::http::header::HeaderValue::from_str(&secs.to_string())
    {
        reply.headers_mut().insert(actix_web::http::header::RETRY_AFTER, value);
    }
    reply
}

/// Reads a request body of at most 16 MiB.
async fn read_body(req: &HttpRequest, mut payload: web::Payload) -> Result<Vec<u8>, HttpResponse> {
    let too_large = || {
        error_reply(
            StatusCode::BAD_REQUEST,
            codes::MALFORMED_FRAME,
            format!("request body larger than {MAX_BODY_BYTES} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(too_large());
    }
    let mut body = Vec::with_capacity(declared.unwrap_or(0).min(64 * 1024));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            error_reply(
                StatusCode::BAD_REQUEST,
                codes::MALFORMED_FRAME,
                format!("could not read the request body: {e}"),
            )
        })?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The session named by `X-Agent-Session`, if known (live or ended).
fn session_of(req: &HttpRequest, gateway: &Gateway) -> Option<Arc<PollSession>> {
    let id = req.headers().get(SESSION_HEADER)?.to_str().ok()?.trim();
    if id.is_empty() || id.len() > MAX_SESSION_CHARS {
        return None;
    }
    gateway.inner.registry.polls.get(id)
}

fn unknown_session() -> HttpResponse {
    error_reply(
        StatusCode::NOT_FOUND,
        SESSION_EXPIRED,
        "unknown or ended session; open a new one",
    )
}

/// `POST /agent/v1/poll/open`: the `hello` → welcome and session id.
async fn open(req: HttpRequest, payload: web::Payload, gateway: web::Data<Gateway>) -> HttpResponse {
    let gateway = gateway.get_ref();
    let peer = req.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let body = match read_body(&req, payload).await {
        Ok(b) => b,
        Err(reply) => return reply,
    };
    let parsed = std::str::from_utf8(&body)
        .map_err(|e| FrameError::Malformed(format!("body is not UTF-8: {e}")))
        .and_then(AgentFrame::parse);
    let hello = match parsed {
        Ok(AgentFrame::Hello(hello)) => *hello,
        Ok(_) | Err(FrameError::UnknownType(_)) => {
            tracing::info!(%peer, "poll open without a hello");
            return error_reply(
                StatusCode::BAD_REQUEST,
                codes::PROTOCOL_ERROR,
                "the body of open must be the `hello` frame",
            );
        }
        Err(e) => return error_reply(StatusCode::BAD_REQUEST, e.code(), e.to_string()),
    };
    let source = crate::guess::source(gateway, &req);
    let auth = match agent::admit(gateway, &hello, &peer, source).await {
        Ok(auth) => auth,
        Err(refusal) => {
            tracing::info!(%peer, code = refusal.code, "poll open refused");
            return refused(refusal);
        }
    };
    let queue = Arc::new(Queue::default());
    let conn = agent::register(gateway, &auth, &hello, Outbound::Poll(queue.clone()));
    crate::cluster::announce(gateway, &conn).await;
    let session = Arc::new(PollSession {
        id: new_session_id(),
        conn,
        queue,
        closed: Notify::new(),
    });
    gateway.inner.registry.polls.insert(session.clone());
    tracing::debug!(terminal = %session.conn.terminal_id, %peer, "poll session opened");
    let settings = gateway.settings();
    let welcome = PollWelcome {
        protocol_version: PROTOCOL_VERSION,
        terminal_id: session.conn.terminal_id.clone(),
        heartbeat_interval_ms: settings.heartbeat_interval.as_millis() as u64,
        heartbeat_timeout_ms: settings.heartbeat_timeout.as_millis() as u64,
        session: session.id.clone(),
        poll_wait_max_ms: wait_max(gateway).as_millis() as u64,
    };
    actix_web::rt::spawn(supervise(gateway.clone(), session));
    json_reply(StatusCode::OK, serde_json::to_string(&welcome).unwrap_or_default())
}

/// `POST /agent/v1/poll`: one exchange of frames.
async fn exchange(req: HttpRequest, payload: web::Payload, gateway: web::Data<Gateway>) -> HttpResponse {
    let gateway = gateway.get_ref();
    let Some(session) = session_of(&req, gateway) else {
        return unknown_session();
    };
    if let Some(ended) = session.queue.ended() {
        return ended.reply();
    }
    let conn = &session.conn;
    conn.last_seen.store(now_ms(), Ordering::Relaxed);
    let body = match read_body(&req, payload).await {
        Ok(b) => b,
        Err(reply) => return reply,
    };
    let batch: PollBatch = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                codes::MALFORMED_FRAME,
                format!("invalid batch: {e}"),
            );
        }
    };
    let (fresh, number) = match session.queue.begin(batch.seq, batch.ack) {
        Ok(started) => started,
        Err(ended) => return ended.reply(),
    };
    let _held = Held(&session.queue);
    if fresh {
        for value in &batch.frames {
            if let Some(reply) = agent::handle_frame(gateway, conn, parse_agent_frame(value)) {
                session.queue.push(&reply);
            }
        }
    } else if !batch.frames.is_empty() {
        tracing::debug!(terminal = %conn.terminal_id, seq = batch.seq, "replayed batch not processed again");
    }
    let wait = Duration::from_millis(batch.wait_ms).min(wait_max(gateway));
    let outcome = session.queue.wait(number, wait).await;
    conn.last_seen.store(now_ms(), Ordering::Relaxed);
    match outcome {
        Ok(frames) => {
            let reply = PollReply {
                ack: session.queue.last_batch(),
                frames,
            };
            json_reply(StatusCode::OK, serde_json::to_string(&reply).unwrap_or_default())
        }
        Err(ended) => ended.reply(),
    }
}

/// `POST /agent/v1/poll/close`: ends the session; the terminal is reported
/// disconnected at once.
async fn close(req: HttpRequest, gateway: web::Data<Gateway>) -> HttpResponse {
    let gateway = gateway.get_ref();
    let Some(session) = session_of(&req, gateway) else {
        return unknown_session();
    };
    if session.queue.end(Ended::Closed) {
        gateway
            .inner
            .registry
            .remove(&session.conn.terminal_id, session.conn.conn_id);
        session.conn.fail_all();
        session.closed.notify_one();
    }
    HttpResponse::NoContent()
        .insert_header((CACHE_CONTROL, "no-store"))
        .finish()
}

/// Watches one session like the WebSocket loop watches a connection: ends it
/// after `heartbeat_timeout` without an exchange, when its key is found
/// revoked at the periodic check, when `drop_revoked` or a newer connection
/// kills it, or on close; then reports the terminal disconnected and keeps
/// the ended session for a while so that its agent learns why.
async fn supervise(gateway: Gateway, session: Arc<PollSession>) {
    let settings = gateway.settings().clone();
    let conn = &session.conn;
    let timeout_ms = settings.heartbeat_timeout.as_millis() as i64;
    let mut heartbeat = tokio::time::interval(settings.heartbeat_interval);
    heartbeat.tick().await;
    let mut key_checked = Instant::now();
    let why = loop {
        tokio::select! {
            _ = heartbeat.tick() => {
                if let Some(ended) = session.queue.ended() {
                    break ended;
                }
                let silent = now_ms() - conn.last_seen.load(Ordering::Relaxed);
                if silent > timeout_ms && !session.queue.is_held() {
                    break Ended::Expired;
                }
                if key_checked.elapsed() >= settings.key_recheck {
                    key_checked = Instant::now();
                    if agent::key_revoked(&gateway, conn).await {
                        break Ended::Revoked;
                    }
                }
            }
            _ = conn.kill.notified() => {
                break if conn.key_revoked.load(Ordering::Relaxed) {
                    Ended::Revoked
                } else if gateway.is_draining() {
                    Ended::ShuttingDown
                } else {
                    Ended::Replaced
                };
            }
            _ = session.closed.notified() => break Ended::Closed,
        }
    };
    session.queue.end(why);
    agent::disconnected(&gateway, conn, why.reason()).await;
    if let Ok(mut quotes) = conn.quotes.lock() {
        quotes.clear();
    }
    tokio::time::sleep((settings.heartbeat_timeout * 2).max(MIN_TOMBSTONE)).await;
    gateway.inner.registry.polls.remove(&session.id);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tradeterm_protocol::Command;

    fn request(id: &str) -> GatewayFrame {
        GatewayFrame::Request {
            id: id.into(),
            timeout_ms: 1000,
            command: Command::Symbols,
        }
    }

    fn seqs(frames: &[Value]) -> Vec<u64> {
        frames.iter().filter_map(|f| f["seq"].as_u64()).collect()
    }

    #[tokio::test]
    async fn frames_stay_queued_until_acknowledged_and_batches_are_processed_once() {
        let q = Queue::default();
        assert!(q.push(&request("a")));
        assert!(q.push(&request("b")));
        let (fresh, n) = q.begin(1, 0).unwrap();
        assert!(fresh);
        assert_eq!(seqs(&q.wait(n, Duration::ZERO).await.unwrap()), [1, 2]);
        // The same batch again (its reply was lost): not fresh, frames re-sent.
        let (fresh, n) = q.begin(1, 0).unwrap();
        assert!(!fresh);
        assert_eq!(seqs(&q.wait(n, Duration::ZERO).await.unwrap()), [1, 2]);
        // Acknowledging 1 forgets it; an ack beyond what was sent forgets only what was.
        let (fresh, n) = q.begin(2, 1).unwrap();
        assert!(fresh);
        assert_eq!(seqs(&q.wait(n, Duration::ZERO).await.unwrap()), [2]);
        let (_, n) = q.begin(3, 99).unwrap();
        assert!(q.wait(n, Duration::ZERO).await.unwrap().is_empty());
        assert!(q.push(&request("c")));
        let (_, n) = q.begin(4, 2).unwrap();
        assert_eq!(
            seqs(&q.wait(n, Duration::ZERO).await.unwrap()),
            [3],
            "seqs go on from the last sent"
        );
        assert_eq!(q.last_batch(), 4);
    }

    #[tokio::test]
    async fn a_timed_out_request_is_withdrawn_only_while_no_reply_carried_it() {
        let q = Queue::default();
        assert!(q.push(&request("a")));
        assert!(q.push(&request("b")));
        // Never delivered: taken back, and never sent afterwards.
        assert!(q.withdraw("b"));
        assert!(!q.withdraw("b"), "already gone");
        let (_, n) = q.begin(1, 0).unwrap();
        assert_eq!(seqs(&q.wait(n, Duration::ZERO).await.unwrap()), [1]);
        // Delivered (the agent may be executing it): it stays until acked.
        assert!(!q.withdraw("a"));
        let (_, n) = q.begin(2, 0).unwrap();
        assert_eq!(seqs(&q.wait(n, Duration::ZERO).await.unwrap()), [1]);
        // Later frames go on after the gap.
        assert!(q.push(&request("c")));
        let (_, n) = q.begin(3, 1).unwrap();
        assert_eq!(seqs(&q.wait(n, Duration::ZERO).await.unwrap()), [3]);
    }

    #[tokio::test]
    async fn a_held_exchange_returns_on_a_frame_on_a_newer_exchange_and_on_the_end() {
        let q = Arc::new(Queue::default());
        let (_, n) = q.begin(1, 0).unwrap();
        let held = tokio::spawn({
            let q = q.clone();
            async move { q.wait(n, Duration::from_secs(20)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(q.push(&request("a")));
        let frames = tokio::time::timeout(Duration::from_secs(2), held)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(seqs(&frames), [1]);

        let (_, n) = q.begin(2, 1).unwrap();
        let older = tokio::spawn({
            let q = q.clone();
            async move { q.wait(n, Duration::from_secs(20)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (_, newer) = q.begin(3, 1).unwrap();
        let frames = tokio::time::timeout(Duration::from_secs(2), older)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(frames.is_empty(), "the older exchange returns empty");

        let held = tokio::spawn({
            let q = q.clone();
            async move { q.wait(newer, Duration::from_secs(20)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(q.end(Ended::Revoked));
        assert!(!q.end(Ended::Closed), "the first reason sticks");
        let outcome = tokio::time::timeout(Duration::from_secs(2), held)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(outcome, Err(Ended::Revoked));
        assert!(!q.push(&request("late")), "nothing is queued on an ended session");
        assert_eq!(q.begin(4, 0), Err(Ended::Revoked));
    }

    #[test]
    fn session_ids_are_128_random_bits() {
        let a = new_session_id();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, new_session_id());
    }
}
