//! `modify_position`: sets a position's stop loss and take profit, a dry run unless `dry_run` is `false`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::trading::{self, validate_position_levels};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult};

use super::{LevelInfo, fetch_market, finite_positive, idempotent, level_info, rate_to_account, spec};
use crate::account::position;
use crate::context::unexpected;
use crate::{Tool, ToolContext, ToolError};

/// Input of `modify_position`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// `stop_loss`, `take_profit` or both (inside `allOf`, which client generators merge)
#[schemars(extend("allOf" = [{ "anyOf": [
        { "required": ["stop_loss"], "properties": { "stop_loss": { "not": { "type": "null" } } } },
        { "required": ["take_profit"], "properties": { "take_profit": { "not": { "type": "null" } } } },
] }]))]
pub struct ModifyPositionInput {
    /// Position ticket.
    pub ticket: u64,
    /// New stop loss; absent keeps the current one, `0` removes it.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub stop_loss: Option<f64>,
    /// New take profit; absent keeps the current one, `0` removes it.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub take_profit: Option<f64>,
    /// `true` (the default) validates only; `false` modifies for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Outcome of `modify_position`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ModifyOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the modification was executed.
    pub executed: bool,
    /// Position ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Stop loss before.
    pub stop_loss_before: Option<f64>,
    /// Take profit before.
    pub take_profit_before: Option<f64>,
    /// New stop loss with its distance from the entry and the money at it.
    pub stop_loss: Option<LevelInfo>,
    /// New take profit with its distance from the entry and the money at it.
    pub take_profit: Option<LevelInfo>,
    /// Account currency.
    pub account_currency: String,
    /// The terminal's trade result (live only).
    pub trade: Option<TradeResult>,
}

async fn handle(ctx: ToolContext, input: ModifyPositionInput) -> Result<ModifyOutcome, ToolError> {
    finite_positive("stop_loss", input.stop_loss)?;
    finite_positive("take_profit", input.take_profit)?;
    if input.stop_loss.is_none() && input.take_profit.is_none() {
        return Err(ToolError::InvalidInput(
            "give `stop_loss`, `take_profit` or both (0 removes a level)".into(),
        ));
    }
    let live = ctx.is_live(input.dry_run);
    let pos = position(&ctx, input.ticket).await?;
    let market = fetch_market(&ctx, &pos.symbol).await?;
    let sl = match input.stop_loss {
        Some(level) => trading::level(Some(level)),
        None => pos.stop_loss,
    };
    let tp = match input.take_profit {
        Some(level) => trading::level(Some(level)),
        None => pos.take_profit,
    };
    validate_position_levels(&market.spec, &market.tick, pos.side, sl, tp, market.tick.time)?;
    let rate = rate_to_account(&ctx, &market.spec.currency_profit, &market).await;
    let mut outcome = ModifyOutcome {
        dry_run: !live,
        executed: false,
        ticket: pos.ticket,
        symbol: pos.symbol.clone(),
        stop_loss_before: pos.stop_loss,
        take_profit_before: pos.take_profit,
        stop_loss: sl.map(|p| level_info(&market.spec, pos.side, pos.volume, pos.open_price, p, rate)),
        take_profit: tp.map(|p| level_info(&market.spec, pos.side, pos.volume, pos.open_price, p, rate)),
        account_currency: market.account.currency.clone(),
        trade: None,
    };
    if !live {
        return Ok(outcome);
    }
    ctx.ensure_live_allowed().await?;
    idempotent(&ctx, "modify_position", &input, async {
        let trade = match ctx
            .run(Command::ModifyPosition {
                ticket: pos.ticket,
                stop_loss: sl,
                take_profit: tp,
            })
            .await?
        {
            CommandResult::Trade(trade) => trade,
            other => return Err(unexpected("modify_position", &other)),
        };
        outcome.executed = true;
        outcome.trade = Some(trade);
        Ok(outcome)
    })
    .await
}

pub(super) fn tool() -> Tool {
    spec(
        "modify_position",
        "Modify SL/TP",
        "Sets a position's stop loss and/or take profit (absent keeps the level, 0 removes it). DRY RUN BY DEFAULT: validates side and minimum distance and reports the money at each level; `\"dry_run\": false` modifies for real.",
    )
    .build(handle)
}
