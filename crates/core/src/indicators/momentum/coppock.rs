//! Coppock curve.

use crate::CoreError;
use crate::indicators::{Indicator, Next, RateOfChange, WeightedMovingAverage, close_based};

/// Coppock curve, as TA-Lib's `TA_COPPOCK`.
///
/// # Formula
///
/// `COPPOCK = WMA(ROC(x, roc1) + ROC(x, roc2), wma)` with TA-Lib's ROC
/// (`100 · (x/x₋ₙ − 1)`, 0 where `x₋ₙ = 0`).
///
/// # Parameters
///
/// - `wma` (default 10), `roc1` (default 11), `roc2` (default 14): each
///   1 ..= 10 000.
///
/// Warm-up: the first value is at index `max(roc1, roc2) + wma − 1`.
#[doc(alias = "COPPOCK")]
#[derive(Debug, Clone)]
pub struct CoppockCurve {
    roc1: RateOfChange,
    roc2: RateOfChange,
    wma: WeightedMovingAverage,
}

impl CoppockCurve {
    /// Default WMA period (TA-Lib's).
    pub const DEFAULT_WMA: usize = 10;
    /// Default first ROC period (TA-Lib's).
    pub const DEFAULT_ROC1: usize = 11;
    /// Default second ROC period (TA-Lib's).
    pub const DEFAULT_ROC2: usize = 14;

    /// Builds the curve.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(wma: usize, roc1: usize, roc2: usize) -> Result<Self, CoreError> {
        Ok(Self {
            roc1: RateOfChange::new(roc1)?,
            roc2: RateOfChange::new(roc2)?,
            wma: WeightedMovingAverage::new(wma)?,
        })
    }
}

impl Default for CoppockCurve {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_WMA, Self::DEFAULT_ROC1, Self::DEFAULT_ROC2) {
            Ok(c) => c,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for CoppockCurve {
    type Output = f64;

    fn reset(&mut self) {
        self.roc1.reset();
        self.roc2.reset();
        self.wma.reset();
    }

    fn is_ready(&self) -> bool {
        self.wma.is_ready()
    }
}

impl Next<f64> for CoppockCurve {
    fn next(&mut self, x: f64) -> Option<f64> {
        let a = self.roc1.next(x);
        let b = self.roc2.next(x);
        self.wma.next(a? + b?)
    }
}

close_based!(CoppockCurve);
