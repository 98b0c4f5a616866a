//! Order validation and trade maths shared by the simulated broker and the
//! service's dry-run preflight.
//!
//! Everything here is pure: prices, quotes and the current instant come in as
//! arguments, nothing reads a clock or does I/O, and no input makes a function
//! panic. Validation reports a [`Rejection`] whose `retcode` is one of the
//! [`retcode`] constants and whose message is written for a trader ("stop loss
//! 1.09995 is too close: …"), not for a programmer.
//!
//! Conventions, as on MetaTrader:
//! - a buy fills at the ask and is closed at the bid; a sell fills at the bid
//!   and is closed at the ask;
//! - `stops_level` is the minimum distance, in points, between the market (or
//!   a pending order's price) and a pending price, stop loss or take profit;
//! - a stop loss or take profit of exactly `0.0` means "none";
//! - margin, profit and swaps are computed in the symbol's margin or profit
//!   currency and converted to the account currency with a rate the caller
//!   supplies (see [`conversion_rate`]).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::Tick;
//! use tradeterm_core::account::OrderType;
//! use tradeterm_core::trading::{fill_price, margin_level};
//!
//! let tick = Tick { symbol: "EURUSD".into(), bid: 1.1000, ask: 1.1002, time: 0 };
//! assert_eq!(fill_price(OrderType::Buy, &tick), 1.1002); // buys fill at the ask
//! assert_eq!(fill_price(OrderType::Sell, &tick), 1.1000); // sells at the bid
//! assert_eq!(margin_level(5_000.0, 1_000.0), Some(500.0));
//! ```

use crate::account::{ExpirationMode, FillingMode, OrderType, Side};
use crate::market::{MarginMode, SwapMode, SymbolSpec, Tick};
use crate::time::{DAY_MS, UnixMs, day_start, to_iso, weekday};

/// Trade server return codes used by rejections and trade results.
pub mod retcode {
    /// The request was executed.
    pub const DONE: &str = "done";
    /// A pending order was accepted.
    pub const PLACED: &str = "placed";
    /// Volume below the minimum, above the maximum or off the volume step.
    pub const INVALID_VOLUME: &str = "invalid_volume";
    /// Price missing, not normalised, or on the wrong side of the market.
    pub const INVALID_PRICE: &str = "invalid_price";
    /// Stop loss or take profit on the wrong side or too close.
    pub const INVALID_STOPS: &str = "invalid_stops";
    /// The symbol's trading session is closed.
    pub const MARKET_CLOSED: &str = "market_closed";
    /// Not enough free margin.
    pub const NO_MONEY: &str = "no_money";
    /// Only part of the volume was filled (an `IOC` order; MT5 `TRADE_RETCODE_DONE_PARTIAL`).
    pub const DONE_PARTIAL: &str = "done_partial";
    /// Expiration mode not allowed for the symbol, or expiry time missing or
    /// in the past (MT5 `TRADE_RETCODE_INVALID_EXPIRATION`).
    pub const INVALID_EXPIRATION: &str = "invalid_expiration";
    /// Filling policy not allowed for the symbol (MT5 `TRADE_RETCODE_INVALID_FILL`).
    pub const INVALID_FILL: &str = "invalid_fill";
    /// The request cannot be carried out as asked (close-by on a netting
    /// account, positions of different symbols; MT5 `TRADE_RETCODE_INVALID`).
    pub const INVALID_REQUEST: &str = "invalid_request";
    /// The market could not fill the order as its filling policy demands
    /// (a `FOK` order larger than the liquidity; MT5 `TRADE_RETCODE_REJECT`).
    pub const REJECTED: &str = "rejected";
    /// A modification that changes nothing (MT5 `TRADE_RETCODE_NO_CHANGES`).
    pub const NO_CHANGES: &str = "no_changes";
}

/// The parts of an order that validation looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrderParams {
    /// Market, limit or stop; buy or sell.
    pub order_type: OrderType,
    /// Volume in lots.
    pub volume: f64,
    /// Trigger price of a pending order (ignored for market orders); the
    /// stop price of a stop-limit order.
    pub price: Option<f64>,
    /// Price of the limit order a stop-limit order places (stop-limit orders only).
    pub stop_limit_price: Option<f64>,
    /// Stop loss (`None` or `0.0`: none).
    pub stop_loss: Option<f64>,
    /// Take profit (`None` or `0.0`: none).
    pub take_profit: Option<f64>,
}

/// Why an order (or a modification) would be refused by the trade server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{retcode}: {message}")]
pub struct Rejection {
    /// One of the [`retcode`] constants.
    pub retcode: &'static str,
    /// Explanation for a trader.
    pub message: String,
}

impl Rejection {
    /// Builds a rejection.
    pub fn new(retcode: &'static str, message: impl Into<String>) -> Self {
        Self {
            retcode,
            message: message.into(),
        }
    }
}

/// Treats `Some(0.0)` as "no level", as MetaTrader does.
pub fn level(v: Option<f64>) -> Option<f64> {
    v.filter(|x| *x != 0.0)
}

/// Price at which an order of this type fills now: the ask for buys, the bid
/// for sells.
pub fn fill_price(order_type: OrderType, tick: &Tick) -> f64 {
    match order_type.side() {
        Side::Buy => tick.ask,
        Side::Sell => tick.bid,
    }
}

/// Price at which a position of this side is closed now: the bid for a long,
/// the ask for a short.
pub fn close_price(side: Side, tick: &Tick) -> f64 {
    match side {
        Side::Buy => tick.bid,
        Side::Sell => tick.ask,
    }
}

/// Formats a price with the symbol's digits.
pub fn fmt_price(spec: &SymbolSpec, price: f64) -> String {
    format!("{:.*}", spec.digits.min(12) as usize, price)
}

fn point(spec: &SymbolSpec) -> f64 {
    if spec.point.is_finite() && spec.point > 0.0 {
        spec.point
    } else {
        10f64.powi(-(spec.digits.min(12) as i32))
    }
}

/// Whether `price` sits on the symbol's price grid (digits and tick size),
/// within a thousandth of a point.
pub fn is_normalized(spec: &SymbolSpec, price: f64) -> bool {
    price.is_finite() && (price - spec.normalize_price(price)).abs() <= point(spec) * 1e-3
}

/// Checks a volume against the symbol's minimum, maximum and step (with a
/// tolerance of a millionth of a step for binary floating point).
pub fn check_volume(spec: &SymbolSpec, volume: f64) -> Result<(), Rejection> {
    let bad = |m: String| Err(Rejection::new(retcode::INVALID_VOLUME, m));
    if !volume.is_finite() || volume <= 0.0 {
        return bad(format!("volume {volume} is not a positive number of lots"));
    }
    let step = if spec.volume_step.is_finite() && spec.volume_step > 0.0 {
        spec.volume_step
    } else {
        0.0
    };
    let eps = if step > 0.0 { step * 1e-6 } else { 1e-9 };
    if volume < spec.volume_min - eps {
        return bad(format!(
            "volume {volume} is below the minimum of {} lots for {}",
            spec.volume_min, spec.name
        ));
    }
    if volume > spec.volume_max + eps {
        return bad(format!(
            "volume {volume} is above the maximum of {} lots for {}",
            spec.volume_max, spec.name
        ));
    }
    if step > 0.0 {
        let steps = volume / step;
        if (steps - steps.round()).abs() > 1e-6 {
            return bad(format!(
                "volume {volume} is not a multiple of the volume step {step} for {}",
                spec.name
            ));
        }
    }
    Ok(())
}

