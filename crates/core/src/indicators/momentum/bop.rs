//! Balance of power.

use crate::Bar;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};

/// Balance of power, as TA-Lib's `TA_BOP`: where the close sits against the
/// open, in units of the bar's range.
///
/// # Formula
///
/// `BOP = (close − open) / (high − low)`, 0 when `high − low` is not positive.
///
/// # Parameters
///
/// None.
///
/// Warm-up: none, a value on every bar.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::BalanceOfPower;
///
/// let out = BalanceOfPower::new().over_columns(&[1.0, 2.0], &[4.0, 2.0], &[0.0, 2.0], &[3.0, 2.0])?;
/// assert_eq!(out, vec![0.5, 0.0]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "BOP")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BalanceOfPower {
    ready: bool,
}

impl BalanceOfPower {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for BalanceOfPower {
    type Output = f64;

    fn reset(&mut self) {
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for BalanceOfPower {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.ready = true;
        let range = bar.high - bar.low;
        Some(if range > 0.0 {
            (bar.close - bar.open) / range
        } else {
            0.0
        })
    }
}

bar_based!(BalanceOfPower, run_bars);
columns_based!(BalanceOfPower, open, high, low, close);
