//! Exits the server manages (`docs/managed-exits.md`): trailing stops,
//! breakeven moves, one-cancels-other pairs and brackets with several
//! take-profit levels, as pure decisions over what a terminal shows.
//!
//! The engine (in `tradeterm-tools`) feeds [`decide`] with a rule, its
//! [`ManagedState`] and a [`View`] of the terminal (the quote, the open
//! positions and pending orders, the symbol's specification) and gets back
//! at most **one** [`Action`] to send, or the news that the rule has ended.
//! When the action succeeded it calls [`confirm`], which is the only place
//! the state records progress, so an action that failed or whose outcome is
//! unknown is decided again on the next quote (with the same step number,
//! which is what makes a re-send idempotent). A rule in dry run runs the same
//! decisions over a [`Paper`] book instead of the terminal's.
//!
//! Every decision is a function of the current view only (the rule never
//! remembers quotes), so a rule that was paused while its terminal was away
//! acts once on the first view after it came back, never with a burst of
//! stale modifications.

use serde::{Deserialize, Serialize};

use crate::Side;
use crate::account::{OrderType, PendingOrder, Position};
use crate::market::{SymbolSpec, Tick, Timeframe};

/// How far behind the price a trailing stop follows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "unit", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrailDistance {
    /// A number of points (the symbol's `point`).
    Points {
        /// Distance in points, above zero and at most 1 000 000.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 1_000_000))]
        value: f64,
    },
    /// A number of pips (10 points on 3- and 5-digit symbols, else 1 point).
    Pips {
        /// Distance in pips, above zero and at most 100 000 (1 000 000 points).
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 100_000))]
        value: f64,
    },
    /// A multiple of the Average True Range of closed bars (re-read at every
    /// bar close of `timeframe`).
    Atr {
        /// The multiple, above zero and at most 100.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
        multiple: f64,
        /// ATR period (2-200, default 14).
        #[serde(default = "default_atr_period")]
        #[schemars(range(min = 2, max = 200))]
        period: usize,
        /// Timeframe of the bars (default `H1`).
        #[serde(default = "default_atr_timeframe")]
        timeframe: Timeframe,
    },
}

fn default_atr_period() -> usize {
    14
}

fn default_atr_timeframe() -> Timeframe {
    Timeframe::H1
}

impl TrailDistance {
    /// The distance in price units; `atr` is the ATR now (needed by
    /// [`TrailDistance::Atr`] only). `None` when it cannot be known yet.
    pub fn price(&self, spec: &SymbolSpec, atr: Option<f64>) -> Option<f64> {
        let d = match *self {
            TrailDistance::Points { value } => value * spec.point,
            TrailDistance::Pips { value } => value * crate::sizing::pip_size(spec),
            TrailDistance::Atr { multiple, .. } => multiple * atr?,
        };
        (d.is_finite() && d > 0.0).then_some(d)
    }
}

/// What the stop loss of a bracket does as its take-profit levels fill.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScaleStop {
    /// The stop stays where it was placed.
    None,
    /// After the first level the stop moves to the entry price.
    Breakeven,
    /// After the first level the stop moves to the entry, after each later
    /// level to the level before it (the default).
    #[default]
    PreviousTarget,
}

/// One take-profit level of a bracket: at `price`, `volume` lots are closed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetLevel {
    /// The level.
    pub price: f64,
    /// Lots closed there (the last level: what is left of the position).
    pub volume: f64,
}

/// A managed exit, as stored. Distances are in points of the symbol unless
/// said otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ManagedSpec {
    /// Moves the position's stop loss behind the price.
    TrailingStop {
        /// The position.
        position: u64,
        /// How far behind the price.
        distance: TrailDistance,
        /// The stop moves only by at least this many points (at least one tick).
        step_points: f64,
        /// The stop starts to trail once the position is this many points in
        /// profit (`None`: at once).
        activation_points: Option<f64>,
    },
    /// Moves the stop loss to the entry plus an offset once, when the price
    /// reaches a trigger.
    Breakeven {
        /// The position.
        position: u64,
        /// Profit in points that triggers the move.
        trigger_points: f64,
        /// Points beyond the entry (in the position's favour) the stop goes to.
        offset_points: f64,
    },
    /// Two pending orders: when one fills or goes away, the other is cancelled.
    Oco {
        /// The two orders.
        orders: [u64; 2],
    },
    /// An entry with a stop loss and take-profit levels that each close part
    /// of the position (the last one is the position's own take profit, held
    /// by the trade server), the stop scaling as they fill.
    Bracket {
        /// The entry order (market or pending); the position it opens has
        /// the same ticket.
        entry: u64,
        /// Side of the entry.
        side: Side,
        /// The stop loss placed with the entry.
        stop_loss: f64,
        /// Take-profit levels, nearest first (at least one).
        targets: Vec<TargetLevel>,
        /// What the stop does as levels fill.
        scale_stop: ScaleStop,
    },
}

