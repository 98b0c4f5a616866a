//! `modify_order`: changes a pending order's price, stop-limit price, stop
//! loss, take profit or expiry, a dry run unless `dry_run` is `false`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::PendingOrder;
use tradeterm_core::account::ExpirationMode;
use tradeterm_core::time::UnixMs;
use tradeterm_core::trading::{self, OrderParams, Rejection, retcode, validate_order};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult};

use super::{fetch_market, finite_positive, idempotent, run_optional, spec};
use crate::context::unexpected;
use crate::{Tool, ToolContext, ToolError};

/// Input of `modify_order`. Every field but `ticket` is optional: an absent
/// one keeps the order's current value.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModifyOrderInput {
    /// Pending order ticket.
    pub ticket: u64,
    /// New price (the stop price of a stop-limit order).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub price: Option<f64>,
    /// New stop-limit price (stop-limit orders only).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub stop_limit_price: Option<f64>,
    /// New stop loss; `0` removes it.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub stop_loss: Option<f64>,
    /// New take profit; `0` removes it.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub take_profit: Option<f64>,
    /// New expiration mode: `GTC`, `DAY`, `SPECIFIED`, `SPECIFIED_DAY`.
    #[serde(default)]
    pub expiration_mode: Option<ExpirationMode>,
    /// New expiry time (ISO 8601) for `SPECIFIED` and `SPECIFIED_DAY`.
    #[serde(default, with = "tradeterm_core::time::iso::option")]
    #[schemars(with = "Option<tradeterm_core::time::iso::Schema>")]
    pub expiration: Option<UnixMs>,
    /// `true` (the default) validates only; `false` modifies for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Outcome of `modify_order`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ModifyOrderOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the modification was executed.
    pub executed: bool,
    /// The order before.
    pub before: PendingOrder,
    /// The order after (would-be after, for a dry run).
    pub after: PendingOrder,
    /// The terminal's trade result (live only).
    pub trade: Option<TradeResult>,
}

/// The order with the input's changes applied.
fn merged(order: &PendingOrder, input: &ModifyOrderInput) -> PendingOrder {
    let expiration_mode = input.expiration_mode.unwrap_or(order.expiration_mode);
    let expiration = match input.expiration_mode {
        Some(_) => input.expiration,
        None => input.expiration.or(order.expiration),
    };
    PendingOrder {
        price: input.price.unwrap_or(order.price),
        stop_limit_price: input.stop_limit_price.or(order.stop_limit_price),
        stop_loss: match input.stop_loss {
            Some(level) => trading::level(Some(level)),
            None => order.stop_loss,
        },
        take_profit: match input.take_profit {
            Some(level) => trading::level(Some(level)),
            None => order.take_profit,
        },
        expiration_mode,
        expiration: expiration.filter(|_| expiration_mode.needs_time()),
        ..order.clone()
    }
}

