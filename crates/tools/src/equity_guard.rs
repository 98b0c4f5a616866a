//! Equity guard tools: `set_equity_guard`, `get_equity_guard`,
//! `remove_equity_guard`, and the evaluation every other part shares.
//!
//! A guard is stored per (license, terminal, source) with its evaluation
//! state ([`tradeterm_core::equity_guard::GuardState`]: high-water mark, day
//! anchor, latched rules, breach records). Two sources exist: `user` (these
//! tools) and `prop_firm` (installed by `set_prop_firm_rules` through
//! [`GuardRules::from_prop_firm`]; the same mechanism, a second slot, so a
//! prop-firm rule set never overwrites a trader's own guard).
//!
//! Every account reading feeds [`observe`]: the live monitor
//! ([`crate::monitor`]) on each `account` event and every few seconds while
//! positions are open, the status tools, and the check of live orders
//! ([`guard_live_order`]). The state is written back compare-and-swap, so
//! concurrent readings never lose a breach. A breach is recorded with the
//! time and equity of the observation that saw it and is delivered by
//! `poll_alerts` (`crate::alerts`). With action `block`, live orders that open
//! exposure are refused (`TRADING_DISABLED`) until the next day anchor or
//! until the guard is removed; a `block` guard that cannot be evaluated
//! refuses too (fail closed). See `docs/equity-guard.md`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::AccountInfo;
use tradeterm_core::equity_guard::{
    self, Breach, GuardAction, GuardError, GuardRules, GuardState, GuardStatus, Observation, OpenRisk, RuleStatus,
    Verdict,
};
use tradeterm_core::prop_firm::Verdict as PropFirmVerdict;
use tradeterm_core::time::{UnixMs, iso, to_iso};
use tradeterm_protocol::{Command, CommandResult};
use tradeterm_store::{EquityGuardRecord, Store};

use crate::context::unexpected;
use crate::{Annotations, Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Store source of the guard set by `set_equity_guard`.
pub(crate) const SOURCE_USER: &str = "user";
/// Store source of the guard installed by the prop-firm rule set.
pub(crate) const SOURCE_PROP_FIRM: &str = "prop_firm";
/// Compare-and-swap attempts of one observation before giving up.
const CAS_ATTEMPTS: usize = 5;

/// Who installed a guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuardSource {
    /// `set_equity_guard`.
    EquityGuard,
    /// The terminal's prop-firm rule set (`set_prop_firm_rules`).
    PropFirm,
}

impl GuardSource {
    fn of(source: &str) -> Self {
        if source == SOURCE_PROP_FIRM {
            Self::PropFirm
        } else {
            Self::EquityGuard
        }
    }

    /// How a refusal names the guard.
    fn label(self) -> &'static str {
        match self {
            Self::EquityGuard => "equity guard",
            Self::PropFirm => "prop-firm equity guard (link_equity_guard)",
        }
    }
}

/// One guard after an observation (or as stored when none could be made).
#[derive(Debug, Clone)]
pub(crate) struct Evaluated {
    /// The record as stored after the observation.
    pub record: EquityGuardRecord,
    /// Its rules (`None` when the stored rules are unreadable).
    pub rules: Option<GuardRules>,
    /// Its state after the observation.
    pub state: GuardState,
    /// The verdict of this observation (`None` when none was evaluated).
    pub verdict: Option<Verdict>,
    /// Why the guard could not be evaluated, if it could not.
    pub error: Option<String>,
}

impl Evaluated {
    pub(crate) fn source(&self) -> GuardSource {
        GuardSource::of(&self.record.source)
    }
}

fn parse_rules(record: &EquityGuardRecord) -> Option<GuardRules> {
    serde_json::from_value(record.rules.clone()).ok()
}

fn parse_state(record: &EquityGuardRecord) -> Option<GuardState> {
    serde_json::from_value(record.state.clone()).ok()
}

