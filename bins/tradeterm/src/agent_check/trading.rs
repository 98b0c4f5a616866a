//! The `--trading` cycle of the kit (demo accounts only): a market order
//! with an idempotency key and its re-send, the position and its deal, SL/TP,
//! a partial close, a reverse, a full close, and a far pending order that is
//! cancelled; then, when that passed, the commands that came later in
//! protocol v1 (`modify_order` read back, a stop-limit order read back,
//! `close_by` where the account hedges, the depth of market): an agent
//! answering `UNKNOWN_COMMAND` or `NOT_SUPPORTED` to one is reported as
//! "not supported", which is not a failure. Whatever the cycle opened is
//! closed afterwards, even when a step failed (best effort).

use std::collections::BTreeSet;
use std::time::Instant;

use tradeterm_core::account::{DealEntry, ExpirationMode, OrderType};
use tradeterm_core::{Deal, PendingOrder, Position, Side, SymbolSpec};
use tradeterm_protocol::agent::{HistoryOrder, OrderState, TradeResult, codes};
use tradeterm_protocol::{Command, CommandResult};

use super::{
    Failure, KIT_MAGIC, Kit, Verdict, approx, kit_order, now_ms, positive, round_price, round_volume, wrong_kind,
};

/// What the cycle opened and must close.
#[derive(Debug, Default)]
struct Opened {
    positions: BTreeSet<u64>,
    orders: BTreeSet<u64>,
}

/// A failed step: already reported, the cycle stops.
struct Stop;

type Step<T> = Result<T, Stop>;

/// Runs the cycle and the clean-up.
pub(super) async fn run(kit: &mut Kit) {
    let Some(spec) = kit.spec.clone() else {
        kit.push(
            "trading",
            "trading",
            Err("no symbol_spec of the test symbol: the trade cycle cannot start".into()),
            None,
        );
        return;
    };
    let before_positions = match positions(kit).await {
        Ok(p) => p.into_iter().map(|p| p.ticket).collect::<BTreeSet<_>>(),
        Err(f) => {
            kit.push(
                "trading",
                "positions",
                Err(format!("cannot list positions before trading: {f}")),
                None,
            );
            return;
        }
    };
    let before_orders = match orders(kit).await {
        Ok(o) => o.into_iter().map(|o| o.ticket).collect::<BTreeSet<_>>(),
        Err(f) => {
            kit.push(
                "trading",
                "orders",
                Err(format!("cannot list orders before trading: {f}")),
                None,
            );
            return;
        }
    };
    let mut opened = Opened::default();
    if cycle(kit, &spec, &mut opened, &before_positions).await.is_ok() {
        order_management(kit, &spec, &mut opened).await;
    }
    cleanup(kit, &opened, &before_positions, &before_orders).await;
}

fn key(step: &str) -> String {
    format!("ttkit-{}-{}-{step}", std::process::id(), now_ms())
}

async fn positions(kit: &Kit) -> Result<Vec<Position>, Failure> {
    match kit.call(&Command::Positions { symbol: None }).await? {
        CommandResult::Positions { positions } => Ok(positions),
        other => Err(Failure::new("MALFORMED_RESULT", wrong_kind("positions", &other))),
    }
}

async fn orders(kit: &Kit) -> Result<Vec<PendingOrder>, Failure> {
    match kit.call(&Command::Orders { symbol: None }).await? {
        CommandResult::Orders { orders } => Ok(orders),
        other => Err(Failure::new("MALFORMED_RESULT", wrong_kind("orders", &other))),
    }
}

async fn deals(kit: &Kit) -> Result<Vec<Deal>, Failure> {
    let (from, to) = kit.history_range();
    match kit.call(&Command::HistoryDeals { from, to }).await? {
        CommandResult::Deals { deals } => Ok(deals),
        other => Err(Failure::new("MALFORMED_RESULT", wrong_kind("deals", &other))),
    }
}

async fn history_orders(kit: &Kit) -> Result<Vec<HistoryOrder>, Failure> {
    let (from, to) = kit.history_range();
    match kit.call(&Command::HistoryOrders { from, to }).await? {
        CommandResult::HistoryOrders { orders } => Ok(orders),
        other => Err(Failure::new("MALFORMED_RESULT", wrong_kind("history_orders", &other))),
    }
}