async fn handle(ctx: ToolContext, input: ModifyOrderInput) -> Result<ModifyOrderOutcome, ToolError> {
    for (name, v) in [
        ("price", input.price),
        ("stop_limit_price", input.stop_limit_price),
        ("stop_loss", input.stop_loss),
        ("take_profit", input.take_profit),
    ] {
        finite_positive(name, v)?;
    }
    let live = ctx.is_live(input.dry_run);
    let before = match ctx.run(Command::Orders { symbol: None }).await? {
        CommandResult::Orders { orders } => orders
            .into_iter()
            .find(|o| o.ticket == input.ticket)
            .ok_or_else(|| ToolError::NotFound(format!("no pending order with ticket {}", input.ticket)))?,
        other => return Err(unexpected("orders", &other)),
    };
    if input.stop_limit_price.is_some() && !before.order_type.is_stop_limit() {
        return Err(ToolError::InvalidInput(format!(
            "`stop_limit_price` applies to stop-limit orders; order {} is a {:?}",
            before.ticket, before.order_type
        )));
    }
    let after = merged(&before, &input);
    if after == before {
        return Err(Rejection::new(retcode::NO_CHANGES, "the order already has these values").into());
    }
    let market = fetch_market(&ctx, &before.symbol).await?;
    let params = OrderParams {
        order_type: after.order_type,
        volume: after.volume,
        price: Some(after.price),
        stop_limit_price: after.stop_limit_price,
        stop_loss: after.stop_loss,
        take_profit: after.take_profit,
    };
    validate_order(&market.spec, &market.tick, &params, market.tick.time)?;
    trading::check_expiration(&market.spec, after.expiration_mode, after.expiration, market.tick.time)?;
    let mut outcome = ModifyOrderOutcome {
        dry_run: !live,
        executed: false,
        before,
        after,
        trade: None,
    };
    if !live {
        return Ok(outcome);
    }
    ctx.ensure_live_allowed().await?;
    idempotent(&ctx, "modify_order", &input, async {
        let a = &outcome.after;
        let command = Command::ModifyOrder {
            ticket: a.ticket,
            price: a.price,
            stop_limit_price: a.stop_limit_price,
            stop_loss: a.stop_loss,
            take_profit: a.take_profit,
            expiration_mode: Some(a.expiration_mode),
            expiration: a.expiration,
            idempotency_key: ctx.idempotency_key.clone(),
        };
        match run_optional(&ctx, command).await? {
            CommandResult::Trade(trade) => {
                outcome.executed = true;
                outcome.trade = Some(trade);
                Ok(outcome)
            }
            other => Err(unexpected("modify_order", &other)),
        }
    })
    .await
}

pub(super) fn tool() -> Tool {
    spec(
        "modify_order",
        "Modify a pending order",
        "Changes a pending order's price, stop-limit price, stop loss, take profit or expiration (GTC, DAY, SPECIFIED, SPECIFIED_DAY); absent fields keep their value, a 0 level removes it. DRY RUN BY DEFAULT: validates the new state against the symbol's live specification (price side and stops level, SL/TP, allowed expiration modes) and shows it before and after; `\"dry_run\": false` modifies for real.",
    )
    .build(handle)
}

#[cfg(test)]
mod tests {
    use tradeterm_core::account::OrderType;

    use super::*;

    fn order() -> PendingOrder {
        PendingOrder {
            ticket: 7,
            symbol: "EURUSD".into(),
            order_type: OrderType::BuyLimit,
            volume: 0.1,
            price: 1.1,
            stop_limit_price: None,
            stop_loss: Some(1.09),
            take_profit: Some(1.12),
            time_setup: 0,
            expiration_mode: ExpirationMode::Specified,
            expiration: Some(1_000),
            magic: 1,
            comment: "x".into(),
        }
    }

    fn input(json: serde_json::Value) -> ModifyOrderInput {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn absent_fields_keep_zero_removes_and_a_new_mode_replaces_the_expiry() {
        let m = merged(
            &order(),
            &input(serde_json::json!({ "ticket": 7, "price": 1.095, "stop_loss": 0 })),
        );
        assert_eq!((m.price, m.stop_loss, m.take_profit), (1.095, None, Some(1.12)));
        assert_eq!(
            (m.expiration_mode, m.expiration),
            (ExpirationMode::Specified, Some(1_000))
        );
        let m = merged(
            &order(),
            &input(serde_json::json!({ "ticket": 7, "expiration_mode": "GTC" })),
        );
        assert_eq!((m.expiration_mode, m.expiration), (ExpirationMode::Gtc, None));
        let m = merged(
            &order(),
            &input(serde_json::json!({ "ticket": 7, "expiration": "1970-01-01T00:00:02Z" })),
        );
        assert_eq!(m.expiration, Some(2_000));
        assert_eq!(merged(&order(), &input(serde_json::json!({ "ticket": 7 }))), order());
    }
}
