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
use super::eval::{Compiled, Mode, Node, Order, Rules, Shared, bar_ok, compile, decide, units};
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
    /// Entry bar open time.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub entry_time: i64,
    /// Fill price including spread and slippage.
    pub entry_price: f64,
    /// Index of the exit bar.
    pub exit_index: usize,
    /// Exit bar open time.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
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

/// The trade held between two bars.
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
    #[inline]
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
    check_inputs(strategy, bars, opts)?;
    let (compiled, rules) = compile_checked(strategy, bars)?;
    let bar_count = bars.len();
    let mut signals = BlockSignals::new(&compiled, &rules, BLOCK.min(bar_count));
    let mut spacing = SpacingCheck::new(bars);
    let mut sim = Simulation::new(strategy, &compiled, &rules, bars, opts);
    for start in (0..bar_count).step_by(BLOCK) {
        let block = &bars[start..(start + BLOCK).min(bar_count)];
        spacing.check_block(bars, block)?;
        let fired = signals.evaluate(bars, start, block.len());
        for (offset, bar) in block.iter().enumerate() {
            let index = start + offset;
            if index % PROGRESS_EVERY == 0 && index > 0 {
                progress(index, bar_count);
            }
            sim.step(index, bar, fired[offset]);
        }
        sim.push_block_stats(start);
    }
    progress(bar_count, bar_count);
    Ok(sim.finish(spacing.uniform_gap()))
}

/// Rejects a bad strategy, bad options and an empty series before anything is compiled.
fn check_inputs(strategy: &Strategy, bars: &[Bar], opts: &RunOptions) -> Result<(), BacktestError> {
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
    Ok(())
}

/// Compiles `strategy` for streaming; a bad series is reported as such even
/// when an indicator refused it first.
fn compile_checked<'a>(strategy: &Strategy, bars: &'a [Bar]) -> Result<(Compiled<'a>, Rules), BacktestError> {
    compile(strategy, bars, Mode::Stream).map_err(|err| match crate::bars::validate_series(bars) {
        Err(data) => BacktestError::Data(data),
        Ok(()) => err,
    })
}

/// Bits of a bar's signal byte: which conditions fired on its close.
const ENTRY_LONG: u8 = 1;
const ENTRY_SHORT: u8 = 2;
const EXIT_LONG: u8 = 4;
const EXIT_SHORT: u8 = 8;

/// The strategy's four conditions, evaluated a block of bars at a time just
/// before the simulation reads the same bars (see the `eval` module).
struct BlockSignals<'c> {
    /// `entry_long`, `entry_short`, `exit_long`, `exit_short`, when present.
    programs: [Option<Node<'c>>; 4],
    shared: Shared,
    /// Scratch: whether one condition fired on each bar of the block.
    fired: Vec<bool>,
    /// Per bar of the block, the bits of the conditions that fired.
    signals: Vec<u8>,
}

impl<'c> BlockSignals<'c> {
    fn new(compiled: &'c Compiled<'_>, rules: &'c Rules, block_len: usize) -> Self {
        let programs = [
            &rules.entry_long,
            &rules.entry_short,
            &rules.exit_long,
            &rules.exit_short,
        ]
        .map(|cond| cond.as_ref().map(|cond| compiled.program(cond)));
        Self {
            programs,
            shared: Shared::new(compiled, block_len),
            fired: vec![false; block_len],
            signals: vec![0u8; block_len],
        }
    }

    /// The signal bytes of the `len` bars from `start`; blocks must follow each other.
    fn evaluate(&mut self, bars: &[Bar], start: usize, len: usize) -> &[u8] {
        self.shared.advance(bars, start, len);
        let signals = &mut self.signals[..len];
        signals.fill(0);
        for (program, bit) in self
            .programs
            .iter_mut()
            .zip([ENTRY_LONG, ENTRY_SHORT, EXIT_LONG, EXIT_SHORT])
        {
            if let Some(program) = program {
                let fired = &mut self.fired[..len];
                program.block(start, fired, &self.shared);
                signals
                    .iter_mut()
                    .zip(fired.iter())
                    .for_each(|(signal, fired)| *signal |= u8::from(*fired) * bit);
            }
        }
        signals
    }
}

/// The bar checks of `validate_series`, made block by block as the run
/// reaches the bars, and whether the bars are evenly spaced.
struct SpacingCheck {
    /// The gap between the first two bars, if there are two.
    gap: Option<i64>,
    prev_time: i64,
    uniform: bool,
}

