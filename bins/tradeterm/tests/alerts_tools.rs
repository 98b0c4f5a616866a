//! The news guard, `poll_alerts` and `get_state_delta` end to end: REST over
//! the real stack with a simulated terminal (trading on) and a local stand-in
//! news provider.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use actix_web::{App, HttpResponse, HttpServer, web};
use common::{Options, event_of, spawn_with};
use serde_json::{Value, json};
use tradeterm_core::events::Importance;
use tradeterm_core::time::{parse_iso, to_iso};

/// A provider whose items are dated relative to a base time (unix s).
async fn news(base: web::Data<Arc<AtomicI64>>) -> HttpResponse {
    let now = base.load(Ordering::SeqCst);
    HttpResponse::Ok().json(json!([
        { "id": 11, "datetime": now - 600, "headline": "Dollar jumps as Fed minutes surprise", "summary": "", "source": "W", "url": "https://example.test/11" },
        { "id": 12, "datetime": now - 300, "headline": "Yen steady", "summary": "", "source": "W", "url": "https://example.test/12" },
        { "id": 13, "datetime": now - 7200, "headline": "ECB talk (too old for a first poll)", "summary": "", "source": "W", "url": "https://example.test/13" }
    ]))
}

async fn delta(t: &common::TestStack) -> Value {
    let (s, b) = t.post("/api/v1/tools/get_state_delta", None, &json!({}), None).await;
    assert_eq!(s, 200, "{b}");
    b["data"].clone()
}

