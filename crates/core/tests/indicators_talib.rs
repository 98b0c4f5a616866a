//! Reference check: every indicator that TA-Lib has equals TA-Lib 0.8.2 to
//! `1e-9` relative (`|a - b| <= 1e-9 · max(1, |b|)`) on every CSV file of
//! `data/market/`, with the same first valid index.
//!
//! The expected values come from `tests/fixtures/talib/*.json`, written by
//! `scripts/fixtures/talib_fixtures.py` (first valid index plus a sample of
//! values per output). The bars are read from `../../data/market` and run
//! through `indicators::compute`, the entry point the service uses.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tradeterm_core::bars::parse_csv;
use tradeterm_core::indicators::compute;

const TOLERANCE: f64 = 1e-9;

#[derive(Debug, Deserialize)]
struct Fixture {
    data: String,
    rows: usize,
    versions: BTreeMap<String, String>,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
struct Case {
    indicator: String,
    params: BTreeMap<String, f64>,
    talib: String,
    outputs: BTreeMap<String, Expected>,
    /// MAVP cases: the bars' volume (MAVP's period) replaced by `(i * 7) % c`.
    #[serde(default)]
    periods_cycle: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct Expected {
    first: Option<usize>,
    idx: Vec<usize>,
    values: Vec<Option<f64>>,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture_files() -> Vec<PathBuf> {
    let dir = manifest_dir().join("tests/fixtures/talib");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn csv_files() -> Vec<String> {
    let dir = manifest_dir().join("../../data/market");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".csv"))
        .collect();
    names.sort();
    names
}

/// Compares one fixture file; returns (checked values, failure report lines,
/// worst relative error per indicator).
fn check_file(path: &Path, worst: &mut BTreeMap<String, f64>) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let fixture: Fixture = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let csv_path = manifest_dir().join("../..").join(&fixture.data);
    let csv = std::fs::read_to_string(&csv_path).unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
    let bars = parse_csv(&csv).unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
    assert_eq!(
        bars.len(),
        fixture.rows,
        "{}: row count differs from the fixture",
        fixture.data
    );
    assert!(fixture.versions.contains_key("talib"));

    let mut checked = 0;
    let mut failures = Vec::new();
    for case in &fixture.cases {
        let label = format!("{} {} {:?} [{}]", fixture.data, case.indicator, case.params, case.talib);
        let cycled;
        let input = match case.periods_cycle {
            Some(c) => {
                cycled = bars
                    .iter()
                    .enumerate()
                    .map(|(i, b)| tradeterm_core::Bar {
                        volume: ((i * 7) % c) as f64,
                        ..*b
                    })
                    .collect::<Vec<_>>();
                &cycled[..]
            }
            None => &bars[..],
        };
        let out = match compute(&case.indicator, &case.params, input) {
            Ok(out) => out,
            Err(e) => {
                failures.push(format!("{label}: compute failed: {e}"));
                continue;
            }
        };
        for (name, exp) in &case.outputs {
            let Some(ours) = out.get(name) else {
                failures.push(format!("{label}: no output `{name}`"));
                continue;
            };
            assert_eq!(ours.len(), bars.len(), "{label} {name}: length");
            let first = ours.iter().position(Option::is_some);
            if first != exp.first {
                failures.push(format!(
                    "{label} {name}: first valid index {first:?}, TA-Lib {:?}",
                    exp.first
                ));
                continue;
            }
            let mut bad = 0;
            let mut report = String::new();
            for (&i, want) in exp.idx.iter().zip(&exp.values) {
                checked += 1;
                let got = ours.get(i).copied().flatten();
                let ok = match (got, *want) {
                    (Some(a), Some(b)) => {
                        let rel = (a - b).abs() / b.abs().max(1.0);
                        let w = worst.entry(case.indicator.clone()).or_insert(0.0);
                        *w = w.max(rel);
                        rel <= TOLERANCE
                    }
                    (None, None) => true,
                    _ => false,
                };
                if !ok {
                    bad += 1;
                    if bad <= 3 {
                        let _ = write!(report, " [{i}] ours {got:?} TA-Lib {want:?};");
                    }
                }
            }
            if bad > 0 {
                failures.push(format!(
                    "{label} {name}: {bad} of {} values differ:{report}",
                    exp.idx.len()
                ));
            }
        }
    }
    (checked, failures)
}

#[test]
fn every_market_file_has_a_fixture() {
    let fixtures: Vec<String> = fixture_files()
        .iter()
        .filter_map(|p| p.file_stem().map(|s| format!("{}.csv", s.to_string_lossy())))
        .collect();
    assert_eq!(fixtures, csv_files(), "rerun scripts/fixtures/talib_fixtures.py");
}

#[test]
fn indicators_equal_talib_on_real_data() {
    let mut worst = BTreeMap::new();
    let mut total = 0;
    let mut failures = Vec::new();
    let files = fixture_files();
    assert!(!files.is_empty(), "no fixtures");
    for path in &files {
        let (checked, mut f) = check_file(path, &mut worst);
        total += checked;
        failures.append(&mut f);
    }
    eprintln!(
        "checked {total} values in {} files; worst relative error per indicator:",
        files.len()
    );
    for (name, w) in &worst {
        eprintln!("  {name:<10} {w:.3e}");
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
