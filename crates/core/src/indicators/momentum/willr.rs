//! Williams %R.

use crate::indicators::util::{RollingExtreme, check_period};
use crate::indicators::{Indicator, Next, bar_based};
use crate::{Bar, CoreError};

/// Williams %R, as TA-Lib's `TA_WILLR`: where the close sits in the range
/// of the last `period` bars, from 0 (at the high) to −100 (at the low).
///
/// # Formula
///
/// `%R = (HH − close) / ((HH − LL) / −100)` over the last `period` bars, 0
/// when `HH = LL`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::WilliamsPercentRange;
///
/// let bar = |h: f64, l: f64, c: f64| Bar { time: 0, open: c, high: h, low: l, close: c, volume: 0.0 };
/// let out = WilliamsPercentRange::new(2)?.over(&[bar(10.0, 0.0, 5.0), bar(8.0, 2.0, 2.5)])?;
/// assert_eq!(out, vec![None, Some(-75.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "WILLR")]
#[doc(alias = "%R")]
#[derive(Debug, Clone)]
pub struct WilliamsPercentRange {
    period: usize,
    hi: RollingExtreme,
    lo: RollingExtreme,
    ready: bool,
}

impl WilliamsPercentRange {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            hi: RollingExtreme::max(period),
            lo: RollingExtreme::min(period),
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for WilliamsPercentRange {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

bar_based!(WilliamsPercentRange, crate::indicators::run_bars);

impl Indicator for WilliamsPercentRange {
    type Output = f64;

    fn reset(&mut self) {
        self.hi.clear();
        self.lo.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for WilliamsPercentRange {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let highest = self.hi.push(bar.high);
        let lowest = self.lo.push(bar.low);
        let (highest, lowest) = (highest?, lowest?);
        self.ready = true;
        let diff = (highest - lowest) / -100.0;
        Some(if diff != 0.0 { (highest - bar.close) / diff } else { 0.0 })
    }
}
