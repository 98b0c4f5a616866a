//! Rate of change.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Rate of change in percent over `period` bars, as TA-Lib's `TA_ROC`.
///
/// # Formula
///
/// `ROC_t = (x_t / x_{t−period} − 1) · 100`, and 0 when `x_{t−period}` is 0.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 10).
///
/// Warm-up: the first value is at index `period`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::RateOfChange;
///
/// let out = RateOfChange::new(1)?.over_values(&[100.0, 110.0, 99.0])?;
/// assert_eq!(out[0], None);
/// assert!((out[1].unwrap() - 10.0).abs() < 1e-9);
/// assert!((out[2].unwrap() + 10.0).abs() < 1e-9);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "ROC")]
#[derive(Debug, Clone)]
pub struct RateOfChange {
    period: usize,
    window: Window,
    ready: bool,
}

impl RateOfChange {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 10;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self {
            period,
            window: Window::new(period),
            ready: false,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for RateOfChange {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD),
            ready: false,
        }
    }
}

impl Indicator for RateOfChange {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for RateOfChange {
    fn next(&mut self, x: f64) -> Option<f64> {
        let out = self
            .window
            .push(x)
            .map(|old| if old != 0.0 { ((x / old) - 1.0) * 100.0 } else { 0.0 });
        self.ready = out.is_some();
        out
    }
}

close_based!(RateOfChange);
