//! The client side of a gateway's dispatch channel
//! ([`CHANNEL_PATH`](crate::dispatch::CHANNEL_PATH)).
//!
//! A REST or MCP instance of a scaled-out deployment sends each command to
//! the gateway holding its terminal. One `POST /internal/v1/dispatch` per
//! command costs an HTTP request on both sides (the client's request
//! building, pooling and connection task; the gateway's parsing, routing,
//! middleware and JSON extractor). The channel is a WebSocket per thread and
//! gateway that stays open: a dispatch is one text frame out and one back,
//! numbered so that many can be in flight at once and answered in any order.
//!
//! The channel only ever replaces the HTTP request when it is open. A thread
//! with no open channel to a gateway starts opening one in the background
//! and sends its dispatches over HTTP meanwhile; a failed opening is retried
//! after [`RETRY_AFTER`]. So every way of failing to reach a gateway (refused,
//! not upgraded, plain `https://` address) keeps the HTTP route's errors and
//! semantics, and the channel changes the cost of a dispatch, not its
//! outcome. A channel that closes under a dispatch already sent leaves that
//! dispatch's outcome unknown, exactly like an HTTP connection lost under a
//! request ([`Outcome::Lost`]).
//!
//! Why per thread: each actix worker is a single-threaded runtime. A channel
//! opened by a worker has its reader and writer tasks on that worker, so a
//! dispatch and its reply never wake a second thread (the same reasoning as
//! the per-thread HTTP clients of [`HttpDispatch`](crate::http_client::HttpDispatch)).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::dispatch::{CHANNEL_PATH, ChannelReply, DispatchReply, DispatchRequest, INTERNAL_TOKEN_HEADER};

/// How long a failed opening keeps a thread on HTTP before it tries again.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Longest wait for a channel's WebSocket handshake.
const OPEN_TIMEOUT: Duration = Duration::from_secs(2);

/// Largest reply accepted on a channel: as much as an HTTP reply could carry
/// in practice (bars, history), far beyond what a tool asks for.
const MAX_REPLY_BYTES: usize = 256 * 1024 * 1024;

/// Most channels one process keeps (threads × gateways); past it, new
/// gateways are reached over HTTP.
const MAX_CHANNELS: usize = 4096;

/// What became of a dispatch sent on a channel.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The gateway answered.
    Reply(Box<DispatchReply>),
    /// The channel closed before it could be written: the gateway never saw
    /// it; the caller sends it over HTTP instead.
    Unsent,
    /// The channel closed after the dispatch was handed to it: the gateway
    /// may have run it. Why, for the error.
    Lost(String),
    /// No answer within the wait.
    TimedOut,
}

/// A dispatch as written on the channel (borrowing what the caller built).
#[derive(Serialize)]
struct Outgoing<'a> {
    seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
    dispatch: &'a DispatchRequest,
}

/// One open channel.
#[derive(Debug)]
pub(crate) struct Channel {
    /// Frames for the writer task.
    out: mpsc::UnboundedSender<String>,
    /// Dispatches waiting for their reply, by `seq`.
    pending: Mutex<HashMap<u64, oneshot::Sender<DispatchReply>>>,
    next: AtomicU64,
    /// The connection is up.
    open: AtomicBool,
    /// Takes no new dispatches (one of its dispatches went unanswered: it
    /// may be half open); it closes once the ones it carries are answered.
    retired: AtomicBool,
}

impl Channel {
    /// The connection is gone: marks the channel closed and fails every
    /// dispatch still waiting on it (their senders are dropped:
    /// [`Outcome::Lost`]).
    fn close(&self) {
        self.open.store(false, Ordering::SeqCst);
        let waiting = std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        drop(waiting);
        // Wakes the writer, which then closes the connection.
        let _ = self.out.send(String::new());
    }

    /// Whether a new dispatch may go on this channel.
    fn usable(&self) -> bool {
        self.open.load(Ordering::SeqCst) && !self.retired.load(Ordering::SeqCst) && !self.out.is_closed()
    }

    /// Takes the channel out of use without failing the dispatches it
    /// carries: each still gets its answer or its own timeout, and the
    /// channel closes after the last one.
    fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        self.close_if_done();
    }

    fn close_if_done(&self) {
        if self.retired.load(Ordering::SeqCst) && self.pending.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
        {
            self.close();
        }
    }

    fn forget(&self, seq: u64) {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&seq);
    }

    /// Sends `dispatch` and waits up to `wait` for its reply.
    pub(crate) async fn dispatch(
        &self,
        dispatch: &DispatchRequest,
        request_id: Option<&str>,
        wait: Duration,
    ) -> Outcome {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let frame = match serde_json::to_string(&Outgoing {
            seq,
            request_id,
            dispatch,
        }) {
            Ok(f) => f,
            Err(_) => return Outcome::Unsent,
        };
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(seq, tx);
        // Closed before the hand-over: nothing went out.
        if !self.usable() || self.out.send(frame).is_err() {
            self.forget(seq);
            return Outcome::Unsent;
        }
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(reply)) => Outcome::Reply(Box::new(reply)),
            Ok(Err(_)) => Outcome::Lost("the dispatch channel closed before the gateway answered".into()),
            Err(_) => {
                self.forget(seq);
                // The gateway answers every dispatch by its timeout: one that
                // did not may be on a half-open channel. The thread's next
                // dispatch opens a new one.
                self.retire();
                Outcome::TimedOut
            }
        }
    }

    fn complete(&self, reply: ChannelReply) {
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&reply.seq);
        if let Some(tx) = waiter {
            let _ = tx.send(reply.reply);
        }
        self.close_if_done();
    }
}

