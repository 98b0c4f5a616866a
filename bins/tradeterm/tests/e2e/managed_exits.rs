//! Exits the server manages, end to end over the single-node stack with the
//! simulated terminal on a `ManualClock` the test moves minute by minute
//! (the market's quotes are known beforehand from a shadow simulator of the
//! same seed):
//!
//! - a trailing stop's stop loss is at every minute exactly where an
//!   independent computation over the same quotes puts it, including while
//!   the terminal's agent is away (paused: nothing moves) and after it came
//!   back (one catch-up modification on the current price);
//! - a breakeven moves the stop once and ends;
//! - an OCO pair leaves exactly one order filled and the other cancelled,
//!   with the fill happening while the agent is away;
//! - a bracket with two levels closes the first part at its level, moves
//!   the stop to the entry, and the second part closes at its take profit;
//! - a breakeven and a bracket whose levels are first reached while the
//!   agent is away: paused, nothing sent, the terminal untouched; once it is
//!   back each acts once on the current quote (the breakeven one stop move,
//!   the bracket one partial close and then one stop move), as the rule
//!   logs, the deal history and the audit log's sent calls all show;
//! - a dry-run rule sends nothing and reports what it would have done;
//! - bad input is refused and stores nothing.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tradeterm_core::Tick;
use tradeterm_sim::ManualClock;
use tradeterm_tools::managed::engine::ManagedSettings;

use crate::harness::data::{ms, num};
use crate::harness::{Api, Expect, Options, TestStack, WEDNESDAY_NOON, spawn, wait_until};

const MIN: i64 = 60_000;
const POINT: f64 = 0.00001;

fn fast() -> ManagedSettings {
    ManagedSettings {
        claim_interval: Duration::from_millis(200),
        lease: Duration::from_secs(2),
        poll_interval: Duration::from_millis(200),
        book_max_age: Duration::from_millis(300),
        max_actions_per_second: 1000.0,
        timeout: Duration::from_secs(5),
    }
}

async fn start(clock: Arc<ManualClock>) -> TestStack {
    spawn(Options {
        sims: 1,
        allow_trading: true,
        sim_clock: Some(clock),
        managed: fast(),
        ..Options::default()
    })
    .await
}

fn api(t: &TestStack) -> Api {
    t.api().on(t.terminal(0))
}

async fn tool(t: &TestStack, name: &str, input: Value) -> Value {
    api(t).tool(name, &input).await.data_for(format!("{name} {input}"))
}

/// The EURUSD quotes at noon + k minutes (prices are a pure function of
/// seed, symbol and time).
fn shadow_ticks(steps: i64) -> Vec<Tick> {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let mut settings = tradeterm_sim::SimSettings::demo(0);
    settings.allow_trading = true;
    let sim = tradeterm_sim::Simulator::new(settings, clock.clone());
    (0..=steps)
        .map(|k| {
            clock.set(WEDNESDAY_NOON + k * MIN);
            sim.tick("EURUSD").unwrap()
        })
        .collect()
}

async fn wait_quote_at(t: &TestStack, time: i64) {
    let app = api(t);
    wait_until(format!("the quote of {time}"), Duration::from_secs(10), || async {
        // While the agent reconnects the terminal is unreachable: not yet.
        let tick = app.tick("EURUSD").await.ok()?;
        (ms(&tick["time"]) >= time).then_some(())
    })
    .await;
}

