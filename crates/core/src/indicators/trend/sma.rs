//! Simple moving average.

use crate::CoreError;
use crate::indicators::util::{PandasSma, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Simple moving average: the arithmetic mean of the last `period` values.
///
/// # Formula
///
/// `SMA_t = (x_t + x_{t-1} + … + x_{t-period+1}) / period`, computed **bit
/// for bit as pandas' rolling mean** (`pd.Series(x).rolling(period).mean()`,
/// pandas 2.x/3.x), which is what backtesting.py's `SMA` is: a
/// Kahan-compensated running sum carried from the first value (one
/// compensation term for the values added, another for the values leaving
/// the window, the leaving value subtracted first), divided by `period`; a
/// window holding one repeated value gives that value exactly, and a window
/// of positive values never averages below zero (nor a negative one above).
/// Crosses of two SMAs therefore fall on the same bars as in backtesting.py,
/// including the rare bars where two mathematically equal means differ in
/// the last bit (pandas' sum depends on the window's history). The result is
/// within a few ulps of TA-Lib's `TA_SMA`.
///
/// In streaming use, a non-finite input is skipped as pandas skips NaN (and
/// reads infinities as NaN): while it is in the window, `next` returns
/// `None`. Batch forms reject non-finite input.
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
    inner: PandasSma,
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
            inner: PandasSma::new(period),
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
            inner: PandasSma::new(Self::DEFAULT_PERIOD),
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

    /// pandas' rolling mean, bit for bit (values printed by pandas 3.1.1,
    /// `pd.Series(xs).rolling(n).mean()`).
    #[test]
    fn pandas_rolling_mean_bits() {
        let mean = |n: usize, xs: &[f64]| SimpleMovingAverage::new(n).unwrap().over_values(xs).unwrap();
        // A running sum's rounding: pandas' `0.1 + 0.2` window is 0.15000000000000002.
        assert_eq!(
            mean(2, &[0.1, 0.2, 0.3]),
            vec![None, Some(0.15000000000000002), Some(0.25)]
        );
        // The compensation terms carry history: the same window [1.8, 0.8]
        // after different values (pandas: 1.3000000000000003 and 1.3).
        assert_eq!(mean(2, &[0.9, 0.8, 0.4, 1.0, 1.8, 0.8])[5], Some(1.3000000000000003));
        assert_eq!(mean(2, &[1.8, 0.8])[1], Some(1.3));
        // A window of one repeated value is that value exactly (a running
        // sum gives 0.10000000000000002 for three 0.1s).
        assert_eq!(mean(3, &[0.3, 0.1, 0.1, 0.1])[3], Some(0.1));
        assert_eq!(mean(3, &[0.3, 0.1, 0.1, 0.1])[2], Some(0.16666666666666666));
        // Positive values never average below zero (the sum is −63 here after
        // huge values left the window); negative ones never above.
        let xs = [
            9.151643160405382e16,
            33370181.650983725,
            66291437140616.63,
            6.051975482234742e16,
            3.400372041667471e17,
            32456784.15453543,
            0.4320051299688942,
            0.4138411027688773,
        ];
        assert_eq!(mean(2, &xs)[6], Some(16228360.29327028));
        assert_eq!(mean(2, &xs)[7], Some(0.0));
        let neg: Vec<f64> = xs.iter().map(|x| -x).collect();
        assert_eq!(mean(2, &neg)[7], Some(0.0));
        // Streaming: a NaN is skipped; no mean while it is in the window.
        let mut s = SimpleMovingAverage::new(2).unwrap();
        let out: Vec<_> = [1.0, f64::NAN, 2.0, 4.0, f64::INFINITY, 5.0, 7.0]
            .iter()
            .map(|&x| s.next(x))
            .collect();
        assert_eq!(out, vec![None, None, None, Some(3.0), None, None, Some(6.0)]);
    }
}
