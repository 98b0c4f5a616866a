//! The MCP server against the real stack: an rmcp client over real HTTP,
//! the gateway's token exchange, simulated terminals over the agent
//! protocol, SQLite, and (for rate limits) the machine's Redis.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use tradeterm_mcp::{McpServer, McpSettings, McpState};
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_tools::ratelimit::TierLimits;
use tradeterm_tools::{RateLimits, Services};

use crate::harness::mcp::{call, connect, err, ok};
use crate::harness::{Api, Expect, Options, TestStack, json_body, mcp, spawn};

fn deal_count(t: &TestStack) -> usize {
    t.stack.simulators()[0].deals().len()
}

/// Builds another MCP server over the stack's dispatch and store; with
/// `limits`, rate-limited through the local Redis.
fn mcp_server(t: &TestStack, settings: McpSettings, gateway_url: &str, limits: Option<TierLimits>) -> McpServer {
    let paths = t.key_paths();
    let mut services = Services::new(Arc::new(t.stack.gateway.clone()), t.stack.store.clone());
    if let Some(tiers) = limits {
        services.rate_limits = RateLimits {
            redis: Some(
                deadpool_redis::Config::from_url("redis://127.0.0.1:6379")
                    .create_pool(Some(deadpool_redis::Runtime::Tokio1))
                    .unwrap(),
            ),
            tiers,
            ..RateLimits::default()
        };
    }
    let state = McpState::new(
        settings,
        Arc::new(services),
        tradeterm::keys::verifier(&tradeterm::Settings::default(), &paths).unwrap(),
        GatewayClient::new(gateway_url).unwrap(),
    );
    McpServer::build(state, TcpListener::bind("127.0.0.1:0").unwrap()).unwrap()
}

#[tokio::test]
async fn initialize_list_tools_and_get_tick() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let url = mcp::url(t.stack.mcp_port);
    let (status, health) = Api::new(&t.http, &format!("http://127.0.0.1:{}", t.stack.mcp_port))
        .healthz()
        .await;
    assert_eq!((status, &health["status"]), (200, &json!("ok")), "{health}");

    let client = connect(&url, &t.creds.terminals[0].key).await.unwrap();
    let info = client.peer_info().expect("server info");
    let server = info.server_info.as_ref().expect("server implementation");
    assert_eq!(
        (server.name.as_str(), server.version.as_str()),
        ("tradeterm", env!("CARGO_PKG_VERSION"))
    );
    assert!(info.capabilities.tools.is_some());

    // The MCP list is the catalog, in order, plus the two session tools.
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let mut expected: Vec<&str> = tradeterm_tools::mcp_catalog().map(|t| t.name).collect();
    expected.extend(["set_mode", "get_mode"]);
    assert_eq!(names, expected);
    // The default list is the lean one (crates/mcp/src/compact.rs): the
    // server's own lean definitions, no output schemas, the catalog's
    // required inputs and annotations; prompts are offered too.
    assert!(info.capabilities.prompts.is_some());
    for ((m, lean), c) in tools
        .iter()
        .zip(tradeterm_mcp::mcp_tools())
        .zip(tradeterm_tools::mcp_catalog())
    {
        assert_eq!(m, lean, "{}", c.name);
        assert!(m.output_schema.is_none(), "{}", c.name);
        assert_eq!(
            m.input_schema.get("required"),
            c.input_schema.get("required"),
            "{}",
            c.name
        );
        let a = m.annotations.as_ref().unwrap();
        assert_eq!(a.read_only_hint.unwrap_or(false), c.annotations.read_only, "{}", c.name);
        assert_eq!(
            a.open_world_hint.unwrap_or(true),
            c.annotations.open_world,
            "{}",
            c.name
        );
        if !c.annotations.read_only {
            // destructiveHint always stated; idempotentHint only when true
            // (MCP's default is false).
            assert_eq!(
                (a.destructive_hint, a.idempotent_hint),
                (
                    Some(c.annotations.destructive),
                    c.annotations.idempotent.then_some(true)
                ),
                "{}",
                c.name
            );
        }
    }

    // The key's terminal is the target: no terminal id anywhere.
    let tick = call(&client, "get_tick", json!({ "symbol": "EURUSD" })).await;
    let tick = ok(&tick);
    assert_eq!(tick["symbol"], "EURUSD");
    assert!(tick["bid"].as_f64().unwrap() < tick["ask"].as_f64().unwrap(), "{tick}");
    let sim_tick = t.stack.simulators()[0].tick("EURUSD").unwrap();
    assert!(
        (tick["bid"].as_f64().unwrap() - sim_tick.bid).abs() < 0.01,
        "the tick comes from the key's terminal"
    );

    // Bad input and unknown symbols are tool errors with the spec's codes.
    let (code, message) = err(&call(&client, "get_tick", json!({ "symbol": 42 })).await);
    assert_eq!(code, "VALIDATION_ERROR", "{message}");
    let (code, _) = err(&call(&client, "get_tick", json!({})).await);
    assert_eq!(code, "VALIDATION_ERROR");
    let (code, _) = err(&call(
        &client,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": -1 }),
    )
    .await);
    assert_eq!(code, "VALIDATION_ERROR");
    let (code, _) = err(&call(&client, "set_mode", json!({ "mode": "demo" })).await);
    assert_eq!(code, "VALIDATION_ERROR");
    // An unknown tool is a protocol error (invalid params), decided before any handler.
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("unknown tool"), "{unknown}");

    // Session ids are bound to the key that opened them: a raw request with
    // another terminal's key cannot use this session.
    client.cancel().await.unwrap();
    t.stack.stop().await;
}

