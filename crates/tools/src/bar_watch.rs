//! The bars' push side: `bar.closed` events (`docs/events.md`).
//!
//! A stream asks for bars with `symbols` and `timeframes`; the event route
//! registers each (symbol, timeframe) pair in the process's
//! [`BarInterests`] while the stream is open. This watcher, one per API
//! process, follows the pushed quotes on the event pipeline's live feed
//! and keeps, per wanted (license, terminal, symbol, timeframe), the open
//! time of the bar the terminal is forming, as the terminal labels it.
//!
//! - **A new period**: a quote whose terminal time is at or past the end of
//!   that bar ([`period_end`]). MetaTrader forms a bar only on a tick, so the
//!   first quote of a period is also when the terminal shows the new bar.
//! - **The closed bar is read from the terminal** (the `bars` command,
//!   what `get_bars` runs, on the license's own dispatch path): the bars
//!   opened from the forming bar up to that quote ([`settle`]). Every bar
//!   the terminal returns before its newest one is closed and published,
//!   oldest first: the previous period's bar, and any the feed skipped
//!   (quotes are conflated). A bar the terminal does not return (no ticks
//!   in it, a gap in its history) is never published; nothing is made up.
//!   Until the terminal shows a bar after the forming one, nothing is
//!   published, so a calendar guessed wrong can delay a bar but never
//!   publish one still forming.
//! - **The calendar is the terminal's**: the first quote of an interest
//!   reads the bar forming at that quote's time, and periods follow from its
//!   label. So a server's time zone (a D1 bar opening at 22:00 UTC), weeks
//!   starting on Sunday (MetaTrader) or Monday (the simulator) and calendar
//!   months all come out as the terminal has them.
//! - **Once across instances**: a `SET NX` in Redis per license, terminal,
//!   symbol, timeframe and bar time (kept 6 h), and in memory the newest bar
//!   published per interest; without Redis the process's memory alone.
//!
//! A stream receives the bars that close while it is open (and, resumed,
//! those retained in the log). After a gap in quotes of more than
//! [`MAX_CATCH_UP`] periods only the latest of them are published.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use tradeterm_core::time::{DAY_MS, UnixMs};
use tradeterm_core::{Bar, Timeframe};
use tradeterm_events::interest::BarInterests;
use tradeterm_events::model::{BarClosedData, QuoteData};
use tradeterm_events::{Draft, EventType, Live, Publisher};

use crate::{Caller, Services, ToolContext};

/// How long a published bar is remembered (Redis and memory): far longer
/// than two instances take to see the same quote.
const REMEMBER: Duration = Duration::from_secs(6 * 3600);

/// Most closed bars one read publishes after a gap in quotes (the latest).
pub const MAX_CATCH_UP: i64 = 100;

/// Timing of the watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarWatchSettings {
    /// Dispatch timeout of one bars read (default 5 s).
    pub timeout: Duration,
    /// First wait before a read is tried again, after a failure or while
    /// the terminal shows no bar after the forming one (default 250 ms);
    /// doubled each time up to [`BarWatchSettings::max_retry`].
    pub retry: Duration,
    /// Longest wait between two tries (default 30 s).
    pub max_retry: Duration,
    /// How often the state of interests no stream holds any more is dropped (default 10 s).
    pub prune_interval: Duration,
}

impl Default for BarWatchSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            retry: Duration::from_millis(250),
            max_retry: Duration::from_secs(30),
            prune_interval: Duration::from_secs(10),
        }
    }
}

/// A running watcher; [`BarWatchHandle::stop`] stops it.
#[derive(Debug)]
pub struct BarWatchHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl BarWatchHandle {
    /// Stops the watcher and waits for it (a read under way is left to end alone).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// When the bar the terminal opened at `open` ends, by the terminal's own
/// calendar: one period after its label. The label tells the server's
/// offset from UTC (a D1 bar opening at 22:00 UTC is a server two hours
/// ahead), so a month ends at the next calendar month's start in that
/// offset, whatever its length; a week ends seven days after its label,
/// whichever day the terminal starts weeks on.
pub fn period_end(timeframe: Timeframe, open: UnixMs) -> UnixMs {
    match timeframe {
        Timeframe::MN1 => {
            // The server's offset, within ±12 h, from the label's time of day.
            let r = open.rem_euclid(DAY_MS);
            let offset = if r >= DAY_MS / 2 { DAY_MS - r } else { -r };
            let local = open + offset;
            Timeframe::MN1.bar_open(local + 32 * DAY_MS) - offset
        }
        tf => open + tf.duration_ms(),
    }
}

/// What a quote asks of one interest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Nothing: the bar the terminal forms has not ended.
    Nothing,
    /// Learn the bar the terminal forms at the quote's time.
    Learn,
    /// A new period began: read the bars opened from `from` up to the quote.
    Closed {
        /// The forming bar's open time (later after a long gap: [`MAX_CATCH_UP`]).
        from: UnixMs,
    },
}

