//! Vortex indicator.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::{Window, check_period, true_range};
use crate::indicators::{Indicator, Next, run_bars, run_columns};
use crate::{Bar, CoreError};

/// One vortex step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VortexOutput {
    /// VI+: `Σ|H − L₋₁| / Σ TR`.
    pub plus: f64,
    /// VI−: `Σ|L − H₋₁| / Σ TR`.
    pub minus: f64,
}

/// Batch vortex: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VortexSeries {
    /// VI+.
    pub plus: Vec<Option<f64>>,
    /// VI−.
    pub minus: Vec<Option<f64>>,
}

/// Botes and Siepman's vortex indicator, as TA-Lib's `TA_VORTEX`.
///
/// # Formula
///
/// Over the last `n` bars (each against the bar before it):
/// `VI+ = Σ|H − L₋₁| / Σ TR`, `VI− = Σ|L − H₋₁| / Σ TR` (TR: true range),
/// both 0 where `Σ TR = 0`.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 14, TA-Lib's).
///
/// Warm-up: the first value is at index `period`.
#[doc(alias = "VORTEX")]
#[derive(Debug, Clone)]
pub struct Vortex {
    period: usize,
    prev: Option<(f64, f64, f64)>,
    plus: Window,
    minus: Window,
    tr: Window,
}

impl Vortex {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        Ok(Self::unchecked(check_period("period", period, 1)?))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            period,
            prev: None,
            plus: Window::new(period),
            minus: Window::new(period),
            tr: Window::new(period),
        }
    }

    /// Batch form: one value per bar and line, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<VortexSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Column form over highs, lows and closes (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64], close: &[f64]) -> Result<VortexSeries, CoreError> {
        let columns = [("high", high), ("low", low), ("close", close)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            close: close[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(Self::split(&outs))
    }

    fn split(outs: &[Option<VortexOutput>]) -> VortexSeries {
        VortexSeries {
            plus: outs.iter().map(|o| o.map(|v| v.plus)).collect(),
            minus: outs.iter().map(|o| o.map(|v| v.minus)).collect(),
        }
    }
}

impl Default for Vortex {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for Vortex {
    type Output = VortexOutput;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.tr.is_full()
    }
}

impl Next<&Bar> for Vortex {
    fn next(&mut self, bar: &Bar) -> Option<VortexOutput> {
        let (ph, pl, pc) = self.prev.replace((bar.high, bar.low, bar.close))?;
        self.plus.push((bar.high - pl).abs());
        self.minus.push((bar.low - ph).abs());
        self.tr.push(true_range(bar.high, bar.low, pc));
        if !self.tr.is_full() {
            return None;
        }
        let tr: f64 = self.tr.iter().sum();
        if tr == 0.0 {
            return Some(VortexOutput { plus: 0.0, minus: 0.0 });
        }
        Some(VortexOutput {
            plus: self.plus.iter().sum::<f64>() / tr,
            minus: self.minus.iter().sum::<f64>() / tr,
        })
    }
}
