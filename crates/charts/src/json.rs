//! Reading tool outputs as clients receive them: JSON with times as ISO 8601
//! strings (or unix milliseconds, which some nested records carry).

use serde_json::Value;
use tradeterm_core::time::parse_iso;

use crate::ChartError;

/// A time: an ISO 8601 string, or an integer of unix milliseconds.
pub(crate) fn time(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_iso(s).ok(),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        _ => None,
    }
}

/// A finite number.
pub(crate) fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|f| f.is_finite())
}

/// A non-negative integer index.
pub(crate) fn index(v: &Value) -> Option<usize> {
    v.as_u64().and_then(|n| usize::try_from(n).ok())
}

/// A string field, or `""`.
pub(crate) fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// The array `field` of `v`, or a [`ChartError::BadData`] naming what lacks it.
pub(crate) fn array<'a>(v: &'a Value, field: &str, what: &str) -> Result<&'a [Value], ChartError> {
    v.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| ChartError::BadData(format!("{what}: no `{field}` array")))
}

/// One bar of a `get_bars` output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candle {
    /// Open time, unix ms.
    pub time: i64,
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
}

/// The bars of a `get_bars` output (`{ "bars": [{ "time", "open", "high", "low", "close" }] }`),
/// oldest first; malformed bars are skipped.
pub(crate) fn candles(output: &Value) -> Result<Vec<Candle>, ChartError> {
    let bars = array(output, "bars", "bars")?;
    Ok(bars
        .iter()
        .filter_map(|b| {
            let c = Candle {
                time: time(b.get("time")?)?,
                open: num(b.get("open")?)?,
                high: num(b.get("high")?)?,
                low: num(b.get("low")?)?,
                close: num(b.get("close")?)?,
            };
            Some(c)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn times_are_iso_strings_or_milliseconds() {
        assert_eq!(time(&json!("1970-01-01T00:00:01Z")), Some(1000));
        assert_eq!(time(&json!("1970-01-01T01:00:01+01:00")), Some(1000));
        assert_eq!(time(&json!(1000)), Some(1000));
        assert_eq!(time(&json!(1000.0)), Some(1000));
        assert_eq!(time(&json!("yesterday")), None);
        assert_eq!(time(&json!(null)), None);
    }

    #[test]
    fn candles_skip_malformed_bars() {
        let out = json!({ "bars": [
            { "time": "2024-01-01T00:00:00Z", "open": 1, "high": 2, "low": 0.5, "close": 1.5, "volume": 3 },
            { "time": "bad", "open": 1, "high": 2, "low": 0.5, "close": 1.5 },
            { "time": 60000, "open": 1.5, "high": 1.6, "low": 1.4, "close": 1.45 },
        ]});
        let c = candles(&out).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].high, c[1].time), (2.0, 60_000));
        assert!(matches!(candles(&json!({})), Err(ChartError::BadData(_))));
    }
}
