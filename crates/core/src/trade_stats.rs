//! Trading statistics and periodic P&L from the deal history (pure functions;
//! the `tradeterm-tools` wrappers fetch the deals and the balance).
//!
//! # Round trips
//!
//! Deals are grouped by their position id: `in` deals open (or add to) a
//! position, `out` deals close it, in whole or in part. A **trade** is a
//! position with at least one `out` deal in the range; its result is the sum
//! of `profit + swap + commission` of its deals in the range (the entry's
//! commission included when the entry is in the range). Partial closes are
//! parts of one trade. A position opened before the range has no known entry:
//! its holding time is unknown and its direction comes from the closing deal.
//! Positions still open at the end of the range without any closing deal are
//! not trades (counted in `open_positions`).
//!
//! # Cash flows
//!
//! `balance` deals with a non-zero `profit` are deposits (> 0) and
//! withdrawals (< 0): **cash flows, never profit**. Swap and commission carried
//! by balance deals are costs (they count in the P&L, not in any trade).
//!
//! # Metrics
//!
//! With `r_i` the result of trade `i` (`n` trades, ordered by their last
//! closing deal):
//! - win rate = `#(r > 0) / n` (break-even trades count in `n`);
//! - profit factor = `Σ r⁺ / |Σ r⁻|` (`None` without a losing trade);
//! - expectancy = `Σ r / n`; average win = `Σ r⁺ / #wins`; average loss =
//!   `Σ r⁻ / #losses` (negative); payoff ratio = `avg win / |avg loss|`;
//! - streaks: longest run of consecutive wins (losses); a break-even trade
//!   ends both;
//! - holding time: mean of `last close − first entry` over the trades whose
//!   entry is in the range.
//!
//! **Daily returns**: the periods are the UTC days Monday to Friday of the
//! range; the balance at the end of each is compared with the previous one
//! (the first with the balance at `from`). Deals on a Saturday or Sunday fall
//! in the next weekday's period, deals after the last weekday in the last
//! period. With `B` the balances and `F` the period's net cash flow, the
//! return is `r = (B_k − B_{k−1} − F_k) / (B_{k−1} + F_k)` (flows at the
//! start of the period); a period whose denominator is not positive is
//! skipped and counted. Sharpe = `mean(r) / std(r, ddof=1) × √252`; Sortino =
//! `mean(r) / √mean(min(r, 0)²) × √252` (risk-free rate and target 0, as
//! `empyrical`'s `sharpe_ratio` and `sortino_ratio`); both `None` when
//! undefined (fewer than 2 returns, zero deviation, no negative return).
//!
//! **Max drawdown of the balance curve**: the largest fall of the balance
//! after each deal from its running peak, the peak moving with cash flows
//! ([`crate::costs::equity_curve`]); in percent of that peak. The same of the
//! compounded daily-return index is given as `max_drawdown_daily_percent`
//! (`empyrical.max_drawdown`).
//!
//! The balance level at the start or the end of the range is needed for
//! returns and percentages; without it the money figures are still given.
//! `tests/trade_stats_reference.rs` checks the metrics against pandas, numpy
//! and empyrical on fixtures made by `scripts/fixtures/trade_stats_fixtures.py`.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::trade_stats::{trade_stats, StatsRequest};
//! use tradeterm_core::{Deal, DealEntry, Side};
//!
//! let deal = |ticket: u64, position: u64, side: Side, entry: DealEntry, time: i64, profit: f64| Deal {
//!     ticket, order: ticket, position, symbol: if position == 0 { String::new() } else { "EURUSD".into() },
//!     side, entry, volume: 0.1, price: 1.1, time, profit, swap: 0.0, commission: 0.0, magic: 0, comment: String::new(),
//! };
//! let h = 3_600_000;
//! let deals = vec![
//!     deal(1, 0, Side::Buy, DealEntry::Balance, 0, 10_000.0), // a deposit: not profit
//!     deal(2, 7, Side::Buy, DealEntry::In, h, 0.0),
//!     deal(3, 7, Side::Sell, DealEntry::Out, 2 * h, 50.0),
//!     deal(4, 8, Side::Sell, DealEntry::In, 3 * h, 0.0),
//!     deal(5, 8, Side::Buy, DealEntry::Out, 4 * h, -25.0),
//! ];
//! let stats = trade_stats(&deals, &StatsRequest { from: 0, to: 5 * h, balance: None })?;
//! assert_eq!(stats.trades, 2);
//! assert_eq!(stats.win_rate, Some(0.5));
//! assert_eq!(stats.profit_factor, Some(2.0));
//! assert_eq!(stats.deposits, 10_000.0);
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::account::{Deal, DealEntry, Side};
use crate::error::CoreError;
use crate::market::Timeframe;
use crate::time::{DAY_MS, UnixMs, day_start, weekday};

