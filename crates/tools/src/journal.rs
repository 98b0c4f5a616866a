//! Journal tools. They depend on the store only: with no terminal connected
//! or the gateway down they keep working.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Side;
use tradeterm_core::time::{UnixMs, iso, parse_iso};
use tradeterm_store::{JournalEntry, JournalFilter, TerminalFilter};

use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

const MAX_TEXT: usize = 10_000;
const MAX_TAGS: usize = 32;

/// The content of a journal entry. Every field is optional; unknown fields are refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalBody {
    /// Instrument traded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// `buy` (long) or `sell` (short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// Volume in lots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<f64>,
    /// Entry price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_price: Option<f64>,
    /// Exit price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_price: Option<f64>,
    /// Planned stop loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_loss: Option<f64>,
    /// Planned take profit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub take_profit: Option<f64>,
    /// Realised profit, account currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profit: Option<f64>,
    /// Position ticket this entry is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<u64>,
    /// When the trade was opened, ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_at: Option<String>,
    /// When the trade was closed, ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    /// Name of the setup or strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// The plan before entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Free notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Whether the trader followed their rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_followed: Option<bool>,
    /// Emotion tags (`fomo`, `calm`, `revenge`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emotions: Vec<String>,
    /// Free tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

impl JournalBody {
    fn validate(&self) -> Result<(), ToolError> {
        for (name, v) in [
            ("volume", self.volume),
            ("entry_price", self.entry_price),
            ("exit_price", self.exit_price),
            ("stop_loss", self.stop_loss),
            ("take_profit", self.take_profit),
            ("profit", self.profit),
        ] {
            if v.is_some_and(|x| !x.is_finite()) {
                return Err(ToolError::InvalidInput(format!("`{name}` must be a finite number")));
            }
        }
        for (name, v) in [("opened_at", &self.opened_at), ("closed_at", &self.closed_at)] {
            if let Some(t) = v
                && parse_iso(t).is_err()
            {
                return Err(ToolError::InvalidInput(format!("`{name}` must be an ISO 8601 time")));
            }
        }
        for (name, v) in [
            ("setup", &self.setup),
            ("plan", &self.plan),
            ("notes", &self.notes),
            ("symbol", &self.symbol),
        ] {
            if v.as_ref().is_some_and(|s| s.chars().count() > MAX_TEXT) {
                return Err(ToolError::InvalidInput(format!(
                    "`{name}` may have at most {MAX_TEXT} characters"
                )));
            }
        }
        for (name, list) in [("emotions", &self.emotions), ("tags", &self.tags)] {
            if list.len() > MAX_TAGS || list.iter().any(|t| t.is_empty() || t.chars().count() > 64) {
                return Err(ToolError::InvalidInput(format!(
                    "`{name}` may hold at most {MAX_TAGS} items of 1-64 characters"
                )));
            }
        }
        Ok(())
    }
}

/// A stored journal entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JournalEntryOut {
    /// Entry id (`jrn_…`).
    pub id: String,
    /// Terminal attribution; `null` is "unassigned".
    pub terminal_id: Option<String>,
    /// Creation time, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub created_at: UnixMs,
    /// Last update, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub updated_at: UnixMs,
    /// Content.
    pub entry: serde_json::Value,
}

impl From<JournalEntry> for JournalEntryOut {
    fn from(e: JournalEntry) -> Self {
        Self {
            id: e.id,
            terminal_id: e.terminal_id,
            created_at: e.created_at,
            updated_at: e.updated_at,
            entry: e.body,
        }
    }
}

/// Input of `get_journal`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalQuery {
    /// `all` (default), `unassigned`, or a terminal id.
    #[serde(default)]
    pub terminal_id: Option<String>,
    /// Only entries created at or after this ISO 8601 time.
    #[serde(default)]
    pub since: Option<String>,
    /// Only entries created before this ISO 8601 time.
    #[serde(default)]
    pub until: Option<String>,
    /// At most this many entries (1-1000, default 100).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Skip this many entries.
    #[serde(default)]
    pub offset: Option<u32>,
}

/// Journal entries, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JournalList {
    /// Entries.
    pub entries: Vec<JournalEntryOut>,
}

/// Input of `add_journal_entry`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddJournalInput {
    /// Terminal attribution (a terminal id of this license); omit for "unassigned".
    #[serde(default)]
    pub terminal_id: Option<String>,
    /// Content.
    pub entry: JournalBody,
}

/// Input of `update_journal_entry`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateJournalInput {
    /// Entry id.
    pub id: String,
    /// New terminal attribution: a terminal id, or `unassigned`; omit to keep it.
    #[serde(default)]
    pub terminal_id: Option<String>,
    /// New content (replaces the old one).
    pub entry: JournalBody,
}

/// Input of `get_journal_entry` and `delete_journal_entry`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalIdInput {
    /// Entry id.
    pub id: String,
}

