//! The event stream (`GET /api/v1/events`) end to end: a real gateway, a
//! simulated terminal over the agent protocol, the REST API.
//!
//! - a live order placed and closed through REST produces `deal.added`,
//!   `order.filled`, `position.opened` and `position.closed` (reason
//!   `client`, with the closing deal) on an open stream, in id order;
//! - a stream dropped and resumed with `Last-Event-ID` receives every event
//!   in between exactly once, and `after=` gives the same;
//! - another license's stream sees none of them, and a terminal filter of
//!   another license's terminal is 404;
//! - a consumer that does not read is cut with `stream.cut` naming the id
//!   to resume from, and resuming there delivers the rest exactly once;
//! - bad filters are 400s naming the parameter; the Free tier's stream limit
//!   is a 429 with `Retry-After`; opening a stream counts one request;
//! - scaled out: a stream opened on a second API instance (Redis Streams)
//!   receives the events of the agent held by the first instance's gateway.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tradeterm_events::model::RuleData;
use tradeterm_events::{Draft, EventType};

use crate::harness::{Api, Expect, Options, TestStack, spawn, spawn_with};

/// One Server-Sent Event.
#[derive(Debug, Clone)]
struct Sse {
    id: Option<String>,
    event: String,
    data: Value,
}

/// A client reading one event stream.
struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    /// The next event (comments skipped), `None` at the end of the stream.
    async fn next(&mut self, within: Duration) -> Option<Sse> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (None, None, String::new());
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if let Some(event) = event {
                    let data: Value = serde_json::from_str(&data).unwrap();
                    assert_eq!(data["type"], event.as_str(), "the event line names the type");
                    assert_eq!(data["id"].as_str(), id.as_deref(), "the id line is the event's id");
                    return Some(Sse { id, event, data });
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.resp.chunk())
                .await
                .unwrap_or_else(|_| panic!("no event within {within:?}; buffered: {:?}", self.buf));
            match chunk.unwrap() {
                Some(bytes) => self.buf.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => return None,
            }
        }
    }

    /// The next event that is neither a quote nor an account reading.
    async fn next_durable(&mut self) -> Sse {
        loop {
            let e = self.next(Duration::from_secs(10)).await.expect("the stream ended");
            if e.event != "quote" && e.event != "account.changed" {
                return e;
            }
        }
    }

    /// Events up to and including the first of `kind`.
    async fn until(&mut self, kind: &str) -> Vec<Sse> {
        let mut out = Vec::new();
        loop {
            let e = self.next_durable().await;
            let done = e.event == kind;
            out.push(e);
            if done {
                return out;
            }
        }
    }

    /// Whether nothing but heartbeats, quotes and account readings arrive within `quiet`.
    async fn stays_quiet(&mut self, quiet: Duration) -> Result<(), Sse> {
        let deadline = tokio::time::Instant::now() + quiet;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            let next = tokio::time::timeout(left, self.next(Duration::from_secs(3600))).await;
            match next {
                Err(_) => return Ok(()),
                Ok(Some(e)) if e.event == "quote" || e.event == "account.changed" => {}
                Ok(Some(e)) => return Err(e),
                Ok(None) => panic!("the stream ended"),
            }
        }
    }
}

/// Opens `GET /api/v1/events?query` as `api`, with a `Last-Event-ID` header when given.
async fn open(
    api: &Api,
    query: &str,
    last_event_id: Option<&str>,
) -> Result<Stream, (u16, Value, reqwest::header::HeaderMap)> {
    let mut req = api.request(Method::GET, &format!("/api/v1/events{query}"));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    if status != 200 {
        let headers = resp.headers().clone();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        return Err((status, body, headers));
    }
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert_eq!(resp.headers()["cache-control"], "no-cache");
    Ok(Stream {
        resp,
        buf: String::new(),
    })
}

async fn open_ok(api: &Api, query: &str, last_event_id: Option<&str>) -> Stream {
    match open(api, query, last_event_id).await {
        Ok(s) => s,
        Err((status, body, _)) => panic!("GET /api/v1/events{query}: {status} {body}"),
    }
}

