//! Relative strength index.

use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, close_based};

/// Wilder's relative strength index, as TA-Lib's `TA_RSI`.
///
/// # Formula
///
/// With `Δ_t = x_t − x_{t−1}`, the first average gain and loss are the plain
/// means of the positive and negative changes over the first `period`
/// changes; afterwards Wilder smoothing `avg = (avg · (period − 1) + v) · (1/period)`
/// (TA-Lib 0.8 multiplies by the hoisted reciprocal; results are bit-identical to it).
/// `RSI = 100 · gain / (gain + loss)`, and 0 when both are 0 (TA-Lib's
/// convention for a flat window).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::RelativeStrengthIndex;
///
/// let rsi = RelativeStrengthIndex::new(2)?;
/// let out = rsi.over_values(&[1.0, 2.0, 1.5, 3.0])?;
/// assert_eq!(out[1], None);
/// assert!((out[2].unwrap() - 100.0 * 0.5 / 0.75).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "RSI")]
#[derive(Debug, Clone)]
pub struct RelativeStrengthIndex {
    period: usize,
    inv_period: f64,
    count: usize,
    prev: f64,
    gain: f64,
    loss: f64,
}

impl RelativeStrengthIndex {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            inv_period: 1.0 / period as f64,
            count: 0,
            prev: 0.0,
            gain: 0.0,
            loss: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    #[inline]
    fn value(gain: f64, loss: f64) -> f64 {
        let sum = gain + loss;
        if sum > 0.0 { 100.0 * (gain / sum) } else { 0.0 }
    }
}

impl Default for RelativeStrengthIndex {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for RelativeStrengthIndex {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.period
    }
}

impl Next<f64> for RelativeStrengthIndex {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        let idx = self.count;
        self.count += 1;
        if idx == 0 {
            self.prev = x;
            return None;
        }
        let diff = x - self.prev;
        self.prev = x;
        // TA-Lib 0.8's step: gain and loss split without a branch, scaled by
        // a hoisted 1/period (no divide on the loop-carried chain).
        let gain = if diff > 0.0 { diff } else { 0.0 };
        let loss = gain - diff;
        if idx > self.period {
            let m = (self.period - 1) as f64;
            self.loss = (self.loss * m + loss) * self.inv_period;
            self.gain = (self.gain * m + gain) * self.inv_period;
            return Some(Self::value(self.gain, self.loss));
        }
        self.gain += gain;
        self.loss += loss;
        if idx == self.period {
            self.loss *= self.inv_period;
            self.gain *= self.inv_period;
            Some(Self::value(self.gain, self.loss))
        } else {
            None
        }
    }
}

close_based!(RelativeStrengthIndex);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_series_is_zero() {
        let rsi = RelativeStrengthIndex::new(3).unwrap();
        let out = rsi.over_values(&[5.0; 6]).unwrap();
        assert_eq!(out[3], Some(0.0));
        assert!(RelativeStrengthIndex::new(1).is_err());
    }
}
