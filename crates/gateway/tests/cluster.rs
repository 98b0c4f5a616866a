//! Several gateway instances sharing Redis (the machine's, 127.0.0.1:6379)
//! and a store: the route table, relaying, routed dispatch from an API
//! instance, a reconnect to another instance, a dead instance and a
//! graceful shutdown. Scripted agents stand in for terminals.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tradeterm_cluster::{RouteTable, RoutedDispatch};
use tradeterm_core::{AccountInfo, TradeMode};
use tradeterm_gateway::{ClusterSettings, Gateway, GatewaySettings, ServerHandle};
use tradeterm_protocol::agent::{AgentFrame, GatewayFrame, Permissions, Platform, Response, codes};
use tradeterm_protocol::http_client::HttpDispatch;
use tradeterm_protocol::token::{TokenSigner, generate_rsa_pem_pair};
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError};
use tradeterm_store::{SqlStore, Store, Tier};

mod common;

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

const INTERNAL: &str = "cluster-test-token";
const TTL: Duration = Duration::from_millis(1000);

fn redis() -> deadpool_redis::Pool {
    deadpool_redis::Config::from_url("redis://127.0.0.1:6379")
        .create_pool(Some(deadpool_redis::Runtime::Tokio1))
        .unwrap()
}

struct Instance {
    gateway: Gateway,
    base: String,
    ws_url: String,
    handle: ServerHandle,
}

struct Cluster {
    a: Instance,
    b: Instance,
    license_id: String,
    terminals: Vec<(String, String)>,
    _dir: tempfile::TempDir,
}

async fn instance(name: &str, store: Arc<dyn Store>, signer: TokenSigner) -> Instance {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let settings = GatewaySettings {
        heartbeat_interval: Duration::from_millis(200),
        heartbeat_timeout: TTL,
        hello_timeout: Duration::from_secs(2),
        internal_token: Some(INTERNAL.into()),
        redis: Some(redis()),
        cluster: Some(ClusterSettings {
            instance: name.into(),
            advertise_url: base.clone(),
        }),
        ..GatewaySettings::default()
    };
    let gateway = Gateway::new(settings, store, signer);
    let server = gateway.server(listener).unwrap();
    let handle = server.handle();
    tokio::spawn(server.run_until_stopped());
    Instance {
        gateway,
        ws_url: format!("ws://127.0.0.1:{port}/agent/v1"),
        base,
        handle,
    }
}

async fn cluster() -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("gw.db").display());
    let store: Arc<dyn Store> = Arc::new(SqlStore::connect(&url).await.unwrap());
    let (private, _) = generate_rsa_pem_pair().unwrap();
    let signer = || TokenSigner::from_pem(private.as_bytes(), "iss", "aud").unwrap();
    let a = instance("a", store.clone(), signer()).await;
    let b = instance("b", store.clone(), signer()).await;
    let (license, _) = store.create_license("acme", Tier::Pro).await.unwrap();
    let mut terminals = Vec::new();
    for name in ["alpha", "beta"] {
        let (t, k) = store.create_terminal(&license.id, name).await.unwrap();
        terminals.push((t.id, k.expose().to_owned()));
    }
    Cluster {
        a,
        b,
        license_id: license.id,
        terminals,
        _dir: dir,
    }
}

/// The hello of the one installation these tests connect.
fn hello(key: &str) -> String {
    common::hello(key, "install-1", Permissions::default())
}

async fn next_frame(ws: &mut Ws) -> Option<GatewayFrame> {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await.ok()?? {
            Ok(Message::Text(t)) => return GatewayFrame::parse(&t).ok(),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            _ => return None,
        }
    }
}

/// Connects an agent with `key` to `ws_url` and completes the handshake.
async fn connect(ws_url: &str, key: &str) -> (Ws, GatewayFrame) {
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
    ws.send(Message::text(hello(key))).await.unwrap();
    let first = next_frame(&mut ws).await.expect("a first frame");
    (ws, first)
}

