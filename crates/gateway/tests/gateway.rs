//! Integration tests of the gateway over real HTTP and real WebSockets, with a
//! scripted agent standing in for a terminal.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tradeterm_core::{AccountInfo, TradeMode};
use tradeterm_protocol::agent::{AgentFrame, Event, GatewayFrame, Permissions, Response, TradeResult, codes};
use tradeterm_protocol::http_client::HttpDispatch;
use tradeterm_protocol::token::CredentialKind;
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError, PROTOCOL_VERSION};
use tradeterm_store::Tier;

mod common;
use common::{INTERNAL, Ws, connect, hello, next_gateway_frame, scrape, spawn_app};

fn account() -> AccountInfo {
    AccountInfo {
        login: 5001,
        name: "Test".into(),
        server: "Test-Demo".into(),
        company: "Test Broker".into(),
        currency: "USD".into(),
        leverage: 100,
        trade_mode: TradeMode::Demo,
        balance: 10_000.0,
        equity: 10_000.0,
        margin: 0.0,
        free_margin: 10_000.0,
        margin_level: None,
        profit: 0.0,
    }
}

/// Runs a scripted agent that answers requests: `account_info` with an
/// account, `symbols` with a list, trade commands with a trade result, and
/// `tick` for `FAIL` with an error. Stops answering when `mute` is set.
fn run_agent(mut ws: Ws, mute: Arc<std::sync::atomic::AtomicBool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(Ok(msg)) = ws.next().await {
            let Message::Text(text) = msg else { continue };
            if mute.load(std::sync::atomic::Ordering::Relaxed) {
                continue;
            }
            let frame = GatewayFrame::parse(&text).unwrap();
            let reply = match frame {
                GatewayFrame::Request { id, command, .. } => {
                    let response = match command {
                        Command::AccountInfo => Response::ok(id, CommandResult::AccountInfo(account())),
                        Command::Symbols => Response::ok(
                            id,
                            CommandResult::Symbols {
                                symbols: vec!["EURUSD".into()],
                            },
                        ),
                        Command::Tick { symbol } if symbol == "FAIL" => Response::err(
                            id,
                            tradeterm_protocol::ErrorBody::new(codes::NOT_FOUND, "unknown symbol FAIL"),
                        ),
                        c if c.is_trade() => Response::ok(
                            id,
                            CommandResult::Trade(TradeResult {
                                retcode: "done".into(),
                                order: 1,
                                deal: 1,
                                position: 1,
                                volume: 0.1,
                                price: 1.1,
                                comment: String::new(),
                            }),
                        ),
                        other => Response::err(
                            id,
                            tradeterm_protocol::ErrorBody::new(codes::UNKNOWN_COMMAND, other.name()),
                        ),
                    };
                    AgentFrame::Response(response).to_json()
                }
                GatewayFrame::Ping { ts } => AgentFrame::Pong { ts }.to_json(),
                _ => continue,
            };
            if ws.send(Message::text(reply)).await.is_err() {
                break;
            }
        }
    })
}

