//! The simulated broker through its public API and protocol commands, on a
//! manual clock.

use std::sync::Arc;

use tradeterm_core::account::{DealEntry, OrderType, Side};
use tradeterm_core::time::{DAY_MS, UnixMs, parse_iso, weekday};
use tradeterm_core::{Deal, Tick, Timeframe};
use tradeterm_protocol::agent::{
    Command, CommandResult, ErrorBody, Event, OrderCheck, OrderRequest, OrderState, Permissions, Platform, TradeResult,
    TransactionKind, codes,
};
use tradeterm_sim::{Clock, ManualClock, SimSettings, Simulator};

const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;

fn at(iso: &str) -> UnixMs {
    parse_iso(iso).unwrap()
}

/// A trading-enabled simulator at `iso` with 10-second tick slots (fast replays).
fn sim_at(iso: &str) -> (Simulator, Arc<ManualClock>) {
    sim_with(iso, |_| {})
}

fn sim_with(iso: &str, tweak: impl FnOnce(&mut SimSettings)) -> (Simulator, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(at(iso)));
    let mut s = SimSettings::demo(0);
    s.allow_trading = true;
    s.tick_interval_ms = 10_000;
    tweak(&mut s);
    (Simulator::new(s, clock.clone()), clock)
}

fn order(symbol: &str, order_type: OrderType, volume: f64) -> OrderRequest {
    OrderRequest {
        symbol: symbol.into(),
        order_type,
        volume,
        price: None,
        stop_loss: None,
        take_profit: None,
        deviation_points: None,
        comment: String::new(),
        magic: 0,
        idempotency_key: None,
        stop_limit_price: None,
        expiration_mode: None,
        expiration: None,
        filling: None,
    }
}

fn trade(r: Result<CommandResult, ErrorBody>) -> TradeResult {
    match r {
        Ok(CommandResult::Trade(t)) => t,
        other => panic!("expected a trade result, got {other:?}"),
    }
}

fn place(sim: &Simulator, o: OrderRequest) -> Result<CommandResult, ErrorBody> {
    sim.execute(Command::PlaceOrder { order: o })
}

fn check(sim: &Simulator, o: OrderRequest) -> OrderCheck {
    match sim.execute(Command::OrderCheck { order: o }) {
        Ok(CommandResult::OrderCheck(c)) => c,
        other => panic!("expected an order check, got {other:?}"),
    }
}

fn tick(sim: &Simulator, symbol: &str) -> Tick {
    sim.tick(symbol).expect("a quote")
}

fn point(symbol: &str) -> f64 {
    match symbol {
        "USDJPY" => 0.001,
        "XAUUSD" | "US500" => 0.01,
        _ => 0.00001,
    }
}

fn round_to(p: f64, pt: f64) -> f64 {
    let digits = (-pt.log10()).round() as i32;
    let f = 10f64.powi(digits);
    (p * f).round() / f
}

/// Advances the clock in `step` increments until `done` or `limit` passes.
fn run_until(sim: &Simulator, clock: &ManualClock, step: i64, limit: i64, mut done: impl FnMut(&Simulator) -> bool) {
    let end = clock.now_ms() + limit;
    while clock.now_ms() < end {
        clock.advance_ms(step);
        if done(sim) {
            return;
        }
    }
    panic!("condition not reached within {} hours", limit / HOUR);
}

fn rejected(r: Result<CommandResult, ErrorBody>, retcode: &str) -> ErrorBody {
    let e = r.expect_err("expected a rejection");
    assert_eq!(e.code, codes::TRADE_REJECTED, "{e:?}");
    assert_eq!(e.retcode.as_deref(), Some(retcode), "{e:?}");
    e
}

fn out_deals(sim: &Simulator) -> Vec<Deal> {
    sim.deals().into_iter().filter(|d| d.entry == DealEntry::Out).collect()
}

