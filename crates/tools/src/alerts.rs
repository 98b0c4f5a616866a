//! The news guard (notify-only) and `poll_alerts`: `set_news_guard`,
//! `get_news_guard_status`, `remove_news_guard`, `poll_alerts`.
//!
//! The guard is one per license: the currencies to watch (given, or the
//! currencies of given pairs), a minimum importance and a lead time. Alerts
//! are derived, not queued: a poll returns every alert whose moment falls
//! after the caller's cursor and at or before now — an upcoming release of a
//! watched currency `lead_minutes` before it, and (with a news provider) each
//! news item about a watched currency when it is published. The cursor is
//! the poll's time, so each alert is delivered once per caller that passes
//! its cursor back; nothing is stored per alert. Notify-only: nothing here
//! ever blocks or changes trading. See `docs/alerts.md`.
//!
//! `poll_alerts` also delivers the breaches of the terminal's equity guards
//! (its own and the one its prop-firm rules installed): each breach the live
//! monitor recorded in the stored guard state is an alert at its time, with
//! the equity at that moment, so none is lost across a restart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::events::{EconomicEvent, Importance};
use tradeterm_core::time::{DAY_MS, UnixMs, iso, to_iso};

use tradeterm_core::equity_guard::{Breach, GuardAction, GuardRules, GuardState};

use crate::alert_rules::{RuleAlert, firing_alert};
use crate::equity_guard::SOURCE_PROP_FIRM;
use crate::events::{CalendarSource, SourcePreference, fetch_events, is_currency};
use crate::news::{relevant_currencies, symbol_currencies};
use crate::{Annotations, Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Most currencies a guard watches.
pub const MAX_GUARD_CURRENCIES: usize = 20;
/// Most codes in a news guard's `currencies`.
pub const MAX_GUARD_CODES: usize = 10;
/// Most symbols in a news guard's `symbols` (two currencies each: with
/// [`MAX_GUARD_CODES`], never above [`MAX_GUARD_CURRENCIES`]).
pub const MAX_GUARD_SYMBOLS: usize = 5;
/// Longest lead time, minutes (24 h).
pub const MAX_LEAD_MINUTES: u32 = 1440;
/// How far back a poll looks at most (a first poll, or an old cursor).
pub const MAX_POLL_LOOKBACK_MS: i64 = DAY_MS;
/// Default look-back of a first poll.
pub const FIRST_POLL_LOOKBACK_MS: i64 = 3_600_000;
/// Most alerts one poll returns.
pub const MAX_ALERTS: u32 = 500;
/// Guard breaches this far before the cursor are delivered again (at least
/// once: a breach recorded while a poll ran is not missed; drop repeats by id).
pub const BREACH_GRACE_MS: i64 = 5_000;

/// A news guard, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NewsGuard {
    /// Watched currencies (upper-case ISO codes).
    pub currencies: Vec<String>,
    /// Releases of at least this importance alert.
    pub min_importance: Importance,
    /// How long before a release its alert fires, minutes.
    pub lead_minutes: u32,
    /// Whether news items about the watched currencies alert too (needs a news provider on the server).
    pub include_news: bool,
}

/// Input of `set_news_guard`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// At least one currency or symbol (inside `allOf`, which client generators merge).
#[schemars(extend("allOf" = [{ "anyOf": [
        { "required": ["currencies"], "properties": { "currencies": { "minItems": 1 } } },
        { "required": ["symbols"], "properties": { "symbols": { "minItems": 1 } } },
] }]))]
pub struct SetNewsGuardInput {
    /// Currencies to watch (ISO codes such as `USD`; at most 20 with those of `symbols`).
    #[serde(default)]
    #[schemars(inner(pattern(crate::schema::CURRENCY_PATTERN)), length(max = MAX_GUARD_CODES))]
    pub currencies: Vec<String>,
    /// Currency pairs whose two currencies to watch (`EURUSD`, `XAUUSD`).
    #[serde(default)]
    #[schemars(inner(pattern(crate::schema::CURRENCY_PAIR_PATTERN)), length(max = MAX_GUARD_SYMBOLS))]
    pub symbols: Vec<String>,
    /// Releases of at least this importance alert: `medium` or `high` (default `high`).
    #[serde(default)]
    #[schemars(extend("enum" = ["medium", "high", null]))]
    pub min_importance: Option<Importance>,
    /// Minutes before a release its alert fires (1-1440, default 30).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_LEAD_MINUTES))]
    pub lead_minutes: Option<u32>,
    /// Whether news items about the watched currencies alert too (default true; needs `NEWS_API_KEY` on the server).
    #[serde(default)]
    pub include_news: Option<bool>,
}

