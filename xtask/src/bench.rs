//! `cargo xtask bench rest`: throughput and latency of
//! `GET /api/v1/market/tick/EURUSD` through API-key auth, the Redis rate
//! limit and dispatch to a simulated terminal, beside a bare actix JSON
//! handler measured in the same run with the same load generator (wrk,
//! installed from Debian's packages if missing).
//!
//! Both servers run release builds with two workers; wrk runs 2 threads and
//! 64 connections for `BENCH_SECONDS` (default 10) after a 2 s warm-up, twice
//! per server: saturated (every connection sends its next request as soon as
//! the answer arrives: throughput) and paced (every connection pauses
//! [`PACE_MS`] between requests, about 6 000 requests/s in all: latency
//! without the queue of a saturated 2-core machine). The ratio of the two
//! servers is the figure to report: the machine is shared and noisy, absolute
//! numbers are not comparable between runs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Result, cargo, run, workspace_root};

/// Child processes killed (and reaped) when dropped.
pub(crate) struct Killer(pub(crate) Vec<Child>);

impl Drop for Killer {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub(crate) fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

pub(crate) fn http_ok(url: &str, headers: &[(&str, &str)]) -> bool {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", url]);
    for (k, v) in headers {
        cmd.arg("-H").arg(format!("{k}: {v}"));
    }
    cmd.output().map(|o| o.stdout == b"200").unwrap_or(false)
}

pub(crate) fn wait_for(what: &str, f: impl Fn() -> bool) -> Result<()> {
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        if f() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("{what} did not become ready"))
}

/// Parsed wrk results.
#[derive(Debug, Clone, Copy)]
struct Load {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    non_2xx: u64,
}

fn parse_duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, mult) = if let Some(v) = s.strip_suffix("us") {
        (v, 0.001)
    } else if let Some(v) = s.strip_suffix("ms") {
        (v, 1.0)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1000.0)
    } else {
        (s, 1.0)
    };
    num.trim().parse::<f64>().ok().map(|n| n * mult)
}

/// Pause of each connection between two requests in the paced run, ms: 64
/// connections then offer about 64 × 1000 / (10 + latency) ≈ 6 000 requests/s,
/// well below either server's capacity, so the percentiles measure the time a
/// request takes rather than the queue in front of a saturated machine.
const PACE_MS: u64 = 10;

