//! Errors shared by the core modules.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::CoreError;
//! use tradeterm_core::indicators::RelativeStrengthIndex;
//!
//! // A zero period is an error naming the parameter, not a panic.
//! let err = RelativeStrengthIndex::new(0).unwrap_err();
//! assert!(matches!(&err, CoreError::InvalidParameter { name, .. } if name == "period"), "{err}");
//! ```

use thiserror::Error;

/// An error raised by core on invalid input. Never a panic.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CoreError {
    /// A parameter is out of its allowed range (zero period, negative multiplier, ...).
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// Parameter name as the caller spelled it.
        name: String,
        /// Why the value is refused.
        reason: String,
    },
    /// The input series is unusable (empty, NaN, unordered times, ...).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Text could not be parsed (CSV, timeframe, time stamp, ...).
    #[error("parse error: {0}")]
    Parse(String),
}

impl CoreError {
    /// Shorthand for [`CoreError::InvalidParameter`].
    pub fn param(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidParameter {
            name: name.into(),
            reason: reason.into(),
        }
    }
}
