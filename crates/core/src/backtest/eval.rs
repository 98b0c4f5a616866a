//! Compiled strategies and the decision rules shared by the engine
//! ([`super::engine`]) and [`super::explain`].
//!
//! A strategy is compiled once against a bar series: every indicator output
//! it reads becomes a series (NaN where the value is missing: indicator
//! warm-up or a non-finite output) and each condition an index-based tree
//! ([`Cond`]). NaN makes the DSL's rule "a comparison with a missing value is
//! false" fall out of IEEE comparisons, so one [`compare`] serves both
//! readers:
//!
//! - [`Compiled::eval`] evaluates a tree on one bar (explain);
//! - [`Node`] evaluates it over a block of consecutive bars at a time (the
//!   engine), reading each series as a stream. Prices are read from the bars
//!   and the SMA is computed as it is read (the catalog's rolling mean, in the
//!   same order, so bit-identical) instead of being stored: on long series
//!   the engine's cost is memory traffic, and a block of bars read once by
//!   the conditions is still in cache when the simulation reads it.
//!
//! Which order a bar's signals give is decided by one function, [`decide`].

use std::collections::BTreeMap;

use super::BacktestError;
use super::dsl::{Comparison, Condition, Costs, Op, Operand, PriceField, Sizing, Stop, Strategy};
use super::engine::Direction;
use crate::Bar;
use crate::indicators::{self as catalog, IndicatorInfo, PandasMean};

/// A number per bar: `series[index]` read `shift` bars back, or a constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Val {
    Series(usize, usize),
    Const(f64),
}

/// A compiled condition, the same shape as its [`Condition`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    All(Vec<Cond>),
    Any(Vec<Cond>),
    Not(Box<Cond>),
    Cmp(Val, Op, Val),
}

#[derive(Debug, Clone, PartialEq)]
enum SeriesKey {
    Indicator(String, BTreeMap<String, f64>, Option<String>),
    Price(PriceField),
}

/// The strategy's conditions and the ATR series of its stops, compiled.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub(crate) entry_long: Option<Cond>,
    pub(crate) exit_long: Option<Cond>,
    pub(crate) entry_short: Option<Cond>,
    pub(crate) exit_short: Option<Cond>,
    pub(crate) sl_atr: Option<usize>,
    pub(crate) tp_atr: Option<usize>,
}

/// How a series is held.
#[derive(Debug)]
enum Series {
    /// Computed over every bar.
    Values(Vec<f64>),
    /// A bar price, read from the bars.
    Price(PriceField),
    /// The SMA of the closes over this period, computed when read.
    Sma(usize),
}

/// Whether SMAs are stored ([`explain`](super::explain)) or computed as the engine streams them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Store,
    Stream,
}

/// Every series a strategy reads, over `bars`.
pub(crate) struct Compiled<'a> {
    pub(crate) bars: &'a [Bar],
    mode: Mode,
    series: Vec<Series>,
    keys: Vec<SeriesKey>,
}

/// Compiles `strategy` (already validated) against `bars`. Bad bars do not
/// make this panic (the catalog checks what it reads); callers check them.
pub(crate) fn compile<'a>(
    strategy: &Strategy,
    bars: &'a [Bar],
    mode: Mode,
) -> Result<(Compiled<'a>, Rules), BacktestError> {
    let mut c = Compiled {
        bars,
        mode,
        series: Vec::new(),
        keys: Vec::new(),
    };
    let cond =
        |x: &Option<Condition>, name: &str, c: &mut Compiled<'a>| x.as_ref().map(|x| c.condition(x, name)).transpose();
    let entry_long = cond(&strategy.entry_long, "entry_long", &mut c)?;
    let exit_long = cond(&strategy.exit_long, "exit_long", &mut c)?;
    let entry_short = cond(&strategy.entry_short, "entry_short", &mut c)?;
    let exit_short = cond(&strategy.exit_short, "exit_short", &mut c)?;
    let sl_atr = c.atr_of(&strategy.stop_loss, "stop_loss")?;
    let tp_atr = c.atr_of(&strategy.take_profit, "take_profit")?;
    Ok((
        c,
        Rules {
            entry_long,
            exit_long,
            entry_short,
            exit_short,
            sl_atr,
            tp_atr,
        },
    ))
}

