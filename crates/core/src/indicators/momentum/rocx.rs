//! The ratio forms of the rate of change: ROCP, ROCR and ROCR100.

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

macro_rules! ratio {
    ($(#[$doc:meta])* $ty:ident, $alias:literal, |$x:ident, $old:ident| $formula:expr) => {
        $(#[$doc])*
        #[doc(alias = $alias)]
        #[derive(Debug, Clone)]
        pub struct $ty {
            period: usize,
            window: Window,
            ready: bool,
        }

        impl $ty {
            /// Default period (TA-Lib's).
            pub const DEFAULT_PERIOD: usize = 10;

            /// Builds the indicator.
            ///
            /// # Errors
            /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
            pub fn new(period: usize) -> Result<Self, CoreError> {
                let period = check_period("period", period, 1)?;
                Ok(Self::unchecked(period))
            }

            fn unchecked(period: usize) -> Self {
                Self {
                    period,
                    window: Window::new(period),
                    ready: false,
                }
            }

            /// The period.
            pub fn period(&self) -> usize {
                self.period
            }
        }

        impl Default for $ty {
            fn default() -> Self {
                Self::unchecked(Self::DEFAULT_PERIOD)
            }
        }

        impl Indicator for $ty {
            type Output = f64;

            fn reset(&mut self) {
                self.window.clear();
                self.ready = false;
            }

            fn is_ready(&self) -> bool {
                self.ready
            }
        }

        impl Next<f64> for $ty {
            #[inline]
            fn next(&mut self, $x: f64) -> Option<f64> {
                let out = self
                    .window
                    .push($x)
                    .map(|$old| if $old != 0.0 { $formula } else { 0.0 });
                self.ready = out.is_some();
                out
            }
        }

        close_based!($ty);
    };
}

ratio!(
    /// Rate of change as a fraction, as TA-Lib's `TA_ROCP`:
    /// `(x_t − x_{t−period}) / x_{t−period}` (0 when the old value is 0).
    ///
    /// # Parameters
    ///
    /// - `period`: 1 ..= 10 000 (default 10).
    ///
    /// Warm-up: the first value is at index `period`.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::RateOfChangePercentage;
    ///
    /// let out = RateOfChangePercentage::new(1)?.over_values(&[2.0, 3.0])?;
    /// assert_eq!(out, vec![None, Some(0.5)]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    RateOfChangePercentage, "ROCP", |x, old| (x - old) / old
);

ratio!(
    /// Rate of change as a ratio, as TA-Lib's `TA_ROCR`:
    /// `x_t / x_{t−period}` (0 when the old value is 0).
    ///
    /// # Parameters
    ///
    /// - `period`: 1 ..= 10 000 (default 10).
    ///
    /// Warm-up: the first value is at index `period`.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::RateOfChangeRatio;
    ///
    /// let out = RateOfChangeRatio::new(1)?.over_values(&[2.0, 3.0])?;
    /// assert_eq!(out, vec![None, Some(1.5)]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    RateOfChangeRatio, "ROCR", |x, old| x / old
);

ratio!(
    /// Rate of change as a ratio times 100, as TA-Lib's `TA_ROCR100`:
    /// `100 · x_t / x_{t−period}` (0 when the old value is 0).
    ///
    /// # Parameters
    ///
    /// - `period`: 1 ..= 10 000 (default 10).
    ///
    /// Warm-up: the first value is at index `period`.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::RateOfChangeRatio100;
    ///
    /// let out = RateOfChangeRatio100::new(1)?.over_values(&[2.0, 3.0])?;
    /// assert_eq!(out, vec![None, Some(150.0)]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    RateOfChangeRatio100, "ROCR100", |x, old| (x / old) * 100.0
);
