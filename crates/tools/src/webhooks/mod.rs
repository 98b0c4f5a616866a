//! Webhooks (`docs/events.md`, "Webhooks"): a license's endpoints that
//! receive its events as signed `POST`s, at least once, from an outbox in
//! the store.
//!
//! - The management tools (master key only: a webhook outlives the
//!   credential that made it, so only the license's owner manages them):
//!   `create_webhook`, `list_webhooks`, `get_webhook` (with the delivery
//!   log), `update_webhook`, `delete_webhook`, `test_webhook`; the REST rows
//!   `/api/webhooks…` serve them.
//! - [`worker`]: the enqueuer (the bus's events into the outbox, from each
//!   endpoint's cursor) and the sender (claims, signed posts, backoff with
//!   jitter, the delivery log, disabling after 3 days of failures), started
//!   by every process that serves tools ([`worker::spawn`]).
//! - [`outbound`]: what a target may be (`https://` in production, no
//!   loopback, private, link-local or metadata address unless
//!   `WEBHOOK_ALLOW_PRIVATE`), checked when an endpoint is saved and again
//!   on every connection (the resolver of the delivery client refuses such
//!   addresses, so a name that later resolves to one is refused too).
//! - [`sign`]: `Tradeterm-Signature: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.

pub mod outbound;
pub mod sign;
pub mod worker;

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::license::Capability;
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_events::EventType;
use tradeterm_store::webhook::WEBHOOK_ATTEMPTS_KEPT;
use tradeterm_store::{MAX_WEBHOOKS_PER_LICENSE, WebhookAttempt, WebhookBars, WebhookEndpoint, WebhookUpdate};

use crate::{Annotations, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Settings of webhook deliveries (`WEBHOOK_*`, `docs/deploy.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Targets may resolve to loopback, private, link-local or metadata
    /// addresses (`WEBHOOK_ALLOW_PRIVATE=true`; tests, closed networks).
    pub allow_private: bool,
    /// Only `https://` targets (production).
    pub require_https: bool,
    /// Each delivery's whole exchange (`WEBHOOK_TIMEOUT_MS`, default 10 s).
    pub timeout: Duration,
    /// At most this much of an answer is read (the rest is dropped).
    pub max_response_bytes: usize,
    /// The first retry's delay (`WEBHOOK_RETRY_BASE_MS`, default 5 s),
    /// doubled at each attempt up to [`WebhookSettings::retry_max`], each
    /// delay drawn at random in its upper half (jitter).
    pub retry_base: Duration,
    /// The longest delay between attempts (`WEBHOOK_RETRY_MAX_MS`, default 1 h).
    pub retry_max: Duration,
    /// A delivery is retried until this long after it was enqueued, then
    /// failed (24 h).
    pub give_up_after: Duration,
    /// An endpoint whose attempts failed for this long without a success is
    /// disabled (3 days).
    pub disable_after: Duration,
    /// How often the sender looks for due deliveries when nothing woke it.
    pub poll_interval: Duration,
    /// How long a claim holds a delivery; the sender uses at least three
    /// times [`WebhookSettings::timeout`] ([`worker::claim_lease`]).
    pub lease: Duration,
    /// Deliveries in flight at once per process (each claimed as a slot frees).
    pub batch: usize,
    /// How often the enqueuer reads every endpoint's events from its cursor
    /// even when the live feed said nothing (a missed notification).
    pub rescan_interval: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            require_https: false,
            timeout: Duration::from_secs(10),
            max_response_bytes: 64 * 1024,
            retry_base: Duration::from_secs(5),
            retry_max: Duration::from_secs(3600),
            give_up_after: Duration::from_secs(24 * 3600),
            disable_after: Duration::from_secs(3 * 24 * 3600),
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(30),
            batch: 16,
            rescan_interval: Duration::from_secs(30),
        }
    }
}

