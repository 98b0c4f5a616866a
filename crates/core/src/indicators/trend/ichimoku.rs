//! Ichimoku Kinko Hyo.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::{RollingExtreme, check_period};
use crate::indicators::{Indicator, Next, run_bars};
use crate::{Bar, CoreError};

/// One Ichimoku step: the lines known at this bar.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IchimokuOutput {
    /// Tenkan-sen (conversion line) of this bar.
    pub tenkan: Option<f64>,
    /// Kijun-sen (base line) of this bar.
    pub kijun: Option<f64>,
    /// Senkou span A plotted at this bar (computed `displacement` bars ago).
    pub senkou_a: Option<f64>,
    /// Senkou span B plotted at this bar (computed `displacement` bars ago).
    pub senkou_b: Option<f64>,
    /// Senkou span A computed at this bar, to be plotted `displacement` bars ahead.
    pub senkou_a_ahead: Option<f64>,
    /// Senkou span B computed at this bar, to be plotted `displacement` bars ahead.
    pub senkou_b_ahead: Option<f64>,
}

/// Batch Ichimoku, aligned on the bar where each value is plotted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IchimokuSeries {
    /// Tenkan-sen.
    pub tenkan: Vec<Option<f64>>,
    /// Kijun-sen.
    pub kijun: Vec<Option<f64>>,
    /// Senkou span A, shifted forward by `displacement`.
    pub senkou_a: Vec<Option<f64>>,
    /// Senkou span B, shifted forward by `displacement`.
    pub senkou_b: Vec<Option<f64>>,
    /// Chikou span: the close shifted back by `displacement` (`None` on the last `displacement` bars).
    pub chikou: Vec<Option<f64>>,
}

/// Ichimoku cloud.
///
/// # Formula
///
/// With `mid(n) = (highest high + lowest low) / 2` over the last `n` bars:
/// `tenkan = mid(tenkan)`, `kijun = mid(kijun)`,
/// `senkou A = (tenkan + kijun) / 2`, `senkou B = mid(senkou_b)`.
///
/// # Alignment
///
/// The two senkou spans are plotted `displacement` bars ahead: the value
/// reported at bar `t` was computed at bar `t − displacement` (pandas'
/// `shift(displacement)`). The chikou span at bar `t` is the close of bar
/// `t + displacement`, so the batch form leaves the last `displacement` bars
/// empty and the streaming form cannot produce it. The projected part of the
/// cloud (beyond the last bar) is returned by the streaming form as
/// `senkou_a_ahead` / `senkou_b_ahead`. TradingView counts the current bar
/// as the first of the displacement; its setting 26 equals `displacement = 25`
/// here.
///
/// # Parameters
///
/// - `tenkan`: 1 ..= 10 000 (default 9).
/// - `kijun`: 1 ..= 10 000 (default 26).
/// - `senkou_b`: 1 ..= 10 000 (default 52).
/// - `displacement`: 0 ..= 10 000 (default 26).
///
/// Warm-up (defaults): tenkan from index 8, kijun from 25, senkou A from
/// `max(tenkan, kijun) − 1 + displacement` = 51, senkou B from
/// `senkou_b − 1 + displacement` = 77; chikou from 0 up to `len − displacement − 1`.
/// Streaming returns `Some` from the first bar where any line exists.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::IchimokuCloud;
///
/// let bars: Vec<Bar> = (0..100)
///     .map(|i| {
///         let c = 100.0 + (i % 7) as f64;
///         Bar { time: i, open: c, high: c + 1.0, low: c - 1.0, close: c, volume: 0.0 }
///     })
///     .collect();
/// let out = IchimokuCloud::default().over(&bars)?;
/// assert!(out.tenkan[8].is_some() && out.senkou_a[50].is_none() && out.senkou_a[51].is_some());
/// assert_eq!(out.chikou[0], Some(bars[26].close));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "Ichimoku")]
#[doc(alias = "Ichimoku Kinko Hyo")]
#[derive(Debug, Clone)]
pub struct IchimokuCloud {
    tenkan_period: usize,
    kijun_period: usize,
    senkou_b_period: usize,
    displacement: usize,
    tenkan_hi: RollingExtreme,
    tenkan_lo: RollingExtreme,
    kijun_hi: RollingExtreme,
    kijun_lo: RollingExtreme,
    span_b_hi: RollingExtreme,
    span_b_lo: RollingExtreme,
    pending: VecDeque<(Option<f64>, Option<f64>)>,
    ready: bool,
}

impl IchimokuCloud {
    /// Default `(tenkan, kijun, senkou_b, displacement)`.
    pub const DEFAULTS: (usize, usize, usize, usize) = (9, 26, 52, 26);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a period is 0 or above 10 000, or the
    /// displacement is above 10 000.
    pub fn new(tenkan: usize, kijun: usize, senkou_b: usize, displacement: usize) -> Result<Self, CoreError> {
        let tenkan = check_period("tenkan", tenkan, 1)?;
        let kijun = check_period("kijun", kijun, 1)?;
        let senkou_b = check_period("senkou_b", senkou_b, 1)?;
        let displacement = check_period("displacement", displacement, 0)?;
        Ok(Self::unchecked(tenkan, kijun, senkou_b, displacement))
    }

