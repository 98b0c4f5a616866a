//! The one way to call a tool: the server-side [`Services`] a binary builds
//! once, the [`Caller`] an adapter authenticated, and [`invoke`], which every
//! adapter (REST, MCP, the management routes) uses to run a catalog tool.
//!
//! ```text
//! binary ──builds once──► Arc<Services>  (dispatch, store, calendar, news, ETF flows, rate limits, settings)
//!                              │
//! adapter: authenticate ──► Caller ──► Invocation { caller, terminal, force_dry_run, idempotency_key }
//!                              │
//!                     invoke(services, tool, invocation, input)
//!                       1. capability gate        (FORBIDDEN)
//!                       2. terminal resolution    (X-Terminal-Id, the bound one, the license's only terminal, or the only connected one;
//!                                                  none for a `terminal_optional` tool when no terminal is connected)
//!                       3. ToolContext::new       (the only place a context is made)
//!                       4. a live trade's human confirmation, when the adapter asks for one (crate::confirm)
//!                       5. tool handler, in a `tool` tracing span
//!                       6. failures logged; the adapter maps the ToolError onto its surface
//! ```
//!
//! **Adding a service:** a field here (with its default in [`Services::new`]),
//! read by the tool as `ctx.services.<field>`; the binary sets it when it is
//! configured. No adapter changes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;
use tradeterm_core::license::Capability;
use tradeterm_protocol::Dispatch;
use tradeterm_store::Store;

use crate::etf::EtfFlows;
use crate::events::ServerCalendar;
use crate::news::NewsService;
use crate::ratelimit::{RateLimiter, TierLimits};
use crate::{Gate, Target, Tool, ToolContext, ToolError};

/// Everything server-side a tool call may use, built once by the binary and
/// shared (behind an `Arc`) by every adapter of the process.
#[derive(Clone)]
pub struct Services {
    /// Path to terminals (the in-process gateway, or its HTTP client).
    pub dispatch: Arc<dyn Dispatch>,
    /// Persistence.
    pub store: Arc<dyn Store>,
    /// The server's economic calendar (`CALENDAR_FILE`; empty when unset),
    /// the fallback of the calendar tools when a terminal has none.
    pub calendar: Arc<ServerCalendar>,
    /// The server's news provider (`NEWS_API_KEY`; a no-op when unset).
    pub news: Arc<NewsService>,
    /// The server's ETF flows data (`ETF_FLOWS_FILE`; the tool is disabled when unset).
    pub etf_flows: Arc<EtfFlows>,
    /// Per-license rate limits (`KEYVALUE_URL`, `API_RATE_LIMIT_*`).
    pub rate_limits: RateLimits,
    /// Settings of tool calls.
    pub settings: ServiceSettings,
    /// The event pipeline (`tradeterm-events`, `docs/events.md`): the rule
    /// engines publish into it and the REST event stream reads it. `None`:
    /// no events (bare services of a test; the stream answers 503).
    pub events: Option<tradeterm_events::Publisher>,
    /// Settings of each event stream subscription (buffer, quote rate, heartbeat).
    pub event_stream: tradeterm_events::subscriber::SubscriberSettings,
    /// Settings of webhook deliveries and of the targets endpoints may have
    /// (`WEBHOOK_*`; `crate::webhooks`).
    pub webhooks: crate::webhooks::WebhookSettings,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("rate_limits", &self.rate_limits)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Services {
    /// Services over `dispatch` and `store`, with every other service at its
    /// default: no server calendar, no news provider, no ETF flows, rate
    /// limiting off, development settings.
    pub fn new(dispatch: Arc<dyn Dispatch>, store: Arc<dyn Store>) -> Self {
        Self {
            dispatch,
            store,
            calendar: Default::default(),
            news: Default::default(),
            etf_flows: Default::default(),
            rate_limits: RateLimits::default(),
            settings: ServiceSettings::default(),
            events: None,
            event_stream: Default::default(),
            webhooks: Default::default(),
        }
    }
}

impl Services {
    /// The readiness checks of a listener serving these services (REST,
    /// MCP): the database, and Redis when rate limiting uses it. Listeners
    /// add their own (the single node adds the gateway's listener).
    pub fn readiness(&self) -> tradeterm_telemetry::Readiness {
        let readiness = tradeterm_telemetry::Readiness::new();
        let store = self.store.clone();
        readiness.add("database", move || {
            let store = store.clone();
            async move { store.ping().await.map_err(|e| e.to_string()) }
        });
        if let Some(pool) = &self.rate_limits.redis {
            readiness.add_redis(pool.clone());
        }
        readiness
    }
}

/// Per-license rate limits: the shared Redis and the tier limits per window.
/// Each adapter counts in its own bucket ([`RateLimits::limiter`]).
#[derive(Clone)]
pub struct RateLimits {
    /// Redis pool (`None`: rate limiting off, as in development).
    pub redis: Option<deadpool_redis::Pool>,
    /// URL of that Redis, for the revocations subscription of
    /// [`RateLimits::shared`] (`None`: no subscription, so no call is
    /// counted behind its work).
    pub redis_url: Option<String>,
    /// Window (`API_RATE_LIMIT_WINDOW_MS`, default 60 000 ms).
    pub window: Duration,
    /// Requests per window per tier (`API_RATE_LIMIT_FREE/_PRO/_TEAM/_ENTERPRISE`).
    pub tiers: TierLimits,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            redis: None,
            redis_url: None,
            window: Duration::from_millis(60_000),
            tiers: TierLimits::default(),
        }
    }
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("redis", &self.redis.is_some())
            .field("window", &self.window)
            .field("tiers", &self.tiers)
            .finish()
    }
}

