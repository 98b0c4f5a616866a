//! Holding risk and event sensitivity: what a position held over a window
//! is exposed to (economic releases, market closures it would be held
//! through, triple-swap rollovers), and how a symbol reacted to past releases
//! (pure functions; the tools fetch the data).
//!
//! # Holding-risk rules
//!
//! Over the hold window `[from, until)`:
//!
//! - **event landings**: releases of at least medium importance whose
//!   currency is one of the symbol's;
//! - **gap exposure**: the market closures the position is held through,
//!   from the symbol's weekly trading sessions; a closure that covers part of
//!   a Saturday or lasts 24 h or more is a *weekend* closure, a shorter one of
//!   at least [`MIN_GAP_MS`] (2 h) a *market break* (shorter daily breaks are
//!   ignored). Market holidays are not in the weekly sessions (no terminal
//!   reports them there) and are therefore not seen here;
//! - **holidays**: public holidays of the symbol's currencies from the
//!   calendar (events of category [`crate::events::HOLIDAY_CATEGORY`]), each lasting the
//!   day from its time, that overlap the window: that currency's banks are
//!   closed, liquidity is thin and prices can gap;
//! - **triple swap**: rollovers inside the window that charge three nights.
//!
//! The level is `high` when a high-importance release lands or a weekend
//! closure is held through, `medium` when a medium-importance release lands,
//! a market break or a holiday is held through or a triple-swap rollover
//! falls inside, and `low` otherwise. The verdict ([`RiskLevel::verdict`]) is
//! `block` when a high-importance release lands, `caution` for any other
//! exposure and `proceed` for `low`.
//!
//! # Event sensitivity
//!
//! For a release at `t` and a reaction window `w`, on bars of duration `d`:
//! the *price before* is the close of the last bar that closed at or before
//! `t` (at most `2·d` before it, else the market was closed and the event is
//! skipped), the *price after* the close of the last bar that closed at or
//! before `t + w`; the *move* is their difference and the *range* the
//! highest high minus the lowest low of the bars that opened in `[t, t + w)`.
//! The *baseline* is the same absolute move measured from every bar close at
//! least `w` away from every release (so quiet times only); the sensitivity
//! is the median absolute event move divided by the median baseline move.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::holding::closures;
//! use tradeterm_core::market::SessionWindow;
//! use tradeterm_core::time::{DAY_MS, parse_iso};
//!
//! // Open Monday to Friday around the clock: the weekend is the only closure.
//! let sessions: Vec<SessionWindow> = (1..=5).map(|day| SessionWindow { day, open: 0, close: 1440 }).collect();
//! let monday = parse_iso("2026-11-16T00:00:00Z")?;
//! let closed = closures(&sessions, monday, monday + 7 * DAY_MS);
//! assert_eq!(closed.len(), 1);
//! assert!(closed[0].weekend);
//! assert_eq!(closed[0].start, monday + 5 * DAY_MS); // Saturday 00:00 UTC
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::events::{EconomicEvent, Importance, Verdict};
use crate::market::SessionWindow;
use crate::time::{DAY_MS, UnixMs, weekday};
use crate::{Bar, CoreError};

/// Shortest closure that counts as gap exposure (2 h).
pub const MIN_GAP_MS: i64 = 2 * 3_600_000;
/// Longest hold window (31 days).
pub const MAX_HOLD_MS: i64 = 31 * DAY_MS;

/// A period during which the market is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closure {
    /// When trading stops, unix ms.
    pub start: UnixMs,
    /// When trading resumes, unix ms.
    pub end: UnixMs,
    /// Whether it is a weekend closure (covers part of a Saturday, or lasts 24 h or more).
    pub weekend: bool,
}

