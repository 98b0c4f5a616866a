//! Trend indicators: moving averages, MACD, ADX/DMI, Parabolic SAR, Ichimoku
//! and SuperTrend.

mod accbands;
mod adx;
mod dema;
mod dm;
mod ema;
mod hma;
mod ht_trendline;
mod ichimoku;
mod kama;
mod ma;
mod macd;
mod macdext;
mod mama;
mod mavp;
mod midpoint;
mod rma;
mod sar;
mod sarext;
mod sma;
mod supertrend;
mod t3;
mod trima;
mod vwma;
mod wma;
mod zlema;

pub use accbands::AccelerationBands;
pub use adx::{AverageDirectionalIndex, AverageDirectionalIndexOutput, AverageDirectionalIndexSeries};
pub use dema::{DoubleExponentialMovingAverage, TripleExponentialMovingAverage};
pub use dm::{
    AverageDirectionalIndexRating, DirectionalMovementIndex, MinusDirectionalIndicator, MinusDirectionalMovement,
    PlusDirectionalIndicator, PlusDirectionalMovement,
};
pub use ema::ExponentialMovingAverage;
pub use hma::HullMovingAverage;
pub use ht_trendline::HilbertTrendline;
pub use ichimoku::{IchimokuCloud, IchimokuOutput, IchimokuSeries};
pub use kama::KaufmanAdaptiveMovingAverage;
pub(crate) use ma::MovingAverage;
pub use ma::{AnyMovingAverage, MovingAverageType};
pub use macd::{
    MovingAverageConvergenceDivergence, MovingAverageConvergenceDivergenceFixed,
    MovingAverageConvergenceDivergenceOutput, MovingAverageConvergenceDivergenceSeries,
};
pub use macdext::MovingAverageConvergenceDivergenceExt;
pub use mama::{MesaAdaptiveMovingAverage, MesaAdaptiveOutput, MesaAdaptiveSeries};
pub use mavp::VariablePeriodMovingAverage;
pub use midpoint::{Midpoint, MidpointPrice};
pub use rma::WildersMovingAverage;
pub use sar::ParabolicSar;
pub use sarext::ParabolicSarExtended;
pub use sma::SimpleMovingAverage;
pub use supertrend::{SuperTrend, SuperTrendOutput, SuperTrendSeries};
pub use t3::T3MovingAverage;
pub use trima::TriangularMovingAverage;
pub use vwma::VolumeWeightedMovingAverage;
pub use wma::WeightedMovingAverage;
pub use zlema::ZeroLagExponentialMovingAverage;
