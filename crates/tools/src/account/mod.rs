//! Account tools: account state, positions, pending orders, history,
//! terminals. One file per tool; this module holds what several share (the
//! symbol filter, the history range, the position reads other modules use).

mod get_account_info;
mod get_deal_history;
mod get_order_history;
mod get_orders;
mod get_position;
mod get_positions;
mod list_terminals;

use schemars::JsonSchema;
use serde::Deserialize;
use tradeterm_core::Position;
use tradeterm_core::time::{DAY_MS, UnixMs, parse_iso};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::market::check_symbol;
use crate::{Tool, ToolContext, ToolError};

/// Longest history range one call may ask for: 366 days.
pub const MAX_HISTORY_DAYS: i64 = 366;

/// A history range `[from, to)` as the tools read it: one longer than
/// [`MAX_HISTORY_DAYS`] is cut to the days before `to`, and a `from` at or
/// after `to` is the (empty) last millisecond before `to` (JSON Schema
/// cannot say "before another field", so neither is an error).
pub(crate) fn history_range(from: UnixMs, to: UnixMs) -> (UnixMs, UnixMs) {
    let from = from.max(to.saturating_sub(MAX_HISTORY_DAYS * DAY_MS));
    (from.min(to - 1), to)
}

/// Input of `get_positions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolFilter {
    /// Only this symbol.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: Option<String>,
}

/// Input of the history tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeInput {
    /// Range start, ISO 8601 (inclusive). Default: 7 days before `to`. A range longer than 366 days is cut to the 366 days before `to`; a `from` at or after `to` is an empty range.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub from: Option<String>,
    /// Range end, ISO 8601 (exclusive). Default: now.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub to: Option<String>,
}

/// The range `[from, to)` of a history input: ISO parsing, defaults (the
/// last 7 days), at most [`MAX_HISTORY_DAYS`].
fn range(ctx: &ToolContext, input: &RangeInput) -> Result<(UnixMs, UnixMs), ToolError> {
    let parse = |field: &str, value: &Option<String>| {
        value
            .as_deref()
            .map(|text| {
                parse_iso(text).map_err(|_| ToolError::InvalidInput(format!("`{field}` must be an ISO 8601 time")))
            })
            .transpose()
    };
    let to = parse("to", &input.to)?.unwrap_or(ctx.now_ms);
    let from = parse("from", &input.from)?.unwrap_or(to - 7 * DAY_MS);
    Ok(history_range(from, to))
}

/// Open positions of the terminal (optionally one symbol).
pub(crate) async fn positions(ctx: &ToolContext, symbol: Option<String>) -> Result<Vec<Position>, ToolError> {
    if let Some(name) = &symbol {
        check_symbol(name)?;
    }
    match ctx.run(Command::Positions { symbol }).await? {
        CommandResult::Positions { positions } => Ok(positions),
        other => Err(unexpected("positions", &other)),
    }
}

/// One position by ticket, or `NotFound`.
pub(crate) async fn position(ctx: &ToolContext, ticket: u64) -> Result<Position, ToolError> {
    positions(ctx, None)
        .await?
        .into_iter()
        .find(|p| p.ticket == ticket)
        .ok_or_else(|| ToolError::NotFound(format!("no open position with ticket {ticket}")))
}

/// The tools of this module, in catalog order.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        get_account_info::tool(),
        get_positions::tool(),
        get_position::tool(),
        get_orders::tool(),
        get_deal_history::tool(),
        get_order_history::tool(),
        list_terminals::tool(),
    ]
}
