//! `close_position`: closes a position fully or partly, a dry run unless `dry_run` is `false`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::trading::{self, check_close_volume, round_volume};
use tradeterm_core::{Position, Side};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult};

use super::{fetch_market, idempotent, rate_to_account, spec};
use crate::account::position;
use crate::context::unexpected;
use crate::{Tool, ToolContext, ToolError};

/// Input of `close_position`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClosePositionInput {
    /// Position ticket.
    pub ticket: u64,
    /// Lots to close; the whole position when absent.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: Option<f64>,
    /// Maximum slippage in points.
    #[serde(default)]
    pub deviation_points: Option<u32>,
    /// `true` (the default) reports the would-be outcome only; `false` closes for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Outcome of `close_position`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CloseOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the close was executed.
    pub executed: bool,
    /// Position ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Side of the position.
    pub side: Side,
    /// Lots closed (or to close).
    pub volume: f64,
    /// Lots left open afterwards.
    pub volume_remaining: f64,
    /// Would-be (or actual) close price.
    pub price: f64,
    /// Profit realised by the closed part, account currency (estimate for dry runs).
    pub profit: Option<f64>,
    /// Account currency.
    pub account_currency: String,
    /// The terminal's trade result (live only).
    pub trade: Option<TradeResult>,
}

async fn handle(ctx: ToolContext, input: ClosePositionInput) -> Result<CloseOutcome, ToolError> {
    if let Some(volume) = input.volume
        && (!volume.is_finite() || volume <= 0.0)
    {
        return Err(ToolError::InvalidInput(
            "`volume` must be a positive number of lots".into(),
        ));
    }
    let live = ctx.is_live(input.dry_run);
    let pos: Position = position(&ctx, input.ticket).await?;
    let market = fetch_market(&ctx, &pos.symbol).await?;
    let volume = input.volume.unwrap_or(pos.volume);
    check_close_volume(&market.spec, pos.volume, volume)?;
    trading::check_market_open(&market.spec, market.tick.time)?;
    let price = trading::close_price(pos.side, &market.tick);
    let rate = rate_to_account(&ctx, &market.spec.currency_profit, &market).await;
    let mut outcome = CloseOutcome {
        dry_run: !live,
        executed: false,
        ticket: pos.ticket,
        symbol: pos.symbol.clone(),
        side: pos.side,
        volume,
        volume_remaining: round_volume(&market.spec, pos.volume - volume),
        price,
        profit: rate.map(|r| trading::profit(&market.spec, pos.side, volume, pos.open_price, price, r)),
        account_currency: market.account.currency.clone(),
        trade: None,
    };
    if !live {
        return Ok(outcome);
    }
    ctx.ensure_live_allowed().await?;
    idempotent(&ctx, "close_position", &input, async {
        let cmd = Command::ClosePosition {
            ticket: input.ticket,
            volume: input.volume,
            deviation_points: input.deviation_points,
            idempotency_key: ctx.idempotency_key.clone(),
        };
        let trade = match ctx.run(cmd).await? {
            CommandResult::Trade(trade) => trade,
            other => return Err(unexpected("close_position", &other)),
        };
        outcome.executed = true;
        outcome.price = trade.price;
        outcome.profit = rate.map(|r| trading::profit(&market.spec, pos.side, volume, pos.open_price, trade.price, r));
        outcome.trade = Some(trade);
        Ok(outcome)
    })
    .await
}

pub(super) fn tool() -> Tool {
    spec(
        "close_position",
        "Close a position",
        "Closes an open position fully, or partly with `volume`. DRY RUN BY DEFAULT: reports the would-be close price and realised profit; `\"dry_run\": false` closes for real.",
    )
    .build(handle)
}
