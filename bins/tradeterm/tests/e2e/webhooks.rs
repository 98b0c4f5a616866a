//! Webhooks end to end (`docs/events.md`, "Webhooks"): receivers on
//! loopback (a tiny HTTP server per receiver), the single-node stack with
//! `WEBHOOK_ALLOW_PRIVATE` and short retry delays.
//!
//! - a live order placed and closed through REST reaches the endpoint as
//!   `deal.added`, `order.filled`, `position.opened`, `position.closed`,
//!   each body the event's JSON with `Tradeterm-Event-Id` and a valid
//!   `Tradeterm-Signature` (the HMAC recomputed here);
//! - a receiver answering 500 twice then 200 gets the event three times and
//!   the delivery ends delivered, as its delivery log shows;
//! - another license's endpoint receives nothing of these, and cannot read
//!   or change this license's endpoints;
//! - private or loopback targets without the setting are refused with 400
//!   naming `url`; the 11th endpoint is refused; an API key cannot manage;
//! - deliveries pending when the stack stops are delivered by the next
//!   stack on the same data.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tradeterm_tools::webhooks::sign;

use crate::harness::{Expect, Options, TestStack, spawn, spawn_with, wait_until};

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    event_id: String,
    signature: String,
    body: String,
    answered: u16,
}

/// A loopback HTTP receiver answering from a script of statuses (then `then`).
#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
    then: Arc<Mutex<u16>>,
}

impl Receiver {
    async fn start(script: &[u16], then: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
        let r = Self {
            url,
            got: Arc::default(),
            script: Arc::new(Mutex::new(script.iter().copied().collect())),
            then: Arc::new(Mutex::new(then)),
        };
        let me = r.clone();
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else { return };
                let me = me.clone();
                tokio::spawn(async move { me.serve(sock).await });
            }
        });
        r
    }

    async fn serve(&self, mut sock: tokio::net::TcpStream) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            let Ok(n) = sock.read(&mut chunk).await else { return };
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let header = |name: &str| {
            head.lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                })
                .unwrap_or_default()
        };
        let len: usize = header("content-length").parse().unwrap_or(0);
        while buf.len() < head_end + len {
            let Ok(n) = sock.read(&mut chunk).await else { return };
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).to_string();
        let status = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(*self.then.lock().unwrap());
        self.got.lock().unwrap().push(Received {
            event_id: header("tradeterm-event-id"),
            signature: header("tradeterm-signature"),
            body,
            answered: status,
        });
        let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        let _ = sock.write_all(reply.as_bytes()).await;
        let _ = sock.shutdown().await;
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    fn answer(&self, status: u16) {
        *self.then.lock().unwrap() = status;
    }
}

/// Checks the signature of `r` with `secret`, and that its body is the event its id header names.
fn assert_signed(r: &Received, secret: &str) -> Value {
    let (t, v1) = r.signature.split_once(",v1=").expect("t=…,v1=…");
    let t: i64 = t.strip_prefix("t=").unwrap().parse().unwrap();
    assert_eq!(sign::signature(secret, t, &r.body), r.signature, "the HMAC verifies");
    assert_eq!(v1.len(), 64);
    let now = chrono::Utc::now().timestamp();
    assert!((now - t).abs() < 120, "t is the time of the post");
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["id"].as_str(), Some(r.event_id.as_str()));
    body
}

fn fast(s: &mut tradeterm::Settings) {
    s.webhook_allow_private = true;
    s.webhook_retry_base_ms = 50;
    s.webhook_retry_max_ms = 200;
}