fn kinds(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

fn id_of(e: &Sse) -> tradeterm_events::EventId {
    e.id.as_deref().expect("a durable event has an id").parse().unwrap()
}

/// The stack with one simulated terminal whose allow-trading input is on.
async fn one_trading_terminal() -> TestStack {
    spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await
}

/// A live market buy of EURUSD.
fn live_buy(volume: f64) -> Value {
    json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": volume, "dry_run": false })
}

async fn live_order(api: &Api, body: Value) -> Value {
    api.place_order(&body).await.data()
}

#[tokio::test]
async fn trades_reach_an_open_stream_and_a_resumed_stream_gets_each_event_once() {
    let t = one_trading_terminal().await;
    let terminal = t.terminal(0).to_owned();
    let api = t.api().on(&terminal);
    let mut stream = open_ok(&t.api(), &format!("?terminal_id={terminal}"), None).await;

    // Open: the fill, then the position.
    let open_trade = live_order(&api, live_buy(0.1)).await;
    let position = open_trade["trade"]["position"].as_u64().unwrap();
    let opened = stream.until("position.opened").await;
    assert_eq!(kinds(&opened), ["deal.added", "order.filled", "position.opened"]);
    for e in &opened {
        assert_eq!(e.data["terminal_id"], terminal.as_str());
        assert_eq!(e.data["symbol"], "EURUSD");
        assert_eq!(e.data["version"], 1);
    }
    let p = &opened[2].data["data"];
    assert_eq!(
        (p["position"].as_u64(), &p["deal"]["entry"], &p["deal"]["side"]),
        (Some(position), &json!("in"), &json!("buy"))
    );
    assert!((p["deal"]["volume"].as_f64().unwrap() - 0.1).abs() < 1e-9);
    assert!(id_of(&opened[0]) < id_of(&opened[1]) && id_of(&opened[1]) < id_of(&opened[2]));

    // Close: the closing deal, with its price, profit and reason.
    let closed_trade = api.close_position(position, &json!({ "dry_run": false })).await.data();
    let closed = stream.until("position.closed").await;
    assert_eq!(kinds(&closed), ["deal.added", "order.filled", "position.closed"]);
    let c = &closed[2].data["data"];
    assert_eq!(
        (c["position"].as_u64(), &c["reason"], &c["deal"]["entry"]),
        (Some(position), &json!("client"), &json!("out"))
    );
    assert!((c["price"].as_f64().unwrap() - closed_trade["trade"]["price"].as_f64().unwrap()).abs() < 1e-9);
    assert!(c["profit"].is_number());
    let last_seen = closed[2].id.clone().unwrap();
    drop(stream);

    // While no stream is open: two more round trips.
    let mut missed_positions = Vec::new();
    for _ in 0..2 {
        let trade = live_order(
            &api,
            json!({ "symbol": "EURUSD", "order_type": "SELL", "volume": 0.2, "dry_run": false }),
        )
        .await;
        let ticket = trade["trade"]["position"].as_u64().unwrap();
        api.close_position(ticket, &json!({ "dry_run": false })).await.data();
        missed_positions.push(ticket);
    }
    // Resumed with Last-Event-ID: every event in between, once, in order.
    let mut resumed = open_ok(&t.api(), &format!("?terminal_id={terminal}"), Some(&last_seen)).await;
    let mut got = Vec::new();
    for _ in 0..2 {
        got.extend(resumed.until("position.closed").await);
    }
    assert_eq!(
        kinds(&got),
        [
            "deal.added",
            "order.filled",
            "position.opened",
            "deal.added",
            "order.filled",
            "position.closed",
            "deal.added",
            "order.filled",
            "position.opened",
            "deal.added",
            "order.filled",
            "position.closed",
        ]
    );
    let ids: Vec<_> = got.iter().map(id_of).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "strictly increasing: {ids:?}");
    assert!(ids[0] > last_seen.parse().unwrap());
    let closed_positions: Vec<u64> = got
        .iter()
        .filter(|e| e.event == "position.closed")
        .map(|e| e.data["data"]["position"].as_u64().unwrap())
        .collect();
    assert_eq!(closed_positions, missed_positions);
    // Nothing more (no duplicate of anything already received).
    if let Err(e) = resumed.stays_quiet(Duration::from_millis(500)).await {
        panic!("an event after the resumed ones: {e:?}");
    }
    // `after=` is the same resume.
    let types = "deal.added,order.filled,position.opened,position.closed";
    let mut by_query = open_ok(&t.api(), &format!("?after={last_seen}&types={types}"), None).await;
    for expected in &got {
        let e = by_query.next_durable().await;
        assert_eq!(
            (e.id.as_deref(), e.event.as_str()),
            (expected.id.as_deref(), expected.event.as_str())
        );
    }
    // A type filter keeps the others out.
    let mut only_closes = open_ok(&t.api(), &format!("?after={last_seen}&types=position.closed"), None).await;
    for ticket in &missed_positions {
        let e = only_closes.next_durable().await;
        assert_eq!(
            (e.event.as_str(), e.data["data"]["position"].as_u64()),
            ("position.closed", Some(*ticket))
        );
    }
    t.stack.stop().await;
}

