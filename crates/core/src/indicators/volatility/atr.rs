//! Average true range.

use crate::indicators::util::{
    HlcSource, Quad, Unrolled, check_bars, check_period, check_same_len, check_values, nonfinite, true_range,
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
/// `ATR_t = fma(β, ATR_{t−1}, α · TR_t)` for the first step. After it the
/// same recurrence is unrolled so that a batch does not wait on one long
/// chain of operations (and needs no fused multiply-add, a library call on
/// targets without FMA). With `u_t = αβ · TR_{t−1} + α · TR_t`:
///
/// - the next two ATRs are `ATR_t = β² · ATR_{t−2} + u_t`;
/// - every later one is `ATR_t = β⁴ · ATR_{t−4} + (β² · u_{t−2} + u_t)`
///   (`β²`, `β⁴` and `αβ` rounded once),
///
/// so a batch computes four ATRs at a time, each from its own chain.
/// Streaming and batch evaluate the same expressions and agree bit for
/// bit; against `TA_ATR` the values differ by a few units in the last place
/// (see `docs/indicators.md`).
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
    unrolled: Unrolled,
    /// Bars seen, counted up to `period + 4` (it only tells the steps apart).
    count: usize,
    prev_close: f64,
    sum: f64,
    /// The last four ATRs, oldest first.
    recent: [f64; 4],
    /// `u` of the previous bar and of the one before it.
    u1: f64,
    u2: f64,
    /// True range of the previous bar.
    tr1: f64,
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
            unrolled: Unrolled::new(weights.beta, weights.alpha),
            count: 0,
            prev_close: 0.0,
            sum: 0.0,
            recent: [0.0; 4],
            u1: 0.0,
            u2: 0.0,
            tr1: 0.0,
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
        let (out, bad) = self.batch(bars, None, Some, |o| o.unwrap_or(f64::NAN));
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
        let (out, bad) = self.batch((high, low, close), f64::NAN, |v| v, |&v| v);
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

    /// One bar: the ATR (`None` during warm-up) and the flag of the true
    /// range (see [`atr_true_range`]). Streaming and the scalar ends of a
    /// batch both go through here.
    #[inline(always)]
    fn step(&mut self, high: f64, low: f64, close: f64) -> (Option<f64>, f64) {
        let idx = self.count;
        if idx == 0 {
            self.count = 1;
            self.prev_close = close;
            return (None, -0.0);
        }
        let (tr, trz) = atr_true_range(high, low, self.prev_close);
        self.prev_close = close;
        let p = self.period;
        if idx <= p {
            self.count += 1;
            self.sum += tr;
            if idx < p {
                return (None, trz);
            }
            let atr = self.sum / p as f64;
            self.push(atr, tr);
            return (Some(atr), trz);
        }
        let atr = if idx == p + 1 {
            self.weights.step(self.recent[3], tr)
        } else {
            let u = self.unrolled.u(self.tr1, tr);
            let atr = if idx < p + 4 {
                self.unrolled.two(self.recent[2], u)
            } else {
                self.unrolled.four(self.recent[0], self.u2, u)
            };
            (self.u2, self.u1) = (self.u1, u);
            atr
        };
        self.count = (idx + 1).min(p + 4);
        self.push(atr, tr);
        (Some(atr), trz)
    }

    #[inline(always)]
    fn push(&mut self, atr: f64, tr: f64) {
        let r = self.recent;
        self.recent = [r[1], r[2], r[3], atr];
        self.tr1 = tr;
    }

    /// The batch computation: `none` for the warm-up, `put(value)` after it
    /// (`back` reads a value back from an output).
    ///
    /// Returns the output and a value that is not zero when a high or low
    /// after the first bar, or a close before the last, is not finite (or a
    /// bar's flag is set): the flags of [`atr_true_range`] and of the source,
    /// plus the last ATR minus itself (a non-finite true range leaves every
    /// later ATR non-finite: it enters all four chains within four bars).
    /// Series shorter than `period + 2` must be checked by the caller.
    ///
    /// The bars up to the first multiple of four at or after `period + 4`
    /// and the last `len % 4` go through [`step`](Self::step); the rest, in
    /// groups of four (`HlcSource::quads`), through one closure that owns
    /// the state: four ATRs per call, each from the ATR four bars before,
    /// written straight into an output of `[O; 4]` groups.
    #[inline(always)]
    fn batch<S: HlcSource, O: Copy>(
        &self,
        src: S,
        none: O,
        put: impl Fn(f64) -> O,
        back: impl Fn(&O) -> f64,
    ) -> (Vec<O>, f64) {
        let (n, p) = (src.len(), self.period);
        let mut state = Self::unchecked(p);
        let mut bad = -0.0;
        let mut one = |st: &mut Self, i: usize| {
            let (h, l, c, z) = src.at(i)?;
            let (v, trz) = st.step(h, l, c);
            bad += z + trz;
            Some(v.map_or(none, &put))
        };
        let head = (p + 4).next_multiple_of(4);
        let last = |out: &[O]| out.last().map_or(0.0, |o| nonfinite(back(o)));
        if n < head + 4 {
            let out: Vec<O> = (0..n).map_while(|i| one(&mut state, i)).collect();
            let last = last(&out);
            return (out, bad + last);
        }
        let mut groups: Vec<[O; 4]> = Vec::with_capacity(n.div_ceil(4));
        for g in 0..head / 4 {
            let mut four = [none; 4];
            for (k, slot) in four.iter_mut().enumerate() {
                *slot = one(&mut state, 4 * g + k).unwrap_or(none);
            }
            groups.push(four);
        }
        let k = self.unrolled;
        let mut flags = -0.0;
        {
            let flags = &mut flags;
            let put = &put;
            let (mut prev_close, mut recent, mut u2, mut u1, mut tr1) =
                (state.prev_close, state.recent, state.u2, state.u1, state.tr1);
            groups.extend(src.quads(head).map(move |q: Quad| {
                let prev = [prev_close, q.close[0], q.close[1], q.close[2]];
                let plain = (q.high[0] >= q.low[0])
                    & (q.high[1] >= q.low[1])
                    & (q.high[2] >= q.low[2])
                    & (q.high[3] >= q.low[3])
                    & (q.flag == 0.0);
                let mut tr = [0.0; 4];
                if plain {
                    for j in 0..4 {
                        tr[j] = plain_true_range(q.high[j], q.low[j], prev[j]);
                    }
                } else {
                    let mut flag = q.flag;
                    for j in 0..4 {
                        let (t, z) = atr_true_range(q.high[j], q.low[j], prev[j]);
                        tr[j] = t;
                        flag += z;
                    }
                    *flags += flag;
                }
                let u = [k.u(tr1, tr[0]), k.u(tr[0], tr[1]), k.u(tr[1], tr[2]), k.u(tr[2], tr[3])];
                let atr = [
                    k.four(recent[0], u2, u[0]),
                    k.four(recent[1], u1, u[1]),
                    k.four(recent[2], u[0], u[2]),
                    k.four(recent[3], u[1], u[3]),
                ];
                (prev_close, recent, u2, u1, tr1) = (q.close[3], atr, u[2], u[3], tr[3]);
                atr.map(put)
            }));
        }
        let mut out = groups.into_flattened();
        let done = out.len();
        // The state after the groups, from the outputs and the source (the
        // same operations on the same values, so the same bits).
        if let [.., a, b, c, d] = out[..] {
            state.recent = [back(&a), back(&b), back(&c), back(&d)];
        }
        let tr_at = |i: usize| {
            let (h, l, _, _) = src.at(i).unwrap_or_default();
            let (_, _, c, _) = src.at(i - 1).unwrap_or_default();
            atr_true_range(h, l, c).0
        };
        let (t3, t2, t1) = (tr_at(done - 3), tr_at(done - 2), tr_at(done - 1));
        state.u2 = k.u(t3, t2);
        state.u1 = k.u(t2, t1);
        state.tr1 = t1;
        state.prev_close = src.at(done - 1).map_or(f64::NAN, |(_, _, c, _)| c);
        out.extend((done..n).map_while(|i| one(&mut state, i)));
        let last = last(&out);
        (out, bad + flags + last)
    }
}

