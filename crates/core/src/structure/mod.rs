//! Market-structure detection without look-ahead: swing highs and lows, fair
//! value gaps, order blocks, liquidity pools and their sweeps, break of
//! structure (BOS) and change of character (CHoCH).
//!
//! The definitions follow the Python package `smartmoneyconcepts` 0.0.27
//! ("smc"), with one design decision that smc does not make: **every event is
//! reported only once it is knowable, and never changes afterwards.**
//!
//! # Events, `index` and `confirmed_at`
//!
//! Detection produces a list of [`StructureEvent`]s. Each event carries
//!
//! - `index`: the bar the event is about (the swing bar, the middle bar of a
//!   gap, the order-block candle, the anchor swing of a liquidity pool, the
//!   swing whose level was broken), as a 0-based position in the series;
//! - `confirmed_at`: the bar at whose close the event became knowable. A swing
//!   with `swing_length = n` at bar `i` is confirmed at `i + n`; a fair value
//!   gap whose middle bar is `i` at `i + 1`; a mitigation at the bar that
//!   trades into the zone.
//!
//! **Invariant (no look-ahead):** the streaming [`StructureDetector`] emits an
//! event while it is fed the bar `confirmed_at`, never before, and the event
//! depends only on bars `0..=confirmed_at`.
//!
//! **Invariant (append-only):** an emitted event is never revised or removed.
//! What smc does by rewriting a past row is a *separate later event* here:
//! a mitigation ([`FvgMitigation`], [`OrderBlockMitigation`]), an
//! invalidation ([`OrderBlockInvalidation`]), a sweep ([`LiquiditySweep`]), or
//! a newer event that supersedes an older one (a more extreme swing of the
//! same leg, a joined gap, a larger snapshot of the same liquidity pool). The
//! events knowable after bar `k` are therefore exactly the full-series
//! result filtered to `confirmed_at <= k`; `tests/structure_replay.rs`
//! checks it on every series of `data/market/`.
//!
//! The batch function [`detect`] runs the same per-bar engine as
//! [`StructureDetector`] over prefixes of the caller's slice (without copying
//! it) and returns every event in emission order (by `confirmed_at`, then
//! family: swings, gaps, order blocks, liquidity, BOS/CHoCH), so batch and
//! streaming agree by construction; a property test checks it anyway.
//!
//! # Relation to smartmoneyconcepts
//!
//! Where smc's result is knowable without the future (swing positions, gap
//! positions and bounds, gap mitigation, the BOS/CHoCH level and the bar
//! that broke it), the values are equal; `tests/structure_smc.rs` checks them
//! against fixtures produced by smc itself. Where smc looks ahead (its swing
//! filter keeps the most extreme swing of a leg only once the leg is over,
//! its liquidity range is a percentage of the *whole* series' range, its
//! BOS/CHoCH needs the swing after the broken one and deletes breaks later),
//! this module differs on purpose; `docs/structure.md` lists every
//! difference, its reason and the measured agreement.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::Bar;
//! use tradeterm_core::structure::{StructureConfig, StructureDetector, StructureEvent};
//!
//! let config = StructureConfig { swing_length: 2, ..StructureConfig::default() };
//! let mut detector = StructureDetector::new(config)?;
//! let highs = [1.0, 2.0, 3.0, 5.0, 3.0, 2.0, 1.0, 2.0];
//! let mut swings = Vec::new();
//! for (i, h) in highs.iter().enumerate() {
//!     let bar = Bar { time: i as i64 * 60_000, open: h - 0.5, high: *h, low: h - 1.0, close: h - 0.5, volume: 1.0 };
//!     for event in detector.update(&bar)? {
//!         assert_eq!(event.confirmed_at(), i); // emitted exactly when knowable
//!         if let StructureEvent::Swing(s) = event {
//!             swings.push((s.index, s.level));
//!         }
//!     }
//! }
//! assert_eq!(swings, [(3, 5.0)]); // the high at bar 3, known at bar 3 + 2
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

pub mod bos_choch;
pub mod fvg;
pub mod liquidity;
pub mod order_blocks;
pub mod swings;
mod util;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::UnixMs;
use crate::{Bar, CoreError};

