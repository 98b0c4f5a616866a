//! The server calendar's provider: a public weekly economic-calendar feed in
//! the ForexFactory JSON format (the format of the widely mirrored
//! `ff_calendar_thisweek.json`), fetched from `CALENDAR_FEED_URL`, cached in
//! the [`ServerCalendar`] and refreshed on a schedule. A failed refresh keeps
//! the last good copy, which the calendar answers then mark `stale` with its
//! `as_of`. Off unless a URL is configured; `CALENDAR_FILE` overrides it.
//!
//! # Format
//!
//! A JSON array of
//! `{ "title", "country" (a currency code such as "USD"), "date" (ISO 8601
//! with offset), "impact" ("High" | "Medium" | "Low" | "Holiday" |
//! "Non-Economic"), "forecast", "previous", "actual"? }`; values are text
//! such as `"0.3%"`, `"1.2K"`, `"-0.5M"`, `"<0.1%"` or `""` (unknown). Other
//! fields are ignored. An entry with a country that is not an upper-case
//! currency code (`"All"`) or an unreadable date is skipped; a feed where no entry is usable
//! is refused, so a broken download never replaces a good copy.
//!
//! # Mapping
//!
//! `impact` High/Medium/Low → importance high/medium/low; `Holiday` →
//! importance low, category `holiday` (the currency's banks are closed);
//! `Non-Economic` → low. The category of a release is guessed from its title
//! (`central_bank`, `inflation`, `employment`, `growth`, else `other`). The
//! id is `ff-<currency>-<unix ms>-<title slug>`, stable across refreshes.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::Deserialize;
use tradeterm_core::events::{EconomicEvent, HOLIDAY_CATEGORY, Importance};
use tradeterm_core::time::{UnixMs, parse_iso};

use crate::events::{MAX_SERVER_EVENTS, ServerCalendar, is_currency};

/// Default refresh interval of the feed (`CALENDAR_FEED_REFRESH_SECS`).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(3600);
/// Shortest refresh interval accepted.
pub const MIN_REFRESH: Duration = Duration::from_secs(1);
/// Longest wait before a failed fetch is retried (shorter when the refresh
/// interval is shorter).
pub const RETRY_AFTER: Duration = Duration::from_secs(300);
/// Largest feed accepted, bytes.
pub const MAX_FEED_BYTES: usize = 8 * 1024 * 1024;

/// One entry of the feed.
#[derive(Debug, Deserialize)]
struct FeedEntry {
    #[serde(default)]
    title: String,
    #[serde(default)]
    country: String,
    #[serde(default)]
    date: String,
    #[serde(default)]
    impact: String,
    #[serde(default)]
    forecast: Option<String>,
    #[serde(default)]
    previous: Option<String>,
    #[serde(default)]
    actual: Option<String>,
}

/// A number from a calendar value such as `"0.3%"`, `"1.2K"`, `"-0.5M"`,
/// `"2.1B"`, `"1.5T"`, `"<0.1%"`, `"3.50|3.75"` (the first) or `""`
/// (`None`). Suffixes scale (K = 10³, M = 10⁶, B = 10⁹, T = 10¹²); a percent
/// sign is dropped (the value stays in percent).
pub fn parse_value(text: &str) -> Option<f64> {
    let trimmed = text.split('|').next().unwrap_or("").trim();
    let trimmed = trimmed.trim_start_matches(['<', '>', '~', '≈']).trim();
    let trimmed = trimmed.trim_end_matches('%').trim();
    if trimmed.is_empty() {
        return None;
    }
    let (number, scale) = match trimmed.chars().last() {
        Some(suffix @ ('K' | 'k' | 'M' | 'm' | 'B' | 'b' | 'T' | 't')) => (
            &trimmed[..trimmed.len() - suffix.len_utf8()],
            match suffix.to_ascii_uppercase() {
                'K' => 1e3,
                'M' => 1e6,
                'B' => 1e9,
                _ => 1e12,
            },
        ),
        _ => (trimmed, 1.0),
    };
    let value: f64 = number.trim().replace(',', "").parse().ok()?;
    let value = value * scale;
    value.is_finite().then_some(value)
}

/// The category of a release from its title.
fn category_of(title: &str) -> &'static str {
    let lower = title.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&[
        "rate decision",
        "rate statement",
        "cash rate",
        "policy rate",
        "monetary policy",
        "fomc",
        "minutes",
        "press conference",
        "speaks",
        "bank rate",
        "refinancing rate",
        "deposit rate",
    ]) {
        "central_bank"
    } else if has(&["cpi", "ppi", "pce", "inflation", "price index", "hicp"]) {
        "inflation"
    } else if has(&[
        "employment",
        "payroll",
        "unemployment",
        "jobless",
        "claimant",
        "jobs",
        "earnings",
        "labor",
        "labour",
    ]) {
        "employment"
    } else if has(&[
        "gdp",
        "pmi",
        "retail sales",
        "industrial production",
        "manufacturing",
        "sentiment",
        "confidence",
        "trade balance",
        "housing",
        "durable goods",
    ]) {
        "growth"
    } else {
        "other"
    }
}

