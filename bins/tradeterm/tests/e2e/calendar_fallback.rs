//! The spec's calendar fallbacks end to end: the server calendar fetched
//! from a ForexFactory-format weekly feed (a recorded file served on
//! 127.0.0.1), refreshed, kept with its staleness when the feed fails and
//! overridden by `CALENDAR_FILE`; the license's only terminal targeted
//! without `X-Terminal-Id` even when it is offline (calendar `source:
//! server`, prop-firm `block`, license-level reads answering); and holiday
//! exposure in `get_holding_risk` on an MT4 terminal (no terminal calendar).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use serde_json::{Value, json};
use tradeterm_core::time::{parse_iso, to_iso};
use tradeterm_protocol::agent::Platform;
use tradeterm_sim::{SimSettings, Simulator, SystemClock};

use crate::harness::{Expect, Options, TestStack, WEDNESDAY_NOON, spawn_with, wait_until};

/// A week of ForexFactory's `ff_calendar_thisweek.json` (2026-11-22..28).
const FIXTURE: &str = include_str!("../fixtures/ff_calendar_thisweek.json");
const H: i64 = 3_600_000;

/// A feed server whose body and failure can be changed while it runs.
#[derive(Clone)]
struct Feed {
    body: Arc<Mutex<String>>,
    failing: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
    port: u16,
    handle: actix_web::dev::ServerHandle,
}

/// What the feed server shares with its handler: body, failing, calls.
type FeedState = (Arc<Mutex<String>>, Arc<AtomicBool>, Arc<AtomicUsize>);

async fn serve(feed: web::Data<FeedState>) -> HttpResponse {
    feed.2.fetch_add(1, Ordering::SeqCst);
    if feed.1.load(Ordering::SeqCst) {
        return HttpResponse::ServiceUnavailable().finish();
    }
    let body = feed.0.lock().unwrap().clone();
    HttpResponse::Ok().content_type("application/json").body(body)
}

