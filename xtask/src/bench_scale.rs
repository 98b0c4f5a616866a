//! `cargo xtask bench scale [--short]`: what one gateway holds and how fast
//! it dispatches with many agents connected (`docs/performance.md`,
//! "Capacity").
//!
//! 1. Release builds of `tradeterm` (for `admin create-license`),
//!    `tradeterm-gateway`, `tradeterm-api` and `tradeterm-sim`.
//! 2. A fresh PostgreSQL database `tradeterm_capacity` on 127.0.0.1:5432, an
//!    enterprise license, one gateway and one REST API process sharing it and
//!    Redis (`KEYVALUE_URL`), as a scaled-out deployment runs them.
//! 3. `tradeterm-sim provision`: N terminals and a REST API key through the
//!    gateway's management API (timed).
//! 4. The gateway's resident memory (`VmRSS`) before and after
//!    `tradeterm-sim swarm` connects N light agents over the real agent
//!    protocol, at `connects_per_sec` (timed: the ramp); the gateway's CPU
//!    while the N agents only exchange heartbeats.
//! 5. Open-loop `tick` load at `rate` requests/s for `seconds`, spread over
//!    the N agents, through the gateway's internal dispatch route, then
//!    through the REST API; p50/p99 of each, and the agents' own answer time
//!    over the same requests, so that the latency the API and the gateway add
//!    is `p50(end to end) − p50(agent)`. First, the same load against the REST
//!    API's bare `GET /healthz` (`baseline`): what one HTTP round trip costs
//!    on the machine with the same client, in the same run.
//!
//! Defaults: 10 000 agents, 500 connections/s, 1 000 requests/s for 10 s.
//! `--short`: 200 agents, 200 requests/s for 2 s. Environment overrides:
//! `SCALE_AGENTS`, `SCALE_CONNECTS_PER_SEC`, `SCALE_RATE`, `SCALE_SECONDS`;
//! `SCALE_API_BIN` runs another build of `tradeterm-api` (an A/B comparison);
//! `SCALE_SINGLE=1` runs the gateway and the REST API in one `tradeterm
//! serve` process instead of two.
//! The figures are printed as a table and written as JSON to
//! `$CARGO_TARGET_DIR/bench-scale.json`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bench::{Killer, free_port, http_ok, wait_for};
use crate::{Result, cargo, run, target_dir, workspace_root};

const DATABASE: &str = "tradeterm_capacity";

#[derive(Debug, Clone, Copy)]
struct Plan {
    agents: usize,
    connects_per_sec: f64,
    rate: f64,
    seconds: f64,
}

impl Plan {
    fn new(short: bool) -> Self {
        let mut p = if short {
            Self {
                agents: 200,
                connects_per_sec: 200.0,
                rate: 200.0,
                seconds: 2.0,
            }
        } else {
            Self {
                agents: 10_000,
                connects_per_sec: 500.0,
                rate: 1_000.0,
                seconds: 10.0,
            }
        };
        let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
        if let Some(v) = env("SCALE_AGENTS") {
            p.agents = v.max(1.0) as usize;
        }
        if let Some(v) = env("SCALE_CONNECTS_PER_SEC") {
            p.connects_per_sec = v;
        }
        if let Some(v) = env("SCALE_RATE") {
            p.rate = v;
        }
        if let Some(v) = env("SCALE_SECONDS") {
            p.seconds = v;
        }
        p
    }
}

/// Resident memory of a process, KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time (user + system) of a process, in clock ticks (1/100 s here).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at ") ".
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Share of one core a process used over `window`, percent.
fn cpu_percent(pid: u32, window: Duration) -> Option<f64> {
    let a = cpu_ticks(pid)?;
    std::thread::sleep(window);
    let b = cpu_ticks(pid)?;
    Some((b - a) as f64 / window.as_secs_f64())
}

fn psql(sql: &str) -> Result<()> {
    run(Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-q", "-c", sql])
        .stdout(Stdio::null()))
}

/// A child process speaking JSON lines on stdout, commanded over stdin.
struct Swarm {
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Swarm {
    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to the swarm: {e}"))
    }

