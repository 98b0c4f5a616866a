//! A structured, sourced explanation of the current setup of a bar series.
//!
//! [`explain`] runs the existing computations of core on the same bars —
//! the volatility regime ([`crate::regime::volatility_regime`]), the swing
//! structure ([`crate::regime::trend_state`]), the structure events
//! ([`crate::structure::detect`]: fair value gaps, order blocks, liquidity
//! pools) and the Fibonacci levels of the last swing leg
//! ([`crate::fibonacci::from_bars`]) — and assembles:
//!
//! - the trend state with the last BOS/CHoCH and its bar times;
//! - the regime with its measured numbers;
//! - the nearest **unmitigated** fair value gap and order block and the
//!   nearest **unswept** liquidity pool above and below the last close (and
//!   one the close is inside, if any), with distances in price and in ATR;
//! - the Fibonacci levels of the last leg and how far the close has retraced
//!   it;
//! - a list of [`Observation`]s: one sentence each, with the exact values it
//!   was written from (`sources`). **Every number in a sentence is one of its
//!   sources, rounded for display** (a test checks it on real data);
//! - a bias (`bullish | bearish | neutral`) decided by [`decide_bias`] from
//!   the structure and directional-index observations;
//! - caveats (forming bar, few bars, indicator warm-up, choppy regime, ...).
//!
//! Nothing is inferred beyond those computations; the rules are documented in
//! `docs/coaching.md`. Pure and deterministic: the same bars and parameters
//! give the same report.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fibonacci::{self, FibLevel, FibLevels, LegDirection};
use crate::regime::{
    self, ADX_TRENDING, ATR_CHANGE_BARS, ATR_RISE_EXPANDING_PCT, BANDWIDTH_COMPRESSED_PCT, BANDWIDTH_EXPANDING_PCT,
    ER_TRENDING, LastBreak, Regime, RegimeConfig, RegimeMetrics, RegimeReport, SwingLabel, SwingPoint, Trend,
    TrendReport,
};
use crate::structure::{
    self, BosChochConfig, BreakKind, Direction, FvgConfig, LiquidityConfig, OrderBlockConfig, StructureConfig,
    StructureEvent, SwingKind,
};
use crate::time::{UnixMs, to_iso};
use crate::{Bar, CoreError, Side};

/// Default swing window of [`SetupParams`].
pub const DEFAULT_SWING_LENGTH: usize = 10;
/// Below this many bars the report carries the `few_bars` caveat.
pub const FEW_BARS: usize = 300;
/// Below this many confirmed swings the report carries the `few_swings` caveat.
pub const FEW_SWINGS: usize = 4;

/// Parameters of [`explain`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetupParams {
    /// Swing window of the structure, zones and Fibonacci leg (as in `get_market_structure`).
    pub swing_length: usize,
    /// Side the caller is interested in: adds observations on that side.
    pub side: Option<Side>,
}

impl Default for SetupParams {
    fn default() -> Self {
        Self {
            swing_length: DEFAULT_SWING_LENGTH,
            side: None,
        }
    }
}

/// A value an observation was written from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SourceValue {
    /// A number, unrounded.
    Number(f64),
    /// A label or an ISO 8601 time.
    Text(String),
}

/// One source of an observation: the computation and its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    /// The computation (`regime.adx`, `structure.trend`, `fvg.top`, `threshold.adx_trending`, ...).
    pub source: String,
    /// Its exact value.
    pub value: SourceValue,
}

/// One sentence of the explanation with its sources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Observation {
    /// Stable identifier (`structure.trend`, `regime`, `fvg.above`, `bias`, ...).
    pub id: String,
    /// The sentence. Every number in it is one of `sources`, rounded for display.
    pub text: String,
    /// The values the sentence was written from.
    pub sources: Vec<Source>,
}

/// A swing with ISO times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SwingView {
    /// Price of the swing.
    pub price: f64,
    /// Open time of the swing bar.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Open time of the bar at whose close the swing was confirmed.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub confirmed_time: UnixMs,
}

/// Swing structure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StructureView {
    /// Swing window used.
    pub swing_length: usize,
    /// `bullish`, `bearish` or `ranging` (rules of `get_market_structure`).
    pub trend: Trend,
    /// The rule that decided the trend.
    pub rule: String,
    /// Last swing high vs the previous one.
    pub high_label: Option<SwingLabel>,
    /// Last swing low vs the previous one.
    pub low_label: Option<SwingLabel>,
    /// Last confirmed swing high.
    pub last_swing_high: Option<SwingView>,
    /// Last confirmed swing low.
    pub last_swing_low: Option<SwingView>,
    /// Last BOS / CHoCH.
    pub last_break: Option<LastBreak>,
    /// Confirmed swings (after supersession).
    pub swings: usize,
}

/// Volatility regime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegimeView {
    /// `compressed`, `expanding`, `trending` or `choppy`.
    pub regime: Regime,
    /// The rule that matched.
    pub rule: String,
    /// The measured numbers.
    pub metrics: RegimeMetrics,
}

/// What a zone is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ZoneKind {
    /// Fair value gap (three-bar imbalance), not yet traded back into.
    FairValueGap,
    /// Order block, not yet traded through.
    OrderBlock,
    /// Liquidity pool (equal highs or lows), not yet swept.
    LiquidityPool,
}

/// Direction of a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ZoneDirection {
    /// Bullish gap or block.
    Bullish,
    /// Bearish gap or block.
    Bearish,
    /// Equal highs: buy-side liquidity.
    BuySide,
    /// Equal lows: sell-side liquidity.
    SellSide,
}

impl ZoneDirection {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Bullish => "bullish",
            Self::Bearish => "bearish",
            Self::BuySide => "buy-side",
            Self::SellSide => "sell-side",
        }
    }
}

/// Where a zone lies relative to the last close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// Entirely above the close.
    Above,
    /// Entirely below the close.
    Below,
    /// The close is inside it (or on its level).
    AtPrice,
}

