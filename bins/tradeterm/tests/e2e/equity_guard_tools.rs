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

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};
use tradeterm_sim::{ManualClock, SimSettings, Simulator};
use tradeterm_tools::monitor::MonitorSettings;

use crate::harness::data::num;
use crate::harness::{Api, ApiResult, Expect, Options, TestStack, WEDNESDAY_NOON, spawn, wait_until};

/// Polls the guarded terminals every 100 ms.
const FAST: MonitorSettings = MonitorSettings {
    interval: Duration::from_millis(100),
    idle_interval: Duration::from_millis(100),
    timeout: Duration::from_secs(5),
};

/// The stack on `dir` with one simulated terminal (trading on) on `clock`.
async fn start(dir: &Path, clock: Arc<ManualClock>) -> TestStack {
    start_monitored(dir, clock, FAST).await
}

async fn start_monitored(dir: &Path, clock: Arc<ManualClock>, monitor: MonitorSettings) -> TestStack {
    spawn(Options {
        sims: 1,
        allow_trading: true,
        sim_clock: Some(clock),
        monitor,
        data_dir: Some(dir.to_path_buf()),
        ..Options::default()
    })
    .await
}

/// The REST API on the stack's terminal, named in every request.
fn api(app: &TestStack) -> Api {
    app.api().on(app.terminal(0))
}

async fn tool(app: &TestStack, name: &str, input: &Value) -> Value {
    api(app).tool(name, input).await.data_for(format!("{name} {input}"))
}

async fn live_buy(app: &TestStack, volume: f64) -> ApiResult {
    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": volume, "dry_run": false });
    api(app).place_order(&order).await
}

