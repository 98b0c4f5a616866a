//! Observability of the running stack (docs/observability.md): `/metrics`
//! scraped before and after traffic on every listener, `/readyz` with Redis
//! up and down, and the request id in answers and error envelopes, through
//! a REST instance that reaches the gateway over HTTP too.
//!
//! The tests of this binary share one metrics registry (one process), so
//! counters are compared as "moved by at least".

use std::net::TcpListener;
use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};
use tradeterm_store::Tier;
use tradeterm_telemetry::names;
use tradeterm_telemetry::scrape::Scrape;

use crate::harness::mcp;
use crate::harness::{Api, Expect, Options, TestStack, spawn, spawn_with};

/// `GET /metrics` of the listener at `base`, parsed.
async fn scrape(t: &TestStack, base: &str) -> Scrape {
    let resp = t.http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{base}/metrics");
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    Scrape::parse(&resp.text().await.unwrap())
}

fn mcp_base(t: &TestStack) -> String {
    format!("http://127.0.0.1:{}", t.stack.mcp_port)
}

/// How much the series `name{labels}` moved between two scrapes.
fn moved(before: &Scrape, after: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    after.value(name, labels) - before.value(name, labels)
}

#[tokio::test]
async fn metrics_move_with_requests_dispatches_rate_limits_and_mcp_sessions() {
    // An hour-long window so the free tier's ten requests never straddle a reset.
    let t = spawn(Options {
        sims: 1,
        redis: true,
        window_ms: 3_600_000,
        ..Options::default()
    })
    .await;
    let before = scrape(&t, &t.rest).await;

    // A request that dispatches to the terminal, and one no route serves.
    t.api().on(t.terminal(0)).account().await.data();
    let r = t.api().send(Method::GET, "/api/v1/no/such/route", None).await;
    assert_eq!(r.status, 404);
    // A free-tier license: ten requests pass, the eleventh is limited.
    let (_, free_key) = t.other_license(Tier::Free).await;
    let free = t.api_as(&free_key);
    for i in 0..11 {
        let r = free.send(Method::GET, "/api/v1/journal", None).await;
        assert_eq!(r.status, if i < 10 { 200 } else { 429 }, "request {i}: {}", r.body);
    }
    // An MCP session with one tool call.
    let client = mcp::connect(&mcp::url(t.stack.mcp_port), &t.creds.terminals[0].key)
        .await
        .unwrap();
    let during = scrape(&t, &mcp_base(&t)).await;
    mcp::ok(&mcp::call(&client, "get_account_info", json!({})).await);

    let after = scrape(&t, &t.rest).await;
    let m = |name: &str, labels: &[(&str, &str)]| moved(&before, &after, name, labels);
    let account = [
        ("service", "rest"),
        ("route", "/api/v1/account/info"),
        ("method", "GET"),
        ("status", "200"),
    ];
    assert!(m(names::HTTP_REQUESTS_TOTAL, &account) >= 1.0);
    let latency = format!("{}_count", names::HTTP_REQUEST_DURATION_SECONDS);
    assert!(m(&latency, &[("service", "rest"), ("route", "/api/v1/account/info")]) >= 1.0);
    // Raw paths never become labels: an unknown path is `unmatched`.
    assert!(m(names::HTTP_REQUESTS_TOTAL, &[("route", "unmatched"), ("status", "404")]) >= 1.0);
    assert!(!after.has(names::HTTP_REQUESTS_TOTAL, &[("route", "/api/v1/no/such/route")]));
    let journal = [("route", "/api/v1/journal"), ("method", "GET")];
    assert!(m(names::HTTP_REQUESTS_TOTAL, &[journal[0], journal[1], ("status", "429")]) >= 1.0);
    // The dispatches of REST and MCP, counted where the agent is reached.
    let ok = [("side", "gateway"), ("command", "account_info"), ("outcome", "ok")];
    assert!(m(names::DISPATCH_TOTAL, &ok) >= 2.0);
    assert!(m(&format!("{}_count", names::DISPATCH_DURATION_SECONDS), &ok) >= 2.0);
    // Rate-limit decisions, counted in Redis.
    let decision = |d| [("bucket", "rest"), ("decision", d), ("counter", "redis")];
    assert!(m(names::RATE_LIMIT_DECISIONS_TOTAL, &decision("allowed")) >= 10.0);
    assert!(m(names::RATE_LIMIT_DECISIONS_TOTAL, &decision("limited")) >= 1.0);
    let mcp_bucket = [("bucket", "mcp"), ("decision", "allowed")];
    assert!(m(names::RATE_LIMIT_DECISIONS_TOTAL, &mcp_bucket) >= 1.0);
    // The MCP session and its requests.
    assert!(m(names::MCP_SESSIONS_TOTAL, &[]) >= 1.0);
    assert!(during.value(names::MCP_SESSIONS_OPEN, &[]) >= 1.0);
    let mcp_posts = [("service", "mcp"), ("route", "/mcp/v1"), ("method", "POST")];
    assert!(m(names::HTTP_REQUESTS_TOTAL, &mcp_posts) >= 2.0);
    // The simulated terminal's agent is connected over WebSocket.
    assert!(after.value(names::AGENTS_CONNECTED, &[("transport", "websocket")]) >= 1.0);
    // Every listener serves the process's registry.
    let gateway = scrape(&t, &t.gateway).await;
    assert!(gateway.value(names::HTTP_REQUESTS_TOTAL, &account) >= 1.0);
    assert!(gateway.has(names::DISPATCH_TOTAL, &ok));
    client.cancel().await.unwrap();
    t.stack.stop().await;
}

