//! Prop-firm tools: `set_prop_firm_rules`, `get_prop_firm_status`,
//! `remove_prop_firm_rules`.
//!
//! A rule set is stored per terminal (the account a challenge runs on) and
//! evaluated by [`tradeterm_core::prop_firm::status`] from the terminal's
//! account state and deal history. Its loss limits also install an equity
//! guard on the terminal ([`GuardRules::from_prop_firm`], store source
//! `prop_firm`), which the live monitor evaluates on every account change, so
//! an intraday breach between two status calls is recorded (time and equity),
//! alerted through `poll_alerts`, and makes the status `breached`. The guard
//! only reports unless the rule set says `link_equity_guard: true`: then its
//! action is `block` and [`guard_live_order`] refuses live orders that open
//! exposure while it is blocked or cannot be evaluated. See
//! `docs/prop-firm.md` and `docs/equity-guard.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Deal;
use tradeterm_core::equity_guard::{Breach, GuardRules};
use tradeterm_core::prop_firm::{
    self, AccountState, DrawdownMode, LimitStatus, ObjectiveStatus, Preset, PropFirmRules, Verdict,
};
use tradeterm_core::time::{DAY_MS, UnixMs, iso, parse_iso, to_iso};
use tradeterm_protocol::{Command, CommandResult};
use tradeterm_store::PropFirmRecord;

use crate::context::unexpected;
use crate::equity_guard::{self, SOURCE_PROP_FIRM};
use crate::{Annotations, Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Oldest accepted start of a challenge (the deal history is read from it).
const MAX_CHALLENGE_DAYS: i64 = 366;

/// Input of `set_prop_firm_rules`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// A preset or at least one rule (inside `allOf`, which client generators merge)
#[schemars(extend("allOf" = [{ "anyOf": [
        { "required": ["preset"], "properties": { "preset": { "not": { "type": "null" } } } },
        { "required": ["max_daily_loss_percent"], "properties": { "max_daily_loss_percent": { "not": { "type": "null" } } } },
        { "required": ["max_loss_percent"], "properties": { "max_loss_percent": { "not": { "type": "null" } } } },
        { "required": ["profit_target_percent"], "properties": { "profit_target_percent": { "not": { "type": "null" } } } },
        { "required": ["min_trading_days"], "properties": { "min_trading_days": { "not": { "type": "null" } } } },
        { "required": ["consistency_percent"], "properties": { "consistency_percent": { "not": { "type": "null" } } } },
] }, {
    // A trailing drawdown trails a maximum loss: given, or from the preset.
    "if": { "required": ["drawdown_mode"], "properties": { "drawdown_mode": { "const": "trailing" } } },
    "then": { "anyOf": [
        { "required": ["preset"], "properties": { "preset": { "not": { "type": "null" } } } },
        { "required": ["max_loss_percent"], "properties": { "max_loss_percent": { "not": { "type": "null" } } } },
    ] },
}]))]
pub struct SetPropFirmRulesInput {
    /// Starting rule set: `generic` (5 % daily loss, 10 % static max loss, 8 %
    /// target, 3 days) or `ftmo_2step_phase1` (modelled on FTMO's public 2-step
    /// phase-1 rules: 5 % daily, 10 % static max loss, 10 % target, 4 days,
    /// day change 23:00 UTC). The fields below override it. Omit for a fully
    /// custom rule set (only the rules you give apply).
    #[serde(default)]
    pub preset: Option<Preset>,
    /// Account size of the challenge in account currency (e.g. 100000): the
    /// base of every percentage.
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1e12))]
    pub initial_balance: f64,
    /// Start of the challenge, ISO 8601 (default: now). Deals before it are
    /// ignored; an earlier start is taken as 366 days ago, a later one as one
    /// day ahead.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub start_time: Option<String>,
    /// Maximum loss within one trading day, % of `initial_balance` (0-100].
    /// Above `max_loss_percent` it is accepted with a warning: the maximum
    /// loss is then reached first.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
    pub max_daily_loss_percent: Option<f64>,
    /// Maximum overall loss, % of `initial_balance` (0-100].
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
    pub max_loss_percent: Option<f64>,
    /// `static` (floor fixed below the initial balance, the default) or
    /// `trailing` (floor trails the highest balance/equity seen; needs
    /// `max_loss_percent` or a preset).
    #[serde(default)]
    pub drawdown_mode: Option<DrawdownMode>,
    /// Profit target, % of `initial_balance` (0-1000].
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1000))]
    pub profit_target_percent: Option<f64>,
    /// Minimum number of trading days (1-365): days with at least one opening or closing deal.
    #[serde(default)]
    #[schemars(range(min = 1, max = 365))]
    pub min_trading_days: Option<u32>,
    /// Consistency: the best day's realised profit may be at most this % of the total profit (0-100].
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
    pub consistency_percent: Option<f64>,
    /// Hour (UTC, 0-23) at which the trading day changes (default 0, the
    /// FTMO-style preset 23).
    #[serde(default)]
    #[schemars(range(max = 23))]
    pub day_start_hour_utc: Option<u8>,
    /// `true` installs enforcement: the rule set's equity guard gets the
    /// action `block`, so live orders that open exposure on this terminal are
    /// refused (`TRADING_DISABLED`) from a breach of a loss limit until the
    /// next trading day, or while the guard cannot be evaluated. Default
    /// `false` (advisory: breaches are still recorded and alerted).
    #[serde(default)]
    pub link_equity_guard: Option<bool>,
}

