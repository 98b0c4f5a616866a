//! `cargo xtask bench sessions`: the memory one terminal key's MCP sessions
//! take, the refusal of one session over the per-key cap, and what is left
//! after the idle ones expire (issue 31, item 5; `docs/performance.md`, "MCP
//! sessions: memory per session and after idle expiry").
//!
//! 1. A debug build of `tradeterm` (`cargo build -p tradeterm --bin
//!    tradeterm`: what the tests build; memory figures of a debug build are
//!    larger than a release build's).
//! 2. One `tradeterm serve --sim-terminals 1` in a fresh data directory (the
//!    embedded defaults: in-memory engine, SQLite, no Redis; the simulated
//!    terminal's agent binds its key, which an MCP session needs), with
//!    `MCP_MAX_SESSIONS_PER_KEY` = N (2 000) and `MCP_SESSION_IDLE_SECS`
//!    (20 s by default: opening the N sessions of a debug build on a busy
//!    2-core machine must take less than that).
//! 3. Warm-up: 50 sessions opened and closed (`DELETE /mcp/v1`); the
//!    server's resident memory (`VmRSS` of `/proc/<pid>/status`, and
//!    `Anonymous` and `LazyFree` of `/proc/<pid>/smaps_rollup`) is the
//!    baseline, after a control: the same readings before and after as
//!    long as a round's expiry with no session (the simulated terminal's
//!    own activity).
//! 4. N sessions with the one key, each an `initialize` (`POST /mcp/v1`, a
//!    new TCP connection, the `Mcp-Session-Id` kept) and its
//!    `notifications/initialized`, from 4 threads; never closed. The gauge
//!    `tradeterm_mcp_sessions_open` of the MCP port's `/metrics` must show
//!    N; memory read. Then the N+1st `initialize`: its HTTP status and error
//!    code (documented: 429 `RATE_LIMITED`, `docs/security.md`).
//! 5. Nothing more is sent: the gauge is polled every second until it is 0
//!    (the idle expiry closed every session); memory read then and 5 s
//!    later; then one new session must open (the key's slots are free) and
//!    is closed.
//! 6. A second round of N sessions and their expiry, the same way: when the
//!    first round's memory is kept by the allocator for reuse rather than
//!    leaked, the second round does not raise the resident memory much above
//!    the first round's peak.
//!
//! The run fails when a session does not open, the N+1st is not refused with
//! 429 `RATE_LIMITED`, or the sessions are not closed within the idle time
//! plus 60 s. Memory is printed, never judged (the machine is shared).
//! Environment: `SESSIONS_COUNT` (N, default 2 000), `SESSIONS_IDLE_SECS`
//! (default 20), `SESSIONS_SETTLE_SECS` (the second reading after the
//! expiry, default 5); the server inherits the rest of the environment, so
//! allocator options (`MIMALLOC_*`) can be tried.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bench::{Killer, free_port, wait_for};
use crate::scale::http::{Resp, request};
use crate::{Result, cargo, run, target_dir, workspace_root};

const THREADS: usize = 4;
const WARM_UP: usize = 50;
const TIMEOUT: Duration = Duration::from_secs(20);
const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

/// Resident memory of a process, KiB: `VmRSS`, and from `smaps_rollup` its
/// anonymous part and what of it is lazily freed (`MADV_FREE`: still counted
/// in RSS until the kernel takes it back).
#[derive(Debug, Clone, Copy, Default)]
struct Mem {
    rss: u64,
    anon: u64,
    lazy_free: u64,
}

fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn mem(pid: u32) -> Result<Mem> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("VmRSS: {e}"))?;
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    Ok(Mem {
        rss: kib_field(&status, "VmRSS:").ok_or("no VmRSS")?,
        anon: kib_field(&rollup, "Anonymous:").unwrap_or(0),
        lazy_free: kib_field(&rollup, "LazyFree:").unwrap_or(0),
    })
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// The server's environment without the settings of whoever runs the bench.
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
    cmd.env("RUST_LOG", "warn")
}

/// The MCP endpoint of the server, and the key its sessions use.
struct Mcp {
    addr: String,
    auth: String,
}

impl Mcp {
    fn post(&self, session: Option<(&str, &str)>, body: &str) -> Result<Resp> {
        let mut headers = vec![("Authorization", self.auth.as_str()), ACCEPT];
        if let Some((id, version)) = session {
            headers.push(("Mcp-Session-Id", id));
            headers.push(("MCP-Protocol-Version", version));
        }
        request("POST", &self.addr, "/mcp/v1", &headers, Some(body), TIMEOUT)
    }

    fn initialize(&self) -> Result<Resp> {
        self.post(
            None,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench-sessions","version":"0"}}}"#,
        )
    }

    /// One session, initialized as a client does: its id and protocol version.
    fn open(&self) -> Result<(String, String)> {
        let r = self.initialize()?;
        let id = r.header("mcp-session-id").map(str::to_owned);
        let (200, Some(id)) = (r.status, id) else {
            return Err(format!("initialize: {} {}", r.status, r.body));
        };
        let version = r.json()["result"]["protocolVersion"]
            .as_str()
            .unwrap_or("2025-06-18")
            .to_owned();
        let n = self.post(
            Some((&id, &version)),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )?;
        if n.status != 202 {
            return Err(format!("notifications/initialized: {} {}", n.status, n.body));
        }
        Ok((id, version))
    }

