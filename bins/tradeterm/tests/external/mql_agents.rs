//! The MetaTrader agents (`agents/mt5`, `agents/mt4`, shared code in
//! `agents/mql`) against the real gateway. No MetaTrader runs here: the MQL
//! sources are compiled with g++ against the harness (`agents/mql/harness`:
//! MQL runtime mapped onto C++/POSIX and a fake terminal), so the protocol,
//! JSON, WebSocket, long-poll, dispatch and idempotency code that MetaEditor
//! compiles is the code exercised here. Each agent connects to
//! `tradeterm serve` and must pass the conformance kit
//! (`tradeterm agent check --trading`): MT5 over WebSocket and long-poll,
//! MT4 over long-poll, and (with OpenSSL) MT5 over `wss://` and MT4 over
//! `https://` against a gateway serving TLS. A harness built with one command
//! deliberately broken must make the kit fail and name that command.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::process::{KillOnDrop, free_ports, tradeterm};
use crate::harness::wait::wait_until_blocking;

const AGENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../agents");
const MAIN: &str = "mql/harness/main.cpp";

/// Whether g++ is there. Missing g++ fails under CI and skips (loudly) elsewhere.
fn have_gxx() -> bool {
    let ok = Command::new("g++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "g++ is required to build the MetaTrader agent harness (agents/mql/harness); install it (e.g. `apt-get install g++`)"
        );
        eprintln!("SKIPPED: g++ is not installed; the MetaTrader agents were not exercised");
    }
    ok
}

/// Whether OpenSSL's headers and libraries are there (the harness maps
/// MQL5's `SocketTls*` and `https://` WebRequest onto OpenSSL). Missing
/// OpenSSL fails under CI and skips the TLS runs (loudly) elsewhere.
fn have_openssl(dir: &Path) -> bool {
    let src = dir.join("probe.cpp");
    std::fs::write(
        &src,
        "#include <openssl/ssl.h>\nint main() { return OPENSSL_init_ssl(0, nullptr) ? 0 : 1; }\n",
    )
    .unwrap();
    let ok = Command::new("g++")
        .arg(&src)
        .arg("-o")
        .arg(dir.join("probe"))
        .args(["-lssl", "-lcrypto"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "OpenSSL (headers and libraries, e.g. `apt-get install libssl-dev`) is required to build the TLS harness"
        );
        eprintln!("SKIPPED: OpenSSL is not installed; the wss:// and https:// runs were not done");
    }
    ok
}

/// Compiles a harness program (`source` under `agents/`) with the given
/// defines into `out` (in parallel: the children are waited for by `finish_builds`).
fn start_build(source: &str, out: &Path, defines: &[&str]) -> (PathBuf, Child) {
    let agents = Path::new(AGENTS);
    let mut cmd = Command::new("g++");
    cmd.args([
        "-std=c++17",
        "-O1",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-Werror",
    ])
    .arg("-I")
    .arg(agents.join("mql/include"))
    .arg("-I")
    .arg(agents.join("mql/harness"));
    for d in defines {
        cmd.arg(format!("-D{d}"));
    }
    cmd.arg(agents.join(source)).arg("-o").arg(out);
    if defines.contains(&"TT_HARNESS_TLS") {
        cmd.args(["-lssl", "-lcrypto"]);
    }
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running g++");
    (out.to_path_buf(), child)
}

