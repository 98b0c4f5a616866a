//! `cargo xtask bench events [--short]`: the event pipeline, measured from
//! the outside with plain sockets, in two deployments:
//!
//! - **single node**: one `tradeterm serve` (release build, its in-memory
//!   engine, SQLite, no Redis);
//! - **split**: one `tradeterm-gateway` and one `tradeterm-api` process on
//!   the machine's Redis (127.0.0.1:6379: Redis Streams between them) and
//!   PostgreSQL (127.0.0.1:5432, a database of its own, dropped after), as
//!   the scale test runs them.
//!
//! Figures, each in both deployments unless said:
//!
//! - **agent → SSE client**: a fake agent pushes a `trade_transaction`
//!   (`deal_added`) and an SSE client of `GET /api/v1/events` waits for its
//!   `deal.added`; the time from the push to the event's arrival, p50 and
//!   p99. Twice: the agent on the WebSocket binding (the frame written: the
//!   MetaTrader 5 agent's path) and on the long-poll binding (the push's
//!   whole HTTP exchange is in it, as for the MetaTrader 4 agent). The same
//!   for a pushed `tick` to its `quote` (conflated by design: the publisher
//!   broadcasts the latest quote of a symbol every 100 ms, so that figure is
//!   the conflation's, about half the interval at p50 and the whole of it at
//!   p99; the quotes are spaced so that the stream's own interval never
//!   holds one back, with a spacing that is not a multiple of 100 ms).
//! - **where the time goes** (split): a Redis client subscribed to the
//!   engine's channel (`tt:events`) timestamps each `PUBLISH`, which the
//!   append script sends atomically with the `XADD`: push → published is
//!   the gateway (frame handling, the publisher's queue, the append's round
//!   trip), published → client is the API process (its subscription's read,
//!   the subscriber, the SSE write). Single node: the long-poll exchange's
//!   answer against the event's arrival.
//! - **agent → webhook receiver**: a local HTTP server of this bench as a
//!   license's endpoint (`WEBHOOK_ALLOW_PRIVATE=true`), `deal.added` only;
//!   the time from the WebSocket push to the complete `POST` at the
//!   receiver, p50 and p99 (the outbox's enqueue, claim and post are in it).
//! - **fan-out** (single node): 1 000 SSE subscribers (5 Enterprise licenses
//!   × 200, the tier's stream limit), one fake agent per license pushing a
//!   burst of deals; events delivered per second to all subscribers
//!   together;
//! - **memory per idle subscriber** (single node): the server's resident
//!   memory (`/proc/<pid>/status` `VmRSS`) before and after the 1 000
//!   streams open, divided by 1 000.
//!
//! Every arrival is timestamped by a thread reading that socket, so waiting
//! on one socket never delays another's timestamp. The figures are printed
//! as they come and in one table at the end; they go to
//! `docs/performance.md` ("Events") by hand. `--short` (CI-sized: fewer
//! samples, 100 subscribers) prints the same table.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bench::{Killer, free_port, wait_for};
use crate::scale::http::request;
use crate::{Result, cargo, run, workspace_root};

const SUBSCRIBER_LICENSES: usize = 5;
const STREAMS_PER_LICENSE: usize = 200;
/// The split deployment's database (created and dropped by the bench).
const DATABASE: &str = "tt_bench_events";
const PG_SERVER: &str = "postgres://postgres@127.0.0.1:5432";
const REDIS: &str = "127.0.0.1:6379";
/// Longest wait for one event at one client.
const ARRIVAL: Duration = Duration::from_secs(10);
/// Longest wait for one webhook delivery.
const DELIVERY: Duration = Duration::from_secs(30);
/// Between two quotes, at least: above the stream's quote interval (250 ms
/// by default) plus the publisher's (100 ms), so no quote waits for the
/// stream's conflation.
const QUOTE_SPACING: Duration = Duration::from_millis(400);

/// Sizes of a run.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// Deals per latency figure.
    samples: usize,
    /// Quotes per latency figure.
    quotes: usize,
    /// Webhook deliveries per latency figure.
    deliveries: usize,
    /// Subscribers per license of the fan-out.
    per_license: usize,
    /// Deals each fan-out subscriber receives.
    burst: usize,
}

impl Plan {
    fn new(short: bool) -> Self {
        if short {
            Self {
                samples: 50,
                quotes: 10,
                deliveries: 30,
                per_license: 20,
                burst: 50,
            }
        } else {
            Self {
                samples: 500,
                quotes: 60,
                deliveries: 200,
                per_license: STREAMS_PER_LICENSE,
                burst: 200,
            }
        }
    }
}

