//! Macro context: economic surprise, rate expectations, central-bank stance,
//! market context and the risk regime (pure functions).
//!
//! Everything here computes from data passed in (closes, levels, calendar
//! events) and a `now` argument; nothing is fetched. Missing data is reported
//! as missing (`None`, a reason), never replaced by zero. The rules and
//! formulas are documented in `docs/macro.md`; the constants below are the
//! thresholds it quotes.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::macro_context::change_pct;
//!
//! let closes = [80.0, 90.0, 95.0, 100.0];
//! assert_eq!(change_pct(&closes, 3)?, Some(25.0));
//! assert_eq!(change_pct(&closes, 10)?, None); // not enough data: missing, not zero
//! assert!(change_pct(&[100.0, -1.0], 1).is_err());
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::CoreError;
use crate::events::{EconomicEvent, Importance};
use crate::time::{DAY_MS, UnixMs};

/// The G10 currencies and their central banks.
pub const G10: [(&str, &str); 10] = [
    ("USD", "Federal Reserve"),
    ("EUR", "European Central Bank"),
    ("GBP", "Bank of England"),
    ("JPY", "Bank of Japan"),
    ("CHF", "Swiss National Bank"),
    ("CAD", "Bank of Canada"),
    ("AUD", "Reserve Bank of Australia"),
    ("NZD", "Reserve Bank of New Zealand"),
    ("SEK", "Sveriges Riksbank"),
    ("NOK", "Norges Bank"),
];

/// The central bank of a G10 currency (case-insensitive), if it is one.
pub fn central_bank(currency: &str) -> Option<&'static str> {
    G10.iter()
        .find(|(c, _)| c.eq_ignore_ascii_case(currency))
        .map(|(_, b)| *b)
}

/// Calendar category of rate decisions.
pub const CENTRAL_BANK_CATEGORY: &str = "central_bank";
/// Calendar category of inflation releases.
pub const INFLATION_CATEGORY: &str = "inflation";

/// A risk reading: risk-on, neutral, risk-off, or unknown (too little data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RiskTone {
    /// Appetite for risk: equities up, volatility and safe havens down.
    RiskOn,
    /// Neither.
    Neutral,
    /// Flight to safety.
    RiskOff,
    /// Too few inputs to say.
    Unknown,
}

fn finite(what: &str, v: f64) -> Result<f64, CoreError> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(CoreError::InvalidInput(format!("{what} must be a finite number")))
    }
}

// ---------------------------------------------------------------- market context

/// VIX level at or above which the VIX votes risk-off.
pub const VIX_HIGH: f64 = 25.0;
/// VIX level at or below which the VIX votes risk-on.
pub const VIX_LOW: f64 = 15.0;
/// VIX change (%) over the change window beyond which it votes (between the levels).
pub const VIX_CHANGE_PCT: f64 = 10.0;
/// DXY change (%) over the change window beyond which it votes.
pub const DXY_CHANGE_PCT: f64 = 1.0;
/// Mean vote at or beyond which the tone is risk-on / risk-off.
pub const TONE_THRESHOLD: f64 = 0.5;

/// One market-context input as read from the terminal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextReading {
    /// Current level (last close).
    pub level: f64,
    /// Change over the change window, percent; `None` when too few bars.
    pub change_pct: Option<f64>,
}

/// How one input voted on the risk tone.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ToneVote {
    /// `dxy`, `vix` or `us10y`.
    pub input: String,
    /// +1 risk-on, 0 neutral, -1 risk-off; `None` when the input does not vote (missing, no change, or US10Y).
    pub vote: Option<i8>,
    /// Why.
    pub reason: String,
}

/// The risk tone of the market context.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ToneResult {
    /// The tone.
    pub tone: RiskTone,
    /// Mean of the votes cast, in [-1, 1]; `None` when no input voted.
    pub score: Option<f64>,
    /// Every input's vote and reason.
    pub votes: Vec<ToneVote>,
}

/// The risk tone from DXY, VIX and US10Y readings (any may be missing).
///
/// VIX votes -1 at a level >= [`VIX_HIGH`], +1 at <= [`VIX_LOW`], otherwise
/// -1 / +1 when it rose / fell by at least [`VIX_CHANGE_PCT`] % over the
/// window, else 0. DXY votes -1 / +1 when it rose / fell by at least
/// [`DXY_CHANGE_PCT`] %, else 0 (no vote without a change). US10Y is reported
/// but never votes: rising yields are risk-on (growth) as often as risk-off.
/// The tone is `unknown` when nothing voted, else from the mean vote with
/// [`TONE_THRESHOLD`].
///
/// # Errors
/// A non-finite level or change.
pub fn risk_tone(
    dxy: Option<ContextReading>,
    vix: Option<ContextReading>,
    us10y: Option<ContextReading>,
) -> Result<ToneResult, CoreError> {
    for r in [dxy, vix, us10y].iter().flatten() {
        finite("level", r.level)?;
        if let Some(c) = r.change_pct {
            finite("change", c)?;
        }
    }
    let mut votes = Vec::new();
    let vote = |input: &str, vote: Option<i8>, reason: String| ToneVote {
        input: input.into(),
        vote,
        reason,
    };
    votes.push(match dxy {
        None => vote("dxy", None, "missing".into()),
        Some(ContextReading { change_pct: None, .. }) => vote("dxy", None, "too few bars for a change".into()),
        Some(ContextReading {
            change_pct: Some(c), ..
        }) if c >= DXY_CHANGE_PCT => vote(
            "dxy",
            Some(-1),
            format!("dollar up {c:.2}% (>= {DXY_CHANGE_PCT}%): demand for safety"),
        ),
        Some(ContextReading {
            change_pct: Some(c), ..
        }) if c <= -DXY_CHANGE_PCT => vote("dxy", Some(1), format!("dollar down {:.2}% (>= {DXY_CHANGE_PCT}%)", -c)),
        Some(ContextReading {
            change_pct: Some(c), ..
        }) => vote("dxy", Some(0), format!("dollar change {c:.2}%")),
    });
    votes.push(match vix {
        None => vote("vix", None, "missing".into()),
        Some(r) if r.level >= VIX_HIGH => vote("vix", Some(-1), format!("level {} >= {VIX_HIGH}", r.level)),
        Some(r) if r.level <= VIX_LOW => vote("vix", Some(1), format!("level {} <= {VIX_LOW}", r.level)),
        Some(ContextReading {
            change_pct: Some(c), ..
        }) if c >= VIX_CHANGE_PCT => vote("vix", Some(-1), format!("up {c:.2}% (>= {VIX_CHANGE_PCT}%)")),
        Some(ContextReading {
            change_pct: Some(c), ..
        }) if c <= -VIX_CHANGE_PCT => vote("vix", Some(1), format!("down {:.2}% (>= {VIX_CHANGE_PCT}%)", -c)),
        Some(r) => vote(
            "vix",
            Some(0),
            format!("level {} between {VIX_LOW} and {VIX_HIGH}", r.level),
        ),
    });
    votes.push(match us10y {
        None => vote("us10y", None, "missing".into()),
        Some(_) => vote(
            "us10y",
            None,
            "reported, not voted: the sign of a yield move for risk is ambiguous".into(),
        ),
    });
    let cast: Vec<f64> = votes.iter().filter_map(|v| v.vote).map(f64::from).collect();
    let score = (!cast.is_empty()).then(|| cast.iter().sum::<f64>() / cast.len() as f64);
    let tone = match score {
        None => RiskTone::Unknown,
        Some(s) if s >= TONE_THRESHOLD => RiskTone::RiskOn,
        Some(s) if s <= -TONE_THRESHOLD => RiskTone::RiskOff,
        Some(_) => RiskTone::Neutral,
    };
    Ok(ToneResult { tone, score, votes })
}

