//! Double and triple exponential moving averages.

use super::ExponentialMovingAverage;
use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, close_based};

/// Double exponential moving average, as TA-Lib's `TA_DEMA`:
/// `2 · EMA(x) − EMA(EMA(x))`.
///
/// # Formula
///
/// `e1 = EMA_period(x)`, `e2 = EMA_period(e1)`, each seeded TA-Lib's way
/// with the SMA of its first `period` inputs ([`ExponentialMovingAverage`]);
/// `DEMA = 2 · e1 − e2`.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30; 1 performs no smoothing).
///
/// Warm-up: the first value is at index `2 · (period − 1)` (58).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::DoubleExponentialMovingAverage;
///
/// let out = DoubleExponentialMovingAverage::new(2)?.over_values(&[1.0, 2.0, 3.0, 4.0])?;
/// assert_eq!(out[1], None);
/// assert!((out[2].unwrap() - 3.0).abs() < 1e-12); // no lag on a straight line
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "DEMA")]
#[derive(Debug, Clone)]
pub struct DoubleExponentialMovingAverage {
    e1: ExponentialMovingAverage,
    e2: ExponentialMovingAverage,
    ready: bool,
}

impl DoubleExponentialMovingAverage {
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

    pub(crate) fn unchecked(period: usize) -> Self {
        Self {
            e1: ExponentialMovingAverage::unchecked(period),
            e2: ExponentialMovingAverage::unchecked(period),
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.e1.period()
    }
}

impl Default for DoubleExponentialMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for DoubleExponentialMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.e1.reset();
        self.e2.reset();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for DoubleExponentialMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        let e1 = self.e1.next(x)?;
        let e2 = self.e2.next(e1)?;
        self.ready = true;
        Some(2.0 * e1 - e2)
    }
}

close_based!(DoubleExponentialMovingAverage);

/// Triple exponential moving average, as TA-Lib's `TA_TEMA`:
/// `3 · e1 − 3 · e2 + e3`.
///
/// # Formula
///
/// `e1 = EMA_period(x)`, `e2 = EMA_period(e1)`, `e3 = EMA_period(e2)`, each
/// seeded with the SMA of its first `period` inputs; `TEMA = 3·e1 − 3·e2 + e3`.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30; 1 performs no smoothing).
///
/// Warm-up: the first value is at index `3 · (period − 1)` (87).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::TripleExponentialMovingAverage;
///
/// let xs: Vec<f64> = (0..8).map(f64::from).collect();
/// let out = TripleExponentialMovingAverage::new(2)?.over_values(&xs)?;
/// assert_eq!(out[2], None);
/// assert!((out[3].unwrap() - 3.0).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "TEMA")]
#[derive(Debug, Clone)]
pub struct TripleExponentialMovingAverage {
    e1: ExponentialMovingAverage,
    e2: ExponentialMovingAverage,
    e3: ExponentialMovingAverage,
    ready: bool,
}

impl TripleExponentialMovingAverage {
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

    pub(crate) fn unchecked(period: usize) -> Self {
        Self {
            e1: ExponentialMovingAverage::unchecked(period),
            e2: ExponentialMovingAverage::unchecked(period),
            e3: ExponentialMovingAverage::unchecked(period),
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.e1.period()
    }
}

impl Default for TripleExponentialMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for TripleExponentialMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.e1.reset();
        self.e2.reset();
        self.e3.reset();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for TripleExponentialMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        let e1 = self.e1.next(x)?;
        let e2 = self.e2.next(e1)?;
        let e3 = self.e3.next(e2)?;
        self.ready = true;
        Some(3.0 * e1 - 3.0 * e2 + e3)
    }
}

close_based!(TripleExponentialMovingAverage);
