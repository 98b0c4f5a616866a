//! Prices of one symbol as a pure function of time.
//!
//! Each symbol has a series of *base bars* (real hourly EUR/USD bars, real
//! daily S&P 500 bars, or seeded hourly bars) laid on the simulator's clock.
//! Inside a base bar the bid follows a seeded path through the bar's high and
//! low ([`bridge`]). Ticks sit on a grid of *slots* (one every
//! `tick_interval_ms`): a slot carries a tick with a probability that follows
//! the session, at a seeded offset inside the slot, with a session-dependent
//! spread. Everything is a function of (seed, symbol, time), so any past
//! instant can be recomputed, bars of any timeframe can be built for any range,
//! and the result never depends on how often the clock was read.

pub(crate) mod bridge;
mod model;
pub(crate) mod replay;

use serde::Serialize;
use tradeterm_core::time::{DAY_MS, day_start, weekday};
use tradeterm_core::{Bar, SymbolSpec, Timeframe};

use crate::rng::{hash, unit};
use crate::symbols::{Phase, Source, SymbolDef};

pub(crate) const HOUR: i64 = 3_600_000;
pub(crate) const WEEK: i64 = 7 * DAY_MS;
/// Most bars one `bars` request returns.
pub(crate) const MAX_BARS: u32 = 100_000;

/// A bar of a symbol's source series, placed on the simulator's clock, with
/// the seed of its inner path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BaseBar {
    pub start: i64,
    pub end: i64,
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
    pub key: u64,
}

/// A quote without its symbol name (the feed knows it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Quote {
    pub time: i64,
    pub bid: f64,
    pub ask: f64,
}

#[derive(Debug)]
enum Series {
    Hourly(replay::HourlyReplay),
    Daily(replay::DailyReplay),
    Model(Box<model::HourlyModel>),
}

impl Series {
    fn bar_at(&mut self, t: i64) -> Option<BaseBar> {
        match self {
            Self::Hourly(s) => s.bar_at(t),
            Self::Daily(s) => s.bar_at(t),
            Self::Model(s) => s.bar_at(t),
        }
    }

    fn prev_close(&mut self, t: i64) -> Option<f64> {
        match self {
            Self::Hourly(s) => s.prev_close(t),
            Self::Daily(s) => s.prev_close(t),
            Self::Model(s) => s.prev_close(t),
        }
    }

    fn bars_between(&mut self, a: i64, b: i64) -> Vec<BaseBar> {
        match self {
            Self::Hourly(s) => s.bars_between(a, b),
            Self::Daily(s) => s.bars_between(a, b),
            Self::Model(s) => s.bars_between(a, b),
        }
    }

    fn history_start(&self) -> i64 {
        match self {
            Self::Hourly(s) => s.history_start(),
            Self::Daily(s) => s.history_start(),
            Self::Model(s) => s.history_start(),
        }
    }
}

/// Open stretches of `[a, b)` according to the symbol's sessions, merged and
/// in order.
pub(crate) fn open_intervals(spec: &SymbolSpec, a: i64, b: i64) -> Vec<(i64, i64)> {
    if a >= b {
        return Vec::new();
    }
    if spec.sessions.is_empty() {
        return vec![(a, b)];
    }
    let mut out: Vec<(i64, i64)> = Vec::new();
    let mut ds = day_start(a);
    while ds < b {
        let wd = weekday(ds);
        for w in spec.sessions.iter().filter(|w| w.day == wd) {
            let x = a.max(ds + i64::from(w.open) * 60_000);
            let y = b.min(ds + i64::from(w.close) * 60_000);
            if x < y {
                out.push((x, y));
            }
        }
        ds += DAY_MS;
    }
    out.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(out.len());
    for (x, y) in out {
        match merged.last_mut() {
            Some(last) if last.1 >= x => last.1 = last.1.max(y),
            _ => merged.push((x, y)),
        }
    }
    merged
}

