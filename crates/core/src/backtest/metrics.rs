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

pub(crate) fn metrics(bars: &[Bar], equity: &[f64], trades: &[Trade], exposed: usize, initial: f64) -> Metrics {
    let final_equity = equity.last().copied().unwrap_or(initial);
    let mut peak = initial;
    let mut dd: f64 = 0.0;
    for &e in equity {
        peak = peak.max(e);
        if peak > 0.0 {
            dd = dd.max((1.0 - e / peak) * 100.0);
        }
    }
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
    // Per-bar returns, annualised with the median bar spacing.
    let mut prev = initial;
    let rets: Vec<f64> = equity
        .iter()
        .map(|&e| {
            let r = if prev != 0.0 { e / prev - 1.0 } else { 0.0 };
            prev = e;
            r
        })
        .collect();
    let mut gaps: Vec<i64> = bars.windows(2).map(|w| w[1].time - w[0].time).collect();
    gaps.sort_unstable();
    let per_year = gaps
        .get(gaps.len() / 2)
        .filter(|g| **g > 0)
        .map(|g| 365.25 * 86_400_000.0 / *g as f64)
        .unwrap_or(252.0);
    let (sharpe, sortino) = if rets.len() < 2 {
        (None, None)
    } else {
        let m = rets.iter().sum::<f64>() / rets.len() as f64;
        let var = rets.iter().map(|r| (r - m).powi(2)).sum::<f64>() / (rets.len() - 1) as f64;
        let down = rets.iter().map(|r| r.min(0.0).powi(2)).sum::<f64>() / rets.len() as f64;
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
