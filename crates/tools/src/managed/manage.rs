//! `list_managed_orders` and `remove_managed_order`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::license::Capability;
use tradeterm_core::managed::EndReason;
use tradeterm_events::EventType;

use super::{ManagedOrder, Stored, publish, view};
use crate::{Annotations, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Input of `list_managed_orders`.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListManagedInput {
    /// Also list the rules that ended (default `false`).
    #[serde(default)]
    pub include_ended: Option<bool>,
}

/// The terminal's managed exits.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ManagedList {
    /// Oldest first.
    pub managed_orders: Vec<ManagedOrder>,
}

/// Input of `remove_managed_order`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveManagedInput {
    /// The rule's id (`mxo_…`).
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
}

async fn list(ctx: ToolContext, input: ListManagedInput) -> Result<ManagedList, ToolError> {
    let terminal = ctx.terminal()?;
    let records = ctx
        .services
        .store
        .managed_orders(&ctx.license_id, Some(terminal), input.include_ended.unwrap_or(false))
        .await?;
    Ok(ManagedList {
        managed_orders: records.iter().map(view).collect(),
    })
}

async fn remove(ctx: ToolContext, input: RemoveManagedInput) -> Result<ManagedOrder, ToolError> {
    if input.id.is_empty() || input.id.chars().count() > 64 {
        return Err(ToolError::InvalidInput("`id` must be 1-64 characters".into()));
    }
    let store = &ctx.services.store;
    let Some(record) = store.managed_order(&ctx.license_id, &input.id).await? else {
        return Err(ToolError::NotFound(format!("no managed order {}", input.id)));
    };
    // A live rule acts on the account: only a credential that may trade removes it.
    if !record.dry_run && !ctx.caps.contains(&Capability::Trade) {
        return Err(ToolError::Forbidden(
            "removing a live managed order needs the `trade` capability".into(),
        ));
    }
    let Some(ended) = store
        .end_managed_order(&ctx.license_id, &input.id, EndReason::Removed.as_str())
        .await?
    else {
        return Err(ToolError::NotFound(format!(
            "managed order {} has already ended",
            input.id
        )));
    };
    let symbol = Stored::of(&ended).symbol;
    publish(
        &ctx.services,
        &ended,
        &symbol,
        EventType::ManagedEnded,
        "removed by the client".into(),
        None,
        Some(EndReason::Removed.as_str()),
    );
    Ok(view(&ended))
}

pub(super) fn list_tool() -> Tool {
    ToolSpec {
        name: "list_managed_orders",
        title: "List managed orders",
        description: "The terminal's managed exits (trailing stops, breakevens, OCO pairs, brackets) with their status (`active`, `paused` while the terminal is unreachable, `ended` and why), what each did (its log of actions, and for dry-run rules the paper book).",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
    }
    .build(list)
}

pub(super) fn remove_tool() -> Tool {
    ToolSpec {
        name: "remove_managed_order",
        title: "Remove a managed order",
        description: "Ends a managed exit by id: the server stops managing it at once (on every instance). Orders and stops it already placed stay as they are. A live rule needs the `trade` capability to remove; a rule that has already ended answers NOT_FOUND.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::License,
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
    }
    .build(remove)
}
