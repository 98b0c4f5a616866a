//! Market-structure tools computed without look-ahead from terminal bars.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::structure::{self, StructureConfig, StructureEvent};
use tradeterm_core::time::{UnixMs, iso};

use crate::market::{MAX_BARS, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Fewest bars `detect_structure` accepts.
const MIN_STRUCTURE_BARS: u32 = 50;
/// Input of `detect_structure`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetectStructureInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Bars of history to analyse (50-10000, default 1000).
    #[serde(default)]
    #[schemars(range(min = MIN_STRUCTURE_BARS, max = MAX_BARS))]
    pub bars: Option<u32>,
    /// Detection settings (swing length, which families, their parameters). Defaults: swing length 50 and every family.
    #[serde(default, deserialize_with = "crate::schema::optional_object")]
    pub config: Option<StructureConfig>,
    /// Return only the events of the last N bars (default: all).
    #[serde(default)]
    pub last_bars: Option<u32>,
}

/// One event with its times.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TimedEvent {
    /// Open time of the bar the event refers to (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Open time of the bar at whose close the event became known: nothing is
    /// ever reported before this bar closed, and reported events never change.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub confirmed_time: UnixMs,
    /// The event (`type` names it: `swing`, `fair_value_gap`, `order_block`, `liquidity_pool`, ...).
    pub event: StructureEvent,
}

/// Output of `detect_structure`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DetectStructureOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars analysed.
    pub bars: usize,
    /// Open time of the first bar analysed.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Open time of the last bar analysed.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Events in the order they became known.
    pub events: Vec<TimedEvent>,
}

async fn detect_structure(ctx: ToolContext, input: DetectStructureInput) -> Result<DetectStructureOutput, ToolError> {
    let bar_count = input.bars.unwrap_or(1000);
    if !(MIN_STRUCTURE_BARS..=MAX_BARS).contains(&bar_count) {
        return Err(ToolError::InvalidInput(format!(
            "`bars` must be between 50 and {MAX_BARS}"
        )));
    }
    let config = input.config.unwrap_or_default();
    config.validate().map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    let bars = fetch_bars(&ctx, &input.symbol, input.timeframe, Some(bar_count), None, None).await?;
    let (Some(first), Some(last)) = (bars.first(), bars.last()) else {
        return Err(ToolError::NotFound(format!(
            "no bars for {} {}",
            input.symbol, input.timeframe
        )));
    };
    if bars.len() < config.min_bars() {
        // The terminal has fewer bars than the swing window needs: missing data, not a bad request.
        return Err(ToolError::NotFound(format!(
            "{} {} has {} bars; swing_length {} needs at least {}",
            input.symbol,
            input.timeframe,
            bars.len(),
            config.swing_length,
            config.min_bars()
        )));
    }
    let events = structure::detect(&bars, &config).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    let since = input
        .last_bars
        .map(|k| bars.len().saturating_sub(k as usize))
        .unwrap_or(0);
    // Event indices always lie in the series they were detected on.
    let time_of = |i: usize| bars.get(i).map(|b| b.time);
    Ok(DetectStructureOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        bars: bars.len(),
        from: first.time,
        to: last.time,
        events: events
            .into_iter()
            .filter(|e| e.confirmed_at() >= since)
            .filter_map(|e| {
                Some(TimedEvent {
                    time: time_of(e.index())?,
                    confirmed_time: time_of(e.confirmed_at())?,
                    event: e,
                })
            })
            .collect(),
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "detect_structure",
            title: "Market structure (SMC)",
            description: "Detects swing highs/lows, fair value gaps (with mitigation), order blocks, liquidity pools and sweeps, break of structure (BOS) and change of character (CHoCH) on the terminal's bars. No look-ahead: every event carries the bar at which it became known and is never revised afterwards.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(detect_structure),
    ]
}
