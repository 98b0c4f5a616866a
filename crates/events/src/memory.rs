//! The engine of one process: each license's log in memory, trimmed to the
//! retention window (and to a number of events per license), and a
//! broadcast channel as the live feed. What `tradeterm serve` uses on its
//! embedded defaults; events do not survive a restart.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::{BusError, Draft, Event, EventBus, EventId, Live, Replay, now_ms};

/// Capacity of the live feed (a subscriber further behind reads from the log).
pub const LIVE_CAPACITY: usize = 4096;

/// Settings of a [`MemoryBus`].
#[derive(Debug, Clone, Copy)]
pub struct MemorySettings {
    /// Events older than this are dropped (ms).
    pub retention_ms: i64,
    /// At most this many events are kept per license (the oldest go first).
    pub max_per_license: usize,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            retention_ms: crate::DEFAULT_RETENTION_MS,
            max_per_license: 100_000,
        }
    }
}

#[derive(Default)]
struct Log {
    events: VecDeque<Event>,
    last: Option<EventId>,
    /// The newest id dropped by retention.
    dropped: Option<EventId>,
}

impl Log {
    fn next_id(&self, now: i64) -> EventId {
        let now = now.max(0) as u64;
        match self.last {
            Some(last) if last.ms >= now => EventId::new(last.ms, last.seq + 1),
            _ => EventId::new(now, 0),
        }
    }

    fn trim(&mut self, settings: &MemorySettings, now: i64) {
        let oldest = (now - settings.retention_ms).max(0) as u64;
        while let Some(first) = self.events.front() {
            let id = first.id.unwrap_or(EventId::new(0, 0));
            if id.ms >= oldest && self.events.len() <= settings.max_per_license {
                break;
            }
            self.dropped = Some(id);
            self.events.pop_front();
        }
    }
}

/// In-memory engine (one process).
pub struct MemoryBus {
    settings: MemorySettings,
    logs: Mutex<HashMap<String, Log>>,
    live: broadcast::Sender<Live>,
}

impl std::fmt::Debug for MemoryBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBus")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new(MemorySettings::default())
    }
}

impl MemoryBus {
    /// An empty engine.
    pub fn new(settings: MemorySettings) -> Self {
        Self {
            settings,
            logs: Mutex::new(HashMap::new()),
            live: broadcast::channel(LIVE_CAPACITY).0,
        }
    }

    /// Appends at `now` (tests drive the clock).
    pub fn append_at(&self, license: &str, draft: Draft, now: i64) -> Event {
        let mut logs = self.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let log = logs.entry(license.to_owned()).or_default();
        let id = log.next_id(now);
        let event = draft.with_id(id);
        log.last = Some(id);
        log.events.push_back(event.clone());
        log.trim(&self.settings, now);
        // Sent under the lock: the live feed is in id order per license.
        let _ = self.live.send(Live::Event {
            license: license.into(),
            event: Arc::new(event.clone()),
        });
        event
    }

    /// Replays at `now` (tests drive the clock).
    pub fn replay_at(&self, license: &str, after: Option<EventId>, limit: usize, now: i64) -> Replay {
        let mut logs = self.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(log) = logs.get_mut(license) else {
            return Replay::default();
        };
        log.trim(&self.settings, now);
        let gap = match (after, log.dropped) {
            (Some(after), Some(dropped)) => after < dropped,
            (None, Some(_)) => true,
            _ => false,
        };
        let start = match after {
            Some(after) => log.events.partition_point(|e| e.id.is_some_and(|id| id <= after)),
            None => 0,
        };
        let events: Vec<Event> = log.events.iter().skip(start).take(limit).cloned().collect();
        let more = log.events.len() > start + events.len();
        Replay { events, gap, more }
    }
}

#[async_trait::async_trait]
impl EventBus for MemoryBus {
    async fn append(&self, license: &str, draft: Draft) -> Result<Event, BusError> {
        Ok(self.append_at(license, draft, now_ms()))
    }

    async fn broadcast(&self, license: &str, draft: Draft) -> Result<(), BusError> {
        let _ = self.live.send(Live::Event {
            license: license.into(),
            event: Arc::new(draft.without_id()),
        });
        Ok(())
    }

