//! Relative strength index.

use crate::indicators::util::{TwoStep, ValueSource, check_bars, check_period, check_values};
use crate::indicators::{Indicator, Next};
use crate::{Bar, CoreError};

/// Wilder's relative strength index, as TA-Lib's `TA_RSI`.
///
/// # Formula
///
/// With `Δ_t = x_t − x_{t−1}`, the first average gain and loss are the plain
/// means of the positive and negative changes over the first `period`
/// changes; afterwards Wilder smoothing `avg = (avg · (period − 1) + v) / period`.
/// `RSI = 100 · gain / (gain + loss)`, and 0 when both are 0 (TA-Lib's
/// convention for a flat window).
///
/// Evaluation: the first smoothing step is TA-Lib 0.8's
/// `(avg · (period − 1) + v) · (1/period)`; from the second on, the same
/// recurrence `avg_t = β · avg_{t−1} + α · v_t` (`β = (period − 1)/period`,
/// `α = 1/period`) is taken two changes at a time,
/// `avg_t = β² · avg_{t−2} + (αβ · v_{t−1} + α · v_t)`, which halves the
/// dependency chain a batch waits on. Streaming and batch evaluate the same
/// expression and agree bit for bit; against TA-Lib the values differ by a
/// few units in the last place (see `docs/indicators.md`).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::RelativeStrengthIndex;
///
/// let rsi = RelativeStrengthIndex::new(2)?;
/// let out = rsi.over_values(&[1.0, 2.0, 1.5, 3.0])?;
/// assert_eq!(out[1], None);
/// assert!((out[2].unwrap() - 100.0 * 0.5 / 0.75).abs() < 1e-12);
///
/// // Column form: NaN during warm-up, as TA-Lib.
/// let col = rsi.over_column(&[1.0, 2.0, 1.5, 3.0])?;
/// assert!(col[1].is_nan());
/// assert_eq!(Some(col[2]), out[2]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "RSI")]
#[derive(Debug, Clone)]
pub struct RelativeStrengthIndex {
    period: usize,
    inv_period: f64,
    two: TwoStep,
    count: usize,
    prev: f64,
    /// Average gain and loss after the previous change.
    gain: f64,
    loss: f64,
    /// Average gain and loss one change earlier.
    gain2: f64,
    loss2: f64,
    /// Gain and loss of the previous change.
    last_gain: f64,
    last_loss: f64,
}

/// Gain and loss of one change, split without a branch (TA-Lib 0.8's way).
#[inline(always)]
fn split(diff: f64) -> (f64, f64) {
    let gain = if diff > 0.0 { diff } else { 0.0 };
    (gain, gain - diff)
}

impl RelativeStrengthIndex {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        let n = period.max(1) as f64;
        let inv_period = 1.0 / n;
        Self {
            period,
            inv_period,
            two: TwoStep::new((n - 1.0) / n, inv_period),
            count: 0,
            prev: 0.0,
            gain: 0.0,
            loss: 0.0,
            gain2: 0.0,
            loss2: 0.0,
            last_gain: 0.0,
            last_loss: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    #[inline(always)]
    fn value(gain: f64, loss: f64) -> f64 {
        let sum = gain + loss;
        if sum > 0.0 { 100.0 * (gain / sum) } else { 0.0 }
    }

    /// TA-Lib 0.8's smoothing step, used once, right after the seed.
    #[inline(always)]
    fn first_step(&self, avg: f64, v: f64) -> f64 {
        (avg * (self.period - 1) as f64 + v) * self.inv_period
    }

    /// Batch form over the closes of `bars`: one value per bar, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite price or
    /// volume in any bar.
    pub fn over(&self, bars: &[Bar]) -> Result<Vec<Option<f64>>, CoreError> {
        let (out, bad) = self.batch(bars, None, Some);
        if bars.is_empty() || bad != 0.0 {
            check_bars(bars)?;
        }
        Ok(out)
    }

    /// Batch form over any series of values: one value per input, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<Vec<Option<f64>>, CoreError> {
        let (out, bad) = self.batch(values, None, Some);
        if values.is_empty() || bad != 0.0 {
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
        let (out, bad) = self.batch(values, f64::NAN, |v| v);
        if values.is_empty() || bad != 0.0 {
            check_values(values)?;
        }
        Ok(out)
    }

    /// The batch computation: `none` for the warm-up, `put(value)` after it.
    /// Returns the output and the sum of the inputs' `nonfinite` flags (not
    /// 0 when an input is not finite). Built with `push` and `extend` from
    /// [`RsiTail`], an iterator holding the state: no zero-filled output to
    /// overwrite.
    #[inline(always)]
    fn batch<S: ValueSource, O: Clone>(&self, src: S, none: O, put: impl Fn(f64) -> O) -> (Vec<O>, f64) {
        let (n, p) = (src.len(), self.period);
        let mut out = Vec::with_capacity(n);
        let (mut gain2, mut loss2, mut bad, mut prev) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..=p.min(n.saturating_sub(1)) {
            let Some((x, z)) = src.at(i) else { break };
            bad += z;
            if i > 0 {
                let (g, l) = split(x - prev);
                gain2 += g;
                loss2 += l;
            }
            prev = x;
            if i < p {
                out.push(none.clone());
            }
        }
        if n <= p {
            return (out, bad);
        }
        gain2 *= self.inv_period;
        loss2 *= self.inv_period;
        out.push(put(Self::value(gain2, loss2)));
        let Some((x, z)) = src.at(p + 1) else {
            return (out, bad);
        };
        let (g1, l1) = split(x - prev);
        let gain1 = self.first_step(gain2, g1);
        let loss1 = self.first_step(loss2, l1);
        out.push(put(Self::value(gain1, loss1)));
        // NaN until the iterator reports at its end.
        let mut report = f64::NAN;
        out.extend(RsiTail {
            src,
            i: p + 2,
            prev: x,
            gain2,
            loss2,
            gain1,
            loss1,
            g1,
            l1,
            two: self.two,
            bad: bad + z,
            put,
            report: &mut report,
        });
        (out, report)
    }
}

/// The batch loop after the first smoothing step, as an iterator holding the
/// state. Moved into `Vec::extend`, its state stays in registers (measured
/// faster than a loop of `push`, a borrowed iterator or a pre-filled
/// vector); it writes its sum of flags to `report` when it runs out (`report`
/// starts as NaN, so a missing report only triggers the exact input check).
#[derive(Debug)]
struct RsiTail<'r, S, P> {
    src: S,
    i: usize,
    prev: f64,
    gain2: f64,
    loss2: f64,
    gain1: f64,
    loss1: f64,
    g1: f64,
    l1: f64,
    two: TwoStep,
    bad: f64,
    put: P,
    report: &'r mut f64,
}