fn money(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[test]
fn market_order_fills_at_ask_and_sell_at_bid_with_dotted_comment() {
    let (sim, _clock) = sim_at("2026-11-18T12:00:00Z");
    let t = tick(&sim, "EURUSD");
    let mut o = order("EURUSD", OrderType::Buy, 0.1);
    o.comment = "v1.2.3 entry...".into();
    let r = trade(place(&sim, o));
    assert_eq!(r.retcode, "done");
    assert_eq!(r.price, t.ask);
    assert_eq!(r.position, r.order);
    let pos = &sim.positions()[0];
    assert_eq!(pos.comment, "v1.2.3 entry...");
    assert_eq!(pos.side, Side::Buy);
    assert_eq!(pos.current_price, t.bid);
    let r = trade(place(&sim, order("EURUSD", OrderType::Sell, 0.1)));
    assert_eq!(r.price, t.bid);
    let deals = sim.deals();
    assert_eq!(deals[0].entry, DealEntry::Balance);
    assert_eq!(deals[1].comment, "v1.2.3 entry...");
    // Both positions lose the spread at once.
    let acct = sim.account_info();
    assert!(acct.equity < acct.balance);
    assert_eq!(acct.balance, 10_000.0);
}

#[test]
fn stop_loss_triggers_at_its_price() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let t = tick(&sim, "EURUSD");
    let sl = round_to(t.bid - 10.0 * point("EURUSD"), 0.00001);
    let mut o = order("EURUSD", OrderType::Buy, 0.1);
    o.stop_loss = Some(sl);
    o.take_profit = Some(round_to(t.ask + 0.05, 0.00001));
    let r = trade(place(&sim, o));
    sim.drain_events();
    run_until(&sim, &clock, 5 * MIN, 72 * HOUR, |s| s.positions().is_empty());
    let out = out_deals(&sim);
    assert_eq!(out.len(), 1);
    let d = &out[0];
    assert_eq!(d.comment, "sl");
    assert_eq!(d.position, r.position);
    assert_eq!(d.side, Side::Sell);
    assert_eq!(d.price, sl, "filled at the stop (the market traded through it)");
    assert_eq!(d.profit, money((sl - r.price) * 0.1 * 100_000.0));
    // The tick that triggered it is in the history, the one before was above.
    let hist = sim.tick_history("EURUSD");
    let i = hist
        .iter()
        .position(|x| x.time == d.time)
        .expect("trigger tick in history");
    assert!(hist[i].bid <= sl);
    assert!(hist[i - 1].bid > sl);
    assert_eq!(sim.account_info().balance, money(10_000.0 + d.profit));
    let events = sim.drain_events();
    assert!(events.iter().any(|e| matches!(e,
        Event::TradeTransaction { transaction: TransactionKind::DealAdded, deal: Some(deal), .. } if deal.comment == "sl")));
    assert!(events.iter().any(|e| matches!(e, Event::Account(_))));
}

#[test]
fn take_profit_of_a_short_triggers_at_its_price() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let t = tick(&sim, "XAUUSD");
    let tp = round_to(t.bid - 50.0 * 0.01, 0.01);
    let mut o = order("XAUUSD", OrderType::Sell, 0.05);
    o.take_profit = Some(tp);
    let r = trade(place(&sim, o));
    run_until(&sim, &clock, 5 * MIN, 72 * HOUR, |s| s.positions().is_empty());
    let d = &out_deals(&sim)[0];
    assert_eq!(d.comment, "tp");
    assert_eq!(d.price, tp);
    assert_eq!(d.side, Side::Buy);
    assert_eq!(d.profit, money((r.price - tp) * 0.05 * 100.0));
    assert!(d.profit > 0.0);
}

#[test]
fn stops_fill_at_the_first_price_after_a_weekend_gap() {
    // Find, with a twin simulator, a weekend where the market gaps by more
    // than 30 points; then hold a position over it with the stop inside the gap.
    let start = "2026-11-18T12:00:00Z";
    let (peek, peek_clock) = sim_at(start);
    let mut found = None;
    for week in 1..6 {
        let friday = at("2026-11-20T21:50:00Z") + week * 7 * DAY_MS;
        peek_clock.set(friday);
        let before = tick(&peek, "EURUSD");
        peek_clock.set(friday + 2 * DAY_MS + HOUR); // Sunday 22:50
        let hist = peek.tick_history("EURUSD");
        let first = hist
            .iter()
            .find(|t| t.time > friday + 2 * DAY_MS)
            .cloned()
            .expect("Sunday ticks");
        if (first.bid - before.bid).abs() > 30.0 * 0.00001 {
            found = Some((friday, before, first));
            break;
        }
    }
    let (friday, before, first) = found.expect("a weekend gap in the replayed data");
    let (sim, clock) = sim_at(start);
    clock.set(friday);
    let up = first.bid > before.bid;
    // A short loses on a gap up, a long on a gap down: put the stop in the gap.
    let (side, sl) = if up {
        (OrderType::Sell, round_to(before.ask + 15.0 * 0.00001, 0.00001))
    } else {
        (OrderType::Buy, round_to(before.bid - 15.0 * 0.00001, 0.00001))
    };
    let mut o = order("EURUSD", side, 0.1);
    o.stop_loss = Some(sl);
    trade(place(&sim, o));
    clock.set(friday + 10 * MIN);
    assert_eq!(sim.positions().len(), 1, "no trigger before the close");
    clock.set(friday + 2 * DAY_MS + HOUR);
    let d = out_deals(&sim).pop().expect("stopped out after the weekend");
    assert_eq!(d.comment, "sl");
    assert_eq!(d.time, first.time, "on the first tick after the gap");
    if up {
        assert_eq!(d.price, first.ask);
        assert!(d.price > sl, "worse than the stop");
    } else {
        assert_eq!(d.price, first.bid);
        assert!(d.price < sl, "worse than the stop");
    }
}

