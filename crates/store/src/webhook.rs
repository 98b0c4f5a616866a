//! Webhooks (`docs/events.md`, "Webhooks"): the [`WebhookStore`] section of
//! the store, a supertrait of [`crate::Store`].
//!
//! - **Endpoints**: at most [`MAX_WEBHOOKS_PER_LICENSE`] per license, each
//!   with a URL, the event types it wants (empty: every durable type), a
//!   signing secret (`whsec_…`) and a cursor: the id of the license's last
//!   event considered for it.
//! - **Outbox**: one delivery per (endpoint, event), so enqueuing again is a
//!   no-op; a sender **claims** due deliveries (a lease in the store) before
//!   it posts them, so two instances never send the same delivery at once,
//!   and a sender that died leaves its claims to expire and be taken again.
//! - **Attempts**: the endpoint's delivery log, the newest
//!   [`WEBHOOK_ATTEMPTS_KEPT`] kept.
//!
//! **The secret is stored as it is** (HMAC-SHA256 needs it to sign every
//! delivery, so it cannot be only hashed, unlike every other secret of the
//! store): it leaves this crate wrapped in [`Secret`], to the owner once at
//! creation and to the sender when it signs; it is never listed or logged.
//!
//! **Invariants:** every method acting for a license takes its id and
//! touches nothing of another license; the sender's methods
//! ([`WebhookStore::claim_webhook_deliveries`], [`WebhookStore::enabled_webhooks`])
//! act across licenses and hand each row with its license.

use async_trait::async_trait;

use crate::{Secret, StoreResult};

/// At most this many webhook endpoints per license.
pub const MAX_WEBHOOKS_PER_LICENSE: usize = 10;
/// Attempts kept per endpoint in its delivery log.
pub const WEBHOOK_ATTEMPTS_KEPT: i64 = 100;
/// Prefix of webhook signing secrets.
pub const WEBHOOK_SECRET_PREFIX: &str = "whsec_";

/// A webhook endpoint (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    /// `whk_…`.
    pub id: String,
    /// Owner.
    pub license_id: String,
    /// Where deliveries are posted.
    pub url: String,
    /// Event types delivered (empty: every durable type).
    pub types: Vec<String>,
    /// Whether deliveries are enqueued and sent.
    pub enabled: bool,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms of the last change.
    pub updated_at: i64,
    /// Why it was disabled (by the sender), when it was.
    pub disabled_reason: Option<String>,
    /// Since when its attempts have failed without a success in between (unix ms).
    pub failing_since: Option<i64>,
    /// Id of the license's last event considered for it.
    pub cursor: Option<String>,
    /// The `bar.closed` series it subscribes to (`None`: none).
    pub bars: Option<WebhookBars>,
}

/// The bars an endpoint subscribes to: every symbol × timeframe pair is
/// watched while the endpoint is enabled, and only these pairs' `bar.closed`
/// events are delivered to it. Names as given (checked by the caller).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhookBars {
    /// Symbols (at least one).
    pub symbols: Vec<String>,
    /// Timeframes, MetaTrader's names (at least one).
    pub timeframes: Vec<String>,
}

/// A change of an endpoint (`None`: unchanged).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookUpdate {
    /// New URL.
    pub url: Option<String>,
    /// New type filter.
    pub types: Option<Vec<String>>,
    /// Enable (clears the reason and the failure streak) or disable.
    pub enabled: Option<bool>,
    /// New bar subscription (`Some(None)`: none any more).
    pub bars: Option<Option<WebhookBars>>,
}

/// One event to deliver to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWebhookDelivery {
    /// The event's id (`<ms>-<seq>`).
    pub event_id: String,
    /// The event's type.
    pub event_type: String,
    /// The exact body to post (the event's JSON).
    pub body: String,
}

/// A delivery claimed by a sender, with what it needs to post it.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// The outbox row.
    pub id: i64,
    /// Endpoint.
    pub endpoint_id: String,
    /// Owner.
    pub license_id: String,
    /// The event's id.
    pub event_id: String,
    /// The body to post.
    pub body: String,
    /// Attempts made before this one.
    pub attempts: i64,
    /// When it was enqueued (unix ms).
    pub created_at: i64,
    /// The endpoint's URL.
    pub url: String,
    /// The endpoint's signing secret.
    pub secret: Secret,
    /// The claim this call holds (`claimer#nonce`): what
    /// [`WebhookStore::record_webhook_attempt`] is given.
    pub claim: String,
}

/// What one attempt gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookAttemptOutcome {
    /// When it was made (unix ms).
    pub at: i64,
    /// The HTTP status answered, if any.
    pub status: Option<i64>,
    /// How long it took, ms.
    pub latency_ms: i64,
    /// What went wrong (timeout, connection, non-2xx), if anything.
    pub error: Option<String>,
    /// A 2xx answer: the delivery is done.
    pub delivered: bool,
    /// When to try again; `None` on a failure: give up (`failed`).
    pub next_attempt_at: Option<i64>,
}

