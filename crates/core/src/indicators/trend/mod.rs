//! Trend indicators: moving averages, MACD, ADX/DMI, Parabolic SAR, Ichimoku
//! and SuperTrend.

mod adx;
mod dema;
mod dm;
mod ema;
mod ichimoku;
mod kama;
mod ma;
mod macd;
mod mama;
mod midpoint;
mod sar;
mod sma;
mod supertrend;
mod t3;
mod trima;
mod wma;

pub use adx::{AverageDirectionalIndex, AverageDirectionalIndexOutput, AverageDirectionalIndexSeries};
pub use dema::{DoubleExponentialMovingAverage, TripleExponentialMovingAverage};
pub use dm::{
    AverageDirectionalIndexRating, DirectionalMovementIndex, MinusDirectionalIndicator, MinusDirectionalMovement,
    PlusDirectionalIndicator, PlusDirectionalMovement,
};
pub use ema::ExponentialMovingAverage;
pub use ichimoku::{IchimokuCloud, IchimokuOutput, IchimokuSeries};
pub use kama::KaufmanAdaptiveMovingAverage;
pub(crate) use ma::MovingAverage;
pub use ma::MovingAverageType;
pub use macd::{
    MovingAverageConvergenceDivergence, MovingAverageConvergenceDivergenceFixed,
    MovingAverageConvergenceDivergenceOutput, MovingAverageConvergenceDivergenceSeries,
};
pub use mama::{MesaAdaptiveMovingAverage, MesaAdaptiveOutput, MesaAdaptiveSeries};
pub use midpoint::{Midpoint, MidpointPrice};
pub use sar::ParabolicSar;
pub use sma::SimpleMovingAverage;
pub use supertrend::{SuperTrend, SuperTrendOutput, SuperTrendSeries};
pub use t3::T3MovingAverage;
pub use trima::TriangularMovingAverage;
pub use wma::WeightedMovingAverage;
