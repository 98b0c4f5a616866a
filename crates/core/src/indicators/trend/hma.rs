//! Hull moving average.

use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, WeightedMovingAverage, close_based};

/// Alan Hull's moving average, as TA-Lib's `TA_HMA`.
///
/// # Formula
///
/// `HMA = WMA(2 · WMA(x, ⌊n/2⌋) − WMA(x, n), ⌊√n⌋)`. At periods 2 and 3
/// (`⌊n/2⌋ = ⌊√n⌋ = 1`) this is `2x − WMA(x, n)`; period 1 returns the input.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 20, TA-Lib's).
///
/// Warm-up: the first value is at index `(n − 1) + (⌊√n⌋ − 1)`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::HullMovingAverage;
///
/// // Period 2: 2x − WMA(x, 2).
/// let out = HullMovingAverage::new(2)?.over_values(&[3.0, 6.0])?;
/// assert_eq!(out, vec![None, Some(7.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "HMA")]
#[derive(Debug, Clone)]
pub struct HullMovingAverage {
    period: usize,
    full: WeightedMovingAverage,
    half: WeightedMovingAverage,
    outer: WeightedMovingAverage,
}

impl HullMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 20;

    /// Builds the average.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        let sqrt = ((period as f64).sqrt() as usize).max(1);
        Ok(Self {
            period,
            full: WeightedMovingAverage::new(period)?,
            half: WeightedMovingAverage::new((period / 2).max(1))?,
            outer: WeightedMovingAverage::new(sqrt)?,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for HullMovingAverage {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_PERIOD) {
            Ok(h) => h,
            Err(_) => unreachable!("the default period is valid"),
        }
    }
}

impl Indicator for HullMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.full.reset();
        self.half.reset();
        self.outer.reset();
    }

    fn is_ready(&self) -> bool {
        if self.period <= 3 {
            self.full.is_ready()
        } else {
            self.outer.is_ready()
        }
    }
}

impl Next<f64> for HullMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        let full = self.full.next(x);
        if self.period == 1 {
            return Some(x);
        }
        if self.period <= 3 {
            return full.map(|f| 2.0 * x - f);
        }
        let half = self.half.next(x);
        let (Some(f), Some(h)) = (full, half) else {
            return None;
        };
        self.outer.next(2.0 * h - f)
    }
}

close_based!(HullMovingAverage);
