//! The dashboard of the single node, end to end.
//!
//! - `the_dashboard_in_a_real_browser`: Debian's Chromium, driven by
//!   Playwright (`crates/dashboard/e2e/dashboard.test.mjs`, node's test
//!   runner), against a real stack: sign-in (keyboard only), a terminal
//!   created in the page whose agent (a simulated terminal this test starts
//!   with the key the page showed) is seen connecting without a reload, a key
//!   rotation that disconnects it, an API key created, used, revoked and
//!   refused by the REST API at once, the five-key limit, a prop-firm status,
//!   another license's session reaching nothing, a forged CSRF token changing
//!   nothing, sign-out; axe-core checks every page. Chromium and the npm
//!   packages come from `cargo xtask browser` (run by `cargo xtask test`);
//!   without them the test fails under `CI` and is skipped, loudly, elsewhere.
//!   With `TT_SCREENSHOTS=DIR` it writes a PNG of each page there (`cargo
//!   xtask screenshots`).
//! - `the_catalog_answers_fit_the_rules_panel`: the three tools behind the
//!   panel, run as the dashboard runs them, answer what the panel reads.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tradeterm::dashboard::ToolInsights;
use tradeterm_dashboard::{Insight, Insights};
use tradeterm_sim::{AgentHandle, AgentSettings, SimSettings, Simulator, SystemClock};
use tradeterm_store::Tier;

use crate::harness::{Options, TestStack, WEDNESDAY_NOON};

/// The browser tests' folder (package.json, package-lock.json, the test file).
fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/dashboard/e2e")
}

/// The browser, or why the browser tests cannot run here.
fn browser_tools() -> Result<PathBuf, String> {
    let chromium = std::env::var_os("TT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.is_file() {
        return Err(format!("Chromium is not installed ({})", chromium.display()));
    }
    let modules = e2e_dir().join("node_modules");
    for package in ["playwright-core/package.json", "axe-core/axe.min.js"] {
        if !modules.join(package).is_file() {
            return Err(format!(
                "the npm packages are not installed ({} missing)",
                modules.join(package).display()
            ));
        }
    }
    let node = std::process::Command::new("node").arg("--version").output();
    match node {
        Ok(out) if out.status.success() => Ok(chromium),
        _ => Err("Node.js is not installed".to_owned()),
    }
}