async fn create(t: &TestStack, master: &str, url: &str, types: &[&str]) -> (String, String) {
    let data = t
        .api_as(master)
        .post("/api/webhooks", &json!({ "url": url, "types": types }))
        .await
        .data();
    (
        data["webhook"]["webhook_id"].as_str().unwrap().to_owned(),
        data["secret"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn deliveries_are_signed_retried_and_kept_to_their_license() {
    let t = spawn_with(
        Options {
            sims: 1,
            allow_trading: true,
            ..Options::default()
        },
        fast,
    )
    .await;
    let master = t.creds.license_key.clone();
    let (other, other_master) = t
        .stack
        .store
        .create_license("other", tradeterm_store::Tier::Pro)
        .await
        .unwrap();
    let other_master = other_master.expose().to_owned();

    let a = Receiver::start(&[], 200).await;
    let b = Receiver::start(&[500, 500], 200).await;
    let o = Receiver::start(&[], 200).await;
    let kinds = ["deal.added", "order.filled", "position.opened", "position.closed"];
    let (a_id, a_secret) = create(&t, &master, &a.url, &kinds).await;
    let (b_id, _) = create(&t, &master, &b.url, &["position.opened"]).await;
    let (o_id, _) = create(&t, &other_master, &o.url, &[]).await;
    assert!(a_id.starts_with("whk_") && a_secret.starts_with("whsec_"));

    // Listed without secrets.
    let list = t.master().get("/api/webhooks").await.data();
    assert_eq!(list["webhooks"].as_array().unwrap().len(), 2, "{list}");
    assert!(!list.to_string().contains(&a_secret));

    // A live order opened and closed through REST.
    let api = t.api().on(t.terminal(0));
    let opened = api
        .place_order(&json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false }))
        .await
        .data();
    let position = opened["trade"]["position"].as_u64().unwrap();
    api.close_position(position, &json!({ "dry_run": false })).await.data();

    let got = wait_until("the receiver got the close", Duration::from_secs(15), || {
        let got = a.got();
        async move { got.iter().any(|r| r.body.contains("position.closed")).then_some(got) }
    })
    .await;
    let mut types = Vec::new();
    for r in &got {
        let body = assert_signed(r, &a_secret);
        assert_eq!(body["terminal_id"], t.terminal(0));
        types.push(body["type"].as_str().unwrap().to_owned());
    }
    for k in kinds {
        assert!(types.iter().any(|t| t == k), "{k} missing from {types:?}");
    }
    assert!(
        types.iter().all(|t| kinds.contains(&t.as_str())),
        "the filter holds: {types:?}"
    );
    let ids: Vec<&str> = got.iter().map(|r| r.event_id.as_str()).collect();
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "each event once: {ids:?}");

    // B: 500, 500, then 200 for the same event; delivered in the end.
    let detail = wait_until("B's delivery ends delivered", Duration::from_secs(15), || {
        let m = t.master();
        let path = format!("/api/webhooks/{b_id}");
        async move {
            let d = m.get(&path).await.data();
            // The route reads the endpoint, its counts and its attempts in
            // separate queries: one answer may hold the counts after the
            // success and the endpoint (its failing streak) from before
            // it. Wait until every part shows the success; a streak never
            // cleared still fails here, by the deadline.
            (d["deliveries"]["delivered"] == 1
                && d["webhook"].get("failing_since").is_none()
                && d["attempts"][0]["outcome"] == "delivered")
                .then_some(d)
        }
    })
    .await;
    let b_got = b.got();
    assert_eq!(b_got.len(), 3, "{b_got:?}");
    assert!(
        b_got.iter().all(|r| r.event_id == b_got[0].event_id),
        "the same event retried"
    );
    assert_eq!(b_got.iter().map(|r| r.answered).collect::<Vec<_>>(), [500, 500, 200]);
    let attempts: Vec<(i64, Option<i64>, &str)> = detail["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["attempt"].as_i64().unwrap(),
                a["status"].as_i64(),
                a["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            (3, Some(200), "delivered"),
            (2, Some(500), "retrying"),
            (1, Some(500), "retrying")
        ],
        "{detail}"
    );
    assert!(detail["attempts"][0]["latency_ms"].is_i64());
    assert!(
        detail["webhook"].get("failing_since").is_none(),
        "a success ends the streak"
    );

    // The other license got nothing of these, and reaches nothing of ours.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(o.got().is_empty(), "another license's endpoint got {:?}", o.got());
    let theirs = t.api_as(&other_master);
    theirs
        .get(&format!("/api/webhooks/{a_id}"))
        .await
        .failure(404, "NOT_FOUND");
    theirs
        .delete(&format!("/api/webhooks/{a_id}"))
        .await
        .failure(404, "NOT_FOUND");
    let their_list = theirs.get("/api/webhooks").await.data();
    assert_eq!(their_list["webhooks"].as_array().unwrap().len(), 1);
    assert_eq!(their_list["webhooks"][0]["webhook_id"], o_id.as_str());
    assert!(t.stack.store.list_webhooks(&other.id).await.unwrap().len() == 1);

    // An API key cannot manage webhooks.
    t.tool("list_webhooks", &json!({}))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("master key");

    // The 11th endpoint is refused.
    for i in 2..10 {
        create(&t, &master, &format!("{}/{i}", a.url), &[]).await;
    }
    t.master()
        .post("/api/webhooks", &json!({ "url": a.url }))
        .await
        .failure(409, "WEBHOOK_LIMIT")
        .mentions("at most 10");
    // Bad filters and URLs, whatever the setting.
    t.master()
        .post("/api/webhooks", &json!({ "url": "ftp://example.com/" }))
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("url");
    t.master()
        .post(&format!("/api/webhooks/{a_id}/test"), &json!({}))
        .await
        .data();
    let tested = a.got().last().cloned().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&tested.body).unwrap()["type"],
        "webhook.test"
    );
    t.stack.stop().await;
}

