//! `reverse_position`: closes a position and opens the opposite one, a dry run unless `dry_run` is `false`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Side;
use tradeterm_core::account::OrderType;
use tradeterm_core::trading::{self, OrderParams, validate_order};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult};

use super::{fetch_market, idempotent, rate_to_account, spec};
use crate::account::position;
use crate::context::unexpected;
use crate::{Tool, ToolContext, ToolError};

/// Input of `reverse_position`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReversePositionInput {
    /// Position ticket.
    pub ticket: u64,
    /// `true` (the default) reports the would-be outcome only; `false` reverses for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Outcome of `reverse_position`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReverseOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the reversal was executed.
    pub executed: bool,
    /// Ticket of the position closed.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Side of the closed position; the new one is the opposite.
    pub side_closed: Side,
    /// Lots closed and reopened.
    pub volume: f64,
    /// Would-be (or actual) close price.
    pub close_price: f64,
    /// Would-be (or actual) entry price of the new position.
    pub open_price: f64,
    /// Profit realised by the close, account currency.
    pub profit: Option<f64>,
    /// Margin the new position requires.
    pub margin_required: f64,
    /// Account currency.
    pub account_currency: String,
    /// Closing trade (live only).
    pub close_trade: Option<TradeResult>,
    /// Opening trade (live only).
    pub open_trade: Option<TradeResult>,
}

async fn handle(ctx: ToolContext, input: ReversePositionInput) -> Result<ReverseOutcome, ToolError> {
    let live = ctx.is_live(input.dry_run);
    let pos = position(&ctx, input.ticket).await?;
    let market = fetch_market(&ctx, &pos.symbol).await?;
    let new_type = match pos.side {
        Side::Buy => OrderType::Sell,
        Side::Sell => OrderType::Buy,
    };
    let params = OrderParams {
        order_type: new_type,
        volume: pos.volume,
        price: None,
        stop_limit_price: None,
        stop_loss: None,
        take_profit: None,
    };
    validate_order(&market.spec, &market.tick, &params, market.tick.time)?;
    let close_price = trading::close_price(pos.side, &market.tick);
    let open_price = trading::fill_price(new_type, &market.tick);
    let margin_rate = rate_to_account(&ctx, &market.spec.currency_margin, &market)
        .await
        .unwrap_or(f64::NAN);
    let margin = trading::margin_required(
        &market.spec,
        pos.volume,
        open_price,
        market.account.leverage,
        margin_rate,
    );
    let rate = rate_to_account(&ctx, &market.spec.currency_profit, &market).await;
    // Closing releases this position's margin, so the new one fits if it did.
    let mut outcome = ReverseOutcome {
        dry_run: !live,
        executed: false,
        ticket: pos.ticket,
        symbol: pos.symbol.clone(),
        side_closed: pos.side,
        volume: pos.volume,
        close_price,
        open_price,
        profit: rate.map(|r| trading::profit(&market.spec, pos.side, pos.volume, pos.open_price, close_price, r)),
        margin_required: if margin.is_finite() { margin } else { 0.0 },
        account_currency: market.account.currency.clone(),
        close_trade: None,
        open_trade: None,
    };
    if !live {
        return Ok(outcome);
    }
    ctx.ensure_live_allowed().await?;
    crate::prop_firm::guard_live_order(&ctx).await?;
    idempotent(&ctx, "reverse_position", &input, async {
        let cmd = Command::ReversePosition {
            ticket: pos.ticket,
            idempotency_key: ctx.idempotency_key.clone(),
        };
        match ctx.run(cmd).await? {
            CommandResult::Reverse { close, open } => {
                outcome.executed = true;
                outcome.close_price = close.price;
                outcome.open_price = open.price;
                outcome.close_trade = Some(close);
                outcome.open_trade = Some(open);
                Ok(outcome)
            }
            other => Err(unexpected("reverse_position", &other)),
        }
    })
    .await
}

pub(super) fn tool() -> Tool {
    spec(
        "reverse_position",
        "Reverse a position",
        "Closes a position and opens the same volume in the opposite direction in one call. DRY RUN BY DEFAULT: reports the would-be prices, realised profit and the new margin; `\"dry_run\": false` executes for real.",
    )
    .build(handle)
}
