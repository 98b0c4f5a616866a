//! `check_confluence`: 1 to 8 indicator conditions evaluated at the last bar.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::confluence::{self, Assessment, Op, Operand, SeriesRef, Unevaluable};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Bar, Timeframe};

use super::{MAX_CONDITIONS, bars_arg, bars_of, last_time, spec};
use crate::market::check_symbol;
use crate::{Tool, ToolContext, ToolError};

/// Fewest bars the tool accepts (`bars`).
const MIN_CONFLUENCE_BARS: u32 = 50;
/// One condition of `check_confluence`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = tradeterm_core::indicators::choice_schemas(true, true)))]
pub struct ConditionInput {
    /// Timeframe of the bars the condition is evaluated on.
    pub timeframe: Timeframe,
    /// Indicator name or alias of `list_indicators` (`rsi`, `ema`, `macd`, `bbands`, ...), or `price`
    /// (outputs `close`, `open`, `high`, `low`).
    #[schemars(schema_with = "crate::analytics::confluence_indicator_name")]
    pub indicator: String,
    /// Indicator parameters (e.g. `{"period": 14}`); missing ones take their defaults.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
    /// Output series (`signal`, `upper`, ...); default the indicator's first output.
    #[serde(default)]
    pub output: Option<String>,
    /// `gt`, `lt`, `gte`, `lte` (last bar), `cross_above`, `cross_below` (last two bars).
    pub op: Op,
    /// A number, or another series `{"indicator": "ema", "params": {"period": 50}, "output": null}` on the same bars.
    pub value: Operand,
}

/// Input of `check_confluence`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfluenceInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// 1 to 8 conditions.
    #[schemars(length(min = 1, max = super::MAX_CONDITIONS))]
    pub conditions: Vec<ConditionInput>,
    /// Bars of history per timeframe, for indicator warm-up (50-5000, default 500).
    #[serde(default)]
    #[schemars(range(min = MIN_CONFLUENCE_BARS, max = super::MAX_ANALYSIS_BARS))]
    pub bars: Option<u32>,
}

/// Result of one condition.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConditionResult {
    /// Position of the condition in the input (0-based).
    pub index: usize,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Operator.
    pub op: Op,
    /// Whether it holds at the last bar (`false` when it could not be evaluated).
    pub passed: bool,
    /// Whether it could be evaluated: `false` when a series has no value at a bar the operator reads (a
    /// warm-up longer than the terminal's history; see `unevaluable`).
    pub evaluable: bool,
    /// Open time of the last bar of the timeframe.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Left series (`indicator.output`).
    pub left_name: String,
    /// Left value at the last bar (`null` when not evaluable).
    pub left: Option<f64>,
    /// Left value one bar earlier (crosses only).
    pub left_prev: Option<f64>,
    /// Right side (`value` for a number, else `indicator.output`).
    pub right_name: String,
    /// Right value at the last bar (`null` when not evaluable).
    pub right: Option<f64>,
    /// Right value one bar earlier (crosses only).
    pub right_prev: Option<f64>,
    /// Why it could not be evaluated: the series without a value, the bars it needs and the bars the terminal
    /// gave (`null` when evaluated).
    pub unevaluable: Option<Unevaluable>,
}

/// Output of `check_confluence`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfluenceOutput {
    /// Instrument.
    pub symbol: String,
    /// One result per condition, in input order.
    pub results: Vec<ConditionResult>,
    /// Conditions that hold.
    pub passed: usize,
    /// Conditions evaluated that do not hold.
    pub failed: usize,
    /// Conditions that could not be evaluated (insufficient history): never counted as holding.
    pub unevaluable: usize,
    /// Conditions checked.
    pub total: usize,
    /// `passed / total` (0-1): an unevaluable condition counts as not holding.
    pub score: f64,
    /// Whether every condition holds (`false` when one could not be evaluated).
    pub all_passed: bool,
}

