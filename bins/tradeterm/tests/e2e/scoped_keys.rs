//! Scoped REST API keys (issue 31, item 1) over the single-node stack: a
//! key scoped to one terminal, `EURUSD` and 0.1 lots is refused (403
//! `FORBIDDEN`, naming the rule) on another terminal, another symbol and
//! 0.2 lots, for dry runs as for live calls, while what it may do works;
//! a dry-run-only key's dry run says what a live call would be refused for;
//! open-volume and daily limits hold; a key used from outside its networks
//! and an expired key are refused; a malformed scope is refused at creation.
//!
//! Terminal keys carry scopes too (over MCP, and on REST with their session
//! tokens), and scopes change in place (`PATCH`) with effect on the next
//! call: on the single node without Redis, and with Redis (the marks every
//! instance reads; `cargo xtask scale` times the same across instances).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tradeterm_store::Tier;

use crate::harness::mcp::{self, call, connect};
use crate::harness::{ApiResult, Expect, Options, TestStack, spawn};

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

/// `PATCH path` on the gateway with `master` and `body`.
async fn patch(t: &TestStack, master: &str, path: &str, body: &Value) -> ApiResult {
    t.gateway_as(master)
        .send(reqwest::Method::PATCH, path, Some(body))
        .await
        .envelope()
}

/// The code and message of an MCP tool call refused.
async fn mcp_refused<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    tool: &str,
    args: Value,
) -> (String, String) {
    mcp::err(&call(client, tool, args).await)
}

/// Turns MCP trade confirmation off: these clients do not elicit (mcp_confirm.rs tests it on).
async fn no_confirmation(t: &TestStack) {
    t.stack
        .store
        .set_license_settings(
            &t.creds.license_id,
            &tradeterm_store::LicenseSettings {
                mcp_trade_confirmation: false,
            },
        )
        .await
        .unwrap();
}

/// A terminal key scoped to EURUSD and 0.1 lots over MCP: GBPUSD and 0.2
/// lots refused naming the rule, dry run and live; the scope set on the
/// key in place, shown with it, taking effect on the session's next call,
/// and lifted again; a scope naming `terminals` refused at creation; the
/// terminal key's session tokens of the old scope refused on REST; another
/// license's master key cannot see or change the key.
async fn terminal_key_scope_over_mcp(t: &TestStack) {
    no_confirmation(t).await;
    let master = t.creds.license_key.clone();
    let (t0, key) = (t.creds.terminals[0].id.clone(), t.creds.terminals[0].key.clone());

    // Creation: `terminals` refused with 400 naming it; a scope is kept and shown (never the secret).
    t.gateway_as(&master)
        .post(
            "/api/dashboard/terminals",
            &json!({ "name": "bound", "scope": { "terminals": [t0], "symbols": ["EURUSD"] } }),
        )
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("`terminals`");
    let scope = json!({ "symbols": ["EURUSD"], "max_volume_per_order": 0.1 });
    let created = t
        .gateway_as(&master)
        .post("/api/dashboard/terminals", &json!({ "name": "scoped", "scope": scope }))
        .await
        .data();
    assert_eq!(created["key"]["permissions"], scope, "{created:#}");
    let secret = created["terminal_key"].as_str().unwrap();
    assert!(!created["key"].to_string().contains(secret), "never the secret");
    let new_terminal = created["terminal"]["id"].as_str().unwrap();
    let shown = t
        .gateway_as(&master)
        .get(&format!("/api/dashboard/terminals/{new_terminal}/key"))
        .await
        .data();
    assert_eq!(shown["permissions"], scope);
    // A rotation keeps the scope.
    let rotated = t
        .gateway_as(&master)
        .post(
            &format!("/api/dashboard/terminals/{new_terminal}/rotate-key"),
            &json!({}),
        )
        .await;
    let rotated = rotated.unwrap_or_else(|f| panic!("{f:?}"));
    assert_eq!(rotated["key"]["permissions"], scope, "{rotated:#}");

    // The demo terminal's key, unscoped: GBPUSD works over MCP; a session token is taken.
    let url = mcp::url(t.stack.mcp_port);
    let client = connect(&url, &key).await.unwrap();
    mcp::ok(&call(&client, "get_tick", json!({ "symbol": "GBPUSD" })).await);
    let token = t.anonymous().token(&key).await.data_for("token exchange");
    let old_token = token["token"].as_str().unwrap().to_owned();
    t.api_as(&old_token).get("/api/v1/terminals").await.data();

    // Scoped in place (no new secret; the agent stays connected).
    let changed = patch(
        t,
        &master,
        &format!("/api/dashboard/terminals/{t0}/key"),
        &json!({ "scope": scope }),
    )
    .await
    .data();
    assert_eq!(changed["permissions"], scope);
    assert_eq!(changed["scope_generation"], 1);
    // The same session's next calls: refused by each rule, dry run or live, naming it.
    for (args, rule) in [
        (order("GBPUSD", 0.1, false), "symbols"),
        (order("GBPUSD", 0.1, true), "symbols"),
        (order("EURUSD", 0.2, false), "max_volume_per_order"),
        (order("EURUSD", 0.2, true), "max_volume_per_order"),
    ] {
        let (code, message) = mcp_refused(&client, "place_order", args.clone()).await;
        assert_eq!(code, "FORBIDDEN", "{args}: {message}");
        assert!(message.contains(&format!("`{rule}`")), "{args}: {message}");
    }
    let (code, message) = mcp_refused(&client, "get_tick", json!({ "symbol": "GBPUSD" })).await;
    assert_eq!(code, "FORBIDDEN", "{message}");
    let dry = call(&client, "place_order", order("EURUSD", 0.1, false)).await;
    assert_eq!(mcp::ok(&dry)["dry_run"], true);
    // A new session of the key has the scope too; a token of the old scope is refused on REST.
    let other = connect(&url, &key).await.unwrap();
    let (code, _) = mcp_refused(&other, "get_tick", json!({ "symbol": "GBPUSD" })).await;
    assert_eq!(code, "FORBIDDEN");
    other.cancel().await.unwrap();
    t.api_as(&old_token)
        .get("/api/v1/terminals")
        .await
        .failure(401, "UNAUTHORIZED")
        .mentions("scope");
    let fresh = t.anonymous().token(&key).await.data();
    t.api_as(fresh["token"].as_str().unwrap())
        .on(&t0)
        .tool("get_tick", &json!({ "symbol": "GBPUSD" }))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`symbols`");
    // `terminals` refused in place too; another license sees nothing of the key.
    patch(
        t,
        &master,
        &format!("/api/dashboard/terminals/{t0}/key"),
        &json!({ "scope": { "terminals": [t0] } }),
    )
    .await
    .failure(400, "VALIDATION_ERROR")
    .mentions("`terminals`");
    let (_, other_master) = t.stack.store.create_license("other", Tier::Pro).await.unwrap();
    patch(
        t,
        other_master.expose(),
        &format!("/api/dashboard/terminals/{t0}/key"),
        &json!({ "scope": null }),
    )
    .await
    .failure(404, "NOT_FOUND");
    t.gateway_as(other_master.expose())
        .get(&format!("/api/dashboard/terminals/{t0}/key"))
        .await
        .failure(404, "NOT_FOUND");

    // Lifted: the same session's next call may quote GBPUSD again.
    let lifted = patch(
        t,
        &master,
        &format!("/api/dashboard/terminals/{t0}/key"),
        &json!({ "scope": null }),
    )
    .await
    .data();
    assert_eq!(lifted["permissions"], Value::Null);
    mcp::ok(&call(&client, "get_tick", json!({ "symbol": "GBPUSD" })).await);
    client.cancel().await.unwrap();
}

