//! Equity guard: account-level loss rules evaluated on every account
//! observation, with a state the caller persists (pure functions).
//!
//! A [`GuardRules`] holds up to four rules: a **daily loss limit** (money, or
//! a percentage of the day's anchor equity), a **maximum drawdown** from the
//! equity peak (money or percentage of the peak), an **equity floor**, and a
//! **maximum open risk** (money at risk to the stops, money or percentage of
//! equity). Its action is `alert` (report breaches) or `block` (also refuse
//! live trading until the next day anchor, or until the guard is removed).
//!
//! [`evaluate`] is called with the rules, the stored [`GuardState`] and one
//! [`Observation`] (time, equity, cash flows since the previous observation,
//! open risk) and returns the new state to store and a [`Verdict`]. It never
//! reads a clock: the observation's time is "now".
//!
//! # Definitions
//!
//! - **Trading day**: starts at `day_anchor_hour` o'clock in the time zone
//!   `UTC + day_anchor_utc_offset_minutes` (a fixed offset: daylight saving
//!   time is not followed; set the offset again when it changes).
//! - **Day anchor equity**: the equity of the first observation of a trading
//!   day (the server observes on every account event and every few seconds
//!   while positions are open, so this is the equity at the day change to
//!   within that interval).
//! - **Cash flows** (deposits positive, withdrawals negative) reported with an
//!   observation move the anchor and the peak by the same amount: they are
//!   never a profit or a loss.
//! - **Daily loss** = `anchor − equity` (≥ 0); the limit in money is the
//!   amount, or `percent × anchor / 100`.
//! - **Drawdown** = `peak − equity`, where the peak (high-water mark) is the
//!   highest equity observed since the guard was installed; the limit is the
//!   amount or `percent × peak / 100`.
//! - **Equity floor**: breached when `equity ≤ floor`.
//! - **Open risk**: breached when the money at risk to the stops exceeds the
//!   limit (amount, or `percent × equity / 100`); a position without a stop
//!   makes the risk unbounded, which breaches it. Not evaluated when the
//!   observation does not carry the open risk.
//! - A rule reaching its limit is a **breach**: recorded once, with the time
//!   and equity of the observation that saw it, and **latched** until the
//!   next day anchor (so a recovery later in the day does not erase it). At
//!   the anchor latches clear and the rules are evaluated afresh (a floor still
//!   violated is breached again, as a new record).
//! - Status: `breached` while a breach is latched (`blocked` when the action is
//!   `block`; the block lasts until the next anchor, [`Verdict::block_until`]),
//!   `warning` when a rule has used [`WARNING_USED`] of its limit, else `ok`.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::equity_guard::{evaluate, GuardAction, GuardRules, GuardState, GuardStatus, LossLimit, Observation};
//! use tradeterm_core::time::parse_iso;
//!
//! let rules = GuardRules {
//!     daily_loss: Some(LossLimit::Percent { percent: 5.0 }),
//!     action: GuardAction::Block,
//!     ..GuardRules::default()
//! };
//! let state = GuardState::default();
//! let at = |t: &str, equity: f64| Observation { time: parse_iso(t).unwrap(), equity, cash_flow: 0.0, open_risk: None };
//! let (state, v) = evaluate(&rules, &state, &at("2026-11-18T08:00:00Z", 10_000.0))?;
//! assert_eq!(v.status, GuardStatus::Ok);
//! let (state, v) = evaluate(&rules, &state, &at("2026-11-18T11:00:00Z", 9_450.0))?; // −5.5 %
//! assert_eq!(v.status, GuardStatus::Blocked);
//! assert_eq!(state.breaches[0].equity, 9_450.0);
//! assert_eq!(v.block_until, Some(parse_iso("2026-11-19T00:00:00Z")?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::time::{DAY_MS, UnixMs};

/// Share of a limit used from which a rule is reported as `warning` (80 %).
pub const WARNING_USED: f64 = 0.8;
/// Most breach records kept in the state (the oldest are dropped first).
pub const MAX_BREACH_RECORDS: usize = 200;

const MINUTE_MS: i64 = 60_000;

/// Why a guard could not be evaluated.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GuardError {
    /// A rule is out of range.
    #[error("invalid equity guard rule `{field}`: {reason}")]
    InvalidRule {
        /// The rule's field name.
        field: String,
        /// Why it is refused.
        reason: String,
    },
    /// The observation is unusable (non-finite equity, negative open risk).
    #[error("invalid observation: {0}")]
    InvalidObservation(String),
    /// The observation is older than the last one evaluated.
    #[error("observation at {time} is older than the last one evaluated ({last})")]
    OutOfOrder {
        /// The observation's time, unix ms.
        time: UnixMs,
        /// The last evaluated observation's time, unix ms.
        last: UnixMs,
    },
}

/// A loss limit in money or in percent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LossLimit {
    /// An amount in the account currency.
    Money {
        /// Amount, above 0.
        #[schemars(extend("exclusiveMinimum" = 0))]
        amount: f64,
    },
    /// A percentage of the rule's reference (daily loss: the day's anchor
    /// equity; drawdown: the equity peak; open risk: the current equity).
    Percent {
        /// Percentage, above 0 and at most 100.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
        percent: f64,
    },
}

