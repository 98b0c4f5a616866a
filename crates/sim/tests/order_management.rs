//! Order management on the simulated broker: stop-limit orders, expirations,
//! filling policies and the book, pending-order modification, close-by on
//! hedging and netting accounts.

use std::sync::Arc;

use tradeterm_core::Deal;
use tradeterm_core::account::{DealEntry, ExpirationMode, FillingMode, OrderType, Side};
use tradeterm_core::time::{DAY_MS, UnixMs, day_start, parse_iso};
use tradeterm_protocol::agent::{
    BookSide, Command, CommandResult, ErrorBody, Event, HistoryOrder, OrderRequest, OrderState, Platform, TradeResult,
    TransactionKind, codes,
};
use tradeterm_sim::{ManualClock, SimSettings, Simulator};

const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;

fn sim_with(iso: &str, tweak: impl FnOnce(&mut SimSettings)) -> (Simulator, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(parse_iso(iso).unwrap()));
    let mut s = SimSettings::demo(0);
    s.allow_trading = true;
    s.tick_interval_ms = 10_000;
    tweak(&mut s);
    (Simulator::new(s, clock.clone()), clock)
}

fn sim_at(iso: &str) -> (Simulator, Arc<ManualClock>) {
    sim_with(iso, |_| {})
}

fn trade(r: Result<CommandResult, ErrorBody>) -> TradeResult {
    match r {
        Ok(CommandResult::Trade(t)) => t,
        other => panic!("expected a trade result, got {other:?}"),
    }
}

fn rejected(r: Result<CommandResult, ErrorBody>, retcode: &str) -> ErrorBody {
    let e = r.expect_err("expected a rejection");
    assert_eq!(e.code, codes::TRADE_REJECTED, "{e:?}");
    assert_eq!(e.retcode.as_deref(), Some(retcode), "{e:?}");
    e
}

fn place(sim: &Simulator, o: OrderRequest) -> Result<CommandResult, ErrorBody> {
    sim.execute(Command::PlaceOrder { order: o })
}

fn r5(p: f64) -> f64 {
    (p * 1e5).round() / 1e5
}

fn pending(order_type: OrderType, price: f64) -> OrderRequest {
    OrderRequest {
        price: Some(r5(price)),
        ..OrderRequest::new("EURUSD", order_type, 0.1)
    }
}

fn modify(ticket: u64, price: f64) -> Command {
    Command::ModifyOrder {
        ticket,
        price: r5(price),
        stop_limit_price: None,
        stop_loss: None,
        take_profit: None,
        expiration_mode: None,
        expiration: None,
        idempotency_key: None,
    }
}

fn transactions(sim: &Simulator) -> Vec<(TransactionKind, u64, Option<OrderState>)> {
    sim.drain_events()
        .into_iter()
        .filter_map(|e| match e {
            Event::TradeTransaction {
                transaction,
                order,
                order_state,
                ..
            } => Some((transaction, order, order_state)),
            _ => None,
        })
        .collect()
}