/// An API key's scope changed in place: the next call (its exchange cached
/// until then) runs under the new scope; a body without `scope` is 400;
/// another license's master key gets 404. Answers how long the first call
/// after the change took to see it.
async fn api_key_scope_changes_on_the_next_call(t: &TestStack) -> Duration {
    let master = t.creds.license_key.clone();
    let (record, key) = create(t, json!({ "symbols": ["EURUSD"] })).await;
    let id = record["id"].as_str().unwrap().to_owned();
    let api = t.api_as(&key).on(t.terminal(0));
    api.tool("get_tick", &json!({ "symbol": "EURUSD" })).await.data();
    api.tool("get_tick", &json!({ "symbol": "GBPUSD" }))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`symbols`");
    patch(t, &master, &format!("/api/dashboard/api-keys/{id}"), &json!({}))
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("scope");
    let (_, other_master) = t.stack.store.create_license("another", Tier::Pro).await.unwrap();
    patch(
        t,
        other_master.expose(),
        &format!("/api/dashboard/api-keys/{id}"),
        &json!({ "scope": null }),
    )
    .await
    .failure(404, "NOT_FOUND");

    let t0 = Instant::now();
    let changed = patch(
        t,
        &master,
        &format!("/api/dashboard/api-keys/{id}"),
        &json!({ "scope": { "symbols": ["GBPUSD"], "dry_run_only": true } }),
    )
    .await
    .data();
    assert_eq!(changed["permissions"]["symbols"], json!(["GBPUSD"]));
    assert!(!changed.to_string().contains(&key), "never the secret");
    // The very next call: under the new scope.
    api.tool("get_tick", &json!({ "symbol": "GBPUSD" })).await.data();
    let seen = t0.elapsed();
    api.tool("get_tick", &json!({ "symbol": "EURUSD" }))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`symbols`");
    api.tool("place_order", &order("GBPUSD", 0.01, true))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("`dry_run_only`");
    let listed = t.gateway_as(&master).get("/api/dashboard/api-keys").await.data();
    let shown = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id.as_str())
        .unwrap();
    assert_eq!(shown["permissions"], changed["permissions"]);
    assert_eq!(shown["scope_generation"], 1);
    // Lifted: everything again.
    patch(
        t,
        &master,
        &format!("/api/dashboard/api-keys/{id}"),
        &json!({ "scope": null }),
    )
    .await
    .data();
    api.tool("get_tick", &json!({ "symbol": "EURUSD" })).await.data();
    revoke(t, &record).await;
    // A revoked key's scope cannot be changed.
    patch(
        t,
        &master,
        &format!("/api/dashboard/api-keys/{id}"),
        &json!({ "scope": null }),
    )
    .await
    .failure(404, "NOT_FOUND");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn terminal_keys_are_scoped_and_scopes_change_in_place() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    terminal_key_scope_over_mcp(&t).await;
    api_key_scope_changes_on_the_next_call(&t).await;
    t.stack.stop().await;
}

/// The same with Redis: the scope changes reach the cached exchanges through
/// the revocation marks (the path every instance of a deployment takes).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scope_changes_take_effect_through_redis_marks() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        redis: true,
        ..Options::default()
    })
    .await;
    terminal_key_scope_over_mcp(&t).await;
    let seen = api_key_scope_changes_on_the_next_call(&t).await;
    assert!(seen < Duration::from_secs(1), "the change was seen after {seen:?}");
    t.stack.stop().await;
}
