//! Event-analysis tools: `get_holding_risk` (what a position held from now
//! over a window is exposed to) and `get_event_sensitivity` (how a symbol
//! reacted to past releases). Rules: [`tradeterm_core::holding`] and
//! `docs/calendar.md`.

use futures_util::future::{try_join, try_join3};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::costs::{self, SwapCalendarParams};
use tradeterm_core::events::{EconomicEvent, Importance, Verdict};
use tradeterm_core::holding::{self, RiskLevel};
use tradeterm_core::time::{DAY_MS, UnixMs, iso, to_iso};
use tradeterm_core::{Side, Timeframe};

use crate::costs::{core_err, swap_rate, volume_warning};
use crate::events::{CalendarSource, MAX_CALENDAR_DAYS, SourcePreference, currencies_of, fetch_events, is_currency};
use crate::market::{check_symbol, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Longest hold window, hours (31 days).
pub const MAX_HOLD_HOURS: u32 = 744;
/// Longest look-back of `get_event_sensitivity`, days.
pub const MAX_LOOKBACK_DAYS: u32 = 366;
/// Most bars `get_event_sensitivity` reads.
pub const MAX_SENSITIVITY_BARS: i64 = 20_000;
/// Most releases `get_event_sensitivity` measures (the latest ones).
pub const MAX_RELEASES: usize = 200;
/// Longest reaction window of `get_event_sensitivity`, minutes.
pub const MAX_WINDOW_MINUTES: u32 = 1_440;
/// The bar timeframes `get_event_sensitivity` measures on.
pub const SENSITIVITY_TIMEFRAMES: [Timeframe; 5] = [
    Timeframe::M1,
    Timeframe::M5,
    Timeframe::M15,
    Timeframe::M30,
    Timeframe::H1,
];

/// Schema of `get_event_sensitivity`'s `timeframe`: one of
/// [`SENSITIVITY_TIMEFRAMES`], or null.
fn sensitivity_timeframe(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut values: Vec<serde_json::Value> = SENSITIVITY_TIMEFRAMES
        .iter()
        .map(|tf| serde_json::Value::from(tf.as_str()))
        .collect();
    values.push(serde_json::Value::Null);
    schemars::json_schema!({ "type": ["string", "null"], "enum": values })
}
/// Longest `name_contains` fragment, in characters.
pub const MAX_NAME_FRAGMENT: usize = 100;
/// Default rollover hour, UTC (as `get_swap_calendar`).
const ROLLOVER_HOUR_UTC: i64 = 22;

/// The calendar of `[from, to)` in chunks the calendar accepts.
async fn events_between(
    ctx: &ToolContext,
    from: UnixMs,
    to: UnixMs,
    currencies: &[String],
) -> Result<(CalendarSource, Vec<EconomicEvent>, Option<String>), ToolError> {
    let mut all = Vec::new();
    let mut source = CalendarSource::None;
    let mut note = None;
    let mut start = from;
    while start < to {
        let end = (start + MAX_CALENDAR_DAYS * DAY_MS).min(to);
        let (origin, events, chunk_note) = fetch_events(ctx, start, end, currencies, SourcePreference::Auto).await?;
        // The weakest source of the chunks is the answer's.
        if start == from
            || origin == CalendarSource::None
            || (origin == CalendarSource::Server && source == CalendarSource::Terminal)
        {
            source = origin;
        }
        note = note.or(chunk_note);
        all.extend(events);
        start = end;
    }
    Ok((source, all, note))
}

// ================================================================ get_holding_risk

/// Input of `get_holding_risk`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldingRiskInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// How long the position would be held from now, hours (1-744, default 24).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_HOLD_HOURS))]
    pub hold_hours: Option<u32>,
    /// `buy` or `sell`, for the swap estimate (default: both are given).
    #[serde(default)]
    pub side: Option<Side>,
    /// Position size, lots, for the swap estimate (default 1). One the symbol cannot trade is computed all the same,
    /// with a warning.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: Option<f64>,
}

/// A market closure the position would be held through.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GapOut {
    /// When trading stops (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub start: UnixMs,
    /// When trading resumes (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub end: UnixMs,
    /// Duration, hours.
    pub hours: f64,
    /// Whether it is a weekend closure (prices can gap at the reopen).
    pub weekend: bool,
}

