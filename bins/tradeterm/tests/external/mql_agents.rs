//! The MetaTrader agents (`agents/mt5`, `agents/mt4`, shared code in
//! `agents/mql`) against the real gateway. No MetaTrader runs here: the MQL
//! sources are compiled with g++ against the harness (`agents/mql/harness`:
//! MQL runtime mapped onto C++/POSIX and a fake terminal), so the protocol,
//! JSON, WebSocket, long-poll, dispatch and idempotency code that MetaEditor
//! compiles is the code exercised here. Each agent connects to
//! `tradeterm serve` and must pass the conformance kit
//! (`tradeterm agent check --trading`): MT5 over WebSocket and long-poll,
//! MT4 over long-poll, also through a proxy that holds every gateway→agent
//! chunk 300 ms (reads time out, the gateway answers late: never a dropped
//! connection), and (with OpenSSL) MT5 over `wss://` and MT4 over `https://`
//! against a gateway serving TLS, on a free port and on port 443 (which the
//! terminal secures itself). A harness built with one command deliberately
//! broken must make the kit fail and name that command; an account whose
//! broker disabled expert trading must get `TRADING_DISABLED`, never an
//! order. The harness's own self-test (`selftest.cpp`: the modelled
//! MetaTrader behaviours and the agent core) runs first, and the lines only
//! MetaEditor compiles are checked for form.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
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
        // One admin command at a time on the data directory.
        static ADMIN: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = ADMIN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let t = admin(
            &self.dir.path().join("data"),
            &["create-terminal", "--license", &self.license_id, "--name", name],
        );
        (
            t["terminal"]["id"].as_str().unwrap().to_owned(),
            t["terminal_key"].as_str().unwrap().to_owned(),
        )
    }

    /// Starts the harness agent of `sc` (its extra arguments and
    /// environment) with `key` and waits until it is welcomed; its log is
    /// `<name>/agent.log`.
    fn agent(&self, sc: &Scenario<'_>, key: &str) -> KillOnDrop {
        let (exe, name, url, transport) = (sc.exe, sc.name, sc.url.as_str(), sc.transport);
        let (extra, env) = (&sc.args, &sc.env);
        let home = self.dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap();
        let log = home.join("agent.log");
        let mut cmd = Command::new(exe);
        if let Some(ca) = &self.ca_file {
            cmd.env("MQL_CA_FILE", ca);
        }
        let child = cmd
            .env("MQL_ALLOWED_URLS", allowed_url(url))
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .args(["--url", url, "--transport", transport, "--key", key])
            .args(["--allow-trading", "--symbols", "EURUSD,GBPUSD,USDJPY"])
            .args(extra)
            .env("MQL_FILES_DIR", home.join("files"))
            .env("MQL_COMMON_DIR", home.join("common"))
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

    /// The log of the agent `name`.
    fn agent_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name).join("agent.log")).unwrap_or_default()
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

/// A TCP proxy to `127.0.0.1:target` that holds every chunk the gateway
/// sends for `delay` before passing it on (what the agent sends goes through
/// at once): a gateway that answers slowly, on purpose. Returns its port;
/// it serves until the test process ends.
fn slow_proxy(target: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for agent in listener.incoming() {
            let Ok(agent) = agent else { continue };
            let Ok(gateway) = TcpStream::connect(("127.0.0.1", target)) else {
                continue;
            };
            let _ = agent.set_nodelay(true);
            let _ = gateway.set_nodelay(true);
            let (mut from_agent, mut to_gateway) = (agent.try_clone().unwrap(), gateway.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_agent, &mut to_gateway);
                let _ = to_gateway.shutdown(Shutdown::Write);
            });
            let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
            let mut from_gateway = gateway;
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while let Ok(n) = from_gateway.read(&mut buf) {
                    if n == 0 || tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            });
            let mut to_agent = agent;
            std::thread::spawn(move || {
                for (due, bytes) in rx {
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    if to_agent.write_all(&bytes).is_err() {
                        break;
                    }
                }
                let _ = to_agent.shutdown(Shutdown::Write);
            });
        }
    });
    port
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