impl SpacingCheck {
    /// `bars` must not be empty.
    fn new(bars: &[Bar]) -> Self {
        let gap = match bars {
            [first, second, ..] => Some(second.time.wrapping_sub(first.time)),
            _ => None,
        };
        Self {
            gap,
            prev_time: bars[0].time.wrapping_sub(gap.unwrap_or(1)),
            uniform: true,
        }
    }

    /// Checks the bars of `block`, the next block of `bars`; on a bad bar
    /// reports the first problem of the whole series.
    fn check_block(&mut self, bars: &[Bar], block: &[Bar]) -> Result<(), BacktestError> {
        let mut ok = true;
        for bar in block {
            ok &= bar_ok(bar) & (bar.time > self.prev_time);
            self.uniform &= bar.time.wrapping_sub(self.prev_time) == self.gap.unwrap_or(1);
            self.prev_time = bar.time;
        }
        if !ok {
            crate::bars::validate_series(bars).map_err(BacktestError::Data)?;
        }
        Ok(())
    }

    /// The gap between bars when every bar checked so far followed the previous by it.
    fn uniform_gap(&self) -> Option<i64> {
        self.gap.filter(|_| self.uniform)
    }
}

/// The account as the simulation walks the bars.
struct Simulation<'a> {
    strategy: &'a Strategy,
    compiled: &'a Compiled<'a>,
    rules: &'a Rules,
    bars: &'a [Bar],
    opts: &'a RunOptions,
    /// What each fill pays against the raw price: half the spread plus slippage.
    half_spread_and_slippage: f64,
    reenter: bool,
    cash: f64,
    position: Option<Open>,
    trades: Vec<Trade>,
    equity: Vec<f64>,
    /// Bars closed with a trade open.
    exposed: usize,
    stats: EquityStats,
    /// Order decided on the previous bar's close.
    pending: Order,
    /// The bar whose close decided `pending`.
    signal_bar: usize,
}

impl<'a> Simulation<'a> {
    fn new(
        strategy: &'a Strategy,
        compiled: &'a Compiled<'a>,
        rules: &'a Rules,
        bars: &'a [Bar],
        opts: &'a RunOptions,
    ) -> Self {
        let costs = &strategy.costs;
        Self {
            strategy,
            compiled,
            rules,
            bars,
            opts,
            half_spread_and_slippage: costs.spread / 2.0 + costs.slippage,
            reenter: strategy.same_direction_entry == SameDirectionEntry::Reenter,
            cash: opts.initial_equity,
            position: None,
            trades: Vec::new(),
            equity: Vec::with_capacity(bars.len()),
            exposed: 0,
            stats: EquityStats::new(opts.initial_equity),
            pending: Order::default(),
            signal_bar: 0,
        }
    }

    /// One bar, `fired` being the signal byte of its close.
    #[inline]
    fn step(&mut self, index: usize, bar: &Bar, fired: u8) {
        self.fill_pending_order(index, bar);
        self.check_stop_and_target(index, bar);
        if index + 1 == self.bars.len() {
            self.close_at_end(index, bar);
        }
        self.mark_to_market(bar);
        if index + 1 < self.bars.len() {
            self.decide_next_order(index, fired);
        }
    }

    /// The price of a fill at raw price `price` after spread and slippage.
    #[inline]
    fn fill(&self, buying: bool, price: f64) -> f64 {
        if buying {
            price + self.half_spread_and_slippage
        } else {
            price - self.half_spread_and_slippage
        }
    }

    /// 1. Orders decided on the previous close fill at this open.
    #[inline]
    fn fill_pending_order(&mut self, index: usize, bar: &Bar) {
        let Order {
            close: close_now,
            open: open_dir,
        } = std::mem::take(&mut self.pending);
        if close_now && let Some(held) = self.position.take() {
            let reason = match open_dir {
                Some(dir) if dir != held.dir => ExitReason::Reverse,
                Some(_) => ExitReason::Reenter,
                None => ExitReason::Signal,
            };
            self.close_trade(held, index, bar.open, reason);
        }
        if let Some(dir) = open_dir
            && self.position.is_none()
        {
            self.open_trade(dir, index, bar);
        }
    }

    /// Opens a trade in `dir` at `bar`'s open, sized by the strategy; none
    /// when the size or price is not positive.
    #[inline]
    fn open_trade(&mut self, dir: Direction, index: usize, bar: &Bar) {
        let strategy = self.strategy;
        let costs = &strategy.costs;
        let price = self.fill(dir == Direction::Long, bar.open);
        let sl_distance = self
            .compiled
            .stop_distance(&strategy.stop_loss, self.rules.sl_atr, self.signal_bar);
        let tp_distance = self
            .compiled
            .stop_distance(&strategy.take_profit, self.rules.tp_atr, self.signal_bar);
        let size = units(&strategy.sizing, costs, self.cash, price, sl_distance);
        if size.is_finite() && size > 0.0 && price > 0.0 {
            let entry_commission = costs.commission * size * price;
            self.cash -= entry_commission;
            let sign = if dir == Direction::Long { 1.0 } else { -1.0 };
            self.position = Some(Open {
                dir,
                entry_index: index,
                entry_price: price,
                size,
                entry_commission,
                sl: sl_distance.map(|distance| price - sign * distance),
                tp: tp_distance.map(|distance| price + sign * distance),
            });
        }
    }

