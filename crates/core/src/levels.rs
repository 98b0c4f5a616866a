//! Key price levels: pivot points, previous day/week/month high-low-close,
//! support and resistance zones clustered from confirmed swings, and round
//! numbers near the price (pure functions; the `tradeterm-tools` wrapper
//! fetches the bars and the symbol).
//!
//! # Pivot points
//!
//! From the previous period's high `H`, low `L` and close `C` (and, for
//! Woodie, the current period's open `O` when known):
//!
//! | method | pivot `P` | resistances | supports |
//! |---|---|---|---|
//! | classic | `(H+L+C)/3` | `R1 = 2P−L`, `R2 = P+(H−L)`, `R3 = H+2(P−L)` | `S1 = 2P−H`, `S2 = P−(H−L)`, `S3 = L−2(H−P)` |
//! | fibonacci | `(H+L+C)/3` | `P + {0.382, 0.618, 1.000}·(H−L)` | `P − {0.382, 0.618, 1.000}·(H−L)` |
//! | camarilla | `(H+L+C)/3` | `C + (H−L)·1.1/{12, 6, 4, 2}` (R1…R4) | `C − (H−L)·1.1/{12, 6, 4, 2}` |
//! | woodie | `(H+L+2·O)/4`, or `(H+L+2·C)/4` without `O` | as classic | as classic |
//!
//! # Previous periods
//!
//! Day boundaries are UTC midnight, weeks start on Monday 00:00 UTC (ISO),
//! months on the 1st. The *previous* period is the latest period before the
//! one containing `now` that has bars (so on a Monday the previous day is
//! Friday when there are no weekend bars). Its high and low are the extremes
//! of its bars, its open the first bar's open, its close the last bar's close.
//! Bars of a timeframe up to D1 give exact values; bars open at or after
//! `now` are ignored.
//!
//! # Support and resistance zones
//!
//! Swings are detected by [`crate::structure`] (highs and lows confirmed
//! `swing_length` bars later; every confirmed pivot counts, also one that was
//! later superseded as its leg's extreme, since each is a turning point).
//! Sorted by price, swings are grouped greedily: a swing joins the current
//! group while it lies within `width` of the group's lowest swing. A zone
//! spans its swings' prices, widened symmetrically to `width` when narrower.
//! `width` is `multiple × ATR(period)` at the last bar, or a percentage of the
//! price. **Touches** are the swings in the zone; the **last touch** is the
//! time of the latest one. A zone is a support below the price, a resistance
//! above it, and `contains_price` when the price is inside.
//!
//! # Round numbers
//!
//! The "00" step is `1000 × point` (`10^(3 − digits)`): 0.01 on a 5-digit
//! EURUSD (1.0800, 1.0900), 1 on a 3-digit USDJPY (150.00), 10 on a 2-digit
//! XAUUSD; "50" levels lie halfway. The caller may set another step.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::levels::{pivot_points, Hlc, PivotMethod};
//!
//! let prev = Hlc { high: 110.0, low: 100.0, close: 105.0 };
//! let p = pivot_points(PivotMethod::Classic, &prev, None)?;
//! assert_eq!(p.pivot, 105.0);
//! assert_eq!(p.resistances, vec![110.0, 115.0, 120.0]);
//! assert_eq!(p.supports, vec![100.0, 95.0, 90.0]);
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::indicators::AverageTrueRange;
use crate::market::{Bar, Timeframe};
use crate::structure::{self, StructureConfig, StructureEvent, SwingKind};
use crate::time::{UnixMs, day_start};

/// Pivot point method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PivotMethod {
    /// Floor-trader pivots: `P = (H+L+C)/3`, three resistances and supports.
    Classic,
    /// Fibonacci ratios 0.382, 0.618 and 1.0 of the range around `P`.
    Fibonacci,
    /// Camarilla: four levels each side of the close at `1.1/12`, `/6`, `/4`, `/2` of the range.
    Camarilla,
    /// Woodie: `P = (H+L+2·O)/4` with the current open (or the previous close).
    Woodie,
}

