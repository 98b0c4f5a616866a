//! Summary statistics of a backtest.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::engine::Trade;
use crate::Bar;

/// Summary statistics. Percentages are in percent (12.5 = 12.5 %).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Metrics {
    /// Starting equity.
    pub initial_equity: f64,
    /// Equity after the last bar.
    pub final_equity: f64,
    /// `(final / initial − 1) × 100`.
    pub return_pct: f64,
    /// Largest peak-to-trough fall of the equity curve, in percent of the peak (≥ 0).
    pub max_drawdown_pct: f64,
    /// Number of closed trades.
    pub trades: usize,
    /// Share of trades with `pnl > 0`, in percent; `null` without trades.
    pub win_rate_pct: Option<f64>,
    /// Gross profit / gross loss; `null` when there is no losing trade.
    pub profit_factor: Option<f64>,
    /// Annualised Sharpe ratio of per-bar equity returns (risk-free rate 0); `null` if undefined.
    pub sharpe: Option<f64>,
    /// Annualised Sortino ratio of per-bar equity returns; `null` if undefined.
    pub sortino: Option<f64>,
    /// Share of bars with an open trade at the close, in percent.
    pub exposure_pct: f64,
    /// Mean P&L per trade in account currency (the expectancy); `null` without trades.
    pub expectancy: Option<f64>,
    /// Mean trade return in percent of the entry notional; `null` without trades.
    pub avg_trade_pct: Option<f64>,
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// Running statistics of the equity curve, fed bar by bar as the engine
/// computes it (so the curve is not read again): the peak and the maximum
/// drawdown, and the two sums of per-bar returns that need no mean. Each sum
/// is sequential from the value `Iterator::sum` starts from, so it equals
/// summing a collected `Vec` of returns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EquityStats {
    peak: f64,
    dd: f64,
    prev: f64,
    sum: f64,
    down_sum: f64,
}

impl EquityStats {
    pub(crate) fn new(initial: f64) -> Self {
        let zero: f64 = std::iter::empty::<f64>().sum();
        Self {
            peak: initial,
            dd: 0.0,
            prev: initial,
            sum: zero,
            down_sum: zero,
        }
    }

    /// `peak = peak.max(e)` and `dd = dd.max((1 − e / peak) × 100)` (when
    /// `peak > 0`), written so the loop-carried chain is a compare rather than
    /// a NaN-aware `max`: same values (a NaN never replaces a number either
    /// way, and at or above the peak the drawdown term is 0, which never
    /// raises `dd ≥ 0`).
    #[inline]
    pub(crate) fn push(&mut self, e: f64) {
        if e > self.peak {
            self.peak = e;
        }
        if e < self.peak && self.peak > 0.0 {
            let d = (1.0 - e / self.peak) * 100.0;
            if d > self.dd {
                self.dd = d;
            }
        }
        let r = if self.prev != 0.0 { e / self.prev - 1.0 } else { 0.0 };
        self.prev = e;
        self.sum += r;
        self.down_sum += r.min(0.0).powi(2);
    }
}

