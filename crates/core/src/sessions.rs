//! Trading-session statistics and hourly range profiles from intraday bars.
//!
//! Sessions are fixed UTC windows, `[start, end)` in whole hours, without
//! daylight-saving adjustment:
//!
//! | session | UTC |
//! |---|---|
//! | Asia | 00:00–08:00 |
//! | London | 07:00–16:00 |
//! | New York | 12:00–21:00 |
//!
//! They overlap (London/Asia 07–08, London/New York 12–16), so a bar can
//! count for two sessions. A bar belongs to a session when its **open time**
//! falls in the window, so bars must be one hour or shorter. A UTC calendar
//! day is one day; only days that have bars count, so weekends without
//! quotes are skipped.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::Bar;
//! use tradeterm_core::sessions::session_stats;
//!
//! // Two days of hourly bars whose price rises through each day.
//! let bars: Vec<Bar> = (0..48)
//!     .map(|i| {
//!         let c = 1.0 + (i % 24) as f64 * 0.001;
//!         Bar { time: 1_767_571_200_000 + i * 3_600_000, open: c, high: c + 0.0005, low: c - 0.0005, close: c, volume: 1.0 }
//!     })
//!     .collect();
//! let stats = session_stats(&bars, 2)?;
//! assert_eq!(stats.days, 2);
//! let names: Vec<&str> = stats.sessions.iter().map(|s| s.name.as_str()).collect();
//! assert_eq!(names, ["asia", "london", "new_york"]);
//! assert_eq!(stats.sessions[0].typical_high_hour, Some(7)); // Asia peaks in its last hour
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::time::{DAY_MS, UnixMs, day_start, ms_of_day};
use crate::{Bar, CoreError};

/// Most days a statistic may cover.
pub const MAX_DAYS: usize = 365;

/// A fixed UTC session window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SessionWindow {
    /// Name (`asia`, `london`, `new_york`).
    pub name: &'static str,
    /// First hour (UTC, inclusive).
    pub start_hour: u8,
    /// End hour (UTC, exclusive).
    pub end_hour: u8,
}

/// The three sessions, in the order of the day.
pub const SESSIONS: [SessionWindow; 3] = [
    SessionWindow {
        name: "asia",
        start_hour: 0,
        end_hour: 8,
    },
    SessionWindow {
        name: "london",
        start_hour: 7,
        end_hour: 16,
    },
    SessionWindow {
        name: "new_york",
        start_hour: 12,
        end_hour: 21,
    },
];

fn hour_of(t: UnixMs) -> u8 {
    (ms_of_day(t) / 3_600_000) as u8
}

/// Statistics of one session over the days analysed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionSummary {
    /// `asia`, `london` or `new_york`.
    pub name: String,
    /// First hour, UTC (inclusive).
    pub start_hour: u8,
    /// End hour, UTC (exclusive).
    pub end_hour: u8,
    /// Days with at least one bar in the session.
    pub days: usize,
    /// Mean of the daily session ranges (high − low), price units.
    pub average_range: f64,
    /// Median of the daily session ranges.
    pub median_range: f64,
    /// Mean of `session range / day range` (0-1) over days with a non-zero day range.
    pub average_share_of_daily_range: f64,
    /// UTC hour in which the session's high was most often set (ties: earliest hour).
    pub typical_high_hour: Option<u8>,
    /// UTC hour in which the session's low was most often set (ties: earliest hour).
    pub typical_low_hour: Option<u8>,
    /// The most recent day's session.
    pub last: Option<SessionDay>,
}

/// One session on one day.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionDay {
    /// Midnight UTC of the day.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub day: UnixMs,
    /// Session high.
    pub high: f64,
    /// Open time of the bar that made the high (first one on a tie).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub high_time: UnixMs,
    /// Session low.
    pub low: f64,
    /// Open time of the bar that made the low (first one on a tie).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub low_time: UnixMs,
    /// `high − low`.
    pub range: f64,
}

/// Result of [`session_stats`].
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionStats {
    /// Days analysed (UTC days with bars), at most the `days` asked for.
    pub days: usize,
    /// First day analysed (midnight UTC).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub from_day: UnixMs,
    /// Last day analysed (midnight UTC).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub to_day: UnixMs,
    /// Mean daily range (high − low of all the day's bars).
    pub average_daily_range: f64,
    /// One entry per session.
    pub sessions: Vec<SessionSummary>,
}

