//! Volatility indicators: ATR, standard deviation and channels (Bollinger,
//! Donchian, Keltner).

mod atr;
mod bbands;
mod donchian;
mod keltner;
mod stddev;

pub use atr::AverageTrueRange;
pub(crate) use atr::WilderWeights;
pub use bbands::BollingerBands;
pub use donchian::DonchianChannels;
pub use keltner::KeltnerChannels;
pub use stddev::StandardDeviation;
