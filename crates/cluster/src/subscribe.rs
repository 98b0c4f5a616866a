//! A Redis subscription kept up on a thread of its own, for caches that must
//! hear of every change they hold: route moves ([`crate::MOVES_CHANNEL`]) and
//! credential revocations (`tradeterm_protocol::dispatch::REVOCATIONS_CHANNEL`).
//!
//! The subscriber is told when the subscription comes up
//! ([`Heard::Up`]: anything cached before may have changed unheard), of each
//! message, and when it is lost ([`Heard::Down`]: a change may go unheard
//! from now on). The connection is checked with a `PING` every second; a
//! subscription that cannot be made or checked within 2 s counts as lost and
//! is made again, backing off up to 2 s. The thread ends once
//! [`Subscription::alive`] says the subscriber is gone.

use std::time::Duration;

use deadpool_redis::redis;

/// What a subscription reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Subscribed: every message published from now on will be heard.
    Up,
    /// The payloads of the messages that arrived together, in order (at
    /// least one). The next report waits until this one is handled, so a
    /// subscriber that reads Redis while handling it sees every change up to
    /// these messages, and hears of every later one afterwards.
    Messages(Vec<String>),
    /// Lost: messages may go unheard until the next [`Heard::Up`].
    Down,
}

/// Who listens.
pub trait Subscription: Send + 'static {
    /// Handles one report (on the subscription's own thread).
    fn heard(&self, what: Heard) -> impl std::future::Future<Output = ()>;
    /// Whether anyone still needs the subscription (checked every second).
    fn alive(&self) -> bool;
}

const PING_EVERY: Duration = Duration::from_secs(1);
const CALL_LIMIT: Duration = Duration::from_secs(2);
/// Most messages handed over in one report.
const MAX_BATCH: usize = 1024;

/// Subscribes `to` to `channel` of the Redis at `url` on a thread named
/// `name`, for as long as it is [alive](Subscription::alive).
///
/// # Errors
/// `url` is not a Redis URL, or the thread could not start.
pub fn spawn(url: &str, channel: &'static str, name: &str, to: impl Subscription) -> Result<(), String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || runtime.block_on(run(client, channel, to)))
        .map_err(|e| e.to_string())?;
    Ok(())
}

async fn run(client: redis::Client, channel: &'static str, to: impl Subscription) {
    use futures_util::StreamExt;
    let mut backoff = Duration::from_millis(100);
    let mut warned = false;
    while to.alive() {
        let subscribed = tokio::time::timeout(CALL_LIMIT, async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        })
        .await;
        let pubsub = match subscribed {
            Ok(Ok(pubsub)) => pubsub,
            failed => {
                if !warned {
                    let error = match failed {
                        Ok(Err(e)) => e.to_string(),
                        _ => "no answer".to_owned(),
                    };
                    tracing::warn!(channel, %error, "cannot subscribe; retrying");
                    warned = true;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
                continue;
            }
        };
        tracing::info!(channel, "subscribed");
        to.heard(Heard::Up).await;
        backoff = Duration::from_millis(100);
        warned = false;
        let (mut sink, mut stream) = pubsub.split();
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                msg = stream.next() => {
                    let Some(msg) = msg else { break };
                    // With the messages that arrived with it.
                    let mut batch = vec![msg];
                    while batch.len() < MAX_BATCH {
                        match futures_util::FutureExt::now_or_never(stream.next()) {
                            Some(Some(more)) => batch.push(more),
                            _ => break,
                        }
                    }
                    let payloads: Result<Vec<String>, _> = batch.iter().map(|m| m.get_payload::<String>()).collect();
                    match payloads {
                        Ok(payloads) => to.heard(Heard::Messages(payloads)).await,
                        // Not text: no telling what changed, so everything may have.
                        Err(_) => to.heard(Heard::Up).await,
                    }
                }
                _ = ping.tick() => {
                    if !to.alive() {
                        return;
                    }
                    if !matches!(tokio::time::timeout(CALL_LIMIT, sink.ping::<redis::Value>()).await, Ok(Ok(_))) {
                        break;
                    }
                }
            }
        }
        to.heard(Heard::Down).await;
        tracing::warn!(channel, "subscription lost; resubscribing");
    }
}
