//! Fair value gaps (smc's `fvg`): three-bar imbalances and their mitigation.
//!
//! # Definition
//!
//! For a middle bar `i` (so bars `i - 1`, `i`, `i + 1`):
//!
//! - **bullish** when `high[i-1] < low[i+1]` and bar `i` closes above its
//!   open; the gap spans `bottom = high[i-1]` to `top = low[i+1]`;
//! - **bearish** when `low[i-1] > high[i+1]` and bar `i` closes below its
//!   open; `top = low[i-1]`, `bottom = high[i+1]`.
//!
//! The gap is confirmed at bar `i + 1`. It is **mitigated** at the first bar
//! `j >= i + 2` that trades back into it (`low[j] <= top` for a bullish gap,
//! `high[j] >= bottom` for a bearish one): a separate [`FvgMitigation`]
//! event confirmed at `j`. smc writes `j` into the gap's row instead, which
//! is known only at `j`.
//!
//! With [`FvgConfig::join_consecutive`], a gap whose middle bar directly
//! follows a gap of the same direction absorbs it: its bounds become the
//! highest top and lowest bottom of both, [`FairValueGap::supersedes`] names
//! the absorbed gap, and the absorbed gap is no longer tracked for
//! mitigation (smc deletes it; here the earlier event stays as emitted).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::util::Key;
use super::{Direction, StructureEvent, time_of};
use crate::Bar;
use crate::time::UnixMs;

/// Fair-value-gap options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct FvgConfig {
    /// Join consecutive gaps of the same direction into one (smc's
    /// `join_consecutive`); default false.
    pub join_consecutive: bool,
}

/// A confirmed fair value gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FairValueGap {
    /// Bullish (gap up) or bearish (gap down).
    pub direction: Direction,
    /// Index of the middle bar of the three.
    pub index: usize,
    /// Open time of the middle bar, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Upper bound of the gap.
    pub top: f64,
    /// Lower bound of the gap.
    pub bottom: f64,
    /// Index of the bar that completed the gap: `index + 1`.
    pub confirmed_at: usize,
    /// With `join_consecutive`: the index of the gap (of the same direction,
    /// one bar earlier) this gap absorbed; its bounds include that gap's.
    pub supersedes: Option<usize>,
}

/// Price traded back into an earlier fair value gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FvgMitigation {
    /// Direction of the gap.
    pub direction: Direction,
    /// Index of the gap's middle bar (the [`FairValueGap::index`] it refers to).
    pub index: usize,
    /// Index of the first bar (at least `index + 2`) that traded into the gap.
    pub mitigated_index: usize,
    /// Equal to `mitigated_index`.
    pub confirmed_at: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Gap {
    direction: Direction,
    index: usize,
    top: f64,
    bottom: f64,
}

/// Streaming gap detector. Open gaps sit in two heaps so that each bar only
/// touches the gaps it mitigates.
#[derive(Debug, Clone)]
pub(crate) struct FvgDetector {
    join: bool,
    /// The gap confirmed at the previous bar: not yet eligible for
    /// mitigation, and the only gap a new one can absorb.
    pending: Option<Gap>,
    /// Open bullish gaps by top (largest first): mitigated when `low <= top`.
    bullish: BinaryHeap<(Key, Reverse<usize>)>,
    /// Open bearish gaps by bottom (smallest first): mitigated when `high >= bottom`.
    bearish: BinaryHeap<Reverse<(Key, usize)>>,
}

impl FvgDetector {
    pub(crate) fn new(config: &FvgConfig) -> Self {
        Self {
            join: config.join_consecutive,
            pending: None,
            bullish: BinaryHeap::new(),
            bearish: BinaryHeap::new(),
        }
    }

    pub(crate) fn update(&mut self, bars: &[Bar], out: &mut Vec<StructureEvent>) {
        let Some(t) = bars.len().checked_sub(1) else {
            return;
        };
        let mut new = if t >= 2 { gap_at(bars, t - 1) } else { None };
        let mut supersedes = None;
        if let Some(prev) = self.pending.take() {
            match new.as_mut() {
                Some(g) if self.join && g.direction == prev.direction => {
                    g.top = g.top.max(prev.top);
                    g.bottom = g.bottom.min(prev.bottom);
                    supersedes = Some(prev.index);
                }
                _ => self.track(prev),
            }
        }
        if let Some(g) = new {
            out.push(StructureEvent::FairValueGap(FairValueGap {
                direction: g.direction,
                index: g.index,
                time: time_of(bars, g.index),
                top: g.top,
                bottom: g.bottom,
                confirmed_at: t,
                supersedes,
            }));
            self.pending = Some(g);
        }
        let bar = bars[t];
        let first = out.len();
        while let Some(&(Key(top), Reverse(index))) = self.bullish.peek() {
            if bar.low > top {
                break;
            }
            self.bullish.pop();
            out.push(mitigation(Direction::Bullish, index, t));
        }
        while let Some(&Reverse((Key(bottom), index))) = self.bearish.peek() {
            if bar.high < bottom {
                break;
            }
            self.bearish.pop();
            out.push(mitigation(Direction::Bearish, index, t));
        }
        if out.len() > first + 1 {
            out[first..].sort_by_key(StructureEvent::index);
        }
    }

    fn track(&mut self, g: Gap) {
        match g.direction {
            Direction::Bullish => self.bullish.push((Key(g.top), Reverse(g.index))),
            Direction::Bearish => self.bearish.push(Reverse((Key(g.bottom), g.index))),
        }
    }
}

fn mitigation(direction: Direction, index: usize, t: usize) -> StructureEvent {
    StructureEvent::FvgMitigated(FvgMitigation {
        direction,
        index,
        mitigated_index: t,
        confirmed_at: t,
    })
}

/// The gap whose middle bar is `i` (needs bars `i - 1 ..= i + 1`).
fn gap_at(bars: &[Bar], i: usize) -> Option<Gap> {
    let (prev, mid, next) = (bars.get(i.checked_sub(1)?)?, bars.get(i)?, bars.get(i + 1)?);
    if prev.high < next.low && mid.close > mid.open {
        Some(Gap {
            direction: Direction::Bullish,
            index: i,
            top: next.low,
            bottom: prev.high,
        })
    } else if prev.low > next.high && mid.close < mid.open {
        Some(Gap {
            direction: Direction::Bearish,
            index: i,
            top: prev.low,
            bottom: next.high,
        })
    } else {
        None
    }
}
