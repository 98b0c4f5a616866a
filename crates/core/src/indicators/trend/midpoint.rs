//! Midpoint over a period (of one series, and of the high/low range).

use crate::indicators::util::{RollingExtreme, check_period};
use crate::indicators::{Indicator, Next, bar_based, close_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Midpoint of a series over a period, as TA-Lib's `TA_MIDPOINT`:
/// `(highest + lowest) / 2` of the last `period` values.
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
/// use tradeterm_core::indicators::Midpoint;
///
/// let out = Midpoint::new(2)?.over_values(&[1.0, 5.0, 3.0])?;
/// assert_eq!(out, vec![None, Some(3.0), Some(4.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MIDPOINT")]
#[derive(Debug, Clone)]
pub struct Midpoint {
    period: usize,
    hi: RollingExtreme,
    lo: RollingExtreme,
    ready: bool,
}

impl Midpoint {
    /// Default period (TA-Lib's).
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

impl Default for Midpoint {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for Midpoint {
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

impl Next<f64> for Midpoint {
    fn next(&mut self, x: f64) -> Option<f64> {
        let highest = self.hi.push(x);
        let lowest = self.lo.push(x);
        let (highest, lowest) = (highest?, lowest?);
        self.ready = true;
        Some((highest + lowest) / 2.0)
    }
}

close_based!(Midpoint);

/// Midpoint of the high/low range over a period, as TA-Lib's
/// `TA_MIDPRICE`: `(highest high + lowest low) / 2` of the last `period`
/// bars.
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
/// use tradeterm_core::indicators::MidpointPrice;
///
/// let out = MidpointPrice::new(2)?.over_columns(&[4.0, 6.0], &[1.0, 3.0])?;
/// assert!(out[0].is_nan());
/// assert_eq!(out[1], 3.5);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MIDPRICE")]
#[derive(Debug, Clone)]
pub struct MidpointPrice {
    period: usize,
    hi: RollingExtreme,
    lo: RollingExtreme,
    ready: bool,
}

impl MidpointPrice {
    /// Default period (TA-Lib's).
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

impl Default for MidpointPrice {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for MidpointPrice {
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

impl Next<&Bar> for MidpointPrice {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let highest = self.hi.push(bar.high);
        let lowest = self.lo.push(bar.low);
        let (highest, lowest) = (highest?, lowest?);
        self.ready = true;
        Some((highest + lowest) / 2.0)
    }
}

bar_based!(MidpointPrice, run_bars);
columns_based!(MidpointPrice, high, low);
