//! The agent WebSocket endpoint (handshake, heartbeats, responses and
//! events), and the parts of a connection's life that every transport shares
//! (`crate::poll` is the other one): [`admit`] checks a `hello`, [`register`]
//! makes the connection live, [`handle_frame`] handles what the agent sends,
//! [`key_revoked`] and [`disconnected`] end it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use actix_ws::{AggregatedMessage, AggregatedMessageStream, Session};
use tradeterm_protocol::agent::{
    AgentFrame, Event, FrameError, GatewayFrame, Hello, MAX_FRAME_BYTES, PROTOCOL_VERSION, codes,
};
use tradeterm_store::{BindOutcome, TerminalInfo, TerminalKeyAuth, hash_key};

use crate::Gateway;
use crate::frames::{FrameLimit, Guarded};
use crate::registry::{Conn, Outbound, TerminalEvent};

pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `GET /agent/v1`: upgrades to a WebSocket and serves one agent.
pub async fn agent_ws(
    req: HttpRequest,
    body: web::Payload,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, actix_web::Error> {
    let settings = gateway.settings();
    let max_frame = settings.max_frame.min(MAX_FRAME_BYTES);
    // Frames are measured as their headers arrive (`crate::frames`): small
    // until the handshake is done, then up to the largest frame.
    let limit = FrameLimit::new(settings.hello_max_frame.min(max_frame), max_frame);
    let guarded = Guarded::new(body.into_inner(), limit.clone());
    let stream: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<web::Bytes, actix_web::error::PayloadError>>>,
    > = Box::pin(guarded);
    let mut payload = actix_web::dev::Payload::Stream { payload: stream };
    let body = web::Payload::from_request(&req, &mut payload).await?;
    let (response, session, stream) = actix_ws::handle(&req, body)?;
    let cut = limit.clone();
    let response = response
        .map_body(|_, body| crate::frames::CutBody::new(body, cut))
        .map_into_boxed_body();
    let stream = stream
        .max_frame_size(max_frame)
        .aggregate_continuations()
        .max_continuation_size(max_frame);
    let peer = Peer {
        text: req.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
        source: crate::guess::source(gateway.get_ref(), &req),
        limit,
    };
    let gateway = gateway.get_ref().clone();
    actix_web::rt::spawn(serve(gateway, session, stream, peer));
    Ok(response)
}

/// Who is at the other end of a WebSocket: the peer address (for logs),
/// the client address the guessing throttle counts, and the frame limit of
/// the connection.
pub(crate) struct Peer {
    text: String,
    source: std::net::IpAddr,
    limit: Arc<FrameLimit>,
}

/// The refusal of a frame over the limit: an error frame, then close 1009;
/// the response body then cuts the connection ([`crate::frames::CutBody`])
/// while `_unread`, the request stream, is held unread (a dropped one would
/// be drained by the server).
async fn refuse_oversized(mut session: Session, limit: usize, _unread: &mut AggregatedMessageStream) {
    let message = format!("frame larger than {limit} bytes");
    let _ = send(
        &mut session,
        &GatewayFrame::error(None, codes::FRAME_TOO_LARGE, &message),
    )
    .await;
    let _ = session
        .close(Some(actix_ws::CloseReason {
            code: actix_ws::CloseCode::Size,
            description: Some(message),
        }))
        .await;
    tokio::time::sleep(crate::frames::CUT_AFTER * 3).await;
}

/// Message of the `AUTH_FAILED` error sent before a connection whose key was
/// revoked is closed.
pub(crate) const KEY_REVOKED: &str = "this terminal key has been revoked or rotated; reconnect with the new key";

/// Message of the `SHUTTING_DOWN` error sent before a draining gateway
/// closes a connection or refuses a new one.
pub(crate) const SHUTTING_DOWN: &str =
    "the gateway is shutting down; reconnect (another instance takes the connection)";

async fn send(session: &mut Session, frame: &GatewayFrame) -> bool {
    session.text(frame.to_json()).await.is_ok()
}

async fn refuse(mut session: Session, code: &str, message: &str) {
    let _ = send(&mut session, &GatewayFrame::error(None, code, message)).await;
    let _ = session.close(None).await;
}

/// Waits for a valid `hello`. Malformed frames get an error frame and are
/// otherwise ignored; anything else first is a protocol error.
async fn await_hello(
    session: &mut Session,
    stream: &mut AggregatedMessageStream,
    deadline: Duration,
) -> Result<Hello, (&'static str, String)> {
    let wait = async {
        loop {
            match stream.recv().await {
                Some(Ok(AggregatedMessage::Text(text))) => match AgentFrame::parse(&text) {
                    Ok(AgentFrame::Hello(hello)) => return Ok(*hello),
                    Ok(AgentFrame::Ping { ts }) => {
                        let _ = send(session, &GatewayFrame::Pong { ts }).await;
                    }
                    Ok(_) => {
                        return Err((codes::PROTOCOL_ERROR, "the first frame must be `hello`".to_owned()));
                    }
                    Err(e) => {
                        let _ = send(session, &GatewayFrame::error(None, e.code(), e.to_string())).await;
                    }
                },
                Some(Ok(AggregatedMessage::Ping(b))) => {
                    let _ = session.pong(&b).await;
                }
                Some(Ok(AggregatedMessage::Binary(_))) => {
                    let _ = send(
                        session,
                        &GatewayFrame::error(None, codes::MALFORMED_FRAME, "binary frames are not supported"),
                    )
                    .await;
                }
                Some(Ok(AggregatedMessage::Pong(_))) => {}
                Some(Ok(AggregatedMessage::Close(_))) | Some(Err(_)) | None => {
                    return Err((codes::PROTOCOL_ERROR, "connection closed before hello".to_owned()));
                }
            }
        }
    };
    match tokio::time::timeout(deadline, wait).await {
        Ok(r) => r,
        Err(_) => Err((codes::PROTOCOL_ERROR, "no hello received in time".to_owned())),
    }
}

/// Why a handshake was refused: the protocol error code and the message for
/// the agent (an `error` frame on WebSocket, an error body on long-poll).
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub code: &'static str,
    pub message: String,
    /// `Retry-After` of a `RATE_LIMITED` refusal, seconds.
    pub retry_after: Option<u64>,
}