#[tokio::test]
async fn private_targets_are_refused_without_the_setting() {
    let t = spawn(Options {
        sims: 0,
        ..Options::default()
    })
    .await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.1.2.3/hook",
    ] {
        t.master()
            .post("/api/webhooks", &json!({ "url": url }))
            .await
            .failure_for(400, "VALIDATION_ERROR", url)
            .mentions("url")
            .mentions("WEBHOOK_ALLOW_PRIVATE");
    }
    // IPv6 literals are outside the target form the schema states.
    t.master()
        .post("/api/webhooks", &json!({ "url": "http://[::1]:9/hook" }))
        .await
        .failure_for(400, "VALIDATION_ERROR", "an IPv6 literal")
        .mentions("url")
        .mentions("IPv6");
    t.master()
        .post(
            "/api/webhooks",
            &json!({ "url": "https://93.184.216.34/h", "types": ["quote"] }),
        )
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("types");
    assert!(
        t.master().get("/api/webhooks").await.data()["webhooks"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    t.stack.stop().await;
}

#[tokio::test]
async fn deliveries_pending_at_a_stop_are_delivered_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        sims: 1,
        allow_trading: true,
        data_dir: Some(dir.path().to_path_buf()),
        ..Options::default()
    };
    let t = spawn_with(opts(), fast).await;
    let master = t.creds.license_key.clone();
    // Down at first: every attempt fails.
    let r = Receiver::start(&[], 503).await;
    let (id, secret) = create(&t, &master, &r.url, &["position.opened", "position.closed"]).await;
    let api = t.api().on(t.terminal(0));
    let opened = api
        .place_order(&json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false }))
        .await
        .data();
    let position = opened["trade"]["position"].as_u64().unwrap();
    api.close_position(position, &json!({ "dry_run": false })).await.data();
    wait_until("both events are pending and tried", Duration::from_secs(15), || {
        let m = t.master();
        let path = format!("/api/webhooks/{id}");
        async move {
            let d = m.get(&path).await.data();
            let tried: std::collections::HashSet<String> = d["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["event_id"].as_str().unwrap().to_owned())
                .collect();
            (d["deliveries"]["pending"] == 2 && tried.len() == 2).then_some(())
        }
    })
    .await;
    let pending: std::collections::HashSet<String> = r.got().iter().map(|g| g.event_id.clone()).collect();
    t.stack.stop().await;

    // The receiver is back; a new stack on the same data delivers both.
    r.answer(200);
    let t = spawn_with(opts(), fast).await;
    let delivered = wait_until("delivered after the restart", Duration::from_secs(20), || {
        let got = r.got();
        let pending = pending.clone();
        async move {
            let ok: std::collections::HashSet<String> = got
                .iter()
                .filter(|g| g.answered == 200)
                .map(|g| g.event_id.clone())
                .collect();
            (ok == pending).then_some(got)
        }
    })
    .await;
    for g in delivered.iter().filter(|g| g.answered == 200) {
        assert_signed(g, &secret);
    }
    // The receiver has answered both; the sender records each outcome after
    // its answer arrives, so the counts follow within a moment.
    let master = t.master();
    let d = wait_until("both deliveries recorded", Duration::from_secs(10), || async {
        let d = master.get(&format!("/api/webhooks/{id}")).await.data();
        let counts = (
            d["deliveries"]["pending"].as_i64(),
            d["deliveries"]["delivered"].as_i64(),
        );
        (counts == (Some(0), Some(2))).then_some(d)
    })
    .await;
    assert_eq!(d["deliveries"]["failed"].as_i64(), Some(0), "{d}");
    let ok_twice = delivered.iter().filter(|g| g.answered == 200).count();
    assert_eq!(ok_twice, 2, "each event delivered once");
    t.stack.stop().await;
}

