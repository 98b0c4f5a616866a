//! `LOG_FORMAT=json` on `tradeterm serve`: every log line is one JSON
//! object, and one request's id (`X-Request-Id`) is on the REST access
//! line, on the gateway's dispatch line and, inside the agent's request id,
//! on the simulated agent's line (docs/observability.md), even with a
//! `RUST_LOG` that keeps only warnings elsewhere. The metrics of that
//! request show on every listener of the process.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tradeterm_telemetry::names;
use tradeterm_telemetry::scrape::Scrape;

use crate::harness::Api;
use crate::harness::process::{KillOnDrop, free_ports, tradeterm};
use crate::harness::wait::{wait_until, wait_until_blocking};

const RID: &str = "ext-json-rid-1";

/// Whether the line's span, or one of its enclosing spans, carries the request id.
fn in_request(line: &Value, rid: &str) -> bool {
    line["span"]["request_id"] == rid
        || line["spans"]
            .as_array()
            .is_some_and(|spans| spans.iter().any(|s| s["request_id"] == rid))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_carry_the_request_id_from_rest_through_the_gateway_to_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let [rest, gw, mcp] = free_ports();
    let mut child = tradeterm()
        .envs([
            ("PORT", rest.to_string()),
            ("GATEWAY_PORT", gw.to_string()),
            ("MCP_PORT", mcp.to_string()),
            ("LOG_FORMAT", "json".to_owned()),
            (
                "RUST_LOG",
                "warn,tradeterm_gateway=debug,tradeterm_sim=debug,tradeterm::access=debug".to_owned(),
            ),
        ])
        .args(["serve", "--sim-terminals", "1", "--data-dir"])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let child = KillOnDrop(child);
    let logs = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = logs.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    let started = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("Stop with Ctrl-C."))
    });
    let until = Instant::now() + Duration::from_secs(60);
    while !started.is_finished() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(started.join().unwrap(), "serve started");
    let creds: Value = serde_json::from_slice(&std::fs::read(data.join("demo-credentials.json")).unwrap()).unwrap();
    let api_key = creds["api_key"].as_str().unwrap();
    let terminal = creds["terminals"][0]["id"].as_str().unwrap();

    // Retried with the same id until the simulated terminal answers.
    let base = format!("http://127.0.0.1:{rest}");
    let api = Api::new(&reqwest::Client::new(), &base).key(api_key).on(terminal);
    wait_until("the account through REST", Duration::from_secs(20), || async {
        let req = api
            .request(reqwest::Method::GET, "/api/v1/account/info")
            .header("x-request-id", RID);
        let r = Api::send_request("GET account", req).await;
        assert_eq!(r.headers["x-request-id"], RID);
        (r.status == 200).then_some(())
    })
    .await;
    // The same registry on every listener.
    let account = [
        ("service", "rest"),
        ("route", "/api/v1/account/info"),
        ("status", "200"),
    ];
    for port in [rest, gw, mcp] {
        let text = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            Scrape::parse(&text).value(names::HTTP_REQUESTS_TOTAL, &account) >= 1.0,
            "{port}"
        );
    }

    let status = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = child;
    wait_until_blocking("serve to stop", Duration::from_secs(30), || child.0.try_wait().unwrap());
    reader.join().unwrap();

    let lines = logs.lock().unwrap().clone();
    let parsed: Vec<Value> = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    assert!(parsed.len() >= 3, "{lines:#?}");
    for line in &parsed {
        for key in ["timestamp", "level", "target", "fields"] {
            assert!(line.get(key).is_some(), "`{key}` in {line}");
        }
    }
    let find = |what: &str, pred: &dyn Fn(&Value) -> bool| {
        parsed
            .iter()
            .find(|l| pred(l))
            .unwrap_or_else(|| panic!("{what} among:\n{lines:#?}"))
            .clone()
    };
    let access = find("the REST access line", &|l| {
        l["target"] == "tradeterm::access" && in_request(l, RID) && l["fields"]["status"] == 200
    });
    assert_eq!(access["fields"]["route"], "/api/v1/account/info");
    assert_eq!(access["span"]["service"], "rest");
    let dispatch = find("the gateway's dispatch line", &|l| {
        l["fields"]["message"] == "dispatch" && in_request(l, RID) && l["fields"]["outcome"] == "ok"
    });
    assert_eq!(dispatch["fields"]["cmd"], "account_info");
    assert!(dispatch["target"].as_str().unwrap().starts_with("tradeterm_gateway"));
    let agent = find("the agent's line", &|l| {
        l["fields"]["message"] == "request answered"
            && l["fields"]["request"]
                .as_str()
                .is_some_and(|id| id.starts_with(&format!("{RID}-")))
    });
    assert_eq!(agent["fields"]["command"], "account_info");
}