/// Output of `set_news_guard`, `get_news_guard_status` and `remove_news_guard`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NewsGuardStatus {
    /// Whether a guard is set.
    pub active: bool,
    /// The guard, when set.
    pub guard: Option<NewsGuard>,
    /// When it was set first (ISO 8601).
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub created_at: Option<UnixMs>,
    /// When it was last changed (ISO 8601).
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub updated_at: Option<UnixMs>,
    /// Whether the server has a news provider (news alerts need one).
    pub news_provider: bool,
    /// Releases that will alert within the next 24 h (status only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upcoming: Option<Vec<UpcomingOut>>,
    /// Where the upcoming releases come from (status only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calendar_source: Option<CalendarSource>,
    /// Notes (no news provider, no calendar).
    pub notes: Vec<String>,
}

/// A release that will alert.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UpcomingOut {
    /// When its alert fires (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub alert_at: UnixMs,
    /// The release.
    pub event: EconomicEvent,
}

fn status_of(
    record: Option<tradeterm_store::NewsGuardRecord>,
    news_provider: bool,
) -> Result<(NewsGuardStatus, Option<NewsGuard>), ToolError> {
    let guard = record
        .as_ref()
        .map(|r| {
            serde_json::from_value::<NewsGuard>(r.config.clone())
                .map_err(|_| ToolError::Internal("a stored news guard is not valid".into()))
        })
        .transpose()?;
    let mut notes = Vec::new();
    if guard.as_ref().is_some_and(|g| g.include_news) && !news_provider {
        notes.push("news alerts need a news provider on the server (NEWS_API_KEY); only release alerts fire".into());
    }
    Ok((
        NewsGuardStatus {
            active: guard.is_some(),
            guard: guard.clone(),
            created_at: record.as_ref().map(|r| r.created_at),
            updated_at: record.as_ref().map(|r| r.updated_at),
            news_provider,
            upcoming: None,
            calendar_source: None,
            notes,
        },
        guard,
    ))
}

async fn set_news_guard(ctx: ToolContext, input: SetNewsGuardInput) -> Result<NewsGuardStatus, ToolError> {
    if input.currencies.len() > MAX_GUARD_CODES || input.symbols.len() > MAX_GUARD_SYMBOLS {
        return Err(ToolError::InvalidInput(format!(
            "list at most {MAX_GUARD_CODES} `currencies` and {MAX_GUARD_SYMBOLS} `symbols`"
        )));
    }
    let mut currencies = Vec::new();
    for currency in &input.currencies {
        if !is_currency(currency) {
            return Err(ToolError::InvalidInput(format!(
                "invalid currency `{}`: use a 3-letter ISO code such as USD",
                currency.chars().take(40).collect::<String>()
            )));
        }
        currencies.push(currency.to_ascii_uppercase());
    }
    for symbol in &input.symbols {
        crate::market::check_symbol(symbol)?;
        let own = symbol_currencies(symbol);
        if own.is_empty() {
            return Err(ToolError::InvalidInput(format!(
                "`{symbol}` is not a currency pair such as EURUSD: list its currencies in `currencies`"
            )));
        }
        currencies.extend(own);
    }
    currencies.sort();
    currencies.dedup();
    if currencies.is_empty() || currencies.len() > MAX_GUARD_CURRENCIES {
        return Err(ToolError::InvalidInput(format!(
            "the guard must watch 1 to {MAX_GUARD_CURRENCIES} currencies (from `currencies` and `symbols`), got {}",
            currencies.len()
        )));
    }
    let min_importance = input.min_importance.unwrap_or(Importance::High);
    if min_importance == Importance::Low {
        return Err(ToolError::InvalidInput(
            "`min_importance` must be `medium` or `high`".into(),
        ));
    }
    let lead_minutes = input.lead_minutes.unwrap_or(30);
    if !(1..=MAX_LEAD_MINUTES).contains(&lead_minutes) {
        return Err(ToolError::InvalidInput(format!(
            "`lead_minutes` must be between 1 and {MAX_LEAD_MINUTES}, got {lead_minutes}"
        )));
    }
    let guard = NewsGuard {
        currencies,
        min_importance,
        lead_minutes,
        include_news: input.include_news.unwrap_or(true),
    };
    let config = serde_json::to_value(&guard).map_err(|e| ToolError::Internal(e.to_string()))?;
    let record = ctx.services.store.set_news_guard(&ctx.license_id, &config).await?;
    Ok(status_of(Some(record), ctx.services.news.is_enabled())?.0)
}