    async fn replay(&self, license: &str, after: Option<EventId>, limit: usize) -> Result<Replay, BusError> {
        Ok(self.replay_at(license, after, limit, now_ms()))
    }

    async fn last_id(&self, license: &str) -> Result<Option<EventId>, BusError> {
        let logs = self.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(logs.get(license).and_then(|l| l.last))
    }

    fn live(&self) -> broadcast::Receiver<Live> {
        self.live.subscribe()
    }

    fn engine(&self) -> &'static str {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DisconnectedData, EventType};

    fn draft(n: u32) -> Draft {
        Draft::new(
            EventType::TerminalDisconnected,
            0,
            Some("term_a"),
            &DisconnectedData {
                reason: format!("r{n}"),
            },
        )
    }

    #[test]
    fn ids_increase_strictly_per_license_even_when_the_clock_stands_or_steps_back() {
        let bus = MemoryBus::default();
        let a = bus.append_at("lic_a", draft(1), 1_000).id.unwrap();
        let b = bus.append_at("lic_a", draft(2), 1_000).id.unwrap();
        let c = bus.append_at("lic_a", draft(3), 900).id.unwrap();
        let d = bus.append_at("lic_a", draft(4), 1_001).id.unwrap();
        assert_eq!(
            (a, b, c, d),
            (
                EventId::new(1_000, 0),
                EventId::new(1_000, 1),
                EventId::new(1_000, 2),
                EventId::new(1_001, 0)
            )
        );
        // Another license has its own log.
        assert_eq!(bus.append_at("lic_b", draft(1), 1_000).id, Some(EventId::new(1_000, 0)));
        let replay = bus.replay_at("lic_a", Some(b), 10, 1_002);
        let ids: Vec<_> = replay.events.iter().map(|e| e.id.unwrap()).collect();
        assert_eq!(ids, vec![c, d]);
        assert!(!replay.gap && !replay.more);
        assert!(bus.replay_at("lic_b", Some(b), 10, 1_002).events.is_empty());
        assert!(bus.replay_at("lic_c", None, 10, 1_002).events.is_empty());
    }

    #[test]
    fn retention_drops_old_events_and_a_replay_from_before_them_says_gap() {
        let bus = MemoryBus::new(MemorySettings {
            retention_ms: 100,
            max_per_license: 3,
        });
        let first = bus.append_at("lic", draft(1), 1_000).id.unwrap();
        let second = bus.append_at("lic", draft(2), 1_050).id.unwrap();
        // At 1_120 the first is older than 100 ms.
        let replay = bus.replay_at("lic", Some(first), 10, 1_120);
        assert!(!replay.gap, "nothing after `first` was dropped");
        assert_eq!(replay.events.len(), 1);
        let replay = bus.replay_at("lic", None, 10, 1_120);
        assert!(replay.gap, "the oldest retained is not the first");
        // A resume from before the dropped one is a gap.
        let before = EventId::new(999, 0);
        assert!(bus.replay_at("lic", Some(before), 10, 1_120).gap);
        // The count limit drops too.
        for n in 0..5 {
            bus.append_at("lic", draft(n), 1_121);
        }
        let replay = bus.replay_at("lic", Some(second), 2, 1_121);
        assert!(replay.gap && replay.more);
        assert_eq!(replay.events.len(), 2);
    }

    #[tokio::test]
    async fn the_live_feed_carries_appends_and_broadcasts_in_order() {
        let bus = MemoryBus::default();
        let mut live = bus.live();
        let a = bus.append("lic", draft(1)).await.unwrap();
        bus.broadcast("lic", draft(2)).await.unwrap();
        let Live::Event { license, event } = live.recv().await.unwrap() else {
            panic!()
        };
        assert_eq!((&*license, event.id), ("lic", a.id));
        let Live::Event { event, .. } = live.recv().await.unwrap() else {
            panic!()
        };
        assert_eq!(event.id, None, "a broadcast has no id");
        assert_eq!(bus.last_id("lic").await.unwrap(), a.id);
    }
}