fn check(bars: &[Bar], days: usize) -> Result<(), CoreError> {
    if days == 0 || days > MAX_DAYS {
        return Err(CoreError::param(
            "days",
            format!("must be within [1, {MAX_DAYS}], got {days}"),
        ));
    }
    crate::bars::validate_series(bars)?;
    if let Some(w) = bars.windows(2).find(|w| w[1].time - w[0].time <= 0) {
        return Err(CoreError::InvalidInput(format!(
            "bar times must increase (at {})",
            w[1].time
        )));
    }
    let step = bars.windows(2).map(|w| w[1].time - w[0].time).min();
    if step.is_some_and(|s| s > 3_600_000) {
        return Err(CoreError::InvalidInput(
            "session statistics need intraday bars of one hour or shorter (M1-H1)".into(),
        ));
    }
    Ok(())
}

/// The last `days` UTC days that have bars, each with its bars.
fn last_days(bars: &[Bar], days: usize) -> Vec<(UnixMs, Vec<Bar>)> {
    let mut by_day: BTreeMap<UnixMs, Vec<Bar>> = BTreeMap::new();
    for b in bars {
        by_day.entry(day_start(b.time)).or_default().push(*b);
    }
    let skip = by_day.len().saturating_sub(days);
    by_day.into_iter().skip(skip).collect()
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Median (mean of the two middle values for an even count); 0 when empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

fn mode_hour(hours: &[u8]) -> Option<u8> {
    let mut counts = [0usize; 24];
    for h in hours {
        counts[*h as usize % 24] += 1;
    }
    let best = *counts.iter().max()?;
    if best == 0 {
        return None;
    }
    counts.iter().position(|c| *c == best).map(|h| h as u8)
}

fn session_day(day: UnixMs, bars: &[Bar], w: &SessionWindow) -> Option<SessionDay> {
    let mut it = bars.iter().filter(|b| {
        let h = hour_of(b.time);
        h >= w.start_hour && h < w.end_hour
    });
    let first = it.next()?;
    let mut d = SessionDay {
        day,
        high: first.high,
        high_time: first.time,
        low: first.low,
        low_time: first.time,
        range: 0.0,
    };
    for b in it {
        if b.high > d.high {
            d.high = b.high;
            d.high_time = b.time;
        }
        if b.low < d.low {
            d.low = b.low;
            d.low_time = b.time;
        }
    }
    d.range = d.high - d.low;
    Some(d)
}

/// Per-session statistics over the last `days` UTC days of `bars`.
///
/// # Errors
/// [`CoreError::InvalidParameter`] for `days` outside 1..=365;
/// [`CoreError::InvalidInput`] for an empty or invalid series, times that do
/// not increase, or bars longer than one hour.
pub fn session_stats(bars: &[Bar], days: usize) -> Result<SessionStats, CoreError> {
    check(bars, days)?;
    let days_bars = last_days(bars, days);
    let day_ranges: Vec<(UnixMs, f64)> = days_bars
        .iter()
        .map(|(d, bs)| {
            let hi = bs.iter().map(|b| b.high).fold(f64::MIN, f64::max);
            let lo = bs.iter().map(|b| b.low).fold(f64::MAX, f64::min);
            (*d, hi - lo)
        })
        .collect();
    let sessions = SESSIONS
        .iter()
        .map(|w| {
            let per_day: Vec<(SessionDay, f64)> = days_bars
                .iter()
                .zip(&day_ranges)
                .filter_map(|((d, bs), (_, dr))| session_day(*d, bs, w).map(|s| (s, *dr)))
                .collect();
            let ranges: Vec<f64> = per_day.iter().map(|(s, _)| s.range).collect();
            let shares: Vec<f64> = per_day
                .iter()
                .filter(|(_, dr)| *dr > 0.0)
                .map(|(s, dr)| (s.range / dr).min(1.0))
                .collect();
            let high_hours: Vec<u8> = per_day.iter().map(|(s, _)| hour_of(s.high_time)).collect();
            let low_hours: Vec<u8> = per_day.iter().map(|(s, _)| hour_of(s.low_time)).collect();
            SessionSummary {
                name: w.name.to_string(),
                start_hour: w.start_hour,
                end_hour: w.end_hour,
                days: per_day.len(),
                average_range: mean(&ranges),
                median_range: median(&ranges),
                average_share_of_daily_range: mean(&shares),
                typical_high_hour: mode_hour(&high_hours),
                typical_low_hour: mode_hour(&low_hours),
                last: per_day.last().map(|(s, _)| s.clone()),
            }
        })
        .collect();
    let ranges: Vec<f64> = day_ranges.iter().map(|(_, r)| *r).collect();
    Ok(SessionStats {
        days: days_bars.len(),
        from_day: days_bars.first().map(|(d, _)| *d).unwrap_or(0),
        to_day: days_bars.last().map(|(d, _)| *d).unwrap_or(0),
        average_daily_range: mean(&ranges),
        sessions,
    })
}

/// Range statistics of one UTC hour.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HourProfile {
    /// UTC hour (0-23).
    pub hour: u8,
    /// Days with bars in this hour.
    pub samples: usize,
    /// Mean range (high − low of the hour's bars on one day).
    pub mean_range: f64,
    /// Median range.
    pub median_range: f64,
    /// `mean_range` divided by the mean over the hours with samples (1 = average).
    pub relative_activity: f64,
}

