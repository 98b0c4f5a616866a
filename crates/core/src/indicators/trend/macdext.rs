//! MACD with a moving-average type per line (TA-Lib's `MACDEXT`).

use super::ma::AlignedMovingAverage;
use super::{
    AnyMovingAverage, MovingAverageConvergenceDivergenceOutput, MovingAverageConvergenceDivergenceSeries,
    MovingAverageType,
};
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, run_bars, run_values};
use crate::{Bar, CoreError};

/// MACD with controllable moving-average types, as TA-Lib's `TA_MACDEXT`.
///
/// # Formula
///
/// `macd = MA_fast(x) − MA_slow(x)`, `signal = MA_signal(macd)`,
/// `histogram = macd − signal`, each moving average of its own TA-Lib type.
/// Both averages of the price are started so that their first values fall
/// on the same bar, `L = max(lookback_fast, lookback_slow)` (the one with the
/// shorter lookback starts later, which changes the recursive types), as
/// TA-Lib does; the signal line starts with the first MACD value.
///
/// # Parameters
///
/// - `fast`, `slow`: 2 ..= 10 000 (defaults 12 and 26); when `slow < fast`
///   the two periods and their types are swapped, as TA-Lib.
/// - `signal`: 1 ..= 10 000 (default 9).
/// - `fast_matype`, `slow_matype`, `signal_matype`: TA-Lib's numbers, 0 ..= 8
///   (default 0, SMA, TA-Lib 0.8's).
///
/// Warm-up: all three lines start at `L + lookback_signal` (33 with the
/// defaults).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::MovingAverageConvergenceDivergenceExt;
///
/// let m = MovingAverageConvergenceDivergenceExt::new(2, 0, 4, 0, 1, 0)?;
/// let xs: Vec<f64> = (0..6).map(f64::from).collect();
/// let out = m.over_values(&xs)?;
/// assert_eq!(out.macd[3], Some(1.0)); // SMA(2) − SMA(4) on a line of slope 1
/// assert_eq!(out.histogram[3], Some(0.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MACDEXT")]
#[derive(Debug, Clone)]
pub struct MovingAverageConvergenceDivergenceExt {
    fast: (usize, MovingAverageType),
    slow: (usize, MovingAverageType),
    signal: (usize, MovingAverageType),
    fast_ma: AlignedMovingAverage,
    slow_ma: AlignedMovingAverage,
    signal_ma: AnyMovingAverage,
    ready: bool,
}

impl MovingAverageConvergenceDivergenceExt {
    /// Default `(fast, fast_matype, slow, slow_matype, signal, signal_matype)`.
    pub const DEFAULTS: (usize, usize, usize, usize, usize, usize) = (12, 0, 26, 0, 9, 0);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period out of range or a type
    /// outside 0 ..= 8.
    pub fn new(
        fast: usize,
        fast_matype: usize,
        slow: usize,
        slow_matype: usize,
        signal: usize,
        signal_matype: usize,
    ) -> Result<Self, CoreError> {
        let fast = (
            check_period("fast", fast, 2)?,
            MovingAverageType::from_talib("fast_matype", fast_matype)?,
        );
        let slow = (
            check_period("slow", slow, 2)?,
            MovingAverageType::from_talib("slow_matype", slow_matype)?,
        );
        let signal = (
            check_period("signal", signal, 1)?,
            MovingAverageType::from_talib("signal_matype", signal_matype)?,
        );
        // TA-Lib's rule: the shorter period is the fast one (with its type).
        let (fast, slow) = if slow.0 < fast.0 { (slow, fast) } else { (fast, slow) };
        let fast_any = AnyMovingAverage::of_type(fast.0, fast.1)?;
        let slow_any = AnyMovingAverage::of_type(slow.0, slow.1)?;
        let start = fast_any.lookback().max(slow_any.lookback());
        Ok(Self {
            fast,
            slow,
            signal,
            fast_ma: AlignedMovingAverage::new(fast_any, start),
            slow_ma: AlignedMovingAverage::new(slow_any, start),
            signal_ma: AnyMovingAverage::of_type(signal.0, signal.1)?,
            ready: false,
        })
    }

    /// `((fast, type), (slow, type), (signal, type))` as used (swapped when
    /// given the other way round).
    pub fn params(&self) -> [(usize, MovingAverageType); 3] {
        [self.fast, self.slow, self.signal]
    }

    /// TA-Lib's lookback (index of the first value).
    pub fn lookback(&self) -> usize {
        self.fast.1.lookback(self.fast.0).max(self.slow.1.lookback(self.slow.0)) + self.signal.1.lookback(self.signal.0)
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<MovingAverageConvergenceDivergenceSeries, CoreError> {
        Ok(split(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<MovingAverageConvergenceDivergenceSeries, CoreError> {
        Ok(split(&run_values(self, values)?))
    }
}

fn split(outs: &[Option<MovingAverageConvergenceDivergenceOutput>]) -> MovingAverageConvergenceDivergenceSeries {
    MovingAverageConvergenceDivergenceSeries {
        macd: outs.iter().map(|o| o.map(|m| m.macd)).collect(),
        signal: outs.iter().map(|o| o.map(|m| m.signal)).collect(),
        histogram: outs.iter().map(|o| o.map(|m| m.histogram)).collect(),
    }
}

impl Default for MovingAverageConvergenceDivergenceExt {
    fn default() -> Self {
        let (f, fm, s, sm, g, gm) = Self::DEFAULTS;
        // The defaults are within range.
        match Self::new(f, fm, s, sm, g, gm) {
            Ok(m) => m,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for MovingAverageConvergenceDivergenceExt {
    type Output = MovingAverageConvergenceDivergenceOutput;

    fn reset(&mut self) {
        self.fast_ma.reset();
        self.slow_ma.reset();
        self.signal_ma.reset();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for MovingAverageConvergenceDivergenceExt {
    fn next(&mut self, x: f64) -> Option<Self::Output> {
        let f = self.fast_ma.next(x);
        let s = self.slow_ma.next(x);
        let macd = f? - s?;
        let signal = self.signal_ma.next(macd)?;
        self.ready = true;
        Some(MovingAverageConvergenceDivergenceOutput {
            macd,
            signal,
            histogram: macd - signal,
        })
    }
}

impl Next<&Bar> for MovingAverageConvergenceDivergenceExt {
    fn next(&mut self, bar: &Bar) -> Option<Self::Output> {
        Next::<f64>::next(self, bar.close)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookback_and_swap() {
        let m = MovingAverageConvergenceDivergenceExt::default();
        assert_eq!(m.lookback(), 33);
        let xs: Vec<f64> = (0..80).map(|i| (f64::from(i) * 0.3).sin() + 5.0).collect();
        let out = m.over_values(&xs).unwrap();
        assert_eq!(out.macd.iter().position(Option::is_some), Some(33));
        let swapped = MovingAverageConvergenceDivergenceExt::new(26, 1, 12, 3, 9, 0).unwrap();
        assert_eq!(swapped.params()[0], (12, MovingAverageType::Dema));
        assert!(MovingAverageConvergenceDivergenceExt::new(1, 0, 26, 0, 9, 0).is_err());
        assert!(MovingAverageConvergenceDivergenceExt::new(12, 0, 26, 0, 9, 9).is_err());
    }
}
