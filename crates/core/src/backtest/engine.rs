//! The bar-by-bar simulation.
//!
//! Timing: conditions are evaluated on bar `i`'s close using values up to `i`
//! only; the resulting order fills at bar `i + 1`'s open. Stops and targets are
//! checked on every bar a trade is open, including its entry bar; when both
//! could have been touched in the same bar the stop is assumed first
//! (conservative). A gap through a level fills at the open.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::BacktestError;
use super::dsl::{SameDirectionEntry, Strategy};
use super::eval::{Mode, Order, Shared, bar_ok, compile, decide, units};
use super::metrics::{EquityStats, Metrics, metrics};
use crate::Bar;

/// Price at which trades still open after the last bar are closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinalExit {
    /// The last bar's close (default).
    #[default]
    LastClose,
    /// The last bar's open, as backtesting.py 0.6.6 does with `finalize_trades=True`.
    LastOpen,
}

/// Run options that are not part of the strategy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunOptions {
    /// Starting cash (> 0).
    pub initial_equity: f64,
    /// How trades open at the end are closed.
    pub final_exit: FinalExit,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            initial_equity: 10_000.0,
            final_exit: FinalExit::LastClose,
        }
    }
}

/// Trade direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Bought first.
    Long,
    /// Sold first.
    Short,
}

/// Why a trade was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// An exit condition fired.
    Signal,
    /// An opposite entry fired (the trade was reversed).
    Reverse,
    /// An entry in the same direction fired with `same_direction_entry:
    /// reenter` (the trade was closed and a new one opened at the same open).
    Reenter,
    /// The stop loss was hit.
    StopLoss,
    /// The take profit was hit.
    TakeProfit,
    /// The data ended.
    EndOfData,
}

/// One closed trade.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trade {
    /// Long or short.
    pub direction: Direction,
    /// Index of the entry bar.
    pub entry_index: usize,
    /// Entry bar open time (unix ms).
    pub entry_time: i64,
    /// Fill price including spread and slippage.
    pub entry_price: f64,
    /// Index of the exit bar.
    pub exit_index: usize,
    /// Exit bar open time (unix ms).
    pub exit_time: i64,
    /// Fill price including spread and slippage.
    pub exit_price: f64,
    /// Units (positive).
    pub size: f64,
    /// Profit or loss after commissions, in account currency.
    pub pnl: f64,
    /// `pnl` as a percentage of the entry notional.
    pub return_pct: f64,
    /// Why it was closed.
    pub reason: ExitReason,
}

/// The result of [`run`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BacktestResult {
    /// Summary statistics.
    pub metrics: Metrics,
    /// Closed trades in order.
    pub trades: Vec<Trade>,
    /// Equity at each bar's close (after the final exit on the last bar).
    pub equity: Vec<f64>,
}

struct Open {
    dir: Direction,
    entry_index: usize,
    entry_price: f64,
    size: f64,
    entry_commission: f64,
    sl: Option<f64>,
    tp: Option<f64>,
}

impl Open {
    fn sign(&self) -> f64 {
        match self.dir {
            Direction::Long => 1.0,
            Direction::Short => -1.0,
        }
    }
}

/// Runs `strategy` over `bars`. Pure and deterministic.
///
/// # Errors
/// [`BacktestError::Invalid`] for a bad strategy or options, [`BacktestError::Indicator`]
/// when an indicator refuses its parameters, [`BacktestError::Data`] for a bad series.
pub fn run(strategy: &Strategy, bars: &[Bar], opts: &RunOptions) -> Result<BacktestResult, BacktestError> {
    run_with_progress(strategy, bars, opts, &mut |_, _| {})
}

/// Bars per block: the conditions are evaluated for a block, then the block is simulated.
const BLOCK: usize = 1024;

/// How many bars pass between two calls of the progress callback of
/// [`run_with_progress`].
pub const PROGRESS_EVERY: usize = 16_384;

