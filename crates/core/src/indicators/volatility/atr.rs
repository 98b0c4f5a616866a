//! Average true range.

use crate::indicators::util::{
    HlcSource, TwoStep, check_bars, check_period, check_same_len, check_values, nonfinite, true_range,
};
use crate::indicators::{Indicator, Next};
use crate::{Bar, CoreError};

/// Wilder's average true range, as TA-Lib's `TA_ATR`.
///
/// # Formula
///
/// `TR_t = max(high_t − low_t, |close_{t−1} − high_t|, |close_{t−1} − low_t|)`
/// (from the second bar). The first ATR, at bar `period`, is the mean of
/// `TR_1 … TR_period`; then `ATR_t = (ATR_{t−1} · (period − 1) + TR_t) / period`,
/// evaluated as TA-Lib 0.8 does: `β = (period − 1)/period`, `α = 1 − β`,
/// `ATR_t = fma(β, ATR_{t−1}, α · TR_t)` for the first step. From the second
/// step on, the same recurrence is taken two bars at a time,
/// `ATR_t = β² · ATR_{t−2} + (αβ · TR_{t−1} + α · TR_t)` (`β²`, `αβ` rounded
/// once), which halves the dependency chain a batch waits on and needs no
/// fused multiply-add (a library call on targets without FMA). Streaming and
/// batch evaluate the same expression and agree bit for bit; against
/// `TA_ATR` the values differ by a few units in the last place (see
/// `docs/indicators.md`).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 14). Period 1 is the true range itself.
///
/// Warm-up: the first value is at index `period`.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::AverageTrueRange;
///
/// let bar = |h: f64, l: f64, c: f64| Bar { time: 0, open: c, high: h, low: l, close: c, volume: 0.0 };
/// let bars = [bar(11.0, 9.0, 10.0), bar(12.0, 10.0, 11.0), bar(15.0, 12.0, 14.0)];
/// let atr = AverageTrueRange::new(2)?.over(&bars)?;
/// assert_eq!(atr, vec![None, None, Some(3.0)]); // mean of TR 2 and 4
///
/// // Column form over high, low and close: NaN during warm-up, as TA-Lib.
/// let col = AverageTrueRange::new(2)?.over_columns(&[11.0, 12.0, 15.0], &[9.0, 10.0, 12.0], &[10.0, 11.0, 14.0])?;
/// assert!(col[1].is_nan());
/// assert_eq!(col[2], 3.0);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "ATR")]
#[derive(Debug, Clone)]
pub struct AverageTrueRange {
    period: usize,
    weights: WilderWeights,
    two: TwoStep,
    count: usize,
    prev_close: f64,
    sum: f64,
    /// ATR after the previous bar.
    value: f64,
    /// ATR one bar earlier.
    value2: f64,
    /// True range of the previous bar.
    last_tr: f64,
}

/// Wilder smoothing `v = (v · (n − 1) + x) / n` in TA-Lib 0.8's two-coefficient
/// form: `β = (n − 1)/n`, `α = 1 − β`, `v = fma(β, v, α · x)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WilderWeights {
    pub(crate) alpha: f64,
    pub(crate) beta: f64,
}

impl WilderWeights {
    pub(crate) fn new(period: usize) -> Self {
        let beta = (period.max(1) - 1) as f64 / period.max(1) as f64;
        Self {
            alpha: 1.0 - beta,
            beta,
        }
    }

    #[inline]
    pub(crate) fn step(self, prev: f64, x: f64) -> f64 {
        self.beta.mul_add(prev, self.alpha * x)
    }
}