/// The market closures that overlap `[from, until)`, from weekly sessions
/// (UTC). No sessions means always open. A closure that started before
/// `from` or ends after `until` is clipped to the window.
pub fn closures(sessions: &[SessionWindow], from: UnixMs, until: UnixMs) -> Vec<Closure> {
    if sessions.is_empty() || from >= until {
        return Vec::new();
    }
    // Open intervals, absolute, from the day before `from` to the day after `until`.
    let first_day = from.div_euclid(DAY_MS) - 1;
    let last_day = until.div_euclid(DAY_MS) + 1;
    let mut open: Vec<(UnixMs, UnixMs)> = Vec::new();
    for day in first_day..=last_day {
        let midnight = day * DAY_MS;
        let wd = weekday(midnight);
        let mut windows: Vec<&SessionWindow> = sessions.iter().filter(|w| w.day == wd && w.open < w.close).collect();
        windows.sort_by_key(|w| w.open);
        for w in windows {
            let (s, e) = (
                midnight + i64::from(w.open) * 60_000,
                midnight + i64::from(w.close.min(1440)) * 60_000,
            );
            match open.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => open.push((s, e)),
            }
        }
    }
    let mut out = Vec::new();
    for pair in open.windows(2) {
        let (start, end) = (pair[0].1, pair[1].0);
        if end <= from || start >= until {
            continue;
        }
        let saturday = (start.div_euclid(DAY_MS)..=(end - 1).div_euclid(DAY_MS)).any(|d| weekday(d * DAY_MS) == 6);
        out.push(Closure {
            start: start.max(from),
            end: end.min(until),
            weekend: saturday || end - start >= DAY_MS,
        });
    }
    out
}

/// How much a hold window is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    /// Nothing flagged.
    Low,
    /// A medium-importance release, a market break, a holiday or a triple-swap rollover.
    Medium,
    /// A high-importance release or a weekend closure.
    High,
}

impl RiskLevel {
    /// The verdict of the spec's value set (`proceed|caution|block`):
    /// `block` only when a high-importance release of the symbol's
    /// currencies lands in the hold (as `get_event_risk` blocks around such
    /// releases), `caution` for any other exposure (`medium` or `high`: a
    /// weekend or holiday gap, a market break, a medium release, a
    /// triple-swap night, or no calendar), `proceed` for `low`. A weekend
    /// held through is a gap risk to size for, not a reason to refuse the
    /// trade, so it alone does not block.
    pub fn verdict(self, high_release_lands: bool) -> Verdict {
        match self {
            _ if high_release_lands => Verdict::Block,
            Self::Low => Verdict::Proceed,
            Self::Medium | Self::High => Verdict::Caution,
        }
    }
}

impl HoldingRisk {
    /// Whether a high-importance release lands in the window.
    pub fn high_release_lands(&self) -> bool {
        self.events.iter().any(|e| e.importance == Importance::High)
    }
}

/// What [`holding_risk`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct HoldingRisk {
    /// The level (module docs).
    pub level: RiskLevel,
    /// Relevant releases (medium or high) inside the window, by time.
    pub events: Vec<EconomicEvent>,
    /// Closures held through: weekends, and breaks of at least [`MIN_GAP_MS`].
    pub gaps: Vec<Closure>,
    /// Holidays of the currencies overlapping the window, by time.
    pub holidays: Vec<EconomicEvent>,
    /// Times of the triple-swap rollovers inside the window.
    pub triple_swaps: Vec<UnixMs>,
}

