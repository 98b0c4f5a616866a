//! Moving average convergence/divergence.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ExponentialMovingAverage;
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, run_bars, run_values};
use crate::{Bar, CoreError};

/// One MACD step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MovingAverageConvergenceDivergenceOutput {
    /// Fast EMA minus slow EMA.
    pub macd: f64,
    /// EMA of the MACD line.
    pub signal: f64,
    /// `macd - signal`.
    pub histogram: f64,
}

/// Batch MACD: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MovingAverageConvergenceDivergenceSeries {
    /// MACD line.
    pub macd: Vec<Option<f64>>,
    /// Signal line.
    pub signal: Vec<Option<f64>>,
    /// Histogram.
    pub histogram: Vec<Option<f64>>,
}

/// MACD: the difference of a fast and a slow EMA, its signal EMA and the
/// histogram between them, aligned exactly as TA-Lib's `TA_MACD`.
///
/// # Formula
///
/// Both EMAs are seeded at the same bar, `slow - 1`: the slow one with the
/// SMA of the first `slow` values, the fast one with the SMA of the `fast`
/// values ending at that bar (this is TA-Lib's alignment; a fast EMA started
/// at bar `fast - 1` would differ). From there
/// `macd = EMA_fast - EMA_slow`, `signal = EMA_signal(macd)` (seeded with the
/// SMA of its first `signal` values) and `histogram = macd - signal`.
///
/// # Parameters
///
/// - `fast`: 2 ..= 10 000 (default 12).
/// - `slow`: 2 ..= 10 000 (default 26). When `slow` is below `fast` the two
///   are swapped, as `TA_MACD` does ([`Self::periods`] reports them as used).
/// - `signal`: 1 ..= 10 000 (default 9).
///
/// Warm-up: all three lines start at index `slow + signal - 2` (33 with the
/// defaults), like `TA_MACD`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::MovingAverageConvergenceDivergence;
///
/// let macd = MovingAverageConvergenceDivergence::default();
/// let closes: Vec<f64> = (0..40).map(|i| 100.0 + i as f64).collect();
/// let out = macd.over_values(&closes)?;
/// assert!(out.macd[32].is_none());
/// assert!(out.macd[33].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MACD")]
#[derive(Debug, Clone)]
pub struct MovingAverageConvergenceDivergence {
    fast: usize,
    slow: usize,
    signal_period: usize,
    warmup: Vec<f64>,
    fast_ema: f64,
    slow_ema: f64,
    seeded: bool,
    k_fast: f64,
    k_slow: f64,
    signal: ExponentialMovingAverage,
    /// TA-Lib's `MACDFIX` factors (0.15 and 0.075) instead of `2/(n+1)`.
    fixed: bool,
}

impl MovingAverageConvergenceDivergence {
    /// Default periods (fast, slow, signal).
    pub const DEFAULTS: (usize, usize, usize) = (12, 26, 9);

    /// Builds a MACD.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a period is out of range.
    pub fn new(fast: usize, slow: usize, signal: usize) -> Result<Self, CoreError> {
        let fast = check_period("fast", fast, 2)?;
        let slow = check_period("slow", slow, 2)?;
        let signal_period = check_period("signal", signal, 1)?;
        // TA-Lib's rule: the shorter period is the fast one.
        let (fast, slow) = if slow < fast { (slow, fast) } else { (fast, slow) };
        let signal = ExponentialMovingAverage::unchecked_fused(signal_period);
        Ok(Self {
            fast,
            slow,
            signal_period,
            warmup: Vec::with_capacity(slow),
            fast_ema: 0.0,
            slow_ema: 0.0,
            seeded: false,
            k_fast: 0.0,
            k_slow: 0.0,
            signal,
            fixed: false,
        })
    }

    /// TA-Lib's `MACDFIX`: periods 12 and 26 with the fixed factors 0.15 and
    /// 0.075 (the signal period checked by the caller).
    fn fixed(signal: usize) -> Self {
        Self {
            fixed: true,
            ..Self::default_with_signal(signal)
        }
    }

