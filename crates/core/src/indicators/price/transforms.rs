//! The four price transforms of TA-Lib.
//!
//! Each is a pure function of one bar: no parameter, no warm-up (TA-Lib's
//! lookback 0), a value on every bar. The streaming form exists so that they
//! compose with the other indicators; `reset` has nothing to forget.

use crate::Bar;
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};

macro_rules! transform {
    ($(#[$doc:meta])* $ty:ident, $alias:literal, |$b:ident| $formula:expr, $($col:ident),+) => {
        $(#[$doc])*
        #[doc(alias = $alias)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $ty {
            ready: bool,
        }

        impl $ty {
            /// Builds the transform (it has no parameter).
            pub fn new() -> Self {
                Self::default()
            }
        }

        impl Indicator for $ty {
            type Output = f64;

            fn reset(&mut self) {
                self.ready = false;
            }

            fn is_ready(&self) -> bool {
                self.ready
            }
        }

        impl Next<&Bar> for $ty {
            #[inline]
            fn next(&mut self, $b: &Bar) -> Option<f64> {
                self.ready = true;
                Some($formula)
            }
        }

        bar_based!($ty, run_bars);
        columns_based!($ty, $($col),+);
    };
}

transform!(
    /// Average price, as TA-Lib's `TA_AVGPRICE`: `(open + high + low + close) / 4`
    /// (summed in TA-Lib's order, `high + low + close + open`).
    ///
    /// Warm-up: none, a value on every bar.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::AveragePrice;
    ///
    /// let out = AveragePrice::new().over_columns(&[1.0], &[4.0], &[0.0], &[3.0])?;
    /// assert_eq!(out, vec![2.0]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    AveragePrice, "AVGPRICE", |b| (b.high + b.low + b.close + b.open) / 4.0, open, high, low, close
);

transform!(
    /// Median price, as TA-Lib's `TA_MEDPRICE`: `(high + low) / 2`.
    ///
    /// Warm-up: none, a value on every bar.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::MedianPrice;
    ///
    /// assert_eq!(MedianPrice::new().over_columns(&[3.0], &[1.0])?, vec![2.0]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    MedianPrice, "MEDPRICE", |b| (b.high + b.low) / 2.0, high, low
);

transform!(
    /// Typical price, as TA-Lib's `TA_TYPPRICE`: `(high + low + close) / 3`.
    ///
    /// Warm-up: none, a value on every bar.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::TypicalPrice;
    ///
    /// assert_eq!(TypicalPrice::new().over_columns(&[3.0], &[1.0], &[2.0])?, vec![2.0]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    TypicalPrice, "TYPPRICE", |b| (b.high + b.low + b.close) / 3.0, high, low, close
);

transform!(
    /// Weighted close price, as TA-Lib's `TA_WCLPRICE`: `(high + low + 2 · close) / 4`.
    ///
    /// Warm-up: none, a value on every bar.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::WeightedClosePrice;
    ///
    /// assert_eq!(WeightedClosePrice::new().over_columns(&[4.0], &[0.0], &[3.0])?, vec![2.5]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    WeightedClosePrice, "WCLPRICE", |b| (b.high + b.low + b.close * 2.0) / 4.0, high, low, close
);