/// Evaluates `obs` on one guard and stores the new state (compare-and-swap,
/// re-reading on a lost race). A stored step that records breaches
/// publishes `equity_guard.breached` for each; one that ends a latched
/// breach (a new day anchor) publishes `equity_guard.recovered`.
async fn evaluate_one(
    store: &dyn Store,
    events: Option<&tradeterm_events::Publisher>,
    mut record: EquityGuardRecord,
    obs: Option<&Observation>,
) -> Evaluated {
    let mut out = Evaluated {
        rules: parse_rules(&record),
        state: parse_state(&record).unwrap_or_default(),
        record: record.clone(),
        verdict: None,
        error: None,
    };
    let Some(obs) = obs else {
        if out.rules.is_none() {
            out.error = Some("the stored guard rules are not valid".into());
        }
        return out;
    };
    for _ in 0..CAS_ATTEMPTS {
        // The rules of the record read last: a guard replaced while this
        // evaluation ran is evaluated with its new rules, never the old ones.
        out.rules = parse_rules(&record);
        let Some(rules) = out.rules.clone() else {
            out.error = Some("the stored guard rules are not valid".into());
            return out;
        };
        let Some(state) = parse_state(&record) else {
            out.error = Some("the stored guard state is not valid".into());
            return out;
        };
        match equity_guard::evaluate(&rules, &state, obs) {
            Ok((next, verdict)) => {
                let value = match serde_json::to_value(&next) {
                    Ok(v) => v,
                    Err(e) => {
                        out.error = Some(e.to_string());
                        return out;
                    }
                };
                let (license, terminal, source) = (&record.license_id, &record.terminal_id, &record.source);
                match store
                    .update_equity_guard_state(license, terminal, source, record.version, &value)
                    .await
                {
                    Ok(Some(version)) => {
                        for breach in &verdict.breaches {
                            tracing::warn!(
                                license = %license, terminal = %terminal, source = %source,
                                rule = ?breach.rule, equity = breach.equity, time = %to_iso(breach.time),
                                "equity guard breached"
                            );
                        }
                        if let Some(events) = events {
                            publish_step(events, &record, &state, &next, &verdict);
                        }
                        record.version = version;
                        record.state = value;
                        out.record = record;
                        out.state = next;
                        out.verdict = Some(verdict);
                        return out;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        out.error = Some(format!("the guard state could not be stored: {e}"));
                        return out;
                    }
                }
            }
            // A newer observation was evaluated first: this one is stale.
            Err(GuardError::OutOfOrder { .. }) => {
                out.state = state;
                out.record = record;
                return out;
            }
            Err(e) => {
                out.error = Some(e.to_string());
                out.state = state;
                return out;
            }
        }
        // Lost the race: re-read this guard and evaluate again.
        match store.equity_guards(&record.license_id, &record.terminal_id).await {
            Ok(list) => match list.into_iter().find(|g| g.source == record.source) {
                Some(fresh) => record = fresh,
                None => return out,
            },
            Err(e) => {
                out.error = Some(format!("the guard could not be re-read: {e}"));
                return out;
            }
        }
    }
    out.error = Some("the guard state kept changing under concurrent evaluations".into());
    out
}

/// The events of one stored evaluation step: a breach recorded, a latched
/// breach ended.
fn publish_step(
    events: &tradeterm_events::Publisher,
    record: &EquityGuardRecord,
    before: &GuardState,
    after: &GuardState,
    verdict: &Verdict,
) {
    use tradeterm_events::model::RuleData;
    use tradeterm_events::{Draft, EventType};
    let source = GuardSource::of(&record.source);
    let details = |extra: serde_json::Value| {
        let mut d = serde_json::json!({ "source": source, "status": verdict.status });
        if let (Some(d), Some(extra)) = (d.as_object_mut(), extra.as_object()) {
            d.extend(extra.clone());
        }
        d
    };
    let name = |rule: equity_guard::GuardRule| {
        serde_json::to_value(rule)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    for breach in &verdict.breaches {
        let data = RuleData {
            rule: name(breach.rule),
            message: format!("{}: {}", source.label(), breach.message),
            symbol: None,
            details: details(serde_json::to_value(breach).unwrap_or_default()),
        };
        let draft = Draft::new(
            EventType::EquityGuardBreached,
            breach.time,
            Some(&record.terminal_id),
            &data,
        );
        events.publish(&record.license_id, draft);
    }
    // The verdict on `get_prop_firm_status`'s scale (ok, warning, critical,
    // breached); a state stored before verdicts were kept has its status.
    let previous = before.last_verdict.or(before.last_status.map(|s| match s {
        GuardStatus::Ok => PropFirmVerdict::Ok,
        GuardStatus::Warning => PropFirmVerdict::Warning,
        GuardStatus::Breached | GuardStatus::Blocked => PropFirmVerdict::Breached,
    }));
    if source == GuardSource::PropFirm
        && let (Some(from), Some(to)) = (previous, after.last_verdict)
        && from != to
    {
        let word = |v: PropFirmVerdict| {
            serde_json::to_value(v)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        };
        let (from, to) = (word(from), word(to));
        let data = RuleData {
            rule: "prop_firm".into(),
            message: format!("prop-firm verdict {from} → {to}"),
            symbol: None,
            details: details(serde_json::json!({ "from": from, "to": to, "rules": verdict.rules })),
        };
        let time = after.last_time.unwrap_or_else(tradeterm_events::now_ms);
        let draft = Draft::new(EventType::PropFirmStatusChanged, time, Some(&record.terminal_id), &data);
        events.publish(&record.license_id, draft);
    }
    if !before.latched.is_empty() && after.latched.is_empty() {
        let rules: Vec<String> = before.latched.iter().map(|r| name(*r)).collect();
        let data = RuleData {
            rule: rules.join(","),
            message: format!(
                "{}: a new trading day began; the breached rules ({}) are within their limits again",
                source.label(),
                rules.join(", ")
            ),
            symbol: None,
            details: details(serde_json::json!({ "rules": rules })),
        };
        let time = after.last_time.unwrap_or_else(tradeterm_events::now_ms);
        let draft = Draft::new(EventType::EquityGuardRecovered, time, Some(&record.terminal_id), &data);
        events.publish(&record.license_id, draft);
    }
}

/// Evaluates one observation on every guard of the terminal (or, with `obs`
/// `None`, only loads them), publishing the steps' events into `events`.
/// Returns nothing when the terminal has no guard.
pub(crate) async fn observe(
    store: &dyn Store,
    events: Option<&tradeterm_events::Publisher>,
    license_id: &str,
    terminal_id: &str,
    obs: Option<&Observation>,
) -> Result<Vec<Evaluated>, ToolError> {
    let records = store.equity_guards(license_id, terminal_id).await?;
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        out.push(evaluate_one(store, events, r, obs).await);
    }
    Ok(out)
}

