//! Zero-lag exponential moving average.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{ExponentialMovingAverage, Indicator, Next, close_based};

/// Ehlers and Way's zero-lag EMA, as TA-Lib's `TA_ZLEMA`.
///
/// # Formula
///
/// With `lag = ⌊(n − 1)/2⌋`, the de-lagged series `d_t = 2·x_t − x_{t−lag}`
/// is smoothed by an `n`-period EMA seeded with the simple average of its
/// first `n` values (TA-Lib's EMA). Period 1 returns the input.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30, TA-Lib's).
///
/// Warm-up: the first value is at index `lag + n − 1`.
#[doc(alias = "ZLEMA")]
#[derive(Debug, Clone)]
pub struct ZeroLagExponentialMovingAverage {
    period: usize,
    window: Window,
    ema: ExponentialMovingAverage,
}

impl ZeroLagExponentialMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds the average.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self {
            period,
            window: Window::new((period - 1) / 2 + 1),
            ema: ExponentialMovingAverage::new(period)?,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for ZeroLagExponentialMovingAverage {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_PERIOD) {
            Ok(z) => z,
            Err(_) => unreachable!("the default period is valid"),
        }
    }
}

impl Indicator for ZeroLagExponentialMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
        self.ema.reset();
    }

    fn is_ready(&self) -> bool {
        if self.period == 1 {
            self.window.is_full()
        } else {
            self.ema.is_ready()
        }
    }
}

impl Next<f64> for ZeroLagExponentialMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        if self.period == 1 {
            return Some(x);
        }
        if !self.window.is_full() {
            return None;
        }
        let lagged = self.window.oldest().unwrap_or(x);
        self.ema.next(2.0 * x - lagged)
    }
}

close_based!(ZeroLagExponentialMovingAverage);