/// Result of `set_prop_firm_rules`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SetPropFirmRulesOutput {
    /// Terminal the rules apply to.
    pub terminal_id: String,
    /// The rule set now in force.
    pub rules: PropFirmRules,
    /// `advisory` or `enforced` (`link_equity_guard`).
    pub enforcement: Enforcement,
    /// When the rules were first set, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub created_at: UnixMs,
    /// When they were last replaced, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub updated_at: UnixMs,
    /// Notes on a rule set that behaves in a way you may not expect (a
    /// daily loss limit above the maximum loss: the maximum loss is then
    /// reached first); empty for the usual ones.
    pub warnings: Vec<String>,
}

/// Whether the tracker only reports or also refuses live orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Enforcement {
    /// Reports only.
    Advisory,
    /// Live orders opening exposure are refused while `breached` or `block`.
    Enforced,
}

/// Input of `get_prop_firm_status` and `remove_prop_firm_rules`: nothing
/// besides the target terminal.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropFirmTerminalInput {}

/// Overall verdict of `get_prop_firm_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusVerdict {
    /// Every limit has at least half of its room left.
    Ok,
    /// A limit has less than half of its room left.
    Warning,
    /// A limit has less than a fifth of its room left.
    Critical,
    /// A limit was reached: the challenge is failed.
    Breached,
    /// The status cannot be computed (terminal unreachable): treat as "do not
    /// trade". Not a rule outcome; `reason` says why.
    Block,
}

impl From<Verdict> for StatusVerdict {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Ok => Self::Ok,
            Verdict::Warning => Self::Warning,
            Verdict::Critical => Self::Critical,
            Verdict::Breached => Self::Breached,
        }
    }
}