/// Only the license's master key manages webhooks.
fn master_only(ctx: &ToolContext) -> Result<(), ToolError> {
    if ctx.caller.starts_with("master:") {
        Ok(())
    } else {
        Err(ToolError::Forbidden(
            "webhooks are managed with the license's master key (the /api/webhooks routes)".into(),
        ))
    }
}

/// A webhook endpoint as the tools show it (never its secret).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WebhookView {
    /// Id (`whk_…`).
    pub webhook_id: String,
    /// Where deliveries are posted.
    pub url: String,
    /// Event types delivered (empty: every type but `quote` and `stream.*`).
    pub types: Vec<String>,
    /// Whether deliveries are made.
    pub enabled: bool,
    /// Why it is disabled, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Since when its attempts have failed without a success, when they have.
    #[serde(skip_serializing_if = "Option::is_none", with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub failing_since: Option<UnixMs>,
    /// Created, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub created_at: UnixMs,
    /// The `bar.closed` series it subscribes to, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bars: Option<BarSubscription>,
}

/// The bars a webhook subscribes to: the server watches every symbol ×
/// timeframe pair while the endpoint is enabled and delivers their
/// `bar.closed` events (and only theirs) to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BarSubscription {
    /// Symbols, on every terminal of the license (e.g. `EURUSD`).
    #[schemars(length(min = 1, max = MAX_BAR_SYMBOLS), inner(pattern(tradeterm_core::market::SYMBOL_PATTERN)))]
    pub symbols: Vec<String>,
    /// Timeframes (`M1` … `MN1`).
    #[schemars(length(min = 1, max = 9))]
    pub timeframes: Vec<Timeframe>,
}

/// Most symbols one endpoint subscribes bars of. With the nine timeframes
/// that is at most 144 series (each costs a bars read from the terminal per
/// closed bar); the bound is the schema's own `maxItems`, so a request the
/// schema accepts is never refused for its number of series.
pub const MAX_BAR_SYMBOLS: usize = 16;

impl BarSubscription {
    /// Checks the names and the number of pairs; each name once, in the
    /// order given.
    fn checked(self) -> Result<Self, ToolError> {
        // The schema's bounds count the items as sent, repeats included.
        if self.symbols.len() > MAX_BAR_SYMBOLS {
            return Err(ToolError::InvalidInput(format!(
                "bars.symbols: {} items; an endpoint may subscribe to the bars of at most {MAX_BAR_SYMBOLS} symbols",
                self.symbols.len()
            )));
        }
        if self.timeframes.len() > Timeframe::ALL.len() {
            return Err(ToolError::InvalidInput(format!(
                "bars.timeframes: {} items; at most {}",
                self.timeframes.len(),
                Timeframe::ALL.len()
            )));
        }
        let mut symbols: Vec<String> = Vec::new();
        for s in self.symbols {
            if !tradeterm_core::market::is_symbol(&s) {
                return Err(ToolError::InvalidInput(format!(
                    "bars.symbols: `{s}` is not a symbol name"
                )));
            }
            if !symbols.contains(&s) {
                symbols.push(s);
            }
        }
        let mut timeframes: Vec<Timeframe> = Vec::new();
        for tf in self.timeframes {
            if !timeframes.contains(&tf) {
                timeframes.push(tf);
            }
        }
        if symbols.is_empty() || timeframes.is_empty() {
            return Err(ToolError::InvalidInput(
                "bars: name at least one symbol and one timeframe (or leave `bars` out)".into(),
            ));
        }
        Ok(Self { symbols, timeframes })
    }

    fn stored(&self) -> WebhookBars {
        WebhookBars {
            symbols: self.symbols.clone(),
            timeframes: self.timeframes.iter().map(|t| t.as_str().to_owned()).collect(),
        }
    }

    /// From the store; a timeframe name the store holds that no longer
    /// parses is left out.
    pub fn from_stored(b: &WebhookBars) -> Self {
        Self {
            symbols: b.symbols.clone(),
            timeframes: b.timeframes.iter().filter_map(|t| t.parse().ok()).collect(),
        }
    }

