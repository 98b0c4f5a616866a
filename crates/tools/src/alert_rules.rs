//! Alert rules: `set_alert`, `list_alerts`, `remove_alert`. A rule watches a
//! price crossing, an indicator condition (the `check_confluence` language),
//! a structure event or an account threshold on one terminal; the server's
//! alert engine ([`crate::alert_engine`]) evaluates it from what the agent
//! pushes and records each firing, which `poll_alerts` delivers with the
//! news-guard alerts. The rules and their semantics live in
//! [`tradeterm_core::alert_rules`]; see `docs/alerts.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::alert_rules::{AlertCondition, AlertState, Feed, on_closed_bars};
use tradeterm_core::confluence::{self, Assessment, SeriesRef};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Bar, Timeframe};
use tradeterm_protocol::{Command, CommandResult};
use tradeterm_store::{AlertEventRecord, AlertRuleRecord, NewAlertRule};

use crate::context::unexpected;
use crate::costs::core_err;
use crate::market::check_symbol;
use crate::{Annotations, Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Bars of history an indicator or structure rule is evaluated on (its warm-up).
pub const RULE_BARS: usize = 300;

/// Input of `set_alert`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetAlertInput {
    /// What to watch: `{"kind": "price", "symbol", "level", "direction": above|below|either, "source": bid|ask|mid}`,
    /// `{"kind": "indicator", "symbol", "timeframe", "indicator", "params", "output", "op", "value"}` (as a
    /// `check_confluence` condition, at bar closes), `{"kind": "structure", "symbol", "timeframe", "event":
    /// bos|choch|any_break|fvg_filled, "direction", "swing_length"}`, `{"kind": "equity_below", "level"}` or
    /// `{"kind": "drawdown_above", "percent"}`.
    pub condition: AlertCondition,
    /// A label for the person reading the alert (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = MAX_LABEL_CHARS), pattern(crate::schema::NO_CONTROL_PATTERN))]
    pub label: Option<String>,
    /// End the rule after its first firing (default false: it fires once per crossing, every time).
    #[serde(default)]
    pub once: Option<bool>,
}

/// An alert rule.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AlertRuleOut {
    /// Id (`alr_…`).
    pub id: String,
    /// The terminal it watches.
    pub terminal_id: String,
    /// Label.
    pub label: String,
    /// What it watches.
    pub condition: AlertCondition,
    /// Whether it ends after its first firing.
    pub once: bool,
    /// Whether it is still watched (a `once` rule that fired is not).
    pub active: bool,
    /// When it was set (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub created_at: UnixMs,
    /// Whether the server has its baseline (its first quote, bar close or
    /// account reading) and is watching for the next crossing.
    pub armed: bool,
    /// Times it fired.
    pub fired: u64,
    /// When it last fired, in market time (ISO 8601).
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub last_fired_at: Option<UnixMs>,
    /// Why it could not be evaluated last time (e.g. not enough history), if so.
    pub error: Option<String>,
}

pub(crate) fn rule_out(r: AlertRuleRecord) -> Result<AlertRuleOut, ToolError> {
    let condition: AlertCondition = serde_json::from_value(r.condition)
        .map_err(|_| ToolError::Internal("a stored alert condition is not valid".into()))?;
    let state: AlertState = serde_json::from_value(r.state).unwrap_or_default();
    Ok(AlertRuleOut {
        id: r.id,
        terminal_id: r.terminal_id,
        label: r.label,
        condition,
        once: r.once,
        active: r.active,
        created_at: r.created_at,
        armed: state.side.is_some() || state.holds.is_some() || state.last_bar.is_some(),
        fired: state.fired,
        last_fired_at: state.last_fired_at,
        error: state.error,
    })
}

