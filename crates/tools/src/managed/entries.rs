//! `place_oco` and `place_bracket`: exits managed from the entry on. What
//! they place goes through `place_order` (every check and gate of a live
//! order, idempotency keys derived from the caller's).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tradeterm_core::account::{ExpirationMode, OrderType};
use tradeterm_core::managed::{ManagedSpec, Paper, ScaleStop, TargetLevel};
use tradeterm_core::sizing::floor_to_step;
use tradeterm_core::time::UnixMs;
use tradeterm_core::trading::{retcode, round_volume};
use tradeterm_core::{PendingOrder, Position, Side, SymbolSpec};

use super::protect::ManagedCreated;
use super::{Stored, check_label, create, rule_spec};
use crate::{Tool, ToolContext, ToolError};

/// Most take-profit levels of a bracket.
pub const MAX_TARGETS: usize = 5;

/// One pending order of an OCO pair (the fields of `place_order`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderLeg {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// A pending type: `BUY_LIMIT`, `SELL_LIMIT`, `BUY_STOP`, `SELL_STOP`, `BUY_STOP_LIMIT`, `SELL_STOP_LIMIT`.
    #[serde(deserialize_with = "crate::schema::placeable_order_type")]
    #[schemars(schema_with = "pending_order_type")]
    pub order_type: OrderType,
    /// Volume in lots.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: f64,
    /// Trigger price (above zero).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub price: f64,
    /// Stop-limit orders: the limit price placed when `price` is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stop_limit_price: Option<f64>,
    /// Stop loss attached on fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stop_loss: Option<f64>,
    /// Take profit attached on fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub take_profit: Option<f64>,
    /// `GTC` (default), `DAY`, `SPECIFIED`, `SPECIFIED_DAY` (one the symbol allows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_mode: Option<ExpirationMode>,
    /// Expiry (ISO 8601) for `SPECIFIED` and `SPECIFIED_DAY`.
    #[serde(
        default,
        with = "tradeterm_core::time::iso::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<tradeterm_core::time::iso::Schema>")]
    pub expiration: Option<UnixMs>,
    /// Order comment (at most 31 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = crate::trading::MAX_COMMENT), pattern(crate::trading::COMMENT_PATTERN))]
    pub comment: Option<String>,
    /// Expert magic number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub magic: Option<u64>,
}

/// The pending order types, as a schema (an OCO leg cannot be a market order).
fn pending_order_type(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["BUY_LIMIT", "SELL_LIMIT", "BUY_STOP", "SELL_STOP", "BUY_STOP_LIMIT", "SELL_STOP_LIMIT"],
        "description": "A pending order type."
    })
}

/// Input of `place_oco`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaceOcoInput {
    /// The first pending order.
    pub first: OrderLeg,
    /// The second pending order.
    pub second: OrderLeg,
    /// Your label (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = super::MAX_LABEL_CHARS), pattern(crate::schema::NO_CONTROL_PATTERN))]
    pub label: Option<String>,
    /// `true` (the default) validates both orders and simulates the pair over a paper book; `false` places both and manages them.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// One take-profit level of a bracket.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BracketTarget {
    /// The level (beyond the entry in the position's favour, each further than the one before).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub price: f64,
    /// Lots closed at this level; give it on every level (summing to `volume`) or on none (equal parts, the last level taking what rounding leaves).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: Option<f64>,
}

