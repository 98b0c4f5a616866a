//! A backtest of a strategy built in code (no JSON file): RSI mean reversion
//! in the direction of the SMA(200) trend, with ATR stops and 1 % risk per
//! trade.
//!
//! ```text
//! cargo run -p tradeterm-core --example custom_strategy -- data/market/eurusd_1h_backtesting.csv
//! ```
//!
//! The strategy is the same tree `tradeterm backtest --strategy FILE.json`
//! reads (`docs/backtest-dsl.md`): the program prints it as JSON at the end,
//! ready to be saved and run from the command line.

#![allow(clippy::print_stdout, reason = "an example program that prints its report")]

use std::collections::BTreeMap;
use std::error::Error;
use std::process::ExitCode;

use tradeterm_core::backtest::{
    self, Comparison, Condition, Costs, Op, Operand, PriceField, RunOptions, SameDirectionEntry, Sizing, Stop, Strategy,
};
use tradeterm_core::time::to_iso;

/// An output of a catalog indicator with one `period` parameter.
fn indicator(name: &str, period: u32) -> Operand {
    Operand::Indicator {
        indicator: name.to_string(),
        params: BTreeMap::from([("period".to_string(), f64::from(period))]),
        output: None,
        shift: 0,
    }
}

fn close() -> Operand {
    Operand::Price {
        price: PriceField::Close,
        shift: 0,
    }
}

fn value(value: f64) -> Operand {
    Operand::Value { value }
}

fn compare(left: Operand, op: Op, right: Operand) -> Condition {
    Condition::Compare(Comparison { left, op, right })
}

/// Long when RSI(14) crosses back above 30 above the SMA(200), out when RSI
/// passes 60; the mirror image for shorts. 2 × ATR stop, 3 × ATR target.
fn strategy() -> Strategy {
    let rsi = || indicator("rsi", 14);
    let sma200 = || indicator("sma", 200);
    Strategy {
        entry_long: Some(Condition::All {
            all: vec![
                compare(rsi(), Op::CrossAbove, value(30.0)),
                compare(close(), Op::Gt, sma200()),
            ],
        }),
        exit_long: Some(compare(rsi(), Op::Gt, value(60.0))),
        entry_short: Some(Condition::All {
            all: vec![
                compare(rsi(), Op::CrossBelow, value(70.0)),
                compare(close(), Op::Lt, sma200()),
            ],
        }),
        exit_short: Some(compare(rsi(), Op::Lt, value(40.0))),
        stop_loss: Some(Stop::Atr {
            multiple: 2.0,
            period: 14,
        }),
        take_profit: Some(Stop::Atr {
            multiple: 3.0,
            period: 14,
        }),
        sizing: Sizing::RiskPercent { percent: 1.0 },
        costs: Costs::default(),
        same_direction_entry: SameDirectionEntry::Ignore,
    }
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: custom_strategy FILE.csv");
        return ExitCode::from(2);
    };
    match run(&path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("custom_strategy: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(path: &str) -> Result<(), Box<dyn Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let bars = tradeterm_core::bars::parse_csv(&text).map_err(|e| format!("{path}: {e}"))?;

    let strategy = strategy();
    strategy.validate()?;
    let result = backtest::run(&strategy, &bars, &RunOptions::default())?;

    let m = &result.metrics;
    let opt = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
    println!(
        "{path}: {} bars, {} to {}",
        bars.len(),
        to_iso(bars[0].time),
        to_iso(bars[bars.len() - 1].time)
    );
    println!(
        "equity {:.2} -> {:.2} ({:+.2} %), max drawdown {:.2} %",
        m.initial_equity, m.final_equity, m.return_pct, m.max_drawdown_pct
    );
    println!(
        "{} trades, win rate {} %, profit factor {}, Sharpe {}",
        m.trades,
        opt(m.win_rate_pct),
        opt(m.profit_factor),
        opt(m.sharpe)
    );
    println!("last trades:");
    for t in result.trades.iter().rev().take(5).rev() {
        println!(
            "  {:?} {} @ {:.5} -> {} @ {:.5}  {:+.2} ({:?})",
            t.direction,
            to_iso(t.entry_time),
            t.entry_price,
            to_iso(t.exit_time),
            t.exit_price,
            t.pnl,
            t.reason
        );
    }
    println!("strategy as JSON (for `tradeterm backtest --strategy`):");
    println!("{}", serde_json::to_string(&strategy)?);
    Ok(())
}