/// Sends a trade command, timing it; a failure is reported under `name`.
async fn trade(kit: &mut Kit, name: &str, command: Command) -> Step<(CommandResult, f64)> {
    let t = Instant::now();
    let r = kit.call(&command).await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    match r {
        Ok(r) => Ok((r, ms)),
        Err(f) => {
            kit.push(name, command.name(), Err(format!("failed: {f}")), Some(&[ms]));
            Err(Stop)
        }
    }
}

/// Reports `verdict` under `name`; an error stops the cycle.
fn verdict(kit: &mut Kit, name: &str, command: &str, v: Verdict, ms: Option<f64>) -> Step<()> {
    let failed = v.is_err();
    kit.push(name, command, v, ms.as_ref().map(std::slice::from_ref));
    if failed { Err(Stop) } else { Ok(()) }
}

fn as_trade(r: CommandResult, expect_retcode: &[&str]) -> Result<TradeResult, String> {
    let CommandResult::Trade(t) = r else {
        return Err(wrong_kind("trade", &r));
    };
    if !expect_retcode.contains(&t.retcode.as_str()) {
        return Err(format!(
            "retcode `{}`, expected {}",
            t.retcode,
            expect_retcode.join(" or ")
        ));
    }
    Ok(t)
}

async fn cycle(kit: &mut Kit, spec: &SymbolSpec, opened: &mut Opened, before: &BTreeSet<u64>) -> Step<()> {
    let min = spec.volume_min;
    let double = round_volume(spec, 2.0 * min);
    let volume = if double <= spec.volume_max { double } else { min };
    let vol_tol = spec.volume_step * 1e-3;
    let half_point = spec.point / 2.0 + 1e-12;

    // 1. A market buy with an idempotency key.
    let name = format!("place_order BUY {volume}");
    let open_cmd = Command::PlaceOrder {
        order: kit_order(spec, OrderType::Buy, volume, None, Some(key("open"))),
    };
    let (r, ms) = trade(kit, &name, open_cmd.clone()).await?;
    let first = as_trade(r, &["done"]);
    if let Ok(t) = &first {
        opened
            .positions
            .insert(if t.position != 0 { t.position } else { t.order });
    }
    let first = first.and_then(|t| {
        if !approx(t.volume, volume, vol_tol) || !positive(t.price) {
            Err(format!("volume {} / price {} of the fill are wrong", t.volume, t.price))
        } else {
            Ok(t)
        }
    });
    let v = first
        .as_ref()
        .map(|t| format!("position {} at {}", t.position, t.price))
        .map_err(Clone::clone);
    verdict(kit, &name, "place_order", v, Some(ms))?;
    let Ok(first) = first else { return Err(Stop) };
    let pos = if first.position != 0 {
        first.position
    } else {
        first.order
    };

    // 2. The same request again: the first outcome, nothing new.
    let name = "place_order same idempotency_key";
    let (r, ms) = trade(kit, name, open_cmd).await?;
    let again = match r {
        CommandResult::Trade(t) => Ok(t),
        other => Err(wrong_kind("trade", &other)),
    };
    let now = positions(kit).await;
    let v = match (again, now) {
        (Err(e), _) => Err(e),
        (_, Err(f)) => Err(format!("positions failed: {f}")),
        (Ok(t), Ok(list)) => {
            let new: Vec<&Position> = list
                .iter()
                .filter(|p| !before.contains(&p.ticket) && p.symbol == spec.name)
                .collect();
            for p in &new {
                opened.positions.insert(p.ticket);
            }
            if t.position != first.position || t.deal != first.deal || t.order != first.order {
                Err(format!(
                    "the re-send executed again: position {} deal {} (first: position {} deal {})",
                    t.position, t.deal, first.position, first.deal
                ))
            } else if new.len() != 1 {
                Err(format!("{} new positions after the re-send, expected 1", new.len()))
            } else if kit.backend.is_rest() {
                Ok("one position; REST answered the re-send from its own idempotency record (the agent's handling is not reached in REST mode)".into())
            } else {
                Ok("first outcome returned, one position".into())
            }
        }
    };
    verdict(kit, name, "place_order", v, Some(ms))?;

    // 3. The position and its entry deal.
    let v = match positions(kit).await {
        Err(f) => Err(format!("failed: {f}")),
        Ok(list) => match list.iter().find(|p| p.ticket == pos) {
            None => Err(format!("position {pos} is not listed")),
            Some(p) if p.side != Side::Buy || !approx(p.volume, volume, vol_tol) || p.symbol != spec.name => {
                Err(format!(
                    "position {pos}: {:?} {} {} instead of Buy {volume} {}",
                    p.side, p.volume, p.symbol, spec.name
                ))
            }
            Some(p) if !approx(p.open_price, first.price, half_point) => Err(format!(
                "position {pos}: open_price {} but filled at {}",
                p.open_price, first.price
            )),
            Some(_) => Ok(format!("position {pos} listed")),
        },
    };
    verdict(kit, "positions after place_order", "positions", v, None)?;
    let v = match deals(kit).await {
        Err(f) => Err(format!("failed: {f}")),
        Ok(list) => {
            let entries: Vec<&Deal> = list
                .iter()
                .filter(|d| d.position == pos && d.entry == DealEntry::In)
                .collect();
            match entries.as_slice() {
                [d] if first.deal != 0 && d.ticket != first.deal => Err(format!(
                    "entry deal {} but the trade reported deal {}",
                    d.ticket, first.deal
                )),
                [d] if d.side != Side::Buy || !approx(d.volume, volume, vol_tol) => Err(format!(
                    "entry deal {}: {:?} {} instead of Buy {volume}",
                    d.ticket, d.side, d.volume
                )),
                [d] => Ok(format!("entry deal {}", d.ticket)),
                [] => Err(format!("no entry deal of position {pos} in the history")),
                many => Err(format!(
                    "{} entry deals of position {pos} (idempotency broken?)",
                    many.len()
                )),
            }
        }
    };
    verdict(kit, "history_deals after place_order", "history_deals", v, None)?;

    // 4. SL/TP.
    let bid = match kit
        .call(&Command::Tick {
            symbol: spec.name.clone(),
        })
        .await
    {
        Ok(CommandResult::Tick(t)) => t.bid,
        _ => first.price,
    };
    let d = (bid * 0.01).max(f64::from(spec.stops_level + 10) * spec.point);
    let (sl, tp) = (round_price(spec, bid - d), round_price(spec, bid + d));
    let name = "modify_position SL/TP";
    let (r, ms) = trade(
        kit,
        name,
        Command::ModifyPosition {
            ticket: pos,
            stop_loss: Some(sl),
            take_profit: Some(tp),
        },
    )
    .await?;
    let v = match as_trade(r, &["done"]) {
        Err(e) => Err(e),
        Ok(_) => match positions(kit).await {
            Err(f) => Err(format!("positions failed: {f}")),
            Ok(list) => match list.iter().find(|p| p.ticket == pos) {
                None => Err(format!("position {pos} vanished")),
                Some(p)
                    if p.stop_loss.is_some_and(|x| approx(x, sl, half_point))
                        && p.take_profit.is_some_and(|x| approx(x, tp, half_point)) =>
                {
                    Ok(format!("SL {sl} TP {tp} shown by positions"))
                }
                Some(p) => Err(format!(
                    "positions shows SL {:?} TP {:?}, set {sl} / {tp}",
                    p.stop_loss, p.take_profit
                )),
            },
        },
    };
    verdict(kit, name, "modify_position", v, Some(ms))?;

    // 5. Partial close of the minimum volume.
    let mut remaining = volume;
    if volume >= 2.0 * min - vol_tol {
        let name = format!("close_position partial {min}");
        let (r, ms) = trade(
            kit,
            &name,
            Command::ClosePosition {
                ticket: pos,
                volume: Some(min),
                deviation_points: Some(50),
                idempotency_key: Some(key("partial")),
            },
        )
        .await?;
        remaining = round_volume(spec, volume - min);
        let v = match as_trade(r, &["done"]) {
            Err(e) => Err(e),
            Ok(_) => match (positions(kit).await, deals(kit).await) {
                (Err(f), _) | (_, Err(f)) => Err(format!("failed: {f}")),
                (Ok(list), Ok(ds)) => match list.iter().find(|p| p.ticket == pos) {
                    None => Err(format!("position {pos} closed fully instead of partly")),
                    Some(p) if !approx(p.volume, remaining, vol_tol) => {
                        Err(format!("{} lots left, expected {remaining}", p.volume))
                    }
                    Some(_)
                        if !ds.iter().any(|d| {
                            d.position == pos && d.entry == DealEntry::Out && approx(d.volume, min, vol_tol)
                        }) =>
                    {
                        Err(format!("no exit deal of {min} lots for position {pos} in the history"))
                    }
                    Some(_) => Ok(format!("{remaining} lots left, exit deal listed")),
                },
            },
        };
        verdict(kit, &name, "close_position", v, Some(ms))?;
    } else {
        kit.skip(
            "close_position partial",
            "close_position",
            "volume_max below 2 × volume_min: no partial close possible",
        );
    }

    // 6. Reverse.
    let name = "reverse_position";
    let (r, ms) = trade(
        kit,
        name,
        Command::ReversePosition {
            ticket: pos,
            idempotency_key: Some(key("reverse")),
        },
    )
    .await?;
    let reversed = match r {
        CommandResult::Reverse { close, open } => {
            let new = if open.position != 0 { open.position } else { open.order };
            opened.positions.insert(new);
            Ok((close, open, new))
        }
        other => Err(wrong_kind("reverse", &other)),
    };
    let v = match &reversed {
        Err(e) => Err(e.clone()),
        Ok((_, _, new)) => match positions(kit).await {
            Err(f) => Err(format!("positions failed: {f}")),
            Ok(list) => {
                if let Some(old) = list.iter().find(|p| p.ticket == pos && p.side == Side::Buy) {
                    Err(format!("the buy position {} is still open", old.ticket))
                } else {
                    match list.iter().find(|p| p.ticket == *new) {
                        None => Err(format!("the new position {new} is not listed")),
                        Some(p) if p.side != Side::Sell || !approx(p.volume, remaining, vol_tol) => Err(format!(
                            "new position {new}: {:?} {} instead of Sell {remaining}",
                            p.side, p.volume
                        )),
                        Some(_) => Ok(format!("now sell {remaining} (position {new})")),
                    }
                }
            }
        },
    };
    verdict(kit, name, "reverse_position", v, Some(ms))?;
    let Ok((_, _, reversed_pos)) = reversed else {
        return Err(Stop);
    };
    if reversed_pos != pos {
        opened.positions.remove(&pos);
    }

    // 7. Full close.
    let name = "close_position full";
    let (r, ms) = trade(
        kit,
        name,
        Command::ClosePosition {
            ticket: reversed_pos,
            volume: None,
            deviation_points: Some(50),
            idempotency_key: Some(key("close")),
        },
    )
    .await?;
    let v = match as_trade(r, &["done"]) {
        Err(e) => Err(e),
        Ok(_) => match (positions(kit).await, deals(kit).await) {
            (Err(f), _) | (_, Err(f)) => Err(format!("failed: {f}")),
            (Ok(list), Ok(ds)) => {
                if list.iter().any(|p| p.ticket == reversed_pos) {
                    Err(format!("position {reversed_pos} is still open"))
                } else if !ds
                    .iter()
                    .any(|d| d.position == reversed_pos && d.entry == DealEntry::Out)
                {
                    Err(format!("no exit deal of position {reversed_pos} in the history"))
                } else {
                    opened.positions.remove(&reversed_pos);
                    Ok("closed, exit deal listed".into())
                }
            }
        },
    };
    verdict(kit, name, "close_position", v, Some(ms))?;

    // 8. A pending order far from the price, then cancelled.
    let ask = match kit
        .call(&Command::Tick {
            symbol: spec.name.clone(),
        })
        .await
    {
        Ok(CommandResult::Tick(t)) => t.ask,
        _ => first.price,
    };
    let price = round_price(spec, ask * 0.9);
    let name = format!("place_order BUY_LIMIT {min} @ {price}");
    let (r, ms) = trade(
        kit,
        &name,
        Command::PlaceOrder {
            order: kit_order(spec, OrderType::BuyLimit, min, Some(price), Some(key("pending"))),
        },
    )
    .await?;
    let placed = as_trade(r, &["placed", "done"]);
    if let Ok(t) = &placed {
        opened.orders.insert(t.order);
    }
    let v = match &placed {
        Err(e) => Err(e.clone()),
        Ok(t) => match orders(kit).await {
            Err(f) => Err(format!("orders failed: {f}")),
            Ok(list) => match list.iter().find(|o| o.ticket == t.order) {
                None => Err(format!("pending order {} is not listed by `orders`", t.order)),
                Some(o)
                    if o.order_type != OrderType::BuyLimit
                        || !approx(o.price, price, half_point)
                        || !approx(o.volume, min, vol_tol) =>
                {
                    Err(format!(
                        "order {}: {:?} {} @ {} instead of BuyLimit {min} @ {price}",
                        o.ticket, o.order_type, o.volume, o.price
                    ))
                }
                Some(_) => Ok(format!("order {} listed", t.order)),
            },
        },
    };
    verdict(kit, &name, "place_order", v, Some(ms))?;
    let Ok(placed) = placed else { return Err(Stop) };
    let name = "cancel_order";
    let (r, ms) = trade(kit, name, Command::CancelOrder { ticket: placed.order }).await?;
    let v = match as_trade(r, &["done"]) {
        Err(e) => Err(e),
        Ok(_) => match (orders(kit).await, history_orders(kit).await) {
            (Err(f), _) | (_, Err(f)) => Err(format!("failed: {f}")),
            (Ok(list), Ok(hist)) => {
                if list.iter().any(|o| o.ticket == placed.order) {
                    Err(format!("order {} is still pending", placed.order))
                } else {
                    opened.orders.remove(&placed.order);
                    match hist.iter().find(|o| o.ticket == placed.order) {
                        None => Err(format!("order {} is not in history_orders", placed.order)),
                        Some(o) if o.state != OrderState::Canceled => Err(format!(
                            "order {} is {:?} in history_orders, expected canceled",
                            o.ticket, o.state
                        )),
                        Some(_) => Ok("cancelled; history_orders says canceled".into()),
                    }
                }
            }
        },
    };
    verdict(kit, name, "cancel_order", v, Some(ms))?;
    Ok(())
}

