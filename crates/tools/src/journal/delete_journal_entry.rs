//! `delete_journal_entry`: deletes a journal entry.

use schemars::JsonSchema;
use serde::Serialize;

use super::{JournalIdInput, WRITE, spec};
use crate::{Annotations, Tool, ToolContext, ToolError};

/// Result of `delete_journal_entry`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    /// Entry id.
    pub id: String,
    /// Always `true` (a missing entry is a `NOT_FOUND` error).
    pub deleted: bool,
}

async fn handle(ctx: ToolContext, input: JournalIdInput) -> Result<Deleted, ToolError> {
    if ctx
        .services
        .store
        .delete_journal_entry(&ctx.license_id, &input.id)
        .await?
    {
        Ok(Deleted {
            id: input.id,
            deleted: true,
        })
    } else {
        Err(ToolError::NotFound(format!("no journal entry {}", input.id)))
    }
}

pub(super) fn tool() -> Tool {
    spec(
        "delete_journal_entry",
        "Delete a journal entry",
        "Deletes a journal entry.",
        Annotations {
            destructive: true,
            idempotent: true,
            ..WRITE
        },
    )
    .build(handle)
}
