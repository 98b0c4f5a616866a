//! A human confirms live trades (`docs/mcp.md`, "Trade confirmation").
//!
//! An adapter whose caller is an AI client with a person behind it (MCP)
//! puts a [`Confirmer`] on the [`crate::Invocation`]. [`crate::invoke`]
//! then calls [`confirm`] for every **live** call of a `trade`-capability
//! tool (`"dry_run": false`, not forced to paper), after the key's scope, the
//! capability gate and the terminal, and before the handler:
//!
//! 1. the license's setting `mcp_trade_confirmation` (on by default) off →
//!    the call goes on unasked;
//! 2. the terminal's live-trading permission (`TRADING_DISABLED` before
//!    anyone is asked about a trade that cannot be sent);
//! 3. a client that cannot ask its user ([`TradeConfirmer::can_ask`]: no MCP
//!    elicitation capability) → `TRADE_NOT_CONFIRMED`, nothing sent;
//! 4. a [`TradeSummary`] (terminal, account, symbol, side, volume, order
//!    type, price, SL/TP, the money at risk at the stop computed by
//!    `tradeterm_core::trading::risk_at_stop`, as the dry run of
//!    `place_order` does) is put to the user; only an accept lets the call
//!    go on to its handler, which checks everything again. Decline, cancel,
//!    no answer within the confirmer's time limit, or a failed request →
//!    `TRADE_NOT_CONFIRMED`, nothing sent.
//!
//! A dry run never asks. The answer (or why nobody was asked) is noted on
//! the call's audit row, in `request.confirmation` (`crate::audit`).
//!
//! **Invariant:** nothing reaches the terminal's trade path before an
//! accept; the summary is read with read commands only and never fails the
//! call (what cannot be read is left out, with a note).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use tradeterm_core::{PendingOrder, Position, Side, SymbolSpec, Tick, trading};
use tradeterm_protocol::{Command, CommandResult};

use crate::{Tool, ToolContext, ToolError};

/// What the user answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfirmAnswer {
    /// Accepted: the trade goes on.
    Accept,
    /// Declined.
    Decline,
    /// Cancelled or dismissed.
    Cancel,
    /// No answer within the time limit.
    Timeout,
    /// The request could not be made or its answer not read (the detail is
    /// for the log and the audit row).
    Failed(String),
}

impl ConfirmAnswer {
    /// The answer's name in the audit row: `accept`, `decline`, `cancel`, `timeout`, `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
            Self::Timeout => "timeout",
            Self::Failed(_) => "failed",
        }
    }
}

/// Boxed future of an answer.
pub type AnswerFuture<'a> = Pin<Box<dyn Future<Output = ConfirmAnswer> + Send + 'a>>;

/// Asks the person behind a client to confirm one live trade.
pub trait TradeConfirmer: Send + Sync {
    /// Whether the client can ask its user at all (MCP: it declared the
    /// elicitation capability at `initialize`).
    fn can_ask(&self) -> bool;
    /// How long the user has to answer.
    fn timeout(&self) -> Duration;
    /// Puts `summary` to the user and waits for the answer, at most
    /// [`TradeConfirmer::timeout`].
    fn ask<'a>(&'a self, summary: &'a TradeSummary) -> AnswerFuture<'a>;
}

/// A [`TradeConfirmer`] on an [`crate::Invocation`].
#[derive(Clone)]
pub struct Confirmer(pub Arc<dyn TradeConfirmer>);

impl std::fmt::Debug for Confirmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confirmer")
            .field("can_ask", &self.0.can_ask())
            .field("timeout", &self.0.timeout())
            .finish()
    }
}

