//! Detrended price oscillator.

use crate::CoreError;
use crate::indicators::util::{RunningSma, Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Detrended price oscillator, as TA-Lib's `TA_DPO` (not centred: the
/// displaced close is compared with the average ending on the bar).
///
/// # Formula
///
/// `DPO_t = x_{t − (⌊n/2⌋ + 1)} − SMA(x, n)_t`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 20, TA-Lib's).
///
/// Warm-up: the first value is at index `max(n − 1, ⌊n/2⌋ + 1)`.
#[doc(alias = "DPO")]
#[derive(Debug, Clone)]
pub struct DetrendedPriceOscillator {
    period: usize,
    shift: usize,
    window: Window,
    sma: RunningSma,
    count: usize,
}

impl DetrendedPriceOscillator {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 20;

    /// Builds the oscillator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(check_period("period", period, 2)?))
    }

    fn unchecked(period: usize) -> Self {
        let shift = period / 2 + 1;
        Self {
            period,
            shift,
            window: Window::new(shift + 1),
            sma: RunningSma::new(period),
            count: 0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    fn lookback(&self) -> usize {
        (self.period - 1).max(self.shift)
    }
}

impl Default for DetrendedPriceOscillator {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for DetrendedPriceOscillator {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.lookback()
    }
}

impl Next<f64> for DetrendedPriceOscillator {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.count = self.count.saturating_add(1);
        self.window.push(x);
        let sma = self.sma.push(x)?;
        if self.count <= self.lookback() {
            return None;
        }
        // Once full, the oldest of the `shift + 1` values is x_{t − shift}.
        Some(self.window.oldest()? - sma)
    }
}

close_based!(DetrendedPriceOscillator);
