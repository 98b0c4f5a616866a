//! Technical indicators, streaming first and batch second.
//!
//! Every indicator is a small state machine: a fallible constructor checks
//! its parameters (a zero period or a non-finite multiplier is an error, not a
//! panic), [`Next::next`] consumes one input and returns `None` while the
//! indicator is warming up, [`Indicator::reset`] forgets everything and
//! [`Indicator::is_ready`] says whether the warm-up is over. The batch form,
//! `over(&[Bar])`, runs a fresh copy of the same state machine over a series
//! and returns one value per bar (`None` during warm-up), so streaming and
//! batch results are identical by construction — a property test checks it.
//!
//! Batch functions reject an empty series and non-finite prices or volumes
//! with [`CoreError::InvalidInput`](crate::CoreError::InvalidInput); they never
//! panic.
//!
//! # Reference implementation
//!
//! Where TA-Lib has the indicator, the batch output equals TA-Lib 0.8.2
//! (Python `talib`, C core 0.8.1) to `1e-9` relative on the real series in
//! `data/market/`, including the first non-`None` index (in practice within
//! one rounding: the TA-Lib 0.8 arithmetic is reproduced step by step); see
//! `docs/indicators.md` and `tests/indicators_talib.rs`. Unstable periods are
//! TA-Lib's defaults (0).
//!
//! # Periods
//!
//! Periods are bounded by [`MAX_PERIOD`] (10 000). A period longer than the
//! series is accepted: the warm-up then never ends and every output is
//! `None`.
//!
//! # Name-based entry point
//!
//! [`compute`] runs any indicator by name with a map of parameters and
//! returns named output series; [`catalog`] lists names, aliases,
//! parameters (defaults and bounds) and outputs. The service tools and the
//! CLI go through these two functions.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::indicators::{Indicator, Next, RelativeStrengthIndex};
//!
//! let mut rsi = RelativeStrengthIndex::new(3)?;
//! let out: Vec<Option<f64>> = [1.0, 2.0, 3.0, 2.0, 4.0].iter().map(|&x| rsi.next(x)).collect();
//! assert_eq!(out[..3], [None, None, None]);
//! assert!(rsi.is_ready());
//! assert_eq!(out[3].map(|v| v.round()), Some(67.0));
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

mod catalog;
pub mod cycle;
/// The fuzz target's check over the batch API (feature `fuzzing`: used by
/// `fuzz/` and `tests/indicators_fuzz.rs`, not part of the library's API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
pub mod momentum;
pub mod price;
pub mod statistics;
pub mod trend;
mod util;
pub mod volatility;
pub mod volume;

use serde::{Deserialize, Serialize};

use schemars::JsonSchema;