impl Refusal {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retry_after: None,
        }
    }
}

/// Checks a `hello` the same way for every transport: protocol version,
/// terminal key (master license keys and revoked keys refused), the
/// installation uid and its binding to the key; then records what the agent
/// reported. The key's authentication on success.
pub(crate) async fn admit(
    gateway: &Gateway,
    hello: &Hello,
    peer: &str,
    source: std::net::IpAddr,
) -> Result<TerminalKeyAuth, Refusal> {
    if gateway.is_draining() {
        return Err(Refusal::new(codes::SHUTTING_DOWN, SHUTTING_DOWN));
    }
    if hello.protocol_version != PROTOCOL_VERSION {
        return Err(Refusal::new(
            codes::UNSUPPORTED_VERSION,
            format!(
                "protocol version {} is not supported; use {PROTOCOL_VERSION}",
                hello.protocol_version
            ),
        ));
    }
    let guess = &gateway.settings().guess;
    if let Err(blocked) = guess.check("agent", source, Some(&hello.terminal_key)).await {
        tracing::info!(%peer, "agent hello refused: too many failed authentications");
        return Err(Refusal {
            retry_after: Some(blocked.retry_after_secs()),
            ..Refusal::new(codes::RATE_LIMITED, blocked.message())
        });
    }
    let store = gateway.store();
    let auth = match store.terminal_key(&hello.terminal_key).await {
        Ok(Some(a)) if !a.license.disabled => a,
        Ok(_) => {
            let is_master = matches!(store.license_by_master_key(&hello.terminal_key).await, Ok(Some(_)));
            if !is_master {
                guess.failed("agent", source, Some(&hello.terminal_key)).await;
            }
            let message = if is_master {
                "master license keys are not accepted for agent connections; use a terminal key"
            } else {
                "unknown or revoked terminal key"
            };
            tracing::info!(%peer, master = is_master, "agent authentication refused");
            return Err(Refusal::new(codes::AUTH_FAILED, message));
        }
        Err(e) => {
            tracing::error!(%peer, error = %e, "store failure during agent authentication");
            return Err(Refusal::new(codes::INTERNAL, "temporary failure, retry later"));
        }
    };
    if hello.terminal.uid.trim().is_empty() || hello.terminal.uid.len() > 256 {
        return Err(Refusal::new(
            codes::PROTOCOL_ERROR,
            "terminal.uid must be 1..=256 characters",
        ));
    }
    let fingerprint = hash_key(&hello.terminal.uid);
    match store.bind_terminal(&auth.terminal.id, &fingerprint).await {
        Ok(BindOutcome::Bound) => {
            tracing::info!(terminal = %auth.terminal.id, license = %auth.license.id, "terminal key bound to installation");
        }
        Ok(BindOutcome::AlreadyBound) => {}
        Ok(BindOutcome::Conflict) => {
            tracing::warn!(terminal = %auth.terminal.id, %peer, "terminal key presented by another installation");
            return Err(Refusal::new(
                codes::AUTH_FAILED,
                "this terminal key is bound to another terminal",
            ));
        }
        Err(e) => {
            tracing::error!(error = %e, "store failure during binding");
            return Err(Refusal::new(codes::INTERNAL, "temporary failure, retry later"));
        }
    }
    let info = TerminalInfo {
        platform: format!("{:?}", hello.terminal.platform),
        build: hello.terminal.build,
        account_login: hello.account.login,
        account_server: hello.account.server.clone(),
        account_currency: hello.account.currency.clone(),
        trade_mode: hello.account.trade_mode.as_str().to_owned(),
    };
    if let Err(e) = store.update_terminal_info(&auth.terminal.id, &info).await {
        tracing::warn!(error = %e, "could not record terminal info");
    }
    Ok(auth)
}