/// Closes every position and cancels every order the cycle opened (or that
/// carries the kit's magic number and was not there before).
async fn cleanup(kit: &mut Kit, opened: &Opened, before_positions: &BTreeSet<u64>, before_orders: &BTreeSet<u64>) {
    let mut actions = Vec::new();
    let mut problems = Vec::new();
    match positions(kit).await {
        Ok(list) => {
            for p in list.iter().filter(|p| {
                opened.positions.contains(&p.ticket) || (p.magic == KIT_MAGIC && !before_positions.contains(&p.ticket))
            }) {
                let r = kit
                    .call(&Command::ClosePosition {
                        ticket: p.ticket,
                        volume: None,
                        deviation_points: Some(100),
                        idempotency_key: Some(key(&format!("cleanup-{}", p.ticket))),
                    })
                    .await;
                match r {
                    Ok(_) => actions.push(format!("closed position {}", p.ticket)),
                    Err(f) => problems.push(format!("position {} left open: {f}", p.ticket)),
                }
            }
        }
        Err(f) => problems.push(format!("positions could not be listed: {f}")),
    }
    match orders(kit).await {
        Ok(list) => {
            for o in list.iter().filter(|o| {
                opened.orders.contains(&o.ticket) || (o.magic == KIT_MAGIC && !before_orders.contains(&o.ticket))
            }) {
                match kit.call(&Command::CancelOrder { ticket: o.ticket }).await {
                    Ok(_) => actions.push(format!("cancelled order {}", o.ticket)),
                    Err(f) => problems.push(format!("order {} left pending: {f}", o.ticket)),
                }
            }
        }
        Err(f) => problems.push(format!("orders could not be listed: {f}")),
    }
    let v = if problems.is_empty() {
        if actions.is_empty() {
            Ok("nothing left open".into())
        } else {
            Ok(format!("after a failed step: {}", actions.join(", ")))
        }
    } else {
        Err(format!("CLOSE THESE BY HAND: {}", problems.join("; ")))
    };
    kit.push("cleanup", "close_position", v, None);
}

