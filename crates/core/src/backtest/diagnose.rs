//! Finds where a strategy that serde refused goes wrong.
//!
//! Conditions and operands are untagged unions, so serde's own message for a
//! bad node is only "data did not match any variant" with no location. When
//! deserialising a [`Strategy`](super::Strategy) fails, [`locate`] walks the
//! JSON the way the DSL reads it and reports the first fault with its JSON
//! path (`entry_long.all[1].op: unknown operator "crosses" …`).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::BacktestError;
use super::dsl::{Costs, Op, PriceField, Sizing, Stop};

const CONDITIONS: [&str; 4] = ["entry_long", "exit_long", "entry_short", "exit_short"];
const TOP_LEVEL: [&str; 8] = [
    "entry_long",
    "exit_long",
    "entry_short",
    "exit_short",
    "stop_loss",
    "take_profit",
    "sizing",
    "costs",
];

fn fault(path: impl Into<String>, reason: impl Into<String>) -> BacktestError {
    BacktestError::Invalid {
        path: path.into(),
        reason: reason.into(),
    }
}

/// The first fault of a strategy tree serde refused, with its JSON path.
/// `None` when no fault is found (the caller then reports serde's message).
pub(crate) fn locate(value: &Value) -> Option<BacktestError> {
    let Some(obj) = value.as_object() else {
        return Some(fault(
            "",
            "a strategy is a JSON object (see docs/backtest-dsl.md), or a legacy form with \"type\"",
        ));
    };
    for key in obj.keys() {
        if !TOP_LEVEL.contains(&key.as_str()) {
            return Some(fault(
                key.as_str(),
                format!("unknown field; expected one of {}", TOP_LEVEL.join(", ")),
            ));
        }
    }
    for key in CONDITIONS {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null())
            && let Some(e) = condition(v, key)
        {
            return Some(e);
        }
    }
    for key in ["stop_loss", "take_profit"] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null())
            && let Some(e) = typed::<Stop>(v, key)
        {
            return Some(e);
        }
    }
    match obj.get("sizing") {
        None => {
            return Some(fault(
                "sizing",
                "missing: {\"type\": \"fixed_lots\" | \"risk_percent\" | \"all_in\", …}",
            ));
        }
        Some(v) => {
            if let Some(e) = typed::<Sizing>(v, "sizing") {
                return Some(e);
            }
        }
    }
    obj.get("costs").and_then(|v| typed::<Costs>(v, "costs"))
}

/// Serde's message for a node of a plain (tagged or struct) type, at `path`.
fn typed<T: DeserializeOwned>(v: &Value, path: &str) -> Option<BacktestError> {
    serde_json::from_value::<T>(v.clone())
        .err()
        .map(|e| fault(path, e.to_string()))
}

fn condition(v: &Value, path: &str) -> Option<BacktestError> {
    let Some(obj) = v.as_object() else {
        return Some(fault(
            path,
            "a condition is an object: {\"all\": [...]}, {\"any\": [...]}, {\"not\": {...}} or {\"left\", \"op\", \"right\"}",
        ));
    };
    for group in ["all", "any"] {
        if let Some(items) = obj.get(group) {
            if let Some(e) = only_keys(obj, &[group], path) {
                return Some(e);
            }
            let Some(items) = items.as_array() else {
                return Some(fault(format!("{path}.{group}"), "must be an array of conditions"));
            };
            return items
                .iter()
                .enumerate()
                .find_map(|(i, c)| condition(c, &format!("{path}.{group}[{i}]")));
        }
    }
    if let Some(inner) = obj.get("not") {
        if let Some(e) = only_keys(obj, &["not"], path) {
            return Some(e);
        }
        return condition(inner, &format!("{path}.not"));
    }
    if let Some(e) = only_keys(obj, &["left", "op", "right"], path) {
        return Some(e);
    }
    for key in ["left", "op", "right"] {
        if !obj.contains_key(key) {
            return Some(fault(
                format!("{path}.{key}"),
                "missing (a comparison is {\"left\", \"op\", \"right\"})",
            ));
        }
    }
    if serde_json::from_value::<Op>(obj["op"].clone()).is_err() {
        return Some(fault(
            format!("{path}.op"),
            format!(
                "unknown operator {}; expected gt, gte, lt, lte, cross_above or cross_below",
                obj["op"]
            ),
        ));
    }
    operand(&obj["left"], &format!("{path}.left")).or_else(|| operand(&obj["right"], &format!("{path}.right")))
}

fn only_keys(obj: &Map<String, Value>, allowed: &[&str], path: &str) -> Option<BacktestError> {
    obj.keys().find(|k| !allowed.contains(&k.as_str())).map(|k| {
        fault(
            format!("{path}.{k}"),
            format!("unknown field here; expected {}", allowed.join(", ")),
        )
    })
}

