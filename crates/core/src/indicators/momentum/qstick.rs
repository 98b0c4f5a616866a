//! Qstick.

use crate::indicators::util::{RunningSma, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Chande's Qstick, as TA-Lib's `TA_QSTICK`: the simple average of the bar
/// bodies.
///
/// # Formula
///
/// `QSTICK = SMA(close − open, n)`.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 10, TA-Lib's).
///
/// Warm-up: the first value is at index `period − 1`.
#[doc(alias = "QSTICK")]
#[derive(Debug, Clone)]
pub struct Qstick {
    period: usize,
    sma: RunningSma,
    count: usize,
}

impl Qstick {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 10;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(check_period("period", period, 1)?))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            sma: RunningSma::new(period),
            count: 0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for Qstick {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for Qstick {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count >= self.period
    }
}

impl Next<&Bar> for Qstick {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.count = self.count.saturating_add(1);
        self.sma.push(bar.close - bar.open)
    }
}

bar_based!(Qstick, run_bars);
columns_based!(Qstick, open, close);
