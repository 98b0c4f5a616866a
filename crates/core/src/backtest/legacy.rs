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
            if fast == 0 || fast >= slow {
                return Err(BacktestError::Invalid {
                    path: "fast".into(),
                    reason: "must be ≥ 1 and smaller than slow".into(),
                });
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
            if !(0.0..=100.0).contains(&oversold) || !(0.0..=100.0).contains(&overbought) || oversold >= overbought {
                return Err(BacktestError::Invalid {
                    path: "oversold".into(),
                    reason: "need 0 ≤ oversold < overbought ≤ 100".into(),
                });
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
        assert!(parse_strategy(&json!({"type": "ma_cross", "fast": 20, "slow": 10})).is_err());
        assert!(parse_strategy(&json!({"type": "macd"})).is_err());
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
