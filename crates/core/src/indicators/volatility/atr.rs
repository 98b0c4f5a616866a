//! Average true range.

use crate::indicators::util::{check_period, true_range};
use crate::indicators::{Indicator, Next, bar_based};
use crate::{Bar, CoreError};

/// Wilder's average true range, as TA-Lib's `TA_ATR`.
///
/// # Formula
///
/// `TR_t = max(high_t − low_t, |close_{t−1} − high_t|, |close_{t−1} − low_t|)`
/// (from the second bar). The first ATR, at bar `period`, is the mean of
/// `TR_1 … TR_period`; then `ATR_t = (ATR_{t−1} · (period − 1) + TR_t) / period`,
/// evaluated as TA-Lib 0.8 does: `β = (period − 1)/period`, `α = 1 − β`,
/// `ATR_t = fma(β, ATR_{t−1}, α · TR_t)` (bit-identical to `TA_ATR`).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 14). Period 1 is the true range itself.
///
/// Warm-up: the first value is at index `period`.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::AverageTrueRange;
///
/// let bar = |h: f64, l: f64, c: f64| Bar { time: 0, open: c, high: h, low: l, close: c, volume: 0.0 };
/// let bars = [bar(11.0, 9.0, 10.0), bar(12.0, 10.0, 11.0), bar(15.0, 12.0, 14.0)];
/// let atr = AverageTrueRange::new(2)?.over(&bars)?;
/// assert_eq!(atr, vec![None, None, Some(3.0)]); // mean of TR 2 and 4
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "ATR")]
#[derive(Debug, Clone)]
pub struct AverageTrueRange {
    period: usize,
    weights: WilderWeights,
    count: usize,
    prev_close: f64,
    sum: f64,
    value: f64,
}

/// Wilder smoothing `v = (v · (n − 1) + x) / n` in TA-Lib 0.8's two-coefficient
/// form: `β = (n − 1)/n`, `α = 1 − β`, `v = fma(β, v, α · x)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WilderWeights {
    alpha: f64,
    beta: f64,
}

impl WilderWeights {
    pub(crate) fn new(period: usize) -> Self {
        let beta = (period.max(1) - 1) as f64 / period.max(1) as f64;
        Self {
            alpha: 1.0 - beta,
            beta,
        }
    }

    #[inline]
    pub(crate) fn step(self, prev: f64, x: f64) -> f64 {
        self.beta.mul_add(prev, self.alpha * x)
    }
}

impl AverageTrueRange {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 14;

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
            period,
            weights: WilderWeights::new(period),
            count: 0,
            prev_close: 0.0,
            sum: 0.0,
            value: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for AverageTrueRange {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

bar_based!(AverageTrueRange, crate::indicators::run_bars);

impl Indicator for AverageTrueRange {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.period
    }
}

impl Next<&Bar> for AverageTrueRange {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let idx = self.count;
        self.count += 1;
        if idx == 0 {
            self.prev_close = bar.close;
            return None;
        }
        let tr = true_range(bar.high, bar.low, self.prev_close);
        self.prev_close = bar.close;
        if idx > self.period {
            self.value = self.weights.step(self.value, tr);
            return Some(self.value);
        }
        self.sum += tr;
        if idx == self.period {
            self.value = self.sum / self.period as f64;
            Some(self.value)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_one_is_true_range() {
        let bar = |h: f64, l: f64, c: f64| Bar {
            time: 0,
            open: c,
            high: h,
            low: l,
            close: c,
            volume: 0.0,
        };
        let bars = [bar(11.0, 9.0, 10.0), bar(12.0, 10.0, 11.0), bar(15.0, 12.0, 14.0)];
        let out = AverageTrueRange::new(1).unwrap().over(&bars).unwrap();
        assert_eq!(out, vec![None, Some(2.0), Some(4.0)]);
        assert!(AverageTrueRange::new(0).is_err());
    }
}