/// Writes the wrk script that makes every connection wait `PACE_MS` between requests.
fn pace_script() -> Result<PathBuf> {
    let path = std::env::temp_dir().join(format!("tradeterm-bench-pace-{}.lua", std::process::id()));
    std::fs::write(&path, format!("function delay()\n  return {PACE_MS}\nend\n")).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Runs wrk with 2 threads and 64 connections; `script` paces the connections.
fn wrk(url: &str, headers: &[(&str, &str)], seconds: u64, script: Option<&Path>) -> Result<Load> {
    let mut args = vec![
        "-t2".to_owned(),
        "-c64".to_owned(),
        format!("-d{seconds}s"),
        "--latency".to_owned(),
    ];
    if let Some(s) = script {
        args.push("-s".into());
        args.push(s.display().to_string());
    }
    for (k, v) in headers {
        args.push("-H".into());
        args.push(format!("{k}: {v}"));
    }
    args.push(url.to_owned());
    // Warm-up.
    let mut warm = args.clone();
    warm[2] = "-d2s".into();
    let _ = Command::new("wrk").args(&warm).output();
    let out = Command::new("wrk")
        .args(&args)
        .output()
        .map_err(|e| format!("wrk: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut load = Load {
        rps: 0.0,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        non_2xx: 0,
    };
    for line in text.lines() {
        let l = line.trim();
        if let Some(v) = l.strip_prefix("Requests/sec:") {
            load.rps = v.trim().parse().unwrap_or(0.0);
        } else if let Some(v) = l.strip_prefix("50%") {
            load.p50_ms = parse_duration_ms(v).unwrap_or(f64::NAN);
        } else if let Some(v) = l.strip_prefix("99%") {
            load.p99_ms = parse_duration_ms(v).unwrap_or(f64::NAN);
        } else if let Some(v) = l.strip_prefix("Non-2xx or 3xx responses:") {
            load.non_2xx = v.trim().parse().unwrap_or(0);
        }
    }
    if load.rps == 0.0 {
        return Err(format!("could not parse wrk output:\n{text}"));
    }
    Ok(load)
}

pub fn rest() -> Result<()> {
    if Command::new("wrk").arg("--version").output().is_err() {
        run(Command::new("apt-get").args(["install", "-y", "-qq", "wrk"]))?;
    }
    crate::ensure_services()?;
    let root = workspace_root();
    run(cargo().current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "tradeterm",
        "--bin",
        "tradeterm",
        "--example",
        "bare_actix",
    ]))?;
    let release = target_dir().join("release");
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let data = std::env::temp_dir().join(format!("tradeterm-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);

    let (bare_port, rest_port, gw_port, mcp_port) = (free_port()?, free_port()?, free_port()?, free_port()?);
    let mut procs = Killer(Vec::new());
    procs.0.push(
        Command::new(release.join("examples/bare_actix"))
            .arg(bare_port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("bare_actix: {e}"))?,
    );
    procs.0.push(
        Command::new(release.join("tradeterm"))
            .args([
                "serve",
                "--sim-terminals",
                "1",
                "--sim-start",
                "2026-11-18T12:00:00Z",
                "--data-dir",
            ])
            .arg(&data)
            .env("PORT", rest_port.to_string())
            .env("GATEWAY_PORT", gw_port.to_string())
            .env("MCP_PORT", mcp_port.to_string())
            .env("KEYVALUE_URL", "redis://127.0.0.1:6379")
            .env("API_RATE_LIMIT_PRO", "1000000000")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("tradeterm serve: {e}"))?,
    );
    let bare_url = format!("http://127.0.0.1:{bare_port}/bare");
    wait_for("bare server", || http_ok(&bare_url, &[]))?;
    let creds_path = data.join("demo-credentials.json");
    wait_for("demo credentials", || Path::new(&creds_path).is_file())?;
    let creds: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&creds_path).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let key = creds["api_key"].as_str().unwrap_or_default().to_owned();
    let terminal = creds["terminals"][0]["id"].as_str().unwrap_or_default().to_owned();
    let auth = format!("Bearer {key}");
    let headers = [("Authorization", auth.as_str()), ("X-Terminal-Id", terminal.as_str())];
    let full_url = format!("http://127.0.0.1:{rest_port}/api/v1/market/tick/EURUSD");
    wait_for("REST tick through the simulator", || http_ok(&full_url, &headers))?;

    let pace = pace_script()?;
    // Interleaved, so that a change in the machine's load hits both sides.
    let bare = wrk(&bare_url, &[], seconds, None)?;
    let full = wrk(&full_url, &headers, seconds, None)?;
    let bare_paced = wrk(&bare_url, &[], seconds, Some(&pace))?;
    let full_paced = wrk(&full_url, &headers, seconds, Some(&pace))?;
    let _ = std::fs::remove_file(&pace);
    println!();
    println!("REST benchmark: wrk -t2 -c64 -d{seconds}s, release builds, 2 workers each, same run");
    println!(
        "{:<44} {:<10} {:>12} {:>10} {:>10} {:>8}",
        "path", "load", "requests/s", "p50 ms", "p99 ms", "non-2xx"
    );
    let paced = format!("paced {PACE_MS}ms");
    for (name, load, l) in [
        ("bare actix JSON handler (baseline)", "saturated", bare),
        ("GET /api/v1/market/tick/EURUSD (full path)", "saturated", full),
        ("bare actix JSON handler (baseline)", paced.as_str(), bare_paced),
        ("GET /api/v1/market/tick/EURUSD (full path)", paced.as_str(), full_paced),
    ] {
        println!(
            "{:<44} {:<10} {:>12.0} {:>10.3} {:>10.3} {:>8}",
            name, load, l.rps, l.p50_ms, l.p99_ms, l.non_2xx
        );
    }
    println!(
        "saturated throughput ratio full/bare: {:.3} (target >= 0.5)",
        full.rps / bare.rps
    );
    println!(
        "p99 at 64 connections, each pausing {PACE_MS} ms between requests: full {:.3} ms, bare {:.3} ms (target: full < 2 ms)",
        full_paced.p99_ms, bare_paced.p99_ms
    );
    drop(procs);
    let _ = std::fs::remove_dir_all(&data);
    let bad = full.non_2xx + full_paced.non_2xx;
    if bad > 0 {
        return Err(format!("{bad} full-path responses were not 2xx"));
    }
    Ok(())
}