impl Feed {
    fn start(body: &str) -> Self {
        let body = Arc::new(Mutex::new(body.to_owned()));
        let failing = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let data = web::Data::new((body.clone(), failing.clone(), calls.clone()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route("/ff_calendar_thisweek.json", web::get().to(serve))
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        Self {
            body,
            failing,
            calls,
            port,
            handle,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/ff_calendar_thisweek.json", self.port)
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// How long the feed's fetches and refreshes may take.
const FEED: Duration = Duration::from_secs(15);

/// The fixture's week.
fn fixture_week() -> Value {
    json!({ "from": "2026-11-22T00:00:00Z", "to": "2026-11-29T00:00:00Z" })
}

async fn calendar(t: &TestStack, input: &Value) -> Value {
    t.tool("get_economic_calendar", input).await.data()
}

fn find<'a>(events: &'a Value, currency: &str, name: &str) -> &'a Value {
    events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["currency"] == currency && e["name"] == name)
        .unwrap_or_else(|| panic!("no {currency} {name} in {events}"))
}

#[tokio::test]
async fn the_only_terminal_offline_gets_the_specs_fallbacks() {
    let feed = Feed::start(FIXTURE);
    let url = feed.url();
    let t = spawn_with(
        Options {
            sims: 0,
            ..Options::default()
        },
        |s| s.calendar_feed_url = Some(url),
    )
    .await;
    // No terminal at all: the central-bank stance, the calendar and the news
    // guard's status (license-level reads) answer from the server's feed.
    let stance = wait_until("the feed's first fetch", FEED, || async {
        let d = t
            .tool("get_cb_stance", &json!({ "currencies": ["NZD"], "lookback_days": 30 }))
            .await
            .data();
        (d["source"] == "server" && !d["note"].to_string().contains("not been fetched")).then_some(d)
    })
    .await;
    assert!(
        stance["note"].as_str().unwrap_or_default().contains("no terminal"),
        "{stance}"
    );
    let data = calendar(&t, &fixture_week()).await;
    assert_eq!(
        (&data["source"], &data["available"]),
        (&json!("server"), &json!(true)),
        "{data}"
    );
    assert!(data["note"].as_str().unwrap().contains("no terminal"), "{data}");
    assert!(!data["events"].as_array().unwrap().is_empty(), "{data}");
    // A terminal-only source cannot be had without a terminal.
    t.tool(
        "get_economic_calendar",
        &json!({ "from": "2026-11-22T00:00:00Z", "to": "2026-11-29T00:00:00Z", "source": "terminal" }),
    )
    .await
    .failure(400, "MISSING_TERMINAL");
    t.tool("set_news_guard", &json!({ "currencies": ["USD"], "lead_minutes": 30 }))
        .await
        .data();
    let status = t
        .tool("get_news_guard_status", &json!({}))
        .await
        .data_for("the news guard's status needs no terminal");
    assert_eq!(status["calendar_source"], "server", "{status}");
    let (offline, _) = t
        .stack
        .store
        .create_terminal(&t.creds.license_id, "offline")
        .await
        .unwrap();

    // No X-Terminal-Id, one terminal on the license, never connected: it is
    // targeted and the calendar falls back to the server's feed.
    let data = wait_until("the feed's first fetch", FEED, || async {
        let d = calendar(&t, &fixture_week()).await;
        (d["available"] == true).then_some(d)
    })
    .await;
    assert_eq!(data["source"], "server", "{data}");
    assert_eq!(data["stale"], false, "{data}");
    let as_of = parse_iso(data["as_of"].as_str().unwrap()).unwrap();
    assert!((chrono::Utc::now().timestamp_millis() - as_of).abs() < 60_000);
    assert!(data["note"].as_str().unwrap().contains("not connected"), "{data}");
    let events = &data["events"];
    // 25 entries; OPEC's `All` is not a currency.
    assert_eq!(events.as_array().unwrap().len(), 24, "{events}");
    let thanksgiving = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["currency"] == "USD" && e["category"] == "holiday")
        .unwrap();
    assert_eq!(
        (thanksgiving["time"].as_str(), thanksgiving["importance"].as_str()),
        (Some("2026-11-26T05:00:00Z"), Some("low"))
    );
    let claims = find(events, "USD", "Unemployment Claims");
    assert_eq!(
        (
            &claims["time"],
            &claims["forecast"],
            &claims["previous"],
            &claims["importance"]
        ),
        (
            &json!("2026-11-25T13:30:00Z"),
            &json!(226_000.0),
            &json!(220_000.0),
            &json!("high")
        )
    );
    assert_eq!(
        find(events, "USD", "Crude Oil Inventories")["forecast"],
        json!(-1_200_000.0)
    );
    assert_eq!(find(events, "NZD", "Official Cash Rate")["category"], "central_bank");
    assert_eq!(find(events, "USD", "Core PCE Price Index m/m")["forecast"], json!(0.2));
    assert_eq!(find(events, "CNY", "Trade Balance")["previous"], Value::Null);
    // Filters apply to the server calendar as to the terminal's.
    let mut input = fixture_week();
    input["currencies"] = json!(["jpy"]);
    input["categories"] = json!(["holiday"]);
    let jpy = calendar(&t, &input).await;
    assert_eq!(jpy["events"].as_array().unwrap().len(), 1, "{jpy}");

    // The same terminal named explicitly gives the same answer.
    let named = t
        .api()
        .on(&offline.id)
        .tool("get_economic_calendar", &fixture_week())
        .await
        .data();
    assert_eq!(&named["events"], events, "{named}");

    // Prop-firm rules on the offline terminal: the status is `block`, never
    // an error or `ok`, on the catalog tool and the management route.
    t.master()
        .set_prop_firm_rules(&json!({ "preset": "generic", "initial_balance": 10000 }))
        .await
        .data();
    let status = t.master().prop_firm_rules().await.data();
    assert_eq!(status["verdict"], "block", "{status}");
    let status = t.tool("get_prop_firm_status", &json!({})).await.data();
    assert_eq!(status["verdict"], "block", "{status}");

    // License-level reads answer from the server calendar.
    t.tool(
        "set_news_guard",
        &json!({ "currencies": ["USD"], "min_importance": "medium" }),
    )
    .await
    .data();
    let status = t.tool("get_news_guard_status", &json!({})).await.data();
    assert_eq!(status["calendar_source"], "server", "{status}");
    t.master().news_guard().await.data();
    let stance = t
        .tool(
            "get_cb_stance",
            &json!({ "currencies": ["USD", "NZD"], "lookback_days": 30 }),
        )
        .await
        .data();
    assert_eq!(stance["source"], "server", "{stance}");
    t.master().cb_stance("currencies=USD").await.data();

    // A second terminal, also offline: no longer "the only one".
    t.stack
        .store
        .create_terminal(&t.creds.license_id, "second")
        .await
        .unwrap();
    let data = calendar(&t, &fixture_week()).await;
    assert_eq!(
        (&data["source"], &data["available"]),
        (&json!("server"), &json!(true)),
        "{data}"
    );
    assert!(data["note"].as_str().unwrap().contains("no terminal"), "{data}");
    assert!(!data["events"].as_array().unwrap().is_empty(), "{data}");
    // A terminal-only source cannot be had without a terminal.
    t.tool(
        "get_economic_calendar",
        &json!({ "from": "2026-11-22T00:00:00Z", "to": "2026-11-29T00:00:00Z", "source": "terminal" }),
    )
    .await
    .failure(400, "MISSING_TERMINAL");
    t.tool("set_news_guard", &json!({ "currencies": ["USD"], "lead_minutes": 30 }))
        .await
        .data();
    let status = t
        .tool("get_news_guard_status", &json!({}))
        .await
        .data_for("the news guard's status needs no terminal");
    assert_eq!(status["calendar_source"], "server", "{status}");
    // ... but a license-level read still answers with none connected.
    let stance = t.tool("get_cb_stance", &json!({ "currencies": ["USD"] })).await.data();
    assert_eq!(stance["source"], "server", "{stance}");
    t.stack.stop().await;
    feed.handle.stop(true).await;
}

#[tokio::test]
async fn the_feed_refreshes_keeps_its_last_good_copy_and_yields_to_a_calendar_file() {
    let feed = Feed::start(FIXTURE);
    let url = feed.url();
    let t = spawn_with(
        Options {
            sims: 0,
            ..Options::default()
        },
        |s| {
            s.calendar_feed_url = Some(url);
            s.calendar_feed_refresh_secs = 1;
        },
    )
    .await;
    t.stack
        .store
        .create_terminal(&t.creds.license_id, "offline")
        .await
        .unwrap();
    let count = |d: &Value| d["events"].as_array().map_or(0, Vec::len);
    let first = wait_until("the first fetch", FEED, || async {
        let d = calendar(&t, &fixture_week()).await;
        (d["available"] == true).then_some(d)
    })
    .await;
    assert_eq!(count(&first), 24);

    // A new week's copy on the feed: the next refresh serves it.
    let mut next: Vec<Value> = serde_json::from_str(FIXTURE).unwrap();
    next.push(
        json!({ "title": "Nonfarm Payrolls", "country": "USD", "date": "2026-11-27T08:30:00-05:00",
                      "impact": "High", "forecast": "150K", "previous": "119K" }),
    );
    *feed.body.lock().unwrap() = serde_json::to_string(&next).unwrap();
    let refreshed = wait_until("the refresh", FEED, || async {
        let d = calendar(&t, &fixture_week()).await;
        (count(&d) == 25).then_some(d)
    })
    .await;
    assert_eq!(
        find(&refreshed["events"], "USD", "Nonfarm Payrolls")["forecast"],
        json!(150_000.0)
    );
    assert_eq!(refreshed["stale"], false);

    // The feed fails: the last good copy stays, marked stale, with its age.
    feed.failing.store(true, Ordering::SeqCst);
    let stale = wait_until("a failed refresh", FEED, || async {
        let d = calendar(&t, &fixture_week()).await;
        (d["stale"] == true).then_some(d)
    })
    .await;
    assert_eq!(
        (count(&stale), &stale["source"], &stale["available"]),
        (25, &json!("server"), &json!(true))
    );
    assert!(stale["as_of"].is_string(), "{stale}");
    assert!(stale["note"].as_str().unwrap().contains("503"), "{stale}");
    // A broken body is a failure too, not an empty calendar.
    feed.failing.store(false, Ordering::SeqCst);
    *feed.body.lock().unwrap() = "<html>maintenance</html>".into();
    let calls = feed.calls();
    wait_until("another failed refresh", FEED, || async {
        (feed.calls() > calls + 1).then_some(())
    })
    .await;
    let d = calendar(&t, &fixture_week()).await;
    assert_eq!((count(&d), &d["stale"]), (25, &json!(true)), "{d}");
    // Back: fresh again.
    *feed.body.lock().unwrap() = FIXTURE.to_owned();
    wait_until("recovery", FEED, || async {
        let d = calendar(&t, &fixture_week()).await;
        (d["stale"] == false && count(&d) == 24).then_some(())
    })
    .await;
    t.stack.stop().await;

    // CALENDAR_FILE overrides the feed: the file's events, the feed unused.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calendar.json");
    std::fs::write(
        &file,
        json!([{ "id": "file-1", "time": "2026-11-24T15:00:00Z", "currency": "USD",
                 "name": "From the file", "importance": "high" }])
        .to_string(),
    )
    .unwrap();
    let other = Feed::start(FIXTURE);
    let other_url = other.url();
    let t = spawn_with(
        Options {
            sims: 0,
            ..Options::default()
        },
        |s| {
            s.calendar_feed_url = Some(other_url);
            s.calendar_file = Some(file.clone());
        },
    )
    .await;
    t.stack
        .store
        .create_terminal(&t.creds.license_id, "offline")
        .await
        .unwrap();
    let d = calendar(&t, &fixture_week()).await;
    assert_eq!(
        (&d["source"], &d["available"], count(&d), &d["events"][0]["id"]),
        (&json!("server"), &json!(true), 1, &json!("file-1")),
        "{d}"
    );
    assert!(
        d.get("as_of").is_none() && d.get("stale").is_none(),
        "a file has no feed age: {d}"
    );
    assert_eq!(other.calls(), 0, "the feed is not fetched when a file is set");
    t.stack.stop().await;

    // Neither: `server`, no events, and it says so.
    let t = spawn_with(
        Options {
            sims: 0,
            ..Options::default()
        },
        |_| {},
    )
    .await;
    t.stack
        .store
        .create_terminal(&t.creds.license_id, "offline")
        .await
        .unwrap();
    let d = calendar(&t, &fixture_week()).await;
    assert_eq!(
        (&d["source"], &d["available"], count(&d)),
        (&json!("server"), &json!(false), 0),
        "{d}"
    );
    assert!(d["note"].as_str().unwrap().contains("CALENDAR_FEED_URL"), "{d}");
    t.stack.stop().await;
    feed.handle.stop(true).await;
    other.handle.stop(true).await;
}

/// The fixture moved in time so that its USD holiday starts at `at`.
fn fixture_with_usd_holiday_at(at: i64) -> String {
    let mut entries: Vec<Value> = serde_json::from_str(FIXTURE).unwrap();
    let holiday = parse_iso("2026-11-26T00:00:00-05:00").unwrap();
    let shift = at - holiday;
    for e in &mut entries {
        let t = parse_iso(e["date"].as_str().unwrap()).unwrap();
        e["date"] = json!(to_iso(t + shift));
    }
    serde_json::to_string(&entries).unwrap()
}

#[tokio::test]
async fn holding_risk_flags_holidays_of_the_symbols_currencies_with_the_specs_verdict() {
    let now = chrono::Utc::now().timestamp_millis();
    let feed = Feed::start(&fixture_with_usd_holiday_at(now + 2 * H));
    let url = feed.url();
    let t = spawn_with(
        Options {
            sims: 0,
            ..Options::default()
        },
        |s| s.calendar_feed_url = Some(url),
    )
    .await;
    // One MT4 terminal (no economic calendar): the server's feed is used.
    let (terminal, key) = t.stack.store.create_terminal(&t.creds.license_id, "mt4").await.unwrap();
    let sim = Simulator::new(
        SimSettings {
            platform: Platform::MT4,
            ..SimSettings::demo(7)
        },
        Arc::new(SystemClock::starting_at(WEDNESDAY_NOON, 1.0)),
    );
    let _agent = tradeterm_sim::spawn_agent(
        sim,
        tradeterm_sim::AgentSettings {
            url: format!("ws://127.0.0.1:{}/agent/v1", t.stack.gateway_port),
            terminal_key: key.expose().to_owned(),
            uid: "mt4-holding".into(),
            ca_file: None,
        },
    );
    wait_until("the MT4 agent", FEED, || async {
        t.stack.gateway.is_connected(&terminal.id).then_some(())
    })
    .await;
    wait_until("the feed", FEED, || async {
        let d = calendar(&t, &json!({})).await;
        (d["available"] == true).then_some(())
    })
    .await;

    let risk = |hold_hours: u32, symbol: &'static str| {
        let t = &t;
        async move {
            t.tool(
                "get_holding_risk",
                &json!({ "symbol": symbol, "hold_hours": hold_hours }),
            )
            .await
            .data()
        }
    };
    // block only when a high-importance release lands; any other exposure is caution.
    let verdict_of = |r: &Value| {
        let high_release = r["events"]
            .as_array()
            .is_some_and(|es| es.iter().any(|e| e["importance"] == "high"));
        match r["level"].as_str() {
            _ if high_release => "block",
            Some("low") => "proceed",
            _ => "caution",
        }
    };
    let r = risk(24, "EURUSD").await;
    assert_eq!(
        (&r["calendar_source"], &r["calendar_available"]),
        (&json!("server"), &json!(true)),
        "{r}"
    );
    let holidays = r["holidays"].as_array().unwrap();
    assert_eq!(holidays.len(), 1, "the USD holiday only (JPY is not EURUSD's): {r}");
    assert_eq!(holidays[0]["currency"], "USD");
    assert_eq!(
        parse_iso(holidays[0]["time"].as_str().unwrap()).unwrap(),
        parse_iso(&to_iso(now + 2 * H)).unwrap()
    );
    let flag = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "holiday")
        .unwrap_or_else(|| panic!("no holiday flag: {r}"));
    assert!(flag["detail"].as_str().unwrap().contains("USD"), "{flag}");
    assert_ne!(r["level"], "low", "{r}");
    assert_eq!(r["verdict"], verdict_of(&r), "{r}");
    // USDJPY: the JPY holiday of the same feed was three days earlier and is
    // over, so only the USD one is held through.
    let r = risk(24, "USDJPY").await;
    let currencies: Vec<&str> = r["holidays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["currency"].as_str().unwrap())
        .collect();
    assert_eq!(currencies, ["USD"], "{r}");
    assert_eq!(r["verdict"], verdict_of(&r), "{r}");
    // A hold that ends before the holiday starts is not exposed to it.
    let r = risk(1, "EURUSD").await;
    assert_eq!(r["holidays"], json!([]), "{r}");
    assert!(
        r["flags"].as_array().unwrap().iter().all(|f| f["kind"] != "holiday"),
        "{r}"
    );
    t.stack.stop().await;
    feed.handle.stop(true).await;
}
