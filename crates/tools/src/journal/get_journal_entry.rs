//! `get_journal_entry`: one journal entry by id.

use super::{JournalEntryOut, JournalIdInput, READ, spec};
use crate::{Tool, ToolContext, ToolError};

async fn handle(ctx: ToolContext, input: JournalIdInput) -> Result<JournalEntryOut, ToolError> {
    ctx.services
        .store
        .journal_entry(&ctx.license_id, &input.id)
        .await?
        .map(JournalEntryOut::from)
        .ok_or_else(|| ToolError::NotFound(format!("no journal entry {}", input.id)))
}

pub(super) fn tool() -> Tool {
    spec(
        "get_journal_entry",
        "One journal entry",
        "One journal entry by id.",
        READ,
    )
    .build(handle)
}
