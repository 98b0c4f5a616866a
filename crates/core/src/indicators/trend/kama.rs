//! Kaufman adaptive moving average.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Kaufman adaptive moving average, as TA-Lib's `TA_KAMA`: an EMA whose
/// factor follows the efficiency ratio of the last `period` changes.
///
/// # Formula
///
/// `ER = |x_t − x_{t−period}| / Σ|x_i − x_{i−1}|` over the last `period`
/// changes (1 when the sum is not above the signed change `x_t − x_{t−period}`
/// or is within 1e-8 of 0, TA-Lib's tests); `sc = (ER · (2/3 − 2/31) + 2/31)²`;
/// `KAMA_t = (x_t − KAMA_{t−1}) · sc + KAMA_{t−1}`, starting from
/// `KAMA_{period−1} = x_{period−1}`. The sum of changes is kept as TA-Lib
/// keeps it (the change leaving the window subtracted, then the new one added).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30; 1 performs no smoothing).
///
/// Warm-up: the first value is at index `period` (0 for a period of 1).
/// TA-Lib flags KAMA as having an unstable period; with its default of 0 the
/// values are these.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::KaufmanAdaptiveMovingAverage;
///
/// // A straight line is fully efficient: sc = (2/3)², from x₁ = 1.
/// let out = KaufmanAdaptiveMovingAverage::new(2)?.over_values(&[0.0, 1.0, 2.0])?;
/// assert_eq!(out[1], None);
/// assert!((out[2].unwrap() - (1.0 + 4.0 / 9.0)).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "KAMA")]
#[derive(Debug, Clone)]
pub struct KaufmanAdaptiveMovingAverage {
    period: usize,
    /// The last `period + 1` inputs.
    window: Window,
    sum: f64,
    kama: f64,
    ready: bool,
}

const CONST_MAX: f64 = 2.0 / (30.0 + 1.0);

impl KaufmanAdaptiveMovingAverage {
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
            period,
            window: Window::new(period + 1),
            sum: 0.0,
            kama: 0.0,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for KaufmanAdaptiveMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for KaufmanAdaptiveMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for KaufmanAdaptiveMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        if self.period == 1 {
            self.ready = true;
            return Some(x);
        }
        let was_full = self.window.is_full();
        // The window before `x`: oldest `x_{t−period−1}`, then `x_{t−period}`, ..., `x_{t−1}`.
        let (leaving, anchor) = {
            let mut held = self.window.iter();
            (held.next(), held.next())
        };
        let prev = self.window.iter().last();
        let count = self.window.len();
        self.window.push(x);
        if count < self.period {
            if let Some(prev) = prev {
                self.sum += (prev - x).abs();
            }
            return None;
        }
        let prev = prev.unwrap_or(x);
        let start = if was_full {
            // Steady state: drop the change leaving the window, add the new one.
            let (Some(leaving), Some(anchor)) = (leaving, anchor) else {
                return None;
            };
            self.sum -= (leaving - anchor).abs();
            self.sum += (x - prev).abs();
            anchor
        } else {
            // Index `period`: the seed sum gets its last change; KAMA starts at x_{period−1}.
            self.sum += (prev - x).abs();
            self.kama = prev;
            leaving.unwrap_or(x)
        };
        let change = x - start;
        let er = if self.sum <= change || (-1e-8 < self.sum && self.sum < 1e-8) {
            1.0
        } else {
            (change / self.sum).abs()
        };
        let sc = er * (2.0 / (2.0 + 1.0) - CONST_MAX) + CONST_MAX;
        let sc = sc * sc;
        self.kama = (x - self.kama) * sc + self.kama;
        self.ready = true;
        Some(self.kama)
    }
}

close_based!(KaufmanAdaptiveMovingAverage);
