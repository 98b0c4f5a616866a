//! Every function of the indicator catalogue and every candlestick pattern
//! over 1 000 000 bars, timed for `cargo xtask bench analytics`.
//!
//! The list is the catalogue itself ([`catalog`]) and [`Pattern::ALL`]:
//! nothing here names a function the catalogue does not, and a function added
//! to the catalogue is timed without touching this file. Each indicator runs
//! at its catalogue defaults in two forms:
//!
//! - through `&[Bar]`: [`compute`] by name, what every caller of the
//!   catalogue runs (`over(&[Bar])` plus the output's bookkeeping);
//! - the column form, when the type has one: `over_column` / `over_columns`
//!   (`f64` columns in, `Vec<f64>` with NaN warm-up out, TA-Lib's shape) or,
//!   for the close-based types without it, `over_values(&[f64])` (a column in,
//!   `Vec<Option<f64>>` out). [`column_form`] maps each name to it.
//!
//! Patterns run through [`detect`] on `&[Bar]` with TA-Lib's defaults.
//!
//! Timing: thread CPU time of each call (`CLOCK_THREAD_CPUTIME_ID`, the clock
//! `scripts/bench/talib_bench.py` reads with `time.thread_time_ns`), after one
//! warm-up call, at least [`MIN_CALLS`] and at most [`MAX_CALLS`] calls,
//! stopping once [`BUDGET`] of CPU time is spent; the minimum and median per
//! call are reported. The Python side uses the same policy. Every call
//! allocates its output, as TA-Lib's Python functions do.
//!
//! Output: progress on stderr, then one line on stdout starting with
//! `analytics bench json: ` holding the cases (name, TA-Lib alias, inputs,
//! default parameters) and our timings; the xtask hands the cases to
//! `scripts/bench/talib_bench.py --cases` so both sides run the same list.
//! A non-flag argument keeps only the cases whose name contains it.
//!
//! Run: `cargo bench -p tradeterm-core --bench analytics [-- rsi]`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use serde_json::{Value, json};
use tradeterm_core::indicators::{
    AbsolutePriceOscillator, AccumulationDistribution, AnyMovingAverage, Aroon, AroonOscillator,
    AverageDirectionalIndexRating, AveragePrice, AverageTrueRange, BalanceOfPower, Beta, BollingerBands,
    ChaikinOscillator, ChandeMomentumOscillator, DirectionalMovementIndex, DoubleExponentialMovingAverage,
    ExponentialMovingAverage, FastStochastic, HilbertDominantCyclePeriod, HilbertDominantCyclePhase, HilbertPhasor,
    HilbertSineWave, HilbertTrendMode, HilbertTrendline, IndicatorInfo, IntradayMomentumIndex,
    KaufmanAdaptiveMovingAverage, LinearRegressionAngle, LinearRegressionIntercept, LinearRegressionSlope,
    LinearRegressionValue, MedianPrice, MesaAdaptiveMovingAverage, Midpoint, MidpointPrice, MinusDirectionalIndicator,
    MinusDirectionalMovement, Momentum, MovingAverageConvergenceDivergence, MovingAverageConvergenceDivergenceExt,
    MovingAverageConvergenceDivergenceFixed, NormalizedAverageTrueRange, PearsonCorrelation, PercentagePriceOscillator,
    PlusDirectionalIndicator, PlusDirectionalMovement, RateOfChange, RateOfChangePercentage, RateOfChangeRatio,
    RateOfChangeRatio100, RelativeStrengthIndex, SimpleMovingAverage, StandardDeviation, StochasticRsi,
    T3MovingAverage, TimeSeriesForecast, TriangularMovingAverage, TripleExponentialMovingAverage, Trix, TrueRange,
    TypicalPrice, UltimateOscillator, VariablePeriodMovingAverage, Variance, WeightedClosePrice, WeightedMovingAverage,
    catalog, compute,
};
use tradeterm_core::patterns::{Pattern, detect};
use tradeterm_core::{Bar, CoreError};

mod common;

use common::{million_bars, thread_cpu_now};

/// Fewest timed calls per case.
const MIN_CALLS: usize = 5;
/// Most timed calls per case.
const MAX_CALLS: usize = 15;
/// CPU time after which a case stops (once it has `MIN_CALLS`).
const BUDGET: Duration = Duration::from_millis(1200);

