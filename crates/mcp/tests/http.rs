//! The MCP server over raw HTTP, as any MCP client speaks to it: a session
//! opened with `initialize`, closed with `DELETE /mcp/v1` (204, then 404 for
//! the closed session), and the tool list's schemas (only standard `format`
//! values; integer widths as bounds).
//!
//! The gateway is a stand-in that signs session tokens for one terminal key;
//! the store is an in-memory SQLite with that terminal bound.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
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

/// Knows no terminal (no test here calls a terminal tool).
#[derive(Debug)]
struct NoTerminals;

#[async_trait]
impl Dispatch for NoTerminals {
    async fn execute(&self, _: &str, _: &str, _: Command, _: Duration) -> Result<CommandResult, DispatchError> {
        Err(DispatchError::NotFound)
    }

    async fn terminals(&self, _: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        Err(DispatchError::NotFound)
    }
}

struct App {
    url: String,
    key: String,
    http: reqwest::Client,
    handle: McpHandle,
    state: McpState,
}

/// A gateway stand-in answering `POST /api/token` for `key` only.
async fn fake_gateway(signer: TokenSigner, key: String, license: String, terminal: String, cred_id: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let route = axum::routing::post(move |headers: axum::http::HeaderMap| {
        let (signer, key, license, terminal, cred_id) = (
            signer.clone(),
            key.clone(),
            license.clone(),
            terminal.clone(),
            cred_id.clone(),
        );
        async move {
            let given = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            if given != Some(key.as_str()) {
                let body = json!({ "error": { "code": "UNAUTHORIZED", "message": "unknown key" } });
                return (axum::http::StatusCode::UNAUTHORIZED, axum::Json(body));
            }
            let now = chrono::Utc::now().timestamp();
            let claims = Claims {
                iss: String::new(),
                aud: String::new(),
                sub: license,
                iat: now,
                nbf: now,
                exp: now + 3600,
                jti: "jti-test".into(),
                tier: Tier::Pro,
                caps: Tier::Pro.capabilities().to_vec(),
                cred: CredentialKind::TerminalKey,
                cred_id,
                terminal: Some(terminal),
                scope: None,
                cred_gen: 0,
            };
            let token = signer.sign(claims).unwrap();
            (
                axum::http::StatusCode::OK,
                axum::Json(json!({ "token": token, "expires_in": 3600 })),
            )
        }
    });
    let app = axum::Router::new().route("/api/token", route);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}")
}

async fn spawn_app() -> App {
    spawn_apps(1, None, "tkey-test").await.remove(0)
}

/// `n` MCP instances sharing one store, one gateway and `redis` (as
/// processes behind a load balancer do); the gateway's tokens name `cred_id`.
async fn spawn_apps(n: usize, redis: Option<deadpool_redis::Pool>, cred_id: &str) -> Vec<App> {
    spawn_apps_with(n, redis, cred_id, McpSettings::default()).await
}

/// [`spawn_apps`] with these MCP settings.
async fn spawn_apps_with(
    n: usize,
    redis: Option<deadpool_redis::Pool>,
    cred_id: &str,
    settings: McpSettings,
) -> Vec<App> {
    let (private, public) = generate_rsa_pem_pair().unwrap();
    let signer = TokenSigner::from_pem(private.as_bytes(), DEFAULT_ISSUER, DEFAULT_AUDIENCE).unwrap();
    let store = SqlStore::connect("sqlite::memory:").await.unwrap();
    let (license, _) = store.create_license("test", Tier::Pro).await.unwrap();
    let (terminal, key) = store.create_terminal(&license.id, "t1").await.unwrap();
    store.bind_terminal(&terminal.id, "fingerprint").await.unwrap();
    let key = key.expose().to_owned();
    let gateway = fake_gateway(
        signer,
        key.clone(),
        license.id.clone(),
        terminal.id.clone(),
        cred_id.to_owned(),
    )
    .await;
    let mut services = Services::new(Arc::new(NoTerminals), Arc::new(store));
    services.rate_limits.redis = redis;
    let services = Arc::new(services);
    let mut apps = Vec::new();
    for _ in 0..n {
        let verifier = TokenVerifier::from_pem(public.as_bytes(), DEFAULT_ISSUER, DEFAULT_AUDIENCE).unwrap();
        apps.push(spawn_instance(
            services.clone(),
            verifier,
            &gateway,
            key.clone(),
            settings.clone(),
        ));
    }
    apps
}