/// Input of `place_bracket`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaceBracketInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// The entry: `BUY` or `SELL` (market) or a pending type.
    #[serde(deserialize_with = "crate::schema::placeable_order_type")]
    #[schemars(schema_with = "crate::schema::placeable_order_type_schema")]
    pub order_type: OrderType,
    /// Volume of the entry in lots.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: f64,
    /// Trigger price of a pending entry (above zero); ignored for market entries.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub price: Option<f64>,
    /// Stop-limit entries: the limit price.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub stop_limit_price: Option<f64>,
    /// The stop loss (placed with the entry, held by the trade server).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub stop_loss: f64,
    /// Take-profit levels, nearest first (1-5). The last is the position's own take profit at the trade server; the others close their part on the server.
    #[schemars(length(min = 1, max = 5))]
    pub targets: Vec<BracketTarget>,
    /// What the stop does as levels fill: `none`, `breakeven` (to the entry after the first), `previous_target` (the default: to the entry after the first, to the level before after each later one).
    #[serde(default)]
    pub scale_stop: Option<ScaleStop>,
    /// Maximum slippage of a market entry, in points.
    #[serde(default)]
    pub deviation_points: Option<u32>,
    /// Pending entries: `GTC` (default), `DAY`, `SPECIFIED`, `SPECIFIED_DAY`.
    #[serde(default)]
    pub expiration_mode: Option<ExpirationMode>,
    /// Expiry (ISO 8601) for `SPECIFIED` and `SPECIFIED_DAY`.
    #[serde(default, with = "tradeterm_core::time::iso::option")]
    #[schemars(with = "Option<tradeterm_core::time::iso::Schema>")]
    pub expiration: Option<UnixMs>,
    /// Order comment (at most 31 characters).
    #[serde(default)]
    #[schemars(length(max = crate::trading::MAX_COMMENT), pattern(crate::trading::COMMENT_PATTERN))]
    pub comment: Option<String>,
    /// Expert magic number.
    #[serde(default)]
    pub magic: Option<u64>,
    /// Your label (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = super::MAX_LABEL_CHARS), pattern(crate::schema::NO_CONTROL_PATTERN))]
    pub label: Option<String>,
    /// `true` (the default) validates the entry and simulates the bracket over a paper book; `false` places the entry and manages it.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Runs `place_order` with this input (its checks and gates), with the
/// caller's idempotency key extended by `suffix`.
async fn place(ctx: &ToolContext, mut input: Value, live: bool, suffix: &str) -> Result<Value, ToolError> {
    let tool = crate::find("place_order").ok_or_else(|| ToolError::Internal("place_order missing".into()))?;
    input["dry_run"] = Value::Bool(!live);
    let mut call = ctx.clone();
    call.idempotency_key = ctx.idempotency_key.as_ref().map(|k| format!("{k}:{suffix}"));
    tool.call(call, input).await
}

/// Cancels an order placed for a rule that could not be completed.
async fn cancel(ctx: &ToolContext, ticket: u64, suffix: &str) -> Result<Value, ToolError> {
    let tool = crate::find("cancel_order").ok_or_else(|| ToolError::Internal("cancel_order missing".into()))?;
    let mut call = ctx.clone();
    call.idempotency_key = ctx.idempotency_key.as_ref().map(|k| format!("{k}:{suffix}"));
    tool.call(call, serde_json::json!({ "ticket": ticket, "dry_run": false }))
        .await
}

fn ticket_of(outcome: &Value, market: bool) -> Result<u64, ToolError> {
    let trade = &outcome["trade"];
    let order = trade["order"].as_u64().unwrap_or(0);
    let position = trade["position"].as_u64().unwrap_or(0);
    let ticket = if market && position != 0 { position } else { order };
    if ticket == 0 {
        return Err(ToolError::Dispatch(
            "the terminal placed the order but reported no ticket".into(),
        ));
    }
    Ok(ticket)
}

/// `place_order`'s outcomes, typed again (they are its own output: a value
/// that does not read back is logged, never turned into a failure after an
/// order went out).
fn outcomes(values: Vec<Value>) -> Vec<crate::trading::OrderOutcome> {
    values
        .into_iter()
        .filter_map(|v| match serde_json::from_value(v) {
            Ok(o) => Some(o),
            Err(e) => {
                tracing::error!(error = %e, "a place_order outcome did not read back");
                None
            }
        })
        .collect()
}

fn leg_json(leg: &OrderLeg) -> Result<Value, ToolError> {
    serde_json::to_value(leg).map_err(|e| ToolError::Internal(e.to_string()))
}

fn paper_order(ticket: u64, leg: &OrderLeg, time: UnixMs) -> PendingOrder {
    PendingOrder {
        ticket,
        symbol: leg.symbol.clone(),
        order_type: leg.order_type,
        volume: leg.volume,
        price: leg.price,
        stop_limit_price: leg.stop_limit_price,
        stop_loss: leg.stop_loss,
        take_profit: leg.take_profit,
        time_setup: time,
        expiration_mode: leg.expiration_mode.unwrap_or_default(),
        expiration: leg.expiration,
        magic: leg.magic.unwrap_or(0),
        comment: leg.comment.clone().unwrap_or_default(),
    }
}