/// A management call on the gateway's port with the license's master key.
async fn master_call(t: &TestStack, method: reqwest::Method, path: &str, terminal: Option<&str>, body: Value) -> Value {
    let mut request = t
        .http
        .request(method, format!("{}{path}", t.gateway))
        .bearer_auth(&t.creds.license_key)
        .json(&body);
    if let Some(id) = terminal {
        request = request.header("X-Terminal-Id", id);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{path}: {status} {body}");
    body
}

/// Prop-firm rules on the simulated terminal and a news guard on the license.
async fn rules_and_guard(t: &TestStack) {
    master_call(
        t,
        reqwest::Method::PUT,
        "/api/prop-firm-rules",
        Some(t.terminal(0)),
        json!({ "preset": "generic", "initial_balance": 10000 }),
    )
    .await;
    master_call(
        t,
        reqwest::Method::PUT,
        "/api/news-guard",
        None,
        json!({ "symbols": ["EURUSD"] }),
    )
    .await;
}

/// Starts a simulated terminal's agent with `key` (the installation id is
/// the same for every agent of this test, so that a rotated key's binding
/// holds for the agent given the new key).
fn start_agent(t: &TestStack, key: &str, index: u32) -> AgentHandle {
    let sim = Simulator::new(
        SimSettings::demo(10 + index),
        Arc::new(SystemClock::starting_at(WEDNESDAY_NOON, 1.0)),
    );
    tradeterm_sim::spawn_agent(
        sim,
        AgentSettings {
            url: t.stack.agent_urls.websocket.clone(),
            terminal_key: key.to_owned(),
            uid: "dashboard-browser-test".to_owned(),
            ca_file: None,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_dashboard_in_a_real_browser() {
    let chromium = match browser_tools() {
        Ok(path) => path,
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{why}: `cargo xtask browser` installs Chromium and the npm packages of crates/dashboard/e2e"
            );
            eprintln!("SKIPPED: {why}; the dashboard was not tested in a browser (`cargo xtask browser`)");
            return;
        }
    };
    let t = crate::harness::spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    rules_and_guard(&t).await;
    let store = &t.stack.store;
    let (other, other_master) = store.create_license("Other desk", Tier::Pro).await.unwrap();
    let (other_terminal, _) = store.create_terminal(&other.id, "Other desk MT5").await.unwrap();

    let mut command = tokio::process::Command::new("node");
    command
        .arg("dashboard.test.mjs")
        .current_dir(e2e_dir())
        .env("TT_DASHBOARD_URL", &t.gateway)
        .env("TT_REST_URL", &t.rest)
        .env("TT_MASTER_KEY_A", &t.creds.license_key)
        .env("TT_TERMINAL_A", t.terminal(0))
        .env("TT_MASTER_KEY_B", other_master.expose())
        .env("TT_TERMINAL_B", &other_terminal.id)
        .env("TT_CHROMIUM", &chromium)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = std::env::var_os("TT_SCREENSHOTS") {
        command.env("TT_SCREENSHOTS", dir);
    }
    let mut child = command.spawn().expect("starting node");

    // The test runner's report (stdout) is passed on; stderr carries the
    // control lines (`TT_SIM <key>`: start an agent with that key).
    let stdout = child.stdout.take().unwrap();
    let report = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        let mut all = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("node| {line}");
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut agents = Vec::new();
    let outcome = tokio::time::timeout(Duration::from_secs(240), async {
        while let Ok(Some(line)) = lines.next_line().await {
            match line.strip_prefix("TT_SIM ") {
                Some(key) => agents.push(start_agent(&t, key.trim(), agents.len() as u32)),
                None => eprintln!("node! {line}"),
            }
        }
        child.wait().await
    })
    .await;
    for agent in agents {
        agent.shutdown().await;
    }
    let report = report.await.unwrap_or_default();
    let status = outcome
        .expect("the browser tests did not finish within 4 minutes")
        .expect("waiting for node");
    assert!(status.success(), "the browser tests failed ({status}):\n{report}");
    assert!(report.contains("# fail 0"), "node's test runner reported:\n{report}");
    t.stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_answers_fit_the_rules_panel() {
    let t = crate::harness::spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let services = tradeterm::Settings::default()
        .services(Arc::new(t.stack.gateway.clone()), t.stack.store.clone())
        .unwrap();
    let insights = ToolInsights::new(services);
    let license = t.stack.store.license(&t.creds.license_id).await.unwrap().unwrap();
    let terminal = t.terminal(0).to_owned();

    // Before any rule: the prop-firm status is "not found", the others answer.
    let e = insights
        .get(&license, &terminal, Insight::PropFirmStatus)
        .await
        .unwrap_err();
    assert_eq!(e.code, "NOT_FOUND", "{e:?}");

    rules_and_guard(&t).await;
    for insight in Insight::ALL {
        let answer = insights.get(&license, &terminal, insight.clone()).await.unwrap();
        insight.check(&answer).unwrap();
    }
    let status = insights
        .get(&license, &terminal, Insight::PropFirmStatus)
        .await
        .unwrap();
    assert!(
        ["ok", "warning", "critical", "breached"].contains(&status["verdict"].as_str().unwrap()),
        "{status}"
    );
    assert!(status["max_safe_risk_percent"].as_f64().is_some(), "{status}");
    let guard = insights
        .get(&license, &terminal, Insight::NewsGuardStatus)
        .await
        .unwrap();
    assert_eq!(guard["active"], true);

    // Another license's terminal is not this license's.
    let (other, _) = t.stack.store.create_license("Other", Tier::Pro).await.unwrap();
    let e = insights
        .get(&other, &terminal, Insight::PropFirmStatus)
        .await
        .unwrap_err();
    assert_eq!(e.code, "NOT_FOUND", "{e:?}");
    t.stack.stop().await;
}
