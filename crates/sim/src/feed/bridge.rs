//! The price path inside one base bar: a seeded walk from the open through
//! the high and the low (in a seeded order) to the close.
//!
//! The path is a list of knots (time, bid) joined by straight lines. Its
//! maximum is exactly the bar's high and its minimum exactly the bar's low,
//! so bars re-aggregated from the path reproduce the source bar.

use super::BaseBar;
use crate::rng::Rng;

/// Knots of the bar's bid path, in time order, from `start` (the open) to
/// `end` (the close).
pub(crate) fn knots(bar: &BaseBar) -> Vec<(i64, f64)> {
    let mut rng = Rng::new(bar.key);
    let (o, c) = (bar.open, bar.close);
    let lo = bar.low.min(bar.high);
    let hi = bar.low.max(bar.high);
    let range = hi - lo;
    // Up bars more often make their low first, down bars their high.
    let low_first = rng.f64() < if c >= o { 0.65 } else { 0.35 };
    let (e1, e2) = if low_first { (lo, hi) } else { (hi, lo) };
    let u1 = 0.05 + 0.40 * rng.f64();
    let u2 = 0.55 + 0.40 * rng.f64();
    let anchors = [(0.0, o), (u1, e1), (u2, e2), (1.0, c)];
    let dur = (bar.end - bar.start).max(1);
    // A knot every two minutes or so within an hour bar, every four within a day bar.
    let m = ((dur / 60_000) / 6).clamp(2, 120) as usize;
    let at = |u: f64| bar.start + (u * dur as f64) as i64;
    let mut out = Vec::with_capacity(4 + 3 * (m + 1));
    out.push((bar.start, o));
    let mut walk = vec![0.0; m + 2];
    for seg in anchors.windows(2) {
        let ((ua, pa), (ub, pb)) = (seg[0], seg[1]);
        // A random walk pinned to zero at both ends (a Brownian bridge).
        for j in 1..=m + 1 {
            walk[j] = walk[j - 1] + rng.normal();
        }
        let total = walk[m + 1];
        let scale = 0.3 * range / ((m + 1) as f64).sqrt();
        for (j, w) in walk.iter().enumerate().take(m + 1).skip(1) {
            let f = j as f64 / (m + 1) as f64;
            let p = (pa + f * (pb - pa) + scale * (w - f * total)).max(lo).min(hi);
            out.push((at(ua + f * (ub - ua)), p));
        }
        out.push((at(ub), pb));
    }
    out
}

/// Value of the path at `t` (clamped to the first and last knot).
pub(crate) fn interpolate(knots: &[(i64, f64)], t: i64) -> f64 {
    let i = knots.partition_point(|k| k.0 <= t);
    match (i.checked_sub(1).and_then(|j| knots.get(j)), knots.get(i)) {
        (Some(&(ta, pa)), Some(&(tb, pb))) if tb > ta => pa + (pb - pa) * ((t - ta) as f64 / (tb - ta) as f64),
        (Some(&(_, pa)), _) => pa,
        (None, Some(&(_, pb))) => pb,
        (None, None) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_touches_high_and_low_and_ends_at_close() {
        let bar = BaseBar {
            start: 0,
            end: 3_600_000,
            open: 1.1,
            high: 1.105,
            low: 1.098,
            close: 1.103,
            key: 9,
        };
        let k = knots(&bar);
        assert_eq!(k.first().unwrap().1, 1.1);
        assert_eq!(k.last().unwrap(), &(3_600_000, 1.103));
        let max = k.iter().map(|x| x.1).fold(f64::MIN, f64::max);
        let min = k.iter().map(|x| x.1).fold(f64::MAX, f64::min);
        assert_eq!(max, 1.105);
        assert_eq!(min, 1.098);
        assert!(k.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(knots(&bar), k, "same key, same path");
        let mid = interpolate(&k, 1_800_000);
        assert!((1.098..=1.105).contains(&mid));
        assert_eq!(interpolate(&k, -5), 1.1);
        assert!(interpolate(&[], 0).is_nan());
    }

    #[test]
    fn daily_bars_get_more_knots() {
        let bar = BaseBar {
            start: 0,
            end: 86_400_000,
            open: 10.0,
            high: 12.0,
            low: 9.0,
            close: 11.0,
            key: 1,
        };
        assert!(knots(&bar).len() > 100);
        let flat = BaseBar {
            start: 0,
            end: 60_000,
            open: 1.0,
            high: 1.0,
            low: 1.0,
            close: 1.0,
            key: 1,
        };
        assert!(knots(&flat).iter().all(|k| k.1 == 1.0));
    }
}
