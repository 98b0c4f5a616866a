//! Time helpers. Core never reads a clock: instants are unix milliseconds
//! (UTC) passed in by the caller.
//!
//! Core computes on [`UnixMs`]; the serde adapter [`iso`] is how those
//! instants appear in JSON: ISO 8601 UTC text with JSON Schema
//! `format: date-time`. Every time field of a type that reaches a tool output
//! carries it, so the REST API and MCP show one time format. (The agent
//! protocol alone keeps unix milliseconds on the wire; `tradeterm-protocol`
//! maps the core types for that.)
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

use std::fmt;

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

/// Serde adapter that writes a [`UnixMs`] as ISO 8601 UTC text (as
/// [`to_iso`]: `Z`, milliseconds only when non-zero) and reads it back.
///
/// Reading accepts an RFC 3339 / ISO 8601 string with `Z` or an offset
/// (`2024-01-02T03:04:05+02:00` is `2024-01-02T01:04:05Z`) and, so that JSON
/// stored before times were written as text stays readable, an integer of
/// unix milliseconds. Anything else is an error naming the bad text.
///
/// Use it with [`iso::Schema`] so the JSON Schema says the same
/// (`{"type": "string", "format": "date-time"}`); [`iso::option`] and
/// [`iso::vec`] do the same for `Option<UnixMs>` and `Vec<UnixMs>`.
///
/// # Example
///
/// ```
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use tradeterm_core::time::{UnixMs, iso};
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct Fill {
///     #[serde(with = "iso")]
///     #[schemars(with = "iso::Schema")]
///     time: UnixMs,
///     #[serde(default, with = "iso::option")]
///     #[schemars(with = "Option<iso::Schema>")]
///     closed: Option<UnixMs>,
/// }
///
/// let fill = Fill { time: 1_704_164_645_678, closed: None };
/// let text = serde_json::to_string(&fill)?;
/// assert_eq!(text, r#"{"time":"2024-01-02T03:04:05.678Z","closed":null}"#);
///
/// // Offsets are read as the same instant; integers are unix milliseconds.
/// let read: Fill = serde_json::from_str(r#"{"time":"2024-01-02T05:04:05.678+02:00"}"#)?;
/// assert_eq!(read.time, fill.time);
/// let old: Fill = serde_json::from_str(r#"{"time":1704164645678,"closed":1704164646000}"#)?;
/// assert_eq!((old.time, old.closed), (fill.time, Some(1_704_164_646_000)));
///
/// let schema = serde_json::to_value(schemars::schema_for!(Fill))?;
/// assert_eq!(schema["properties"]["time"]["format"], "date-time");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod iso {
    use std::borrow::Cow;

    use schemars::{JsonSchema, SchemaGenerator, json_schema};
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    use super::{UnixMs, fmt, parse_iso, to_iso};

    /// Writes `ms` as ISO 8601 UTC text.
    pub fn serialize<S: Serializer>(ms: &UnixMs, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&to_iso(*ms))
    }

    /// Reads ISO 8601 / RFC 3339 text, or an integer of unix milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<UnixMs, D::Error> {
        deserializer.deserialize_any(InstantVisitor)
    }

    /// The JSON Schema of a time written by this adapter:
    /// `{"type": "string", "format": "date-time"}` (inlined, never a `$ref`).
    #[derive(Debug, Clone, Copy)]
    pub struct Schema;

    impl JsonSchema for Schema {
        fn inline_schema() -> bool {
            true
        }

        fn schema_name() -> Cow<'static, str> {
            "DateTime".into()
        }

        fn json_schema(_generator: &mut SchemaGenerator) -> schemars::Schema {
            json_schema!({ "type": "string", "format": "date-time" })
        }
    }

    struct InstantVisitor;

    impl Visitor<'_> for InstantVisitor {
        type Value = UnixMs;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an ISO 8601 time such as 2024-01-02T03:04:05Z, or unix milliseconds")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<UnixMs, E> {
            parse_iso(text).map_err(E::custom)
        }

        fn visit_i64<E: de::Error>(self, ms: i64) -> Result<UnixMs, E> {
            Ok(ms)
        }

        fn visit_u64<E: de::Error>(self, ms: u64) -> Result<UnixMs, E> {
            UnixMs::try_from(ms).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(ms), &self))
        }
    }

    /// [`iso`](self) for `Option<UnixMs>`: `None` is `null`. Add
    /// `#[serde(default)]` on the field so that an absent value reads as
    /// `None`; schema `Option<iso::Schema>`.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        use super::UnixMs;

        /// Writes `Some` as ISO 8601 UTC text, `None` as `null`.
        pub fn serialize<S: Serializer>(ms: &Option<UnixMs>, serializer: S) -> Result<S::Ok, S::Error> {
            match ms {
                Some(ms) => super::serialize(ms, serializer),
                None => serializer.serialize_none(),
            }
        }

        /// Reads `null` as `None`, else as [`iso::deserialize`](super::deserialize).
        pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<UnixMs>, D::Error> {
            Ok(Option::<Instant>::deserialize(deserializer)?.map(|t| t.0))
        }

        struct Instant(UnixMs);

        impl<'de> Deserialize<'de> for Instant {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                super::deserialize(deserializer).map(Instant)
            }
        }
    }

    /// [`iso`](self) for `Vec<UnixMs>`: an array of ISO 8601 texts; schema
    /// `Vec<iso::Schema>`.
    pub mod vec {
        use serde::ser::SerializeSeq;
        use serde::{Deserialize, Deserializer, Serializer};

        use crate::time::{UnixMs, to_iso};

        /// Writes each instant as ISO 8601 UTC text.
        pub fn serialize<S: Serializer>(times: &[UnixMs], serializer: S) -> Result<S::Ok, S::Error> {
            let mut seq = serializer.serialize_seq(Some(times.len()))?;
            for ms in times {
                seq.serialize_element(&to_iso(*ms))?;
            }
            seq.end()
        }

        /// Reads an array of times as [`iso::deserialize`](super::deserialize) does.
        pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<UnixMs>, D::Error> {
            Ok(Vec::<Instant>::deserialize(deserializer)?
                .into_iter()
                .map(|t| t.0)
                .collect())
        }

        struct Instant(UnixMs);

        impl<'de> Deserialize<'de> for Instant {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                super::deserialize(deserializer).map(Instant)
            }
        }
    }
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

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Stamped {
        #[serde(with = "iso")]
        #[schemars(with = "iso::Schema")]
        at: UnixMs,
        #[serde(default, with = "iso::option", skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<iso::Schema>")]
        until: Option<UnixMs>,
        #[serde(default, with = "iso::vec")]
        #[schemars(with = "Vec<iso::Schema>")]
        marks: Vec<UnixMs>,
    }

    #[test]
    fn iso_adapter_round_trips() {
        let cases = [
            Stamped {
                at: 1_492_592_400_000,
                until: None,
                marks: vec![],
            },
            Stamped {
                at: 1_492_592_400_005,
                until: Some(-1),
                marks: vec![0, 86_399_999],
            },
        ];
        let texts = [
            r#"{"at":"2017-04-19T09:00:00Z","marks":[]}"#,
            r#"{"at":"2017-04-19T09:00:00.005Z","until":"1969-12-31T23:59:59.999Z","marks":["1970-01-01T00:00:00Z","1970-01-01T23:59:59.999Z"]}"#,
        ];
        for (value, text) in cases.iter().zip(texts) {
            assert_eq!(serde_json::to_string(value).unwrap(), text);
            assert_eq!(&serde_json::from_str::<Stamped>(text).unwrap(), value);
        }
    }

    #[test]
    fn iso_adapter_reads_offsets_and_unix_ms() {
        let read = |text: &str| serde_json::from_str::<Stamped>(text).map(|s| (s.at, s.until, s.marks));
        let at = 1_492_592_400_000;
        assert_eq!(
            read(r#"{"at":"2017-04-19T11:00:00+02:00"}"#).unwrap(),
            (at, None, vec![])
        );
        assert_eq!(read(r#"{"at":"2017-04-19T04:30:00-04:30"}"#).unwrap().0, at);
        assert_eq!(
            read(r#"{"at":1492592400000,"until":1492592400001,"marks":[0,"1970-01-01T00:00:01Z"]}"#).unwrap(),
            (at, Some(at + 1), vec![0, 1000])
        );
        assert_eq!(read(r#"{"at":-5,"until":null}"#).unwrap(), (-5, None, vec![]));
    }

    #[test]
    fn iso_adapter_rejects_bad_input() {
        for (text, needle) in [
            (r#"{"at":"yesterday"}"#, "bad time `yesterday`"),
            (r#"{"at":"2017-04-19 09:00:00"}"#, "bad time"),
            (r#"{"at":"2017-04-19T09:00:00"}"#, "bad time"),
            (r#"{"at":1.5}"#, "an ISO 8601 time"),
            (r#"{"at":true}"#, "an ISO 8601 time"),
            (r#"{"at":null}"#, "an ISO 8601 time"),
            (r#"{"at":18446744073709551615}"#, "an ISO 8601 time"),
            (r#"{"at":0,"until":"soon"}"#, "bad time `soon`"),
            (r#"{"at":0,"marks":["1970-01-01T00:00:00Z",[]]}"#, "an ISO 8601 time"),
        ] {
            let err = serde_json::from_str::<Stamped>(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn iso_adapter_schema_is_a_date_time_string() {
        let schema = serde_json::to_value(schemars::schema_for!(Stamped)).unwrap();
        let props = &schema["properties"];
        assert_eq!(
            props["at"],
            serde_json::json!({ "type": "string", "format": "date-time" })
        );
        assert_eq!(
            props["until"],
            serde_json::json!({ "type": ["string", "null"], "format": "date-time" })
        );
        assert_eq!(
            props["marks"],
            serde_json::json!({ "type": "array", "items": { "type": "string", "format": "date-time" }, "default": [] })
        );
        assert!(schema.get("$defs").is_none(), "inlined, never a $ref: {schema}");
        assert_eq!(schema["required"], serde_json::json!(["at"]));
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
