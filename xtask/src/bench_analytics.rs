//! `cargo xtask bench analytics`: the core analytics benchmarks beside their
//! Python references, in the same run, as a table of ratios.
//!
//! - Ours: `cargo bench -p tradeterm-core --bench indicators --bench
//!   structure` (criterion). The indicator bench measures thread CPU time,
//!   the structure bench wall time. Criterion's raw samples are read back from
//!   `sample.json` (in a private `CRITERION_HOME`), giving the minimum and the
//!   median time per call.
//! - References: `scripts/bench/talib_bench.py --json` (TA-Lib RSI/EMA/ATR
//!   over the same 1 000 000 bars; thread CPU time, min and median of 40
//!   calls) and `scripts/bench/smc_bench.py --json --repeat 3`
//!   (smartmoneyconcepts swings + FVG + BOS/CHoCH over the same 100 000 bars;
//!   wall time, best of 3). The pinned packages are installed with pip when
//!   missing, in the project's virtual environment (`.venv`); without `python3` (or when the install fails) a reference is
//!   skipped with a message and only our side is printed.
//!
//! Both sides build the series from the same CSV file of `data/market/` with
//! the same construction; each prints the left-to-right sum of its closes and
//! the table says whether they agree.
//!
//! The machine is shared, so absolute times move from run to run; the ratios
//! of one run are the figures to report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Result, cargo, run, workspace_root};

/// pip pins of the references (the versions the figures and fixtures quote).
const TALIB_PINS: &[&str] = &["TA-Lib==0.8.2", "numpy==2.4.6"];
const SMC_PINS: &[&str] = &["smartmoneyconcepts==0.0.27"];

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// Minimum and median time per call, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Timing {
    min_ms: f64,
    median_ms: f64,
}

impl Timing {
    fn from_per_call(mut per_call_ms: Vec<f64>) -> Option<Self> {
        per_call_ms.retain(|v| v.is_finite());
        if per_call_ms.is_empty() {
            return None;
        }
        per_call_ms.sort_by(f64::total_cmp);
        let n = per_call_ms.len();
        let median_ms = if n % 2 == 1 {
            per_call_ms[n / 2]
        } else {
            (per_call_ms[n / 2 - 1] + per_call_ms[n / 2]) / 2.0
        };
        Some(Self {
            min_ms: per_call_ms[0],
            median_ms,
        })
    }
}

/// Reads criterion's raw samples of one benchmark (`group/function`).
fn criterion_timing(home: &Path, id: &str) -> Result<Timing> {
    let path = home.join(id).join("new/sample.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let numbers = |key: &str| -> Vec<f64> {
        v[key]
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default()
    };
    let (iters, times) = (numbers("iters"), numbers("times"));
    // Times are nanoseconds per sample of `iters` calls.
    let per_call = iters
        .iter()
        .zip(&times)
        .filter(|(i, _)| **i > 0.0)
        .map(|(i, t)| t / i / 1e6)
        .collect();
    Timing::from_per_call(per_call).ok_or_else(|| format!("{}: no samples", path.display()))
}

/// The `sum of closes` a bench printed on stderr, if any.
fn checksum(stderr: &str, prefix: &str) -> Option<f64> {
    stderr
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.split("sum of closes ").nth(1))
        .and_then(|rest| rest.split([',', ' ']).next())
        .and_then(|v| v.trim().parse().ok())
}

/// Whether the project's virtual environment imports `module`; installs
/// `pins` there if not.
fn python_ready(module: &str, pins: &[&str]) -> std::result::Result<(), String> {
    crate::python::ready(module, pins)
}

