//! Private helpers shared by the indicators: parameter and input checks,
//! fixed-size windows and rolling extremes.
//!
//! Every index below is reduced modulo a capacity that the constructors have
//! already checked to be at least 1, so no user-chosen period can make an
//! access go out of bounds.

use std::collections::VecDeque;

use crate::{Bar, CoreError};

use super::MAX_PERIOD;

/// Checks an integer period: `min <= value <= MAX_PERIOD`.
pub(crate) fn check_period(name: &str, value: usize, min: usize) -> Result<usize, CoreError> {
    if value < min {
        return Err(CoreError::param(name, format!("must be at least {min}, got {value}")));
    }
    if value > MAX_PERIOD {
        return Err(CoreError::param(
            name,
            format!("must be at most {MAX_PERIOD}, got {value}"),
        ));
    }
    Ok(value)
}

/// Checks a real-valued parameter: finite and within `[min, max]`.
pub(crate) fn check_real(name: &str, value: f64, min: f64, max: f64) -> Result<f64, CoreError> {
    if !value.is_finite() {
        return Err(CoreError::param(name, format!("must be a finite number, got {value}")));
    }
    if value < min || value > max {
        return Err(CoreError::param(
            name,
            format!("must be within [{min}, {max}], got {value}"),
        ));
    }
    Ok(value)
}

/// The error for an empty batch input.
pub(crate) fn empty_input() -> CoreError {
    CoreError::InvalidInput("empty series".into())
}

/// Batch precondition on one bar: every price and the volume finite.
#[inline]
pub(crate) fn check_bar(i: usize, b: &Bar) -> Result<(), CoreError> {
    if b.open.is_finite() && b.high.is_finite() && b.low.is_finite() && b.close.is_finite() && b.volume.is_finite() {
        Ok(())
    } else {
        Err(CoreError::InvalidInput(format!(
            "bar {i} (time {}) has a non-finite value",
            b.time
        )))
    }
}

/// Batch precondition of the column-specialised indicators: a non-empty
/// series of bars whose prices and volumes are all finite, with the error
/// [`check_bar`] gives for the first bad bar.
pub(crate) fn check_bars(bars: &[Bar]) -> Result<(), CoreError> {
    if bars.is_empty() {
        return Err(empty_input());
    }
    for (i, b) in bars.iter().enumerate() {
        check_bar(i, b)?;
    }
    Ok(())
}

/// Batch precondition on a column of values: non-empty and all finite, with
/// the error [`check_value`] gives for the first bad value.
pub(crate) fn check_values(values: &[f64]) -> Result<(), CoreError> {
    if values.is_empty() {
        return Err(empty_input());
    }
    for (i, &v) in values.iter().enumerate() {
        check_value(i, v)?;
    }
    Ok(())
}

/// `+0` for a finite `x`, NaN otherwise (`x − x`). Batch loops add this up
/// for every value they read — two cheap operations, no branch — and look
/// for the offending value (with [`check_values`] / [`check_bars`]) only when
/// the sum is not 0.
#[inline(always)]
#[allow(clippy::eq_op, reason = "x − x is 0 exactly when x is finite: the test itself")]
pub(crate) fn nonfinite(x: f64) -> f64 {
    x - x
}

/// [`nonfinite`] over every price and the volume of a bar.
#[inline(always)]
pub(crate) fn nonfinite_bar(b: &Bar) -> f64 {
    (nonfinite(b.open) + nonfinite(b.high)) + (nonfinite(b.low) + nonfinite(b.close)) + nonfinite(b.volume)
}

/// Where a close-based batch loop reads its input: a value and its
/// [`nonfinite`] flag at index `i`, `None` past the end.
pub(crate) trait ValueSource: Copy {
    fn len(self) -> usize;
    fn at(self, i: usize) -> Option<(f64, f64)>;
}

impl ValueSource for &[f64] {
    #[inline(always)]
    fn len(self) -> usize {
        <[f64]>::len(self)
    }

    #[inline(always)]
    fn at(self, i: usize) -> Option<(f64, f64)> {
        let x = *self.get(i)?;
        Some((x, nonfinite(x)))
    }
}