    fn close(&self, id: &str, version: &str) -> Result<()> {
        let headers = [
            ("Authorization", self.auth.as_str()),
            ("Mcp-Session-Id", id),
            ("MCP-Protocol-Version", version),
        ];
        let r = request("DELETE", &self.addr, "/mcp/v1", &headers, None, TIMEOUT)?;
        match r.status {
            200 | 202 | 204 => Ok(()),
            s => Err(format!("DELETE /mcp/v1: {s} {}", r.body)),
        }
    }

    /// `tradeterm_mcp_sessions_open` of the process.
    fn sessions_open(&self) -> Result<f64> {
        let r = request("GET", &self.addr, "/metrics", &[], None, TIMEOUT)?;
        let values: Vec<f64> = r
            .body
            .lines()
            .filter(|l| {
                l.strip_prefix("tradeterm_mcp_sessions_open")
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        if values.is_empty() {
            return Err("no tradeterm_mcp_sessions_open in /metrics".into());
        }
        Ok(values.iter().sum())
    }

    /// Opens `n` sessions from [`THREADS`] threads; the time it took.
    fn open_many(self: &Arc<Self>, n: usize) -> Result<Duration> {
        let started = Instant::now();
        let next = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (mcp, next) = (self.clone(), next.clone());
                std::thread::spawn(move || -> Result<()> {
                    while next.fetch_add(1, Ordering::Relaxed) < n {
                        mcp.open()?;
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join().map_err(|_| "a session thread panicked".to_owned())??;
        }
        Ok(started.elapsed())
    }

    /// Polls the gauge until no session is open; the time since `since`.
    fn wait_closed(&self, since: Instant, limit: Duration) -> Result<Duration> {
        let until = Instant::now() + limit;
        loop {
            let open = self.sessions_open()?;
            if open == 0.0 {
                return Ok(since.elapsed());
            }
            if Instant::now() > until {
                return Err(format!("{open} MCP sessions still open {limit:?} later"));
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// The figures of one round.
#[derive(Debug, Clone)]
struct Round {
    before: Mem,
    opened_in: Duration,
    with: Mem,
    refused: String,
    closed_after: Duration,
    after: Mem,
    after_settle: Mem,
}

/// Opens `n` sessions, tries one more, waits for their expiry.
fn round(mcp: &Arc<Mcp>, pid: u32, n: usize, idle: u64, settle: u64) -> Result<Round> {
    let before = mem(pid)?;
    println!("opening {n} MCP sessions with one terminal key");
    let opened_in = mcp.open_many(n)?;
    let last_opened = Instant::now();
    let with = mem(pid)?;
    let open = mcp.sessions_open()?;
    if open != n as f64 {
        return Err(format!(
            "{open} sessions open after opening {n} in {opened_in:?} (some expired already? raise SESSIONS_IDLE_SECS)"
        ));
    }
    let extra = mcp.initialize()?;
    let refused = format!(
        "{} {} (Retry-After {})",
        extra.status,
        extra.code(),
        extra.header("retry-after").unwrap_or("-")
    );
    println!(
        "  {n} open in {:.1} s; session {}: {refused}",
        opened_in.as_secs_f64(),
        n + 1
    );
    if extra.status != 429 || extra.code() != "RATE_LIMITED" {
        return Err(format!(
            "session {} of one key was not refused with 429 RATE_LIMITED: {} {}",
            n + 1,
            extra.status,
            extra.body
        ));
    }
    println!("  waiting for the idle expiry ({idle} s)");
    let closed_after = mcp.wait_closed(last_opened, Duration::from_secs(idle + 60))?;
    let after = mem(pid)?;
    std::thread::sleep(Duration::from_secs(settle));
    let after_settle = mem(pid)?;
    // The key's slots are free again.
    let (id, version) = mcp
        .open()
        .map_err(|e| format!("no new session after the expiry: {e}"))?;
    mcp.close(&id, &version)?;
    Ok(Round {
        before,
        opened_in,
        with,
        refused,
        closed_after,
        after,
        after_settle,
    })
}

pub fn sessions(_args: &[String]) -> Result<()> {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let n = env("SESSIONS_COUNT", 2_000).max(1) as usize;
    let idle = env("SESSIONS_IDLE_SECS", 20).max(1);
    let settle = env("SESSIONS_SETTLE_SECS", 5);
    run(cargo()
        .current_dir(workspace_root())
        .args(["build", "-p", "tradeterm", "--bin", "tradeterm"]))?;
    let bin = target_dir().join("debug").join("tradeterm");
    let data = std::env::temp_dir().join(format!("tradeterm-bench-sessions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let result = measure(&bin, &data, n, idle, settle);
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

fn measure(bin: &Path, data: &Path, n: usize, idle: u64, settle: u64) -> Result<()> {
    let (rest_port, gw_port, mcp_port) = (free_port()?, free_port()?, free_port()?);
    let serve = clean_env(&mut Command::new(bin))
        .args(["serve", "--sim-terminals", "1", "--data-dir"])
        .arg(data)
        .env("PORT", rest_port.to_string())
        .env("GATEWAY_PORT", gw_port.to_string())
        .env("MCP_PORT", mcp_port.to_string())
        .env("MCP_MAX_SESSIONS_PER_KEY", n.to_string())
        .env("MCP_SESSION_IDLE_SECS", idle.to_string())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(data.join("serve.err")).map_err(|e| format!("serve.err: {e}"))?)
        .spawn()
        .map_err(|e| format!("tradeterm serve: {e}"))?;
    let pid = serve.id();
    let _procs = Killer(vec![serve]);
    // The simulated terminal's key, bound by its agent's first connection
    // (an MCP session needs a bound key).
    let credentials = data.join("demo-credentials.json");
    wait_for("tradeterm serve's credentials", || credentials.is_file())?;
    let demo: Value = std::fs::read(&credentials)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("unreadable demo-credentials.json")?;
    let key = demo["terminals"][0]["key"].as_str().ok_or("no terminal key")?;
    let mcp = Arc::new(Mcp {
        addr: format!("127.0.0.1:{mcp_port}"),
        auth: format!("Bearer {key}"),
    });
    wait_for("an MCP session of the simulated terminal's key", || {
        mcp.open().and_then(|(id, version)| mcp.close(&id, &version)).is_ok()
    })?;
    println!(
        "tradeterm serve (debug build, pid {pid}): MCP_MAX_SESSIONS_PER_KEY={n}, MCP_SESSION_IDLE_SECS={idle}; warm-up: {WARM_UP} sessions opened and closed"
    );
    for _ in 0..WARM_UP {
        let (id, version) = mcp.open()?;
        mcp.close(&id, &version)?;
    }
    mcp.wait_closed(Instant::now(), Duration::from_secs(10))?;
    std::thread::sleep(Duration::from_secs(3));
    // A control: what the process's memory does by itself (the simulated
    // terminal's ticks) over as long as a round's expiry and settling.
    let control = mem(pid)?;
    println!("control: no sessions for {} s", idle + settle);
    std::thread::sleep(Duration::from_secs(idle + settle));
    let control_after = mem(pid)?;
    let first = round(&mcp, pid, n, idle, settle)?;
    std::thread::sleep(Duration::from_secs(3));
    println!("second round");
    let second = round(&mcp, pid, n, idle, settle)?;
    report(n, idle, settle, (control, control_after), &first, &second);
    Ok(())
}

fn report(n: usize, idle: u64, settle: u64, control: (Mem, Mem), a: &Round, b: &Round) {
    let base = a.before.rss;
    let per = |r: &Round| format!("{:.1}", r.with.rss.saturating_sub(r.before.rss) as f64 / n as f64);
    let ratio = |m: &Mem| format!("{:.2}", m.rss as f64 / base.max(1) as f64);
    let m3 = |m: &Mem| format!("{} ({} / {})", mib(m.rss), mib(m.anon), mib(m.lazy_free));
    println!();
    println!(
        "MCP sessions of one terminal key: tradeterm serve, debug build, cap {n}, idle expiry {idle} s; MiB as RSS (anonymous / lazily freed)"
    );
    let rows = [
        ("RSS before the round, MiB", m3(&a.before), m3(&b.before)),
        (
            "time to open the sessions, s",
            format!("{:.1}", a.opened_in.as_secs_f64()),
            format!("{:.1}", b.opened_in.as_secs_f64()),
        ),
        (&*format!("RSS with {n} sessions, MiB"), m3(&a.with), m3(&b.with)),
        ("per session (over the round's start), KiB", per(a), per(b)),
        (
            &*format!("session {} answered", n + 1),
            a.refused.clone(),
            b.refused.clone(),
        ),
        (
            "all closed, s after the last opened",
            format!("{:.0}", a.closed_after.as_secs_f64()),
            format!("{:.0}", b.closed_after.as_secs_f64()),
        ),
        ("RSS when all closed, MiB", m3(&a.after), m3(&b.after)),
        (
            &*format!("RSS {settle} s later, MiB"),
            m3(&a.after_settle),
            m3(&b.after_settle),
        ),
        (
            &*format!("RSS {settle} s later / baseline"),
            ratio(&a.after_settle),
            ratio(&b.after_settle),
        ),
        ("peak RSS / baseline", ratio(&a.with), ratio(&b.with)),
    ];
    println!("{:<44} {:>34} {:>34}", "figure", "round 1", "round 2");
    for (name, x, y) in rows {
        println!("{name:<44} {x:>34} {y:>34}");
    }
    println!(
        "control, no sessions: RSS {} -> {} MiB in {} s",
        mib(control.0.rss),
        mib(control.1.rss),
        idle + settle
    );
    println!(
        "baseline = RSS before round 1 (after the warm-up and the control): {} MiB; round 2's peak over round 1's: {:+.1} MiB",
        mib(base),
        (b.with.rss as f64 - a.with.rss as f64) / 1024.0
    );
}
