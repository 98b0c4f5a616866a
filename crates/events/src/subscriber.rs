//! One client's view of the pipeline, whatever carries it (the REST event
//! stream today): the license's retained events after an id, then its live
//! events, each exactly once and in id order, filtered, with quotes
//! conflated per symbol, into a bounded buffer.
//!
//! The buffer holds [`SubscriberSettings::buffer`] items. A durable event
//! that does not fit ends the subscription: the client reads what the
//! buffer holds, then a final `stream.cut` naming the id to resume from (the
//! last event it was given), and nothing more. So a consumer that does not
//! read costs at most the buffer, and loses nothing if it resumes. Quotes and
//! heartbeats that do not fit are skipped (the next one follows).
//!
//! Exactly once, in order: the live feed is subscribed to before the log is
//! read, and an event is passed on only if its id is above the last one
//! passed on (or skipped by the filter). When the live feed lags or is
//! interrupted ([`crate::Live::Resync`]) the subscription reads the log again
//! after that id.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tradeterm_core::Timeframe;

use crate::model::{BarClosedData, CutData, GapData};
use crate::{Draft, Event, EventBus, EventId, EventType, Live, now_ms};

/// Which events a client wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only these types (`None`: every type).
    pub types: Option<BTreeSet<EventType>>,
    /// Only events of this terminal (license-wide events pass too).
    pub terminal_id: Option<String>,
    /// Only events of these symbols (events that name no symbol pass too).
    pub symbols: Option<BTreeSet<String>>,
    /// The timeframes of `bar.closed` wanted: a `bar.closed` passes only a
    /// filter that names its timeframe (`None`: no bars at all, whatever
    /// `types` says; bars are produced for the streams that ask for them).
    pub timeframes: Option<BTreeSet<Timeframe>>,
}

impl Filter {
    /// Whether `event` passes.
    pub fn accepts(&self, event: &Event) -> bool {
        if matches!(event.kind, EventType::StreamGap | EventType::StreamCut) {
            return true;
        }
        if let Some(types) = &self.types
            && !types.contains(&event.kind)
        {
            return false;
        }
        if let (Some(want), Some(got)) = (&self.terminal_id, &event.terminal_id)
            && want != got
        {
            return false;
        }
        if let (Some(want), Some(got)) = (&self.symbols, &event.symbol)
            && !want.contains(got)
        {
            return false;
        }
        if event.kind == EventType::BarClosed {
            let asked = BarClosedData::timeframe_of(&event.data)
                .is_some_and(|tf| self.timeframes.as_ref().is_some_and(|want| want.contains(&tf)));
            if !asked {
                return false;
            }
        }
        true
    }
}

/// Settings of one subscription.
#[derive(Debug, Clone, Copy)]
pub struct SubscriberSettings {
    /// Items the buffer holds before a durable event that does not fit cuts the stream.
    pub buffer: usize,
    /// Quotes of one symbol are passed on at most this often (the latest wins).
    pub quote_interval: Duration,
    /// A heartbeat is passed on after this long without anything else.
    pub heartbeat: Duration,
    /// Events read from the log per call.
    pub replay_batch: usize,
}

impl Default for SubscriberSettings {
    fn default() -> Self {
        Self {
            buffer: 4096,
            quote_interval: Duration::from_millis(250),
            heartbeat: Duration::from_secs(15),
            replay_batch: 500,
        }
    }
}

/// What a subscription yields.
#[derive(Debug, Clone)]
pub enum Item {
    /// An event (durable, a quote, or stream control).
    Event(Arc<Event>),
    /// Nothing happened for a while (keeps proxies from closing the connection).
    Heartbeat,
}

/// A running subscription: read it with [`Subscription::next`]; dropping it
/// stops it.
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::Receiver<Item>,
    cut: Arc<Mutex<Option<CutData>>>,
    ended: bool,
}

impl Subscription {
    /// The next item, or `None` once the subscription has ended (after its
    /// `stream.cut`, when it was cut).
    pub async fn next(&mut self) -> Option<Item> {
        if self.ended {
            return None;
        }
        if let Some(item) = self.rx.recv().await {
            return Some(item);
        }
        self.ended = true;
        let cut = self
            .cut
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()?;
        let draft = Draft::new(EventType::StreamCut, now_ms(), None, &cut);
        Some(Item::Event(Arc::new(draft.without_id())))
    }
}

/// Starts a subscription of `license` after `after` (`None`: from now on,
/// i.e. after the newest event when this returns).
///
/// # Errors
/// The engine could not tell the newest event (`after` is `None`).
pub async fn subscribe(
    bus: Arc<dyn EventBus>,
    license: String,
    after: Option<EventId>,
    filter: Filter,
    settings: SubscriberSettings,
) -> Result<Subscription, crate::BusError> {
    let (tx, rx) = mpsc::channel(settings.buffer.max(1));
    let cut = Arc::new(Mutex::new(None));
    // Subscribed before anything is read, so that nothing falls between.
    let live = bus.live();
    let from_now = after.is_none();
    let after = match after {
        Some(after) => Some(after),
        None => bus.last_id(&license).await?,
    };
    let worker = Worker {
        bus,
        license,
        filter,
        settings,
        tx,
        cut: cut.clone(),
        last: after,
        quotes: HashMap::new(),
    };
    tokio::spawn(worker.run(live, from_now));
    Ok(Subscription { rx, cut, ended: false })
}

/// Why a worker stops.
enum Stop {
    /// The client is gone.
    Gone,
    /// Cut, with the reason (the client gets `stream.cut`).
    Cut(String),
}