/// Registers the live connection of an admitted agent, replacing (and
/// closing) the terminal's previous connection of either transport.
pub(crate) fn register(gateway: &Gateway, auth: &TerminalKeyAuth, hello: &Hello, outbound: Outbound) -> Arc<Conn> {
    let registry = &gateway.inner.registry;
    let now = now_ms();
    let conn = Arc::new(Conn {
        conn_id: registry.next_conn_id(),
        license_id: auth.license.id.clone(),
        terminal_id: auth.terminal.id.clone(),
        terminal: hello.terminal.clone(),
        account: hello.account.clone(),
        permissions: std::sync::Mutex::new(hello.permissions),
        connected_since: now,
        last_seen: std::sync::atomic::AtomicI64::new(now),
        pinged: std::sync::atomic::AtomicI64::new(0),
        outbound,
        pending: std::sync::Mutex::new(std::collections::HashMap::new()),
        quotes: std::sync::Mutex::new(std::collections::HashMap::new()),
        kill: tokio::sync::Notify::new(),
        key_id: auth.key_id.clone(),
        key_revoked: std::sync::atomic::AtomicBool::new(false),
    });
    if let Some(old) = registry.insert(conn.clone()) {
        tracing::info!(
            terminal = %conn.terminal_id,
            old = old.outbound.transport(),
            new = conn.outbound.transport(),
            "a new connection replaces the previous one"
        );
        old.kill.notify_one();
        old.fail_all();
    }
    if let Some(events) = &gateway.settings().events {
        events.connected(
            &conn.license_id,
            &conn.terminal_id,
            (&hello.agent.name, &hello.agent.version),
            hello.permissions,
        );
    }
    tracing::info!(
        license = %conn.license_id,
        terminal = %conn.terminal_id,
        platform = ?hello.terminal.platform,
        transport = conn.outbound.transport(),
        "agent connected"
    );
    conn
}

