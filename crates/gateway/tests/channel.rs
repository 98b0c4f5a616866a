//! The dispatch channel (`docs/gateway.md`, "The dispatch channel"), in a
//! test binary of its own so that the process-wide metrics it reads move
//! only with its own dispatches.
//!
//! Against a gateway: dispatches go over the channel once it is open. Against
//! a fake gateway that loses it: a channel that closes under a dispatch
//! already sent leaves the same outcome as an HTTP connection lost under a
//! request. A read sent to the holder is `Unreachable` (the caller goes back
//! to the route table); a trade's outcome is unknown (a gateway error, never
//! retried).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use futures_util::SinkExt;
use tokio_tungstenite::tungstenite::Message;
use tradeterm_protocol::agent::{AgentFrame, GatewayFrame, Permissions, Response};
use tradeterm_protocol::dispatch::{ChannelReply, ChannelRequest, DispatchReply, INTERNAL_TOKEN_HEADER};
use tradeterm_protocol::http_client::HttpDispatch;
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError};

mod common;
use common::{INTERNAL, Ws, connect, next_gateway_frame, scrape, spawn_app};

const TOKEN: &str = "internal-token-for-the-fake";

/// What the fake gateway saw.
#[derive(Default)]
struct Seen {
    /// Dispatches received over HTTP.
    posts: AtomicUsize,
    /// Channels opened.
    channels: AtomicUsize,
    /// Dispatches received on a channel (each channel then closes unanswered).
    on_channel: AtomicUsize,
    /// Channels whose client closed them.
    closed: AtomicUsize,
}

/// Answers every HTTP dispatch `NOT_FOUND`, so that a caller can tell it
/// from an answer of the channel.
async fn post(seen: web::Data<Arc<Seen>>) -> HttpResponse {
    seen.posts.fetch_add(1, Ordering::SeqCst);
    HttpResponse::Ok().json(DispatchReply::from(Err::<tradeterm_protocol::CommandResult, _>(
        DispatchError::NotFound,
    )))
}

/// Accepts a channel (with the right token), reads one request, and drops
/// the connection without answering it.
async fn channel(req: HttpRequest, body: web::Payload, seen: web::Data<Arc<Seen>>) -> actix_web::Result<HttpResponse> {
    if req.headers().get(INTERNAL_TOKEN_HEADER).and_then(|v| v.to_str().ok()) != Some(TOKEN) {
        return Ok(HttpResponse::Unauthorized().finish());
    }
    let (response, session, mut stream) = actix_ws::handle(&req, body)?;
    seen.channels.fetch_add(1, Ordering::SeqCst);
    let seen = seen.get_ref().clone();
    actix_web::rt::spawn(async move {
        while let Some(Ok(message)) = stream.recv().await {
            if let actix_ws::Message::Text(text) = message {
                let request: ChannelRequest = serde_json::from_str(&text).expect("a channel request");
                assert!(request.dispatch.relayed, "a holder's dispatch is marked relayed");
                seen.on_channel.fetch_add(1, Ordering::SeqCst);
                let _ = session.close(None).await;
                return;
            }
        }
    });
    Ok(response)
}

/// Accepts a channel and answers its dispatches late: never for terminal
/// `never`, after 2.5 s for any other (an `account_info` reply); counts the
/// channels its client closes.
async fn slow_channel(
    req: HttpRequest,
    body: web::Payload,
    seen: web::Data<Arc<Seen>>,
) -> actix_web::Result<HttpResponse> {
    let (response, session, mut stream) = actix_ws::handle(&req, body)?;
    seen.channels.fetch_add(1, Ordering::SeqCst);
    let seen = seen.get_ref().clone();
    actix_web::rt::spawn(async move {
        while let Some(Ok(message)) = stream.recv().await {
            match message {
                actix_ws::Message::Text(text) => {
                    let request: ChannelRequest = serde_json::from_str(&text).expect("a channel request");
                    seen.on_channel.fetch_add(1, Ordering::SeqCst);
                    if request.dispatch.terminal_id == "never" {
                        continue;
                    }
                    let mut session = session.clone();
                    actix_web::rt::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(2500)).await;
                        let reply = ChannelReply {
                            seq: request.seq,
                            reply: DispatchReply::from(Err::<CommandResult, _>(DispatchError::NotFound)),
                        };
                        let _ = session.text(serde_json::to_string(&reply).unwrap()).await;
                    });
                }
                actix_ws::Message::Close(_) => break,
                _ => {}
            }
        }
        seen.closed.fetch_add(1, Ordering::SeqCst);
    });
    Ok(response)
}