/// About ±10 000 years around 1970, in milliseconds.
const SANE_MS: i64 = 10_000 * 366 * DAY_MS;

/// Next instant at or after `t` when the symbol's session is open, looking at
/// most 8 days ahead. `None` if the symbol never opens in that horizon.
pub fn next_session_open(spec: &SymbolSpec, t: UnixMs) -> Option<UnixMs> {
    // Far outside any calendar the arithmetic below could overflow.
    if !(-SANE_MS..=SANE_MS).contains(&t) {
        return None;
    }
    if spec.is_open(t) {
        return Some(t);
    }
    let day0 = day_start(t);
    (0..=8)
        .flat_map(|d| {
            let start = day0 + d * DAY_MS;
            let wd = weekday(start);
            spec.sessions
                .iter()
                .filter(move |w| w.day == wd && w.open < w.close)
                .map(move |w| start + i64::from(w.open) * 60_000)
        })
        .filter(|&open| open >= t)
        .min()
}

/// Checks that the symbol's session is open at `now_ms`.
pub fn check_market_open(spec: &SymbolSpec, now_ms: UnixMs) -> Result<(), Rejection> {
    if spec.is_open(now_ms) {
        return Ok(());
    }
    let when = match next_session_open(spec, now_ms) {
        Some(t) => format!("; trading resumes at {}", to_iso(t)),
        None => String::new(),
    };
    Err(Rejection::new(
        retcode::MARKET_CLOSED,
        format!("the {} market is closed at {}{when}", spec.name, to_iso(now_ms)),
    ))
}

fn check_quote(spec: &SymbolSpec, tick: &Tick) -> Result<(), Rejection> {
    if !(tick.bid.is_finite() && tick.ask.is_finite() && tick.bid > 0.0 && tick.ask >= tick.bid) {
        return Err(Rejection::new(
            retcode::INVALID_PRICE,
            format!("there is no valid quote for {}", spec.name),
        ));
    }
    Ok(())
}

/// Distance from `from` to `to` in points, positive when `to` is above `from`.
fn points_between(spec: &SymbolSpec, from: f64, to: f64) -> f64 {
    (to - from) / point(spec)
}

/// At least `stops_level` points away and strictly on the right side (at
/// least one point when the stops level is zero).
fn far_enough(spec: &SymbolSpec, distance_points: f64) -> bool {
    distance_points >= f64::from(spec.stops_level) - 1e-6 && distance_points > 0.5
}

/// A reference price named for messages ("the bid 1.10000").
#[derive(Debug, Clone, Copy)]
struct Ref {
    name: &'static str,
    price: f64,
}

fn check_levels(
    spec: &SymbolSpec,
    side: Side,
    sl_ref: Ref,
    tp_ref: Ref,
    stop_loss: Option<f64>,
    take_profit: Option<f64>,
) -> Result<(), Rejection> {
    let dir = match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    };
    for (what, lvl, reference, below) in [
        ("stop loss", level(stop_loss), sl_ref, side == Side::Buy),
        ("take profit", level(take_profit), tp_ref, side == Side::Sell),
    ] {
        let Some(p) = lvl else { continue };
        if !p.is_finite() || p < 0.0 {
            return Err(Rejection::new(
                retcode::INVALID_STOPS,
                format!("{what} {p} is not a valid price"),
            ));
        }
        if !is_normalized(spec, p) {
            return Err(Rejection::new(
                retcode::INVALID_STOPS,
                format!(
                    "{what} {p} is not a valid {} price: use {} decimals in steps of {}",
                    spec.name, spec.digits, spec.tick_size
                ),
            ));
        }
        let (distance, side_word, limit) = if below {
            (
                points_between(spec, p, reference.price),
                "below",
                reference.price - f64::from(spec.stops_level) * point(spec),
            )
        } else {
            (
                points_between(spec, reference.price, p),
                "above",
                reference.price + f64::from(spec.stops_level) * point(spec),
            )
        };
        if distance <= 0.5 {
            return Err(Rejection::new(
                retcode::INVALID_STOPS,
                format!(
                    "{what} {} is on the wrong side: a {dir}'s {what} must be {side_word} {} {}",
                    fmt_price(spec, p),
                    reference.name,
                    fmt_price(spec, reference.price)
                ),
            ));
        }
        if !far_enough(spec, distance) {
            let bound = if below { "at most" } else { "at least" };
            return Err(Rejection::new(
                retcode::INVALID_STOPS,
                format!(
                    "{what} {} is too close: a {dir}'s {what} must be at least {} points {side_word} {} {} ({bound} {})",
                    fmt_price(spec, p),
                    spec.stops_level,
                    reference.name,
                    fmt_price(spec, reference.price),
                    fmt_price(spec, limit)
                ),
            ));
        }
    }
    Ok(())
}

