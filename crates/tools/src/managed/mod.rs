//! Exits the server manages (`docs/managed-exits.md`): `set_trailing_stop`,
//! `set_breakeven`, `place_oco`, `place_bracket`, `list_managed_orders`,
//! `remove_managed_order`, and the [`engine`] that runs them.
//!
//! A tool validates against the terminal (the position or the orders, the
//! symbol's specification and quote), places what it must place (the OCO
//! pair, the bracket's entry: through `place_order`, so with every check
//! and gate of a live order) and stores the rule; the engine of one instance
//! (a claim in the store) evaluates it on every quote with the pure
//! decisions of `tradeterm_core::managed` and sends each action through the
//! tool catalog (`modify_position`, `cancel_order`, `close_position`) with
//! the rule's credential and an idempotency key of the rule and its step. A
//! rule created in dry run runs the same decisions over a paper copy of the
//! book and reports what it would have done.

pub mod engine;
mod entries;
mod manage;
mod protect;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tradeterm_core::license::Capability;
use tradeterm_core::managed::{Action, ManagedSpec, ManagedState, Paper};
use tradeterm_core::time::UnixMs;
use tradeterm_events::model::ManagedData;
use tradeterm_events::{Draft, EventType};
use tradeterm_store::{ManagedOrderRecord, NewManagedOrder};

use crate::{Annotations, Gate, Services, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Longest label.
pub const MAX_LABEL_CHARS: usize = 200;
/// Entries kept in a rule's log.
pub const LOG_KEPT: usize = 50;

/// What a rule stores as its progress (the store's `state`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// The instrument.
    #[serde(default)]
    pub symbol: String,
    /// The decisions' state.
    #[serde(default)]
    pub core: ManagedState,
    /// Dry run: the paper book.
    #[serde(default)]
    pub paper: Option<Paper>,
    /// What it did, newest last.
    #[serde(default)]
    pub log: Vec<LogEntry>,
    /// ATR distances: the ATR read last, and until when it holds (the end of its bar).
    #[serde(default)]
    pub atr: Option<f64>,
    #[serde(default)]
    pub atr_until: Option<i64>,
    /// Why the last evaluation or action failed.
    #[serde(default)]
    pub error: Option<String>,
}

impl Stored {
    pub(crate) fn of(record: &ManagedOrderRecord) -> Self {
        serde_json::from_value(record.state.clone()).unwrap_or_default()
    }

    pub(crate) fn push(&mut self, entry: LogEntry) {
        self.log.push(entry);
        if self.log.len() > LOG_KEPT {
            let cut = self.log.len() - LOG_KEPT;
            self.log.drain(..cut);
        }
    }
}

/// One thing a rule did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogEntry {
    /// When, ISO 8601 UTC.
    #[serde(with = "tradeterm_core::time::iso")]
    #[schemars(with = "tradeterm_core::time::iso::Schema")]
    pub time: UnixMs,
    /// Step number (the idempotency key of a live action is `mx:<id>:<step>`).
    pub step: u64,
    /// The action.
    pub action: Action,
    /// `done`, `would_do` (dry run), `rejected` or `failed`.
    pub outcome: String,
    /// What happened, for a person.
    pub message: String,
}

/// A managed exit as the tools show it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ManagedOrder {
    /// Id (`mxo_…`).
    pub id: String,
    /// `trailing_stop`, `breakeven`, `oco` or `bracket`.
    pub kind: String,
    /// The caller's label.
    pub label: String,
    /// The terminal.
    pub terminal_id: String,
    /// Instrument.
    pub symbol: String,
    /// Simulated over a paper copy of the book: nothing is sent.
    pub dry_run: bool,
    /// `active`, `paused` (its terminal is unreachable) or `ended`.
    pub status: String,
    /// Why it ended: `completed`, `position_closed`, `entry_cancelled`, `removed`.
    pub ended_reason: Option<String>,
    /// What it does (the kind's parameters, with tickets).
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub spec: Value,
    /// Actions done so far.
    pub steps: u64,
    /// The stop loss it set last.
    pub stop_loss: Option<f64>,
    /// Brackets: take-profit levels filled.
    pub targets_done: Option<usize>,
    /// Dry run: the paper book (positions, orders, what the quotes did to them).
    pub paper: Option<Paper>,
    /// What it did, newest last (at most 50).
    pub log: Vec<LogEntry>,
    /// Why the last evaluation or action failed, if it did.
    pub error: Option<String>,
    /// Created, ISO 8601 UTC.
    #[serde(with = "tradeterm_core::time::iso")]
    #[schemars(with = "tradeterm_core::time::iso::Schema")]
    pub created_at: UnixMs,
    /// Last change, ISO 8601 UTC.
    #[serde(with = "tradeterm_core::time::iso")]
    #[schemars(with = "tradeterm_core::time::iso::Schema")]
    pub updated_at: UnixMs,
}

