//! # tradeterm-core
//!
//! Pure domain logic for tradeterm: market and account types, order
//! validation and trade maths, indicators, market-structure detection,
//! regimes, risk and backtesting.
//!
//! **Architecture invariant:** this crate performs no I/O. It knows no async
//! runtime, no web framework, no database and no clock: time and randomness
//! come in as arguments, so every result is reproducible. Other Rust programs
//! can embed it on its own.
//!
//! **Invariant:** no function of this crate panics on user input; bad input is
//! reported through the typed errors of each module.
//!
//! # Example
//!
//! Read bars from CSV text, compute an indicator, detect market structure and
//! run a backtest:
//!
//! ```
//! use tradeterm_core::backtest::{self, RunOptions};
//! use tradeterm_core::indicators::RelativeStrengthIndex;
//! use tradeterm_core::structure::{self, StructureConfig, StructureEvent};
//!
//! // Hourly bars as a file would hold them (here with unix-second times; see
//! // `bars::parse_csv` for the formats read). Core does no I/O: the caller
//! // reads the file and passes its text.
//! let mut csv = String::from("time,open,high,low,close,volume\n");
//! for i in 0..300_i64 {
//!     let close = 100.0 + 5.0 * (i as f64 / 12.0).sin() + i as f64 * 0.02;
//!     let open = close - 0.1;
//!     let (high, low) = (close + 0.3, open - 0.3);
//!     csv += &format!("{},{open},{high},{low},{close},1000\n", 1_704_067_200 + i * 3600);
//! }
//! let bars = tradeterm_core::bars::parse_csv(&csv)?;
//!
//! // An indicator: RSI(14) at the last bar (`None` during the warm-up).
//! let rsi = RelativeStrengthIndex::new(14)?.over(&bars)?;
//! let last_rsi = rsi.last().copied().flatten().ok_or("RSI still warming up")?;
//! assert!((0.0..=100.0).contains(&last_rsi));
//!
//! // Market structure: swings, gaps, order blocks, BOS/CHoCH, each reported
//! // once it is knowable.
//! let events = structure::detect(&bars, &StructureConfig::default())?;
//! assert!(events.iter().any(|e| matches!(e, StructureEvent::Swing(_))));
//!
//! // A backtest: long when the close crosses above its SMA(20), short when it
//! // crosses below (the strategy language of `docs/backtest-dsl.md`; the same
//! // tree can be built in code from `backtest::Strategy`).
//! let sma20 = serde_json::json!({"indicator": "sma", "params": {"period": 20}});
//! let strategy = backtest::parse_strategy(&serde_json::json!({
//!     "entry_long": {"left": {"price": "close"}, "op": "cross_above", "right": sma20},
//!     "entry_short": {"left": {"price": "close"}, "op": "cross_below", "right": sma20},
//!     "sizing": {"type": "all_in"}
//! }))?;
//! let result = backtest::run(&strategy, &bars, &RunOptions::default())?;
//! assert!(result.metrics.trades > 0);
//! assert_eq!(result.equity.len(), bars.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every public module's documentation has a short example of its own, and
//! `crates/core/examples/` holds two small programs: `indicator_scan` (RSI,
//! ATR and EMA at the last bar of CSV files) and `custom_strategy` (a
//! backtest of a strategy built in code).

pub mod account;
pub mod alert_rules;
pub mod backtest;
pub mod bars;
pub mod coaching;
pub mod confluence;
pub mod costs;
pub mod equity_guard;
pub mod error;
pub mod events;
pub mod execution;
pub mod fibonacci;
pub mod holding;
pub mod indicators;
pub mod levels;
pub mod license;
pub mod macro_context;
pub mod managed;
pub mod market;
pub mod orderflow;
pub mod patterns;
pub mod portfolio;
pub mod prop_firm;
pub mod regime;
pub mod research;
pub mod scope;
pub mod sessions;
pub mod sizing;
pub mod structure;
pub mod time;
pub mod trade_stats;
pub mod trading;

pub use account::{AccountInfo, Deal, DealEntry, PendingOrder, Position, Side, TradeMode};
pub use error::CoreError;
pub use market::{Bar, SwapMode, SymbolSpec, Tick, Timeframe};