async fn handle(ctx: ToolContext, input: ConfluenceInput) -> Result<ConfluenceOutput, ToolError> {
    if input.conditions.is_empty() || input.conditions.len() > MAX_CONDITIONS {
        return Err(ToolError::InvalidInput(format!(
            "`conditions` must hold 1 to {MAX_CONDITIONS} conditions, got {}",
            input.conditions.len()
        )));
    }
    let bar_count = bars_arg(input.bars, 500, MIN_CONFLUENCE_BARS)?;
    check_symbol(&input.symbol)?;
    for (number, condition) in input.conditions.iter().enumerate() {
        check_condition(number, condition)?;
    }
    let mut by_tf: BTreeMap<Timeframe, Vec<Bar>> = BTreeMap::new();
    for condition in &input.conditions {
        if let std::collections::btree_map::Entry::Vacant(slot) = by_tf.entry(condition.timeframe) {
            slot.insert(bars_of(&ctx, &input.symbol, condition.timeframe, bar_count).await?);
        }
    }
    // Off the serving thread (crate::compute): up to 8 indicators over the bars.
    let conditions = input.conditions;
    let results = crate::compute::cpu(move || -> Result<Vec<ConditionResult>, ToolError> {
        let mut results = Vec::with_capacity(conditions.len());
        for (number, condition) in conditions.into_iter().enumerate() {
            let bars = by_tf.get(&condition.timeframe).map(Vec::as_slice).unwrap_or_default();
            let left = SeriesRef {
                indicator: condition.indicator,
                params: condition.params,
                output: condition.output,
            };
            let assessment = confluence::assess(bars, &left, condition.op, &condition.value)
                .map_err(|e| ToolError::InvalidInput(format!("condition {number} ({}): {e}", condition.timeframe)))?;
            let time = last_time(bars);
            results.push(match assessment {
                Assessment::Evaluated(outcome) => ConditionResult {
                    index: number,
                    timeframe: condition.timeframe,
                    op: condition.op,
                    passed: outcome.passed,
                    evaluable: true,
                    time,
                    left_name: outcome.left_name,
                    left: Some(outcome.left),
                    left_prev: outcome.left_prev,
                    right_name: outcome.right_name,
                    right: Some(outcome.right),
                    right_prev: outcome.right_prev,
                    unevaluable: None,
                },
                Assessment::Unevaluable(why) => ConditionResult {
                    index: number,
                    timeframe: condition.timeframe,
                    op: condition.op,
                    passed: false,
                    evaluable: false,
                    time,
                    left_name: series_name(&left),
                    left: None,
                    left_prev: None,
                    right_name: match &condition.value {
                        Operand::Number(_) => "value".to_owned(),
                        Operand::Series(s) => series_name(s),
                    },
                    right: None,
                    right_prev: None,
                    unevaluable: Some(why),
                },
            });
        }
        Ok(results)
    })
    .await??;
    Ok(summary(input.symbol, results))
}

/// Checks condition `number` as its schema states it (exact indicator
/// names, the indicator's own parameters of their kind and bounds, its
/// outputs; the same for a series on the right), naming the field.
fn check_condition(number: usize, c: &ConditionInput) -> Result<(), ToolError> {
    let field = format!("conditions[{number}].");
    let check = tradeterm_core::indicators::check_choice(&field, &c.indicator, &c.params, c.output.as_deref(), true)
        .and_then(|()| match &c.value {
            Operand::Series(s) => s.check(&format!("{field}value.")),
            Operand::Number(_) => Ok(()),
        });
    check.map_err(|e| ToolError::InvalidInput(e.to_string()))
}

/// `indicator.output` of a series as [`confluence::resolve`] names it
/// (canonical indicator name, the first output by default).
fn series_name(s: &SeriesRef) -> String {
    let key = s.indicator.trim().to_ascii_lowercase();
    let (name, first) = match tradeterm_core::indicators::find(&key) {
        Some(info) => (info.name.to_owned(), info.outputs.first().copied().unwrap_or_default()),
        None => (key, "close"),
    };
    let output = s
        .output
        .as_deref()
        .map_or_else(|| first.to_owned(), |o| o.trim().to_ascii_lowercase());
    format!("{name}.{output}")
}

