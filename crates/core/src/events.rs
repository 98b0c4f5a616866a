//! Economic events and the risk they pose to a trade: filtering a calendar and
//! the `proceed | caution | block` verdict of `get_event_risk`.
//!
//! # Event-risk rules
//!
//! An event is *relevant* to a symbol when its currency is one of the
//! symbol's currencies (base, quote/profit and margin currency). Around each
//! relevant event there are two windows, from `before` ahead of its release
//! time to `after` past it:
//!
//! - a **block** window around every relevant event of at least
//!   [`EventRiskConfig::block_importance`] (default: high): 15 minutes before
//!   to 15 minutes after by default;
//! - a **caution** window around every relevant event of at least
//!   [`EventRiskConfig::caution_importance`] (default: medium): 2 hours before
//!   to 30 minutes after by default.
//!
//! The verdict at `now` is `block` when `now` is inside a block window,
//! else `caution` when it is inside a caution window, else `proceed`.
//! `resume_after` is the end of the windows of the verdict's kind that
//! contain `now`, chained: when another window of that kind starts before the
//! current one ends, the end of the chain (so that resuming at
//! `resume_after` is not itself inside the same kind of window). For
//! `proceed` it is absent; `next_event` names the next relevant event, if
//! any, so a caller knows when caution will start.
//!
//! Nothing here fetches anything: the caller passes the events (from the
//! terminal or the server's calendar) and the symbol's currencies.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::events::{EconomicEvent, EventRiskConfig, Importance, MINUTE_MS, Verdict, event_risk};
//!
//! let payrolls = EconomicEvent {
//!     id: "us-nfp".into(),
//!     time: 1_764_333_000_000,
//!     currency: "USD".into(),
//!     country: "US".into(),
//!     name: "Nonfarm Payrolls".into(),
//!     importance: Importance::High,
//!     category: "employment".into(),
//!     actual: None,
//!     forecast: None,
//!     previous: None,
//! };
//! let eurusd = ["EUR".to_string(), "USD".to_string()];
//! let config = EventRiskConfig::default();
//! let at = |minutes_before: i64| event_risk(&[payrolls.clone()], &eurusd, payrolls.time - minutes_before * MINUTE_MS, &config);
//! assert_eq!(at(10)?.verdict, Verdict::Block); // inside 15 minutes before
//! assert_eq!(at(60)?.verdict, Verdict::Caution); // inside 2 hours before
//! assert_eq!(at(180)?.verdict, Verdict::Proceed);
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::CoreError;
use crate::time::UnixMs;

/// One minute, ms.
pub const MINUTE_MS: i64 = 60_000;

/// How much an event is expected to move markets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Importance {
    /// Minor.
    Low,
    /// Can move its currency.
    Medium,
    /// Market-moving (payrolls, rate decisions, CPI...).
    High,
}

/// One economic release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EconomicEvent {
    /// Event id (stable per source).
    pub id: String,
    /// Release time, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Currency affected (ISO 4217 code).
    pub currency: String,
    /// Country code.
    pub country: String,
    /// Event name.
    pub name: String,
    /// `low`, `medium` or `high`.
    pub importance: Importance,
    /// Category (`inflation`, `employment`, `central_bank`, `growth`, ...).
    pub category: String,
    /// Actual value, once released.
    pub actual: Option<f64>,
    /// Consensus forecast.
    pub forecast: Option<f64>,
    /// Previous value.
    pub previous: Option<f64>,
}

/// The category of public holidays (a currency's banks closed: thin
/// liquidity and gaps). ForexFactory's impact `Holiday` and MT5's holiday
/// events map to it.
pub const HOLIDAY_CATEGORY: &str = "holiday";

impl EconomicEvent {
    /// Whether the event is a public holiday of its currency
    /// ([`HOLIDAY_CATEGORY`]), which lasts the whole day from its time.
    pub fn is_holiday(&self) -> bool {
        self.category.eq_ignore_ascii_case(HOLIDAY_CATEGORY)
    }
}

/// Which events a calendar query keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only these currencies (upper-case ISO codes); empty = all.
    pub currencies: Vec<String>,
    /// Only events of at least this importance.
    pub min_importance: Option<Importance>,
    /// Only these categories (lower-case); empty = all.
    pub categories: Vec<String>,
}

