//! Prop-firm rule tracking: rule sets, presets, and the status verdict
//! (pure functions).
//!
//! A [`PropFirmRules`] describes a funded-account challenge: an account size
//! (`initial_balance`), a start time, loss limits (maximum daily loss, maximum
//! loss with a static or trailing floor) and objectives (profit target,
//! minimum trading days, consistency). [`status`] evaluates it against the
//! account's balance, equity and deal history at a given instant.
//!
//! # Definitions
//!
//! - **Trading day**: from `day_start_hour_utc:00` UTC to the same hour of the
//!   next day. A deal belongs to the day its time falls in.
//! - **Cash flows**: balance deals with a non-zero `profit` (deposits and
//!   withdrawals). They are neither profit nor loss: every reference level
//!   below moves with them.
//! - **Daily loss**: `day_start_balance = balance − Σ changes of today's
//!   deals`; `daily_pnl = equity − day_start_balance − today's cash flows`
//!   (closed and floating). The limit is `max_daily_loss_percent` of
//!   `initial_balance`; the equity floor of the day is
//!   `day_start_balance + today's cash flows − limit`.
//! - **Maximum loss, static**: floor = `initial_balance + cash flows since the
//!   start − max_loss_percent × initial_balance`.
//! - **Maximum loss, trailing**: floor = `high-water mark − max_loss_percent ×
//!   initial_balance`, where the high-water mark is the highest of: the
//!   initial balance, every closed balance since the start (reconstructed from
//!   the deals), the current equity, and the high-water mark stored by earlier
//!   status calls (equity readings). The floor never stops trailing.
//! - **Headroom** of a limit: `equity − floor` (currency). Its *room* is
//!   `headroom / limit`: 1 with no loss, 0 at the floor.
//! - **Verdict** of a limit: `breached` when headroom ≤ 0 (now, or at a closed
//!   balance since the start: a realised breach stays breached), `critical`
//!   when room < [`CRITICAL_ROOM`] (20 %), `warning` when room <
//!   [`WARNING_ROOM`] (50 %), else `ok`. The overall verdict is the worst one.
//! - **`max_safe_risk_percent`**: `min(headroom over the limits) / equity ×
//!   100`, 0 when a limit is breached, `None` without loss limits or with a
//!   non-positive equity. A new trade whose loss at its stop (costs included)
//!   is at most this share of the current equity cannot by itself take equity
//!   through any floor, provided the floating P&L of positions already open
//!   does not worsen.
//! - **Objectives**: profit target on the *closed* balance (`balance −
//!   initial_balance − cash flows since the start`); trading days are the
//!   distinct trading days with at least one opening or closing deal since the
//!   start; consistency holds when the best day's realised profit is at most
//!   `consistency_percent` of the total realised profit (and that total is
//!   positive).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::prop_firm::Preset;
//! use tradeterm_core::time::{parse_iso, to_iso};
//!
//! let rules = Preset::Ftmo2StepPhase1.rules(100_000.0, parse_iso("2026-11-02T00:00:00Z")?);
//! rules.validate()?;
//! assert_eq!(rules.max_daily_loss_percent, Some(5.0));
//! // This preset's trading day changes at 23:00 UTC.
//! let day_start = rules.day_start(parse_iso("2026-11-03T10:00:00Z")?);
//! assert_eq!(to_iso(day_start), "2026-11-02T23:00:00Z");
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::account::{Deal, DealEntry};
use crate::error::CoreError;
use crate::time::{DAY_MS, UnixMs};

/// Below this share of a limit's room left, the limit is `warning`.
pub const WARNING_ROOM: f64 = 0.5;
/// Below this share of a limit's room left, the limit is `critical`.
pub const CRITICAL_ROOM: f64 = 0.2;

const HOUR_MS: i64 = 3_600_000;

/// A percentage difference without binary noise (`12.0 - 10.1` is `1.9`).
fn round_percent(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// A named starting point for a rule set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Preset {
    /// A generic two-limit challenge: 5 % daily loss, 10 % static maximum
    /// loss, 8 % profit target, 3 minimum trading days.
    #[serde(rename = "generic")]
    Generic,
    /// Modelled on the public rules of FTMO's 2-step challenge, phase 1:
    /// 5 % daily loss, 10 % static maximum loss, 10 % profit target, 4
    /// minimum trading days, day change at 23:00 UTC (midnight CET). May
    /// differ from the firm's current terms.
    #[serde(rename = "ftmo_2step_phase1")]
    Ftmo2StepPhase1,
}

impl Preset {
    /// Name as in JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Generic => "generic",
            Self::Ftmo2StepPhase1 => "ftmo_2step_phase1",
        }
    }

    /// The preset's rules for an account of `initial_balance` starting at `start_time`.
    pub fn rules(self, initial_balance: f64, start_time: UnixMs) -> PropFirmRules {
        let (daily, max, target, days, hour) = match self {
            Self::Generic => (5.0, 10.0, 8.0, 3, 0),
            Self::Ftmo2StepPhase1 => (5.0, 10.0, 10.0, 4, 23),
        };
        PropFirmRules {
            preset: Some(self),
            initial_balance,
            start_time,
            max_daily_loss_percent: Some(daily),
            max_loss_percent: Some(max),
            drawdown_mode: DrawdownMode::Static,
            profit_target_percent: Some(target),
            min_trading_days: Some(days),
            consistency_percent: None,
            day_start_hour_utc: hour,
            link_equity_guard: false,
        }
    }
}

/// How the maximum-loss floor moves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DrawdownMode {
    /// Fixed below the initial balance (moved only by deposits and withdrawals).
    #[default]
    Static,
    /// Trails the high-water mark of balance and observed equity.
    Trailing,
}

