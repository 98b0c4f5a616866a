//! Volatility indicators: ATR, NATR, true range, standard deviation and channels (Bollinger,
//! Donchian, Keltner).

mod adr;
mod atr;
mod bbands;
mod donchian;
mod keltner;
mod massi;
mod natr;
mod stddev;
mod trange;

pub use adr::AverageDailyRange;
pub use atr::AverageTrueRange;
pub(crate) use atr::WilderWeights;
pub use bbands::BollingerBands;
pub use donchian::DonchianChannels;
pub use keltner::KeltnerChannels;
pub use massi::MassIndex;
pub use natr::NormalizedAverageTrueRange;
pub use stddev::StandardDeviation;
pub use trange::TrueRange;
