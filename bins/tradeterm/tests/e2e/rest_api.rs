//! The REST API against the real stack: gateway, simulated terminals over the
//! agent protocol, SQLite, and (for rate limits) the machine's Redis.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};
use tradeterm_protocol::Dispatch;
use tradeterm_store::Tier;

use crate::harness::client::Reply;
use crate::harness::data::bars_of;
use crate::harness::{Api, Expect, Options, TestStack, assert_close, spawn, spawn_with, wait_until};

/// Everything of the account that an order could change (not the moving market).
fn account_state(sim: &tradeterm_sim::Simulator) -> String {
    let positions: Vec<_> = sim
        .positions()
        .into_iter()
        .map(|p| {
            (
                p.ticket,
                p.symbol,
                p.side,
                p.volume,
                p.open_price,
                p.stop_loss,
                p.take_profit,
            )
        })
        .collect();
    serde_json::to_string(&json!({
        "balance": sim.account_info().balance,
        "positions": positions,
        "orders": sim.pending_orders(),
        "deals": sim.deals(),
        "history": sim.history_orders(),
    }))
    .unwrap()
}

fn b64(v: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v)
}

/// Another REST server over the stack's store, gateway and keys, with its
/// own `settings` and `dispatch`: (base URL, handle to stop it).
fn another_rest_server(
    t: &TestStack,
    settings: &tradeterm::Settings,
    dispatch: Arc<dyn Dispatch>,
) -> (String, tradeterm_rest::ServerHandle) {
    let (url, handle, _) = another_rest_server_with_limiter(t, settings, dispatch);
    (url, handle)
}