/// Whether any guard needs the open risk (money at risk to the stops).
pub(crate) fn needs_open_risk(records: &[EquityGuardRecord]) -> bool {
    records
        .iter()
        .any(|r| parse_rules(r).is_some_and(|g| g.max_open_risk.is_some()))
}

/// Money at risk to the stops of the open positions, or `None` when a
/// position's symbol cannot be converted into the account currency.
pub(crate) async fn open_risk(ctx: &ToolContext, account: &AccountInfo) -> Result<Option<OpenRisk>, ToolError> {
    use tradeterm_core::sizing::{AccountSnapshot, PortfolioInput, portfolio_summary};
    let positions = match ctx.run(Command::Positions { symbol: None }).await? {
        CommandResult::Positions { positions } => positions,
        other => return Err(unexpected("positions", &other)),
    };
    let mut specs = BTreeMap::new();
    let mut rates = BTreeMap::new();
    for position in &positions {
        if specs.contains_key(&position.symbol) {
            continue;
        }
        let spec = ctx.spec(&position.symbol).await?;
        let tick = ctx.tick(&position.symbol).await?;
        for ccy in [&spec.currency_profit, &spec.currency_margin] {
            if let Some(rate) = ctx.rate_to_account(ccy, &account.currency, &spec, &tick).await {
                rates.insert(ccy.clone(), rate);
            }
        }
        specs.insert(position.symbol.clone(), spec);
    }
    let snapshot = AccountSnapshot::from(account);
    let summary = portfolio_summary(&PortfolioInput {
        account: &snapshot,
        account_margin: account.margin,
        positions: &positions,
        specs: &specs,
        rates: &rates,
    })
    .map_err(|e| ToolError::Dispatch(format!("the terminal's positions are unusable: {e}")))?;
    if !summary.unconverted.is_empty() || !summary.unknown_symbols.is_empty() {
        return Ok(None);
    }
    Ok(Some(summary.open_risk()))
}

/// The time of an account reading that has just returned: the wall clock
/// now, never before the call's own time. An observation is stamped when
/// its equity was read, not when the call began: a call that waited for the
/// terminal (under load, tens of milliseconds) would otherwise carry a time
/// older than a reading the monitor made meanwhile, and be refused as out of
/// order however often it read again.
pub(crate) fn reading_time(ctx: &ToolContext) -> UnixMs {
    chrono::Utc::now().timestamp_millis().max(ctx.now_ms)
}

/// The observation of an account reading made at `time` (see
/// [`reading_time`]), with the open risk when a guard of the terminal needs
/// it.
pub(crate) async fn observation_of(
    ctx: &ToolContext,
    account: &AccountInfo,
    time: UnixMs,
    with_risk: bool,
) -> Result<Observation, ToolError> {
    let open_risk = if with_risk {
        open_risk(ctx, account).await?
    } else {
        None
    };
    Ok(Observation {
        time,
        equity: account.equity,
        cash_flow: 0.0,
        open_risk,
    })
}

/// Readings of one tool call: the first, and new ones while a background
/// evaluation keeps overtaking them.
const READ_ATTEMPTS: usize = 3;