#[test]
fn buy_limit_and_sell_stop_trigger_and_fill_at_their_price() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let t = tick(&sim, "EURUSD");
    let pt = 0.00001;
    let mut limit = order("EURUSD", OrderType::BuyLimit, 0.2);
    limit.price = Some(round_to(t.ask - 10.0 * pt, pt));
    limit.stop_loss = Some(round_to(t.ask - 0.01, pt));
    let mut stop = order("EURUSD", OrderType::SellStop, 0.1);
    stop.price = Some(round_to(t.bid - 10.0 * pt, pt));
    let rl = trade(place(&sim, limit.clone()));
    let rs = trade(place(&sim, stop.clone()));
    assert_eq!(rl.retcode, "placed");
    assert_eq!(rl.deal, 0);
    assert_eq!(sim.pending_orders().len(), 2);
    let events = sim.drain_events();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                Event::TradeTransaction {
                    transaction: TransactionKind::OrderAdded,
                    ..
                }
            ))
            .count(),
        2
    );
    run_until(&sim, &clock, 5 * MIN, 72 * HOUR, |s| s.pending_orders().is_empty());
    let positions = sim.positions();
    assert_eq!(positions.len(), 2);
    let long = positions
        .iter()
        .find(|p| p.ticket == rl.order)
        .expect("position id = order ticket");
    assert_eq!(long.side, Side::Buy);
    assert_eq!(long.open_price, limit.price.unwrap());
    assert_eq!(long.stop_loss, limit.stop_loss);
    let short = positions.iter().find(|p| p.ticket == rs.order).unwrap();
    assert_eq!(short.side, Side::Sell);
    assert_eq!(short.open_price, stop.price.unwrap());
    let hist = sim.history_orders();
    for ticket in [rl.order, rs.order] {
        let h = hist.iter().find(|h| h.ticket == ticket).unwrap();
        assert_eq!(h.state, OrderState::Filled);
        assert_eq!(h.position, ticket);
    }
    let events = sim.drain_events();
    assert!(events.iter().any(|e| matches!(e, Event::TradeTransaction { transaction: TransactionKind::OrderRemoved, order, .. } if *order == rl.order)));
}

#[test]
fn pending_orders_are_validated_and_cancelled() {
    let (sim, _clock) = sim_at("2026-11-18T12:00:00Z");
    let t = tick(&sim, "EURUSD");
    let mut bad = order("EURUSD", OrderType::BuyLimit, 0.1);
    bad.price = Some(round_to(t.ask + 0.001, 0.00001));
    let e = rejected(place(&sim, bad), "invalid_price");
    assert!(e.message.contains("buy limit"), "{}", e.message);
    let mut ok = order("EURUSD", OrderType::BuyStop, 0.1);
    ok.price = Some(round_to(t.ask + 0.002, 0.00001));
    let r = trade(place(&sim, ok));
    let c = trade(sim.execute(Command::CancelOrder { ticket: r.order }));
    assert_eq!(c.order, r.order);
    assert!(sim.pending_orders().is_empty());
    let h = sim.history_orders().into_iter().find(|h| h.ticket == r.order).unwrap();
    assert_eq!(h.state, OrderState::Canceled);
    let e = sim.execute(Command::CancelOrder { ticket: r.order }).unwrap_err();
    assert_eq!(e.code, codes::NOT_FOUND);
}

#[test]
fn margin_is_computed_and_no_money_rejects() {
    let (sim, _clock) = sim_at("2026-11-18T12:00:00Z");
    let t = tick(&sim, "EURUSD");
    // 1 lot EURUSD at 1:100 = 1 000 EUR of margin, in USD at the EURUSD mid.
    let expected = 1_000.0 * (t.bid + t.ask) / 2.0;
    let c = check(&sim, order("EURUSD", OrderType::Buy, 1.0));
    assert!(c.valid, "{c:?}");
    assert_eq!(c.retcode, "done");
    assert_eq!(c.price, t.ask);
    assert!((c.margin - expected).abs() < 0.01, "{} vs {expected}", c.margin);
    assert!((c.free_margin_after - (10_000.0 - c.margin)).abs() < 0.01);
    let r = trade(place(&sim, order("EURUSD", OrderType::Buy, 1.0)));
    let acct = sim.account_info();
    assert!((acct.margin - expected).abs() < 0.01);
    assert!(acct.margin_level.unwrap() > 100.0);
    // Nine more lots need about 11 000 USD.
    let c = check(&sim, order("EURUSD", OrderType::Buy, 9.0));
    assert!(!c.valid);
    assert_eq!(c.retcode, "no_money");
    let before = sim.state_json();
    let e = rejected(place(&sim, order("EURUSD", OrderType::Buy, 9.0)), "no_money");
    assert!(e.message.contains("not enough money"), "{}", e.message);
    assert_eq!(sim.state_json(), before, "a rejection changes nothing");
    assert_eq!(sim.positions().len(), 1);
    // US500 CFD: 5 % of the notional.
    let us = tick(&sim, "US500");
    let c = check(&sim, order("US500", OrderType::Buy, 2.0));
    assert!((c.margin - 2.0 * us.ask * 0.05).abs() < 0.01, "{c:?}");
    // Closing frees the margin.
    trade(sim.execute(Command::ClosePosition {
        ticket: r.position,
        volume: None,
        deviation_points: None,
        idempotency_key: None,
    }));
    assert_eq!(sim.account_info().margin, 0.0);
    assert_eq!(sim.account_info().margin_level, None);
}