/// The holding risk of a symbol with `currencies` over `[from, until)`,
/// given the calendar `events` (releases and holidays), the market
/// `closures` of the window and the `rollovers` (time, whether triple) of
/// the window.
///
/// # Errors
/// [`CoreError::InvalidParameter`] for an empty or too long window (more
/// than [`MAX_HOLD_MS`]) or no currency.
pub fn holding_risk(
    events: &[EconomicEvent],
    currencies: &[String],
    from: UnixMs,
    until: UnixMs,
    closures: &[Closure],
    rollovers: &[(UnixMs, bool)],
) -> Result<HoldingRisk, CoreError> {
    if until <= from || until - from > MAX_HOLD_MS {
        return Err(CoreError::param(
            "hold_hours",
            format!(
                "the hold window must last between 1 ms and {} days",
                MAX_HOLD_MS / DAY_MS
            ),
        ));
    }
    if currencies.is_empty() {
        return Err(CoreError::param("currencies", "at least one currency is needed"));
    }
    let ours = |e: &&EconomicEvent| currencies.iter().any(|c| c.eq_ignore_ascii_case(&e.currency));
    let by_time = |v: &mut Vec<EconomicEvent>| {
        v.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
        v.dedup_by(|a, b| a.id == b.id);
    };
    let mut landed: Vec<EconomicEvent> = events
        .iter()
        .filter(|e| !e.is_holiday() && e.time >= from && e.time < until && e.importance >= Importance::Medium)
        .filter(ours)
        .cloned()
        .collect();
    by_time(&mut landed);
    let mut holidays: Vec<EconomicEvent> = events
        .iter()
        .filter(|e| e.is_holiday() && e.time < until && e.time.saturating_add(DAY_MS) > from)
        .filter(ours)
        .cloned()
        .collect();
    by_time(&mut holidays);
    let gaps: Vec<Closure> = closures
        .iter()
        .filter(|c| c.end > from && c.start < until)
        .filter(|c| c.weekend || c.end - c.start >= MIN_GAP_MS)
        .copied()
        .collect();
    let triple_swaps: Vec<UnixMs> = rollovers
        .iter()
        .filter(|(t, triple)| *triple && *t >= from && *t < until)
        .map(|(t, _)| *t)
        .collect();
    let level = if landed.iter().any(|e| e.importance == Importance::High) || gaps.iter().any(|g| g.weekend) {
        RiskLevel::High
    } else if !landed.is_empty() || !gaps.is_empty() || !holidays.is_empty() || !triple_swaps.is_empty() {
        RiskLevel::Medium
    } else {
        RiskLevel::Low
    };
    Ok(HoldingRisk {
        level,
        events: landed,
        gaps,
        holidays,
        triple_swaps,
    })
}

/// How the price moved around one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Reaction {
    /// The release.
    pub event: EconomicEvent,
    /// Close of the last bar closed at or before the release.
    pub price_before: f64,
    /// Close of the last bar closed at or before the end of the window.
    pub price_after: f64,
    /// `price_after − price_before`.
    pub change: f64,
    /// Highest high minus lowest low of the bars opened inside the window.
    pub range: f64,
}

