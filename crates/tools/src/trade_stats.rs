//! Trading statistics tools: `get_trade_stats`, `get_pnl`.
//!
//! Both read the deal history of the range (and the deals after it, up to
//! now) and the account, anchor the balance curve at the balance at `to`
//! (the current balance minus the balance changes of the deals after `to`),
//! and compute with [`tradeterm_core::trade_stats`]. Deposits and
//! withdrawals are cash flows, never profit. Definitions: `docs/trade-stats.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::costs;
use tradeterm_core::time::{DAY_MS, UnixMs, iso, parse_iso};
use tradeterm_core::trade_stats::{self, BalanceAnchor, PnlPeriod, PnlRow, StatsRequest, TradeStats};
use tradeterm_core::{AccountInfo, Deal};
use tradeterm_protocol::{Command, CommandResult};

use crate::account::MAX_HISTORY_DAYS;
use crate::context::unexpected;
use crate::costs::core_err;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Default length of the range, days before `to`.
pub const DEFAULT_RANGE_DAYS: i64 = 30;

/// Input of `get_trade_stats`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TradeStatsInput {
    /// Range start, ISO 8601 (inclusive). Default: 30 days before `to`. At most 366 days before `to`.
    #[serde(default)]
    pub from: Option<String>,
    /// Range end, ISO 8601 (exclusive). Default: now.
    #[serde(default)]
    pub to: Option<String>,
}

/// Input of `get_pnl`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PnlInput {
    /// Range start, ISO 8601 (inclusive). Default: 30 days before `to`. At most 366 days before `to`.
    #[serde(default)]
    pub from: Option<String>,
    /// Range end, ISO 8601 (exclusive). Default: now.
    #[serde(default)]
    pub to: Option<String>,
    /// `day` (default, UTC days), `week` (ISO weeks, Monday to Sunday UTC) or `month` (calendar months UTC).
    #[serde(default)]
    pub period: Option<PnlPeriod>,
}

/// Output of `get_trade_stats`: the account currency and the statistics of
/// [`tradeterm_core::trade_stats`] (fields documented there).
#[derive(Debug, Serialize, JsonSchema)]
pub struct TradeStatsOutput {
    /// Account currency of the amounts.
    pub currency: String,
    /// The statistics of the range.
    #[serde(flatten)]
    pub stats: TradeStats,
}

impl TradeStatsOutput {
    fn new(stats: TradeStats, currency: String) -> Self {
        Self { currency, stats }
    }
}

/// Output of `get_pnl`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PnlOutput {
    /// Range start, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Range end, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Account currency of the amounts.
    pub currency: String,
    /// `day`, `week` or `month`.
    pub period: PnlPeriod,
    /// One row per period with at least one deal, oldest first.
    pub rows: Vec<PnlRow>,
    /// Totals over the range.
    pub total: PnlRow,
}

/// The range `[from, to)` of the input: defaults, ISO parsing, the cap.
pub(crate) fn range_of(
    ctx: &ToolContext,
    from: &Option<String>,
    to: &Option<String>,
) -> Result<(UnixMs, UnixMs), ToolError> {
    let parse = |field: &str, v: &Option<String>| {
        v.as_deref()
            .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput(format!("`{field}` must be an ISO 8601 time"))))
            .transpose()
    };
    let to = parse("to", to)?.unwrap_or(ctx.now_ms);
    let from = parse("from", from)?.unwrap_or(to.saturating_sub(DEFAULT_RANGE_DAYS * DAY_MS));
    if from >= to {
        return Err(ToolError::InvalidInput("`from` must be before `to`".into()));
    }
    if to.saturating_sub(from) > MAX_HISTORY_DAYS * DAY_MS {
        return Err(ToolError::InvalidInput(format!(
            "the range may span at most {MAX_HISTORY_DAYS} days"
        )));
    }
    Ok((from, to))
}