#[test]
fn usdjpy_profit_is_converted_to_usd() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let r = trade(place(&sim, order("USDJPY", OrderType::Buy, 0.5)));
    clock.advance_ms(3 * HOUR);
    let t = tick(&sim, "USDJPY");
    let c = trade(sim.execute(Command::ClosePosition {
        ticket: r.position,
        volume: None,
        deviation_points: None,
        idempotency_key: None,
    }));
    assert_eq!(c.price, t.bid);
    let d = out_deals(&sim).pop().unwrap();
    let expected = (t.bid - r.price) * 0.5 * 100_000.0 / ((t.bid + t.ask) / 2.0);
    assert!((d.profit - expected).abs() <= 0.011, "{} vs {expected}", d.profit);
}

#[test]
fn swaps_accrue_over_a_week_with_a_triple_wednesday() {
    // Monday 10:00 → next Monday 10:00: rollovers Mon, Tue, Wed (×3), Thu, Fri.
    let (sim, clock) = sim_at("2026-11-16T10:00:00Z");
    assert_eq!(weekday(clock.now_ms()), 1);
    let r = trade(place(&sim, order("EURUSD", OrderType::Buy, 1.0)));
    let swap = |s: &Simulator| s.positions()[0].swap;
    let expect = [
        ("2026-11-16T21:59:59Z", 0.0),
        ("2026-11-16T22:00:00Z", -7.5),
        ("2026-11-17T23:00:00Z", -15.0),
        ("2026-11-18T21:00:00Z", -15.0),
        ("2026-11-18T22:00:01Z", -37.5),
        ("2026-11-19T22:30:00Z", -45.0),
        ("2026-11-20T22:30:00Z", -52.5),
        ("2026-11-23T10:00:00Z", -52.5),
    ];
    for (when, value) in expect {
        clock.set(at(when));
        assert_eq!(swap(&sim), value, "at {when}");
    }
    let acct = sim.account_info();
    assert_eq!(acct.equity, money(acct.balance + acct.profit - 52.5));
    trade(sim.execute(Command::ClosePosition {
        ticket: r.position,
        volume: None,
        deviation_points: None,
        idempotency_key: None,
    }));
    let d = out_deals(&sim).pop().unwrap();
    assert_eq!(d.swap, -52.5);
    assert_eq!(sim.account_info().balance, money(10_000.0 + d.profit - 52.5));
}

#[test]
fn partial_close_then_full_close() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let r = trade(place(&sim, order("EURUSD", OrderType::Buy, 0.3)));
    clock.advance_ms(30 * MIN);
    let c1 = trade(sim.execute(Command::ClosePosition {
        ticket: r.position,
        volume: Some(0.1),
        deviation_points: Some(5),
        idempotency_key: None,
    }));
    assert_eq!(c1.volume, 0.1);
    assert_eq!(c1.position, r.position);
    let p = &sim.positions()[0];
    assert_eq!(p.volume, 0.2);
    assert_eq!(p.ticket, r.position);
    let close = |v: Option<f64>| {
        sim.execute(Command::ClosePosition {
            ticket: r.position,
            volume: v,
            deviation_points: None,
            idempotency_key: None,
        })
    };
    rejected(close(Some(0.25)), "invalid_volume");
    rejected(close(Some(0.015)), "invalid_volume");
    rejected(close(Some(0.195)), "invalid_volume");
    clock.advance_ms(30 * MIN);
    let c2 = trade(close(None));
    assert_eq!(c2.volume, 0.2);
    assert!(sim.positions().is_empty());
    let outs = out_deals(&sim);
    assert_eq!(outs.len(), 2);
    let total: f64 = outs.iter().map(|d| d.profit).sum();
    assert_eq!(sim.account_info().balance, money(10_000.0 + total));
    assert_eq!(close(None).unwrap_err().code, codes::NOT_FOUND);
}

