//! Simple moving average.

use crate::CoreError;
use crate::indicators::util::{RunningSma, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Simple moving average: the arithmetic mean of the last `period` values.
///
/// # Formula
///
/// `SMA_t = (x_t + x_{t-1} + … + x_{t-period+1}) / period`, kept as a running
/// sum (add the new value, divide, subtract the value leaving the window) in
/// TA-Lib's order, so results are bit-identical to `TA_SMA`.
///
/// # Parameters
///
/// - `period`: window length, 1 ..= 10 000 (default 30, TA-Lib's).
///
/// Warm-up: the first value is at index `period - 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{Next, SimpleMovingAverage};
///
/// let mut sma = SimpleMovingAverage::new(2)?;
/// assert_eq!(sma.next(1.0), None);
/// assert_eq!(sma.next(3.0), Some(2.0));
/// assert_eq!(sma.next(5.0), Some(4.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "SMA")]
#[doc(alias = "MA")]
#[derive(Debug, Clone)]
pub struct SimpleMovingAverage {
    period: usize,
    inner: RunningSma,
    ready: bool,
}

impl SimpleMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds an SMA over `period` values.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self {
            period,
            inner: RunningSma::new(period),
            ready: false,
        })
    }

    /// The window length.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for SimpleMovingAverage {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            inner: RunningSma::new(Self::DEFAULT_PERIOD),
            ready: false,
        }
    }
}

impl Indicator for SimpleMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.inner.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for SimpleMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        let out = self.inner.push(x);
        self.ready = out.is_some();
        out
    }
}

close_based!(SimpleMovingAverage);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_periods() {
        assert!(SimpleMovingAverage::new(0).is_err());
        assert!(SimpleMovingAverage::new(10_001).is_err());
        assert!(SimpleMovingAverage::new(10_000).is_ok());
    }

    #[test]
    fn averages_and_resets() {
        let sma = SimpleMovingAverage::new(3).unwrap();
        let out = sma.over_values(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(out, vec![None, None, Some(2.0), Some(3.0), Some(4.0)]);
        assert!(sma.over_values(&[]).is_err());
        assert!(sma.over_values(&[1.0, f64::NAN]).is_err());
        let mut s = sma.clone();
        s.next(1.0);
        s.next(1.0);
        s.next(1.0);
        assert!(s.is_ready());
        s.reset();
        assert!(!s.is_ready());
        assert_eq!(s.next(5.0), None);
    }
}
