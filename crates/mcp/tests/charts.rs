//! Charts over MCP: a catalog tool called with `"chart": true` answers its
//! structured result, the same JSON as text, and the chart as an image
//! content (`type: image`, `mimeType: image/png`, base64 `data`), which is
//! decoded here with the `png` crate. Raw JSON-RPC over streamable HTTP.
//!
//! The gateway is a stand-in that signs session tokens for one terminal key;
//! the terminal is a stand-in serving real hourly EURUSD bars (`data/market/`).

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Value, json};
use tradeterm_core::Bar;
use tradeterm_core::license::Tier;
use tradeterm_mcp::{MCP_PATH, McpHandle, McpServer, McpSettings, McpState};
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_protocol::token::{
    Claims, CredentialKind, DEFAULT_AUDIENCE, DEFAULT_ISSUER, TokenSigner, TokenVerifier, generate_rsa_pem_pair,
};
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError, TerminalStatus};
use tradeterm_store::{SqlStore, Store};
use tradeterm_tools::Services;

const PROTOCOL: &str = "2025-11-25";

/// Answers bar requests with the file's bars (`count` most recent, or a range).
#[derive(Debug)]
struct BarsTerminal(Vec<Bar>);

#[async_trait]
impl Dispatch for BarsTerminal {
    async fn execute(&self, _: &str, _: &str, command: Command, _: Duration) -> Result<CommandResult, DispatchError> {
        let Command::Bars {
            symbol,
            timeframe,
            count,
            from,
            to,
        } = command
        else {
            return Err(DispatchError::NotFound);
        };
        let bars = match from {
            Some(f) => self
                .0
                .iter()
                .filter(|b| b.time >= f && to.is_none_or(|t| b.time < t))
                .copied()
                .collect(),
            None => self.0[self.0.len() - count.unwrap_or(100) as usize..].to_vec(),
        };
        Ok(CommandResult::Bars {
            symbol,
            timeframe,
            bars,
        })
    }

    async fn terminals(&self, _: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        Err(DispatchError::NotFound)
    }
}

/// A gateway stand-in answering `POST /api/token` for `key` only.
async fn fake_gateway(signer: TokenSigner, key: String, license: String, terminal: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let route = axum::routing::post(move |headers: axum::http::HeaderMap| {
        let (signer, key, license, terminal) = (signer.clone(), key.clone(), license.clone(), terminal.clone());
        async move {
            let given = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            assert_eq!(given, Some(key.as_str()));
            let now = chrono::Utc::now().timestamp();
            let claims = Claims {
                iss: String::new(),
                aud: String::new(),
                sub: license,
                iat: now,
                nbf: now,
                exp: now + 3600,
                jti: "jti-charts".into(),
                tier: Tier::Pro,
                caps: Tier::Pro.capabilities().to_vec(),
                cred: CredentialKind::TerminalKey,
                cred_id: "tkey-charts".into(),
                terminal: Some(terminal),
                scope: None,
                cred_gen: 0,
            };
            axum::Json(json!({ "token": signer.sign(claims).unwrap(), "expires_in": 3600 }))
        }
    });
    let app = axum::Router::new().route("/api/token", route);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}")
}

struct App {
    url: String,
    key: String,
    http: reqwest::Client,
    handle: McpHandle,
}

async fn spawn_app() -> App {
    let (private, public) = generate_rsa_pem_pair().unwrap();
    let signer = TokenSigner::from_pem(private.as_bytes(), DEFAULT_ISSUER, DEFAULT_AUDIENCE).unwrap();
    let verifier = TokenVerifier::from_pem(public.as_bytes(), DEFAULT_ISSUER, DEFAULT_AUDIENCE).unwrap();
    let store = SqlStore::connect("sqlite::memory:").await.unwrap();
    let (license, _) = store.create_license("charts", Tier::Pro).await.unwrap();
    let (terminal, key) = store.create_terminal(&license.id, "t1").await.unwrap();
    store.bind_terminal(&terminal.id, "fingerprint").await.unwrap();
    let key = key.expose().to_owned();
    let gateway = fake_gateway(signer, key.clone(), license.id.clone(), terminal.id.clone()).await;
    let csv = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/market/eurusd_1h_backtesting.csv"
    ))
    .unwrap();
    let bars = tradeterm_core::bars::parse_csv(&csv).unwrap();
    let services = Arc::new(Services::new(Arc::new(BarsTerminal(bars)), Arc::new(store)));
    let server = McpServer::build(
        McpState::new(
            McpSettings::default(),
            services,
            verifier,
            GatewayClient::new(&gateway).unwrap(),
        ),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{}{MCP_PATH}", server.port());
    let handle = server.handle();
    tokio::spawn(server.run_until_stopped());
    App {
        url,
        key,
        http: reqwest::Client::new(),
        handle,
    }
}

/// The JSON-RPC message of an answer: plain JSON, or the first SSE `data:` event holding one.
fn message(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str(body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("jsonrpc").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))
}

