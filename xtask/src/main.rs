//! `cargo xtask`: project automation, kept dependency-light (std + serde_json).
//!
//! - `cargo xtask test`: the whole test suite. Makes sure what the tests need
//!   is there (PostgreSQL and Redis on loopback are started if down; the
//!   Python packages of the reference and interoperability tests and of the
//!   Python agent are installed in the project's virtual environment,
//!   `.venv`; Chromium and the npm packages of the dashboard's browser tests,
//!   `browser`; the pinned MCP Inspector CLI in `tests/mcp-inspector`),
//!   checks the layering, then runs `cargo test --workspace` with that
//!   environment first on `PATH`, then the Python agent's pytest suite, then
//!   `cargo xtask scale --short`.
//! - `cargo xtask lint`: `cargo fmt --check`, clippy with `-D warnings`,
//!   `cargo deny check licenses bans sources` (installs cargo-deny if missing),
//!   `tradeterm-core` and `tradeterm-connect` built alone, and the layering check.
//! - `cargo xtask ci`: `lint`, then `test`.
//! - `cargo xtask layering`: only the layering check (crates and binaries).
//! - `cargo xtask venv`: creates or updates the Python virtual environment
//!   (`.venv`) the tests use.
//! - `cargo xtask browser`: installs what the dashboard's browser tests need
//!   (Debian's Chromium, the pinned npm packages of `crates/dashboard/e2e`);
//!   `cargo xtask test` does it too.
//! - `cargo xtask screenshots`: a PNG of every dashboard page, written by the
//!   browser test into `$CARGO_TARGET_DIR/dashboard-screenshots`.
//! - `cargo xtask inspector`: installs the pinned MCP Inspector CLI
//!   (`npm ci` in `tests/mcp-inspector`) the tests use.
//! - `cargo xtask scale [--short]`: the scaled-out deployment on loopback
//!   (two gateways, two API and two MCP instances behind HAProxy, simulated
//!   terminals in their own processes, the machine's PostgreSQL and Redis):
//!   reachability, the exact combined rate limit, revocation on every
//!   instance, `kill -9` of a gateway under load, Redis and PostgreSQL
//!   restarts (`xtask/src/scale.rs`). `cargo xtask test` runs `--short`.
//! - `cargo xtask bench rest [--quick]`: REST throughput/latency against a bare actix baseline,
//!   recorded in docs/performance.md (`--quick`: debug builds, information only; CI runs it).
//! - `cargo xtask bench analytics`: core indicators and structure against TA-Lib and smartmoneyconcepts.
//! - `cargo xtask bench events [--short]`: the event pipeline's latency (agent push to SSE client
//!   and to a webhook receiver, single node and split: gateway + API on Redis/PostgreSQL),
//!   fan-out to 1 000 subscribers and memory per idle subscriber.
//! - `cargo xtask bench scale [--short]`: agent connections one gateway holds,
//!   its memory per connection and dispatch latency with them connected.
//! - `cargo xtask bench sessions`: memory of 2 000 MCP sessions of one key,
//!   the 2 001st refused, memory after their idle expiry.

#![allow(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

mod bench;
mod bench_analytics;
mod bench_events;
mod bench_scale;
mod bench_sessions;
mod browser;
mod inspector;
mod layering;
mod python;
mod scale;

use std::net::{SocketAddr, TcpStream};
use std::process::{Command, ExitCode};
use std::time::Duration;

