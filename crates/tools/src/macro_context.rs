//! Macro tools: `get_economic_surprise`, `get_rate_expectations`,
//! `get_cb_stance`, `get_market_context`, `get_risk_regime`.
//!
//! They read the terminal (symbol list, bars) and the economic calendar
//! (through [`crate::events::fetch_events`], in chunks of at most 31 days) and
//! compute with [`tradeterm_core::macro_context`]. Inputs a terminal does not
//! offer are listed as missing, never zeroed; no probability is ever
//! invented. Rules and formulas: `docs/macro.md`.

use futures_util::future::try_join_all;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::events::EconomicEvent;
use tradeterm_core::macro_context::{
    self as mc, ContextReading, MomentumScore, RateDecision, RateSource, RiskComponent, RiskTone, ScoredDecision,
    Stance, StanceConfig, SurpriseConfig, SurpriseIndex, ToneVote,
};
use tradeterm_core::time::{DAY_MS, UnixMs, iso};
use tradeterm_core::{Bar, CoreError, Timeframe};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::events::{CalendarSource, MAX_CALENDAR_DAYS, SourcePreference, fetch_events, is_currency};
use crate::market::{check_symbol, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Candidate symbol names of the US dollar index, tried in order.
pub const DXY_CANDIDATES: &[&str] = &["DXY", "USDX", "DX", "DOLLARINDEX"];
/// Candidate symbol names of the VIX.
pub const VIX_CANDIDATES: &[&str] = &["VIX", "VIX.F", "VOLX", "VIXX"];
/// Candidate symbol names of the US 10-year Treasury yield.
pub const US10Y_CANDIDATES: &[&str] = &["US10Y", "UST10Y", "TNX", "US10YR"];
/// Candidate symbol names of the equity index of the risk regime.
pub const EQUITY_CANDIDATES: &[&str] = &["US500", "SPX500", "SP500", "SPX", "US500.cash"];
/// Candidate symbol names of USDJPY.
pub const YEN_CANDIDATES: &[&str] = &["USDJPY"];
/// Candidate symbol names of USDCHF.
pub const FRANC_CANDIDATES: &[&str] = &["USDCHF"];
/// Candidate symbol names of gold.
pub const GOLD_CANDIDATES: &[&str] = &["XAUUSD", "GOLD"];

/// Default currencies of the surprise index.
const DEFAULT_SURPRISE_CURRENCIES: &[&str] = &["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD"];

fn core_err(e: CoreError) -> ToolError {
    match e {
        CoreError::InvalidParameter { name, reason } => ToolError::InvalidInput(format!("`{name}` {reason}")),
        other => ToolError::InvalidInput(other.to_string()),
    }
}

fn in_range(field: &str, v: Option<u32>, default: u32, min: u32, max: u32) -> Result<u32, ToolError> {
    let v = v.unwrap_or(default);
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(ToolError::InvalidInput(format!(
            "`{field}` must be between {min} and {max}"
        )))
    }
}

/// Symbols the terminal offers.
async fn terminal_symbols(ctx: &ToolContext) -> Result<Vec<String>, ToolError> {
    match ctx.run(Command::Symbols).await? {
        CommandResult::Symbols { symbols } => Ok(symbols),
        other => Err(unexpected("symbols", &other)),
    }
}

/// How an input was matched to a terminal symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    /// The caller named the symbol.
    Explicit,
    /// The first candidate name the terminal offers (exactly, or with a broker suffix after `.`, `#`, `_` or `-`).
    Candidate,
}

struct Resolution {
    symbol: Option<String>,
    by: Option<ResolvedBy>,
    reason: Option<String>,
}

fn check_explicit(field: &str, v: &Option<String>) -> Result<(), ToolError> {
    if let Some(s) = v {
        check_symbol(s).map_err(|e| ToolError::InvalidInput(format!("`{field}`: {e}")))?;
    }
    Ok(())
}

fn resolve(explicit: Option<&str>, candidates: &[&str], symbols: &[String]) -> Resolution {
    if let Some(s) = explicit {
        return match symbols.iter().find(|t| t.eq_ignore_ascii_case(s)) {
            Some(t) => Resolution {
                symbol: Some(t.clone()),
                by: Some(ResolvedBy::Explicit),
                reason: None,
            },
            None => Resolution {
                symbol: None,
                by: None,
                reason: Some(format!("the terminal does not offer `{s}`")),
            },
        };
    }
    for c in candidates {
        let hit = symbols.iter().find(|t| t.eq_ignore_ascii_case(c)).or_else(|| {
            symbols.iter().find(|t| {
                t.len() > c.len()
                    && t.is_char_boundary(c.len())
                    && t[..c.len()].eq_ignore_ascii_case(c)
                    && t[c.len()..].starts_with(['.', '#', '_', '-'])
            })
        });
        if let Some(t) = hit {
            return Resolution {
                symbol: Some(t.clone()),
                by: Some(ResolvedBy::Candidate),
                reason: None,
            };
        }
    }
    Resolution {
        symbol: None,
        by: None,
        reason: Some(format!(
            "the terminal offers none of {}; name a symbol explicitly",
            candidates.join(", ")
        )),
    }
}

