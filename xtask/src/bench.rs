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
//!
//! Every run appends its figures with the commit to the table of recorded
//! runs in `docs/performance.md` (between [`RECORD_BEGIN`] and
//! [`RECORD_END`]) and prints its ratio against the last one recorded.
//!
//! `cargo xtask bench rest --quick` is the form CI runs after the tests: the
//! debug builds the tests just made, 2 s per load, the ratio printed for
//! information (never a pass or fail on time; a debug build's ratio is not
//! comparable with the release figures, and nothing is recorded).

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

/// Marks of the table of recorded runs in `docs/performance.md`.
pub(crate) const RECORD_BEGIN: &str = "<!-- bench-rest-runs:begin -->";
pub(crate) const RECORD_END: &str = "<!-- bench-rest-runs:end -->";

/// `cargo xtask bench rest [--quick]`.
pub fn rest(args: &[String]) -> Result<()> {
    let quick = match args {
        [] => false,
        [a] if a == "--quick" => true,
        _ => return Err("usage: cargo xtask bench rest [--quick]".into()),
    };
    if Command::new("wrk").arg("--version").output().is_err() {
        run(Command::new("apt-get").args(["install", "-y", "-qq", "wrk"]))?;
    }
    crate::ensure_services()?;
    let root = workspace_root();
    let mut build = cargo();
    build.current_dir(&root).arg("build");
    if quick {
        // The features the test suite built with: nothing to build again.
        build.arg("--all-features");
    } else {
        build.arg("--release");
    }
    run(build.args(["-p", "tradeterm", "--bin", "tradeterm", "--example", "bare_actix"]))?;
    let release = target_dir().join(if quick { "debug" } else { "release" });
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 2 } else { 10 });
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
    let builds = if quick { "debug" } else { "release" };
    println!("REST benchmark: wrk -t2 -c64 -d{seconds}s, {builds} builds, 2 workers each, same run");
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
    let ratio = full.rps / bare.rps;
    println!("saturated throughput ratio full/bare: {ratio:.3} (target >= 0.8)");
    println!(
        "p99 at 64 connections, each pausing {PACE_MS} ms between requests: full {:.3} ms, bare {:.3} ms, {:.2}x (target <= 1.2x)",
        full_paced.p99_ms,
        bare_paced.p99_ms,
        full_paced.p99_ms / bare_paced.p99_ms
    );
    drop(procs);
    let doc_path = root.join("docs/performance.md");
    let doc = std::fs::read_to_string(&doc_path).map_err(|e| format!("{}: {e}", doc_path.display()))?;
    match last_recorded(&doc) {
        Some(last) if quick => println!(
            "last recorded release run ({}, {}): ratio {:.3} (a debug build's ratio does not compare with it)",
            last.date, last.commit, last.ratio
        ),
        Some(last) => println!(
            "against the last recorded run ({}, {}): ratio {:.3} then, {ratio:.3} now ({:+.1} %)",
            last.date,
            last.commit,
            last.ratio,
            (ratio / last.ratio - 1.0) * 100.0
        ),
        None => println!("no run recorded yet in docs/performance.md"),
    }
    if quick {
        println!("(quick form: debug builds, {seconds} s per load; information only, not recorded)");
    } else {
        let row = format!(
            "| {} | {} | {:.0} | {:.0} | {ratio:.3} | {:.3} | {:.3} | {:.2} |",
            chrono_like_now(),
            commit(&root),
            full.rps,
            bare.rps,
            full_paced.p99_ms,
            bare_paced.p99_ms,
            full_paced.p99_ms / bare_paced.p99_ms
        );
        let updated = record(&doc, &row)
            .ok_or_else(|| format!("docs/performance.md has no table between {RECORD_BEGIN} and {RECORD_END}"))?;
        std::fs::write(&doc_path, updated).map_err(|e| format!("{}: {e}", doc_path.display()))?;
        println!("recorded in docs/performance.md: {row}");
    }
    let _ = std::fs::remove_dir_all(&data);
    let bad = full.non_2xx + full_paced.non_2xx;
    if bad > 0 {
        return Err(format!("{bad} full-path responses were not 2xx"));
    }
    Ok(())
}

/// One recorded run of the table in `docs/performance.md`.
#[derive(Debug, PartialEq)]
struct Recorded {
    date: String,
    commit: String,
    ratio: f64,
}

/// The last row of the table of recorded runs.
fn last_recorded(doc: &str) -> Option<Recorded> {
    let begin = doc.find(RECORD_BEGIN)?;
    let end = doc[begin..].find(RECORD_END)? + begin;
    doc[begin..end].lines().rev().find_map(|line| {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        let ratio = cells.get(4)?.parse::<f64>().ok()?;
        Some(Recorded {
            date: (*cells.first()?).to_owned(),
            commit: (*cells.get(1)?).to_owned(),
            ratio,
        })
    })
}

/// `doc` with `row` appended to the table of recorded runs; `None` without the table.
fn record(doc: &str, row: &str) -> Option<String> {
    let begin = doc.find(RECORD_BEGIN)?;
    let end = doc[begin..].find(RECORD_END)? + begin;
    let mut out = String::with_capacity(doc.len() + row.len() + 1);
    out.push_str(doc[..end].trim_end_matches('\n'));
    out.push('\n');
    out.push_str(row);
    out.push('\n');
    out.push_str(&doc[end..]);
    Some(out)
}

/// The commit measured: short hash, `+dirty` when the tree has changes.
fn commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let hash = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty { format!("{hash}+dirty") } else { hash }
}

/// The current UTC time as `YYYY-MM-DD HH:MM` (from `date`, no date crate in xtask).
fn chrono_like_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# P\n\n<!-- bench-rest-runs:begin -->\n| date | commit | full | bare | ratio | p99 full | p99 bare | x |\n|---|---|---|---|---|---|---|---|\n| 2026-12-02 20:13 | f46fc05 | 78669 | 207726 | 0.379 | 0.667 | 0.376 | 1.77 |\n<!-- bench-rest-runs:end -->\n\nafter\n";

    #[test]
    fn the_last_recorded_run_is_read_and_a_new_one_appended_in_the_table() {
        let last = last_recorded(DOC).unwrap();
        assert_eq!(
            last,
            Recorded {
                date: "2026-12-02 20:13".into(),
                commit: "f46fc05".into(),
                ratio: 0.379
            }
        );
        let row = "| 2026-12-02 21:00 | abc1234 | 90000 | 200000 | 0.450 | 0.6 | 0.4 | 1.50 |";
        let doc = record(DOC, row).unwrap();
        assert_eq!(last_recorded(&doc).unwrap().ratio, 0.45);
        assert!(doc.ends_with("<!-- bench-rest-runs:end -->\n\nafter\n"), "{doc}");
        assert_eq!(doc.matches("| f46fc05 |").count(), 1);
        // The header rows are never read as a run.
        let empty = "<!-- bench-rest-runs:begin -->\n| date | commit | full | bare | ratio |\n|---|\n<!-- bench-rest-runs:end -->";
        assert_eq!(last_recorded(empty), None);
        assert_eq!(record("no table", row), None);
    }
}
