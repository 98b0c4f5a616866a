//! `docs/events.md` lists every event type with the JSON Schema of its
//! `data` and an example, generated here: `UPDATE_DOCS=1 cargo test -p
//! tradeterm-events --test docs` rewrites the generated part.

use serde_json::{Value, json};
use tradeterm_events::EventType;

const BEGIN: &str = "<!-- BEGIN GENERATED: event types (cargo test -p tradeterm-events --test docs) -->";
const END: &str = "<!-- END GENERATED: event types -->";

fn deal(entry: &str, profit: f64, comment: &str) -> Value {
    json!({
        "ticket": 5001, "order": 7001, "position": 7001, "symbol": "EURUSD", "side": if entry == "in" { "buy" } else { "sell" },
        "entry": entry, "volume": 0.1, "price": if entry == "in" { 1.08452 } else { 1.08391 },
        "time": "2026-12-01T19:00:00Z", "profit": profit, "swap": 0.0, "commission": 0.0, "magic": 0, "comment": comment,
    })
}

/// An example `data` of each type, checked against the type's own data type.
fn example(kind: EventType) -> Value {
    use EventType::*;
    let order = json!({ "order": 7002, "position": 0 });
    match kind {
        Quote => json!({ "symbol": "EURUSD", "bid": 1.08452, "ask": 1.08461, "time": "2026-12-01T19:00:00.250Z" }),
        BarClosed => json!({
            "symbol": "EURUSD", "timeframe": "M1",
            "bar": { "time": "2026-12-01T18:59:00Z", "open": 1.08437, "high": 1.08466, "low": 1.08431, "close": 1.08452, "volume": 57.0 },
        }),
        OrderPlaced | OrderModified | OrderCancelled | OrderExpired => order,
        OrderRejected => json!({ "order": 7002, "position": 0, "reason": "invalid stops" }),
        OrderFilled => json!({ "order": 7001, "position": 7001, "deal": deal("in", 0.0, "") }),
        PositionOpened => json!({ "position": 7001, "deal": deal("in", 0.0, "") }),
        PositionModified => {
            json!({ "position": 7001, "change": "partial_close", "volume": 0.05, "deal": deal("out", -3.05, "") })
        }
        PositionClosed => json!({
            "position": 7001, "symbol": "EURUSD", "price": 1.08391, "profit": -6.1, "reason": "sl", "deal": deal("out", -6.1, "[sl 1.08391]"),
        }),
        DealAdded => json!({ "deal": deal("in", 0.0, "") }),
        AccountChanged => json!({
            "currency": "USD", "balance": 10000.0, "equity": 9993.9, "margin": 21.69, "free_margin": 9972.21, "margin_level": 46076.07, "profit": -6.1,
        }),
        AlertFired => json!({
            "rule": "alr_3f2a…", "message": "EURUSD bid 1.08461 crossed above 1.0845", "symbol": "EURUSD",
            "details": { "label": "breakout", "condition_kind": "price", "observed_at": "2026-12-01T19:00:00.250Z", "value": 1.08461, "level": 1.0845, "message": "EURUSD bid 1.08461 crossed above 1.0845" },
        }),
        NewsGuardAlert => json!({
            "rule": "news_guard", "message": "USD Non-Farm Payrolls in 30 min (2026-12-04T13:30:00Z)",
            "details": { "id": "release:ff-2026-12-04-usd-nfp:30", "kind": "release_ahead", "fired_at": "2026-12-04T13:00:00Z",
                         "title": "USD Non-Farm Payrolls in 30 min (2026-12-04T13:30:00Z)", "currencies": ["USD"],
                         "event": { "id": "ff-2026-12-04-usd-nfp", "time": "2026-12-04T13:30:00Z", "currency": "USD", "name": "Non-Farm Payrolls", "importance": "high" } },
        }),
        EquityGuardBreached => json!({
            "rule": "daily_loss", "message": "equity guard: daily loss 512.40 reached the limit of 500.00",
            "details": { "source": "equity_guard", "status": "blocked", "rule": "daily_loss", "time": "2026-12-01T19:00:00Z", "equity": 9487.6, "limit": 500.0, "value": 512.4, "message": "daily loss 512.40 reached the limit of 500.00" },
        }),
        EquityGuardRecovered => json!({
            "rule": "daily_loss", "message": "equity guard: a new trading day began; the breached rules (daily_loss) are within their limits again",
            "details": { "source": "equity_guard", "status": "ok", "rules": ["daily_loss"] },
        }),
        PropFirmStatusChanged => json!({
            "rule": "prop_firm", "message": "prop-firm verdict warning → critical: daily loss at 91 % of its limit", "details": { "from": "warning", "to": "critical" },
        }),
        ManagedAction => json!({
            "managed": "mxo_8e1b…", "kind": "trailing_stop", "label": "trail EURUSD", "symbol": "EURUSD", "dry_run": false,
            "message": "stop loss of position 7001 moved to 1.08252", "action": { "action": "set_stop", "ticket": 7001, "stop_loss": 1.08252 }, "outcome": "done",
        }),
        ManagedPaused => json!({
            "managed": "mxo_8e1b…", "kind": "trailing_stop", "symbol": "EURUSD", "dry_run": false,
            "message": "paused: terminal unreachable: no agent is connected", "reason": "terminal_unreachable",
        }),
        ManagedResumed => json!({
            "managed": "mxo_8e1b…", "kind": "trailing_stop", "symbol": "EURUSD", "dry_run": false, "message": "the terminal is back: acting on the current price",
        }),
        ManagedEnded => json!({
            "managed": "mxo_8e1b…", "kind": "trailing_stop", "symbol": "EURUSD", "dry_run": false,
            "message": "position 7001 is no longer open", "reason": "position_closed",
        }),
        WebhookDisabled => json!({
            "webhook": "whk_5c1e…", "url": "https://example.com/hooks/tradeterm", "failing_since": "2026-11-28T19:00:00Z",
            "message": "deliveries to https://example.com/hooks/tradeterm failed for 3 days (last: HTTP 503); the endpoint is disabled",
        }),
        TerminalConnected => {
            json!({ "agent": "tradeterm-agent-mql5", "agent_version": "1.0.0", "trading_enabled": true })
        }
        TerminalDisconnected => json!({ "reason": "heartbeat timeout" }),
        TradingPermissionChanged => {
            json!({ "allow_trading": true, "automated_trading": false, "trading_enabled": false })
        }
        StreamGap => {
            json!({ "after": "1796151600000-0", "message": "events after this id are older than the retention window and were dropped" })
        }
        StreamCut => {
            json!({ "resume_after": "1796151600123-4", "message": "the consumer did not keep up (4096 events buffered); resume after the last event received" })
        }
    }
}