    /// Whether a `bar.closed` of `symbol` and `timeframe` is one of these series.
    pub fn covers(&self, symbol: &str, timeframe: Timeframe) -> bool {
        self.timeframes.contains(&timeframe) && self.symbols.iter().any(|s| s == symbol)
    }
}

/// Subscribing to bars is asking for `bar.closed`: a type filter that
/// leaves it out gets it added (`true` when it was), rather than watching
/// series nobody is sent.
fn add_bar_type(bars: Option<&BarSubscription>, types: &mut Vec<String>) -> bool {
    let name = EventType::BarClosed.as_str();
    if bars.is_some() && !types.is_empty() && !types.iter().any(|t| t == name) {
        types.push(name.to_owned());
        return true;
    }
    false
}

impl From<WebhookEndpoint> for WebhookView {
    fn from(e: WebhookEndpoint) -> Self {
        Self {
            webhook_id: e.id,
            url: e.url,
            types: e.types,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            failing_since: e.failing_since,
            created_at: e.created_at,
            bars: e.bars.as_ref().map(BarSubscription::from_stored),
        }
    }
}

/// The event types of a filter: known names, never `quote` or `stream.*`
/// (not retained, so never delivered), each once.
fn check_types(types: &[String]) -> Result<Vec<String>, ToolError> {
    let mut out: Vec<String> = Vec::new();
    for t in types {
        let kind: EventType = t
            .parse()
            .map_err(|_| ToolError::InvalidInput(format!("types: unknown event type `{t}`")))?;
        if !deliverable(kind) {
            return Err(ToolError::InvalidInput(format!(
                "types: `{t}` is not delivered by webhooks (not retained)"
            )));
        }
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    Ok(out)
}

/// Whether a type is ever delivered by webhook.
pub fn deliverable(kind: EventType) -> bool {
    kind != EventType::Quote && kind.group() != "stream"
}

/// Input of `create_webhook`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookInput {
    /// Where to post events: `https://` (plain `http://` outside production
    /// only); not a loopback, private, link-local or metadata address.
    #[schemars(length(min = 1, max = outbound::MAX_URL_BYTES), pattern(outbound::URL_PATTERN))]
    pub url: String,
    /// Event types to deliver (e.g. `order.filled`); empty or absent: every
    /// type but `quote` and `stream.*`.
    #[serde(default)]
    #[schemars(schema_with = "type_filter")]
    pub types: Vec<String>,
    /// The `bar.closed` series to watch and deliver (symbols × timeframes);
    /// absent: no bars. With a non-empty `types`, `bar.closed` is added to it.
    #[serde(default)]
    pub bars: Option<BarSubscription>,
}

/// The names of the event types a webhook may filter on (every type but
/// `quote` and `stream.*`).
fn deliverable_names() -> Vec<&'static str> {
    EventType::ALL
        .iter()
        .copied()
        .filter(|t| deliverable(*t))
        .map(EventType::as_str)
        .collect()
}

fn type_filter(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "array", "items": { "enum": deliverable_names() } })
}

fn optional_type_filter(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["array", "null"], "items": { "enum": deliverable_names() } })
}

/// Output of `create_webhook`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CreatedWebhook {
    /// The endpoint.
    pub webhook: WebhookView,
    /// The signing secret, shown this once: verify `Tradeterm-Signature` with it.
    pub secret: String,
}