#[test]
fn modify_order_changes_price_levels_and_expiry_and_emits_order_modified() {
    let (sim, _clock) = sim_at("2026-11-18T12:00:00Z");
    let ask = sim.tick("EURUSD").unwrap().ask;
    let placed = trade(place(&sim, pending(OrderType::BuyLimit, ask - 0.0050)));
    transactions(&sim);
    let expiry = parse_iso("2026-11-19T18:00:00Z").unwrap();
    let t = trade(sim.execute(Command::ModifyOrder {
        ticket: placed.order,
        price: r5(ask - 0.0040),
        stop_limit_price: None,
        stop_loss: Some(r5(ask - 0.0090)),
        take_profit: Some(r5(ask + 0.0040)),
        expiration_mode: Some(ExpirationMode::Specified),
        expiration: Some(expiry),
        idempotency_key: None,
    }));
    assert_eq!((t.retcode.as_str(), t.order), ("done", placed.order));
    let o = &sim.pending_orders()[0];
    assert_eq!(o.price, r5(ask - 0.0040));
    assert_eq!(o.stop_loss, Some(r5(ask - 0.0090)));
    assert_eq!(o.take_profit, Some(r5(ask + 0.0040)));
    assert_eq!(
        (o.expiration_mode, o.expiration),
        (ExpirationMode::Specified, Some(expiry))
    );
    assert_eq!(
        transactions(&sim),
        vec![(TransactionKind::OrderModified, placed.order, None)]
    );
    // The same state again changes nothing; a price on the wrong side is refused.
    rejected(
        sim.execute(Command::ModifyOrder {
            ticket: placed.order,
            price: r5(ask - 0.0040),
            stop_limit_price: None,
            stop_loss: Some(r5(ask - 0.0090)),
            take_profit: Some(r5(ask + 0.0040)),
            expiration_mode: Some(ExpirationMode::Specified),
            expiration: Some(expiry),
            idempotency_key: None,
        }),
        "no_changes",
    );
    rejected(sim.execute(modify(placed.order, ask + 0.0040)), "invalid_price");
    let e = sim.execute(modify(999, ask - 0.0040)).unwrap_err();
    assert_eq!(e.code, codes::NOT_FOUND);
    // An absent SL/TP removes it; absent expiry is GTC.
    trade(sim.execute(modify(placed.order, ask - 0.0040)));
    let o = &sim.pending_orders()[0];
    assert_eq!(
        (o.stop_loss, o.take_profit, o.expiration_mode),
        (None, None, ExpirationMode::Gtc)
    );
}

#[test]
fn buy_stop_limit_becomes_a_buy_limit_at_the_stop_and_then_fills() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let ask = sim.tick("EURUSD").unwrap().ask;
    // Stop-limit validation: the limit must be below the stop of a buy stop limit.
    let mut bad = pending(OrderType::BuyStopLimit, ask + 0.0010);
    bad.stop_limit_price = Some(r5(ask + 0.0020));
    rejected(place(&sim, bad), "invalid_price");
    rejected(
        place(&sim, pending(OrderType::BuyStopLimit, ask + 0.0010)),
        "invalid_price",
    );
    // Find a stop the market reaches, then a limit under it that it comes back to.
    let (mut stop, mut limit) = (0.0, 0.0);
    {
        let (probe, probe_clock) = sim_at("2026-11-18T12:00:00Z");
        let mut high = ask;
        let mut after_high_low = f64::MAX;
        for _ in 0..(48 * 6) {
            probe_clock.advance_ms(10 * MIN);
            let a = probe.tick("EURUSD").unwrap().ask;
            if a > high {
                high = a;
                after_high_low = f64::MAX;
            } else {
                after_high_low = after_high_low.min(a);
            }
            if high - ask > 0.0015 && high - after_high_low > 0.0006 {
                stop = r5(ask + (high - ask) / 2.0);
                limit = r5(stop - 0.0002);
                break;
            }
        }
    }
    assert!(stop > 0.0, "the replayed market never rose and fell back in two days");
    let mut o = pending(OrderType::BuyStopLimit, stop);
    o.stop_limit_price = Some(limit);
    o.comment = "sl v1.0...".into();
    let placed = trade(place(&sim, o));
    assert_eq!(placed.retcode, "placed");
    assert_eq!(sim.pending_orders()[0].stop_limit_price, Some(limit));
    transactions(&sim);
    let mut seen_limit = None;
    for _ in 0..(48 * 60) {
        clock.advance_ms(MIN);
        let orders = sim.pending_orders();
        if let Some(l) = orders.iter().find(|x| x.order_type == OrderType::BuyLimit) {
            assert_eq!((l.price, l.stop_limit_price), (limit, None));
            assert_eq!(l.comment, "sl v1.0...");
            seen_limit = Some(l.ticket);
        }
        if !sim.positions().is_empty() {
            break;
        }
    }
    let positions = sim.positions();
    assert_eq!(positions.len(), 1, "the limit order filled");
    let history = sim.history_orders();
    let stop_limit = history.iter().find(|h| h.ticket == placed.order).unwrap();
    assert_eq!(stop_limit.state, OrderState::Filled);
    assert_eq!(stop_limit.position, 0, "the stop-limit itself opened nothing");
    let limit_ticket = seen_limit.unwrap_or(positions[0].ticket);
    assert_eq!(positions[0].ticket, limit_ticket);
    assert!(positions[0].open_price <= limit + 1e-9);
    let kinds = transactions(&sim);
    assert!(kinds.contains(&(TransactionKind::OrderRemoved, placed.order, Some(OrderState::Filled))));
    assert!(kinds.contains(&(TransactionKind::OrderAdded, limit_ticket, None)));
}