/// Swap over the hold window.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HoldSwapOut {
    /// Rollovers inside the window.
    pub rollovers: usize,
    /// Nights charged (a triple-swap rollover counts 3, weekend rollovers 0).
    pub nights: u32,
    /// Total swap of a long position, account currency (negative = paid); `null` when not computable.
    pub long: Option<f64>,
    /// Total swap of a short position, account currency; `null` when not computable.
    pub short: Option<f64>,
    /// Why the amounts could not be computed, when they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One flagged exposure.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HoldFlag {
    /// `event_landing`, `weekend_gap`, `market_break`, `holiday` or `triple_swap`.
    pub kind: &'static str,
    /// When (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// What it is.
    pub detail: String,
}

/// Output of `get_holding_risk`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HoldingRiskOutput {
    /// Instrument.
    pub symbol: String,
    /// Its currencies, checked against the calendar.
    pub currencies: Vec<String>,
    /// Hold window start (now, ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Hold window end (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub until: UnixMs,
    /// `proceed`, `caution` or `block`: the spec's verdict of the level (`low`, `medium`, `high`); at least `caution` without a calendar.
    pub verdict: Verdict,
    /// `low`, `medium` or `high`, the finer level behind the verdict (rules in docs/calendar.md).
    pub level: RiskLevel,
    /// Every flagged exposure, by time.
    pub flags: Vec<HoldFlag>,
    /// Releases of the symbol's currencies (medium or high importance) inside the window.
    pub events: Vec<EconomicEvent>,
    /// Market closures held through (weekends, breaks of 2 h or more), from the symbol's weekly sessions.
    pub gaps: Vec<GapOut>,
    /// Public holidays of the symbol's currencies overlapping the window (calendar events of category `holiday`): thin liquidity, gaps.
    pub holidays: Vec<EconomicEvent>,
    /// Swap over the window.
    pub swap: HoldSwapOut,
    /// Where the events come from: `terminal` or `server`.
    pub calendar_source: CalendarSource,
    /// Whether a calendar was read; without one the level is at least `medium` (verdict at least `caution`).
    pub calendar_available: bool,
    /// Why the terminal's calendar was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calendar_note: Option<String>,
    /// Caveats: a `volume` the symbol cannot trade (below its minimum, above its maximum, off its step; the swap
    /// is computed for it all the same).
    pub warnings: Vec<String>,
}

