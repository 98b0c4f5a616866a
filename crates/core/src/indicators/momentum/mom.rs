//! Momentum.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Momentum: the change over `period` bars, as TA-Lib's `TA_MOM`.
///
/// # Formula
///
/// `MOM_t = x_t − x_{t−period}`.
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
/// use tradeterm_core::indicators::Momentum;
///
/// let out = Momentum::new(2)?.over_values(&[1.0, 4.0, 2.0, 8.0])?;
/// assert_eq!(out, vec![None, None, Some(1.0), Some(4.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MOM")]
#[derive(Debug, Clone)]
pub struct Momentum {
    period: usize,
    window: Window,
    ready: bool,
}

impl Momentum {
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

impl Default for Momentum {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD),
            ready: false,
        }
    }
}

impl Indicator for Momentum {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for Momentum {
    fn next(&mut self, x: f64) -> Option<f64> {
        let out = self.window.push(x).map(|old| x - old);
        self.ready = out.is_some();
        out
    }
}

close_based!(Momentum);