/// The watched releases of `[from, to)`, by time.
fn watched(events: Vec<EconomicEvent>, guard: &NewsGuard) -> Vec<EconomicEvent> {
    let mut out: Vec<EconomicEvent> = events
        .into_iter()
        .filter(|e| e.importance >= guard.min_importance)
        .filter(|e| guard.currencies.iter().any(|c| c.eq_ignore_ascii_case(&e.currency)))
        .collect();
    out.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    out.dedup_by(|a, b| a.id == b.id);
    out
}

/// Input of `get_news_guard_status` and `remove_news_guard`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoGuardInput {}

async fn news_guard_status(ctx: ToolContext, _input: NoGuardInput) -> Result<NewsGuardStatus, ToolError> {
    let record = ctx.services.store.news_guard(&ctx.license_id).await?;
    let (mut status, guard) = status_of(record, ctx.services.news.is_enabled())?;
    if let Some(configured) = guard {
        let lead = i64::from(configured.lead_minutes) * 60_000;
        let (from, to) = (ctx.now_ms, ctx.now_ms + DAY_MS + lead);
        let (source, events, note) =
            fetch_events(&ctx, from, to, &configured.currencies, SourcePreference::Auto).await?;
        status.upcoming = Some(
            watched(events, &configured)
                .into_iter()
                .filter(|e| e.time - lead > ctx.now_ms && e.time - lead <= ctx.now_ms + DAY_MS)
                .map(|e| UpcomingOut {
                    alert_at: e.time - lead,
                    event: e,
                })
                .collect(),
        );
        status.calendar_source = Some(source);
        status.notes.extend(note);
    }
    Ok(status)
}

async fn remove_news_guard(ctx: ToolContext, _input: NoGuardInput) -> Result<NewsGuardStatus, ToolError> {
    ctx.services.store.remove_news_guard(&ctx.license_id).await?;
    Ok(status_of(None, ctx.services.news.is_enabled())?.0)
}

/// Input of `poll_alerts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PollAlertsInput {
    /// The `next_cursor` of the previous poll; omit on the first poll (alerts of the last hour are returned).
    #[serde(default)]
    #[schemars(pattern(CURSOR_PATTERN))]
    pub cursor: Option<String>,
    /// Most alerts returned (1-500, default 100), oldest first; when more are due, `more` is true and `next_cursor` resumes after the last one returned.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_ALERTS))]
    pub limit: Option<u32>,
}

/// One alert.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AlertOut {
    /// Stable id (the same alert has the same id in every poll).
    pub id: String,
    /// `release_ahead` (a watched release is `lead_minutes` away), `news` (an
    /// item about a watched currency), `equity_guard_breach` (a rule of the
    /// terminal's equity guard was breached), `prop_firm_breach` (a loss
    /// limit of its prop-firm rules was breached) or `alert` (a rule of
    /// `set_alert` fired).
    pub kind: &'static str,
    /// When the alert fired (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub fired_at: UnixMs,
    /// One line for a notification.
    pub title: String,
    /// The release, for `release_ahead`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<EconomicEvent>,
    /// Link to the article, for `news`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The watched currencies it concerns.
    pub currencies: Vec<String>,
    /// The breach, for `equity_guard_breach` and `prop_firm_breach`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breach: Option<BreachAlert>,
    /// The rule and what it observed, for `alert` (a rule of `set_alert` fired).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alert: Option<RuleAlert>,
}