/// Periods per year used to annualise daily Sharpe and Sortino ratios (√252).
pub const TRADING_DAYS_PER_YEAR: f64 = 252.0;

/// A known balance that anchors the balance curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum BalanceAnchor {
    /// The balance at `from`, before any deal of the range.
    Start {
        /// Balance, account currency.
        balance: f64,
    },
    /// The balance at `to`, after every deal of the range (the current
    /// balance when the range ends now).
    End {
        /// Balance, account currency.
        balance: f64,
    },
}

/// What to compute statistics over.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatsRequest {
    /// Start of the range, unix ms (inclusive).
    pub from: UnixMs,
    /// End of the range, unix ms (exclusive).
    pub to: UnixMs,
    /// A known balance, for returns, Sharpe/Sortino and percentages.
    #[serde(default)]
    pub balance: Option<BalanceAnchor>,
}

/// One round-trip trade (all deals of one position in the range).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundTrip {
    /// Position id.
    pub position: u64,
    /// Instrument.
    pub symbol: String,
    /// Direction of the position.
    pub side: Side,
    /// Lots opened in the range.
    pub volume_in: f64,
    /// Lots closed in the range.
    pub volume_out: f64,
    /// Time of the first entry deal, `None` when the position was opened before the range.
    #[serde(default, with = "crate::time::iso::option")]
    #[schemars(with = "Option<crate::time::iso::Schema>")]
    pub open_time: Option<UnixMs>,
    /// Time of the last closing deal.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub close_time: UnixMs,
    /// Volume-weighted entry price of the entry deals in the range.
    pub entry_price: Option<f64>,
    /// Volume-weighted price of the closing deals.
    pub exit_price: f64,
    /// Σ profit of its deals.
    pub profit: f64,
    /// Σ swap of its deals.
    pub swap: f64,
    /// Σ commission of its deals.
    pub commission: f64,
    /// `profit + swap + commission`.
    pub net: f64,
    /// Whether every lot opened in the range was closed (`false` for a partial close).
    pub fully_closed: bool,
}

impl RoundTrip {
    /// Holding time in milliseconds, when the entry is known.
    pub fn holding_ms(&self) -> Option<i64> {
        self.open_time.map(|o| self.close_time - o)
    }
}

/// Statistics of a group of trades.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bucket {
    /// The group (symbol, `long`/`short`, weekday name, or hour `00`…`23`).
    pub key: String,
    /// Number of trades (the sample size).
    pub trades: usize,
    /// Winning trades (net > 0).
    pub wins: usize,
    /// Losing trades (net < 0).
    pub losses: usize,
    /// `wins / trades` (0.55 = 55 %); null without trades.
    pub win_rate: Option<f64>,
    /// Σ net results.
    pub net_profit: f64,
    /// Mean net result.
    pub expectancy: Option<f64>,
    /// Σ wins / |Σ losses|.
    pub profit_factor: Option<f64>,
}

/// A trade named in the statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TradeRef {
    /// Position id.
    pub position: u64,
    /// Instrument.
    pub symbol: String,
    /// Net result (profit + swap + commission), account currency.
    pub net: f64,
    /// Time of its last closing deal.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub close_time: UnixMs,
}