/// Result of [`session_profile`].
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionProfile {
    /// Days analysed.
    pub days: usize,
    /// 24 entries, hour 0 first.
    pub hours: Vec<HourProfile>,
    /// The three hours with the largest mean range, largest first (ties: earliest hour).
    pub most_active_hours: Vec<u8>,
    /// The three hours with the smallest mean range among hours with samples, smallest first.
    pub quietest_hours: Vec<u8>,
}

/// Typical range by UTC hour over the last `days` UTC days of `bars`.
///
/// # Errors
/// As [`session_stats`].
pub fn session_profile(bars: &[Bar], days: usize) -> Result<SessionProfile, CoreError> {
    check(bars, days)?;
    let days_bars = last_days(bars, days);
    let mut per_hour: Vec<Vec<f64>> = vec![Vec::new(); 24];
    for (_, bs) in &days_bars {
        let mut hl: BTreeMap<u8, (f64, f64)> = BTreeMap::new();
        for b in bs {
            let e = hl.entry(hour_of(b.time)).or_insert((b.high, b.low));
            e.0 = e.0.max(b.high);
            e.1 = e.1.min(b.low);
        }
        for (h, (hi, lo)) in hl {
            per_hour[h as usize].push(hi - lo);
        }
    }
    let means: Vec<Option<f64>> = per_hour
        .iter()
        .map(|v| if v.is_empty() { None } else { Some(mean(v)) })
        .collect();
    let active: Vec<f64> = means.iter().flatten().copied().collect();
    let overall = mean(&active);
    let hours: Vec<HourProfile> = per_hour
        .iter()
        .enumerate()
        .map(|(h, v)| HourProfile {
            hour: h as u8,
            samples: v.len(),
            mean_range: mean(v),
            median_range: median(v),
            relative_activity: if overall > 0.0 && !v.is_empty() {
                mean(v) / overall
            } else {
                0.0
            },
        })
        .collect();
    let mut ranked: Vec<(u8, f64)> = means
        .iter()
        .enumerate()
        .filter_map(|(h, m)| m.map(|m| (h as u8, m)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let most_active_hours = ranked.iter().take(3).map(|(h, _)| *h).collect();
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let quietest_hours = ranked.iter().take(3).map(|(h, _)| *h).collect();
    Ok(SessionProfile {
        days: days_bars.len(),
        hours,
        most_active_hours,
        quietest_hours,
    })
}

/// Bars of `timeframe` needed to cover `days` trading days, allowing for
/// weekends (7/5) and one spare day.
pub fn bars_for_days(days: usize, bar_ms: i64) -> usize {
    let per_day = (DAY_MS / bar_ms.max(1)) as usize;
    days.saturating_mul(7)
        .div_ceil(5)
        .saturating_add(1)
        .saturating_mul(per_day)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    fn hbar(t: i64, high: f64, low: f64) -> Bar {
        Bar {
            time: t,
            open: low,
            high,
            low,
            close: low,
            volume: 1.0,
        }
    }

    /// Two days of H1 bars: range 1 at every hour except 09:00 (range 3) and 14:00 (range 5, high 105).
    fn two_days() -> Vec<Bar> {
        let mut v = Vec::new();
        for d in 0..2 {
            for h in 0..24 {
                let t = d * DAY_MS + h * H;
                let (hi, lo) = match h {
                    9 => (102.0 + d as f64, 99.0 + d as f64),
                    14 => (105.0, 100.0),
                    _ => (101.0, 100.0),
                };
                v.push(hbar(t, hi, lo));
            }
        }
        v
    }

    #[test]
    fn stats_by_hand() {
        let s = session_stats(&two_days(), 5).unwrap();
        assert_eq!(s.days, 2);
        // Day 0: high 105, low 99 → 6; day 1: high 105, low 100 → 5.
        assert!((s.average_daily_range - 5.5).abs() < 1e-12);
        let asia = &s.sessions[0];
        assert_eq!((asia.days, asia.average_range), (2, 1.0));
        assert_eq!(asia.typical_high_hour, Some(0));
        let london = &s.sessions[1];
        // Day 0: 105 − 99 = 6; day 1: 105 − 100 = 5.
        assert!((london.average_range - 5.5).abs() < 1e-12);
        assert!((london.average_share_of_daily_range - 1.0).abs() < 1e-12);
        assert_eq!(london.typical_high_hour, Some(14));
        // Day 0's low is at 09:00, day 1's at 07:00 (all equal: the first bar); a tie → the earliest hour.
        assert_eq!(london.typical_low_hour, Some(7));
        let ny = &s.sessions[2];
        assert!((ny.average_range - 5.0).abs() < 1e-12);
        let last = ny.last.as_ref().unwrap();
        assert_eq!((last.day, last.high_time), (DAY_MS, DAY_MS + 14 * H));
        // Only the last day.
        assert_eq!(session_stats(&two_days(), 1).unwrap().days, 1);
    }

    #[test]
    fn profile_by_hand() {
        let p = session_profile(&two_days(), 2).unwrap();
        assert_eq!(p.hours.len(), 24);
        assert_eq!(p.hours[14].mean_range, 5.0);
        assert_eq!(p.hours[9].median_range, 3.0);
        assert_eq!(p.most_active_hours, vec![14, 9, 0]);
        // Mean over hours: (22 · 1 + 3 + 5) / 24 = 1.25.
        assert!((p.hours[14].relative_activity - 4.0).abs() < 1e-12);
        assert_eq!(p.quietest_hours, vec![0, 1, 2]);
    }

    #[test]
    fn bad_input() {
        assert!(session_stats(&[], 5).is_err());
        assert!(session_stats(&two_days(), 0).is_err());
        assert!(session_profile(&two_days(), 366).is_err());
        let daily = vec![hbar(0, 2.0, 1.0), hbar(DAY_MS, 2.0, 1.0)];
        assert!(matches!(session_stats(&daily, 5), Err(CoreError::InvalidInput(_))));
        let unordered = vec![hbar(H, 2.0, 1.0), hbar(0, 2.0, 1.0)];
        assert!(session_profile(&unordered, 5).is_err());
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
        assert_eq!(bars_for_days(5, H), 8 * 24);
    }

    #[test]
    fn real_data() {
        let bars = crate::bars::parse_csv(include_str!("../../../data/market/eurusd_15m_smc_upstream.csv")).unwrap();
        let s = session_stats(&bars, 60).unwrap();
        assert_eq!(s.days, 60);
        for sess in &s.sessions {
            assert!(sess.days > 30 && sess.average_range > 0.0);
            assert!((0.0..=1.0).contains(&sess.average_share_of_daily_range));
        }
        let p = session_profile(&bars, 60).unwrap();
        // EURUSD is busiest in the London / New York hours, not in late Asia.
        assert!(
            p.most_active_hours.iter().all(|h| (7..=17).contains(h)),
            "{:?}",
            p.most_active_hours
        );
    }
}
