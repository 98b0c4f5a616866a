//! Cost and account-history tools: `get_swap_calendar`, `estimate_fill`,
//! `get_equity_curve`.
//!
//! Each fetches what it needs from the terminal (deal history and account,
//! symbol specification and quote, one-minute bars) and computes with
//! [`tradeterm_core::costs`]. Formulas, limits and errors: `docs/costs.md`.

use futures_util::future::try_join3;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::costs::{self, CurvePoint, Drawdown, FillParams, SwapCalendarParams};
use tradeterm_core::time::{DAY_MS, UnixMs, iso, parse_iso};
use tradeterm_core::trading::check_volume;
use tradeterm_core::{AccountInfo, CoreError, Deal, Side, SwapMode, SymbolSpec, Tick, Timeframe};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::market::{check_symbol, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Default number of points of `get_equity_curve`.
pub const DEFAULT_CURVE_POINTS: u32 = 1_000;
/// Fewest points `get_equity_curve` may be asked for.
pub const MIN_CURVE_POINTS: u32 = 10;
/// Most points `get_equity_curve` returns.
pub const MAX_CURVE_POINTS: u32 = 10_000;
/// Most days of `get_swap_calendar`.
pub const MAX_SWAP_DAYS: u32 = 30;
/// Default days of `get_swap_calendar`.
pub const DEFAULT_SWAP_DAYS: u32 = 7;
/// Default rollover hour (UTC) of `get_swap_calendar`: 00:00 on the usual GMT+2 broker server.
pub const DEFAULT_ROLLOVER_HOUR_UTC: u8 = 22;
/// Default assumed execution latency of `estimate_fill`, ms.
pub const DEFAULT_LATENCY_MS: u32 = 500;
/// Largest assumed execution latency of `estimate_fill`, ms.
pub const MAX_LATENCY_MS: u32 = 60_000;
/// One-minute bars fetched by `estimate_fill` (60 changes).
const FILL_BARS: u32 = costs::VOLATILITY_MINUTES as u32 + 1;

const WEEKDAYS: [&str; 7] = [
    "sunday",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
];

/// Maps a core error: parameter errors are the caller's, the rest is unusable terminal data.
pub(crate) fn core_err(e: CoreError) -> ToolError {
    match e {
        CoreError::InvalidParameter { .. } | CoreError::Parse(_) => ToolError::InvalidInput(e.to_string()),
        CoreError::InvalidInput(m) => ToolError::Dispatch(format!("the terminal's data is unusable: {m}")),
    }
}

/// Rate converting `from` into the account currency (see
/// [`ToolContext::rate_to_account`]).
async fn rate_to_account(
    ctx: &ToolContext,
    from: &str,
    account: &AccountInfo,
    spec: &SymbolSpec,
    tick: &Tick,
) -> Option<f64> {
    ctx.rate_to_account(from, &account.currency, spec, tick).await
}

/// The conversion rate the swap of `spec` needs (points and interest are in
/// the profit currency), `None` when it needs none or none is known.
pub(crate) async fn swap_rate(ctx: &ToolContext, spec: &SymbolSpec, tick: &Tick, account: &AccountInfo) -> Option<f64> {
    match spec.swap_mode {
        SwapMode::Points | SwapMode::Interest => rate_to_account(ctx, &spec.currency_profit, account, spec, tick).await,
        SwapMode::Disabled | SwapMode::Currency => None,
    }
}

/// Why `volume` lots cannot be traded on the symbol (below its minimum,
/// above its maximum, not a multiple of its step), as a warning of an
/// analysis: the analyses (`estimate_fill`, `get_holding_risk`,
/// `get_swap_calendar`, a proposed trade of `check_portfolio_exposure`) are
/// computed for any positive volume, and only an order of it is refused.
/// `None` when the volume is tradable.
pub(crate) fn volume_warning(spec: &SymbolSpec, volume: f64) -> Option<String> {
    check_volume(spec, volume).err().map(|r| {
        format!(
            "{}: not tradable on this symbol (an order of it would be refused); the figures are for the volume as given",
            r.message
        )
    })
}

// ================================================================ get_equity_curve

/// Input of `get_equity_curve`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EquityCurveInput {
    /// Range start, ISO 8601 (inclusive). Default: 7 days before `to`. Earlier starts are cut to 366 days before `to`; a `from` at or after `to` is an empty range.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub from: Option<String>,
    /// Range end, ISO 8601 (exclusive). Default: now. When the range reaches now, the current equity is the last point.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub to: Option<String>,
    /// Most points returned (10-10000, default 1000). Longer curves are thinned, keeping each stretch's lowest and highest point; the statistics always use every deal.
    #[serde(default)]
    #[schemars(range(min = MIN_CURVE_POINTS, max = MAX_CURVE_POINTS))]
    pub max_points: Option<u32>,
}