/// The true range of a bar whose high is at least its low (neither NaN):
/// `max(high, prev) − min(low, prev)`, written so that a NaN `prev` wins.
#[inline(always)]
fn plain_true_range(high: f64, low: f64, prev_close: f64) -> f64 {
    let top = if high > prev_close { high } else { prev_close };
    let bottom = if low < prev_close { low } else { prev_close };
    top - bottom
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
/// reaches every later ATR, so batch loops only look at the last output.
#[inline(always)]
fn atr_true_range(high: f64, low: f64, prev_close: f64) -> (f64, f64) {
    if high >= low {
        // −0 is the neutral of addition, so the flag sum folds away here.
        (plain_true_range(high, low, prev_close), -0.0)
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
        self.step(bar.high, bar.low, bar.close).0
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

    /// Bars with wide ranges, some with the high below the low (TA-Lib's
    /// three-way form), close at either end of the range now and then.
    fn odd_bars(n: usize) -> Vec<Bar> {
        (0..n)
            .map(|i| {
                let c = 100.0 + ((i * 7919) % 17) as f64 - 8.0;
                let (mut high, mut low) = (c + ((i * 31) % 5) as f64, c - ((i * 17) % 4) as f64);
                if i % 7 == 3 || i % 11 == 5 {
                    (high, low) = (low - 0.5, high);
                }
                Bar {
                    time: i as i64,
                    open: c,
                    high,
                    low,
                    close: if i % 5 == 0 { high } else { c },
                    volume: 1.0,
                }
            })
            .collect()
    }

    #[test]
    fn unrolled_batch_equals_streaming_and_the_plain_recurrence() {
        let bars = odd_bars(203);
        let high: Vec<f64> = bars.iter().map(|b| b.high).collect();
        let low: Vec<f64> = bars.iter().map(|b| b.low).collect();
        let close: Vec<f64> = bars.iter().map(|b| b.close).collect();
        for period in [
            1, 2, 3, 4, 5, 7, 14, 50, 190, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204,
        ] {
            for n in [bars.len(), bars.len() - 1, bars.len() - 2, bars.len() - 3] {
                let atr = AverageTrueRange::new(period).unwrap();
                let mut s = atr.clone();
                let streamed: Vec<Option<f64>> = bars[..n].iter().map(|b| s.next(b)).collect();
                assert_eq!(atr.over(&bars[..n]).unwrap(), streamed, "period {period}, {n} bars");
                let col = atr.over_columns(&high[..n], &low[..n], &close[..n]).unwrap();
                for (i, (c, v)) in col.iter().zip(&streamed).enumerate() {
                    match v {
                        Some(v) => assert_eq!(c.to_bits(), v.to_bits(), "period {period}, bar {i}"),
                        None => assert!(c.is_nan(), "period {period}, bar {i}"),
                    }
                }
                // The one-step recurrence with TA-Lib's true range.
                let w = WilderWeights::new(period);
                let mut plain = None;
                for (i, got) in streamed.iter().enumerate().skip(period) {
                    let tr = |j: usize| true_range(high[j], low[j], close[j - 1]);
                    let next = match plain {
                        None => (1..=period).map(tr).sum::<f64>() / period as f64,
                        Some(prev) => w.step(prev, tr(i)),
                    };
                    let got = got.unwrap();
                    assert!(
                        (got - next).abs() <= 1e-12 * next.abs().max(1.0),
                        "period {period}, bar {i}"
                    );
                    plain = Some(next);
                }
            }
        }
    }

    #[test]
    fn a_non_finite_value_anywhere_is_refused() {
        let bars = odd_bars(64);
        let atr = AverageTrueRange::new(3).unwrap();
        for i in 0..bars.len() {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                for field in 0..5 {
                    let mut b = bars.clone();
                    match field {
                        0 => b[i].open = bad,
                        1 => b[i].high = bad,
                        2 => b[i].low = bad,
                        3 => b[i].close = bad,
                        _ => b[i].volume = bad,
                    }
                    assert!(atr.over(&b).is_err(), "bar {i}, field {field}, {bad}");
                    if (1..=3).contains(&field) {
                        let high: Vec<f64> = b.iter().map(|b| b.high).collect();
                        let low: Vec<f64> = b.iter().map(|b| b.low).collect();
                        let close: Vec<f64> = b.iter().map(|b| b.close).collect();
                        assert!(
                            atr.over_columns(&high, &low, &close).is_err(),
                            "bar {i}, field {field}, {bad}"
                        );
                    }
                }
            }
        }
    }
}
