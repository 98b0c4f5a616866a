//! `get_news` over REST: a no-op without a provider, and with a provider (a
//! local stand-in answering Finnhub's market-news shape) filtered by a
//! symbol's currencies, cached, and degrading to the last list with a note
//! when the provider fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use actix_web::{App, HttpResponse, HttpServer, web};
use serde_json::{Value, json};

use crate::harness::{Expect, Options, spawn, spawn_with};

#[derive(Clone, Default)]
struct Provider {
    calls: Arc<AtomicUsize>,
    failing: Arc<AtomicBool>,
}

async fn news(q: web::Query<std::collections::HashMap<String, String>>, p: web::Data<Provider>) -> HttpResponse {
    p.calls.fetch_add(1, Ordering::SeqCst);
    if q.get("token").map(String::as_str) != Some("test-key") || q.get("category").map(String::as_str) != Some("forex")
    {
        return HttpResponse::Unauthorized().json(json!({ "error": "bad token" }));
    }
    if p.failing.load(Ordering::SeqCst) {
        return HttpResponse::InternalServerError().finish();
    }
    HttpResponse::Ok().json(json!([
        { "id": 1, "datetime": 1795000000, "headline": "ECB signals patience on rates", "summary": "Lagarde spoke.", "source": "Wire", "url": "https://example.test/1", "related": "", "category": "forex" },
        { "id": 2, "datetime": 1795000600, "headline": "Yen slides as BoJ holds", "summary": "", "source": "Wire", "url": "https://example.test/2", "related": "", "category": "forex" },
        { "id": 3, "datetime": 1795001200, "headline": "Dollar firms before payrolls", "summary": "Fed speakers ahead.", "source": "Desk", "url": "https://example.test/3", "related": "", "category": "forex" }
    ]))
}

#[tokio::test]
async fn news_from_a_configured_provider_or_a_clear_no_op() {
    // No provider: a no-op that says so.
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let d = t.tool("get_news", &json!({ "symbol": "EURUSD" })).await.data();
    assert_eq!(d["enabled"], false);
    assert_eq!(d["items"], json!([]));
    assert!(d["note"].as_str().unwrap().contains("NEWS_API_KEY"));
    t.stack.stop().await;

    // A provider.
    let provider = Provider::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let data = web::Data::new(provider.clone());
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
            ..Options::default()
        },
        |s| {
            s.news_api_key = Some("test-key".into());
            s.news_api_url = Some(format!("http://127.0.0.1:{port}/news"));
        },
    )
    .await;
    let headlines = |d: &Value| -> Vec<String> {
        d["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["headline"].as_str().unwrap().to_owned())
            .collect()
    };
    // A failing provider: an empty list with the reason, and nothing cached.
    provider.failing.store(true, Ordering::SeqCst);
    let d = t.tool("get_news", &json!({})).await.data();
    assert_eq!((d["enabled"].as_bool(), headlines(&d).len()), (Some(true), 0));
    assert!(d["note"].as_str().unwrap().contains("HTTP 500"), "{d}");
    provider.failing.store(false, Ordering::SeqCst);
    let d = t.tool("get_news", &json!({})).await.data();
    assert_eq!(d["enabled"], true);
    assert!(d.get("note").is_none(), "{d}");
    assert_eq!(headlines(&d).len(), 3, "newest first, unfiltered: {d}");
    assert_eq!(d["items"][0]["time"], "2026-11-18T11:26:40Z");
    // EURUSD: the ECB item (EUR) and the dollar item (USD), not the yen one.
    let d = t.tool("get_news", &json!({ "symbol": "EURUSD" })).await.data();
    assert_eq!(
        headlines(&d),
        ["Dollar firms before payrolls", "ECB signals patience on rates"]
    );
    assert_eq!(d["items"][0]["currencies"], json!(["USD"]));
    assert_eq!(d["currencies"], json!(["EUR", "USD"]));
    let d = t
        .tool("get_news", &json!({ "currencies": ["jpy"], "limit": 1 }))
        .await
        .data();
    assert_eq!(headlines(&d), ["Yen slides as BoJ holds"]);
    let d = t
        .tool("get_news", &json!({ "since": "2026-11-18T11:20:00Z" }))
        .await
        .data();
    assert_eq!(headlines(&d), ["Dollar firms before payrolls"]);
    // One successful provider call served them all (60 s cache).
    assert_eq!(provider.calls.load(Ordering::SeqCst), 2);
    // Validation.
    for bad in [
        json!({ "symbol": "US500" }),
        json!({ "currencies": ["euro"] }),
        json!({ "limit": 0 }),
        json!({ "limit": 101 }),
        json!({ "since": "yesterday" }),
        json!({ "topic": "fx" }),
    ] {
        t.tool("get_news", &bad)
            .await
            .failure_for(400, "VALIDATION_ERROR", &bad);
    }
    handle.stop(true).await;
    t.stack.stop().await;
}
