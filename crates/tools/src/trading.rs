//! Trading tools: `place_order`, `close_position`, `modify_position`,
//! `reverse_position`, `cancel_order`.
//!
//! Every one is a **dry run unless `dry_run` is `false`**. A dry run validates
//! fully against the symbol's specification, the current quote and the
//! account (volume limits and step, price and SL/TP sides and stops level,
//! market open, margin) and reports the would-be outcome without touching the
//! account. A live call passes the same preflight, then needs the `trade`
//! capability and the terminal's trading permissions (else
//! `TRADING_DISABLED`). Invalid requests fail closed: nothing is sent.
//!
//! With an idempotency key (REST `Idempotency-Key`), a live call is recorded
//! in the store before it is sent: a retry with the same key returns the first
//! outcome and never executes twice. The key is also passed to the agent,
//! which is what makes the two recovery paths safe: when the terminal did not
//! answer (outcome unknown) the claim is released so that a retry runs again,
//! and a claim left unfinished by a process that died is taken over after
//! [`ABANDONED_CLAIM_MS`]; in both cases an agent that already executed the
//! request returns its first result instead of executing twice.

use futures_util::future::try_join3;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tradeterm_core::account::OrderType;
use tradeterm_core::trading::{
    self, OrderParams, check_close_volume, check_free_margin, margin_level, risk_at_stop, round_volume, validate_order,
    validate_position_levels,
};
use tradeterm_core::{AccountInfo, Position, Side, SymbolSpec, Tick};
use tradeterm_protocol::agent::{OrderRequest, TradeResult};
use tradeterm_protocol::{Command, CommandResult};
use tradeterm_store::IdempotencyBegin;

use crate::account::position;
use crate::context::unexpected;
use crate::market::check_symbol;
use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

const TRADE_ANNOTATIONS: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Longest order comment MetaTrader keeps.
pub const MAX_COMMENT: usize = 31;

fn finite_positive(name: &str, v: Option<f64>) -> Result<(), ToolError> {
    match v {
        Some(x) if !x.is_finite() || x < 0.0 => Err(ToolError::InvalidInput(format!(
            "`{name}` must be a finite, non-negative price"
        ))),
        _ => Ok(()),
    }
}

fn check_comment(c: &str) -> Result<(), ToolError> {
    if c.chars().count() > MAX_COMMENT {
        return Err(ToolError::InvalidInput(format!(
            "`comment` may have at most {MAX_COMMENT} characters"
        )));
    }
    if c.chars().any(char::is_control) {
        return Err(ToolError::InvalidInput(
            "`comment` may not contain control characters".into(),
        ));
    }
    Ok(())
}

/// Symbol spec, quote and account, fetched concurrently.
struct Market {
    spec: SymbolSpec,
    tick: Tick,
    account: AccountInfo,
}

async fn market(ctx: &ToolContext, symbol: &str) -> Result<Market, ToolError> {
    let (spec, tick, account) = try_join3(ctx.spec(symbol), ctx.tick(symbol), ctx.account()).await?;
    Ok(Market { spec, tick, account })
}

/// Rate converting `from` into the account currency (see
/// [`ToolContext::rate_to_account`]).
async fn rate_to_account(ctx: &ToolContext, from: &str, m: &Market) -> Option<f64> {
    ctx.rate_to_account(from, &m.account.currency, &m.spec, &m.tick).await
}

/// A stop-loss or take-profit level with its distance and money value.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LevelInfo {
    /// Price of the level.
    pub price: f64,
    /// Distance from the entry (or current close price), in points.
    pub distance_points: f64,
    /// Money at the level in the account currency: negative for a loss (stop
    /// loss), positive for a gain; `null` when no quote converts the profit
    /// currency to the account currency.
    pub money: Option<f64>,
}

fn level_info(spec: &SymbolSpec, side: Side, volume: f64, entry: f64, level: f64, rate: Option<f64>) -> LevelInfo {
    let distance = if spec.point > 0.0 {
        ((level - entry).abs() / spec.point).round()
    } else {
        0.0
    };
    LevelInfo {
        price: level,
        distance_points: distance,
        money: rate.map(|r| trading::profit(spec, side, volume, entry, level, r)),
    }
}