/// Latest instant at or before `t` when the symbol trades (looking back at
/// most 8 days).
pub(crate) fn prev_open_instant(spec: &SymbolSpec, t: i64) -> Option<i64> {
    if spec.sessions.is_empty() || spec.is_open(t) {
        return Some(t);
    }
    let day0 = day_start(t);
    (0..=8)
        .flat_map(|d| {
            let ds = day0 - d * DAY_MS;
            let wd = weekday(ds);
            spec.sessions
                .iter()
                .filter(move |w| w.day == wd && w.open < w.close)
                .map(move |w| ds + i64::from(w.close) * 60_000 - 1)
        })
        .filter(|&end| end <= t)
        .max()
}

/// Open time of the bar after the one opening at `open`.
fn next_bar_open(tf: Timeframe, open: i64) -> i64 {
    match tf {
        Timeframe::MN1 => tf.bar_open(open + 32 * DAY_MS),
        _ => open + tf.duration_ms(),
    }
}

/// One symbol's price source.
#[derive(Debug)]
pub(crate) struct Feed {
    pub spec: SymbolSpec,
    index: u64,
    seed: u64,
    spread_points: f64,
    interval: i64,
    series: Series,
    cache: Option<(BaseBar, Vec<(i64, f64)>)>,
}

impl Feed {
    /// `anchor` is the simulator's "now" at start-up: replayed data is laid
    /// out so that it ends there.
    pub(crate) fn new(def: &SymbolDef, index: usize, seed: u64, interval: i64, anchor: i64) -> Self {
        let key = hash(&[seed, index as u64, 0xFEED]);
        let model = |start: f64, sigma: f64| {
            Series::Model(Box::new(model::HourlyModel::new(&def.spec, start, sigma, anchor, key)))
        };
        let series = match def.source {
            Source::EurusdHourly => replay::HourlyReplay::new(replay::eurusd(), anchor, key)
                .map(Series::Hourly)
                .unwrap_or_else(|| model(1.1, 0.001)),
            Source::Sp500Daily => replay::DailyReplay::new(replay::sp500(), anchor, key)
                .map(Series::Daily)
                .unwrap_or_else(|| model(2500.0, 0.002)),
            Source::Model { start, sigma_hour } => model(start, sigma_hour),
        };
        Self {
            spec: def.spec.clone(),
            index: index as u64,
            seed,
            spread_points: def.spread_points,
            interval: interval.max(1),
            series,
            cache: None,
        }
    }

    pub(crate) fn history_start(&self) -> i64 {
        self.series.history_start()
    }

    fn knots(&mut self, bar: &BaseBar) -> &[(i64, f64)] {
        if self.cache.as_ref().is_none_or(|(b, _)| b != bar) {
            self.cache = Some((*bar, bridge::knots(bar)));
        }
        self.cache.as_ref().map(|(_, k)| k.as_slice()).unwrap_or(&[])
    }

    /// The (unrounded) bid path at `t`; the last close while no bar covers `t`.
    pub(crate) fn bid_path(&mut self, t: i64) -> Option<f64> {
        match self.series.bar_at(t) {
            Some(bar) => Some(bridge::interpolate(self.knots(&bar), t)),
            None => self.series.prev_close(t),
        }
    }

    /// The tick of slot `k`, if the slot carries one.
    pub(crate) fn tick_in_slot(&mut self, k: i64) -> Option<Quote> {
        let i = self.interval;
        let t = k * i + (hash(&[self.seed, self.index, k as u64, 0]) % i as u64) as i64;
        if !self.spec.is_open(t) {
            return None;
        }
        let phase = Phase::at(t);
        if unit(hash(&[self.seed, self.index, k as u64, 1])) >= phase.activity() {
            return None;
        }
        let path = self.bid_path(t)?;
        let bid = self.spec.normalize_price(path);
        let jitter = 0.85 + 0.4 * unit(hash(&[self.seed, self.index, k as u64, 2]));
        let spread = (self.spread_points * phase.spread() * jitter).round().max(1.0);
        let ask = self.spec.normalize_price(bid + spread * self.spec.point);
        Some(Quote { time: t, bid, ask })
    }