    /// 2. Stops and targets inside this bar; the stop is assumed first.
    #[inline]
    fn check_stop_and_target(&mut self, index: usize, bar: &Bar) {
        let Some(held) = &self.position else {
            return;
        };
        let long = held.dir == Direction::Long;
        let sl_hit = held
            .sl
            .filter(|&stop| if long { bar.low <= stop } else { bar.high >= stop });
        let tp_hit = held
            .tp
            .filter(|&target| if long { bar.high >= target } else { bar.low <= target });
        let exit = if let Some(stop) = sl_hit {
            let price = if long { bar.open.min(stop) } else { bar.open.max(stop) };
            Some((price, ExitReason::StopLoss))
        } else if let Some(target) = tp_hit {
            let price = if long {
                bar.open.max(target)
            } else {
                bar.open.min(target)
            };
            Some((price, ExitReason::TakeProfit))
        } else {
            None
        };
        if let Some((price, reason)) = exit
            && let Some(held) = self.position.take()
        {
            self.close_trade(held, index, price, reason);
        }
    }

    /// 3. End of data: close what is open.
    fn close_at_end(&mut self, index: usize, bar: &Bar) {
        if let Some(held) = self.position.take() {
            let price = match self.opts.final_exit {
                FinalExit::LastClose => bar.close,
                FinalExit::LastOpen => bar.open,
            };
            self.close_trade(held, index, price, ExitReason::EndOfData);
        }
    }

    /// 4. Mark to market at the close.
    #[inline]
    fn mark_to_market(&mut self, bar: &Bar) {
        let unrealised = self
            .position
            .as_ref()
            .map(|held| {
                held.sign() * held.size * (self.fill(held.dir == Direction::Short, bar.close) - held.entry_price)
            })
            .unwrap_or(0.0);
        if self.position.is_some() {
            self.exposed += 1;
        }
        self.equity.push(self.cash + unrealised);
    }

    /// 5. Signals on this close, for the next open.
    #[inline]
    fn decide_next_order(&mut self, index: usize, fired: u8) {
        let current = self.position.as_ref().map(|held| held.dir);
        self.pending = decide(
            current,
            fired & ENTRY_LONG != 0,
            fired & ENTRY_SHORT != 0,
            fired & EXIT_LONG != 0,
            fired & EXIT_SHORT != 0,
            self.reenter,
        );
        self.signal_bar = index;
    }

    /// Closes `held` on bar `index` at raw price `raw_price` and records the trade.
    #[inline]
    fn close_trade(&mut self, held: Open, index: usize, raw_price: f64, reason: ExitReason) {
        let price = self.fill(held.dir == Direction::Short, raw_price);
        let exit_commission = self.strategy.costs.commission * held.size * price;
        let gross = held.sign() * held.size * (price - held.entry_price);
        self.cash += gross - exit_commission;
        let pnl = gross - exit_commission - held.entry_commission;
        self.trades.push(Trade {
            direction: held.dir,
            entry_index: held.entry_index,
            entry_time: self.bars[held.entry_index].time,
            entry_price: held.entry_price,
            exit_index: index,
            exit_time: self.bars[index].time,
            exit_price: price,
            size: held.size,
            pnl,
            return_pct: pnl / (held.size * held.entry_price) * 100.0,
            reason,
        });
    }

    /// Feeds the equity of the block from `start` to the running statistics.
    fn push_block_stats(&mut self, start: usize) {
        // The block's equity, still in cache, feeds the running statistics in a tight loop.
        let mut block_stats = self.stats;
        self.equity[start..].iter().for_each(|value| block_stats.push(*value));
        self.stats = block_stats;
    }

    /// The result, given the bars' spacing when it is uniform.
    fn finish(self, uniform_gap: Option<i64>) -> BacktestResult {
        let metrics = metrics(
            self.bars,
            uniform_gap,
            &self.equity,
            &self.stats,
            &self.trades,
            self.exposed,
            self.opts.initial_equity,
        );
        BacktestResult {
            metrics,
            trades: self.trades,
            equity: self.equity,
        }
    }
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
