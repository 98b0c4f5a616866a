//! `check_confluence`: 1 to 8 indicator conditions evaluated at the last bar.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::confluence::{self, Op, Operand, SeriesRef};
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
#[schemars(extend("anyOf" = tradeterm_core::indicators::choice_schemas(true, true)))]
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
    /// Whether it holds at the last bar.
    pub passed: bool,
    /// Open time of the last bar of the timeframe.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Left series (`indicator.output`).
    pub left_name: String,
    /// Left value at the last bar.
    pub left: f64,
    /// Left value one bar earlier (crosses only).
    pub left_prev: Option<f64>,
    /// Right side (`value` for a number, else `indicator.output`).
    pub right_name: String,
    /// Right value at the last bar.
    pub right: f64,
    /// Right value one bar earlier (crosses only).
    pub right_prev: Option<f64>,
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
    /// Conditions that do not.
    pub failed: usize,
    /// Conditions checked.
    pub total: usize,
    /// `passed / total` (0-1).
    pub score: f64,
    /// Whether every condition holds.
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
    let mut by_tf: BTreeMap<Timeframe, Vec<Bar>> = BTreeMap::new();
    for condition in &input.conditions {
        if let std::collections::btree_map::Entry::Vacant(slot) = by_tf.entry(condition.timeframe) {
            slot.insert(bars_of(&ctx, &input.symbol, condition.timeframe, bar_count).await?);
        }
    }
    let mut results = Vec::with_capacity(input.conditions.len());
    for (number, condition) in input.conditions.into_iter().enumerate() {
        let bars = by_tf.get(&condition.timeframe).map(Vec::as_slice).unwrap_or_default();
        let left = SeriesRef {
            indicator: condition.indicator,
            params: condition.params,
            output: condition.output,
        };
        let outcome = confluence::evaluate(bars, &left, condition.op, &condition.value)
            .map_err(|e| ToolError::InvalidInput(format!("condition {number} ({}): {e}", condition.timeframe)))?;
        results.push(ConditionResult {
            index: number,
            timeframe: condition.timeframe,
            op: condition.op,
            passed: outcome.passed,
            time: last_time(bars),
            left_name: outcome.left_name,
            left: outcome.left,
            left_prev: outcome.left_prev,
            right_name: outcome.right_name,
            right: outcome.right,
            right_prev: outcome.right_prev,
        });
    }
    let total = results.len();
    let passed = results.iter().filter(|r| r.passed).count();
    Ok(ConfluenceOutput {
        symbol: input.symbol,
        results,
        passed,
        failed: total - passed,
        total,
        score: passed as f64 / total as f64,
        all_passed: passed == total,
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "check_confluence",
        "Confluence check",
        "Evaluates 1 to 8 conditions at the last bar, each on its own timeframe: an indicator of `list_indicators` (or `price`) compared with a number or another indicator using gt, lt, gte, lte, cross_above or cross_below. Returns each condition's values and result, and the overall passed count and score.",
    )
    .build(handle)
}