/// Input of `place_order`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaceOrderInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// `BUY` or `SELL` (market), `BUY_LIMIT`, `SELL_LIMIT`, `BUY_STOP`, `SELL_STOP` (pending).
    pub order_type: OrderType,
    /// Volume in lots (must respect the symbol's minimum, maximum and step).
    pub volume: f64,
    /// Trigger price, required for pending orders; ignored for market orders.
    #[serde(default)]
    pub price: Option<f64>,
    /// Stop-loss price.
    #[serde(default)]
    pub stop_loss: Option<f64>,
    /// Take-profit price.
    #[serde(default)]
    pub take_profit: Option<f64>,
    /// Maximum slippage for market orders, in points.
    #[serde(default)]
    pub deviation_points: Option<u32>,
    /// Order comment (at most 31 characters; dots allowed).
    #[serde(default)]
    pub comment: Option<String>,
    /// Expert magic number.
    #[serde(default)]
    pub magic: Option<u64>,
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
    /// The terminal's trade result (live only).
    pub trade: Option<TradeResult>,
    /// Remarks (ignored fields, unknown conversions).
    pub notes: Vec<String>,
}

async fn place_order(ctx: ToolContext, input: PlaceOrderInput) -> Result<OrderOutcome, ToolError> {
    check_symbol(&input.symbol)?;
    if !input.volume.is_finite() || input.volume <= 0.0 {
        return Err(ToolError::InvalidInput(
            "`volume` must be a positive number of lots".into(),
        ));
    }
    finite_positive("price", input.price)?;
    finite_positive("stop_loss", input.stop_loss)?;
    finite_positive("take_profit", input.take_profit)?;
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

    let m = market(&ctx, &input.symbol).await?;
    let params = OrderParams {
        order_type: input.order_type,
        volume: input.volume,
        price: if input.order_type.is_market() {
            None
        } else {
            input.price
        },
        stop_loss: input.stop_loss,
        take_profit: input.take_profit,
    };
    // The terminal's clock decides whether the market is open.
    validate_order(&m.spec, &m.tick, &params, m.tick.time)?;
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
    };
    let check = match ctx.run(Command::OrderCheck { order: request.clone() }).await? {
        CommandResult::OrderCheck(c) => c,
        other => return Err(unexpected("order_check", &other)),
    };
    if !check.valid {
        return Err(ToolError::Rejected {
            retcode: check.retcode,
            message: check.comment,
        });
    }
    check_free_margin(m.account.free_margin, check.margin, &m.account.currency)?;

    let side = input.order_type.side();
    let entry = check.price;
    let rate = rate_to_account(&ctx, &m.spec.currency_profit, &m).await;
    if rate.is_none() {
        notes.push(format!(
            "no quote converts {} to {}: money values at SL/TP are not given",
            m.spec.currency_profit, m.account.currency
        ));
    }
    let sl = trading::level(input.stop_loss).map(|p| level_info(&m.spec, side, input.volume, entry, p, rate));
    let tp = trading::level(input.take_profit).map(|p| level_info(&m.spec, side, input.volume, entry, p, rate));
    let reward_to_risk = match (&sl, &tp, rate) {
        (Some(_), Some(_), Some(r)) => {
            let risk = risk_at_stop(
                &m.spec,
                side,
                input.volume,
                entry,
                sl.as_ref().map_or(entry, |l| l.price),
                r,
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
        account_currency: m.account.currency.clone(),
        margin_required: check.margin,
        free_margin: m.account.free_margin,
        free_margin_after: check.free_margin_after,
        margin_level_after: check
            .margin_level_after
            .or_else(|| margin_level(m.account.equity, m.account.margin + check.margin)),
        stop_loss: sl,
        take_profit: tp,
        reward_to_risk,
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
            CommandResult::Trade(t) => t,
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

/// Age after which an unfinished idempotency claim is presumed abandoned:
/// longer than the longest dispatch timeout (120 s) with a wide margin.
pub(crate) const ABANDONED_CLAIM_MS: i64 = 5 * 60 * 1000;

/// Runs a live operation once per idempotency key: the first call executes
/// and records its outcome; later calls with the same key and input get the
/// recorded outcome; the same key with other input is a conflict.
async fn idempotent<I, O, Fut>(ctx: &ToolContext, tool: &str, input: &I, run: Fut) -> Result<O, ToolError>
where
    I: Serialize,
    O: Serialize + DeserializeOwned,
    Fut: std::future::Future<Output = Result<O, ToolError>>,
{
    let Some(key) = ctx.idempotency_key.as_deref() else {
        return run.await;
    };
    if key.is_empty() || key.len() > 255 || key.chars().any(char::is_control) {
        return Err(ToolError::InvalidInput(
            "Idempotency-Key must be 1-255 printable characters".into(),
        ));
    }
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(serde_json::to_vec(input).unwrap_or_default());
    hasher.update([0]);
    hasher.update(ctx.terminal_id.as_deref().unwrap_or_default().as_bytes());
    let hash = hex::encode(hasher.finalize());
    match ctx
        .services
        .store
        .idempotency_begin(&ctx.license_id, key, &hash)
        .await?
    {
        IdempotencyBegin::Started => {}
        IdempotencyBegin::InProgress => {
            // A claim older than any dispatch can last belongs to a process
            // that died before recording the outcome: take it over and run
            // again. The key also travels to the agent, which returns the
            // first result instead of executing twice if the order went out.
            let abandoned_before = ctx.now_ms - ABANDONED_CLAIM_MS;
            if !ctx
                .services
                .store
                .idempotency_resume(&ctx.license_id, key, &hash, abandoned_before)
                .await?
            {
                return Err(ToolError::Conflict(
                    "a request with this Idempotency-Key is still in progress; retry later".into(),
                ));
            }
            tracing::warn!(license = %ctx.license_id, tool, "resuming an abandoned idempotent request");
        }
        IdempotencyBegin::Mismatch => {
            return Err(ToolError::Conflict(
                "this Idempotency-Key was already used with a different request".into(),
            ));
        }
        IdempotencyBegin::Done { status, response } => {
            return replay(status, response);
        }
    }
    let result = run.await;
    if let Err(ToolError::Dispatch(_) | ToolError::Gateway(_) | ToolError::Internal(_)) = &result {
        // The outcome is unknown (the terminal may have executed without
        // answering): record nothing, so a retry with the same key runs again
        // and the agent, which got the key too, returns the first result
        // instead of executing twice.
        if let Err(e) = ctx.services.store.idempotency_release(&ctx.license_id, key).await {
            tracing::error!(error = %e, "could not release an idempotency claim");
        }
        return result;
    }
    let (status, stored) = match &result {
        Ok(v) => (200, serde_json::json!({ "ok": v })),
        Err(e) => (
            e.http_status(),
            serde_json::json!({ "error": { "code": e.code(), "message": e.to_string(), "retcode": match e {
                ToolError::Rejected { retcode, .. } => Some(retcode.clone()),
                _ => None,
            } } }),
        ),
    };
    if let Err(e) = ctx
        .services
        .store
        .idempotency_finish(&ctx.license_id, key, status, &stored)
        .await
    {
        tracing::error!(error = %e, "could not record the idempotent outcome");
    }
    result
}

fn replay<O: DeserializeOwned>(status: u16, response: serde_json::Value) -> Result<O, ToolError> {
    if status == 200 {
        return serde_json::from_value(response["ok"].clone())
            .map_err(|e| ToolError::Internal(format!("stored idempotent outcome unreadable: {e}")));
    }
    let message = response["error"]["message"].as_str().unwrap_or("failed").to_owned();
    Err(match response["error"]["code"].as_str().unwrap_or_default() {
        "ORDER_REJECTED" => ToolError::Rejected {
            retcode: response["error"]["retcode"].as_str().unwrap_or("rejected").to_owned(),
            message,
        },
        "TRADING_DISABLED" => ToolError::TradingDisabled(message),
        "NOT_FOUND" => ToolError::NotFound(message),
        "VALIDATION_ERROR" => ToolError::InvalidInput(message),
        "GATEWAY_ERROR" => ToolError::Gateway(message),
        _ => ToolError::Dispatch(message),
    })
}

/// Input of `close_position`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClosePositionInput {
    /// Position ticket.
    pub ticket: u64,
    /// Lots to close; the whole position when absent.
    #[serde(default)]
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

async fn close_position(ctx: ToolContext, input: ClosePositionInput) -> Result<CloseOutcome, ToolError> {
    if let Some(v) = input.volume
        && (!v.is_finite() || v <= 0.0)
    {
        return Err(ToolError::InvalidInput(
            "`volume` must be a positive number of lots".into(),
        ));
    }
    let live = ctx.is_live(input.dry_run);
    let pos: Position = position(&ctx, input.ticket).await?;
    let m = market(&ctx, &pos.symbol).await?;
    let volume = input.volume.unwrap_or(pos.volume);
    check_close_volume(&m.spec, pos.volume, volume)?;
    trading::check_market_open(&m.spec, m.tick.time)?;
    let price = trading::close_price(pos.side, &m.tick);
    let rate = rate_to_account(&ctx, &m.spec.currency_profit, &m).await;
    let mut outcome = CloseOutcome {
        dry_run: !live,
        executed: false,
        ticket: pos.ticket,
        symbol: pos.symbol.clone(),
        side: pos.side,
        volume,
        volume_remaining: round_volume(&m.spec, pos.volume - volume),
        price,
        profit: rate.map(|r| trading::profit(&m.spec, pos.side, volume, pos.open_price, price, r)),
        account_currency: m.account.currency.clone(),
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
            CommandResult::Trade(t) => t,
            other => return Err(unexpected("close_position", &other)),
        };
        outcome.executed = true;
        outcome.price = trade.price;
        outcome.profit = rate.map(|r| trading::profit(&m.spec, pos.side, volume, pos.open_price, trade.price, r));
        outcome.trade = Some(trade);
        Ok(outcome)
    })
    .await
}

/// Input of `modify_position`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModifyPositionInput {
    /// Position ticket.
    pub ticket: u64,
    /// New stop loss; absent keeps the current one, `0` removes it.
    #[serde(default)]
    pub stop_loss: Option<f64>,
    /// New take profit; absent keeps the current one, `0` removes it.
    #[serde(default)]
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

async fn modify_position(ctx: ToolContext, input: ModifyPositionInput) -> Result<ModifyOutcome, ToolError> {
    finite_positive("stop_loss", input.stop_loss)?;
    finite_positive("take_profit", input.take_profit)?;
    if input.stop_loss.is_none() && input.take_profit.is_none() {
        return Err(ToolError::InvalidInput(
            "give `stop_loss`, `take_profit` or both (0 removes a level)".into(),
        ));
    }
    let live = ctx.is_live(input.dry_run);
    let pos = position(&ctx, input.ticket).await?;
    let m = market(&ctx, &pos.symbol).await?;
    let sl = match input.stop_loss {
        Some(v) => trading::level(Some(v)),
        None => pos.stop_loss,
    };
    let tp = match input.take_profit {
        Some(v) => trading::level(Some(v)),
        None => pos.take_profit,
    };
    validate_position_levels(&m.spec, &m.tick, pos.side, sl, tp, m.tick.time)?;
    let rate = rate_to_account(&ctx, &m.spec.currency_profit, &m).await;
    let mut outcome = ModifyOutcome {
        dry_run: !live,
        executed: false,
        ticket: pos.ticket,
        symbol: pos.symbol.clone(),
        stop_loss_before: pos.stop_loss,
        take_profit_before: pos.take_profit,
        stop_loss: sl.map(|p| level_info(&m.spec, pos.side, pos.volume, pos.open_price, p, rate)),
        take_profit: tp.map(|p| level_info(&m.spec, pos.side, pos.volume, pos.open_price, p, rate)),
        account_currency: m.account.currency.clone(),
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
            CommandResult::Trade(t) => t,
            other => return Err(unexpected("modify_position", &other)),
        };
        outcome.executed = true;
        outcome.trade = Some(trade);
        Ok(outcome)
    })
    .await
}

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