/// A guard breach, as `poll_alerts` reports it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BreachAlert {
    /// Terminal whose guard was breached.
    pub terminal_id: String,
    /// The breach (rule, time, equity at that moment, limit, value, message).
    #[serde(flatten)]
    pub breach: Breach,
    /// `alert` or `block` (live orders opening exposure refused until the next day anchor).
    pub action: GuardAction,
}

/// Output of `poll_alerts`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PollAlertsOutput {
    /// Alerts that fired after the cursor, oldest first.
    pub alerts: Vec<AlertOut>,
    /// Pass it back as `cursor` on the next poll.
    pub next_cursor: String,
    /// Whether more alerts were due than `limit` allowed.
    pub more: bool,
    /// Whether a news guard is set (without one there are no news alerts).
    pub guard_active: bool,
    /// Whether the terminal has an equity guard (its own or its prop-firm rules').
    pub equity_guard_active: bool,
    /// Notes (no guard, a cursor older than 24 h clamped, no calendar or news provider).
    pub notes: Vec<String>,
}

/// Cursor: `{fired_at ms}:{last alert id}` (the last alert returned), or `{ms}` (a poll's time).
/// A cursor as [`parse_cursor`] reads it: unix milliseconds above 0, then
/// optionally `:` and the id of the last alert delivered.
const CURSOR_PATTERN: &str = "^0*[1-9][0-9]{0,17}(:[\\s\\S]*)?$";

fn parse_cursor(cursor: &str) -> Option<(UnixMs, Option<String>)> {
    let (ms, id) = match cursor.split_once(':') {
        Some((ms, id)) => (ms, Some(id.to_owned())),
        None => (cursor, None),
    };
    ms.parse::<i64>().ok().filter(|m| *m > 0).map(|m| (m, id))
}

async fn poll_alerts(ctx: ToolContext, input: PollAlertsInput) -> Result<PollAlertsOutput, ToolError> {
    let limit = input.limit.unwrap_or(100);
    if !(1..=MAX_ALERTS).contains(&limit) {
        return Err(ToolError::InvalidInput(format!(
            "`limit` must be between 1 and {MAX_ALERTS}, got {limit}"
        )));
    }
    let now = ctx.now_ms;
    let mut notes = Vec::new();
    let (mut after, after_id) = match input.cursor.as_deref() {
        None => (now - FIRST_POLL_LOOKBACK_MS, None),
        Some(c) => parse_cursor(c).ok_or_else(|| {
            ToolError::InvalidInput("`cursor` is not one this tool returned; omit it to start over".into())
        })?,
    };
    // A cursor from the future (another clock) delivers from now on.
    after = after.min(now);
    if after < now - MAX_POLL_LOOKBACK_MS {
        after = now - MAX_POLL_LOOKBACK_MS;
        notes.push("the cursor was older than 24 h: alerts of the last 24 h only".into());
    }
    let (equity_guard_active, mut alerts) = breach_alerts(&ctx, after - BREACH_GRACE_MS, now).await?;
    alerts.extend(rule_alerts(&ctx, after - BREACH_GRACE_MS, now).await?);
    let record = ctx.services.store.news_guard(&ctx.license_id).await?;
    let (_, guard) = status_of(record, ctx.services.news.is_enabled())?;
    let guard_active = guard.is_some();
    match guard {
        Some(guard) => alerts.extend(news_alerts(&ctx, &guard, after, &mut notes).await?),
        None => notes.push("no news guard is set (set_news_guard)".into()),
    }
    alerts.sort_by(|(a, x), (b, y)| a.cmp(b).then_with(|| x.id.cmp(&y.id)));
    // Resume strictly after the cursor's last alert at its moment (breaches
    // within the grace before it are delivered again).
    let grace = |a: &AlertOut, at: UnixMs| (a.breach.is_some() || a.alert.is_some()) && at >= after - BREACH_GRACE_MS;
    if let Some(last) = &after_id {
        alerts.retain(|(at, a)| *at > after || a.id.as_str() > last.as_str() || grace(a, *at));
    } else {
        alerts.retain(|(at, a)| *at > after || input.cursor.is_none() || grace(a, *at));
    }
    let more = alerts.len() > limit as usize;
    alerts.truncate(limit as usize);
    let next_cursor = match (more, alerts.last()) {
        (true, Some((at, a))) => format!("{at}:{}", a.id),
        _ => now.to_string(),
    };
    Ok(PollAlertsOutput {
        alerts: alerts.into_iter().map(|(_, a)| a).collect(),
        next_cursor,
        more,
        guard_active,
        equity_guard_active,
        notes,
    })
}

