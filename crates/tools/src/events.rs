//! Economic-calendar tools: `get_economic_calendar` and `get_event_risk`.
//!
//! The calendar comes from the terminal (MT5's calendar) and falls back to
//! the server's calendar ([`ServerCalendar`]: a weekly feed fetched and
//! refreshed by [`crate::calendar_feed`], or a JSON file the operator keeps)
//! when the terminal has no calendar (MT4 answers `NOT_SUPPORTED`), is
//! disconnected or does not answer. `source` is `terminal` or `server`;
//! without any calendar the answer is `server` with no events and says so
//! (`available: false`, a note) instead of inventing events. See
//! `docs/calendar.md`.

use std::path::Path;
use std::sync::{Arc, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::events::{self, EconomicEvent, EventFilter, EventRiskConfig, Importance, MINUTE_MS, Verdict};
use tradeterm_core::time::{DAY_MS, UnixMs, iso, parse_iso, to_iso};
use tradeterm_protocol::agent::{self, codes};
use tradeterm_protocol::{Command, CommandResult, DispatchError};

use crate::context::unexpected;
use crate::market::check_symbol;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Longest range one calendar call may cover.
pub const MAX_CALENDAR_DAYS: i64 = 31;
/// Most currencies one call may filter on.
pub const MAX_CURRENCIES: usize = 20;
/// Most categories one call may filter on.
pub const MAX_CATEGORIES: usize = 10;
/// Most events a server calendar file may hold.
pub const MAX_SERVER_EVENTS: usize = 200_000;

/// The server-side economic calendar, used when a terminal has no calendar:
/// a JSON file (`CALENDAR_FILE`, the override), or a public weekly feed
/// (`CALENDAR_FEED_URL`) that [`crate::calendar_feed`] fetches and refreshes
/// into it. Empty (and [`is_configured`](Self::is_configured) false) when
/// neither is configured. Shared by every call; the feed's refresh task
/// replaces the events in place and keeps the last good copy on failure.
#[derive(Debug, Default)]
pub struct ServerCalendar {
    origin: CalendarOrigin,
    state: RwLock<CalendarState>,
}

/// Where a server calendar's events come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CalendarOrigin {
    /// Not configured.
    #[default]
    None,
    /// A calendar file (`CALENDAR_FILE`).
    File,
    /// A feed refreshed every `refresh_ms` (`CALENDAR_FEED_URL`).
    Feed {
        /// The feed's URL.
        url: String,
        /// Refresh interval, ms.
        refresh_ms: i64,
    },
}

#[derive(Debug, Default)]
struct CalendarState {
    events: Arc<Vec<EconomicEvent>>,
    /// When the events were fetched (feeds).
    as_of: Option<UnixMs>,
    /// Why the last refresh failed, when it did.
    last_error: Option<String>,
}

/// What a server calendar holds at one instant ([`ServerCalendar::snapshot`]).
#[derive(Debug, Clone)]
pub struct CalendarSnapshot {
    /// The events, by time.
    pub events: Arc<Vec<EconomicEvent>>,
    /// Whether there is a calendar to read (a file, or a feed fetched at least once).
    pub available: bool,
    /// When a feed's events were fetched; `None` for a file.
    pub as_of: Option<UnixMs>,
    /// A feed whose last refresh failed or that is older than two refresh intervals.
    pub stale: Option<bool>,
    /// Why the last refresh failed, when it did.
    pub last_error: Option<String>,
}

/// One event of a server calendar file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEvent {
    id: String,
    time: String,
    currency: String,
    #[serde(default)]
    country: String,
    name: String,
    importance: Importance,
    #[serde(default)]
    category: String,
    #[serde(default)]
    actual: Option<f64>,
    #[serde(default)]
    forecast: Option<f64>,
    #[serde(default)]
    previous: Option<f64>,
}

