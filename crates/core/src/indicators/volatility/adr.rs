//! Average daily range.

use crate::indicators::util::{RunningSma, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Average (daily) range, as TA-Lib's `TA_ADR`: the simple average of the
/// bars' high − low (unlike ATR, no gap to the previous close).
///
/// # Formula
///
/// `ADR = SMA(high − low, n)`.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 14, TA-Lib's).
///
/// Warm-up: the first value is at index `period − 1`.
#[doc(alias = "ADR")]
#[derive(Debug, Clone)]
pub struct AverageDailyRange {
    period: usize,
    sma: RunningSma,
    count: usize,
}

impl AverageDailyRange {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

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

impl Default for AverageDailyRange {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for AverageDailyRange {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count >= self.period
    }
}

impl Next<&Bar> for AverageDailyRange {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.count = self.count.saturating_add(1);
        self.sma.push(bar.high - bar.low)
    }
}

bar_based!(AverageDailyRange, run_bars);
columns_based!(AverageDailyRange, high, low);