/// Balance curve and summary statistics.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EquityCurveOutput {
    /// Range start, ISO 8601.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Range end, ISO 8601.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Account currency.
    pub currency: String,
    /// Points, oldest first: `start`, one per deal that changed the balance, then `equity` when the range reaches now.
    pub points: Vec<CurvePoint>,
    /// Number of points before thinning.
    pub total_points: usize,
    /// Whether `points` was thinned to `max_points`.
    pub thinned: bool,
    /// Balance at `from`, reconstructed: the balance at `to` minus every balance change in the range.
    pub starting_balance: f64,
    /// Balance at `to` (the current balance minus the changes of deals after `to`).
    pub ending_balance: f64,
    /// Current equity; null when the range ends before now.
    pub current_equity: Option<f64>,
    /// Floating profit (equity − balance); null when the range ends before now.
    pub floating_profit: Option<f64>,
    /// Trading result: profit + swap + commission of the trading deals, plus swap and commission booked as balance deals. Deposits and withdrawals are not profit.
    pub net_profit: f64,
    /// Sum of the trading deals' `profit` (before swap and commission).
    pub gross_profit: f64,
    /// Sum of commissions (negative when charged).
    pub total_commission: f64,
    /// Sum of swaps (negative when charged).
    pub total_swap: f64,
    /// Sum of deposits (positive balance deals).
    pub deposits: f64,
    /// Sum of withdrawals (negative balance deals), as a positive number.
    pub withdrawals: f64,
    /// Closing deals in the range (a partial close counts as one).
    pub trades: usize,
    /// Largest drawdown of the curve, the equity point included.
    pub max_drawdown: Drawdown,
}

async fn deals(ctx: &ToolContext, from: i64, to: i64) -> Result<Vec<Deal>, ToolError> {
    match ctx.run(Command::HistoryDeals { from, to }).await? {
        CommandResult::Deals { deals } => Ok(deals),
        other => Err(unexpected("history_deals", &other)),
    }
}

fn same_deals(a: &[Deal], b: &[Deal]) -> bool {
    a.len() == b.len() && a.iter().map(|d| d.ticket).max() == b.iter().map(|d| d.ticket).max()
}