pub use bos_choch::{BosChochConfig, BreakKind, StructureBreak};
pub use fvg::{FairValueGap, FvgConfig, FvgMitigation};
pub use liquidity::{LiquidityConfig, LiquidityPool, LiquiditySweep, LiquidityTolerance};
pub use order_blocks::{OrderBlock, OrderBlockConfig, OrderBlockInvalidation, OrderBlockMitigation};
pub use swings::{Swing, SwingKind};

/// Largest accepted `swing_length`.
pub const MAX_SWING_LENGTH: usize = 10_000;

/// Direction of a gap, order block or structure break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Upward (smc's `1`).
    Bullish,
    /// Downward (smc's `-1`).
    Bearish,
}

impl Direction {
    /// smc's sign convention: `1` for bullish, `-1` for bearish.
    pub const fn sign(self) -> i8 {
        match self {
            Self::Bullish => 1,
            Self::Bearish => -1,
        }
    }
}

/// What to detect and with which parameters. A family set to `null`/`None` is
/// not detected; swings are always detected because the other families
/// (except fair value gaps) are built on them. Defaults are smc's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StructureConfig {
    /// Swing window: a swing high at bar `i` has the highest high of bars
    /// `i - swing_length + 1 ..= i + swing_length` (smc's window of
    /// `2 * swing_length` bars), so it is confirmed `swing_length` bars later.
    /// The first possible swing is at bar `2 * swing_length - 1`. 1 to 10 000;
    /// default 50.
    #[schemars(range(min = 1, max = MAX_SWING_LENGTH))]
    pub swing_length: usize,
    /// Fair value gaps (three-bar imbalances); `None` to skip.
    pub fvg: Option<FvgConfig>,
    /// Order blocks; `None` to skip.
    pub order_blocks: Option<OrderBlockConfig>,
    /// Liquidity pools (equal highs / equal lows) and their sweeps; `None` to skip.
    pub liquidity: Option<LiquidityConfig>,
    /// Break of structure and change of character; `None` to skip.
    pub bos_choch: Option<BosChochConfig>,
}

impl Default for StructureConfig {
    fn default() -> Self {
        Self {
            swing_length: 50,
            fvg: Some(FvgConfig::default()),
            order_blocks: Some(OrderBlockConfig::default()),
            liquidity: Some(LiquidityConfig::default()),
            bos_choch: Some(BosChochConfig::default()),
        }
    }
}

impl StructureConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] for a `swing_length` of 0 or above
    /// [`MAX_SWING_LENGTH`], or a liquidity tolerance that is not finite and
    /// positive (a range percentage must also be at most 1, i.e. 100 %).
    pub fn validate(&self) -> Result<(), CoreError> {
        if self.swing_length == 0 {
            return Err(CoreError::param("swing_length", "must be at least 1"));
        }
        if self.swing_length > MAX_SWING_LENGTH {
            return Err(CoreError::param(
                "swing_length",
                format!("{} exceeds the maximum {MAX_SWING_LENGTH}", self.swing_length),
            ));
        }
        if let Some(liq) = &self.liquidity {
            liq.tolerance.validate()?;
        }
        Ok(())
    }

    /// Fewest bars on which a swing can be confirmed: `3 * swing_length`
    /// (smc's window needs `2 * swing_length` bars up to the swing, plus
    /// `swing_length` bars after it).
    pub fn min_bars(&self) -> usize {
        self.swing_length.saturating_mul(3)
    }
}

/// One market-structure event. Serialised with a `type` field naming the
/// variant (`"swing"`, `"fair_value_gap"`, ...) next to the variant's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StructureEvent {
    /// A swing high or low was confirmed.
    Swing(Swing),
    /// A fair value gap was confirmed.
    FairValueGap(FairValueGap),
    /// Price traded back into an earlier fair value gap.
    FvgMitigated(FvgMitigation),
    /// An order block was confirmed.
    OrderBlock(OrderBlock),
    /// Price traded through an earlier order block (it becomes a breaker).
    OrderBlockMitigated(OrderBlockMitigation),
    /// Price went back through the far side of a mitigated order block
    /// (smc deletes such blocks retroactively).
    OrderBlockInvalidated(OrderBlockInvalidation),
    /// A liquidity pool (equal highs or lows) was confirmed or grew.
    LiquidityPool(LiquidityPool),
    /// Price swept an earlier liquidity pool.
    LiquiditySwept(LiquiditySweep),
    /// A break of structure or change of character was confirmed.
    StructureBreak(StructureBreak),
}

