//! Relative volatility index.

use crate::CoreError;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, StandardDeviation, WildersMovingAverage, close_based};

/// Dorsey's relative volatility index, as TA-Lib's `TA_RVI`: an RSI whose
/// gains and losses are the standard deviation of the closes.
///
/// # Formula
///
/// `σ_t` = population standard deviation of the last `stddev` closes
/// (TA-Lib's STDDEV); `up = σ` on a bar whose close rose (else 0), `down = σ`
/// on one whose close fell; both smoothed by Wilder's average over `period`
/// (seeded with their mean); `RVI = 100 · up/(up + down)`, 50 where both are 0.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 14), `stddev`: 2 ..= 10 000 (default 10).
///
/// Warm-up: the first value is at index `stddev − 1 + period − 1`.
#[doc(alias = "RVI")]
#[derive(Debug, Clone)]
pub struct RelativeVolatilityIndex {
    sd: StandardDeviation,
    up: WildersMovingAverage,
    down: WildersMovingAverage,
    prev: Option<f64>,
}

impl RelativeVolatilityIndex {
    /// Default smoothing period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;
    /// Default standard-deviation period (TA-Lib's).
    pub const DEFAULT_STDDEV: usize = 10;

    /// Builds the index.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside its range.
    pub fn new(period: usize, stddev: usize) -> Result<Self, CoreError> {
        let stddev = check_period("stddev", stddev, 2)?;
        Ok(Self {
            sd: StandardDeviation::new(stddev, 1.0)?,
            up: WildersMovingAverage::new(period)?,
            down: WildersMovingAverage::new(period)?,
            prev: None,
        })
    }
}

impl Default for RelativeVolatilityIndex {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_PERIOD, Self::DEFAULT_STDDEV) {
            Ok(r) => r,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for RelativeVolatilityIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.sd.reset();
        self.up.reset();
        self.down.reset();
        self.prev = None;
    }

    fn is_ready(&self) -> bool {
        self.up.is_ready()
    }
}

impl Next<f64> for RelativeVolatilityIndex {
    fn next(&mut self, x: f64) -> Option<f64> {
        let sigma = self.sd.next(x);
        let prev = self.prev.replace(x);
        let sigma = sigma?;
        let delta = x - prev?;
        let (u, d) = if delta > 0.0 {
            (sigma, 0.0)
        } else if delta < 0.0 {
            (0.0, sigma)
        } else {
            (0.0, 0.0)
        };
        let up = self.up.next(u);
        let down = self.down.next(d);
        let (up, down) = (up?, down?);
        let total = up + down;
        Some(if total == 0.0 { 50.0 } else { 100.0 * (up / total) })
    }
}

close_based!(RelativeVolatilityIndex);
