//! The webhook worker of a process: the enqueuer and the sender.
//!
//! - **Enqueuer.** Follows the bus's live feed; a durable event of a license
//!   marks the license, and each round reads every enabled endpoint of the
//!   marked licenses from its cursor (`replay(license, cursor, …)`), adds
//!   the events its filter takes to the outbox (idempotent: one row per
//!   endpoint and event) and moves the cursor, in one transaction. On start,
//!   on `Live::Resync`, when the feed lagged and every
//!   [`WebhookSettings::rescan_interval`], every endpoint is read, so an
//!   event appended while this process was down or deaf is enqueued from
//!   the log (within retention). Quotes are never delivered.
//! - **Sender.** Claims due deliveries in the store (a lease of at least
//!   three times the timeout, so each is sent by one instance at a time),
//!   keeps up to [`WebhookSettings::batch`] in flight, each in its own task
//!   (a slow endpoint holds up only its own), posts each (signed, no redirects,
//!   time limit, answer read up to a size), and records the attempt: a 2xx
//!   is delivered; anything else is retried after an exponential delay
//!   with jitter until [`WebhookSettings::give_up_after`] after it was
//!   enqueued, then failed. An endpoint whose attempts failed for
//!   [`WebhookSettings::disable_after`] without a success is disabled and a
//!   `webhook.disabled` event is published.
//!
//! - **Bars.** An endpoint may subscribe to `bar.closed` series (`bars`:
//!   symbols × timeframes). Every process registers the pairs of every
//!   enabled endpoint in its [`BarInterests`] (read from the store every
//!   [`BAR_REFRESH`]), so the bar watcher of whichever instance sees the
//!   quote produces the bar (once across instances), and the enqueuer
//!   gives an endpoint only the `bar.closed` events of its own series.
//!
//! Stopping (or killing) the process mid-delivery loses nothing: a claimed
//! delivery whose attempt was not recorded is taken again when its lease
//! ends, so the receiver may get it twice (at least once; dedupe by
//! `Tradeterm-Event-Id`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, broadcast};
use tradeterm_events::interest::{BarInterest, BarInterests};
use tradeterm_events::model::{BarClosedData, WebhookDisabledData};
use tradeterm_events::{Draft, Event, EventBus, EventId, EventType, Live};
use tradeterm_store::{
    ClaimedDelivery, NewWebhookDelivery, Secret, WebhookAttemptOutcome, WebhookBars, WebhookEndpoint,
};

use super::{BarSubscription, WebhookSettings, deliverable, outbound, sign};
use crate::Services;

/// Events read from the log per replay call.
const REPLAY_PAGE: usize = 500;

/// How often the bar subscriptions of the endpoints are read again: a new
/// or changed subscription is watched on every instance within this.
pub const BAR_REFRESH: Duration = Duration::from_secs(2);