/// [`another_rest_server`], and its rate limiter (with Redis).
fn another_rest_server_with_limiter(
    t: &TestStack,
    settings: &tradeterm::Settings,
    dispatch: Arc<dyn Dispatch>,
) -> (
    String,
    tradeterm_rest::ServerHandle,
    Option<Arc<tradeterm_tools::ratelimit::RateLimiter>>,
) {
    let services = settings.services(dispatch, t.stack.store.clone()).unwrap();
    let state = tradeterm_rest::AppState::new(
        tradeterm_rest::RestSettings::default(),
        services,
        tradeterm::keys::verifier(settings, &t.key_paths()).unwrap(),
        tradeterm_protocol::http_client::GatewayClient::new(&t.gateway).unwrap(),
    );
    let limiter = state.limiter().cloned();
    let server = tradeterm_rest::RestServer::build(state, TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
    let url = format!("http://127.0.0.1:{}", server.port());
    let handle = server.handle();
    tokio::spawn(server.run_until_stopped());
    (url, handle, limiter)
}

/// A stack with `sims` terminals and rate limits in Redis, and a second API
/// instance sharing its Redis and store; an hour-long window so that a test
/// never straddles a window boundary.
async fn two_instances_on_redis(sims: usize) -> (TestStack, String, tradeterm_rest::ServerHandle) {
    let (t, second, handle, _) = two_instances_on_redis_with_limiter(sims).await;
    (t, second, handle)
}

/// [`two_instances_on_redis`], and the second instance's rate limiter.
async fn two_instances_on_redis_with_limiter(
    sims: usize,
) -> (
    TestStack,
    String,
    tradeterm_rest::ServerHandle,
    Arc<tradeterm_tools::ratelimit::RateLimiter>,
) {
    let t = spawn(Options {
        sims,
        redis: true,
        window_ms: 3_600_000,
        ..Options::default()
    })
    .await;
    let settings = tradeterm::Settings {
        keyvalue_url: Some("redis://127.0.0.1:6379".into()),
        api_rate_limit_window_ms: 3_600_000,
        ..tradeterm::Settings::default()
    };
    let (second, handle, limiter) = another_rest_server_with_limiter(&t, &settings, Arc::new(t.stack.gateway.clone()));
    (t, second, handle, limiter.expect("rate limiting on Redis"))
}

#[tokio::test]
async fn authentication_and_the_jwt_attack_set() {
    // Every attack must be refused as a bad credential (401); the guessing
    // throttle, which would answer 429 after ten of them from this one
    // address, is off here (its own tests: crates/gateway/tests/limits.rs).
    let t = spawn_with(
        Options {
            sims: 1,
            ..Options::default()
        },
        |s| s.auth_guess_threshold = 0,
    )
    .await;
    // Missing, malformed, unknown.
    t.anonymous().account().await.failure(401, "UNAUTHORIZED");
    for bad in ["svc_api_unknown", "not-a-token", "a.b.c"] {
        t.api_as(bad).account().await.failure_for(401, "UNAUTHORIZED", bad);
    }
    // The demo API key works (one terminal connected: no X-Terminal-Id needed).
    let account = t.api().account().await.data();
    assert_eq!(account["trade_mode"], "demo");

    // A JWT from POST /api/token (terminal key) works as a bearer token.
    let answer = t.anonymous().token(&t.creds.terminals[0].key).await.data();
    let token = answer["token"].as_str().unwrap().to_owned();
    t.api_as(&token).account().await.data();
    // The master license key is not a REST credential.
    t.anonymous()
        .token(&t.creds.license_key)
        .await
        .failure(401, "UNAUTHORIZED");

    // Attack set, each built from the valid token.
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[1])
            .unwrap(),
    )
    .unwrap();
    let paths = t.key_paths();
    let private = std::fs::read(&paths.private).unwrap();
    let public = std::fs::read(&paths.public).unwrap();
    let key = EncodingKey::from_rsa_pem(&private).unwrap();
    let sign = |claims: &Value| jsonwebtoken::encode(&Header::new(Algorithm::RS256), claims, &key).unwrap();
    let now = chrono::Utc::now().timestamp();
    let mut attacks = Vec::new();
    // alg: none
    attacks.push(format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), parts[1]));
    // HS256 signed with the public key
    attacks.push(
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &payload,
            &EncodingKey::from_secret(&public),
        )
        .unwrap(),
    );
    // expired
    let mut p = payload.clone();
    p["exp"] = json!(now - 3600);
    p["iat"] = json!(now - 7200);
    p["nbf"] = json!(now - 7200);
    attacks.push(sign(&p));
    // wrong issuer, wrong audience
    let mut p = payload.clone();
    p["iss"] = json!("someone-else");
    attacks.push(sign(&p));
    let mut p = payload.clone();
    p["aud"] = json!("another-api");
    attacks.push(sign(&p));
    // tampered payload (tier raised) with the original signature
    payload["tier"] = json!("enterprise");
    attacks.push(format!(
        "{}.{}.{}",
        parts[0],
        b64(&serde_json::to_vec(&payload).unwrap()),
        parts[2]
    ));
    // A valid token whose capabilities lack `analytics` is 403 FORBIDDEN on analytics tools.
    let mut p = payload.clone();
    p["caps"] = json!(["read"]);
    let read_only = t.api_as(&sign(&p));
    read_only
        .tool("list_indicators", &json!({}))
        .await
        .failure(403, "FORBIDDEN");
    read_only.account().await.data_for("read tools still work");

    for (i, a) in attacks.iter().enumerate() {
        t.api_as(a)
            .account()
            .await
            .failure_for(401, "UNAUTHORIZED", format!("attack {i}"));
    }
    t.stack.stop().await;
}

