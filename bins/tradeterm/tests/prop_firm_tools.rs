//! The prop-firm tools end to end: REST over the real stack with a simulated
//! terminal (`POST /api/v1/tools/{name}`): presets and custom rule sets set,
//! evaluated against the account and the deal history fetched through the
//! other tools after live trades, replaced and removed; the equity guard
//! refusing a live order while breached; `block` when the terminal is
//! unreachable; validation errors; and the Free tier refused.

mod common;

use common::{Options, WEDNESDAY_NOON, spawn};
use serde_json::{Value, json};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};

fn assert_error(s: u16, b: &Value, status: u16, code: &str, needle: &str) {
    assert_eq!((s, b["error"]["code"].as_str()), (status, Some(code)), "{b}");
    let msg = b["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains(needle), "message `{msg}` should mention `{needle}`");
    assert_eq!(b.as_object().map(|o| o.len()), Some(1), "only the error envelope: {b}");
}

fn close_to(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn limit<'a>(status: &'a Value, rule: &str) -> &'a Value {
    status["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} limit: {status}"))
}

fn objective<'a>(status: &'a Value, rule: &str) -> &'a Value {
    status["objectives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} objective: {status}"))
}

async fn call(t: &common::TestStack, name: &str, input: &Value) -> (u16, Value) {
    t.post(&format!("/api/v1/tools/{name}"), Some(t.terminal(0)), input, None)
        .await
}

async fn tool(t: &common::TestStack, name: &str, input: &Value) -> Value {
    let (s, b) = call(t, name, input).await;
    assert_eq!(s, 200, "{name} {input}: {b}");
    b["data"].clone()
}

async fn live_order(t: &common::TestStack, comment: &str) -> (u16, Value) {
    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false, "comment": comment });
    t.post("/api/v1/orders", Some(t.terminal(0)), &order, None).await
}

async fn close_live(t: &common::TestStack, ticket: u64) -> (u16, Value) {
    t.post(
        &format!("/api/v1/positions/{ticket}/close"),
        Some(t.terminal(0)),
        &json!({ "dry_run": false }),
        None,
    )
    .await
}

