//! `cargo xtask bench analytics`: the core analytics benchmarks beside their
//! Python references, in the same run, as tables of ratios.
//!
//! - Ours: `cargo bench -p tradeterm-core --bench analytics --bench
//!   structure`. The analytics bench times every function of the indicator
//!   catalogue at its defaults (the column form where the type has one, and
//!   `compute` on `&[Bar]`) and every candlestick pattern (`detect` on
//!   `&[Bar]`) over 1 000 000 bars, in thread CPU time (min and median of
//!   5–15 calls), and prints them with the cases as one JSON line. The
//!   structure bench (criterion, wall time) is read back from criterion's
//!   `sample.json` (in a private `CRITERION_HOME`).
//! - References: `scripts/bench/talib_bench.py --json --cases FILE`, FILE
//!   being the analytics bench's JSON, so TA-Lib runs the same list with the
//!   same parameters (each catalogue entry's TA-Lib alias, inputs and
//!   defaults; same clock and call policy), and `scripts/bench/smc_bench.py
//!   --json --repeat 3` (smartmoneyconcepts swings + FVG + BOS/CHoCH over the
//!   same 100 000 bars; wall time, best of 3). The pinned packages are
//!   installed with pip when missing, in the project's virtual environment
//!   (`.venv`); without `python3` (or when the install fails) a reference is
//!   skipped with a message and only our side is printed.
//!
//! Both sides build the series from the same CSV file of `data/market/` with
//! the same construction; each prints the left-to-right sum of its closes and
//! the table says whether they agree.
//!
//! Targets (issue 33): every function at most TA-Lib's time in column form
//! with a median ratio at most 0.8, and at most TA-Lib's time through
//! `&[Bar]`; the summary lines count the functions that meet them, on the
//! ratios of the median times.
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

/// TA-Lib's side of the analytics bench: per catalogue name and per pattern
/// name, its timing (or why there is none), its notes, its version line and
/// sum of closes.
struct TalibRun {
    indicators: BTreeMap<String, Reference>,
    patterns: BTreeMap<String, Reference>,
    version: String,
    sum_close: f64,
}

/// One TA-Lib reference: its functions and timing, or why there is none.
#[derive(Debug, Clone, Default)]
struct Reference {
    functions: Vec<String>,
    timing: Option<Timing>,
    notes: Vec<String>,
    error: Option<String>,
}

impl Reference {
    fn parse(v: &serde_json::Value) -> Self {
        let strings = |key: &str| -> Vec<String> {
            v[key]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                .unwrap_or_default()
        };
        Self {
            functions: strings("talib"),
            timing: timing_of(v),
            notes: strings("notes"),
            error: v["error"].as_str().map(str::to_owned),
        }
    }
}

/// `{min_ms, median_ms}` of a JSON object.
fn timing_of(v: &serde_json::Value) -> Option<Timing> {
    Some(Timing {
        min_ms: v["min_ms"].as_f64()?,
        median_ms: v["median_ms"].as_f64()?,
    })
}

