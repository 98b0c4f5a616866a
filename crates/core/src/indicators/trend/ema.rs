//! Exponential moving average.

use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, close_based};

/// Exponential moving average, seeded TA-Lib's way with the simple average
/// of the first `period` values.
///
/// # Formula
///
/// `k = 2 / (period + 1)`; `EMA_{period-1} = SMA(first period values)`;
/// then `EMA_t = (x_t - EMA_{t-1}) · k + EMA_{t-1}`, evaluated with one fused
/// multiply-add as TA-Lib 0.8 does.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30, TA-Lib's).
///
/// Warm-up: the first value is at index `period - 1` (`TA_EMA`).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{ExponentialMovingAverage, Next};
///
/// let mut ema = ExponentialMovingAverage::new(3)?;
/// assert_eq!(ema.next(1.0), None);
/// assert_eq!(ema.next(2.0), None);
/// assert_eq!(ema.next(3.0), Some(2.0)); // seed: SMA of 1, 2, 3
/// assert_eq!(ema.next(6.0), Some(4.0)); // (6 - 2) · 0.5 + 2
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "EMA")]
#[derive(Debug, Clone)]
pub struct ExponentialMovingAverage {
    period: usize,
    k: f64,
    count: usize,
    seed_sum: f64,
    value: f64,
}

impl ExponentialMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds an EMA over `period` values.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self::unchecked(period))
    }

    /// Builds without checking `period` (callers pass a checked or constant period).
    pub(crate) fn unchecked(period: usize) -> Self {
        Self {
            period,
            k: 2.0 / (period + 1) as f64,
            count: 0,
            seed_sum: 0.0,
            value: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    #[inline]
    pub(crate) fn step(value: f64, x: f64, k: f64) -> f64 {
        (x - value).mul_add(k, value)
    }
}

impl Default for ExponentialMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for ExponentialMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.count = 0;
        self.seed_sum = 0.0;
        self.value = 0.0;
    }

    fn is_ready(&self) -> bool {
        self.count >= self.period
    }
}

impl Next<f64> for ExponentialMovingAverage {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        if self.count >= self.period {
            self.value = Self::step(self.value, x, self.k);
            return Some(self.value);
        }
        self.count += 1;
        self.seed_sum += x;
        if self.count == self.period {
            self.value = self.seed_sum / self.period as f64;
            Some(self.value)
        } else {
            None
        }
    }
}

close_based!(ExponentialMovingAverage);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_with_sma() {
        let ema = ExponentialMovingAverage::new(2).unwrap();
        let out = ema.over_values(&[1.0, 3.0, 6.0]).unwrap();
        // k = 2/3: seed 2, then (6 - 2) * 2/3 + 2
        assert_eq!(out[0], None);
        assert_eq!(out[1], Some(2.0));
        assert!((out[2].unwrap() - (2.0 + 8.0 / 3.0)).abs() < 1e-12);
        assert!(ExponentialMovingAverage::new(0).is_err());
    }
}