async fn close(app: &TestStack, ticket: u64) -> ApiResult {
    api(app).close_position(ticket, &json!({ "dry_run": false })).await
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

/// Polls `poll_alerts` from `cursor` until an alert of `kind` arrives (at
/// most 20 s): the alert and how long it took.
async fn wait_for_alert(app: &TestStack, cursor: &str, kind: &str) -> (Value, Duration) {
    let started = Instant::now();
    let alert = wait_until(&format!("a {kind} alert"), Duration::from_secs(20), || async {
        let polled = tool(app, "poll_alerts", &json!({ "cursor": cursor })).await;
        polled["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["kind"] == kind)
            .cloned()
    })
    .await;
    (alert, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_intraday_drawdown_breaches_the_prop_firm_daily_loss_between_two_status_calls() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(dir.path(), clock.clone()).await;
    let account = tool(&app, "get_account_info", &json!({})).await;
    let initial = num(&account["balance"]);

    // The market's path: the deepest fall below the entry after which it
    // recovers to within 30 % of that fall.
    let volume = 1.0;
    let ask0 = num(&tool(&app, "get_tick", &json!({ "symbol": "EURUSD" })).await["ask"]);
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

    let set = tool(
        &app,
        "set_prop_firm_rules",
        &json!({ "initial_balance": initial, "max_daily_loss_percent": percent, "link_equity_guard": true }),
    )
    .await;
    assert_eq!(set["enforcement"], "enforced");
    let guard = tool(&app, "get_equity_guard", &json!({})).await;
    let pf = &guard["prop_firm_guard"];
    assert_eq!(pf["rules"]["action"], "block", "{guard}");
    assert!(
        (num(&pf["rules"]["daily_loss"]["amount"]) - limit).abs() < 1e-6,
        "{guard}"
    );
    assert_eq!(guard["guard"], Value::Null);

    let ticket = live_buy(&app, volume).await.data()["trade"]["position"]
        .as_u64()
        .unwrap();
    let entry_cost = initial - num(&tool(&app, "get_account_info", &json!({})).await["equity"]);
    assert!(
        entry_cost < 0.5 * limit,
        "the spread ({entry_cost}) must leave room under the limit ({limit})"
    );

    // Status call 1: nothing breached.
    let first = tool(&app, "get_prop_firm_status", &json!({})).await;
    assert_ne!(first["verdict"], "breached", "{first}");
    assert!(first["intraday_breaches"].as_array().unwrap().is_empty());
    let cursor = tool(&app, "poll_alerts", &json!({})).await["next_cursor"]
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
    assert_eq!(breach["terminal_id"], app.terminal(0));
    let at = parse_iso(breach["time"].as_str().unwrap()).unwrap();
    assert!(at >= moved_at && at <= now_ms(), "{alert}");
    assert_eq!(alert["fired_at"], breach["time"]);
    // The equity at that moment: the clock has not moved since.
    let equity_then = num(&tool(&app, "get_account_info", &json!({})).await["equity"]);
    assert!(
        (num(&breach["equity"]) - equity_then).abs() < 1e-6,
        "{alert} vs {equity_then}"
    );
    assert!(initial - equity_then >= limit);
    assert!(num(&breach["limit"]) - limit < 1e-6);

    // The market recovers before the next status call...
    clock.set(recovered);
    let account = tool(&app, "get_account_info", &json!({})).await;
    assert!(initial - num(&account["equity"]) < limit, "recovered: {account}");
    // ... yet status call 2 says `breached`, from the recorded breach.
    let second = tool(&app, "get_prop_firm_status", &json!({})).await;
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
    live_buy(&app, 0.1)
        .await
        .failure(403, "TRADING_DISABLED")
        .mentions("prop-firm equity guard")
        .mentions("blocked until");
    assert_eq!(app.stack.simulators()[0].positions().len(), positions, "nothing sent");
    let dry = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1 });
    api(&app).place_order(&dry).await.data();
    let guard = tool(&app, "get_equity_guard", &json!({})).await;
    assert_eq!(guard["blocked"], true, "{guard}");
    let until = parse_iso(guard["prop_firm_guard"]["block_until"].as_str().unwrap()).unwrap();
    assert_eq!(until, next_anchor(at, 0), "blocked until the next UTC midnight");
    close(&app, ticket).await.data_for("closing is never guarded");

    // A restart keeps the breach record, its alert and the block.
    app.stack.stop().await;
    let app = start(dir.path(), Arc::new(ManualClock::new(recovered))).await;
    let polled = tool(&app, "poll_alerts", &json!({})).await;
    let again = polled["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "prop_firm_breach")
        .unwrap_or_else(|| panic!("the breach is still delivered after a restart: {polled}"));
    assert_eq!(again["id"], alert["id"]);
    live_buy(&app, 0.1)
        .await
        .failure(403, "TRADING_DISABLED")
        .mentions("blocked until");
    let status = tool(&app, "get_prop_firm_status", &json!({})).await;
    assert_eq!(status["verdict"], "breached");
    // Removing the rules removes their guard and its block.
    assert_eq!(tool(&app, "remove_prop_firm_rules", &json!({})).await["removed"], true);
    live_buy(&app, 0.1).await.data();
    app.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn equity_guard_tools_set_get_remove_validate_block_and_alert() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path(), Arc::new(ManualClock::new(WEDNESDAY_NOON))).await;

    let none = tool(&app, "get_equity_guard", &json!({})).await;
    assert_eq!(
        (&none["active"], &none["blocked"], &none["guard"]),
        (&json!(false), &json!(false), &Value::Null)
    );
    assert_eq!(tool(&app, "remove_equity_guard", &json!({})).await["removed"], false);

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
        api(&app)
            .tool("set_equity_guard", &input)
            .await
            .failure_for(400, "VALIDATION_ERROR", &input)
            .mentions(needle);
    }
    assert_eq!(tool(&app, "get_equity_guard", &json!({})).await["active"], false);

    // `block` with the floor above the equity: breached at once, blocked
    // until the next anchor (17:00 at UTC+2 = 15:00 UTC).
    let equity = num(&tool(&app, "get_account_info", &json!({})).await["equity"]);
    let set = tool(
        &app,
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
        (&b0["rule"], num(&b0["equity"])),
        (&json!("equity_floor"), equity),
        "{set}"
    );
    let at = parse_iso(b0["time"].as_str().unwrap()).unwrap();
    let until = next_anchor(at, 15 * 3_600_000);
    assert_eq!(g["block_until"], to_iso(until));
    assert_eq!(num(&g["day_anchor_equity"]), equity);
    assert_eq!(num(&g["high_water_mark"]), equity);
    let daily = g["rule_status"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == "daily_loss")
        .unwrap();
    assert!((num(&daily["limit"]) - 0.05 * equity).abs() < 1e-6, "{daily}");
    live_buy(&app, 0.1)
        .await
        .failure(403, "TRADING_DISABLED")
        .mentions(&format!(
            "equity guard: live orders are blocked until {}",
            to_iso(until)
        ));
    assert!(app.stack.simulators()[0].positions().is_empty(), "nothing sent");
    let polled = tool(&app, "poll_alerts", &json!({})).await;
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
    let set = tool(&app, "set_equity_guard", &json!({ "equity_floor": equity + 100.0 })).await;
    assert_eq!(
        (&set["guard"]["status"], &set["blocked"]),
        (&json!("breached"), &json!(false)),
        "{set}"
    );
    assert_eq!(set["guard"]["rules"]["action"], "alert");
    let ticket = live_buy(&app, 0.1).await.data()["trade"]["position"].as_u64().unwrap();

    // Open risk: a position without a stop is unbounded.
    let set = tool(
        &app,
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
    close(&app, ticket).await.data();

    // Remove: gone, nothing blocks.
    assert_eq!(tool(&app, "remove_equity_guard", &json!({})).await["removed"], true);
    assert_eq!(tool(&app, "remove_equity_guard", &json!({})).await["removed"], false);
    let none = tool(&app, "get_equity_guard", &json!({})).await;
    assert_eq!(none["active"], false);
    assert_eq!(
        tool(&app, "poll_alerts", &json!({})).await["equity_guard_active"],
        false
    );

    // The Free tier lacks `trade`: it can read the guard but not set or remove it.
    let free = app.api_as(&app.free_tier_key().await).on(app.terminal(0));
    for name in ["set_equity_guard", "remove_equity_guard"] {
        free.tool(name, &json!({ "equity_floor": 1 }))
            .await
            .failure_for(403, "FORBIDDEN", name)
            .mentions("trade");
    }
    free.tool("get_equity_guard", &json!({})).await.data();
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
    let equity = num(&tool(&app, "get_account_info", &json!({})).await["equity"]);
    let floor = equity - 1.0;
    let set = tool(&app, "set_equity_guard", &json!({ "equity_floor": floor })).await;
    assert_eq!(set["guard"]["status"], "ok", "{set}");
    let cursor = tool(&app, "poll_alerts", &json!({})).await["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    // The spread of a 1-lot market order takes the equity below the floor;
    // the order's check ran before it, so only the pushed `account` event
    // that follows the trade can record the breach.
    live_buy(&app, 1.0).await.data();
    let traded = Instant::now();
    let after = num(&tool(&app, "get_account_info", &json!({})).await["equity"]);
    assert!(after <= floor, "the spread must cross the floor: {after} vs {floor}");
    let (alert, _) = wait_for_alert(&app, &cursor, "equity_guard_breach").await;
    let since_trade = traded.elapsed();
    eprintln!(
        "account event to poll_alerts: at most {} ms (polling every 60 s)",
        since_trade.as_millis()
    );
    assert_eq!(alert["breach"]["rule"], "equity_floor");
    assert!(
        (num(&alert["breach"]["equity"]) - after).abs() < 1e-6,
        "{alert} vs {after}"
    );
    app.stack.stop().await;
}
