//! The gateway terminating TLS itself: a certificate issued at test time by a
//! throw-away CA, a simulated agent connecting over `wss://` with that CA,
//! HTTPS on the other routes, and the clients that must fail (an untrusting
//! client, plain `ws://` and `http://` to the TLS port).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tradeterm_gateway::{Gateway, GatewaySettings, TlsConfig};
use tradeterm_protocol::token::{TokenSigner, generate_rsa_pem_pair};
use tradeterm_protocol::{Command, CommandResult, Dispatch};
use tradeterm_sim::{AgentHandle, AgentSettings, SimSettings, Simulator, SystemClock, spawn_agent};
use tradeterm_store::{SqlStore, Store, Tier};

struct TlsApp {
    port: u16,
    gateway: Gateway,
    license_id: String,
    terminal_id: String,
    terminal_key: String,
    /// The CA that issued the gateway's certificate (PEM file).
    ca_file: PathBuf,
    ca_pem: String,
    _dir: tempfile::TempDir,
}

/// A CA and a server certificate for `localhost` and `127.0.0.1` signed by it.
/// Returns (CA PEM, server certificate PEM, server key PEM).
fn issue_certificates() -> (String, String, String) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "tradeterm test CA");
    ca_params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap()).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    (ca.pem(), leaf.pem(), leaf_key.serialize_pem())
}

