//! The strategy DSL: a JSON tree of entry/exit conditions, stops, sizing and costs.
//!
//! Every type derives `Deserialize` and `JsonSchema`; its doc comments become
//! the schema's descriptions. [`Strategy::validate`] checks what serde cannot
//! (known indicators and outputs, positive numbers) and names the JSON path of
//! the fault, e.g. `entry_long.all[1].left.indicator: unknown indicator "smaa"`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::BacktestError;
use crate::indicators as catalog;

/// A complete trading strategy.
///
/// Conditions are evaluated on each bar's close; orders fill at the next
/// bar's open. An entry in the direction opposite to the open trade reverses
/// it (close, then open the new trade); an entry in the direction already
/// held does what `same_direction_entry` says (by default nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// What `validate` checks across fields (inside `allOf`, which client
// generators merge): an entry, and a stop loss for risk_percent sizing.
#[schemars(extend("allOf" = [{ "anyOf": [
        { "required": ["entry_long"], "properties": { "entry_long": { "not": { "type": "null" } } } },
        { "required": ["entry_short"], "properties": { "entry_short": { "not": { "type": "null" } } } },
] }, {
    "if": { "required": ["sizing"], "properties": { "sizing": { "required": ["type"], "properties": { "type": { "const": "risk_percent" } } } } },
    "then": { "required": ["stop_loss"], "properties": { "stop_loss": { "not": { "type": "null" } } } },
}]))]
pub struct Strategy {
    /// When true on a bar's close, go long at the next open (reversing a short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_long: Option<Condition>,
    /// When true on a bar's close, close the long trade at the next open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_long: Option<Condition>,
    /// When true on a bar's close, go short at the next open (reversing a long).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_short: Option<Condition>,
    /// When true on a bar's close, close the short trade at the next open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_short: Option<Condition>,
    /// Protective stop, set from the entry fill price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_loss: Option<Stop>,
    /// Profit target, set from the entry fill price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub take_profit: Option<Stop>,
    /// How large each trade is.
    pub sizing: Sizing,
    /// Trading costs (all zero when absent).
    #[serde(default)]
    pub costs: Costs,
    /// What an entry in the direction already held does: `ignore` (default)
    /// keeps the open trade; `reenter` closes it and opens a new one at the
    /// next open, as backtesting.py's `SmaCross` example does
    /// (`position.close()` then `buy()` on every cross).
    #[serde(default, skip_serializing_if = "SameDirectionEntry::is_ignore")]
    pub same_direction_entry: SameDirectionEntry,
}

/// What an entry signal in the direction of the open trade does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SameDirectionEntry {
    /// Keep the open trade (no pyramiding, no re-entry).
    #[default]
    Ignore,
    /// Close the open trade and open a new one in the same direction at the
    /// next open, sized afresh (backtesting.py's `SmaCross`: `position.close()`
    /// then `buy()` / `sell()`).
    Reenter,
}

impl SameDirectionEntry {
    fn is_ignore(&self) -> bool {
        *self == Self::Ignore
    }
}

/// A boolean condition over indicator values and prices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Condition {
    /// True when every sub-condition is true.
    All {
        /// Sub-conditions (at least one).
        #[schemars(length(min = 1))]
        all: Vec<Condition>,
    },
    /// True when at least one sub-condition is true.
    Any {
        /// Sub-conditions (at least one).
        #[schemars(length(min = 1))]
        any: Vec<Condition>,
    },
    /// True when the sub-condition is false.
    Not {
        /// The negated condition.
        not: Box<Condition>,
    },
    /// A comparison of two operands.
    Compare(Comparison),
}

/// `left op right` on the current bar (crosses also look at the previous bar).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// Left operand.
    pub left: Operand,
    /// Comparison operator.
    pub op: Op,
    /// Right operand.
    pub right: Operand,
}