impl ServerCalendar {
    /// A calendar from the text of a calendar file: a JSON array of
    /// `{ "id", "time" (ISO 8601), "currency", "country"?, "name",
    /// "importance" (low|medium|high), "category"?, "actual"?, "forecast"?,
    /// "previous"? }`.
    ///
    /// # Errors
    /// A message naming the first bad event.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let raw: Vec<FileEvent> = serde_json::from_str(text).map_err(|entry| format!("calendar file: {entry}"))?;
        if raw.len() > MAX_SERVER_EVENTS {
            return Err(format!("calendar file: more than {MAX_SERVER_EVENTS} events"));
        }
        let mut events = Vec::with_capacity(raw.len());
        for (index, entry) in raw.into_iter().enumerate() {
            let bad = |what: &str| format!("calendar file: event {index} (`{}`): {what}", entry.id);
            let time = parse_iso(&entry.time).map_err(|_| bad("`time` must be an ISO 8601 time"))?;
            if !is_currency(&entry.currency) {
                return Err(bad("`currency` must be a 3-letter ISO code"));
            }
            if entry.id.is_empty() || entry.name.is_empty() {
                return Err(bad("`id` and `name` must not be empty"));
            }
            if [entry.actual, entry.forecast, entry.previous]
                .iter()
                .flatten()
                .any(|v| !v.is_finite())
            {
                return Err(bad("values must be finite numbers"));
            }
            events.push(EconomicEvent {
                id: entry.id,
                time,
                currency: entry.currency.to_ascii_uppercase(),
                country: entry.country,
                name: entry.name,
                importance: entry.importance,
                category: entry.category.to_ascii_lowercase(),
                actual: entry.actual,
                forecast: entry.forecast,
                previous: entry.previous,
            });
        }
        sort_events(&mut events);
        Ok(Self {
            origin: CalendarOrigin::File,
            state: RwLock::new(CalendarState {
                events: Arc::new(events),
                ..CalendarState::default()
            }),
        })
    }

    /// Loads a calendar file.
    ///
    /// # Errors
    /// The file cannot be read or is not a valid calendar.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_json(&text)
    }

    /// An empty calendar that the feed at `url` fills every `refresh`
    /// ([`crate::calendar_feed::spawn_refresh`]).
    pub fn for_feed(url: &str, refresh: std::time::Duration) -> Self {
        Self {
            origin: CalendarOrigin::Feed {
                url: url.to_owned(),
                refresh_ms: i64::try_from(refresh.as_millis()).unwrap_or(i64::MAX),
            },
            state: RwLock::default(),
        }
    }

    /// Whether a calendar file or feed was configured.
    pub fn is_configured(&self) -> bool {
        self.origin != CalendarOrigin::None
    }

    /// Where the events come from.
    pub fn origin(&self) -> &CalendarOrigin {
        &self.origin
    }

    /// Replaces the events with a good fetch made at `as_of`.
    pub fn replace(&self, mut events: Vec<EconomicEvent>, as_of: UnixMs) {
        sort_events(&mut events);
        let mut state = self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *state = CalendarState {
            events: Arc::new(events),
            as_of: Some(as_of),
            last_error: None,
        };
    }

    /// Records a failed refresh; the last good events stay.
    pub fn record_failure(&self, error: String) {
        let mut state = self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.last_error = Some(error);
    }

    /// The events, by time.
    pub fn events(&self) -> Arc<Vec<EconomicEvent>> {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .events
            .clone()
    }

    /// What the calendar holds at `now`, with its age.
    pub fn snapshot(&self, now: UnixMs) -> CalendarSnapshot {
        let state = self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (available, stale) = match &self.origin {
            CalendarOrigin::None => (false, None),
            CalendarOrigin::File => (true, None),
            CalendarOrigin::Feed { refresh_ms, .. } => (
                state.as_of.is_some(),
                Some(
                    state.last_error.is_some()
                        || state
                            .as_of
                            .is_none_or(|t| now.saturating_sub(t) > refresh_ms.saturating_mul(2)),
                ),
            ),
        };
        CalendarSnapshot {
            events: state.events.clone(),
            available,
            as_of: state.as_of,
            stale,
            last_error: state.last_error.clone(),
        }
    }
}

fn sort_events(events: &mut [EconomicEvent]) {
    events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
}

/// A symbol's ISO currencies (base, profit, margin), upper-case, sorted; a
/// CFD's non-currency base is left out.
pub(crate) fn currencies_of(spec: &tradeterm_core::SymbolSpec) -> Vec<String> {
    let mut c: Vec<String> = [&spec.currency_base, &spec.currency_profit, &spec.currency_margin]
        .into_iter()
        .filter(|c| is_currency(c))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    c.sort();
    c.dedup();
    c
}

pub(crate) fn is_currency(s: &str) -> bool {
    crate::schema::is_currency(s)
}

/// Where a calendar answer came from: `terminal` or `server`, the spec's two
/// values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CalendarSource {
    /// The terminal's own calendar (MT5).
    Terminal,
    /// The server's calendar (feed or file).
    Server,
    /// The server's calendar, which has no data (the terminal has none and no
    /// server calendar is configured or fetched yet). Not a third value on
    /// the wire: it is written `server`, and answers say `available: false`
    /// (or a note) beside it.
    #[serde(rename = "server", skip_deserializing)]
    #[schemars(skip)]
    None,
}

