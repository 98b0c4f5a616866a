//! `tradeterm backtest`: runs a strategy file over a local CSV file with
//! `tradeterm_core::backtest` and prints a summary table (default), one JSON
//! document (`--json`) and optionally an equity chart (`--chart`).
//!
//! Glue only: parsing, the simulation and the metrics are core's. A progress
//! bar is drawn on stderr only when stderr is a terminal, the series is longer
//! than [`PROGRESS_EVERY`] bars and the command has been running for
//! [`SHOW_PROGRESS_AFTER`]; pipes and tests never see it.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use tradeterm_core::Bar;
use tradeterm_core::backtest::{
    self, BacktestError, BacktestResult, FinalExit, Metrics, PROGRESS_EVERY, RunOptions, Strategy, Trade,
};
use tradeterm_core::time::to_iso;

use crate::chart::{self, ChartData, ChartFormat, ChartSize};

/// How long a run must have lasted before its progress bar appears.
pub const SHOW_PROGRESS_AFTER: Duration = Duration::from_millis(300);

/// Version of the `--json` document; raised on any incompatible change.
pub const JSON_VERSION: u32 = 1;

/// Arguments of `tradeterm backtest`.
#[derive(Debug, Args)]
pub struct BacktestArgs {
    /// CSV bar file, times ascending: `time,open,high,low,close,volume`, `Date,Open,High,Low,Close,Volume`
    /// exports or MetaTrader 5's exported history, comma/semicolon/tab separated (docs/backtest-cli.md).
    #[arg(long, value_name = "FILE.csv")]
    data: PathBuf,
    /// Strategy JSON: a condition tree (docs/backtest-dsl.md) or a legacy form such as
    /// `{"type": "ma_cross", "fast": 10, "slow": 20}`.
    #[arg(long, value_name = "STRATEGY.json")]
    strategy: PathBuf,
    /// Starting equity (> 0).
    #[arg(long, default_value_t = 10_000.0, value_name = "AMOUNT")]
    initial_equity: f64,
    /// Price at which a trade still open after the last bar is closed
    /// (`last-open` is backtesting.py's `finalize_trades=True`).
    #[arg(long, value_enum, default_value_t = FinalExitArg::LastClose)]
    final_exit: FinalExitArg,
    /// Print one JSON document (metrics, trades, equity curve) instead of the summary table.
    #[arg(long)]
    json: bool,
    /// With --json: downsample the equity curve to at most N points (every k-th bar and
    /// the last; N ≥ 2). Default: every bar.
    #[arg(long, value_name = "N", requires = "json")]
    equity_points: Option<usize>,
    /// Also draw the equity curve and its drawdown to this file (.svg or .png).
    #[arg(long, value_name = "OUT.svg|OUT.png")]
    chart: Option<PathBuf>,
    /// Chart size in pixels.
    #[arg(long, value_name = "WIDTHxHEIGHT", default_value = "1200x800", value_parser = chart::parse_size)]
    chart_size: ChartSize,
    /// Name in the chart title (default: the data file's name without its extension).
    #[arg(long, value_name = "NAME")]
    title: Option<String>,
}

/// How trades still open at the end are closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FinalExitArg {
    /// At the last bar's close.
    LastClose,
    /// At the last bar's open.
    LastOpen,
}

impl From<FinalExitArg> for FinalExit {
    fn from(f: FinalExitArg) -> Self {
        match f {
            FinalExitArg::LastClose => FinalExit::LastClose,
            FinalExitArg::LastOpen => FinalExit::LastOpen,
        }
    }
}

