//! Commodity channel index.

use crate::indicators::util::{Window, check_period, is_zero_scaled, typical};
use crate::indicators::{Indicator, Next, bar_based};
use crate::{Bar, CoreError};

/// Lambert's commodity channel index, as TA-Lib's `TA_CCI`.
///
/// # Formula
///
/// With the typical price `tp = (high + low + close) / 3`, its mean `m` and
/// mean absolute deviation `MAD = (1/n) Σ |tp_i − m|` over the last
/// `n = period` bars: `CCI = (tp − m) / (0.015 · MAD)`, and 0 when either
/// `tp − m` or `MAD` is within `1e-14 · |m|` of 0 (a flat window, TA-Lib
/// 0.8's scale-aware test). Sums run in TA-Lib's circular-buffer order.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period − 1`. Each step costs
/// `O(period)` (the mean deviation has no running form).
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::CommodityChannelIndex;
///
/// let bar = |c: f64| Bar { time: 0, open: c, high: c, low: c, close: c, volume: 0.0 };
/// let out = CommodityChannelIndex::new(2)?.over(&[bar(1.0), bar(3.0)])?;
/// assert!((out[1].unwrap() - 1.0 / 0.015).abs() < 1e-9);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "CCI")]
#[derive(Debug, Clone)]
pub struct CommodityChannelIndex {
    period: usize,
    window: Window,
}

impl CommodityChannelIndex {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self {
            period,
            window: Window::new(period),
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for CommodityChannelIndex {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD),
        }
    }
}

bar_based!(CommodityChannelIndex, crate::indicators::run_bars);

impl Indicator for CommodityChannelIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
    }

    fn is_ready(&self) -> bool {
        self.window.is_full()
    }
}

impl Next<&Bar> for CommodityChannelIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let last = typical(bar);
        self.window.push(last);
        if !self.window.is_full() {
            return None;
        }
        let n = self.period as f64;
        let values = self.window.raw();
        let mut average = 0.0;
        for v in values {
            average += v;
        }
        average /= n;
        let mut deviation = 0.0;
        for v in values {
            deviation += (v - average).abs();
        }
        deviation /= n;
        let diff = last - average;
        let scale = average.abs();
        Some(if !is_zero_scaled(diff, scale) && !is_zero_scaled(deviation, scale) {
            diff / (0.015 * deviation)
        } else {
            0.0
        })
    }
}
