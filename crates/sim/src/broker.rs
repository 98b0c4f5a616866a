//! The simulated trade server: account, positions, pending orders, fills,
//! SL/TP, swaps, history and idempotency.
//!
//! Fill rules (documented for users in `docs/simulator.md`):
//! - market orders fill at the current ask (buys) or bid (sells), without
//!   slippage; closes fill at the bid (longs) or ask (shorts);
//! - pending orders, stop losses and take profits are checked on every tick
//!   of their symbol (buy limit: ask ≤ price; buy stop: ask ≥ price; sell
//!   limit: bid ≥ price; sell stop: bid ≤ price; a long's SL/TP look at the
//!   bid, a short's at the ask) and fill at their own price when the market
//!   traded through it continuously, or at the first price after a gap (the
//!   first tick after a weekend or daily break), which is worse for stops and
//!   better for limits and take profits;
//! - margin is checked when an order is placed and again when a pending order
//!   triggers (a trigger without money is rejected and leaves the history
//!   with state `rejected`).

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use tradeterm_core::account::{DealEntry, ExpirationMode, FillingMode, OrderType, PendingOrder, Position, Side};
use tradeterm_core::time::weekday;
use tradeterm_core::trading::{self, OrderParams, Rejection, retcode};
use tradeterm_core::{AccountInfo, Deal, SymbolSpec, Tick, TradeMode};
use tradeterm_protocol::agent::{
    CommandResult, ErrorBody, HistoryOrder, OrderCheck, OrderRequest, OrderState, TradeResult, TransactionKind, codes,
};

use crate::book;
use crate::market::Market;

/// Deals and finished orders kept (oldest dropped first).
pub(crate) const MAX_HISTORY: usize = 200_000;
/// Idempotency keys remembered (oldest forgotten first).
const MAX_IDEMPOTENCY_KEYS: usize = 10_000;
/// Undelivered events kept for the agent (oldest dropped first).
const MAX_EVENTS: usize = 10_000;
/// MetaTrader's comment length.
pub(crate) const COMMENT_MAX: usize = 31;
/// Longest idempotency key accepted.
const KEY_MAX: usize = 128;

/// Something the agent should push to the gateway.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SimEvent {
    /// A trade transaction.
    Trade {
        transaction: TransactionKind,
        deal: Option<Deal>,
        order: u64,
        position: u64,
        /// How a removed order ended.
        order_state: Option<OrderState>,
        /// Volume left in the position afterwards (deals and modifications).
        position_volume: Option<f64>,
    },
    /// Balance, equity or margin changed beyond price moves.
    Account,
}

/// The account's fixed identity.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AccountSetup {
    pub login: u64,
    pub name: String,
    pub server: String,
    pub company: String,
    pub currency: String,
    pub leverage: u32,
    pub trade_mode: TradeMode,
    /// Hedging account (positions are separate; close-by works); else
    /// netting (one position per symbol, fills add to or reduce it).
    pub hedging: bool,
}

/// An open position as the broker stores it (prices and profit are derived).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Pos {
    ticket: u64,
    symbol: String,
    side: Side,
    volume: f64,
    open_price: f64,
    open_time: i64,
    stop_loss: Option<f64>,
    take_profit: Option<f64>,
    swap: f64,
    magic: u64,
    comment: String,
}

#[derive(Debug, Clone, Serialize)]
struct IdemEntry {
    fingerprint: String,
    outcome: Result<CommandResult, ErrorBody>,
}

/// The trade server's state.
#[derive(Debug, Serialize)]
pub(crate) struct Broker {
    setup: AccountSetup,
    balance: f64,
    positions: Vec<Pos>,
    orders: Vec<PendingOrder>,
    deals: VecDeque<Deal>,
    history: VecDeque<HistoryOrder>,
    next_order: u64,
    next_deal: u64,
    idempotency: BTreeMap<String, IdemEntry>,
    idempotency_order: VecDeque<String>,
    #[serde(skip)]
    events: VecDeque<SimEvent>,
}

fn rejected(r: Rejection) -> ErrorBody {
    ErrorBody::rejected(r.retcode, r.message)
}