/// Result of `get_prop_firm_status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PropFirmStatusOutput {
    /// Terminal evaluated.
    pub terminal_id: String,
    /// `ok`, `warning`, `critical`, `breached`, or `block` when the terminal
    /// could not be read.
    pub verdict: StatusVerdict,
    /// Why the verdict is what it is, for a trader (the tightest limit, or why `block`).
    pub reason: String,
    /// `advisory` or `enforced`.
    pub enforcement: Enforcement,
    /// Largest risk of one new trade (loss at its stop, costs included), % of
    /// current equity, that cannot breach any limit if open positions do not
    /// worsen: tightest headroom ÷ equity × 100. 0 when breached or `block`;
    /// `null` without loss limits.
    pub max_safe_risk_percent: Option<f64>,
    /// The same in account currency (`null` for `block` or without loss limits).
    pub max_safe_risk_amount: Option<f64>,
    /// Loss limits with headroom (empty for `block`).
    pub limits: Vec<LimitStatus>,
    /// Objectives and progress (empty for `block`).
    pub objectives: Vec<ObjectiveStatus>,
    /// Every objective met and nothing breached (`null` for `block`).
    pub passed: Option<bool>,
    /// Deposit currency.
    pub currency: Option<String>,
    /// Current balance.
    pub balance: Option<f64>,
    /// Current equity.
    pub equity: Option<f64>,
    /// Start of the current trading day, ISO 8601 UTC.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub day_start: Option<UnixMs>,
    /// Balance at the start of the trading day.
    pub day_start_balance: Option<f64>,
    /// Profit or loss of the trading day (closed and floating, deposits excluded).
    pub daily_pnl: Option<f64>,
    /// Closed profit since the start (deposits and withdrawals excluded).
    pub closed_profit: Option<f64>,
    /// Deposits minus withdrawals since the start.
    pub net_cash_flow: Option<f64>,
    /// Trading days so far.
    pub trading_days: Option<u32>,
    /// High-water mark of balance and observed equity (trailing reference).
    pub high_water_mark: Option<f64>,
    /// Breaches the live monitor recorded since the rules were set (time and
    /// equity at that moment), oldest first: any makes the verdict `breached`,
    /// even when the account has recovered since.
    pub intraday_breaches: Vec<Breach>,
    /// Evaluation time, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
    /// The rule set evaluated.
    pub rules: PropFirmRules,
    /// Notes on the rule set, as `set_prop_firm_rules` gives them.
    pub warnings: Vec<String>,
}

/// Result of `remove_prop_firm_rules`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RemovedOutput {
    /// Terminal.
    pub terminal_id: String,
    /// `true` when a rule set was removed, `false` when there was none.
    pub removed: bool,
}

fn enforcement(r: &PropFirmRules) -> Enforcement {
    if r.link_equity_guard {
        Enforcement::Enforced
    } else {
        Enforcement::Advisory
    }
}

fn stored_rules(record: &PropFirmRecord) -> Result<PropFirmRules, ToolError> {
    serde_json::from_value(record.rules.clone())
        .map_err(|e| ToolError::Internal(format!("stored prop-firm rules are not valid: {e}")))
}

fn build_rules(input: &SetPropFirmRulesInput, now: i64) -> Result<PropFirmRules, ToolError> {
    let start_time = match input.start_time.as_deref() {
        Some(s) => parse_iso(s).map_err(|_| ToolError::InvalidInput("`start_time` must be an ISO 8601 time".into()))?,
        None => now,
    };
    // Earlier starts are taken as 366 days ago (the deal history a challenge
    // reads), later ones as one day ahead: not errors, since the schema
    // cannot state a window relative to now.
    let start_time = start_time.clamp(now - MAX_CHALLENGE_DAYS * DAY_MS, now + DAY_MS);
    let mut rules = match input.preset {
        Some(p) => p.rules(input.initial_balance, start_time),
        None => PropFirmRules {
            preset: None,
            initial_balance: input.initial_balance,
            start_time,
            max_daily_loss_percent: None,
            max_loss_percent: None,
            drawdown_mode: DrawdownMode::Static,
            profit_target_percent: None,
            min_trading_days: None,
            consistency_percent: None,
            day_start_hour_utc: 0,
            link_equity_guard: false,
        },
    };
    macro_rules! over {
        ($($field:ident),*) => {
            $(if input.$field.is_some() {
                rules.$field = input.$field;
            })*
        };
    }
    over!(
        max_daily_loss_percent,
        max_loss_percent,
        profit_target_percent,
        min_trading_days,
        consistency_percent
    );
    if let Some(mode) = input.drawdown_mode {
        rules.drawdown_mode = mode;
    }
    if let Some(hour) = input.day_start_hour_utc {
        rules.day_start_hour_utc = hour;
    }
    if let Some(link) = input.link_equity_guard {
        rules.link_equity_guard = link;
    }
    rules.validate().map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    Ok(rules)
}