/// Runs `tradeterm backtest`.
pub fn run(args: BacktestArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let chart_format = args.chart.as_deref().map(ChartFormat::from_path).transpose()?;
    ensure!(
        args.initial_equity.is_finite() && args.initial_equity > 0.0,
        "--initial-equity must be a finite number > 0, got {}",
        args.initial_equity
    );
    if let Some(n) = args.equity_points {
        ensure!(n >= 2, "--equity-points must be at least 2, got {n}");
    }
    let strategy = read_strategy(&args.strategy)?;
    let bars = read_bars(&args.data)?;
    let opts = RunOptions {
        initial_equity: args.initial_equity,
        final_exit: args.final_exit.into(),
    };

    let mut progress = Progress::new(std::io::stderr().is_terminal(), bars.len(), started);
    let result = backtest::run_with_progress(&strategy, &bars, &opts, &mut |done, total| {
        progress.update(done, total);
    });
    progress.finish();
    let result = result.map_err(|e| match e {
        BacktestError::Data(e) => anyhow::anyhow!("{}: {e}", args.data.display()),
        e => anyhow::anyhow!("{}: {}", args.strategy.display(), describe(&e)),
    })?;

    if let (Some(path), Some(format)) = (&args.chart, chart_format) {
        let name = args.title.clone().unwrap_or_else(|| file_stem(&args.data));
        let title = format!(
            "{name} \u{2014} {}: return {}, max drawdown {:.2} %",
            file_stem(&args.strategy),
            signed_pct(result.metrics.return_pct),
            result.metrics.max_drawdown_pct
        );
        let times: Vec<i64> = bars.iter().map(|b| b.time).collect();
        chart::write(
            path,
            format,
            args.chart_size,
            &ChartData {
                title: &title,
                times: &times,
                equity: &result.equity,
                initial: opts.initial_equity,
            },
        )?;
    }

    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let report = report(&args, &strategy, &bars, &opts, &result);
        serde_json::to_writer(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        out.write_all(summary(&args, &bars, &result).as_bytes())
    };
    match written.and_then(|()| out.flush()) {
        // `tradeterm backtest … | head` closes the pipe early: that is not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

fn read_strategy(path: &Path) -> anyhow::Result<Strategy> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", path.display()))?;
    let strategy =
        backtest::parse_strategy(&value).map_err(|e| anyhow::anyhow!("{}: {}", path.display(), describe(&e)))?;
    // A legacy strategy with its levels in an unusual order runs as written; say so.
    for warning in backtest::legacy_warnings(&value) {
        eprintln!("warning: {}: {warning}", path.display());
    }
    Ok(strategy)
}

/// Reads a bar file for `backtest` and `analyze`: UTF-8, or UTF-16 with a
/// byte-order mark (as some Windows tools save CSV), parsed by
/// [`tradeterm_core::bars::parse_csv`].
pub(crate) fn read_bars(path: &Path) -> anyhow::Result<Vec<Bar>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let text = decode_text(&bytes).with_context(|| format!("reading {}", path.display()))?;
    tradeterm_core::bars::parse_csv(&text).with_context(|| format!("parsing {}", path.display()))
}

/// UTF-8 text, or UTF-16 (little or big endian) announced by its byte-order mark.
fn decode_text(bytes: &[u8]) -> anyhow::Result<String> {
    let utf16 = |rest: &[u8], unit: fn([u8; 2]) -> u16| -> anyhow::Result<String> {
        ensure!(rest.len().is_multiple_of(2), "UTF-16 text with an odd number of bytes");
        let units: Vec<u16> = rest.chunks_exact(2).map(|c| unit([c[0], c[1]])).collect();
        String::from_utf16(&units).context("not valid UTF-16 text")
    };
    match bytes {
        [0xFF, 0xFE, rest @ ..] => utf16(rest, u16::from_le_bytes),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, u16::from_be_bytes),
        _ => String::from_utf8(bytes.to_vec()).context("not UTF-8 text (save the file as UTF-8)"),
    }
}

/// The error with its JSON path, without the leading `: ` of an empty path.
fn describe(e: &BacktestError) -> String {
    match e {
        BacktestError::Invalid { path, reason } if path.is_empty() => reason.clone(),
        e => e.to_string(),
    }
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Whether a progress bar is worth drawing: stderr is a terminal and the run
/// reports intermediate progress at all (more than [`PROGRESS_EVERY`] bars).
pub fn progress_wanted(stderr_is_terminal: bool, bars: usize) -> bool {
    stderr_is_terminal && bars > PROGRESS_EVERY
}

/// A progress bar that stays hidden until [`SHOW_PROGRESS_AFTER`] has passed.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: bool,
}

