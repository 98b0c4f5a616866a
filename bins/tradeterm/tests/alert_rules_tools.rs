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

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::WEDNESDAY_NOON;
use serde_json::{Value, json};
use tradeterm::Settings;
use tradeterm::demo::DemoCredentials;
use tradeterm::stack::{Stack, StackHooks, StackOptions};
use tradeterm_core::structure::{FvgConfig, StructureConfig, StructureEvent, detect};
use tradeterm_core::time::parse_iso;
use tradeterm_core::{Bar, Timeframe};
use tradeterm_sim::ManualClock;

struct App {
    stack: Stack,
    rest: String,
    creds: DemoCredentials,
    http: reqwest::Client,
}

async fn start(dir: &Path, clock: Arc<ManualClock>) -> App {
    let settings = Settings {
        port: 0,
        gateway_port: 0,
        mcp_port: 0,
        heartbeat_interval_ms: 200,
        heartbeat_timeout_ms: 3000,
        ..Settings::default()
    };
    let stack = Stack::start_with(
        StackOptions {
            data_dir: dir.to_path_buf(),
            sim_terminals: 1,
            sim_allow_trading: true,
            sim_start_ms: None,
            settings,
        },
        StackHooks {
            sim_clock: Some(clock),
            monitor: Default::default(),
        },
    )
    .await
    .unwrap();
    assert!(stack.wait_connected(Duration::from_secs(15)).await);
    App {
        rest: format!("http://127.0.0.1:{}", stack.rest_port),
        creds: stack.credentials.clone().unwrap(),
        stack,
        http: reqwest::Client::new(),
    }
}