impl App {
    async fn post(&self, session: Option<&str>, body: Value) -> reqwest::Response {
        let mut r = self
            .http
            .post(&self.url)
            .bearer_auth(&self.key)
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = session {
            r = r.header("mcp-session-id", s).header("mcp-protocol-version", PROTOCOL);
        }
        r.json(&body).send().await.unwrap()
    }

    async fn open_session(&self) -> String {
        let init = self
            .post(
                None,
                json!({
                    "jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": { "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "charts", "version": "1" } },
                }),
            )
            .await;
        assert_eq!(init.status(), 200);
        let session = init.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let done = self
            .post(
                Some(&session),
                json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            )
            .await;
        assert_eq!(done.status(), 202);
        session
    }

    /// The `result` of `tools/call`.
    async fn call(&self, session: &str, tool: &str, arguments: Value) -> Value {
        let r = self
            .post(
                Some(session),
                json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": tool, "arguments": arguments } }),
            )
            .await;
        assert_eq!(r.status(), 200);
        let answer = message(&r.text().await.unwrap());
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {answer}"))
    }
}

/// The PNG of an image content block, decoded: size and RGB pixels.
fn image(block: &Value) -> (u32, u32, Vec<[u8; 3]>) {
    assert_eq!(block["type"], "image", "{block}");
    assert_eq!(block["mimeType"], "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block["data"].as_str().unwrap())
        .unwrap();
    assert!(bytes.len() <= tradeterm_charts::MAX_PNG_BYTES);
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    let (w, h) = (reader.info().width, reader.info().height);
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    let pixels = buf[..frame.buffer_size()]
        .chunks(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (w, h, pixels)
}

#[tokio::test]
async fn chart_true_adds_an_image_content_beside_the_structured_result() {
    let app = spawn_app().await;
    let session = app.open_session().await;

    let result = app
        .call(
            &session,
            "get_bars",
            json!({ "symbol": "EURUSD", "timeframe": "H1", "count": 100, "chart": true }),
        )
        .await;
    assert_eq!(result["isError"], false, "{result}");
    let data = &result["structuredContent"];
    assert_eq!(data["bars"].as_array().unwrap().len(), 100);
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "text, then the image");
    assert_eq!(content[0]["type"], "text");
    assert_eq!(
        serde_json::from_str::<Value>(content[0]["text"].as_str().unwrap()).unwrap(),
        *data
    );
    let (w, h, pixels) = image(&content[1]);
    assert_eq!((w, h), (1200, 800));
    let colours: BTreeSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(colours.len() > 30);
    let green = pixels.iter().filter(|p| p[1] > 120 && p[0] < 80 && p[2] < 120).count();
    let red = pixels.iter().filter(|p| p[0] > 180 && p[1] < 80 && p[2] < 80).count();
    assert!(green > 1000 && red > 1000, "candles: {green} {red}");

    // Without the flag: text only, the same structured result.
    let plain = app
        .call(
            &session,
            "get_bars",
            json!({ "symbol": "EURUSD", "timeframe": "H1", "count": 100 }),
        )
        .await;
    assert_eq!(plain["content"].as_array().unwrap().len(), 1);
    assert_eq!(plain["structuredContent"], *data);

    // The structure chart: events over the bars they were found on.
    let structure = app
        .call(
            &session,
            "detect_structure",
            json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 500, "config": { "swing_length": 10 }, "chart": true }),
        )
        .await;
    assert_eq!(structure["isError"], false, "{structure}");
    let (w, h, _) = image(&structure["content"][1]);
    assert_eq!((w, h), (1200, 800));

    // A bad flag is a validation error; `chart` on a tool without a chart is an unknown field.
    for (tool, args) in [
        ("get_bars", json!({ "symbol": "EURUSD", "timeframe": "H1", "chart": 1 })),
        ("get_tick", json!({ "symbol": "EURUSD", "chart": true })),
    ] {
        let bad = app.call(&session, tool, args).await;
        assert_eq!(bad["isError"], true, "{tool}");
        assert_eq!(bad["structuredContent"]["code"], "VALIDATION_ERROR", "{tool}: {bad}");
    }
    app.handle.stop();
}

#[test]
fn the_lean_list_states_the_chart_flag_briefly() {
    for t in tradeterm_mcp::mcp_tools() {
        let chart = &t.input_schema.get("properties").and_then(|p| p.get("chart"));
        match tradeterm_tools::find(&t.name).and_then(|c| c.chart) {
            Some(_) => {
                let chart = chart.unwrap_or_else(|| panic!("{} lists `chart`", t.name));
                assert_eq!(chart["type"], "boolean");
                let d = chart["description"].as_str().unwrap();
                assert!(
                    d.starts_with("`true`: also return a PNG") && d.len() <= 60,
                    "{}: {d}",
                    t.name
                );
            }
            None => assert!(chart.is_none(), "{}", t.name),
        }
    }
}