/// Validates a new order against the symbol's specification, the current
/// quote and the session at `now_ms`: volume (min, max, step), market open,
/// pending price normalised and on the correct side of the market by at least
/// the stops level, and stop loss / take profit normalised, on the right side
/// of the entry and at least `stops_level` points away from it.
///
/// For market orders the stop loss and take profit are measured from both the
/// entry (ask for a buy) and the price the position would close at now (bid
/// for a buy), whichever is nearer; for pending orders from the order price.
///
/// Margin is not checked here (it needs the account): see
/// [`margin_required`] and [`check_free_margin`].
pub fn validate_order(spec: &SymbolSpec, tick: &Tick, req: &OrderParams, now_ms: UnixMs) -> Result<(), Rejection> {
    if req.order_type == OrderType::CloseBy {
        return Err(Rejection::new(
            retcode::INVALID_REQUEST,
            "CLOSE_BY is what a close-by records in the order history, not an order to place: close a position by an opposite one with close_by",
        ));
    }
    check_volume(spec, req.volume)?;
    check_market_open(spec, now_ms)?;
    check_quote(spec, tick)?;
    let side = req.order_type.side();
    if req.order_type.is_market() {
        let (sl_ref, tp_ref) = match side {
            Side::Buy => (
                Ref {
                    name: "the bid",
                    price: tick.bid,
                },
                Ref {
                    name: "the ask",
                    price: tick.ask,
                },
            ),
            Side::Sell => (
                Ref {
                    name: "the ask",
                    price: tick.ask,
                },
                Ref {
                    name: "the bid",
                    price: tick.bid,
                },
            ),
        };
        return check_levels(spec, side, sl_ref, tp_ref, req.stop_loss, req.take_profit);
    }
    let Some(price) = req.price else {
        return Err(Rejection::new(retcode::INVALID_PRICE, "a pending order needs a price"));
    };
    if !price.is_finite() || price <= 0.0 {
        return Err(Rejection::new(
            retcode::INVALID_PRICE,
            format!("order price {price} is not a valid price"),
        ));
    }
    if !is_normalized(spec, price) {
        return Err(Rejection::new(
            retcode::INVALID_PRICE,
            format!(
                "order price {price} is not a valid {} price: use {} decimals in steps of {}",
                spec.name, spec.digits, spec.tick_size
            ),
        ));
    }
    let stops = f64::from(spec.stops_level) * point(spec);
    // (market reference, whether the price must be below it, its name, kind)
    let (reference, below, ref_name, kind) = match req.order_type {
        OrderType::BuyLimit => (tick.ask, true, "the ask", "buy limit"),
        OrderType::SellLimit => (tick.bid, false, "the bid", "sell limit"),
        OrderType::BuyStop => (tick.ask, false, "the ask", "buy stop"),
        OrderType::SellStop => (tick.bid, true, "the bid", "sell stop"),
        OrderType::BuyStopLimit => (tick.ask, false, "the ask", "buy stop limit"),
        OrderType::SellStopLimit => (tick.bid, true, "the bid", "sell stop limit"),
        OrderType::Buy | OrderType::Sell | OrderType::CloseBy => (tick.ask, false, "the ask", "market"),
    };
    let distance = if below {
        points_between(spec, price, reference)
    } else {
        points_between(spec, reference, price)
    };
    if !far_enough(spec, distance) {
        let (word, limit, bound) = if below {
            ("below", reference - stops, "at most")
        } else {
            ("above", reference + stops, "at least")
        };
        return Err(Rejection::new(
            retcode::INVALID_PRICE,
            format!(
                "{kind} price {} must be at least {} points {word} {ref_name} {} ({bound} {})",
                fmt_price(spec, price),
                spec.stops_level.max(1),
                fmt_price(spec, reference),
                fmt_price(spec, limit)
            ),
        ));
    }
    if req.order_type.is_stop_limit() {
        let limit = check_stop_limit_price(spec, req.order_type, price, req.stop_limit_price)?;
        let at = Ref {
            name: "the stop-limit price",
            price: limit,
        };
        return check_levels(spec, side, at, at, req.stop_loss, req.take_profit);
    }
    let at = Ref {
        name: "the order price",
        price,
    };
    check_levels(spec, side, at, at, req.stop_loss, req.take_profit)
}

/// Checks the stop-limit price of a stop-limit order whose stop is `price`:
/// present, on the price grid, and on the limit side of the stop (below it
/// for a buy stop limit, above it for a sell stop limit), as MetaTrader 5
/// places the limit order there when the stop is reached. Returns it.
pub fn check_stop_limit_price(
    spec: &SymbolSpec,
    order_type: OrderType,
    price: f64,
    stop_limit_price: Option<f64>,
) -> Result<f64, Rejection> {
    let Some(limit) = stop_limit_price.filter(|p| *p != 0.0) else {
        return Err(Rejection::new(
            retcode::INVALID_PRICE,
            "a stop-limit order needs a stop_limit_price: the price of the limit order placed when the stop is reached",
        ));
    };
    if !limit.is_finite() || limit <= 0.0 || !is_normalized(spec, limit) {
        return Err(Rejection::new(
            retcode::INVALID_PRICE,
            format!(
                "stop-limit price {limit} is not a valid {} price: use {} decimals in steps of {}",
                spec.name, spec.digits, spec.tick_size
            ),
        ));
    }
    let buy = order_type.side() == Side::Buy;
    let ok = if buy {
        points_between(spec, limit, price) > 0.5
    } else {
        points_between(spec, price, limit) > 0.5
    };
    if !ok {
        let (kind, word) = if buy {
            ("buy stop limit", "below")
        } else {
            ("sell stop limit", "above")
        };
        return Err(Rejection::new(
            retcode::INVALID_PRICE,
            format!(
                "a {kind}'s stop-limit price {} must be {word} its stop price {}",
                fmt_price(spec, limit),
                fmt_price(spec, price)
            ),
        ));
    }
    Ok(limit)
}

/// Checks a pending order's expiration against the symbol's allowed modes
/// (`SymbolSpec::expiration_modes`; an empty list, an agent that does not
/// report them, allows every mode) and the time: `SPECIFIED` needs an
/// `expiration` after `now_ms`, `SPECIFIED_DAY` one whose day has not ended.
pub fn check_expiration(
    spec: &SymbolSpec,
    mode: ExpirationMode,
    expiration: Option<UnixMs>,
    now_ms: UnixMs,
) -> Result<(), Rejection> {
    if !spec.expiration_modes.is_empty() && !spec.expiration_modes.contains(&mode) {
        let allowed: Vec<String> = spec.expiration_modes.iter().map(|m| expiration_name(*m)).collect();
        return Err(Rejection::new(
            retcode::INVALID_EXPIRATION,
            format!(
                "{} does not allow expiration mode {}; allowed: {}",
                spec.name,
                expiration_name(mode),
                allowed.join(", ")
            ),
        ));
    }
    if !mode.needs_time() {
        return Ok(());
    }
    let Some(at) = expiration else {
        return Err(Rejection::new(
            retcode::INVALID_EXPIRATION,
            format!("expiration mode {} needs an expiration time", expiration_name(mode)),
        ));
    };
    match expiry_deadline(mode, Some(at), now_ms) {
        Some(deadline) if deadline > now_ms => Ok(()),
        _ => Err(Rejection::new(
            retcode::INVALID_EXPIRATION,
            format!("expiration {} is in the past (now {})", to_iso(at), to_iso(now_ms)),
        )),
    }
}

/// The instant a pending order placed at `placed_ms` expires: never for
/// `GTC`, the end of the placement's (UTC) day for `DAY`, the `expiration`
/// itself for `SPECIFIED`, and the end of the expiration's day (after
/// 23:59:59.999) for `SPECIFIED_DAY`.
pub fn expiry_deadline(mode: ExpirationMode, expiration: Option<UnixMs>, placed_ms: UnixMs) -> Option<UnixMs> {
    match mode {
        ExpirationMode::Gtc => None,
        ExpirationMode::Day => Some(day_start(placed_ms).saturating_add(DAY_MS)),
        ExpirationMode::Specified => expiration,
        ExpirationMode::SpecifiedDay => expiration.map(|t| day_start(t).saturating_add(DAY_MS)),
    }
}

