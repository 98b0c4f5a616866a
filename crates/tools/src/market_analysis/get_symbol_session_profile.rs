//! `get_symbol_session_profile`: the typical range of each UTC hour.

use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_core::Timeframe;
use tradeterm_core::sessions;

use super::{SessionInput, core_err, days_arg, session_bars, spec};
use crate::{Tool, ToolContext, ToolError};

/// Output of `get_symbol_session_profile`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionProfileOutput {
    /// Instrument.
    pub symbol: String,
    /// Bars used (always H1).
    pub timeframe: Timeframe,
    /// Days analysed.
    pub days: usize,
    /// 24 entries, UTC hour 0 first: samples, mean and median range, activity relative to the average hour.
    pub hours: Vec<sessions::HourProfile>,
    /// The three UTC hours with the largest mean range, largest first.
    pub most_active_hours: Vec<u8>,
    /// The three UTC hours with the smallest mean range, smallest first.
    pub quietest_hours: Vec<u8>,
}

async fn handle(ctx: ToolContext, input: SessionInput) -> Result<SessionProfileOutput, ToolError> {
    let days = days_arg(input.days)?;
    let bars = session_bars(&ctx, &input.symbol, days).await?;
    let p = sessions::session_profile(&bars, days).map_err(core_err)?;
    Ok(SessionProfileOutput {
        symbol: input.symbol,
        timeframe: Timeframe::H1,
        days: p.days,
        hours: p.hours,
        most_active_hours: p.most_active_hours,
        quietest_hours: p.quietest_hours,
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "get_symbol_session_profile",
        "Session profile by hour",
        "Typical range of each UTC hour (mean and median of the hour's high-low over the last N days, from H1 bars), activity relative to the average hour, and the most active and quietest hours.",
    )
    .build(handle)
}
