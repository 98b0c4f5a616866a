//! A small, deterministic economic calendar for MT5 terminals.
//!
//! The schedule follows the usual rhythm of the main releases (payrolls on
//! the first Friday, central-bank decisions eight times a year, weekly jobless
//! claims, ...) at fixed UTC times (daylight saving is ignored). The numbers
//! are synthetic, drawn from the simulator's seed: they exist so that tools
//! can be exercised, not to describe any real economy. `actual` is only
//! filled for events at or before the simulator's "now".

use chrono::{DateTime, Datelike, NaiveDate, Weekday};
use tradeterm_core::time::{DAY_MS, UnixMs};
use tradeterm_protocol::agent::{CalendarEvent, Importance};

use crate::rng::{Rng, hash};

/// Longest range one request may cover.
pub(crate) const MAX_RANGE_MS: i64 = 400 * DAY_MS;

#[derive(Debug, Clone, Copy)]
enum When {
    /// The `n`-th (1-based) given weekday of the month.
    Nth(u32, Weekday),
    /// The last given weekday of the month.
    Last(Weekday),
    /// Every such weekday.
    Weekly(Weekday),
}

#[derive(Debug, Clone, Copy)]
struct Template {
    code: &'static str,
    name: &'static str,
    currency: &'static str,
    country: &'static str,
    importance: Importance,
    category: &'static str,
    when: When,
    /// Months (1–12) in which it happens; empty = every month.
    months: &'static [u32],
    hour: u32,
    minute: u32,
    /// Typical level and month-to-month noise of the synthetic value.
    level: f64,
    noise: f64,
    /// Decimals of the value.
    decimals: i32,
}

const FOMC_MONTHS: &[u32] = &[1, 3, 5, 6, 7, 9, 11, 12];
const ECB_MONTHS: &[u32] = &[1, 3, 4, 6, 7, 9, 10, 12];
const BOE_MONTHS: &[u32] = &[2, 3, 5, 6, 8, 9, 11, 12];
const BOJ_MONTHS: &[u32] = &[1, 3, 4, 6, 7, 9, 10, 12];
const QUARTER_ENDS: &[u32] = &[1, 4, 7, 10];

#[rustfmt::skip]
const TEMPLATES: &[Template] = &[
    Template { code: "US-NFP", name: "Non-Farm Payrolls", currency: "USD", country: "US", importance: Importance::High, category: "employment", when: When::Nth(1, Weekday::Fri), months: &[], hour: 13, minute: 30, level: 180.0, noise: 60.0, decimals: 0 },
    Template { code: "US-UNEMP", name: "Unemployment Rate", currency: "USD", country: "US", importance: Importance::High, category: "employment", when: When::Nth(1, Weekday::Fri), months: &[], hour: 13, minute: 30, level: 4.0, noise: 0.1, decimals: 1 },
    Template { code: "US-CPI", name: "CPI m/m", currency: "USD", country: "US", importance: Importance::High, category: "inflation", when: When::Nth(2, Weekday::Wed), months: &[], hour: 13, minute: 30, level: 0.2, noise: 0.15, decimals: 1 },
    Template { code: "US-RETAIL", name: "Retail Sales m/m", currency: "USD", country: "US", importance: Importance::Medium, category: "growth", when: When::Nth(2, Weekday::Fri), months: &[], hour: 13, minute: 30, level: 0.3, noise: 0.5, decimals: 1 },
    Template { code: "US-CLAIMS", name: "Initial Jobless Claims", currency: "USD", country: "US", importance: Importance::Medium, category: "employment", when: When::Weekly(Weekday::Thu), months: &[], hour: 13, minute: 30, level: 220.0, noise: 12.0, decimals: 0 },
    Template { code: "US-FOMC", name: "Fed Interest Rate Decision", currency: "USD", country: "US", importance: Importance::High, category: "central_bank", when: When::Nth(3, Weekday::Wed), months: FOMC_MONTHS, hour: 19, minute: 0, level: 4.5, noise: 0.0, decimals: 2 },
    Template { code: "US-GDP", name: "GDP q/q (advance)", currency: "USD", country: "US", importance: Importance::High, category: "growth", when: When::Last(Weekday::Thu), months: QUARTER_ENDS, hour: 13, minute: 30, level: 2.0, noise: 1.0, decimals: 1 },
    Template { code: "EU-CPI", name: "CPI Flash Estimate y/y", currency: "EUR", country: "EU", importance: Importance::Medium, category: "inflation", when: When::Nth(1, Weekday::Tue), months: &[], hour: 10, minute: 0, level: 2.2, noise: 0.2, decimals: 1 },
    Template { code: "EU-ECB", name: "ECB Main Refinancing Rate", currency: "EUR", country: "EU", importance: Importance::High, category: "central_bank", when: When::Nth(2, Weekday::Thu), months: ECB_MONTHS, hour: 13, minute: 15, level: 3.0, noise: 0.0, decimals: 2 },
    Template { code: "DE-ZEW", name: "German ZEW Economic Sentiment", currency: "EUR", country: "DE", importance: Importance::Medium, category: "sentiment", when: When::Nth(3, Weekday::Tue), months: &[], hour: 10, minute: 0, level: 10.0, noise: 8.0, decimals: 1 },
    Template { code: "GB-CPI", name: "CPI y/y", currency: "GBP", country: "GB", importance: Importance::High, category: "inflation", when: When::Nth(3, Weekday::Wed), months: &[], hour: 7, minute: 0, level: 3.0, noise: 0.2, decimals: 1 },
    Template { code: "GB-BOE", name: "BoE Interest Rate Decision", currency: "GBP", country: "GB", importance: Importance::High, category: "central_bank", when: When::Nth(1, Weekday::Thu), months: BOE_MONTHS, hour: 12, minute: 0, level: 4.25, noise: 0.0, decimals: 2 },
    Template { code: "JP-BOJ", name: "BoJ Interest Rate Decision", currency: "JPY", country: "JP", importance: Importance::High, category: "central_bank", when: When::Nth(3, Weekday::Fri), months: BOJ_MONTHS, hour: 3, minute: 0, level: 0.5, noise: 0.0, decimals: 2 },
];

