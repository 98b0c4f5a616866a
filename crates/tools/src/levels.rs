//! Key levels tool: `get_key_levels`.
//!
//! Reads the symbol (for its digits), its latest quote (the reference price,
//! and the terminal's "now"), H1 bars from the start of the previous month
//! (the previous and current UTC day, ISO week and month, and the pivots),
//! and the closed bars of a chosen timeframe (support and resistance zones
//! from confirmed swings), then computes with
//! [`tradeterm_core::levels::key_levels`]. Formulas: `docs/levels.md`.

use futures_util::future::try_join;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::levels::{
    self, KeyLevelsConfig, KeyLevelsInput, LevelPeriod, PeriodLevels, PivotLevels, RoundNumbers, Zone, ZoneConfig,
    ZoneWidth,
};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Bar, Timeframe};

use crate::costs::core_err;
use crate::market::{check_symbol, fetch_bars};
use crate::patterns::{closed_bars, representable};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Default number of closed bars the zones are found in.
pub const DEFAULT_ZONE_BARS: u32 = 500;
/// Fewest zone bars.
pub const MIN_ZONE_BARS: u32 = 20;
/// Most zone bars.
pub const MAX_ZONE_BARS: u32 = 5_000;
/// Largest `round_count`.
pub const MAX_ROUND_COUNT: usize = 20;
/// Largest `max_zones`.
pub const MAX_ZONES: usize = 50;
/// Largest `min_touches` of a zone.
pub const MAX_MIN_TOUCHES: usize = 1_000;

/// Input of `get_key_levels`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyLevelsToolInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe of the bars the support/resistance zones are clustered from (default H1).
    #[serde(default)]
    pub timeframe: Option<Timeframe>,
    /// Closed bars of `timeframe` searched for swings (20-5000, default 500).
    #[serde(default)]
    #[schemars(range(min = MIN_ZONE_BARS, max = MAX_ZONE_BARS))]
    pub bars: Option<u32>,
    /// Period whose previous high/low/close gives the pivot points: `day` (default), `week` or `month` (UTC).
    #[serde(default)]
    pub pivot_period: Option<LevelPeriod>,
    /// Swing window in bars each side (1-500, default 5): a swing high is the highest high of that many bars before and after it, confirmed that many bars later.
    #[serde(default)]
    #[schemars(range(min = 1, max = tradeterm_core::levels::MAX_ZONE_SWING_LENGTH))]
    pub swing_length: Option<usize>,
    /// Zone width: `{"type":"atr","period":14,"multiple":0.5}` (default; `multiple` above 0, at most 100) or `{"type":"percent","percent":0.1}` (of the price, at most 10).
    #[serde(default)]
    pub zone_width: Option<ZoneWidth>,
    /// Fewest touches (swings) a zone needs (default 1).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_MIN_TOUCHES))]
    pub min_touches: Option<usize>,
    /// Most zones returned, nearest to the price first (1-50, default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_ZONES))]
    pub max_zones: Option<usize>,
    /// Round numbers each side of the price (0-20, default 2).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_ROUND_COUNT))]
    pub round_count: Option<usize>,
    /// Step of the "00" round numbers, price units (default `10^(3 − digits)`: 0.01 on EURUSD, 1 on USDJPY, 10 on XAUUSD).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub round_step: Option<f64>,
}

/// Support and resistance zones.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ZonesOut {
    /// Timeframe of the bars.
    pub timeframe: Timeframe,
    /// Closed bars searched.
    pub bars: usize,
    /// Zone width used, price units.
    pub width: f64,
    /// Confirmed swings found.
    pub swings: usize,
    /// Zones, nearest to the price first.
    pub zones: Vec<Zone>,
}

/// Output of `get_key_levels`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyLevelsOutput {
    /// Instrument.
    pub symbol: String,
    /// Reference price: the bid of the latest quote.
    pub price: f64,
    /// Time of the latest quote, ISO 8601 UTC: the "now" of the periods.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Decimal digits of the symbol's price.
    pub digits: u32,
    /// Previous and current UTC day, ISO week and month (from H1 bars).
    pub periods: Vec<PeriodLevels>,
    /// Period of the pivots.
    pub pivot_period: LevelPeriod,
    /// Pivot points of every method (classic, fibonacci, camarilla, woodie) from the previous `pivot_period`; empty when it has no bars.
    pub pivots: Vec<PivotLevels>,
    /// Support and resistance zones; null when they could not be computed (see `notes`).
    pub zones: Option<ZonesOut>,
    /// Round numbers near the price ("00" and "50" levels).
    pub round_numbers: RoundNumbers,
    /// What could not be computed and why.
    pub notes: Vec<String>,
}

