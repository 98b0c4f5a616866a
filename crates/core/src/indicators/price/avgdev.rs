//! Average deviation.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Mean absolute deviation from the mean, as TA-Lib's `TA_AVGDEV`.
///
/// # Formula
///
/// With `m` the mean of the last `n` values, `AVGDEV = Σ |x − m| / n`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14, TA-Lib's).
///
/// Warm-up: the first value is at index `period − 1`.
#[doc(alias = "AVGDEV")]
#[derive(Debug, Clone)]
pub struct AverageDeviation {
    period: usize,
    window: Window,
}

impl AverageDeviation {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self {
            period,
            window: Window::new(period),
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for AverageDeviation {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD),
        }
    }
}

impl Indicator for AverageDeviation {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
    }

    fn is_ready(&self) -> bool {
        self.window.is_full()
    }
}

impl Next<f64> for AverageDeviation {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        if !self.window.is_full() {
            return None;
        }
        let n = self.period as f64;
        let mean = self.window.iter().sum::<f64>() / n;
        Some(self.window.iter().map(|v| (v - mean).abs()).sum::<f64>() / n)
    }
}

close_based!(AverageDeviation);