async fn spawn_tls_app() -> TlsApp {
    let dir = tempfile::tempdir().unwrap();
    let (ca_pem, cert_pem, key_pem) = issue_certificates();
    let (ca_file, cert_file, key_file) = (
        dir.path().join("ca.pem"),
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
    );
    std::fs::write(&ca_file, &ca_pem).unwrap();
    std::fs::write(&cert_file, &cert_pem).unwrap();
    std::fs::write(&key_file, &key_pem).unwrap();

    let url = format!("sqlite://{}?mode=rwc", dir.path().join("gw.db").display());
    let store: Arc<dyn Store> = Arc::new(SqlStore::connect(&url).await.unwrap());
    let (private, _public) = generate_rsa_pem_pair().unwrap();
    let signer = TokenSigner::from_pem(private.as_bytes(), "test-iss", "test-aud").unwrap();
    let settings = GatewaySettings {
        tls: Some(TlsConfig::load(&cert_file, &key_file).unwrap()),
        ..GatewaySettings::default()
    };
    let gateway = Gateway::new(settings, store.clone(), signer);
    let server = gateway
        .server(std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .unwrap();
    assert!(server.is_tls());
    let port = server.port();
    tokio::spawn(server.run_until_stopped());
    let (license, _) = store.create_license("acme", Tier::Pro).await.unwrap();
    let (terminal, key) = store.create_terminal(&license.id, "mt5").await.unwrap();
    TlsApp {
        port,
        gateway,
        license_id: license.id,
        terminal_id: terminal.id,
        terminal_key: key.expose().to_owned(),
        ca_file,
        ca_pem,
        _dir: dir,
    }
}

fn sim_agent(app: &TlsApp, url: String, ca_file: Option<PathBuf>) -> AgentHandle {
    let settings = SimSettings::demo(0);
    let sim = Simulator::new(settings, Arc::new(SystemClock::new(1.0)));
    spawn_agent(
        sim,
        AgentSettings {
            url,
            terminal_key: app.terminal_key.clone(),
            uid: "uid-tls-1".into(),
            ca_file,
        },
    )
}

async fn eventually(what: &str, deadline: Duration, mut f: impl FnMut() -> bool) {
    let until = tokio::time::Instant::now() + deadline;
    while !f() {
        assert!(tokio::time::Instant::now() < until, "{what} within {deadline:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An HTTP client that trusts the test CA (and nothing else), or the system's roots only.
fn https_client(ca_pem: Option<&str>) -> reqwest::Client {
    let builder = reqwest::Client::builder().timeout(Duration::from_secs(5));
    let builder = match ca_pem {
        Some(pem) => builder.tls_certs_only(reqwest::Certificate::from_pem_bundle(pem.as_bytes()).unwrap()),
        None => builder,
    };
    builder.build().unwrap()
}

#[tokio::test]
async fn a_simulated_agent_over_wss_is_welcomed_and_serves_commands() {
    let app = spawn_tls_app().await;
    let agent = sim_agent(
        &app,
        format!("wss://127.0.0.1:{}/agent/v1", app.port),
        Some(app.ca_file.clone()),
    );
    eventually("the wss agent is welcomed", Duration::from_secs(10), || {
        agent.is_connected() && app.gateway.is_connected(&app.terminal_id)
    })
    .await;
    assert_eq!(agent.terminal_id().as_deref(), Some(app.terminal_id.as_str()));

    let result = app
        .gateway
        .execute(
            &app.license_id,
            &app.terminal_id,
            Command::AccountInfo,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    match result {
        CommandResult::AccountInfo(a) => assert_eq!(a.login, SimSettings::demo(0).login),
        other => panic!("unexpected {other:?}"),
    }

    // Every other route is HTTPS on the same port: the token exchange too.
    let https = https_client(Some(&app.ca_pem));
    let health = https
        .get(format!("https://localhost:{}/healthz", app.port))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let token = https
        .post(format!("https://127.0.0.1:{}/api/token", app.port))
        .bearer_auth(&app.terminal_key)
        .send()
        .await
        .unwrap();
    assert_eq!(token.status(), 200);
    let body: serde_json::Value = token.json().await.unwrap();
    assert_eq!(body["terminal_id"], app.terminal_id.as_str());
    agent.shutdown().await;
}

#[tokio::test]
async fn clients_that_do_not_trust_the_ca_are_refused() {
    let app = spawn_tls_app().await;
    let url = format!("wss://127.0.0.1:{}/agent/v1", app.port);

    // A WebSocket client with the system's roots only: the handshake fails.
    let config = tradeterm_sim::tls::client_config(None).unwrap();
    let connector = tokio_tungstenite::Connector::Rustls(Arc::new(config));
    let err = tokio_tungstenite::connect_async_tls_with_config(url.as_str(), None, false, Some(connector))
        .await
        .expect_err("an untrusted certificate is refused");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "refused for its certificate: {err}"
    );
    // With the CA it works (the same client code, so the refusal above is the CA's doing).
    let config = tradeterm_sim::tls::client_config(Some(&app.ca_file)).unwrap();
    let connector = tokio_tungstenite::Connector::Rustls(Arc::new(config));
    let (mut ws, _) = tokio_tungstenite::connect_async_tls_with_config(url.as_str(), None, false, Some(connector))
        .await
        .unwrap();
    ws.close(None).await.unwrap();

    // The simulated agent without the CA never gets in.
    let agent = sim_agent(&app, url, None);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!agent.is_connected());
    assert!(!app.gateway.is_connected(&app.terminal_id));
    agent.shutdown().await;

    // HTTPS with the system's roots only: refused as well.
    let err = https_client(None)
        .get(format!("https://127.0.0.1:{}/healthz", app.port))
        .send()
        .await
        .expect_err("an untrusted certificate is refused");
    assert!(err.is_connect(), "{err:?}");
}

#[tokio::test]
async fn plain_ws_and_http_to_the_tls_port_fail() {
    let app = spawn_tls_app().await;
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{}/agent/v1", app.port)),
    )
    .await
    .expect("the gateway answers (or hangs up) in time");
    assert!(err.is_err(), "plain ws:// must not reach the agent endpoint");

    let plain = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .get(format!("http://127.0.0.1:{}/healthz", app.port))
        .send()
        .await;
    match plain {
        Err(_) => {}
        Ok(resp) => assert_ne!(resp.status(), 200, "plain HTTP must not be served"),
    }
    assert!(!app.gateway.is_connected(&app.terminal_id));
}