#[test]
fn reverse_closes_and_opens_the_other_way() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let r = trade(place(&sim, order("GBPUSD", OrderType::Buy, 0.2)));
    clock.advance_ms(10 * MIN);
    let t = tick(&sim, "GBPUSD");
    let (close, open) = match sim.execute(Command::ReversePosition {
        ticket: r.position,
        idempotency_key: None,
    }) {
        Ok(CommandResult::Reverse { close, open }) => (close, open),
        other => panic!("{other:?}"),
    };
    assert_eq!(close.position, r.position);
    assert_eq!(close.price, t.bid);
    assert_eq!(open.price, t.bid);
    assert_eq!(open.volume, 0.2);
    let positions = sim.positions();
    assert_eq!(positions.len(), 1);
    assert_eq!(positions[0].side, Side::Sell);
    assert_eq!(positions[0].ticket, open.position);
    assert_ne!(open.position, r.position);
    assert_eq!(out_deals(&sim)[0].comment, "reverse");
}

#[test]
fn idempotency_keys_never_execute_twice() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let mut o = order("EURUSD", OrderType::Buy, 0.1);
    o.idempotency_key = Some("key-1".into());
    let first = trade(place(&sim, o.clone()));
    clock.advance_ms(MIN);
    let again = trade(place(&sim, o.clone()));
    assert_eq!(first, again);
    assert_eq!(sim.positions().len(), 1);
    // Same key, different request.
    let mut other = o.clone();
    other.volume = 0.2;
    assert_eq!(place(&sim, other).unwrap_err().code, codes::INVALID_ARGUMENT);
    // The same key on another command is another key.
    let close = Command::ClosePosition {
        ticket: first.position,
        volume: None,
        deviation_points: None,
        idempotency_key: Some("key-1".into()),
    };
    let c1 = trade(sim.execute(close.clone()));
    let c2 = trade(sim.execute(close));
    assert_eq!(c1, c2);
    assert_eq!(out_deals(&sim).len(), 1);
    // A rejection is remembered too.
    let mut big = order("EURUSD", OrderType::Buy, 50.0);
    big.idempotency_key = Some("key-2".into());
    let e1 = rejected(place(&sim, big.clone()), "no_money");
    let e2 = rejected(place(&sim, big), "no_money");
    assert_eq!(e1, e2);
    // Reverse with a key.
    let r = trade(place(&sim, order("EURUSD", OrderType::Sell, 0.1)));
    let rev = Command::ReversePosition {
        ticket: r.position,
        idempotency_key: Some("rev-1".into()),
    };
    let a = sim.execute(rev.clone()).unwrap();
    let b = sim.execute(rev).unwrap();
    assert_eq!(a, b);
    assert_eq!(sim.positions().len(), 1);
}

