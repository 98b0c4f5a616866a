//! The SMA is pandas' rolling mean (`pd.Series(closes).rolling(n).mean()`,
//! what backtesting.py's `SMA` is), bit for bit, on every series of
//! `data/market/` for periods 1 to 200 (fixtures made by
//! `scripts/fixtures/pandas_sma_fixtures.py`: a digest of every value's bits
//! and checkpoint values to locate a mismatch). Bollinger's middle line and
//! the backtest engine's SMA give the same bits (unit tests and
//! `indicators_ties.rs`); streaming equals batch (`indicators_props.rs`).

use std::path::PathBuf;

use serde_json::Value;
use tradeterm_core::bars::parse_csv;
use tradeterm_core::indicators::{BollingerBands, Next, SimpleMovingAverage};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// FNV-1a over the values' 64-bit patterns, as the fixture script computes it.
fn digest(values: &[f64]) -> String {
    let h = values.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, v| {
        (h ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

#[test]
fn sma_is_pandas_rolling_mean_bit_for_bit() {
    let dir = root().join("crates/core/tests/fixtures/pandas_sma");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "fixtures: {files:?}");
    let mut checked = 0;
    for path in files {
        let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let source = fixture["source"].as_str().unwrap();
        let bars = parse_csv(&std::fs::read_to_string(root().join("data/market").join(source)).unwrap()).unwrap();
        assert_eq!(fixture["bars"].as_u64(), Some(bars.len() as u64), "{source}: bars");
        let periods = fixture["periods"].as_object().unwrap();
        assert!(periods.len() >= 10, "{source}: periods");
        for (period, want) in periods {
            let n: usize = period.parse().unwrap();
            let out = SimpleMovingAverage::new(n).unwrap().over(&bars).unwrap();
            assert!(out[..n - 1].iter().all(Option::is_none), "{source} SMA({n}): warm-up");
            let values: Vec<f64> = out[n - 1..].iter().map(|v| v.unwrap()).collect();
            // Checkpoints first: they say where a difference starts.
            for (i, text) in want["checkpoints"].as_object().unwrap() {
                let i: usize = i.parse().unwrap();
                let expected: f64 = text.as_str().unwrap().parse().unwrap();
                assert_eq!(
                    out[i].unwrap().to_bits(),
                    expected.to_bits(),
                    "{source} SMA({n}) on bar {i}: {:?} vs pandas {expected:?}",
                    out[i]
                );
            }
            assert_eq!(
                digest(&values),
                want["digest"].as_str().unwrap(),
                "{source} SMA({n}): the bits differ from pandas' somewhere"
            );
            checked += 1;
        }
    }
    assert!(checked >= 90, "series × periods checked: {checked}");
}

/// Streaming, batch and Bollinger's middle line give the same bits on a
/// long real series.
#[test]
fn streaming_and_bollinger_middle_are_the_same_bits() {
    let bars =
        parse_csv(&std::fs::read_to_string(root().join("data/market/eurusd_15m_smc_upstream.csv")).unwrap()).unwrap();
    for n in [2, 10, 20, 50] {
        let batch = SimpleMovingAverage::new(n).unwrap().over(&bars).unwrap();
        let mut s = SimpleMovingAverage::new(n).unwrap();
        let streamed: Vec<_> = bars.iter().map(|b| s.next(b.close)).collect();
        assert_eq!(
            streamed.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>(),
            batch.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>(),
            "SMA({n})"
        );
        let middle = BollingerBands::new(n, 2.0, 2.0).unwrap().over(&bars).unwrap().middle;
        assert_eq!(
            middle.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>(),
            batch.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>(),
            "Bollinger({n}) middle"
        );
    }
}