/// An open zone near the price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Zone {
    /// Gap, block or pool.
    pub kind: ZoneKind,
    /// Its direction.
    pub direction: ZoneDirection,
    /// Upper bound (a pool's level).
    pub top: f64,
    /// Lower bound (a pool's level).
    pub bottom: f64,
    /// Open time of the bar the zone is about (gap middle bar, block candle, pool anchor).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Open time of the bar at whose close the zone became known.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub confirmed_time: UnixMs,
    /// Swings in a pool (null for gaps and blocks).
    pub members: Option<usize>,
    /// Above, below or at the close.
    pub position: Position,
    /// Distance from the close to the nearest edge, price units (0 when at price).
    pub distance: f64,
    /// `distance / ATR` (null when the ATR is 0).
    pub distance_atr: Option<f64>,
}

/// The nearest open zones of one family.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct NearbyZones {
    /// Open (unmitigated / unswept) zones of this family in the bars analysed.
    pub open: usize,
    /// Nearest one entirely above the close.
    pub above: Option<Zone>,
    /// Nearest one entirely below the close.
    pub below: Option<Zone>,
    /// The most recent one the close is inside.
    pub at_price: Option<Zone>,
}

/// Key levels near the price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Levels {
    /// Unmitigated fair value gaps.
    pub fair_value_gaps: NearbyZones,
    /// Unmitigated order blocks.
    pub order_blocks: NearbyZones,
    /// Unswept liquidity pools.
    pub liquidity_pools: NearbyZones,
}

/// Fibonacci levels of the last swing leg.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FibView {
    /// `up` (low then high) or `down`.
    pub direction: LegDirection,
    /// Swing high of the leg.
    pub high: SwingView,
    /// Swing low of the leg.
    pub low: SwingView,
    /// `high − low`.
    pub range: f64,
    /// Retracements 0.236 … 0.786.
    pub retracements: Vec<FibLevel>,
    /// Extensions 1.272, 1.618, 2.618.
    pub extensions: Vec<FibLevel>,
    /// How much of the leg the close has given back, percent: up leg `(high − close) / range`,
    /// down leg `(close − low) / range` (null for a zero range). Below 0 or above 100 means
    /// the close is beyond the leg.
    pub retracement_pct: Option<f64>,
}

/// Direction the setup leans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SetupBias {
    /// Structure bullish, not contradicted by the directional index.
    Bullish,
    /// Structure bearish, not contradicted by the directional index.
    Bearish,
    /// Ranging structure, or a structure the directional index contradicts.
    Neutral,
}

impl SetupBias {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Bullish => "bullish",
            Self::Bearish => "bearish",
            Self::Neutral => "neutral",
        }
    }
}

/// The side of interest against the bias.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SideView {
    /// `buy` or `sell`.
    pub side: Side,
    /// True when the side agrees with a directional bias, false when it opposes it, null when the bias is neutral.
    pub with_bias: Option<bool>,
    /// Nearest open zone in the trade's direction (above for a buy, below for a sell), any family.
    pub ahead: Option<Zone>,
    /// Nearest open zone against the trade's direction (below for a buy, above for a sell), any family.
    pub behind: Option<Zone>,
}

/// A limit of the analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Caveat {
    /// `forming_bar`, `few_bars`, `indicator_warm_up`, `few_swings`, `no_break`, `regime_choppy`,
    /// `bias_conflict`, `no_fibonacci_leg`, `zero_atr`.
    pub code: String,
    /// Explanation.
    pub message: String,
}

/// Result of [`explain`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetupReport {
    /// Bars analysed.
    pub bars: usize,
    /// Open time of the first bar.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub from: UnixMs,
    /// Open time of the last bar: everything is as of its close.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub to: UnixMs,
    /// Close of the last bar: the price all distances are measured from.
    pub price: f64,
    /// Decimals the prices are written with in the sentences (from the bars).
    pub price_decimals: usize,
    /// ATR(14) at the last bar, the unit of `distance_atr`.
    pub atr: f64,
    /// Swing structure and the last BOS / CHoCH.
    pub structure: StructureView,
    /// Volatility regime with its numbers.
    pub regime: RegimeView,
    /// Nearest open gaps, blocks and liquidity pools.
    pub levels: Levels,
    /// Fibonacci levels of the last swing leg (null without a confirmed high and low).
    pub fibonacci: Option<FibView>,
    /// Sentences, each with its sources; the last one states the bias.
    pub observations: Vec<Observation>,
    /// `bullish`, `bearish` or `neutral`.
    pub bias: SetupBias,
    /// The bias rule.
    pub bias_rule: String,
    /// Ids of the observations the bias was decided from.
    pub bias_from: Vec<String>,
    /// The side of interest, when one was given.
    pub side: Option<SideView>,
    /// Limits of this analysis.
    pub caveats: Vec<Caveat>,
}

/// The bias rule, as text.
pub const BIAS_RULE: &str = "ranging structure -> neutral; bullish (bearish) structure -> bullish (bearish) unless ADX >= 25 with -DI above +DI (+DI above -DI), which is a conflict -> neutral";

/// The bias from the structural trend and the directional index: a ranging
/// structure is neutral; a bullish structure is bullish unless
/// `adx >= ADX_TRENDING` and `minus_di > plus_di` (a conflict, neutral);
/// bearish mirrors it. Returns the bias and whether a conflict made it neutral.
pub fn decide_bias(trend: Trend, adx: f64, plus_di: f64, minus_di: f64) -> (SetupBias, bool) {
    let strong = adx >= ADX_TRENDING;
    match trend {
        Trend::Ranging => (SetupBias::Neutral, false),
        Trend::Bullish if strong && minus_di > plus_di => (SetupBias::Neutral, true),
        Trend::Bullish => (SetupBias::Bullish, false),
        Trend::Bearish if strong && plus_di > minus_di => (SetupBias::Neutral, true),
        Trend::Bearish => (SetupBias::Bearish, false),
    }
}

/// Builds one observation: each value written into the sentence is recorded as a source.
struct Obs {
    id: &'static str,
    sources: Vec<Source>,
}

impl Obs {
    fn new(id: &'static str) -> Self {
        Self {
            id,
            sources: Vec::new(),
        }
    }