/// The running worker; [`WebhookHandle::stop`] ends it.
#[derive(Debug)]
pub struct WebhookHandle {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl WebhookHandle {
    /// Stops the enqueuer and the sender (an attempt in flight is dropped:
    /// its claim expires and it is sent again).
    pub async fn stop(self) {
        for t in &self.tasks {
            t.abort();
        }
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Starts the enqueuer (when the services have an event pipeline) and the
/// sender of this process.
pub fn spawn(services: Arc<Services>, settings: WebhookSettings) -> WebhookHandle {
    let wake = Arc::new(Notify::new());
    let mut tasks = Vec::new();
    if let Some(publisher) = services.events.clone() {
        tasks.push(tokio::spawn(bar_interest_loop(
            services.clone(),
            publisher.bar_interests().clone(),
        )));
        let bus = publisher.bus().clone();
        // Subscribed before the first round, so nothing falls between.
        let live = bus.live();
        tasks.push(tokio::spawn(enqueue_loop(
            services.clone(),
            bus,
            live,
            settings,
            wake.clone(),
        )));
    }
    let claimer = format!("snd_{}", uuid_like());
    match outbound::client(&settings) {
        Ok(client) => tasks.push(tokio::spawn(send_loop(services, settings, wake, client, claimer))),
        Err(e) => tracing::error!(error = %e, "webhook deliveries cannot start"),
    }
    WebhookHandle { tasks }
}

fn uuid_like() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

/// A random number (jitter, claimer names): the standard library's
/// randomly keyed hasher over the clock.
fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    std::collections::hash_map::RandomState::new().hash_one(nanos)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Keeps the bar series of every enabled endpoint registered in this
/// process's interests: one registration per endpoint, replaced when its
/// subscription changes, dropped when it is disabled, deleted or gives up
/// its bars. A failed read keeps what is registered.
async fn bar_interest_loop(services: Arc<Services>, interests: Arc<BarInterests>) {
    let mut held: HashMap<String, (String, WebhookBars, BarInterest)> = HashMap::new();
    let mut tick = tokio::time::interval(BAR_REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let endpoints = match services.store.enabled_webhooks().await {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "webhooks: bar subscriptions not read; keeping the registered ones");
                continue;
            }
        };
        let wanted: HashMap<String, (String, WebhookBars)> = endpoints
            .into_iter()
            .filter_map(|e| e.bars.map(|b| (e.id, (e.license_id, b))))
            .collect();
        held.retain(|id, (license, bars, _)| wanted.get(id).is_some_and(|(l, b)| l == license && b == bars));
        for (id, (license, bars)) in wanted {
            if held.contains_key(&id) {
                continue;
            }
            let sub = BarSubscription::from_stored(&bars);
            let symbols: BTreeSet<String> = sub.symbols.iter().cloned().collect();
            let timeframes: BTreeSet<_> = sub.timeframes.iter().copied().collect();
            let guard = interests.register(&license, None, &symbols, &timeframes);
            held.insert(id, (license, bars, guard));
        }
    }
}

/// Whether an endpoint takes an event: its type filter, and for
/// `bar.closed` its own bar series.
fn takes(e: &WebhookEndpoint, bars: Option<&BarSubscription>, ev: &Event) -> bool {
    if !(e.types.is_empty() || e.types.iter().any(|t| t == ev.kind.as_str())) {
        return false;
    }
    if ev.kind != EventType::BarClosed {
        return true;
    }
    let (Some(bars), Some(symbol), Some(tf)) = (bars, ev.symbol.as_deref(), BarClosedData::timeframe_of(&ev.data))
    else {
        return false;
    };
    bars.covers(symbol, tf)
}

async fn enqueue_loop(
    services: Arc<Services>,
    bus: Arc<dyn EventBus>,
    mut live: broadcast::Receiver<Live>,
    settings: WebhookSettings,
    wake: Arc<Notify>,
) {
    let mut all = true;
    let mut dirty: HashSet<String> = HashSet::new();
    let mut rescan = tokio::time::interval(settings.rescan_interval);
    rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    rescan.tick().await;
    loop {
        if all || !dirty.is_empty() {
            let only = (!all).then_some(&dirty);
            match enqueue_round(&services, bus.as_ref(), only).await {
                Ok(added) => {
                    if added > 0 {
                        wake.notify_one();
                    }
                    all = false;
                    dirty.clear();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "webhooks: enqueuing failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
        }
        tokio::select! {
            m = live.recv() => if !note(m, &mut all, &mut dirty) { return },
            _ = rescan.tick() => all = true,
        }
        // Take what is already there in the same round.
        loop {
            match live.try_recv() {
                Ok(m) => {
                    note(Ok(m), &mut all, &mut dirty);
                }
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    note(Err(broadcast::error::RecvError::Lagged(n)), &mut all, &mut dirty);
                }
                Err(_) => break,
            }
        }
    }
}

/// Notes what the live feed said: a license with a new durable event, or
/// that everything must be read. `false` when the feed is closed.
fn note(m: Result<Live, broadcast::error::RecvError>, all: &mut bool, dirty: &mut HashSet<String>) -> bool {
    match m {
        Ok(Live::Event { license, event }) => {
            if event.id.is_some() && deliverable(event.kind) {
                dirty.insert(license.to_string());
            }
        }
        Ok(Live::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => *all = true,
        Err(broadcast::error::RecvError::Closed) => return false,
    }
    true
}

/// One round: every enabled endpoint (of `only`'s licenses when given) read
/// from its cursor into the outbox. The number of deliveries added.
async fn enqueue_round(services: &Services, bus: &dyn EventBus, only: Option<&HashSet<String>>) -> Result<u64, String> {
    let endpoints = services.store.enabled_webhooks().await.map_err(|e| e.to_string())?;
    let mut added = 0;
    for e in endpoints {
        if only.is_some_and(|l| !l.contains(&e.license_id)) {
            continue;
        }
        added += enqueue_endpoint(services, bus, &e).await?;
    }
    Ok(added)
}

async fn enqueue_endpoint(services: &Services, bus: &dyn EventBus, e: &WebhookEndpoint) -> Result<u64, String> {
    let mut after: Option<EventId> = e.cursor.as_deref().and_then(|c| c.parse().ok());
    let bars = e.bars.as_ref().map(BarSubscription::from_stored);
    let mut added = 0;
    loop {
        let replay = bus
            .replay(&e.license_id, after, REPLAY_PAGE)
            .await
            .map_err(|e| e.to_string())?;
        if replay.gap {
            tracing::warn!(
                webhook = %e.id,
                "webhooks: events after the endpoint's cursor were dropped by retention before they were enqueued"
            );
        }
        let Some(last) = replay.events.iter().rev().find_map(|ev| ev.id) else {
            return Ok(added);
        };
        let deliveries: Vec<NewWebhookDelivery> = replay
            .events
            .iter()
            .filter(|ev| ev.id.is_some() && deliverable(ev.kind))
            .filter(|ev| takes(e, bars.as_ref(), ev))
            .map(|ev| NewWebhookDelivery {
                event_id: ev.id.map(|i| i.to_string()).unwrap_or_default(),
                event_type: ev.kind.as_str().to_owned(),
                body: serde_json::to_string(ev).unwrap_or_default(),
            })
            .collect();
        added += services
            .store
            .enqueue_webhook_deliveries(&e.license_id, &e.id, &deliveries, &last.to_string())
            .await
            .map_err(|e| e.to_string())?;
        after = Some(last);
        if !replay.more {
            return Ok(added);
        }
    }
}

async fn send_loop(
    services: Arc<Services>,
    settings: WebhookSettings,
    wake: Arc<Notify>,
    client: reqwest::Client,
    claimer: String,
) {
    let lease = claim_lease(&settings).as_millis() as i64;
    let capacity = settings.batch.max(1);
    // Each delivery in flight is its own task, and a free slot is claimed
    // again as soon as one ends: an endpoint that holds its answer (up to the
    // timeout) delays only its own deliveries, never the others'.
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        while in_flight.try_join_next().is_some() {}
        let free = capacity.saturating_sub(in_flight.len());
        if free > 0 {
            let now = now_ms();
            match services
                .store
                .claim_webhook_deliveries(&claimer, now, now + lease, free as i64)
                .await
            {
                Ok(batch) if !batch.is_empty() => {
                    for d in batch {
                        in_flight.spawn(deliver(services.clone(), settings, client.clone(), d));
                    }
                    continue;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "webhooks: claiming deliveries failed"),
            }
        }
        tokio::select! {
            _ = wake.notified() => {}
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
            _ = tokio::time::sleep(settings.poll_interval) => {}
        }
    }
}

/// How long a claim holds a delivery: [`WebhookSettings::lease`], and at
/// least three times the timeout, so that a claim never ends while its
/// attempt can still be answered (another instance would post it again).
pub fn claim_lease(settings: &WebhookSettings) -> Duration {
    settings.lease.max(settings.timeout.saturating_mul(3))
}

/// The delay before attempt `attempt + 1`: the base doubled per attempt,
/// capped, drawn in its upper half.
pub fn backoff(settings: &WebhookSettings, attempt: i64) -> Duration {
    let base = settings.retry_base.as_millis() as u64;
    let cap = settings.retry_max.as_millis() as u64;
    let exp = (attempt.clamp(1, 40) - 1) as u32;
    let full = base.saturating_mul(1u64 << exp.min(40)).min(cap).max(1);
    let half = full / 2;
    Duration::from_millis(full - half + random_u64() % (half + 1))
}

async fn deliver(services: Arc<Services>, settings: WebhookSettings, client: reqwest::Client, d: ClaimedDelivery) {
    let settings = &settings;
    let result = post(&client, settings, &d.url, &d.event_id, &d.body, &d.secret).await;
    let at = now_ms();
    let delivered = result.delivered();
    let give_up = at - d.created_at >= settings.give_up_after.as_millis() as i64;
    let next_attempt_at = (!delivered && !give_up).then(|| at + backoff(settings, d.attempts + 1).as_millis() as i64);
    let outcome = WebhookAttemptOutcome {
        at,
        status: result.status.map(i64::from),
        latency_ms: result.latency_ms as i64,
        error: result.error.clone(),
        delivered,
        next_attempt_at,
    };
    let store = &services.store;
    match store
        .record_webhook_attempt(&d.license_id, d.id, &d.claim, &outcome)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            tracing::debug!(webhook = %d.endpoint_id, event = %d.event_id, "webhooks: the claim ended before the attempt was recorded");
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, webhook = %d.endpoint_id, "webhooks: recording an attempt failed");
            return;
        }
    }
    if delivered {
        return;
    }
    // Failing for long enough: disable, once, and say so.
    let Ok(Some(endpoint)) = store.webhook(&d.license_id, &d.endpoint_id).await else {
        return;
    };
    let Some(since) = endpoint.failing_since else {
        return;
    };
    if at - since < settings.disable_after.as_millis() as i64 {
        return;
    }
    let last = result.error.as_deref().unwrap_or("failed");
    let message = format!(
        "deliveries to {} failed since {} (last: {last}); the endpoint is disabled",
        endpoint.url,
        tradeterm_core::time::to_iso(since)
    );
    match store.disable_webhook(&d.license_id, &endpoint.id, &message).await {
        Ok(true) => {
            tracing::warn!(webhook = %endpoint.id, license = %d.license_id, "webhooks: endpoint disabled after failing");
            if let Some(p) = &services.events {
                let data = WebhookDisabledData {
                    webhook: endpoint.id.clone(),
                    url: endpoint.url.clone(),
                    failing_since: since,
                    message,
                };
                p.publish(&d.license_id, Draft::new(EventType::WebhookDisabled, at, None, &data));
            }
        }
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "webhooks: disabling an endpoint failed"),
    }
}

