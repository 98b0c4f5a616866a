//! Price transforms: one value per bar from its own prices (TA-Lib's
//! AVGPRICE, MEDPRICE, TYPPRICE and WCLPRICE).

mod transforms;

pub use transforms::{AveragePrice, MedianPrice, TypicalPrice, WeightedClosePrice};
