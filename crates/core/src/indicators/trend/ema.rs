//! Exponential moving average.

use crate::indicators::util::{TwoStep, check_bars, check_period, check_values, nonfinite, nonfinite_bar};
use crate::indicators::{Indicator, Next};
use crate::{Bar, CoreError};

/// Exponential moving average, seeded TA-Lib's way with the simple average
/// of the first `period` values.
///
/// # Formula
///
/// `k = 2 / (period + 1)`, `β = 1 − k`; `EMA_{period-1} = SMA(first period values)`;
/// then `EMA_t = EMA_{t-1} + k · (x_t − EMA_{t-1})` (TA-Lib's `TA_EMA`).
///
/// Evaluation: the first step after the seed is `(x − EMA) · k + EMA`; from
/// the second on, the same recurrence is taken two bars at a time,
/// `EMA_t = β² · EMA_{t−2} + (kβ · x_{t−1} + k · x_t)` (`β²` and `kβ` rounded
/// once at construction), which is algebraically identical and halves the
/// dependency chain a batch has to wait on. Streaming and batch evaluate the
/// same expression, so they agree bit for bit; against TA-Lib 0.8 (which
/// fuses the multiply-add) the results differ by a few units in the last
/// place (see `docs/indicators.md`).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30, TA-Lib's).
///
/// Warm-up: the first value is at index `period - 1` (`TA_EMA`).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{ExponentialMovingAverage, Next};
///
/// let mut ema = ExponentialMovingAverage::new(3)?;
/// assert_eq!(ema.next(1.0), None);
/// assert_eq!(ema.next(2.0), None);
/// assert_eq!(ema.next(3.0), Some(2.0)); // seed: SMA of 1, 2, 3
/// assert_eq!(ema.next(6.0), Some(4.0)); // (6 - 2) · 0.5 + 2
///
/// // Column form: NaN during warm-up, as TA-Lib.
/// let col = ema.over_column(&[1.0, 2.0, 3.0, 6.0])?;
/// assert!(col[1].is_nan());
/// assert_eq!(col[3], 4.0);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "EMA")]
#[derive(Debug, Clone)]
pub struct ExponentialMovingAverage {
    period: usize,
    k: f64,
    two: TwoStep,
    count: usize,
    seed_sum: f64,
    /// EMA of the previous input.
    value: f64,
    /// EMA of the input before that.
    value2: f64,
    /// The previous input.
    prev_x: f64,
    /// TA-Lib 0.8's fused one-step form in `next` (MACD's signal line, which
    /// stays bit-identical to TA-Lib); such an EMA is never run in batch.
    fused: bool,
}

impl ExponentialMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds an EMA over `period` values.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self::unchecked(period))
    }

    /// Builds without checking `period` (callers pass a checked or constant period).
    pub(crate) fn unchecked(period: usize) -> Self {
        let k = 2.0 / (period + 1) as f64;
        Self {
            period,
            k,
            two: TwoStep::new(1.0 - k, k),
            count: 0,
            seed_sum: 0.0,
            value: 0.0,
            value2: 0.0,
            prev_x: 0.0,
            fused: false,
        }
    }

    /// An EMA whose streaming step is TA-Lib 0.8's fused
    /// `fma(x − EMA, k, EMA)` (see the `fused` field); for MACD's signal line.
    pub(crate) fn unchecked_fused(period: usize) -> Self {
        Self {
            fused: true,
            ..Self::unchecked(period)
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// TA-Lib 0.8's fused step `fma(x − EMA, k, EMA)`, used by MACD and Keltner.
    #[inline]
    pub(crate) fn step(value: f64, x: f64, k: f64) -> f64 {
        (x - value).mul_add(k, value)
    }

    /// The first step after the seed, `(x − EMA) · k + EMA`.
    #[inline(always)]
    fn first_step(value: f64, x: f64, k: f64) -> f64 {
        (x - value) * k + value
    }

    /// Batch form over the closes of `bars`: one value per bar, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite price or
    /// volume in any bar.
    pub fn over(&self, bars: &[Bar]) -> Result<Vec<Option<f64>>, CoreError> {
        let mut out = vec![None; bars.len()];
        let mut bad = 0.0;
        let get = |b: &Bar| {
            bad += nonfinite_bar(b);
            b.close
        };
        self.run(bars, &mut out, get, Some);
        if bad != 0.0 || bars.len() < self.period {
            check_bars(bars)?;
        }
        Ok(out)
    }

    /// Batch form over any series of values: one value per input, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<Vec<Option<f64>>, CoreError> {
        let mut out = vec![None; values.len()];
        let mut bad = 0.0;
        let get = |&x: &f64| {
            bad += nonfinite(x);
            x
        };
        self.run(values, &mut out, get, Some);
        if bad != 0.0 || values.len() < self.period {
            check_values(values)?;
        }
        Ok(out)
    }

    /// Column form, TA-Lib's shape: one `f64` per input, NaN during warm-up;
    /// the same values as [`over_values`](Self::over_values).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_column(&self, values: &[f64]) -> Result<Vec<f64>, CoreError> {
        let mut out = vec![0.0; values.len()];
        let warm = (self.period - 1).min(values.len());
        out[..warm].fill(f64::NAN);
        let mut bad = 0.0;
        let get = |&x: &f64| {
            bad += nonfinite(x);
            x
        };
        self.run(values, &mut out, get, |v| v);
        if bad != 0.0 || values.len() < self.period {
            check_values(values)?;
        }
        Ok(out)
    }

    /// The batch loop, state in locals, writing into `out` (as long as
    /// `input`): `get` reads an input (every input once when there are at
    /// least `period`; shorter series are checked by the caller), `put` makes
    /// an output slot. Slots before `period - 1` are left as they are.
    ///
    /// Unlike RSI and ATR, whose batch loops extend a vector from an
    /// iterator, the EMA's loop measured fastest writing into a pre-filled
    /// vector.
    #[inline(always)]
    fn run<T, O>(&self, input: &[T], out: &mut [O], mut get: impl FnMut(&T) -> f64, put: impl Fn(f64) -> O) {
        let p = self.period;
        if p == 0 || input.len() < p || out.len() < input.len() {
            return;
        }
        let (seed, rest) = input.split_at(p);
        let (out_seed, out_rest) = out.split_at_mut(p);
        let mut sum = 0.0;
        for x in seed {
            sum += get(x);
        }
        let mut e2 = sum / p as f64;
        if let Some(slot) = out_seed.last_mut() {
            *slot = put(e2);
        }
        let (Some((first, rest)), Some((first_slot, out_rest))) = (rest.split_first(), out_rest.split_first_mut())
        else {
            return;
        };
        let mut x1 = get(first);
        let mut e1 = Self::first_step(e2, x1, self.k);
        *first_slot = put(e1);
        let two = self.two;
        for (x, slot) in rest.iter().zip(out_rest) {
            let x0 = get(x);
            let e0 = two.step(e2, x1, x0);
            *slot = put(e0);
            (e2, e1, x1) = (e1, e0, x0);
        }
    }
}

