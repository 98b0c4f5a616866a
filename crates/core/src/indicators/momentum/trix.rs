//! TRIX.

use crate::CoreError;
use crate::indicators::ExponentialMovingAverage;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, close_based};

/// TRIX, as TA-Lib's `TA_TRIX`: the one-bar rate of change (percent) of a
/// triple-smoothed EMA.
///
/// # Formula
///
/// `e3 = EMA(EMA(EMA(x)))`, each EMA seeded with the SMA of its first
/// `period` inputs; `TRIX = 100 · (e3_t / e3_{t−1} − 1)` (0 when `e3_{t−1}`
/// is 0).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30).
///
/// Warm-up: the first value is at index `3 · (period − 1) + 1` (88).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::Trix;
///
/// let out = Trix::new(1)?.over_values(&[100.0, 101.0])?;
/// assert_eq!(out[0], None);
/// assert!((out[1].unwrap() - 1.0).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "TRIX")]
#[derive(Debug, Clone)]
pub struct Trix {
    e1: ExponentialMovingAverage,
    e2: ExponentialMovingAverage,
    e3: ExponentialMovingAverage,
    prev: Option<f64>,
    ready: bool,
}

impl Trix {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            e1: ExponentialMovingAverage::unchecked(period),
            e2: ExponentialMovingAverage::unchecked(period),
            e3: ExponentialMovingAverage::unchecked(period),
            prev: None,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.e1.period()
    }
}

impl Default for Trix {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for Trix {
    type Output = f64;

    fn reset(&mut self) {
        self.e1.reset();
        self.e2.reset();
        self.e3.reset();
        self.prev = None;
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for Trix {
    fn next(&mut self, x: f64) -> Option<f64> {
        let e1 = self.e1.next(x)?;
        let e2 = self.e2.next(e1)?;
        let e3 = self.e3.next(e2)?;
        let prev = self.prev.replace(e3)?;
        self.ready = true;
        Some(if prev != 0.0 { ((e3 / prev) - 1.0) * 100.0 } else { 0.0 })
    }
}

close_based!(Trix);