impl PivotMethod {
    /// Every method.
    pub const ALL: [PivotMethod; 4] = [Self::Classic, Self::Fibonacci, Self::Camarilla, Self::Woodie];
}

/// High, low and close of a period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hlc {
    /// High.
    pub high: f64,
    /// Low.
    pub low: f64,
    /// Close.
    pub close: f64,
}

/// Pivot levels of one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PivotLevels {
    /// The method.
    pub method: PivotMethod,
    /// The pivot.
    pub pivot: f64,
    /// R1, R2, … (ascending).
    pub resistances: Vec<f64>,
    /// S1, S2, … (descending).
    pub supports: Vec<f64>,
    /// What the pivot was computed from (Woodie: with the current open or the previous close).
    pub basis: String,
}

/// Pivot points of `method` from the previous period's high, low and close;
/// `current_open` is used by Woodie only.
///
/// # Errors
/// [`CoreError::InvalidInput`] for non-finite values, `low > high`, a close
/// outside `[low, high]`, or a non-finite `current_open`.
pub fn pivot_points(method: PivotMethod, prev: &Hlc, current_open: Option<f64>) -> Result<PivotLevels, CoreError> {
    let Hlc {
        high: h,
        low: l,
        close: c,
    } = *prev;
    if ![h, l, c].iter().all(|v| v.is_finite()) || l > h || c < l || c > h {
        return Err(CoreError::InvalidInput(
            "the previous period needs finite high ≥ close ≥ low".into(),
        ));
    }
    if current_open.is_some_and(|o| !o.is_finite()) {
        return Err(CoreError::param("current_open", "must be a finite number"));
    }
    let range = h - l;
    let classic_p = (h + l + c) / 3.0;
    let hlc = "previous period's high, low and close".to_string();
    let floor = |p: f64| {
        (
            vec![2.0 * p - l, p + range, h + 2.0 * (p - l)],
            vec![2.0 * p - h, p - range, l - 2.0 * (h - p)],
        )
    };
    let (pivot, (resistances, supports), basis) = match method {
        PivotMethod::Classic => (classic_p, floor(classic_p), hlc),
        PivotMethod::Fibonacci => {
            let r = [0.382, 0.618, 1.0];
            (
                classic_p,
                (
                    r.iter().map(|k| classic_p + k * range).collect(),
                    r.iter().map(|k| classic_p - k * range).collect(),
                ),
                hlc,
            )
        }
        PivotMethod::Camarilla => {
            let d = [12.0, 6.0, 4.0, 2.0];
            (
                classic_p,
                (
                    d.iter().map(|k| c + range * 1.1 / k).collect(),
                    d.iter().map(|k| c - range * 1.1 / k).collect(),
                ),
                hlc,
            )
        }
        PivotMethod::Woodie => {
            let (p, basis) = match current_open {
                Some(o) => (
                    (h + l + 2.0 * o) / 4.0,
                    "previous high and low, current period's open".to_string(),
                ),
                None => (
                    (h + l + 2.0 * c) / 4.0,
                    "previous high, low and close (current open unknown)".to_string(),
                ),
            };
            (p, floor(p), basis)
        }
    };
    Ok(PivotLevels {
        method,
        pivot,
        resistances,
        supports,
        basis,
    })
}

// ================================================================ previous periods

/// A calendar period for previous high/low/close and pivots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LevelPeriod {
    /// UTC day.
    #[default]
    Day,
    /// ISO week (Monday 00:00 UTC).
    Week,
    /// Calendar month (UTC).
    Month,
}

impl LevelPeriod {
    /// Start of the period containing `t`.
    pub fn start(self, t: UnixMs) -> UnixMs {
        match self {
            Self::Day => day_start(t),
            Self::Week => Timeframe::W1.bar_open(t),
            Self::Month => Timeframe::MN1.bar_open(t),
        }
    }
}

/// Open, high, low and close of one period, aggregated from bars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeriodOhlc {
    /// Start of the period.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub start: UnixMs,
    /// First bar's open.
    pub open: f64,
    /// Highest high.
    pub high: f64,
    /// Lowest low.
    pub low: f64,
    /// Last bar's close.
    pub close: f64,
    /// Number of bars aggregated.
    pub bars: usize,
}