/// Largest fall of the balance curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BalanceDrawdown {
    /// Largest fall, account currency (≥ 0).
    pub amount: f64,
    /// In percent of the running peak; `null` without a balance anchor or with a non-positive peak.
    pub percent: Option<f64>,
    /// Last time the balance stood at the peak.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub peak_time: UnixMs,
    /// Time of the trough.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub trough_time: UnixMs,
}

/// Daily-return statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DailyReturns {
    /// Number of daily returns (weekdays of the range with a usable balance).
    pub days: usize,
    /// Periods skipped because the balance before them was not positive.
    pub days_skipped: usize,
    /// Mean daily return (0.001 = 0.1 %).
    pub mean: Option<f64>,
    /// Sample standard deviation of the daily returns (ddof 1).
    pub std_dev: Option<f64>,
    /// Annualised Sharpe ratio: `mean / std × √252`, risk-free rate 0.
    pub sharpe: Option<f64>,
    /// Annualised Sortino ratio: `mean / downside deviation × √252`, target 0.
    pub sortino: Option<f64>,
    /// Largest drawdown of the compounded daily-return index, percent.
    pub max_drawdown_percent: Option<f64>,
    /// Compounded return over the range, percent.
    pub total_return_percent: Option<f64>,
    /// How the ratios are annualised.
    pub annualisation: String,
}

/// Result of [`trade_stats`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TradeStats {
    /// Range start (inclusive), ISO 8601 UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub from: UnixMs,
    /// Range end (exclusive), ISO 8601 UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub to: UnixMs,
    /// Number of trades (positions with a closing deal in the range; partial closes are parts of one trade).
    pub trades: usize,
    /// Trades with a positive net result.
    pub wins: usize,
    /// Trades with a negative net result.
    pub losses: usize,
    /// Trades with a net result of exactly 0.
    pub breakeven: usize,
    /// `wins / trades`.
    pub win_rate: Option<f64>,
    /// Σ winning results / |Σ losing results|; null without a losing trade.
    pub profit_factor: Option<f64>,
    /// Mean net result per trade, account currency.
    pub expectancy: Option<f64>,
    /// Mean winning result.
    pub average_win: Option<f64>,
    /// Mean losing result (negative).
    pub average_loss: Option<f64>,
    /// `average_win / |average_loss|`.
    pub payoff_ratio: Option<f64>,
    /// Σ winning results.
    pub gross_profit: f64,
    /// Σ losing results (negative).
    pub gross_loss: f64,
    /// Σ net results of the trades.
    pub net_trade_profit: f64,
    /// Best trade.
    pub best_trade: Option<TradeRef>,
    /// Worst trade.
    pub worst_trade: Option<TradeRef>,
    /// Longest run of consecutive winning trades (in close order; a break-even trade ends a run).
    pub longest_win_streak: usize,
    /// Longest run of consecutive losing trades.
    pub longest_loss_streak: usize,
    /// Mean holding time in seconds (trades whose entry is in the range).
    pub average_holding_seconds: Option<f64>,
    /// Trades with a known entry (the sample of the holding time).
    pub holding_sample: usize,
    /// Trades closed only in part by the end of the range.
    pub partially_closed: usize,
    /// Positions with entries in the range but no closing deal (not counted as trades).
    pub open_positions: usize,
    /// Net P&L of the range: every deal's profit, swap and commission, cash flows excluded.
    pub net_profit: f64,
    /// Σ swap of all deals (negative when charged).
    pub swap: f64,
    /// Σ commission of all deals (negative when charged).
    pub commission: f64,
    /// Σ deposits (cash flows, not profit).
    pub deposits: f64,
    /// Σ withdrawals, positive (cash flows, not losses).
    pub withdrawals: f64,
    /// Balance at `from` (given, or reconstructed from the balance at `to`), when an anchor is given.
    pub starting_balance: Option<f64>,
    /// Balance at `to`, when an anchor is given (the tools: the current balance minus the balance changes of the deals after `to`).
    pub ending_balance: Option<f64>,
    /// Largest drawdown of the balance curve (deposits and withdrawals taken out).
    pub max_drawdown: BalanceDrawdown,
    /// Daily returns (UTC weekdays), annualised Sharpe and Sortino (risk-free rate and target 0, √252), drawdown of the daily-return index; null without a balance anchor.
    pub daily: Option<DailyReturns>,
    /// By symbol, in name order; `trades` is each group's sample size.
    pub by_symbol: Vec<Bucket>,
    /// `long` and `short`.
    pub by_side: Vec<Bucket>,
    /// By weekday of the entry (UTC; the close when the entry is not in the range), Monday first.
    pub by_weekday: Vec<Bucket>,
    /// By hour of the entry (UTC), `00` to `23`.
    pub by_hour: Vec<Bucket>,
}