/// Runs a reference script with `--json`; its last stdout line is the result.
fn python_json(script: &str, extra: &[&str]) -> std::result::Result<serde_json::Value, String> {
    let root = workspace_root();
    let out = Command::new(crate::python::python())
        .arg(root.join(script))
        .arg("--json")
        .args(extra)
        .current_dir(&root)
        .output()
        .map_err(|e| format!("{script}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{script} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("{script}: {e} in {line:?}"))
}

/// TA-Lib's thread-CPU timings per case, its version line and sum of closes.
fn talib() -> std::result::Result<(BTreeMap<String, Timing>, String, f64), String> {
    python_ready("talib", TALIB_PINS)?;
    let v = python_json("scripts/bench/talib_bench.py", &[])?;
    let mut out = BTreeMap::new();
    if let Some(results) = v["results"].as_object() {
        for (name, r) in results {
            if let (Some(min_ms), Some(median_ms)) = (r["cpu_min_ms"].as_f64(), r["cpu_median_ms"].as_f64()) {
                out.insert(name.clone(), Timing { min_ms, median_ms });
            }
        }
    }
    let version = format!(
        "TA-Lib {} (C core {}), numpy {}",
        v["talib"].as_str().unwrap_or("?"),
        v["talib_core"].as_str().unwrap_or("?"),
        v["numpy"].as_str().unwrap_or("?")
    );
    Ok((out, version, v["sum_close"].as_f64().unwrap_or(f64::NAN)))
}

/// smc's best total time of 3 runs, its version and sum of closes.
fn smc() -> std::result::Result<(Timing, String, f64), String> {
    python_ready("smartmoneyconcepts", SMC_PINS)?;
    let v = python_json("scripts/bench/smc_bench.py", &["--repeat", "3"])?;
    let total = v["total_s"].as_f64().ok_or("smc_bench.py: no total_s")? * 1e3;
    let version = format!("smartmoneyconcepts {}", v["smc"].as_str().unwrap_or("?"));
    // Best of N: min and median are the same figure here.
    let timing = Timing {
        min_ms: total,
        median_ms: total,
    };
    Ok((timing, version, v["sum_close"].as_f64().unwrap_or(f64::NAN)))
}

fn same_series(ours: Option<f64>, theirs: f64) -> &'static str {
    match ours {
        // The Rust benches print the sum with 5 decimals.
        Some(a) if (a - theirs).abs() <= 1e-5 + 1e-12 * a.abs() => "same series (sums of closes agree)",
        Some(_) => "WARNING: the sums of closes differ, the series are not the same",
        None => "series not checked (the Rust bench printed no sum)",
    }
}

fn fmt_ms(t: Option<Timing>) -> String {
    t.map(|t| format!("{:.3} / {:.3}", t.min_ms, t.median_ms))
        .unwrap_or_else(|| "—".into())
}

/// A ratio with two decimals, or as `1/N` when it is below 0.1.
fn ratio(r: f64) -> String {
    if r < 0.1 && r > 0.0 {
        format!("1/{:.0}", 1.0 / r)
    } else {
        format!("{r:.2}")
    }
}

fn fmt_ratio(ours: Timing, theirs: Option<Timing>) -> String {
    theirs
        .map(|r| {
            format!(
                "{} / {}",
                ratio(ours.min_ms / r.min_ms),
                ratio(ours.median_ms / r.median_ms)
            )
        })
        .unwrap_or_else(|| "—".into())
}

pub fn analytics() -> Result<()> {
    let root = workspace_root();
    let home = target_dir().join("xtask-bench-analytics");
    let _ = std::fs::remove_dir_all(&home);
    // Build with live output, then run with stderr captured for the checksums.
    let bench_args = [
        "bench",
        "-p",
        "tradeterm-core",
        "--bench",
        "indicators",
        "--bench",
        "structure",
    ];
    run(cargo().current_dir(&root).args(bench_args).arg("--no-run"))?;
    println!("$ cargo {} (CRITERION_HOME={})", bench_args.join(" "), home.display());
    let out = cargo()
        .current_dir(&root)
        .args(bench_args)
        .env("CRITERION_HOME", &home)
        .output()
        .map_err(|e| format!("cargo bench: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("cargo bench failed with {}:\n{stderr}", out.status));
    }
    let sum_indicators = checksum(&stderr, "indicators bench:");
    let sum_structure = checksum(&stderr, "structure bench:");

    let (talib, talib_note) = match talib() {
        Ok((t, version, sum)) => (t, format!("{version}; {}", same_series(sum_indicators, sum))),
        Err(e) => (BTreeMap::new(), format!("TA-Lib reference skipped: {e}")),
    };
    let (smc, smc_note) = match smc() {
        Ok((t, version, sum)) => (Some(t), format!("{version}; {}", same_series(sum_structure, sum))),
        Err(e) => (None, format!("smartmoneyconcepts reference skipped: {e}")),
    };

    // (row label, criterion id, reference)
    let rows: [(&str, &str, Option<Timing>); 9] = [
        (
            "RSI(14) column",
            "indicators_1m/rsi14_column",
            talib.get("rsi14").copied(),
        ),
        (
            "EMA(20) column",
            "indicators_1m/ema20_column",
            talib.get("ema20").copied(),
        ),
        (
            "ATR(14) columns",
            "indicators_1m/atr14_columns",
            talib.get("atr14").copied(),
        ),
        (
            "RSI(14) over(&[Bar])",
            "indicators_1m/rsi14_bars",
            talib.get("rsi14").copied(),
        ),
        (
            "EMA(20) over(&[Bar])",
            "indicators_1m/ema20_bars",
            talib.get("ema20").copied(),
        ),
        (
            "ATR(14) over(&[Bar])",
            "indicators_1m/atr14_bars",
            talib.get("atr14").copied(),
        ),
        (
            "RSI(14) over_values",
            "indicators_1m/rsi14_values",
            talib.get("rsi14").copied(),
        ),
        (
            "EMA(20) over_values",
            "indicators_1m/ema20_values",
            talib.get("ema20").copied(),
        ),
        (
            "structure: swings+FVG+BOS/CHoCH",
            "structure/swings_fvg_bos_choch_100k",
            smc,
        ),
    ];
    println!();
    println!("Core analytics, same run. Indicators: 1 000 000 bars, thread CPU time, ms per call (min / median);");
    println!("structure: 100 000 bars, wall time (ours: criterion min / median; smc: best of 3).");
    println!("  {talib_note}");
    println!("  {smc_note}");
    println!();
    println!("| benchmark | ours ms (min / median) | reference ms (min / median) | ours / reference (min / median) |");
    println!("|---|---:|---:|---:|");
    for (label, id, reference) in rows {
        let ours = criterion_timing(&home, id)?;
        println!(
            "| {label} | {} | {} | {} |",
            fmt_ms(Some(ours)),
            fmt_ms(reference),
            fmt_ratio(ours, reference)
        );
    }
    println!();
    println!("Reference: TA-Lib (RSI, EMA, ATR on f64 numpy columns) and smartmoneyconcepts (structure).");
    println!("A ratio below 1 means ours is faster.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_min() {
        let t = Timing::from_per_call(vec![3.0, 1.0, 2.0, f64::NAN]).unwrap();
        assert_eq!((t.min_ms, t.median_ms), (1.0, 2.0));
        let t = Timing::from_per_call(vec![4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(t.median_ms, 2.5);
        assert!(Timing::from_per_call(vec![]).is_none());
        assert_eq!(ratio(0.76), "0.76");
        assert_eq!(ratio(1.0 / 880.0), "1/880");
    }

    #[test]
    fn reads_the_printed_sum() {
        let err = "noise\nindicators bench: 1000000 bars, sum of closes 7177042537.30441\n";
        assert_eq!(checksum(err, "indicators bench:"), Some(7_177_042_537.304_41));
        let err = "structure bench: 100000 bars, sum of closes 108431.12345, 9 events (swings+fvg+bos)";
        assert_eq!(checksum(err, "structure bench:"), Some(108_431.123_45));
        assert_eq!(checksum("nothing", "structure bench:"), None);
    }
}