impl<S: ValueSource, O, P: Fn(f64) -> O> Iterator for RsiTail<'_, S, P> {
    type Item = O;

    #[inline(always)]
    fn next(&mut self) -> Option<O> {
        let Some((x, z)) = self.src.at(self.i) else {
            *self.report = self.bad;
            return None;
        };
        self.i += 1;
        self.bad += z;
        let (g0, l0) = split(x - self.prev);
        self.prev = x;
        let gain0 = self.two.step(self.gain2, self.g1, g0);
        let loss0 = self.two.step(self.loss2, self.l1, l0);
        (self.gain2, self.loss2, self.gain1, self.loss1) = (self.gain1, self.loss1, gain0, loss0);
        (self.g1, self.l1) = (g0, l0);
        Some((self.put)(RelativeStrengthIndex::value(gain0, loss0)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.src.len().saturating_sub(self.i);
        (left, Some(left))
    }
}

impl Default for RelativeStrengthIndex {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for RelativeStrengthIndex {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.period
    }
}

impl Next<f64> for RelativeStrengthIndex {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        let idx = self.count;
        if idx == 0 {
            self.count = 1;
            self.prev = x;
            return None;
        }
        let (g, l) = split(x - self.prev);
        self.prev = x;
        if idx <= self.period {
            self.count += 1;
            self.gain += g;
            self.loss += l;
            if idx < self.period {
                return None;
            }
            self.gain *= self.inv_period;
            self.loss *= self.inv_period;
            return Some(Self::value(self.gain, self.loss));
        }
        let (gain, loss) = if idx == self.period + 1 {
            // `count` stops at `period + 2`: it only tells the two first steps apart.
            self.count += 1;
            (self.first_step(self.gain, g), self.first_step(self.loss, l))
        } else {
            (
                self.two.step(self.gain2, self.last_gain, g),
                self.two.step(self.loss2, self.last_loss, l),
            )
        };
        (self.gain2, self.loss2) = (self.gain, self.loss);
        (self.gain, self.loss) = (gain, loss);
        (self.last_gain, self.last_loss) = (g, l);
        Some(Self::value(gain, loss))
    }
}

impl Next<&Bar> for RelativeStrengthIndex {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        Next::<f64>::next(self, bar.close)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_series_is_zero() {
        let rsi = RelativeStrengthIndex::new(3).unwrap();
        let out = rsi.over_values(&[5.0; 6]).unwrap();
        assert_eq!(out[3], Some(0.0));
        assert!(RelativeStrengthIndex::new(1).is_err());
    }

    #[test]
    fn column_equals_streaming() {
        let xs: Vec<f64> = (0..60).map(|i| 100.0 + ((i * 7919) % 13) as f64 - 6.0).collect();
        for period in [2, 3, 10, 57, 58, 59, 60, 61] {
            let rsi = RelativeStrengthIndex::new(period).unwrap();
            let mut s = rsi.clone();
            let streamed: Vec<Option<f64>> = xs.iter().map(|&x| s.next(x)).collect();
            let col = rsi.over_column(&xs).unwrap();
            assert_eq!(col.len(), xs.len());
            for (c, v) in col.iter().zip(&streamed) {
                match v {
                    Some(v) => assert_eq!(c.to_bits(), v.to_bits(), "period {period}"),
                    None => assert!(c.is_nan(), "period {period}"),
                }
            }
            assert_eq!(rsi.over_values(&xs).unwrap(), streamed);
        }
        let rsi = RelativeStrengthIndex::new(3).unwrap();
        assert!(rsi.over_column(&[]).is_err());
        assert!(rsi.over_column(&[1.0, f64::INFINITY]).is_err());
    }
}