#[tokio::test]
async fn terminal_targeting_and_cross_license_isolation() {
    let t = spawn(Options::default()).await;
    t.api().tick("EURUSD").await.failure(400, "TERMINAL_ID_REQUIRED");

    let tick = t.api().on(t.terminal(1)).tick("EURUSD").await.data();
    assert_eq!(tick["symbol"], "EURUSD");
    assert!(tick["ask"].as_f64().unwrap() > tick["bid"].as_f64().unwrap());
    assert!(tick["time"].as_str().unwrap().ends_with('Z'));

    let listed = t.api().terminals().await.data();
    let list = listed["terminals"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|x| x["connected"] == true));

    // Another license: its key cannot reach this license's terminals, and the
    // answer is the same as for a terminal that does not exist.
    let store = &t.stack.store;
    let (other, _) = store.create_license("other", Tier::Pro).await.unwrap();
    let (_, other_key) = store.create_api_key(&other.id, "k").await.unwrap();
    store.create_terminal(&other.id, "never connected").await.unwrap();
    let other_api = t.api_as(other_key.expose());
    let theirs = other_api
        .clone()
        .on(t.terminal(0))
        .tick("EURUSD")
        .await
        .failure(404, "NOT_FOUND");
    let missing = other_api
        .clone()
        .on("term_doesnotexist")
        .tick("EURUSD")
        .await
        .failure(404, "NOT_FOUND");
    assert_eq!(
        theirs, missing,
        "another license's terminal must look like a missing one"
    );
    let listed = other_api.terminals().await.data();
    assert!(
        listed["terminals"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["connected"] == false)
    );
    // The other license's only terminal is targeted without the header even
    // though it is offline (the spec's fallbacks then apply): here, 502.
    other_api.account().await.failure(502, "DISPATCH_ERROR");
    // With two terminals, none connected: MISSING_TERMINAL.
    store.create_terminal(&other.id, "also offline").await.unwrap();
    let f = other_api.account().await.failure(400, "MISSING_TERMINAL");
    assert_eq!(
        f.message,
        "X-Terminal-Id header required (no terminal of this license is connected)"
    );
    // A terminal of this license that is not connected: 502 DISPATCH_ERROR.
    let (offline, _) = store.create_terminal(&t.creds.license_id, "offline").await.unwrap();
    t.api().on(&offline.id).account().await.failure(502, "DISPATCH_ERROR");
    // Bad header values are refused cleanly.
    t.api().on("../../etc").account().await.failure(400, "VALIDATION_ERROR");
    t.stack.stop().await;
}

#[tokio::test]
async fn dry_runs_validate_and_change_nothing() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let sim = &t.stack.simulators()[0];
    let before = account_state(sim);
    let tick = sim.tick("EURUSD").unwrap();
    let order = json!({
        "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1,
        "stop_loss": ((tick.bid - 0.0040) * 1e5).round() / 1e5,
        "take_profit": ((tick.ask + 0.0080) * 1e5).round() / 1e5,
        "comment": "plan v2.1..."
    });
    let d = t.api().place_order(&order).await.data();
    assert_eq!(d["dry_run"], true);
    assert_eq!(d["executed"], false);
    assert!(d["margin_required"].as_f64().unwrap() > 0.0);
    assert!(d["free_margin_after"].as_f64().unwrap() < d["free_margin"].as_f64().unwrap());
    assert!(d["stop_loss"]["money"].as_f64().unwrap() < 0.0);
    assert!(d["take_profit"]["money"].as_f64().unwrap() > 0.0);
    assert!(d["reward_to_risk"].as_f64().unwrap() > 1.0);
    // Invalid orders fail closed with a reason.
    let f = t
        .api()
        .place_order(&json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.001}))
        .await
        .failure(422, "ORDER_REJECTED");
    assert_eq!(f.retcode(), Some("invalid_volume"));
    let wrong_side = json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "stop_loss": tick.ask + 0.01});
    let f = t.api().place_order(&wrong_side).await.failure(422, "ORDER_REJECTED");
    assert_eq!(f.retcode(), Some("invalid_stops"));
    t.api()
        .place_order(&json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "bogus": 1}))
        .await
        .failure(400, "VALIDATION_ERROR");
    let malformed = t
        .api()
        .request(Method::POST, "/api/v1/orders")
        .header("content-type", "application/json")
        .body("{not json");
    Api::send_request("POST /api/v1/orders {not json", malformed)
        .await
        .envelope()
        .failure(400, "VALIDATION_ERROR");
    // Whitespace alone is not JSON either (no body at all is `{}`), on a
    // named route and on the tool route.
    for path in ["/api/v1/orders", "/api/v1/tools/get_news"] {
        let blank = t
            .api()
            .request(Method::POST, path)
            .header("content-type", "application/json")
            .body("\r");
        Api::send_request(&format!("POST {path} \\r"), blank)
            .await
            .envelope()
            .failure(400, "VALIDATION_ERROR")
            .mentions("not valid JSON");
    }
    // Live call while the terminal's allow-trading input is off.
    let mut live = order.clone();
    live["dry_run"] = json!(false);
    t.api().place_order(&live).await.failure(403, "TRADING_DISABLED");
    // None of the above touched the account.
    assert_eq!(
        account_state(sim),
        before,
        "dry runs and refusals must leave the account byte-identical"
    );
    t.stack.stop().await;
}

