//! Variance.

use crate::CoreError;
use crate::indicators::util::{RollingVariance, check_period, check_real};
use crate::indicators::{Indicator, Next, close_based};

/// Population variance over a period, as TA-Lib's `TA_VAR`.
///
/// # Formula
///
/// `VAR = E[x²] − E[x]²` of the last `period` values, computed TA-Lib 0.8's
/// cancellation-free way (running sums of deviations from a re-anchored
/// shift, as [`StandardDeviation`](crate::indicators::StandardDeviation)),
/// 0 on a flat window.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 5).
/// - `nbdev`: −1e9 ..= 1e9 (default 1), accepted for TA-Lib compatibility
///   and, as in TA-Lib, without effect on the result (TA-Lib's range is
///   ±3e37; a bound that large cannot be told from its neighbours).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::Variance;
///
/// let out = Variance::new(2, 1.0)?.over_values(&[1.0, 3.0, 3.0])?;
/// assert_eq!(out, vec![None, Some(1.0), Some(0.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "VAR")]
#[derive(Debug, Clone)]
pub struct Variance {
    period: usize,
    nbdev: f64,
    var: RollingVariance,
    ready: bool,
}

impl Variance {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 5;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000, or
    /// `nbdev` is outside −1e9 ..= 1e9.
    pub fn new(period: usize, nbdev: f64) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        let nbdev = check_real("nbdev", nbdev, -1e9, 1e9)?;
        Ok(Self::unchecked(period, nbdev))
    }

    fn unchecked(period: usize, nbdev: f64) -> Self {
        Self {
            period,
            nbdev,
            var: RollingVariance::new(period),
            ready: false,
        }
    }

    /// `(period, nbdev)`.
    pub fn params(&self) -> (usize, f64) {
        (self.period, self.nbdev)
    }
}

impl Default for Variance {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD, 1.0)
    }
}

impl Indicator for Variance {
    type Output = f64;

    fn reset(&mut self) {
        self.var.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for Variance {
    fn next(&mut self, x: f64) -> Option<f64> {
        let v = self.var.push(x)?;
        self.ready = true;
        Some(v)
    }
}

close_based!(Variance);
