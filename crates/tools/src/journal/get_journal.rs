//! `get_journal`: the license's journal entries, newest first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::time::parse_iso;
use tradeterm_store::{JournalFilter, TerminalFilter};

use super::{JournalEntryOut, READ, spec};
use crate::{Tool, ToolContext, ToolError};

/// Most entries one `get_journal` call returns.
const MAX_JOURNAL_LIMIT: u32 = 1_000;
/// Input of `get_journal`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalQuery {
    /// `all` (default), `unassigned`, or a terminal id.
    #[serde(default)]
    pub terminal_id: Option<String>,
    /// Only entries created at or after this ISO 8601 time.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub since: Option<String>,
    /// Only entries created before this ISO 8601 time.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub until: Option<String>,
    /// At most this many entries (1-1000, default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_JOURNAL_LIMIT))]
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

fn parse_opt_time(name: &str, v: &Option<String>) -> Result<Option<i64>, ToolError> {
    v.as_deref()
        .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput(format!("`{name}` must be an ISO 8601 time"))))
        .transpose()
}

async fn handle(ctx: ToolContext, query: JournalQuery) -> Result<JournalList, ToolError> {
    let terminal = match query.terminal_id.as_deref() {
        None | Some("all") => TerminalFilter::All,
        Some("unassigned") => TerminalFilter::Unassigned,
        Some(id) => TerminalFilter::Terminal(id.to_owned()),
    };
    let limit = query.limit.unwrap_or(100);
    if !(1..=MAX_JOURNAL_LIMIT).contains(&limit) {
        return Err(ToolError::InvalidInput(format!(
            "`limit` must be between 1 and {MAX_JOURNAL_LIMIT}"
        )));
    }
    let filter = JournalFilter {
        terminal,
        since: parse_opt_time("since", &query.since)?,
        until: parse_opt_time("until", &query.until)?,
        limit,
        offset: query.offset.unwrap_or(0),
    };
    let entries = ctx.services.store.list_journal(&ctx.license_id, &filter).await?;
    Ok(JournalList {
        entries: entries.into_iter().map(JournalEntryOut::from).collect(),
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "get_journal",
        "Read the journal",
        "Trading-journal entries of the license, newest first. `terminal_id`: `all` (default), `unassigned` (entries without terminal attribution) or a terminal id. Works without any terminal connected.",
        READ,
    )
    .build(handle)
}
