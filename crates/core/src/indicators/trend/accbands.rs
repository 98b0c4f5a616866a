//! Acceleration bands.

use crate::indicators::util::{RunningSma, check_period};
use crate::indicators::{BandsOutput, BandsSeries, Indicator, Next, run_bars, run_columns};
use crate::{Bar, CoreError};

/// Headley's acceleration bands, as TA-Lib's `TA_ACCBANDS`.
///
/// # Formula
///
/// With `f = 4 · (H − L)/(H + L)` (0 where `H + L = 0`):
/// `upper = SMA(H · (1 + f), n)`, `middle = SMA(C, n)`,
/// `lower = SMA(L · (1 − f), n)`.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 20, TA-Lib's).
///
/// Warm-up: the first value is at index `period − 1`.
#[doc(alias = "ACCBANDS")]
#[derive(Debug, Clone)]
pub struct AccelerationBands {
    period: usize,
    upper: RunningSma,
    middle: RunningSma,
    lower: RunningSma,
    count: usize,
}

impl AccelerationBands {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 20;

    /// Builds the bands.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(check_period("period", period, 2)?))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            upper: RunningSma::new(period),
            middle: RunningSma::new(period),
            lower: RunningSma::new(period),
            count: 0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// Batch form: one value per bar and line, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<BandsSeries, CoreError> {
        Ok(BandsSeries::from_outputs(&run_bars(self, bars)?))
    }

    /// Column form over highs, lows and closes (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64], close: &[f64]) -> Result<BandsSeries, CoreError> {
        let columns = [("high", high), ("low", low), ("close", close)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            close: close[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(BandsSeries::from_outputs(&outs))
    }
}

impl Default for AccelerationBands {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for AccelerationBands {
    type Output = BandsOutput;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count >= self.period
    }
}

impl Next<&Bar> for AccelerationBands {
    fn next(&mut self, bar: &Bar) -> Option<BandsOutput> {
        self.count = self.count.saturating_add(1);
        let sum = bar.high + bar.low;
        let f = if sum != 0.0 {
            4.0 * (bar.high - bar.low) / sum
        } else {
            0.0
        };
        let upper = self.upper.push(bar.high * (1.0 + f));
        let middle = self.middle.push(bar.close);
        let lower = self.lower.push(bar.low * (1.0 - f));
        Some(BandsOutput {
            upper: upper?,
            middle: middle?,
            lower: lower?,
        })
    }
}
