//! Hilbert transform, dominant cycle phase.

use crate::indicators::cycle::hilbert::{DcPhase, HilbertCore, LONG_START};
use crate::indicators::{Indicator, Next, close_based};

/// First index with an output (TA-Lib's lookback, unstable period 0).
const LOOKBACK: usize = 63;

/// Dominant cycle phase, as TA-Lib's `TA_HT_DCPHASE`: the phase of the
/// dominant cycle, in degrees (−45 ..= 315).
///
/// # Formula
///
/// The smoothed price and the smoothed dominant period `p` are those of
/// [`HilbertDominantCyclePeriod`](crate::indicators::HilbertDominantCyclePeriod),
/// with the Hilbert transform started at bar 37 (TA-Lib's warm-up of the
/// 63-bar functions). With `n = ⌊p + 0.5⌋` and `s₀, s₋₁, …` the last
/// smoothed prices, `re = Σᵢ sin(2πi/n)·s₋ᵢ`, `im = Σᵢ cos(2πi/n)·s₋ᵢ`
/// (`i < n`); `φ = atan(re/im)°` when `im ≠ 0` (otherwise the previous
/// phase ∓ 90 by the sign of `re`), then `φ += 90 + 360/p`, `+180` when
/// `im < 0`, `−360` when above 315.
///
/// # Parameters
///
/// None.
///
/// Warm-up: the first value is at index 63 (TA-Lib's lookback at its default
/// unstable period 0).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::HilbertDominantCyclePhase;
///
/// let closes: Vec<f64> = (0..100).map(|i| 100.0 + (i as f64 * 0.3).sin()).collect();
/// let out = HilbertDominantCyclePhase::new().over_values(&closes)?;
/// assert!(out[62].is_none() && out[63].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "HT_DCPHASE")]
#[derive(Debug, Clone)]
pub struct HilbertDominantCyclePhase {
    core: HilbertCore,
    phase: DcPhase,
}

impl HilbertDominantCyclePhase {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self {
            core: HilbertCore::new(LONG_START),
            phase: DcPhase::default(),
        }
    }
}

impl Default for HilbertDominantCyclePhase {
    fn default() -> Self {
        Self::new()
    }
}

impl Indicator for HilbertDominantCyclePhase {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::new();
    }

    fn is_ready(&self) -> bool {
        self.core.count() > LOOKBACK
    }
}

impl Next<f64> for HilbertDominantCyclePhase {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        let step = self.core.next(x)?;
        self.phase.store(step.smoothed);
        let phase = self.phase.update(step.smooth_period);
        self.phase.advance();
        (step.today >= LOOKBACK).then_some(phase)
    }
}

close_based!(HilbertDominantCyclePhase);