/// The `welcome` frame of a connection.
pub(crate) fn welcome(gateway: &Gateway, conn: &Conn) -> GatewayFrame {
    let settings = gateway.settings();
    GatewayFrame::Welcome {
        protocol_version: PROTOCOL_VERSION,
        terminal_id: conn.terminal_id.clone(),
        heartbeat_interval_ms: settings.heartbeat_interval.as_millis() as u64,
        heartbeat_timeout_ms: settings.heartbeat_timeout.as_millis() as u64,
    }
}

/// Whether the connection's key has been revoked or rotated, as far as the
/// store says: a store failure keeps the connection, only a definite
/// "revoked" ends it.
pub(crate) async fn key_revoked(gateway: &Gateway, conn: &Conn) -> bool {
    matches!(gateway.store().terminal_key_active(&conn.key_id).await, Ok(false))
}

/// Forgets a connection that ended: the terminal is reported disconnected
/// (unless a newer connection already replaced it) and its pending requests
/// fail at once.
pub(crate) async fn disconnected(gateway: &Gateway, conn: &Conn, reason: &str) {
    let current = gateway.inner.registry.remove(&conn.terminal_id, conn.conn_id);
    if current && let Some(events) = &gateway.settings().events {
        events.disconnected(&conn.license_id, &conn.terminal_id, reason);
    }
    conn.fail_all();
    crate::cluster::withdraw(gateway, conn).await;
    let _ = gateway.store().touch_terminal(&conn.terminal_id).await;
    tracing::info!(
        license = %conn.license_id,
        terminal = %conn.terminal_id,
        transport = conn.outbound.transport(),
        reason,
        "agent disconnected"
    );
}

/// The handshake of a WebSocket agent: its `hello`, admission, registration,
/// the route announced and `welcome` sent. The registered connection, or
/// `None` when the agent was refused or went away.
async fn handshake(
    gateway: &Gateway,
    session: &mut Session,
    stream: &mut AggregatedMessageStream,
    peer: &Peer,
) -> Option<Arc<Conn>> {
    let hello = match await_hello(session, stream, gateway.settings().hello_timeout).await {
        Ok(h) => h,
        Err(_) if peer.limit.exceeded() => {
            tracing::info!(peer = %peer.text, limit = peer.limit.current(), "agent frame over the limit before hello");
            Box::pin(refuse_oversized(session.clone(), peer.limit.current(), stream)).await;
            return None;
        }
        Err((code, message)) => {
            tracing::info!(peer = %peer.text, code, %message, "agent handshake failed");
            refuse(session.clone(), code, &message).await;
            return None;
        }
    };
    let auth = match admit(gateway, &hello, &peer.text, peer.source).await {
        Ok(auth) => auth,
        Err(refusal) => {
            refuse(session.clone(), refusal.code, &refusal.message).await;
            return None;
        }
    };
    peer.limit.raise();
    let conn = register(gateway, &auth, &hello, Outbound::WebSocket(session.clone()));
    tracing::debug!(terminal = %conn.terminal_id, peer = %peer.text, "websocket agent");
    crate::cluster::announce(gateway, &conn).await;
    if !send(session, &welcome(gateway, &conn)).await {
        disconnected(gateway, &conn, "send failed").await;
        return None;
    }
    Some(conn)
}

