//! MESA adaptive moving average.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::check_real;
use crate::indicators::{Indicator, Next, run_bars, run_values};
use crate::{Bar, CoreError};

/// One MAMA step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MesaAdaptiveOutput {
    /// MAMA.
    pub mama: f64,
    /// FAMA, the following adaptive moving average.
    pub fama: f64,
}

/// Batch MAMA: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MesaAdaptiveSeries {
    /// MAMA.
    pub mama: Vec<Option<f64>>,
    /// FAMA.
    pub fama: Vec<Option<f64>>,
}

/// One lane (odd or even bars) of a Hilbert transform stage, TA-Lib's
/// `HILBERT_VARIABLES`.
#[derive(Debug, Clone, Copy, Default)]
struct Lane {
    buf: [f64; 3],
    prev: f64,
    prev_input: f64,
}

impl Lane {
    /// TA-Lib's `DO_HILBERT_TRANSFORM`, operation for operation.
    #[inline]
    fn transform(&mut self, idx: usize, input: f64, adjusted: f64) -> f64 {
        const A: f64 = 0.0962;
        const B: f64 = 0.5769;
        let t = A * input;
        let mut out = 0.0 - self.buf[idx];
        self.buf[idx] = t;
        out += t;
        out -= self.prev;
        self.prev = B * self.prev_input;
        out += self.prev;
        self.prev_input = input;
        out * adjusted
    }
}

/// A Hilbert transform stage: one lane for even bars, one for odd bars.
#[derive(Debug, Clone, Copy, Default)]
struct Stage {
    odd: Lane,
    even: Lane,
}

impl Stage {
    fn transform(&mut self, even: bool, idx: usize, input: f64, adjusted: f64) -> f64 {
        if even {
            self.even.transform(idx, input, adjusted)
        } else {
            self.odd.transform(idx, input, adjusted)
        }
    }
}

/// Ehlers' MESA adaptive moving average, as TA-Lib's `TA_MAMA`: an EMA whose
/// factor follows the rate of change of the phase given by a Hilbert
/// transform, with its following average FAMA.
///
/// # Formula
///
/// The price is smoothed by a 4-bar WMA; a Hilbert transform (TA-Lib's
/// odd/even-bar form, coefficients 0.0962 and 0.5769, scaled by
/// `0.075 · period + 0.54`) gives the detrender, `I1`, `Q1`, `jI`, `jQ`,
/// then `I2`, `Q2`, the homodyne `Re`, `Im` and the dominant period
/// (clamped to 0.67–1.5 times the previous one and to 6–50, then smoothed).
/// The phase is `atan(Q1 / I1)` in degrees; `Δφ = max(1, φ_{t−1} − φ_t)`;
/// `α = fastlimit / Δφ` clamped to `[slowlimit, fastlimit]` (`fastlimit`
/// when `Δφ = 1`); `MAMA = α·x + (1 − α)·MAMA`,
/// `FAMA = α/2·MAMA + (1 − α/2)·FAMA`, both starting at 0 on bar 12.
/// Operation for operation TA-Lib's, including the parity of the bar index
/// choosing the lane.
///
/// # Parameters
///
/// - `fastlimit`: 0.01 ..= 0.99 (default 0.5).
/// - `slowlimit`: 0.01 ..= 0.99 (default 0.05).
///
/// Warm-up: both lines start at index 32 (TA-Lib's lookback; its unstable
/// period defaults to 0, the values before it being computed but not
/// output).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::MesaAdaptiveMovingAverage;
///
/// let closes: Vec<f64> = (0..60).map(|i| 100.0 + (i as f64 * 0.3).sin()).collect();
/// let out = MesaAdaptiveMovingAverage::default().over_values(&closes)?;
/// assert!(out.mama[31].is_none() && out.mama[32].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MAMA")]
#[derive(Debug, Clone)]
pub struct MesaAdaptiveMovingAverage {
    fast_limit: f64,
    slow_limit: f64,
    count: usize,
    /// The last three inputs, oldest first.
    last: [f64; 3],
    wma_sub: f64,
    wma_sum: f64,
    trailing: f64,
    hilbert_idx: usize,
    detrender: Stage,
    q1: Stage,
    ji: Stage,
    jq: Stage,
    i1_odd_prev2: f64,
    i1_odd_prev3: f64,
    i1_even_prev2: f64,
    i1_even_prev3: f64,
    prev_q2: f64,
    prev_i2: f64,
    re: f64,
    im: f64,
    period: f64,
    prev_phase: f64,
    mama: f64,
    fama: f64,
}

/// First index with an output (TA-Lib's lookback).
const LOOKBACK: usize = 32;

impl MesaAdaptiveMovingAverage {
    /// Default `(fastlimit, slowlimit)` (TA-Lib's).
    pub const DEFAULTS: (f64, f64) = (0.5, 0.05);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a limit is outside 0.01 ..= 0.99.
    pub fn new(fast_limit: f64, slow_limit: f64) -> Result<Self, CoreError> {
        let fast_limit = check_real("fastlimit", fast_limit, 0.01, 0.99)?;
        let slow_limit = check_real("slowlimit", slow_limit, 0.01, 0.99)?;
        Ok(Self::unchecked(fast_limit, slow_limit))
    }

    pub(crate) fn unchecked(fast_limit: f64, slow_limit: f64) -> Self {
        Self {
            fast_limit,
            slow_limit,
            count: 0,
            last: [0.0; 3],
            wma_sub: 0.0,
            wma_sum: 0.0,
            trailing: 0.0,
            hilbert_idx: 0,
            detrender: Stage::default(),
            q1: Stage::default(),
            ji: Stage::default(),
            jq: Stage::default(),
            i1_odd_prev2: 0.0,
            i1_odd_prev3: 0.0,
            i1_even_prev2: 0.0,
            i1_even_prev3: 0.0,
            prev_q2: 0.0,
            prev_i2: 0.0,
            re: 0.0,
            im: 0.0,
            period: 0.0,
            prev_phase: 0.0,
            mama: 0.0,
            fama: 0.0,
        }
    }