#[tokio::test]
async fn another_license_sees_nothing_and_bad_requests_change_nothing() {
    let t = one_trading_terminal().await;
    let terminal = t.terminal(0).to_owned();
    let (_, other_key) = t.other_license(tradeterm_store::Tier::Pro).await;
    let other = t.api_as(&other_key);
    // From the start of its log, and live.
    let mut theirs = open_ok(&other, "?after=0-0", None).await;
    let mut mine = open_ok(&t.api(), "", None).await;
    let trade = live_order(&t.api().on(&terminal), live_buy(0.1)).await;
    assert!(trade["trade"]["position"].is_u64());
    mine.until("position.opened").await;
    if let Err(e) = theirs.stays_quiet(Duration::from_millis(700)).await {
        panic!("another license's stream got {e:?}");
    }
    // Its filter cannot name our terminal.
    let (status, body, _) = open(&other, &format!("?terminal_id={terminal}"), None)
        .await
        .err()
        .unwrap();
    assert_eq!((status, &body["error"]["code"]), (404, &json!("NOT_FOUND")), "{body}");

    for (query, needle) in [
        ("?types=order.fill", "types"),
        ("?types=", "types"),
        ("?symbols=EUR%20USD", "symbols"),
        ("?terminal_id=no%20such", "terminal_id"),
        ("?after=12", "after"),
        ("?unknown=1", "unknown"),
    ] {
        let (status, body, _) = open(&t.api(), query, None).await.err().unwrap();
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &json!("VALIDATION_ERROR")),
            "{query}: {body}"
        );
        assert!(
            body["error"]["message"].as_str().unwrap().contains(needle),
            "{query}: {body}"
        );
    }
    let (status, body, _) = open(&t.api(), "", Some("yesterday")).await.err().unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("Last-Event-ID"));
    let (status, body, _) = open(&t.api(), "?terminal_id=term_none", None).await.err().unwrap();
    assert_eq!((status, &body["error"]["code"]), (404, &json!("NOT_FOUND")), "{body}");
    let (status, _, _) = open(&t.anonymous(), "", None).await.err().unwrap();
    assert_eq!(status, 401);
    t.stack.stop().await;
}