/// Result of [`event_sensitivity`].
#[derive(Debug, Clone, PartialEq)]
pub struct Sensitivity {
    /// One reaction per release with bars around it, by time.
    pub reactions: Vec<Reaction>,
    /// Releases skipped because the market was closed or bars were missing.
    pub skipped: usize,
    /// Median absolute change over the reactions.
    pub median_abs_change: Option<f64>,
    /// Median absolute change over the same window in quiet times.
    pub baseline_abs_change: Option<f64>,
    /// `median_abs_change / baseline_abs_change` (how many times the usual move).
    pub ratio: Option<f64>,
    /// How many quiet-time windows the baseline used.
    pub baseline_samples: usize,
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The index of the last bar closed at or before `t` (bars by time).
fn last_closed(bars: &[Bar], bar_ms: i64, t: UnixMs) -> Option<usize> {
    let after = bars.partition_point(|b| b.time + bar_ms <= t);
    after.checked_sub(1)
}

/// How a symbol's price reacted to `events` on `bars` of duration `bar_ms`
/// over a window of `window_ms` after each release (module docs).
///
/// # Errors
/// [`CoreError::InvalidParameter`] for a non-positive bar duration or a
/// window shorter than one bar; [`CoreError::InvalidInput`] for bars out of
/// time order or with non-finite prices.
pub fn event_sensitivity(
    bars: &[Bar],
    bar_ms: i64,
    events: &[EconomicEvent],
    window_ms: i64,
) -> Result<Sensitivity, CoreError> {
    if bar_ms <= 0 {
        return Err(CoreError::param("timeframe", "must have a positive duration"));
    }
    if window_ms < bar_ms {
        return Err(CoreError::param("window_minutes", "must be at least one bar"));
    }
    if bars.windows(2).any(|w| w[1].time <= w[0].time) {
        return Err(CoreError::InvalidInput("bars are not in increasing time order".into()));
    }
    if bars
        .iter()
        .any(|b| !(b.high.is_finite() && b.low.is_finite() && b.close.is_finite()))
    {
        return Err(CoreError::InvalidInput("a bar has a non-finite price".into()));
    }
    let mut events: Vec<&EconomicEvent> = events.iter().collect();
    events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    events.dedup_by(|a, b| a.id == b.id);
    let mut reactions = Vec::new();
    let mut skipped = 0;
    for e in &events {
        let before = last_closed(bars, bar_ms, e.time).filter(|&i| e.time - (bars[i].time + bar_ms) <= 2 * bar_ms);
        let after = last_closed(bars, bar_ms, e.time + window_ms);
        let inside_lo = bars.partition_point(|b| b.time < e.time);
        let inside_hi = bars.partition_point(|b| b.time < e.time + window_ms);
        match (before, after) {
            (Some(i), Some(j)) if j > i && inside_hi > inside_lo => {
                let inside = &bars[inside_lo..inside_hi];
                let high = inside.iter().map(|b| b.high).fold(f64::NEG_INFINITY, f64::max);
                let low = inside.iter().map(|b| b.low).fold(f64::INFINITY, f64::min);
                reactions.push(Reaction {
                    event: (*e).clone(),
                    price_before: bars[i].close,
                    price_after: bars[j].close,
                    change: bars[j].close - bars[i].close,
                    range: high - low,
                });
            }
            _ => skipped += 1,
        }
    }
    // Quiet-time baseline: from every bar close far from every release.
    let times: Vec<UnixMs> = events.iter().map(|e| e.time).collect();
    let quiet = |t0: UnixMs, t1: UnixMs| {
        let k = times.partition_point(|&t| t < t0 - window_ms);
        times.get(k).is_none_or(|&t| t > t1 + window_ms)
    };
    let mut baseline: Vec<f64> = Vec::new();
    for (i, b) in bars.iter().enumerate() {
        let t0 = b.time + bar_ms;
        let Some(j) = last_closed(bars, bar_ms, t0 + window_ms) else {
            continue;
        };
        // The window must be covered by bars (no closure in between).
        if j <= i || bars[j].time + bar_ms != t0 + window_ms || !quiet(t0, t0 + window_ms) {
            continue;
        }
        baseline.push((bars[j].close - b.close).abs());
    }
    let mut abs: Vec<f64> = reactions.iter().map(|r| r.change.abs()).collect();
    let median_abs_change = median(&mut abs);
    let baseline_samples = baseline.len();
    let baseline_abs_change = median(&mut baseline);
    let ratio = match (median_abs_change, baseline_abs_change) {
        (Some(m), Some(b)) if b > 0.0 => Some(m / b),
        _ => None,
    };
    Ok(Sensitivity {
        reactions,
        skipped,
        median_abs_change,
        baseline_abs_change,
        ratio,
        baseline_samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::HOLIDAY_CATEGORY;

    const H: i64 = 3_600_000;
    /// Monday 2026-11-23 00:00 UTC.
    const MONDAY: i64 = 1_795_392_000_000;

    fn ev(id: &str, time: UnixMs, currency: &str, importance: Importance) -> EconomicEvent {
        EconomicEvent {
            id: id.into(),
            time,
            currency: currency.into(),
            country: "XX".into(),
            name: id.into(),
            importance,
            category: "growth".into(),
            actual: None,
            forecast: None,
            previous: None,
        }
    }

    /// Forex week: Sunday 22:00 to Friday 22:00 UTC, with a daily break 21:58-22:00... kept simple:
    /// Monday-Thursday all day, Friday until 22:00, Sunday from 22:00.
    fn fx_week() -> Vec<SessionWindow> {
        let mut w: Vec<SessionWindow> = (1..=4)
            .map(|day| SessionWindow {
                day,
                open: 0,
                close: 1440,
            })
            .collect();
        w.push(SessionWindow {
            day: 5,
            open: 0,
            close: 22 * 60,
        });
        w.push(SessionWindow {
            day: 0,
            open: 22 * 60,
            close: 1440,
        });
        w
    }

    #[test]
    fn monday_is_a_weekday_and_closures_follow_the_sessions() {
        assert_eq!(weekday(MONDAY), 1);
        let friday_22 = MONDAY + 4 * DAY_MS + 22 * H;
        let sunday_22 = MONDAY + 6 * DAY_MS + 22 * H;
        let c = closures(&fx_week(), MONDAY, MONDAY + 7 * DAY_MS);
        assert_eq!(
            c,
            vec![Closure {
                start: friday_22,
                end: sunday_22,
                weekend: true
            }]
        );
        // Clipped to the window; nothing inside a trading day.
        let c = closures(&fx_week(), friday_22 + H, friday_22 + 2 * H);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].start, c[0].end), (friday_22 + H, friday_22 + 2 * H));
        assert!(closures(&fx_week(), MONDAY, MONDAY + 3 * DAY_MS).is_empty());
        assert!(closures(&[], MONDAY, MONDAY + 7 * DAY_MS).is_empty());
        // A one-hour daily break is a closure, but not a weekend.
        let with_break: Vec<SessionWindow> = (0..7)
            .flat_map(|day| {
                [
                    SessionWindow {
                        day,
                        open: 0,
                        close: 60,
                    },
                    SessionWindow {
                        day,
                        open: 120,
                        close: 1440,
                    },
                ]
            })
            .collect();
        let c = closures(&with_break, MONDAY, MONDAY + DAY_MS);
        assert_eq!(
            c,
            vec![Closure {
                start: MONDAY + H,
                end: MONDAY + 2 * H,
                weekend: false
            }]
        );
    }