/// Percentage change from `closes[len-1-bars]` to the last close; `None`
/// when there are not enough closes.
///
/// # Errors
/// A non-finite or non-positive close.
pub fn change_pct(closes: &[f64], bars: usize) -> Result<Option<f64>, CoreError> {
    check_closes(closes)?;
    if bars == 0 || closes.len() <= bars {
        return Ok(None);
    }
    let last = closes[closes.len() - 1];
    let base = closes[closes.len() - 1 - bars];
    Ok(Some((last / base - 1.0) * 100.0))
}

fn check_closes(closes: &[f64]) -> Result<(), CoreError> {
    if closes.iter().any(|c| !c.is_finite() || *c <= 0.0) {
        return Err(CoreError::InvalidInput("closes must be finite and positive".into()));
    }
    Ok(())
}

// ---------------------------------------------------------------- risk regime

/// A component of the risk regime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RiskComponent {
    /// Equity-index momentum (US500): up = risk-on.
    Equities,
    /// VIX level: low = risk-on.
    Vix,
    /// USDJPY momentum: yen weakening (USDJPY up) = risk-on.
    Yen,
    /// USDCHF momentum: franc weakening (USDCHF up) = risk-on.
    Franc,
    /// Gold momentum: gold up = risk-off.
    Gold,
}

impl RiskComponent {
    /// Every component, in output order.
    pub const ALL: [RiskComponent; 5] = [Self::Equities, Self::Vix, Self::Yen, Self::Franc, Self::Gold];

    /// Weight in the composite (the weights sum to 1).
    pub const fn weight(self) -> f64 {
        match self {
            Self::Equities => 0.35,
            Self::Vix => 0.25,
            Self::Yen => 0.15,
            Self::Franc => 0.10,
            Self::Gold => 0.15,
        }
    }

    /// +1 when a rising price is risk-on, -1 when it is risk-off.
    pub const fn sign(self) -> f64 {
        match self {
            Self::Gold | Self::Vix => -1.0,
            _ => 1.0,
        }
    }

    /// Name (`equities`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Equities => "equities",
            Self::Vix => "vix",
            Self::Yen => "yen",
            Self::Franc => "franc",
            Self::Gold => "gold",
        }
    }
}

/// |z| cap of momentum scores.
pub const MAX_Z: f64 = 10.0;
/// Composite score at or beyond which the regime is risk-on / risk-off.
pub const REGIME_THRESHOLD: f64 = 0.25;
/// Coverage below which the regime is `unknown`.
pub const MIN_COVERAGE: f64 = 0.30;
/// VIX level scored 0 (the VIX component is `clamp((VIX_NEUTRAL - level) / VIX_SPAN, -1, 1)`).
pub const VIX_NEUTRAL: f64 = 20.0;
/// VIX points from neutral to a full score.
pub const VIX_SPAN: f64 = 10.0;

/// Momentum of a close series: total log return over its volatility.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct MomentumScore {
    /// ln(last / first).
    pub log_return: f64,
    /// Sample standard deviation of the bar log returns.
    pub volatility: f64,
    /// `log_return / (volatility * sqrt(returns))`, capped to ±10 (a flat series scores 0).
    pub z: f64,
    /// `sign * clamp(z / 2, -1, 1)`: the component score, positive = risk-on.
    pub score: f64,
}

/// Momentum score of `closes` (oldest first, at least 3) for a component
/// whose rising price means `sign` (+1 risk-on, -1 risk-off).
///
/// # Errors
/// Fewer than 3 closes, or a non-finite or non-positive close.
pub fn momentum(closes: &[f64], sign: f64) -> Result<MomentumScore, CoreError> {
    check_closes(closes)?;
    if closes.len() < 3 {
        return Err(CoreError::InvalidInput("momentum needs at least 3 closes".into()));
    }
    let returns: Vec<f64> = closes.windows(2).map(|w| (w[1] / w[0]).ln()).collect();
    let m = returns.len() as f64;
    let total: f64 = returns.iter().sum();
    let mean = total / m;
    let volatility = (returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (m - 1.0)).sqrt();
    let z = if volatility > 0.0 {
        (total / (volatility * m.sqrt())).clamp(-MAX_Z, MAX_Z)
    } else if total == 0.0 {
        0.0
    } else {
        MAX_Z * total.signum()
    };
    Ok(MomentumScore {
        log_return: total,
        volatility,
        z,
        score: sign * (z / 2.0).clamp(-1.0, 1.0),
    })
}

/// Score of the VIX component at `level`: `clamp((20 - level) / 10, -1, 1)`.
///
/// # Errors
/// A non-finite or negative level.
pub fn vix_score(level: f64) -> Result<f64, CoreError> {
    if !level.is_finite() || level < 0.0 {
        return Err(CoreError::InvalidInput("VIX level must be finite and >= 0".into()));
    }
    Ok(((VIX_NEUTRAL - level) / VIX_SPAN).clamp(-1.0, 1.0))
}

/// The composite risk regime.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Composite {
    /// Weighted mean of the available scores in [-1, 1] (weights renormalised); `None` when nothing is available.
    pub score: Option<f64>,
    /// Sum of the weights of the available components, in [0, 1].
    pub coverage: f64,
    /// The regime.
    pub regime: RiskTone,
}

