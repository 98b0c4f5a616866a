//! Liquidity pools (smc's `liquidity`): swing highs (or lows) at nearly the
//! same level, where stop orders rest, and the bar that sweeps them.
//!
//! # Definition
//!
//! Pools are built from *final* swings: the extreme swing of a leg, known for
//! good once the next opposite swing is confirmed (these are exactly smc's
//! swings). Each final swing high `j` (lows mirror it), in order:
//!
//! - joins the earliest open *anchor* `a` (an earlier final swing high that
//!   did not itself join a pool) with `level[a] - d <= level[j] <= level[a] + d`,
//!   where `d` is the anchor's tolerance, provided the anchor was not swept at
//!   or before bar `j`;
//! - otherwise becomes an anchor itself.
//!
//! An anchor with at least one member is a pool: level = mean of the anchor's
//! and members' levels, `end` = last member. It is **swept** at the first
//! bar after the anchor whose high reaches `level[a] + d` (for lows: whose
//! low reaches `level[a] - d`). This is smc's algorithm, run as swings
//! become final instead of over the finished series.
//!
//! # Tolerance
//!
//! smc's `range_percent` is a fraction of the whole series' range
//! `max(high) - min(low)`, which is not known until the series ends. The
//! causal form, [`LiquidityTolerance::RangePercent`], takes the range of the
//! bars seen when the anchor becomes final. [`LiquidityTolerance::Price`]
//! fixes the distance; given smc's full-series distance it reproduces smc's
//! pools.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::swings::{Swing, SwingChange, SwingKind};
use super::util::Key;
use super::{StructureEvent, time_of};
use crate::time::UnixMs;
use crate::{Bar, CoreError};

/// How close two swings must be to count as equal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LiquidityTolerance {
    /// A fraction (0.01 = 1 %) of the range `max(high) - min(low)` of the
    /// bars seen when the anchor swing becomes final (the causal form of
    /// smc's `range_percent`, which uses the whole series). 0 < value <= 1.
    RangePercent {
        /// Fraction of the range, e.g. 0.01.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 1))]
        range_percent: f64,
    },
    /// A fixed price distance (> 0).
    Price {
        /// Largest distance between equal swings, in price units.
        #[schemars(extend("exclusiveMinimum" = 0))]
        distance: f64,
    },
}

impl Default for LiquidityTolerance {
    fn default() -> Self {
        Self::RangePercent { range_percent: 0.01 }
    }
}

impl LiquidityTolerance {
    pub(crate) fn validate(&self) -> Result<(), CoreError> {
        match *self {
            Self::RangePercent { range_percent } if !(range_percent.is_finite() && range_percent > 0.0) => {
                Err(CoreError::param("range_percent", "must be a finite number above 0"))
            }
            Self::RangePercent { range_percent } if range_percent > 1.0 => Err(CoreError::param(
                "range_percent",
                format!("{range_percent} is above 1 (a fraction: 0.01 means 1 %)"),
            )),
            Self::Price { distance } if !(distance.is_finite() && distance > 0.0) => {
                Err(CoreError::param("distance", "must be a finite price distance above 0"))
            }
            _ => Ok(()),
        }
    }
}

/// Liquidity options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LiquidityConfig {
    /// How close swings must be to form a pool; default 1 % of the range seen.
    pub tolerance: LiquidityTolerance,
}

/// A liquidity pool: two or more final swings of the same kind within the
/// tolerance of the first (the anchor). Each time a swing joins, a new
/// snapshot with the same `index` is emitted; the latest snapshot describes
/// the pool, earlier snapshots stay as they were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LiquidityPool {
    /// `high`: equal highs, buy-side liquidity above (smc's `1`);
    /// `low`: equal lows, sell-side liquidity below (smc's `-1`).
    pub kind: SwingKind,
    /// Index of the anchor swing (the first swing of the pool).
    pub index: usize,
    /// Open time of the anchor swing bar, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Mean level of the pool's swings.
    pub level: f64,
    /// Indices of the pool's swings, anchor first.
    pub members: Vec<usize>,
    /// Index of the last swing that joined (smc's `End`).
    pub end: usize,
    /// Price tolerance used around the anchor's level.
    pub tolerance: f64,
    /// Index of the bar at which the last member became final.
    pub confirmed_at: usize,
}

/// Price ran through a liquidity pool (reached the anchor level plus the
/// tolerance for highs, minus it for lows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LiquiditySweep {
    /// Kind of the pool (`high` or `low`).
    pub kind: SwingKind,
    /// Index of the pool's anchor swing (the [`LiquidityPool::index`] it refers to).
    pub index: usize,
    /// Index of the bar that swept the pool (smc's `Swept`).
    pub swept_index: usize,
    /// The later of `swept_index` and the pool's first confirmation (a pool
    /// can be recognised after the sweep, since its swings become final late).
    pub confirmed_at: usize,
}

#[derive(Debug, Clone, PartialEq)]
struct Anchor {
    kind: SwingKind,
    index: usize,
    level: f64,
    tolerance: f64,
    members: Vec<(usize, f64)>,
    swept: Option<usize>,
    sweep_emitted: bool,
}

impl Anchor {
    fn range(&self) -> (f64, f64) {
        (self.level - self.tolerance, self.level + self.tolerance)
    }

    /// Price at which the pool counts as swept.
    fn trigger(&self) -> f64 {
        let (low, high) = self.range();
        match self.kind {
            SwingKind::High => high,
            SwingKind::Low => low,
        }
    }

