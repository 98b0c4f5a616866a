//! The agent against a tiny in-test gateway: a real WebSocket server on
//! loopback that plays the gateway's side of the protocol.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{WebSocketStream, accept_async};
use tradeterm_core::Timeframe;
use tradeterm_core::account::OrderType;
use tradeterm_core::time::parse_iso;
use tradeterm_protocol::agent::{
    AgentFrame, Command, CommandResult, Event, GatewayFrame, OrderRequest, PROTOCOL_VERSION, Platform, Response,
    TransactionKind, codes,
};
use tradeterm_sim::{AgentHandle, AgentSettings, ManualClock, SimSettings, Simulator, spawn_agent};

type Ws = WebSocketStream<TcpStream>;

const WAIT: Duration = Duration::from_secs(10);

fn simulator(allow_trading: bool) -> Simulator {
    let clock = Arc::new(ManualClock::new(parse_iso("2026-11-18T12:00:00Z").unwrap()));
    let mut s = SimSettings::demo(2);
    s.allow_trading = allow_trading;
    Simulator::new(s, clock)
}

fn agent_settings(port: u16) -> AgentSettings {
    AgentSettings {
        url: format!("ws://127.0.0.1:{port}/agent/v1"),
        terminal_key: "tk_test_secret".into(),
        uid: "uid-test-1".into(),
        ca_file: None,
    }
}

async fn accept(listener: &TcpListener) -> Ws {
    let (stream, _) = timeout(WAIT, listener.accept())
        .await
        .expect("agent connects in time")
        .unwrap();
    accept_async(stream).await.unwrap()
}

/// Next agent frame, skipping heartbeats and events unless asked for.
async fn next_frame(ws: &mut Ws) -> AgentFrame {
    loop {
        let msg = timeout(WAIT, ws.next())
            .await
            .expect("a frame in time")
            .expect("stream open")
            .unwrap();
        if let Message::Text(t) = msg {
            return AgentFrame::parse(t.as_str()).expect("agent frames parse");
        }
    }
}

async fn send(ws: &mut Ws, f: &GatewayFrame) {
    ws.send(Message::text(f.to_json())).await.unwrap();
}

async fn handshake(ws: &mut Ws, sim: &Simulator) {
    match next_frame(ws).await {
        AgentFrame::Hello(h) => {
            assert_eq!(h.protocol_version, PROTOCOL_VERSION);
            assert_eq!(h.terminal_key, "tk_test_secret");
            assert_eq!(h.terminal.uid, "uid-test-1");
            assert_eq!(h.terminal.platform, Platform::MT5);
            assert_eq!(h.account.login, sim.settings().login);
            assert_eq!(h.account.currency, "USD");
            assert_eq!(h.account.leverage, 100);
            assert_eq!(h.permissions, sim.permissions());
            assert_eq!(h.agent.name, "tradeterm-sim");
        }
        other => panic!("expected hello, got {other:?}"),
    }
    send(
        ws,
        &GatewayFrame::Welcome {
            protocol_version: PROTOCOL_VERSION,
            terminal_id: "term-1".into(),
            heartbeat_interval_ms: 200,
            heartbeat_timeout_ms: 5_000,
        },
    )
    .await;
}