/// The firings of the terminal's alert rules recorded in `[from, to]`.
async fn rule_alerts(ctx: &ToolContext, from: UnixMs, to: UnixMs) -> Result<Vec<(UnixMs, AlertOut)>, ToolError> {
    let terminal = ctx.terminal()?;
    let events = ctx
        .services
        .store
        .alert_events(&ctx.license_id, terminal, from, MAX_ALERTS + 1)
        .await?;
    Ok(events
        .iter()
        .filter(|e| e.fired_at <= to)
        .map(|e| {
            let (id, title, alert) = firing_alert(e);
            (
                e.fired_at,
                AlertOut {
                    id,
                    kind: "alert",
                    fired_at: e.fired_at,
                    title,
                    event: None,
                    url: None,
                    currencies: Vec::new(),
                    breach: None,
                    alert: Some(alert),
                },
            )
        })
        .collect())
}

/// The breaches recorded by the terminal's equity guards in `[from, to]`.
async fn breach_alerts(
    ctx: &ToolContext,
    from: UnixMs,
    to: UnixMs,
) -> Result<(bool, Vec<(UnixMs, AlertOut)>), ToolError> {
    let terminal = ctx.terminal()?;
    let records = ctx.services.store.equity_guards(&ctx.license_id, terminal).await?;
    let mut out = Vec::new();
    for record in &records {
        let (Ok(rules), Ok(state)) = (
            serde_json::from_value::<GuardRules>(record.rules.clone()),
            serde_json::from_value::<GuardState>(record.state.clone()),
        ) else {
            continue;
        };
        let prop = record.source == SOURCE_PROP_FIRM;
        for recorded in state
            .breaches
            .iter()
            .filter(|recorded| recorded.time >= from && recorded.time <= to)
        {
            let breach = recorded.clone();
            out.push((
                recorded.time,
                AlertOut {
                    id: format!(
                        "breach:{}:{}:{}:{}",
                        record.source,
                        terminal,
                        breach_rule(&breach),
                        recorded.time
                    ),
                    kind: if prop {
                        "prop_firm_breach"
                    } else {
                        "equity_guard_breach"
                    },
                    fired_at: recorded.time,
                    title: format!(
                        "{}: {}",
                        if prop {
                            "prop-firm rules breached"
                        } else {
                            "equity guard breached"
                        },
                        recorded.message
                    ),
                    event: None,
                    url: None,
                    currencies: Vec::new(),
                    breach: Some(BreachAlert {
                        terminal_id: terminal.to_owned(),
                        breach,
                        action: rules.action,
                    }),
                    alert: None,
                },
            ));
        }
    }
    Ok((!records.is_empty(), out))
}

