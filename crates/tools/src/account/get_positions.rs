//! `get_positions`: the open positions, optionally of one symbol.

use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_core::Position;

use super::{SymbolFilter, positions};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Open positions.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PositionsOutput {
    /// Positions.
    pub positions: Vec<Position>,
}

async fn handle(ctx: ToolContext, input: SymbolFilter) -> Result<PositionsOutput, ToolError> {
    Ok(PositionsOutput {
        positions: positions(&ctx, input.symbol).await?,
    })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_positions",
        title: "Open positions",
        description: "Open positions of the terminal, optionally of one symbol, with entry, SL/TP, current price, swap and floating profit.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