    fn push(&mut self, source: &str, value: SourceValue) {
        if !self.sources.iter().any(|s| s.source == source && s.value == value) {
            self.sources.push(Source {
                source: source.to_owned(),
                value,
            });
        }
    }

    /// Records a number and returns it written with `decimals` decimals.
    fn num(&mut self, source: &str, value: f64, decimals: usize) -> String {
        self.push(source, SourceValue::Number(value));
        format!("{value:.decimals$}")
    }

    /// Records a count and returns it.
    fn count(&mut self, source: &str, value: usize) -> String {
        self.push(source, SourceValue::Number(value as f64));
        value.to_string()
    }

    /// Records a label or time and returns it.
    fn text(&mut self, source: &str, value: impl Into<String>) -> String {
        let value = value.into();
        self.push(source, SourceValue::Text(value.clone()));
        value
    }

    fn done(self, text: String) -> Observation {
        Observation {
            id: self.id.to_owned(),
            text,
            sources: self.sources,
        }
    }
}

/// Decimals needed to write the prices of the last bars exactly (at most 8).
fn price_decimals(bars: &[Bar]) -> usize {
    let tail = &bars[bars.len().saturating_sub(200)..];
    let need = |x: f64| {
        (0..=8usize)
            .find(|d| {
                let p = 10f64.powi(*d as i32);
                ((x * p).round() / p - x).abs() <= 1e-9 * x.abs().max(1.0)
            })
            .unwrap_or(8)
    };
    tail.iter()
        .flat_map(|b| [b.open, b.high, b.low, b.close])
        .map(need)
        .max()
        .unwrap_or(0)
}

/// Open time of bar `index`. The indices come from detection on `bars`, so
/// they are always inside; one outside reads as the last bar.
fn time_at(bars: &[Bar], index: usize) -> UnixMs {
    bars.get(index).or(bars.last()).map_or(0, |b| b.time)
}

fn swing_view(p: &SwingPoint, bars: &[Bar]) -> SwingView {
    SwingView {
        price: p.price,
        time: p.time,
        confirmed_time: time_at(bars, p.confirmed_at),
    }
}

fn place(top: f64, bottom: f64, price: f64, atr: f64) -> (Position, f64, Option<f64>) {
    let (position, distance) = if bottom > price {
        (Position::Above, bottom - price)
    } else if top < price {
        (Position::Below, price - top)
    } else {
        (Position::AtPrice, 0.0)
    };
    let in_atr = (atr > 0.0).then(|| distance / atr);
    (position, distance, in_atr)
}

/// Open zones of each family from the event list (in emission order).
fn open_zones(events: &[StructureEvent], bars: &[Bar], price: f64, atr: f64) -> [Vec<(usize, Zone)>; 3] {
    type Key = (u8, usize);
    let mut gaps: BTreeMap<Key, Zone> = BTreeMap::new();
    let mut blocks: BTreeMap<Key, Zone> = BTreeMap::new();
    let mut pools: BTreeMap<Key, Zone> = BTreeMap::new();
    let mut closed: BTreeSet<(u8, u8, usize)> = BTreeSet::new();
    let dir_key = |direction: Direction| u8::from(direction == Direction::Bearish);
    let kind_key = |kind: SwingKind| u8::from(kind == SwingKind::Low);
    let zone = |kind, direction, top: f64, bottom: f64, index: usize, confirmed: usize, members| {
        let (position, distance, distance_atr) = place(top, bottom, price, atr);
        Zone {
            kind,
            direction,
            top,
            bottom,
            time: time_at(bars, index),
            confirmed_time: time_at(bars, confirmed),
            members,
            position,
            distance,
            distance_atr,
        }
    };
    for event in events {
        match event {
            StructureEvent::FairValueGap(gap) => {
                if let Some(old) = gap.supersedes {
                    gaps.remove(&(dir_key(gap.direction), old));
                }
                let opened = zone(
                    ZoneKind::FairValueGap,
                    zone_direction(gap.direction),
                    gap.top,
                    gap.bottom,
                    gap.index,
                    gap.confirmed_at,
                    None,
                );
                gaps.insert((dir_key(gap.direction), gap.index), opened);
            }
            StructureEvent::FvgMitigated(mitigated) => {
                gaps.remove(&(dir_key(mitigated.direction), mitigated.index));
            }
            StructureEvent::OrderBlock(block) if !closed.contains(&(1, dir_key(block.direction), block.index)) => {
                let opened = zone(
                    ZoneKind::OrderBlock,
                    zone_direction(block.direction),
                    block.top,
                    block.bottom,
                    block.index,
                    block.confirmed_at,
                    None,
                );
                blocks.insert((dir_key(block.direction), block.index), opened);
            }
            StructureEvent::OrderBlockMitigated(mitigated) => {
                blocks.remove(&(dir_key(mitigated.direction), mitigated.index));
                closed.insert((1, dir_key(mitigated.direction), mitigated.index));
            }
            StructureEvent::LiquidityPool(pool) if !closed.contains(&(2, kind_key(pool.kind), pool.index)) => {
                let direction = match pool.kind {
                    SwingKind::High => ZoneDirection::BuySide,
                    SwingKind::Low => ZoneDirection::SellSide,
                };
                let opened = zone(
                    ZoneKind::LiquidityPool,
                    direction,
                    pool.level,
                    pool.level,
                    pool.index,
                    pool.confirmed_at,
                    Some(pool.members.len()),
                );
                pools.insert((kind_key(pool.kind), pool.index), opened);
            }
            StructureEvent::LiquiditySwept(swept) => {
                pools.remove(&(kind_key(swept.kind), swept.index));
                closed.insert((2, kind_key(swept.kind), swept.index));
            }
            _ => {}
        }
    }
    [by_index(gaps), by_index(blocks), by_index(pools)]
}

/// The zones of one family keyed by their bar index, in key order.
fn by_index(zones: BTreeMap<(u8, usize), Zone>) -> Vec<(usize, Zone)> {
    zones.into_iter().map(|((_, index), zone)| (index, zone)).collect()
}