/// The last `count` bars of a symbol and timeframe, with the forming one dropped.
pub(crate) async fn closed_bars(
    ctx: &ToolContext,
    symbol: &str,
    timeframe: Timeframe,
    count: usize,
    now: i64,
) -> Result<Vec<Bar>, ToolError> {
    let command = Command::Bars {
        symbol: symbol.to_owned(),
        timeframe,
        count: Some(count as u32 + 1),
        from: None,
        to: None,
    };
    let mut bars = match ctx.run(command).await? {
        CommandResult::Bars { bars, .. } => bars,
        other => return Err(unexpected("bars", &other)),
    };
    while bars.last().is_some_and(|b| b.time + timeframe.duration_ms() > now) {
        bars.pop();
    }
    Ok(bars)
}

async fn set_alert(ctx: ToolContext, input: SetAlertInput) -> Result<AlertRuleOut, ToolError> {
    let condition = input.condition;
    condition.validate().map_err(core_err)?;
    let label = input.label.unwrap_or_default();
    if label.chars().count() > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(ToolError::InvalidInput(
            "`label` must be at most 200 characters without control characters".into(),
        ));
    }
    // Check the condition against the terminal before storing it, so a bad
    // symbol or indicator is refused now rather than failing silently later.
    if let Some(symbol) = condition.symbol() {
        check_symbol(symbol)?;
        ctx.spec(symbol).await?;
    }
    let mut not_yet = None;
    if let Feed::Bars(symbol, timeframe, count) = condition.feed(RULE_BARS) {
        let bars = closed_bars(&ctx, symbol, timeframe, count, ctx.now_ms).await?;
        not_yet = unevaluable(&condition, &bars)?;
    }
    let terminal = ctx.terminal()?.to_owned();
    let stored_condition =
        serde_json::to_value(&condition).map_err(|e| ToolError::Internal(format!("alert condition: {e}")))?;
    let record = ctx
        .services
        .store
        .create_alert_rule(&NewAlertRule {
            license_id: &ctx.license_id,
            terminal_id: &terminal,
            label: &label,
            condition: &stored_condition,
            once: input.once.unwrap_or(false),
        })
        .await?;
    let mut rule = rule_out(record)?;
    if let Some(why) = not_yet {
        rule.error = Some(why);
    }
    Ok(rule)
}

/// Why a valid condition cannot be evaluated on the history it reads (an
/// indicator warm-up longer than the [`RULE_BARS`] bars, a terminal with a
/// shorter history): the rule is set all the same and says so in `error`,
/// as the alert engine does. Anything else wrong with the condition (a
/// name, a parameter, an output) is refused.
fn unevaluable(condition: &AlertCondition, bars: &[Bar]) -> Result<Option<String>, ToolError> {
    let refuse =
        |e: tradeterm_core::CoreError| ToolError::InvalidInput(format!("the condition cannot be evaluated: {e}"));
    match condition {
        AlertCondition::Indicator {
            indicator,
            params,
            output,
            op,
            value,
            ..
        } => {
            let left = SeriesRef {
                indicator: indicator.clone(),
                params: params.clone(),
                output: output.clone(),
            };
            match confluence::assess(bars, &left, *op, value).map_err(refuse)? {
                Assessment::Evaluated(_) => Ok(None),
                Assessment::Unevaluable(u) => Ok(Some(format!(
                    "not evaluable on the {} closed bars the rule reads: {}",
                    bars.len(),
                    u.reason
                ))),
            }
        }
        AlertCondition::Structure { swing_length, .. } => {
            let need = 3 * swing_length.unwrap_or(tradeterm_core::alert_rules::DEFAULT_ALERT_SWING_LENGTH);
            if bars.len() < need {
                return Ok(Some(format!(
                    "not evaluable yet: the terminal has {} closed bars, the structure detector needs at least {need}",
                    bars.len()
                )));
            }
            on_closed_bars(condition, &mut AlertState::default(), bars).map_err(refuse)?;
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// Input of `list_alerts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAlertsInput {
    /// Include rules that ended (`once` rules that fired); default true.
    #[serde(default)]
    pub include_inactive: Option<bool>,
}

/// Output of `list_alerts`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListAlertsOutput {
    /// The terminal's rules, oldest first.
    pub alerts: Vec<AlertRuleOut>,
}

async fn list_alerts(ctx: ToolContext, input: ListAlertsInput) -> Result<ListAlertsOutput, ToolError> {
    let terminal = ctx.terminal()?;
    let records = ctx.services.store.alert_rules(&ctx.license_id, Some(terminal)).await?;
    let include_inactive = input.include_inactive.unwrap_or(true);
    let alerts = records
        .into_iter()
        .filter(|r| include_inactive || r.active)
        .map(rule_out)
        .collect::<Result<_, _>>()?;
    Ok(ListAlertsOutput { alerts })
}

/// Input of `remove_alert`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveAlertInput {
    /// The rule's id (`alr_…`).
    #[schemars(pattern(ALERT_ID_PATTERN))]
    pub id: String,
}

