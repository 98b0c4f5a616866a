//! `get_market_structure`: the trend state of 1 to 4 timeframes from the swing structure.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::regime;

use super::{MAX_TIMEFRAMES, TimeframeStructure, bars_arg, bars_of, spec, structure_out, swing_arg};
use crate::{Tool, ToolContext, ToolError};

/// Fewest bars the tool accepts (`bars`).
const MIN_STRUCTURE_BARS: u32 = 100;
/// Input of `get_market_structure`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketStructureInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// 1 to 4 distinct timeframes, e.g. `["H4", "H1", "M15"]`.
    #[schemars(length(min = 1, max = super::MAX_TIMEFRAMES), extend("uniqueItems" = true))]
    pub timeframes: Vec<Timeframe>,
    /// Swing window in bars on each side (1-100, default 10): a swing high is the highest high of
    /// `2 · swing_length` bars and is confirmed `swing_length` bars later.
    #[serde(default)]
    #[schemars(range(min = 1, max = super::MAX_SWING_LENGTH))]
    pub swing_length: Option<u32>,
    /// Bars of history per timeframe (100-5000, default 500).
    #[serde(default)]
    #[schemars(range(min = MIN_STRUCTURE_BARS, max = super::MAX_ANALYSIS_BARS))]
    pub bars: Option<u32>,
}

/// Output of `get_market_structure`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MarketStructureOutput {
    /// Instrument.
    pub symbol: String,
    /// Swing length used.
    pub swing_length: usize,
    /// One entry per requested timeframe, in the order given.
    pub timeframes: Vec<TimeframeStructure>,
}

async fn handle(ctx: ToolContext, input: MarketStructureInput) -> Result<MarketStructureOutput, ToolError> {
    if input.timeframes.is_empty() || input.timeframes.len() > MAX_TIMEFRAMES {
        return Err(ToolError::InvalidInput(format!(
            "`timeframes` must list 1 to {MAX_TIMEFRAMES} timeframes, got {}",
            input.timeframes.len()
        )));
    }
    let mut seen = BTreeSet::new();
    if let Some(dup) = input.timeframes.iter().find(|tf| !seen.insert(**tf)) {
        return Err(ToolError::InvalidInput(format!(
            "timeframe {dup} is listed twice in `timeframes`"
        )));
    }
    let swing_length = swing_arg(input.swing_length)?;
    // At least 3 × swing_length bars are read, whatever `bars` says
    // (swing_length ≤ 100, so at most 300).
    let bar_count =
        bars_arg(input.bars, 500, MIN_STRUCTURE_BARS)?.max(u32::try_from(3 * swing_length).unwrap_or(u32::MAX));
    let mut out = Vec::with_capacity(input.timeframes.len());
    for tf in &input.timeframes {
        let bars = bars_of(&ctx, &input.symbol, *tf, bar_count).await?;
        if bars.len() < 3 * swing_length {
            // The terminal has fewer bars than the swing window needs: missing data, not a bad request.
            return Err(ToolError::NotFound(format!(
                "{} {tf} has {} bars; swing_length {swing_length} needs at least {}",
                input.symbol,
                bars.len(),
                3 * swing_length
            )));
        }
        let trend =
            regime::trend_state(&bars, swing_length).map_err(|e| ToolError::InvalidInput(format!("{tf}: {e}")))?;
        out.push(structure_out(*tf, &bars, trend));
    }
    Ok(MarketStructureOutput {
        symbol: input.symbol,
        swing_length,
        timeframes: out,
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "get_market_structure",
        "Market structure by timeframe",
        "Trend state (`bullish`, `bearish` or `ranging`) of 1 to 4 timeframes from the last break of structure / change of character and the swing sequence (HH/HL vs LH/LL), with the last confirmed swing high and low and their times. Swings are confirmed `swing_length` bars after they form; nothing is inferred from unconfirmed bars.",
    )
    .build(handle)
}
