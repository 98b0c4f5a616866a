//! The engine of a scaled-out deployment: Redis Streams, which the
//! deployment already runs for its rate limits and route table.
//!
//! - Each license has its own stream `tt:ev:{license}`; an event's id is the
//!   id Redis gave its entry (`<ms>-<seq>`, strictly increasing per stream
//!   whatever the clocks of the instances do).
//! - One script appends the entry, trims what is older than the retention
//!   window (remembering the newest id it dropped in `tt:ev:{license}:dropped`,
//!   so that a replay from before it says `gap`), and publishes the event on
//!   [`LIVE_CHANNEL`]: appending and publishing are one atomic step, so every
//!   instance hears each license's events in id order.
//! - Every instance keeps one subscription to [`LIVE_CHANNEL`]
//!   (`tradeterm_cluster::subscribe`) and hands what it hears to its live
//!   feed. When the subscription is (re)made, the feed says
//!   [`Live::Resync`]: subscribers read what they may have missed from the
//!   streams, after the last id they delivered. Nothing is lost while an
//!   instance's subscription is down.
//! - Quotes are published on the channel only (no stream entry, no id).
//!
//! Why Streams and not a consumer group per subscriber: a stream client
//! resumes from any id (`XRANGE`) with no state kept per client in Redis,
//! and the live fan-out needs one subscription per instance, not one
//! blocking connection per subscriber.

use std::sync::{Arc, Weak};
use std::time::Duration;

use deadpool_redis::redis;
use tokio::sync::broadcast;

use crate::{BusError, Draft, Event, EventBus, EventId, Live, Replay, now_ms};

/// The channel every instance subscribes to.
pub const LIVE_CHANNEL: &str = "tt:events";

/// Longest wait for one Redis call.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// Appends, trims and publishes, atomically.
/// KEYS: stream, dropped-marker. ARGV: event JSON, oldest ms kept, max
/// entries, channel, license.
const APPEND: &str = r"
local id = redis.call('XADD', KEYS[1], '*', 'e', ARGV[1])
local old = redis.call('XREVRANGE', KEYS[1], '(' .. ARGV[2] .. '-0', '-', 'COUNT', 1)
if #old > 0 then
  redis.call('SET', KEYS[2], old[1][1])
  redis.call('XTRIM', KEYS[1], 'MINID', ARGV[2])