#[test]
fn orders_expire_by_mode_and_expirations_are_checked_against_the_symbol() {
    let start = "2026-11-18T12:00:00Z";
    let (sim, clock) = sim_at(start);
    let now = sim.now_ms();
    let ask = sim.tick("EURUSD").unwrap().ask;
    let far = ask - 0.0500;
    let with = |mode: ExpirationMode, at: Option<UnixMs>| OrderRequest {
        expiration_mode: Some(mode),
        expiration: at,
        ..pending(OrderType::BuyLimit, far)
    };
    rejected(place(&sim, with(ExpirationMode::Specified, None)), "invalid_expiration");
    rejected(
        place(&sim, with(ExpirationMode::Specified, Some(now - MIN))),
        "invalid_expiration",
    );
    // US500 allows no SPECIFIED_DAY.
    let us_ask = sim.tick("US500").unwrap().ask;
    let e = rejected(
        place(
            &sim,
            OrderRequest {
                price: Some(((us_ask - 100.0) * 100.0).round() / 100.0),
                expiration_mode: Some(ExpirationMode::SpecifiedDay),
                expiration: Some(now + DAY_MS),
                ..OrderRequest::new("US500", OrderType::BuyLimit, 0.1)
            },
        ),
        "invalid_expiration",
    );
    assert!(e.message.contains("GTC, DAY, SPECIFIED"), "{}", e.message);
    let specified = trade(place(&sim, with(ExpirationMode::Specified, Some(now + 30 * MIN))));
    let day = trade(place(&sim, with(ExpirationMode::Day, None)));
    let spec_day = trade(place(&sim, with(ExpirationMode::SpecifiedDay, Some(now + DAY_MS))));
    let gtc = trade(place(&sim, with(ExpirationMode::Gtc, None)));
    clock.advance_ms(31 * MIN);
    let open: Vec<u64> = sim.pending_orders().iter().map(|o| o.ticket).collect();
    assert_eq!(open, vec![day.order, spec_day.order, gtc.order]);
    let h = sim.history_orders();
    let expired = h.iter().find(|o| o.ticket == specified.order).unwrap();
    assert_eq!(
        (expired.state, expired.time_done),
        (OrderState::Expired, now + 30 * MIN)
    );
    let removed: Vec<_> = transactions(&sim)
        .into_iter()
        .filter(|(k, _, _)| *k == TransactionKind::OrderRemoved)
        .collect();
    assert_eq!(
        removed,
        vec![(
            TransactionKind::OrderRemoved,
            specified.order,
            Some(OrderState::Expired)
        )]
    );
    // DAY ends at midnight; SPECIFIED_DAY at the end of the next day.
    clock.set(day_start(now) + DAY_MS + MIN);
    let open: Vec<u64> = sim.pending_orders().iter().map(|o| o.ticket).collect();
    assert_eq!(open, vec![spec_day.order, gtc.order]);
    clock.set(day_start(now) + 2 * DAY_MS + MIN);
    let open: Vec<u64> = sim.pending_orders().iter().map(|o| o.ticket).collect();
    assert_eq!(open, vec![gtc.order]);
    let h = sim.history_orders();
    assert!(
        h.iter()
            .any(|o| o.ticket == day.order && o.state == OrderState::Expired && o.time_done == day_start(now) + DAY_MS)
    );
}