/// Bars of a resolved symbol; a symbol the terminal refuses becomes a reason.
async fn bars_or_reason(
    ctx: &ToolContext,
    symbol: &str,
    tf: Timeframe,
    count: u32,
) -> Result<Result<Vec<Bar>, String>, ToolError> {
    match fetch_bars(ctx, symbol, tf, Some(count), None, None).await {
        Ok(b) if b.is_empty() => Ok(Err(format!(
            "the terminal returned no {} bars of `{symbol}`",
            tf.as_str()
        ))),
        Ok(b) => Ok(Ok(b)),
        Err(ToolError::NotFound(m) | ToolError::InvalidInput(m)) => Ok(Err(format!("`{symbol}`: {m}"))),
        Err(e) => Err(e),
    }
}

// ------------------------------------------------------------------ get_market_context

/// Input of `get_market_context`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketContextInput {
    /// Terminal symbol to read as the US dollar index; default: the first of DXY, USDX, DX, DOLLARINDEX the terminal offers.
    #[serde(default)]
    pub dxy: Option<String>,
    /// Terminal symbol to read as the VIX; default: the first of VIX, VIX.F, VOLX, VIXX the terminal offers.
    #[serde(default)]
    pub vix: Option<String>,
    /// Terminal symbol to read as the US 10-year yield; default: the first of US10Y, UST10Y, TNX, US10YR the terminal offers.
    #[serde(default)]
    pub us10y: Option<String>,
    /// Daily bars over which `change_pct` is measured (1-250, default 5).
    #[serde(default)]
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

