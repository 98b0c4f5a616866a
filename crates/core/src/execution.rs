//! Execution quality: how well the broker filled the orders tradeterm sent,
//! measured from what the gateway recorded at dispatch (the request time,
//! the quote the agent had pushed, the answer and when it came).
//!
//! - **Slippage** of a market fill is the fill price against the quote at
//!   request time: the ask for a buy, the bid for a sell. It is signed from
//!   the trader's side, as retail platforms state it: **positive slippage is
//!   a better price** than quoted, negative a worse one. It is given in
//!   points (the symbol's `point`) and in account currency
//!   (`price difference / tick_size × tick_value × volume`).
//! - **Latency** is the time from the gateway sending the request to the
//!   agent's answer (`answered_at − requested_at`), so it is measured on one
//!   clock.
//! - **Rejections** are requests the terminal or broker refused, counted by
//!   code; **requotes** are the rejections whose code says the price moved
//!   (`requote`, `price_changed`, `price_off`).
//! - **Spread paid** is the quote's `ask − bid` at request time, in points
//!   and, for the executed volume, in account currency.
//!
//! Executions are grouped by symbol and by trading session of the request
//! time (the windows of [`crate::sessions::SESSIONS`], which overlap, so an
//! execution at 13:00 UTC counts in `london` and `new_york`; hours outside
//! every window are `off_session`).
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use tradeterm_core::Side;
//! use tradeterm_core::execution::{ExecutionOutcome, ExecutionRecord, QuoteAtRequest, TickValue, quality};
//!
//! let record = ExecutionRecord {
//!     symbol: "EURUSD".into(),
//!     side: Some(Side::Buy),
//!     volume: 1.0,
//!     requested_at: 1_000,
//!     answered_at: 1_045,
//!     quote: Some(QuoteAtRequest { bid: 1.10000, ask: 1.10010, age_ms: 120 }),
//!     outcome: ExecutionOutcome::Filled { price: 1.10012 },
//! };
//! let specs = BTreeMap::from([("EURUSD".to_string(), TickValue { point: 0.00001, tick_size: 0.00001, tick_value: 1.0 })]);
//! let q = quality(&[record], &specs);
//! let s = &q.overall.slippage;
//! assert_eq!(s.count, 1);
//! assert!((s.mean_points - -2.0).abs() < 1e-9); // filled 2 points above the ask: worse
//! assert!((s.total_money - -2.0).abs() < 1e-9);
//! assert_eq!(q.overall.latency_ms.p50, Some(45.0));
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Side;
use crate::sessions::SESSIONS;
use crate::time::{UnixMs, ms_of_day};

/// Quote the agent had pushed when the request was sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuoteAtRequest {
    /// Bid.
    pub bid: f64,
    /// Ask.
    pub ask: f64,
    /// How old the quote was when the request was sent, ms.
    pub age_ms: u64,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ExecutionOutcome {
    /// A market fill at this price.
    Filled {
        /// Fill price.
        price: f64,
    },
    /// A pending order was placed, or a modification or cancellation done
    /// (no fill to measure).
    Accepted,
    /// Refused.
    Rejected {
        /// The error code (`requote`, `no_money`, `market_closed`, ...).
        code: String,
    },
    /// No answer in time: whether it executed is unknown.
    TimedOut,
}

/// One request, as the gateway recorded it (and the tool completed from the
/// deal history: `symbol` and `side` of a closing deal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    /// Instrument.
    pub symbol: String,
    /// Side of the fill (`buy` fills at the ask, `sell` at the bid); unknown
    /// for requests that never filled.
    pub side: Option<Side>,
    /// Requested or filled volume, lots.
    pub volume: f64,
    /// When the gateway sent the request (unix ms, gateway clock).
    pub requested_at: UnixMs,
    /// When the answer arrived (unix ms, gateway clock).
    pub answered_at: UnixMs,
    /// The pushed quote at request time, when the agent had pushed one.
    pub quote: Option<QuoteAtRequest>,
    /// The answer.
    pub outcome: ExecutionOutcome,
}

/// The figures that turn a price difference into points and money.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickValue {
    /// The symbol's point.
    pub point: f64,
    /// Its tick size.
    pub tick_size: f64,
    /// Value of one tick for one lot, account currency.
    pub tick_value: f64,
}

/// Slippage of market fills.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct SlippageStats {
    /// Fills with a quote to compare with.
    pub count: usize,
    /// Fills better than the quote.
    pub positive: usize,
    /// Fills at the quote.
    pub zero: usize,
    /// Fills worse than the quote.
    pub negative: usize,
    /// Mean slippage, points (positive = better for the trader).
    pub mean_points: f64,
    /// Median slippage, points.
    pub median_points: f64,
    /// Worst (most negative) slippage, points.
    pub worst_points: f64,
    /// Best slippage, points.
    pub best_points: f64,
    /// Sum of slippage in account currency over the filled volumes.
    pub total_money: f64,
    /// Sum of negative slippage, account currency.
    pub negative_money: f64,
    /// Sum of positive slippage, account currency.
    pub positive_money: f64,
}