/// One attempt, as the delivery log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookAttempt {
    /// The outbox row.
    pub delivery_id: i64,
    /// The event's id.
    pub event_id: String,
    /// 1 for the first attempt of the delivery.
    pub attempt: i64,
    /// Unix ms.
    pub at: i64,
    /// HTTP status, if one was answered.
    pub status: Option<i64>,
    /// Ms.
    pub latency_ms: i64,
    /// What went wrong.
    pub error: Option<String>,
    /// `delivered`, `retrying` or `failed`.
    pub outcome: String,
}

/// How many deliveries of an endpoint are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebhookCounts {
    /// Waiting for a (first or next) attempt.
    pub pending: i64,
    /// Answered with a 2xx.
    pub delivered: i64,
    /// Given up on.
    pub failed: i64,
}

/// Persistence of webhooks.
#[async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// Creates an endpoint with a new signing secret (returned once),
    /// starting after `cursor` (the license's newest event id, so that it
    /// receives what happens from now on). The
    /// [`MAX_WEBHOOKS_PER_LICENSE`]-th + 1 is [`crate::StoreError::Invalid`];
    /// an unknown license [`crate::StoreError::NotFound`]. Atomic with
    /// respect to concurrent creations.
    async fn create_webhook(
        &self,
        license_id: &str,
        url: &str,
        types: &[String],
        cursor: Option<&str>,
    ) -> StoreResult<(WebhookEndpoint, Secret)> {
        self.create_webhook_with_bars(license_id, url, types, None, cursor)
            .await
    }
    /// [`WebhookStore::create_webhook`] with a bar subscription, in the same
    /// statement (an endpoint never exists without the bars it was created with).
    async fn create_webhook_with_bars(
        &self,
        license_id: &str,
        url: &str,
        types: &[String],
        bars: Option<&WebhookBars>,
        cursor: Option<&str>,
    ) -> StoreResult<(WebhookEndpoint, Secret)>;
    /// One endpoint of the license.
    async fn webhook(&self, license_id: &str, webhook_id: &str) -> StoreResult<Option<WebhookEndpoint>>;
    /// The signing secret of one endpoint of the license (to sign a test delivery).
    async fn webhook_secret(&self, license_id: &str, webhook_id: &str) -> StoreResult<Option<Secret>>;
    /// The license's endpoints, oldest first.
    async fn list_webhooks(&self, license_id: &str) -> StoreResult<Vec<WebhookEndpoint>>;
    /// Changes an endpoint; `None` when it is not the license's.
    async fn update_webhook(
        &self,
        license_id: &str,
        webhook_id: &str,
        update: &WebhookUpdate,
    ) -> StoreResult<Option<WebhookEndpoint>>;
    /// Deletes an endpoint with its outbox and log. `Ok(false)` when it was not the license's.
    async fn delete_webhook(&self, license_id: &str, webhook_id: &str) -> StoreResult<bool>;
    /// Every enabled endpoint of every license (the enqueuer's round).
    async fn enabled_webhooks(&self) -> StoreResult<Vec<WebhookEndpoint>>;
    /// Adds deliveries to the endpoint's outbox (one already there for the
    /// same event is left as it is) and moves its cursor to `cursor`, in one
    /// transaction. Nothing when the endpoint is not the license's or is
    /// disabled. The number of deliveries added.
    async fn enqueue_webhook_deliveries(
        &self,
        license_id: &str,
        webhook_id: &str,
        deliveries: &[NewWebhookDelivery],
        cursor: &str,
    ) -> StoreResult<u64>;
    /// Claims up to `limit` due deliveries of enabled endpoints (pending,
    /// `next_attempt_at <= now`, not claimed or with an expired claim) for
    /// `claimer` until `claim_until`, oldest due first. A delivery is held
    /// by one claimer at a time, across instances.
    async fn claim_webhook_deliveries(
        &self,
        claimer: &str,
        now: i64,
        claim_until: i64,
        limit: i64,
    ) -> StoreResult<Vec<ClaimedDelivery>>;
    /// Records an attempt of a delivery held by `claim`
    /// ([`ClaimedDelivery::claim`]): the outbox row
    /// (delivered, retried later, or failed), the endpoint's failure streak
    /// (`failing_since`: cleared by a success, started by a failure) and the
    /// log. `Ok(false)` (nothing changed) when the delivery is no longer
    /// held by `claim` (its lease ended and another sender took it) or is
    /// not the license's.
    async fn record_webhook_attempt(
        &self,
        license_id: &str,
        delivery_id: i64,
        claim: &str,
        outcome: &WebhookAttemptOutcome,
    ) -> StoreResult<bool>;
    /// Disables an enabled endpoint with a reason. `Ok(true)` only for the
    /// call that disabled it (so the `webhook.disabled` event is published once).
    async fn disable_webhook(&self, license_id: &str, webhook_id: &str, reason: &str) -> StoreResult<bool>;
    /// The endpoint's latest attempts, newest first.
    async fn webhook_attempts(
        &self,
        license_id: &str,
        webhook_id: &str,
        limit: i64,
    ) -> StoreResult<Vec<WebhookAttempt>>;
    /// How many of the endpoint's deliveries are pending, delivered and failed.
    async fn webhook_counts(&self, license_id: &str, webhook_id: &str) -> StoreResult<WebhookCounts>;
}