async fn set_prop_firm_rules(
    ctx: ToolContext,
    input: SetPropFirmRulesInput,
) -> Result<SetPropFirmRulesOutput, ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    let rules = build_rules(&input, ctx.now_ms)?;
    let value = serde_json::to_value(&rules).map_err(|e| ToolError::Internal(e.to_string()))?;
    let record = match ctx
        .services
        .store
        .set_prop_firm_rules(&ctx.license_id, &terminal, &value)
        .await
    {
        Err(tradeterm_store::StoreError::NotFound(_)) => {
            return Err(ToolError::NotFound(format!("no terminal {terminal} on this license")));
        }
        other => other?,
    };
    install_guard(&ctx, &terminal, &rules).await?;
    Ok(SetPropFirmRulesOutput {
        terminal_id: terminal,
        enforcement: enforcement(&rules),
        warnings: rules.warnings(),
        rules,
        created_at: record.created_at,
        updated_at: record.updated_at,
    })
}

/// Installs (or replaces, starting afresh) the equity guard of the rule set,
/// and takes its first observation when the terminal answers.
async fn install_guard(ctx: &ToolContext, terminal: &str, rules: &PropFirmRules) -> Result<(), ToolError> {
    let store = &ctx.services.store;
    match GuardRules::from_prop_firm(rules) {
        Some(guard) => {
            let value = serde_json::to_value(&guard).map_err(|e| ToolError::Internal(e.to_string()))?;
            store
                .set_equity_guard(&ctx.license_id, terminal, SOURCE_PROP_FIRM, &value)
                .await?;
            // Best effort: without an answer the monitor takes the first reading.
            let _reading = equity_guard::observe_now(ctx).await?;
        }
        None => {
            store
                .remove_equity_guard(&ctx.license_id, terminal, SOURCE_PROP_FIRM)
                .await?;
        }
    }
    Ok(())
}

async fn deals(ctx: &ToolContext, from: i64, to: i64) -> Result<Vec<Deal>, ToolError> {
    match ctx.run(Command::HistoryDeals { from, to }).await? {
        CommandResult::Deals { deals } => Ok(deals),
        other => Err(unexpected("history_deals", &other)),
    }
}

/// Reads the account and the deals since the start consistently: the
/// history is read on both sides of the account so no deal slips in between.
async fn account_and_deals(
    ctx: &ToolContext,
    rules: &PropFirmRules,
) -> Result<(tradeterm_core::AccountInfo, Vec<Deal>), ToolError> {
    // Up to a day past now: a terminal clock may run ahead of the server's.
    let until = ctx.now_ms.max(rules.start_time).saturating_add(DAY_MS);
    let mut history = deals(ctx, rules.start_time, until).await?;
    let mut account = ctx.account().await?;
    for _ in 0..3 {
        let again = deals(ctx, rules.start_time, until).await?;
        let same = again.len() == history.len()
            && again.iter().map(|d| d.ticket).max() == history.iter().map(|d| d.ticket).max();
        if same {
            break;
        }
        history = again;
        account = ctx.account().await?;
    }
    Ok((account, history))
}

/// Whether an error means "the terminal cannot be read now" (→ `block`).
fn is_unreachable(e: &ToolError) -> bool {
    matches!(
        e,
        ToolError::Dispatch(_) | ToolError::Gateway(_) | ToolError::NotFound(_)
    )
}