/// Combines component scores (`None` = unavailable): `score = Σ wᵢ sᵢ / Σ wᵢ`
/// over the available ones, `coverage = Σ wᵢ` (available), regime from
/// [`REGIME_THRESHOLD`], `unknown` below [`MIN_COVERAGE`].
///
/// # Errors
/// A non-finite score or weight, or a negative weight.
pub fn composite(components: &[(f64, Option<f64>)]) -> Result<Composite, CoreError> {
    let mut num = 0.0;
    let mut den = 0.0;
    for (w, s) in components {
        if !w.is_finite() || *w < 0.0 {
            return Err(CoreError::param("weight", "must be finite and >= 0"));
        }
        if let Some(s) = s {
            num += w * finite("score", *s)?;
            den += w;
        }
    }
    let score = (den > 0.0).then(|| num / den);
    let regime = match score {
        _ if den < MIN_COVERAGE => RiskTone::Unknown,
        Some(s) if s >= REGIME_THRESHOLD => RiskTone::RiskOn,
        Some(s) if s <= -REGIME_THRESHOLD => RiskTone::RiskOff,
        Some(_) => RiskTone::Neutral,
        None => RiskTone::Unknown,
    };
    Ok(Composite {
        score,
        coverage: den,
        regime,
    })
}

// ---------------------------------------------------------------- economic surprise

/// |standardised surprise| cap.
pub const MAX_SURPRISE_Z: f64 = 3.0;
/// Index at or beyond which the label is above / below expectations.
pub const SURPRISE_THRESHOLD: f64 = 0.25;

/// Importance weight of a release: high 1, medium 0.6, low 0.3.
pub const fn importance_weight(i: Importance) -> f64 {
    match i {
        Importance::High => 1.0,
        Importance::Medium => 0.6,
        Importance::Low => 0.3,
    }
}

/// The sign that makes a surprise "better than expected" positive, or `None`
/// when the direction is unclear (the event is then skipped).
///
/// Names with `unemployment`, `jobless` or `claims` → -1 (a higher number is
/// worse). Categories `growth`, `employment`, `inflation` (a hotter print is
/// currency-supportive: hawkish), `sentiment`, `consumer`, `housing`,
/// `business`, `manufacturing`, `trade` → +1. Anything else (including
/// `central_bank`, handled by the stance) → `None`.
pub fn surprise_direction(category: &str, name: &str) -> Option<f64> {
    let n = name.to_ascii_lowercase();
    let c = category.to_ascii_lowercase();
    if c == CENTRAL_BANK_CATEGORY {
        return None;
    }
    if ["unemployment", "jobless", "claims"].iter().any(|w| n.contains(w)) {
        return Some(-1.0);
    }
    match c.as_str() {
        "growth" | "employment" | "inflation" | "sentiment" | "consumer" | "housing" | "business" | "manufacturing"
        | "trade" => Some(1.0),
        _ => None,
    }
}

/// Parameters of [`surprise_index`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SurpriseConfig {
    /// Half-life of the time decay, days (> 0).
    pub half_life_days: f64,
    /// Fewest released events a series (same currency and name) needs to be scaled.
    pub min_releases: usize,
}

impl Default for SurpriseConfig {
    fn default() -> Self {
        Self {
            half_life_days: 30.0,
            min_releases: 3,
        }
    }
}

/// One release in a surprise index.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SurpriseComponent {
    /// Event id.
    pub event_id: String,
    /// Event name.
    pub name: String,
    /// Release time.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Category.
    pub category: String,
    /// Importance (weight: high 1, medium 0.6, low 0.3).
    pub importance: Importance,
    /// Actual.
    pub actual: f64,
    /// Forecast.
    pub forecast: f64,
    /// `actual - forecast`.
    pub surprise: f64,
    /// Scale of its series: RMS of `actual - forecast` over the series' releases in the window.
    pub scale: f64,
    /// `direction * clamp(surprise / scale, -3, 3)` (0 when the scale is 0); positive = better than expected.
    pub z: f64,
    /// +1, or -1 for series where higher is worse (unemployment, jobless claims).
    pub direction: f64,
    /// `importance weight * 0.5^(age days / half-life)`.
    pub weight: f64,
}

/// An event left out of an index, and why.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SkippedEvent {
    /// Event id.
    pub event_id: String,
    /// `no_actual`, `no_forecast`, `direction_unclear` or `too_few_releases` (fewer than
    /// `min_releases`, 3 by default, in the window).
    pub reason: String,
}

/// Label of a surprise index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SurpriseLabel {
    /// Index >= 0.25.
    AboveExpectations,
    /// In between.
    InLine,
    /// Index <= -0.25.
    BelowExpectations,
    /// No usable release.
    NoData,
}

/// The economic surprise index of one currency.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SurpriseIndex {
    /// Currency.
    pub currency: String,
    /// Weighted mean of the standardised surprises, `Σ wᵢ zᵢ / Σ wᵢ`, in [-3, 3]
    /// (standard-deviation units); `null` without a usable release (never 0 by default).
    pub index: Option<f64>,
    /// `above_expectations` (>= 0.25), `in_line`, `below_expectations` (<= -0.25) or `no_data`.
    pub label: SurpriseLabel,
    /// Releases used.
    pub events_used: usize,
    /// The releases used, oldest first.
    pub components: Vec<SurpriseComponent>,
    /// Events of the currency (released by `now`) left out.
    pub skipped: Vec<SkippedEvent>,
}

