//! Charts of tool results: which catalog tools have one, the `chart` input
//! flag that asks for it, and the data the picture needs.
//!
//! A chartable tool ([`ChartKind::of`], by name, in this one place) gets a
//! boolean `chart` property in its input schema (added by [`catalog`](crate::catalog),
//! not by the tool's module). The flag is taken out of the input before the
//! handler sees it ([`take_chart_flag`], called on every call path), so the
//! tool's own input type never knows it. [`invoke_charted`] runs the tool
//! through [`invoke`] and, when the flag is set, gathers what the picture
//! needs: the tool's output, plus, for `detect_structure`, whose output has
//! no candles, the bars it was computed on (fetched with `get_bars` through
//! the same [`invoke`], as the same caller on the same terminal). Drawing is
//! not done here: the adapters hand a [`ChartData`] to the renderer
//! (`tradeterm-charts`), so this crate links no plotting code.

use std::sync::Arc;

use serde_json::{Value, json};
use tradeterm_core::time::{parse_iso, to_iso};

use crate::{Invocation, Services, Tool, ToolError, find, invoke};

/// Name of the input property that asks for a chart.
pub const CHART_PROPERTY: &str = "chart";

/// What the chart of a tool shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// `get_bars`: candlesticks.
    Candles,
    /// `detect_structure`: fair value gaps, order blocks, swings, BOS/CHoCH
    /// and liquidity drawn over the candles.
    Structure,
    /// `backtest_strategy`: equity over drawdown.
    Backtest,
    /// `get_equity_curve`: balance over drawdown (cash flows taken out).
    EquityCurve,
    /// `get_correlation_matrix`: a heat map.
    Correlation,
}

impl ChartKind {
    /// Every kind.
    pub const ALL: [ChartKind; 5] = [
        ChartKind::Candles,
        ChartKind::Structure,
        ChartKind::Backtest,
        ChartKind::EquityCurve,
        ChartKind::Correlation,
    ];

    /// The chart kind of a catalog tool, if it has one.
    pub fn of(tool: &str) -> Option<ChartKind> {
        Some(match tool {
            "get_bars" => ChartKind::Candles,
            "detect_structure" => ChartKind::Structure,
            "backtest_strategy" => ChartKind::Backtest,
            "get_equity_curve" => ChartKind::EquityCurve,
            "get_correlation_matrix" => ChartKind::Correlation,
            _ => return None,
        })
    }

    /// The kind's name, as the renderer knows it (`tradeterm_charts::KINDS`).
    pub const fn name(self) -> &'static str {
        match self {
            ChartKind::Candles => "candles",
            ChartKind::Structure => "structure",
            ChartKind::Backtest => "backtest",
            ChartKind::EquityCurve => "equity_curve",
            ChartKind::Correlation => "correlation",
        }
    }

    /// The description of the `chart` input property: its first sentence is
    /// what the lean MCP list keeps.
    const fn property_description(self) -> &'static str {
        match self {
            ChartKind::Candles => {
                "`true`: also return a PNG candlestick chart. MCP: an image content beside the result; REST: a base64 `chart` field, or the image itself with `Accept: image/png`."
            }
            ChartKind::Structure => {
                "`true`: also return a PNG of the events over candles. MCP: an image content beside the result; REST: a base64 `chart` field, or the image itself with `Accept: image/png`."
            }
            ChartKind::Backtest => {
                "`true`: also return a PNG equity/drawdown chart. MCP: an image content beside the result; REST: a base64 `chart` field, or the image itself with `Accept: image/png`."
            }
            ChartKind::EquityCurve => {
                "`true`: also return a PNG balance/drawdown chart. MCP: an image content beside the result; REST: a base64 `chart` field, or the image itself with `Accept: image/png`."
            }
            ChartKind::Correlation => {
                "`true`: also return a PNG heat map of the matrix. MCP: an image content beside the result; REST: a base64 `chart` field, or the image itself with `Accept: image/png`."
            }
        }
    }
}

/// Adds the `chart` property to a chartable tool's input schema (an object
/// schema; `additionalProperties: false` stays as it is).
pub(crate) fn add_chart_property(schema: &mut Value, kind: ChartKind) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            CHART_PROPERTY.to_owned(),
            json!({ "type": "boolean", "description": kind.property_description() }),
        );
    } else if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "properties".into(),
            json!({ CHART_PROPERTY: { "type": "boolean", "description": kind.property_description() } }),
        );
    }
}

/// Takes the `chart` flag out of a chartable tool's input: `Ok(true)` when
/// it was `true`. A non-boolean `chart` is a validation error; on a tool
/// without a chart the input is left alone (its handler refuses the unknown
/// field, as for any other).
pub fn take_chart_flag(tool: &Tool, input: &mut Value) -> Result<bool, ToolError> {
    if tool.chart.is_none() {
        return Ok(false);
    }
    let Some(obj) = input.as_object_mut() else {
        return Ok(false);
    };
    match obj.remove(CHART_PROPERTY) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(ToolError::InvalidInput("`chart` must be true or false".into())),
    }
}

/// What a chart is drawn from.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartData {
    /// What the chart shows.
    pub kind: ChartKind,
    /// The bars (`get_bars` output) for kinds whose output has no candles.
    pub bars: Option<Value>,
}

