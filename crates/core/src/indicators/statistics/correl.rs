//! Pearson correlation and beta of two series.

use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, run_bars};
use crate::{Bar, CoreError};

/// Centred sums of a window of pairs: `(Σdx², Σdy², Σdx·dy)` about the means.
fn centred(xs: &Window, ys: &Window) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    let (mut sx, mut sy) = (0.0, 0.0);
    for (x, y) in xs.iter().zip(ys.iter()) {
        sx += x;
        sy += y;
    }
    let (mx, my) = (sx / n, sy / n);
    let (mut sxx, mut syy, mut sxy) = (0.0, 0.0, 0.0);
    for (x, y) in xs.iter().zip(ys.iter()) {
        let (dx, dy) = (x - mx, y - my);
        sxx += dx * dx;
        syy += dy * dy;
        sxy += dx * dy;
    }
    (sxx, syy, sxy)
}

/// Column form shared by the two-series functions.
fn columns<T>(ind: &T, x: &[f64], y: &[f64]) -> Result<Vec<f64>, CoreError>
where
    T: Clone + Indicator<Output = f64> + Next<(f64, f64)>,
{
    crate::indicators::util::check_same_len(&[("x", x.len()), ("y", y.len())])?;
    if x.is_empty() {
        return Err(CoreError::InvalidInput("empty series".into()));
    }
    for (name, column) in [("x", x), ("y", y)] {
        if let Some(i) = column.iter().position(|v| !v.is_finite()) {
            return Err(CoreError::InvalidInput(format!(
                "value {i} of column `{name}` is not finite"
            )));
        }
    }
    let mut state = ind.clone();
    state.reset();
    Ok(x.iter()
        .zip(y)
        .map(|(&a, &b)| state.next((a, b)).unwrap_or(f64::NAN))
        .collect())
}

/// Pearson's correlation coefficient of two series over a period, as
/// TA-Lib's `TA_CORREL`.
///
/// # Formula
///
/// `r = Σ(x − x̄)(y − ȳ) / √(Σ(x − x̄)² · Σ(y − ȳ)²)` over the last `period`
/// pairs, 0 when either series is flat. Computed with centred sums (two
/// passes over the window), which is what TA-Lib 0.8's cancellation-free
/// CORREL approximates to about 1e-11; the values agree with it to that.
///
/// Inputs: `Next<(x, y)>` and `over_columns(x, y)`; fed with bars, `x` is the
/// high and `y` the low (TA-Lib's abstract-API defaults).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::PearsonCorrelation;
///
/// let x = [1.0, 2.0, 3.0, 4.0];
/// let y = [2.0, 4.0, 6.0, 7.0];
/// let r = PearsonCorrelation::new(3)?.over_columns(&x, &y)?;
/// assert!(r[1].is_nan());
/// assert!((r[2] - 1.0).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "CORREL")]
#[derive(Debug, Clone)]
pub struct PearsonCorrelation {
    period: usize,
    xs: Window,
    ys: Window,
    ready: bool,
}

impl PearsonCorrelation {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            xs: Window::new(period),
            ys: Window::new(period),
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// Batch form over the highs (`x`) and lows (`y`) of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<Vec<Option<f64>>, CoreError> {
        run_bars(self, bars)
    }

    /// Column form over two series: one `f64` per pair, NaN during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, x: &[f64], y: &[f64]) -> Result<Vec<f64>, CoreError> {
        columns(self, x, y)
    }
}

impl Default for PearsonCorrelation {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for PearsonCorrelation {
    type Output = f64;

    fn reset(&mut self) {
        self.xs.clear();
        self.ys.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<(f64, f64)> for PearsonCorrelation {
    fn next(&mut self, (x, y): (f64, f64)) -> Option<f64> {
        self.xs.push(x);
        self.ys.push(y);
        if !self.xs.is_full() {
            return None;
        }
        self.ready = true;
        let (sxx, syy, sxy) = centred(&self.xs, &self.ys);
        Some(if sxx > 0.0 && syy > 0.0 {
            sxy / (sxx * syy).sqrt()
        } else {
            0.0
        })
    }
}

impl Next<&Bar> for PearsonCorrelation {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.next((bar.high, bar.low))
    }
}

/// Beta of one series against another, as TA-Lib's `TA_BETA`: the slope of
/// the least-squares fit of `y`'s one-bar returns on `x`'s.
///
/// # Formula
///
/// Returns `r_t = (p_t − p_{t−1}) / p_{t−1}` (0 when `p_{t−1}` is 0) of both
/// series; over the last `period` return pairs,
/// `β = Σ(rx − r̄x)(ry − r̄y) / Σ(rx − r̄x)²` (equal to
/// `(n·Σrx·ry − Σrx·Σry) / (n·Σrx² − (Σrx)²)`), 0 when `x`'s returns are flat.
/// Computed with centred sums; equal to TA-Lib 0.8 within 1e-9.
///
/// Inputs: `Next<(x, y)>` and `over_columns(x, y)`; fed with bars, `x` is the
/// high and `y` the low (TA-Lib's abstract-API defaults).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 5).
///
/// Warm-up: the first value is at index `period` (it needs `period` returns).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::Beta;
///
/// // y's returns are twice x's: +10 %, −10 %, +10 % against +20 %, −20 %, +20 %.
/// let x = [100.0, 110.0, 99.0, 108.9];
/// let y = [100.0, 120.0, 96.0, 115.2];
/// let b = Beta::new(2)?.over_columns(&x, &y)?;
/// assert!(b[1].is_nan());
/// assert!((b[2] - 2.0).abs() < 1e-9 && (b[3] - 2.0).abs() < 1e-9);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "BETA")]
#[derive(Debug, Clone)]
pub struct Beta {
    period: usize,
    prev: Option<(f64, f64)>,
    xs: Window,
    ys: Window,
    ready: bool,
}

impl Beta {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 5;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            prev: None,
            xs: Window::new(period),
            ys: Window::new(period),
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// Batch form over the highs (`x`) and lows (`y`) of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<Vec<Option<f64>>, CoreError> {
        run_bars(self, bars)
    }

    /// Column form over two price series: one `f64` per pair, NaN during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, x: &[f64], y: &[f64]) -> Result<Vec<f64>, CoreError> {
        columns(self, x, y)
    }
}

impl Default for Beta {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for Beta {
    type Output = f64;

    fn reset(&mut self) {
        self.prev = None;
        self.xs.clear();
        self.ys.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<(f64, f64)> for Beta {
    fn next(&mut self, (x, y): (f64, f64)) -> Option<f64> {
        let (px, py) = self.prev.replace((x, y))?;
        let ret = |now: f64, before: f64| if before != 0.0 { (now - before) / before } else { 0.0 };
        self.xs.push(ret(x, px));
        self.ys.push(ret(y, py));
        if !self.xs.is_full() {
            return None;
        }
        self.ready = true;
        let (sxx, _, sxy) = centred(&self.xs, &self.ys);
        Some(if sxx != 0.0 { sxy / sxx } else { 0.0 })
    }
}

impl Next<&Bar> for Beta {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.next((bar.high, bar.low))
    }
}
