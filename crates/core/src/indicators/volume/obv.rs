//! On-balance volume.

use crate::Bar;
use crate::indicators::{Indicator, Next, bar_based};

/// Granville's on-balance volume, as TA-Lib's `TA_OBV`.
///
/// # Formula
///
/// `OBV_0 = volume_0`; then `OBV_t = OBV_{t−1} + volume_t` when the close
/// rose, `− volume_t` when it fell, unchanged when it is equal.
///
/// # Parameters
///
/// None. Warm-up: none, the first value is at index 0. The batch form
/// rejects negative volumes.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::OnBalanceVolume;
///
/// let bar = |c: f64, v: f64| Bar { time: 0, open: c, high: c, low: c, close: c, volume: v };
/// let out = OnBalanceVolume::new().over(&[bar(1.0, 10.0), bar(2.0, 5.0), bar(1.5, 3.0), bar(1.5, 7.0)])?;
/// assert_eq!(out, vec![Some(10.0), Some(15.0), Some(12.0), Some(12.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "OBV")]
#[derive(Debug, Clone, Default)]
pub struct OnBalanceVolume {
    started: bool,
    prev_close: f64,
    value: f64,
}

impl OnBalanceVolume {
    /// Builds the indicator (it has no parameters, so this cannot fail).
    pub fn new() -> Self {
        Self::default()
    }
}

bar_based!(OnBalanceVolume, crate::indicators::run_bars_volume);

impl Indicator for OnBalanceVolume {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn is_ready(&self) -> bool {
        self.started
    }
}

impl Next<&Bar> for OnBalanceVolume {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        if !self.started {
            self.started = true;
            self.value = bar.volume;
        } else if bar.close > self.prev_close {
            self.value += bar.volume;
        } else if bar.close < self.prev_close {
            self.value -= bar.volume;
        }
        self.prev_close = bar.close;
        Some(self.value)
    }
}