pub(crate) fn view(record: &ManagedOrderRecord) -> ManagedOrder {
    let stored = Stored::of(record);
    let bracket = record.kind == "bracket";
    ManagedOrder {
        id: record.id.clone(),
        kind: record.kind.clone(),
        label: record.label.clone(),
        terminal_id: record.terminal_id.clone(),
        symbol: stored.symbol.clone(),
        dry_run: record.dry_run,
        status: record.status.as_str().to_owned(),
        ended_reason: record.ended_reason.clone(),
        spec: record.spec.clone(),
        steps: stored.core.steps,
        stop_loss: stored.core.stop,
        targets_done: bracket.then_some(stored.core.targets_done),
        paper: stored.paper,
        log: stored.log,
        error: stored.error,
        created_at: record.created_at,
        updated_at: record.updated_at,
    }
}

/// The credential a rule acts with: the creator's id and capabilities
/// (never a secret).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RuleCaller {
    pub credential: String,
    pub caps: Vec<Capability>,
}

pub(crate) fn check_label(label: &Option<String>) -> Result<String, ToolError> {
    let label = label.clone().unwrap_or_default();
    if label.chars().count() > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return Err(ToolError::InvalidInput(format!(
            "`label` may have at most {MAX_LABEL_CHARS} characters, without control characters"
        )));
    }
    Ok(label)
}

/// Stores a new rule for the call's terminal and publishes nothing (the
/// engine picks it up at its next claim).
pub(crate) async fn create(
    ctx: &ToolContext,
    spec: &ManagedSpec,
    label: &str,
    stored: &Stored,
    dry_run: bool,
) -> Result<ManagedOrder, ToolError> {
    let terminal = ctx.terminal()?;
    let caller = serde_json::to_value(RuleCaller {
        credential: ctx.caller.clone(),
        caps: ctx.caps.clone(),
    })
    .map_err(|e| ToolError::Internal(e.to_string()))?;
    let spec_json = serde_json::to_value(spec).map_err(|e| ToolError::Internal(e.to_string()))?;
    let state = serde_json::to_value(stored).map_err(|e| ToolError::Internal(e.to_string()))?;
    let record = ctx
        .services
        .store
        .create_managed_order(&NewManagedOrder {
            license_id: &ctx.license_id,
            terminal_id: terminal,
            kind: spec.kind(),
            label,
            spec: &spec_json,
            state: &state,
            caller: &caller,
            dry_run,
        })
        .await?;
    tracing::info!(
        license = %ctx.license_id, terminal, managed = %record.id, kind = spec.kind(), dry_run,
        "managed exit created"
    );
    Ok(view(&record))
}

/// Publishes a `managed.*` event of a rule.
pub(crate) fn publish(
    services: &Services,
    record: &ManagedOrderRecord,
    symbol: &str,
    kind: EventType,
    message: String,
    action: Option<(&Action, &str)>,
    reason: Option<&str>,
) {
    let Some(events) = &services.events else { return };
    let data = ManagedData {
        managed: record.id.clone(),
        kind: record.kind.clone(),
        label: record.label.clone(),
        symbol: (!symbol.is_empty()).then(|| symbol.to_owned()),
        dry_run: record.dry_run,
        message,
        action: action.and_then(|(a, _)| serde_json::to_value(a).ok()),
        outcome: action.map(|(_, o)| o.to_owned()),
        reason: reason.map(str::to_owned),
    };
    let draft = Draft::new(kind, tradeterm_events::now_ms(), Some(&record.terminal_id), &data);
    events.publish(&record.license_id, draft);
}

const CONFIGURE: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// The spec of a tool that creates a managed exit: the `trade` capability
/// for live rules (dry-run rules are open to every tier, like dry-run orders).
fn rule_spec(name: &'static str, title: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        capability: Capability::Trade,
        gate: Gate::LiveOnly,
        target: Target::Terminal,
        annotations: CONFIGURE,
    }
}

/// The tools of this module, in catalog order.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        protect::trailing_tool(),
        protect::breakeven_tool(),
        entries::oco_tool(),
        entries::bracket_tool(),
        manage::list_tool(),
        manage::remove_tool(),
    ]
}
