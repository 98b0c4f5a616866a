//! The gateway's management endpoints (spec §4): `/api/prop-firm-rules`,
//! `/api/news-guard`, `/api/cb-stance` and `/api/dashboard/support/identity`,
//! with the master key, against the stack with a simulated terminal; each
//! answers as the catalog tool of the same purpose does over REST.

mod common;

use common::{Options, spawn_with};
use serde_json::{Value, json};
use tradeterm_store::Tier;

async fn call(
    t: &common::TestStack,
    method: reqwest::Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = t.http.request(method, format!("{}{path}", t.gateway)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn management_endpoints_with_the_master_key() {
    use reqwest::Method;
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
    let master = t.creds.license_key.clone();

    // The master key only: an API key or a terminal key is refused.
    for key in [t.creds.api_key.clone(), t.creds.terminals[0].key.clone()] {
        let (s, _) = call(&t, Method::GET, "/api/news-guard", &key, None).await;
        assert_eq!(s, 401);
    }

    // News guard: set, read (with what will alert), remove — as the tools.
    let (s, b) = call(
        &t,
        Method::PUT,
        "/api/news-guard",
        &master,
        Some(json!({ "symbols": ["EURUSD"] })),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["data"]["guard"]["currencies"], json!(["EUR", "USD"]));
    let (s, b) = call(&t, Method::GET, "/api/news-guard", &master, None).await;
    assert_eq!((s, b["data"]["active"].as_bool()), (200, Some(true)), "{b}");
    assert!(b["data"]["upcoming"].is_array(), "{b}");
    let (rest_s, rest_b) = t
        .post("/api/v1/tools/get_news_guard_status", None, &json!({}), None)
        .await;
    assert_eq!(rest_s, 200);
    assert_eq!(rest_b["data"]["guard"], b["data"]["guard"], "the same guard over REST");
    let (s, b) = call(
        &t,
        Method::PUT,
        "/api/news-guard",
        &master,
        Some(json!({ "currencies": ["dollars"] })),
    )
    .await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{b}");
    let (s, b) = call(&t, Method::DELETE, "/api/news-guard", &master, None).await;
    assert_eq!((s, b["data"]["active"].as_bool()), (200, Some(false)), "{b}");

    // Prop-firm rules on the only connected terminal.
    let (s, b) = call(&t, Method::GET, "/api/prop-firm-rules", &master, None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (404, Some("NOT_FOUND")), "{b}");
    let (s, b) = call(
        &t,
        Method::PUT,
        "/api/prop-firm-rules",
        &master,
        Some(json!({ "preset": "generic", "initial_balance": 10000 })),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = call(&t, Method::GET, "/api/prop-firm-rules", &master, None).await;
    assert_eq!(s, 200, "{b}");
    assert!(b["data"]["verdict"].is_string(), "{b}");
    let (s, _) = call(&t, Method::DELETE, "/api/prop-firm-rules", &master, None).await;
    assert_eq!(s, 200);
    let (s, b) = t
        .post("/api/v1/tools/get_prop_firm_status", None, &json!({}), None)
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "removed for REST too: {b}"
    );
    let (s, b) = call(&t, Method::GET, "/api/prop-firm-rules", &master, None).await;
    assert_eq!(s, 404, "{b}");

    // Central-bank stance from the query string.
    let (s, b) = call(
        &t,
        Method::GET,
        "/api/cb-stance?currencies=USD,EUR&lookback_days=180",
        &master,
        None,
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (rest_s, rest_b) = t
        .post(
            "/api/v1/tools/get_cb_stance",
            None,
            &json!({ "currencies": ["USD", "EUR"], "lookback_days": 180 }),
            None,
        )
        .await;
    assert_eq!(rest_s, 200);
    let labels = |v: &Value| v["data"].to_string().len();
    assert!(labels(&b) > 10 && labels(&rest_b) > 10);
    let (s, b) = call(
        &t,
        Method::GET,
        "/api/cb-stance?lookback_days=1&lookback_days=2",
        &master,
        None,
    )
    .await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{b}");

    // Support identity: HMAC-SHA256 of the license id, stable, per license.
    let (s, b) = call(&t, Method::GET, "/api/dashboard/support/identity", &master, None).await;
    assert_eq!(s, 200, "{b}");
    let hash = b["data"]["user_hash"].as_str().unwrap().to_owned();
    assert_eq!(b["data"]["user_id"], t.creds.license_id);
    assert!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    let (_, again) = call(&t, Method::GET, "/api/dashboard/support/identity", &master, None).await;
    assert_eq!(again["data"]["user_hash"].as_str(), Some(hash.as_str()));

    // Another license: its own hash, nothing of the first license, and no
    // `trade` on the Free tier.
    let (other, other_master) = t.stack.store.create_license("free one", Tier::Free).await.unwrap();
    let (_, b) = call(
        &t,
        Method::GET,
        "/api/dashboard/support/identity",
        other_master.expose(),
        None,
    )
    .await;
    assert_eq!(b["data"]["user_id"], other.id);
    assert_ne!(b["data"]["user_hash"].as_str(), Some(hash.as_str()));
    let (s, b) = call(
        &t,
        Method::PUT,
        "/api/prop-firm-rules",
        other_master.expose(),
        Some(json!({ "preset": "generic", "initial_balance": 10000 })),
    )
    .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (403, Some("FORBIDDEN")),
        "Free tier: {b}"
    );
    // The news guard is license-level: its status needs no terminal at all
    // (none set on this license yet), and it is this license's, not the other's.
    let (s, b) = call(&t, Method::GET, "/api/news-guard", other_master.expose(), None).await;
    assert_eq!(s, 200, "no terminal of this license is connected: {b}");
    assert_eq!(
        (&b["data"]["active"], &b["data"]["guard"]),
        (&json!(false), &Value::Null),
        "{b}"
    );
    t.stack.stop().await;
}