impl CalendarSource {
    /// Whether the answer had a calendar to read (not [`CalendarSource::None`]).
    pub fn is_available(self) -> bool {
        self != Self::None
    }
}

/// Which calendar to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourcePreference {
    /// The terminal's, else the server's (default).
    #[default]
    Auto,
    /// Only the terminal's (an error when it has none).
    Terminal,
    /// Only the server's.
    Server,
}

/// Input of `get_economic_calendar`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalendarInput {
    /// Start (ISO 8601, inclusive); default now.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub from: Option<String>,
    /// End (ISO 8601, exclusive); default `from` + 7 days. At most 31 days after `from`.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub to: Option<String>,
    /// Only events of these currencies (ISO codes such as `USD`, at most 20); default all.
    #[serde(default)]
    #[schemars(inner(pattern(crate::schema::CURRENCY_PATTERN)), length(max = MAX_CURRENCIES))]
    pub currencies: Vec<String>,
    /// Only events of at least this importance (`low`, `medium`, `high`).
    #[serde(default)]
    pub min_importance: Option<Importance>,
    /// Only these categories (`inflation`, `employment`, `central_bank`, `growth`, ...; at most 10).
    #[serde(default)]
    #[schemars(inner(pattern(crate::schema::CATEGORY_PATTERN)), length(max = MAX_CATEGORIES))]
    pub categories: Vec<String>,
    /// `auto` (default): the terminal's calendar, else the server's; `terminal` or `server` to insist on one.
    #[serde(default)]
    pub source: SourcePreference,
}

/// Output of `get_economic_calendar`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CalendarOutput {
    /// Where the events come from: `terminal` (MT5's calendar) or `server` (the server's feed or file).
    pub source: CalendarSource,
    /// Whether a calendar was read; `false` (with `source: server`, no events and a `note`) when neither the terminal nor the server has one.
    pub available: bool,
    /// When the server calendar's feed was last fetched (ISO 8601); absent for the terminal's calendar and a calendar file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub as_of: Option<UnixMs>,
    /// Whether the server feed's copy is stale (its last refresh failed, or it is older than two refresh intervals); absent when not a feed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
    /// Start of the range (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// End of the range (ISO 8601, exclusive).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// The events, by time.
    pub events: Vec<EconomicEvent>,
    /// Why the terminal's calendar was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn importance_word(i: Importance) -> &'static str {
    match i {
        Importance::Low => "low",
        Importance::Medium => "medium",
        Importance::High => "high",
    }
}

fn importance_from(i: agent::Importance) -> Importance {
    match i {
        agent::Importance::Low => Importance::Low,
        agent::Importance::Medium => Importance::Medium,
        agent::Importance::High => Importance::High,
    }
}

fn from_terminal(e: agent::CalendarEvent) -> EconomicEvent {
    EconomicEvent {
        id: e.id,
        time: e.time,
        currency: e.currency.to_ascii_uppercase(),
        country: e.country,
        name: e.name,
        importance: importance_from(e.importance),
        category: e.category.to_ascii_lowercase(),
        actual: e.actual,
        forecast: e.forecast,
        previous: e.previous,
    }
}

fn check_filter(input_currencies: &[String], categories: &[String]) -> Result<Vec<String>, ToolError> {
    if input_currencies.len() > MAX_CURRENCIES {
        return Err(ToolError::InvalidInput(format!(
            "`currencies` may list at most {MAX_CURRENCIES} codes"
        )));
    }
    if categories.len() > MAX_CATEGORIES {
        return Err(ToolError::InvalidInput(format!(
            "`categories` may list at most {MAX_CATEGORIES} names"
        )));
    }
    if let Some(bad) = categories.iter().find(|c| !crate::schema::is_category(c)) {
        return Err(ToolError::InvalidInput(format!(
            "invalid category `{}`: use 1-32 letters, digits or _",
            bad.chars().take(40).collect::<String>()
        )));
    }
    input_currencies
        .iter()
        .map(|c| {
            if is_currency(c) {
                Ok(c.to_ascii_uppercase())
            } else {
                Err(ToolError::InvalidInput(format!(
                    "invalid currency `{}`: use a 3-letter ISO code such as USD",
                    c.chars().take(40).collect::<String>()
                )))
            }
        })
        .collect()
}

/// A calendar read ([`fetch_calendar`]).
#[derive(Debug)]
pub(crate) struct Fetched {
    /// Where the events come from ([`CalendarSource::None`] when no calendar had data).
    pub source: CalendarSource,
    /// The events of the range and currencies.
    pub events: Vec<EconomicEvent>,
    /// Why the terminal's calendar was not used, when it was not.
    pub note: Option<String>,
    /// When the server feed's copy was fetched.
    pub as_of: Option<UnixMs>,
    /// Whether the server feed's copy is stale.
    pub stale: Option<bool>,
}