async fn get_equity_curve(ctx: ToolContext, input: EquityCurveInput) -> Result<EquityCurveOutput, ToolError> {
    let parse = |field: &str, v: &Option<String>| {
        v.as_deref()
            .map(|stats| {
                parse_iso(stats).map_err(|_| ToolError::InvalidInput(format!("`{field}` must be an ISO 8601 time")))
            })
            .transpose()
    };
    let to = parse("to", &input.to)?.unwrap_or(ctx.now_ms);
    let from = parse("from", &input.from)?.unwrap_or(to - 7 * DAY_MS);
    let (from, to) = crate::account::history_range(from, to);
    let max_points = input.max_points.unwrap_or(DEFAULT_CURVE_POINTS);
    if !(MIN_CURVE_POINTS..=MAX_CURVE_POINTS).contains(&max_points) {
        return Err(ToolError::InvalidInput(format!(
            "`max_points` must be between {MIN_CURVE_POINTS} and {MAX_CURVE_POINTS}, got {max_points}"
        )));
    }
    // Deals up to a day past now (a terminal clock may run ahead), so the
    // balance at `to` can be walked back from the current balance. Read the
    // history on both sides of the account so no deal slips in between.
    let until = to.max(ctx.now_ms).saturating_add(DAY_MS);
    let mut history = deals(&ctx, from, until).await?;
    let mut account = ctx.account().await?;
    for _ in 0..3 {
        let again = deals(&ctx, from, until).await?;
        if same_deals(&history, &again) {
            break;
        }
        history = again;
        account = ctx.account().await?;
    }
    let (in_range, later): (Vec<Deal>, Vec<Deal>) = history.into_iter().partition(|d| d.time < to);
    let later_change: f64 = later.iter().map(costs::deal_balance_change).sum();
    let ending_balance = account.balance - later_change;
    let reaches_now = to >= ctx.now_ms;
    let last_deal = in_range.iter().map(|d| d.time).max().unwrap_or(from);
    let equity = reaches_now.then_some((ctx.now_ms.max(last_deal), account.equity));
    let curve = costs::equity_curve(&in_range, from, ending_balance, equity).map_err(core_err)?;
    let total_points = curve.points.len();
    let points = costs::thin_curve(&curve.points, max_points as usize).map_err(core_err)?;
    let stats = curve.stats;
    let dd = stats.max_drawdown;
    Ok(EquityCurveOutput {
        from,
        to,
        currency: account.currency,
        thinned: points.len() < total_points,
        points,
        total_points,
        starting_balance: stats.starting_balance,
        ending_balance: stats.ending_balance,
        current_equity: stats.current_equity,
        floating_profit: stats.current_equity.map(|e| e - stats.ending_balance),
        net_profit: stats.net_profit,
        gross_profit: stats.gross_profit,
        total_commission: stats.total_commission,
        total_swap: stats.total_swap,
        deposits: stats.deposits,
        withdrawals: stats.withdrawals,
        trades: stats.trades,
        max_drawdown: dd,
    })
}

// ================================================================ get_swap_calendar

/// Input of `get_swap_calendar`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwapCalendarInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// `buy` (long) or `sell` (short): only that side's amounts. Default: both.
    #[serde(default)]
    pub side: Option<Side>,
    /// Position size in lots (default 1). One the symbol cannot trade (below its minimum, above its maximum, off
    /// its step) is computed all the same, with a note.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: Option<f64>,
    /// Upcoming daily rollovers to list, one per calendar day (1-30, default 7).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_SWAP_DAYS))]
    pub days: Option<u32>,
    /// Hour (UTC, 0-23) of the broker's daily rollover. Default 22 (00:00 on the usual GMT+2 server; the simulated terminal's rollover).
    #[serde(default)]
    #[schemars(range(min = 0, max = 23))]
    pub rollover_hour_utc: Option<u8>,
}

/// One upcoming rollover.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RolloverOut {
    /// Time of the rollover, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Trading day the rollover closes (`monday` … `sunday`).
    pub day: String,
    /// Nights charged: 0 (Saturday or Sunday), 1, or 3 (triple-swap day, covering the weekend).
    pub nights: u8,
    /// Whether this is the symbol's triple-swap rollover.
    pub triple: bool,
    /// Swap of the long position, account currency (negative = charged, positive = credited); null when not computable or not asked.
    pub long: Option<f64>,
    /// Swap of the short position, account currency (negative = charged, positive = credited); null when not computable or not asked.
    pub short: Option<f64>,
}

/// Swap charges of the upcoming rollovers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SwapCalendarOutput {
    /// Instrument.
    pub symbol: String,
    /// Account currency of the amounts.
    pub currency: String,
    /// Position size, lots.
    pub volume: f64,
    /// Side asked for; null for both.
    pub side: Option<Side>,
    /// Unit of the symbol's swap rates: `disabled`, `points`, `currency` (account currency per lot) or `interest` (annual %).
    pub swap_mode: SwapMode,
    /// Symbol's long swap rate, in the unit of `swap_mode`.
    pub swap_long: f64,
    /// Symbol's short swap rate, in the unit of `swap_mode`.
    pub swap_short: f64,
    /// Trading day whose rollover charges three nights.
    pub triple_swap_day: String,
    /// Rollover hour used, UTC.
    pub rollover_hour_utc: u8,
    /// Whether the amounts could be computed; when false, `note` says why and the amounts are null.
    pub computable: bool,
    /// One ordinary night, long, account currency.
    pub night_long: Option<f64>,
    /// One ordinary night, short, account currency.
    pub night_short: Option<f64>,
    /// The rollovers after now, oldest first.
    pub rollovers: Vec<RolloverOut>,
    /// Sum over the rollovers, long.
    pub total_long: Option<f64>,
    /// Sum over the rollovers, short.
    pub total_short: Option<f64>,
    /// Why the amounts are missing, or caveats (a volume the symbol cannot trade, among them).
    pub note: Option<String>,
}

