//! Volume-weighted average price.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Bar;
use crate::indicators::util::typical;
use crate::indicators::{Indicator, Next, bar_based};
use crate::time::{DAY_MS, UnixMs};

/// Where a [`VolumeWeightedAveragePrice`] starts accumulating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VwapAnchor {
    /// Restart at the first bar of every UTC day (session VWAP).
    #[default]
    DailyUtc,
    /// Start at the first bar whose open time is at or after this instant
    /// (unix ms) and never restart (anchored VWAP). Earlier bars give `None`.
    From(UnixMs),
}

/// Volume-weighted average price of the typical price, anchored on the UTC
/// day or on a caller-given instant.
///
/// # Formula
///
/// `VWAP_t = Σ tp_i · volume_i / Σ volume_i` over the bars since the anchor,
/// with `tp = (high + low + close) / 3`. `None` while the accumulated volume
/// is 0 (no price has traded yet).
///
/// # Parameters
///
/// - `anchor`: [`VwapAnchor::DailyUtc`] (default) resets when the UTC day of
///   the bar's open time changes; [`VwapAnchor::From`] accumulates from a
///   given instant. (Sessions that do not start at 00:00 UTC need a
///   `From` anchor per session.)
///
/// Warm-up: none for the daily anchor (first value at index 0 unless the
/// first bars have no volume). TA-Lib 0.8's `TA_VWAP` is the same sum
/// without resets, i.e. `From(first bar time)` — except that TA-Lib returns 0
/// where we return `None` (zero accumulated volume). The batch form rejects
/// negative volumes.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::{VolumeWeightedAveragePrice, VwapAnchor};
///
/// let day = 86_400_000;
/// let bar = |t: i64, c: f64, v: f64| Bar { time: t, open: c, high: c, low: c, close: c, volume: v };
/// let bars = [bar(0, 10.0, 1.0), bar(3_600_000, 13.0, 2.0), bar(day, 20.0, 1.0)];
/// let out = VolumeWeightedAveragePrice::new(VwapAnchor::DailyUtc).over(&bars)?;
/// assert_eq!(out, vec![Some(10.0), Some(12.0), Some(20.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "VWAP")]
#[derive(Debug, Clone, Default)]
pub struct VolumeWeightedAveragePrice {
    anchor: VwapAnchor,
    day: Option<i64>,
    active: bool,
    pv: f64,
    volume: f64,
    ready: bool,
}

impl VolumeWeightedAveragePrice {
    /// Builds the indicator (every anchor is valid, so this cannot fail).
    pub fn new(anchor: VwapAnchor) -> Self {
        Self {
            anchor,
            ..Self::default()
        }
    }

    /// The anchor.
    pub fn anchor(&self) -> VwapAnchor {
        self.anchor
    }
}

bar_based!(VolumeWeightedAveragePrice, crate::indicators::run_bars_volume);

impl Indicator for VolumeWeightedAveragePrice {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::new(self.anchor);
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for VolumeWeightedAveragePrice {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        match self.anchor {
            VwapAnchor::DailyUtc => {
                let day = bar.time.div_euclid(DAY_MS);
                if self.day != Some(day) {
                    self.day = Some(day);
                    self.pv = 0.0;
                    self.volume = 0.0;
                }
            }
            VwapAnchor::From(start) => {
                if !self.active {
                    if bar.time < start {
                        return None;
                    }
                    self.active = true;
                }
            }
        }
        self.pv += typical(bar) * bar.volume;
        self.volume += bar.volume;
        let out = (self.volume > 0.0).then(|| self.pv / self.volume);
        self.ready = out.is_some();
        out
    }
}
