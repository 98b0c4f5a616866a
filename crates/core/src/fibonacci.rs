//! Fibonacci retracements and extensions of the last confirmed swing leg.
//!
//! The leg is the last two confirmed swings (one high, one low; swings
//! alternate once superseded extremes are dropped). When the high is the
//! later of the two the leg went **up** (low → high): retracements are
//! measured down from the high, `high − r · range`, and extensions project
//! above the low, `low + e · range`. When the low is later the leg went
//! **down**: retracements `low + r · range`, extensions `high − e · range`.
//! Ratios: retracements 0.236, 0.382, 0.5, 0.618, 0.786; extensions 1.272,
//! 1.618, 2.618.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::fibonacci::{LegDirection, levels};
//! use tradeterm_core::regime::SwingPoint;
//!
//! let low = SwingPoint { index: 3, time: 0, price: 1.1000, confirmed_at: 5 };
//! let high = SwingPoint { index: 9, time: 0, price: 1.1200, confirmed_at: 11 };
//! let fib = levels(high, low, LegDirection::Up)?;
//! let golden = fib.retracements.iter().find(|l| l.ratio == 0.618).ok_or("no 0.618")?;
//! assert!((golden.price - 1.10764).abs() < 1e-9); // 61.8 % of the leg down from the high
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::regime::{SwingPoint, swings_and_breaks};
use crate::structure::SwingKind;
use crate::{Bar, CoreError};

/// Retracement ratios.
pub const RETRACEMENTS: [f64; 5] = [0.236, 0.382, 0.5, 0.618, 0.786];
/// Extension ratios.
pub const EXTENSIONS: [f64; 3] = [1.272, 1.618, 2.618];

/// Direction of the measured leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LegDirection {
    /// Low first, then high.
    Up,
    /// High first, then low.
    Down,
}

/// One level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FibLevel {
    /// The ratio (0.618, 1.272, ...).
    pub ratio: f64,
    /// The price.
    pub price: f64,
}

/// Levels of one leg.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FibLevels {
    /// Direction of the leg.
    pub direction: LegDirection,
    /// Swing high of the leg.
    pub high: SwingPoint,
    /// Swing low of the leg.
    pub low: SwingPoint,
    /// `high − low`.
    pub range: f64,
    /// Retracements, in ratio order.
    pub retracements: Vec<FibLevel>,
    /// Extensions, in ratio order.
    pub extensions: Vec<FibLevel>,
}

/// Levels of a leg between `high` and `low` (see the module documentation).
///
/// # Errors
/// [`CoreError::InvalidInput`] when a price is not finite or the high is
/// below the low.
pub fn levels(high: SwingPoint, low: SwingPoint, direction: LegDirection) -> Result<FibLevels, CoreError> {
    if !high.price.is_finite() || !low.price.is_finite() {
        return Err(CoreError::InvalidInput("swing prices must be finite".into()));
    }
    if high.price < low.price {
        return Err(CoreError::InvalidInput(format!(
            "swing high {} is below swing low {}",
            high.price, low.price
        )));
    }
    let range = high.price - low.price;
    let (h, l) = (high.price, low.price);
    let retr = |r: f64| match direction {
        LegDirection::Up => h - r * range,
        LegDirection::Down => l + r * range,
    };
    let ext = |e: f64| match direction {
        LegDirection::Up => l + e * range,
        LegDirection::Down => h - e * range,
    };
    Ok(FibLevels {
        direction,
        high,
        low,
        range,
        retracements: RETRACEMENTS
            .iter()
            .map(|&r| FibLevel {
                ratio: r,
                price: retr(r),
            })
            .collect(),
        extensions: EXTENSIONS
            .iter()
            .map(|&e| FibLevel {
                ratio: e,
                price: ext(e),
            })
            .collect(),
    })
}