#[tokio::test]
async fn live_trading_with_idempotency_and_tier_gating() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let sim = &t.stack.simulators()[0];
    let order =
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false, "comment": "idem.1" });
    let keyed = t.api().idempotency_key("order-key-1");
    let first = keyed.place_order(&order).await;
    let placed = first.clone().data();
    assert_eq!(placed["executed"], true);
    let second = keyed.place_order(&order).await;
    assert_eq!(second, first, "a retry returns the first outcome");
    let fills = sim.deals().iter().filter(|d| d.comment == "idem.1").count();
    assert_eq!(fills, 1, "the same Idempotency-Key executes once");
    // Same key, other request: conflict.
    let mut other = order.clone();
    other["volume"] = json!(0.2);
    keyed.place_order(&other).await.failure(409, "IDEMPOTENCY_CONFLICT");

    // Positions: list, one, modify (dry), close (live, partial).
    let ticket = placed["trade"]["position"].as_u64().unwrap();
    let position = t.api().position(ticket).await.data();
    assert_eq!(position["comment"], "idem.1");
    let closed = t
        .api()
        .close_position(ticket, &json!({ "volume": 0.05, "dry_run": false }))
        .await
        .data();
    assert_eq!(closed["volume_remaining"], 0.05);
    let reversed = t.api().reverse_position(ticket, &json!({})).await.data();
    assert_eq!(reversed["dry_run"], true);
    t.api()
        .close_position(999_999, &json!({}))
        .await
        .failure(404, "NOT_FOUND");

    // A Free-tier license: dry runs work, live calls are TRADING_DISABLED.
    let free = t.api_as(&t.free_tier_key().await);
    free.place_order(&json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1}))
        .await
        .data();
    free.place_order(&order).await.failure(403, "TRADING_DISABLED");
    t.stack.stop().await;
}