/// Latency percentiles, ms (`None` without samples).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct LatencyStats {
    /// Answers measured.
    pub count: usize,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Slowest.
    pub max: Option<f64>,
}

/// Spread at request time of the market fills.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct SpreadStats {
    /// Fills with a quote.
    pub count: usize,
    /// Mean spread, points.
    pub mean_points: f64,
    /// Largest spread, points.
    pub max_points: f64,
    /// Spread times volume, account currency (what crossing the spread cost).
    pub total_money: f64,
}

/// Figures of one group of executions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct QualityGroup {
    /// Requests recorded.
    pub requests: usize,
    /// Market fills.
    pub fills: usize,
    /// Accepted without a fill (pending orders, modifications).
    pub accepted: usize,
    /// Rejections (requotes included).
    pub rejections: usize,
    /// Rejections whose code says the price moved.
    pub requotes: usize,
    /// Requests without an answer in time.
    pub timeouts: usize,
    /// Rejections by code.
    pub rejections_by_code: BTreeMap<String, usize>,
    /// `fills / (fills + rejections + timeouts)`, when any.
    pub fill_rate: Option<f64>,
    /// Slippage of the fills.
    pub slippage: SlippageStats,
    /// Request-to-answer latency of every answered request.
    pub latency_ms: LatencyStats,
    /// Spread paid on the fills.
    pub spread: SpreadStats,
}

/// Execution quality overall, per symbol and per session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct ExecutionQuality {
    /// Every execution.
    pub overall: QualityGroup,
    /// Per symbol.
    pub by_symbol: BTreeMap<String, QualityGroup>,
    /// Per session of the request time (`asia`, `london`, `new_york`, `off_session`).
    pub by_session: BTreeMap<String, QualityGroup>,
    /// Fills whose symbol has no contract specification (no points or money for them).
    pub unpriced_fills: usize,
    /// Fills without a pushed quote at request time (no slippage or spread for them).
    pub fills_without_quote: usize,
}

/// Codes that mean the price moved between request and execution.
pub const REQUOTE_CODES: [&str; 3] = ["requote", "price_changed", "price_off"];

/// The sessions an instant belongs to.
pub fn sessions_of(t: UnixMs) -> Vec<&'static str> {
    let hour = (ms_of_day(t) / 3_600_000) as u8;
    let names: Vec<&'static str> = SESSIONS
        .iter()
        .filter(|s| (s.start_hour..s.end_hour).contains(&hour))
        .map(|s| s.name)
        .collect();
    if names.is_empty() { vec!["off_session"] } else { names }
}

/// Per-group accumulator.
#[derive(Default)]
struct Acc {
    group: QualityGroup,
    slippage: Vec<f64>,
    latency: Vec<f64>,
    spreads: Vec<f64>,
}

/// What one fill measured.
struct FillFigures {
    slippage_points: f64,
    slippage_money: f64,
    spread_points: f64,
    spread_money: f64,
}

fn fill_figures(record: &ExecutionRecord, price: f64, spec: &TickValue) -> Option<FillFigures> {
    let quote = record.quote?;
    let side = record.side?;
    if !(spec.point > 0.0 && spec.tick_size > 0.0 && spec.tick_value.is_finite()) {
        return None;
    }
    // Positive = better for the trader: a buy below the ask, a sell above the bid.
    let better_by = match side {
        Side::Buy => quote.ask - price,
        Side::Sell => price - quote.bid,
    };
    let money_per_price = spec.tick_value / spec.tick_size * record.volume;
    let spread = quote.ask - quote.bid;
    Some(FillFigures {
        slippage_points: round_points(better_by / spec.point),
        slippage_money: better_by * money_per_price,
        spread_points: round_points(spread / spec.point),
        spread_money: spread * money_per_price,
    })
}

/// Points are whole numbers up to the floating-point noise of the prices.
fn round_points(points: f64) -> f64 {
    (points * 1e6).round() / 1e6
}

