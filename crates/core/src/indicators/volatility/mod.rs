//! Volatility indicators: ATR, NATR, true range, standard deviation and channels (Bollinger,
//! Donchian, Keltner).

mod adr;
mod atr;
mod bbands;
mod cvi;
mod donchian;
mod keltner;
mod massi;
mod natr;
mod rvi;
mod stddev;
mod trange;

pub use adr::AverageDailyRange;
pub use atr::AverageTrueRange;
pub(crate) use atr::WilderWeights;
pub use bbands::BollingerBands;
pub use cvi::ChaikinVolatility;
pub use donchian::DonchianChannels;
pub use keltner::KeltnerChannels;
pub use massi::MassIndex;
pub use natr::NormalizedAverageTrueRange;
pub use rvi::RelativeVolatilityIndex;
pub use stddev::StandardDeviation;
pub use trange::TrueRange;
