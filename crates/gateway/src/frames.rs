//! The frame-size guard of the agent WebSocket: it reads the header of
//! every frame as the bytes arrive and refuses a frame (or a message of
//! continuation frames) announced over the limit at once, before its
//! payload is read.
//!
//! Why a guard in front of `actix-ws` rather than its `max_frame_size`:
//! `actix_ws::MessageStream` takes every chunk the connection has ready
//! into its buffer before it decodes a frame header, so a client that
//! announces a 512 MiB frame and keeps writing had tens of MiB buffered
//! before the codec's size check refused it. The guard sits between the
//! request payload and that stream: it passes chunks on while they belong to
//! frames within the limit and answers an overflow error on the chunk that
//! holds an over-limit header, so at most the limit (plus one chunk of the
//! socket's read) is ever taken from the connection.
//!
//! Once a frame is refused, the gateway sends an error frame and closes
//! with 1009; [`CutBody`], the WebSocket's response body, then ends the
//! connection with an error rather than a clean end, and the request stream
//! is held unread until then: after a clean end actix-web reads and
//! discards what the client still sends for a second (its linger), which
//! on a fast link is hundreds of MiB more.
//!
//! The limit is small until the handshake is done (the `hello` and anything
//! before `welcome`, `AGENT_HELLO_MAX_FRAME_BYTES`) and then raised to the
//! largest frame (`AGENT_MAX_FRAME_BYTES`) through [`FrameLimit::raise`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::error::PayloadError;
use actix_web::web::Bytes;
use futures_util::Stream;

/// The limit a guard applies, shared with the connection's task.
#[derive(Debug)]
pub(crate) struct FrameLimit {
    limit: AtomicUsize,
    raised: usize,
    exceeded: AtomicBool,
}

impl FrameLimit {
    /// `before_hello` until [`FrameLimit::raise`], then `after`.
    pub(crate) fn new(before_hello: usize, after: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: AtomicUsize::new(before_hello),
            raised: after,
            exceeded: AtomicBool::new(false),
        })
    }

    /// The handshake is done: frames up to the largest frame are read.
    pub(crate) fn raise(&self) {
        self.limit.store(self.raised, Ordering::Relaxed);
    }

    /// The current limit.
    pub(crate) fn current(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Whether a frame was refused (the connection's stream then ends in an error).
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }
}

/// The longest frame header: 2 bytes, 8 of extended length, 4 of mask.
const MAX_HEADER: usize = 14;

/// A payload stream that refuses over-limit frames as their headers pass.
pub(crate) struct Guarded<S> {
    inner: S,
    limit: Arc<FrameLimit>,
    header: [u8; MAX_HEADER],
    have: usize,
    /// Payload bytes of the current frame still to pass.
    payload_left: u64,
    /// Payload of the current message so far (continuation frames).
    message: u64,
    done: bool,
}

impl<S> Guarded<S> {
    pub(crate) fn new(inner: S, limit: Arc<FrameLimit>) -> Self {
        Self {
            inner,
            limit,
            header: [0; MAX_HEADER],
            have: 0,
            payload_left: 0,
            message: 0,
            done: false,
        }
    }

    /// Walks the frames in `chunk`; `false` when a header announces a frame
    /// or message over the limit.
    fn inspect(&mut self, chunk: &[u8]) -> bool {
        let mut i = 0;
        while i < chunk.len() {
            if self.payload_left > 0 {
                let skip = self.payload_left.min((chunk.len() - i) as u64);
                self.payload_left -= skip;
                i += skip as usize;
                continue;
            }
            self.header[self.have] = chunk[i];
            self.have += 1;
            i += 1;
            if self.have < 2 {
                continue;
            }
            let second = self.header[1];
            let extended = match second & 0x7f {
                126 => 2,
                127 => 8,
                _ => 0,
            };
            let mask = if second & 0x80 != 0 { 4 } else { 0 };
            if self.have < 2 + extended + mask {
                continue;
            }
            let length = match extended {
                2 => u64::from(u16::from_be_bytes([self.header[2], self.header[3]])),
                8 => {
                    let mut b = [0_u8; 8];
                    b.copy_from_slice(&self.header[2..10]);
                    u64::from_be_bytes(b)
                }
                _ => u64::from(second & 0x7f),
            };
            let first = self.header[0];
            let opcode = first & 0x0f;
            let fin = first & 0x80 != 0;
            self.have = 0;
            let limit = self.limit.current() as u64;
            let size = if opcode < 8 {
                // A data frame: text, binary, or a continuation of the message.
                if opcode != 0 {
                    self.message = 0;
                }
                self.message = self.message.saturating_add(length);
                self.message
            } else {
                length
            };
            if size > limit {
                return false;
            }
            if opcode < 8 && fin {
                self.message = 0;
            }
            self.payload_left = length;
        }
        true
    }
}