fn reason_of(status: &prop_firm::Status) -> String {
    let name = |limit: &LimitStatus| match limit.rule {
        prop_firm::RuleKind::DailyLoss => "daily loss",
        _ => "maximum loss",
    };
    let tightest = status
        .limits
        .iter()
        .min_by(|a, b| a.headroom_percent.total_cmp(&b.headroom_percent));
    match (status.verdict, tightest) {
        (_, None) => "no loss limit is set; only objectives are tracked".into(),
        (Verdict::Breached, Some(limit)) if limit.breached_on_closed_balance || limit.headroom <= 0.0 => {
            let limit = status
                .limits
                .iter()
                .find(|limit| limit.verdict == Verdict::Breached)
                .unwrap_or(limit);
            if limit.breached_on_closed_balance {
                format!("{} limit breached by a closed balance since the start", name(limit))
            } else {
                format!(
                    "{} limit breached: equity is {:.2} below its floor {:.2}",
                    name(limit),
                    -limit.headroom,
                    limit.floor_equity
                )
            }
        }
        (_, Some(limit)) => format!(
            "tightest limit: {}, {:.2} of headroom ({:.1} % of its room) above the equity floor {:.2}",
            name(limit),
            limit.headroom,
            limit.headroom_percent,
            limit.floor_equity
        ),
    }
}

/// The rule set of the context's terminal and its status: `Ok(None)` without
/// a rule set; the status is `Err(reason)` when the terminal cannot be read.
#[allow(clippy::type_complexity, reason = "a private helper's one return shape")]
async fn evaluate(
    ctx: &ToolContext,
) -> Result<
    Option<(
        PropFirmRules,
        Result<(tradeterm_core::AccountInfo, prop_firm::Status), String>,
        Vec<tradeterm_core::equity_guard::Breach>,
    )>,
    ToolError,
> {
    let terminal = ctx.terminal()?;
    let Some(record) = ctx.services.store.prop_firm_rules(&ctx.license_id, terminal).await? else {
        return Ok(None);
    };
    let rules = stored_rules(&record)?;
    // The guard of the rule set: this reading feeds it too, and its breach
    // records (made by the live monitor between calls) count.
    let (guards, _) = equity_guard::observe_now(ctx).await?;
    let breaches = guards
        .iter()
        .find(|g| g.record.source == SOURCE_PROP_FIRM)
        .map(|g| g.state.breaches.clone())
        .unwrap_or_default();
    let (account, history) = match account_and_deals(ctx, &rules).await {
        Ok(x) => x,
        Err(e) if is_unreachable(&e) => return Ok(Some((rules, Err(e.to_string()), breaches))),
        Err(e) => return Err(e),
    };
    let state = AccountState {
        balance: account.balance,
        equity: account.equity,
    };
    let status = prop_firm::status(&rules, state, &history, record.high_water_mark, ctx.now_ms)
        .map_err(|e| ToolError::Dispatch(format!("the terminal's data is unusable: {e}")))?;
    if rules.drawdown_mode == DrawdownMode::Trailing
        && record.high_water_mark.is_none_or(|m| status.high_water_mark > m)
    {
        ctx.services
            .store
            .raise_prop_firm_high_water_mark(&ctx.license_id, terminal, status.high_water_mark)
            .await?;
    }
    Ok(Some((rules, Ok((account, status)), breaches)))
}

fn no_rules(terminal: &str) -> ToolError {
    ToolError::NotFound(format!(
        "no prop-firm rules are set on terminal {terminal}; set them with set_prop_firm_rules"
    ))
}