async fn holding_risk(ctx: ToolContext, input: HoldingRiskInput) -> Result<HoldingRiskOutput, ToolError> {
    check_symbol(&input.symbol)?;
    let hours = input.hold_hours.unwrap_or(24);
    if !(1..=MAX_HOLD_HOURS).contains(&hours) {
        return Err(ToolError::InvalidInput(format!(
            "`hold_hours` must be between 1 and {MAX_HOLD_HOURS}, got {hours}"
        )));
    }
    let volume = input.volume.unwrap_or(1.0);
    if !(volume.is_finite() && volume > 0.0) {
        return Err(ToolError::InvalidInput(
            "`volume` must be a positive number of lots".into(),
        ));
    }
    let (spec, tick, account) = try_join3(ctx.spec(&input.symbol), ctx.tick(&input.symbol), ctx.account()).await?;
    let volume_note = volume_warning(&spec, volume);
    let currencies = currencies_of(&spec);
    if currencies.is_empty() {
        return Err(ToolError::InvalidInput(format!(
            "`{}` has no ISO currency to check events for",
            input.symbol
        )));
    }
    let from = ctx.now_ms;
    let until = from + i64::from(hours) * 3_600_000;
    // From a day earlier: a holiday that began before now still covers it.
    let (calendar_source, events, calendar_note) = events_between(&ctx, from - DAY_MS, until, &currencies).await?;
    let closures = holding::closures(&spec.sessions, from, until);
    let rate = swap_rate(&ctx, &spec, &tick, &account).await;
    let days = u32::try_from((until - from).div_euclid(DAY_MS) + 2)
        .unwrap_or(u32::MAX)
        .min(366);
    let calendar = costs::swap_calendar(
        &spec,
        Some(&tick),
        rate,
        from,
        SwapCalendarParams {
            volume,
            days,
            rollover_ms_of_day: ROLLOVER_HOUR_UTC * 3_600_000,
        },
    )
    .map_err(core_err)?;
    let inside: Vec<&costs::Rollover> = calendar.rollovers.iter().filter(|r| r.time < until).collect();
    let rollovers: Vec<(UnixMs, bool)> = inside.iter().map(|r| (r.time, r.triple)).collect();
    let risk = holding::holding_risk(&events, &currencies, from, until, &closures, &rollovers).map_err(core_err)?;
    let sum = |f: fn(&costs::Rollover) -> Option<f64>| -> Option<f64> { inside.iter().map(|r| f(r)).sum() };
    let (long, short) = (sum(|r| r.long), sum(|r| r.short));
    let swap = HoldSwapOut {
        rollovers: inside.len(),
        nights: inside.iter().map(|r| u32::from(r.nights)).sum(),
        long: (input.side != Some(Side::Sell)).then_some(long).flatten(),
        short: (input.side != Some(Side::Buy)).then_some(short).flatten(),
        note: calendar.unsupported.clone(),
    };
    let mut flags: Vec<(UnixMs, HoldFlag)> = Vec::new();
    for event in &risk.events {
        flags.push((
            event.time,
            HoldFlag {
                kind: "event_landing",
                time: event.time,
                detail: format!(
                    "{} {} ({} importance)",
                    event.currency,
                    event.name,
                    if event.importance == Importance::High {
                        "high"
                    } else {
                        "medium"
                    }
                ),
            },
        ));
    }
    for gap in &risk.gaps {
        flags.push((
            gap.start,
            HoldFlag {
                kind: if gap.weekend { "weekend_gap" } else { "market_break" },
                time: gap.start,
                detail: format!(
                    "market closed until {} ({:.1} h): the price can gap at the reopen",
                    to_iso(gap.end),
                    (gap.end - gap.start) as f64 / 3_600_000.0
                ),
            },
        ));
    }
    for day_off in &risk.holidays {
        flags.push((
            day_off.time,
            HoldFlag {
                kind: "holiday",
                time: day_off.time,
                detail: format!(
                    "{} holiday ({}): banks closed, thin liquidity, the price can gap",
                    day_off.currency, day_off.name
                ),
            },
        ));
    }
    for triple in &risk.triple_swaps {
        flags.push((
            *triple,
            HoldFlag {
                kind: "triple_swap",
                time: *triple,
                detail: "triple-swap rollover: three nights of swap are charged".into(),
            },
        ));
    }
    flags.sort_by_key(|(triple, _)| *triple);
    let mut level = risk.level;
    if calendar_source == CalendarSource::None {
        // Unknown events are not no events.
        level = level.max(RiskLevel::Medium);
    }
    Ok(HoldingRiskOutput {
        symbol: input.symbol,
        currencies,
        from,
        until,
        verdict: level.verdict(risk.high_release_lands()),
        level,
        flags: flags.into_iter().map(|(_, f)| f).collect(),
        events: risk.events,
        gaps: risk
            .gaps
            .iter()
            .map(|gap| GapOut {
                start: gap.start,
                end: gap.end,
                hours: (gap.end - gap.start) as f64 / 3_600_000.0,
                weekend: gap.weekend,
            })
            .collect(),
        holidays: risk.holidays,
        swap,
        calendar_source,
        calendar_available: calendar_source.is_available(),
        calendar_note,
        warnings: volume_note.into_iter().collect(),
    })
}

// ================================================================ get_event_sensitivity

/// Input of `get_event_sensitivity`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventSensitivityInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Only releases whose name contains this text (case-insensitive), e.g. `Payrolls`.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_NAME_FRAGMENT), pattern(r"\S"))]
    pub name_contains: Option<String>,
    /// Only releases of these currencies (default: the symbol's currencies; at most 20).
    #[serde(default)]
    #[schemars(inner(pattern(crate::schema::CURRENCY_PATTERN)), length(max = crate::events::MAX_CURRENCIES))]
    pub currencies: Vec<String>,
    /// Only releases of at least this importance (default `high`).
    #[serde(default)]
    pub min_importance: Option<Importance>,
    /// How far back to look, days (1-366, default 90).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_LOOKBACK_DAYS))]
    pub lookback_days: Option<u32>,
    /// Bars to measure on: M1, M5, M15 (default), M30 or H1.
    #[serde(default)]
    #[schemars(schema_with = "sensitivity_timeframe")]
    pub timeframe: Option<Timeframe>,
    /// Reaction window after each release, minutes (at least one bar, at most 1440; default 60).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_WINDOW_MINUTES))]
    pub window_minutes: Option<u32>,
}