/// Comparison operators. A comparison with a missing value (indicator warm-up) is false.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `left > right`.
    Gt,
    /// `left >= right`.
    Gte,
    /// `left < right`.
    Lt,
    /// `left <= right`.
    Lte,
    /// `left` was below `right` on the previous bar and is above it now (strictly, as backtesting.py's `crossover`).
    CrossAbove,
    /// `left` was above `right` on the previous bar and is below it now.
    CrossBelow,
}

/// A number per bar: an indicator output, a price, or a constant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Operand {
    /// An output of a catalog indicator (see the `indicators` tool): its
    /// name or an alias, its own parameters within their bounds, one of its
    /// outputs.
    #[schemars(extend("oneOf" = catalog::choice_schemas(false, true)))]
    Indicator {
        /// Indicator name or alias (`sma`, `rsi`, `macd`, ...).
        indicator: String,
        /// Parameters (defaults filled in), e.g. `{"period": 20}`.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        params: BTreeMap<String, f64>,
        /// Output series name for multi-output indicators (default: the first).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// Bars back (0 = current bar).
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: usize,
    },
    /// A price of the bar.
    Price {
        /// Which price.
        price: PriceField,
        /// Bars back (0 = current bar).
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: usize,
    },
    /// A constant.
    Value {
        /// The number.
        value: f64,
    },
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

/// A bar price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PriceField {
    /// Open.
    Open,
    /// High.
    High,
    /// Low.
    Low,
    /// Close.
    Close,
}

/// A distance from the entry price for a stop loss or a take profit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Stop {
    /// A distance in price units.
    Price {
        /// Distance (> 0).
        #[schemars(extend("exclusiveMinimum" = 0))]
        distance: f64,
    },
    /// A distance in pips.
    Pips {
        /// Number of pips (> 0).
        #[schemars(extend("exclusiveMinimum" = 0))]
        pips: f64,
        /// Price size of one pip (0.0001 for EURUSD, 0.01 for USDJPY).
        #[schemars(extend("exclusiveMinimum" = 0))]
        pip_size: f64,
    },
    /// A multiple of the ATR on the signal bar.
    Atr {
        /// Multiple of the ATR (> 0).
        #[schemars(extend("exclusiveMinimum" = 0))]
        multiple: f64,
        /// ATR period (default 14; 1 to 10000, the ATR indicator's bounds).
        #[serde(default = "default_atr_period")]
        #[schemars(range(min = 1, max = catalog::MAX_PERIOD))]
        period: u32,
    },
}

fn default_atr_period() -> u32 {
    14
}

/// Trade size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Sizing {
    /// A fixed volume in lots.
    FixedLots {
        /// Lots per trade (> 0).
        #[schemars(extend("exclusiveMinimum" = 0))]
        lots: f64,
        /// Units per lot (100000 for FX majors, 1 for stocks; > 0).
        #[schemars(extend("exclusiveMinimum" = 0))]
        contract_size: f64,
    },
    /// Risk a percentage of equity between entry and stop loss (requires `stop_loss`).
    RiskPercent {
        /// Percent of current equity risked per trade (0 < p ≤ 100).
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
        percent: f64,
    },
    /// backtesting.py's default: whole units bought with (1 − ε) of the available cash.
    AllIn,
}

/// Trading costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    /// Full bid/ask spread in price units (≥ 0); each fill pays half of it.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub spread: f64,
    /// Commission per fill as a fraction of the notional (0.001 = 0.1 %; 0 ≤ c < 1).
    #[serde(default)]
    #[schemars(range(min = 0), extend("exclusiveMaximum" = 1))]
    pub commission: f64,
    /// Adverse slippage per fill in price units (≥ 0).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub slippage: f64,
}

fn invalid(path: impl Into<String>, reason: impl Into<String>) -> BacktestError {
    BacktestError::Invalid {
        path: path.into(),
        reason: reason.into(),
    }
}

fn positive(path: &str, v: f64) -> Result<(), BacktestError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(invalid(path, format!("must be a finite number > 0, got {v}")))
    }
}