impl EventFilter {
    /// Whether `e` passes the filter.
    pub fn keeps(&self, e: &EconomicEvent) -> bool {
        (self.currencies.is_empty() || self.currencies.iter().any(|c| c.eq_ignore_ascii_case(&e.currency)))
            && self.min_importance.is_none_or(|m| e.importance >= m)
            && (self.categories.is_empty() || self.categories.iter().any(|c| c.eq_ignore_ascii_case(&e.category)))
    }
}

/// The events of `[from, to)` that pass `filter`, by time (then id), without
/// duplicate ids.
pub fn select(events: &[EconomicEvent], from: UnixMs, to: UnixMs, filter: &EventFilter) -> Vec<EconomicEvent> {
    let mut out: Vec<EconomicEvent> = events
        .iter()
        .filter(|e| e.time >= from && e.time < to && filter.keeps(e))
        .cloned()
        .collect();
    out.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    out.dedup_by(|a, b| a.id == b.id);
    out
}

/// Parameters of [`event_risk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRiskConfig {
    /// Events of at least this importance open block windows.
    pub block_importance: Importance,
    /// Block window before an event, ms.
    pub block_before_ms: i64,
    /// Block window after an event, ms.
    pub block_after_ms: i64,
    /// Events of at least this importance open caution windows.
    pub caution_importance: Importance,
    /// Caution window before an event, ms.
    pub caution_before_ms: i64,
    /// Caution window after an event, ms.
    pub caution_after_ms: i64,
}

impl Default for EventRiskConfig {
    fn default() -> Self {
        Self {
            block_importance: Importance::High,
            block_before_ms: 15 * MINUTE_MS,
            block_after_ms: 15 * MINUTE_MS,
            caution_importance: Importance::Medium,
            caution_before_ms: 120 * MINUTE_MS,
            caution_after_ms: 30 * MINUTE_MS,
        }
    }
}

/// Longest window accepted on either side of an event (24 h).
pub const MAX_WINDOW_MS: i64 = 24 * 60 * MINUTE_MS;

impl EventRiskConfig {
    /// Checks the windows: each within 0 ..= 24 h, and the caution windows at
    /// least as wide as the block windows (a blocked moment is also one of
    /// caution).
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] naming the offending window.
    pub fn validate(&self) -> Result<(), CoreError> {
        for (name, v) in [
            ("block_before_minutes", self.block_before_ms),
            ("block_after_minutes", self.block_after_ms),
            ("caution_before_minutes", self.caution_before_ms),
            ("caution_after_minutes", self.caution_after_ms),
        ] {
            if !(0..=MAX_WINDOW_MS).contains(&v) {
                return Err(CoreError::InvalidParameter {
                    name: name.into(),
                    reason: format!("must be within 0 ..= {} minutes", MAX_WINDOW_MS / MINUTE_MS),
                });
            }
        }
        if self.caution_before_ms < self.block_before_ms || self.caution_after_ms < self.block_after_ms {
            return Err(CoreError::InvalidParameter {
                name: "caution_before_minutes".into(),
                reason: "the caution windows must be at least as wide as the block windows".into(),
            });
        }
        if self.caution_importance > self.block_importance {
            return Err(CoreError::InvalidParameter {
                name: "caution_importance".into(),
                reason: "must not be above block_importance".into(),
            });
        }
        Ok(())
    }
}

/// The verdict of [`event_risk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No relevant event window at this time.
    Proceed,
    /// Inside a caution window.
    Caution,
    /// Inside a block window.
    Block,
}

/// Why an event matters now.
#[derive(Debug, Clone, PartialEq)]
pub struct EventHit {
    /// The event.
    pub event: EconomicEvent,
    /// Whether `now` is inside its block window (else its caution window).
    pub blocks: bool,
    /// Window start, unix ms.
    pub window_start: UnixMs,
    /// Window end, unix ms.
    pub window_end: UnixMs,
}

/// Result of [`event_risk`].
#[derive(Debug, Clone, PartialEq)]
pub struct EventRisk {
    /// The verdict.
    pub verdict: Verdict,
    /// When the verdict's windows end (chained), for `caution` and `block`.
    pub resume_after: Option<UnixMs>,
    /// The relevant events whose window contains `now`, by time.
    pub active: Vec<EventHit>,
    /// The next relevant event (of at least caution importance) after `now`.
    pub next_event: Option<EconomicEvent>,
}

/// The end of the chain of windows `[start, end)` that contains `now`
/// (windows that start before the chain's current end extend it).
fn chain_end(mut windows: Vec<(UnixMs, UnixMs)>, now: UnixMs) -> Option<UnixMs> {
    windows.sort_unstable();
    let mut end: Option<UnixMs> = None;
    for (s, e) in windows {
        match end {
            None if s <= now && now < e => end = Some(e),
            Some(cur) if s <= cur => end = Some(cur.max(e)),
            _ => {}
        }
    }
    end
}

