//! The equity guard end to end over the real single-node stack, with the
//! simulated terminal on a `ManualClock` the test moves:
//!
//! - a simulated intraday drawdown against an open position breaches a
//!   prop-firm daily-loss rule between two status calls: the live monitor
//!   records it (time, equity), `poll_alerts` delivers it, the status says
//!   `breached` after the account recovered, a live order is refused while
//!   `block` is set, and the record survives a restart of the stack;
//! - an `account` event the agent pushes is evaluated at once (the monitor's
//!   polling is slowed to a minute there);
//! - `set_equity_guard` / `get_equity_guard` / `remove_equity_guard`:
//!   validation errors, `block` until the next day anchor, `alert`, open risk
//!   of a position without a stop, removal, and the Free tier refused.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::WEDNESDAY_NOON;
use serde_json::{Value, json};
use tradeterm::Settings;
use tradeterm::demo::DemoCredentials;
use tradeterm::stack::{Stack, StackHooks, StackOptions};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};
use tradeterm_sim::{ManualClock, SimSettings, Simulator};
use tradeterm_tools::monitor::MonitorSettings;

/// One running stack and a client of its REST API.
struct App {
    stack: Stack,
    rest: String,
    creds: DemoCredentials,
    http: reqwest::Client,
}

/// Polls the guarded terminals every 100 ms.
const FAST: MonitorSettings = MonitorSettings {
    interval: Duration::from_millis(100),
    idle_interval: Duration::from_millis(100),
    timeout: Duration::from_secs(5),
};

async fn start(dir: &Path, clock: Arc<ManualClock>) -> App {
    start_monitored(dir, clock, FAST).await
}

async fn start_monitored(dir: &Path, clock: Arc<ManualClock>, monitor: MonitorSettings) -> App {
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
            monitor,
        },
    )
    .await
    .unwrap();
    assert!(
        stack.wait_connected(Duration::from_secs(15)).await,
        "the simulated terminal did not connect"
    );
    App {
        rest: format!("http://127.0.0.1:{}", stack.rest_port),
        creds: stack.credentials.clone().unwrap(),
        stack,
        http: reqwest::Client::new(),
    }
}

impl App {
    fn terminal(&self) -> &str {
        &self.creds.terminals[0].id
    }