async fn wait_connected(agent: &AgentHandle, connected: bool) {
    let deadline = Instant::now() + WAIT;
    while agent.is_connected() != connected {
        assert!(Instant::now() < deadline, "agent never became connected={connected}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn request(id: &str, command: Command) -> GatewayFrame {
    GatewayFrame::Request {
        id: id.into(),
        timeout_ms: 5_000,
        command,
    }
}

/// Collects responses for `ids`, answering nothing, and returns them with the
/// events seen meanwhile.
async fn collect(ws: &mut Ws, ids: &[&str]) -> (Vec<Response>, Vec<Event>, usize) {
    let mut responses: Vec<Response> = Vec::new();
    let mut events = Vec::new();
    let mut pings = 0;
    while responses.len() < ids.len() {
        match next_frame(ws).await {
            AgentFrame::Response(r) => {
                assert!(ids.contains(&r.id.as_str()), "unexpected id {}", r.id);
                responses.push(r);
            }
            AgentFrame::Event { event } => events.push(event),
            AgentFrame::Ping { .. } => pings += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    (responses, events, pings)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_requests_garbage_heartbeats_and_reconnect() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let sim = simulator(true);
    let agent = spawn_agent(sim.clone(), agent_settings(port));
    let mut ws = accept(&listener).await;
    assert!(!agent.is_connected(), "not before welcome");
    handshake(&mut ws, &sim).await;
    wait_connected(&agent, true).await;
    assert_eq!(agent.terminal_id().as_deref(), Some("term-1"));

    // Garbage from the "gateway" is ignored.
    for junk in [
        "this is not json",
        r#"{"type":"nope"}"#,
        "[1,2,3]",
        r#"{"type":"request","id":7}"#,
    ] {
        ws.send(Message::text(junk)).await.unwrap();
    }
    ws.send(Message::binary(vec![0u8, 159, 146, 150])).await.unwrap();

    let order = OrderRequest {
        symbol: "EURUSD".into(),
        order_type: OrderType::Buy,
        volume: 0.1,
        price: None,
        stop_loss: None,
        take_profit: None,
        deviation_points: None,
        comment: "agent.test".into(),
        magic: 42,
        idempotency_key: Some("idem-1".into()),
        stop_limit_price: None,
        expiration_mode: None,
        expiration: None,
        filling: None,
    };
    send(&mut ws, &request("r1", Command::AccountInfo)).await;
    send(&mut ws, &request("r2", Command::Symbols)).await;
    send(&mut ws, &request("r3", Command::PlaceOrder { order: order.clone() })).await;
    send(
        &mut ws,
        &request(
            "r4",
            Command::Bars {
                symbol: "US500".into(),
                timeframe: Timeframe::H4,
                count: Some(100),
                from: None,
                to: None,
            },
        ),
    )
    .await;
    send(&mut ws, &request("r5", Command::Tick { symbol: "NOPE".into() })).await;
    ws.send(Message::text(
        r#"{"type":"request","id":"r6","timeout_ms":1000,"command":{"cmd":"teleport"}}"#,
    ))
    .await
    .unwrap();
    send(&mut ws, &GatewayFrame::Ping { ts: 4242 }).await;

    let mut responses = Vec::new();
    let mut events = Vec::new();
    let mut pong = false;
    while responses.len() < 6 || !pong {
        match next_frame(&mut ws).await {
            AgentFrame::Response(r) => responses.push(r),
            AgentFrame::Event { event } => events.push(event),
            AgentFrame::Pong { ts } => {
                assert_eq!(ts, 4242);
                pong = true;
            }
            AgentFrame::Ping { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let by_id = |id: &str| {
        responses
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("no answer to {id}"))
    };
    assert!(matches!(by_id("r1").result, Some(CommandResult::AccountInfo(ref a)) if a.login == sim.settings().login));
    assert!(matches!(by_id("r2").result, Some(CommandResult::Symbols { ref symbols }) if symbols.len() == 5));
    let trade = match &by_id("r3").result {
        Some(CommandResult::Trade(t)) => t.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(trade.retcode, "done");
    assert!(matches!(by_id("r4").result, Some(CommandResult::Bars { ref bars, .. }) if !bars.is_empty()));
    assert_eq!(by_id("r5").error.as_ref().unwrap().code, codes::NOT_FOUND);
    assert_eq!(by_id("r6").error.as_ref().unwrap().code, codes::UNKNOWN_COMMAND);

    // The fill is pushed as a trade transaction, then an account snapshot; and pings flow.
    let deadline = Instant::now() + WAIT;
    let mut saw_deal = events.iter().any(|e| {
        matches!(
            e,
            Event::TradeTransaction {
                transaction: TransactionKind::DealAdded,
                ..
            }
        )
    });
    let mut saw_ping = false;
    let mut saw_tick = events.iter().any(|e| matches!(e, Event::Tick(_)));
    while !(saw_deal && saw_ping && saw_tick) {
        assert!(
            Instant::now() < deadline,
            "deal={saw_deal} ping={saw_ping} tick={saw_tick}"
        );
        match next_frame(&mut ws).await {
            AgentFrame::Event {
                event:
                    Event::TradeTransaction {
                        transaction: TransactionKind::DealAdded,
                        deal,
                        ..
                    },
            } => {
                assert_eq!(deal.unwrap().comment, "agent.test");
                saw_deal = true;
            }
            AgentFrame::Event { event: Event::Tick(_) } => saw_tick = true,
            AgentFrame::Ping { .. } => saw_ping = true,
            _ => {}
        }
    }

    // Same idempotency key again: same answer, no second position.
    send(&mut ws, &request("r7", Command::PlaceOrder { order })).await;
    let (r, _, _) = collect(&mut ws, &["r7"]).await;
    assert_eq!(r[0].result, Some(CommandResult::Trade(trade)));
    assert_eq!(sim.positions().len(), 1);

    // The gateway drops the connection: the agent comes back.
    drop(ws);
    wait_connected(&agent, false).await;
    let mut ws = accept(&listener).await;
    handshake(&mut ws, &sim).await;
    wait_connected(&agent, true).await;
    send(&mut ws, &request("r8", Command::Positions { symbol: None })).await;
    let (r, _, _) = collect(&mut ws, &["r8"]).await;
    assert!(matches!(r[0].result, Some(CommandResult::Positions { ref positions }) if positions.len() == 1));

    // Clean shutdown closes the socket.
    timeout(WAIT, agent.shutdown()).await.expect("shutdown in time");
    let closed = timeout(WAIT, async {
        loop {
            match ws.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "socket closed after shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_for_a_gateway_that_is_down_and_retries_after_refusal() {
    // Reserve a port, then free it: nothing listens there yet.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let sim = simulator(false);
    let agent = spawn_agent(sim.clone(), agent_settings(port));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!agent.is_connected());
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();

    // First attempt: refused like an unknown key.
    let mut ws = accept(&listener).await;
    assert!(matches!(next_frame(&mut ws).await, AgentFrame::Hello(_)));
    send(
        &mut ws,
        &GatewayFrame::error(None, codes::AUTH_FAILED, "unknown or revoked terminal key"),
    )
    .await;
    let _ = ws.close(None).await;
    assert!(!agent.is_connected());

    // It tries again by itself.
    let mut ws = accept(&listener).await;
    handshake(&mut ws, &sim).await;
    wait_connected(&agent, true).await;

    // Trading is off on this terminal: trade commands say so, checks still work.
    let order = OrderRequest {
        symbol: "EURUSD".into(),
        order_type: OrderType::Sell,
        volume: 0.1,
        price: None,
        stop_loss: None,
        take_profit: None,
        deviation_points: None,
        comment: String::new(),
        magic: 0,
        idempotency_key: None,
        stop_limit_price: None,
        expiration_mode: None,
        expiration: None,
        filling: None,
    };
    send(&mut ws, &request("p", Command::PlaceOrder { order: order.clone() })).await;
    send(&mut ws, &request("c", Command::OrderCheck { order })).await;
    let (r, _, _) = collect(&mut ws, &["p", "c"]).await;
    let p = r.iter().find(|x| x.id == "p").unwrap();
    assert_eq!(p.error.as_ref().unwrap().code, codes::TRADING_DISABLED);
    let c = r.iter().find(|x| x.id == "c").unwrap();
    assert!(matches!(c.result, Some(CommandResult::OrderCheck(ref oc)) if oc.valid));

    // Switching trading on is pushed as a permissions event.
    sim.set_allow_trading(true);
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "no permissions event");
        if let AgentFrame::Event {
            event: Event::Permissions(p),
        } = next_frame(&mut ws).await
        {
            assert!(p.trading_enabled());
            break;
        }
    }
    agent.shutdown().await;
}
