//! The bar-by-bar simulation.
//!
//! Timing: conditions are evaluated on bar `i`'s close using values up to `i`
//! only; the resulting order fills at bar `i + 1`'s open. Stops and targets are
//! checked on every bar a trade is open, including its entry bar; when both
//! could have been touched in the same bar the stop is assumed first
//! (conservative). A gap through a level fills at the open.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::BacktestError;
use super::dsl::{Comparison, Condition, Op, Operand, PriceField, Sizing, Stop, Strategy};
use super::metrics::{Metrics, metrics};
use crate::Bar;
use crate::indicators as catalog;

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

enum Val {
    Series(usize, usize),
    Price(PriceField, usize),
    Const(f64),
}

enum Cond {
    All(Vec<Cond>),
    Any(Vec<Cond>),
    Not(Box<Cond>),
    Cmp(Val, Op, Val),
}

struct Compiled<'a> {
    bars: &'a [Bar],
    series: Vec<Vec<Option<f64>>>,
    keys: Vec<String>,
}

impl Compiled<'_> {
    fn series(
        &mut self,
        path: &str,
        name: &str,
        params: &BTreeMap<String, f64>,
        output: Option<&str>,
    ) -> Result<usize, BacktestError> {
        let key = format!("{name}|{params:?}|{output:?}");
        if let Some(i) = self.keys.iter().position(|k| *k == key) {
            return Ok(i);
        }
        let out = catalog::compute(name, params, self.bars).map_err(|e| BacktestError::Indicator {
            path: path.to_string(),
            source: e,
        })?;
        let s = match output {
            Some(o) => out.get(o),
            None => out.series.first().map(|s| s.values.as_slice()),
        }
        .ok_or_else(|| BacktestError::Invalid {
            path: format!("{path}.output"),
            reason: "no such output".into(),
        })?;
        self.series.push(s.to_vec());
        self.keys.push(key);
        Ok(self.series.len() - 1)
    }

    fn operand(&mut self, o: &Operand, path: &str) -> Result<Val, BacktestError> {
        Ok(match o {
            Operand::Indicator {
                indicator,
                params,
                output,
                shift,
            } => Val::Series(self.series(path, indicator, params, output.as_deref())?, *shift),
            Operand::Price { price, shift } => Val::Price(*price, *shift),
            Operand::Value { value } => Val::Const(*value),
        })
    }

    fn condition(&mut self, c: &Condition, path: &str) -> Result<Cond, BacktestError> {
        Ok(match c {
            Condition::All { all } => Cond::All(
                all.iter()
                    .enumerate()
                    .map(|(i, c)| self.condition(c, &format!("{path}.all[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Condition::Any { any } => Cond::Any(
                any.iter()
                    .enumerate()
                    .map(|(i, c)| self.condition(c, &format!("{path}.any[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Condition::Not { not } => Cond::Not(Box::new(self.condition(not, &format!("{path}.not"))?)),
            Condition::Compare(Comparison { left, op, right }) => Cond::Cmp(
                self.operand(left, &format!("{path}.left"))?,
                *op,
                self.operand(right, &format!("{path}.right"))?,
            ),
        })
    }

    fn value(&self, v: &Val, i: usize) -> Option<f64> {
        match v {
            Val::Const(x) => Some(*x),
            Val::Series(s, shift) => i.checked_sub(*shift).and_then(|j| self.series[*s][j]),
            Val::Price(p, shift) => i.checked_sub(*shift).map(|j| {
                let b = &self.bars[j];
                match p {
                    PriceField::Open => b.open,
                    PriceField::High => b.high,
                    PriceField::Low => b.low,
                    PriceField::Close => b.close,
                }
            }),
        }
        .filter(|x| x.is_finite())
    }

    fn eval(&self, c: &Cond, i: usize) -> bool {
        match c {
            Cond::All(v) => v.iter().all(|c| self.eval(c, i)),
            Cond::Any(v) => v.iter().any(|c| self.eval(c, i)),
            Cond::Not(c) => !self.eval(c, i),
            Cond::Cmp(l, op, r) => {
                let (Some(a), Some(b)) = (self.value(l, i), self.value(r, i)) else {
                    return false;
                };
                let prev = || Some((self.value(l, i.checked_sub(1)?)?, self.value(r, i.checked_sub(1)?)?));
                match op {
                    Op::Gt => a > b,
                    Op::Gte => a >= b,
                    Op::Lt => a < b,
                    Op::Lte => a <= b,
                    Op::CrossAbove => prev().is_some_and(|(pa, pb)| pa < pb && a > b),
                    Op::CrossBelow => prev().is_some_and(|(pa, pb)| pa > pb && a < b),
                }
            }
        }
    }
}

/// Python's float floor division (`a // b`), bit for bit, so `all_in` sizes equal backtesting.py's.
fn py_floordiv(a: f64, b: f64) -> f64 {
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m += b;
        div -= 1.0;
    }
    let _ = m;
    if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        0.0f64.copysign(a / b)
    }
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

/// How many bars pass between two calls of the progress callback of
/// [`run_with_progress`].
pub const PROGRESS_EVERY: usize = 16_384;

/// [`run`], calling `progress(done, total)` with the number of bars evaluated
/// so far every [`PROGRESS_EVERY`] bars and once at the end (`done == total`),
/// so that a caller can show progress on long runs. The callback does not
/// change the result.
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
    crate::bars::validate_series(bars).map_err(BacktestError::Data)?;
    let mut c = Compiled {
        bars,
        series: Vec::new(),
        keys: Vec::new(),
    };
    let mut compile = |cond: &Option<Condition>, name: &str| cond.as_ref().map(|x| c.condition(x, name)).transpose();
    let entry_long = compile(&strategy.entry_long, "entry_long")?;
    let exit_long = compile(&strategy.exit_long, "exit_long")?;
    let entry_short = compile(&strategy.entry_short, "entry_short")?;
    let exit_short = compile(&strategy.exit_short, "exit_short")?;
    let mut atr_of = |s: &Option<Stop>, name: &str| -> Result<Option<usize>, BacktestError> {
        match s {
            Some(Stop::Atr { period, .. }) => Ok(Some(c.series(
                name,
                "atr",
                &BTreeMap::from([("period".to_string(), f64::from(*period))]),
                None,
            )?)),
            _ => Ok(None),
        }
    };
    let sl_atr = atr_of(&strategy.stop_loss, "stop_loss")?;
    let tp_atr = atr_of(&strategy.take_profit, "take_profit")?;
    let costs = &strategy.costs;
    let n = bars.len();

    let mut cash = opts.initial_equity;
    let mut pos: Option<Open> = None;
    let mut trades = Vec::new();
    let mut equity = Vec::with_capacity(n);
    let mut exposed = 0usize;
    // Order decided on the previous bar's close: (close the open trade, open a new one).
    let mut pending: (bool, Option<Direction>) = (false, None);
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
    let stop_distance =
        |s: &Option<Stop>, atr: Option<usize>, at: usize, series: &Vec<Vec<Option<f64>>>| -> Option<f64> {
            match s.as_ref()? {
                Stop::Price { distance } => Some(*distance),
                Stop::Pips { pips, pip_size } => Some(pips * pip_size),
                Stop::Atr { multiple, .. } => series[atr?][at].map(|a| a * multiple),
            }
        };

    for (i, bar) in bars.iter().enumerate() {
        if i % PROGRESS_EVERY == 0 && i > 0 {
            progress(i, n);
        }
        // 1. Orders decided on the previous close fill at this open.
        let (close_now, open_dir) = std::mem::take(&mut pending);
        if close_now && let Some(p) = pos.take() {
            let reason = if open_dir.is_some_and(|d| d != p.dir) {
                ExitReason::Reverse
            } else {
                ExitReason::Signal
            };
            close_trade(p, i, bar.open, reason, &mut cash, &mut trades);
        }
        if let Some(dir) = open_dir
            && pos.is_none()
        {
            let px = fill(dir == Direction::Long, bar.open);
            let sl_d = stop_distance(&strategy.stop_loss, sl_atr, signal_bar, &c.series);
            let tp_d = stop_distance(&strategy.take_profit, tp_atr, signal_bar, &c.series);
            let size = match &strategy.sizing {
                Sizing::FixedLots { lots, contract_size } => lots * contract_size,
                Sizing::RiskPercent { percent } => match sl_d {
                    Some(d) if d > 0.0 => cash * percent / 100.0 / d,
                    _ => 0.0,
                },
                Sizing::AllIn => py_floordiv(cash * (1.0 - f64::EPSILON), px * (1.0 + costs.commission)),
            };
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
            let fires = |cond: &Option<Cond>| cond.as_ref().is_some_and(|x| c.eval(x, i));
            let cur = pos.as_ref().map(|p| p.dir);
            if fires(&entry_long) && cur != Some(Direction::Long) {
                pending = (cur.is_some(), Some(Direction::Long));
            } else if fires(&entry_short) && cur != Some(Direction::Short) {
                pending = (cur.is_some(), Some(Direction::Short));
            } else if (cur == Some(Direction::Long) && fires(&exit_long))
                || (cur == Some(Direction::Short) && fires(&exit_short))
            {
                pending = (true, None);
            }
            signal_bar = i;
        }
    }
    progress(n, n);
    let m = metrics(bars, &equity, &trades, exposed, opts.initial_equity);
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

    #[test]
    fn floordiv_matches_python() {
        assert_eq!(py_floordiv(7.0, 2.0), 3.0);
        assert_eq!(py_floordiv(-7.0, 2.0), -4.0);
        assert_eq!(py_floordiv(9999.999999999998, 100.0), 99.0);
        assert_eq!(py_floordiv(0.3, 0.1), 2.0);
    }
}
