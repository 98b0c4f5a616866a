//! Volume-weighted moving average.

use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars_volume};
use crate::{Bar, CoreError};

/// Volume-weighted moving average of the closes, as TA-Lib's `TA_VWMA`.
///
/// # Formula
///
/// `VWMA = (Σ close·volume / n) / (Σ volume / n)` over the last `n` bars
/// (two running sums, added, read, then trimmed, as TA-Lib). Where the
/// window's volume is 0 the quotient is undefined: TA-Lib returns NaN,
/// we return `None`. Period 1 returns the close.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30, TA-Lib's).
///
/// Warm-up: the first value is at index `period − 1`. The batch form rejects
/// negative volumes.
#[doc(alias = "VWMA")]
#[derive(Debug, Clone)]
pub struct VolumeWeightedMovingAverage {
    period: usize,
    pv: Window,
    vol: Window,
    sum_pv: f64,
    sum_v: f64,
    /// Whether the last `next` produced a value.
    ready: bool,
}

impl VolumeWeightedMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds the average.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(check_period("period", period, 1)?))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            pv: Window::new(period),
            vol: Window::new(period),
            sum_pv: 0.0,
            sum_v: 0.0,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for VolumeWeightedMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for VolumeWeightedMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for VolumeWeightedMovingAverage {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let pv = bar.close * bar.volume;
        self.pv.push(pv);
        self.vol.push(bar.volume);
        if self.period == 1 {
            self.ready = true;
            return Some(bar.close);
        }
        self.sum_pv += pv;
        self.sum_v += bar.volume;
        if !self.vol.is_full() {
            return None;
        }
        let n = self.period as f64;
        let out = self.sum_pv / n / (self.sum_v / n);
        self.sum_pv -= self.pv.oldest().unwrap_or(0.0);
        self.sum_v -= self.vol.oldest().unwrap_or(0.0);
        self.ready = out.is_finite();
        self.ready.then_some(out)
    }
}

bar_based!(VolumeWeightedMovingAverage, run_bars_volume);
columns_based!(VolumeWeightedMovingAverage, close, volume);