/// Rounds money to cents.
fn money(x: f64) -> f64 {
    if x.is_finite() {
        (x * 100.0).round() / 100.0
    } else {
        0.0
    }
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

fn truncate_comment(c: &str) -> String {
    c.chars().filter(|ch| !ch.is_control()).take(COMMENT_MAX).collect()
}

fn params(req: &OrderRequest) -> OrderParams {
    OrderParams {
        order_type: req.order_type,
        volume: req.volume,
        price: req.price,
        stop_limit_price: req.stop_limit_price,
        stop_loss: req.stop_loss,
        take_profit: req.take_profit,
    }
}

/// The price a pending order's margin is computed at: the limit price of a
/// stop-limit order, the order price otherwise.
fn entry_price(req: &OrderRequest) -> f64 {
    if req.order_type.is_stop_limit() {
        req.stop_limit_price.unwrap_or_default()
    } else {
        req.price.unwrap_or_default()
    }
}

/// Checks what `validate_order` does not: a pending order's expiration and
/// an explicit filling policy; for market orders, chooses the filling.
fn check_terms(spec: &SymbolSpec, req: &OrderRequest, now: i64) -> Result<Option<FillingMode>, Rejection> {
    if req.order_type.is_market() {
        return trading::choose_filling(spec, req.filling);
    }
    trading::check_expiration(spec, req.expiration_mode.unwrap_or_default(), req.expiration, now)?;
    match req.filling {
        Some(_) => trading::choose_filling(spec, req.filling),
        None => Ok(None),
    }
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

fn market_type(side: Side) -> OrderType {
    match side {
        Side::Buy => OrderType::Buy,
        Side::Sell => OrderType::Sell,
    }
}

fn push_bounded<T>(q: &mut VecDeque<T>, item: T, max: usize) {
    if q.len() >= max {
        q.pop_front();
    }
    q.push_back(item);
}

fn unknown_symbol(symbol: &str) -> ErrorBody {
    ErrorBody::new(
        codes::NOT_FOUND,
        format!("unknown symbol `{symbol}`; the `symbols` command lists them"),
    )
}

fn no_quote(spec: &SymbolSpec) -> ErrorBody {
    rejected(Rejection::new(
        retcode::MARKET_CLOSED,
        format!("there is no quote for {} yet", spec.name),
    ))
}

/// Whether a pending order triggers on this quote.
fn triggers(o: &PendingOrder, t: &Tick, eps: f64) -> bool {
    match o.order_type {
        OrderType::BuyLimit => t.ask <= o.price + eps,
        OrderType::BuyStop => t.ask >= o.price - eps,
        OrderType::SellLimit => t.bid >= o.price - eps,
        OrderType::SellStop | OrderType::SellStopLimit => t.bid <= o.price + eps,
        OrderType::BuyStopLimit => t.ask >= o.price - eps,
        OrderType::Buy | OrderType::Sell => true,
        // Never pending: only the order history holds close-bys.
        OrderType::CloseBy => false,
    }
}

impl Broker {
    /// A fresh account holding `balance`, with the initial deposit as its first deal.
    pub(crate) fn new(setup: AccountSetup, balance: f64, now: i64) -> Self {
        let mut b = Self {
            setup,
            balance: money(balance),
            positions: Vec::new(),
            orders: Vec::new(),
            deals: VecDeque::new(),
            history: VecDeque::new(),
            next_order: 100_001,
            next_deal: 500_001,
            idempotency: BTreeMap::new(),
            idempotency_order: VecDeque::new(),
            events: VecDeque::new(),
        };
        let ticket = b.deal_ticket();
        b.deals.push_back(Deal {
            ticket,
            order: 0,
            position: 0,
            symbol: String::new(),
            side: Side::Buy,
            entry: DealEntry::Balance,
            volume: 0.0,
            price: 0.0,
            time: now,
            profit: money(balance),
            swap: 0.0,
            commission: 0.0,
            magic: 0,
            comment: "initial deposit".into(),
        });
        b
    }

    pub(crate) fn setup(&self) -> &AccountSetup {
        &self.setup
    }

    fn order_ticket(&mut self) -> u64 {
        let t = self.next_order;
        self.next_order += 1;
        t
    }

    fn deal_ticket(&mut self) -> u64 {
        let t = self.next_deal;
        self.next_deal += 1;
        t
    }

    fn emit(&mut self, e: SimEvent) {
        push_bounded(&mut self.events, e, MAX_EVENTS);
    }

    fn trade_event(&mut self, transaction: TransactionKind, deal: Option<Deal>, order: u64, position: u64) {
        self.trade_event_with(transaction, deal, order, position, None);
    }

    /// A trade transaction as MetaTrader 5 reports it: with the state of a
    /// removed order, and the volume left in the position of a deal or a
    /// modification (0 once closed), read after the change.
    fn trade_event_with(
        &mut self,
        transaction: TransactionKind,
        deal: Option<Deal>,
        order: u64,
        position: u64,
        order_state: Option<OrderState>,
    ) {
        let position_volume = match transaction {
            TransactionKind::DealAdded | TransactionKind::PositionModified if position != 0 => Some(
                self.positions
                    .iter()
                    .find(|p| p.ticket == position)
                    .map_or(0.0, |p| p.volume),
            ),
            _ => None,
        };
        self.emit(SimEvent::Trade {
            transaction,
            deal,
            order,
            position,
            order_state,
            position_volume,
        });
    }

    /// Takes the undelivered events.
    pub(crate) fn take_events(&mut self) -> Vec<SimEvent> {
        self.events.drain(..).collect()
    }

    fn rate(&self, m: &Market, ccy: &str) -> f64 {
        m.rate(ccy, &self.setup.currency).unwrap_or(1.0)
    }

    fn spec<'m>(m: &'m Market, symbol: &str) -> Result<(usize, &'m SymbolSpec), ErrorBody> {
        let idx = m.index(symbol).ok_or_else(|| unknown_symbol(symbol))?;
        Ok((idx, &m.feeds[idx].spec))
    }

    /// (current close price, floating profit) of a position.
    fn valuation(&self, m: &Market, p: &Pos) -> (f64, f64) {
        let Some(idx) = m.index(&p.symbol) else {
            return (p.open_price, 0.0);
        };
        let Some(tick) = m.tick(idx) else {
            return (p.open_price, 0.0);
        };
        let spec = &m.feeds[idx].spec;
        let price = trading::close_price(p.side, &tick);
        let rate = self.rate(m, &spec.currency_profit);
        (
            price,
            money(trading::profit(spec, p.side, p.volume, p.open_price, price, rate)),
        )
    }

    fn margin_of(&self, m: &Market, symbol: &str, volume: f64, price: f64) -> f64 {
        match m.index(symbol) {
            Some(idx) => {
                let spec = &m.feeds[idx].spec;
                let rate = self.rate(m, &spec.currency_margin);
                finite(trading::margin_required(spec, volume, price, self.setup.leverage, rate))
            }
            None => 0.0,
        }
    }

    /// The account now.
    pub(crate) fn account_info(&self, m: &Market) -> AccountInfo {
        let mut profit = 0.0;
        let mut swap = 0.0;
        let mut margin = 0.0;
        for p in &self.positions {
            profit += self.valuation(m, p).1;
            swap += p.swap;
            margin += self.margin_of(m, &p.symbol, p.volume, p.open_price);
        }
        let equity = money(self.balance + profit + swap);
        let margin = money(margin);
        AccountInfo {
            login: self.setup.login,
            name: self.setup.name.clone(),
            server: self.setup.server.clone(),
            company: self.setup.company.clone(),
            currency: self.setup.currency.clone(),
            leverage: self.setup.leverage,
            trade_mode: self.setup.trade_mode,
            balance: self.balance,
            equity,
            margin,
            free_margin: money(equity - margin),
            margin_level: trading::margin_level(equity, margin).map(money),
            profit: money(profit),
        }
    }

    /// Open positions, by ticket.
    pub(crate) fn positions(&self, m: &Market, symbol: Option<&str>) -> Vec<Position> {
        self.positions
            .iter()
            .filter(|p| symbol.is_none_or(|s| p.symbol.eq_ignore_ascii_case(s)))
            .map(|p| {
                let (current_price, profit) = self.valuation(m, p);
                Position {
                    ticket: p.ticket,
                    symbol: p.symbol.clone(),
                    side: p.side,
                    volume: p.volume,
                    open_price: p.open_price,
                    open_time: p.open_time,
                    stop_loss: p.stop_loss,
                    take_profit: p.take_profit,
                    current_price,
                    swap: p.swap,
                    commission: 0.0,
                    profit,
                    magic: p.magic,
                    comment: p.comment.clone(),
                }
            })
            .collect()
    }

    /// Pending orders, by ticket.
    pub(crate) fn orders(&self, symbol: Option<&str>) -> Vec<PendingOrder> {
        self.orders
            .iter()
            .filter(|o| symbol.is_none_or(|s| o.symbol.eq_ignore_ascii_case(s)))
            .cloned()
            .collect()
    }

    /// Deals with time in `[from, to)`, oldest first.
    pub(crate) fn deals(&self, from: i64, to: i64) -> Vec<Deal> {
        self.deals
            .iter()
            .filter(|d| d.time >= from && d.time < to)
            .cloned()
            .collect()
    }

    /// Finished orders completed in `[from, to)`, oldest first.
    pub(crate) fn history_orders(&self, from: i64, to: i64) -> Vec<HistoryOrder> {
        self.history
            .iter()
            .filter(|o| o.time_done >= from && o.time_done < to)
            .cloned()
            .collect()
    }

    fn record(&mut self, o: HistoryOrder) {
        push_bounded(&mut self.history, o, MAX_HISTORY);
    }

    /// What `place` would do, without doing it.
    pub(crate) fn check(&self, m: &Market, req: &OrderRequest, now: i64) -> Result<OrderCheck, ErrorBody> {
        let (idx, spec) = Self::spec(m, &req.symbol)?;
        let acct = self.account_info(m);
        let tick = m.tick(idx);
        let price = match (&tick, req.order_type.is_market()) {
            (Some(t), true) => trading::fill_price(req.order_type, t),
            (_, false) => entry_price(req),
            (None, true) => 0.0,
        };
        let margin = money(self.margin_of(m, &spec.name, req.volume, price));
        let verdict = match &tick {
            None => Err(Rejection::new(
                retcode::MARKET_CLOSED,
                format!("there is no quote for {} yet", spec.name),
            )),
            Some(t) => trading::validate_order(spec, t, &params(req), now)
                .and_then(|()| check_terms(spec, req, now).map(|_| ()))
                .and_then(|()| trading::check_free_margin(acct.free_margin, margin, &self.setup.currency)),
        };
        let (valid, code, comment) = match verdict {
            Ok(()) => (true, retcode::DONE.to_owned(), "the order would be accepted".to_owned()),
            Err(r) => (false, r.retcode.to_owned(), r.message),
        };
        Ok(OrderCheck {
            valid,
            retcode: code,
            comment,
            price: finite(price),
            margin,
            free_margin_after: money(acct.free_margin - margin),
            margin_level_after: trading::margin_level(acct.equity, acct.margin + margin).map(money),
        })
    }

    /// Fills `volume` lots of `side` for order `ticket`: a new position on a
    /// hedging account; on a netting account, added to the symbol's position
    /// (volume-weighted price), or reducing, closing or reversing it.
    #[allow(clippy::too_many_arguments, reason = "the fields of one new position")]
    fn fill(
        &mut self,
        m: &Market,
        ticket: u64,
        symbol: &str,
        side: Side,
        volume: f64,
        price: f64,
        levels: (Option<f64>, Option<f64>),
        magic: u64,
        comment: &str,
        time: i64,
    ) -> Deal {
        let netted = if self.setup.hedging {
            None
        } else {
            self.positions.iter().position(|p| p.symbol == symbol)
        };
        let Some(i) = netted else {
            return self.open_position(ticket, symbol, side, volume, price, levels, magic, comment, time);
        };
        let p = self.positions[i].clone();
        if p.side == side {
            let total = p.volume + volume;
            let deal = Deal {
                ticket: self.deal_ticket(),
                order: ticket,
                position: p.ticket,
                symbol: symbol.to_owned(),
                side,
                entry: DealEntry::In,
                volume,
                price,
                time,
                profit: 0.0,
                swap: 0.0,
                commission: 0.0,
                magic,
                comment: comment.to_owned(),
            };
            let pos = &mut self.positions[i];
            pos.open_price = (p.open_price * p.volume + price * volume) / total;
            pos.volume = (total * 1e8).round() / 1e8;
            if let Some(sl) = trading::level(levels.0) {
                pos.stop_loss = Some(sl);
            }
            if let Some(tp) = trading::level(levels.1) {
                pos.take_profit = Some(tp);
            }
            push_bounded(&mut self.deals, deal.clone(), MAX_HISTORY);
            self.trade_event(TransactionKind::DealAdded, Some(deal.clone()), ticket, p.ticket);
            self.emit(SimEvent::Account);
            return deal;
        }
        let closing = volume.min(p.volume);
        let closed = self.close_at(m, i, closing, price, time, comment);
        let rest = ((volume - closing) * 1e8).round() / 1e8;
        if rest > 1e-9 {
            return self.open_position(ticket, symbol, side, rest, price, levels, magic, comment, time);
        }
        self.deals
            .iter()
            .rev()
            .find(|d| d.ticket == closed.deal)
            .cloned()
            .unwrap_or_else(|| Deal {
                ticket: closed.deal,
                order: closed.order,
                position: closed.position,
                symbol: symbol.to_owned(),
                side,
                entry: DealEntry::Out,
                volume: closing,
                price,
                time,
                profit: 0.0,
                swap: 0.0,
                commission: 0.0,
                magic,
                comment: comment.to_owned(),
            })
    }

    #[allow(clippy::too_many_arguments, reason = "the fields of one new position")]
    fn open_position(
        &mut self,
        ticket: u64,
        symbol: &str,
        side: Side,
        volume: f64,
        price: f64,
        levels: (Option<f64>, Option<f64>),
        magic: u64,
        comment: &str,
        time: i64,
    ) -> Deal {
        let deal = Deal {
            ticket: self.deal_ticket(),
            order: ticket,
            position: ticket,
            symbol: symbol.to_owned(),
            side,
            entry: DealEntry::In,
            volume,
            price,
            time,
            profit: 0.0,
            swap: 0.0,
            commission: 0.0,
            magic,
            comment: comment.to_owned(),
        };
        self.positions.push(Pos {
            ticket,
            symbol: symbol.to_owned(),
            side,
            volume,
            open_price: price,
            open_time: time,
            stop_loss: trading::level(levels.0),
            take_profit: trading::level(levels.1),
            swap: 0.0,
            magic,
            comment: comment.to_owned(),
        });
        push_bounded(&mut self.deals, deal.clone(), MAX_HISTORY);
        self.trade_event(TransactionKind::DealAdded, Some(deal.clone()), ticket, ticket);
        self.emit(SimEvent::Account);
        deal
    }

    /// Sends an order: a market order fills now (against the book's
    /// liquidity, as its filling policy says), a pending order is placed.
    pub(crate) fn place(&mut self, m: &Market, req: &OrderRequest, now: i64) -> Result<TradeResult, ErrorBody> {
        let (idx, spec) = Self::spec(m, &req.symbol)?;
        let tick = m.tick(idx).ok_or_else(|| no_quote(spec))?;
        trading::validate_order(spec, &tick, &params(req), now).map_err(rejected)?;
        let filling = check_terms(spec, req, now).map_err(rejected)?;
        let market = req.order_type.is_market();
        let mut volume = trading::round_volume(spec, req.volume);
        let comment = truncate_comment(&req.comment);
        let side = req.order_type.side();
        let price = if market {
            trading::fill_price(req.order_type, &tick)
        } else {
            req.price.unwrap_or_default()
        };
        let mut partial = false;
        if market {
            let available = trading::round_volume(spec, book::liquidity(m.seed, spec, &tick, side == Side::Buy));
            if volume > available + 1e-9 {
                match filling {
                    Some(FillingMode::Ioc | FillingMode::Return) if available > 0.0 => {
                        volume = available;
                        partial = true;
                    }
                    _ => {
                        return Err(rejected(Rejection::new(
                            retcode::REJECTED,
                            format!(
                                "fill or kill: {volume} lots of {} cannot be filled at once, the book holds {available} lots",
                                spec.name
                            ),
                        )));
                    }
                }
            }
        }
        let free = self.account_info(m).free_margin;
        let margin_price = if market { price } else { entry_price(req) };
        let margin = self.margin_of(m, &spec.name, volume, margin_price);
        trading::check_free_margin(free, margin, &self.setup.currency).map_err(rejected)?;
        let ticket = self.order_ticket();
        if market {
            let deal = self.fill(
                m,
                ticket,
                &spec.name,
                side,
                volume,
                price,
                (req.stop_loss, req.take_profit),
                req.magic,
                &comment,
                now,
            );
            self.record(HistoryOrder {
                ticket,
                symbol: spec.name.clone(),
                order_type: req.order_type,
                volume,
                price,
                state: OrderState::Filled,
                time_setup: now,
                time_done: now,
                position: deal.position,
                comment,
                magic: req.magic,
            });
            let (code, text) = if partial {
                (retcode::DONE_PARTIAL, "Request executed partially")
            } else {
                (retcode::DONE, "Request executed")
            };
            return Ok(TradeResult {
                retcode: code.into(),
                order: ticket,
                deal: deal.ticket,
                position: deal.position,
                volume,
                price,
                comment: text.into(),
            });
        }
        let expiration_mode = req.expiration_mode.unwrap_or_default();
        self.orders.push(PendingOrder {
            ticket,
            symbol: spec.name.clone(),
            order_type: req.order_type,
            volume,
            price,
            stop_limit_price: req.stop_limit_price.filter(|_| req.order_type.is_stop_limit()),
            stop_loss: trading::level(req.stop_loss),
            take_profit: trading::level(req.take_profit),
            time_setup: now,
            expiration_mode,
            expiration: req.expiration.filter(|_| expiration_mode.needs_time()),
            magic: req.magic,
            comment,
        });
        self.trade_event(TransactionKind::OrderAdded, None, ticket, 0);
        Ok(TradeResult {
            retcode: retcode::PLACED.into(),
            order: ticket,
            deal: 0,
            position: 0,
            volume,
            price,
            comment: "Order placed".into(),
        })
    }

    /// Changes a pending order's price, stop-limit price, SL, TP and expiry
    /// (the whole new state, as MT5's `TRADE_ACTION_MODIFY`).
    #[allow(
        clippy::too_many_arguments,
        reason = "the fields of MqlTradeRequest for TRADE_ACTION_MODIFY"
    )]
    pub(crate) fn modify_order(
        &mut self,
        m: &Market,
        ticket: u64,
        price: f64,
        stop_limit_price: Option<f64>,
        stop_loss: Option<f64>,
        take_profit: Option<f64>,
        expiration_mode: Option<ExpirationMode>,
        expiration: Option<i64>,
        now: i64,
    ) -> Result<TradeResult, ErrorBody> {
        let i = self.order_index(ticket)?;
        let o = self.orders[i].clone();
        let (idx, spec) = Self::spec(m, &o.symbol)?;
        let tick = m.tick(idx).ok_or_else(|| no_quote(spec))?;
        let p = OrderParams {
            order_type: o.order_type,
            volume: o.volume,
            price: Some(price),
            stop_limit_price,
            stop_loss,
            take_profit,
        };
        trading::validate_order(spec, &tick, &p, now).map_err(rejected)?;
        let mode = expiration_mode.unwrap_or_default();
        trading::check_expiration(spec, mode, expiration, now).map_err(rejected)?;
        let new = PendingOrder {
            price,
            stop_limit_price: stop_limit_price.filter(|_| o.order_type.is_stop_limit()),
            stop_loss: trading::level(stop_loss),
            take_profit: trading::level(take_profit),
            expiration_mode: mode,
            expiration: expiration.filter(|_| mode.needs_time()),
            ..o.clone()
        };
        if new == o {
            return Err(rejected(Rejection::new(
                retcode::NO_CHANGES,
                format!("order {ticket} already has these price, levels and expiry"),
            )));
        }
        self.orders[i] = new;
        self.trade_event(TransactionKind::OrderModified, None, ticket, 0);
        Ok(TradeResult {
            retcode: retcode::DONE.into(),
            order: ticket,
            deal: 0,
            position: 0,
            volume: o.volume,
            price,
            comment: "Order modified".into(),
        })
    }

    /// Closes position `ticket` by the opposite position `by` of the same
    /// symbol (hedging accounts only, as MT5's `TRADE_ACTION_CLOSE_BY`): the
    /// smaller volume of the two is closed on both, each at the opening price
    /// of `by`, so the pair pays no spread; what is left of the larger stays
    /// open.
    pub(crate) fn close_by(&mut self, m: &Market, ticket: u64, by: u64, now: i64) -> Result<TradeResult, ErrorBody> {
        if !self.setup.hedging {
            return Err(rejected(Rejection::new(
                retcode::INVALID_REQUEST,
                "close by needs a hedging account: this netting account holds one position per symbol",
            )));
        }
        if ticket == by {
            return Err(rejected(Rejection::new(
                retcode::INVALID_REQUEST,
                "a position cannot be closed by itself",
            )));
        }
        let a = self.positions[self.position_index(ticket)?].clone();
        let b = self.positions[self.position_index(by)?].clone();
        if a.symbol != b.symbol || a.side == b.side {
            return Err(rejected(Rejection::new(
                retcode::INVALID_REQUEST,
                format!(
                    "close by needs two opposite positions of one symbol: #{ticket} is a {} {} position, #{by} a {} {} one",
                    a.symbol,
                    side_word(a.side),
                    b.symbol,
                    side_word(b.side)
                ),
            )));
        }
        let (_, spec) = Self::spec(m, &a.symbol)?;
        trading::check_market_open(spec, now).map_err(rejected)?;
        let volume = trading::round_volume(spec, a.volume.min(b.volume));
        let price = b.open_price;
        // As MetaTrader 5 records it: one order of type close-by (the
        // tickets in its comment), and two deals of entry `out_by`, one for
        // each position, both at the opening price of the one closed by (so
        // the pair's whole profit is on the first deal).
        let order = self.order_ticket();
        let comment = format!("close #{ticket} by #{by}");
        self.record(HistoryOrder {
            ticket: order,
            symbol: a.symbol.clone(),
            order_type: OrderType::CloseBy,
            volume,
            price,
            state: OrderState::Filled,
            time_setup: now,
            time_done: now,
            position: ticket,
            comment: comment.clone(),
            magic: a.magic,
        });
        let i = self.position_index(ticket)?;
        let first = self.exit_deal(
            m,
            i,
            volume,
            price,
            now,
            &format!("close by #{by}"),
            order,
            DealEntry::OutBy,
        );
        let j = self.position_index(by)?;
        self.exit_deal(
            m,
            j,
            volume,
            price,
            now,
            &format!("close by #{ticket}"),
            order,
            DealEntry::OutBy,
        );
        Ok(TradeResult {
            comment: format!("Position #{ticket} closed by #{by}"),
            ..first
        })
    }

    fn order_index(&self, ticket: u64) -> Result<usize, ErrorBody> {
        self.orders
            .iter()
            .position(|o| o.ticket == ticket)
            .ok_or_else(|| ErrorBody::new(codes::NOT_FOUND, format!("no pending order with ticket {ticket}")))
    }

    /// Removes the pending orders whose expiry is at or before `t`, as
    /// `expired`, at their expiry instant ([`trading::expiry_instant`]: a
    /// day order whose day ends outside its symbol's sessions lives until
    /// the next trading time, as in MetaTrader 5).
    pub(crate) fn expire(&mut self, m: &Market, t: i64) {
        let due: Vec<(PendingOrder, i64)> = self
            .orders
            .iter()
            .filter_map(|o| {
                let at = match Self::spec(m, &o.symbol) {
                    Ok((_, spec)) => trading::expiry_instant(spec, o.expiration_mode, o.expiration, o.time_setup),
                    Err(_) => trading::expiry_deadline(o.expiration_mode, o.expiration, o.time_setup),
                };
                at.filter(|d| *d <= t).map(|d| (o.clone(), d))
            })
            .collect();
        for (o, at) in due {
            self.orders.retain(|x| x.ticket != o.ticket);
            self.finish_order(&o, OrderState::Expired, at, 0);
        }
    }

    fn position_index(&self, ticket: u64) -> Result<usize, ErrorBody> {
        self.positions
            .iter()
            .position(|p| p.ticket == ticket)
            .ok_or_else(|| ErrorBody::new(codes::NOT_FOUND, format!("no open position with ticket {ticket}")))
    }

    /// Closes `volume` lots of position `i` at `price` with a market order
    /// of its own (recorded in the order history as filled).
    fn close_at(&mut self, m: &Market, i: usize, volume: f64, price: f64, time: i64, comment: &str) -> TradeResult {
        let p = &self.positions[i];
        let (position, symbol, side, magic) = (p.ticket, p.symbol.clone(), p.side, p.magic);
        let order = self.order_ticket();
        self.record(HistoryOrder {
            ticket: order,
            symbol,
            order_type: market_type(side.opposite()),
            volume,
            price,
            state: OrderState::Filled,
            time_setup: time,
            time_done: time,
            position,
            comment: comment.to_owned(),
            magic,
        });
        self.exit_deal(m, i, volume, price, time, comment, order, DealEntry::Out)
    }

    /// The deal of `order` that takes `volume` lots off position `i` at
    /// `price` (`entry`: `out`, or `out_by` for a close-by): profit and
    /// the position's share of swap to the balance, the position reduced or
    /// removed.
    #[allow(
        clippy::too_many_arguments,
        reason = "one deal's every field; a struct for one private call would only rename them"
    )]
    fn exit_deal(
        &mut self,
        m: &Market,
        i: usize,
        volume: f64,
        price: f64,
        time: i64,
        comment: &str,
        order: u64,
        entry: DealEntry,
    ) -> TradeResult {
        let p = self.positions[i].clone();
        let (profit, volume_left) = match m.index(&p.symbol) {
            Some(idx) => {
                let spec = &m.feeds[idx].spec;
                let rate = self.rate(m, &spec.currency_profit);
                (
                    money(trading::profit(spec, p.side, volume, p.open_price, price, rate)),
                    trading::round_volume(spec, p.volume - volume),
                )
            }
            None => (0.0, 0.0),
        };
        let full = volume_left <= 1e-9;
        let swap = if full {
            p.swap
        } else {
            money(p.swap * volume / p.volume)
        };
        let deal = Deal {
            ticket: self.deal_ticket(),
            order,
            position: p.ticket,
            symbol: p.symbol.clone(),
            side: p.side.opposite(),
            entry,
            volume,
            price,
            time,
            profit,
            swap,
            commission: 0.0,
            magic: p.magic,
            comment: comment.to_owned(),
        };
        self.balance = money(self.balance + profit + swap);
        if full {
            self.positions.remove(i);
        } else {
            let pos = &mut self.positions[i];
            pos.volume = volume_left;
            pos.swap = money(p.swap - swap);
        }
        push_bounded(&mut self.deals, deal.clone(), MAX_HISTORY);
        let deal_ticket = deal.ticket;
        self.trade_event(TransactionKind::DealAdded, Some(deal), order, p.ticket);
        self.emit(SimEvent::Account);
        TradeResult {
            retcode: retcode::DONE.into(),
            order,
            deal: deal_ticket,
            position: p.ticket,
            volume,
            price,
            comment: "Request executed".into(),
        }
    }

    /// Closes a position fully or partly at market.
    pub(crate) fn close(
        &mut self,
        m: &Market,
        ticket: u64,
        volume: Option<f64>,
        now: i64,
    ) -> Result<TradeResult, ErrorBody> {
        let i = self.position_index(ticket)?;
        let p = &self.positions[i];
        let (idx, spec) = Self::spec(m, &p.symbol)?;
        let tick = m.tick(idx).ok_or_else(|| no_quote(spec))?;
        trading::check_market_open(spec, now).map_err(rejected)?;
        let volume = volume.unwrap_or(p.volume);
        trading::check_close_volume(spec, p.volume, volume).map_err(rejected)?;
        let volume = trading::round_volume(spec, volume).min(p.volume);
        let price = trading::close_price(p.side, &tick);
        Ok(self.close_at(m, i, volume, price, now, ""))
    }

    /// Sets (or removes) a position's stop loss and take profit.
    pub(crate) fn modify(
        &mut self,
        m: &Market,
        ticket: u64,
        stop_loss: Option<f64>,
        take_profit: Option<f64>,
        now: i64,
    ) -> Result<TradeResult, ErrorBody> {
        let i = self.position_index(ticket)?;
        let p = &self.positions[i];
        let (idx, spec) = Self::spec(m, &p.symbol)?;
        let tick = m.tick(idx).ok_or_else(|| no_quote(spec))?;
        trading::validate_position_levels(spec, &tick, p.side, stop_loss, take_profit, now).map_err(rejected)?;
        let pos = &mut self.positions[i];
        pos.stop_loss = trading::level(stop_loss);
        pos.take_profit = trading::level(take_profit);
        let (volume, price) = (pos.volume, pos.open_price);
        self.trade_event(TransactionKind::PositionModified, None, 0, ticket);
        Ok(TradeResult {
            retcode: retcode::DONE.into(),
            order: 0,
            deal: 0,
            position: ticket,
            volume,
            price,
            comment: "Position modified".into(),
        })
    }

    /// Cancels a pending order.
    pub(crate) fn cancel(&mut self, m: &Market, ticket: u64, now: i64) -> Result<TradeResult, ErrorBody> {
        let i = self.order_index(ticket)?;
        let (_, spec) = Self::spec(m, &self.orders[i].symbol)?;
        trading::check_market_open(spec, now).map_err(rejected)?;
        let o = self.orders.remove(i);
        self.finish_order(&o, OrderState::Canceled, now, 0);
        Ok(TradeResult {
            retcode: retcode::DONE.into(),
            order: o.ticket,
            deal: 0,
            position: 0,
            volume: o.volume,
            price: o.price,
            comment: "Order cancelled".into(),
        })
    }

    fn finish_order(&mut self, o: &PendingOrder, state: OrderState, time: i64, position: u64) {
        self.record(HistoryOrder {
            ticket: o.ticket,
            symbol: o.symbol.clone(),
            order_type: o.order_type,
            volume: o.volume,
            price: o.price,
            state,
            time_setup: o.time_setup,
            time_done: time,
            position,
            comment: o.comment.clone(),
            magic: o.magic,
        });
        self.trade_event_with(TransactionKind::OrderRemoved, None, o.ticket, position, Some(state));
    }

    /// Closes a position and opens the same volume the other way, both at
    /// market; nothing happens unless both can.
    pub(crate) fn reverse(
        &mut self,
        m: &Market,
        ticket: u64,
        now: i64,
    ) -> Result<(TradeResult, TradeResult), ErrorBody> {
        let i = self.position_index(ticket)?;
        let p = self.positions[i].clone();
        let (idx, spec) = Self::spec(m, &p.symbol)?;
        let tick = m.tick(idx).ok_or_else(|| no_quote(spec))?;
        trading::check_market_open(spec, now).map_err(rejected)?;
        let side = p.side.opposite();
        let open_type = market_type(side);
        let open_price = trading::fill_price(open_type, &tick);
        let freed = self.margin_of(m, &p.symbol, p.volume, p.open_price);
        let needed = self.margin_of(m, &p.symbol, p.volume, open_price);
        let free = self.account_info(m).free_margin + freed;
        trading::check_free_margin(free, needed, &self.setup.currency).map_err(rejected)?;
        let close = self.close_at(m, i, p.volume, trading::close_price(p.side, &tick), now, "reverse");
        let order = self.order_ticket();
        let deal = self.open_position(
            order,
            &p.symbol,
            side,
            p.volume,
            open_price,
            (None, None),
            p.magic,
            "reverse",
            now,
        );
        self.record(HistoryOrder {
            ticket: order,
            symbol: p.symbol.clone(),
            order_type: open_type,
            volume: p.volume,
            price: open_price,
            state: OrderState::Filled,
            time_setup: now,
            time_done: now,
            position: order,
            comment: "reverse".into(),
            magic: p.magic,
        });
        let open = TradeResult {
            retcode: retcode::DONE.into(),
            order,
            deal: deal.ticket,
            position: order,
            volume: p.volume,
            price: open_price,
            comment: "Request executed".into(),
        };
        Ok((close, open))
    }

    /// Runs SL/TP and pending-order triggers of symbol `idx` on its latest tick.
    pub(crate) fn on_tick(&mut self, m: &Market, idx: usize) {
        let Some(tick) = m.tick(idx) else { return };
        let spec = &m.feeds[idx].spec;
        if !self.positions.iter().any(|p| p.symbol == spec.name) && !self.orders.iter().any(|o| o.symbol == spec.name) {
            return;
        }
        let continuous = m.continuous(idx);
        let eps = spec.point * 1e-3;
        // Stop losses and take profits first: a close may free margin for a trigger.
        let hits: Vec<(u64, f64, &'static str)> = self
            .positions
            .iter()
            .filter(|p| p.symbol == spec.name)
            .filter_map(|p| {
                let px = trading::close_price(p.side, &tick);
                let (sl_hit, tp_hit) = match p.side {
                    Side::Buy => (
                        p.stop_loss.is_some_and(|sl| px <= sl + eps),
                        p.take_profit.is_some_and(|tp| px >= tp - eps),
                    ),
                    Side::Sell => (
                        p.stop_loss.is_some_and(|sl| px >= sl - eps),
                        p.take_profit.is_some_and(|tp| px <= tp + eps),
                    ),
                };
                let (level, why) = match (sl_hit, tp_hit) {
                    (true, _) => (p.stop_loss?, "sl"),
                    (false, true) => (p.take_profit?, "tp"),
                    _ => return None,
                };
                Some((p.ticket, if continuous { level } else { px }, why))
            })
            .collect();
        for (ticket, price, why) in hits {
            if let Ok(i) = self.position_index(ticket) {
                let volume = self.positions[i].volume;
                self.close_at(m, i, volume, price, tick.time, why);
            }
        }
        // A stop-limit order whose stop is reached becomes a limit order at its
        // stop-limit price (a new ticket, same volume, levels and expiry),
        // which may then fill on this very quote.
        let stopped: Vec<PendingOrder> = self
            .orders
            .iter()
            .filter(|o| o.symbol == spec.name && o.order_type.is_stop_limit() && triggers(o, &tick, eps))
            .cloned()
            .collect();
        for o in stopped {
            self.orders.retain(|x| x.ticket != o.ticket);
            self.finish_order(&o, OrderState::Filled, tick.time, 0);
            let ticket = self.order_ticket();
            self.orders.push(PendingOrder {
                ticket,
                order_type: o.order_type.limit_of_stop_limit(),
                price: o.stop_limit_price.unwrap_or(o.price),
                stop_limit_price: None,
                time_setup: tick.time,
                ..o.clone()
            });
            self.trade_event(TransactionKind::OrderAdded, None, ticket, 0);
        }
        let triggered: Vec<PendingOrder> = self
            .orders
            .iter()
            .filter(|o| o.symbol == spec.name && triggers(o, &tick, eps))
            .cloned()
            .collect();
        for o in triggered {
            self.orders.retain(|x| x.ticket != o.ticket);
            let price = if continuous {
                o.price
            } else {
                trading::fill_price(o.order_type, &tick)
            };
            let free = self.account_info(m).free_margin;
            let margin = self.margin_of(m, &o.symbol, o.volume, price);
            if trading::check_free_margin(free, margin, &self.setup.currency).is_err() {
                tracing::info!(
                    order = o.ticket,
                    "pending order triggered without enough free margin: rejected"
                );
                self.finish_order(&o, OrderState::Rejected, tick.time, 0);
                continue;
            }
            let side = o.order_type.side();
            let netted = if self.setup.hedging {
                None
            } else {
                self.positions.iter().find(|p| p.symbol == o.symbol).map(|p| p.ticket)
            };
            self.finish_order(&o, OrderState::Filled, tick.time, netted.unwrap_or(o.ticket));
            self.fill(
                m,
                o.ticket,
                &o.symbol,
                side,
                o.volume,
                price,
                (o.stop_loss, o.take_profit),
                o.magic,
                &o.comment,
                tick.time,
            );
        }
    }

    /// The daily rollover at `t`: charges one night's swap (three on the
    /// symbol's triple-swap day) to every open position, Monday to Friday.
    pub(crate) fn rollover(&mut self, m: &Market, t: i64) {
        let wd = weekday(t);
        if !(1..=5).contains(&wd) || self.positions.is_empty() {
            return;
        }
        let charges: Vec<f64> = self
            .positions
            .iter()
            .map(|p| match m.index(&p.symbol) {
                Some(idx) => {
                    let spec = &m.feeds[idx].spec;
                    let price = m
                        .tick(idx)
                        .map(|t| trading::close_price(p.side, &t))
                        .unwrap_or(p.open_price);
                    let rate = self.rate(m, &spec.currency_profit);
                    money(trading::swap_for_night(spec, p.side, p.volume, price, rate, wd))
                }
                None => 0.0,
            })
            .collect();
        for (p, c) in self.positions.iter_mut().zip(charges) {
            p.swap = money(p.swap + c);
        }
        self.emit(SimEvent::Account);
    }

    /// Runs `op` at most once per idempotency key: a repeated key returns the
    /// first outcome (success or trade rejection) without executing again. A
    /// key reused for a different request is refused.
    pub(crate) fn idempotent(
        &mut self,
        scope: &str,
        key: Option<&str>,
        fingerprint: String,
        op: impl FnOnce(&mut Self) -> Result<CommandResult, ErrorBody>,
    ) -> Result<CommandResult, ErrorBody> {
        let Some(key) = key else { return op(self) };
        if key.is_empty() || key.len() > KEY_MAX {
            return Err(ErrorBody::new(
                codes::INVALID_ARGUMENT,
                format!("idempotency_key must be 1 to {KEY_MAX} bytes long"),
            ));
        }
        let full = format!("{scope}:{key}");
        if let Some(e) = self.idempotency.get(&full) {
            if e.fingerprint != fingerprint {
                return Err(ErrorBody::new(
                    codes::INVALID_ARGUMENT,
                    format!("idempotency_key `{key}` was already used for a different request"),
                ));
            }
            return e.outcome.clone();
        }
        let outcome = op(self);
        let keep = match &outcome {
            Ok(_) => true,
            Err(e) => e.code == codes::TRADE_REJECTED,
        };
        if keep {
            self.idempotency.insert(
                full.clone(),
                IdemEntry {
                    fingerprint,
                    outcome: outcome.clone(),
                },
            );
            push_bounded(&mut self.idempotency_order, full, usize::MAX);
            while self.idempotency_order.len() > MAX_IDEMPOTENCY_KEYS {
                if let Some(old) = self.idempotency_order.pop_front() {
                    self.idempotency.remove(&old);
                }
            }
        }
        outcome
    }
}