impl Progress {
    fn new(stderr_is_terminal: bool, bars: usize, started: Instant) -> Self {
        let bar = progress_wanted(stderr_is_terminal, bars).then(|| {
            let bar = ProgressBar::with_draw_target(Some(bars as u64), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template("backtest [{wide_bar}] {pos}/{len} bars, {eta} left") {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Self {
            bar,
            started,
            shown: false,
        }
    }

    fn update(&mut self, done: usize, total: usize) {
        let Some(bar) = &self.bar else { return };
        if !self.shown && done < total && self.started.elapsed() >= SHOW_PROGRESS_AFTER {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        bar.set_position(done as u64);
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

fn signed_pct(v: f64) -> String {
    format!("{v:+.2} %")
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "n/a".to_owned(), f)
}

/// The summary table printed by default.
fn summary(args: &BacktestArgs, bars: &[Bar], result: &BacktestResult) -> String {
    let m: &Metrics = &result.metrics;
    let wins = result.trades.iter().filter(|t| t.pnl > 0.0).count();
    let (first, last) = (bars.first().map_or(0, |b| b.time), bars.last().map_or(0, |b| b.time));
    let mut rows: Vec<(&str, String)> = vec![
        ("Data", args.data.display().to_string()),
        ("Strategy", args.strategy.display().to_string()),
        ("Period", format!("{} to {}", to_iso(first), to_iso(last))),
        ("Bars", bars.len().to_string()),
        ("Trades", m.trades.to_string()),
        ("Return", signed_pct(m.return_pct)),
        ("Max drawdown", format!("{:.2} %", m.max_drawdown_pct)),
        (
            "Win rate",
            opt(m.win_rate_pct, |v| format!("{v:.2} % ({wins} of {})", m.trades)),
        ),
        ("Profit factor", opt(m.profit_factor, |v| format!("{v:.2}"))),
        ("Sharpe", opt(m.sharpe, |v| format!("{v:.2}"))),
        ("Sortino", opt(m.sortino, |v| format!("{v:.2}"))),
        ("Exposure", format!("{:.2} %", m.exposure_pct)),
        ("Expectancy", opt(m.expectancy, |v| format!("{v:.2} per trade"))),
        ("Average trade", opt(m.avg_trade_pct, signed_pct)),
        ("Initial equity", format!("{:.2}", m.initial_equity)),
        ("Final equity", format!("{:.2}", m.final_equity)),
    ];
    if let Some(chart) = &args.chart {
        rows.push(("Chart", chart.display().to_string()));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 2;
    let rule = "-".repeat(width + 24);
    let mut s = format!("Backtest\n{rule}\n");
    for (k, v) in rows {
        s.push_str(&format!("{k:<width$}{v}\n"));
    }
    s.push_str(&rule);
    s.push('\n');
    s
}

/// One point of the `--json` equity curve.
#[derive(Debug, Serialize)]
struct EquityPoint {
    /// Bar index in the data file (0 = first bar).
    index: usize,
    /// Bar open time, ISO 8601 UTC.
    time: String,
    /// Equity at that bar's close.
    equity: f64,
}

/// The `--json` document (see docs/backtest-cli.md).
#[derive(Debug, Serialize)]
struct Report<'a> {
    version: u32,
    data: String,
    strategy_file: String,
    bars: usize,
    from: String,
    to: String,
    options: &'a RunOptions,
    strategy: &'a Strategy,
    metrics: &'a Metrics,
    trades: &'a [Trade],
    equity_step: usize,
    equity_curve: Vec<EquityPoint>,
    chart: Option<String>,
}

fn report<'a>(
    args: &BacktestArgs,
    strategy: &'a Strategy,
    bars: &[Bar],
    opts: &'a RunOptions,
    result: &'a BacktestResult,
) -> Report<'a> {
    let n = result.equity.len();
    let step = args.equity_points.map_or(1, |max| n.div_ceil(max - 1).max(1));
    let equity_curve = result
        .equity
        .iter()
        .zip(bars)
        .enumerate()
        .filter(|(i, _)| i % step == 0 || i + 1 == n)
        .map(|(index, (&equity, bar))| EquityPoint {
            index,
            time: to_iso(bar.time),
            equity,
        })
        .collect();
    Report {
        version: JSON_VERSION,
        data: args.data.display().to_string(),
        strategy_file: args.strategy.display().to_string(),
        bars: bars.len(),
        from: bars.first().map(|b| to_iso(b.time)).unwrap_or_default(),
        to: bars.last().map(|b| to_iso(b.time)).unwrap_or_default(),
        options: opts,
        strategy,
        metrics: &result.metrics,
        trades: &result.trades,
        equity_step: step,
        equity_curve,
        chart: args.chart.as_ref().map(|p| p.display().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_utf8_and_utf16_with_a_bom() {
        let text = "<DATE>\t<CLOSE>\n2024.01.02\t1,5\n";
        assert_eq!(decode_text(text.as_bytes()).unwrap(), text);
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(decode_text(&le).unwrap(), text);
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode_text(&be).unwrap(), text);
        assert!(decode_text(&[0xFF, 0xFE, 0x41]).is_err());
        assert!(decode_text(&[0xC3, 0x28]).is_err());
    }

    #[test]
    fn progress_only_on_a_terminal_and_for_long_series() {
        assert!(!progress_wanted(false, 10 * PROGRESS_EVERY));
        assert!(!progress_wanted(true, PROGRESS_EVERY));
        assert!(progress_wanted(true, PROGRESS_EVERY + 1));
    }

    #[test]
    fn a_hidden_progress_bar_never_draws() {
        let mut p = Progress::new(false, 10 * PROGRESS_EVERY, Instant::now());
        p.update(PROGRESS_EVERY, 10 * PROGRESS_EVERY);
        assert!(p.bar.is_none() && !p.shown);
        p.finish();
    }

    #[test]
    fn empty_paths_are_not_printed_as_a_leading_colon() {
        let e = BacktestError::Invalid {
            path: String::new(),
            reason: "bad strategy: x".into(),
        };
        assert_eq!(describe(&e), "bad strategy: x");
        let e = BacktestError::Invalid {
            path: "sizing".into(),
            reason: "r".into(),
        };
        assert_eq!(describe(&e), "sizing: r");
    }
}