/// A prop-firm rule set. Percentages are of `initial_balance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropFirmRules {
    /// The preset it was built from, or `null` for a custom rule set.
    #[serde(default)]
    pub preset: Option<Preset>,
    /// Account size of the challenge (the base of every percentage), account currency.
    pub initial_balance: f64,
    /// Start of the challenge: deals before it are ignored.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub start_time: UnixMs,
    /// Maximum loss within one trading day, % of `initial_balance`.
    #[serde(default)]
    pub max_daily_loss_percent: Option<f64>,
    /// Maximum overall loss, % of `initial_balance`.
    #[serde(default)]
    pub max_loss_percent: Option<f64>,
    /// `static` or `trailing`: whether the maximum-loss floor is fixed or trails the high-water mark.
    #[serde(default)]
    pub drawdown_mode: DrawdownMode,
    /// Profit target, % of `initial_balance`.
    #[serde(default)]
    pub profit_target_percent: Option<f64>,
    /// Minimum number of trading days.
    #[serde(default)]
    pub min_trading_days: Option<u32>,
    /// Best day's share of total profit may not exceed this percentage.
    #[serde(default)]
    pub consistency_percent: Option<f64>,
    /// Hour (UTC, 0-23) at which the trading day changes.
    #[serde(default)]
    pub day_start_hour_utc: u8,
    /// Whether live orders are refused while the rule set is breached.
    #[serde(default)]
    pub link_equity_guard: bool,
}

fn percent(name: &str, v: Option<f64>, max: f64) -> Result<(), CoreError> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0 && x <= max) => Err(CoreError::param(
            name,
            format!("must be a number above 0 and at most {max}"),
        )),
        _ => Ok(()),
    }
}

impl PropFirmRules {
    /// Checks every field; the first problem is reported.
    pub fn validate(&self) -> Result<(), CoreError> {
        if !(self.initial_balance.is_finite() && self.initial_balance > 0.0) {
            return Err(CoreError::param("initial_balance", "must be a positive number"));
        }
        if self.initial_balance > 1e12 {
            return Err(CoreError::param("initial_balance", "must be at most 1e12"));
        }
        percent("max_daily_loss_percent", self.max_daily_loss_percent, 100.0)?;
        percent("max_loss_percent", self.max_loss_percent, 100.0)?;
        percent("profit_target_percent", self.profit_target_percent, 1000.0)?;
        percent("consistency_percent", self.consistency_percent, 100.0)?;
        if let Some(d) = self.min_trading_days
            && !(1..=365).contains(&d)
        {
            return Err(CoreError::param("min_trading_days", "must be between 1 and 365"));
        }
        if self.day_start_hour_utc > 23 {
            return Err(CoreError::param("day_start_hour_utc", "must be between 0 and 23"));
        }
        if self.drawdown_mode == DrawdownMode::Trailing && self.max_loss_percent.is_none() {
            return Err(CoreError::param("drawdown_mode", "`trailing` needs `max_loss_percent`"));
        }
        if self.max_daily_loss_percent.is_none()
            && self.max_loss_percent.is_none()
            && self.profit_target_percent.is_none()
            && self.min_trading_days.is_none()
            && self.consistency_percent.is_none()
        {
            return Err(CoreError::InvalidInput(
                "the rule set has no rule: set at least one limit or objective".into(),
            ));
        }
        Ok(())
    }

    /// Plain-language notes on a valid rule set that behaves in a way a
    /// trader may not expect; empty for the usual ones.
    ///
    /// A daily loss limit above the maximum loss is accepted (a rule set
    /// states what the firm says), but the daily limit then binds only on
    /// days that start more than the difference above the initial balance
    /// (static floor), never with a trailing floor (the high-water mark is
    /// never below a day's starting balance): the maximum loss is reached
    /// first otherwise.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let (Some(d), Some(m)) = (self.max_daily_loss_percent, self.max_loss_percent)
            && d > m
        {
            let excess = round_percent(d - m);
            out.push(match self.drawdown_mode {
                DrawdownMode::Static => format!(
                    "max_daily_loss_percent ({d} %) is above max_loss_percent ({m} %): the maximum loss is reached first \
                     unless a trading day starts more than {excess} % of the initial balance above the initial balance \
                     (plus net deposits)"
                ),
                // The high-water mark is never below a day's starting balance.
                DrawdownMode::Trailing => format!(
                    "max_daily_loss_percent ({d} %) is above max_loss_percent ({m} %): with a trailing floor the \
                     maximum loss is always reached first, so the daily limit never binds"
                ),
            });
        }
        out
    }

    /// Index of the trading day an instant falls in.
    pub fn day_of(&self, t: UnixMs) -> i64 {
        (t - i64::from(self.day_start_hour_utc) * HOUR_MS).div_euclid(DAY_MS)
    }

    /// Start of the trading day an instant falls in, unix ms.
    pub fn day_start(&self, t: UnixMs) -> UnixMs {
        self.day_of(t) * DAY_MS + i64::from(self.day_start_hour_utc) * HOUR_MS
    }
}

/// Verdict of one limit or of the whole rule set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// At least half of the room is left.
    Ok,
    /// Less than half of a limit's room is left.
    Warning,
    /// Less than a fifth of a limit's room is left.
    Critical,
    /// A limit was reached: the challenge is failed.
    Breached,
}

/// Which rule an entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Maximum daily loss.
    DailyLoss,
    /// Maximum overall loss (static or trailing).
    MaxLoss,
    /// Profit target.
    ProfitTarget,
    /// Minimum trading days.
    MinTradingDays,
    /// Consistency (best day's share of total profit).
    Consistency,
}

