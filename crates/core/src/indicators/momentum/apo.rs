//! Absolute and percentage price oscillators.

use crate::CoreError;
use crate::indicators::trend::{MovingAverage, MovingAverageType};
use crate::indicators::util::check_period;
use crate::indicators::{Indicator, Next, close_based};

/// The two moving averages of APO and PPO (TA-Lib's `TA_INT_PO`).
#[derive(Debug, Clone)]
struct PriceOscillator {
    fast: usize,
    slow: usize,
    kind: MovingAverageType,
    fast_ma: MovingAverage,
    slow_ma: MovingAverage,
}

impl PriceOscillator {
    fn new(fast: usize, slow: usize, matype: usize) -> Result<Self, CoreError> {
        let fast = check_period("fast", fast, 2)?;
        let slow = check_period("slow", slow, 2)?;
        let kind = MovingAverageType::from_talib("matype", matype)?;
        // TA-Lib's rule: the shorter period is the fast one.
        let (fast, slow) = if slow < fast { (slow, fast) } else { (fast, slow) };
        Ok(Self {
            fast,
            slow,
            kind,
            fast_ma: MovingAverage::new(kind, fast)?,
            slow_ma: MovingAverage::new(kind, slow)?,
        })
    }

    /// `(fast MA, slow MA)` once both have a value.
    fn push(&mut self, x: f64) -> Option<(f64, f64)> {
        let f = self.fast_ma.next(x);
        let s = self.slow_ma.next(x);
        Some((f?, s?))
    }

    fn reset(&mut self) {
        self.fast_ma.reset();
        self.slow_ma.reset();
    }
}

macro_rules! oscillator {
    ($(#[$doc:meta])* $ty:ident, $alias:literal, |$f:ident, $s:ident| $formula:expr) => {
        $(#[$doc])*
        #[doc(alias = $alias)]
        #[derive(Debug, Clone)]
        pub struct $ty {
            po: PriceOscillator,
            ready: bool,
        }

        impl $ty {
            /// Default `(fast, slow, matype)` (TA-Lib 0.8's: EMA).
            pub const DEFAULTS: (usize, usize, usize) = (12, 26, 1);

            /// Builds the indicator; `matype` is TA-Lib's number of the moving
            /// average ([`MovingAverageType::from_talib`]).
            ///
            /// # Errors
            /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000 or
            /// a `matype` outside 0 ..= 8.
            pub fn new(fast: usize, slow: usize, matype: usize) -> Result<Self, CoreError> {
                Ok(Self {
                    po: PriceOscillator::new(fast, slow, matype)?,
                    ready: false,
                })
            }

            /// `(fast, slow)` periods as used (swapped when given the other way round).
            pub fn periods(&self) -> (usize, usize) {
                (self.po.fast, self.po.slow)
            }

            /// The moving-average type.
            pub fn matype(&self) -> MovingAverageType {
                self.po.kind
            }
        }

        impl Default for $ty {
            fn default() -> Self {
                let (f, s, _) = Self::DEFAULTS;
                Self {
                    po: PriceOscillator {
                        fast: f,
                        slow: s,
                        kind: MovingAverageType::Ema,
                        fast_ma: MovingAverage::Ema(crate::indicators::ExponentialMovingAverage::unchecked(f)),
                        slow_ma: MovingAverage::Ema(crate::indicators::ExponentialMovingAverage::unchecked(s)),
                    },
                    ready: false,
                }
            }
        }

        impl Indicator for $ty {
            type Output = f64;

            fn reset(&mut self) {
                self.po.reset();
                self.ready = false;
            }

            fn is_ready(&self) -> bool {
                self.ready
            }
        }

        impl Next<f64> for $ty {
            fn next(&mut self, x: f64) -> Option<f64> {
                let ($f, $s) = self.po.push(x)?;
                self.ready = true;
                Some($formula)
            }
        }

        close_based!($ty);
    };
}

oscillator!(
    /// Absolute price oscillator, as TA-Lib's `TA_APO`: the fast moving
    /// average minus the slow one.
    ///
    /// # Formula
    ///
    /// `APO = MA_fast(x) − MA_slow(x)`, both moving averages of the
    /// `matype` (each as its own type computes it from the first input).
    ///
    /// # Parameters
    ///
    /// - `fast`: 2 ..= 10 000 (default 12), `slow`: 2 ..= 10 000 (default 26);
    ///   swapped when `slow < fast`, as TA-Lib.
    /// - `matype`: TA-Lib's moving-average number, 0 ..= 8 (default
    ///   1, EMA: TA-Lib 0.8's default).
    ///
    /// Warm-up: the slow average's (25 with the defaults).
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::AbsolutePriceOscillator;
    ///
    /// let xs: Vec<f64> = (0..10).map(f64::from).collect();
    /// let out = AbsolutePriceOscillator::new(2, 4, 0)?.over_values(&xs)?;
    /// assert_eq!(out[3], Some(1.0)); // SMA(2) − SMA(4) on a line of slope 1
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    AbsolutePriceOscillator, "APO", |f, s| f - s
);

oscillator!(
    /// Percentage price oscillator, as TA-Lib's `TA_PPO`: the gap between
    /// the fast and slow moving averages, in percent of the slow one.
    ///
    /// # Formula
    ///
    /// `PPO = 100 · (MA_fast − MA_slow) / MA_slow` (0 when `MA_slow` is 0).
    ///
    /// # Parameters
    ///
    /// As [`AbsolutePriceOscillator`]: `fast` (12), `slow` (26), `matype` (1).
    ///
    /// Warm-up: the slow average's (25 with the defaults).
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::PercentagePriceOscillator;
    ///
    /// let xs: Vec<f64> = (1..=10).map(f64::from).collect();
    /// let out = PercentagePriceOscillator::new(2, 4, 0)?.over_values(&xs)?;
    /// assert_eq!(out[3], Some(100.0 * (3.5 - 2.5) / 2.5));
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    PercentagePriceOscillator, "PPO", |f, s| if s != 0.0 { ((f - s) / s) * 100.0 } else { 0.0 }
);