/// The metrics of a run; `stats` has seen every value of `equity`, and
/// `uniform_gap` is the spacing of `bars` when it is the same throughout,
/// which spares looking for the median spacing.
pub(crate) fn metrics(
    bars: &[Bar],
    uniform_gap: Option<i64>,
    equity: &[f64],
    stats: &EquityStats,
    trades: &[Trade],
    exposed: usize,
    initial: f64,
) -> Metrics {
    let final_equity = equity.last().copied().unwrap_or(initial);
    let dd = stats.dd;
    let n = trades.len() as f64;
    let wins = trades.iter().filter(|t| t.pnl > 0.0).count() as f64;
    let gross_win: f64 = trades.iter().filter(|t| t.pnl > 0.0).map(|t| t.pnl).sum();
    let gross_loss: f64 = -trades.iter().filter(|t| t.pnl < 0.0).map(|t| t.pnl).sum::<f64>();
    let (win_rate_pct, expectancy, avg_trade_pct) = if trades.is_empty() {
        (None, None, None)
    } else {
        (
            Some(wins / n * 100.0),
            Some(trades.iter().map(|t| t.pnl).sum::<f64>() / n),
            Some(trades.iter().map(|t| t.return_pct).sum::<f64>() / n),
        )
    };
    // Per-bar returns, annualised with the median bar spacing. The returns are
    // recomputed for the variance rather than stored (same values, same order).
    let returns = || {
        let mut prev = initial;
        equity.iter().map(move |&e| {
            let r = if prev != 0.0 { e / prev - 1.0 } else { 0.0 };
            prev = e;
            r
        })
    };
    let per_year = uniform_gap
        .or_else(|| median_gap(bars))
        .filter(|g| *g > 0)
        .map(|g| 365.25 * 86_400_000.0 / g as f64)
        .unwrap_or(252.0);
    let len = equity.len();
    let (sharpe, sortino) = if len < 2 {
        (None, None)
    } else {
        let m = stats.sum / len as f64;
        let var = returns().map(|r| (r - m).powi(2)).sum::<f64>() / (len - 1) as f64;
        let down = stats.down_sum / len as f64;
        let ann = per_year.sqrt();
        (
            (var > 0.0).then(|| m / var.sqrt() * ann).and_then(finite),
            (down > 0.0).then(|| m / down.sqrt() * ann).and_then(finite),
        )
    };
    Metrics {
        initial_equity: initial,
        final_equity,
        return_pct: (final_equity / initial - 1.0) * 100.0,
        max_drawdown_pct: dd,
        trades: trades.len(),
        win_rate_pct,
        profit_factor: (gross_loss > 0.0).then(|| gross_win / gross_loss).and_then(finite),
        sharpe,
        sortino,
        exposure_pct: if equity.is_empty() {
            0.0
        } else {
            exposed as f64 / equity.len() as f64 * 100.0
        },
        expectancy,
        avg_trade_pct,
    }
}

/// The median spacing between consecutive bar times (the upper median for an
/// even count), `None` for fewer than two bars. Evenly spaced series, the
/// usual case, need no sorting.
fn median_gap(bars: &[Bar]) -> Option<i64> {
    let first = bars.get(..2).map(|w| w[1].time - w[0].time)?;
    if bars.windows(2).all(|w| w[1].time - w[0].time == first) {
        return Some(first);
    }
    let mut gaps: Vec<i64> = bars.windows(2).map(|w| w[1].time - w[0].time).collect();
    let mid = gaps.len() / 2;
    Some(*gaps.select_nth_unstable(mid).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_stats_equal_the_plain_formulas() {
        let curves: [&[f64]; 4] = [
            &[100.0, 101.0, 99.5, 99.5, 102.0, 80.0, 120.0, 119.0],
            &[100.0, 90.0, 0.0, 0.0, 10.0, -5.0, 3.0],
            &[100.0, f64::NAN, 95.0, 97.0],
            &[100.0],
        ];
        for curve in curves {
            let initial = 100.0;
            let mut st = EquityStats::new(initial);
            curve.iter().for_each(|e| st.push(*e));
            let (mut peak, mut dd) = (initial, 0.0f64);
            let mut prev = initial;
            let rets: Vec<f64> = curve
                .iter()
                .map(|&e| {
                    peak = peak.max(e);
                    if peak > 0.0 {
                        dd = dd.max((1.0 - e / peak) * 100.0);
                    }
                    let r = if prev != 0.0 { e / prev - 1.0 } else { 0.0 };
                    prev = e;
                    r
                })
                .collect();
            assert_eq!(st.dd.to_bits(), dd.to_bits(), "{curve:?}");
            assert_eq!(st.peak.to_bits(), peak.to_bits(), "{curve:?}");
            let sum: f64 = rets.iter().sum();
            let down: f64 = rets.iter().map(|r| r.min(0.0).powi(2)).sum();
            assert_eq!(st.sum.to_bits(), sum.to_bits(), "{curve:?}");
            assert_eq!(st.down_sum.to_bits(), down.to_bits(), "{curve:?}");
        }
    }

    #[test]
    fn median_gap_equals_the_sorted_middle() {
        let bars = |times: &[i64]| -> Vec<Bar> {
            times
                .iter()
                .map(|&time| Bar {
                    time,
                    open: 1.0,
                    high: 1.0,
                    low: 1.0,
                    close: 1.0,
                    volume: 0.0,
                })
                .collect()
        };
        for times in [
            &[0, 5, 10, 15][..],
            &[0, 1, 10, 12, 40],
            &[0, 7, 8, 100, 101, 102],
            &[3],
        ] {
            let b = bars(times);
            let mut gaps: Vec<i64> = b.windows(2).map(|w| w[1].time - w[0].time).collect();
            gaps.sort_unstable();
            assert_eq!(median_gap(&b), gaps.get(gaps.len() / 2).copied(), "{times:?}");
        }
    }
}