/// State of one loss limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LimitStatus {
    /// `daily_loss` or `max_loss`.
    pub rule: RuleKind,
    /// Limit, account currency (percentage × initial balance).
    pub limit: f64,
    /// Loss counted against the limit now, account currency (0 when in profit).
    pub used: f64,
    /// Distance of the equity above the floor, account currency (≤ 0: breached).
    pub headroom: f64,
    /// `headroom / limit × 100`: share of the limit's room left (0 when the limit is 0).
    pub headroom_percent: f64,
    /// Equity at which the limit is breached.
    pub floor_equity: f64,
    /// Verdict of this limit.
    pub verdict: Verdict,
    /// Whether a closed balance since the start already went through the floor.
    pub breached_on_closed_balance: bool,
}

/// Progress towards one objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectiveStatus {
    /// `profit_target`, `min_trading_days` or `consistency`.
    pub rule: RuleKind,
    /// Target: currency (profit), days, or the maximum best-day share in %.
    pub target: f64,
    /// Achieved so far, same unit (consistency: the best day's share in %, `null` without a positive total).
    pub achieved: Option<f64>,
    /// Still missing: currency (profit, and for consistency the extra total profit needed), or days.
    pub remaining: f64,
    /// Whether it is met.
    pub met: bool,
}

/// Result of [`status`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Status {
    /// Worst verdict of the limits (`ok` without limits).
    pub verdict: Verdict,
    /// Loss limits.
    pub limits: Vec<LimitStatus>,
    /// Objectives.
    pub objectives: Vec<ObjectiveStatus>,
    /// Every objective met (at least one) and nothing breached.
    pub passed: bool,
    /// Largest risk of one new trade, % of equity, that cannot breach any limit.
    pub max_safe_risk_percent: Option<f64>,
    /// The same in account currency.
    pub max_safe_risk_amount: Option<f64>,
    /// Start of the current trading day.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub day_start: UnixMs,
    /// Balance at the start of the trading day.
    pub day_start_balance: f64,
    /// Profit or loss of the day (closed and floating, cash flows excluded).
    pub daily_pnl: f64,
    /// Closed profit since the start (cash flows excluded).
    pub closed_profit: f64,
    /// Deposits minus withdrawals since the start.
    pub net_cash_flow: f64,
    /// Distinct trading days with an opening or closing deal since the start.
    pub trading_days: u32,
    /// High-water mark of balance and equity (the trailing reference).
    pub high_water_mark: f64,
}

/// Balance and equity at the evaluation instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccountState {
    /// Current balance.
    pub balance: f64,
    /// Current equity.
    pub equity: f64,
}

fn cash(d: &Deal) -> f64 {
    if d.entry == DealEntry::Balance { d.profit } else { 0.0 }
}

fn change(d: &Deal) -> f64 {
    d.profit + d.swap + d.commission
}

fn limit_verdict(headroom: f64, limit: f64) -> Verdict {
    if headroom <= 0.0 {
        Verdict::Breached
    } else {
        unbreached_verdict(headroom / limit)
    }
}

/// The verdict of a limit not breached with `room` of it left:
/// `critical` under [`CRITICAL_ROOM`], `warning` under [`WARNING_ROOM`],
/// else `ok` (shared with `crate::equity_guard::prop_firm_verdict`).
pub(crate) fn unbreached_verdict(room: f64) -> Verdict {
    if room < CRITICAL_ROOM {
        Verdict::Critical
    } else if room < WARNING_ROOM {
        Verdict::Warning
    } else {
        Verdict::Ok
    }
}

fn limit_status(
    rule: RuleKind,
    limit: f64,
    floor: f64,
    reference: f64,
    equity: f64,
    closed_breach: bool,
) -> LimitStatus {
    let headroom = equity - floor;
    let mut verdict = limit_verdict(headroom, limit);
    if closed_breach {
        verdict = Verdict::Breached;
    }
    LimitStatus {
        rule,
        limit,
        used: (reference - equity).max(0.0),
        headroom,
        // A limit of 0 (a balance so small that the percentage underflows) has no room.
        headroom_percent: Some(headroom / limit * 100.0).filter(|p| p.is_finite()).unwrap_or(0.0),
        floor_equity: floor,
        verdict,
        breached_on_closed_balance: closed_breach,
    }
}

