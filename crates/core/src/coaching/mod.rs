//! Coaching: explanations and scores built only from computed or recorded
//! facts.
//!
//! - [`setup`]: a structured, sourced explanation of the current setup of a
//!   bar series (structure, volatility regime, unmitigated zones, liquidity,
//!   Fibonacci levels), with a bias decided by a documented rule and explicit
//!   caveats. Every number in an observation's sentence is one of the values
//!   the observation lists as its sources.
//! - [`journal_score`]: a rubric score (0-100) of a trading-journal entry:
//!   plan, stop loss, risk size, planned and realised R, rule adherence and
//!   emotions; criteria without the data they need are reported as not
//!   scored, never guessed.
//!
//! Both are pure: no I/O, no clock. The rules are documented in
//! `docs/coaching.md`.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::coaching::journal_score::risk_from_tags;
//!
//! let tags = ["breakout".to_string(), "Risk: 1.5%".to_string()];
//! let (risk, tag) = risk_from_tags(&tags).ok_or("no risk tag")?;
//! assert_eq!(risk, 1.5);
//! assert_eq!(tag, "Risk: 1.5%");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod journal_score;
pub mod setup;
