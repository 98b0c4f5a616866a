//! `cargo xtask bench events [--short]`: the event pipeline of one
//! `tradeterm serve` (release build, its in-memory engine), measured from
//! the outside with plain sockets:
//!
//! - **latency**: a fake agent on the long-poll binding pushes a
//!   `trade_transaction` (`deal_added`) and an SSE client of
//!   `GET /api/v1/events` waits for its `deal.added`; the time from the
//!   push's request to the event's arrival, p50 and p99 over the samples;
//! - **fan-out**: 1 000 SSE subscribers (5 Enterprise licenses × 200, the
//!   tier's stream limit), one fake agent per license pushing a burst of
//!   deals; events delivered per second to all subscribers together, and the
//!   time until the last subscriber has the last event;
//! - **memory per idle subscriber**: the server's resident memory
//!   (`/proc/<pid>/status` `VmRSS`) before and after the 1 000 streams open,
//!   divided by 1 000.
//!
//! The long-poll binding carries the agent's push here (plain HTTP from
//! `std`); a WebSocket agent saves that request's overhead, so the latency
//! is an upper bound. Figures go to `docs/performance.md` by hand.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bench::{Killer, free_port, wait_for};
use crate::scale::http::request;
use crate::{Result, cargo, run, workspace_root};

const SUBSCRIBER_LICENSES: usize = 5;
const STREAMS_PER_LICENSE: usize = 200;

fn release_bin() -> PathBuf {
    crate::target_dir().join("release/tradeterm")
}