/// An answer saying the agent lacks a command (or its platform cannot).
fn unsupported(f: &Failure) -> bool {
    f.code == codes::UNKNOWN_COMMAND || f.code == codes::NOT_SUPPORTED
}

fn not_supported(f: &Failure) -> Verdict {
    Ok(format!("not supported by this agent ({}: {})", f.code, f.message))
}

/// The later v1 commands, each optional: `modify_order`, a stop-limit
/// order, `close_by` (hedging accounts), the depth of market.
async fn order_management(kit: &mut Kit, spec: &SymbolSpec, opened: &mut Opened) {
    let ask = match kit
        .call(&Command::Tick {
            symbol: spec.name.clone(),
        })
        .await
    {
        Ok(CommandResult::Tick(t)) => t.ask,
        _ => return,
    };
    let min = round_volume(spec, spec.volume_min.max(spec.volume_step));
    let half_point = spec.point / 2.0;
    modify_order_step(kit, spec, opened, ask, min, half_point).await;
    stop_limit_step(kit, spec, opened, ask, min, half_point).await;
    close_by_step(kit, spec, opened, min).await;
    depth_step(kit, spec).await;
}

async fn cancel_kit_order(kit: &mut Kit, opened: &mut Opened, ticket: u64) {
    if kit.call(&Command::CancelOrder { ticket }).await.is_ok() {
        opened.orders.remove(&ticket);
    }
}