#[tokio::test]
async fn readyz_is_503_naming_redis_when_it_is_unreachable_and_200_otherwise() {
    // Nothing listens on port 1: Redis is down from the start.
    let down = spawn_with(
        Options {
            sims: 0,
            ..Options::default()
        },
        |s| s.keyvalue_url = Some("redis://127.0.0.1:1".into()),
    )
    .await;
    for (base, listener) in [
        (down.rest.clone(), "gateway"),
        (mcp_base(&down), "gateway"),
        (down.gateway.clone(), "listener"),
    ] {
        let r = Api::new(&down.http, &base).send(Method::GET, "/readyz", None).await;
        assert_eq!(r.status, 503, "{base}: {}", r.body);
        assert_eq!(
            r.body,
            json!({
                "status": "not_ready",
                "down": ["redis"],
                "checks": { "database": "ok", "redis": "down", listener: "ok" },
            }),
            "{base}"
        );
        // Liveness is not readiness.
        assert_eq!(Api::new(&down.http, &base).healthz().await.0, 200);
    }
    let errors = scrape(&down, &down.rest).await;
    assert!(errors.value(names::REDIS_ERRORS_TOTAL, &[("component", "readiness")]) >= 3.0);
    down.stack.stop().await;

    let up = spawn(Options {
        sims: 0,
        redis: true,
        ..Options::default()
    })
    .await;
    for base in [up.rest.clone(), mcp_base(&up), up.gateway.clone()] {
        let r = Api::new(&up.http, &base).send(Method::GET, "/readyz", None).await;
        assert_eq!(r.status, 200, "{base}: {}", r.body);
        assert_eq!(r.body["status"], "ready");
        assert_eq!(r.body["checks"]["redis"], "ok");
        assert_eq!(r.body["checks"]["database"], "ok");
    }
    up.stack.stop().await;
}

