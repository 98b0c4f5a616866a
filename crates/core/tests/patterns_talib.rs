//! Reference check: every candlestick pattern equals TA-Lib 0.8.2's `CDL*`
//! function exactly (same bars non-zero, same values) on every CSV file of
//! `data/market/`, with TA-Lib's default parameters and candle settings.
//!
//! The expected values come from `tests/fixtures/patterns/*.json`, written by
//! `scripts/fixtures/talib_patterns_fixtures.py`: per dataset and per
//! function, the indices and values of the non-zero outputs (every other bar
//! is 0). The bars are read from `../../data/market` with `bars::parse_csv`.
//!
//! Five patterns occur on none of those series (kicking, kicking by length,
//! three stars in the south, concealing baby swallow, mat hold), so the same
//! script also writes `tests/fixtures/patterns/synthetic/planted.json`: quiet
//! bars with those patterns planted in them, and TA-Lib's output of every
//! function on that series. Every pattern is compared there too, and every
//! pattern must be found by TA-Lib somewhere, so no comparison is empty.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use tradeterm_core::Bar;
use tradeterm_core::bars::parse_csv;
use tradeterm_core::patterns::{self, Direction, Pattern};

#[derive(Debug, Deserialize)]
struct Fixture {
    data: String,
    rows: usize,
    versions: BTreeMap<String, String>,
    patterns: BTreeMap<String, Expected>,
    with_penetration: Vec<WithPenetration>,
}

/// TA-Lib's non-zero outputs of one function at a non-default penetration.
#[derive(Debug, Deserialize)]
struct WithPenetration {
    function: String,
    penetration: f64,
    idx: Vec<usize>,
    values: Vec<i32>,
}

/// `synthetic/planted.json`: the bars (open, high, low, close) and TA-Lib's
/// non-zero outputs on them.
#[derive(Debug, Deserialize)]
struct Planted {
    versions: BTreeMap<String, String>,
    bars: Vec<[f64; 4]>,
    patterns: BTreeMap<String, Expected>,
    with_penetration: Vec<WithPenetration>,
}