/// Minimum and median CPU time per call, in milliseconds.
fn time(mut call: impl FnMut()) -> Value {
    call();
    let mut per_call = Vec::with_capacity(MAX_CALLS);
    let mut spent = Duration::ZERO;
    while per_call.len() < MAX_CALLS && (per_call.len() < MIN_CALLS || spent < BUDGET) {
        let start = thread_cpu_now();
        call();
        let elapsed = thread_cpu_now().saturating_sub(start);
        spent += elapsed;
        per_call.push(elapsed.as_secs_f64() * 1e3);
    }
    per_call.sort_by(f64::total_cmp);
    let n = per_call.len();
    let median = if n % 2 == 1 {
        per_call[n / 2]
    } else {
        (per_call[n / 2 - 1] + per_call[n / 2]) / 2.0
    };
    json!({ "min_ms": per_call[0], "median_ms": median, "calls": n })
}

/// The bars and their columns.
struct Series {
    bars: Vec<Bar>,
    open: Vec<f64>,
    high: Vec<f64>,
    low: Vec<f64>,
    close: Vec<f64>,
    volume: Vec<f64>,
}

impl Series {
    fn new(bars: Vec<Bar>) -> Self {
        let column = |f: fn(&Bar) -> f64| bars.iter().map(f).collect::<Vec<f64>>();
        Self {
            open: column(|b| b.open),
            high: column(|b| b.high),
            low: column(|b| b.low),
            close: column(|b| b.close),
            volume: column(|b| b.volume),
            bars,
        }
    }
}

/// The catalogue default of one parameter.
struct Defaults(&'static IndicatorInfo);

impl Defaults {
    fn real(&self, name: &str) -> f64 {
        self.0
            .params
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.default)
            .unwrap_or_else(|| panic!("{}: no default for `{name}`", self.0.name))
    }

    fn int(&self, name: &str) -> usize {
        self.real(name) as usize
    }
}

/// One timed call.
type Job<'a> = Box<dyn Fn() + 'a>;

fn ok<T>(t: T) -> Result<T, CoreError> {
    Ok(t)
}

/// Builds the column-form job: the constructor (at the defaults) once, the
/// call timed.
macro_rules! form {
    ($kind:literal, $make:expr, |$ind:ident| $call:expr) => {{
        let $ind = $make.expect("the catalogue defaults are valid");
        let job: Job<'_> = Box::new(move || {
            black_box($call.expect("valid columns"));
        });
        Some(($kind, job))
    }};
}