fn zone_direction(direction: Direction) -> ZoneDirection {
    match direction {
        Direction::Bullish => ZoneDirection::Bullish,
        Direction::Bearish => ZoneDirection::Bearish,
    }
}

/// Nearest zones above and below (ties: the most recent), and the most recent one at price.
fn nearby(zones: &[(usize, Zone)]) -> NearbyZones {
    let pick = |pos: Position| {
        zones
            .iter()
            .filter(|(_, z)| z.position == pos)
            .min_by(|(ia, a), (ib, b)| a.distance.total_cmp(&b.distance).then(ib.cmp(ia)))
            .map(|(_, z)| z.clone())
    };
    NearbyZones {
        open: zones.len(),
        above: pick(Position::Above),
        below: pick(Position::Below),
        at_price: pick(Position::AtPrice),
    }
}

fn label_name(l: SwingLabel) -> &'static str {
    match l {
        SwingLabel::HH => "higher high (HH)",
        SwingLabel::LH => "lower high (LH)",
        SwingLabel::HL => "higher low (HL)",
        SwingLabel::LL => "lower low (LL)",
    }
}

fn label_code(l: SwingLabel) -> &'static str {
    match l {
        SwingLabel::HH => "HH",
        SwingLabel::LH => "LH",
        SwingLabel::HL => "HL",
        SwingLabel::LL => "LL",
    }
}

fn break_name(k: BreakKind) -> &'static str {
    match k {
        BreakKind::Bos => "break of structure (BOS)",
        BreakKind::Choch => "change of character (CHoCH)",
    }
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Bullish => "bullish",
        Direction::Bearish => "bearish",
    }
}

/// Context shared by the sentence writers.
struct Ctx {
    price: f64,
    pd: usize,
    bars: usize,
}

fn zone_family(kind: ZoneKind) -> (&'static str, &'static str) {
    match kind {
        ZoneKind::FairValueGap => ("fvg", "fair value gap"),
        ZoneKind::OrderBlock => ("order_block", "order block"),
        ZoneKind::LiquidityPool => ("liquidity", "liquidity pool"),
    }
}

/// Writes a zone into `o` and returns the phrase describing it.
fn zone_phrase(o: &mut Obs, z: &Zone, c: &Ctx) -> String {
    let (prefix, name) = zone_family(z.kind);
    let time = o.text(&format!("{prefix}.time"), to_iso(z.time));
    let dir = z.direction.as_str();
    let what = match z.kind {
        ZoneKind::LiquidityPool => {
            let level = o.num(&format!("{prefix}.level"), z.top, c.pd);
            let members = o.count(&format!("{prefix}.members"), z.members.unwrap_or(0));
            let equal = if z.direction == ZoneDirection::BuySide {
                "equal highs"
            } else {
                "equal lows"
            };
            format!("{dir} liquidity ({members} {equal}, first swing {time}) at {level}")
        }
        _ => {
            let bottom = o.num(&format!("{prefix}.bottom"), z.bottom, c.pd);
            let top = o.num(&format!("{prefix}.top"), z.top, c.pd);
            format!("{dir} {name} from {bottom} to {top} (formed {time})")
        }
    };
    let close = o.num("price.close", c.price, c.pd);
    match z.position {
        Position::AtPrice => format!("{what}, with the close {close} inside it"),
        Position::Above | Position::Below => {
            let side = if z.position == Position::Above {
                "above"
            } else {
                "below"
            };
            let dist = o.num(&format!("{prefix}.distance"), z.distance, c.pd);
            let atr = z
                .distance_atr
                .map(|a| format!(" ({} ATR)", o.num(&format!("{prefix}.distance_atr"), a, 2)))
                .unwrap_or_default();
            format!("{what}, {dist}{atr} {side} the close {close}")
        }
    }
}

fn zone_observations(kind: ZoneKind, n: &NearbyZones, c: &Ctx, out: &mut Vec<Observation>) {
    let (prefix, name) = zone_family(kind);
    let open_word = if kind == ZoneKind::LiquidityPool {
        "unswept"
    } else {
        "unmitigated"
    };
    for (slot, id, side) in [(&n.above, "above", "above"), (&n.below, "below", "below")] {
        let id: &'static str = match (prefix, id) {
            ("fvg", "above") => "fvg.above",
            ("fvg", _) => "fvg.below",
            ("order_block", "above") => "order_block.above",
            ("order_block", _) => "order_block.below",
            (_, "above") => "liquidity.above",
            _ => "liquidity.below",
        };
        let mut o = Obs::new(id);
        let text = match slot {
            Some(z) => {
                let phrase = zone_phrase(&mut o, z, c);
                format!("Nearest {open_word} {name} {side} the close: {phrase}.")
            }
            None => {
                let bars = o.count("bars", c.bars);
                format!("No {open_word} {name} lies {side} the close in the {bars} bars analysed.")
            }
        };
        out.push(o.done(text));
    }
    if let Some(z) = &n.at_price {
        let id: &'static str = match prefix {
            "fvg" => "fvg.at_price",
            "order_block" => "order_block.at_price",
            _ => "liquidity.at_price",
        };
        let mut o = Obs::new(id);
        let phrase = zone_phrase(&mut o, z, c);
        out.push(o.done(format!("The close is at an {open_word} {phrase}.")));
    }
}