/// The closes of a bar series; the flag covers every field of the bar.
impl ValueSource for &[Bar] {
    #[inline(always)]
    fn len(self) -> usize {
        <[Bar]>::len(self)
    }

    #[inline(always)]
    fn at(self, i: usize) -> Option<(f64, f64)> {
        let b = self.get(i)?;
        Some((b.close, nonfinite_bar(b)))
    }
}

/// Where a high/low/close batch loop reads its input: `(high, low, close,
/// flag)` at index `i`, `None` past the end. The flag is [`nonfinite_bar`]
/// for bars and `−0` for columns (whose loops check values otherwise).
pub(crate) trait HlcSource: Copy {
    fn len(self) -> usize;
    fn at(self, i: usize) -> Option<(f64, f64, f64, f64)>;
    /// The bars from `start` on in whole groups of four (a last group of
    /// fewer is left out), as an iterator over array chunks of slices:
    /// `Vec::extend` from its `map` knows the exact length (the standard
    /// library's `TrustedLen`) and writes each item straight into place,
    /// with no length to check and store per item.
    fn quads(self, start: usize) -> impl Iterator<Item = Quad>;
}

/// Four consecutive bars of an [`HlcSource`]: highs, lows, closes and the
/// sum of their flags (`−0` for columns).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quad {
    pub(crate) high: [f64; 4],
    pub(crate) low: [f64; 4],
    pub(crate) close: [f64; 4],
    pub(crate) flag: f64,
}

impl HlcSource for &[Bar] {
    #[inline(always)]
    fn len(self) -> usize {
        <[Bar]>::len(self)
    }

    #[inline(always)]
    fn at(self, i: usize) -> Option<(f64, f64, f64, f64)> {
        let b = self.get(i)?;
        Some((b.high, b.low, b.close, nonfinite_bar(b)))
    }

    #[inline(always)]
    fn quads(self, start: usize) -> impl Iterator<Item = Quad> {
        let (groups, _) = self.get(start..).unwrap_or_default().as_chunks::<4>();
        groups.iter().map(|b| Quad {
            high: [b[0].high, b[1].high, b[2].high, b[3].high],
            low: [b[0].low, b[1].low, b[2].low, b[3].low],
            close: [b[0].close, b[1].close, b[2].close, b[3].close],
            flag: (nonfinite_bar(&b[0]) + nonfinite_bar(&b[1])) + (nonfinite_bar(&b[2]) + nonfinite_bar(&b[3])),
        })
    }
}

/// Three columns of the same length (checked by the caller).
impl<'a> HlcSource for (&'a [f64], &'a [f64], &'a [f64]) {
    #[inline(always)]
    fn len(self) -> usize {
        self.2.len()
    }

    #[inline(always)]
    fn at(self, i: usize) -> Option<(f64, f64, f64, f64)> {
        // −0: the neutral of addition, so adding this flag costs nothing.
        Some((*self.0.get(i)?, *self.1.get(i)?, *self.2.get(i)?, -0.0))
    }

    #[inline(always)]
    fn quads(self, start: usize) -> impl Iterator<Item = Quad> {
        let groups = |s: &'a [f64]| s.get(start..).unwrap_or_default().as_chunks::<4>().0;
        let (high, low, close) = (groups(self.0), groups(self.1), groups(self.2));
        high.iter().zip(low).zip(close).map(|((&high, &low), &close)| Quad {
            high,
            low,
            close,
            flag: -0.0,
        })
    }
}

/// Checks that the columns of one series have the same length.
pub(crate) fn check_same_len(columns: &[(&str, usize)]) -> Result<(), CoreError> {
    if let Some(&(first, n)) = columns.first()
        && let Some(&(name, m)) = columns.iter().find(|(_, m)| *m != n)
    {
        return Err(CoreError::InvalidInput(format!(
            "column `{name}` has {m} values but `{first}` has {n}"
        )));
    }
    Ok(())
}

/// Batch precondition of the volume indicators: [`check_bar`] and no negative volume.
#[inline]
pub(crate) fn check_bar_volume(i: usize, b: &Bar) -> Result<(), CoreError> {
    check_bar(i, b)?;
    if b.volume < 0.0 {
        return Err(CoreError::InvalidInput(format!(
            "bar {i} (time {}) has a negative volume",
            b.time
        )));
    }
    Ok(())
}

