//! `add_journal_entry`: writes a journal entry, optionally attributed to a terminal.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{JournalBody, JournalEntryOut, WRITE, body_value, check_terminal, spec};
use crate::{Tool, ToolContext, ToolError};

/// Input of `add_journal_entry`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddJournalInput {
    /// Terminal attribution (a terminal id of this license); omit for "unassigned".
    #[serde(default)]
    pub terminal_id: Option<String>,
    /// Content.
    #[serde(deserialize_with = "crate::schema::object")]
    pub entry: JournalBody,
}

async fn handle(ctx: ToolContext, input: AddJournalInput) -> Result<JournalEntryOut, ToolError> {
    let body = body_value(&input.entry)?;
    if let Some(terminal) = &input.terminal_id {
        check_terminal(&ctx, terminal).await?;
    }
    let entry = ctx
        .services
        .store
        .create_journal_entry(&ctx.license_id, input.terminal_id.as_deref(), &body)
        .await?;
    Ok(JournalEntryOut::from(entry))
}

pub(super) fn tool() -> Tool {
    spec(
        "add_journal_entry",
        "Write a journal entry",
        "Adds a trading-journal entry (setup, plan, levels, outcome, emotions, tags), optionally attributed to a terminal. Works without any terminal connected.",
        WRITE,
    )
    .build(handle)
}
