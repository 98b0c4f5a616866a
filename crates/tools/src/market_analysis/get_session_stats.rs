//! `get_session_stats`: statistics of the Asia, London and New York sessions.

use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_core::Timeframe;
use tradeterm_core::sessions::{self, SessionSummary};
use tradeterm_core::time::{UnixMs, iso};

use super::{SessionInput, core_err, days_arg, session_bars, spec};
use crate::{Tool, ToolContext, ToolError};

/// Output of `get_session_stats`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionStatsOutput {
    /// Instrument.
    pub symbol: String,
    /// Bars used (always H1; session highs and lows are timed to the hour).
    pub timeframe: Timeframe,
    /// Days analysed.
    pub days: usize,
    /// First day analysed (midnight UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Last day analysed (midnight UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Mean daily range.
    pub average_daily_range: f64,
    /// Asia 00:00-08:00, London 07:00-16:00, New York 12:00-21:00 UTC (fixed, no daylight-saving shift).
    pub sessions: Vec<SessionSummary>,
}

async fn handle(ctx: ToolContext, input: SessionInput) -> Result<SessionStatsOutput, ToolError> {
    let days = days_arg(input.days)?;
    let bars = session_bars(&ctx, &input.symbol, days).await?;
    let s = sessions::session_stats(&bars, days).map_err(core_err)?;
    Ok(SessionStatsOutput {
        symbol: input.symbol,
        timeframe: Timeframe::H1,
        days: s.days,
        from: s.from_day,
        to: s.to_day,
        average_daily_range: s.average_daily_range,
        sessions: s.sessions,
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "get_session_stats",
        "Session statistics",
        "Statistics of the Asia (00:00-08:00 UTC), London (07:00-16:00 UTC) and New York (12:00-21:00 UTC) sessions over the last N days with quotes, from H1 bars: average and median range, share of the daily range, the hours at which session highs and lows are usually set, and the latest session's high and low with times. Hours are fixed UTC, without daylight-saving shifts.",
    )
    .build(handle)
}