async fn create_webhook(ctx: ToolContext, input: CreateWebhookInput) -> Result<CreatedWebhook, ToolError> {
    master_only(&ctx)?;
    let settings = ctx.services.webhooks;
    outbound::check_target(&input.url, &settings).await?;
    let url = outbound::as_stored(&input.url);
    let mut types = check_types(&input.types)?;
    let bars = input.bars.map(BarSubscription::checked).transpose()?;
    add_bar_type(bars.as_ref(), &mut types);
    let stored_bars = bars.as_ref().map(BarSubscription::stored);
    // From now on: the endpoint starts after the license's newest event.
    let cursor = match &ctx.services.events {
        Some(p) => p
            .bus()
            .last_id(&ctx.license_id)
            .await
            .map_err(|e| ToolError::Internal(e.to_string()))?,
        None => None,
    };
    let cursor = cursor.map(|c| c.to_string());
    let (endpoint, secret) = ctx
        .services
        .store
        .create_webhook_with_bars(&ctx.license_id, url, &types, stored_bars.as_ref(), cursor.as_deref())
        .await?;
    Ok(CreatedWebhook {
        webhook: endpoint.into(),
        secret: secret.expose().to_owned(),
    })
}

/// Input of `list_webhooks`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWebhooksInput {}

/// Output of `list_webhooks`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookList {
    /// The license's endpoints, oldest first.
    pub webhooks: Vec<WebhookView>,
    /// At most this many per license.
    pub limit: usize,
}

async fn list_webhooks(ctx: ToolContext, _input: ListWebhooksInput) -> Result<WebhookList, ToolError> {
    master_only(&ctx)?;
    let webhooks = ctx.services.store.list_webhooks(&ctx.license_id).await?;
    Ok(WebhookList {
        webhooks: webhooks.into_iter().map(Into::into).collect(),
        limit: MAX_WEBHOOKS_PER_LICENSE,
    })
}

/// Input of `get_webhook`, `delete_webhook` and `test_webhook`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookIdInput {
    /// The endpoint (`whk_…`).
    pub webhook_id: String,
}

/// One attempt of the delivery log.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AttemptView {
    /// The event delivered (its `Tradeterm-Event-Id`).
    pub event_id: String,
    /// 1 for the first attempt of this event.
    pub attempt: i64,
    /// When, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub at: UnixMs,
    /// The HTTP status answered, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// How long it took, ms.
    pub latency_ms: i64,
    /// What went wrong, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `delivered`, `retrying` or `failed`.
    pub outcome: String,
}

impl From<WebhookAttempt> for AttemptView {
    fn from(a: WebhookAttempt) -> Self {
        Self {
            event_id: a.event_id,
            attempt: a.attempt,
            at: a.at,
            status: a.status,
            latency_ms: a.latency_ms,
            error: a.error,
            outcome: a.outcome,
        }
    }
}

/// Deliveries of an endpoint by state.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeliveryCounts {
    /// Waiting for an attempt.
    pub pending: i64,
    /// Answered with a 2xx.
    pub delivered: i64,
    /// Given up on after 24 h of failures.
    pub failed: i64,
}

/// Output of `get_webhook`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookDetail {
    /// The endpoint.
    pub webhook: WebhookView,
    /// Its deliveries by state.
    pub deliveries: DeliveryCounts,
    /// Its latest attempts, newest first.
    pub attempts: Vec<AttemptView>,
}

async fn get_webhook(ctx: ToolContext, input: WebhookIdInput) -> Result<WebhookDetail, ToolError> {
    master_only(&ctx)?;
    let store = &ctx.services.store;
    let endpoint = store
        .webhook(&ctx.license_id, &input.webhook_id)
        .await?
        .ok_or_else(|| not_found(&input.webhook_id))?;
    let counts = store.webhook_counts(&ctx.license_id, &endpoint.id).await?;
    let attempts = store
        .webhook_attempts(&ctx.license_id, &endpoint.id, WEBHOOK_ATTEMPTS_KEPT)
        .await?;
    Ok(WebhookDetail {
        webhook: endpoint.into(),
        deliveries: DeliveryCounts {
            pending: counts.pending,
            delivered: counts.delivered,
            failed: counts.failed,
        },
        attempts: attempts.into_iter().map(Into::into).collect(),
    })
}

