//! Integration tests of the HTTP long-poll binding of the agent protocol
//! (`POST /agent/v1/poll/open`, `/agent/v1/poll`, `/agent/v1/poll/close`)
//! against a real gateway over real HTTP, with a scripted agent built on
//! `tradeterm_protocol::poll::PollClient`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tradeterm_core::{AccountInfo, TradeMode};
use tradeterm_gateway::Gateway;
use tradeterm_protocol::agent::{
    AccountIdentity, AgentFrame, AgentInfo, Event, GatewayFrame, Hello, Permissions, Platform, Response,
    TerminalIdentity, TradeResult, TransactionKind, codes,
};
use tradeterm_protocol::poll::{
    PollBatch, PollClient, PollError, PollReply, PollWelcome, SESSION_EXPIRED, SESSION_HEADER,
};
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError, PROTOCOL_VERSION};
use tradeterm_store::Store;

mod common;

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

const TRADING: Permissions = Permissions {
    allow_trading: true,
    automated_trading: true,
};

struct TestApp {
    base: String,
    ws_url: String,
    gateway: Gateway,
    store: Arc<dyn Store>,
    license_id: String,
    license_key: String,
    terminals: Vec<(String, String)>,
    http: reqwest::Client,
    poll: PollClient,
    _dir: tempfile::TempDir,
}

/// A gateway on port 0 with fast heartbeats (interval 200 ms, the given
/// timeout) and key checks (300 ms), a Pro license and two terminals, no
/// internal token; with a long-poll client of it.
async fn spawn_app(heartbeat_timeout: Duration) -> TestApp {
    let c = common::spawn_app_with(heartbeat_timeout, None).await;
    TestApp {
        poll: PollClient::new(c.http.clone(), &format!("{}/agent/v1/poll", c.base)),
        base: c.base,
        ws_url: c.ws_url,
        gateway: c.gateway,
        store: c.store,
        license_id: c.license_id,
        license_key: c.license_key,
        terminals: c.terminals,
        http: c.http,
        _dir: c._dir,
    }
}

fn hello(key: &str, uid: &str, permissions: Permissions) -> Hello {
    Hello {
        protocol_version: PROTOCOL_VERSION,
        terminal_key: key.to_owned(),
        terminal: TerminalIdentity {
            uid: uid.to_owned(),
            platform: Platform::MT4,
            build: 1420,
        },
        account: AccountIdentity {
            login: 6001,
            server: "Poll-Demo".into(),
            company: "Test Broker".into(),
            currency: "USD".into(),
            leverage: 100,
            trade_mode: TradeMode::Demo,
        },
        permissions,
        agent: AgentInfo {
            name: "scripted-poll".into(),
            version: "0".into(),
        },
    }
}

