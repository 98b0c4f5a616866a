//! `backtest_strategy`: runs a declarative strategy over the terminal's bars
//! with `tradeterm_core::backtest` and returns metrics, trades and a
//! downsampled equity curve.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::backtest::{self, Metrics, RunOptions, Trade};
use tradeterm_core::time::to_iso;

use crate::market::{MAX_BARS, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Most trades returned; the rest are counted in the metrics and flagged with `truncated`.
pub const MAX_TRADES: usize = 1_000;
/// Most points of the returned equity curve.
pub const MAX_EQUITY_POINTS: usize = 500;

/// Input of `backtest_strategy`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BacktestInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Number of most recent bars to test on (1-10000, default 2000).
    #[serde(default)]
    pub bars: Option<u32>,
    /// The strategy: a condition tree (see docs/backtest-dsl.md), e.g.
    /// `{"entry_long": {"left": {"indicator": "sma", "params": {"period": 10}}, "op": "cross_above",
    /// "right": {"indicator": "sma", "params": {"period": 20}}}, "exit_long": {...}, "entry_short": ...,
    /// "stop_loss": {"type": "atr", "multiple": 2}, "sizing": {"type": "all_in"},
    /// "costs": {"spread": 0.0001, "commission": 0, "slippage": 0}}`; or a legacy flat form
    /// `{"type": "ma_cross", "fast": 10, "slow": 20, "ma": "sma"}` /
    /// `{"type": "rsi", "period": 14, "oversold": 30, "overbought": 70}`.
    pub strategy: serde_json::Value,
    /// Starting equity (default 10000).
    #[serde(default)]
    pub initial_equity: Option<f64>,
}

/// One point of the equity curve.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EquityPoint {
    /// Bar open time (ISO 8601 UTC).
    pub time: String,
    /// Equity at that bar's close.
    pub equity: f64,
}

/// Output of `backtest_strategy`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BacktestOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars tested.
    pub bars: usize,
    /// First bar open time (ISO 8601 UTC).
    pub from: String,
    /// Last bar open time (ISO 8601 UTC).
    pub to: String,
    /// Summary statistics over every trade.
    pub metrics: Metrics,
    /// Closed trades, oldest first (at most 1000).
    pub trades: Vec<Trade>,
    /// True when `trades` was cut to 1000 (the most recent ones are dropped).
    pub truncated: bool,
    /// Equity curve downsampled to at most 500 points (always including the last bar).
    pub equity_curve: Vec<EquityPoint>,
}

async fn backtest_strategy(ctx: ToolContext, input: BacktestInput) -> Result<BacktestOutput, ToolError> {
    let count = input.bars.unwrap_or(2_000);
    if count == 0 || count > MAX_BARS {
        return Err(ToolError::InvalidInput(format!(
            "`bars` must be between 1 and {MAX_BARS}"
        )));
    }
    let strategy = backtest::parse_strategy(&input.strategy)
        .map_err(|e| ToolError::InvalidInput(format!("strategy.{e}").replace("strategy.: ", "strategy: ")))?;
    let initial_equity = input.initial_equity.unwrap_or(10_000.0);
    if !(initial_equity.is_finite() && initial_equity > 0.0) {
        return Err(ToolError::InvalidInput("`initial_equity` must be a number > 0".into()));
    }
    let bars = fetch_bars(&ctx, &input.symbol, input.timeframe, Some(count), None, None).await?;
    let (Some(first), Some(last)) = (bars.first(), bars.last()) else {
        return Err(ToolError::NotFound(format!(
            "no bars for {} {}",
            input.symbol, input.timeframe
        )));
    };
    let opts = RunOptions {
        initial_equity,
        ..RunOptions::default()
    };
    let result = backtest::run(&strategy, &bars, &opts).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    let step = result.equity.len().div_ceil(MAX_EQUITY_POINTS - 1).max(1);
    let n = result.equity.len();
    let equity_curve = (0..n)
        .filter(|i| i % step == 0 || i + 1 == n)
        .map(|i| EquityPoint {
            time: to_iso(bars[i].time),
            equity: result.equity[i],
        })
        .collect();
    let truncated = result.trades.len() > MAX_TRADES;
    let mut trades = result.trades;
    trades.truncate(MAX_TRADES);
    Ok(BacktestOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        bars: bars.len(),
        from: to_iso(first.time),
        to: to_iso(last.time),
        metrics: result.metrics,
        trades,
        truncated,
        equity_curve,
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "backtest_strategy",
            title: "Backtest a strategy",
            description: "Backtests a declarative strategy on the terminal's recent bars (default 2000, max 10000) and returns metrics (return %, max drawdown %, win rate, profit factor, Sharpe, Sortino, exposure, expectancy), the trade list (max 1000) and a downsampled equity curve. Strategy: a JSON condition tree with entry_long/exit_long/entry_short/exit_short conditions (all/any/not, comparisons gt/gte/lt/lte/cross_above/cross_below between indicator outputs, prices and constants), optional stop_loss/take_profit (price, pips or ATR multiple), sizing (fixed_lots, risk_percent, all_in) and costs (spread, commission, slippage); or a legacy form {type: ma_cross, fast, slow, ma} / {type: rsi, period, oversold, overbought}. Signals on a bar's close fill at the next open; an opposite entry reverses the trade; if stop and target are both touched in one bar the stop is assumed first.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(backtest_strategy),
    ]
}
