//! `backtest_strategy` end to end: REST → gateway → simulated terminal bars →
//! core engine, with the DSL tree, a legacy form and bad input.

use serde_json::{Value, json};

use crate::harness::{Expect, Options, spawn};

#[tokio::test]
async fn backtest_strategy_runs_on_terminal_bars() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let sma = |p: u32| json!({"indicator": "sma", "params": {"period": p}});
    let input = json!({
        "symbol": "EURUSD", "timeframe": "H1", "bars": 1500,
        "strategy": {
            "entry_long": {"left": sma(10), "op": "cross_above", "right": sma(20)},
            "entry_short": {"left": sma(10), "op": "cross_below", "right": sma(20)},
            "stop_loss": {"type": "atr", "multiple": 2},
            "sizing": {"type": "risk_percent", "percent": 1},
            "costs": {"spread": 0.0001}
        }
    });
    let d = t.tool("backtest_strategy", &input).await.data();
    assert_eq!(d["bars"], 1500);
    assert!(d["metrics"]["trades"].as_u64().unwrap() > 0, "{d}");
    assert!(d["equity_curve"].as_array().unwrap().len() <= 500);
    assert_eq!(d["truncated"], false);

    let legacy = json!({"symbol": "EURUSD", "timeframe": "H1",
        "strategy": {"type": "rsi", "period": 14, "oversold": 30, "overbought": 70}});
    t.tool("backtest_strategy", &legacy).await.data();

    let bad = json!({"symbol": "EURUSD", "timeframe": "H1", "strategy": {
        "entry_long": {"all": [{"left": {"price": "close"}, "op": "gt", "right": {"value": 1}},
                               {"left": {"indicator": "smaa"}, "op": "gt", "right": {"value": 1}}]},
        "sizing": {"type": "all_in"}}});
    t.tool("backtest_strategy", &bad)
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("entry_long.all[1].left.indicator");
    t.stack.stop().await;
}

/// What the backtest engine did at the open of bar `i + 1` of a `backtest_strategy` result,
/// and the side it held at bar `i`'s close, read from its trades.
fn engine_step(trades: &[Value], i: u64) -> (&'static str, &'static str) {
    let held = trades
        .iter()
        .find(|t| t["entry_index"].as_u64().unwrap() <= i && i < t["exit_index"].as_u64().unwrap());
    let side = match held.map(|t| t["direction"].as_str().unwrap()) {
        None => "flat",
        Some("long") => "long",
        Some(_) => "short",
    };
    let closed = held.is_some_and(|t| {
        t["exit_index"].as_u64() == Some(i + 1) && matches!(t["reason"].as_str(), Some("signal" | "reverse"))
    });
    let opened = trades
        .iter()
        .find(|t| t["entry_index"].as_u64() == Some(i + 1))
        .map(|t| t["direction"].as_str().unwrap());
    let action = match (side, closed, opened) {
        ("long", true, Some("short")) => "reverse_to_short",
        ("short", true, Some("long")) => "reverse_to_long",
        ("long", true, _) => "close_long",
        ("short", true, _) => "close_short",
        (_, _, Some("long")) => "open_long",
        (_, _, Some("short")) => "open_short",
        ("flat", _, None) => "stay_flat",
        _ => "hold",
    };
    (side, action)
}

/// Every comparison leaf of a reported condition tree.
fn leaves(node: &Value, out: &mut Vec<Value>) {
    for key in ["all", "any"] {
        if let Some(list) = node[key].as_array() {
            list.iter().for_each(|n| leaves(n, out));
            return;
        }
    }
    if !node["not"].is_null() {
        return leaves(&node["not"], out);
    }
    out.push(node.clone());
}