fn check_deals(deals: &[Deal]) -> Result<(), CoreError> {
    for d in deals {
        if ![d.profit, d.swap, d.commission, d.volume, d.price]
            .iter()
            .all(|v| v.is_finite())
        {
            return Err(CoreError::InvalidInput(format!(
                "deal {} has a non-finite profit, swap, commission, volume or price",
                d.ticket
            )));
        }
    }
    Ok(())
}

/// Longest range accepted: 100 years.
pub const MAX_RANGE_MS: i64 = 36_525 * DAY_MS;

fn check_range(from: UnixMs, to: UnixMs) -> Result<(), CoreError> {
    for (name, t) in [("from", from), ("to", to)] {
        if DateTime::<Utc>::from_timestamp_millis(t).is_none() {
            return Err(CoreError::param(name, "is not a representable time"));
        }
    }
    if from >= to {
        return Err(CoreError::param("to", "must be after `from`"));
    }
    if to.checked_sub(from).is_none_or(|len| len > MAX_RANGE_MS) {
        return Err(CoreError::param("from", "the range may span at most 100 years"));
    }
    Ok(())
}

fn in_range(deals: &[Deal], from: UnixMs, to: UnixMs) -> Vec<&Deal> {
    let mut v: Vec<&Deal> = deals.iter().filter(|d| d.time >= from && d.time < to).collect();
    v.sort_by_key(|d| (d.time, d.ticket));
    v
}

fn cash_flow(d: &Deal) -> f64 {
    if d.entry == DealEntry::Balance { d.profit } else { 0.0 }
}

fn change(d: &Deal) -> f64 {
    d.profit + d.swap + d.commission
}

/// Groups the trading deals of `deals` (sorted by time) into round trips;
/// returns the trades (ordered by close time, then position) and the number
/// of positions without a closing deal.
fn group(deals: &[&Deal]) -> (Vec<RoundTrip>, usize) {
    #[derive(Default)]
    struct Acc<'a> {
        ins: Vec<&'a Deal>,
        outs: Vec<&'a Deal>,
    }
    let mut by_pos: BTreeMap<(u64, u64), Acc<'_>> = BTreeMap::new();
    for d in deals {
        let key = match d.entry {
            DealEntry::Balance => continue,
            // A trading deal without a position id stands alone.
            _ if d.position == 0 => (0, d.ticket),
            _ => (d.position, 0),
        };
        let acc = by_pos.entry(key).or_default();
        match d.entry {
            DealEntry::In => acc.ins.push(d),
            _ => acc.outs.push(d),
        }
    }
    let mut trades = Vec::new();
    let mut open = 0;
    for ((position, ticket), acc) in by_pos {
        let Some(last) = acc.outs.last() else {
            open += 1;
            continue;
        };
        let vw = |ds: &[&Deal]| {
            let v: f64 = ds.iter().map(|d| d.volume).sum();
            (v > 0.0).then(|| ds.iter().map(|d| d.volume * d.price).sum::<f64>() / v)
        };
        let all = acc.ins.iter().chain(acc.outs.iter());
        let (profit, swap, commission) = all.fold((0.0, 0.0, 0.0), |(p, s, c), d| {
            (p + d.profit, s + d.swap, c + d.commission)
        });
        let volume_in: f64 = acc.ins.iter().map(|d| d.volume).sum();
        let volume_out: f64 = acc.outs.iter().map(|d| d.volume).sum();
        let side = acc.ins.first().map_or_else(|| last.side.opposite(), |d| d.side);
        trades.push(RoundTrip {
            position: if position == 0 { ticket } else { position },
            symbol: last.symbol.clone(),
            side,
            volume_in,
            volume_out,
            open_time: acc.ins.first().map(|d| d.time),
            close_time: last.time,
            entry_price: vw(&acc.ins),
            exit_price: vw(&acc.outs).unwrap_or(last.price),
            profit,
            swap,
            commission,
            net: profit + swap + commission,
            fully_closed: acc.ins.is_empty() || volume_out >= volume_in - 1e-9,
        });
    }
    trades.sort_by_key(|t| (t.close_time, t.position));
    (trades, open)
}