async fn place_oco(ctx: ToolContext, input: PlaceOcoInput) -> Result<ManagedCreated, ToolError> {
    let label = check_label(&input.label)?;
    for (name, leg) in [("first", &input.first), ("second", &input.second)] {
        if leg.order_type.is_market() {
            return Err(ToolError::InvalidInput(format!(
                "`{name}.order_type` must be a pending type (BUY_LIMIT, SELL_LIMIT, BUY_STOP, SELL_STOP, BUY_STOP_LIMIT, SELL_STOP_LIMIT)"
            )));
        }
    }
    let live = ctx.is_live(input.dry_run);
    let (a, b) = (leg_json(&input.first)?, leg_json(&input.second)?);
    // Both validated before anything is sent.
    let check_a = place(&ctx, a.clone(), false, "")
        .await
        .map_err(|e| leg_error("first", e))?;
    let check_b = place(&ctx, b.clone(), false, "")
        .await
        .map_err(|e| leg_error("second", e))?;
    let spec_symbol = ctx.spec(&input.first.symbol).await?.name;
    if !live {
        let rule = ManagedSpec::Oco { orders: [1, 2] };
        let stored = Stored {
            symbol: spec_symbol,
            paper: Some(Paper {
                orders: vec![
                    paper_order(1, &input.first, ctx.now_ms),
                    paper_order(2, &input.second, ctx.now_ms),
                ],
                ..Paper::default()
            }),
            ..Stored::default()
        };
        let managed = create(&ctx, &rule, &label, &stored, true).await?;
        return Ok(ManagedCreated {
            managed,
            next_action: None,
            distance: None,
            placed: outcomes(vec![check_a, check_b]),
        });
    }
    ctx.ensure_live_allowed().await?;
    let first = place(&ctx, a, true, "oco:1").await.map_err(|e| leg_error("first", e))?;
    let t1 = ticket_of(&first, false)?;
    let second = match place(&ctx, b, true, "oco:2").await {
        Ok(v) => v,
        Err(e) => {
            // Fail closed: no half pair is left behind.
            let undo = match cancel(&ctx, t1, "oco:undo").await {
                Ok(_) => format!("order {t1} (the first) was cancelled"),
                Err(c) => format!("ORDER {t1} (THE FIRST) IS STILL PENDING: cancelling it failed: {c}"),
            };
            return Err(match e {
                ToolError::Rejected { retcode, message } => ToolError::Rejected {
                    retcode,
                    message: format!("the second order was refused: {message}; {undo}"),
                },
                other => ToolError::Dispatch(format!("the second order was not placed: {other}; {undo}")),
            });
        }
    };
    let t2 = ticket_of(&second, false)?;
    let rule = ManagedSpec::Oco { orders: [t1, t2] };
    let stored = Stored {
        symbol: spec_symbol,
        ..Stored::default()
    };
    let managed = create(&ctx, &rule, &label, &stored, false).await?;
    Ok(ManagedCreated {
        managed,
        next_action: None,
        distance: None,
        placed: outcomes(vec![first, second]),
    })
}

fn leg_error(name: &str, e: ToolError) -> ToolError {
    match e {
        ToolError::InvalidInput(m) => ToolError::InvalidInput(format!("`{name}`: {m}")),
        ToolError::Rejected { retcode, message } => ToolError::Rejected {
            retcode,
            message: format!("`{name}`: {message}"),
        },
        other => other,
    }
}

/// A refusal of the request as the trade server would refuse it (422 `ORDER_REJECTED`).
fn rejected(retcode: &str, message: String) -> ToolError {
    ToolError::Rejected {
        retcode: retcode.to_owned(),
        message,
    }
}