impl LossLimit {
    /// The limit in money for a reference amount.
    pub fn amount(self, reference: f64) -> f64 {
        match self {
            Self::Money { amount } => amount,
            Self::Percent { percent } => percent * reference / 100.0,
        }
    }

    fn validate(self, field: &str) -> Result<(), GuardError> {
        let ok = match self {
            Self::Money { amount } => amount.is_finite() && amount > 0.0,
            Self::Percent { percent } => percent.is_finite() && percent > 0.0 && percent <= 100.0,
        };
        if ok {
            Ok(())
        } else {
            Err(GuardError::InvalidRule {
                field: field.into(),
                reason: "an amount must be above 0; a percent above 0 and at most 100".into(),
            })
        }
    }
}

/// What the guard does on a breach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuardAction {
    /// Report the breach (through alerts); trading continues.
    #[default]
    Alert,
    /// Report the breach and refuse live trading tools until the next day
    /// anchor (or until the guard is removed).
    Block,
}

/// The guard's rules. At least one rule must be set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
// At least one rule (inside `allOf`, which client generators merge)
#[schemars(extend("allOf" = [{ "anyOf": [
        { "required": ["daily_loss"], "properties": { "daily_loss": { "not": { "type": "null" } } } },
        { "required": ["max_drawdown"], "properties": { "max_drawdown": { "not": { "type": "null" } } } },
        { "required": ["equity_floor"], "properties": { "equity_floor": { "not": { "type": "null" } } } },
        { "required": ["max_open_risk"], "properties": { "max_open_risk": { "not": { "type": "null" } } } },
] }]))]
pub struct GuardRules {
    /// Largest loss within one trading day, from the day's anchor equity
    /// (money, or percent of the anchor equity).
    pub daily_loss: Option<LossLimit>,
    /// Largest fall of equity from its peak since the guard was installed
    /// (money, or percent of the peak).
    pub max_drawdown: Option<LossLimit>,
    /// Equity at or below which the guard is breached, account currency.
    #[schemars(range(min = 0))]
    pub equity_floor: Option<f64>,
    /// Largest money at risk to the stops of the open positions (money, or
    /// percent of equity); a position without a stop breaches it.
    pub max_open_risk: Option<LossLimit>,
    /// Time zone of the trading day, minutes east of UTC (e.g. 120 for
    /// UTC+2, −300 for UTC−5). Fixed: daylight saving time is not followed.
    #[schemars(range(min = -720, max = 840))]
    pub day_anchor_utc_offset_minutes: i32,
    /// Local hour (0–23, in that time zone) at which the trading day starts.
    #[schemars(range(max = 23))]
    pub day_anchor_hour: u8,
    /// `alert` (default) or `block`.
    pub action: GuardAction,
}

impl GuardRules {
    /// Checks every rule.
    ///
    /// # Errors
    /// [`GuardError::InvalidRule`] naming the first bad field.
    pub fn validate(&self) -> Result<(), GuardError> {
        let bad = |field: &str, reason: &str| GuardError::InvalidRule {
            field: field.into(),
            reason: reason.into(),
        };
        if let Some(l) = self.daily_loss {
            l.validate("daily_loss")?;
        }
        if let Some(l) = self.max_drawdown {
            l.validate("max_drawdown")?;
        }
        if let Some(l) = self.max_open_risk {
            l.validate("max_open_risk")?;
        }
        if let Some(f) = self.equity_floor
            && !(f.is_finite() && f >= 0.0)
        {
            return Err(bad("equity_floor", "must be a finite number ≥ 0"));
        }
        if !(-720..=840).contains(&self.day_anchor_utc_offset_minutes) {
            return Err(bad("day_anchor_utc_offset_minutes", "must be between −720 and 840"));
        }
        if self.day_anchor_hour > 23 {
            return Err(bad("day_anchor_hour", "must be between 0 and 23"));
        }
        if self.daily_loss.is_none()
            && self.max_drawdown.is_none()
            && self.equity_floor.is_none()
            && self.max_open_risk.is_none()
        {
            return Err(bad(
                "rules",
                "set at least one of daily_loss, max_drawdown, equity_floor, max_open_risk",
            ));
        }
        Ok(())
    }

    fn anchor_shift_ms(&self) -> i64 {
        (i64::from(self.day_anchor_hour) * 60 - i64::from(self.day_anchor_utc_offset_minutes)) * MINUTE_MS
    }

    /// Start (unix ms) of the trading day an instant falls in.
    pub fn day_start(&self, t: UnixMs) -> UnixMs {
        let shift = self.anchor_shift_ms();
        (t - shift).div_euclid(DAY_MS) * DAY_MS + shift
    }

    /// Start of the next trading day after the one `t` falls in.
    pub fn next_day_start(&self, t: UnixMs) -> UnixMs {
        self.day_start(t) + DAY_MS
    }
}

