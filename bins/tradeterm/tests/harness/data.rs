//! Tool outputs turned into `tradeterm_core` values, so that a test can run
//! the core functions on exactly the data the API returned.

use serde_json::{Value, json};
use tradeterm_core::Bar;
use tradeterm_core::events::{EconomicEvent, Importance};
use tradeterm_core::time::parse_iso;

/// A JSON number as `f64`; fails the test on anything else.
#[track_caller]
pub fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// An ISO 8601 time field as unix milliseconds; fails the test on anything else.
#[track_caller]
pub fn ms(v: &Value) -> i64 {
    let text = v.as_str().unwrap_or_else(|| panic!("not a time string: {v}"));
    parse_iso(text).unwrap_or_else(|e| panic!("not an ISO 8601 time: {text}: {e:?}"))
}

/// A bar as `get_bars` returns it.
pub fn bar_of(v: &Value) -> Bar {
    Bar {
        time: ms(&v["time"]),
        open: num(&v["open"]),
        high: num(&v["high"]),
        low: num(&v["low"]),
        close: num(&v["close"]),
        volume: num(&v["volume"]),
    }
}

/// The bars of a `get_bars` answer (its `data`).
pub fn bars_of(data: &Value) -> Vec<Bar> {
    data["bars"]
        .as_array()
        .unwrap_or_else(|| panic!("no bars in {data}"))
        .iter()
        .map(bar_of)
        .collect()
}

/// An economic event as the calendar tools return it.
pub fn event_of(v: &Value) -> EconomicEvent {
    let importance = match v["importance"].as_str().unwrap() {
        "low" => Importance::Low,
        "medium" => Importance::Medium,
        _ => Importance::High,
    };
    EconomicEvent {
        id: v["id"].as_str().unwrap().into(),
        time: ms(&v["time"]),
        currency: v["currency"].as_str().unwrap().into(),
        country: v["country"].as_str().unwrap().into(),
        name: v["name"].as_str().unwrap().into(),
        importance,
        category: v["category"].as_str().unwrap().into(),
        actual: v["actual"].as_f64(),
        forecast: v["forecast"].as_f64(),
        previous: v["previous"].as_f64(),
    }
}

/// A JSON object of a tool output whose ISO time `fields` are turned into
/// unix ms, deserialised into a core type.
pub fn with_ms<T: serde::de::DeserializeOwned>(v: &Value, fields: &[&str]) -> T {
    let mut v = v.clone();
    for f in fields {
        v[*f] = json!(ms(&v[*f]));
    }
    serde_json::from_value(v).unwrap()
}
