//! `backtest_strategy` end to end: REST → gateway → simulated terminal bars →
//! core engine, with the DSL tree, a legacy form and bad input.

mod common;

use common::{Options, spawn};
use serde_json::json;

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
    let (s, b) = t.post("/api/v1/tools/backtest_strategy", None, &input, None).await;
    assert_eq!(s, 200, "{b}");
    let d = &b["data"];
    assert_eq!(d["bars"], 1500);
    assert!(d["metrics"]["trades"].as_u64().unwrap() > 0, "{d}");
    assert!(d["equity_curve"].as_array().unwrap().len() <= 500);
    assert_eq!(d["truncated"], false);

    let legacy = json!({"symbol": "EURUSD", "timeframe": "H1",
        "strategy": {"type": "rsi", "period": 14, "oversold": 30, "overbought": 70}});
    let (s, b) = t.post("/api/v1/tools/backtest_strategy", None, &legacy, None).await;
    assert_eq!(s, 200, "{b}");

    let bad = json!({"symbol": "EURUSD", "timeframe": "H1", "strategy": {
        "entry_long": {"all": [{"left": {"price": "close"}, "op": "gt", "right": {"value": 1}},
                               {"left": {"indicator": "smaa"}, "op": "gt", "right": {"value": 1}}]},
        "sizing": {"type": "all_in"}}});
    let (s, b) = t.post("/api/v1/tools/backtest_strategy", None, &bad, None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{b}");
    let msg = b["error"]["message"].as_str().unwrap();
    assert!(msg.contains("entry_long.all[1].left.indicator"), "{msg}");
    t.stack.stop().await;
}
