//! Candlestick pattern tool: `detect_patterns`.
//!
//! Fetches the symbol's bars, leaves out the still-forming last bar (a bar
//! whose period contains the time of the terminal's latest quote, read
//! before the bars), and scans the closed bars with
//! [`tradeterm_core::patterns::scan`], whose output equals TA-Lib's `CDL*`
//! functions with their defaults. Patterns and formulas: `docs/patterns.md`.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::patterns::{self, Direction, Pattern};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Bar, Timeframe};

use crate::costs::core_err;
use crate::market::{MAX_BARS, check_symbol, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Default number of most recent closed bars searched for completed patterns.
pub const DEFAULT_LOOKBACK: u32 = 50;
/// Largest `lookback`.
pub const MAX_LOOKBACK: u32 = 5_000;
/// Closed bars scanned before the lookback window, so that TA-Lib's averages
/// (at most 13 bars of lookback) are warm at the window's first bar.
pub const WARMUP_BARS: u32 = 20;

/// Whether `t` is a time the calendar arithmetic of bar periods can handle
/// (a terminal could report anything).
pub(crate) fn representable(t: UnixMs) -> bool {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(t).is_some()
}

/// The last `count` closed bars of `symbol`: fetches one bar more and leaves
/// out the last one when it is still forming, i.e. when its period contains
/// the time of the terminal's latest quote (`quote_time`, read before the
/// bars; read here when `None`; without a quote the last bar is dropped).
/// Returns the bars, oldest first, and the open time of the bar left out.
pub(crate) async fn closed_bars(
    ctx: &ToolContext,
    symbol: &str,
    timeframe: Timeframe,
    count: u32,
    quote_time: Option<UnixMs>,
) -> Result<(Vec<Bar>, Option<UnixMs>), ToolError> {
    let quote_time = match quote_time {
        Some(t) => Some(t),
        None => ctx.tick(symbol).await.ok().map(|t| t.time),
    }
    .filter(|t| representable(*t));
    let fetch = count.saturating_add(1).min(MAX_BARS);
    let mut bars = fetch_bars(ctx, symbol, timeframe, Some(fetch), None, None).await?;
    let forming = match (bars.last(), quote_time) {
        (Some(last), Some(t)) => timeframe.bar_open(t) <= last.time,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let skipped = if forming { bars.pop().map(|b| b.time) } else { None };
    if bars.len() > count as usize {
        bars.drain(..bars.len() - count as usize);
    }
    Ok((bars, skipped))
}

/// Schema of `patterns`: the names [`Pattern::from_str`] reads (snake case
/// or TA-Lib), 1 to twice the number of patterns, or null.
fn pattern_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<String> = Pattern::ALL
        .iter()
        .flat_map(|p| [p.name().to_owned(), p.talib_name().to_owned()])
        .collect();
    schemars::json_schema!({
        "type": ["array", "null"],
        "items": { "type": "string", "enum": names },
        "minItems": 1,
        "maxItems": Pattern::ALL.len() * 2,
    })
}

/// Input of `detect_patterns`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetectPatternsInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe of the bars: M1, M5, M15, M30, H1, H4, D1, W1 or MN1 (default H1).
    #[serde(default)]
    pub timeframe: Option<Timeframe>,
    /// Patterns to look for (default: all 61 of TA-Lib's CDL* functions), by snake-case name (`engulfing`, `three_inside`, `hikkake`, ...) or TA-Lib name (`CDLENGULFING`).
    #[serde(default)]
    #[schemars(schema_with = "pattern_names")]
    pub patterns: Option<Vec<String>>,
    /// Number of most recent closed bars in which completed patterns are reported (1-5000, default 50). 20 earlier bars are scanned as warm-up for TA-Lib's candle averages.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_LOOKBACK))]
    pub lookback: Option<u32>,
}

/// One pattern completing at one closed bar.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PatternHitOut {
    /// Open time of the bar where the pattern completes (its last candle), ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// The pattern (snake-case name).
    pub pattern: Pattern,
    /// The TA-Lib function it equals, e.g. `CDLENGULFING`.
    pub talib_name: &'static str,
    /// `bullish`, `bearish`, or `neutral` for the doji family (no direction of its own).
    pub direction: Direction,
    /// TA-Lib's value: +100 bullish, -100 bearish, ±80 for the weaker engulfing/harami forms, ±200 for a confirmed (modified) hikkake, +100 for the neutral ones (doji family, rickshaw man, takuri).
    pub value: i32,
    /// Candles that make up the pattern (1-3), ending at `time`.
    pub candles: usize,
    /// Open of the completing bar.
    pub open: f64,
    /// High of the completing bar.
    pub high: f64,
    /// Low of the completing bar.
    pub low: f64,
    /// Close of the completing bar.
    pub close: f64,
}

/// Output of `detect_patterns`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DetectPatternsOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Patterns looked for.
    pub patterns: Vec<Pattern>,
    /// Closed bars in the lookback window (fewer than asked when the terminal has fewer).
    pub lookback: usize,
    /// Closed bars scanned, warm-up included.
    pub bars_scanned: usize,
    /// Open time of the first bar of the lookback window, ISO 8601 UTC; null without bars.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub from: Option<UnixMs>,
    /// Open time of the last closed bar, ISO 8601 UTC; null without bars.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub to: Option<UnixMs>,
    /// Open time of the still-forming bar that was left out, ISO 8601 UTC; null when the last bar had closed.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub forming_bar_skipped: Option<UnixMs>,
    /// Hits in the lookback window, oldest first (bars in time order, then the order of the pattern list above).
    pub hits: Vec<PatternHitOut>,
    /// Bullish hits.
    pub bullish: usize,
    /// Bearish hits.
    pub bearish: usize,
    /// Neutral (doji-family) hits.
    pub neutral: usize,
    /// Hits at the last closed bar: what just completed.
    pub latest_bar_hits: usize,
}