/// Tool groups and output schemas picked in the URL, and the prompts, over
/// the real stack: the session lists only its groups, runs their tools on the
/// simulated terminal, refuses the others, and gets a workflow prompt.
#[tokio::test]
async fn groups_output_schemas_and_prompts_over_the_real_stack() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let url = format!("{}?groups=market,risk&output_schemas=true", mcp::url(t.stack.mcp_port));
    let client = connect(&url, &t.creds.terminals[0].key).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in ["get_tick", "check_portfolio_exposure", "set_mode", "get_mode"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    assert!(
        !names.contains(&"place_order") && !names.contains(&"get_journal"),
        "{names:?}"
    );
    assert!(
        tools.iter().all(|t| t.output_schema.is_some()),
        "output schemas were asked for"
    );

    let tick = call(&client, "get_tick", json!({ "symbol": "EURUSD" })).await;
    assert!(ok(&tick)["bid"].as_f64().unwrap() > 0.0);
    let refused = client
        .call_tool(CallToolRequestParams::new("get_journal").with_arguments(serde_json::Map::new()))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("not enabled in this session"), "{refused}");

    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(
        prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["pre_trade_check", "market_brief", "journal_review"]
    );
    let mut args = serde_json::Map::new();
    args.insert("days".into(), json!("14"));
    let review = client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("journal_review").with_arguments(args))
        .await
        .unwrap();
    let text = serde_json::to_string(&review.messages).unwrap();
    assert!(
        text.contains("last 14 days") && text.contains("get_equity_curve"),
        "{text}"
    );
    client.cancel().await.unwrap();
    t.stack.stop().await;
}

