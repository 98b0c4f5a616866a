//! Legacy flat-key strategies (spec §9), converted to the [`Strategy`] tree.
//!
//! Accepted forms (sizing is `all_in`, costs zero):
//! - `{"type": "ma_cross", "fast": 10, "slow": 20, "ma": "sma"|"ema"}`: long when the fast
//!   average crosses above the slow one, short when it crosses below (reversing), and on a
//!   cross in the direction already held, close and re-open (`same_direction_entry:
//!   reenter`): backtesting.py's `SmaCross` example, trade for trade.
//! - `{"type": "rsi", "period": 14, "oversold": 30, "overbought": 70}`: long when RSI crosses
//!   above `oversold`, short when it crosses below `overbought` (reversing).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::BacktestError;
use super::dsl::{Comparison, Condition, Op, Operand, SameDirectionEntry, Sizing, Strategy};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Legacy {
    MaCross {
        fast: u32,
        slow: u32,
        #[serde(default = "sma")]
        ma: String,
    },
    Rsi {
        #[serde(default = "fourteen")]
        period: u32,
        #[serde(default = "thirty")]
        oversold: f64,
        #[serde(default = "seventy")]
        overbought: f64,
    },
}

fn sma() -> String {
    "sma".into()
}
fn fourteen() -> u32 {
    14
}
fn thirty() -> f64 {
    30.0
}
fn seventy() -> f64 {
    70.0
}

fn ind(name: &str, period: u32) -> Operand {
    Operand::Indicator {
        indicator: name.into(),
        params: BTreeMap::from([("period".to_string(), f64::from(period))]),
        output: None,
        shift: 0,
    }
}

fn cmp(left: Operand, op: Op, right: Operand) -> Condition {
    Condition::Compare(Comparison { left, op, right })
}

/// Reads a strategy given either as a DSL tree or as a legacy flat-key object (one with `"type"`).
pub fn parse_strategy(value: &serde_json::Value) -> Result<Strategy, BacktestError> {
    let strategy = if value.get("type").is_some() {
        let legacy: Legacy = serde_json::from_value(value.clone()).map_err(|e| BacktestError::Invalid {
            path: String::new(),
            reason: format!("bad legacy strategy: {e}"),
        })?;
        from_legacy(legacy)?
    } else {
        serde_json::from_value(value.clone()).map_err(|e| {
            // Conditions and operands are untagged: serde cannot say where.
            super::diagnose::locate(value).unwrap_or_else(|| BacktestError::Invalid {
                path: String::new(),
                reason: format!("bad strategy: {e}"),
            })
        })?
    };
    strategy.validate()?;
    Ok(strategy)
}

/// Notes on a legacy flat-key strategy whose levels are in an unusual
/// order: it runs as written, but not as its names suggest. Empty for a DSL
/// tree, an unreadable value or the usual order.
///
/// - `ma_cross` with `fast` above `slow`: the "fast" average is the slower
///   one, so the signals are the usual ones inverted (long when the slower
///   average crosses above the faster one), exactly as backtesting.py's
///   `SmaCross` with `n1 > n2`; with `fast` equal to `slow` the two averages
///   are one series and never cross: no trade.
/// - `rsi` with `oversold` not below `overbought`: long when RSI crosses
///   above the higher level, short when it crosses below the lower one (a
///   momentum reading of the usual reversal).
pub fn legacy_warnings(value: &serde_json::Value) -> Vec<String> {
    if value.get("type").is_none() {
        return Vec::new();
    }
    match serde_json::from_value::<Legacy>(value.clone()) {
        Ok(Legacy::MaCross { fast, slow, .. }) if fast > slow => vec![format!(
            "fast ({fast}) is above slow ({slow}): the \"fast\" average is the slower one, so the signals are the \
             usual ones inverted (long when the {fast}-bar average crosses above the {slow}-bar one), as \
             backtesting.py's SmaCross runs with n1 > n2"
        )],
        Ok(Legacy::MaCross { fast, slow, .. }) if fast == slow => vec![format!(
            "fast and slow are both {fast}: the two averages are the same series and never cross, so no trade is taken"
        )],
        Ok(Legacy::Rsi {
            oversold, overbought, ..
        }) if oversold >= overbought => vec![format!(
            "oversold ({oversold}) is not below overbought ({overbought}): long when RSI crosses above {oversold}, \
             short when it crosses below {overbought}, a momentum reading of the usual reversal"
        )],
        _ => Vec::new(),
    }
}

/// `period` within the bounds of the `period` parameter of `indicator` (the catalog's).
fn period_in_bounds(path: &str, indicator: &str, period: u32) -> Result<(), BacktestError> {
    let bounds = crate::indicators::find(indicator)
        .and_then(|i| i.params.iter().find(|p| p.name == "period"))
        .map(|p| (p.min, p.max));
    match bounds {
        Some((min, max)) if !(min..=max).contains(&f64::from(period)) => Err(BacktestError::Invalid {
            path: path.into(),
            reason: format!("must be between {min} and {max}, got {period}"),
        }),
        _ => Ok(()),
    }
}