/// The events of `[from, to)` for `currencies` (empty = all), from the
/// terminal or the server calendar as `pref` says, with where they came from
/// and why the terminal's were not used.
pub(crate) async fn fetch_calendar(
    ctx: &ToolContext,
    from: UnixMs,
    to: UnixMs,
    currencies: &[String],
    pref: SourcePreference,
) -> Result<Fetched, ToolError> {
    let server = |why: String| {
        let snap = ctx.services.calendar.snapshot(ctx.now_ms);
        if !snap.available {
            let missing = if ctx.services.calendar.is_configured() {
                format!(
                    "the server calendar feed has not been fetched yet{}",
                    snap.last_error.map(|e| format!(" ({e})")).unwrap_or_default()
                )
            } else {
                "no server calendar is configured (CALENDAR_FEED_URL or CALENDAR_FILE)".to_owned()
            };
            return Fetched {
                source: CalendarSource::None,
                events: Vec::new(),
                note: Some(format!("{why}; {missing}: no events are known")),
                as_of: None,
                stale: None,
            };
        }
        let filter = EventFilter {
            currencies: currencies.to_vec(),
            ..EventFilter::default()
        };
        let note = match (&snap.last_error, snap.stale) {
            (Some(e), _) => {
                format!("{why}; the server calendar feed's last refresh failed ({e}): this is the last good copy")
            }
            (None, Some(true)) => format!("{why}; the server calendar feed's copy is stale"),
            _ => why,
        };
        Fetched {
            source: CalendarSource::Server,
            events: events::select(&snap.events, from, to, &filter),
            note: Some(note),
            as_of: snap.as_of,
            stale: snap.stale,
        }
    };
    if pref == SourcePreference::Server {
        return Ok(server("the server calendar was asked for".into()));
    }
    let Some(terminal) = ctx.terminal_id.as_deref() else {
        if pref == SourcePreference::Terminal {
            return Err(ToolError::TerminalRequired);
        }
        return Ok(server("no terminal was targeted".into()));
    };
    let command = Command::Calendar {
        from,
        to,
        currencies: currencies.to_vec(),
    };
    let why = match ctx
        .services
        .dispatch
        .execute(&ctx.license_id, terminal, command, ctx.timeout)
        .await
    {
        Ok(CommandResult::Calendar { events }) => {
            return Ok(Fetched {
                source: CalendarSource::Terminal,
                events: events.into_iter().map(from_terminal).collect(),
                note: None,
                as_of: None,
                stale: None,
            });
        }
        Ok(other) => return Err(unexpected("calendar", &other)),
        Err(DispatchError::CommandFailed(body)) if body.code == codes::NOT_SUPPORTED => {
            "the terminal has no economic calendar (MT4)".to_owned()
        }
        Err(DispatchError::Unreachable) => "the terminal is not connected".to_owned(),
        Err(DispatchError::Timeout(d)) => format!("the terminal did not answer within {} ms", d.as_millis()),
        Err(e) => return Err(e.into()),
    };
    if pref == SourcePreference::Terminal {
        return Err(ToolError::Dispatch(format!("{why} (source `terminal` was asked for)")));
    }
    Ok(server(why))
}

/// [`fetch_calendar`] as `(source, events, note)`: the source is
/// [`CalendarSource::None`] when no calendar had data.
pub(crate) async fn fetch_events(
    ctx: &ToolContext,
    from: UnixMs,
    to: UnixMs,
    currencies: &[String],
    pref: SourcePreference,
) -> Result<(CalendarSource, Vec<EconomicEvent>, Option<String>), ToolError> {
    let f = fetch_calendar(ctx, from, to, currencies, pref).await?;
    Ok((f.source, f.events, f.note))
}

