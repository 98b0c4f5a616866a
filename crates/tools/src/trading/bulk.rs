//! `close_all_positions` and `cancel_all_orders`: every position (order)
//! matching the filters, each closed (cancelled) on its own and reported
//! with its own result, a dry run unless `dry_run` is `false`. A failure of
//! one never stops the others and is never hidden: `failed` counts them and
//! each item carries its error.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::trading::{self, check_close_volume};
use tradeterm_core::{Position, Side, SymbolSpec};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult};

use super::{BulkFilter, ItemError, ItemStatus, idempotent, item_key, spec};
use crate::context::unexpected;
use crate::{Tool, ToolContext, ToolError};

/// Which positions by their floating profit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfitFilter {
    /// Positions in profit (floating profit plus swap above zero).
    Winners,
    /// Positions at a loss (floating profit plus swap below zero).
    Losers,
}

/// Input of `close_all_positions`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseAllInput {
    /// Only this symbol.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: Option<String>,
    /// Only longs (`buy`) or shorts (`sell`).
    #[serde(default)]
    pub side: Option<Side>,
    /// Only this expert magic number.
    #[serde(default)]
    pub magic: Option<u64>,
    /// Only `winners` or only `losers`.
    #[serde(default)]
    pub profit: Option<ProfitFilter>,
    /// `true` (the default) lists what would be closed; `false` closes for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// One position of `close_all_positions`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CloseItem {
    /// Position ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Side.
    pub side: Side,
    /// Lots.
    pub volume: f64,
    /// Floating profit (with swap) when listed, account currency.
    pub profit: f64,
    /// What happened.
    pub status: ItemStatus,
    /// The terminal's trade result (closed).
    pub trade: Option<TradeResult>,
    /// Why it failed (or would fail).
    pub error: Option<ItemError>,
}

/// Outcome of `close_all_positions`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CloseAllOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Positions matching the filters.
    pub matched: usize,
    /// Closed (or would be closed).
    pub succeeded: usize,
    /// Failed (or would fail): see each item's `error`.
    pub failed: usize,
    /// Every matching position with its own result.
    pub positions: Vec<CloseItem>,
}

/// Input of `cancel_all_orders`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelAllInput {
    /// Only this symbol.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: Option<String>,
    /// Only buy orders (`buy`: buy limit, stop, stop limit) or sell orders (`sell`).
    #[serde(default)]
    pub side: Option<Side>,
    /// Only this expert magic number.
    #[serde(default)]
    pub magic: Option<u64>,
    /// `true` (the default) lists what would be cancelled; `false` cancels for real.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// One order of `cancel_all_orders`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CancelItem {
    /// Order ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Order type.
    pub order_type: tradeterm_core::account::OrderType,
    /// Lots.
    pub volume: f64,
    /// What happened.
    pub status: ItemStatus,
    /// The terminal's trade result (cancelled).
    pub trade: Option<TradeResult>,
    /// Why it failed (or would fail).
    pub error: Option<ItemError>,
}

/// Outcome of `cancel_all_orders`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CancelAllOutcome {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Orders matching the filters.
    pub matched: usize,
    /// Cancelled (or would be cancelled).
    pub succeeded: usize,
    /// Failed (or would fail): see each item's `error`.
    pub failed: usize,
    /// Every matching order with its own result.
    pub orders: Vec<CancelItem>,
}

fn profit_matches(filter: Option<ProfitFilter>, p: &Position) -> bool {
    let pnl = p.profit + p.swap;
    match filter {
        None => true,
        Some(ProfitFilter::Winners) => pnl > 0.0,
        Some(ProfitFilter::Losers) => pnl < 0.0,
    }
}

/// The specs of these symbols, fetched once each (a failure is kept per symbol).
async fn specs<'a>(
    ctx: &ToolContext,
    symbols: impl Iterator<Item = &'a str>,
) -> BTreeMap<String, Result<(SymbolSpec, i64), ToolError>> {
    let mut out = BTreeMap::new();
    for s in symbols {
        if out.contains_key(s) {
            continue;
        }
        let got = match futures_util::future::try_join(ctx.spec(s), ctx.tick(s)).await {
            Ok((spec, tick)) => Ok((spec, tick.time)),
            Err(e) => Err(e),
        };
        out.insert(s.to_owned(), got);
    }
    out
}

