//! Negative and positive volume indexes.

use crate::Bar;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars_volume};

/// The running index NVI and PVI share: starts at 1000 and moves by the
/// close's relative change on the bars the volume rule selects.
#[derive(Debug, Clone, Copy)]
struct VolumeIndex {
    prev: Option<(f64, f64)>,
    value: f64,
}

impl Default for VolumeIndex {
    fn default() -> Self {
        Self {
            prev: None,
            value: 1000.0,
        }
    }
}

impl VolumeIndex {
    fn step(&mut self, bar: &Bar, selected: impl Fn(f64, f64) -> bool) -> f64 {
        let (prev_close, prev_volume) = self.prev.unwrap_or((bar.close, bar.volume));
        if selected(bar.volume, prev_volume) && prev_close != 0.0 {
            let mut next = self.value;
            next += (bar.close - prev_close) / prev_close * next;
            if next.is_finite() {
                self.value = next;
            }
        }
        self.prev = Some((bar.close, bar.volume));
        self.value
    }
}

/// Negative volume index, as TA-Lib's `TA_NVI`.
///
/// # Formula
///
/// `NVI_0 = 1000`; on a bar whose volume is below the previous bar's,
/// `NVI_t = NVI_{t−1} + (close_t − close_{t−1}) / close_{t−1} · NVI_{t−1}`;
/// otherwise unchanged (also where `close_{t−1} = 0` or the step would overflow).
///
/// # Parameters
///
/// None. Warm-up: none. The batch form rejects negative volumes.
#[doc(alias = "NVI")]
#[derive(Debug, Clone, Default)]
pub struct NegativeVolumeIndex {
    index: VolumeIndex,
}

impl NegativeVolumeIndex {
    /// Builds the indicator (it has no parameters, so this cannot fail).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for NegativeVolumeIndex {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn is_ready(&self) -> bool {
        self.index.prev.is_some()
    }
}

impl Next<&Bar> for NegativeVolumeIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        Some(self.index.step(bar, |v, prev| v < prev))
    }
}

bar_based!(NegativeVolumeIndex, run_bars_volume);
columns_based!(NegativeVolumeIndex, close, volume);

/// Positive volume index, as TA-Lib's `TA_PVI`: [`NegativeVolumeIndex`]'s
/// rule on the bars whose volume is above the previous bar's.
///
/// # Parameters
///
/// None. Warm-up: none (the first value is 1000). The batch form rejects
/// negative volumes.
#[doc(alias = "PVI")]
#[derive(Debug, Clone, Default)]
pub struct PositiveVolumeIndex {
    index: VolumeIndex,
}

impl PositiveVolumeIndex {
    /// Builds the indicator (it has no parameters, so this cannot fail).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for PositiveVolumeIndex {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn is_ready(&self) -> bool {
        self.index.prev.is_some()
    }
}

impl Next<&Bar> for PositiveVolumeIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        Some(self.index.step(bar, |v, prev| v > prev))
    }
}

bar_based!(PositiveVolumeIndex, run_bars_volume);
columns_based!(PositiveVolumeIndex, close, volume);