fn not_found(id: &str) -> ToolError {
    ToolError::NotFound(format!("no webhook `{}`", id.chars().take(64).collect::<String>()))
}

/// Input of `update_webhook`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhookInput {
    /// The endpoint (`whk_…`).
    pub webhook_id: String,
    /// A new target (checked as at creation).
    #[serde(default)]
    #[schemars(length(min = 1, max = outbound::MAX_URL_BYTES), pattern(outbound::URL_PATTERN))]
    pub url: Option<String>,
    /// A new type filter (empty: every deliverable type).
    #[serde(default)]
    #[schemars(schema_with = "optional_type_filter")]
    pub types: Option<Vec<String>>,
    /// `true` enables it again (after it was disabled for failing), `false` disables it.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// A new bar subscription; `null` or absent: unchanged. To subscribe to
    /// no bars any more, send `"bars": {"symbols": [], "timeframes": []}`.
    #[serde(default)]
    #[schemars(schema_with = "optional_bar_update")]
    pub bars: Option<BarUpdate>,
}

/// `update_webhook`'s `bars`: a subscription, or both lists empty for none.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BarUpdate {
    symbols: Vec<String>,
    timeframes: Vec<Timeframe>,
}

fn optional_bar_update(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["object", "null"],
        "description": "A new bar subscription (both lists empty: none any more).",
        "properties": {
            "symbols": {
                "type": "array",
                "maxItems": MAX_BAR_SYMBOLS,
                "items": { "type": "string", "pattern": tradeterm_core::market::SYMBOL_PATTERN }
            },
            "timeframes": {
                "type": "array",
                "maxItems": 9,
                "items": { "enum": Timeframe::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>() }
            }
        },
        "required": ["symbols", "timeframes"],
        "additionalProperties": false,
        // Both lists empty (no bars any more) or both named.
        "anyOf": [
            { "properties": { "symbols": { "maxItems": 0 }, "timeframes": { "maxItems": 0 } } },
            { "properties": { "symbols": { "minItems": 1 }, "timeframes": { "minItems": 1 } } }
        ]
    })
}

async fn update_webhook(ctx: ToolContext, input: UpdateWebhookInput) -> Result<WebhookView, ToolError> {
    master_only(&ctx)?;
    let settings = ctx.services.webhooks;
    let url = match &input.url {
        Some(u) => {
            outbound::check_target(u, &settings).await?;
            Some(outbound::as_stored(u).to_owned())
        }
        None => None,
    };
    let mut types = input.types.as_deref().map(check_types).transpose()?;
    let bars: Option<Option<BarSubscription>> = match input.bars {
        None => None,
        Some(b) if b.symbols.is_empty() && b.timeframes.is_empty() => Some(None),
        Some(b) => Some(Some(
            BarSubscription {
                symbols: b.symbols,
                timeframes: b.timeframes,
            }
            .checked()?,
        )),
    };
    // Bars as they will be after the change bring `bar.closed` into the
    // type filter as it will be.
    if bars.is_some() || types.is_some() {
        let current = ctx
            .services
            .store
            .webhook(&ctx.license_id, &input.webhook_id)
            .await?
            .ok_or_else(|| not_found(&input.webhook_id))?;
        let after_bars = match &bars {
            Some(b) => b.clone(),
            None => current.bars.as_ref().map(BarSubscription::from_stored),
        };
        let mut after_types = types.clone().unwrap_or_else(|| current.types.clone());
        if add_bar_type(after_bars.as_ref(), &mut after_types) {
            types = Some(after_types);
        }
    }
    let update = WebhookUpdate {
        url,
        types,
        enabled: input.enabled,
        bars: bars.map(|b| b.as_ref().map(BarSubscription::stored)),
    };
    ctx.services
        .store
        .update_webhook(&ctx.license_id, &input.webhook_id, &update)
        .await?
        .map(Into::into)
        .ok_or_else(|| not_found(&input.webhook_id))
}