impl GuardRules {
    /// The guard a prop-firm rule set installs (`link_equity_guard`):
    /// - the daily loss limit becomes `max_daily_loss_percent × initial_balance`
    ///   in money, anchored at `day_start_hour_utc` (UTC);
    /// - a static maximum loss becomes an equity floor at
    ///   `initial_balance × (1 − max_loss_percent / 100)` (deposits and
    ///   withdrawals made later do not move it here, unlike the tracker's floor);
    /// - a trailing maximum loss becomes a maximum drawdown of
    ///   `max_loss_percent × initial_balance` in money from the equity peak;
    /// - the action is `block` when the rule set links the guard, else `alert`.
    ///
    /// Differences with [`crate::prop_firm::status`]: the guard's daily anchor
    /// is the first equity observed in the day, the tracker's the balance at
    /// the day's start. Returns `None` when the rule set has no loss limit.
    pub fn from_prop_firm(rules: &crate::prop_firm::PropFirmRules) -> Option<Self> {
        use crate::prop_firm::DrawdownMode;
        let base = rules.initial_balance;
        // A positive percentage of a positive balance is a positive amount,
        // as `LossLimit::Money` requires: a product that underflows to 0 (a
        // balance or percentage near the smallest double) is the smallest
        // positive one.
        let money = |p: f64| LossLimit::Money {
            amount: (p * base / 100.0).max(f64::from_bits(1)),
        };
        let daily_loss = rules.max_daily_loss_percent.map(money);
        let (equity_floor, max_drawdown) = match (rules.max_loss_percent, rules.drawdown_mode) {
            (Some(p), DrawdownMode::Static) => (Some((base * (1.0 - p / 100.0)).max(0.0)), None),
            (Some(p), DrawdownMode::Trailing) => (None, Some(money(p))),
            (None, _) => (None, None),
        };
        if daily_loss.is_none() && equity_floor.is_none() && max_drawdown.is_none() {
            return None;
        }
        Some(Self {
            daily_loss,
            max_drawdown,
            equity_floor,
            max_open_risk: None,
            day_anchor_utc_offset_minutes: 0,
            day_anchor_hour: rules.day_start_hour_utc,
            action: if rules.link_equity_guard {
                GuardAction::Block
            } else {
                GuardAction::Alert
            },
        })
    }
}

/// Which rule a status or breach is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuardRule {
    /// Daily loss limit.
    DailyLoss,
    /// Maximum drawdown from the equity peak.
    MaxDrawdown,
    /// Equity floor.
    EquityFloor,
    /// Maximum open risk.
    MaxOpenRisk,
}

/// Money at risk to the stops of the open positions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpenRisk {
    /// Loss if every stop were hit, account currency (≥ 0).
    pub amount: f64,
    /// Number of open positions without a stop (any makes the risk unbounded).
    pub unbounded_positions: u32,
}

/// One reading of the account.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Observation {
    /// Time of the reading ("now").
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Equity.
    pub equity: f64,
    /// Deposits (+) and withdrawals (−) since the previous observation.
    #[serde(default)]
    pub cash_flow: f64,
    /// Money at risk to the stops, when known (needed by `max_open_risk`).
    #[serde(default)]
    pub open_risk: Option<OpenRisk>,
}

/// A recorded breach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Breach {
    /// Which rule: `daily_loss`, `max_drawdown`, `equity_floor` or `max_open_risk`.
    pub rule: GuardRule,
    /// When it was seen.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Equity at that moment.
    pub equity: f64,
    /// The limit in money at that moment (for the floor: the floor).
    pub limit: f64,
    /// The measured value (loss, drawdown, equity or open risk; `null` for an unbounded risk).
    pub value: Option<f64>,
    /// Plain-language description.
    pub message: String,
}

/// What the guard remembers between observations. Store it and pass it back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GuardState {
    /// Start of the trading day of the last observation.
    #[serde(with = "crate::time::iso::option")]
    #[schemars(with = "Option<crate::time::iso::Schema>")]
    pub day_start: Option<UnixMs>,
    /// Equity at the start of that day (first observation, moved by cash flows).
    pub day_anchor_equity: Option<f64>,
    /// Highest equity observed (moved by cash flows).
    pub high_water_mark: Option<f64>,
    /// Time of the last observation evaluated.
    #[serde(with = "crate::time::iso::option")]
    #[schemars(with = "Option<crate::time::iso::Schema>")]
    pub last_time: Option<UnixMs>,
    /// Equity of the last observation evaluated.
    pub last_equity: Option<f64>,
    /// Rules breached in the current trading day (latched until the next anchor).
    pub latched: Vec<GuardRule>,
    /// Every breach recorded, oldest first (at most [`MAX_BREACH_RECORDS`]).
    pub breaches: Vec<Breach>,
    /// The overall status of the last observation evaluated (absent in
    /// states stored before it was kept): a change of status is news
    /// (`prop_firm.status_changed`).
    pub last_status: Option<GuardStatus>,
    /// The prop-firm verdict of the last observation evaluated
    /// ([`prop_firm_verdict`]; absent in states stored before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verdict: Option<crate::prop_firm::Verdict>,
}