impl RateLimits {
    /// A limiter counting in `bucket` (`rest`, `mcp`), or `None` when rate
    /// limiting is off.
    pub fn limiter(&self, bucket: &'static str) -> Option<RateLimiter> {
        self.redis
            .clone()
            .map(|pool| RateLimiter::with_bucket(pool, self.window, self.tiers, bucket))
    }

    /// [`RateLimits::limiter`], shared, and hearing revocations when the
    /// Redis URL is known ([`RateLimiter::hear_revocations`]; a
    /// subscription that cannot start is logged, and then nothing is
    /// counted behind its work).
    pub fn shared(&self, bucket: &'static str) -> Option<std::sync::Arc<RateLimiter>> {
        let limiter = std::sync::Arc::new(self.limiter(bucket)?);
        if let Some(url) = &self.redis_url
            && let Err(e) = limiter.hear_revocations(url)
        {
            tracing::warn!(error = %e, "cannot hear revocations: every call waits for its count");
        }
        Some(limiter)
    }
}

/// Settings of tool calls.
#[derive(Debug, Clone, Copy)]
pub struct ServiceSettings {
    /// `NODE_ENV=production`: internal error details are hidden by the adapters.
    pub production: bool,
    /// Dispatch timeout per command.
    pub dispatch_timeout: Duration,
}

impl Default for ServiceSettings {
    fn default() -> Self {
        Self {
            production: false,
            dispatch_timeout: tradeterm_protocol::dispatch::DEFAULT_TIMEOUT,
        }
    }
}

/// Who calls a tool, as the adapter authenticated them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// License the call acts for.
    pub license_id: String,
    /// Record id of the credential (an API key, the terminal key behind a
    /// session token, `master:<license>` for the master key): the identity of
    /// per-caller state such as `get_state_delta`'s last snapshot.
    pub credential: String,
    /// Capabilities of the credential.
    pub caps: Vec<Capability>,
}

/// How the call names its terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalChoice {
    /// The `X-Terminal-Id` header's value (validated here), or, without it,
    /// the license's only terminal (connected or not), else its only
    /// connected terminal.
    Header(Option<String>),
    /// The terminal the credential is bound to (MCP: the terminal key's).
    Bound(String),
}

/// One call of a tool, as an adapter describes it.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The authenticated caller.
    pub caller: Caller,
    /// The target terminal (ignored by license-wide tools).
    pub terminal: TerminalChoice,
    /// Forces every trading tool to a dry run (MCP `paper` mode).
    pub force_dry_run: bool,
    /// Idempotency key of a live call (REST `Idempotency-Key` header).
    pub idempotency_key: Option<String>,
    /// Name of the surface, for the tracing span (`rest`, `mcp`, `management`).
    pub surface: &'static str,
    /// The credential's scope (`docs/security.md`, "Scoped keys"): enforced
    /// by [`invoke`]; `None`: unrestricted within the tier.
    pub scope: Option<Arc<tradeterm_core::scope::KeyScope>>,
    /// The caller's address (the trusted proxy's `X-Forwarded-For` honoured), when the surface knows it.
    pub source: Option<std::net::IpAddr>,
    /// The request id (`X-Request-Id`), where the adapter knows it (audit log).
    pub request_id: Option<String>,
    /// The credential's label (an API key's, `master key`, …; audit log).
    pub credential_label: Option<String>,
    /// Who confirms a live trade with the person behind the client (MCP
    /// elicitation; `crate::confirm`): `None` asks nobody.
    pub confirm: Option<crate::confirm::Confirmer>,
}