/// How the price moved around one release.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReactionOut {
    /// The release.
    pub event: EconomicEvent,
    /// Close of the last bar closed at or before the release.
    pub price_before: f64,
    /// Close of the last bar closed at or before the end of the window.
    pub price_after: f64,
    /// `price_after − price_before`, in points.
    pub change_points: f64,
    /// High minus low of the bars inside the window, in points.
    pub range_points: f64,
    /// `actual − forecast` when both are known.
    pub surprise: Option<f64>,
}

/// Output of `get_event_sensitivity`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EventSensitivityOutput {
    /// Instrument.
    pub symbol: String,
    /// Bars measured on.
    pub timeframe: Timeframe,
    /// Reaction window, minutes.
    pub window_minutes: u32,
    /// Start of the look-back (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// End of the look-back (ISO 8601): the time of the symbol's latest quote, the terminal's clock, which the
    /// bars follow.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Releases that matched the filters (the latest 200 at most).
    pub releases: usize,
    /// Releases skipped: the market was closed or bars were missing around them.
    pub skipped: usize,
    /// One reaction per measured release, oldest first.
    pub reactions: Vec<ReactionOut>,
    /// Median absolute change over the reactions, points.
    pub median_abs_change_points: Option<f64>,
    /// Median absolute change over the same window at quiet times (no matching release nearby), points.
    pub baseline_abs_change_points: Option<f64>,
    /// How many times the usual move the releases cause (`median / baseline`).
    pub ratio: Option<f64>,
    /// Quiet-time windows the baseline used.
    pub baseline_samples: usize,
    /// Where the events come from.
    pub calendar_source: CalendarSource,
    /// Why the terminal's calendar was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calendar_note: Option<String>,
}

/// End of the look-back of `get_event_sensitivity`: the time of the
/// symbol's latest quote. The bars are the terminal's, up to its own clock,
/// which need not agree with the server's (a simulated terminal replays a
/// past week, a real one drifts or sits behind a closed market): a window
/// ending at the server's now asked for bars the terminal does not have yet,
/// past its clock (`from` after `to`). A quote without a usable time falls
/// back to the server's clock.
fn lookback_end(quote_time: UnixMs, server_now: UnixMs) -> UnixMs {
    if quote_time > 0 { quote_time } else { server_now }
}