fn account(name: &str) -> AccountInfo {
    AccountInfo {
        login: 5001,
        name: name.into(),
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

/// What a scripted agent saw at the end of its connection.
#[derive(Debug)]
struct Ending {
    errors: Vec<String>,
    close: Option<CloseCode>,
}

/// Answers `account_info` with an account named `label`, after `delay`;
/// returns what the gateway said when the connection ended.
fn run_agent(mut ws: Ws, label: &'static str, delay: Duration) -> tokio::task::JoinHandle<Ending> {
    tokio::spawn(async move {
        let mut ending = Ending {
            errors: Vec::new(),
            close: None,
        };
        while let Some(Ok(msg)) = ws.next().await {
            let text = match msg {
                Message::Text(t) => t,
                Message::Close(frame) => {
                    ending.close = frame.map(|f| f.code);
                    break;
                }
                _ => continue,
            };
            let reply = match GatewayFrame::parse(&text).unwrap() {
                GatewayFrame::Request { id, command, .. } => {
                    tokio::time::sleep(delay).await;
                    let response = match command {
                        Command::AccountInfo => Response::ok(id, CommandResult::AccountInfo(account(label))),
                        other => Response::err(
                            id,
                            tradeterm_protocol::ErrorBody::new(codes::UNKNOWN_COMMAND, other.name()),
                        ),
                    };
                    AgentFrame::Response(response).to_json()
                }
                GatewayFrame::Ping { ts } => AgentFrame::Pong { ts }.to_json(),
                GatewayFrame::Error { error, .. } => {
                    ending.errors.push(error.code);
                    continue;
                }
                _ => continue,
            };
            if ws.send(Message::text(reply)).await.is_err() {
                break;
            }
        }
        ending
    })
}

async fn wait_until(what: &str, limit: Duration, mut f: impl AsyncFnMut() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f().await {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out after {limit:?} waiting for {what}");
}

fn routed(entry: &str) -> RoutedDispatch {
    RoutedDispatch::new(
        RouteTable::new(redis(), TTL),
        HttpDispatch::new(entry, INTERNAL).unwrap(),
    )
}

async fn account_name(d: &dyn Dispatch, c: &Cluster, terminal: &str) -> Result<String, DispatchError> {
    match d
        .execute(&c.license_id, terminal, Command::AccountInfo, Duration::from_secs(3))
        .await?
    {
        CommandResult::AccountInfo(a) => Ok(a.name),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_terminal_on_one_instance_is_reached_and_listed_through_the_other() {
    let c = cluster().await;
    let (t1, k1) = c.terminals[0].clone();
    let (ws, welcome) = connect(&c.b.ws_url, &k1).await;
    assert!(matches!(welcome, GatewayFrame::Welcome { .. }), "{welcome:?}");
    let _agent = run_agent(ws, "on-b", Duration::ZERO);

    // An API instance whose entry is gateway A follows the route to B.
    let api = routed(&c.a.base);
    assert_eq!(account_name(&api, &c, &t1).await.unwrap(), "on-b");
    // A client that only knows A is relayed by A to B.
    let plain = HttpDispatch::new(&c.a.base, INTERNAL).unwrap();
    assert_eq!(account_name(&plain, &c, &t1).await.unwrap(), "on-b");
    // In process, gateway A relays too.
    assert_eq!(account_name(&c.a.gateway, &c, &t1).await.unwrap(), "on-b");

    // The list of either instance shows it connected, with the agent's details.
    for list in [
        c.a.gateway.terminals(&c.license_id).await.unwrap(),
        api.terminals(&c.license_id).await.unwrap(),
    ] {
        let by_id = |id: &str| list.iter().find(|t| t.id == id).unwrap().clone();
        let one = by_id(&t1);
        assert!(one.connected, "{one:?}");
        assert_eq!(
            (one.name.as_str(), one.platform, one.account_login),
            ("alpha", Some(Platform::MT5), Some(5001))
        );
        assert!(!by_id(&c.terminals[1].0).connected);
    }
    // The other terminal is known but not connected anywhere; another
    // license's view does not see this one at all.
    assert_eq!(
        account_name(&api, &c, &c.terminals[1].0).await,
        Err(DispatchError::Unreachable)
    );
    let other = Cluster {
        license_id: "another-license".into(),
        ..cluster().await
    };
    assert_eq!(account_name(&api, &other, &t1).await, Err(DispatchError::NotFound));
}

#[tokio::test]
async fn a_reconnect_to_another_instance_moves_the_route_and_the_stale_connection_ends() {
    let c = cluster().await;
    let (t1, k1) = c.terminals[0].clone();
    let (ws_b, _) = connect(&c.b.ws_url, &k1).await;
    let old = run_agent(ws_b, "old-on-b", Duration::ZERO);
    let api = routed(&c.b.base);
    assert_eq!(account_name(&api, &c, &t1).await.unwrap(), "old-on-b");

    // The agent comes back through A while its old connection lingers on B.
    let (ws_a, _) = connect(&c.a.ws_url, &k1).await;
    let _new = run_agent(ws_a, "new-on-a", Duration::ZERO);
    // The newest connection has the route at once.
    assert_eq!(account_name(&api, &c, &t1).await.unwrap(), "new-on-a");
    let route = RouteTable::new(redis(), TTL).lookup(&t1).await.unwrap().unwrap();
    assert_eq!(route.instance, "a");
    // B closes the superseded connection on its next refresh.
    let ending = tokio::time::timeout(Duration::from_secs(5), old)
        .await
        .unwrap()
        .unwrap();
    assert!(ending.errors.is_empty(), "{ending:?}");
    wait_until("B forgets the old connection", Duration::from_secs(3), async || {
        c.b.gateway.connected_agents() == 0
    })
    .await;
    // And it stays routed to A (B's disconnect did not remove A's route).
    assert_eq!(account_name(&api, &c, &t1).await.unwrap(), "new-on-a");
}

#[tokio::test]
async fn commands_for_a_dead_instance_fail_fast_until_the_agent_reconnects_elsewhere() {
    let c = cluster().await;
    let (t1, k1) = c.terminals[0].clone();
    let (ws, _) = connect(&c.b.ws_url, &k1).await;
    let _agent = run_agent(ws, "on-b", Duration::ZERO);
    let api = routed(&c.a.base);
    assert_eq!(account_name(&api, &c, &t1).await.unwrap(), "on-b");

    // B's listener goes away at once (its route stays in Redis until it expires).
    c.b.handle.stop(false).await;
    let started = Instant::now();
    let gap = account_name(&api, &c, &t1).await;
    let took = started.elapsed();
    assert_eq!(gap, Err(DispatchError::Unreachable));
    assert!(
        took < Duration::from_secs(2),
        "a dead instance must not hold a request: {took:?}"
    );

    // The agent reconnects to A: reachable again.
    let (ws, _) = connect(&c.a.ws_url, &k1).await;
    let _agent = run_agent(ws, "on-a", Duration::ZERO);
    assert_eq!(account_name(&api, &c, &t1).await.unwrap(), "on-a");
}

#[tokio::test]
async fn a_graceful_shutdown_answers_in_flight_commands_then_sends_agents_elsewhere() {
    let c = cluster().await;
    let (t1, k1) = c.terminals[0].clone();
    let (ws, _) = connect(&c.a.ws_url, &k1).await;
    let agent = run_agent(ws, "slow-on-a", Duration::from_millis(400));
    let table = RouteTable::new(redis(), TTL);
    assert!(table.lookup(&t1).await.unwrap().is_some());

    let api = Arc::new(routed(&c.b.base));
    let in_flight = {
        let (api, license, t1) = (api.clone(), c.license_id.clone(), t1.clone());
        tokio::spawn(async move {
            api.execute(&license, &t1, Command::AccountInfo, Duration::from_secs(5))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let drained = c.a.gateway.shutdown(Duration::from_secs(5)).await;
    assert_eq!(drained, 1);
    // The command sent before the shutdown got its answer.
    assert!(matches!(
        in_flight.await.unwrap(),
        Ok(CommandResult::AccountInfo(a)) if a.name == "slow-on-a"
    ));
    // The agent was told to come back elsewhere, and the route is gone.
    let ending = tokio::time::timeout(Duration::from_secs(5), agent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ending.errors, vec![codes::SHUTTING_DOWN.to_owned()]);
    assert_eq!(ending.close, Some(CloseCode::Restart));
    assert!(table.lookup(&t1).await.unwrap().is_none());
    // A new agent is refused with the same code.
    let (_ws, first) = connect(&c.a.ws_url, &k1).await;
    assert!(
        matches!(&first, GatewayFrame::Error { error, .. } if error.code == codes::SHUTTING_DOWN),
        "{first:?}"
    );
    // Reconnected to B, it is reachable again.
    let (ws, _) = connect(&c.b.ws_url, &k1).await;
    let _agent = run_agent(ws, "on-b", Duration::ZERO);
    assert_eq!(account_name(api.as_ref(), &c, &t1).await.unwrap(), "on-b");
}

#[tokio::test]
async fn rotating_a_key_on_one_instance_disconnects_the_agent_held_by_another_at_once() {
    let c = cluster().await;
    let (t1, k1) = c.terminals[0].clone();
    let (ws, _) = connect(&c.b.ws_url, &k1).await;
    let agent = run_agent(ws, "on-b", Duration::ZERO);
    let rotation = c.a.gateway.rotate_terminal_key(&c.license_id, &t1).await.unwrap();
    assert!(rotation.agent_disconnected, "{rotation:?}");
    let ending = tokio::time::timeout(Duration::from_secs(3), agent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ending.errors, vec![codes::AUTH_FAILED.to_owned()]);
    wait_until("the route to go", Duration::from_secs(3), async || {
        RouteTable::new(redis(), TTL).lookup(&t1).await.unwrap().is_none()
    })
    .await;
    // The old key no longer connects anywhere; the new one does.
    let (_ws, first) = connect(&c.b.ws_url, &k1).await;
    assert!(matches!(&first, GatewayFrame::Error { error, .. } if error.code == codes::AUTH_FAILED));
    let (_ws, first) = connect(&c.a.ws_url, rotation.terminal_key.expose()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");
}