    /// Ticks with time in `(a, b]`, in order.
    pub(crate) fn ticks_between(&mut self, a: i64, b: i64) -> Vec<Quote> {
        if a >= b {
            return Vec::new();
        }
        let i = self.interval;
        let mut out = Vec::new();
        let mut k = a.div_euclid(i);
        let last = b.div_euclid(i);
        // End of the open stretch the current slot belongs to.
        let mut open_until = i64::MIN;
        while k <= last {
            let slot = k * i;
            if slot >= open_until {
                match open_intervals(&self.spec, slot, slot.saturating_add(8 * DAY_MS)).first() {
                    Some(&(x, y)) => {
                        open_until = y;
                        if x >= slot + i {
                            // Closed now: jump to the slot where trading resumes.
                            k = x.div_euclid(i).max(k + 1);
                            continue;
                        }
                    }
                    None => break,
                }
            }
            if let Some(q) = self.tick_in_slot(k)
                && q.time > a
                && q.time <= b
            {
                out.push(q);
            }
            k += 1;
        }
        out
    }

    /// The latest tick at or before `t`, searching back over closed markets.
    pub(crate) fn last_tick_at_or_before(&mut self, t: i64) -> Option<Quote> {
        let i = self.interval;
        let floor = self.history_start().div_euclid(i);
        let mut k = t.div_euclid(i);
        let mut budget = 1_000_000u32;
        while k >= floor && budget > 0 {
            budget -= 1;
            let slot = k * i;
            if open_intervals(&self.spec, slot, slot + i).is_empty() {
                let p = prev_open_instant(&self.spec, slot - 1)?;
                k = p.div_euclid(i).min(k - 1);
                continue;
            }
            if let Some(q) = self.tick_in_slot(k)
                && q.time <= t
            {
                return Some(q);
            }
            k -= 1;
        }
        None
    }

    /// Calls `f` with the bid path's values at the start, at each knot, and
    /// just before the end of `[x, y)`, in time order.
    fn visit(&mut self, x: i64, y: i64, f: &mut impl FnMut(f64)) {
        let mut cursor = x;
        for bar in self.series.bars_between(x, y) {
            let s = bar.start.max(x);
            let e = bar.end.min(y);
            if s >= e {
                continue;
            }
            if s > cursor
                && let Some(v) = self.series.prev_close(cursor)
            {
                f(v);
            }
            let knots = self.knots(&bar).to_vec();
            f(bridge::interpolate(&knots, s));
            knots.iter().filter(|k| k.0 > s && k.0 < e).for_each(|k| f(k.1));
            f(bridge::interpolate(&knots, e - 1));
            cursor = e;
        }
        if cursor < y
            && let Some(v) = self.series.prev_close(cursor)
        {
            f(v);
        }
    }

    /// Expected number of ticks in `[x, y)` (the bar's tick volume).
    fn expected_ticks(&self, x: i64, y: i64) -> f64 {
        let mut sum = 0.0;
        let mut cur = x;
        while cur < y {
            let next = y.min((cur.div_euclid(HOUR) + 1) * HOUR);
            sum += (next - cur) as f64 / self.interval as f64 * Phase::at(cur).activity();
            cur = next;
        }
        sum
    }

    /// The bid bar over the open parts of `[a, b)`, labelled `a`; `None` if
    /// the market never trades there (or there is no history yet).
    pub(crate) fn ohlc(&mut self, a: i64, b: i64) -> Option<Bar> {
        let mut first = None;
        let (mut hi, mut lo, mut last) = (f64::MIN, f64::MAX, 0.0);
        let mut volume = 0.0;
        for (x, y) in open_intervals(&self.spec, a, b) {
            self.visit(x, y, &mut |v| {
                first.get_or_insert(v);
                hi = hi.max(v);
                lo = lo.min(v);
                last = v;
            });
            volume += self.expected_ticks(x, y);
        }
        let open = first?;
        let n = |p: f64| self.spec.normalize_price(p);
        Some(Bar {
            time: a,
            open: n(open),
            high: n(hi),
            low: n(lo),
            close: n(last),
            volume: volume.round().max(1.0),
        })
    }