/// Output of `remove_alert`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoveAlertOutput {
    /// The removed rule's id.
    pub id: String,
    /// Always true (an unknown id is a `NOT_FOUND` error).
    pub removed: bool,
}

/// Longest alert label, in characters.
const MAX_LABEL_CHARS: usize = 200;

/// An alert id as `remove_alert` accepts it: 1–64 ASCII letters, digits or `_`.
const ALERT_ID_PATTERN: &str = "^[A-Za-z0-9_]{1,64}$";

async fn remove_alert(ctx: ToolContext, input: RemoveAlertInput) -> Result<RemoveAlertOutput, ToolError> {
    if input.id.is_empty() || input.id.len() > 64 || !input.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ToolError::InvalidInput(
            "`id` must be an alert id such as `alr_…`".into(),
        ));
    }
    if !ctx.services.store.remove_alert_rule(&ctx.license_id, &input.id).await? {
        return Err(ToolError::NotFound(format!("no alert `{}` on this license", input.id)));
    }
    Ok(RemoveAlertOutput {
        id: input.id,
        removed: true,
    })
}

/// A rule's firing, as `poll_alerts` reports it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RuleAlert {
    /// The rule that fired.
    pub alert_id: String,
    /// Its label.
    pub label: String,
    /// Its family: `price`, `indicator`, `structure`, `equity_below`, `drawdown_above`.
    pub condition_kind: String,
    /// When the condition was met, in market time (the quote, the bar close or the account reading; ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub observed_at: UnixMs,
    /// The observed value (price, indicator value, bar close, equity, drawdown percent).
    pub value: f64,
    /// The level it was compared with, when there is one.
    pub level: Option<f64>,
}

/// The pieces of a `poll_alerts` alert for one recorded firing: the id, the
/// title and the details.
pub(crate) fn firing_alert(e: &AlertEventRecord) -> (String, String, RuleAlert) {
    let p = &e.payload;
    let text = |k: &str| p[k].as_str().unwrap_or_default().to_owned();
    let alert = RuleAlert {
        alert_id: e.alert_id.clone(),
        label: text("label"),
        condition_kind: text("condition_kind"),
        observed_at: p["observed_at"].as_i64().unwrap_or(e.fired_at),
        value: p["value"].as_f64().unwrap_or(f64::NAN),
        level: p["level"].as_f64(),
    };
    let title = match alert.label.as_str() {
        "" => text("message"),
        label => format!("{label}: {}", text("message")),
    };
    (format!("alert:{}", e.id), title, alert)
}

