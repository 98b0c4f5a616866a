//! Start-up checks of the split-deployment binaries (`tradeterm-gateway`,
//! `tradeterm-api`, `tradeterm-mcp`), shared by their `start` test binaries
//! (`#[path]`-included, as each package can only run its own binary):
//! production refuses to start without its settings, naming them all in one
//! message, and starts with them on the machine's PostgreSQL and Redis.

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The machine's PostgreSQL server (trust authentication on loopback).
pub const PG_SERVER: &str = "postgres://postgres@127.0.0.1:5432";
/// The machine's Redis.
pub const REDIS_URL: &str = "redis://127.0.0.1:6379";
/// The database of the positive starts (created if missing).
pub const START_DATABASE: &str = "tt_start_test";

/// Runs `bin` with only `env` set and returns what it did.
pub fn run(bin: &str, env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(bin);
    cmd.env_clear().env("RUST_LOG", "warn");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null()).output().expect("running the binary")
}

/// Runs `bin` with `env`, asserts that it refused to start (exit status 1)
/// and returns its stderr.
pub fn refused(bin: &str, env: &[(&str, String)]) -> String {
    let out = run(bin, env);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "expected a refusal; stderr: {stderr}");
    assert!(stderr.contains("refuses to start"), "{stderr}");
    stderr
}

/// Asserts that `stderr` names every one of `settings`.
pub fn names_all(stderr: &str, settings: &[&str]) {
    for s in settings {
        assert!(stderr.contains(s), "{s} is not named in: {stderr}");
    }
}

/// A development RS256 key pair under `dir/keys` (private, public).
pub fn key_pair(dir: &Path) -> (String, String) {
    let paths = tradeterm_boot::keys::resolve(&tradeterm_boot::Settings::default(), dir).expect("generating keys");
    (paths.private.display().to_string(), paths.public.display().to_string())
}

/// Creates [`START_DATABASE`] on the machine's PostgreSQL unless it exists
/// (with `psql`; a concurrent creation is fine) and returns its URL.
pub fn start_database() -> String {
    let out = Command::new("psql")
        .args([&format!("{PG_SERVER}/test"), "-v", "ON_ERROR_STOP=1", "-qtAc"])
        .arg(format!("CREATE DATABASE {START_DATABASE}"))
        .output()
        .expect("psql (PostgreSQL's client) is needed to create the test database");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || stderr.contains("already exists"),
        "creating {START_DATABASE}: {stderr}"
    );
    format!("{PG_SERVER}/{START_DATABASE}")
}

/// Every production setting of a split binary, on the machine's PostgreSQL
/// and Redis, with a key pair in `dir`.
pub fn production_env(dir: &Path) -> Vec<(&'static str, String)> {
    let (private, public) = key_pair(dir);
    vec![
        ("NODE_ENV", "production".into()),
        ("DATABASE_URL", start_database()),
        ("KEYVALUE_URL", REDIS_URL.into()),
        ("JWT_PRIVATE_KEY_PATH", private),
        ("JWT_PUBLIC_KEY_PATH", public),
        ("GATEWAY_INTERNAL_TOKEN", "start-test-internal-token".into()),
        ("AGENT_ALLOW_PLAIN_WS", "true".into()),
    ]
}

/// `env` without `name`.
pub fn without(env: &[(&'static str, String)], name: &str) -> Vec<(&'static str, String)> {
    env.iter().filter(|(k, _)| *k != name).cloned().collect()
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The HTTP status of `GET path` on the loopback port, if it answers.
pub fn status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// A started binary, killed when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        // It may have exited already: nothing to report then.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `bin` with `env` and waits (at most 30 s) until `GET /healthz` on
/// `port` answers 200; fails with its stderr if it exits first.
pub fn start_healthy(bin: &str, env: &[(&str, String)], port: u16) -> Running {
    let mut cmd = Command::new(bin);
    cmd.env_clear().env("RUST_LOG", "warn");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = Running(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the binary"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(exit)) = child.0.try_wait() {
            let mut stderr = String::new();
            if let Some(mut e) = child.0.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            panic!("{bin} exited ({exit}) instead of starting: {stderr}");
        }
        if status(port, "/healthz") == Some(200) {
            return child;
        }
        assert!(Instant::now() < deadline, "{bin} did not answer /healthz within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Each of `names`, alone missing from a complete production environment,
/// is refused and named.
pub fn each_missing_is_named(bin: &str, names: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let complete = production_env(dir.path());
    for name in names {
        let stderr = refused(bin, &without(&complete, name));
        assert!(stderr.contains(&format!("{name} is missing")), "{stderr}");
    }
}

/// In development without `DATABASE_URL`, `bin` refuses to start and
/// writes nothing into its data directory (no private SQLite file).
pub fn writes_no_private_sqlite(bin: &str) {
    let dir = tempfile::tempdir().unwrap();
    let stderr = refused(bin, &[("TRADETERM_DATA_DIR", dir.path().display().to_string())]);
    assert!(stderr.contains("DATABASE_URL is missing"), "{stderr}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing was written"
    );
}