    fn default_with_signal(g: usize) -> Self {
        let (f, s, _) = Self::DEFAULTS;
        Self {
            fast: f,
            slow: s,
            signal_period: g,
            warmup: Vec::with_capacity(s),
            fast_ema: 0.0,
            slow_ema: 0.0,
            seeded: false,
            k_fast: 0.0,
            k_slow: 0.0,
            signal: ExponentialMovingAverage::unchecked_fused(g),
            fixed: false,
        }
    }

    /// `(fast, slow, signal)` periods.
    pub fn periods(&self) -> (usize, usize, usize) {
        (self.fast, self.slow, self.signal_period)
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<MovingAverageConvergenceDivergenceSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<MovingAverageConvergenceDivergenceSeries, CoreError> {
        Ok(Self::split(&run_values(self, values)?))
    }

    fn split(outs: &[Option<MovingAverageConvergenceDivergenceOutput>]) -> MovingAverageConvergenceDivergenceSeries {
        MovingAverageConvergenceDivergenceSeries {
            macd: outs.iter().map(|o| o.map(|m| m.macd)).collect(),
            signal: outs.iter().map(|o| o.map(|m| m.signal)).collect(),
            histogram: outs.iter().map(|o| o.map(|m| m.histogram)).collect(),
        }
    }
}

impl Default for MovingAverageConvergenceDivergence {
    fn default() -> Self {
        Self::default_with_signal(Self::DEFAULTS.2)
    }
}

impl Indicator for MovingAverageConvergenceDivergence {
    type Output = MovingAverageConvergenceDivergenceOutput;

    fn reset(&mut self) {
        self.warmup.clear();
        self.fast_ema = 0.0;
        self.slow_ema = 0.0;
        self.seeded = false;
        self.signal.reset();
    }

    fn is_ready(&self) -> bool {
        self.signal.is_ready()
    }
}

impl Next<f64> for MovingAverageConvergenceDivergence {
    fn next(&mut self, x: f64) -> Option<Self::Output> {
        if self.seeded {
            self.fast_ema = ExponentialMovingAverage::step(self.fast_ema, x, self.k_fast);
            self.slow_ema = ExponentialMovingAverage::step(self.slow_ema, x, self.k_slow);
        } else {
            self.warmup.push(x);
            if self.warmup.len() < self.slow {
                return None;
            }
            let slow_sum: f64 = self.warmup.iter().sum();
            let fast_start = self.slow - self.fast;
            let fast_sum: f64 = self.warmup.iter().skip(fast_start).sum();
            self.slow_ema = slow_sum / self.slow as f64;
            self.fast_ema = fast_sum / self.fast as f64;
            self.seeded = true;
            self.warmup = Vec::new();
            (self.k_fast, self.k_slow) = if self.fixed {
                (0.15, 0.075)
            } else {
                (2.0 / (self.fast + 1) as f64, 2.0 / (self.slow + 1) as f64)
            };
        }
        let macd = self.fast_ema - self.slow_ema;
        let signal = self.signal.next(macd)?;
        Some(MovingAverageConvergenceDivergenceOutput {
            macd,
            signal,
            histogram: macd - signal,
        })
    }
}

impl Next<&Bar> for MovingAverageConvergenceDivergence {
    fn next(&mut self, bar: &Bar) -> Option<Self::Output> {
        Next::<f64>::next(self, bar.close)
    }
}

/// MACD with fixed factors, as TA-Lib's `TA_MACDFIX`: the 12/26 MACD whose
/// EMAs use `k = 0.15` and `k = 0.075` (TA-Lib's rounded `2/13` and `2/27`).
///
/// # Formula
///
/// As [`MovingAverageConvergenceDivergence`] with `fast = 12`, `slow = 26`
/// (both EMAs seeded at bar 25, the fast one with the SMA of the 12 values
/// ending there) and those factors; the signal line is an EMA of
/// `signal` periods (`k = 2/(signal+1)`).
///
/// # Parameters
///
/// - `signal`: 1 ..= 10 000 (default 9).
///
/// Warm-up: all three lines start at index `25 + signal − 1` (33).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::MovingAverageConvergenceDivergenceFixed;
///
/// let closes: Vec<f64> = (0..40).map(|i| 100.0 + i as f64).collect();
/// let out = MovingAverageConvergenceDivergenceFixed::default().over_values(&closes)?;
/// assert!(out.macd[32].is_none() && out.macd[33].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MACDFIX")]
#[derive(Debug, Clone)]
pub struct MovingAverageConvergenceDivergenceFixed {
    macd: MovingAverageConvergenceDivergence,
}

impl MovingAverageConvergenceDivergenceFixed {
    /// Default signal period (TA-Lib's).
    pub const DEFAULT_SIGNAL: usize = 9;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `signal` is 0 or above 10 000.
    pub fn new(signal: usize) -> Result<Self, CoreError> {
        let signal = check_period("signal", signal, 1)?;
        Ok(Self {
            macd: MovingAverageConvergenceDivergence::fixed(signal),
        })
    }