async fn wait_until(what: &str, mut f: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn token_exchange_signs_verifiable_rs256_tokens() {
    let app = spawn_app().await;
    let (term_id, term_key) = &app.terminals[0];
    let resp = app
        .http
        .post(format!("{}/api/token", app.base))
        .bearer_auth(term_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    let token = body["token"].as_str().unwrap();
    let claims = app.verifier.verify(token).unwrap();
    assert_eq!(claims.sub, app.license_id);
    assert_eq!(claims.iss, "test-iss");
    assert_eq!(claims.aud, "test-aud");
    assert_eq!(claims.exp - claims.iat, 24 * 3600);
    assert_eq!(claims.terminal.as_deref(), Some(term_id.as_str()));
    assert_eq!(claims.cred, CredentialKind::TerminalKey);
    assert!(claims.caps.contains(&tradeterm_store::Capability::Trade));

    // The same exchange through the JSON body form.
    let resp = app
        .http
        .post(format!("{}/api/token", app.base))
        .json(&json!({ "license_key": term_key }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    // Master key, API key, garbage and nothing are refused.
    for bad in [app.license_key.as_str(), "svc_api_nope", "garbage"] {
        let resp = app
            .http
            .post(format!("{}/api/token", app.base))
            .bearer_auth(bad)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "{bad}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    }
    let resp = app
        .http
        .post(format!("{}/api/token", app.base))
        .bearer_auth(&app.license_key)
        .send()
        .await
        .unwrap();
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("master license keys are not accepted")
    );
    let resp = app.http.post(format!("{}/api/token", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 401);
}

#[tokio::test]
async fn agent_binding_and_refusals() {
    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let perms = Permissions {
        allow_trading: false,
        automated_trading: true,
    };

    // Master license key refused on the agent endpoint.
    let (_ws, first) = connect(&app, &app.license_key, "uid-x", perms).await;
    match first {
        GatewayFrame::Error { error, .. } => {
            assert_eq!(error.code, codes::AUTH_FAILED);
            assert!(error.message.contains("master license keys"));
        }
        other => panic!("expected an error frame, got {other:?}"),
    }

    // First connection binds the key.
    let (ws, first) = connect(&app, &term_key, "uid-A", perms).await;
    match first {
        GatewayFrame::Welcome {
            terminal_id,
            protocol_version,
            ..
        } => {
            assert_eq!(terminal_id, term_id);
            assert_eq!(protocol_version, PROTOCOL_VERSION);
        }
        other => panic!("expected welcome, got {other:?}"),
    }
    assert!(
        app.store
            .terminal(&app.license_id, &term_id)
            .await
            .unwrap()
            .unwrap()
            .fingerprint
            .is_some()
    );
    drop(ws);

    // Another installation presenting the same key is refused.
    let (_ws, first) = connect(&app, &term_key, "uid-B", perms).await;
    match first {
        GatewayFrame::Error { error, .. } => {
            assert_eq!(error.code, codes::AUTH_FAILED);
            assert!(error.message.contains("bound to another terminal"));
        }
        other => panic!("expected an error frame, got {other:?}"),
    }

    // The bound installation can reconnect.
    let (_ws, first) = connect(&app, &term_key, "uid-A", perms).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }));

    // Wrong protocol version.
    let (mut ws, _) = tokio_tungstenite::connect_async(&app.ws_url).await.unwrap();
    let bad = hello(&app.terminals[1].1, "uid-C", perms).replace("\"protocol_version\":1", "\"protocol_version\":99");
    ws.send(Message::text(bad)).await.unwrap();
    match next_gateway_frame(&mut ws).await {
        GatewayFrame::Error { error, .. } => assert_eq!(error.code, codes::UNSUPPORTED_VERSION),
        other => panic!("expected an error frame, got {other:?}"),
    }
}

/// The next frame that is not a heartbeat ping; `None` once the connection closes.
async fn next_non_ping(ws: &mut Ws) -> Option<GatewayFrame> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("frame in time");
        match msg {
            Some(Ok(Message::Text(t))) => match GatewayFrame::parse(&t).expect("valid gateway frame") {
                GatewayFrame::Ping { .. } => continue,
                frame => return Some(frame),
            },
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
            other => panic!("unexpected websocket message {other:?}"),
        }
    }
}

async fn expect_revoked_then_closed(ws: &mut Ws) {
    match next_non_ping(ws).await {
        Some(GatewayFrame::Error { error, .. }) => {
            assert_eq!(error.code, codes::AUTH_FAILED);
            assert!(error.message.contains("revoked or rotated"), "{}", error.message);
        }
        other => panic!("expected AUTH_FAILED, got {other:?}"),
    }
    assert!(next_non_ping(ws).await.is_none(), "the connection is closed");
}