/// The event risk at `now` for a symbol whose currencies are `currencies`
/// (see the module docs for the rules).
///
/// # Errors
/// [`CoreError::InvalidParameter`] when the configuration is invalid
/// ([`EventRiskConfig::validate`]) or no currency is given.
pub fn event_risk(
    events: &[EconomicEvent],
    currencies: &[String],
    now: UnixMs,
    config: &EventRiskConfig,
) -> Result<EventRisk, CoreError> {
    config.validate()?;
    if currencies.is_empty() {
        return Err(CoreError::InvalidParameter {
            name: "currencies".into(),
            reason: "at least one currency is needed".into(),
        });
    }
    let relevant: Vec<&EconomicEvent> = events
        .iter()
        .filter(|e| currencies.iter().any(|c| c.eq_ignore_ascii_case(&e.currency)))
        .filter(|e| e.importance >= config.caution_importance)
        .collect();
    let block_window = |e: &EconomicEvent| {
        (
            e.time.saturating_sub(config.block_before_ms),
            e.time.saturating_add(config.block_after_ms),
        )
    };
    let caution_window = |e: &EconomicEvent| {
        (
            e.time.saturating_sub(config.caution_before_ms),
            e.time.saturating_add(config.caution_after_ms),
        )
    };
    let blocking: Vec<&EconomicEvent> = relevant
        .iter()
        .copied()
        .filter(|e| e.importance >= config.block_importance)
        .collect();
    let block_end = chain_end(blocking.iter().map(|e| block_window(e)).collect(), now);
    let caution_end = chain_end(relevant.iter().map(|e| caution_window(e)).collect(), now);
    let (verdict, resume_after) = match (block_end, caution_end) {
        (Some(end), _) => (Verdict::Block, Some(end)),
        (None, Some(end)) => (Verdict::Caution, Some(end)),
        (None, None) => (Verdict::Proceed, None),
    };
    let mut active: Vec<EventHit> = relevant
        .iter()
        .filter_map(|e| {
            let blocks = e.importance >= config.block_importance && {
                let (s, t) = block_window(e);
                s <= now && now < t
            };
            let (s, t) = if blocks { block_window(e) } else { caution_window(e) };
            (s <= now && now < t).then(|| EventHit {
                event: (*e).clone(),
                blocks,
                window_start: s,
                window_end: t,
            })
        })
        .collect();
    active.sort_by(|a, b| {
        a.event
            .time
            .cmp(&b.event.time)
            .then_with(|| a.event.id.cmp(&b.event.id))
    });
    let next_event = relevant
        .iter()
        .filter(|e| e.time > now)
        .min_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)))
        .map(|e| (*e).clone());
    Ok(EventRisk {
        verdict,
        resume_after,
        active,
        next_event,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 60 * MINUTE_MS;

    fn ev(id: &str, time: UnixMs, currency: &str, importance: Importance) -> EconomicEvent {
        EconomicEvent {
            id: id.into(),
            time,
            currency: currency.into(),
            country: "XX".into(),
            name: format!("event {id}"),
            importance,
            category: "employment".into(),
            actual: None,
            forecast: None,
            previous: None,
        }
    }

    fn usd_eur() -> Vec<String> {
        vec!["EUR".into(), "USD".into()]
    }

    #[test]
    fn verdict_follows_the_windows_around_a_high_impact_event() {
        let t = 100 * H;
        let events = [ev("nfp", t, "USD", Importance::High)];
        let cfg = EventRiskConfig::default();
        let at = |now| event_risk(&events, &usd_eur(), now, &cfg).unwrap();
        // Far before: proceed, the event is next.
        let r = at(t - 3 * H);
        assert_eq!((r.verdict, r.resume_after), (Verdict::Proceed, None));
        assert_eq!(r.next_event.as_ref().map(|e| e.id.as_str()), Some("nfp"));
        // 2 h before: caution until 30 min after.
        let r = at(t - 2 * H);
        assert_eq!(
            (r.verdict, r.resume_after),
            (Verdict::Caution, Some(t + 30 * MINUTE_MS))
        );
        assert!(!r.active[0].blocks);
        // 15 min before to 15 min after: block until 15 min after.
        for now in [t - 15 * MINUTE_MS, t, t + 15 * MINUTE_MS - 1] {
            let r = at(now);
            assert_eq!(
                (r.verdict, r.resume_after),
                (Verdict::Block, Some(t + 15 * MINUTE_MS)),
                "{now}"
            );
            assert!(r.active[0].blocks);
        }
        // Just after the block window: caution again until 30 min after.
        let r = at(t + 15 * MINUTE_MS);
        assert_eq!(
            (r.verdict, r.resume_after),
            (Verdict::Caution, Some(t + 30 * MINUTE_MS))
        );
        // The caution window ends.
        let r = at(t + 30 * MINUTE_MS);
        assert_eq!(r.verdict, Verdict::Proceed);
        assert!(r.active.is_empty() && r.next_event.is_none());
    }

    #[test]
    fn other_currencies_and_low_importance_do_not_count() {
        let t = 100 * H;
        let events = [
            ev("jpy", t, "JPY", Importance::High),
            ev("low", t, "USD", Importance::Low),
        ];
        let r = event_risk(&events, &usd_eur(), t, &EventRiskConfig::default()).unwrap();
        assert_eq!(r.verdict, Verdict::Proceed);
        assert!(r.active.is_empty() && r.next_event.is_none());
        // A medium event only cautions, even at its release time.
        let events = [ev("pmi", t, "eur", Importance::Medium)];
        let r = event_risk(&events, &usd_eur(), t, &EventRiskConfig::default()).unwrap();
        assert_eq!(
            (r.verdict, r.resume_after),
            (Verdict::Caution, Some(t + 30 * MINUTE_MS))
        );
    }

    #[test]
    fn overlapping_windows_chain_resume_after() {
        let t = 100 * H;
        // Block windows [t-15m, t+15m) and [t+10m, t+40m) overlap: resume at t+40m.
        let events = [
            ev("a", t, "USD", Importance::High),
            ev("b", t + 25 * MINUTE_MS, "USD", Importance::High),
        ];
        let r = event_risk(&events, &usd_eur(), t, &EventRiskConfig::default()).unwrap();
        assert_eq!((r.verdict, r.resume_after), (Verdict::Block, Some(t + 40 * MINUTE_MS)));
        // A later window that does not touch the chain does not extend it.
        let events = [
            ev("a", t, "USD", Importance::High),
            ev("c", t + 2 * H, "USD", Importance::High),
        ];
        let r = event_risk(&events, &usd_eur(), t, &EventRiskConfig::default()).unwrap();
        assert_eq!(r.resume_after, Some(t + 15 * MINUTE_MS));
        assert_eq!(r.next_event.map(|e| e.id), Some("c".into()));
    }

    #[test]
    fn configuration_is_validated() {
        let events = [ev("a", 0, "USD", Importance::High)];
        let bad = [
            EventRiskConfig {
                block_before_ms: -1,
                ..EventRiskConfig::default()
            },
            EventRiskConfig {
                caution_after_ms: MAX_WINDOW_MS + 1,
                ..EventRiskConfig::default()
            },
            EventRiskConfig {
                caution_before_ms: 5 * MINUTE_MS,
                ..EventRiskConfig::default()
            },
            EventRiskConfig {
                caution_importance: Importance::High,
                block_importance: Importance::Medium,
                ..EventRiskConfig::default()
            },
        ];
        for cfg in bad {
            assert!(matches!(
                event_risk(&events, &usd_eur(), 0, &cfg),
                Err(CoreError::InvalidParameter { .. })
            ));
        }
        assert!(event_risk(&events, &[], 0, &EventRiskConfig::default()).is_err());
    }

    #[test]
    fn select_filters_sorts_and_deduplicates() {
        let events = [
            ev("b", 20, "USD", Importance::High),
            ev("a", 10, "EUR", Importance::Medium),
            ev("b", 20, "USD", Importance::High),
            ev("c", 30, "JPY", Importance::Low),
            ev("d", 40, "USD", Importance::High),
        ];
        let all = select(&events, 0, 40, &EventFilter::default());
        assert_eq!(all.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        let f = EventFilter {
            currencies: vec!["usd".into(), "EUR".into()],
            min_importance: Some(Importance::Medium),
            categories: vec![],
        };
        let some = select(&events, 0, 100, &f);
        assert_eq!(some.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["a", "b", "d"]);
        let f = EventFilter {
            categories: vec!["inflation".into()],
            ..EventFilter::default()
        };
        assert!(select(&events, 0, 100, &f).is_empty());
    }
}