/// Overall state of the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuardStatus {
    /// No rule near its limit.
    Ok,
    /// A rule has used at least 80 % of its limit.
    Warning,
    /// A rule was breached today (action `alert`: trading continues).
    Breached,
    /// A rule was breached today and the action is `block`: live trading is refused.
    Blocked,
}

/// State of one rule at the observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RuleStatus {
    /// Which rule.
    pub rule: GuardRule,
    /// Limit in money (for the floor: the floor equity).
    pub limit: f64,
    /// Amount used against the limit (loss, drawdown, open risk; for the floor:
    /// how far equity fell towards it from the peak); `null` when unbounded or unknown.
    pub used: Option<f64>,
    /// Money left before the limit (≤ 0 when breached); `null` when unbounded or unknown.
    pub headroom: Option<f64>,
    /// Equity at which the rule breaches (daily loss, drawdown, floor).
    pub breach_equity: Option<f64>,
    /// Whether the rule is breached (now or earlier today).
    pub breached: bool,
    /// Whether the rule could be evaluated (open risk needs the observation's open risk).
    pub evaluated: bool,
}

/// Result of one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// Overall state.
    pub status: GuardStatus,
    /// Breaches newly recorded by this observation.
    pub breaches: Vec<Breach>,
    /// While blocked: when the block ends (the next day anchor).
    #[serde(default, with = "crate::time::iso::option")]
    #[schemars(with = "Option<crate::time::iso::Schema>")]
    pub block_until: Option<UnixMs>,
    /// State of every configured rule.
    pub rules: Vec<RuleStatus>,
    /// Start of the current trading day.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub day_start: UnixMs,
    /// The day's anchor equity.
    pub day_anchor_equity: f64,
    /// The equity peak.
    pub high_water_mark: f64,
}

fn check_observation(obs: &Observation) -> Result<(), GuardError> {
    if chrono::DateTime::<chrono::Utc>::from_timestamp_millis(obs.time).is_none() {
        return Err(GuardError::InvalidObservation(format!(
            "time {} is not a representable instant",
            obs.time
        )));
    }
    if !obs.equity.is_finite() || !obs.cash_flow.is_finite() {
        return Err(GuardError::InvalidObservation(
            "equity and cash flow must be finite numbers".into(),
        ));
    }
    if let Some(r) = obs.open_risk
        && !(r.amount.is_finite() && r.amount >= 0.0)
    {
        return Err(GuardError::InvalidObservation(
            "open risk must be a finite number ≥ 0".into(),
        ));
    }
    Ok(())
}

/// Rolls the anchors forward to the observation: a new day takes the
/// observation's equity as its anchor and clears the latches; cash flows move
/// the anchor and the peak; the peak follows equity up.
fn roll(rules: &GuardRules, prev: &GuardState, obs: &Observation) -> GuardState {
    let mut s = prev.clone();
    let day = rules.day_start(obs.time);
    let new_day = s.day_start != Some(day);
    if new_day {
        s.day_start = Some(day);
        s.day_anchor_equity = Some(obs.equity);
        s.latched.clear();
    } else if let Some(a) = s.day_anchor_equity.as_mut() {
        *a += obs.cash_flow;
    }
    let hwm = match s.high_water_mark {
        Some(h) => h + obs.cash_flow,
        None => obs.equity,
    };
    s.high_water_mark = Some(hwm.max(obs.equity));
    s.last_time = Some(obs.time);
    s.last_equity = Some(obs.equity);
    s
}

/// One rule measured: (limit, used, breach equity, breached now).
struct Measure {
    rule: GuardRule,
    limit: f64,
    used: Option<f64>,
    breach_equity: Option<f64>,
    now: bool,
    evaluated: bool,
}

fn measure(rules: &GuardRules, s: &GuardState, obs: &Observation) -> Vec<Measure> {
    let anchor = s.day_anchor_equity.unwrap_or(obs.equity);
    let peak = s.high_water_mark.unwrap_or(obs.equity);
    let eq = obs.equity;
    let mut out = Vec::new();
    if let Some(l) = rules.daily_loss {
        let limit = l.amount(anchor);
        let used = (anchor - eq).max(0.0);
        out.push(Measure {
            rule: GuardRule::DailyLoss,
            limit,
            used: Some(used),
            breach_equity: Some(anchor - limit),
            now: used >= limit,
            evaluated: true,
        });
    }
    if let Some(l) = rules.max_drawdown {
        let limit = l.amount(peak);
        let used = (peak - eq).max(0.0);
        out.push(Measure {
            rule: GuardRule::MaxDrawdown,
            limit,
            used: Some(used),
            breach_equity: Some(peak - limit),
            now: used >= limit,
            evaluated: true,
        });
    }
    if let Some(floor) = rules.equity_floor {
        out.push(Measure {
            rule: GuardRule::EquityFloor,
            limit: floor,
            used: Some((peak - eq).max(0.0)),
            breach_equity: Some(floor),
            now: eq <= floor,
            evaluated: true,
        });
    }
    if let Some(l) = rules.max_open_risk {
        let limit = l.amount(eq.max(0.0));
        let (used, now, evaluated) = match obs.open_risk {
            Some(r) if r.unbounded_positions > 0 => (None, true, true),
            Some(r) => (Some(r.amount), r.amount > limit, true),
            None => (None, false, false),
        };
        out.push(Measure {
            rule: GuardRule::MaxOpenRisk,
            limit,
            used,
            breach_equity: None,
            now,
            evaluated,
        });
    }
    out
}