/// Explains the setup at the last bar of `bars` (see the module documentation).
///
/// # Errors
/// [`CoreError::InvalidParameter`] for a bad `swing_length`;
/// [`CoreError::InvalidInput`] for an invalid series or fewer bars than the
/// regime (48) and the structure (`3 · swing_length`) need.
pub fn explain(bars: &[Bar], params: &SetupParams) -> Result<SetupReport, CoreError> {
    let swing_length = params.swing_length;
    let analysis = Analysis::of(bars, swing_length)?;
    let (Some(first), Some(last)) = (bars.first(), bars.last()) else {
        return Err(CoreError::InvalidInput("empty bar series".into()));
    };
    let metrics = &analysis.regime.metrics;
    let price = last.close;
    let atr = metrics.atr;
    let pd = price_decimals(bars);
    let ctx = Ctx {
        price,
        pd,
        bars: bars.len(),
    };

    let [gaps, blocks, pools] = open_zones(&analysis.events, bars, price, atr);
    let levels = Levels {
        fair_value_gaps: nearby(&gaps),
        order_blocks: nearby(&blocks),
        liquidity_pools: nearby(&pools),
    };
    let structure_view = structure_view(&analysis.trend, swing_length, bars);
    let fib_view = analysis.fib.as_ref().map(|fib| fib_view(fib, bars, price));
    let (bias, conflict) = decide_bias(analysis.trend.trend, metrics.adx, metrics.plus_di, metrics.minus_di);
    let side_view = params.side.map(|side| side_view(side, bias, &levels));

    let mut observations = vec![
        structure_trend_observation(&analysis.trend, &structure_view, swing_length, pd),
        last_break_observation(&structure_view, bars.len(), pd),
        regime_observation(&analysis.regime),
        regime_direction_observation(metrics),
        volatility_observation(metrics, pd),
    ];
    zone_observations(ZoneKind::FairValueGap, &levels.fair_value_gaps, &ctx, &mut observations);
    zone_observations(ZoneKind::OrderBlock, &levels.order_blocks, &ctx, &mut observations);
    zone_observations(
        ZoneKind::LiquidityPool,
        &levels.liquidity_pools,
        &ctx,
        &mut observations,
    );
    observations.push(fibonacci_observation(
        analysis.fib.as_ref().zip(fib_view.as_ref()),
        swing_length,
        &ctx,
    ));
    if let Some(side_view) = &side_view {
        side_observations(side_view, bias, &ctx, &mut observations);
    }
    observations.push(bias_observation(bias, analysis.trend.trend, conflict, metrics));
    let caveats = caveats(&analysis, bars, swing_length, conflict);

    Ok(SetupReport {
        bars: bars.len(),
        from: first.time,
        to: last.time,
        price,
        price_decimals: pd,
        atr,
        structure: structure_view,
        regime: RegimeView {
            regime: analysis.regime.regime,
            rule: analysis.regime.rule.clone(),
            metrics: analysis.regime.metrics.clone(),
        },
        levels,
        fibonacci: fib_view,
        observations,
        bias,
        bias_rule: BIAS_RULE.to_owned(),
        bias_from: vec!["structure.trend".to_owned(), "regime.direction".to_owned()],
        side: side_view,
        caveats,
    })
}

/// What the detectors say about a series: the volatility regime, the swing
/// trend, the structure events and the last Fibonacci leg.
struct Analysis {
    regime_config: RegimeConfig,
    regime: RegimeReport,
    trend: TrendReport,
    events: Vec<StructureEvent>,
    fib: Option<FibLevels>,
}

impl Analysis {
    /// Checks `swing_length` and the series, then runs every detector.
    fn of(bars: &[Bar], swing_length: usize) -> Result<Self, CoreError> {
        let config = StructureConfig {
            swing_length,
            fvg: Some(FvgConfig::default()),
            order_blocks: Some(OrderBlockConfig::default()),
            liquidity: Some(LiquidityConfig::default()),
            bos_choch: Some(BosChochConfig::default()),
        };
        config.validate()?;
        crate::bars::validate_series(bars)?;
        let regime_config = RegimeConfig::default();
        let min = regime_config.min_bars().max(config.min_bars());
        if bars.len() < min {
            return Err(CoreError::InvalidInput(format!(
                "explaining a setup with swing_length {swing_length} needs at least {min} bars; got {}",
                bars.len()
            )));
        }
        if bars.is_empty() {
            return Err(CoreError::InvalidInput("empty bar series".into()));
        }
        let regime = regime::volatility_regime(bars, &regime_config)?;
        let trend = regime::trend_state(bars, swing_length)?;
        let events = structure::detect(bars, &config)?;
        let fib = fibonacci::from_bars(bars, swing_length).ok();
        Ok(Self {
            regime_config,
            regime,
            trend,
            events,
            fib,
        })
    }
}

/// The swing structure as reported: labels, last swings and last break.
fn structure_view(trend: &TrendReport, swing_length: usize, bars: &[Bar]) -> StructureView {
    StructureView {
        swing_length,
        trend: trend.trend,
        rule: trend.rule.clone(),
        high_label: trend.high_label,
        low_label: trend.low_label,
        last_swing_high: trend.last_swing_high.as_ref().map(|point| swing_view(point, bars)),
        last_swing_low: trend.last_swing_low.as_ref().map(|point| swing_view(point, bars)),
        last_break: trend.last_break,
        swings: trend.swings,
    }
}

/// The last Fibonacci leg as reported, with how far the close at `price` has retraced it.
fn fib_view(fib: &FibLevels, bars: &[Bar], price: f64) -> FibView {
    FibView {
        direction: fib.direction,
        high: swing_view(&fib.high, bars),
        low: swing_view(&fib.low, bars),
        range: fib.range,
        retracements: fib.retracements.clone(),
        extensions: fib.extensions.clone(),
        retracement_pct: (fib.range > 0.0).then(|| match fib.direction {
            LegDirection::Up => 100.0 * (fib.high.price - price) / fib.range,
            LegDirection::Down => 100.0 * (price - fib.low.price) / fib.range,
        }),
    }
}

/// For a trade on `side`: whether it is with the bias, and the nearest open
/// zone of any family ahead of it and behind it.
fn side_view(side: Side, bias: SetupBias, levels: &Levels) -> SideView {
    let all: Vec<&Zone> = [&levels.fair_value_gaps, &levels.order_blocks, &levels.liquidity_pools]
        .iter()
        .flat_map(|zones| [zones.above.as_ref(), zones.below.as_ref()])
        .flatten()
        .collect();
    let nearest = |position: Position| {
        all.iter()
            .filter(|zone| zone.position == position)
            .min_by(|a, b| a.distance.total_cmp(&b.distance))
            .map(|zone| (*zone).clone())
    };
    let (ahead, behind) = match side {
        Side::Buy => (nearest(Position::Above), nearest(Position::Below)),
        Side::Sell => (nearest(Position::Below), nearest(Position::Above)),
    };
    let with_bias = match (bias, side) {
        (SetupBias::Neutral, _) => None,
        (SetupBias::Bullish, Side::Buy) | (SetupBias::Bearish, Side::Sell) => Some(true),
        _ => Some(false),
    };
    SideView {
        side,
        with_bias,
        ahead,
        behind,
    }
}

