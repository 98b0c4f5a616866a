//! `get_state_delta`: what changed on a terminal since the caller's last
//! call — positions opened, closed or modified, pending orders placed,
//! removed or modified, and the account figures that moved. The last state
//! each caller (credential) saw of each terminal is stored
//! (`Store::swap_state_snapshot`), so the delta is per caller and survives
//! restarts and load balancing. See `docs/alerts.md`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{AccountInfo, PendingOrder, Position};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

/// The state compared between calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Snapshot {
    account: AccountFigures,
    positions: BTreeMap<u64, Position>,
    orders: BTreeMap<u64, PendingOrder>,
}

/// The account figures a delta reports.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccountFigures {
    /// Balance.
    pub balance: f64,
    /// Equity.
    pub equity: f64,
    /// Margin in use.
    pub margin: f64,
    /// Free margin.
    pub free_margin: f64,
    /// Margin level, percent (`null` without open positions).
    pub margin_level: Option<f64>,
    /// Floating profit.
    pub profit: f64,
}

impl From<&AccountInfo> for AccountFigures {
    fn from(a: &AccountInfo) -> Self {
        Self {
            balance: a.balance,
            equity: a.equity,
            margin: a.margin,
            free_margin: a.free_margin,
            margin_level: a.margin_level,
            profit: a.profit,
        }
    }
}

/// Input of `get_state_delta`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateDeltaInput {}

/// A position or order whose terms changed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Modified<T> {
    /// Before.
    pub before: T,
    /// Now.
    pub after: T,
    /// Names of the fields that changed.
    pub fields: Vec<&'static str>,
}

/// Output of `get_state_delta`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StateDeltaOutput {
    /// True on the caller's first call for this terminal: everything is reported as opened or placed.
    pub initial: bool,
    /// When the caller's previous call saw the state (ISO 8601); absent on the first call.
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub since: Option<UnixMs>,
    /// When this state was read (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub as_of: UnixMs,
    /// Positions that appeared.
    pub positions_opened: Vec<Position>,
    /// Positions that are gone (closed), as last seen.
    pub positions_closed: Vec<Position>,
    /// Positions whose volume, stop loss or take profit changed.
    pub positions_modified: Vec<Modified<Position>>,
    /// Pending orders that appeared.
    pub orders_placed: Vec<PendingOrder>,
    /// Pending orders that are gone (filled, cancelled or expired), as last seen.
    pub orders_removed: Vec<PendingOrder>,
    /// Pending orders whose price, volume, stop loss or take profit changed.
    pub orders_modified: Vec<Modified<PendingOrder>>,
    /// The account figures now.
    pub account: AccountFigures,
    /// The account figures that changed, with their previous values (absent on the first call).
    pub account_changes: BTreeMap<String, [Option<f64>; 2]>,
    /// Whether anything besides floating figures (equity, profit, margin level, free margin) changed.
    pub changed: bool,
}

fn position_fields(before: &Position, after: &Position) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if before.volume != after.volume {
        changed.push("volume");
    }
    if before.stop_loss != after.stop_loss {
        changed.push("stop_loss");
    }
    if before.take_profit != after.take_profit {
        changed.push("take_profit");
    }
    changed
}

fn order_fields(before: &PendingOrder, after: &PendingOrder) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if before.price != after.price {
        changed.push("price");
    }
    if before.volume != after.volume {
        changed.push("volume");
    }
    if before.stop_loss != after.stop_loss {
        changed.push("stop_loss");
    }
    if before.take_profit != after.take_profit {
        changed.push("take_profit");
    }
    changed
}

/// What appeared, what is gone (as last seen) and what changed (per `fields`)
/// between two sets keyed by ticket.
fn diff<T: Clone>(
    before: &BTreeMap<u64, T>,
    after: &BTreeMap<u64, T>,
    fields: fn(&T, &T) -> Vec<&'static str>,
) -> (Vec<T>, Vec<T>, Vec<Modified<T>>) {
    let appeared = after
        .iter()
        .filter(|(t, _)| !before.contains_key(t))
        .map(|(_, v)| v.clone())
        .collect();
    let gone = before
        .iter()
        .filter(|(t, _)| !after.contains_key(t))
        .map(|(_, v)| v.clone())
        .collect();
    let modified = after
        .iter()
        .filter_map(|(t, v)| {
            let old = before.get(t)?;
            let fields = fields(old, v);
            (!fields.is_empty()).then(|| Modified {
                before: old.clone(),
                after: v.clone(),
                fields,
            })
        })
        .collect();
    (appeared, gone, modified)
}

fn account_changes(before: &AccountFigures, after: &AccountFigures) -> BTreeMap<String, [Option<f64>; 2]> {
    let pairs = [
        ("balance", Some(before.balance), Some(after.balance)),
        ("equity", Some(before.equity), Some(after.equity)),
        ("margin", Some(before.margin), Some(after.margin)),
        ("free_margin", Some(before.free_margin), Some(after.free_margin)),
        ("margin_level", before.margin_level, after.margin_level),
        ("profit", Some(before.profit), Some(after.profit)),
    ];
    pairs
        .into_iter()
        .filter(|(_, b, a)| b != a)
        .map(|(k, b, a)| (k.to_owned(), [b, a]))
        .collect()
}