/// `left op right` given the current (`a`, `b`) and previous (`pa`, `pb`)
/// values, NaN for missing: any comparison with NaN is false, so a missing
/// value makes the comparison false, as the DSL specifies.
#[inline(always)]
pub(crate) fn compare(op: Op, a: f64, b: f64, pa: f64, pb: f64) -> bool {
    match op {
        Op::Gt => a > b,
        Op::Gte => a >= b,
        Op::Lt => a < b,
        Op::Lte => a <= b,
        Op::CrossAbove => pa < pb && a > b,
        Op::CrossBelow => pa > pb && a < b,
    }
}

/// The order a bar's close gives: close the open trade, then open one in `open`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Order {
    pub(crate) close: bool,
    pub(crate) open: Option<Direction>,
}

/// The engine's priority: `entry_long`, then `entry_short`, then the exit of
/// the open side. An opposite entry reverses; an entry in the direction held
/// is ignored, or, with `reenter`, closes the trade and opens a new one
/// (backtesting.py's `SmaCross`: `if crossover(..): close(); buy() elif
/// crossover(..): close(); sell()`).
pub(crate) fn decide(
    cur: Option<Direction>,
    entry_long: bool,
    entry_short: bool,
    exit_long: bool,
    exit_short: bool,
    reenter: bool,
) -> Order {
    if entry_long && (reenter || cur != Some(Direction::Long)) {
        Order {
            close: cur.is_some(),
            open: Some(Direction::Long),
        }
    } else if entry_short && (reenter || cur != Some(Direction::Short)) {
        Order {
            close: cur.is_some(),
            open: Some(Direction::Short),
        }
    } else if (cur == Some(Direction::Long) && exit_long) || (cur == Some(Direction::Short) && exit_short) {
        Order {
            close: true,
            open: None,
        }
    } else {
        Order::default()
    }
}

/// Units of a new trade filled at `px` with `cash` available and a stop `sl_d` away.
pub(crate) fn units(sizing: &Sizing, costs: &Costs, cash: f64, px: f64, sl_d: Option<f64>) -> f64 {
    match sizing {
        Sizing::FixedLots { lots, contract_size } => lots * contract_size,
        Sizing::RiskPercent { percent } => match sl_d {
            Some(d) if d > 0.0 => cash * percent / 100.0 / d,
            _ => 0.0,
        },
        Sizing::AllIn => py_floordiv(cash * (1.0 - f64::EPSILON), px * (1.0 + costs.commission)),
    }
}

/// Python's float floor division (`a // b`), bit for bit, so `all_in` sizes equal backtesting.py's.
pub(crate) fn py_floordiv(a: f64, b: f64) -> f64 {
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

/// Whether one bar passes [`Bar::validate`], without building an error
/// (branch-free, so the engine can check a block of bars cheaply; a bar that
/// fails is then reported by [`crate::bars::validate_series`]).
#[inline(always)]
pub(crate) fn bar_ok(b: &Bar) -> bool {
    // Open and close within [low, high] (false for any NaN) with a finite low
    // and high makes every price finite and low ≤ high.
    (b.open >= b.low)
        & (b.open <= b.high)
        & (b.close >= b.low)
        & (b.close <= b.high)
        & (b.low > f64::NEG_INFINITY)
        & (b.high < f64::INFINITY)
        & (b.volume >= 0.0)
        & (b.volume < f64::INFINITY)
}

#[inline(always)]
fn price(b: &Bar, field: PriceField) -> f64 {
    match field {
        PriceField::Open => b.open,
        PriceField::High => b.high,
        PriceField::Low => b.low,
        PriceField::Close => b.close,
    }
}

/// The catalog's SMA on bar `j`, by the same rolling mean from the first bar.
fn sma_at(bars: &[Bar], period: usize, j: usize) -> f64 {
    let mut s = SmaStream::new(period);
    let mut out = f64::NAN;
    for k in 0..=j {
        out = s.next(bars, k);
    }
    out
}

/// The catalog's SMA (pandas' rolling mean, [`PandasMean`]: the same
/// operations in the same order, so the same bits) one bar at a time,
/// reading the close leaving the window from the bars instead of keeping a
/// window; `next` must see bars `0, 1, 2, …` in order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SmaStream {
    period: usize,
    state: PandasMean,
}