impl ManagedSpec {
    /// The kind's name (`trailing_stop`, `breakeven`, `oco`, `bracket`).
    pub fn kind(&self) -> &'static str {
        match self {
            ManagedSpec::TrailingStop { .. } => "trailing_stop",
            ManagedSpec::Breakeven { .. } => "breakeven",
            ManagedSpec::Oco { .. } => "oco",
            ManagedSpec::Bracket { .. } => "bracket",
        }
    }
}

/// What the rule sends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Sets a position's stop loss (its take profit unchanged).
    SetStop {
        /// Position ticket.
        ticket: u64,
        /// The new stop loss.
        stop_loss: f64,
    },
    /// Cancels a pending order.
    CancelOrder {
        /// Order ticket.
        ticket: u64,
    },
    /// Closes part of a position.
    ClosePartial {
        /// Position ticket.
        ticket: u64,
        /// Lots to close.
        volume: f64,
    },
}

/// Why a rule ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// It did everything it was for (breakeven moved, OCO resolved, bracket
    /// targets all filled).
    Completed,
    /// Its position is no longer open (closed by its stop loss or take
    /// profit, by hand, or by another tool).
    PositionClosed,
    /// Its entry order went away without filling (cancelled, expired, rejected).
    EntryCancelled,
    /// Removed by the client (`remove_managed_order`).
    Removed,
}

impl EndReason {
    /// The reason's name.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Completed => "completed",
            EndReason::PositionClosed => "position_closed",
            EndReason::EntryCancelled => "entry_cancelled",
            EndReason::Removed => "removed",
        }
    }
}

/// An action sent and not confirmed yet: a re-send (after a retry, a restart
/// or a takeover) uses the same step, so the same idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PendingStep {
    /// Step number (1 for the first action of the rule).
    pub step: u64,
    /// The action.
    pub action: Action,
}

/// The progress of a rule, stored with it (compare-and-swap).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ManagedState {
    /// Actions confirmed so far.
    #[serde(default)]
    pub steps: u64,
    /// The action in flight, if any.
    #[serde(default)]
    pub pending: Option<PendingStep>,
    /// Trailing stop: it has started to trail.
    #[serde(default)]
    pub activated: bool,
    /// The stop loss this rule set last.
    #[serde(default)]
    pub stop: Option<f64>,
    /// Bracket: the entry filled (its position is open or was).
    #[serde(default)]
    pub filled: bool,
    /// Bracket: take-profit levels filled.
    #[serde(default)]
    pub targets_done: usize,
    /// OCO: the order this rule cancelled.
    #[serde(default)]
    pub cancelled: Option<u64>,
    /// OCO: the order that filled or went away first.
    #[serde(default)]
    pub resolved_by: Option<u64>,
}

impl ManagedState {
    /// The step number of the next action (the pending one's, when one is in flight).
    pub fn next_step(&self) -> u64 {
        self.pending.map_or(self.steps + 1, |p| p.step)
    }
}

/// What the terminal shows now.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The symbol's specification.
    pub spec: &'a SymbolSpec,
    /// The latest quote of the symbol.
    pub tick: &'a Tick,
    /// Open positions of the terminal.
    pub positions: &'a [Position],
    /// Pending orders of the terminal.
    pub orders: &'a [PendingOrder],
}

/// The decision of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Nothing to do now.
    Wait,
    /// Send this.
    Act(Action),
    /// The rule is over.
    End(EndReason),
}

fn tick_of(spec: &SymbolSpec) -> f64 {
    if spec.tick_size > 0.0 {
        spec.tick_size
    } else {
        spec.point.max(f64::MIN_POSITIVE)
    }
}

