//! True strength index.

use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{ExponentialMovingAverage, Indicator, Next, close_based};

/// Blau's true strength index, as TA-Lib's `TA_TSI`.
///
/// # Formula
///
/// With `m = x − x₋₁`: `TSI = 100 · EMA(EMA(m, first), second) /
/// EMA(EMA(|m|, first), second)` (TA-Lib's SMA-seeded EMAs), 0 where the
/// denominator is 0.
///
/// # Parameters
///
/// - `first` (default 25), `second` (default 13): each 2 ..= 10 000.
///
/// Warm-up: the first value is at index `first + second − 1`.
#[doc(alias = "TSI")]
#[derive(Debug, Clone)]
pub struct TrueStrengthIndex {
    prev: Option<f64>,
    num1: ExponentialMovingAverage,
    num2: ExponentialMovingAverage,
    den1: ExponentialMovingAverage,
    den2: ExponentialMovingAverage,
}

impl TrueStrengthIndex {
    /// Default first smoothing (TA-Lib's).
    pub const DEFAULT_FIRST: usize = 25;
    /// Default second smoothing (TA-Lib's).
    pub const DEFAULT_SECOND: usize = 13;

    /// Builds the index.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(first: usize, second: usize) -> Result<Self, CoreError> {
        let first = check_period("first", first, 2)?;
        let second = check_period("second", second, 2)?;
        Ok(Self {
            prev: None,
            num1: ExponentialMovingAverage::new(first)?,
            num2: ExponentialMovingAverage::new(second)?,
            den1: ExponentialMovingAverage::new(first)?,
            den2: ExponentialMovingAverage::new(second)?,
        })
    }
}

impl Default for TrueStrengthIndex {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_FIRST, Self::DEFAULT_SECOND) {
            Ok(t) => t,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for TrueStrengthIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.prev = None;
        self.num1.reset();
        self.num2.reset();
        self.den1.reset();
        self.den2.reset();
    }

    fn is_ready(&self) -> bool {
        self.num2.is_ready()
    }
}

impl Next<f64> for TrueStrengthIndex {
    fn next(&mut self, x: f64) -> Option<f64> {
        let m = x - self.prev.replace(x)?;
        let n1 = self.num1.next(m);
        let d1 = self.den1.next(m.abs());
        let n = self.num2.next(n1?);
        let d = self.den2.next(d1?);
        let (n, d) = (n?, d?);
        Some(if d != 0.0 { 100.0 * n / d } else { 0.0 })
    }
}

close_based!(TrueStrengthIndex);
