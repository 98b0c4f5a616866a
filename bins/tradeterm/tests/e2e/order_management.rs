//! Order management end to end over the real stack with a simulated terminal
//! on a `ManualClock`: `modify_order` (price, SL, TP, expiry; in `get_orders`
//! and as an `order.modified` event), a stop-limit order that becomes a limit
//! order and fills, an order that expires, `close_all_positions` with filters
//! and a partial failure, `cancel_all_orders`, `close_by` on the (hedging)
//! simulated account, `get_market_depth`, dry runs that change nothing, and
//! the Free tier refused live.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tradeterm_core::time::{parse_iso, to_iso};
use tradeterm_sim::ManualClock;

use crate::harness::data::num;
use crate::harness::{Api, ApiResult, Expect, Options, TestStack, WEDNESDAY_NOON, spawn};

const MIN: i64 = 60_000;

async fn start(clock: Arc<ManualClock>) -> TestStack {
    spawn(Options {
        sims: 1,
        allow_trading: true,
        sim_clock: Some(clock),
        ..Options::default()
    })
    .await
}

fn api(app: &TestStack) -> Api {
    app.api().on(app.terminal(0))
}

async fn tool(app: &TestStack, name: &str, input: Value) -> Value {
    api(app).tool(name, &input).await.data_for(format!("{name} {input}"))
}

async fn send(app: &TestStack, method: Method, path: &str, body: Value) -> ApiResult {
    api(app).send(method, path, Some(&body)).await.envelope()
}

fn r5(p: f64) -> f64 {
    (p * 1e5).round() / 1e5
}

async fn ask(app: &TestStack, symbol: &str) -> f64 {
    num(&api(app).tick(symbol).await.data()["ask"])
}

async fn orders(app: &TestStack) -> Vec<Value> {
    tool(app, "get_orders", json!({})).await["orders"]
        .as_array()
        .unwrap()
        .clone()
}

async fn positions(app: &TestStack) -> Vec<Value> {
    tool(app, "get_positions", json!({})).await["positions"]
        .as_array()
        .unwrap()
        .clone()
}

async fn live(app: &TestStack, order: Value) -> Value {
    let mut order = order;
    order["dry_run"] = json!(false);
    api(app)
        .place_order(&order)
        .await
        .data_for(format!("place_order {order}"))
}

