//! `place_order`: a market or pending order, a dry run unless `dry_run` is `false`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::account::{ExpirationMode, FillingMode, OrderType};
use tradeterm_core::time::UnixMs;
use tradeterm_core::trading::{self, OrderParams, check_free_margin, margin_level, risk_at_stop, validate_order};
use tradeterm_protocol::agent::{OrderRequest, TradeResult};
use tradeterm_protocol::{Command, CommandResult};

use super::{LevelInfo, check_comment, fetch_market, finite_positive, idempotent, level_info, rate_to_account, spec};
use crate::context::unexpected;
use crate::market::check_symbol;
use crate::{Tool, ToolContext, ToolError};

/// Input of `place_order`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// A pending order names its price, above zero (inside `allOf`, which client
// generators merge); a market order's price is ignored.
#[schemars(extend("allOf" = [{ "anyOf": [
        { "properties": { "order_type": { "enum": ["BUY", "SELL"] } } },
        { "required": ["price"], "properties": { "price": { "type": "number", "exclusiveMinimum": 0 } } },
] }]))]
pub struct PlaceOrderInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// `BUY` or `SELL` (market), `BUY_LIMIT`, `SELL_LIMIT`, `BUY_STOP`, `SELL_STOP`,
    /// `BUY_STOP_LIMIT`, `SELL_STOP_LIMIT` (pending).
    #[serde(deserialize_with = "crate::schema::placeable_order_type")]
    #[schemars(schema_with = "crate::schema::placeable_order_type_schema")]
    pub order_type: OrderType,
    /// Volume in lots (must respect the symbol's minimum, maximum and step).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: f64,
    /// Trigger price, required for pending orders (above zero); ignored for market orders.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub price: Option<f64>,
    /// Stop-loss price.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub stop_loss: Option<f64>,
    /// Take-profit price.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub take_profit: Option<f64>,
    /// Maximum slippage for market orders, in points.
    #[serde(default)]
    pub deviation_points: Option<u32>,
    /// Order comment (at most 31 characters; dots allowed).
    #[serde(default)]
    #[schemars(length(max = super::MAX_COMMENT), pattern(super::COMMENT_PATTERN))]
    pub comment: Option<String>,
    /// Expert magic number.
    #[serde(default)]
    pub magic: Option<u64>,
    /// Stop-limit orders: price of the limit order placed when `price` (the
    /// stop) is reached; below the stop for a buy, above it for a sell.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub stop_limit_price: Option<f64>,
    /// Pending orders: `GTC` (default), `DAY`, `SPECIFIED` (until
    /// `expiration`) or `SPECIFIED_DAY` (until the end of `expiration`'s
    /// day); must be one the symbol allows (`get_symbol_info`).
    #[serde(default)]
    pub expiration_mode: Option<ExpirationMode>,
    /// Expiry time (ISO 8601) for `SPECIFIED` and `SPECIFIED_DAY`.
    #[serde(default, with = "tradeterm_core::time::iso::option")]
    #[schemars(with = "Option<tradeterm_core::time::iso::Schema>")]
    pub expiration: Option<UnixMs>,
    /// Filling policy `FOK`, `IOC` or `RETURN`; by default the first of
    /// these the symbol allows.
    #[serde(default)]
    pub filling: Option<FillingMode>,
    /// `true` (the default) validates and reports the would-be outcome without
    /// touching the account; `false` executes for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Outcome of `place_order`: the would-be outcome of a dry run, or the execution.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OrderOutcome {
    /// Whether this was a dry run (nothing sent to the account).
    pub dry_run: bool,
    /// Whether the order was executed or placed.
    pub executed: bool,
    /// Instrument.
    pub symbol: String,
    /// Order type.
    pub order_type: OrderType,
    /// Volume in lots.
    pub volume: f64,
    /// Would-be fill price (ask for buys, bid for sells, the trigger price for
    /// pending orders), or the actual fill price when executed.
    pub price: f64,
    /// Account currency.
    pub account_currency: String,
    /// Margin the order requires, account currency.
    pub margin_required: f64,
    /// Free margin before the order.
    pub free_margin: f64,
    /// Free margin after the order.
    pub free_margin_after: f64,
    /// Margin level after the order, percent.
    pub margin_level_after: Option<f64>,
    /// Stop loss with its distance and the loss if hit (negative).
    pub stop_loss: Option<LevelInfo>,
    /// Take profit with its distance and the gain if hit.
    pub take_profit: Option<LevelInfo>,
    /// Gain at take profit divided by loss at stop loss.
    pub reward_to_risk: Option<f64>,
    /// Filling policy sent (the caller's, or the first the symbol allows;
    /// none when the terminal does not report the symbol's modes).
    pub filling: Option<FillingMode>,
    /// The terminal's trade result (live only).
    pub trade: Option<TradeResult>,
    /// Remarks (ignored fields, unknown conversions).
    pub notes: Vec<String>,
}