/// The instant a pending order of `spec`'s symbol placed at `placed_ms`
/// actually expires: [`expiry_deadline`], except that an order good for a
/// day (`DAY`, `SPECIFIED_DAY`) whose day ends outside the symbol's trading
/// sessions expires at the next trading time after it. MetaTrader 5 states
/// it so: such an order "will be valid until 23:59:59 of the specified day
/// (if this time does not fall within the trading session, the expiration
/// will occur at the nearest next trading time)" (MQL5 book, "Pending order
/// expiration dates"; the same for `SYMBOL_EXPIRATION_SPECIFIED_DAY`). So a
/// FX order good for Friday lives until Sunday's open. A symbol without
/// sessions is always open; a `SPECIFIED` time is kept as given.
pub fn expiry_instant(
    spec: &SymbolSpec,
    mode: ExpirationMode,
    expiration: Option<UnixMs>,
    placed_ms: UnixMs,
) -> Option<UnixMs> {
    let deadline = expiry_deadline(mode, expiration, placed_ms)?;
    match mode {
        // 23:59:59 of the day, as MetaTrader names the day's last instant.
        ExpirationMode::Day | ExpirationMode::SpecifiedDay if !spec.is_open(deadline.saturating_sub(1_000)) => {
            Some(next_session_open(spec, deadline).unwrap_or(deadline))
        }
        _ => Some(deadline),
    }
}

/// The filling policy of an order: the caller's, when the symbol allows it
/// (`SymbolSpec::filling_modes`; an empty list allows any), or else the first
/// the symbol allows of `FOK`, `IOC`, `RETURN` (`None` when the symbol
/// reports none: the agent decides).
pub fn choose_filling(spec: &SymbolSpec, requested: Option<FillingMode>) -> Result<Option<FillingMode>, Rejection> {
    match requested {
        Some(f) if spec.filling_modes.is_empty() || spec.filling_modes.contains(&f) => Ok(Some(f)),
        Some(f) => {
            let allowed: Vec<String> = spec.filling_modes.iter().map(|m| filling_name(*m)).collect();
            Err(Rejection::new(
                retcode::INVALID_FILL,
                format!(
                    "{} does not allow filling policy {}; allowed: {}",
                    spec.name,
                    filling_name(f),
                    allowed.join(", ")
                ),
            ))
        }
        None => Ok([FillingMode::Fok, FillingMode::Ioc, FillingMode::Return]
            .into_iter()
            .find(|f| spec.filling_modes.contains(f))),
    }
}

fn expiration_name(m: ExpirationMode) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn filling_name(m: FillingMode) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Validates new stop loss / take profit levels of an open position: each must
/// be on the right side of, and at least `stops_level` points from, the price
/// the position would close at now (bid for a long, ask for a short). Also
/// checks that the market is open.
pub fn validate_position_levels(
    spec: &SymbolSpec,
    tick: &Tick,
    side: Side,
    stop_loss: Option<f64>,
    take_profit: Option<f64>,
    now_ms: UnixMs,
) -> Result<(), Rejection> {
    check_market_open(spec, now_ms)?;
    check_quote(spec, tick)?;
    let r = match side {
        Side::Buy => Ref {
            name: "the bid",
            price: tick.bid,
        },
        Side::Sell => Ref {
            name: "the ask",
            price: tick.ask,
        },
    };
    check_levels(spec, side, r, r, stop_loss, take_profit)
}

/// Validates the volume to close of a position of `position_volume` lots:
/// on the volume step, not more than the position, and leaving either nothing
/// or at least the minimum volume.
pub fn check_close_volume(spec: &SymbolSpec, position_volume: f64, volume: f64) -> Result<(), Rejection> {
    check_volume(spec, volume)?;
    let eps = spec.volume_step.abs().max(1e-9) * 1e-6;
    if volume > position_volume + eps {
        return Err(Rejection::new(
            retcode::INVALID_VOLUME,
            format!("cannot close {volume} lots of a {position_volume}-lot position"),
        ));
    }
    let rest = position_volume - volume;
    if rest > eps && rest < spec.volume_min - eps {
        return Err(Rejection::new(
            retcode::INVALID_VOLUME,
            format!(
                "closing {volume} lots would leave {} lots, below the minimum of {}; close all {position_volume} lots instead",
                round_volume(spec, rest),
                spec.volume_min
            ),
        ));
    }
    Ok(())
}

/// Rounds a volume to the symbol's volume step (removes binary noise such as
/// `0.30000000000000004`).
pub fn round_volume(spec: &SymbolSpec, volume: f64) -> f64 {
    if spec.volume_step.is_finite() && spec.volume_step > 0.0 {
        let r = (volume / spec.volume_step).round() * spec.volume_step;
        (r * 1e8).round() / 1e8
    } else {
        volume
    }
}

/// Margin for `volume` lots, in the account currency, per the symbol's
/// [`MarginMode`]:
/// - `Forex`: `volume × contract_size / leverage × margin_rate` in the margin
///   (base) currency; `price` is not used;
/// - `CfdLeverage`: `volume × contract_size × price / leverage × margin_rate`;
/// - `Cfd`: `volume × contract_size × price × margin_rate` (no leverage).
///
/// The result is multiplied by `margin_ccy_to_account_rate` (e.g. EUR→USD
/// for EURUSD on a USD account). A leverage of 0 counts as 1.
pub fn margin_required(
    spec: &SymbolSpec,
    volume: f64,
    price: f64,
    leverage: u32,
    margin_ccy_to_account_rate: f64,
) -> f64 {
    let lev = f64::from(leverage.max(1));
    let notional = volume * spec.contract_size;
    let m = match spec.margin_mode {
        MarginMode::Forex => notional / lev,
        MarginMode::CfdLeverage => notional * price / lev,
        MarginMode::Cfd => notional * price,
    };
    m * spec.margin_rate * margin_ccy_to_account_rate
}

/// Checks that `free_margin` covers `required`.
pub fn check_free_margin(free_margin: f64, required: f64, currency: &str) -> Result<(), Rejection> {
    if required.is_finite() && free_margin.is_finite() && free_margin - required >= -1e-9 {
        return Ok(());
    }
    Err(Rejection::new(
        retcode::NO_MONEY,
        format!(
            "not enough money: the order needs {required:.2} {currency} of margin but only {free_margin:.2} {currency} is free"
        ),
    ))
}

/// Margin level in percent (`equity / margin × 100`), `None` without margin.
pub fn margin_level(equity: f64, margin: f64) -> Option<f64> {
    (margin > 0.0 && margin.is_finite()).then(|| equity / margin * 100.0)
}

/// Profit of `volume` lots opened at `open` and closed at `close`, in the
/// account currency: `(close − open) × sign × volume × contract_size × rate`,
/// where `rate` converts the profit currency (JPY for USDJPY) to the account
/// currency.
pub fn profit(
    spec: &SymbolSpec,
    side: Side,
    volume: f64,
    open: f64,
    close: f64,
    profit_ccy_to_account_rate: f64,
) -> f64 {
    (close - open) * side.sign() * volume * spec.contract_size * profit_ccy_to_account_rate
}

