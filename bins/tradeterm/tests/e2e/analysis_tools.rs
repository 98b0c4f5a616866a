//! The derived market-analytics tools end to end: REST over the real stack
//! with simulated terminals (`POST /api/v1/tools/{name}`).

use serde_json::{Value, json};

use crate::harness::{Expect, Options, spawn};

#[tokio::test]
async fn regime_style_and_structure() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;

    let d = t
        .tool(
            "get_volatility_regime",
            &json!({ "symbol": "EURUSD", "timeframe": "H1" }),
        )
        .await
        .data();
    assert!(
        ["compressed", "expanding", "trending", "choppy"].contains(&d["regime"].as_str().unwrap()),
        "{d}"
    );
    assert!(!d["rule"].as_str().unwrap().is_empty());
    let m = &d["metrics"];
    for k in ["atr_percentile", "bandwidth_percentile"] {
        let v = m[k].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&v), "{k} = {v}");
    }
    assert!((0.0..=1.0).contains(&m["efficiency_ratio"].as_f64().unwrap()));
    assert!(m["adx"].as_f64().unwrap() >= 0.0);
    assert_eq!(d["thresholds"]["adx_trending"], 25.0);
    assert_eq!(d["bars"], 300);
    t.assert_invalid(
        "get_volatility_regime",
        &json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 20 }),
        "`bars`",
    )
    .await;

    let d = t
        .tool(
            "recommend_strategy_style",
            &json!({ "symbol": "EURUSD", "timeframe": "H1" }),
        )
        .await
        .data();
    assert!(
        ["trend-follow", "mean-revert", "breakout", "stand-aside"].contains(&d["style"].as_str().unwrap()),
        "{d}"
    );
    assert!(["long", "short", "neutral"].contains(&d["bias"].as_str().unwrap()));
    let reasons = d["reasons"].as_array().unwrap();
    assert!(reasons.len() >= 3, "{reasons:?}");
    assert!(reasons[0].as_str().unwrap().contains(d["regime"].as_str().unwrap()));

    let input = json!({ "symbol": "EURUSD", "timeframes": ["H4", "H1", "M15"], "swing_length": 5 });
    let d = t.tool("get_market_structure", &input).await.data();
    let tfs = d["timeframes"].as_array().unwrap();
    assert_eq!(tfs.len(), 3);
    assert_eq!(tfs[0]["timeframe"], "H4");
    for tf in tfs {
        assert!(
            ["bullish", "bearish", "ranging"].contains(&tf["trend"].as_str().unwrap()),
            "{tf}"
        );
        let high = &tf["last_swing_high"];
        assert!(high["price"].as_f64().unwrap() > 0.0, "{tf}");
        assert!(high["confirmed_time"].as_str().unwrap() > high["time"].as_str().unwrap());
        assert!(tf["last_swing_low"]["price"].as_f64().unwrap() > 0.0);
    }
    let five = json!({ "symbol": "EURUSD", "timeframes": ["M5", "M15", "H1", "H4", "D1"] });
    t.assert_invalid("get_market_structure", &five, "1 to 4 timeframes")
        .await;
    let dup = json!({ "symbol": "EURUSD", "timeframes": ["H1", "H1"] });
    t.assert_invalid("get_market_structure", &dup, "twice").await;
    t.assert_invalid(
        "get_market_structure",
        &json!({ "symbol": "EURUSD", "timeframes": [] }),
        "1 to 4",
    )
    .await;
    t.stack.stop().await;
}

