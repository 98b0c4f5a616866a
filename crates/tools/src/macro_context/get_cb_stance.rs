//! `get_cb_stance`: the hawk/dove score of G10 central banks from the calendar.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::macro_context::{self as mc, ScoredDecision, Stance, StanceConfig};
use tradeterm_core::time::{DAY_MS, UnixMs, iso};

use super::{core_err, fetch_calendar, g10, in_range, parse_currencies};
use crate::events::{CalendarSource, SourcePreference};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// `lookback_days`: (default, minimum, maximum).
const LOOKBACK_DAYS: (u32, u32, u32) = (365, 30, 366);
/// How a stance was derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StanceDataQuality {
    /// From the calendar's rate decisions and inflation releases only (no text analysis of statements).
    CalendarDerived,
}

/// Input of `get_cb_stance`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CbStanceInput {
    /// G10 currencies whose central banks to score; default all ten.
    #[serde(default)]
    #[schemars(schema_with = "super::g10_currencies")]
    pub currencies: Vec<String>,
    /// Days of decisions and inflation releases before now (30-366, default 365).
    #[serde(default)]
    #[schemars(range(min = LOOKBACK_DAYS.1, max = LOOKBACK_DAYS.2))]
    pub lookback_days: Option<u32>,
    /// `auto` (default): the terminal's calendar, else the server's; `terminal` or `server` to insist on one.
    #[serde(default)]
    pub source: SourcePreference,
}

/// The stance of one central bank.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BankStanceOut {
    /// Currency.
    pub currency: String,
    /// Central bank.
    pub bank: String,
    /// `calendar_derived`.
    pub data_quality: StanceDataQuality,
    /// Hawk/dove score in [-1, 1] (positive = hawkish); `null` without data.
    pub score: Option<f64>,
    /// `hawkish` (>= 0.2), `neutral`, `dovish` (<= -0.2) or `unknown` (no decision and no inflation release).
    pub stance: Stance,
    /// Decay-weighted mean of the decision scores (weight 0.7).
    pub rate_component: Option<f64>,
    /// `clamp(inflation surprise index / 2, -1, 1)` (weight 0.3).
    pub inflation_component: Option<f64>,
    /// Inflation surprise index (half-life 60 days).
    pub inflation_surprise_index: Option<f64>,
    /// Inflation releases used.
    pub inflation_events_used: usize,
    /// Released decisions, oldest first.
    pub decisions: Vec<ScoredDecision>,
}

/// Output of `get_cb_stance`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CbStanceOutput {
    /// When it was computed (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
    /// Start of the window (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// End of the window (= `as_of`).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// `calendar_derived`.
    pub data_quality: StanceDataQuality,
    /// Where the calendar came from: `terminal`, `server` or `none`.
    pub source: CalendarSource,
    /// Why the terminal's calendar was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// One entry per central bank, in the order asked.
    pub banks: Vec<BankStanceOut>,
}

async fn handle(ctx: ToolContext, input: CbStanceInput) -> Result<CbStanceOutput, ToolError> {
    let currencies = parse_currencies(&input.currencies, &g10(), true)?;
    let lookback = in_range(
        "lookback_days",
        input.lookback_days,
        LOOKBACK_DAYS.0,
        LOOKBACK_DAYS.1,
        LOOKBACK_DAYS.2,
    )?;
    let to = ctx.now_ms;
    let from = to - i64::from(lookback) * DAY_MS;
    let (source, events, note) = fetch_calendar(&ctx, from, to, &currencies, input.source).await?;
    let mut banks = Vec::new();
    for code in &currencies {
        let scored = mc::cb_stance(&events, code, to, &StanceConfig::default()).map_err(core_err)?;
        banks.push(BankStanceOut {
            currency: scored.currency,
            bank: scored.bank,
            data_quality: StanceDataQuality::CalendarDerived,
            score: scored.score,
            stance: scored.stance,
            rate_component: scored.rate_component,
            inflation_component: scored.inflation_component,
            inflation_surprise_index: scored.inflation.index,
            inflation_events_used: scored.inflation.events_used,
            decisions: scored.decisions,
        });
    }
    Ok(CbStanceOutput {
        as_of: to,
        from,
        to,
        data_quality: StanceDataQuality::CalendarDerived,
        source,
        note,
        banks,
    })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_cb_stance",
        title: "Central-bank stance",
        description: "Hawk/dove score in [-1, 1] per G10 central bank from the economic calendar (`data_quality: calendar_derived`, no text analysis): recent rate decisions (hike/hold/cut against the previous rate and the forecast, 90-day half-life, weight 0.7) and inflation surprises (weight 0.3). Stance hawkish >= 0.2, dovish <= -0.2, neutral between, unknown without data.",
        capability: Capability::Analytics,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
    // Calendar only: the server's answers when no terminal is connected.
    .terminal_optional()
}
