//! Triangular moving average.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Triangular moving average, as TA-Lib's `TA_TRIMA`: a moving average with
/// triangular weights (`1, 2, …, peak, …, 2, 1`).
///
/// # Formula
///
/// `Σ w_i · x_{t−i} / Σ w_i` with weights rising by 1 to the middle of the
/// window and falling back: for an odd `period` `1, …, h+1, …, 1`
/// (`Σw = (h+1)²`), for an even one `1, …, h, h, …, 1` (`Σw = h(h+1)`),
/// `h = ⌊period/2⌋` — an SMA of an SMA.
///
/// Evaluation: TA-Lib's running numerator, step for step (the partial sums
/// of the older and newer halves are moved by one bar, then the numerator
/// is updated from them), so the values are bit-identical to TA-Lib's,
/// including the rounding drift this recurrence accumulates on long series
/// (about 1e-7 relative after 24 000 bars for an odd period; it shows
/// through APO/PPO with `matype = 5`).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30; 1 performs no smoothing).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::TriangularMovingAverage;
///
/// // Weights 1, 2, 1.
/// let out = TriangularMovingAverage::new(3)?.over_values(&[4.0, 8.0, 0.0, 4.0])?;
/// assert_eq!(out, vec![None, None, Some(5.0), Some(3.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "TRIMA")]
#[derive(Debug, Clone)]
pub struct TriangularMovingAverage {
    period: usize,
    factor: f64,
    /// The last `period + 1` inputs, the current one included.
    window: Window,
    numerator: f64,
    sub: f64,
    add: f64,
    ready: bool,
}

impl TriangularMovingAverage {
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
        let h = period >> 1;
        let weight = if period % 2 == 1 {
            (h + 1) * (h + 1)
        } else {
            h * (h + 1)
        };
        Self {
            period,
            factor: 1.0 / weight.max(1) as f64,
            window: Window::new(period + 1),
            numerator: 0.0,
            sub: 0.0,
            add: 0.0,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    fn odd(&self) -> bool {
        self.period % 2 == 1
    }

    /// Index in the window (oldest first) of the last value of the older half.
    fn middle(&self) -> usize {
        let h = self.period >> 1;
        if self.odd() { h } else { h.saturating_sub(1) }
    }
}

impl Default for TriangularMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for TriangularMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for TriangularMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        let p = self.period;
        let seen = self.window.len();
        self.window.push(x);
        let at = |k: usize| self.window.get(k).unwrap_or(0.0);
        if seen + 1 < p {
            return None;
        }
        if seen + 1 == p {
            // The first window, x_0 ..= x_{p−1}: both halves summed outwards.
            let middle = self.middle();
            let (mut numerator, mut sub, mut add) = (0.0, 0.0, 0.0);
            for k in (0..=middle).rev() {
                sub += at(k);
                numerator += sub;
            }
            for k in middle + 1..p {
                add += at(k);
                numerator += add;
            }
            (self.numerator, self.sub, self.add) = (numerator, sub, add);
            self.ready = true;
            return Some(numerator * self.factor);
        }
        // Window x_{t−p} ..= x_t: the leaving value, the one crossing the middle, the new one.
        let leaving = at(0);
        let crossing = at(self.middle() + 1);
        self.numerator -= self.sub;
        self.sub -= leaving;
        self.sub += crossing;
        if self.odd() {
            self.numerator += self.add;
            self.add -= crossing;
        } else {
            self.add -= crossing;
            self.numerator += self.add;
        }
        self.add += x;
        self.numerator += x;
        Some(self.numerator * self.factor)
    }
}

close_based!(TriangularMovingAverage);