async fn position(t: &TestStack, ticket: u64) -> Option<Value> {
    tool(t, "get_positions", json!({})).await["positions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["ticket"].as_u64() == Some(ticket))
        .cloned()
}

async fn managed(t: &TestStack, id: &str) -> Value {
    tool(t, "list_managed_orders", json!({ "include_ended": true })).await["managed_orders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("managed order {id} not listed"))
}

/// Waits for a rule's status (a liveness deadline, generous for a loaded test run).
async fn wait_status(t: &TestStack, id: &str, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let m = managed(t, id).await;
        if m["status"] == status {
            return m;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{id} is not {status} after 30 s: {m:#}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn buy(t: &TestStack, volume: f64) -> (u64, f64) {
    let placed = tool(
        t,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": volume, "dry_run": false }),
    )
    .await;
    let ticket = placed["trade"]["position"]
        .as_u64()
        .filter(|p| *p != 0)
        .or(placed["trade"]["order"].as_u64())
        .unwrap();
    (ticket, num(&placed["trade"]["price"]))
}

/// The independent computation: the stop a trailing stop of this distance
/// and step holds after each minute's quote (nothing moves while away).
fn trail(ticks: &[Tick], distance_points: f64, step_points: f64, stops: f64, away: (i64, i64)) -> Vec<Option<f64>> {
    let mut expected = Vec::new();
    let mut sl: Option<f64> = None;
    for (k, tick) in ticks.iter().enumerate() {
        let k = k as i64;
        if k > away.0 && k < away.1 {
            expected.push(sl);
            continue;
        }
        let c = r5(floor_tick(tick.bid - distance_points * POINT));
        let better = sl.is_none_or(|s| c >= s + step_points * POINT - POINT * 1e-3);
        if better && c <= tick.bid - stops + POINT * 1e-3 {
            sl = Some(c);
        }
        expected.push(sl);
    }
    expected
}

/// The history range of the simulated market's day.
fn range() -> Value {
    use tradeterm_core::time::to_iso;
    json!({ "from": to_iso(WEDNESDAY_NOON - 86_400_000), "to": to_iso(WEDNESDAY_NOON + 86_400_000) })
}

fn floor_tick(p: f64) -> f64 {
    ((p / POINT) + 1e-7).floor() * POINT
}

fn r5(p: f64) -> f64 {
    (p * 1e5).round() / 1e5
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_trailing_stop_follows_an_independent_computation_and_pauses_while_the_terminal_is_away() {
    const STEPS: i64 = 30;
    const AWAY: (i64, i64) = (12, 16); // disconnected at 12, back at 16
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let mut t = start(clock.clone()).await;
    let ticks = shadow_ticks(STEPS);
    wait_quote_at(&t, ticks[0].time).await;
    let spec = tool(&t, "get_symbol_spec", json!({ "symbol": "EURUSD" })).await;
    let stops = num(&spec["stops_level"]) * POINT;
    let (ticket, _) = buy(&t, 0.1).await;

    // Distance and step from the path's own scale: the smallest distance
    // that moves the stop a few times and is never hit on this path.
    let moves: Vec<f64> = ticks.windows(2).map(|w| (w[1].bid - w[0].bid).abs()).collect();
    let typical = moves.iter().sum::<f64>() / moves.len() as f64;
    let step_points = (typical / POINT).round().max(1.0);
    let mut chosen = None;
    for m in 2..40 {
        let d = ((typical * f64::from(m) / POINT).round()).max(num(&spec["stops_level"]) + 5.0);
        let path = trail(&ticks, d, step_points, stops, AWAY);
        let hit = ticks
            .iter()
            .zip(&path)
            .skip(1)
            .zip(&path)
            .any(|((tick, _), before)| before.is_some_and(|sl| tick.bid <= sl));
        let changes = path.windows(2).filter(|w| w[0] != w[1]).count() + usize::from(path[0].is_some());
        if !hit && changes >= 3 {
            chosen = Some((d, path));
            break;
        }
    }
    let (distance_points, expected) = chosen.expect("a distance that trails a few times without being hit");

    // Invalid input first: nothing is stored.
    for (bad, needle) in [
        (
            json!({ "ticket": ticket, "distance": { "unit": "points", "value": 0 } }),
            "distance",
        ),
        (
            json!({ "ticket": ticket, "distance": { "unit": "points", "value": 1 } }),
            "stops level",
        ),
        (
            json!({ "ticket": 999_999_999u64, "distance": { "unit": "points", "value": 100 } }),
            "999999999",
        ),
        (
            json!({ "ticket": ticket, "distance": { "unit": "atr", "multiple": 2, "period": 1 } }),
            "period",
        ),
    ] {
        let failure = api(&t).tool("set_trailing_stop", &bad).await.expect_err("refused");
        failure.mentions(needle);
    }
    // A distance the schema allows but the symbol's stops level does not is
    // the trade server's refusal (422 `invalid_stops`), not a malformed input.
    let inside = api(&t)
        .tool(
            "set_trailing_stop",
            &json!({ "ticket": ticket, "distance": { "unit": "points", "value": 1 } }),
        )
        .await
        .failure(422, "ORDER_REJECTED");
    assert_eq!(inside.retcode(), Some("invalid_stops"));
    assert!(
        tool(&t, "list_managed_orders", json!({})).await["managed_orders"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let rule = tool(
        &t,
        "set_trailing_stop",
        json!({ "ticket": ticket, "distance": { "unit": "points", "value": distance_points }, "step_points": step_points, "dry_run": false, "label": "e2e" }),
    )
    .await;
    let id = rule["managed"]["id"].as_str().unwrap().to_owned();
    assert_eq!(rule["managed"]["status"], "active");
    assert_eq!(rule["managed"]["dry_run"], false);

    let mut done = 0;
    for k in 0..=STEPS {
        let i = k as usize;
        if k == AWAY.0 + 1 {
            t.stack.disconnect_sim(0).await;
        }
        clock.set(WEDNESDAY_NOON + k * MIN);
        if k > AWAY.0 && k < AWAY.1 {
            let m = wait_status(&t, &id, "paused").await;
            assert_eq!(m["steps"].as_u64().unwrap() as usize, done, "nothing moves while away");
            continue;
        }
        if k == AWAY.1 {
            t.stack.reconnect_sim(0);
            wait_status(&t, &id, "active").await;
        }
        wait_quote_at(&t, ticks[i].time).await;
        if expected[i] != if i == 0 { None } else { expected[i - 1] } {
            done += 1;
        }
        let want = expected[i];
        wait_until(
            format!("minute {k}: stop at {want:?}"),
            Duration::from_secs(10),
            || async {
                let p = position(&t, ticket).await.unwrap();
                let m = managed(&t, &id).await;
                let at = p["stop_loss"].as_f64().map(r5);
                (at == want && m["steps"].as_u64() == Some(done as u64)).then_some(())
            },
        )
        .await;
    }
    // Every modification in the rule's log, in order, at the computed levels.
    let m = managed(&t, &id).await;
    let levels: Vec<f64> = m["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["outcome"], "done", "{e}");
            r5(num(&e["action"]["stop_loss"]))
        })
        .collect();
    let mut want: Vec<f64> = expected.iter().flatten().copied().collect();
    want.dedup();
    assert_eq!(levels, want);

    // The position closed by hand: the rule ends itself and says why.
    tool(&t, "close_position", json!({ "ticket": ticket, "dry_run": false })).await;
    let ended = wait_status(&t, &id, "ended").await;
    assert_eq!(ended["ended_reason"], "position_closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn breakeven_moves_once_oco_leaves_one_order_and_a_bracket_closes_its_parts() {
    const STEPS: i64 = 40;
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let mut t = start(clock.clone()).await;
    let ticks = shadow_ticks(STEPS);
    wait_quote_at(&t, ticks[0].time).await;
    let bids: Vec<f64> = ticks.iter().map(|t| t.bid).collect();
    let bottom = bids.iter().copied().fold(f64::MAX, f64::min);
    let first = |from: usize, f: &dyn Fn(&Tick) -> bool| {
        ticks.iter().enumerate().skip(from).find(|(_, x)| f(x)).map(|(i, _)| i)
    };
    let early_top = bids[1..=15].iter().copied().fold(f64::MIN, f64::max);

    // Breakeven: triggered halfway to the high of the first quarter hour.
    let (be_ticket, open) = buy(&t, 0.1).await;
    let trigger_points = (((early_top - open) / 2.0) / POINT).floor();
    assert!(trigger_points >= 20.0, "the path must rise early: {bids:?}");
    let be = tool(
        &t,
        "set_breakeven",
        json!({ "ticket": be_ticket, "trigger_points": trigger_points, "offset_points": 2, "dry_run": false }),
    )
    .await;
    let be_id = be["managed"]["id"].as_str().unwrap().to_owned();
    let sb =
        first(1, &|x: &Tick| x.bid >= open + trigger_points * POINT - POINT * 1e-3).expect("the trigger is reached");
    assert!(sb <= 15);

    // OCO: a stop order at the first new extreme after minute 22 (it fills
    // then, while the agent is away) and an opposite one the path never
    // reaches.
    let asks: Vec<f64> = ticks.iter().map(|t| t.ask).collect();
    let high = |k: usize| asks[..k].iter().copied().fold(f64::MIN, f64::max);
    let low = |k: usize| bids[..k].iter().copied().fold(f64::MAX, f64::min);
    let trigger = (22..asks.len())
        .find(|&k| {
            // A level beyond the stops level of the first quote.
            (asks[k] > high(k) + 2.0 * POINT && (high(k) + asks[k]) / 2.0 > asks[0] + 15.0 * POINT)
                || (bids[k] < low(k) - 2.0 * POINT && (low(k) + bids[k]) / 2.0 < bids[0] - 15.0 * POINT)
        })
        .expect("a new high or low after minute 22");
    let trigger_step = trigger as i64;
    let (first_leg, second_leg) = if asks[trigger] > high(trigger) + 2.0 * POINT
        && (high(trigger) + asks[trigger]) / 2.0 > asks[0] + 15.0 * POINT
    {
        let up = r5((high(trigger) + asks[trigger]) / 2.0);
        (
            json!({ "symbol": "EURUSD", "order_type": "BUY_STOP", "volume": 0.1, "price": up }),
            json!({ "symbol": "EURUSD", "order_type": "SELL_STOP", "volume": 0.1, "price": r5(bottom - 0.0050) }),
        )
    } else {
        let down = r5((low(trigger) + bids[trigger]) / 2.0);
        let top = asks.iter().copied().fold(f64::MIN, f64::max);
        (
            json!({ "symbol": "EURUSD", "order_type": "SELL_STOP", "volume": 0.1, "price": down }),
            json!({ "symbol": "EURUSD", "order_type": "BUY_STOP", "volume": 0.1, "price": r5(top + 0.0050) }),
        )
    };
    let oco = tool(
        &t,
        "place_oco",
        json!({ "first": first_leg, "second": second_leg, "dry_run": false }),
    )
    .await;
    let oco_id = oco["managed"]["id"].as_str().unwrap().to_owned();
    let oco_tickets: Vec<u64> = oco["managed"]["spec"]["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();

    // Bracket: the first level is reached in the first quarter hour; the
    // second (the take profit) further up; the stop then at the entry.
    let l1 = r5(ticks[0].bid + (early_top - ticks[0].bid) * 0.6);
    let top = bids.iter().copied().fold(f64::MIN, f64::max);
    let l2 = r5(l1 + (top - l1).max(0.0010) * 0.7);
    let sl = r5(bottom - 0.0030);
    let bracket = tool(
        &t,
        "place_bracket",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.2, "stop_loss": sl,
                "targets": [{ "price": l1 }, { "price": l2 }], "dry_run": false }),
    )
    .await;
    let br_id = bracket["managed"]["id"].as_str().unwrap().to_owned();
    let br_ticket = bracket["managed"]["spec"]["entry"].as_u64().unwrap();
    let br_open = num(&bracket["placed"][0]["trade"]["price"]);
    let pos = position(&t, br_ticket).await.unwrap();
    assert_eq!(
        r5(num(&pos["take_profit"])),
        l2,
        "the last level is the position's own take profit"
    );
    // Where the second part ends, independently: after the first level, the
    // first quote at the take profit or at the stop (moved to the entry).
    let s1 = first(1, &|x: &Tick| x.bid >= l1).expect("the first level is reached");
    assert!(s1 <= 15);
    let be_stop = r5(floor_tick(br_open));
    let exit = first(s1 + 1, &|x: &Tick| x.bid >= l2 || x.bid <= be_stop);
    let exit_at_tp = exit.map(|i| bids[i] >= l2);

    // A dry-run rule: simulated over a paper copy, never sent.
    let dry = tool(
        &t,
        "set_trailing_stop",
        json!({ "ticket": be_ticket, "distance": { "unit": "points", "value": 1000 } }),
    )
    .await;
    let dry_id = dry["managed"]["id"].as_str().unwrap().to_owned();
    assert_eq!(dry["managed"]["dry_run"], true);

    // Away for the minutes around the OCO trigger.
    let away = (trigger_step - 1).max(1)..=(trigger_step + 1);
    for k in 1..=STEPS {
        if k == *away.start() {
            t.stack.disconnect_sim(0).await;
        }
        clock.set(WEDNESDAY_NOON + k * MIN);
        if away.contains(&k) {
            continue;
        }
        if k == away.end() + 1 {
            t.stack.reconnect_sim(0);
        }
        wait_quote_at(&t, ticks[k as usize].time).await;
        // The minute a rule must act in, it acts before the next one: the
        // engine decides on this quote, not on a later one.
        if k as usize == sb {
            wait_status(&t, &be_id, "ended").await;
        }
        if k as usize == s1 {
            // Two actions in a row (close, then stop): under a loaded test
            // run each is a dispatch round trip or more.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let m = managed(&t, &br_id).await;
                if m["log"].as_array().map_or(0, Vec::len) >= 2 {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "minute {k}: the bracket's first level: {m:#}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        wait_until(format!("minute {k} evaluated"), Duration::from_secs(30), || async {
            let m = managed(&t, &br_id).await;
            (m["status"] != "paused").then_some(())
        })
        .await;
    }

    // Breakeven: moved once, to the entry + 2 points, then ended (the
    // position may since have been stopped there).
    let m = wait_status(&t, &be_id, "ended").await;
    assert_eq!(
        (m["steps"].as_u64(), m["ended_reason"].as_str()),
        (Some(1), Some("completed")),
        "{m:#}"
    );
    let moved = r5(floor_tick(open + 2.0 * POINT));
    assert_eq!(r5(num(&m["log"][0]["action"]["stop_loss"])), moved);
    if let Some(p) = position(&t, be_ticket).await {
        assert_eq!(r5(num(&p["stop_loss"])), moved);
    }

    // OCO: the first order filled (now a position), the second cancelled.
    let m = wait_status(&t, &oco_id, "ended").await;
    assert_eq!(m["ended_reason"], "completed");
    assert!(position(&t, oco_tickets[0]).await.is_some(), "the first order filled");
    let orders = tool(&t, "get_orders", json!({})).await;
    assert!(
        !orders["orders"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["ticket"].as_u64() == Some(oco_tickets[1])),
        "the second order is cancelled"
    );
    let history = tool(&t, "get_order_history", range()).await;
    let cancelled = history["orders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["ticket"].as_u64() == Some(oco_tickets[1]))
        .expect("the second order is in the history");
    assert_eq!(cancelled["state"], "canceled", "{cancelled}");

    // Bracket: the first part closed at its level, the stop moved to the
    // entry, the second part closed where the independent walk says.
    let m = wait_status(&t, &br_id, if exit.is_some() { "ended" } else { "active" }).await;
    assert_eq!(m["targets_done"], 1, "{m:#}");
    let log: Vec<&Value> = m["log"].as_array().unwrap().iter().collect();
    assert_eq!(log.len(), 2, "{m:#}");
    assert_eq!(log[0]["action"]["action"], "close_partial");
    assert_eq!(num(&log[0]["action"]["volume"]), 0.1);
    assert_eq!(log[1]["action"]["action"], "set_stop");
    assert_eq!(r5(num(&log[1]["action"]["stop_loss"])), be_stop);
    let deals = tool(&t, "get_deal_history", range()).await;
    let outs: Vec<&Value> = deals["deals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["position"].as_u64() == Some(br_ticket) && d["entry"] == "out")
        .collect();
    assert!(num(&outs[0]["price"]) >= l1 - 1e-9, "{outs:?}");
    match exit_at_tp {
        Some(at_tp) => {
            assert_eq!(m["ended_reason"], "position_closed");
            assert_eq!(outs.len(), 2, "{outs:?}");
            if at_tp {
                assert!(num(&outs[1]["price"]) >= l2 - 1e-9, "{outs:?}");
            } else {
                assert!(num(&outs[1]["price"]) <= be_stop + 1e-9, "{outs:?}");
            }
        }
        None => assert_eq!(outs.len(), 1, "{outs:?}"),
    }

    // The dry-run rule sent nothing: its log says "would", the real stop is the breakeven's.
    let m = managed(&t, &dry_id).await;
    assert!(m["log"].as_array().unwrap().iter().all(|e| e["outcome"] == "would_do"));
    assert!(m["paper"].is_object());

    // Removal: once; then it is no longer there to remove; listed as ended.
    let removed = tool(&t, "remove_managed_order", json!({ "id": dry_id })).await;
    assert_eq!(
        (removed["status"].as_str(), removed["ended_reason"].as_str()),
        (Some("ended"), Some("removed"))
    );
    api(&t)
        .tool("remove_managed_order", &json!({ "id": dry_id }))
        .await
        .failure(404, "NOT_FOUND");
    api(&t)
        .tool("remove_managed_order", &json!({ "id": "mxo_nope" }))
        .await
        .failure(404, "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_engine_takes_a_rule_over_when_its_owner_dies_and_never_repeats_a_step() {
    const STEPS: i64 = 20;
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let mut t = start(clock.clone()).await;
    let ticks = shadow_ticks(STEPS);
    wait_quote_at(&t, ticks[0].time).await;
    let (ticket, _) = buy(&t, 0.1).await;
    // A distance never hit on this path that still moves the stop.
    let spec = tool(&t, "get_symbol_spec", json!({ "symbol": "EURUSD" })).await;
    let stops = num(&spec["stops_level"]) * POINT;
    let distance = (2..60)
        .map(|m| f64::from(m) * 5.0)
        .find(|&d| {
            let path = trail(&ticks, d, 0.0, stops, (-1, -1));
            let hit = ticks
                .iter()
                .skip(1)
                .zip(&path)
                .any(|(tick, before)| before.is_some_and(|sl| tick.bid <= sl));
            !hit && path.windows(2).filter(|w| w[0] != w[1]).count() >= 2 && d * POINT >= stops
        })
        .expect("a distance");
    let rule = tool(
        &t,
        "set_trailing_stop",
        json!({ "ticket": ticket, "distance": { "unit": "points", "value": distance }, "dry_run": false }),
    )
    .await;
    let id = rule["managed"]["id"].as_str().unwrap().to_owned();
    let first = t.stack.take_managed_engine().unwrap();
    let owner_a = first.owner.clone();
    wait_until("the node's engine claims the rule", Duration::from_secs(10), || async {
        let r = t
            .stack
            .store
            .managed_order(&t.creds.license_id, &id)
            .await
            .unwrap()
            .unwrap();
        (r.owner.as_deref() == Some(owner_a.as_str())).then_some(())
    })
    .await;
    // A second engine (another instance: polling only), then the first dies
    // without giving its claims up.
    let second = tradeterm_tools::managed::engine::spawn(t.stack.services().clone(), fast(), None);
    let owner_b = second.owner.clone();
    first.abort();
    let died = tokio::time::Instant::now();
    let mut taken_after = None;
    for k in 1..=STEPS {
        clock.set(WEDNESDAY_NOON + k * MIN);
        wait_quote_at(&t, ticks[k as usize].time).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let r = t
            .stack
            .store
            .managed_order(&t.creds.license_id, &id)
            .await
            .unwrap()
            .unwrap();
        if taken_after.is_none() && r.owner.as_deref() == Some(owner_b.as_str()) {
            taken_after = Some(died.elapsed());
        }
    }
    let taken_after = taken_after.expect("the second engine took the rule");
    assert!(
        taken_after < Duration::from_secs(10),
        "taken over after {taken_after:?}"
    );
    // Every step once, in order; every level tighter than the one before.
    let m = managed(&t, &id).await;
    let log = m["log"].as_array().unwrap();
    assert!(!log.is_empty(), "the rule acted");
    let steps: Vec<u64> = log.iter().map(|e| e["step"].as_u64().unwrap()).collect();
    assert!(steps.windows(2).all(|w| w[1] == w[0] + 1), "{steps:?}");
    let levels: Vec<f64> = log.iter().map(|e| num(&e["action"]["stop_loss"])).collect();
    assert!(levels.windows(2).all(|w| w[1] > w[0]), "{levels:?}");
    let p = position(&t, ticket).await.unwrap();
    assert_eq!(r5(num(&p["stop_loss"])), r5(*levels.last().unwrap()));
    second.stop().await;
}

/// The managed engine's calls for rule `id` in the audit log (oldest first):
/// what was sent to the terminal for it, each with its idempotency key.
async fn audited(t: &TestStack, id: &str) -> Vec<Value> {
    let page = t.master().get("/api/v1/audit?limit=1000").await.data_for("audit");
    let mut rows: Vec<Value> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["surface"] == "managed" && r["credential_label"].as_str().is_some_and(|l| l.contains(id)))
        .cloned()
        .collect();
    rows.reverse();
    rows
}

/// Where both rules first meet their level while the agent is away: the
/// last connected minute `a`, the reconnection minute `b` (at least two
/// minutes away in between), and the level, strictly above every bid the
/// engine saw before (minutes 0..=a) and at most every bid of the minute it
/// is first reached in and of minute `b` (with 3 points of margin each
/// side), with room at `b` for a stop at the entry beyond the stops level.
fn away_window(bids: &[f64], open: f64, stops: f64) -> Option<(usize, usize, f64)> {
    for a in 1..bids.len() {
        for b in (a + 3)..(a + 7).min(bids.len()) {
            let before = bids[..=a].iter().copied().fold(f64::MIN, f64::max);
            let inside = bids[a + 1..b].iter().copied().fold(f64::MIN, f64::max);
            let hi = inside.min(bids[b]);
            let gap = ((hi - before) / POINT + 1e-7).floor();
            if gap < 6.0 {
                continue;
            }
            let level = r5(before + (gap / 2.0).floor() * POINT);
            let trigger = (level - open) / POINT;
            if trigger >= 5.0 && bids[b] - stops >= open + 5.0 * POINT {
                return Some((a, b, level));
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_breakeven_and_a_bracket_reached_while_the_terminal_is_away_act_once_when_it_is_back() {
    const SEARCH: i64 = 40;
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let mut t = start(clock.clone()).await;
    let ticks = shadow_ticks(SEARCH);
    wait_quote_at(&t, ticks[0].time).await;
    let bids: Vec<f64> = ticks.iter().map(|x| x.bid).collect();
    let spec = tool(&t, "get_symbol_spec", json!({ "symbol": "EURUSD" })).await;
    let stops = num(&spec["stops_level"]) * POINT;

    // Both positions open at minute 0's ask.
    let (be_ticket, open) = buy(&t, 0.1).await;
    assert_eq!(r5(open), r5(ticks[0].ask), "a market buy fills at the ask");
    let (a, b, level) = away_window(&bids, open, stops).expect("a new high while away in the first 40 minutes");
    let last = b + 2;

    // Breakeven: triggered at the level (a whole number of points from the entry).
    let trigger_points = ((level - open) / POINT).round();
    let be = tool(
        &t,
        "set_breakeven",
        json!({ "ticket": be_ticket, "trigger_points": trigger_points, "offset_points": 2, "dry_run": false }),
    )
    .await;
    let be_id = be["managed"]["id"].as_str().unwrap().to_owned();
    // Bracket: its first level at the same price; its second (the take
    // profit) and its stop where the path never goes.
    let top = bids.iter().copied().fold(f64::MIN, f64::max);
    let bottom = bids.iter().copied().fold(f64::MAX, f64::min);
    let (l1, l2, sl) = (level, r5(top + 0.0050), r5(bottom - 0.0050));
    let bracket = tool(
        &t,
        "place_bracket",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.2, "stop_loss": sl,
                "targets": [{ "price": l1 }, { "price": l2 }], "dry_run": false }),
    )
    .await;
    let br_id = bracket["managed"]["id"].as_str().unwrap().to_owned();
    let br_ticket = bracket["managed"]["spec"]["entry"].as_u64().unwrap();
    let br_open = num(&bracket["placed"][0]["trade"]["price"]);
    assert_eq!(r5(br_open), r5(ticks[0].ask));

    // Independently: the first minute each rule's level is met is one the
    // agent is away in; at the reconnection minute it is still met.
    let be_level = open + trigger_points * POINT;
    let first_be = (1..=last).find(|&k| bids[k] >= be_level - POINT * 1e-3).unwrap();
    let first_l1 = (1..=last).find(|&k| bids[k] >= l1 - POINT * 1e-3).unwrap();
    assert!(
        first_be > a && first_be < b,
        "breakeven first met at {first_be}, away {a}..{b}"
    );
    assert!(
        first_l1 > a && first_l1 < b,
        "bracket level first met at {first_l1}, away {a}..{b}"
    );
    assert!(bids[b] >= be_level && bids[b] >= l1);
    let moved = r5(floor_tick(open + 2.0 * POINT));
    let be_stop = r5(floor_tick(br_open));
    assert!(moved <= bids[b] - stops && be_stop <= bids[b] - stops);

    let sim = t.stack.simulators()[0].clone();
    let untouched = |sim: &tradeterm_sim::Simulator| {
        let positions = sim.positions();
        let be_pos = positions
            .iter()
            .find(|p| p.ticket == be_ticket)
            .expect("breakeven position");
        let br_pos = positions
            .iter()
            .find(|p| p.ticket == br_ticket)
            .expect("bracket position");
        assert_eq!(be_pos.stop_loss, None, "the breakeven's stop is where it was");
        assert_eq!(br_pos.volume, 0.2, "the bracket's position is whole");
        assert_eq!(br_pos.stop_loss.map(r5), Some(sl), "the bracket's stop is where it was");
    };

    let mut reconnected_at = 0;
    for (i, tick) in ticks.iter().enumerate().take(last + 1).skip(1) {
        let k = i as i64;
        if i == a + 1 {
            t.stack.disconnect_sim(0).await;
        }
        clock.set(WEDNESDAY_NOON + k * MIN);
        if i > a && i < b {
            // Away: both rules paused, nothing sent, the terminal untouched.
            for id in [&be_id, &br_id] {
                let m = wait_status(&t, id, "paused").await;
                assert_eq!(m["steps"], 0, "{m:#}");
                assert!(m["log"].as_array().unwrap().is_empty(), "{m:#}");
            }
            untouched(&sim);
            continue;
        }
        if i == b {
            untouched(&sim);
            assert!(audited(&t, &be_id).await.is_empty() && audited(&t, &br_id).await.is_empty());
            reconnected_at = chrono::Utc::now().timestamp_millis();
            t.stack.reconnect_sim(0);
        }
        wait_quote_at(&t, tick.time).await;
        if i < b {
            // Connected before the window: the level is not met, nothing moves.
            let m = managed(&t, &br_id).await;
            assert!(m["log"].as_array().unwrap().is_empty(), "minute {k}: {m:#}");
            continue;
        }
        // Back (and the minutes after): the breakeven has moved once and
        // ended; the bracket has closed its first part and moved its stop.
        wait_status(&t, &be_id, "ended").await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let m = managed(&t, &br_id).await;
            if m["log"].as_array().map_or(0, Vec::len) >= 2 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "minute {k}: the bracket's catch-up: {m:#}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // An observation window (not a wait for readiness): a few more of the
    // engine's poll rounds on the same quote, in which a repeated step would
    // show up in the checks below.
    tokio::time::sleep(fast().poll_interval * 3).await;

    // Breakeven: one move, to the entry + 2 points, on the terminal and in the log.
    let m = managed(&t, &be_id).await;
    assert_eq!(
        (m["status"].as_str(), m["ended_reason"].as_str(), m["steps"].as_u64()),
        (Some("ended"), Some("completed"), Some(1)),
        "{m:#}"
    );
    let log = m["log"].as_array().unwrap();
    assert_eq!(log.len(), 1, "{m:#}");
    assert_eq!(log[0]["outcome"], "done");
    assert_eq!(log[0]["action"]["action"], "set_stop");
    assert_eq!(r5(num(&log[0]["action"]["stop_loss"])), moved);
    let positions = sim.positions();
    let be_pos = positions
        .iter()
        .find(|p| p.ticket == be_ticket)
        .expect("the breakeven's position is open");
    assert_eq!(be_pos.stop_loss.map(r5), Some(moved));

    // Bracket: one partial close of the first part at the reconnection
    // minute's bid, then one stop move to the entry; still active (its
    // take profit is never reached).
    let m = managed(&t, &br_id).await;
    assert_eq!(
        (m["status"].as_str(), m["targets_done"].as_u64()),
        (Some("active"), Some(1)),
        "{m:#}"
    );
    let log = m["log"].as_array().unwrap();
    assert_eq!(log.len(), 2, "{m:#}");
    assert!(log.iter().all(|e| e["outcome"] == "done"), "{m:#}");
    assert_eq!((log[0]["step"].as_u64(), log[1]["step"].as_u64()), (Some(1), Some(2)));
    assert_eq!(log[0]["action"]["action"], "close_partial");
    assert_eq!(num(&log[0]["action"]["volume"]), 0.1);
    assert_eq!(log[1]["action"]["action"], "set_stop");
    assert_eq!(r5(num(&log[1]["action"]["stop_loss"])), be_stop);
    let br_pos = positions
        .iter()
        .find(|p| p.ticket == br_ticket)
        .expect("the bracket's position is open");
    assert!((br_pos.volume - 0.1).abs() < 1e-9, "{br_pos:?}");
    assert_eq!(br_pos.stop_loss.map(r5), Some(be_stop));

    // The deal history: the bracket's position has one entry deal and one
    // exit deal (0.1 lots at the bid of the reconnection minute); the
    // breakeven's position only its entry.
    let deals = tool(&t, "get_deal_history", range()).await;
    let of = |ticket: u64| -> Vec<Value> {
        deals["deals"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["position"].as_u64() == Some(ticket))
            .cloned()
            .collect()
    };
    let br_deals = of(br_ticket);
    let entries: Vec<&str> = br_deals.iter().map(|d| d["entry"].as_str().unwrap()).collect();
    assert_eq!(entries, ["in", "out"], "{br_deals:#?}");
    assert_eq!(num(&br_deals[1]["volume"]), 0.1);
    assert_eq!(
        r5(num(&br_deals[1]["price"])),
        r5(bids[b]),
        "closed on the current quote"
    );
    let be_deals = of(be_ticket);
    assert_eq!(be_deals.len(), 1, "{be_deals:#?}");
    // The same on the terminal's own books.
    let sim_outs = sim.deals().iter().filter(|d| d.position == br_ticket).count();
    assert_eq!(sim_outs, 2);

    // What was sent: each step once, with its own key, after the reconnection.
    let sent = |rows: &[Value]| -> Vec<(String, String)> {
        rows.iter()
            .map(|r| {
                assert_eq!(r["decision"], "sent", "{r:#}");
                assert!(ms(&r["at"]) >= reconnected_at, "sent before the agent was back: {r:#}");
                (
                    r["tool"].as_str().unwrap().to_owned(),
                    r["request"]["idempotency_key"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let s = |tool: &str, id: &str, step: u64| (tool.to_owned(), format!("mx:{id}:{step}"));
    assert_eq!(sent(&audited(&t, &be_id).await), [s("modify_position", &be_id, 1)]);
    assert_eq!(
        sent(&audited(&t, &br_id).await),
        [s("close_position", &br_id, 1), s("modify_position", &br_id, 2)]
    );
}
