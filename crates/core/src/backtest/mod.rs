//! Backtests of declarative strategies over a bar series.
//!
//! A [`Strategy`] is a JSON tree (see `docs/backtest-dsl.md`): entry and exit
//! [`Condition`]s over indicator outputs and prices, stops, sizing and costs.
//! [`run`] computes every indicator series once with
//! [`crate::indicators::catalog::compute`] (the SMA through a bit-identical
//! private fast path), evaluates every condition over all bars at once
//! (conditions on bar `i` read values up to `i` only: no look-ahead) and
//! fills at the next bar's open. [`explain`] evaluates the same compiled
//! rules on the last bar and says what the engine would do next, and why;
//! both share the compilation, the comparison and the decision rule
//! (module `eval`).
//!
//! **Invariant:** pure and deterministic: same strategy and bars, same result.
//! Bad input is a [`BacktestError`], never a panic. With zero costs and
//! `all_in` sizing the engine reproduces backtesting.py 0.6.6 trade for trade
//! (tested against fixtures in `crates/core/tests/fixtures/backtesting/`).

mod diagnose;
pub mod dsl;
pub mod engine;
mod eval;
pub mod explain;
pub mod legacy;
pub mod metrics;

use thiserror::Error;

pub use dsl::{Comparison, Condition, Costs, Op, Operand, PriceField, Sizing, Stop, Strategy};
pub use engine::{
    BacktestResult, Direction, ExitReason, FinalExit, PROGRESS_EVERY, RunOptions, Trade, run, run_with_progress,
};
pub use explain::{
    Action, ComparisonReport, ConditionReport, Explanation, OperandReport, OrderPlan, PositionSide, RulesReport,
    explain, warm_up_bars,
};
pub use legacy::parse_strategy;
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
