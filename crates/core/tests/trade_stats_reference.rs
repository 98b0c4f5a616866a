//! Trade statistics against an independent reference: pandas and numpy for
//! the trade metrics and the balance-curve drawdown, empyrical-reloaded 0.7.1
//! for Sharpe, Sortino and the drawdown of the daily returns. The fixtures are
//! made by `scripts/fixtures/trade_stats_fixtures.py` (a seeded synthetic
//! history with deposits, withdrawals and partial closes, and the trades of a
//! backtesting.py fixture turned into deals).

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use tradeterm_core::Deal;
use tradeterm_core::trade_stats::{BalanceAnchor, StatsRequest, trade_stats};

#[derive(Deserialize)]
struct Fixture {
    from: i64,
    to: i64,
    anchor: BalanceAnchor,
    deals: Vec<Deal>,
    expected: Value,
}

fn load(name: &str) -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trade_stats")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("expected number `{key}`"))
}

#[track_caller]
fn assert_close(name: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{name}: got {got}, reference {want} (difference {})",
        got - want
    );
}

fn check(name: &str) {
    let fx = load(name);
    let e = &fx.expected;
    let stats = trade_stats(
        &fx.deals,
        &StatsRequest {
            from: fx.from,
            to: fx.to,
            balance: Some(fx.anchor),
        },
    )
    .unwrap();
    assert_eq!(stats.trades as u64, e["trades"].as_u64().unwrap(), "{name}: trades");
    assert_eq!(stats.wins as u64, e["wins"].as_u64().unwrap(), "{name}: wins");
    assert_eq!(stats.losses as u64, e["losses"].as_u64().unwrap(), "{name}: losses");
    let pairs = [
        ("win_rate", stats.win_rate),
        ("profit_factor", stats.profit_factor),
        ("expectancy", stats.expectancy),
        ("average_win", stats.average_win),
        ("average_loss", stats.average_loss),
        ("net_trade_profit", Some(stats.net_trade_profit)),
        ("net_profit", Some(stats.net_profit)),
        ("deposits", Some(stats.deposits)),
        ("withdrawals", Some(stats.withdrawals)),
        ("max_drawdown", Some(stats.max_drawdown.amount)),
        ("max_drawdown_percent", stats.max_drawdown.percent),
    ];
    for (key, got) in pairs {
        assert_close(&format!("{name}: {key}"), got.unwrap_or(f64::NAN), num(e, key));
    }
    let daily = stats.daily.as_ref().unwrap();
    assert_eq!(
        daily.days as u64,
        e["daily_days"].as_u64().unwrap(),
        "{name}: daily returns"
    );
    assert_close(
        &format!("{name}: daily mean"),
        daily.mean.unwrap(),
        num(e, "daily_mean"),
    );
    assert_close(&format!("{name}: sharpe"), daily.sharpe.unwrap(), num(e, "sharpe"));
    assert_close(&format!("{name}: sortino"), daily.sortino.unwrap(), num(e, "sortino"));
    assert_close(
        &format!("{name}: daily max drawdown"),
        daily.max_drawdown_percent.unwrap(),
        num(e, "max_drawdown_daily_percent"),
    );
}

#[test]
fn synthetic_history_with_cash_flows_matches_reference() {
    check("synthetic_deposits.json");
}

#[test]
fn backtest_trades_match_reference() {
    check("backtest_eurusd_sma.json");
}