async fn handle(ctx: ToolContext, input: PlaceOrderInput) -> Result<OrderOutcome, ToolError> {
    check_symbol(&input.symbol)?;
    if !input.volume.is_finite() || input.volume <= 0.0 {
        return Err(ToolError::InvalidInput(
            "`volume` must be a positive number of lots".into(),
        ));
    }
    finite_positive("price", input.price)?;
    finite_positive("stop_loss", input.stop_loss)?;
    finite_positive("take_profit", input.take_profit)?;
    finite_positive("stop_limit_price", input.stop_limit_price)?;
    let comment = input.comment.clone().unwrap_or_default();
    check_comment(&comment)?;
    let mut notes = Vec::new();
    if input.order_type.is_market() && input.price.is_some() {
        notes.push("`price` is ignored for market orders: they fill at the current quote".to_owned());
    }
    if !input.order_type.is_market() && input.price.is_none() {
        return Err(ToolError::InvalidInput(format!(
            "`price` is required for {:?} orders",
            input.order_type
        )));
    }
    let live = ctx.is_live(input.dry_run);
    if input.dry_run == Some(false) && ctx.force_dry_run {
        notes.push("the session is in paper mode: executed as a dry run".to_owned());
    }

    let market = fetch_market(&ctx, &input.symbol).await?;
    let params = OrderParams {
        order_type: input.order_type,
        volume: input.volume,
        price: if input.order_type.is_market() {
            None
        } else {
            input.price
        },
        stop_limit_price: input.stop_limit_price.filter(|_| input.order_type.is_stop_limit()),
        stop_loss: input.stop_loss,
        take_profit: input.take_profit,
    };
    if input.stop_limit_price.is_some() && !input.order_type.is_stop_limit() {
        notes.push("`stop_limit_price` is only used by BUY_STOP_LIMIT and SELL_STOP_LIMIT orders".to_owned());
    }
    // The terminal's clock decides whether the market is open.
    validate_order(&market.spec, &market.tick, &params, market.tick.time)?;
    let (expiration_mode, expiration) = if input.order_type.is_market() {
        if input.expiration_mode.is_some() || input.expiration.is_some() {
            notes.push("an expiration is ignored for market orders".to_owned());
        }
        (None, None)
    } else {
        let mode = input.expiration_mode.unwrap_or_default();
        trading::check_expiration(&market.spec, mode, input.expiration, market.tick.time)?;
        (input.expiration_mode, input.expiration.filter(|_| mode.needs_time()))
    };
    let filling = trading::choose_filling(&market.spec, input.filling)?;
    if filling.is_none() {
        notes.push("the terminal does not report the symbol's filling modes: it chooses the filling".to_owned());
    }
    let request = OrderRequest {
        symbol: input.symbol.clone(),
        order_type: input.order_type,
        volume: input.volume,
        price: params.price,
        stop_loss: trading::level(input.stop_loss),
        take_profit: trading::level(input.take_profit),
        deviation_points: input.deviation_points,
        comment,
        magic: input.magic.unwrap_or(0),
        idempotency_key: ctx.idempotency_key.clone(),
        stop_limit_price: params.stop_limit_price,
        expiration_mode,
        expiration,
        filling,
    };
    let check = match ctx.run(Command::OrderCheck { order: request.clone() }).await? {
        CommandResult::OrderCheck(check) => check,
        other => return Err(unexpected("order_check", &other)),
    };
    if !check.valid {
        return Err(ToolError::Rejected {
            retcode: check.retcode,
            message: check.comment,
        });
    }
    check_free_margin(market.account.free_margin, check.margin, &market.account.currency)?;

    let side = input.order_type.side();
    let entry = check.price;
    let rate = rate_to_account(&ctx, &market.spec.currency_profit, &market).await;
    if rate.is_none() {
        notes.push(format!(
            "no quote converts {} to {}: money values at SL/TP are not given",
            market.spec.currency_profit, market.account.currency
        ));
    }
    let sl = trading::level(input.stop_loss).map(|p| level_info(&market.spec, side, input.volume, entry, p, rate));
    let tp = trading::level(input.take_profit).map(|p| level_info(&market.spec, side, input.volume, entry, p, rate));
    let reward_to_risk = match (&sl, &tp, rate) {
        (Some(_), Some(_), Some(rate)) => {
            let risk = risk_at_stop(
                &market.spec,
                side,
                input.volume,
                entry,
                sl.as_ref().map_or(entry, |l| l.price),
                rate,
            );
            let reward = tp.as_ref().and_then(|l| l.money).unwrap_or(0.0);
            (risk > 0.0).then(|| reward / risk)
        }
        _ => None,
    };
    let mut outcome = OrderOutcome {
        dry_run: !live,
        executed: false,
        symbol: input.symbol.clone(),
        order_type: input.order_type,
        volume: input.volume,
        price: entry,
        account_currency: market.account.currency.clone(),
        margin_required: check.margin,
        free_margin: market.account.free_margin,
        free_margin_after: check.free_margin_after,
        margin_level_after: check
            .margin_level_after
            .or_else(|| margin_level(market.account.equity, market.account.margin + check.margin)),
        stop_loss: sl,
        take_profit: tp,
        reward_to_risk,
        filling,
        trade: None,
        notes,
    };
    if !live {
        return Ok(outcome);
    }
    ctx.ensure_live_allowed().await?;
    // Prop-firm equity guard (`link_equity_guard`): no new exposure while breached.
    crate::prop_firm::guard_live_order(&ctx).await?;
    idempotent(&ctx, "place_order", &input, async {
        let trade = match ctx.run(Command::PlaceOrder { order: request }).await? {
            CommandResult::Trade(trade) => trade,
            other => return Err(unexpected("place_order", &other)),
        };
        outcome.executed = true;
        outcome.price = trade.price;
        outcome.trade = Some(trade);
        tracing::info!(license = %ctx.license_id, terminal = ?ctx.terminal_id, symbol = %outcome.symbol, "live order executed");
        Ok(outcome)
    })
    .await
}

