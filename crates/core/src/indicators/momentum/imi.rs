//! Intraday momentum index.

use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Intraday momentum index, as TA-Lib's `TA_IMI`: an RSI of the bars' bodies
/// (close against open) instead of the close-to-close changes, 0 ..= 100.
///
/// # Formula
///
/// Over the last `period` bars, `up = Σ (close − open)` of the bars closing
/// above their open and `down = Σ (open − close)` of the others;
/// `IMI = 100 · up / (up + down)`. The sums are retaken from the window on
/// every bar, oldest bar first, as TA-Lib does. Where every bar of the
/// window has `close = open` (`up + down = 0`) the value is 50, as the
/// pinned TA-Lib (C core 0.8.1) returns.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14; TA-Lib accepts up to 100 000).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::IntradayMomentumIndex;
///
/// let out = IntradayMomentumIndex::new(2)?.over_columns(&[1.0, 2.0, 3.0], &[2.0, 1.0, 3.5])?;
/// assert!(out[0].is_nan());
/// assert_eq!(out[1], 50.0);
/// assert_eq!(out[2], 100.0 * (0.5 / 1.5));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "IMI")]
#[derive(Debug, Clone)]
pub struct IntradayMomentumIndex {
    period: usize,
    /// The last `period` bars' `(open, close)`; `head` is the slot of the next write.
    window: Vec<(f64, f64)>,
    head: usize,
    len: usize,
    ready: bool,
}

impl IntradayMomentumIndex {
    /// Default period (TA-Lib's).
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
        Self {
            period,
            window: vec![(0.0, 0.0); period.max(1)],
            head: 0,
            len: 0,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for IntradayMomentumIndex {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for IntradayMomentumIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.head = 0;
        self.len = 0;
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for IntradayMomentumIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let cap = self.window.len();
        self.window[self.head] = (bar.open, bar.close);
        self.head = if self.head + 1 >= cap { 0 } else { self.head + 1 };
        if self.len < cap {
            self.len += 1;
        }
        if self.len < cap {
            return None;
        }
        let mut up = 0.0;
        let mut down = 0.0;
        // Once full, `head` is the oldest slot: sum oldest first.
        let (newer, older) = self.window.split_at(self.head);
        for &(open, close) in older.iter().chain(newer) {
            if close > open {
                up += close - open;
            } else {
                down += open - close;
            }
        }
        self.ready = true;
        let total = up + down;
        Some(if total != 0.0 { 100.0 * (up / total) } else { 50.0 })
    }
}

bar_based!(IntradayMomentumIndex, run_bars);
columns_based!(IntradayMomentumIndex, open, close);