impl AverageTrueRange {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self::unchecked(period))
    }

    pub(crate) fn unchecked(period: usize) -> Self {
        let weights = WilderWeights::new(period);
        Self {
            period,
            weights,
            two: TwoStep::new(weights.beta, weights.alpha),
            count: 0,
            prev_close: 0.0,
            sum: 0.0,
            value: 0.0,
            value2: 0.0,
            last_tr: 0.0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// Batch form: one value per bar, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite price or
    /// volume in any bar.
    pub fn over(&self, bars: &[Bar]) -> Result<Vec<Option<f64>>, CoreError> {
        let (out, bad) = self.batch(bars, None, Some);
        if bad != 0.0 || bars.len() < self.period + 2 {
            check_bars(bars)?;
        }
        Ok(out)
    }

    /// Column form, TA-Lib's shape: the high, low and close columns of one
    /// series in, one `f64` per bar out, NaN during warm-up; the same values
    /// as [`over`](Self::over).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on columns of different lengths, an empty
    /// series or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64], close: &[f64]) -> Result<Vec<f64>, CoreError> {
        check_same_len(&[("high", high.len()), ("low", low.len()), ("close", close.len())])?;
        // Same length, and visibly so to the optimiser: one bounds check per bar.
        let n = close.len();
        let (h, l) = (high.get(..n).unwrap_or(high), low.get(..n).unwrap_or(low));
        let (out, bad) = self.batch((h, l, close), f64::NAN, |v| v);
        // The true ranges cover every high and low but the first and every
        // close but the last.
        let edges = [high.first(), low.first(), close.last()];
        let bad = bad + edges.into_iter().flatten().map(|&x| nonfinite(x)).sum::<f64>();
        if bad != 0.0 || close.len() < self.period + 2 {
            check_values(high)?;
            check_values(low)?;
            check_values(close)?;
        }
        Ok(out)
    }

    /// The batch computation: `none` for the warm-up, `put(value)` after it.
    ///
    /// Returns the output and a value that is not zero when a high or low
    /// after the first bar, or a close before the last, is not finite (or a
    /// bar's flag is set): the flags of [`atr_true_range`] and of the source,
    /// plus the last two outputs minus themselves (a non-finite true range
    /// leaves its chain non-finite to the end). Series shorter than
    /// `period + 2` must be checked by the caller. Built with `push` and
    /// `extend` from [`AtrTail`], an iterator holding the state, as RSI's.
    #[inline(always)]
    fn batch<S: HlcSource, O: Clone>(&self, src: S, none: O, put: impl Fn(f64) -> O) -> (Vec<O>, f64) {
        let (n, p) = (src.len(), self.period);
        let mut out = Vec::with_capacity(n);
        let Some((_, _, c0, z0)) = src.at(0) else {
            return (out, 0.0);
        };
        out.push(none.clone());
        let (mut prev_close, mut sum, mut bad) = (c0, 0.0, z0);
        for i in 1..=p.min(n.saturating_sub(1)) {
            let Some((h, l, c, z)) = src.at(i) else { break };
            let (tr, trz) = atr_true_range(h, l, prev_close);
            sum += tr;
            bad += z + trz;
            prev_close = c;
            if i < p {
                out.push(none.clone());
            }
        }
        if n <= p || p == 0 {
            return (out, bad);
        }
        let a2 = sum / p as f64;
        out.push(put(a2));
        let Some((h, l, c, z)) = src.at(p + 1) else {
            return (out, bad);
        };
        let (tr1, trz) = atr_true_range(h, l, prev_close);
        let a1 = self.weights.step(a2, tr1);
        out.push(put(a1));
        // NaN until the iterator reports at its end.
        let mut report = f64::NAN;
        out.extend(AtrTail {
            src,
            i: p + 2,
            prev_close: c,
            a2,
            a1,
            tr1,
            two: self.two,
            bad: bad + z + trz,
            put,
            report: &mut report,
        });
        (out, report)
    }
}

/// The batch loop after the first smoothing step, as an iterator holding the
/// state (see RSI's `RsiTail`); when it runs out it writes to `report`
/// its sum of flags plus the last two ATRs minus themselves.
#[derive(Debug)]
struct AtrTail<'r, S, P> {
    src: S,
    i: usize,
    prev_close: f64,
    a2: f64,
    a1: f64,
    tr1: f64,
    two: TwoStep,
    bad: f64,
    put: P,
    report: &'r mut f64,
}

impl<S: HlcSource, O, P: Fn(f64) -> O> Iterator for AtrTail<'_, S, P> {
    type Item = O;

    #[inline(always)]
    fn next(&mut self) -> Option<O> {
        let Some((h, l, c, z)) = self.src.at(self.i) else {
            let ends = self.a1 + self.a2;
            *self.report = self.bad + nonfinite(ends);
            return None;
        };
        self.i += 1;
        let (tr0, trz) = atr_true_range(h, l, self.prev_close);
        self.bad += z + trz;
        self.prev_close = c;
        let a0 = self.two.step(self.a2, self.tr1, tr0);
        (self.a2, self.a1, self.tr1) = (self.a1, a0, tr0);
        Some((self.put)(a0))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.src.len().saturating_sub(self.i);
        (left, Some(left))
    }
}