/// What one post gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostResult {
    /// The HTTP status, when one was answered.
    pub status: Option<u16>,
    /// How long the exchange took, ms.
    pub latency_ms: u64,
    /// What went wrong (no answer, or a status that is not 2xx).
    pub error: Option<String>,
}

impl PostResult {
    /// A 2xx answer.
    pub fn delivered(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Posts `body` to `url`, signed with `secret`, with the event id header.
pub async fn post(
    client: &reqwest::Client,
    settings: &WebhookSettings,
    url: &str,
    event_id: &str,
    body: &str,
    secret: &Secret,
) -> PostResult {
    let start = Instant::now();
    let fail = |error: String, status: Option<u16>| PostResult {
        status,
        latency_ms: start.elapsed().as_millis() as u64,
        error: Some(error),
    };
    let Ok(target) = reqwest::Url::parse(url) else {
        return fail("the endpoint's URL does not parse".into(), None);
    };
    if settings.require_https && target.scheme() != "https" {
        return fail("only https:// targets are allowed".into(), None);
    }
    if !outbound::literal_allowed(&target, settings) {
        return fail("the target is a blocked address".into(), None);
    }
    let t = now_ms().div_euclid(1000);
    let signature = sign::signature(secret.expose(), t, body);
    let sent = client
        .post(target)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("Tradeterm-Event-Id", event_id)
        .header("Tradeterm-Signature", signature)
        .body(body.to_owned())
        .send()
        .await;
    let mut resp = match sent {
        Ok(r) => r,
        Err(e) if e.is_timeout() => return fail(format!("timed out after {:?}", settings.timeout), None),
        Err(e) => {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                msg = format!("{msg}: {s}");
                source = s.source();
            }
            return fail(format!("no answer: {msg}"), None);
        }
    };
    let status = resp.status().as_u16();
    // Read at most the limit of the answer (and at most the time left).
    let mut read = 0usize;
    let deadline = tokio::time::Instant::now() + settings.timeout.saturating_sub(start.elapsed());
    while read <= settings.max_response_bytes {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => read += chunk.len(),
            _ => break,
        }
    }
    let latency_ms = start.elapsed().as_millis() as u64;
    let error = (!(200..300).contains(&status)).then(|| format!("HTTP {status}"));
    PostResult {
        status: Some(status),
        latency_ms,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_in_the_upper_half_and_is_capped() {
        let s = WebhookSettings::default();
        for attempt in 1..=20 {
            let full = (5_000u64 << (attempt - 1).min(40)).min(3_600_000);
            for _ in 0..20 {
                let d = backoff(&s, attempt).as_millis() as u64;
                assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d} of {full}");
            }
        }
        // Retried for at least 24 h: the capped delays leave many attempts in a day.
        assert!(backoff(&s, 30).as_millis() as u64 <= 3_600_000);
    }