    /// The next JSON event named `event` (others are shown when `show`).
    fn wait_event(&self, event: &str, timeout: Duration, show: bool) -> Result<Value> {
        let until = Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|_| format!("no `{event}` from the swarm within {timeout:?}"))?;
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            match v["event"].as_str() {
                Some(e) if e == event => return Ok(v),
                Some("error") => return Err(format!("swarm: {}", v["message"])),
                _ if show => println!("  swarm: {line}"),
                _ => {}
            }
        }
    }
}

fn spawn_swarm(cmd: &mut Command) -> Result<(Child, Swarm)> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("tradeterm-sim swarm: {e}"))?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok((child, Swarm { stdin, lines }))
}

fn log_file(dir: &Path, name: &str) -> Result<std::fs::File> {
    std::fs::File::create(dir.join(name)).map_err(|e| format!("{name}: {e}"))
}

fn json_stdout(cmd: &mut Command) -> Result<Value> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .ok_or_else(|| format!("{:?} printed no JSON", cmd.get_program()))
}

fn us(v: &Value) -> String {
    v.as_f64().map_or("—".into(), |x| format!("{:.3}", x / 1000.0))
}

pub fn scale(args: &[String]) -> Result<()> {
    let plan = Plan::new(args.iter().any(|a| a == "--short"));
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
        "-p",
        "tradeterm-sim-bin",
        // `--bin` filters every package named: one per binary.
        "--bin",
        "tradeterm",
        "--bin",
        "tradeterm-gateway",
        "--bin",
        "tradeterm-api",
        "--bin",
        "tradeterm-sim",
    ]))?;
    let release = target_dir().join("release");
    let data = std::env::temp_dir().join(format!("tradeterm-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let result = measure(&plan, &release, &data);
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&data);
    } else {
        println!("logs kept in {}", data.display());
    }
    result
}

/// The gateway and the REST API, running.
struct Servers {
    procs: Killer,
    gw_pid: u32,
    api_pid: u32,
    gw_port: u16,
    /// Gateway base URL.
    gw: String,
    /// REST API base URL.
    api: String,
}

/// Starts one gateway and one REST API on the database `db`, sharing the
/// machine's Redis, and waits until both answer `/healthz`.
fn start_servers(release: &Path, data: &Path, db: &str, token: &str) -> Result<Servers> {
    if std::env::var_os("SCALE_SINGLE").is_some_and(|v| v == "1") {
        return start_single(release, data, db, token);
    }
    let (gw_port, api_port) = (free_port()?, free_port()?);
    let mut procs = Killer(Vec::new());
    let gw_data = data.join("gateway");
    procs.0.push(
        Command::new(release.join("tradeterm-gateway"))
            .arg("--data-dir")
            .arg(&gw_data)
            .env("HOST", "127.0.0.1")
            .env("GATEWAY_PORT", gw_port.to_string())
            .env("DATABASE_URL", db)
            .env("GATEWAY_INTERNAL_TOKEN", token)
            .env("KEYVALUE_URL", "redis://127.0.0.1:6379")
            .env("RUST_LOG", "warn")
            .stdout(log_file(data, "gateway.log")?)
            .stderr(log_file(data, "gateway.err")?)
            .spawn()
            .map_err(|e| format!("tradeterm-gateway: {e}"))?,
    );
    let gw_pid = procs.0[0].id();
    let gw = format!("http://127.0.0.1:{gw_port}");
    wait_for("gateway", || http_ok(&format!("{gw}/healthz"), &[]))?;
    procs.0.push(
        // No data directory: the API has none since it needs `DATABASE_URL`.
        Command::new(api_binary(release))
            .env("HOST", "127.0.0.1")
            .env("PORT", api_port.to_string())
            .env("GATEWAY_URL", &gw)
            .env("GATEWAY_INTERNAL_TOKEN", token)
            .env("JWT_PUBLIC_KEY_PATH", gw_data.join("keys/jwt-public.pem"))
            .env("DATABASE_URL", db)
            .env("KEYVALUE_URL", "redis://127.0.0.1:6379")
            .env("API_RATE_LIMIT_ENTERPRISE", "1000000000")
            .env("RUST_LOG", "warn")
            .stdout(log_file(data, "api.log")?)
            .stderr(log_file(data, "api.err")?)
            .spawn()
            .map_err(|e| format!("tradeterm-api: {e}"))?,
    );
    let api_pid = procs.0[1].id();
    let api = format!("http://127.0.0.1:{api_port}");
    wait_for("REST API", || http_ok(&format!("{api}/healthz"), &[]))?;
    Ok(Servers {
        procs,
        gw_pid,
        api_pid,
        gw_port,
        gw,
        api,
    })
}

