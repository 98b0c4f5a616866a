//! `get_volatility_regime`: the volatility regime at the last bar, with the numbers behind it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::regime::{self, Regime, RegimeConfig, RegimeMetrics};
use tradeterm_core::time::{UnixMs, iso};

use super::{RegimeThresholds, bars_arg, bars_of, core_err, last_time, short_history, spec, thresholds};
use crate::{Tool, ToolContext, ToolError};

/// Fewest bars the tool accepts (`bars`).
const MIN_REGIME_BARS: u32 = 150;
/// Input of `get_volatility_regime`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VolatilityRegimeInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Bars of history to analyse (150-5000, default 300).
    #[serde(default)]
    #[schemars(range(min = MIN_REGIME_BARS, max = super::MAX_ANALYSIS_BARS))]
    pub bars: Option<u32>,
}

/// Output of `get_volatility_regime`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VolatilityRegimeOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars analysed.
    pub bars: usize,
    /// Open time of the last bar (ISO 8601 UTC): the regime is as of this bar's close.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// `compressed`, `expanding`, `trending` or `choppy`; `null` when the terminal has fewer bars than the indicators
    /// need (see `warnings`).
    pub regime: Option<Regime>,
    /// The rule that matched, with its numbers (or why no rule could be applied).
    pub rule: String,
    /// ATR(14) and its percentile, Bollinger(20, 2) bandwidth and its percentile, ADX(14) with ±DI, efficiency
    /// ratio(20); `null` with `regime`.
    pub metrics: Option<RegimeMetrics>,
    /// The thresholds of the rules.
    pub thresholds: RegimeThresholds,
    /// What limits the answer (the terminal's history shorter than the indicators' warm-up); empty otherwise.
    pub warnings: Vec<String>,
}

async fn handle(ctx: ToolContext, input: VolatilityRegimeInput) -> Result<VolatilityRegimeOutput, ToolError> {
    let n = bars_arg(input.bars, 300, MIN_REGIME_BARS)?;
    let bars = bars_of(&ctx, &input.symbol, input.timeframe, n).await?;
    let config = RegimeConfig::default();
    if let Some(why) = short_history(
        &bars,
        config.min_bars(),
        &input.symbol,
        input.timeframe,
        "the regime's indicators",
    ) {
        return Ok(VolatilityRegimeOutput {
            symbol: input.symbol,
            timeframe: input.timeframe,
            bars: bars.len(),
            time: last_time(&bars),
            regime: None,
            rule: "no rule applied: too few bars".into(),
            metrics: None,
            thresholds: thresholds(&config),
            warnings: vec![why],
        });
    }
    let r = regime::volatility_regime(&bars, &config).map_err(core_err)?;
    Ok(VolatilityRegimeOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        bars: bars.len(),
        time: last_time(&bars),
        regime: Some(r.regime),
        rule: r.rule,
        metrics: Some(r.metrics),
        thresholds: thresholds(&config),
        warnings: Vec::new(),
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "get_volatility_regime",
        "Volatility regime",
        "Classifies the market at the last bar as `compressed`, `expanding`, `trending` or `choppy`, with the numbers behind it: ATR(14) and its percentile over the last 100 values, Bollinger(20, 2) bandwidth and its percentile, ADX(14) with +DI/-DI, and the 20-bar efficiency ratio. Rules, first match wins: trending if ADX >= 25 and efficiency ratio >= 0.30; expanding if bandwidth percentile >= 80 or ATR rose >= 20% over 5 bars; compressed if bandwidth percentile <= 20; else choppy. A terminal with fewer bars than the indicators need answers `regime: null` with the reason in `warnings`.",
    )
    .build(handle)
}