#[tokio::test]
async fn confluence_and_fibonacci() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let input = json!({
        "symbol": "EURUSD",
        "conditions": [
            { "timeframe": "H1", "indicator": "rsi", "params": { "period": 14 }, "op": "lt", "value": 101 },
            { "timeframe": "H1", "indicator": "price", "op": "gt", "value": { "indicator": "bbands", "output": "upper" } },
            { "timeframe": "M15", "indicator": "ema", "params": { "period": 20 }, "op": "cross_above",
              "value": { "indicator": "sma", "params": { "period": 50 } } },
        ]
    });
    let d = t.tool("check_confluence", &input).await.data();
    let results = d["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    // RSI is at most 100, so the first condition always holds.
    assert_eq!(results[0]["passed"], true, "{}", results[0]);
    assert_eq!(results[0]["left_name"], "rsi.rsi");
    assert_eq!(results[1]["right_name"], "bbands.upper");
    assert!(results[2]["left_prev"].is_number() && results[2]["right_prev"].is_number());
    let passed = results.iter().filter(|r| r["passed"] == true).count();
    assert_eq!(d["passed"], passed);
    assert_eq!(d["total"], 3);
    assert!((d["score"].as_f64().unwrap() - passed as f64 / 3.0).abs() < 1e-12);

    let nine: Vec<Value> = (0..9)
        .map(|_| json!({ "timeframe": "H1", "indicator": "rsi", "op": "gt", "value": 50 }))
        .collect();
    t.assert_invalid(
        "check_confluence",
        &json!({ "symbol": "EURUSD", "conditions": nine }),
        "1 to 8 conditions",
    )
    .await;
    let bad = json!({ "symbol": "EURUSD", "conditions": [{ "timeframe": "H1", "indicator": "nope", "op": "gt", "value": 1 }] });
    t.assert_invalid("check_confluence", &bad, "unknown indicator").await;
    let bad = json!({ "symbol": "EURUSD", "conditions": [{ "timeframe": "H1", "indicator": "rsi", "op": "above", "value": 1 }] });
    t.tool("check_confluence", &bad).await.failure(400, "VALIDATION_ERROR");
    // A warm-up longer than the history: that condition is not evaluable
    // (bars needed vs available) and never counts as holding; the others
    // are evaluated.
    let warm = json!({ "symbol": "EURUSD", "bars": 50, "conditions": [
        { "timeframe": "H1", "indicator": "sma", "params": { "period": 200 }, "op": "gt", "value": 1 },
        { "timeframe": "H1", "indicator": "price", "op": "gt", "value": 0 },
    ] });
    let w = t.tool("check_confluence", &warm).await.data();
    let first = &w["results"][0];
    assert_eq!(
        (first["evaluable"].clone(), first["passed"].clone()),
        (json!(false), json!(false)),
        "{w}"
    );
    assert_eq!(first["unevaluable"]["bars_needed"], 200, "{w}");
    assert_eq!(first["unevaluable"]["bars_available"], 50, "{w}");
    assert!(first["left"].is_null() && first["left_name"] == "sma.sma", "{w}");
    assert_eq!(w["results"][1]["passed"], true, "{w}");
    assert_eq!(
        (w["passed"].clone(), w["failed"].clone(), w["unevaluable"].clone()),
        (json!(1), json!(0), json!(1)),
        "{w}"
    );
    assert_eq!(w["all_passed"], false, "{w}");

    let d = t
        .tool(
            "get_fibonacci_levels",
            &json!({ "symbol": "EURUSD", "timeframe": "H1", "swing_length": 5 }),
        )
        .await
        .data();
    let (hi, lo) = (
        d["swing_high"]["price"].as_f64().unwrap(),
        d["swing_low"]["price"].as_f64().unwrap(),
    );
    assert!(hi >= lo);
    let retr: Vec<f64> = d["retracements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["price"].as_f64().unwrap())
        .collect();
    assert_eq!(retr.len(), 5);
    assert!(retr.iter().all(|p| *p >= lo - 1e-9 && *p <= hi + 1e-9));
    let half = if d["direction"] == "up" {
        hi - 0.5 * (hi - lo)
    } else {
        lo + 0.5 * (hi - lo)
    };
    assert!((retr[2] - half).abs() < 1e-9);
    let ext = d["extensions"].as_array().unwrap();
    assert_eq!(ext.len(), 3);
    assert_eq!(ext[1]["ratio"], 1.618);
    if d["direction"] == "up" {
        assert!(d["swing_high"]["time"].as_str() > d["swing_low"]["time"].as_str());
    } else {
        assert_eq!(d["direction"], "down");
        assert!(d["swing_low"]["time"].as_str() > d["swing_high"]["time"].as_str());
    }
    t.assert_invalid(
        "get_fibonacci_levels",
        &json!({ "symbol": "EURUSD", "timeframe": "H1", "swing_length": 500 }),
        "swing_length",
    )
    .await;
    t.stack.stop().await;
}

#[tokio::test]
async fn sessions_and_profile() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let d = t
        .tool("get_session_stats", &json!({ "symbol": "EURUSD", "days": 10 }))
        .await
        .data();
    assert_eq!(d["timeframe"], "H1");
    assert_eq!(d["days"], 10);
    let sessions = d["sessions"].as_array().unwrap();
    let names: Vec<&str> = sessions.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["asia", "london", "new_york"]);
    assert_eq!(
        (sessions[1]["start_hour"].as_u64(), sessions[1]["end_hour"].as_u64()),
        (Some(7), Some(16))
    );
    for x in sessions {
        assert!(x["average_range"].as_f64().unwrap() > 0.0, "{x}");
        let share = x["average_share_of_daily_range"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share));
        let last = &x["last"];
        let hour = |k: &str| last[k].as_str().unwrap()[11..13].parse::<u64>().unwrap();
        for k in ["high_time", "low_time"] {
            let h = hour(k);
            assert!(
                h >= x["start_hour"].as_u64().unwrap() && h < x["end_hour"].as_u64().unwrap(),
                "{x}"
            );
        }
    }
    t.assert_invalid("get_session_stats", &json!({ "symbol": "EURUSD", "days": 0 }), "`days`")
        .await;

    let d = t
        .tool("get_symbol_session_profile", &json!({ "symbol": "EURUSD" }))
        .await
        .data();
    let hours = d["hours"].as_array().unwrap();
    assert_eq!(hours.len(), 24);
    let most = d["most_active_hours"].as_array().unwrap();
    assert_eq!(most.len(), 3);
    let mean = |h: &Value| hours[h.as_u64().unwrap() as usize]["mean_range"].as_f64().unwrap();
    let top = mean(&most[0]);
    assert!(hours.iter().all(|h| h["mean_range"].as_f64().unwrap() <= top + 1e-12));
    t.assert_invalid(
        "get_symbol_session_profile",
        &json!({ "symbol": "EURUSD", "days": 500 }),
        "between 1 and 120",
    )
    .await;
    t.stack.stop().await;
}