fn clean(spec: &SymbolSpec, p: f64) -> f64 {
    let f = 10f64.powi(spec.digits.min(12) as i32);
    (p * f).round() / f
}

/// Rounds a stop level to the symbol's tick, away from the price (down for a
/// long position's stop, up for a short's): never closer than asked.
pub fn round_stop(spec: &SymbolSpec, side: Side, level: f64) -> f64 {
    let t = tick_of(spec);
    let ticks = level / t;
    // A tiny slack so that binary noise (1.23449999) does not lose a tick.
    let n = match side {
        Side::Buy => (ticks + 1e-7).floor(),
        Side::Sell => (ticks - 1e-7).ceil(),
    };
    clean(spec, n * t)
}

/// The price a position closes at: bid for a long, ask for a short.
fn close_price(side: Side, tick: &Tick) -> f64 {
    match side {
        Side::Buy => tick.bid,
        Side::Sell => tick.ask,
    }
}

/// Whether `level` is a valid stop for `side` at this quote: on the loss side
/// of the close price, at least the stops level away.
fn stop_allowed(spec: &SymbolSpec, side: Side, tick: &Tick, level: f64) -> bool {
    let min = f64::from(spec.stops_level) * spec.point;
    let slack = spec.point * 1e-3;
    match side {
        Side::Buy => level <= tick.bid - min + slack,
        Side::Sell => level >= tick.ask + min - slack,
    }
}

/// `a` is a better (tighter, more protective) stop than `b` for `side` by at least `by`.
fn improves(side: Side, a: f64, b: Option<f64>, by: f64) -> bool {
    match b {
        None => true,
        Some(b) => match side {
            Side::Buy => a >= b + by,
            Side::Sell => a <= b - by,
        },
    }
}

fn same_level(spec: &SymbolSpec, a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < tick_of(spec) * 0.5)
}