    #[test]
    fn a_claim_lasts_at_least_three_timeouts() {
        let s = WebhookSettings::default();
        assert_eq!(claim_lease(&s), Duration::from_secs(30));
        let slow = WebhookSettings {
            timeout: Duration::from_secs(30),
            ..s
        };
        assert_eq!(claim_lease(&slow), Duration::from_secs(90));
    }

    fn endpoint(types: &[&str], bars: Option<(&[&str], &[&str])>) -> WebhookEndpoint {
        WebhookEndpoint {
            id: "whk_1".into(),
            license_id: "lic".into(),
            url: "https://example.com/h".into(),
            types: types.iter().map(|t| (*t).to_owned()).collect(),
            enabled: true,
            created_at: 0,
            updated_at: 0,
            disabled_reason: None,
            failing_since: None,
            cursor: None,
            bars: bars.map(|(s, t)| WebhookBars {
                symbols: s.iter().map(|x| (*x).to_owned()).collect(),
                timeframes: t.iter().map(|x| (*x).to_owned()).collect(),
            }),
        }
    }

    fn bar_event(symbol: &str, timeframe: tradeterm_core::Timeframe) -> Event {
        let data = BarClosedData {
            symbol: symbol.into(),
            timeframe,
            bar: tradeterm_core::Bar {
                time: 0,
                open: 1.0,
                high: 1.0,
                low: 1.0,
                close: 1.0,
                volume: 1.0,
            },
        };
        Draft::new(EventType::BarClosed, 0, Some("t1"), &data).with_id("1-1".parse().unwrap())
    }