/// One order, position or pending order a trade acts on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TradeLeg {
    /// What happens: `open`, `close`, `modify`, `reverse`, `cancel`, `modify order`,
    /// `close by`, `trailing stop`, `breakeven`.
    pub action: &'static str,
    /// Ticket of the position or order acted on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket: Option<u64>,
    /// Instrument.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Direction of the exposure (for a close: of the position closed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// Order type (`BUY`, `SELL_LIMIT`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_type: Option<String>,
    /// Lots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<f64>,
    /// The order's price, or the market price a market order or close would get now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// Stop loss after the trade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_loss: Option<f64>,
    /// Take profit after the trade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub take_profit: Option<f64>,
    /// Money lost if the stop loss is hit, from the leg's price, account currency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub money_at_risk: Option<f64>,
    /// Floating profit a close realises, account currency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floating_pnl: Option<f64>,
}

/// What the user is asked to confirm.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TradeSummary {
    /// The tool called.
    pub tool: String,
    /// The terminal: its name and id.
    pub terminal: String,
    /// The account: login, server, currency and trade mode (`None` when it could not be read).
    pub account: Option<String>,
    /// Account currency.
    pub currency: Option<String>,
    /// What the trade does, one leg per order or position.
    pub legs: Vec<TradeLeg>,
    /// Money at risk of the whole trade at its stops (the larger leg of an
    /// OCO, since one cancels the other); `None` when unbounded or unknown.
    pub money_at_risk: Option<f64>,
    /// Things the user should know (no stop loss, what could not be read).
    pub notes: Vec<String>,
    /// Seconds the user has to answer.
    pub answer_within_secs: u64,
}

/// Legs listed one by one in the message (a bulk close lists more as a count).
const LEGS_SHOWN: usize = 10;

fn num(v: f64) -> String {
    // Prices and volumes as the terminal writes them: no float noise.
    let s = format!("{:.8}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_owned() }
}

fn money(v: f64, currency: Option<&str>) -> String {
    format!("{v:.2} {}", currency.unwrap_or_default()).trim_end().to_owned()
}

impl TradeLeg {
    fn line(&self, currency: Option<&str>) -> String {
        let mut parts = vec![self.action.to_uppercase()];
        if let Some(t) = &self.order_type {
            parts.push(t.clone());
        } else if let Some(side) = self.side {
            parts.push(format!("{side:?}").to_uppercase());
        }
        if let Some(v) = self.volume {
            parts.push(format!("{} lots", num(v)));
        }
        if let Some(s) = &self.symbol {
            parts.push(s.clone());
        }
        if let Some(t) = self.ticket {
            parts.push(format!("#{t}"));
        }
        if let Some(p) = self.price {
            parts.push(format!("at {}", num(p)));
        }
        let level = |v: Option<f64>| v.map_or_else(|| "none".to_owned(), num);
        if self.action != "cancel" && self.action != "close" && self.action != "close by" {
            parts.push(format!("SL {}", level(self.stop_loss)));
            parts.push(format!("TP {}", level(self.take_profit)));
        }
        if let Some(r) = self.money_at_risk {
            parts.push(format!("(risk at SL {})", money(r, currency)));
        }
        if let Some(p) = self.floating_pnl {
            parts.push(format!("(floating P&L {})", money(p, currency)));
        }
        parts.join(" ")
    }
}

impl TradeSummary {
    /// The message the user reads: short, one line per leg.
    pub fn message(&self) -> String {
        let currency = self.currency.as_deref();
        let mut text = format!("Confirm a LIVE trade ({}) on terminal {}", self.tool, self.terminal);
        if let Some(a) = &self.account {
            text.push_str(&format!(", account {a}"));
        }
        text.push_str(":\n");
        for leg in self.legs.iter().take(LEGS_SHOWN) {
            text.push_str(&format!("- {}\n", leg.line(currency)));
        }
        if self.legs.len() > LEGS_SHOWN {
            text.push_str(&format!("- and {} more\n", self.legs.len() - LEGS_SHOWN));
        }
        match self.money_at_risk {
            Some(r) => text.push_str(&format!("Money at risk at the stop loss: {}.\n", money(r, currency))),
            None if self.legs.iter().any(|l| l.action == "open" || l.action == "reverse") => {
                text.push_str("Money at risk: not bounded (no stop loss) or unknown.\n");
            }
            None => {}
        }
        for note in &self.notes {
            text.push_str(&format!("Note: {note}\n"));
        }
        text.push_str(&format!(
            "Accept to send it now; decline or cancel to send nothing. Without an answer within {} s nothing is sent.",
            self.answer_within_secs
        ));
        text
    }
}

/// The market of one symbol, read once per summary.
struct SymbolMarket {
    spec: SymbolSpec,
    tick: Tick,
    rate: Option<f64>,
}

struct Reader<'a> {
    ctx: &'a ToolContext,
    currency: Option<String>,
    markets: BTreeMap<String, Option<SymbolMarket>>,
    positions: Option<Option<Vec<Position>>>,
    orders: Option<Option<Vec<PendingOrder>>>,
    notes: Vec<String>,
}