fn operand(v: &Value, path: &str) -> Option<BacktestError> {
    let Some(obj) = v.as_object() else {
        return Some(fault(
            path,
            "an operand is an object: {\"indicator\", \"params\"?, \"output\"?, \"shift\"?}, {\"price\", \"shift\"?} or {\"value\"}",
        ));
    };
    let shift = |obj: &Map<String, Value>| {
        obj.get("shift")
            .filter(|s| s.as_u64().is_none())
            .map(|_| fault(format!("{path}.shift"), "must be a whole number of bars ≥ 0"))
    };
    if let Some(name) = obj.get("indicator") {
        if let Some(e) = only_keys(obj, &["indicator", "params", "output", "shift"], path) {
            return Some(e);
        }
        if !name.is_string() {
            return Some(fault(
                format!("{path}.indicator"),
                "must be an indicator name (a string)",
            ));
        }
        if let Some(params) = obj.get("params") {
            let Some(params) = params.as_object() else {
                return Some(fault(format!("{path}.params"), "must be an object of numbers"));
            };
            if let Some((k, _)) = params.iter().find(|(_, x)| !x.is_number()) {
                return Some(fault(format!("{path}.params.{k}"), "must be a number"));
            }
        }
        if obj.get("output").is_some_and(|o| !o.is_string()) {
            return Some(fault(format!("{path}.output"), "must be an output name (a string)"));
        }
        return shift(obj);
    }
    if let Some(price) = obj.get("price") {
        if let Some(e) = only_keys(obj, &["price", "shift"], path) {
            return Some(e);
        }
        if serde_json::from_value::<PriceField>(price.clone()).is_err() {
            return Some(fault(
                format!("{path}.price"),
                format!("unknown price {price}; expected open, high, low or close"),
            ));
        }
        return shift(obj);
    }
    if let Some(value) = obj.get("value") {
        if let Some(e) = only_keys(obj, &["value"], path) {
            return Some(e);
        }
        if !value.is_number() {
            return Some(fault(format!("{path}.value"), "must be a number"));
        }
        return None;
    }
    Some(fault(
        path,
        "an operand needs one of \"indicator\", \"price\" or \"value\"",
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::parse_strategy;

    fn error(v: serde_json::Value) -> String {
        // A fault of the whole strategy has an empty path.
        parse_strategy(&v)
            .unwrap_err()
            .to_string()
            .trim_start_matches(": ")
            .to_owned()
    }

    fn cmp(left: serde_json::Value, op: &str, right: serde_json::Value) -> serde_json::Value {
        json!({"left": left, "op": op, "right": right})
    }

    #[test]
    fn every_kind_of_bad_node_is_named_by_its_path() {
        let close = json!({"price": "close"});
        let one = json!({"value": 1});
        let ok = cmp(close.clone(), "gt", one.clone());
        let with = |entry: serde_json::Value| json!({"entry_long": entry, "sizing": {"type": "all_in"}});
        let cases = [
            (
                with(cmp(close.clone(), "crosses", one.clone())),
                "entry_long.op: unknown operator \"crosses\"",
            ),
            (
                with(json!({"all": [ok.clone(), cmp(close.clone(), "gt", json!({"valu": 1}))]})),
                "entry_long.all[1].right: an operand needs one of",
            ),
            (
                with(json!({"any": [ok.clone(), {"not": {"left": close, "op": "gt"}}]})),
                "entry_long.any[1].not.right: missing",
            ),
            (with(json!({"all": ok.clone()})), "entry_long.all: must be an array"),
            (
                with(cmp(json!({"price": "mid"}), "gt", one.clone())),
                "entry_long.left.price: unknown price \"mid\"",
            ),
            (
                with(cmp(
                    json!({"indicator": "sma", "params": {"period": "20"}}),
                    "gt",
                    one.clone(),
                )),
                "entry_long.left.params.period: must be a number",
            ),
            (
                with(cmp(json!({"indicator": "sma", "shift": -1}), "gt", one.clone())),
                "entry_long.left.shift: must be a whole number",
            ),
            (
                with(json!({"left": {"value": 1}, "op": "gt", "right": {"value": 2}, "extra": 1})),
                "entry_long.extra: unknown field",
            ),
            (with(json!("close > 1")), "entry_long: a condition is an object"),
            (
                json!({"entry_long": ok.clone(), "sizing": {"type": "all_in"}, "stop": 1}),
                "stop: unknown field",
            ),
            (json!({"entry_long": ok.clone()}), "sizing: missing"),
            (
                json!({"entry_long": ok.clone(), "sizing": {"type": "martingale"}}),
                "sizing: unknown variant `martingale`",
            ),
            (
                json!({"entry_long": ok.clone(), "sizing": {"type": "all_in"}, "stop_loss": {"type": "atr"}}),
                "stop_loss: missing field `multiple`",
            ),
            (
                json!({"entry_long": ok, "sizing": {"type": "all_in"}, "costs": {"spread": "1"}}),
                "costs: invalid type",
            ),
            (json!([1, 2]), "a strategy is a JSON object"),
        ];
        for (strategy, expected) in cases {
            let e = error(strategy.clone());
            assert!(e.starts_with(expected), "{strategy}\n  gave {e}\n  expected {expected}");
        }
    }
}
