//! Real bars replayed on the simulator's clock.
//!
//! **EURUSD** (hourly, `data/market/eurusd_1h_backtesting.csv`): the data is
//! trimmed to whole weeks (Saturday 00:00 to Saturday 00:00 UTC) and shifted
//! by a whole number of weeks so that its last week is the week containing
//! the clock's "now" at start-up: weekdays and hours of the data are kept,
//! so the data's weekends fall on the simulator's weekends. Before that lies
//! the real history; after it the data loops. Each loop `n` is scaled by
//! `(last close / first open)^n` so that it starts where the previous one
//! ended (no jump at the seam).
//!
//! **US500** (daily, `data/market/sp500_1d_arch.csv`): the trading days of
//! the data are laid on consecutive simulator weekdays (holidays of the data
//! simply disappear) so that the last data day is the latest weekday at or
//! before start-up; looping and scaling as above. A data day spans the whole
//! simulator day (the daily break has no ticks) and ends at 21:00 on Fridays.

use std::sync::OnceLock;

use tradeterm_core::Bar;
use tradeterm_core::time::DAY_MS;

use super::{BaseBar, HOUR, WEEK};
use crate::rng::hash;

static EURUSD_CSV: &str = include_str!("../../../../data/market/eurusd_1h_backtesting.csv");
static SP500_CSV: &str = include_str!("../../../../data/market/sp500_1d_arch.csv");

fn parsed(cell: &'static OnceLock<Vec<Bar>>, text: &str) -> &'static [Bar] {
    cell.get_or_init(|| match tradeterm_core::bars::parse_csv(text) {
        Ok(bars) => bars,
        Err(e) => {
            tracing::error!(error = %e, "embedded market data does not parse");
            Vec::new()
        }
    })
}

/// The embedded EUR/USD hourly bars.
pub(crate) fn eurusd() -> &'static [Bar] {
    static CELL: OnceLock<Vec<Bar>> = OnceLock::new();
    parsed(&CELL, EURUSD_CSV)
}

/// The embedded S&P 500 daily bars.
pub(crate) fn sp500() -> &'static [Bar] {
    static CELL: OnceLock<Vec<Bar>> = OnceLock::new();
    parsed(&CELL, SP500_CSV)
}

/// Saturday 00:00 UTC at or before `t` (1970-01-03 was a Saturday).
pub(crate) fn saturday_floor(t: i64) -> i64 {
    t - (t - 2 * DAY_MS).rem_euclid(WEEK)
}

fn ratio(first_open: f64, last_close: f64) -> f64 {
    let r = last_close / first_open;
    if r.is_finite() && r > 0.0 { r } else { 1.0 }
}

fn scaled(b: &Bar, start: i64, end: i64, scale: f64, key: u64) -> BaseBar {
    BaseBar {
        start,
        end,
        open: b.open * scale,
        high: b.high * scale,
        low: b.low * scale,
        close: b.close * scale,
        key,
    }
}

/// Hourly bars looped by whole weeks.
#[derive(Debug)]
pub(crate) struct HourlyReplay {
    bars: &'static [Bar],
    /// Data time of the first loop's start (a Saturday 00:00).
    d0: i64,
    /// Simulator time where loop 0 starts.
    l0: i64,
    /// Loop length (whole weeks).
    period: i64,
    ratio: f64,
    key: u64,
}

impl HourlyReplay {
    /// `None` if the data does not hold at least one whole week.
    pub(crate) fn new(data: &'static [Bar], anchor: i64, key: u64) -> Option<Self> {
        let first = data.first()?.time;
        let last = data.last()?.time;
        let d0 = {
            let f = saturday_floor(first);
            if f == first { f } else { f + WEEK }
        };
        let dend = saturday_floor(last + HOUR);
        if dend - d0 < WEEK {
            return None;
        }
        let lo = data.partition_point(|b| b.time < d0);
        let hi = data.partition_point(|b| b.time < dend);
        let bars = data.get(lo..hi).filter(|b| !b.is_empty())?;
        let period = dend - d0;
        let l0 = saturday_floor(anchor) + WEEK - period;
        Some(Self {
            bars,
            d0,
            l0,
            period,
            ratio: ratio(bars[0].open, bars[bars.len() - 1].close),
            key,
        })
    }

