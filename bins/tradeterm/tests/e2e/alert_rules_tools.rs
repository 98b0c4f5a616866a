//! Alert rules and execution quality end to end over the single-node stack,
//! with the simulated terminal on a `ManualClock` the test moves minute by
//! minute:
//!
//! - a price crossing, an indicator condition (M1 close crossing a level), a
//!   structure event (fair value gap filled on M1) and an account threshold
//!   each fire exactly once per crossing, evaluated by the server from the
//!   quotes the agent pushes, and `poll_alerts` delivers every firing once
//!   (by id); the expected crossings are counted independently from the
//!   bars and quotes of the simulated market;
//! - `set_alert` refuses bad conditions and changes nothing; `remove_alert`
//!   of another id is `NOT_FOUND`;
//! - `get_execution_quality` measures live fills sent through tradeterm
//!   (latency, slippage against the pushed quote, spread) and counts none as
//!   untracked.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tradeterm_core::Bar;
use tradeterm_core::structure::{FvgConfig, StructureConfig, StructureEvent, detect};
use tradeterm_sim::ManualClock;

use crate::harness::data::{bars_of, ms, num};
use crate::harness::{Api, Expect, Options, TestStack, WEDNESDAY_NOON, spawn, wait_until};

async fn start(clock: Arc<ManualClock>) -> TestStack {
    spawn(Options {
        sims: 1,
        allow_trading: true,
        sim_clock: Some(clock),
        ..Options::default()
    })
    .await
}

fn api(t: &TestStack) -> Api {
    t.api().on(t.terminal(0))
}

/// Waits until the gateway holds the quote the agent pushed at `time`.
async fn wait_quote_at(api: &Api, time: i64) {
    wait_until(format!("the quote of {time}"), Duration::from_secs(10), || async {
        let tick = api.tick("EURUSD").await.data();
        (ms(&tick["time"]) >= time).then_some(())
    })
    .await;
}

/// The EURUSD quotes of the terminal's market at noon + k minutes, from a
/// second simulator with the same seed (prices are a pure function of seed,
/// symbol and time).
fn shadow_ticks(steps: i64) -> Vec<tradeterm_core::Tick> {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let mut settings = tradeterm_sim::SimSettings::demo(0);
    settings.allow_trading = true;
    let sim = tradeterm_sim::Simulator::new(settings, clock.clone());
    (0..=steps)
        .map(|k| {
            clock.set(WEDNESDAY_NOON + k * 60_000);
            sim.tick("EURUSD").unwrap()
        })
        .collect()
}

