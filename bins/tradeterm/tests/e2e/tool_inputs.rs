//! Hostile inputs to every tool of the catalog, over REST against the real
//! stack with a simulated terminal: each answer is the spec's envelope
//! (`data`, or `error` with a code and message) and never a 500, a dropped
//! connection or a leaked panic, whatever the input. Trading stays off on the
//! simulated terminal, and no input here asks for a live call that could
//! pass: trade tools are dry runs unless `dry_run` is `false`, which is never
//! sent.
//!
//! Inputs are built from each tool's own input schema: a plausible base value
//! for every property (by type and name), then one property at a time
//! replaced by a hostile value (wrong type, extreme number, huge string,
//! nested junk), plus whole bodies that are not objects at all.

use serde_json::{Map, Value, json};

use crate::harness::{Expect, Options, spawn};

/// A plausible value for a property, from its schema and name.
fn plausible(name: &str, schema: &Value, defs: &Value) -> Value {
    let schema = resolve(schema, defs);
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(values) = schema["enum"].as_array()
        && let Some(first) = values.first()
    {
        return first.clone();
    }
    if let Some(options) = schema["oneOf"].as_array().or(schema["anyOf"].as_array())
        && let Some(first) = options.iter().find(|o| o["type"] != "null")
    {
        return plausible(name, first, defs);
    }
    let ty = match &schema["type"] {
        Value::String(s) => s.clone(),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_owned(),
        _ => String::new(),
    };
    match ty.as_str() {
        "string" => json!(match name {
            "symbol" => "EURUSD",
            "timeframe" => "H1",
            "side" => "buy",
            "from" => "2026-11-01T00:00:00Z",
            "to" => "2026-11-20T00:00:00Z",
            "indicator" => "rsi",
            _ => "x",
        }),
        "integer" => json!(match name {
            "bars" | "count" | "correlation_bars" => 200,
            "lookback" | "lookback_days" | "max_points" | "window_minutes" => 60,
            _ => schema["minimum"].as_f64().map_or(1, |m| m.max(1.0) as i64),
        }),
        "number" => json!(if name.contains("volume") { 0.01 } else { 1.0 }),
        "boolean" => json!(true),
        "array" => json!([]),
        "object" => json!({}),
        _ => Value::Null,
    }
}

/// Follows a `$ref` into `$defs`.
fn resolve<'a>(schema: &'a Value, defs: &'a Value) -> &'a Value {
    match schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
        Some(name) => defs.get(name).unwrap_or(schema),
        None => schema,
    }
}

fn hostile() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(0),
        json!(1e308),
        json!(-1e308),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(0.5),
        json!(""),
        json!("x".repeat(10_000)),
        json!("\u{0}\u{202e}'\";--<script>"),
        json!("2026-13-45T99:99:99Z"),
        json!([1, "a", null, [[]]]),
        json!({ "nested": { "deeper": [1e308] } }),
        Value::Array(vec![json!("EURUSD"); 50]),
    ]
}

#[tokio::test]
async fn no_input_makes_any_tool_answer_outside_the_envelope() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let mut calls = 0;
    let mut base_ok = Vec::new();
    for tool in tradeterm_tools::catalog() {
        let schema = &tool.input_schema;
        let defs = &schema["$defs"];
        let props = schema["properties"].as_object().cloned().unwrap_or_default();
        let base: Map<String, Value> = props
            .iter()
            .filter(|(k, _)| k.as_str() != "dry_run")
            .map(|(k, s)| (k.clone(), plausible(k, s, defs)))
            .collect();
        let mut bodies: Vec<Value> = vec![
            Value::Object(base.clone()),
            json!([]),
            json!("text"),
            json!(42),
            json!({ "unknown_field": 1 }),
        ];
        for key in props.keys().filter(|k| k.as_str() != "dry_run") {
            for bad in hostile() {
                let mut body = base.clone();
                body.insert(key.clone(), bad);
                bodies.push(Value::Object(body));
            }
        }
        for (i, body) in bodies.iter().enumerate() {
            calls += 1;
            let context = || {
                format!(
                    "{} with {}",
                    tool.name,
                    body.to_string().chars().take(300).collect::<String>()
                )
            };
            // The client fails the test on anything but the envelope (and on
            // a body that is not JSON or a dropped connection).
            let error = match t.tool(tool.name, body).await {
                Ok(_) => {
                    if i == 0 {
                        base_ok.push(tool.name);
                    }
                    continue;
                }
                Err(e) => e,
            };
            assert!(
                !error.code.is_empty() && !error.message.is_empty(),
                "{}: {error}",
                context()
            );
            assert!(
                matches!(error.status, 400 | 403 | 404 | 409 | 422 | 502),
                "{}: {error}",
                context()
            );
            assert!(
                !error.message.contains("panicked") && !error.message.contains("src/"),
                "{}: leaks internals: {error}",
                context()
            );
        }
    }
    assert!(calls > 1000, "{calls} calls");
    // The plausible bodies reach the handlers: most tools answer them.
    eprintln!(
        "{calls} calls; plausible body answered by {} of {} tools",
        base_ok.len(),
        tradeterm_tools::catalog().len()
    );
    assert!(base_ok.len() * 2 > tradeterm_tools::catalog().len(), "{base_ok:?}");
    // The stack still answers after all of it.
    t.api().terminals().await.data();
    t.stack.stop().await;
}