#[tokio::test]
async fn paper_mode_forces_dry_runs_for_the_session() {
    // Trading allowed on the terminal, so a live order would really execute.
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let url = mcp::url(t.stack.mcp_port);
    let key = &t.creds.terminals[0].key;
    // This client cannot confirm live trades (no elicitation capability):
    // the license owner turned MCP trade confirmation off (mcp_confirm.rs tests it on).
    t.stack
        .store
        .set_license_settings(
            &t.creds.license_id,
            &tradeterm_store::LicenseSettings {
                mcp_trade_confirmation: false,
            },
        )
        .await
        .unwrap();
    let client = connect(&url, key).await.unwrap();
    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01, "dry_run": false });

    assert_eq!(
        ok(&call(&client, "get_mode", json!({})).await)["mode"],
        "live",
        "sessions start live"
    );
    let set = call(&client, "set_mode", json!({ "mode": "paper" })).await;
    assert_eq!(ok(&set)["mode"], "paper");
    assert_eq!(ok(&set)["forces_dry_run"], true);

    let before = deal_count(&t);
    let r = call(&client, "place_order", order.clone()).await;
    let out = ok(&r);
    assert_eq!(out["dry_run"], true, "paper mode forces the dry run: {out}");
    assert_eq!(out["executed"], false);
    assert_eq!(deal_count(&t), before, "the simulator's deals are unchanged");
    assert_eq!(ok(&call(&client, "get_mode", json!({})).await)["mode"], "paper");

    // Paper mode is per session: another session of the same key is live.
    let other = connect(&url, key).await.unwrap();
    assert_eq!(ok(&call(&other, "get_mode", json!({})).await)["mode"], "live");
    other.cancel().await.unwrap();

    // Back to live: not a confirmation; `dry_run` still defaults to true.
    assert_eq!(
        ok(&call(&client, "set_mode", json!({ "mode": "live" })).await)["mode"],
        "live"
    );
    let r = call(
        &client,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01 }),
    )
    .await;
    assert_eq!(ok(&r)["dry_run"], true);
    assert_eq!(deal_count(&t), before);
    // Only an explicit `"dry_run": false` in live mode executes.
    let r = call(&client, "place_order", order).await;
    assert_eq!(ok(&r)["dry_run"], false);
    assert_eq!(ok(&r)["executed"], true);
    assert_eq!(
        deal_count(&t),
        before + 1,
        "the live order reached the simulated account"
    );

    client.cancel().await.unwrap();
    t.stack.stop().await;
}

#[tokio::test]
async fn live_orders_need_the_terminals_trading_permission() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: false,
        ..Options::default()
    })
    .await;
    let client = connect(&mcp::url(t.stack.mcp_port), &t.creds.terminals[0].key)
        .await
        .unwrap();
    let before = deal_count(&t);
    let r = call(
        &client,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01, "dry_run": false }),
    )
    .await;
    let (code, message) = err(&r);
    assert_eq!(code, "TRADING_DISABLED", "{message}");
    assert!(message.contains("inp_AllowTrading"), "{message}");
    let r = call(
        &client,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01 }),
    )
    .await;
    assert_eq!(ok(&r)["dry_run"], true, "dry runs still work");
    assert_eq!(deal_count(&t), before);
    client.cancel().await.unwrap();
    t.stack.stop().await;
}

/// Posts an `initialize` with `key` and returns the status and JSON body.
async fn raw_initialize(t: &TestStack, key: &str) -> (u16, Value) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let r = t
        .http
        .post(mcp::url(t.stack.mcp_port))
        .bearer_auth(key)
        .header("Accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    json_body(r).await
}

#[tokio::test]
async fn bad_unbound_and_master_keys_are_refused() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let url = mcp::url(t.stack.mcp_port);

    // No key, a bad key.
    let r = t
        .http
        .post(&url)
        .header("Accept", "application/json, text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let (status, body) = raw_initialize(&t, "tt_term_not_a_key").await;
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("UNAUTHORIZED")));
    let e = connect(&url, "tt_term_not_a_key").await.unwrap_err();
    assert!(
        e.contains("401") && e.contains("invalid or revoked terminal key"),
        "{e}"
    );

    // The license's master key is not a terminal key.
    let (status, body) = raw_initialize(&t, &t.creds.license_key).await;
    assert_eq!(status, 401);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("master license keys are not accepted"),
        "{body}"
    );
    let e = connect(&url, &t.creds.license_key).await.unwrap_err();
    assert!(e.contains("master license keys are not accepted"), "{e}");

    // A REST API key is not a terminal key either.
    let (status, _) = raw_initialize(&t, &t.creds.api_key).await;
    assert_eq!(status, 401);

    // A valid terminal key whose agent never connected: not bound yet.
    let (_, unbound) = t
        .stack
        .store
        .create_terminal(&t.creds.license_id, "never-connected")
        .await
        .unwrap();
    let (status, body) = raw_initialize(&t, unbound.expose()).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("FORBIDDEN")),
        "{body}"
    );
    let e = connect(&url, unbound.expose()).await.unwrap_err();
    assert!(e.contains("not bound to a terminal yet"), "{e}");

    // The bound key works.
    let client = connect(&url, &t.creds.terminals[0].key).await.unwrap();
    client.cancel().await.unwrap();
    t.stack.stop().await;
}

