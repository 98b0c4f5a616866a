//! Price-volume trend.

use crate::Bar;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars_volume};

/// Price-volume trend, as TA-Lib's `TA_PVT`.
///
/// # Formula
///
/// `PVT_0 = 0`; `PVT_t = PVT_{t−1} + volume_t · (close_t − close_{t−1}) / close_{t−1}`
/// (no change where `close_{t−1} = 0`).
///
/// # Parameters
///
/// None. Warm-up: none. The batch form rejects negative volumes.
#[doc(alias = "PVT")]
#[derive(Debug, Clone, Default)]
pub struct PriceVolumeTrend {
    prev_close: Option<f64>,
    value: f64,
}

impl PriceVolumeTrend {
    /// Builds the indicator (it has no parameters, so this cannot fail).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for PriceVolumeTrend {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn is_ready(&self) -> bool {
        self.prev_close.is_some()
    }
}

impl Next<&Bar> for PriceVolumeTrend {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let prev = self.prev_close.unwrap_or(bar.close);
        if prev != 0.0 {
            self.value += (bar.close - prev) / prev * bar.volume;
        }
        self.prev_close = Some(bar.close);
        Some(self.value)
    }
}

bar_based!(PriceVolumeTrend, run_bars_volume);
columns_based!(PriceVolumeTrend, close, volume);
