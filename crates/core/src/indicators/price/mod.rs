//! Price transforms: one value per bar from its own prices (TA-Lib's
//! AVGPRICE, MEDPRICE, TYPPRICE and WCLPRICE).

mod avgdev;
mod ha;
mod transforms;

pub use avgdev::AverageDeviation;
pub use ha::{HeikinAshi, HeikinAshiOutput, HeikinAshiSeries};
pub use transforms::{AveragePrice, MedianPrice, TypicalPrice, WeightedClosePrice};
