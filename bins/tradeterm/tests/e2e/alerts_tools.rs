//! The news guard, `poll_alerts` and `get_state_delta` end to end: REST over
//! the real stack with a simulated terminal (trading on) and a local stand-in
//! news provider.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use actix_web::{App, HttpResponse, HttpServer, web};
use serde_json::{Value, json};
use tradeterm_core::events::Importance;
use tradeterm_core::time::{parse_iso, to_iso};

use crate::harness::data::event_of;
use crate::harness::{Expect, Options, TestStack, spawn_with};

/// A provider whose items are dated relative to a base time (unix s).
async fn news(base: web::Data<Arc<AtomicI64>>) -> HttpResponse {
    let now = base.load(Ordering::SeqCst);
    HttpResponse::Ok().json(json!([
        { "id": 11, "datetime": now - 600, "headline": "Dollar jumps as Fed minutes surprise", "summary": "", "source": "W", "url": "https://example.test/11" },
        { "id": 12, "datetime": now - 300, "headline": "Yen steady", "summary": "", "source": "W", "url": "https://example.test/12" },
        { "id": 13, "datetime": now - 7200, "headline": "ECB talk (too old for a first poll)", "summary": "", "source": "W", "url": "https://example.test/13" }
    ]))
}

async fn delta(t: &TestStack) -> Value {
    t.tool("get_state_delta", &json!({})).await.data()
}

/// The alert ids of a `poll_alerts` answer.
fn ids(v: &Value) -> Vec<String> {
    v["alerts"]
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
    let polled = t.tool("poll_alerts", &json!({})).await.data();
    assert_eq!((polled["guard_active"].as_bool(), ids(&polled).len()), (Some(false), 0));

    // A guard on EURUSD's currencies (plus GBP), medium releases, 24 h ahead.
    let set = t
        .tool(
            "set_news_guard",
            &json!({ "symbols": ["EURUSD"], "currencies": ["gbp"], "min_importance": "medium", "lead_minutes": 1440 }),
        )
        .await
        .data();
    assert_eq!(set["guard"]["currencies"], json!(["EUR", "GBP", "USD"]));
    let status = t.tool("get_news_guard_status", &json!({})).await.data();
    assert_eq!(status["active"], true);
    assert_eq!(status["news_provider"], true);

    // First poll: the last hour. News: the dollar item (USD), not the yen one,
    // not the two-hour-old one. Releases: those whose alert moment (24 h
    // before them) is in the last hour, as the calendar says.
    let first = t.tool("poll_alerts", &json!({})).await.data();
    let got = ids(&first);
    assert!(got.contains(&"news:11".to_owned()), "{first}");
    assert!(!got.iter().any(|i| i == "news:12" || i == "news:13"), "{first}");
    let news = first["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "news:11")
        .unwrap()
        .clone();
    assert_eq!(news["kind"], "news");
    assert_eq!(news["currencies"], json!(["USD"]));
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let polled_at: i64 = cursor.parse().unwrap();
    let cal = t
        .tool(
            "get_economic_calendar",
            &json!({
                "from": to_iso(polled_at - 3_600_000 + 86_400_000),
                "to": to_iso(polled_at + 86_400_000 + 1),
                "currencies": ["EUR", "GBP", "USD"],
                "min_importance": "medium"
            }),
        )
        .await
        .data();
    let mut expected: Vec<String> = cal["events"]
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
    for a in first["alerts"].as_array().unwrap() {
        let fired = parse_iso(a["fired_at"].as_str().unwrap()).unwrap();
        assert!(fired > polled_at - 3_600_000 && fired <= polled_at, "{a}");
    }

    // The next poll with the cursor repeats nothing; a new item arrives once.
    let again = t.tool("poll_alerts", &json!({ "cursor": cursor })).await.data();
    assert!(!ids(&again).contains(&"news:11".to_owned()), "{again}");
    // A cursor from the future (another clock) delivers from now on: nothing yet.
    let future = t
        .tool("poll_alerts", &json!({ "cursor": "99999999999999" }))
        .await
        .data();
    assert!(ids(&future).is_empty(), "{future}");
    for bad in [json!({ "cursor": "yesterday" }), json!({ "limit": 0 })] {
        t.tool("poll_alerts", &bad)
            .await
            .failure_for(400, "VALIDATION_ERROR", &bad);
    }
    for bad in [
        json!({}),
        json!({ "currencies": ["dollar"] }),
        json!({ "symbols": ["US500"] }),
        json!({ "currencies": ["USD"], "lead_minutes": 0 }),
        json!({ "currencies": ["USD"], "min_importance": "low" }),
    ] {
        t.tool("set_news_guard", &bad)
            .await
            .failure_for(400, "VALIDATION_ERROR", &bad);
    }
    let removed = t.tool("remove_news_guard", &json!({})).await.data();
    assert_eq!(removed["active"], false, "{removed}");
    let polled = t.tool("poll_alerts", &json!({})).await.data();
    assert_eq!(polled["guard_active"], false);

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
    let placed = t
        .api()
        .place_order(&json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false }))
        .await
        .data();
    let ticket = placed["trade"]["position"].as_u64().unwrap();
    let d = delta(&t).await;
    assert_eq!(d["positions_opened"][0]["ticket"].as_u64(), Some(ticket), "{d}");
    assert_eq!(d["changed"], true);
    assert!(d["account_changes"].get("margin").is_some(), "{d}");
    let price = d["positions_opened"][0]["open_price"].as_f64().unwrap();
    t.api()
        .modify_position(ticket, &json!({ "stop_loss": price - 0.01, "dry_run": false }))
        .await
        .data();
    let d = delta(&t).await;
    assert_eq!(d["positions_modified"][0]["fields"], json!(["stop_loss"]), "{d}");
    t.api()
        .close_position(ticket, &json!({ "dry_run": false }))
        .await
        .data();
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
    let d = t
        .api_as(other.expose())
        .tool("get_state_delta", &json!({}))
        .await
        .data();
    assert_eq!(d["initial"], true, "{d}");

    handle.stop(true).await;
    t.stack.stop().await;
}