/// The surprise index of `currency` from `events` released at or before
/// `now` (later events are ignored).
///
/// # Errors
/// A bad `half_life_days` or `min_releases`, or a non-finite value in an event.
pub fn surprise_index(
    events: &[EconomicEvent],
    currency: &str,
    now: UnixMs,
    cfg: &SurpriseConfig,
) -> Result<SurpriseIndex, CoreError> {
    if !cfg.half_life_days.is_finite() || cfg.half_life_days <= 0.0 {
        return Err(CoreError::param("half_life_days", "must be a positive number"));
    }
    if cfg.min_releases == 0 {
        return Err(CoreError::param("min_releases", "must be at least 1"));
    }
    let mut skipped = Vec::new();
    let mut eligible: Vec<(&EconomicEvent, f64, f64, f64)> = Vec::new();
    let mut mine: Vec<&EconomicEvent> = events
        .iter()
        .filter(|e| e.currency.eq_ignore_ascii_case(currency) && e.time <= now)
        .collect();
    mine.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    mine.dedup_by(|a, b| a.id == b.id);
    for e in mine {
        for v in [e.actual, e.forecast, e.previous].iter().flatten() {
            finite("an event value", *v)?;
        }
        let skip = |reason: &str| SkippedEvent {
            event_id: e.id.clone(),
            reason: reason.into(),
        };
        let Some(direction) = surprise_direction(&e.category, &e.name) else {
            skipped.push(skip("direction_unclear"));
            continue;
        };
        let (Some(actual), Some(forecast)) = (e.actual, e.forecast) else {
            skipped.push(skip(if e.actual.is_none() { "no_actual" } else { "no_forecast" }));
            continue;
        };
        eligible.push((e, actual, forecast, direction));
    }
    let mut series: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (e, a, f, _) in &eligible {
        series.entry(e.name.clone()).or_default().push(a - f);
    }
    let mut components = Vec::new();
    for (e, actual, forecast, direction) in eligible {
        let s = &series[&e.name];
        if s.len() < cfg.min_releases {
            skipped.push(SkippedEvent {
                event_id: e.id.clone(),
                reason: "too_few_releases".into(),
            });
            continue;
        }
        let scale = (s.iter().map(|x| x * x).sum::<f64>() / s.len() as f64).sqrt();
        let surprise = actual - forecast;
        let z = if scale > 0.0 {
            direction * (surprise / scale).clamp(-MAX_SURPRISE_Z, MAX_SURPRISE_Z)
        } else {
            0.0
        };
        let age_days = (now - e.time).max(0) as f64 / DAY_MS as f64;
        let weight = importance_weight(e.importance) * 0.5f64.powf(age_days / cfg.half_life_days);
        components.push(SurpriseComponent {
            event_id: e.id.clone(),
            name: e.name.clone(),
            time: e.time,
            category: e.category.clone(),
            importance: e.importance,
            actual,
            forecast,
            surprise,
            scale,
            z,
            direction,
            weight,
        });
    }
    let wsum: f64 = components.iter().map(|c| c.weight).sum();
    let index =
        (!components.is_empty() && wsum > 0.0).then(|| components.iter().map(|c| c.weight * c.z).sum::<f64>() / wsum);
    let label = match index {
        None => SurpriseLabel::NoData,
        Some(i) if i >= SURPRISE_THRESHOLD => SurpriseLabel::AboveExpectations,
        Some(i) if i <= -SURPRISE_THRESHOLD => SurpriseLabel::BelowExpectations,
        Some(_) => SurpriseLabel::InLine,
    };
    Ok(SurpriseIndex {
        currency: currency.to_ascii_uppercase(),
        index,
        label,
        events_used: components.len(),
        components,
        skipped,
    })
}

// ---------------------------------------------------------------- rate expectations

/// A rate decision as read from the calendar.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RateDecision {
    /// Event id.
    pub event_id: String,
    /// Event name.
    pub name: String,
    /// Decision time.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Rate decided, percent (`null` until released).
    pub actual: Option<f64>,
    /// Consensus forecast of the calendar (a survey, not a market price).
    pub forecast: Option<f64>,
    /// Rate before the decision.
    pub previous: Option<f64>,
}

impl From<&EconomicEvent> for RateDecision {
    fn from(e: &EconomicEvent) -> Self {
        Self {
            event_id: e.id.clone(),
            name: e.name.clone(),
            time: e.time,
            actual: e.actual,
            forecast: e.forecast,
            previous: e.previous,
        }
    }
}

/// Where a current policy rate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateSource {
    /// The `actual` of the last released decision.
    LastDecisionActual,
    /// The `previous` of the latest decision event (no released decision in range).
    DecisionPrevious,
}

/// Calendar-only rate expectations of one central bank.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RateExpectation {
    /// Currency.
    pub currency: String,
    /// Central bank.
    pub bank: String,
    /// Current policy rate, percent; `None` when the calendar has no decision.
    pub current_rate: Option<f64>,
    /// Where `current_rate` comes from.
    pub current_rate_source: Option<RateSource>,
    /// Last released decision.
    pub last_decision: Option<RateDecision>,
    /// Next scheduled decision after now.
    pub next_meeting: Option<RateDecision>,
    /// A decision whose time has passed but whose result the calendar does not have yet (after `last_decision`).
    pub pending_decision: Option<RateDecision>,
    /// `next_meeting.forecast - current_rate`: the calendar's survey consensus, not a probability.
    pub consensus_change: Option<f64>,
    /// What could not be determined (`current_rate`, `last_decision`, `next_meeting`, `consensus`).
    pub missing: Vec<String>,
}

fn decisions<'a>(events: &'a [EconomicEvent], currency: &str) -> Vec<&'a EconomicEvent> {
    let mut v: Vec<&EconomicEvent> = events
        .iter()
        .filter(|e| e.currency.eq_ignore_ascii_case(currency) && e.category.eq_ignore_ascii_case(CENTRAL_BANK_CATEGORY))
        .collect();
    v.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    v.dedup_by(|a, b| a.id == b.id);
    v
}

/// Rate expectations of `currency`'s central bank from the calendar's
/// `central_bank` events: the last released decision (time <= now, with an
/// actual), the next meeting (first decision after now), the current rate
/// (the last decision's actual, else the latest decision's previous) and the
/// consensus change. No probability is ever produced.
///
/// # Errors
/// A non-finite value in a decision.
pub fn rate_expectation(events: &[EconomicEvent], currency: &str, now: UnixMs) -> Result<RateExpectation, CoreError> {
    let ds = decisions(events, currency);
    for e in &ds {
        for v in [e.actual, e.forecast, e.previous].iter().flatten() {
            finite("a decision value", *v)?;
        }
    }
    let last = ds.iter().rev().find(|e| e.time <= now && e.actual.is_some());
    let next = ds.iter().find(|e| e.time > now);
    let pending = ds
        .iter()
        .rev()
        .find(|e| e.time <= now && e.actual.is_none() && last.is_none_or(|l| e.time > l.time));
    let (current_rate, current_rate_source) = match last.and_then(|e| e.actual) {
        Some(r) => (Some(r), Some(RateSource::LastDecisionActual)),
        None => match ds
            .iter()
            .rev()
            .filter(|e| e.time <= now)
            .chain(next)
            .find_map(|e| e.previous)
        {
            Some(r) => (Some(r), Some(RateSource::DecisionPrevious)),
            None => (None, None),
        },
    };
    let consensus_change = match (next.and_then(|e| e.forecast), current_rate) {
        (Some(f), Some(c)) => Some(f - c),
        _ => None,
    };
    let mut missing = Vec::new();
    if current_rate.is_none() {
        missing.push("current_rate".into());
    }
    if last.is_none() {
        missing.push("last_decision".into());
    }
    if next.is_none() {
        missing.push("next_meeting".into());
    }
    if consensus_change.is_none() {
        missing.push("consensus".into());
    }
    Ok(RateExpectation {
        currency: currency.to_ascii_uppercase(),
        bank: central_bank(currency).unwrap_or("unknown").into(),
        current_rate,
        current_rate_source,
        last_decision: last.map(|e| RateDecision::from(*e)),
        next_meeting: next.map(|e| RateDecision::from(*e)),
        pending_decision: pending.map(|e| RateDecision::from(*e)),
        consensus_change,
        missing,
    })
}

// ---------------------------------------------------------------- central-bank stance