type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let result = match task {
        "test" => test(),
        "lint" => lint(),
        "ci" => lint().and_then(|()| test()),
        "layering" => layering::check(),
        "deny" => deny(),
        "venv" => python::ensure_test_packages(),
        "browser" => browser::ensure(),
        "screenshots" => browser::screenshots(),
        "inspector" => inspector::ensure(),
        "scale" => scale::scale(&args[1..]),
        "bench" => match args.get(1).map(String::as_str) {
            Some("rest") => bench::rest(&args[2..]),
            Some("analytics") => bench_analytics::analytics(),
            Some("scale") => bench_scale::scale(&args[2..]),
            Some("events") => bench_events::events(&args[2..]),
            Some("sessions") => bench_sessions::sessions(&args[2..]),
            _ => Err(
                "usage: cargo xtask bench <rest [--quick]|analytics|scale [--short]|events [--short]|sessions>".into(),
            ),
        },
        _ => {
            println!(
                "usage: cargo xtask <test|lint|ci|layering|deny|venv|browser|screenshots|inspector|scale [--short]|bench rest [--quick]|bench analytics|bench scale [--short]|bench events [--short]|bench sessions>"
            );
            return if task == "help" {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(cmd: &mut Command) -> Result<()> {
    println!("$ {cmd:?}");
    let status = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

fn workspace_root() -> std::path::PathBuf {
    // `cargo run` sets CARGO_MANIFEST_DIR for the process: the checkout being
    // worked on, even when a shared target directory holds an xtask built in
    // another checkout (cargo judges freshness by modification times only).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.parent().map(std::path::Path::to_path_buf).unwrap_or(manifest)
}

fn lint() -> Result<()> {
    let root = workspace_root();
    run(cargo().current_dir(&root).args(["fmt", "--all", "--", "--check"]))?;
    run(cargo()
        .current_dir(&root)
        .args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    deny()?;
    layering::core_alone()?;
    layering::check()
}

fn deny() -> Result<()> {
    let root = workspace_root();
    let have = cargo()
        .args(["deny", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have {
        run(cargo().args(["install", "--locked", "cargo-deny"]))?;
    }
    run(cargo()
        .current_dir(&root)
        .args(["deny", "check", "licenses", "bans", "sources"]))
}

fn reachable(addr: &str) -> bool {
    addr.parse::<SocketAddr>()
        .ok()
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_ok())
}

fn wait_reachable(addr: &str) -> bool {
    (0..100).any(|_| {
        if reachable(addr) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
        false
    })
}

/// Starts PostgreSQL and Redis on loopback when they are down, with the
/// commands this machine kind uses.
pub(crate) fn ensure_services() -> Result<()> {
    if !reachable("127.0.0.1:5432") {
        println!("PostgreSQL is down; starting it");
        let versions = std::fs::read_dir("/etc/postgresql")
            .map_err(|e| format!("PostgreSQL is not reachable on 127.0.0.1:5432 and not installed here: {e}"))?;
        for v in versions.flatten() {
            let _ = run(Command::new("pg_ctlcluster").args([
                "--skip-systemctl-redirect",
                &v.file_name().to_string_lossy(),
                "main",
                "start",
            ]));
        }
        if !wait_reachable("127.0.0.1:5432") {
            return Err("PostgreSQL did not come up on 127.0.0.1:5432".into());
        }
    }
    if !reachable("127.0.0.1:6379") {
        println!("Redis is down; starting it");
        run(Command::new("redis-server").args([
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
        ]))?;
        if !wait_reachable("127.0.0.1:6379") {
            return Err("Redis did not come up on 127.0.0.1:6379".into());
        }
    }
    Ok(())
}

/// Installs the system packages the MetaTrader agents' harness needs (g++
/// and OpenSSL's headers, `bins/tradeterm/tests/external/mql_agents.rs`) from
/// Debian's packages when they are missing; as root only (CI and the
/// sessions' machines run as root), otherwise the test says what to install.
fn ensure_build_tools() -> Result<()> {
    let have_gxx = Command::new("g++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let have_ssl = std::path::Path::new("/usr/include/openssl/ssl.h").is_file();
    if have_gxx && have_ssl {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0"));
    if !root {
        println!(
            "g++ or libssl-dev is missing and this is not root: the MetaTrader harness test will say what to install"
        );
        return Ok(());
    }
    println!("installing g++ and libssl-dev for the MetaTrader agents' harness");
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends", "g++", "libssl-dev"])
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

pub(crate) fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn test() -> Result<()> {
    ensure_services()?;
    ensure_build_tools()?;
    python::ensure_test_packages()?;
    browser::ensure()?;
    inspector::ensure()?;
    layering::check()?;
    let root = workspace_root();
    // The Rust suite first (it builds the binaries the Python suite drives);
    // both run, and either failing fails the whole.
    let rust = run(cargo()
        .current_dir(&root)
        .args(["test", "--workspace", "--all-features", "--no-fail-fast"])
        .env("PATH", python::path_env())
        .env("CI", "true"));
    let agents = python::agent_tests(&target_dir().join("debug"));
    // The scaled-out deployment, short form: never skipped (it restarts the
    // machine's Redis and PostgreSQL, so it runs alone, after the rest).
    let scale = scale::scale(&["--short".to_owned(), "--after-tests".to_owned()]);
    // The REST benchmark's quick form, for information: its ratio is
    // printed, never judged, and a failure to run it fails nothing.
    if let Err(e) = bench::rest(&["--quick".to_owned()]) {
        println!("bench rest --quick did not run: {e}");
    }
    let failures: Vec<String> = [rust, agents, scale].into_iter().filter_map(|r| r.err()).collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}