/// The levels with their volumes, checked against the entry and the symbol.
fn targets(
    spec: &SymbolSpec,
    side: Side,
    entry: f64,
    volume: f64,
    given: &[BracketTarget],
) -> Result<Vec<TargetLevel>, ToolError> {
    if given.is_empty() || given.len() > MAX_TARGETS {
        return Err(ToolError::InvalidInput(format!(
            "`targets` must have 1 to {MAX_TARGETS} levels"
        )));
    }
    let mut last = entry;
    for (i, t) in given.iter().enumerate() {
        let further = match side {
            Side::Buy => t.price > last,
            Side::Sell => t.price < last,
        };
        if !t.price.is_finite() || !further {
            // Like a take profit on the wrong side: the trade server's
            // `invalid_stops` (the entry of a market bracket is the live quote).
            return Err(rejected(
                retcode::INVALID_STOPS,
                format!(
                    "`targets[{i}].price` must be {} the {} ({last})",
                    if side == Side::Buy { "above" } else { "below" },
                    if i == 0 { "entry" } else { "level before it" }
                ),
            ));
        }
        last = t.price;
    }
    let n = given.len();
    let all = given.iter().all(|t| t.volume.is_some());
    let none = given.iter().all(|t| t.volume.is_none());
    let volumes: Vec<f64> = if none {
        let part = floor_to_step(volume / n as f64, spec.volume_step);
        let mut v = vec![round_volume(spec, part); n];
        v[n - 1] = round_volume(spec, volume - part * (n - 1) as f64);
        v
    } else if all {
        let v: Vec<f64> = given.iter().map(|t| t.volume.unwrap_or(0.0)).collect();
        let sum: f64 = v.iter().sum();
        if (sum - volume).abs() > spec.volume_step.max(1e-8) * 0.5 {
            return Err(rejected(
                retcode::INVALID_VOLUME,
                format!(
                    "the targets' volumes sum to {} lots, not the entry's {volume}",
                    round_volume(spec, sum)
                ),
            ));
        }
        v.into_iter().map(|x| round_volume(spec, x)).collect()
    } else {
        return Err(rejected(
            retcode::INVALID_VOLUME,
            "give `volume` on every target or on none (equal parts)".into(),
        ));
    };
    for (i, v) in volumes.iter().enumerate() {
        if !v.is_finite() || *v + 1e-9 < spec.volume_min {
            return Err(rejected(
                retcode::INVALID_VOLUME,
                format!(
                    "target {i} would close {v} lots, below {}'s minimum volume {}: use fewer levels or a larger volume",
                    spec.name, spec.volume_min
                ),
            ));
        }
    }
    Ok(given
        .iter()
        .zip(volumes)
        .map(|(t, volume)| TargetLevel { price: t.price, volume })
        .collect())
}

async fn place_bracket(ctx: ToolContext, input: PlaceBracketInput) -> Result<ManagedCreated, ToolError> {
    let label = check_label(&input.label)?;
    let live = ctx.is_live(input.dry_run);
    let side = input.order_type.side();
    let market = input.order_type.is_market();
    let (spec, tick) = futures_util::future::try_join(ctx.spec(&input.symbol), ctx.tick(&input.symbol)).await?;
    let entry_price = match (market, input.price) {
        (true, _) => match side {
            Side::Buy => tick.ask,
            Side::Sell => tick.bid,
        },
        (false, Some(p)) => input
            .stop_limit_price
            .filter(|_| input.order_type.is_stop_limit())
            .unwrap_or(p),
        (false, None) => {
            return Err(rejected(
                retcode::INVALID_PRICE,
                format!("a {:?} entry needs `price`", input.order_type),
            ));
        }
    };
    let levels = targets(&spec, side, entry_price, input.volume, &input.targets)?;
    let last = levels[levels.len() - 1].price;
    let order = serde_json::json!({
        "symbol": input.symbol,
        "order_type": input.order_type,
        "volume": input.volume,
        "price": input.price,
        "stop_limit_price": input.stop_limit_price,
        "stop_loss": input.stop_loss,
        "take_profit": last,
        "deviation_points": input.deviation_points,
        "expiration_mode": input.expiration_mode,
        "expiration": input.expiration.map(tradeterm_core::time::to_iso),
        "comment": input.comment,
        "magic": input.magic,
    });
    let checked = place(&ctx, order.clone(), false, "").await?;
    let scale_stop = input.scale_stop.unwrap_or_default();
    if !live {
        let time = ctx.now_ms;
        let paper = if market {
            Paper {
                positions: vec![Position {
                    ticket: 1,
                    symbol: spec.name.clone(),
                    side,
                    volume: input.volume,
                    open_price: entry_price,
                    open_time: time,
                    stop_loss: Some(input.stop_loss),
                    take_profit: Some(last),
                    current_price: entry_price,
                    swap: 0.0,
                    commission: 0.0,
                    profit: 0.0,
                    magic: input.magic.unwrap_or(0),
                    comment: input.comment.clone().unwrap_or_default(),
                }],
                ..Paper::default()
            }
        } else {
            Paper {
                orders: vec![PendingOrder {
                    ticket: 1,
                    symbol: spec.name.clone(),
                    order_type: input.order_type,
                    volume: input.volume,
                    price: input.price.unwrap_or(entry_price),
                    stop_limit_price: input.stop_limit_price,
                    stop_loss: Some(input.stop_loss),
                    take_profit: Some(last),
                    time_setup: time,
                    expiration_mode: input.expiration_mode.unwrap_or_default(),
                    expiration: input.expiration,
                    magic: input.magic.unwrap_or(0),
                    comment: input.comment.clone().unwrap_or_default(),
                }],
                ..Paper::default()
            }
        };
        let rule = ManagedSpec::Bracket {
            entry: 1,
            side,
            stop_loss: input.stop_loss,
            targets: levels,
            scale_stop,
        };
        let stored = Stored {
            symbol: spec.name.clone(),
            paper: Some(paper),
            ..Stored::default()
        };
        let managed = create(&ctx, &rule, &label, &stored, true).await?;
        return Ok(ManagedCreated {
            managed,
            next_action: None,
            distance: None,
            placed: outcomes(vec![checked]),
        });
    }
    ctx.ensure_live_allowed().await?;
    let placed = place(&ctx, order, true, "bracket").await?;
    let entry = ticket_of(&placed, market)?;
    let rule = ManagedSpec::Bracket {
        entry,
        side,
        stop_loss: input.stop_loss,
        targets: levels,
        scale_stop,
    };
    let stored = Stored {
        symbol: spec.name.clone(),
        ..Stored::default()
    };
    let managed = create(&ctx, &rule, &label, &stored, false).await?;
    Ok(ManagedCreated {
        managed,
        next_action: None,
        distance: None,
        placed: outcomes(vec![placed]),
    })
}