/// Input of `get_event_risk`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventRiskInput {
    /// Instrument whose currencies (base, profit and margin) are checked, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Minutes before a high-importance event when trading is blocked (0-1440, default 15).
    #[serde(default)]
    #[schemars(range(min = 0, max = events::MAX_WINDOW_MS / MINUTE_MS))]
    pub block_before_minutes: Option<i64>,
    /// Minutes after a high-importance event when trading is blocked (0-1440, default 15).
    #[serde(default)]
    #[schemars(range(min = 0, max = events::MAX_WINDOW_MS / MINUTE_MS))]
    pub block_after_minutes: Option<i64>,
    /// Minutes before a medium- or high-importance event when to be cautious (0-1440, default 120; at least the block window).
    #[serde(default)]
    #[schemars(range(min = 0, max = events::MAX_WINDOW_MS / MINUTE_MS))]
    pub caution_before_minutes: Option<i64>,
    /// Minutes after a medium- or high-importance event when to be cautious (0-1440, default 30; at least the block window).
    #[serde(default)]
    #[schemars(range(min = 0, max = events::MAX_WINDOW_MS / MINUTE_MS))]
    pub caution_after_minutes: Option<i64>,
    /// `auto` (default): the terminal's calendar, else the server's.
    #[serde(default)]
    pub source: SourcePreference,
}

/// An event whose window contains now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ActiveEventOut {
    /// The event.
    pub event: EconomicEvent,
    /// `block` or `caution`: which of its windows contains now.
    pub window: Verdict,
    /// Window start (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub window_start: UnixMs,
    /// Window end (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub window_end: UnixMs,
}

/// Output of `get_event_risk`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EventRiskOutput {
    /// Instrument.
    pub symbol: String,
    /// The currencies checked.
    pub currencies: Vec<String>,
    /// `proceed`, `caution` or `block`.
    pub verdict: Verdict,
    /// When the current block or caution windows end (ISO 8601), chained across overlapping events; absent for `proceed`.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub resume_after: Option<UnixMs>,
    /// Human-readable reasons.
    pub reasons: Vec<String>,
    /// The events whose window contains now.
    pub active_events: Vec<ActiveEventOut>,
    /// The next relevant event (medium or high importance) after now, within 24 h.
    pub next_event: Option<EconomicEvent>,
    /// Where the events come from: `terminal` or `server`.
    pub source: CalendarSource,
    /// Whether a calendar was read; without one the verdict is `caution` (unknown risk).
    pub calendar_available: bool,
    /// Why the terminal's calendar was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When the verdict was computed (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
}