async fn event_sensitivity(
    ctx: ToolContext,
    input: EventSensitivityInput,
) -> Result<EventSensitivityOutput, ToolError> {
    check_symbol(&input.symbol)?;
    let timeframe = input.timeframe.unwrap_or(Timeframe::M15);
    if !SENSITIVITY_TIMEFRAMES.contains(&timeframe) {
        return Err(ToolError::InvalidInput(
            "`timeframe` must be M1, M5, M15, M30 or H1".into(),
        ));
    }
    let days = input.lookback_days.unwrap_or(90);
    if !(1..=MAX_LOOKBACK_DAYS).contains(&days) {
        return Err(ToolError::InvalidInput(format!(
            "`lookback_days` must be between 1 and {MAX_LOOKBACK_DAYS}, got {days}"
        )));
    }
    let window = input.window_minutes.unwrap_or(60);
    let bar_ms = timeframe.duration_ms();
    if !(1..=MAX_WINDOW_MINUTES).contains(&window) {
        return Err(ToolError::InvalidInput(format!(
            "`window_minutes` must be between 1 and {MAX_WINDOW_MINUTES}, got {window}"
        )));
    }
    // A window shorter than one bar is one bar.
    let window_ms = (i64::from(window) * 60_000).max(bar_ms);
    // A look-back needing more than MAX_SENSITIVITY_BARS bars of the
    // timeframe is cut to the days those bars cover (`from` says where it
    // starts): not an error, since the schema cannot tie days to timeframes.
    let max_days = u32::try_from(((MAX_SENSITIVITY_BARS * bar_ms - DAY_MS) / DAY_MS).max(1)).unwrap_or(u32::MAX);
    let days = days.min(max_days);
    if let Some(fragment) = &input.name_contains
        && (fragment.trim().is_empty() || fragment.chars().count() > MAX_NAME_FRAGMENT)
    {
        return Err(ToolError::InvalidInput(
            "`name_contains` must be 1-100 characters".into(),
        ));
    }
    if input.currencies.len() > crate::events::MAX_CURRENCIES {
        return Err(ToolError::InvalidInput(format!(
            "`currencies` may list at most {} codes",
            crate::events::MAX_CURRENCIES
        )));
    }
    let mut currencies = Vec::with_capacity(input.currencies.len());
    for currency in &input.currencies {
        if !is_currency(currency) {
            return Err(ToolError::InvalidInput(format!(
                "invalid currency `{}`: use a 3-letter ISO code such as USD",
                currency.chars().take(40).collect::<String>()
            )));
        }
        currencies.push(currency.to_ascii_uppercase());
    }
    let (spec, tick) = try_join(ctx.spec(&input.symbol), ctx.tick(&input.symbol)).await?;
    if currencies.is_empty() {
        currencies = currencies_of(&spec);
    }
    if currencies.is_empty() {
        return Err(ToolError::InvalidInput(format!(
            "`{}` has no ISO currency: give `currencies`",
            input.symbol
        )));
    }
    let now = lookback_end(tick.time, ctx.now_ms);
    let from = now - i64::from(days) * DAY_MS;
    let (calendar_source, events, calendar_note) = events_between(&ctx, from, now, &currencies).await?;
    let min_importance = input.min_importance.unwrap_or(Importance::High);
    let needle = input.name_contains.as_deref().map(str::to_lowercase);
    let mut matching: Vec<EconomicEvent> = events
        .into_iter()
        .filter(|e| e.time < now && e.importance >= min_importance)
        .filter(|e| {
            currencies
                .iter()
                .any(|currency| currency.eq_ignore_ascii_case(&e.currency))
        })
        .filter(|e| {
            needle
                .as_ref()
                .is_none_or(|fragment| e.name.to_lowercase().contains(fragment))
        })
        .collect();
    matching.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    matching.dedup_by(|a, b| a.id == b.id);
    if matching.len() > MAX_RELEASES {
        matching.drain(..matching.len() - MAX_RELEASES);
    }
    let bars = fetch_bars(&ctx, &input.symbol, timeframe, None, Some(from - DAY_MS), Some(now)).await?;
    let sensitivity = holding::event_sensitivity(&bars, bar_ms, &matching, window_ms).map_err(core_err)?;
    let point = if spec.point.is_finite() && spec.point > 0.0 {
        spec.point
    } else {
        1.0
    };
    Ok(EventSensitivityOutput {
        symbol: input.symbol,
        timeframe,
        window_minutes: u32::try_from(window_ms / 60_000).unwrap_or(window),
        from,
        to: now,
        releases: matching.len(),
        skipped: sensitivity.skipped,
        reactions: sensitivity
            .reactions
            .into_iter()
            .map(|r| ReactionOut {
                price_before: r.price_before,
                price_after: r.price_after,
                change_points: r.change / point,
                range_points: r.range / point,
                surprise: r.event.actual.zip(r.event.forecast).map(|(a, f)| a - f),
                event: r.event,
            })
            .collect(),
        median_abs_change_points: sensitivity.median_abs_change.map(|v| v / point),
        baseline_abs_change_points: sensitivity.baseline_abs_change.map(|v| v / point),
        ratio: sensitivity.ratio,
        baseline_samples: sensitivity.baseline_samples,
        calendar_source,
        calendar_note,
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_holding_risk",
            title: "Holding risk",
            description: "What a position in a symbol held from now for `hold_hours` (default 24, at most 744) is exposed to: releases of its currencies landing in the window, market closures it would be held through (weekend gaps, breaks of 2 h or more, from the symbol's sessions), public holidays of its currencies from the calendar (thin liquidity, gaps), triple-swap rollovers, and the swap over the window. Verdict `proceed|caution|block` (level `low|medium|high` beside it) with every flag listed; without any calendar at least `caution`.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(holding_risk),
        ToolSpec {
            name: "get_event_sensitivity",
            title: "Event sensitivity",
            description: "How a symbol reacted to past economic releases of its currencies (or given ones): per release, the price change and range over a window after it (default 60 min, on M15 bars, over the last 90 days), and how many times the usual quiet-time move that is (`ratio`). Filter by name (`Payrolls`), importance and currency.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(event_sensitivity),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookback_ends_at_the_terminals_clock() {
        let server = 1_795_800_000_000;
        // A terminal nine days behind the server (or ahead): its quote time.
        assert_eq!(lookback_end(server - 9 * DAY_MS, server), server - 9 * DAY_MS);
        assert_eq!(lookback_end(server + 60_000, server), server + 60_000);
        assert_eq!(lookback_end(0, server), server);
    }
}