    fn locate(&self, t: i64) -> (i64, i64) {
        let rel = t - self.l0;
        (rel.div_euclid(self.period), self.d0 + rel.rem_euclid(self.period))
    }

    fn make(&self, idx: usize, n: i64) -> BaseBar {
        let b = &self.bars[idx];
        let start = b.time - self.d0 + self.l0 + n * self.period;
        let scale = self.ratio.powi(n.clamp(-1000, 1000) as i32);
        scaled(b, start, start + HOUR, scale, hash(&[self.key, n as u64, idx as u64]))
    }

    /// One loop before the one ending at start-up.
    pub(crate) fn history_start(&self) -> i64 {
        self.l0 - self.period
    }

    pub(crate) fn bar_at(&self, t: i64) -> Option<BaseBar> {
        if t < self.history_start() {
            return None;
        }
        let (n, d) = self.locate(t);
        let i = self.bars.partition_point(|b| b.time <= d);
        let b = self.bars.get(i.checked_sub(1)?)?;
        (d < b.time + HOUR).then(|| self.make(i - 1, n))
    }

    pub(crate) fn prev_close(&self, t: i64) -> Option<f64> {
        if t < self.history_start() {
            return None;
        }
        let (n, d) = self.locate(t);
        let i = self.bars.partition_point(|b| b.time + HOUR <= d);
        let bar = if i > 0 {
            self.make(i - 1, n)
        } else {
            self.make(self.bars.len() - 1, n - 1)
        };
        (bar.start >= self.history_start()).then_some(bar.close)
    }

    pub(crate) fn bars_between(&self, a: i64, b: i64) -> Vec<BaseBar> {
        let a = a.max(self.history_start());
        if a >= b {
            return Vec::new();
        }
        let (na, _) = self.locate(a);
        let (nb, _) = self.locate(b - 1);
        let mut out = Vec::new();
        for n in na..=nb {
            let loop_start = self.l0 + n * self.period;
            let from = a.max(loop_start) - loop_start + self.d0;
            let to = b.min(loop_start + self.period) - loop_start + self.d0;
            let i0 = self.bars.partition_point(|x| x.time + HOUR <= from);
            let i1 = self.bars.partition_point(|x| x.time < to);
            out.extend((i0..i1).map(|i| self.make(i, n)));
        }
        out
    }
}

/// Monday-to-Friday index of a day number (days since 1970-01-01), or `None`
/// on weekends. Consecutive weekdays have consecutive indices.
fn weekday_index(day: i64) -> Option<i64> {
    // 1970-01-05 (day 4) was a Monday.
    let m = day + 3;
    let dow = m.rem_euclid(7);
    (dow < 5).then(|| m.div_euclid(7) * 5 + dow)
}

fn day_of_weekday_index(w: i64) -> i64 {
    w.div_euclid(5) * 7 + w.rem_euclid(5) - 3
}

/// Daily bars laid on consecutive weekdays.
#[derive(Debug)]
pub(crate) struct DailyReplay {
    bars: &'static [Bar],
    /// Weekday index of data bar 0 in loop 0.
    w_first: i64,
    ratio: f64,
    key: u64,
}

impl DailyReplay {
    pub(crate) fn new(data: &'static [Bar], anchor: i64, key: u64) -> Option<Self> {
        let n = data.len() as i64;
        if n == 0 {
            return None;
        }
        let mut day = anchor.div_euclid(DAY_MS);
        let w_anchor = loop {
            if let Some(w) = weekday_index(day) {
                break w;
            }
            day -= 1;
        };
        Some(Self {
            bars: data,
            w_first: w_anchor - (n - 1),
            ratio: ratio(data[0].open, data[data.len() - 1].close),
            key,
        })
    }

    fn make(&self, w: i64) -> BaseBar {
        let len = self.bars.len() as i64;
        let g = w - self.w_first;
        let (n, i) = (g.div_euclid(len), g.rem_euclid(len));
        let start = day_of_weekday_index(w) * DAY_MS;
        let end = start + if w.rem_euclid(5) == 4 { 21 * HOUR } else { DAY_MS };
        let scale = self.ratio.powi(n.clamp(-1000, 1000) as i32);
        scaled(
            &self.bars[i as usize],
            start,
            end,
            scale,
            hash(&[self.key, n as u64, i as u64]),
        )
    }