/// Reads the account of the context's terminal and evaluates it on every
/// guard. When the terminal cannot be read, the guards are returned as
/// stored with `Err(reason)`.
///
/// A background evaluation (the monitor, on an `account` event) that read
/// the account after this call did and stored first makes this call's
/// observation stale (no verdict): the call then reads again, with a newer
/// time, so that its answer carries the rules' status.
pub(crate) async fn observe_now(ctx: &ToolContext) -> Result<(Vec<Evaluated>, Result<AccountInfo, String>), ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    let store = ctx.services.store.as_ref();
    let events = ctx.services.events.as_ref();
    let records = store.equity_guards(&ctx.license_id, &terminal).await?;
    if records.is_empty() {
        return Ok((Vec::new(), Err("no guard".into())));
    }
    let with_risk = needs_open_risk(&records);
    let read = async || {
        let account = ctx.account().await?;
        let time = reading_time(ctx);
        let obs = observation_of(ctx, &account, time, with_risk).await?;
        Ok::<_, ToolError>((account, obs))
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        match read().await {
            Ok((account, obs)) => {
                let evaluated = observe(store, events, &ctx.license_id, &terminal, Some(&obs)).await?;
                let overtaken = evaluated
                    .iter()
                    .any(|e| e.rules.is_some() && e.verdict.is_none() && e.error.is_none());
                if !overtaken || attempt == READ_ATTEMPTS {
                    return Ok((evaluated, Ok(account)));
                }
            }
            Err(e) => {
                return Ok((
                    observe(store, events, &ctx.license_id, &terminal, None).await?,
                    Err(e.to_string()),
                ));
            }
        }
    }
}

/// The check of live orders that open exposure: refuses with
/// [`ToolError::TradingDisabled`] while a `block` guard of the terminal is
/// blocked, or when a `block` guard cannot be evaluated (fail closed).
/// Closing and reducing positions is never guarded.
pub(crate) async fn guard_live_order(ctx: &ToolContext) -> Result<(), ToolError> {
    if ctx.terminal_id.is_none() {
        return Ok(());
    }
    let (guards, reading) = observe_now(ctx).await?;
    for guard in &guards {
        let label = guard.source().label();
        let Some(rules) = &guard.rules else {
            return Err(ToolError::TradingDisabled(format!(
                "{label}: the guard cannot be evaluated (its stored rules are not valid); live orders are refused"
            )));
        };
        if rules.action != GuardAction::Block {
            continue;
        }
        if let Err(why) = &reading {
            return Err(ToolError::TradingDisabled(format!(
                "{label}: the guard cannot be evaluated ({why}); live orders are refused"
            )));
        }
        if let Some(why) = &guard.error {
            return Err(ToolError::TradingDisabled(format!(
                "{label}: the guard cannot be evaluated ({why}); live orders are refused"
            )));
        }
        if equity_guard::is_blocked(rules, &guard.state, ctx.now_ms) {
            let until = guard
                .state
                .day_start
                .map(|d| to_iso(rules.next_day_start(d)))
                .unwrap_or_default();
            let what = guard
                .state
                .breaches
                .iter()
                .rev()
                .find(|b| guard.state.latched.contains(&b.rule))
                .map(|b| format!("{} at {}", b.message, to_iso(b.time)))
                .unwrap_or_else(|| "a rule was breached today".into());
            return Err(ToolError::TradingDisabled(format!(
                "{label}: live orders are blocked until {until} (the next day anchor) or until the guard is removed: {what}"
            )));
        }
    }
    Ok(())
}

/// One guard as the tools show it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GuardOut {
    /// `equity_guard` (set_equity_guard) or `prop_firm` (installed by the prop-firm rules).
    pub source: GuardSource,
    /// The rules.
    pub rules: GuardRules,
    /// `ok`, `warning`, `breached` or `blocked` at the latest observation; `null` before the first one.
    pub status: Option<GuardStatus>,
    /// Whether live orders opening exposure are refused now.
    pub blocked: bool,
    /// While blocked: when the block ends (the next day anchor), ISO 8601 UTC.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub block_until: Option<UnixMs>,
    /// State of every rule at this observation (empty when it could not be made).
    pub rule_status: Vec<RuleStatus>,
    /// Start of the current trading day, ISO 8601 UTC.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub day_start: Option<UnixMs>,
    /// Equity at the start of the trading day (its first observation).
    pub day_anchor_equity: Option<f64>,
    /// Highest equity observed since the guard was set.
    pub high_water_mark: Option<f64>,
    /// Time of the latest observation, ISO 8601 UTC.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub last_observed_at: Option<UnixMs>,
    /// Equity of the latest observation.
    pub last_equity: Option<f64>,
    /// Every breach recorded (oldest first, at most 200), with time and equity.
    pub breaches: Vec<Breach>,
    /// Why this reading could not be evaluated, if it could not.
    pub error: Option<String>,
    /// When the guard was set, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub created_at: UnixMs,
}

