//! Percentage volume oscillator.

use crate::indicators::{Indicator, Next, PercentagePriceOscillator, bar_based, columns_based, run_bars_volume};
use crate::{Bar, CoreError};

/// Percentage volume oscillator, as TA-Lib's `TA_PVO`: the percentage price
/// oscillator of the volumes.
///
/// # Formula
///
/// `PVO = 100 · (MA(V, fast) − MA(V, slow)) / MA(V, slow)` (0 where the slow
/// average is 0), with [`PercentagePriceOscillator`]'s rules (periods swapped
/// when `slow < fast`).
///
/// # Parameters
///
/// - `fast` (default 12), `slow` (default 26): each 2 ..= 10 000;
///   `matype` (default 1, EMA): TA-Lib's moving-average type 0 ..= 8.
///
/// Warm-up: the slow average's lookback (25 at the defaults). The batch form
/// rejects negative volumes.
#[doc(alias = "PVO")]
#[derive(Debug, Clone)]
pub struct PercentageVolumeOscillator {
    ppo: PercentagePriceOscillator,
}

impl PercentageVolumeOscillator {
    /// Builds the oscillator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000 or a
    /// `matype` outside 0 ..= 8.
    pub fn new(fast: usize, slow: usize, matype: usize) -> Result<Self, CoreError> {
        Ok(Self {
            ppo: PercentagePriceOscillator::new(fast, slow, matype)?,
        })
    }
}

impl Default for PercentageVolumeOscillator {
    fn default() -> Self {
        match Self::new(12, 26, 1) {
            Ok(p) => p,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for PercentageVolumeOscillator {
    type Output = f64;

    fn reset(&mut self) {
        self.ppo.reset();
    }

    fn is_ready(&self) -> bool {
        self.ppo.is_ready()
    }
}

impl Next<&Bar> for PercentageVolumeOscillator {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.ppo.next(bar.volume)
    }
}

bar_based!(PercentageVolumeOscillator, run_bars_volume);
columns_based!(PercentageVolumeOscillator, volume);