fn account() -> AccountInfo {
    AccountInfo {
        login: 6001,
        name: "Poll".into(),
        server: "Poll-Demo".into(),
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

fn trade() -> TradeResult {
    TradeResult {
        retcode: "done".into(),
        order: 11,
        deal: 12,
        position: 13,
        volume: 0.1,
        price: 1.1,
        comment: String::new(),
    }
}

/// What a scripted agent answers to a request.
fn answer(id: String, command: &Command) -> Response {
    match command {
        Command::AccountInfo => Response::ok(id, CommandResult::AccountInfo(account())),
        Command::Symbols => Response::ok(
            id,
            CommandResult::Symbols {
                symbols: vec!["EURUSD".into()],
            },
        ),
        c if c.is_trade() => Response::ok(id, CommandResult::Trade(trade())),
        other => Response::err(
            id,
            tradeterm_protocol::ErrorBody::new(codes::UNKNOWN_COMMAND, other.name()),
        ),
    }
}

/// A scripted long-poll agent: numbers its batches, acknowledges what it
/// processed, processes a gateway frame only if its `seq` is new, and counts
/// the requests it executes.
struct PollAgent {
    client: PollClient,
    welcome: PollWelcome,
    /// `seq` of the last batch sent.
    seq: u64,
    /// Highest gateway-frame `seq` processed.
    ack: u64,
    executed: u32,
}

impl PollAgent {
    async fn open(app: &TestApp, key: &str, uid: &str, permissions: Permissions) -> Self {
        let welcome = app.poll.open(&hello(key, uid, permissions)).await.unwrap();
        Self {
            client: app.poll.clone(),
            welcome,
            seq: 0,
            ack: 0,
            executed: 0,
        }
    }

    fn session(&self) -> &str {
        &self.welcome.session
    }

    /// A new batch (next `seq`) with `frames`.
    fn batch(&mut self, frames: &[AgentFrame], wait_ms: u64) -> PollBatch {
        self.seq += 1;
        PollBatch::new(self.seq, self.ack, wait_ms, frames)
    }

    async fn send(&self, batch: &PollBatch) -> Result<PollReply, PollError> {
        self.client.exchange(&self.welcome.session, batch).await
    }

    /// Sends a new batch and processes the reply.
    async fn exchange(&mut self, frames: &[AgentFrame], wait_ms: u64) -> Result<Vec<GatewayFrame>, PollError> {
        let batch = self.batch(frames, wait_ms);
        let reply = self.send(&batch).await?;
        assert_eq!(reply.ack, batch.seq, "the gateway acknowledges the batch");
        Ok(self.accept(&reply))
    }

    /// The frames of `reply` not processed before, in order; requests among
    /// them count as executed.
    fn accept(&mut self, reply: &PollReply) -> Vec<GatewayFrame> {
        let mut new = Vec::new();
        for f in reply.gateway_frames() {
            let seq = f.seq.expect("every gateway frame has a seq");
            if seq <= self.ack {
                continue;
            }
            assert_eq!(seq, self.ack + 1, "gateway seqs increase by one");
            self.ack = seq;
            let frame = f.frame.expect("valid gateway frame");
            if matches!(frame, GatewayFrame::Request { .. }) {
                self.executed += 1;
            }
            new.push(frame);
        }
        new
    }

    /// Exchanges until a request arrives; returns its id and command.
    async fn next_request(&mut self) -> (String, Command) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "no request in time");
            for frame in self.exchange(&[], 2_000).await.unwrap() {
                if let GatewayFrame::Request { id, command, .. } = frame {
                    return (id, command);
                }
            }
        }
    }

    /// Answers every request until `stop` (a scripted agent loop).
    async fn serve_until(&mut self, stop: &tokio::sync::Notify) {
        let mut out = Vec::new();
        loop {
            let frames = tokio::select! {
                r = self.exchange(&out, if out.is_empty() { 2_000 } else { 0 }) => r,
                _ = stop.notified() => return,
            };
            out.clear();
            let Ok(frames) = frames else { return };
            for frame in frames {
                if let GatewayFrame::Request { id, command, .. } = frame {
                    out.push(AgentFrame::Response(answer(id, &command)));
                }
            }
        }
    }
}