#[test]
fn permissions_gate_trading_but_not_reads_or_checks() {
    let clock = Arc::new(ManualClock::new(at("2026-11-18T12:00:00Z")));
    let sim = Simulator::new(SimSettings::demo(3), clock);
    assert_eq!(
        sim.permissions(),
        Permissions {
            allow_trading: false,
            automated_trading: true
        }
    );
    let e = place(&sim, order("EURUSD", OrderType::Buy, 0.1)).unwrap_err();
    assert_eq!(e.code, codes::TRADING_DISABLED);
    assert!(e.message.contains("allow-trading"), "{}", e.message);
    assert!(check(&sim, order("EURUSD", OrderType::Buy, 0.1)).valid);
    assert!(sim.execute(Command::AccountInfo).is_ok());
    assert!(sim.execute(Command::Positions { symbol: None }).is_ok());
    sim.set_allow_trading(true);
    let r = trade(place(&sim, order("EURUSD", OrderType::Buy, 0.1)));
    sim.set_automated_trading(false);
    let trades = [
        Command::PlaceOrder {
            order: order("EURUSD", OrderType::Buy, 0.1),
        },
        Command::ClosePosition {
            ticket: r.position,
            volume: None,
            deviation_points: None,
            idempotency_key: None,
        },
        Command::ModifyPosition {
            ticket: r.position,
            stop_loss: None,
            take_profit: None,
        },
        Command::CancelOrder { ticket: 1 },
        Command::ReversePosition {
            ticket: r.position,
            idempotency_key: None,
        },
    ];
    for c in trades {
        let e = sim.execute(c).unwrap_err();
        assert_eq!(e.code, codes::TRADING_DISABLED);
        assert!(e.message.contains("automated-trading"), "{}", e.message);
    }
    assert_eq!(sim.positions().len(), 1);
    let perms: Vec<Permissions> = sim
        .drain_events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Permissions(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(
        perms.last(),
        Some(&Permissions {
            allow_trading: true,
            automated_trading: false
        })
    );
}

#[test]
fn modify_sets_and_removes_levels() {
    let (sim, _clock) = sim_at("2026-11-18T12:00:00Z");
    let r = trade(place(&sim, order("EURUSD", OrderType::Buy, 0.1)));
    let t = tick(&sim, "EURUSD");
    let sl = round_to(t.bid - 0.002, 0.00001);
    let tp = round_to(t.bid + 0.002, 0.00001);
    trade(sim.execute(Command::ModifyPosition {
        ticket: r.position,
        stop_loss: Some(sl),
        take_profit: Some(tp),
    }));
    let p = &sim.positions()[0];
    assert_eq!((p.stop_loss, p.take_profit), (Some(sl), Some(tp)));
    let e = sim
        .execute(Command::ModifyPosition {
            ticket: r.position,
            stop_loss: Some(round_to(t.bid + 0.001, 0.00001)),
            take_profit: None,
        })
        .unwrap_err();
    assert_eq!(e.retcode.as_deref(), Some("invalid_stops"));
    trade(sim.execute(Command::ModifyPosition {
        ticket: r.position,
        stop_loss: None,
        take_profit: None,
    }));
    let p = &sim.positions()[0];
    assert_eq!((p.stop_loss, p.take_profit), (None, None));
    assert!(sim.drain_events().iter().any(|e| matches!(e,
        Event::TradeTransaction { transaction: TransactionKind::PositionModified, position, .. } if *position == r.position)));
}

#[test]
fn order_check_leaves_the_state_byte_identical() {
    let (sim, _clock) = sim_at("2026-11-18T12:00:00Z");
    trade(place(&sim, order("EURUSD", OrderType::Buy, 0.5)));
    let mut pending = order("XAUUSD", OrderType::SellLimit, 0.1);
    pending.price = Some(round_to(tick(&sim, "XAUUSD").bid + 5.0, 0.01));
    trade(place(&sim, pending.clone()));
    let before = sim.state_json();
    assert!(before.len() > 100);
    // Valid and refused checks alike: each answers, none changes the state.
    for (o, want) in [
        (order("EURUSD", OrderType::Buy, 1.0), "done"),
        (order("EURUSD", OrderType::Sell, 99.0), "no_money"),
        (order("EURUSD", OrderType::Buy, 0.001), "invalid_volume"),
        (pending, "done"),
        (order("US500", OrderType::Sell, 1.0), "done"),
    ] {
        let mut o = o;
        o.idempotency_key = Some("check-key".into());
        let what = format!("{} {:?} {}", o.symbol, o.order_type, o.volume);
        let c = check(&sim, o);
        assert_eq!((c.retcode.as_str(), c.valid), (want, want == "done"), "{what}: {c:?}");
    }
    assert!(matches!(
        sim.execute(Command::AccountInfo),
        Ok(CommandResult::AccountInfo(_))
    ));
    let bars = sim.execute(Command::Bars {
        symbol: "EURUSD".into(),
        timeframe: Timeframe::H1,
        count: Some(50),
        from: None,
        to: None,
    });
    assert!(
        matches!(&bars, Ok(CommandResult::Bars { bars, .. }) if bars.len() == 50),
        "{bars:?}"
    );
    assert_eq!(sim.state_json(), before);
}

#[test]
fn market_closed_and_unknown_symbols() {
    let (sim, _clock) = sim_at("2026-11-21T12:00:00Z"); // Saturday
    let e = rejected(place(&sim, order("EURUSD", OrderType::Buy, 0.1)), "market_closed");
    assert!(e.message.contains("resumes at 2026-11-22T22:00:00Z"), "{}", e.message);
    let c = check(&sim, order("EURUSD", OrderType::Buy, 0.1));
    assert_eq!(c.retcode, "market_closed");
    // The Friday quote is still there.
    let t = tick(&sim, "EURUSD");
    assert!(t.time < at("2026-11-20T22:00:00Z") && t.time > at("2026-11-20T21:00:00Z"));
    // A demo terminal may ignore sessions.
    let (open, _clock) = sim_with("2026-11-21T12:00:00Z", |s| s.always_open = true);
    assert_eq!(
        trade(place(&open, order("EURUSD", OrderType::Buy, 0.1))).retcode,
        "done"
    );
    let e = sim
        .execute(Command::Tick {
            symbol: "DOGEUSD".into(),
        })
        .unwrap_err();
    assert_eq!(e.code, codes::NOT_FOUND);
    rejected(place(&sim, order("EURUSD", OrderType::Buy, 0.015)), "invalid_volume");
}

#[test]
fn read_commands() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let now = clock.now_ms();
    match sim.execute(Command::Symbols).unwrap() {
        CommandResult::Symbols { symbols } => assert_eq!(symbols, ["EURUSD", "GBPUSD", "USDJPY", "XAUUSD", "US500"]),
        other => panic!("{other:?}"),
    }
    match sim
        .execute(Command::SymbolSpec {
            symbol: "usdjpy".into(),
        })
        .unwrap()
    {
        CommandResult::SymbolSpec(s) => {
            assert_eq!(s.name, "USDJPY");
            assert_eq!(s.digits, 3);
            assert_eq!(s.swap_triple_day, 3);
        }
        other => panic!("{other:?}"),
    }
    match sim
        .execute(Command::Ticks {
            symbol: "EURUSD".into(),
            from: now - 10 * MIN,
            to: now + 1,
            limit: Some(5),
        })
        .unwrap()
    {
        CommandResult::Ticks { ticks, .. } => {
            assert_eq!(ticks.len(), 5);
            assert!(ticks.windows(2).all(|w| w[0].time < w[1].time));
            assert_eq!(ticks.last().unwrap(), &tick(&sim, "EURUSD"));
        }
        other => panic!("{other:?}"),
    }
    let e = sim
        .execute(Command::Ticks {
            symbol: "EURUSD".into(),
            from: now,
            to: now - 1,
            limit: None,
        })
        .unwrap_err();
    assert_eq!(e.code, codes::INVALID_ARGUMENT);
    match sim
        .execute(Command::Calendar {
            from: now - 7 * DAY_MS,
            to: now + 7 * DAY_MS,
            currencies: vec![],
        })
        .unwrap()
    {
        CommandResult::Calendar { events } => {
            assert!(!events.is_empty());
            assert!(events.iter().filter(|e| e.time > now).all(|e| e.actual.is_none()));
        }
        other => panic!("{other:?}"),
    }
    let (mt4, _c) = sim_with("2026-11-18T12:00:00Z", |s| s.platform = Platform::MT4);
    let e = mt4
        .execute(Command::Calendar {
            from: now,
            to: now + DAY_MS,
            currencies: vec![],
        })
        .unwrap_err();
    assert_eq!(e.code, codes::NOT_SUPPORTED);
    match sim.execute(Command::HistoryDeals { from: 0, to: now + 1 }).unwrap() {
        CommandResult::Deals { deals } => assert_eq!(deals.len(), 1, "the initial deposit"),
        other => panic!("{other:?}"),
    }
}

