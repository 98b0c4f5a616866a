//! `list_terminals`: the license's terminals with their status.

use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_protocol::TerminalStatus;

use crate::market::NoInput;
use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Terminals of the license.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TerminalsOutput {
    /// Terminals with their status.
    pub terminals: Vec<TerminalStatus>,
}

async fn handle(ctx: ToolContext, _input: NoInput) -> Result<TerminalsOutput, ToolError> {
    let terminals = ctx.services.dispatch.terminals(&ctx.license_id).await?;
    Ok(TerminalsOutput { terminals })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "list_terminals",
        title: "Terminals",
        description: "The license's terminals with their status: connected, platform, account, trade mode, last seen and trading permissions. Use a terminal's `id` as `X-Terminal-Id`.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::License,
        annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: false },
    }
    .build(handle)
}