fn finish_builds(builds: Vec<(PathBuf, Child)>) -> Vec<PathBuf> {
    builds
        .into_iter()
        .map(|(path, child)| {
            let out = child.wait_with_output().expect("waiting for g++");
            assert!(
                out.status.success(),
                "g++ failed building {}:\n{}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            path
        })
        .collect()
}

fn admin(data: &Path, args: &[&str]) -> Value {
    let out = tradeterm()
        .arg("admin")
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "admin {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

struct Node {
    dir: tempfile::TempDir,
    ports: [u16; 3],
    license_id: String,
    master_key: String,
    /// The gateway's self-signed certificate when it serves TLS.
    ca_file: Option<PathBuf>,
    _serve: KillOnDrop,
}

impl Node {
    /// `tradeterm serve`, plain or (with `tls`) HTTPS/WSS only with a
    /// self-signed certificate for `localhost`.
    fn start(tls: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut tls_env = Vec::new();
        let mut ca_file = None;
        if tls {
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
                .unwrap()
                .self_signed(&key)
                .unwrap();
            let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
            std::fs::write(&cert_file, cert.pem()).unwrap();
            std::fs::write(&key_file, key.serialize_pem()).unwrap();
            tls_env.push(("GATEWAY_TLS_CERT", cert_file.clone()));
            tls_env.push(("GATEWAY_TLS_KEY", key_file));
            ca_file = Some(cert_file);
        }
        let lic = admin(&data, &["create-license", "--name", "mql", "--tier", "pro"]);
        let license_id = lic["license"]["id"].as_str().unwrap().to_owned();
        let master_key = lic["license_key"].as_str().unwrap().to_owned();
        let ports = free_ports();
        let serve = tradeterm()
            .env("PORT", ports[0].to_string())
            .env("GATEWAY_PORT", ports[1].to_string())
            .env("MCP_PORT", ports[2].to_string())
            .envs(tls_env)
            .args(["serve", "--sim-terminals", "0", "--data-dir"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let node = Self {
            dir,
            ports,
            license_id,
            master_key,
            ca_file,
            _serve: KillOnDrop(serve),
        };
        wait_until_blocking("tradeterm serve to listen", Duration::from_secs(60), || {
            std::net::TcpStream::connect(("127.0.0.1", node.ports[1])).ok()
        });
        node
    }

    /// The gateway's base URL (`https://localhost:…` with TLS).
    fn gateway(&self) -> String {
        match self.ca_file {
            Some(_) => format!("https://localhost:{}", self.ports[1]),
            None => format!("http://127.0.0.1:{}", self.ports[1]),
        }
    }

    /// The WebSocket URL of the agent endpoint.
    fn ws_url(&self) -> String {
        match self.ca_file {
            Some(_) => format!("wss://localhost:{}/agent/v1", self.ports[1]),
            None => format!("ws://127.0.0.1:{}/agent/v1", self.ports[1]),
        }
    }

    /// A new terminal: (id, key).
    fn terminal(&self, name: &str) -> (String, String) {
        let t = admin(
            &self.dir.path().join("data"),
            &["create-terminal", "--license", &self.license_id, "--name", name],
        );
        (
            t["terminal"]["id"].as_str().unwrap().to_owned(),
            t["terminal_key"].as_str().unwrap().to_owned(),
        )
    }

    /// Starts a harness agent and waits until it is welcomed.
    fn agent(&self, exe: &Path, name: &str, url: &str, transport: &str, key: &str) -> KillOnDrop {
        let home = self.dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap();
        let log = home.join("agent.log");
        let mut cmd = Command::new(exe);
        if let Some(ca) = &self.ca_file {
            cmd.env("MQL_CA_FILE", ca);
        }
        let child = cmd
            .env("MQL_ALLOWED_URLS", allowed_url(url))
            .args(["--url", url, "--transport", transport, "--key", key])
            .args(["--allow-trading", "--symbols", "EURUSD,GBPUSD,USDJPY"])
            .env("MQL_FILES_DIR", home.join("files"))
            .env("MQL_DATA_PATH", format!("C:\\harness\\{name}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let guard = KillOnDrop(child);
        wait_until_blocking(AgentLog { name, log: &log }, Duration::from_secs(30), || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            text.contains("connected as term_").then_some(())
        });
        guard
    }

    /// Runs the kit with `--trading --json`: (exit code, report).
    fn check(&self, terminal: &str) -> (i32, Value) {
        let mut cmd = tradeterm();
        cmd.args(["agent", "check", "--gateway-url", &self.gateway()])
            .args(["--master-key", &self.master_key, "--terminal", terminal])
            .args(["--trading", "--json", "--calls", "2"]);
        if let Some(ca) = &self.ca_file {
            cmd.arg("--ca-file").arg(ca);
        }
        let out = cmd.output().unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "the kit printed no JSON report ({e}); stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), report)
    }
}

/// The entry the terminal's allow-list needs for `url` (Tools > Options >
/// Expert Advisors): scheme, host and port, as a user types it.
fn allowed_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let scheme = match scheme {
        "ws" => "http",
        "wss" => "https",
        s => s,
    };
    let host_port = rest.split('/').next().unwrap_or_default();
    format!("{scheme}://{host_port}")
}

/// What a harness agent is waited for, with its log as it stands.
struct AgentLog<'a> {
    name: &'a str,
    log: &'a Path,
}

impl std::fmt::Display for AgentLog<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = std::fs::read_to_string(self.log).unwrap_or_default();
        write!(f, "{}: the agent to connect; its log:\n{text}", self.name)
    }
}

fn failing(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] != true)
        .map(|c| format!("{} [{}]: {}", c["name"], c["command"], c["why"]))
        .collect()
}

