//! Williams fractals (swing highs and lows).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, run_bars, run_columns};
use crate::{Bar, CoreError};

/// One fractal step: 100 where the bar `right` bars back is a swing, else 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FractalOutput {
    /// 100 when the pivot bar's high is above every other high of the window.
    pub swing_high: f64,
    /// 100 when the pivot bar's low is below every other low of the window.
    pub swing_low: f64,
}

/// Batch fractals: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FractalSeries {
    /// Swing highs (100 or 0).
    pub swing_high: Vec<Option<f64>>,
    /// Swing lows (100 or 0).
    pub swing_low: Vec<Option<f64>>,
}

/// Bill Williams' fractals, as TA-Lib's `TA_FRACTAL`, reported when they
/// are confirmed: on bar `t` for the pivot bar `t − right`.
///
/// # Formula
///
/// Over the window of the last `left + 1 + right` bars, the pivot is the bar
/// `right` bars back: `swing_high = 100` when its high is strictly above
/// every other high of the window, `swing_low = 100` when its low is
/// strictly below every other low, 0 otherwise (TA-Lib's integers, as f64).
///
/// # Parameters
///
/// - `left` (default 2), `right` (default 2): each 1 ..= 10 000.
///
/// Warm-up: the first value is at index `left + right`.
#[doc(alias = "FRACTAL")]
#[derive(Debug, Clone)]
pub struct Fractal {
    left: usize,
    right: usize,
    highs: Window,
    lows: Window,
}

impl Fractal {
    /// Default bars before the pivot (TA-Lib's).
    pub const DEFAULT_LEFT: usize = 2;
    /// Default bars after the pivot (TA-Lib's).
    pub const DEFAULT_RIGHT: usize = 2;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a count outside 1 ..= 10 000.
    pub fn new(left: usize, right: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(
            check_period("left", left, 1)?,
            check_period("right", right, 1)?,
        ))
    }

    fn unchecked(left: usize, right: usize) -> Self {
        Self {
            left,
            right,
            highs: Window::new(left + right + 1),
            lows: Window::new(left + right + 1),
        }
    }

    /// Batch form: one value per bar and line, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<FractalSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Column form over highs and lows (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64]) -> Result<FractalSeries, CoreError> {
        let columns = [("high", high), ("low", low)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(Self::split(&outs))
    }

    /// `(left, right)`: the bars before and after the pivot.
    pub fn bars(&self) -> (usize, usize) {
        (self.left, self.right)
    }

    fn split(outs: &[Option<FractalOutput>]) -> FractalSeries {
        FractalSeries {
            swing_high: outs.iter().map(|o| o.map(|f| f.swing_high)).collect(),
            swing_low: outs.iter().map(|o| o.map(|f| f.swing_low)).collect(),
        }
    }
}

impl Default for Fractal {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_LEFT, Self::DEFAULT_RIGHT)
    }
}

impl Indicator for Fractal {
    type Output = FractalOutput;

    fn reset(&mut self) {
        self.highs.clear();
        self.lows.clear();
    }

    fn is_ready(&self) -> bool {
        self.highs.is_full()
    }
}

impl Next<&Bar> for Fractal {
    fn next(&mut self, bar: &Bar) -> Option<FractalOutput> {
        self.highs.push(bar.high);
        self.lows.push(bar.low);
        if !self.highs.is_full() {
            return None;
        }
        // Oldest first: the pivot is at index `left`.
        let pivot = self.left;
        let (ph, pl) = (self.highs.get(pivot)?, self.lows.get(pivot)?);
        let mut high = true;
        let mut low = true;
        for (k, (h, l)) in self.highs.iter().zip(self.lows.iter()).enumerate() {
            if k != pivot {
                high &= ph > h;
                low &= pl < l;
            }
        }
        Some(FractalOutput {
            swing_high: if high { 100.0 } else { 0.0 },
            swing_low: if low { 100.0 } else { 0.0 },
        })
    }
}