    /// `(fastlimit, slowlimit)`.
    pub fn limits(&self) -> (f64, f64) {
        (self.fast_limit, self.slow_limit)
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<MesaAdaptiveSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<MesaAdaptiveSeries, CoreError> {
        Ok(Self::split(&run_values(self, values)?))
    }

    fn split(outs: &[Option<MesaAdaptiveOutput>]) -> MesaAdaptiveSeries {
        MesaAdaptiveSeries {
            mama: outs.iter().map(|o| o.map(|m| m.mama)).collect(),
            fama: outs.iter().map(|o| o.map(|m| m.fama)).collect(),
        }
    }

    /// The 4-bar WMA price smoother (TA-Lib's `DO_PRICE_WMA`): the smoothed value.
    fn smooth(&mut self, x: f64) -> f64 {
        self.wma_sub += x;
        self.wma_sub -= self.trailing;
        self.wma_sum += x * 4.0;
        self.trailing = self.last[0];
        let smoothed = self.wma_sum * 0.1;
        self.wma_sum -= self.wma_sub;
        smoothed
    }

    fn remember(&mut self, x: f64) {
        self.last = [self.last[1], self.last[2], x];
    }
}

impl Default for MesaAdaptiveMovingAverage {
    fn default() -> Self {
        let (f, s) = Self::DEFAULTS;
        Self::unchecked(f, s)
    }
}

impl Indicator for MesaAdaptiveMovingAverage {
    type Output = MesaAdaptiveOutput;

    fn reset(&mut self) {
        *self = Self::unchecked(self.fast_limit, self.slow_limit);
    }

    fn is_ready(&self) -> bool {
        self.count > LOOKBACK
    }
}

impl Next<f64> for MesaAdaptiveMovingAverage {
    fn next(&mut self, x: f64) -> Option<MesaAdaptiveOutput> {
        let today = self.count;
        self.count = self.count.saturating_add(1);
        match today {
            0 => {
                self.wma_sub = x;
                self.wma_sum = x;
                self.remember(x);
                return None;
            }
            1 | 2 => {
                self.wma_sub += x;
                self.wma_sum += x * (today + 1) as f64;
                self.remember(x);
                return None;
            }
            3..=11 => {
                self.smooth(x);
                self.remember(x);
                return None;
            }
            _ => {}
        }
        let rad2deg = 180.0 / (4.0 * 1.0f64.atan());
        let adjusted = 0.075 * self.period + 0.54;
        let smoothed = self.smooth(x);
        self.remember(x);
        // The parity of the bar index picks the lane (TA-Lib's `today % 2`).
        let even = today.is_multiple_of(2);
        let idx = self.hilbert_idx;
        let detrender = self.detrender.transform(even, idx, smoothed, adjusted);
        let q1 = self.q1.transform(even, idx, detrender, adjusted);
        let i1 = if even { self.i1_even_prev3 } else { self.i1_odd_prev3 };
        let ji = self.ji.transform(even, idx, i1, adjusted);
        let jq = self.jq.transform(even, idx, q1, adjusted);
        if even {
            self.hilbert_idx = (self.hilbert_idx + 1) % 3;
        }
        let q2 = 0.2 * (q1 + ji) + 0.8 * self.prev_q2;
        let i2 = 0.2 * (i1 - jq) + 0.8 * self.prev_i2;
        if even {
            self.i1_odd_prev3 = self.i1_odd_prev2;
            self.i1_odd_prev2 = detrender;
        } else {
            self.i1_even_prev3 = self.i1_even_prev2;
            self.i1_even_prev2 = detrender;
        }
        let phase = if i1 != 0.0 { (q1 / i1).atan() * rad2deg } else { 0.0 };
        let mut delta = self.prev_phase - phase;
        self.prev_phase = phase;
        if delta < 1.0 {
            delta = 1.0;
        }
        let mut alpha = if delta > 1.0 {
            let a = self.fast_limit / delta;
            if a < self.slow_limit { self.slow_limit } else { a }
        } else {
            self.fast_limit
        };
        self.mama = alpha * x + (1.0 - alpha) * self.mama;
        alpha *= 0.5;
        self.fama = alpha * self.mama + (1.0 - alpha) * self.fama;
        let out = MesaAdaptiveOutput {
            mama: self.mama,
            fama: self.fama,
        };
        self.re = 0.2 * (i2 * self.prev_i2 + q2 * self.prev_q2) + 0.8 * self.re;
        self.im = 0.2 * (i2 * self.prev_q2 - q2 * self.prev_i2) + 0.8 * self.im;
        self.prev_q2 = q2;
        self.prev_i2 = i2;
        let previous = self.period;
        if self.im != 0.0 && self.re != 0.0 {
            self.period = 360.0 / ((self.im / self.re).atan() * rad2deg);
        }
        if self.period > 1.5 * previous {
            self.period = 1.5 * previous;
        }
        if self.period < 0.67 * previous {
            self.period = 0.67 * previous;
        }
        self.period = self.period.clamp(6.0, 50.0);
        self.period = 0.2 * self.period + 0.8 * previous;
        (today >= LOOKBACK).then_some(out)
    }
}

impl Next<&Bar> for MesaAdaptiveMovingAverage {
    fn next(&mut self, bar: &Bar) -> Option<MesaAdaptiveOutput> {
        Next::<f64>::next(self, bar.close)
    }
}
