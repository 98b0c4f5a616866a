//! Awesome oscillator and accelerator oscillator.

use crate::indicators::util::{RunningSma, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// Bill Williams' awesome oscillator, as TA-Lib's `TA_AO`.
///
/// # Formula
///
/// With the median price `m = (high + low)/2`:
/// `AO = SMA(m, fast) − SMA(m, slow)` (taken as given: a `fast` longer than
/// `slow` is not swapped, as TA-Lib).
///
/// # Parameters
///
/// - `fast`: 2 ..= 10 000 (default 5), `slow`: 2 ..= 10 000 (default 34).
///
/// Warm-up: the first value is at index `max(fast, slow) − 1`.
#[doc(alias = "AO")]
#[derive(Debug, Clone)]
pub struct AwesomeOscillator {
    fast: usize,
    slow: usize,
    fast_sma: RunningSma,
    slow_sma: RunningSma,
    count: usize,
}

impl AwesomeOscillator {
    /// Default fast period (TA-Lib's).
    pub const DEFAULT_FAST: usize = 5;
    /// Default slow period (TA-Lib's).
    pub const DEFAULT_SLOW: usize = 34;

    /// Builds the oscillator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(fast: usize, slow: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(
            check_period("fast", fast, 2)?,
            check_period("slow", slow, 2)?,
        ))
    }

    fn unchecked(fast: usize, slow: usize) -> Self {
        Self {
            fast,
            slow,
            fast_sma: RunningSma::new(fast),
            slow_sma: RunningSma::new(slow),
            count: 0,
        }
    }

    /// Number of bars before the first value.
    pub fn lookback(&self) -> usize {
        self.fast.max(self.slow) - 1
    }
}

impl Default for AwesomeOscillator {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_FAST, Self::DEFAULT_SLOW)
    }
}

impl Indicator for AwesomeOscillator {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.fast, self.slow);
    }

    fn is_ready(&self) -> bool {
        self.count > self.lookback()
    }
}

impl Next<&Bar> for AwesomeOscillator {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        self.count = self.count.saturating_add(1);
        let m = (bar.high + bar.low) / 2.0;
        let f = self.fast_sma.push(m);
        let s = self.slow_sma.push(m);
        Some(f? - s?)
    }
}

bar_based!(AwesomeOscillator, run_bars);
columns_based!(AwesomeOscillator, high, low);

/// Bill Williams' accelerator oscillator, as TA-Lib's `TA_AC`: the awesome
/// oscillator less its own simple average.
///
/// # Formula
///
/// `AC = AO − SMA(AO, signal)` with [`AwesomeOscillator`]'s `AO`.
///
/// # Parameters
///
/// - `fast` (default 5), `slow` (default 34), `signal` (default 5): each
///   2 ..= 10 000.
///
/// Warm-up: the first value is at index `max(fast, slow) − 1 + signal − 1`.
#[doc(alias = "AC")]
#[derive(Debug, Clone)]
pub struct AcceleratorOscillator {
    ao: AwesomeOscillator,
    signal: usize,
    sma: RunningSma,
    ready: bool,
}

impl AcceleratorOscillator {
    /// Default signal period (TA-Lib's).
    pub const DEFAULT_SIGNAL: usize = 5;

    /// Builds the oscillator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(fast: usize, slow: usize, signal: usize) -> Result<Self, CoreError> {
        let ao = AwesomeOscillator::new(fast, slow)?;
        let signal = check_period("signal", signal, 2)?;
        Ok(Self {
            ao,
            signal,
            sma: RunningSma::new(signal),
            ready: false,
        })
    }
}

impl Default for AcceleratorOscillator {
    fn default() -> Self {
        Self {
            ao: AwesomeOscillator::default(),
            signal: Self::DEFAULT_SIGNAL,
            sma: RunningSma::new(Self::DEFAULT_SIGNAL),
            ready: false,
        }
    }
}

impl Indicator for AcceleratorOscillator {
    type Output = f64;

    fn reset(&mut self) {
        self.ao.reset();
        self.sma = RunningSma::new(self.signal);
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for AcceleratorOscillator {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let ao = self.ao.next(bar)?;
        let avg = self.sma.push(ao)?;
        self.ready = true;
        Some(ao - avg)
    }
}

bar_based!(AcceleratorOscillator, run_bars);
columns_based!(AcceleratorOscillator, high, low);
