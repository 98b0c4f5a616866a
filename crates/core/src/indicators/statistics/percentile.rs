//! Rolling percentile and percent rank.

use crate::CoreError;
use crate::indicators::util::{Window, check_period, check_real};
use crate::indicators::{Indicator, Next, close_based};

/// Rolling percentile (nearest rank), as TA-Lib's `TA_PERCENTILE`.
///
/// # Formula
///
/// With `rank = ⌈P · n / 100⌉` clamped to `1 ..= n`, the `rank`-th smallest
/// of the last `n` values (no interpolation).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 30), `percentile` `P`: 0 ..= 100
///   (default 50).
///
/// Warm-up: the first value is at index `period − 1`.
#[doc(alias = "PERCENTILE")]
#[derive(Debug, Clone)]
pub struct RollingPercentile {
    period: usize,
    rank: usize,
    window: Window,
    sorted: Vec<f64>,
}

impl RollingPercentile {
    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000 or a
    /// percentile outside 0 ..= 100.
    pub fn new(period: usize, percentile: f64) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        let percentile = check_real("percentile", percentile, 0.0, 100.0)?;
        // Multiply before dividing, as TA-Lib: P/100 is inexact.
        let rank = ((percentile * period as f64 / 100.0).ceil() as usize).clamp(1, period);
        Ok(Self {
            period,
            rank,
            window: Window::new(period),
            sorted: Vec::with_capacity(period),
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for RollingPercentile {
    fn default() -> Self {
        match Self::new(30, 50.0) {
            Ok(p) => p,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for RollingPercentile {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
    }

    fn is_ready(&self) -> bool {
        self.window.is_full()
    }
}

impl Next<f64> for RollingPercentile {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        if !self.window.is_full() {
            return None;
        }
        self.sorted.clear();
        self.sorted.extend(self.window.iter());
        self.sorted.sort_unstable_by(f64::total_cmp);
        self.sorted.get(self.rank - 1).copied()
    }
}

close_based!(RollingPercentile);

/// Percent rank, as TA-Lib's `TA_PERCENTRANK`: the share of the previous
/// `period` values strictly below the current one, in percent.
///
/// # Formula
///
/// `PERCENTRANK_t = 100 · #{k ∈ 1..=n : x_{t−k} < x_t} / n`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 100, TA-Lib's).
///
/// Warm-up: the first value is at index `period`.
#[doc(alias = "PERCENTRANK")]
#[derive(Debug, Clone)]
pub struct PercentRank {
    period: usize,
    window: Window,
}

impl PercentRank {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 100;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self {
            period,
            window: Window::new(period + 1),
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for PercentRank {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD + 1),
        }
    }
}

impl Indicator for PercentRank {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
    }

    fn is_ready(&self) -> bool {
        self.window.is_full()
    }
}

impl Next<f64> for PercentRank {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        if !self.window.is_full() {
            return None;
        }
        let below = self.window.iter().take(self.period).filter(|&v| v < x).count();
        Some(100.0 * below as f64 / self.period as f64)
    }
}

close_based!(PercentRank);
