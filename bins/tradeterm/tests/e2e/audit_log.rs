//! The trade audit log end to end (`docs/audit.md`): a dry-run order, a
//! live order and a refused live order over REST and over MCP are each
//! recorded with their decision, credential, surface, source and request id;
//! `GET /api/v1/audit` filters, pages and exports CSV, for the master key
//! only; another license sees nothing; `tradeterm admin verify-audit`'s
//! function passes, then names the row edited or deleted in the database.

use reqwest::Method;
use serde_json::{Value, json};
use tradeterm_store::Tier;

use crate::harness::mcp::{self, call, ok};
use crate::harness::{Expect, Options, TestStack, spawn};

async fn start() -> TestStack {
    spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await
}

/// `GET /api/v1/audit?query` with the demo master key: the page.
async fn audit(app: &TestStack, query: &str) -> Value {
    app.master()
        .get(&format!("/api/v1/audit?{query}"))
        .await
        .data_for(format!("audit {query}"))
}

fn entries(page: &Value) -> Vec<Value> {
    page["entries"].as_array().cloned().unwrap_or_default()
}

/// Runs `sql` on the stack's SQLite file with a connection of its own,
/// outside the store (what someone tampering with the database would do).
async fn sqlite(app: &TestStack, sql: &str) {
    use sqlx::ConnectOptions;
    let db = app.data_dir().join("tradeterm.db");
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&db)
        .busy_timeout(std::time::Duration::from_secs(5))
        .connect()
        .await
        .unwrap_or_else(|e| panic!("opening {}: {e}", db.display()));
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn verify(app: &TestStack) -> Result<(), String> {
    let mut out = Vec::new();
    let result = tradeterm::audit_cli::verify_audit(&*app.stack.store, Some(&app.creds.license_id), &mut out).await;
    let line: Value = serde_json::from_slice(out.split(|b| *b == b'\n').next().unwrap_or_default()).unwrap();
    assert_eq!(line["license"], json!(app.creds.license_id));
    result.map_err(|e| format!("{e:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn trade_calls_are_recorded_chained_and_verified() {
    let app = start().await;
    let terminal = app.terminal(0).to_owned();
    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1 });

    // REST: a dry run (with a request id), then a live order.
    let resp = app
        .http
        .post(format!("{}/api/v1/orders", app.rest))
        .bearer_auth(&app.creds.api_key)
        .header("x-terminal-id", &terminal)
        .header("x-request-id", "audit-e2e-dry")
        .json(&order)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut live = order.clone();
    live["dry_run"] = json!(false);
    let filled = app
        .api()
        .on(&terminal)
        .idempotency_key("audit-e2e-live")
        .place_order(&live)
        .await
        .data_for("live order");
    let ticket = filled["trade"]["order"].clone();

    // Reads are not audited.
    app.api().on(&terminal).tick("EURUSD").await.data_for("tick");

    // MCP: a dry run, a live order, and a live order refused by the preflight
    // (from a client that cannot confirm trades: confirmation off, as the
    // license owner may set it; mcp_confirm.rs records the answers).
    app.stack
        .store
        .set_license_settings(
            &app.creds.license_id,
            &tradeterm_store::LicenseSettings {
                mcp_trade_confirmation: false,
            },
        )
        .await
        .unwrap();
    let client = mcp::connect(&mcp::url(app.stack.mcp_port), &app.creds.terminals[0].key)
        .await
        .unwrap();
    ok(&call(&client, "place_order", order.clone()).await);
    ok(&call(&client, "place_order", live.clone()).await);
    let refused = call(
        &client,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.123, "dry_run": false }),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    client.cancel().await.unwrap();

    // REST: a live order on the Free tier, refused (TRADING_DISABLED).
    let free = app.free_tier_key().await;
    app.api_as(&free).on(&terminal).place_order(&live).await.failure_for(
        403,
        "TRADING_DISABLED",
        "free tier live order",
    );

    let page = audit(&app, "").await;
    let rows = entries(&page);
    let summary: Vec<(String, String, String)> = rows
        .iter()
        .rev()
        .map(|r| {
            (
                r["surface"].as_str().unwrap().to_owned(),
                r["tool"].as_str().unwrap().to_owned(),
                r["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
    // Every trade call above, in order, and nothing else (the tick is not there).
    assert_eq!(summary.len(), 6, "{summary:?}");
    assert_eq!(summary[0], s("rest", "place_order", "dry_run"));
    assert_eq!(summary[1], s("rest", "place_order", "sent"));
    assert_eq!(summary[2], s("mcp", "place_order", "dry_run"));
    assert_eq!(summary[3], s("mcp", "place_order", "sent"));
    assert_eq!((summary[4].0.as_str(), summary[4].1.as_str()), ("mcp", "place_order"));
    assert!(["refused", "rejected"].contains(&summary[4].2.as_str()), "{summary:?}");
    assert_eq!(summary[5], s("rest", "place_order", "refused"));

    let oldest: Vec<&Value> = rows.iter().rev().collect();
    let dry = oldest[0];
    assert_eq!(dry["request_id"], json!("audit-e2e-dry"));
    assert_eq!(dry["source"], json!("127.0.0.1"));
    assert_eq!(dry["terminal_id"], json!(terminal));
    assert_eq!(dry["request"]["dry_run"], json!(true));
    assert_eq!(dry["request"]["input"]["symbol"], json!("EURUSD"));
    assert_eq!(dry["prev_hash"], json!("0".repeat(64)));
    assert_eq!(dry["seq"], json!(1));
    let sent = oldest[1];
    assert_eq!(sent["request"]["idempotency_key"], json!("audit-e2e-live"));
    assert_eq!(sent["request"]["dry_run"], json!(false));
    assert_eq!(sent["answer"]["trade"]["order"], ticket);
    assert!(sent["answer"]["trade"]["retcode"].is_string(), "{sent}");
    assert!(sent["answer"]["price"].as_f64().unwrap() > 0.0);
    assert!(sent["latency_ms"].as_f64().unwrap() >= sent["handler_ms"].as_f64().unwrap());
    assert_eq!(sent["prev_hash"], dry["hash"]);
    assert!(sent["credential_id"].as_str().unwrap().starts_with("key_"));
    assert_eq!(oldest[3]["source"], json!("127.0.0.1"));
    assert!(oldest[3]["credential_id"].as_str().unwrap().starts_with("tkey_"));
    assert!(oldest[3]["request_id"].is_string(), "MCP rows carry the request id");
    assert!(oldest[4]["code"].is_string());
    let disabled = oldest[5];
    assert_eq!(disabled["code"], json!("TRADING_DISABLED"));
    assert_eq!(disabled["credential_label"], json!("free"));
    // No secret anywhere in the log.
    let text = page.to_string();
    for secret in [
        &app.creds.api_key,
        &free,
        &app.creds.license_key,
        &app.creds.terminals[0].key,
    ] {
        assert!(!text.contains(secret.as_str()), "a secret is in the audit log");
    }

    // Filters.
    let sent_only = entries(&audit(&app, "decision=sent").await);
    assert_eq!(sent_only.len(), 2);
    assert!(sent_only.iter().all(|r| r["decision"] == json!("sent")));
    let keyed = entries(
        &audit(
            &app,
            &format!("credential={}", disabled["credential_id"].as_str().unwrap()),
        )
        .await,
    );
    assert_eq!(keyed.len(), 1);
    assert_eq!(
        entries(&audit(&app, &format!("terminal_id={terminal}&tool=place_order")).await).len(),
        6
    );
    assert!(entries(&audit(&app, "tool=close_position").await).is_empty());
    // By surface: the three MCP calls, and nothing from the managed exits.
    let mcp_rows = entries(&audit(&app, "surface=mcp").await);
    assert_eq!(mcp_rows.len(), 3, "{mcp_rows:?}");
    assert!(mcp_rows.iter().all(|r| r["surface"] == json!("mcp")));
    assert_eq!(entries(&audit(&app, "surface=rest").await).len(), 3);
    assert!(entries(&audit(&app, "surface=managed").await).is_empty());
    app.master()
        .get("/api/v1/audit?surface=fax")
        .await
        .failure_for(400, "VALIDATION_ERROR", "unknown surface");
    let until = dry["at"].as_str().unwrap().to_owned();
    assert!(entries(&audit(&app, &format!("to={until}")).await).is_empty());
    assert_eq!(entries(&audit(&app, &format!("from={until}")).await).len(), 6);
    // Pages of 4 and then the remaining 2.
    let first = audit(&app, "limit=4").await;
    assert_eq!(entries(&first).len(), 4);
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let second = audit(&app, &format!("limit=4&cursor={cursor}")).await;
    assert_eq!(
        entries(&second)
            .iter()
            .map(|r| r["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        vec![2, 1]
    );
    assert!(second["next_cursor"].is_null());

    // CSV export.
    let resp = app
        .http
        .get(format!("{}/api/v1/audit?format=csv&limit=4", app.rest))
        .bearer_auth(&app.creds.license_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let headers = resp.headers().clone();
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/csv"));
    assert_eq!(headers["x-next-cursor"].to_str().unwrap(), "3");
    let csv = resp.text().await.unwrap();
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 5, "{csv}");
    assert!(lines[0].starts_with("seq,id,at,credential_id"), "{csv}");
    assert!(lines[1].starts_with("6,aud_"), "{csv}");

    // Only the master key (audit capability) reads it; another license sees nothing.
    app.tool("get_audit_log", &json!({}))
        .await
        .failure_for(403, "FORBIDDEN", "API key without audit");
    app.api_as(&app.creds.api_key).get("/api/v1/audit").await.failure_for(
        403,
        "FORBIDDEN",
        "GET /api/v1/audit with an unscoped API key",
    );
    // A key scoped with `audit` reads it at GET /api/v1/audit (and trades nothing live).
    let auditor = app
        .gateway_as(&app.creds.license_key)
        .post(
            "/api/dashboard/api-keys",
            &json!({ "label": "auditor", "scope": { "capabilities": ["read", "audit"] } }),
        )
        .await
        .data_for("an audit-scoped key");
    assert_eq!(
        auditor["key"]["permissions"],
        json!({ "capabilities": ["read", "audit"] })
    );
    let auditor = auditor["api_key"].as_str().unwrap().to_owned();
    let read = app
        .api_as(&auditor)
        .get("/api/v1/audit?limit=2&surface=rest")
        .await
        .data_for("GET /api/v1/audit with an audit-scoped key");
    assert_eq!(
        entries(&read)
            .iter()
            .map(|r| r["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        vec![6, 2]
    );
    app.api_as(&auditor)
        .tool("get_audit_log", &json!({ "decision": "sent" }))
        .await
        .data_for("get_audit_log with an audit-scoped key");
    app.api_as(&auditor).on(&terminal).place_order(&live).await.failure_for(
        403,
        "FORBIDDEN",
        "a live order with a read+audit key",
    );
    let (_, other_master) = app.stack.store.create_license("other", Tier::Pro).await.unwrap();
    let other = app
        .api_as(other_master.expose())
        .send(Method::GET, "/api/v1/audit", None)
        .await
        .envelope()
        .data_for("other license's audit");
    assert!(entries(&other).is_empty(), "{other}");

    // verify-audit: intact, then an edited row and a deleted row are named.
    verify(&app).await.unwrap();
    let second_id = oldest[1]["id"].as_str().unwrap().to_owned();
    sqlite(
        &app,
        &format!("UPDATE audit_log SET decision = 'dry_run' WHERE id = '{second_id}'"),
    )
    .await;
    let err = verify(&app).await.unwrap_err();
    assert!(
        err.contains(&second_id) && err.contains("row 2") && err.contains("edited"),
        "{err}"
    );
    sqlite(
        &app,
        &format!("UPDATE audit_log SET decision = 'sent' WHERE id = '{second_id}'"),
    )
    .await;
    verify(&app).await.unwrap();
    let third_id = oldest[2]["id"].as_str().unwrap().to_owned();
    let fourth_id = oldest[3]["id"].as_str().unwrap().to_owned();
    sqlite(&app, &format!("DELETE FROM audit_log WHERE id = '{third_id}'")).await;
    let err = verify(&app).await.unwrap_err();
    assert!(err.contains("row 3 was deleted") && err.contains(&fourth_id), "{err}");
}