fn guard_out(evaluated: &Evaluated, now: UnixMs) -> Option<GuardOut> {
    let rules = evaluated.rules.clone()?;
    let blocked = equity_guard::is_blocked(&rules, &evaluated.state, now);
    let status = evaluated.verdict.as_ref().map(|v| v.status).or_else(|| {
        evaluated
            .state
            .last_time
            .map(|_| match (evaluated.state.latched.is_empty(), rules.action) {
                (true, _) => GuardStatus::Ok,
                (false, GuardAction::Block) if blocked => GuardStatus::Blocked,
                (false, _) => GuardStatus::Breached,
            })
    });
    Some(GuardOut {
        source: evaluated.source(),
        blocked,
        block_until: if blocked {
            evaluated.state.day_start.map(|d| rules.next_day_start(d))
        } else {
            None
        },
        rule_status: evaluated.verdict.as_ref().map(|v| v.rules.clone()).unwrap_or_default(),
        day_start: evaluated.state.day_start,
        day_anchor_equity: evaluated.state.day_anchor_equity,
        high_water_mark: evaluated.state.high_water_mark,
        last_observed_at: evaluated.state.last_time,
        last_equity: evaluated.state.last_equity,
        breaches: evaluated.state.breaches.clone(),
        error: evaluated.error.clone(),
        created_at: evaluated.record.created_at,
        status,
        rules,
    })
}

/// Output of `set_equity_guard` and `get_equity_guard`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EquityGuardOutput {
    /// Terminal guarded.
    pub terminal_id: String,
    /// Whether a guard set by `set_equity_guard` exists.
    pub active: bool,
    /// The guard set by `set_equity_guard`, evaluated now.
    pub guard: Option<GuardOut>,
    /// The guard installed by the terminal's prop-firm rules, evaluated now.
    pub prop_firm_guard: Option<GuardOut>,
    /// Whether live orders opening exposure are refused now by either guard.
    pub blocked: bool,
    /// Notes (terminal unreachable: the guards as last stored).
    pub notes: Vec<String>,
}

fn output(
    terminal: String,
    guards: &[Evaluated],
    reading: &Result<AccountInfo, String>,
    now: UnixMs,
) -> EquityGuardOutput {
    let find = |s: GuardSource| guards.iter().find(|g| g.source() == s).and_then(|g| guard_out(g, now));
    let guard = find(GuardSource::EquityGuard);
    let prop_firm_guard = find(GuardSource::PropFirm);
    let mut notes = Vec::new();
    if let (Err(why), false) = (reading, guards.is_empty()) {
        notes.push(format!(
            "the terminal could not be read ({why}): the guards are shown as last evaluated"
        ));
    }
    EquityGuardOutput {
        terminal_id: terminal,
        active: guard.is_some(),
        blocked: guard.as_ref().is_some_and(|g| g.blocked) || prop_firm_guard.as_ref().is_some_and(|g| g.blocked),
        guard,
        prop_firm_guard,
        notes,
    }
}

async fn set_equity_guard(ctx: ToolContext, rules: GuardRules) -> Result<EquityGuardOutput, ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    rules.validate().map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    let value = serde_json::to_value(&rules).map_err(|e| ToolError::Internal(e.to_string()))?;
    match ctx
        .services
        .store
        .set_equity_guard(&ctx.license_id, &terminal, SOURCE_USER, &value)
        .await
    {
        Err(tradeterm_store::StoreError::NotFound(_)) => {
            return Err(ToolError::NotFound(format!("no terminal {terminal} on this license")));
        }
        other => other?,
    };
    // The first observation takes the day anchor and the peak now.
    let (guards, reading) = observe_now(&ctx).await?;
    Ok(output(terminal, &guards, &reading, ctx.now_ms))
}

/// Input of `get_equity_guard` and `remove_equity_guard`: nothing besides the target terminal.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EquityGuardTerminalInput {}

async fn get_equity_guard(ctx: ToolContext, _input: EquityGuardTerminalInput) -> Result<EquityGuardOutput, ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    let (guards, reading) = observe_now(&ctx).await?;
    Ok(output(terminal, &guards, &reading, ctx.now_ms))
}

/// Result of `remove_equity_guard`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RemovedGuardOutput {
    /// Terminal.
    pub terminal_id: String,
    /// `true` when a guard was removed, `false` when there was none.
    pub removed: bool,
}

async fn remove_equity_guard(
    ctx: ToolContext,
    _input: EquityGuardTerminalInput,
) -> Result<RemovedGuardOutput, ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    let removed = ctx
        .services
        .store
        .remove_equity_guard(&ctx.license_id, &terminal, SOURCE_USER)
        .await?;
    Ok(RemovedGuardOutput {
        terminal_id: terminal,
        removed,
    })
}