async fn market_context(ctx: ToolContext, input: MarketContextInput) -> Result<MarketContextOutput, ToolError> {
    check_explicit("dxy", &input.dxy)?;
    check_explicit("vix", &input.vix)?;
    check_explicit("us10y", &input.us10y)?;
    let change_bars = in_range("change_bars", input.change_bars, 5, 1, 250)?;
    let symbols = terminal_symbols(&ctx).await?;
    let specs = [
        ("dxy", input.dxy.as_deref(), DXY_CANDIDATES),
        ("vix", input.vix.as_deref(), VIX_CANDIDATES),
        ("us10y", input.us10y.as_deref(), US10Y_CANDIDATES),
    ];
    let mut inputs = Vec::new();
    let mut readings = Vec::new();
    for (name, explicit, candidates) in specs {
        let r = resolve(explicit, candidates, &symbols);
        let mut out = ContextInputOut {
            input: name.into(),
            available: false,
            symbol: r.symbol.clone(),
            resolved_by: r.by,
            candidates: if explicit.is_some() {
                Vec::new()
            } else {
                candidates.iter().map(|c| (*c).to_owned()).collect()
            },
            level: None,
            change_pct: None,
            bar_time: None,
            reason: r.reason,
        };
        let mut reading = None;
        if let Some(sym) = &r.symbol {
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

// ------------------------------------------------------------------ get_risk_regime

/// Explicit symbols of the risk-regime components.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegimeSymbols {
    /// Equity index (default: the first of US500, SPX500, SP500, SPX, US500.cash the terminal offers).
    #[serde(default)]
    pub equities: Option<String>,
    /// VIX (default: the first of VIX, VIX.F, VOLX, VIXX).
    #[serde(default)]
    pub vix: Option<String>,
    /// USDJPY (default `USDJPY`).
    #[serde(default)]
    pub yen: Option<String>,
    /// USDCHF (default `USDCHF`).
    #[serde(default)]
    pub franc: Option<String>,
    /// Gold (default: XAUUSD or GOLD).
    #[serde(default)]
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
    pub lookback: Option<u32>,
    /// Terminal symbols to use instead of the default candidate names, per component.
    #[serde(default)]
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

async fn risk_regime(ctx: ToolContext, input: RiskRegimeInput) -> Result<RiskRegimeOutput, ToolError> {
    let s = &input.symbols;
    for (f, v) in [
        ("symbols.equities", &s.equities),
        ("symbols.vix", &s.vix),
        ("symbols.yen", &s.yen),
        ("symbols.franc", &s.franc),
        ("symbols.gold", &s.gold),
    ] {
        check_explicit(f, v)?;
    }
    let timeframe = input.timeframe.unwrap_or(Timeframe::D1);
    let lookback = in_range("lookback", input.lookback, 20, 5, 500)?;
    let symbols = terminal_symbols(&ctx).await?;
    let mut components = Vec::new();
    for c in RiskComponent::ALL {
        let (explicit, candidates) = match c {
            RiskComponent::Equities => (&s.equities, EQUITY_CANDIDATES),
            RiskComponent::Vix => (&s.vix, VIX_CANDIDATES),
            RiskComponent::Yen => (&s.yen, YEN_CANDIDATES),
            RiskComponent::Franc => (&s.franc, FRANC_CANDIDATES),
            RiskComponent::Gold => (&s.gold, GOLD_CANDIDATES),
        };
        let r = resolve(explicit.as_deref(), candidates, &symbols);
        let mut out = RegimeComponentOut {
            component: c,
            weight: c.weight(),
            available: false,
            symbol: r.symbol.clone(),
            resolved_by: r.by,
            score: None,
            momentum: None,
            level: None,
            bars: 0,
            from: None,
            to: None,
            reason: r.reason,
        };
        if let Some(sym) = &r.symbol {
            let count = if c == RiskComponent::Vix { 1 } else { lookback + 2 };
            match bars_or_reason(&ctx, sym, timeframe, count).await? {
                Err(why) => out.reason = Some(why),
                Ok(bars) if c == RiskComponent::Vix => {
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
                    match mc::momentum(&closes, c.sign()) {
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
    let parts: Vec<(f64, Option<f64>)> = components.iter().map(|c| (c.weight, c.score)).collect();
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
            .filter(|c| !c.available)
            .map(|c| c.component)
            .collect(),
        components,
    })
}

// ------------------------------------------------------------------ calendar helpers

/// The calendar of `[from, to)`, fetched in chunks of at most 31 days.
async fn fetch_calendar(
    ctx: &ToolContext,
    from: UnixMs,
    to: UnixMs,
    currencies: &[String],
    pref: SourcePreference,
) -> Result<(CalendarSource, Vec<EconomicEvent>, Option<String>), ToolError> {
    let mut ranges = Vec::new();
    let mut start = from;
    while start < to {
        let end = (start + MAX_CALENDAR_DAYS * DAY_MS).min(to);
        ranges.push((start, end));
        start = end;
    }
    let chunks = try_join_all(ranges.iter().map(|(f, t)| fetch_events(ctx, *f, *t, currencies, pref))).await?;
    let mut source = None;
    let mut note = None;
    let mut events = Vec::new();
    for (s, ev, n) in chunks {
        match source {
            None => source = Some(s),
            Some(prev) if prev != s => {
                return Err(ToolError::Dispatch(
                    "the calendar source changed during the request (the terminal connected or disconnected); retry"
                        .into(),
                ));
            }
            Some(_) => {}
        }
        note = note.or(n);
        events.extend(ev);
    }
    events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    events.dedup_by(|a, b| a.id == b.id);
    Ok((source.unwrap_or(CalendarSource::None), events, note))
}

fn parse_currencies(list: &[String], default: &[&str], g10_only: bool) -> Result<Vec<String>, ToolError> {
    if list.is_empty() {
        return Ok(default.iter().map(|c| (*c).to_owned()).collect());
    }
    if list.len() > 10 {
        return Err(ToolError::InvalidInput("`currencies` may list at most 10 codes".into()));
    }
    let mut out: Vec<String> = Vec::new();
    for c in list {
        if !is_currency(c) {
            return Err(ToolError::InvalidInput(format!(
                "invalid currency `{}`: use a 3-letter ISO code such as USD",
                c.chars().take(40).collect::<String>()
            )));
        }
        let c = c.to_ascii_uppercase();
        if g10_only && mc::central_bank(&c).is_none() {
            return Err(ToolError::InvalidInput(format!(
                "`{c}` is not a G10 currency (USD, EUR, GBP, JPY, CHF, CAD, AUD, NZD, SEK, NOK)"
            )));
        }
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

fn g10() -> Vec<&'static str> {
    mc::G10.iter().map(|(c, _)| *c).collect()
}

// ------------------------------------------------------------------ get_economic_surprise

/// Input of `get_economic_surprise`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SurpriseInput {
    /// Currencies (ISO codes, at most 10); default USD, EUR, GBP, JPY, CHF, CAD, AUD, NZD.
    #[serde(default)]
    pub currencies: Vec<String>,
    /// Days of releases before now (7-366, default 90).
    #[serde(default)]
    pub lookback_days: Option<u32>,
    /// Half-life of the time decay in days (1-365, default 30).
    #[serde(default)]
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

async fn economic_surprise(ctx: ToolContext, input: SurpriseInput) -> Result<SurpriseOutput, ToolError> {
    let currencies = parse_currencies(&input.currencies, DEFAULT_SURPRISE_CURRENCIES, false)?;
    let lookback = in_range("lookback_days", input.lookback_days, 90, 7, 366)?;
    let half_life = in_range("half_life_days", input.half_life_days, 30, 1, 365)?;
    let to = ctx.now_ms;
    let from = to - i64::from(lookback) * DAY_MS;
    let (source, events, note) = fetch_calendar(&ctx, from, to, &currencies, input.source).await?;
    let cfg = SurpriseConfig {
        half_life_days: f64::from(half_life),
        ..SurpriseConfig::default()
    };
    let mut out = Vec::new();
    for c in &currencies {
        out.push(mc::surprise_index(&events, c, to, &cfg).map_err(core_err)?);
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

// ------------------------------------------------------------------ get_rate_expectations

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
    pub currencies: Vec<String>,
    /// Days ahead to look for the next meeting (1-366, default 180).
    #[serde(default)]
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

async fn rate_expectations(
    ctx: ToolContext,
    input: RateExpectationsInput,
) -> Result<RateExpectationsOutput, ToolError> {
    let currencies = parse_currencies(&input.currencies, &g10(), true)?;
    let horizon = in_range("horizon_days", input.horizon_days, 180, 1, 366)?;
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
    for c in &currencies {
        let r = mc::rate_expectation(&events, c, now).map_err(core_err)?;
        banks.push(BankRatesOut {
            currency: r.currency,
            bank: r.bank,
            data_quality: RateDataQuality::CalendarOnly,
            current_rate: r.current_rate,
            current_rate_source: r.current_rate_source,
            last_decision: r.last_decision,
            next_meeting: r.next_meeting,
            pending_decision: r.pending_decision,
            consensus_change: r.consensus_change,
            missing: r.missing,
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

// ------------------------------------------------------------------ get_cb_stance

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
    pub currencies: Vec<String>,
    /// Days of decisions and inflation releases before now (30-366, default 365).
    #[serde(default)]
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

async fn cb_stance(ctx: ToolContext, input: CbStanceInput) -> Result<CbStanceOutput, ToolError> {
    let currencies = parse_currencies(&input.currencies, &g10(), true)?;
    let lookback = in_range("lookback_days", input.lookback_days, 365, 30, 366)?;
    let to = ctx.now_ms;
    let from = to - i64::from(lookback) * DAY_MS;
    let (source, events, note) = fetch_calendar(&ctx, from, to, &currencies, input.source).await?;
    let mut banks = Vec::new();
    for c in &currencies {
        let s = mc::cb_stance(&events, c, to, &StanceConfig::default()).map_err(core_err)?;
        banks.push(BankStanceOut {
            currency: s.currency,
            bank: s.bank,
            data_quality: StanceDataQuality::CalendarDerived,
            score: s.score,
            stance: s.stance,
            rate_component: s.rate_component,
            inflation_component: s.inflation_component,
            inflation_surprise_index: s.inflation.index,
            inflation_events_used: s.inflation.events_used,
            decisions: s.decisions,
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

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_market_context",
            title: "Market context (DXY, VIX, US10Y)",
            description: "Levels and recent changes of the US dollar index (DXY), the VIX and the US 10-year yield as the terminal quotes them, with a risk tone. Each input is resolved against the terminal's symbols from a list of usual names (DXY/USDX/DX, VIX/VIX.F/VOLX, US10Y/UST10Y/TNX) or from the symbol you name (`dxy`, `vix`, `us10y`; any terminal symbol is accepted). Inputs the terminal does not offer are listed in `missing` with null values, never zeroed; `risk_tone` is computed from the inputs present (VIX level/change, DXY change; US10Y never votes) and is `unknown` when neither VIX nor DXY is available.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(market_context),
        ToolSpec {
            name: "get_risk_regime",
            title: "Risk regime",
            description: "Composite risk-on/risk-off score in [-1, 1] from what the terminal offers: equity-index momentum (US500, weight 0.35), VIX level (0.25), yen (USDJPY, 0.15), franc (USDCHF, 0.10) and gold (XAUUSD, 0.15) momentum over closed bars. Every component is listed with its weight, score and whether it was available; missing ones are left out and the weights renormalised, with `coverage` = the weight present. Regime: risk_on >= 0.25, risk_off <= -0.25, neutral between, unknown when coverage < 0.30.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(risk_regime),
        ToolSpec {
            name: "get_economic_surprise",
            title: "Economic surprise index",
            description: "Per currency, how economic releases came in against forecasts over a lookback (default 90 days): each released event with actual and forecast gives a standardised surprise (actual - forecast) / RMS of its series' surprises, capped at ±3 and signed so that better than expected is positive (inverted for unemployment and jobless claims; central-bank decisions and unclear categories skipped), weighted by importance (1 / 0.6 / 0.3) and an exponential time decay (half-life 30 days). Returns the index, label, every component and every skipped event with its reason. Calendar from the terminal, else the server's.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(economic_surprise),
        ToolSpec {
            name: "get_rate_expectations",
            title: "Rate expectations (G10)",
            description: "For G10 central banks: the current policy rate (last released decision in the calendar), the last decision and the next scheduled meeting with the calendar's consensus forecast. `data_quality` is `calendar_only` because no market-implied source (OIS or rate futures) is available on the terminal: no probabilities are given, ever invented. Anything the calendar lacks is listed in `missing`.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(rate_expectations),
        ToolSpec {
            name: "get_cb_stance",
            title: "Central-bank stance",
            description: "Hawk/dove score in [-1, 1] per G10 central bank from the economic calendar (`data_quality: calendar_derived`, no text analysis): recent rate decisions (hike/hold/cut against the previous rate and the forecast, 90-day half-life, weight 0.7) and inflation surprises (weight 0.3). Stance hawkish >= 0.2, dovish <= -0.2, neutral between, unknown without data.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(cb_stance)
        // Calendar only: the server's answers when no terminal is connected.
        .terminal_optional(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syms(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn resolution_tries_candidates_then_suffixes() {
        let s = syms(&["EURUSD", "usdx.a", "VIX"]);
        let r = resolve(None, DXY_CANDIDATES, &s);
        assert_eq!(
            (r.symbol.as_deref(), r.by),
            (Some("usdx.a"), Some(ResolvedBy::Candidate))
        );
        let r = resolve(None, VIX_CANDIDATES, &s);
        assert_eq!(r.symbol.as_deref(), Some("VIX"));
        let r = resolve(None, US10Y_CANDIDATES, &s);
        assert!(r.symbol.is_none());
        assert!(r.reason.unwrap().contains("US10Y"));
        let r = resolve(Some("eurusd"), VIX_CANDIDATES, &s);
        assert_eq!(
            (r.symbol.as_deref(), r.by),
            (Some("EURUSD"), Some(ResolvedBy::Explicit))
        );
        let r = resolve(Some("GBPUSD"), VIX_CANDIDATES, &s);
        assert!(
            r.symbol.is_none(),
            "an explicit symbol the terminal lacks is missing, not replaced"
        );
        // A prefix without a separator is another symbol.
        assert!(resolve(None, &["DX"], &syms(&["DXYZ"])).symbol.is_none());
    }

    #[test]
    fn currencies_are_checked() {
        assert_eq!(parse_currencies(&[], &["USD"], false).unwrap(), vec!["USD"]);
        assert_eq!(
            parse_currencies(&syms(&["usd", "USD", "eur"]), &[], true).unwrap(),
            vec!["USD", "EUR"]
        );
        assert!(parse_currencies(&syms(&["MXN"]), &[], true).is_err());
        assert!(parse_currencies(&syms(&["MXN"]), &[], false).is_ok());
        assert!(parse_currencies(&syms(&["dollars"]), &[], false).is_err());
        assert!(parse_currencies(&vec!["USD".to_owned(); 11], &[], false).is_err());
        assert!(in_range("x", Some(0), 5, 1, 10).is_err());
        assert_eq!(in_range("x", None, 5, 1, 10).unwrap(), 5);
    }

    #[test]
    fn catalog_lists_the_macro_tools_with_analytics() {
        let names: Vec<&str> = tools().iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "get_market_context",
                "get_risk_regime",
                "get_economic_surprise",
                "get_rate_expectations",
                "get_cb_stance"
            ]
        );
        for t in tools() {
            assert_eq!(t.capability, Capability::Analytics);
            assert!(t.annotations.read_only);
        }
    }
}
