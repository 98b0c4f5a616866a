//! Average directional index with the directional indicators +DI and −DI.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::{check_period, true_range};
use crate::indicators::{Indicator, Next, run_bars};
use crate::{Bar, CoreError};

/// One ADX/DMI step. The directional indicators are ready `period - 1` bars
/// before the ADX, so `adx` is `None` in between.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AverageDirectionalIndexOutput {
    /// +DI: `100 · +DM_n / TR_n`.
    pub plus_di: f64,
    /// −DI: `100 · −DM_n / TR_n`.
    pub minus_di: f64,
    /// ADX, from bar `2·period - 1`.
    pub adx: Option<f64>,
}

/// Batch ADX/DMI: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AverageDirectionalIndexSeries {
    /// ADX (first value at `2·period - 1`).
    pub adx: Vec<Option<f64>>,
    /// +DI (first value at `period`).
    pub plus_di: Vec<Option<f64>>,
    /// −DI (first value at `period`).
    pub minus_di: Vec<Option<f64>>,
}

/// Wilder's average directional index and directional indicators, as
/// TA-Lib's `TA_ADX`, `TA_PLUS_DI` and `TA_MINUS_DI`.
///
/// # Formula
///
/// One-bar moves: `up = high_t - high_{t-1}`, `down = low_{t-1} - low_t`;
/// `+DM1 = up` if `up > 0` and `up > down`, `−DM1 = down` if `down > 0` and
/// `down > up`, else 0. `TR1` is the true range. The first `+DM_n`, `−DM_n`,
/// `TR_n` are plain sums of the first `period - 1` one-bar values; each later
/// bar applies Wilder's smoothing `S = S - S/period + v`.
/// `+DI = 100 · +DM_n / TR_n`, `−DI = 100 · −DM_n / TR_n` (0 when `TR_n` is 0),
/// `DX = 100 · |+DI − −DI| / (+DI + −DI)`. The first ADX is the mean of the
/// first `period` DX values; then `ADX = (ADX · (period − 1) + DX) / period`
/// (the ADX is carried unchanged on a bar whose DX is undefined).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: +DI/−DI from index `period`, ADX from index `2·period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::AverageDirectionalIndex;
///
/// let bars: Vec<Bar> = (0..40)
///     .map(|i| {
///         let c = 100.0 + i as f64;
///         Bar { time: i * 60_000, open: c, high: c + 1.0, low: c - 1.0, close: c, volume: 1.0 }
///     })
///     .collect();
/// let out = AverageDirectionalIndex::new(14)?.over(&bars)?;
/// assert!(out.plus_di[14].is_some() && out.adx[26].is_none());
/// assert!(out.adx[27].unwrap() > 99.0); // a one-way market
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "ADX")]
#[doc(alias = "DMI")]
#[doc(alias = "PLUS_DI")]
#[doc(alias = "MINUS_DI")]
#[derive(Debug, Clone)]
pub struct AverageDirectionalIndex {
    period: usize,
    count: usize,
    prev_high: f64,
    prev_low: f64,
    prev_close: f64,
    plus_dm: f64,
    minus_dm: f64,
    tr: f64,
    sum_dx: f64,
    adx: f64,
}

impl AverageDirectionalIndex {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is below 2 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            count: 0,
            prev_high: 0.0,
            prev_low: 0.0,
            prev_close: 0.0,
            plus_dm: 0.0,
            minus_dm: 0.0,
            tr: 0.0,
            sum_dx: 0.0,
            adx: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// Batch form.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<AverageDirectionalIndexSeries, CoreError> {
        let outs = run_bars(self, bars)?;
        Ok(AverageDirectionalIndexSeries {
            adx: outs.iter().map(|o| o.and_then(|a| a.adx)).collect(),
            plus_di: outs.iter().map(|o| o.map(|a| a.plus_di)).collect(),
            minus_di: outs.iter().map(|o| o.map(|a| a.minus_di)).collect(),
        })
    }
}

impl Default for AverageDirectionalIndex {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for AverageDirectionalIndex {
    type Output = AverageDirectionalIndexOutput;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.period
    }
}

impl Next<&Bar> for AverageDirectionalIndex {
    fn next(&mut self, bar: &Bar) -> Option<Self::Output> {
        let idx = self.count;
        self.count += 1;
        if idx == 0 {
            self.prev_high = bar.high;
            self.prev_low = bar.low;
            self.prev_close = bar.close;
            return None;
        }
        let up = bar.high - self.prev_high;
        self.prev_high = bar.high;
        let down = self.prev_low - bar.low;
        self.prev_low = bar.low;
        let tr = true_range(self.prev_high, self.prev_low, self.prev_close);
        self.prev_close = bar.close;
        let p = self.period;
        let n = p as f64;
        if idx < p {
            if down > 0.0 && up < down {
                self.minus_dm += down;
            } else if up > 0.0 && up > down {
                self.plus_dm += up;
            }
            self.tr += tr;
            return None;
        }
        self.minus_dm -= self.minus_dm / n;
        self.plus_dm -= self.plus_dm / n;
        if down > 0.0 && up < down {
            self.minus_dm += down;
        } else if up > 0.0 && up > down {
            self.plus_dm += up;
        }
        self.tr = self.tr - self.tr / n + tr;
        let (plus_di, minus_di, dx) = if self.tr != 0.0 {
            let minus_di = 100.0 * (self.minus_dm / self.tr);
            let plus_di = 100.0 * (self.plus_dm / self.tr);
            let sum = minus_di + plus_di;
            let dx = if sum != 0.0 {
                Some(100.0 * ((minus_di - plus_di).abs() / sum))
            } else {
                None
            };
            (plus_di, minus_di, dx)
        } else {
            (0.0, 0.0, None)
        };
        // idx runs p ..= 2p-1 while the first ADX accumulates.
        let adx = if idx < 2 * p - 1 {
            self.sum_dx += dx.unwrap_or(0.0);
            None
        } else if idx == 2 * p - 1 {
            self.sum_dx += dx.unwrap_or(0.0);
            self.adx = self.sum_dx / n;
            Some(self.adx)
        } else {
            if let Some(dx) = dx {
                self.adx = (self.adx * (n - 1.0) + dx) / n;
            }
            Some(self.adx)
        };
        Some(AverageDirectionalIndexOutput { plus_di, minus_di, adx })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmups() {
        assert!(AverageDirectionalIndex::new(1).is_err());
        let bars: Vec<Bar> = (0..12)
            .map(|i| {
                let c = 10.0 + ((i * 7) % 5) as f64;
                Bar {
                    time: i,
                    open: c,
                    high: c + 1.0,
                    low: c - 1.0,
                    close: c,
                    volume: 0.0,
                }
            })
            .collect();
        let out = AverageDirectionalIndex::new(3).unwrap().over(&bars).unwrap();
        assert!(out.plus_di[2].is_none() && out.plus_di[3].is_some());
        assert!(out.adx[4].is_none() && out.adx[5].is_some());
    }
}
