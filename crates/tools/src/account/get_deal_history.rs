//! `get_deal_history`: the executed deals of a range.

use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_core::Deal;
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_protocol::{Command, CommandResult};

use super::{RangeInput, range};
use crate::context::unexpected;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Deal history.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DealsOutput {
    /// Range start, ISO 8601.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Range end, ISO 8601.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Deals, oldest first.
    pub deals: Vec<Deal>,
}

async fn handle(ctx: ToolContext, input: RangeInput) -> Result<DealsOutput, ToolError> {
    let (from, to) = range(&ctx, &input)?;
    match ctx.run(Command::HistoryDeals { from, to }).await? {
        CommandResult::Deals { deals } => Ok(DealsOutput { from, to, deals }),
        other => Err(unexpected("history_deals", &other)),
    }
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_deal_history",
        title: "Deal history",
        description: "Executed deals in [`from`, `to`) (default: the last 7 days; at most 366 days), oldest first.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