/// `SCALE_SINGLE=1`: the gateway and the REST API in one `tradeterm serve`
/// process (no simulated terminal of its own), on the same database and
/// Redis: no HTTP hop and no route table between the API and the gateway.
/// The CPU columns then both show that one process.
fn start_single(release: &Path, data: &Path, db: &str, token: &str) -> Result<Servers> {
    let (gw_port, api_port) = (free_port()?, free_port()?);
    let mut procs = Killer(Vec::new());
    let gw_data = data.join("gateway");
    procs.0.push(
        Command::new(release.join("tradeterm"))
            .arg("serve")
            .arg("--data-dir")
            .arg(&gw_data)
            .args(["--sim-terminals", "0"])
            .env("HOST", "127.0.0.1")
            .env("GATEWAY_PORT", gw_port.to_string())
            .env("PORT", api_port.to_string())
            .env("DATABASE_URL", db)
            .env("GATEWAY_INTERNAL_TOKEN", token)
            .env("KEYVALUE_URL", "redis://127.0.0.1:6379")
            .env("API_RATE_LIMIT_ENTERPRISE", "1000000000")
            .env("RUST_LOG", "warn")
            .stdout(log_file(data, "serve.log")?)
            .stderr(log_file(data, "serve.err")?)
            .spawn()
            .map_err(|e| format!("tradeterm serve: {e}"))?,
    );
    let pid = procs.0[0].id();
    let gw = format!("http://127.0.0.1:{gw_port}");
    let api = format!("http://127.0.0.1:{api_port}");
    wait_for("gateway", || http_ok(&format!("{gw}/healthz"), &[]))?;
    wait_for("REST API", || http_ok(&format!("{api}/healthz"), &[]))?;
    Ok(Servers {
        procs,
        gw_pid: pid,
        api_pid: pid,
        gw_port,
        gw,
        api,
    })
}

/// The REST API binary: `SCALE_API_BIN` when set (to compare two builds of
/// the API in the same conditions), else the release build.
fn api_binary(release: &Path) -> std::path::PathBuf {
    std::env::var_os("SCALE_API_BIN").map_or_else(|| release.join("tradeterm-api"), std::path::PathBuf::from)
}

/// A fresh database with an enterprise license; its URL and master key.
fn fresh_license(release: &Path, data: &Path) -> Result<(String, String)> {
    psql(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))?;
    psql(&format!("CREATE DATABASE {DATABASE}"))?;
    let db = format!("postgres://postgres@127.0.0.1:5432/{DATABASE}");
    let license = json_stdout(
        Command::new(release.join("tradeterm"))
            .args(["admin", "--data-dir"])
            .arg(data)
            .args(["create-license", "--name", "capacity", "--tier", "enterprise"])
            .env("DATABASE_URL", &db)
            .env("RUST_LOG", "warn"),
    )?;
    let master = license["license_key"].as_str().ok_or("no license key")?.to_owned();
    Ok((db, master))
}