impl Invocation {
    /// A call by `caller` on `terminal`, with no dry-run forcing and no
    /// idempotency key.
    pub fn new(surface: &'static str, caller: Caller, terminal: TerminalChoice) -> Self {
        Self {
            caller,
            terminal,
            force_dry_run: false,
            idempotency_key: None,
            surface,
            scope: None,
            source: None,
            request_id: None,
            credential_label: None,
            confirm: None,
        }
    }
}

/// Whether `id` is a well-formed terminal id (`[A-Za-z0-9_-]{1,64}`).
pub fn valid_terminal_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Tools whose handler only reads from the terminal (commands other than
/// trades) and writes nothing anywhere: a call of one may start before the
/// rate limiter has counted it (see `ratelimit::RateLimiter::ahead`), since
/// a call it then refuses has changed nothing.
const TERMINAL_READS_ONLY: &[&str] = &[
    "get_tick",
    "get_symbols",
    "get_symbol_spec",
    "get_bars",
    "get_swap_calendar",
    "estimate_fill",
    "get_account_info",
    "get_positions",
    "get_position",
    "get_orders",
    "get_deal_history",
    "get_order_history",
    "get_indicator",
    "get_key_levels",
    "detect_patterns",
    "detect_structure",
];

/// Whether `tool` only reads from the terminal and writes nothing (a call
/// may then start while its rate-limit count is in flight).
pub fn reads_terminal_only(tool: &Tool) -> bool {
    TERMINAL_READS_ONLY.contains(&tool.name)
}

/// The capability gate: a tool gated [`Gate::Always`] needs its capability.
pub(crate) fn gate(tool: &Tool, caps: &[Capability]) -> Result<(), ToolError> {
    if tool.gate == Gate::Always && !caps.contains(&tool.capability) {
        return Err(ToolError::Forbidden(format!(
            "`{}` needs the `{}` capability, which this license's tier does not include",
            tool.name,
            tool.capability.as_str()
        )));
    }
    Ok(())
}

/// The target terminal of a terminal-scoped call (spec §4 rules 1–2).
async fn resolve_terminal(services: &Services, call: &Invocation) -> Result<String, ToolError> {
    match &call.terminal {
        TerminalChoice::Bound(id) => Ok(id.clone()),
        TerminalChoice::Header(Some(id)) => {
            let id = id.trim();
            if !valid_terminal_id(id) {
                return Err(ToolError::InvalidInput(
                    "X-Terminal-Id is not a valid terminal id".into(),
                ));
            }
            Ok(id.to_owned())
        }
        TerminalChoice::Header(None) => {
            let mut list = services.dispatch.terminals(&call.caller.license_id).await?;
            // The license's only terminal is the target whether it is
            // connected or not, so the tool's own fallback answers (server
            // calendar, prop-firm `block`) instead of an error.
            if list.len() == 1
                && let Some(only) = list.pop()
            {
                return Ok(only.id);
            }
            let mut connected = list.into_iter().filter(|t| t.connected);
            match (connected.next(), connected.next()) {
                (Some(only), None) => Ok(only.id),
                (Some(_), Some(_)) => Err(ToolError::TerminalAmbiguous),
                (None, _) => Err(ToolError::NoTerminalConnected),
            }
        }
    }
}

/// Runs `tool` for `call`: capability gate, terminal resolution, the
/// [`ToolContext`], the handler in a `tool` span; failures are logged. The
/// adapter maps a [`ToolError`] onto its surface.
pub async fn invoke(services: &Arc<Services>, tool: &Tool, call: Invocation, input: Value) -> Result<Value, ToolError> {
    let span = tracing::info_span!(
        "tool",
        surface = call.surface,
        license = %call.caller.license_id,
        terminal = tracing::field::Empty,
        tool = tool.name,
        paper = call.force_dry_run,
    );
    // The trade audit log: `None` (no work) for every tool without `trade`.
    let audit = crate::audit::start(tool, &call, &input);
    // Boxed: `run`'s state (the scope, confirmation and dispatch steps) is
    // large, and every future holding it inline is copied whole each time
    // it is moved; boxed, the callers' futures move a pointer.
    let result = crate::audit::recorded(services, audit, Box::pin(run(services, tool, call, input)))
        .instrument(span.clone())
        .await;
    if let Err(e) = &result {
        span.in_scope(|| tracing::info!(code = e.code(), "tool call failed"));
    }
    result
}

async fn run(services: &Arc<Services>, tool: &Tool, call: Invocation, input: Value) -> Result<Value, ToolError> {
    let is_live = crate::scope::is_live(&input, call.force_dry_run);
    let scope = call.scope.clone();
    let confirm = call.confirm.clone();
    if let Some(scope) = &scope {
        let now = chrono::Utc::now().timestamp_millis();
        crate::scope::before(scope, tool, &input, is_live, now, call.source)?;
    }
    gate(tool, &call.caller.caps)?;
    let terminal_id = match tool.target {
        Target::Terminal => match resolve_terminal(services, &call).await {
            Ok(id) => Some(id),
            // A license-level read needs no connected terminal.
            Err(ToolError::NoTerminalConnected) if tool.terminal_optional => None,
            Err(e) => return Err(e),
        },
        Target::License => None,
    };
    if let Some(id) = &terminal_id {
        tracing::Span::current().record("terminal", id.as_str());
        if let Some(scope) = &scope {
            crate::scope::terminal(scope, id)?;
        }
    }
    let mut ctx = ToolContext::new(services.clone(), call.caller, terminal_id);
    ctx.force_dry_run = call.force_dry_run;
    ctx.idempotency_key = call.idempotency_key;
    // A live trade call: what its rejection event needs (nothing is taken
    // from any other call, the hot read path included).
    let live = (tool.capability == Capability::Trade
        && !call.force_dry_run
        && input.get("dry_run").and_then(Value::as_bool) == Some(false))
    .then(|| {
        let symbol = input.get("symbol").and_then(Value::as_str).map(str::to_owned);
        (ctx.license_id.clone(), ctx.terminal_id.clone(), symbol)
    });
    let would = match &scope {
        Some(scope) => crate::scope::trade(scope, tool, &ctx, &input, is_live).await?,
        None => None,
    };
    // A live trade from a surface with a person behind it: asked first (crate::confirm).
    if is_live
        && tool.capability == Capability::Trade
        && let Some(confirmer) = &confirm
    {
        // Boxed: the wait for a person stays out of `run`'s future, which
        // every read on the hot path allocates and polls.
        Box::pin(crate::confirm::confirm(confirmer, tool, &ctx, &input)).await?;
    }
    let mut result = crate::audit::around(tool, ctx, input).await;
    if let (Some(note), Ok(output)) = (would, &mut result) {
        crate::scope::report(output, note);
    }
    if let (Some((license, terminal, symbol)), Err(ToolError::Rejected { retcode, message })) = (live, &result) {
        publish_rejection(services, tool, &license, terminal.as_deref(), symbol, retcode, message);
    }
    result
}

/// `order.rejected` for a live trade call the trade server (or the check of
/// the symbol's specification before sending) refused.
fn publish_rejection(
    services: &Services,
    tool: &Tool,
    license: &str,
    terminal: Option<&str>,
    symbol: Option<String>,
    retcode: &str,
    message: &str,
) {
    let Some(events) = &services.events else { return };
    let data = tradeterm_events::model::OrderData {
        order: 0,
        position: 0,
        symbol,
        reason: Some(format!("{retcode}: {message} ({})", tool.name)),
    };
    let draft = tradeterm_events::Draft::new(
        tradeterm_events::EventType::OrderRejected,
        tradeterm_events::now_ms(),
        terminal,
        &data,
    );
    events.publish(license, draft);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_that_may_run_ahead_of_their_count_are_terminal_reads() {
        for name in TERMINAL_READS_ONLY {
            let tool = crate::find(name).unwrap_or_else(|| panic!("{name} is not in the catalog"));
            assert!(tool.annotations.read_only && !tool.annotations.destructive, "{name}");
            assert_eq!(tool.target, Target::Terminal, "{name}");
            assert_ne!(tool.capability, Capability::Trade, "{name}");
        }
        for name in [
            "place_order",
            "set_equity_guard",
            "create_alert",
            "get_alerts",
            "list_terminals",
        ] {
            assert!(crate::find(name).is_none_or(|t| !reads_terminal_only(t)), "{name}");
        }
    }

    #[test]
    fn terminal_ids_are_validated() {
        assert!(valid_terminal_id("term_abc-1"));
        for bad in ["", "a b", "é", &"x".repeat(65)] {
            assert!(!valid_terminal_id(bad), "{bad}");
        }
    }
}