impl StructureEvent {
    /// The bar the event is about (see the module documentation).
    pub fn index(&self) -> usize {
        match self {
            Self::Swing(e) => e.index,
            Self::FairValueGap(e) => e.index,
            Self::FvgMitigated(e) => e.index,
            Self::OrderBlock(e) => e.index,
            Self::OrderBlockMitigated(e) => e.index,
            Self::OrderBlockInvalidated(e) => e.index,
            Self::LiquidityPool(e) => e.index,
            Self::LiquiditySwept(e) => e.index,
            Self::StructureBreak(e) => e.index,
        }
    }

    /// The bar at whose close the event became knowable.
    pub fn confirmed_at(&self) -> usize {
        match self {
            Self::Swing(e) => e.confirmed_at,
            Self::FairValueGap(e) => e.confirmed_at,
            Self::FvgMitigated(e) => e.confirmed_at,
            Self::OrderBlock(e) => e.confirmed_at,
            Self::OrderBlockMitigated(e) => e.confirmed_at,
            Self::OrderBlockInvalidated(e) => e.confirmed_at,
            Self::LiquidityPool(e) => e.confirmed_at,
            Self::LiquiditySwept(e) => e.confirmed_at,
            Self::StructureBreak(e) => e.confirmed_at,
        }
    }

    /// The variant's `type` name as serialised (`"swing"`, `"fvg_mitigated"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Swing(_) => "swing",
            Self::FairValueGap(_) => "fair_value_gap",
            Self::FvgMitigated(_) => "fvg_mitigated",
            Self::OrderBlock(_) => "order_block",
            Self::OrderBlockMitigated(_) => "order_block_mitigated",
            Self::OrderBlockInvalidated(_) => "order_block_invalidated",
            Self::LiquidityPool(_) => "liquidity_pool",
            Self::LiquiditySwept(_) => "liquidity_swept",
            Self::StructureBreak(_) => "structure_break",
        }
    }
}

/// The detectors of every family, advanced one bar at a time over a series
/// they borrow. [`StructureDetector`] owns the series it is fed; [`detect`]
/// borrows the caller's slice. Both call [`Engine::step`] with the same
/// prefixes, so batch and streaming agree by construction.
#[derive(Debug, Clone)]
struct Engine {
    swings: swings::SwingDetector,
    fvg: Option<fvg::FvgDetector>,
    order_blocks: Option<order_blocks::OrderBlockDetector>,
    liquidity: Option<liquidity::LiquidityDetector>,
    bos_choch: Option<bos_choch::BosChochDetector>,
}

impl Engine {
    /// Builds the detectors; `config` must be valid.
    fn new(config: &StructureConfig) -> Self {
        Self {
            swings: swings::SwingDetector::new(config.swing_length),
            fvg: config.fvg.as_ref().map(fvg::FvgDetector::new),
            order_blocks: config.order_blocks.as_ref().map(order_blocks::OrderBlockDetector::new),
            liquidity: config.liquidity.as_ref().map(liquidity::LiquidityDetector::new),
            bos_choch: config.bos_choch.as_ref().map(bos_choch::BosChochDetector::new),
        }
    }

    /// Processes the last bar of `bars` (a validated series whose earlier bars
    /// were all stepped over in order) and appends the events it confirms.
    fn step(&mut self, bars: &[Bar], out: &mut Vec<StructureEvent>) {
        let change = self.swings.update(bars, out);
        if let Some(d) = self.fvg.as_mut() {
            d.update(bars, out);
        }
        if let Some(d) = self.order_blocks.as_mut() {
            d.update(bars, change.as_ref(), out);
        }
        if let Some(d) = self.liquidity.as_mut() {
            d.update(bars, change.as_ref(), out);
        }
        if let Some(d) = self.bos_choch.as_mut() {
            d.update(bars, change.as_ref(), out);
        }
    }
}

/// Streaming market-structure detector: feed bars one at a time with
/// [`StructureDetector::update`]; each call returns the events that became
/// knowable at that bar's close.
///
/// The detector keeps the bars it has been fed (48 bytes each), because a
/// break or sweep recognised late may have to look back over them.
#[derive(Debug, Clone)]
pub struct StructureDetector {
    config: StructureConfig,
    bars: Vec<Bar>,
    out: Vec<StructureEvent>,
    engine: Engine,
}

