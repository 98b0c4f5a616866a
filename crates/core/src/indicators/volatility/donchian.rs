//! Donchian channels.

use crate::indicators::util::{RollingExtreme, check_period};
use crate::indicators::{BandsOutput, BandsSeries, Indicator, Next, run_bars};
use crate::{Bar, CoreError};

/// Donchian channels: highest high and lowest low of the last `period` bars
/// (the current bar included) and their midpoint. Same as TA-Lib 0.8's
/// `TA_DONCHIAN`.
///
/// # Formula
///
/// `upper = max(high, period)`, `lower = min(low, period)`, `middle = (upper + lower) / 2`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 20).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::DonchianChannels;
///
/// let bar = |h: f64, l: f64| Bar { time: 0, open: l, high: h, low: l, close: h, volume: 0.0 };
/// let out = DonchianChannels::new(2)?.over(&[bar(5.0, 1.0), bar(4.0, 2.0), bar(3.0, 2.5)])?;
/// assert_eq!(out.upper, vec![None, Some(5.0), Some(4.0)]);
/// assert_eq!(out.lower, vec![None, Some(1.0), Some(2.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "DONCHIAN")]
#[doc(alias = "DC")]
#[derive(Debug, Clone)]
pub struct DonchianChannels {
    period: usize,
    hi: RollingExtreme,
    lo: RollingExtreme,
    ready: bool,
}

impl DonchianChannels {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 20;

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

    /// Batch form.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<BandsSeries, CoreError> {
        Ok(BandsSeries::from_outputs(&run_bars(self, bars)?))
    }
}

impl Default for DonchianChannels {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for DonchianChannels {
    type Output = BandsOutput;

    fn reset(&mut self) {
        self.hi.clear();
        self.lo.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for DonchianChannels {
    fn next(&mut self, bar: &Bar) -> Option<BandsOutput> {
        let upper = self.hi.push(bar.high);
        let lower = self.lo.push(bar.low);
        let (upper, lower) = (upper?, lower?);
        self.ready = true;
        Some(BandsOutput {
            upper,
            middle: (upper + lower) / 2.0,
            lower,
        })
    }
}