#[tokio::test]
async fn the_session_token_is_refreshed_before_it_expires() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    // A second gateway (same store and keys) that issues 2-second tokens.
    let paths = t.key_paths();
    let signer = tradeterm::keys::signer(&tradeterm::Settings::default(), &paths).unwrap();
    let short = tradeterm_gateway::Gateway::new(
        tradeterm_gateway::GatewaySettings {
            token_lifetime: Duration::from_secs(2),
            ..Default::default()
        },
        t.stack.store.clone(),
        signer,
    );
    let gw = short.server(TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
    let gw_url = format!("http://127.0.0.1:{}", gw.port());
    let gw_handle = gw.handle();
    let gw_task = tokio::spawn(gw.run_until_stopped());

    let server = mcp_server(&t, McpSettings::default(), &gw_url, None);
    let (port, handle) = (server.port(), server.handle());
    let probe = server.state().clone();
    let auth_state = probe.authenticator();
    let task = tokio::spawn(server.run_until_stopped());

    let key = t.creds.terminals[0].key.clone();
    let client = connect(&mcp::url(port), &key).await.unwrap();
    ok(&call(&client, "get_tick", json!({ "symbol": "EURUSD" })).await);
    let first = auth_state.cached_claims(&key).expect("a token was exchanged");
    assert_eq!(first.exp - first.iat, 2);
    // Keep calling until well past the first token's expiry: every call works.
    let until = first.exp + 2;
    let mut calls = 0;
    while chrono::Utc::now().timestamp() <= until {
        ok(&call(&client, "get_tick", json!({ "symbol": "EURUSD" })).await);
        calls += 1;
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let last = auth_state.cached_claims(&key).unwrap();
    assert!(
        last.exp > first.exp,
        "the token was refreshed ({} → {})",
        first.exp,
        last.exp
    );
    assert_ne!(last.jti, first.jti);
    assert!(
        auth_state.exchanges() >= 3,
        "{} exchanges over {calls} calls",
        auth_state.exchanges()
    );

    client.cancel().await.unwrap();
    handle.stop();
    task.await.unwrap().unwrap();
    gw_handle.stop(true).await;
    gw_task.await.unwrap().unwrap();
    t.stack.stop().await;
}

#[tokio::test]
async fn tool_calls_are_rate_limited_in_their_own_bucket() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let limits = TierLimits {
        free: 1,
        pro: 3,
        team: 3,
        enterprise: 3,
    };
    let server = mcp_server(&t, McpSettings::default(), &t.gateway, Some(limits));
    let (port, handle) = (server.port(), server.handle());
    let task = tokio::spawn(server.run_until_stopped());
    let client = connect(&mcp::url(port), &t.creds.terminals[0].key).await.unwrap();
    for _ in 0..3 {
        ok(&call(&client, "get_tick", json!({ "symbol": "EURUSD" })).await);
    }
    let (code, message) = err(&call(&client, "get_tick", json!({ "symbol": "EURUSD" })).await);
    assert_eq!(code, "RATE_LIMITED", "{message}");
    assert!(message.contains("retry after"), "{message}");
    // Session tools do not reach a terminal and are not counted.
    assert_eq!(ok(&call(&client, "get_mode", json!({})).await)["mode"], "live");
    // The REST bucket of the same license is separate.
    t.api().tick("EURUSD").await.data();

    client.cancel().await.unwrap();
    handle.stop();
    task.await.unwrap().unwrap();
    t.stack.stop().await;
}