#[tokio::test]
async fn order_flow_from_ticks() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let d = t
        .tool("get_order_flow", &json!({ "symbol": "EURUSD", "minutes": 30 }))
        .await
        .data();
    assert_eq!(d["method"], "tick_rule_tick_count");
    let ticks = d["ticks"].as_u64().unwrap();
    assert!(ticks > 0, "{d}");
    let (buy, sell, unsigned) = (
        d["buy_ticks"].as_u64().unwrap(),
        d["sell_ticks"].as_u64().unwrap(),
        d["unsigned_ticks"].as_u64().unwrap(),
    );
    assert_eq!(buy + sell + unsigned, ticks);
    assert_eq!(d["delta"].as_i64().unwrap(), buy as i64 - sell as i64);
    let imb = d["imbalance"].as_f64().unwrap();
    assert!((-1.0..=1.0).contains(&imb));
    let buckets = d["buckets"].as_array().unwrap();
    assert!(!buckets.is_empty());
    assert_eq!(buckets.last().unwrap()["cumulative_delta"], d["delta"]);
    let sum: u64 = buckets.iter().map(|x| x["ticks"].as_u64().unwrap()).sum();
    assert_eq!(sum, ticks);
    assert!(d["from"].as_str().unwrap() < d["to"].as_str().unwrap());
    for bad in [
        json!({ "symbol": "EURUSD", "minutes": 0 }),
        json!({ "symbol": "EURUSD", "minutes": 5000 }),
    ] {
        t.assert_invalid("get_order_flow", &bad, "`minutes`").await;
    }
    t.assert_invalid(
        "get_order_flow",
        &json!({ "symbol": "EURUSD", "bucket_minutes": 90 }),
        "bucket_minutes",
    )
    .await;
    t.stack.stop().await;
}
