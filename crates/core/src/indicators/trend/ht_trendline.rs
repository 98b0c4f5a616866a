//! Hilbert transform, instantaneous trendline.

use crate::indicators::cycle::hilbert::{HilbertCore, LONG_START, Trendline};
use crate::indicators::{Indicator, Next, close_based};

/// First index with an output (TA-Lib's lookback, unstable period 0).
const LOOKBACK: usize = 63;

/// Instantaneous trendline, as TA-Lib's `TA_HT_TRENDLINE`: the mean price
/// over one dominant cycle, smoothed by a 4-bar WMA.
///
/// # Formula
///
/// With `p` the smoothed dominant period of
/// [`HilbertDominantCyclePeriod`](crate::indicators::HilbertDominantCyclePeriod)
/// (the Hilbert transform started at bar 37) and `n = ⌊p + 0.5⌋`:
/// `iTrend = (x₀ + x₋₁ + … + x₋₍ₙ₋₁₎)/n` of the **raw** closes, and
/// `trendline = (4·iTrend + 3·iTrend₋₁ + 2·iTrend₋₂ + iTrend₋₃)/10`.
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
/// use tradeterm_core::indicators::HilbertTrendline;
///
/// let closes: Vec<f64> = (0..100).map(|i| 100.0 + (i as f64 * 0.3).sin()).collect();
/// let out = HilbertTrendline::new().over_values(&closes)?;
/// assert!(out[62].is_none() && (out[99].unwrap() - 100.0).abs() < 1.0);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "HT_TRENDLINE")]
#[derive(Debug, Clone)]
pub struct HilbertTrendline {
    core: HilbertCore,
    trendline: Trendline,
}

impl HilbertTrendline {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self {
            core: HilbertCore::new(LONG_START),
            trendline: Trendline::default(),
        }
    }
}

impl Default for HilbertTrendline {
    fn default() -> Self {
        Self::new()
    }
}

impl Indicator for HilbertTrendline {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::new();
    }

    fn is_ready(&self) -> bool {
        self.core.count() > LOOKBACK
    }
}

impl Next<f64> for HilbertTrendline {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        self.trendline.push(x);
        let step = self.core.next(x)?;
        let line = self.trendline.update(step.smooth_period);
        (step.today >= LOOKBACK).then_some(line)
    }
}

close_based!(HilbertTrendline);
