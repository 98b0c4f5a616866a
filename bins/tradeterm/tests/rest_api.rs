//! The REST API against the real stack: gateway, simulated terminals over the
//! agent protocol, SQLite, and (for rate limits) the machine's Redis.

mod common;

use std::time::Duration;

use base64::Engine;
use common::{Options, spawn};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tradeterm_store::Tier;

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

#[tokio::test]
async fn authentication_and_the_jwt_attack_set() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let path = "/api/v1/account/info";
    // Missing, malformed, unknown.
    let r = t.http.get(format!("{}{path}", t.rest)).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    for bad in ["svc_api_unknown", "not-a-token", "a.b.c"] {
        let (s, b, _) = t.get_as(bad, path, None).await;
        assert_eq!((s, b["error"]["code"].as_str()), (401, Some("UNAUTHORIZED")), "{bad}");
    }
    // The demo API key works (one terminal connected: no X-Terminal-Id needed).
    let (s, b, _) = t.get(path, None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["data"]["trade_mode"], "demo");

    // A JWT from POST /api/token (terminal key) works as a bearer token.
    let r = t
        .http
        .post(format!("{}/api/token", t.rest))
        .json(&json!({ "license_key": t.creds.terminals[0].key }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let token = r.json::<Value>().await.unwrap()["token"].as_str().unwrap().to_owned();
    let (s, _, _) = t.get_as(&token, path, None).await;
    assert_eq!(s, 200);
    // The master license key is not a REST credential.
    let r = t
        .http
        .post(format!("{}/api/token", t.rest))
        .json(&json!({ "license_key": t.creds.license_key }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // Attack set, each built from the valid token.
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[1])
            .unwrap(),
    )
    .unwrap();
    let private = std::fs::read(t.dir.path().join("keys/jwt-private.pem")).unwrap();
    let public = std::fs::read(t.dir.path().join("keys/jwt-public.pem")).unwrap();
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
    let read_only = sign(&p);
    let (s, b) = t
        .send_as(
            &read_only,
            reqwest::Method::POST,
            "/api/v1/tools/list_indicators",
            None,
            Some(&json!({})),
            None,
        )
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (403, Some("FORBIDDEN")), "{b}");
    let (s, _, _) = t.get_as(&read_only, path, None).await;
    assert_eq!(s, 200, "read tools still work");

    for (i, a) in attacks.iter().enumerate() {
        let (s, b, _) = t.get_as(a, path, None).await;
        assert_eq!(s, 401, "attack {i} got {s}: {b}");
        assert_eq!(b["error"]["code"], "UNAUTHORIZED");
    }
    t.stack.stop().await;
}