impl Reader<'_> {
    async fn market(&mut self, symbol: &str) -> Option<&SymbolMarket> {
        if !self.markets.contains_key(symbol) {
            let read = match (self.ctx.spec(symbol).await, self.ctx.tick(symbol).await) {
                (Ok(spec), Ok(tick)) => {
                    let rate = match &self.currency {
                        Some(c) => self.ctx.rate_to_account(&spec.currency_profit, c, &spec, &tick).await,
                        None => None,
                    };
                    Some(SymbolMarket { spec, tick, rate })
                }
                _ => {
                    self.notes.push(format!("the market of {symbol} could not be read"));
                    None
                }
            };
            self.markets.insert(symbol.to_owned(), read);
        }
        self.markets.get(symbol).and_then(Option::as_ref)
    }

    async fn positions(&mut self) -> &[Position] {
        if self.positions.is_none() {
            let read = match self.ctx.run(Command::Positions { symbol: None }).await {
                Ok(CommandResult::Positions { positions }) => Some(positions),
                _ => {
                    self.notes.push("the open positions could not be read".into());
                    None
                }
            };
            self.positions = Some(read);
        }
        self.positions.as_ref().and_then(Option::as_deref).unwrap_or_default()
    }

    async fn orders(&mut self) -> &[PendingOrder] {
        if self.orders.is_none() {
            let read = match self.ctx.run(Command::Orders { symbol: None }).await {
                Ok(CommandResult::Orders { orders }) => Some(orders),
                _ => {
                    self.notes.push("the pending orders could not be read".into());
                    None
                }
            };
            self.orders = Some(read);
        }
        self.orders.as_ref().and_then(Option::as_deref).unwrap_or_default()
    }

    async fn position(&mut self, ticket: Option<u64>) -> Option<Position> {
        let ticket = ticket?;
        let found = self.positions().await.iter().find(|p| p.ticket == ticket).cloned();
        if found.is_none() {
            self.notes.push(format!("no open position #{ticket} was found"));
        }
        found
    }

    async fn order(&mut self, ticket: Option<u64>) -> Option<PendingOrder> {
        let ticket = ticket?;
        let found = self.orders().await.iter().find(|o| o.ticket == ticket).cloned();
        if found.is_none() {
            self.notes.push(format!("no pending order #{ticket} was found"));
        }
        found
    }

    /// The loss at `stop_loss` of `volume` lots entered at `entry`.
    async fn risk(&mut self, symbol: &str, side: Side, volume: f64, entry: f64, stop_loss: Option<f64>) -> Option<f64> {
        let sl = trading::level(stop_loss)?;
        let m = self.market(symbol).await?;
        let rate = m.rate?;
        Some(trading::risk_at_stop(&m.spec, side, volume, entry, sl, rate))
    }

    /// An order to open, from an input object (`place_order`, a bracket, an OCO leg).
    async fn open_leg(&mut self, input: &Value) -> TradeLeg {
        let symbol = input["symbol"].as_str().map(str::to_owned);
        let order_type = input["order_type"].as_str().map(str::to_owned);
        let side = order_type.as_deref().and_then(|t| {
            if t.starts_with("BUY") {
                Some(Side::Buy)
            } else if t.starts_with("SELL") {
                Some(Side::Sell)
            } else {
                None
            }
        });
        let volume = input["volume"].as_f64();
        let market = matches!(order_type.as_deref(), Some("BUY" | "SELL"));
        let mut price = input["price"].as_f64().filter(|_| !market);
        if price.is_none()
            && let (Some(s), Some(side)) = (&symbol, side)
            && let Some(m) = self.market(s).await
        {
            price = Some(match side {
                Side::Buy => m.tick.ask,
                Side::Sell => m.tick.bid,
            });
        }
        let stop_loss = input["stop_loss"].as_f64();
        let take_profit = input["take_profit"].as_f64().or_else(|| {
            // A bracket's first target.
            input["targets"].get(0).and_then(|t| t["price"].as_f64())
        });
        let money_at_risk = match (&symbol, side, volume, price) {
            (Some(s), Some(side), Some(v), Some(p)) => self.risk(s, side, v, p, stop_loss).await,
            _ => None,
        };
        if trading::level(stop_loss).is_none() {
            self.notes.push(format!(
                "the {} order has no stop loss: its loss is not bounded",
                symbol.as_deref().unwrap_or("new")
            ));
        }
        TradeLeg {
            action: "open",
            symbol,
            side,
            order_type,
            volume,
            price,
            stop_loss,
            take_profit,
            money_at_risk,
            ..TradeLeg::default()
        }
    }

    fn position_leg(action: &'static str, p: &Position) -> TradeLeg {
        TradeLeg {
            action,
            ticket: Some(p.ticket),
            symbol: Some(p.symbol.clone()),
            side: Some(p.side),
            volume: Some(p.volume),
            price: Some(p.current_price),
            stop_loss: p.stop_loss,
            take_profit: p.take_profit,
            ..TradeLeg::default()
        }
    }

    fn order_leg(action: &'static str, o: &PendingOrder) -> TradeLeg {
        TradeLeg {
            action,
            ticket: Some(o.ticket),
            symbol: Some(o.symbol.clone()),
            side: Some(o.order_type.side()),
            order_type: serde_json::to_value(o.order_type)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned)),
            volume: Some(o.volume),
            price: Some(o.price),
            stop_loss: o.stop_loss,
            take_profit: o.take_profit,
            ..TradeLeg::default()
        }
    }

    /// The legs of a call of `tool` with `input`.
    async fn legs(&mut self, tool: &str, input: &Value) -> Vec<TradeLeg> {
        let ticket = input["ticket"].as_u64();
        let unknown = |action: &'static str| TradeLeg {
            action,
            ticket,
            ..TradeLeg::default()
        };
        match tool {
            "place_order" | "place_bracket" => vec![self.open_leg(input).await],
            "place_oco" => vec![
                self.open_leg(&input["first"]).await,
                self.open_leg(&input["second"]).await,
            ],
            "close_position" => match self.position(ticket).await {
                Some(p) => {
                    let mut leg = Self::position_leg("close", &p);
                    let volume = input["volume"].as_f64().unwrap_or(p.volume);
                    leg.volume = Some(volume);
                    leg.floating_pnl = (p.volume > 0.0).then(|| (p.profit + p.swap) * volume / p.volume);
                    vec![leg]
                }
                None => vec![unknown("close")],
            },
            "modify_position" => match self.position(ticket).await {
                Some(p) => {
                    let mut leg = Self::position_leg("modify", &p);
                    if input.get("stop_loss").is_some() {
                        leg.stop_loss = input["stop_loss"].as_f64();
                    }
                    if input.get("take_profit").is_some() {
                        leg.take_profit = input["take_profit"].as_f64();
                    }
                    leg.money_at_risk = self
                        .risk(&p.symbol, p.side, p.volume, p.current_price, leg.stop_loss)
                        .await;
                    vec![leg]
                }
                None => vec![unknown("modify")],
            },
            "reverse_position" => match self.position(ticket).await {
                Some(p) => {
                    let mut close = Self::position_leg("close", &p);
                    close.floating_pnl = Some(p.profit + p.swap);
                    let open = TradeLeg {
                        action: "reverse",
                        symbol: Some(p.symbol.clone()),
                        side: Some(p.side.opposite()),
                        volume: Some(p.volume),
                        ..TradeLeg::default()
                    };
                    self.notes
                        .push("the reversed position opens without a stop loss: its loss is not bounded".into());
                    vec![close, open]
                }
                None => vec![unknown("reverse")],
            },
            "close_by" => {
                let mut legs = Vec::new();
                for t in [ticket, input["ticket_by"].as_u64()] {
                    match self.position(t).await {
                        Some(p) => legs.push(Self::position_leg("close by", &p)),
                        None => legs.push(TradeLeg {
                            action: "close by",
                            ticket: t,
                            ..TradeLeg::default()
                        }),
                    }
                }
                legs
            }
            "set_trailing_stop" | "set_breakeven" => {
                let action = if tool == "set_trailing_stop" {
                    "trailing stop"
                } else {
                    "breakeven"
                };
                self.notes.push(format!(
                    "the server will move this position's stop loss by itself ({action} rule)"
                ));
                match self.position(ticket).await {
                    Some(p) => vec![Self::position_leg(action, &p)],
                    None => vec![unknown(action)],
                }
            }
            "cancel_order" => match self.order(ticket).await {
                Some(o) => vec![Self::order_leg("cancel", &o)],
                None => vec![unknown("cancel")],
            },
            "modify_order" => match self.order(ticket).await {
                Some(o) => {
                    let mut leg = Self::order_leg("modify order", &o);
                    for (field, slot) in [
                        ("price", &mut leg.price),
                        ("stop_loss", &mut leg.stop_loss),
                        ("take_profit", &mut leg.take_profit),
                    ] {
                        if let Some(v) = input[field].as_f64() {
                            *slot = Some(v);
                        }
                    }
                    if let Some(price) = leg.price {
                        leg.money_at_risk = self
                            .risk(&o.symbol, o.order_type.side(), o.volume, price, leg.stop_loss)
                            .await;
                    }
                    vec![leg]
                }
                None => vec![unknown("modify order")],
            },
            "close_all_positions" => {
                let (symbol, side, magic) = filters(input);
                let profit = input["profit"].as_str().map(str::to_owned);
                let mut legs = Vec::new();
                for p in self.positions().await {
                    let pnl = p.profit + p.swap;
                    let by_profit = match profit.as_deref() {
                        Some("winners") => pnl > 0.0,
                        Some("losers") => pnl < 0.0,
                        _ => true,
                    };
                    if matches(&symbol, side, magic, &p.symbol, p.side, p.magic) && by_profit {
                        let mut leg = Self::position_leg("close", p);
                        leg.floating_pnl = Some(pnl);
                        legs.push(leg);
                    }
                }
                if legs.is_empty() {
                    self.notes.push("no open position matches the filters now".into());
                }
                legs
            }
            "cancel_all_orders" => {
                let (symbol, side, magic) = filters(input);
                let legs: Vec<TradeLeg> = self
                    .orders()
                    .await
                    .iter()
                    .filter(|o| matches(&symbol, side, magic, &o.symbol, o.order_type.side(), o.magic))
                    .map(|o| Self::order_leg("cancel", o))
                    .collect();
                if legs.is_empty() {
                    self.notes.push("no pending order matches the filters now".into());
                }
                legs
            }
            _ => vec![TradeLeg {
                action: "trade",
                ticket,
                symbol: input["symbol"].as_str().map(str::to_owned),
                volume: input["volume"].as_f64(),
                ..TradeLeg::default()
            }],
        }
    }
}

