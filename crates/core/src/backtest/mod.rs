//! Backtests of declarative strategies over a bar series.
//!
//! A [`Strategy`] is a JSON tree (see `docs/backtest-dsl.md`): entry and exit
//! [`Condition`]s over indicator outputs and prices, stops, sizing and costs.
//! [`run`] computes every indicator series once with
//! [`crate::indicators::compute`] (the SMA through a bit-identical
//! private fast path), evaluates every condition over all bars at once
//! (conditions on bar `i` read values up to `i` only: no look-ahead) and
//! fills at the next bar's open. [`explain()`] evaluates the same compiled
//! rules on the last bar and says what the engine would do next, and why;
//! both share the compilation, the comparison and the decision rule
//! (module `eval`).
//!
//! **Invariant:** pure and deterministic: same strategy and bars, same result.
//! Bad input is a [`BacktestError`], never a panic. With zero costs and
//! `all_in` sizing the engine reproduces backtesting.py 0.6.6 trade for trade
//! (tested against fixtures in `crates/core/tests/fixtures/backtesting/`:
//! backtesting.py's own `SmaCross` for four SMA pairs and an RSI threshold
//! strategy on every series of `data/market/`, no exceptions). The SMA is
//! pandas' rolling mean bit for bit, as backtesting.py's `SMA` is, so crosses
//! fall on the same bars even where pandas' compensated sum breaks an exact
//! tie; `SmaCross` closes and re-opens on a cross in the direction held,
//! which [`SameDirectionEntry::Reenter`] does (the legacy `ma_cross` form
//! sets it).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::Bar;
//! use tradeterm_core::backtest::{self, Direction, ExitReason, RunOptions};
//!
//! // Down, up, then down again: the close crosses above its SMA(3), then below.
//! let closes = [12.0, 11.0, 10.0, 11.0, 12.0, 13.0, 14.0, 13.0, 12.0, 11.0, 10.0, 9.0];
//! let bars: Vec<Bar> = (0..)
//!     .zip(closes)
//!     .map(|(i, c)| Bar { time: i * 3_600_000, open: c, high: c + 0.5, low: c - 0.5, close: c, volume: 1.0 })
//!     .collect();
//! let sma3 = serde_json::json!({"indicator": "sma", "params": {"period": 3}});
//! let strategy = backtest::parse_strategy(&serde_json::json!({
//!     "entry_long": {"left": {"price": "close"}, "op": "cross_above", "right": sma3},
//!     "entry_short": {"left": {"price": "close"}, "op": "cross_below", "right": sma3},
//!     "sizing": {"type": "all_in"}
//! }))?;
//! let result = backtest::run(&strategy, &bars, &RunOptions::default())?;
//! let trades: Vec<_> = result.trades.iter().map(|t| (t.direction, t.reason)).collect();
//! assert_eq!(trades, [(Direction::Long, ExitReason::Reverse), (Direction::Short, ExitReason::EndOfData)]);
//! assert_eq!(result.trades[0].entry_index, 4); // signal on bar 3's close, filled at bar 4's open
//! # Ok::<(), backtest::BacktestError>(())
//! ```

mod diagnose;
pub mod dsl;
pub mod engine;
mod eval;
pub mod explain;
pub mod legacy;
pub mod metrics;

use thiserror::Error;

pub use dsl::{Comparison, Condition, Costs, Op, Operand, PriceField, SameDirectionEntry, Sizing, Stop, Strategy};
pub use engine::{
    BacktestResult, Direction, ExitReason, FinalExit, PROGRESS_EVERY, RunOptions, Trade, run, run_with_progress,
};
pub use explain::{
    Action, ComparisonReport, ConditionReport, Explanation, OperandReport, OrderPlan, PositionSide, RulesReport,
    explain, warm_up_bars,
};
pub use legacy::{legacy_warnings, parse_strategy};
pub use metrics::Metrics;

use crate::CoreError;

/// Why a backtest could not run.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BacktestError {
    /// The strategy or an option is invalid; `path` is the JSON path of the fault.
    #[error("{path}: {reason}")]
    Invalid {
        /// JSON path (`entry_long.all[1].left.indicator`); empty for the whole strategy.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// An indicator refused its parameters.
    #[error("{path}: {source}")]
    Indicator {
        /// JSON path of the operand.
        path: String,
        /// The indicator's error.
        source: CoreError,
    },
    /// The bar series is unusable.
    #[error("bars: {0}")]
    Data(CoreError),
}