/// Evaluates `rules` at `now` from the account state and the deals (any
/// order; deals before `rules.start_time` are ignored, every later one must
/// be present, since the balance is reconstructed backwards from them).
/// `stored_high_water_mark` is the mark kept from earlier calls (trailing
/// mode); the returned [`Status::high_water_mark`] is the one to store.
///
/// Errors: invalid rules, or a non-finite balance, equity or deal amount.
pub fn status(
    rules: &PropFirmRules,
    account: AccountState,
    deals: &[Deal],
    stored_high_water_mark: Option<f64>,
    now: UnixMs,
) -> Result<Status, CoreError> {
    rules.validate()?;
    if !(account.balance.is_finite() && account.equity.is_finite()) {
        return Err(CoreError::InvalidInput(
            "balance and equity must be finite numbers".into(),
        ));
    }
    let own = deals_since_start(rules, deals)?;
    let initial = rules.initial_balance;
    let balance = account.balance;
    let equity = account.equity;

    let day_start = rules.day_start(now);
    let today = TodayFlows::of(&own, day_start, balance);
    let daily_pnl = equity - today.start_balance - today.cash;
    let net_cash_flow: f64 = own.iter().map(|deal| cash(deal)).sum();
    let closed_profit = balance - initial - net_cash_flow;

    let daily_limit = rules.max_daily_loss_percent.map(|percent| percent / 100.0 * initial);
    let max_limit = rules.max_loss_percent.map(|percent| percent / 100.0 * initial);
    let curve = ClosedCurve::walk(rules, &own, balance, daily_limit, max_limit);
    let high_water_mark = stored_high_water_mark
        .filter(|stored| stored.is_finite())
        .map_or(curve.high_water_mark, |stored| curve.high_water_mark.max(stored))
        .max(equity);

    let limits = loss_limits(
        rules,
        LossReferences {
            day_start: today.start_balance + today.cash,
            static_start: initial + net_cash_flow,
            high_water_mark,
        },
        &curve,
        equity,
    );
    let verdict = limits.iter().map(|limit| limit.verdict).max().unwrap_or(Verdict::Ok);
    let (max_safe_risk_amount, max_safe_risk_percent) = max_safe_risk(&limits, verdict, equity);

    let trading_days = u32::try_from(curve.trade_days.len()).unwrap_or(u32::MAX);
    let objectives = objectives(rules, closed_profit, trading_days, &curve.day_profits);
    let passed =
        !objectives.is_empty() && objectives.iter().all(|objective| objective.met) && verdict != Verdict::Breached;
    Ok(Status {
        verdict,
        limits,
        objectives,
        passed,
        max_safe_risk_percent,
        max_safe_risk_amount,
        day_start,
        day_start_balance: today.start_balance,
        daily_pnl,
        closed_profit,
        net_cash_flow,
        trading_days,
        high_water_mark,
    })
}

/// The balances the loss limits are measured from.
struct LossReferences {
    /// Balance at the start of the day plus the day's cash flows (daily loss).
    day_start: f64,
    /// Initial balance plus every cash flow (static maximum loss).
    static_start: f64,
    /// High-water mark of balance and equity (trailing maximum loss).
    high_water_mark: f64,
}

/// The status of the daily and maximum loss limits the rules set, at `equity`.
fn loss_limits(
    rules: &PropFirmRules,
    references: LossReferences,
    curve: &ClosedCurve,
    equity: f64,
) -> Vec<LimitStatus> {
    let initial = rules.initial_balance;
    let mut limits = Vec::new();
    if let Some(percent) = rules.max_daily_loss_percent {
        let limit = percent / 100.0 * initial;
        let reference = references.day_start;
        limits.push(limit_status(
            RuleKind::DailyLoss,
            limit,
            reference - limit,
            reference,
            equity,
            curve.daily_breach,
        ));
    }
    if let Some(percent) = rules.max_loss_percent {
        let limit = percent / 100.0 * initial;
        let reference = match rules.drawdown_mode {
            DrawdownMode::Static => references.static_start,
            DrawdownMode::Trailing => references.high_water_mark,
        };
        limits.push(limit_status(
            RuleKind::MaxLoss,
            limit,
            reference - limit,
            reference,
            equity,
            curve.max_breach,
        ));
    }
    limits
}

/// The deals from `rules.start_time` on, in time order (ticket on ties).
///
/// Errors: a deal with a non-finite profit, swap or commission.
fn deals_since_start<'d>(rules: &PropFirmRules, deals: &'d [Deal]) -> Result<Vec<&'d Deal>, CoreError> {
    let mut own: Vec<&Deal> = deals.iter().filter(|deal| deal.time >= rules.start_time).collect();
    if let Some(deal) = own
        .iter()
        .find(|deal| !(deal.profit.is_finite() && deal.swap.is_finite() && deal.commission.is_finite()))
    {
        return Err(CoreError::InvalidInput(format!(
            "deal {} has a non-finite profit, swap or commission",
            deal.ticket
        )));
    }
    own.sort_by_key(|deal| (deal.time, deal.ticket));
    Ok(own)
}

/// The balance at the start of the current day and the day's cash flows
/// (deposits and withdrawals) since.
struct TodayFlows {
    start_balance: f64,
    cash: f64,
}

impl TodayFlows {
    /// From the deals in time order, the day starting at `day_start` and the current `balance`.
    fn of(own: &[&Deal], day_start: UnixMs, balance: f64) -> Self {
        let today: Vec<&&Deal> = own.iter().filter(|deal| deal.time >= day_start).collect();
        let start_balance = balance - today.iter().map(|deal| change(deal)).sum::<f64>();
        let cash: f64 = today.iter().map(|deal| cash(deal)).sum();
        Self { start_balance, cash }
    }
}

/// What one pass over the closed-balance curve tells: its high-water mark,
/// whether a limit was breached on a closed balance, realised profit per day
/// and trading days.
struct ClosedCurve {
    high_water_mark: f64,
    daily_breach: bool,
    max_breach: bool,
    /// Realised profit per trading day (day number, profit), in day order.
    day_profits: Vec<(i64, f64)>,
    /// The days with a trade deal, in order.
    trade_days: Vec<i64>,
}

