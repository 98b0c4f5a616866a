//! Trading costs and account history: swap calendars, expected fills and
//! equity curves (pure functions; the `tradeterm-tools` wrappers fetch the
//! terminal data).
//!
//! - [`equity_curve`] rebuilds the balance curve of a range of deals by
//!   walking back from a known ending balance, with cash-flow-adjusted
//!   drawdown statistics; [`thin_curve`] reduces it for charts.
//! - [`swap_calendar`] lists the upcoming daily rollovers of a symbol with the
//!   swap each one charges or credits.
//! - [`estimate_fill`] estimates the fill price of a market order, its spread
//!   cost and a volatility-based slippage band.
//!
//! Rules and formulas: `docs/costs.md`. Nothing here reads a clock: "now" is
//! an argument. Bad input gives a [`CoreError`], never a panic.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::costs::rollover_weekday;
//! use tradeterm_core::time::parse_iso;
//!
//! // The rollover at Thursday 00:00 UTC closes Wednesday's trading day (3),
//! // the day most FX symbols charge three nights for.
//! assert_eq!(rollover_weekday(parse_iso("2026-11-19T00:00:00Z")?), 3);
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use schemars::JsonSchema;
use serde::Serialize;

use crate::account::{Deal, DealEntry, Side};
use crate::market::{Bar, SwapMode, SymbolSpec, Tick};
use crate::time::{DAY_MS, UnixMs, weekday};
use crate::{CoreError, trading};

// ================================================================ equity curve

/// What a point of the equity curve stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CurvePointKind {
    /// The reconstructed balance at the start of the range.
    Start,
    /// A balance deal with a positive amount (deposit, credit, bonus).
    Deposit,
    /// A balance deal with a negative amount (withdrawal).
    Withdrawal,
    /// A trading deal (`in` or `out`) whose profit, swap or commission changed the balance.
    Trade,
    /// A balance deal carrying only swap or commission (a cost charged outside a trade).
    Charge,
    /// The current equity (balance plus floating profit), the last point.
    Equity,
}

/// One point of the equity curve.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CurvePoint {
    /// Instant, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Balance after the deal, account currency; for the `equity` point, the current equity.
    pub value: f64,
    /// Change from the previous point (profit + swap + commission of the deal, or the
    /// deposit/withdrawal amount); for the `equity` point, the floating profit.
    pub change: f64,
    /// `start` (reconstructed balance at `from`), `deposit`, `withdrawal`, `trade`,
    /// `charge` (swap or commission booked as a balance deal) or `equity`.
    pub kind: CurvePointKind,
    /// Deal ticket, for deal points.
    pub deal: Option<u64>,
}

/// The largest fall of the curve from a running peak, with cash flows taken out.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Drawdown {
    /// Largest fall, account currency (≥ 0; 0 when the curve never fell).
    pub amount: f64,
    /// `amount` in percent of the running peak; `null` when the peak was not positive.
    pub percent: Option<f64>,
    /// Last time the curve stood at the peak (before the trough).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub peak_time: UnixMs,
    /// Running peak at the trough (the peak value plus deposits minus withdrawals made since).
    pub peak_value: f64,
    /// Time of the trough.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub trough_time: UnixMs,
    /// Balance (or equity, for the last point) at the trough.
    pub trough_value: f64,
}

/// Summary of an equity curve.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveStats {
    /// Balance at the start of the range (reconstructed).
    pub starting_balance: f64,
    /// Balance at the end of the range.
    pub ending_balance: f64,
    /// Current equity, when given.
    pub current_equity: Option<f64>,
    /// Profit of trading: profit + swap + commission of every trading deal, plus swap
    /// and commission carried by balance deals. Deposits and withdrawals excluded.
    pub net_profit: f64,
    /// Sum of the `profit` field of trading deals (before swap and commission).
    pub gross_profit: f64,
    /// Sum of commissions (negative when charged).
    pub total_commission: f64,
    /// Sum of swaps (negative when charged).
    pub total_swap: f64,
    /// Sum of positive balance-deal amounts.
    pub deposits: f64,
    /// Sum of negative balance-deal amounts, as a positive number.
    pub withdrawals: f64,
    /// Number of closing (`out`) deals; a partial close counts as one.
    pub trades: usize,
    /// Largest cash-flow-adjusted drawdown, the equity point included.
    pub max_drawdown: Drawdown,
}

/// A balance curve and its statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct EquityCurve {
    /// Points, oldest first: the start, one per deal that changed the balance,
    /// and the equity point when one was given.
    pub points: Vec<CurvePoint>,
    /// Summary.
    pub stats: CurveStats,
}

/// How much a deal changed the balance: `profit + swap + commission`.
pub fn deal_balance_change(d: &Deal) -> f64 {
    d.profit + d.swap + d.commission
}