const CONFIGURE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "set_equity_guard",
            title: "Set the equity guard",
            description: "Sets (or replaces) this terminal's equity guard: a daily loss limit (`{\"type\":\"money\",\"amount\":…}` or `{\"type\":\"percent\",\"percent\":…}` of the day's anchor equity; the trading day starts at `day_anchor_hour` in the fixed zone UTC+`day_anchor_utc_offset_minutes`), a maximum drawdown from the equity peak, an equity floor, and a maximum open risk (money at risk to the stops; a position without a stop breaches it). The server evaluates it on every account change the terminal pushes and every few seconds while positions are open; breaches are recorded with time and equity and delivered by `poll_alerts`. `action`: `alert` (default) reports only; `block` also refuses live orders that open exposure (`TRADING_DISABLED`) until the next day anchor or until the guard is removed. Replacing starts afresh (new peak and anchor).",
            capability: Capability::Trade,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: CONFIGURE,
        }
        .build(set_equity_guard),
        ToolSpec {
            name: "get_equity_guard",
            title: "Equity guard status",
            description: "This terminal's equity guard and the guard its prop-firm rules installed, evaluated against the account now: status `ok|warning|breached|blocked`, each rule's limit, use and headroom, day anchor, equity peak, whether live orders are blocked and until when, and every breach recorded (time and equity). When the terminal cannot be read, the guards as last evaluated, with a note.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_equity_guard),
        ToolSpec {
            name: "remove_equity_guard",
            title: "Remove the equity guard",
            description: "Removes this terminal's equity guard (set by `set_equity_guard`), lifting its block at once. The guard of the prop-firm rules stays until `remove_prop_firm_rules`. `removed: false` when there was none.",
            capability: Capability::Trade,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: CONFIGURE,
        }
        .build(remove_equity_guard),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_entries() {
        let set = crate::find("set_equity_guard").unwrap();
        assert_eq!(
            (set.capability, set.gate, set.target),
            (Capability::Trade, Gate::Always, Target::Terminal)
        );
        assert!(!set.annotations.read_only && set.annotations.idempotent);
        let get = crate::find("get_equity_guard").unwrap();
        assert_eq!(get.capability, Capability::Read);
        assert!(get.annotations.read_only);
        assert_eq!(
            crate::find("remove_equity_guard").unwrap().capability,
            Capability::Trade
        );
        // The input schema is the core rules' schema: its fields are described.
        let props = &set.input_schema["properties"];
        for field in ["daily_loss", "max_drawdown", "equity_floor", "max_open_risk", "action"] {
            assert!(props.get(field).is_some(), "{field}: {}", set.input_schema);
        }
    }

    /// A guard replaced while an evaluation of its old version runs: the
    /// lost compare-and-swap re-reads the guard and evaluates its new rules,
    /// so no breach of a rule that is gone is recorded in the new state.
    #[tokio::test]
    async fn an_evaluation_racing_a_replacement_uses_the_new_rules() {
        let store = tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap();
        let (license, _) = store.create_license("L", tradeterm_store::Tier::Pro).await.unwrap();
        let (terminal, _) = store.create_terminal(&license.id, "T").await.unwrap();
        let rules = |r: GuardRules| serde_json::to_value(r).unwrap();
        let old_rules = GuardRules {
            equity_floor: Some(10_100.0),
            ..GuardRules::default()
        };
        let stale = store
            .set_equity_guard(&license.id, &terminal.id, SOURCE_USER, &rules(old_rules))
            .await
            .unwrap();
        // Replaced (the daily loss cannot be breached at the first reading).
        let new_rules = GuardRules {
            daily_loss: Some(tradeterm_core::equity_guard::LossLimit::Percent { percent: 5.0 }),
            ..GuardRules::default()
        };
        store
            .set_equity_guard(&license.id, &terminal.id, SOURCE_USER, &rules(new_rules))
            .await
            .unwrap();
        let obs = Observation {
            time: 1_795_003_200_000,
            equity: 9_999.0,
            cash_flow: 0.0,
            open_risk: None,
        };
        let out = evaluate_one(&store, None, stale, Some(&obs)).await;
        assert_eq!(out.error, None);
        assert_eq!(out.rules.as_ref().and_then(|r| r.equity_floor), None, "{:?}", out.rules);
        assert!(out.state.breaches.is_empty(), "{:?}", out.state.breaches);
        let stored = &store.equity_guards(&license.id, &terminal.id).await.unwrap()[0];
        assert_eq!(parse_state(stored).unwrap().breaches, Vec::new());
    }

    /// A terminal whose account reads race a background evaluation: the
    /// first read lets "the monitor" store an observation of a reading made
    /// after this one (20 ms later, as an `account` event would) before
    /// answering; later reads answer after that reading's time.
    struct RacingMonitor {
        store: std::sync::Arc<tradeterm_store::SqlStore>,
        reads: std::sync::atomic::AtomicUsize,
    }

    #[async_trait::async_trait]
    impl tradeterm_protocol::Dispatch for RacingMonitor {
        async fn execute(
            &self,
            license: &str,
            terminal: &str,
            command: Command,
            _timeout: std::time::Duration,
        ) -> Result<CommandResult, tradeterm_protocol::DispatchError> {
            let Command::AccountInfo = command else {
                return Err(tradeterm_protocol::DispatchError::Unreachable);
            };
            let account = AccountInfo {
                login: 1,
                name: "n".into(),
                server: "s".into(),
                company: "c".into(),
                currency: "USD".into(),
                leverage: 100,
                trade_mode: tradeterm_core::TradeMode::Demo,
                balance: 10_000.0,
                equity: 10_000.0,
                margin: 0.0,
                free_margin: 10_000.0,
                margin_level: None,
                profit: 0.0,
            };
            let later = chrono::Utc::now().timestamp_millis() + 20;
            if self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                let monitor = Observation {
                    time: later,
                    equity: 10_000.0,
                    cash_flow: 0.0,
                    open_risk: None,
                };
                let stored = observe(self.store.as_ref(), None, license, terminal, Some(&monitor))
                    .await
                    .unwrap();
                assert!(stored[0].verdict.is_some(), "the monitor's observation is stored");
            } else {
                tokio::time::sleep(std::time::Duration::from_millis(40)).await;
            }
            Ok(CommandResult::AccountInfo(account))
        }

        async fn terminals(
            &self,
            _license: &str,
        ) -> Result<Vec<tradeterm_protocol::TerminalStatus>, tradeterm_protocol::DispatchError> {
            Ok(Vec::new())
        }
    }

    /// The race behind the intermittent `set_equity_guard` answer without a
    /// rule status (e2e `equity_guard_tools` under load), made deterministic:
    /// a call that began a while ago (its context's time is 5 s old) reads the
    /// account while the monitor stores a newer reading first. The call's
    /// observation is stamped when its reading returned, and a stale one is
    /// read again with a newer time, so the answer carries every rule's
    /// status. (Stamped with the call's start time, both readings were older
    /// than the monitor's and the rule status came back empty.)
    #[tokio::test]
    async fn a_call_overtaken_by_the_monitor_still_answers_with_the_rules_status() {
        let store = std::sync::Arc::new(tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap());
        let (license, _) = store.create_license("L", tradeterm_store::Tier::Pro).await.unwrap();
        let (terminal, _) = store.create_terminal(&license.id, "T").await.unwrap();
        let dispatch = std::sync::Arc::new(RacingMonitor {
            store: store.clone(),
            reads: Default::default(),
        });
        let services = crate::Services::new(dispatch.clone(), store.clone());
        let caller = crate::Caller {
            license_id: license.id.clone(),
            credential: "key_test".into(),
            caps: vec![Capability::Read, Capability::Trade],
        };
        let mut ctx = ToolContext::new(std::sync::Arc::new(services), caller, Some(terminal.id.clone()));
        ctx.now_ms -= 5_000;
        let tool = crate::find("set_equity_guard").unwrap();
        let set = tool
            .call(ctx, serde_json::json!({ "equity_floor": 9_000.0 }))
            .await
            .unwrap();
        assert_eq!(set["guard"]["rule_status"][0]["rule"], "equity_floor", "{set}");
        assert_eq!(set["guard"]["rule_status"][0]["evaluated"], true, "{set}");
        assert_eq!(set["guard"]["status"], "ok", "{set}");
        assert_eq!(
            dispatch.reads.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "read once more"
        );
    }

    /// A prop-firm guard's status moving between observations publishes
    /// `prop_firm.status_changed` (ok → warning → critical → breached, once
    /// each, on `get_prop_firm_status`'s scale); a
    /// breach publishes `equity_guard.breached`; a user guard's moves are
    /// not prop-firm news.
    #[tokio::test]
    async fn status_moves_and_breaches_are_published() {
        use tradeterm_events::memory::MemoryBus;
        use tradeterm_events::{EventBus, EventType};
        let store = tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap();
        let (license, _) = store.create_license("L", tradeterm_store::Tier::Pro).await.unwrap();
        let (terminal, _) = store.create_terminal(&license.id, "T").await.unwrap();
        let bus = std::sync::Arc::new(MemoryBus::default());
        let events = tradeterm_events::Publisher::spawn(bus.clone(), Default::default());
        let rules = GuardRules {
            equity_floor: Some(9_000.0),
            ..GuardRules::default()
        };
        for source in [SOURCE_PROP_FIRM, SOURCE_USER] {
            store
                .set_equity_guard(
                    &license.id,
                    &terminal.id,
                    source,
                    &serde_json::to_value(&rules).unwrap(),
                )
                .await
                .unwrap();
        }
        let at = |i: i64, equity: f64| Observation {
            time: 1_795_003_200_000 + i * 1_000,
            equity,
            cash_flow: 0.0,
            open_risk: None,
        };
        // Peak 10 000, floor 9 000: ok, ok, warning (40 % of the room left),
        // critical (15 %), breached.
        for (i, equity) in [10_000.0, 9_990.0, 9_400.0, 9_150.0, 8_990.0].into_iter().enumerate() {
            observe(
                &store,
                Some(&events),
                &license.id,
                &terminal.id,
                Some(&at(i as i64, equity)),
            )
            .await
            .unwrap();
        }
        assert!(events.flush(std::time::Duration::from_secs(5)).await);
        let log = bus.replay(&license.id, None, 100).await.unwrap().events;
        let moves: Vec<(String, String)> = log
            .iter()
            .filter(|e| e.kind == EventType::PropFirmStatusChanged)
            .map(|e| {
                let d = &e.data["details"];
                (
                    d["from"].as_str().unwrap().to_owned(),
                    d["to"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            moves,
            [
                ("ok".into(), "warning".into()),
                ("warning".into(), "critical".into()),
                ("critical".into(), "breached".into())
            ],
            "{log:?}"
        );
        let breaches: Vec<&str> = log
            .iter()
            .filter(|e| e.kind == EventType::EquityGuardBreached)
            .map(|e| e.data["details"]["source"].as_str().unwrap())
            .collect();
        assert_eq!(breaches.len(), 2, "one breach per guard: {breaches:?}");
        assert!(breaches.contains(&"prop_firm") && breaches.contains(&"equity_guard"));
        assert!(
            log.iter()
                .all(|e| e.terminal_id.as_deref() == Some(terminal.id.as_str()))
        );
    }

    #[test]
    fn sources_and_labels() {
        assert_eq!(GuardSource::of(SOURCE_PROP_FIRM), GuardSource::PropFirm);
        assert_eq!(GuardSource::of(SOURCE_USER), GuardSource::EquityGuard);
        assert!(GuardSource::PropFirm.label().contains("prop-firm"));
    }

    #[test]
    fn a_stored_guard_reads_back_as_blocked_until_the_next_anchor() {
        let rules = GuardRules {
            equity_floor: Some(9_000.0),
            action: GuardAction::Block,
            ..GuardRules::default()
        };
        let obs = Observation {
            time: 1_795_003_200_000,
            equity: 8_900.0,
            cash_flow: 0.0,
            open_risk: None,
        };
        let (state, _) = equity_guard::evaluate(&rules, &GuardState::default(), &obs).unwrap();
        let record = EquityGuardRecord {
            license_id: "lic".into(),
            terminal_id: "term".into(),
            source: SOURCE_USER.into(),
            rules: serde_json::to_value(&rules).unwrap(),
            state: serde_json::to_value(&state).unwrap(),
            version: 2,
            created_at: 1,
            updated_at: 2,
        };
        let evaluated = Evaluated {
            rules: parse_rules(&record),
            state: parse_state(&record).unwrap(),
            record,
            verdict: None,
            error: None,
        };
        let out = guard_out(&evaluated, obs.time + 1_000).unwrap();
        assert!(out.blocked);
        assert_eq!(out.status, Some(GuardStatus::Blocked));
        let shown = serde_json::to_value(&out).unwrap();
        assert_eq!(shown["block_until"], "2026-11-19T00:00:00Z");
        assert_eq!(shown["breaches"][0]["time"], "2026-11-18T12:00:00Z");
        assert_eq!(out.breaches.len(), 1);
        assert_eq!(out.breaches[0].equity, 8_900.0);
        let next_day = guard_out(&evaluated, obs.time + 12 * 3_600_000).unwrap();
        assert!(!next_day.blocked);

        // A state stored before times were written as ISO text (unix ms) reads the same.
        let mut old = record_with_ms_times(&evaluated.record.state);
        old.state["breaches"][0]["time"] = serde_json::json!(obs.time);
        let old = Evaluated {
            rules: parse_rules(&old),
            state: parse_state(&old).expect("a state with unix-ms times is readable"),
            record: old,
            verdict: None,
            error: None,
        };
        assert_eq!(old.state, evaluated.state);
    }

    /// The record of `state` as it was stored before the ISO adapter: every
    /// time of the guard state as unix milliseconds.
    fn record_with_ms_times(state: &serde_json::Value) -> EquityGuardRecord {
        let mut state = state.clone();
        for field in ["day_start", "last_time"] {
            let ms = tradeterm_core::time::parse_iso(state[field].as_str().expect("an ISO time")).unwrap();
            state[field] = serde_json::json!(ms);
        }
        EquityGuardRecord {
            license_id: "lic".into(),
            terminal_id: "term".into(),
            source: SOURCE_USER.into(),
            rules: serde_json::to_value(GuardRules {
                equity_floor: Some(9_000.0),
                action: GuardAction::Block,
                ..GuardRules::default()
            })
            .unwrap(),
            state,
            version: 2,
            created_at: 1,
            updated_at: 2,
        }
    }
}
