//! Momentum indicators: RSI, stochastic, Williams %R, CCI, momentum and rate
//! of change.

mod cci;
mod mom;
mod roc;
mod rsi;
mod stoch;
mod willr;

pub use cci::CommodityChannelIndex;
pub use mom::Momentum;
pub use roc::RateOfChange;
pub use rsi::RelativeStrengthIndex;
pub use stoch::{StochasticOscillator, StochasticOutput, StochasticSeries};
pub use willr::WilliamsPercentRange;