async fn deals(ctx: &ToolContext, from: UnixMs, to: UnixMs) -> Result<Vec<Deal>, ToolError> {
    match ctx.run(Command::HistoryDeals { from, to }).await? {
        CommandResult::Deals { deals } => Ok(deals),
        other => Err(unexpected("history_deals", &other)),
    }
}

fn same_deals(a: &[Deal], b: &[Deal]) -> bool {
    a.len() == b.len() && a.iter().map(|d| d.ticket).max() == b.iter().map(|d| d.ticket).max()
}

/// The deals of `[from, to)`, the account, and the balance at `to` (the
/// current balance minus the changes of the deals after `to`; deals are read
/// on both sides of the account so that none slips in between).
async fn history(ctx: &ToolContext, from: UnixMs, to: UnixMs) -> Result<(Vec<Deal>, AccountInfo, f64), ToolError> {
    let until = to.max(ctx.now_ms).saturating_add(DAY_MS);
    let mut all = deals(ctx, from, until).await?;
    let mut account = ctx.account().await?;
    for _ in 0..3 {
        let again = deals(ctx, from, until).await?;
        if same_deals(&all, &again) {
            break;
        }
        all = again;
        account = ctx.account().await?;
    }
    let (in_range, later): (Vec<Deal>, Vec<Deal>) = all.into_iter().partition(|d| d.time < to);
    let later_change: f64 = later.iter().map(costs::deal_balance_change).sum();
    let balance_at_to = account.balance - later_change;
    Ok((in_range, account, balance_at_to))
}

async fn get_trade_stats(ctx: ToolContext, input: TradeStatsInput) -> Result<TradeStatsOutput, ToolError> {
    let (from, to) = range_of(&ctx, &input.from, &input.to)?;
    let (deals, account, balance) = history(&ctx, from, to).await?;
    let request = StatsRequest {
        from,
        to,
        balance: Some(BalanceAnchor::End { balance }),
    };
    let stats = trade_stats::trade_stats(&deals, &request).map_err(core_err)?;
    Ok(TradeStatsOutput::new(stats, account.currency))
}

async fn get_pnl(ctx: ToolContext, input: PnlInput) -> Result<PnlOutput, ToolError> {
    let (from, to) = range_of(&ctx, &input.from, &input.to)?;
    let period = input.period.unwrap_or(PnlPeriod::Day);
    let (deals, account, balance) = history(&ctx, from, to).await?;
    let report = trade_stats::pnl(&deals, from, to, period, Some(BalanceAnchor::End { balance })).map_err(core_err)?;
    Ok(PnlOutput {
        from,
        to,
        currency: account.currency,
        period: report.period,
        rows: report.rows,
        total: report.total,
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_trade_stats",
            title: "Trading statistics",
            description: "Statistics of the closed trades in [`from`, `to`) (default: the last 30 days; at most 366 days) from the deal history, a trade being all deals of one position (partial closes are parts of one trade): trades, win rate, profit factor, expectancy, average win/loss, payoff ratio, best and worst trade, longest win/loss streaks, average holding time, net profit with swap and commission, max drawdown of the balance curve, Sharpe and Sortino of daily returns (UTC weekdays, annualised with √252), and breakdowns by symbol, long vs short, weekday and hour of entry, each with its sample size. Deposits and withdrawals are cash flows, never profit.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_trade_stats),
        ToolSpec {
            name: "get_pnl",
            title: "P&L by period",
            description: "Profit and loss per UTC day, ISO week or calendar month over [`from`, `to`) (default: the last 30 days; at most 366 days) from the deal history: trading profit, swap and commission split out, net, deposits and withdrawals apart (never profit), closing deals and the balance at each period's end; plus a total row. Periods without deals are left out.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_pnl),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_tools_are_in_the_catalog_with_optional_ranges() {
        for name in ["get_trade_stats", "get_pnl"] {
            let t = crate::find(name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(t.capability, Capability::Analytics);
            assert!(t.annotations.read_only);
            assert!(t.input_schema.get("required").is_none(), "{name}: {}", t.input_schema);
        }
    }
}