impl PeriodOhlc {
    /// Its high, low and close.
    pub fn hlc(&self) -> Hlc {
        Hlc {
            high: self.high,
            low: self.low,
            close: self.close,
        }
    }
}

/// The previous and current period of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeriodLevels {
    /// `day`, `week` or `month` (UTC; weeks start on Monday).
    pub period: LevelPeriod,
    /// The latest complete period with bars before the current one: previous high, low and close.
    pub previous: Option<PeriodOhlc>,
    /// The current period so far (bars open before `now`).
    pub current: Option<PeriodOhlc>,
}

fn check_time(name: &str, t: UnixMs) -> Result<(), CoreError> {
    if chrono::DateTime::<chrono::Utc>::from_timestamp_millis(t).is_none() {
        return Err(CoreError::param(name, format!("{t} is not a representable time")));
    }
    Ok(())
}

fn check_bars(bars: &[Bar]) -> Result<(), CoreError> {
    for (i, b) in bars.iter().enumerate() {
        b.validate()?;
        check_time("bars.time", b.time)?;
        if i > 0 && bars[i - 1].time >= b.time {
            return Err(CoreError::InvalidInput(format!(
                "bar times are not increasing at index {i}"
            )));
        }
    }
    Ok(())
}

fn aggregate(start: UnixMs, bars: &[Bar]) -> Option<PeriodOhlc> {
    let first = bars.first()?;
    let last = bars.last()?;
    Some(PeriodOhlc {
        start,
        open: first.open,
        high: bars.iter().map(|b| b.high).fold(f64::NEG_INFINITY, f64::max),
        low: bars.iter().map(|b| b.low).fold(f64::INFINITY, f64::min),
        close: last.close,
        bars: bars.len(),
    })
}

/// The previous and current period of `period` around `now` from `bars`
/// (time-ordered; see the module documentation).
///
/// # Errors
/// A malformed bar or times that are not strictly increasing.
pub fn period_levels(bars: &[Bar], period: LevelPeriod, now: UnixMs) -> Result<PeriodLevels, CoreError> {
    check_time("now", now)?;
    check_bars(bars)?;
    let bars: Vec<Bar> = bars.iter().copied().filter(|b| b.time < now).collect();
    let cur_start = period.start(now);
    let split = bars.partition_point(|b| b.time < cur_start);
    let (before, current) = bars.split_at(split);
    let previous = before.last().and_then(|last| {
        let start = period.start(last.time);
        let from = before.partition_point(|b| b.time < start);
        aggregate(start, &before[from..])
    });
    Ok(PeriodLevels {
        period,
        previous,
        current: aggregate(cur_start, current),
    })
}

// ================================================================ zones

/// Largest ATR multiple of a zone width: wider zones would swallow every
/// price (and a multiple near the largest double overflows to infinity).
pub const MAX_ATR_MULTIPLE: f64 = 100.0;

/// How wide a support/resistance zone is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ZoneWidth {
    /// A multiple of the Average True Range at the last bar.
    Atr {
        /// ATR period (1–10 000), e.g. 14.
        #[schemars(range(min = 1, max = 10_000))]
        period: usize,
        /// Multiple of the ATR, above 0 and at most 100 (e.g. 0.5).
        #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_ATR_MULTIPLE))]
        multiple: f64,
    },
    /// A percentage of the price.
    Percent {
        /// Percentage, above 0 and at most 10 (e.g. 0.1).
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 10))]
        percent: f64,
    },
}

/// Settings of the zone clustering.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ZoneConfig {
    /// Swing window (bars each side), 1 to 500; default 5.
    pub swing_length: usize,
    /// Zone width; default 0.5 × ATR(14).
    pub width: ZoneWidth,
    /// Fewest touches (swings) a zone needs; default 1.
    pub min_touches: usize,
    /// Most zones returned, nearest to the price first; default 10.
    pub max_zones: usize,
}