fn weekday_name(d: u8) -> String {
    WEEKDAYS.get(usize::from(d)).copied().unwrap_or("unknown").to_owned()
}

async fn get_swap_calendar(ctx: ToolContext, input: SwapCalendarInput) -> Result<SwapCalendarOutput, ToolError> {
    check_symbol(&input.symbol)?;
    let days = input.days.unwrap_or(DEFAULT_SWAP_DAYS);
    if !(1..=MAX_SWAP_DAYS).contains(&days) {
        return Err(ToolError::InvalidInput(format!(
            "`days` must be between 1 and {MAX_SWAP_DAYS}, got {days}"
        )));
    }
    let hour = input.rollover_hour_utc.unwrap_or(DEFAULT_ROLLOVER_HOUR_UTC);
    if hour > 23 {
        return Err(ToolError::InvalidInput(format!(
            "`rollover_hour_utc` must be between 0 and 23, got {hour}"
        )));
    }
    let volume = input.volume.unwrap_or(1.0);
    if !(volume.is_finite() && volume > 0.0) {
        return Err(ToolError::InvalidInput(
            "`volume` must be a positive number of lots".into(),
        ));
    }
    let (spec, tick, account) = try_join3(ctx.spec(&input.symbol), ctx.tick(&input.symbol), ctx.account()).await?;
    let volume_note = volume_warning(&spec, volume);
    let rate = swap_rate(&ctx, &spec, &tick, &account).await;
    let params = SwapCalendarParams {
        volume,
        days,
        rollover_ms_of_day: i64::from(hour) * 3_600_000,
    };
    let cal = costs::swap_calendar(&spec, Some(&tick), rate, ctx.now_ms, params).map_err(core_err)?;
    let keep_long = input.side != Some(Side::Sell);
    let keep_short = input.side != Some(Side::Buy);
    let pick = |keep: bool, v: Option<f64>| if keep { v } else { None };
    let note = cal.unsupported.clone().or_else(|| match spec.swap_mode {
        SwapMode::Disabled => Some("swaps are disabled for this symbol".to_owned()),
        SwapMode::Interest => {
            Some("interest swaps use the current price; the broker uses the price at each rollover".to_owned())
        }
        _ => None,
    });
    let note = match (note, volume_note) {
        (Some(caveat), Some(volume)) => Some(format!("{caveat}; {volume}")),
        (caveat, volume) => caveat.or(volume),
    };
    Ok(SwapCalendarOutput {
        symbol: spec.name.clone(),
        currency: account.currency,
        volume,
        side: input.side,
        swap_mode: spec.swap_mode,
        swap_long: spec.swap_long,
        swap_short: spec.swap_short,
        triple_swap_day: weekday_name(spec.swap_triple_day),
        rollover_hour_utc: hour,
        computable: cal.unsupported.is_none(),
        night_long: pick(keep_long, cal.night_long),
        night_short: pick(keep_short, cal.night_short),
        rollovers: cal
            .rollovers
            .into_iter()
            .map(|r| RolloverOut {
                time: r.time,
                day: weekday_name(r.weekday),
                nights: r.nights,
                triple: r.triple,
                long: pick(keep_long, r.long),
                short: pick(keep_short, r.short),
            })
            .collect(),
        total_long: pick(keep_long, cal.total_long),
        total_short: pick(keep_short, cal.total_short),
        note,
    })
}

// ================================================================ estimate_fill

/// Order type of `estimate_fill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FillOrderType {
    /// Market order: fills at the ask (buy) or bid (sell).
    #[default]
    Market,
}

/// Input of `estimate_fill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EstimateFillInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// `buy` or `sell`.
    pub side: Side,
    /// Volume in lots. One the symbol cannot trade (below its minimum, above its maximum, off its step) is
    /// estimated all the same, with `volume_tradable: false` and a note.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub volume: f64,
    /// Order type: only `market` (the default) is estimated.
    #[serde(default)]
    pub order_type: Option<FillOrderType>,
    /// Assumed time between the quote and the fill, ms (1-60000, default 500). Longer latency widens the slippage band.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_LATENCY_MS))]
    pub latency_ms: Option<u32>,
}