pub use catalog::{
    IndicatorInfo, IndicatorOutput, OutputSeries, PRICE_OUTPUTS, ParamInfo, ParamKind, catalog, check_choice,
    choice_schemas, compute, find,
};
pub use cycle::{
    HilbertDominantCyclePeriod, HilbertDominantCyclePhase, HilbertPhasor, HilbertPhasorOutput, HilbertPhasorSeries,
    HilbertSineWave, HilbertSineWaveOutput, HilbertSineWaveSeries, HilbertTrendMode,
};
pub use momentum::{
    AbsolutePriceOscillator, AcceleratorOscillator, Aroon, AroonOscillator, AroonOutput, AroonSeries,
    AwesomeOscillator, BalanceOfPower, ChandeMomentumOscillator, ChandeMomentumOscillatorUnsmoothed,
    CommodityChannelIndex, CoppockCurve, DetrendedPriceOscillator, EfficiencyRatio, ElderRayIndex, ElderRayOutput,
    ElderRaySeries, FastStochastic, ForecastOscillator, Fractal, FractalOutput, FractalSeries, IntradayMomentumIndex,
    Kdj, KdjOutput, KdjSeries, Momentum, PercentagePriceOscillator, Qstick, RateOfChange, RateOfChangePercentage,
    RateOfChangeRatio, RateOfChangeRatio100, RelativeStrengthIndex, SmiOutput, SmiSeries, StochasticMomentumIndex,
    StochasticOscillator, StochasticOutput, StochasticRsi, StochasticSeries, Trix, TrueStrengthIndex,
    UltimateOscillator, VerticalHorizontalFilter, Vortex, VortexOutput, VortexSeries, WilliamsAccumulationDistribution,
    WilliamsPercentRange,
};
pub use price::{
    AverageDeviation, AveragePrice, HeikinAshi, HeikinAshiOutput, HeikinAshiSeries, MedianPrice, TypicalPrice,
    WeightedClosePrice,
};
pub use statistics::{
    Beta, LinearRegression, LinearRegressionAngle, LinearRegressionIntercept, LinearRegressionOutput,
    LinearRegressionSlope, LinearRegressionValue, PearsonCorrelation, PercentRank, RollingPercentile,
    TimeSeriesForecast, Variance,
};
pub use trend::{
    AccelerationBands, AnyMovingAverage, AverageDirectionalIndex, AverageDirectionalIndexOutput,
    AverageDirectionalIndexRating, AverageDirectionalIndexSeries, DirectionalMovementIndex,
    DoubleExponentialMovingAverage, ExponentialMovingAverage, HilbertTrendline, HullMovingAverage, IchimokuCloud,
    IchimokuOutput, IchimokuSeries, KaufmanAdaptiveMovingAverage, MesaAdaptiveMovingAverage, MesaAdaptiveOutput,
    MesaAdaptiveSeries, Midpoint, MidpointPrice, MinusDirectionalIndicator, MinusDirectionalMovement,
    MovingAverageConvergenceDivergence, MovingAverageConvergenceDivergenceExt, MovingAverageConvergenceDivergenceFixed,
    MovingAverageConvergenceDivergenceOutput, MovingAverageConvergenceDivergenceSeries, MovingAverageType,
    ParabolicSar, ParabolicSarExtended, PlusDirectionalIndicator, PlusDirectionalMovement, SimpleMovingAverage,
    SuperTrend, SuperTrendOutput, SuperTrendSeries, T3MovingAverage, TriangularMovingAverage,
    TripleExponentialMovingAverage, VariablePeriodMovingAverage, VolumeWeightedMovingAverage, WeightedMovingAverage,
    WildersMovingAverage, ZeroLagExponentialMovingAverage,
};
pub(crate) use util::PandasMean;
pub use volatility::{
    AverageDailyRange, AverageTrueRange, BollingerBands, ChaikinVolatility, DonchianChannels, KeltnerChannels,
    MassIndex, NormalizedAverageTrueRange, RelativeVolatilityIndex, StandardDeviation, TrueRange,
};
pub use volume::{
    AccumulationDistribution, ChaikinMoneyFlow, ChaikinOscillator, ElderForceIndex, MarketFacilitationIndex,
    MoneyFlowIndex, NegativeVolumeIndex, OnBalanceVolume, PercentageVolumeOscillator, PositiveVolumeIndex,
    PriceVolumeTrend, RelativeVolume, VolumeWeightedAveragePrice, VwapAnchor,
};

/// Largest period (or window) any indicator accepts.
pub const MAX_PERIOD: usize = 10_000;

/// The state every streaming indicator exposes.
pub trait Indicator {
    /// What one step produces once the indicator is warm.
    type Output;

    /// Forgets every input seen so far; the indicator behaves as freshly built.
    fn reset(&mut self);

    /// Whether the warm-up is over (the last [`Next::next`] could produce a value).
    fn is_ready(&self) -> bool;
}

/// Feeds one input to a streaming indicator.
///
/// Price-series indicators (moving averages, RSI, ...) implement `Next<f64>`
/// and `Next<&Bar>` (which uses the close); indicators that need the high,
/// low or volume implement `Next<&Bar>` only.
pub trait Next<I>: Indicator {
    /// Consumes `input`; `None` while warming up.
    fn next(&mut self, input: I) -> Option<Self::Output>;
}