/// A FX day order placed on a Friday: its day ends while the market is shut
/// (Friday 22:00 UTC to Sunday 22:00), so it lives until the next trading
/// time, as MetaTrader 5 documents, and expires at Sunday's open, not at
/// Friday midnight; a SPECIFIED time on the weekend is kept as given.
#[test]
fn a_day_order_whose_day_ends_outside_the_session_expires_at_the_next_open() {
    let (sim, clock) = sim_at("2026-11-20T12:00:00Z");
    let now = sim.now_ms();
    let ask = sim.tick("EURUSD").unwrap().ask;
    let with = |mode: ExpirationMode, at: Option<UnixMs>| OrderRequest {
        expiration_mode: Some(mode),
        expiration: at,
        ..pending(OrderType::BuyLimit, ask - 0.0500)
    };
    let day = trade(place(&sim, with(ExpirationMode::Day, None)));
    let spec_day = trade(place(&sim, with(ExpirationMode::SpecifiedDay, Some(now + MIN))));
    let saturday_noon = now + DAY_MS;
    let specified = trade(place(&sim, with(ExpirationMode::Specified, Some(saturday_noon))));
    let sunday_open = day_start(now) + 2 * DAY_MS + 22 * 60 * MIN;
    clock.set(day_start(now) + DAY_MS + MIN);
    let open: Vec<u64> = sim.pending_orders().iter().map(|o| o.ticket).collect();
    assert_eq!(
        open,
        vec![day.order, spec_day.order, specified.order],
        "alive past Friday midnight"
    );
    clock.set(sunday_open - MIN);
    let open: Vec<u64> = sim.pending_orders().iter().map(|o| o.ticket).collect();
    assert_eq!(open, vec![day.order, spec_day.order]);
    clock.set(sunday_open + MIN);
    assert!(sim.pending_orders().is_empty());
    let h = sim.history_orders();
    let done = |ticket: u64| {
        let o = h.iter().find(|o| o.ticket == ticket).unwrap();
        (o.state, o.time_done)
    };
    assert_eq!(done(day.order), (OrderState::Expired, sunday_open));
    assert_eq!(done(spec_day.order), (OrderState::Expired, sunday_open));
    assert_eq!(done(specified.order), (OrderState::Expired, saturday_noon));
}

