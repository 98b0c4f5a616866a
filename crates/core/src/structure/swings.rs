//! Swing highs and lows (smc's `swing_highs_lows`), confirmed `swing_length`
//! bars after the swing bar.
//!
//! # Definition
//!
//! With `n = swing_length`, bar `i` is a *pivot high* when its high is the
//! highest high of bars `i - n + 1 ..= i + n`, and a *pivot low* when its low
//! is the lowest low of the same window (a bar that is both counts as a high,
//! as in smc). As in smc the first candidate is bar `2n - 1`. The pivot is
//! knowable at the close of bar `i + n`.
//!
//! smc then keeps a single swing per *leg* (a run of consecutive pivots of
//! the same kind): the most extreme one, the first on ties. Knowing which
//! pivot of a leg is the most extreme needs the end of the leg, i.e. the
//! future. Here the leg is followed as it grows: its first pivot is emitted,
//! and a later pivot of the same leg is emitted only when it is strictly more
//! extreme than every earlier one, with [`Swing::supersedes`] naming the
//! swing it replaces. The swings that are never superseded are exactly smc's
//! (apart from the two artificial swings smc writes on the first and last
//! bars of the series, which are not emitted here).

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{StructureEvent, time_of};
use crate::Bar;
use crate::time::UnixMs;

/// Whether a swing is a high or a low.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SwingKind {
    /// Swing high (smc's `HighLow = 1`).
    High,
    /// Swing low (smc's `HighLow = -1`).
    Low,
}

impl SwingKind {
    /// smc's sign convention: `1` for a high, `-1` for a low.
    pub const fn sign(self) -> i8 {
        match self {
            Self::High => 1,
            Self::Low => -1,
        }
    }

    /// Whether `a` is strictly beyond `b` in this kind's direction (higher for
    /// highs, lower for lows).
    pub(crate) fn beyond(self, a: f64, b: f64) -> bool {
        match self {
            Self::High => a > b,
            Self::Low => a < b,
        }
    }
}

/// A confirmed swing high or low.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Swing {
    /// High or low.
    pub kind: SwingKind,
    /// Index of the swing bar.
    pub index: usize,
    /// Open time of the swing bar, unix milliseconds UTC.
    pub time: UnixMs,
    /// The swing bar's high (for a high) or low (for a low).
    pub level: f64,
    /// Index of the bar that confirmed the swing: `index + swing_length`.
    pub confirmed_at: usize,
    /// When set, this swing is a more extreme swing of the same leg (no
    /// opposite swing in between) and replaces the swing at that index as the
    /// leg's extreme. The replaced event stays as it was; it is simply no
    /// longer the latest word on this leg.
    pub supersedes: Option<usize>,
}

/// How the swing sequence changed at one bar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SwingChange {
    /// A swing of the opposite kind started a new leg. `closed` is the final
    /// swing of the previous leg (it can no longer be superseded).
    NewLeg { swing: Swing, closed: Option<Swing> },
    /// A more extreme swing replaced the current leg's extreme.
    Extended { swing: Swing },
}

impl SwingChange {
    /// The swing emitted by this change.
    pub(crate) fn swing(&self) -> &Swing {
        match self {
            Self::NewLeg { swing, .. } | Self::Extended { swing } => swing,
        }
    }
}

/// Streaming swing detector: sliding-window maximum / minimum over the last
/// `2n` bars with monotonic deques (amortised O(1) per bar).
#[derive(Debug, Clone)]
pub(crate) struct SwingDetector {
    n: usize,
    max_q: VecDeque<usize>,
    min_q: VecDeque<usize>,
    /// Extreme swing of the current leg.
    last: Option<Swing>,
}

impl SwingDetector {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            n,
            max_q: VecDeque::with_capacity(2 * n + 1),
            min_q: VecDeque::with_capacity(2 * n + 1),
            last: None,
        }
    }

    /// Processes the last bar of `bars` (the bars fed so far) and pushes the
    /// swing event it confirms, if any.
    pub(crate) fn update(&mut self, bars: &[Bar], out: &mut Vec<StructureEvent>) -> Option<SwingChange> {
        let t = bars.len().checked_sub(1)?;
        let n = self.n;
        let window = 2 * n;
        let bar = bars[t];
        while self.max_q.back().is_some_and(|&b| bars[b].high <= bar.high) {
            self.max_q.pop_back();
        }
        self.max_q.push_back(t);
        while self.min_q.back().is_some_and(|&b| bars[b].low >= bar.low) {
            self.min_q.pop_back();
        }
        self.min_q.push_back(t);
        while self.max_q.front().is_some_and(|&f| f + window <= t) {
            self.max_q.pop_front();
        }
        while self.min_q.front().is_some_and(|&f| f + window <= t) {
            self.min_q.pop_front();
        }
        // Candidate i = t - n with window i-n+1 ..= i+n = t-2n+1 ..= t; smc's
        // rolling window needs i >= 2n - 1, i.e. t >= 3n - 1.
        if t + 1 < 3 * n {
            return None;
        }
        let i = t - n;
        let max = bars[*self.max_q.front()?].high;
        let min = bars[*self.min_q.front()?].low;
        let (kind, level) = if bars[i].high >= max {
            (SwingKind::High, bars[i].high)
        } else if bars[i].low <= min {
            (SwingKind::Low, bars[i].low)
        } else {
            return None;
        };
        let mut swing = Swing {
            kind,
            index: i,
            time: time_of(bars, i),
            level,
            confirmed_at: t,
            supersedes: None,
        };
        let change = match self.last.take() {
            Some(prev) if prev.kind == kind => {
                if !kind.beyond(level, prev.level) {
                    self.last = Some(prev);
                    return None;
                }
                swing.supersedes = Some(prev.index);
                SwingChange::Extended { swing: swing.clone() }
            }
            closed => SwingChange::NewLeg {
                swing: swing.clone(),
                closed,
            },
        };
        self.last = Some(swing.clone());
        out.push(StructureEvent::Swing(swing));
        Some(change)
    }
}