impl ClosedCurve {
    /// Replays `own` (in time order) from the balance before the first of
    /// them, reconstructed backwards from the current `balance`.
    fn walk(
        rules: &PropFirmRules,
        own: &[&Deal],
        balance: f64,
        daily_limit: Option<f64>,
        max_limit: Option<f64>,
    ) -> Self {
        let initial = rules.initial_balance;
        let start_balance = balance - own.iter().map(|deal| change(deal)).sum::<f64>();
        let mut closed_balance = start_balance;
        let mut curve = Self {
            high_water_mark: initial.max(start_balance),
            daily_breach: false,
            max_breach: false,
            day_profits: Vec::new(),
            trade_days: Vec::new(),
        };
        let mut cash_so_far = 0.0;
        let mut current_day = None;
        // Balance at the start of the deal's day, plus that day's cash flows.
        let mut day_reference = start_balance;
        for deal in own {
            let day = rules.day_of(deal.time);
            if current_day != Some(day) {
                current_day = Some(day);
                day_reference = closed_balance;
            }
            let deal_cash = cash(deal);
            closed_balance += change(deal);
            cash_so_far += deal_cash;
            day_reference += deal_cash;
            if let Some(limit) = daily_limit
                && day_reference - closed_balance >= limit
            {
                curve.daily_breach = true;
            }
            if let Some(limit) = max_limit {
                let floor = match rules.drawdown_mode {
                    DrawdownMode::Static => initial + cash_so_far - limit,
                    DrawdownMode::Trailing => curve.high_water_mark - limit,
                };
                if closed_balance <= floor {
                    curve.max_breach = true;
                }
            }
            curve.high_water_mark = curve.high_water_mark.max(closed_balance);
            if deal.entry != DealEntry::Balance {
                curve.count_trade_deal(day, change(deal));
            }
        }
        curve
    }

    /// Adds a trade deal's `profit` to `day`, the latest day seen.
    fn count_trade_deal(&mut self, day: i64, profit: f64) {
        match self.day_profits.last_mut() {
            Some((last_day, day_profit)) if *last_day == day => *day_profit += profit,
            _ => self.day_profits.push((day, profit)),
        }
        if self.trade_days.last() != Some(&day) {
            self.trade_days.push(day);
        }
    }
}

/// The risk a new trade may take before the tightest limit is breached, as
/// (amount, percent of equity): zero once breached, none without a limit or
/// positive equity.
fn max_safe_risk(limits: &[LimitStatus], verdict: Verdict, equity: f64) -> (Option<f64>, Option<f64>) {
    let min_headroom = limits.iter().map(|limit| limit.headroom).reduce(f64::min);
    match min_headroom {
        Some(_) if verdict == Verdict::Breached => (Some(0.0), Some(0.0)),
        Some(headroom) if equity > 0.0 => (Some(headroom.max(0.0)), Some(headroom.max(0.0) / equity * 100.0)),
        _ => (None, None),
    }
}

/// The progress towards each objective the rules set: profit target,
/// minimum trading days, consistency.
fn objectives(
    rules: &PropFirmRules,
    closed_profit: f64,
    trading_days: u32,
    day_profits: &[(i64, f64)],
) -> Vec<ObjectiveStatus> {
    let mut objectives = Vec::new();
    if let Some(percent) = rules.profit_target_percent {
        let target = percent / 100.0 * rules.initial_balance;
        objectives.push(ObjectiveStatus {
            rule: RuleKind::ProfitTarget,
            target,
            achieved: Some(closed_profit),
            remaining: (target - closed_profit).max(0.0),
            met: closed_profit >= target,
        });
    }
    if let Some(min_days) = rules.min_trading_days {
        objectives.push(ObjectiveStatus {
            rule: RuleKind::MinTradingDays,
            target: f64::from(min_days),
            achieved: Some(f64::from(trading_days)),
            remaining: f64::from(min_days.saturating_sub(trading_days)),
            met: trading_days >= min_days,
        });
    }
    if let Some(max_share) = rules.consistency_percent {
        objectives.push(consistency(max_share, day_profits));
    }
    objectives
}

