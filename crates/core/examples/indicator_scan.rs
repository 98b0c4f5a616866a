//! Indicator scan: RSI(14), ATR(14) and EMA(20) at the last bar of each CSV
//! file given (a directory stands for the `.csv` files in it).
//!
//! ```text
//! cargo run -p tradeterm-core --example indicator_scan -- data/market
//! cargo run -p tradeterm-core --example indicator_scan -- my_export.csv other.csv
//! ```
//!
//! The files may be in any format [`tradeterm_core::bars::parse_csv`] reads
//! (the project's `time,open,high,low,close,volume`, `Date,Open,High,…`
//! exports, MetaTrader 5's tab-separated history). A file that does not parse
//! is reported and skipped; the exit status is then 1.

#![allow(clippy::print_stdout, reason = "an example program that prints its table")]

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tradeterm_core::Bar;
use tradeterm_core::bars::parse_csv;
use tradeterm_core::indicators::{AverageTrueRange, ExponentialMovingAverage, RelativeStrengthIndex};
use tradeterm_core::time::to_iso;

/// The indicators of the last bar of one series.
#[derive(Debug)]
struct Scan {
    bars: usize,
    last: Bar,
    rsi: Option<f64>,
    atr: Option<f64>,
    ema: Option<f64>,
}

fn scan(bars: &[Bar]) -> Result<Scan, Box<dyn Error>> {
    let last_of = |series: Vec<Option<f64>>| series.last().copied().flatten();
    let last = *bars.last().ok_or("no bars")?;
    Ok(Scan {
        bars: bars.len(),
        last,
        rsi: last_of(RelativeStrengthIndex::new(14)?.over(bars)?),
        atr: last_of(AverageTrueRange::new(14)?.over(bars)?),
        ema: last_of(ExponentialMovingAverage::new(20)?.over(bars)?),
    })
}

/// The files named on the command line, directories expanded to their `.csv` files.
fn files(args: &[String]) -> Result<Vec<PathBuf>, Box<dyn Error>> {
    let mut out = Vec::new();
    for arg in args {
        let path = Path::new(arg);
        if path.is_dir() {
            let mut csvs: Vec<PathBuf> = std::fs::read_dir(path)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")))
                .collect();
            csvs.sort();
            out.extend(csvs);
        } else {
            out.push(path.to_owned());
        }
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: indicator_scan FILE.csv|DIR [...]");
        return ExitCode::from(2);
    }
    let paths = match files(&args) {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("indicator_scan: {e}");
            return ExitCode::from(2);
        }
    };
    let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.5}"));
    println!(
        "{:<36} {:>6}  {:<20} {:>12} {:>9} {:>12} {:>12}",
        "file", "bars", "last bar", "close", "RSI(14)", "ATR(14)", "EMA(20)"
    );
    let mut failed = false;
    for path in paths {
        let name = path
            .file_name()
            .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let result = std::fs::read_to_string(&path)
            .map_err(Box::<dyn Error>::from)
            .and_then(|text| Ok(parse_csv(&text)?))
            .and_then(|bars| scan(&bars));
        match result {
            Ok(s) => println!(
                "{name:<36} {:>6}  {:<20} {:>12.5} {:>9} {:>12} {:>12}",
                s.bars,
                to_iso(s.last.time),
                s.last.close,
                s.rsi.map_or_else(|| "-".to_string(), |v| format!("{v:.2}")),
                fmt(s.atr),
                fmt(s.ema)
            ),
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                failed = true;
            }
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
