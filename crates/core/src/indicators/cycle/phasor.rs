//! Hilbert transform, phasor components.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::cycle::hilbert::{HilbertCore, SHORT_START};
use crate::indicators::{Indicator, Next, run_bars, run_values};
use crate::{Bar, CoreError};

/// First index with an output (TA-Lib's lookback, unstable period 0).
const LOOKBACK: usize = 32;

/// One HT_PHASOR step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HilbertPhasorOutput {
    /// In-phase component `I1`.
    pub inphase: f64,
    /// Quadrature component `Q1`.
    pub quadrature: f64,
}

/// Batch HT_PHASOR: one value per bar and component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HilbertPhasorSeries {
    /// In-phase component.
    pub inphase: Vec<Option<f64>>,
    /// Quadrature component.
    pub quadrature: Vec<Option<f64>>,
}

/// Phasor components, as TA-Lib's `TA_HT_PHASOR`: the in-phase and
/// quadrature components of the detrended, smoothed price.
///
/// # Formula
///
/// The Hilbert transform of
/// [`HilbertDominantCyclePeriod`](crate::indicators::HilbertDominantCyclePeriod)
/// (4-bar WMA smoother, odd/even-bar transform from bar 12): `inphase` is
/// `I1`, the detrender of three bars of the same parity back, and
/// `quadrature` is `Q1`, the Hilbert transform of this bar's detrender, both
/// scaled by `0.075 · period₋₁ + 0.54`.
///
/// # Parameters
///
/// None.
///
/// Warm-up: the first values are at index 32 (TA-Lib's lookback at its
/// default unstable period 0).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::HilbertPhasor;
///
/// let closes: Vec<f64> = (0..80).map(|i| 100.0 + (i as f64 * 0.3).sin()).collect();
/// let out = HilbertPhasor::new().over_values(&closes)?;
/// assert!(out.inphase[31].is_none() && out.quadrature[32].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "HT_PHASOR")]
#[derive(Debug, Clone)]
pub struct HilbertPhasor {
    core: HilbertCore,
}

impl HilbertPhasor {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self {
            core: HilbertCore::new(SHORT_START),
        }
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<HilbertPhasorSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<HilbertPhasorSeries, CoreError> {
        Ok(Self::split(&run_values(self, values)?))
    }

    fn split(outs: &[Option<HilbertPhasorOutput>]) -> HilbertPhasorSeries {
        HilbertPhasorSeries {
            inphase: outs.iter().map(|o| o.map(|p| p.inphase)).collect(),
            quadrature: outs.iter().map(|o| o.map(|p| p.quadrature)).collect(),
        }
    }
}

impl Default for HilbertPhasor {
    fn default() -> Self {
        Self::new()
    }
}

impl Indicator for HilbertPhasor {
    type Output = HilbertPhasorOutput;

    fn reset(&mut self) {
        self.core.reset();
    }

    fn is_ready(&self) -> bool {
        self.core.count() > LOOKBACK
    }
}

impl Next<f64> for HilbertPhasor {
    #[inline]
    fn next(&mut self, x: f64) -> Option<HilbertPhasorOutput> {
        let step = self.core.next(x)?;
        (step.today >= LOOKBACK).then_some(HilbertPhasorOutput {
            inphase: step.i1,
            quadrature: step.q1,
        })
    }
}

impl Next<&Bar> for HilbertPhasor {
    fn next(&mut self, bar: &Bar) -> Option<HilbertPhasorOutput> {
        Next::<f64>::next(self, bar.close)
    }
}
