//! Mass index.

use crate::indicators::util::{Window, check_period};
use crate::indicators::{ExponentialMovingAverage, Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Dorsey's mass index, as TA-Lib's `TA_MASSI`.
///
/// # Formula
///
/// `e1 = EMA(high − low, fast)`, `e2 = EMA(e1, fast)`;
/// `MASSI = Σ e1/e2` over the last `slow` bars (a ratio of 1 where `e2 = 0`).
///
/// # Parameters
///
/// - `fast`: 2 ..= 10 000 (default 9), `slow`: 2 ..= 10 000 (default 25).
///
/// Warm-up: the first value is at index `2·(fast − 1) + slow − 1`.
#[doc(alias = "MASSI")]
#[derive(Debug, Clone)]
pub struct MassIndex {
    fast: usize,
    slow: usize,
    e1: ExponentialMovingAverage,
    e2: ExponentialMovingAverage,
    ratios: Window,
}

impl MassIndex {
    /// Default EMA period (TA-Lib's).
    pub const DEFAULT_FAST: usize = 9;
    /// Default sum period (TA-Lib's).
    pub const DEFAULT_SLOW: usize = 25;

    /// Builds the index.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(fast: usize, slow: usize) -> Result<Self, CoreError> {
        let fast = check_period("fast", fast, 2)?;
        let slow = check_period("slow", slow, 2)?;
        Ok(Self {
            fast,
            slow,
            e1: ExponentialMovingAverage::new(fast)?,
            e2: ExponentialMovingAverage::new(fast)?,
            ratios: Window::new(slow),
        })
    }

    /// The EMA period.
    pub fn fast(&self) -> usize {
        self.fast
    }

    /// The sum period.
    pub fn slow(&self) -> usize {
        self.slow
    }
}

impl Default for MassIndex {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_FAST, Self::DEFAULT_SLOW) {
            Ok(m) => m,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for MassIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.e1.reset();
        self.e2.reset();
        self.ratios.clear();
    }

    fn is_ready(&self) -> bool {
        self.ratios.is_full()
    }
}

impl Next<&Bar> for MassIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let e1 = self.e1.next(bar.high - bar.low)?;
        let e2 = self.e2.next(e1)?;
        self.ratios.push(if e2 != 0.0 { e1 / e2 } else { 1.0 });
        if !self.ratios.is_full() {
            return None;
        }
        Some(self.ratios.iter().sum())
    }
}

bar_based!(MassIndex, run_bars);
columns_based!(MassIndex, high, low);
