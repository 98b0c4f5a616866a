//! Vertical horizontal filter.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// White's vertical horizontal filter, as TA-Lib's `TA_VHF`: how much of the
/// path of the closes went into a net range (trending) rather than back and
/// forth.
///
/// # Formula
///
/// `VHF_t = (max − min of x_{t−n+1..t}) / Σ_{k=t−n+1}^{t} |x_k − x_{k−1}|`,
/// 0 where the path is 0.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 28, TA-Lib's).
///
/// Warm-up: the first value is at index `period`.
#[doc(alias = "VHF")]
#[derive(Debug, Clone)]
pub struct VerticalHorizontalFilter {
    period: usize,
    window: Window,
}

impl VerticalHorizontalFilter {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 28;

    /// Builds the filter.
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

impl Default for VerticalHorizontalFilter {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD + 1),
        }
    }
}

impl Indicator for VerticalHorizontalFilter {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
    }

    fn is_ready(&self) -> bool {
        self.window.is_full()
    }
}

impl Next<f64> for VerticalHorizontalFilter {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        if !self.window.is_full() {
            return None;
        }
        let mut prev = self.window.oldest()?;
        let (mut hi, mut lo, mut path) = (f64::NEG_INFINITY, f64::INFINITY, 0.0);
        for v in self.window.iter().skip(1) {
            hi = hi.max(v);
            lo = lo.min(v);
            path += (v - prev).abs();
            prev = v;
        }
        Some(if path > 0.0 { (hi - lo) / path } else { 0.0 })
    }
}

close_based!(VerticalHorizontalFilter);
