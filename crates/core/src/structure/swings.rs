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
    /// Open time of the swing bar, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
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

/// Streaming swing detector. The window maximum / minimum over the last
/// `w = 2n` bars uses fixed blocks of `w` bars (van Herk / Gil-Werman): a
/// running maximum since the current block started, plus the suffix maxima
/// of the previous block, computed once when that block completed. Every
/// window of `w` bars is one block or a suffix of one block and a prefix of
/// the next, so its maximum is one `max` away; about six `max` per bar, no
/// data-dependent branches.
#[derive(Debug, Clone)]
pub(crate) struct SwingDetector {
    n: usize,
    /// Position of the next bar within its block (`index % 2n`).
    offset: usize,
    /// Highest high / lowest low since the current block started.
    prefix_high: f64,
    prefix_low: f64,
    /// Suffix maxima / minima of the previous complete block.
    suffix_high: Vec<f64>,
    suffix_low: Vec<f64>,
    /// Extreme swing of the current leg.
    last: Option<Swing>,
}

impl SwingDetector {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            n,
            offset: 0,
            prefix_high: f64::NEG_INFINITY,
            prefix_low: f64::INFINITY,
            suffix_high: vec![f64::NEG_INFINITY; 2 * n],
            suffix_low: vec![f64::INFINITY; 2 * n],
            last: None,
        }
    }

    /// Processes the last bar of `bars` (the bars fed so far) and pushes the
    /// swing event it confirms, if any.
    pub(crate) fn update(&mut self, bars: &[Bar], out: &mut Vec<StructureEvent>) -> Option<SwingChange> {
        let t = bars.len().checked_sub(1)?;
        let n = self.n;
        let w = 2 * n;
        let bar = bars[t];
        let offset = self.offset;
        self.offset = if offset + 1 == w { 0 } else { offset + 1 };
        if offset == 0 {
            self.prefix_high = bar.high;
            self.prefix_low = bar.low;
        } else {
            self.prefix_high = max(self.prefix_high, bar.high);
            self.prefix_low = min(self.prefix_low, bar.low);
        }
        // Window t-w+1 ..= t: a whole block when t ends one, else the suffix
        // of the previous block from t-w+1 plus the current prefix.
        let (window_high, window_low) = if offset == w - 1 {
            (self.prefix_high, self.prefix_low)
        } else {
            let k = offset + 1;
            (
                max(self.prefix_high, self.suffix_high[k]),
                min(self.prefix_low, self.suffix_low[k]),
            )
        };
        if offset == w - 1 {
            // The block just completed: its suffix extremes serve the next block.
            let block = &bars[t + 1 - w..=t];
            let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
            for (k, b) in block.iter().enumerate().rev() {
                hi = max(hi, b.high);
                lo = min(lo, b.low);
                self.suffix_high[k] = hi;
                self.suffix_low[k] = lo;
            }
        }
        // Candidate i = t - n with window i-n+1 ..= i+n = t-2n+1 ..= t; smc's
        // rolling window needs i >= 2n - 1, i.e. t >= 3n - 1.
        if t + 1 < 3 * n {
            return None;
        }
        let i = t - n;
        let (kind, level) = if bars[i].high >= window_high {
            (SwingKind::High, bars[i].high)
        } else if bars[i].low <= window_low {
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

/// `max` for values known not to be NaN (bars are validated): one `maxsd`.
fn max(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// `min` for values known not to be NaN (bars are validated): one `minsd`.
fn min(a: f64, b: f64) -> f64 {
    if a < b { a } else { b }
}