fn breach_message(m: &Measure, obs: &Observation) -> String {
    let v = m.used.map_or_else(|| "unbounded".to_string(), |u| format!("{u:.2}"));
    match m.rule {
        GuardRule::DailyLoss => format!(
            "daily loss {v} reached the limit {:.2} (equity {:.2})",
            m.limit, obs.equity
        ),
        GuardRule::MaxDrawdown => {
            format!(
                "drawdown from the equity peak {v} reached the limit {:.2} (equity {:.2})",
                m.limit, obs.equity
            )
        }
        GuardRule::EquityFloor => format!("equity {:.2} is at or below the floor {:.2}", obs.equity, m.limit),
        GuardRule::MaxOpenRisk => match obs.open_risk {
            Some(r) if r.unbounded_positions > 0 => format!(
                "{} open position(s) without a stop: the open risk is unbounded (limit {:.2})",
                r.unbounded_positions, m.limit
            ),
            _ => format!("money at risk to the stops {v} exceeds the limit {:.2}", m.limit),
        },
    }
}

/// Evaluates one observation: returns the state to store and the verdict.
/// See the module documentation for the rules.
///
/// # Errors
/// [`GuardError::InvalidRule`] for invalid rules,
/// [`GuardError::InvalidObservation`] for a non-finite equity,
/// [`GuardError::OutOfOrder`] for an observation older than the last one (the
/// state is then unchanged; drop it).
pub fn evaluate(
    rules: &GuardRules,
    state: &GuardState,
    obs: &Observation,
) -> Result<(GuardState, Verdict), GuardError> {
    rules.validate()?;
    check_observation(obs)?;
    if let Some(last) = state.last_time
        && obs.time < last
    {
        return Err(GuardError::OutOfOrder { time: obs.time, last });
    }
    let mut s = roll(rules, state, obs);
    let measures = measure(rules, &s, obs);
    let mut new_breaches = Vec::new();
    for m in &measures {
        if m.now && !s.latched.contains(&m.rule) {
            s.latched.push(m.rule);
            new_breaches.push(Breach {
                rule: m.rule,
                time: obs.time,
                equity: obs.equity,
                limit: m.limit,
                value: if m.rule == GuardRule::EquityFloor {
                    Some(obs.equity)
                } else {
                    m.used
                },
                message: breach_message(m, obs),
            });
        }
    }
    s.breaches.extend(new_breaches.iter().cloned());
    if s.breaches.len() > MAX_BREACH_RECORDS {
        let drop = s.breaches.len() - MAX_BREACH_RECORDS;
        s.breaches.drain(..drop);
    }
    let rule_status: Vec<RuleStatus> = measures
        .iter()
        .map(|m| {
            let headroom = match m.rule {
                GuardRule::EquityFloor => Some(obs.equity - m.limit),
                _ => m.used.map(|u| m.limit - u),
            };
            RuleStatus {
                rule: m.rule,
                limit: m.limit,
                used: m.used,
                headroom,
                breach_equity: m.breach_equity,
                breached: s.latched.contains(&m.rule),
                evaluated: m.evaluated,
            }
        })
        .collect();
    let warning = measures.iter().any(|m| match m.rule {
        GuardRule::EquityFloor => {
            // Warn when 80 % of the distance from the peak to the floor is used.
            let peak = s.high_water_mark.unwrap_or(obs.equity);
            peak > m.limit && (peak - obs.equity) >= WARNING_USED * (peak - m.limit)
        }
        _ => m.used.is_some_and(|u| m.limit > 0.0 && u >= WARNING_USED * m.limit),
    });
    let day_start = s.day_start.unwrap_or_else(|| rules.day_start(obs.time));
    let breached = !s.latched.is_empty();
    let (status, block_until) = match (breached, rules.action) {
        (true, GuardAction::Block) => (GuardStatus::Blocked, Some(day_start + DAY_MS)),
        (true, GuardAction::Alert) => (GuardStatus::Breached, None),
        (false, _) if warning => (GuardStatus::Warning, None),
        (false, _) => (GuardStatus::Ok, None),
    };
    s.last_status = Some(status);
    s.last_verdict = Some(prop_firm_verdict(status, &rule_status));
    let verdict = Verdict {
        status,
        breaches: new_breaches,
        block_until,
        rules: rule_status,
        day_start,
        day_anchor_equity: s.day_anchor_equity.unwrap_or(obs.equity),
        high_water_mark: s.high_water_mark.unwrap_or(obs.equity),
    };
    Ok((s, verdict))
}

