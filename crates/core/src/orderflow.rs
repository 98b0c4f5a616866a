//! Tick-rule order flow: who was more aggressive, buyers or sellers?
//!
//! Spot FX has no central tape and no real traded volume, so this is a
//! **tick-count** estimate, not a volume delta. Each tick is signed by the
//! tick rule on its mid price `(bid + ask) / 2`:
//!
//! - uptick (mid above the previous mid): `+1` (buy);
//! - downtick (mid below): `−1` (sell);
//! - zero tick (mid unchanged): the previous tick's sign; the first tick, and
//!   zero ticks before any move, are unsigned (`0`).
//!
//! `delta = buy_ticks − sell_ticks`; `imbalance = delta / (buy_ticks +
//! sell_ticks)` in `[−1, 1]` (0 when no tick is signed).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::orderflow::tick_signs;
//!
//! // First tick unsigned, uptick, zero tick (keeps the last sign), downtick.
//! assert_eq!(tick_signs(&[1.0, 1.1, 1.1, 1.05]), [0, 1, 1, -1]);
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::time::UnixMs;
use crate::{CoreError, Tick};

/// Delta of one time bucket.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FlowBucket {
    /// Bucket start, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Ticks in the bucket.
    pub ticks: usize,
    /// Signed sum of the bucket's ticks.
    pub delta: i64,
    /// Cumulative delta at the end of the bucket.
    pub cumulative_delta: i64,
    /// Mid price of the bucket's last tick.
    pub close_mid: f64,
}

/// Result of [`tick_rule_flow`].
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct OrderFlow {
    /// Ticks analysed.
    pub ticks: usize,
    /// Ticks signed `+1`.
    pub buy_ticks: usize,
    /// Ticks signed `−1`.
    pub sell_ticks: usize,
    /// Ticks left unsigned (the first tick and zero ticks before any move).
    pub unsigned_ticks: usize,
    /// Ticks whose mid moved up.
    pub upticks: usize,
    /// Ticks whose mid moved down.
    pub downticks: usize,
    /// Ticks whose mid did not move (after the first).
    pub zero_ticks: usize,
    /// `buy_ticks − sell_ticks` (the final cumulative delta).
    pub delta: i64,
    /// `delta / (buy_ticks + sell_ticks)`, −1 to 1.
    pub imbalance: f64,
    /// Mid of the first tick.
    pub first_mid: f64,
    /// Mid of the last tick.
    pub last_mid: f64,
    /// Time of the first tick.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub from: UnixMs,
    /// Time of the last tick.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub to: UnixMs,
    /// Per-bucket delta, oldest first (buckets without ticks are omitted).
    pub buckets: Vec<FlowBucket>,
}

/// Signs each tick by the tick rule (see the module documentation).
pub fn tick_signs(mids: &[f64]) -> Vec<i8> {
    let mut prev_sign = 0i8;
    let mut out = Vec::with_capacity(mids.len());
    for (i, m) in mids.iter().enumerate() {
        let sign = match i.checked_sub(1).map(|j| mids[j]) {
            None => 0,
            Some(p) if *m > p => 1,
            Some(p) if *m < p => -1,
            Some(_) => prev_sign,
        };
        prev_sign = sign;
        out.push(sign);
    }
    out
}