impl Default for ZoneConfig {
    fn default() -> Self {
        Self {
            swing_length: 5,
            width: ZoneWidth::Atr {
                period: 14,
                multiple: 0.5,
            },
            min_touches: 1,
            max_zones: 10,
        }
    }
}

/// Where a zone lies relative to the price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ZoneRole {
    /// Below the price.
    Support,
    /// Above the price.
    Resistance,
    /// The price is inside the zone.
    ContainsPrice,
}

/// A support or resistance zone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Zone {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Mean price of its swings.
    pub level: f64,
    /// `support` (below the price), `resistance` (above) or `contains_price`.
    pub role: ZoneRole,
    /// Confirmed swings in the zone (touches).
    pub touches: usize,
    /// Of which swing highs.
    pub swing_highs: usize,
    /// Of which swing lows (both kinds: a level that changed role).
    pub swing_lows: usize,
    /// Time of the earliest swing bar.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub first_touch: UnixMs,
    /// Time of the latest swing bar (the last touch).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub last_touch: UnixMs,
    /// Distance from the price to the zone's nearest edge (0 inside).
    pub distance: f64,
}

/// Result of [`sr_zones`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Zones {
    /// The reference price (last close, unless given).
    pub price: f64,
    /// Zone width used, price units.
    pub width: f64,
    /// Swings found.
    pub swings: usize,
    /// Zones, nearest to the price first.
    pub zones: Vec<Zone>,
}

fn zone_width(bars: &[Bar], width: ZoneWidth, price: f64) -> Result<f64, CoreError> {
    match width {
        ZoneWidth::Atr { period, multiple } => {
            if !(multiple.is_finite() && multiple > 0.0 && multiple <= MAX_ATR_MULTIPLE) {
                return Err(CoreError::param(
                    "width.multiple",
                    format!("must be above 0 and at most {MAX_ATR_MULTIPLE}"),
                ));
            }
            let atr = AverageTrueRange::new(period)?.over(bars)?;
            let last = atr.last().copied().flatten().ok_or_else(|| {
                CoreError::InvalidInput(format!("too few bars for ATR({period}): need at least {}", period + 1))
            })?;
            Ok(last * multiple)
        }
        ZoneWidth::Percent { percent } => {
            if !(percent.is_finite() && percent > 0.0 && percent <= 10.0) {
                return Err(CoreError::param("width.percent", "must be above 0 and at most 10"));
            }
            Ok(price * percent / 100.0)
        }
    }
}

