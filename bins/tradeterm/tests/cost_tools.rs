//! The cost tools end to end: REST over the real stack with simulated
//! terminals (`POST /api/v1/tools/{name}`): `get_equity_curve` against the
//! account and the deal history after a live round trip, `get_swap_calendar`
//! against the symbol specification, `estimate_fill` against the quotes, and
//! the validation errors of all three.

mod common;

use common::{Options, WEDNESDAY_NOON, spawn};
use serde_json::{Value, json};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};

fn assert_validation(s: u16, b: &Value, needle: &str) {
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{b}");
    let msg = b["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains(needle), "message `{msg}` should mention `{needle}`");
    assert_eq!(b.as_object().map(|o| o.len()), Some(1), "only the error envelope: {b}");
}

fn close_to(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

async fn tool(t: &common::TestStack, name: &str, input: &Value) -> Value {
    let (s, b) = t.post(&format!("/api/v1/tools/{name}"), None, input, None).await;
    assert_eq!(s, 200, "{name} {input}: {b}");
    b["data"].clone()
}

#[tokio::test]
async fn equity_curve_matches_the_account_and_the_deal_history_after_a_live_round_trip() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    // Open and close a live position.
    let order =
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false, "comment": "curve.1" });
    let (s, b) = t.post("/api/v1/orders", None, &order, None).await;
    assert_eq!(s, 200, "{b}");
    let ticket = b["data"]["trade"]["position"].as_u64().unwrap();

    // While it is open, the curve of the range reaching now ends with the equity.
    let open = tool(&t, "get_equity_curve", &json!({})).await;
    let last = open["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "equity", "{open}");
    assert!(close_to(
        f(&open["floating_profit"]),
        f(&last["value"]) - f(&open["ending_balance"])
    ));

    let (s, b) = t
        .post(
            &format!("/api/v1/positions/{ticket}/close"),
            None,
            &json!({ "dry_run": false }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");

    // The simulated clock started at WEDNESDAY_NOON: its history starts there.
    let range = json!({ "from": to_iso(WEDNESDAY_NOON - 3_600_000), "to": to_iso(WEDNESDAY_NOON + DAY_MS) });
    let curve = tool(&t, "get_equity_curve", &range).await;
    let history = tool(&t, "get_deal_history", &range).await;
    let account = tool(&t, "get_account_info", &json!({})).await;

    let balance = f(&account["balance"]);
    assert!(close_to(f(&curve["ending_balance"]), balance), "{curve} vs {account}");
    let deals = history["deals"].as_array().unwrap();
    let trading: f64 = deals
        .iter()
        .filter(|d| d["entry"] != "balance")
        .map(|d| f(&d["profit"]) + f(&d["swap"]) + f(&d["commission"]))
        .sum();
    assert!(close_to(f(&curve["net_profit"]), trading), "{curve} vs {history}");
    let deposits: f64 = deals
        .iter()
        .filter(|d| d["entry"] == "balance" && f(&d["profit"]) > 0.0)
        .map(|d| f(&d["profit"]))
        .sum();
    assert!(deposits > 0.0, "the initial deposit is in the range: {history}");
    assert!(close_to(f(&curve["deposits"]), deposits));
    // The range holds the whole history: the curve starts from nothing.
    assert!(close_to(f(&curve["starting_balance"]), 0.0), "{curve}");
    assert!(close_to(
        f(&curve["starting_balance"]) + f(&curve["deposits"]) - f(&curve["withdrawals"]) + f(&curve["net_profit"]),
        balance
    ));
    assert_eq!(curve["trades"], 1);
    assert_eq!(curve["currency"], account["currency"]);

    // Points: start, deposit, the closing trade; the last deal point is the balance.
    let points = curve["points"].as_array().unwrap();
    assert_eq!(points[0]["kind"], "start");
    let close_deal = deals.iter().find(|d| d["entry"] == "out").unwrap();
    let trade_point = points
        .iter()
        .find(|p| p["deal"] == close_deal["ticket"])
        .unwrap_or_else(|| panic!("no point for the closing deal: {curve}"));
    assert_eq!(trade_point["kind"], "trade");
    let last_balance = points.iter().rev().find(|p| p["kind"] != "equity").unwrap();
    assert!(close_to(f(&last_balance["value"]), balance));
    let times: Vec<i64> = points
        .iter()
        .map(|p| parse_iso(p["time"].as_str().unwrap()).unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first: {times:?}");
    let dd = &curve["max_drawdown"];
    let loss = f(&trade_point["change"]).min(0.0);
    assert!(f(&dd["amount"]) >= -loss - 1e-9, "a losing close is a drawdown: {dd}");
    // The deposit never counts as drawdown: at most the trading loss (plus floating, none now).
    assert!(f(&dd["amount"]) <= -loss + 1e-6, "{dd}");

    // The default range ends now: its curve ends at the balance, then the equity.
    let now = tool(&t, "get_equity_curve", &json!({ "max_points": 10 })).await;
    let account = tool(&t, "get_account_info", &json!({})).await;
    assert!(close_to(f(&now["ending_balance"]), f(&account["balance"])));
    assert!(close_to(f(&now["current_equity"]), f(&account["equity"])));
    assert!(now["points"].as_array().unwrap().len() <= 10);

    // Validation.
    let bad = [
        (json!({ "from": "yesterday" }), "ISO 8601"),
        (
            json!({ "from": to_iso(WEDNESDAY_NOON), "to": to_iso(WEDNESDAY_NOON - 1) }),
            "before",
        ),
        (
            json!({ "from": to_iso(WEDNESDAY_NOON - 400 * DAY_MS), "to": to_iso(WEDNESDAY_NOON) }),
            "366 days",
        ),
        (json!({ "max_points": 5 }), "max_points"),
        (json!({ "resolution": 5 }), "unknown field"),
    ];
    for (input, needle) in bad {
        let (s, b) = t.post("/api/v1/tools/get_equity_curve", None, &input, None).await;
        assert_validation(s, &b, needle);
    }
    t.stack.stop().await;
}

#[tokio::test]
async fn swap_calendar_and_fill_estimates_follow_the_spec_and_the_quotes() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let spec = tool(&t, "get_symbol_spec", &json!({ "symbol": "EURUSD" })).await;
    let account = tool(&t, "get_account_info", &json!({})).await;
    assert_eq!(
        account["currency"], spec["currency_profit"],
        "a USD account trading EURUSD"
    );

    // ---- swap calendar: 0.5 lot over 7 days, from the spec's points.
    let before = chrono::Utc::now().timestamp_millis();
    let cal = tool(
        &t,
        "get_swap_calendar",
        &json!({ "symbol": "EURUSD", "volume": 0.5, "days": 7 }),
    )
    .await;
    let after = chrono::Utc::now().timestamp_millis();
    assert_eq!(cal["swap_mode"], "points");
    assert_eq!(cal["computable"], true, "{cal}");
    assert_eq!(
        (&cal["swap_long"], &cal["swap_short"]),
        (&spec["swap_long"], &spec["swap_short"])
    );
    let per_night = |rate: &Value| f(rate) * f(&spec["point"]) * f(&spec["contract_size"]) * 0.5;
    assert!(close_to(f(&cal["night_long"]), per_night(&spec["swap_long"])), "{cal}");
    assert!(close_to(f(&cal["night_short"]), per_night(&spec["swap_short"])));
    let rollovers = cal["rollovers"].as_array().unwrap();
    assert_eq!(rollovers.len(), 7);
    let days = [
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
    ];
    let triple = days[spec["swap_triple_day"].as_u64().unwrap() as usize];
    assert_eq!(cal["triple_swap_day"], triple);
    let (mut sum_long, mut sum_short) = (0.0, 0.0);
    for (i, r) in rollovers.iter().enumerate() {
        let time = parse_iso(r["time"].as_str().unwrap()).unwrap();
        assert_eq!(
            time.rem_euclid(DAY_MS),
            22 * 3_600_000,
            "default rollover 22:00 UTC: {r}"
        );
        if i == 0 {
            assert!(
                time > before && time <= after + DAY_MS,
                "the next rollover comes first: {r}"
            );
        } else {
            let prev = parse_iso(rollovers[i - 1]["time"].as_str().unwrap()).unwrap();
            assert_eq!(time - prev, DAY_MS);
        }
        let day = r["day"].as_str().unwrap();
        assert_eq!(day, days[tradeterm_core::time::weekday(time) as usize]);
        let nights = match day {
            "saturday" | "sunday" => 0.0,
            d if d == triple => 3.0,
            _ => 1.0,
        };
        assert_eq!(f(&r["nights"]), nights, "{r}");
        assert_eq!(r["triple"], nights == 3.0);
        assert!(close_to(f(&r["long"]), nights * per_night(&spec["swap_long"])), "{r}");
        assert!(close_to(f(&r["short"]), nights * per_night(&spec["swap_short"])), "{r}");
        sum_long += f(&r["long"]);
        sum_short += f(&r["short"]);
    }
    // Seven consecutive days hold five charged rollovers, one of them triple: 7 nights.
    assert!(close_to(f(&cal["total_long"]), sum_long));
    assert!(close_to(sum_long, 7.0 * per_night(&spec["swap_long"])), "{cal}");
    assert!(close_to(f(&cal["total_short"]), sum_short));

    // One side only; a JPY-quoted symbol converted to USD through its own quote.
    let jpy = tool(
        &t,
        "get_swap_calendar",
        &json!({ "symbol": "USDJPY", "side": "buy", "days": 3, "rollover_hour_utc": 21 }),
    )
    .await;
    assert_eq!(jpy["computable"], true, "{jpy}");
    assert!(jpy["total_short"].is_null() && jpy["night_short"].is_null());
    let jspec = tool(&t, "get_symbol_spec", &json!({ "symbol": "USDJPY" })).await;
    let jtick = tool(&t, "get_tick", &json!({ "symbol": "USDJPY" })).await;
    let jpy_night = f(&jspec["swap_long"]) * f(&jspec["point"]) * f(&jspec["contract_size"]) / f(&jtick["bid"]);
    assert!(
        (f(&jpy["night_long"]) - jpy_night).abs() < jpy_night.abs() * 0.01,
        "{jpy} vs {jpy_night}"
    );
    for r in jpy["rollovers"].as_array().unwrap() {
        let time = parse_iso(r["time"].as_str().unwrap()).unwrap();
        assert_eq!(time.rem_euclid(DAY_MS), 21 * 3_600_000);
    }

    // ---- estimate_fill: the quote's ask for a buy, between two identical ticks.
    let tick_req = json!({ "symbol": "EURUSD" });
    let fill_req = json!({ "symbol": "EURUSD", "side": "buy", "volume": 0.1 });
    let mut checked = false;
    for _ in 0..30 {
        let tick_before = tool(&t, "get_tick", &tick_req).await;
        let fill = tool(&t, "estimate_fill", &fill_req).await;
        let tick_after = tool(&t, "get_tick", &tick_req).await;
        // Whatever the timing, the estimate is consistent with its own quote.
        assert_eq!(fill["expected_price"], fill["ask"], "{fill}");
        let spread = f(&fill["ask"]) - f(&fill["bid"]);
        assert!(close_to(f(&fill["spread"]["price"]), spread));
        assert!(close_to(f(&fill["spread"]["points"]), spread / f(&spec["point"])));
        assert!(close_to(
            f(&fill["spread"]["cost"]),
            spread * f(&spec["contract_size"]) * 0.1
        ));
        let qt = parse_iso(fill["quote_time"].as_str().unwrap()).unwrap();
        let tb = parse_iso(tick_before["time"].as_str().unwrap()).unwrap();
        let ta = parse_iso(tick_after["time"].as_str().unwrap()).unwrap();
        assert!(
            tb <= qt && qt <= ta,
            "quote inside the window: {tick_before} {fill} {tick_after}"
        );
        if tick_before == tick_after {
            assert_eq!(fill["expected_price"], tick_before["ask"]);
            assert_eq!(fill["bid"], tick_before["bid"]);
            let s = &fill["slippage"];
            if !s["worst_case_price"].is_null() {
                assert!(f(&s["worst_case_price"]) >= f(&tick_before["ask"]), "{fill}");
                assert!(f(&s["best_case_price"]) <= f(&tick_before["ask"]), "{fill}");
                assert!(f(&s["adverse_points"]) >= f(&s["favourable_points"]));
            }
            assert_eq!(fill["market_open"], true);
            assert!(!fill["notes"].as_array().unwrap().is_empty());
            checked = true;
            break;
        }
    }
    assert!(checked, "the quote never held still across three requests");
    let sell = tool(
        &t,
        "estimate_fill",
        &json!({ "symbol": "EURUSD", "side": "sell", "volume": 4, "order_type": "market", "latency_ms": 2000 }),
    )
    .await;
    assert_eq!(sell["expected_price"], sell["bid"]);
    assert_eq!(f(&sell["slippage"]["size_factor"]), 2.0);
    if !sell["slippage"]["worst_case_price"].is_null() {
        assert!(f(&sell["slippage"]["worst_case_price"]) <= f(&sell["bid"]), "{sell}");
    }

    // ---- validation: only the error envelope, nothing computed.
    let bad = [
        ("get_swap_calendar", json!({ "symbol": "EURUSD", "days": 0 }), "days"),
        ("get_swap_calendar", json!({ "symbol": "EURUSD", "days": 31 }), "days"),
        (
            "get_swap_calendar",
            json!({ "symbol": "EURUSD", "volume": 0.015 }),
            "volume step",
        ),
        (
            "get_swap_calendar",
            json!({ "symbol": "EURUSD", "volume": -1 }),
            "volume",
        ),
        (
            "get_swap_calendar",
            json!({ "symbol": "EURUSD", "rollover_hour_utc": 24 }),
            "rollover_hour_utc",
        ),
        ("get_swap_calendar", json!({ "symbol": "EUR USD" }), "invalid symbol"),
        (
            "get_swap_calendar",
            json!({ "symbol": "EURUSD", "side": "long" }),
            "unknown variant",
        ),
        (
            "estimate_fill",
            json!({ "symbol": "EURUSD", "side": "buy", "volume": 0.001 }),
            "minimum",
        ),
        (
            "estimate_fill",
            json!({ "symbol": "EURUSD", "side": "buy", "volume": 1000 }),
            "maximum",
        ),
        (
            "estimate_fill",
            json!({ "symbol": "EURUSD", "side": "buy", "volume": 0.1, "order_type": "limit" }),
            "unknown variant",
        ),
        ("estimate_fill", json!({ "symbol": "EURUSD", "volume": 0.1 }), "side"),
        (
            "estimate_fill",
            json!({ "symbol": "EURUSD", "side": "buy", "volume": 0.1, "latency_ms": 0 }),
            "latency_ms",
        ),
        (
            "estimate_fill",
            json!({ "symbol": "EURUSD", "side": "buy", "volume": 0.1, "price": 1.1 }),
            "unknown field",
        ),
    ];
    for (name, input, needle) in bad {
        let (s, b) = t.post(&format!("/api/v1/tools/{name}"), None, &input, None).await;
        assert_validation(s, &b, needle);
    }
    t.stack.stop().await;
}