async fn reverse_position(ctx: ToolContext, input: ReversePositionInput) -> Result<ReverseOutcome, ToolError> {
    let live = ctx.is_live(input.dry_run);
    let pos = position(&ctx, input.ticket).await?;
    let m = market(&ctx, &pos.symbol).await?;
    let new_type = match pos.side {
        Side::Buy => OrderType::Sell,
        Side::Sell => OrderType::Buy,
    };
    let params = OrderParams {
        order_type: new_type,
        volume: pos.volume,
        price: None,
        stop_loss: None,
        take_profit: None,
    };
    validate_order(&m.spec, &m.tick, &params, m.tick.time)?;
    let close_price = trading::close_price(pos.side, &m.tick);
    let open_price = trading::fill_price(new_type, &m.tick);
    let margin_rate = rate_to_account(&ctx, &m.spec.currency_margin, &m)
        .await
        .unwrap_or(f64::NAN);
    let margin = trading::margin_required(&m.spec, pos.volume, open_price, m.account.leverage, margin_rate);
    let rate = rate_to_account(&ctx, &m.spec.currency_profit, &m).await;
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
        profit: rate.map(|r| trading::profit(&m.spec, pos.side, pos.volume, pos.open_price, close_price, r)),
        margin_required: if margin.is_finite() { margin } else { 0.0 },
        account_currency: m.account.currency.clone(),
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

async fn cancel_order(ctx: ToolContext, input: CancelOrderInput) -> Result<CancelOutcome, ToolError> {
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
            CommandResult::Trade(t) => {
                outcome.executed = true;
                outcome.trade = Some(t);
                Ok(outcome)
            }
            other => Err(unexpected("cancel_order", &other)),
        }
    })
    .await
}

