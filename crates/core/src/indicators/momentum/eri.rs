//! Elder ray index.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::{ExponentialMovingAverage, Indicator, Next, run_bars, run_columns};
use crate::{Bar, CoreError};

/// One Elder ray step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ElderRayOutput {
    /// Bull power: high − EMA of the closes.
    pub bull: f64,
    /// Bear power: low − EMA of the closes.
    pub bear: f64,
}

/// Batch Elder ray: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ElderRaySeries {
    /// Bull power.
    pub bull: Vec<Option<f64>>,
    /// Bear power.
    pub bear: Vec<Option<f64>>,
}

/// Elder's ray index (bull and bear power), as TA-Lib's `TA_ERI`.
///
/// # Formula
///
/// With `e = EMA(C, n)` (TA-Lib's, SMA-seeded): `bull = H − e`, `bear = L − e`.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 13, TA-Lib's).
///
/// Warm-up: the first value is at index `period − 1`.
#[doc(alias = "ERI")]
#[derive(Debug, Clone)]
pub struct ElderRayIndex {
    ema: ExponentialMovingAverage,
}

impl ElderRayIndex {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 13;

    /// Builds the index.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self {
            ema: ExponentialMovingAverage::new(period)?,
        })
    }

    /// Batch form: one value per bar and line, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<ElderRaySeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Column form over highs, lows and closes (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64], close: &[f64]) -> Result<ElderRaySeries, CoreError> {
        let columns = [("high", high), ("low", low), ("close", close)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            close: close[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(Self::split(&outs))
    }

    fn split(outs: &[Option<ElderRayOutput>]) -> ElderRaySeries {
        ElderRaySeries {
            bull: outs.iter().map(|o| o.map(|e| e.bull)).collect(),
            bear: outs.iter().map(|o| o.map(|e| e.bear)).collect(),
        }
    }
}

impl Default for ElderRayIndex {
    fn default() -> Self {
        match Self::new(Self::DEFAULT_PERIOD) {
            Ok(e) => e,
            Err(_) => unreachable!("the default period is valid"),
        }
    }
}

impl Indicator for ElderRayIndex {
    type Output = ElderRayOutput;

    fn reset(&mut self) {
        self.ema.reset();
    }

    fn is_ready(&self) -> bool {
        self.ema.is_ready()
    }
}

impl Next<&Bar> for ElderRayIndex {
    fn next(&mut self, bar: &Bar) -> Option<ElderRayOutput> {
        let e = self.ema.next(bar.close)?;
        Some(ElderRayOutput {
            bull: bar.high - e,
            bear: bar.low - e,
        })
    }
}