/// Output of `delete_webhook`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeletedWebhook {
    /// The endpoint removed (with its pending deliveries and its log).
    pub webhook_id: String,
    /// Always true.
    pub deleted: bool,
}

async fn delete_webhook(ctx: ToolContext, input: WebhookIdInput) -> Result<DeletedWebhook, ToolError> {
    master_only(&ctx)?;
    if !ctx
        .services
        .store
        .delete_webhook(&ctx.license_id, &input.webhook_id)
        .await?
    {
        return Err(not_found(&input.webhook_id));
    }
    Ok(DeletedWebhook {
        webhook_id: input.webhook_id,
        deleted: true,
    })
}

/// Output of `test_webhook`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TestedWebhook {
    /// Whether the endpoint answered with a 2xx.
    pub delivered: bool,
    /// The HTTP status answered, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long it took, ms.
    pub latency_ms: u64,
    /// What went wrong, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

async fn test_webhook(ctx: ToolContext, input: WebhookIdInput) -> Result<TestedWebhook, ToolError> {
    master_only(&ctx)?;
    let store = &ctx.services.store;
    let endpoint = store
        .webhook(&ctx.license_id, &input.webhook_id)
        .await?
        .ok_or_else(|| not_found(&input.webhook_id))?;
    let secret = store
        .webhook_secret(&ctx.license_id, &endpoint.id)
        .await?
        .ok_or_else(|| not_found(&input.webhook_id))?;
    let body = serde_json::json!({
        "type": "webhook.test",
        "version": tradeterm_events::model::MODEL_VERSION,
        "time": tradeterm_core::time::to_iso(ctx.now_ms),
        "data": { "webhook": endpoint.id, "message": "a test delivery (not an event of the stream)" },
    })
    .to_string();
    let client = outbound::client(&ctx.services.webhooks).map_err(ToolError::Internal)?;
    let event_id = format!("test-{}", ctx.now_ms);
    let result = worker::post(
        &client,
        &ctx.services.webhooks,
        &endpoint.url,
        &event_id,
        &body,
        &secret,
    )
    .await;
    Ok(TestedWebhook {
        delivered: result.delivered(),
        status: result.status,
        latency_ms: result.latency_ms,
        error: result.error,
    })
}

const MANAGE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: true,
};

const READ: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    let spec = |name, title, description, annotations| ToolSpec {
        name,
        title,
        description,
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::License,
        annotations,
    };
    vec![
        spec(
            "create_webhook",
            "Create a webhook",
            "Master key only. Adds an endpoint (at most 10 per license) that receives the license's events from now on as signed POSTs, at least once; returns its signing secret once.",
            MANAGE,
        )
        .build(create_webhook),
        spec(
            "list_webhooks",
            "List webhooks",
            "Master key only. The license's webhook endpoints (never their secrets).",
            READ,
        )
        .build(list_webhooks),
        spec(
            "get_webhook",
            "Webhook and its delivery log",
            "Master key only. One webhook endpoint, its deliveries by state and its latest attempts (status, latency, error).",
            READ,
        )
        .build(get_webhook),
        spec(
            "update_webhook",
            "Update a webhook",
            "Master key only. Changes an endpoint's URL or event types, or enables it again after it was disabled.",
            Annotations {
                idempotent: true,
                ..MANAGE
            },
        )
        .build(update_webhook),
        spec(
            "delete_webhook",
            "Delete a webhook",
            "Master key only. Removes an endpoint with its pending deliveries and its log.",
            Annotations {
                destructive: true,
                idempotent: true,
                open_world: false,
                ..MANAGE
            },
        )
        .build(delete_webhook),
        spec(
            "test_webhook",
            "Test a webhook",
            "Master key only. Posts a signed `webhook.test` body to the endpoint now and says what it answered.",
            MANAGE,
        )
        .build(test_webhook),
    ]
}
