//! `kill -9` of `tradeterm serve` while webhook deliveries are in flight
//! (issue 29, "Done when"; `docs/events.md`, "Webhooks"): the built binary
//! as a child process on a file SQLite store (its data dir), a receiver in
//! this test on loopback (`WEBHOOK_ALLOW_PRIVATE=true`).
//!
//! 1. An endpoint with a type filter; the events of the filter are read from
//!    the REST event stream as well (the list of what was produced, which
//!    the webhook path does not write).
//! 2. Two live positions opened through REST: the receiver answers 200.
//! 3. Both closed while the receiver holds every request without answering;
//!    once it holds all of them (claimed and in flight), the child is killed
//!    with SIGKILL.
//! 4. The same binary started again on the same data dir and ports; the
//!    receiver now answers 200. One more position opened and closed.
//!
//! Then every event id the streams showed was acknowledged (answered 2xx)
//! exactly once, none is missing, none was acknowledged twice, every request
//! was signed (`Tradeterm-Signature`, the HMAC recomputed here), and the
//! store counts them all delivered, each with one delivered attempt in the
//! endpoint's log. A held request is never answered: after the kill its
//! connection is dead, and the delivery comes again once its claim's lease
//! (30 s) has run out.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tradeterm_tools::webhooks::sign;

use crate::harness::process::{free_ports, tradeterm};
use crate::harness::{Api, Expect, wait_until};

/// Start-up of `tradeterm serve` (the first start generates its key pair).
const START: Duration = Duration::from_secs(60);
/// Liveness deadline of every wait.
const LIVENESS: Duration = Duration::from_secs(30);
/// The claim lease of a delivery (`docs/events.md`: 30 s with the default
/// 10 s timeout): a delivery in flight at the kill is sent again after it.
const LEASE: Duration = Duration::from_secs(30);
/// The endpoint's filter: a market order's fill and a position's open or close.
const TYPES: [&str; 4] = ["deal.added", "order.filled", "position.opened", "position.closed"];
/// The simulated terminal's clock starts on a weekday at noon (markets open).
const SIM_START: &str = "2026-11-18T12:00:00Z";

// ----- the receiver -----

/// What the receiver did with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Kept without an answer until the connection closed.
    Held,
    /// Answered 200 (written to the connection).
    Acked,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Got {
    event_id: String,
    signature: String,
    body: String,
    outcome: Outcome,
}

/// A loopback HTTP receiver: holds each request (never answering it) while
/// `hold` is on, else answers `200` and closes.
#[derive(Clone)]
struct Receiver {
    url: String,
    hold: Arc<AtomicBool>,
    got: Arc<Mutex<Vec<Got>>>,
}

impl Receiver {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Self {
            url: format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port()),
            hold: Arc::default(),
            got: Arc::default(),
        };
        let me = r.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let me = me.clone();
                tokio::spawn(async move { me.serve(sock).await });
            }
        });
        r
    }

    async fn serve(&self, mut sock: tokio::net::TcpStream) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let header = |name: &str| {
            head.lines()
                .skip(1)
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                })
                .unwrap_or_default()
        };
        // (No assertion here: a panic in this task would only show as a timeout.)
        let Ok(len) = header("content-length").parse::<usize>() else {
            return;
        };
        while buf.len() < head_end + len {
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let mut got = Got {
            event_id: header("tradeterm-event-id"),
            signature: header("tradeterm-signature"),
            body: String::from_utf8_lossy(&buf[head_end..head_end + len]).into_owned(),
            outcome: Outcome::Held,
        };
        if self.hold.load(Ordering::SeqCst) {
            self.got.lock().unwrap().push(got);
            // Never answered: read until the sender's side is gone.
            while matches!(sock.read(&mut chunk).await, Ok(n) if n > 0) {}
            return;
        }
        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
        if sock.write_all(reply).await.is_ok() {
            got.outcome = Outcome::Acked;
            self.got.lock().unwrap().push(got);
        }
        let _ = sock.shutdown().await;
    }

    fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    fn ids(&self, outcome: Outcome) -> Vec<String> {
        self.got()
            .into_iter()
            .filter(|g| g.outcome == outcome)
            .map(|g| g.event_id)
            .collect()
    }
}