/// Swap charged for holding `volume` lots over one rollover whose weekday is
/// `weekday` (0 = Sunday), in the account currency. Three times the nightly
/// amount when `weekday` is the symbol's `swap_triple_day`.
///
/// - `Points`: `swap × point × contract_size × volume`, profit currency → `rate`;
/// - `Currency`: `swap × volume`, already in the account currency (`rate` unused);
/// - `Interest`: `volume × contract_size × price × swap / 100 / 360`, profit currency → `rate`.
///
/// Which nights are charged at all (on MetaTrader: Monday to Friday) is the
/// caller's business.
pub fn swap_for_night(spec: &SymbolSpec, side: Side, volume: f64, price: f64, rate: f64, weekday: u8) -> f64 {
    let per = match side {
        Side::Buy => spec.swap_long,
        Side::Sell => spec.swap_short,
    };
    let night = match spec.swap_mode {
        SwapMode::Disabled => 0.0,
        SwapMode::Points => per * spec.point * spec.contract_size * volume * rate,
        SwapMode::Currency => per * volume,
        SwapMode::Interest => volume * spec.contract_size * price * per / 100.0 / 360.0 * rate,
    };
    if weekday == spec.swap_triple_day {
        3.0 * night
    } else {
        night
    }
}

/// Loss in the account currency if the stop loss is hit: a positive number,
/// or `0.0` when the stop is at or beyond break-even (it locks in a profit).
pub fn risk_at_stop(
    spec: &SymbolSpec,
    side: Side,
    volume: f64,
    open: f64,
    stop_loss: f64,
    profit_ccy_to_account_rate: f64,
) -> f64 {
    let p = profit(spec, side, volume, open, stop_loss, profit_ccy_to_account_rate);
    if p < 0.0 { -p } else { 0.0 }
}

/// A quote of a currency pair, for [`conversion_rate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quote<'a> {
    /// Base currency (`EUR` in EURUSD).
    pub base: &'a str,
    /// Quote currency (`USD` in EURUSD).
    pub quote: &'a str,
    /// Bid.
    pub bid: f64,
    /// Ask.
    pub ask: f64,
}

impl<'a> Quote<'a> {
    /// The quote of a symbol: its base and profit currencies with the tick's prices.
    pub fn of(spec: &'a SymbolSpec, tick: &Tick) -> Self {
        Self {
            base: &spec.currency_base,
            quote: &spec.currency_profit,
            bid: tick.bid,
            ask: tick.ask,
        }
    }

    fn mid(&self) -> Option<f64> {
        let m = (self.bid + self.ask) / 2.0;
        (m.is_finite() && m > 0.0).then_some(m)
    }
}