    fn swept_by(&self, bar: &Bar) -> bool {
        match self.kind {
            SwingKind::High => bar.high >= self.trigger(),
            SwingKind::Low => bar.low <= self.trigger(),
        }
    }
}

/// Streaming liquidity detector.
#[derive(Debug, Clone)]
pub(crate) struct LiquidityDetector {
    tolerance: LiquidityTolerance,
    max_high: f64,
    min_low: f64,
    anchors: Vec<Anchor>,
    /// Open anchors of each kind, by index (ids into `anchors`).
    open_highs: Vec<usize>,
    open_lows: Vec<usize>,
    /// Unswept high anchors by trigger, smallest first.
    unswept_highs: BinaryHeap<Reverse<(Key, usize)>>,
    /// Unswept low anchors by trigger, largest first.
    unswept_lows: BinaryHeap<(Key, usize)>,
}

impl LiquidityDetector {
    pub(crate) fn new(config: &LiquidityConfig) -> Self {
        Self {
            tolerance: config.tolerance,
            max_high: f64::NEG_INFINITY,
            min_low: f64::INFINITY,
            anchors: Vec::new(),
            open_highs: Vec::new(),
            open_lows: Vec::new(),
            unswept_highs: BinaryHeap::new(),
            unswept_lows: BinaryHeap::new(),
        }
    }

    pub(crate) fn update(&mut self, bars: &[Bar], change: Option<&SwingChange>, out: &mut Vec<StructureEvent>) {
        let Some(t) = bars.len().checked_sub(1) else {
            return;
        };
        let bar = bars[t];
        self.max_high = self.max_high.max(bar.high);
        self.min_low = self.min_low.min(bar.low);

        // 1. Sweeps at t of anchors that were unswept.
        let mut swept = Vec::new();
        while let Some(&Reverse((Key(trigger), id))) = self.unswept_highs.peek() {
            if bar.high < trigger {
                break;
            }
            self.unswept_highs.pop();
            swept.push(id);
        }
        while let Some(&(Key(trigger), id)) = self.unswept_lows.peek() {
            if bar.low > trigger {
                break;
            }
            self.unswept_lows.pop();
            swept.push(id);
        }
        swept.sort_by_key(|&id| self.anchors[id].index);
        for id in swept {
            let a = &mut self.anchors[id];
            a.swept = Some(t);
            if a.members.len() > 1 {
                a.sweep_emitted = true;
                out.push(sweep_event(a, t, t));
            }
        }

        // 2. A swing that just became final joins a pool or becomes an anchor.
        if let Some(SwingChange::NewLeg {
            closed: Some(swing), ..
        }) = change
        {
            self.add_final(bars, t, swing, out);
        }
    }

    fn add_final(&mut self, bars: &[Bar], t: usize, swing: &Swing, out: &mut Vec<StructureEvent>) {
        let j = swing.index;
        let open = match swing.kind {
            SwingKind::High => &mut self.open_highs,
            SwingKind::Low => &mut self.open_lows,
        };
        // Anchors swept at or before j can accept no later swing: drop them.
        open.retain(|&id| self.anchors[id].swept.is_none_or(|c| c > j));
        let joined = open.iter().copied().find(|&id| {
            let (low, high) = self.anchors[id].range();
            low <= swing.level && swing.level <= high
        });
        if let Some(id) = joined {
            let a = &mut self.anchors[id];
            a.members.push((j, swing.level));
            let level = a.members.iter().map(|&(_, l)| l).sum::<f64>() / a.members.len() as f64;
            out.push(StructureEvent::LiquidityPool(LiquidityPool {
                kind: a.kind,
                index: a.index,
                time: time_of(bars, a.index),
                level,
                members: a.members.iter().map(|&(i, _)| i).collect(),
                end: j,
                tolerance: a.tolerance,
                confirmed_at: t,
            }));
            if let Some(c) = a.swept
                && !a.sweep_emitted
            {
                // Swept between the anchor and now, before the pool was known.
                a.sweep_emitted = true;
                out.push(sweep_event(a, c, t));
            }
            return;
        }
        let tolerance = match self.tolerance {
            LiquidityTolerance::RangePercent { range_percent } => (self.max_high - self.min_low) * range_percent,
            LiquidityTolerance::Price { distance } => distance,
        };
        let mut anchor = Anchor {
            kind: swing.kind,
            index: j,
            level: swing.level,
            tolerance,
            members: vec![(j, swing.level)],
            swept: None,
            sweep_emitted: false,
        };
        // Bars j+1 ..= t are already known: find an earlier sweep.
        anchor.swept = bars
            .get(j + 1..=t)
            .and_then(|r| r.iter().position(|b| anchor.swept_by(b)))
            .map(|p| j + 1 + p);
        let id = self.anchors.len();
        if anchor.swept.is_none() {
            match anchor.kind {
                SwingKind::High => self.unswept_highs.push(Reverse((Key(anchor.trigger()), id))),
                SwingKind::Low => self.unswept_lows.push((Key(anchor.trigger()), id)),
            }
        }
        let open = match anchor.kind {
            SwingKind::High => &mut self.open_highs,
            SwingKind::Low => &mut self.open_lows,
        };
        open.push(id);
        self.anchors.push(anchor);
    }
}

fn sweep_event(a: &Anchor, swept_index: usize, confirmed_at: usize) -> StructureEvent {
    StructureEvent::LiquiditySwept(LiquiditySweep {
        kind: a.kind,
        index: a.index,
        swept_index,
        confirmed_at,
    })
}
