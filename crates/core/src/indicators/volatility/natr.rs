//! Normalized average true range.

use super::AverageTrueRange;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Normalized average true range, as TA-Lib's `TA_NATR`: the ATR as a
/// percentage of the close.
///
/// # Formula
///
/// `NATR = 100 · ATR_period / close` (0 when the close is 0), with the ATR of
/// [`AverageTrueRange`] (Wilder smoothing seeded with the mean of the first
/// `period` true ranges).
///
/// With `period = 1`, TA-Lib 0.8 returns the plain true range (`TA_NATR`
/// hands a period of 1 to `TA_TRANGE`, not normalized); so does this type,
/// to stay equal to it.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period` (TA-Lib's unstable period
/// is 0 by default).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::NormalizedAverageTrueRange;
///
/// let natr = NormalizedAverageTrueRange::new(2)?;
/// let out = natr.over_columns(&[11.0, 12.0, 12.0], &[9.0, 10.0, 10.0], &[10.0, 10.0, 10.0])?;
/// assert_eq!(out[2], 20.0); // ATR 2 on a close of 10
/// // TA-Lib's period 1 is the true range itself.
/// let tr = NormalizedAverageTrueRange::new(1)?.over_columns(&[11.0, 12.0], &[9.0, 10.0], &[10.0, 10.0])?;
/// assert_eq!(tr[1], 2.0);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "NATR")]
#[derive(Debug, Clone, Default)]
pub struct NormalizedAverageTrueRange {
    atr: AverageTrueRange,
}

impl NormalizedAverageTrueRange {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self {
            atr: AverageTrueRange::new(period)?,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.atr.period()
    }
}

impl Indicator for NormalizedAverageTrueRange {
    type Output = f64;

    fn reset(&mut self) {
        self.atr.reset();
    }

    fn is_ready(&self) -> bool {
        self.atr.is_ready()
    }
}

impl Next<&Bar> for NormalizedAverageTrueRange {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let atr = self.atr.next(bar)?;
        if self.atr.period() == 1 {
            return Some(atr);
        }
        Some(if bar.close != 0.0 {
            (atr / bar.close) * 100.0
        } else {
            0.0
        })
    }
}

bar_based!(NormalizedAverageTrueRange, run_bars);
columns_based!(NormalizedAverageTrueRange, high, low, close);
