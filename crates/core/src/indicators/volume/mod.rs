//! Volume indicators: OBV, money flow index and VWAP.

mod mfi;
mod obv;
mod vwap;

pub use mfi::MoneyFlowIndex;
pub use obv::OnBalanceVolume;
pub use vwap::{VolumeWeightedAveragePrice, VwapAnchor};