    async fn send(&self, key: &str, path: &str, body: &Value) -> (u16, Value) {
        let resp = self
            .http
            .post(format!("{}{path}", self.rest))
            .bearer_auth(key)
            .header("X-Terminal-Id", self.terminal())
            .json(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn call(&self, name: &str, input: &Value) -> (u16, Value) {
        self.send(&self.creds.api_key, &format!("/api/v1/tools/{name}"), input)
            .await
    }

    async fn tool(&self, name: &str, input: &Value) -> Value {
        let (s, b) = self.call(name, input).await;
        assert_eq!(s, 200, "{name} {input}: {b}");
        b["data"].clone()
    }

    async fn live_buy(&self, volume: f64) -> (u16, Value) {
        let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": volume, "dry_run": false });
        self.send(&self.creds.api_key, "/api/v1/orders", &order).await
    }

    async fn close(&self, ticket: u64) -> (u16, Value) {
        let path = format!("/api/v1/positions/{ticket}/close");
        self.send(&self.creds.api_key, &path, &json!({ "dry_run": false }))
            .await
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn assert_error(s: u16, b: &Value, status: u16, code: &str, needle: &str) {
    assert_eq!((s, b["error"]["code"].as_str()), (status, Some(code)), "{b}");
    let msg = b["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains(needle), "message `{msg}` should mention `{needle}`");
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The next day anchor after `t` for a day starting at `shift_ms` past UTC midnight.
fn next_anchor(t: i64, shift_ms: i64) -> i64 {
    (t - shift_ms).div_euclid(DAY_MS) * DAY_MS + shift_ms + DAY_MS
}

/// EURUSD bids of the terminal's market on a one-minute grid from noon, read
/// from a second simulator with the same seed (prices are a pure function of
/// seed, symbol and time).
fn bid_path(minutes: i64) -> Vec<(i64, f64)> {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let mut settings = SimSettings::demo(0);
    settings.allow_trading = true;
    let shadow = Simulator::new(settings, clock.clone());
    (1..=minutes)
        .map(|k| {
            let t = WEDNESDAY_NOON + k * 60_000;
            clock.set(t);
            (t, shadow.tick("EURUSD").unwrap().bid)
        })
        .collect()
}

/// Polls `poll_alerts` from `cursor` until an alert of `kind` arrives.
async fn wait_for_alert(app: &App, cursor: &str, kind: &str) -> (Value, Duration) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        let polled = app.tool("poll_alerts", &json!({ "cursor": cursor })).await;
        if let Some(a) = polled["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == kind) {
            return (a.clone(), started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no {kind} alert within 20 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_intraday_drawdown_breaches_the_prop_firm_daily_loss_between_two_status_calls() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(dir.path(), clock.clone()).await;
    let account = app.tool("get_account_info", &json!({})).await;
    let initial = f(&account["balance"]);

    // The market's path: the deepest fall below the entry after which it
    // recovers to within 30 % of that fall.
    let volume = 1.0;
    let ask0 = f(&app.tool("get_tick", &json!({ "symbol": "EURUSD" })).await["ask"]);
    let path = bid_path(360);
    let loss = |bid: f64| (ask0 - bid) * 100_000.0 * volume;
    let (deep, recovered) = path
        .iter()
        .enumerate()
        .filter_map(|(i, &(t, bid))| {
            let back = path[i + 1..].iter().find(|&&(_, b)| loss(b) <= 0.3 * loss(bid))?;
            Some(((t, loss(bid)), back.0))
        })
        .max_by(|a, b| a.0.1.total_cmp(&b.0.1))
        .expect("the simulated market falls and recovers within six hours");
    let (t_breach, deepest_loss) = deep;
    // Daily loss limit: 60 % of the deepest fall, in % of the initial balance.
    let limit = 0.6 * deepest_loss;
    let percent = limit / initial * 100.0;

    let set = app
        .tool(
            "set_prop_firm_rules",
            &json!({ "initial_balance": initial, "max_daily_loss_percent": percent, "link_equity_guard": true }),
        )
        .await;
    assert_eq!(set["enforcement"], "enforced");
    let guard = app.tool("get_equity_guard", &json!({})).await;
    let pf = &guard["prop_firm_guard"];
    assert_eq!(pf["rules"]["action"], "block", "{guard}");
    assert!(
        (f(&pf["rules"]["daily_loss"]["amount"]) - limit).abs() < 1e-6,
        "{guard}"
    );
    assert_eq!(guard["guard"], Value::Null);

    let (s, b) = app.live_buy(volume).await;
    assert_eq!(s, 200, "{b}");
    let ticket = b["data"]["trade"]["position"].as_u64().unwrap();
    let entry_cost = initial - f(&app.tool("get_account_info", &json!({})).await["equity"]);
    assert!(
        entry_cost < 0.5 * limit,
        "the spread ({entry_cost}) must leave room under the limit ({limit})"
    );

    // Status call 1: nothing breached.
    let first = app.tool("get_prop_firm_status", &json!({})).await;
    assert_ne!(first["verdict"], "breached", "{first}");
    assert!(first["intraday_breaches"].as_array().unwrap().is_empty());
    let cursor = app.tool("poll_alerts", &json!({})).await["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();

    // The market falls against the position: no call of ours, the monitor sees it.
    let moved_at = now_ms();
    clock.set(t_breach);
    let (alert, latency) = wait_for_alert(&app, &cursor, "prop_firm_breach").await;
    eprintln!(
        "equity event to poll_alerts: {} ms (monitor interval 100 ms, poll every 10 ms)",
        latency.as_millis()
    );
    let breach = &alert["breach"];
    assert_eq!(breach["rule"], "daily_loss", "{alert}");
    assert_eq!(breach["action"], "block");
    assert_eq!(breach["terminal_id"], app.terminal());
    let at = parse_iso(breach["time"].as_str().unwrap()).unwrap();
    assert!(at >= moved_at && at <= now_ms(), "{alert}");
    assert_eq!(alert["fired_at"], breach["time"]);
    // The equity at that moment: the clock has not moved since.
    let equity_then = f(&app.tool("get_account_info", &json!({})).await["equity"]);
    assert!(
        (f(&breach["equity"]) - equity_then).abs() < 1e-6,
        "{alert} vs {equity_then}"
    );
    assert!(initial - equity_then >= limit);
    assert!(f(&breach["limit"]) - limit < 1e-6);

    // The market recovers before the next status call...
    clock.set(recovered);
    let account = app.tool("get_account_info", &json!({})).await;
    assert!(initial - f(&account["equity"]) < limit, "recovered: {account}");
    // ... yet status call 2 says `breached`, from the recorded breach.
    let second = app.tool("get_prop_firm_status", &json!({})).await;
    assert_eq!(second["verdict"], "breached", "{second}");
    let daily = second["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rule"] == "daily_loss")
        .unwrap();
    assert_ne!(
        daily["verdict"], "breached",
        "the account alone no longer shows it: {second}"
    );
    let recorded = &second["intraday_breaches"][0];
    assert_eq!(
        (&recorded["time"], &recorded["equity"]),
        (&breach["time"], &breach["equity"])
    );
    assert!(second["reason"].as_str().unwrap().contains("intraday"), "{second}");

    // `block`: live orders opening exposure are refused; dry runs and closes pass.
    let positions = app.stack.simulators()[0].positions().len();
    let (s, b) = app.live_buy(0.1).await;
    assert_error(s, &b, 403, "TRADING_DISABLED", "prop-firm equity guard");
    assert_error(s, &b, 403, "TRADING_DISABLED", "blocked until");
    assert_eq!(app.stack.simulators()[0].positions().len(), positions, "nothing sent");
    let dry = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1 });
    let (s, b) = app.send(&app.creds.api_key, "/api/v1/orders", &dry).await;
    assert_eq!(s, 200, "{b}");
    let guard = app.tool("get_equity_guard", &json!({})).await;
    assert_eq!(guard["blocked"], true, "{guard}");
    let until = parse_iso(guard["prop_firm_guard"]["block_until"].as_str().unwrap()).unwrap();
    assert_eq!(until, next_anchor(at, 0), "blocked until the next UTC midnight");
    let (s, b) = app.close(ticket).await;
    assert_eq!(s, 200, "closing is never guarded: {b}");

    // A restart keeps the breach record, its alert and the block.
    app.stack.stop().await;
    let app = start(dir.path(), Arc::new(ManualClock::new(recovered))).await;
    let polled = app.tool("poll_alerts", &json!({})).await;
    let again = polled["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "prop_firm_breach")
        .unwrap_or_else(|| panic!("the breach is still delivered after a restart: {polled}"));
    assert_eq!(again["id"], alert["id"]);
    let (s, b) = app.live_buy(0.1).await;
    assert_error(s, &b, 403, "TRADING_DISABLED", "blocked until");
    let status = app.tool("get_prop_firm_status", &json!({})).await;
    assert_eq!(status["verdict"], "breached");
    // Removing the rules removes their guard and its block.
    assert_eq!(app.tool("remove_prop_firm_rules", &json!({})).await["removed"], true);
    let (s, b) = app.live_buy(0.1).await;
    assert_eq!(s, 200, "{b}");
    app.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn equity_guard_tools_set_get_remove_validate_block_and_alert() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path(), Arc::new(ManualClock::new(WEDNESDAY_NOON))).await;

    let none = app.tool("get_equity_guard", &json!({})).await;
    assert_eq!(
        (&none["active"], &none["blocked"], &none["guard"]),
        (&json!(false), &json!(false), &Value::Null)
    );
    assert_eq!(app.tool("remove_equity_guard", &json!({})).await["removed"], false);

    // Validation: 400, nothing stored.
    for (input, needle) in [
        (json!({}), "at least one"),
        (
            json!({ "daily_loss": { "type": "percent", "percent": 0 } }),
            "daily_loss",
        ),
        (
            json!({ "daily_loss": { "type": "percent", "percent": 120 } }),
            "daily_loss",
        ),
        (
            json!({ "max_drawdown": { "type": "money", "amount": -5 } }),
            "max_drawdown",
        ),
        (json!({ "equity_floor": -1 }), "equity_floor"),
        (json!({ "equity_floor": 1, "day_anchor_hour": 24 }), "day_anchor_hour"),
        (
            json!({ "equity_floor": 1, "day_anchor_utc_offset_minutes": 900 }),
            "day_anchor_utc_offset_minutes",
        ),
        (json!({ "equity_floor": 1, "action": "halt" }), "unknown variant"),
        (json!({ "equity_floor": 1, "risk": 2 }), "unknown field"),
    ] {
        let (s, b) = app.call("set_equity_guard", &input).await;
        assert_error(s, &b, 400, "VALIDATION_ERROR", needle);
    }
    assert_eq!(app.tool("get_equity_guard", &json!({})).await["active"], false);

    // `block` with the floor above the equity: breached at once, blocked
    // until the next anchor (17:00 at UTC+2 = 15:00 UTC).
    let equity = f(&app.tool("get_account_info", &json!({})).await["equity"]);
    let set = app
        .tool(
            "set_equity_guard",
            &json!({
                "equity_floor": equity + 100.0, "daily_loss": { "type": "percent", "percent": 5 },
                "day_anchor_utc_offset_minutes": 120, "day_anchor_hour": 17, "action": "block"
            }),
        )
        .await;
    let g = &set["guard"];
    assert_eq!((&set["active"], &set["blocked"]), (&json!(true), &json!(true)), "{set}");
    assert_eq!(g["source"], "equity_guard");
    assert_eq!(g["status"], "blocked");
    let b0 = &g["breaches"][0];
    assert_eq!(
        (&b0["rule"], f(&b0["equity"])),
        (&json!("equity_floor"), equity),
        "{set}"
    );
    let at = parse_iso(b0["time"].as_str().unwrap()).unwrap();
    let until = next_anchor(at, 15 * 3_600_000);
    assert_eq!(g["block_until"], to_iso(until));
    assert_eq!(f(&g["day_anchor_equity"]), equity);
    assert_eq!(f(&g["high_water_mark"]), equity);
    let daily = g["rule_status"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == "daily_loss")
        .unwrap();
    assert!((f(&daily["limit"]) - 0.05 * equity).abs() < 1e-6, "{daily}");
    let (s, b) = app.live_buy(0.1).await;
    assert_error(
        s,
        &b,
        403,
        "TRADING_DISABLED",
        &format!("equity guard: live orders are blocked until {}", to_iso(until)),
    );
    assert!(app.stack.simulators()[0].positions().is_empty(), "nothing sent");
    let polled = app.tool("poll_alerts", &json!({})).await;
    assert_eq!(polled["equity_guard_active"], true);
    let alert = polled["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "equity_guard_breach")
        .unwrap();
    assert_eq!(
        (&alert["breach"]["rule"], &alert["breach"]["time"]),
        (&json!("equity_floor"), &b0["time"])
    );

    // `alert`: the breach is reported, trading goes on.
    let set = app
        .tool("set_equity_guard", &json!({ "equity_floor": equity + 100.0 }))
        .await;
    assert_eq!(
        (&set["guard"]["status"], &set["blocked"]),
        (&json!("breached"), &json!(false)),
        "{set}"
    );
    assert_eq!(set["guard"]["rules"]["action"], "alert");
    let (s, b) = app.live_buy(0.1).await;
    assert_eq!(s, 200, "{b}");
    let ticket = b["data"]["trade"]["position"].as_u64().unwrap();

    // Open risk: a position without a stop is unbounded.
    let set = app
        .tool(
            "set_equity_guard",
            &json!({ "max_open_risk": { "type": "money", "amount": 1e6 } }),
        )
        .await;
    let risk = &set["guard"]["rule_status"][0];
    assert_eq!(
        (&risk["rule"], &risk["evaluated"], &risk["used"]),
        (&json!("max_open_risk"), &json!(true), &Value::Null)
    );
    let breach = &set["guard"]["breaches"][0];
    assert_eq!(
        (&breach["rule"], &breach["value"]),
        (&json!("max_open_risk"), &Value::Null),
        "{set}"
    );
    let (s, b) = app.close(ticket).await;
    assert_eq!(s, 200, "{b}");

    // Remove: gone, nothing blocks.
    assert_eq!(app.tool("remove_equity_guard", &json!({})).await["removed"], true);
    assert_eq!(app.tool("remove_equity_guard", &json!({})).await["removed"], false);
    let none = app.tool("get_equity_guard", &json!({})).await;
    assert_eq!(none["active"], false);
    assert_eq!(app.tool("poll_alerts", &json!({})).await["equity_guard_active"], false);

    // The Free tier lacks `trade`: it can read the guard but not set or remove it.
    let store = &app.stack.store;
    store
        .set_license_tier(&app.creds.license_id, tradeterm_store::Tier::Free)
        .await
        .unwrap();
    let (_, key) = store.create_api_key(&app.creds.license_id, "free").await.unwrap();
    for name in ["set_equity_guard", "remove_equity_guard"] {
        let (s, b) = app
            .send(
                key.expose(),
                &format!("/api/v1/tools/{name}"),
                &json!({ "equity_floor": 1 }),
            )
            .await;
        assert_error(s, &b, 403, "FORBIDDEN", "trade");
    }
    let (s, b) = app
        .send(key.expose(), "/api/v1/tools/get_equity_guard", &json!({}))
        .await;
    assert_eq!(s, 200, "{b}");
    app.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_account_event_pushed_by_the_agent_is_evaluated_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // Polling once a minute: within `wait_for_alert`'s 20 s only the agent's
    // events can catch the breach.
    let slow = MonitorSettings {
        interval: Duration::from_secs(60),
        idle_interval: Duration::from_secs(60),
        timeout: Duration::from_secs(5),
    };
    let app = start_monitored(dir.path(), Arc::new(ManualClock::new(WEDNESDAY_NOON)), slow).await;
    let equity = f(&app.tool("get_account_info", &json!({})).await["equity"]);
    let floor = equity - 1.0;
    let set = app.tool("set_equity_guard", &json!({ "equity_floor": floor })).await;
    assert_eq!(set["guard"]["status"], "ok", "{set}");
    let cursor = app.tool("poll_alerts", &json!({})).await["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    // The spread of a 1-lot market order takes the equity below the floor;
    // the order's check ran before it, so only the pushed `account` event
    // that follows the trade can record the breach.
    let (s, b) = app.live_buy(1.0).await;
    assert_eq!(s, 200, "{b}");
    let traded = Instant::now();
    let after = f(&app.tool("get_account_info", &json!({})).await["equity"]);
    assert!(after <= floor, "the spread must cross the floor: {after} vs {floor}");
    let (alert, _) = wait_for_alert(&app, &cursor, "equity_guard_breach").await;
    let since_trade = traded.elapsed();
    eprintln!(
        "account event to poll_alerts: at most {} ms (polling every 60 s)",
        since_trade.as_millis()
    );
    assert_eq!(alert["breach"]["rule"], "equity_floor");
    assert!(
        (f(&alert["breach"]["equity"]) - after).abs() < 1e-6,
        "{alert} vs {after}"
    );
    app.stack.stop().await;
}