#[tokio::test]
async fn rotating_a_terminal_key_drops_its_agent_and_refuses_the_old_key() {
    let app = spawn_app().await;
    let (term_id, old_key) = app.terminals[0].clone();
    let perms = Permissions {
        allow_trading: false,
        automated_trading: true,
    };
    let (mut ws, first) = connect(&app, &old_key, "uid-A", perms).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");
    let url = format!("{}/api/dashboard/terminals/{term_id}/rotate-key", app.base);

    // The dashboard wants the master key; another license's master key, or an
    // unknown terminal, finds nothing.
    let resp = app.http.post(&url).bearer_auth(&old_key).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let (_, other_master) = app.store.create_license("other", Tier::Pro).await.unwrap();
    let resp = app
        .http
        .post(&url)
        .bearer_auth(other_master.expose())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let missing = format!("{}/api/dashboard/terminals/term_missing/rotate-key", app.base);
    let resp = app
        .http
        .post(&missing)
        .bearer_auth(&app.license_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert!(
        app.store.terminal_key(&old_key).await.unwrap().is_some(),
        "nothing changed"
    );

    // Rotation through the dashboard: the agent is told and dropped at once.
    let old_id = app.store.terminal_key(&old_key).await.unwrap().unwrap().key_id;
    let resp = app.http.post(&url).bearer_auth(&app.license_key).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    let new_key = body["data"]["terminal_key"].as_str().unwrap().to_owned();
    assert_eq!(body["data"]["revoked_key_ids"], json!([old_id]));
    assert_eq!(body["data"]["agent_disconnected"], true);
    assert_ne!(new_key, old_key);
    expect_revoked_then_closed(&mut ws).await;

    // The old key opens nothing any more; the new one connects (same binding).
    let resp = app
        .http
        .post(format!("{}/api/token", app.base))
        .bearer_auth(&old_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let (_ws, first) = connect(&app, &old_key, "uid-A", perms).await;
    assert!(matches!(first, GatewayFrame::Error { ref error, .. } if error.code == codes::AUTH_FAILED));
    let (mut ws, first) = connect(&app, &new_key, "uid-A", perms).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");

    // A rotation by another process (the admin CLI writes only the store):
    // the gateway notices at its next key check and drops the agent.
    let rotated = app.store.rotate_terminal_key(&app.license_id, &term_id).await.unwrap();
    assert_eq!(rotated.revoked_key_ids.len(), 1);
    expect_revoked_then_closed(&mut ws).await;
    let (_ws, first) = connect(&app, rotated.key.expose(), "uid-A", perms).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");
}

#[tokio::test]
async fn api_key_lifecycle_limit_and_revocation() {
    let app = spawn_app().await;
    let url = format!("{}/api/dashboard/api-keys", app.base);
    // Dashboard needs the master key.
    let resp = app
        .http
        .get(&url)
        .bearer_auth(&app.terminals[0].1)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    let mut secrets = Vec::new();
    for i in 0..5 {
        let resp = app
            .http
            .post(&url)
            .bearer_auth(&app.license_key)
            .json(&json!({ "label": format!("key {i}") }))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201);
        let body: Value = resp.json().await.unwrap();
        let secret = body["data"]["api_key"].as_str().unwrap().to_owned();
        assert!(secret.starts_with("svc_api_"));
        secrets.push((body["data"]["key"]["id"].as_str().unwrap().to_owned(), secret));
    }
    let resp = app
        .http
        .post(&url)
        .bearer_auth(&app.license_key)
        .json(&json!({"label": "six"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 409);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "API_KEY_LIMIT");

    let resp = app.http.get(&url).bearer_auth(&app.license_key).send().await.unwrap();
    let text = resp.text().await.unwrap();
    for (_, secret) in &secrets {
        assert!(!text.contains(secret.as_str()), "listing must not reveal secrets");
    }
    let listed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(listed["data"].as_array().unwrap().len(), 5);

    // Exchange works, then stops at once after revocation.
    let exchange = |key: String| {
        let http = app.http.clone();
        let base = app.base.clone();
        async move {
            http.post(format!("{base}/api/token/api-key"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
        }
    };
    let resp = exchange(secrets[0].1.clone()).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    let claims = app.verifier.verify(body["token"].as_str().unwrap()).unwrap();
    assert_eq!(claims.cred, CredentialKind::ApiKey);
    assert_eq!(claims.cred_id, secrets[0].0);
    assert!(claims.terminal.is_none());

    let resp = app
        .http
        .delete(format!("{url}?id={}", secrets[0].0))
        .bearer_auth(&app.license_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(exchange(secrets[0].1.clone()).await.status(), 401);
    assert_eq!(exchange(secrets[1].1.clone()).await.status(), 200);
    // Revoking again, or a key of nobody, is a 404.
    let resp = app
        .http
        .delete(&url)
        .bearer_auth(&app.license_key)
        .json(&json!({ "id": secrets[0].0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    // A sixth key fits again.
    let resp = app
        .http
        .post(&url)
        .bearer_auth(&app.license_key)
        .json(&json!({"label": "again"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);

    // Another license cannot see or revoke these keys.
    let (_, other_master) = app.store.create_license("other", Tier::Free).await.unwrap();
    let resp = app
        .http
        .get(&url)
        .bearer_auth(other_master.expose())
        .send()
        .await
        .unwrap();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["data"].as_array().unwrap().len(), 0);
    let resp = app
        .http
        .delete(format!("{url}?id={}", secrets[1].0))
        .bearer_auth(other_master.expose())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(exchange(secrets[1].1.clone()).await.status(), 200);
}

#[tokio::test]
async fn dispatch_in_process_and_over_http_with_license_scoping() {
    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let perms = Permissions {
        allow_trading: true,
        automated_trading: true,
    };
    let (ws, first) = connect(&app, &term_key, "uid-A", perms).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }));
    let mute = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _agent = run_agent(ws, mute.clone());
    let t = Duration::from_secs(3);

    let remote = HttpDispatch::new(&app.base, INTERNAL).unwrap();
    for d in [&app.gateway as &dyn Dispatch, &remote as &dyn Dispatch] {
        match d
            .execute(&app.license_id, &term_id, Command::AccountInfo, t)
            .await
            .unwrap()
        {
            CommandResult::AccountInfo(a) => assert_eq!(a.login, 5001),
            other => panic!("unexpected {other:?}"),
        }
        let err = d
            .execute(&app.license_id, &term_id, Command::Tick { symbol: "FAIL".into() }, t)
            .await
            .unwrap_err();
        match err {
            DispatchError::CommandFailed(body) => assert_eq!(body.code, codes::NOT_FOUND),
            other => panic!("unexpected {other:?}"),
        }
        // The second terminal exists but is not connected.
        let err = d
            .execute(&app.license_id, &app.terminals[1].0, Command::Symbols, t)
            .await
            .unwrap_err();
        assert_eq!(err, DispatchError::Unreachable);
        // Unknown terminal, and a terminal of another license, look the same.
        let err = d
            .execute(&app.license_id, "term_nope", Command::Symbols, t)
            .await
            .unwrap_err();
        assert_eq!(err, DispatchError::NotFound);
        let err = d.execute("lic_other", &term_id, Command::Symbols, t).await.unwrap_err();
        assert_eq!(err, DispatchError::NotFound);

        let list = d.terminals(&app.license_id).await.unwrap();
        assert_eq!(list.len(), 2);
        let live = list.iter().find(|s| s.id == term_id).unwrap();
        assert!(live.connected && live.bound);
        assert_eq!(live.account_login, Some(5001));
        assert_eq!(live.trade_mode, Some(TradeMode::Demo));
        assert!(live.permissions.allow_trading);
        assert!(!list.iter().find(|s| s.id != term_id).unwrap().connected);
        assert!(d.terminals("lic_other").await.unwrap().is_empty());
    }

    // Internal routes need the internal token.
    let resp = app
        .http
        .get(format!(
            "{}/internal/v1/terminals?license_id={}",
            app.base, app.license_id
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let wrong = HttpDispatch::new(&app.base, "wrong-token").unwrap();
    assert!(matches!(
        wrong.terminals(&app.license_id).await,
        Err(DispatchError::Gateway(_))
    ));

    // An agent that stops answering makes dispatch fail with a timeout...
    mute.store(true, std::sync::atomic::Ordering::Relaxed);
    let started = Instant::now();
    let err = app
        .gateway
        .execute(
            &app.license_id,
            &term_id,
            Command::AccountInfo,
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert_eq!(err, DispatchError::Timeout(Duration::from_millis(300)));
    assert!(started.elapsed() < Duration::from_secs(3));
    // ...and once its heartbeats are missed the terminal is disconnected.
    wait_until("heartbeat timeout", async || !app.gateway.is_connected(&term_id)).await;
    let err = app
        .gateway
        .execute(&app.license_id, &term_id, Command::AccountInfo, t)
        .await
        .unwrap_err();
    assert_eq!(err, DispatchError::Unreachable);
    let list = app.gateway.terminals(&app.license_id).await.unwrap();
    let s = list.iter().find(|s| s.id == term_id).unwrap();
    assert!(!s.connected && s.bound && s.last_seen.is_some());
}

#[tokio::test]
async fn dropped_agent_fails_pending_dispatch_quickly() {
    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let (ws, _) = connect(&app, &term_key, "uid-A", Permissions::default()).await;
    let gateway = app.gateway.clone();
    let license = app.license_id.clone();
    let tid = term_id.clone();
    let pending = tokio::spawn(async move {
        gateway
            .execute(&license, &tid, Command::AccountInfo, Duration::from_secs(8))
            .await
    });
    // Let the request reach the agent, then drop the connection without answering.
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(ws);
    let started = Instant::now();
    let err = pending.await.unwrap().unwrap_err();
    assert!(
        matches!(err, DispatchError::Unreachable | DispatchError::Timeout(_)),
        "unexpected {err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn trade_commands_fail_closed_when_trading_is_off() {
    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let (ws, _) = connect(
        &app,
        &term_key,
        "uid-A",
        Permissions {
            allow_trading: false,
            automated_trading: true,
        },
    )
    .await;
    let _agent = run_agent(ws, Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let err = app
        .gateway
        .execute(
            &app.license_id,
            &term_id,
            Command::CancelOrder { ticket: 1 },
            Duration::from_secs(2),
        )
        .await
        .unwrap_err();
    match err {
        DispatchError::CommandFailed(b) => assert_eq!(b.code, codes::TRADING_DISABLED),
        other => panic!("unexpected {other:?}"),
    }
    // Reads still work.
    assert!(
        app.gateway
            .execute(&app.license_id, &term_id, Command::AccountInfo, Duration::from_secs(2))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn garbage_frames_leave_connection_and_gateway_working() {
    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let (mut ws, first) = connect(&app, &term_key, "uid-A", Permissions::default()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }));
    let mut events = app.gateway.subscribe();
    for (garbage, code) in [
        ("not json at all", codes::MALFORMED_FRAME),
        ("{\"type\":\"bogus\"}", codes::UNKNOWN_FRAME),
        ("{\"no_type\":1}", codes::MALFORMED_FRAME),
        ("{\"type\":\"response\"}", codes::MALFORMED_FRAME),
        ("[1,2,3]", codes::MALFORMED_FRAME),
    ] {
        ws.send(Message::text(garbage)).await.unwrap();
        match next_gateway_frame(&mut ws).await {
            GatewayFrame::Error { error, .. } => assert_eq!(error.code, code, "{garbage}"),
            GatewayFrame::Ping { .. } => match next_gateway_frame(&mut ws).await {
                GatewayFrame::Error { error, .. } => assert_eq!(error.code, code, "{garbage}"),
                other => panic!("unexpected {other:?}"),
            },
            other => panic!("unexpected {other:?}"),
        }
    }
    ws.send(Message::binary(vec![0u8, 1, 2])).await.unwrap();
    // An event still flows through after the garbage.
    let perms = Permissions {
        allow_trading: true,
        automated_trading: true,
    };
    ws.send(Message::text(
        AgentFrame::Event {
            event: Event::Permissions(perms),
        }
        .to_json(),
    ))
    .await
    .unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.terminal_id, term_id);
    assert_eq!(ev.event, Event::Permissions(perms));
    // Requests still round-trip on the same connection.
    let _agent = run_agent(ws, Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let r = app
        .gateway
        .execute(&app.license_id, &term_id, Command::Symbols, Duration::from_secs(3))
        .await
        .unwrap();
    assert_eq!(
        r,
        CommandResult::Symbols {
            symbols: vec!["EURUSD".into()]
        }
    );
    // The permission change reached the gateway: trade commands now pass through.
    let r = app
        .gateway
        .execute(
            &app.license_id,
            &term_id,
            Command::CancelOrder { ticket: 9 },
            Duration::from_secs(3),
        )
        .await;
    assert!(r.is_ok(), "{r:?}");
    let health = app.http.get(format!("{}/healthz", app.base)).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn pushed_quotes_answer_tick_commands_while_fresh() {
    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let (mut ws, first) = connect(&app, &term_key, "uid-A", Permissions::default()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }));
    let mut events = app.gateway.subscribe();
    let quote = |bid: f64, time: i64| tradeterm_core::Tick {
        symbol: "EURUSD".into(),
        bid,
        ask: bid + 0.0001,
        time,
    };
    let t0 = 1_763_790_000_000;
    // Taken before the quote is cached, so it bounds the cache's age from below.
    let pushed = Instant::now();
    // A newer quote, then an older one that arrives late: the newer one stays.
    for q in [quote(1.1, t0), quote(1.0, t0 - 1_000)] {
        ws.send(Message::text(AgentFrame::Event { event: Event::Tick(q) }.to_json()))
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .unwrap()
            .unwrap();
    }
    // The scripted agent answers `tick` for any symbol but FAIL with an
    // UNKNOWN_COMMAND error, so an answer that is a quote came from the cache.
    let _agent = run_agent(ws, Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let tick = |symbol: &str| {
        let gateway = app.gateway.clone();
        let (license, terminal) = (app.license_id.clone(), term_id.clone());
        let symbol = symbol.to_owned();
        async move {
            gateway
                .execute(&license, &terminal, Command::Tick { symbol }, Duration::from_secs(3))
                .await
        }
    };
    assert_eq!(tick("EURUSD").await.unwrap(), CommandResult::Tick(quote(1.1, t0)));
    // Another symbol was never pushed: the terminal is asked.
    match tick("GBPUSD").await {
        Err(DispatchError::CommandFailed(b)) => assert_eq!(b.code, codes::UNKNOWN_COMMAND),
        other => panic!("expected the terminal's answer, got {other:?}"),
    }
    // Another license never sees the quote.
    let (other, _) = app.store.create_license("other", Tier::Pro).await.unwrap();
    assert!(matches!(
        app.gateway
            .execute(
                &other.id,
                &term_id,
                Command::Tick {
                    symbol: "EURUSD".into()
                },
                Duration::from_secs(3)
            )
            .await,
        Err(DispatchError::NotFound)
    ));
    // Once the quote is older than the cache age (1 s by default), the terminal is asked again.
    wait_until("the cached quote to expire", async || tick("EURUSD").await.is_err()).await;
    assert!(pushed.elapsed() >= Duration::from_secs(1), "expired too early");
    match tick("EURUSD").await {
        Err(DispatchError::CommandFailed(b)) => assert_eq!(b.code, codes::UNKNOWN_COMMAND),
        other => panic!("expected the terminal's answer, got {other:?}"),
    }
}

/// Answers the next request frame with the account, returning its id.
async fn answer_account_request(ws: &mut Ws) -> String {
    loop {
        match next_gateway_frame(ws).await {
            GatewayFrame::Request { id, command, .. } => {
                assert_eq!(command, Command::AccountInfo);
                let reply = AgentFrame::Response(Response::ok(id.clone(), CommandResult::AccountInfo(account())));
                ws.send(Message::text(reply.to_json())).await.unwrap();
                return id;
            }
            GatewayFrame::Ping { ts } => ws.send(Message::text(AgentFrame::Pong { ts }.to_json())).await.unwrap(),
            _ => {}
        }
    }
}

#[tokio::test]
async fn the_request_id_reaches_the_agent_and_dispatches_are_counted() {
    use tradeterm_telemetry::names;
    use tradeterm_telemetry::request_id::{self, RequestId};

    let app = spawn_app().await;
    let before = scrape(&app).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let (mut ws, first) = connect(&app, &term_key, "uid-rid", Permissions::default()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }));
    let t = Duration::from_secs(5);

    // Over HTTP: the client sends the current request id, the gateway puts
    // it in front of the agent's request id.
    let remote = HttpDispatch::new(&app.base, INTERNAL).unwrap();
    let (lic, term) = (app.license_id.clone(), term_id.clone());
    let call = tokio::spawn(async move {
        let rid = RequestId::parse("rid-over-http").unwrap();
        request_id::scope(rid, remote.execute(&lic, &term, Command::AccountInfo, t)).await
    });
    let id = answer_account_request(&mut ws).await;
    assert!(id.starts_with("rid-over-http-"), "{id}");
    assert_eq!(request_id::of_command_id(&id), Some("rid-over-http"));
    assert!(matches!(call.await.unwrap(), Ok(CommandResult::AccountInfo(_))));

    // In process (the single node): the same task-local.
    let gateway = app.gateway.clone();
    let (lic, term) = (app.license_id.clone(), term_id.clone());
    let call = tokio::spawn(async move {
        let rid = RequestId::parse("rid-in-process").unwrap();
        request_id::scope(rid, gateway.execute(&lic, &term, Command::AccountInfo, t)).await
    });
    let id = answer_account_request(&mut ws).await;
    assert_eq!(request_id::of_command_id(&id), Some("rid-in-process"), "{id}");
    assert!(call.await.unwrap().is_ok());
    // Outside a request: a plain unique id.
    let gateway = app.gateway.clone();
    let (lic, term) = (app.license_id.clone(), term_id.clone());
    let call = tokio::spawn(async move { gateway.execute(&lic, &term, Command::AccountInfo, t).await });
    let id = answer_account_request(&mut ws).await;
    assert_eq!((id.len(), request_id::of_command_id(&id)), (32, None), "{id}");
    assert!(call.await.unwrap().is_ok());
    let err = app
        .gateway
        .execute(&app.license_id, &app.terminals[1].0, Command::Symbols, t)
        .await
        .unwrap_err();
    assert_eq!(err, DispatchError::Unreachable);

    // The metrics moved: three commands reached the agent (one through the
    // HTTP client), one terminal was unreachable, the agent is connected.
    let after = scrape(&app).await;
    let moved = |name: &str, labels: &[(&str, &str)]| after.value(name, labels) - before.value(name, labels);
    let ok = [("side", "gateway"), ("command", "account_info"), ("outcome", "ok")];
    assert!(moved(names::DISPATCH_TOTAL, &ok) >= 3.0);
    let count = format!("{}_count", names::DISPATCH_DURATION_SECONDS);
    assert!(moved(&count, &ok) >= 3.0);
    let client = [("side", "client"), ("command", "account_info"), ("outcome", "ok")];
    assert!(moved(names::DISPATCH_TOTAL, &client) >= 1.0);
    let unreachable = [("side", "gateway"), ("command", "symbols"), ("outcome", "unreachable")];
    assert!(moved(names::DISPATCH_TOTAL, &unreachable) >= 1.0);
    let mt5 = [("transport", "websocket"), ("platform", "MT5")];
    assert!(after.value(names::AGENTS_CONNECTED, &mt5) >= 1.0);
    assert!(moved(names::AGENT_CONNECTIONS_TOTAL, &mt5) >= 1.0);
    let dispatch_route = [
        ("service", "gateway"),
        ("route", "/internal/v1/dispatch"),
        ("method", "POST"),
        ("status", "200"),
    ];
    assert!(moved(names::HTTP_REQUESTS_TOTAL, &dispatch_route) >= 1.0);
}

#[tokio::test]
async fn every_answer_carries_its_request_id_and_readyz_checks_the_database_and_listener() {
    let app = spawn_app().await;
    let resp = app
        .http
        .get(format!("{}/healthz", app.base))
        .header("x-request-id", "client-chosen.1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "client-chosen.1");
    // An error envelope carries it too; a malformed incoming id is replaced.
    let resp = app
        .http
        .get(format!("{}/no/such/route", app.base))
        .header("x-request-id", "not a valid id")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let id = resp.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{id}");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["request_id"], id.as_str());
    assert_eq!(body["error"]["code"], "NOT_FOUND");

    let resp = app.http.get(format!("{}/readyz", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body,
        json!({ "status": "ready", "down": [], "checks": { "database": "ok", "listener": "ok" } })
    );
}

#[tokio::test]
async fn connected_terminals_have_last_seen_renewed_each_heartbeat_interval() {
    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let (idle_id, _) = app.terminals[1].clone();
    let (ws, first) = connect(&app, &term_key, "uid-seen", Permissions::default()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");
    let _agent = run_agent(ws, Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let seen = async |id: &str| {
        app.store
            .terminal(&app.license_id, id)
            .await
            .unwrap()
            .unwrap()
            .last_seen
    };
    let at_hello = seen(&term_id).await.expect("last_seen set by the hello");
    // The round (every 200 ms here) moves it on while the agent stays.
    wait_until("last_seen renewed", async || {
        seen(&term_id).await.is_some_and(|t| t > at_hello)
    })
    .await;
    // A terminal with no agent is left alone.
    assert_eq!(seen(&idle_id).await, None);
}

/// Heartbeats (`docs/agent-protocol.md`): an agent that pings hears the
/// gateway's `pong`s and no gateway `ping`; one that never pings gets the
/// gateway's `ping`s once an interval, and its `pong`s keep it connected
/// past the heartbeat timeout.
#[tokio::test]
async fn the_gateway_pings_only_agents_that_do_not_ping() {
    let app = spawn_app().await; // interval 200 ms, timeout 1 s
    let (_, key_a) = app.terminals[0].clone();
    let (silent_id, key_b) = app.terminals[1].clone();

    let (mut pinging, first) = connect(&app, &key_a, "uid-pinging", Permissions::default()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");
    let (mut silent, first) = connect(&app, &key_b, "uid-silent", Permissions::default()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");

    // The pinging agent: a ping every 100 ms for 1.5 s (7 intervals).
    let pinger = tokio::spawn(async move {
        let (mut pongs, mut pings) = (0, 0);
        for ts in 0..15 {
            pinging
                .send(Message::text(AgentFrame::Ping { ts }.to_json()))
                .await
                .unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
            while let Ok(msg) = tokio::time::timeout_at(deadline, pinging.next()).await {
                match msg {
                    Some(Ok(Message::Text(t))) => match GatewayFrame::parse(&t).unwrap() {
                        GatewayFrame::Pong { .. } => pongs += 1,
                        GatewayFrame::Ping { .. } => pings += 1,
                        other => panic!("unexpected {other:?}"),
                    },
                    Some(Ok(_)) => {}
                    other => panic!("the pinging agent lost its connection: {other:?}"),
                }
            }
        }
        (pongs, pings)
    });

    // The silent agent only answers the gateway's pings, for 1.5 s.
    let mut gateway_pings = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    while let Ok(msg) = tokio::time::timeout_at(deadline, silent.next()).await {
        match msg {
            Some(Ok(Message::Text(t))) => match GatewayFrame::parse(&t).unwrap() {
                GatewayFrame::Ping { ts } => {
                    gateway_pings += 1;
                    silent
                        .send(Message::text(AgentFrame::Pong { ts }.to_json()))
                        .await
                        .unwrap();
                }
                other => panic!("unexpected {other:?}"),
            },
            Some(Ok(_)) => {}
            other => panic!("the silent agent lost its connection: {other:?}"),
        }
    }
    let (pongs, pings) = pinger.await.unwrap();
    assert_eq!(pongs, 15, "every agent ping is answered");
    assert_eq!(pings, 0, "no gateway ping to an agent that pings");
    assert!(
        (5..=8).contains(&gateway_pings),
        "a ping every 200 ms to the silent agent, got {gateway_pings} in 1.5 s"
    );
    // Past the 1 s heartbeat timeout, the silent agent is still connected.
    let list = app.gateway.terminals(&app.license_id).await.unwrap();
    let silent_status = list.iter().find(|t| t.id == silent_id).unwrap();
    assert!(silent_status.connected, "{silent_status:?}");
}
