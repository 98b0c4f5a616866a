//! The `--trading` cycle of the kit (demo accounts only): a market order
//! with an idempotency key and its re-send, the position and its deal, SL/TP,
//! a partial close, a reverse, a full close, and a far pending order that is
//! cancelled. Whatever the cycle opened is closed afterwards, even when a
//! step failed (best effort).

use std::collections::BTreeSet;
use std::time::Instant;

use tradeterm_core::account::{DealEntry, OrderType};
use tradeterm_core::{Deal, PendingOrder, Position, Side, SymbolSpec};
use tradeterm_protocol::agent::{HistoryOrder, OrderState, TradeResult};
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
    let _ = cycle(kit, &spec, &mut opened, &before_positions).await;
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