/// The round trips of `deals` within `[from, to)`, ordered by their last
/// closing deal (see the module documentation).
///
/// # Errors
/// An empty range or a deal with a non-finite amount.
pub fn round_trips(deals: &[Deal], from: UnixMs, to: UnixMs) -> Result<Vec<RoundTrip>, CoreError> {
    check_range(from, to)?;
    check_deals(deals)?;
    Ok(group(&in_range(deals, from, to)).0)
}

fn bucket<'a>(key: String, trades: impl Iterator<Item = &'a RoundTrip>) -> Bucket {
    let mut b = Bucket {
        key,
        trades: 0,
        wins: 0,
        losses: 0,
        win_rate: None,
        net_profit: 0.0,
        expectancy: None,
        profit_factor: None,
    };
    let (mut gp, mut gl) = (0.0, 0.0);
    for t in trades {
        b.trades += 1;
        b.net_profit += t.net;
        if t.net > 0.0 {
            b.wins += 1;
            gp += t.net;
        } else if t.net < 0.0 {
            b.losses += 1;
            gl += t.net;
        }
    }
    if b.trades > 0 {
        b.win_rate = Some(b.wins as f64 / b.trades as f64);
        b.expectancy = Some(b.net_profit / b.trades as f64);
    }
    b.profit_factor = (gl < 0.0).then(|| gp / -gl);
    b
}

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Monday-first weekday index (0 = Monday).
fn monday_index(t: UnixMs) -> usize {
    (usize::from(weekday(t)) + 6) % 7
}

fn streaks(trades: &[RoundTrip]) -> (usize, usize) {
    let (mut w, mut l, mut bw, mut bl) = (0, 0, 0, 0);
    for t in trades {
        if t.net > 0.0 {
            w += 1;
            l = 0;
        } else if t.net < 0.0 {
            l += 1;
            w = 0;
        } else {
            w = 0;
            l = 0;
        }
        bw = usize::max(bw, w);
        bl = usize::max(bl, l);
    }
    (bw, bl)
}

/// Ends of the daily-return periods: the end of every Monday-to-Friday UTC day
/// of `[from, to)`, the last replaced by `to`.
pub fn daily_period_ends(from: UnixMs, to: UnixMs) -> Vec<UnixMs> {
    let mut ends = Vec::new();
    let mut d = day_start(from);
    while d < to {
        if monday_index(d) < 5 {
            ends.push((d + DAY_MS).min(to));
        }
        d += DAY_MS;
    }
    match ends.last_mut() {
        Some(last) => *last = to,
        None => ends.push(to),
    }
    ends
}

/// Daily returns net of cash flows (see the module documentation): the
/// returns and the number of skipped periods.
fn daily_returns(deals: &[&Deal], from: UnixMs, to: UnixMs, start_balance: f64) -> (Vec<f64>, usize) {
    let ends = daily_period_ends(from, to);
    let mut returns = Vec::with_capacity(ends.len());
    let mut skipped = 0;
    let mut prev = start_balance;
    let mut i = 0;
    for end in ends {
        let (mut chg, mut flow) = (0.0, 0.0);
        while i < deals.len() && deals[i].time < end {
            chg += change(deals[i]);
            flow += cash_flow(deals[i]);
            i += 1;
        }
        let bal = prev + chg;
        let base = prev + flow;
        if base > 0.0 {
            returns.push((bal - prev - flow) / base);
        } else {
            skipped += 1;
        }
        prev = bal;
    }
    (returns, skipped)
}

