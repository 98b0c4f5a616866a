//! Money flow index.

use crate::indicators::util::{Window, check_period, is_zero_scaled, typical};
use crate::indicators::{Indicator, Next, bar_based};
use crate::{Bar, CoreError};

/// Money flow index, a volume-weighted RSI, as TA-Lib's `TA_MFI`.
///
/// # Formula
///
/// Raw money flow `mf_t = tp_t · volume_t` with `tp = (high + low + close) / 3`;
/// it counts as positive when `tp_t > tp_{t−1}`, negative when lower, and is
/// ignored when the change is within `1e-14 · (|tp_t| + |tp_{t−1}|)` of 0
/// (TA-Lib 0.8's dead zone for rounding residue). Over the last `period`
/// flows, `MFI = 100 · positive / (positive + negative)` (positive clamped
/// into `[0, total]` against rounding drift), and 0 when no flow is left.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period`. The batch form rejects
/// negative volumes.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::MoneyFlowIndex;
///
/// let bar = |c: f64, v: f64| Bar { time: 0, open: c, high: c, low: c, close: c, volume: v };
/// let out = MoneyFlowIndex::new(2)?.over(&[bar(1.0, 1.0), bar(2.0, 1.0), bar(1.0, 2.0)])?;
/// assert_eq!(out[1], None);
/// assert_eq!(out[2], Some(50.0)); // +2 then −2
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MFI")]
#[derive(Debug, Clone)]
pub struct MoneyFlowIndex {
    period: usize,
    count: usize,
    prev_tp: f64,
    positive: Window,
    negative: Window,
    pos_sum: f64,
    neg_sum: f64,
    null_run: usize,
}

impl MoneyFlowIndex {
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
        Self {
            period,
            count: 0,
            prev_tp: 0.0,
            positive: Window::new(period),
            negative: Window::new(period),
            pos_sum: 0.0,
            neg_sum: 0.0,
            null_run: 0,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for MoneyFlowIndex {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

bar_based!(MoneyFlowIndex, crate::indicators::run_bars_volume);

impl Indicator for MoneyFlowIndex {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count > self.period
    }
}

impl Next<&Bar> for MoneyFlowIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let idx = self.count;
        self.count += 1;
        let tp = typical(bar);
        if idx == 0 {
            self.prev_tp = tp;
            return None;
        }
        let diff = tp - self.prev_tp;
        let scale = tp.abs() + self.prev_tp.abs();
        self.prev_tp = tp;
        let flow = if is_zero_scaled(diff, scale) {
            0.0
        } else {
            tp * bar.volume
        };
        let (pos, neg) = if diff < 0.0 { (0.0, flow) } else { (flow, 0.0) };
        if let Some(old) = self.positive.push(pos) {
            self.pos_sum -= old;
        }
        if let Some(old) = self.negative.push(neg) {
            self.neg_sum -= old;
        }
        self.pos_sum += pos;
        self.neg_sum += neg;
        // A whole window without flow: the sums are exactly zero, drop the residue.
        self.null_run = if flow == 0.0 { self.null_run + 1 } else { 0 };
        if self.null_run >= self.period {
            self.null_run = self.period;
            self.pos_sum = 0.0;
            self.neg_sum = 0.0;
        }
        if idx < self.period {
            return None;
        }
        let total = self.pos_sum + self.neg_sum;
        if total <= 0.0 {
            return Some(0.0);
        }
        // Not f64::clamp: it panics on NaN, and streaming input is unchecked.
        let pos = if self.pos_sum < 0.0 {
            0.0
        } else if self.pos_sum > total {
            total
        } else {
            self.pos_sum
        };
        Some(100.0 * (pos / total))
    }
}