fn spawn_instance(
    services: Arc<Services>,
    verifier: TokenVerifier,
    gateway: &str,
    key: String,
    settings: McpSettings,
) -> App {
    let state = McpState::new(settings, services, verifier, GatewayClient::new(gateway).unwrap());
    let server = McpServer::build(state.clone(), TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
    let url = format!("http://127.0.0.1:{}{MCP_PATH}", server.port());
    let handle = server.handle();
    tokio::spawn(server.run_until_stopped());
    App {
        url,
        key,
        http: reqwest::Client::new(),
        handle,
        state,
    }
}

/// The JSON-RPC message of an answer: plain JSON, or the first SSE `data:`
/// event that holds one (rmcp sends an empty priming event first).
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
    /// Token exchanges this instance made at the gateway.
    fn exchanges(&self) -> u64 {
        self.state.authenticator().exchanges()
    }

    fn request(&self, method: reqwest::Method, session: Option<&str>) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .request(method, &self.url)
            .bearer_auth(&self.key)
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = session {
            r = r.header("mcp-session-id", s).header("mcp-protocol-version", PROTOCOL);
        }
        r
    }

    async fn post(&self, session: Option<&str>, body: Value) -> reqwest::Response {
        self.request(reqwest::Method::POST, session)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// `initialize` + `notifications/initialized`; the session id.
    async fn open_session(&self) -> String {
        self.open_session_with("", &[]).await
    }

    /// `initialize` to `/mcp/v1{query}` with extra `headers`; the answer.
    async fn initialize_with(&self, query: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut r = self
            .http
            .post(format!("{}{query}", self.url))
            .bearer_auth(&self.key)
            .header("accept", "application/json, text/event-stream");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } },
        }))
        .send()
        .await
        .unwrap()
    }

    /// A session opened on `/mcp/v1{query}` with extra `headers`; its id.
    async fn open_session_with(&self, query: &str, headers: &[(&str, &str)]) -> String {
        let init = self.initialize_with(query, headers).await;
        assert_eq!(init.status(), 200);
        let session = init.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let answer = message(&init.text().await.unwrap());
        assert_eq!(answer["result"]["protocolVersion"], PROTOCOL, "{answer}");
        let done = self
            .post(
                Some(&session),
                json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            )
            .await;
        assert_eq!(done.status(), 202);
        session
    }

    async fn list_tools(&self, session: &str) -> reqwest::Response {
        self.post(
            Some(session),
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
        )
        .await
    }
}

/// Two instances sharing Redis: once the gateway marks the terminal key
/// revoked (as its rotation does), the very next request on each instance is
/// refused, although both hold a cached session token for the key.
#[tokio::test]
async fn a_rotated_key_is_refused_at_once_on_every_instance_sharing_redis() {
    let pool = deadpool_redis::Config::from_url("redis://127.0.0.1:6379")
        .create_pool(Some(deadpool_redis::Runtime::Tokio1))
        .unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let cred_id = format!("tkey-mcp-revocation-{}-{nanos}", std::process::id());
    let apps = spawn_apps(2, Some(pool.clone()), &cred_id).await;
    let mut sessions = Vec::new();
    for app in &apps {
        let session = app.open_session().await;
        assert_eq!(app.list_tools(&session).await.status(), 200);
        sessions.push(session);
    }
    let exchanges: Vec<u64> = apps.iter().map(|a| a.exchanges()).collect();

    tradeterm_tools::ratelimit::mark_revoked(&pool, &cred_id).await.unwrap();
    for (app, session) in apps.iter().zip(&sessions) {
        let refused = app.list_tools(session).await;
        assert_eq!(refused.status(), 401);
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("revoked or rotated"),
            "{body}"
        );
    }
    for (app, session) in apps.iter().zip(&sessions) {
        assert_eq!(app.list_tools(session).await.status(), 401, "and stays refused");
    }
    // Refused by the mark although the fake gateway here grants every
    // exchange: from the cache, or (the revocation listener dropped the
    // cached grant) after at most one exchange a request, whose token is
    // still of the marked credential.
    let after: Vec<u64> = apps.iter().map(|a| a.exchanges()).collect();
    for (a, b) in after.iter().zip(&exchanges) {
        assert!(
            *a <= b + 2,
            "at most one exchange a request: {after:?} after {exchanges:?}"
        );
    }
    for app in &apps {
        app.handle.stop();
    }
}