fn mean(x: &[f64]) -> Option<f64> {
    (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
}

fn std_ddof1(x: &[f64]) -> Option<f64> {
    if x.len() < 2 {
        return None;
    }
    let m = mean(x)?;
    let var = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64;
    Some(var.sqrt())
}

fn return_stats(returns: &[f64], skipped: usize) -> DailyReturns {
    let ann = TRADING_DAYS_PER_YEAR.sqrt();
    let m = mean(returns);
    let sd = std_ddof1(returns);
    let sharpe = match (m, sd) {
        (Some(m), Some(s)) if s > 0.0 => Some(m / s * ann),
        _ => None,
    };
    let downside = mean(&returns.iter().map(|r| r.min(0.0).powi(2)).collect::<Vec<_>>()).map(f64::sqrt);
    let sortino = match (m, downside) {
        (Some(m), Some(d)) if d > 0.0 => Some(m / d * ann),
        _ => None,
    };
    let (mut index, mut peak, mut mdd) = (1.0_f64, 1.0_f64, 0.0_f64);
    for r in returns {
        index *= 1.0 + r;
        peak = peak.max(index);
        mdd = mdd.min((index - peak) / peak);
    }
    DailyReturns {
        days: returns.len(),
        days_skipped: skipped,
        mean: m,
        std_dev: sd,
        sharpe,
        sortino,
        max_drawdown_percent: (!returns.is_empty()).then_some(-mdd * 100.0),
        total_return_percent: (!returns.is_empty()).then_some((index - 1.0) * 100.0),
        annualisation: "daily returns of Monday-Friday UTC days, × √252, risk-free rate 0".into(),
    }
}

fn trade_ref(t: &RoundTrip) -> TradeRef {
    TradeRef {
        position: t.position,
        symbol: t.symbol.clone(),
        net: t.net,
        close_time: t.close_time,
    }
}

fn check_anchor(a: Option<BalanceAnchor>) -> Result<(), CoreError> {
    match a {
        Some(BalanceAnchor::Start { balance } | BalanceAnchor::End { balance }) if !balance.is_finite() => {
            Err(CoreError::param("balance", "must be a finite number"))
        }
        _ => Ok(()),
    }
}

/// Trading statistics of `deals` (any order; those outside `[from, to)` are
/// ignored). See the module documentation for every definition.
///
/// # Errors
/// An empty range, a non-finite anchor balance or deal amount.
pub fn trade_stats(deals: &[Deal], req: &StatsRequest) -> Result<TradeStats, CoreError> {
    check_range(req.from, req.to)?;
    check_deals(deals)?;
    check_anchor(req.balance)?;
    let ds = in_range(deals, req.from, req.to);
    let (trades, open_positions) = group(&ds);

    let total_change: f64 = ds.iter().map(|d| change(d)).sum();
    let start_balance = req.balance.map(|a| match a {
        BalanceAnchor::Start { balance } => balance,
        BalanceAnchor::End { balance } => balance - total_change,
    });
    let owned: Vec<Deal> = ds.iter().map(|d| (*d).clone()).collect();
    let curve = crate::costs::equity_curve(&owned, req.from, start_balance.unwrap_or(0.0) + total_change, None)?;
    let dd = &curve.stats.max_drawdown;
    let max_drawdown = BalanceDrawdown {
        amount: dd.amount,
        percent: if start_balance.is_some() { dd.percent } else { None },
        peak_time: dd.peak_time,
        trough_time: dd.trough_time,
    };
    let daily = start_balance.map(|b| {
        let (r, skipped) = daily_returns(&ds, req.from, req.to, b);
        return_stats(&r, skipped)
    });

    let all = bucket(String::new(), trades.iter());
    let gross_profit: f64 = trades.iter().filter(|t| t.net > 0.0).map(|t| t.net).sum();
    let gross_loss: f64 = trades.iter().filter(|t| t.net < 0.0).map(|t| t.net).sum();
    let average_win = (all.wins > 0).then(|| gross_profit / all.wins as f64);
    let average_loss = (all.losses > 0).then(|| gross_loss / all.losses as f64);
    let holdings: Vec<f64> = trades
        .iter()
        .filter_map(|t| t.holding_ms())
        .map(|h| h as f64 / 1000.0)
        .collect();
    let (longest_win_streak, longest_loss_streak) = streaks(&trades);
    let best = trades.iter().max_by(|a, b| a.net.total_cmp(&b.net));
    let worst = trades.iter().min_by(|a, b| a.net.total_cmp(&b.net));

    let mut symbols: Vec<&str> = trades.iter().map(|t| t.symbol.as_str()).collect();
    symbols.sort_unstable();
    symbols.dedup();
    let entry_time = |t: &RoundTrip| t.open_time.unwrap_or(t.close_time);
    let deposits: f64 = ds.iter().map(|d| cash_flow(d)).filter(|c| *c > 0.0).sum();
    let withdrawals: f64 = -ds.iter().map(|d| cash_flow(d)).filter(|c| *c < 0.0).sum::<f64>();
    Ok(TradeStats {
        from: req.from,
        to: req.to,
        trades: all.trades,
        wins: all.wins,
        losses: all.losses,
        breakeven: all.trades - all.wins - all.losses,
        win_rate: all.win_rate,
        profit_factor: all.profit_factor,
        expectancy: all.expectancy,
        average_win,
        average_loss,
        payoff_ratio: match (average_win, average_loss) {
            (Some(w), Some(l)) => Some(w / -l),
            _ => None,
        },
        gross_profit,
        gross_loss,
        net_trade_profit: all.net_profit,
        best_trade: best.map(trade_ref),
        worst_trade: worst.map(trade_ref),
        longest_win_streak,
        longest_loss_streak,
        average_holding_seconds: mean(&holdings),
        holding_sample: holdings.len(),
        partially_closed: trades.iter().filter(|t| !t.fully_closed).count(),
        open_positions,
        net_profit: total_change - deposits + withdrawals,
        swap: ds.iter().map(|d| d.swap).sum(),
        commission: ds.iter().map(|d| d.commission).sum(),
        deposits,
        withdrawals,
        starting_balance: start_balance,
        ending_balance: start_balance.map(|b| b + total_change),
        max_drawdown,
        daily,
        by_symbol: symbols
            .iter()
            .map(|s| bucket((*s).to_string(), trades.iter().filter(|t| t.symbol == *s)))
            .collect(),
        by_side: [("long", Side::Buy), ("short", Side::Sell)]
            .into_iter()
            .map(|(k, side)| bucket(k.into(), trades.iter().filter(|t| t.side == side)))
            .collect(),
        by_weekday: (0..7)
            .map(|i| {
                bucket(
                    WEEKDAYS[i].into(),
                    trades.iter().filter(|t| monday_index(entry_time(t)) == i),
                )
            })
            .collect(),
        by_hour: (0..24)
            .map(|h| {
                bucket(
                    format!("{h:02}"),
                    trades
                        .iter()
                        .filter(|t| entry_time(t).rem_euclid(DAY_MS) / 3_600_000 == h),
                )
            })
            .collect(),
    })
}

// ================================================================ P&L by period

/// Length of a P&L period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PnlPeriod {
    /// UTC calendar day (`2026-11-18`).
    Day,
    /// ISO week, Monday to Sunday UTC (`2026-W47`).
    Week,
    /// Calendar month UTC (`2026-11`).
    Month,
}

