//! Moving average with a variable period (TA-Lib's `MAVP`).

use super::ma::AlignedMovingAverage;
use super::{AnyMovingAverage, MovingAverageType};
use crate::indicators::util::{check_bars, check_period, check_same_len, check_value, empty_input};
use crate::indicators::{Indicator, Next};
use crate::{Bar, CoreError};

/// A moving average whose period changes from bar to bar, as TA-Lib's
/// `TA_MAVP`.
///
/// # Formula
///
/// For each bar, `p = clamp(trunc(period_i), min_period, max_period)` and
/// the value is that bar's value of the moving average of type `matype`
/// and period `p`. Every such moving average is started so that its first
/// value falls on bar `lookback(max_period)` (TA-Lib's alignment; it
/// matters for the recursive types), so a bar's value does not depend on the
/// periods of the bars before it.
///
/// # Parameters
///
/// - `min_period`, `max_period`: 2 ..= 10 000 (defaults 2 and 30), with
///   `min_period ≤ max_period`.
/// - `matype`: TA-Lib's moving-average number, 0 ..= 8 (default 0, SMA).
///
/// Inputs: pairs `(value, period)` ([`Next<(f64, f64)>`]); the batch forms
/// take the two columns. Through `&[Bar]` (and the catalog's `mavp`) the
/// period of a bar is read from its `volume` field.
///
/// The streaming form runs one moving average per period of
/// `min_period ..= max_period`; the column form only those the periods use.
///
/// Warm-up: [`MovingAverageType::lookback`] of `max_period` (29 with the
/// defaults).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::VariablePeriodMovingAverage;
///
/// let ma = VariablePeriodMovingAverage::new(2, 3, 0)?;
/// let out = ma.over_columns(&[1.0, 2.0, 3.0, 4.0], &[2.0, 2.0, 3.0, 2.9])?;
/// assert_eq!(out, vec![None, None, Some(2.0), Some(3.5)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MAVP")]
#[derive(Debug, Clone)]
pub struct VariablePeriodMovingAverage {
    min_period: usize,
    max_period: usize,
    kind: MovingAverageType,
    /// One moving average per period, `min_period` first.
    mas: Vec<AlignedMovingAverage>,
    ready: bool,
}

impl VariablePeriodMovingAverage {
    /// Default `(min_period, max_period, matype)` (TA-Lib's).
    pub const DEFAULTS: (usize, usize, usize) = (2, 30, 0);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000,
    /// `min_period > max_period` or a `matype` outside 0 ..= 8.
    pub fn new(min_period: usize, max_period: usize, matype: usize) -> Result<Self, CoreError> {
        let min_period = check_period("min_period", min_period, 2)?;
        let max_period = check_period("max_period", max_period, 2)?;
        if min_period > max_period {
            return Err(CoreError::param(
                "min_period",
                format!("must be at most max_period ({max_period}), got {min_period}"),
            ));
        }
        let kind = MovingAverageType::from_talib("matype", matype)?;
        let mas = (min_period..=max_period)
            .map(|p| Self::aligned(kind, p, max_period))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            min_period,
            max_period,
            kind,
            mas,
            ready: false,
        })
    }

    fn aligned(kind: MovingAverageType, period: usize, max_period: usize) -> Result<AlignedMovingAverage, CoreError> {
        Ok(AlignedMovingAverage::new(
            AnyMovingAverage::of_type(period, kind)?,
            kind.lookback(max_period),
        ))
    }

    /// `(min_period, max_period)`.
    pub fn periods(&self) -> (usize, usize) {
        (self.min_period, self.max_period)
    }

    /// The moving-average type.
    pub fn matype(&self) -> MovingAverageType {
        self.kind
    }

    /// TA-Lib's lookback (index of the first value).
    pub fn lookback(&self) -> usize {
        self.kind.lookback(self.max_period)
    }

    /// The period a bar's `period` input selects (TA-Lib truncates, then clamps).
    fn select(&self, period: f64) -> usize {
        // `as` saturates, as the clamp that follows needs.
        let p = period as i64;
        p.clamp(self.min_period as i64, self.max_period as i64) as usize
    }

    /// Column form: one value per input, `None` during warm-up; the same
    /// values as the streaming form, computing only the periods used.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, values: &[f64], periods: &[f64]) -> Result<Vec<Option<f64>>, CoreError> {
        check_same_len(&[("values", values.len()), ("periods", periods.len())])?;
        if values.is_empty() {
            return Err(empty_input());
        }
        for (i, (&v, &p)) in values.iter().zip(periods).enumerate() {
            check_value(i, v)?;
            check_value(i, p)?;
        }
        let chosen: Vec<usize> = periods.iter().map(|&p| self.select(p)).collect();
        let mut used = chosen.clone();
        used.sort_unstable();
        used.dedup();
        let mut out = vec![None; values.len()];
        for p in used {
            let mut ma = Self::aligned(self.kind, p, self.max_period)?;
            for (i, &v) in values.iter().enumerate() {
                let y = ma.next(v);
                if chosen[i] == p {
                    out[i] = y;
                }
            }
        }
        Ok(out)
    }

    /// Batch form over `bars`: the close, with the period read from the
    /// volume field.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<Vec<Option<f64>>, CoreError> {
        check_bars(bars)?;
        let values: Vec<f64> = bars.iter().map(|b| b.close).collect();
        let periods: Vec<f64> = bars.iter().map(|b| b.volume).collect();
        self.over_columns(&values, &periods)
    }
}

impl Default for VariablePeriodMovingAverage {
    fn default() -> Self {
        let (lo, hi, m) = Self::DEFAULTS;
        match Self::new(lo, hi, m) {
            Ok(ma) => ma,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for VariablePeriodMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.mas.iter_mut().for_each(AlignedMovingAverage::reset);
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<(f64, f64)> for VariablePeriodMovingAverage {
    /// Consumes `(value, period)`.
    fn next(&mut self, (x, period): (f64, f64)) -> Option<f64> {
        let k = self.select(period) - self.min_period;
        let mut out = None;
        for (j, ma) in self.mas.iter_mut().enumerate() {
            let y = ma.next(x);
            if j == k {
                out = y;
            }
        }
        self.ready |= out.is_some();
        out
    }
}

impl Next<&Bar> for VariablePeriodMovingAverage {
    /// Consumes the close, with the period in the volume field.
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        Next::<(f64, f64)>::next(self, (bar.close, bar.volume))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_equals_columns_and_errors() {
        let xs: Vec<f64> = (0..120).map(|i| (f64::from(i) * 0.21).cos() * 3.0 + 50.0).collect();
        let ps: Vec<f64> = (0..120).map(|i| f64::from((i * 7) % 23) - 2.5).collect();
        for matype in 0..=8 {
            let ma = VariablePeriodMovingAverage::new(3, 12, matype).unwrap();
            let batch = ma.over_columns(&xs, &ps).unwrap();
            let mut s = ma.clone();
            let streamed: Vec<Option<f64>> = xs.iter().zip(&ps).map(|(&x, &p)| s.next((x, p))).collect();
            assert_eq!(batch, streamed, "{matype}");
            assert_eq!(batch.iter().position(Option::is_some), Some(ma.lookback()));
        }
        assert!(VariablePeriodMovingAverage::new(5, 4, 0).is_err());
        assert!(VariablePeriodMovingAverage::new(1, 4, 0).is_err());
        assert!(VariablePeriodMovingAverage::new(2, 4, 9).is_err());
    }
}