fn from_legacy(l: Legacy) -> Result<Strategy, BacktestError> {
    let mut same_direction_entry = SameDirectionEntry::Ignore;
    let (long, short) = match l {
        Legacy::MaCross { fast, slow, ma } => {
            let ma = ma.to_ascii_lowercase();
            if ma != "sma" && ma != "ema" {
                return Err(BacktestError::Invalid {
                    path: "ma".into(),
                    reason: format!("expected \"sma\" or \"ema\", got \"{ma}\""),
                });
            }
            // Any order of the two periods runs, as backtesting.py's SmaCross
            // runs any n1, n2 (see [`legacy_warnings`]); each within the
            // average's bounds.
            for (path, period) in [("fast", fast), ("slow", slow)] {
                period_in_bounds(path, &ma, period)?;
            }
            // backtesting.py's SmaCross: `position.close()` then `buy()` on every cross.
            same_direction_entry = SameDirectionEntry::Reenter;
            (
                cmp(ind(&ma, fast), Op::CrossAbove, ind(&ma, slow)),
                cmp(ind(&ma, fast), Op::CrossBelow, ind(&ma, slow)),
            )
        }
        Legacy::Rsi {
            period,
            oversold,
            overbought,
        } => {
            period_in_bounds("period", "rsi", period)?;
            for (path, level) in [("oversold", oversold), ("overbought", overbought)] {
                if !(0.0..=100.0).contains(&level) {
                    return Err(BacktestError::Invalid {
                        path: path.into(),
                        reason: format!("must be between 0 and 100, got {level}"),
                    });
                }
            }
            (
                cmp(ind("rsi", period), Op::CrossAbove, Operand::Value { value: oversold }),
                cmp(ind("rsi", period), Op::CrossBelow, Operand::Value { value: overbought }),
            )
        }
    };
    Ok(Strategy {
        entry_long: Some(long),
        exit_long: None,
        entry_short: Some(short),
        exit_short: None,
        stop_loss: None,
        take_profit: None,
        sizing: Sizing::AllIn,
        costs: Default::default(),
        same_direction_entry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn legacy_forms_convert() {
        let s = parse_strategy(&json!({"type": "ma_cross", "fast": 10, "slow": 20, "ma": "ema"})).unwrap();
        assert!(s.entry_long.is_some() && s.entry_short.is_some());
        assert_eq!(s.same_direction_entry, SameDirectionEntry::Reenter);
        let rsi = parse_strategy(&json!({"type": "rsi", "period": 14, "oversold": 30, "overbought": 70})).unwrap();
        assert_eq!(rsi.same_direction_entry, SameDirectionEntry::Ignore);
        assert!(parse_strategy(&json!({"type": "macd"})).is_err());
        assert!(parse_strategy(&json!({"type": "rsi", "oversold": 130})).is_err());
        assert!(parse_strategy(&json!({"type": "ma_cross", "fast": 0, "slow": 10})).is_err());
        assert!(parse_strategy(&json!({"type": "ma_cross", "fast": 10, "slow": 10_001})).is_err());
        assert!(parse_strategy(&json!({"type": "rsi", "period": 1})).is_err());
        assert!(legacy_warnings(&json!({"type": "ma_cross", "fast": 10, "slow": 20})).is_empty());
        assert!(legacy_warnings(&json!({"type": "rsi"})).is_empty());
    }

    /// Any order of the levels runs as written, with a warning: an inverted
    /// cross trades the usual signals the other way round (backtesting.py's
    /// SmaCross with n1 > n2), equal periods never cross.
    #[test]
    fn unusual_orders_run_with_a_warning() {
        use crate::backtest::{RunOptions, run};
        // A rise, a fall, a rise: the 3- and 8-bar averages cross twice.
        let closes: Vec<f64> = (0..60)
            .map(|i| 100.0 + ((f64::from(i) / 60.0) * std::f64::consts::TAU * 2.0).sin() * 10.0)
            .collect();
        let bars = crate::regime::tests::from_closes(&closes, &[0.5; 60]);
        let trades = |fast: u32, slow: u32| {
            let s = parse_strategy(&json!({"type": "ma_cross", "fast": fast, "slow": slow})).unwrap();
            run(&s, &bars, &RunOptions::default()).unwrap().trades
        };
        let (usual, inverted) = (trades(3, 8), trades(8, 3));
        assert!(
            !usual.is_empty() && usual.len() == inverted.len(),
            "{usual:?} {inverted:?}"
        );
        for (u, i) in usual.iter().zip(&inverted) {
            assert_eq!((u.entry_time, u.exit_time), (i.entry_time, i.exit_time));
            assert_ne!(u.direction, i.direction, "the same crosses, the other way round");
        }
        assert!(trades(5, 5).is_empty());
        let w = legacy_warnings(&json!({"type": "ma_cross", "fast": 8, "slow": 3}));
        assert!(w.len() == 1 && w[0].contains("inverted"), "{w:?}");
        let w = legacy_warnings(&json!({"type": "ma_cross", "fast": 5, "slow": 5, "ma": "ema"}));
        assert!(w.len() == 1 && w[0].contains("never cross"), "{w:?}");
        parse_strategy(&json!({"type": "rsi", "oversold": 70, "overbought": 30})).unwrap();
        let w = legacy_warnings(&json!({"type": "rsi", "oversold": 70, "overbought": 30}));
        assert!(w.len() == 1 && w[0].contains("momentum"), "{w:?}");
    }

    #[test]
    fn errors_name_the_path() {
        let v = json!({
            "entry_long": {"all": [
                {"left": {"price": "close"}, "op": "gt", "right": {"value": 1}},
                {"left": {"indicator": "smaa"}, "op": "gt", "right": {"value": 1}}
            ]},
            "sizing": {"type": "all_in"}
        });
        let e = parse_strategy(&v).unwrap_err().to_string();
        assert_eq!(e, "entry_long.all[1].left.indicator: unknown indicator \"smaa\"");
    }
}
