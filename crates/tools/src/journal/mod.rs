//! Journal tools. They depend on the store only: with no terminal connected
//! or the gateway down they keep working. One file per tool; the entry's
//! content and its output form are shared here.

mod add_journal_entry;
mod delete_journal_entry;
mod get_journal;
mod get_journal_entry;
mod update_journal_entry;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::Side;
use tradeterm_core::time::{UnixMs, iso, parse_iso};
use tradeterm_store::JournalEntry;

use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

const MAX_TEXT: usize = 10_000;
const MAX_TAGS: usize = 32;
/// Longest tag or emotion, in characters.
const MAX_TAG_CHARS: usize = 64;

/// The content of a journal entry. Every field is optional; unknown fields are refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalBody {
    /// Instrument traded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: Option<String>,
    /// `buy` (long) or `sell` (short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// Volume in lots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<f64>,
    /// Entry price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub entry_price: Option<f64>,
    /// Exit price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub exit_price: Option<f64>,
    /// Planned stop loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub stop_loss: Option<f64>,
    /// Planned take profit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub take_profit: Option<f64>,
    /// Realised profit, account currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profit: Option<f64>,
    /// Position ticket this entry is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<u64>,
    /// When the trade was opened, ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub opened_at: Option<String>,
    /// When the trade was closed, ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub closed_at: Option<String>,
    /// Name of the setup or strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_TEXT))]
    pub setup: Option<String>,
    /// The plan before entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_TEXT))]
    pub plan: Option<String>,
    /// Free notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_TEXT))]
    pub notes: Option<String>,
    /// Whether the trader followed their rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_followed: Option<bool>,
    /// Emotion tags (`fomo`, `calm`, `revenge`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = MAX_TAG_CHARS)), length(max = MAX_TAGS))]
    pub emotions: Vec<String>,
    /// Free tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = MAX_TAG_CHARS)), length(max = MAX_TAGS))]
    pub tags: Vec<String>,
}

impl JournalBody {
    fn validate(&self) -> Result<(), ToolError> {
        self.validate_in("")
    }

    /// Checks every rule the schema states, naming a field `{at}{name}`
    /// (`entry.tags` for an entry given as the `entry` field of an input).
    pub(crate) fn validate_in(&self, at: &str) -> Result<(), ToolError> {
        if let Some(symbol) = &self.symbol
            && !crate::schema::is_symbol(symbol)
        {
            return Err(ToolError::InvalidInput(format!(
                "`{at}symbol` must be a symbol: 1-32 letters, digits or ._#-+!"
            )));
        }
        for (name, value) in [
            ("volume", self.volume),
            ("entry_price", self.entry_price),
            ("exit_price", self.exit_price),
            ("stop_loss", self.stop_loss),
            ("take_profit", self.take_profit),
            ("profit", self.profit),
        ] {
            if value.is_some_and(|x| !x.is_finite()) {
                return Err(ToolError::InvalidInput(format!("`{at}{name}` must be a finite number")));
            }
        }
        // Prices are above 0 (what the journal rubric reads; the schema says so).
        for (name, value) in [
            ("entry_price", self.entry_price),
            ("exit_price", self.exit_price),
            ("stop_loss", self.stop_loss),
            ("take_profit", self.take_profit),
        ] {
            if value.is_some_and(|x| x <= 0.0) {
                return Err(ToolError::InvalidInput(format!("`{at}{name}` must be a price above 0")));
            }
        }
        for (name, value) in [("opened_at", &self.opened_at), ("closed_at", &self.closed_at)] {
            if let Some(text) = value
                && parse_iso(text).is_err()
            {
                return Err(ToolError::InvalidInput(format!(
                    "`{at}{name}` must be an ISO 8601 time"
                )));
            }
        }
        for (name, value) in [
            ("setup", &self.setup),
            ("plan", &self.plan),
            ("notes", &self.notes),
            ("symbol", &self.symbol),
        ] {
            if value
                .as_ref()
                .is_some_and(|text_value| text_value.chars().count() > MAX_TEXT)
            {
                return Err(ToolError::InvalidInput(format!(
                    "`{at}{name}` may have at most {MAX_TEXT} characters"
                )));
            }
        }
        for (name, list) in [("emotions", &self.emotions), ("tags", &self.tags)] {
            if list.len() > MAX_TAGS
                || list
                    .iter()
                    .any(|text| text.is_empty() || text.chars().count() > MAX_TAG_CHARS)
            {
                return Err(ToolError::InvalidInput(format!(
                    "`{at}{name}` may hold at most {MAX_TAGS} items of 1-64 characters"
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

/// Input of `get_journal_entry` and `delete_journal_entry`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalIdInput {
    /// Entry id.
    pub id: String,
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

/// The spec of a journal tool: `read` capability, license-wide.
fn spec(name: &'static str, title: &'static str, description: &'static str, annotations: Annotations) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::License,
        annotations,
    }
}

/// The tools of this module, in catalog order.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        get_journal::tool(),
        get_journal_entry::tool(),
        add_journal_entry::tool(),
        update_journal_entry::tool(),
        delete_journal_entry::tool(),
    ]
}