/// A secret for `/internal/v1/*` that differs from run to run.
fn internal_token() -> String {
    format!(
        "scale-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

/// The swarm's keys: `plan.agents` terminals and an API key through the
/// management API, written to `keys`; the answer of `tradeterm-sim provision`.
fn provision(plan: &Plan, release: &Path, gw: &str, master: &str, keys: &Path) -> Result<Value> {
    println!("provisioning {} terminals through the management API", plan.agents);
    json_stdout(
        Command::new(release.join("tradeterm-sim"))
            .args([
                "provision",
                "--gateway-http",
                gw,
                "--count",
                &plan.agents.to_string(),
                "--out",
            ])
            .arg(keys)
            .env("TRADETERM_MASTER_KEY", master)
            .env("RUST_LOG", "warn"),
    )
}

fn measure(plan: &Plan, release: &Path, data: &Path) -> Result<()> {
    let (db, master) = fresh_license(release, data)?;
    let token = internal_token();
    let mut servers = start_servers(release, data, &db, &token)?;
    let gw_pid = servers.gw_pid;
    let keys = data.join("keys.json");
    let provisioned = provision(plan, release, &servers.gw, &master, &keys)?;
    std::thread::sleep(Duration::from_secs(2));
    let rss_before = rss_kib(gw_pid).ok_or("cannot read the gateway's VmRSS")?;
    let idle_cpu_empty = cpu_percent(gw_pid, Duration::from_secs(3));

    println!("connecting {} light agents at {}/s", plan.agents, plan.connects_per_sec);
    let (child, mut swarm) = spawn_swarm(
        Command::new(release.join("tradeterm-sim"))
            .args([
                "swarm",
                "--gateway",
                &format!("ws://127.0.0.1:{}/agent/v1", servers.gw_port),
                "--keys-file",
            ])
            .arg(&keys)
            .args([
                "--connects-per-sec",
                &plan.connects_per_sec.to_string(),
                "--dispatch-url",
                &servers.gw,
                "--api-url",
                &servers.api,
            ])
            .env("GATEWAY_INTERNAL_TOKEN", &token)
            .env("RUST_LOG", "warn")
            .stderr(log_file(data, "swarm.err")?),
    )?;
    let swarm_pid = child.id();
    servers.procs.0.push(child);
    let ready = swarm.wait_event("ready", Duration::from_secs(330), true)?;
    println!("  swarm: {ready}");
    // Let every connection reach its steady state (first heartbeats).
    std::thread::sleep(Duration::from_secs(12));
    let rss_after = rss_kib(gw_pid).ok_or("cannot read the gateway's VmRSS")?;
    let swarm_rss = rss_kib(swarm_pid);
    let idle_cpu = cpu_percent(gw_pid, Duration::from_secs(10));
    swarm.send("status")?;
    let held = swarm.wait_event("status", Duration::from_secs(10), false)?;
    let connected = held["connected"].as_u64().unwrap_or(0);

    let load_timeout = Duration::from_secs_f64(plan.seconds + 90.0);
    let mut loads = Vec::new();
    for target in ["baseline", "dispatch", "rest"] {
        println!("load: {target}, {} requests/s for {} s", plan.rate, plan.seconds);
        let before = (cpu_ticks(gw_pid), cpu_ticks(servers.api_pid));
        swarm.send(&format!("load {target} {} {}", plan.rate, plan.seconds))?;
        let mut load = swarm.wait_event("load", load_timeout, true)?;
        let after = (cpu_ticks(gw_pid), cpu_ticks(servers.api_pid));
        // CPU time per answered request, µs: steadier than latency on a
        // shared machine, so the figure to compare two builds by.
        let answered = load["ok"].as_u64().unwrap_or(0).max(1) as f64;
        let per_request =
            |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| b.saturating_sub(a) as f64 * 10_000.0 / answered);
        load["gateway_cpu_us_per_request"] = json!(per_request(before.0, after.0));
        load["api_cpu_us_per_request"] = json!(per_request(before.1, after.1));
        loads.push(load);
    }
    let rss_loaded = rss_kib(gw_pid);
    swarm.send("status")?;
    let end = swarm.wait_event("status", Duration::from_secs(10), false)?;
    swarm.send("quit")?;

    let per_conn = (rss_after.saturating_sub(rss_before) as f64 * 1024.0) / connected.max(1) as f64;
    let summary = json!({
        "plan": {
            "agents": plan.agents,
            "connects_per_sec": plan.connects_per_sec,
            "rate": plan.rate,
            "seconds": plan.seconds,
        },
        "provision_ms": provisioned["ms"],
        "ramp_ms": ready["ramp_ms"],
        "connected": connected,
        "failed_handshakes": end["failed"],
        "lost_connections": end["lost"],
        "gateway_rss_kib": { "before": rss_before, "after": rss_after, "after_load": rss_loaded },
        "gateway_bytes_per_connection": per_conn,
        "swarm_rss_kib": swarm_rss,
        "gateway_cpu_percent": { "no_agents": idle_cpu_empty, "agents_idle": idle_cpu },
        "loads": loads,
    });
    let out = target_dir().join("bench-scale.json");
    let _ = std::fs::write(&out, serde_json::to_vec_pretty(&summary).unwrap_or_default());
    report(&summary);
    println!("(JSON: {})", out.display());
    drop(servers);
    let _ = psql(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"));
    verdict(plan, &summary)
}

/// Fails the run when an agent did not connect, a connection was lost or
/// a request failed.
fn verdict(plan: &Plan, summary: &Value) -> Result<()> {
    let connected = summary["connected"].as_u64().unwrap_or(0);
    if connected < plan.agents as u64 {
        return Err(format!("only {connected} of {} agents connected", plan.agents));
    }
    for l in summary["loads"].as_array().into_iter().flatten() {
        if l["failed"].as_u64().unwrap_or(1) > 0 {
            return Err(format!(
                "{} load: {} failures, first: {}",
                l["target"], l["failed"], l["first_error"]
            ));
        }
    }
    match summary["lost_connections"].as_u64().unwrap_or(0) {
        0 => Ok(()),
        lost => Err(format!("{lost} agent connections were lost during the run")),
    }
}

fn report(s: &Value) {
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    println!();
    println!(
        "Capacity: one gateway, {} light agents, release builds, PostgreSQL + Redis on loopback",
        s["plan"]["agents"]
    );
    println!("{:<48} {:>14}", "figure", "value");
    let rows = [
        (
            "terminals provisioned (management API), s",
            format!("{:.1}", f(&s["provision_ms"]) / 1000.0),
        ),
        ("agents connected", s["connected"].to_string()),
        (
            "ramp (all agents welcomed), s",
            format!("{:.1}", f(&s["ramp_ms"]) / 1000.0),
        ),
        (
            "gateway RSS before agents, MiB",
            format!("{:.1}", f(&s["gateway_rss_kib"]["before"]) / 1024.0),
        ),
        (
            "gateway RSS with agents, MiB",
            format!("{:.1}", f(&s["gateway_rss_kib"]["after"]) / 1024.0),
        ),
        (
            "gateway RSS after load, MiB",
            format!("{:.1}", f(&s["gateway_rss_kib"]["after_load"]) / 1024.0),
        ),
        (
            "gateway memory per connection, KiB",
            format!("{:.1}", f(&s["gateway_bytes_per_connection"]) / 1024.0),
        ),
        ("swarm RSS, MiB", format!("{:.1}", f(&s["swarm_rss_kib"]) / 1024.0)),
        (
            "gateway CPU, no agents, % of a core",
            format!("{:.1}", f(&s["gateway_cpu_percent"]["no_agents"])),
        ),
        (
            "gateway CPU, agents idle (heartbeats), % of a core",
            format!("{:.1}", f(&s["gateway_cpu_percent"]["agents_idle"])),
        ),
    ];
    for (name, value) in rows {
        println!("{name:<48} {value:>14}");
    }
    println!();
    println!(
        "{:<10} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>12} {:>10} {:>10}",
        "path",
        "req/s",
        "ok",
        "failed",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "agent p50",
        "agent p99",
        "added p50 ms",
        "gw CPU µs",
        "API CPU µs"
    );
    let loads = s["loads"].as_array().cloned().unwrap_or_default();
    let baseline = loads
        .iter()
        .find(|l| l["target"] == "baseline")
        .map_or(f64::NAN, |l| f(&l["p50_us"]));
    for l in &loads {
        // No agent answers the baseline.
        let added = f(&l["p50_us"]) - l["agent_p50_us"].as_f64().unwrap_or(0.0);
        println!(
            "{:<10} {:>9.0} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>12.3} {:>10.0} {:>10.0}",
            l["target"].as_str().unwrap_or("?"),
            f(&l["achieved_rate"]),
            l["ok"].to_string(),
            l["failed"].to_string(),
            us(&l["p50_us"]),
            us(&l["p90_us"]),
            us(&l["p99_us"]),
            us(&l["max_us"]),
            us(&l["agent_p50_us"]),
            us(&l["agent_p99_us"]),
            added / 1000.0,
            f(&l["gateway_cpu_us_per_request"]),
            f(&l["api_cpu_us_per_request"])
        );
    }
    if let Some(rest) = loads.iter().find(|l| l["target"] == "rest") {
        println!(
            "REST p50 beyond the baseline HTTP round trip and the agent: {:.3} ms",
            (f(&rest["p50_us"]) - baseline - f(&rest["agent_p50_us"])) / 1000.0
        );
    }
    println!(
        "(latency from the request leaving the load generator to its answer read; agent = from the request frame read to the response written, in the swarm; baseline = GET /healthz of the REST API, no agent; CPU µs = the process's CPU time during the load per answered request)"
    );
}
