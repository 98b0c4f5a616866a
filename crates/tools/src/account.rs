//! Account tools: account state, positions, pending orders, history, terminals.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::account::OrderType;
use tradeterm_core::time::{UnixMs, iso, parse_iso};
use tradeterm_core::{AccountInfo, Deal, PendingOrder, Position};
use tradeterm_protocol::agent::{HistoryOrder, OrderState};
use tradeterm_protocol::{Command, CommandResult, TerminalStatus};

use crate::context::unexpected;
use crate::market::{NoInput, check_symbol};
use crate::{Annotations, Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Longest history range one call may ask for: 366 days.
pub const MAX_HISTORY_DAYS: i64 = 366;

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
    fn from(o: HistoryOrder) -> Self {
        Self {
            ticket: o.ticket,
            symbol: o.symbol,
            order_type: o.order_type,
            volume: o.volume,
            price: o.price,
            state: o.state,
            time_setup: o.time_setup,
            time_done: o.time_done,
            position: o.position,
            comment: o.comment,
            magic: o.magic,
        }
    }
}

/// Input of `get_positions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolFilter {
    /// Only this symbol.
    #[serde(default)]
    pub symbol: Option<String>,
}

/// Open positions.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PositionsOutput {
    /// Positions.
    pub positions: Vec<Position>,
}

/// Input of `get_position`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketInput {
    /// Position ticket.
    pub ticket: u64,
}

/// Pending orders.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrdersOutput {
    /// Orders.
    pub orders: Vec<PendingOrder>,
}

/// Input of the history tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeInput {
    /// Range start, ISO 8601 (inclusive). Default: 7 days before `to`.
    #[serde(default)]
    pub from: Option<String>,
    /// Range end, ISO 8601 (exclusive). Default: now.
    #[serde(default)]
    pub to: Option<String>,
}

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

/// Terminals of the license.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TerminalsOutput {
    /// Terminals with their status.
    pub terminals: Vec<TerminalStatus>,
}

fn range(ctx: &ToolContext, input: &RangeInput) -> Result<(i64, i64), ToolError> {
    let parse = |field: &str, v: &Option<String>| {
        v.as_deref()
            .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput(format!("`{field}` must be an ISO 8601 time"))))
            .transpose()
    };
    let to = parse("to", &input.to)?.unwrap_or(ctx.now_ms);
    let from = parse("from", &input.from)?.unwrap_or(to - 7 * tradeterm_core::time::DAY_MS);
    if from >= to {
        return Err(ToolError::InvalidInput("`from` must be before `to`".into()));
    }
    if to - from > MAX_HISTORY_DAYS * tradeterm_core::time::DAY_MS {
        return Err(ToolError::InvalidInput(format!(
            "the range may span at most {MAX_HISTORY_DAYS} days"
        )));
    }
    Ok((from, to))
}

/// Open positions of the terminal (optionally one symbol).
pub(crate) async fn positions(ctx: &ToolContext, symbol: Option<String>) -> Result<Vec<Position>, ToolError> {
    if let Some(s) = &symbol {
        check_symbol(s)?;
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

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_account_info",
            title: "Account information",
            description: "Account state: login, server, currency, leverage, trade mode (demo/real/contest), balance, equity, margin, free margin, margin level and floating profit.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, _: NoInput| async move {
            let a: AccountInfo = ctx.account().await?;
            Ok(a)
        }),
        ToolSpec {
            name: "get_positions",
            title: "Open positions",
            description: "Open positions of the terminal, optionally of one symbol, with entry, SL/TP, current price, swap and floating profit.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: SymbolFilter| async move {
            let list = positions(&ctx, input.symbol).await?;
            Ok(PositionsOutput { positions: list })
        }),
        ToolSpec {
            name: "get_position",
            title: "One position",
            description: "One open position by ticket.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: TicketInput| async move {
            position(&ctx, input.ticket).await
        }),
        ToolSpec {
            name: "get_orders",
            title: "Pending orders",
            description: "Pending (not yet triggered) limit and stop orders, optionally of one symbol.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: SymbolFilter| async move {
            if let Some(s) = &input.symbol {
                check_symbol(s)?;
            }
            match ctx.run(Command::Orders { symbol: input.symbol }).await? {
                CommandResult::Orders { orders } => {
                    Ok(OrdersOutput { orders })
                }
                other => Err(unexpected("orders", &other)),
            }
        }),
        ToolSpec {
            name: "get_deal_history",
            title: "Deal history",
            description: "Executed deals in [`from`, `to`) (default: the last 7 days; at most 366 days), oldest first.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: RangeInput| async move {
            let (from, to) = range(&ctx, &input)?;
            match ctx.run(Command::HistoryDeals { from, to }).await? {
                CommandResult::Deals { deals } => Ok(DealsOutput {
                    from,
                    to,
                    deals,
                }),
                other => Err(unexpected("history_deals", &other)),
            }
        }),
        ToolSpec {
            name: "get_order_history",
            title: "Order history",
            description: "Finished orders (filled, cancelled, rejected, expired) in [`from`, `to`) (default: the last 7 days; at most 366 days).",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: RangeInput| async move {
            let (from, to) = range(&ctx, &input)?;
            match ctx.run(Command::HistoryOrders { from, to }).await? {
                CommandResult::HistoryOrders { orders } => Ok(HistoryOrdersOutput {
                    from,
                    to,
                    orders: orders.into_iter().map(HistoryOrderOut::from).collect(),
                }),
                other => Err(unexpected("history_orders", &other)),
            }
        }),
        ToolSpec {
            name: "list_terminals",
            title: "Terminals",
            description: "The license's terminals with their status: connected, platform, account, trade mode, last seen and trading permissions. Use a terminal's `id` as `X-Terminal-Id`.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::License,
            annotations: Annotations { read_only: true, destructive: false, idempotent: true, open_world: false },
        }
        .build(|ctx: ToolContext, _: NoInput| async move {
            let terminals = ctx.services.dispatch.terminals(&ctx.license_id).await?;
            Ok(TerminalsOutput { terminals })
        }),
    ]
}