/// `structure.trend`: the swing trend and the labels of the last swings.
fn structure_trend_observation(
    trend: &TrendReport,
    view: &StructureView,
    swing_length: usize,
    pd: usize,
) -> Observation {
    let mut obs = Obs::new("structure.trend");
    let trend_name = obs.text("structure.trend", trend.trend.as_str());
    let swings = obs.count("structure.swings", trend.swings);
    let length = obs.count("structure.swing_length", swing_length);
    let part = |obs: &mut Obs, kind: &str, label: Option<SwingLabel>, view: &Option<SwingView>| match (label, view) {
        (Some(label), Some(swing)) => {
            obs.text(&format!("structure.{kind}_label"), label_code(label));
            let swing_price = obs.num(&format!("structure.last_swing_{kind}"), swing.price, pd);
            let time = obs.text(&format!("structure.last_swing_{kind}_time"), to_iso(swing.time));
            format!(
                "the last swing {kind} {swing_price} ({time}) is a {}",
                label_name(label)
            )
        }
        (None, Some(swing)) => {
            let swing_price = obs.num(&format!("structure.last_swing_{kind}"), swing.price, pd);
            let time = obs.text(&format!("structure.last_swing_{kind}_time"), to_iso(swing.time));
            format!("the only confirmed swing {kind} is {swing_price} ({time})")
        }
        (_, None) => format!("no swing {kind} is confirmed"),
    };
    let high = part(&mut obs, "high", trend.high_label, &view.last_swing_high);
    let low = part(&mut obs, "low", trend.low_label, &view.last_swing_low);
    obs.done(format!(
        "Swing structure is {trend_name} ({swings} confirmed swings, swing length {length}): {high}; {low}."
    ))
}

/// `structure.last_break`: the last BOS or CHoCH, if any.
fn last_break_observation(view: &StructureView, bar_count: usize, pd: usize) -> Observation {
    let mut obs = Obs::new("structure.last_break");
    let text = match &view.last_break {
        Some(last) => {
            let dir = obs.text("structure.last_break.direction", direction_name(last.direction));
            let kind = break_name(last.kind);
            let _ = obs.text(
                "structure.last_break.kind",
                if last.kind == BreakKind::Bos { "bos" } else { "choch" },
            );
            let level = obs.num("structure.last_break.level", last.level, pd);
            let swing_time = obs.text("structure.last_break.swing_time", to_iso(last.swing_time));
            let broken_time = obs.text("structure.last_break.broken_time", to_iso(last.broken_time));
            format!(
                "The last structure break is a {dir} {kind} through {level}, the swing of {swing_time}; the first close beyond it was the bar of {broken_time}."
            )
        }
        None => {
            let analysed = obs.count("bars", bar_count);
            format!("No break of structure or change of character is confirmed in the {analysed} bars analysed.")
        }
    };
    obs.done(text)
}

/// `regime`: the volatility regime and the rule that gave it.
fn regime_observation(report: &RegimeReport) -> Observation {
    let metrics = &report.metrics;
    let mut obs = Obs::new("regime");
    let regime_name = obs.text("regime.regime", report.regime.as_str());
    let text = if metrics.adx >= ADX_TRENDING && metrics.efficiency_ratio >= ER_TRENDING {
        let adx = obs.num("regime.adx", metrics.adx, 1);
        let adx_threshold = obs.num("threshold.adx_trending", ADX_TRENDING, 0);
        let er = obs.num("regime.efficiency_ratio", metrics.efficiency_ratio, 2);
        let er_threshold = obs.num("threshold.efficiency_ratio_trending", ER_TRENDING, 2);
        format!(
            "Volatility regime is {regime_name}: ADX {adx} >= {adx_threshold} and efficiency ratio {er} >= {er_threshold}."
        )
    } else if metrics.bandwidth_percentile >= BANDWIDTH_EXPANDING_PCT {
        let percentile = obs.num("regime.bandwidth_percentile", metrics.bandwidth_percentile, 0);
        let threshold = obs.num("threshold.bandwidth_expanding_percentile", BANDWIDTH_EXPANDING_PCT, 0);
        format!("Volatility regime is {regime_name}: Bollinger bandwidth percentile {percentile} >= {threshold}.")
    } else if metrics.atr_change_pct >= ATR_RISE_EXPANDING_PCT {
        let change = obs.num("regime.atr_change_pct", metrics.atr_change_pct, 1);
        let change_bars = obs.count("threshold.atr_change_bars", ATR_CHANGE_BARS);
        let threshold = obs.num("threshold.atr_rise_expanding_pct", ATR_RISE_EXPANDING_PCT, 0);
        format!(
            "Volatility regime is {regime_name}: ATR rose {change}% over {change_bars} bars (threshold {threshold}%)."
        )
    } else if metrics.bandwidth_percentile <= BANDWIDTH_COMPRESSED_PCT {
        let percentile = obs.num("regime.bandwidth_percentile", metrics.bandwidth_percentile, 0);
        let threshold = obs.num("threshold.bandwidth_compressed_percentile", BANDWIDTH_COMPRESSED_PCT, 0);
        format!(
            "Volatility regime is {regime_name}: Bollinger bandwidth percentile {percentile} <= {threshold}, a squeeze."
        )
    } else {
        let adx = obs.num("regime.adx", metrics.adx, 1);
        let er = obs.num("regime.efficiency_ratio", metrics.efficiency_ratio, 2);
        let percentile = obs.num("regime.bandwidth_percentile", metrics.bandwidth_percentile, 0);
        let change = obs.num("regime.atr_change_pct", metrics.atr_change_pct, 1);
        format!(
            "Volatility regime is {regime_name}: ADX {adx}, efficiency ratio {er}, bandwidth percentile {percentile} and ATR change {change}% match no trending, expanding or compressed rule."
        )
    };
    obs.done(text)
}