async fn modify_order_step(kit: &mut Kit, spec: &SymbolSpec, opened: &mut Opened, ask: f64, min: f64, tol: f64) {
    let price = round_price(spec, ask * 0.9);
    let placed = kit
        .call(&Command::PlaceOrder {
            order: kit_order(spec, OrderType::BuyLimit, min, Some(price), Some(key("modify"))),
        })
        .await;
    let ticket = match placed {
        Ok(CommandResult::Trade(t)) => t.order,
        Ok(other) => {
            kit.push("modify_order", "modify_order", Err(wrong_kind("trade", &other)), None);
            return;
        }
        Err(f) => {
            kit.push(
                "modify_order",
                "place_order",
                Err(format!("placing the order to modify failed: {f}")),
                None,
            );
            return;
        }
    };
    opened.orders.insert(ticket);
    let new_price = round_price(spec, ask * 0.88);
    let t = Instant::now();
    let r = kit
        .call(&Command::ModifyOrder {
            ticket,
            price: new_price,
            stop_limit_price: None,
            stop_loss: None,
            take_profit: None,
            expiration_mode: Some(ExpirationMode::Gtc),
            expiration: None,
            idempotency_key: Some(key("modify-order")),
        })
        .await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let v = match r {
        Err(f) if unsupported(&f) => not_supported(&f),
        Err(f) => Err(format!("failed: {f}")),
        Ok(r) => match as_trade(r, &["done"]) {
            Err(e) => Err(e),
            Ok(_) => match orders(kit).await {
                Err(f) => Err(format!("orders failed: {f}")),
                Ok(list) => match list.iter().find(|o| o.ticket == ticket) {
                    None => Err(format!("order {ticket} is not listed after modify_order")),
                    Some(o) if !approx(o.price, new_price, tol) => Err(format!(
                        "order {ticket} is at {} after modify_order, expected {new_price}",
                        o.price
                    )),
                    Some(_) => Ok(format!("order {ticket} moved from {price} to {new_price}, read back")),
                },
            },
        },
    };
    kit.push(
        &format!("modify_order {ticket} → {new_price}"),
        "modify_order",
        v,
        Some(&[ms]),
    );
    cancel_kit_order(kit, opened, ticket).await;
}