#[tokio::test]
async fn a_consumer_that_does_not_read_is_cut_with_the_id_to_resume_from() {
    let t = spawn_with(
        Options {
            sims: 1,
            ..Options::default()
        },
        |s| s.events_stream_buffer = 64,
    )
    .await;
    let license = t.creds.license_id.clone();
    let mut stream = open_ok(&t.api(), "?types=alert.fired", None).await;
    // Far more than the buffer and the sockets' buffers hold (about 20 MB of frames).
    const TOTAL: usize = 60_000;
    let filler = "x".repeat(200);
    for n in 0..TOTAL {
        let data = RuleData {
            rule: format!("rule_{n}"),
            message: filler.clone(),
            symbol: None,
            details: json!({ "n": n }),
        };
        t.stack.events.publish(
            &license,
            Draft::new(EventType::AlertFired, tradeterm_events::now_ms(), None, &data),
        );
    }
    assert!(
        t.stack.events.flush(Duration::from_secs(60)).await,
        "the events were appended"
    );
    // Now read: what was buffered, then the cut, then the end.
    let mut received = Vec::new();
    let cut = loop {
        let e = stream
            .next(Duration::from_secs(30))
            .await
            .expect("a stream.cut before the end");
        if e.event == "stream.cut" {
            break e;
        }
        assert_eq!(e.event, "alert.fired");
        received.push(e);
    };
    assert!(
        received.len() < TOTAL,
        "the consumer was cut before the end ({} received)",
        received.len()
    );
    let resume_after = cut.data["data"]["resume_after"].as_str().unwrap().to_owned();
    assert_eq!(
        Some(resume_after.as_str()),
        received.last().and_then(|e| e.id.as_deref())
    );
    assert!(
        stream.next(Duration::from_secs(5)).await.is_none(),
        "nothing after the cut"
    );
    // Resuming there: the rest, once, in order (read as fast as it comes).
    let mut resumed = open_ok(&t.api(), "?types=alert.fired", Some(&resume_after)).await;
    let mut next_n = received.len();
    while next_n < TOTAL {
        let e = resumed
            .next(Duration::from_secs(30))
            .await
            .expect("the rest of the events");
        if e.event == "stream.cut" {
            // A slow reader here too: resume again, as a client would.
            let after = e.data["data"]["resume_after"].as_str().unwrap().to_owned();
            resumed = open_ok(&t.api(), "?types=alert.fired", Some(&after)).await;
            continue;
        }
        assert_eq!(
            e.data["data"]["details"]["n"], next_n,
            "in order, none twice, none missing"
        );
        next_n += 1;
    }
    t.stack.stop().await;
}

#[tokio::test]
async fn the_free_tier_may_open_two_streams_at_once_and_each_counts_one_request() {
    let t = spawn_with(
        Options {
            sims: 1,
            redis: true,
            window_ms: 3_600_000,
            ..Options::default()
        },
        // A client that left is noticed at the next heartbeat; room in the
        // window for the polling below.
        |s| {
            s.events_heartbeat_ms = 1_000;
            s.api_rate_limit_free = 1_000;
        },
    )
    .await;
    let (_, free_key) = t.other_license(tradeterm_store::Tier::Free).await;
    let free = t.api_as(&free_key);
    let first = open_ok(&free, "", None).await;
    let second = open_ok(&free, "", None).await;
    assert_eq!(first.resp.headers()["x-ratelimit-remaining"], "999");
    assert_eq!(second.resp.headers()["x-ratelimit-remaining"], "998");
    let (status, body, headers) = open(&free, "", None).await.err().unwrap();
    assert_eq!(
        (status, &body["error"]["code"]),
        (429, &json!("RATE_LIMITED")),
        "{body}"
    );
    assert!(
        body["error"]["message"].as_str().unwrap().contains("event streams"),
        "{body}"
    );
    assert!(headers.contains_key("retry-after"));
    drop(first);
    // The slot is free again once the server notices the client left.
    crate::harness::wait_until("a stream slot freed", Duration::from_secs(10), || {
        let free = free.clone();
        async move { open(&free, "", None).await.ok() }
    })
    .await;
    t.stack.stop().await;
}

#[tokio::test]
async fn a_stream_on_a_second_api_instance_receives_the_first_instance_s_agent_events() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        redis: true,
        window_ms: 3_600_000,
        ..Options::default()
    })
    .await;
    let settings = tradeterm::Settings {
        keyvalue_url: Some("redis://127.0.0.1:6379".into()),
        api_rate_limit_window_ms: 3_600_000,
        ..tradeterm::Settings::default()
    };
    let second = second_instance(&t, &settings);
    let terminal = t.terminal(0).to_owned();
    let mut stream = open_ok(&t.api().at(&second), &format!("?terminal_id={terminal}"), None).await;
    // Give the second instance's subscription to the event channel time to
    // come up: a stream opened before it still gets everything (it reads
    // the log when the subscription comes up), so this only keeps the test short.
    let trade = live_order(&t.api().on(&terminal), live_buy(0.1)).await;
    let position = trade["trade"]["position"].as_u64().unwrap();
    let opened = stream.until("position.opened").await;
    assert_eq!(opened.last().unwrap().data["data"]["position"].as_u64(), Some(position));
    // And resumes on the first instance from an id the second gave.
    let id = opened[0].id.clone().unwrap();
    let mut on_first = open_ok(&t.api(), &format!("?terminal_id={terminal}"), Some(&id)).await;
    let rest = on_first.until("position.opened").await;
    assert_eq!(kinds(&rest), kinds(&opened[1..]));
    t.stack.stop().await;
}