/// `regime.direction`: +DI against -DI, and ADX against the trend threshold.
fn regime_direction_observation(metrics: &RegimeMetrics) -> Observation {
    let mut obs = Obs::new("regime.direction");
    let plus_di = obs.num("regime.plus_di", metrics.plus_di, 1);
    let minus_di = obs.num("regime.minus_di", metrics.minus_di, 1);
    let adx = obs.num("regime.adx", metrics.adx, 1);
    let threshold = obs.num("threshold.adx_trending", ADX_TRENDING, 0);
    let relation = if metrics.plus_di > metrics.minus_di {
        "above"
    } else if metrics.plus_di < metrics.minus_di {
        "below"
    } else {
        "equal to"
    };
    let strength = if metrics.adx >= ADX_TRENDING {
        "at or above"
    } else {
        "below"
    };
    obs.done(format!(
        "+DI {plus_di} is {relation} -DI {minus_di}, with ADX {adx} {strength} the trend threshold {threshold}."
    ))
}

/// `regime.volatility`: ATR, its percentile and change, and the bandwidth percentile.
fn volatility_observation(metrics: &RegimeMetrics, pd: usize) -> Observation {
    let mut obs = Obs::new("regime.volatility");
    let atr = obs.num("regime.atr", metrics.atr, pd + 1);
    let atr_percentile = obs.num("regime.atr_percentile", metrics.atr_percentile, 0);
    let samples = obs.count("regime.percentile_samples", metrics.percentile_samples);
    let change = obs.num("regime.atr_change_pct", metrics.atr_change_pct, 1);
    let change_bars = obs.count("threshold.atr_change_bars", ATR_CHANGE_BARS);
    let bandwidth_percentile = obs.num("regime.bandwidth_percentile", metrics.bandwidth_percentile, 0);
    obs.done(format!(
        "ATR is {atr}, at percentile {atr_percentile} of the last {samples} ATR values, and changed {change}% over {change_bars} bars; Bollinger bandwidth is at percentile {bandwidth_percentile}."
    ))
}

/// `fibonacci`: the last swing leg and where the close sits in it; `leg` is
/// the leg with its view, when there is one.
fn fibonacci_observation(leg: Option<(&FibLevels, &FibView)>, swing_length: usize, ctx: &Ctx) -> Observation {
    let mut obs = Obs::new("fibonacci");
    let text = match leg {
        Some((fib, view)) => {
            let (dir, from, to, from_time, to_time) = match fib.direction {
                LegDirection::Up => ("up", fib.low.price, fib.high.price, &view.low.time, &view.high.time),
                LegDirection::Down => ("down", fib.high.price, fib.low.price, &view.high.time, &view.low.time),
            };
            let dir = obs.text("fibonacci.direction", dir);
            let start = obs.num("fibonacci.leg_start", from, ctx.pd);
            let start_time = obs.text("fibonacci.leg_start_time", to_iso(*from_time));
            let end = obs.num("fibonacci.leg_end", to, ctx.pd);
            let end_time = obs.text("fibonacci.leg_end_time", to_iso(*to_time));
            let head = format!("The last swing leg went {dir} from {start} ({start_time}) to {end} ({end_time})");
            match view.retracement_pct {
                Some(pct) => retracement_sentence(&mut obs, &head, pct, &fib.retracements, ctx),
                None => format!("{head}; the leg has no range."),
            }
        }
        None => {
            let length = obs.count("structure.swing_length", swing_length);
            format!("No Fibonacci leg: no confirmed swing high and swing low pair with swing length {length}.")
        }
    };
    obs.done(text)
}

/// The Fibonacci sentence after `head` when the close has retraced `pct`
/// percent of the leg: beyond either end, or between which `retracements`.
fn retracement_sentence(obs: &mut Obs, head: &str, pct: f64, retracements: &[FibLevel], ctx: &Ctx) -> String {
    let close = obs.num("price.close", ctx.price, ctx.pd);
    let depth = pct / 100.0;
    let level = |obs: &mut Obs, fib_level: &FibLevel| {
        format!(
            "{} ({})",
            obs.num("fibonacci.ratio", fib_level.ratio, 3),
            obs.num("fibonacci.level", fib_level.price, ctx.pd)
        )
    };
    if depth < 0.0 {
        let beyond = obs.num("fibonacci.beyond_end_pct", -pct, 1);
        format!("{head}; the close {close} lies beyond the leg's end by {beyond}% of the leg (no retracement yet).")
    } else if depth > 1.0 {
        let beyond = obs.num("fibonacci.beyond_start_pct", pct - 100.0, 1);
        format!(
            "{head}; the close {close} lies beyond the leg's start by {beyond}% of the leg (the leg is fully retraced)."
        )
    } else {
        let retraced = obs.num("fibonacci.retracement_pct", pct, 1);
        let place = match (retracements.first(), retracements.last()) {
            (Some(shallowest), _) if depth < shallowest.ratio => {
                format!("short of the {} level", level(obs, shallowest))
            }
            (_, Some(deepest)) if depth > deepest.ratio => {
                format!("deeper than the {} level", level(obs, deepest))
            }
            _ => match retracements
                .windows(2)
                .find(|pair| pair[0].ratio <= depth && depth <= pair[1].ratio)
            {
                Some(pair) => {
                    format!(
                        "between the {} and {} levels",
                        level(obs, &pair[0]),
                        level(obs, &pair[1])
                    )
                }
                None => "inside the leg".to_owned(),
            },
        };
        format!("{head}; the close {close} has retraced {retraced}% of it, {place}.")
    }
}