/// Batch precondition on one value of a plain series.
#[inline]
pub(crate) fn check_value(i: usize, v: f64) -> Result<(), CoreError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(CoreError::InvalidInput(format!("value {i} is not finite")))
    }
}

/// TA-Lib 0.8's scale-aware zero test (`TA_IS_ZERO_SCALED`): `v` counts as
/// zero when `|v| <= 1e-14 · scale`, where `scale` is the magnitude of the
/// operands `v` is a difference of. This absorbs the rounding residue a
/// machine-flat window leaves behind without a fixed, unit-dependent band.
#[inline]
pub(crate) fn is_zero_scaled(v: f64, scale: f64) -> bool {
    v.abs() <= 1e-14 * scale
}

/// TA-Lib's typical price: `(high + low + close) / 3`, summed in that order.
#[inline]
pub(crate) fn typical(bar: &Bar) -> f64 {
    (bar.high + bar.low + bar.close) / 3.0
}

/// True range against the previous close, compared in TA-Lib's order
/// (`high - low`, then `|prev - high|`, then `|prev - low|`).
#[inline]
pub(crate) fn true_range(high: f64, low: f64, prev_close: f64) -> f64 {
    let mut greatest = high - low;
    let v2 = (prev_close - high).abs();
    if v2 > greatest {
        greatest = v2;
    }
    let v3 = (prev_close - low).abs();
    if v3 > greatest {
        greatest = v3;
    }
    greatest
}

/// Coefficients of the two-bar form `e_t = b2 · e_{t−2} + (w1 · x_{t−1} + w0 · x_t)`
/// of a first-order recurrence `e_t = β · e_{t−1} + α · x_t` (EMA, Wilder
/// smoothing). Algebraically the same recurrence; a batch loop then waits on
/// one multiply and one add per *two* inputs instead of per input (two
/// interleaved chains), and a streaming indicator that keeps `e_{t−2}` and
/// `x_{t−1}` evaluates the very same expression, so both agree bit for bit.
/// `β²` and `αβ` are rounded once, at construction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TwoStep {
    b2: f64,
    w1: f64,
    w0: f64,
}

impl TwoStep {
    /// For `e_t = β · e_{t−1} + α · x_t`.
    pub(crate) fn new(beta: f64, alpha: f64) -> Self {
        Self {
            b2: beta * beta,
            w1: alpha * beta,
            w0: alpha,
        }
    }

    /// `e_t` from `e_{t−2}`, `x_{t−1}` and `x_t`.
    #[inline(always)]
    pub(crate) fn step(self, e2: f64, x1: f64, x0: f64) -> f64 {
        self.b2 * e2 + (self.w1 * x1 + self.w0 * x0)
    }
}

/// The unrolled forms of Wilder-style recurrences `e_t = β · e_{t−1} + α · x_t`:
/// with `u_t = αβ · x_{t−1} + α · x_t`, two steps `e_t = β² · e_{t−2} + u_t`
/// and four steps `e_t = β⁴ · e_{t−4} + (β² · u_{t−2} + u_t)` (`β²`, `β⁴` and
/// `αβ` rounded once). Used by ATR (see its docs); RSI and EMA use the
/// two-step form of [`TwoStep`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unrolled {
    /// `αβ` and `α`, side by side: when the optimiser pairs two products in
    /// one vector multiply, these are the two off the recurrence's path.
    w1: f64,
    w0: f64,
    b2: f64,
    b4: f64,
}

impl Unrolled {
    pub(crate) fn new(beta: f64, alpha: f64) -> Self {
        let b2 = beta * beta;
        Self {
            w1: alpha * beta,
            w0: alpha,
            b2,
            b4: b2 * b2,
        }
    }

    /// `u_t` from `x_{t−1}` and `x_t`.
    #[inline(always)]
    pub(crate) fn u(self, x1: f64, x0: f64) -> f64 {
        self.w1 * x1 + self.w0 * x0
    }

    /// `e_t` from `e_{t−2}` and `u_t`.
    #[inline(always)]
    pub(crate) fn two(self, e2: f64, u0: f64) -> f64 {
        self.b2 * e2 + u0
    }