/// Builds the balance curve of `deals` (the deals of one range starting at
/// `start_time`, in any order) that ends at `ending_balance`.
///
/// The starting balance is reconstructed by walking back: `ending_balance −
/// Σ (profit + swap + commission)` over the deals; each point's balance is
/// `ending_balance` minus the changes of the later deals, so the last deal
/// point equals `ending_balance` exactly. `equity`, when given, is appended as
/// the last point `(time, equity)`.
///
/// Deposits and withdrawals (the `profit` of balance deals) move the curve but
/// are neither profit nor drawdown: the running peak moves by the same amount.
///
/// Errors: a non-finite amount, balance or equity.
pub fn equity_curve(
    deals: &[Deal],
    start_time: UnixMs,
    ending_balance: f64,
    equity: Option<(UnixMs, f64)>,
) -> Result<EquityCurve, CoreError> {
    if !ending_balance.is_finite() {
        return Err(CoreError::InvalidInput(
            "the ending balance is not a finite number".into(),
        ));
    }
    if let Some((_, e)) = equity
        && !e.is_finite()
    {
        return Err(CoreError::InvalidInput("the equity is not a finite number".into()));
    }
    for d in deals {
        if !(d.profit.is_finite() && d.swap.is_finite() && d.commission.is_finite()) {
            return Err(CoreError::InvalidInput(format!(
                "deal {} has a non-finite profit, swap or commission",
                d.ticket
            )));
        }
    }
    let mut sorted: Vec<&Deal> = deals.iter().collect();
    sorted.sort_by_key(|d| (d.time, d.ticket));

    let mut stats = CurveStats {
        starting_balance: 0.0,
        ending_balance,
        current_equity: equity.map(|(_, e)| e),
        net_profit: 0.0,
        gross_profit: 0.0,
        total_commission: 0.0,
        total_swap: 0.0,
        deposits: 0.0,
        withdrawals: 0.0,
        trades: 0,
        max_drawdown: Drawdown {
            amount: 0.0,
            percent: None,
            peak_time: start_time,
            peak_value: 0.0,
            trough_time: start_time,
            trough_value: 0.0,
        },
    };
    // (deal, change, cash flow part, kind) of every deal that moved the balance.
    let mut moves: Vec<(&Deal, f64, f64, CurvePointKind)> = Vec::new();
    for d in &sorted {
        stats.total_swap += d.swap;
        stats.total_commission += d.commission;
        let (cash, kind) = if d.entry == DealEntry::Balance {
            if d.profit > 0.0 {
                stats.deposits += d.profit;
                (d.profit, CurvePointKind::Deposit)
            } else if d.profit < 0.0 {
                stats.withdrawals -= d.profit;
                (d.profit, CurvePointKind::Withdrawal)
            } else {
                (0.0, CurvePointKind::Charge)
            }
        } else {
            stats.gross_profit += d.profit;
            if d.entry.is_exit() {
                stats.trades += 1;
            }
            (0.0, CurvePointKind::Trade)
        };
        stats.net_profit += deal_balance_change(d) - cash;
        let change = deal_balance_change(d);
        if change != 0.0 {
            moves.push((d, change, cash, kind));
        }
    }

    // Walk back from the ending balance.
    let mut after = vec![0.0; moves.len()];
    let mut later = 0.0;
    for (i, m) in moves.iter().enumerate().rev() {
        after[i] = ending_balance - later;
        later += m.1;
    }
    stats.starting_balance = ending_balance - later;

    let mut points = Vec::with_capacity(moves.len() + 2);
    points.push(CurvePoint {
        time: start_time,
        value: stats.starting_balance,
        change: 0.0,
        kind: CurvePointKind::Start,
        deal: None,
    });
    let mut cash_flows = vec![0.0];
    for (m, value) in moves.iter().zip(after) {
        points.push(CurvePoint {
            time: m.0.time,
            value,
            change: m.1,
            kind: m.3,
            deal: Some(m.0.ticket),
        });
        cash_flows.push(m.2);
    }
    if let Some((t, e)) = equity {
        points.push(CurvePoint {
            time: t,
            value: e,
            change: e - ending_balance,
            kind: CurvePointKind::Equity,
            deal: None,
        });
        cash_flows.push(0.0);
    }
    stats.max_drawdown = max_drawdown(&points, &cash_flows);
    Ok(EquityCurve { points, stats })
}

/// Largest fall from a running peak that moves with cash flows.
fn max_drawdown(points: &[CurvePoint], cash_flows: &[f64]) -> Drawdown {
    let first = &points[0];
    let mut peak = first.value;
    let mut peak_time = first.time;
    let mut dd = Drawdown {
        amount: 0.0,
        percent: None,
        peak_time,
        peak_value: peak,
        trough_time: first.time,
        trough_value: first.value,
    };
    for (p, cash) in points.iter().zip(cash_flows).skip(1) {
        peak += cash;
        if p.value >= peak {
            peak = p.value;
            peak_time = p.time;
        }
        let fall = peak - p.value;
        if fall > dd.amount {
            dd = Drawdown {
                amount: fall,
                percent: (peak > 0.0).then(|| fall / peak * 100.0),
                peak_time,
                peak_value: peak,
                trough_time: p.time,
                trough_value: p.value,
            };
        }
    }
    dd
}

/// Thins a curve to at most `max_points` points for charts: the first and last
/// points are kept, the others are split into `(max_points − 2) / 2` buckets of
/// consecutive points, and each bucket keeps its lowest and highest point (in
/// time order), so peaks and troughs stay visible. Returns the curve unchanged
/// when it is short enough. `max_points` must be at least 4.
pub fn thin_curve(points: &[CurvePoint], max_points: usize) -> Result<Vec<CurvePoint>, CoreError> {
    if max_points < 4 {
        return Err(CoreError::param("max_points", "must be at least 4"));
    }
    if points.len() <= max_points {
        return Ok(points.to_vec());
    }
    let (first, rest) = points.split_first().unwrap_or((&points[0], &[]));
    let (last, middle) = rest.split_last().unwrap_or((first, &[]));
    let buckets = (max_points - 2) / 2;
    let m = middle.len();
    let mut out = vec![first.clone()];
    for b in 0..buckets {
        let (lo, hi) = (b * m / buckets, (b + 1) * m / buckets);
        let Some(chunk) = middle.get(lo..hi).filter(|c| !c.is_empty()) else {
            continue;
        };
        let mut imin = 0;
        let mut imax = 0;
        for (i, p) in chunk.iter().enumerate() {
            if p.value < chunk[imin].value {
                imin = i;
            }
            if p.value > chunk[imax].value {
                imax = i;
            }
        }
        let (a, z) = (imin.min(imax), imin.max(imax));
        out.push(chunk[a].clone());
        if z != a {
            out.push(chunk[z].clone());
        }
    }
    out.push(last.clone());
    Ok(out)
}

