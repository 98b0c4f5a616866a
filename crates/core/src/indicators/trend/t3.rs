//! Tillson's T3 moving average.

use crate::CoreError;
use crate::indicators::util::{check_period, check_real};
use crate::indicators::{Indicator, Next, close_based};

/// One EMA stage of T3, TA-Lib's way: seeded with the mean of its first
/// `period` inputs, then `e = k · x + (1 − k) · e`.
#[derive(Debug, Clone)]
struct Stage {
    period: usize,
    count: usize,
    sum: f64,
    value: f64,
}

impl Stage {
    fn new(period: usize) -> Self {
        Self {
            period,
            count: 0,
            sum: 0.0,
            value: 0.0,
        }
    }

    fn push(&mut self, x: f64, k: f64, one_minus_k: f64) -> Option<f64> {
        if self.count < self.period {
            self.count += 1;
            self.sum += x;
            if self.count < self.period {
                return None;
            }
            self.value = self.sum / self.period as f64;
            return Some(self.value);
        }
        self.value = k * x + one_minus_k * self.value;
        Some(self.value)
    }
}

/// Tillson's T3, as TA-Lib's `TA_T3`: six cascaded EMAs combined with the
/// volume factor's binomial weights.
///
/// # Formula
///
/// `k = 2 / (period + 1)`; `e1 = EMA(x)`, `e2 = EMA(e1)`, …, `e6 = EMA(e5)`,
/// each seeded with the mean of its first `period` inputs (TA-Lib's
/// cascade); with `a = vfactor`: `c1 = −a³`, `c2 = 3a² + 3a³`,
/// `c3 = −6a² − 3a − 3a³`, `c4 = 1 + 3a + a³ + 3a²`;
/// `T3 = c1·e6 + c2·e5 + c3·e4 + c4·e3`.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 5; 1 performs no smoothing).
/// - `vfactor`: 0 ..= 1 (default 0.7).
///
/// Warm-up: the first value is at index `6 · (period − 1)` (24). TA-Lib
/// flags T3 as having an unstable period; its default is 0, as here.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::T3MovingAverage;
///
/// let out = T3MovingAverage::new(2, 0.7)?.over_values(&[5.0; 8])?;
/// assert_eq!(out[5], None);
/// assert!((out[6].unwrap() - 5.0).abs() < 1e-12); // the weights sum to 1
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "T3")]
#[derive(Debug, Clone)]
pub struct T3MovingAverage {
    period: usize,
    vfactor: f64,
    k: f64,
    c: [f64; 4],
    stages: [Stage; 6],
    ready: bool,
}

impl T3MovingAverage {
    /// Default `(period, vfactor)` (TA-Lib's).
    pub const DEFAULTS: (usize, f64) = (5, 0.7);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000, or
    /// `vfactor` is outside 0 ..= 1.
    pub fn new(period: usize, vfactor: f64) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        let vfactor = check_real("vfactor", vfactor, 0.0, 1.0)?;
        Ok(Self::unchecked(period, vfactor))
    }

    pub(crate) fn unchecked(period: usize, vfactor: f64) -> Self {
        let a2 = vfactor * vfactor;
        let c1 = -(a2 * vfactor);
        let c2 = 3.0 * (a2 - c1);
        let c3 = -6.0 * a2 - 3.0 * (vfactor - c1);
        let c4 = 1.0 + 3.0 * vfactor - c1 + 3.0 * a2;
        Self {
            period,
            vfactor,
            k: 2.0 / (period as f64 + 1.0),
            c: [c1, c2, c3, c4],
            stages: std::array::from_fn(|_| Stage::new(period)),
            ready: false,
        }
    }

    /// `(period, vfactor)`.
    pub fn params(&self) -> (usize, f64) {
        (self.period, self.vfactor)
    }
}

impl Default for T3MovingAverage {
    fn default() -> Self {
        let (p, v) = Self::DEFAULTS;
        Self::unchecked(p, v)
    }
}

impl Indicator for T3MovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period, self.vfactor);
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for T3MovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        if self.period == 1 {
            self.ready = true;
            return Some(x);
        }
        let (k, one_minus_k) = (self.k, 1.0 - self.k);
        let mut v = x;
        let mut e = [0.0; 6];
        for (stage, slot) in self.stages.iter_mut().zip(e.iter_mut()) {
            v = stage.push(v, k, one_minus_k)?;
            *slot = v;
        }
        self.ready = true;
        let [c1, c2, c3, c4] = self.c;
        Some(c1 * e[5] + c2 * e[4] + c3 * e[3] + c4 * e[2])
    }
}

close_based!(T3MovingAverage);