impl Strategy {
    /// Checks the strategy; the error names the JSON path of the first fault.
    pub fn validate(&self) -> Result<(), BacktestError> {
        let conds = [
            ("entry_long", &self.entry_long),
            ("exit_long", &self.exit_long),
            ("entry_short", &self.entry_short),
            ("exit_short", &self.exit_short),
        ];
        if self.entry_long.is_none() && self.entry_short.is_none() {
            return Err(invalid("", "at least one of entry_long, entry_short is required"));
        }
        for (name, c) in conds {
            if let Some(c) = c {
                c.validate(name)?;
            }
        }
        for (name, s) in [("stop_loss", &self.stop_loss), ("take_profit", &self.take_profit)] {
            if let Some(s) = s {
                s.validate(name)?;
            }
        }
        match &self.sizing {
            Sizing::FixedLots { lots, contract_size } => {
                positive("sizing.lots", *lots)?;
                positive("sizing.contract_size", *contract_size)?;
            }
            Sizing::RiskPercent { percent } => {
                positive("sizing.percent", *percent)?;
                if *percent > 100.0 {
                    return Err(invalid("sizing.percent", "must be at most 100"));
                }
                if self.stop_loss.is_none() {
                    return Err(invalid("sizing", "risk_percent sizing requires a stop_loss"));
                }
            }
            Sizing::AllIn => {}
        }
        for (name, v) in [
            ("costs.spread", self.costs.spread),
            ("costs.commission", self.costs.commission),
            ("costs.slippage", self.costs.slippage),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(invalid(name, format!("must be a finite number ≥ 0, got {v}")));
            }
        }
        if self.costs.commission >= 1.0 {
            return Err(invalid(
                "costs.commission",
                "is a fraction of the notional and must be < 1",
            ));
        }
        Ok(())
    }
}

impl Condition {
    fn validate(&self, path: &str) -> Result<(), BacktestError> {
        match self {
            Condition::All { all: list } | Condition::Any { any: list } => {
                let key = if matches!(self, Condition::All { .. }) {
                    "all"
                } else {
                    "any"
                };
                if list.is_empty() {
                    return Err(invalid(format!("{path}.{key}"), "must not be empty"));
                }
                for (i, c) in list.iter().enumerate() {
                    c.validate(&format!("{path}.{key}[{i}]"))?;
                }
                Ok(())
            }
            Condition::Not { not } => not.validate(&format!("{path}.not")),
            Condition::Compare(c) => {
                c.left.validate(&format!("{path}.left"))?;
                c.right.validate(&format!("{path}.right"))
            }
        }
    }
}

impl Operand {
    fn validate(&self, path: &str) -> Result<(), BacktestError> {
        match self {
            Operand::Indicator {
                indicator,
                params,
                output,
                ..
            } => {
                let Some(info) = catalog::find(indicator) else {
                    return Err(invalid(
                        format!("{path}.indicator"),
                        format!("unknown indicator \"{indicator}\""),
                    ));
                };
                for (k, v) in params {
                    if !info.params.iter().any(|p| p.name == k) {
                        let known: Vec<&str> = info.params.iter().map(|p| p.name).collect();
                        return Err(invalid(
                            format!("{path}.params.{k}"),
                            format!("unknown parameter of {} (known: {})", info.name, known.join(", ")),
                        ));
                    }
                    if !v.is_finite() {
                        return Err(invalid(format!("{path}.params.{k}"), "must be finite"));
                    }
                }
                if let Some(o) = output
                    && !info.outputs.contains(&o.as_str())
                {
                    return Err(invalid(
                        format!("{path}.output"),
                        format!(
                            "unknown output \"{o}\" of {} (known: {})",
                            info.name,
                            info.outputs.join(", ")
                        ),
                    ));
                }
                Ok(())
            }
            Operand::Price { .. } => Ok(()),
            Operand::Value { value } => {
                if value.is_finite() {
                    Ok(())
                } else {
                    Err(invalid(format!("{path}.value"), "must be finite"))
                }
            }
        }
    }
}