async fn stop_limit_step(kit: &mut Kit, spec: &SymbolSpec, opened: &mut Opened, ask: f64, min: f64, tol: f64) {
    let (stop, limit) = (round_price(spec, ask * 1.1), round_price(spec, ask * 1.05));
    let mut order = kit_order(spec, OrderType::BuyStopLimit, min, Some(stop), Some(key("stop-limit")));
    order.stop_limit_price = Some(limit);
    let name = format!("place_order BUY_STOP_LIMIT {min} @ {stop} limit {limit}");
    let t = Instant::now();
    let r = kit.call(&Command::PlaceOrder { order }).await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let v = match r {
        Err(f) if unsupported(&f) => not_supported(&f),
        // An agent that predates stop-limit orders refuses the order type.
        Err(f) if f.code == codes::INVALID_ARGUMENT && f.message.contains("order_type") => not_supported(&f),
        Err(f) => Err(format!("failed: {f}")),
        Ok(r) => match as_trade(r, &["placed", "done"]) {
            Err(e) => Err(e),
            Ok(t) => {
                opened.orders.insert(t.order);
                let v = match orders(kit).await {
                    Err(f) => Err(format!("orders failed: {f}")),
                    Ok(list) => match list.iter().find(|o| o.ticket == t.order) {
                        None => Err(format!("stop-limit order {} is not listed by `orders`", t.order)),
                        Some(o)
                            if o.order_type != OrderType::BuyStopLimit
                                || !approx(o.price, stop, tol)
                                || !o.stop_limit_price.is_some_and(|l| approx(l, limit, tol)) =>
                        {
                            Err(format!(
                                "order {}: {:?} @ {} limit {:?} instead of BuyStopLimit @ {stop} limit {limit}",
                                o.ticket, o.order_type, o.price, o.stop_limit_price
                            ))
                        }
                        Some(_) => Ok(format!("order {} listed with its stop-limit price", t.order)),
                    },
                };
                cancel_kit_order(kit, opened, t.order).await;
                v
            }
        },
    };
    kit.push(&name, "place_order", v, Some(&[ms]));
}

