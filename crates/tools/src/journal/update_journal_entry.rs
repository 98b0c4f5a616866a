//! `update_journal_entry`: replaces an entry's content and, if asked, its attribution.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{JournalBody, JournalEntryOut, WRITE, body_value, check_terminal, spec};
use crate::{Annotations, Tool, ToolContext, ToolError};

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
    #[serde(deserialize_with = "crate::schema::object")]
    pub entry: JournalBody,
}

async fn handle(ctx: ToolContext, input: UpdateJournalInput) -> Result<JournalEntryOut, ToolError> {
    let body = body_value(&input.entry)?;
    let attribution = match input.terminal_id.as_deref() {
        None => None,
        Some("unassigned") => Some(None),
        Some(terminal) => {
            check_terminal(&ctx, terminal).await?;
            Some(Some(terminal))
        }
    };
    ctx.services
        .store
        .update_journal_entry(&ctx.license_id, &input.id, attribution, &body)
        .await?
        .map(JournalEntryOut::from)
        .ok_or_else(|| ToolError::NotFound(format!("no journal entry {}", input.id)))
}

pub(super) fn tool() -> Tool {
    spec(
        "update_journal_entry",
        "Update a journal entry",
        "Replaces the content of a journal entry and, when `terminal_id` is given, its attribution (`unassigned` removes it).",
        Annotations { idempotent: true, ..WRITE },
    )
    .build(handle)
}