#[tokio::test]
async fn journal_is_license_scoped_and_survives_a_gateway_outage() {
    let t = spawn(Options::default()).await;
    let api = t.api();
    let created = api
        .create_journal_entry(&json!({ "entry": { "symbol": "EURUSD", "notes": "no terminal" } }))
        .await
        .data();
    let unassigned_id = created["id"].as_str().unwrap().to_owned();
    let created = api
        .create_journal_entry(&json!({ "terminal_id": t.terminal(0), "entry": { "setup": "breakout", "tags": ["a"] } }))
        .await
        .data();
    let attributed_id = created["id"].as_str().unwrap().to_owned();
    let ids = |d: &Value| -> Vec<String> {
        d["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = api.journal("").await.data();
    assert_eq!(ids(&all), vec![attributed_id.clone(), unassigned_id.clone()]);
    assert_eq!(ids(&api.journal("terminal_id=all").await.data()).len(), 2);
    assert_eq!(
        ids(&api.journal("terminal_id=unassigned").await.data()),
        vec![unassigned_id.clone()]
    );
    let attributed = api.journal(&format!("terminal_id={}", t.terminal(0))).await.data();
    assert_eq!(ids(&attributed), vec![attributed_id.clone()]);
    let edited = api
        .update_journal_entry(&unassigned_id, &json!({"entry": {"notes": "edited"}}))
        .await
        .data();
    assert_eq!(edited["entry"]["notes"], "edited");

    // Another license sees nothing and changes nothing.
    let store = &t.stack.store;
    let (_, other_key) = t.other_license(Tier::Pro).await;
    let other = t.api_as(&other_key);
    assert!(ids(&other.journal("").await.data()).is_empty());
    other.journal_entry(&unassigned_id).await.failure(404, "NOT_FOUND");
    other
        .delete_journal_entry(&unassigned_id)
        .await
        .failure(404, "NOT_FOUND");
    other
        .create_journal_entry(&json!({"terminal_id": t.terminal(0), "entry": {}}))
        .await
        .failure_for(404, "NOT_FOUND", "attributing to another license's terminal is refused");

    // The gateway goes away: the journal keeps working, even for a key never used before.
    let (_, fresh) = store.create_api_key(&t.creds.license_id, "fresh").await.unwrap();
    t.stack.stop_gateway().await;
    let gateway = format!("127.0.0.1:{}", t.stack.gateway_port);
    wait_until("the gateway to stop listening", Duration::from_secs(10), || async {
        std::net::TcpStream::connect(&gateway).is_err().then_some(())
    })
    .await;
    let fresh = t.api_as(fresh.expose());
    fresh
        .create_journal_entry(&json!({"entry": {"notes": "during outage"}}))
        .await
        .data();
    assert_eq!(ids(&fresh.journal("").await.data()).len(), 3);
    let deleted = fresh.delete_journal_entry(&attributed_id).await.data();
    assert_eq!(deleted["deleted"], true);
    // What does need the gateway says so: 502 GATEWAY_ERROR.
    t.anonymous()
        .token(&t.creds.terminals[0].key)
        .await
        .failure(502, "GATEWAY_ERROR");
    t.stack.stop().await;
}

#[tokio::test]
async fn rate_limits_per_tier_shared_across_instances_through_redis() {
    let (t, second_url, handle) = two_instances_on_redis(1).await;
    let store = &t.stack.store;
    let (_, key) = t.other_license(Tier::Free).await;

    let free = t.api_as(&key);
    let mut remaining = Vec::new();
    for i in 0..10 {
        let base = if i % 2 == 0 { &t.rest } else { &second_url };
        let r = free.clone().at(base).send(Method::GET, "/api/v1/journal", None).await;
        assert_eq!(r.status, 200, "request {i}: {}", r.body);
        let h = &r.headers;
        assert_eq!(h["x-ratelimit-limit"], "10");
        assert!(h.contains_key("x-ratelimit-reset"));
        remaining.push(h["x-ratelimit-remaining"].to_str().unwrap().parse::<u64>().unwrap());
    }
    assert_eq!(
        remaining,
        (0..10).rev().collect::<Vec<u64>>(),
        "one bucket shared by both instances"
    );
    for base in [&t.rest, &second_url] {
        let r = free.clone().at(base).send(Method::GET, "/api/v1/journal", None).await;
        assert_eq!(r.status, 429, "{}", r.body);
        let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=3600).contains(&retry));
        assert_eq!(r.headers["x-ratelimit-remaining"], "0");
        r.envelope().failure(429, "RATE_LIMITED");
    }
    // The demo (Pro) license has its own bucket.
    let r = t.api().send(Method::GET, "/api/v1/journal", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.headers["x-ratelimit-limit"], "60");

    // Revocation through the gateway reaches both instances at once, despite
    // their cached exchanges of the key.
    let (pro, master) = store.create_license("pro2", Tier::Pro).await.unwrap();
    let (k, secret) = store.create_api_key(&pro.id, "to revoke").await.unwrap();
    let revocable = t.api_as(secret.expose());
    for base in [&t.rest, &second_url] {
        revocable.clone().at(base).journal("").await.data_for(base);
    }
    t.gateway_as(master.expose()).revoke_api_key(&k.id).await.data();
    for base in [&t.rest, &second_url] {
        revocable
            .clone()
            .at(base)
            .journal("")
            .await
            .failure_for(401, "UNAUTHORIZED", base);
    }
    handle.stop(true).await;
    t.stack.stop().await;
}

#[tokio::test]
async fn indicators_are_computed_on_terminal_bars_and_match_core() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let input =
        json!({ "symbol": "EURUSD", "timeframe": "H1", "indicator": "RSI", "params": { "period": 14 }, "count": 50 });
    let d = t.tool("get_indicator", &input).await.data();
    assert_eq!(d["indicator"], "rsi");
    assert_eq!(d["times"].as_array().unwrap().len(), 50);
    let values: Vec<f64> = d["series"][0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(values.iter().all(|v| (0.0..=100.0).contains(v)));
    // The same bars through get_bars, computed with core directly, give the same values
    // (all but the still-forming last bar).
    let n = d["history_bars"].as_u64().unwrap();
    let bars = bars_of(
        &t.tool(
            "get_bars",
            &json!({ "symbol": "EURUSD", "timeframe": "H1", "count": n }),
        )
        .await
        .data(),
    );
    let params = [("period".to_owned(), 14.0)].into_iter().collect();
    let core = tradeterm_core::indicators::compute("rsi", &params, &bars).unwrap();
    let expected: Vec<f64> = core.series[0].values[bars.len() - 50..]
        .iter()
        .map(|v| v.unwrap())
        .collect();
    for i in 0..49 {
        // RSI is at most 100: 1e-11 relative is at most 1e-9 apart.
        assert_close(values[i], expected[i], 1e-11, &format!("value {i}"));
    }
    // Bad input is a clear 400.
    t.tool(
        "get_indicator",
        &json!({ "symbol": "EURUSD", "timeframe": "H1", "indicator": "nope" }),
    )
    .await
    .failure(400, "VALIDATION_ERROR")
    .mentions("sma");
    t.tool(
        "get_indicator",
        &json!({ "symbol": "EURUSD", "timeframe": "H1", "indicator": "rsi", "params": {"period": 0} }),
    )
    .await
    .failure(400, "VALIDATION_ERROR");
    t.stack.stop().await;
}