    /// `e_t` from `e_{t−4}`, `u_{t−2}` and `u_t`.
    #[inline(always)]
    pub(crate) fn four(self, e4: f64, u2: f64, u0: f64) -> f64 {
        self.b4 * e4 + (self.b2 * u2 + u0)
    }
}

/// A fixed-capacity window of the last `cap` values, oldest first.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    buf: Vec<f64>,
    /// Slot of the next write (also the oldest value once full).
    head: usize,
    len: usize,
}

impl Window {
    /// `cap` must be at least 1 (checked by every caller's constructor).
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: vec![0.0; cap.max(1)],
            head: 0,
            len: 0,
        }
    }

    pub(crate) fn cap(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len == self.buf.len()
    }

    /// Appends `x`; returns the value pushed out when the window was full.
    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        let cap = self.buf.len();
        let slot = self.head % cap;
        let old = if self.len == cap { Some(self.buf[slot]) } else { None };
        self.buf[slot] = x;
        self.head = (slot + 1) % cap;
        if self.len < cap {
            self.len += 1;
        }
        old
    }

    /// The oldest value held (the next to be pushed out once full).
    pub(crate) fn oldest(&self) -> Option<f64> {
        if self.len == 0 {
            return None;
        }
        let cap = self.buf.len();
        let idx = (self.head + cap - self.len) % cap;
        self.buf.get(idx).copied()
    }

    /// The `k`-th value held, oldest first.
    pub(crate) fn get(&self, k: usize) -> Option<f64> {
        if k >= self.len {
            return None;
        }
        let cap = self.buf.len();
        let start = (self.head + cap - self.len) % cap;
        self.buf.get((start + k) % cap).copied()
    }

    /// Values oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        let cap = self.buf.len();
        let start = (self.head + cap - self.len) % cap;
        (0..self.len).map(move |k| self.buf[(start + k) % cap])
    }

    /// Values in storage order (slot 0 first), as TA-Lib's circular buffers sum them.
    pub(crate) fn raw(&self) -> &[f64] {
        &self.buf[..self.len.min(self.buf.len())]
    }

    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
        self.buf.iter_mut().for_each(|v| *v = 0.0);
    }
}

/// Rolling maximum (or minimum) over the last `period` values, in O(1)
/// amortised per value (monotonic deque).
#[derive(Debug, Clone)]
pub(crate) struct RollingExtreme {
    period: usize,
    is_max: bool,
    count: usize,
    deque: VecDeque<(usize, f64)>,
}

impl RollingExtreme {
    pub(crate) fn max(period: usize) -> Self {
        Self {
            period: period.max(1),
            is_max: true,
            count: 0,
            deque: VecDeque::new(),
        }
    }

    pub(crate) fn min(period: usize) -> Self {
        Self {
            period: period.max(1),
            is_max: false,
            count: 0,
            deque: VecDeque::new(),
        }
    }

    /// Adds `x`; returns the extreme of the last `period` values once that
    /// many have been seen.
    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        let idx = self.count;
        self.count += 1;
        while let Some(&(_, back)) = self.deque.back() {
            let dominated = if self.is_max { back <= x } else { back >= x };
            if dominated {
                self.deque.pop_back();
            } else {
                break;
            }
        }
        self.deque.push_back((idx, x));
        while let Some(&(front_idx, _)) = self.deque.front() {
            if front_idx + self.period <= idx {
                self.deque.pop_front();
            } else {
                break;
            }
        }
        if self.count >= self.period {
            self.deque.front().map(|&(_, v)| v)
        } else {
            None
        }
    }

    pub(crate) fn clear(&mut self) {
        self.count = 0;
        self.deque.clear();
    }
}

