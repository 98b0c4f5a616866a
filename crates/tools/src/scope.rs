//! Scoped credentials on the tool invocation path (`docs/security.md`,
//! "Scoped keys"): the one place where a key's [`KeyScope`] is enforced, so
//! REST, MCP and the management routes cannot disagree.
//!
//! [`before`] runs before the terminal is resolved (capability, expiry,
//! source network, every symbol the input names, the symbol filter of the
//! bulk tools), [`terminal`] on the resolved terminal, and [`trade`] on a
//! trade tool with its context: the symbol of a ticket, the order volume,
//! the open volume of the symbol, and for a live call the dry-run-only rule
//! and the live orders of the day. A refusal is 403 `FORBIDDEN` naming the
//! rule. A dry run is checked against the same rules; what only a live call
//! would be refused for (dry-run only, the day's orders) is reported in the
//! dry run's `notes` (or `warnings`) instead.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;
use tradeterm_core::account::Side;
use tradeterm_core::license::Capability;
use tradeterm_core::scope::{KeyScope, ScopeRefusal};

use crate::{Gate, Tool, ToolContext, ToolError};

/// Tools that open exposure with a `volume` (or legs with volumes).
const PLACING: &[&str] = &["place_order", "place_bracket", "place_oco", "reverse_position"];
/// Tools acting on every position or order, narrowed by a `symbol` filter.
const BULK: &[&str] = &["close_all_positions", "cancel_all_orders"];
/// How deep the input is searched for symbols: serde_json's own recursion
/// limit, so no symbol of a parsed input is out of reach of the check.
const MAX_DEPTH: usize = 128;

fn forbidden(r: ScopeRefusal) -> ToolError {
    ToolError::Forbidden(r.message)
}

/// Whether the call is live (`"dry_run": false`, not forced to paper).
pub(crate) fn is_live(input: &Value, force_dry_run: bool) -> bool {
    !force_dry_run && input.get("dry_run").and_then(Value::as_bool) == Some(false)
}