fn minutes(name: &str, v: Option<i64>, default_ms: i64) -> Result<i64, ToolError> {
    match v {
        None => Ok(default_ms),
        Some(m) if (0..=events::MAX_WINDOW_MS / MINUTE_MS).contains(&m) => Ok(m * MINUTE_MS),
        Some(_) => Err(ToolError::InvalidInput(format!(
            "`{name}` must be within 0 ..= {}",
            events::MAX_WINDOW_MS / MINUTE_MS
        ))),
    }
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_economic_calendar",
            title: "Economic calendar",
            description: "Economic releases in [`from`, `to`) (default: the next 7 days; at most 31 days), by time, optionally only some currencies, a minimum importance or some categories. From the terminal's calendar (MT5); on MT4, or when the terminal is disconnected or silent, from the server's calendar (`source`: `terminal` or `server`; `available: false` with no events when neither has one; `as_of`/`stale` say how old the server feed's copy is). Holidays have category `holiday`.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: CalendarInput| async move {
            let parse = |field: &str, v: &Option<String>| {
                v.as_deref()
                    .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput(format!("`{field}` must be an ISO 8601 time"))))
                    .transpose()
            };
            let from = parse("from", &input.from)?.unwrap_or(ctx.now_ms);
            let to = parse("to", &input.to)?.unwrap_or(from + 7 * DAY_MS);
            // Cut to MAX_CALENDAR_DAYS after `from`; `to` at or before `from` is empty.
            let to = to.min(from.saturating_add(MAX_CALENDAR_DAYS * DAY_MS)).max(from);
            let currencies = check_filter(&input.currencies, &input.categories)?;
            let fetched = fetch_calendar(&ctx, from, to, &currencies, input.source).await?;
            let filter = EventFilter {
                currencies,
                min_importance: input.min_importance,
                categories: input.categories.iter().map(|c| c.to_ascii_lowercase()).collect(),
            };
            Ok(CalendarOutput {
                source: fetched.source,
                available: fetched.source.is_available(),
                as_of: fetched.as_of,
                stale: fetched.stale,
                from,
                to,
                events: events::select(&fetched.events, from, to, &filter),
                note: fetched.note,
            })
        })
        // The calendar falls back to the server's with no terminal at all.
        .terminal_optional(),
        ToolSpec {
            name: "get_event_risk",
            title: "Event risk",
            description: "Whether to trade a symbol now given the economic calendar: `proceed`, `caution` (a medium- or high-importance release of one of its currencies within 2 h before or 30 min after) or `block` (a high-importance release within 15 min either side), with `resume_after` (when the windows end) and the events involved. Windows are adjustable. Unknown calendar (none available) gives `caution`.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: EventRiskInput| async move {
            check_symbol(&input.symbol)?;
            let defaults = EventRiskConfig::default();
            let config = EventRiskConfig {
                block_before_ms: minutes("block_before_minutes", input.block_before_minutes, defaults.block_before_ms)?,
                block_after_ms: minutes("block_after_minutes", input.block_after_minutes, defaults.block_after_ms)?,
                caution_before_ms: minutes(
                    "caution_before_minutes",
                    input.caution_before_minutes,
                    defaults.caution_before_ms,
                )?,
                caution_after_ms: minutes(
                    "caution_after_minutes",
                    input.caution_after_minutes,
                    defaults.caution_after_ms,
                )?,
                ..defaults
            };
            // A caution window narrower than its block window widens to it
            // (caution covers blocking; not an error the schema could state).
            let config = EventRiskConfig {
                caution_before_ms: config.caution_before_ms.max(config.block_before_ms),
                caution_after_ms: config.caution_after_ms.max(config.block_after_ms),
                ..config
            };
            config
                .validate()
                .map_err(|e| ToolError::InvalidInput(e.to_string()))?;
            let spec = ctx.spec(&input.symbol).await?;
            let currencies = currencies_of(&spec);
            if currencies.is_empty() {
                return Err(ToolError::InvalidInput(format!(
                    "`{}` has no ISO currency to check events for",
                    input.symbol
                )));
            }
            let now = ctx.now_ms;
            // Every window that can contain now, and the next day's events.
            let from = now - events::MAX_WINDOW_MS;
            let to = now + DAY_MS;
            let (source, found, note) = fetch_events(&ctx, from, to, &currencies, input.source).await?;
            let risk = events::event_risk(&found, &currencies, now, &config)
                .map_err(|e| ToolError::InvalidInput(e.to_string()))?;
            let mut reasons: Vec<String> = risk
                .active
                .iter()
                .map(|h| {
                    let rel = h.event.time - now;
                    let when = if rel >= 0 {
                        format!("in {} min", (rel + MINUTE_MS - 1) / MINUTE_MS)
                    } else {
                        format!("{} min ago", (-rel) / MINUTE_MS)
                    };
                    format!(
                        "{} {} ({} importance) {when}: {} window until {}",
                        h.event.currency,
                        h.event.name,
                        importance_word(h.event.importance),
                        if h.blocks { "block" } else { "caution" },
                        to_iso(h.window_end)
                    )
                })
                .collect();
            let mut verdict = risk.verdict;
            let mut resume_after = risk.resume_after;
            if source == CalendarSource::None {
                // Unknown is not safe: never `proceed` without a calendar.
                verdict = Verdict::Caution;
                resume_after = None;
                reasons.push("no economic calendar is available: event risk is unknown".into());
            } else if reasons.is_empty() {
                reasons.push(format!(
                    "no medium- or high-importance {} release within the caution windows",
                    currencies.join("/")
                ));
            }
            Ok(EventRiskOutput {
                symbol: input.symbol,
                currencies,
                verdict,
                resume_after,
                reasons,
                active_events: risk
                    .active
                    .into_iter()
                    .map(|h| ActiveEventOut {
                        window: if h.blocks { Verdict::Block } else { Verdict::Caution },
                        window_start: h.window_start,
                        window_end: h.window_end,
                        event: h.event,
                    })
                    .collect(),
                next_event: risk.next_event,
                source,
                calendar_available: source.is_available(),
                note,
                as_of: now,
            })
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_calendar_files_are_validated() {
        let ok = r#"[
            {"id": "b", "time": "2026-11-27T13:30:00Z", "currency": "usd", "country": "US",
             "name": "Payrolls", "importance": "high", "category": "Employment", "forecast": 150.0},
            {"id": "a", "time": "2026-11-26T10:00:00Z", "currency": "EUR", "name": "CPI", "importance": "medium"}
        ]"#;
        let cal = ServerCalendar::from_json(ok).unwrap();
        assert!(cal.is_configured());
        let events = cal.events();
        let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"], "sorted by time");
        assert_eq!(cal.events()[1].currency, "USD");
        assert_eq!(cal.events()[1].category, "employment");
        assert_eq!(cal.events()[1].time, parse_iso("2026-11-27T13:30:00Z").unwrap());
        for (bad, needle) in [
            (
                r#"[{"id": "x", "time": "soon", "currency": "USD", "name": "n", "importance": "high"}]"#,
                "time",
            ),
            (
                r#"[{"id": "x", "time": "2026-11-27T13:30:00Z", "currency": "US", "name": "n", "importance": "high"}]"#,
                "currency",
            ),
            (
                r#"[{"id": "x", "time": "2026-11-27T13:30:00Z", "currency": "USD", "name": "n", "importance": "huge"}]"#,
                "`huge`",
            ),
            (
                r#"[{"id": "", "time": "2026-11-27T13:30:00Z", "currency": "USD", "name": "n", "importance": "low"}]"#,
                "empty",
            ),
            (
                r#"[{"id": "x", "time": "2026-11-27T13:30:00Z", "currency": "USD", "name": "n", "importance": "low", "extra": 1}]"#,
                "extra",
            ),
            (r#"{"id": "x"}"#, "calendar file"),
        ] {
            let err = ServerCalendar::from_json(bad).unwrap_err();
            assert!(err.contains(needle), "{err} should mention {needle}");
        }
        assert!(!ServerCalendar::default().is_configured());
    }

    #[test]
    fn the_source_has_the_specs_two_values() {
        let schema = serde_json::to_value(schemars::schema_for!(CalendarSource)).unwrap();
        let text = schema.to_string();
        assert!(text.contains("terminal") && text.contains("server"), "{text}");
        assert!(!text.contains("none"), "{text}");
        assert_eq!(serde_json::to_value(CalendarSource::None).unwrap(), "server");
        assert!(serde_json::from_value::<CalendarSource>(serde_json::json!("none")).is_err());
        for tool in ["get_economic_calendar", "get_event_risk", "get_holding_risk"] {
            let out = crate::find(tool).unwrap().output_schema.to_string();
            assert!(out.contains("\"server\"") && !out.contains("\"none\""), "{tool}: {out}");
        }
    }

    #[test]
    fn filters_are_validated() {
        assert_eq!(check_filter(&["usd".into()], &[]).unwrap(), vec!["USD".to_owned()]);
        assert!(check_filter(&["dollar".into()], &[]).is_err());
        assert!(check_filter(&vec!["USD".into(); MAX_CURRENCIES + 1], &[]).is_err());
        assert!(check_filter(&[], &["central bank".into()]).is_err());
        assert!(check_filter(&[], &vec!["growth".into(); MAX_CATEGORIES + 1]).is_err());
        assert!(minutes("x", Some(-1), 0).is_err());
        assert!(minutes("x", Some(1441), 0).is_err());
        assert_eq!(minutes("x", Some(5), 0).unwrap(), 5 * MINUTE_MS);
        assert_eq!(minutes("x", None, 7).unwrap(), 7);
    }

    /// A terminal that answers the calendar command as told.
    struct FakeTerminal(&'static str);

    #[async_trait::async_trait]
    impl tradeterm_protocol::Dispatch for FakeTerminal {
        async fn execute(
            &self,
            _license: &str,
            _terminal: &str,
            command: Command,
            _timeout: std::time::Duration,
        ) -> Result<CommandResult, DispatchError> {
            let Command::Calendar { from, .. } = command else {
                return Err(DispatchError::Unreachable);
            };
            match self.0 {
                "mt5" => Ok(CommandResult::Calendar {
                    events: vec![agent::CalendarEvent {
                        id: "t1".into(),
                        time: from + MINUTE_MS,
                        currency: "usd".into(),
                        country: "US".into(),
                        name: "Terminal event".into(),
                        importance: agent::Importance::High,
                        category: "Employment".into(),
                        actual: None,
                        forecast: None,
                        previous: None,
                    }],
                }),
                "mt4" => Err(DispatchError::CommandFailed(agent::ErrorBody::new(
                    codes::NOT_SUPPORTED,
                    "no calendar on MT4",
                ))),
                "offline" => Err(DispatchError::Unreachable),
                _ => Err(DispatchError::NotFound),
            }
        }

        async fn terminals(&self, _license: &str) -> Result<Vec<tradeterm_protocol::TerminalStatus>, DispatchError> {
            Ok(Vec::new())
        }
    }

    async fn context(terminal: &'static str, calendar: ServerCalendar) -> ToolContext {
        let store = tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap();
        let services = crate::Services {
            calendar: std::sync::Arc::new(calendar),
            ..crate::Services::new(std::sync::Arc::new(FakeTerminal(terminal)), std::sync::Arc::new(store))
        };
        let caller = crate::Caller {
            license_id: "lic_test".into(),
            credential: "key_test".into(),
            caps: vec![Capability::Read, Capability::Analytics],
        };
        let mut ctx = ToolContext::new(std::sync::Arc::new(services), caller, Some("term_test".into()));
        ctx.force_dry_run = true;
        ctx.timeout = std::time::Duration::from_secs(1);
        ctx.now_ms = parse_iso("2026-11-26T12:00:00Z").unwrap();
        ctx
    }

    fn server_file() -> ServerCalendar {
        ServerCalendar::from_json(
            r#"[{"id": "s1", "time": "2026-11-26T13:00:00Z", "currency": "USD", "name": "Server event", "importance": "high"},
                {"id": "s2", "time": "2026-11-26T14:00:00Z", "currency": "JPY", "name": "Other", "importance": "high"}]"#,
        )
        .unwrap()
    }

    #[tokio::test]
    async fn the_calendar_falls_back_to_the_server_and_says_so() {
        let tool = crate::find("get_economic_calendar").unwrap();
        let call = |terminal, calendar, input: serde_json::Value| async move {
            tool.call(context(terminal, calendar).await, input).await
        };
        let ids = |answer: &serde_json::Value| -> Vec<String> {
            answer["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|failure| failure["id"].as_str().unwrap().to_owned())
                .collect()
        };
        // MT5: the terminal's calendar.
        let answer = call("mt5", server_file(), serde_json::json!({})).await.unwrap();
        assert_eq!(
            (answer["source"].as_str(), ids(&answer)),
            (Some("terminal"), vec!["t1".to_owned()])
        );
        assert!(answer.get("note").is_none());
        assert_eq!(answer["available"], true);
        assert_eq!(answer["events"][0]["currency"], "USD");
        // MT4 and offline terminals: the server's, with the reason; filters apply.
        for (terminal, reason) in [("mt4", "no economic calendar"), ("offline", "not connected")] {
            let answer = call(terminal, server_file(), serde_json::json!({ "currencies": ["usd"] }))
                .await
                .unwrap();
            assert_eq!(
                (answer["source"].as_str(), ids(&answer)),
                (Some("server"), vec!["s1".to_owned()]),
                "{terminal}"
            );
            assert!(answer["note"].as_str().unwrap().contains(reason), "{answer}");
            // Without a server calendar: nothing invented.
            let answer = call(terminal, ServerCalendar::default(), serde_json::json!({}))
                .await
                .unwrap();
            assert_eq!(
                (
                    answer["source"].as_str(),
                    answer["available"].as_bool(),
                    ids(&answer).len()
                ),
                (Some("server"), Some(false), 0)
            );
            assert!(answer["note"].as_str().unwrap().contains("CALENDAR_FILE"), "{answer}");
            assert!(
                answer.get("as_of").is_none() && answer.get("stale").is_none(),
                "{answer}"
            );
            // `terminal` insists: an error, not the server's.
            let failure = call(terminal, server_file(), serde_json::json!({ "source": "terminal" }))
                .await
                .unwrap_err();
            assert_eq!(failure.code(), "DISPATCH_ERROR");
        }
        // `server` skips the terminal.
        let answer = call("mt5", server_file(), serde_json::json!({ "source": "server" }))
            .await
            .unwrap();
        assert_eq!(
            (answer["source"].as_str(), ids(&answer)),
            (Some("server"), vec!["s1".to_owned(), "s2".to_owned()])
        );
        // Other dispatch errors are not papered over.
        let failure = call("unknown", server_file(), serde_json::json!({})).await.unwrap_err();
        assert_eq!(failure.code(), "NOT_FOUND");
        // An inverted range is empty; a long one is cut to 31 days after `from`.
        let empty = call(
            "mt5",
            server_file(),
            serde_json::json!({ "from": "2026-11-26T00:00:00Z", "to": "2026-11-25T00:00:00Z" }),
        )
        .await
        .unwrap();
        assert_eq!(
            (empty["from"].as_str(), empty["to"].as_str()),
            (Some("2026-11-26T00:00:00Z"), Some("2026-11-26T00:00:00Z"))
        );
        assert_eq!(empty["events"], serde_json::json!([]));
        let cut = call(
            "mt5",
            server_file(),
            serde_json::json!({ "from": "2026-11-01T00:00:00Z", "to": "2026-12-03T00:00:00Z" }),
        )
        .await
        .unwrap();
        assert_eq!(cut["to"], "2026-12-02T00:00:00Z");
        // Input checks.
        for bad in [
            serde_json::json!({ "from": "yesterday" }),
            serde_json::json!({ "currencies": ["US"] }),
            serde_json::json!({ "source": "cache" }),
        ] {
            let failure = call("mt5", server_file(), bad.clone()).await.unwrap_err();
            assert_eq!(failure.code(), "VALIDATION_ERROR", "{bad}");
        }
    }
}