/// Rolling population variance, cancellation-free, following TA-Lib 0.8's
/// `TA_VAR` step for step (so results are bit-identical to it):
///
/// - the running sums hold deviations from a *shift* (initially the first
///   value), so `E[d²] − E[d]²` never subtracts two `mean²`-sized numbers;
/// - the shift is re-anchored on the window mean and the sums rebuilt with a
///   fresh two-pass when the variance falls below `1e-6` of the mean squared
///   deviation, when a departing value's squared deviation exceeds `1e6`
///   times the remaining sum, or every `32 · period` windows;
/// - a freshly rebuilt variance below `1e-12 · E[d²]` (a window flat up to
///   rounding) is exactly 0.
#[derive(Debug, Clone)]
pub(crate) struct RollingVariance {
    window: Window,
    inv_period: f64,
    shift: f64,
    s1: f64,
    s2: f64,
    since_reseed: usize,
}

impl RollingVariance {
    pub(crate) fn new(period: usize) -> Self {
        let period = period.max(1);
        Self {
            window: Window::new(period),
            inv_period: 1.0 / period as f64,
            shift: 0.0,
            s1: 0.0,
            s2: 0.0,
            since_reseed: 32 * period,
        }
    }

    /// Adds `x`; returns the variance of the last `period` values once that many were seen.
    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        if self.window.len() == 0 {
            self.shift = x;
        }
        self.window.push(x);
        let d = x - self.shift;
        self.s1 += d;
        self.s2 += d * d;
        if !self.window.is_full() {
            return None;
        }
        let inv = self.inv_period;
        let m1 = self.s1 * inv;
        let mut variance = self.s2 * inv - m1 * m1;
        // Remove the value that leaves with the next input.
        let oldest = self.window.oldest().unwrap_or(x);
        let d_old = oldest - self.shift;
        self.s1 -= d_old;
        let d_old2 = d_old * d_old;
        self.s2 -= d_old2;
        self.since_reseed = self.since_reseed.saturating_sub(1);
        if variance < 0.000001 * (self.s2 * inv) || d_old2 > 1_000_000.0 * self.s2 || self.since_reseed == 0 {
            self.since_reseed = 32 * self.window.cap();
            let mut sum = 0.0;
            for v in self.window.iter() {
                sum += v;
            }
            self.shift = sum * inv;
            let (mut s1, mut s2) = (0.0, 0.0);
            for v in self.window.iter() {
                let d = v - self.shift;
                s1 += d;
                s2 += d * d;
            }
            let m1 = s1 * inv;
            variance = s2 * inv - m1 * m1;
            if variance < 0.000000000001 * (s2 * inv) {
                variance = 0.0;
            }
            let d_old = oldest - self.shift;
            self.s1 = s1 - d_old;
            self.s2 = s2 - d_old * d_old;
        }
        Some(variance)
    }

    pub(crate) fn clear(&mut self) {
        let period = self.window.cap();
        self.window.clear();
        self.shift = 0.0;
        self.s1 = 0.0;
        self.s2 = 0.0;
        self.since_reseed = 32 * period;
    }
}

/// TA-Lib's running-sum simple moving average (`TA_INT_SMA`): add the new
/// value, divide, then subtract the value leaving the window — in that order,
/// so results are bit-identical to TA-Lib's.
#[derive(Debug, Clone)]
pub(crate) struct RunningSma {
    window: Window,
    total: f64,
}

impl RunningSma {
    pub(crate) fn new(period: usize) -> Self {
        Self {
            window: Window::new(period),
            total: 0.0,
        }
    }

    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        self.window.push(x);
        self.total += x;
        if self.window.is_full() {
            let out = self.total / self.window.cap() as f64;
            if let Some(oldest) = self.window.oldest() {
                self.total -= oldest;
            }
            Some(out)
        } else {
            None
        }
    }

    pub(crate) fn clear(&mut self) {
        self.window.clear();
        self.total = 0.0;
    }
}

/// Largest number of decimals [`ExactWma`] scales values by.
const MAX_DECIMALS: usize = 9;

/// `10^k` for `k = 0 ..= MAX_DECIMALS`, exact as `f64` and as `i64`.
const POW10_F: [f64; MAX_DECIMALS + 1] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];
const POW10_I: [i64; MAX_DECIMALS + 1] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// `2^49`: below it, `x · 10^k` is within ¼ of the integer `m` (so rounding
/// recovers it), distinct decimals of one scale are distinct doubles, and a
/// window's sum (at most 10 000 values) cannot overflow an `i64`.
const MAX_SCALED: f64 = 562_949_953_421_312.0;

