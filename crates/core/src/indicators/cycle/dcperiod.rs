//! Hilbert transform, dominant cycle period.

use crate::indicators::cycle::hilbert::{HilbertCore, SHORT_START};
use crate::indicators::{Indicator, Next, close_based};

/// First index with an output (TA-Lib's lookback, unstable period 0).
const LOOKBACK: usize = 32;

/// Dominant cycle period, as TA-Lib's `TA_HT_DCPERIOD`: the period of the
/// dominant cycle measured by Ehlers' homodyne discriminator, in bars.
///
/// # Formula
///
/// The closes are smoothed by a 4-bar WMA (`(4x₀ + 3x₋₁ + 2x₋₂ + x₋₃)/10`);
/// from bar 12 TA-Lib's odd/even-bar Hilbert transform (coefficients 0.0962
/// and 0.5769, scaled by `0.075 · period₋₁ + 0.54`) gives the detrender,
/// `I1`, `Q1`, `jI`, `jQ`, then `I2 = 0.2(I1 − jQ) + 0.8 I2₋₁`,
/// `Q2 = 0.2(Q1 + jI) + 0.8 Q2₋₁`, the homodyne `Re = 0.2(I2·I2₋₁ + Q2·Q2₋₁) + 0.8 Re₋₁`,
/// `Im = 0.2(I2·Q2₋₁ − Q2·I2₋₁) + 0.8 Im₋₁` and `period = 360 / atan(Im/Re)°`,
/// clamped to 0.67–1.5 times the previous one and to 6–50, then
/// `period = 0.2 · period + 0.8 · period₋₁`. The output is
/// `smooth = 0.33 · period + 0.67 · smooth₋₁`.
///
/// # Parameters
///
/// None.
///
/// Warm-up: the first value is at index 32 (TA-Lib's lookback at its default
/// unstable period 0; the bars before are computed, not output).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::HilbertDominantCyclePeriod;
///
/// let closes: Vec<f64> = (0..80).map(|i| 100.0 + (i as f64 * 0.3).sin()).collect();
/// let out = HilbertDominantCyclePeriod::new().over_values(&closes)?;
/// assert!(out[31].is_none() && out[32].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "HT_DCPERIOD")]
#[derive(Debug, Clone)]
pub struct HilbertDominantCyclePeriod {
    core: HilbertCore,
}

impl HilbertDominantCyclePeriod {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self {
            core: HilbertCore::new(SHORT_START),
        }
    }
}

impl Default for HilbertDominantCyclePeriod {
    fn default() -> Self {
        Self::new()
    }
}

impl Indicator for HilbertDominantCyclePeriod {
    type Output = f64;

    fn reset(&mut self) {
        self.core.reset();
    }

    fn is_ready(&self) -> bool {
        self.core.count() > LOOKBACK
    }
}

impl Next<f64> for HilbertDominantCyclePeriod {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        let step = self.core.next(x)?;
        (step.today >= LOOKBACK).then_some(step.smooth_period)
    }
}

close_based!(HilbertDominantCyclePeriod);