/// Serves one WebSocket agent until its connection ends.
///
/// This future lives as long as the connection, so its size is memory per
/// connection: the steps that run once or rarely (the handshake, the key
/// re-check, the disconnect with its store and Redis calls) are boxed, so
/// that only their pointer stays in it and their state exists only while
/// they run (`serve_future_stays_small` in the tests).
async fn serve(gateway: Gateway, mut session: Session, mut stream: AggregatedMessageStream, peer: Peer) {
    let settings = gateway.settings().clone();
    let Some(conn) = Box::pin(handshake(&gateway, &mut session, &mut stream, &peer)).await else {
        return;
    };

    let mut heartbeat = tokio::time::interval(settings.heartbeat_interval);
    heartbeat.tick().await;
    let mut key_checked = std::time::Instant::now();
    let reason = loop {
        tokio::select! {
            msg = stream.recv() => {
                let Some(Ok(msg)) = msg else {
                    if peer.limit.exceeded() {
                        Box::pin(disconnected(&gateway, &conn, "frame over the limit")).await;
                        Box::pin(refuse_oversized(session, peer.limit.current(), &mut stream)).await;
                        return;
                    }
                    break "connection closed";
                };
                conn.last_seen.store(now_ms(), Ordering::Relaxed);
                match msg {
                    AggregatedMessage::Text(text) => handle_text(&gateway, &conn, &mut session, &text).await,
                    AggregatedMessage::Binary(_) => {
                        let _ = send(&mut session, &GatewayFrame::error(None, codes::MALFORMED_FRAME, "binary frames are not supported")).await;
                    }
                    AggregatedMessage::Ping(b) => { let _ = session.pong(&b).await; }
                    AggregatedMessage::Pong(_) => {}
                    AggregatedMessage::Close(_) => break "agent closed the connection",
                }
            }
            _ = heartbeat.tick() => {
                let silent = now_ms() - conn.last_seen.load(Ordering::Relaxed);
                if silent > settings.heartbeat_timeout.as_millis() as i64 {
                    break "heartbeat timeout";
                }
                if needs_ping(&conn, settings.heartbeat_interval)
                    && !send(&mut session, &GatewayFrame::Ping { ts: now_ms() }).await
                {
                    break "send failed";
                }
                if key_checked.elapsed() >= settings.key_recheck {
                    key_checked = std::time::Instant::now();
                    if Box::pin(key_revoked(&gateway, &conn)).await {
                        let _ = send(&mut session, &GatewayFrame::error(None, codes::AUTH_FAILED, KEY_REVOKED)).await;
                        break "terminal key revoked or rotated";
                    }
                }
            }
            _ = conn.kill.notified() => {
                if conn.key_revoked.load(Ordering::Relaxed) {
                    let _ = send(&mut session, &GatewayFrame::error(None, codes::AUTH_FAILED, KEY_REVOKED)).await;
                } else if gateway.is_draining() {
                    let _ = send(&mut session, &GatewayFrame::error(None, codes::SHUTTING_DOWN, SHUTTING_DOWN)).await;
                    Box::pin(disconnected(&gateway, &conn, "gateway shutting down")).await;
                    // 1012 "service restart": come back (to another instance).
                    let _ = session
                        .close(Some(actix_ws::CloseReason {
                            code: actix_ws::CloseCode::Restart,
                            description: Some("gateway shutting down; reconnect".into()),
                        }))
                        .await;
                    return;
                }
                break conn.kill_reason();
            }
        }
    };
    Box::pin(disconnected(&gateway, &conn, reason)).await;
    let _ = session.close(None).await;
}

/// Whether the gateway sends its heartbeat `ping` this interval: not while
/// the agent pings (its last `ping`, answered with a `pong`, is less than
/// one and a half intervals old). Both sides then hear each other once an
/// interval, as the protocol asks, with half the frames: at 10 000 agents
/// that is 2 000 frames a second fewer for the gateway to write and read
/// (`docs/agent-protocol.md`, "Heartbeats"). An agent that does not ping
/// gets the gateway's pings, and its `pong`s keep it alive.
fn needs_ping(conn: &Conn, interval: std::time::Duration) -> bool {
    let interval_ms = interval.as_millis() as i64;
    now_ms() - conn.pinged.load(Ordering::Relaxed) > interval_ms + interval_ms / 2
}

