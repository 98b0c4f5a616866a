//! `close_by`: closes a position by an opposite one of the same symbol
//! (hedging accounts), a dry run unless `dry_run` is `false`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::trading::{self, Rejection, retcode, round_volume};
use tradeterm_core::{Position, Side};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult};

use super::{fetch_market, idempotent, rate_to_account, run_optional, spec};
use crate::account::position;
use crate::context::unexpected;
use crate::{Tool, ToolContext, ToolError};

/// Input of `close_by`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseByInput {
    /// The position to close.
    pub ticket: u64,
    /// The opposite position (same symbol, other side) it is closed by.
    pub ticket_by: u64,
    /// `true` (the default) reports the would-be outcome only; `false` closes for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Outcome of `close_by`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CloseByOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the close-by was executed.
    pub executed: bool,
    /// Instrument.
    pub symbol: String,
    /// The position closed.
    pub ticket: u64,
    /// The opposite position.
    pub ticket_by: u64,
    /// Lots closed on each of the two (the smaller volume).
    pub volume: f64,
    /// Lots left open of `ticket` afterwards.
    pub ticket_volume_remaining: f64,
    /// Lots left open of `ticket_by` afterwards.
    pub ticket_by_volume_remaining: f64,
    /// Profit of the closed pair, account currency: the difference of the
    /// opening prices (no spread is paid; swaps come on top).
    pub profit: Option<f64>,
    /// Account currency.
    pub account_currency: String,
    /// The terminal's trade result (live only).
    pub trade: Option<TradeResult>,
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

async fn handle(ctx: ToolContext, input: CloseByInput) -> Result<CloseByOutcome, ToolError> {
    if input.ticket == input.ticket_by {
        // A request the trade server refuses (`TRADE_RETCODE_INVALID`), not
        // a malformed one: both tickets are well-formed.
        return Err(Rejection::new(retcode::INVALID_REQUEST, "a position cannot be closed by itself").into());
    }
    let live = ctx.is_live(input.dry_run);
    let a: Position = position(&ctx, input.ticket).await?;
    let b: Position = position(&ctx, input.ticket_by).await?;
    if !a.symbol.eq_ignore_ascii_case(&b.symbol) || a.side == b.side {
        return Err(Rejection::new(
            retcode::INVALID_REQUEST,
            format!(
                "close by needs two opposite positions of one symbol: #{} is a {} {} position, #{} a {} {} one",
                a.ticket,
                a.symbol,
                side_word(a.side),
                b.ticket,
                b.symbol,
                side_word(b.side)
            ),
        )
        .into());
    }
    let market = fetch_market(&ctx, &a.symbol).await?;
    trading::check_market_open(&market.spec, market.tick.time)?;
    let volume = round_volume(&market.spec, a.volume.min(b.volume));
    let rate = rate_to_account(&ctx, &market.spec.currency_profit, &market).await;
    let mut outcome = CloseByOutcome {
        dry_run: !live,
        executed: false,
        symbol: a.symbol.clone(),
        ticket: a.ticket,
        ticket_by: b.ticket,
        volume,
        ticket_volume_remaining: round_volume(&market.spec, a.volume - volume),
        ticket_by_volume_remaining: round_volume(&market.spec, b.volume - volume),
        profit: rate.map(|r| trading::profit(&market.spec, a.side, volume, a.open_price, b.open_price, r)),
        account_currency: market.account.currency.clone(),
        trade: None,
    };
    if !live {
        return Ok(outcome);
    }
    ctx.ensure_live_allowed().await?;
    idempotent(&ctx, "close_by", &input, async {
        let command = Command::CloseBy {
            ticket: input.ticket,
            ticket_by: input.ticket_by,
            idempotency_key: ctx.idempotency_key.clone(),
        };
        match run_optional(&ctx, command).await? {
            CommandResult::Trade(trade) => {
                outcome.executed = true;
                outcome.trade = Some(trade);
                Ok(outcome)
            }
            other => Err(unexpected("close_by", &other)),
        }
    })
    .await
}

pub(super) fn tool() -> Tool {
    spec(
        "close_by",
        "Close a position by an opposite one",
        "Closes a position by an opposite position of the same symbol (MT5 close-by, hedging accounts only; a netting account refuses it): the smaller volume is closed on both at the opening price of `ticket_by`, so the pair pays no spread. DRY RUN BY DEFAULT: reports the volumes left and the pair's profit; `\"dry_run\": false` closes for real.",
    )
    .build(handle)
}