fn release_bin(name: &str) -> PathBuf {
    crate::target_dir().join("release").join(name)
}

// ---------------------------------------------------------------- deployments

/// A running deployment: its REST and gateway addresses, how to run
/// `tradeterm admin` against its store, and its processes (killed on drop).
struct Deployment {
    name: &'static str,
    api: String,
    gw: String,
    /// The process serving SSE (`VmRSS`).
    api_pid: u32,
    data: PathBuf,
    /// Extra environment of `tradeterm admin` (the database).
    admin_env: Vec<(&'static str, String)>,
    /// Licenses made, to remove their Redis streams after.
    licenses: Vec<String>,
    _procs: Killer,
}

/// A license of the run with its keys.
struct License {
    id: String,
    master: String,
    api_key: String,
}

impl Deployment {
    fn admin(&self, args: &[&str]) -> Result<Value> {
        let mut cmd = Command::new(release_bin("tradeterm"));
        cmd.arg("admin").arg("--data-dir").arg(&self.data).args(args);
        for var in ["DATABASE_URL", "KEYVALUE_URL", "NODE_ENV", "TRADETERM_CONFIG"] {
            cmd.env_remove(var);
        }
        for (k, v) in &self.admin_env {
            cmd.env(k, v);
        }
        let out = cmd
            .env("RUST_LOG", "warn")
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

    fn license(&mut self, name: &str) -> Result<License> {
        let l = self.admin(&["create-license", "--name", name, "--tier", "enterprise"])?;
        let id = l["license"]["id"].as_str().unwrap_or_default().to_owned();
        let k = self.admin(&["create-api-key", "--license", &id, "--label", "bench"])?;
        self.licenses.push(id.clone());
        Ok(License {
            master: l["license_key"].as_str().unwrap_or_default().to_owned(),
            api_key: k["api_key"].as_str().unwrap_or_default().to_owned(),
            id,
        })
    }

    /// A terminal of `license`: (id, terminal key).
    fn terminal(&self, license: &str, name: &str) -> Result<(String, String)> {
        let t = self.admin(&["create-terminal", "--license", license, "--name", name])?;
        Ok((
            t["terminal"]["id"].as_str().unwrap_or_default().to_owned(),
            t["terminal_key"].as_str().unwrap_or_default().to_owned(),
        ))
    }

    fn healthy(addr: &str) -> bool {
        request("GET", addr, "/healthz", &[], None, Duration::from_secs(1)).is_ok_and(|r| r.status == 200)
    }

    /// One `tradeterm serve` on free ports, in `data`.
    fn single(data: &Path) -> Result<Self> {
        let (rest_port, gw_port, mcp_port) = (free_port()?, free_port()?, free_port()?);
        let mut procs = Killer(Vec::new());
        let serve = clean_env(&mut Command::new(release_bin("tradeterm")))
            .args(["serve", "--sim-terminals", "0", "--data-dir"])
            .arg(data)
            .env("PORT", rest_port.to_string())
            .env("GATEWAY_PORT", gw_port.to_string())
            .env("MCP_PORT", mcp_port.to_string())
            .env("WEBHOOK_ALLOW_PRIVATE", "true")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log_file(data, "serve.err")?)
            .spawn()
            .map_err(|e| format!("tradeterm serve: {e}"))?;
        let pid = serve.id();
        procs.0.push(serve);
        let api = format!("127.0.0.1:{rest_port}");
        let gw = format!("127.0.0.1:{gw_port}");
        wait_for("tradeterm serve", || Self::healthy(&api) && Self::healthy(&gw))?;
        Ok(Self {
            name: "single node",
            api,
            gw,
            api_pid: pid,
            data: data.to_owned(),
            admin_env: Vec::new(),
            licenses: Vec::new(),
            _procs: procs,
        })
    }

