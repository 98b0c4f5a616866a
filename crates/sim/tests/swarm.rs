//! The light agents of a swarm against a tiny in-test gateway: a real
//! WebSocket server on loopback that plays the gateway's side of the
//! protocol (handshake, requests, heartbeats, a refused first attempt).
//! `bins/tradeterm/tests/e2e/swarm.rs` runs a swarm against the real gateway.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{WebSocketStream, accept_async};
use tradeterm_protocol::agent::{AgentFrame, Command, CommandResult, GatewayFrame, PROTOCOL_VERSION, codes};
use tradeterm_sim::swarm::{SWARM_AGENT_NAME, SWARM_ASK, SWARM_BID, SwarmKey, SwarmSettings, spawn_swarm};

type Ws = WebSocketStream<TcpStream>;

const WAIT: Duration = Duration::from_secs(10);
const AGENTS: usize = 20;

async fn send(ws: &mut Ws, f: &GatewayFrame) {
    ws.send(Message::text(f.to_json())).await.unwrap();
}

/// Next agent frame; `None` once the agent closed the connection.
async fn next_frame(ws: &mut Ws) -> Option<AgentFrame> {
    loop {
        match timeout(WAIT, ws.next()).await.expect("a frame in time")? {
            Ok(Message::Text(t)) => return Some(AgentFrame::parse(t.as_str()).expect("agent frames parse")),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// What the fake gateway saw of one welcomed connection.
#[derive(Debug)]
struct Seen {
    key: String,
    tick_bid: f64,
    account_login: u64,
    pinged: bool,
    ponged: bool,
}

/// Plays the gateway for one connection: refuses the very first hello of
/// key 0 once, otherwise welcomes, sends two requests, checks heartbeats
/// both ways, then waits for the agent to close.
async fn gateway_side(mut ws: Ws, refused_once: Arc<AtomicBool>, seen: mpsc::UnboundedSender<Seen>) {
    let Some(AgentFrame::Hello(hello)) = next_frame(&mut ws).await else {
        panic!("the first frame is hello")
    };
    assert_eq!(hello.protocol_version, PROTOCOL_VERSION);
    assert_eq!(hello.agent.name, SWARM_AGENT_NAME);
    assert!(hello.terminal.uid.starts_with("uid-"));
    assert!(!hello.permissions.allow_trading, "light agents never trade");
    if hello.terminal_key == "tt_term_0" && !refused_once.swap(true, Ordering::SeqCst) {
        send(&mut ws, &GatewayFrame::error(None, codes::AUTH_FAILED, "try again")).await;
        let _ = ws.close(None).await;
        return;
    }
    send(
        &mut ws,
        &GatewayFrame::Welcome {
            protocol_version: PROTOCOL_VERSION,
            terminal_id: format!("term_{}", hello.terminal.uid),
            heartbeat_interval_ms: 100,
            heartbeat_timeout_ms: 2_000,
        },
    )
    .await;
    for (id, command) in [
        (
            "r-tick",
            Command::Tick {
                symbol: "EURUSD".into(),
            },
        ),
        ("r-account", Command::AccountInfo),
    ] {
        let frame = GatewayFrame::Request {
            id: id.into(),
            timeout_ms: 5_000,
            command,
        };
        send(&mut ws, &frame).await;
    }
    send(&mut ws, &GatewayFrame::Ping { ts: 42 }).await;
    let mut s = Seen {
        key: hello.terminal_key.clone(),
        tick_bid: f64::NAN,
        account_login: 0,
        pinged: false,
        ponged: false,
    };
    let mut seen = Some(seen);
    while let Some(frame) = next_frame(&mut ws).await {
        match frame {
            AgentFrame::Response(r) => match (r.id.as_str(), r.result) {
                ("r-tick", Some(CommandResult::Tick(t))) => {
                    assert_eq!(t.symbol, "EURUSD");
                    assert_eq!(t.ask, SWARM_ASK);
                    s.tick_bid = t.bid;
                }
                ("r-account", Some(CommandResult::AccountInfo(a))) => s.account_login = a.login,
                other => panic!("unexpected response {other:?}"),
            },
            AgentFrame::Pong { ts } => {
                assert_eq!(ts, 42);
                s.ponged = true;
            }
            AgentFrame::Ping { ts } => {
                s.pinged = true;
                send(&mut ws, &GatewayFrame::Pong { ts }).await;
            }
            other => panic!("unexpected frame {other:?}"),
        }
        // Reported once everything was seen; the connection is kept until the agent closes it.
        if s.pinged
            && s.ponged
            && s.account_login > 0
            && s.tick_bid.is_finite()
            && let Some(tx) = seen.take()
        {
            tx.send(Seen {
                key: s.key.clone(),
                ..s
            })
            .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swarm_connects_answers_requests_and_heartbeats() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    let refused_once = Arc::new(AtomicBool::new(false));
    let server = {
        let refused_once = refused_once.clone();
        tokio::spawn(async move {
            let mut conns = Vec::new();
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let ws = accept_async(stream).await.unwrap();
                conns.push(tokio::spawn(gateway_side(ws, refused_once.clone(), seen_tx.clone())));
            }
        })
    };
    let keys = (0..AGENTS)
        .map(|i| SwarmKey {
            terminal_key: format!("tt_term_{i}"),
            uid: format!("uid-{i}"),
        })
        .collect();
    let swarm = spawn_swarm(SwarmSettings {
        url: format!("ws://127.0.0.1:{port}/agent/v1"),
        keys,
        connects_per_sec: 200.0,
    });
    swarm.start_recording();
    let mut keys_seen = HashSet::new();
    while keys_seen.len() < AGENTS {
        let s = timeout(WAIT, seen_rx.recv())
            .await
            .expect("every agent is served in time")
            .unwrap();
        assert_eq!(s.tick_bid, SWARM_BID);
        let index: u64 = s.key.trim_start_matches("tt_term_").parse().unwrap();
        assert_eq!(s.account_login, 8_000_000 + index);
        assert!(keys_seen.insert(s.key), "one welcomed connection per key");
    }
    assert!(refused_once.load(Ordering::SeqCst));
    let status = swarm.status();
    assert_eq!(status.connected, AGENTS);
    assert!(status.failed >= 1, "the refused handshake is counted: {status:?}");
    assert_eq!(status.welcomed, AGENTS as u64, "{status:?}");
    assert_eq!(status.answered, 2 * AGENTS as u64);
    let mut ids = swarm.terminal_ids();
    ids.sort();
    let mut want: Vec<String> = (0..AGENTS).map(|i| format!("term_uid-{i}")).collect();
    want.sort();
    assert_eq!(ids, want);
    let times = swarm.take_recording();
    assert_eq!(times.len(), 2 * AGENTS, "one answer time per request");
    assert!(times.iter().all(|&us| us < 5_000_000));
    // A second recording starts empty.
    swarm.start_recording();
    assert!(swarm.take_recording().is_empty());
    timeout(WAIT, swarm.shutdown()).await.expect("the swarm stops in time");
    server.abort();
}