/// The consistency objective: the best day's share of the total profit must
/// not exceed `max_share` percent.
fn consistency(max_share: f64, day_profits: &[(i64, f64)]) -> ObjectiveStatus {
    let total: f64 = day_profits.iter().map(|(_, profit)| profit).sum();
    let best = day_profits.iter().map(|(_, profit)| *profit).fold(0.0, f64::max);
    let (achieved, met) = if total > 0.0 {
        let share = best / total * 100.0;
        (Some(share), share <= max_share + 1e-9)
    } else {
        (None, false)
    };
    let needed = if total > 0.0 {
        (best * 100.0 / max_share - total).max(0.0)
    } else {
        0.0
    };
    ObjectiveStatus {
        rule: RuleKind::Consistency,
        target: max_share,
        achieved,
        remaining: if met { 0.0 } else { needed },
        met,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::Side;

    /// 2026-11-18 00:00 UTC, a Wednesday.
    const D0: i64 = 1_794_960_000_000;
    const H: i64 = HOUR_MS;

    fn deal(ticket: u64, time: i64, entry: DealEntry, profit: f64, commission: f64) -> Deal {
        Deal {
            ticket,
            order: ticket,
            position: if entry == DealEntry::Balance { 0 } else { ticket },
            symbol: if entry == DealEntry::Balance {
                String::new()
            } else {
                "EURUSD".into()
            },
            side: Side::Buy,
            entry,
            volume: 1.0,
            price: 1.1,
            time,
            profit,
            swap: 0.0,
            commission,
            magic: 0,
            comment: String::new(),
        }
    }

    fn rules() -> PropFirmRules {
        PropFirmRules {
            preset: None,
            initial_balance: 100_000.0,
            start_time: D0,
            max_daily_loss_percent: Some(5.0),
            max_loss_percent: Some(10.0),
            drawdown_mode: DrawdownMode::Static,
            profit_target_percent: Some(10.0),
            min_trading_days: Some(4),
            consistency_percent: None,
            day_start_hour_utc: 0,
            link_equity_guard: false,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    fn limit(s: &Status, rule: RuleKind) -> &LimitStatus {
        s.limits.iter().find(|l| l.rule == rule).unwrap()
    }

    fn objective(s: &Status, rule: RuleKind) -> &ObjectiveStatus {
        s.objectives.iter().find(|l| l.rule == rule).unwrap()
    }

    #[test]
    fn daily_loss_from_the_days_deals_and_floating_equity() {
        // Day 1: +1 000 closed. Day 2 (today): −2 000 closed, commission −10,
        // and −1 500 floating.
        let deals = vec![
            deal(1, D0 + 10 * H, DealEntry::In, 0.0, 0.0),
            deal(2, D0 + 11 * H, DealEntry::Out, 1_000.0, 0.0),
            deal(3, D0 + DAY_MS + 9 * H, DealEntry::In, 0.0, -10.0),
            deal(4, D0 + DAY_MS + 10 * H, DealEntry::Out, -2_000.0, 0.0),
        ];
        let balance = 100_000.0 + 1_000.0 - 2_010.0; // 98 990
        let equity = balance - 1_500.0; // 97 490
        let s = status(
            &rules(),
            AccountState { balance, equity },
            &deals,
            None,
            D0 + DAY_MS + 12 * H,
        )
        .unwrap();
        assert_eq!(s.day_start, D0 + DAY_MS);
        assert!(close(s.day_start_balance, 101_000.0));
        assert!(close(s.daily_pnl, -3_510.0));
        let d = limit(&s, RuleKind::DailyLoss);
        assert!(close(d.limit, 5_000.0));
        assert!(close(d.used, 3_510.0));
        assert!(close(d.headroom, 1_490.0));
        assert!(close(d.floor_equity, 96_000.0));
        assert!(close(d.headroom_percent, 29.8));
        assert_eq!(d.verdict, Verdict::Warning);
        let m = limit(&s, RuleKind::MaxLoss);
        assert!(close(m.floor_equity, 90_000.0));
        assert!(close(m.headroom, 7_490.0));
        assert!(close(m.used, 2_510.0));
        assert_eq!(m.verdict, Verdict::Ok);
        assert_eq!(s.verdict, Verdict::Warning);
        // Tightest headroom 1 490 of equity 97 490.
        assert!(close(s.max_safe_risk_amount.unwrap(), 1_490.0));
        assert!(close(s.max_safe_risk_percent.unwrap(), 1_490.0 / 97_490.0 * 100.0));
        assert_eq!(s.trading_days, 2);
    }

    #[test]
    fn day_boundary_follows_the_configured_hour() {
        let mut r = rules();
        r.day_start_hour_utc = 22;
        // A loss at 21:00 belongs to the day that started at 22:00 the day before.
        let deals = vec![deal(1, D0 + 21 * H, DealEntry::Out, -1_000.0, 0.0)];
        let at = D0 + 21 * H + 30 * 60_000;
        let s = status(
            &r,
            AccountState {
                balance: 99_000.0,
                equity: 99_000.0,
            },
            &deals,
            None,
            at,
        )
        .unwrap();
        assert_eq!(s.day_start, D0 - 2 * H);
        assert!(close(s.daily_pnl, -1_000.0));
        // After 22:00 a new day starts with that balance.
        let s = status(
            &r,
            AccountState {
                balance: 99_000.0,
                equity: 99_000.0,
            },
            &deals,
            None,
            D0 + 23 * H,
        )
        .unwrap();
        assert_eq!(s.day_start, D0 + 22 * H);
        assert!(close(s.day_start_balance, 99_000.0));
        assert!(close(s.daily_pnl, 0.0));
    }

    #[test]
    fn deposits_are_neither_profit_nor_loss() {
        let deals = vec![
            deal(1, D0 + H, DealEntry::Balance, 5_000.0, 0.0),
            deal(2, D0 + 2 * H, DealEntry::Out, -500.0, 0.0),
        ];
        let s = status(
            &rules(),
            AccountState {
                balance: 104_500.0,
                equity: 104_500.0,
            },
            &deals,
            None,
            D0 + 3 * H,
        )
        .unwrap();
        assert!(close(s.net_cash_flow, 5_000.0));
        assert!(close(s.daily_pnl, -500.0));
        assert!(close(s.closed_profit, -500.0));
        assert!(close(limit(&s, RuleKind::MaxLoss).floor_equity, 95_000.0));
        assert!(close(limit(&s, RuleKind::DailyLoss).headroom, 4_500.0));
    }

    #[test]
    fn static_and_trailing_drawdown_differ_after_a_gain() {
        // +6 000 then −5 000: balance 101 000, peak 106 000.
        let deals = vec![
            deal(1, D0 + H, DealEntry::Out, 6_000.0, 0.0),
            deal(2, D0 + DAY_MS + H, DealEntry::Out, -5_000.0, 0.0),
        ];
        let acc = AccountState {
            balance: 101_000.0,
            equity: 101_000.0,
        };
        let now = D0 + 2 * DAY_MS + H;
        let mut r = rules();
        r.max_daily_loss_percent = None;
        let s = status(&r, acc, &deals, None, now).unwrap();
        let m = limit(&s, RuleKind::MaxLoss);
        assert!(close(m.floor_equity, 90_000.0));
        assert!(close(m.headroom, 11_000.0));
        assert_eq!(m.verdict, Verdict::Ok);
        r.drawdown_mode = DrawdownMode::Trailing;
        let s = status(&r, acc, &deals, None, now).unwrap();
        let m = limit(&s, RuleKind::MaxLoss);
        assert!(close(s.high_water_mark, 106_000.0));
        assert!(close(m.floor_equity, 96_000.0));
        assert!(close(m.headroom, 5_000.0));
        assert!(close(m.used, 5_000.0));
        // Exactly half of the room left is still `ok`.
        assert_eq!(m.verdict, Verdict::Ok);
        // An equity peak seen by an earlier call (stored) raises the floor further.
        let s = status(&r, acc, &deals, Some(108_500.0), now).unwrap();
        let m = limit(&s, RuleKind::MaxLoss);
        assert!(close(m.floor_equity, 98_500.0));
        assert!(close(m.headroom, 2_500.0));
        assert_eq!(m.verdict, Verdict::Warning);
        let s = status(&r, acc, &deals, Some(109_500.0), now).unwrap();
        let m = limit(&s, RuleKind::MaxLoss);
        assert!(close(m.headroom, 1_500.0));
        assert_eq!(m.verdict, Verdict::Critical);
        assert!(close(s.max_safe_risk_percent.unwrap(), 1_500.0 / 101_000.0 * 100.0));
        // Equity above the mark becomes the new mark.
        let s = status(
            &r,
            AccountState {
                balance: 101_000.0,
                equity: 110_000.0,
            },
            &deals,
            Some(108_500.0),
            now,
        )
        .unwrap();
        assert!(close(s.high_water_mark, 110_000.0));
    }

    #[test]
    fn breach_now_and_realised_breach_stays() {
        let mut r = rules();
        r.max_daily_loss_percent = Some(5.0);
        // Yesterday: −5 200 closed (breach of the daily limit), then +6 000 today.
        let deals = vec![
            deal(1, D0 + H, DealEntry::Out, -5_200.0, 0.0),
            deal(2, D0 + DAY_MS + H, DealEntry::Out, 6_000.0, 0.0),
        ];
        let s = status(
            &r,
            AccountState {
                balance: 100_800.0,
                equity: 100_800.0,
            },
            &deals,
            None,
            D0 + DAY_MS + 2 * H,
        )
        .unwrap();
        let d = limit(&s, RuleKind::DailyLoss);
        assert!(d.breached_on_closed_balance);
        assert_eq!(d.verdict, Verdict::Breached);
        assert_eq!(s.verdict, Verdict::Breached);
        assert_eq!(s.max_safe_risk_percent, Some(0.0));
        assert!(!s.passed);
        // Equity through the static floor now.
        let s = status(
            &rules(),
            AccountState {
                balance: 100_000.0,
                equity: 89_999.0,
            },
            &[],
            None,
            D0 + H,
        )
        .unwrap();
        assert_eq!(limit(&s, RuleKind::MaxLoss).verdict, Verdict::Breached);
        assert!(!limit(&s, RuleKind::MaxLoss).breached_on_closed_balance);
    }

    #[test]
    fn thresholds() {
        assert_eq!(limit_verdict(5_000.0, 5_000.0), Verdict::Ok);
        assert_eq!(limit_verdict(2_500.0, 5_000.0), Verdict::Ok);
        assert_eq!(limit_verdict(2_499.0, 5_000.0), Verdict::Warning);
        assert_eq!(limit_verdict(1_000.0, 5_000.0), Verdict::Warning);
        assert_eq!(limit_verdict(999.0, 5_000.0), Verdict::Critical);
        assert_eq!(limit_verdict(0.0, 5_000.0), Verdict::Breached);
        assert_eq!(limit_verdict(-1.0, 5_000.0), Verdict::Breached);
    }

    #[test]
    fn profit_target_and_trading_days() {
        // Four trading days, +2 500 / +3 000 / +4 000 / +1 000 = +10 500, one deposit ignored.
        let mut deals = Vec::new();
        for (i, p) in [2_500.0, 3_000.0, 4_000.0, 1_000.0].into_iter().enumerate() {
            let t = D0 + i as i64 * DAY_MS + 9 * H;
            deals.push(deal(10 * i as u64 + 1, t, DealEntry::In, 0.0, 0.0));
            deals.push(deal(10 * i as u64 + 2, t + H, DealEntry::Out, p, 0.0));
        }
        deals.push(deal(99, D0 + 5 * DAY_MS, DealEntry::Balance, 1_000.0, 0.0));
        // A deal before the start is ignored.
        deals.push(deal(100, D0 - DAY_MS, DealEntry::Out, 50_000.0, 0.0));
        let acc = AccountState {
            balance: 111_500.0,
            equity: 111_500.0,
        };
        let s = status(&rules(), acc, &deals, None, D0 + 5 * DAY_MS + H).unwrap();
        assert_eq!(s.trading_days, 4);
        assert!(close(s.closed_profit, 10_500.0));
        let p = objective(&s, RuleKind::ProfitTarget);
        assert!(close(p.target, 10_000.0));
        assert!(p.met && close(p.remaining, 0.0));
        let d = objective(&s, RuleKind::MinTradingDays);
        assert!(d.met && close(d.remaining, 0.0));
        assert!(s.passed);
        // Only three days: target met, days not.
        let s = status(
            &rules(),
            AccountState {
                balance: 109_500.0,
                equity: 109_500.0,
            },
            &deals[..6],
            None,
            D0 + 3 * DAY_MS,
        )
        .unwrap();
        assert_eq!(s.trading_days, 3);
        let p = objective(&s, RuleKind::ProfitTarget);
        assert!(!p.met && close(p.remaining, 500.0), "{p:?}");
        assert!(close(objective(&s, RuleKind::MinTradingDays).remaining, 1.0));
        assert!(!s.passed);
    }

    #[test]
    fn consistency_best_day_share() {
        let mut r = rules();
        r.consistency_percent = Some(40.0);
        let deals = vec![
            deal(1, D0 + H, DealEntry::Out, 1_000.0, 0.0),
            deal(2, D0 + DAY_MS + H, DealEntry::Out, 3_000.0, 0.0),
            deal(3, D0 + 2 * DAY_MS + H, DealEntry::Out, 1_000.0, 0.0),
        ];
        let acc = AccountState {
            balance: 105_000.0,
            equity: 105_000.0,
        };
        let s = status(&r, acc, &deals, None, D0 + 3 * DAY_MS).unwrap();
        let c = objective(&s, RuleKind::Consistency);
        // Best 3 000 of 5 000 = 60 % > 40 %: 7 500 total needed, 2 500 more.
        assert!(close(c.achieved.unwrap(), 60.0));
        assert!(!c.met);
        assert!(close(c.remaining, 2_500.0));
        r.consistency_percent = Some(60.0);
        let s = status(&r, acc, &deals, None, D0 + 3 * DAY_MS).unwrap();
        assert!(objective(&s, RuleKind::Consistency).met);
        // No positive total: not met, no share.
        let s = status(
            &r,
            AccountState {
                balance: 99_000.0,
                equity: 99_000.0,
            },
            &[deal(1, D0 + H, DealEntry::Out, -1_000.0, 0.0)],
            None,
            D0 + 2 * H,
        )
        .unwrap();
        let c = objective(&s, RuleKind::Consistency);
        assert!(c.achieved.is_none() && !c.met);
    }

    #[test]
    fn presets_are_valid() {
        for p in [Preset::Generic, Preset::Ftmo2StepPhase1] {
            let r = p.rules(100_000.0, D0);
            r.validate().unwrap();
            assert_eq!(r.preset, Some(p));
        }
        let f = Preset::Ftmo2StepPhase1.rules(100_000.0, D0);
        assert_eq!(
            (
                f.max_daily_loss_percent,
                f.max_loss_percent,
                f.profit_target_percent,
                f.min_trading_days
            ),
            (Some(5.0), Some(10.0), Some(10.0), Some(4))
        );
        assert_eq!(
            serde_json::to_value(Preset::Ftmo2StepPhase1).unwrap(),
            "ftmo_2step_phase1"
        );
    }

    #[test]
    fn daily_loss_above_max_loss_is_valid_with_a_warning() {
        let mut r = rules();
        assert!(r.warnings().is_empty());
        r.max_daily_loss_percent = Some(12.0);
        r.max_loss_percent = Some(10.1);
        r.validate().unwrap();
        let w = r.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("maximum loss is reached first") && w[0].contains("more than 1.9 %"),
            "{w:?}"
        );
        // The static floor binds first on a day starting at the initial balance.
        let s = status(
            &r,
            AccountState {
                balance: 100_000.0,
                equity: 100_000.0,
            },
            &[],
            None,
            D0 + DAY_MS / 2,
        )
        .unwrap();
        let tightest = s
            .limits
            .iter()
            .min_by(|a, b| a.headroom.total_cmp(&b.headroom))
            .unwrap();
        assert_eq!(tightest.rule, RuleKind::MaxLoss);
        r.drawdown_mode = DrawdownMode::Trailing;
        assert!(r.warnings()[0].contains("never binds"), "{:?}", r.warnings());
    }

    #[test]
    fn validation_errors() {
        type Edit = fn(&mut PropFirmRules);
        let bad: Vec<(Edit, &str)> = vec![
            (|r| r.initial_balance = 0.0, "initial_balance"),
            (|r| r.initial_balance = f64::NAN, "initial_balance"),
            (|r| r.max_daily_loss_percent = Some(-1.0), "max_daily_loss_percent"),
            (|r| r.max_loss_percent = Some(150.0), "max_loss_percent"),
            (|r| r.min_trading_days = Some(0), "min_trading_days"),
            (|r| r.consistency_percent = Some(0.0), "consistency_percent"),
            (|r| r.day_start_hour_utc = 24, "day_start_hour_utc"),
            (
                |r| {
                    r.max_loss_percent = None;
                    r.max_daily_loss_percent = None;
                    r.drawdown_mode = DrawdownMode::Trailing;
                },
                "trailing",
            ),
            (
                |r| {
                    *r = PropFirmRules {
                        initial_balance: 1.0,
                        ..Preset::Generic.rules(1.0, 0)
                    };
                    r.max_daily_loss_percent = None;
                    r.max_loss_percent = None;
                    r.profit_target_percent = None;
                    r.min_trading_days = None;
                },
                "no rule",
            ),
        ];
        for (edit, needle) in bad {
            let mut r = rules();
            edit(&mut r);
            let e = r.validate().unwrap_err().to_string();
            assert!(e.contains(needle), "`{e}` should mention `{needle}`");
            assert!(
                status(
                    &r,
                    AccountState {
                        balance: 1.0,
                        equity: 1.0
                    },
                    &[],
                    None,
                    D0
                )
                .is_err()
            );
        }
        let s = status(
            &rules(),
            AccountState {
                balance: f64::INFINITY,
                equity: 1.0,
            },
            &[],
            None,
            D0,
        );
        assert!(s.is_err());
        let mut d = deal(1, D0 + H, DealEntry::Out, f64::NAN, 0.0);
        d.ticket = 7;
        let e = status(
            &rules(),
            AccountState {
                balance: 1.0,
                equity: 1.0,
            },
            &[d],
            None,
            D0 + 2 * H,
        )
        .unwrap_err();
        assert!(e.to_string().contains("deal 7"));
    }

    #[test]
    fn no_loss_limits_no_safe_risk() {
        let mut r = rules();
        r.max_daily_loss_percent = None;
        r.max_loss_percent = None;
        let s = status(
            &r,
            AccountState {
                balance: 100_000.0,
                equity: 100_000.0,
            },
            &[],
            None,
            D0,
        )
        .unwrap();
        assert!(s.limits.is_empty());
        assert_eq!((s.verdict, s.max_safe_risk_percent), (Verdict::Ok, None));
    }
}