    /// Bars of `tf` up to `now` (inclusive): either the last `count` bars
    /// opening before `to`, or all bars opening in `[from, to)`.
    pub(crate) fn bars(
        &mut self,
        tf: Timeframe,
        count: Option<u32>,
        from: Option<i64>,
        to: Option<i64>,
        now: i64,
    ) -> Result<Vec<Bar>, String> {
        let end = now.saturating_add(1);
        // A range the request itself reverses is refused; one that starts
        // after the clock (`to` clamped to it) is the empty range it is.
        let reversed = matches!((from, to), (Some(f), Some(t)) if f > t);
        let to = to.unwrap_or(end).min(end);
        let hist = self.history_start();
        match (count, from) {
            (Some(_), Some(_)) => Err("give either `count` or `from`, not both".into()),
            (None, None) => Err("give `count` (the most recent bars) or `from` (a range)".into()),
            (Some(n), None) => {
                if n > MAX_BARS {
                    return Err(format!("count {n} is above the limit of {MAX_BARS} bars"));
                }
                let mut out = Vec::with_capacity(n as usize);
                if to <= hist {
                    return Ok(out);
                }
                let mut open = tf.bar_open(to - 1);
                while out.len() < n as usize && next_bar_open(tf, open) > hist {
                    match self.ohlc(open, next_bar_open(tf, open).min(end)) {
                        Some(bar) => {
                            out.push(bar);
                            open = tf.bar_open(open - 1);
                        }
                        // A closed bar: jump to the bar holding the latest open instant before it.
                        None => match prev_open_instant(&self.spec, open - 1) {
                            Some(p) => open = tf.bar_open(p),
                            None => break,
                        },
                    }
                }
                out.reverse();
                Ok(out)
            }
            (None, Some(from)) => {
                if reversed {
                    return Err("`from` is after `to`".into());
                }
                let mut out = Vec::new();
                let mut open = tf.bar_open(from.max(hist));
                if open < from {
                    open = next_bar_open(tf, open);
                }
                while open < to {
                    if out.len() >= MAX_BARS as usize {
                        return Err(format!(
                            "the range holds more than {MAX_BARS} bars; narrow it or use `count`"
                        ));
                    }
                    let next = next_bar_open(tf, open);
                    match self.ohlc(open, next.min(end)) {
                        Some(bar) => {
                            out.push(bar);
                            open = next;
                        }
                        None => {
                            // Jump forward over a closed stretch.
                            open = match next_open(&self.spec, next) {
                                Some(t) => next.max(tf.bar_open(t)),
                                None => break,
                            };
                        }
                    }
                }
                Ok(out)
            }
        }
    }
}

/// Next instant at or after `t` when the symbol trades (8 days ahead at most).
pub(crate) fn next_open(spec: &SymbolSpec, t: i64) -> Option<i64> {
    tradeterm_core::trading::next_session_open(spec, t)
}

#[cfg(test)]
mod tests {
    use tradeterm_core::time::parse_iso;

    use super::*;

    #[test]
    fn a_range_after_the_clock_is_empty_and_a_reversed_one_refused() {
        let now = parse_iso("2026-11-18T12:00:00Z").unwrap();
        let defs = crate::symbols::all();
        let mut feed = Feed::new(&defs[0], 0, 7, 1_000, now);
        let tf = Timeframe::H1;
        // `to` absent or after the clock is clamped to it: a `from` after the clock is the empty range.
        for to in [None, Some(now + 3 * DAY_MS)] {
            assert_eq!(
                feed.bars(tf, None, Some(now + DAY_MS), to, now),
                Ok(Vec::new()),
                "to {to:?}"
            );
        }
        // A range the request reverses stays refused.
        let e = feed
            .bars(tf, None, Some(now - HOUR), Some(now - 2 * HOUR), now)
            .unwrap_err();
        assert!(e.contains("`from` is after `to`"), "{e}");
        // 09:00, 10:00, 11:00 and the forming 12:00.
        assert_eq!(
            feed.bars(tf, None, Some(now - 3 * HOUR), None, now).map(|b| b.len()),
            Ok(4)
        );
    }
}