async fn read_state(ctx: &ToolContext) -> Result<Snapshot, ToolError> {
    let (account, positions, orders) = futures_util::future::try_join3(
        ctx.account(),
        async {
            match ctx.run(Command::Positions { symbol: None }).await? {
                CommandResult::Positions { positions } => Ok(positions),
                other => Err(unexpected("positions", &other)),
            }
        },
        async {
            match ctx.run(Command::Orders { symbol: None }).await? {
                CommandResult::Orders { orders } => Ok(orders),
                other => Err(unexpected("orders", &other)),
            }
        },
    )
    .await?;
    Ok(Snapshot {
        account: AccountFigures::from(&account),
        positions: positions.into_iter().map(|p| (p.ticket, p)).collect(),
        orders: orders.into_iter().map(|o| (o.ticket, o)).collect(),
    })
}

async fn state_delta(ctx: ToolContext, _input: StateDeltaInput) -> Result<StateDeltaOutput, ToolError> {
    let terminal = ctx.terminal()?.to_owned();
    let now = read_state(&ctx).await?;
    let stored = serde_json::to_value(&now).map_err(|e| ToolError::Internal(e.to_string()))?;
    let before = ctx
        .services
        .store
        .swap_state_snapshot(&ctx.license_id, &ctx.caller, &terminal, &stored, ctx.now_ms)
        .await?;
    let previous = match before {
        // A snapshot of an older shape counts as none: the caller gets a fresh start.
        Some(b) => serde_json::from_value::<Snapshot>(b.snapshot)
            .ok()
            .map(|s| (s, b.taken_at)),
        None => None,
    };
    let initial = previous.is_none();
    let (prev, since) = match previous {
        Some((s, at)) => (s, Some(at)),
        None => (
            Snapshot {
                account: now.account,
                positions: BTreeMap::new(),
                orders: BTreeMap::new(),
            },
            None,
        ),
    };
    let (positions_opened, positions_closed, positions_modified) =
        diff(&prev.positions, &now.positions, position_fields);
    let (orders_placed, orders_removed, orders_modified) = diff(&prev.orders, &now.orders, order_fields);
    let account_changes = if initial {
        BTreeMap::new()
    } else {
        account_changes(&prev.account, &now.account)
    };
    let changed = !(positions_opened.is_empty()
        && positions_closed.is_empty()
        && positions_modified.is_empty()
        && orders_placed.is_empty()
        && orders_removed.is_empty()
        && orders_modified.is_empty())
        || account_changes.contains_key("balance")
        || account_changes.contains_key("margin");
    Ok(StateDeltaOutput {
        initial,
        since,
        as_of: ctx.now_ms,
        positions_opened,
        positions_closed,
        positions_modified,
        orders_placed,
        orders_removed,
        orders_modified,
        account: now.account,
        account_changes,
        changed,
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_state_delta",
            title: "State changes",
            description: "What changed on the terminal since this caller's previous call: positions opened, closed or modified (volume, stop loss, take profit), pending orders placed, removed or modified, and the account figures that moved. The first call reports everything as new (`initial`). Per caller (API key or terminal key) and terminal.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            // Reads the terminal; the answer depends on the caller's previous call.
            annotations: Annotations {
                read_only: true,
                destructive: false,
                idempotent: false,
                open_world: true,
            },
        }
        .build(state_delta),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn snapshots_stored_with_unix_ms_times_still_read() {
        let position = json!({
            "ticket": 7, "symbol": "EURUSD", "side": "buy", "volume": 0.1, "open_price": 1.1,
            "open_time": 1_795_003_200_000_i64, "stop_loss": null, "take_profit": null,
            "current_price": 1.1, "swap": 0.0, "commission": 0.0, "profit": 0.0, "magic": 0, "comment": ""
        });
        let order = json!({
            "ticket": 8, "symbol": "EURUSD", "order_type": "BUY_LIMIT", "volume": 0.1, "price": 1.0,
            "stop_loss": null, "take_profit": null, "time_setup": 1_795_003_200_000_i64, "magic": 0, "comment": ""
        });
        let account = json!({
            "balance": 1.0, "equity": 1.0, "margin": 0.0, "free_margin": 1.0, "margin_level": null, "profit": 0.0
        });
        let old = json!({ "account": account, "positions": { "7": position }, "orders": { "8": order } });
        let snapshot: Snapshot = serde_json::from_value(old).expect("an old snapshot reads");
        assert_eq!(snapshot.positions[&7].open_time, 1_795_003_200_000);
        assert_eq!(snapshot.orders[&8].time_setup, 1_795_003_200_000);
        // Written again, the times are ISO text, and read back the same.
        let new = serde_json::to_value(&snapshot).unwrap();
        assert_eq!(new["positions"]["7"]["open_time"], "2026-11-18T12:00:00Z");
        let again: Snapshot = serde_json::from_value(new).unwrap();
        assert_eq!(again.positions, snapshot.positions);
        assert_eq!(again.orders, snapshot.orders);
    }
}