    #[test]
    fn holding_risk_levels() {
        let cur = vec!["EUR".to_owned(), "USD".to_owned()];
        let (from, until) = (MONDAY, MONDAY + 2 * DAY_MS);
        let low = holding_risk(&[], &cur, from, until, &[], &[]).unwrap();
        assert_eq!(low.level, RiskLevel::Low);
        let medium_event = [ev("pmi", from + H, "EUR", Importance::Medium)];
        let r = holding_risk(&medium_event, &cur, from, until, &[], &[]).unwrap();
        assert_eq!((r.level, r.events.len()), (RiskLevel::Medium, 1));
        let events = [
            ev("nfp", from + H, "USD", Importance::High),
            ev("jpy", from + H, "JPY", Importance::High),
            ev("late", until, "USD", Importance::High),
            ev("low", from + H, "USD", Importance::Low),
        ];
        let r = holding_risk(&events, &cur, from, until, &[], &[]).unwrap();
        assert_eq!(r.level, RiskLevel::High);
        assert_eq!(r.events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["nfp"]);
        let weekend = [Closure {
            start: from + H,
            end: from + 2 * DAY_MS,
            weekend: true,
        }];
        assert_eq!(
            holding_risk(&[], &cur, from, until, &weekend, &[]).unwrap().level,
            RiskLevel::High
        );
        let short = [Closure {
            start: from + H,
            end: from + H + 30 * 60_000,
            weekend: false,
        }];
        let r = holding_risk(&[], &cur, from, until, &short, &[]).unwrap();
        assert_eq!((r.level, r.gaps.len()), (RiskLevel::Low, 0), "a short break is ignored");
        let r = holding_risk(&[], &cur, from, until, &[], &[(from + H, true), (from + 2 * H, false)]).unwrap();
        assert_eq!((r.level, r.triple_swaps.clone()), (RiskLevel::Medium, vec![from + H]));
        // Holidays: the day from their time, of the symbol's currencies, whatever their importance.
        let mut holiday = ev("thanksgiving", from - 12 * H, "USD", Importance::Low);
        holiday.category = HOLIDAY_CATEGORY.into();
        let mut elsewhere = ev("jp-holiday", from + H, "JPY", Importance::Low);
        elsewhere.category = "Holiday".into();
        let mut over = ev("past", from - DAY_MS, "USD", Importance::High);
        over.category = HOLIDAY_CATEGORY.into();
        let r = holding_risk(&[holiday, elsewhere, over], &cur, from, until, &[], &[]).unwrap();
        assert_eq!(r.level, RiskLevel::Medium);
        assert_eq!(
            r.holidays.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
            ["thanksgiving"]
        );
        assert!(r.events.is_empty(), "a holiday is not a release landing");
        assert_eq!(
            [RiskLevel::Low, RiskLevel::Medium, RiskLevel::High].map(|l| l.verdict(false)),
            [Verdict::Proceed, Verdict::Caution, Verdict::Caution],
            "a weekend alone (high) is caution"
        );
        assert_eq!(
            [RiskLevel::Low, RiskLevel::Medium, RiskLevel::High].map(|l| l.verdict(true)),
            [Verdict::Block; 3]
        );
        assert!(holding_risk(&[], &cur, from, from, &[], &[]).is_err());
        assert!(holding_risk(&[], &cur, from, from + MAX_HOLD_MS + 1, &[], &[]).is_err());
        assert!(holding_risk(&[], &[], from, until, &[], &[]).is_err());
    }

