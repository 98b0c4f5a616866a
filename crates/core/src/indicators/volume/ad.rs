//! Chaikin accumulation/distribution line and oscillator.

use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars_volume};
use crate::{Bar, CoreError};

/// One bar's money flow volume: `((close − low) − (high − close)) / (high − low) · volume`,
/// 0 when the range is not positive (TA-Lib's order of operations).
#[inline]
fn money_flow(bar: &Bar) -> f64 {
    let range = bar.high - bar.low;
    if range > 0.0 {
        (bar.close - bar.low - (bar.high - bar.close)) / range * bar.volume
    } else {
        0.0
    }
}

/// Chaikin accumulation/distribution line, as TA-Lib's `TA_AD`: the running
/// sum of each bar's money flow volume.
///
/// # Formula
///
/// `AD_t = AD_{t−1} + ((close − low) − (high − close)) / (high − low) · volume`,
/// a bar with `high − low <= 0` adding nothing; `AD` starts at 0 before the
/// first bar.
///
/// # Parameters
///
/// None.
///
/// Warm-up: none, a value on every bar (the line depends on where it starts).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::AccumulationDistribution;
///
/// let ad = AccumulationDistribution::new();
/// let out = ad.over_columns(&[2.0, 2.0], &[0.0, 0.0], &[2.0, 0.5], &[10.0, 4.0])?;
/// assert_eq!(out, vec![10.0, 8.0]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "AD")]
#[doc(alias = "ADL")]
#[derive(Debug, Clone, Default)]
pub struct AccumulationDistribution {
    ad: f64,
    ready: bool,
}

impl AccumulationDistribution {
    /// Builds the indicator (it has no parameter).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Indicator for AccumulationDistribution {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::default();
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for AccumulationDistribution {
    #[inline]
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.ad += money_flow(bar);
        self.ready = true;
        Some(self.ad)
    }
}

bar_based!(AccumulationDistribution, run_bars_volume);
columns_based!(AccumulationDistribution, high, low, close, volume);

/// Chaikin A/D oscillator, as TA-Lib's `TA_ADOSC`: a fast EMA minus a slow
/// EMA of the accumulation/distribution line.
///
/// # Formula
///
/// Both EMAs (`k = 2 / (period + 1)`) start at the first bar's A/D value
/// (not at an SMA: TA-Lib's seed) and run `e = k · AD + (1 − k) · e` over
/// every later bar; `ADOSC = EMA_fast − EMA_slow`. The periods are not
/// swapped: a `fast` above `slow` gives the negated line.
///
/// # Parameters
///
/// - `fast`: 2 ..= 10 000 (default 3).
/// - `slow`: 2 ..= 10 000 (default 10).
///
/// Warm-up: the first value is at index `max(fast, slow) − 1` (9); the
/// values before it are computed but not output, as TA-Lib (the EMAs still
/// remember their start, so the line depends on the first bar).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::ChaikinOscillator;
///
/// let osc = ChaikinOscillator::new(2, 3)?;
/// let out = osc.over_columns(&[2.0; 4], &[0.0; 4], &[2.0, 2.0, 0.0, 2.0], &[1.0; 4])?;
/// assert!(out[1].is_nan() && out[2].is_finite());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "ADOSC")]
#[derive(Debug, Clone)]
pub struct ChaikinOscillator {
    fast: usize,
    slow: usize,
    k_fast: f64,
    k_slow: f64,
    count: usize,
    ad: f64,
    fast_ema: f64,
    slow_ema: f64,
}

impl ChaikinOscillator {
    /// Default `(fast, slow)` periods (TA-Lib's).
    pub const DEFAULTS: (usize, usize) = (3, 10);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(fast: usize, slow: usize) -> Result<Self, CoreError> {
        let fast = check_period("fast", fast, 2)?;
        let slow = check_period("slow", slow, 2)?;
        Ok(Self::unchecked(fast, slow))
    }

    fn unchecked(fast: usize, slow: usize) -> Self {
        Self {
            fast,
            slow,
            k_fast: 2.0 / (fast as f64 + 1.0),
            k_slow: 2.0 / (slow as f64 + 1.0),
            count: 0,
            ad: 0.0,
            fast_ema: 0.0,
            slow_ema: 0.0,
        }
    }

    /// `(fast, slow)` periods.
    pub fn periods(&self) -> (usize, usize) {
        (self.fast, self.slow)
    }
}

impl Default for ChaikinOscillator {
    fn default() -> Self {
        let (f, s) = Self::DEFAULTS;
        Self::unchecked(f, s)
    }
}

impl Indicator for ChaikinOscillator {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.fast, self.slow);
    }

    fn is_ready(&self) -> bool {
        self.count >= self.fast.max(self.slow)
    }
}

impl Next<&Bar> for ChaikinOscillator {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.ad += money_flow(bar);
        if self.count == 0 {
            self.fast_ema = self.ad;
            self.slow_ema = self.ad;
        } else {
            self.fast_ema = self.k_fast * self.ad + (1.0 - self.k_fast) * self.fast_ema;
            self.slow_ema = self.k_slow * self.ad + (1.0 - self.k_slow) * self.slow_ema;
        }
        let lookback = self.fast.max(self.slow) - 1;
        if self.count < lookback {
            self.count += 1;
            return None;
        }
        self.count = lookback + 1;
        Some(self.fast_ema - self.slow_ema)
    }
}

bar_based!(ChaikinOscillator, run_bars_volume);
columns_based!(ChaikinOscillator, high, low, close, volume);
