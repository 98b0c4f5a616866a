//! Speed of market-structure detection over 100 000 bars: swings + fair value
//! gaps + BOS/CHoCH (the set `scripts/bench/smc_bench.py` times with
//! smartmoneyconcepts), and every family together.
//!
//! The bars are the real EUR/USD 15-minute series of `data/market/`
//! (`eurusd_15m_smc_upstream.csv`, 24 424 bars) laid end to end, every other
//! copy played backwards (bars reversed, open and close swapped) so the price
//! path stays continuous, truncated to 100 000 bars and re-timed every 15
//! minutes from the first bar. No arithmetic touches the prices, so the
//! Python script builds bit-identical bars. The measured ratio is in
//! `docs/structure.md`.
//!
//! Run: `cargo bench -p tradeterm-core --bench structure`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tradeterm_core::Bar;
use tradeterm_core::bars::parse_csv;
use tradeterm_core::structure::{BosChochConfig, FvgConfig, StructureConfig, StructureDetector, detect};

const BARS: usize = 100_000;
const SOURCE: &str = "../../data/market/eurusd_15m_smc_upstream.csv";
const STEP_MS: i64 = 15 * 60_000;

fn bench_bars() -> Vec<Bar> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SOURCE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let base = parse_csv(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = base[0].time;
    let mut out = Vec::with_capacity(BARS);
    let mut copy = 0usize;
    while out.len() < BARS {
        let forward = copy.is_multiple_of(2);
        let bars: Box<dyn Iterator<Item = &Bar>> = if forward {
            Box::new(base.iter())
        } else {
            Box::new(base.iter().rev())
        };
        for b in bars.take(BARS - out.len()) {
            let (open, close) = if forward { (b.open, b.close) } else { (b.close, b.open) };
            let time = start + out.len() as i64 * STEP_MS;
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

/// Swings (smc's default `swing_length` 50), fair value gaps and BOS/CHoCH:
/// the work of smc's `swing_highs_lows` + `fvg` + `bos_choch`.
fn smc_set() -> StructureConfig {
    StructureConfig {
        swing_length: 50,
        fvg: Some(FvgConfig::default()),
        order_blocks: None,
        liquidity: None,
        bos_choch: Some(BosChochConfig::default()),
    }
}

fn bench(c: &mut Criterion) {
    let bars = bench_bars();
    assert_eq!(bars.len(), BARS);
    let checksum: f64 = bars.iter().map(|b| b.close).sum();
    let events = detect(&bars, &smc_set()).expect("valid series");
    // Printed so the Python side can be checked against the same series.
    eprintln!(
        "structure bench: {} bars, sum of closes {checksum:.5}, {} events (swings+fvg+bos)",
        bars.len(),
        events.len()
    );

    let mut group = c.benchmark_group("structure");
    group.throughput(Throughput::Elements(BARS as u64));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(6));
    group.bench_function("swings_fvg_bos_choch_100k", |b| {
        b.iter(|| detect(black_box(&bars), &smc_set()).expect("valid series"))
    });
    group.bench_function("all_families_100k", |b| {
        b.iter(|| detect(black_box(&bars), &StructureConfig::default()).expect("valid series"))
    });
    group.bench_function("streaming_update_100k", |b| {
        b.iter(|| {
            let mut detector = StructureDetector::new(smc_set()).expect("valid config");
            let mut count = 0usize;
            for bar in black_box(&bars) {
                count += detector.update(bar).expect("valid bar").len();
            }
            count
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