fn ids(v: &Value) -> Vec<String> {
    v["data"]["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn news_guard_alerts_and_state_deltas_over_rest() {
    let base = Arc::new(AtomicI64::new(chrono::Utc::now().timestamp()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let data = web::Data::new(base.clone());
    let server = HttpServer::new(move || App::new().app_data(data.clone()).route("/news", web::get().to(news)))
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
    let handle = server.handle();
    tokio::spawn(server);
    let t = spawn_with(
        Options {
            sims: 1,
            allow_trading: true,
            ..Options::default()
        },
        |s| {
            s.news_api_key = Some("k".into());
            s.news_api_url = Some(format!("http://127.0.0.1:{port}/news"));
        },
    )
    .await;

    // No guard: no alerts, and the answer says why.
    let (s, b) = t.post("/api/v1/tools/poll_alerts", None, &json!({}), None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!((b["data"]["guard_active"].as_bool(), ids(&b).len()), (Some(false), 0));

    // A guard on EURUSD's currencies (plus GBP), medium releases, 24 h ahead.
    let (s, b) = t
        .post(
            "/api/v1/tools/set_news_guard",
            None,
            &json!({ "symbols": ["EURUSD"], "currencies": ["gbp"], "min_importance": "medium", "lead_minutes": 1440 }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["data"]["guard"]["currencies"], json!(["EUR", "GBP", "USD"]));
    let (s, status) = t
        .post("/api/v1/tools/get_news_guard_status", None, &json!({}), None)
        .await;
    assert_eq!(s, 200, "{status}");
    assert_eq!(status["data"]["active"], true);
    assert_eq!(status["data"]["news_provider"], true);

    // First poll: the last hour. News: the dollar item (USD), not the yen one,
    // not the two-hour-old one. Releases: those whose alert moment (24 h
    // before them) is in the last hour, as the calendar says.
    let (s, first) = t.post("/api/v1/tools/poll_alerts", None, &json!({}), None).await;
    assert_eq!(s, 200, "{first}");
    let got = ids(&first);
    assert!(got.contains(&"news:11".to_owned()), "{first}");
    assert!(!got.iter().any(|i| i == "news:12" || i == "news:13"), "{first}");
    let news = first["data"]["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "news:11")
        .unwrap()
        .clone();
    assert_eq!(news["kind"], "news");
    assert_eq!(news["currencies"], json!(["USD"]));
    let cursor = first["data"]["next_cursor"].as_str().unwrap().to_owned();
    let polled_at: i64 = cursor.parse().unwrap();
    let (_, cal) = t
        .post(
            "/api/v1/tools/get_economic_calendar",
            None,
            &json!({
                "from": to_iso(polled_at - 3_600_000 + 86_400_000),
                "to": to_iso(polled_at + 86_400_000 + 1),
                "currencies": ["EUR", "GBP", "USD"],
                "min_importance": "medium"
            }),
            None,
        )
        .await;
    let mut expected: Vec<String> = cal["data"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(event_of)
        .filter(|e| e.importance >= Importance::Medium)
        .map(|e| format!("release:{}:1440", e.id))
        .collect();
    expected.sort();
    let mut releases: Vec<String> = got.iter().filter(|i| i.starts_with("release:")).cloned().collect();
    releases.sort();
    assert_eq!(releases, expected, "{first}");
    for a in first["data"]["alerts"].as_array().unwrap() {
        let fired = parse_iso(a["fired_at"].as_str().unwrap()).unwrap();
        assert!(fired > polled_at - 3_600_000 && fired <= polled_at, "{a}");
    }

    // The next poll with the cursor repeats nothing; a new item arrives once.
    let (_, again) = t
        .post("/api/v1/tools/poll_alerts", None, &json!({ "cursor": cursor }), None)
        .await;
    assert!(!ids(&again).contains(&"news:11".to_owned()), "{again}");
    for bad in [
        json!({ "cursor": "yesterday" }),
        json!({ "limit": 0 }),
        json!({ "cursor": "99999999999999" }),
    ] {
        let (s, b) = t.post("/api/v1/tools/poll_alerts", None, &bad, None).await;
        assert_eq!(
            (s, b["error"]["code"].as_str()),
            (400, Some("VALIDATION_ERROR")),
            "{bad}: {b}"
        );
    }
    for bad in [
        json!({}),
        json!({ "currencies": ["dollar"] }),
        json!({ "symbols": ["US500"] }),
        json!({ "currencies": ["USD"], "lead_minutes": 0 }),
        json!({ "currencies": ["USD"], "min_importance": "low" }),
    ] {
        let (s, b) = t.post("/api/v1/tools/set_news_guard", None, &bad, None).await;
        assert_eq!(
            (s, b["error"]["code"].as_str()),
            (400, Some("VALIDATION_ERROR")),
            "{bad}: {b}"
        );
    }
    let (s, b) = t.post("/api/v1/tools/remove_news_guard", None, &json!({}), None).await;
    assert_eq!((s, b["data"]["active"].as_bool()), (200, Some(false)), "{b}");
    let (_, b) = t.post("/api/v1/tools/poll_alerts", None, &json!({}), None).await;
    assert_eq!(b["data"]["guard_active"], false);

    // State deltas: first call initial; a live order appears, is modified,
    // then closed; another caller keeps its own history.
    let d = delta(&t).await;
    assert_eq!(d["initial"], true);
    assert!(d["since"].is_null());
    let d = delta(&t).await;
    assert_eq!(
        (d["initial"].as_bool(), d["changed"].as_bool()),
        (Some(false), Some(false)),
        "{d}"
    );
    let (s, b) = t
        .post(
            "/api/v1/orders",
            None,
            &json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let ticket = b["data"]["trade"]["position"].as_u64().unwrap();
    let d = delta(&t).await;
    assert_eq!(d["positions_opened"][0]["ticket"].as_u64(), Some(ticket), "{d}");
    assert_eq!(d["changed"], true);
    assert!(d["account_changes"].get("margin").is_some(), "{d}");
    let price = d["positions_opened"][0]["open_price"].as_f64().unwrap();
    let (s, b) = t
        .post(
            &format!("/api/v1/positions/{ticket}/modify"),
            None,
            &json!({ "stop_loss": price - 0.01, "dry_run": false }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let d = delta(&t).await;
    assert_eq!(d["positions_modified"][0]["fields"], json!(["stop_loss"]), "{d}");
    let (s, b) = t
        .post(
            &format!("/api/v1/positions/{ticket}/close"),
            None,
            &json!({ "dry_run": false }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let d = delta(&t).await;
    assert_eq!(d["positions_closed"][0]["ticket"].as_u64(), Some(ticket), "{d}");
    assert!(d["account_changes"].get("balance").is_some(), "{d}");
    // Another API key of the same license: its own first call.
    let (_, other) = t
        .stack
        .store
        .create_api_key(&t.creds.license_id, "second")
        .await
        .unwrap();
    let (s, b) = t
        .send_as(
            other.expose(),
            reqwest::Method::POST,
            "/api/v1/tools/get_state_delta",
            None,
            Some(&json!({})),
            None,
        )
        .await;
    assert_eq!((s, b["data"]["initial"].as_bool()), (200, Some(true)), "{b}");

    handle.stop(true).await;
    t.stack.stop().await;
}