/// `1.5 · 2^52`: adding and subtracting it rounds a double below `2^51` in
/// magnitude to an integer (to nearest), with two additions instead of a call.
const ROUNDER: f64 = 6_755_399_441_055_744.0;

/// `2^53`: every integer up to it is exact as a double.
const EXACT_SUM: u64 = 1 << 53;

/// Marks a window slot whose value has no exact decimal form.
const INEXACT: i64 = i64::MIN;

/// The decimal `m · 10^−k` that `x` is the nearest double to, as `m`, when
/// there is one with `|m| < 2^49` (`x` then stands for exactly that decimal).
#[inline(always)]
fn scaled(x: f64, k: usize) -> Option<i64> {
    let &p = POW10_F.get(k)?;
    let t = x * p;
    if t.is_nan() || t.abs() >= MAX_SCALED {
        return None;
    }
    let r = (t + ROUNDER) - ROUNDER;
    // Both operands exact, so the quotient is the double nearest to the decimal.
    if r / p == x { Some(r as i64) } else { None }
}

/// For a value `x` with no exact form at `scale`: the smallest larger scale
/// `k` at which it has one, the factor `10^(k − scale)` and `x`'s integer at
/// `k` — provided every integer `held` (the window's, [`INEXACT`] ignored)
/// stays below `2^49` once multiplied by the factor.
#[cold]
fn raise(scale: usize, x: f64, held: impl Iterator<Item = i64> + Clone) -> Option<(usize, i64, i64)> {
    // A decimal of at most 9 places is one of exactly 9 places too: when
    // `x` is small enough to be tried at 9 places and fails there, it
    // fails at every scale (one test instead of nine for such values).
    if (x * POW10_F[MAX_DECIMALS]).abs() < MAX_SCALED && scaled(x, MAX_DECIMALS).is_none() {
        return None;
    }
    for k in scale + 1..=MAX_DECIMALS {
        let Some(m) = scaled(x, k) else { continue };
        let &factor = POW10_I.get(k - scale)?;
        let limit = MAX_SCALED as i64;
        let fits = held
            .clone()
            .all(|v| v == INEXACT || v.checked_mul(factor).is_some_and(|w| w.abs() < limit));
        return fits.then_some((k, factor, m));
    }
    None
}

/// The exact form of a weighted moving average ("exact ties stay ties": each
/// value read as the decimal `m · 10^−k` it is the nearest double to, at most
/// 9 places): the window's values as decimals at a common scale, the
/// weighted sum `W = Σ i · m_i` (oldest weighs 1, newest `period`) kept
/// exactly by `W' = W − S + period · m_new` (with `S` the plain sum), and the
/// average one correctly rounded division `W / (period(period + 1)/2 · 10^k)`.
/// [`push`](Self::push) answers `None` when that is not exact (warm-up, a
/// value without a decimal form of at most 9 places in the window, a sum or
/// divisor past `2^53`); the caller then uses its floating-point value.
#[derive(Debug, Clone)]
pub(crate) struct ExactWma {
    /// The window's integers at the current scale (or [`INEXACT`]).
    ring: Vec<i64>,
    head: usize,
    len: usize,
    sum: i64,
    weighted: i128,
    inexact: usize,
    scale: usize,
    /// `period(period + 1)/2 · 10^scale`.
    divisor: u64,
}

impl ExactWma {
    /// `period` must be at least 1 and at most [`MAX_PERIOD`] (checked by the caller's constructor).
    pub(crate) fn new(period: usize) -> Self {
        let period = period.clamp(1, MAX_PERIOD);
        Self {
            ring: vec![0; period],
            head: 0,
            len: 0,
            sum: 0,
            weighted: 0,
            inexact: 0,
            scale: 0,
            divisor: (period * (period + 1) / 2) as u64,
        }
    }

    #[inline]
    fn scale_in(&mut self, x: f64) -> i64 {
        if let Some(m) = scaled(x, self.scale) {
            return m;
        }
        let Some((k, factor, m)) = raise(self.scale, x, self.ring[..self.len].iter().copied()) else {
            return INEXACT;
        };
        for v in &mut self.ring[..self.len] {
            if *v != INEXACT {
                *v *= factor;
            }
        }
        self.sum *= factor;
        self.weighted *= i128::from(factor);
        self.divisor = self.divisor.saturating_mul(factor as u64);
        self.scale = k;
        m
    }