impl SmaStream {
    fn new(period: usize) -> Self {
        Self {
            period,
            state: PandasMean::new(),
        }
    }

    #[inline(always)]
    fn next(&mut self, bars: &[Bar], j: usize) -> f64 {
        if let Some(old) = j.checked_sub(self.period) {
            self.state.remove(bars[old].close);
        }
        self.state.add(bars[j].close);
        self.state.mean(self.period).unwrap_or(f64::NAN)
    }
}

/// The streamed SMAs of a [`Compiled`], each computed once per block of
/// bars and read by every comparison that uses it unshifted.
pub(crate) struct Shared {
    streams: Vec<(usize, SmaStream)>,
    /// `values[series][k]`: the series on bar `start + k` of the current block.
    values: Vec<Vec<f64>>,
}

impl Shared {
    /// Positioned before the first bar, for blocks of at most `block` bars.
    pub(crate) fn new(c: &Compiled<'_>, block: usize) -> Self {
        let streams: Vec<_> = c
            .series
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Series::Sma(period) => Some((i, SmaStream::new(*period))),
                _ => None,
            })
            .collect();
        let mut values = vec![Vec::new(); c.series.len()];
        for (i, _) in &streams {
            values[*i] = vec![f64::NAN; block];
        }
        Self { streams, values }
    }

    /// Computes the block of `len` bars from `start`; blocks must follow each other.
    pub(crate) fn advance(&mut self, bars: &[Bar], start: usize, len: usize) {
        for (i, s) in &mut self.streams {
            // A local copy keeps the running state in registers across the loop.
            let mut stream = *s;
            for (k, v) in self.values[*i][..len].iter_mut().enumerate() {
                *v = stream.next(bars, start + k);
            }
            *s = stream;
        }
    }
}