/// P&L of one period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PnlRow {
    /// Label: `2026-11-18` (day), `2026-W47` (ISO week) or `2026-11` (month); `total` for the totals.
    pub period: String,
    /// Start of the period (the range start for the totals).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub start: UnixMs,
    /// Σ `profit` of the trading deals (before swap and commission).
    pub trading_profit: f64,
    /// Σ swap of all deals (negative when charged).
    pub swap: f64,
    /// Σ commission of all deals (negative when charged).
    pub commission: f64,
    /// `trading_profit + swap + commission`: the period's P&L, cash flows excluded.
    pub net: f64,
    /// Deposits (cash flows, not profit).
    pub deposits: f64,
    /// Withdrawals, positive (cash flows, not losses).
    pub withdrawals: f64,
    /// Closing (`out`) deals.
    pub closing_deals: usize,
    /// Balance after the period's last deal, when a balance anchor is given.
    pub balance_end: Option<f64>,
}

/// Result of [`pnl`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PnlReport {
    /// The period length.
    pub period: PnlPeriod,
    /// One row per period with at least one deal, oldest first.
    pub rows: Vec<PnlRow>,
    /// Totals over the range (`period` is `total`).
    pub total: PnlRow,
}

fn period_start(period: PnlPeriod, t: UnixMs) -> UnixMs {
    match period {
        PnlPeriod::Day => day_start(t),
        PnlPeriod::Week => Timeframe::W1.bar_open(t),
        PnlPeriod::Month => Timeframe::MN1.bar_open(t),
    }
}