    fn bar(time: i64, close: f64) -> Bar {
        Bar {
            time,
            open: close,
            high: close + 0.5,
            low: close - 0.5,
            close,
            volume: 1.0,
        }
    }

    #[test]
    fn reactions_and_baseline() {
        let m = 60_000;
        // 15-minute bars, price 100 flat except a jump to 110 in the bar
        // opening at the release (t = 10:00) and back to 100 two hours later.
        let t = MONDAY + 10 * H;
        let bars: Vec<Bar> = (0..96)
            .map(|k| {
                let time = MONDAY + k * 15 * m;
                let close = if time >= t && time < t + 2 * H {
                    110.0
                } else {
                    100.0 + (k % 2) as f64
                };
                bar(time, close)
            })
            .collect();
        let events = [
            ev("cpi", t, "USD", Importance::High),
            ev("night", MONDAY - DAY_MS, "USD", Importance::High),
        ];
        let s = event_sensitivity(&bars, 15 * m, &events, 30 * m).unwrap();
        assert_eq!(s.skipped, 1, "no bars around the earlier release");
        assert_eq!(s.reactions.len(), 1);
        let r = &s.reactions[0];
        // Before: the bar 09:45 (k = 39, odd) closed at 101; after: the bar 10:15 closed at 110.
        assert_eq!((r.price_before, r.price_after, r.change), (101.0, 110.0, 9.0));
        assert_eq!(r.range, 1.0, "bars 10:00 and 10:15, both 110 ± 0.5");
        // Quiet windows alternate 100/101 over two bars: |Δ| = 0 every time.
        assert_eq!(s.baseline_abs_change, Some(0.0));
        assert_eq!(s.ratio, None, "a zero baseline gives no ratio");
        assert!(s.baseline_samples > 50);
        // A 15-minute window: one bar of alternation → |Δ| = 1, ratio 9.
        let s = event_sensitivity(&bars, 15 * m, &events[..1], 15 * m).unwrap();
        assert_eq!(s.baseline_abs_change, Some(1.0));
        assert_eq!(s.ratio, Some(10.0 - 1.0));
        // Input checks.
        assert!(event_sensitivity(&bars, 0, &events, 30 * m).is_err());
        assert!(event_sensitivity(&bars, 15 * m, &events, 5 * m).is_err());
        let mut bad = bars.clone();
        bad.swap(3, 4);
        assert!(event_sensitivity(&bad, 15 * m, &events, 30 * m).is_err());
        bad = bars.clone();
        bad[5].close = f64::NAN;
        assert!(event_sensitivity(&bad, 15 * m, &events, 30 * m).is_err());
        let empty = event_sensitivity(&[], 15 * m, &events, 30 * m).unwrap();
        assert_eq!((empty.reactions.len(), empty.skipped, empty.ratio), (0, 2, None));
    }
}
