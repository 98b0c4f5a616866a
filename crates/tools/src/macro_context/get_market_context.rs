//! `get_market_context`: DXY, VIX and US10Y as the terminal quotes them, with a risk tone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::macro_context::{self as mc, ContextReading, RiskTone, ToneVote};
use tradeterm_core::time::{UnixMs, iso};

use super::{
    DXY_CANDIDATES, ResolvedBy, US10Y_CANDIDATES, VIX_CANDIDATES, bars_or_reason, check_explicit, core_err, in_range,
    resolve, terminal_symbols,
};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// `change_bars`: (default, minimum, maximum).
const CHANGE_BARS: (u32, u32, u32) = (5, 1, 250);
/// Input of `get_market_context`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketContextInput {
    /// Terminal symbol to read as the US dollar index; default: the first of DXY, USDX, DX, DOLLARINDEX the terminal offers.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub dxy: Option<String>,
    /// Terminal symbol to read as the VIX; default: the first of VIX, VIX.F, VOLX, VIXX the terminal offers.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub vix: Option<String>,
    /// Terminal symbol to read as the US 10-year yield; default: the first of US10Y, UST10Y, TNX, US10YR the terminal offers.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub us10y: Option<String>,
    /// Daily bars over which `change_pct` is measured (1-250, default 5).
    #[serde(default)]
    #[schemars(range(min = CHANGE_BARS.1, max = CHANGE_BARS.2))]
    pub change_bars: Option<u32>,
}

/// One market-context input.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextInputOut {
    /// `dxy`, `vix` or `us10y`.
    pub input: String,
    /// Whether the terminal offers it; when false every number below is `null` (never zero).
    pub available: bool,
    /// The terminal symbol read.
    pub symbol: Option<String>,
    /// `explicit` or `candidate`.
    pub resolved_by: Option<ResolvedBy>,
    /// Candidate names tried when no symbol was named.
    pub candidates: Vec<String>,
    /// Level: the close of the latest daily bar (it may still be forming).
    pub level: Option<f64>,
    /// Change of the level over `change_bars` daily bars, percent.
    pub change_pct: Option<f64>,
    /// Open time of the latest daily bar (ISO 8601 UTC).
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub bar_time: Option<UnixMs>,
    /// Why it is missing, or why it has no change.
    pub reason: Option<String>,
}

/// Output of `get_market_context`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MarketContextOutput {
    /// When it was computed (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
    /// Daily bars of the change.
    pub change_bars: u32,
    /// DXY, VIX and US10Y, in that order.
    pub inputs: Vec<ContextInputOut>,
    /// Inputs the terminal does not offer (`dxy`, `vix`, `us10y`).
    pub missing: Vec<String>,
    /// `risk_on`, `neutral`, `risk_off`, or `unknown` when neither VIX nor DXY (with a change) is available.
    pub risk_tone: RiskTone,
    /// Mean of the votes cast, in [-1, 1]; `null` when nothing voted.
    pub tone_score: Option<f64>,
    /// How each input voted, and why.
    pub votes: Vec<ToneVote>,
}

async fn handle(ctx: ToolContext, input: MarketContextInput) -> Result<MarketContextOutput, ToolError> {
    check_explicit("dxy", &input.dxy)?;
    check_explicit("vix", &input.vix)?;
    check_explicit("us10y", &input.us10y)?;
    let change_bars = in_range(
        "change_bars",
        input.change_bars,
        CHANGE_BARS.0,
        CHANGE_BARS.1,
        CHANGE_BARS.2,
    )?;
    let symbols = terminal_symbols(&ctx).await?;
    let specs = [
        ("dxy", input.dxy.as_deref(), DXY_CANDIDATES),
        ("vix", input.vix.as_deref(), VIX_CANDIDATES),
        ("us10y", input.us10y.as_deref(), US10Y_CANDIDATES),
    ];
    let mut inputs = Vec::new();
    let mut readings = Vec::new();
    for (name, explicit, candidates) in specs {
        let resolution = resolve(explicit, candidates, &symbols);
        let mut out = ContextInputOut {
            input: name.into(),
            available: false,
            symbol: resolution.symbol.clone(),
            resolved_by: resolution.by,
            candidates: if explicit.is_some() {
                Vec::new()
            } else {
                candidates.iter().map(|c| (*c).to_owned()).collect()
            },
            level: None,
            change_pct: None,
            bar_time: None,
            reason: resolution.reason,
        };
        let mut reading = None;
        if let Some(sym) = &resolution.symbol {
            match bars_or_reason(&ctx, sym, Timeframe::D1, change_bars + 1).await? {
                Err(why) => out.reason = Some(why),
                Ok(bars) => {
                    let closes: Vec<f64> = bars.iter().map(|b| b.close).collect();
                    let change = mc::change_pct(&closes, change_bars as usize).map_err(core_err)?;
                    let last = &bars[bars.len() - 1];
                    out.available = true;
                    out.level = Some(last.close);
                    out.change_pct = change;
                    out.bar_time = Some(last.time);
                    if change.is_none() {
                        out.reason = Some(format!("only {} daily bars: no change", bars.len()));
                    }
                    reading = Some(ContextReading {
                        level: last.close,
                        change_pct: change,
                    });
                }
            }
        }
        readings.push(reading);
        inputs.push(out);
    }
    let tone = mc::risk_tone(readings[0], readings[1], readings[2]).map_err(core_err)?;
    Ok(MarketContextOutput {
        as_of: ctx.now_ms,
        change_bars,
        missing: inputs
            .iter()
            .filter(|i| !i.available)
            .map(|i| i.input.clone())
            .collect(),
        inputs,
        risk_tone: tone.tone,
        tone_score: tone.score,
        votes: tone.votes,
    })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_market_context",
        title: "Market context (DXY, VIX, US10Y)",
        description: "Levels and recent changes of the US dollar index (DXY), the VIX and the US 10-year yield as the terminal quotes them, with a risk tone. Each input is resolved against the terminal's symbols from a list of usual names (DXY/USDX/DX, VIX/VIX.F/VOLX, US10Y/UST10Y/TNX) or from the symbol you name (`dxy`, `vix`, `us10y`; any terminal symbol is accepted). Inputs the terminal does not offer are listed in `missing` with null values, never zeroed; `risk_tone` is computed from the inputs present (VIX level/change, DXY change; US10Y never votes) and is `unknown` when neither VIX nor DXY is available.",
        capability: Capability::Analytics,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