#[test]
fn filling_policies_follow_the_symbol_and_the_book() {
    let (sim, _clock) = sim_with("2026-11-18T12:00:00Z", |s| s.balance = 10_000_000.0);
    let spec = match sim.execute(Command::SymbolSpec {
        symbol: "EURUSD".into(),
    }) {
        Ok(CommandResult::SymbolSpec(s)) => s,
        other => panic!("{other:?}"),
    };
    assert_eq!(spec.filling_modes, vec![FillingMode::Fok, FillingMode::Ioc]);
    assert_eq!(spec.expiration_modes.len(), 4);
    // RETURN is not allowed in the simulator's market execution.
    rejected(
        place(
            &sim,
            OrderRequest {
                filling: Some(FillingMode::Return),
                ..OrderRequest::new("EURUSD", OrderType::Buy, 0.1)
            },
        ),
        "invalid_fill",
    );
    rejected(
        place(
            &sim,
            OrderRequest {
                filling: Some(FillingMode::Ioc),
                ..OrderRequest::new("US500", OrderType::Buy, 1.0)
            },
        ),
        "invalid_fill",
    );
    // The book: offers above bids, prices falling, volumes on the step.
    trade(place(&sim, OrderRequest::new("EURUSD", OrderType::Buy, 0.1)));
    assert!(
        sim.execute(Command::MarketBookGet {
            symbol: "EURUSD".into()
        })
        .is_err(),
        "not subscribed"
    );
    assert!(matches!(
        sim.execute(Command::MarketBookAdd {
            symbol: "eurusd".into()
        }),
        Ok(CommandResult::MarketBookSubscription { subscribed: true, .. })
    ));
    let (levels, time) = match sim.execute(Command::MarketBookGet {
        symbol: "EURUSD".into(),
    }) {
        Ok(CommandResult::MarketBook { levels, time, .. }) => (levels, time),
        other => panic!("{other:?}"),
    };
    let t = sim.tick("EURUSD").unwrap();
    assert_eq!(time, t.time);
    assert_eq!(levels.len(), 10);
    assert!(levels.windows(2).all(|w| w[0].price > w[1].price), "{levels:?}");
    assert_eq!((levels[4].side, levels[4].price), (BookSide::Sell, t.ask));
    assert_eq!((levels[5].side, levels[5].price), (BookSide::Buy, t.bid));
    let offered: f64 = levels
        .iter()
        .filter(|l| l.side == BookSide::Sell)
        .map(|l| l.volume)
        .sum();
    let offered = (offered * 100.0).round() / 100.0;
    assert!(offered > 1.0 && offered < 100.0, "{offered}");
    // Larger than the offers: FOK (the default, the first the symbol allows) is refused, IOC fills in part.
    let big = ((offered + 5.0) * 100.0).round() / 100.0;
    rejected(
        place(&sim, OrderRequest::new("EURUSD", OrderType::Buy, big)),
        "rejected",
    );
    let ioc = trade(place(
        &sim,
        OrderRequest {
            filling: Some(FillingMode::Ioc),
            ..OrderRequest::new("EURUSD", OrderType::Buy, big)
        },
    ));
    assert_eq!((ioc.retcode.as_str(), ioc.volume), ("done_partial", offered));
    assert!(matches!(
        sim.execute(Command::MarketBookRelease {
            symbol: "EURUSD".into()
        }),
        Ok(CommandResult::MarketBookSubscription { subscribed: false, .. })
    ));
    assert!(
        sim.execute(Command::MarketBookGet {
            symbol: "EURUSD".into()
        })
        .is_err()
    );
    // MT4 has no depth of market.
    let (mt4, _c) = sim_with("2026-11-18T12:00:00Z", |s| s.platform = Platform::MT4);
    let e = mt4
        .execute(Command::MarketBookAdd {
            symbol: "EURUSD".into(),
        })
        .unwrap_err();
    assert_eq!(e.code, codes::NOT_SUPPORTED);
}

