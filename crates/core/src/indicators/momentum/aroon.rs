//! Aroon and the Aroon oscillator.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars, run_columns};
use crate::{Bar, CoreError};

/// One Aroon step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AroonOutput {
    /// Aroon down: `100 · (period − bars since the lowest low) / period`.
    pub down: f64,
    /// Aroon up: `100 · (period − bars since the highest high) / period`.
    pub up: f64,
}

/// Batch Aroon: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AroonSeries {
    /// Aroon down.
    pub down: Vec<Option<f64>>,
    /// Aroon up.
    pub up: Vec<Option<f64>>,
}

/// Where the highest high and the lowest low of the last `period + 1` bars
/// are, TA-Lib's way: on a tie the most recent bar wins.
#[derive(Debug, Clone)]
struct Extremes {
    period: usize,
    highs: Window,
    lows: Window,
    count: usize,
}

impl Extremes {
    fn new(period: usize) -> Self {
        Self {
            period,
            highs: Window::new(period + 1),
            lows: Window::new(period + 1),
            count: 0,
        }
    }

    /// Bars since the highest high and since the lowest low, once
    /// `period + 1` bars were seen.
    fn push(&mut self, high: f64, low: f64) -> Option<(usize, usize)> {
        self.highs.push(high);
        self.lows.push(low);
        self.count = (self.count + 1).min(self.period + 1);
        if self.count <= self.period {
            return None;
        }
        let (mut hi, mut hi_at, mut lo, mut lo_at) = (f64::NEG_INFINITY, 0, f64::INFINITY, 0);
        for (k, (h, l)) in self.highs.iter().zip(self.lows.iter()).enumerate() {
            if h >= hi {
                hi = h;
                hi_at = k;
            }
            if l <= lo {
                lo = l;
                lo_at = k;
            }
        }
        Some((self.period - hi_at, self.period - lo_at))
    }

    fn clear(&mut self) {
        self.highs.clear();
        self.lows.clear();
        self.count = 0;
    }
}

/// Aroon, as TA-Lib's `TA_AROON`: how recently the highest high and the
/// lowest low of the last `period + 1` bars occurred, 0 to 100.
///
/// # Formula
///
/// Over the bars `t − period ..= t`: `up = 100/period · (period − bars since the
/// highest high)`, `down = 100/period · (period − bars since the lowest low)`;
/// on ties the most recent bar counts (TA-Lib's rule).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: both lines start at index `period`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::Aroon;
///
/// let out = Aroon::new(2)?.over_columns(&[1.0, 3.0, 2.0], &[1.0, 0.5, 0.8])?;
/// assert_eq!(out.up[2], Some(50.0));   // highest high one bar ago
/// assert_eq!(out.down[2], Some(50.0)); // lowest low one bar ago
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "AROON")]
#[derive(Debug, Clone)]
pub struct Aroon {
    extremes: Extremes,
    factor: f64,
    ready: bool,
}

impl Aroon {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            extremes: Extremes::new(period),
            factor: 100.0 / period as f64,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.extremes.period
    }

    /// Batch form.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<AroonSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Column form over highs and lows (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64]) -> Result<AroonSeries, CoreError> {
        let columns = [("high", high), ("low", low)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(Self::split(&outs))
    }

    fn split(outs: &[Option<AroonOutput>]) -> AroonSeries {
        AroonSeries {
            down: outs.iter().map(|o| o.map(|a| a.down)).collect(),
            up: outs.iter().map(|o| o.map(|a| a.up)).collect(),
        }
    }
}

impl Default for Aroon {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for Aroon {
    type Output = AroonOutput;

    fn reset(&mut self) {
        self.extremes.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for Aroon {
    fn next(&mut self, bar: &Bar) -> Option<AroonOutput> {
        let (since_high, since_low) = self.extremes.push(bar.high, bar.low)?;
        self.ready = true;
        let p = self.extremes.period;
        Some(AroonOutput {
            down: self.factor * (p - since_low) as f64,
            up: self.factor * (p - since_high) as f64,
        })
    }
}

/// Aroon oscillator, as TA-Lib's `TA_AROONOSC`: Aroon up minus Aroon down.
///
/// # Formula
///
/// `100/period · (index of the highest high − index of the lowest low)` over
/// the last `period + 1` bars (ties to the most recent bar), −100 to 100.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::AroonOscillator;
///
/// let out = AroonOscillator::new(2)?.over_columns(&[1.0, 2.0, 3.0], &[1.0, 1.5, 2.5])?;
/// assert_eq!(out[2], 100.0); // high today, low two bars ago
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "AROONOSC")]
#[derive(Debug, Clone)]
pub struct AroonOscillator {
    extremes: Extremes,
    factor: f64,
    ready: bool,
}

impl AroonOscillator {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            extremes: Extremes::new(period),
            factor: 100.0 / period as f64,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.extremes.period
    }
}

impl Default for AroonOscillator {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for AroonOscillator {
    type Output = f64;

    fn reset(&mut self) {
        self.extremes.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for AroonOscillator {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let (since_high, since_low) = self.extremes.push(bar.high, bar.low)?;
        self.ready = true;
        // index(high) − index(low) = since_low − since_high.
        Some(self.factor * (since_low as f64 - since_high as f64))
    }
}

bar_based!(AroonOscillator, run_bars);
columns_based!(AroonOscillator, high, low);