impl StructureDetector {
    /// Builds a detector.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when [`StructureConfig::validate`] fails.
    pub fn new(config: StructureConfig) -> Result<Self, CoreError> {
        config.validate()?;
        Ok(Self {
            engine: Engine::new(&config),
            config,
            bars: Vec::new(),
            out: Vec::new(),
        })
    }

    /// The configuration the detector was built with.
    pub fn config(&self) -> &StructureConfig {
        &self.config
    }

    /// Number of bars fed so far; the next bar gets this index.
    pub fn bars_seen(&self) -> usize {
        self.bars.len()
    }

    /// Forgets every bar; the detector behaves as freshly built.
    pub fn reset(&mut self) {
        self.engine = Engine::new(&self.config);
        self.bars.clear();
        self.out.clear();
    }

    /// Feeds the next bar and returns the events confirmed at its close
    /// (their `confirmed_at` is this bar's index). The slice is valid until
    /// the next call.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] when the bar is malformed (non-finite
    /// value, `low`/`high` not containing `open`/`close`, negative volume)
    /// or its time is not after the previous bar's. The detector's state is
    /// unchanged on error.
    pub fn update(&mut self, bar: &Bar) -> Result<&[StructureEvent], CoreError> {
        bar.validate()?;
        if let Some(prev) = self.bars.last()
            && prev.time >= bar.time
        {
            return Err(CoreError::InvalidInput(format!(
                "bar time {} is not after the previous bar's {} (index {})",
                bar.time,
                prev.time,
                self.bars.len()
            )));
        }
        self.bars.push(*bar);
        self.out.clear();
        self.engine.step(&self.bars, &mut self.out);
        Ok(&self.out)
    }
}

/// Batch detection over `bars`: every event in emission order, equal to the
/// final event list of a [`StructureDetector`] fed the same bars (the same
/// engine runs over the borrowed slice, without copying it).
///
/// # Errors
/// - [`CoreError::InvalidParameter`] when the configuration is invalid, or the
///   series is shorter than [`StructureConfig::min_bars`] (no swing could ever
///   be confirmed; lower `swing_length` or pass more bars).
/// - [`CoreError::InvalidInput`] when the series is empty, holds a malformed
///   bar or its times are not strictly increasing.
pub fn detect(bars: &[Bar], config: &StructureConfig) -> Result<Vec<StructureEvent>, CoreError> {
    config.validate()?;
    if bars.len() < config.min_bars() {
        crate::bars::validate_series(bars)?;
        return Err(CoreError::param(
            "swing_length",
            format!(
                "swing_length {} needs at least {} bars to confirm a swing; got {}",
                config.swing_length,
                config.min_bars(),
                bars.len()
            ),
        ));
    }
    let mut engine = Engine::new(config);
    // Real series give about one event per two bars (see the replay test);
    // reserving that avoids regrowing.
    let mut events = Vec::with_capacity(bars.len() / 2 + 16);
    for t in 0..bars.len() {
        // Validation fused with detection (one pass over the bars); the same
        // checks as `validate_series`, and an error discards everything.
        let bar = &bars[t];
        if !well_formed(bar) {
            bar.validate()?;
        }
        if t > 0 && bars[t - 1].time >= bar.time {
            return Err(CoreError::InvalidInput(format!(
                "bar times are not strictly increasing at index {t}"
            )));
        }
        engine.step(&bars[..=t], &mut events);
    }
    // Shrinking copies the events and defeats the allocator's reuse of the
    // block (measured: twice the run time); only give memory back when
    // most of the reservation went unused.
    if events.capacity() > 2 * events.len() + 1024 {
        events.shrink_to_fit();
    }
    Ok(events)
}

/// The checks of [`Bar::validate`] as one branch-free expression (the fast
/// path of [`detect`]; the error itself comes from `Bar::validate`).
fn well_formed(b: &Bar) -> bool {
    b.open.is_finite()
        & b.high.is_finite()
        & b.low.is_finite()
        & b.close.is_finite()
        & b.volume.is_finite()
        & (b.low <= b.high)
        & (b.open <= b.high)
        & (b.open >= b.low)
        & (b.close <= b.high)
        & (b.close >= b.low)
        & (b.volume >= 0.0)
}

/// Open time of bar `index`; only called with indices of bars already fed.
pub(crate) fn time_of(bars: &[Bar], index: usize) -> UnixMs {
    bars.get(index).map_or(0, |b| b.time)
}

#[cfg(test)]
mod tests;