/// Support and resistance zones from the confirmed swings of `bars`, around
/// `price` (the last close when `None`).
///
/// # Errors
/// Invalid settings, malformed bars, too few bars for the swing window or the ATR.
pub fn sr_zones(bars: &[Bar], config: &ZoneConfig, price: Option<f64>) -> Result<Zones, CoreError> {
    if !(1..=MAX_ZONE_SWING_LENGTH).contains(&config.swing_length) {
        return Err(CoreError::param(
            "swing_length",
            format!("must be between 1 and {MAX_ZONE_SWING_LENGTH}"),
        ));
    }
    if config.max_zones == 0 {
        return Err(CoreError::param("max_zones", "must be at least 1"));
    }
    check_bars(bars)?;
    let price = match price {
        Some(p) if p.is_finite() && p > 0.0 => p,
        Some(_) => return Err(CoreError::param("price", "must be a finite number above 0")),
        None => bars
            .last()
            .map(|b| b.close)
            .ok_or_else(|| CoreError::InvalidInput("no bars".into()))?,
    };
    let width = zone_width(bars, config.width, price)?;
    let cfg = StructureConfig {
        swing_length: config.swing_length,
        fvg: None,
        order_blocks: None,
        liquidity: None,
        bos_choch: None,
    };
    if bars.len() < cfg.min_bars() {
        return Err(CoreError::InvalidInput(format!(
            "{} bars are too few for swings of length {}: need at least {}",
            bars.len(),
            config.swing_length,
            cfg.min_bars()
        )));
    }
    let mut swings: Vec<(f64, SwingKind, UnixMs)> = structure::detect(bars, &cfg)?
        .into_iter()
        .filter_map(|e| match e {
            StructureEvent::Swing(s) => Some((s.level, s.kind, s.time)),
            _ => None,
        })
        .collect();
    swings.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
    let n_swings = swings.len();

    let mut zones = Vec::new();
    let mut i = 0;
    while i < swings.len() {
        let start = swings[i].0;
        let mut j = i;
        while j < swings.len() && swings[j].0 - start <= width {
            j += 1;
        }
        let group = &swings[i..j];
        i = j;
        if group.len() < config.min_touches {
            continue;
        }
        let (lo, hi) = (group[0].0, group[group.len() - 1].0);
        let mid = (lo + hi) / 2.0;
        let (low, high) = if hi - lo < width {
            (mid - width / 2.0, mid + width / 2.0)
        } else {
            (lo, hi)
        };
        let (role, distance) = if price < low {
            (ZoneRole::Resistance, low - price)
        } else if price > high {
            (ZoneRole::Support, price - high)
        } else {
            (ZoneRole::ContainsPrice, 0.0)
        };
        zones.push(Zone {
            low,
            high,
            level: group.iter().map(|s| s.0).sum::<f64>() / group.len() as f64,
            role,
            touches: group.len(),
            swing_highs: group.iter().filter(|s| s.1 == SwingKind::High).count(),
            swing_lows: group.iter().filter(|s| s.1 == SwingKind::Low).count(),
            first_touch: group.iter().map(|s| s.2).min().unwrap_or_default(),
            last_touch: group.iter().map(|s| s.2).max().unwrap_or_default(),
            distance,
        });
    }
    zones.sort_by(|a, b| a.distance.total_cmp(&b.distance));
    zones.truncate(config.max_zones);
    Ok(Zones {
        price,
        width,
        swings: n_swings,
        zones,
    })
}

// ================================================================ round numbers

/// Whether a round number is a "00" or a "50" level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoundKind {
    /// A multiple of the step ("00").
    Major,
    /// Halfway between two majors ("50").
    Half,
}

/// A round-number level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundLevel {
    /// Price.
    pub price: f64,
    /// "00" or "50".
    pub kind: RoundKind,
    /// `price − reference price` (positive above).
    pub distance: f64,
}

/// Round numbers around a price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundNumbers {
    /// The "00" step used.
    pub step: f64,
    /// Levels, ascending: `count` below and `count` above the price (a level equal to the price counts as above).
    pub levels: Vec<RoundLevel>,
}

/// Largest swing window of [`sr_zones`].
pub const MAX_ZONE_SWING_LENGTH: usize = 500;

/// The default "00" step for a symbol with `digits` decimals: `10^(3 − digits)`.
pub fn round_step(digits: u32) -> f64 {
    10f64.powi(3 - digits.min(12) as i32)
}

/// `count` round numbers ("00" and "50" levels) below and above `price`.
/// `step` overrides the "00" step (default [`round_step`]).
///
/// # Errors
/// A non-positive or non-finite price or step, or a count of 0 or above 50.
pub fn round_numbers(price: f64, digits: u32, count: usize, step: Option<f64>) -> Result<RoundNumbers, CoreError> {
    if !(price.is_finite() && price > 0.0) {
        return Err(CoreError::param("price", "must be a finite number above 0"));
    }
    if !(1..=50).contains(&count) {
        return Err(CoreError::param("count", "must be between 1 and 50"));
    }
    let step = match step {
        Some(s) if s.is_finite() && s > 0.0 => s,
        Some(_) => return Err(CoreError::param("step", "must be a finite number above 0")),
        None => round_step(digits),
    };
    let scale = 10f64.powi(digits.min(12) as i32);
    // A step below one point (the price's precision) is one point.
    let step = step.max(1.0 / scale);
    let half = step / 2.0;
    let first = (price / half).ceil();
    // Level indices must stay exact integers, with room for `count` either side.
    if first > 2f64.powi(52) {
        return Err(CoreError::param("step", "is too small for the price"));
    }
    let k0 = first as i64; // first level at or above the price
    let mut levels = Vec::with_capacity(2 * count);
    for k in (k0 - count as i64)..(k0 + count as i64) {
        if k < 0 {
            continue;
        }
        let p = ((k as f64 * half) * scale).round() / scale;
        levels.push(RoundLevel {
            price: p,
            kind: if k % 2 == 0 { RoundKind::Major } else { RoundKind::Half },
            distance: p - price,
        });
    }
    Ok(RoundNumbers { step, levels })
}

