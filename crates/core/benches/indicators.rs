//! Batch speed of RSI(14), EMA(20), ATR(14) and SMA(20) over 1 000 000 bars.
//!
//! Three views of each indicator: the column form (`over_column` /
//! `over_columns`: `f64` columns in, a `Vec<f64>` with NaN warm-up out — what
//! TA-Lib computes on, so the like-for-like comparison), the `Bar`-slice form
//! (`over(&[Bar])` → `Vec<Option<f64>>`, the form `compute` uses) and, for the
//! close-based ones, `over_values(&[f64])` → `Vec<Option<f64>>`.
//!
//! Measured in **thread CPU time** (`CLOCK_THREAD_CPUTIME_ID`, the clock
//! `time.thread_time_ns` reads in `scripts/bench/talib_bench.py`): on a busy
//! shared machine it is disturbed far less than wall time. Every call
//! allocates its output, as TA-Lib's Python functions do.
//!
//! The bars are those of `common::million_bars` (the series
//! `scripts/bench/talib_bench.py` builds for TA-Lib).
//!
//! Run: `cargo bench -p tradeterm-core --bench indicators`. `cargo xtask
//! bench analytics` runs the `analytics` bench instead: every function of the
//! catalogue against TA-Lib in the same run.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tradeterm_core::indicators::{
    AverageTrueRange, ExponentialMovingAverage, RelativeStrengthIndex, SimpleMovingAverage,
};

mod common;

use common::{BARS, million_bars, thread_cpu_now};

/// CPU time of the calling thread (criterion runs the routine on its own thread).
struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu_now()
    }

    fn end(&self, start: Duration) -> Duration {
        thread_cpu_now().saturating_sub(start)
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

/// Nanoseconds scaled like criterion's wall-time formatter.
struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (div, unit) = if typical < 1e3 {
            (1.0, "ns")
        } else if typical < 1e6 {
            (1e3, "µs")
        } else if typical < 1e9 {
            (1e6, "ms")
        } else {
            (1e9, "s")
        };
        values.iter_mut().for_each(|v| *v /= div);
        unit
    }

    fn scale_throughputs(&self, _typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match *throughput {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n as f64,
            _ => 1.0,
        };
        // Million elements per CPU second.
        values.iter_mut().for_each(|v| *v = n / *v * 1e3);
        "Melem/s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

fn bench(c: &mut Criterion<ThreadCpuTime>) {
    let bars = million_bars();
    let closes: Vec<f64> = bars.iter().map(|b| b.close).collect();
    let highs: Vec<f64> = bars.iter().map(|b| b.high).collect();
    let lows: Vec<f64> = bars.iter().map(|b| b.low).collect();
    let checksum: f64 = closes.iter().sum();
    // Printed so the TA-Lib side can be checked against the same series.
    eprintln!("indicators bench: {} bars, sum of closes {checksum:.5}", bars.len());
    let rsi = RelativeStrengthIndex::new(14).expect("valid period");
    let ema = ExponentialMovingAverage::new(20).expect("valid period");
    let atr = AverageTrueRange::new(14).expect("valid period");
    let sma = SimpleMovingAverage::new(20).expect("valid period");

    let mut group = c.benchmark_group("indicators_1m");
    group.throughput(Throughput::Elements(BARS as u64));
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("rsi14_column", |b| {
        b.iter(|| rsi.over_column(black_box(&closes)).expect("valid"))
    });
    group.bench_function("ema20_column", |b| {
        b.iter(|| ema.over_column(black_box(&closes)).expect("valid"))
    });
    group.bench_function("atr14_columns", |b| {
        b.iter(|| atr.over_columns(black_box(&highs), &lows, &closes).expect("valid"))
    });
    group.bench_function("rsi14_bars", |b| {
        b.iter(|| rsi.over(black_box(&bars)).expect("valid bars"))
    });
    group.bench_function("ema20_bars", |b| {
        b.iter(|| ema.over(black_box(&bars)).expect("valid bars"))
    });
    group.bench_function("atr14_bars", |b| {
        b.iter(|| atr.over(black_box(&bars)).expect("valid bars"))
    });
    group.bench_function("rsi14_values", |b| {
        b.iter(|| rsi.over_values(black_box(&closes)).expect("valid"))
    });
    group.bench_function("ema20_values", |b| {
        b.iter(|| ema.over_values(black_box(&closes)).expect("valid"))
    });
    group.bench_function("sma20_bars", |b| {
        b.iter(|| sma.over(black_box(&bars)).expect("valid bars"))
    });
    group.bench_function("sma20_values", |b| {
        b.iter(|| sma.over_values(black_box(&closes)).expect("valid"))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = bench
}
criterion_main!(benches);
