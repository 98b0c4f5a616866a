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

pub mod journal_score;
pub mod setup;