async fn close_by_step(kit: &mut Kit, spec: &SymbolSpec, opened: &mut Opened, min: f64) {
    // A probe no agent can execute: one that lacks the command says so.
    let probe = kit
        .call(&Command::CloseBy {
            ticket: 0,
            ticket_by: 0,
            idempotency_key: None,
        })
        .await;
    if let Err(f) = &probe
        && unsupported(f)
    {
        kit.push("close_by", "close_by", not_supported(f), None);
        return;
    }
    let mut tickets = Vec::new();
    for (side, ty) in [("buy", OrderType::Buy), ("sell", OrderType::Sell)] {
        match kit
            .call(&Command::PlaceOrder {
                order: kit_order(spec, ty, min, None, Some(key(&format!("close-by-{side}")))),
            })
            .await
        {
            Ok(CommandResult::Trade(t)) => {
                opened.positions.insert(t.position);
                tickets.push(t.position);
            }
            Ok(other) => {
                kit.push("close_by", "place_order", Err(wrong_kind("trade", &other)), None);
                return;
            }
            Err(f) => {
                kit.push(
                    "close_by",
                    "place_order",
                    Err(format!("opening the {side} failed: {f}")),
                    None,
                );
                return;
            }
        }
    }
    let listed: BTreeSet<u64> = match positions(kit).await {
        Ok(list) => list.into_iter().map(|p| p.ticket).collect(),
        Err(f) => {
            kit.push("close_by", "positions", Err(format!("positions failed: {f}")), None);
            return;
        }
    };
    let (a, b) = (tickets[0], tickets[1]);
    if a == b || !listed.contains(&a) || !listed.contains(&b) {
        kit.push(
            "close_by",
            "close_by",
            Ok("a netting account (the sell netted the buy): close_by does not apply".into()),
            None,
        );
        return;
    }
    let t = Instant::now();
    let r = kit
        .call(&Command::CloseBy {
            ticket: a,
            ticket_by: b,
            idempotency_key: Some(key("close-by")),
        })
        .await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let v = match r {
        Err(f) if unsupported(&f) => not_supported(&f),
        Err(f) => Err(format!("failed: {f}")),
        Ok(r) => match as_trade(r, &["done"]) {
            Err(e) => Err(e),
            Ok(_) => match positions(kit).await {
                Err(f) => Err(format!("positions failed: {f}")),
                Ok(list) if list.iter().any(|p| p.ticket == a || p.ticket == b) => {
                    Err(format!("positions {a} and {b} of equal volume are not both closed"))
                }
                Ok(_) => {
                    opened.positions.remove(&a);
                    opened.positions.remove(&b);
                    close_by_history(kit, a, b)
                        .await
                        .map(|h| format!("position {a} closed by {b}; both gone; {h}"))
                }
            },
        },
    };
    kit.push(&format!("close_by {a} by {b}"), "close_by", v, Some(&[ms]));
}

