//! # tradeterm-events
//!
//! The one event model every push delivery of tradeterm uses (the REST
//! event stream, and the consumers built on it), and the pipeline that
//! carries it: what a terminal pushes (fills, stops hit, account changes,
//! permission changes), what the gateway sees (connections) and what the
//! rule engines decide (alerts, equity guards) becomes one typed, versioned
//! [`Event`] with an id that is strictly increasing per license, kept for a
//! retention window where every instance can read it, and heard live by
//! every instance. See `docs/events.md`.
//!
//! - [`model`]: the envelope ([`Event`], [`EventId`]), the closed list of
//!   types ([`EventType`]) and the typed data of each (with a JSON Schema per
//!   type).
//! - [`EventBus`]: append, replay after an id (with the gap beyond
//!   retention said, never a silent hole), the live feed of the process.
//!   Two engines behind it: [`memory::MemoryBus`] (one process, `tradeterm
//!   serve` on its embedded defaults) and [`redis::RedisBus`] (Redis Streams,
//!   one stream per license, for a scaled-out deployment; no home-made
//!   broker).
//! - [`publisher::Publisher`]: what the gateway and the rule engines call.
//!   It never blocks its caller: agent events are translated
//!   ([`translate`]), quotes conflated per symbol, and everything appended in
//!   order by one task that retries a failing engine rather than drop an
//!   event.
//! - [`interest`]: what the subscribers of a process ask to be produced on
//!   demand (the symbols and timeframes of `bar.closed`), reference counted
//!   per open stream.
//! - [`subscriber`]: one client's view of the pipeline: replay then live,
//!   each event exactly once and in order, filters, quote conflation, and a
//!   bounded buffer that cuts a consumer who does not read with the id to
//!   resume from.
//!
//! **Invariants:** an event of one license is only ever read through that
//! license's key (every read and every live event is filtered by license
//! before anything else looks at it); ids are per license and strictly
//! increasing; quotes are the only events that are conflated, and are not
//! retained (a resumed stream gets the next quote, not old ones); every other
//! event is delivered to a subscriber exactly once, or the subscriber is told
//! where to resume. This crate knows no adapter (no HTTP framework, no tool
//! catalog): the gateway, the tools and the REST adapter all sit above it.

pub mod interest;
pub mod memory;
pub mod model;
pub mod publisher;
pub mod redis;
pub mod subscriber;
pub mod translate;

use std::sync::Arc;

pub use model::{Draft, Event, EventId, EventType};
pub use publisher::Publisher;

/// Default retention of events: 24 hours.
pub const DEFAULT_RETENTION_MS: i64 = 24 * 3_600_000;

/// Why the engine could not do what was asked.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BusError {
    /// The engine (Redis) could not be reached or answered with an error.
    #[error("the event engine is unavailable: {0}")]
    Unavailable(String),
    /// A stored event could not be read back.
    #[error("a stored event is not readable: {0}")]
    Corrupt(String),
}

/// Events of one license after an id, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// The events (at most the limit asked for).
    pub events: Vec<Event>,
    /// Events after the id asked for were dropped by retention before they
    /// could be read: the replay starts after a hole, and the stream must
    /// say so (`stream.gap`).
    pub gap: bool,
    /// More events follow the last one returned (ask again after it).
    pub more: bool,
}

/// What the live feed of a process carries: an event of a license, or the
/// news that the feed may have missed some (subscribers then read what they
/// missed from the engine, after the last id they delivered).
#[derive(Debug, Clone)]
pub enum Live {
    /// An event of `license`, as appended (durable) or broadcast (quotes).
    Event {
        /// The license the event belongs to.
        license: Arc<str>,
        /// The event.
        event: Arc<Event>,
    },
    /// The feed was interrupted: events may have been appended unheard.
    Resync,
}

/// The event engine: durable, ordered per license, shared by every instance
/// of a deployment.
#[async_trait::async_trait]
pub trait EventBus: Send + Sync + 'static {
    /// Appends a durable event to the license's log and to the live feed of
    /// every instance; returns it with its id.
    async fn append(&self, license: &str, draft: Draft) -> Result<Event, BusError>;

    /// Sends a live-only event (a quote) to every instance's live feed: no
    /// id, not retained.
    async fn broadcast(&self, license: &str, draft: Draft) -> Result<(), BusError>;

    /// The license's retained events after `after` (from the oldest retained
    /// when `None`), oldest first, at most `limit`.
    async fn replay(&self, license: &str, after: Option<EventId>, limit: usize) -> Result<Replay, BusError>;

    /// The id of the license's newest event, if any.
    async fn last_id(&self, license: &str) -> Result<Option<EventId>, BusError>;

    /// The live feed of this process: every event of every license, as it
    /// is appended here or on another instance, in id order per license.
    fn live(&self) -> tokio::sync::broadcast::Receiver<Live>;

    /// Which engine this is (`memory`, `redis`), for logs and docs.
    fn engine(&self) -> &'static str;
}

/// The time now, unix milliseconds (the pipeline stamps events with it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
