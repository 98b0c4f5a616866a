//! Market facilitation index.

use crate::Bar;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars_volume};

/// Bill Williams' market facilitation index, as TA-Lib's `TA_MARKETFI`.
///
/// # Formula
///
/// `MARKETFI = (high − low) / volume`, 0 where the volume is 0.
///
/// # Parameters
///
/// None. Warm-up: none. The batch form rejects negative volumes.
#[doc(alias = "MARKETFI")]
#[derive(Debug, Clone, Default)]
pub struct MarketFacilitationIndex {
    started: bool,
}

impl MarketFacilitationIndex {
    /// Builds the indicator (it has no parameters, so this cannot fail).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for MarketFacilitationIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.started = false;
    }

    fn is_ready(&self) -> bool {
        self.started
    }
}

impl Next<&Bar> for MarketFacilitationIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.started = true;
        Some(if bar.volume != 0.0 {
            (bar.high - bar.low) / bar.volume
        } else {
            0.0
        })
    }
}

bar_based!(MarketFacilitationIndex, run_bars_volume);
columns_based!(MarketFacilitationIndex, high, low, volume);
