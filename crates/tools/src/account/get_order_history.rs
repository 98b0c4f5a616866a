//! `get_order_history`: the finished orders of a range.

use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_core::account::OrderType;
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_protocol::agent::{HistoryOrder, OrderState};
use tradeterm_protocol::{Command, CommandResult};

use super::{RangeInput, range};
use crate::context::unexpected;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// A finished order, with ISO times.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryOrderOut {
    /// Order ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Order type.
    pub order_type: OrderType,
    /// Volume.
    pub volume: f64,
    /// Price.
    pub price: f64,
    /// Final state.
    pub state: OrderState,
    /// Placement time, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time_setup: UnixMs,
    /// Completion time, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time_done: UnixMs,
    /// Position opened or closed.
    pub position: u64,
    /// Comment.
    pub comment: String,
    /// Magic number.
    pub magic: u64,
}

impl From<HistoryOrder> for HistoryOrderOut {
    fn from(order: HistoryOrder) -> Self {
        Self {
            ticket: order.ticket,
            symbol: order.symbol,
            order_type: order.order_type,
            volume: order.volume,
            price: order.price,
            state: order.state,
            time_setup: order.time_setup,
            time_done: order.time_done,
            position: order.position,
            comment: order.comment,
            magic: order.magic,
        }
    }
}

/// Order history.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HistoryOrdersOutput {
    /// Range start, ISO 8601.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Range end, ISO 8601.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Orders, oldest first.
    pub orders: Vec<HistoryOrderOut>,
}

async fn handle(ctx: ToolContext, input: RangeInput) -> Result<HistoryOrdersOutput, ToolError> {
    let (from, to) = range(&ctx, &input)?;
    match ctx.run(Command::HistoryOrders { from, to }).await? {
        CommandResult::HistoryOrders { orders } => Ok(HistoryOrdersOutput {
            from,
            to,
            orders: orders.into_iter().map(HistoryOrderOut::from).collect(),
        }),
        other => Err(unexpected("history_orders", &other)),
    }
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_order_history",
        title: "Order history",
        description: "Finished orders (filled, cancelled, rejected, expired) in [`from`, `to`) (default: the last 7 days; at most 366 days).",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