fn parse_patterns(names: Option<&[String]>) -> Result<Vec<Pattern>, ToolError> {
    let Some(names) = names else {
        return Ok(Pattern::ALL.to_vec());
    };
    if names.is_empty() {
        return Err(ToolError::InvalidInput(
            "`patterns` must name at least one pattern (omit it for all)".into(),
        ));
    }
    if names.len() > Pattern::ALL.len() * 2 {
        return Err(ToolError::InvalidInput(format!(
            "`patterns` lists {} names; there are {} patterns",
            names.len(),
            Pattern::ALL.len()
        )));
    }
    let mut wanted = BTreeSet::new();
    for name in names {
        let pattern: Pattern = name
            .parse()
            .map_err(|e: tradeterm_core::CoreError| ToolError::InvalidInput(format!("`patterns`: {e}")))?;
        wanted.insert(pattern.name());
    }
    Ok(Pattern::ALL
        .into_iter()
        .filter(|pattern| wanted.contains(pattern.name()))
        .collect())
}

async fn detect_patterns(ctx: ToolContext, input: DetectPatternsInput) -> Result<DetectPatternsOutput, ToolError> {
    check_symbol(&input.symbol)?;
    let timeframe = input.timeframe.unwrap_or(Timeframe::H1);
    let wanted = parse_patterns(input.patterns.as_deref())?;
    let lookback = input.lookback.unwrap_or(DEFAULT_LOOKBACK);
    if !(1..=MAX_LOOKBACK).contains(&lookback) {
        return Err(ToolError::InvalidInput(format!(
            "`lookback` must be between 1 and {MAX_LOOKBACK}, got {lookback}"
        )));
    }
    let (bars, skipped) = closed_bars(&ctx, &input.symbol, timeframe, lookback + WARMUP_BARS, None).await?;
    let window_start = bars.len().saturating_sub(lookback as usize);
    let hits = if bars.is_empty() {
        Vec::new()
    } else {
        patterns::scan(&bars).map_err(core_err)?
    };
    let last_index = bars.len().checked_sub(1);
    let mut out = DetectPatternsOutput {
        symbol: input.symbol,
        timeframe,
        patterns: wanted.clone(),
        lookback: bars.len() - window_start,
        bars_scanned: bars.len(),
        from: bars.get(window_start).map(|b| b.time),
        to: bars.last().map(|b| b.time),
        forming_bar_skipped: skipped,
        hits: Vec::new(),
        bullish: 0,
        bearish: 0,
        neutral: 0,
        latest_bar_hits: 0,
    };
    for hit in hits
        .into_iter()
        .filter(|hit| hit.index >= window_start && wanted.contains(&hit.pattern))
    {
        let Some(bar) = bars.get(hit.index) else { continue };
        match hit.direction {
            Direction::Bullish => out.bullish += 1,
            Direction::Bearish => out.bearish += 1,
            Direction::Neutral => out.neutral += 1,
        }
        if Some(hit.index) == last_index {
            out.latest_bar_hits += 1;
        }
        out.hits.push(PatternHitOut {
            time: hit.time,
            pattern: hit.pattern,
            talib_name: hit.pattern.talib_name(),
            direction: hit.direction,
            value: hit.value,
            candles: hit.pattern.candles(),
            open: bar.open,
            high: bar.high,
            low: bar.low,
            close: bar.close,
        });
    }
    Ok(out)
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "detect_patterns",
            title: "Candlestick patterns",
            description: "Candlestick patterns completed on the closed bars of a symbol (the still-forming bar is left out): all 61 of TA-Lib's CDL* functions (engulfing, hammer, the doji family, morning/evening star, harami, three inside/outside, hikkake, marubozu, ...; the names are in the `patterns` input). Detection equals TA-Lib with its default penetration and candle settings (value +100 bullish, -100 bearish, ±80 weaker engulfing/harami, ±200 confirmed hikkake, neutral ones +100). Choose the patterns (default all) and the lookback in closed bars (default 50); hits are listed with their bar time (ISO 8601 UTC). Patterns ignore the trend: judging the context is up to the caller.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(detect_patterns),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_names_parse_in_catalog_order_and_refuse_unknown_ones() {
        let all = parse_patterns(None).unwrap();
        assert_eq!(all.len(), 61);
        let some = parse_patterns(Some(&["CDLHAMMER".into(), "engulfing".into(), "hammer".into()])).unwrap();
        assert_eq!(some, vec![Pattern::Engulfing, Pattern::Hammer]);
        let e = parse_patterns(Some(&["hammerhead".into()])).unwrap_err();
        assert_eq!(e.code(), "VALIDATION_ERROR");
        assert!(e.to_string().contains("unknown pattern"), "{e}");
        assert_eq!(parse_patterns(Some(&[])).unwrap_err().code(), "VALIDATION_ERROR");
    }

    #[test]
    fn detect_patterns_is_in_the_catalog() {
        let t = crate::find("detect_patterns").unwrap();
        assert_eq!(t.capability, Capability::Analytics);
        assert!(t.annotations.read_only);
        assert_eq!(t.input_schema["required"], serde_json::json!(["symbol"]));
    }
}