/// Decides what the rule does on this view. May record what it observed in
/// `state` (a bracket's entry filled, an OCO order gone) — the caller stores
/// the state when it changed. `distance` is a trailing stop's distance in
/// price units ([`TrailDistance::price`]); `None` waits.
pub fn decide(spec: &ManagedSpec, state: &mut ManagedState, view: &View<'_>, distance: Option<f64>) -> Decision {
    let s = view.spec;
    match spec {
        ManagedSpec::TrailingStop {
            position,
            step_points,
            activation_points,
            ..
        } => {
            let Some(pos) = view.positions.iter().find(|p| p.ticket == *position) else {
                return Decision::End(EndReason::PositionClosed);
            };
            let Some(distance) = distance else {
                return Decision::Wait;
            };
            let price = close_price(pos.side, view.tick);
            if !state.activated {
                let profit = match pos.side {
                    Side::Buy => price - pos.open_price,
                    Side::Sell => pos.open_price - price,
                };
                match activation_points {
                    Some(a) if profit + s.point * 1e-3 < a * s.point => return Decision::Wait,
                    _ => state.activated = true,
                }
            }
            let raw = match pos.side {
                Side::Buy => price - distance,
                Side::Sell => price + distance,
            };
            let level = round_stop(s, pos.side, raw);
            let step = (step_points * s.point).max(tick_of(s)) - s.point * 1e-3;
            if level > 0.0
                && improves(pos.side, level, pos.stop_loss, step)
                && stop_allowed(s, pos.side, view.tick, level)
            {
                Decision::Act(Action::SetStop {
                    ticket: pos.ticket,
                    stop_loss: level,
                })
            } else {
                Decision::Wait
            }
        }
        ManagedSpec::Breakeven {
            position,
            trigger_points,
            offset_points,
        } => {
            let Some(pos) = view.positions.iter().find(|p| p.ticket == *position) else {
                return Decision::End(EndReason::PositionClosed);
            };
            if state.steps > 0 {
                return Decision::End(EndReason::Completed);
            }
            let price = close_price(pos.side, view.tick);
            let (reached, target) = match pos.side {
                Side::Buy => (
                    price + s.point * 1e-3 >= pos.open_price + trigger_points * s.point,
                    pos.open_price + offset_points * s.point,
                ),
                Side::Sell => (
                    price - s.point * 1e-3 <= pos.open_price - trigger_points * s.point,
                    pos.open_price - offset_points * s.point,
                ),
            };
            if !reached {
                return Decision::Wait;
            }
            let target = round_stop(s, pos.side, target);
            if same_level(s, pos.stop_loss, target) || !improves(pos.side, target, pos.stop_loss, 0.0) {
                // Already there or better: nothing to move.
                return Decision::End(EndReason::Completed);
            }
            if stop_allowed(s, pos.side, view.tick, target) {
                Decision::Act(Action::SetStop {
                    ticket: pos.ticket,
                    stop_loss: target,
                })
            } else {
                Decision::Wait
            }
        }
        ManagedSpec::Oco { orders } => {
            let present = |t: u64| view.orders.iter().any(|o| o.ticket == t);
            let (a, b) = (orders[0], orders[1]);
            match (present(a), present(b)) {
                (true, true) => Decision::Wait,
                (false, false) => {
                    if state.resolved_by.is_none() {
                        state.resolved_by = Some(if view.positions.iter().any(|p| p.ticket == b) {
                            b
                        } else {
                            a
                        });
                    }
                    Decision::End(EndReason::Completed)
                }
                (false, true) | (true, false) => {
                    let (gone, other) = if present(a) { (b, a) } else { (a, b) };
                    if state.resolved_by.is_none() {
                        state.resolved_by = Some(gone);
                    }
                    Decision::Act(Action::CancelOrder { ticket: other })
                }
            }
        }
        ManagedSpec::Bracket {
            entry,
            side,
            stop_loss,
            targets,
            scale_stop,
        } => {
            let pos = view.positions.iter().find(|p| p.ticket == *entry);
            let Some(pos) = pos else {
                if state.filled {
                    return Decision::End(EndReason::PositionClosed);
                }
                if view.orders.iter().any(|o| o.ticket == *entry) {
                    return Decision::Wait;
                }
                return Decision::End(EndReason::EntryCancelled);
            };
            state.filled = true;
            let price = close_price(*side, view.tick);
            let k = state.targets_done;
            // Every level but the last is closed here (the last is the
            // position's take profit at the trade server).
            if k + 1 < targets.len() {
                let t = targets[k];
                let hit = match side {
                    Side::Buy => price + s.point * 1e-3 >= t.price,
                    Side::Sell => price - s.point * 1e-3 <= t.price,
                };
                if hit {
                    let volume = t.volume.min(pos.volume);
                    if volume >= pos.volume - s.volume_step * 1e-3 {
                        // Nothing would be left for the later levels: leave
                        // the position to its take profit.
                        return Decision::Wait;
                    }
                    return Decision::Act(Action::ClosePartial {
                        ticket: pos.ticket,
                        volume,
                    });
                }
            }
            let desired = match (scale_stop, k) {
                (_, 0) | (ScaleStop::None, _) => *stop_loss,
                (ScaleStop::Breakeven, _) | (ScaleStop::PreviousTarget, 1) => pos.open_price,
                (ScaleStop::PreviousTarget, k) => targets[k - 2].price,
            };
            let desired = round_stop(s, *side, desired);
            if k > 0
                && !same_level(s, pos.stop_loss, desired)
                && improves(*side, desired, pos.stop_loss, 0.0)
                && stop_allowed(s, *side, view.tick, desired)
            {
                return Decision::Act(Action::SetStop {
                    ticket: pos.ticket,
                    stop_loss: desired,
                });
            }
            Decision::Wait
        }
    }
}

/// Records that `action` succeeded.
pub fn confirm(spec: &ManagedSpec, state: &mut ManagedState, action: &Action) {
    state.steps += 1;
    state.pending = None;
    match (spec, action) {
        (_, Action::SetStop { stop_loss, .. }) => state.stop = Some(*stop_loss),
        (ManagedSpec::Bracket { .. }, Action::ClosePartial { .. }) => state.targets_done += 1,
        (ManagedSpec::Oco { .. }, Action::CancelOrder { ticket }) => state.cancelled = Some(*ticket),
        _ => {}
    }
}