    /// A `tradeterm-gateway` and a `tradeterm-api` on the machine's Redis
    /// and a fresh PostgreSQL database, in `data`.
    fn split(data: &Path) -> Result<Self> {
        psql(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))?;
        psql(&format!("CREATE DATABASE {DATABASE}"))?;
        let db = format!("{PG_SERVER}/{DATABASE}");
        let redis = format!("redis://{REDIS}");
        let token = format!("bench-events-{}-{}", std::process::id(), unix_ms());
        let (gw_port, api_port) = (free_port()?, free_port()?);
        let gw_data = data.join("gateway");
        let mut procs = Killer(Vec::new());
        procs.0.push(
            clean_env(&mut Command::new(release_bin("tradeterm-gateway")))
                .arg("--data-dir")
                .arg(&gw_data)
                .env("HOST", "127.0.0.1")
                .env("GATEWAY_PORT", gw_port.to_string())
                .env("DATABASE_URL", &db)
                .env("KEYVALUE_URL", &redis)
                .env("GATEWAY_INTERNAL_TOKEN", &token)
                .env("RUST_LOG", "warn")
                .stdout(log_file(data, "gateway.log")?)
                .stderr(log_file(data, "gateway.err")?)
                .spawn()
                .map_err(|e| format!("tradeterm-gateway: {e}"))?,
        );
        let gw = format!("127.0.0.1:{gw_port}");
        wait_for("tradeterm-gateway", || Self::healthy(&gw))?;
        procs.0.push(
            clean_env(&mut Command::new(release_bin("tradeterm-api")))
                .env("HOST", "127.0.0.1")
                .env("PORT", api_port.to_string())
                .env("GATEWAY_URL", format!("http://{gw}"))
                .env("GATEWAY_INTERNAL_TOKEN", &token)
                .env("JWT_PUBLIC_KEY_PATH", gw_data.join("keys/jwt-public.pem"))
                .env("DATABASE_URL", &db)
                .env("KEYVALUE_URL", &redis)
                .env("API_RATE_LIMIT_ENTERPRISE", "1000000000")
                .env("WEBHOOK_ALLOW_PRIVATE", "true")
                .env("RUST_LOG", "warn")
                .stdout(log_file(data, "api.log")?)
                .stderr(log_file(data, "api.err")?)
                .spawn()
                .map_err(|e| format!("tradeterm-api: {e}"))?,
        );
        let api_pid = procs.0[1].id();
        let api = format!("127.0.0.1:{api_port}");
        wait_for("tradeterm-api", || Self::healthy(&api))?;
        Ok(Self {
            name: "split",
            api,
            gw,
            api_pid,
            data: data.to_owned(),
            admin_env: vec![("DATABASE_URL", db)],
            licenses: Vec::new(),
            _procs: procs,
        })
    }
}