/// Whether live trading is refused at `now` by a guard with these rules and
/// this stored state: the action is `block`, a rule is latched and `now` is
/// before the next day anchor after the last observation.
pub fn is_blocked(rules: &GuardRules, state: &GuardState, now: UnixMs) -> bool {
    if rules.action != GuardAction::Block || state.latched.is_empty() {
        return false;
    }
    match state.day_start {
        Some(d) => now < d + DAY_MS,
        None => false,
    }
}

/// The prop-firm verdict of an evaluation, on the scale of
/// `get_prop_firm_status` ([`crate::prop_firm`]): `breached` when a rule is
/// breached today (blocked or not); else by the smallest *room* left of a
/// rule, `headroom / (used + headroom)` (for a loss limit that is
/// `headroom / limit`; for the equity floor, the share left of the distance
/// from the peak to the floor): `critical` under
/// [`crate::prop_firm::CRITICAL_ROOM`], `warning` under
/// [`crate::prop_firm::WARNING_ROOM`], else `ok`. Rules that could not be
/// evaluated or have no bound are left out.
pub fn prop_firm_verdict(status: GuardStatus, rules: &[RuleStatus]) -> crate::prop_firm::Verdict {
    use crate::prop_firm::Verdict;
    if matches!(status, GuardStatus::Breached | GuardStatus::Blocked) || rules.iter().any(|r| r.breached) {
        return Verdict::Breached;
    }
    let room = rules
        .iter()
        .filter(|r| r.evaluated)
        .filter_map(|r| {
            let (used, headroom) = (r.used?, r.headroom?);
            let span = used.max(0.0) + headroom;
            (span > 0.0 && span.is_finite()).then(|| headroom / span)
        })
        .fold(f64::INFINITY, f64::min);
    if room <= 0.0 {
        Verdict::Breached
    } else {
        crate::prop_firm::unbreached_verdict(room)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_iso;

    fn t(s: &str) -> UnixMs {
        parse_iso(s).unwrap()
    }

    fn obs(time: &str, equity: f64) -> Observation {
        Observation {
            time: t(time),
            equity,
            cash_flow: 0.0,
            open_risk: None,
        }
    }

    #[test]
    fn intraday_breach_between_observations_is_recorded_and_latched() {
        let rules = GuardRules {
            daily_loss: Some(LossLimit::Money { amount: 500.0 }),
            ..GuardRules::default()
        };
        let s0 = GuardState::default();
        let (s1, v1) = evaluate(&rules, &s0, &obs("2026-11-18T08:00:00Z", 10_000.0)).unwrap();
        assert_eq!(v1.status, GuardStatus::Ok);
        assert_eq!(v1.day_anchor_equity, 10_000.0);
        let (s2, v2) = evaluate(&rules, &s1, &obs("2026-11-18T10:00:00Z", 9_650.0)).unwrap();
        assert_eq!(v2.status, GuardStatus::Ok); // 350 used of 500: below 80 %
        let (s3, v3) = evaluate(&rules, &s2, &obs("2026-11-18T10:05:00Z", 9_480.0)).unwrap();
        assert_eq!(v3.status, GuardStatus::Breached);
        assert_eq!(v3.breaches.len(), 1);
        let b = &v3.breaches[0];
        assert_eq!(
            (b.rule, b.time, b.equity),
            (GuardRule::DailyLoss, t("2026-11-18T10:05:00Z"), 9_480.0)
        );
        assert_eq!(b.value, Some(520.0));
        assert_eq!(v3.block_until, None, "alert does not block");
        // Equity recovers: still breached today, no second record.
        let (s4, v4) = evaluate(&rules, &s3, &obs("2026-11-18T15:00:00Z", 9_900.0)).unwrap();
        assert_eq!(v4.status, GuardStatus::Breached);
        assert!(v4.breaches.is_empty());
        assert_eq!(s4.breaches.len(), 1);
        // Next day: a new anchor, the latch clears.
        let (s5, v5) = evaluate(&rules, &s4, &obs("2026-11-19T00:00:01Z", 9_900.0)).unwrap();
        assert_eq!(v5.status, GuardStatus::Ok);
        assert_eq!(v5.day_anchor_equity, 9_900.0);
        assert!(s5.latched.is_empty());
        assert_eq!(s5.breaches.len(), 1, "the record is kept");
    }

    #[test]
    fn block_lasts_until_next_anchor_in_the_day_time_zone() {
        // Day changes at 17:00 New York (UTC−5) = 22:00 UTC.
        let rules = GuardRules {
            daily_loss: Some(LossLimit::Percent { percent: 4.0 }),
            day_anchor_utc_offset_minutes: -300,
            day_anchor_hour: 17,
            action: GuardAction::Block,
            ..GuardRules::default()
        };
        let (s1, _) = evaluate(&rules, &GuardState::default(), &obs("2026-11-18T21:00:00Z", 20_000.0)).unwrap();
        assert_eq!(s1.day_start, Some(t("2026-11-17T22:00:00Z")));
        let (s2, v2) = evaluate(&rules, &s1, &obs("2026-11-18T21:30:00Z", 19_200.0)).unwrap();
        assert_eq!(v2.status, GuardStatus::Blocked);
        assert_eq!(v2.block_until, Some(t("2026-11-18T22:00:00Z")));
        assert!(is_blocked(&rules, &s2, t("2026-11-18T21:59:59Z")));
        assert!(!is_blocked(&rules, &s2, t("2026-11-18T22:00:00Z")));
        // After the anchor: a new day at 19 200, not blocked.
        let (s3, v3) = evaluate(&rules, &s2, &obs("2026-11-18T22:00:05Z", 19_200.0)).unwrap();
        assert_eq!(v3.status, GuardStatus::Ok);
        assert_eq!(v3.day_anchor_equity, 19_200.0);
        assert!(!is_blocked(&rules, &s3, t("2026-11-18T22:00:06Z")));
        // The alert action never blocks.
        let alert = GuardRules {
            action: GuardAction::Alert,
            ..rules
        };
        assert!(!is_blocked(&alert, &s2, t("2026-11-18T21:31:00Z")));
    }

    #[test]
    fn peak_tracking_drawdown_and_cash_flows() {
        let rules = GuardRules {
            max_drawdown: Some(LossLimit::Percent { percent: 10.0 }),
            equity_floor: Some(8_000.0),
            ..GuardRules::default()
        };
        let mut s = GuardState::default();
        for (time, eq) in [
            ("2026-11-16T09:00:00Z", 10_000.0),
            ("2026-11-16T12:00:00Z", 11_000.0),
            ("2026-11-17T09:00:00Z", 10_500.0),
        ] {
            let (ns, v) = evaluate(&rules, &s, &obs(time, eq)).unwrap();
            assert_ne!(v.status, GuardStatus::Breached);
            s = ns;
        }
        assert_eq!(s.high_water_mark, Some(11_000.0));
        // A withdrawal of 1 000 moves the peak to 10 000: equity 9 500 is a 5 % drawdown, not 13.6 %.
        let w = Observation {
            cash_flow: -1_000.0,
            ..obs("2026-11-17T10:00:00Z", 9_500.0)
        };
        let (s2, v) = evaluate(&rules, &s, &w).unwrap();
        assert_eq!(v.high_water_mark, 10_000.0);
        assert_eq!(v.status, GuardStatus::Ok);
        // 10 % of 10 000 = 1 000: equity 9 000 breaches the drawdown (not yet the floor).
        let (s3, v) = evaluate(&rules, &s2, &obs("2026-11-17T11:00:00Z", 9_000.0)).unwrap();
        assert_eq!(v.status, GuardStatus::Breached);
        assert_eq!(
            v.breaches.iter().map(|b| b.rule).collect::<Vec<_>>(),
            vec![GuardRule::MaxDrawdown]
        );
        let (_, v) = evaluate(&rules, &s3, &obs("2026-11-17T12:00:00Z", 7_990.0)).unwrap();
        assert_eq!(
            v.breaches.iter().map(|b| b.rule).collect::<Vec<_>>(),
            vec![GuardRule::EquityFloor]
        );
        assert_eq!(v.breaches[0].equity, 7_990.0);
        // Out of order observations are refused.
        assert!(matches!(
            evaluate(&rules, &s3, &obs("2026-11-17T10:30:00Z", 9_000.0)),
            Err(GuardError::OutOfOrder { .. })
        ));
    }

    #[test]
    fn open_risk_unbounded_and_bad_input() {
        let rules = GuardRules {
            max_open_risk: Some(LossLimit::Percent { percent: 2.0 }),
            ..GuardRules::default()
        };
        let mut o = obs("2026-11-18T08:00:00Z", 10_000.0);
        let (_, v) = evaluate(&rules, &GuardState::default(), &o).unwrap();
        assert!(!v.rules[0].evaluated);
        o.open_risk = Some(OpenRisk {
            amount: 150.0,
            unbounded_positions: 0,
        });
        let (_, v) = evaluate(&rules, &GuardState::default(), &o).unwrap();
        assert_eq!(v.status, GuardStatus::Ok);
        assert_eq!(v.rules[0].headroom, Some(50.0));
        o.open_risk = Some(OpenRisk {
            amount: 170.0,
            unbounded_positions: 0,
        });
        assert_eq!(
            evaluate(&rules, &GuardState::default(), &o).unwrap().1.status,
            GuardStatus::Warning
        );
        o.open_risk = Some(OpenRisk {
            amount: 0.0,
            unbounded_positions: 1,
        });
        let (_, v) = evaluate(&rules, &GuardState::default(), &o).unwrap();
        assert_eq!(v.status, GuardStatus::Breached);
        assert_eq!(v.breaches[0].value, None);
        o.equity = f64::NAN;
        assert!(evaluate(&rules, &GuardState::default(), &o).is_err());
        o.equity = 1.0;
        o.time = i64::MIN;
        assert!(evaluate(&rules, &GuardState::default(), &o).is_err());
        assert!(GuardRules::default().validate().is_err());
        let bad = GuardRules {
            daily_loss: Some(LossLimit::Percent { percent: 0.0 }),
            ..GuardRules::default()
        };
        assert!(bad.validate().is_err());
        // The state survives a JSON round trip (the server persists it).
        let (s, _) = evaluate(&rules, &GuardState::default(), &obs("2026-11-18T08:00:00Z", 10_000.0)).unwrap();
        let back: GuardState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn prop_firm_rules_install_a_guard() {
        use crate::prop_firm::Preset;
        let mut pf = Preset::Ftmo2StepPhase1.rules(100_000.0, t("2026-11-02T00:00:00Z"));
        pf.link_equity_guard = true;
        let g = GuardRules::from_prop_firm(&pf).unwrap();
        g.validate().unwrap();
        assert_eq!(g.daily_loss, Some(LossLimit::Money { amount: 5_000.0 }));
        assert_eq!(g.action, GuardAction::Block);
        assert_eq!(g.day_anchor_hour, pf.day_start_hour_utc);
        // FTMO's static 10 % maximum loss: a floor at 90 000.
        assert_eq!(g.equity_floor, Some(90_000.0));
        // A day anchored at the preset's hour: 23:00 UTC.
        assert_eq!(g.day_start(t("2026-11-03T10:00:00Z")), t("2026-11-02T23:00:00Z"));
    }

    #[test]
    fn a_prop_firm_guard_on_the_smallest_balance_keeps_positive_limits() {
        use crate::prop_firm::{DrawdownMode, Preset};
        for (balance, percent) in [(5e-324, 5.0), (1.0, 5e-324), (5e-324, 100.0)] {
            let mut pf = Preset::Generic.rules(balance, t("2026-11-02T00:00:00Z"));
            pf.max_daily_loss_percent = Some(percent);
            pf.max_loss_percent = Some(percent);
            pf.drawdown_mode = DrawdownMode::Trailing;
            let g = GuardRules::from_prop_firm(&pf).unwrap();
            g.validate().unwrap();
            for limit in [g.daily_loss, g.max_drawdown] {
                let Some(LossLimit::Money { amount }) = limit else {
                    panic!("a money limit, got {limit:?}")
                };
                assert!(amount > 0.0, "{balance} × {percent} %: {amount}");
            }
            // What the tool answers reads back as a valid guard.
            let back: GuardRules = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
            back.validate().unwrap();
        }
    }

    #[test]
    fn rules_read_from_tool_json() {
        let r: GuardRules = serde_json::from_value(serde_json::json!({
            "daily_loss": {"type": "percent", "percent": 5},
            "equity_floor": 9000,
            "day_anchor_utc_offset_minutes": 60,
            "action": "block"
        }))
        .unwrap();
        assert_eq!(r.action, GuardAction::Block);
        assert_eq!(r.max_drawdown, None);
        r.validate().unwrap();
        // Midnight at UTC+1 is 23:00 UTC.
        assert_eq!(r.day_start(t("2026-11-18T23:30:00Z")), t("2026-11-18T23:00:00Z"));
        assert!(serde_json::from_value::<GuardRules>(serde_json::json!({"daily_loss_typo": 5})).is_err());
    }

    #[test]
    fn the_prop_firm_verdict_follows_the_smallest_room_left() {
        use crate::prop_firm::Verdict;
        let rule = |used: f64, headroom: f64| RuleStatus {
            rule: GuardRule::DailyLoss,
            limit: used + headroom,
            used: Some(used),
            headroom: Some(headroom),
            breach_equity: None,
            breached: false,
            evaluated: true,
        };
        let v = |rules: &[RuleStatus]| prop_firm_verdict(GuardStatus::Ok, rules);
        assert_eq!(v(&[]), Verdict::Ok);
        assert_eq!(v(&[rule(400.0, 600.0)]), Verdict::Ok, "60 % left");
        assert_eq!(v(&[rule(500.0, 500.0)]), Verdict::Ok, "exactly half left");
        assert_eq!(
            v(&[rule(600.0, 400.0), rule(0.0, 1000.0)]),
            Verdict::Warning,
            "the worst rule counts"
        );
        assert_eq!(v(&[rule(850.0, 150.0)]), Verdict::Critical, "15 % left");
        assert_eq!(v(&[rule(1000.0, 0.0)]), Verdict::Breached);
        let mut unevaluated = rule(990.0, 10.0);
        unevaluated.evaluated = false;
        assert_eq!(v(&[unevaluated]), Verdict::Ok, "a rule not evaluated says nothing");
        let mut breached = rule(0.0, 1000.0);
        breached.breached = true;
        assert_eq!(v(&[breached]), Verdict::Breached, "breached earlier today");
        assert_eq!(prop_firm_verdict(GuardStatus::Blocked, &[]), Verdict::Breached);
    }
}