/// Spread cost.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SpreadOut {
    /// `ask − bid`, price units.
    pub price: f64,
    /// Spread in points.
    pub points: f64,
    /// `spread × contract_size × volume` in the account currency: what closing at once would lose. Null without a conversion rate.
    pub cost: Option<f64>,
}

/// Estimated slippage band (an estimate, never a guarantee).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SlippageOut {
    /// Standard deviation of one-minute close-to-close changes, price units; null without enough recent bars.
    pub sigma_1m: Option<f64>,
    /// One-minute changes measured (up to 60; at least 5 are needed).
    pub minutes_used: usize,
    /// Latency assumed, ms.
    pub latency_ms: u32,
    /// Size factor `max(1, sqrt(volume / 1 lot))` applied to adverse slippage.
    pub size_factor: f64,
    /// Possible price improvement, points.
    pub favourable_points: Option<f64>,
    /// Possible adverse slippage, points.
    pub adverse_points: Option<f64>,
    /// Best price of the band, rounded to the tick size towards the quote.
    pub best_case_price: Option<f64>,
    /// Worst price of the band, rounded to the tick size against the trader.
    pub worst_case_price: Option<f64>,
    /// Adverse slippage in the account currency; null without a volatility or conversion rate.
    pub worst_case_cost: Option<f64>,
}

/// Expected fill of a market order.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EstimateFillOutput {
    /// Instrument.
    pub symbol: String,
    /// Side.
    pub side: Side,
    /// Volume, lots.
    pub volume: f64,
    /// Order type estimated.
    pub order_type: FillOrderType,
    /// Account currency of the costs.
    pub currency: String,
    /// Time of the quote used, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub quote_time: UnixMs,
    /// Bid of the quote.
    pub bid: f64,
    /// Ask of the quote.
    pub ask: f64,
    /// Expected fill price: the ask for a buy, the bid for a sell, at the quote's time.
    pub expected_price: f64,
    /// Spread cost.
    pub spread: SpreadOut,
    /// Slippage band: `z × σ_1m × sqrt(latency / 60 s)` with z = 1.645 (about 90 % of normal moves), times the size factor on the adverse side.
    pub slippage: SlippageOut,
    /// Whether the symbol's session is open at the quote's time. A closed market fills nothing now.
    pub market_open: bool,
    /// Whether the symbol can trade `volume` (within its minimum and maximum, a multiple of its step). The
    /// estimate is given either way; `notes` says why not.
    pub volume_tradable: bool,
    /// Caveats of the estimate.
    pub notes: Vec<String>,
}