    /// The signal period.
    pub fn signal_period(&self) -> usize {
        self.macd.signal_period
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<MovingAverageConvergenceDivergenceSeries, CoreError> {
        Ok(MovingAverageConvergenceDivergence::split(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<MovingAverageConvergenceDivergenceSeries, CoreError> {
        Ok(MovingAverageConvergenceDivergence::split(&run_values(self, values)?))
    }
}

impl Default for MovingAverageConvergenceDivergenceFixed {
    fn default() -> Self {
        Self {
            macd: MovingAverageConvergenceDivergence::fixed(Self::DEFAULT_SIGNAL),
        }
    }
}

impl Indicator for MovingAverageConvergenceDivergenceFixed {
    type Output = MovingAverageConvergenceDivergenceOutput;

    fn reset(&mut self) {
        self.macd.reset();
    }

    fn is_ready(&self) -> bool {
        self.macd.is_ready()
    }
}

impl Next<f64> for MovingAverageConvergenceDivergenceFixed {
    fn next(&mut self, x: f64) -> Option<Self::Output> {
        self.macd.next(x)
    }
}

impl Next<&Bar> for MovingAverageConvergenceDivergenceFixed {
    fn next(&mut self, bar: &Bar) -> Option<Self::Output> {
        self.macd.next(bar.close)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_and_warms_up() {
        // Swapped like TA_MACD: the same lines as (12, 26).
        let swapped = MovingAverageConvergenceDivergence::new(26, 12, 9).unwrap();
        assert_eq!(swapped.periods(), (12, 26, 9));
        let closes: Vec<f64> = (0..80).map(|i| 100.0 + (i as f64 * 0.7).sin() * 3.0).collect();
        let (a, b) = (
            swapped.over_values(&closes).unwrap(),
            MovingAverageConvergenceDivergence::default()
                .over_values(&closes)
                .unwrap(),
        );
        assert_eq!((a.macd, a.signal, a.histogram), (b.macd, b.signal, b.histogram));
        assert!(MovingAverageConvergenceDivergence::new(1, 12, 9).is_err());
        assert!(MovingAverageConvergenceDivergence::new(12, 26, 0).is_err());
        let m = MovingAverageConvergenceDivergence::new(3, 5, 2).unwrap();
        let xs: Vec<f64> = (0..20).map(|i| (i * i) as f64).collect();
        let out = m.over_values(&xs).unwrap();
        assert!(out.macd[4].is_none());
        assert!(out.macd[5].is_some());
        // first MACD value: SMA of the last 3 minus SMA of the 5 first, fed to the signal.
        let fast0 = (4.0 + 9.0 + 16.0) / 3.0;
        let slow0 = (0.0 + 1.0 + 4.0 + 9.0 + 16.0) / 5.0;
        let fast1 = (25.0 - fast0) * 0.5 + fast0;
        let slow1 = (25.0 - slow0) / 3.0 + slow0;
        let sig = ((fast0 - slow0) + (fast1 - slow1)) / 2.0;
        assert!((out.signal[5].unwrap() - sig).abs() < 1e-12);
        let d = MovingAverageConvergenceDivergence::default();
        assert_eq!(d.periods(), (12, 26, 9));
    }
}
