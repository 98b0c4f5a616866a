//! Break of structure and change of character (smc's `bos_choch`).
//!
//! # Definition
//!
//! Take four consecutive swings of the alternating swing sequence, oldest
//! first, `s4, s3, s2, s1`, with levels `l4, l3, l2, l1`:
//!
//! | pattern | kinds | levels | meaning |
//! |---|---|---|---|
//! | bullish BOS | low, high, low, high | `l4 < l2 < l3 < l1` | higher low, then higher high |
//! | bearish BOS | high, low, high, low | `l4 > l2 > l3 > l1` | lower high, then lower low |
//! | bullish CHoCH | low, high, low, high | `l1 > l3 > l4 > l2` | lower low, then higher high |
//! | bearish CHoCH | high, low, high, low | `l1 < l3 < l4 < l2` | higher high, then lower low |
//!
//! The broken level is `l3` (the swing `s3`, the event's `index`). The break
//! is the first bar `j >= index + 2` that closes beyond it (above for
//! bullish, below for bearish; with `close_break = false`, whose high / low
//! goes beyond it). These are smc's rules.
//!
//! # When it is knowable
//!
//! The pattern needs `s1`, the swing *after* the break, so it is known when
//! `s1` is confirmed (or when a more extreme swing of `s1`'s leg makes the
//! pattern true; every pattern stays true when `s1` becomes more extreme).
//! The event is emitted at the later of that bar and the breaking bar `j`.
//!
//! smc additionally deletes a broken event when a *later* pattern (larger
//! `index`) was broken at or before its break bar. The same rule is applied
//! here with what is known when the event would be emitted: if such a later
//! pattern is already known and broken, the event is not emitted; if it only
//! becomes known afterwards, the event stays (it was true when reported).
//! Patterns that are never broken are never emitted (smc drops them too).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::swings::{SwingChange, SwingKind};
use super::util::Key;
use super::{Direction, StructureEvent, time_of};
use crate::Bar;
use crate::time::UnixMs;

/// BOS/CHoCH options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct BosChochConfig {
    /// Break on the close (true, smc's default) or on the high / low (false)
    /// (smc's `close_break`).
    pub close_break: bool,
}

impl Default for BosChochConfig {
    fn default() -> Self {
        Self { close_break: true }
    }
}

/// Break of structure (trend continuation) or change of character (trend
/// reversal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakKind {
    /// Break of structure: the trend continues.
    Bos,
    /// Change of character: the trend reverses.
    Choch,
}

