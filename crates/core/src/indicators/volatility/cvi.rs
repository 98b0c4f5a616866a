//! Chaikin volatility.

use crate::indicators::util::check_period;
use crate::indicators::{ExponentialMovingAverage, Indicator, Next, RateOfChange, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Chaikin volatility, as TA-Lib's `TA_CVI`: the rate of change of the
/// smoothed bar range.
///
/// # Formula
///
/// `CVI = ROC(EMA(high − low, period), roc)` (TA-Lib's ROC, 0 where the
/// earlier average is 0).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 10), `roc`: 1 ..= 10 000 (default 10).
///
/// Warm-up: the first value is at index `period − 1 + roc`.
#[doc(alias = "CVI")]
#[derive(Debug, Clone)]
pub struct ChaikinVolatility {
    ema: ExponentialMovingAverage,
    roc: RateOfChange,
}

impl ChaikinVolatility {
    /// Default EMA period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 10;
    /// Default ROC period (TA-Lib's).
    pub const DEFAULT_ROC: usize = 10;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside its range.
    pub fn new(period: usize, roc: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self {
            ema: ExponentialMovingAverage::new(period)?,
            roc: RateOfChange::new(roc)?,
        })
    }
}

impl Default for ChaikinVolatility {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_PERIOD, Self::DEFAULT_ROC) {
            Ok(c) => c,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for ChaikinVolatility {
    type Output = f64;

    fn reset(&mut self) {
        self.ema.reset();
        self.roc.reset();
    }

    fn is_ready(&self) -> bool {
        self.roc.is_ready()
    }
}

impl Next<&Bar> for ChaikinVolatility {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let e = self.ema.next(bar.high - bar.low)?;
        self.roc.next(e)
    }
}

bar_based!(ChaikinVolatility, run_bars);
columns_based!(ChaikinVolatility, high, low);
