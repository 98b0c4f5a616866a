//! Forecast oscillator.

use crate::CoreError;
use crate::indicators::{Indicator, Next, TimeSeriesForecast, close_based};

/// Chande's forecast oscillator, as TA-Lib's `TA_FOSC`: the distance of the
/// close from the forecast made one bar earlier, in percent.
///
/// # Formula
///
/// `FOSC_t = 100 · (x_t − TSF(x, n)_{t−1}) / x_t` (0 where `x_t = 0`), with
/// [`TimeSeriesForecast`]'s `TSF`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 5, TA-Lib's).
///
/// Warm-up: the first value is at index `period`.
#[doc(alias = "FOSC")]
#[derive(Debug, Clone)]
pub struct ForecastOscillator {
    tsf: TimeSeriesForecast,
    prev: Option<f64>,
    ready: bool,
}

impl ForecastOscillator {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 5;

    /// Builds the oscillator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self {
            tsf: TimeSeriesForecast::new(period)?,
            prev: None,
            ready: false,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.tsf.period()
    }
}

impl Default for ForecastOscillator {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_PERIOD) {
            Ok(f) => f,
            Err(_) => unreachable!("the default period is valid"),
        }
    }
}

impl Indicator for ForecastOscillator {
    type Output = f64;

    fn reset(&mut self) {
        self.tsf.reset();
        self.prev = None;
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for ForecastOscillator {
    fn next(&mut self, x: f64) -> Option<f64> {
        let forecast = self.prev;
        self.prev = self.tsf.next(x);
        let f = forecast?;
        self.ready = true;
        Some(if x != 0.0 { 100.0 * (x - f) / x } else { 0.0 })
    }
}

close_based!(ForecastOscillator);
