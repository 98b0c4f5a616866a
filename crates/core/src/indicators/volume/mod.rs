//! Volume indicators: OBV, accumulation/distribution (line and Chaikin
//! oscillator), money flow index and VWAP.

mod ad;
mod cmf;
mod efi;
mod marketfi;
mod mfi;
mod nvi;
mod obv;
mod pvo;
mod pvt;
mod rvol;
mod vwap;

pub use ad::{AccumulationDistribution, ChaikinOscillator};
pub use cmf::ChaikinMoneyFlow;
pub use efi::ElderForceIndex;
pub use marketfi::MarketFacilitationIndex;
pub use mfi::MoneyFlowIndex;
pub use nvi::{NegativeVolumeIndex, PositiveVolumeIndex};
pub use obv::OnBalanceVolume;
pub use pvo::PercentageVolumeOscillator;
pub use pvt::PriceVolumeTrend;
pub use rvol::RelativeVolume;
pub use vwap::{VolumeWeightedAveragePrice, VwapAnchor};