    #[test]
    fn an_endpoint_takes_the_bars_of_its_own_series_only() {
        use tradeterm_core::Timeframe::{H1, M1};
        let fill = Draft::new(
            EventType::OrderFilled,
            0,
            Some("t1"),
            &serde_json::json!({"symbol": "EURUSD"}),
        )
        .with_id("1-2".parse().unwrap());
        let subscribed = endpoint(&["bar.closed", "order.filled"], Some((&["EURUSD"], &["M1"])));
        let everything = endpoint(&[], None);
        let filtered = endpoint(&["order.filled"], None);
        let with =
            |e: &WebhookEndpoint, ev: &Event| takes(e, e.bars.as_ref().map(BarSubscription::from_stored).as_ref(), ev);
        assert!(with(&subscribed, &bar_event("EURUSD", M1)));
        assert!(!with(&subscribed, &bar_event("EURUSD", H1)), "another timeframe");
        assert!(!with(&subscribed, &bar_event("GBPUSD", M1)), "another symbol");
        assert!(with(&subscribed, &fill));
        // No series subscribed: no bar.closed, whatever the type filter.
        assert!(!with(&everything, &bar_event("EURUSD", M1)));
        assert!(with(&everything, &fill));
        assert!(!with(&filtered, &bar_event("EURUSD", M1)));
        assert!(with(&filtered, &fill));
    }
}