#[tokio::test]
async fn closing_a_session_answers_204_and_the_session_is_gone() {
    let app = spawn_app().await;
    let session = app.open_session().await;
    let listed = app.list_tools(&session).await;
    assert_eq!(listed.status(), 200);
    assert!(message(&listed.text().await.unwrap())["result"]["tools"].is_array());

    let closed = app
        .request(reqwest::Method::DELETE, Some(&session))
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204, "DELETE of a live session");
    assert!(closed.bytes().await.unwrap().is_empty());

    // The closed session is unknown from now on: 404, as MCP says.
    let after = app.list_tools(&session).await;
    assert_eq!(after.status(), 404, "a request of the closed session");
    let stream = app
        .request(reqwest::Method::GET, Some(&session))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 404, "GET stream of the closed session");
    let again = app
        .request(reqwest::Method::DELETE, Some(&session))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404, "DELETE of the closed session");

    // A DELETE without a session id is still refused by rmcp (400), and an
    // unauthenticated one never reaches it (401).
    let no_id = app.request(reqwest::Method::DELETE, None).send().await.unwrap();
    assert_eq!(no_id.status(), 400);
    let anonymous = app
        .http
        .delete(&app.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    // Other sessions are untouched by the close.
    let other = app.open_session().await;
    assert_eq!(app.list_tools(&other).await.status(), 200);
    let closed = app.request(reqwest::Method::DELETE, Some(&other)).send().await.unwrap();
    assert_eq!(closed.status(), 204);
    app.handle.stop();
}

