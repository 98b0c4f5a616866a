//! Time helpers. Core never reads a clock: instants are unix milliseconds
//! (UTC) passed in by the caller.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::time::{parse_iso, to_iso, weekday};
//!
//! let t = parse_iso("2026-11-18T12:00:00+01:00")?;
//! assert_eq!(to_iso(t), "2026-11-18T11:00:00Z");
//! assert_eq!(weekday(t), 3); // Wednesday (0 = Sunday, as in MQL)
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use chrono::{DateTime, SecondsFormat, Utc};

use crate::CoreError;

/// Milliseconds since the unix epoch, UTC.
pub type UnixMs = i64;

/// Milliseconds in one day.
pub const DAY_MS: i64 = 86_400_000;

/// Formats unix milliseconds as ISO 8601 UTC (`2024-01-02T03:04:05.678Z`;
/// milliseconds are omitted when zero).
pub fn to_iso(ms: UnixMs) -> String {
    match DateTime::<Utc>::from_timestamp_millis(ms) {
        Some(t) if ms % 1000 == 0 => t.to_rfc3339_opts(SecondsFormat::Secs, true),
        Some(t) => t.to_rfc3339_opts(SecondsFormat::Millis, true),
        None => String::from("invalid-time"),
    }
}

/// Parses an ISO 8601 / RFC 3339 instant (`Z` or offset) into unix milliseconds.
pub fn parse_iso(text: &str) -> Result<UnixMs, CoreError> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|e| CoreError::Parse(format!("bad time `{text}`: {e}")))
}

/// Weekday of an instant, 0 = Sunday … 6 = Saturday (MQL's convention).
pub fn weekday(ms: UnixMs) -> u8 {
    // 1970-01-01 was a Thursday (4).
    let days = ms.div_euclid(DAY_MS);
    ((days + 4).rem_euclid(7)) as u8
}

/// Milliseconds since midnight UTC of the instant's day.
pub fn ms_of_day(ms: UnixMs) -> i64 {
    ms.rem_euclid(DAY_MS)
}

/// Midnight UTC of the instant's day.
pub fn day_start(ms: UnixMs) -> UnixMs {
    ms - ms.rem_euclid(DAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        let ms = parse_iso("2017-04-19T09:00:00Z").unwrap();
        assert_eq!(ms, 1_492_592_400_000);
        assert_eq!(to_iso(ms), "2017-04-19T09:00:00Z");
        assert_eq!(to_iso(ms + 5), "2017-04-19T09:00:00.005Z");
        assert!(parse_iso("yesterday").is_err());
    }

    #[test]
    fn weekdays() {
        assert_eq!(weekday(0), 4); // Thursday
        let wed = parse_iso("2026-11-18T12:00:00Z").unwrap();
        assert_eq!(weekday(wed), 3);
        assert_eq!(ms_of_day(wed), 12 * 3_600_000);
        assert_eq!(day_start(wed) + ms_of_day(wed), wed);
    }
}