/// Checks `g`'s signature with `secret` (HMAC-SHA256 over `"<t>.<body>"`,
/// hex) and that its body is the event its id header names, of the filter.
fn assert_signed(g: &Got, secret: &str) {
    let (t, v1) = g
        .signature
        .strip_prefix("t=")
        .and_then(|s| s.split_once(",v1="))
        .unwrap_or_else(|| panic!("`t=…,v1=…`: {:?}", g.signature));
    let t: i64 = t.parse().unwrap();
    let expected = hex_of(&sign::hmac_sha256(
        secret.as_bytes(),
        format!("{t}.{}", g.body).as_bytes(),
    ));
    assert_eq!(v1, expected, "the HMAC of {} verifies", g.event_id);
    assert!(
        (chrono::Utc::now().timestamp() - t).abs() < 600,
        "t is the time of the post"
    );
    let body: Value = serde_json::from_str(&g.body).unwrap();
    assert_eq!(body["id"].as_str(), Some(g.event_id.as_str()), "{body}");
    assert!(
        TYPES.contains(&body["type"].as_str().unwrap()),
        "the filter holds: {body}"
    );
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ----- the child -----

/// `tradeterm serve` as a child; killed (SIGKILL) when dropped.
struct Serve {
    child: Child,
}

impl Serve {
    fn start(ports: [u16; 3], data: &Path) -> Self {
        let mut child = tradeterm()
            .envs([
                ("PORT", ports[0].to_string()),
                ("GATEWAY_PORT", ports[1].to_string()),
                ("MCP_PORT", ports[2].to_string()),
                ("WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
                ("WEBHOOK_RETRY_BASE_MS", "50".to_owned()),
                ("WEBHOOK_RETRY_MAX_MS", "200".to_owned()),
            ])
            .args([
                "serve",
                "--sim-terminals",
                "1",
                "--sim-allow-trading",
                "--sim-start",
                SIM_START,
            ])
            .arg("--data-dir")
            .arg(data)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let serve = Self { child };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let until = Instant::now() + START;
        let mut printed = String::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("serve started within {START:?}; printed:\n{printed}"));
            printed.push_str(&line);
            printed.push('\n');
            if line.contains("Stop with Ctrl-C.") {
                return serve;
            }
        }
    }

    /// `kill -9`: SIGKILL, then the exit reaped.
    fn kill(mut self) {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert!(!status.success(), "killed: {status}");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // After `kill` or a failure: the child may be gone already.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ----- the event stream (what was produced) -----

/// The ids and types of the durable events one open stream showed.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String)>>>);

impl Seen {
    fn all(&self) -> Vec<(String, String)> {
        self.0.lock().unwrap().clone()
    }

    fn count(&self, kind: &str) -> usize {
        self.all().iter().filter(|(_, k)| k == kind).count()
    }

    fn ids(&self) -> BTreeSet<String> {
        self.all().into_iter().map(|(id, _)| id).collect()
    }
}

/// Opens `GET /api/v1/events?types=…` (the filter of the endpoint) and
/// records what it shows until the stream ends.
async fn watch(api: &Api) -> Seen {
    let mut resp = api
        .request(Method::GET, &format!("/api/v1/events?types={}", TYPES.join(",")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "the event stream opens");
    let seen = Seen::default();
    let sink = seen.clone();
    tokio::spawn(async move {
        let mut buf = String::new();
        while let Ok(Some(bytes)) = resp.chunk().await {
            buf.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                let (mut id, mut kind) = (None, None);
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        kind = Some(v.to_owned());
                    }
                }
                if let (Some(id), Some(kind)) = (id, kind) {
                    sink.0.lock().unwrap().push((id, kind));
                }
            }
        }
    });
    seen
}

// ----- the REST calls -----

struct Rest {
    /// The API key on the simulated terminal.
    trader: Api,
    /// The API key (the event stream).
    reader: Api,
    /// The master key (the management routes).
    master: Api,
}

impl Rest {
    fn new(http: &reqwest::Client, rest: &str, creds: &Value) -> Self {
        let terminal = creds["terminals"][0]["id"].as_str().unwrap();
        let reader = Api::new(http, rest).key(creds["api_key"].as_str().unwrap());
        Self {
            trader: reader.clone().on(terminal),
            reader,
            master: Api::new(http, rest).key(creds["license_key"].as_str().unwrap()),
        }
    }

    /// Waits until the simulated terminal answers through REST.
    async fn terminal_ready(&self) {
        wait_until("the simulated terminal to answer through REST", LIVENESS, || async {
            self.trader.account().await.ok()
        })
        .await;
    }

    /// A live market buy; its position's ticket.
    async fn open(&self) -> u64 {
        let trade = self
            .trader
            .place_order(&json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false }))
            .await
            .data();
        trade["trade"]["position"].as_u64().unwrap()
    }

    async fn close(&self, position: u64) {
        self.trader
            .close_position(position, &json!({ "dry_run": false }))
            .await
            .data();
    }

    /// `GET /api/webhooks/{id}`: the endpoint, its counts and its log.
    async fn webhook(&self, id: &str) -> Value {
        self.master.get(&format!("/api/webhooks/{id}")).await.data()
    }

    /// Waits until the store counts `delivered` deliveries and none pending.
    async fn all_delivered(&self, id: &str, delivered: usize, within: Duration) -> Value {
        let want = (Some(0), Some(delivered as i64), Some(0));
        wait_until(
            format!("{delivered} deliveries recorded delivered, none pending"),
            within,
            || async {
                let d = self.webhook(id).await;
                let c = &d["deliveries"];
                let counts = (c["pending"].as_i64(), c["delivered"].as_i64(), c["failed"].as_i64());
                (counts == want).then_some(d)
            },
        )
        .await
    }
}