/// A second REST instance over the stack's store and gateway, with its own
/// services (and so its own event engine on the same Redis).
fn second_instance(t: &TestStack, settings: &tradeterm::Settings) -> String {
    let services = settings
        .services(Arc::new(t.stack.gateway.clone()), t.stack.store.clone())
        .unwrap();
    let state = tradeterm_rest::AppState::new(
        tradeterm_rest::RestSettings::default(),
        services,
        tradeterm::keys::verifier(settings, &t.key_paths()).unwrap(),
        tradeterm_protocol::http_client::GatewayClient::new(&t.gateway).unwrap(),
    );
    let server = tradeterm_rest::RestServer::build(state, std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
    let url = format!("http://127.0.0.1:{}", server.port());
    tokio::spawn(server.run_until_stopped());
    url
}

#[tokio::test]
async fn alerts_and_equity_guard_breaches_reach_the_stream() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let terminal = t.terminal(0).to_owned();
    let api = t.api().on(&terminal);
    let mut stream = open_ok(&t.api(), "?types=alert.fired,equity_guard.breached", None).await;
    let equity = api.account().await.data()["equity"].as_f64().unwrap();
    // An account threshold already crossed fires at the next account reading.
    let alert = api
        .tool(
            "set_alert",
            &json!({ "condition": { "kind": "equity_below", "level": equity + 1_000.0 }, "label": "below" }),
        )
        .await
        .data();
    let alert_id = alert["alert"]["id"]
        .as_str()
        .or(alert["id"].as_str())
        .unwrap()
        .to_owned();
    // A floor above the equity is breached at the guard's first observation.
    api.tool("set_equity_guard", &json!({ "equity_floor": equity + 100.0 }))
        .await
        .data();
    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < 2 {
        let e = stream.next_durable().await;
        seen.insert(e.event.clone(), e);
    }
    let fired = &seen["alert.fired"].data;
    assert_eq!(
        (&fired["data"]["rule"], &fired["terminal_id"]),
        (&json!(alert_id), &json!(terminal)),
        "{fired}"
    );
    assert_eq!(fired["data"]["details"]["label"], "below");
    let breached = &seen["equity_guard.breached"].data;
    assert_eq!(breached["data"]["rule"], "equity_floor", "{breached}");
    assert_eq!(breached["data"]["details"]["source"], "equity_guard");
    assert!((breached["data"]["details"]["equity"].as_f64().unwrap() - equity).abs() < 1.0);
    t.stack.stop().await;
}

#[tokio::test]
async fn the_events_command_prints_the_stream_and_resumes_where_it_stopped() {
    use tradeterm::events_cli::{Ended, EventsArgs, run};
    let t = one_trading_terminal().await;
    let terminal = t.terminal(0).to_owned();
    let api = t.api().on(&terminal);
    let trade = live_order(&api, live_buy(0.1)).await;
    let position = trade["trade"]["position"].as_u64().unwrap();
    api.close_position(position, &json!({ "dry_run": false })).await.data();
    let args = EventsArgs {
        rest_url: t.rest.clone(),
        api_key: t.creds.api_key.clone(),
        types: Some("deal.added,order.filled,position.opened,position.closed".into()),
        terminal: Some(terminal.clone()),
        symbols: None,
        timeframes: None,
        after: Some("0-0".into()),
        json: true,
        no_quotes: true,
        limit: Some(3),
        no_reconnect: true,
    };
    let mut out = Vec::new();
    assert_eq!(run(&args, &mut out).await.unwrap(), Ended::Limit);
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["deal.added", "order.filled", "position.opened"]);
    // From the third one's id: the close, as lines for a person.
    let after = lines[2]["id"].as_str().unwrap().to_owned();
    let mut out = Vec::new();
    let human = EventsArgs {
        after: Some(after),
        json: false,
        ..args.clone()
    };
    assert_eq!(run(&human, &mut out).await.unwrap(), Ended::Limit);
    let text = String::from_utf8(out).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("position.closed")
            && last.contains(&format!("position={position}"))
            && last.contains("reason=client"),
        "{text}"
    );
    // A refused credential is an error (exit 2), not a retry loop.
    let refused = run(
        &EventsArgs {
            api_key: "svc_api_nope".into(),
            ..args.clone()
        },
        &mut Vec::new(),
    )
    .await;
    assert_eq!(tradeterm::events_cli::exit_code(&refused), 2);
    assert!(refused.unwrap_err().to_string().contains("401"));
    t.stack.stop().await;
}

