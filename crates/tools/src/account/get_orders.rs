//! `get_orders`: the pending orders, optionally of one symbol.

use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_core::PendingOrder;
use tradeterm_protocol::{Command, CommandResult};

use super::SymbolFilter;
use crate::context::unexpected;
use crate::market::check_symbol;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Pending orders.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrdersOutput {
    /// Orders.
    pub orders: Vec<PendingOrder>,
}

async fn handle(ctx: ToolContext, input: SymbolFilter) -> Result<OrdersOutput, ToolError> {
    if let Some(symbol) = &input.symbol {
        check_symbol(symbol)?;
    }
    match ctx.run(Command::Orders { symbol: input.symbol }).await? {
        CommandResult::Orders { orders } => Ok(OrdersOutput { orders }),
        other => Err(unexpected("orders", &other)),
    }
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_orders",
        title: "Pending orders",
        description: "Pending (not yet triggered) limit and stop orders, optionally of one symbol.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
