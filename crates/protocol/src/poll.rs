//! The HTTP long-poll binding of agent protocol v1: the same JSON frames as
//! the WebSocket transport, carried by plain HTTP requests for agents that
//! only have MQL's synchronous `WebRequest` (`docs/agent-protocol.md`, "HTTP
//! long-poll binding").
//!
//! - `POST /agent/v1/poll/open`, body the `hello` frame → [`PollWelcome`];
//! - `POST /agent/v1/poll` with header `X-Agent-Session`, body a
//!   [`PollBatch`] → [`PollReply`];
//! - `POST /agent/v1/poll/close` with the header → 204.
//!
//! Failures answer a non-2xx status with an `error` frame as body
//! (`{ "type": "error", "code", "message" }`).
//!
//! Delivery is exactly-once on both sides through sequence numbers: agent
//! batches carry `seq` (a replayed batch is not processed again) and every
//! gateway frame carries its own `seq` (re-sent until acknowledged with `ack`;
//! the agent processes a frame only when its `seq` is above the highest it
//! has processed). This module holds the wire types and, behind the `client`
//! feature, [`PollClient`], an HTTP client of the three routes.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::{AgentFrame, FrameError, GatewayFrame};

/// Path of the open route.
pub const OPEN_PATH: &str = "/agent/v1/poll/open";
/// Path of the exchange route.
pub const EXCHANGE_PATH: &str = "/agent/v1/poll";
/// Path of the close route.
pub const CLOSE_PATH: &str = "/agent/v1/poll/close";
/// Header carrying the session id on exchanges and close.
pub const SESSION_HEADER: &str = "X-Agent-Session";
/// Longest hold of an exchange, and the default `wait_ms` (ms).
pub const POLL_WAIT_MAX_MS: u64 = 25_000;
/// Longest session id, in characters.
pub const MAX_SESSION_CHARS: usize = 128;
/// Largest request body of the binding, in bytes (16 MiB, as a WebSocket frame).
pub const MAX_BODY_BYTES: usize = crate::agent::MAX_FRAME_BYTES;
/// Error code of an exchange on an unknown or ended session (HTTP 404): open
/// a new session.
pub const SESSION_EXPIRED: &str = "SESSION_EXPIRED";

/// Answer (200) of `POST /agent/v1/poll/open`: the `welcome` frame plus the
/// session id and the longest hold of an exchange.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "welcome")]
pub struct PollWelcome {
    /// Protocol version in use.
    pub protocol_version: u32,
    /// The terminal id this session serves.
    pub terminal_id: String,
    /// As on WebSocket; pings are optional over this binding.
    pub heartbeat_interval_ms: u64,
    /// A session without an exchange for this long ends.
    pub heartbeat_timeout_ms: u64,
    /// The session id (opaque, at most 128 characters, a secret): send it as
    /// `X-Agent-Session`.
    pub session: String,
    /// Longest time the gateway holds an exchange (`wait_ms` above it is
    /// lowered to it).
    pub poll_wait_max_ms: u64,
}

impl fmt::Debug for PollWelcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PollWelcome")
            .field("protocol_version", &self.protocol_version)
            .field("terminal_id", &self.terminal_id)
            .field("heartbeat_interval_ms", &self.heartbeat_interval_ms)
            .field("heartbeat_timeout_ms", &self.heartbeat_timeout_ms)
            .field("session", &"<redacted>")
            .field("poll_wait_max_ms", &self.poll_wait_max_ms)
            .finish()
    }
}

fn default_wait() -> u64 {
    POLL_WAIT_MAX_MS
}

/// Body of `POST /agent/v1/poll` (agent → gateway).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PollBatch {
    /// Batch number: 1, then +1 for each new batch. A retry of a batch whose
    /// reply was lost re-sends the same `seq` with the same frames; the
    /// gateway processes the frames of a batch only when its `seq` is above
    /// the last one it processed.
    pub seq: u64,
    /// Highest gateway-frame `seq` the agent has received and processed
    /// (0 at first): the gateway forgets those frames.
    #[serde(default)]
    pub ack: u64,
    /// Longest time (ms) the gateway may hold the request when it has nothing
    /// to send (0..=25 000, default 25 000).
    #[serde(default = "default_wait")]
    pub wait_ms: u64,
    /// Agent frames (`response`, `event`, `ping`, `pong`), processed in order.
    #[serde(default)]
    pub frames: Vec<Value>,
}

impl PollBatch {
    /// A batch carrying `frames`.
    pub fn new(seq: u64, ack: u64, wait_ms: u64, frames: &[AgentFrame]) -> Self {
        Self {
            seq,
            ack,
            wait_ms,
            frames: frames.iter().filter_map(|f| serde_json::to_value(f).ok()).collect(),
        }
    }

    /// The frames, each parsed as an agent frame.
    pub fn agent_frames(&self) -> impl Iterator<Item = Result<AgentFrame, FrameError>> + '_ {
        self.frames.iter().map(parse_agent_frame)
    }
}

/// Parses one agent frame given as a JSON value, with the same errors as
/// [`AgentFrame::parse`] (malformed, or an unknown `type`).
pub fn parse_agent_frame(value: &Value) -> Result<AgentFrame, FrameError> {
    AgentFrame::parse(&value.to_string())
}

