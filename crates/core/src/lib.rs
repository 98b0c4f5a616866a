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

pub mod account;
pub mod backtest;
pub mod bars;
pub mod coaching;
pub mod confluence;
pub mod costs;
pub mod error;
pub mod events;
pub mod fibonacci;
pub mod holding;
pub mod indicators;
pub mod license;
pub mod macro_context;
pub mod market;
pub mod orderflow;
pub mod portfolio;
pub mod prop_firm;
pub mod regime;
pub mod sessions;
pub mod structure;
pub mod time;
pub mod trading;

pub use account::{AccountInfo, Deal, DealEntry, PendingOrder, Position, Side, TradeMode};
pub use error::CoreError;
pub use market::{Bar, SwapMode, SymbolSpec, Tick, Timeframe};