/// A tool result, with what its chart needs when one was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Charted {
    /// The tool's output.
    pub output: Value,
    /// Set when the input said `"chart": true` (on a chartable tool).
    pub chart: Option<ChartData>,
}

/// Runs `tool` through [`invoke`] and, when the input asks for a chart,
/// gathers its data ([`ChartData`]). The `chart` flag is checked here and
/// taken out before the handler runs.
pub async fn invoke_charted(
    services: &Arc<Services>,
    tool: &Tool,
    call: Invocation,
    mut input: Value,
) -> Result<Charted, ToolError> {
    let wanted = take_chart_flag(tool, &mut input)?;
    // The call is kept for the chart's bars only when a chart is drawn.
    let (call, kept) = match tool.chart {
        Some(kind) if wanted => (call.clone(), Some((kind, call))),
        _ => (call, None),
    };
    let output = invoke(services, tool, call, input).await?;
    let chart = match kept {
        Some((kind, call)) => Some(ChartData {
            kind,
            bars: bars_for(services, kind, call, &output).await?,
        }),
        None => None,
    };
    Ok(Charted { output, chart })
}

/// The bars a chart of `kind` needs besides the output: for `Structure`,
/// `get_bars` over the output's `from`..=`to`.
async fn bars_for(
    services: &Arc<Services>,
    kind: ChartKind,
    call: Invocation,
    output: &Value,
) -> Result<Option<Value>, ToolError> {
    if kind != ChartKind::Structure {
        return Ok(None);
    }
    let Some(input) = structure_bars_input(output) else {
        return Ok(None);
    };
    let get_bars = find("get_bars").ok_or_else(|| ToolError::Internal("the catalog has no get_bars".into()))?;
    invoke(services, get_bars, call, input).await.map(Some)
}

/// The `get_bars` input of the bars a `detect_structure` output was computed
/// on: `[from, to]`, i.e. `to` plus one millisecond as the exclusive end.
fn structure_bars_input(output: &Value) -> Option<Value> {
    let text = |f: &str| output.get(f).and_then(Value::as_str);
    let to = parse_iso(text("to")?).ok()?;
    Some(json!({
        "symbol": text("symbol")?,
        "timeframe": text("timeframe")?,
        "from": text("from")?,
        "to": to_iso(to + 1),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chartable_tools_are_marked_and_carry_the_flag_in_their_schema() {
        let charted: Vec<&str> = crate::catalog()
            .iter()
            .filter(|t| t.chart.is_some())
            .map(|t| t.name)
            .collect();
        assert_eq!(
            charted,
            [
                "get_bars",
                "backtest_strategy",
                "detect_structure",
                "get_correlation_matrix",
                "get_equity_curve"
            ]
        );
        for t in crate::catalog() {
            let prop = &t.input_schema["properties"][CHART_PROPERTY];
            assert_eq!(t.chart, ChartKind::of(t.name), "{}", t.name);
            match t.chart {
                Some(kind) => {
                    assert_eq!(prop["type"], "boolean", "{}", t.name);
                    assert_eq!(prop["description"], kind.property_description());
                    assert_ne!(t.input_schema["additionalProperties"], json!(true));
                    let required = t.input_schema["required"].as_array().cloned().unwrap_or_default();
                    assert!(!required.contains(&json!(CHART_PROPERTY)), "{}", t.name);
                }
                None => assert!(prop.is_null(), "{} has no chart", t.name),
            }
        }
        for kind in ChartKind::ALL {
            let first = kind.property_description().split(". ").next().unwrap();
            assert!(
                first.chars().count() <= 56,
                "{kind:?}: `{first}` is cut by the lean list"
            );
        }
    }

    #[test]
    fn the_flag_is_taken_out_and_checked() {
        let bars = crate::find("get_bars").unwrap();
        let mut input = json!({ "symbol": "EURUSD", "timeframe": "H1", "chart": true });
        assert_eq!(take_chart_flag(bars, &mut input), Ok(true));
        assert_eq!(input, json!({ "symbol": "EURUSD", "timeframe": "H1" }));
        let mut off = json!({ "chart": false });
        assert_eq!(take_chart_flag(bars, &mut off), Ok(false));
        assert_eq!(off, json!({}));
        let mut bad = json!({ "chart": "yes" });
        assert!(matches!(
            take_chart_flag(bars, &mut bad),
            Err(ToolError::InvalidInput(_))
        ));
        // A tool without a chart keeps the field, for its handler to refuse.
        let tick = crate::find("get_tick").unwrap();
        let mut input = json!({ "symbol": "EURUSD", "chart": true });
        assert_eq!(take_chart_flag(tick, &mut input), Ok(false));
        assert_eq!(input["chart"], true);
    }

    #[test]
    fn structure_charts_fetch_the_analysed_bars() {
        let out = json!({ "symbol": "EURUSD", "timeframe": "H1", "from": "2024-01-01T00:00:00Z", "to": "2024-01-02T00:00:00Z", "events": [] });
        assert_eq!(
            structure_bars_input(&out),
            Some(
                json!({ "symbol": "EURUSD", "timeframe": "H1", "from": "2024-01-01T00:00:00Z", "to": "2024-01-02T00:00:00.001Z" })
            )
        );
        assert_eq!(structure_bars_input(&json!({ "symbol": "EURUSD" })), None);
    }
}