struct Worker {
    bus: Arc<dyn EventBus>,
    license: String,
    filter: Filter,
    settings: SubscriberSettings,
    tx: mpsc::Sender<Item>,
    cut: Arc<Mutex<Option<CutData>>>,
    /// The last durable id passed on or skipped: everything up to it is done.
    last: Option<EventId>,
    /// Quotes waiting for their symbol's interval (symbol → quote).
    quotes: HashMap<String, (Arc<Event>, bool)>,
}

impl Worker {
    async fn run(mut self, mut live: broadcast::Receiver<Live>, from_now: bool) {
        // From now on: events appended since `subscribe` read the newest
        // id are in the log (and maybe in the feed): read them first.
        let started = self.catch_up(!from_now).await;
        let stop = match started {
            Ok(()) => self.follow(&mut live).await,
            Err(stop) => stop,
        };
        if let Stop::Cut(message) = stop {
            *self.cut.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(CutData {
                resume_after: self.last,
                message,
            });
        }
    }

    /// Passes on a durable event (or skips it by the filter); a full buffer cuts.
    fn deliver(&mut self, event: Arc<Event>) -> Result<(), Stop> {
        let Some(id) = event.id else { return Ok(()) };
        if self.last.is_some_and(|last| id <= last) {
            return Ok(());
        }
        if self.filter.accepts(&event) {
            match self.tx.try_send(Item::Event(event)) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    return Err(Stop::Cut(format!(
                        "the consumer did not keep up ({} events buffered); resume after the last event received",
                        self.settings.buffer
                    )));
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return Err(Stop::Gone),
            }
        }
        self.last = Some(id);
        Ok(())
    }

    /// Reads the log after the last id (saying `stream.gap` first when
    /// retention dropped some of it).
    async fn catch_up(&mut self, resumed: bool) -> Result<(), Stop> {
        let mut told_gap = false;
        loop {
            let replay = self
                .bus
                .replay(&self.license, self.last, self.settings.replay_batch)
                .await
                .map_err(|e| Stop::Cut(format!("the event engine is unavailable: {e}")))?;
            // A gap matters only after an id the client or this stream had:
            // a stream from now on that finds old events dropped lost nothing.
            if replay.gap && !told_gap && (resumed || self.last.is_some()) {
                told_gap = true;
                let gap = GapData {
                    after: self.last.unwrap_or(EventId::new(0, 0)),
                    message: "events after this id are older than the retention window and were dropped".into(),
                };
                let draft = Draft::new(EventType::StreamGap, now_ms(), None, &gap);
                if self.tx.try_send(Item::Event(Arc::new(draft.without_id()))).is_err() {
                    return Err(Stop::Cut("the consumer did not keep up".into()));
                }
            }
            for event in replay.events {
                self.deliver(Arc::new(event))?;
            }
            if !replay.more {
                return Ok(());
            }
        }
    }

    fn quote(&mut self, event: Arc<Event>) {
        if !self.filter.accepts(&event) {
            return;
        }
        let symbol = event.symbol.clone().unwrap_or_default();
        match self.quotes.get_mut(&symbol) {
            // Within the interval: the latest waits for the next flush.
            Some(slot) => *slot = (event, true),
            None => {
                let _ = self.tx.try_send(Item::Event(event.clone()));
                self.quotes.insert(symbol, (event, false));
            }
        }
    }

    /// Passes on the quotes that waited; a symbol with none waiting leaves
    /// the interval.
    fn flush_quotes(&mut self) {
        let tx = &self.tx;
        self.quotes.retain(|_, (event, waiting)| {
            if *waiting {
                let _ = tx.try_send(Item::Event(event.clone()));
                *waiting = false;
                true
            } else {
                false
            }
        });
    }

    async fn follow(&mut self, live: &mut broadcast::Receiver<Live>) -> Stop {
        let mut quotes = tokio::time::interval(self.settings.quote_interval.max(Duration::from_millis(1)));
        quotes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let heartbeat_every = self.settings.heartbeat.max(Duration::from_millis(10));
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat_every, heartbeat_every);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let step = tokio::select! {
                got = live.recv() => match got {
                    Ok(Live::Event { license, event }) => {
                        if *license != *self.license {
                            continue;
                        }
                        if event.id.is_some() {
                            self.deliver(event)
                        } else {
                            self.quote(event);
                            Ok(())
                        }
                    }
                    Ok(Live::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up(false).await,
                    Err(broadcast::error::RecvError::Closed) => Err(Stop::Cut("the server is shutting down".into())),
                },
                _ = quotes.tick() => {
                    self.flush_quotes();
                    Ok(())
                }
                _ = heartbeat.tick() => {
                    // Only when the buffer is empty: anything in it keeps the connection busy.
                    if self.tx.capacity() == self.tx.max_capacity() {
                        let _ = self.tx.try_send(Item::Heartbeat);
                    }
                    Ok(())
                }
                _ = self.tx.closed() => Err(Stop::Gone),
            };
            if let Err(stop) = step {
                return stop;
            }
        }
    }
}

/// The Server-Sent Events text of the stream (the WHATWG format).
pub mod sse {
    use super::Item;

    /// The first frame: how long a client waits before reconnecting (ms).
    pub fn preamble(retry_ms: u64) -> String {
        format!("retry: {retry_ms}\n: tradeterm event stream\n\n")
    }

    /// One item as an SSE frame: `id:` (durable events only), `event:` (the
    /// type) and `data:` (the event's JSON, one line); a heartbeat is a comment.
    pub fn frame(item: &Item) -> String {
        match item {
            Item::Heartbeat => ": heartbeat\n\n".to_owned(),
            Item::Event(event) => {
                let json = serde_json::to_string(&**event).unwrap_or_default();
                match event.id {
                    Some(id) => format!("id: {id}\nevent: {}\ndata: {json}\n\n", event.kind),
                    None => format!("event: {}\ndata: {json}\n\n", event.kind),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