/// Runs the kit against the agent of `sc`: every check must pass.
fn run_scenario(sc: &Scenario<'_>, started: Instant) {
    let (name, node, platform) = (sc.name, sc.node, sc.platform);
    let (terminal, key) = node.terminal(name);
    let _agent = node.agent(sc, &key);
    if sc.args.contains(&"--login-after-ms") {
        let log = node.agent_log(name);
        assert!(
            log.contains("waiting for the trade account to log in"),
            "{name}: the agent did not wait for the login:\n{log}"
        );
    }
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
        "modify_order",
        "close_by",
    ] {
        assert!(cmds.iter().any(|c| c == cmd), "{name}: the kit never ran {cmd}");
    }
    order_management_verdicts(name, platform, &report);
}

/// The kit's verdict on a later v1 command: the first check whose name
/// starts with `prefix` (and runs `command`), as (passed, why).
fn verdict<'a>(report: &'a Value, prefix: &str, command: &str) -> Option<(bool, &'a str)> {
    report["checks"].as_array().unwrap().iter().find_map(|c| {
        let (n, cmd) = (
            c["name"].as_str().unwrap_or_default(),
            c["command"].as_str().unwrap_or_default(),
        );
        (n.starts_with(prefix) && cmd == command).then(|| (c["pass"] == true, c["why"].as_str().unwrap_or_default()))
    })
}

/// The `order_management` step: MT5 must pass `modify_order`, the stop-limit
/// order, `close_by` (the fake account hedges) and the depth of market, none
/// of them "not supported"; MT4 must pass `modify_order` and `close_by` (MT4
/// accounts hedge), and report the stop-limit order and the depth of market
/// as not supported.
fn order_management_verdicts(name: &str, platform: &str, report: &Value) {
    let supported = |prefix: &str, command: &str| {
        let v = verdict(report, prefix, command);
        let Some((pass, why)) = v else {
            panic!("{name}: the kit reported no `{prefix}` check ({command}): {report}");
        };
        eprintln!("{name}: {prefix} [{command}]: pass={pass}: {why}");
        assert!(
            pass && !why.starts_with("not supported") && !why.contains("netting account"),
            "{name}: `{prefix}` ({command}) must pass as supported: {why}"
        );
    };
    let unsupported = |prefix: &str, command: &str| {
        let v = verdict(report, prefix, command);
        let Some((pass, why)) = v else {
            panic!("{name}: the kit reported no `{prefix}` check ({command}): {report}");
        };
        eprintln!("{name}: {prefix} [{command}]: pass={pass}: {why}");
        assert!(
            pass && why.starts_with("not supported") && why.contains("NOT_SUPPORTED"),
            "{name}: `{prefix}` ({command}) must be reported as NOT_SUPPORTED: {why}"
        );
    };
    supported("modify_order ", "modify_order");
    supported("close_by ", "close_by");
    match platform {
        "MT5" => {
            supported("place_order BUY_STOP_LIMIT", "place_order");
            supported("market_book_get ", "market_book_get");
            supported("market_book_release", "market_book_release");
        }
        "MT4" => {
            unsupported("place_order BUY_STOP_LIMIT", "place_order");
            unsupported("market_book", "market_book_add");
        }
        other => panic!("{name}: unknown platform {other}"),
    }
}

/// One agent run against the kit.
struct Scenario<'a> {
    name: &'static str,
    node: &'a Node,
    exe: &'a Path,
    url: String,
    transport: &'static str,
    platform: &'static str,
    args: Vec<&'static str>,
    env: Vec<(&'static str, String)>,
}

