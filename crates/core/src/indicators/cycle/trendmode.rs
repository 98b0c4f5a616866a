//! Hilbert transform, trend vs cycle mode.

use crate::indicators::cycle::hilbert::{DcPhase, HilbertCore, LONG_START, Trendline, rad2deg};
use crate::indicators::{Indicator, Next, close_based};

/// First index with an output (TA-Lib's lookback, unstable period 0).
const LOOKBACK: usize = 63;

/// Trend vs cycle mode, as TA-Lib's `TA_HT_TRENDMODE`: 1 while the market
/// trends, 0 while it cycles.
///
/// # Formula
///
/// With `p` the smoothed dominant period, `φ` the dominant cycle phase
/// ([`HilbertDominantCyclePhase`](crate::indicators::HilbertDominantCyclePhase)),
/// the sine and lead sine of [`HilbertSineWave`](crate::indicators::HilbertSineWave)
/// and the trendline of [`HilbertTrendline`](crate::indicators::HilbertTrendline):
/// the mode is 1 (trend) unless the sine and lead sine crossed on this bar,
/// fewer than `p/2` bars have passed since the last crossing, or the phase
/// advanced by between `0.67 · 360/p` and `1.5 · 360/p` degrees, in which
/// cases it is 0; it is 1 again whenever the smoothed price is at least
/// 1.5 % away from the trendline.
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
/// use tradeterm_core::indicators::HilbertTrendMode;
///
/// let closes: Vec<f64> = (0..100).map(|i| 100.0 + i as f64).collect();
/// let out = HilbertTrendMode::new().over_values(&closes)?;
/// assert!(out[62].is_none());
/// assert_eq!(out[99], Some(1.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "HT_TRENDMODE")]
#[derive(Debug, Clone)]
pub struct HilbertTrendMode {
    core: HilbertCore,
    phase: DcPhase,
    trendline: Trendline,
    sine: f64,
    lead_sine: f64,
    days_in_trend: u64,
}

impl HilbertTrendMode {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self {
            core: HilbertCore::new(LONG_START),
            phase: DcPhase::default(),
            trendline: Trendline::default(),
            sine: 0.0,
            lead_sine: 0.0,
            days_in_trend: 0,
        }
    }
}

impl Default for HilbertTrendMode {
    fn default() -> Self {
        Self::new()
    }
}

impl Indicator for HilbertTrendMode {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::new();
    }

    fn is_ready(&self) -> bool {
        self.core.count() > LOOKBACK
    }
}

impl Next<f64> for HilbertTrendMode {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.trendline.push(x);
        let step = self.core.next(x)?;
        let period = step.smooth_period;
        self.phase.store(step.smoothed);
        let prev_phase = self.phase.phase();
        let phase = self.phase.update(period);
        let deg2rad = 1.0 / rad2deg();
        let (prev_sine, prev_lead) = (self.sine, self.lead_sine);
        self.sine = (phase * deg2rad).sin();
        self.lead_sine = ((phase + 45.0) * deg2rad).sin();
        let trendline = self.trendline.update(period);
        let mut trend = true;
        // Days in trend since the last crossing of the sine wave lines.
        if (self.sine > self.lead_sine && prev_sine <= prev_lead)
            || (self.sine < self.lead_sine && prev_sine >= prev_lead)
        {
            self.days_in_trend = 0;
            trend = false;
        }
        self.days_in_trend = self.days_in_trend.saturating_add(1);
        if (self.days_in_trend as f64) < 0.5 * period {
            trend = false;
        }
        let advance = phase - prev_phase;
        if period != 0.0 && advance > 0.67 * 360.0 / period && advance < 1.5 * 360.0 / period {
            trend = false;
        }
        let smoothed = self.phase.current();
        if trendline != 0.0 && ((smoothed - trendline) / trendline).abs() >= 0.015 {
            trend = true;
        }
        self.phase.advance();
        (step.today >= LOOKBACK).then_some(if trend { 1.0 } else { 0.0 })
    }
}

close_based!(HilbertTrendMode);