/// Answer (200) of `POST /agent/v1/poll` (gateway → agent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "batch")]
pub struct PollReply {
    /// The last agent batch `seq` the gateway has processed.
    pub ack: u64,
    /// Gateway frames (`request`, `ping`, `pong`, `error`), each with an
    /// added `seq` field; see [`with_seq`] and [`split_seq`].
    #[serde(default)]
    pub frames: Vec<Value>,
}

impl PollReply {
    /// The frames with their sequence numbers, parsed.
    pub fn gateway_frames(&self) -> Vec<SeqFrame> {
        self.frames.iter().map(split_seq).collect()
    }
}

/// A gateway frame of a [`PollReply`] with its sequence number.
#[derive(Debug, Clone, PartialEq)]
pub struct SeqFrame {
    /// The frame's `seq` (`None` when missing or not an integer).
    pub seq: Option<u64>,
    /// The frame.
    pub frame: Result<GatewayFrame, FrameError>,
}

/// A gateway frame as a JSON object with an added `seq` field.
pub fn with_seq(frame: &GatewayFrame, seq: u64) -> Value {
    let mut value = serde_json::to_value(frame).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("seq".to_owned(), Value::from(seq));
    }
    value
}

/// Splits a frame of a [`PollReply`] into its `seq` and the gateway frame.
pub fn split_seq(value: &Value) -> SeqFrame {
    SeqFrame {
        seq: value.get("seq").and_then(Value::as_u64),
        frame: GatewayFrame::parse(&value.to_string()),
    }
}

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
pub use client::{PollClient, PollError};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Command;
    use crate::agent::Response;
    use crate::agent::{ErrorBody, codes};

    #[test]
    fn welcome_wire_form_has_its_type_and_hides_the_session_in_debug() {
        let w = PollWelcome {
            protocol_version: 1,
            terminal_id: "term_1".into(),
            heartbeat_interval_ms: 10_000,
            heartbeat_timeout_ms: 30_000,
            session: "s3cr3t".into(),
            poll_wait_max_ms: POLL_WAIT_MAX_MS,
        };
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["type"], "welcome");
        assert_eq!(v["session"], "s3cr3t");
        assert_eq!(v["poll_wait_max_ms"], 25_000);
        assert_eq!(serde_json::from_value::<PollWelcome>(v).unwrap(), w);
        assert!(!format!("{w:?}").contains("s3cr3t"));
        // The same JSON is a valid `welcome` frame for a WebSocket parser.
        assert!(matches!(
            GatewayFrame::parse(&serde_json::to_string(&w).unwrap()),
            Ok(GatewayFrame::Welcome { .. })
        ));
    }

    #[test]
    fn batch_defaults_and_frame_parsing() {
        let b: PollBatch = serde_json::from_str(r#"{"seq":3}"#).unwrap();
        assert_eq!((b.seq, b.ack, b.wait_ms, b.frames.len()), (3, 0, 25_000, 0));
        assert!(
            serde_json::from_str::<PollBatch>(r#"{"ack":1}"#).is_err(),
            "seq is required"
        );
        assert!(serde_json::from_str::<PollBatch>(r#"{"seq":-1}"#).is_err());
        assert!(serde_json::from_str::<PollBatch>(r#"{"seq":1,"frames":{}}"#).is_err());

        let b = PollBatch::new(
            1,
            0,
            0,
            &[
                AgentFrame::Ping { ts: 5 },
                AgentFrame::Response(Response::err("r1", ErrorBody::new(codes::NOT_FOUND, "x"))),
            ],
        );
        let mut b: PollBatch = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
        b.frames.push(serde_json::json!({ "type": "warp" }));
        b.frames.push(serde_json::json!(7));
        let parsed: Vec<_> = b.agent_frames().collect();
        assert_eq!(parsed[0], Ok(AgentFrame::Ping { ts: 5 }));
        assert!(matches!(parsed[1], Ok(AgentFrame::Response(ref r)) if r.id == "r1"));
        assert_eq!(parsed[2].as_ref().unwrap_err().code(), codes::UNKNOWN_FRAME);
        assert_eq!(parsed[3].as_ref().unwrap_err().code(), codes::MALFORMED_FRAME);
    }

    #[test]
    fn reply_frames_carry_their_seq() {
        let request = GatewayFrame::Request {
            id: "r1".into(),
            timeout_ms: 10,
            command: Command::Symbols,
        };
        let error = GatewayFrame::error(None, codes::MALFORMED_FRAME, "bad");
        let reply = PollReply {
            ack: 4,
            frames: vec![with_seq(&request, 1), with_seq(&error, 2)],
        };
        let text = serde_json::to_string(&reply).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["type"], "batch");
        assert_eq!(v["frames"][0]["seq"], 1);
        assert_eq!(v["frames"][0]["type"], "request");
        let back: PollReply = serde_json::from_str(&text).unwrap();
        let frames = back.gateway_frames();
        assert_eq!(frames[0].seq, Some(1));
        assert_eq!(frames[0].frame, Ok(request));
        assert_eq!(frames[1].seq, Some(2));
        // The flattened error body does not swallow `seq` as a field.
        assert_eq!(frames[1].frame, Ok(error));
        assert_eq!(split_seq(&serde_json::json!({ "type": "ping", "ts": 1 })).seq, None);
    }
}