impl<S> Stream for Guarded<S>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                if this.inspect(&chunk) {
                    Poll::Ready(Some(Ok(chunk)))
                } else {
                    this.done = true;
                    this.limit.exceeded.store(true, Ordering::Relaxed);
                    tradeterm_telemetry::record::limit_refused("agent_frame", "gateway");
                    Poll::Ready(Some(Err(PayloadError::Overflow)))
                }
            }
            other => other,
        }
    }
}

/// How long [`CutBody`] lets the close frame go out before it cuts.
pub(crate) const CUT_AFTER: std::time::Duration = std::time::Duration::from_millis(100);

/// The response body of an agent WebSocket: the session's frames, then,
/// when a frame was refused for its size, an error that makes the server
/// drop the connection (instead of reading what the client still sends).
pub(crate) struct CutBody {
    inner: BoxBody,
    limit: Arc<FrameLimit>,
    cut: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl CutBody {
    pub(crate) fn new(inner: BoxBody, limit: Arc<FrameLimit>) -> Self {
        Self {
            inner,
            limit,
            cut: None,
        }
    }
}

impl MessageBody for CutBody {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        BodySize::Stream
    }

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let this = self.get_mut();
        if let Some(cut) = &mut this.cut {
            return match cut.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err("agent frame over the limit: connection cut".into()))),
                Poll::Pending => Poll::Pending,
            };
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(None) if this.limit.exceeded() => {
                let mut cut = Box::pin(tokio::time::sleep(CUT_AFTER));
                let _ = cut.as_mut().poll(cx);
                this.cut = Some(cut);
                Poll::Pending
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client frame header (masked) announcing `len` bytes.
    fn header(opcode: u8, fin: bool, len: u64) -> Vec<u8> {
        let mut h = vec![if fin { 0x80 } else { 0 } | opcode];
        match len {
            0..=125 => h.push(0x80 | len as u8),
            126..=0xffff => {
                h.push(0x80 | 126);
                h.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                h.push(0x80 | 127);
                h.extend_from_slice(&len.to_be_bytes());
            }
        }
        h.extend_from_slice(&[1, 2, 3, 4]);
        h
    }

    /// Chunks of 16 KiB from an endless source: a 512 MiB frame announced,
    /// then its payload. The guard takes the header's chunk and refuses it:
    /// one chunk read of the 512 MiB.
    #[tokio::test]
    async fn a_frame_announced_over_the_limit_is_refused_before_its_payload() {
        use futures_util::StreamExt;
        let pulled = Arc::new(AtomicUsize::new(0));
        let counter = pulled.clone();
        let mut first = Some(header(1, true, 512 << 20));
        let source = futures_util::stream::poll_fn(move |_| {
            let chunk = first.take().unwrap_or_else(|| vec![0_u8; 16 * 1024]);
            counter.fetch_add(chunk.len(), Ordering::Relaxed);
            Poll::Ready(Some(Ok::<_, PayloadError>(Bytes::from(chunk))))
        });
        let limit = FrameLimit::new(64 * 1024, 16 << 20);
        let mut guarded = Guarded::new(Box::pin(source), limit.clone());
        let mut passed = 0;
        while let Some(item) = guarded.next().await {
            match item {
                Ok(b) => passed += b.len(),
                Err(e) => {
                    assert!(matches!(e, PayloadError::Overflow));
                    break;
                }
            }
        }
        assert_eq!(passed, 0);
        assert!(limit.exceeded());
        assert!(pulled.load(Ordering::Relaxed) <= 64 * 1024, "{pulled:?} bytes read");
        assert!(guarded.next().await.is_none(), "nothing more is read");
    }

    #[test]
    fn frames_within_the_limit_pass_split_anywhere_and_continuations_add_up() {
        let limit = FrameLimit::new(1000, 100_000);
        let mut g = Guarded::new(
            futures_util::stream::empty::<Result<Bytes, PayloadError>>(),
            limit.clone(),
        );
        // A 600-byte text frame, then a ping, split byte by byte.
        let mut bytes = header(1, true, 600);
        bytes.extend(vec![b'x'; 600]);
        bytes.extend(header(9, true, 4));
        bytes.extend([0; 4]);
        for b in &bytes {
            assert!(g.inspect(std::slice::from_ref(b)));
        }
        // A message of two 600-byte fragments is 1200: over the limit before hello...
        let mut fragments = header(1, false, 600);
        fragments.extend(vec![b'x'; 600]);
        fragments.extend(header(0, true, 600));
        assert!(!g.inspect(&fragments));
        // ...and within it after.
        let mut g = Guarded::new(
            futures_util::stream::empty::<Result<Bytes, PayloadError>>(),
            limit.clone(),
        );
        limit.raise();
        assert!(g.inspect(&fragments));
        let mut g = Guarded::new(futures_util::stream::empty::<Result<Bytes, PayloadError>>(), limit);
        assert!(!g.inspect(&header(2, true, 100_001)));
    }
}