fn slug(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').chars().take(48).collect()
}

/// The events of a feed (format in the module docs), by time.
///
/// # Errors
/// The text is not a JSON array, is too large, or has no usable entry.
pub fn parse_feed(text: &str) -> Result<Vec<EconomicEvent>, String> {
    if text.len() > MAX_FEED_BYTES {
        return Err(format!("calendar feed: larger than {MAX_FEED_BYTES} bytes"));
    }
    let raw: Vec<FeedEntry> = serde_json::from_str(text).map_err(|e| format!("calendar feed: {e}"))?;
    if raw.len() > MAX_SERVER_EVENTS {
        return Err(format!("calendar feed: more than {MAX_SERVER_EVENTS} entries"));
    }
    let total = raw.len();
    let mut events: Vec<EconomicEvent> = raw.into_iter().filter_map(to_event).collect();
    if events.is_empty() && total > 0 {
        return Err(format!("calendar feed: none of its {total} entries is usable"));
    }
    events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    events.dedup_by(|a, b| a.id == b.id);
    Ok(events)
}

fn to_event(entry: FeedEntry) -> Option<EconomicEvent> {
    let currency = entry.country.trim();
    let title = entry.title.trim();
    // Codes are upper-case; ForexFactory's `All` (global) is not a currency.
    if !is_currency(currency) || !currency.chars().all(|c| c.is_ascii_uppercase()) || title.is_empty() {
        return None;
    }
    let time = parse_iso(&entry.date).ok()?;
    let currency = currency.to_ascii_uppercase();
    let impact = entry.impact.trim().to_ascii_lowercase();
    let (importance, category) = match impact.as_str() {
        "high" => (Importance::High, category_of(title)),
        "medium" => (Importance::Medium, category_of(title)),
        "holiday" => (Importance::Low, HOLIDAY_CATEGORY),
        _ => (Importance::Low, category_of(title)),
    };
    let value = |v: &Option<String>| v.as_deref().and_then(parse_value);
    Some(EconomicEvent {
        id: format!("ff-{}-{time}-{}", currency.to_ascii_lowercase(), slug(title)),
        time,
        country: currency.clone(),
        currency,
        name: title.to_owned(),
        importance,
        category: category.to_owned(),
        actual: value(&entry.actual),
        forecast: value(&entry.forecast),
        previous: value(&entry.previous),
    })
}

/// The HTTP client of one feed URL.
#[derive(Debug, Clone)]
pub struct CalendarFeed {
    client: reqwest::Client,
    url: String,
}

impl CalendarFeed {
    /// A feed at `url` (http or https).
    ///
    /// # Errors
    /// The URL is not http(s) or the HTTP client cannot be built.
    pub fn new(url: &str) -> Result<Self, String> {
        let url = url.trim().to_owned();
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!("CALENDAR_FEED_URL must be an http(s) URL, got `{url}`"));
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .user_agent(concat!("tradeterm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("calendar feed client: {e}"))?;
        Ok(Self { client, url })
    }

    /// The feed's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Fetches and parses the feed once.
    ///
    /// # Errors
    /// The request fails, answers a non-success status, or the body is not a
    /// usable feed.
    pub async fn fetch(&self) -> Result<Vec<EconomicEvent>, String> {
        let resp = self
            .client
            .get(&self.url)
            .send()
            .await
            .map_err(|e| format!("calendar feed request failed: {e}"))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("calendar feed answered HTTP {}", status.as_u16()));
        }
        let body = resp.text().await.map_err(|e| format!("calendar feed body: {e}"))?;
        parse_feed(&body)
    }

    /// Fetches once into `calendar`: the events on success (stamped `now`),
    /// the failure otherwise (the last good copy stays). Returns the failure.
    pub async fn refresh(&self, calendar: &ServerCalendar, now: UnixMs) -> Result<usize, String> {
        match self.fetch().await {
            Ok(events) => {
                let n = events.len();
                calendar.replace(events, now);
                tracing::info!(events = n, "server calendar feed refreshed");
                Ok(n)
            }
            Err(e) => {
                tracing::warn!(error = %e, "server calendar feed refresh failed; keeping the last good copy");
                calendar.record_failure(e.clone());
                Err(e)
            }
        }
    }
}

fn now_ms() -> UnixMs {
    chrono::Utc::now().timestamp_millis()
}

