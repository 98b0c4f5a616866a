//! The stdio connector against the real stack: the official MCP Python SDK
//! drives the connector (interoperability: the tools, and the MCP resources
//! with their subscription, also over the SDK's own HTTP client), and a raw
//! JSON-RPC client checks that the connector survives a restarted or briefly
//! unreachable server.
//!
//! The connector runs as `tradeterm connect` (the same arguments and relay
//! as the `tradeterm-connect` binary, whose package links no store and so
//! holds no stack test), through a one-line wrapper script that gives the
//! Python SDK a single command path.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tradeterm_mcp::{McpHandle, McpServer, McpState};

use crate::harness::{Options, spawn, wait_until};

/// A command that runs `tradeterm connect` with the arguments it is given.
pub(crate) fn connector() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tradeterm-connect-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tradeterm-connect");
        let script = format!("#!/bin/sh\nexec '{}' connect \"$@\"\n", env!("CARGO_BIN_EXE_tradeterm"));
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_str().unwrap().to_owned()
    })
}

pub(crate) fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `mcp` Python package must be installed: this test never skips.
/// Runs an interop script (off the async workers) and returns the JSON
/// summary on its last line of output; fails the test with both streams if
/// the script failed.
pub(crate) async fn interop_summary(mut cmd: Command) -> Value {
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("running python3"))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "interop script failed:\nstdout: {stdout}\nstderr: {stderr}"
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("summary line: {e}: {stdout}"))
}

pub(crate) fn require_python_mcp() {
    let probe = Command::new("python3").args(["-c", "import mcp"]).output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "the MCP Python SDK is not installed ({}): run `pip install -r scripts/requirements-test.txt` \
             (cargo xtask test does this)",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("python3 is required for the MCP interoperability test: {e}"),
    }
}

/// The official MCP Python SDK (`scripts/interop/mcp_connect.py`): tools,
/// charts, paper mode and tool groups through the connector; then the MCP
/// resources of the key's terminal through the connector and over the SDK's
/// own streamable HTTP client (list, read each, subscribe to the positions,
/// a live order, `notifications/resources/updated` within 30 s,
/// unsubscribe, the position closed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_drives_the_connector_against_a_simulated_terminal() {
    require_python_mcp();
    // Trading allowed: the resource check places (and closes) a live order.
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let url = format!("http://127.0.0.1:{}/mcp/v1", t.stack.mcp_port);
    let expected_tools = tradeterm_mcp::mcp_tools().len();
    let key = t.creds.terminals[0].key.clone();
    let terminal = t.terminal(0).to_owned();
    let deals_before = t.stack.simulators()[0].deals().len();
    let script = repo_root().join("scripts/interop/mcp_connect.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .args([
            "--connector",
            connector(),
            "--url",
            &url,
            "--expect-tools",
            &expected_tools.to_string(),
            "--terminal-id",
            &terminal,
        ])
        .env("TRADETERM_TERMINAL_KEY", key);
    let summary = interop_summary(cmd).await;
    assert_eq!(summary["server"], "tradeterm");
    assert_eq!(summary["tools"], json!(expected_tools));
    assert!(
        summary["bid"].as_f64().unwrap() < summary["ask"].as_f64().unwrap(),
        "{summary}"
    );
    assert_eq!(summary["paper_order_dry_run"], true);
    for via in ["connector", "http"] {
        let r = &summary["resources"][via];
        assert_eq!(r["terminal"], json!(terminal), "{via}: {summary}");
        assert_eq!(r["resources"], 5, "{via}: {summary}");
        assert_eq!(
            r["notified"],
            json!(format!("tradeterm://terminals/{terminal}/positions")),
            "{via}: {summary}"
        );
        assert!(r["position"].as_u64().is_some_and(|p| p > 0), "{via}: {summary}");
    }
    // Each of the two live orders opened a position and closed it on the account.
    assert_eq!(
        t.stack.simulators()[0].deals().len(),
        deals_before + 4,
        "two live orders, each opened and closed: {summary}"
    );
    t.stack.stop().await;
}

/// A connector process spoken to with newline-delimited JSON-RPC.
struct Connector {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    log: tempfile::NamedTempFile,
}

impl Connector {
    fn start(url: &str, key: &str) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(connector())
            .args(["--url", url, "--reconnect-secs", "20"])
            .env("TRADETERM_TERMINAL_KEY", key)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log.reopen().unwrap()))
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and waits for the answer with the same id (notifications are skipped).
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method} (id {id}); connector log:\n{}", self.log()));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
            assert!(
                v.get("id").is_none() || v.get("method").is_some(),
                "unexpected answer {v}"
            );
        }
    }

    fn tool(&mut self, id: u64, name: &str, args: Value) -> Value {
        let v = self.request(id, "tools/call", json!({ "name": name, "arguments": args }));
        assert!(v.get("error").is_none(), "{name}: {v}\nconnector log:\n{}", self.log());
        assert_ne!(v["result"]["isError"], true, "{name}: {v}");
        v["result"]["structuredContent"].clone()
    }
}

