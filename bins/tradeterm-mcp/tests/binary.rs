//! The `tradeterm-mcp` binary in a scaled-out layout: a gateway with its
//! internal dispatch route and a simulated terminal (the single-node stack
//! provides both), and the MCP server as a separate process reaching the
//! terminal over HTTP dispatch.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tradeterm::stack::{Stack, StackOptions};

/// Wednesday 2026-11-18 12:00 UTC: markets open.
const WEDNESDAY_NOON: i64 = 1_795_003_200_000;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standalone_server_serves_tools_through_a_remote_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let settings = tradeterm::Settings {
        port: 0,
        gateway_port: 0,
        mcp_port: 0,
        gateway_internal_token: Some("internal-secret-for-tests".into()),
        ..tradeterm::Settings::default()
    };
    let stack = Stack::start(StackOptions {
        data_dir: dir.path().to_path_buf(),
        sim_terminals: 1,
        sim_allow_trading: false,
        sim_start_ms: Some(WEDNESDAY_NOON),
        settings,
    })
    .await
    .unwrap();
    assert!(stack.wait_connected(Duration::from_secs(15)).await);
    let creds = stack.credentials.clone().unwrap();

    // The stack's SQLite file, shared on purpose (an explicit URL: the
    // binary never opens a private file of its own).
    let database = format!("sqlite://{}?mode=rwc", dir.path().join("tradeterm.db").display());

    // Without the public key the binary refuses to start.
    let out = Command::new(env!("CARGO_BIN_EXE_tradeterm-mcp"))
        .env_clear()
        .env("DATABASE_URL", &database)
        .env("GATEWAY_INTERNAL_TOKEN", "internal-secret-for-tests")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("JWT_PUBLIC_KEY_PATH is missing"), "{stderr}");

    let port = free_port();
    let _server = Killed(
        Command::new(env!("CARGO_BIN_EXE_tradeterm-mcp"))
            .env_clear()
            .env("DATABASE_URL", &database)
            .env("MCP_PORT", port.to_string())
            .env("GATEWAY_URL", format!("http://127.0.0.1:{}", stack.gateway_port))
            .env("GATEWAY_INTERNAL_TOKEN", "internal-secret-for-tests")
            .env("JWT_PUBLIC_KEY_PATH", dir.path().join("keys/jwt-public.pem"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let up = http
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200);
        if up {
            break;
        }
        assert!(Instant::now() < deadline, "tradeterm-mcp did not come up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let transport = StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{port}/mcp/v1"))
            .auth_header(creds.terminals[0].key.clone()),
    );
    let client = ().serve(transport).await.unwrap();
    let args = json!({ "symbol": "EURUSD" }).as_object().cloned().unwrap();
    let r = client
        .call_tool(CallToolRequestParams::new("get_tick").with_arguments(args))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let tick = r.structured_content.unwrap();
    assert!(tick["bid"].as_f64().unwrap() < tick["ask"].as_f64().unwrap(), "{tick}");
    client.cancel().await.unwrap();
    stack.stop().await;
}