/// How the fake gateway serves its channel.
#[derive(Clone, Copy)]
enum Channel {
    /// [`channel`]: reads one request and drops the connection.
    DropsAtFirstRequest,
    /// [`slow_channel`]: answers late, or never.
    AnswersLate,
}

/// A fake gateway on loopback (one worker), its HTTP dispatch route
/// answering `NOT_FOUND` ([`post`]): its base URL and handle.
fn fake_gateway(seen: &Arc<Seen>, kind: Channel) -> (String, actix_web::dev::ServerHandle) {
    let data = web::Data::new(seen.clone());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = HttpServer::new(move || {
        let channel_route = match kind {
            Channel::DropsAtFirstRequest => web::get().to(channel),
            Channel::AnswersLate => web::get().to(slow_channel),
        };
        App::new()
            .app_data(data.clone())
            .route("/internal/v1/dispatch", web::post().to(post))
            .route("/internal/v1/channel", channel_route)
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    (format!("http://127.0.0.1:{port}"), handle)
}

/// Dispatches `command` to the fake until one went over a channel (the
/// first ones go over HTTP while it opens); that dispatch's result.
async fn until_sent_on_a_channel(
    client: &HttpDispatch,
    seen: &Seen,
    command: Command,
) -> Result<tradeterm_protocol::CommandResult, DispatchError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let before = seen.on_channel.load(Ordering::SeqCst);
        let result = client
            .execute("lic", "t1", command.clone(), Duration::from_secs(2))
            .await;
        if seen.on_channel.load(Ordering::SeqCst) > before {
            return result;
        }
        assert_eq!(result, Err(DispatchError::NotFound), "the HTTP answer");
        assert!(Instant::now() < deadline, "no dispatch went over a channel");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix_web::test]
async fn a_channel_lost_under_a_dispatch_fails_it_like_a_lost_http_request() {
    let seen = Arc::new(Seen::default());
    let (base, handle) = fake_gateway(&seen, Channel::DropsAtFirstRequest);
    let holder = HttpDispatch::new(&base, TOKEN).unwrap().holder(&base);

    // A read lost with its channel: unreachable, back to the route table.
    let read = until_sent_on_a_channel(&holder, &seen, Command::AccountInfo).await;
    assert_eq!(read, Err(DispatchError::Unreachable));
    // A trade lost with its channel: unknown outcome, a gateway error.
    let trade = until_sent_on_a_channel(&holder, &seen, Command::CancelOrder { ticket: 7 }).await;
    match trade {
        Err(DispatchError::Gateway(message)) => assert!(message.contains("dispatch request failed"), "{message}"),
        other => panic!("a lost trade must be a gateway error, got {other:?}"),
    }
    // Each lost channel was replaced by a new one; the calls in between went
    // over HTTP.
    assert_eq!(seen.on_channel.load(Ordering::SeqCst), 2);
    assert!(seen.channels.load(Ordering::SeqCst) >= 2);
    assert!(seen.posts.load(Ordering::SeqCst) >= 2);

    // A wrong token never opens a channel: every dispatch goes over HTTP.
    let strangers = HttpDispatch::new(&base, "wrong-token").unwrap();
    let opened = seen.channels.load(Ordering::SeqCst);
    for _ in 0..5 {
        let r = strangers
            .execute("lic", "t1", Command::AccountInfo, Duration::from_secs(2))
            .await;
        assert_eq!(r, Err(DispatchError::NotFound));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.channels.load(Ordering::SeqCst), opened);
    handle.stop(false).await;
}

/// Answers the next `n` `tick` requests in the reverse of the order they
/// came in, each with a quote of the symbol it asked for; the request ids.
async fn answer_ticks_reversed(ws: &mut Ws, n: usize) -> Vec<String> {
    let mut asked = Vec::new();
    while asked.len() < n {
        match next_gateway_frame(ws).await {
            GatewayFrame::Request {
                id,
                command: Command::Tick { symbol },
                ..
            } => asked.push((id, symbol)),
            GatewayFrame::Ping { ts } => ws.send(Message::text(AgentFrame::Pong { ts }.to_json())).await.unwrap(),
            other => panic!("unexpected {other:?}"),
        }
    }
    for (id, symbol) in asked.iter().rev() {
        let tick = tradeterm_core::Tick {
            symbol: symbol.clone(),
            bid: 1.0,
            ask: 1.1,
            time: 1_763_790_000_000,
        };
        let reply = AgentFrame::Response(Response::ok(id.clone(), CommandResult::Tick(tick)));
        ws.send(Message::text(reply.to_json())).await.unwrap();
    }
    asked.into_iter().map(|(id, _)| id).collect()
}

/// The dispatch channel (`docs/gateway.md`, "The dispatch channel"): the
/// first dispatch of a thread goes over HTTP while its channel opens; then
/// dispatches go over the channel and no longer over `POST
/// /internal/v1/dispatch`; twenty at once are each answered with their own
/// reply although the agent answers them in reverse order; the request id
/// travels with them; at shutdown the channel closes and dispatches go back
/// to HTTP.
#[tokio::test]
async fn dispatches_go_over_the_channel_once_it_is_open() {
    use tradeterm_telemetry::names;
    use tradeterm_telemetry::request_id::{self, RequestId};

    let app = spawn_app().await;
    let (term_id, term_key) = app.terminals[0].clone();
    let (mut ws, first) = connect(&app, &term_key, "uid-channel", Permissions::default()).await;
    assert!(matches!(first, GatewayFrame::Welcome { .. }), "{first:?}");
    let remote = HttpDispatch::new(&app.base, INTERNAL).unwrap();
    let t = Duration::from_secs(5);
    let dispatch_route = [
        ("service", "gateway"),
        ("route", "/internal/v1/dispatch"),
        ("method", "POST"),
        ("status", "200"),
    ];
    let tick = |symbol: &str| Command::Tick { symbol: symbol.into() };

    // First: over HTTP, and the channel starts opening.
    let before = scrape(&app).await;
    let (call, ids) = tokio::join!(
        remote.execute(&app.license_id, &term_id, tick("FIRST"), t),
        answer_ticks_reversed(&mut ws, 1)
    );
    assert!(
        matches!(call, Ok(CommandResult::Tick(ref q)) if q.symbol == "FIRST"),
        "{call:?} {ids:?}"
    );
    let after = scrape(&app).await;
    assert_eq!(
        after.value(names::HTTP_REQUESTS_TOTAL, &dispatch_route)
            - before.value(names::HTTP_REQUESTS_TOTAL, &dispatch_route),
        1.0
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while scrape(&app).await.value(names::DISPATCH_CHANNELS_OPEN, &[]) < 1.0 {
        assert!(Instant::now() < deadline, "the dispatch channel never opened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the client record its open channel (right after the handshake).
    tokio::time::sleep(Duration::from_millis(50)).await;

    // Twenty at once, over the channel, answered in reverse order.
    let before = scrape(&app).await;
    let symbols: Vec<String> = (0..20).map(|i| format!("SYM{i}")).collect();
    let calls = futures_util::future::join_all(
        symbols
            .iter()
            .map(|s| remote.execute(&app.license_id, &term_id, tick(s), t)),
    );
    let (results, ids) = tokio::join!(calls, answer_ticks_reversed(&mut ws, 20));
    assert_eq!(ids.len(), 20);
    for (symbol, result) in symbols.iter().zip(&results) {
        match result {
            Ok(CommandResult::Tick(q)) => assert_eq!(&q.symbol, symbol),
            other => panic!("{symbol}: {other:?}"),
        }
    }
    let after = scrape(&app).await;
    let moved = |name: &str, labels: &[(&str, &str)]| after.value(name, labels) - before.value(name, labels);
    assert_eq!(
        moved(names::HTTP_REQUESTS_TOTAL, &dispatch_route),
        0.0,
        "none went over HTTP"
    );
    let ok = [("side", "gateway"), ("command", "tick"), ("outcome", "ok")];
    assert_eq!(moved(names::DISPATCH_TOTAL, &ok), 20.0);
    assert_eq!(after.value(names::DISPATCH_CHANNELS_OPEN, &[]), 1.0);

    // The request id goes with a dispatch on the channel.
    let rid = RequestId::parse("rid-over-channel").unwrap();
    let (call, ids) = tokio::join!(
        request_id::scope(rid, remote.execute(&app.license_id, &term_id, tick("RID"), t)),
        answer_ticks_reversed(&mut ws, 1)
    );
    assert!(call.is_ok(), "{call:?}");
    assert_eq!(request_id::of_command_id(&ids[0]), Some("rid-over-channel"), "{ids:?}");

    // Shutdown: the channel closes; the next dispatch goes over HTTP again
    // (and finds no agent: the gateway disconnected it).
    app.gateway.shutdown(Duration::from_millis(200)).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while scrape(&app).await.value(names::DISPATCH_CHANNELS_OPEN, &[]) > 0.0 {
        assert!(
            Instant::now() < deadline,
            "the dispatch channel did not close at shutdown"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = scrape(&app).await;
    let err = remote
        .execute(&app.license_id, &term_id, tick("LATE"), t)
        .await
        .unwrap_err();
    assert_eq!(err, DispatchError::Unreachable);
    let after = scrape(&app).await;
    assert_eq!(
        after.value(names::HTTP_REQUESTS_TOTAL, &dispatch_route)
            - before.value(names::HTTP_REQUESTS_TOTAL, &dispatch_route),
        1.0
    );
}

/// A dispatch with no answer by its timeout (plus 2 s) is a gateway error
/// and takes its channel out of use, but the other dispatches on that
/// channel still get their answers; the channel closes after the last one,
/// and the thread's next dispatches go over HTTP while a new one opens.
#[actix_web::test]
async fn an_unanswered_dispatch_retires_its_channel_without_failing_the_others() {
    let seen = Arc::new(Seen::default());
    let (base, handle) = fake_gateway(&seen, Channel::AnswersLate);
    let client = HttpDispatch::new(&base, TOKEN).unwrap();

    // Over HTTP while the channel opens.
    let first = client
        .execute("lic", "t1", Command::AccountInfo, Duration::from_secs(1))
        .await;
    assert_eq!(first, Err(DispatchError::NotFound));
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.channels.load(Ordering::SeqCst) < 1 {
        assert!(Instant::now() < deadline, "no channel opened");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;

    // One dispatch never answered (timeout 100 ms: gives up after 2.1 s),
    // one answered after 2.5 s (timeout 5 s), both on the channel.
    let never = client.execute("lic", "never", Command::AccountInfo, Duration::from_millis(100));
    let late = client.execute("lic", "t1", Command::AccountInfo, Duration::from_secs(5));
    let (never, late) = tokio::join!(never, late);
    assert_eq!(seen.on_channel.load(Ordering::SeqCst), 2, "both went on the channel");
    match never {
        Err(DispatchError::Gateway(m)) => assert!(m.contains("no answer from the gateway in time"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(late, Err(DispatchError::NotFound), "the late answer still arrived");
    // The retired channel closed after its last answer.
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.closed.load(Ordering::SeqCst) < 1 {
        assert!(Instant::now() < deadline, "the retired channel stayed open");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The next dispatch goes over HTTP, and a new channel opens.
    let posts = seen.posts.load(Ordering::SeqCst);
    let next = client
        .execute("lic", "t1", Command::AccountInfo, Duration::from_secs(1))
        .await;
    assert_eq!(next, Err(DispatchError::NotFound));
    assert_eq!(seen.posts.load(Ordering::SeqCst), posts + 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.channels.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "no new channel opened");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.stop(false).await;
}
