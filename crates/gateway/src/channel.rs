//! The gateway's side of the dispatch channel (`GET /internal/v1/channel`,
//! `docs/gateway.md`, "The dispatch channel"): a WebSocket opened by a REST
//! or MCP instance (or another gateway relaying), authenticated with the
//! internal token like `POST /internal/v1/dispatch`, on which each text
//! frame is a [`ChannelRequest`] and each answer a [`ChannelReply`] with the
//! same `seq`. Every request runs as its own task, exactly as the dispatch
//! route runs it (same request id scope, same relay rule, same metrics), so
//! the answers come back in whatever order the terminals give them.
//!
//! On shutdown ([`Gateway::shutdown`]) each channel stops reading new
//! requests, lets the ones it is running answer (for at most
//! [`DRAIN_FOR`]) and closes; its client then opens a channel to whichever
//! instance holds the terminals next, and uses HTTP until it can.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use actix_ws::{AggregatedMessage, AggregatedMessageStream, Session};
use tradeterm_protocol::dispatch::{ChannelReply, ChannelRequest};
use tradeterm_telemetry::request_id::{self, RequestId};

use crate::{ApiError, Gateway};

/// Largest request frame: the dispatch route's body limit.
const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// Longest a closing channel waits for the requests it is running.
pub(crate) const DRAIN_FOR: Duration = Duration::from_secs(2);

/// `GET /internal/v1/channel`: upgrades to a dispatch channel.
pub(crate) async fn internal_channel(
    req: HttpRequest,
    body: web::Payload,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, actix_web::Error> {
    crate::http::check_internal(&req, &gateway)?;
    if gateway.is_draining() {
        return Err(ApiError::new(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            "SHUTTING_DOWN",
            "the gateway is shutting down",
        )
        .into());
    }
    let (response, session, stream) = actix_ws::handle(&req, body)?;
    let stream = stream
        .max_frame_size(MAX_REQUEST_BYTES)
        .aggregate_continuations()
        .max_continuation_size(MAX_REQUEST_BYTES);
    let gateway = gateway.get_ref().clone();
    actix_web::rt::spawn(serve(gateway, session, stream));
    Ok(response)
}

/// Serves one channel until its client closes it or the gateway shuts down.
async fn serve(gateway: Gateway, mut session: Session, mut stream: AggregatedMessageStream) {
    let mut stop = gateway.channels_stop();
    let running = Rc::new(Cell::new(0usize));
    crate::telemetry::channel_opened();
    loop {
        tokio::select! {
            message = stream.recv() => match message {
                Some(Ok(AggregatedMessage::Text(text))) => match serde_json::from_str::<ChannelRequest>(&text) {
                    Ok(request) => {
                        running.set(running.get() + 1);
                        let (gateway, session, running) = (gateway.clone(), session.clone(), running.clone());
                        actix_web::rt::spawn(async move {
                            answer(&gateway, session, request).await;
                            running.set(running.get() - 1);
                        });
                    }
                    Err(e) => {
                        // A client of this version never writes one: close
                        // rather than leave a dispatch unanswered unseen.
                        tracing::warn!(error = %e, "unreadable request on a dispatch channel; closing it");
                        break;
                    }
                },
                Some(Ok(AggregatedMessage::Ping(bytes))) => {
                    let _ = session.pong(&bytes).await;
                }
                Some(Ok(AggregatedMessage::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            _ = stop.wait_for(|stopped| *stopped) => break,
        }
    }
    let deadline = tokio::time::Instant::now() + DRAIN_FOR;
    while running.get() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    crate::telemetry::channel_closed();
    let _ = session.close(None).await;
}

/// Runs one request and writes its reply.
async fn answer(gateway: &Gateway, mut session: Session, request: ChannelRequest) {
    let ChannelRequest {
        seq,
        request_id: id,
        dispatch,
    } = request;
    let id = RequestId::from_header(id.as_deref().map(str::as_bytes));
    let reply = ChannelReply {
        seq,
        reply: request_id::scope(id, crate::http::run_dispatch(gateway, dispatch)).await,
    };
    match serde_json::to_string(&reply) {
        Ok(text) => {
            let _ = session.text(text).await;
        }
        Err(e) => tracing::error!(error = %e, "could not encode a dispatch reply"),
    }
}
