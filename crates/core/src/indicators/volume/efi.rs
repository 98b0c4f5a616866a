//! Elder's force index.

use crate::indicators::{ExponentialMovingAverage, Indicator, Next, bar_based, columns_based, run_bars_volume};
use crate::{Bar, CoreError};

/// Elder's force index, as TA-Lib's `TA_EFI`.
///
/// # Formula
///
/// `force_t = (close_t − close_{t−1}) · volume_t`; `EFI = EMA(force, n)`
/// (TA-Lib's EMA, seeded with the average of the first `n` forces). Period 1
/// returns the raw force.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 13, TA-Lib's).
///
/// Warm-up: the first value is at index `period`. The batch form rejects
/// negative volumes.
#[doc(alias = "EFI")]
#[derive(Debug, Clone)]
pub struct ElderForceIndex {
    period: usize,
    prev_close: Option<f64>,
    ema: ExponentialMovingAverage,
    ready: bool,
}

impl ElderForceIndex {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 13;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self {
            period,
            prev_close: None,
            ema: ExponentialMovingAverage::new(period)?,
            ready: false,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for ElderForceIndex {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_PERIOD) {
            Ok(e) => e,
            Err(_) => unreachable!("the default period is valid"),
        }
    }
}

impl Indicator for ElderForceIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.prev_close = None;
        self.ema.reset();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for ElderForceIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let prev = self.prev_close.replace(bar.close)?;
        let force = (bar.close - prev) * bar.volume;
        let out = if self.period == 1 {
            Some(force)
        } else {
            self.ema.next(force)
        };
        self.ready = out.is_some();
        out
    }
}

bar_based!(ElderForceIndex, run_bars_volume);
columns_based!(ElderForceIndex, close, volume);
