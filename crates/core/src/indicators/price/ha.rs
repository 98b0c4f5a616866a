//! Heikin-Ashi candles.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::{Indicator, Next, run_bars, run_columns};
use crate::{Bar, CoreError};

/// One Heikin-Ashi candle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeikinAshiOutput {
    /// Open: mean of the previous candle's open and close.
    pub open: f64,
    /// High: the greatest of the bar's high and the candle's open and close.
    pub high: f64,
    /// Low: the least of the bar's low and the candle's open and close.
    pub low: f64,
    /// Close: `(O + H + L + C)/4` of the bar.
    pub close: f64,
}

/// Batch Heikin-Ashi: one value per bar and field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeikinAshiSeries {
    /// Candle opens.
    pub open: Vec<Option<f64>>,
    /// Candle highs.
    pub high: Vec<Option<f64>>,
    /// Candle lows.
    pub low: Vec<Option<f64>>,
    /// Candle closes.
    pub close: Vec<Option<f64>>,
}

/// Heikin-Ashi candles, as TA-Lib's `TA_HA`.
///
/// # Formula
///
/// `haclose = (O + H + L + C)/4`; `haopen = (haopen₋₁ + haclose₋₁)/2`,
/// `(O + C)/2` on the first bar; `hahigh = max(H, haopen, haclose)`,
/// `halow = min(L, haopen, haclose)`.
///
/// # Parameters
///
/// None. Warm-up: none.
#[doc(alias = "HA")]
#[derive(Debug, Clone, Default)]
pub struct HeikinAshi {
    prev: Option<(f64, f64)>,
}

impl HeikinAshi {
    /// Builds the indicator (it has no parameters, so this cannot fail).
    pub fn new() -> Self {
        Self::default()
    }

    /// Batch form: one candle per bar.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<HeikinAshiSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Column form over opens, highs, lows and closes.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(
        &self,
        open: &[f64],
        high: &[f64],
        low: &[f64],
        close: &[f64],
    ) -> Result<HeikinAshiSeries, CoreError> {
        let columns = [("open", open), ("high", high), ("low", low), ("close", close)];
        let outs = run_columns(self, &columns, |i| Bar {
            open: open[i],
            high: high[i],
            low: low[i],
            close: close[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(Self::split(&outs))
    }

    fn split(outs: &[Option<HeikinAshiOutput>]) -> HeikinAshiSeries {
        HeikinAshiSeries {
            open: outs.iter().map(|o| o.map(|c| c.open)).collect(),
            high: outs.iter().map(|o| o.map(|c| c.high)).collect(),
            low: outs.iter().map(|o| o.map(|c| c.low)).collect(),
            close: outs.iter().map(|o| o.map(|c| c.close)).collect(),
        }
    }
}

impl Indicator for HeikinAshi {
    type Output = HeikinAshiOutput;

    fn reset(&mut self) {
        self.prev = None;
    }

    fn is_ready(&self) -> bool {
        self.prev.is_some()
    }
}

impl Next<&Bar> for HeikinAshi {
    fn next(&mut self, bar: &Bar) -> Option<HeikinAshiOutput> {
        let close = (bar.open + bar.high + bar.low + bar.close) / 4.0;
        let open = match self.prev {
            Some((o, c)) => (o + c) / 2.0,
            None => (bar.open + bar.close) / 2.0,
        };
        self.prev = Some((open, close));
        Some(HeikinAshiOutput {
            open,
            high: bar.high.max(open).max(close),
            low: bar.low.min(open).min(close),
            close,
        })
    }
}