/// What a quote at `time` asks of an interest whose terminal forms the bar
/// opened at `forming` (`None`: not learned yet).
fn need(timeframe: Timeframe, forming: Option<UnixMs>, time: UnixMs) -> Need {
    match forming {
        None => Need::Learn,
        Some(open) if time < period_end(timeframe, open) => Need::Nothing,
        Some(open) => Need::Closed {
            from: open.max(time - MAX_CATCH_UP * timeframe.duration_ms()),
        },
    }
}

/// What a read of the bars opened since the forming one shows.
#[derive(Debug, Clone, PartialEq)]
struct Settled {
    /// Closed bars, oldest first: every bar returned before the newest one.
    closed: Vec<Bar>,
    /// The newest bar's open time: the bar forming now.
    forming: UnixMs,
}

/// The closed bars in `bars` (the terminal's answer for the bars opened at
/// or after `forming`, oldest first), or `None` while the terminal shows no
/// bar after `forming` yet. A malformed bar is left out.
fn settle(forming: UnixMs, bars: &[Bar]) -> Option<Settled> {
    let newest = bars.iter().map(|b| b.time).max()?;
    if newest <= forming {
        return None;
    }
    let mut closed: Vec<Bar> = bars
        .iter()
        .filter(|b| b.time >= forming && b.time < newest && b.validate().is_ok())
        .copied()
        .collect();
    closed.sort_by_key(|b| b.time);
    closed.dedup_by_key(|b| b.time);
    Some(Settled {
        closed,
        forming: newest,
    })
}

/// (license, terminal, symbol, timeframe).
type Key = (String, String, String, Timeframe);

/// Where one interest stands.
#[derive(Debug, Clone, Copy, Default)]
struct Track {
    /// Open time of the bar the terminal forms (its own label), once learned.
    forming: Option<UnixMs>,
    /// A read is under way (one at a time per interest: bars go out in order).
    reading: bool,
    /// No read before this.
    not_before: Option<Instant>,
    /// The wait before the next try after this one fails.
    backoff: Duration,
}

/// How a read ended.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// The bar forming now (`Learn`, or a read that published what closed).
    Forming(UnixMs),
    /// Nothing to go on yet: no bar, the terminal shows no later bar, or
    /// the read failed. Tried again after the backoff.
    Retry,
}

/// Newest bar time published per interest by this process, and when.
type Published = Arc<Mutex<HashMap<Key, (UnixMs, Instant)>>>;

/// Starts the watcher (nothing is watched without an event pipeline).
pub fn spawn(services: Arc<Services>, settings: BarWatchSettings) -> BarWatchHandle {
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        let Some(events) = services.events.clone() else {
            let _ = stopped.changed().await;
            return;
        };
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let watcher = Watcher {
            interests: events.bar_interests().clone(),
            live: events.bus().live(),
            events,
            services,
            settings,
            tracks: HashMap::new(),
            published: Arc::default(),
            done_tx,
        };
        watcher.run(stopped, done_rx).await;
    });
    BarWatchHandle { stop, task }
}

struct Watcher {
    services: Arc<Services>,
    events: Publisher,
    interests: Arc<BarInterests>,
    live: broadcast::Receiver<Live>,
    settings: BarWatchSettings,
    tracks: HashMap<Key, Track>,
    published: Published,
    done_tx: mpsc::UnboundedSender<(Key, Outcome)>,
}