async fn estimate_fill(ctx: ToolContext, input: EstimateFillInput) -> Result<EstimateFillOutput, ToolError> {
    check_symbol(&input.symbol)?;
    if !(input.volume.is_finite() && input.volume > 0.0) {
        return Err(ToolError::InvalidInput(
            "`volume` must be a positive number of lots".into(),
        ));
    }
    let latency_ms = input.latency_ms.unwrap_or(DEFAULT_LATENCY_MS);
    if !(1..=MAX_LATENCY_MS).contains(&latency_ms) {
        return Err(ToolError::InvalidInput(format!(
            "`latency_ms` must be between 1 and 60000, got {latency_ms}"
        )));
    }
    let (spec, tick, account) = try_join3(ctx.spec(&input.symbol), ctx.tick(&input.symbol), ctx.account()).await?;
    let volume_note = volume_warning(&spec, input.volume);
    let bars = fetch_bars(&ctx, &input.symbol, Timeframe::M1, Some(FILL_BARS), None, None).await?;
    let rate = rate_to_account(&ctx, &spec.currency_profit, &account, &spec, &tick).await;
    let params = FillParams {
        side: input.side,
        volume: input.volume,
        latency_ms,
    };
    let estimate = costs::estimate_fill(&spec, &tick, &bars, params, rate).map_err(core_err)?;
    let mut notes = vec![
        "Slippage is a statistical band from the last hour's one-minute volatility, not a guarantee; gaps, news and thin liquidity can slip further.".to_owned(),
    ];
    if estimate.sigma_1m.is_none() {
        notes.push(format!(
            "Only {} consecutive one-minute changes were available (at least {} are needed): no slippage band.",
            estimate.minutes_used,
            costs::MIN_VOLATILITY_MINUTES
        ));
    }
    if rate.is_none() {
        notes.push(format!(
            "No quote converts {} to {}: costs in the account currency are null.",
            spec.currency_profit, account.currency
        ));
    }
    if !estimate.market_open {
        notes.push("The market is closed at the quote's time: a market order would be rejected now.".to_owned());
    }
    let volume_tradable = volume_note.is_none();
    notes.extend(volume_note);
    Ok(EstimateFillOutput {
        symbol: spec.name.clone(),
        side: input.side,
        volume: input.volume,
        order_type: input.order_type.unwrap_or_default(),
        currency: account.currency,
        quote_time: tick.time,
        bid: estimate.bid,
        ask: estimate.ask,
        expected_price: estimate.price,
        spread: SpreadOut {
            price: estimate.spread,
            points: estimate.spread_points,
            cost: estimate.spread_cost,
        },
        slippage: SlippageOut {
            sigma_1m: estimate.sigma_1m,
            minutes_used: estimate.minutes_used,
            latency_ms,
            size_factor: estimate.size_factor,
            favourable_points: estimate.slippage_favourable_points,
            adverse_points: estimate.slippage_adverse_points,
            best_case_price: estimate.best_case_price,
            worst_case_price: estimate.worst_case_price,
            worst_case_cost: estimate.slippage_cost_worst,
        },
        market_open: estimate.market_open,
        volume_tradable,
        notes,
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_equity_curve",
            title: "Equity curve",
            description: "Balance curve of the account over [`from`, `to`) (default: the last 7 days; at most 366 days), one point per deal that changed the balance, oldest first, starting from the balance at `from` (reconstructed backwards from the current balance) and ending with the current equity when the range reaches now; plus net profit, commission, swap, deposits, withdrawals, number of closing trades and the maximum drawdown (absolute and % of the running peak). Deposits and withdrawals move the curve but are neither profit nor drawdown.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_equity_curve),
        ToolSpec {
            name: "get_swap_calendar",
            title: "Swap calendar",
            description: "Swap (overnight financing) of a position in `symbol` for each of the next `days` daily rollovers (default 7, at most 30), long and short, in the account currency: none for the rollovers closing Saturday and Sunday, three nights on the symbol's triple-swap day. Computed from the symbol's swap mode and rates; says so instead of guessing when a conversion is unavailable.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_swap_calendar),
        ToolSpec {
            name: "estimate_fill",
            title: "Estimate a market fill",
            description: "Expected fill of a market order (ask for a buy, bid for a sell), the spread cost in price, points and account currency, and an estimated slippage band from the last hour's one-minute volatility and the order size, with the resulting worst-case price. An estimate, not a guarantee; nothing is sent. A volume the symbol cannot trade (below its minimum, above its maximum, off its step) is estimated all the same, with `volume_tradable: false` and a note saying why.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(estimate_fill),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_tools_are_in_the_catalog_with_analytics() {
        for name in ["get_equity_curve", "get_swap_calendar", "estimate_fill"] {
            let t = crate::find(name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(t.capability, Capability::Analytics);
            assert!(t.annotations.read_only);
            let props = &t.input_schema["properties"];
            assert!(props.is_object(), "{name}: {}", t.input_schema);
            for (field, schema) in props.as_object().into_iter().flatten() {
                assert!(schema.get("description").is_some(), "{name}.{field} has no description");
            }
        }
        let fill = crate::find("estimate_fill").map(|t| &t.input_schema);
        let required = fill.and_then(|s| s["required"].as_array()).cloned().unwrap_or_default();
        assert_eq!(required.len(), 3, "symbol, side and volume are required");
    }

    #[test]
    fn core_errors_map_to_the_right_codes() {
        assert_eq!(core_err(CoreError::param("volume", "bad")).code(), "VALIDATION_ERROR");
        assert_eq!(core_err(CoreError::InvalidInput("NaN".into())).code(), "DISPATCH_ERROR");
        assert_eq!(weekday_name(3), "wednesday");
        assert_eq!(weekday_name(9), "unknown");
    }
}