/// The true range as ATR computes it: equal, bit for bit, to
/// [`true_range`] (TA-Lib's three-way comparison) on finite values, in three
/// operations instead of seven: when `high >= low`, the largest of
/// `high − low`, `|prev − high|` and `|prev − low|` is
/// `max(high, prev) − min(low, prev)`, the very same subtraction of the same
/// two operands (rounding is monotonic, so the order of the candidates is
/// kept). A bar with `high < low`, or a NaN high or low, takes TA-Lib's form.
///
/// The second value is ±0 when nothing is wrong and non-zero (NaN) when a
/// value is not finite, in the rare form; in the usual form a NaN or infinite
/// `prev_close`, `high` or `low` makes the true range itself NaN or infinite
/// (the comparisons are written so that a NaN `prev_close` wins), which then
/// reaches every later ATR of its chain, so batch loops only look at the
/// last outputs.
#[inline(always)]
fn atr_true_range(high: f64, low: f64, prev_close: f64) -> (f64, f64) {
    if high >= low {
        let top = if high > prev_close { high } else { prev_close };
        let bottom = if low < prev_close { low } else { prev_close };
        // −0 is the neutral of addition, so the flag sum folds away here.
        (top - bottom, -0.0)
    } else {
        let s = (high - low) + (prev_close - high);
        (true_range(high, low, prev_close), nonfinite(s))
    }
}

impl Default for AverageTrueRange {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for AverageTrueRange {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.period
    }
}

impl Next<&Bar> for AverageTrueRange {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let idx = self.count;
        if idx == 0 {
            self.count = 1;
            self.prev_close = bar.close;
            return None;
        }
        let (tr, _) = atr_true_range(bar.high, bar.low, self.prev_close);
        self.prev_close = bar.close;
        if idx <= self.period {
            self.count += 1;
            self.sum += tr;
            if idx < self.period {
                return None;
            }
            self.value = self.sum / self.period as f64;
            return Some(self.value);
        }
        let atr = if idx == self.period + 1 {
            // `count` stops at `period + 2`: it only tells the two first steps apart.
            self.count += 1;
            self.weights.step(self.value, tr)
        } else {
            self.two.step(self.value2, self.last_tr, tr)
        };
        self.value2 = self.value;
        self.value = atr;
        self.last_tr = tr;
        Some(atr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_one_is_true_range() {
        let bar = |h: f64, l: f64, c: f64| Bar {
            time: 0,
            open: c,
            high: h,
            low: l,
            close: c,
            volume: 0.0,
        };
        let bars = [bar(11.0, 9.0, 10.0), bar(12.0, 10.0, 11.0), bar(15.0, 12.0, 14.0)];
        let out = AverageTrueRange::new(1).unwrap().over(&bars).unwrap();
        assert_eq!(out, vec![None, Some(2.0), Some(4.0)]);
        assert!(AverageTrueRange::new(0).is_err());
    }

    #[test]
    fn columns_equal_streaming() {
        let bars: Vec<Bar> = (0..60)
            .map(|i| {
                let c = 100.0 + ((i * 7919) % 13) as f64 - 6.0;
                Bar {
                    time: i,
                    open: c,
                    high: c + ((i * 31) % 5) as f64,
                    low: c - ((i * 17) % 4) as f64,
                    close: c,
                    volume: 1.0,
                }
            })
            .collect();
        let high: Vec<f64> = bars.iter().map(|b| b.high).collect();
        let low: Vec<f64> = bars.iter().map(|b| b.low).collect();
        let close: Vec<f64> = bars.iter().map(|b| b.close).collect();
        for period in [1, 2, 3, 14, 57, 58, 59, 60, 61] {
            let atr = AverageTrueRange::new(period).unwrap();
            let mut s = atr.clone();
            let streamed: Vec<Option<f64>> = bars.iter().map(|b| s.next(b)).collect();
            let col = atr.over_columns(&high, &low, &close).unwrap();
            assert_eq!(col.len(), bars.len());
            for (c, v) in col.iter().zip(&streamed) {
                match v {
                    Some(v) => assert_eq!(c.to_bits(), v.to_bits(), "period {period}"),
                    None => assert!(c.is_nan(), "period {period}"),
                }
            }
            assert_eq!(atr.over(&bars).unwrap(), streamed);
        }
        let atr = AverageTrueRange::new(3).unwrap();
        assert!(atr.over_columns(&high, &low[1..], &close).is_err());
        assert!(atr.over_columns(&[], &[], &[]).is_err());
        assert!(atr.over_columns(&[1.0], &[f64::NAN], &[1.0]).is_err());
    }
}