impl Default for ExponentialMovingAverage {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for ExponentialMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self {
            fused: self.fused,
            ..Self::unchecked(self.period)
        };
    }

    fn is_ready(&self) -> bool {
        self.count >= self.period
    }
}

impl Next<f64> for ExponentialMovingAverage {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        if self.count < self.period {
            self.count += 1;
            self.seed_sum += x;
            if self.count < self.period {
                return None;
            }
            self.value = self.seed_sum / self.period as f64;
            return Some(self.value);
        }
        let e = if self.fused {
            Self::step(self.value, x, self.k)
        } else if self.count == self.period {
            // `count` stops at `period + 1`: it only tells the two first steps apart.
            self.count += 1;
            Self::first_step(self.value, x, self.k)
        } else {
            self.two.step(self.value2, self.prev_x, x)
        };
        self.value2 = self.value;
        self.value = e;
        self.prev_x = x;
        Some(e)
    }
}

impl Next<&Bar> for ExponentialMovingAverage {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        Next::<f64>::next(self, bar.close)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_with_sma() {
        let ema = ExponentialMovingAverage::new(2).unwrap();
        let out = ema.over_values(&[1.0, 3.0, 6.0]).unwrap();
        // k = 2/3: seed 2, then (6 - 2) * 2/3 + 2
        assert_eq!(out[0], None);
        assert_eq!(out[1], Some(2.0));
        assert!((out[2].unwrap() - (2.0 + 8.0 / 3.0)).abs() < 1e-12);
        assert!(ExponentialMovingAverage::new(0).is_err());
    }

    #[test]
    fn column_equals_streaming() {
        let xs: Vec<f64> = (0..50).map(|i| 100.0 + ((i * 7919) % 13) as f64 - 6.0).collect();
        for period in [1, 2, 3, 10, 49, 50, 51] {
            let ema = ExponentialMovingAverage::new(period).unwrap();
            let mut s = ema.clone();
            let streamed: Vec<Option<f64>> = xs.iter().map(|&x| s.next(x)).collect();
            let col = ema.over_column(&xs).unwrap();
            assert_eq!(col.len(), xs.len());
            for (c, v) in col.iter().zip(&streamed) {
                match v {
                    Some(v) => assert_eq!(c.to_bits(), v.to_bits(), "period {period}"),
                    None => assert!(c.is_nan(), "period {period}"),
                }
            }
            assert_eq!(ema.over_values(&xs).unwrap(), streamed);
        }
        let ema = ExponentialMovingAverage::new(3).unwrap();
        assert!(ema.over_column(&[]).is_err());
        assert!(ema.over_column(&[1.0, f64::NAN]).is_err());
    }
}