#[tokio::test]
async fn structure_detection_through_the_catalog() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let input = json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 600, "config": { "swing_length": 5 } });
    let d = t.tool("detect_structure", &input).await.data();
    let events = d["events"].as_array().unwrap();
    assert!(!events.is_empty());
    assert!(events.iter().any(|e| e["event"]["type"] == "swing"));
    for e in events {
        assert!(e["confirmed_time"].as_str().unwrap() >= e["time"].as_str().unwrap());
    }
    t.tool(
        "detect_structure",
        &json!({ "symbol": "EURUSD", "timeframe": "H1", "config": { "swing_length": 0 } }),
    )
    .await
    .failure(400, "VALIDATION_ERROR");
    t.stack.stop().await;
}

#[tokio::test]
async fn unknown_routes_and_tools_answer_not_found_in_the_envelope() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    // Path parameters arrive decoded; a named route and the generic tool route agree.
    let by_route = t.api().get("/api/v1/market/symbols/EUR%55SD").await.data();
    assert_eq!(by_route["name"], "EURUSD");
    let by_tool = t.tool("get_symbol_spec", &json!({ "symbol": "EURUSD" })).await.data();
    assert_eq!(by_tool, by_route);
    for path in [
        "/api/v1/nope",
        "/api/v1/positions/",
        "/api/v1/market/tick/EURUSD/extra",
        "/api/v1/tools/no_such_tool",
        "/api/v1/docs/assets/nope.js",
    ] {
        t.api()
            .get(path)
            .await
            .failure_for(404, "NOT_FOUND", format!("GET {path}"));
    }
    // A known path with another method: 405 and `Allow`.
    let r = t.api().send(Method::GET, "/api/v1/tools/get_tick", None).await;
    assert_eq!(r.headers["allow"], "POST");
    r.envelope().failure(405, "METHOD_NOT_ALLOWED");
    t.api()
        .post("/api/v1/tools/no_such_tool", &json!({}))
        .await
        .failure(404, "NOT_FOUND");
    t.api()
        .post("/api/v1/tools/get_tick/x", &json!({}))
        .await
        .failure(404, "NOT_FOUND");
    t.api()
        .get("/api/v1/market/tick/%FF")
        .await
        .failure(400, "VALIDATION_ERROR");
    t.stack.stop().await;
}

/// Forwards to the gateway but loses the answer of the first live order, as a
/// network failure between the gateway and the API would: the terminal
/// executed the order, the caller saw `DISPATCH_ERROR`.
#[derive(Debug)]
struct LosesFirstOrderAnswer {
    inner: tradeterm_gateway::Gateway,
    lost: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Dispatch for LosesFirstOrderAnswer {
    async fn execute(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: tradeterm_protocol::Command,
        timeout: Duration,
    ) -> Result<tradeterm_protocol::CommandResult, tradeterm_protocol::DispatchError> {
        let is_order = matches!(command, tradeterm_protocol::Command::PlaceOrder { .. });
        let result = self.inner.execute(license_id, terminal_id, command, timeout).await;
        if is_order && !self.lost.swap(true, std::sync::atomic::Ordering::SeqCst) {
            assert!(result.is_ok(), "the first order reached the terminal: {result:?}");
            return Err(tradeterm_protocol::DispatchError::Timeout(timeout));
        }
        result
    }

    async fn terminals(
        &self,
        license_id: &str,
    ) -> Result<Vec<tradeterm_protocol::TerminalStatus>, tradeterm_protocol::DispatchError> {
        self.inner.terminals(license_id).await
    }
}

#[tokio::test]
async fn a_retry_after_a_lost_answer_returns_the_first_fill_and_never_executes_twice() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let sim = &t.stack.simulators()[0];
    let dispatch = Arc::new(LosesFirstOrderAnswer {
        inner: t.stack.gateway.clone(),
        lost: std::sync::atomic::AtomicBool::new(false),
    });
    let (flaky_url, handle) = another_rest_server(&t, &tradeterm::Settings::default(), dispatch);