/// The servers' environment without the settings of whoever runs the bench.
fn clean_env(cmd: &mut Command) -> &mut Command {
    for var in [
        "DATABASE_URL",
        "KEYVALUE_URL",
        "NODE_ENV",
        "HOST",
        "TRADETERM_CONFIG",
        "TRADETERM_DATA_DIR",
        "JWT_PRIVATE_KEY_PATH",
        "JWT_PUBLIC_KEY_PATH",
        "GATEWAY_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn log_file(dir: &Path, name: &str) -> Result<std::fs::File> {
    std::fs::File::create(dir.join(name)).map_err(|e| format!("{name}: {e}"))
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn psql(sql: &str) -> Result<()> {
    let out = Command::new("psql")
        .args([&format!("{PG_SERVER}/test"), "-v", "ON_ERROR_STOP=1", "-qtAc", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("psql {sql}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

// ---------------------------------------------------------------- agents

fn hello(key: &str, uid: &str) -> Value {
    json!({
        "type": "hello", "protocol_version": 1, "terminal_key": key,
        "terminal": { "uid": uid, "platform": "MT5", "build": 4755 },
        "account": { "login": 1, "server": "Bench", "company": "Bench", "currency": "USD", "leverage": 100, "trade_mode": "demo" },
        "permissions": { "allow_trading": false, "automated_trading": false },
        "agent": { "name": "bench-agent", "version": "1" },
    })
}

/// A `deal_added` transaction of deal `ticket`.
fn deal_frame(ticket: u64) -> Value {
    json!({ "type": "event", "event": { "kind": "trade_transaction", "transaction": "deal_added", "order": ticket, "position": 0,
        "deal": { "ticket": ticket, "order": ticket, "position": 0, "symbol": "", "side": "buy", "entry": "balance", "volume": 0.0,
                  "price": 0.0, "time": 1_796_151_600_000u64, "profit": 1.0, "swap": 0.0, "commission": 0.0, "magic": 0, "comment": "bench" } } })
}

/// A tick of EURUSD whose bid marks it.
fn tick_frame(bid: f64) -> Value {
    json!({ "type": "event", "event": { "kind": "tick", "symbol": "EURUSD", "bid": bid, "ask": bid + 0.00006, "time": 1_796_151_600_000u64 } })
}

/// A fake agent on the long-poll binding.
struct PollAgent {
    gw: String,
    session: String,
    seq: u64,
}

impl PollAgent {
    fn open(gw: &str, key: &str, uid: &str) -> Result<Self> {
        let r = request(
            "POST",
            gw,
            "/agent/v1/poll/open",
            &[],
            Some(&hello(key, uid).to_string()),
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

    /// Pushes `frames` in one exchange; returns when it is answered.
    fn push(&mut self, frames: &[Value]) -> Result<()> {
        self.seq += 1;
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

/// A fake agent on the WebSocket binding: a minimal RFC 6455 client (text
/// frames, masked as a client must; pings answered).
struct WsAgent {
    s: TcpStream,
    /// Bytes read and not yet parsed into frames.
    buf: Vec<u8>,
}

impl WsAgent {
    fn open(gw: &str, key: &str, uid: &str) -> Result<Self> {
        let mut s = TcpStream::connect(gw).map_err(|e| format!("connect {gw}: {e}"))?;
        s.set_nodelay(true).ok();
        let head = format!(
            "GET /agent/v1 HTTP/1.1\r\nHost: {gw}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
        let mut raw = Vec::new();
        let mut chunk = [0u8; 4096];
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        let end = loop {
            if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut chunk).map_err(|e| format!("websocket upgrade: {e}"))?;
            if n == 0 {
                return Err("websocket upgrade: connection closed".into());
            }
            raw.extend_from_slice(&chunk[..n]);
        };
        let status = String::from_utf8_lossy(&raw[..end])
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        if !status.contains(" 101 ") {
            return Err(format!("websocket upgrade refused: {status}"));
        }
        let mut agent = Self {
            s,
            buf: raw[end..].to_vec(),
        };
        agent.send(&[hello(key, uid)])?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let frame = agent
                .frame(deadline.saturating_duration_since(Instant::now()))?
                .ok_or("no welcome from the gateway")?;
            let v: Value = serde_json::from_slice(&frame).unwrap_or(Value::Null);
            match v["type"].as_str() {
                Some("welcome") => return Ok(agent),
                Some("error") => return Err(format!("hello refused: {v}")),
                _ => {}
            }
        }
    }

    /// Writes `frames` as text frames, in one write.
    fn send(&mut self, frames: &[Value]) -> Result<()> {
        let mut out = Vec::new();
        for f in frames {
            ws_frame(&mut out, 0x1, f.to_string().as_bytes());
        }
        self.s.write_all(&out).map_err(|e| format!("websocket write: {e}"))
    }

    /// Answers what the gateway sent meanwhile (pings), then writes `frames`.
    fn push(&mut self, frames: &[Value]) -> Result<()> {
        while let Some(frame) = self.frame(Duration::ZERO)? {
            let v: Value = serde_json::from_slice(&frame).unwrap_or(Value::Null);
            if v["type"] == "ping" {
                self.send(&[json!({ "type": "pong", "ts": v["ts"] })])?;
            }
        }
        self.send(frames)
    }

    /// The next text frame's payload within `limit` (zero: only what is
    /// already there); control frames are handled on the way.
    fn frame(&mut self, limit: Duration) -> Result<Option<Vec<u8>>> {
        let deadline = Instant::now() + limit;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((opcode, payload, used)) = parse_ws_frame(&self.buf) {
                self.buf.drain(..used);
                match opcode {
                    0x0..=0x2 => return Ok(Some(payload)),
                    0x8 => return Err("the gateway closed the websocket".into()),
                    0x9 => {
                        let mut out = Vec::new();
                        ws_frame(&mut out, 0xA, &payload);
                        self.s.write_all(&out).map_err(|e| e.to_string())?;
                    }
                    _ => {}
                }
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.s.set_nonblocking(true).ok();
                let r = self.s.read(&mut chunk);
                self.s.set_nonblocking(false).ok();
                match r {
                    Ok(0) => return Err("the gateway closed the connection".into()),
                    Ok(n) => {
                        self.buf.extend_from_slice(&chunk[..n]);
                        continue;
                    }
                    Err(_) => return Ok(None),
                }
            }
            self.s.set_read_timeout(Some(left)).ok();
            match self.s.read(&mut chunk) {
                Ok(0) => return Err("the gateway closed the connection".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    return Ok(None);
                }
                Err(e) => return Err(format!("websocket read: {e}")),
            }
        }
    }
}

/// Appends one masked client frame.
fn ws_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    const MASK: [u8; 4] = [0x5a, 0x1c, 0x93, 0x07];
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= 0xffff => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
}

/// (opcode, payload, bytes used) of the first whole frame of `buf`.
fn parse_ws_frame(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0f;
    let masked = buf[1] & 0x80 != 0;
    let (len, mut at) = match buf[1] & 0x7f {
        126 => (u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]) as usize, 4),
        127 => (u64::from_be_bytes(buf.get(2..10)?.try_into().ok()?) as usize, 10),
        n => (n as usize, 2),
    };
    let mask = if masked {
        let m: [u8; 4] = buf.get(at..at + 4)?.try_into().ok()?;
        at += 4;
        Some(m)
    } else {
        None
    };
    let body = buf.get(at..at + len)?;
    let payload = match mask {
        Some(m) => body.iter().enumerate().map(|(i, b)| b ^ m[i % 4]).collect(),
        None => body.to_vec(),
    };
    Some((opcode, payload, at + len))
}

// ---------------------------------------------------------------- taps

/// A thread reading one socket that timestamps every number following
/// `"<key>":` in what arrives (a deal's ticket, a quote's bid), so that an
/// arrival is timed when it is read, whoever waits for it.
struct Tap {
    rx: mpsc::Receiver<(f64, Instant)>,
    stop: Arc<AtomicBool>,
    sock: TcpStream,
}

impl Tap {
    fn new(sock: TcpStream, key: &str) -> Result<Self> {
        let reader = sock.try_clone().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let pattern = format!("\"{key}\":");
        let stopped = stop.clone();
        std::thread::spawn(move || scan(reader, &pattern, &tx, &stopped));
        Ok(Self { rx, stop, sock })
    }

    /// When `value` arrived (others are skipped), within `limit`.
    fn wait(&self, value: f64, limit: Duration) -> Option<Instant> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((v, at)) if (v - value).abs() < 1e-9 => return Some(at),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

fn scan(mut sock: TcpStream, pattern: &str, tx: &mpsc::Sender<(f64, Instant)>, stop: &AtomicBool) {
    sock.set_read_timeout(Some(Duration::from_millis(200))).ok();
    let mut text = String::new();
    let mut chunk = [0u8; 16 * 1024];
    while !stop.load(Ordering::SeqCst) {
        let n = match sock.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(_) => return,
        };
        let at = Instant::now();
        text.push_str(&String::from_utf8_lossy(&chunk[..n]));
        let mut from = 0;
        loop {
            let Some(i) = text[from..].find(pattern) else {
                // Keep a tail that may be the start of the pattern.
                let mut keep = text.len().saturating_sub(pattern.len()).max(from);
                while !text.is_char_boundary(keep) {
                    keep -= 1;
                }
                from = keep;
                break;
            };
            let start = from + i + pattern.len();
            let rest = &text[start..];
            let Some(end) = rest.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
            else {
                // The number may go on in the next read.
                from += i;
                break;
            };
            if let Ok(v) = rest[..end].parse::<f64>()
                && tx.send((v, at)).is_err()
            {
                return;
            }
            from = start + end;
        }
        text.drain(..from);
    }
}

/// `GET /api/v1/events{query}` opened (its comment read), then tapped.
fn open_stream(api: &str, key: &str, query: &str, tap_key: &str) -> Result<Tap> {
    let stream = Stream::open(api, key, query)?;
    Tap::new(stream.s, tap_key)
}

/// A Redis client subscribed to the engine's live channel, tapped.
fn redis_observer(tap_key: &str) -> Result<Tap> {
    let mut s = TcpStream::connect(REDIS).map_err(|e| format!("connect {REDIS}: {e}"))?;
    s.set_nodelay(true).ok();
    s.write_all(b"*2\r\n$9\r\nSUBSCRIBE\r\n$9\r\ntt:events\r\n")
        .map_err(|e| e.to_string())?;
    let mut ack = [0u8; 64];
    s.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let n = s.read(&mut ack).map_err(|e| format!("SUBSCRIBE tt:events: {e}"))?;
    if !String::from_utf8_lossy(&ack[..n]).contains("subscribe") {
        return Err(format!("SUBSCRIBE tt:events: {:?}", String::from_utf8_lossy(&ack[..n])));
    }
    Tap::new(s, tap_key)
}

/// A webhook endpoint: accepts `POST`s (keep-alive), answers 200 and
/// timestamps each delivery's ticket once its body is complete.
struct Receiver {
    port: u16,
    tap: mpsc::Receiver<(f64, Instant)>,
    /// Deliveries that carried `Tradeterm-Signature` and `Tradeterm-Event-Id`.
    signed: Arc<AtomicUsize>,
}

impl Receiver {
    fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let (tx, tap) = mpsc::channel();
        let signed = Arc::new(AtomicUsize::new(0));
        let counted = signed.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (tx, counted) = (tx.clone(), counted.clone());
                std::thread::spawn(move || serve_hooks(conn, &tx, &counted));
            }
        });
        Ok(Self { port, tap, signed })
    }

    fn wait(&self, ticket: u64, limit: Duration) -> Option<Instant> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.tap.recv_timeout(left) {
                Ok((v, at)) if v == ticket as f64 => return Some(at),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

fn serve_hooks(mut conn: TcpStream, tx: &mpsc::Sender<(f64, Instant)>, signed: &AtomicUsize) {
    conn.set_nodelay(true).ok();
    let mut raw: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // One request: the head, then Content-Length bytes.
        let (head_end, length) = loop {
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4) {
                let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if raw.len() >= end + length {
                    break (end, length);
                }
            }
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => raw.extend_from_slice(&chunk[..n]),
            }
        };
        let at = Instant::now();
        let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
        if head.contains("\r\ntradeterm-signature: t=") && head.contains("\r\ntradeterm-event-id: ") {
            signed.fetch_add(1, Ordering::SeqCst);
        }
        let body: Value = serde_json::from_slice(&raw[head_end..head_end + length]).unwrap_or(Value::Null);
        raw.drain(..head_end + length);
        if conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").is_err() {
            return;
        }
        let ticket = body["data"]["ticket"]
            .as_u64()
            .or_else(|| body["data"]["deal"]["ticket"].as_u64());
        if let Some(t) = ticket
            && tx.send((t as f64, at)).is_err()
        {
            return;
        }
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

// ---------------------------------------------------------------- figures

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

/// Latencies in ms: "p50 / p99 (max)".
struct Lat(Vec<f64>);

impl Lat {
    fn of(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        Self(v)
    }
    fn p50(&self) -> f64 {
        percentile(&self.0, 0.5)
    }
    fn p99(&self) -> f64 {
        percentile(&self.0, 0.99)
    }
    fn max(&self) -> f64 {
        self.0.last().copied().unwrap_or(f64::NAN)
    }
    fn cell(&self) -> String {
        format!("{:.2} / {:.2} ms (max {:.2})", self.p50(), self.p99(), self.max())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The table printed at the end: figure → deployment → value.
#[derive(Default)]
struct Report {
    rows: Vec<String>,
    cells: BTreeMap<(String, &'static str), String>,
}

impl Report {
    fn put(&mut self, figure: &str, deployment: &'static str, value: String) {
        println!("  [{deployment}] {figure}: {value}");
        if !self.rows.iter().any(|r| r == figure) {
            self.rows.push(figure.to_owned());
        }
        self.cells.insert((figure.to_owned(), deployment), value);
    }

    fn print(&self) {
        println!("\n| figure | single node | split (gateway + API on Redis, PostgreSQL) |");
        println!("|---|---|---|");
        for r in &self.rows {
            let cell = |d| self.cells.get(&(r.clone(), d)).cloned().unwrap_or_else(|| "—".into());
            println!("| {r} | {} | {} |", cell("single node"), cell("split"));
        }
    }
}

// ---------------------------------------------------------------- phases

/// Deals and quotes from an agent to an SSE client; with `observer` (split)
/// the time each deal was published on Redis too.
fn latencies(dep: &mut Deployment, plan: Plan, observer: Option<&Tap>, report: &mut Report) -> Result<()> {
    let name = dep.name;
    let lic = dep.license("latency")?;
    let (ws_term, ws_key) = dep.terminal(&lic.id, "bench-ws")?;
    let (poll_term, poll_key) = dep.terminal(&lic.id, "bench-poll")?;
    let uid = format!("bench-{}-{}", std::process::id(), unix_ms());

    // WebSocket agent: deals.
    let mut ws = WsAgent::open(&dep.gw, &ws_key, &format!("{uid}-ws"))?;
    let stream = open_stream(
        &dep.api,
        &lic.api_key,
        &format!("?terminal_id={ws_term}&types=deal.added"),
        "ticket",
    )?;
    let (mut client, mut published, mut after_pub) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..plan.samples as u64 {
        let ticket = 1_000_000 + i;
        let sent = Instant::now();
        ws.push(&[deal_frame(ticket)])?;
        let at = stream
            .wait(ticket as f64, ARRIVAL)
            .ok_or_else(|| format!("{name}: deal {ticket} (websocket) did not reach the stream"))?;
        client.push(ms(at - sent));
        if let Some(o) = observer {
            let p = o
                .wait(ticket as f64, ARRIVAL)
                .ok_or_else(|| format!("{name}: deal {ticket} was not published on Redis"))?;
            published.push(ms(p.saturating_duration_since(sent)));
            after_pub.push(ms(at.saturating_duration_since(p)));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(stream);
    let client = Lat::of(client);
    report.put(
        "deal, WebSocket agent → SSE client, p50 / p99",
        name,
        format!("**{}**", client.cell()),
    );
    let (hop1, hop2) = if observer.is_some() {
        (Lat::of(published).cell(), Lat::of(after_pub).cell())
    } else {
        ("— (one process, no Redis hop)".to_owned(), "—".to_owned())
    };
    report.put(
        "  of which push → PUBLISH on Redis (gateway: frame, publisher, append)",
        name,
        hop1,
    );
    report.put(
        "  of which PUBLISH → SSE client (API: subscription, subscriber, SSE write)",
        name,
        hop2,
    );

    // Long-poll agent: deals; the exchange's answer is timed too.
    let mut poll = PollAgent::open(&dep.gw, &poll_key, &format!("{uid}-poll"))?;
    let stream = open_stream(
        &dep.api,
        &lic.api_key,
        &format!("?terminal_id={poll_term}&types=deal.added"),
        "ticket",
    )?;
    let (mut client, mut answered, mut before_answer) = (Vec::new(), Vec::new(), 0usize);
    for i in 0..plan.samples as u64 {
        let ticket = 2_000_000 + i;
        let sent = Instant::now();
        poll.push(&[deal_frame(ticket)])?;
        let done = Instant::now();
        let at = stream
            .wait(ticket as f64, ARRIVAL)
            .ok_or_else(|| format!("{name}: deal {ticket} (long-poll) did not reach the stream"))?;
        client.push(ms(at - sent));
        answered.push(ms(done - sent));
        before_answer += usize::from(at < done);
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(stream);
    let (client, answered) = (Lat::of(client), Lat::of(answered));
    report.put(
        "deal, long-poll agent (whole exchange) → SSE client, p50 / p99",
        name,
        client.cell(),
    );
    report.put(
        "  the long-poll exchange's own answer, p50 / p99",
        name,
        format!(
            "{} ({before_answer} of {} events arrived before it)",
            answered.cell(),
            plan.samples
        ),
    );

    // Quotes (WebSocket agent), spaced beyond the stream's quote interval.
    let stream = open_stream(
        &dep.api,
        &lic.api_key,
        &format!("?terminal_id={ws_term}&types=quote"),
        "bid",
    )?;
    let mut quotes = Vec::new();
    for i in 0..plan.quotes {
        let bid = (110_000 + i) as f64 / 100_000.0;
        let sent = Instant::now();
        ws.push(&[tick_frame(bid)])?;
        let at = stream
            .wait(bid, ARRIVAL)
            .ok_or_else(|| format!("{name}: quote {bid} did not reach the stream"))?;
        quotes.push(ms(at - sent));
        // Not a multiple of the publisher's 100 ms: the pushes fall at every
        // phase of its interval (a fixed spacing would lock onto one).
        std::thread::sleep(QUOTE_SPACING + Duration::from_millis((i as u64 * 37) % 100));
    }
    report.put(
        "quote, WebSocket agent → SSE client, p50 / p99 (publisher conflation: 100 ms)",
        name,
        Lat::of(quotes).cell(),
    );
    Ok(())
}

/// Deals from a WebSocket agent to a webhook endpoint of this bench.
fn webhooks(dep: &mut Deployment, plan: Plan, report: &mut Report) -> Result<()> {
    let name = dep.name;
    let receiver = Receiver::start()?;
    let lic = dep.license("webhook")?;
    let (_, key) = dep.terminal(&lic.id, "bench-hook")?;
    let url = format!("http://127.0.0.1:{}/hook", receiver.port);
    let body = json!({ "url": url, "types": ["deal.added"] }).to_string();
    let auth = format!("Bearer {}", lic.master);
    let r = request(
        "POST",
        &dep.api,
        "/api/webhooks",
        &[("Authorization", &auth)],
        Some(&body),
        Duration::from_secs(10),
    )?;
    if !(200..300).contains(&r.status) || r.json()["data"]["secret"].as_str().is_none() {
        return Err(format!("{name}: creating the webhook: {} {}", r.status, r.body));
    }
    let uid = format!("bench-hook-{}-{}", std::process::id(), unix_ms());
    let mut ws = WsAgent::open(&dep.gw, &key, &uid)?;
    let mut lat = Vec::new();
    for i in 0..plan.deliveries as u64 {
        let ticket = 3_000_000 + i;
        let sent = Instant::now();
        ws.push(&[deal_frame(ticket)])?;
        let at = receiver
            .wait(ticket, DELIVERY)
            .ok_or_else(|| format!("{name}: deal {ticket} was not delivered to the webhook within {DELIVERY:?}"))?;
        lat.push(ms(at - sent));
        std::thread::sleep(Duration::from_millis(5));
    }
    let signed = receiver.signed.load(Ordering::SeqCst);
    if signed < plan.deliveries {
        return Err(format!(
            "{name}: {signed} of {} deliveries were signed",
            plan.deliveries
        ));
    }
    report.put(
        "deal, WebSocket agent → webhook receiver, p50 / p99",
        name,
        format!("**{}**", Lat::of(lat).cell()),
    );
    Ok(())
}

/// 1 000 (short: 100) subscribers: memory when idle, then a burst.
fn fan_out(dep: &mut Deployment, plan: Plan, report: &mut Report) -> Result<()> {
    let name = dep.name;
    let mut licenses = Vec::new();
    for n in 0..SUBSCRIBER_LICENSES {
        let lic = dep.license(&format!("fan{n}"))?;
        let (_, key) = dep.terminal(&lic.id, "fan")?;
        let agent = PollAgent::open(&dep.gw, &key, &format!("bench-fan-{n}-{}", unix_ms()))?;
        licenses.push((lic.api_key, agent));
    }
    std::thread::sleep(Duration::from_millis(500));
    let before = rss_kib(dep.api_pid)?;
    let mut streams = Vec::new();
    for (k, _) in &licenses {
        for _ in 0..plan.per_license {
            streams.push(Stream::open(&dep.api, k, "?types=deal.added")?);
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let after = rss_kib(dep.api_pid)?;
    let subscribers = streams.len();
    let per_sub_kib = (after.saturating_sub(before)) as f64 / subscribers as f64;
    report.put(
        "memory per idle subscriber",
        name,
        format!(
            "**{per_sub_kib:.1} KiB** ({:.1} → {:.1} MiB for {subscribers})",
            before as f64 / 1024.0,
            after as f64 / 1024.0
        ),
    );
    let burst = plan.burst;
    let started = Instant::now();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            std::thread::spawn(move || {
                s.text.clear();
                let ok = s.until(
                    |t| t.matches("event: deal.added").count() >= burst,
                    Duration::from_secs(120),
                );
                (ok, Instant::now())
            })
        })
        .collect();
    for (_, agent) in &mut licenses {
        let tickets: Vec<u64> = (0..burst as u64).map(|i| 4_000_000 + i).collect();
        for chunk in tickets.chunks(50) {
            let frames: Vec<Value> = chunk.iter().map(|t| deal_frame(*t)).collect();
            agent.push(&frames)?;
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
    report.put(
        &format!("deliveries to {subscribers} subscribers"),
        name,
        format!(
            "**{:.0} events/s** ({delivered} in {secs:.2} s, {complete} of {subscribers} complete)",
            delivered as f64 / secs
        ),
    );
    if complete != subscribers {
        return Err(format!(
            "{name}: {} subscribers did not receive every event",
            subscribers - complete
        ));
    }
    Ok(())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub fn events(args: &[String]) -> Result<()> {
    let short = args.iter().any(|a| a == "--short");
    let plan = Plan::new(short);
    crate::ensure_services()?;
    let root = workspace_root();
    run(cargo().current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "tradeterm",
        "-p",
        "tradeterm-gateway-bin",
        "-p",
        "tradeterm-api",
        // `--bin` filters every package named: one per binary.
        "--bin",
        "tradeterm",
        "--bin",
        "tradeterm-gateway",
        "--bin",
        "tradeterm-api",
    ]))?;
    let data = std::env::temp_dir().join(format!("tradeterm-bench-events-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(data.join("single")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(data.join("split")).map_err(|e| e.to_string())?;
    println!("load average before: {}", loadavg());
    let mut report = Report::default();
    let result = measure(plan, &data, &mut report);
    println!("load average after: {}", loadavg());
    report.print();
    let _ = psql(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"));
    match result {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&data);
            Ok(())
        }
        Err(e) => {
            println!("logs kept in {}", data.display());
            Err(e)
        }
    }
}

fn measure(plan: Plan, data: &Path, report: &mut Report) -> Result<()> {
    println!("single node: tradeterm serve (in-memory engine, SQLite)");
    let mut single = Deployment::single(&data.join("single"))?;
    latencies(&mut single, plan, None, report)?;
    webhooks(&mut single, plan, report)?;
    fan_out(&mut single, plan, report)?;
    drop(single);

    println!("split: tradeterm-gateway + tradeterm-api on Redis {REDIS} and PostgreSQL ({DATABASE})");
    let mut split = Deployment::split(&data.join("split"))?;
    let observer = redis_observer("ticket")?;
    let result = latencies(&mut split, plan, Some(&observer), report).and_then(|()| webhooks(&mut split, plan, report));
    drop(observer);
    // The run's streams leave the shared Redis with the run.
    for license in &split.licenses {
        let _ = Command::new("redis-cli")
            .args(["DEL", &format!("tt:ev:{license}"), &format!("tt:ev:{license}:dropped")])
            .stdout(Stdio::null())
            .status();
    }
    drop(split);
    result
}