fn commands(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn mql_agents_pass_the_conformance_kit_and_a_broken_one_fails() {
    if !have_gxx() {
        return;
    }
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mql-harness");
    std::fs::create_dir_all(&bin).unwrap();
    let started = Instant::now();
    let tls = have_openssl(&bin);
    let (plain5, plain4): (&[&str], &[&str]) = if tls {
        (&["TT_HARNESS_TLS"], &["TT_HARNESS_TLS", "TT_HARNESS_MT4"])
    } else {
        (&[], &["TT_HARNESS_MT4"])
    };
    let built = finish_builds(vec![
        start_build(MAIN, &bin.join("mt5-agent"), plain5),
        start_build(MAIN, &bin.join("mt4-agent"), plain4),
        start_build(
            MAIN,
            &bin.join("mt5-agent-broken"),
            &["TT_HARNESS_BREAK=\"symbol_spec\""],
        ),
        start_build("mql/harness/selftest.cpp", &bin.join("selftest5"), &[]),
        start_build("mql/harness/selftest.cpp", &bin.join("selftest4"), &["TT_HARNESS_MT4"]),
    ]);
    let (mt5, mt4, broken) = (&built[0], &built[1], &built[2]);

    // What the gateway cannot show: fragmented and masked frames, lost
    // long-poll replies and re-sent batches, the agent's own trading switch
    // check, idempotency across a restart, trade events (MT5 and MT4 builds).
    for selftest in &built[3..] {
        let files = tempfile::tempdir().unwrap();
        let out = Command::new(selftest)
            .env("MQL_FILES_DIR", files.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} failed:\n{}",
            selftest.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!("harness built in {:?}", started.elapsed());
    let node = Node::start(false);
    let tls_node = tls.then(|| Node::start(true));
    eprintln!("tradeterm serve up after {:?}", started.elapsed());

    let mut scenarios: Vec<(&str, &Node, &Path, String, &str, &str)> = vec![
        ("mt5-websocket", &node, mt5, node.ws_url(), "ws", "MT5"),
        ("mt5-longpoll", &node, mt5, node.gateway(), "poll", "MT5"),
        ("mt4-longpoll", &node, mt4, node.gateway(), "poll", "MT4"),
    ];
    if let Some(t) = &tls_node {
        scenarios.push(("mt5-wss", t, mt5, t.ws_url(), "ws", "MT5"));
        scenarios.push(("mt4-https", t, mt4, t.gateway(), "poll", "MT4"));
    }
    for (name, node, exe, url, transport, platform) in scenarios {
        let (terminal, key) = node.terminal(name);
        let _agent = node.agent(exe, name, &url, transport, &key);
        let (code, report) = node.check(&terminal);
        eprintln!("{name}: kit done after {:?}", started.elapsed());
        let failed = failing(&report);
        assert!(
            code == 0 && report["ok"] == true && failed.is_empty(),
            "{name}: the kit failed (exit {code}):\n{}",
            failed.join("\n")
        );
        assert_eq!(report["platform"], platform, "{name}");
        assert_eq!(report["trade_mode"], "demo", "{name}");
        let cmds = commands(&report);
        for cmd in [
            "account_info",
            "positions",
            "orders",
            "history_deals",
            "history_orders",
            "symbols",
            "symbol_spec",
            "tick",
            "bars",
            "ticks",
            "order_check",
            "calendar",
            "place_order",
            "modify_position",
            "close_position",
            "reverse_position",
            "cancel_order",
        ] {
            assert!(cmds.iter().any(|c| c == cmd), "{name}: the kit never ran {cmd}");
        }
    }

    // One command answering garbage: the kit fails and names it.
    let (terminal, key) = node.terminal("mt5-broken");
    let _agent = node.agent(broken, "mt5-broken", &node.ws_url(), "ws", &key);
    let (code, report) = node.check(&terminal);
    assert_eq!(code, 1, "the kit must fail on a broken agent: {report}");
    assert_eq!(report["ok"], false);
    let failed: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] != true)
        .collect();
    assert!(
        failed.iter().any(|c| c["command"] == "symbol_spec"),
        "the kit does not name symbol_spec: {report}"
    );
    // Checks that need the symbol's spec fail with it; nothing else does.
    for c in &failed {
        assert!(
            c["command"] == "symbol_spec" || c["why"].as_str().unwrap_or_default().contains("symbol_spec"),
            "only symbol_spec is broken, yet: {c}"
        );
    }
}