    /// Appends `x`; the exact weighted average of the last `period` values when there is one.
    #[inline]
    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        let m = self.scale_in(x);
        let (mv, bad) = if m == INEXACT { (0, 1) } else { (m, 0) };
        let cap = self.ring.len();
        let slot = self.head;
        self.head = if slot + 1 == cap { 0 } else { slot + 1 };
        if self.len == cap {
            let old = self.ring[slot];
            let (ov, old_bad) = if old == INEXACT { (0, 1) } else { (old, 0) };
            self.weighted += cap as i128 * i128::from(mv) - i128::from(self.sum);
            self.sum += mv - ov;
            self.inexact = self.inexact + bad - old_bad;
        } else {
            self.len += 1;
            self.weighted += self.len as i128 * i128::from(mv);
            self.sum += mv;
            self.inexact += bad;
        }
        self.ring[slot] = m;
        let exact = self.len == cap
            && self.inexact == 0
            && self.weighted.unsigned_abs() <= u128::from(EXACT_SUM)
            && self.divisor <= EXACT_SUM;
        // Both operands exact below 2^53: one correctly rounded division.
        exact.then(|| self.weighted as i64 as f64 / self.divisor as f64)
    }
}

/// The state of pandas' rolling mean (pandas 2.x/3.x `roll_mean` in
/// `pandas/_libs/window/aggregations.pyx`), without the window itself: the
/// caller adds each new value and removes the value leaving the window (the
/// leaving value first, as pandas does), then reads [`mean`](Self::mean).
///
/// The sum is Kahan-compensated and carried along the whole series from the
/// first value, with one compensation term for the values added
/// (`compensation_add`) and another for the values removed
/// (`compensation_remove`). The mean is `sum / nobs`, except that a window
/// holding one repeated value gives that value exactly (pandas'
/// `num_consecutive_same_value`), and a window of values that are all
/// positive (all negative) never averages below (above) zero. A missing
/// value (pandas reads NaN and infinities as missing) counts in no term.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PandasMean {
    sum: f64,
    compensation_add: f64,
    compensation_remove: f64,
    /// Values in the window that are not missing.
    nobs: usize,
    /// Of those, the ones with the sign bit set (`-0.0` included).
    neg_ct: usize,
    /// Run length of the last non-missing value added (missing values
    /// neither break nor extend a run, as in pandas).
    same_run: usize,
    prev_value: f64,
}

impl PandasMean {
    pub(crate) const fn new() -> Self {
        Self {
            sum: 0.0,
            compensation_add: 0.0,
            compensation_remove: 0.0,
            nobs: 0,
            neg_ct: 0,
            same_run: 0,
            prev_value: f64::NAN,
        }
    }

    /// pandas' `remove_mean` (for a value that was added).
    #[inline(always)]
    pub(crate) fn remove(&mut self, val: f64) {
        if val.is_finite() {
            self.nobs = self.nobs.saturating_sub(1);
            let y = -val - self.compensation_remove;
            let t = self.sum + y;
            self.compensation_remove = t - self.sum - y;
            self.sum = t;
            self.neg_ct = self.neg_ct.saturating_sub(usize::from(val.is_sign_negative()));
        }
    }

    /// pandas' `add_mean`.
    #[inline(always)]
    pub(crate) fn add(&mut self, val: f64) {
        if val.is_finite() {
            self.nobs += 1;
            let y = val - self.compensation_add;
            let t = self.sum + y;
            self.compensation_add = t - self.sum - y;
            self.sum = t;
            self.neg_ct += usize::from(val.is_sign_negative());
            self.same_run = if val == self.prev_value { self.same_run + 1 } else { 1 };
            self.prev_value = val;
        }
    }