#[derive(Debug, Deserialize)]
struct Expected {
    idx: Vec<usize>,
    values: Vec<i32>,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sorted_files(dir: &std::path::Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    files.sort();
    files
}

fn load<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> T {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// First differences between TA-Lib's non-zero bars and ours, for the report.
fn diff(expected: &[(usize, i32)], got: &[(usize, i32)]) -> String {
    let exp: BTreeMap<usize, i32> = expected.iter().copied().collect();
    let ours: BTreeMap<usize, i32> = got.iter().copied().collect();
    let mut lines = Vec::new();
    for i in exp.keys().chain(ours.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (a, b) = (exp.get(i).copied().unwrap_or(0), ours.get(i).copied().unwrap_or(0));
        if a != b {
            lines.push(format!("bar {i}: TA-Lib {a}, ours {b}"));
        }
    }
    let n = lines.len();
    lines.truncate(5);
    format!("{n} bars differ; first: {}", lines.join("; "))
}

/// Non-zero values of `out` as (bar, value) pairs.
fn non_zero(out: &[i32]) -> Vec<(usize, i32)> {
    out.iter()
        .enumerate()
        .filter(|(_, v)| **v != 0)
        .map(|(i, v)| (i, *v))
        .collect()
}

/// Compares every `with_penetration` entry with `detect_with`; returns the
/// mismatches and, per function, the penetrations checked.
fn check_penetrations(
    label: &str,
    bars: &[Bar],
    entries: &[WithPenetration],
    checked: &mut BTreeMap<String, Vec<f64>>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for e in entries {
        let pattern: Pattern = e
            .function
            .parse()
            .unwrap_or_else(|err| panic!("{label} {}: {err}", e.function));
        assert_ne!(
            pattern.default_penetration(),
            None,
            "{label}: {} takes no penetration",
            e.function
        );
        let expected: Vec<(usize, i32)> = e.idx.iter().copied().zip(e.values.iter().copied()).collect();
        let out = patterns::detect_with(pattern, bars, Some(e.penetration))
            .unwrap_or_else(|err| panic!("{label} {}: {err}", e.function));
        let got = non_zero(&out);
        let seen = checked.entry(e.function.clone()).or_default();
        if !seen.contains(&e.penetration) {
            seen.push(e.penetration);
        }
        if got != expected {
            failures.push(format!(
                "{label} {} penetration {}: {}",
                e.function,
                e.penetration,
                diff(&expected, &got)
            ));
        }
    }
    failures
}

#[test]
fn every_pattern_equals_talib_on_every_dataset() {
    let fixtures = sorted_files(&manifest_dir().join("tests/fixtures/patterns"), "json");
    let csvs = sorted_files(&manifest_dir().join("../../data/market"), "csv");
    assert_eq!(
        fixtures
            .iter()
            .map(|p| p.file_stem().map(ToOwned::to_owned))
            .collect::<Vec<_>>(),
        csvs.iter()
            .map(|p| p.file_stem().map(ToOwned::to_owned))
            .collect::<Vec<_>>(),
        "one fixture per data/market CSV: rerun scripts/fixtures/talib_patterns_fixtures.py"
    );

    let mut failures = Vec::new();
    let mut hits_per_pattern: BTreeMap<&str, usize> = BTreeMap::new();
    let mut penetrations: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for path in &fixtures {
        let fixture: Fixture = load(path);
        assert!(
            fixture.versions.get("talib").is_some_and(|v| v == "0.8.2"),
            "{:?}",
            fixture.versions
        );
        let csv_path = manifest_dir().join("../..").join(&fixture.data);
        let csv = std::fs::read_to_string(&csv_path).unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
        let bars = parse_csv(&csv).unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
        assert_eq!(bars.len(), fixture.rows, "{}", fixture.data);

        let names: Vec<&str> = Pattern::ALL.iter().map(|p| p.talib_name()).collect();
        assert_eq!(
            fixture
                .patterns
                .keys()
                .map(String::as_str)
                .collect::<std::collections::BTreeSet<_>>(),
            names.iter().copied().collect(),
            "{}: fixture and Pattern::ALL list different functions",
            fixture.data
        );

        for pattern in Pattern::ALL {
            let expected = &fixture.patterns[pattern.talib_name()];
            assert_eq!(expected.idx.len(), expected.values.len());
            let expected: Vec<(usize, i32)> = expected
                .idx
                .iter()
                .copied()
                .zip(expected.values.iter().copied())
                .collect();
            let out = patterns::detect(pattern, &bars).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert_eq!(out.len(), bars.len());
            let got: Vec<(usize, i32)> = out
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(i, v)| (i, *v))
                .collect();
            *hits_per_pattern.entry(pattern.talib_name()).or_default() += expected.len();
            if got != expected {
                failures.push(format!(
                    "{} {}: {}",
                    fixture.data,
                    pattern.talib_name(),
                    diff(&expected, &got)
                ));
            }
        }

        failures.extend(check_penetrations(
            &fixture.data,
            &bars,
            &fixture.with_penetration,
            &mut penetrations,
        ));

        // `scan` reports exactly TA-Lib's non-zero values, ordered by bar,
        // with the time of the bar and the direction of the sign.
        let hits = patterns::scan(&bars).unwrap_or_else(|e| panic!("{}: {e}", fixture.data));
        let mut expected: Vec<(usize, usize, i32)> = Vec::new();
        for (order, pattern) in Pattern::ALL.iter().enumerate() {
            let e = &fixture.patterns[pattern.talib_name()];
            expected.extend(e.idx.iter().zip(&e.values).map(|(&i, &v)| (i, order, v)));
        }
        expected.sort_unstable();
        let got: Vec<(usize, usize, i32)> = hits
            .iter()
            .map(|h| {
                (
                    h.index,
                    Pattern::ALL.iter().position(|p| *p == h.pattern).unwrap_or(usize::MAX),
                    h.value,
                )
            })
            .collect();
        if got != expected {
            failures.push(format!(
                "{}: scan reports {} hits, TA-Lib {} (or in another order)",
                fixture.data,
                got.len(),
                expected.len()
            ));
        }
        for h in &hits {
            assert_eq!(h.time, bars[h.index].time);
            let expected = match (h.pattern.is_directional(), h.value > 0) {
                (false, _) => Direction::Neutral,
                (true, true) => Direction::Bullish,
                (true, false) => Direction::Bearish,
            };
            assert_eq!(h.direction, expected, "{h:?}");
        }
    }
    let planted: Planted = load(&manifest_dir().join("tests/fixtures/patterns/synthetic/planted.json"));
    assert!(
        planted.versions.get("talib").is_some_and(|v| v == "0.8.2"),
        "{:?}",
        planted.versions
    );
    let bars: Vec<Bar> = planted
        .bars
        .iter()
        .zip(0..)
        .map(|(&[open, high, low, close], time)| Bar {
            time,
            open,
            high,
            low,
            close,
            volume: 0.0,
        })
        .collect();
    for pattern in Pattern::ALL {
        let expected = &planted.patterns[pattern.talib_name()];
        let expected: Vec<(usize, i32)> = expected
            .idx
            .iter()
            .copied()
            .zip(expected.values.iter().copied())
            .collect();
        let out = patterns::detect(pattern, &bars).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        let got: Vec<(usize, i32)> = out
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0)
            .map(|(i, v)| (i, *v))
            .collect();
        *hits_per_pattern.entry(pattern.talib_name()).or_default() += expected.len();
        if got != expected {
            failures.push(format!("planted {}: {}", pattern.talib_name(), diff(&expected, &got)));
        }
    }

    failures.extend(check_penetrations(
        "planted",
        &bars,
        &planted.with_penetration,
        &mut penetrations,
    ));
    // Every pattern with a penetration is checked at three values besides
    // its default.
    for pattern in Pattern::ALL {
        if pattern.default_penetration().is_some() {
            let n = penetrations.get(pattern.talib_name()).map_or(0, Vec::len);
            assert!(n >= 3, "{pattern}: {n} other penetrations checked");
        }
    }

    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every pattern occurs somewhere, so no comparison is vacuous.
    for pattern in Pattern::ALL {
        assert!(
            hits_per_pattern.get(pattern.talib_name()).is_some_and(|n| *n > 0),
            "{pattern}: TA-Lib finds it nowhere in data/market nor in the planted series, the check would be empty"
        );
    }
}
