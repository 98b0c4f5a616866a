//! Wilder's moving average (RMA).

use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, close_based};

/// Wilder's running moving average, as TA-Lib's `TA_RMA` (the smoothing of
/// RSI and ATR, also called SMMA).
///
/// # Formula
///
/// The first value is the simple average of the first `period` inputs;
/// then `RMA_t = β · RMA_{t−1} + α · x_t` with `β = (period − 1)/period`
/// and `α = 1 − β` (one fused multiply-add, as TA-Lib).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30, TA-Lib's). Period 1 returns the input.
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::WildersMovingAverage;
///
/// let out = WildersMovingAverage::new(2)?.over_values(&[1.0, 3.0, 4.0])?;
/// assert_eq!(out, vec![None, Some(2.0), Some(3.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "RMA")]
#[doc(alias = "SMMA")]
#[derive(Debug, Clone)]
pub struct WildersMovingAverage {
    period: usize,
    count: usize,
    sum: f64,
    value: f64,
}

impl WildersMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds the average.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(check_period("period", period, 1)?))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            count: 0,
            sum: 0.0,
            value: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for WildersMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for WildersMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count >= self.period
    }
}

impl Next<f64> for WildersMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        if self.count < self.period {
            self.count += 1;
            self.sum += x;
            if self.count < self.period {
                return None;
            }
            self.value = self.sum / self.period as f64;
            return Some(self.value);
        }
        let beta = (self.period - 1) as f64 / self.period as f64;
        let alpha = 1.0 - beta;
        self.value = beta.mul_add(self.value, alpha * x);
        Some(self.value)
    }
}

close_based!(WildersMovingAverage);