fn dates(t: &Template, year: i32, month: u32) -> Vec<NaiveDate> {
    if !t.months.is_empty() && !t.months.contains(&month) {
        return Vec::new();
    }
    let Some(first) = NaiveDate::from_ymd_opt(year, month, 1) else {
        return Vec::new();
    };
    let in_month: Vec<NaiveDate> = first.iter_days().take_while(|d| d.month() == month).collect();
    match t.when {
        When::Nth(n, wd) => in_month
            .iter()
            .filter(|d| d.weekday() == wd)
            .nth(n as usize - 1)
            .copied()
            .into_iter()
            .collect(),
        When::Last(wd) => in_month
            .iter()
            .rev()
            .find(|d| d.weekday() == wd)
            .copied()
            .into_iter()
            .collect(),
        When::Weekly(wd) => in_month.into_iter().filter(|d| d.weekday() == wd).collect(),
    }
}

fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// The synthetic value of an event series at release number `n` (months or
/// weeks since 1970): a seeded random walk for rates (steps of 25 bp now and
/// then), independent noise around the level otherwise.
fn value(seed: u64, t: &Template, n: i64) -> f64 {
    let mut rng = Rng::new(hash(&[seed, hash_str(t.code), n as u64]));
    if t.noise == 0.0 {
        // Policy rate: a slow seeded path of 25 bp steps, bounded below by 0.
        let steps = (0..8).map(|k| {
            let mut r = Rng::new(hash(&[seed, hash_str(t.code), (n.div_euclid(8) - k) as u64]));
            match (r.f64() * 6.0) as u32 {
                0 => -0.25,
                1 => 0.25,
                _ => 0.0,
            }
        });
        return round((t.level + steps.sum::<f64>()).max(0.0), t.decimals);
    }
    round(t.level + t.noise * rng.normal(), t.decimals)
}

fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Events with time in `[from, to)` for the given currencies (all when empty).
pub(crate) fn events(seed: u64, from: UnixMs, to: UnixMs, currencies: &[String], now: UnixMs) -> Vec<CalendarEvent> {
    let (Some(start), Some(end)) = (
        DateTime::from_timestamp_millis(from),
        DateTime::from_timestamp_millis(to.saturating_sub(1)),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let (mut year, mut month) = (start.year(), start.month());
    while (year, month) <= (end.year(), end.month()) {
        for t in TEMPLATES {
            if !currencies.is_empty() && !currencies.iter().any(|c| c.eq_ignore_ascii_case(t.currency)) {
                continue;
            }
            for date in dates(t, year, month) {
                let Some(dt) = date.and_hms_opt(t.hour, t.minute, 0) else {
                    continue;
                };
                let time = dt.and_utc().timestamp_millis();
                if time < from || time >= to {
                    continue;
                }
                // Release number: weeks for weekly series, months otherwise.
                let n = match t.when {
                    When::Weekly(_) => time.div_euclid(7 * DAY_MS),
                    _ => i64::from(year) * 12 + i64::from(month),
                };
                let previous = value(seed, t, n - 1);
                let actual = value(seed, t, n);
                let forecast = round(previous + (actual - previous) * 0.5, t.decimals);
                out.push(CalendarEvent {
                    id: format!("{}-{}", t.code, date.format("%Y%m%d")),
                    time,
                    currency: t.currency.to_owned(),
                    country: t.country.to_owned(),
                    name: t.name.to_owned(),
                    importance: t.importance,
                    category: t.category.to_owned(),
                    actual: (time <= now).then_some(actual),
                    forecast: Some(forecast),
                    previous: Some(previous),
                });
            }
        }
        (year, month) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
    }
    out.sort_by(|a, b| (a.time, &a.id).cmp(&(b.time, &b.id)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tradeterm_core::time::parse_iso;

    #[test]
    fn november_2026() {
        let from = parse_iso("2026-11-01T00:00:00Z").unwrap();
        let to = parse_iso("2026-12-01T00:00:00Z").unwrap();
        let now = parse_iso("2026-11-10T00:00:00Z").unwrap();
        let ev = events(1, from, to, &[], now);
        let nfp = ev.iter().find(|e| e.id == "US-NFP-20261106").expect("first Friday");
        assert_eq!(nfp.time, parse_iso("2026-11-06T13:30:00Z").unwrap());
        assert!(nfp.actual.is_some(), "released before now");
        let fomc = ev
            .iter()
            .find(|e| e.id.starts_with("US-FOMC"))
            .expect("November meeting");
        assert_eq!(fomc.time, parse_iso("2026-11-18T19:00:00Z").unwrap());
        assert!(fomc.actual.is_none(), "no actual before release");
        assert_eq!(ev.iter().filter(|e| e.id.starts_with("US-CLAIMS")).count(), 4);
        assert!(ev.windows(2).all(|w| w[0].time <= w[1].time));
        assert_eq!(events(1, from, to, &[], now), ev, "deterministic");
        let jpy = events(1, from, to, &["jpy".into()], now);
        assert!(jpy.iter().all(|e| e.currency == "JPY"));
        assert!(events(1, to, from, &[], now).is_empty());
    }
}