/// The column form of the catalogue entry `info`, if its type has one:
/// `("column", job)` for `over_column`/`over_columns` (TA-Lib's shape),
/// `("values", job)` for `over_values` (`Option` output).
fn column_form<'a>(info: &'static IndicatorInfo, s: &'a Series) -> Option<(&'static str, Job<'a>)> {
    let p = Defaults(info);
    let (o, h, l, c, v) = (&s.open[..], &s.high[..], &s.low[..], &s.close[..], &s.volume[..]);
    match info.name {
        "rsi" => form!("column", RelativeStrengthIndex::new(p.int("period")), |i| i
            .over_column(black_box(c))),
        "ema" => form!("column", ExponentialMovingAverage::new(p.int("period")), |i| i
            .over_column(black_box(c))),
        "atr" => form!("column", AverageTrueRange::new(p.int("period")), |i| i.over_columns(
            black_box(h),
            l,
            c
        )),
        "natr" => form!("column", NormalizedAverageTrueRange::new(p.int("period")), |i| i
            .over_columns(black_box(h), l, c)),
        "trange" => form!("column", ok(TrueRange::new()), |i| i.over_columns(black_box(h), l, c)),
        "avgprice" => form!("column", ok(AveragePrice::new()), |i| i.over_columns(
            black_box(o),
            h,
            l,
            c
        )),
        "medprice" => form!("column", ok(MedianPrice::new()), |i| i.over_columns(black_box(h), l)),
        "typprice" => form!("column", ok(TypicalPrice::new()), |i| i.over_columns(
            black_box(h),
            l,
            c
        )),
        "wclprice" => form!("column", ok(WeightedClosePrice::new()), |i| i.over_columns(
            black_box(h),
            l,
            c
        )),
        "midprice" => form!("column", MidpointPrice::new(p.int("period")), |i| i
            .over_columns(black_box(h), l)),
        "plus_dm" => form!("column", PlusDirectionalMovement::new(p.int("period")), |i| i
            .over_columns(black_box(h), l)),
        "minus_dm" => form!("column", MinusDirectionalMovement::new(p.int("period")), |i| i
            .over_columns(black_box(h), l)),
        "plus_di" => form!("column", PlusDirectionalIndicator::new(p.int("period")), |i| i
            .over_columns(black_box(h), l, c)),
        "minus_di" => form!("column", MinusDirectionalIndicator::new(p.int("period")), |i| i
            .over_columns(black_box(h), l, c)),
        "dx" => form!("column", DirectionalMovementIndex::new(p.int("period")), |i| i
            .over_columns(black_box(h), l, c)),
        "adxr" => form!("column", AverageDirectionalIndexRating::new(p.int("period")), |i| i
            .over_columns(black_box(h), l, c)),
        "ultosc" => form!(
            "column",
            UltimateOscillator::new(p.int("period1"), p.int("period2"), p.int("period3")),
            |i| i.over_columns(black_box(h), l, c)
        ),
        "aroon" => form!("column", Aroon::new(p.int("period")), |i| i
            .over_columns(black_box(h), l)),
        "aroonosc" => form!("column", AroonOscillator::new(p.int("period")), |i| i
            .over_columns(black_box(h), l)),
        "bop" => form!("column", ok(BalanceOfPower::new()), |i| i.over_columns(
            black_box(o),
            h,
            l,
            c
        )),
        "imi" => form!("column", IntradayMomentumIndex::new(p.int("period")), |i| i
            .over_columns(black_box(o), c)),
        "ad" => form!("column", ok(AccumulationDistribution::new()), |i| i.over_columns(
            black_box(h),
            l,
            c,
            v
        )),
        "adosc" => form!("column", ChaikinOscillator::new(p.int("fast"), p.int("slow")), |i| i
            .over_columns(black_box(h), l, c, v)),
        "stochf" => form!(
            "column",
            FastStochastic::with_matype(p.int("fastk"), p.int("fastd"), p.int("fastd_matype")),
            |i| i.over_columns(black_box(h), l, c)
        ),
        "correl" => form!("column", PearsonCorrelation::new(p.int("period")), |i| i
            .over_columns(black_box(h), l)),
        "beta" => form!("column", Beta::new(p.int("period")), |i| i
            .over_columns(black_box(h), l)),
        "mavp" => form!(
            "column",
            VariablePeriodMovingAverage::new(p.int("min_period"), p.int("max_period"), p.int("matype")),
            |i| i.over_columns(black_box(c), v)
        ),
        "sma" => form!("values", SimpleMovingAverage::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "wma" => form!("values", WeightedMovingAverage::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "dema" => form!("values", DoubleExponentialMovingAverage::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "tema" => form!("values", TripleExponentialMovingAverage::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "trima" => form!("values", TriangularMovingAverage::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "kama" => form!("values", KaufmanAdaptiveMovingAverage::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "t3" => form!(
            "values",
            T3MovingAverage::new(p.int("period"), p.real("vfactor")),
            |i| i.over_values(black_box(c))
        ),
        "ma" => form!("values", AnyMovingAverage::new(p.int("period"), p.int("matype")), |i| i
            .over_values(black_box(c))),
        "midpoint" => form!("values", Midpoint::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "trix" => form!("values", Trix::new(p.int("period")), |i| i.over_values(black_box(c))),
        "mom" => form!("values", Momentum::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "roc" => form!("values", RateOfChange::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "rocp" => form!("values", RateOfChangePercentage::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "rocr" => form!("values", RateOfChangeRatio::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "rocr100" => form!("values", RateOfChangeRatio100::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "cmo" => form!("values", ChandeMomentumOscillator::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "apo" => form!(
            "values",
            AbsolutePriceOscillator::new(p.int("fast"), p.int("slow"), p.int("matype")),
            |i| i.over_values(black_box(c))
        ),
        "ppo" => form!(
            "values",
            PercentagePriceOscillator::new(p.int("fast"), p.int("slow"), p.int("matype")),
            |i| i.over_values(black_box(c))
        ),
        "var" => form!("values", Variance::new(p.int("period"), p.real("nbdev")), |i| i
            .over_values(black_box(c))),
        "stddev" => form!(
            "values",
            StandardDeviation::new(p.int("period"), p.real("nbdev")),
            |i| i.over_values(black_box(c))
        ),
        "linearreg" => form!("values", LinearRegressionValue::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "linearreg_slope" => form!("values", LinearRegressionSlope::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "linearreg_intercept" => form!("values", LinearRegressionIntercept::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "linearreg_angle" => form!("values", LinearRegressionAngle::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "tsf" => form!("values", TimeSeriesForecast::new(p.int("period")), |i| i
            .over_values(black_box(c))),
        "ht_trendline" => form!("values", ok(HilbertTrendline::new()), |i| i.over_values(black_box(c))),
        "ht_dcperiod" => form!("values", ok(HilbertDominantCyclePeriod::new()), |i| i
            .over_values(black_box(c))),
        "ht_dcphase" => form!("values", ok(HilbertDominantCyclePhase::new()), |i| i
            .over_values(black_box(c))),
        "ht_trendmode" => form!("values", ok(HilbertTrendMode::new()), |i| i.over_values(black_box(c))),
        "ht_phasor" => form!("values", ok(HilbertPhasor::new()), |i| i.over_values(black_box(c))),
        "ht_sine" => form!("values", ok(HilbertSineWave::new()), |i| i.over_values(black_box(c))),
        "macd" => form!(
            "values",
            MovingAverageConvergenceDivergence::new(p.int("fast"), p.int("slow"), p.int("signal")),
            |i| i.over_values(black_box(c))
        ),
        "macdfix" => form!(
            "values",
            MovingAverageConvergenceDivergenceFixed::new(p.int("signal")),
            |i| i.over_values(black_box(c))
        ),
        "macdext" => form!(
            "values",
            MovingAverageConvergenceDivergenceExt::new(
                p.int("fast"),
                p.int("fast_matype"),
                p.int("slow"),
                p.int("slow_matype"),
                p.int("signal"),
                p.int("signal_matype"),
            ),
            |i| i.over_values(black_box(c))
        ),
        "bbands" => form!(
            "values",
            BollingerBands::with_matype(p.int("period"), p.real("nbdev_up"), p.real("nbdev_dn"), p.int("matype")),
            |i| i.over_values(black_box(c))
        ),
        "mama" => form!(
            "values",
            MesaAdaptiveMovingAverage::new(p.real("fastlimit"), p.real("slowlimit")),
            |i| i.over_values(black_box(c))
        ),
        "stochrsi" => form!(
            "values",
            StochasticRsi::with_matype(p.int("period"), p.int("fastk"), p.int("fastd"), p.int("fastd_matype")),
            |i| i.over_values(black_box(c))
        ),
        _ => None,
    }
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let keep = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let s = Series::new(million_bars());
    let checksum: f64 = s.close.iter().sum();
    // Printed so the TA-Lib side can be checked against the same series.
    eprintln!("analytics bench: {} bars, sum of closes {checksum:.5}", s.bars.len());

    let mut indicators = Vec::new();
    for info in catalog().iter().filter(|i| keep(i.name)) {
        let params: Vec<Value> = info
            .params
            .iter()
            .filter_map(|p| p.default.map(|d| json!([p.name, d])))
            .collect();
        let defaults = BTreeMap::new();
        let bars = time(|| {
            black_box(compute(info.name, &defaults, black_box(&s.bars)).expect("catalogue defaults compute"));
        });
        let column = column_form(info, &s).map(|(form, job)| {
            let mut t = time(&*job);
            t["form"] = json!(form);
            t
        });
        eprintln!(
            "{:<20} compute(&[Bar]) {:>9.3} ms, column {}",
            info.name,
            bars["median_ms"].as_f64().unwrap_or(f64::NAN),
            column
                .as_ref()
                .and_then(|c| c["median_ms"].as_f64())
                .map_or_else(|| "—".to_owned(), |m| format!("{m:.3} ms"))
        );
        indicators.push(json!({
            "name": info.name,
            "talib": info.talib,
            "inputs": info.inputs,
            "params": params,
            "bars": bars,
            "column": column,
        }));
    }

    let mut patterns = Vec::new();
    for pattern in Pattern::ALL.into_iter().filter(|p| keep(p.name())) {
        let t = time(|| {
            black_box(detect(pattern, black_box(&s.bars)).expect("valid bars"));
        });
        eprintln!(
            "{:<28} detect(&[Bar]) {:>9.3} ms",
            pattern.name(),
            t["median_ms"].as_f64().unwrap_or(f64::NAN)
        );
        patterns.push(json!({
            "name": pattern.name(),
            "talib": pattern.talib_name(),
            "bars": t,
        }));
    }

    let out = json!({
        "bars": s.bars.len(),
        "sum_close": checksum,
        "timing": {
            "clock": "thread CPU time",
            "min_calls": MIN_CALLS,
            "max_calls": MAX_CALLS,
            "budget_ms": BUDGET.as_millis() as u64,
        },
        "indicators": indicators,
        "patterns": patterns,
    });
    #[allow(
        clippy::print_stdout,
        reason = "the result line is the bench's output, read by `cargo xtask bench analytics`"
    )]
    {
        println!("analytics bench json: {out}");
    }
}