pub(crate) fn tools() -> Vec<Tool> {
    let spec = |name, title, description| ToolSpec {
        name,
        title,
        description,
        capability: Capability::Trade,
        gate: Gate::LiveOnly,
        target: Target::Terminal,
        annotations: TRADE_ANNOTATIONS,
    };
    vec![
        spec(
            "place_order",
            "Place an order",
            "Places a market (BUY/SELL) or pending (BUY_LIMIT, SELL_LIMIT, BUY_STOP, SELL_STOP) order with optional stop loss and take profit. DRY RUN BY DEFAULT: without `\"dry_run\": false` it only validates (volume limits and step, SL/TP side and distance, market open, margin) and reports the would-be fill price, margin, free margin after, and the loss/gain at SL/TP in the account currency. Live execution needs the trade capability and trading enabled on the terminal.",
        )
        .build(place_order),
        spec(
            "close_position",
            "Close a position",
            "Closes an open position fully, or partly with `volume`. DRY RUN BY DEFAULT: reports the would-be close price and realised profit; `\"dry_run\": false` closes for real.",
        )
        .build(close_position),
        spec(
            "modify_position",
            "Modify SL/TP",
            "Sets a position's stop loss and/or take profit (absent keeps the level, 0 removes it). DRY RUN BY DEFAULT: validates side and minimum distance and reports the money at each level; `\"dry_run\": false` modifies for real.",
        )
        .build(modify_position),
        spec(
            "reverse_position",
            "Reverse a position",
            "Closes a position and opens the same volume in the opposite direction in one call. DRY RUN BY DEFAULT: reports the would-be prices, realised profit and the new margin; `\"dry_run\": false` executes for real.",
        )
        .build(reverse_position),
        spec(
            "cancel_order",
            "Cancel a pending order",
            "Deletes a pending order. DRY RUN BY DEFAULT: checks the order exists; `\"dry_run\": false` cancels for real.",
        )
        .build(cancel_order),
    ]
}