pub(super) fn oco_tool() -> Tool {
    rule_spec(
        "place_oco",
        "Place an OCO pair",
        "Places two pending orders as one-cancels-other: when one fills or goes away (cancelled, expired), the server cancels the other, on the first quote or trade event after it (MetaTrader has no OCO orders). Both orders are validated before either is sent; if the second is refused the first is cancelled. DRY RUN BY DEFAULT: validates both and simulates the pair over a paper book; `\"dry_run\": false` places them (needs live trading).",
    )
    .build(place_oco)
}

pub(super) fn bracket_tool() -> Tool {
    rule_spec(
        "place_bracket",
        "Place a bracket order",
        "Places an entry (market or pending) with a stop loss and 1-5 take-profit levels: the last level is the position's own take profit at the trade server, each earlier one closes its part of the position on the server when the price reaches it, and the stop moves up as levels fill (`scale_stop`). DRY RUN BY DEFAULT: validates the entry and simulates the bracket over a paper book; `\"dry_run\": false` places the entry and manages it (needs live trading). Ends when the position closes or the entry goes away unfilled.",
    )
    .build(place_bracket)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bracket's entry and an OCO leg never take `CLOSE_BY` (an order
    /// type of the history only), and their schemas do not offer it.
    #[test]
    fn close_by_is_not_an_entry_type() {
        let schema = |s: schemars::Schema| serde_json::to_value(s).unwrap();
        let bracket = schema(
            crate::schema::input_settings()
                .into_generator()
                .into_root_schema_for::<PlaceBracketInput>(),
        );
        let types = bracket["properties"]["order_type"]["enum"].as_array().unwrap();
        assert!(types.contains(&serde_json::json!("BUY")) && !types.contains(&serde_json::json!("CLOSE_BY")));
        let leg = schema(
            crate::schema::input_settings()
                .into_generator()
                .into_root_schema_for::<OrderLeg>(),
        );
        assert!(
            !leg["properties"]["order_type"]["enum"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!("CLOSE_BY"))
        );
        let refused = serde_json::from_value::<OrderLeg>(serde_json::json!({
            "symbol": "EURUSD", "order_type": "CLOSE_BY", "volume": 0.1, "price": 1.1
        }))
        .unwrap_err()
        .to_string();
        assert!(refused.contains("unknown variant `CLOSE_BY`"), "{refused}");
    }
}