    let order =
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false, "comment": "lost.1" });
    let flaky = t.api().at(&flaky_url).idempotency_key("lost-answer-1");
    flaky.place_order(&order).await.failure(502, "DISPATCH_ERROR");
    let fills = || sim.deals().iter().filter(|d| d.comment == "lost.1").count();
    assert_eq!(fills(), 1, "the terminal executed the first attempt");
    // The unknown outcome was not recorded: the retry runs, the agent
    // recognises the key and answers with the first fill.
    let second = flaky.place_order(&order).await;
    let retried = second.clone().data();
    assert_eq!(retried["executed"], true);
    assert_eq!(fills(), 1, "the retry did not execute a second time");
    let deal = sim.deals().into_iter().find(|d| d.comment == "lost.1").unwrap();
    assert_eq!(retried["trade"]["deal"].as_u64(), Some(deal.ticket));
    // Now the outcome is recorded: a further retry is answered from the store.
    assert_eq!(flaky.place_order(&order).await, second);
    assert_eq!(fills(), 1);
    handle.stop(true).await;
    t.stack.stop().await;
}

/// A read of terminal data may start before its rate-limit count answers
/// (the caller had ample room left at its previous count); the answer still
/// waits for the count, so counting stays exact, and a call the count
/// refuses (over the limit through another instance, or revoked) returns
/// its refusal and none of the data.
#[tokio::test]
async fn reads_ahead_of_their_count_are_counted_and_refused_like_any_other() {
    // Two terminals: one for the reads, one whose key is rotated (which
    // disconnects its agent).
    let (t, second, handle) = two_instances_on_redis(2).await;
    let remaining = |r: &Reply| {
        r.headers["x-ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let tick = |api: &Api| {
        let api = api.clone();
        async move { api.send(Method::GET, "/api/v1/market/tick/EURUSD", None).await }
    };

    // The demo key (Pro, 60 per window): the first read waits for its
    // count, the next go ahead; every one answers with its exact count.
    let demo = t.api().on(&t.creds.terminals[0].id);
    let mut seen = Vec::new();
    for _ in 0..5 {
        let r = tick(&demo).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body["data"]["bid"].is_number(), "{}", r.body);
        seen.push(remaining(&r));
    }
    assert!(
        seen.windows(2).all(|w| w[1] + 1 == w[0]),
        "one count per read: {seen:?}"
    );

    // A session token whose terminal key is rotated: its next read goes
    // ahead (ample room) and is refused as revoked, with no data.
    let terminal = &t.creds.terminals[1];
    let token = t.anonymous().token(&terminal.key).await.data()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let session = t.api_as(&token).on(&terminal.id);
    for _ in 0..2 {
        let r = tick(&session).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    t.gateway_as(&t.creds.license_key)
        .rotate_terminal_key(&terminal.id)
        .await
        .data();
    let revoked = tick(&session).await;
    assert_eq!(revoked.status, 401, "{}", revoked.body);
    assert!(
        revoked.body.get("data").is_none(),
        "no quote for a revoked token: {}",
        revoked.body
    );

    // The demo key's room is used up through the second instance while the
    // first still believes plenty remains: its next read goes ahead, and
    // the count refuses it with 429 and no data.
    let left = remaining(&tick(&demo).await);
    assert!(left > 10, "{left}");
    let other = demo.clone().at(&second);
    for _ in 0..left {
        assert_eq!(tick(&other).await.status, 200);
    }
    let refused = tick(&demo).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(remaining(&refused), 0);
    assert!(refused.headers.contains_key("retry-after"));
    assert!(
        refused.body.get("data").is_none(),
        "no quote in a refusal: {}",
        refused.body
    );
    refused.envelope().failure(429, "RATE_LIMITED");
    handle.stop(true).await;
    t.stack.stop().await;
}

/// Under steady traffic, reads of a credential with ample room (enterprise
/// tier) do not wait for Redis: their counts follow in batches, and every
/// read is counted. A revoked key is then refused at once on both instances.
#[tokio::test]
async fn reads_counted_behind_their_work_are_all_counted_and_revocation_still_stops_them() {
    let (t, second, handle, limiter) = two_instances_on_redis_with_limiter(1).await;
    for _ in 0..250 {
        if limiter.hearing_revocations() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(limiter.hearing_revocations(), "the second instance hears revocations");
    let (key_id, key) = t.tier_key(Tier::Enterprise).await;
    let first = t.api_as(&key);
    let other = first.clone().at(&second);
    let tick = |api: &Api| {
        let api = api.clone();
        async move { api.send(Method::GET, "/api/v1/market/tick/EURUSD", None).await }
    };
    let counter = async || {
        let window = chrono::Utc::now().timestamp_millis() as u64 / 3_600_000;
        let pool = deadpool_redis::Config::from_url("redis://127.0.0.1:6379")
            .create_pool(Some(deadpool_redis::Runtime::Tokio1))
            .unwrap();
        let mut c = pool.get().await.unwrap();
        deadpool_redis::redis::cmd("GET")
            .arg(format!("tt:rl:rest:{}:{window}", t.creds.license_id))
            .query_async::<Option<u64>>(&mut c)
            .await
            .unwrap()
            .unwrap_or(0)
    };
    let before = counter().await;
    let calls_before = limiter.redis_calls();
    for i in 0..60 {
        let r = tick(if i % 2 == 0 { &first } else { &other }).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body["data"]["bid"].is_number(), "{}", r.body);
        assert_eq!(r.headers["x-ratelimit-limit"], "1000");
    }
    // The last counts reach Redis within a flush (10 ms) of their reads.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(counter().await - before, 60, "every read counted once");
    // The second instance's 30 reads took fewer Redis calls than reads: all
    // but the first went behind their work, their counts in batches.
    let calls = limiter.redis_calls() - calls_before;
    assert!(calls < 30, "{calls} Redis calls for 30 reads");

    // Revoked through the gateway's dashboard route while reads go on. Both
    // instances run in this process, so both hear of it before the route
    // answers (`revoked_here`; another process hears it on `tt:revoked`,
    // which the scale test times): the very next read is refused on each,
    // and stays refused.
    t.gateway_as(&t.creds.license_key).revoke_api_key(&key_id).await.data();
    for _ in 0..3 {
        for api in [&first, &other] {
            let r = tick(api).await;
            assert_eq!(r.status, 401, "{}", r.body);
            assert!(r.body.get("data").is_none(), "{}", r.body);
        }
    }
    handle.stop(true).await;
    t.stack.stop().await;
}

/// A session token exchanged for a terminal key stops working as soon as the
/// key is rotated: through the Redis marker when Redis is configured (the
/// store is then not asked), through the store otherwise.
#[tokio::test]
async fn rotating_a_terminal_key_revokes_its_session_tokens() {
    for redis in [false, true] {
        let t = spawn(Options {
            sims: 1,
            redis,
            ..Options::default()
        })
        .await;
        let token_for = |key: String| {
            let api = t.anonymous();
            async move {
                let answer = api.token(&key).await.data();
                answer["token"].as_str().unwrap().to_owned()
            }
        };
        let case = format!("redis {redis}");
        let terminal = &t.creds.terminals[0];
        let old_token = token_for(terminal.key.clone()).await;
        t.api_as(&old_token).journal("").await.data_for(&case);

        let rotated = t
            .gateway_as(&t.creds.license_key)
            .rotate_terminal_key(&terminal.id)
            .await
            .data();
        let new_key = rotated["terminal_key"].as_str().unwrap().to_owned();

        t.api_as(&old_token)
            .journal("")
            .await
            .failure_for(401, "UNAUTHORIZED", &case)
            .mentions("revoked or rotated");
        // The REST API key of the license is not affected, and the new
        // terminal key gives a working token.
        t.api().journal("").await.data();
        let new_token = token_for(new_key).await;
        t.api_as(&new_token).journal("").await.data_for(&case);
        t.stack.stop().await;
    }
}