fn period_label(period: PnlPeriod, start: UnixMs) -> String {
    let Some(dt) = DateTime::<Utc>::from_timestamp_millis(start) else {
        return start.to_string();
    };
    match period {
        PnlPeriod::Day => format!("{:04}-{:02}-{:02}", dt.year(), dt.month(), dt.day()),
        PnlPeriod::Week => {
            let w = dt.iso_week();
            format!("{:04}-W{:02}", w.year(), w.week())
        }
        PnlPeriod::Month => format!("{:04}-{:02}", dt.year(), dt.month()),
    }
}

fn empty_row(period: String, start: UnixMs) -> PnlRow {
    PnlRow {
        period,
        start,
        trading_profit: 0.0,
        swap: 0.0,
        commission: 0.0,
        net: 0.0,
        deposits: 0.0,
        withdrawals: 0.0,
        closing_deals: 0,
        balance_end: None,
    }
}

fn add_deal(row: &mut PnlRow, d: &Deal) {
    row.swap += d.swap;
    row.commission += d.commission;
    if d.entry == DealEntry::Balance {
        if d.profit > 0.0 {
            row.deposits += d.profit;
        } else {
            row.withdrawals -= d.profit;
        }
    } else {
        row.trading_profit += d.profit;
        if d.entry.is_exit() {
            row.closing_deals += 1;
        }
    }
    row.net = row.trading_profit + row.swap + row.commission;
}

/// P&L per day, ISO week or month of `deals` within `[from, to)`, with swaps
/// and commissions split out and cash flows apart.
///
/// # Errors
/// An empty range, a non-finite anchor balance or deal amount.
pub fn pnl(
    deals: &[Deal],
    from: UnixMs,
    to: UnixMs,
    period: PnlPeriod,
    balance: Option<BalanceAnchor>,
) -> Result<PnlReport, CoreError> {
    check_range(from, to)?;
    check_deals(deals)?;
    check_anchor(balance)?;
    let ds = in_range(deals, from, to);
    let total_change: f64 = ds.iter().map(|d| change(d)).sum();
    let mut running = balance.map(|a| match a {
        BalanceAnchor::Start { balance } => balance,
        BalanceAnchor::End { balance } => balance - total_change,
    });
    let mut rows: Vec<PnlRow> = Vec::new();
    let mut total = empty_row("total".into(), from);
    for d in ds {
        let start = period_start(period, d.time);
        if rows.last().is_none_or(|r| r.start != start) {
            rows.push(empty_row(period_label(period, start), start));
        }
        if let Some(row) = rows.last_mut() {
            add_deal(row, d);
            running = running.map(|b| b + change(d));
            row.balance_end = running;
        }
        add_deal(&mut total, d);
    }
    total.balance_end = running;
    Ok(PnlReport { period, rows, total })
}

#[cfg(test)]
mod tests;