impl Acc {
    fn add(&mut self, record: &ExecutionRecord, figures: Option<&FillFigures>) {
        let g = &mut self.group;
        g.requests += 1;
        match &record.outcome {
            ExecutionOutcome::Filled { .. } => g.fills += 1,
            ExecutionOutcome::Accepted => g.accepted += 1,
            ExecutionOutcome::Rejected { code } => {
                g.rejections += 1;
                if REQUOTE_CODES.contains(&code.as_str()) {
                    g.requotes += 1;
                }
                *g.rejections_by_code.entry(code.clone()).or_default() += 1;
            }
            ExecutionOutcome::TimedOut => g.timeouts += 1,
        }
        if !matches!(record.outcome, ExecutionOutcome::TimedOut) {
            self.latency
                .push((record.answered_at - record.requested_at).max(0) as f64);
        }
        if let Some(f) = figures {
            self.slippage.push(f.slippage_points);
            let s = &mut g.slippage;
            s.total_money += f.slippage_money;
            if f.slippage_points > 0.0 {
                s.positive += 1;
                s.positive_money += f.slippage_money;
            } else if f.slippage_points < 0.0 {
                s.negative += 1;
                s.negative_money += f.slippage_money;
            } else {
                s.zero += 1;
            }
            self.spreads.push(f.spread_points);
            g.spread.total_money += f.spread_money;
        }
    }