/// Result of `delete_journal_entry`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    /// Entry id.
    pub id: String,
    /// Always `true` (a missing entry is a `NOT_FOUND` error).
    pub deleted: bool,
}

fn parse_opt_time(name: &str, v: &Option<String>) -> Result<Option<i64>, ToolError> {
    v.as_deref()
        .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput(format!("`{name}` must be an ISO 8601 time"))))
        .transpose()
}

async fn check_terminal(ctx: &ToolContext, terminal_id: &str) -> Result<(), ToolError> {
    match ctx.services.store.terminal(&ctx.license_id, terminal_id).await? {
        Some(_) => Ok(()),
        None => Err(ToolError::NotFound(format!(
            "no terminal {terminal_id} on this license"
        ))),
    }
}

fn body_value(body: &JournalBody) -> Result<serde_json::Value, ToolError> {
    body.validate()?;
    serde_json::to_value(body).map_err(|e| ToolError::Internal(e.to_string()))
}

const WRITE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};
const READ: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

pub(crate) fn tools() -> Vec<Tool> {
    let spec = |name, title, description, annotations| ToolSpec {
        name,
        title,
        description,
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::License,
        annotations,
    };
    vec![
        spec(
            "get_journal",
            "Read the journal",
            "Trading-journal entries of the license, newest first. `terminal_id`: `all` (default), `unassigned` (entries without terminal attribution) or a terminal id. Works without any terminal connected.",
            READ,
        )
        .build(|ctx: ToolContext, q: JournalQuery| async move {
            let terminal = match q.terminal_id.as_deref() {
                None | Some("all") => TerminalFilter::All,
                Some("unassigned") => TerminalFilter::Unassigned,
                Some(id) => TerminalFilter::Terminal(id.to_owned()),
            };
            let limit = q.limit.unwrap_or(100);
            if !(1..=1000).contains(&limit) {
                return Err(ToolError::InvalidInput("`limit` must be between 1 and 1000".into()));
            }
            let filter = JournalFilter {
                terminal,
                since: parse_opt_time("since", &q.since)?,
                until: parse_opt_time("until", &q.until)?,
                limit,
                offset: q.offset.unwrap_or(0),
            };
            let entries = ctx.services.store.list_journal(&ctx.license_id, &filter).await?;
            Ok(JournalList { entries: entries.into_iter().map(JournalEntryOut::from).collect() })
        }),
        spec("get_journal_entry", "One journal entry", "One journal entry by id.", READ).build(
            |ctx: ToolContext, input: JournalIdInput| async move {
                ctx.services.store
                    .journal_entry(&ctx.license_id, &input.id)
                    .await?
                    .map(JournalEntryOut::from)
                    .ok_or_else(|| ToolError::NotFound(format!("no journal entry {}", input.id)))
            },
        ),
        spec(
            "add_journal_entry",
            "Write a journal entry",
            "Adds a trading-journal entry (setup, plan, levels, outcome, emotions, tags), optionally attributed to a terminal. Works without any terminal connected.",
            WRITE,
        )
        .build(|ctx: ToolContext, input: AddJournalInput| async move {
            let body = body_value(&input.entry)?;
            if let Some(t) = &input.terminal_id {
                check_terminal(&ctx, t).await?;
            }
            let e = ctx.services.store.create_journal_entry(&ctx.license_id, input.terminal_id.as_deref(), &body).await?;
            Ok(JournalEntryOut::from(e))
        }),
        spec(
            "update_journal_entry",
            "Update a journal entry",
            "Replaces the content of a journal entry and, when `terminal_id` is given, its attribution (`unassigned` removes it).",
            Annotations { idempotent: true, ..WRITE },
        )
        .build(|ctx: ToolContext, input: UpdateJournalInput| async move {
            let body = body_value(&input.entry)?;
            let attribution = match input.terminal_id.as_deref() {
                None => None,
                Some("unassigned") => Some(None),
                Some(t) => {
                    check_terminal(&ctx, t).await?;
                    Some(Some(t))
                }
            };
            ctx.services.store
                .update_journal_entry(&ctx.license_id, &input.id, attribution, &body)
                .await?
                .map(JournalEntryOut::from)
                .ok_or_else(|| ToolError::NotFound(format!("no journal entry {}", input.id)))
        }),
        spec(
            "delete_journal_entry",
            "Delete a journal entry",
            "Deletes a journal entry.",
            Annotations { destructive: true, idempotent: true, ..WRITE },
        )
        .build(|ctx: ToolContext, input: JournalIdInput| async move {
            if ctx.services.store.delete_journal_entry(&ctx.license_id, &input.id).await? {
                Ok(Deleted { id: input.id, deleted: true })
            } else {
                Err(ToolError::NotFound(format!("no journal entry {}", input.id)))
            }
        }),
    ]
}