const CONFIGURE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "set_alert",
            title: "Set an alert",
            description: "Sets a server-side alert on the terminal: a price crossing a level, an indicator condition at bar closes (the `check_confluence` language), a structure event (break of structure, change of character, fair value gap filled) or an account threshold (equity below, drawdown above). Evaluated from what the agent pushes, fires once per crossing (or `once`), delivered by `poll_alerts`. Returns the rule with its id. A valid condition that cannot be evaluated on the history the rule reads (an indicator warm-up longer than the 300 closed bars it reads, a terminal with a shorter history) is set all the same, with the reason in `error`: it does not fire while that lasts. A terminal holds at most 100 rules: another one is refused until one is removed (`remove_alert`).",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: CONFIGURE,
        }
        .build(set_alert),
        ToolSpec {
            name: "list_alerts",
            title: "List alerts",
            description: "The terminal's alert rules with how often each fired, when last, and any evaluation error.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(list_alerts),
        ToolSpec {
            name: "remove_alert",
            title: "Remove an alert",
            description: "Removes an alert rule by id; firings already recorded are still delivered by `poll_alerts`.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::License,
            annotations: Annotations {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }
        .build(remove_alert),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn in_the_catalog_with_a_tagged_condition_schema() {
        let t = crate::find("set_alert").unwrap();
        let schema = t.input_schema.to_string();
        for kind in ["price", "indicator", "structure", "equity_below", "drawdown_above"] {
            assert!(schema.contains(kind), "{kind} missing from {schema}");
        }
        assert!(crate::find("list_alerts").unwrap().annotations.read_only);
        assert!(crate::find("remove_alert").is_some());
    }

    #[test]
    fn the_description_states_the_store_limit_on_rules() {
        let limit = format!("at most {} rules", tradeterm_store::MAX_ALERT_RULES_PER_TERMINAL);
        assert!(
            crate::find("set_alert").unwrap().description.contains(&limit),
            "{limit}"
        );
    }

    fn bars(n: usize) -> Vec<Bar> {
        (0..n)
            .map(|i| {
                let mid = 1.1 + 0.01 * (i as f64 / 7.0).sin();
                Bar {
                    time: 1_700_000_000_000 + i as i64 * 1_800_000,
                    open: mid,
                    high: mid + 0.001,
                    low: mid - 0.001,
                    close: mid,
                    volume: 10.0,
                }
            })
            .collect()
    }

    #[test]
    fn a_warm_up_longer_than_the_history_is_set_with_its_reason_not_refused() {
        let condition = |period: f64, output: Option<&str>| -> AlertCondition {
            serde_json::from_value(json!({ "kind": "indicator", "symbol": "EURUSD", "timeframe": "M30",
                "indicator": "lwma", "params": { "period": period }, "output": output, "op": "gt", "value": 1.0 }))
            .unwrap()
        };
        let history = bars(RULE_BARS + 1);
        let why = unevaluable(&condition(976.0, None), &history).unwrap().unwrap();
        assert!(why.contains("warm-up needs 976 bars"), "{why}");
        assert_eq!(unevaluable(&condition(10.0, None), &history).unwrap(), None);
        // A wrong output is the request's fault: refused.
        let e = unevaluable(&condition(10.0, Some("nope")), &history).unwrap_err();
        assert_eq!(e.code(), "VALIDATION_ERROR");
        let structure: AlertCondition = serde_json::from_value(
            json!({ "kind": "structure", "symbol": "EURUSD", "timeframe": "MN1", "event": "bos", "swing_length": 50 }),
        )
        .unwrap();
        let why = unevaluable(&structure, &bars(40)).unwrap().unwrap();
        assert!(why.contains("needs at least 150"), "{why}");
    }

    #[test]
    fn a_firing_becomes_a_poll_alert() {
        let e = AlertEventRecord {
            id: "alev_1".into(),
            alert_id: "alr_9".into(),
            fired_at: 2_000,
            payload: json!({ "label": "EU", "condition_kind": "price", "observed_at": 1_000, "value": 1.1,
                             "level": 1.09, "message": "EURUSD crossed above 1.09" }),
        };
        let (id, title, alert) = firing_alert(&e);
        assert_eq!(id, "alert:alev_1");
        assert_eq!(title, "EU: EURUSD crossed above 1.09");
        assert_eq!(alert.observed_at, 1_000);
        assert_eq!(
            serde_json::to_value(&alert).unwrap()["observed_at"],
            "1970-01-01T00:00:01Z"
        );
        assert_eq!((alert.value, alert.level), (1.1, Some(1.09)));
    }
}
