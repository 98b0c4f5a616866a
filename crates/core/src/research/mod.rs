//! Statistics that keep a strategy author from fooling themselves: the
//! deflated Sharpe ratio over the number of trials actually run, the
//! probability of backtest overfitting by combinatorially symmetric
//! cross-validation, and Monte Carlo of a trade sequence.
//!
//! * [`deflated_sharpe`]: PSR, the expected maximum Sharpe ratio of N trials
//!   and the deflated Sharpe ratio (Bailey and López de Prado, 2014);
//! * [`pbo`]: the probability of backtest overfitting by CSCV (Bailey,
//!   Borwein, López de Prado and Zhu);
//! * [`monte_carlo`]: bootstrap and permutation of a trade sequence with a
//!   seeded xoshiro256** generator; final equity, drawdown and losing-streak
//!   distributions with numpy-convention percentiles;
//! * [`normal`]: the standard normal CDF and its inverse they rely on.
//!
//! All are pure functions of their inputs; randomness comes in as a seed.
//! Formulas, references and conventions are in each module and in
//! `docs/research.md`.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::research::deflated_sharpe::{deflated_sharpe_ratio, SharpeStats};
//!
//! let returns: Vec<f64> = (0..500).map(|i| 0.001 + 0.01 * ((i * 7919 % 101) as f64 / 50.0 - 1.0)).collect();
//! let stats = SharpeStats::from_returns(&returns)?;
//! let dsr = deflated_sharpe_ratio(&stats, 50, 0.001)?;
//! assert!((0.0..=1.0).contains(&dsr.deflated_sharpe));
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

pub mod deflated_sharpe;
pub mod monte_carlo;
pub mod normal;
pub mod pbo;