/// Every `format` value in a schema (skipping literal data: `default`,
/// `examples`, `const`, `enum`), with where it is.
fn formats(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if ["default", "examples", "example", "const", "enum"].contains(&k.as_str()) {
                    continue;
                }
                if k == "format"
                    && let Some(f) = x.as_str()
                {
                    out.push((format!("{at}/format"), f.to_owned()));
                }
                formats(x, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                formats(x, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn listed_schemas_use_only_standard_formats_and_state_integer_widths() {
    let app = spawn_app().await;
    let session = app.open_session().await;
    let listed = app.list_tools(&session).await;
    assert_eq!(listed.status(), 200);
    let answer = message(&listed.text().await.unwrap());
    let tools = answer["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), tradeterm_mcp::mcp_tools().len());

    let allowed: BTreeSet<&str> = tradeterm_tools::schema::STANDARD_FORMATS.iter().copied().collect();
    let mut found = Vec::new();
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        formats(&tool["inputSchema"], &format!("{name}/inputSchema"), &mut found);
        formats(&tool["outputSchema"], &format!("{name}/outputSchema"), &mut found);
    }
    let bad: Vec<&(String, String)> = found.iter().filter(|(_, f)| !allowed.contains(f.as_str())).collect();
    assert!(bad.is_empty(), "non-standard formats: {bad:?}");

    // `get_bars.count` states the range its check enforces; `place_order`'s
    // `deviation_points`, a `u32` with no other bound, its width.
    let bars = tools.iter().find(|t| t["name"] == "get_bars").expect("get_bars");
    let count = &bars["inputSchema"]["properties"]["count"];
    assert_eq!(count["minimum"], 1, "{count}");
    assert_eq!(count["maximum"], 10_000, "{count}");
    let order = tools.iter().find(|t| t["name"] == "place_order").expect("place_order");
    let deviation = &order["inputSchema"]["properties"]["deviation_points"];
    assert_eq!(deviation["minimum"], 0, "{deviation}");
    assert_eq!(deviation["maximum"], 4_294_967_295_u64, "{deviation}");
    app.handle.stop();
}

/// The official MCP Python SDK (pinned in `scripts/requirements-test.txt`)
/// over streamable HTTP: list the tools, leave, and the session close it
/// sends at the end draws no "Session termination failed" warning. Fails,
/// never skips, without the package.
const SDK_CLIENT: &str = r#"
import asyncio, logging, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

async def main(url, key):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            tools = (await client.list_tools()).tools
            print(len(tools))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"#;

#[tokio::test]
async fn the_python_sdk_closes_its_session_without_a_warning() {
    let app = spawn_app().await;
    let (url, key) = (app.url.clone(), app.key.clone());
    // The server runs on this test's runtime: the client runs off it.
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .args(["-c", SDK_CLIENT, &url, &key])
            .output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("python3 is required for this test: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named"),
        "the MCP Python SDK is missing: run `cargo xtask venv` (or `pip install -r scripts/requirements-test.txt`) and put its bin first in PATH\n{stderr}"
    );
    assert!(out.status.success(), "SDK client failed:\n{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), tradeterm_mcp::mcp_tools().len().to_string(), "{stderr}");
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
    app.handle.stop();
}

/// The `result` of a JSON-RPC call in `session`.
async fn rpc(app: &App, session: &str, method: &str, params: Value) -> Value {
    let r = app
        .post(
            Some(session),
            json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }),
        )
        .await;
    assert_eq!(r.status(), 200);
    message(&r.text().await.unwrap())
}

fn names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[allow(clippy::print_stdout, reason = "the measured size is the benchmark's output")]
#[tokio::test]
async fn the_default_tool_list_fits_in_48_kib_with_every_tool() {
    let app = spawn_app().await;
    let session = app.open_session().await;
    let answer = rpc(&app, &session, "tools/list", json!({})).await;
    let bytes = serde_json::to_vec(&answer["result"]).unwrap().len();
    let tools = answer["result"]["tools"].as_array().unwrap();
    println!(
        "tools/list (default): {} tools, {bytes} bytes of JSON (budget level {})",
        tools.len(),
        tradeterm_mcp::lean_level()
    );
    assert!(
        bytes <= 48 * 1024,
        "the default tools/list is {bytes} bytes, over 48 KiB"
    );
    let listed: BTreeSet<String> = names(&answer).into_iter().collect();
    for t in tradeterm_tools::mcp_catalog() {
        assert!(listed.contains(t.name), "{} is missing", t.name);
    }
    for name in tradeterm_tools::MASTER_KEY_ONLY {
        assert!(!listed.contains(*name), "{name} (master key only) is listed");
    }
    assert!(listed.contains("set_mode") && listed.contains("get_mode"));
    assert!(
        tools.iter().all(|t| t.get("outputSchema").is_none()),
        "no output schemas by default"
    );
    // Constraints survive: place_order's required inputs and order types.
    let place = tools.iter().find(|t| t["name"] == "place_order").unwrap();
    assert_eq!(
        place["inputSchema"]["required"],
        json!(["symbol", "order_type", "volume"])
    );
    assert_eq!(place["inputSchema"]["additionalProperties"], false);
    // A trading tool says it is destructive (explicitly), and is neither
    // read-only nor idempotent (MCP's defaults, not written).
    assert_eq!(place["annotations"]["destructiveHint"], true);
    let hint = |name: &str| place["annotations"][name].as_bool().unwrap_or(false);
    assert!(!hint("readOnlyHint") && !hint("idempotentHint"));
    app.handle.stop();
}

#[tokio::test]
async fn output_schemas_are_sent_on_request() {
    let app = spawn_app().await;
    for (query, headers) in [
        ("?output_schemas=true", vec![]),
        ("", vec![("X-MCP-Output-Schemas", "true")]),
    ] {
        let session = app.open_session_with(query, &headers).await;
        let answer = rpc(&app, &session, "tools/list", json!({})).await;
        let tools = answer["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), tradeterm_mcp::mcp_tools().len());
        assert!(
            tools.iter().all(|t| t["outputSchema"]["type"] == "object"),
            "{query} {headers:?}: every tool has its output schema"
        );
    }
    app.handle.stop();
}

#[tokio::test]
async fn a_session_lists_and_calls_only_its_groups() {
    let app = spawn_app().await;
    let by_query = app.open_session_with("?groups=market,prop-firm", &[]).await;
    let by_header = app
        .open_session_with("", &[("X-MCP-Tool-Groups", "prop-firm, market")])
        .await;
    for session in [&by_query, &by_header] {
        let listed = names(&rpc(&app, session, "tools/list", json!({})).await);
        for expected in ["get_tick", "get_bars", "get_prop_firm_status", "set_mode", "get_mode"] {
            assert!(listed.contains(&expected.to_owned()), "{expected} in {listed:?}");
        }
        for absent in ["place_order", "get_journal", "detect_structure"] {
            assert!(!listed.contains(&absent.to_owned()), "{absent} in {listed:?}");
        }
        let every = listed.iter().all(|n| {
            tradeterm_mcp::SESSION_TOOLS.contains(&n.as_str())
                || matches!(
                    tradeterm_tools::groups::group_of(n),
                    tradeterm_tools::groups::ToolGroup::Market | tradeterm_tools::groups::ToolGroup::PropFirm
                )
        });
        assert!(every, "{listed:?}");
    }
    // A tool outside the session's groups is refused with a clear error.
    let refused = rpc(
        &app,
        &by_query,
        "tools/call",
        json!({ "name": "place_order", "arguments": { "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01 } }),
    )
    .await;
    let error = &refused["error"];
    assert_eq!(error["code"], -32602, "{refused}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("not enabled in this session"),
        "{refused}"
    );
    assert_eq!(error["data"]["code"], "TOOL_NOT_ENABLED");
    assert_eq!(error["data"]["group"], "trading");
    // Session tools stay callable.
    let mode = rpc(
        &app,
        &by_query,
        "tools/call",
        json!({ "name": "get_mode", "arguments": {} }),
    )
    .await;
    assert_eq!(mode["result"]["structuredContent"]["mode"], "live", "{mode}");
    // The default session still lists everything.
    let all = names(&rpc(&app, &app.open_session().await, "tools/list", json!({})).await);
    assert_eq!(all.len(), tradeterm_mcp::mcp_tools().len());
    // An unknown group is refused at initialize.
    let bad = app.initialize_with("?groups=market,nonsense", &[]).await;
    let text = bad.text().await.unwrap();
    assert!(text.contains("unknown tool group `nonsense`"), "{text}");
    app.handle.stop();
}

#[tokio::test]
async fn prompts_are_listed_and_return_workflow_messages() {
    let app = spawn_app().await;
    let session = app.open_session().await;
    let listed = rpc(&app, &session, "prompts/list", json!({})).await;
    let prompts: Vec<&str> = listed["result"]["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["pre_trade_check", "market_brief", "journal_review"]);
    let got = rpc(
        &app,
        &session,
        "prompts/get",
        json!({ "name": "pre_trade_check", "arguments": { "symbol": "EURUSD", "side": "sell" } }),
    )
    .await;
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{got}"));
    assert!(
        text.contains("sell of EURUSD") && text.contains("calculate_position_size"),
        "{text}"
    );
    assert_eq!(got["result"]["messages"][0]["role"], "user");
    let missing = rpc(
        &app,
        &session,
        "prompts/get",
        json!({ "name": "pre_trade_check", "arguments": {} }),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    app.handle.stop();
}

/// The official MCP Python SDK over streamable HTTP lists the tools by
/// default, with groups, with output schemas, and gets a prompt
/// (`scripts/interop/mcp_lists.py`); it also counts the default list's
/// tokens with tiktoken (`cl100k_base`).
#[allow(clippy::print_stdout, reason = "the measured size is the benchmark's output")]
#[tokio::test]
async fn the_python_sdk_lists_tools_by_group_and_with_output_schemas_and_gets_a_prompt() {
    let app = spawn_app().await;
    let (url, key) = (app.url.clone(), app.key.clone());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop/mcp_lists.py");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg(script)
            .args(["--url", &url])
            .env("TRADETERM_TERMINAL_KEY", key)
            .output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("python3 is required for this test: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDK script failed (run `pip install -r scripts/requirements-test.txt` and put the venv first in PATH):\n{stdout}\n{stderr}"
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("summary line: {e}: {stdout}"));
    println!("{summary}");
    let all = tradeterm_mcp::mcp_tools().len() as u64;
    assert_eq!(summary["default_tools"], all);
    assert_eq!(summary["default_output_schemas"], 0);
    assert_eq!(summary["schema_tools"], all);
    assert_eq!(summary["schema_output_schemas"], all);
    let market = tradeterm_mcp::list_for(&tradeterm_mcp::ToolListOptions {
        groups: vec![
            tradeterm_tools::groups::ToolGroup::Market,
            tradeterm_tools::groups::ToolGroup::Trading,
        ],
        output_schemas: false,
    })
    .len() as u64;
    assert_eq!(summary["group_tools"], market);
    assert!(summary["default_bytes"].as_u64().unwrap() <= 48 * 1024, "{summary}");
    assert!(summary["default_tokens"].as_u64().unwrap() > 1000, "{summary}");
    assert_eq!(
        summary["prompts"],
        json!(["pre_trade_check", "market_brief", "journal_review"])
    );
    assert!(summary["prompt_mentions_key_levels"].as_bool().unwrap(), "{summary}");
    app.handle.stop();
}

/// Polls `done` every 20 ms until it holds; panics after `limit`.
async fn eventually(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + limit;
    while !done() {
        assert!(std::time::Instant::now() < until, "{what} not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `structuredContent` of a session tool's answer.
async fn mode_of(app: &App, session: &str, tool: &str, args: Value) -> Value {
    let answer = rpc(app, session, "tools/call", json!({ "name": tool, "arguments": args })).await;
    answer["result"]["structuredContent"]["mode"].clone()
}

/// An idle session gives its rmcp worker up (parked) and keeps what it is:
/// its next request brings it back in `paper` mode, with its tool list.
#[tokio::test]
async fn an_idle_session_is_parked_and_comes_back_as_it_was() {
    let settings = McpSettings {
        session_park: Duration::from_millis(100),
        ..McpSettings::default()
    };
    let app = spawn_apps_with(1, None, "tkey-park", settings).await.remove(0);
    let session = app.open_session_with("?groups=market", &[]).await;
    assert_eq!(
        mode_of(&app, &session, "set_mode", json!({ "mode": "paper" })).await,
        "paper"
    );
    let listed = names(&rpc(&app, &session, "tools/list", json!({})).await);
    eventually("the session parked", Duration::from_secs(5), || {
        app.state.sessions_parked() == 1
    })
    .await;
    assert_eq!(
        app.state.open_sessions("tkey-park"),
        1,
        "a parked session keeps its slot"
    );
    // Back on its next request, as it was.
    assert_eq!(mode_of(&app, &session, "get_mode", json!({})).await, "paper");
    assert_eq!(app.state.sessions_parked(), 0);
    assert_eq!(names(&rpc(&app, &session, "tools/list", json!({})).await), listed);
    // Parked again, then closed: 204, and gone.
    eventually("the session parked again", Duration::from_secs(5), || {
        app.state.sessions_parked() == 1
    })
    .await;
    let closed = app
        .request(reqwest::Method::DELETE, Some(&session))
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204, "DELETE of a parked session");
    assert_eq!(app.list_tools(&session).await.status(), 404);
    eventually("the slot freed", Duration::from_secs(5), || {
        app.state.open_sessions("tkey-park") == 0
    })
    .await;
    assert_eq!(app.state.sessions_kept(), 0);
}

/// `MCP_MAX_SESSIONS_PER_KEY` and `MCP_SESSION_IDLE_SECS`, parked sessions
/// counted: one session over the cap is refused with 429 `RATE_LIMITED`;
/// idle ones expire (404 from then on) and free the key's slots.
#[tokio::test]
async fn sessions_over_the_cap_are_refused_and_idle_ones_expire() {
    let settings = McpSettings {
        max_sessions_per_key: 3,
        session_idle: Duration::from_secs(1),
        session_park: Duration::from_millis(100),
        ..McpSettings::default()
    };
    let app = spawn_apps_with(1, None, "tkey-cap", settings).await.remove(0);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(app.open_session().await);
    }
    assert_eq!(app.state.open_sessions("tkey-cap"), 3);
    let refused = app.initialize_with("", &[]).await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");
    // Parked or not, still counted until they expire.
    eventually("the sessions parked", Duration::from_secs(5), || {
        app.state.sessions_parked() == 3 || app.state.sessions_kept() < 3
    })
    .await;
    assert_eq!(app.initialize_with("", &[]).await.status(), 429);
    eventually("the idle sessions expired", Duration::from_secs(10), || {
        app.state.sessions_kept() == 0 && app.state.open_sessions("tkey-cap") == 0
    })
    .await;
    for session in &held {
        assert_eq!(app.list_tools(session).await.status(), 404, "an expired session");
    }
    // The key's slots are free again.
    app.open_session().await;
    assert_eq!(app.state.open_sessions("tkey-cap"), 1);
}
