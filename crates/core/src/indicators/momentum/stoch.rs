//! Stochastic oscillator (slow).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::stochf::Smoothing;
use crate::indicators::trend::MovingAverageType;
use crate::indicators::util::{RollingExtreme, RunningSma, check_period, is_zero_scaled};
use crate::indicators::{Indicator, Next, run_bars};
use crate::{Bar, CoreError};

/// One stochastic step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StochasticOutput {
    /// Slow %K: SMA of the fast %K.
    pub k: f64,
    /// Slow %D: SMA of the slow %K.
    pub d: f64,
}

/// Batch stochastic: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StochasticSeries {
    /// Slow %K.
    pub k: Vec<Option<f64>>,
    /// Slow %D.
    pub d: Vec<Option<f64>>,
}

/// Slow stochastic oscillator, as TA-Lib's `TA_STOCH` (SMA smoothing by
/// default, any TA-Lib moving average with [`with_matypes`](Self::with_matypes)).
///
/// # Formula
///
/// `fast %K = (close − LL) / (HH − LL) · 100` over the last `fastk` bars
/// (0 when the window is flat: `HH − LL` within `1e-14 · (|HH| + |LL|)`);
/// `slow %K = MA_slowk(fast %K)`; `slow %D = MA_slowd(slow %K)`, each MA of
/// its `matype` (TA-Lib's running-sum SMA for 0).
///
/// # Parameters
///
/// - `fastk`: 1 ..= 10 000 (default 5).
/// - `slowk`: 1 ..= 10 000 (default 3); `slowk_matype` 0 ..= 8 (default 0, SMA).
/// - `slowd`: 1 ..= 10 000 (default 3); `slowd_matype` 0 ..= 8 (default 0, SMA).
///
/// Warm-up: both lines start at index `fastk + slowk + slowd − 3` (8) with
/// SMAs, as TA-Lib (which does not emit %K before %D exists).
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::StochasticOscillator;
///
/// let bars: Vec<Bar> = (0..12)
///     .map(|i| Bar { time: i, open: 1.0, high: 2.0 + i as f64, low: 1.0, close: 2.0 + i as f64, volume: 0.0 })
///     .collect();
/// let out = StochasticOscillator::default().over(&bars)?;
/// assert_eq!(out.k[7], None);
/// assert_eq!(out.k[8], Some(100.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "STOCH")]
#[doc(alias = "Stochastic")]
#[derive(Debug, Clone)]
pub struct StochasticOscillator {
    fastk: usize,
    slowk: usize,
    slowd: usize,
    hi: RollingExtreme,
    lo: RollingExtreme,
    k_sma: Smoothing,
    d_sma: Smoothing,
    matypes: (MovingAverageType, MovingAverageType),
    ready: bool,
}

impl StochasticOscillator {
    /// Default `(fastk, slowk, slowd)`.
    pub const DEFAULTS: (usize, usize, usize) = (5, 3, 3);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a period is 0 or above 10 000.
    pub fn new(fastk: usize, slowk: usize, slowd: usize) -> Result<Self, CoreError> {
        let fastk = check_period("fastk", fastk, 1)?;
        let slowk = check_period("slowk", slowk, 1)?;
        let slowd = check_period("slowd", slowd, 1)?;
        Ok(Self::unchecked(fastk, slowk, slowd))
    }

    fn unchecked(fastk: usize, slowk: usize, slowd: usize) -> Self {
        Self {
            fastk,
            slowk,
            slowd,
            hi: RollingExtreme::max(fastk),
            lo: RollingExtreme::min(fastk),
            k_sma: Smoothing::Sma(RunningSma::new(slowk)),
            d_sma: Smoothing::Sma(RunningSma::new(slowd)),
            matypes: (MovingAverageType::Sma, MovingAverageType::Sma),
            ready: false,
        }
    }

    /// Builds the indicator with TA-Lib's `slowk_matype` and `slowd_matype`
    /// (0 SMA, the default of [`new`](Self::new), to 8; see
    /// [`MovingAverageType`]).
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a period is 0 or above 10 000, or
    /// a `matype` is outside 0 ..= 8.
    pub fn with_matypes(
        fastk: usize,
        slowk: usize,
        slowk_matype: usize,
        slowd: usize,
        slowd_matype: usize,
    ) -> Result<Self, CoreError> {
        let this = Self::new(fastk, slowk, slowd)?;
        let (k_sma, kind_k) = Smoothing::new("slowk_matype", slowk, slowk_matype)?;
        let (d_sma, kind_d) = Smoothing::new("slowd_matype", slowd, slowd_matype)?;
        Ok(Self {
            k_sma,
            d_sma,
            matypes: (kind_k, kind_d),
            ..this
        })
    }

    /// The moving averages of the slow %K and of %D.
    pub fn matypes(&self) -> (MovingAverageType, MovingAverageType) {
        self.matypes
    }

    /// `(fastk, slowk, slowd)`.
    pub fn periods(&self) -> (usize, usize, usize) {
        (self.fastk, self.slowk, self.slowd)
    }

    /// Batch form.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<StochasticSeries, CoreError> {
        let outs = run_bars(self, bars)?;
        Ok(StochasticSeries {
            k: outs.iter().map(|o| o.map(|s| s.k)).collect(),
            d: outs.iter().map(|o| o.map(|s| s.d)).collect(),
        })
    }
}

impl Default for StochasticOscillator {
    fn default() -> Self {
        let (f, k, d) = Self::DEFAULTS;
        Self::unchecked(f, k, d)
    }
}

impl Indicator for StochasticOscillator {
    type Output = StochasticOutput;

    fn reset(&mut self) {
        self.hi.clear();
        self.lo.clear();
        self.k_sma.clear();
        self.d_sma.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for StochasticOscillator {
    fn next(&mut self, bar: &Bar) -> Option<StochasticOutput> {
        let highest = self.hi.push(bar.high);
        let lowest = self.lo.push(bar.low);
        let (highest, lowest) = (highest?, lowest?);
        let range = highest - lowest;
        let flat = is_zero_scaled(range, highest.abs() + lowest.abs());
        let fast_k = if flat {
            0.0
        } else {
            ((bar.close - lowest) / range) * 100.0
        };
        let k = self.k_sma.push(fast_k)?;
        let d = self.d_sma.push(k)?;
        self.ready = true;
        Some(StochasticOutput { k, d })
    }
}
