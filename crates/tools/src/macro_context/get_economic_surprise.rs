//! `get_economic_surprise`: per currency, releases against forecasts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::macro_context::{self as mc, SurpriseConfig, SurpriseIndex};
use tradeterm_core::time::{DAY_MS, UnixMs, iso};

use super::{DEFAULT_SURPRISE_CURRENCIES, core_err, fetch_calendar, in_range, parse_currencies};
use crate::events::{CalendarSource, SourcePreference};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// `half_life_days`: (default, minimum, maximum).
const HALF_LIFE_DAYS: (u32, u32, u32) = (30, 1, 365);
/// `lookback_days`: (default, minimum, maximum).
const LOOKBACK_DAYS: (u32, u32, u32) = (90, 7, 366);
/// Input of `get_economic_surprise`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SurpriseInput {
    /// Currencies (ISO codes, at most 10); default USD, EUR, GBP, JPY, CHF, CAD, AUD, NZD.
    #[serde(default)]
    #[schemars(inner(pattern(crate::schema::CURRENCY_PATTERN)), length(max = super::MAX_CURRENCY_CODES))]
    pub currencies: Vec<String>,
    /// Days of releases before now (7-366, default 90).
    #[serde(default)]
    #[schemars(range(min = LOOKBACK_DAYS.1, max = LOOKBACK_DAYS.2))]
    pub lookback_days: Option<u32>,
    /// Half-life of the time decay in days (1-365, default 30).
    #[serde(default)]
    #[schemars(range(min = HALF_LIFE_DAYS.1, max = HALF_LIFE_DAYS.2))]
    pub half_life_days: Option<u32>,
    /// `auto` (default): the terminal's calendar, else the server's; `terminal` or `server` to insist on one.
    #[serde(default)]
    pub source: SourcePreference,
}

/// Output of `get_economic_surprise`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SurpriseOutput {
    /// When it was computed (ISO 8601 UTC): releases up to this time count.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
    /// Start of the window (ISO 8601 UTC, inclusive).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// End of the window (ISO 8601 UTC, exclusive; = `as_of`).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Half-life of the decay, days.
    pub half_life_days: u32,
    /// Where the calendar came from: `terminal`, `server` or `none`.
    pub source: CalendarSource,
    /// Why the terminal's calendar was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// One index per currency, in the order asked.
    pub currencies: Vec<SurpriseIndex>,
}

async fn handle(ctx: ToolContext, input: SurpriseInput) -> Result<SurpriseOutput, ToolError> {
    let currencies = parse_currencies(&input.currencies, DEFAULT_SURPRISE_CURRENCIES, false)?;
    let lookback = in_range(
        "lookback_days",
        input.lookback_days,
        LOOKBACK_DAYS.0,
        LOOKBACK_DAYS.1,
        LOOKBACK_DAYS.2,
    )?;
    let half_life = in_range(
        "half_life_days",
        input.half_life_days,
        HALF_LIFE_DAYS.0,
        HALF_LIFE_DAYS.1,
        HALF_LIFE_DAYS.2,
    )?;
    let to = ctx.now_ms;
    let from = to - i64::from(lookback) * DAY_MS;
    let (source, events, note) = fetch_calendar(&ctx, from, to, &currencies, input.source).await?;
    let cfg = SurpriseConfig {
        half_life_days: f64::from(half_life),
        ..SurpriseConfig::default()
    };
    let mut out = Vec::new();
    for currency in &currencies {
        out.push(mc::surprise_index(&events, currency, to, &cfg).map_err(core_err)?);
    }
    Ok(SurpriseOutput {
        as_of: to,
        from,
        to,
        half_life_days: half_life,
        source,
        note,
        currencies: out,
    })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_economic_surprise",
        title: "Economic surprise index",
        description: "Per currency, how economic releases came in against forecasts over a lookback (default 90 days): each released event with actual and forecast gives a standardised surprise (actual - forecast) / RMS of its series' surprises, capped at ±3 and signed so that better than expected is positive (inverted for unemployment and jobless claims; central-bank decisions and unclear categories skipped), weighted by importance (1 / 0.6 / 0.3) and an exponential time decay (half-life 30 days). Returns the index, label, every component and every skipped event with its reason. Calendar from the terminal, else the server's.",
        capability: Capability::Analytics,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