pub(super) fn tool() -> Tool {
    spec(
        "place_order",
        "Place an order",
        "Places a market (BUY/SELL) or pending (BUY_LIMIT, SELL_LIMIT, BUY_STOP, SELL_STOP, BUY_STOP_LIMIT with stop_limit_price, SELL_STOP_LIMIT) order with optional stop loss and take profit, expiration (GTC, DAY, SPECIFIED, SPECIFIED_DAY) and filling (FOK, IOC, RETURN) as the symbol allows. DRY RUN BY DEFAULT: without `\"dry_run\": false` it only validates (volume limits and step, SL/TP side and distance, stop-limit price, expiration and filling against the symbol, market open, margin) and reports the would-be fill price, margin, free margin after, and the loss/gain at SL/TP in the account currency. Live execution needs the trade capability and trading enabled on the terminal.",
    )
    .build(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pending order's price is above zero in the schema (what
    /// `validate_order` refuses as "not a valid price"); a market order's
    /// price is ignored, so any is accepted.
    #[test]
    fn the_schema_states_a_pending_price_above_zero() {
        let schema = serde_json::to_value(
            crate::schema::input_settings()
                .into_generator()
                .into_root_schema_for::<PlaceOrderInput>(),
        )
        .unwrap();
        let branches = schema["allOf"][0]["anyOf"].as_array().unwrap();
        assert_eq!(
            branches[0]["properties"]["order_type"]["enum"],
            serde_json::json!(["BUY", "SELL"])
        );
        assert_eq!(branches[1]["required"], serde_json::json!(["price"]));
        assert_eq!(branches[1]["properties"]["price"]["exclusiveMinimum"], 0);
    }

    /// `CLOSE_BY` is an order type of the history only: the schema does not
    /// offer it and the input refuses it as an unknown variant (400), while
    /// every type the schema lists is read.
    #[test]
    fn close_by_is_not_an_order_type_to_place() {
        let schema = serde_json::to_value(
            crate::schema::input_settings()
                .into_generator()
                .into_root_schema_for::<PlaceOrderInput>(),
        )
        .unwrap();
        let listed = schema["properties"]["order_type"]["enum"].as_array().unwrap().clone();
        assert_eq!(listed.len(), 8);
        assert!(!listed.contains(&serde_json::json!("CLOSE_BY")));
        let input = |t: &str| serde_json::json!({ "symbol": "EURUSD", "order_type": t, "volume": 0.1, "price": 1.1 });
        for t in &listed {
            let read: PlaceOrderInput = serde_json::from_value(input(t.as_str().unwrap())).unwrap();
            assert_eq!(serde_json::json!(read.order_type), *t);
        }
        let err = serde_json::from_value::<PlaceOrderInput>(input("CLOSE_BY"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `CLOSE_BY`"), "{err}");
    }
}
