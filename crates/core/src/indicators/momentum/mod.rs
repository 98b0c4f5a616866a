//! Momentum indicators: RSI, CMO, stochastic, Williams %R, CCI, balance of
//! power, intraday momentum, momentum and the rates of change.

mod ao;
mod apo;
mod aroon;
mod bop;
mod cci;
mod cmo;
mod dpo;
mod er;
mod fosc;
mod imi;
mod mom;
mod qstick;
mod roc;
mod rocx;
mod rsi;
mod stoch;
mod stochf;
mod trix;
mod ultosc;
mod vhf;
mod willr;

pub use ao::{AcceleratorOscillator, AwesomeOscillator};
pub use apo::{AbsolutePriceOscillator, PercentagePriceOscillator};
pub use aroon::{Aroon, AroonOscillator, AroonOutput, AroonSeries};
pub use bop::BalanceOfPower;
pub use cci::CommodityChannelIndex;
pub use cmo::ChandeMomentumOscillator;
pub use dpo::DetrendedPriceOscillator;
pub use er::EfficiencyRatio;
pub use fosc::ForecastOscillator;
pub use imi::IntradayMomentumIndex;
pub use mom::Momentum;
pub use qstick::Qstick;
pub use roc::RateOfChange;
pub use rocx::{RateOfChangePercentage, RateOfChangeRatio, RateOfChangeRatio100};
pub use rsi::RelativeStrengthIndex;
pub use stoch::{StochasticOscillator, StochasticOutput, StochasticSeries};
pub use stochf::{FastStochastic, StochasticRsi};
pub use trix::Trix;
pub use ultosc::UltimateOscillator;
pub use vhf::VerticalHorizontalFilter;
pub use willr::WilliamsPercentRange;
