//! Scoped REST API keys (issue 31, item 1) over the single-node stack: a
//! key scoped to one terminal, `EURUSD` and 0.1 lots is refused (403
//! `FORBIDDEN`, naming the rule) on another terminal, another symbol and
//! 0.2 lots, for dry runs as for live calls, while what it may do works;
//! a dry-run-only key's dry run says what a live call would be refused for;
//! open-volume and daily limits hold; a key used from outside its networks
//! and an expired key are refused; a malformed scope is refused at creation.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Expect, Options, TestStack, spawn};

/// Creates an API key with `scope` through the gateway's management route: (the key's record, its secret).
async fn create(t: &TestStack, scope: Value) -> (Value, String) {
    let reply = t
        .gateway_as(&t.creds.license_key)
        .post("/api/dashboard/api-keys", &json!({ "label": "scoped", "scope": scope }))
        .await
        .data();
    let secret = reply["api_key"].as_str().expect("the secret, once").to_owned();
    (reply["key"].clone(), secret)
}

/// Revokes a key (the license keeps at most 5 active).
async fn revoke(t: &TestStack, record: &Value) {
    let id = record["id"].as_str().unwrap();
    let r = t
        .gateway_as(&t.creds.license_key)
        .send(
            reqwest::Method::DELETE,
            &format!("/api/dashboard/api-keys?id={id}"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "revoking {id}");
}

fn order(symbol: &str, volume: f64, live: bool) -> Value {
    json!({ "symbol": symbol, "order_type": "BUY", "volume": volume, "dry_run": !live })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scoped_key_may_do_what_its_scope_says_and_nothing_else() {
    let t = spawn(Options {
        sims: 2,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let (t0, t1) = (t.creds.terminals[0].id.clone(), t.creds.terminals[1].id.clone());
    let scope = json!({ "terminals": [t0], "symbols": ["EURUSD"], "max_volume_per_order": 0.1 });
    let (record, key) = create(&t, scope.clone()).await;
    assert_eq!(record["permissions"], scope, "the scope is shown with the key");
    assert!(
        record.get("api_key").is_none() && !record.to_string().contains(&key),
        "never the secret"
    );
    let listed = t
        .gateway_as(&t.creds.license_key)
        .get("/api/dashboard/api-keys")
        .await
        .data();
    let shown = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == record["id"])
        .unwrap();
    assert_eq!(shown["permissions"], scope);

    let api = t.api_as(&key).on(&t0);
    // What the scope allows: a dry run and a live order of 0.1 EURUSD, then its close.
    api.tool("place_order", &order("EURUSD", 0.1, false)).await.data();
    let live = api.tool("place_order", &order("EURUSD", 0.1, true)).await.data();
    let ticket = live["trade"]["position"]
        .as_u64()
        .filter(|t| *t != 0)
        .expect("a position");
    // Refused by each rule, dry run or live, naming it.
    for (input, rule) in [
        (order("EURUSD", 0.2, false), "max_volume_per_order"),
        (order("EURUSD", 0.2, true), "max_volume_per_order"),
        (order("GBPUSD", 0.1, false), "symbols"),
        (order("GBPUSD", 0.1, true), "symbols"),
    ] {
        api.tool("place_order", &input)
            .await
            .failure(403, "FORBIDDEN")
            .mentions(&format!("`{rule}`"));
    }
    // Reads are scoped too: another symbol's quote, another terminal.
    api.tool("get_tick", &json!({ "symbol": "USDJPY" }))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`symbols`");
    t.api_as(&key)
        .on(&t1)
        .tool("get_account_info", &json!({}))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`terminals`");
    // Close-all needs a symbol filter within the scope.
    api.tool("close_all_positions", &json!({}))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`symbols`");
    // The position of an allowed symbol is closed by ticket.
    api.tool("close_position", &json!({ "ticket": ticket, "dry_run": false }))
        .await
        .data();
    // The demo key (unscoped) is untouched by all this.
    t.api()
        .on(&t1)
        .tool("place_order", &order("GBPUSD", 0.2, false))
        .await
        .data();

    // Dry-run only: the live call is refused, the dry run says what a live one would meet.
    revoke(&t, &record).await;
    let (dry_record, dry_only) = create(&t, json!({ "dry_run_only": true })).await;
    let d = t.api_as(&dry_only).on(&t0);
    d.tool("place_order", &order("EURUSD", 0.1, true))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`dry_run_only`");
    let dry = d.tool("place_order", &order("EURUSD", 0.1, false)).await.data();
    let notes = dry["notes"].to_string();
    assert!(
        notes.contains("a live call would be") && notes.contains("dry_run_only"),
        "{dry:#}"
    );

    // Open volume per symbol and live orders per day.
    revoke(&t, &dry_record).await;
    let (capped_record, capped) = create(
        &t,
        json!({ "max_open_volume_per_symbol": 0.15, "max_live_orders_per_day": 2 }),
    )
    .await;
    let c = t.api_as(&capped).on(&t0);
    let first = c.tool("place_order", &order("XAUUSD", 0.1, true)).await.data();
    c.tool("place_order", &order("XAUUSD", 0.1, true))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`max_open_volume_per_symbol`");
    c.tool("place_order", &order("EURUSD", 0.1, true)).await.data();
    // The open-volume refusal was before sending: two orders were sent, the limit is reached.
    c.tool("place_order", &order("GBPUSD", 0.01, true))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`max_live_orders_per_day`");
    let dry = c.tool("place_order", &order("GBPUSD", 0.01, false)).await.data();
    assert!(dry["notes"].to_string().contains("max_live_orders_per_day"), "{dry:#}");
    assert!(first["trade"]["position"].as_u64().is_some());

    // Source networks: the test's address is loopback.
    revoke(&t, &capped_record).await;
    let (elsewhere_record, elsewhere) = create(&t, json!({ "networks": ["10.0.0.0/8", "2001:db8::/32"] })).await;
    t.api_as(&elsewhere)
        .on(&t0)
        .tool("get_account_info", &json!({}))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`networks`");
    let (here_record, here) = create(&t, json!({ "networks": ["127.0.0.0/8", "::1"] })).await;
    t.api_as(&here)
        .on(&t0)
        .tool("get_account_info", &json!({}))
        .await
        .data();
    revoke(&t, &elsewhere_record).await;
    revoke(&t, &here_record).await;

    // Expiry: works until its time, refused after.
    let soon = chrono::Utc::now().timestamp_millis() + 1_500;
    let (_, expiring) = create(&t, json!({ "expires_at": soon })).await;
    t.api_as(&expiring)
        .on(&t0)
        .tool("get_account_info", &json!({}))
        .await
        .data();
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let r = t.api_as(&expiring).on(&t0).tool("get_account_info", &json!({})).await;
    let failure = r.expect_err("an expired key is refused");
    assert!(matches!(failure.status, 401 | 403), "{failure:?}");
    failure.mentions("expired");

    // A malformed scope is refused at creation, naming the field; nothing is created.
    let before = t
        .gateway_as(&t.creds.license_key)
        .get("/api/dashboard/api-keys")
        .await
        .data();
    for (scope, field) in [
        (json!({ "symbols": ["EUR USD"] }), "symbols"),
        (json!({ "networks": ["10.0.0.0/33"] }), "networks"),
        (json!({ "max_volume_per_order": -1 }), "max_volume_per_order"),
        (json!({ "expires_at": 1 }), "expires_at"),
        (json!({ "colour": "red" }), "colour"),
    ] {
        t.gateway_as(&t.creds.license_key)
            .post("/api/dashboard/api-keys", &json!({ "label": "bad", "scope": scope }))
            .await
            .failure(400, "VALIDATION_ERROR")
            .mentions(field);
    }
    let after = t
        .gateway_as(&t.creds.license_key)
        .get("/api/dashboard/api-keys")
        .await
        .data();
    assert_eq!(before, after);
    t.stack.stop().await;
}