/// The `symbol`, `side` and `magic` filters of a bulk call.
fn filters(input: &Value) -> (Option<String>, Option<Side>, Option<u64>) {
    let side = match input["side"].as_str() {
        Some("buy") => Some(Side::Buy),
        Some("sell") => Some(Side::Sell),
        _ => None,
    };
    (
        input["symbol"].as_str().map(str::to_owned),
        side,
        input["magic"].as_u64(),
    )
}

fn matches(symbol: &Option<String>, side: Option<Side>, magic: Option<u64>, s: &str, d: Side, m: u64) -> bool {
    symbol.as_deref().is_none_or(|x| x.eq_ignore_ascii_case(s))
        && side.is_none_or(|x| x == d)
        && magic.is_none_or(|x| x == m)
}

/// The summary of a live call of `tool` with `input`, read from the
/// terminal (read commands only; what cannot be read is noted).
pub async fn summarise(ctx: &ToolContext, tool: &Tool, input: &Value, answer_within: Duration) -> TradeSummary {
    let terminal_id = ctx.terminal_id.clone().unwrap_or_default();
    let name = match ctx.services.store.terminal(&ctx.license_id, &terminal_id).await {
        Ok(Some(t)) => Some(t.name),
        _ => None,
    };
    let terminal = match name {
        Some(n) => format!("{n} ({terminal_id})"),
        None => terminal_id,
    };
    let mut notes = Vec::new();
    let account = match ctx.account().await {
        Ok(a) => Some(a),
        Err(_) => {
            notes.push("the account could not be read".to_owned());
            None
        }
    };
    let mut reader = Reader {
        ctx,
        currency: account.as_ref().map(|a| a.currency.clone()),
        markets: BTreeMap::new(),
        positions: None,
        orders: None,
        notes,
    };
    let legs = reader.legs(tool.name, input).await;
    let opening: Vec<&TradeLeg> = legs
        .iter()
        .filter(|l| matches!(l.action, "open" | "modify" | "modify order" | "reverse"))
        .collect();
    let money_at_risk = if opening.is_empty() || opening.iter().any(|l| l.money_at_risk.is_none()) {
        None
    } else if tool.name == "place_oco" {
        opening.iter().filter_map(|l| l.money_at_risk).reduce(f64::max)
    } else {
        Some(opening.iter().filter_map(|l| l.money_at_risk).sum())
    };
    TradeSummary {
        tool: tool.name.to_owned(),
        terminal,
        account: account.as_ref().map(|a| {
            let mode = serde_json::to_value(a.trade_mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{} on {} ({}, {mode})", a.login, a.server, a.currency)
        }),
        currency: account.map(|a| a.currency),
        legs,
        money_at_risk,
        notes: reader.notes,
        answer_within_secs: answer_within.as_secs(),
    }
}

/// A refusal naming the answer.
fn refused(answer: &ConfirmAnswer, within: Duration) -> ToolError {
    let why = match answer {
        ConfirmAnswer::Accept => "it was accepted",
        ConfirmAnswer::Decline => "the user declined it",
        ConfirmAnswer::Cancel => "the user cancelled the confirmation",
        ConfirmAnswer::Timeout => "the user did not answer in time",
        ConfirmAnswer::Failed(_) => "the confirmation request failed",
    };
    let mut message = format!("this live trade was not confirmed ({why}): nothing was sent");
    if *answer == ConfirmAnswer::Timeout {
        message.push_str(&format!(" (the limit is {} s)", within.as_secs()));
    }
    message.push_str("; ask the user again, or make it a dry run");
    ToolError::NotConfirmed(message)
}

/// Asks for the confirmation of a live call of `tool` (see the module
/// documentation); `Ok` lets the call go on to its handler.
pub(crate) async fn confirm(
    confirmer: &Confirmer,
    tool: &Tool,
    ctx: &ToolContext,
    input: &Value,
) -> Result<(), ToolError> {
    let settings = ctx.services.store.license_settings(&ctx.license_id).await?;
    if !settings.mcp_trade_confirmation {
        crate::audit::note_confirmation(json!({ "required": false }));
        return Ok(());
    }
    ctx.ensure_live_allowed().await?;
    let confirmer = &confirmer.0;
    let within = confirmer.timeout();
    if !confirmer.can_ask() {
        crate::audit::note_confirmation(json!({ "required": true, "asked": false, "answer": "unsupported" }));
        return Err(ToolError::NotConfirmed(
            "live trades from this MCP client need a human's confirmation, and the client did not declare the MCP \
             elicitation capability, so it cannot be asked: nothing was sent. Dry runs still work. Use an MCP client \
             that supports elicitation, or the license owner can turn MCP trade confirmation off \
             (PUT /api/dashboard/license-settings on the gateway)"
                .into(),
        ));
    }
    let summary = summarise(ctx, tool, input, within).await;
    let started = Instant::now();
    // The confirmer keeps its own limit; this one only guards against one that does not.
    let answer = tokio::time::timeout(within + Duration::from_secs(5), confirmer.ask(&summary))
        .await
        .unwrap_or(ConfirmAnswer::Timeout);
    let waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut note = json!({
        "required": true,
        "asked": true,
        "answer": answer.as_str(),
        "waited_ms": waited_ms,
        "summary": summary.message(),
    });
    if let Some(r) = summary.money_at_risk {
        note["money_at_risk"] = json!(r);
    }
    if let ConfirmAnswer::Failed(detail) = &answer {
        tracing::warn!(error = %detail, tool = tool.name, "the trade confirmation request failed");
        note["error"] = json!(detail);
    }
    tracing::info!(
        tool = tool.name,
        answer = answer.as_str(),
        waited_ms,
        "live trade confirmation answered"
    );
    crate::audit::note_confirmation(note);
    match answer {
        ConfirmAnswer::Accept => Ok(()),
        other => Err(refused(&other, within)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_says_what_is_sent_and_what_is_at_risk() {
        let summary = TradeSummary {
            tool: "place_order".into(),
            terminal: "Demo 1 (term_a)".into(),
            account: Some("5001 on Sim-Demo (USD, demo)".into()),
            currency: Some("USD".into()),
            legs: vec![TradeLeg {
                action: "open",
                symbol: Some("EURUSD".into()),
                side: Some(Side::Buy),
                order_type: Some("BUY".into()),
                volume: Some(0.1),
                price: Some(1.085_12),
                stop_loss: Some(1.08),
                money_at_risk: Some(51.2),
                ..TradeLeg::default()
            }],
            money_at_risk: Some(51.2),
            notes: vec![],
            answer_within_secs: 120,
        };
        let text = summary.message();
        for part in [
            "LIVE trade (place_order) on terminal Demo 1 (term_a), account 5001 on Sim-Demo (USD, demo)",
            "OPEN BUY 0.1 lots EURUSD at 1.08512 SL 1.08 TP none (risk at SL 51.20 USD)",
            "Money at risk at the stop loss: 51.20 USD.",
            "within 120 s",
        ] {
            assert!(text.contains(part), "`{part}` missing from:\n{text}");
        }
    }

    #[test]
    fn refusals_name_the_answer_and_send_nothing() {
        for (answer, word) in [
            (ConfirmAnswer::Decline, "declined"),
            (ConfirmAnswer::Cancel, "cancelled"),
            (ConfirmAnswer::Timeout, "120 s"),
            (ConfirmAnswer::Failed("gone".into()), "failed"),
        ] {
            let e = refused(&answer, Duration::from_secs(120));
            assert_eq!(e.code(), "TRADE_NOT_CONFIRMED");
            assert!(
                e.to_string().contains(word) && e.to_string().contains("nothing was sent"),
                "{e}"
            );
        }
    }

    #[test]
    fn bulk_filters_match_like_the_bulk_tools() {
        let (symbol, side, magic) = filters(&json!({ "symbol": "eurusd", "side": "sell" }));
        assert!(matches(&symbol, side, magic, "EURUSD", Side::Sell, 7));
        assert!(!matches(&symbol, side, magic, "EURUSD", Side::Buy, 7));
        assert!(!matches(&symbol, side, magic, "GBPUSD", Side::Sell, 7));
        assert_eq!(num(1.10000000001), "1.1");
        assert_eq!(num(0.01), "0.01");
    }
}
