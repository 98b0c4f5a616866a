//! `get_rate_expectations`: G10 policy rates and next meetings from the calendar.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::macro_context::{self as mc, RateDecision, RateSource};
use tradeterm_core::time::{DAY_MS, UnixMs, iso};

use super::{core_err, fetch_calendar, g10, in_range, parse_currencies};
use crate::events::{CalendarSource, SourcePreference};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// `horizon_days`: (default, minimum, maximum).
const HORIZON_DAYS: (u32, u32, u32) = (180, 1, 366);
/// How rate expectations were derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateDataQuality {
    /// From a market-implied source (OIS or rate futures). No terminal offers one today, so never returned yet.
    #[expect(
        dead_code,
        reason = "reserved for a market-implied source; listed so clients know the values"
    )]
    Implied,
    /// From the economic calendar only: meeting dates, decided rates and survey forecasts; no probabilities.
    CalendarOnly,
}

/// Input of `get_rate_expectations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateExpectationsInput {
    /// G10 currencies whose central banks to report (USD, EUR, GBP, JPY, CHF, CAD, AUD, NZD, SEK, NOK); default all ten.
    #[serde(default)]
    #[schemars(schema_with = "super::g10_currencies")]
    pub currencies: Vec<String>,
    /// Days ahead to look for the next meeting (1-366, default 180).
    #[serde(default)]
    #[schemars(range(min = HORIZON_DAYS.1, max = HORIZON_DAYS.2))]
    pub horizon_days: Option<u32>,
    /// `auto` (default): the terminal's calendar, else the server's; `terminal` or `server` to insist on one.
    #[serde(default)]
    pub source: SourcePreference,
}

/// Rate expectations of one central bank.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BankRatesOut {
    /// Currency.
    pub currency: String,
    /// Central bank.
    pub bank: String,
    /// Always `calendar_only` today (no market-implied source): no probabilities.
    pub data_quality: RateDataQuality,
    /// Current policy rate, percent (`null` when the calendar has no decision of this bank).
    pub current_rate: Option<f64>,
    /// `last_decision_actual` or `decision_previous`.
    pub current_rate_source: Option<RateSource>,
    /// Last released decision (within the past 366 days).
    pub last_decision: Option<RateDecision>,
    /// Next scheduled decision within the horizon.
    pub next_meeting: Option<RateDecision>,
    /// A decision whose time has passed but whose result the calendar does not have yet: the current rate may be stale.
    pub pending_decision: Option<RateDecision>,
    /// Next meeting's consensus forecast minus the current rate: a survey, not a probability.
    pub consensus_change: Option<f64>,
    /// What the calendar could not tell (`current_rate`, `last_decision`, `next_meeting`, `consensus`).
    pub missing: Vec<String>,
}

/// Output of `get_rate_expectations`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RateExpectationsOutput {
    /// When it was computed (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
    /// `calendar_only`: the terminal offers no OIS or rate-futures prices, so no meeting probability is given.
    pub data_quality: RateDataQuality,
    /// Where the calendar came from: `terminal`, `server` or `none`.
    pub source: CalendarSource,
    /// Why the terminal's calendar was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// One entry per central bank, in the order asked.
    pub banks: Vec<BankRatesOut>,
}

async fn handle(ctx: ToolContext, input: RateExpectationsInput) -> Result<RateExpectationsOutput, ToolError> {
    let currencies = parse_currencies(&input.currencies, &g10(), true)?;
    let horizon = in_range(
        "horizon_days",
        input.horizon_days,
        HORIZON_DAYS.0,
        HORIZON_DAYS.1,
        HORIZON_DAYS.2,
    )?;
    let now = ctx.now_ms;
    let (source, events, note) = fetch_calendar(
        &ctx,
        now - 366 * DAY_MS,
        now + i64::from(horizon) * DAY_MS,
        &currencies,
        input.source,
    )
    .await?;
    let mut banks = Vec::new();
    for code in &currencies {
        let expectation = mc::rate_expectation(&events, code, now).map_err(core_err)?;
        banks.push(BankRatesOut {
            currency: expectation.currency,
            bank: expectation.bank,
            data_quality: RateDataQuality::CalendarOnly,
            current_rate: expectation.current_rate,
            current_rate_source: expectation.current_rate_source,
            last_decision: expectation.last_decision,
            next_meeting: expectation.next_meeting,
            pending_decision: expectation.pending_decision,
            consensus_change: expectation.consensus_change,
            missing: expectation.missing,
        });
    }
    Ok(RateExpectationsOutput {
        as_of: now,
        data_quality: RateDataQuality::CalendarOnly,
        source,
        note,
        banks,
    })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_rate_expectations",
        title: "Rate expectations (G10)",
        description: "For G10 central banks: the current policy rate (last released decision in the calendar), the last decision and the next scheduled meeting with the calendar's consensus forecast. `data_quality` is `calendar_only` because no market-implied source (OIS or rate futures) is available on the terminal: no probabilities are given, ever invented. Anything the calendar lacks is listed in `missing`.",
        capability: Capability::Analytics,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