/// One operand read bar after bar by a [`Node`].
#[derive(Debug)]
pub(crate) enum Stream<'c> {
    Const(f64),
    Values(&'c [f64], usize),
    Price(&'c [Bar], PriceField, usize),
    /// A streamed SMA read shifted, with its own state.
    Sma(&'c [Bar], SmaStream, usize),
    /// A streamed SMA read unshifted, from [`Shared`].
    Shared(usize),
}

impl Stream<'_> {
    /// The value on bar `i`; called for `i = 0, 1, 2, …` in order, within the
    /// block from `start` whose shared values are `shared`.
    #[inline(always)]
    fn next(&mut self, i: usize, start: usize, shared: &[Vec<f64>]) -> f64 {
        match self {
            Self::Const(x) => *x,
            Self::Shared(s) => shared[*s][i - start],
            Self::Values(v, shift) => i.checked_sub(*shift).map_or(f64::NAN, |j| v[j]),
            Self::Price(bars, field, shift) => i.checked_sub(*shift).map_or(f64::NAN, |j| price(&bars[j], *field)),
            Self::Sma(bars, s, shift) => i.checked_sub(*shift).map_or(f64::NAN, |j| s.next(bars, j)),
        }
    }
}

/// A condition evaluated block by block over consecutive bars, from the
/// first bar on (each comparison keeps its operands' previous values).
#[derive(Debug)]
pub(crate) enum Node<'c> {
    All(Vec<Node<'c>>),
    Any(Vec<Node<'c>>),
    Not(Box<Node<'c>>),
    Cmp {
        l: Stream<'c>,
        op: Op,
        r: Stream<'c>,
        pa: f64,
        pb: f64,
    },
}

/// `out[k] = compare(op, left(i), right(i), previous left, previous right)` for `i = start + k`.
#[inline(always)]
fn cmp_loop(
    op: Op,
    (pa, pb): (&mut f64, &mut f64),
    start: usize,
    out: &mut [bool],
    mut left: impl FnMut(usize) -> f64,
    mut right: impl FnMut(usize) -> f64,
) {
    let (mut prev_a, mut prev_b) = (*pa, *pb);
    for (k, o) in out.iter_mut().enumerate() {
        let (a, b) = (left(start + k), right(start + k));
        *o = compare(op, a, b, prev_a, prev_b);
        (prev_a, prev_b) = (a, b);
    }
    (*pa, *pb) = (prev_a, prev_b);
}

impl Node<'_> {
    /// Fills `out[k]` with the condition on bar `start + k`; blocks must follow each other.
    /// Every node sees every bar (no short-circuit), so the streams stay in step.
    pub(crate) fn block(&mut self, start: usize, out: &mut [bool], shared: &Shared) {
        let sv = &shared.values;
        match self {
            Node::All(subs) => Self::combine(subs, true, start, out, shared),
            Node::Any(subs) => Self::combine(subs, false, start, out, shared),
            Node::Not(sub) => {
                sub.block(start, out, shared);
                out.iter_mut().for_each(|o| *o = !*o);
            }
            Node::Cmp { l, op, r, pa, pb } => match (l, r) {
                // Two streamed SMAs (moving-average crosses): the same loop without dispatch.
                (Stream::Shared(x), Stream::Shared(y)) => {
                    let (x, y) = (&sv[*x][..out.len()], &sv[*y][..out.len()]);
                    cmp_loop(*op, (pa, pb), start, out, |i| x[i - start], |i| y[i - start]);
                }
                (l, r) => cmp_loop(
                    *op,
                    (pa, pb),
                    start,
                    out,
                    |i| l.next(i, start, sv),
                    |i| r.next(i, start, sv),
                ),
            },
        }
    }

    fn combine(subs: &mut [Self], all: bool, start: usize, out: &mut [bool], shared: &Shared) {
        out.fill(all);
        let mut part = vec![false; out.len()];
        for sub in subs {
            sub.block(start, &mut part, shared);
            if all {
                out.iter_mut().zip(&part).for_each(|(o, x)| *o &= *x);
            } else {
                out.iter_mut().zip(&part).for_each(|(o, x)| *o |= *x);
            }
        }
    }
}

impl<'a> Compiled<'a> {
    /// The value of `v` on bar `i`; NaN when missing (warm-up, a shift before the first bar).
    pub(crate) fn value(&self, v: Val, i: usize) -> f64 {
        match v {
            Val::Const(x) => x,
            Val::Series(s, shift) => {
                let Some(j) = i.checked_sub(shift) else {
                    return f64::NAN;
                };
                match &self.series[s] {
                    Series::Values(v) => v[j],
                    Series::Price(field) => price(&self.bars[j], *field),
                    Series::Sma(period) => sma_at(self.bars, *period, j),
                }
            }
        }
    }

    /// The values of `v` on bar `i` and on the bar before (NaN before the first bar).
    pub(crate) fn value_and_previous(&self, v: Val, i: usize) -> (f64, f64) {
        let prev = match i.checked_sub(1) {
            Some(p) => self.value(v, p),
            None => f64::NAN,
        };
        (self.value(v, i), prev)
    }

    /// Whether `c` holds on bar `i`.
    pub(crate) fn eval(&self, c: &Cond, i: usize) -> bool {
        match c {
            Cond::All(v) => v.iter().all(|c| self.eval(c, i)),
            Cond::Any(v) => v.iter().any(|c| self.eval(c, i)),
            Cond::Not(c) => !self.eval(c, i),
            Cond::Cmp(l, op, r) => {
                let (a, pa) = self.value_and_previous(*l, i);
                let (b, pb) = self.value_and_previous(*r, i);
                compare(*op, a, b, pa, pb)
            }
        }
    }

    fn stream(&self, v: Val) -> Stream<'_> {
        match v {
            Val::Const(x) => Stream::Const(x),
            Val::Series(s, shift) => match &self.series[s] {
                Series::Values(v) => Stream::Values(v, shift),
                Series::Price(field) => Stream::Price(self.bars, *field, shift),
                Series::Sma(_) if shift == 0 => Stream::Shared(s),
                Series::Sma(period) => Stream::Sma(self.bars, SmaStream::new(*period), shift),
            },
        }
    }

    /// `c` as a [`Node`] positioned before the first bar.
    pub(crate) fn program(&self, c: &Cond) -> Node<'_> {
        match c {
            Cond::All(v) => Node::All(v.iter().map(|c| self.program(c)).collect()),
            Cond::Any(v) => Node::Any(v.iter().map(|c| self.program(c)).collect()),
            Cond::Not(c) => Node::Not(Box::new(self.program(c))),
            Cond::Cmp(l, op, r) => Node::Cmp {
                l: self.stream(*l),
                op: *op,
                r: self.stream(*r),
                pa: f64::NAN,
                pb: f64::NAN,
            },
        }
    }

    /// The stop distance `s` gives on the signal bar `at` (`None` while its ATR warms up).
    pub(crate) fn stop_distance(&self, s: &Option<Stop>, atr: Option<usize>, at: usize) -> Option<f64> {
        match s.as_ref()? {
            Stop::Price { distance } => Some(*distance),
            Stop::Pips { pips, pip_size } => Some(pips * pip_size),
            Stop::Atr { multiple, .. } => {
                let a = self.value(Val::Series(atr?, 0), at);
                (!a.is_nan()).then(|| a * multiple)
            }
        }
    }

    fn intern(
        &mut self,
        key: SeriesKey,
        make: impl FnOnce(&[Bar]) -> Result<Series, BacktestError>,
    ) -> Result<usize, BacktestError> {
        if let Some(i) = self.keys.iter().position(|k| *k == key) {
            return Ok(i);
        }
        let values = make(self.bars)?;
        self.series.push(values);
        self.keys.push(key);
        Ok(self.series.len() - 1)
    }

    fn indicator(
        &mut self,
        path: &str,
        name: &str,
        params: &BTreeMap<String, f64>,
        output: Option<&str>,
    ) -> Result<usize, BacktestError> {
        let info = catalog::find(name);
        // The first output is the default one: `sma` and `sma.sma` are one series.
        let output = output.filter(|o| info.is_none_or(|i| i.outputs.first() != Some(o)));
        let canonical = info.map_or(name, |i| i.name).to_string();
        let key = SeriesKey::Indicator(canonical, params.clone(), output.map(str::to_string));
        let mode = self.mode;
        self.intern(key, |bars| {
            if output.is_none()
                && let Some(period) = info.and_then(|i| sma_period(i, params))
                && !bars.is_empty()
            {
                return Ok(match mode {
                    Mode::Stream => Series::Sma(period),
                    Mode::Store => {
                        let mut s = SmaStream::new(period);
                        Series::Values((0..bars.len()).map(|j| s.next(bars, j)).collect())
                    }
                });
            }
            let out = catalog::compute(name, params, bars).map_err(|e| BacktestError::Indicator {
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
            Ok(Series::Values(
                s.iter()
                    .map(|v| v.filter(|x| x.is_finite()).unwrap_or(f64::NAN))
                    .collect(),
            ))
        })
    }

    fn operand(&mut self, o: &Operand, path: &str) -> Result<Val, BacktestError> {
        Ok(match o {
            Operand::Indicator {
                indicator,
                params,
                output,
                shift,
            } => Val::Series(self.indicator(path, indicator, params, output.as_deref())?, *shift),
            Operand::Price { price, shift } => {
                let field = *price;
                let s = self.intern(SeriesKey::Price(field), |_| Ok(Series::Price(field)))?;
                Val::Series(s, *shift)
            }
            Operand::Value { value } => Val::Const(if value.is_finite() { *value } else { f64::NAN }),
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

    fn atr_of(&mut self, s: &Option<Stop>, name: &str) -> Result<Option<usize>, BacktestError> {
        match s {
            Some(Stop::Atr { period, .. }) => Ok(Some(self.indicator(
                name,
                "atr",
                &BTreeMap::from([("period".to_string(), f64::from(*period))]),
                None,
            )?)),
            _ => Ok(None),
        }
    }
}

/// The period of the catalog's SMA when `info` is the SMA and `params`
/// plainly valid; `None` otherwise, leaving the catalog to compute or to
/// name the fault.
fn sma_period(info: &IndicatorInfo, params: &BTreeMap<String, f64>) -> Option<usize> {
    if info.name != "sma" {
        return None;
    }
    let [p] = info.params else {
        return None;
    };
    if params.keys().any(|k| k != p.name) {
        return None;
    }
    let period = params.get(p.name).copied().or(p.default)?;
    (period.is_finite() && period.fract() == 0.0 && period >= p.min.max(1.0) && period <= p.max)
        .then_some(period as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real_bars() -> Vec<Bar> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/market/eurusd_1h_backtesting.csv"
        );
        crate::bars::parse_csv(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn sma_stream_is_bit_identical_to_the_catalog() {
        let bars = real_bars();
        let info = catalog::find("sma").unwrap();
        for period in [1.0, 2.0, 10.0, 20.0, 30.0, 200.0, 4999.0, 5000.0, 5001.0, 10_000.0] {
            let params = BTreeMap::from([("period".to_string(), period)]);
            let p = sma_period(info, &params).unwrap();
            let mut stream = SmaStream::new(p);
            let fast: Vec<f64> = (0..bars.len()).map(|j| stream.next(&bars, j)).collect();
            let slow = catalog::compute("sma", &params, &bars).unwrap();
            for (i, (f, s)) in fast.iter().zip(&slow.series[0].values).enumerate() {
                match s {
                    Some(s) => assert_eq!(f.to_bits(), s.to_bits(), "period {period} bar {i}"),
                    None => assert!(f.is_nan(), "period {period} bar {i}"),
                }
            }
            for j in [0, 17, bars.len() - 1] {
                assert_eq!(sma_at(&bars, p, j).to_bits(), fast[j].to_bits());
            }
        }
        assert_eq!(sma_period(info, &BTreeMap::new()), Some(30), "the catalog's default");
        for bad in [0.0, 1.5, 10_001.0, f64::NAN] {
            let params = BTreeMap::from([("period".to_string(), bad)]);
            assert!(sma_period(info, &params).is_none(), "{bad}");
            assert!(catalog::compute("sma", &params, &bars).is_err(), "{bad}");
        }
        assert!(sma_period(info, &BTreeMap::from([("length".to_string(), 3.0)])).is_none());
    }

    /// The engine's streamed, block-by-block evaluation equals explain's
    /// stored, bar-by-bar one on every bar, whatever the block boundaries.
    #[test]
    fn streamed_blocks_equal_bar_by_bar_evaluation() {
        let bars = real_bars();
        let strategy: Strategy = serde_json::from_value(serde_json::json!({
            "entry_long": {"any": [
                {"left": {"indicator": "sma", "params": {"period": 10}}, "op": "cross_above",
                 "right": {"indicator": "ema", "params": {"period": 20}, "shift": 3}},
                {"all": [
                    {"left": {"indicator": "rsi"}, "op": "lt", "right": {"value": 35}},
                    {"not": {"left": {"price": "close", "shift": 1}, "op": "gte", "right": {"price": "open"}}}
                ]}
            ]},
            "entry_short": {"left": {"value": 0}, "op": "cross_below", "right": {"indicator": "macd", "output": "signal"}},
            "exit_long": {"left": {"indicator": "sma", "params": {"period": 5}, "shift": 2}, "op": "lte",
                          "right": {"indicator": "ma", "params": {"period": 5}}},
            "exit_short": {"left": {"price": "high"}, "op": "gt", "right": {"indicator": "sma", "shift": 1}},
            "sizing": {"type": "all_in"}
        }))
        .unwrap();
        strategy.validate().unwrap();
        let (stored, rules) = compile(&strategy, &bars, Mode::Store).unwrap();
        let (streamed, stream_rules) = compile(&strategy, &bars, Mode::Stream).unwrap();
        assert!(stored.series.iter().all(|s| !matches!(s, Series::Sma(_))));
        assert!(streamed.series.iter().any(|s| matches!(s, Series::Sma(_))));
        let pairs = [
            (&rules.entry_long, &stream_rules.entry_long),
            (&rules.entry_short, &stream_rules.entry_short),
            (&rules.exit_long, &stream_rules.exit_long),
            (&rules.exit_short, &stream_rules.exit_short),
        ];
        for (cond, stream_cond) in pairs {
            let (cond, stream_cond) = (cond.as_ref().unwrap(), stream_cond.as_ref().unwrap());
            let mut program = streamed.program(stream_cond);
            let mut shared = Shared::new(&streamed, 1021);
            let (mut start, mut step, mut fired) = (0, 1, 0);
            while start < bars.len() {
                let len = step.min(bars.len() - start);
                let mut out = vec![false; len];
                shared.advance(&bars, start, len);
                program.block(start, &mut out, &shared);
                for (k, x) in out.iter().enumerate() {
                    let i = start + k;
                    assert_eq!(*x, stored.eval(cond, i), "bar {i}");
                    if i % 97 == 0 {
                        // Stored SMAs are read by index; streamed ones recomputed from the first bar.
                        assert_eq!(*x, streamed.eval(stream_cond, i), "bar {i}");
                    }
                    fired += usize::from(*x);
                }
                start += len;
                step = step * 3 % 1021 + 1;
            }
            assert!(fired > 0 && fired < bars.len(), "{cond:?} fired on {fired} bars");
        }
    }

    #[test]
    fn bar_check_agrees_with_bar_validate() {
        let good = real_bars();
        assert!(good.iter().all(|b| bar_ok(b) && b.validate().is_ok()));
        let b = good[0];
        let bad = [
            Bar { high: b.low - 1.0, ..b },
            Bar {
                open: b.high + 1.0,
                ..b
            },
            Bar {
                close: b.low - 1.0,
                ..b
            },
            Bar { volume: -1.0, ..b },
            Bar { volume: f64::NAN, ..b },
            Bar {
                low: f64::NEG_INFINITY,
                ..b
            },
            Bar { close: f64::NAN, ..b },
        ];
        for b in &bad {
            assert!(!bar_ok(b) && b.validate().is_err(), "{b:?}");
        }
    }

    #[test]
    fn decide_follows_the_priority() {
        use Direction::{Long, Short};
        let o = |close, open| Order { close, open };
        for reenter in [false, true] {
            assert_eq!(decide(None, true, true, false, false, reenter), o(false, Some(Long)));
            assert_eq!(
                decide(Some(Short), true, false, false, true, reenter),
                o(true, Some(Long))
            );
            assert_eq!(decide(Some(Long), false, false, true, false, reenter), o(true, None));
            assert_eq!(decide(Some(Long), false, false, false, true, reenter), o(false, None));
            assert_eq!(decide(None, false, false, true, true, reenter), o(false, None));
        }
        // An entry in the direction held: ignored (an opposite one still reverses) …
        assert_eq!(
            decide(Some(Long), true, true, false, false, false),
            o(true, Some(Short))
        );
        assert_eq!(decide(Some(Long), true, false, false, false, false), o(false, None));
        assert_eq!(decide(Some(Short), false, true, false, false, false), o(false, None));
        // … or, with `reenter`, close and re-open, `entry_long` first as in SmaCross.
        assert_eq!(decide(Some(Long), true, true, false, false, true), o(true, Some(Long)));
        assert_eq!(decide(Some(Long), true, false, false, false, true), o(true, Some(Long)));
        assert_eq!(
            decide(Some(Short), false, true, true, false, true),
            o(true, Some(Short))
        );
    }

    #[test]
    fn floordiv_matches_python() {
        assert_eq!(py_floordiv(7.0, 2.0), 3.0);
        assert_eq!(py_floordiv(-7.0, 2.0), -4.0);
        assert_eq!(py_floordiv(9999.999999999998, 100.0), 99.0);
        assert_eq!(py_floordiv(0.3, 0.1), 2.0);
    }
}
