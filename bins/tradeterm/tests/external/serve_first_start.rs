//! `tradeterm serve` as a user runs it: the binary on free ports, its printed
//! keys and admin command line, a real terminal added with that command, a
//! restart with the same data dir, and a gateway serving TLS.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tradeterm_sim::{AgentHandle, AgentSettings, SimSettings, Simulator, SystemClock, spawn_agent};

use crate::harness::process::{free_ports, tradeterm};
use crate::harness::wait::wait_until_blocking;
use crate::harness::{Api, WEDNESDAY_NOON, wait_until};

const START: Duration = Duration::from_secs(60);

struct Node {
    ports: [u16; 3],
    env: Vec<(String, String)>,
}

impl Node {
    fn new(extra_env: &[(&str, &str)]) -> Self {
        let ports = free_ports();
        let mut env: Vec<(String, String)> = vec![
            ("PORT".into(), ports[0].to_string()),
            ("GATEWAY_PORT".into(), ports[1].to_string()),
            ("MCP_PORT".into(), ports[2].to_string()),
        ];
        env.extend(extra_env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        Self { ports, env }
    }

    fn rest(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports[0])
    }

    fn command(&self) -> Command {
        let mut cmd = tradeterm();
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    fn serve(&self, data_dir: &Path, sim_terminals: usize) -> Serve {
        let mut child = self
            .command()
            .args(["serve", "--data-dir"])
            .arg(data_dir)
            .args(["--sim-terminals", &sim_terminals.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Serve { child, lines }
    }

    /// Runs `tradeterm admin …` given as the command line `serve` printed.
    fn run_printed(&self, line: &str) -> Value {
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some("tradeterm"), "{line}");
        let out = self.command().args(words).output().unwrap();
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

struct Serve {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Serve {
    /// Everything printed up to the line containing `marker`.
    fn read_until(&self, marker: &str) -> String {
        let until = Instant::now() + START;
        let mut text = String::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("`{marker}` printed within {START:?}; got:\n{text}"));
            text.push_str(&line);
            text.push('\n');
            if line.contains(marker) {
                return text;
            }
        }
    }

    /// Ctrl-C, then waits for a clean exit.
    fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let status = wait_until_blocking("serve to stop on Ctrl-C", Duration::from_secs(30), || {
            self.child.try_wait().unwrap()
        });
        assert!(status.success(), "serve exits cleanly on Ctrl-C: {status}");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // Cleanup after a failure: the child may be gone already.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent(url: &str, key: &str, ca_file: Option<&Path>) -> AgentHandle {
    let sim = Simulator::new(SimSettings::demo(5), Arc::new(SystemClock::new(1.0)));
    spawn_agent(
        sim,
        AgentSettings {
            url: url.to_owned(),
            terminal_key: key.to_owned(),
            uid: format!("real-terminal-{key}").chars().take(40).collect(),
            ca_file: ca_file.map(Path::to_owned),
        },
    )
}

/// `GET /api/v1/account/info` for a terminal, retried until it answers.
async fn account_login(rest: &str, api_key: &str, terminal: &str) -> u64 {
    let api = Api::new(&reqwest::Client::new(), rest).key(api_key).on(terminal);
    let account = wait_until(
        format!("terminal {terminal} to answer through REST"),
        Duration::from_secs(20),
        || async { api.account().await.ok() },
    )
    .await;
    account["login"].as_u64().unwrap()
}

/// Waits (15 s at most) until the agent is welcomed.
async fn welcomed(what: &str, agent: &AgentHandle) {
    wait_until(what, Duration::from_secs(15), || async {
        agent.is_connected().then_some(())
    })
    .await;
}

fn admin_line(printed: &str) -> &str {
    printed
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("tradeterm ") && l.contains(" create-terminal "))
        .unwrap_or_else(|| panic!("an admin command line is printed:\n{printed}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_start_without_simulated_terminals_creates_the_license_and_a_real_terminal_can_join() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let node = Node::new(&[]);
    let gw = node.ports[1];

    let serve = node.serve(&data, 0);
    let printed = serve.read_until("Stop with Ctrl-C.");
    let file = data.join("demo-credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let creds: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let (license_id, license_key, api_key) = (
        creds["license_id"].as_str().unwrap().to_owned(),
        creds["license_key"].as_str().unwrap().to_owned(),
        creds["api_key"].as_str().unwrap().to_owned(),
    );
    assert!(license_key.starts_with("tt_lic_") && api_key.starts_with("svc_api_"));
    assert_eq!(creds["terminals"].as_array().unwrap().len(), 0);
    for shown in [&license_id, &license_key, &api_key] {
        assert!(printed.contains(shown.as_str()), "{shown} printed:\n{printed}");
    }
    let ws_url = format!("ws://127.0.0.1:{gw}/agent/v1");
    assert!(printed.contains(&ws_url), "{printed}");
    assert!(
        printed.contains(&format!("http://127.0.0.1:{gw}/agent/v1/poll")),
        "{printed}"
    );

    // The printed command creates a terminal and tells where its agent connects.
    let line = admin_line(&printed);
    assert!(
        line.contains(&license_id) && line.contains(data.to_str().unwrap()),
        "{line}"
    );
    let created = node.run_printed(line);
    let key = created["terminal_key"].as_str().unwrap().to_owned();
    let terminal = created["terminal"]["id"].as_str().unwrap().to_owned();
    assert!(key.starts_with("tt_term_"));
    assert_eq!(created["agent"]["websocket"], ws_url.as_str());
    assert_eq!(created["agent"]["poll"], format!("http://127.0.0.1:{gw}/agent/v1/poll"));

    // A terminal agent with that key and URL is welcomed and answers through REST.
    let real = agent(&ws_url, &key, None);
    welcomed("the new terminal's agent to be welcomed", &real).await;
    assert_eq!(real.terminal_id().as_deref(), Some(terminal.as_str()));
    assert_eq!(
        account_login(&node.rest(), &api_key, &terminal).await,
        SimSettings::demo(5).login
    );
    real.shutdown().await;
    serve.stop();

    // A restart reuses the license and prints no secret.
    let serve = node.serve(&data, 0);
    let printed = serve.read_until("Stop with Ctrl-C.");
    assert!(printed.contains(&license_id), "{printed}");
    assert!(
        !printed.contains(&license_key) && !printed.contains(&api_key),
        "{printed}"
    );
    assert!(
        !printed.contains("tt_lic_") && !printed.contains("svc_api_"),
        "{printed}"
    );
    let again: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(again["license_key"], license_key.as_str());
    assert_eq!(again["api_key"], api_key.as_str());
    assert!(admin_line(&printed).contains(&license_id));
    serve.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_tls_takes_agents_over_wss() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A self-signed server certificate (not a CA) for the loopback address.
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let node = Node::new(&[
        ("GATEWAY_TLS_CERT", cert_file.to_str().unwrap()),
        ("GATEWAY_TLS_KEY", key_file.to_str().unwrap()),
    ]);
    let gw = node.ports[1];

    let serve = node.serve(&data, 1);
    let printed = serve.read_until("Stop with Ctrl-C.");
    let wss_url = format!("wss://127.0.0.1:{gw}/agent/v1");
    assert!(printed.contains(&wss_url), "{printed}");
    assert!(
        printed.contains(&format!("https://127.0.0.1:{gw}/agent/v1/poll")),
        "{printed}"
    );
    let creds: Value = serde_json::from_slice(&std::fs::read(data.join("demo-credentials.json")).unwrap()).unwrap();
    let api_key = creds["api_key"].as_str().unwrap();
    assert_eq!(creds["gateway_url"], format!("https://127.0.0.1:{gw}"));

    // The in-process simulated terminal reached the TLS gateway, and the REST
    // API exchanged its key with the gateway over HTTPS.
    let sim_terminal = creds["terminals"][0]["id"].as_str().unwrap();
    assert_eq!(
        account_login(&node.rest(), api_key, sim_terminal).await,
        SimSettings::demo(0).login
    );

    // A terminal added with the printed command joins over wss:// trusting the certificate.
    let created = node.run_printed(admin_line(&printed));
    assert_eq!(created["agent"]["websocket"], wss_url.as_str());
    let terminal = created["terminal"]["id"].as_str().unwrap();
    let real = agent(&wss_url, created["terminal_key"].as_str().unwrap(), Some(&cert_file));
    welcomed("the wss agent to be welcomed", &real).await;
    assert_eq!(
        account_login(&node.rest(), api_key, terminal).await,
        SimSettings::demo(5).login
    );
    real.shutdown().await;

    // The conformance kit over https:// (trusting the certificate) passes
    // every check and the trade cycle against the same terminal reconnected
    // over wss:// with trading allowed, on a simulated Wednesday.
    let trader = spawn_agent(
        Simulator::new(
            SimSettings {
                allow_trading: true,
                ..SimSettings::demo(5)
            },
            Arc::new(SystemClock::starting_at(WEDNESDAY_NOON, 1.0)),
        ),
        AgentSettings {
            url: wss_url.clone(),
            terminal_key: created["terminal_key"].as_str().unwrap().to_owned(),
            uid: format!("real-terminal-{}", created["terminal_key"].as_str().unwrap())
                .chars()
                .take(40)
                .collect(),
            ca_file: Some(cert_file.clone()),
        },
    );
    welcomed("the trading agent to be welcomed over wss", &trader).await;
    let report = tradeterm::agent_check::check(&tradeterm::agent_check::CheckArgs {
        gateway_url: Some(format!("https://127.0.0.1:{gw}")),
        master_key: Some(creds["license_key"].as_str().unwrap().to_owned()),
        rest_url: None,
        api_key: None,
        terminal: terminal.to_owned(),
        trading: true,
        json: true,
        symbol: "EURUSD".into(),
        ca_file: Some(cert_file.clone()),
        calls: 2,
    })
    .await
    .unwrap();
    let failed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| format!("{}: {}", c.name, c.why))
        .collect();
    assert!(report.ok, "kit over wss:// failed:\n{}", failed.join("\n"));
    assert!(report.checks.iter().any(|c| c.command == "reverse_position" && c.pass));
    trader.shutdown().await;

    // Plain ws:// to the same port is refused.
    let plain = agent(
        &format!("ws://127.0.0.1:{gw}/agent/v1"),
        created["terminal_key"].as_str().unwrap(),
        None,
    );
    // What is tested is that nothing happens: the agent gets half a second.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!plain.is_connected());
    plain.shutdown().await;
    serve.stop();
}