    fn finish(mut self) -> QualityGroup {
        let g = &mut self.group;
        let decided = g.fills + g.rejections + g.timeouts;
        g.fill_rate = (decided > 0).then(|| g.fills as f64 / decided as f64);
        if !self.slippage.is_empty() {
            self.slippage.sort_by(f64::total_cmp);
            let s = &mut g.slippage;
            s.count = self.slippage.len();
            s.mean_points = mean(&self.slippage);
            s.median_points = quantile(&self.slippage, 0.5);
            s.worst_points = self.slippage[0];
            s.best_points = self.slippage[self.slippage.len() - 1];
        }
        if !self.latency.is_empty() {
            self.latency.sort_by(f64::total_cmp);
            g.latency_ms = LatencyStats {
                count: self.latency.len(),
                p50: Some(quantile(&self.latency, 0.5)),
                p90: Some(quantile(&self.latency, 0.9)),
                p99: Some(quantile(&self.latency, 0.99)),
                max: self.latency.last().copied(),
            };
        }
        if !self.spreads.is_empty() {
            g.spread.count = self.spreads.len();
            g.spread.mean_points = mean(&self.spreads);
            g.spread.max_points = self.spreads.iter().copied().fold(f64::MIN, f64::max);
        }
        self.group
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Linear-interpolation quantile of sorted values (numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Execution quality of `records`; `specs` gives each symbol's point and
/// tick value (a fill of a symbol without one counts, but without points or
/// money).
pub fn quality(records: &[ExecutionRecord], specs: &BTreeMap<String, TickValue>) -> ExecutionQuality {
    let mut overall = Acc::default();
    let mut by_symbol: BTreeMap<String, Acc> = BTreeMap::new();
    let mut by_session: BTreeMap<String, Acc> = BTreeMap::new();
    let mut unpriced = 0;
    let mut without_quote = 0;
    for record in records {
        let figures = match &record.outcome {
            ExecutionOutcome::Filled { price } => match (specs.get(&record.symbol), record.quote) {
                (_, None) => {
                    without_quote += 1;
                    None
                }
                (None, Some(_)) => {
                    unpriced += 1;
                    None
                }
                (Some(spec), Some(_)) => fill_figures(record, *price, spec),
            },
            _ => None,
        };
        overall.add(record, figures.as_ref());
        by_symbol
            .entry(record.symbol.clone())
            .or_default()
            .add(record, figures.as_ref());
        for session in sessions_of(record.requested_at) {
            by_session
                .entry(session.to_string())
                .or_default()
                .add(record, figures.as_ref());
        }
    }
    ExecutionQuality {
        overall: overall.finish(),
        by_symbol: by_symbol.into_iter().map(|(k, a)| (k, a.finish())).collect(),
        by_session: by_session.into_iter().map(|(k, a)| (k, a.finish())).collect(),
        unpriced_fills: unpriced,
        fills_without_quote: without_quote,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EURUSD: TickValue = TickValue {
        point: 0.00001,
        tick_size: 0.00001,
        tick_value: 1.0,
    };

    fn record(
        side: Side,
        volume: f64,
        bid: f64,
        ask: f64,
        outcome: ExecutionOutcome,
        at: i64,
        took: i64,
    ) -> ExecutionRecord {
        ExecutionRecord {
            symbol: "EURUSD".into(),
            side: Some(side),
            volume,
            requested_at: at,
            answered_at: at + took,
            quote: Some(QuoteAtRequest { bid, ask, age_ms: 10 }),
            outcome,
        }
    }

    fn filled(price: f64) -> ExecutionOutcome {
        ExecutionOutcome::Filled { price }
    }

    #[test]
    fn slippage_sign_spread_and_money_by_hand() {
        let specs = BTreeMap::from([("EURUSD".to_string(), EURUSD)]);
        let hour = 3_600_000;
        let records = [
            // Buy 1 lot filled 3 points below the ask: +3 points, +3 USD.
            record(Side::Buy, 1.0, 1.10000, 1.10010, filled(1.10007), 9 * hour, 40),
            // Sell 2 lots filled 5 points below the bid: −5 points, −10 USD.
            record(Side::Sell, 2.0, 1.10000, 1.10010, filled(1.09995), 9 * hour, 60),
            // Sell at the bid: 0.
            record(Side::Sell, 1.0, 1.10000, 1.10020, filled(1.10000), 22 * hour, 20),
            record(
                Side::Buy,
                1.0,
                1.1,
                1.1001,
                ExecutionOutcome::Rejected { code: "requote".into() },
                13 * hour,
                80,
            ),
            record(
                Side::Buy,
                1.0,
                1.1,
                1.1001,
                ExecutionOutcome::Rejected {
                    code: "no_money".into(),
                },
                13 * hour,
                10,
            ),
            record(
                Side::Buy,
                1.0,
                1.1,
                1.1001,
                ExecutionOutcome::TimedOut,
                13 * hour,
                5_000,
            ),
        ];
        let q = quality(&records, &specs);
        let o = &q.overall;
        assert_eq!(
            (o.requests, o.fills, o.rejections, o.requotes, o.timeouts),
            (6, 3, 2, 1, 1)
        );
        assert_eq!(o.rejections_by_code["requote"], 1);
        assert_eq!(o.fill_rate, Some(0.5));
        let s = &o.slippage;
        assert_eq!((s.count, s.positive, s.zero, s.negative), (3, 1, 1, 1));
        assert!((s.mean_points - (-2.0 / 3.0)).abs() < 1e-9);
        assert_eq!((s.worst_points, s.median_points, s.best_points), (-5.0, 0.0, 3.0));
        assert!((s.total_money - -7.0).abs() < 1e-9);
        assert!((s.negative_money - -10.0).abs() < 1e-9);
        // Spreads 10, 10, 20 points; money 10×1 + 10×2 + 20×1 = 50 USD.
        assert!((o.spread.mean_points - 40.0 / 3.0).abs() < 1e-9);
        assert_eq!(o.spread.max_points, 20.0);
        assert!((o.spread.total_money - 50.0).abs() < 1e-9);
        // Latency of the 5 answered requests: 10, 20, 40, 60, 80.
        assert_eq!(o.latency_ms.count, 5);
        assert_eq!(o.latency_ms.p50, Some(40.0));
        assert!((o.latency_ms.p90.unwrap() - 72.0).abs() < 1e-9);
        assert_eq!(o.latency_ms.max, Some(80.0));
        // Sessions: 09:00 is london; 13:00 london and new_york; 22:00 off_session.
        assert_eq!(q.by_session["london"].requests, 5);
        assert_eq!(q.by_session["new_york"].requests, 3);
        assert_eq!(q.by_session["off_session"].requests, 1);
        assert!(!q.by_session.contains_key("asia"));
        assert_eq!(q.by_symbol["EURUSD"], q.overall);
    }

    #[test]
    fn jpy_cross_money_uses_tick_value() {
        // USDJPY: point 0.001, tick value 0.67 USD per 0.001 per lot.
        let spec = TickValue {
            point: 0.001,
            tick_size: 0.001,
            tick_value: 0.67,
        };
        let mut r = record(Side::Buy, 0.5, 150.000, 150.010, filled(150.014), 0, 1);
        r.symbol = "USDJPY".into();
        let q = quality(&[r], &BTreeMap::from([("USDJPY".to_string(), spec)]));
        let s = &q.overall.slippage;
        assert_eq!(s.worst_points, -4.0);
        assert!((s.total_money - (-4.0 * 0.67 * 0.5)).abs() < 1e-9);
        assert_eq!(q.by_session["asia"].fills, 1);
    }

    #[test]
    fn fills_without_quote_or_spec_are_counted_not_guessed() {
        let mut no_quote = record(Side::Buy, 1.0, 1.0, 1.0, filled(1.1), 0, 1);
        no_quote.quote = None;
        let mut no_spec = record(Side::Buy, 1.0, 1.0, 1.0001, filled(1.0001), 0, 1);
        no_spec.symbol = "XYZ".into();
        let q = quality(&[no_quote, no_spec], &BTreeMap::from([("EURUSD".to_string(), EURUSD)]));
        assert_eq!(q.overall.fills, 2);
        assert_eq!(q.overall.slippage.count, 0);
        assert_eq!((q.fills_without_quote, q.unpriced_fills), (1, 1));
        assert_eq!(q.overall.latency_ms.count, 2);
    }

    #[test]
    fn empty_input_has_no_rates() {
        let q = quality(&[], &BTreeMap::new());
        assert_eq!(q.overall.requests, 0);
        assert_eq!(q.overall.fill_rate, None);
        assert_eq!(q.overall.latency_ms.p50, None);
    }
}