fn count_side_changes(values: &[f64], level: f64) -> usize {
    let mut side = None;
    let mut changes = 0;
    for v in values {
        let now = if *v > level {
            Some(true)
        } else if *v < level {
            Some(false)
        } else {
            continue;
        };
        if side.is_some() && side != now {
            changes += 1;
        }
        side = now;
    }
    changes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_alert_kind_fires_once_per_crossing_and_poll_alerts_delivers_each_once() {
    const STEPS: i64 = 45;
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let t = start(clock.clone()).await;
    let app = api(&t);
    let ticks = shadow_ticks(STEPS);
    wait_quote_at(&app, ticks[0].time).await;

    // Bad conditions are refused and store nothing.
    for (bad, needle) in [
        (json!({ "kind": "price", "symbol": "EURUSD", "level": -1 }), "level"),
        (json!({ "kind": "price", "symbol": "NOPE", "level": 1.1 }), "NOPE"),
        (
            json!({ "kind": "indicator", "symbol": "EURUSD", "timeframe": "M1", "indicator": "rsi", "output": "bogus", "op": "gt", "value": 70 }),
            "bogus",
        ),
        (json!({ "kind": "drawdown_above", "percent": 120 }), "percent"),
        (json!({ "kind": "moon_phase" }), "moon_phase"),
    ] {
        let failure = app
            .tool("set_alert", &json!({ "condition": bad }))
            .await
            .expect_err("a bad condition is refused");
        assert!(failure.status == 400 || failure.status == 404, "{bad}: {failure}");
        failure.mentions(needle);
    }
    let listed = app.tool("list_alerts", &json!({})).await.data();
    assert!(listed["alerts"].as_array().unwrap().is_empty());
    app.tool("remove_alert", &json!({ "id": "alr_nope" }))
        .await
        .failure(404, "NOT_FOUND");

    // The level: the median of the bids the market will show (computed from
    // the bars of a first pass is not possible before the run, so take the
    // quotes of a shadow run of the same deterministic market).
    let shadow: Vec<f64> = ticks.iter().map(|t| t.bid).collect();
    let mut sorted = shadow.clone();
    sorted.sort_by(f64::total_cmp);
    let level = (sorted[sorted.len() / 2] + sorted[sorted.len() / 2 - 1]) / 2.0;
    let expected_price = count_side_changes(&shadow, level);
    assert!(expected_price >= 2, "the path must cross its median: {shadow:?}");

    let equity = num(&app.account().await.data()["equity"]);
    let conditions = [
        ("price", json!({ "kind": "price", "symbol": "EURUSD", "level": level })),
        (
            "indicator",
            json!({ "kind": "indicator", "symbol": "EURUSD", "timeframe": "M1", "indicator": "price", "op": "cross_above", "value": level }),
        ),
        (
            "structure",
            json!({ "kind": "structure", "symbol": "EURUSD", "timeframe": "M1", "event": "fvg_filled", "swing_length": 2 }),
        ),
        // Equity is already below: an account threshold fires at once, then not again.
        ("equity", json!({ "kind": "equity_below", "level": equity + 1_000.0 })),
    ];
    let mut ids = BTreeMap::new();
    for (name, condition) in &conditions {
        let rule = app
            .tool("set_alert", &json!({ "condition": condition, "label": name }))
            .await
            .data();
        assert!(rule["id"].as_str().unwrap().starts_with("alr_"));
        assert_eq!(rule["condition"]["kind"], condition["kind"]);
        ids.insert(rule["id"].as_str().unwrap().to_owned(), *name);
    }
    // Every rule takes its baseline from what the agent pushes.
    wait_until("every rule armed", Duration::from_secs(15), || async {
        let listed = app.tool("list_alerts", &json!({})).await.data();
        let armed = listed["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["armed"] == true)
            .count();
        (armed == conditions.len()).then_some(())
    })
    .await;
    let cursor = app.tool("poll_alerts", &json!({})).await.data()["next_cursor"].clone();

    // The market moves minute by minute; each quote reaches the server.
    for k in 1..=STEPS {
        clock.set(WEDNESDAY_NOON + k * 60_000);
        wait_quote_at(&app, ticks[k as usize].time).await;
    }

    // Expected firings, from the market itself.
    let bars = bars_of(
        &app.tool(
            "get_bars",
            &json!({ "symbol": "EURUSD", "timeframe": "M1", "count": 300 }),
        )
        .await
        .data(),
    );
    // The server learns that a bar closed from the first quote after it (as
    // an expert advisor's OnTick does): the bars closed by the last quote
    // count, and the baseline is the last bar closed by the first quote.
    let last_quote = ticks[STEPS as usize].time;
    let closed: Vec<Bar> = bars.iter().filter(|b| b.time + 60_000 <= last_quote).cloned().collect();
    let baseline = closed.iter().rposition(|b| b.time + 60_000 <= ticks[0].time).unwrap();
    let expected_indicator = (baseline + 1..closed.len())
        .filter(|&i| closed[i - 1].close <= level && closed[i].close > level)
        .count();
    let config = StructureConfig {
        swing_length: 2,
        fvg: Some(FvgConfig::default()),
        order_blocks: None,
        liquidity: None,
        bos_choch: None,
    };
    let expected_structure = detect(&closed, &config)
        .unwrap()
        .iter()
        .filter(|e| matches!(e, StructureEvent::FvgMitigated(_)) && e.confirmed_at() > baseline)
        .count();
    let expected = BTreeMap::from([
        ("price", expected_price),
        ("indicator", expected_indicator),
        ("structure", expected_structure),
        ("equity", 1),
    ]);
    let total: usize = expected.values().sum();

    // poll_alerts delivers each firing (ids unique); the last bars and quotes
    // may still be in flight: poll until every expected firing arrived.
    let mut delivered: BTreeMap<String, Value> = BTreeMap::new();
    let mut cursor = cursor.as_str().unwrap().to_owned();
    let _ = tokio::time::timeout(Duration::from_secs(20), async {
        while delivered.len() < total {
            let polled = app.tool("poll_alerts", &json!({ "cursor": cursor })).await.data();
            for a in polled["alerts"].as_array().unwrap() {
                if a["kind"] == "alert" {
                    delivered.insert(a["id"].as_str().unwrap().to_owned(), a.clone());
                }
            }
            cursor = polled["next_cursor"].as_str().unwrap().to_owned();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let mut fired: BTreeMap<&str, usize> = expected.keys().map(|k| (*k, 0)).collect();
    for a in delivered.values() {
        let name = ids[a["alert"]["alert_id"].as_str().unwrap()];
        *fired.get_mut(name).unwrap() += 1;
        assert_eq!(a["alert"]["label"], name);
    }
    assert_eq!(fired, expected, "firings per rule (expected from the market)");
    // list_alerts agrees, and nothing fires twice afterwards (the quotes keep
    // coming: the agent refreshes them every 500 ms).
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let listed = app.tool("list_alerts", &json!({})).await.data();
    for rule in listed["alerts"].as_array().unwrap() {
        let name = ids[rule["id"].as_str().unwrap()];
        assert_eq!(
            rule["fired"].as_u64().unwrap() as usize,
            expected[name],
            "{name}: {rule}"
        );
        assert!(rule["error"].is_null(), "{rule}");
    }
    // The price firings alternate sides of the level.
    let price_values: BTreeSet<bool> = delivered
        .values()
        .filter(|a| a["alert"]["condition_kind"] == "price")
        .map(|a| a["alert"]["value"].as_f64().unwrap() > level)
        .collect();
    assert_eq!(price_values.len(), 2, "crossings both ways");

    // Removal stops the rule; its firings stay delivered.
    let price_id = ids.iter().find(|(_, n)| **n == "price").unwrap().0.clone();
    let removed = app.tool("remove_alert", &json!({ "id": price_id })).await.data();
    assert_eq!(removed["removed"], true);
    let listed = app.tool("list_alerts", &json!({})).await.data();
    assert_eq!(listed["alerts"].as_array().unwrap().len(), 3);
    t.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn execution_quality_measures_the_fills_sent_through_tradeterm() {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let t = start(clock.clone()).await;
    let app = api(&t);
    wait_quote_at(&app, shadow_ticks(0)[0].time).await;
    let empty = app.tool("get_execution_quality", &json!({})).await.data();
    assert_eq!(empty["overall"]["requests"], 0);
    assert!(empty["notes"].to_string().contains("no live trade request"));

    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.2, "dry_run": false });
    let placed = app.place_order(&order).await.data();
    let positions = app.tool("get_positions", &json!({})).await.data();
    let ticket = positions["positions"][0]["ticket"]
        .as_u64()
        .unwrap_or_else(|| panic!("no position after {placed}: {positions}"));
    // A dry run is not an execution.
    app.place_order(&json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.2 }))
        .await
        .data();
    app.close_position(ticket, &json!({ "dry_run": false })).await.data();

    // The records are written just after the answers: poll until both are there.
    let q = wait_until("both executions recorded", Duration::from_secs(10), || async {
        let q = app.tool("get_execution_quality", &json!({})).await.data();
        (q["overall"]["requests"] == 2).then_some(q)
    })
    .await;
    let o = &q["overall"];
    assert_eq!(
        (o["requests"].as_u64(), o["fills"].as_u64(), o["rejections"].as_u64()),
        (Some(2), Some(2), Some(0)),
        "{q}"
    );
    assert_eq!(o["fill_rate"], 1.0);
    assert_eq!(o["latency_ms"]["count"], 2);
    assert!(o["latency_ms"]["p50"].as_f64().unwrap() >= 0.0);
    // The clock did not move: the simulator filled at the quote it had pushed.
    assert_eq!(o["slippage"]["count"], 2, "{q}");
    assert_eq!(o["slippage"]["zero"], 2, "{q}");
    assert!(o["spread"]["mean_points"].as_f64().unwrap() > 0.0);
    assert!(o["spread"]["total_money"].as_f64().unwrap() > 0.0);
    assert_eq!(q["by_symbol"]["EURUSD"]["fills"], 2);
    // Sessions are those of the request time (the gateway's clock, not the market's).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let sessions = tradeterm_core::execution::sessions_of(now);
    let grouped: Vec<&String> = q["by_session"].as_object().unwrap().keys().collect();
    assert!(!grouped.is_empty());
    for name in grouped {
        assert_eq!(q["by_session"][name]["requests"], 2, "{name}");
        // A request a few seconds ago is in the session of now (or, at a boundary, the one before).
        let minute_ago = tradeterm_core::execution::sessions_of(now - 60_000);
        assert!(
            sessions.contains(&name.as_str()) || minute_ago.contains(&name.as_str()),
            "{name}"
        );
    }
    assert_eq!(q["untracked_deals"], 0, "{q}");
    assert_eq!(q["currency"], "USD");
    // Another symbol has nothing.
    let other = app
        .tool("get_execution_quality", &json!({ "symbol": "GBPUSD" }))
        .await
        .data();
    assert_eq!(other["overall"]["requests"], 0);
    app.tool("get_execution_quality", &json!({ "from": "yesterday" }))
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("from");
    t.stack.stop().await;
}