/// What the history says of a close-by of `a` by `b`: each position has an
/// exit deal, and where the agent reports MetaTrader 5's `out_by` deals both
/// are `out_by`, of one order, which is in the order history as `CLOSE_BY`.
async fn close_by_history(kit: &Kit, a: u64, b: u64) -> Result<String, String> {
    let deals = deals(kit).await.map_err(|f| format!("history_deals failed: {f}"))?;
    let exits: Vec<&Deal> = deals
        .iter()
        .filter(|d| (d.position == a || d.position == b) && d.entry.is_exit())
        .collect();
    for p in [a, b] {
        if !exits.iter().any(|d| d.position == p) {
            return Err(format!("no exit deal (out or out_by) of position {p} in history_deals"));
        }
    }
    let by: Vec<&&Deal> = exits.iter().filter(|d| d.entry == DealEntry::OutBy).collect();
    if by.is_empty() {
        return Ok("exit deals reported as out".into());
    }
    let order = by[0].order;
    if by.len() != 2 || by.iter().any(|d| d.order != order) || by[0].position == by[1].position {
        return Err(format!(
            "a close-by makes one out_by deal per position, both of one order: got {:?}",
            by.iter().map(|d| (d.ticket, d.position, d.order)).collect::<Vec<_>>()
        ));
    }
    let orders = history_orders(kit)
        .await
        .map_err(|f| format!("history_orders failed: {f}"))?;
    match orders.iter().find(|o| o.ticket == order) {
        Some(o) if o.order_type == OrderType::CloseBy => Ok(format!("two out_by deals of CLOSE_BY order {order}")),
        Some(o) => Err(format!(
            "the out_by deals' order {order} is a {:?} in history_orders, not CLOSE_BY",
            o.order_type
        )),
        None => Err(format!("the out_by deals' order {order} is not in history_orders")),
    }
}

async fn depth_step(kit: &mut Kit, spec: &SymbolSpec) {
    let symbol = spec.name.clone();
    match kit.call(&Command::MarketBookAdd { symbol: symbol.clone() }).await {
        Err(f) if unsupported(&f) => {
            kit.push("market_book", "market_book_add", not_supported(&f), None);
            return;
        }
        Err(f) => {
            kit.push("market_book", "market_book_add", Err(format!("failed: {f}")), None);
            return;
        }
        Ok(_) => {}
    }
    let t = Instant::now();
    let r = kit.call(&Command::MarketBookGet { symbol: symbol.clone() }).await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let v = match r {
        Err(f) if unsupported(&f) => not_supported(&f),
        Err(f) => Err(format!("failed: {f}")),
        Ok(CommandResult::MarketBook { levels, .. }) => {
            if levels.windows(2).all(|w| w[0].price >= w[1].price) {
                Ok(format!("{} levels, highest price first", levels.len()))
            } else {
                Err("the book is not ordered by price, highest first (as MT5 lists it)".into())
            }
        }
        Ok(other) => Err(wrong_kind("market_book", &other)),
    };
    kit.push(&format!("market_book_get {symbol}"), "market_book_get", v, Some(&[ms]));
    let released = kit.call(&Command::MarketBookRelease { symbol }).await;
    let v = match released {
        Ok(CommandResult::MarketBookSubscription { subscribed: false, .. }) => Ok("released".into()),
        Ok(other) => Err(wrong_kind("market_book_subscription", &other)),
        Err(f) => Err(format!("failed: {f}")),
    };
    kit.push("market_book_release", "market_book_release", v, None);
}