/// A confirmed break of structure or change of character.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StructureBreak {
    /// BOS or CHoCH.
    pub kind: BreakKind,
    /// Bullish (level broken upwards) or bearish (downwards).
    pub direction: Direction,
    /// Index of the swing whose level was broken (smc's row).
    pub index: usize,
    /// Open time of that swing bar, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// The broken level (that swing's high or low).
    pub level: f64,
    /// Index of the first bar that closed (or traded) beyond the level.
    pub broken_index: usize,
    /// Indices of the four swings of the pattern, oldest first; `index` is
    /// the second.
    pub swings: [usize; 4],
    /// The later of `broken_index` and the bar that confirmed the pattern's
    /// last swing.
    pub confirmed_at: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct SeqSwing {
    kind: SwingKind,
    index: usize,
    level: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Candidate {
    kind: BreakKind,
    direction: Direction,
    index: usize,
    level: f64,
    swings: [usize; 4],
    broken: Option<usize>,
}

/// Streaming BOS/CHoCH detector.
#[derive(Debug, Clone)]
pub(crate) struct BosChochDetector {
    close_break: bool,
    /// The last four swings of the alternating sequence.
    seq: [Option<SeqSwing>; 4],
    /// `index` of the last swing that became a candidate.
    last_candidate: Option<usize>,
    candidates: Vec<Candidate>,
    /// Unbroken bullish candidates by level, smallest first.
    bull_pending: BinaryHeap<Reverse<(Key, usize)>>,
    /// Unbroken bearish candidates by level, largest first.
    bear_pending: BinaryHeap<(Key, usize)>,
    /// Broken candidates known so far: index -> break bar.
    broken: BTreeMap<usize, usize>,
    ready: Vec<usize>,
}

impl BosChochDetector {
    pub(crate) fn new(config: &BosChochConfig) -> Self {
        Self {
            close_break: config.close_break,
            seq: [None; 4],
            last_candidate: None,
            candidates: Vec::new(),
            bull_pending: BinaryHeap::new(),
            bear_pending: BinaryHeap::new(),
            broken: BTreeMap::new(),
            ready: Vec::new(),
        }
    }

    fn up(&self, bar: &Bar) -> f64 {
        if self.close_break { bar.close } else { bar.high }
    }

    fn down(&self, bar: &Bar) -> f64 {
        if self.close_break { bar.close } else { bar.low }
    }

    pub(crate) fn update(&mut self, bars: &[Bar], change: Option<&SwingChange>, out: &mut Vec<StructureEvent>) {
        let Some(t) = bars.len().checked_sub(1) else {
            return;
        };
        let bar = bars[t];
        // 1. Known candidates broken at t.
        let (up, down) = (self.up(&bar), self.down(&bar));
        while let Some(&Reverse((Key(level), id))) = self.bull_pending.peek() {
            if up <= level {
                break;
            }
            self.bull_pending.pop();
            self.mark_broken(id, t);
        }
        while let Some(&(Key(level), id)) = self.bear_pending.peek() {
            if down >= level {
                break;
            }
            self.bear_pending.pop();
            self.mark_broken(id, t);
        }

        // 2. The swing sequence changed: maybe a new candidate.
        if let Some(change) = change {
            let s = change.swing();
            let s = SeqSwing {
                kind: s.kind,
                index: s.index,
                level: s.level,
            };
            match change {
                SwingChange::NewLeg { .. } => {
                    self.seq.rotate_left(1);
                    self.seq[3] = Some(s);
                }
                SwingChange::Extended { .. } => self.seq[3] = Some(s),
            }
            if let Some(c) = self.pattern()
                && self.last_candidate != Some(c.index)
            {
                self.last_candidate = Some(c.index);
                self.add_candidate(bars, t, c);
            }
        }

        // 3. Emit what became known at t, unless a later pattern broke first.
        if !self.ready.is_empty() {
            self.ready.sort_by_key(|&id| self.candidates[id].index);
            for &id in &self.ready {
                let c = self.candidates[id];
                let Some(broken_index) = c.broken else { continue };
                let superseded = self.broken.range(c.index + 1..).any(|(_, &b)| b <= broken_index);
                if superseded {
                    continue;
                }
                out.push(StructureEvent::StructureBreak(StructureBreak {
                    kind: c.kind,
                    direction: c.direction,
                    index: c.index,
                    time: time_of(bars, c.index),
                    level: c.level,
                    broken_index,
                    swings: c.swings,
                    confirmed_at: t,
                }));
            }
            self.ready.clear();
        }
    }

    fn mark_broken(&mut self, id: usize, j: usize) {
        if let Some(c) = self.candidates.get_mut(id) {
            c.broken = Some(j);
            self.broken.insert(c.index, j);
            self.ready.push(id);
        }
    }

    /// smc's four patterns on the last four swings, if one holds.
    fn pattern(&self) -> Option<Candidate> {
        let [Some(s4), Some(s3), Some(s2), Some(s1)] = self.seq else {
            return None;
        };
        let (l4, l3, l2, l1) = (s4.level, s3.level, s2.level, s1.level);
        let kinds = [s4.kind, s3.kind, s2.kind, s1.kind];
        use SwingKind::{High, Low};
        let (kind, direction) = if kinds == [Low, High, Low, High] {
            if l4 < l2 && l2 < l3 && l3 < l1 {
                (BreakKind::Bos, Direction::Bullish)
            } else if l1 > l3 && l3 > l4 && l4 > l2 {
                (BreakKind::Choch, Direction::Bullish)
            } else {
                return None;
            }
        } else if kinds == [High, Low, High, Low] {
            if l4 > l2 && l2 > l3 && l3 > l1 {
                (BreakKind::Bos, Direction::Bearish)
            } else if l1 < l3 && l3 < l4 && l4 < l2 {
                (BreakKind::Choch, Direction::Bearish)
            } else {
                return None;
            }
        } else {
            return None;
        };
        Some(Candidate {
            kind,
            direction,
            index: s3.index,
            level: l3,
            swings: [s4.index, s3.index, s2.index, s1.index],
            broken: None,
        })
    }

    fn add_candidate(&mut self, bars: &[Bar], t: usize, c: Candidate) {
        let id = self.candidates.len();
        self.candidates.push(c);
        // Bars index+2 ..= t are known: the break may already have happened.
        let from = c.index + 2;
        let hit = bars.get(from..=t).and_then(|r| {
            r.iter().position(|b| match c.direction {
                Direction::Bullish => self.up(b) > c.level,
                Direction::Bearish => self.down(b) < c.level,
            })
        });
        match (hit, c.direction) {
            (Some(p), _) => self.mark_broken(id, from + p),
            (None, Direction::Bullish) => self.bull_pending.push(Reverse((Key(c.level), id))),
            (None, Direction::Bearish) => self.bear_pending.push((Key(c.level), id)),
        }
    }
}
