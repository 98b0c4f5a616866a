//! `recommend_strategy_style`: a strategy style from the volatility regime and the swing structure.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::regime::{self, Bias, Regime, RegimeConfig, RegimeMetrics, Style};
use tradeterm_core::time::{UnixMs, iso};

use super::{TimeframeStructure, bars_of, core_err, last_time, short_history, spec, structure_out, swing_arg};
use crate::{Tool, ToolContext, ToolError};

/// Input of `recommend_strategy_style`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrategyStyleInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Swing window of the structure analysis (1-100, default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = super::MAX_SWING_LENGTH))]
    pub swing_length: Option<u32>,
}

/// Output of `recommend_strategy_style`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StrategyStyleOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Open time of the last bar analysed.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// `trend-follow`, `mean-revert`, `breakout` or `stand-aside`.
    pub style: Style,
    /// Favoured direction: `long`, `short` or `neutral`.
    pub bias: Bias,
    /// Why, each reason citing the measured numbers.
    pub reasons: Vec<String>,
    /// The volatility regime it rests on; `null` when the terminal has too few bars (the style is then
    /// `stand-aside`, see `warnings`).
    pub regime: Option<Regime>,
    /// The regime's numbers; `null` with `regime`.
    pub metrics: Option<RegimeMetrics>,
    /// The market structure it rests on; `null` with `regime`.
    pub structure: Option<TimeframeStructure>,
    /// What limits the answer (the terminal's history shorter than the regime's indicators or 3 × swing_length
    /// need); empty otherwise.
    pub warnings: Vec<String>,
}

async fn handle(ctx: ToolContext, input: StrategyStyleInput) -> Result<StrategyStyleOutput, ToolError> {
    let swing_length = swing_arg(input.swing_length)?;
    let bars = bars_of(&ctx, &input.symbol, input.timeframe, 500).await?;
    let config = RegimeConfig::default();
    let need = config.min_bars().max(3 * swing_length);
    let what = format!("the regime's indicators and swing_length {swing_length}");
    if let Some(why) = short_history(&bars, need, &input.symbol, input.timeframe, &what) {
        return Ok(StrategyStyleOutput {
            symbol: input.symbol,
            timeframe: input.timeframe,
            time: last_time(&bars),
            style: Style::StandAside,
            bias: Bias::Neutral,
            reasons: vec![format!("stand aside: {why}")],
            regime: None,
            metrics: None,
            structure: None,
            warnings: vec![why],
        });
    }
    let r = regime::volatility_regime(&bars, &config).map_err(core_err)?;
    let t = regime::trend_state(&bars, swing_length).map_err(core_err)?;
    let s = regime::strategy_style(&r, &t);
    Ok(StrategyStyleOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        time: last_time(&bars),
        style: s.style,
        bias: s.bias,
        reasons: s.reasons,
        regime: Some(r.regime),
        metrics: Some(r.metrics),
        structure: Some(structure_out(input.timeframe, &bars, t)),
        warnings: Vec::new(),
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "recommend_strategy_style",
        "Strategy style",
        "Recommends `trend-follow`, `mean-revert`, `breakout` or `stand-aside` (with a long/short/neutral bias) from the volatility regime and the swing structure of one timeframe, with reasons that cite the measured numbers. A rule table, not a prediction: trending + directional structure -> trend-follow; compressed -> breakout; expanding + directional structure -> breakout; choppy with ADX < 20 -> mean-revert; otherwise stand-aside. With fewer bars on the terminal than the analysis needs: stand-aside, `regime` null, the reason in `warnings`.",
    )
    .build(handle)
}
