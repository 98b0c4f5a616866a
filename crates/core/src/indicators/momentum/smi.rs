//! Stochastic momentum index.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::{RollingExtreme, check_period};
use crate::indicators::{ExponentialMovingAverage, Indicator, Next, run_bars, run_columns};
use crate::{Bar, CoreError};

/// One SMI step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SmiOutput {
    /// The stochastic momentum index, −100 ..= 100.
    pub smi: f64,
    /// Its EMA over `signal` bars.
    pub signal: f64,
}

/// Batch SMI: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SmiSeries {
    /// SMI.
    pub smi: Vec<Option<f64>>,
    /// Signal line.
    pub signal: Vec<Option<f64>>,
}

/// Blau's stochastic momentum index, as TA-Lib's `TA_SMI`.
///
/// # Formula
///
/// Over the last `period` bars, `HH` = highest high, `LL` = lowest low;
/// `rel = C − (HH + LL)/2`, `range = HH − LL`, each smoothed by
/// `EMA(EMA(·, slow), fast)` (TA-Lib's SMA-seeded EMAs);
/// `SMI = 100 · rel″ / (range″/2)` (0 where `range″ = 0`) and
/// `signal = EMA(SMI, signal)`. Both lines are reported from the signal's
/// first bar (TA-Lib aligns them).
///
/// # Parameters
///
/// - `period` (default 13), `fast` (default 2), `slow` (default 25),
///   `signal` (default 9): each 2 ..= 10 000.
///
/// Warm-up: `(period − 1) + (slow − 1) + (fast − 1) + (signal − 1)` (45).
#[doc(alias = "SMI")]
#[derive(Debug, Clone)]
pub struct StochasticMomentumIndex {
    highest: RollingExtreme,
    lowest: RollingExtreme,
    rel1: ExponentialMovingAverage,
    rel2: ExponentialMovingAverage,
    range1: ExponentialMovingAverage,
    range2: ExponentialMovingAverage,
    signal: ExponentialMovingAverage,
}

impl StochasticMomentumIndex {
    /// Builds the index.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize, fast: usize, slow: usize, signal: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        let fast = check_period("fast", fast, 2)?;
        let slow = check_period("slow", slow, 2)?;
        let signal = check_period("signal", signal, 2)?;
        Ok(Self {
            highest: RollingExtreme::max(period),
            lowest: RollingExtreme::min(period),
            rel1: ExponentialMovingAverage::new(slow)?,
            rel2: ExponentialMovingAverage::new(fast)?,
            range1: ExponentialMovingAverage::new(slow)?,
            range2: ExponentialMovingAverage::new(fast)?,
            signal: ExponentialMovingAverage::new(signal)?,
        })
    }

    /// Batch form: one value per bar and line, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<SmiSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Column form over highs, lows and closes (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64], close: &[f64]) -> Result<SmiSeries, CoreError> {
        let columns = [("high", high), ("low", low), ("close", close)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            close: close[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(Self::split(&outs))
    }

    fn split(outs: &[Option<SmiOutput>]) -> SmiSeries {
        SmiSeries {
            smi: outs.iter().map(|o| o.map(|x| x.smi)).collect(),
            signal: outs.iter().map(|o| o.map(|x| x.signal)).collect(),
        }
    }
}

impl Default for StochasticMomentumIndex {
    fn default() -> Self {
        match Self::new(13, 2, 25, 9) {
            Ok(s) => s,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for StochasticMomentumIndex {
    type Output = SmiOutput;

    fn reset(&mut self) {
        self.highest.clear();
        self.lowest.clear();
        self.rel1.reset();
        self.rel2.reset();
        self.range1.reset();
        self.range2.reset();
        self.signal.reset();
    }

    fn is_ready(&self) -> bool {
        self.signal.is_ready()
    }
}

impl Next<&Bar> for StochasticMomentumIndex {
    fn next(&mut self, bar: &Bar) -> Option<SmiOutput> {
        let hh = self.highest.push(bar.high);
        let ll = self.lowest.push(bar.low);
        let (hh, ll) = (hh?, ll?);
        let r1 = self.rel1.next(bar.close - (hh + ll) / 2.0);
        let g1 = self.range1.next(hh - ll);
        let rel = self.rel2.next(r1?);
        let range = self.range2.next(g1?);
        let (rel, range) = (rel?, range?);
        let smi = if range != 0.0 { 100.0 * rel / (0.5 * range) } else { 0.0 };
        let signal = self.signal.next(smi)?;
        Some(SmiOutput { smi, signal })
    }
}