fn preflight_close(
    specs: &BTreeMap<String, Result<(SymbolSpec, i64), ToolError>>,
    p: &Position,
) -> Result<(), ToolError> {
    match specs.get(&p.symbol) {
        Some(Ok((spec, now))) => {
            check_close_volume(spec, p.volume, p.volume)?;
            trading::check_market_open(spec, *now)?;
            Ok(())
        }
        Some(Err(e)) => Err(ToolError::Dispatch(e.to_string())),
        None => Err(ToolError::Internal("no specification fetched".into())),
    }
}

async fn close_all(ctx: ToolContext, input: CloseAllInput) -> Result<CloseAllOutcome, ToolError> {
    if let Some(symbol) = &input.symbol {
        crate::market::check_symbol(symbol)?;
    }
    let live = ctx.is_live(input.dry_run);
    let filter = BulkFilter {
        symbol: input.symbol.clone(),
        side: input.side,
        magic: input.magic,
    };
    let positions: Vec<Position> = match ctx.run(Command::Positions { symbol: None }).await? {
        CommandResult::Positions { positions } => positions
            .into_iter()
            .filter(|p| filter.matches(&p.symbol, p.side, p.magic) && profit_matches(input.profit, p))
            .collect(),
        other => return Err(unexpected("positions", &other)),
    };
    let specs = specs(&ctx, positions.iter().map(|p| p.symbol.as_str())).await;
    let mut items: Vec<CloseItem> = positions
        .iter()
        .map(|p| {
            let pre = preflight_close(&specs, p);
            CloseItem {
                ticket: p.ticket,
                symbol: p.symbol.clone(),
                side: p.side,
                volume: p.volume,
                profit: p.profit + p.swap,
                status: if pre.is_ok() {
                    ItemStatus::WouldSucceed
                } else {
                    ItemStatus::WouldFail
                },
                trade: None,
                error: pre.err().as_ref().map(ItemError::from),
            }
        })
        .collect();
    if !live {
        return Ok(close_summary(true, items));
    }
    ctx.ensure_live_allowed().await?;
    idempotent(&ctx, "close_all_positions", &input, async {
        for item in &mut items {
            let command = Command::ClosePosition {
                ticket: item.ticket,
                volume: None,
                deviation_points: None,
                idempotency_key: item_key(&ctx, item.ticket),
            };
            match ctx.run(command).await {
                Ok(CommandResult::Trade(trade)) => {
                    item.status = ItemStatus::Done;
                    item.trade = Some(trade);
                    item.error = None;
                }
                Ok(other) => {
                    item.status = ItemStatus::Failed;
                    item.error = Some(ItemError::from(&unexpected("close_position", &other)));
                }
                Err(e) => {
                    tracing::info!(ticket = item.ticket, error = %e, "close_all_positions: one close failed");
                    item.status = ItemStatus::Failed;
                    item.error = Some(ItemError::from(&e));
                }
            }
        }
        Ok(close_summary(false, items))
    })
    .await
}

fn close_summary(dry_run: bool, positions: Vec<CloseItem>) -> CloseAllOutcome {
    let ok = |s: ItemStatus| matches!(s, ItemStatus::Done | ItemStatus::WouldSucceed);
    CloseAllOutcome {
        dry_run,
        matched: positions.len(),
        succeeded: positions.iter().filter(|i| ok(i.status)).count(),
        failed: positions.iter().filter(|i| !ok(i.status)).count(),
        positions,
    }
}

