//! Momentum indicators: RSI, CMO, stochastic, Williams %R, CCI, balance of
//! power, intraday momentum, momentum and the rates of change.

mod apo;
mod aroon;
mod bop;
mod cci;
mod cmo;
mod imi;
mod mom;
mod roc;
mod rocx;
mod rsi;
mod stoch;
mod stochf;
mod trix;
mod ultosc;
mod willr;

pub use apo::{AbsolutePriceOscillator, PercentagePriceOscillator};
pub use aroon::{Aroon, AroonOscillator, AroonOutput, AroonSeries};
pub use bop::BalanceOfPower;
pub use cci::CommodityChannelIndex;
pub use cmo::ChandeMomentumOscillator;
pub use imi::IntradayMomentumIndex;
pub use mom::Momentum;
pub use roc::RateOfChange;
pub use rocx::{RateOfChangePercentage, RateOfChangeRatio, RateOfChangeRatio100};
pub use rsi::RelativeStrengthIndex;
pub use stoch::{StochasticOscillator, StochasticOutput, StochasticSeries};
pub use stochf::{FastStochastic, StochasticRsi};
pub use trix::Trix;
pub use ultosc::UltimateOscillator;
pub use willr::WilliamsPercentRange;
