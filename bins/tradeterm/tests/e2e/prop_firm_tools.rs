//! The prop-firm tools end to end: REST over the real stack with a simulated
//! terminal (`POST /api/v1/tools/{name}`): presets and custom rule sets set,
//! evaluated against the account and the deal history fetched through the
//! other tools after live trades, replaced and removed; the equity guard
//! refusing a live order while breached; `block` when the terminal is
//! unreachable; validation errors; and the Free tier refused.

use std::time::Duration;

use serde_json::{Value, json};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};

use crate::harness::data::num;
use crate::harness::{Api, ApiResult, Expect, Options, TestStack, WEDNESDAY_NOON, close_to, spawn, wait_until};

/// Money summed over deals and percentages of it are compared within this
/// relative tolerance.
const REL: f64 = 1e-6;

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

/// The REST API on the stack's terminal, named in every request.
fn api(t: &TestStack) -> Api {
    t.api().on(t.terminal(0))
}

async fn live_order(t: &TestStack, comment: &str) -> ApiResult {
    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false, "comment": comment });
    api(t).place_order(&order).await
}

async fn close_live(t: &TestStack, ticket: u64) -> ApiResult {
    api(t).close_position(ticket, &json!({ "dry_run": false })).await
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
    api(&t)
        .tool("get_prop_firm_status", &json!({}))
        .await
        .failure(404, "NOT_FOUND")
        .mentions("set_prop_firm_rules");
    let removed = api(&t).tool("remove_prop_firm_rules", &json!({})).await.data();
    assert_eq!(removed["removed"], false);

    // The challenge starts just after the initial deposit.
    let range = json!({ "from": to_iso(WEDNESDAY_NOON - 3_600_000), "to": to_iso(WEDNESDAY_NOON + DAY_MS) });
    let history = api(&t).tool("get_deal_history", &range).await.data();
    let deposit = history["deals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["entry"] == "balance")
        .unwrap()
        .clone();
    let start = parse_iso(deposit["time"].as_str().unwrap()).unwrap() + 1;
    let account = api(&t).tool("get_account_info", &json!({})).await.data();
    let initial = num(&account["balance"]);

    // ---- the generic preset
    let set = api(&t)
        .tool(
            "set_prop_firm_rules",
            &json!({ "preset": "generic", "initial_balance": initial, "start_time": to_iso(start) }),
        )
        .await
        .data();
    assert_eq!(set["terminal_id"], t.terminal(0));
    assert_eq!(set["enforcement"], "advisory");
    let rules = &set["rules"];
    assert_eq!(rules["preset"], "generic");
    assert_eq!(
        (
            num(&rules["max_daily_loss_percent"]),
            num(&rules["max_loss_percent"]),
            num(&rules["profit_target_percent"])
        ),
        (5.0, 10.0, 8.0)
    );
    assert_eq!(rules["min_trading_days"], 3);
    assert_eq!(rules["drawdown_mode"], "static");
    assert_eq!(parse_iso(rules["start_time"].as_str().unwrap()).unwrap(), start);

    // Live trades: one round trip closed, one position left open.
    let first = live_order(&t, "prop.1").await.data()["trade"]["position"]
        .as_u64()
        .unwrap();
    close_live(&t, first).await.data();
    let open = live_order(&t, "prop.2").await.data()["trade"]["position"]
        .as_u64()
        .unwrap();

    let status = api(&t).tool("get_prop_firm_status", &json!({})).await.data();
    let account = api(&t).tool("get_account_info", &json!({})).await.data();
    let history = api(&t).tool("get_deal_history", &range).await.data();
    let deals: Vec<Value> = history["deals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| parse_iso(d["time"].as_str().unwrap()).unwrap() >= start)
        .cloned()
        .collect();
    let change = |d: &Value| num(&d["profit"]) + num(&d["swap"]) + num(&d["commission"]);
    let balance = num(&account["balance"]);
    let equity = num(&status["equity"]);
    assert!(close_to(num(&status["balance"]), balance, REL), "{status} vs {account}");
    assert_eq!(status["currency"], account["currency"]);
    assert!(
        ["ok", "warning", "critical"].contains(&status["verdict"].as_str().unwrap()),
        "{status}"
    );
    assert_eq!(status["enforcement"], "advisory");
    // Closed profit: the trading deals since the start.
    let realised: f64 = deals.iter().map(change).sum();
    assert!(close_to(num(&status["closed_profit"]), realised, REL), "{status}");
    assert!(close_to(num(&status["closed_profit"]), balance - initial, REL));
    assert!(close_to(num(&status["net_cash_flow"]), 0.0, REL));
    // Day start balance: the balance less the changes of the deals since the day start.
    let day_start = parse_iso(status["day_start"].as_str().unwrap()).unwrap();
    let today: f64 = deals
        .iter()
        .filter(|d| parse_iso(d["time"].as_str().unwrap()).unwrap() >= day_start)
        .map(change)
        .sum();
    assert!(
        close_to(num(&status["day_start_balance"]), balance - today, REL),
        "{status}"
    );
    assert!(close_to(num(&status["daily_pnl"]), equity - (balance - today), REL));
    // Daily loss: 5 % of the initial balance below the day's start.
    let daily = limit(&status, "daily_loss");
    assert!(close_to(num(&daily["limit"]), 0.05 * initial, REL));
    assert!(close_to(
        num(&daily["floor_equity"]),
        balance - today - 0.05 * initial,
        REL
    ));
    assert!(close_to(
        num(&daily["headroom"]),
        equity - num(&daily["floor_equity"]),
        REL
    ));
    // Static maximum loss: 10 % below the initial balance.
    let max = limit(&status, "max_loss");
    assert!(close_to(num(&max["floor_equity"]), 0.9 * initial, REL));
    assert!(close_to(num(&max["headroom"]), equity - 0.9 * initial, REL));
    assert!(close_to(
        num(&max["headroom_percent"]),
        num(&max["headroom"]) / (0.1 * initial) * 100.0,
        REL
    ));
    // Max safe risk: the tightest headroom over the equity.
    let tightest = num(&daily["headroom"]).min(num(&max["headroom"]));
    assert!(close_to(num(&status["max_safe_risk_amount"]), tightest, REL));
    assert!(close_to(
        num(&status["max_safe_risk_percent"]),
        tightest / equity * 100.0,
        REL
    ));
    // Objectives: one trading day (both trades on the simulator's day), the target not met.
    assert_eq!(status["trading_days"], 1);
    let days = objective(&status, "min_trading_days");
    assert_eq!(
        (num(&days["achieved"]), num(&days["remaining"]), &days["met"]),
        (1.0, 2.0, &json!(false))
    );
    let target = objective(&status, "profit_target");
    assert!(close_to(num(&target["target"]), 0.08 * initial, REL));
    assert!(close_to(num(&target["remaining"]), 0.08 * initial - realised, REL));
    assert_eq!(status["passed"], false);

    // ---- a custom rule set replaces it: trailing drawdown, consistency
    let custom = api(&t)
        .tool(
            "set_prop_firm_rules",
            &json!({
                "initial_balance": initial, "start_time": to_iso(start), "max_loss_percent": 6.0,
                "drawdown_mode": "trailing", "consistency_percent": 50.0, "day_start_hour_utc": 22
            }),
        )
        .await
        .data();
    assert_eq!(custom["rules"]["preset"], Value::Null);
    assert_eq!(custom["rules"]["max_daily_loss_percent"], Value::Null);
    assert_eq!(custom["created_at"], set["created_at"]);
    let status = api(&t).tool("get_prop_firm_status", &json!({})).await.data();
    assert_eq!(status["limits"].as_array().unwrap().len(), 1, "{status}");
    let hwm = num(&status["high_water_mark"]);
    let equity = num(&status["equity"]);
    assert!(
        hwm >= initial && hwm >= equity && hwm >= num(&status["balance"]),
        "{status}"
    );
    let max = limit(&status, "max_loss");
    assert!(close_to(num(&max["floor_equity"]), hwm - 0.06 * initial, REL));
    assert!(close_to(num(&max["headroom"]), equity - (hwm - 0.06 * initial), REL));
    assert_eq!(objective(&status, "consistency")["target"], 50.0);
    assert_eq!(status["day_start"].as_str().unwrap()[11..16].to_owned(), "22:00");
    // The mark is stored: it never falls between calls.
    let again = api(&t).tool("get_prop_firm_status", &json!({})).await.data();
    assert!(num(&again["high_water_mark"]) >= hwm);

    // ---- breached: a 2× account size puts the static floor above the equity.
    let breached_rules = json!({
        "preset": "generic", "initial_balance": 2.0 * initial, "start_time": to_iso(start)
    });
    api(&t).tool("set_prop_firm_rules", &breached_rules).await.data();
    let status = api(&t).tool("get_prop_firm_status", &json!({})).await.data();
    assert_eq!(status["verdict"], "breached", "{status}");
    assert_eq!(limit(&status, "max_loss")["verdict"], "breached");
    assert_eq!(num(&status["max_safe_risk_percent"]), 0.0);
    assert!(status["reason"].as_str().unwrap().contains("maximum loss"), "{status}");
    // Advisory: a breached rule set does not stop trading.
    let advisory = live_order(&t, "prop.advisory").await.data()["trade"]["position"]
        .as_u64()
        .unwrap();
    close_live(&t, advisory).await.data();

    // Linked to the equity guard: live orders are refused, dry runs and closes are not.
    let mut linked = breached_rules.clone();
    linked["link_equity_guard"] = json!(true);
    let set = api(&t).tool("set_prop_firm_rules", &linked).await.data();
    assert_eq!(set["enforcement"], "enforced");
    let positions_before = t.stack.simulators()[0].positions().len();
    live_order(&t, "prop.guarded")
        .await
        .failure(403, "TRADING_DISABLED")
        .mentions("prop-firm");
    assert_eq!(
        t.stack.simulators()[0].positions().len(),
        positions_before,
        "nothing sent"
    );
    let dry = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1 });
    api(&t).place_order(&dry).await.data_for("a dry run is still allowed");
    close_live(&t, open).await.data_for("closing is never guarded");

    // Linked but healthy: orders pass.
    let mut healthy = linked.clone();
    healthy["initial_balance"] = json!(initial);
    api(&t).tool("set_prop_firm_rules", &healthy).await.data();
    let healthy_ticket = live_order(&t, "prop.healthy").await.data()["trade"]["position"]
        .as_u64()
        .unwrap();
    close_live(&t, healthy_ticket).await.data();

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
        api(&t)
            .tool("set_prop_firm_rules", &input)
            .await
            .failure_for(400, "VALIDATION_ERROR", &input)
            .mentions(needle);
    }
    api(&t)
        .tool("get_prop_firm_status", &json!({ "verbose": true }))
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("unknown field");
    let still = api(&t).tool("get_prop_firm_status", &json!({})).await.data();
    assert!(
        close_to(num(&still["rules"]["initial_balance"]), initial, REL),
        "unchanged: {still}"
    );

    // ---- remove
    let removed = api(&t).tool("remove_prop_firm_rules", &json!({})).await.data();
    assert_eq!(removed["removed"], true);
    api(&t)
        .tool("get_prop_firm_status", &json!({}))
        .await
        .failure(404, "NOT_FOUND")
        .mentions("no prop-firm rules");
    let removed = api(&t).tool("remove_prop_firm_rules", &json!({})).await.data();
    assert_eq!(removed["removed"], false, "removing twice is fine");

    // ---- unreachable terminal: `block`, and the linked guard refuses live orders.
    api(&t).tool("set_prop_firm_rules", &healthy).await.data();
    t.stack.stop_gateway().await;
    let blocked = wait_until(
        "the status to become `block` once the terminal is gone",
        Duration::from_secs(5),
        || async {
            match api(&t).tool("get_prop_firm_status", &json!({})).await {
                Ok(d) if d["verdict"] == "block" => Some(d),
                _ => None,
            }
        },
    )
    .await;
    assert!(blocked["reason"].as_str().unwrap().contains("unreachable"), "{blocked}");
    assert_eq!(num(&blocked["max_safe_risk_percent"]), 0.0);
    assert!(blocked["limits"].as_array().unwrap().is_empty());
    assert!(blocked["equity"].is_null());
    assert_eq!(blocked["rules"]["link_equity_guard"], true);

    // ---- the Free tier lacks `trade`.
    let free = t.api_as(&t.free_tier_key().await).on(t.terminal(0));
    for name in ["set_prop_firm_rules", "get_prop_firm_status", "remove_prop_firm_rules"] {
        free.tool(name, &json!({ "preset": "generic", "initial_balance": 1000.0 }))
            .await
            .failure_for(403, "FORBIDDEN", name);
    }
    t.stack.stop().await;
}