/// Levels of the last confirmed swing leg of `bars` (swings of
/// `swing_length`, as [`crate::structure`] detects them).
///
/// # Errors
/// Those of [`crate::structure::detect`] (bad `swing_length`, invalid series,
/// too few bars), and [`CoreError::InvalidInput`] when fewer than one swing
/// high and one swing low were confirmed.
pub fn from_bars(bars: &[Bar], swing_length: usize) -> Result<FibLevels, CoreError> {
    let (swings, _) = swings_and_breaks(bars, swing_length)?;
    let high = swings.iter().rev().find(|s| s.kind == SwingKind::High);
    let low = swings.iter().rev().find(|s| s.kind == SwingKind::Low);
    let (Some(high), Some(low)) = (high, low) else {
        return Err(CoreError::InvalidInput(format!(
            "no confirmed swing high/low pair with swing_length {swing_length} in {} bars",
            bars.len()
        )));
    };
    let direction = if high.index > low.index {
        LegDirection::Up
    } else {
        LegDirection::Down
    };
    let p = |s: &crate::structure::Swing| SwingPoint {
        index: s.index,
        time: s.time,
        price: s.level,
        confirmed_at: s.confirmed_at,
    };
    levels(p(high), p(low), direction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regime::tests::from_closes;

    fn sp(price: f64, index: usize) -> SwingPoint {
        SwingPoint {
            index,
            time: 0,
            price,
            confirmed_at: index,
        }
    }

    #[test]
    fn levels_by_hand() {
        let up = levels(sp(2.0, 5), sp(1.0, 1), LegDirection::Up).unwrap();
        let prices: Vec<f64> = up.retracements.iter().map(|l| l.price).collect();
        let want = [1.764, 1.618, 1.5, 1.382, 1.214];
        for (p, w) in prices.iter().zip(want) {
            assert!((p - w).abs() < 1e-12, "{p} vs {w}");
        }
        let ext: Vec<f64> = up.extensions.iter().map(|l| l.price).collect();
        for (p, w) in ext.iter().zip([2.272, 2.618, 3.618]) {
            assert!((p - w).abs() < 1e-12, "{p} vs {w}");
        }
        let down = levels(sp(2.0, 1), sp(1.0, 5), LegDirection::Down).unwrap();
        assert!((down.retracements[1].price - 1.382).abs() < 1e-12);
        assert!((down.extensions[0].price - 0.728).abs() < 1e-12);
        assert!(levels(sp(1.0, 1), sp(2.0, 2), LegDirection::Up).is_err());
        assert!(levels(sp(f64::NAN, 1), sp(2.0, 2), LegDirection::Up).is_err());
    }

    #[test]
    fn from_synthetic_bars() {
        // Rise from 100 to 110 (bar 20), fall to 104 (bar 30), rise to 108, flat.
        let mut closes: Vec<f64> = (0..=20).map(|i| 100.0 + i as f64 * 0.5).collect();
        closes.extend((1..=10).map(|i| 110.0 - i as f64 * 0.6));
        closes.extend((1..=8).map(|i| 104.0 + i as f64 * 0.5));
        let n = closes.len();
        let bars = from_closes(&closes, &vec![0.0; n]);
        let f = from_bars(&bars, 3).unwrap();
        assert_eq!(f.direction, LegDirection::Down, "{f:?}");
        assert_eq!((f.high.index, f.high.price), (20, 110.0));
        assert_eq!(f.low.index, 30);
        assert!((f.low.price - 104.0).abs() < 1e-9);
        assert!((f.retracements[2].price - 107.0).abs() < 1e-9);
        assert!(from_bars(&bars[..5], 1).is_err()); // monotonic: no pair
        assert!(from_bars(&bars, 0).is_err());
    }

    #[test]
    fn real_data_levels_are_ordered() {
        let bars = crate::bars::parse_csv(include_str!("../../../data/market/eurusd_15m_smc_upstream.csv")).unwrap();
        for end in (500..bars.len()).step_by(1_013) {
            let f = from_bars(&bars[end - 500..end], 10).unwrap();
            assert!(f.range >= 0.0);
            let r: Vec<f64> = f.retracements.iter().map(|l| l.price).collect();
            let ext: Vec<f64> = f.extensions.iter().map(|l| l.price).collect();
            match f.direction {
                LegDirection::Up => {
                    assert!(r.windows(2).all(|w| w[0] >= w[1]));
                    assert!(ext.iter().all(|e| *e >= f.high.price));
                    assert!(f.high.index > f.low.index);
                }
                LegDirection::Down => {
                    assert!(r.windows(2).all(|w| w[0] <= w[1]));
                    assert!(ext.iter().all(|e| *e <= f.low.price));
                    assert!(f.low.index > f.high.index);
                }
            }
        }
    }
}
