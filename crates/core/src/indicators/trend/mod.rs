//! Trend indicators: moving averages, MACD, ADX/DMI, Parabolic SAR, Ichimoku
//! and SuperTrend.

mod adx;
mod dm;
mod ema;
mod ichimoku;
mod macd;
mod midpoint;
mod sar;
mod sma;
mod supertrend;
mod wma;

pub use adx::{AverageDirectionalIndex, AverageDirectionalIndexOutput, AverageDirectionalIndexSeries};
pub use dm::{
    AverageDirectionalIndexRating, DirectionalMovementIndex, MinusDirectionalIndicator, MinusDirectionalMovement,
    PlusDirectionalIndicator, PlusDirectionalMovement,
};
pub use ema::ExponentialMovingAverage;
pub use ichimoku::{IchimokuCloud, IchimokuOutput, IchimokuSeries};
pub use macd::{
    MovingAverageConvergenceDivergence, MovingAverageConvergenceDivergenceOutput,
    MovingAverageConvergenceDivergenceSeries,
};
pub use midpoint::{Midpoint, MidpointPrice};
pub use sar::ParabolicSar;
pub use sma::SimpleMovingAverage;
pub use supertrend::{SuperTrend, SuperTrendOutput, SuperTrendSeries};
pub use wma::WeightedMovingAverage;