/// Rate step that scores a full hike or cut (25 bp).
pub const RATE_STEP: f64 = 0.25;
/// Weight of the rate decisions in the stance score.
pub const STANCE_RATE_WEIGHT: f64 = 0.7;
/// Weight of the inflation surprises in the stance score.
pub const STANCE_INFLATION_WEIGHT: f64 = 0.3;
/// Stance score at or beyond which the stance is hawkish / dovish.
pub const STANCE_THRESHOLD: f64 = 0.2;

/// A hawk/dove label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    /// Score >= 0.2.
    Hawkish,
    /// In between.
    Neutral,
    /// Score <= -0.2.
    Dovish,
    /// No decision and no inflation release in the window.
    Unknown,
}

/// Parameters of [`cb_stance`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StanceConfig {
    /// Half-life of the decisions' decay, days.
    pub decision_half_life_days: f64,
    /// Half-life of the inflation surprises' decay, days.
    pub inflation_half_life_days: f64,
}

impl Default for StanceConfig {
    fn default() -> Self {
        Self {
            decision_half_life_days: 90.0,
            inflation_half_life_days: 60.0,
        }
    }
}

/// One scored decision.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ScoredDecision {
    /// Event id.
    pub event_id: String,
    /// Decision time.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Rate decided, percent.
    pub rate: f64,
    /// `actual - previous`: > 0 hike, < 0 cut, 0 hold.
    pub change: f64,
    /// `actual - forecast`, when a forecast exists.
    pub vs_forecast: Option<f64>,
    /// Decision score in [-1, 1]: `(clamp(change / 0.25, -1, 1) + 0.5 clamp(vs_forecast / 0.25, -1, 1)) / 1.5`,
    /// or the first term alone without a forecast.
    pub score: f64,
    /// `0.5^(age days / decision half-life)`.
    pub weight: f64,
}

/// The hawk/dove stance of one central bank.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StanceResult {
    /// Currency.
    pub currency: String,
    /// Central bank.
    pub bank: String,
    /// `(0.7 rate + 0.3 inflation) / (weights present)` in [-1, 1]; `None` when neither component exists.
    pub score: Option<f64>,
    /// Label.
    pub stance: Stance,
    /// Decay-weighted mean of the decision scores; `None` without a released decision.
    pub rate_component: Option<f64>,
    /// `clamp(inflation surprise index / 2, -1, 1)`; `None` without usable inflation releases.
    pub inflation_component: Option<f64>,
    /// Released decisions used, oldest first.
    pub decisions: Vec<ScoredDecision>,
    /// The inflation surprise index used.
    pub inflation: SurpriseIndex,
}