/// Upper, middle and lower lines of a channel (Bollinger, Donchian, Keltner).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BandsOutput {
    /// Upper band.
    pub upper: f64,
    /// Middle line.
    pub middle: f64,
    /// Lower band.
    pub lower: f64,
}

/// Batch output of a channel indicator: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BandsSeries {
    /// Upper band.
    pub upper: Vec<Option<f64>>,
    /// Middle line.
    pub middle: Vec<Option<f64>>,
    /// Lower band.
    pub lower: Vec<Option<f64>>,
}

impl BandsSeries {
    pub(crate) fn from_outputs(outs: &[Option<BandsOutput>]) -> Self {
        Self {
            upper: outs.iter().map(|o| o.map(|b| b.upper)).collect(),
            middle: outs.iter().map(|o| o.map(|b| b.middle)).collect(),
            lower: outs.iter().map(|o| o.map(|b| b.lower)).collect(),
        }
    }
}

/// Runs a fresh copy of `ind` over `bars`, checking each bar with `check`
/// as it goes (one pass over the data): an empty series or a bad bar is an
/// error, never a panic.
///
/// The loop is deliberately plain: a pre-filled output written in place and
/// no closure capturing the state, so the state stays in registers (measured
/// about 2× faster than `collect` or `push` on a million bars).
#[inline]
pub(crate) fn run_bars_with<T, C>(
    ind: &T,
    bars: &[crate::Bar],
    check: C,
) -> Result<Vec<Option<T::Output>>, crate::CoreError>
where
    T: Clone + for<'a> Next<&'a crate::Bar>,
    T::Output: Clone,
    C: Fn(usize, &crate::Bar) -> Result<(), crate::CoreError>,
{
    if bars.is_empty() {
        return Err(util::empty_input());
    }
    let mut state = ind.clone();
    state.reset();
    let mut out = vec![None; bars.len()];
    for (i, (slot, b)) in out.iter_mut().zip(bars).enumerate() {
        check(i, b)?;
        *slot = state.next(b);
    }
    Ok(out)
}

/// [`run_bars_with`] rejecting non-finite values.
pub(crate) fn run_bars<T>(ind: &T, bars: &[crate::Bar]) -> Result<Vec<Option<T::Output>>, crate::CoreError>
where
    T: Clone + for<'a> Next<&'a crate::Bar>,
    T::Output: Clone,
{
    run_bars_with(ind, bars, util::check_bar)
}

/// [`run_bars_with`] rejecting non-finite values and negative volumes.
pub(crate) fn run_bars_volume<T>(ind: &T, bars: &[crate::Bar]) -> Result<Vec<Option<T::Output>>, crate::CoreError>
where
    T: Clone + for<'a> Next<&'a crate::Bar>,
    T::Output: Clone,
{
    run_bars_with(ind, bars, util::check_bar_volume)
}

/// Runs a fresh copy of `ind` over `values`, rejecting an empty series or a
/// non-finite value (same loop shape as [`run_bars_with`]).
pub(crate) fn run_values<T>(ind: &T, values: &[f64]) -> Result<Vec<Option<T::Output>>, crate::CoreError>
where
    T: Clone + Next<f64>,
    T::Output: Clone,
{
    if values.is_empty() {
        return Err(util::empty_input());
    }
    let mut state = ind.clone();
    state.reset();
    let mut out = vec![None; values.len()];
    for (i, (slot, &v)) in out.iter_mut().zip(values).enumerate() {
        util::check_value(i, v)?;
        *slot = state.next(v);
    }
    Ok(out)
}

