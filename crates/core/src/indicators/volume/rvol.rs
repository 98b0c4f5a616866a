//! Relative volume.

use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars_volume};
use crate::{Bar, CoreError};

/// Relative volume, as TA-Lib's `TA_RVOL`: the bar's volume against the
/// average volume of the `period` bars before it.
///
/// # Formula
///
/// `RVOL_t = V_t / (Σ_{k=1}^{n} V_{t−k} / n)`; `None` where that average is 0
/// (TA-Lib returns NaN or infinity there).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 20, TA-Lib's).
///
/// Warm-up: the first value is at index `period`. The batch form rejects
/// negative volumes.
#[doc(alias = "RVOL")]
#[derive(Debug, Clone)]
pub struct RelativeVolume {
    period: usize,
    window: Window,
    ready: bool,
}

impl RelativeVolume {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 20;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self {
            period,
            window: Window::new(period),
            ready: false,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for RelativeVolume {
    fn default() -> Self {
        Self {
            period: Self::DEFAULT_PERIOD,
            window: Window::new(Self::DEFAULT_PERIOD),
            ready: false,
        }
    }
}

impl Indicator for RelativeVolume {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for RelativeVolume {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let out = if self.window.is_full() {
            let mean = self.window.iter().sum::<f64>() / self.period as f64;
            let r = bar.volume / mean;
            r.is_finite().then_some(r)
        } else {
            None
        };
        self.window.push(bar.volume);
        self.ready = out.is_some();
        out
    }
}

bar_based!(RelativeVolume, run_bars_volume);
columns_based!(RelativeVolume, volume);
