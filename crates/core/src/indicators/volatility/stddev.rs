//! Rolling standard deviation.

use crate::CoreError;
use crate::indicators::util::{RollingVariance, check_period, check_real};
use crate::indicators::{Indicator, Next, close_based};

/// Population standard deviation over a rolling window, times `nbdev`, as
/// TA-Lib's `TA_STDDEV`.
///
/// # Formula
///
/// `σ_t = sqrt( (1/n) Σ (x_i − mean)² )` over the last `n = period` values,
/// multiplied by `nbdev`. The variance is TA-Lib 0.8's cancellation-free
/// form: running sums of deviations from a shift that is re-anchored on the
/// window mean when it goes stale (never `E[x²] − E[x]²` on raw prices), and
/// a window flat up to rounding gives exactly 0.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 5, TA-Lib's).
/// - `nbdev`: multiplier, finite, 0 ..= 100 (default 1).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{Next, StandardDeviation};
///
/// let mut sd = StandardDeviation::new(2, 1.0)?;
/// assert_eq!(sd.next(1.0), None);
/// assert_eq!(sd.next(3.0), Some(1.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "STDDEV")]
#[doc(alias = "STDEV")]
#[derive(Debug, Clone)]
pub struct StandardDeviation {
    period: usize,
    nbdev: f64,
    var: RollingVariance,
    ready: bool,
}

impl StandardDeviation {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 5;
    /// Default multiplier.
    pub const DEFAULT_NBDEV: f64 = 1.0;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000 or an
    /// `nbdev` that is not finite or outside 0 ..= 100.
    pub fn new(period: usize, nbdev: f64) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        let nbdev = check_real("nbdev", nbdev, 0.0, 100.0)?;
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

impl Default for StandardDeviation {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD, Self::DEFAULT_NBDEV)
    }
}

impl Indicator for StandardDeviation {
    type Output = f64;

    fn reset(&mut self) {
        self.var.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for StandardDeviation {
    fn next(&mut self, x: f64) -> Option<f64> {
        let var = self.var.push(x)?;
        self.ready = true;
        let sd = if var != 0.0 { var.sqrt() } else { 0.0 };
        Some(if self.nbdev == 1.0 { sd } else { sd * self.nbdev })
    }
}

close_based!(StandardDeviation);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn population_deviation() {
        let sd = StandardDeviation::new(4, 2.0).unwrap();
        let out = sd.over_values(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(out[2], None);
        // window 4,4,5,5 → mean 4.5, var 0.25, σ 0.5, ×2
        assert!((out[5].unwrap() - 1.0).abs() < 1e-12);
        assert!(StandardDeviation::new(1, 1.0).is_err());
        assert!(StandardDeviation::new(5, f64::NAN).is_err());
    }
}