    fn unchecked(tenkan: usize, kijun: usize, senkou_b: usize, displacement: usize) -> Self {
        Self {
            tenkan_period: tenkan,
            kijun_period: kijun,
            senkou_b_period: senkou_b,
            displacement,
            tenkan_hi: RollingExtreme::max(tenkan),
            tenkan_lo: RollingExtreme::min(tenkan),
            kijun_hi: RollingExtreme::max(kijun),
            kijun_lo: RollingExtreme::min(kijun),
            span_b_hi: RollingExtreme::max(senkou_b),
            span_b_lo: RollingExtreme::min(senkou_b),
            pending: VecDeque::new(),
            ready: false,
        }
    }

    /// `(tenkan, kijun, senkou_b, displacement)`.
    pub fn params(&self) -> (usize, usize, usize, usize) {
        (
            self.tenkan_period,
            self.kijun_period,
            self.senkou_b_period,
            self.displacement,
        )
    }

    /// Batch form (see the type's alignment notes).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<IchimokuSeries, CoreError> {
        let outs = run_bars(self, bars)?;
        let d = self.displacement;
        Ok(IchimokuSeries {
            tenkan: outs.iter().map(|o| o.and_then(|x| x.tenkan)).collect(),
            kijun: outs.iter().map(|o| o.and_then(|x| x.kijun)).collect(),
            senkou_a: outs.iter().map(|o| o.and_then(|x| x.senkou_a)).collect(),
            senkou_b: outs.iter().map(|o| o.and_then(|x| x.senkou_b)).collect(),
            chikou: (0..bars.len())
                .map(|i| i.checked_add(d).and_then(|j| bars.get(j)).map(|b| b.close))
                .collect(),
        })
    }
}

impl Default for IchimokuCloud {
    fn default() -> Self {
        let (t, k, b, d) = Self::DEFAULTS;
        Self::unchecked(t, k, b, d)
    }
}

impl Indicator for IchimokuCloud {
    type Output = IchimokuOutput;

    fn reset(&mut self) {
        let (t, k, b, d) = self.params();
        *self = Self::unchecked(t, k, b, d);
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

fn mid(hi: Option<f64>, lo: Option<f64>) -> Option<f64> {
    Some((hi? + lo?) / 2.0)
}

impl Next<&Bar> for IchimokuCloud {
    fn next(&mut self, bar: &Bar) -> Option<IchimokuOutput> {
        let tenkan = mid(self.tenkan_hi.push(bar.high), self.tenkan_lo.push(bar.low));
        let kijun = mid(self.kijun_hi.push(bar.high), self.kijun_lo.push(bar.low));
        let span_b = mid(self.span_b_hi.push(bar.high), self.span_b_lo.push(bar.low));
        let span_a = match (tenkan, kijun) {
            (Some(t), Some(k)) => Some((t + k) / 2.0),
            _ => None,
        };
        let (senkou_a, senkou_b) = if self.displacement == 0 {
            (span_a, span_b)
        } else {
            self.pending.push_back((span_a, span_b));
            if self.pending.len() > self.displacement {
                self.pending.pop_front().unwrap_or((None, None))
            } else {
                (None, None)
            }
        };
        let out = IchimokuOutput {
            tenkan,
            kijun,
            senkou_a,
            senkou_b,
            senkou_a_ahead: span_a,
            senkou_b_ahead: span_b,
        };
        self.ready = self.ready || tenkan.is_some() || kijun.is_some() || span_b.is_some();
        self.ready.then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_spans_forward() {
        let bars: Vec<Bar> = (0..10)
            .map(|i| Bar {
                time: i,
                open: 1.0,
                high: 2.0 + i as f64,
                low: 1.0,
                close: 1.5,
                volume: 0.0,
            })
            .collect();
        let ichi = IchimokuCloud::new(2, 3, 4, 2).unwrap();
        let out = ichi.over(&bars).unwrap();
        assert_eq!(out.tenkan[0], None);
        assert_eq!(out.tenkan[1], Some((3.0 + 1.0) / 2.0));
        // span A exists from bar 2 (max(2, 3) - 1), plotted 2 bars later.
        assert_eq!(out.senkou_a[3], None);
        let t2 = (4.0 + 1.0) / 2.0;
        let k2 = (4.0 + 1.0) / 2.0;
        assert_eq!(out.senkou_a[4], Some((t2 + k2) / 2.0));
        assert_eq!(out.senkou_b[4], None);
        assert!(out.senkou_b[5].is_some());
        assert_eq!(out.chikou[7], Some(1.5));
        assert_eq!(out.chikou[8], None);
        assert!(IchimokuCloud::new(0, 26, 52, 26).is_err());
    }
}