/// The stance of `currency`'s central bank from the `central_bank` decisions
/// and `inflation` releases of `events` at or before `now`.
///
/// # Errors
/// Bad half-lives, or a non-finite value in an event.
pub fn cb_stance(
    events: &[EconomicEvent],
    currency: &str,
    now: UnixMs,
    cfg: &StanceConfig,
) -> Result<StanceResult, CoreError> {
    if !cfg.decision_half_life_days.is_finite() || cfg.decision_half_life_days <= 0.0 {
        return Err(CoreError::param("decision_half_life_days", "must be a positive number"));
    }
    let mut scored = Vec::new();
    for e in decisions(events, currency) {
        for v in [e.actual, e.forecast, e.previous].iter().flatten() {
            finite("a decision value", *v)?;
        }
        let (Some(rate), Some(previous)) = (e.actual, e.previous) else {
            continue;
        };
        if e.time > now {
            continue;
        }
        let change = rate - previous;
        let vs_forecast = e.forecast.map(|f| rate - f);
        let path = (change / RATE_STEP).clamp(-1.0, 1.0);
        let score = match vs_forecast {
            Some(v) => (path + 0.5 * (v / RATE_STEP).clamp(-1.0, 1.0)) / 1.5,
            None => path,
        };
        let age_days = (now - e.time).max(0) as f64 / DAY_MS as f64;
        scored.push(ScoredDecision {
            event_id: e.id.clone(),
            time: e.time,
            rate,
            change,
            vs_forecast,
            score,
            weight: 0.5f64.powf(age_days / cfg.decision_half_life_days),
        });
    }
    let wsum: f64 = scored.iter().map(|d| d.weight).sum();
    let rate_component =
        (!scored.is_empty() && wsum > 0.0).then(|| scored.iter().map(|d| d.weight * d.score).sum::<f64>() / wsum);
    let inflation_events: Vec<EconomicEvent> = events
        .iter()
        .filter(|e| e.category.eq_ignore_ascii_case(INFLATION_CATEGORY))
        .cloned()
        .collect();
    let inflation = surprise_index(
        &inflation_events,
        currency,
        now,
        &SurpriseConfig {
            half_life_days: cfg.inflation_half_life_days,
            ..SurpriseConfig::default()
        },
    )?;
    let inflation_component = inflation.index.map(|i| (i / 2.0).clamp(-1.0, 1.0));
    let parts: Vec<(f64, f64)> = [
        (STANCE_RATE_WEIGHT, rate_component),
        (STANCE_INFLATION_WEIGHT, inflation_component),
    ]
    .into_iter()
    .filter_map(|(w, c)| c.map(|c| (w, c)))
    .collect();
    let den: f64 = parts.iter().map(|(w, _)| w).sum();
    let score = (!parts.is_empty()).then(|| parts.iter().map(|(w, c)| w * c).sum::<f64>() / den);
    let stance = match score {
        None => Stance::Unknown,
        Some(s) if s >= STANCE_THRESHOLD => Stance::Hawkish,
        Some(s) if s <= -STANCE_THRESHOLD => Stance::Dovish,
        Some(_) => Stance::Neutral,
    };
    Ok(StanceResult {
        currency: currency.to_ascii_uppercase(),
        bank: central_bank(currency).unwrap_or("unknown").into(),
        score,
        stance,
        rate_component,
        inflation_component,
        decisions: scored,
        inflation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixMs = 100 * DAY_MS;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one positional row per event keeps the fixtures tabular"
    )]
    fn ev(
        id: &str,
        day: i64,
        cur: &str,
        name: &str,
        cat: &str,
        imp: Importance,
        a: Option<f64>,
        f: Option<f64>,
        p: Option<f64>,
    ) -> EconomicEvent {
        EconomicEvent {
            id: id.into(),
            time: day * DAY_MS,
            currency: cur.into(),
            country: String::new(),
            name: name.into(),
            importance: imp,
            category: cat.into(),
            actual: a,
            forecast: f,
            previous: p,
        }
    }

    fn reading(level: f64, change: Option<f64>) -> Option<ContextReading> {
        Some(ContextReading {
            level,
            change_pct: change,
        })
    }

    #[test]
    fn tone_from_present_inputs_only() {
        let all_missing = risk_tone(None, None, None).unwrap();
        assert_eq!((all_missing.tone, all_missing.score), (RiskTone::Unknown, None));
        // US10Y alone never votes: still unknown.
        assert_eq!(
            risk_tone(None, None, reading(4.2, Some(3.0))).unwrap().tone,
            RiskTone::Unknown
        );
        // VIX 30 → -1, DXY +1.5% → -1: risk-off.
        let off = risk_tone(reading(104.0, Some(1.5)), reading(30.0, None), None).unwrap();
        assert_eq!((off.tone, off.score), (RiskTone::RiskOff, Some(-1.0)));
        // VIX 12 → +1, DXY +0.2% → 0: mean 0.5 → risk-on.
        let on = risk_tone(reading(104.0, Some(0.2)), reading(12.0, Some(50.0)), None).unwrap();
        assert_eq!((on.tone, on.score), (RiskTone::RiskOn, Some(0.5)));
        // VIX 20 rising 12% → -1, DXY falling 1% → +1: neutral.
        let mixed = risk_tone(reading(104.0, Some(-1.0)), reading(20.0, Some(12.0)), None).unwrap();
        assert_eq!((mixed.tone, mixed.score), (RiskTone::Neutral, Some(0.0)));
        // DXY without a change does not vote.
        assert_eq!(
            risk_tone(reading(104.0, None), None, None).unwrap().tone,
            RiskTone::Unknown
        );
        assert!(risk_tone(reading(f64::NAN, None), None, None).is_err());
        assert!(risk_tone(None, reading(20.0, Some(f64::INFINITY)), None).is_err());
    }

    #[test]
    fn change_over_bars() {
        assert_eq!(change_pct(&[100.0, 50.0, 110.0], 2).unwrap(), Some(10.000000000000009));
        assert!(close(change_pct(&[100.0, 50.0, 110.0], 1).unwrap().unwrap(), 120.0));
        assert_eq!(change_pct(&[100.0], 1).unwrap(), None);
        assert_eq!(change_pct(&[100.0, 101.0], 0).unwrap(), None);
        assert!(change_pct(&[100.0, f64::NAN], 1).is_err());
        assert!(change_pct(&[100.0, 0.0], 1).is_err());
    }

    #[test]
    fn momentum_hand_computed() {
        // Returns ln(1.1), ln(1.0/1.1)... use e-multiples for exact logs.
        let e = std::f64::consts::E;
        let closes = [1.0, e.powf(0.02), e.powf(0.02 + 0.01), e.powf(0.03 + 0.03)];
        // returns 0.02, 0.01, 0.03: total 0.06, mean 0.02, sd 0.01, z = 0.06 / (0.01 * sqrt 3) = 3.4641
        let m = momentum(&closes, 1.0).unwrap();
        assert!((m.log_return - 0.06).abs() < 1e-12);
        assert!((m.volatility - 0.01).abs() < 1e-12);
        assert!((m.z - 0.06 / (0.01 * 3f64.sqrt())).abs() < 1e-9);
        assert!(close(m.score, 1.0), "z/2 > 1 saturates");
        assert!(close(momentum(&closes, -1.0).unwrap().score, -1.0));
        // returns 0.01, -0.01, 0.01: total 0.01, sd = sqrt(((0.00333)^2*2 + (0.01333)^2)/2)
        let c2 = [1.0, e.powf(0.01), 1.0, e.powf(0.01)];
        let m2 = momentum(&c2, 1.0).unwrap();
        let r = [0.01, -0.01, 0.01];
        let mean = 0.01 / 3.0;
        let sd = (r.iter().map(|x: &f64| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((m2.z - 0.01 / (sd * 3f64.sqrt())).abs() < 1e-9);
        assert!((m2.score - m2.z / 2.0).abs() < 1e-12);
        // Flat: 0; constant trend: capped.
        assert_eq!(momentum(&[5.0, 5.0, 5.0], 1.0).unwrap().z, 0.0);
        assert_eq!(momentum(&[1.0, 2.0, 4.0], 1.0).unwrap().z, MAX_Z);
        assert!(momentum(&[1.0, 2.0], 1.0).is_err());
        assert!(momentum(&[1.0, f64::NAN, 2.0], 1.0).is_err());
        assert!(momentum(&[], 1.0).is_err());
    }

    #[test]
    fn vix_and_composite() {
        assert!(close(vix_score(20.0).unwrap(), 0.0));
        assert!(close(vix_score(15.0).unwrap(), 0.5));
        assert!(close(vix_score(45.0).unwrap(), -1.0));
        assert!(vix_score(f64::NAN).is_err());
        assert!(vix_score(-1.0).is_err());
        // Equities 0.35 × 0.8, yen 0.15 × -0.2, gold 0.15 × 0.4; vix and franc missing.
        let c = composite(&[
            (0.35, Some(0.8)),
            (0.25, None),
            (0.15, Some(-0.2)),
            (0.10, None),
            (0.15, Some(0.4)),
        ])
        .unwrap();
        assert!(close(c.coverage, 0.65));
        let expected = (0.35 * 0.8 - 0.15 * 0.2 + 0.15 * 0.4) / 0.65;
        assert!(close(c.score.unwrap(), expected));
        assert_eq!(c.regime, RiskTone::RiskOn);
        let none = composite(&[(0.35, None)]).unwrap();
        assert_eq!((none.score, none.coverage, none.regime), (None, 0.0, RiskTone::Unknown));
        // Coverage 0.15 < 0.30: unknown though a score exists.
        let thin = composite(&[(0.15, Some(-1.0)), (0.35, None)]).unwrap();
        assert_eq!((thin.score, thin.regime), (Some(-1.0), RiskTone::Unknown));
        assert_eq!(composite(&[(0.5, Some(-0.25))]).unwrap().regime, RiskTone::RiskOff);
        assert_eq!(composite(&[(0.5, Some(0.1))]).unwrap().regime, RiskTone::Neutral);
        assert!(composite(&[(0.5, Some(f64::NAN))]).is_err());
        assert!(composite(&[(-0.5, Some(0.1))]).is_err());
        let wsum: f64 = RiskComponent::ALL.iter().map(|c| c.weight()).sum();
        assert!(close(wsum, 1.0));
    }

    #[test]
    fn directions() {
        assert_eq!(surprise_direction("employment", "Unemployment Rate"), Some(-1.0));
        assert_eq!(surprise_direction("employment", "Initial Jobless Claims"), Some(-1.0));
        assert_eq!(surprise_direction("employment", "Non-Farm Payrolls"), Some(1.0));
        assert_eq!(surprise_direction("inflation", "CPI m/m"), Some(1.0));
        assert_eq!(surprise_direction("central_bank", "Fed Interest Rate Decision"), None);
        assert_eq!(surprise_direction("", "Something"), None);
    }

    #[test]
    fn surprise_index_hand_computed() {
        use Importance::*;
        let events = vec![
            // Payrolls: surprises +30, -30, +60 → RMS sqrt((900+900+3600)/3) = sqrt(1800) = 42.426.
            ev(
                "p1",
                40,
                "USD",
                "NFP",
                "employment",
                High,
                Some(130.0),
                Some(100.0),
                None,
            ),
            ev(
                "p2",
                70,
                "USD",
                "NFP",
                "employment",
                High,
                Some(70.0),
                Some(100.0),
                None,
            ),
            ev(
                "p3",
                100,
                "USD",
                "NFP",
                "employment",
                High,
                Some(160.0),
                Some(100.0),
                None,
            ),
            // Unemployment: surprises 0.1, 0.1, 0.1 → scale 0.1, z = -1 each (higher is worse).
            ev(
                "u1",
                40,
                "USD",
                "Unemployment Rate",
                "employment",
                Medium,
                Some(4.1),
                Some(4.0),
                None,
            ),
            ev(
                "u2",
                70,
                "USD",
                "Unemployment Rate",
                "employment",
                Medium,
                Some(4.2),
                Some(4.1),
                None,
            ),
            ev(
                "u3",
                100,
                "USD",
                "Unemployment Rate",
                "employment",
                Medium,
                Some(4.3),
                Some(4.2),
                None,
            ),
            // Only two releases: too few.
            ev("g1", 70, "USD", "GDP", "growth", High, Some(2.0), Some(1.0), None),
            ev("g2", 100, "USD", "GDP", "growth", High, Some(2.0), Some(1.0), None),
            // Skipped for other reasons, or ignored.
            ev(
                "fed",
                90,
                "USD",
                "Fed",
                "central_bank",
                High,
                Some(4.5),
                Some(4.5),
                Some(4.5),
            ),
            ev("x1", 95, "USD", "NFP-like", "employment", High, None, Some(1.0), None),
            ev("x2", 95, "USD", "Other", "employment", Low, Some(1.0), None, None),
            ev(
                "future",
                120,
                "USD",
                "NFP",
                "employment",
                High,
                Some(1.0),
                Some(2.0),
                None,
            ),
            ev("eur", 100, "EUR", "NFP", "employment", High, Some(1.0), Some(2.0), None),
        ];
        let cfg = SurpriseConfig {
            half_life_days: 30.0,
            min_releases: 3,
        };
        let s = surprise_index(&events, "usd", NOW, &cfg).unwrap();
        assert_eq!(s.currency, "USD");
        assert_eq!(s.events_used, 6);
        let scale = 1800f64.sqrt();
        let w = |imp: f64, day: i64| imp * 0.5f64.powf((100 - day) as f64 / 30.0);
        let parts = [
            (w(1.0, 40), 30.0 / scale),
            (w(1.0, 70), -30.0 / scale),
            (w(1.0, 100), 60.0 / scale),
            (w(0.6, 40), -1.0),
            (w(0.6, 70), -1.0),
            (w(0.6, 100), -1.0),
        ];
        let expected = parts.iter().map(|(w, z)| w * z).sum::<f64>() / parts.iter().map(|(w, _)| w).sum::<f64>();
        assert!(
            (s.index.unwrap() - expected).abs() < 1e-9,
            "{:?} vs {expected}",
            s.index
        );
        assert!((s.components[0].scale - scale).abs() < 1e-9);
        let reasons: BTreeMap<&str, &str> = s
            .skipped
            .iter()
            .map(|k| (k.event_id.as_str(), k.reason.as_str()))
            .collect();
        assert_eq!(reasons["g1"], "too_few_releases");
        assert_eq!(reasons["fed"], "direction_unclear");
        assert_eq!(reasons["x1"], "no_actual");
        assert_eq!(reasons["x2"], "no_forecast");
        assert!(!reasons.contains_key("future") && !reasons.contains_key("eur"));
        // Lower the bar: GDP counts, with scale 1 and z = +1 (capped at 3 otherwise).
        let loose = surprise_index(&events, "USD", NOW, &SurpriseConfig { min_releases: 2, ..cfg }).unwrap();
        assert_eq!(loose.events_used, 8);

        let empty = surprise_index(&[], "USD", NOW, &cfg).unwrap();
        assert_eq!(
            (empty.index, empty.label, empty.events_used),
            (None, SurpriseLabel::NoData, 0)
        );
        let bad = vec![ev(
            "n",
            50,
            "USD",
            "NFP",
            "employment",
            High,
            Some(f64::NAN),
            Some(1.0),
            None,
        )];
        assert!(matches!(
            surprise_index(&bad, "USD", NOW, &cfg),
            Err(CoreError::InvalidInput(_))
        ));
        assert!(
            surprise_index(
                &events,
                "USD",
                NOW,
                &SurpriseConfig {
                    half_life_days: 0.0,
                    ..cfg
                }
            )
            .is_err()
        );
        assert!(surprise_index(&events, "USD", NOW, &SurpriseConfig { min_releases: 0, ..cfg }).is_err());
    }

    #[test]
    fn surprise_labels_and_cap() {
        use Importance::*;
        // Three equal positive surprises: scale = 1, z = +1 each → above expectations.
        let up: Vec<EconomicEvent> = (0..3)
            .map(|i| {
                ev(
                    &format!("c{i}"),
                    90 + i,
                    "EUR",
                    "CPI",
                    "inflation",
                    High,
                    Some(3.0),
                    Some(2.0),
                    None,
                )
            })
            .collect();
        let s = surprise_index(&up, "EUR", NOW, &SurpriseConfig::default()).unwrap();
        assert!(close(s.index.unwrap(), 1.0));
        assert_eq!(s.label, SurpriseLabel::AboveExpectations);
        // Exact prints: scale 0 → z 0 → in line.
        let flat: Vec<EconomicEvent> = (0..3)
            .map(|i| {
                ev(
                    &format!("c{i}"),
                    90 + i,
                    "EUR",
                    "CPI",
                    "inflation",
                    High,
                    Some(2.0),
                    Some(2.0),
                    None,
                )
            })
            .collect();
        let s = surprise_index(&flat, "EUR", NOW, &SurpriseConfig::default()).unwrap();
        assert_eq!((s.index, s.label), (Some(0.0), SurpriseLabel::InLine));
        // One huge outlier among small ones is capped at 3.
        let mut out: Vec<EconomicEvent> = (0..9)
            .map(|i| {
                ev(
                    &format!("s{i}"),
                    50 + i,
                    "EUR",
                    "CPI",
                    "inflation",
                    High,
                    Some(2.0),
                    Some(2.0),
                    None,
                )
            })
            .collect();
        out.push(ev(
            "big",
            60,
            "EUR",
            "CPI",
            "inflation",
            High,
            Some(-8.0),
            Some(2.0),
            None,
        ));
        let s = surprise_index(&out, "EUR", NOW, &SurpriseConfig::default()).unwrap();
        let big = s.components.iter().find(|c| c.event_id == "big").unwrap();
        // RMS = sqrt(100 / 10) = 3.162..., surprise / scale = -3.162 → capped at -3.
        assert!(close(big.z, -3.0));
        assert_eq!(s.label, SurpriseLabel::BelowExpectations);
    }

    #[test]
    fn rate_expectations_from_calendar_only() {
        use Importance::High;
        let events = vec![
            ev(
                "d1",
                20,
                "USD",
                "Fed",
                "central_bank",
                High,
                Some(4.5),
                Some(4.5),
                Some(4.75),
            ),
            ev(
                "d2",
                60,
                "USD",
                "Fed",
                "central_bank",
                High,
                Some(4.25),
                Some(4.5),
                Some(4.5),
            ),
            ev(
                "d3",
                130,
                "USD",
                "Fed",
                "central_bank",
                High,
                None,
                Some(4.0),
                Some(4.25),
            ),
            ev("d4", 170, "USD", "Fed", "central_bank", High, None, None, Some(4.25)),
            ev("cpi", 90, "USD", "CPI", "inflation", High, Some(0.3), Some(0.2), None),
        ];
        let r = rate_expectation(&events, "USD", NOW).unwrap();
        assert_eq!(r.bank, "Federal Reserve");
        assert_eq!(r.current_rate, Some(4.25));
        assert_eq!(r.current_rate_source, Some(RateSource::LastDecisionActual));
        assert_eq!(r.last_decision.as_ref().unwrap().event_id, "d2");
        assert_eq!(r.next_meeting.as_ref().unwrap().event_id, "d3");
        assert!(close(r.consensus_change.unwrap(), -0.25));
        assert!(r.missing.is_empty());
        assert_eq!(r.pending_decision, None);
        // A meeting that has passed without a result in the calendar is pending, not invented.
        let mut late = events.clone();
        late.push(ev(
            "d25",
            80,
            "USD",
            "Fed",
            "central_bank",
            High,
            None,
            Some(4.0),
            Some(4.25),
        ));
        let r = rate_expectation(&late, "USD", NOW).unwrap();
        assert_eq!(r.pending_decision.unwrap().event_id, "d25");
        assert_eq!(r.current_rate, Some(4.25));
        // Only upcoming meetings: the rate comes from `previous`; no last decision.
        let r = rate_expectation(&events[2..], "USD", NOW).unwrap();
        assert_eq!(
            (r.current_rate, r.current_rate_source),
            (Some(4.25), Some(RateSource::DecisionPrevious))
        );
        assert_eq!(r.missing, vec!["last_decision".to_owned()]);
        // Nothing: everything missing, nothing invented.
        let r = rate_expectation(&events, "SEK", NOW).unwrap();
        assert_eq!(r.bank, "Sveriges Riksbank");
        assert_eq!((r.current_rate, r.consensus_change), (None, None));
        assert_eq!(r.missing.len(), 4);
        let bad = vec![ev(
            "b",
            50,
            "USD",
            "Fed",
            "central_bank",
            High,
            Some(f64::INFINITY),
            None,
            None,
        )];
        assert!(rate_expectation(&bad, "USD", NOW).is_err());
    }

    #[test]
    fn stance_hand_computed() {
        use Importance::High;
        // Hike at day 10 (+0.25, in line), hold at day 100 that surprised down by 0.25.
        let events = vec![
            ev(
                "h",
                10,
                "GBP",
                "BoE",
                "central_bank",
                High,
                Some(4.5),
                Some(4.5),
                Some(4.25),
            ),
            ev(
                "k",
                100,
                "GBP",
                "BoE",
                "central_bank",
                High,
                Some(4.5),
                Some(4.75),
                Some(4.5),
            ),
        ];
        let s = cb_stance(&events, "GBP", NOW, &StanceConfig::default()).unwrap();
        let w1 = 0.5f64.powf(90.0 / 90.0);
        let expected_rate = (w1 * (1.0 / 1.5) + 1.0 * (-0.5 / 1.5)) / (w1 + 1.0);
        assert!(close(s.rate_component.unwrap(), expected_rate));
        assert_eq!(s.inflation_component, None);
        assert!(close(s.score.unwrap(), expected_rate), "reweighted to the rate alone");
        assert_eq!(s.stance, Stance::Neutral);
        // Add three hot CPI prints (scale 0.1, z = +1 each → index 1 → component 0.5).
        let mut hot = events.clone();
        for i in 0..3 {
            hot.push(ev(
                &format!("c{i}"),
                80 + i,
                "GBP",
                "CPI",
                "inflation",
                High,
                Some(3.1),
                Some(3.0),
                None,
            ));
        }
        let s = cb_stance(&hot, "GBP", NOW, &StanceConfig::default()).unwrap();
        assert!(close(s.inflation_component.unwrap(), 0.5));
        assert!(close(s.score.unwrap(), 0.7 * expected_rate + 0.3 * 0.5));
        // A cut: dovish.
        let cut = vec![ev(
            "c",
            95,
            "JPY",
            "BoJ",
            "central_bank",
            High,
            Some(0.25),
            Some(0.25),
            Some(0.5),
        )];
        let s = cb_stance(&cut, "JPY", NOW, &StanceConfig::default()).unwrap();
        assert!(close(s.score.unwrap(), -1.0 / 1.5));
        assert_eq!(s.stance, Stance::Dovish);
        // A surprise hike: hawkish; no forecast → the path alone.
        let hike = vec![ev(
            "u",
            95,
            "AUD",
            "RBA",
            "central_bank",
            High,
            Some(4.6),
            None,
            Some(4.35),
        )];
        let s = cb_stance(&hike, "AUD", NOW, &StanceConfig::default()).unwrap();
        assert!(close(s.score.unwrap(), 1.0));
        assert_eq!(s.stance, Stance::Hawkish);
        // Nothing: unknown.
        let s = cb_stance(&[], "CHF", NOW, &StanceConfig::default()).unwrap();
        assert_eq!((s.score, s.stance), (None, Stance::Unknown));
        let bad = StanceConfig {
            decision_half_life_days: f64::NAN,
            ..StanceConfig::default()
        };
        assert!(cb_stance(&events, "GBP", NOW, &bad).is_err());
    }
}
