//! SuperTrend.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::{check_period, check_real};
use crate::indicators::{AverageTrueRange, Indicator, Next, run_bars};
use crate::{Bar, CoreError};

/// One SuperTrend step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuperTrendOutput {
    /// The trailing line: the final lower band in an up-trend, the final upper band in a down-trend.
    pub value: f64,
    /// `1` in an up-trend, `-1` in a down-trend.
    pub direction: i8,
}

/// Batch SuperTrend: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuperTrendSeries {
    /// The SuperTrend line.
    pub value: Vec<Option<f64>>,
    /// `1.0` (up) or `-1.0` (down).
    pub direction: Vec<Option<f64>>,
}

/// SuperTrend: an ATR band around the median price that ratchets toward
/// price and flips side when the close crosses it. Same definition and
/// start-up as TA-Lib 0.8's `TA_SUPERTREND` (and ta4j).
///
/// # Formula
///
/// `ATR` is Wilder's average true range ([`AverageTrueRange`]).
/// `basic upper = (high + low)/2 + multiplier·ATR`,
/// `basic lower = (high + low)/2 − multiplier·ATR`.
/// On the first bar with an ATR both final bands take their basic values and
/// the trend starts up. Afterwards the final upper band takes the basic one
/// when it is lower or when the previous close was above the previous final
/// upper band (otherwise it is kept); symmetrically for the lower band. An
/// up-trend turns down when the close falls below the final lower band, a
/// down-trend turns up when the close rises above the final upper band. The
/// line is the final lower band in an up-trend, the final upper band in a
/// down-trend.
///
/// # Parameters
///
/// - `period`: ATR period, 2 ..= 10 000 (default 10).
/// - `multiplier`: band width in ATRs, finite, 0 ..= 100 (default 3).
///
/// Warm-up: the first value is at index `period` (the ATR's).
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::SuperTrend;
///
/// let bars: Vec<Bar> = (0..30)
///     .map(|i| {
///         let c = 100.0 + i as f64;
///         Bar { time: i, open: c, high: c + 1.0, low: c - 1.0, close: c, volume: 0.0 }
///     })
///     .collect();
/// let out = SuperTrend::default().over(&bars)?;
/// assert_eq!(out.value[9], None);
/// assert_eq!(out.direction[29], Some(1.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "SUPERTREND")]
#[derive(Debug, Clone)]
pub struct SuperTrend {
    multiplier: f64,
    atr: AverageTrueRange,
    started: bool,
    up: bool,
    final_upper: f64,
    final_lower: f64,
    prev_close: f64,
}

impl SuperTrend {
    /// Default ATR period.
    pub const DEFAULT_PERIOD: usize = 10;
    /// Default multiplier.
    pub const DEFAULT_MULTIPLIER: f64 = 3.0;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000 or a
    /// multiplier that is not finite or outside 0 ..= 100.
    pub fn new(period: usize, multiplier: f64) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        let multiplier = check_real("multiplier", multiplier, 0.0, 100.0)?;
        Ok(Self::unchecked(AverageTrueRange::new(period)?, multiplier))
    }

    fn unchecked(atr: AverageTrueRange, multiplier: f64) -> Self {
        Self {
            multiplier,
            atr,
            started: false,
            up: true,
            final_upper: 0.0,
            final_lower: 0.0,
            prev_close: 0.0,
        }
    }

    /// `(period, multiplier)`.
    pub fn params(&self) -> (usize, f64) {
        (self.atr.period(), self.multiplier)
    }

    /// Batch form.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<SuperTrendSeries, CoreError> {
        let outs = run_bars(self, bars)?;
        Ok(SuperTrendSeries {
            value: outs.iter().map(|o| o.map(|s| s.value)).collect(),
            direction: outs.iter().map(|o| o.map(|s| f64::from(s.direction))).collect(),
        })
    }
}

impl Default for SuperTrend {
    fn default() -> Self {
        Self::unchecked(
            AverageTrueRange::unchecked(Self::DEFAULT_PERIOD),
            Self::DEFAULT_MULTIPLIER,
        )
    }
}

impl Indicator for SuperTrend {
    type Output = SuperTrendOutput;

    fn reset(&mut self) {
        self.atr.reset();
        self.started = false;
        self.up = true;
        self.final_upper = 0.0;
        self.final_lower = 0.0;
        self.prev_close = 0.0;
    }

    fn is_ready(&self) -> bool {
        self.started
    }
}

impl Next<&Bar> for SuperTrend {
    fn next(&mut self, bar: &Bar) -> Option<SuperTrendOutput> {
        let atr = self.atr.next(bar)?;
        let median = (bar.high + bar.low) / 2.0;
        let band = self.multiplier * atr;
        let basic_upper = median + band;
        let basic_lower = median - band;
        if !self.started {
            self.started = true;
            self.up = true;
            self.final_upper = basic_upper;
            self.final_lower = basic_lower;
        } else {
            if basic_upper < self.final_upper || self.prev_close > self.final_upper {
                self.final_upper = basic_upper;
            }
            if basic_lower > self.final_lower || self.prev_close < self.final_lower {
                self.final_lower = basic_lower;
            }
            if self.up {
                if bar.close < self.final_lower {
                    self.up = false;
                }
            } else if bar.close > self.final_upper {
                self.up = true;
            }
        }
        self.prev_close = bar.close;
        Some(if self.up {
            SuperTrendOutput {
                value: self.final_lower,
                direction: 1,
            }
        } else {
            SuperTrendOutput {
                value: self.final_upper,
                direction: -1,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flips_down_on_a_break() {
        let mut bars: Vec<Bar> = (0..20)
            .map(|i| Bar {
                time: i,
                open: 100.0,
                high: 101.0,
                low: 99.0,
                close: 100.0,
                volume: 0.0,
            })
            .collect();
        bars.push(Bar {
            time: 20,
            open: 100.0,
            high: 100.0,
            low: 80.0,
            close: 80.0,
            volume: 0.0,
        });
        let out = SuperTrend::new(3, 1.0).unwrap().over(&bars).unwrap();
        assert_eq!(out.direction[19], Some(1.0));
        assert_eq!(out.direction[20], Some(-1.0));
        assert!(SuperTrend::new(10, f64::INFINITY).is_err());
        assert!(SuperTrend::new(1, 3.0).is_err());
    }
}