fn config_of(input: &KeyLevelsToolInput) -> Result<KeyLevelsConfig, ToolError> {
    let defaults = KeyLevelsConfig::default();
    let zone_defaults = ZoneConfig::default();
    let max_zones = input.max_zones.unwrap_or(zone_defaults.max_zones);
    if !(1..=MAX_ZONES).contains(&max_zones) {
        return Err(ToolError::InvalidInput(format!(
            "`max_zones` must be between 1 and {MAX_ZONES}, got {max_zones}"
        )));
    }
    let round_count = input.round_count.unwrap_or(defaults.round_count);
    if !(1..=MAX_ROUND_COUNT).contains(&round_count) {
        return Err(ToolError::InvalidInput(format!(
            "`round_count` must be between 1 and {MAX_ROUND_COUNT}, got {round_count}"
        )));
    }
    if let Some(step) = input.round_step
        && !(step.is_finite() && step > 0.0)
    {
        return Err(ToolError::InvalidInput(format!(
            "`round_step` must be a finite number above 0, got {step}"
        )));
    }
    let min_touches = input.min_touches.unwrap_or(zone_defaults.min_touches);
    if !(1..=MAX_MIN_TOUCHES).contains(&min_touches) {
        return Err(ToolError::InvalidInput(format!(
            "`min_touches` must be between 1 and 1000, got {min_touches}"
        )));
    }
    Ok(KeyLevelsConfig {
        pivot_period: input.pivot_period.unwrap_or(defaults.pivot_period),
        zones: ZoneConfig {
            swing_length: input.swing_length.unwrap_or(zone_defaults.swing_length),
            width: input.zone_width.unwrap_or(zone_defaults.width),
            min_touches,
            max_zones,
        },
        round_count,
        round_step: input.round_step,
    })
}

/// H1 bars from the start of the previous month to `now` (inclusive).
async fn period_bars(ctx: &ToolContext, symbol: &str, now: UnixMs) -> Result<Vec<Bar>, ToolError> {
    let this_month = Timeframe::MN1.bar_open(now);
    let from = Timeframe::MN1.bar_open(this_month - 1);
    fetch_bars(
        ctx,
        symbol,
        Timeframe::H1,
        None,
        Some(from),
        Some(now.saturating_add(1)),
    )
    .await
}

async fn get_key_levels(ctx: ToolContext, input: KeyLevelsToolInput) -> Result<KeyLevelsOutput, ToolError> {
    check_symbol(&input.symbol)?;
    let config = config_of(&input)?;
    let timeframe = input.timeframe.unwrap_or(Timeframe::H1);
    let count = input.bars.unwrap_or(DEFAULT_ZONE_BARS);
    if !(MIN_ZONE_BARS..=MAX_ZONE_BARS).contains(&count) {
        return Err(ToolError::InvalidInput(format!(
            "`bars` must be between {MIN_ZONE_BARS} and {MAX_ZONE_BARS}, got {count}"
        )));
    }
    let (spec, tick) = try_join(ctx.spec(&input.symbol), ctx.tick(&input.symbol)).await?;
    let now = tick.time;
    if !representable(now) {
        return Err(ToolError::Dispatch(format!(
            "the terminal's data is unusable: the quote time {now} is not a representable time"
        )));
    }
    let (periods_src, (zone_bars, _)) = try_join(
        period_bars(&ctx, &input.symbol, now),
        closed_bars(&ctx, &input.symbol, timeframe, count, Some(now)),
    )
    .await?;
    // The period bars must be time-ordered; a bar after the quote is ignored by core.
    let key = levels::key_levels(&KeyLevelsInput {
        period_bars: &periods_src,
        zone_bars: &zone_bars,
        price: tick.bid,
        digits: spec.digits,
        now: now.saturating_add(1),
        config,
    })
    .map_err(core_err)?;
    Ok(KeyLevelsOutput {
        symbol: spec.name.clone(),
        price: key.price,
        time: now,
        digits: spec.digits,
        periods: key.periods,
        pivot_period: config.pivot_period,
        pivots: key.pivots,
        zones: key.zones.map(|z| ZonesOut {
            timeframe,
            bars: zone_bars.len(),
            width: z.width,
            swings: z.swings,
            zones: z.zones,
        }),
        round_numbers: key.round_numbers,
        notes: key.notes,
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_key_levels",
            title: "Key levels",
            description: "Key price levels of a symbol around its current bid: pivot points (classic, Fibonacci, Camarilla, Woodie) from the previous UTC day, week or month; the previous and current day, week and month high, low, open and close; support and resistance zones clustered from confirmed swing highs and lows of the closed bars (width 0.5 × ATR(14) by default), with touch counts, first and last touch and distance to the price, nearest first; and round numbers (\"00\" and \"50\" levels) near the price. A part that cannot be computed (too few bars) is left out with a note.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_key_levels),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(v: serde_json::Value) -> KeyLevelsToolInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn settings_are_checked_before_anything_is_fetched() {
        let ok = config_of(&input(serde_json::json!({ "symbol": "EURUSD" }))).unwrap();
        assert_eq!(ok, KeyLevelsConfig::default());
        for (bad, needle) in [
            (serde_json::json!({ "symbol": "X", "max_zones": 0 }), "max_zones"),
            (serde_json::json!({ "symbol": "X", "round_count": 99 }), "round_count"),
            (serde_json::json!({ "symbol": "X", "round_step": -1.0 }), "round_step"),
            (serde_json::json!({ "symbol": "X", "min_touches": 0 }), "min_touches"),
        ] {
            let e = config_of(&input(bad)).unwrap_err();
            assert_eq!(e.code(), "VALIDATION_ERROR");
            assert!(e.to_string().contains(needle), "{e}");
        }
        let t = crate::find("get_key_levels").unwrap();
        assert_eq!(t.capability, Capability::Analytics);
    }
}