async fn handle_text(gateway: &Gateway, conn: &Arc<Conn>, session: &mut Session, text: &str) {
    if let Some(reply) = handle_frame(gateway, conn, AgentFrame::parse(text)) {
        let _ = send(session, &reply).await;
    }
}

/// Handles one frame an agent sent after its handshake, the same way for
/// every transport: a response completes its request, an event is recorded
/// and published, a ping is answered. The frame to send back, if any (a
/// `pong`, or an `error` for a repeated `hello` or an unusable frame).
pub(crate) fn handle_frame(
    gateway: &Gateway,
    conn: &Conn,
    frame: Result<AgentFrame, FrameError>,
) -> Option<GatewayFrame> {
    match frame {
        Ok(AgentFrame::Response(resp)) => {
            let id = resp.id.clone();
            if !conn.complete(resp) {
                tracing::debug!(%id, "response for an unknown or expired request");
            }
            None
        }
        Ok(AgentFrame::Event { event }) => {
            match &event {
                Event::Permissions(p) => {
                    if let Ok(mut cur) = conn.permissions.lock() {
                        *cur = *p;
                    }
                }
                Event::Tick(t) => conn.remember_quote(t),
                _ => {}
            }
            if let Some(events) = &gateway.settings().events {
                events.agent_event(&conn.license_id, &conn.terminal_id, &event);
            }
            gateway.inner.registry.publish(TerminalEvent {
                license_id: conn.license_id.clone(),
                terminal_id: conn.terminal_id.clone(),
                event,
            });
            None
        }
        Ok(AgentFrame::Ping { ts }) => {
            conn.pinged.store(now_ms(), Ordering::Relaxed);
            Some(GatewayFrame::Pong { ts })
        }
        Ok(AgentFrame::Pong { .. }) => None,
        Ok(AgentFrame::Hello(_)) => Some(GatewayFrame::error(
            None,
            codes::PROTOCOL_ERROR,
            "hello was already received",
        )),
        Err(e) => {
            tracing::debug!(error = %e, "bad frame from agent");
            Some(GatewayFrame::error(None, e.code(), e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use tradeterm_protocol::token::{TokenSigner, generate_rsa_pem_pair};

    use super::*;
    use crate::GatewaySettings;

    /// The future serving a connection is allocated once per agent and lives
    /// as long as the connection: it is gateway memory per connection
    /// (`docs/performance.md`, target ≤ 30 KB in all). Unboxed, the
    /// handshake and disconnect steps (store and Redis calls) made it 9.5 KB
    /// in a release build; boxed, 1.7 KB. The bound holds for debug builds
    /// too, which lay futures out with more room.
    #[actix_web::test]
    async fn serve_future_stays_small() {
        let store: Arc<dyn tradeterm_store::Store> =
            Arc::new(tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap());
        let (private, _) = generate_rsa_pem_pair().unwrap();
        let signer = TokenSigner::from_pem(private.as_bytes(), "iss", "aud").unwrap();
        let gateway = Gateway::new(GatewaySettings::default(), store, signer);
        let (req, mut payload) = actix_web::test::TestRequest::get()
            .insert_header(("upgrade", "websocket"))
            .insert_header(("connection", "upgrade"))
            .insert_header(("sec-websocket-version", "13"))
            .insert_header(("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="))
            .to_http_parts();
        let body = web::Payload::from_request(&req, &mut payload).await.unwrap();
        let (_response, session, stream) = actix_ws::handle(&req, body).unwrap();
        let peer = Peer {
            text: String::new(),
            source: std::net::Ipv4Addr::LOCALHOST.into(),
            limit: FrameLimit::new(1024, 4096),
        };
        let fut = serve(gateway, session, stream.aggregate_continuations(), peer);
        let size = std::mem::size_of_val(&fut);
        assert!(size <= 4096, "the per-connection future grew to {size} bytes");
    }
}