/// Applies a confirmed action to a view's positions and orders, so the next
/// evaluation sees its effect before the terminal is read again.
pub fn apply(action: &Action, positions: &mut Vec<Position>, orders: &mut Vec<PendingOrder>) {
    match *action {
        Action::SetStop { ticket, stop_loss } => {
            if let Some(p) = positions.iter_mut().find(|p| p.ticket == ticket) {
                p.stop_loss = Some(stop_loss);
            }
        }
        Action::CancelOrder { ticket } => orders.retain(|o| o.ticket != ticket),
        Action::ClosePartial { ticket, volume } => {
            if let Some(i) = positions.iter().position(|p| p.ticket == ticket) {
                let left = positions[i].volume - volume;
                if left <= 1e-9 {
                    positions.remove(i);
                } else {
                    positions[i].volume = (left * 1e8).round() / 1e8;
                }
            }
        }
    }
}

/// The book of a rule in dry run: copies of its positions and orders that
/// the quotes move as a trade server would (pending orders trigger, stops
/// and take profits close), and that its actions change instead of the
/// terminal's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Paper {
    /// Open positions.
    pub positions: Vec<Position>,
    /// Pending orders.
    pub orders: Vec<PendingOrder>,
    /// What the book did by itself (fills, stops hit), oldest first.
    #[serde(default)]
    pub fills: Vec<PaperFill>,
}

/// Something the paper book did on a quote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PaperFill {
    /// Quote time, unix milliseconds.
    pub time: i64,
    /// Ticket of the order or position.
    pub ticket: u64,
    /// `order_filled`, `stop_loss`, `take_profit`.
    pub what: String,
    /// The price.
    pub price: f64,
}

impl Paper {
    /// Moves the book to this quote of `spec`'s symbol.
    pub fn on_tick(&mut self, spec: &SymbolSpec, tick: &Tick) {
        let mut filled = Vec::new();
        let mut i = 0;
        while i < self.orders.len() {
            let o = &mut self.orders[i];
            if !o.symbol.eq_ignore_ascii_case(&spec.name) {
                i += 1;
                continue;
            }
            let (side, fire) = match o.order_type {
                OrderType::BuyLimit => (Side::Buy, tick.ask <= o.price),
                OrderType::SellLimit => (Side::Sell, tick.bid >= o.price),
                OrderType::BuyStop => (Side::Buy, tick.ask >= o.price),
                OrderType::SellStop => (Side::Sell, tick.bid <= o.price),
                OrderType::Buy => (Side::Buy, true),
                OrderType::Sell => (Side::Sell, true),
                OrderType::BuyStopLimit | OrderType::SellStopLimit => {
                    let buy = o.order_type == OrderType::BuyStopLimit;
                    let reached = if buy { tick.ask >= o.price } else { tick.bid <= o.price };
                    if reached && let Some(limit) = o.stop_limit_price {
                        o.order_type = if buy { OrderType::BuyLimit } else { OrderType::SellLimit };
                        o.price = limit;
                        o.stop_limit_price = None;
                    }
                    i += 1;
                    continue;
                }
                // Only the order history holds close-bys; never a pending one.
                OrderType::CloseBy => {
                    i += 1;
                    continue;
                }
            };
            if fire {
                let o = self.orders.remove(i);
                let price = match side {
                    Side::Buy => tick.ask,
                    Side::Sell => tick.bid,
                };
                filled.push(PaperFill {
                    time: tick.time,
                    ticket: o.ticket,
                    what: "order_filled".into(),
                    price,
                });
                self.positions.push(Position {
                    ticket: o.ticket,
                    symbol: o.symbol,
                    side,
                    volume: o.volume,
                    open_price: price,
                    open_time: tick.time,
                    stop_loss: o.stop_loss,
                    take_profit: o.take_profit,
                    current_price: close_price(side, tick),
                    swap: 0.0,
                    commission: 0.0,
                    profit: 0.0,
                    magic: o.magic,
                    comment: o.comment,
                });
            } else {
                i += 1;
            }
        }
        self.positions.retain_mut(|p| {
            if !p.symbol.eq_ignore_ascii_case(&spec.name) {
                return true;
            }
            let price = close_price(p.side, tick);
            p.current_price = price;
            let sl_hit = p.stop_loss.is_some_and(|sl| match p.side {
                Side::Buy => price <= sl,
                Side::Sell => price >= sl,
            });
            let tp_hit = p.take_profit.is_some_and(|tp| match p.side {
                Side::Buy => price >= tp,
                Side::Sell => price <= tp,
            });
            if sl_hit || tp_hit {
                filled.push(PaperFill {
                    time: tick.time,
                    ticket: p.ticket,
                    what: if sl_hit { "stop_loss" } else { "take_profit" }.into(),
                    price,
                });
                return false;
            }
            true
        });
        self.fills.extend(filled);
        if self.fills.len() > 50 {
            let cut = self.fills.len() - 50;
            self.fills.drain(..cut);
        }
    }

