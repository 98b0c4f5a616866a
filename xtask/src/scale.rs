//! `cargo xtask scale [--short]`: the scaled-out deployment on loopback,
//! checked end to end with real processes and a real load balancer.
//!
//! Topology (every server with `NODE_ENV=production`): the machine's
//! PostgreSQL (a dedicated database, `tt_scale`, recreated each run) and
//! Redis; two `tradeterm-gateway`, two `tradeterm-api` and two
//! `tradeterm-mcp` processes; HAProxy (`deploy/haproxy.cfg`, installed by
//! `scripts/install-lb.sh`) in front of them; simulated terminals as
//! separate `tradeterm-sim` processes connecting through the load balancer's
//! gateway listener, which spreads them over both gateways. The API and MCP
//! instances reach the gateways through the route table in Redis, and
//! through the load balancer's private gateway listener (`GATEWAY_URL`) for
//! token exchange and terminals no instance holds.
//!
//! Checks, each printed with its figures:
//! 1. every terminal reachable through every API and every MCP instance;
//! 2. the rate limit is exact across both API instances (a Free license:
//!    exactly its limit of 200s in one window, the rest 429);
//! 3. a revoked API key and a rotated terminal key (its session token, its
//!    MCP sessions) are refused on every instance within 1 s;
//! 4. a live trailing stop survives `kill -9` of the API instance that
//!    evaluates it: the other instance takes it over within 10 s, takes the
//!    rule's next step (the stop, lowered by hand after the takeover, raised
//!    again) and no step of the rule is repeated (`docs/managed-exits.md`);
//! 5. `kill -9` of the gateway holding most terminals, under load (ticks and
//!    live orders with idempotency keys through the load balancer): its
//!    terminals reachable again through both API instances within 15 s (the
//!    agents reconnect through the load balancer to the other gateway);
//!    requests for them in the gap answer 502 `DISPATCH_ERROR` before the
//!    dispatch timeout; every acknowledged order is in its simulator's deal
//!    history exactly once and no order executed twice;
//! 6. Redis restarted under load (`shutdown nosave`: its data is gone): no
//!    request hangs, then full recovery (every terminal reachable through
//!    every API instance again, revocation marks honoured) without restarting
//!    tradeterm;
//! 7. PostgreSQL restarted under load: full recovery likewise (a new API key
//!    created through the gateway works on both API instances).
//!
//! `--short` (what `cargo xtask test` runs, with `--after-tests`: the
//! binaries as the test run built them) uses 4 terminals and short load
//! phases; the full form 8 terminals and longer phases. The machine's Redis
//! and PostgreSQL are left running whatever happens.

pub(crate) mod http;

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Result, cargo, run, target_dir, workspace_root};
use http::{Resp, request};

const PG_SERVER: &str = "postgres://postgres@127.0.0.1:5432";
const DATABASE: &str = "tt_scale";
const REDIS_URL: &str = "redis://127.0.0.1:6379";
const INTERNAL_TOKEN: &str = "scale-test-internal-token";
/// The Free tier's limit per window in this run (`API_RATE_LIMIT_FREE`).
const FREE_LIMIT: u64 = 10;
/// The rate-limit window (`API_RATE_LIMIT_WINDOW_MS`).
const WINDOW_MS: u64 = 60_000;
/// The dispatch timeout of tool calls (`tradeterm_protocol::dispatch::DEFAULT_TIMEOUT`).
const DISPATCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The agents' heartbeat (`HEARTBEAT_INTERVAL_MS` / `HEARTBEAT_TIMEOUT_MS`).
const HEARTBEAT_MS: (u64, u64) = (1_000, 3_000);

/// Sizes of one run.
#[derive(Debug, Clone, Copy)]
struct Plan {
    terminals: usize,
    /// Load before the gateway is killed, and Redis kept down.
    phase: Duration,
}

