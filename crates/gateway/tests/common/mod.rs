//! Helpers shared by the gateway's integration tests: a gateway on a
//! SQLite store with a Pro license and two terminals, served on a loopback
//! port, and a scripted agent's handshake.
#![allow(dead_code)] // each test binary uses its own part

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tradeterm_core::TradeMode;
use tradeterm_gateway::{Gateway, GatewaySettings};
use tradeterm_protocol::PROTOCOL_VERSION;
use tradeterm_protocol::agent::{
    AccountIdentity, AgentFrame, AgentInfo, GatewayFrame, Hello, Permissions, Platform, TerminalIdentity,
};
use tradeterm_protocol::token::{TokenSigner, TokenVerifier, generate_rsa_pem_pair};
use tradeterm_store::{SqlStore, Store, Tier};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub const INTERNAL: &str = "internal-test-token";

pub struct TestApp {
    pub base: String,
    pub ws_url: String,
    pub gateway: Gateway,
    pub store: Arc<dyn Store>,
    pub verifier: TokenVerifier,
    pub license_id: String,
    pub license_key: String,
    pub terminals: Vec<(String, String)>,
    pub http: reqwest::Client,
    pub _dir: tempfile::TempDir,
}

/// [`spawn_app_with`] with a 1 s heartbeat timeout and the internal token
/// [`INTERNAL`].
pub async fn spawn_app() -> TestApp {
    spawn_app_with(Duration::from_millis(1000), Some(INTERNAL)).await
}

/// A gateway on port 0 with fast heartbeats (interval 200 ms, the given
/// timeout) and key checks (300 ms), a Pro license and two terminals.
pub async fn spawn_app_with(heartbeat_timeout: Duration, internal_token: Option<&str>) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("gw.db").display());
    let store: Arc<dyn Store> = Arc::new(SqlStore::connect(&url).await.unwrap());
    let (private, public) = generate_rsa_pem_pair().unwrap();
    let signer = TokenSigner::from_pem(private.as_bytes(), "test-iss", "test-aud").unwrap();
    let verifier = TokenVerifier::from_pem(public.as_bytes(), "test-iss", "test-aud").unwrap();
    let settings = GatewaySettings {
        heartbeat_interval: Duration::from_millis(200),
        heartbeat_timeout,
        hello_timeout: Duration::from_secs(2),
        internal_token: internal_token.map(str::to_owned),
        key_recheck: Duration::from_millis(300),
        ..GatewaySettings::default()
    };
    let gateway = Gateway::new(settings, store.clone(), signer);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = gateway.server(listener).unwrap();
    let port = server.port();
    tokio::spawn(server.run_until_stopped());
    let (license, key) = store.create_license("acme", Tier::Pro).await.unwrap();
    let mut terminals = Vec::new();
    for name in ["alpha", "beta"] {
        let (t, k) = store.create_terminal(&license.id, name).await.unwrap();
        terminals.push((t.id, k.expose().to_owned()));
    }
    TestApp {
        base: format!("http://127.0.0.1:{port}"),
        ws_url: format!("ws://127.0.0.1:{port}/agent/v1"),
        gateway,
        store,
        verifier,
        license_id: license.id,
        license_key: key.expose().to_owned(),
        terminals,
        http: reqwest::Client::new(),
        _dir: dir,
    }
}

pub fn hello(key: &str, uid: &str, permissions: Permissions) -> String {
    AgentFrame::Hello(Box::new(Hello {
        protocol_version: PROTOCOL_VERSION,
        terminal_key: key.to_owned(),
        terminal: TerminalIdentity {
            uid: uid.to_owned(),
            platform: Platform::MT5,
            build: 4000,
        },
        account: AccountIdentity {
            login: 5001,
            server: "Test-Demo".into(),
            company: "Test Broker".into(),
            currency: "USD".into(),
            leverage: 100,
            trade_mode: TradeMode::Demo,
        },
        permissions,
        agent: AgentInfo {
            name: "scripted".into(),
            version: "0".into(),
        },
    }))
    .to_json()
}

pub async fn next_gateway_frame(ws: &mut Ws) -> GatewayFrame {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("frame in time");
        match msg {
            Some(Ok(Message::Text(t))) => {
                return GatewayFrame::parse(&t).expect("valid gateway frame");
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("unexpected websocket message {other:?}"),
        }
    }
}

/// Connects and completes the handshake, returning the socket and the welcome frame.
pub async fn connect(app: &TestApp, key: &str, uid: &str, permissions: Permissions) -> (Ws, GatewayFrame) {
    let (mut ws, _) = tokio_tungstenite::connect_async(&app.ws_url).await.unwrap();
    ws.send(Message::text(hello(key, uid, permissions))).await.unwrap();
    let first = next_gateway_frame(&mut ws).await;
    (ws, first)
}

/// Scrapes `GET /metrics` of the gateway.
pub async fn scrape(app: &TestApp) -> tradeterm_telemetry::scrape::Scrape {
    let resp = app.http.get(format!("{}/metrics", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/plain"), "{ct}");
    tradeterm_telemetry::scrape::Scrape::parse(&resp.text().await.unwrap())
}