/// Every symbol the input names: `symbol` fields and `symbols` lists, at any depth ([`MAX_DEPTH`]).
fn symbols_of(input: &Value, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    match input {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("symbol", Value::String(s)) => out.push(s.clone()),
                    ("symbols", Value::Array(items)) => {
                        out.extend(items.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                    _ => symbols_of(v, depth + 1, out),
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                symbols_of(v, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// Checks before the terminal is known.
pub(crate) fn before(
    scope: &KeyScope,
    tool: &Tool,
    input: &Value,
    live: bool,
    now_ms: i64,
    source: Option<std::net::IpAddr>,
) -> Result<(), ToolError> {
    scope.check_time(now_ms).map_err(forbidden)?;
    scope.check_source(source).map_err(forbidden)?;
    let needs = match tool.gate {
        Gate::Always => Some(tool.capability),
        Gate::LiveOnly => live.then_some(tool.capability),
    };
    if let Some(cap) = needs {
        scope.check_capability(cap).map_err(forbidden)?;
    }
    if scope.limits_symbols() {
        let mut names = Vec::new();
        symbols_of(input, 0, &mut names);
        for s in &names {
            scope.check_symbol(s).map_err(forbidden)?;
        }
        if BULK.contains(&tool.name) && names.is_empty() {
            return Err(ToolError::Forbidden(format!(
                "refused by the key's scope (`symbols`): `{}` acts on every symbol; give a `symbol` filter within the key's symbols",
                tool.name
            )));
        }
    }
    Ok(())
}

/// Checks the resolved terminal.
pub(crate) fn terminal(scope: &KeyScope, terminal_id: &str) -> Result<(), ToolError> {
    scope.check_terminal(terminal_id).map_err(forbidden)
}

async fn pending_orders(ctx: &ToolContext) -> Result<Vec<tradeterm_core::PendingOrder>, ToolError> {
    match ctx.run(tradeterm_protocol::Command::Orders { symbol: None }).await? {
        tradeterm_protocol::CommandResult::Orders { orders } => Ok(orders),
        other => Err(crate::context::unexpected("orders", &other)),
    }
}

fn volume_of(v: &Value) -> Option<f64> {
    v.get("volume").and_then(Value::as_f64)
}

/// The checks of a trade tool with its context. Answers what a live call
/// would be refused for when this one is a dry run (to report), if anything.
pub(crate) async fn trade(
    scope: &KeyScope,
    tool: &Tool,
    ctx: &ToolContext,
    input: &Value,
    live: bool,
) -> Result<Option<String>, ToolError> {
    if tool.capability != Capability::Trade {
        return Ok(None);
    }
    let needs_book = scope.limits_symbols() || scope.max_open_volume_per_symbol.is_some();
    // The position or order a ticket names: its symbol (and, to reverse, its volume).
    let mut ticket_symbol: Option<(String, f64, Side)> = None;
    if needs_book {
        for field in ["ticket", "ticket_by"] {
            let Some(ticket) = input.get(field).and_then(Value::as_u64) else {
                continue;
            };
            let found = crate::account::positions(ctx, None)
                .await?
                .into_iter()
                .find(|p| p.ticket == ticket)
                .map(|p| (p.symbol, p.volume, p.side));
            let found = match found {
                Some(f) => Some(f),
                None => pending_orders(ctx)
                    .await?
                    .into_iter()
                    .find(|o| o.ticket == ticket)
                    .map(|o| (o.symbol, o.volume, o.order_type.side())),
            };
            // Unknown ticket: the tool answers its own 404.
            if let Some((symbol, volume, side)) = found {
                scope.check_symbol(&symbol).map_err(forbidden)?;
                if field == "ticket" {
                    ticket_symbol = Some((symbol, volume, side));
                }
            }
        }
    }
    if PLACING.contains(&tool.name) {
        // The order's volume and symbol: the input's, the legs', or (reverse) the position's.
        let mut orders: Vec<(String, f64)> = Vec::new();
        if tool.name == "reverse_position" {
            if let Some((symbol, volume, _)) = &ticket_symbol {
                orders.push((symbol.clone(), *volume));
            }
        } else if tool.name == "place_oco" {
            for leg in ["first", "second"] {
                if let (Some(s), Some(v)) = (
                    input.pointer(&format!("/{leg}/symbol")).and_then(Value::as_str),
                    input.get(leg).and_then(volume_of),
                ) {
                    orders.push((s.to_owned(), v));
                }
            }
        } else if let (Some(s), Some(v)) = (input.get("symbol").and_then(Value::as_str), volume_of(input)) {
            orders.push((s.to_owned(), v));
        }
        for (_, v) in &orders {
            scope.check_volume(*v).map_err(forbidden)?;
        }
        if scope.max_open_volume_per_symbol.is_some() && !orders.is_empty() {
            let positions = crate::account::positions(ctx, None).await?;
            for (symbol, v) in &orders {
                let open: f64 = positions
                    .iter()
                    .filter(|p| p.symbol.eq_ignore_ascii_case(symbol))
                    .map(|p| p.volume)
                    .sum();
                // A reverse closes the position first: what stays open is the new side only.
                let open = if tool.name == "reverse_position" {
                    open - v
                } else {
                    open
                };
                scope.check_open_volume(symbol, open.max(0.0), *v).map_err(forbidden)?;
            }
        }
        // An OCO places two orders of which one fills: the day's count is per order sent.
        let sent = if tool.name == "place_oco" { 2 } else { 1 };
        return live_rules(scope, ctx, live, sent).await;
    }
    live_rules(scope, ctx, live, 0).await
}

/// The rules only a live call meets; `orders`: live orders this call sends.
async fn live_rules(scope: &KeyScope, ctx: &ToolContext, live: bool, orders: u64) -> Result<Option<String>, ToolError> {
    if !live {
        let mut would = Vec::new();
        if let Err(r) = scope.check_live() {
            would.push(r.message);
        } else if orders > 0
            && scope.max_live_orders_per_day.is_some()
            && let Err(r) = scope.check_daily(day_count(ctx, 0).await?)
        {
            would.push(r.message);
        }
        return Ok((!would.is_empty()).then(|| format!("a live call would be {}", would.join("; "))));
    }
    scope.check_live().map_err(forbidden)?;
    if orders > 0 && scope.max_live_orders_per_day.is_some() {
        // Counted before sending (a refused order counts): two calls racing
        // on the last order of the day cannot both pass.
        let after = day_count(ctx, orders).await?;
        if let Err(r) = scope.check_daily(after - orders) {
            return Err(forbidden(r));
        }
        if let Some(max) = scope.max_live_orders_per_day
            && after > u64::from(max)
        {
            return Err(ToolError::Forbidden(format!(
                "refused by the key's scope (`max_live_orders_per_day`): this call sends {orders} orders and the key has {} of its {max} live orders of today (UTC) left",
                u64::from(max).saturating_sub(after - orders)
            )));
        }
    }
    Ok(None)
}

fn local_days() -> &'static Mutex<HashMap<String, u64>> {
    static DAYS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    DAYS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The key's live orders of today (UTC) after adding `add`: in Redis when
/// the deployment has it (shared by every instance), else in this process.
/// Redis unreachable: refused (a limit that cannot be counted fails closed).
async fn day_count(ctx: &ToolContext, add: u64) -> Result<u64, ToolError> {
    let day = ctx.now_ms.div_euclid(tradeterm_core::time::DAY_MS);
    let key = format!("tt:scope-orders:{}:{day}", ctx.caller);
    if let Some(pool) = &ctx.services.rate_limits.redis {
        let mut conn = pool.get().await.map_err(|e| {
            tracing::warn!(error = %e, "scope: Redis unavailable for the day's live orders");
            ToolError::Forbidden(
                "refused by the key's scope (`max_live_orders_per_day`): the day's orders cannot be counted now; retry shortly".into(),
            )
        })?;
        let (n,): (u64,) = deadpool_redis::redis::pipe()
            .atomic()
            .cmd("INCRBY")
            .arg(&key)
            .arg(add)
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(2 * tradeterm_core::time::DAY_MS)
            .ignore()
            .query_async(&mut conn)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "scope: Redis failed counting the day's live orders");
                ToolError::Forbidden(
                    "refused by the key's scope (`max_live_orders_per_day`): the day's orders cannot be counted now; retry shortly".into(),
                )
            })?;
        return Ok(n);
    }
    let mut days = local_days().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    days.retain(|k, _| {
        k.rsplit(':')
            .next()
            .and_then(|d| d.parse::<i64>().ok())
            .is_some_and(|d| d >= day - 1)
    });
    let n = days.entry(key).or_insert(0);
    *n += add;
    Ok(*n)
}

/// Adds a dry run's report of what a live call would be refused for to its output.
pub(crate) fn report(output: &mut Value, note: String) {
    for field in ["notes", "warnings"] {
        if let Some(list) = output.get_mut(field).and_then(Value::as_array_mut) {
            list.push(Value::String(note));
            return;
        }
    }
    if let Some(map) = output.as_object_mut() {
        map.insert("notes".into(), Value::Array(vec![Value::String(note)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn symbols_are_found_wherever_the_input_names_them() {
        let mut out = Vec::new();
        symbols_of(
            &json!({ "symbol": "EURUSD", "first": { "symbol": "GBPUSD" }, "symbols": ["USDJPY", 3],
                     "legs": [{ "symbol": "XAUUSD" }], "note": "symbol" }),
            0,
            &mut out,
        );
        out.sort();
        assert_eq!(out, ["EURUSD", "GBPUSD", "USDJPY", "XAUUSD"]);
        // Deep in a rule's conditions too.
        let mut deep = json!({ "symbol": "US500" });
        for _ in 0..20 {
            deep = json!({ "all": [deep] });
        }
        let mut out = Vec::new();
        symbols_of(&deep, 0, &mut out);
        assert_eq!(out, ["US500"]);
    }

    #[test]
    fn a_dry_run_report_lands_in_notes_or_warnings() {
        let mut a = json!({ "notes": ["x"] });
        report(&mut a, "n".into());
        assert_eq!(a["notes"], json!(["x", "n"]));
        let mut b = json!({ "warnings": [] });
        report(&mut b, "n".into());
        assert_eq!(b["warnings"], json!(["n"]));
        let mut c = json!({ "ok": true });
        report(&mut c, "n".into());
        assert_eq!(c["notes"], json!(["n"]));
    }

    #[test]
    fn before_names_the_rule() {
        let tool = crate::find("place_order").unwrap();
        let scope: KeyScope =
            serde_json::from_value(json!({ "symbols": ["EUR*"], "capabilities": ["read", "analytics"] })).unwrap();
        let e = before(&scope, tool, &json!({ "symbol": "GBPUSD" }), false, 0, None).unwrap_err();
        assert!(
            matches!(&e, ToolError::Forbidden(m) if m.contains("`symbols`")),
            "{e:?}"
        );
        // A dry run of a live-only tool needs no `trade`; a live one does.
        before(&scope, tool, &json!({ "symbol": "EURUSD" }), false, 0, None).unwrap();
        let e = before(&scope, tool, &json!({ "symbol": "EURUSD" }), true, 0, None).unwrap_err();
        assert!(
            matches!(&e, ToolError::Forbidden(m) if m.contains("`capabilities`")),
            "{e:?}"
        );
        let bulk = crate::find("close_all_positions").unwrap();
        let e = before(&scope, bulk, &json!({}), false, 0, None).unwrap_err();
        assert!(
            matches!(&e, ToolError::Forbidden(m) if m.contains("symbol` filter")),
            "{e:?}"
        );
    }
}