#[tokio::test]
async fn simulate_ea_action_explains_the_next_action() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    const TOOL: &str = "simulate_ea_action";
    let close = |shift: u32| json!({"price": "close", "shift": shift});
    let rsi = json!({"indicator": "rsi", "params": {"period": 14}});
    let strategy = json!({
        "entry_long": {"all": [{"left": close(0), "op": "gt", "right": close(1)},
                               {"left": rsi, "op": "lt", "right": {"value": 70}}]},
        "exit_long": {"left": rsi, "op": "gt", "right": {"value": 70}},
        "entry_short": {"left": {"indicator": "sma", "params": {"period": 3}}, "op": "cross_below",
                        "right": {"indicator": "sma", "params": {"period": 8}}},
        "stop_loss": {"type": "atr", "multiple": 2},
        "take_profit": {"type": "pips", "pips": 30, "pip_size": 0.0001},
        "sizing": {"type": "fixed_lots", "lots": 0.1, "contract_size": 100000}
    });

    // 1. Flat account, auto mode: the tree is explained on the last complete bar.
    let input = json!({"symbol": "EURUSD", "timeframe": "H1", "strategy": strategy});
    let d = &t.tool(TOOL, &input).await.data();
    assert_eq!(d["position"]["mode"], "auto");
    assert_eq!(
        (d["position"]["side"].as_str(), d["position"]["positions"].as_u64()),
        (Some("flat"), Some(0))
    );
    assert!(
        matches!(d["action"].as_str(), Some("open_long" | "open_short" | "stay_flat")),
        "{d}"
    );
    assert_eq!(d["decided_on"]["complete"], true);
    assert_eq!(
        d["bars"], 300,
        "default: at least 300 bars, more than this strategy's warm-up"
    );
    // The simulator's clock starts at 12:00: the 12:00 bar is forming and left out.
    assert_eq!(d["forming_bar_skipped"], "2026-11-18T12:00:00Z", "{d}");
    assert_eq!(d["decided_on"]["time"], "2026-11-18T11:00:00Z", "{d}");
    let mut all = Vec::new();
    for rule in ["entry_long", "exit_long", "entry_short"] {
        leaves(&d["rules"][rule], &mut all);
    }
    assert!(d["rules"]["exit_short"].is_null());
    assert_eq!(all.len(), 4, "{}", d["rules"]);
    for leaf in &all {
        assert_eq!(leaf["ready"], true, "{leaf}");
        assert!(
            leaf["left"]["value"].is_f64() && leaf["right"]["value"].is_f64(),
            "{leaf}"
        );
        assert!(leaf["result"].is_boolean());
    }
    let cross = &d["rules"]["entry_short"];
    assert!(
        cross["left"]["previous"].is_f64() && cross["right"]["previous"].is_f64(),
        "{cross}"
    );
    // The first leaf compares the close of the decision bar with the one before.
    let first = &d["rules"]["entry_long"]["all"][0];
    assert_eq!(first["left"]["value"], d["decided_on"]["close"]);
    let want = first["left"]["value"].as_f64() > first["right"]["value"].as_f64();
    assert_eq!(first["result"].as_bool(), Some(want));
    let entry_long = d["rules"]["entry_long"]["result"].as_bool().unwrap();
    let entry_short = d["rules"]["entry_short"]["result"].as_bool().unwrap();
    let expected = if entry_long {
        "open_long"
    } else if entry_short {
        "open_short"
    } else {
        "stay_flat"
    };
    assert_eq!(d["action"], expected, "{d}");
    if expected != "stay_flat" {
        let order = &d["order"];
        assert_eq!(order["units"], 10_000.0, "0.1 lot of 100000");
        assert!(order["stop_loss"].is_f64() && order["take_profit"].is_f64(), "{order}");
    } else {
        assert!(d["order"].is_null());
    }

    // 2. The same decision as the backtest engine on the same bars: backtest_strategy's last bar
    // is the forming one, so its signal on the bar before is what simulate_ea_action decides.
    let bt = json!({"symbol": "EURUSD", "timeframe": "H1", "bars": 600, "strategy": strategy});
    let bt = &t.tool("backtest_strategy", &bt).await.data();
    assert_eq!(
        (bt["to"].as_str(), bt["truncated"].as_bool()),
        (Some("2026-11-18T12:00:00Z"), Some(false))
    );
    let trades = bt["trades"].as_array().unwrap();
    assert!(trades.len() > 20, "the strategy trades: {}", trades.len());
    let (side, engine_action) = engine_step(trades, 598);
    for (mode, agrees) in [(side, true), ("flat", side == "flat")] {
        let input = json!({"symbol": "EURUSD", "timeframe": "H1", "bars": 599, "position": mode, "strategy": strategy});
        let d = &t.tool(TOOL, &input).await.data();
        assert_eq!(
            (d["bars"].as_u64(), d["position"]["side"].as_str()),
            (Some(599), Some(mode))
        );
        assert_eq!(d["decided_on"]["time"], "2026-11-18T11:00:00Z");
        if agrees {
            assert_eq!(d["action"], engine_action, "engine held {side}: {d}");
        }
    }

    // 3. An open position on the terminal: auto mode sees it.
    let buy = json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false});
    t.api().place_order(&buy).await.data();
    let d = t.tool(TOOL, &input).await.data();
    let p = &d["position"];
    assert_eq!(
        (p["side"].as_str(), p["positions"].as_u64()),
        (Some("long"), Some(1)),
        "{p}"
    );
    assert_eq!(
        (p["long_volume"].as_f64(), p["hedged"].as_bool()),
        (Some(0.1), Some(false))
    );
    assert!(
        matches!(d["action"].as_str(), Some("hold" | "close_long" | "reverse_to_short")),
        "{d}"
    );
    // Long and short together (hedging) or netted: the net volume decides.
    let sell = json!({"symbol": "EURUSD", "order_type": "SELL", "volume": 0.3, "dry_run": false});
    t.api().place_order(&sell).await.data();
    let d = t.tool(TOOL, &input).await.data();
    let p = &d["position"];
    assert_eq!(p["side"], "short", "{p}");
    assert_eq!(p["hedged"].as_bool(), Some(p["positions"].as_u64() == Some(2)), "{p}");

    // 4. Bad input: clear validation errors naming the JSON path.
    let mut bad = input.clone();
    bad["strategy"]["entry_long"]["all"][1]["left"] = json!({"indicator": "smaa"});
    t.assert_invalid(TOOL, &bad, "strategy.entry_long.all[1].left.indicator")
        .await;
    let mut bad = input.clone();
    bad["strategy"]["stop_loss"]["multiple"] = json!(-1);
    t.assert_invalid(TOOL, &bad, "strategy.stop_loss.multiple").await;
    for (key, value) in [
        ("bars", json!(0)),
        ("position", json!("sideways")),
        ("equity", json!(-5)),
    ] {
        let mut bad = input.clone();
        bad[key] = value;
        t.tool(TOOL, &bad).await.failure_for(400, "VALIDATION_ERROR", key);
    }
    t.stack.stop().await;
}