#[test]
fn mcp_rest_and_openapi_name_the_same_tools() {
    let catalog: Vec<&str> = tradeterm_tools::mcp_catalog().map(|t| t.name).collect();
    let mcp: Vec<&str> = tradeterm_mcp::mcp_tools()
        .iter()
        .map(|t| t.name.as_ref())
        .filter(|n| !tradeterm_mcp::SESSION_TOOLS.contains(n))
        .collect();
    assert_eq!(
        mcp, catalog,
        "MCP lists exactly the catalog but the master-key-only tools (plus set_mode/get_mode)"
    );
    let doc = tradeterm_rest::openapi::document();
    let mut openapi: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, ops)| ops.get("post").is_some())
        .filter_map(|(path, _)| path.strip_prefix("/api/v1/tools/"))
        .collect();
    openapi.sort_unstable();
    // REST serves every catalog tool, the master-key-only ones included.
    let mut sorted: Vec<&str> = tradeterm_tools::catalog().iter().map(|t| t.name).collect();
    sorted.sort_unstable();
    assert_eq!(
        openapi, sorted,
        "OpenAPI has one POST /api/v1/tools/<name> per catalog tool"
    );
}

/// The JSON-RPC message in an SSE (or JSON) answer of the MCP endpoint.
async fn rpc_answer(r: reqwest::Response) -> Value {
    let text = r.text().await.unwrap();
    if let Ok(v) = serde_json::from_str(&text) {
        return v;
    }
    text.lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {text:?}"))
}

#[tokio::test]
async fn a_session_belongs_to_the_key_that_opened_it() {
    let t = spawn(Options {
        sims: 2,
        ..Options::default()
    })
    .await;
    let url = mcp::url(t.stack.mcp_port);
    let post = |key: &str, session: Option<&str>, body: Value| {
        let mut req = t
            .http
            .post(&url)
            .bearer_auth(key)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
            .json(&body);
        if let Some(s) = session {
            req = req.header("Mcp-Session-Id", s);
        }
        req.send()
    };
    let (a, b) = (&t.creds.terminals[0].key, &t.creds.terminals[1].key);
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } }
    });
    let r = post(a, None, init).await.unwrap();
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer = rpc_answer(r).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "tradeterm");
    let r = post(
        a,
        Some(&session),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await
    .unwrap();
    assert!(r.status().is_success());

    let call =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "get_mode", "arguments": {} } });
    let mine = rpc_answer(post(a, Some(&session), call.clone()).await.unwrap()).await;
    assert_eq!(mine["result"]["structuredContent"]["mode"], "live", "{mine}");
    // Another terminal's key (same license) cannot use the session, live
    // or parked (an idle session is parked after 1 s: crates/mcp/tests/http.rs
    // tests the parking itself); the answer is the same either way.
    for round in ["live", "after 2 s idle"] {
        if round != "live" {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
        let r = post(b, Some(&session), call.clone()).await.unwrap();
        assert_eq!(r.status(), 403, "{round}");
        let theirs = rpc_answer(r).await;
        assert!(
            theirs["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("belongs to another terminal key"),
            "{round}: {theirs}"
        );
        let mine = rpc_answer(post(a, Some(&session), call.clone()).await.unwrap()).await;
        assert_eq!(mine["result"]["structuredContent"]["mode"], "live", "{round}: {mine}");
    }
    t.stack.stop().await;
}

#[tokio::test]
async fn loopback_and_configured_host_names_are_accepted_others_refused() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let settings = McpSettings {
        allowed_hosts: vec!["mcp.example.com".into()],
        ..McpSettings::default()
    };
    let server = mcp_server(&t, settings, &t.gateway, None);
    let (port, handle) = (server.port(), server.handle());
    let task = tokio::spawn(server.run_until_stopped());
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    for (host, expected) in [
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
        ("mcp.example.com".to_owned(), 200),
        (format!("mcp.example.com:{port}"), 200),
        ("attacker.example".to_owned(), 403),
    ] {
        let r = t
            .http
            .post(mcp::url(port))
            .header("Host", &host)
            .bearer_auth(&t.creds.terminals[0].key)
            .header("Accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), expected, "Host: {host}");
    }
    // Without `Accept: application/json, text/event-stream` rmcp answers 406.
    let r = t
        .http
        .post(mcp::url(port))
        .bearer_auth(&t.creds.terminals[0].key)
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 406);
    handle.stop();
    task.await.unwrap().unwrap();
    t.stack.stop().await;
}