impl App {
    async fn send(&self, path: &str, body: &Value) -> (u16, Value) {
        let resp = self
            .http
            .post(format!("{}{path}", self.rest))
            .bearer_auth(&self.creds.api_key)
            .header("X-Terminal-Id", &self.creds.terminals[0].id)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}"));
        (status, body)
    }

    async fn call(&self, name: &str, input: &Value) -> (u16, Value) {
        self.send(&format!("/api/v1/tools/{name}"), input).await
    }

    async fn tool(&self, name: &str, input: &Value) -> Value {
        let (s, b) = self.call(name, input).await;
        assert_eq!(s, 200, "{name} {input}: {b}");
        b["data"].clone()
    }

    async fn m1_bars(&self, count: u32) -> Vec<Bar> {
        let out = self
            .tool(
                "get_bars",
                &json!({ "symbol": "EURUSD", "timeframe": "M1", "count": count }),
            )
            .await;
        out["bars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| Bar {
                time: match &b["time"] {
                    Value::String(t) => parse_iso(t).unwrap(),
                    t => t.as_i64().unwrap(),
                },
                open: b["open"].as_f64().unwrap(),
                high: b["high"].as_f64().unwrap(),
                low: b["low"].as_f64().unwrap(),
                close: b["close"].as_f64().unwrap(),
                volume: b["volume"].as_f64().unwrap_or(0.0),
            })
            .collect()
    }

    /// Waits until the gateway holds the quote the agent pushed at `t`.
    async fn wait_quote_at(&self, t: i64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let tick = self.tool("get_tick", &json!({ "symbol": "EURUSD" })).await;
            let time = match &tick["time"] {
                Value::String(s) => parse_iso(s).unwrap(),
                v => v.as_i64().unwrap_or_default(),
            };
            if time >= t {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no quote at {t} within 10 s");
    }
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
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(dir.path(), clock.clone()).await;
    let ticks = shadow_ticks(STEPS);
    app.wait_quote_at(ticks[0].time).await;

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
        let (s, b) = app.call("set_alert", &json!({ "condition": bad })).await;
        assert!(s == 400 || s == 404, "{bad}: {s} {b}");
        let msg = b["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(needle), "{bad}: `{msg}` should mention `{needle}`");
    }
    assert!(
        app.tool("list_alerts", &json!({})).await["alerts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let (s, b) = app.call("remove_alert", &json!({ "id": "alr_nope" })).await;
    assert_eq!((s, b["error"]["code"].as_str()), (404, Some("NOT_FOUND")));

    // The level: the median of the bids the market will show (computed from
    // the bars of a first pass is not possible before the run, so take the
    // quotes of a shadow run of the same deterministic market).
    let shadow: Vec<f64> = ticks.iter().map(|t| t.bid).collect();
    let mut sorted = shadow.clone();
    sorted.sort_by(f64::total_cmp);
    let level = (sorted[sorted.len() / 2] + sorted[sorted.len() / 2 - 1]) / 2.0;
    let expected_price = count_side_changes(&shadow, level);
    assert!(expected_price >= 2, "the path must cross its median: {shadow:?}");

    let account = app.tool("get_account_info", &json!({})).await;
    let equity = account["equity"].as_f64().unwrap();
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
            .await;
        assert!(rule["id"].as_str().unwrap().starts_with("alr_"));
        assert_eq!(rule["condition"]["kind"], condition["kind"]);
        ids.insert(rule["id"].as_str().unwrap().to_owned(), *name);
    }
    // Every rule takes its baseline from what the agent pushes.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let listed = app.tool("list_alerts", &json!({})).await;
        let armed = listed["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["armed"] == true)
            .count();
        if armed == conditions.len() {
            break;
        }
        assert!(Instant::now() < deadline, "rules not armed: {listed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cursor = app.tool("poll_alerts", &json!({})).await["next_cursor"].clone();

    // The market moves minute by minute; each quote reaches the server.
    for k in 1..=STEPS {
        let t = WEDNESDAY_NOON + k * 60_000;
        clock.set(t);
        app.wait_quote_at(ticks[k as usize].time).await;
    }

    // Expected firings, from the market itself.
    let bars = app.m1_bars(300).await;
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
    assert_eq!(Timeframe::M1.duration_ms(), 60_000);

    // poll_alerts delivers each firing (ids unique); the last bars and quotes
    // may still be in flight: poll until every expected firing arrived.
    let mut delivered: BTreeMap<String, Value> = BTreeMap::new();
    let mut cursor = cursor.as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while delivered.len() < total && Instant::now() < deadline {
        let polled = app.tool("poll_alerts", &json!({ "cursor": cursor })).await;
        for a in polled["alerts"].as_array().unwrap() {
            if a["kind"] == "alert" {
                delivered.insert(a["id"].as_str().unwrap().to_owned(), a.clone());
            }
        }
        cursor = polled["next_cursor"].as_str().unwrap().to_owned();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut fired: BTreeMap<&str, usize> = expected.keys().map(|k| (*k, 0)).collect();
    for a in delivered.values() {
        let name = ids[a["alert"]["alert_id"].as_str().unwrap()];
        *fired.get_mut(name).unwrap() += 1;
        assert_eq!(a["alert"]["label"], name);
    }
    assert_eq!(fired, expected, "firings per rule (expected from the market)");
    // list_alerts agrees, and nothing fires twice afterwards.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let listed = app.tool("list_alerts", &json!({})).await;
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
    let removed = app.tool("remove_alert", &json!({ "id": price_id })).await;
    assert_eq!(removed["removed"], true);
    assert_eq!(
        app.tool("list_alerts", &json!({})).await["alerts"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    app.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn execution_quality_measures_the_fills_sent_through_tradeterm() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(dir.path(), clock.clone()).await;
    app.wait_quote_at(shadow_ticks(0)[0].time).await;
    let empty = app.tool("get_execution_quality", &json!({})).await;
    assert_eq!(empty["overall"]["requests"], 0);
    assert!(empty["notes"].to_string().contains("no live trade request"));

    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.2, "dry_run": false });
    let (s, placed) = app.send("/api/v1/orders", &order).await;
    assert_eq!(s, 200, "{placed}");
    let positions = app.tool("get_positions", &json!({})).await;
    let ticket = positions["positions"][0]["ticket"]
        .as_u64()
        .unwrap_or_else(|| panic!("no position after {placed}: {positions}"));
    // A dry run is not an execution.
    let (s, _) = app
        .send(
            "/api/v1/orders",
            &json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.2 }),
        )
        .await;
    assert_eq!(s, 200);
    let (s, closed) = app
        .send(
            &format!("/api/v1/positions/{ticket}/close"),
            &json!({ "dry_run": false }),
        )
        .await;
    assert_eq!(s, 200, "{closed}");

    // The records are written just after the answers: poll until both are there.
    let deadline = Instant::now() + Duration::from_secs(10);
    let q = loop {
        let q = app.tool("get_execution_quality", &json!({})).await;
        if q["overall"]["requests"] == 2 || Instant::now() > deadline {
            break q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
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
    let other = app.tool("get_execution_quality", &json!({ "symbol": "GBPUSD" })).await;
    assert_eq!(other["overall"]["requests"], 0);
    let (s, b) = app.call("get_execution_quality", &json!({ "from": "yesterday" })).await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")));
    app.stack.stop().await;
}