// ================================================================ swap calendar

/// Parameters of [`swap_calendar`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwapCalendarParams {
    /// Position size, lots (> 0).
    pub volume: f64,
    /// Number of upcoming rollovers (one per calendar day), 1–366.
    pub days: u32,
    /// Time of day of the rollover, ms after midnight UTC (`0..DAY_MS`).
    pub rollover_ms_of_day: i64,
}

/// One daily rollover.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollover {
    /// Instant of the rollover, unix ms UTC.
    pub time: UnixMs,
    /// Weekday of the trading day the rollover closes (0 = Sunday … 6 = Saturday).
    pub weekday: u8,
    /// Nights charged: 0 (weekend day), 1, or 3 (triple-swap day).
    pub nights: u8,
    /// Whether this is the symbol's triple-swap rollover.
    pub triple: bool,
    /// Swap of a long position, account currency (negative = charged); `None` when not computable.
    pub long: Option<f64>,
    /// Swap of a short position, account currency (negative = charged); `None` when not computable.
    pub short: Option<f64>,
}

/// The swap of the upcoming rollovers of one symbol.
#[derive(Debug, Clone, PartialEq)]
pub struct SwapCalendar {
    /// One ordinary night for a long position, account currency; `None` when not computable.
    pub night_long: Option<f64>,
    /// One ordinary night for a short position, account currency; `None` when not computable.
    pub night_short: Option<f64>,
    /// The rollovers, oldest first.
    pub rollovers: Vec<Rollover>,
    /// Sum over the rollovers, long.
    pub total_long: Option<f64>,
    /// Sum over the rollovers, short.
    pub total_short: Option<f64>,
    /// Why the amounts could not be computed, when they could not.
    pub unsupported: Option<String>,
}

/// Weekday (0 = Sunday) of the trading day a rollover at `t` closes: the day
/// of the instant just before it (a rollover at 00:00 closes the previous day).
pub fn rollover_weekday(t: UnixMs) -> u8 {
    weekday(t - 1)
}

/// One night's swap for `volume` lots, account currency, or why not.
fn night(spec: &SymbolSpec, side: Side, volume: f64, tick: Option<&Tick>, rate: Option<f64>) -> Result<f64, String> {
    let per = match side {
        Side::Buy => spec.swap_long,
        Side::Sell => spec.swap_short,
    };
    let need_rate = || {
        rate.filter(|r| r.is_finite() && *r > 0.0).ok_or_else(|| {
            format!(
                "no quote converts the profit currency {} to the account currency",
                spec.currency_profit
            )
        })
    };
    match spec.swap_mode {
        SwapMode::Disabled => Ok(0.0),
        SwapMode::Points => Ok(per * spec.point * spec.contract_size * volume * need_rate()?),
        SwapMode::Currency => Ok(per * volume),
        SwapMode::Interest => {
            let t = tick.ok_or_else(|| "the interest swap mode needs a current quote".to_owned())?;
            let price = trading::close_price(side, t);
            if !(price.is_finite() && price > 0.0) {
                return Err("the interest swap mode needs a valid current quote".into());
            }
            Ok(volume * spec.contract_size * price * per / 100.0 / 360.0 * need_rate()?)
        }
    }
}

/// The next `days` daily rollovers after `now` and the swap each charges.
///
/// Rollovers happen every day at `rollover_ms_of_day` UTC; the one closing a
/// Saturday or Sunday charges nothing; the one closing the symbol's
/// `swap_triple_day` charges three nights; the others one. One night is, per
/// [`SwapMode`]:
/// - `Points`: `swap × point × contract_size × volume × rate`;
/// - `Currency`: `swap × volume` (already in the account currency);
/// - `Interest`: `volume × contract_size × price × swap / 100 / 360 × rate`,
///   `price` the current close price (bid for longs, ask for shorts);
/// - `Disabled`: 0.
///
/// `rate` converts the profit currency to the account currency. When a needed
/// rate or quote is missing the amounts are `None` and `unsupported` says why
/// (nothing is guessed).
///
/// Errors: a non-positive or non-finite volume, `days` outside 1–366, a
/// rollover time outside the day, non-finite swap rates or contract values.
pub fn swap_calendar(
    spec: &SymbolSpec,
    tick: Option<&Tick>,
    rate: Option<f64>,
    now: UnixMs,
    params: SwapCalendarParams,
) -> Result<SwapCalendar, CoreError> {
    if !(params.volume.is_finite() && params.volume > 0.0) {
        return Err(CoreError::param("volume", "must be a positive number of lots"));
    }
    if !(1..=366).contains(&params.days) {
        return Err(CoreError::param("days", "must be between 1 and 366"));
    }
    if !(0..DAY_MS).contains(&params.rollover_ms_of_day) {
        return Err(CoreError::param("rollover_ms_of_day", "must be within one day"));
    }
    let vals = [spec.swap_long, spec.swap_short, spec.point, spec.contract_size];
    if vals.iter().any(|v| !v.is_finite()) {
        return Err(CoreError::InvalidInput(format!(
            "the specification of {} has a non-finite swap rate, point or contract size",
            spec.name
        )));
    }
    let nl = night(spec, Side::Buy, params.volume, tick, rate);
    let ns = night(spec, Side::Sell, params.volume, tick, rate);
    let unsupported = nl.as_ref().err().or(ns.as_ref().err()).cloned();
    let (nl, ns) = (nl.ok(), ns.ok());

    let mut first = now - now.rem_euclid(DAY_MS) + params.rollover_ms_of_day;
    if first <= now {
        first += DAY_MS;
    }
    let mut rollovers = Vec::with_capacity(params.days as usize);
    let (mut tl, mut ts) = (0.0, 0.0);
    for k in 0..i64::from(params.days) {
        let time = first + k * DAY_MS;
        let wd = rollover_weekday(time);
        let triple = wd == spec.swap_triple_day;
        let nights: u8 = match wd {
            0 | 6 => 0,
            _ if triple => 3,
            _ => 1,
        };
        let long = nl.map(|n| n * f64::from(nights));
        let short = ns.map(|n| n * f64::from(nights));
        tl += long.unwrap_or(0.0);
        ts += short.unwrap_or(0.0);
        rollovers.push(Rollover {
            time,
            weekday: wd,
            nights,
            triple: nights == 3,
            long,
            short,
        });
    }
    Ok(SwapCalendar {
        night_long: nl,
        night_short: ns,
        rollovers,
        total_long: nl.map(|_| tl),
        total_short: ns.map(|_| ts),
        unsupported,
    })
}

