//! `get_risk_regime`: the composite risk-on/risk-off score of what the terminal offers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Timeframe;
use tradeterm_core::macro_context::{self as mc, MomentumScore, RiskComponent, RiskTone};
use tradeterm_core::time::{UnixMs, iso};

use super::{
    EQUITY_CANDIDATES, FRANC_CANDIDATES, GOLD_CANDIDATES, ResolvedBy, VIX_CANDIDATES, YEN_CANDIDATES, bars_or_reason,
    check_explicit, core_err, in_range, resolve, terminal_symbols,
};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// `lookback`: (default, minimum, maximum).
const LOOKBACK: (u32, u32, u32) = (20, 5, 500);
/// Explicit symbols of the risk-regime components.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegimeSymbols {
    /// Equity index (default: the first of US500, SPX500, SP500, SPX, US500.cash the terminal offers).
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub equities: Option<String>,
    /// VIX (default: the first of VIX, VIX.F, VOLX, VIXX).
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub vix: Option<String>,
    /// USDJPY (default `USDJPY`).
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub yen: Option<String>,
    /// USDCHF (default `USDCHF`).
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub franc: Option<String>,
    /// Gold (default: XAUUSD or GOLD).
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub gold: Option<String>,
}

/// Input of `get_risk_regime`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskRegimeInput {
    /// Timeframe of the momentum bars: M1, M5, M15, M30, H1, H4, D1, W1 or MN1 (default D1).
    #[serde(default)]
    pub timeframe: Option<Timeframe>,
    /// Closed bars of momentum per component (5-500, default 20); the forming bar is never used.
    #[serde(default)]
    #[schemars(range(min = LOOKBACK.1, max = LOOKBACK.2))]
    pub lookback: Option<u32>,
    /// Terminal symbols to use instead of the default candidate names, per component.
    #[serde(default, deserialize_with = "crate::schema::object")]
    pub symbols: RegimeSymbols,
}

/// One component of the risk regime.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RegimeComponentOut {
    /// `equities`, `vix`, `yen`, `franc` or `gold`.
    pub component: RiskComponent,
    /// Nominal weight (the weights of all five sum to 1).
    pub weight: f64,
    /// Whether it entered the score; when false `score` is `null` and its weight is left out.
    pub available: bool,
    /// Terminal symbol read.
    pub symbol: Option<String>,
    /// `explicit` or `candidate`.
    pub resolved_by: Option<ResolvedBy>,
    /// Score in [-1, 1], positive = risk-on.
    pub score: Option<f64>,
    /// Momentum details (all but `vix`): `score = sign * clamp(z / 2, -1, 1)`.
    pub momentum: Option<MomentumScore>,
    /// Level read (`vix` only): the latest close; `score = clamp((20 - level) / 10, -1, 1)`.
    pub level: Option<f64>,
    /// Closed bars used.
    pub bars: usize,
    /// Open time of the first bar used (ISO 8601 UTC).
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub from: Option<UnixMs>,
    /// Open time of the last bar used (ISO 8601 UTC).
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub to: Option<UnixMs>,
    /// Why it is unavailable.
    pub reason: Option<String>,
}

/// Output of `get_risk_regime`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RiskRegimeOutput {
    /// When it was computed (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
    /// Timeframe of the momentum bars.
    pub timeframe: Timeframe,
    /// Closed bars of momentum requested per component.
    pub lookback: u32,
    /// `Σ wᵢ sᵢ / Σ wᵢ` over the available components, in [-1, 1]; `null` when none is available.
    pub score: Option<f64>,
    /// `risk_on` (score >= 0.25), `risk_off` (<= -0.25), `neutral`, or `unknown` (coverage < 0.30).
    pub regime: RiskTone,
    /// Sum of the weights of the available components, in [0, 1].
    pub coverage: f64,
    /// Every component, available or not.
    pub components: Vec<RegimeComponentOut>,
    /// Components left out.
    pub missing: Vec<RiskComponent>,
}

