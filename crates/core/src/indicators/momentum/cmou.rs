//! Chande momentum oscillator, unsmoothed.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Chande's original momentum oscillator, as TA-Lib's `TA_CMOU`: plain sums
/// of the gains and losses over the window (TA-Lib's `CMO` smooths them the
/// RSI way instead).
///
/// # Formula
///
/// Over the last `n` one-bar changes, `U = Σ gains`, `D = Σ losses`;
/// `CMOU = 100 · (U − D)/(U + D)`, 0 where `U + D = 0`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14, TA-Lib's).
///
/// Warm-up: the first value is at index `period`.
#[doc(alias = "CMOU")]
#[derive(Debug, Clone)]
pub struct ChandeMomentumOscillatorUnsmoothed {
    period: usize,
    window: Window,
}

impl ChandeMomentumOscillatorUnsmoothed {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the oscillator.
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

impl Default for ChandeMomentumOscillatorUnsmoothed {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD + 1),
        }
    }
}

impl Indicator for ChandeMomentumOscillatorUnsmoothed {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
    }

    fn is_ready(&self) -> bool {
        self.window.is_full()
    }
}

impl Next<f64> for ChandeMomentumOscillatorUnsmoothed {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        if !self.window.is_full() {
            return None;
        }
        let mut prev = self.window.oldest()?;
        let (mut up, mut down) = (0.0, 0.0);
        for v in self.window.iter().skip(1) {
            let d = v - prev;
            if d > 0.0 {
                up += d;
            } else if d < 0.0 {
                down -= d;
            }
            prev = v;
        }
        let total = up + down;
        Some(if total != 0.0 { 100.0 * (up - down) / total } else { 0.0 })
    }
}

close_based!(ChandeMomentumOscillatorUnsmoothed);