async fn cancel_all(ctx: ToolContext, input: CancelAllInput) -> Result<CancelAllOutcome, ToolError> {
    if let Some(symbol) = &input.symbol {
        crate::market::check_symbol(symbol)?;
    }
    let live = ctx.is_live(input.dry_run);
    let filter = BulkFilter {
        symbol: input.symbol.clone(),
        side: input.side,
        magic: input.magic,
    };
    let orders = match ctx.run(Command::Orders { symbol: None }).await? {
        CommandResult::Orders { orders } => orders
            .into_iter()
            .filter(|o| filter.matches(&o.symbol, o.order_type.side(), o.magic))
            .collect::<Vec<_>>(),
        other => return Err(unexpected("orders", &other)),
    };
    let specs = specs(&ctx, orders.iter().map(|o| o.symbol.as_str())).await;
    let mut items: Vec<CancelItem> = orders
        .iter()
        .map(|o| {
            let pre = match specs.get(&o.symbol) {
                Some(Ok((spec, now))) => trading::check_market_open(spec, *now).map_err(ToolError::from),
                Some(Err(e)) => Err(ToolError::Dispatch(e.to_string())),
                None => Err(ToolError::Internal("no specification fetched".into())),
            };
            CancelItem {
                ticket: o.ticket,
                symbol: o.symbol.clone(),
                order_type: o.order_type,
                volume: o.volume,
                status: if pre.is_ok() {
                    ItemStatus::WouldSucceed
                } else {
                    ItemStatus::WouldFail
                },
                trade: None,
                error: pre.err().as_ref().map(ItemError::from),
            }
        })
        .collect();
    if !live {
        return Ok(cancel_summary(true, items));
    }
    ctx.ensure_live_allowed().await?;
    idempotent(&ctx, "cancel_all_orders", &input, async {
        for item in &mut items {
            match ctx.run(Command::CancelOrder { ticket: item.ticket }).await {
                Ok(CommandResult::Trade(trade)) => {
                    item.status = ItemStatus::Done;
                    item.trade = Some(trade);
                    item.error = None;
                }
                Ok(other) => {
                    item.status = ItemStatus::Failed;
                    item.error = Some(ItemError::from(&unexpected("cancel_order", &other)));
                }
                Err(e) => {
                    item.status = ItemStatus::Failed;
                    item.error = Some(ItemError::from(&e));
                }
            }
        }
        Ok(cancel_summary(false, items))
    })
    .await
}

fn cancel_summary(dry_run: bool, orders: Vec<CancelItem>) -> CancelAllOutcome {
    let ok = |s: ItemStatus| matches!(s, ItemStatus::Done | ItemStatus::WouldSucceed);
    CancelAllOutcome {
        dry_run,
        matched: orders.len(),
        succeeded: orders.iter().filter(|i| ok(i.status)).count(),
        failed: orders.iter().filter(|i| !ok(i.status)).count(),
        orders,
    }
}

pub(super) fn close_all_tool() -> Tool {
    spec(
        "close_all_positions",
        "Close all positions",
        "Closes every open position matching the filters (symbol, side, magic, only winners or only losers), each with its own close and its own result; a position that fails is reported with its error and the others are still closed. DRY RUN BY DEFAULT: lists what would be closed and what the preflight (volume, market open) would refuse; `\"dry_run\": false` closes for real.",
    )
    .build(close_all)
}

pub(super) fn cancel_all_tool() -> Tool {
    spec(
        "cancel_all_orders",
        "Cancel all pending orders",
        "Cancels every pending order matching the filters (symbol, side, magic), each with its own result; an order that fails is reported with its error and the others are still cancelled. DRY RUN BY DEFAULT: lists what would be cancelled; `\"dry_run\": false` cancels for real.",
    )
    .build(cancel_all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(profit: f64, swap: f64) -> Position {
        Position {
            ticket: 1,
            symbol: "EURUSD".into(),
            side: Side::Buy,
            volume: 0.1,
            open_price: 1.1,
            open_time: 0,
            stop_loss: None,
            take_profit: None,
            current_price: 1.1,
            swap,
            commission: 0.0,
            profit,
            magic: 3,
            comment: String::new(),
        }
    }

    #[test]
    fn filters_select_by_symbol_side_magic_and_profit() {
        let f = BulkFilter {
            symbol: Some("eurusd".into()),
            side: Some(Side::Buy),
            magic: Some(3),
        };
        assert!(f.matches("EURUSD", Side::Buy, 3));
        assert!(!f.matches("EURUSD", Side::Sell, 3));
        assert!(!f.matches("GBPUSD", Side::Buy, 3));
        assert!(!f.matches("EURUSD", Side::Buy, 4));
        assert!(BulkFilter::default().matches("X", Side::Sell, 0));
        assert!(profit_matches(Some(ProfitFilter::Winners), &pos(5.0, -1.0)));
        assert!(!profit_matches(Some(ProfitFilter::Winners), &pos(1.0, -1.0)));
        assert!(profit_matches(Some(ProfitFilter::Losers), &pos(1.0, -2.0)));
        assert!(profit_matches(None, &pos(0.0, 0.0)));
    }

    #[test]
    fn a_failure_counts_and_stays_visible() {
        let item = |status| CloseItem {
            ticket: 1,
            symbol: "EURUSD".into(),
            side: Side::Buy,
            volume: 0.1,
            profit: 0.0,
            status,
            trade: None,
            error: None,
        };
        let s = close_summary(false, vec![item(ItemStatus::Done), item(ItemStatus::Failed)]);
        assert_eq!((s.matched, s.succeeded, s.failed), (2, 1, 1));
    }
}