#[test]
fn close_by_closes_opposite_positions_at_the_by_position_price() {
    let (sim, clock) = sim_at("2026-11-18T12:00:00Z");
    let long = trade(place(&sim, OrderRequest::new("EURUSD", OrderType::Buy, 0.3)));
    clock.advance_ms(HOUR);
    let short = trade(place(&sim, OrderRequest::new("EURUSD", OrderType::Sell, 0.1)));
    let gbp = trade(place(&sim, OrderRequest::new("GBPUSD", OrderType::Sell, 0.1)));
    let balance = sim.account_info().balance;
    rejected(
        sim.execute(Command::CloseBy {
            ticket: long.position,
            ticket_by: gbp.position,
            idempotency_key: None,
        }),
        "invalid_request",
    );
    rejected(
        sim.execute(Command::CloseBy {
            ticket: long.position,
            ticket_by: long.position,
            idempotency_key: None,
        }),
        "invalid_request",
    );
    let t = trade(sim.execute(Command::CloseBy {
        ticket: long.position,
        ticket_by: short.position,
        idempotency_key: Some("cb-1".into()),
    }));
    assert_eq!((t.retcode.as_str(), t.position, t.volume), ("done", long.position, 0.1));
    assert_eq!(t.price, short.price);
    let positions = sim.positions();
    let left: Vec<(u64, f64)> = positions.iter().map(|p| (p.ticket, p.volume)).collect();
    assert_eq!(left, vec![(long.position, 0.2), (gbp.position, 0.1)]);
    // The pair's profit is the difference of the opening prices (no spread paid).
    let expected = ((short.price - long.price) * 0.1 * 100_000.0 * 100.0).round() / 100.0;
    let got = ((sim.account_info().balance - balance) * 100.0).round() / 100.0;
    assert!((got - expected).abs() <= 0.011, "{got} vs {expected}");
    // Recorded as MetaTrader 5 does: one order of type close-by, filled, for
    // the volume closed at the price of the position closed by...
    let orders: Vec<HistoryOrder> = sim
        .history_orders()
        .into_iter()
        .filter(|o| o.ticket == t.order)
        .collect();
    assert_eq!(orders.len(), 1, "{orders:?}");
    let o = &orders[0];
    assert_eq!(
        (o.order_type, o.state, o.volume, o.price, o.position),
        (OrderType::CloseBy, OrderState::Filled, 0.1, short.price, long.position)
    );
    assert!(o.comment.contains(&format!("#{}", long.position)) && o.comment.contains(&format!("#{}", short.position)));
    // ...and two deals of entry `out_by` of that order, one for each
    // position, each closing its side; the pair's whole profit on the first.
    let deals: Vec<Deal> = sim.deals().into_iter().filter(|d| d.order == t.order).collect();
    let shape: Vec<(u64, Side, DealEntry, f64, f64)> = deals
        .iter()
        .map(|d| (d.position, d.side, d.entry, d.volume, d.price))
        .collect();
    assert_eq!(
        shape,
        vec![
            (long.position, Side::Sell, DealEntry::OutBy, 0.1, short.price),
            (short.position, Side::Buy, DealEntry::OutBy, 0.1, short.price),
        ]
    );
    assert_eq!(t.deal, deals[0].ticket);
    assert!((deals[0].profit - expected).abs() <= 0.011, "{deals:?}");
    assert_eq!(deals[1].profit, 0.0, "closed at its own opening price");
    // No other order or deal was made for it (no market close of either side).
    assert!(sim.deals().iter().all(|d| d.entry != DealEntry::Out));
    let kinds: Vec<OrderType> = sim.history_orders().iter().map(|o| o.order_type).collect();
    assert_eq!(
        kinds,
        [OrderType::Buy, OrderType::Sell, OrderType::Sell, OrderType::CloseBy]
    );
    // The idempotency key returns the first outcome, and records nothing more.
    let (n_orders, n_deals) = (sim.history_orders().len(), sim.deals().len());
    let again = trade(sim.execute(Command::CloseBy {
        ticket: long.position,
        ticket_by: short.position,
        idempotency_key: Some("cb-1".into()),
    }));
    assert_eq!(again, t);
    assert_eq!((sim.history_orders().len(), sim.deals().len()), (n_orders, n_deals));
}

#[test]
fn a_close_by_order_cannot_be_placed() {
    let (sim, _clock) = sim_at("2026-11-18T12:00:00Z");
    let e = rejected(
        place(&sim, OrderRequest::new("EURUSD", OrderType::CloseBy, 0.1)),
        "invalid_request",
    );
    assert!(e.message.contains("close_by"), "{e:?}");
    assert!(sim.positions().is_empty() && sim.pending_orders().is_empty());
}

#[test]
fn netting_accounts_hold_one_position_per_symbol_and_refuse_close_by() {
    let (sim, _clock) = sim_with("2026-11-18T12:00:00Z", |s| s.hedging = false);
    let a = trade(place(&sim, OrderRequest::new("EURUSD", OrderType::Buy, 0.3)));
    let b = trade(place(&sim, OrderRequest::new("EURUSD", OrderType::Buy, 0.1)));
    assert_eq!(b.position, a.position, "added to the position");
    let p = &sim.positions()[0];
    assert_eq!((p.ticket, p.side, p.volume), (a.position, Side::Buy, 0.4));
    let c = trade(place(&sim, OrderRequest::new("EURUSD", OrderType::Sell, 0.1)));
    assert_eq!(c.position, a.position);
    assert_eq!(sim.positions()[0].volume, 0.3);
    rejected(
        sim.execute(Command::CloseBy {
            ticket: a.position,
            ticket_by: c.position,
            idempotency_key: None,
        }),
        "invalid_request",
    );
    // Selling more than the position reverses it.
    trade(place(&sim, OrderRequest::new("EURUSD", OrderType::Sell, 0.5)));
    let p = &sim.positions()[0];
    assert_eq!((p.side, p.volume), (Side::Sell, 0.2));
    assert_eq!(sim.positions().len(), 1);
}
