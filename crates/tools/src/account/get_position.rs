//! `get_position`: one open position by ticket.

use schemars::JsonSchema;
use serde::Deserialize;
use tradeterm_core::Position;

use super::position;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Input of `get_position`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketInput {
    /// Position ticket.
    pub ticket: u64,
}

async fn handle(ctx: ToolContext, input: TicketInput) -> Result<Position, ToolError> {
    position(&ctx, input.ticket).await
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_position",
        title: "One position",
        description: "One open position by ticket.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