fn bars(
    sim: &Simulator,
    symbol: &str,
    tf: Timeframe,
    count: Option<u32>,
    from: Option<i64>,
    to: Option<i64>,
) -> Vec<tradeterm_core::Bar> {
    match sim.execute(Command::Bars {
        symbol: symbol.into(),
        timeframe: tf,
        count,
        from,
        to,
    }) {
        Ok(CommandResult::Bars { bars, .. }) => bars,
        other => panic!("{other:?}"),
    }
}

#[test]
fn bars_for_every_timeframe_by_count_and_range() {
    let (sim, clock) = sim_at("2026-11-18T12:30:00Z");
    let now = clock.now_ms();
    for symbol in ["EURUSD", "GBPUSD", "USDJPY", "XAUUSD", "US500"] {
        for tf in Timeframe::ALL {
            let b = bars(&sim, symbol, tf, Some(30), None, None);
            assert!(!b.is_empty(), "{symbol} {tf}");
            assert!(b.len() <= 30);
            assert!(b.windows(2).all(|w| w[0].time < w[1].time), "{symbol} {tf}");
            assert!(b.iter().all(|x| x.validate().is_ok() && x.time <= now), "{symbol} {tf}");
            assert_eq!(
                b.last().unwrap().time,
                tf.bar_open(now),
                "{symbol} {tf}: the forming bar is last"
            );
        }
    }
    // FX weekends have no bars; a full FX week has 120 hourly bars.
    let monday = at("2026-11-09T00:00:00Z");
    let h1 = bars(
        &sim,
        "EURUSD",
        Timeframe::H1,
        None,
        Some(monday - 2 * HOUR),
        Some(monday + 7 * DAY_MS - 2 * HOUR),
    );
    assert_eq!(h1.len(), 120);
    assert!(h1.iter().all(|b| weekday(b.time) != 6));
    // Range bounds: open times in [from, to).
    let m15 = bars(
        &sim,
        "XAUUSD",
        Timeframe::M15,
        None,
        Some(now - 2 * HOUR),
        Some(now - HOUR),
    );
    assert_eq!(m15.len(), 4);
    assert_eq!(m15[0].time, now - 2 * HOUR);
    // Higher timeframes aggregate lower ones.
    let day = at("2026-11-17T00:00:00Z");
    let d1 = bars(&sim, "GBPUSD", Timeframe::D1, None, Some(day), Some(day + DAY_MS));
    let h1 = bars(&sim, "GBPUSD", Timeframe::H1, None, Some(day), Some(day + DAY_MS));
    assert_eq!(d1.len(), 1);
    assert_eq!(h1.len(), 24);
    assert_eq!(d1[0].open, h1[0].open);
    assert_eq!(d1[0].close, h1[23].close);
    assert_eq!(d1[0].high, h1.iter().map(|b| b.high).fold(f64::MIN, f64::max));
    assert_eq!(d1[0].low, h1.iter().map(|b| b.low).fold(f64::MAX, f64::min));
    // Errors.
    let e = sim
        .execute(Command::Bars {
            symbol: "EURUSD".into(),
            timeframe: Timeframe::H1,
            count: Some(200_000),
            from: None,
            to: None,
        })
        .unwrap_err();
    assert_eq!(e.code, codes::INVALID_ARGUMENT);
    let e = sim
        .execute(Command::Bars {
            symbol: "EURUSD".into(),
            timeframe: Timeframe::H1,
            count: Some(5),
            from: Some(0),
            to: None,
        })
        .unwrap_err();
    assert_eq!(e.code, codes::INVALID_ARGUMENT);
    // Real data: the replayed EURUSD week ending now matches the source file's last week.
    let b = bars(
        &sim,
        "EURUSD",
        Timeframe::H1,
        Some(1),
        None,
        Some(at("2026-11-18T12:00:00Z")),
    );
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].time, at("2026-11-18T11:00:00Z"));
}