/// Tick-rule order flow of `ticks` (oldest first), with deltas per bucket of
/// `bucket_ms` (aligned on the unix epoch).
///
/// # Errors
/// [`CoreError::InvalidParameter`] for `bucket_ms ≤ 0`;
/// [`CoreError::InvalidInput`] for no ticks, a non-finite or non-positive
/// price, an ask below the bid, or times going backwards.
pub fn tick_rule_flow(ticks: &[Tick], bucket_ms: i64) -> Result<OrderFlow, CoreError> {
    if bucket_ms <= 0 {
        return Err(CoreError::param("bucket_ms", "must be positive"));
    }
    let (Some(first), Some(last)) = (ticks.first(), ticks.last()) else {
        return Err(CoreError::InvalidInput("no ticks".into()));
    };
    for (i, t) in ticks.iter().enumerate() {
        if !(t.bid.is_finite() && t.ask.is_finite()) || t.bid <= 0.0 || t.ask < t.bid {
            return Err(CoreError::InvalidInput(format!(
                "tick {i} at {} has an invalid quote (bid {}, ask {})",
                t.time, t.bid, t.ask
            )));
        }
        if i > 0 && t.time < ticks[i - 1].time {
            return Err(CoreError::InvalidInput(format!("tick times go backwards at tick {i}")));
        }
    }
    let mids: Vec<f64> = ticks.iter().map(Tick::mid).collect();
    let signs = tick_signs(&mids);
    let mut flow = OrderFlow {
        ticks: ticks.len(),
        buy_ticks: signs.iter().filter(|s| **s > 0).count(),
        sell_ticks: signs.iter().filter(|s| **s < 0).count(),
        unsigned_ticks: signs.iter().filter(|s| **s == 0).count(),
        upticks: mids.windows(2).filter(|w| w[1] > w[0]).count(),
        downticks: mids.windows(2).filter(|w| w[1] < w[0]).count(),
        zero_ticks: mids.windows(2).filter(|w| w[1] == w[0]).count(),
        delta: 0,
        imbalance: 0.0,
        first_mid: first.mid(),
        last_mid: last.mid(),
        from: first.time,
        to: last.time,
        buckets: Vec::new(),
    };
    flow.delta = flow.buy_ticks as i64 - flow.sell_ticks as i64;
    let signed = flow.buy_ticks + flow.sell_ticks;
    flow.imbalance = if signed > 0 {
        flow.delta as f64 / signed as f64
    } else {
        0.0
    };
    let mut buckets: BTreeMap<UnixMs, FlowBucket> = BTreeMap::new();
    for ((t, s), m) in ticks.iter().zip(&signs).zip(&mids) {
        let start = t.time - t.time.rem_euclid(bucket_ms);
        let b = buckets.entry(start).or_insert(FlowBucket {
            time: start,
            ticks: 0,
            delta: 0,
            cumulative_delta: 0,
            close_mid: *m,
        });
        b.ticks += 1;
        b.delta += i64::from(*s);
        b.close_mid = *m;
    }
    let mut cum = 0;
    flow.buckets = buckets
        .into_values()
        .map(|mut b| {
            cum += b.delta;
            b.cumulative_delta = cum;
            b
        })
        .collect();
    Ok(flow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(time: i64, mid: f64) -> Tick {
        Tick {
            symbol: "EURUSD".into(),
            bid: mid - 0.0001,
            ask: mid + 0.0001,
            time,
        }
    }

    #[test]
    fn tick_rule_by_hand() {
        // mids: 1 (first, unsigned), 1 (zero before any move → 0), 2 (+), 2 (carry +), 1 (−), 1 (carry −), 3 (+)
        let mids = [1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 3.0];
        assert_eq!(tick_signs(&mids), vec![0, 0, 1, 1, -1, -1, 1]);
        let ticks: Vec<Tick> = mids
            .iter()
            .enumerate()
            .map(|(i, m)| tick(i as i64 * 30_000, *m))
            .collect();
        let f = tick_rule_flow(&ticks, 60_000).unwrap();
        assert_eq!((f.buy_ticks, f.sell_ticks, f.unsigned_ticks), (3, 2, 2));
        assert_eq!((f.upticks, f.downticks, f.zero_ticks), (2, 1, 3));
        assert_eq!(f.delta, 1);
        assert!((f.imbalance - 0.2).abs() < 1e-12);
        // Buckets of one minute: [0, 0], [1, 1], [−1, −1], [1].
        let d: Vec<(i64, i64)> = f.buckets.iter().map(|b| (b.delta, b.cumulative_delta)).collect();
        assert_eq!(d, vec![(0, 0), (2, 2), (-2, 0), (1, 1)]);
        assert_eq!(f.buckets[3].close_mid, 3.0);
    }

    #[test]
    fn bad_input() {
        assert!(tick_rule_flow(&[], 60_000).is_err());
        assert!(tick_rule_flow(&[tick(0, 1.0)], 0).is_err());
        let mut crossed = tick(0, 1.0);
        crossed.ask = 0.5;
        assert!(tick_rule_flow(&[crossed], 60_000).is_err());
        assert!(tick_rule_flow(&[tick(10, 1.0), tick(5, 1.0)], 60_000).is_err());
        let f = tick_rule_flow(&[tick(0, 1.0), tick(1, 1.0)], 60_000).unwrap();
        assert_eq!((f.delta, f.imbalance), (0, 0.0));
    }

    #[test]
    fn synthetic_rally_is_buy_dominated() {
        let ticks: Vec<Tick> = (0..1000)
            .map(|i| tick(i * 1000, 1.1 + i as f64 * 1e-5 + if i % 3 == 0 { -2e-5 } else { 0.0 }))
            .collect();
        let f = tick_rule_flow(&ticks, 60_000).unwrap();
        assert!(f.delta > 0 && f.imbalance > 0.0, "{f:?}");
        assert_eq!(f.buckets.last().unwrap().cumulative_delta, f.delta);
    }
}
