//! Order blocks (smc's `ob`): the last opposing candle before price closes
//! through a swing, with a volume-based strength, mitigation and
//! invalidation.
//!
//! # Definition
//!
//! **Bullish:** at bar `t`, let `s` be the most recent swing high confirmed
//! so far (`confirmed_at <= t`). When `close[t] > high[s]` and `s` has not
//! been closed through before, the order block is the bar with the lowest low
//! among bars `s + 1 ..= t - 1` (the last one on ties), spanning its `low`
//! (bottom) to its `high` (top). It is confirmed at `t`. **Bearish** mirrors
//! it with the most recent swing low, `close[t] < low[s]`, and the bar with
//! the highest high.
//!
//! **Strength** (smc's `Percentage`): with `v` the volumes,
//! `min(a, b) / max(a, b) * 100` where `a = v[t] + v[t-1]` and `b = v[t-2]`
//! (100 when both are zero); [`OrderBlock::volume`] is `v[t] + v[t-1] + v[t-2]`
//! (smc's `OBVolume`).
//!
//! **Mitigation:** from bar `t + 1` on, the first bar `j` whose low goes
//! below a bullish block's bottom (with `close_mitigation`: whose
//! `min(open, close)` does) mitigates it; the block becomes a *breaker*. A
//! bearish block is mitigated when the high (or `max(open, close)`) goes
//! above its top. **Invalidation:** from `j + 1` on, the first bar whose high
//! goes above a bullish breaker's top (whose low goes below a bearish
//! breaker's bottom) invalidates it. smc deletes invalidated blocks from its
//! output altogether, rewriting the past; here it is a later
//! [`OrderBlockInvalidation`] event.
//!
//! smc uses the last swing *before* `t` in its final (look-ahead) swing list,
//! including swings that are only confirmed after `t` and excluding swings
//! later superseded; here it is the last swing *known* at `t`. See
//! `docs/structure.md` for the consequences.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::swings::{SwingChange, SwingKind};
use super::util::Key;
use super::{Direction, StructureEvent, time_of};
use crate::Bar;
use crate::time::UnixMs;

/// Order-block options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct OrderBlockConfig {
    /// Mitigate on the candle body (`min(open, close)` below a bullish
    /// block, `max(open, close)` above a bearish one) instead of the wick
    /// (smc's `close_mitigation`); default false.
    pub close_mitigation: bool,
}

/// A confirmed order block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderBlock {
    /// Bullish (demand, below price) or bearish (supply, above price).
    pub direction: Direction,
    /// Index of the order-block candle.
    pub index: usize,
    /// Open time of the order-block candle, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// High of the order-block candle.
    pub top: f64,
    /// Low of the order-block candle.
    pub bottom: f64,
    /// Volume of the breaking bar and the two before it (smc's `OBVolume`).
    pub volume: f64,
    /// Volume balance in percent, 0 to 100 (smc's `Percentage`): the smaller
    /// of (breaking bar + previous bar volume) and (volume two bars before),
    /// over the larger.
    pub strength_percent: f64,
    /// Index of the swing whose level was closed through.
    pub swing_index: usize,
    /// Index of the bar that closed through the swing.
    pub confirmed_at: usize,
}

/// Price traded through an order block: it is now a breaker block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderBlockMitigation {
    /// Direction of the order block.
    pub direction: Direction,
    /// Index of the order-block candle (the [`OrderBlock::index`] it refers to).
    pub index: usize,
    /// Index of the bar that traded through the block.
    pub mitigated_index: usize,
    /// Equal to `mitigated_index`.
    pub confirmed_at: usize,
}

/// Price went back through the far side of a mitigated order block (a bullish
/// breaker's top, a bearish breaker's bottom); the block is spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderBlockInvalidation {
    /// Direction of the order block.
    pub direction: Direction,
    /// Index of the order-block candle (the [`OrderBlock::index`] it refers to).
    pub index: usize,
    /// Index of the bar that invalidated the block.
    pub invalidated_index: usize,
    /// Equal to `invalidated_index`.
    pub confirmed_at: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct SwingRef {
    index: usize,
    level: f64,
    crossed: bool,
}

/// Heap entry of an unmitigated block: (key bound, block index, other bound).
type Open = (Key, usize, Key);
/// Heap entry of a breaker: (key bound, block index).
type Breaker = (Key, usize);

/// Streaming order-block detector.
#[derive(Debug, Clone)]
pub(crate) struct OrderBlockDetector {
    close_mitigation: bool,
    last_high: Option<SwingRef>,
    last_low: Option<SwingRef>,
    /// Unmitigated bullish blocks by bottom, largest first.
    bull_open: BinaryHeap<Open>,
    /// Bullish breakers by top, smallest first.
    bull_breaker: BinaryHeap<Reverse<Breaker>>,
    /// Unmitigated bearish blocks by top, smallest first.
    bear_open: BinaryHeap<Reverse<Open>>,
    /// Bearish breakers by bottom, largest first.
    bear_breaker: BinaryHeap<Breaker>,
    scratch: Vec<StructureEvent>,
}

impl OrderBlockDetector {
    pub(crate) fn new(config: &OrderBlockConfig) -> Self {
        Self {
            close_mitigation: config.close_mitigation,
            last_high: None,
            last_low: None,
            bull_open: BinaryHeap::new(),
            bull_breaker: BinaryHeap::new(),
            bear_open: BinaryHeap::new(),
            bear_breaker: BinaryHeap::new(),
            scratch: Vec::new(),
        }
    }

