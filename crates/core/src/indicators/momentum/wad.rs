//! Williams accumulation/distribution.

use crate::Bar;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};

/// Williams' accumulation/distribution, as TA-Lib's `TA_WAD`.
///
/// # Formula
///
/// `WAD_0 = 0`; then `WAD_t = WAD_{t−1} + AD_t` with, against the previous
/// close `C₋₁`: `AD = C − min(L, C₋₁)` when the close rose,
/// `C − max(H, C₋₁)` when it fell, 0 when unchanged.
///
/// # Parameters
///
/// None. Warm-up: none.
#[doc(alias = "WAD")]
#[derive(Debug, Clone, Default)]
pub struct WilliamsAccumulationDistribution {
    prev_close: Option<f64>,
    value: f64,
}

impl WilliamsAccumulationDistribution {
    /// Builds the indicator (it has no parameters, so this cannot fail).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for WilliamsAccumulationDistribution {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn is_ready(&self) -> bool {
        self.prev_close.is_some()
    }
}

impl Next<&Bar> for WilliamsAccumulationDistribution {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        if let Some(pc) = self.prev_close {
            if bar.close > pc {
                self.value += bar.close - bar.low.min(pc);
            } else if bar.close < pc {
                self.value += bar.close - bar.high.max(pc);
            }
        }
        self.prev_close = Some(bar.close);
        Some(self.value)
    }
}

bar_based!(WilliamsAccumulationDistribution, run_bars);
columns_based!(WilliamsAccumulationDistribution, high, low, close);