/// Reads `GET /api/v1/events` until an event of `kind` arrives (10 s at most).
async fn wait_for_event(resp: &mut reqwest::Response, buf: &mut String, kind: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let event = frame.lines().find_map(|l| l.strip_prefix("event: "));
            let data: String = frame.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
            if event == Some(kind) {
                return serde_json::from_str(&data).unwrap();
            }
        }
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("no {kind} event within 10 s"))
            .unwrap()
            .expect("the stream ended");
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pending_order_is_modified_read_back_and_reported_and_dry_runs_change_nothing() {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(clock.clone()).await;
    let a = ask(&app, "EURUSD").await;
    let placed = live(
        &app,
        json!({ "symbol": "EURUSD", "order_type": "BUY_LIMIT", "volume": 0.1, "price": r5(a - 0.0050) }),
    )
    .await;
    let ticket = placed["trade"]["order"].as_u64().unwrap();
    let before = orders(&app).await;
    let expiry = to_iso(WEDNESDAY_NOON + 30 * 60 * MIN);
    let change = json!({
        "price": r5(a - 0.0040), "stop_loss": r5(a - 0.0090), "take_profit": r5(a + 0.0040),
        "expiration_mode": "SPECIFIED", "expiration": expiry,
    });
    // A dry run shows the change and changes nothing.
    let dry = send(&app, Method::PATCH, &format!("/api/v1/orders/{ticket}"), change.clone())
        .await
        .data();
    assert_eq!(
        (dry["dry_run"].as_bool(), dry["executed"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(num(&dry["after"]["price"]), r5(a - 0.0040));
    assert_eq!(orders(&app).await, before, "a dry run changes nothing");
    // A price on the wrong side is refused before anything is sent.
    let mut wrong = change.clone();
    wrong["price"] = json!(r5(a + 0.0040));
    wrong["dry_run"] = json!(false);
    send(&app, Method::PATCH, &format!("/api/v1/orders/{ticket}"), wrong)
        .await
        .failure(422, "ORDER_REJECTED");
    // Live: read back in get_orders and reported as order.modified.
    let mut stream = api(&app).request(Method::GET, "/api/v1/events").send().await.unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let mut buf = String::new();
    let mut body = change.clone();
    body["dry_run"] = json!(false);
    let done = send(&app, Method::PATCH, &format!("/api/v1/orders/{ticket}"), body)
        .await
        .data();
    assert_eq!(done["trade"]["retcode"], "done", "{done}");
    let o = orders(&app).await.into_iter().find(|o| o["ticket"] == ticket).unwrap();
    assert_eq!(num(&o["price"]), r5(a - 0.0040));
    assert_eq!(num(&o["stop_loss"]), r5(a - 0.0090));
    assert_eq!(num(&o["take_profit"]), r5(a + 0.0040));
    assert_eq!(o["expiration_mode"], "SPECIFIED");
    assert_eq!(
        parse_iso(o["expiration"].as_str().unwrap()).unwrap(),
        parse_iso(&expiry).unwrap()
    );
    let event = wait_for_event(&mut stream, &mut buf, "order.modified").await;
    assert!(event.to_string().contains(&ticket.to_string()), "{event}");
    // Absent fields keep their value: only the take profit goes.
    let tp_off = send(
        &app,
        Method::PATCH,
        &format!("/api/v1/orders/{ticket}"),
        json!({ "take_profit": 0, "dry_run": false }),
    )
    .await
    .data();
    assert_eq!(tp_off["after"]["take_profit"], Value::Null);
    assert_eq!(num(&tp_off["after"]["stop_loss"]), r5(a - 0.0090));

    // The Free tier may dry-run but not modify, close or cancel live.
    let long = live(&app, json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1 })).await["trade"]["position"]
        .clone();
    let short =
        live(&app, json!({ "symbol": "EURUSD", "order_type": "SELL", "volume": 0.1 })).await["trade"]["position"]
            .clone();
    let free = app.api_as(&app.free_tier_key().await).on(app.terminal(0));
    free.tool("modify_order", &json!({ "ticket": ticket, "price": r5(a - 0.0045) }))
        .await
        .data();
    for (name, input) in [
        (
            "modify_order",
            json!({ "ticket": ticket, "price": r5(a - 0.0045), "dry_run": false }),
        ),
        ("cancel_all_orders", json!({ "dry_run": false })),
        ("close_all_positions", json!({ "dry_run": false })),
        (
            "close_by",
            json!({ "ticket": long, "ticket_by": short, "dry_run": false }),
        ),
    ] {
        free.tool(name, &input).await.failure_for(403, "TRADING_DISABLED", name);
    }
    app.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stop_limit_order_becomes_a_limit_order_and_fills_and_an_expiring_order_expires() {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(clock.clone()).await;
    let a = ask(&app, "EURUSD").await;
    // Validation: a buy stop limit's limit lies below its stop.
    let mut bad = json!({ "symbol": "EURUSD", "order_type": "BUY_STOP_LIMIT", "volume": 0.1,
        "price": r5(a + 0.0005), "stop_limit_price": r5(a + 0.0009), "dry_run": false });
    api(&app).place_order(&bad).await.failure(422, "ORDER_REJECTED");
    bad["stop_limit_price"] = Value::Null;
    api(&app).place_order(&bad).await.failure(422, "ORDER_REJECTED");
    let (stop, limit) = (r5(a + 0.0005), r5(a + 0.0001));
    let sl = live(
        &app,
        json!({ "symbol": "EURUSD", "order_type": "BUY_STOP_LIMIT", "volume": 0.1, "price": stop,
            "stop_limit_price": limit, "comment": "stop limit v1.0..." }),
    )
    .await;
    let sl_ticket = sl["trade"]["order"].as_u64().unwrap();
    let listed = orders(&app).await;
    assert_eq!(listed[0]["order_type"], "BUY_STOP_LIMIT");
    assert_eq!(num(&listed[0]["stop_limit_price"]), limit);
    // An order good for 30 minutes, far from the market.
    let expiring = live(
        &app,
        json!({ "symbol": "EURUSD", "order_type": "SELL_LIMIT", "volume": 0.1, "price": r5(a + 0.0300),
            "expiration_mode": "SPECIFIED", "expiration": to_iso(WEDNESDAY_NOON + 30 * MIN) }),
    )
    .await;
    let exp_ticket = expiring["trade"]["order"].as_u64().unwrap();
    // US500 allows no SPECIFIED_DAY, and only FOK filling.
    let us = ask(&app, "US500").await;
    api(&app)
        .place_order(&json!({ "symbol": "US500", "order_type": "BUY_LIMIT", "volume": 0.1,
            "price": ((us - 50.0) * 100.0).round() / 100.0, "expiration_mode": "SPECIFIED_DAY",
            "expiration": to_iso(WEDNESDAY_NOON + 60 * MIN) }))
        .await
        .failure(422, "ORDER_REJECTED")
        .mentions("SPECIFIED_DAY");
    let ioc = api(&app)
        .place_order(&json!({ "symbol": "US500", "order_type": "BUY", "volume": 0.1, "filling": "IOC" }))
        .await
        .failure(422, "ORDER_REJECTED");
    assert_eq!(ioc.retcode(), Some("invalid_fill"));
    let fok = tool(
        &app,
        "place_order",
        json!({ "symbol": "US500", "order_type": "BUY", "volume": 0.1 }),
    )
    .await;
    assert_eq!(fok["filling"], "FOK", "the first filling the symbol allows");

    clock.advance_ms(31 * MIN);
    let history = tool(
        &app,
        "get_order_history",
        json!({ "from": to_iso(WEDNESDAY_NOON - MIN), "to": to_iso(WEDNESDAY_NOON + 40 * MIN) }),
    )
    .await;
    let expired = history["orders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["ticket"] == exp_ticket)
        .unwrap_or_else(|| panic!("{history}"));
    assert_eq!(expired["state"], "expired");
    assert!(orders(&app).await.iter().all(|o| o["ticket"] != exp_ticket));

    // The stop is reached: a buy limit at the stop-limit price, which then fills.
    let mut saw_limit = false;
    for _ in 0..600 {
        clock.advance_ms(5 * MIN);
        let now = orders(&app).await;
        if let Some(l) = now.iter().find(|o| o["order_type"] == "BUY_LIMIT") {
            assert_eq!(num(&l["price"]), limit);
            assert_eq!(l["comment"], "stop limit v1.0...");
            saw_limit = true;
        }
        if positions(&app).await.iter().any(|p| p["symbol"] == "EURUSD") {
            break;
        }
    }
    let filled = positions(&app).await;
    let pos = filled
        .iter()
        .find(|p| p["symbol"] == "EURUSD")
        .expect("the limit order filled");
    assert!(num(&pos["open_price"]) <= limit + 1e-9, "{pos}");
    assert!(orders(&app).await.iter().all(|o| o["ticket"] != sl_ticket));
    let history = tool(
        &app,
        "get_order_history",
        json!({ "from": to_iso(WEDNESDAY_NOON - MIN), "to": to_iso(clock_now(&clock) + MIN) }),
    )
    .await;
    let h = history["orders"].as_array().unwrap();
    assert!(
        h.iter().any(|o| o["ticket"] == sl_ticket && o["state"] == "filled"),
        "{history}"
    );
    assert!(
        saw_limit
            || h.iter()
                .any(|o| o["order_type"] == "BUY_LIMIT" && o["state"] == "filled"),
        "the stop-limit went through a buy limit: {history}"
    );
    app.stack.stop().await;
}

fn clock_now(clock: &ManualClock) -> i64 {
    use tradeterm_sim::Clock;
    clock.now_ms()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn close_all_with_filters_reports_each_close_and_a_partial_failure_and_cancel_all_and_close_by() {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(clock.clone()).await;
    let buy = |symbol: &str, volume: f64, magic: u64| json!({ "symbol": symbol, "order_type": "BUY", "volume": volume, "magic": magic });
    let e1 = live(&app, buy("EURUSD", 0.1, 1)).await["trade"]["position"]
        .as_u64()
        .unwrap();
    let e2 = live(&app, buy("EURUSD", 0.2, 2)).await["trade"]["position"]
        .as_u64()
        .unwrap();
    let us = live(&app, buy("US500", 1.0, 1)).await["trade"]["position"]
        .as_u64()
        .unwrap();
    let g = live(
        &app,
        json!({ "symbol": "GBPUSD", "order_type": "SELL", "volume": 0.1, "magic": 1 }),
    )
    .await["trade"]["position"]
        .as_u64()
        .unwrap();

    // Filters: magic 1 longs; a dry run lists them and closes nothing.
    let dry = send(
        &app,
        Method::POST,
        "/api/v1/positions/close-all",
        json!({ "side": "buy", "magic": 1 }),
    )
    .await
    .data();
    let tickets: Vec<u64> = dry["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["ticket"].as_u64().unwrap())
        .collect();
    assert_eq!(tickets, vec![e1, us], "{dry}");
    assert_eq!(dry["dry_run"], true);
    assert_eq!(positions(&app).await.len(), 4, "a dry run closes nothing");

    // 21:30 UTC: US500 is in its daily break, EURUSD trades.
    clock.set(parse_iso("2026-11-18T21:30:00Z").unwrap());
    let done = send(
        &app,
        Method::POST,
        "/api/v1/positions/close-all",
        json!({ "side": "buy", "magic": 1, "dry_run": false }),
    )
    .await
    .data();
    assert_eq!(
        (
            done["matched"].as_u64(),
            done["succeeded"].as_u64(),
            done["failed"].as_u64()
        ),
        (Some(2), Some(1), Some(1)),
        "{done}"
    );
    let items = done["positions"].as_array().unwrap();
    let e1_item = items.iter().find(|i| i["ticket"] == e1).unwrap();
    assert_eq!(e1_item["status"], "done");
    assert_eq!(e1_item["trade"]["retcode"], "done");
    let us_item = items.iter().find(|i| i["ticket"] == us).unwrap();
    assert_eq!(us_item["status"], "failed");
    assert_eq!(us_item["error"]["retcode"], "market_closed", "{us_item}");
    let left: Vec<u64> = positions(&app)
        .await
        .iter()
        .map(|p| p["ticket"].as_u64().unwrap())
        .collect();
    assert_eq!(left, vec![e2, us, g]);

    // Close-by: a short against the 0.2 long leaves 0.1 of the long.
    let short =
        live(&app, json!({ "symbol": "EURUSD", "order_type": "SELL", "volume": 0.1 })).await["trade"]["position"]
            .as_u64()
            .unwrap();
    let dry = send(
        &app,
        Method::POST,
        &format!("/api/v1/positions/{e2}/close-by"),
        json!({ "ticket_by": short }),
    )
    .await
    .data();
    assert_eq!((num(&dry["volume"]), num(&dry["ticket_volume_remaining"])), (0.1, 0.1));
    assert_eq!(positions(&app).await.len(), 4, "a dry run closes nothing");
    let other = api(&app)
        .tool("close_by", &json!({ "ticket": e2, "ticket_by": g }))
        .await
        .failure(422, "ORDER_REJECTED");
    assert_eq!(other.retcode(), Some("invalid_request"), "another symbol");
    let itself = api(&app)
        .tool("close_by", &json!({ "ticket": e2, "ticket_by": e2 }))
        .await
        .failure(422, "ORDER_REJECTED");
    assert_eq!(itself.retcode(), Some("invalid_request"), "a position by itself");
    let by = send(
        &app,
        Method::POST,
        &format!("/api/v1/positions/{e2}/close-by"),
        json!({ "ticket_by": short, "dry_run": false }),
    )
    .await
    .data();
    assert_eq!(by["trade"]["retcode"], "done", "{by}");
    let after = positions(&app).await;
    let long = after.iter().find(|p| p["ticket"] == e2).unwrap();
    assert_eq!(num(&long["volume"]), 0.1);
    assert!(after.iter().all(|p| p["ticket"] != short));

    // Cancel-all with filters, then the rest.
    let a = ask(&app, "EURUSD").await;
    for magic in [5, 6] {
        live(
            &app,
            json!({ "symbol": "EURUSD", "order_type": "BUY_LIMIT", "volume": 0.1, "price": r5(a - 0.0100), "magic": magic }),
        )
        .await;
    }
    let gb = ask(&app, "GBPUSD").await;
    live(
        &app,
        json!({ "symbol": "GBPUSD", "order_type": "SELL_LIMIT", "volume": 0.1, "price": r5(gb + 0.0100) }),
    )
    .await;
    let dry = send(&app, Method::POST, "/api/v1/orders/cancel-all", json!({}))
        .await
        .data();
    assert_eq!(dry["matched"], 3);
    assert_eq!(orders(&app).await.len(), 3, "a dry run cancels nothing");
    let one = send(
        &app,
        Method::POST,
        "/api/v1/orders/cancel-all",
        json!({ "symbol": "EURUSD", "magic": 5, "dry_run": false }),
    )
    .await
    .data();
    assert_eq!((one["matched"].as_u64(), one["succeeded"].as_u64()), (Some(1), Some(1)));
    assert_eq!(orders(&app).await.len(), 2);
    let rest = send(
        &app,
        Method::POST,
        "/api/v1/orders/cancel-all",
        json!({ "dry_run": false }),
    )
    .await
    .data();
    assert_eq!(
        (rest["succeeded"].as_u64(), rest["failed"].as_u64()),
        (Some(2), Some(0))
    );
    assert!(orders(&app).await.is_empty());
    app.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_depth_of_market_lists_offers_and_bids_around_the_quote() {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON));
    let app = start(clock).await;
    let tick = api(&app).tick("EURUSD").await.data();
    let depth = api(&app).get("/api/v1/market/depth/EURUSD").await.data();
    let asks = depth["asks"].as_array().unwrap();
    let bids = depth["bids"].as_array().unwrap();
    assert_eq!((asks.len(), bids.len()), (5, 5), "{depth}");
    assert_eq!(num(&asks[0]["price"]), num(&tick["ask"]));
    assert_eq!(num(&bids[0]["price"]), num(&tick["bid"]));
    assert!(asks.windows(2).all(|w| num(&w[0]["price"]) < num(&w[1]["price"])));
    assert!(bids.windows(2).all(|w| num(&w[0]["price"]) > num(&w[1]["price"])));
    assert!(num(&depth["ask_volume"]) > 0.0 && num(&depth["bid_volume"]) > 0.0);
    let i = num(&depth["imbalance"]);
    assert!((-1.0..=1.0).contains(&i));
    app.api()
        .on(app.terminal(0))
        .get("/api/v1/market/depth/NOPE")
        .await
        .failure(404, "NOT_FOUND");
    app.stack.stop().await;
}