/// The verdict over the results: an unevaluable condition never counts as
/// holding (`passed` only counts evaluated conditions that hold).
fn summary(symbol: String, results: Vec<ConditionResult>) -> ConfluenceOutput {
    let total = results.len();
    let passed = results.iter().filter(|r| r.evaluable && r.passed).count();
    let unevaluable = results.iter().filter(|r| !r.evaluable).count();
    ConfluenceOutput {
        symbol,
        results,
        passed,
        failed: total - passed - unevaluable,
        unevaluable,
        total,
        score: if total == 0 { 0.0 } else { passed as f64 / total as f64 },
        all_passed: total > 0 && passed == total,
    }
}

pub(super) fn tool() -> Tool {
    spec(
        "check_confluence",
        "Confluence check",
        "Evaluates 1 to 8 conditions at the last bar, each on its own timeframe: an indicator of `list_indicators` (or `price`) compared with a number or another indicator using gt, lt, gte, lte, cross_above or cross_below. Returns each condition's values and result, and the overall passed count and score. A condition whose indicator warm-up is longer than the terminal's history is reported as not evaluable (bars needed vs available) and never counts as holding.",
    )
    .build(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(passed: bool, evaluable: bool) -> ConditionResult {
        ConditionResult {
            index: 0,
            timeframe: Timeframe::H1,
            op: Op::Gt,
            passed,
            evaluable,
            time: 0,
            left_name: "sma.sma".into(),
            left: evaluable.then_some(1.0),
            left_prev: None,
            right_name: "value".into(),
            right: evaluable.then_some(0.0),
            right_prev: None,
            unevaluable: None,
        }
    }

    #[test]
    fn an_unevaluable_condition_never_counts_as_holding() {
        let s = summary(
            "EURUSD".into(),
            vec![result(true, true), result(true, false), result(false, true)],
        );
        assert_eq!((s.passed, s.failed, s.unevaluable, s.total), (1, 1, 1, 3));
        assert!((s.score - 1.0 / 3.0).abs() < 1e-12 && !s.all_passed);
        let s = summary("EURUSD".into(), vec![result(true, true), result(false, false)]);
        assert_eq!((s.passed, s.failed, s.unevaluable), (1, 0, 1));
        assert!(
            !s.all_passed,
            "every evaluated one holds, but one could not be evaluated"
        );
        let s = summary("EURUSD".into(), vec![result(true, true)]);
        assert!(s.all_passed && s.score == 1.0);
    }

    #[test]
    fn conditions_are_held_to_their_schema() {
        let condition = |c: serde_json::Value| -> ConditionInput { serde_json::from_value(c).unwrap() };
        let ok = condition(serde_json::json!({ "timeframe": "H1", "indicator": "rsi", "op": "gt", "value": 70 }));
        assert!(check_condition(0, &ok).is_ok());
        for (c, field) in [
            (
                serde_json::json!({ "timeframe": "H1", "indicator": "RSI", "op": "gt", "value": 70 }),
                "`conditions[2].indicator`",
            ),
            (
                serde_json::json!({ "timeframe": "H1", "indicator": "rsi", "output": "Rsi", "op": "gt", "value": 70 }),
                "`conditions[2].output`",
            ),
            (
                serde_json::json!({ "timeframe": "H1", "indicator": "sma", "params": { "period": 2.5 }, "op": "gt", "value": 1 }),
                "`conditions[2].params.period`",
            ),
            (
                serde_json::json!({ "timeframe": "H1", "indicator": "sma", "op": "gt", "value": { "indicator": "EMA" } }),
                "`conditions[2].value.indicator`",
            ),
        ] {
            let e = check_condition(2, &condition(c)).unwrap_err();
            assert_eq!(e.code(), "VALIDATION_ERROR");
            assert!(e.to_string().contains(field), "{e} names {field}");
        }
    }

    #[test]
    fn series_names_follow_resolve() {
        let s = |indicator: &str, output: Option<&str>| SeriesRef {
            indicator: indicator.into(),
            params: BTreeMap::new(),
            output: output.map(str::to_owned),
        };
        assert_eq!(series_name(&s("MA", None)), "ma.ma");
        assert_eq!(series_name(&s("SMA", None)), "sma.sma");
        assert_eq!(series_name(&s("bbands", Some("Upper"))), "bbands.upper");
        assert_eq!(series_name(&s("price", None)), "price.close");
    }
}