/// The bars `get_bars` returns for `[from, to)`.
async fn bars_between(t: &TestStack, symbol: &str, timeframe: &str, from: i64, to: i64) -> Vec<tradeterm_core::Bar> {
    let iso = tradeterm_core::time::to_iso;
    let input = json!({ "symbol": symbol, "timeframe": timeframe, "from": iso(from), "to": iso(to) });
    crate::harness::data::bars_of(&t.api().on(t.terminal(0)).tool("get_bars", &input).await.data())
}

#[tokio::test]
async fn an_endpoint_subscribing_bars_gets_their_closed_bars_without_a_stream() {
    use crate::harness::WEDNESDAY_NOON;
    const MIN: i64 = 60_000;
    let clock = Arc::new(tradeterm_sim::ManualClock::new(WEDNESDAY_NOON + 45_000));
    let t = spawn_with(
        Options {
            sims: 1,
            sim_clock: Some(clock.clone()),
            ..Options::default()
        },
        fast,
    )
    .await;
    let master = t.creds.license_key.clone();
    let interests = t.stack.events.bar_interests().clone();
    assert_eq!(interests.len(), 0, "no stream, no endpoint: nothing watched");

    // Refused, and nothing created: an unknown timeframe, a bad symbol,
    // more symbols than the schema allows, one list empty.
    let r = Receiver::start(&[], 200).await;
    let m = t.master();
    let refused = [
        json!({ "url": r.url, "bars": { "symbols": ["EURUSD"], "timeframes": ["M7"] } }),
        json!({ "url": r.url, "bars": { "symbols": ["EUR USD"], "timeframes": ["M1"] } }),
        json!({ "url": r.url, "bars": { "symbols": (0..17).map(|i| format!("SYM{i}")).collect::<Vec<_>>(),
                                        "timeframes": ["M1"] } }),
        json!({ "url": r.url, "bars": { "symbols": [], "timeframes": ["M1"] } }),
    ];
    for body in &refused {
        m.post("/api/webhooks", body)
            .await
            .failure_for(400, "VALIDATION_ERROR", body)
            .mentions("bars");
    }
    assert!(
        m.get("/api/webhooks").await.data()["webhooks"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // One endpoint subscribes EURUSD M1; another takes bar.closed without
    // subscribing any series.
    let created = m
        .post(
            "/api/webhooks",
            &json!({ "url": r.url, "types": ["bar.closed"], "bars": { "symbols": ["EURUSD", "EURUSD"], "timeframes": ["M1"] } }),
        )
        .await
        .data();
    assert_eq!(
        created["webhook"]["bars"],
        json!({ "symbols": ["EURUSD"], "timeframes": ["M1"] }),
        "shown with the endpoint, each name once: {created}"
    );
    let id = created["webhook"]["webhook_id"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap().to_owned();
    let plain = Receiver::start(&[], 200).await;
    create(&t, &master, &plain.url, &["bar.closed"]).await;
    wait_until("the endpoint's series is watched", Duration::from_secs(10), || {
        let n = interests.len();
        async move { (n == 1).then_some(()) }
    })
    .await;
    // A quote after the interest (the watcher hears the feed a quote stream
    // does): the bar forming now is the first the watcher publishes.
    let mut quotes = t
        .api()
        .request(reqwest::Method::GET, "/api/v1/events?types=quote&symbols=EURUSD")
        .send()
        .await
        .unwrap();
    assert_eq!(quotes.status().as_u16(), 200);
    let mut seen = String::new();
    while !seen.contains("event: quote") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), quotes.chunk())
            .await
            .expect("a quote within 30 s")
            .unwrap()
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(quotes);

    clock.set(WEDNESDAY_NOON + MIN + 45_000);
    clock.set(WEDNESDAY_NOON + 2 * MIN + 45_000);
    let expected = bars_between(&t, "EURUSD", "M1", WEDNESDAY_NOON, WEDNESDAY_NOON + 2 * MIN).await;
    assert_eq!(expected.len(), 2, "the simulated market traded: {expected:?}");
    let got = wait_until("both closed bars were delivered", Duration::from_secs(30), || {
        let got = r.got();
        async move { (got.len() >= 2).then_some(got) }
    })
    .await;
    let mut delivered = Vec::new();
    for g in &got {
        let body = assert_signed(g, &secret);
        assert_eq!(body["type"], "bar.closed", "{body}");
        assert_eq!(
            (&body["data"]["symbol"], &body["data"]["timeframe"]),
            (&json!("EURUSD"), &json!("M1"))
        );
        delivered.push(crate::harness::data::bar_of(&body["data"]["bar"]));
    }
    assert_eq!(delivered, expected, "each closed bar once, as get_bars returns it");
    assert!(
        plain.got().is_empty(),
        "an endpoint that subscribed no series gets none of another's bars: {:?}",
        plain.got()
    );

    // Giving the bars up stops the watching.
    let changed = m
        .send(
            reqwest::Method::PATCH,
            &format!("/api/webhooks/{id}"),
            Some(&json!({ "bars": { "symbols": [], "timeframes": [] } })),
        )
        .await
        .envelope()
        .data();
    assert!(changed.get("bars").is_none(), "{changed}");
    wait_until("nothing is watched any more", Duration::from_secs(10), || {
        let n = interests.len();
        async move { (n == 0).then_some(()) }
    })
    .await;
    // Bars with a type filter leaving bar.closed out: bar.closed is added
    // (subscribing to bars is asking for them), on update as at creation.
    let changed = m
        .send(
            reqwest::Method::PATCH,
            &format!("/api/webhooks/{id}"),
            Some(&json!({ "types": ["order.filled"], "bars": { "symbols": ["EURUSD"], "timeframes": ["H1"] } })),
        )
        .await
        .envelope()
        .data();
    assert_eq!(changed["types"], json!(["order.filled", "bar.closed"]), "{changed}");
    let other = Receiver::start(&[], 200).await;
    let made = m
        .post(
            "/api/webhooks",
            &json!({ "url": other.url, "types": ["order.filled"], "bars": { "symbols": ["EURUSD"], "timeframes": ["H1"] } }),
        )
        .await
        .data();
    assert_eq!(
        made["webhook"]["types"],
        json!(["order.filled", "bar.closed"]),
        "{made}"
    );
    t.stack.stop().await;
}
