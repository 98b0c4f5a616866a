//! `cancel_order`: deletes a pending order, a dry run unless `dry_run` is `false`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult};

use super::{idempotent, spec};
use crate::context::unexpected;
use crate::{Tool, ToolContext, ToolError};

/// Input of `cancel_order`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelOrderInput {
    /// Pending order ticket.
    pub ticket: u64,
    /// `true` (the default) checks only; `false` cancels for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Outcome of `cancel_order`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CancelOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the order was cancelled.
    pub executed: bool,
    /// Order ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// The terminal's trade result (live only).
    pub trade: Option<TradeResult>,
}

async fn handle(ctx: ToolContext, input: CancelOrderInput) -> Result<CancelOutcome, ToolError> {
    let live = ctx.is_live(input.dry_run);
    let orders = match ctx.run(Command::Orders { symbol: None }).await? {
        CommandResult::Orders { orders } => orders,
        other => return Err(unexpected("orders", &other)),
    };
    let order = orders
        .into_iter()
        .find(|o| o.ticket == input.ticket)
        .ok_or_else(|| ToolError::NotFound(format!("no pending order with ticket {}", input.ticket)))?;
    let mut outcome = CancelOutcome {
        dry_run: !live,
        executed: false,
        ticket: order.ticket,
        symbol: order.symbol,
        trade: None,
    };
    if !live {
        return Ok(outcome);
    }
    ctx.ensure_live_allowed().await?;
    idempotent(&ctx, "cancel_order", &input, async {
        match ctx.run(Command::CancelOrder { ticket: input.ticket }).await? {
            CommandResult::Trade(trade) => {
                outcome.executed = true;
                outcome.trade = Some(trade);
                Ok(outcome)
            }
            other => Err(unexpected("cancel_order", &other)),
        }
    })
    .await
}

pub(super) fn tool() -> Tool {
    spec(
        "cancel_order",
        "Cancel a pending order",
        "Deletes a pending order. DRY RUN BY DEFAULT: checks the order exists; `\"dry_run\": false` cancels for real.",
    )
    .build(handle)
}
