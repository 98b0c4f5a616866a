//! Price transforms: one value per bar from its own prices (TA-Lib's
//! AVGPRICE, MEDPRICE, TYPPRICE and WCLPRICE).

mod avgdev;
mod transforms;

pub use avgdev::AverageDeviation;
pub use transforms::{AveragePrice, MedianPrice, TypicalPrice, WeightedClosePrice};
