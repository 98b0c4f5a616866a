//! Chande momentum oscillator.

use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, close_based};

/// Chande momentum oscillator, as TA-Lib's `TA_CMO`: the RSI's smoothed gains
/// and losses, set against each other on a −100 ..= 100 scale.
///
/// # Formula
///
/// With `Δ_t = x_t − x_{t−1}`, the first average gain and loss are the means
/// of the positive and negative changes over the first `period` changes;
/// afterwards Wilder smoothing `avg = (avg · (period − 1) + v) / period`
/// (TA-Lib's CMO shares the RSI's smoothing).
/// `CMO = 100 · (gain − loss) / (gain + loss)`, 0 when both are 0.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period`. TA-Lib flags CMO as
/// having an unstable period; with its default of 0 the first value is the
/// seed above, as here.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::ChandeMomentumOscillator;
///
/// let out = ChandeMomentumOscillator::new(2)?.over_values(&[1.0, 2.0, 1.5])?;
/// assert_eq!(out[1], None);
/// assert!((out[2].unwrap() - 100.0 * 0.25 / 0.75).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "CMO")]
#[derive(Debug, Clone)]
pub struct ChandeMomentumOscillator {
    period: usize,
    count: usize,
    prev: f64,
    gain: f64,
    loss: f64,
}

impl ChandeMomentumOscillator {
    /// Default period (TA-Lib's).
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

    fn value(gain: f64, loss: f64) -> f64 {
        let sum = gain + loss;
        if sum != 0.0 { 100.0 * ((gain - loss) / sum) } else { 0.0 }
    }
}

impl Default for ChandeMomentumOscillator {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for ChandeMomentumOscillator {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.period
    }
}

impl Next<f64> for ChandeMomentumOscillator {
    fn next(&mut self, x: f64) -> Option<f64> {
        let idx = self.count;
        if idx <= self.period {
            self.count += 1;
        }
        let diff = x - self.prev;
        self.prev = x;
        if idx == 0 {
            return None;
        }
        let (g, l) = if diff > 0.0 { (diff, 0.0) } else { (0.0, -diff) };
        let n = self.period as f64;
        if idx <= self.period {
            self.gain += g;
            self.loss += l;
            if idx < self.period {
                return None;
            }
            self.gain /= n;
            self.loss /= n;
        } else {
            self.gain = (self.gain * (n - 1.0) + g) / n;
            self.loss = (self.loss * (n - 1.0) + l) / n;
        }
        Some(Self::value(self.gain, self.loss))
    }
}

close_based!(ChandeMomentumOscillator);