async fn get_prop_firm_status(
    ctx: ToolContext,
    _input: PropFirmTerminalInput,
) -> Result<PropFirmStatusOutput, ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    let Some((rules, outcome, breaches)) = evaluate(&ctx).await? else {
        return Err(no_rules(&terminal));
    };
    let intraday_breaches: Vec<Breach> = breaches.clone();
    let out = match outcome {
        Err(why) => PropFirmStatusOutput {
            terminal_id: terminal,
            verdict: StatusVerdict::Block,
            reason: format!("status unavailable, do not trade: {why}"),
            enforcement: enforcement(&rules),
            max_safe_risk_percent: Some(0.0),
            max_safe_risk_amount: None,
            limits: Vec::new(),
            objectives: Vec::new(),
            passed: None,
            currency: None,
            balance: None,
            equity: None,
            day_start: None,
            day_start_balance: None,
            daily_pnl: None,
            closed_profit: None,
            net_cash_flow: None,
            trading_days: None,
            high_water_mark: None,
            intraday_breaches,
            as_of: ctx.now_ms,
            warnings: rules.warnings(),
            rules,
        },
        Ok((account, s)) => PropFirmStatusOutput {
            terminal_id: terminal,
            verdict: match breaches.first() {
                Some(_) => StatusVerdict::Breached,
                None => s.verdict.into(),
            },
            reason: match breaches.first() {
                Some(b) => format!(
                    "{} limit breached intraday at {} with equity {:.2}: {}",
                    guard_rule_name(b.rule),
                    to_iso(b.time),
                    b.equity,
                    b.message
                ),
                None => reason_of(&s),
            },
            max_safe_risk_percent: if breaches.is_empty() {
                s.max_safe_risk_percent
            } else {
                Some(0.0)
            },
            intraday_breaches,
            enforcement: enforcement(&rules),
            max_safe_risk_amount: s.max_safe_risk_amount,
            passed: Some(s.passed),
            currency: Some(account.currency),
            balance: Some(account.balance),
            equity: Some(account.equity),
            day_start: Some(s.day_start),
            day_start_balance: Some(s.day_start_balance),
            daily_pnl: Some(s.daily_pnl),
            closed_profit: Some(s.closed_profit),
            net_cash_flow: Some(s.net_cash_flow),
            trading_days: Some(s.trading_days),
            high_water_mark: Some(s.high_water_mark),
            as_of: ctx.now_ms,
            warnings: rules.warnings(),
            rules,
            limits: s.limits,
            objectives: s.objectives,
        },
    };
    Ok(out)
}

async fn remove_prop_firm_rules(ctx: ToolContext, _input: PropFirmTerminalInput) -> Result<RemovedOutput, ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    let removed = ctx
        .services
        .store
        .remove_prop_firm_rules(&ctx.license_id, &terminal)
        .await?;
    ctx.services
        .store
        .remove_equity_guard(&ctx.license_id, &terminal, SOURCE_PROP_FIRM)
        .await?;
    Ok(RemovedOutput {
        terminal_id: terminal,
        removed,
    })
}

/// The equity guards of live orders that open exposure (the prop-firm
/// rules' guard with `link_equity_guard: true`, and the trader's own): see
/// [`equity_guard::guard_live_order`]. Closing and reducing positions is
/// never guarded.
pub(crate) async fn guard_live_order(ctx: &ToolContext) -> Result<(), ToolError> {
    equity_guard::guard_live_order(ctx).await
}

fn guard_rule_name(rule: tradeterm_core::equity_guard::GuardRule) -> &'static str {
    use tradeterm_core::equity_guard::GuardRule;
    match rule {
        GuardRule::DailyLoss => "daily loss",
        GuardRule::MaxDrawdown | GuardRule::EquityFloor => "maximum loss",
        GuardRule::MaxOpenRisk => "open risk",
    }
}

const CONFIGURE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: false,
};

