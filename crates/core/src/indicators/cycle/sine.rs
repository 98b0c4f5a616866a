//! Hilbert transform, sine wave.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::cycle::hilbert::{DcPhase, HilbertCore, LONG_START, rad2deg};
use crate::indicators::{Indicator, Next, run_bars, run_values};
use crate::{Bar, CoreError};

/// First index with an output (TA-Lib's lookback, unstable period 0).
const LOOKBACK: usize = 63;

/// One HT_SINE step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HilbertSineWaveOutput {
    /// `sin(phase)`.
    pub sine: f64,
    /// `sin(phase + 45°)`.
    pub leadsine: f64,
}

/// Batch HT_SINE: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HilbertSineWaveSeries {
    /// Sine.
    pub sine: Vec<Option<f64>>,
    /// Lead sine.
    pub leadsine: Vec<Option<f64>>,
}

/// Sine wave, as TA-Lib's `TA_HT_SINE`: the sine of the dominant cycle
/// phase and of the phase advanced by 45°; their crossings mark cycle turns.
///
/// # Formula
///
/// With `φ` the phase of
/// [`HilbertDominantCyclePhase`](crate::indicators::HilbertDominantCyclePhase):
/// `sine = sin(φ · π/180)`, `leadsine = sin((φ + 45) · π/180)`.
///
/// # Parameters
///
/// None.
///
/// Warm-up: the first values are at index 63 (TA-Lib's lookback at its
/// default unstable period 0).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::HilbertSineWave;
///
/// let closes: Vec<f64> = (0..100).map(|i| 100.0 + (i as f64 * 0.3).sin()).collect();
/// let out = HilbertSineWave::new().over_values(&closes)?;
/// assert!(out.sine[62].is_none() && out.leadsine[63].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "HT_SINE")]
#[derive(Debug, Clone)]
pub struct HilbertSineWave {
    core: HilbertCore,
    phase: DcPhase,
}

impl HilbertSineWave {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self {
            core: HilbertCore::new(LONG_START),
            phase: DcPhase::default(),
        }
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<HilbertSineWaveSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<HilbertSineWaveSeries, CoreError> {
        Ok(Self::split(&run_values(self, values)?))
    }

    fn split(outs: &[Option<HilbertSineWaveOutput>]) -> HilbertSineWaveSeries {
        HilbertSineWaveSeries {
            sine: outs.iter().map(|o| o.map(|s| s.sine)).collect(),
            leadsine: outs.iter().map(|o| o.map(|s| s.leadsine)).collect(),
        }
    }
}

impl Default for HilbertSineWave {
    fn default() -> Self {
        Self::new()
    }
}

impl Indicator for HilbertSineWave {
    type Output = HilbertSineWaveOutput;

    fn reset(&mut self) {
        *self = Self::new();
    }

    fn is_ready(&self) -> bool {
        self.core.count() > LOOKBACK
    }
}

impl Next<f64> for HilbertSineWave {
    #[inline]
    fn next(&mut self, x: f64) -> Option<HilbertSineWaveOutput> {
        let step = self.core.next(x)?;
        self.phase.store(step.smoothed);
        let phase = self.phase.update(step.smooth_period);
        self.phase.advance();
        let deg2rad = 1.0 / rad2deg();
        (step.today >= LOOKBACK).then(|| HilbertSineWaveOutput {
            sine: (phase * deg2rad).sin(),
            leadsine: ((phase + 45.0) * deg2rad).sin(),
        })
    }
}

impl Next<&Bar> for HilbertSineWave {
    fn next(&mut self, bar: &Bar) -> Option<HilbertSineWaveOutput> {
        Next::<f64>::next(self, bar.close)
    }
}