fn breach_rule(b: &Breach) -> String {
    serde_json::to_value(b.rule)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The news guard's alerts after `after` (releases and news items), unsorted.
pub(crate) async fn news_alerts(
    ctx: &ToolContext,
    guard: &NewsGuard,
    after: UnixMs,
    notes: &mut Vec<String>,
) -> Result<Vec<(UnixMs, AlertOut)>, ToolError> {
    let now = ctx.now_ms;
    let lead = i64::from(guard.lead_minutes) * 60_000;
    // Releases whose alert moment (time − lead) is in (after, now].
    let (source, events, note) = fetch_events(
        ctx,
        after + lead,
        now + lead + 1,
        &guard.currencies,
        SourcePreference::Auto,
    )
    .await?;
    notes.extend(note);
    if source == CalendarSource::None {
        notes.push("no economic calendar is available: no release alerts".into());
    }
    let mut alerts: Vec<(UnixMs, AlertOut)> = watched(events, guard)
        .into_iter()
        .map(|e| (e.time - lead, e))
        .filter(|(at, _)| *at >= after && *at <= now)
        .map(|(at, e)| {
            let mins = guard.lead_minutes;
            (
                at,
                AlertOut {
                    id: format!("release:{}:{mins}", e.id),
                    kind: "release_ahead",
                    fired_at: at,
                    title: format!("{} {} in {mins} min ({})", e.currency, e.name, to_iso(e.time)),
                    currencies: vec![e.currency.clone()],
                    url: None,
                    event: Some(e),
                    breach: None,
                    alert: None,
                },
            )
        })
        .collect();
    if guard.include_news {
        if ctx.services.news.is_enabled() {
            let (items, failure) = ctx.services.news.items().await;
            notes.extend(failure);
            for item in items.iter().filter(|i| i.time >= after && i.time <= now) {
                let matched = relevant_currencies(item, &guard.currencies);
                if matched.is_empty() {
                    continue;
                }
                alerts.push((
                    item.time,
                    AlertOut {
                        id: format!("news:{}", item.id),
                        kind: "news",
                        fired_at: item.time,
                        title: item.headline.clone(),
                        event: None,
                        url: Some(item.url.clone()),
                        currencies: matched,
                        breach: None,
                        alert: None,
                    },
                ));
            }
        } else {
            notes.push("news alerts need a news provider on the server (NEWS_API_KEY)".into());
        }
    }
    Ok(alerts)
}

const CONFIGURE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "set_news_guard",
            title: "Set the news guard",
            description: "Sets (or replaces) the license's notify-only news guard: the currencies to watch (given, or those of currency pairs), the minimum importance of releases (default high) and how long before a release to alert (default 30 min), and whether news items alert too. Alerts are read with `poll_alerts`; the guard never blocks trading.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::License,
            annotations: CONFIGURE,
        }
        .build(set_news_guard),
        ToolSpec {
            name: "get_news_guard_status",
            title: "News guard status",
            description: "The license's news guard, if set, with the releases that will alert within the next 24 h (from the terminal's calendar, else the server's).",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(news_guard_status)
        // A license-level read: with no terminal connected at all it answers
        // from the server calendar.
        .terminal_optional(),
        ToolSpec {
            name: "remove_news_guard",
            title: "Remove the news guard",
            description: "Removes the license's news guard; `poll_alerts` then returns no alerts.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::License,
            annotations: CONFIGURE,
        }
        .build(remove_news_guard),
        ToolSpec {
            name: "poll_alerts",
            title: "Poll alerts",
            description: "Alerts that fired since the caller's cursor, oldest first: news-guard alerts for watched releases (`lead_minutes` before them) and news items about watched currencies, firings of this terminal's `set_alert` rules (`alert`), and breaches of this terminal's equity guard and prop-firm rules (`equity_guard_breach`, `prop_firm_breach`: rule, time, equity at that moment, limit) recorded by the server's live monitor. Pass the returned `next_cursor` on the next poll; each alert has a stable id (a breach or rule firing may be delivered again by a poll within 5 s of it: drop repeats by id). A first poll returns the last hour.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(poll_alerts),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        assert_eq!(parse_cursor("1795000000000"), Some((1_795_000_000_000, None)));
        assert_eq!(
            parse_cursor("1795000000000:release:x:30"),
            Some((1_795_000_000_000, Some("release:x:30".into())))
        );
        assert_eq!(parse_cursor("soon"), None);
        assert_eq!(parse_cursor("-5"), None);
        assert_eq!(parse_cursor(""), None);
    }

    #[test]
    fn only_watched_releases_alert() {
        let ev = |id: &str, cur: &str, imp| EconomicEvent {
            id: id.into(),
            time: 10,
            currency: cur.into(),
            country: "X".into(),
            name: id.into(),
            importance: imp,
            category: "c".into(),
            actual: None,
            forecast: None,
            previous: None,
        };
        let guard = NewsGuard {
            currencies: vec!["USD".into()],
            min_importance: Importance::High,
            lead_minutes: 30,
            include_news: false,
        };
        let got = watched(
            vec![
                ev("a", "USD", Importance::High),
                ev("b", "USD", Importance::Medium),
                ev("c", "EUR", Importance::High),
                ev("a", "USD", Importance::High),
            ],
            &guard,
        );
        assert_eq!(got.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["a"]);
    }
}