    pub(crate) fn history_start(&self) -> i64 {
        day_of_weekday_index(self.w_first) * DAY_MS
    }

    pub(crate) fn bar_at(&self, t: i64) -> Option<BaseBar> {
        let w = weekday_index(t.div_euclid(DAY_MS))?;
        if w < self.w_first {
            return None;
        }
        let bar = self.make(w);
        (t < bar.end).then_some(bar)
    }

    pub(crate) fn prev_close(&self, t: i64) -> Option<f64> {
        let day = t.div_euclid(DAY_MS);
        for back in 0..8 {
            if let Some(w) = weekday_index(day - back) {
                if w < self.w_first {
                    return None;
                }
                let bar = self.make(w);
                if bar.end <= t {
                    return Some(bar.close);
                }
            }
        }
        None
    }

    pub(crate) fn bars_between(&self, a: i64, b: i64) -> Vec<BaseBar> {
        let a = a.max(self.history_start());
        if a >= b {
            return Vec::new();
        }
        (a.div_euclid(DAY_MS)..=(b - 1).div_euclid(DAY_MS))
            .filter_map(weekday_index)
            .filter(|&w| w >= self.w_first)
            .map(|w| self.make(w))
            .filter(|bar| bar.end > a && bar.start < b)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tradeterm_core::time::{parse_iso, weekday};

    #[test]
    fn embedded_data_parses() {
        assert_eq!(eurusd().len(), 5000);
        assert_eq!(sp500().len(), 5031);
    }

    #[test]
    fn hourly_replay_ends_in_the_current_week_and_loops_seamlessly() {
        let now = parse_iso("2026-11-18T12:34:00Z").unwrap(); // Wednesday
        let r = HourlyReplay::new(eurusd(), now, 1).unwrap();
        assert_eq!(r.period % WEEK, 0);
        // Loop 0 ends at the Saturday after now.
        assert_eq!(r.l0 + r.period, parse_iso("2026-11-21T00:00:00Z").unwrap());
        let bar = r.bar_at(now).expect("a data bar covers Wednesday noon");
        assert_eq!(weekday(bar.start), 3);
        assert_eq!(bar.start, parse_iso("2026-11-18T12:00:00Z").unwrap());
        // The last bar of loop 0 closes where loop 1 opens.
        let last0 = r.make(r.bars.len() - 1, 0);
        let first1 = r.make(0, 1);
        assert!((last0.close - first1.open).abs() < 1e-9);
        assert!(first1.start > last0.start);
        // Nothing before the history start.
        assert!(r.bar_at(r.history_start() - 1).is_none());
        let between = r.bars_between(now - 10 * HOUR, now + 1);
        assert!(between.len() >= 10);
        assert!(between.windows(2).all(|w| w[0].start < w[1].start));
        // Weekend: no bar, the Friday close holds.
        let sat = parse_iso("2026-11-14T12:00:00Z").unwrap();
        assert!(r.bar_at(sat).is_none());
        assert!(r.prev_close(sat).is_some());
    }

    #[test]
    fn daily_replay_maps_weekdays() {
        let sun = parse_iso("2026-11-22T10:00:00Z").unwrap();
        let r = DailyReplay::new(sp500(), sun, 2).unwrap();
        // The last data bar lands on Friday 2026-11-20.
        let fri = parse_iso("2026-11-20T10:00:00Z").unwrap();
        let bar = r.bar_at(fri).unwrap();
        assert!((bar.close - sp500()[sp500().len() - 1].close).abs() < 1e-9);
        assert_eq!(bar.end, parse_iso("2026-11-20T21:00:00Z").unwrap());
        assert!(r.bar_at(sun).is_none());
        assert!((r.prev_close(sun).unwrap() - bar.close).abs() < 1e-9);
        let mon = parse_iso("2026-11-23T10:00:00Z").unwrap();
        let next = r.bar_at(mon).unwrap();
        assert!((next.open - bar.close).abs() < 1e-6, "seamless loop");
        for d in 0..40 {
            let w = weekday_index(d);
            if let Some(w) = w {
                assert_eq!(day_of_weekday_index(w), d);
            }
        }
        assert_eq!(r.bars_between(fri - 3 * DAY_MS, fri + DAY_MS).len(), 4);
    }
}