/// [`run`], calling `progress(done, total)` with the number of bars evaluated
/// so far every [`PROGRESS_EVERY`] bars and once at the end (`done == total`),
/// so that a caller can show progress on long runs. The callback does not
/// change the result. The bars are checked block by block as the run reaches
/// them, so on a series with a bad bar the error may come after progress was
/// reported for the bars before it.
///
/// # Errors
/// As [`run`].
pub fn run_with_progress(
    strategy: &Strategy,
    bars: &[Bar],
    opts: &RunOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<BacktestResult, BacktestError> {
    strategy.validate()?;
    if !(opts.initial_equity.is_finite() && opts.initial_equity > 0.0) {
        return Err(BacktestError::Invalid {
            path: "initial_equity".into(),
            reason: "must be a finite number > 0".into(),
        });
    }
    if bars.is_empty() {
        crate::bars::validate_series(bars).map_err(BacktestError::Data)?;
    }
    // A bad series is reported as such even when an indicator refused it first.
    let (c, rules) = compile(strategy, bars, Mode::Stream).map_err(|e| match crate::bars::validate_series(bars) {
        Err(data) => BacktestError::Data(data),
        Ok(()) => e,
    })?;
    // The conditions are evaluated a block of bars at a time, just before the
    // simulation reads the same bars (see the `eval` module).
    let mut programs = [
        &rules.entry_long,
        &rules.entry_short,
        &rules.exit_long,
        &rules.exit_short,
    ]
    .map(|cond| cond.as_ref().map(|x| c.program(x)));
    const ENTRY_LONG: u8 = 1;
    const ENTRY_SHORT: u8 = 2;
    const EXIT_LONG: u8 = 4;
    const EXIT_SHORT: u8 = 8;
    let costs = &strategy.costs;
    let reenter = strategy.same_direction_entry == SameDirectionEntry::Reenter;
    let n = bars.len();

    let mut cash = opts.initial_equity;
    let mut pos: Option<Open> = None;
    let mut trades = Vec::new();
    let mut equity = Vec::with_capacity(n);
    let mut exposed = 0usize;
    let mut stats = EquityStats::new(opts.initial_equity);
    // Order decided on the previous bar's close.
    let mut pending = Order::default();
    let mut signal_bar = 0usize;

    let half = costs.spread / 2.0 + costs.slippage;
    let fill = |buying: bool, px: f64| if buying { px + half } else { px - half };
    let close_trade = |p: Open, i: usize, raw: f64, reason: ExitReason, cash: &mut f64, trades: &mut Vec<Trade>| {
        let px = fill(p.dir == Direction::Short, raw);
        let exit_commission = costs.commission * p.size * px;
        let gross = p.sign() * p.size * (px - p.entry_price);
        *cash += gross - exit_commission;
        let pnl = gross - exit_commission - p.entry_commission;
        trades.push(Trade {
            direction: p.dir,
            entry_index: p.entry_index,
            entry_time: bars[p.entry_index].time,
            entry_price: p.entry_price,
            exit_index: i,
            exit_time: bars[i].time,
            exit_price: px,
            size: p.size,
            pnl,
            return_pct: pnl / (p.size * p.entry_price) * 100.0,
            reason,
        });
    };

    let block_len = BLOCK.min(n);
    let mut signals = vec![0u8; block_len];
    let mut shared = Shared::new(&c, block_len);
    let mut fired = vec![false; block_len];
    // Bar checks (as `validate_series`) and whether the bars are evenly spaced.
    let gap = match bars {
        [a, b, ..] => Some(b.time.wrapping_sub(a.time)),
        _ => None,
    };
    let mut prev_time = bars[0].time.wrapping_sub(gap.unwrap_or(1));
    let mut uniform = true;
    for start in (0..n).step_by(BLOCK) {
        let block = &bars[start..(start + BLOCK).min(n)];
        let mut ok = true;
        for bar in block {
            ok &= bar_ok(bar) & (bar.time > prev_time);
            uniform &= bar.time.wrapping_sub(prev_time) == gap.unwrap_or(1);
            prev_time = bar.time;
        }
        if !ok {
            crate::bars::validate_series(bars).map_err(BacktestError::Data)?;
        }
        shared.advance(bars, start, block.len());
        let signals = &mut signals[..block.len()];
        signals.fill(0);
        for (program, bit) in programs
            .iter_mut()
            .zip([ENTRY_LONG, ENTRY_SHORT, EXIT_LONG, EXIT_SHORT])
        {
            if let Some(program) = program {
                let fired = &mut fired[..block.len()];
                program.block(start, fired, &shared);
                signals
                    .iter_mut()
                    .zip(fired.iter())
                    .for_each(|(s, f)| *s |= u8::from(*f) * bit);
            }
        }
        for (k, bar) in block.iter().enumerate() {
            let i = start + k;
            if i % PROGRESS_EVERY == 0 && i > 0 {
                progress(i, n);
            }
            // 1. Orders decided on the previous close fill at this open.
            let Order {
                close: close_now,
                open: open_dir,
            } = std::mem::take(&mut pending);
            if close_now && let Some(p) = pos.take() {
                let reason = match open_dir {
                    Some(d) if d != p.dir => ExitReason::Reverse,
                    Some(_) => ExitReason::Reenter,
                    None => ExitReason::Signal,
                };
                close_trade(p, i, bar.open, reason, &mut cash, &mut trades);
            }
            if let Some(dir) = open_dir
                && pos.is_none()
            {
                let px = fill(dir == Direction::Long, bar.open);
                let sl_d = c.stop_distance(&strategy.stop_loss, rules.sl_atr, signal_bar);
                let tp_d = c.stop_distance(&strategy.take_profit, rules.tp_atr, signal_bar);
                let size = units(&strategy.sizing, costs, cash, px, sl_d);
                if size.is_finite() && size > 0.0 && px > 0.0 {
                    let entry_commission = costs.commission * size * px;
                    cash -= entry_commission;
                    let s = if dir == Direction::Long { 1.0 } else { -1.0 };
                    pos = Some(Open {
                        dir,
                        entry_index: i,
                        entry_price: px,
                        size,
                        entry_commission,
                        sl: sl_d.map(|d| px - s * d),
                        tp: tp_d.map(|d| px + s * d),
                    });
                }
            }
            // 2. Stops and targets inside this bar; the stop is assumed first.
            if let Some(p) = &pos {
                let long = p.dir == Direction::Long;
                let sl_hit = p.sl.filter(|&s| if long { bar.low <= s } else { bar.high >= s });
                let tp_hit = p.tp.filter(|&t| if long { bar.high >= t } else { bar.low <= t });
                let exit = if let Some(s) = sl_hit {
                    let px = if long { bar.open.min(s) } else { bar.open.max(s) };
                    Some((px, ExitReason::StopLoss))
                } else if let Some(t) = tp_hit {
                    let px = if long { bar.open.max(t) } else { bar.open.min(t) };
                    Some((px, ExitReason::TakeProfit))
                } else {
                    None
                };
                if let Some((px, reason)) = exit
                    && let Some(p) = pos.take()
                {
                    close_trade(p, i, px, reason, &mut cash, &mut trades);
                }
            }
            // 3. End of data: close what is open.
            if i + 1 == n
                && let Some(p) = pos.take()
            {
                let px = match opts.final_exit {
                    FinalExit::LastClose => bar.close,
                    FinalExit::LastOpen => bar.open,
                };
                close_trade(p, i, px, ExitReason::EndOfData, &mut cash, &mut trades);
            }
            // 4. Mark to market at the close.
            let unreal = pos
                .as_ref()
                .map(|p| p.sign() * p.size * (fill(p.dir == Direction::Short, bar.close) - p.entry_price))
                .unwrap_or(0.0);
            if pos.is_some() {
                exposed += 1;
            }
            equity.push(cash + unreal);
            // 5. Signals on this close, for the next open.
            if i + 1 < n {
                let cur = pos.as_ref().map(|p| p.dir);
                let fired = signals[k];
                pending = decide(
                    cur,
                    fired & ENTRY_LONG != 0,
                    fired & ENTRY_SHORT != 0,
                    fired & EXIT_LONG != 0,
                    fired & EXIT_SHORT != 0,
                    reenter,
                );
                signal_bar = i;
            }
        }
        // The block's equity, still in cache, feeds the running statistics in a tight loop.
        let mut block_stats = stats;
        equity[start..].iter().for_each(|e| block_stats.push(*e));
        stats = block_stats;
    }
    progress(n, n);
    let m = metrics(
        bars,
        gap.filter(|_| uniform),
        &equity,
        &stats,
        &trades,
        exposed,
        opts.initial_equity,
    );
    Ok(BacktestResult {
        metrics: m,
        trades,
        equity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(i: i64, o: f64, h: f64, l: f64, c: f64) -> Bar {
        Bar {
            time: i * 3_600_000,
            open: o,
            high: h,
            low: l,
            close: c,
            volume: 1.0,
        }
    }

    fn always_long(extra: serde_json::Value) -> Strategy {
        let mut v = serde_json::json!({
            "entry_long": {"left": {"price": "close"}, "op": "gt", "right": {"value": 0}},
            "sizing": {"type": "fixed_lots", "lots": 1, "contract_size": 1}
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn progress_is_reported_in_steps_and_at_the_end_without_changing_the_result() {
        let s = always_long(serde_json::json!({ "stop_loss": {"type": "price", "distance": 1} }));
        let n = PROGRESS_EVERY * 2 + 5;
        let bars: Vec<Bar> = (0..n)
            .map(|i| {
                let px = 100.0 + (i % 7) as f64;
                bar(i as i64, px, px + 2.0, px - 2.0, px)
            })
            .collect();
        let mut calls = Vec::new();
        let with = run_with_progress(&s, &bars, &RunOptions::default(), &mut |done, total| {
            calls.push((done, total));
        })
        .unwrap();
        assert_eq!(calls, [(PROGRESS_EVERY, n), (PROGRESS_EVERY * 2, n), (n, n)]);
        assert_eq!(with, run(&s, &bars, &RunOptions::default()).unwrap());
    }

    #[test]
    fn stop_is_assumed_before_target_in_the_same_bar() {
        let s = always_long(serde_json::json!({
            "stop_loss": {"type": "price", "distance": 1},
            "take_profit": {"type": "price", "distance": 1}
        }));
        let bars = [bar(0, 100.0, 100.0, 100.0, 100.0), bar(1, 100.0, 102.0, 98.0, 100.0)];
        let r = run(&s, &bars, &RunOptions::default()).unwrap();
        assert_eq!(r.trades.len(), 1);
        assert_eq!(r.trades[0].reason, ExitReason::StopLoss);
        assert_eq!(r.trades[0].exit_price, 99.0);
        assert_eq!(r.trades[0].pnl, -1.0);
    }

    #[test]
    fn gap_through_stop_fills_at_open_and_costs_apply() {
        let s = always_long(serde_json::json!({
            "stop_loss": {"type": "price", "distance": 1},
            "costs": {"spread": 0.2}
        }));
        let bars = [
            bar(0, 100.0, 100.0, 100.0, 100.0),
            bar(1, 100.0, 100.5, 99.5, 100.0),
            bar(2, 95.0, 96.0, 94.0, 95.0),
        ];
        let r = run(&s, &bars, &RunOptions::default()).unwrap();
        assert_eq!(r.trades[0].entry_price, 100.1);
        assert_eq!(r.trades[0].exit_index, 2);
        assert_eq!(r.trades[0].reason, ExitReason::StopLoss);
        assert!(
            (r.trades[0].exit_price - 94.9).abs() < 1e-12,
            "sells at the bid: open minus half the spread"
        );
        assert!(r.metrics.max_drawdown_pct > 0.0);
    }

    #[test]
    fn exit_signal_and_end_of_data() {
        let s = always_long(serde_json::json!({
            "exit_long": {"left": {"price": "close"}, "op": "gt", "right": {"value": 101}}
        }));
        let bars = [
            bar(0, 100.0, 100.0, 100.0, 100.0),
            bar(1, 100.0, 102.0, 100.0, 102.0),
            bar(2, 103.0, 103.0, 103.0, 103.0),
        ];
        let r = run(&s, &bars, &RunOptions::default()).unwrap();
        assert_eq!(r.trades.len(), 1);
        assert_eq!((r.trades[0].entry_index, r.trades[0].exit_index), (1, 2));
        assert_eq!(r.trades[0].reason, ExitReason::Signal);
        assert_eq!(r.trades[0].pnl, 3.0);
        assert_eq!(r.equity.len(), 3);
        assert_eq!(r.metrics.final_equity, 10_003.0);
    }

    /// An entry in the direction held: ignored by default; with `reenter`
    /// the trade is closed and a new one opened at the same open, sized from
    /// the cash after the close (backtesting.py's `SmaCross`).
    #[test]
    fn same_direction_entry_ignore_or_reenter() {
        // The close crosses above 50 on bars 1 and 3 (and back below in between).
        let bars = [
            bar(0, 40.0, 41.0, 39.0, 40.0),
            bar(1, 40.0, 62.0, 40.0, 61.0),
            bar(2, 60.0, 60.0, 44.0, 45.0),
            bar(3, 45.0, 56.0, 45.0, 55.0),
            bar(4, 20.0, 21.0, 19.0, 20.0),
            bar(5, 21.0, 22.0, 20.0, 21.0),
        ];
        let strategy = |same: &str| -> Strategy {
            serde_json::from_value(serde_json::json!({
                "entry_long": {"left": {"price": "close"}, "op": "cross_above", "right": {"value": 50}},
                "sizing": {"type": "all_in"},
                "same_direction_entry": same
            }))
            .unwrap()
        };
        let opts = RunOptions::default();
        let held = run(&strategy("ignore"), &bars, &opts).unwrap();
        assert_eq!(held.trades.len(), 1);
        assert_eq!(held.trades[0].size, 166.0);
        assert_eq!((held.trades[0].entry_index, held.trades[0].exit_index), (2, 5));
        assert_eq!(held.trades[0].reason, ExitReason::EndOfData);
        let again = run(&strategy("reenter"), &bars, &opts).unwrap();
        let t: Vec<_> = again
            .trades
            .iter()
            .map(|t| (t.direction, t.entry_index, t.exit_index, t.reason))
            .collect();
        assert_eq!(
            t,
            [
                (Direction::Long, 2, 4, ExitReason::Reenter),
                (Direction::Long, 4, 5, ExitReason::EndOfData)
            ]
        );
        // Sized afresh: whole units of the cash after the first trade closed
        // at 20 (10 000 − 166 × 40 = 3 360, times 1 − ε, over 20).
        assert_eq!(again.trades[0].pnl, -6640.0);
        assert_eq!(again.trades[1].size, 167.0);
    }

    #[test]
    fn bad_input_is_an_error() {
        let s = always_long(serde_json::json!({}));
        assert!(matches!(
            run(&s, &[], &RunOptions::default()),
            Err(BacktestError::Data(_))
        ));
        let opts = RunOptions {
            initial_equity: -1.0,
            ..RunOptions::default()
        };
        assert!(run(&s, &[bar(0, 1.0, 1.0, 1.0, 1.0)], &opts).is_err());
        let bad: Strategy = serde_json::from_value(serde_json::json!({
            "entry_long": {"left": {"indicator": "sma", "params": {"period": 0}}, "op": "gt", "right": {"value": 0}},
            "sizing": {"type": "all_in"}
        }))
        .unwrap();
        let e = run(&bad, &[bar(0, 1.0, 1.0, 1.0, 1.0)], &RunOptions::default()).unwrap_err();
        assert!(e.to_string().starts_with("entry_long.left: "), "{e}");
    }
}