// ================================================================ estimate fill

/// `z` of the slippage band: about 90 % of normally distributed moves.
pub const SLIPPAGE_Z: f64 = 1.645;
/// Order size above which slippage grows (with the square root of the ratio), lots.
pub const REFERENCE_VOLUME: f64 = 1.0;
/// Most one-minute changes used for the volatility.
pub const VOLATILITY_MINUTES: usize = 60;
/// Fewest one-minute changes needed for a volatility.
pub const MIN_VOLATILITY_MINUTES: usize = 5;

/// Parameters of [`estimate_fill`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FillParams {
    /// Buy (fills at the ask) or sell (fills at the bid).
    pub side: Side,
    /// Lots; checked against the symbol's minimum, maximum and step.
    pub volume: f64,
    /// Assumed time between the quote and the fill, ms (1–60 000).
    pub latency_ms: u32,
}

/// An estimated market fill.
#[derive(Debug, Clone, PartialEq)]
pub struct FillEstimate {
    /// Expected fill price: the ask for a buy, the bid for a sell.
    pub price: f64,
    /// Bid of the quote.
    pub bid: f64,
    /// Ask of the quote.
    pub ask: f64,
    /// `ask − bid`.
    pub spread: f64,
    /// Spread in points.
    pub spread_points: f64,
    /// `spread × contract_size × volume` in the account currency (what an
    /// immediate close would lose); `None` without a conversion rate.
    pub spread_cost: Option<f64>,
    /// Standard deviation of one-minute close-to-close changes, price units; `None` without enough bars.
    pub sigma_1m: Option<f64>,
    /// One-minute changes the volatility was measured on.
    pub minutes_used: usize,
    /// `max(1, sqrt(volume / REFERENCE_VOLUME))`.
    pub size_factor: f64,
    /// Possible price improvement, points (≥ 0); `None` without a volatility.
    pub slippage_favourable_points: Option<f64>,
    /// Possible adverse slippage, points (≥ 0); `None` without a volatility.
    pub slippage_adverse_points: Option<f64>,
    /// Best price of the band (rounded to the tick size towards the market).
    pub best_case_price: Option<f64>,
    /// Worst price of the band (rounded to the tick size away from the trader).
    pub worst_case_price: Option<f64>,
    /// Adverse slippage in the account currency; `None` without a volatility or rate.
    pub slippage_cost_worst: Option<f64>,
    /// Whether the symbol's session is open at the quote's time (the terminal's clock).
    pub market_open: bool,
}

/// Standard deviation (n − 1) of the close-to-close changes of the last
/// [`VOLATILITY_MINUTES`] pairs of consecutive one-minute bars (bars one minute
/// apart; pairs across a gap are skipped). `None` with fewer than
/// [`MIN_VOLATILITY_MINUTES`] pairs.
pub fn one_minute_sigma(bars: &[Bar]) -> Result<(Option<f64>, usize), CoreError> {
    let mut changes: Vec<f64> = Vec::new();
    for w in bars.windows(2).rev() {
        if changes.len() >= VOLATILITY_MINUTES {
            break;
        }
        if !(w[0].close.is_finite() && w[1].close.is_finite()) {
            return Err(CoreError::InvalidInput(format!(
                "bar at {} has a non-finite close",
                w[1].time
            )));
        }
        if w[1].time - w[0].time == 60_000 {
            changes.push(w[1].close - w[0].close);
        }
    }
    let n = changes.len();
    if n < MIN_VOLATILITY_MINUTES {
        return Ok((None, n));
    }
    let mean = changes.iter().sum::<f64>() / n as f64;
    let var = changes.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Ok((Some(var.sqrt()), n))
}

fn round_to_tick(spec: &SymbolSpec, price: f64, up: bool) -> f64 {
    if spec.tick_size > 0.0 && spec.tick_size.is_finite() {
        let steps = price / spec.tick_size;
        // Tolerate binary noise before rounding outwards.
        let steps = if (steps - steps.round()).abs() < 1e-6 {
            steps.round()
        } else if up {
            steps.ceil()
        } else {
            steps.floor()
        };
        spec.normalize_price(steps * spec.tick_size)
    } else {
        price
    }
}