/// Runs TA-Lib on the cases the Rust bench wrote to `cases`.
fn talib(cases: &Path) -> std::result::Result<TalibRun, String> {
    python_ready("talib", TALIB_PINS)?;
    let cases = cases.to_string_lossy();
    let v = python_json("scripts/bench/talib_bench.py", &["--cases", &cases])?;
    let table = |key: &str| -> BTreeMap<String, Reference> {
        v[key]
            .as_object()
            .map(|o| o.iter().map(|(k, r)| (k.clone(), Reference::parse(r))).collect())
            .unwrap_or_default()
    };
    Ok(TalibRun {
        indicators: table("indicators"),
        patterns: table("patterns"),
        version: format!(
            "TA-Lib {} (C core {}), numpy {}",
            v["talib"].as_str().unwrap_or("?"),
            v["talib_core"].as_str().unwrap_or("?"),
            v["numpy"].as_str().unwrap_or("?")
        ),
        sum_close: v["sum_close"].as_f64().unwrap_or(f64::NAN),
    })
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

/// One row of our side: a catalogue function or a pattern.
struct Ours {
    name: String,
    talib_alias: Option<String>,
    /// `compute` (indicators) or `detect` (patterns) on `&[Bar]`.
    bars: Timing,
    /// The column form and its kind (`column` or `values`), if any.
    column: Option<(String, Timing)>,
}

fn parse_ours(list: &serde_json::Value) -> Vec<Ours> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| {
                    Some(Ours {
                        name: v["name"].as_str()?.to_owned(),
                        talib_alias: v["talib"].as_str().map(str::to_owned),
                        bars: timing_of(&v["bars"])?,
                        column: timing_of(&v["column"])
                            .map(|t| (v["column"]["form"].as_str().unwrap_or("column").to_owned(), t)),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Median of some ratios.
fn median(xs: Vec<f64>) -> Option<f64> {
    Timing::from_per_call(xs).map(|t| t.median_ms)
}

/// "n of m at most 1.0× (median ratio r); over: a 1.23, b 1.50".
fn summary(ratios: &[(String, f64)]) -> String {
    if ratios.is_empty() {
        return "no function compared".into();
    }
    let within = ratios.iter().filter(|(_, r)| *r <= 1.0).count();
    let mut over: Vec<&(String, f64)> = ratios.iter().filter(|(_, r)| *r > 1.0).collect();
    over.sort_by(|a, b| b.1.total_cmp(&a.1));
    let med = median(ratios.iter().map(|(_, r)| *r).collect()).unwrap_or(f64::NAN);
    let mut out = format!(
        "{within} of {} at most 1.0x TA-Lib, median ratio {med:.2}",
        ratios.len()
    );
    if !over.is_empty() {
        let list: Vec<String> = over.iter().map(|(n, r)| format!("{n} {r:.2}")).collect();
        out.push_str(&format!("; over 1.0x: {}", list.join(", ")));
    }
    out
}

fn median_ratio(ours: Timing, theirs: Option<Timing>) -> Option<f64> {
    theirs.map(|t| ours.median_ms / t.median_ms)
}

fn fmt_ratio_cell(r: Option<f64>) -> String {
    match r {
        Some(r) if r > 1.0 => format!("**{}**", ratio(r)),
        Some(r) => ratio(r),
        None => "—".into(),
    }
}

fn fmt_median(t: Option<Timing>) -> String {
    t.map(|t| format!("{:.3}", t.median_ms)).unwrap_or_else(|| "—".into())
}

fn print_indicators(ours: &[Ours], talib: &BTreeMap<String, Reference>) {
    println!(
        "| function | TA-Lib | ours, column form | ours, compute(&[Bar]) | TA-Lib | column / TA-Lib | &[Bar] / TA-Lib |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    let (mut column_ratios, mut bars_ratios, mut values_only, mut no_column) = (vec![], vec![], vec![], vec![]);
    let mut notes = Vec::new();
    let mut no_counterpart = Vec::new();
    for o in ours {
        let reference = talib.get(&o.name).cloned().unwrap_or_default();
        let theirs = reference.timing;
        let column_ratio = o.column.as_ref().and_then(|(_, t)| median_ratio(*t, theirs));
        let bars_ratio = median_ratio(o.bars, theirs);
        if theirs.is_some() {
            match (&o.column, column_ratio) {
                (Some((form, _)), Some(r)) if form == "column" => column_ratios.push((o.name.clone(), r)),
                (Some(_), Some(r)) => values_only.push((o.name.clone(), r)),
                _ => no_column.push(o.name.clone()),
            }
            if let Some(r) = bars_ratio {
                bars_ratios.push((o.name.clone(), r));
            }
        } else {
            no_counterpart.push(o.name.clone());
        }
        for n in &reference.notes {
            notes.push(format!("{}: {n}", o.name));
        }
        if let Some(e) = &reference.error {
            notes.push(format!("{}: TA-Lib side failed: {e}", o.name));
        }
        let functions = if reference.functions.is_empty() {
            o.talib_alias
                .clone()
                .map_or_else(|| "—".to_owned(), |a| format!("({a}: none)"))
        } else {
            reference.functions.join(" + ")
        };
        let column = o
            .column
            .as_ref()
            .map_or_else(|| "—".to_owned(), |(form, t)| format!("{:.3} ({form})", t.median_ms));
        println!(
            "| {} | {functions} | {column} | {} | {} | {} | {} |",
            o.name,
            fmt_median(Some(o.bars)),
            fmt_median(theirs),
            fmt_ratio_cell(column_ratio),
            fmt_ratio_cell(bars_ratio),
        );
    }
    println!();
    println!(
        "Column form, `over_column`/`over_columns` (f64 columns in, Vec<f64> out, TA-Lib's shape): {}.",
        summary(&column_ratios)
    );
    println!(
        "Column form, `over_values` only (a column in, Vec<Option<f64>> out): {}.",
        summary(&values_only)
    );
    let mut all_columns = column_ratios.clone();
    all_columns.extend(values_only.iter().cloned());
    println!("Every column form together: {}.", summary(&all_columns));
    if !no_column.is_empty() {
        println!(
            "No column form ({} functions with a TA-Lib counterpart, so the column target is not met): {}.",
            no_column.len(),
            no_column.join(", ")
        );
    }
    println!("Through &[Bar] (compute): {}.", summary(&bars_ratios));
    if !no_counterpart.is_empty() {
        println!("No TA-Lib counterpart (ours only): {}.", no_counterpart.join(", "));
    }
    for n in notes {
        println!("Note: {n}");
    }
}

fn print_patterns(ours: &[Ours], talib: &BTreeMap<String, Reference>) {
    println!("| pattern | TA-Lib | ours, detect(&[Bar]) | TA-Lib | ours / TA-Lib |");
    println!("|---|---|---:|---:|---:|");
    let mut ratios = Vec::new();
    for o in ours {
        let theirs = talib.get(&o.name).and_then(|r| r.timing);
        let r = median_ratio(o.bars, theirs);
        if let Some(r) = r {
            ratios.push((o.name.clone(), r));
        }
        println!(
            "| {} | {} | {} | {} | {} |",
            o.name,
            o.talib_alias.as_deref().unwrap_or("—"),
            fmt_median(Some(o.bars)),
            fmt_median(theirs),
            fmt_ratio_cell(r)
        );
    }
    println!();
    println!("Candlestick patterns through &[Bar]: {}.", summary(&ratios));
}

pub fn analytics() -> Result<()> {
    let root = workspace_root();
    let home = target_dir().join("xtask-bench-analytics");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    // Build with live output, then run with the output captured.
    let bench_args = [
        "bench",
        "-p",
        "tradeterm-core",
        "--bench",
        "analytics",
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    const PREFIX: &str = "analytics bench json: ";
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(PREFIX))
        .ok_or("the analytics bench printed no JSON line")?;
    let ours: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("analytics bench JSON: {e}"))?;
    let cases = home.join("cases.json");
    std::fs::write(&cases, line).map_err(|e| format!("{}: {e}", cases.display()))?;
    let sum_ours = ours["sum_close"].as_f64();
    let sum_structure = checksum(&stderr, "structure bench:");

    let (talib, talib_note) = match talib(&cases) {
        Ok(t) => {
            let note = format!("{}; {}", t.version, same_series(sum_ours, t.sum_close));
            (Some(t), note)
        }
        Err(e) => (None, format!("TA-Lib reference skipped: {e}")),
    };
    let (smc, smc_note) = match smc() {
        Ok((t, version, sum)) => (Some(t), format!("{version}; {}", same_series(sum_structure, sum))),
        Err(e) => (None, format!("smartmoneyconcepts reference skipped: {e}")),
    };
    let empty = BTreeMap::new();
    let (talib_indicators, talib_patterns) = talib
        .as_ref()
        .map_or((&empty, &empty), |t| (&t.indicators, &t.patterns));

    println!();
    println!(
        "Core analytics, same run: {} bars, thread CPU time, ms per call (median of 5-15 calls); ratios of the medians, below 1 = ours faster, over 1 in bold.",
        ours["bars"].as_u64().unwrap_or(0)
    );
    println!("  {talib_note}");
    println!();
    print_indicators(&parse_ours(&ours["indicators"]), talib_indicators);
    println!();
    print_patterns(&parse_ours(&ours["patterns"]), talib_patterns);
    println!();
    println!("Structure: 100 000 bars, wall time (ours: criterion min / median; smc: best of 3).");
    println!("  {smc_note}");
    println!();
    println!("| benchmark | ours ms (min / median) | reference ms (min / median) | ours / reference (min / median) |");
    println!("|---|---:|---:|---:|");
    let structure = criterion_timing(&home, "structure/swings_fvg_bos_choch_100k")?;
    println!(
        "| structure: swings+FVG+BOS/CHoCH | {} | {} | {} |",
        fmt_ms(Some(structure)),
        fmt_ms(smc),
        fmt_ratio(structure, smc)
    );
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

    #[test]
    fn summary_counts_the_functions_within_target() {
        let ratios = vec![
            ("rsi".to_owned(), 0.8),
            ("ema".to_owned(), 0.5),
            ("kama".to_owned(), 1.25),
        ];
        assert_eq!(
            summary(&ratios),
            "2 of 3 at most 1.0x TA-Lib, median ratio 0.80; over 1.0x: kama 1.25"
        );
        assert_eq!(summary(&[]), "no function compared");
    }

    #[test]
    fn reads_both_sides_json() {
        let ours: serde_json::Value = serde_json::from_str(
            r#"[{"name":"rsi","talib":"RSI","bars":{"min_ms":3.0,"median_ms":3.5},
                 "column":{"form":"column","min_ms":2.0,"median_ms":2.5}},
                {"name":"vwap","talib":null,"bars":{"min_ms":4.0,"median_ms":4.5},"column":null}]"#,
        )
        .unwrap();
        let ours = parse_ours(&ours);
        assert_eq!(ours.len(), 2);
        assert_eq!(
            ours[0].column.as_ref().map(|(f, t)| (f.as_str(), t.median_ms)),
            Some(("column", 2.5))
        );
        assert!(ours[1].column.is_none() && ours[1].talib_alias.is_none());
        let theirs: serde_json::Value =
            serde_json::from_str(r#"{"talib":["ADX","PLUS_DI"],"notes":[],"min_ms":1.0,"median_ms":2.0}"#).unwrap();
        let r = Reference::parse(&theirs);
        assert_eq!(r.functions, ["ADX", "PLUS_DI"]);
        assert_eq!(r.timing.map(|t| t.median_ms), Some(2.0));
        let none: serde_json::Value =
            serde_json::from_str(r#"{"talib":null,"notes":["no TA-Lib counterpart"]}"#).unwrap();
        assert!(Reference::parse(&none).timing.is_none());
    }
}