pub(crate) fn tools() -> Vec<Tool> {
    let spec = |name, title, description, annotations| ToolSpec {
        name,
        title,
        description,
        capability: Capability::Trade,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations,
    };
    vec![
        spec(
            "set_prop_firm_rules",
            "Set prop-firm rules",
            "Sets (or replaces) the prop-firm challenge rules tracked for this terminal: a preset (`generic`, or \
             `ftmo_2step_phase1`, modelled on public rules) and/or custom limits — max daily loss, max loss \
             (static or trailing), profit target, minimum trading days, consistency — all as % of \
             `initial_balance`. Advisory by default; `link_equity_guard: true` makes live orders fail while the \
             rules are breached. Replacing resets the trailing high-water mark. Changes only stored \
             configuration, never the account.",
            CONFIGURE,
        )
        .build(set_prop_firm_rules),
        spec(
            "get_prop_firm_status",
            "Prop-firm status",
            "Evaluates this terminal's prop-firm rules against its account and deal history now: verdict \
             `ok|warning|critical|breached` (warning under 50 % of a limit's room left, critical under 20 %, \
             breached at 0), per-limit headroom and equity floor, objective progress, and \
             `max_safe_risk_percent` (largest risk of one new trade, % of equity, that cannot breach a limit). \
             The server also watches the loss limits live (every account change, every few seconds with open \
             positions): a breach between two calls is listed in `intraday_breaches` (time, equity) and makes the \
             verdict `breached` even after a recovery. When the terminal cannot be read the verdict is `block` (do \
             not trade) with the reason.",
            READ_TERMINAL,
        )
        .build(get_prop_firm_status),
        spec(
            "remove_prop_firm_rules",
            "Remove prop-firm rules",
            "Removes this terminal's prop-firm rules (and their enforcement). `removed: false` when there were \
             none.",
            CONFIGURE,
        )
        .build(remove_prop_firm_rules),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(v: serde_json::Value) -> SetPropFirmRulesInput {
        serde_json::from_value(v).unwrap()
    }

    const NOW: i64 = 1_795_003_200_000;

    #[test]
    fn presets_and_overrides() {
        let rules = build_rules(
            &input(serde_json::json!({
                "preset": "ftmo_2step_phase1", "initial_balance": 100000.0,
                "max_daily_loss_percent": 4.0, "link_equity_guard": true
            })),
            NOW,
        )
        .unwrap();
        assert_eq!(rules.preset, Some(Preset::Ftmo2StepPhase1));
        assert_eq!(rules.max_daily_loss_percent, Some(4.0));
        assert_eq!(rules.max_loss_percent, Some(10.0));
        assert_eq!(rules.min_trading_days, Some(4));
        assert_eq!(rules.start_time, NOW);
        assert!(rules.link_equity_guard);
        let custom = build_rules(
            &input(
                serde_json::json!({ "initial_balance": 5000.0, "max_loss_percent": 6.0, "drawdown_mode": "trailing" }),
            ),
            NOW,
        )
        .unwrap();
        assert_eq!(
            (custom.max_daily_loss_percent, custom.profit_target_percent),
            (None, None)
        );
        assert_eq!(custom.drawdown_mode, DrawdownMode::Trailing);
    }

    #[test]
    fn stored_rules_read_iso_and_unix_ms_start_times() {
        let rules = build_rules(
            &input(serde_json::json!({ "preset": "generic", "initial_balance": 10000.0 })),
            NOW,
        )
        .unwrap();
        let record = |rules: serde_json::Value| PropFirmRecord {
            license_id: "lic".into(),
            terminal_id: "term".into(),
            rules,
            high_water_mark: None,
            created_at: 1,
            updated_at: 2,
        };
        let now = serde_json::to_value(&rules).unwrap();
        assert_eq!(now["start_time"], "2026-11-18T12:00:00Z");
        assert_eq!(stored_rules(&record(now.clone())).unwrap(), rules);
        // Rules stored before times were written as ISO text.
        let mut old = now;
        old["start_time"] = serde_json::json!(NOW);
        assert_eq!(stored_rules(&record(old)).unwrap(), rules);
    }

    #[test]
    fn a_start_outside_the_window_is_taken_at_its_edge() {
        let old = build_rules(
            &input(serde_json::json!({ "preset": "generic", "initial_balance": 1.0, "start_time": "2020-01-01T00:00:00Z" })),
            NOW,
        )
        .unwrap();
        assert_eq!(old.start_time, NOW - MAX_CHALLENGE_DAYS * DAY_MS);
        let late = build_rules(
            &input(serde_json::json!({ "preset": "generic", "initial_balance": 1.0, "start_time": "2099-01-01T00:00:00Z" })),
            NOW,
        )
        .unwrap();
        assert_eq!(late.start_time, NOW + DAY_MS);
    }

    #[test]
    fn a_daily_loss_above_the_max_loss_is_kept_with_a_warning() {
        let rules = build_rules(
            &input(
                serde_json::json!({ "preset": "generic", "initial_balance": 1000.0, "max_daily_loss_percent": 12.0 }),
            ),
            NOW,
        )
        .unwrap();
        assert_eq!(
            (rules.max_daily_loss_percent, rules.max_loss_percent),
            (Some(12.0), Some(10.0))
        );
        let warnings = rules.warnings();
        assert!(
            warnings.len() == 1 && warnings[0].contains("maximum loss is reached first"),
            "{warnings:?}"
        );
    }

    /// The schema states what `validate` checks across fields: a trailing
    /// drawdown needs a maximum loss, given or from a preset.
    #[test]
    fn the_schema_states_that_trailing_needs_a_max_loss() {
        let schema = serde_json::to_value(
            crate::schema::input_settings()
                .into_generator()
                .into_root_schema_for::<SetPropFirmRulesInput>(),
        )
        .unwrap();
        let rule = schema["allOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s.get("if").is_some())
            .unwrap();
        assert_eq!(rule["if"]["properties"]["drawdown_mode"]["const"], "trailing");
        let required: Vec<&str> = rule["then"]["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["required"][0].as_str().unwrap())
            .collect();
        assert_eq!(required, ["preset", "max_loss_percent"]);
        // What the schema lets through, `validate` accepts; what it refuses, `validate` refuses.
        for (value, ok) in [
            (
                serde_json::json!({ "preset": "generic", "initial_balance": 1.0, "drawdown_mode": "trailing" }),
                true,
            ),
            (
                serde_json::json!({ "initial_balance": 1.0, "max_loss_percent": 5.0, "drawdown_mode": "trailing" }),
                true,
            ),
            (
                serde_json::json!({ "initial_balance": 1.0, "profit_target_percent": 5.0, "drawdown_mode": "trailing" }),
                false,
            ),
        ] {
            assert_eq!(build_rules(&input(value.clone()), NOW).is_ok(), ok, "{value}");
        }
    }

    #[test]
    fn bad_inputs_are_validation_errors() {
        for (value, needle) in [
            (serde_json::json!({ "initial_balance": 1000.0 }), "no rule"),
            (
                serde_json::json!({ "preset": "generic", "initial_balance": -1.0 }),
                "initial_balance",
            ),
            (
                serde_json::json!({ "preset": "generic", "initial_balance": 1.0, "start_time": "soon" }),
                "ISO 8601",
            ),
            (
                serde_json::json!({ "preset": "generic", "initial_balance": 1.0, "day_start_hour_utc": 24 }),
                "day_start_hour_utc",
            ),
        ] {
            let error = build_rules(&input(value), NOW).unwrap_err();
            assert_eq!(error.code(), "VALIDATION_ERROR");
            assert!(error.to_string().contains(needle), "{error} / {needle}");
        }
    }

    #[test]
    fn catalog_entries() {
        let set = crate::find("set_prop_firm_rules").unwrap();
        assert_eq!(
            (set.capability, set.gate, set.target),
            (Capability::Trade, Gate::Always, Target::Terminal)
        );
        assert!(!set.annotations.read_only && set.annotations.idempotent && !set.annotations.destructive);
        let get = crate::find("get_prop_firm_status").unwrap();
        assert!(get.annotations.read_only && get.annotations.open_world);
        assert!(crate::find("remove_prop_firm_rules").is_some());
    }
}
