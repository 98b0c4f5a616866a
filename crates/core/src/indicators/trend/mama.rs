//! MESA adaptive moving average.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::cycle::hilbert::{HilbertCore, SHORT_START, rad2deg};
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
    core: HilbertCore,
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
            core: HilbertCore::new(SHORT_START),
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
        self.core.count() > LOOKBACK
    }
}

impl Next<f64> for MesaAdaptiveMovingAverage {
    fn next(&mut self, x: f64) -> Option<MesaAdaptiveOutput> {
        let step = self.core.next(x)?;
        let (i1, q1) = (step.i1, step.q1);
        let phase = if i1 != 0.0 { (q1 / i1).atan() * rad2deg() } else { 0.0 };
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
        (step.today >= LOOKBACK).then_some(MesaAdaptiveOutput {
            mama: self.mama,
            fama: self.fama,
        })
    }
}

impl Next<&Bar> for MesaAdaptiveMovingAverage {
    fn next(&mut self, bar: &Bar) -> Option<MesaAdaptiveOutput> {
        Next::<f64>::next(self, bar.close)
    }
}