/// `cargo xtask scale [--short]`.
pub fn scale(args: &[String]) -> Result<()> {
    let short = args.iter().any(|a| a == "--short");
    let plan = if short {
        Plan {
            terminals: 4,
            phase: Duration::from_secs(3),
        }
    } else {
        Plan {
            terminals: 8,
            phase: Duration::from_secs(10),
        }
    };
    crate::ensure_services()?;
    install_lb()?;
    build(args.iter().any(|a| a == "--after-tests"))?;
    let started = Instant::now();
    let mut report = Report::default();
    let dir = std::env::temp_dir().join(format!("tradeterm-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Whatever happens, the machine's Redis and PostgreSQL stay up.
    let _services = ServicesGuard;
    let result = Cluster::new(&dir).and_then(|mut cluster| {
        let r = cluster.launch(plan).and_then(|()| cluster.checks(plan, &mut report));
        if r.is_err() || !report.failed.is_empty() {
            cluster.procs.dump_logs();
        }
        r
    });
    println!();
    println!(
        "scale test ({}, {} terminals): {:.0} s",
        if short { "short" } else { "full" },
        plan.terminals,
        started.elapsed().as_secs_f64()
    );
    report.print();
    match result {
        Ok(()) if report.failed.is_empty() => {
            // TT_SCALE_KEEP_LOGS=1 keeps the processes' logs of a passing run.
            if std::env::var_os("TT_SCALE_KEEP_LOGS").is_none() {
                let _ = std::fs::remove_dir_all(&dir);
            } else {
                println!("logs kept in {}", dir.display());
            }
            Ok(())
        }
        Ok(()) => Err(format!(
            "{} check(s) failed: {} (logs in {})",
            report.failed.len(),
            report.failed.join("; "),
            dir.display()
        )),
        Err(e) => Err(format!("{e} (logs in {})", dir.display())),
    }
}

fn install_lb() -> Result<()> {
    let have = Command::new("haproxy")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if have {
        return Ok(());
    }
    run(Command::new("sh").arg(workspace_root().join("scripts/install-lb.sh")))
}

/// Builds the binaries. `after_tests` (from `cargo xtask test`): with the
/// features `cargo test --workspace --all-features` resolved (dev-dependencies
/// included), so that its artifacts are reused rather than rebuilt.
fn build(after_tests: bool) -> Result<()> {
    if after_tests {
        return run(cargo().current_dir(workspace_root()).args([
            "build",
            "--workspace",
            "--all-features",
            "--bins",
            "--tests",
        ]));
    }
    run(cargo().current_dir(workspace_root()).args([
        "build",
        "-p",
        "tradeterm",
        "-p",
        "tradeterm-api",
        "-p",
        "tradeterm-gateway-bin",
        "-p",
        "tradeterm-mcp-server",
        "-p",
        "tradeterm-sim-bin",
    ]))
}

fn bin(name: &str) -> PathBuf {
    target_dir().join("debug").join(name)
}

/// Checks and figures, printed at the end.
#[derive(Default)]
struct Report {
    lines: Vec<String>,
    failed: Vec<String>,
}

impl Report {
    fn check(&mut self, ok: bool, what: &str, figures: String) {
        let line = format!("[{}] {what}: {figures}", if ok { "ok" } else { "FAIL" });
        println!("{line}");
        self.lines.push(line);
        if !ok {
            self.failed.push(what.to_owned());
        }
    }

    fn print(&self) {
        for l in &self.lines {
            println!("  {l}");
        }
    }
}

/// Restarts Redis or PostgreSQL if a check left it down.
struct ServicesGuard;

impl Drop for ServicesGuard {
    fn drop(&mut self) {
        if let Err(e) = crate::ensure_services() {
            eprintln!("scale: could not bring the machine's services back: {e}");
        }
    }
}

/// A child process with its log file, killed (SIGKILL) when dropped.
struct Proc {
    name: String,
    child: Child,
    log: PathBuf,
}

#[derive(Default)]
struct Procs(Vec<Proc>);

impl Procs {
    fn spawn(&mut self, dir: &Path, name: &str, cmd: &mut Command) -> Result<()> {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        self.0.push(Proc {
            name: name.to_owned(),
            child,
            log,
        });
        Ok(())
    }

    /// `kill -9` of one process.
    fn kill(&mut self, name: &str) -> Result<()> {
        let p = self
            .0
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or_else(|| format!("no process {name}"))?;
        p.child.kill().map_err(|e| format!("kill -9 {name}: {e}"))?;
        let _ = p.child.wait();
        Ok(())
    }

    fn forget(&mut self, name: &str) {
        self.0.retain(|p| p.name != name);
    }

    fn dump_logs(&self) {
        for p in &self.0 {
            let text = std::fs::read_to_string(&p.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!("--- {} (last lines of {})", p.name, p.log.display());
            for l in &lines[lines.len().saturating_sub(15)..] {
                eprintln!("{l}");
            }
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for p in &mut self.0 {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// Polls `f` every 50 ms until it holds or `limit` passes; the time it took.
fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if f() {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> Option<Resp> {
    request("GET", addr, path, headers, None, Duration::from_secs(15)).ok()
}

fn healthy(addr: &str) -> bool {
    get(addr, "/healthz", &[]).is_some_and(|r| r.status == 200)
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

/// One value from the run's database.
fn psql_value(sql: &str) -> Result<String> {
    let out = Command::new("psql")
        .args([
            &format!("{PG_SERVER}/{DATABASE}"),
            "-v",
            "ON_ERROR_STOP=1",
            "-qtAc",
            sql,
        ])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!("psql {sql}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

fn redis_cli(args: &[&str]) -> Result<String> {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .map_err(|e| format!("redis-cli: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// One license with its keys.
#[derive(Debug, Clone)]
struct License {
    id: String,
    master: String,
    api_key: String,
}

#[derive(Debug, Clone)]
struct Terminal {
    id: String,
    key: String,
}

/// The running deployment.
struct Cluster {
    dir: PathBuf,
    procs: Procs,
    env: Vec<(String, String)>,
    gw: [u16; 2],
    api: [u16; 2],
    mcp: [u16; 2],
    lb_rest: u16,
    lb_gateway: u16,
    lb_gateway_internal: u16,
    load: License,
    free: License,
    terminals: Vec<Terminal>,
    /// A terminal of its own for the key rotation (its agent is dropped then).
    rotated: Terminal,
}

impl Cluster {
    fn new(dir: &Path) -> Result<Self> {
        psql(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))?;
        psql(&format!("CREATE DATABASE {DATABASE}"))?;
        let (private, public) = keys(dir)?;
        let env: Vec<(String, String)> = [
            ("NODE_ENV", "production".to_owned()),
            ("DATABASE_URL", format!("{PG_SERVER}/{DATABASE}")),
            ("KEYVALUE_URL", REDIS_URL.to_owned()),
            ("JWT_PRIVATE_KEY_PATH", private),
            ("JWT_PUBLIC_KEY_PATH", public),
            ("GATEWAY_INTERNAL_TOKEN", INTERNAL_TOKEN.to_owned()),
            // TLS is the load balancer's in production (docs/deploy.md); plain on loopback here.
            ("AGENT_ALLOW_PLAIN_WS", "true".to_owned()),
            ("HEARTBEAT_INTERVAL_MS", HEARTBEAT_MS.0.to_string()),
            ("HEARTBEAT_TIMEOUT_MS", HEARTBEAT_MS.1.to_string()),
            ("API_RATE_LIMIT_WINDOW_MS", WINDOW_MS.to_string()),
            ("API_RATE_LIMIT_FREE", FREE_LIMIT.to_string()),
            ("API_RATE_LIMIT_ENTERPRISE", "1000000000".to_owned()),
            // Warnings, and the managed exits' claims (the takeover check reads them).
            ("RUST_LOG", "warn,tradeterm_tools::managed=info".to_owned()),
            // The load balancer (loopback) forwards the client's address.
            ("TRUSTED_PROXIES", "127.0.0.1".to_owned()),
            // Every client of this run is this one process on 127.0.0.1, and
            // the revocation check's refused keys are failures: the guessing
            // throttle (its own tests: crates/gateway/tests/limits.rs) would
            // then refuse the checks after it.
            ("AUTH_GUESS_THRESHOLD", "0".to_owned()),
            ("AUTH_GUESS_KEY_THRESHOLD", "0".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        Ok(Cluster {
            dir: dir.to_owned(),
            procs: Procs::default(),
            env,
            gw: [free_port()?, free_port()?],
            api: [free_port()?, free_port()?],
            mcp: [free_port()?, free_port()?],
            lb_rest: free_port()?,
            lb_gateway: free_port()?,
            lb_gateway_internal: free_port()?,
            load: License {
                id: String::new(),
                master: String::new(),
                api_key: String::new(),
            },
            free: License {
                id: String::new(),
                master: String::new(),
                api_key: String::new(),
            },
            terminals: Vec::new(),
            rotated: Terminal {
                id: String::new(),
                key: String::new(),
            },
        })
    }

    /// Licenses, keys and terminals; the servers, the load balancer and the agents.
    fn launch(&mut self, plan: Plan) -> Result<()> {
        let cluster = self;
        cluster.load = cluster.license("load", "enterprise")?;
        cluster.free = cluster.license("limits", "free")?;
        for i in 0..plan.terminals {
            let t = cluster.terminal(&cluster.load.id.clone(), &format!("sim-{i}"))?;
            cluster.terminals.push(t);
        }
        cluster.rotated = cluster.terminal(&cluster.load.id.clone(), "rotated")?;
        for i in 0..2 {
            cluster.start_gateway(i)?;
        }
        for i in 0..2 {
            cluster.start_api(i)?;
            cluster.start_mcp(i)?;
        }
        cluster.start_lb()?;
        let mut listeners: Vec<String> = Vec::new();
        listeners.extend(
            cluster
                .gw
                .iter()
                .chain(&cluster.api)
                .chain(&cluster.mcp)
                .map(|p| addr(*p)),
        );
        listeners.extend([cluster.lb_rest, cluster.lb_gateway, cluster.lb_gateway_internal].map(addr));
        for a in &listeners {
            wait_until(Duration::from_secs(60), || healthy(a)).ok_or_else(|| format!("{a} did not come up"))?;
        }
        // Sims one after another, so that the least-connections balancing spreads them.
        let sims: Vec<Terminal> = cluster.terminals.iter().chain([&cluster.rotated]).cloned().collect();
        for (i, t) in sims.iter().enumerate() {
            cluster.start_sim(i, t)?;
            wait_until(Duration::from_secs(20), || route(&t.id).is_some())
                .ok_or_else(|| format!("terminal {} did not connect", t.id))?;
        }
        Ok(())
    }

    fn admin(&self, args: &[&str]) -> Result<Value> {
        let mut cmd = Command::new(bin("tradeterm"));
        cmd.arg("admin").args(args).env_clear();
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd.output().map_err(|e| format!("tradeterm admin: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "tradeterm admin {}: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("tradeterm admin output: {e}"))
    }

    fn license(&self, name: &str, tier: &str) -> Result<License> {
        let l = self.admin(&["create-license", "--name", name, "--tier", tier])?;
        let id = l["license"]["id"].as_str().unwrap_or_default().to_owned();
        let k = self.admin(&["create-api-key", "--license", &id, "--label", "scale"])?;
        Ok(License {
            master: l["license_key"].as_str().unwrap_or_default().to_owned(),
            api_key: k["api_key"].as_str().unwrap_or_default().to_owned(),
            id,
        })
    }

    fn terminal(&self, license: &str, name: &str) -> Result<Terminal> {
        let t = self.admin(&["create-terminal", "--license", license, "--name", name])?;
        Ok(Terminal {
            id: t["terminal"]["id"].as_str().unwrap_or_default().to_owned(),
            key: t["terminal_key"].as_str().unwrap_or_default().to_owned(),
        })
    }

    fn server(&self, binary: &str) -> Command {
        let mut cmd = Command::new(bin(binary));
        cmd.env_clear();
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn start_gateway(&mut self, i: usize) -> Result<()> {
        let mut cmd = self.server("tradeterm-gateway");
        cmd.env("GATEWAY_PORT", self.gw[i].to_string())
            .env("GATEWAY_INSTANCE_ID", format!("gw{}", i + 1));
        let dir = self.dir.clone();
        self.procs.spawn(&dir, &format!("gw{}", i + 1), &mut cmd)
    }

    fn start_api(&mut self, i: usize) -> Result<()> {
        self.start_client_facing("tradeterm-api", "PORT", self.api[i], &format!("api{}", i + 1))
    }

    fn start_mcp(&mut self, i: usize) -> Result<()> {
        self.start_client_facing("tradeterm-mcp", "MCP_PORT", self.mcp[i], &format!("mcp{}", i + 1))
    }

    /// An API or MCP instance listening on `port` (its `port_var`),
    /// reaching the gateways through the load balancer's internal frontend.
    fn start_client_facing(&mut self, bin: &str, port_var: &str, port: u16, name: &str) -> Result<()> {
        let mut cmd = self.server(bin);
        cmd.env(port_var, port.to_string())
            .env("GATEWAY_URL", format!("http://{}", addr(self.lb_gateway_internal)));
        let dir = self.dir.clone();
        self.procs.spawn(&dir, name, &mut cmd)
    }

    fn start_lb(&mut self) -> Result<()> {
        let lb_mcp = free_port()?;
        let mut cmd = Command::new("haproxy");
        cmd.arg("-db")
            .arg("-f")
            .arg(workspace_root().join("deploy/haproxy.cfg"))
            .env("TT_LB_REST", addr(self.lb_rest))
            .env("TT_LB_MCP", addr(lb_mcp))
            .env("TT_LB_GATEWAY", addr(self.lb_gateway))
            .env("TT_LB_GATEWAY_INTERNAL", addr(self.lb_gateway_internal))
            .env("TT_API1", addr(self.api[0]))
            .env("TT_API2", addr(self.api[1]))
            .env("TT_MCP1", addr(self.mcp[0]))
            .env("TT_MCP2", addr(self.mcp[1]))
            .env("TT_GW1", addr(self.gw[0]))
            .env("TT_GW2", addr(self.gw[1]));
        let dir = self.dir.clone();
        self.procs.spawn(&dir, "haproxy", &mut cmd)
    }

    fn start_sim(&mut self, i: usize, t: &Terminal) -> Result<()> {
        let mut cmd = Command::new(bin("tradeterm-sim"));
        cmd.env_clear()
            .env("RUST_LOG", "warn")
            .env("TRADETERM_TERMINAL_KEY", &t.key)
            .arg("--gateway")
            .arg(format!("ws://{}/agent/v1", addr(self.lb_gateway)))
            .args(["--seed", &(i + 1).to_string(), "--allow-trading", "--always-open"])
            .args(["--login", &(9_100_000 + i).to_string()]);
        let dir = self.dir.clone();
        self.procs.spawn(&dir, &format!("sim{i}"), &mut cmd)
    }

    fn checks(&mut self, plan: Plan, report: &mut Report) -> Result<()> {
        self.spread(report);
        self.reachability(report, "every terminal reachable through every API and MCP instance")?;
        self.rate_limit(report)?;
        self.revocation(report)?;
        self.event_stream(report)?;
        self.managed_takeover(report)?;
        let load = Load::start(self);
        std::thread::sleep(plan.phase);
        self.failover(report, &load)?;
        self.redis_restart(report, &load, plan)?;
        self.postgres_restart(report, &load)?;
        let samples = load.stop();
        self.orders(report, &samples)?;
        Ok(())
    }

    /// Which gateway instance holds each terminal (the route table).
    fn holders(&self) -> BTreeMap<String, Vec<usize>> {
        let mut by: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, t) in self.terminals.iter().enumerate() {
            let holder = route(&t.id).unwrap_or_else(|| "none".into());
            by.entry(holder).or_default().push(i);
        }
        by
    }

    fn spread(&self, report: &mut Report) {
        let by = self.holders();
        let figures = by
            .iter()
            .map(|(g, ts)| format!("{g}: {}", ts.len()))
            .collect::<Vec<_>>()
            .join(", ");
        let ok = by.contains_key("gw1") && by.contains_key("gw2") && !by.contains_key("none");
        report.check(ok, "simulated agents spread over both gateways", figures);
    }

    fn tick(&self, api: u16, t: &Terminal) -> Option<Resp> {
        get(
            &addr(api),
            "/api/v1/market/tick/EURUSD",
            &[
                ("Authorization", &format!("Bearer {}", self.load.api_key)),
                ("X-Terminal-Id", &t.id),
            ],
        )
    }

    fn reachability(&self, report: &mut Report, what: &str) -> Result<()> {
        let mut ok = 0;
        let mut bad = Vec::new();
        for t in &self.terminals {
            for (n, port) in self.api.iter().enumerate() {
                match self.tick(*port, t) {
                    Some(r) if r.status == 200 => ok += 1,
                    r => bad.push(format!(
                        "{} via api{}: {:?}",
                        t.id,
                        n + 1,
                        r.map(|r| (r.status, r.code()))
                    )),
                }
            }
            for (n, port) in self.mcp.iter().enumerate() {
                match mcp_tick(&addr(*port), &t.key) {
                    Ok(()) => ok += 1,
                    Err(e) => bad.push(format!("{} via mcp{}: {e}", t.id, n + 1)),
                }
            }
        }
        let total = self.terminals.len() * 4;
        report.check(
            bad.is_empty(),
            what,
            format!(
                "{ok}/{total} (terminal, instance) pairs answered get_tick {}",
                bad.join(", ")
            ),
        );
        Ok(())
    }

    /// An event stream opened on the first API instance receives the fill
    /// of a live order placed through the second, for a terminal whose agent
    /// the second gateway holds (Redis Streams fan-out, docs/events.md).
    fn event_stream(&self, report: &mut Report) -> Result<()> {
        use std::io::{Read, Write};
        let by = self.holders();
        let Some(t) = by.get("gw2").and_then(|v| v.first()).map(|i| &self.terminals[*i]) else {
            report.check(
                false,
                "an event stream receives another gateway's agent events",
                "no terminal on gw2".into(),
            );
            return Ok(());
        };
        let auth = format!("Bearer {}", self.load.api_key);
        let stream_addr = addr(self.api[0]);
        let mut s = std::net::TcpStream::connect(&stream_addr).map_err(|e| format!("connect {stream_addr}: {e}"))?;
        let head = format!(
            "GET /api/v1/events?terminal_id={}&types=order.filled HTTP/1.1\r\nHost: {stream_addr}\r\nAuthorization: {auth}\r\n\r\n",
            t.id
        );
        s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_millis(200))).ok();
        let mut text = String::new();
        let read_until =
            |s: &mut std::net::TcpStream, text: &mut String, done: &dyn Fn(&str) -> bool, limit: Duration| {
                let deadline = Instant::now() + limit;
                let mut buf = [0u8; 8192];
                while Instant::now() < deadline && !done(text) {
                    match s.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
                        Err(_) => {}
                    }
                }
                done(text)
            };
        let opened = read_until(
            &mut s,
            &mut text,
            &|t: &str| t.contains("tradeterm event stream"),
            Duration::from_secs(10),
        );
        if !opened {
            report.check(
                false,
                "an event stream receives another gateway's agent events",
                format!("stream not opened: {text:?}"),
            );
            return Ok(());
        }
        let api2 = addr(self.api[1]);
        let body = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01, "dry_run": false }).to_string();
        let sent = Instant::now();
        let r = request(
            "POST",
            &api2,
            "/api/v1/orders",
            &[("Authorization", &auth), ("X-Terminal-Id", &t.id)],
            Some(&body),
            Duration::from_secs(30),
        )?;
        let order = r.json()["data"]["trade"]["order"].as_u64().unwrap_or(0);
        let needle = format!("\"order\":{order},");
        let got = order != 0
            && read_until(
                &mut s,
                &mut text,
                &|t: &str| t.contains(&needle),
                Duration::from_secs(10),
            );
        report.check(
            got,
            "an event stream on api1 receives the fill of an agent held by gw2 (order placed through api2)",
            if got {
                format!(
                    "order.filled of order {order} {:.0} ms after the order was sent",
                    sent.elapsed().as_secs_f64() * 1e3
                )
            } else {
                format!(
                    "order {order} ({} {}): stream received {:?}",
                    r.status,
                    r.code(),
                    text.chars().take(300).collect::<String>()
                )
            },
        );
        Ok(())
    }

    /// A live trailing stop set through the load balancer is evaluated by
    /// one API instance (its claim in PostgreSQL); `kill -9` of that
    /// instance hands the rule to the other within 10 s, and the rule's
    /// steps stay unique and in order (docs/managed-exits.md). The killed
    /// instance is started again.
    fn managed_takeover(&mut self, report: &mut Report) -> Result<()> {
        const WHAT: &str = "kill -9 of the API instance evaluating a trailing stop: the other takes it over within 10 s, takes the next step, no step repeated";
        let t = self.terminals[0].clone();
        let auth = format!("Bearer {}", self.load.api_key);
        let lb = addr(self.lb_rest);
        let headers = [("Authorization", auth.as_str()), ("X-Terminal-Id", t.id.as_str())];
        let post = |path: &str, body: Value| {
            request(
                "POST",
                &lb,
                path,
                &headers,
                Some(&body.to_string()),
                Duration::from_secs(30),
            )
        };
        let opened = post(
            "/api/v1/orders",
            json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01, "dry_run": false }),
        )?;
        let trade = &opened.json()["data"]["trade"];
        let ticket = trade["position"]
            .as_u64()
            .filter(|p| *p != 0)
            .or(trade["order"].as_u64())
            .unwrap_or(0);
        // Far enough behind the price never to be hit during the run, step 0:
        // the stop follows every new high of the simulated market.
        let set = post(
            "/api/v1/tools/set_trailing_stop",
            json!({ "ticket": ticket, "distance": { "unit": "points", "value": 2000 }, "dry_run": false }),
        )?;
        let id = set.json()["data"]["managed"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if ticket == 0 || id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            report.check(
                false,
                WHAT,
                format!("order {} / rule {} {}", opened.status, set.status, set.code()),
            );
            return Ok(());
        }
        let owner = |id: &str| {
            psql_value(&format!(
                "SELECT COALESCE(owner, '') FROM managed_orders WHERE id = '{id}'"
            ))
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut first = String::new();
        while Instant::now() < deadline && first.is_empty() {
            first = owner(&id)?;
            std::thread::sleep(Duration::from_millis(100));
        }
        // Which instance that is: the one whose log says it claimed the rule.
        let holder = (0..2).find(|i| {
            std::fs::read_to_string(self.dir.join(format!("api{}.log", i + 1)))
                .is_ok_and(|log| log.contains(&first) && log.contains(&id))
        });
        let Some(holder) = holder else {
            report.check(
                false,
                WHAT,
                format!("rule {id}: owner {first:?} found in no API instance's log"),
            );
            return Ok(());
        };
        let victim = format!("api{}", holder + 1);
        let steps_before = psql_value(&format!("SELECT state FROM managed_orders WHERE id = '{id}'"))?;
        self.procs.kill(&victim)?;
        let killed = Instant::now();
        let mut taken = None;
        while killed.elapsed() < Duration::from_secs(15) {
            let now = owner(&id)?;
            if !now.is_empty() && now != first {
                taken = Some((killed.elapsed(), now));
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let steps_of = |state: &str| -> Vec<u64> {
            let state: Value = serde_json::from_str(state).unwrap_or(Value::Null);
            state["log"]
                .as_array()
                .map(|l| l.iter().filter_map(|e| e["step"].as_u64()).collect())
                .unwrap_or_default()
        };
        let before = steps_of(&steps_before);
        // Let the new owner settle, then give it something to do: the stop
        // moved far down by hand, which the rule (it only ever raises a
        // long's stop to the price less the distance) must raise again,
        // once, as a step of its own after the takeover.
        std::thread::sleep(Duration::from_secs(3));
        let state_sql = format!("SELECT state FROM managed_orders WHERE id = '{id}'");
        let settled = steps_of(&psql_value(&state_sql)?);
        let open = trade["price"].as_f64().unwrap_or(0.0);
        let lowered = ((open - 0.05) * 100_000.0).round() / 100_000.0;
        let moved = post(
            &format!("/api/v1/positions/{ticket}/modify"),
            json!({ "stop_loss": lowered, "dry_run": false }),
        )?;
        let mut steps = settled.clone();
        let acted = Instant::now() + Duration::from_secs(10);
        while Instant::now() < acted && steps.len() <= settled.len() {
            std::thread::sleep(Duration::from_millis(200));
            steps = steps_of(&psql_value(&state_sql)?);
        }
        let new_owner = owner(&id)?;
        let ordered = !steps.is_empty() && steps.windows(2).all(|w| w[1] == w[0] + 1);
        let stepped_after = steps.len() > settled.len() && steps.len() > before.len();
        let status = psql_value(&format!("SELECT status FROM managed_orders WHERE id = '{id}'"))?;
        let ok = taken.as_ref().is_some_and(|(d, _)| *d < Duration::from_secs(10))
            && moved.status == 200
            && ordered
            && stepped_after
            && taken.as_ref().is_some_and(|(_, o)| *o == new_owner)
            && status == "active";
        report.check(
            ok,
            WHAT,
            format!(
                "rule {id} on {victim} ({first}); taken by {} after {}; steps before the kill {before:?}, \
                 after the takeover {settled:?}, after the stop was lowered by hand to {lowered} ({}) {steps:?} \
                 (owner {new_owner}); status {status}",
                taken.as_ref().map_or("nobody", |(_, o)| o.as_str()),
                taken
                    .as_ref()
                    .map_or("—".into(), |(d, _)| format!("{:.1} s", d.as_secs_f64())),
                moved.status
            ),
        );
        // Clean up, and bring the killed instance back for the next checks.
        self.procs.forget(&victim);
        self.start_api(holder)?;
        let back = Instant::now() + Duration::from_secs(30);
        while Instant::now() < back && !healthy(&addr(self.api[holder])) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = post("/api/v1/tools/remove_managed_order", json!({ "id": id }));
        let _ = post(
            &format!("/api/v1/positions/{ticket}/close"),
            json!({ "dry_run": false }),
        );
        Ok(())
    }

    fn rate_limit(&self, report: &mut Report) -> Result<()> {
        // Stay inside one window: start early in it.
        let now = now_ms();
        if now % WINDOW_MS > WINDOW_MS - 8_000 {
            std::thread::sleep(Duration::from_millis(WINDOW_MS - now % WINDOW_MS + 50));
        }
        let window = now_ms() / WINDOW_MS;
        let auth = format!("Bearer {}", self.free.api_key);
        let statuses = Arc::new(Mutex::new(Vec::new()));
        let sent = 3 * FREE_LIMIT as usize;
        std::thread::scope(|s| {
            for thread in 0..4usize {
                let (statuses, auth, api) = (statuses.clone(), auth.clone(), self.api);
                s.spawn(move || {
                    for i in (thread..sent).step_by(4) {
                        let port = api[i % 2];
                        let r = get(&addr(port), "/api/v1/tools", &[("Authorization", &auth)]);
                        let status = r.map(|r| r.status).unwrap_or(0);
                        if let Ok(mut v) = statuses.lock() {
                            v.push((i % 2, status));
                        }
                    }
                });
            }
        });
        let same_window = now_ms() / WINDOW_MS == window;
        let statuses = statuses.lock().map(|v| v.clone()).unwrap_or_default();
        let count = |inst: usize, status: u16| statuses.iter().filter(|(i, s)| *i == inst && *s == status).count();
        let ok200 = count(0, 200) + count(1, 200);
        let r429 = count(0, 429) + count(1, 429);
        report.check(
            same_window && ok200 as u64 == FREE_LIMIT && ok200 + r429 == sent,
            "combined rate limit exact across both API instances",
            format!(
                "Free tier, limit {FREE_LIMIT}/window: {sent} requests alternating api1/api2 → {ok200} × 200 \
                 (api1 {}, api2 {}), {r429} × 429",
                count(0, 200),
                count(1, 200)
            ),
        );
        Ok(())
    }

    fn revocation(&mut self, report: &mut Report) -> Result<()> {
        self.revoked_api_key(report)?;
        self.changed_scopes(report)?;
        self.rotated_terminal_key(report)?;
        // Its agent holds the old key: it is refused from now on.
        let n = self.terminals.len();
        self.procs.kill(&format!("sim{n}"))
    }

    /// Creates an API key through the gateway, uses it on both API instances
    /// (their exchange is then cached), revokes it through the gateway and
    /// times until each instance refuses it: the statuses before, the
    /// revocation's status, and the time to refusal per instance.
    fn revoke_and_time(&self) -> Result<(Vec<u16>, u16, Vec<Option<Duration>>)> {
        let lb = addr(self.lb_gateway);
        let master = format!("Bearer {}", self.load.master);
        let created = request(
            "POST",
            &lb,
            "/api/dashboard/api-keys",
            &[("Authorization", &master)],
            Some(r#"{"label":"to revoke"}"#),
            Duration::from_secs(10),
        )?;
        let v = created.json();
        let bearer = format!("Bearer {}", v["data"]["api_key"].as_str().unwrap_or_default());
        let id = v["data"]["key"]["id"].as_str().unwrap_or_default().to_owned();
        let status = |p: u16| get(&addr(p), "/api/v1/tools", &[("Authorization", &bearer)]).map_or(0, |r| r.status);
        let warm: Vec<u16> = self.api.iter().map(|p| status(*p)).collect();
        let t0 = Instant::now();
        let revoked = request(
            "DELETE",
            &lb,
            &format!("/api/dashboard/api-keys?id={id}"),
            &[("Authorization", &master)],
            None,
            Duration::from_secs(10),
        )?;
        let refused = self
            .api
            .iter()
            .map(|p| wait_until(Duration::from_secs(5), || status(*p) == 401).map(|_| t0.elapsed()))
            .collect();
        Ok((warm, revoked.status, refused))
    }

    /// An API key, warmed (cached exchange) on both API instances, revoked
    /// through the gateway: refused by both within 1 s.
    fn revoked_api_key(&self, report: &mut Report) -> Result<()> {
        let (warm, revoked, api_times) = self.revoke_and_time()?;
        let ok = warm == [200, 200] && revoked == 200 && api_times.iter().all(|t| within(*t, 1.0));
        report.check(
            ok,
            "revoked API key refused on every API instance within 1 s",
            format!("before {warm:?}; refused after {}", times(&api_times, "api")),
        );
        Ok(())
    }

    /// Scope changes in place through the gateway (`PATCH`), timed like a
    /// revocation: an API key scoped to EURUSD, warmed on both API instances
    /// (cached exchanges refusing GBPUSD), changed to GBPUSD: both answer
    /// GBPUSD within 1 s (and refuse EURUSD); the rotation terminal's key
    /// changed to EURUSD only: its MCP sessions on both MCP instances refuse
    /// GBPUSD, and its session token is refused on both API instances, within 1 s.
    fn changed_scopes(&self, report: &mut Report) -> Result<()> {
        let lb = addr(self.lb_gateway);
        let master = format!("Bearer {}", self.load.master);
        let Some(terminal) = self.terminals.first() else {
            return Err("no terminal for the scope check".into());
        };
        let created = request(
            "POST",
            &lb,
            "/api/dashboard/api-keys",
            &[("Authorization", &master)],
            Some(r#"{"label":"to rescope","scope":{"symbols":["EURUSD"]}}"#),
            Duration::from_secs(10),
        )?;
        let v = created.json();
        let bearer = format!("Bearer {}", v["data"]["api_key"].as_str().unwrap_or_default());
        let id = v["data"]["key"]["id"].as_str().unwrap_or_default().to_owned();
        let tick = |port: u16, symbol: &str| {
            get(
                &addr(port),
                &format!("/api/v1/market/tick/{symbol}"),
                &[("Authorization", &bearer), ("X-Terminal-Id", &terminal.id)],
            )
            .map_or(0, |r| r.status)
        };
        let warm: Vec<(u16, u16)> = self
            .api
            .iter()
            .map(|p| (tick(*p, "EURUSD"), tick(*p, "GBPUSD")))
            .collect();
        let t0 = Instant::now();
        let changed = request(
            "PATCH",
            &lb,
            &format!("/api/dashboard/api-keys/{id}"),
            &[("Authorization", &master)],
            Some(r#"{"scope":{"symbols":["GBPUSD"]}}"#),
            Duration::from_secs(10),
        )?;
        let api_times: Vec<Option<Duration>> = self
            .api
            .iter()
            .map(|p| wait_until(Duration::from_secs(5), || tick(*p, "GBPUSD") == 200).map(|_| t0.elapsed()))
            .collect();
        let after: Vec<u16> = self.api.iter().map(|p| tick(*p, "EURUSD")).collect();
        // The key is not needed any more (the license keeps at most 5).
        let _ = request(
            "DELETE",
            &lb,
            &format!("/api/dashboard/api-keys?id={id}"),
            &[("Authorization", &master)],
            None,
            Duration::from_secs(10),
        );
        let ok = warm == [(200, 403), (200, 403)]
            && changed.status == 200
            && after == [403, 403]
            && api_times.iter().all(|t| within(*t, 1.0));
        report.check(
            ok,
            "API key scope changed in place applies on every API instance within 1 s",
            format!(
                "before (EURUSD, GBPUSD) {warm:?}; GBPUSD answered after {}; EURUSD then {after:?}",
                times(&api_times, "api")
            ),
        );

        // The rotation terminal's key: MCP sessions and a session token.
        let key = &self.rotated.key;
        let token = request(
            "POST",
            &lb,
            "/api/token",
            &[("Authorization", &format!("Bearer {key}"))],
            None,
            Duration::from_secs(10),
        )?;
        let jwt = format!("Bearer {}", token.json()["token"].as_str().unwrap_or_default());
        let rest = |port: u16| get(&addr(port), "/api/v1/tools", &[("Authorization", &jwt)]).map_or(0, |r| r.status);
        let sessions: Vec<String> = self
            .mcp
            .iter()
            .map(|p| mcp_open(&addr(*p), key))
            .collect::<Result<_>>()?;
        // The MCP tool error's code for a GBPUSD quote ("" when it answered).
        let mcp_gbpusd = |i: usize| {
            mcp_rpc(
                &addr(self.mcp[i]),
                key,
                &sessions[i],
                "tools/call",
                json!({ "name": "get_tick", "arguments": { "symbol": "GBPUSD" } }),
            )
            .map_or_else(
                |e| e,
                |r| {
                    let v = r.json();
                    match v["result"]["isError"].as_bool() {
                        Some(true) => v["result"]["structuredContent"]["code"]
                            .as_str()
                            .unwrap_or("?")
                            .to_owned(),
                        _ if r.status == 200 => String::new(),
                        _ => format!("HTTP {}", r.status),
                    }
                },
            )
        };
        let warm_rest: Vec<u16> = self.api.iter().map(|p| rest(*p)).collect();
        let warm_mcp: Vec<String> = (0..2).map(mcp_gbpusd).collect();
        let t0 = Instant::now();
        let changed = request(
            "PATCH",
            &lb,
            &format!("/api/dashboard/terminals/{}/key", self.rotated.id),
            &[("Authorization", &master)],
            Some(r#"{"scope":{"symbols":["EURUSD"]}}"#),
            Duration::from_secs(10),
        )?;
        let mut all: Vec<Option<Duration>> = self
            .api
            .iter()
            .map(|p| wait_until(Duration::from_secs(5), || rest(*p) == 401).map(|_| t0.elapsed()))
            .collect();
        all.extend(
            (0..2).map(|i| wait_until(Duration::from_secs(5), || mcp_gbpusd(i) == "FORBIDDEN").map(|_| t0.elapsed())),
        );
        let ok = warm_rest == [200, 200]
            && warm_mcp.iter().all(String::is_empty)
            && changed.status == 200
            && all.iter().all(|t| within(*t, 1.0));
        report.check(
            ok,
            "terminal key scope changed in place applies on every instance within 1 s",
            format!(
                "before REST {warm_rest:?} MCP {warm_mcp:?}; old session token refused after {}; MCP sessions \
                 refuse GBPUSD after {}",
                times(&all[..2], "api"),
                times(&all[2..], "mcp")
            ),
        );
        Ok(())
    }

    /// A terminal key rotated through the gateway: its session token (both
    /// API instances) and the MCP sessions opened with it (both MCP
    /// instances) refused within 1 s.
    fn rotated_terminal_key(&self, report: &mut Report) -> Result<()> {
        let lb = addr(self.lb_gateway);
        let master = format!("Bearer {}", self.load.master);
        let tools = |port: u16, auth: &str| {
            get(&addr(port), "/api/v1/tools", &[("Authorization", auth)]).map_or(0, |r| r.status)
        };
        let token = request(
            "POST",
            &lb,
            "/api/token",
            &[("Authorization", &format!("Bearer {}", self.rotated.key))],
            None,
            Duration::from_secs(10),
        )?;
        let jwt = format!("Bearer {}", token.json()["token"].as_str().unwrap_or_default());
        let sessions: Vec<String> = self
            .mcp
            .iter()
            .map(|p| mcp_open(&addr(*p), &self.rotated.key))
            .collect::<Result<_>>()?;
        let mcp_list = |i: usize| {
            mcp_rpc(
                &addr(self.mcp[i]),
                &self.rotated.key,
                &sessions[i],
                "tools/list",
                json!({}),
            )
            .map_or(0, |r| r.status)
        };
        let warm_rest: Vec<u16> = self.api.iter().map(|p| tools(*p, &jwt)).collect();
        let warm_mcp: Vec<u16> = (0..2).map(mcp_list).collect();
        let t0 = Instant::now();
        let rotated = request(
            "POST",
            &lb,
            &format!("/api/dashboard/terminals/{}/rotate-key", self.rotated.id),
            &[("Authorization", &master)],
            None,
            Duration::from_secs(10),
        )?;
        let mut all: Vec<Option<Duration>> = self
            .api
            .iter()
            .map(|p| wait_until(Duration::from_secs(5), || tools(*p, &jwt) == 401).map(|_| t0.elapsed()))
            .collect();
        all.extend((0..2).map(|i| wait_until(Duration::from_secs(5), || mcp_list(i) == 401).map(|_| t0.elapsed())));
        let ok = warm_rest == [200, 200]
            && warm_mcp == [200, 200]
            && rotated.status == 200
            && all.iter().all(|t| within(*t, 1.0));
        report.check(
            ok,
            "rotated terminal key refused on every instance within 1 s",
            format!(
                "before REST {warm_rest:?} MCP {warm_mcp:?}; session token refused after {}; MCP sessions refused after {}",
                times(&all[..2], "api"),
                times(&all[2..], "mcp")
            ),
        );
        Ok(())
    }

    fn failover(&mut self, report: &mut Report, load: &Load) -> Result<()> {
        let by = self.holders();
        let (victim, affected) = by
            .iter()
            .filter(|(g, _)| g.starts_with("gw"))
            .max_by_key(|(_, ts)| ts.len())
            .map(|(g, ts)| (g.clone(), ts.clone()))
            .ok_or("no gateway holds a terminal")?;
        let survivor = if victim == "gw1" { "gw2" } else { "gw1" };
        let killed_at = load.now();
        let t0 = Instant::now();
        self.procs.kill(&victim)?;
        self.procs.forget(&victim);
        let mut back: Vec<Option<Duration>> = Vec::new();
        for i in &affected {
            let t = &self.terminals[*i];
            back.push(
                wait_until(Duration::from_secs(30), || {
                    self.api
                        .iter()
                        .all(|p| self.tick(*p, t).is_some_and(|r| r.status == 200))
                })
                .map(|_| t0.elapsed()),
            );
        }
        let moved = affected
            .iter()
            .all(|i| route(&self.terminals[*i].id).as_deref() == Some(survivor));
        let worst = back
            .iter()
            .map(|t| t.map_or(f64::INFINITY, |d| d.as_secs_f64()))
            .fold(0.0, f64::max);
        report.check(
            moved && back.iter().all(|t| within(*t, 15.0)),
            "kill -9 of a gateway: its agents reconnect to the other and are reachable within 15 s",
            format!(
                "killed {victim} holding {} terminals; all on {survivor} and answering through api1 and api2 after \
                 {worst:.2} s (each: {})",
                affected.len(),
                back.iter()
                    .map(|t| t.map_or("never".into(), |d| format!("{:.2}", d.as_secs_f64())))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        // Requests for those terminals sent after the kill and before they were back.
        let until = killed_at + worst.min(30.0);
        let samples = load.samples();
        let gap: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.kind == Kind::Tick && affected.contains(&s.terminal))
            .filter(|s| s.at >= killed_at && s.at <= until && s.status != 200)
            .collect();
        let mut codes: BTreeMap<String, usize> = BTreeMap::new();
        for s in &gap {
            *codes.entry(format!("{} {}", s.status, s.code)).or_default() += 1;
        }
        let slowest = gap.iter().map(|s| s.secs).fold(0.0, f64::max);
        let ok = gap.iter().all(|s| s.status == 502 && s.code == "DISPATCH_ERROR")
            && slowest < DISPATCH_TIMEOUT.as_secs_f64();
        report.check(
            ok,
            "requests in the gap answer 502 DISPATCH_ERROR before the dispatch timeout",
            format!(
                "{} failed requests for the moved terminals ({codes:?}), slowest {slowest:.3} s (timeout {} s)",
                gap.len(),
                DISPATCH_TIMEOUT.as_secs()
            ),
        );
        // The killed instance comes back and joins again.
        let i = if victim == "gw1" { 0 } else { 1 };
        self.start_gateway(i)?;
        let joined = wait_until(Duration::from_secs(30), || healthy(&addr(self.gw[i])));
        report.check(
            joined.is_some(),
            "the killed gateway restarts and rejoins",
            format!(
                "{victim} healthy again after {:.2} s",
                joined.map_or(f64::NAN, |d| d.as_secs_f64())
            ),
        );
        Ok(())
    }

    fn redis_restart(&mut self, report: &mut Report, load: &Load, plan: Plan) -> Result<()> {
        let down_at = load.now();
        redis_cli(&["shutdown", "nosave"])?;
        std::thread::sleep(plan.phase);
        let up_at = load.now();
        start_redis()?;
        let recovered = wait_until(Duration::from_secs(30), || {
            self.terminals.iter().all(|t| {
                self.api
                    .iter()
                    .all(|p| self.tick(*p, t).is_some_and(|r| r.status == 200))
            })
        });
        let samples = load.samples();
        let during = Summary::of(&samples, down_at, up_at);
        report.check(
            during.slowest < DISPATCH_TIMEOUT.as_secs_f64(),
            "Redis down under load: degraded, never hanging",
            format!("{:.0} s down: {}", plan.phase.as_secs_f64(), during.describe()),
        );
        // Revocation marks work again: a key revoked now is refused at once.
        let marks = self.revocation_after_recovery();
        report.check(
            recovered.is_some() && marks.is_ok(),
            "Redis restarted: full recovery without restarting tradeterm",
            format!(
                "every terminal through api1 and api2 {:.2} s after Redis was back; {}",
                recovered.map_or(f64::NAN, |d| d.as_secs_f64()),
                marks.unwrap_or_else(|e| e)
            ),
        );
        Ok(())
    }

    /// A new API key, used on both API instances, revoked through the gateway:
    /// refused by both within 1 s (the marks are back in Redis).
    fn revocation_after_recovery(&self) -> std::result::Result<String, String> {
        let (warm, _, all) = self.revoke_and_time()?;
        if warm.iter().any(|s| *s != 200) {
            return Err("a new API key did not work on both API instances".into());
        }
        if all.iter().all(|t| within(*t, 1.0)) {
            Ok(format!("a revoked key refused after {}", times(&all, "api")))
        } else {
            Err(format!("a revoked key refused after {}", times(&all, "api")))
        }
    }

    fn postgres_restart(&mut self, report: &mut Report, load: &Load) -> Result<()> {
        let version = std::fs::read_dir("/etc/postgresql")
            .map_err(|e| format!("/etc/postgresql: {e}"))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .next()
            .ok_or("no PostgreSQL cluster in /etc/postgresql")?;
        let down_at = load.now();
        run(Command::new("pg_ctlcluster").args(["--skip-systemctl-redirect", &version, "main", "restart"]))?;
        let up_at = load.now();
        let during = Summary::of(&load.samples(), down_at, up_at);
        let lb = addr(self.lb_gateway);
        let master = format!("Bearer {}", self.load.master);
        // The store answers again: a key created through the gateway now works on both API instances.
        let recovered = wait_until(Duration::from_secs(60), || {
            let Ok(created) = request(
                "POST",
                &lb,
                "/api/dashboard/api-keys",
                &[("Authorization", &master)],
                None,
                Duration::from_secs(10),
            ) else {
                return false;
            };
            let bearer = format!(
                "Bearer {}",
                created.json()["data"]["api_key"].as_str().unwrap_or_default()
            );
            created.status == 201
                && self.api.iter().all(|p| {
                    get(&addr(*p), "/api/v1/journal", &[("Authorization", &bearer)]).is_some_and(|r| r.status == 200)
                })
                && self.terminals.iter().all(|t| {
                    self.api
                        .iter()
                        .all(|p| self.tick(*p, t).is_some_and(|r| r.status == 200))
                })
        });
        report.check(
            recovered.is_some() && during.slowest < DISPATCH_TIMEOUT.as_secs_f64(),
            "PostgreSQL restarted under load: full recovery without restarting tradeterm",
            format!(
                "restart took {:.1} s ({}); store-backed requests (new API key, journal) and every terminal through \
                 api1 and api2 {:.2} s after",
                up_at - down_at,
                during.describe(),
                recovered.map_or(f64::NAN, |d| d.as_secs_f64())
            ),
        );
        Ok(())
    }

    /// Every acknowledged live order exactly once in its simulator's deal history; no order twice.
    fn orders(&self, report: &mut Report, samples: &[Sample]) -> Result<()> {
        let acked: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.kind == Kind::Order && s.status == 200)
            .collect();
        let given_up = samples
            .iter()
            .filter(|s| s.kind == Kind::Order && s.status != 200)
            .count();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for t in &self.terminals {
            let r = get(
                &addr(self.lb_rest),
                "/api/v1/history/deals",
                &[
                    ("Authorization", &format!("Bearer {}", self.load.api_key)),
                    ("X-Terminal-Id", &t.id),
                ],
            )
            .ok_or("deal history did not answer")?;
            if r.status != 200 {
                return Err(format!("deal history of {}: {} {}", t.id, r.status, r.body));
            }
            for d in r.json()["data"]["deals"].as_array().into_iter().flatten() {
                let comment = d["comment"].as_str().unwrap_or_default();
                if comment.starts_with(ORDER_PREFIX) {
                    *seen.entry(comment.to_owned()).or_default() += 1;
                }
            }
        }
        let lost = acked.iter().filter(|s| !seen.contains_key(&s.code)).count();
        let twice = seen.values().filter(|n| **n > 1).count();
        let retried = acked.iter().filter(|s| s.attempts > 1).count();
        report.check(
            !acked.is_empty() && lost == 0 && twice == 0,
            "no acknowledged live order lost or executed twice",
            format!(
                "{} orders acknowledged ({retried} after retries with the same Idempotency-Key), {} deals in the \
                 simulators' histories, {lost} lost, {twice} executed twice, {given_up} never acknowledged",
                acked.len(),
                seen.len()
            ),
        );
        Ok(())
    }
}

fn within(t: Option<Duration>, secs: f64) -> bool {
    t.is_some_and(|d| d.as_secs_f64() <= secs)
}

fn times(all: &[Option<Duration>], name: &str) -> String {
    all.iter()
        .enumerate()
        .map(|(i, t)| match t {
            Some(d) => format!("{name}{} {:.0} ms", i + 1, d.as_secs_f64() * 1000.0),
            None => format!("{name}{} never", i + 1),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// The gateway instance holding the terminal, from the route table.
fn route(terminal: &str) -> Option<String> {
    let raw = redis_cli(&["GET", &format!("tt:route:{terminal}")]).ok()?;
    let v: Value = serde_json::from_str(&raw).ok()?;
    v["instance"].as_str().map(str::to_owned)
}

/// Starts Redis with the machine's command line.
fn start_redis() -> Result<()> {
    run(Command::new("redis-server").args([
        "--daemonize",
        "yes",
        "--bind",
        "127.0.0.1",
        "-::1",
        "--port",
        "6379",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        "/var/lib/redis",
        "--logfile",
        "/var/log/redis/ci.log",
    ]))?;
    wait_until(Duration::from_secs(10), || {
        redis_cli(&["PING"]).is_ok_and(|p| p == "PONG")
    })
    .map(|_| ())
    .ok_or_else(|| "Redis did not come back".into())
}

/// MCP: `initialize` and `notifications/initialized`; the session id.
fn mcp_open(addr: &str, key: &str) -> Result<String> {
    let auth = format!("Bearer {key}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Accept", "application/json, text/event-stream"),
    ];
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": MCP_PROTOCOL, "capabilities": {}, "clientInfo": { "name": "xtask-scale", "version": "1" } },
    });
    let r = request(
        "POST",
        addr,
        "/mcp/v1",
        &headers,
        Some(&init.to_string()),
        Duration::from_secs(10),
    )?;
    let session = r
        .header("mcp-session-id")
        .ok_or_else(|| format!("initialize at {addr}: {} {}", r.status, r.body))?
        .to_owned();
    let mut h = headers.to_vec();
    h.push(("mcp-session-id", &session));
    h.push(("mcp-protocol-version", MCP_PROTOCOL));
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    request(
        "POST",
        addr,
        "/mcp/v1",
        &h,
        Some(&done.to_string()),
        Duration::from_secs(10),
    )?;
    Ok(session)
}

const MCP_PROTOCOL: &str = "2025-11-25";

fn mcp_rpc(addr: &str, key: &str, session: &str, method: &str, params: Value) -> Result<Resp> {
    let auth = format!("Bearer {key}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Accept", "application/json, text/event-stream"),
        ("mcp-session-id", session),
        ("mcp-protocol-version", MCP_PROTOCOL),
    ];
    let body = json!({ "jsonrpc": "2.0", "id": 2, "method": method, "params": params });
    request(
        "POST",
        addr,
        "/mcp/v1",
        &headers,
        Some(&body.to_string()),
        Duration::from_secs(15),
    )
}

/// `get_tick` through an MCP instance with the terminal's key.
fn mcp_tick(addr: &str, key: &str) -> Result<()> {
    let session = mcp_open(addr, key)?;
    let r = mcp_rpc(
        addr,
        key,
        &session,
        "tools/call",
        json!({ "name": "get_tick", "arguments": { "symbol": "EURUSD" } }),
    )?;
    let v = r.json();
    let result = &v["result"];
    if r.status == 200 && result["isError"] != true && result["structuredContent"]["bid"].is_number() {
        Ok(())
    } else {
        Err(format!("{} {}", r.status, r.body.chars().take(300).collect::<String>()))
    }
}

/// Comment and idempotency-key prefix of the scale test's live orders.
const ORDER_PREFIX: &str = "ttscale-";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tick,
    Order,
}

/// One request of the load.
#[derive(Debug, Clone)]
struct Sample {
    kind: Kind,
    terminal: usize,
    /// Seconds since the load started, when sent.
    at: f64,
    /// How long it took, s.
    secs: f64,
    /// HTTP status; 0 for a transport failure.
    status: u16,
    /// The error code (ticks), or the idempotency key (orders).
    code: String,
    /// The error message (ticks that failed).
    message: String,
    /// Attempts (orders: retries with the same key).
    attempts: u32,
}

/// Ticks and live orders through the load balancer's REST listener, in the
/// background, recorded.
struct Load {
    start: Instant,
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(cluster: &Cluster) -> Self {
        let start = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let lb = addr(cluster.lb_rest);
        let auth = format!("Bearer {}", cluster.load.api_key);
        let ids: Vec<String> = cluster.terminals.iter().map(|t| t.id.clone()).collect();
        let mut threads = Vec::new();
        for reader in 0..2usize {
            let (stop, samples, lb, auth, ids) = (stop.clone(), samples.clone(), lb.clone(), auth.clone(), ids.clone());
            threads.push(std::thread::spawn(move || {
                let mut n = reader;
                while !stop.load(Ordering::Relaxed) {
                    let terminal = n % ids.len();
                    n += 1;
                    let at = start.elapsed().as_secs_f64();
                    let r = request(
                        "GET",
                        &lb,
                        "/api/v1/market/tick/EURUSD",
                        &[("Authorization", &auth), ("X-Terminal-Id", &ids[terminal])],
                        None,
                        Duration::from_secs(30),
                    );
                    let sample = Sample {
                        kind: Kind::Tick,
                        terminal,
                        at,
                        secs: start.elapsed().as_secs_f64() - at,
                        status: r.as_ref().map_or(0, |r| r.status),
                        code: r.as_ref().map_or_else(|e| e.clone(), Resp::code),
                        message: r.map_or_else(
                            |e| e,
                            |r| r.json()["error"]["message"].as_str().unwrap_or_default().to_owned(),
                        ),
                        attempts: 1,
                    };
                    if let Ok(mut v) = samples.lock() {
                        v.push(sample);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }));
        }
        let seq = Arc::new(AtomicU64::new(0));
        let run = format!("{:x}", now_ms() % 0xff_ffff);
        let (stop2, samples2) = (stop.clone(), samples.clone());
        threads.push(std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let n = seq.fetch_add(1, Ordering::Relaxed);
                let terminal = n as usize % ids.len();
                let key = format!("{ORDER_PREFIX}{run}-{n}");
                let at = start.elapsed().as_secs_f64();
                let (status, attempts) = place_order(&lb, &auth, &ids[terminal], &key, &stop2);
                let sample = Sample {
                    kind: Kind::Order,
                    terminal,
                    at,
                    secs: start.elapsed().as_secs_f64() - at,
                    status,
                    code: key,
                    message: String::new(),
                    attempts,
                };
                if let Ok(mut v) = samples2.lock() {
                    v.push(sample);
                }
                std::thread::sleep(Duration::from_millis(150));
            }
        }));
        Load {
            start,
            stop,
            samples,
            threads,
        }
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn samples(&self) -> Vec<Sample> {
        self.samples.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn stop(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
        self.samples.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// A live market order with an idempotency key, retried with the same key
/// until acknowledged (200), refused for good (4xx other than 409) or 60 s
/// have passed; (final status, attempts).
fn place_order(lb: &str, auth: &str, terminal: &str, key: &str, stop: &AtomicBool) -> (u16, u32) {
    let body = json!({
        "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01, "dry_run": false, "comment": key,
    })
    .to_string();
    let started = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let r = request(
            "POST",
            lb,
            "/api/v1/orders",
            &[
                ("Authorization", auth),
                ("X-Terminal-Id", terminal),
                ("Idempotency-Key", key),
            ],
            Some(&body),
            Duration::from_secs(30),
        );
        let status = r.as_ref().map_or(0, |r| r.status);
        let retry = status == 0 || status == 409 || status >= 500;
        if !retry || started.elapsed() > Duration::from_secs(60) || (stop.load(Ordering::Relaxed) && attempts > 20) {
            if status != 200 {
                let detail = r.map_or_else(|e| e, |r| r.body);
                let _ = writeln!(std::io::stderr(), "scale: order {key}: {status} {detail}");
            }
            return (status, attempts);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// What the load saw in a time range.
struct Summary {
    total: usize,
    by_status: BTreeMap<String, usize>,
    /// One message per failing status and code.
    messages: BTreeMap<String, String>,
    slowest: f64,
}

impl Summary {
    fn of(samples: &[Sample], from: f64, to: f64) -> Self {
        let inside: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.kind == Kind::Tick && s.at >= from && s.at <= to)
            .collect();
        let mut by_status = BTreeMap::new();
        let mut messages = BTreeMap::new();
        for s in &inside {
            let key = if s.status == 200 {
                "200".to_owned()
            } else {
                messages
                    .entry(format!("{} {}", s.status, s.code))
                    .or_insert_with(|| s.message.clone());
                format!("{} {}", s.status, s.code)
            };
            *by_status.entry(key).or_default() += 1;
        }
        Summary {
            total: inside.len(),
            by_status,
            messages,
            slowest: inside.iter().map(|s| s.secs).fold(0.0, f64::max),
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} tick requests through the load balancer: {:?}, slowest {:.3} s{}",
            self.total,
            self.by_status,
            self.slowest,
            if self.messages.is_empty() {
                String::new()
            } else {
                format!(" ({:?})", self.messages)
            }
        )
    }
}

/// An RS256 key pair made with OpenSSL, as docs/deploy.md shows.
fn keys(dir: &Path) -> Result<(String, String)> {
    let private = dir.join("jwt-private.pem");
    let public = dir.join("jwt-public.pem");
    run(Command::new("openssl")
        .args([
            "genpkey",
            "-quiet",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&private))?;
    run(Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public))?;
    Ok((private.display().to_string(), public.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deploy_guide_shows_the_tested_haproxy_file() {
        let root = workspace_root();
        let cfg = std::fs::read_to_string(root.join("deploy/haproxy.cfg")).unwrap();
        let doc = std::fs::read_to_string(root.join("docs/deploy.md")).unwrap();
        let open = "<!-- haproxy.cfg:start -->\n```haproxy\n";
        let start = doc.find(open).expect("docs/deploy.md: haproxy.cfg:start marker") + open.len();
        let end = doc
            .find("```\n<!-- haproxy.cfg:end -->")
            .expect("docs/deploy.md: haproxy.cfg:end marker");
        assert_eq!(
            &doc[start..end],
            cfg,
            "docs/deploy.md must show deploy/haproxy.cfg as it is"
        );
    }

    #[test]
    fn summaries_count_statuses_in_their_range() {
        let sample = |at: f64, status: u16, code: &str| Sample {
            kind: Kind::Tick,
            terminal: 0,
            at,
            secs: 0.01 * at,
            status,
            code: code.into(),
            message: format!("{code} message"),
            attempts: 1,
        };
        let all = [
            sample(1.0, 200, ""),
            sample(2.0, 502, "DISPATCH_ERROR"),
            sample(3.0, 200, ""),
            sample(9.0, 502, "DISPATCH_ERROR"),
        ];
        let s = Summary::of(&all, 1.5, 3.5);
        assert_eq!(s.total, 2);
        assert_eq!(s.by_status.get("200"), Some(&1));
        assert_eq!(s.by_status.get("502 DISPATCH_ERROR"), Some(&1));
        assert!((s.slowest - 0.03).abs() < 1e-9);
        assert!(s.describe().contains("DISPATCH_ERROR message"));
    }
}