/// Estimates the fill of a market order of `params.volume` lots at the quote
/// `tick`, with a slippage band from the one-minute volatility of `bars`
/// (M1 bars, oldest first).
///
/// Model (a band, not a promise): `σ_exec = σ_1m × sqrt(latency / 60 s)`;
/// favourable slippage `z × σ_exec`, adverse `z × σ_exec × size_factor`, with
/// `z` = [`SLIPPAGE_Z`] and `size_factor = max(1, sqrt(volume /
/// REFERENCE_VOLUME))`. `rate` converts the profit currency to the account
/// currency. Gaps, news and thin books can slip further than the band.
///
/// Errors: a volume that is not a positive number (one outside the symbol's
/// minimum, maximum or step is estimated all the same), a latency outside
/// 1–60 000 ms, an unusable quote (non-finite, non-positive, ask below bid), a
/// non-finite bar close.
pub fn estimate_fill(
    spec: &SymbolSpec,
    tick: &Tick,
    bars: &[Bar],
    params: FillParams,
    rate: Option<f64>,
) -> Result<FillEstimate, CoreError> {
    // An estimate, not an order: any positive volume is estimated (whether
    // the symbol can trade it is [`trading::check_volume`]'s question).
    if !(params.volume.is_finite() && params.volume > 0.0) {
        return Err(CoreError::param("volume", "must be a positive number of lots"));
    }
    if !(1..=60_000).contains(&params.latency_ms) {
        return Err(CoreError::param("latency_ms", "must be between 1 and 60000"));
    }
    if !(tick.bid.is_finite() && tick.ask.is_finite() && tick.bid > 0.0 && tick.ask >= tick.bid) {
        return Err(CoreError::InvalidInput(format!(
            "the quote of {} is unusable (bid {}, ask {})",
            spec.name, tick.bid, tick.ask
        )));
    }
    if !(spec.point.is_finite() && spec.point > 0.0 && spec.contract_size.is_finite()) {
        return Err(CoreError::InvalidInput(format!(
            "the specification of {} has no usable point or contract size",
            spec.name
        )));
    }
    let rate = rate.filter(|r| r.is_finite() && *r > 0.0);
    let money = |price_move: f64| rate.map(|r| price_move * spec.contract_size * params.volume * r);
    let price = match params.side {
        Side::Buy => tick.ask,
        Side::Sell => tick.bid,
    };
    // Quotes carry `digits` decimals: drop the binary noise of the subtraction.
    let scale = 10f64.powi(spec.digits.min(15) as i32);
    let spread = ((tick.ask - tick.bid) * scale).round() / scale;
    let (sigma, minutes_used) = one_minute_sigma(bars)?;
    let size_factor = (params.volume / REFERENCE_VOLUME).sqrt().max(1.0);
    let exec = sigma.map(|s| s * (f64::from(params.latency_ms) / 60_000.0).sqrt());
    let fav = exec.map(|e| SLIPPAGE_Z * e);
    let adv = exec.map(|e| SLIPPAGE_Z * e * size_factor);
    let sign = params.side.sign();
    let worst = adv.map(|a| round_to_tick(spec, price + sign * a, params.side == Side::Buy));
    let best = fav.map(|f| round_to_tick(spec, price - sign * f, params.side == Side::Buy));
    Ok(FillEstimate {
        price,
        bid: tick.bid,
        ask: tick.ask,
        spread,
        spread_points: (spread / spec.point * 1e6).round() / 1e6,
        spread_cost: money(spread),
        sigma_1m: sigma,
        minutes_used,
        size_factor,
        slippage_favourable_points: fav.map(|f| f / spec.point),
        slippage_adverse_points: adv.map(|a| a / spec.point),
        best_case_price: best,
        worst_case_price: worst,
        slippage_cost_worst: adv.and_then(money),
        market_open: spec.is_open(tick.time),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::MarginMode;
    use crate::time::parse_iso;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    fn deal(ticket: u64, time: UnixMs, entry: DealEntry, profit: f64, swap: f64, commission: f64) -> Deal {
        Deal {
            ticket,
            order: 0,
            position: 0,
            symbol: if entry == DealEntry::Balance {
                String::new()
            } else {
                "EURUSD".into()
            },
            side: Side::Buy,
            entry,
            volume: 0.1,
            price: 1.1,
            time,
            profit,
            swap,
            commission,
            magic: 0,
            comment: String::new(),
        }
    }

    fn values(c: &EquityCurve) -> Vec<f64> {
        c.points.iter().map(|p| p.value).collect()
    }

    #[test]
    fn curve_walks_back_and_ignores_cash_flows_in_profit_and_drawdown() {
        use DealEntry::*;
        // Start 1000: +100 trade → 1100, −50 (−40 profit, −7 swap, −3 comm) → 1050,
        // deposit 500 → 1550, withdrawal 300 → 1250, −200 trade → 1050, +20 → 1070.
        let deals = vec![
            deal(6, 600, Out, 20.0, 0.0, 0.0),
            deal(1, 100, Out, 100.0, 0.0, 0.0),
            deal(2, 200, Out, -40.0, -7.0, -3.0),
            deal(3, 300, Balance, 500.0, 0.0, 0.0),
            deal(4, 400, Balance, -300.0, 0.0, 0.0),
            deal(5, 500, Out, -200.0, 0.0, 0.0),
            deal(7, 550, In, 0.0, 0.0, 0.0), // no balance change: no point
        ];
        let c = equity_curve(&deals, 0, 1070.0, Some((700, 1040.0))).unwrap();
        assert_eq!(
            values(&c),
            vec![1000.0, 1100.0, 1050.0, 1550.0, 1250.0, 1050.0, 1070.0, 1040.0]
        );
        let kinds: Vec<_> = c.points.iter().map(|p| p.kind).collect();
        use CurvePointKind as K;
        assert_eq!(
            kinds,
            vec![
                K::Start,
                K::Trade,
                K::Trade,
                K::Deposit,
                K::Withdrawal,
                K::Trade,
                K::Trade,
                K::Equity
            ]
        );
        assert_eq!(c.points[1].deal, Some(1));
        assert_eq!(c.points[7].change, -30.0);
        let s = &c.stats;
        assert_eq!(s.starting_balance, 1000.0);
        assert_eq!(s.ending_balance, 1070.0);
        assert_eq!(s.current_equity, Some(1040.0));
        assert!(close(s.net_profit, -130.0));
        assert!(close(s.gross_profit, -120.0));
        assert_eq!((s.total_swap, s.total_commission), (-7.0, -3.0));
        assert_eq!((s.deposits, s.withdrawals), (500.0, 300.0));
        assert_eq!(s.trades, 4);
        assert!(close(
            s.starting_balance + s.deposits - s.withdrawals + s.net_profit,
            s.ending_balance
        ));
        // Peak 1100 at t=100, +500 −300 → 1300 adjusted; trough 1040 (equity): 260.
        let dd = &s.max_drawdown;
        assert!(close(dd.amount, 260.0), "{dd:?}");
        assert_eq!((dd.peak_time, dd.trough_time), (100, 700));
        assert!(close(dd.peak_value, 1300.0));
        assert!(close(dd.percent.unwrap(), 20.0));
        assert_eq!(dd.trough_value, 1040.0);
    }

    #[test]
    fn a_withdrawal_alone_is_no_drawdown_and_a_deposit_no_profit() {
        let deals = vec![
            deal(1, 100, DealEntry::Balance, -400.0, 0.0, 0.0),
            deal(2, 200, DealEntry::Balance, 900.0, 0.0, 0.0),
        ];
        let c = equity_curve(&deals, 0, 1500.0, None).unwrap();
        assert_eq!(values(&c), vec![1000.0, 600.0, 1500.0]);
        assert_eq!(c.stats.net_profit, 0.0);
        assert_eq!(c.stats.max_drawdown.amount, 0.0);
        assert_eq!(c.stats.max_drawdown.percent, None);
        assert_eq!(c.stats.trades, 0);
    }

    #[test]
    fn balance_deal_costs_are_charges_and_count_as_profit() {
        let deals = vec![deal(1, 100, DealEntry::Balance, 0.0, -2.5, -1.0)];
        let c = equity_curve(&deals, 0, 96.5, None).unwrap();
        assert_eq!(c.points[1].kind, CurvePointKind::Charge);
        assert_eq!(c.stats.starting_balance, 100.0);
        assert_eq!(c.stats.net_profit, -3.5);
        assert_eq!(c.stats.max_drawdown.amount, 3.5);
        assert!(close(c.stats.max_drawdown.percent.unwrap(), 3.5));
    }

    #[test]
    fn empty_history_and_starting_from_nothing() {
        let c = equity_curve(&[], 5, 250.0, Some((9, 260.0))).unwrap();
        assert_eq!(values(&c), vec![250.0, 260.0]);
        assert_eq!(c.stats.net_profit, 0.0);
        assert_eq!(c.stats.max_drawdown.amount, 0.0);
        let c = equity_curve(&[], 5, 250.0, None).unwrap();
        assert_eq!(c.points.len(), 1);
        // The initial deposit inside the range: the curve starts at 0, no drawdown.
        let deals = vec![
            deal(1, 10, DealEntry::Balance, 1000.0, 0.0, 0.0),
            deal(2, 20, DealEntry::Out, -100.0, 0.0, 0.0),
        ];
        let c = equity_curve(&deals, 0, 900.0, None).unwrap();
        assert_eq!(values(&c), vec![0.0, 1000.0, 900.0]);
        assert_eq!(c.stats.max_drawdown.amount, 100.0);
        assert_eq!(c.stats.max_drawdown.peak_time, 10);
        assert!(close(c.stats.max_drawdown.percent.unwrap(), 10.0));
    }

    #[test]
    fn non_finite_numbers_are_typed_errors() {
        let bad = vec![deal(1, 10, DealEntry::Out, f64::NAN, 0.0, 0.0)];
        assert!(matches!(
            equity_curve(&bad, 0, 1.0, None),
            Err(CoreError::InvalidInput(_))
        ));
        assert!(equity_curve(&[], 0, f64::INFINITY, None).is_err());
        assert!(equity_curve(&[], 0, 1.0, Some((1, f64::NAN))).is_err());
    }

    #[test]
    fn thinning_keeps_ends_and_extremes() {
        let pts: Vec<CurvePoint> = (0..100)
            .map(|i| CurvePoint {
                time: i,
                value: if i == 37 {
                    -50.0
                } else if i == 61 {
                    500.0
                } else {
                    i as f64
                },
                change: 0.0,
                kind: CurvePointKind::Trade,
                deal: None,
            })
            .collect();
        let t = thin_curve(&pts, 10).unwrap();
        assert!(t.len() <= 10);
        assert_eq!(t.first().unwrap().time, 0);
        assert_eq!(t.last().unwrap().time, 99);
        assert!(t.iter().any(|p| p.value == -50.0));
        assert!(t.iter().any(|p| p.value == 500.0));
        assert!(t.windows(2).all(|w| w[0].time < w[1].time));
        assert_eq!(thin_curve(&pts[..5], 10).unwrap().len(), 5);
        assert!(thin_curve(&pts, 3).is_err());
    }

    fn eurusd() -> SymbolSpec {
        SymbolSpec {
            name: "EURUSD".into(),
            description: String::new(),
            currency_base: "EUR".into(),
            currency_profit: "USD".into(),
            currency_margin: "EUR".into(),
            digits: 5,
            point: 0.00001,
            contract_size: 100_000.0,
            tick_size: 0.00001,
            tick_value: 1.0,
            volume_min: 0.01,
            volume_max: 100.0,
            volume_step: 0.01,
            stops_level: 10,
            swap_long: -7.5,
            swap_short: 2.1,
            swap_mode: SwapMode::Points,
            swap_triple_day: 3,
            margin_mode: MarginMode::Forex,
            margin_rate: 1.0,
            sessions: Vec::new(),
            expiration_modes: Vec::new(),
            filling_modes: Vec::new(),
        }
    }

    fn tick(bid: f64, ask: f64, time: UnixMs) -> Tick {
        Tick {
            symbol: "EURUSD".into(),
            bid,
            ask,
            time,
        }
    }

    fn params(volume: f64, days: u32) -> SwapCalendarParams {
        SwapCalendarParams {
            volume,
            days,
            rollover_ms_of_day: 22 * 3_600_000,
        }
    }

    #[test]
    fn swap_calendar_in_points_over_a_week() {
        // Wednesday 12:00 UTC; rollovers at 22:00 Wed, Thu, Fri, Sat, Sun, Mon, Tue.
        let now = parse_iso("2026-11-18T12:00:00Z").unwrap();
        let c = swap_calendar(&eurusd(), None, Some(1.0), now, params(1.0, 7)).unwrap();
        // One night long: −7.5 × 0.00001 × 100 000 × 1 = −7.5 USD; short +2.1.
        assert!(close(c.night_long.unwrap(), -7.5));
        assert!(close(c.night_short.unwrap(), 2.1));
        let r = &c.rollovers;
        assert_eq!(r.len(), 7);
        assert_eq!(r[0].time, parse_iso("2026-11-18T22:00:00Z").unwrap());
        assert_eq!(
            r.iter().map(|x| x.weekday).collect::<Vec<_>>(),
            vec![3, 4, 5, 6, 0, 1, 2]
        );
        assert_eq!(
            r.iter().map(|x| x.nights).collect::<Vec<_>>(),
            vec![3, 1, 1, 0, 0, 1, 1]
        );
        assert!(r[0].triple && !r[1].triple);
        assert!(close(r[0].long.unwrap(), -22.5));
        assert_eq!(r[3].long, Some(0.0));
        // 7 nights charged.
        assert!(close(c.total_long.unwrap(), -52.5));
        assert!(close(c.total_short.unwrap(), 14.7));
        assert_eq!(c.unsupported, None);
        // Agrees with the simulator's formula, night by night.
        for x in r.iter().filter(|x| x.nights > 0) {
            let want = trading::swap_for_night(&eurusd(), Side::Buy, 1.0, 0.0, 1.0, x.weekday);
            assert!(close(x.long.unwrap(), want));
        }
    }

    #[test]
    fn swap_calendar_edges_and_modes() {
        let now = parse_iso("2026-11-18T22:00:00Z").unwrap();
        // A rollover exactly now is past: the next is tomorrow's.
        let c = swap_calendar(&eurusd(), None, Some(1.0), now, params(0.5, 1)).unwrap();
        assert_eq!(c.rollovers[0].time, now + DAY_MS);
        assert!(close(c.total_long.unwrap(), -3.75));
        // Rollover at midnight: the one at Thursday 00:00 closes Wednesday (triple).
        let p = SwapCalendarParams {
            rollover_ms_of_day: 0,
            ..params(1.0, 1)
        };
        let c = swap_calendar(&eurusd(), None, Some(1.0), now, p).unwrap();
        assert_eq!((c.rollovers[0].weekday, c.rollovers[0].nights), (3, 3));
        // Points without a conversion rate: not computable, and said so.
        let c = swap_calendar(&eurusd(), None, None, now, params(1.0, 3)).unwrap();
        assert_eq!((c.total_long, c.rollovers[0].long), (None, None));
        assert!(c.unsupported.unwrap().contains("USD"));
        // Currency: per lot, as is.
        let mut s = eurusd();
        s.swap_mode = SwapMode::Currency;
        let c = swap_calendar(&s, None, None, now, params(2.0, 1)).unwrap();
        assert!(close(c.night_long.unwrap(), -15.0));
        // Interest: notional × rate / 100 / 360 at the close price (bid for longs).
        s.swap_mode = SwapMode::Interest;
        s.swap_long = -3.6;
        let t = tick(1.2, 1.2002, now);
        let c = swap_calendar(&s, Some(&t), Some(1.0), now, params(1.0, 1)).unwrap();
        assert!(close(c.night_long.unwrap(), -100_000.0 * 1.2 * 3.6 / 100.0 / 360.0));
        assert!(
            swap_calendar(&s, None, Some(1.0), now, params(1.0, 1))
                .unwrap()
                .unsupported
                .is_some()
        );
        // Disabled: zeros.
        s.swap_mode = SwapMode::Disabled;
        let c = swap_calendar(&s, None, None, now, params(1.0, 5)).unwrap();
        assert_eq!(c.total_long, Some(0.0));
        // Invalid input.
        assert!(swap_calendar(&eurusd(), None, Some(1.0), now, params(0.0, 1)).is_err());
        assert!(swap_calendar(&eurusd(), None, Some(1.0), now, params(f64::NAN, 1)).is_err());
        assert!(swap_calendar(&eurusd(), None, Some(1.0), now, params(1.0, 0)).is_err());
        let mut s = eurusd();
        s.swap_long = f64::NAN;
        assert!(matches!(
            swap_calendar(&s, None, Some(1.0), now, params(1.0, 1)),
            Err(CoreError::InvalidInput(_))
        ));
    }

    fn m1(closes: &[f64]) -> Vec<Bar> {
        closes
            .iter()
            .enumerate()
            .map(|(i, &c)| Bar {
                time: i as i64 * 60_000,
                open: c,
                high: c,
                low: c,
                close: c,
                volume: 1.0,
            })
            .collect()
    }

    #[test]
    fn one_minute_sigma_by_hand() {
        // Changes +2, −2 alternating (×0.0001): mean 0, sample sd of 6 values = sqrt(24/5)·1e-4.
        let closes = [1.0, 1.0002, 1.0, 1.0002, 1.0, 1.0002, 1.0];
        let (s, n) = one_minute_sigma(&m1(&closes)).unwrap();
        assert_eq!(n, 6);
        assert!((s.unwrap() - (24.0f64 / 5.0).sqrt() * 1e-4).abs() < 1e-12);
        // Too few minutes; gaps are skipped.
        assert_eq!(one_minute_sigma(&m1(&closes[..4])).unwrap(), (None, 3));
        let mut gappy = m1(&closes);
        gappy[3].time += 3_600_000;
        for b in gappy.iter_mut().skip(4) {
            b.time += 3_600_000;
        }
        assert_eq!(one_minute_sigma(&gappy).unwrap().1, 5);
        assert_eq!(one_minute_sigma(&[]).unwrap(), (None, 0));
        let mut nan = m1(&closes);
        nan[2].close = f64::NAN;
        assert!(one_minute_sigma(&nan).is_err());
    }

    #[test]
    fn fill_estimate_by_hand() {
        let spec = eurusd();
        let t = tick(1.10000, 1.10010, 1_000);
        // Constant changes of +0.0001 → σ = 0: prices collapse to the quote.
        let flat: Vec<f64> = (0..10).map(|i| 1.0 + f64::from(i) * 0.0001).collect();
        let p = FillParams {
            side: Side::Buy,
            volume: 1.0,
            latency_ms: 60_000,
        };
        let e = estimate_fill(&spec, &t, &m1(&flat), p, Some(1.0)).unwrap();
        assert_eq!(e.price, 1.10010);
        assert!(close(e.spread_points, 10.0));
        assert!(close(e.spread_cost.unwrap(), 10.0)); // 0.0001 × 100 000 × 1 lot
        assert!(e.sigma_1m.unwrap() < 1e-12);
        assert_eq!(e.worst_case_price, Some(1.10010));
        assert!(e.market_open);

        // σ_1m = sqrt(24/5)·1e-4 ≈ 2.19089e-4; latency 15 s → σ_exec = σ_1m / 2.
        let closes = [1.0, 1.0002, 1.0, 1.0002, 1.0, 1.0002, 1.0];
        let sell4 = FillParams {
            side: Side::Sell,
            volume: 4.0,
            latency_ms: 15_000,
        };
        let e = estimate_fill(&spec, &t, &m1(&closes), sell4, None).unwrap();
        let sexec = (24.0f64 / 5.0).sqrt() * 1e-4 / 2.0;
        assert_eq!(e.price, 1.10000);
        assert_eq!(e.size_factor, 2.0);
        assert!(close(e.slippage_favourable_points.unwrap(), SLIPPAGE_Z * sexec / 1e-5));
        assert!(close(
            e.slippage_adverse_points.unwrap(),
            2.0 * SLIPPAGE_Z * sexec / 1e-5
        ));
        // Adverse ≈ 36.04 points below the bid, floored to the tick: 1.09963.
        assert_eq!(e.worst_case_price, Some(1.09963));
        // Favourable ≈ 18.02 points above, floored (towards the market): 1.10018.
        assert_eq!(e.best_case_price, Some(1.10018));
        assert_eq!((e.spread_cost, e.slippage_cost_worst), (None, None));

        // No volatility: no band, but still the price and spread.
        let e = estimate_fill(&spec, &t, &[], p, Some(1.0)).unwrap();
        assert_eq!((e.sigma_1m, e.worst_case_price), (None, None));
    }

    #[test]
    fn fill_rejects_bad_volume_latency_and_quotes() {
        let spec = eurusd();
        let t = tick(1.1, 1.1001, 0);
        let p = |volume: f64, latency_ms: u32| FillParams {
            side: Side::Buy,
            volume,
            latency_ms,
        };
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = estimate_fill(&spec, &t, &[], p(v, 500), None).unwrap_err();
            assert!(
                matches!(e, CoreError::InvalidParameter { ref name, .. } if name == "volume"),
                "{e}"
            );
        }
        // Volumes the symbol cannot trade (off its step, above its maximum,
        // below its minimum) are estimated: an estimate is not an order.
        for v in [0.015, 101.0, 0.001] {
            assert!(trading::check_volume(&spec, v).is_err());
            let e = estimate_fill(&spec, &t, &[], p(v, 500), Some(1.0)).unwrap();
            assert!(close(e.spread_cost.unwrap(), 0.0001 * 100_000.0 * v), "{v}: {e:?}");
        }
        assert!(estimate_fill(&spec, &t, &[], p(0.1, 0), None).is_err());
        for (b, a) in [(f64::NAN, 1.1), (1.1, 1.0), (0.0, 0.0)] {
            let e = estimate_fill(&spec, &tick(b, a, 0), &[], p(0.1, 500), None).unwrap_err();
            assert!(matches!(e, CoreError::InvalidInput(_)));
        }
    }
}