/// The state of one thread's channel to one gateway.
#[derive(Debug)]
enum Slot {
    Open(Arc<Channel>),
    Opening,
    Failed(Instant),
}

/// The channels of one dispatch client, by thread and gateway.
#[derive(Debug, Default)]
pub(crate) struct Channels {
    slots: Mutex<HashMap<(ThreadId, String), Slot>>,
}

impl Channels {
    /// This thread's open channel to the gateway at `base`, or `None` (the
    /// caller uses HTTP) while there is none, in which case one starts
    /// opening unless an opening failed less than [`RETRY_AFTER`] ago.
    /// Needs a tokio runtime to open one; only `http://` gateways have one.
    pub(crate) fn get(self: &Arc<Self>, base: &str, token: &str) -> Option<Arc<Channel>> {
        let key = (std::thread::current().id(), base.to_owned());
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        match slots.get(&key) {
            Some(Slot::Open(c)) if c.usable() => return Some(c.clone()),
            Some(Slot::Opening) => return None,
            Some(Slot::Failed(at)) if at.elapsed() < RETRY_AFTER => return None,
            None if slots.len() >= MAX_CHANNELS => return None,
            _ => {}
        }
        let url = channel_url(base)?;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        slots.insert(key.clone(), Slot::Opening);
        drop(slots);
        let me = self.clone();
        let token = token.to_owned();
        runtime.spawn(async move {
            let slot = match open(&url, &token).await {
                Ok(channel) => Slot::Open(channel),
                Err(e) => {
                    tracing::debug!(gateway = %key.1, error = %e, "dispatch channel not opened; dispatching over HTTP");
                    Slot::Failed(Instant::now())
                }
            };
            me.slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, slot);
        });
        None
    }
}

/// `ws://host:port/internal/v1/channel` for `http://host:port`; `None` for
/// any other scheme (an `https://` gateway is reached over HTTP only).
fn channel_url(base: &str) -> Option<String> {
    let rest = base.strip_prefix("http://")?;
    Some(format!("ws://{}{CHANNEL_PATH}", rest.trim_end_matches('/')))
}

/// Opens a channel and starts its reader and writer tasks on the current
/// runtime.
async fn open(url: &str, token: &str) -> Result<Arc<Channel>, String> {
    let mut request = url.into_client_request().map_err(|e| e.to_string())?;
    let value = HeaderValue::from_str(token).map_err(|e| e.to_string())?;
    request.headers_mut().insert(INTERNAL_TOKEN_HEADER, value);
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_REPLY_BYTES))
        .max_frame_size(Some(MAX_REPLY_BYTES));
    let (socket, _) = tokio::time::timeout(
        OPEN_TIMEOUT,
        tokio_tungstenite::connect_async_with_config(request, Some(config), true),
    )
    .await
    .map_err(|_| "handshake timed out".to_owned())?
    .map_err(|e| e.to_string())?;
    let (mut sink, mut stream) = socket.split();
    let (out, mut frames) = mpsc::unbounded_channel::<String>();
    let channel = Arc::new(Channel {
        out,
        pending: Mutex::new(HashMap::new()),
        next: AtomicU64::new(0),
        open: AtomicBool::new(true),
        retired: AtomicBool::new(false),
    });
    let writer = channel.clone();
    tokio::spawn(async move {
        // An empty frame is `close`'s wake-up: the channel is closing.
        'frames: while let Some(frame) = frames.recv().await {
            if frame.is_empty() || !writer.open.load(Ordering::SeqCst) {
                break;
            }
            if sink.feed(Message::text(frame)).await.is_err() {
                break;
            }
            // Whatever else is queued goes out in the same write.
            while let Ok(frame) = frames.try_recv() {
                if frame.is_empty() || sink.feed(Message::text(frame)).await.is_err() {
                    break 'frames;
                }
            }
            if sink.flush().await.is_err() {
                break;
            }
        }
        writer.close();
        let _ = sink.close().await;
    });
    let reader = channel.clone();
    tokio::spawn(async move {
        while let Some(message) = stream.next().await {
            match message {
                Ok(Message::Text(text)) => match serde_json::from_str::<ChannelReply>(&text) {
                    Ok(reply) => reader.complete(reply),
                    Err(e) => {
                        tracing::warn!(error = %e, "unreadable frame on the dispatch channel; closing it");
                        break;
                    }
                },
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => {}
            }
        }
        reader.close();
    });
    Ok(channel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Command;
    use crate::dispatch::ChannelRequest;

    #[test]
    fn channel_urls() {
        assert_eq!(
            channel_url("http://10.0.0.5:8081").as_deref(),
            Some("ws://10.0.0.5:8081/internal/v1/channel")
        );
        assert_eq!(
            channel_url("http://gw/").as_deref(),
            Some("ws://gw/internal/v1/channel")
        );
        assert_eq!(channel_url("https://gw:8443"), None);
    }

    #[test]
    fn what_the_client_writes_is_what_the_gateway_reads() {
        let dispatch = DispatchRequest {
            license_id: "lic".into(),
            terminal_id: "t1".into(),
            command: Command::AccountInfo,
            timeout_ms: 5000,
            relayed: true,
        };
        let text = serde_json::to_string(&Outgoing {
            seq: 7,
            request_id: Some("req-1"),
            dispatch: &dispatch,
        })
        .unwrap();
        let read: ChannelRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(read.seq, 7);
        assert_eq!(read.request_id.as_deref(), Some("req-1"));
        assert_eq!(read.dispatch, dispatch);
    }
}