fn admin(data: &std::path::Path, args: &[&str]) -> Result<Value> {
    let out = Command::new(release_bin())
        .arg("admin")
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .map_err(|e| format!("tradeterm admin: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tradeterm admin {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("tradeterm admin output: {e}"))
}

/// A fake agent on the long-poll binding.
struct Agent {
    gw: String,
    session: String,
    seq: u64,
}

impl Agent {
    fn open(gw: &str, key: &str, uid: &str) -> Result<Self> {
        let hello = json!({
            "type": "hello", "protocol_version": 1, "terminal_key": key,
            "terminal": { "uid": uid, "platform": "MT5", "build": 4755 },
            "account": { "login": 1, "server": "Bench", "company": "Bench", "currency": "USD", "leverage": 100, "trade_mode": "demo" },
            "permissions": { "allow_trading": false, "automated_trading": false },
            "agent": { "name": "bench-agent", "version": "1" },
        });
        let r = request(
            "POST",
            gw,
            "/agent/v1/poll/open",
            &[],
            Some(&hello.to_string()),
            Duration::from_secs(10),
        )?;
        let session = r.json()["session"].as_str().unwrap_or_default().to_owned();
        if r.status != 200 || session.is_empty() {
            return Err(format!("poll open: {} {}", r.status, r.body));
        }
        Ok(Self {
            gw: gw.to_owned(),
            session,
            seq: 0,
        })
    }

    /// Pushes `deals` (tickets) as `deal_added` transactions in one exchange.
    fn push(&mut self, tickets: &[u64]) -> Result<()> {
        self.seq += 1;
        let frames: Vec<Value> = tickets
            .iter()
            .map(|t| {
                json!({ "type": "event", "event": { "kind": "trade_transaction", "transaction": "deal_added", "order": t, "position": 0,
                    "deal": { "ticket": t, "order": t, "position": 0, "symbol": "", "side": "buy", "entry": "balance", "volume": 0.0,
                              "price": 0.0, "time": 1_796_151_600_000u64, "profit": 1.0, "swap": 0.0, "commission": 0.0, "magic": 0, "comment": "bench" } } })
            })
            .collect();
        let body = json!({ "seq": self.seq, "ack": 0, "wait_ms": 0, "frames": frames }).to_string();
        let r = request(
            "POST",
            &self.gw,
            "/agent/v1/poll",
            &[("X-Agent-Session", &self.session)],
            Some(&body),
            Duration::from_secs(10),
        )?;
        if r.status != 200 {
            return Err(format!("poll exchange: {} {}", r.status, r.body));
        }
        Ok(())
    }
}

/// An SSE client reading a stream's raw text.
struct Stream {
    s: TcpStream,
    text: String,
}

impl Stream {
    fn open(api: &str, key: &str, query: &str) -> Result<Self> {
        let mut s = TcpStream::connect(api).map_err(|e| format!("connect {api}: {e}"))?;
        s.set_nodelay(true).ok();
        let head = format!("GET /api/v1/events{query} HTTP/1.1\r\nHost: {api}\r\nAuthorization: Bearer {key}\r\n\r\n");
        s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
        let mut stream = Self { s, text: String::new() };
        if !stream.until(|t| t.contains("tradeterm event stream"), Duration::from_secs(10)) {
            return Err(format!(
                "stream not opened: {:?}",
                stream.text.chars().take(200).collect::<String>()
            ));
        }
        if !stream.text.starts_with("HTTP/1.1 200") {
            return Err(format!("stream refused: {:?}", stream.text.lines().next()));
        }
        Ok(stream)
    }

    /// Reads until `done` holds for the text read so far (or `limit`).
    fn until(&mut self, done: impl Fn(&str) -> bool, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut buf = [0u8; 16 * 1024];
        while !done(&self.text) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.s.set_read_timeout(Some(left.min(Duration::from_millis(200)))).ok();
            match self.s.read(&mut buf) {
                Ok(0) => return done(&self.text),
                Ok(n) => self.text.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(_) => {}
            }
        }
        true
    }
}

fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no VmRSS".to_owned())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn events(args: &[String]) -> Result<()> {
    let short = args.iter().any(|a| a == "--short");
    let root = workspace_root();
    run(cargo()
        .current_dir(&root)
        .args(["build", "--release", "-p", "tradeterm", "--bin", "tradeterm"]))?;
    let data = std::env::temp_dir().join(format!("tradeterm-bench-events-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let (rest_port, gw_port, mcp_port) = (free_port()?, free_port()?, free_port()?);
    let mut procs = Killer(Vec::new());
    let serve = Command::new(release_bin())
        .args(["serve", "--sim-terminals", "0", "--data-dir"])
        .arg(&data)
        .env("PORT", rest_port.to_string())
        .env("GATEWAY_PORT", gw_port.to_string())
        .env("MCP_PORT", mcp_port.to_string())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("tradeterm serve: {e}"))?;
    let pid = serve.id();
    procs.0.push(serve);
    let api = format!("127.0.0.1:{rest_port}");
    let gw = format!("127.0.0.1:{gw_port}");
    wait_for("tradeterm serve", || {
        request("GET", &api, "/healthz", &[], None, Duration::from_secs(1)).is_ok_and(|r| r.status == 200)
    })?;

    // Latency: one license, one agent, one stream.
    let lic = admin(&data, &["create-license", "--name", "latency", "--tier", "enterprise"])?;
    let lic_id = lic["license"]["id"].as_str().unwrap_or_default().to_owned();
    let key = admin(&data, &["create-api-key", "--license", &lic_id, "--label", "bench"])?["api_key"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let term = admin(&data, &["create-terminal", "--license", &lic_id, "--name", "bench"])?;
    let (term_id, term_key) = (
        term["terminal"]["id"].as_str().unwrap_or_default().to_owned(),
        term["terminal_key"].as_str().unwrap_or_default().to_owned(),
    );
    let mut agent = Agent::open(&gw, &term_key, "bench-latency")?;
    let mut stream = Stream::open(&api, &key, &format!("?terminal_id={term_id}&types=deal.added"))?;
    let samples = if short { 50 } else { 500 };
    let mut lat = Vec::with_capacity(samples);
    for i in 0..samples as u64 {
        let ticket = 1_000_000 + i;
        let needle = format!("\"ticket\":{ticket},");
        let sent = Instant::now();
        agent.push(&[ticket])?;
        if !stream.until(|t| t.contains(&needle), Duration::from_secs(5)) {
            return Err(format!("deal {ticket} did not reach the stream"));
        }
        lat.push(sent.elapsed().as_secs_f64() * 1e3);
        stream.text.clear();
        std::thread::sleep(Duration::from_millis(5));
    }
    lat.sort_by(f64::total_cmp);
    println!(
        "latency agent push (long-poll exchange) -> SSE client, {samples} samples: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(f64::NAN)
    );

    // Fan-out and memory.
    let per_license = if short { 20 } else { STREAMS_PER_LICENSE };
    let mut licenses = Vec::new();
    for n in 0..SUBSCRIBER_LICENSES {
        let l = admin(
            &data,
            &["create-license", "--name", &format!("fan{n}"), "--tier", "enterprise"],
        )?;
        let id = l["license"]["id"].as_str().unwrap_or_default().to_owned();
        let k = admin(&data, &["create-api-key", "--license", &id, "--label", "bench"])?["api_key"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let t = admin(&data, &["create-terminal", "--license", &id, "--name", "fan"])?;
        let agent = Agent::open(
            &gw,
            t["terminal_key"].as_str().unwrap_or_default(),
            &format!("bench-fan-{n}"),
        )?;
        licenses.push((k, agent));
    }
    std::thread::sleep(Duration::from_millis(500));
    let before = rss_kib(pid)?;
    let mut streams = Vec::new();
    for (k, _) in &licenses {
        for _ in 0..per_license {
            streams.push(Stream::open(&api, k, "?types=deal.added")?);
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let after = rss_kib(pid)?;
    let subscribers = streams.len();
    let per_sub_kib = (after.saturating_sub(before)) as f64 / subscribers as f64;
    println!(
        "{subscribers} idle subscribers: server RSS {before} KiB -> {after} KiB, {per_sub_kib:.1} KiB per subscriber"
    );
    let burst: usize = if short { 50 } else { 200 };
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            let done = done.clone();
            std::thread::spawn(move || {
                s.text.clear();
                let ok = s.until(
                    |t| t.matches("event: deal.added").count() >= burst,
                    Duration::from_secs(120),
                );
                done.fetch_add(usize::from(ok), Ordering::SeqCst);
                (ok, Instant::now())
            })
        })
        .collect();
    for (_, agent) in &mut licenses {
        let tickets: Vec<u64> = (0..burst as u64).map(|i| 2_000_000 + i).collect();
        for chunk in tickets.chunks(50) {
            agent.push(chunk)?;
        }
    }
    let mut last = started;
    let mut complete = 0;
    for r in readers {
        let (ok, at) = r.join().map_err(|_| "reader panicked".to_owned())?;
        complete += usize::from(ok);
        last = last.max(at);
    }
    let secs = last.duration_since(started).as_secs_f64();
    let delivered = complete * burst;
    println!(
        "fan-out: {burst} events to each of {subscribers} subscribers ({complete} complete): {delivered} deliveries in {:.2} s = {:.0} events/s",
        secs,
        delivered as f64 / secs
    );
    drop(procs);
    let _ = std::fs::remove_dir_all(&data);
    if complete != subscribers {
        return Err(format!(
            "{} subscribers did not receive every event",
            subscribers - complete
        ));
    }
    Ok(())
}