    /// pandas' `calc_mean` with `min_periods = period`: `None` (pandas' NaN)
    /// unless the window holds `period` values that are not missing.
    #[inline(always)]
    pub(crate) fn mean(&self, period: usize) -> Option<f64> {
        if self.nobs < period || self.nobs == 0 {
            return None;
        }
        let mean = self.sum / self.nobs as f64;
        let all_positive_below_zero = self.neg_ct == 0 && mean < 0.0;
        let all_negative_above_zero = self.neg_ct == self.nobs && mean > 0.0;
        Some(if self.same_run >= self.nobs {
            self.prev_value
        } else if all_positive_below_zero || all_negative_above_zero {
            0.0
        } else {
            mean
        })
    }
}

/// pandas' rolling mean (`Series.rolling(period).mean()`), bit for bit, one
/// value at a time: [`PandasMean`] over a window of the last `period`
/// inputs. While the window holds a missing value (NaN or infinite) there is
/// no mean ([`push`](Self::push) answers `None` where pandas gives NaN).
///
/// backtesting.py's `SMA` is this rolling mean, so crosses of two SMAs fall
/// on the same bars as in backtesting.py, including where two mathematically
/// equal means differ in the last bit.
#[derive(Debug, Clone)]
pub(crate) struct PandasSma {
    /// The last `period` inputs, as given (missing ones included).
    ring: Vec<f64>,
    /// Slot of the next write (also the oldest value once full).
    head: usize,
    /// Inputs seen, up to `period`.
    len: usize,
    state: PandasMean,
}

impl PandasSma {
    /// `period` must be at least 1 and at most [`MAX_PERIOD`] (checked by every caller's constructor).
    pub(crate) fn new(period: usize) -> Self {
        Self {
            ring: vec![0.0; period.clamp(1, MAX_PERIOD)],
            head: 0,
            len: 0,
            state: PandasMean::new(),
        }
    }

    /// Appends `x`; the mean of the last `period` values once that many were
    /// seen, `None` before and while one of them is missing.
    #[inline]
    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        let cap = self.ring.len();
        let slot = self.head;
        self.head = if slot + 1 == cap { 0 } else { slot + 1 };
        if self.len == cap {
            self.state.remove(self.ring[slot]);
        } else {
            self.len += 1;
        }
        self.ring[slot] = x;
        self.state.add(x);
        self.state.mean(cap)
    }

    pub(crate) fn clear(&mut self) {
        *self = Self::new(self.ring.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_last_values() {
        let mut w = Window::new(3);
        assert_eq!(w.push(1.0), None);
        assert_eq!(w.push(2.0), None);
        assert_eq!(w.push(3.0), None);
        assert_eq!(w.oldest(), Some(1.0));
        assert_eq!(w.push(4.0), Some(1.0));
        assert_eq!(w.iter().collect::<Vec<_>>(), vec![2.0, 3.0, 4.0]);
        assert_eq!(w.raw(), &[4.0, 2.0, 3.0]);
    }

    #[test]
    fn rolling_extremes() {
        let mut mx = RollingExtreme::max(3);
        let mut mn = RollingExtreme::min(3);
        let xs = [5.0, 1.0, 3.0, 2.0, 2.0, 7.0, 0.0];
        let maxes: Vec<_> = xs.iter().map(|&x| mx.push(x)).collect();
        let mins: Vec<_> = xs.iter().map(|&x| mn.push(x)).collect();
        assert_eq!(
            maxes,
            vec![None, None, Some(5.0), Some(3.0), Some(3.0), Some(7.0), Some(7.0)]
        );
        assert_eq!(
            mins,
            vec![None, None, Some(1.0), Some(1.0), Some(2.0), Some(2.0), Some(0.0)]
        );
    }

    #[test]
    fn variance_is_accurate_far_from_zero() {
        let mut v = RollingVariance::new(3);
        let xs = [1e6, 1e6 + 1.0, 1e6 + 2.0, 1e6 + 3.0];
        let out: Vec<_> = xs.iter().map(|&x| v.push(x)).collect();
        assert_eq!(out[1], None);
        let expected = 2.0 / 3.0;
        assert!((out[2].unwrap() - expected).abs() < 1e-12);
        assert!((out[3].unwrap() - expected).abs() < 1e-12);
        let mut flat = RollingVariance::new(4);
        let out: Vec<_> = [3.3; 9].iter().map(|&x| flat.push(x)).collect();
        assert_eq!(out[8], Some(0.0));
    }
}