    /// Applies an action of the rule to the book.
    pub fn apply(&mut self, action: &Action) {
        apply(action, &mut self.positions, &mut self.orders);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::{MarginMode, SwapMode};

    fn eurusd() -> SymbolSpec {
        SymbolSpec {
            name: "EURUSD".into(),
            description: String::new(),
            currency_base: "EUR".into(),
            currency_profit: "USD".into(),
            currency_margin: "EUR".into(),
            digits: 5,
            point: 0.00001,
            contract_size: 100_000.0,
            tick_size: 0.00001,
            tick_value: 1.0,
            volume_min: 0.01,
            volume_max: 100.0,
            volume_step: 0.01,
            stops_level: 10,
            swap_long: 0.0,
            swap_short: 0.0,
            swap_mode: SwapMode::Points,
            swap_triple_day: 3,
            margin_mode: MarginMode::Forex,
            margin_rate: 1.0,
            sessions: Vec::new(),
            expiration_modes: Vec::new(),
            filling_modes: Vec::new(),
        }
    }

    fn pos(ticket: u64, side: Side, open: f64, sl: Option<f64>) -> Position {
        Position {
            ticket,
            symbol: "EURUSD".into(),
            side,
            volume: 0.3,
            open_price: open,
            open_time: 0,
            stop_loss: sl,
            take_profit: None,
            current_price: open,
            swap: 0.0,
            commission: 0.0,
            profit: 0.0,
            magic: 0,
            comment: String::new(),
        }
    }

    fn tick(bid: f64) -> Tick {
        Tick {
            symbol: "EURUSD".into(),
            bid,
            ask: bid + 0.0001,
            time: 0,
        }
    }

    fn order(ticket: u64, order_type: OrderType, price: f64) -> PendingOrder {
        PendingOrder {
            ticket,
            symbol: "EURUSD".into(),
            order_type,
            volume: 0.1,
            price,
            stop_limit_price: None,
            stop_loss: None,
            take_profit: None,
            time_setup: 0,
            expiration_mode: Default::default(),
            expiration: None,
            magic: 0,
            comment: String::new(),
        }
    }

    fn trailing(activation: Option<f64>, step: f64) -> ManagedSpec {
        ManagedSpec::TrailingStop {
            position: 7,
            distance: TrailDistance::Points { value: 200.0 },
            step_points: step,
            activation_points: activation,
        }
    }

    fn run(spec: &ManagedSpec, state: &mut ManagedState, positions: &mut Vec<Position>, bid: f64) -> Decision {
        let s = eurusd();
        let t = tick(bid);
        let distance = match spec {
            ManagedSpec::TrailingStop { distance, .. } => distance.price(&s, None),
            _ => None,
        };
        let mut orders = Vec::new();
        let view = View {
            spec: &s,
            tick: &t,
            positions,
            orders: &orders,
        };
        let d = decide(spec, state, &view, distance);
        if let Decision::Act(a) = d {
            confirm(spec, state, &a);
            apply(&a, positions, &mut orders);
        }
        d
    }

    #[test]
    fn a_long_trailing_stop_follows_the_bid_by_its_distance_and_never_backs_off() {
        let spec = trailing(None, 50.0);
        let mut st = ManagedState::default();
        let mut ps = vec![pos(7, Side::Buy, 1.10000, Some(1.09500))];
        // 1.10000 - 0.00200 = 1.09800 is tighter than 1.09500: moves.
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10000),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.09800
            })
        );
        // +30 points: less than the 50-point step.
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10030), Decision::Wait);
        // +50 points: moves by the step.
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10050),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.09850
            })
        );
        // The price falls back: the stop stays.
        assert_eq!(run(&spec, &mut st, &mut ps, 1.09900), Decision::Wait);
        assert_eq!(ps[0].stop_loss, Some(1.09850));
        assert_eq!(st.steps, 2);
        // The position goes: the rule ends.
        ps.clear();
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.09900),
            Decision::End(EndReason::PositionClosed)
        );
    }

    #[test]
    fn a_short_trailing_stop_follows_the_ask_and_rounds_away_from_the_price() {
        let spec = ManagedSpec::TrailingStop {
            position: 7,
            distance: TrailDistance::Pips { value: 15.5 },
            step_points: 0.0,
            activation_points: None,
        };
        let mut st = ManagedState::default();
        let mut ps = vec![pos(7, Side::Sell, 1.10000, None)];
        // ask 1.10010 + 155 points = 1.10165.
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10000),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.10165
            })
        );
        // One point better is enough with no step (one tick).
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.09999),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.10164
            })
        );
        assert_eq!(round_stop(&eurusd(), Side::Sell, 1.101641), 1.10165);
        assert_eq!(round_stop(&eurusd(), Side::Buy, 1.101649), 1.10164);
        assert_eq!(round_stop(&eurusd(), Side::Buy, 1.10164), 1.10164);
    }

    #[test]
    fn activation_waits_for_the_profit_then_trails_for_good() {
        let spec = trailing(Some(300.0), 0.0);
        let mut st = ManagedState::default();
        let mut ps = vec![pos(7, Side::Buy, 1.10000, None)];
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10299), Decision::Wait);
        assert!(!st.activated);
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10300),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.10100
            })
        );
        assert!(st.activated);
        // Below the activation profit again: still trails (nothing to move).
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10200), Decision::Wait);
    }

    #[test]
    fn a_stop_inside_the_stops_level_waits() {
        let spec = ManagedSpec::TrailingStop {
            position: 7,
            distance: TrailDistance::Points { value: 5.0 },
            step_points: 0.0,
            activation_points: None,
        };
        let mut st = ManagedState::default();
        let mut ps = vec![pos(7, Side::Buy, 1.10000, None)];
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10000), Decision::Wait);
    }

    #[test]
    fn breakeven_moves_once_to_the_entry_plus_offset() {
        let spec = ManagedSpec::Breakeven {
            position: 7,
            trigger_points: 100.0,
            offset_points: 10.0,
        };
        let mut st = ManagedState::default();
        let mut ps = vec![pos(7, Side::Buy, 1.10000, Some(1.09500))];
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10099), Decision::Wait);
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10100),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.10010
            })
        );
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10200),
            Decision::End(EndReason::Completed)
        );
        // A short, whose stop is already better than the target: completes without acting.
        let spec = ManagedSpec::Breakeven {
            position: 8,
            trigger_points: 100.0,
            offset_points: 0.0,
        };
        let mut st = ManagedState::default();
        let mut ps = vec![pos(8, Side::Sell, 1.10000, Some(1.09950))];
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.09890),
            Decision::End(EndReason::Completed)
        );
    }

    #[test]
    fn oco_cancels_the_other_order_once_one_fills() {
        let spec = ManagedSpec::Oco { orders: [1, 2] };
        let s = eurusd();
        let t = tick(1.1);
        let mut st = ManagedState::default();
        let both = [order(1, OrderType::BuyStop, 1.2), order(2, OrderType::SellStop, 1.0)];
        let view = View {
            spec: &s,
            tick: &t,
            positions: &[],
            orders: &both,
        };
        assert_eq!(decide(&spec, &mut st, &view, None), Decision::Wait);
        let filled = [pos(1, Side::Buy, 1.2, None)];
        let view = View {
            spec: &s,
            tick: &t,
            positions: &filled,
            orders: &both[1..],
        };
        assert_eq!(
            decide(&spec, &mut st, &view, None),
            Decision::Act(Action::CancelOrder { ticket: 2 })
        );
        assert_eq!(st.resolved_by, Some(1));
        confirm(&spec, &mut st, &Action::CancelOrder { ticket: 2 });
        let view = View {
            spec: &s,
            tick: &t,
            positions: &filled,
            orders: &[],
        };
        assert_eq!(decide(&spec, &mut st, &view, None), Decision::End(EndReason::Completed));
        assert_eq!(st.cancelled, Some(2));
    }

    #[test]
    fn a_bracket_closes_its_levels_and_scales_its_stop() {
        let spec = ManagedSpec::Bracket {
            entry: 7,
            side: Side::Buy,
            stop_loss: 1.09500,
            targets: vec![
                TargetLevel {
                    price: 1.10200,
                    volume: 0.1,
                },
                TargetLevel {
                    price: 1.10400,
                    volume: 0.1,
                },
                TargetLevel {
                    price: 1.10600,
                    volume: 0.1,
                },
            ],
            scale_stop: ScaleStop::PreviousTarget,
        };
        let mut st = ManagedState::default();
        let mut ps = vec![pos(7, Side::Buy, 1.10000, Some(1.09500))];
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10100), Decision::Wait);
        assert!(st.filled);
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10200),
            Decision::Act(Action::ClosePartial { ticket: 7, volume: 0.1 })
        );
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10200),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.10000
            })
        );
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10300), Decision::Wait);
        // A jump past the second level: close, then stop to the first level.
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10500),
            Decision::Act(Action::ClosePartial { ticket: 7, volume: 0.1 })
        );
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10500),
            Decision::Act(Action::SetStop {
                ticket: 7,
                stop_loss: 1.10200
            })
        );
        // The last level is the position's own take profit.
        assert_eq!(run(&spec, &mut st, &mut ps, 1.10700), Decision::Wait);
        assert!((ps[0].volume - 0.1).abs() < 1e-9);
        ps.clear();
        assert_eq!(
            run(&spec, &mut st, &mut ps, 1.10700),
            Decision::End(EndReason::PositionClosed)
        );
    }

    #[test]
    fn a_bracket_whose_entry_goes_away_unfilled_ends() {
        let spec = ManagedSpec::Bracket {
            entry: 9,
            side: Side::Sell,
            stop_loss: 1.2,
            targets: vec![TargetLevel {
                price: 1.0,
                volume: 0.1,
            }],
            scale_stop: ScaleStop::None,
        };
        let s = eurusd();
        let t = tick(1.1);
        let mut st = ManagedState::default();
        let pending = [order(9, OrderType::SellLimit, 1.15)];
        let view = View {
            spec: &s,
            tick: &t,
            positions: &[],
            orders: &pending,
        };
        assert_eq!(decide(&spec, &mut st, &view, None), Decision::Wait);
        let view = View {
            spec: &s,
            tick: &t,
            positions: &[],
            orders: &[],
        };
        assert_eq!(
            decide(&spec, &mut st, &view, None),
            Decision::End(EndReason::EntryCancelled)
        );
    }

    #[test]
    fn the_paper_book_fills_orders_and_hits_stops_like_a_trade_server() {
        let s = eurusd();
        let mut book = Paper {
            orders: vec![order(1, OrderType::BuyStop, 1.10050)],
            ..Paper::default()
        };
        book.on_tick(&s, &tick(1.09900));
        assert_eq!(book.orders.len(), 1);
        book.on_tick(&s, &tick(1.10039)); // ask 1.10049
        assert_eq!(book.positions.len(), 0);
        book.on_tick(&s, &tick(1.10045)); // ask 1.10055
        assert_eq!(book.positions.len(), 1);
        assert!((book.positions[0].open_price - 1.10055).abs() < 1e-9);
        book.apply(&Action::SetStop {
            ticket: 1,
            stop_loss: 1.10000,
        });
        book.on_tick(&s, &tick(1.10001));
        assert_eq!(book.positions.len(), 1);
        book.on_tick(&s, &tick(1.10000));
        assert!(book.positions.is_empty());
        assert_eq!(book.fills.last().unwrap().what, "stop_loss");
    }

    #[test]
    fn state_and_spec_survive_json() {
        let spec = ManagedSpec::TrailingStop {
            position: 1,
            distance: TrailDistance::Atr {
                multiple: 2.0,
                period: 14,
                timeframe: Timeframe::H1,
            },
            step_points: 10.0,
            activation_points: None,
        };
        let back: ManagedSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        let st = ManagedState {
            pending: Some(PendingStep {
                step: 3,
                action: Action::CancelOrder { ticket: 4 },
            }),
            ..Default::default()
        };
        assert_eq!(st.next_step(), 3);
        let back: ManagedState = serde_json::from_value(serde_json::to_value(&st).unwrap()).unwrap();
        assert_eq!(back, st);
        assert_eq!(ManagedState::default().next_step(), 1);
    }
}