    pub(crate) fn update(&mut self, bars: &[Bar], change: Option<&SwingChange>, out: &mut Vec<StructureEvent>) {
        let Some(t) = bars.len().checked_sub(1) else {
            return;
        };
        let bar = bars[t];
        let body_low = if self.close_mitigation {
            bar.open.min(bar.close)
        } else {
            bar.low
        };
        let body_high = if self.close_mitigation {
            bar.open.max(bar.close)
        } else {
            bar.high
        };

        // 1. Breakers mitigated at an earlier bar: invalidation.
        while let Some(&Reverse((Key(top), index))) = self.bull_breaker.peek() {
            if bar.high <= top {
                break;
            }
            self.bull_breaker.pop();
            self.scratch.push(invalidated(Direction::Bullish, index, t));
        }
        while let Some(&(Key(bottom), index)) = self.bear_breaker.peek() {
            if bar.low >= bottom {
                break;
            }
            self.bear_breaker.pop();
            self.scratch.push(invalidated(Direction::Bearish, index, t));
        }
        // 2. Blocks confirmed at an earlier bar: mitigation (checked for
        //    invalidation from the next bar on).
        while let Some(&(Key(bottom), index, top)) = self.bull_open.peek() {
            if body_low >= bottom {
                break;
            }
            self.bull_open.pop();
            self.bull_breaker.push(Reverse((top, index)));
            self.scratch.push(mitigated(Direction::Bullish, index, t));
        }
        while let Some(&Reverse((Key(top), index, bottom))) = self.bear_open.peek() {
            if body_high <= top {
                break;
            }
            self.bear_open.pop();
            self.bear_breaker.push((bottom, index));
            self.scratch.push(mitigated(Direction::Bearish, index, t));
        }
        if !self.scratch.is_empty() {
            // Invalidations first, then mitigations; each by block index.
            self.scratch
                .sort_by_key(|e| (matches!(e, StructureEvent::OrderBlockMitigated(_)), e.index()));
            out.append(&mut self.scratch);
        }

        // 3. The most recent swing of each kind known at t.
        if let Some(change) = change {
            let s = change.swing();
            let r = Some(SwingRef {
                index: s.index,
                level: s.level,
                crossed: false,
            });
            match s.kind {
                SwingKind::High => self.last_high = r,
                SwingKind::Low => self.last_low = r,
            }
        }

        // 4. A close through that swing confirms a block.
        if let Some(s) = self.last_high.as_mut()
            && !s.crossed
            && bar.close > s.level
        {
            s.crossed = true;
            let s = *s;
            if let Some(ob) = block(bars, t, s.index, Direction::Bullish) {
                self.bull_open.push((Key(ob.bottom), ob.index, Key(ob.top)));
                out.push(StructureEvent::OrderBlock(ob));
            }
        }
        if let Some(s) = self.last_low.as_mut()
            && !s.crossed
            && bar.close < s.level
        {
            s.crossed = true;
            let s = *s;
            if let Some(ob) = block(bars, t, s.index, Direction::Bearish) {
                self.bear_open.push(Reverse((Key(ob.top), ob.index, Key(ob.bottom))));
                out.push(StructureEvent::OrderBlock(ob));
            }
        }
    }
}

fn mitigated(direction: Direction, index: usize, t: usize) -> StructureEvent {
    StructureEvent::OrderBlockMitigated(OrderBlockMitigation {
        direction,
        index,
        mitigated_index: t,
        confirmed_at: t,
    })
}

fn invalidated(direction: Direction, index: usize, t: usize) -> StructureEvent {
    StructureEvent::OrderBlockInvalidated(OrderBlockInvalidation {
        direction,
        index,
        invalidated_index: t,
        confirmed_at: t,
    })
}

/// The order block formed when bar `t` closes through swing `s`.
fn block(bars: &[Bar], t: usize, s: usize, direction: Direction) -> Option<OrderBlock> {
    // smc: default to the previous bar, or the extreme bar of s+1 ..= t-1
    // (the last one on ties) when that range is not empty.
    let mut index = t.checked_sub(1)?;
    if t > s + 1 {
        let range = bars.get(s + 1..t)?;
        let mut best = s + 1;
        for (k, b) in range.iter().enumerate() {
            let better = match direction {
                Direction::Bullish => b.low <= bars[best].low,
                Direction::Bearish => b.high >= bars[best].high,
            };
            if better {
                best = s + 1 + k;
            }
        }
        index = best;
    }
    let candle = bars.get(index)?;
    let vol = |k: Option<usize>| k.and_then(|k| bars.get(k)).map_or(0.0, |b| b.volume);
    let (v0, v1, v2) = (vol(Some(t)), vol(t.checked_sub(1)), vol(t.checked_sub(2)));
    let (recent, older) = (v0 + v1, v2);
    let max = recent.max(older);
    let strength_percent = if max != 0.0 {
        recent.min(older) / max * 100.0
    } else {
        100.0
    };
    Some(OrderBlock {
        direction,
        index,
        time: time_of(bars, index),
        top: candle.high,
        bottom: candle.low,
        volume: v0 + v1 + v2,
        strength_percent,
        swing_index: s,
        confirmed_at: t,
    })
}