// ================================================================ all together

/// Settings of [`key_levels`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct KeyLevelsConfig {
    /// Period whose previous high/low/close gives the pivots; default `day`.
    pub pivot_period: LevelPeriod,
    /// Support and resistance zone settings.
    pub zones: ZoneConfig,
    /// Round numbers each side of the price; default 2.
    pub round_count: usize,
    /// "00" step of the round numbers; default `10^(3 − digits)`.
    pub round_step: Option<f64>,
}

impl Default for KeyLevelsConfig {
    fn default() -> Self {
        Self {
            pivot_period: LevelPeriod::Day,
            zones: ZoneConfig::default(),
            round_count: 2,
            round_step: None,
        }
    }
}

/// Inputs of [`key_levels`].
#[derive(Debug, Clone, Copy)]
pub struct KeyLevelsInput<'a> {
    /// Bars covering at least the previous month (H1 or D1), for the previous periods.
    pub period_bars: &'a [Bar],
    /// Bars for the swing zones (any timeframe).
    pub zone_bars: &'a [Bar],
    /// Reference price (e.g. the bid).
    pub price: f64,
    /// Decimal digits of the symbol's price.
    pub digits: u32,
    /// The current instant, unix ms.
    pub now: UnixMs,
    /// Settings.
    pub config: KeyLevelsConfig,
}

/// Every key level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeyLevels {
    /// Reference price.
    pub price: f64,
    /// Previous and current day, week and month.
    pub periods: Vec<PeriodLevels>,
    /// Pivot points of every method from the previous `pivot_period` (empty when it has no bars).
    pub pivots: Vec<PivotLevels>,
    /// Support and resistance zones (`None` when they could not be computed; see `notes`).
    pub zones: Option<Zones>,
    /// Round numbers near the price.
    pub round_numbers: RoundNumbers,
    /// What could not be computed and why.
    pub notes: Vec<String>,
}

/// Pivots, previous periods, zones and round numbers in one call. A part that
/// cannot be computed (too few bars) is left out with a note.
///
/// # Errors
/// Malformed bars or an invalid price or setting.
pub fn key_levels(input: &KeyLevelsInput<'_>) -> Result<KeyLevels, CoreError> {
    let mut notes = Vec::new();
    check_bars(input.zone_bars)?;
    let periods = [LevelPeriod::Day, LevelPeriod::Week, LevelPeriod::Month]
        .into_iter()
        .map(|p| period_levels(input.period_bars, p, input.now))
        .collect::<Result<Vec<_>, _>>()?;
    let pivot_src = periods.iter().find(|p| p.period == input.config.pivot_period);
    let pivots = match pivot_src.and_then(|p| p.previous.as_ref().map(|prev| (prev, p.current.as_ref()))) {
        Some((prev, cur)) => PivotMethod::ALL
            .iter()
            .map(|m| pivot_points(*m, &prev.hlc(), cur.map(|c| c.open)))
            .collect::<Result<Vec<_>, _>>()?,
        None => {
            notes.push("no bars in a previous period: no pivot points".into());
            Vec::new()
        }
    };
    let zones = match sr_zones(input.zone_bars, &input.config.zones, Some(input.price)) {
        Ok(z) => Some(z),
        Err(CoreError::InvalidInput(why)) => {
            notes.push(format!("no support/resistance zones: {why}"));
            None
        }
        Err(e) => return Err(e),
    };
    let round = round_numbers(
        input.price,
        input.digits,
        input.config.round_count,
        input.config.round_step,
    )?;
    Ok(KeyLevels {
        price: input.price,
        periods,
        pivots,
        zones,
        round_numbers: round,
        notes,
    })
}

#[cfg(test)]
mod tests;
