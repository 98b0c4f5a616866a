//! The request id: one per HTTP request, answered in `X-Request-Id` (and by
//! the REST API in its error envelope), logged on every line of the request
//! (the `request` span's `request_id` field), and carried on:
//!
//! ```text
//! client ──X-Request-Id?──► REST / MCP  (kept if well formed, else generated)
//!                            │ scope(id, handler)   task-local for the request
//!                            ▼
//!          HttpDispatch ──X-Request-Id──► gateway (same id, its own span)
//!                                           │ command_id()
//!                                           ▼
//!          agent request frame  { "id": "<request id>-<16 hex>", … }
//! ```
//!
//! In process (`tradeterm serve`) the gateway runs in the REST request's
//! task and reads the same task-local. The agent protocol's request id must
//! be unique per command (the gateway matches answers by it, and one HTTP
//! request may send several commands), so [`command_id`] appends 64 random
//! bits to the request id; an agent that logs its request ids therefore logs
//! the request id the client saw.

use std::fmt;
use std::future::Future;

/// The header carrying the request id, in requests and responses.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Longest accepted incoming request id.
pub const MAX_LEN: usize = 64;

/// A request id: 1 to [`MAX_LEN`] characters among ASCII letters, digits,
/// `-`, `_`, `.` and `:` (so it is safe in logs, headers and agent frames).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// A new random id (32 hex digits, 128 bits from the thread's
    /// generator: no system call per request).
    pub fn generate() -> Self {
        Self(format!("{:032x}", rand::random::<u128>()))
    }

    /// `value` if it is a well-formed request id.
    pub fn parse(value: &str) -> Option<Self> {
        let ok = !value.is_empty()
            && value.len() <= MAX_LEN
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
        ok.then(|| Self(value.to_owned()))
    }

    /// The incoming header's id when well formed, else a new one.
    pub fn from_header(value: Option<&[u8]>) -> Self {
        value
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(Self::parse)
            .unwrap_or_else(Self::generate)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

tokio::task_local! {
    static CURRENT: RequestId;
}

/// Runs `fut` with `id` as the current request id of its task.
pub async fn scope<F: Future>(id: RequestId, fut: F) -> F::Output {
    CURRENT.scope(id, fut).await
}

/// The current task's request id, if it runs inside [`scope`].
pub fn current() -> Option<RequestId> {
    CURRENT.try_with(Clone::clone).ok()
}

/// A new id for one agent-protocol request: `<request id>-<16 hex digits>`
/// inside a request, a random 32-hex-digit id outside one (a background
/// task). Unique per command either way.
pub fn command_id() -> String {
    match current() {
        Some(rid) => format!("{rid}-{:016x}", rand::random::<u64>()),
        None => RequestId::generate().0,
    }
}

/// The request id a command id carries (the part before the last `-` when
/// what follows is 16 hex digits), for logs on the agent's side.
pub fn of_command_id(command_id: &str) -> Option<&str> {
    let (rid, tail) = command_id.rsplit_once('-')?;
    (tail.len() == 16 && tail.bytes().all(|b| b.is_ascii_hexdigit()) && !rid.is_empty()).then_some(rid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_ids_are_kept_and_others_replaced() {
        assert_eq!(RequestId::parse("abc-123_x.y:z").unwrap().as_str(), "abc-123_x.y:z");
        for bad in [
            "",
            "has space",
            "new\nline",
            "ünï",
            &"x".repeat(65),
            "a/b",
            "{\"json\":1}",
        ] {
            assert!(RequestId::parse(bad).is_none(), "{bad:?}");
        }
        assert!(RequestId::parse(&"x".repeat(64)).is_some());
        let kept = RequestId::from_header(Some(b"client-id-1"));
        assert_eq!(kept.as_str(), "client-id-1");
        let made = RequestId::from_header(Some(b"bad id"));
        assert_eq!(made.as_str().len(), 32);
        assert!(made.as_str().bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(RequestId::generate(), RequestId::generate());
    }

    #[tokio::test]
    async fn command_ids_carry_the_current_request_id_and_stay_unique() {
        assert_eq!(current(), None);
        let outside = command_id();
        assert_eq!(outside.len(), 32);
        assert_eq!(of_command_id(&outside), None);
        let rid = RequestId::parse("req-42").unwrap();
        let (a, b) = scope(rid.clone(), async { (command_id(), command_id()) }).await;
        assert_ne!(a, b);
        for id in [&a, &b] {
            assert!(id.starts_with("req-42-"), "{id}");
            assert_eq!(of_command_id(id), Some("req-42"));
        }
        assert_eq!(scope(rid.clone(), async { current() }).await, Some(rid));
        assert_eq!(current(), None);
    }
}