#[tokio::test]
async fn terminal_targeting_and_cross_license_isolation() {
    let t = spawn(Options::default()).await;
    let (s, b, _) = t.get("/api/v1/market/tick/EURUSD", None).await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"]["code"], "TERMINAL_ID_REQUIRED");

    let (s, b, _) = t.get("/api/v1/market/tick/EURUSD", Some(t.terminal(1))).await;
    assert_eq!(s, 200, "{b}");
    let tick = &b["data"];
    assert_eq!(tick["symbol"], "EURUSD");
    assert!(tick["ask"].as_f64().unwrap() > tick["bid"].as_f64().unwrap());
    assert!(tick["time"].as_str().unwrap().ends_with('Z'));

    let (s, b, _) = t.get("/api/v1/terminals", None).await;
    assert_eq!(s, 200);
    let list = b["data"]["terminals"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|x| x["connected"] == true));

    // Another license: its key cannot reach this license's terminals, and the
    // answer is the same as for a terminal that does not exist.
    let store = &t.stack.store;
    let (other, _) = store.create_license("other", Tier::Pro).await.unwrap();
    let (_, other_key) = store.create_api_key(&other.id, "k").await.unwrap();
    let (_, other_terminal_key) = store.create_terminal(&other.id, "never connected").await.unwrap();
    let _ = other_terminal_key;
    let (s1, b1, _) = t
        .get_as(other_key.expose(), "/api/v1/market/tick/EURUSD", Some(t.terminal(0)))
        .await;
    let (s2, b2, _) = t
        .get_as(
            other_key.expose(),
            "/api/v1/market/tick/EURUSD",
            Some("term_doesnotexist"),
        )
        .await;
    assert_eq!(s1, 404);
    assert_eq!(
        (s1, &b1),
        (s2, &b2),
        "another license's terminal must look like a missing one"
    );
    let (s, b, _) = t.get_as(other_key.expose(), "/api/v1/terminals", None).await;
    assert_eq!(s, 200);
    assert!(
        b["data"]["terminals"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["connected"] == false)
    );
    // The other license's only terminal is targeted without the header even
    // though it is offline (the spec's fallbacks then apply): here, 502.
    let (s, b, _) = t.get_as(other_key.expose(), "/api/v1/account/info", None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (502, Some("DISPATCH_ERROR")), "{b}");
    // With two terminals, none connected: MISSING_TERMINAL.
    store.create_terminal(&other.id, "also offline").await.unwrap();
    let (s, b, _) = t.get_as(other_key.expose(), "/api/v1/account/info", None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("MISSING_TERMINAL")), "{b}");
    assert_eq!(
        b["error"]["message"],
        "X-Terminal-Id header required (no terminal of this license is connected)"
    );
    // A terminal of this license that is not connected: 502 DISPATCH_ERROR.
    let (offline, _) = store.create_terminal(&t.creds.license_id, "offline").await.unwrap();
    let (s, b, _) = t.get("/api/v1/account/info", Some(&offline.id)).await;
    assert_eq!((s, b["error"]["code"].as_str()), (502, Some("DISPATCH_ERROR")), "{b}");
    // Bad header values are refused cleanly.
    let (s, b, _) = t.get("/api/v1/account/info", Some("../../etc")).await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")));
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
    let (s, b) = t.post("/api/v1/orders", None, &order, None).await;
    assert_eq!(s, 200, "{b}");
    let d = &b["data"];
    assert_eq!(d["dry_run"], true);
    assert_eq!(d["executed"], false);
    assert!(d["margin_required"].as_f64().unwrap() > 0.0);
    assert!(d["free_margin_after"].as_f64().unwrap() < d["free_margin"].as_f64().unwrap());
    assert!(d["stop_loss"]["money"].as_f64().unwrap() < 0.0);
    assert!(d["take_profit"]["money"].as_f64().unwrap() > 0.0);
    assert!(d["reward_to_risk"].as_f64().unwrap() > 1.0);
    // Invalid orders fail closed with a reason.
    let (s, b) = t
        .post(
            "/api/v1/orders",
            None,
            &json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.001}),
            None,
        )
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (422, Some("ORDER_REJECTED")), "{b}");
    assert_eq!(b["error"]["retcode"], "invalid_volume");
    let wrong_side = json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "stop_loss": tick.ask + 0.01});
    let (s, b) = t.post("/api/v1/orders", None, &wrong_side, None).await;
    assert_eq!((s, b["error"]["retcode"].as_str()), (422, Some("invalid_stops")), "{b}");
    let (s, b) = t
        .post(
            "/api/v1/orders",
            None,
            &json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "bogus": 1}),
            None,
        )
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{b}");
    let r = t
        .http
        .post(format!("{}/api/v1/orders", t.rest))
        .bearer_auth(&t.creds.api_key)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Live call while the terminal's allow-trading input is off.
    let mut live = order.clone();
    live["dry_run"] = json!(false);
    let (s, b) = t.post("/api/v1/orders", None, &live, None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (403, Some("TRADING_DISABLED")), "{b}");
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
    let (s1, b1) = t.post("/api/v1/orders", None, &order, Some("order-key-1")).await;
    assert_eq!(s1, 200, "{b1}");
    assert_eq!(b1["data"]["executed"], true);
    let (s2, b2) = t.post("/api/v1/orders", None, &order, Some("order-key-1")).await;
    assert_eq!((s2, &b2), (s1, &b1), "a retry returns the first outcome");
    let fills = sim.deals().iter().filter(|d| d.comment == "idem.1").count();
    assert_eq!(fills, 1, "the same Idempotency-Key executes once");
    // Same key, other request: conflict.
    let mut other = order.clone();
    other["volume"] = json!(0.2);
    let (s, b) = t.post("/api/v1/orders", None, &other, Some("order-key-1")).await;
    assert_eq!((s, b["error"]["code"].as_str()), (409, Some("IDEMPOTENCY_CONFLICT")));

    // Positions: list, one, modify (dry), close (live, partial).
    let ticket = b1["data"]["trade"]["position"].as_u64().unwrap();
    let (s, b, _) = t.get(&format!("/api/v1/positions/{ticket}"), None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["data"]["comment"], "idem.1");
    let (s, b) = t
        .post(
            &format!("/api/v1/positions/{ticket}/close"),
            None,
            &json!({ "volume": 0.05, "dry_run": false }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["data"]["volume_remaining"], 0.05);
    let (s, b) = t
        .post(&format!("/api/v1/positions/{ticket}/reverse"), None, &json!({}), None)
        .await;
    assert_eq!((s, b["data"]["dry_run"].as_bool()), (200, Some(true)), "{b}");
    let (s, _) = t.post("/api/v1/positions/999999/close", None, &json!({}), None).await;
    assert_eq!(s, 404);

    // A Free-tier license: dry runs work, live calls are TRADING_DISABLED.
    let free_key = t.free_tier_key().await;
    let (s, b) = t
        .send_as(
            &free_key,
            reqwest::Method::POST,
            "/api/v1/orders",
            None,
            Some(&json!({"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1})),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = t
        .send_as(
            &free_key,
            reqwest::Method::POST,
            "/api/v1/orders",
            None,
            Some(&order),
            None,
        )
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (403, Some("TRADING_DISABLED")), "{b}");
    t.stack.stop().await;
}

#[tokio::test]
async fn journal_is_license_scoped_and_survives_a_gateway_outage() {
    let t = spawn(Options::default()).await;
    let (s, b) = t
        .post(
            "/api/v1/journal",
            None,
            &json!({ "entry": { "symbol": "EURUSD", "notes": "no terminal" } }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let unassigned_id = b["data"]["id"].as_str().unwrap().to_owned();
    let (s, b) = t
        .post(
            "/api/v1/journal",
            None,
            &json!({ "terminal_id": t.terminal(0), "entry": { "setup": "breakout", "tags": ["a"] } }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let attributed_id = b["data"]["id"].as_str().unwrap().to_owned();
    let ids = |b: &Value| -> Vec<String> {
        b["data"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, b, _) = t.get("/api/v1/journal", None).await;
    assert_eq!(ids(&b), vec![attributed_id.clone(), unassigned_id.clone()]);
    let (_, b, _) = t.get("/api/v1/journal?terminal_id=all", None).await;
    assert_eq!(ids(&b).len(), 2);
    let (_, b, _) = t.get("/api/v1/journal?terminal_id=unassigned", None).await;
    assert_eq!(ids(&b), vec![unassigned_id.clone()]);
    let (_, b, _) = t
        .get(&format!("/api/v1/journal?terminal_id={}", t.terminal(0)), None)
        .await;
    assert_eq!(ids(&b), vec![attributed_id.clone()]);
    let (s, b) = t
        .send_as(
            &t.creds.api_key,
            reqwest::Method::PUT,
            &format!("/api/v1/journal/{unassigned_id}"),
            None,
            Some(&json!({"entry": {"notes": "edited"}})),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["data"]["entry"]["notes"], "edited");

    // Another license sees nothing and changes nothing.
    let store = &t.stack.store;
    let (other, _) = store.create_license("other", Tier::Pro).await.unwrap();
    let (_, other_key) = store.create_api_key(&other.id, "k").await.unwrap();
    let (_, b, _) = t.get_as(other_key.expose(), "/api/v1/journal", None).await;
    assert!(ids(&b).is_empty());
    let (s, _, _) = t
        .get_as(other_key.expose(), &format!("/api/v1/journal/{unassigned_id}"), None)
        .await;
    assert_eq!(s, 404);
    let (s, _) = t
        .send_as(
            other_key.expose(),
            reqwest::Method::DELETE,
            &format!("/api/v1/journal/{unassigned_id}"),
            None,
            None,
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = t
        .send_as(
            other_key.expose(),
            reqwest::Method::POST,
            "/api/v1/journal",
            None,
            Some(&json!({"terminal_id": t.terminal(0), "entry": {}})),
            None,
        )
        .await;
    assert_eq!(s, 404, "attributing to another license's terminal is refused");

    // The gateway goes away: the journal keeps working, even for a key never used before.
    let (_, fresh) = store.create_api_key(&t.creds.license_id, "fresh").await.unwrap();
    t.stack.stop_gateway().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (s, b) = t
        .send_as(
            fresh.expose(),
            reqwest::Method::POST,
            "/api/v1/journal",
            None,
            Some(&json!({"entry": {"notes": "during outage"}})),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let (s, b, _) = t.get_as(fresh.expose(), "/api/v1/journal", None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b).len(), 3);
    let (s, b) = t
        .send_as(
            fresh.expose(),
            reqwest::Method::DELETE,
            &format!("/api/v1/journal/{attributed_id}"),
            None,
            None,
            None,
        )
        .await;
    assert_eq!((s, b["data"]["deleted"].as_bool()), (200, Some(true)));
    // What does need the gateway says so: 502 GATEWAY_ERROR.
    let r = t
        .http
        .post(format!("{}/api/token", t.rest))
        .json(&json!({ "license_key": t.creds.terminals[0].key }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "GATEWAY_ERROR");
    t.stack.stop().await;
}

#[tokio::test]
async fn rate_limits_per_tier_shared_across_instances_through_redis() {
    // An hour-long window so the test never straddles a window boundary.
    let t = spawn(Options {
        sims: 1,
        redis: true,
        window_ms: 3_600_000,
        ..Options::default()
    })
    .await;
    let store = &t.stack.store;
    let (free, _) = store.create_license("free", Tier::Free).await.unwrap();
    let (_, key) = store.create_api_key(&free.id, "k").await.unwrap();

    // A second API instance sharing the same Redis and store.
    let settings = tradeterm::Settings {
        keyvalue_url: Some("redis://127.0.0.1:6379".into()),
        api_rate_limit_window_ms: 3_600_000,
        ..tradeterm::Settings::default()
    };
    let paths = tradeterm::keys::KeyPaths {
        private: t.dir.path().join("keys/jwt-private.pem"),
        public: t.dir.path().join("keys/jwt-public.pem"),
    };
    let services = settings
        .services(std::sync::Arc::new(t.stack.gateway.clone()), store.clone())
        .unwrap();
    let second = tradeterm_rest::RestServer::build(
        tradeterm_rest::AppState::new(
            tradeterm_rest::RestSettings::default(),
            services,
            tradeterm::keys::verifier(&settings, &paths).unwrap(),
            tradeterm_protocol::http_client::GatewayClient::new(&t.gateway).unwrap(),
        ),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    )
    .unwrap();
    let second_url = format!("http://127.0.0.1:{}", second.port());
    let handle = second.handle();
    tokio::spawn(second.run_until_stopped());

    let mut remaining = Vec::new();
    for i in 0..10 {
        let base = if i % 2 == 0 { &t.rest } else { &second_url };
        let r = t
            .http
            .get(format!("{base}/api/v1/journal"))
            .bearer_auth(key.expose())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "request {i}");
        let h = r.headers();
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
        let r = t
            .http
            .get(format!("{base}/api/v1/journal"))
            .bearer_auth(key.expose())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 429);
        let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=3600).contains(&retry));
        assert_eq!(r.headers()["x-ratelimit-remaining"], "0");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "RATE_LIMITED");
    }
    // The demo (Pro) license has its own bucket.
    let (s, _, h) = t.get("/api/v1/journal", None).await;
    assert_eq!(s, 200);
    assert_eq!(h["x-ratelimit-limit"], "60");

    // Revocation through the gateway reaches both instances at once, despite
    // their cached exchanges of the key.
    let (pro, master) = store.create_license("pro2", Tier::Pro).await.unwrap();
    let (k, secret) = store.create_api_key(&pro.id, "to revoke").await.unwrap();
    for base in [&t.rest, &second_url] {
        let r = t
            .http
            .get(format!("{base}/api/v1/journal"))
            .bearer_auth(secret.expose())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let r = t
        .http
        .delete(format!("{}/api/dashboard/api-keys?id={}", t.gateway, k.id))
        .bearer_auth(master.expose())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    for base in [&t.rest, &second_url] {
        let r = t
            .http
            .get(format!("{base}/api/v1/journal"))
            .bearer_auth(secret.expose())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{base}");
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
    let (s, b) = t.post("/api/v1/tools/get_indicator", None, &input, None).await;
    assert_eq!(s, 200, "{b}");
    let d = &b["data"];
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
    let (s, bars) = t
        .post(
            "/api/v1/tools/get_bars",
            None,
            &json!({ "symbol": "EURUSD", "timeframe": "H1", "count": n }),
            None,
        )
        .await;
    assert_eq!(s, 200);
    let bars: Vec<tradeterm_core::Bar> = bars["data"]["bars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| tradeterm_core::Bar {
            time: tradeterm_core::time::parse_iso(b["time"].as_str().unwrap()).unwrap(),
            open: b["open"].as_f64().unwrap(),
            high: b["high"].as_f64().unwrap(),
            low: b["low"].as_f64().unwrap(),
            close: b["close"].as_f64().unwrap(),
            volume: b["volume"].as_f64().unwrap(),
        })
        .collect();
    let params = [("period".to_owned(), 14.0)].into_iter().collect();
    let core = tradeterm_core::indicators::compute("rsi", &params, &bars).unwrap();
    let expected: Vec<f64> = core.series[0].values[bars.len() - 50..]
        .iter()
        .map(|v| v.unwrap())
        .collect();
    for i in 0..49 {
        assert!(
            (values[i] - expected[i]).abs() < 1e-9,
            "value {i}: {} vs {}",
            values[i],
            expected[i]
        );
    }
    // Bad input is a clear 400.
    let (s, b) = t
        .post(
            "/api/v1/tools/get_indicator",
            None,
            &json!({ "symbol": "EURUSD", "timeframe": "H1", "indicator": "nope" }),
            None,
        )
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")));
    assert!(b["error"]["message"].as_str().unwrap().contains("sma"));
    let (s, _) = t
        .post(
            "/api/v1/tools/get_indicator",
            None,
            &json!({ "symbol": "EURUSD", "timeframe": "H1", "indicator": "rsi", "params": {"period": 0} }),
            None,
        )
        .await;
    assert_eq!(s, 400);
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
    let (s, b) = t.post("/api/v1/tools/detect_structure", None, &input, None).await;
    assert_eq!(s, 200, "{b}");
    let events = b["data"]["events"].as_array().unwrap();
    assert!(!events.is_empty());
    assert!(events.iter().any(|e| e["event"]["type"] == "swing"));
    for e in events {
        assert!(e["confirmed_time"].as_str().unwrap() >= e["time"].as_str().unwrap());
    }
    let (s, b) = t
        .post(
            "/api/v1/tools/detect_structure",
            None,
            &json!({ "symbol": "EURUSD", "timeframe": "H1", "config": { "swing_length": 0 } }),
            None,
        )
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")));
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
    let (s, by_route, _) = t.get("/api/v1/market/symbols/EUR%55SD", None).await;
    assert_eq!(s, 200, "{by_route}");
    assert_eq!(by_route["data"]["name"], "EURUSD");
    let (s, by_tool) = t
        .post(
            "/api/v1/tools/get_symbol_spec",
            None,
            &json!({ "symbol": "EURUSD" }),
            None,
        )
        .await;
    assert_eq!((s, &by_tool), (200, &by_route));
    for path in [
        "/api/v1/nope",
        "/api/v1/positions/",
        "/api/v1/market/tick/EURUSD/extra",
        "/api/v1/tools/no_such_tool",
        "/api/v1/docs/assets/nope.js",
    ] {
        let (s, b, _) = t.get(path, None).await;
        assert_eq!(
            (s, b["error"]["code"].as_str()),
            (404, Some("NOT_FOUND")),
            "GET {path}: {b}"
        );
    }
    // A known path with another method: 405 and `Allow`.
    let (s, b, headers) = t.get("/api/v1/tools/get_tick", None).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (405, Some("METHOD_NOT_ALLOWED")),
        "{b}"
    );
    assert_eq!(headers["allow"], "POST");
    let (s, b) = t.post("/api/v1/tools/no_such_tool", None, &json!({}), None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (404, Some("NOT_FOUND")), "{b}");
    let (s, b) = t.post("/api/v1/tools/get_tick/x", None, &json!({}), None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (404, Some("NOT_FOUND")), "{b}");
    let (s, b, _) = t.get("/api/v1/market/tick/%FF", None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{b}");
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
impl tradeterm_protocol::Dispatch for LosesFirstOrderAnswer {
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
    let settings = tradeterm::Settings::default();
    let paths = tradeterm::keys::KeyPaths {
        private: t.dir.path().join("keys/jwt-private.pem"),
        public: t.dir.path().join("keys/jwt-public.pem"),
    };
    let dispatch = std::sync::Arc::new(LosesFirstOrderAnswer {
        inner: t.stack.gateway.clone(),
        lost: std::sync::atomic::AtomicBool::new(false),
    });
    let services = settings.services(dispatch, t.stack.store.clone()).unwrap();
    let flaky = tradeterm_rest::RestServer::build(
        tradeterm_rest::AppState::new(
            tradeterm_rest::RestSettings::default(),
            services,
            tradeterm::keys::verifier(&settings, &paths).unwrap(),
            tradeterm_protocol::http_client::GatewayClient::new(&t.gateway).unwrap(),
        ),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    )
    .unwrap();
    let flaky_url = format!("http://127.0.0.1:{}", flaky.port());
    let handle = flaky.handle();
    tokio::spawn(flaky.run_until_stopped());

    let order =
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false, "comment": "lost.1" });
    let send = async || {
        let r = t
            .http
            .post(format!("{flaky_url}/api/v1/orders"))
            .bearer_auth(&t.creds.api_key)
            .header("Idempotency-Key", "lost-answer-1")
            .json(&order)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    };
    let (s1, b1) = send().await;
    assert_eq!(
        (s1, b1["error"]["code"].as_str()),
        (502, Some("DISPATCH_ERROR")),
        "{b1}"
    );
    let fills = || sim.deals().iter().filter(|d| d.comment == "lost.1").count();
    assert_eq!(fills(), 1, "the terminal executed the first attempt");
    // The unknown outcome was not recorded: the retry runs, the agent
    // recognises the key and answers with the first fill.
    let (s2, b2) = send().await;
    assert_eq!(s2, 200, "{b2}");
    assert_eq!(b2["data"]["executed"], true);
    assert_eq!(fills(), 1, "the retry did not execute a second time");
    let deal = sim.deals().into_iter().find(|d| d.comment == "lost.1").unwrap();
    assert_eq!(b2["data"]["trade"]["deal"].as_u64(), Some(deal.ticket));
    // Now the outcome is recorded: a further retry is answered from the store.
    let (s3, b3) = send().await;
    assert_eq!((s3, &b3), (s2, &b2));
    assert_eq!(fills(), 1);
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
            let (http, rest) = (t.http.clone(), t.rest.clone());
            async move {
                let r = http
                    .post(format!("{rest}/api/token"))
                    .json(&json!({ "license_key": key }))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                r.json::<Value>().await.unwrap()["token"].as_str().unwrap().to_owned()
            }
        };
        let terminal = &t.creds.terminals[0];
        let old_token = token_for(terminal.key.clone()).await;
        let (s, b, _) = t.get_as(&old_token, "/api/v1/journal", None).await;
        assert_eq!(s, 200, "redis {redis}: {b}");

        let r = t
            .http
            .post(format!(
                "{}/api/dashboard/terminals/{}/rotate-key",
                t.gateway, terminal.id
            ))
            .bearer_auth(&t.creds.license_key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let new_key = r.json::<Value>().await.unwrap()["data"]["terminal_key"]
            .as_str()
            .unwrap()
            .to_owned();

        let (s, b, _) = t.get_as(&old_token, "/api/v1/journal", None).await;
        assert_eq!(
            (s, b["error"]["code"].as_str()),
            (401, Some("UNAUTHORIZED")),
            "redis {redis}: {b}"
        );
        let msg = b["error"]["message"].as_str().unwrap();
        assert!(msg.contains("revoked or rotated"), "{msg}");
        // The REST API key of the license is not affected, and the new
        // terminal key gives a working token.
        let (s, _, _) = t.get("/api/v1/journal", None).await;
        assert_eq!(s, 200);
        let new_token = token_for(new_key).await;
        let (s, b, _) = t.get_as(&new_token, "/api/v1/journal", None).await;
        assert_eq!(s, 200, "redis {redis}: {b}");
        t.stack.stop().await;
    }
}