/// Starts refreshing `calendar` from `feed`: at once, then every `every`
/// (a failure is retried after `min(every, RETRY_AFTER)`). The task ends when
/// the calendar is dropped. Needs a tokio runtime; `None` without one.
pub fn spawn_refresh(
    calendar: &Arc<ServerCalendar>,
    feed: CalendarFeed,
    every: Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let weak: Weak<ServerCalendar> = Arc::downgrade(calendar);
    let every = every.max(MIN_REFRESH);
    Some(handle.spawn(async move {
        loop {
            let Some(calendar) = weak.upgrade() else {
                return;
            };
            let wait = match feed.refresh(&calendar, now_ms()).await {
                Ok(_) => every,
                Err(_) => every.min(RETRY_AFTER),
            };
            drop(calendar);
            tokio::time::sleep(wait).await;
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_parsed_robustly() {
        let cases: [(&str, Option<f64>); 14] = [
            ("0.3%", Some(0.3)),
            ("-0.5M", Some(-500_000.0)),
            ("1.2K", Some(1200.0)),
            ("227K", Some(227_000.0)),
            ("2.1B", Some(2.1e9)),
            ("1.5T", Some(1.5e12)),
            ("<0.1%", Some(0.1)),
            ("4.50%", Some(4.5)),
            ("3.50|3.75", Some(3.5)),
            ("1,234.5", Some(1234.5)),
            ("", None),
            ("  ", None),
            ("n/a", None),
            ("%", None),
        ];
        for (text, want) in cases {
            let got = parse_value(text);
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9 * w.abs().max(1.0), "{text}: {g} vs {w}"),
                _ => assert_eq!(got, want, "{text}"),
            }
        }
    }

    #[test]
    fn a_feed_maps_onto_events() {
        let text = r#"[
          {"title":"Non-Farm Employment Change","country":"USD","date":"2026-12-04T08:30:00-05:00","impact":"High","forecast":"150K","previous":"119K"},
          {"title":"Bank Holiday","country":"JPY","date":"2026-11-23T00:00:00-05:00","impact":"Holiday","forecast":"","previous":""},
          {"title":"German Flash Manufacturing PMI","country":"EUR","date":"2026-11-23T03:30:00-05:00","impact":"Medium","forecast":"49.2","previous":"49.1","url":"https://example.invalid"},
          {"title":"OPEC Meetings","country":"All","date":"2026-11-24T00:00:00-05:00","impact":"Medium","forecast":"","previous":""},
          {"title":"Broken","country":"USD","date":"soon","impact":"High"}
        ]"#;
        let events = parse_feed(text).unwrap();
        assert_eq!(events.len(), 3, "`All` and a bad date are skipped");
        assert_eq!(events[0].currency, "JPY");
        assert!(events[0].is_holiday());
        assert_eq!(events[0].time, parse_iso("2026-11-23T05:00:00Z").unwrap());
        assert_eq!(events[1].category, "growth");
        assert_eq!((events[1].forecast, events[1].previous), (Some(49.2), Some(49.1)));
        let nfp = &events[2];
        assert_eq!(
            (
                nfp.importance,
                nfp.category.as_str(),
                nfp.forecast,
                nfp.previous,
                nfp.actual
            ),
            (Importance::High, "employment", Some(150_000.0), Some(119_000.0), None)
        );
        assert_eq!(nfp.time, parse_iso("2026-12-04T13:30:00Z").unwrap());
        assert_eq!(nfp.id, format!("ff-usd-{}-non-farm-employment-change", nfp.time));
        assert!(parse_feed("{}").is_err());
        assert!(parse_feed(r#"[{"title":"x","country":"All","date":"2026-11-24T00:00:00Z","impact":"Low"}]"#).is_err());
        assert_eq!(parse_feed("[]").unwrap().len(), 0);
        assert_eq!(category_of("FOMC Statement"), "central_bank");
        assert_eq!(category_of("CPI m/m"), "inflation");
        assert_eq!(category_of("Something Else"), "other");
    }

    #[test]
    fn urls_must_be_http() {
        assert!(CalendarFeed::new("ftp://x/ff.json").is_err());
        assert_eq!(
            CalendarFeed::new(" https://example.invalid/ff.json ").unwrap().url(),
            "https://example.invalid/ff.json"
        );
    }

    #[test]
    fn the_calendar_keeps_the_last_good_copy_and_says_how_old_it_is() {
        let cal = ServerCalendar::for_feed("http://127.0.0.1:1/ff.json", Duration::from_secs(60));
        assert!(cal.is_configured());
        let snap = cal.snapshot(1_000);
        assert_eq!((snap.available, snap.stale), (false, Some(true)));
        let events = parse_feed(
            r#"[{"title":"CPI m/m","country":"USD","date":"2026-11-26T13:30:00Z","impact":"High","forecast":"0.3%","previous":"0.2%"}]"#,
        )
        .unwrap();
        cal.replace(events, 10_000);
        let snap = cal.snapshot(20_000);
        assert_eq!(
            (snap.available, snap.stale, snap.as_of),
            (true, Some(false), Some(10_000))
        );
        assert_eq!(snap.events.len(), 1);
        // Older than two refresh intervals: stale, still served.
        assert_eq!(cal.snapshot(10_000 + 120_001).stale, Some(true));
        cal.record_failure("HTTP 503".into());
        let snap = cal.snapshot(20_000);
        assert_eq!((snap.available, snap.stale, snap.events.len()), (true, Some(true), 1));
        assert_eq!(snap.last_error.as_deref(), Some("HTTP 503"));
    }
}