#[tokio::test]
async fn prop_firm_rules_track_the_account_enforce_when_linked_and_block_when_unreachable() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;

    // No rules yet.
    let (s, b) = call(&t, "get_prop_firm_status", &json!({})).await;
    assert_error(s, &b, 404, "NOT_FOUND", "set_prop_firm_rules");
    let removed = tool(&t, "remove_prop_firm_rules", &json!({})).await;
    assert_eq!(removed["removed"], false);

    // The challenge starts just after the initial deposit.
    let range = json!({ "from": to_iso(WEDNESDAY_NOON - 3_600_000), "to": to_iso(WEDNESDAY_NOON + DAY_MS) });
    let history = tool(&t, "get_deal_history", &range).await;
    let deposit = history["deals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["entry"] == "balance")
        .unwrap()
        .clone();
    let start = parse_iso(deposit["time"].as_str().unwrap()).unwrap() + 1;
    let account = tool(&t, "get_account_info", &json!({})).await;
    let initial = f(&account["balance"]);

    // ---- the generic preset
    let set = tool(
        &t,
        "set_prop_firm_rules",
        &json!({ "preset": "generic", "initial_balance": initial, "start_time": to_iso(start) }),
    )
    .await;
    assert_eq!(set["terminal_id"], t.terminal(0));
    assert_eq!(set["enforcement"], "advisory");
    let rules = &set["rules"];
    assert_eq!(rules["preset"], "generic");
    assert_eq!(
        (
            f(&rules["max_daily_loss_percent"]),
            f(&rules["max_loss_percent"]),
            f(&rules["profit_target_percent"])
        ),
        (5.0, 10.0, 8.0)
    );
    assert_eq!(rules["min_trading_days"], 3);
    assert_eq!(rules["drawdown_mode"], "static");
    assert_eq!(parse_iso(rules["start_time"].as_str().unwrap()).unwrap(), start);

    // Live trades: one round trip closed, one position left open.
    let (s, b) = live_order(&t, "prop.1").await;
    assert_eq!(s, 200, "{b}");
    let first = b["data"]["trade"]["position"].as_u64().unwrap();
    let (s, b) = close_live(&t, first).await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = live_order(&t, "prop.2").await;
    assert_eq!(s, 200, "{b}");
    let open = b["data"]["trade"]["position"].as_u64().unwrap();

    let status = tool(&t, "get_prop_firm_status", &json!({})).await;
    let account = tool(&t, "get_account_info", &json!({})).await;
    let history = tool(&t, "get_deal_history", &range).await;
    let deals: Vec<Value> = history["deals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| parse_iso(d["time"].as_str().unwrap()).unwrap() >= start)
        .cloned()
        .collect();
    let change = |d: &Value| f(&d["profit"]) + f(&d["swap"]) + f(&d["commission"]);
    let balance = f(&account["balance"]);
    let equity = f(&status["equity"]);
    assert!(close_to(f(&status["balance"]), balance), "{status} vs {account}");
    assert_eq!(status["currency"], account["currency"]);
    assert!(
        ["ok", "warning", "critical"].contains(&status["verdict"].as_str().unwrap()),
        "{status}"
    );
    assert_eq!(status["enforcement"], "advisory");
    // Closed profit: the trading deals since the start.
    let realised: f64 = deals.iter().map(change).sum();
    assert!(close_to(f(&status["closed_profit"]), realised), "{status}");
    assert!(close_to(f(&status["closed_profit"]), balance - initial));
    assert!(close_to(f(&status["net_cash_flow"]), 0.0));
    // Day start balance: the balance less the changes of the deals since the day start.
    let day_start = parse_iso(status["day_start"].as_str().unwrap()).unwrap();
    let today: f64 = deals
        .iter()
        .filter(|d| parse_iso(d["time"].as_str().unwrap()).unwrap() >= day_start)
        .map(change)
        .sum();
    assert!(close_to(f(&status["day_start_balance"]), balance - today), "{status}");
    assert!(close_to(f(&status["daily_pnl"]), equity - (balance - today)));
    // Daily loss: 5 % of the initial balance below the day's start.
    let daily = limit(&status, "daily_loss");
    assert!(close_to(f(&daily["limit"]), 0.05 * initial));
    assert!(close_to(f(&daily["floor_equity"]), balance - today - 0.05 * initial));
    assert!(close_to(f(&daily["headroom"]), equity - f(&daily["floor_equity"])));
    // Static maximum loss: 10 % below the initial balance.
    let max = limit(&status, "max_loss");
    assert!(close_to(f(&max["floor_equity"]), 0.9 * initial));
    assert!(close_to(f(&max["headroom"]), equity - 0.9 * initial));
    assert!(close_to(
        f(&max["headroom_percent"]),
        f(&max["headroom"]) / (0.1 * initial) * 100.0
    ));
    // Max safe risk: the tightest headroom over the equity.
    let tightest = f(&daily["headroom"]).min(f(&max["headroom"]));
    assert!(close_to(f(&status["max_safe_risk_amount"]), tightest));
    assert!(close_to(f(&status["max_safe_risk_percent"]), tightest / equity * 100.0));
    // Objectives: one trading day (both trades on the simulator's day), the target not met.
    assert_eq!(status["trading_days"], 1);
    let days = objective(&status, "min_trading_days");
    assert_eq!(
        (f(&days["achieved"]), f(&days["remaining"]), &days["met"]),
        (1.0, 2.0, &json!(false))
    );
    let target = objective(&status, "profit_target");
    assert!(close_to(f(&target["target"]), 0.08 * initial));
    assert!(close_to(f(&target["remaining"]), 0.08 * initial - realised));
    assert_eq!(status["passed"], false);

    // ---- a custom rule set replaces it: trailing drawdown, consistency
    let custom = tool(
        &t,
        "set_prop_firm_rules",
        &json!({
            "initial_balance": initial, "start_time": to_iso(start), "max_loss_percent": 6.0,
            "drawdown_mode": "trailing", "consistency_percent": 50.0, "day_start_hour_utc": 22
        }),
    )
    .await;
    assert_eq!(custom["rules"]["preset"], Value::Null);
    assert_eq!(custom["rules"]["max_daily_loss_percent"], Value::Null);
    assert_eq!(custom["created_at"], set["created_at"]);
    let status = tool(&t, "get_prop_firm_status", &json!({})).await;
    assert_eq!(status["limits"].as_array().unwrap().len(), 1, "{status}");
    let hwm = f(&status["high_water_mark"]);
    let equity = f(&status["equity"]);
    assert!(
        hwm >= initial && hwm >= equity && hwm >= f(&status["balance"]),
        "{status}"
    );
    let max = limit(&status, "max_loss");
    assert!(close_to(f(&max["floor_equity"]), hwm - 0.06 * initial));
    assert!(close_to(f(&max["headroom"]), equity - (hwm - 0.06 * initial)));
    assert_eq!(objective(&status, "consistency")["target"], 50.0);
    assert_eq!(status["day_start"].as_str().unwrap()[11..16].to_owned(), "22:00");
    // The mark is stored: it never falls between calls.
    let again = tool(&t, "get_prop_firm_status", &json!({})).await;
    assert!(f(&again["high_water_mark"]) >= hwm);

    // ---- breached: a 2× account size puts the static floor above the equity.
    let breached_rules = json!({
        "preset": "generic", "initial_balance": 2.0 * initial, "start_time": to_iso(start)
    });
    tool(&t, "set_prop_firm_rules", &breached_rules).await;
    let status = tool(&t, "get_prop_firm_status", &json!({})).await;
    assert_eq!(status["verdict"], "breached", "{status}");
    assert_eq!(limit(&status, "max_loss")["verdict"], "breached");
    assert_eq!(f(&status["max_safe_risk_percent"]), 0.0);
    assert!(status["reason"].as_str().unwrap().contains("maximum loss"), "{status}");
    // Advisory: a breached rule set does not stop trading.
    let (s, b) = live_order(&t, "prop.advisory").await;
    assert_eq!(s, 200, "{b}");
    let advisory = b["data"]["trade"]["position"].as_u64().unwrap();
    let (s, b) = close_live(&t, advisory).await;
    assert_eq!(s, 200, "{b}");

    // Linked to the equity guard: live orders are refused, dry runs and closes are not.
    let mut linked = breached_rules.clone();
    linked["link_equity_guard"] = json!(true);
    let set = tool(&t, "set_prop_firm_rules", &linked).await;
    assert_eq!(set["enforcement"], "enforced");
    let positions_before = t.stack.simulators()[0].positions().len();
    let (s, b) = live_order(&t, "prop.guarded").await;
    assert_error(s, &b, 403, "TRADING_DISABLED", "prop-firm");
    assert_eq!(
        t.stack.simulators()[0].positions().len(),
        positions_before,
        "nothing sent"
    );
    let dry = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1 });
    let (s, b) = t.post("/api/v1/orders", Some(t.terminal(0)), &dry, None).await;
    assert_eq!(s, 200, "a dry run is still allowed: {b}");
    let (s, b) = close_live(&t, open).await;
    assert_eq!(s, 200, "closing is never guarded: {b}");

    // Linked but healthy: orders pass.
    let mut healthy = linked.clone();
    healthy["initial_balance"] = json!(initial);
    tool(&t, "set_prop_firm_rules", &healthy).await;
    let (s, b) = live_order(&t, "prop.healthy").await;
    assert_eq!(s, 200, "{b}");
    let healthy_ticket = b["data"]["trade"]["position"].as_u64().unwrap();
    let (s, b) = close_live(&t, healthy_ticket).await;
    assert_eq!(s, 200, "{b}");

    // ---- validation: 400 with only the error envelope, nothing stored.
    let bad = [
        (json!({ "preset": "generic" }), "initial_balance"),
        (
            json!({ "preset": "ftmo", "initial_balance": 1000.0 }),
            "unknown variant",
        ),
        (
            json!({ "preset": "generic", "initial_balance": -5.0 }),
            "initial_balance",
        ),
        (json!({ "initial_balance": 1000.0 }), "no rule"),
        (
            json!({ "initial_balance": 1000.0, "max_daily_loss_percent": 12.0, "max_loss_percent": 10.0 }),
            "may not exceed",
        ),
        (
            json!({ "initial_balance": 1000.0, "drawdown_mode": "trailing", "profit_target_percent": 10.0 }),
            "trailing",
        ),
        (
            json!({ "preset": "generic", "initial_balance": 1000.0, "start_time": "monday" }),
            "ISO 8601",
        ),
        (
            json!({ "preset": "generic", "initial_balance": 1000.0, "risk": 1 }),
            "unknown field",
        ),
        (
            json!({ "preset": "generic", "initial_balance": 1000.0, "min_trading_days": 0 }),
            "min_trading_days",
        ),
    ];
    for (input, needle) in bad {
        let (s, b) = call(&t, "set_prop_firm_rules", &input).await;
        assert_error(s, &b, 400, "VALIDATION_ERROR", needle);
    }
    let (s, b) = call(&t, "get_prop_firm_status", &json!({ "verbose": true })).await;
    assert_error(s, &b, 400, "VALIDATION_ERROR", "unknown field");
    let still = tool(&t, "get_prop_firm_status", &json!({})).await;
    assert!(
        close_to(f(&still["rules"]["initial_balance"]), initial),
        "unchanged: {still}"
    );

    // ---- remove
    let removed = tool(&t, "remove_prop_firm_rules", &json!({})).await;
    assert_eq!(removed["removed"], true);
    let (s, b) = call(&t, "get_prop_firm_status", &json!({})).await;
    assert_error(s, &b, 404, "NOT_FOUND", "no prop-firm rules");
    let removed = tool(&t, "remove_prop_firm_rules", &json!({})).await;
    assert_eq!(removed["removed"], false, "removing twice is fine");

    // ---- unreachable terminal: `block`, and the linked guard refuses live orders.
    tool(&t, "set_prop_firm_rules", &healthy).await;
    t.stack.stop_gateway().await;
    let mut blocked = None;
    for _ in 0..100 {
        let (s, b) = call(&t, "get_prop_firm_status", &json!({})).await;
        if s == 200 && b["data"]["verdict"] == "block" {
            blocked = Some(b["data"].clone());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let blocked = blocked.expect("the status becomes `block` once the terminal is gone");
    assert!(blocked["reason"].as_str().unwrap().contains("unreachable"), "{blocked}");
    assert_eq!(f(&blocked["max_safe_risk_percent"]), 0.0);
    assert!(blocked["limits"].as_array().unwrap().is_empty());
    assert!(blocked["equity"].is_null());
    assert_eq!(blocked["rules"]["link_equity_guard"], true);

    // ---- the Free tier lacks `trade`.
    let free = t.free_tier_key().await;
    for name in ["set_prop_firm_rules", "get_prop_firm_status", "remove_prop_firm_rules"] {
        let (s, b) = t
            .send_as(
                &free,
                reqwest::Method::POST,
                &format!("/api/v1/tools/{name}"),
                Some(t.terminal(0)),
                Some(&json!({ "preset": "generic", "initial_balance": 1000.0 })),
                None,
            )
            .await;
        assert_eq!(
            (s, b["error"]["code"].as_str()),
            (403, Some("FORBIDDEN")),
            "{name}: {b}"
        );
    }
    t.stack.stop().await;
}
