//! `get_fibonacci_levels`: retracements and extensions of the last confirmed swing leg.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::fibonacci::{self, FibLevel, LegDirection};
use tradeterm_core::regime::SwingPoint;
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Bar, Timeframe};

use super::{SwingOut, bars_arg, bars_of, last_time, spec, swing_arg, swing_out};
use crate::{Tool, ToolContext, ToolError};

/// Fewest bars the tool accepts (`bars`).
const MIN_FIBONACCI_BARS: u32 = 100;
/// Input of `get_fibonacci_levels`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FibonacciInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Swing window (1-100, default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = super::MAX_SWING_LENGTH))]
    pub swing_length: Option<u32>,
    /// Bars of history (100-5000, default 500).
    #[serde(default)]
    #[schemars(range(min = MIN_FIBONACCI_BARS, max = super::MAX_ANALYSIS_BARS))]
    pub bars: Option<u32>,
}

/// Output of `get_fibonacci_levels`. Without a confirmed leg (no swing high and swing low confirmed in the bars,
/// or fewer bars than 3 × swing_length on the terminal) the leg's fields are `null`, the levels empty, and
/// `warnings` says why: a result, not an error.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FibonacciOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars analysed.
    pub bars: usize,
    /// `up` (low then high: retracements below the high) or `down` (high then low: retracements above the low);
    /// `null` without a confirmed leg.
    pub direction: Option<LegDirection>,
    /// Swing high of the leg; `null` without a confirmed leg.
    pub swing_high: Option<SwingOut>,
    /// Swing low of the leg; `null` without a confirmed leg.
    pub swing_low: Option<SwingOut>,
    /// `high − low`; `null` without a confirmed leg.
    pub range: Option<f64>,
    /// Retracements 0.236, 0.382, 0.5, 0.618, 0.786 (empty without a confirmed leg).
    pub retracements: Vec<FibLevel>,
    /// Extensions 1.272, 1.618, 2.618 beyond the leg's end (empty without a confirmed leg).
    pub extensions: Vec<FibLevel>,
    /// Close of the last bar, to place price among the levels.
    pub last_close: f64,
    /// Open time of the last bar.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Why there is no leg (too few bars, no confirmed swing high/low pair); empty with a leg.
    pub warnings: Vec<String>,
}

/// The answer without a leg, saying why.
fn without_leg(input: FibonacciInput, bars: &[Bar], why: String) -> FibonacciOutput {
    FibonacciOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        bars: bars.len(),
        direction: None,
        swing_high: None,
        swing_low: None,
        range: None,
        retracements: Vec::new(),
        extensions: Vec::new(),
        last_close: bars.last().map(|b| b.close).unwrap_or_default(),
        time: last_time(bars),
        warnings: vec![why],
    }
}

async fn handle(ctx: ToolContext, input: FibonacciInput) -> Result<FibonacciOutput, ToolError> {
    let swing_length = swing_arg(input.swing_length)?;
    // At least 3 × swing_length bars are read, whatever `bars` says
    // (swing_length ≤ 100, so at most 300).
    let bar_count =
        bars_arg(input.bars, 500, MIN_FIBONACCI_BARS)?.max(u32::try_from(3 * swing_length).unwrap_or(u32::MAX));
    let bars = bars_of(&ctx, &input.symbol, input.timeframe, bar_count).await?;
    if bars.len() < 3 * swing_length {
        let why = format!(
            "the terminal has {} {} bars of {}; swing_length {swing_length} needs at least {} to confirm a swing",
            bars.len(),
            input.timeframe,
            input.symbol,
            3 * swing_length
        );
        return Ok(without_leg(input, &bars, why));
    }
    tradeterm_core::bars::validate_series(&bars)
        .map_err(|e| ToolError::Dispatch(format!("the terminal's bars: {e}")))?;
    let fib = match fibonacci::from_bars(&bars, swing_length) {
        Ok(fib) => fib,
        // Enough valid bars: what is left is "no confirmed swing high/low pair", a result.
        Err(e) => return Ok(without_leg(input, &bars, e.to_string())),
    };
    let swing = |p: &SwingPoint| {
        swing_out(p, &bars).ok_or_else(|| ToolError::Internal("a swing was confirmed outside the bars".into()))
    };
    Ok(FibonacciOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        bars: bars.len(),
        direction: Some(fib.direction),
        swing_high: Some(swing(&fib.high)?),
        swing_low: Some(swing(&fib.low)?),
        range: Some(fib.range),
        retracements: fib.retracements,
        extensions: fib.extensions,
        last_close: bars.last().map(|b| b.close).unwrap_or_default(),
        time: last_time(&bars),
        warnings: Vec::new(),
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "get_fibonacci_levels",
        "Fibonacci levels",
        "Fibonacci retracements (0.236, 0.382, 0.5, 0.618, 0.786) and extensions (1.272, 1.618, 2.618) of the last confirmed swing leg (the last swing high and swing low), with the leg's direction and the swings' prices and times. Without a confirmed leg (too few bars, no swing high/low pair) the leg is `null`, the levels empty, and `warnings` says why.",
    )
    .build(handle)
}