async fn handle(ctx: ToolContext, input: RiskRegimeInput) -> Result<RiskRegimeOutput, ToolError> {
    let named = &input.symbols;
    for (field, value) in [
        ("symbols.equities", &named.equities),
        ("symbols.vix", &named.vix),
        ("symbols.yen", &named.yen),
        ("symbols.franc", &named.franc),
        ("symbols.gold", &named.gold),
    ] {
        check_explicit(field, value)?;
    }
    let timeframe = input.timeframe.unwrap_or(Timeframe::D1);
    let lookback = in_range("lookback", input.lookback, LOOKBACK.0, LOOKBACK.1, LOOKBACK.2)?;
    let symbols = terminal_symbols(&ctx).await?;
    let mut components = Vec::new();
    for part in RiskComponent::ALL {
        let (explicit, candidates) = match part {
            RiskComponent::Equities => (&named.equities, EQUITY_CANDIDATES),
            RiskComponent::Vix => (&named.vix, VIX_CANDIDATES),
            RiskComponent::Yen => (&named.yen, YEN_CANDIDATES),
            RiskComponent::Franc => (&named.franc, FRANC_CANDIDATES),
            RiskComponent::Gold => (&named.gold, GOLD_CANDIDATES),
        };
        let resolution = resolve(explicit.as_deref(), candidates, &symbols);
        let mut out = RegimeComponentOut {
            component: part,
            weight: part.weight(),
            available: false,
            symbol: resolution.symbol.clone(),
            resolved_by: resolution.by,
            score: None,
            momentum: None,
            level: None,
            bars: 0,
            from: None,
            to: None,
            reason: resolution.reason,
        };
        if let Some(sym) = &resolution.symbol {
            let count = if part == RiskComponent::Vix { 1 } else { lookback + 2 };
            match bars_or_reason(&ctx, sym, timeframe, count).await? {
                Err(why) => out.reason = Some(why),
                Ok(bars) if part == RiskComponent::Vix => {
                    let last = &bars[bars.len() - 1];
                    match mc::vix_score(last.close) {
                        Ok(score) => {
                            out.available = true;
                            out.score = Some(score);
                            out.level = Some(last.close);
                            out.bars = 1;
                            out.from = Some(last.time);
                            out.to = Some(last.time);
                        }
                        Err(e) => out.reason = Some(e.to_string()),
                    }
                }
                Ok(mut bars) => {
                    // The last bar may be forming: never used.
                    bars.pop();
                    let start = bars.len().saturating_sub(lookback as usize + 1);
                    let used = &bars[start..];
                    let closes: Vec<f64> = used.iter().map(|b| b.close).collect();
                    match mc::momentum(&closes, part.sign()) {
                        Ok(m) => {
                            out.available = true;
                            out.score = Some(m.score);
                            out.momentum = Some(m);
                            out.bars = used.len();
                            out.from = used.first().map(|b| b.time);
                            out.to = used.last().map(|b| b.time);
                        }
                        Err(e) => {
                            out.reason = Some(format!("{} closed bars of `{sym}`: {e}", used.len()));
                        }
                    }
                }
            }
        }
        components.push(out);
    }
    let parts: Vec<(f64, Option<f64>)> = components.iter().map(|part| (part.weight, part.score)).collect();
    let comp = mc::composite(&parts).map_err(core_err)?;
    Ok(RiskRegimeOutput {
        as_of: ctx.now_ms,
        timeframe,
        lookback,
        score: comp.score,
        regime: comp.regime,
        coverage: comp.coverage,
        missing: components
            .iter()
            .filter(|part| !part.available)
            .map(|part| part.component)
            .collect(),
        components,
    })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_risk_regime",
        title: "Risk regime",
        description: "Composite risk-on/risk-off score in [-1, 1] from what the terminal offers: equity-index momentum (US500, weight 0.35), VIX level (0.25), yen (USDJPY, 0.15), franc (USDCHF, 0.10) and gold (XAUUSD, 0.15) momentum over closed bars. Every component is listed with its weight, score and whether it was available; missing ones are left out and the weights renormalised, with `coverage` = the weight present. Regime: risk_on >= 0.25, risk_off <= -0.25, neutral between, unknown when coverage < 0.30.",
        capability: Capability::Analytics,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