impl Stop {
    fn validate(&self, path: &str) -> Result<(), BacktestError> {
        match self {
            Stop::Price { distance } => positive(&format!("{path}.distance"), *distance),
            Stop::Pips { pips, pip_size } => {
                positive(&format!("{path}.pips"), *pips)?;
                positive(&format!("{path}.pip_size"), *pip_size)
            }
            Stop::Atr { multiple, period } => {
                positive(&format!("{path}.multiple"), *multiple)?;
                if *period == 0 {
                    return Err(invalid(format!("{path}.period"), "must be ≥ 1"));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "<!-- schema:begin -->\n```json\n";
    const END: &str = "```\n<!-- schema:end -->";

    /// `docs/backtest-dsl.md` holds the JSON Schema generated from these types;
    /// `UPDATE_DOCS=1 cargo test -p tradeterm-core --lib backtest::dsl` rewrites it.
    #[test]
    fn schema_in_docs_is_current() {
        let schema = serde_json::to_string_pretty(&schemars::schema_for!(Strategy)).unwrap() + "\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/backtest-dsl.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let (Some(a), Some(b)) = (doc.find(BEGIN), doc.find(END)) else {
            panic!("schema markers missing in {path}");
        };
        let current = &doc[a + BEGIN.len()..b];
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let new = format!("{}{schema}{}", &doc[..a + BEGIN.len()], &doc[b..]);
            std::fs::write(path, new).unwrap();
        } else {
            assert_eq!(current, schema, "run with UPDATE_DOCS=1 to refresh {path}");
        }
    }

    /// The schema states what `validate` checks, across fields too: a
    /// strategy the schema refuses, `validate` refuses.
    #[test]
    fn the_schema_states_the_checks() {
        let schema = serde_json::to_value(schemars::schema_for!(Strategy)).unwrap();
        let all_of = schema["allOf"].as_array().unwrap();
        let entries: Vec<&str> = all_of[0]["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["required"][0].as_str().unwrap())
            .collect();
        assert_eq!(entries, ["entry_long", "entry_short"]);
        assert_eq!(
            all_of[1]["if"]["properties"]["sizing"]["properties"]["type"]["const"],
            "risk_percent"
        );
        assert_eq!(all_of[1]["then"]["required"][0], "stop_loss");
        let defs = &schema["$defs"];
        assert_eq!(defs["Costs"]["properties"]["commission"]["exclusiveMaximum"], 1);
        let indicator = &defs["Operand"]["anyOf"][0];
        assert!(indicator["oneOf"].as_array().unwrap().len() >= 20, "{indicator}");
        let parse = |v: serde_json::Value| serde_json::from_value::<Strategy>(v).unwrap().validate();
        assert!(parse(serde_json::json!({ "sizing": { "type": "all_in" } })).is_err());
        assert!(
            parse(serde_json::json!({
                "entry_long": { "left": { "price": "close" }, "op": "gt", "right": { "value": 1 } },
                "sizing": { "type": "risk_percent", "percent": 1 }
            }))
            .is_err()
        );
    }

    #[test]
    fn parses_a_full_tree() {
        let s: Strategy = serde_json::from_value(serde_json::json!({
            "entry_long": {"all": [
                {"left": {"indicator": "rsi", "params": {"period": 14}}, "op": "lt", "right": {"value": 30}},
                {"not": {"left": {"price": "close", "shift": 1}, "op": "gt", "right": {"price": "open"}}}
            ]},
            "exit_long": {"any": [{"left": {"indicator": "macd", "output": "histogram"}, "op": "cross_below", "right": {"value": 0}}]},
            "stop_loss": {"type": "atr", "multiple": 2},
            "take_profit": {"type": "pips", "pips": 50, "pip_size": 0.0001},
            "sizing": {"type": "risk_percent", "percent": 1},
            "costs": {"spread": 0.0001, "commission": 0.0002}
        }))
        .unwrap();
        s.validate().unwrap();
        assert!(matches!(s.stop_loss, Some(Stop::Atr { period: 14, .. })));
    }
}
