//! Chaikin money flow.

use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars_volume};
use crate::{Bar, CoreError};

/// Chaikin money flow, as TA-Lib's `TA_CMF`.
///
/// # Formula
///
/// Money flow volume `mfv = ((C − L) − (H − C)) / (H − L) · V` (0 where
/// `H − L ≤ 0`, as in AD); `CMF = Σ mfv / Σ V` over the last `n` bars, 0
/// where the window's volume is 0.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 20, TA-Lib's).
///
/// Warm-up: the first value is at index `period − 1`. The batch form rejects
/// negative volumes.
#[doc(alias = "CMF")]
#[derive(Debug, Clone)]
pub struct ChaikinMoneyFlow {
    period: usize,
    flow: Window,
    vol: Window,
    sum_flow: f64,
    sum_vol: f64,
}

impl ChaikinMoneyFlow {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 20;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(check_period("period", period, 2)?))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            flow: Window::new(period),
            vol: Window::new(period),
            sum_flow: 0.0,
            sum_vol: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for ChaikinMoneyFlow {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for ChaikinMoneyFlow {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.vol.is_full()
    }
}

impl Next<&Bar> for ChaikinMoneyFlow {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let range = bar.high - bar.low;
        let mfv = if range > 0.0 {
            (bar.close - bar.low - (bar.high - bar.close)) / range * bar.volume
        } else {
            0.0
        };
        if let Some(old) = self.flow.push(mfv) {
            self.sum_flow -= old;
        }
        if let Some(old) = self.vol.push(bar.volume) {
            self.sum_vol -= old;
        }
        self.sum_flow += mfv;
        self.sum_vol += bar.volume;
        if !self.vol.is_full() {
            return None;
        }
        Some(if self.sum_vol > 0.0 {
            self.sum_flow / self.sum_vol
        } else {
            0.0
        })
    }
}

bar_based!(ChaikinMoneyFlow, run_bars_volume);
columns_based!(ChaikinMoneyFlow, high, low, close, volume);