/// Runs a fresh copy of `ind` over the columns of one series: `columns`
/// names each column and gives its values (all as long as the first, none
/// empty, every value finite), `make(i)` builds the bar of index `i` from
/// them (the fields an indicator does not read are left at 0). The column
/// forms of the bar-fed indicators go through this, so they equal `over`.
pub(crate) fn run_columns<T>(
    ind: &T,
    columns: &[(&str, &[f64])],
    make: impl Fn(usize) -> crate::Bar,
) -> Result<Vec<Option<T::Output>>, crate::CoreError>
where
    T: Clone + for<'a> Next<&'a crate::Bar>,
    T::Output: Clone,
{
    let lens: Vec<(&str, usize)> = columns.iter().map(|(name, c)| (*name, c.len())).collect();
    util::check_same_len(&lens)?;
    let n = columns.first().map_or(0, |(_, c)| c.len());
    if n == 0 {
        return Err(util::empty_input());
    }
    for (name, column) in columns {
        if let Some(i) = column.iter().position(|v| !v.is_finite()) {
            return Err(crate::CoreError::InvalidInput(format!(
                "value {i} of column `{name}` is not finite"
            )));
        }
    }
    let mut state = ind.clone();
    state.reset();
    Ok((0..n).map(|i| state.next(&make(i))).collect())
}

/// A bar with every field 0, completed by the column forms.
pub(crate) const ZERO_BAR: crate::Bar = crate::Bar {
    time: 0,
    open: 0.0,
    high: 0.0,
    low: 0.0,
    close: 0.0,
    volume: 0.0,
};

/// Implements the column form `over_columns(<columns>)` of a single-output
/// indicator fed with bars: one `f64` per input, NaN during warm-up (TA-Lib's
/// shape), equal to `over` on the same values.
macro_rules! columns_based {
    ($ty:ty, $($col:ident),+) => {
        impl $ty {
            /// Column form, TA-Lib's shape: one `f64` per input, NaN during
            /// warm-up; the same values as `over` on bars holding these columns.
            ///
            /// # Errors
            /// [`CoreError::InvalidInput`](crate::CoreError::InvalidInput) on empty
            /// columns, columns of different lengths or a non-finite value.
            pub fn over_columns(&self, $($col: &[f64]),+) -> Result<Vec<f64>, $crate::CoreError> {
                let columns = [$((stringify!($col), $col)),+];
                let out = $crate::indicators::run_columns(self, &columns, |i| $crate::Bar {
                    $($col: $col[i],)+
                    ..$crate::indicators::ZERO_BAR
                })?;
                Ok(out.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
            }
        }
    };
}
pub(crate) use columns_based;

/// Implements `Next<&Bar>` (on the close) and the batch `over` / `over_values`
/// for an indicator whose streaming form is `Next<f64, Output = f64>`.
macro_rules! close_based {
    ($ty:ty) => {
        impl $crate::indicators::Next<&$crate::Bar> for $ty {
            fn next(&mut self, bar: &$crate::Bar) -> Option<f64> {
                $crate::indicators::Next::<f64>::next(self, bar.close)
            }
        }

        impl $ty {
            /// Batch form over the closes of `bars`: one value per bar, `None` during warm-up.
            ///
            /// # Errors
            /// [`CoreError::InvalidInput`](crate::CoreError::InvalidInput) on an empty series or a
            /// non-finite value.
            pub fn over(&self, bars: &[$crate::Bar]) -> Result<Vec<Option<f64>>, $crate::CoreError> {
                $crate::indicators::run_bars(self, bars)
            }

            /// Batch form over any series of values: one value per input, `None` during warm-up.
            ///
            /// # Errors
            /// [`CoreError::InvalidInput`](crate::CoreError::InvalidInput) on an empty series or a
            /// non-finite value.
            pub fn over_values(&self, values: &[f64]) -> Result<Vec<Option<f64>>, $crate::CoreError> {
                $crate::indicators::run_values(self, values)
            }
        }
    };
}
pub(crate) use close_based;

/// Implements the batch `over` for a single-output indicator fed with bars.
macro_rules! bar_based {
    ($ty:ty, $run:path) => {
        impl $ty {
            /// Batch form: one value per bar, `None` during warm-up.
            ///
            /// # Errors
            /// [`CoreError::InvalidInput`](crate::CoreError::InvalidInput) on an empty series or a
            /// non-finite value.
            pub fn over(&self, bars: &[$crate::Bar]) -> Result<Vec<Option<f64>>, $crate::CoreError> {
                $run(self, bars)
            }
        }
    };
}
pub(crate) use bar_based;