fn envelope(kind: EventType) -> Value {
    let mut e = json!({
        "id": "1796151600123-4",
        "type": kind.as_str(),
        "version": 1,
        "time": "2026-12-01T19:00:00.251Z",
        "terminal_id": "term_7df46c7e81aa0587d08f98a2",
        "data": example(kind),
    });
    if matches!(kind, EventType::Quote | EventType::StreamGap | EventType::StreamCut) {
        e.as_object_mut().unwrap().remove("id");
    }
    if matches!(
        kind,
        EventType::StreamGap | EventType::StreamCut | EventType::WebhookDisabled | EventType::NewsGuardAlert
    ) {
        e.as_object_mut().unwrap().remove("terminal_id");
    }
    if let Some(symbol) = e["data"]["symbol"].as_str().or(e["data"]["deal"]["symbol"].as_str()) {
        let symbol = symbol.to_owned();
        e["symbol"] = json!(symbol);
    }
    e
}

fn generated() -> String {
    let mut out = String::new();
    let mut group = "";
    for kind in EventType::ALL {
        if kind.group() != group {
            group = kind.group();
            out.push_str(&format!("\n### {group}\n"));
        }
        let schema = kind.data_schema();
        out.push_str(&format!("\n#### `{}`\n\n{}\n\n", kind.as_str(), kind.description()));
        out.push_str("<details><summary>JSON Schema of <code>data</code></summary>\n\n```json\n");
        out.push_str(&serde_json::to_string_pretty(&schema).unwrap());
        out.push_str("\n```\n\n</details>\n\nExample:\n\n```json\n");
        out.push_str(&serde_json::to_string(&envelope(*kind)).unwrap());
        out.push_str("\n```\n");
    }
    out
}

#[test]
fn every_example_is_an_event_of_its_type() {
    for kind in EventType::ALL {
        let event: tradeterm_events::Event = serde_json::from_value(envelope(*kind)).unwrap();
        assert_eq!(event.kind, *kind);
        if *kind == EventType::BarClosed {
            let bar: tradeterm_events::model::BarClosedData = serde_json::from_value(event.data.clone()).unwrap();
            assert_eq!(event.symbol.as_deref(), Some(bar.symbol.as_str()));
        }
        // The example's data reads as the type's data (field names and types).
        let schema = kind.data_schema();
        for required in schema["required"].as_array().into_iter().flatten() {
            let field = required.as_str().unwrap();
            assert!(event.data.get(field).is_some(), "{kind}: example lacks `{field}`");
        }
        for field in event.data.as_object().unwrap().keys() {
            assert!(
                schema["properties"].get(field).is_some(),
                "{kind}: `{field}` is not in the schema"
            );
        }
    }
}

#[test]
fn docs_list_every_event_type_with_its_schema_and_an_example() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/events.md");
    let text = std::fs::read_to_string(path).unwrap();
    let (start, end) = (
        text.find(BEGIN).expect("the begin marker"),
        text.find(END).expect("the end marker"),
    );
    let expected = format!("{BEGIN}\n{}\n{END}", generated());
    let current = &text[start..end + END.len()];
    if current != expected {
        if std::env::var("UPDATE_DOCS").is_ok_and(|v| v == "1") {
            let updated = format!("{}{expected}{}", &text[..start], &text[end + END.len()..]);
            std::fs::write(path, updated).unwrap();
        } else {
            panic!("docs/events.md is out of date; run `UPDATE_DOCS=1 cargo test -p tradeterm-events --test docs`");
        }
    }
}