fn read_credentials(data: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(data.join("demo-credentials.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_during_webhook_deliveries_loses_none_and_acknowledges_none_twice() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ports = free_ports();
    let rest_url = format!("http://127.0.0.1:{}", ports[0]);
    let http = reqwest::Client::new();
    let receiver = Receiver::start().await;

    let serve = Serve::start(ports, &data);
    let creds = read_credentials(&data);
    let rest = Rest::new(&http, &rest_url, &creds);
    rest.terminal_ready().await;
    let created = rest
        .master
        .post("/api/webhooks", &json!({ "url": receiver.url, "types": TYPES }))
        .await
        .data();
    let webhook = created["webhook"]["webhook_id"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap().to_owned();
    let before = watch(&rest.reader).await;

    // Two positions opened; their events are answered 200.
    let positions = [rest.open().await, rest.open().await];
    wait_until("both opens on the stream", LIVENESS, || async {
        (before.count("position.opened") == 2).then_some(())
    })
    .await;
    let acked_before = before.ids();
    wait_until("the opens acknowledged", LIVENESS, || async {
        let acked: BTreeSet<String> = receiver.ids(Outcome::Acked).into_iter().collect();
        acked.is_superset(&acked_before).then_some(())
    })
    .await;
    // Recorded as delivered before the kill (else one answered just before
    // it would be sent again: at least once).
    rest.all_delivered(&webhook, acked_before.len(), LIVENESS).await;

    // Both closed while the receiver holds every request.
    receiver.hold.store(true, Ordering::SeqCst);
    for p in positions {
        rest.close(p).await;
    }
    wait_until("both closes on the stream", LIVENESS, || async {
        (before.count("position.closed") == 2).then_some(())
    })
    .await;
    let in_flight: BTreeSet<String> = before.ids().difference(&acked_before).cloned().collect();
    wait_until(
        "every close's delivery held at the receiver (claimed and in flight)",
        LIVENESS,
        || async {
            let held: BTreeSet<String> = receiver.ids(Outcome::Held).into_iter().collect();
            held.is_superset(&in_flight).then_some(())
        },
    )
    .await;
    serve.kill();
    let produced_before = before.all();
    assert_eq!(
        produced_before.len(),
        12,
        "3 events per open and per close: {produced_before:?}"
    );
    assert!(
        receiver.ids(Outcome::Acked).iter().all(|id| acked_before.contains(id)),
        "nothing held was answered"
    );

    // Restarted on the same data dir and ports; the receiver answers again.
    receiver.hold.store(false, Ordering::SeqCst);
    let restarted = Instant::now();
    let serve = Serve::start(ports, &data);
    assert_eq!(read_credentials(&data)["license_key"], creds["license_key"]);
    rest.terminal_ready().await;
    let after = watch(&rest.reader).await;
    let p = rest.open().await;
    rest.close(p).await;
    wait_until("the new round trip on the stream", LIVENESS, || async {
        (after.count("position.closed") == 1).then_some(())
    })
    .await;

    let produced: BTreeSet<String> = before.ids().union(&after.ids()).cloned().collect();
    assert_eq!(produced.len(), 18, "{:?} then {:?}", before.all(), after.all());
    // The deliveries in flight at the kill come again once their claims' lease ends.
    let deadline = (LEASE + LIVENESS).saturating_sub(restarted.elapsed());
    wait_until("every event acknowledged after the restart", deadline, || async {
        let acked: BTreeSet<String> = receiver.ids(Outcome::Acked).into_iter().collect();
        acked.is_superset(&produced).then_some(())
    })
    .await;
    let detail = rest.all_delivered(&webhook, produced.len(), LIVENESS).await;
    drop(serve);

    // Exactly once each, by event id; nothing else; every request signed.
    let got = receiver.got();
    let mut acks: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &got {
        assert_signed(g, &secret);
        if g.outcome == Outcome::Acked {
            *acks.entry(g.event_id.as_str()).or_default() += 1;
        }
    }
    let twice: Vec<_> = acks.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "acknowledged more than once: {twice:?}");
    let acked: BTreeSet<String> = acks.keys().map(|k| (*k).to_owned()).collect();
    assert_eq!(acked, produced, "every event produced acknowledged, and nothing else");
    for id in &in_flight {
        let held_at = got.iter().position(|g| &g.event_id == id && g.outcome == Outcome::Held);
        let acked_at = got
            .iter()
            .position(|g| &g.event_id == id && g.outcome == Outcome::Acked);
        assert!(
            matches!((held_at, acked_at), (Some(h), Some(a)) if h < a),
            "{id}: held before the kill, acknowledged after it"
        );
    }
    // The store's log agrees: one delivered attempt per event.
    let mut delivered: BTreeMap<String, usize> = BTreeMap::new();
    for a in detail["attempts"].as_array().unwrap() {
        if a["outcome"] == "delivered" {
            *delivered.entry(a["event_id"].as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    assert_eq!(delivered.keys().cloned().collect::<BTreeSet<_>>(), produced, "{detail}");
    assert!(delivered.values().all(|n| *n == 1), "{detail}");
}