fn one_leg(from: &str, to: &str, quotes: &[Quote<'_>]) -> Option<f64> {
    if from.eq_ignore_ascii_case(to) {
        return Some(1.0);
    }
    quotes.iter().find_map(|q| {
        if q.base.eq_ignore_ascii_case(from) && q.quote.eq_ignore_ascii_case(to) {
            q.mid()
        } else if q.base.eq_ignore_ascii_case(to) && q.quote.eq_ignore_ascii_case(from) {
            q.mid().map(|m| 1.0 / m)
        } else {
            None
        }
    })
}

/// Rate that converts an amount in currency `from` into currency `to`, from
/// the mid prices of the available quotes: `1.0` for the same currency, the
/// direct pair (`from`/`to`), the inverse pair (`to`/`from`), or else a cross
/// through one intermediate currency (JPY→EUR through USDJPY and EURUSD).
/// `None` when no combination of the quotes links the two currencies.
pub fn conversion_rate(from: &str, to: &str, quotes: &[Quote<'_>]) -> Option<f64> {
    if let Some(r) = one_leg(from, to, quotes) {
        return Some(r);
    }
    // Cross through a currency that appears in a quote with `from`.
    quotes.iter().find_map(|q| {
        let via = if q.base.eq_ignore_ascii_case(from) {
            q.quote
        } else if q.quote.eq_ignore_ascii_case(from) {
            q.base
        } else {
            return None;
        };
        Some(one_leg(from, via, quotes)? * one_leg(via, to, quotes)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::SessionWindow;
    use crate::time::parse_iso;

    fn fx_sessions() -> Vec<SessionWindow> {
        let mut s = vec![SessionWindow {
            day: 0,
            open: 22 * 60,
            close: 1440,
        }];
        for day in 1..=4 {
            s.push(SessionWindow {
                day,
                open: 0,
                close: 1440,
            });
        }
        s.push(SessionWindow {
            day: 5,
            open: 0,
            close: 22 * 60,
        });
        s
    }

    fn eurusd() -> SymbolSpec {
        SymbolSpec {
            name: "EURUSD".into(),
            description: "Euro vs US Dollar".into(),
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
            swap_long: -7.5,
            swap_short: 2.1,
            swap_mode: SwapMode::Points,
            swap_triple_day: 3,
            margin_mode: MarginMode::Forex,
            margin_rate: 1.0,
            sessions: fx_sessions(),
            expiration_modes: Vec::new(),
            filling_modes: Vec::new(),
        }
    }

    fn usdjpy() -> SymbolSpec {
        SymbolSpec {
            name: "USDJPY".into(),
            currency_base: "USD".into(),
            currency_profit: "JPY".into(),
            currency_margin: "USD".into(),
            digits: 3,
            point: 0.001,
            tick_size: 0.001,
            tick_value: 100.0,
            swap_long: 12.0,
            swap_short: -25.0,
            ..eurusd()
        }
    }

    fn us500() -> SymbolSpec {
        SymbolSpec {
            name: "US500".into(),
            currency_base: "US500".into(),
            currency_profit: "USD".into(),
            currency_margin: "USD".into(),
            digits: 2,
            point: 0.01,
            contract_size: 1.0,
            tick_size: 0.01,
            tick_value: 0.01,
            volume_min: 0.1,
            volume_step: 0.1,
            margin_mode: MarginMode::Cfd,
            margin_rate: 0.05,
            ..eurusd()
        }
    }

    /// Wednesday 2026-11-18 12:00 UTC: FX open.
    fn wed_noon() -> UnixMs {
        parse_iso("2026-11-18T12:00:00Z").unwrap()
    }

    fn tick(bid: f64, ask: f64) -> Tick {
        Tick {
            symbol: "EURUSD".into(),
            bid,
            ask,
            time: wed_noon(),
        }
    }

    fn market(order_type: OrderType, volume: f64) -> OrderParams {
        OrderParams {
            order_type,
            volume,
            price: None,
            stop_loss: None,
            take_profit: None,
            stop_limit_price: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn stop_limits_expirations_and_fillings_follow_the_symbol() {
        use crate::account::{ExpirationMode as E, FillingMode as F};
        let mut s = eurusd();
        let t = tick(1.10000, 1.10010);
        let now = wed_noon();
        let sl = |price: f64, limit: Option<f64>| OrderParams {
            order_type: OrderType::BuyStopLimit,
            volume: 0.1,
            price: Some(price),
            stop_limit_price: limit,
            stop_loss: None,
            take_profit: None,
        };
        assert!(validate_order(&s, &t, &sl(1.10100, Some(1.10050)), now).is_ok());
        for bad in [
            sl(1.10100, None),
            sl(1.10100, Some(1.10150)),
            sl(1.10000, Some(1.09950)),
        ] {
            assert_eq!(
                validate_order(&s, &t, &bad, now).unwrap_err().retcode,
                retcode::INVALID_PRICE
            );
        }
        // Empty lists (an older agent) allow everything; the filling is then the agent's.
        assert!(check_expiration(&s, E::SpecifiedDay, Some(now), now).is_ok());
        assert_eq!(choose_filling(&s, None), Ok(None));
        s.expiration_modes = vec![E::Gtc, E::Specified];
        s.filling_modes = vec![F::Ioc, F::Return];
        assert_eq!(
            check_expiration(&s, E::Day, None, now).unwrap_err().retcode,
            retcode::INVALID_EXPIRATION
        );
        assert!(check_expiration(&s, E::Specified, Some(now + 1), now).is_ok());
        assert!(
            check_expiration(&s, E::Specified, Some(now), now).is_err(),
            "not after now"
        );
        assert!(check_expiration(&s, E::Specified, None, now).is_err());
        assert_eq!(choose_filling(&s, None), Ok(Some(F::Ioc)), "FOK first, but not allowed");
        assert_eq!(
            choose_filling(&s, Some(F::Fok)).unwrap_err().retcode,
            retcode::INVALID_FILL
        );
        assert_eq!(expiry_deadline(E::Day, None, now), Some(day_start(now) + DAY_MS));
        assert_eq!(
            expiry_deadline(E::SpecifiedDay, Some(now + 5), now),
            Some(day_start(now) + DAY_MS)
        );
        assert_eq!(expiry_deadline(E::Gtc, Some(now), now), None);
    }

    /// A day order whose day ends outside the sessions expires at the next
    /// trading time (MT5's rule); inside them, at the end of the day.
    #[test]
    fn a_day_order_ending_outside_the_sessions_expires_at_the_next_open() {
        use crate::account::ExpirationMode as E;
        use crate::market::SessionWindow;
        let mut spec = eurusd();
        // FX hours: Sunday 22:00 to Friday 22:00 UTC.
        spec.sessions = vec![SessionWindow {
            day: 0,
            open: 22 * 60,
            close: 24 * 60,
        }];
        spec.sessions.extend((1..=4).map(|day| SessionWindow {
            day,
            open: 0,
            close: 24 * 60,
        }));
        spec.sessions.push(SessionWindow {
            day: 5,
            open: 0,
            close: 22 * 60,
        });
        let wed = parse_iso("2026-11-18T10:00:00Z").unwrap();
        let thu = parse_iso("2026-11-19T00:00:00Z").unwrap();
        assert_eq!(expiry_instant(&spec, E::Day, None, wed), Some(thu));
        let fri = parse_iso("2026-11-20T10:00:00Z").unwrap();
        let sun_open = parse_iso("2026-11-22T22:00:00Z").unwrap();
        assert_eq!(expiry_instant(&spec, E::Day, None, fri), Some(sun_open));
        assert_eq!(
            expiry_instant(&spec, E::SpecifiedDay, Some(fri + 3_600_000), wed),
            Some(sun_open)
        );
        assert_eq!(expiry_instant(&spec, E::SpecifiedDay, Some(wed), wed), Some(thu));
        // A time given to the millisecond is kept, open or not.
        let sat = parse_iso("2026-11-21T12:00:00Z").unwrap();
        assert_eq!(expiry_instant(&spec, E::Specified, Some(sat), wed), Some(sat));
        assert_eq!(expiry_instant(&spec, E::Gtc, None, wed), None);
        // No sessions: always open, the end of the day.
        spec.sessions.clear();
        assert_eq!(
            expiry_instant(&spec, E::Day, None, fri),
            Some(parse_iso("2026-11-21T00:00:00Z").unwrap())
        );
    }

    #[test]
    fn a_close_by_is_never_an_order_to_place() {
        let t = tick(1.10000, 1.10010);
        let mut req = market(OrderType::CloseBy, 0.1);
        let e = validate_order(&eurusd(), &t, &req, wed_noon()).unwrap_err();
        assert_eq!(e.retcode, retcode::INVALID_REQUEST);
        assert!(e.message.contains("close_by"), "{e}");
        req.price = Some(1.10100);
        assert_eq!(
            validate_order(&eurusd(), &t, &req, wed_noon()).unwrap_err().retcode,
            retcode::INVALID_REQUEST,
            "not as a pending order either"
        );
    }

    #[test]
    fn volume_limits_and_step() {
        let s = eurusd();
        assert!(check_volume(&s, 0.01).is_ok());
        assert!(check_volume(&s, 0.07).is_ok()); // 0.07 / 0.01 = 7.000000000000001
        assert!(check_volume(&s, 0.3).is_ok());
        assert!(check_volume(&s, 100.0).is_ok());
        for bad in [0.0, -1.0, 0.005, 0.015, 100.01, f64::NAN, f64::INFINITY] {
            let e = check_volume(&s, bad).unwrap_err();
            assert_eq!(e.retcode, retcode::INVALID_VOLUME, "{bad}");
        }
        let e = check_volume(&s, 0.015).unwrap_err();
        assert!(e.message.contains("volume step 0.01"), "{}", e.message);
        let e = check_volume(&s, 0.001).unwrap_err();
        assert!(
            e.message.contains("below the minimum of 0.01 lots for EURUSD"),
            "{}",
            e.message
        );
    }

    #[test]
    fn market_hours() {
        let s = eurusd();
        let sat = parse_iso("2026-11-21T10:00:00Z").unwrap();
        let e = validate_order(&s, &tick(1.1, 1.10008), &market(OrderType::Buy, 0.1), sat).unwrap_err();
        assert_eq!(e.retcode, retcode::MARKET_CLOSED);
        assert!(e.message.contains("resumes at 2026-11-22T22:00:00Z"), "{}", e.message);
        assert!(validate_order(&s, &tick(1.1, 1.10008), &market(OrderType::Buy, 0.1), wed_noon()).is_ok());
        assert_eq!(next_session_open(&s, wed_noon()), Some(wed_noon()));
        let fri_late = parse_iso("2026-11-20T22:00:00Z").unwrap();
        assert!(!s.is_open(fri_late));
        assert_eq!(
            next_session_open(&s, fri_late),
            Some(parse_iso("2026-11-22T22:00:00Z").unwrap())
        );
        let never = SymbolSpec {
            sessions: vec![SessionWindow {
                day: 1,
                open: 0,
                close: 0,
            }],
            ..eurusd()
        };
        assert_eq!(next_session_open(&never, wed_noon()), None);
    }

    #[test]
    fn market_order_stops() {
        let s = eurusd();
        let t = tick(1.10000, 1.10010);
        let now = wed_noon();
        let mut o = market(OrderType::Buy, 0.1);
        o.stop_loss = Some(1.09990);
        o.take_profit = Some(1.10020);
        assert!(validate_order(&s, &t, &o, now).is_ok());
        // SL 9 points under the bid: too close.
        o.stop_loss = Some(1.09991);
        let e = validate_order(&s, &t, &o, now).unwrap_err();
        assert_eq!(e.retcode, retcode::INVALID_STOPS);
        assert!(e.message.contains("too close"), "{}", e.message);
        assert!(
            e.message
                .contains("at least 10 points below the bid 1.10000 (at most 1.09990)"),
            "{}",
            e.message
        );
        // SL above the market: wrong side.
        o.stop_loss = Some(1.10100);
        let e = validate_order(&s, &t, &o, now).unwrap_err();
        assert!(e.message.contains("wrong side"), "{}", e.message);
        // TP must clear the ask by the stops level.
        o.stop_loss = None;
        o.take_profit = Some(1.10015);
        assert_eq!(
            validate_order(&s, &t, &o, now).unwrap_err().retcode,
            retcode::INVALID_STOPS
        );
        // 0.0 means none.
        o.take_profit = Some(0.0);
        assert!(validate_order(&s, &t, &o, now).is_ok());
        // Sell: SL above the ask, TP below the bid.
        let mut o = market(OrderType::Sell, 0.1);
        o.stop_loss = Some(1.10020);
        o.take_profit = Some(1.09990);
        assert!(validate_order(&s, &t, &o, now).is_ok());
        o.stop_loss = Some(1.10015);
        assert_eq!(
            validate_order(&s, &t, &o, now).unwrap_err().retcode,
            retcode::INVALID_STOPS
        );
        // Not normalised.
        let mut o = market(OrderType::Buy, 0.1);
        o.stop_loss = Some(1.099_901);
        let e = validate_order(&s, &t, &o, now).unwrap_err();
        assert_eq!(e.retcode, retcode::INVALID_STOPS);
        assert!(e.message.contains("5 decimals"), "{}", e.message);
    }

    #[test]
    fn pending_prices() {
        let s = eurusd();
        let t = tick(1.10000, 1.10010);
        let now = wed_noon();
        let p = |order_type, price| OrderParams {
            order_type,
            volume: 0.1,
            price: Some(price),
            stop_loss: None,
            take_profit: None,
            stop_limit_price: None,
        };
        assert!(validate_order(&s, &t, &p(OrderType::BuyLimit, 1.10000), now).is_ok());
        assert!(validate_order(&s, &t, &p(OrderType::BuyLimit, 1.09000), now).is_ok());
        assert_eq!(
            validate_order(&s, &t, &p(OrderType::BuyLimit, 1.10005), now)
                .unwrap_err()
                .retcode,
            retcode::INVALID_PRICE
        );
        assert_eq!(
            validate_order(&s, &t, &p(OrderType::BuyLimit, 1.11000), now)
                .unwrap_err()
                .retcode,
            retcode::INVALID_PRICE
        );
        assert!(validate_order(&s, &t, &p(OrderType::SellLimit, 1.10010), now).is_ok());
        assert!(validate_order(&s, &t, &p(OrderType::SellLimit, 1.10009), now).is_err());
        assert!(validate_order(&s, &t, &p(OrderType::BuyStop, 1.10020), now).is_ok());
        let e = validate_order(&s, &t, &p(OrderType::BuyStop, 1.10019), now).unwrap_err();
        assert!(
            e.message
                .contains("buy stop price 1.10019 must be at least 10 points above the ask 1.10010 (at least 1.10020)"),
            "{}",
            e.message
        );
        assert!(validate_order(&s, &t, &p(OrderType::SellStop, 1.09990), now).is_ok());
        assert!(validate_order(&s, &t, &p(OrderType::SellStop, 1.10100), now).is_err());
        // Missing and unnormalised prices.
        let mut o = p(OrderType::BuyLimit, 1.0);
        o.price = None;
        assert_eq!(
            validate_order(&s, &t, &o, now).unwrap_err().retcode,
            retcode::INVALID_PRICE
        );
        assert_eq!(
            validate_order(&s, &t, &p(OrderType::BuyLimit, 1.090_001), now)
                .unwrap_err()
                .retcode,
            retcode::INVALID_PRICE
        );
        assert_eq!(
            validate_order(&s, &t, &p(OrderType::BuyLimit, f64::NAN), now)
                .unwrap_err()
                .retcode,
            retcode::INVALID_PRICE
        );
        // Stops of a pending order are measured from its price.
        let mut o = p(OrderType::BuyLimit, 1.09000);
        o.stop_loss = Some(1.08990);
        o.take_profit = Some(1.09500);
        assert!(validate_order(&s, &t, &o, now).is_ok());
        o.stop_loss = Some(1.08995);
        let e = validate_order(&s, &t, &o, now).unwrap_err();
        assert!(e.message.contains("below the order price 1.09000"), "{}", e.message);
        // A broken quote never validates.
        assert_eq!(
            validate_order(&s, &tick(f64::NAN, 1.0), &market(OrderType::Buy, 0.1), now)
                .unwrap_err()
                .retcode,
            retcode::INVALID_PRICE
        );
    }

    #[test]
    fn position_levels_and_close_volume() {
        let s = eurusd();
        let t = tick(1.10000, 1.10010);
        let now = wed_noon();
        assert!(validate_position_levels(&s, &t, Side::Buy, Some(1.09990), Some(1.10010), now).is_ok());
        assert!(validate_position_levels(&s, &t, Side::Buy, Some(1.09995), None, now).is_err());
        assert!(validate_position_levels(&s, &t, Side::Sell, Some(1.10020), Some(1.10000), now).is_ok());
        assert!(validate_position_levels(&s, &t, Side::Sell, None, Some(1.10005), now).is_err());
        assert!(check_close_volume(&s, 0.3, 0.1).is_ok());
        assert!(check_close_volume(&s, 0.3, 0.3).is_ok());
        assert!(check_close_volume(&s, 0.3, 0.4).is_err());
        assert!(check_close_volume(&s, 0.3, 0.015).is_err());
        let us = us500();
        let e = check_close_volume(&us, 0.2, 0.15).unwrap_err();
        assert_eq!(e.retcode, retcode::INVALID_VOLUME);
        assert_eq!(round_volume(&s, 0.1 + 0.2), 0.3);
    }

    #[test]
    fn fills_at_ask_for_buys_and_bid_for_sells() {
        let t = tick(1.1, 1.1002);
        assert_eq!(fill_price(OrderType::Buy, &t), 1.1002);
        assert_eq!(fill_price(OrderType::BuyLimit, &t), 1.1002);
        assert_eq!(fill_price(OrderType::Sell, &t), 1.1);
        assert_eq!(close_price(Side::Buy, &t), 1.1);
        assert_eq!(close_price(Side::Sell, &t), 1.1002);
    }

    #[test]
    fn margin_by_mode() {
        // EURUSD 1 lot, 1:100: 100 000 EUR / 100 = 1 000 EUR = 1 100 USD at 1.1000.
        assert!(close(margin_required(&eurusd(), 1.0, 1.1, 100, 1.1), 1100.0));
        // USDJPY 0.5 lot: 500 USD, margin currency is the account currency.
        assert!(close(margin_required(&usdjpy(), 0.5, 150.0, 100, 1.0), 500.0));
        // US500 CFD, 2 lots at 5000 with a 5 % margin rate: 2 × 1 × 5000 × 0.05 = 500.
        assert!(close(margin_required(&us500(), 2.0, 5000.0, 100, 1.0), 500.0));
        // Gold-like CFD with leverage: 0.1 lot × 100 oz × 2000 / 100 = 200.
        let gold = SymbolSpec {
            contract_size: 100.0,
            margin_mode: MarginMode::CfdLeverage,
            margin_rate: 1.0,
            ..us500()
        };
        assert!(close(margin_required(&gold, 0.1, 2000.0, 100, 1.0), 200.0));
        // Leverage 0 counts as 1.
        assert!(close(margin_required(&eurusd(), 0.01, 1.1, 0, 1.0), 1000.0));
        assert!(check_free_margin(100.0, 99.0, "USD").is_ok());
        let e = check_free_margin(100.0, 1100.0, "USD").unwrap_err();
        assert_eq!(e.retcode, retcode::NO_MONEY);
        assert!(e.message.contains("needs 1100.00 USD"), "{}", e.message);
        assert!(check_free_margin(100.0, f64::NAN, "USD").is_err());
        assert_eq!(margin_level(1000.0, 0.0), None);
        assert!(close(margin_level(2200.0, 1100.0).unwrap(), 200.0));
    }

    #[test]
    fn profit_and_conversion() {
        // EURUSD 0.1 lot, +50 pips = +50 USD.
        assert!(close(profit(&eurusd(), Side::Buy, 0.1, 1.1000, 1.1050, 1.0), 50.0));
        assert!(close(profit(&eurusd(), Side::Sell, 0.1, 1.1000, 1.1050, 1.0), -50.0));
        // USDJPY 1 lot long from 150.000 to 151.000 = 100 000 JPY = 662.25 USD at 151.
        let quotes = [Quote {
            base: "USD",
            quote: "JPY",
            bid: 150.99,
            ask: 151.01,
        }];
        let rate = conversion_rate("JPY", "USD", &quotes).unwrap();
        assert!(close(rate, 1.0 / 151.0));
        let p = profit(&usdjpy(), Side::Buy, 1.0, 150.0, 151.0, rate);
        assert!((p - 662.2516556).abs() < 1e-6, "{p}");
        // Risk at stop: long 1 lot EURUSD from 1.1000 with SL 1.0950 risks 500 USD.
        assert!(close(risk_at_stop(&eurusd(), Side::Buy, 1.0, 1.1, 1.095, 1.0), 500.0));
        // A stop above the entry of a long locks in profit: no risk.
        assert_eq!(risk_at_stop(&eurusd(), Side::Buy, 1.0, 1.1, 1.105, 1.0), 0.0);
        // Short USDJPY 0.5 lot from 150 with SL 151: 50 000 JPY at 151 = 331.13 USD.
        assert!((risk_at_stop(&usdjpy(), Side::Sell, 0.5, 150.0, 151.0, rate) - 331.1258278).abs() < 1e-6);
    }

    #[test]
    fn conversion_paths() {
        let spec = eurusd();
        let t = tick(1.0999, 1.1001);
        let eur = Quote::of(&spec, &t);
        let jpy = Quote {
            base: "USD",
            quote: "JPY",
            bid: 150.0,
            ask: 150.0,
        };
        let q = [eur, jpy];
        assert_eq!(conversion_rate("USD", "USD", &[]), Some(1.0));
        assert_eq!(conversion_rate("usd", "USD", &[]), Some(1.0));
        assert!(close(conversion_rate("EUR", "USD", &q).unwrap(), 1.1));
        assert!(close(conversion_rate("USD", "EUR", &q).unwrap(), 1.0 / 1.1));
        // Cross: JPY → USD → EUR.
        assert!(close(conversion_rate("JPY", "EUR", &q).unwrap(), 1.0 / 150.0 / 1.1));
        assert!(close(conversion_rate("EUR", "JPY", &q).unwrap(), 1.1 * 150.0));
        assert_eq!(conversion_rate("CHF", "USD", &q), None);
        // A broken quote is ignored, not used.
        let broken = [Quote {
            base: "EUR",
            quote: "USD",
            bid: f64::NAN,
            ask: 1.0,
        }];
        assert_eq!(conversion_rate("EUR", "USD", &broken), None);
    }

    #[test]
    fn swaps_with_triple_day() {
        let s = eurusd();
        // -7.5 points × 0.00001 × 100 000 × 1 lot = -7.5 USD a night.
        assert!(close(swap_for_night(&s, Side::Buy, 1.0, 1.1, 1.0, 2), -7.5));
        assert!(close(swap_for_night(&s, Side::Buy, 1.0, 1.1, 1.0, 3), -22.5));
        assert!(close(swap_for_night(&s, Side::Sell, 0.5, 1.1, 1.0, 1), 1.05));
        let week: f64 = (1..=5).map(|d| swap_for_night(&s, Side::Buy, 1.0, 1.1, 1.0, d)).sum();
        assert!(close(week, -52.5));
        // USDJPY: 12 points × 0.001 × 100 000 = 1 200 JPY = 8 USD at 150.
        assert!(close(
            swap_for_night(&usdjpy(), Side::Buy, 1.0, 150.0, 1.0 / 150.0, 1),
            8.0
        ));
        let cur = SymbolSpec {
            swap_mode: SwapMode::Currency,
            ..eurusd()
        };
        assert!(close(swap_for_night(&cur, Side::Buy, 2.0, 1.1, 123.0, 1), -15.0));
        // Interest: 1 lot × 100 000 × 1.1 × (-3.6 %) / 360 = -11 USD.
        let int = SymbolSpec {
            swap_mode: SwapMode::Interest,
            swap_long: -3.6,
            ..eurusd()
        };
        assert!(close(swap_for_night(&int, Side::Buy, 1.0, 1.1, 1.0, 1), -11.0));
        let off = SymbolSpec {
            swap_mode: SwapMode::Disabled,
            ..eurusd()
        };
        assert_eq!(swap_for_night(&off, Side::Buy, 1.0, 1.1, 1.0, 3), 0.0);
    }

    #[test]
    fn nothing_panics_on_garbage() {
        let s = SymbolSpec {
            point: 0.0,
            tick_size: 0.0,
            volume_step: 0.0,
            digits: 400,
            ..eurusd()
        };
        let t = tick(f64::INFINITY, f64::NAN);
        for ot in [
            OrderType::Buy,
            OrderType::Sell,
            OrderType::BuyLimit,
            OrderType::SellLimit,
            OrderType::BuyStop,
            OrderType::SellStop,
        ] {
            let o = OrderParams {
                order_type: ot,
                volume: 1.0,
                price: Some(f64::NAN),
                stop_loss: Some(-1.0),
                take_profit: Some(f64::MAX),
                stop_limit_price: None,
            };
            let _ = validate_order(&s, &t, &o, i64::MIN);
            let _ = validate_order(&s, &t, &o, i64::MAX);
        }
        let _ = margin_required(&s, f64::NAN, f64::INFINITY, 0, f64::NAN);
        let _ = next_session_open(&s, i64::MAX - 1);
        let _ = fmt_price(&s, f64::NAN);
    }
}