/// A REST instance of the stack's store that reaches the gateway over HTTP
/// (`HttpDispatch`, as `tradeterm-api` does).
fn split_rest_server(t: &TestStack, token: &str) -> String {
    let settings = tradeterm::Settings::default();
    let dispatch = tradeterm_protocol::http_client::HttpDispatch::new(&t.gateway, token).unwrap();
    let services = settings.services(Arc::new(dispatch), t.stack.store.clone()).unwrap();
    let server = tradeterm_rest::RestServer::build(
        tradeterm_rest::AppState::new(
            tradeterm_rest::RestSettings::default(),
            services,
            tradeterm::keys::verifier(&settings, &t.key_paths()).unwrap(),
            tradeterm_protocol::http_client::GatewayClient::new(&t.gateway).unwrap(),
        ),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{}", server.port());
    tokio::spawn(server.run_until_stopped());
    url
}

#[tokio::test]
async fn the_request_id_comes_back_in_the_header_and_the_error_envelope() {
    let token = "e2e-internal-token";
    let t = spawn_with(
        Options {
            sims: 1,
            ..Options::default()
        },
        |s| s.gateway_internal_token = Some(token.into()),
    )
    .await;
    let with_id =
        |api: &Api, method: Method, path: &str, id: &str| api.request(method, path).header("x-request-id", id);

    // An error answered by the REST API: the envelope and the header carry the client's id.
    let r = Api::send_request(
        "GET account",
        with_id(&t.anonymous(), Method::GET, "/api/v1/account/info", "rid-e2e-401"),
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.headers["x-request-id"], "rid-e2e-401");
    assert_eq!(r.body["error"]["request_id"], "rid-e2e-401");
    r.envelope().failure(401, "UNAUTHORIZED");
    // The MCP server's authentication errors too.
    let r = t
        .http
        .post(mcp::url(t.stack.mcp_port))
        .header("x-request-id", "rid-mcp-401")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["x-request-id"], "rid-mcp-401");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["request_id"], "rid-mcp-401", "{body}");
    // Without an id (or with a malformed one) the server makes one, the same in both places.
    for sent in [None, Some("spaces are not allowed")] {
        let mut req = t.api().request(Method::GET, "/api/v1/tools/no_such_tool");
        if let Some(id) = sent {
            req = req.header("x-request-id", id);
        }
        let r = Api::send_request("GET unknown tool", req).await;
        let id = r.headers["x-request-id"].to_str().unwrap().to_owned();
        assert_eq!(id.len(), 32, "{id}");
        assert_eq!(r.body["error"]["request_id"], id.as_str(), "{}", r.body);
    }
    // A success carries it in the header only (the data envelope is unchanged).
    let r = Api::send_request(
        "GET account",
        with_id(
            &t.api().on(t.terminal(0)),
            Method::GET,
            "/api/v1/account/info",
            "rid-e2e-ok",
        ),
    )
    .await;
    assert_eq!(r.headers["x-request-id"], "rid-e2e-ok");
    r.envelope().data();

    // Through a REST instance that dispatches over HTTP: the gateway's
    // internal route answers within the same request, and a terminal
    // failure comes back with the client's id.
    let split = split_rest_server(&t, token);
    let before = scrape(&t, &t.gateway).await;
    let api = t.api().at(&split);
    let r = Api::send_request(
        "GET account (split)",
        with_id(
            &api.clone().on(t.terminal(0)),
            Method::GET,
            "/api/v1/account/info",
            "rid-split-ok",
        ),
    )
    .await;
    assert_eq!(r.headers["x-request-id"], "rid-split-ok");
    r.envelope().data();
    let r = Api::send_request(
        "GET account (split, unknown terminal)",
        with_id(
            &api.on("term_nope"),
            Method::GET,
            "/api/v1/account/info",
            "rid-split-404",
        ),
    )
    .await;
    assert_eq!(r.headers["x-request-id"], "rid-split-404");
    assert_eq!(r.body["error"]["request_id"], "rid-split-404", "{}", r.body);
    assert!(r.status >= 400, "{}", r.body);
    let after = scrape(&t, &t.gateway).await;
    let internal = [
        ("service", "gateway"),
        ("route", "/internal/v1/dispatch"),
        ("status", "200"),
    ];
    assert!(moved(&before, &after, names::HTTP_REQUESTS_TOTAL, &internal) >= 1.0);
    let client = [("side", "client"), ("command", "account_info"), ("outcome", "ok")];
    assert!(moved(&before, &after, names::DISPATCH_TOTAL, &client) >= 1.0);
    t.stack.stop().await;
}
