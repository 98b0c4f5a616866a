//! True range.

use crate::Bar;
use crate::indicators::util::true_range;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};

/// True range, as TA-Lib's `TA_TRANGE`: the greatest of `high − low`,
/// `|prev close − high|` and `|prev close − low|`.
///
/// # Parameters
///
/// None.
///
/// Warm-up: the first value is at index 1 (it needs the previous close).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::TrueRange;
///
/// let out = TrueRange::new().over_columns(&[11.0, 12.0], &[9.0, 11.5], &[10.0, 12.0])?;
/// assert!(out[0].is_nan());
/// assert_eq!(out[1], 2.0); // |10 − 12|
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "TRANGE")]
#[derive(Debug, Clone, Default)]
pub struct TrueRange {
    prev_close: Option<f64>,
    ready: bool,
}

impl TrueRange {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for TrueRange {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for TrueRange {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let out = self.prev_close.map(|prev| true_range(bar.high, bar.low, prev));
        self.prev_close = Some(bar.close);
        self.ready = out.is_some();
        out
    }
}

bar_based!(TrueRange, run_bars);
columns_based!(TrueRange, high, low, close);