impl Watcher {
    async fn run(mut self, mut stopped: watch::Receiver<bool>, mut done: mpsc::UnboundedReceiver<(Key, Outcome)>) {
        let mut prune = tokio::time::interval(self.settings.prune_interval.max(Duration::from_millis(10)));
        prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stopped.changed() => break,
                got = self.live.recv() => match got {
                    Ok(Live::Event { license, event }) if event.kind == EventType::Quote => {
                        let (Some(terminal), Some(symbol)) = (event.terminal_id.as_deref(), event.symbol.as_deref()) else {
                            continue;
                        };
                        self.on_quote(&license, terminal, symbol, &event.data);
                    }
                    Ok(_) => {}
                    // Skipped quotes: the next one tells the period as well.
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::debug!(skipped = n, "bar watcher: live events skipped");
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                Some((key, outcome)) = done.recv() => self.on_outcome(key, outcome),
                _ = prune.tick() => self.prune(),
            }
        }
    }

    /// A quote of `symbol` (its `data`) from `terminal` of `license`.
    fn on_quote(&mut self, license: &str, terminal: &str, symbol: &str, data: &serde_json::Value) {
        // Most quotes are of symbols nobody asked bars of: asked first.
        let wanted = self.interests.timeframes(license, terminal, symbol);
        if wanted.is_empty() {
            return;
        }
        let Ok(quote) = QuoteData::deserialize(data) else {
            return;
        };
        let now = Instant::now();
        for timeframe in wanted {
            let key: Key = (license.to_owned(), terminal.to_owned(), quote.symbol.clone(), timeframe);
            let track = self.tracks.entry(key.clone()).or_default();
            if track.reading || track.not_before.is_some_and(|at| now < at) {
                continue;
            }
            let step = need(timeframe, track.forming, quote.time);
            if step == Need::Nothing {
                continue;
            }
            track.reading = true;
            let read = Read {
                services: self.services.clone(),
                events: self.events.clone(),
                published: self.published.clone(),
                timeout: self.settings.timeout,
                key: key.clone(),
                forming: track.forming,
                time: quote.time,
            };
            let done = self.done_tx.clone();
            tokio::spawn(async move {
                let outcome = match step {
                    Need::Closed { from } => read.closed(from).await,
                    _ => read.learn().await,
                };
                let _ = done.send((read.key, outcome));
            });
        }
    }

    fn on_outcome(&mut self, key: Key, outcome: Outcome) {
        let (license, terminal, symbol, timeframe) = &key;
        if !self.interests.wants(license, terminal, symbol, *timeframe) {
            self.tracks.remove(&key);
            return;
        }
        let Some(track) = self.tracks.get_mut(&key) else { return };
        track.reading = false;
        match outcome {
            Outcome::Forming(open) => {
                track.forming = Some(open);
                track.not_before = None;
                track.backoff = Duration::ZERO;
            }
            Outcome::Retry => {
                let wait = track.backoff.max(self.settings.retry).min(self.settings.max_retry);
                track.not_before = Some(Instant::now() + wait);
                track.backoff = (wait * 2).min(self.settings.max_retry);
            }
        }
    }

    /// Drops the state of interests no stream holds (a read under way ends first).
    fn prune(&mut self) {
        let interests = &self.interests;
        self.tracks
            .retain(|(l, t, s, tf), track| track.reading || interests.wants(l, t, s, *tf));
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, (_, at)| at.elapsed() < REMEMBER);
    }
}

/// One read of an interest's bars, on its own task.
struct Read {
    services: Arc<Services>,
    events: Publisher,
    published: Published,
    timeout: Duration,
    key: Key,
    forming: Option<UnixMs>,
    /// The terminal time of the quote that asked.
    time: UnixMs,
}

impl Read {
    fn context(&self) -> ToolContext {
        let caller = Caller {
            license_id: self.key.0.clone(),
            credential: "bar-watch".into(),
            caps: Vec::new(),
        };
        let mut ctx = ToolContext::new(self.services.clone(), caller, Some(self.key.1.clone()));
        ctx.timeout = self.timeout.min(ctx.timeout);
        ctx
    }

    /// The bar the terminal formed at the quote's time (its last bar opened at or before it).
    async fn learn(&self) -> Outcome {
        let (_, terminal, symbol, timeframe) = &self.key;
        let bars =
            crate::market::fetch_bars(&self.context(), symbol, *timeframe, Some(1), None, Some(self.time + 1)).await;
        match bars {
            Ok(bars) => match bars.last() {
                Some(bar) => Outcome::Forming(bar.time),
                None => Outcome::Retry,
            },
            Err(e) => {
                tracing::debug!(%terminal, %symbol, %timeframe, error = %e, "bar watcher: the forming bar not read");
                Outcome::Retry
            }
        }
    }

