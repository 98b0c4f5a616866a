//! The cost tools end to end: REST over the real stack with simulated
//! terminals (`POST /api/v1/tools/{name}`): `get_equity_curve` against the
//! account and the deal history after a live round trip, `get_swap_calendar`
//! against the symbol specification, `estimate_fill` against the quotes, and
//! the validation errors of all three.

use serde_json::{Value, json};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};

use crate::harness::data::num;
use crate::harness::{Expect, Options, WEDNESDAY_NOON, close_to, spawn};

/// Money sums of several deals, and prices times contract sizes, are
/// compared within this relative tolerance.
const REL: f64 = 1e-6;

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
    let placed = t.api().place_order(&order).await.data();
    let ticket = placed["trade"]["position"].as_u64().unwrap();

    // While it is open, the curve of the range reaching now ends with the equity.
    let open = t.tool("get_equity_curve", &json!({})).await.data();
    let last = open["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "equity", "{open}");
    assert!(close_to(
        num(&open["floating_profit"]),
        num(&last["value"]) - num(&open["ending_balance"]),
        REL
    ));

    t.api()
        .close_position(ticket, &json!({ "dry_run": false }))
        .await
        .data();

    // The simulated clock started at WEDNESDAY_NOON: its history starts there.
    let range = json!({ "from": to_iso(WEDNESDAY_NOON - 3_600_000), "to": to_iso(WEDNESDAY_NOON + DAY_MS) });
    let curve = t.tool("get_equity_curve", &range).await.data();
    let history = t.tool("get_deal_history", &range).await.data();
    let account = t.tool("get_account_info", &json!({})).await.data();

    let balance = num(&account["balance"]);
    assert!(
        close_to(num(&curve["ending_balance"]), balance, REL),
        "{curve} vs {account}"
    );
    let deals = history["deals"].as_array().unwrap();
    let trading: f64 = deals
        .iter()
        .filter(|d| d["entry"] != "balance")
        .map(|d| num(&d["profit"]) + num(&d["swap"]) + num(&d["commission"]))
        .sum();
    assert!(
        close_to(num(&curve["net_profit"]), trading, REL),
        "{curve} vs {history}"
    );
    let deposits: f64 = deals
        .iter()
        .filter(|d| d["entry"] == "balance" && num(&d["profit"]) > 0.0)
        .map(|d| num(&d["profit"]))
        .sum();
    assert!(deposits > 0.0, "the initial deposit is in the range: {history}");
    assert!(close_to(num(&curve["deposits"]), deposits, REL));
    // The range holds the whole history: the curve starts from nothing.
    assert!(close_to(num(&curve["starting_balance"]), 0.0, REL), "{curve}");
    assert!(close_to(
        num(&curve["starting_balance"]) + num(&curve["deposits"]) - num(&curve["withdrawals"])
            + num(&curve["net_profit"]),
        balance,
        REL
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
    assert!(close_to(num(&last_balance["value"]), balance, REL));
    let times: Vec<i64> = points
        .iter()
        .map(|p| parse_iso(p["time"].as_str().unwrap()).unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first: {times:?}");
    let dd = &curve["max_drawdown"];
    let loss = num(&trade_point["change"]).min(0.0);
    assert!(num(&dd["amount"]) >= -loss - 1e-9, "a losing close is a drawdown: {dd}");
    // The deposit never counts as drawdown: at most the trading loss (plus floating, none now).
    assert!(num(&dd["amount"]) <= -loss + 1e-6, "{dd}");

    // The default range ends now: its curve ends at the balance, then the equity.
    let now = t.tool("get_equity_curve", &json!({ "max_points": 10 })).await.data();
    let account = t.tool("get_account_info", &json!({})).await.data();
    assert!(close_to(num(&now["ending_balance"]), num(&account["balance"]), REL));
    assert!(close_to(num(&now["current_equity"]), num(&account["equity"]), REL));
    assert!(now["points"].as_array().unwrap().len() <= 10);

    // A `from` at or after `to` is an empty range; a range over 366 days is
    // cut to the 366 days before `to` (the schema cannot relate two fields).
    let empty = t
        .tool(
            "get_equity_curve",
            &json!({ "from": to_iso(WEDNESDAY_NOON), "to": to_iso(WEDNESDAY_NOON - 1) }),
        )
        .await
        .data();
    assert_eq!(empty["trades"], 0, "{empty}");
    assert_eq!(empty["to"], to_iso(WEDNESDAY_NOON - 1));
    let long = t
        .tool(
            "get_equity_curve",
            &json!({ "from": to_iso(WEDNESDAY_NOON - 400 * DAY_MS), "to": to_iso(WEDNESDAY_NOON) }),
        )
        .await
        .data();
    assert_eq!(long["from"], to_iso(WEDNESDAY_NOON - 366 * DAY_MS), "{}", long["from"]);

    // Validation.
    let bad = [
        (json!({ "from": "yesterday" }), "ISO 8601"),
        (json!({ "max_points": 5 }), "max_points"),
        (json!({ "resolution": 5 }), "unknown field"),
    ];
    for (input, needle) in bad {
        t.assert_invalid("get_equity_curve", &input, needle).await;
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
    let spec = t.tool("get_symbol_spec", &json!({ "symbol": "EURUSD" })).await.data();
    let account = t.tool("get_account_info", &json!({})).await.data();
    assert_eq!(
        account["currency"], spec["currency_profit"],
        "a USD account trading EURUSD"
    );

    // ---- swap calendar: 0.5 lot over 7 days, from the spec's points.
    let before = chrono::Utc::now().timestamp_millis();
    let cal = t
        .tool(
            "get_swap_calendar",
            &json!({ "symbol": "EURUSD", "volume": 0.5, "days": 7 }),
        )
        .await
        .data();
    let after = chrono::Utc::now().timestamp_millis();
    assert_eq!(cal["swap_mode"], "points");
    assert_eq!(cal["computable"], true, "{cal}");
    assert_eq!(
        (&cal["swap_long"], &cal["swap_short"]),
        (&spec["swap_long"], &spec["swap_short"])
    );
    let per_night = |rate: &Value| num(rate) * num(&spec["point"]) * num(&spec["contract_size"]) * 0.5;
    assert!(
        close_to(num(&cal["night_long"]), per_night(&spec["swap_long"]), REL),
        "{cal}"
    );
    assert!(close_to(num(&cal["night_short"]), per_night(&spec["swap_short"]), REL));
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
        assert_eq!(num(&r["nights"]), nights, "{r}");
        assert_eq!(r["triple"], nights == 3.0);
        assert!(
            close_to(num(&r["long"]), nights * per_night(&spec["swap_long"]), REL),
            "{r}"
        );
        assert!(
            close_to(num(&r["short"]), nights * per_night(&spec["swap_short"]), REL),
            "{r}"
        );
        sum_long += num(&r["long"]);
        sum_short += num(&r["short"]);
    }
    // Seven consecutive days hold five charged rollovers, one of them triple: 7 nights.
    assert!(close_to(num(&cal["total_long"]), sum_long, REL));
    assert!(close_to(sum_long, 7.0 * per_night(&spec["swap_long"]), REL), "{cal}");
    assert!(close_to(num(&cal["total_short"]), sum_short, REL));

    // One side only; a JPY-quoted symbol converted to USD through its own quote.
    let jpy = t
        .tool(
            "get_swap_calendar",
            &json!({ "symbol": "USDJPY", "side": "buy", "days": 3, "rollover_hour_utc": 21 }),
        )
        .await
        .data();
    assert_eq!(jpy["computable"], true, "{jpy}");
    assert!(jpy["total_short"].is_null() && jpy["night_short"].is_null());
    let jspec = t.tool("get_symbol_spec", &json!({ "symbol": "USDJPY" })).await.data();
    let jtick = t.tool("get_tick", &json!({ "symbol": "USDJPY" })).await.data();
    let jpy_night = num(&jspec["swap_long"]) * num(&jspec["point"]) * num(&jspec["contract_size"]) / num(&jtick["bid"]);
    assert!(
        (num(&jpy["night_long"]) - jpy_night).abs() < jpy_night.abs() * 0.01,
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
        let tick_before = t.tool("get_tick", &tick_req).await.data();
        let fill = t.tool("estimate_fill", &fill_req).await.data();
        let tick_after = t.tool("get_tick", &tick_req).await.data();
        // Whatever the timing, the estimate is consistent with its own quote.
        assert_eq!(fill["expected_price"], fill["ask"], "{fill}");
        let spread = num(&fill["ask"]) - num(&fill["bid"]);
        assert!(close_to(num(&fill["spread"]["price"]), spread, REL));
        assert!(close_to(
            num(&fill["spread"]["points"]),
            spread / num(&spec["point"]),
            REL
        ));
        assert!(close_to(
            num(&fill["spread"]["cost"]),
            spread * num(&spec["contract_size"]) * 0.1,
            REL
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
                assert!(num(&s["worst_case_price"]) >= num(&tick_before["ask"]), "{fill}");
                assert!(num(&s["best_case_price"]) <= num(&tick_before["ask"]), "{fill}");
                assert!(num(&s["adverse_points"]) >= num(&s["favourable_points"]));
            }
            assert_eq!(fill["market_open"], true);
            assert!(!fill["notes"].as_array().unwrap().is_empty());
            checked = true;
            break;
        }
    }
    assert!(checked, "the quote never held still across three requests");
    let sell = t
        .tool(
            "estimate_fill",
            &json!({ "symbol": "EURUSD", "side": "sell", "volume": 4, "order_type": "market", "latency_ms": 2000 }),
        )
        .await
        .data();
    assert_eq!(sell["expected_price"], sell["bid"]);
    assert_eq!(num(&sell["slippage"]["size_factor"]), 2.0);
    if !sell["slippage"]["worst_case_price"].is_null() {
        assert!(
            num(&sell["slippage"]["worst_case_price"]) <= num(&sell["bid"]),
            "{sell}"
        );
    }

    // ---- analyses, not orders: a volume the symbol cannot trade is
    // computed, and the answer says why it is not tradable.
    for (volume, why) in [
        (0.001, "below the minimum"),
        (1000.0, "above the maximum"),
        (0.015, "volume step"),
    ] {
        let fill = t
            .tool(
                "estimate_fill",
                &json!({ "symbol": "EURUSD", "side": "buy", "volume": volume }),
            )
            .await
            .data();
        assert_eq!(fill["volume_tradable"], false, "{fill}");
        assert!(fill["notes"].to_string().contains(why), "{fill}");
        let swaps = t
            .tool(
                "get_swap_calendar",
                &json!({ "symbol": "EURUSD", "volume": volume, "days": 7 }),
            )
            .await
            .data();
        assert!(swaps["note"].as_str().unwrap().contains(why), "{swaps}");
    }
    let fill = t.tool("estimate_fill", &fill_req).await.data();
    assert_eq!(fill["volume_tradable"], true, "{fill}");

    // ---- validation: only the error envelope, nothing computed.
    let bad = [
        ("get_swap_calendar", json!({ "symbol": "EURUSD", "days": 0 }), "days"),
        ("get_swap_calendar", json!({ "symbol": "EURUSD", "days": 31 }), "days"),
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
        t.assert_invalid(name, &input, needle).await;
    }
    t.stack.stop().await;
}