/// `side.bias`, `side.ahead` and `side.behind`: the trade of interest
/// against the bias and the nearest open levels around it.
fn side_observations(view: &SideView, bias: SetupBias, ctx: &Ctx, out: &mut Vec<Observation>) {
    let side_name = match view.side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    };
    let mut obs = Obs::new("side.bias");
    let bias_name = obs.text("bias", bias.as_str());
    let text = match view.with_bias {
        Some(true) => format!("A {side_name} is with the {bias_name} bias."),
        Some(false) => format!("A {side_name} is against the {bias_name} bias."),
        None => format!("The bias is {bias_name}: a {side_name} has no support from the structure here."),
    };
    out.push(obs.done(text));
    for (id, zone, word) in [
        ("side.ahead", &view.ahead, "in the trade's direction"),
        ("side.behind", &view.behind, "against the trade's direction"),
    ] {
        let mut obs = Obs::new(id);
        let text = match zone {
            Some(zone) => {
                let phrase = zone_phrase(&mut obs, zone, ctx);
                format!("For a {side_name}, the nearest open level {word} is a {phrase}.")
            }
            None => format!("For a {side_name}, no open gap, block or pool lies {word}."),
        };
        out.push(obs.done(text));
    }
}

/// `bias`: the bias and why (see [`BIAS_RULE`]).
fn bias_observation(bias: SetupBias, trend: Trend, conflict: bool, metrics: &RegimeMetrics) -> Observation {
    let mut obs = Obs::new("bias");
    let bias_name = obs.text("bias", bias.as_str());
    let trend_name = obs.text("structure.trend", trend.as_str());
    let text = match (trend, conflict) {
        (Trend::Ranging, _) => format!("Bias is {bias_name}: the swing structure is {trend_name}."),
        (_, true) => {
            let adx = obs.num("regime.adx", metrics.adx, 1);
            let threshold = obs.num("threshold.adx_trending", ADX_TRENDING, 0);
            let plus_di = obs.num("regime.plus_di", metrics.plus_di, 1);
            let minus_di = obs.num("regime.minus_di", metrics.minus_di, 1);
            format!(
                "Bias is {bias_name}: the swing structure is {trend_name} but ADX {adx} >= {threshold} with +DI {plus_di} and -DI {minus_di} points the other way."
            )
        }
        _ => {
            let adx = obs.num("regime.adx", metrics.adx, 1);
            let threshold = obs.num("threshold.adx_trending", ADX_TRENDING, 0);
            if metrics.adx < ADX_TRENDING {
                format!(
                    "Bias is {bias_name}: the swing structure is {trend_name} and ADX {adx} < {threshold} exerts no opposing directional pressure."
                )
            } else {
                let plus_di = obs.num("regime.plus_di", metrics.plus_di, 1);
                let minus_di = obs.num("regime.minus_di", metrics.minus_di, 1);
                format!(
                    "Bias is {bias_name}: the swing structure is {trend_name}, confirmed by ADX {adx} >= {threshold} with +DI {plus_di} and -DI {minus_di}."
                )
            }
        }
    };
    obs.done(text)
}

/// What limits the explanation: a forming bar, a short history, warm-up,
/// few swings, no break, a choppy regime, a bias conflict, no Fibonacci leg,
/// a zero ATR.
fn caveats(analysis: &Analysis, bars: &[Bar], swing_length: usize, conflict: bool) -> Vec<Caveat> {
    let metrics = &analysis.regime.metrics;
    let trend = &analysis.trend;
    let mut caveats = Vec::new();
    let mut caveat = |code: &str, message: String| {
        caveats.push(Caveat {
            code: code.to_owned(),
            message,
        })
    };
    if let Some(last) = bars.last() {
        caveat(
            "forming_bar",
            format!(
                "Everything is as of the close of the last bar ({}); if that bar is still forming, so is this explanation.",
                to_iso(last.time)
            ),
        );
    }
    if bars.len() < FEW_BARS {
        caveat(
            "few_bars",
            format!(
                "Only {} bars: swings, zones and percentiles rest on a short history (fewer than {FEW_BARS}).",
                bars.len()
            ),
        );
    }
    if metrics.percentile_samples < analysis.regime_config.lookback {
        caveat(
            "indicator_warm_up",
            format!(
                "ATR and bandwidth percentiles rank only {} values (of {}): the indicators' warm-up used part of the history.",
                metrics.percentile_samples, analysis.regime_config.lookback
            ),
        );
    }
    if trend.swings < FEW_SWINGS {
        caveat(
            "few_swings",
            format!(
                "Only {} confirmed swings with swing length {swing_length}: labels and breaks are thin evidence.",
                trend.swings
            ),
        );
    }
    if trend.last_break.is_none() {
        caveat(
            "no_break",
            "No BOS or CHoCH is confirmed: the trend rests on the swing labels alone.".to_owned(),
        );
    }
    if analysis.regime.regime == Regime::Choppy {
        caveat(
            "regime_choppy",
            "The regime is choppy: breaks and zones are less reliable without direction or a volatility event."
                .to_owned(),
        );
    }
    if conflict {
        caveat(
            "bias_conflict",
            "Structure and directional index disagree, so the bias is neutral.".to_owned(),
        );
    }
    if analysis.fib.is_none() {
        caveat(
            "no_fibonacci_leg",
            "No confirmed swing high and low pair: no Fibonacci levels.".to_owned(),
        );
    }
    if metrics.atr <= 0.0 {
        caveat(
            "zero_atr",
            "ATR is 0 (no price movement): distances are not expressed in ATR.".to_owned(),
        );
    }
    caveats
}

/// The numbers written in `text`, in order, as `(value, decimals, token)`: a
/// leading `-` counts when it is not part of a word (`-DI` is not a number,
/// `-12.3` is). The checks that every number of an observation is one of its
/// sources (unit tests here and the end-to-end tests of `explain_setup`) read
/// sentences with it; text sources (times, labels) are removed first.
#[doc(hidden)]
pub fn numbers_written_in(text: &str) -> Vec<(f64, usize, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let neg = i > 0 && b[i - 1] == b'-' && (i < 2 || !b[i - 2].is_ascii_alphanumeric());
        let start = if neg { i - 1 } else { i };
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let mut decimals = 0;
        if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
                decimals += 1;
            }
        }
        let token = &text[start..i];
        // Digits with an optional sign and fraction always parse.
        if let Ok(v) = token.parse::<f64>() {
            out.push((v, decimals, token));
        }
    }
    out
}

#[cfg(test)]
mod tests;