    /// The bars opened from `from` up to the quote: the closed ones published.
    async fn closed(&self, from: UnixMs) -> Outcome {
        let (_, terminal, symbol, timeframe) = &self.key;
        let forming = self.forming.unwrap_or(from);
        let bars = crate::market::fetch_bars(
            &self.context(),
            symbol,
            *timeframe,
            None,
            Some(from),
            Some(self.time + 1),
        )
        .await;
        let bars = match bars {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(%terminal, %symbol, %timeframe, error = %e, "bar watcher: the closed bars not read");
                return Outcome::Retry;
            }
        };
        let Some(settled) = settle(forming, &bars) else {
            return Outcome::Retry;
        };
        for bar in settled.closed {
            if self.first_time(bar.time).await {
                self.publish(bar);
            }
        }
        Outcome::Forming(settled.forming)
    }

    fn publish(&self, bar: Bar) {
        let (license, terminal, symbol, timeframe) = &self.key;
        let data = BarClosedData {
            symbol: symbol.clone(),
            timeframe: *timeframe,
            bar,
        };
        let draft = Draft::new(EventType::BarClosed, tradeterm_events::now_ms(), Some(terminal), &data);
        self.events.publish(license, draft);
    }

    /// Whether this bar is published here for the first time by any instance.
    async fn first_time(&self, bar_time: UnixMs) -> bool {
        {
            let mut published = self.published.lock().unwrap_or_else(PoisonError::into_inner);
            if published.get(&self.key).is_some_and(|(newest, _)| *newest >= bar_time) {
                return false;
            }
            published.insert(self.key.clone(), (bar_time, Instant::now()));
        }
        let Some(pool) = &self.services.rate_limits.redis else {
            return true;
        };
        let (license, terminal, symbol, timeframe) = &self.key;
        let redis_key = format!("tt:bar-closed:{license}:{terminal}:{symbol}:{timeframe}:{bar_time}");
        let claimed: Result<Option<String>, String> = async {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            deadpool_redis::redis::cmd("SET")
                .arg(&redis_key)
                .arg(1)
                .arg("NX")
                .arg("EX")
                .arg(REMEMBER.as_secs())
                .query_async(&mut conn)
                .await
                .map_err(|e| e.to_string())
        }
        .await;
        match claimed {
            Ok(v) => v.is_some(),
            // Redis away: publish (another instance may too; a client
            // deduplicates by symbol, timeframe and bar time).
            Err(e) => {
                tracing::warn!(error = %e, "bar watcher: Redis unavailable; publishing without the cross-instance check");
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tradeterm_core::time::parse_iso;

    use super::*;

    fn t(iso: &str) -> UnixMs {
        parse_iso(iso).unwrap()
    }

    fn bar(time: UnixMs) -> Bar {
        Bar {
            time,
            open: 1.1,
            high: 1.2,
            low: 1.0,
            close: 1.15,
            volume: 10.0,
        }
    }

    #[test]
    fn a_period_ends_one_period_after_the_terminal_s_label() {
        use Timeframe::*;
        let noon = t("2026-11-18T12:00:00Z");
        for (tf, end) in [
            (M1, "2026-11-18T12:01:00Z"),
            (M5, "2026-11-18T12:05:00Z"),
            (M15, "2026-11-18T12:15:00Z"),
            (M30, "2026-11-18T12:30:00Z"),
            (H1, "2026-11-18T13:00:00Z"),
            (H4, "2026-11-18T16:00:00Z"),
            (D1, "2026-11-19T12:00:00Z"),
        ] {
            assert_eq!(period_end(tf, noon), t(end), "{tf}");
        }
        // A server two hours ahead of UTC: its days open at 22:00 UTC.
        assert_eq!(period_end(D1, t("2026-11-17T22:00:00Z")), t("2026-11-18T22:00:00Z"));
        // Weeks: MetaTrader's start on Sunday (server time: Saturday 22:00
        // UTC at +2), the simulator's on Monday; both last seven days.
        assert_eq!(period_end(W1, t("2026-11-14T22:00:00Z")), t("2026-11-21T22:00:00Z"));
        assert_eq!(period_end(W1, t("2026-11-15T00:00:00Z")), t("2026-11-22T00:00:00Z"));
        assert_eq!(period_end(W1, Timeframe::W1.bar_open(noon)), t("2026-11-23T00:00:00Z"));
        // Calendar months, whatever their length, in the server's offset.
        for (open, end) in [
            ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
            ("2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"),
            ("2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"),
            ("2027-02-01T00:00:00Z", "2027-03-01T00:00:00Z"),
            ("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
            // UTC+2: 1 November 00:00 server time.
            ("2026-10-31T22:00:00Z", "2026-11-30T22:00:00Z"),
            ("2028-01-31T22:00:00Z", "2028-02-29T22:00:00Z"),
            // UTC-5.
            ("2026-11-01T05:00:00Z", "2026-12-01T05:00:00Z"),
            ("2026-12-01T05:00:00Z", "2027-01-01T05:00:00Z"),
        ] {
            assert_eq!(period_end(MN1, t(open)), t(end), "{open}");
        }
    }

    #[test]
    fn a_quote_in_a_later_period_asks_for_the_closed_bars() {
        use Timeframe::*;
        let open = t("2026-11-18T12:00:00Z");
        assert_eq!(need(M1, None, open + 30_000), Need::Learn);
        assert_eq!(need(M1, Some(open), open + 59_999), Need::Nothing);
        assert_eq!(need(M1, Some(open), open + 60_000), Need::Closed { from: open });
        assert_eq!(
            need(M1, Some(open), open + 3 * 60_000 + 5),
            Need::Closed { from: open },
            "periods skipped by the feed are read too"
        );
        // A Sunday-labelled week (UTC+2) ends on the next Saturday 22:00 UTC.
        let week = t("2026-11-14T22:00:00Z");
        assert_eq!(need(W1, Some(week), t("2026-11-21T21:59:59Z")), Need::Nothing);
        assert_eq!(
            need(W1, Some(week), t("2026-11-21T22:00:00Z")),
            Need::Closed { from: week }
        );
        // November's bar is closed by the first quote of December, not of the 30th.
        let month = t("2026-11-01T00:00:00Z");
        assert_eq!(need(MN1, Some(month), t("2026-11-30T23:59:59Z")), Need::Nothing);
        assert_eq!(
            need(MN1, Some(month), t("2026-12-01T00:00:01Z")),
            Need::Closed { from: month }
        );
        // After a long gap only the latest periods are read.
        let later = open + 1_000 * 60_000;
        assert_eq!(
            need(M1, Some(open), later),
            Need::Closed {
                from: later - MAX_CATCH_UP * 60_000
            }
        );
    }

    #[test]
    fn only_bars_the_terminal_returns_before_its_newest_are_closed() {
        let m = 60_000;
        let f = t("2026-11-18T12:00:00Z");
        // The previous period's bar and the new one: the first is closed.
        assert_eq!(
            settle(f, &[bar(f), bar(f + m)]),
            Some(Settled {
                closed: vec![bar(f)],
                forming: f + m
            })
        );
        // Periods the feed skipped: every bar before the newest, in order.
        let got = settle(f, &[bar(f), bar(f + m), bar(f + 3 * m), bar(f + 4 * m)]).unwrap();
        assert_eq!(
            got.closed.iter().map(|b| b.time).collect::<Vec<_>>(),
            [f, f + m, f + 3 * m],
            "no bar for the minute without ticks"
        );
        assert_eq!(got.forming, f + 4 * m);
        // The terminal does not show a later bar yet: nothing, not even the forming one.
        assert_eq!(settle(f, &[bar(f)]), None);
        assert_eq!(settle(f, &[]), None);
        // The forming bar is missing from the terminal's history: nothing made up for it.
        assert_eq!(
            settle(f, &[bar(f + 2 * m)]),
            Some(Settled {
                closed: vec![],
                forming: f + 2 * m
            })
        );
        // A malformed bar is left out; bars before the forming one too.
        let mut broken = bar(f + m);
        broken.high = 0.5;
        let got = settle(f, &[bar(f - m), bar(f), broken, bar(f + 2 * m)]).unwrap();
        assert_eq!(got.closed, vec![bar(f)]);
    }
}
