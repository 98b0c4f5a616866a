//! Analytics tools computed on the server from terminal bars: indicators.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::indicators;
use tradeterm_core::time::{UnixMs, iso};

use crate::market::{MAX_BARS, NoInput, fetch_bars};
use crate::{Annotations, Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Largest number of values one indicator call returns.
pub const MAX_VALUES: u32 = 5_000;

/// Schema of an indicator name: a name or alias of the indicator catalog
/// (what `indicators::find` reads, which also ignores case and treats `-`
/// and spaces as `_`).
pub(crate) fn indicator_name(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": indicator_names(false) })
}

/// As [`indicator_name`], and `price`.
pub(crate) fn confluence_indicator_name(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": indicator_names(true) })
}

/// The catalog's indicator names and aliases, and `price` when `with_price`
/// (the confluence conditions read price series too).
pub(crate) fn indicator_names(with_price: bool) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = indicators::catalog()
        .iter()
        .flat_map(|i| std::iter::once(i.name).chain(i.aliases.iter().copied()))
        .collect();
    if with_price {
        names.push("price");
    }
    names
}

/// Input of `get_indicator`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = indicators::choice_schemas(false, false)))]
pub struct IndicatorInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Indicator name or alias (`list_indicators` gives them all): sma, ema, wma, rsi, macd, atr, bbands,
    /// stoch, sar (Parabolic SAR), stddev (Standard Deviation), willr (Williams %R), adx, cci, mom, roc,
    /// obv, mfi, donchian, keltner, ichimoku, vwap, supertrend.
    #[schemars(schema_with = "indicator_name")]
    pub indicator: String,
    /// Parameters by name (e.g. `{"period": 14}`); missing ones take their defaults.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
    /// Number of most recent values to return (1-5000, default 100). Extra history is fetched for warm-up.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_VALUES))]
    pub count: Option<u32>,
}

/// One output series.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SeriesOut {
    /// Output name (`value`, `macd`, `signal`, `upper`, ...).
    pub name: String,
    /// One value per returned bar; `null` while the indicator warms up.
    pub values: Vec<Option<f64>>,
}

/// Output of `get_indicator`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IndicatorResult {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Canonical indicator name.
    pub indicator: String,
    /// Parameters used (defaults filled in).
    pub params: BTreeMap<String, f64>,
    /// Bar open times (ISO 8601 UTC) of the returned values, oldest first.
    #[serde(with = "iso::vec")]
    #[schemars(with = "Vec<iso::Schema>")]
    pub times: Vec<UnixMs>,
    /// Output series aligned with `times`.
    pub series: Vec<SeriesOut>,
    /// Bars of history the values were computed from (recursive indicators
    /// such as EMA or RSI depend slightly on how far back the history starts).
    pub history_bars: usize,
}

/// One parameter of an indicator.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ParamOut {
    /// Name.
    pub name: String,
    /// What it controls.
    pub description: String,
    /// Default value, if any.
    pub default: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// One indicator of the catalog.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IndicatorDescription {
    /// Canonical name.
    pub name: String,
    /// Human title.
    pub title: String,
    /// Family (trend, momentum, volatility, volume, price, statistics, cycle).
    pub family: String,
    /// Other accepted names.
    pub aliases: Vec<String>,
    /// What it measures.
    pub description: String,
    /// Parameters.
    pub params: Vec<ParamOut>,
    /// Output series names.
    pub outputs: Vec<String>,
    /// Warm-up (bars before the first value).
    pub warmup: String,
}

/// Output of `list_indicators`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IndicatorList {
    /// Every indicator.
    pub indicators: Vec<IndicatorDescription>,
}

async fn get_indicator(ctx: ToolContext, input: IndicatorInput) -> Result<IndicatorResult, ToolError> {
    let count = input.count.unwrap_or(100);
    if count == 0 || count > MAX_VALUES {
        return Err(ToolError::InvalidInput(format!(
            "`count` must be between 1 and {MAX_VALUES}"
        )));
    }
    let info = indicators::find(&input.indicator).ok_or_else(|| {
        let names: Vec<&str> = indicators::catalog().iter().map(|i| i.name).collect();
        ToolError::InvalidInput(format!(
            "unknown indicator `{}`; one of: {}",
            input.indicator,
            names.join(", ")
        ))
    })?;
    for (param, value) in &input.params {
        if !value.is_finite() {
            return Err(ToolError::InvalidInput(format!(
                "parameter `{param}` must be a finite number"
            )));
        }
    }
    // Warm-up history: three times the largest period-like parameter, at least 300 bars.
    let longest = info
        .params
        .iter()
        .map(|p| input.params.get(p.name).copied().or(p.default).unwrap_or(0.0))
        .filter(|value| value.is_finite() && *value >= 1.0 && *value <= 10_000.0)
        .fold(0.0f64, f64::max);
    let extra = ((longest * 3.0) as u32).max(300);
    let want = count.saturating_add(extra).min(MAX_BARS);
    let bars = fetch_bars(&ctx, &input.symbol, input.timeframe, Some(want), None, None).await?;
    if bars.is_empty() {
        return Err(ToolError::NotFound(format!(
            "no bars for {} {}",
            input.symbol, input.timeframe
        )));
    }
    // Off the serving thread (crate::compute): MAVP over a wide period
    // range, for one, is heavy.
    let (name, params) = (info.name, input.params);
    let (out, bars) = crate::compute::cpu(move || (indicators::compute(name, &params, &bars), bars)).await?;
    let out = out.map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    let total = bars.len();
    let start = total.saturating_sub(count as usize);
    Ok(IndicatorResult {
        symbol: input.symbol,
        timeframe: input.timeframe,
        indicator: out.indicator,
        params: out.params,
        times: bars[start..].iter().map(|b| b.time).collect(),
        series: out
            .series
            .into_iter()
            .map(|s| SeriesOut {
                name: s.name,
                values: s.values.get(start..).map(<[_]>::to_vec).unwrap_or_default(),
            })
            .collect(),
        history_bars: total,
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_indicator",
            title: "Technical indicator",
            description: "Computes a technical indicator on the server from the terminal's bars and returns the most recent values with their bar times: SMA, EMA, WMA, RSI, MACD, ATR, Bollinger Bands, Stochastic, Parabolic SAR, Standard Deviation, Williams %R, ADX (+DI/-DI), CCI, Momentum, ROC, OBV, MFI, Donchian, Keltner, Ichimoku, VWAP, SuperTrend. Values match TA-Lib where TA-Lib has the indicator.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_indicator),
        ToolSpec {
            name: "list_indicators",
            title: "Indicator catalog",
            description: "Every indicator `get_indicator` accepts, with aliases, parameters (defaults and bounds), output names and warm-up.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::License,
            annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: false },
        }
        .build(|_ctx: ToolContext, _: NoInput| async move {
            Ok(IndicatorList {
                indicators: indicators::catalog()
                    .iter()
                    .map(|i| IndicatorDescription {
                        name: i.name.to_owned(),
                        title: i.title.to_owned(),
                        family: i.family.to_owned(),
                        aliases: i.aliases.iter().map(|a| (*a).to_owned()).collect(),
                        description: i.description.to_owned(),
                        params: i
                            .params
                            .iter()
                            .map(|p| ParamOut {
                                name: p.name.to_owned(),
                                description: p.description.to_owned(),
                                default: p.default,
                                min: p.min,
                                max: p.max,
                            })
                            .collect(),
                        outputs: i.outputs.iter().map(|o| (*o).to_owned()).collect(),
                        warmup: i.warmup.to_owned(),
                    })
                    .collect(),
            })
        }),
    ]
}
