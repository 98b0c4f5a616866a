//! Ultimate oscillator.

use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Rolling sums of buying pressure and true range over one period.
#[derive(Debug, Clone)]
struct Sums {
    bp: Window,
    tr: Window,
    bp_sum: f64,
    tr_sum: f64,
}

impl Sums {
    fn new(period: usize) -> Self {
        Self {
            bp: Window::new(period),
            tr: Window::new(period),
            bp_sum: 0.0,
            tr_sum: 0.0,
        }
    }

    /// Adds a bar's values; `bp_sum / tr_sum` once the window is full (0 when
    /// `tr_sum` is 0).
    fn push(&mut self, bp: f64, tr: f64) -> Option<f64> {
        if let Some(old) = self.bp.push(bp) {
            self.bp_sum -= old;
        }
        if let Some(old) = self.tr.push(tr) {
            self.tr_sum -= old;
        }
        self.bp_sum += bp;
        self.tr_sum += tr;
        if !self.bp.is_full() {
            return None;
        }
        Some(if self.tr_sum != 0.0 {
            self.bp_sum / self.tr_sum
        } else {
            0.0
        })
    }

    fn clear(&mut self) {
        self.bp.clear();
        self.tr.clear();
        self.bp_sum = 0.0;
        self.tr_sum = 0.0;
    }
}

/// Larry Williams' ultimate oscillator, as TA-Lib's `TA_ULTOSC`.
///
/// # Formula
///
/// From the second bar: buying pressure `BP = close − min(low, prev close)`,
/// true range `TR = max(high, prev close) − min(low, prev close)`. For each
/// of the three periods, `A = ΣBP / ΣTR` over the last `period` bars (0 when
/// `ΣTR` is 0). `ULTOSC = 100 · (4 · A_short + 2 · A_mid + A_long) / 7`,
/// where the periods are sorted first: the weights follow the lengths, not
/// the order the periods are given in (TA-Lib sorts them too).
///
/// # Parameters
///
/// - `period1`, `period2`, `period3`: 1 ..= 10 000 (defaults 7, 14, 28).
///
/// Warm-up: the first value is at index `max(period1, period2, period3)` (28).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::UltimateOscillator;
///
/// let ult = UltimateOscillator::new(1, 2, 3)?;
/// // Closing on the high every bar: 100.
/// let highs: Vec<f64> = (0..6).map(|i| 10.0 + i as f64).collect();
/// let lows: Vec<f64> = highs.iter().map(|h| h - 2.0).collect();
/// let out = ult.over_columns(&highs, &lows, &highs)?;
/// assert!(out[2].is_nan());
/// assert!((out[3] - 100.0).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "ULTOSC")]
#[derive(Debug, Clone)]
pub struct UltimateOscillator {
    periods: (usize, usize, usize),
    /// Shortest, middle and longest period's sums.
    sums: [Sums; 3],
    prev_close: Option<f64>,
    ready: bool,
}

impl UltimateOscillator {
    /// Default periods (TA-Lib's).
    pub const DEFAULTS: (usize, usize, usize) = (7, 14, 28);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a period is 0 or above 10 000.
    pub fn new(period1: usize, period2: usize, period3: usize) -> Result<Self, CoreError> {
        let p1 = check_period("period1", period1, 1)?;
        let p2 = check_period("period2", period2, 1)?;
        let p3 = check_period("period3", period3, 1)?;
        Ok(Self::unchecked(p1, p2, p3))
    }

    fn unchecked(p1: usize, p2: usize, p3: usize) -> Self {
        let mut sorted = [p1, p2, p3];
        sorted.sort_unstable();
        Self {
            periods: (p1, p2, p3),
            sums: sorted.map(Sums::new),
            prev_close: None,
            ready: false,
        }
    }

    /// The periods as given.
    pub fn periods(&self) -> (usize, usize, usize) {
        self.periods
    }
}

impl Default for UltimateOscillator {
    fn default() -> Self {
        let (a, b, c) = Self::DEFAULTS;
        Self::unchecked(a, b, c)
    }
}

impl Indicator for UltimateOscillator {
    type Output = f64;

    fn reset(&mut self) {
        self.sums.iter_mut().for_each(Sums::clear);
        self.prev_close = None;
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for UltimateOscillator {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let prev = self.prev_close.replace(bar.close)?;
        let true_low = bar.low.min(prev);
        let bp = bar.close - true_low;
        let tr = bar.high.max(prev) - true_low;
        let [short, mid, long] = &mut self.sums;
        let a1 = short.push(bp, tr);
        let a2 = mid.push(bp, tr);
        let a3 = long.push(bp, tr);
        let (a1, a2, a3) = (a1?, a2?, a3?);
        self.ready = true;
        Some(100.0 * ((4.0 * a1 + 2.0 * a2 + a3) / 7.0))
    }
}

bar_based!(UltimateOscillator, run_bars);
columns_based!(UltimateOscillator, high, low, close);