#[tokio::test]
async fn a_live_order_the_checks_refuse_is_an_order_rejected_event_and_a_dry_run_is_not() {
    let t = one_trading_terminal().await;
    let terminal = t.terminal(0).to_owned();
    let api = t.api().on(&terminal);
    let mut stream = open_ok(&t.api(), "?types=order.rejected", None).await;
    // Far below the volume step: refused before anything is sent.
    let dry = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.0001 });
    let failure = api.place_order(&dry).await.expect_err("refused");
    assert_eq!(failure.status, 422, "{failure}");
    let live = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.0001, "dry_run": false });
    let failure = api.place_order(&live).await.expect_err("refused");
    assert_eq!(failure.status, 422, "{failure}");
    let e = stream.next_durable().await;
    assert_eq!(
        (e.event.as_str(), &e.data["symbol"], &e.data["terminal_id"]),
        ("order.rejected", &json!("EURUSD"), &json!(terminal))
    );
    let reason = e.data["data"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("place_order") && reason.contains(failure.retcode().unwrap()),
        "{reason}"
    );
    if let Err(e) = stream.stays_quiet(Duration::from_millis(500)).await {
        panic!("one rejection, not the dry run's too: {e:?}");
    }
    t.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_news_guard_release_alert_is_pushed_once_as_news_guard_alert() {
    // A watched release 62 s ahead: with a 1-minute lead its alert is due in 2 s.
    let now = chrono::Utc::now().timestamp_millis();
    let release = now + 62_000;
    let calendar = json!([
        { "id": "nfp-1", "time": tradeterm_core::time::to_iso(release), "currency": "USD", "country": "US",
          "name": "Non-Farm Payrolls", "importance": "high", "category": "employment" },
        { "id": "jp-1", "time": tradeterm_core::time::to_iso(release), "currency": "JPY", "country": "JP",
          "name": "Not watched", "importance": "high", "category": "growth" }
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calendar.json");
    std::fs::write(&file, calendar.to_string()).unwrap();
    let t = spawn_with(
        Options {
            sims: 1,
            news_watch: tradeterm_tools::news_watch::NewsWatchSettings {
                interval: Duration::from_millis(200),
            },
            ..Options::default()
        },
        |s| s.calendar_file = Some(file),
    )
    .await;
    let api = t.api();
    let mut stream = open_ok(&api, "?types=news_guard.alert", None).await;
    api.tool(
        "set_news_guard",
        &json!({ "currencies": ["USD"], "lead_minutes": 1, "include_news": false }),
    )
    .await
    .data();
    let e = stream.next_durable().await;
    assert_eq!(e.event, "news_guard.alert");
    let data: RuleData = serde_json::from_value(e.data["data"].clone()).unwrap();
    assert_eq!(data.rule, "news_guard");
    assert!(data.message.contains("Non-Farm Payrolls"), "{}", data.message);
    assert_eq!(data.details["id"], "release:nfp-1:1");
    assert_eq!(data.details["kind"], "release_ahead");
    assert!(e.data.get("terminal_id").is_none(), "a license's guard: no terminal");
    // Once: the watcher's next rounds publish nothing more, and the
    // unwatched currency never.
    assert!(stream.stays_quiet(Duration::from_millis(1500)).await.is_ok());
}
