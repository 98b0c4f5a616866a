//! The gateway's management endpoints (spec §4): `/api/prop-firm-rules`,
//! `/api/news-guard`, `/api/cb-stance` and `/api/dashboard/support/identity`,
//! with the master key, against the stack with a simulated terminal; each
//! answers as the catalog tool of the same purpose does over REST.

use serde_json::{Value, json};
use tradeterm_store::Tier;

use crate::harness::{Expect, Options, spawn_with};

#[tokio::test]
async fn management_endpoints_with_the_master_key() {
    let dir = tempfile::tempdir().unwrap();
    let calendar = dir.path().join("calendar.json");
    let decided = chrono::Utc::now().timestamp_millis() - 10 * 86_400_000;
    std::fs::write(
        &calendar,
        json!([{ "id": "fomc-1", "time": tradeterm_core::time::to_iso(decided), "currency": "USD",
                 "name": "Fed Interest Rate Decision", "importance": "high", "category": "central_bank",
                 "actual": 4.25, "forecast": 4.25, "previous": 4.5 }])
        .to_string(),
    )
    .unwrap();
    let t = spawn_with(
        Options {
            sims: 1,
            ..Options::default()
        },
        |s| {
            s.support_identity_secret = Some("widget-secret".into());
            s.calendar_file = Some(calendar.clone());
        },
    )
    .await;
    let master = t.gateway_as(&t.creds.license_key);

    // The master key only: an API key or a terminal key is refused.
    for key in [&t.creds.api_key, &t.creds.terminals[0].key] {
        t.gateway_as(key).news_guard().await.failure(401, "UNAUTHORIZED");
    }

    // News guard: set, read (with what will alert), remove — as the tools.
    let set = master.set_news_guard(&json!({ "symbols": ["EURUSD"] })).await.data();
    assert_eq!(set["guard"]["currencies"], json!(["EUR", "USD"]));
    let status = master.news_guard().await.data();
    assert_eq!(status["active"], true, "{status}");
    assert!(status["upcoming"].is_array(), "{status}");
    let over_rest = t.tool("get_news_guard_status", &json!({})).await.data();
    assert_eq!(over_rest["guard"], status["guard"], "the same guard over REST");
    master
        .set_news_guard(&json!({ "currencies": ["dollars"] }))
        .await
        .failure(400, "VALIDATION_ERROR");
    let removed = master.remove_news_guard().await.data();
    assert_eq!(removed["active"], false, "{removed}");

    // Prop-firm rules on the only connected terminal.
    master.prop_firm_rules().await.failure(404, "NOT_FOUND");
    master
        .set_prop_firm_rules(&json!({ "preset": "generic", "initial_balance": 10000 }))
        .await
        .data();
    let status = master.prop_firm_rules().await.data();
    assert!(status["verdict"].is_string(), "{status}");
    master.remove_prop_firm_rules().await.data();
    t.tool("get_prop_firm_status", &json!({}))
        .await
        .failure_for(404, "NOT_FOUND", "removed for REST too");
    master.prop_firm_rules().await.failure(404, "NOT_FOUND");

    // Central-bank stance from the query string.
    let stance = master.cb_stance("currencies=USD,EUR&lookback_days=180").await.data();
    let over_rest = t
        .tool(
            "get_cb_stance",
            &json!({ "currencies": ["USD", "EUR"], "lookback_days": 180 }),
        )
        .await
        .data();
    let labels = |v: &Value| v.to_string().len();
    assert!(labels(&stance) > 10 && labels(&over_rest) > 10);
    master
        .cb_stance("lookback_days=1&lookback_days=2")
        .await
        .failure(400, "VALIDATION_ERROR");

    // Support identity: HMAC-SHA256 of the license id, stable, per license.
    let identity = master.support_identity().await.data();
    let hash = identity["user_hash"].as_str().unwrap().to_owned();
    assert_eq!(identity["user_id"], t.creds.license_id);
    assert!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    let again = master.support_identity().await.data();
    assert_eq!(again["user_hash"].as_str(), Some(hash.as_str()));

    // Another license: its own hash, nothing of the first license, and no
    // `trade` on the Free tier.
    let (other, other_master) = t.stack.store.create_license("free one", Tier::Free).await.unwrap();
    let other_master = t.gateway_as(other_master.expose());
    let identity = other_master.support_identity().await.data();
    assert_eq!(identity["user_id"], other.id);
    assert_ne!(identity["user_hash"].as_str(), Some(hash.as_str()));
    other_master
        .set_prop_firm_rules(&json!({ "preset": "generic", "initial_balance": 10000 }))
        .await
        .failure_for(403, "FORBIDDEN", "Free tier");
    // The news guard is license-level: its status needs no terminal at all
    // (none set on this license yet), and it is this license's, not the other's.
    let status = other_master
        .news_guard()
        .await
        .data_for("no terminal of this license is connected");
    assert_eq!(
        (&status["active"], &status["guard"]),
        (&json!(false), &Value::Null),
        "{status}"
    );
    t.stack.stop().await;
}
