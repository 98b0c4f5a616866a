//! Volume indicators: OBV, accumulation/distribution (line and Chaikin
//! oscillator), money flow index and VWAP.

mod ad;
mod mfi;
mod obv;
mod vwap;

pub use ad::{AccumulationDistribution, ChaikinOscillator};
pub use mfi::MoneyFlowIndex;
pub use obv::OnBalanceVolume;
pub use vwap::{VolumeWeightedAveragePrice, VwapAnchor};