impl<'a> Scenario<'a> {
    fn new(
        name: &'static str,
        node: &'a Node,
        exe: &'a Path,
        url: String,
        transport: &'static str,
        platform: &'static str,
    ) -> Self {
        Self {
            name,
            node,
            exe,
            url,
            transport,
            platform,
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    fn args(mut self, args: &[&'static str]) -> Self {
        self.args.extend_from_slice(args);
        self
    }

    fn env(mut self, env: Vec<(&'static str, String)>) -> Self {
        self.env = env;
        self
    }
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
        start_build("mql/harness/selftest.cpp", &bin.join("selftest5"), plain5),
        start_build("mql/harness/selftest.cpp", &bin.join("selftest4"), plain4),
    ]);
    let (mt5, mt4, broken) = (&built[0], &built[1], &built[2]);

    // What the gateway cannot show: fragmented and masked frames, lost
    // long-poll replies and re-sent batches, the agent's own trading switch
    // check, idempotency across a restart, trade events (MT5 and MT4 builds).
    // The MT5 self-test with OpenSSL also checks port 443 against a TLS
    // echo server with this certificate.
    let cert_dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_file, key_file) = (cert_dir.path().join("cert.pem"), cert_dir.path().join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    for selftest in &built[3..] {
        let files = tempfile::tempdir().unwrap();
        let out = Command::new(selftest)
            .env("MQL_FILES_DIR", files.path().join("Files"))
            .env("MQL_COMMON_DIR", files.path().join("Common"))
            .env("MQL_SELFTEST_CERT", &cert_file)
            .env("MQL_SELFTEST_KEY", &key_file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{} failed:\n{stderr}", selftest.display());
        assert!(
            !stderr.contains("SKIPPED"),
            "{}: a check was skipped:\n{stderr}",
            selftest.display()
        );
    }
    eprintln!("harness built in {:?}", started.elapsed());
    let node = Node::start(false);
    let tls_node = tls.then(|| Node::start(true));
    eprintln!("tradeterm serve up after {:?}", started.elapsed());

    // Gateway→agent 300 ms late: longer than the agent's SocketRead timeout
    // and its timer period, so reads really time out while a reply is due.
    let slow = slow_proxy(node.ports[1], Duration::from_millis(300));
    let slow_ws = format!("ws://127.0.0.1:{slow}/agent/v1");
    let slow_http = format!("http://127.0.0.1:{slow}");
    let mut scenarios = vec![
        // The account logs in 1.5 s after the start: the hello waits for it.
        Scenario::new("mt5-websocket", &node, mt5, node.ws_url(), "ws", "MT5").args(&["--login-after-ms", "1500"]),
        Scenario::new("mt5-longpoll", &node, mt5, node.gateway(), "poll", "MT5"),
        Scenario::new("mt4-longpoll", &node, mt4, node.gateway(), "poll", "MT4").args(&["--login-after-ms", "1500"]),
    ];
    let slow_scenarios = [
        Scenario::new("mt5-websocket-slow", &node, mt5, slow_ws, "ws", "MT5"),
        Scenario::new("mt5-longpoll-slow", &node, mt5, slow_http.clone(), "poll", "MT5"),
        Scenario::new("mt4-longpoll-slow", &node, mt4, slow_http, "poll", "MT4"),
    ];
    if let Some(t) = &tls_node {
        // A free port: the agent makes the TLS handshake itself.
        scenarios.push(Scenario::new("mt5-wss", t, mt5, t.ws_url(), "ws", "MT5"));
        scenarios.push(Scenario::new("mt4-https", t, mt4, t.gateway(), "poll", "MT4"));
        // Port 443 (the default URLs'): the terminal secures the socket in
        // SocketConnect and a handshake on it fails. The harness connects
        // the agent's port 443 to the gateway's port.
        let map = vec![("MQL_PORT_MAP", format!("443={}", t.ports[1]))];
        scenarios.push(
            Scenario::new(
                "mt5-wss-443",
                t,
                mt5,
                "wss://localhost/agent/v1".to_owned(),
                "ws",
                "MT5",
            )
            .env(map.clone()),
        );
        scenarios.push(
            Scenario::new("mt5-https-443", t, mt5, "https://localhost".to_owned(), "poll", "MT5").env(map.clone()),
        );
        scenarios.push(Scenario::new("mt4-https-443", t, mt4, "https://localhost".to_owned(), "poll", "MT4").env(map));
    }
    for sc in &scenarios {
        run_scenario(sc, started);
    }
    // The slow-gateway runs wait most of the time: side by side.
    std::thread::scope(|scope| {
        for sc in &slow_scenarios {
            scope.spawn(move || run_scenario(sc, started));
        }
    });

    // The broker disabled expert trading (ACCOUNT_TRADE_EXPERT) or trading
    // (ACCOUNT_TRADE_ALLOWED) on the account: every trade is refused with
    // TRADING_DISABLED, nothing reaches the trade server as a rejected order.
    for (name, exe, url, transport, flag) in [
        (
            "mt5-account-expert-off",
            mt5,
            node.ws_url(),
            "ws",
            "--account-expert-off",
        ),
        (
            "mt4-account-trade-off",
            mt4,
            node.gateway(),
            "poll",
            "--account-trade-off",
        ),
    ] {
        let (terminal, key) = node.terminal(name);
        let sc = Scenario::new(name, &node, exe, url, transport, "").args(&[flag]);
        let _agent = node.agent(&sc, &key);
        let (code, report) = node.check(&terminal);
        assert_eq!(
            code, 1,
            "{name}: the kit must fail when the account refuses expert trading: {report}"
        );
        let failed = failing(&report);
        assert!(
            failed.iter().any(|f| f.contains("TRADING_DISABLED")),
            "{name}: no TRADING_DISABLED among the failures:\n{}",
            failed.join("\n")
        );
        assert!(
            !failed.iter().any(|f| f.contains("TRADE_REJECTED")),
            "{name}: an order reached the trade server:\n{}",
            failed.join("\n")
        );
        let log = node.agent_log(name);
        assert!(
            log.contains("trading OFF (the broker disabled"),
            "{name}: the status line does not say why:\n{log}"
        );
    }

    // One command answering garbage: the kit fails and names it.
    let (terminal, key) = node.terminal("mt5-broken");
    let sc = Scenario::new("mt5-broken", &node, broken, node.ws_url(), "ws", "MT5");
    let _agent = node.agent(&sc, &key);
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

/// Lines only MetaEditor compiles: those in `#ifdef __MQL5__`, `__MQL4__`
/// or `TT_MQL` branches of the agents' sources, as (file, line).
fn mql_only_lines() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    for dir in ["mql/include/Tradeterm", "mt5", "mt4"] {
        for entry in std::fs::read_dir(Path::new(AGENTS).join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "mqh" || e == "mq5" || e == "mq4") {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        // One entry per open conditional: whether its current branch is MetaEditor's only.
        let mut stack: Vec<(bool, bool)> = Vec::new();
        for line in text.lines() {
            let t = line.trim();
            let directive = t.split_whitespace().next().unwrap_or_default();
            match directive {
                "#ifdef" | "#ifndef" => {
                    let name = t.split_whitespace().nth(1).unwrap_or_default();
                    let mql = matches!(name, "__MQL5__" | "__MQL4__" | "TT_MQL");
                    stack.push((mql && directive == "#ifdef", mql && directive == "#ifndef"));
                }
                "#else" => {
                    if let Some(top) = stack.last_mut() {
                        *top = (top.1, top.0);
                    }
                }
                "#endif" => {
                    stack.pop();
                }
                _ => {
                    if stack.iter().any(|s| s.0) && !t.is_empty() && !t.starts_with("//") {
                        out.push((path.file_name().unwrap().to_string_lossy().into_owned(), t.to_owned()));
                    }
                }
            }
        }
        assert!(stack.is_empty(), "{}: unbalanced #ifdef/#endif", path.display());
    }
    out
}

/// What g++ never compiles is kept to a few lines of fixed forms, and those
/// are checked here: the two `#define`s of Platform.mqh and the `#property`
/// lines of the experts (known names, MQL string literals that g++ parses
/// as C string literals, `version` as `N.NN`).
#[test]
fn mql_only_lines_are_few_and_well_formed() {
    let lines = mql_only_lines();
    let mut literals = Vec::new();
    for (file, line) in &lines {
        if line == "#define TT_MQL" || line == "#define TT_ARRAY(T) T v[]" {
            assert_eq!(file, "Platform.mqh", "{file}: {line}");
            continue;
        }
        let rest = line
            .strip_prefix("#property ")
            .unwrap_or_else(|| panic!("{file}: `{line}` is compiled by MetaEditor only; move it into shared code"));
        let (name, value) = rest.split_once(' ').map_or((rest, ""), |(n, v)| (n, v.trim()));
        match name {
            "strict" => {
                assert!(file.ends_with(".mq4") && value.is_empty(), "{file}: {line}");
            }
            "copyright" | "link" | "description" | "version" => {
                assert!(
                    value.len() >= 2 && value.starts_with('"') && value.ends_with('"'),
                    "{file}: `{line}`: the value must be one string literal"
                );
                let inner = &value[1..value.len() - 1];
                assert!(!inner.contains('"') || inner.contains("\\\""), "{file}: `{line}`");
                if name == "version" {
                    let ok = inner.split_once('.').is_some_and(|(a, b)| {
                        !a.is_empty()
                            && a.chars().all(|c| c.is_ascii_digit())
                            && b.len() == 2
                            && b.chars().all(|c| c.is_ascii_digit())
                    });
                    assert!(ok, "{file}: `{line}`: version must be N.NN");
                }
                if name == "link" {
                    assert!(
                        inner.starts_with("https://") || inner.starts_with("http://"),
                        "{file}: {line}"
                    );
                }
                if name == "description" {
                    assert!(
                        inner.len() <= 511,
                        "{file}: {line}: a description line is at most 511 characters"
                    );
                }
                literals.push(value.to_owned());
            }
            other => panic!("{file}: unknown #property `{other}`"),
        }
    }
    for file in ["TradetermAgent.mq5", "TradetermAgent.mq4"] {
        assert!(
            lines
                .iter()
                .any(|(f, l)| f == file && l.starts_with("#property version")),
            "{file}: no #property version"
        );
    }
    assert_eq!(
        lines.iter().filter(|(_, l)| l.starts_with("#define")).count(),
        3,
        "Platform.mqh: the MQL-only #defines changed: {lines:?}"
    );
    if !have_gxx() {
        return;
    }
    // The literals are valid string literals (g++ parses them).
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("properties.cpp");
    let body: String = literals
        .iter()
        .enumerate()
        .map(|(i, l)| format!("extern const char *const tt_property_{i};\nconst char *const tt_property_{i} = {l};\n"))
        .collect();
    std::fs::write(&src, body).unwrap();
    let out = Command::new("g++")
        .args(["-std=c++17", "-fsyntax-only", "-Wall", "-Werror"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "#property values:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The MT4 harness build sees the MQL4 API only: a call that exists in MQL5
/// alone does not compile there (so MT4 code cannot use one by mistake),
/// while the same call compiles in the MT5 build and MQL4 calls compile in
/// the MT4 build.
#[test]
fn mql4_harness_build_has_no_mql5_only_api() {
    if !have_gxx() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let compiles = |header: &str, mt4: bool, expr: &str| -> bool {
        let src = dir.path().join("probe.cpp");
        std::fs::write(
            &src,
            format!("#include \"{header}\"\nvoid probe() {{ (void)({expr}); }}\n"),
        )
        .unwrap();
        let mut cmd = Command::new("g++");
        cmd.args(["-std=c++17", "-fsyntax-only", "-w", "-I"])
            .arg(Path::new(AGENTS).join("mql/harness"));
        if mt4 {
            cmd.arg("-DTT_HARNESS_MT4");
        }
        cmd.arg(&src).output().unwrap().status.success()
    };
    let mql5_only = [
        "SocketCreate()",
        "TimeTradeServer()",
        "PositionsTotal()",
        "SymbolExist(\"EURUSD\", *(bool *)nullptr)",
        "AccountInfoDouble(ACCOUNT_BALANCE)",
        "AccountInfoInteger(ACCOUNT_MARGIN_MODE)",
        "SYMBOL_FILLING_MODE",
        "TRADE_ACTION_DEAL",
    ];
    for expr in mql5_only {
        assert!(
            compiles("fake_terminal.h", false, expr),
            "MT5 build: `{expr}` must compile"
        );
        assert!(
            !compiles("fake_terminal4.h", true, expr),
            "MT4 build: `{expr}` (MQL5 only) compiled"
        );
    }
    for expr in [
        "AccountNumber()",
        "OrdersHistoryTotal()",
        "MarketInfo(\"EURUSD\", MODE_DIGITS)",
        "AccountInfoInteger(ACCOUNT_TRADE_EXPERT)",
        "SymbolInfoInteger(\"EURUSD\", SYMBOL_SWAP_ROLLOVER3DAYS)",
        "EventSetMillisecondTimer(50)",
        "WebRequest(\"POST\", \"https://x\", \"\", 1, std::vector<char>(), *(std::vector<char> *)nullptr, *(string *)nullptr)",
    ] {
        assert!(
            compiles("fake_terminal4.h", true, expr),
            "MT4 build: `{expr}` must compile"
        );
    }
    // fake_terminal.h refuses an MT4 build outright.
    assert!(
        !compiles("fake_terminal.h", true, "0"),
        "fake_terminal.h compiled in an MT4 build"
    );
}