/// Serves MCP for the stack on `port` (0: any) until the returned handle stops it.
async fn serve_mcp(state: &McpState, port: u16) -> (u16, McpHandle, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = wait_until(
        &format!("127.0.0.1:{port} to be free"),
        Duration::from_secs(10),
        || async { TcpListener::bind(("127.0.0.1", port)).ok() },
    )
    .await;
    let server = McpServer::build(state.clone(), listener).unwrap();
    let port = server.port();
    let handle = server.handle();
    (port, handle, tokio::spawn(server.run_until_stopped()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connector_reinitialises_transparently_after_the_server_restarts() {
    // Trading allowed on the terminal: a live order would really execute.
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let deals_before = t.stack.simulators()[0].deals().len();
    let state = t.stack.mcp_state.clone();
    let (port, handle, task) = serve_mcp(&state, 0).await;
    let url = format!("http://127.0.0.1:{port}/mcp/v1");
    let key = t.creds.terminals[0].key.clone();

    let mut c = tokio::task::spawn_blocking(move || {
        let mut c = Connector::start(&url, &key);
        let init = c.request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "tradeterm", "{init}");
        c.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        assert_eq!(c.tool(2, "set_mode", json!({ "mode": "paper" }))["mode"], "paper");
        let tick = c.tool(3, "get_tick", json!({ "symbol": "EURUSD" }));
        assert!(tick["bid"].as_f64().unwrap() < tick["ask"].as_f64().unwrap());
        c
    })
    .await
    .unwrap();

    // 1. The server restarts (its sessions are gone): the next call re-initialises
    //    a new upstream session, restores paper mode before relaying anything,
    //    and is answered.
    handle.stop();
    task.await.unwrap().unwrap();
    let (_, handle, task) = serve_mcp(&state, port).await;
    c = tokio::task::spawn_blocking(move || {
        let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01, "dry_run": false });
        assert_eq!(
            c.tool(40, "place_order", order)["dry_run"],
            true,
            "paper mode is restored first"
        );
        assert_eq!(
            c.tool(4, "get_mode", json!({}))["mode"],
            "paper",
            "paper mode survives the reconnection"
        );
        let tick = c.tool(5, "get_tick", json!({ "symbol": "EURUSD" }));
        assert_eq!(tick["symbol"], "EURUSD");
        c
    })
    .await
    .unwrap();

    // 2. The server is unreachable for a while: a trading call sent meanwhile
    //    waits, then runs on a new session, still in paper mode.
    handle.stop();
    task.await.unwrap().unwrap();
    let (mut c, answer) = {
        let pending = tokio::task::spawn_blocking(move || {
            let order = json!({ "symbol": "GBPUSD", "order_type": "SELL", "volume": 0.01, "dry_run": false });
            let v = c.tool(6, "place_order", order);
            (c, v)
        });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (_, handle, task) = serve_mcp(&state, port).await;
        let out = pending.await.unwrap();
        handle.stop();
        task.await.unwrap().unwrap();
        out
    };
    assert_eq!(
        (answer["symbol"].as_str(), answer["dry_run"].as_bool()),
        (Some("GBPUSD"), Some(true)),
        "{answer}"
    );
    assert_eq!(
        t.stack.simulators()[0].deals().len(),
        deals_before,
        "no order reached the account"
    );
    let log = c.log();
    assert!(log.contains("re-initialised"), "{log}");

    // Closing stdin ends the connector cleanly.
    drop(c.stdin.take());
    let status = tokio::task::spawn_blocking(move || c.child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success());
    t.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_reaches_the_client_as_a_readable_error() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let url = format!("http://127.0.0.1:{}/mcp/v1", t.stack.mcp_port);
    let master = t.creds.license_key.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let mut c = Connector::start(&url, &master);
        let v = c.request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } }),
        );
        drop(c.stdin.take());
        let status = c.child.wait().unwrap();
        assert!(status.success(), "the connector ends cleanly when stdin closes: {status}\n{}", c.log());
        v
    })
    .await
    .unwrap();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("master license keys are not accepted") && message.contains("401"),
        "{answer}"
    );
    t.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_due_when_stdin_closes_are_still_relayed() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let url = format!("http://127.0.0.1:{}/mcp/v1", t.stack.mcp_port);
    let key = t.creds.terminals[0].key.clone();
    let answers = tokio::task::spawn_blocking(move || {
        let mut c = Connector::start(&url, &key);
        c.send(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "pipe", "version": "1" } }
        }));
        c.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        c.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "get_tick", "arguments": { "symbol": "EURUSD" } } }));
        drop(c.stdin.take());
        let answers: Vec<Value> = c.lines.iter().map(|l| serde_json::from_str(&l).unwrap()).collect();
        assert!(c.child.wait().unwrap().success(), "{}", c.log());
        answers
    })
    .await
    .unwrap();
    let tick = answers
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap_or_else(|| panic!("{answers:?}"));
    assert_eq!(tick["result"]["structuredContent"]["symbol"], "EURUSD", "{tick}");
    t.stack.stop().await;
}