fn assert_refused(result: Result<impl std::fmt::Debug, PollError>, status: u16, code: &str) -> String {
    match result {
        Err(PollError::Refused {
            status: s,
            code: c,
            message,
        }) => {
            assert_eq!((s, c.as_str()), (status, code), "{message}");
            message
        }
        other => panic!("expected {status} {code}, got {other:?}"),
    }
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

async fn post_raw(app: &TestApp, path: &str, session: Option<&str>, body: impl Into<reqwest::Body>) -> (u16, Value) {
    let mut req = app.http.post(format!("{}{path}", app.base)).body(body);
    if let Some(s) = session {
        req = req.header(SESSION_HEADER, s);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

fn dispatch(
    app: &TestApp,
    terminal_id: &str,
    command: Command,
    timeout: Duration,
) -> tokio::task::JoinHandle<Result<CommandResult, DispatchError>> {
    let gateway = app.gateway.clone();
    let license = app.license_id.clone();
    let terminal = terminal_id.to_owned();
    tokio::spawn(async move { gateway.execute(&license, &terminal, command, timeout).await })
}

#[tokio::test]
async fn open_checks_the_hello_like_the_websocket_endpoint() {
    let app = spawn_app(Duration::from_secs(3)).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let perms = Permissions::default();

    let message = assert_refused(
        app.poll.open(&hello(&app.license_key, "uid-A", perms)).await,
        401,
        codes::AUTH_FAILED,
    );
    assert!(message.contains("master license keys"), "{message}");
    assert_refused(
        app.poll.open(&hello("tt_term_nope", "uid-A", perms)).await,
        401,
        codes::AUTH_FAILED,
    );

    let welcome = app.poll.open(&hello(&term_key, "uid-A", perms)).await.unwrap();
    assert_eq!(welcome.terminal_id, term_id);
    assert_eq!(welcome.protocol_version, PROTOCOL_VERSION);
    assert_eq!(welcome.heartbeat_timeout_ms, 3_000);
    assert_eq!(welcome.heartbeat_interval_ms, 200);
    assert_eq!(
        welcome.poll_wait_max_ms, 3_000,
        "holds never outlast the heartbeat timeout"
    );
    assert_eq!(welcome.session.len(), 32);
    assert!(app.gateway.is_connected(&term_id));
    let stored = app.store.terminal(&app.license_id, &term_id).await.unwrap().unwrap();
    assert!(stored.fingerprint.is_some(), "the first open binds the key");
    let list = app.gateway.terminals(&app.license_id).await.unwrap();
    let status = list.iter().find(|s| s.id == term_id).unwrap();
    assert!(status.connected);
    assert_eq!(status.platform, Some(Platform::MT4));
    assert_eq!(status.account_login, Some(6001));

    let message = assert_refused(
        app.poll.open(&hello(&term_key, "uid-B", perms)).await,
        401,
        codes::AUTH_FAILED,
    );
    assert!(message.contains("bound to another terminal"), "{message}");
    assert!(app.gateway.is_connected(&term_id), "a refused open changes nothing");

    let mut v99 = hello(&app.terminals[1].1, "uid-C", perms);
    v99.protocol_version = 99;
    assert_refused(app.poll.open(&v99).await, 400, codes::UNSUPPORTED_VERSION);
    let mut no_uid = hello(&app.terminals[1].1, " ", perms);
    no_uid.terminal.uid = " ".into();
    assert_refused(app.poll.open(&no_uid).await, 400, codes::PROTOCOL_ERROR);

    // Bodies that are not a hello.
    for (body, code) in [
        ("not json", codes::MALFORMED_FRAME),
        ("{\"type\":\"hello\"}", codes::MALFORMED_FRAME),
        ("{\"type\":\"ping\",\"ts\":1}", codes::PROTOCOL_ERROR),
        ("{\"type\":\"warp\"}", codes::PROTOCOL_ERROR),
        ("", codes::MALFORMED_FRAME),
    ] {
        let (status, v) = post_raw(&app, "/agent/v1/poll/open", None, body).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(v["type"], "error", "{body}");
        assert_eq!(v["code"], code, "{body}");
    }
    let (status, v) = post_raw(&app, "/agent/v1/poll/open", None, vec![0xffu8, 0xfe]).await;
    assert_eq!((status, v["code"].as_str()), (400, Some(codes::MALFORMED_FRAME)));
}

#[tokio::test]
async fn exchanges_refuse_unknown_sessions_and_bad_bodies_and_survive_bad_frames() {
    let app = spawn_app(Duration::from_secs(3)).await;
    let (_, term_key) = app.terminals[0].clone();
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", Permissions::default()).await;

    assert_refused(
        app.poll
            .exchange("0123456789abcdef0123456789abcdef", &PollBatch::new(1, 0, 0, &[]))
            .await,
        404,
        SESSION_EXPIRED,
    );
    let (status, v) = post_raw(&app, "/agent/v1/poll", None, "{\"seq\":1}").await;
    assert_eq!((status, v["code"].as_str()), (404, Some(SESSION_EXPIRED)));
    let long = "x".repeat(500);
    let (status, _) = post_raw(&app, "/agent/v1/poll", Some(&long), "{\"seq\":1}").await;
    assert_eq!(status, 404);

    // Bodies that are not a batch: 400, nothing processed, session intact.
    for body in [
        "nope",
        "{\"ack\":0}",
        "{\"seq\":\"1\"}",
        "{\"seq\":1,\"frames\":5}",
        "[]",
    ] {
        let (status, v) = post_raw(&app, "/agent/v1/poll", Some(agent.session()), body).await;
        assert_eq!(
            (status, v["code"].as_str()),
            (400, Some(codes::MALFORMED_FRAME)),
            "{body}"
        );
    }
    let huge = vec![b' '; 16 * 1024 * 1024 + 1];
    let (status, v) = post_raw(&app, "/agent/v1/poll", Some(agent.session()), huge).await;
    assert_eq!((status, v["code"].as_str()), (400, Some(codes::MALFORMED_FRAME)));

    // Frames the gateway cannot use are answered with error frames, in order,
    // and the good ones around them still count.
    let mut batch = agent.batch(&[AgentFrame::Ping { ts: 7 }], 0);
    batch.frames.push(serde_json::json!({ "type": "warp" }));
    batch.frames.push(serde_json::json!({ "type": "response" }));
    batch.frames.push(
        serde_json::to_value(AgentFrame::Hello(Box::new(hello(
            &term_key,
            "uid-A",
            Permissions::default(),
        ))))
        .unwrap(),
    );
    batch.frames.push(serde_json::json!(42));
    let reply = agent.send(&batch).await.unwrap();
    let frames = agent.accept(&reply);
    let codes_seen: Vec<String> = frames
        .iter()
        .map(|f| match f {
            GatewayFrame::Pong { ts } => format!("pong {ts}"),
            GatewayFrame::Error { error, .. } => error.code.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        codes_seen,
        [
            "pong 7",
            codes::UNKNOWN_FRAME,
            codes::MALFORMED_FRAME,
            codes::PROTOCOL_ERROR,
            codes::MALFORMED_FRAME
        ]
    );
    // Acknowledged frames are not sent again.
    assert!(agent.exchange(&[], 0).await.unwrap().is_empty());
}

#[tokio::test]
async fn dispatch_round_trip_with_held_polls() {
    let app = spawn_app(Duration::from_secs(30)).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    assert_eq!(agent.welcome.poll_wait_max_ms, 25_000);

    // A held exchange is released at once by a newer one (with no frames).
    let older = agent.batch(&[], 20_000);
    let client = agent.client.clone();
    let session = agent.session().to_owned();
    let held = tokio::spawn(async move { client.exchange(&session, &older).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let newer = agent.batch(&[], 20_000);
    let client = agent.client.clone();
    let session = agent.session().to_owned();
    let newest = tokio::spawn(async move { client.exchange(&session, &newer).await });
    let reply = held.await.unwrap().unwrap();
    assert!(reply.frames.is_empty());
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());

    // The held newest exchange returns as soon as a request is queued.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let pending = dispatch(&app, &term_id, Command::AccountInfo, Duration::from_secs(5));
    let reply = newest.await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    let frames = agent.accept(&reply);
    let [
        GatewayFrame::Request {
            id,
            timeout_ms,
            command,
        },
    ] = frames.as_slice()
    else {
        panic!("expected one request, got {frames:?}");
    };
    assert_eq!(*timeout_ms, 5_000);
    assert_eq!(*command, Command::AccountInfo);
    let response = AgentFrame::Response(answer(id.clone(), command));
    assert!(agent.exchange(&[response], 0).await.unwrap().is_empty());
    match pending.await.unwrap().unwrap() {
        CommandResult::AccountInfo(a) => assert_eq!(a.login, 6001),
        other => panic!("unexpected {other:?}"),
    }

    // Events pushed in a batch reach the gateway's subscribers in order, and
    // a pushed quote answers tick commands.
    let mut events = app.gateway.subscribe();
    let tick = tradeterm_core::Tick {
        symbol: "EURUSD".into(),
        bid: 1.1,
        ask: 1.1001,
        time: 1_763_790_000_000,
    };
    let pushed = [
        AgentFrame::Event {
            event: Event::Tick(tick.clone()),
        },
        AgentFrame::Event {
            event: Event::Account(account()),
        },
    ];
    agent.exchange(&pushed, 0).await.unwrap();
    let first = events.recv().await.unwrap();
    assert_eq!(first.terminal_id, term_id);
    assert!(matches!(first.event, Event::Tick(_)));
    assert!(matches!(events.recv().await.unwrap().event, Event::Account(_)));
    let got = app
        .gateway
        .execute(
            &app.license_id,
            &term_id,
            Command::Tick {
                symbol: "EURUSD".into(),
            },
            Duration::from_secs(1),
        )
        .await
        .unwrap();
    assert_eq!(got, CommandResult::Tick(tick));

    // Many requests at once through a scripted agent loop.
    let stop = Arc::new(tokio::sync::Notify::new());
    let calls: Vec<_> = (0..8)
        .map(|_| dispatch(&app, &term_id, Command::Symbols, Duration::from_secs(5)))
        .collect();
    let serving = {
        let stop = stop.clone();
        tokio::spawn(async move {
            agent.serve_until(&stop).await;
            agent
        })
    };
    for call in calls {
        assert!(matches!(call.await.unwrap(), Ok(CommandResult::Symbols { .. })));
    }
    stop.notify_one();
    let agent = serving.await.unwrap();
    assert_eq!(agent.executed, 9, "each request executed once");
}

#[tokio::test]
async fn per_command_timeout_applies_to_poll_agents() {
    let app = spawn_app(Duration::from_secs(30)).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    let started = Instant::now();
    let pending = dispatch(&app, &term_id, Command::AccountInfo, Duration::from_millis(400));
    let (id, _) = agent.next_request().await;
    let err = pending.await.unwrap().unwrap_err();
    assert_eq!(err, DispatchError::Timeout(Duration::from_millis(400)));
    assert!(started.elapsed() < Duration::from_secs(3));
    // A late answer is dropped; the session goes on.
    let late = AgentFrame::Response(Response::ok(id, CommandResult::AccountInfo(account())));
    assert!(agent.exchange(&[late], 0).await.unwrap().is_empty());
    assert!(app.gateway.is_connected(&term_id));
}

#[tokio::test]
async fn a_silent_session_expires_and_fails_its_pending_requests() {
    let app = spawn_app(Duration::from_millis(1_000)).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    // Exchanges keep it alive past the timeout.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1_600) {
        agent.exchange(&[], 300).await.unwrap();
    }
    assert!(app.gateway.is_connected(&term_id));

    let pending = dispatch(&app, &term_id, Command::AccountInfo, Duration::from_secs(20));
    let silent = Instant::now();
    wait_until("heartbeat expiry", async || !app.gateway.is_connected(&term_id)).await;
    assert!(silent.elapsed() >= Duration::from_millis(900), "{:?}", silent.elapsed());
    assert_eq!(pending.await.unwrap().unwrap_err(), DispatchError::Unreachable);
    assert_refused(agent.exchange(&[], 0).await, 404, SESSION_EXPIRED);
    let list = app.gateway.terminals(&app.license_id).await.unwrap();
    let status = list.iter().find(|s| s.id == term_id).unwrap();
    assert!(!status.connected && status.bound && status.last_seen.is_some());

    // A new session works again.
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    agent.exchange(&[], 0).await.unwrap();
    assert!(app.gateway.is_connected(&term_id));
}

#[tokio::test]
async fn close_reports_the_terminal_disconnected_at_once() {
    let app = spawn_app(Duration::from_secs(30)).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    let pending = dispatch(&app, &term_id, Command::AccountInfo, Duration::from_secs(20));
    agent.next_request().await;
    app.poll.close(agent.session()).await.unwrap();
    assert!(!app.gateway.is_connected(&term_id));
    assert_eq!(pending.await.unwrap().unwrap_err(), DispatchError::Unreachable);
    assert_refused(agent.exchange(&[], 0).await, 404, SESSION_EXPIRED);
    app.poll.close(agent.session()).await.unwrap();
    assert_refused(app.poll.close("nope").await, 404, SESSION_EXPIRED);
}

#[tokio::test]
async fn key_rotation_answers_the_next_exchange_with_auth_failed() {
    let app = spawn_app(Duration::from_secs(30)).await;
    let (term_id, old_key) = app.terminals[0].clone();
    let mut agent = PollAgent::open(&app, &old_key, "uid-A", TRADING).await;

    // A held exchange learns of a dashboard rotation at once.
    let batch = agent.batch(&[], 20_000);
    let client = agent.client.clone();
    let session = agent.session().to_owned();
    let held = tokio::spawn(async move { client.exchange(&session, &batch).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let resp = app
        .http
        .post(format!("{}/api/dashboard/terminals/{term_id}/rotate-key", app.base))
        .bearer_auth(&app.license_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["data"]["agent_disconnected"], true);
    let new_key = body["data"]["terminal_key"].as_str().unwrap().to_owned();
    let message = assert_refused(held.await.unwrap(), 401, codes::AUTH_FAILED);
    assert!(message.contains("revoked or rotated"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(!app.gateway.is_connected(&term_id));
    assert_refused(agent.exchange(&[], 0).await, 401, codes::AUTH_FAILED);

    // The old key opens nothing; the new one does (same binding).
    assert_refused(
        app.poll.open(&hello(&old_key, "uid-A", TRADING)).await,
        401,
        codes::AUTH_FAILED,
    );
    let mut agent = PollAgent::open(&app, &new_key, "uid-A", TRADING).await;
    agent.exchange(&[], 0).await.unwrap();

    // A rotation by another process: the periodic key check ends the session
    // and the next exchange is refused.
    let rotated = app.store.rotate_terminal_key(&app.license_id, &term_id).await.unwrap();
    assert_eq!(rotated.revoked_key_ids.len(), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "the rotation was never noticed");
        match agent.exchange(&[], 100).await {
            Ok(_) => continue,
            Err(e) => {
                assert_eq!(e.code(), Some(codes::AUTH_FAILED), "{e}");
                assert!(e.session_lost());
                break;
            }
        }
    }
    assert!(!app.gateway.is_connected(&term_id));
    PollAgent::open(&app, rotated.key.expose(), "uid-A", TRADING).await;
    assert!(app.gateway.is_connected(&term_id));
}

async fn ws_connect(app: &TestApp, key: &str, uid: &str) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(&app.ws_url).await.unwrap();
    let text = AgentFrame::Hello(Box::new(hello(key, uid, TRADING))).to_json();
    ws.send(Message::text(text)).await.unwrap();
    match ws_next(&mut ws).await {
        Some(GatewayFrame::Welcome { .. }) => ws,
        other => panic!("expected welcome, got {other:?}"),
    }
}

/// The next gateway frame that is not a ping; `None` once the socket closes.
async fn ws_next(ws: &mut Ws) -> Option<GatewayFrame> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("frame in time");
        match msg {
            Some(Ok(Message::Text(t))) => match GatewayFrame::parse(&t).unwrap() {
                GatewayFrame::Ping { .. } => continue,
                frame => return Some(frame),
            },
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            _ => return None,
        }
    }
}

#[tokio::test]
async fn websocket_and_poll_connections_replace_each_other() {
    let app = spawn_app(Duration::from_secs(30)).await;
    let (term_id, term_key) = app.terminals[0].clone();

    // A poll session replaces a WebSocket connection, which is closed.
    let mut ws = ws_connect(&app, &term_key, "uid-A").await;
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    assert!(ws_next(&mut ws).await.is_none(), "the websocket is closed");
    let pending = dispatch(&app, &term_id, Command::Symbols, Duration::from_secs(5));
    let (id, command) = agent.next_request().await;
    agent
        .exchange(&[AgentFrame::Response(answer(id, &command))], 0)
        .await
        .unwrap();
    assert!(matches!(pending.await.unwrap(), Ok(CommandResult::Symbols { .. })));

    // A WebSocket connection replaces the poll session: a held exchange
    // returns at once with SESSION_EXPIRED.
    let batch = agent.batch(&[], 20_000);
    let client = agent.client.clone();
    let session = agent.session().to_owned();
    let held = tokio::spawn(async move { client.exchange(&session, &batch).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut ws = ws_connect(&app, &term_key, "uid-A").await;
    let message = assert_refused(held.await.unwrap(), 404, SESSION_EXPIRED);
    assert!(message.contains("replaced"), "{message}");
    assert_refused(agent.exchange(&[], 0).await, 404, SESSION_EXPIRED);
    assert!(app.gateway.is_connected(&term_id));
    let pending = dispatch(&app, &term_id, Command::Symbols, Duration::from_secs(5));
    let Some(GatewayFrame::Request { id, command, .. }) = ws_next(&mut ws).await else {
        panic!("the request goes to the websocket");
    };
    let reply = AgentFrame::Response(answer(id, &command)).to_json();
    ws.send(Message::text(reply)).await.unwrap();
    assert!(matches!(pending.await.unwrap(), Ok(CommandResult::Symbols { .. })));

    // And a newer poll session replaces an older one.
    let first = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    let mut second = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    assert_ne!(first.session(), second.session());
    second.exchange(&[], 0).await.unwrap();
    let mut first = first;
    wait_until(
        "older session ended",
        async || matches!(first.exchange(&[], 0).await, Err(ref e) if e.code() == Some(SESSION_EXPIRED)),
    )
    .await;
    assert!(app.gateway.is_connected(&term_id));
}

/// The agent executes a trade request, answers it, and loses the gateway's
/// reply; it re-sends the same batch. The gateway must not process it twice
/// (one result for the dispatcher, one event, one pong) and must not deliver
/// the request again as new. Re-polling with an old `ack` re-delivers the
/// request under the same `seq`, which the agent drops.
#[tokio::test]
async fn a_replayed_batch_and_a_redelivered_request_execute_nothing_twice() {
    let app = spawn_app(Duration::from_secs(30)).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let mut agent = PollAgent::open(&app, &term_key, "uid-A", TRADING).await;
    let mut events = app.gateway.subscribe();
    let executions = AtomicU32::new(0);

    let close = Command::ClosePosition {
        ticket: 13,
        volume: None,
        deviation_points: None,
        idempotency_key: Some("close-13".into()),
    };
    let pending = dispatch(&app, &term_id, close.clone(), Duration::from_secs(10));

    // The request arrives with seq 1 and is executed.
    let first = agent.batch(&[], 5_000);
    let reply = agent.send(&first).await.unwrap();
    let frames = reply.gateway_frames();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].seq, Some(1));
    let Ok(GatewayFrame::Request { id, command, .. }) = frames[0].frame.clone() else {
        panic!("expected the request, got {frames:?}");
    };
    assert_eq!(command, close);
    for frame in agent.accept(&reply) {
        if matches!(frame, GatewayFrame::Request { .. }) {
            executions.fetch_add(1, Ordering::SeqCst);
        }
    }
    assert_eq!(executions.load(Ordering::SeqCst), 1);

    // Re-polling with the old ack (0) re-delivers it with the same seq; the
    // agent drops it by seq.
    let mut stale = agent.batch(&[], 0);
    stale.ack = 0;
    let reply = agent.send(&stale).await.unwrap();
    let again = reply.gateway_frames();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].seq, Some(1));
    assert!(matches!(&again[0].frame, Ok(GatewayFrame::Request { id: same, .. }) if *same == id));
    for frame in agent.accept(&reply) {
        if matches!(frame, GatewayFrame::Request { .. }) {
            executions.fetch_add(1, Ordering::SeqCst);
        }
    }
    assert_eq!(
        executions.load(Ordering::SeqCst),
        1,
        "a re-delivered request is not executed again"
    );

    // The response, an event and a ping go out in one batch; its reply is lost.
    let transaction = AgentFrame::Event {
        event: Event::TradeTransaction {
            transaction: TransactionKind::DealAdded,
            deal: None,
            order: 11,
            position: 13,
            order_state: None,
            position_volume: None,
        },
    };
    let batch = agent.batch(
        &[
            AgentFrame::Response(Response::ok(id.clone(), CommandResult::Trade(trade()))),
            transaction,
            AgentFrame::Ping { ts: 4242 },
        ],
        0,
    );
    assert_eq!(batch.ack, 1, "the batch acknowledges the request");
    let _lost = agent.send(&batch).await.unwrap();
    assert_eq!(pending.await.unwrap(), Ok(CommandResult::Trade(trade())));

    // The retry re-sends the same batch (same seq, same frames).
    let reply = agent.send(&batch).await.unwrap();
    assert_eq!(reply.ack, batch.seq);
    let frames = agent.accept(&reply);
    assert_eq!(frames, [GatewayFrame::Pong { ts: 4242 }], "one pong, no request again");
    assert_eq!(executions.load(Ordering::SeqCst), 1);
    // Nothing else is queued: the replayed ping was not answered twice.
    assert!(agent.exchange(&[], 300).await.unwrap().is_empty());

    // The event was published once.
    let mut transactions = 0;
    while let Ok(e) = events.try_recv() {
        if e.terminal_id == term_id && matches!(e.event, Event::TradeTransaction { .. }) {
            transactions += 1;
        }
    }
    assert_eq!(transactions, 1);
    assert_eq!(agent.executed, 1);
    assert!(app.gateway.is_connected(&term_id));
}

/// The simulated terminal over the binding (an `http://` gateway URL):
/// requests answered, trades executed, ticks pushed, a lost session
/// reopened with backoff, and close at shutdown.
#[tokio::test]
async fn the_simulated_agent_runs_over_the_binding() {
    use tradeterm_sim::{AgentSettings, SimSettings, Simulator, Transport, spawn_agent};

    let app = spawn_app(Duration::from_secs(3)).await;
    let (term_id, term_key) = app.terminals[0].clone();
    let mut settings = SimSettings::demo(0);
    settings.allow_trading = true;
    settings.always_open = true;
    let sim = Simulator::new(settings.clone(), settings.system_clock());
    let agent_settings = AgentSettings {
        url: app.base.clone(),
        terminal_key: term_key.clone(),
        uid: "sim-poll".into(),
        ca_file: None,
    };
    assert_eq!(agent_settings.transport(), Transport::Poll);
    let mut ticks = app.gateway.subscribe();
    let agent = spawn_agent(sim, agent_settings);
    wait_until("the sim connects", async || {
        agent.is_connected() && app.gateway.is_connected(&term_id)
    })
    .await;
    assert_eq!(agent.terminal_id().as_deref(), Some(term_id.as_str()));

    let t = Duration::from_secs(5);
    let account = app
        .gateway
        .execute(&app.license_id, &term_id, Command::AccountInfo, t)
        .await
        .unwrap();
    assert!(
        matches!(account, CommandResult::AccountInfo(ref a) if a.login == settings.login),
        "{account:?}"
    );
    let order = tradeterm_protocol::agent::OrderRequest {
        symbol: "EURUSD".into(),
        order_type: tradeterm_core::account::OrderType::Buy,
        volume: 0.1,
        price: None,
        stop_loss: None,
        take_profit: None,
        deviation_points: None,
        comment: "poll v1.0...".into(),
        magic: 7,
        idempotency_key: Some("poll-buy-1".into()),
        stop_limit_price: None,
        expiration_mode: None,
        expiration: None,
        filling: None,
    };
    let placed = app
        .gateway
        .execute(&app.license_id, &term_id, Command::PlaceOrder { order }, t)
        .await
        .unwrap();
    assert!(
        matches!(placed, CommandResult::Trade(ref tr) if tr.retcode == "done"),
        "{placed:?}"
    );
    match app
        .gateway
        .execute(&app.license_id, &term_id, Command::Positions { symbol: None }, t)
        .await
        .unwrap()
    {
        CommandResult::Positions { positions } => {
            assert_eq!(positions.len(), 1, "the order executed exactly once");
            assert_eq!(positions[0].comment, "poll v1.0...");
        }
        other => panic!("unexpected {other:?}"),
    }
    // Many requests at once are answered.
    let calls: Vec<_> = (0..10).map(|_| dispatch(&app, &term_id, Command::Symbols, t)).collect();
    for call in calls {
        assert!(matches!(call.await.unwrap(), Ok(CommandResult::Symbols { .. })));
    }
    // Quotes are pushed (and refreshed) in batches.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let event = tokio::time::timeout_at(deadline.into(), ticks.recv())
            .await
            .expect("a tick in time")
            .unwrap();
        if event.terminal_id == term_id && matches!(event.event, Event::Tick(_)) {
            break;
        }
    }

    // Another session of the same installation replaces the sim's; the sim
    // notices (404), opens a new session after its backoff and replaces it back.
    let intruder = PollAgent::open(&app, &term_key, "sim-poll", TRADING).await;
    let mut intruder = intruder;
    wait_until(
        "the sim reconnects",
        async || matches!(intruder.exchange(&[], 0).await, Err(ref e) if e.code() == Some(SESSION_EXPIRED)),
    )
    .await;
    wait_until("the sim is connected again", async || agent.is_connected()).await;
    let account = app
        .gateway
        .execute(&app.license_id, &term_id, Command::AccountInfo, t)
        .await
        .unwrap();
    assert!(matches!(account, CommandResult::AccountInfo(_)));

    // Shutdown closes the session: the terminal is disconnected at once.
    agent.shutdown().await;
    assert!(!app.gateway.is_connected(&term_id));
}