end
local len = redis.call('XLEN', KEYS[1])
local max = tonumber(ARGV[3])
if len > max then
  local cut = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', len - max)
  redis.call('SET', KEYS[2], cut[#cut][1])
  redis.call('XTRIM', KEYS[1], 'MAXLEN', max)
end
redis.call('PUBLISH', ARGV[4], ARGV[5] .. '\n' .. id .. '\n' .. ARGV[1])
return id
";

/// Settings of a [`RedisBus`].
#[derive(Debug, Clone)]
pub struct RedisSettings {
    /// Redis URL (the deployment's `KEYVALUE_URL`), for the subscription.
    pub url: String,
    /// Events older than this are dropped (ms).
    pub retention_ms: i64,
    /// At most this many events are kept per license.
    pub max_per_license: usize,
}

/// Redis Streams engine.
pub struct RedisBus {
    pool: deadpool_redis::Pool,
    settings: RedisSettings,
    append: redis::Script,
    live: Arc<broadcast::Sender<Live>>,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("retention_ms", &self.settings.retention_ms)
            .finish_non_exhaustive()
    }
}

fn stream_key(license: &str) -> String {
    format!("tt:ev:{license}")
}

fn dropped_key(license: &str) -> String {
    format!("tt:ev:{license}:dropped")
}

fn unavailable(e: impl std::fmt::Display) -> BusError {
    BusError::Unavailable(e.to_string())
}

/// Parses a message of [`LIVE_CHANNEL`]: `license \n id \n event JSON` (an
/// empty id for a quote).
fn parse_message(text: &str) -> Option<Live> {
    let mut parts = text.splitn(3, '\n');
    let (license, id, json) = (parts.next()?, parts.next()?, parts.next()?);
    let mut event: Event = serde_json::from_str(json).ok()?;
    event.id = if id.is_empty() { None } else { Some(id.parse().ok()?) };
    Some(Live::Event {
        license: license.into(),
        event: Arc::new(event),
    })
}

struct Listener {
    live: Weak<broadcast::Sender<Live>>,
}

impl tradeterm_cluster::subscribe::Subscription for Listener {
    async fn heard(&self, what: tradeterm_cluster::subscribe::Heard) {
        use tradeterm_cluster::subscribe::Heard;
        let Some(live) = self.live.upgrade() else { return };
        match what {
            // Events may have been appended while nobody listened here.
            Heard::Up => {
                let _ = live.send(Live::Resync);
            }
            Heard::Messages(messages) => {
                for m in messages {
                    match parse_message(&m) {
                        Some(event) => {
                            let _ = live.send(event);
                        }
                        None => tracing::warn!("an unreadable message on the event channel was ignored"),
                    }
                }
            }
            Heard::Down => tracing::warn!("event channel subscription lost; streams catch up when it is back"),
        }
    }

    fn alive(&self) -> bool {
        self.live.strong_count() > 0
    }
}

impl RedisBus {
    /// The engine over `pool`, subscribed to the live channel of the Redis
    /// at `settings.url` (on a thread of its own).
    ///
    /// # Errors
    /// The URL is not a Redis URL, or the subscription thread cannot start.
    pub fn new(pool: deadpool_redis::Pool, settings: RedisSettings) -> Result<Self, BusError> {
        let live = Arc::new(broadcast::channel(crate::memory::LIVE_CAPACITY).0);
        tradeterm_cluster::subscribe::spawn(
            &settings.url,
            LIVE_CHANNEL,
            "tt-events-sub",
            Listener {
                live: Arc::downgrade(&live),
            },
        )
        .map_err(BusError::Unavailable)?;
        Ok(Self {
            pool,
            settings,
            append: redis::Script::new(APPEND),
            live,
        })
    }

    async fn conn(&self) -> Result<deadpool_redis::Connection, BusError> {
        tokio::time::timeout(CALL_TIMEOUT, self.pool.get())
            .await
            .map_err(|_| unavailable("no Redis connection within 2 s"))?
            .map_err(unavailable)
    }

    async fn call<T, F>(&self, f: F) -> Result<T, BusError>
    where
        F: AsyncFnOnce(&mut deadpool_redis::Connection) -> redis::RedisResult<T>,
    {
        let mut conn = self.conn().await?;
        tokio::time::timeout(CALL_TIMEOUT, f(&mut conn))
            .await
            .map_err(|_| unavailable("Redis did not answer within 2 s"))?
            .map_err(unavailable)
    }
}

type Entries = Vec<(String, Vec<(String, String)>)>;

fn events_of(entries: Entries) -> Result<Vec<Event>, BusError> {
    entries
        .into_iter()
        .map(|(id, fields)| {
            let json = fields
                .into_iter()
                .find(|(k, _)| k == "e")
                .map(|(_, v)| v)
                .ok_or_else(|| BusError::Corrupt(format!("entry {id} has no event")))?;
            let mut event: Event = serde_json::from_str(&json).map_err(|e| BusError::Corrupt(e.to_string()))?;
            event.id = Some(id.parse().map_err(|_| BusError::Corrupt(format!("entry id {id}")))?);
            Ok(event)
        })
        .collect()
}

#[async_trait::async_trait]
impl EventBus for RedisBus {
    async fn append(&self, license: &str, draft: Draft) -> Result<Event, BusError> {
        let event = draft.without_id();
        let json = serde_json::to_string(&event).map_err(|e| BusError::Corrupt(e.to_string()))?;
        let oldest = (now_ms() - self.settings.retention_ms).max(0);
        let mut invocation = self.append.key(stream_key(license));
        invocation
            .key(dropped_key(license))
            .arg(json)
            .arg(oldest)
            .arg(self.settings.max_per_license)
            .arg(LIVE_CHANNEL)
            .arg(license);
        let id: String = self.call(async |c| invocation.invoke_async(c).await).await?;
        let id: EventId = id.parse().map_err(|_| BusError::Corrupt(format!("stream id {id}")))?;
        Ok(Event { id: Some(id), ..event })
    }

    async fn broadcast(&self, license: &str, draft: Draft) -> Result<(), BusError> {
        let json = serde_json::to_string(&draft.without_id()).map_err(|e| BusError::Corrupt(e.to_string()))?;
        let message = format!("{license}\n\n{json}");
        self.call(async |c| {
            redis::cmd("PUBLISH")
                .arg(LIVE_CHANNEL)
                .arg(message)
                .query_async::<i64>(c)
                .await
        })
        .await?;
        Ok(())
    }

    async fn replay(&self, license: &str, after: Option<EventId>, limit: usize) -> Result<Replay, BusError> {
        let start = match after {
            Some(id) => format!("({id}"),
            None => "-".to_owned(),
        };
        let (entries, dropped): (Entries, Option<String>) = self
            .call(async |c| {
                redis::pipe()
                    .cmd("XRANGE")
                    .arg(stream_key(license))
                    .arg(start)
                    .arg("+")
                    .arg("COUNT")
                    .arg(limit + 1)
                    .cmd("GET")
                    .arg(dropped_key(license))
                    .query_async(c)
                    .await
            })
            .await?;
        let mut events = events_of(entries)?;
        let more = events.len() > limit;
        events.truncate(limit);
        let dropped: Option<EventId> = dropped.and_then(|d| d.parse().ok());
        let gap = match (after, dropped) {
            (Some(after), Some(dropped)) => after < dropped,
            (None, Some(_)) => true,
            _ => false,
        };
        Ok(Replay { events, gap, more })
    }

    async fn last_id(&self, license: &str) -> Result<Option<EventId>, BusError> {
        let entries: Entries = self
            .call(async |c| {
                redis::cmd("XREVRANGE")
                    .arg(stream_key(license))
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1)
                    .query_async(c)
                    .await
            })
            .await?;
        Ok(entries.first().and_then(|(id, _)| id.parse().ok()))
    }

    fn live(&self) -> broadcast::Receiver<Live> {
        self.live.subscribe()
    }

    fn engine(&self) -> &'static str {
        "redis"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_messages_parse_back() {
        let event = r#"{"type":"quote","version":1,"time":"2026-12-01T19:00:00Z","symbol":"EURUSD","data":{}}"#;
        let Some(Live::Event { license, event: e }) = parse_message(&format!("lic_1\n\n{event}")) else {
            panic!("a quote parses")
        };
        assert_eq!((&*license, e.id), ("lic_1", None));
        let Some(Live::Event { event: e, .. }) = parse_message(&format!("lic_1\n17-3\n{event}")) else {
            panic!("an event parses")
        };
        assert_eq!(e.id, Some(EventId::new(17, 3)));
        assert!(parse_message("lic_1\nbad\n{}").is_none());
        assert!(parse_message("lic_1").is_none());
    }
}
