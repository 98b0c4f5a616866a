//! Kaufman efficiency ratio.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Kaufman's efficiency ratio, as TA-Lib's `TA_ER` (KAMA's inner ratio).
///
/// # Formula
///
/// `ER_t = |x_t − x_{t−n}| / Σ_{k=t−n+1}^{t} |x_k − x_{k−1}|`, 0 ..= 1.
/// As TA-Lib: 1 where the path is 0 (a flat window) or not above the
/// signed change `x_t − x_{t−n}`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 10, TA-Lib's).
///
/// Warm-up: the first value is at index `period`.
#[doc(alias = "ER")]
#[derive(Debug, Clone)]
pub struct EfficiencyRatio {
    period: usize,
    window: Window,
}

impl EfficiencyRatio {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 10;

    /// Builds the ratio.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self {
            period,
            window: Window::new(period + 1),
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for EfficiencyRatio {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD + 1),
        }
    }
}

impl Indicator for EfficiencyRatio {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
    }

    fn is_ready(&self) -> bool {
        self.window.is_full()
    }
}

impl Next<f64> for EfficiencyRatio {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        if !self.window.is_full() {
            return None;
        }
        let first = self.window.oldest()?;
        let mut path = 0.0;
        let mut prev = first;
        for v in self.window.iter().skip(1) {
            path += (v - prev).abs();
            prev = v;
        }
        let change = x - first;
        Some(if path <= 0.0 || path <= change {
            1.0
        } else {
            (change / path).abs()
        })
    }
}

close_based!(EfficiencyRatio);