#[test]
fn ticks_lie_inside_their_minute_bars() {
    let (sim, clock) = sim_with("2026-11-18T12:00:00Z", |s| s.tick_interval_ms = 1_000);
    clock.advance_ms(20 * MIN);
    let now = clock.now_ms();
    for symbol in ["EURUSD", "USDJPY", "US500"] {
        let m1 = bars(&sim, symbol, Timeframe::M1, None, Some(now - 20 * MIN), Some(now - MIN));
        assert_eq!(m1.len(), 19);
        let ticks = sim.tick_history(symbol);
        let mut checked = 0;
        for b in &m1 {
            for t in ticks.iter().filter(|t| t.time >= b.time && t.time < b.time + MIN) {
                assert!(t.bid >= b.low && t.bid <= b.high, "{symbol} tick {t:?} outside {b:?}");
                checked += 1;
            }
        }
        assert!(checked > 300, "{symbol}: {checked}");
    }
}

#[test]
fn same_seed_and_steps_give_identical_ticks_and_deals() {
    let run = |seed: u64, steps: &[i64]| {
        let (sim, clock) = sim_with("2026-11-18T12:00:00Z", |s| s.seed = seed);
        let t = tick(&sim, "EURUSD");
        let mut o = order("EURUSD", OrderType::Buy, 0.1);
        o.stop_loss = Some(round_to(t.bid - 0.0005, 0.00001));
        o.take_profit = Some(round_to(t.bid + 0.0005, 0.00001));
        trade(place(&sim, o));
        let mut s = order("XAUUSD", OrderType::Sell, 0.02);
        s.take_profit = Some(round_to(tick(&sim, "XAUUSD").bid - 1.0, 0.01));
        s.stop_loss = Some(round_to(tick(&sim, "XAUUSD").ask + 1.0, 0.01));
        trade(place(&sim, s));
        for &st in steps {
            clock.advance_ms(st);
            sim.sync();
        }
        trade(place(&sim, order("US500", OrderType::Buy, 0.5)));
        clock.advance_ms(2 * DAY_MS);
        let ticks: Vec<Vec<Tick>> = sim.symbols().iter().map(|s| sim.tick_history(s)).collect();
        (sim.deals(), ticks, sim.history_orders(), sim.state_json())
    };
    let fine: Vec<i64> = vec![7 * MIN; 60];
    let coarse: Vec<i64> = vec![7 * HOUR];
    let a = run(11, &fine);
    let b = run(11, &fine);
    assert_eq!(a.0, b.0, "deals");
    assert_eq!(a.1, b.1, "ticks");
    assert_eq!(a.2, b.2, "orders");
    assert_eq!(a.3, b.3, "whole state");
    assert!(
        a.0.iter().filter(|d| d.entry == DealEntry::Out).count() >= 2,
        "SL/TP exercised: {:?}",
        a.0
    );
    // Reading the clock more or less often changes nothing.
    let c = run(11, &coarse);
    assert_eq!(a.1, c.1, "ticks do not depend on step size");
    assert_eq!(a.0, c.0, "nor do the deals");
    // Another seed, another market.
    let d = run(12, &fine);
    assert_ne!(a.1, d.1);
}

#[test]
fn simulated_terminals_differ_by_index() {
    let a = SimSettings::demo(0);
    let b = SimSettings::demo(1);
    assert_ne!(a.seed, b.seed);
    assert_ne!(a.login, b.login);
    assert!(!a.allow_trading);
    assert!(a.automated_trading);
    assert_eq!(a.currency, "USD");
    assert_eq!(a.leverage, 100);
}

#[test]
fn other_account_currencies_convert_through_crosses() {
    let (sim, _clock) = sim_with("2026-11-18T12:00:00Z", |s| s.currency = "EUR".into());
    let c = check(&sim, order("USDJPY", OrderType::Buy, 1.0));
    let eur = tick(&sim, "EURUSD");
    // 100 000 USD / 100 = 1 000 USD of margin, in EUR.
    assert!((c.margin - 1000.0 / ((eur.bid + eur.ask) / 2.0)).abs() < 0.01, "{c:?}");
    assert_eq!(sim.account_info().currency, "EUR");
    let (odd, _clock) = sim_with("2026-11-18T12:00:00Z", |s| s.currency = "XYZ".into());
    assert_eq!(odd.account_info().currency, "USD");
}
