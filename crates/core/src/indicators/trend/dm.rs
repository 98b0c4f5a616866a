//! Directional movement on its own: +DM, −DM, +DI, −DI, DX and ADXR
//! (TA-Lib's `PLUS_DM`, `MINUS_DM`, `PLUS_DI`, `MINUS_DI`, `DX`, `ADXR`).
//!
//! [`AverageDirectionalIndex`] computes the same lines together with the
//! ADX; these types give each TA-Lib function with its own lookback and
//! parameter range (the DM and DI functions accept a period of 1).

use std::collections::VecDeque;

use super::AverageDirectionalIndex;
use crate::indicators::util::{check_period, true_range};
use crate::indicators::{Indicator, Next, bar_based, columns_based, run_bars};
use crate::{Bar, CoreError};

/// The smoothed directional movements and true range, TA-Lib's way.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Movement {
    plus: f64,
    minus: f64,
    tr: f64,
}

/// The accumulation all the directional functions share: one-bar moves
/// `up = high − prev high`, `down = prev low − low`; `+DM1 = up` when
/// `up > 0` and `up > down`, `−DM1 = down` when `down > 0` and `down > up`;
/// the plain sums of the first `period − 1` of them (the seed, at index
/// `period − 1`), then Wilder's `S = S − S/period + v` on every later bar.
#[derive(Debug, Clone)]
struct DmCore {
    period: usize,
    count: usize,
    prev_high: f64,
    prev_low: f64,
    prev_close: f64,
    sums: Movement,
}

impl DmCore {
    fn new(period: usize) -> Self {
        Self {
            period,
            count: 0,
            prev_high: 0.0,
            prev_low: 0.0,
            prev_close: 0.0,
            sums: Movement {
                plus: 0.0,
                minus: 0.0,
                tr: 0.0,
            },
        }
    }

    /// Bars seen (saturating past the warm-up).
    fn seen(&self) -> usize {
        self.count
    }

    /// Feeds a bar: `None` before index `period − 1`, then the sums (at
    /// `period − 1`, unsmoothed) and the smoothed values.
    fn push(&mut self, bar: &Bar) -> Option<Movement> {
        let idx = self.count;
        if idx <= self.period {
            self.count += 1;
        }
        if idx == 0 {
            self.prev_high = bar.high;
            self.prev_low = bar.low;
            self.prev_close = bar.close;
            return (self.period == 1).then_some(self.sums);
        }
        let up = bar.high - self.prev_high;
        let down = self.prev_low - bar.low;
        self.prev_high = bar.high;
        self.prev_low = bar.low;
        let tr = true_range(bar.high, bar.low, self.prev_close);
        self.prev_close = bar.close;
        let (plus, minus) = if down > 0.0 && up < down {
            (0.0, down)
        } else if up > 0.0 && up > down {
            (up, 0.0)
        } else {
            (0.0, 0.0)
        };
        let n = self.period as f64;
        let s = &mut self.sums;
        if idx < self.period {
            s.plus += plus;
            s.minus += minus;
            s.tr += tr;
            return (idx == self.period - 1).then_some(*s);
        }
        s.minus -= s.minus / n;
        s.plus -= s.plus / n;
        s.minus += minus;
        s.plus += plus;
        s.tr = s.tr - s.tr / n + tr;
        Some(*s)
    }

    fn clear(&mut self) {
        *self = Self::new(self.period);
    }
}

/// `100 · dm / tr`, 0 when `tr` is 0. With a period of 1, TA-Lib 0.8's
/// `PLUS_DI` and `MINUS_DI` return the ratio unscaled (`dm / tr`, 0 to 1);
/// kept, to stay equal to it.
#[inline]
fn di(dm: f64, tr: f64, period: usize) -> f64 {
    if tr == 0.0 {
        0.0
    } else if period == 1 {
        dm / tr
    } else {
        100.0 * (dm / tr)
    }
}

macro_rules! directional {
    (
        $(#[$doc:meta])* $ty:ident, $alias:literal,
        first = |$p:ident| $first:expr,
        value = |$m:ident, $vp:ident| $value:expr
    ) => {
        $(#[$doc])*
        #[doc(alias = $alias)]
        #[derive(Debug, Clone)]
        pub struct $ty {
            core: DmCore,
            ready: bool,
        }

        impl $ty {
            /// Default period (TA-Lib's).
            pub const DEFAULT_PERIOD: usize = 14;

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
                    core: DmCore::new(period),
                    ready: false,
                }
            }

            /// The period.
            pub fn period(&self) -> usize {
                self.core.period
            }

            /// Index of the first value (TA-Lib's lookback).
            fn first(&self) -> usize {
                let $p = self.core.period;
                $first
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
                self.core.clear();
                self.ready = false;
            }

            fn is_ready(&self) -> bool {
                self.ready
            }
        }

        impl Next<&Bar> for $ty {
            fn next(&mut self, bar: &Bar) -> Option<f64> {
                let idx = self.core.seen();
                let $m = self.core.push(bar)?;
                let $vp = self.core.period;
                if idx < self.first() {
                    return None;
                }
                self.ready = true;
                Some($value)
            }
        }

        bar_based!($ty, run_bars);
    };
}

directional!(
    /// Plus directional movement, as TA-Lib's `TA_PLUS_DM`: Wilder's
    /// smoothed sum of the upward moves.
    ///
    /// # Formula
    ///
    /// `up = high − prev high`, `down = prev low − low`; `+DM1 = up` when
    /// `up > 0` and `up > down`, else 0. The first value (index
    /// `period − 1`) is the sum of the first `period − 1` of them; then
    /// `+DM = +DM − +DM/period + +DM1`. With `period = 1` it is `+DM1` itself.
    ///
    /// # Parameters
    ///
    /// - `period`: 1 ..= 10 000 (default 14).
    ///
    /// Warm-up: the first value is at index `period − 1` (1 for a period of 1).
    /// TA-Lib flags the function as having an unstable period; its default
    /// is 0, as here.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::PlusDirectionalMovement;
    ///
    /// let out = PlusDirectionalMovement::new(1)?.over_columns(&[10.0, 12.0, 11.0], &[9.0, 10.0, 8.0])?;
    /// assert!(out[0].is_nan());
    /// assert_eq!(&out[1..], &[2.0, 0.0]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    PlusDirectionalMovement, "PLUS_DM",
    first = |p| (p - 1).max(1),
    value = |m, _p| m.plus
);

directional!(
    /// Minus directional movement, as TA-Lib's `TA_MINUS_DM`: Wilder's
    /// smoothed sum of the downward moves.
    ///
    /// # Formula
    ///
    /// `up = high − prev high`, `down = prev low − low`; `−DM1 = down` when
    /// `down > 0` and `down > up`, else 0; smoothed as
    /// [`PlusDirectionalMovement`].
    ///
    /// # Parameters
    ///
    /// - `period`: 1 ..= 10 000 (default 14).
    ///
    /// Warm-up: the first value is at index `period − 1` (1 for a period of 1).
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::MinusDirectionalMovement;
    ///
    /// let out = MinusDirectionalMovement::new(1)?.over_columns(&[10.0, 12.0, 11.0], &[9.0, 10.0, 8.0])?;
    /// assert_eq!(&out[1..], &[0.0, 2.0]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    MinusDirectionalMovement, "MINUS_DM",
    first = |p| (p - 1).max(1),
    value = |m, _p| m.minus
);

directional!(
    /// Plus directional indicator, as TA-Lib's `TA_PLUS_DI`:
    /// `+DI = 100 · +DM / TR`, both Wilder-smoothed.
    ///
    /// # Formula
    ///
    /// `+DM` as [`PlusDirectionalMovement`], `TR` the true range summed and
    /// smoothed the same way; the first value (index `period`) comes after
    /// one smoothing step of the seed sums. 0 when `TR` is 0. With
    /// `period = 1` the value is TA-Lib's unscaled `+DM1 / TR1` (0 to 1).
    ///
    /// # Parameters
    ///
    /// - `period`: 1 ..= 10 000 (default 14).
    ///
    /// Warm-up: the first value is at index `period`.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::PlusDirectionalIndicator;
    ///
    /// let out = PlusDirectionalIndicator::new(1)?
    ///     .over_columns(&[10.0, 12.0], &[9.0, 10.0], &[9.5, 11.0])?;
    /// assert_eq!(out[1], 2.0 / 2.5); // period 1: unscaled, as TA-Lib
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    PlusDirectionalIndicator, "PLUS_DI",
    first = |p| p,
    value = |m, p| di(m.plus, m.tr, p)
);

directional!(
    /// Minus directional indicator, as TA-Lib's `TA_MINUS_DI`:
    /// `−DI = 100 · −DM / TR`, both Wilder-smoothed.
    ///
    /// # Formula
    ///
    /// As [`PlusDirectionalIndicator`] with `−DM` (unscaled with `period = 1`,
    /// as TA-Lib).
    ///
    /// # Parameters
    ///
    /// - `period`: 1 ..= 10 000 (default 14).
    ///
    /// Warm-up: the first value is at index `period`.
    ///
    /// # Example
    ///
    /// ```
    /// use tradeterm_core::indicators::MinusDirectionalIndicator;
    ///
    /// let out = MinusDirectionalIndicator::new(1)?
    ///     .over_columns(&[10.0, 9.5], &[9.0, 8.0], &[9.5, 8.5])?;
    /// assert_eq!(out[1], 1.0 / 1.5); // period 1: unscaled, as TA-Lib
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    MinusDirectionalIndicator, "MINUS_DI",
    first = |p| p,
    value = |m, p| di(m.minus, m.tr, p)
);

columns_based!(PlusDirectionalMovement, high, low);
columns_based!(MinusDirectionalMovement, high, low);
columns_based!(PlusDirectionalIndicator, high, low, close);
columns_based!(MinusDirectionalIndicator, high, low, close);

/// Directional movement index, as TA-Lib's `TA_DX`:
/// `DX = 100 · |+DI − −DI| / (+DI + −DI)`.
///
/// # Formula
///
/// `+DI` and `−DI` as [`PlusDirectionalIndicator`] and
/// [`MinusDirectionalIndicator`]. The first value is 0 when `TR` or
/// `+DI + −DI` is 0; a later bar where either is 0 repeats the previous DX
/// (TA-Lib's rule).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period` (TA-Lib's unstable period
/// defaults to 0, as here).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::DirectionalMovementIndex;
///
/// let highs: Vec<f64> = (0..20).map(|i| 10.0 + i as f64).collect();
/// let lows: Vec<f64> = highs.iter().map(|h| h - 1.0).collect();
/// let out = DirectionalMovementIndex::new(5)?.over_columns(&highs, &lows, &highs)?;
/// assert!(out[4].is_nan());
/// assert_eq!(out[5], 100.0); // only upward moves
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "DX")]
#[derive(Debug, Clone)]
pub struct DirectionalMovementIndex {
    core: DmCore,
    last: Option<f64>,
}

impl DirectionalMovementIndex {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self::unchecked(period))
    }

    fn unchecked(period: usize) -> Self {
        Self {
            core: DmCore::new(period),
            last: None,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.core.period
    }
}

impl Default for DirectionalMovementIndex {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for DirectionalMovementIndex {
    type Output = f64;

    fn reset(&mut self) {
        self.core.clear();
        self.last = None;
    }

    fn is_ready(&self) -> bool {
        self.last.is_some()
    }
}

impl Next<&Bar> for DirectionalMovementIndex {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let idx = self.core.seen();
        let m = self.core.push(bar)?;
        if idx < self.core.period {
            return None;
        }
        let dx = if m.tr != 0.0 {
            let minus = 100.0 * (m.minus / m.tr);
            let plus = 100.0 * (m.plus / m.tr);
            let sum = minus + plus;
            (sum != 0.0).then(|| 100.0 * ((minus - plus).abs() / sum))
        } else {
            None
        };
        let value = dx.or(self.last).unwrap_or(0.0);
        self.last = Some(value);
        Some(value)
    }
}

bar_based!(DirectionalMovementIndex, run_bars);
columns_based!(DirectionalMovementIndex, high, low, close);

/// Average directional movement index rating, as TA-Lib's `TA_ADXR`: the
/// mean of today's ADX and the ADX `period − 1` bars earlier.
///
/// # Formula
///
/// `ADXR_t = (ADX_t + ADX_{t−(period−1)}) / 2`, with the ADX of
/// [`AverageDirectionalIndex`].
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `3 · period − 2` (40).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::AverageDirectionalIndexRating;
///
/// let highs: Vec<f64> = (0..20).map(|i| 10.0 + i as f64).collect();
/// let lows: Vec<f64> = highs.iter().map(|h| h - 1.0).collect();
/// let out = AverageDirectionalIndexRating::new(3)?.over_columns(&highs, &lows, &highs)?;
/// assert!(out[6].is_nan());
/// assert_eq!(out[7], 100.0);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "ADXR")]
#[derive(Debug, Clone)]
pub struct AverageDirectionalIndexRating {
    adx: AverageDirectionalIndex,
    /// The last `period` ADX values, oldest first.
    recent: VecDeque<f64>,
    ready: bool,
}

impl AverageDirectionalIndexRating {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 14;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        Ok(Self {
            adx: AverageDirectionalIndex::new(period)?,
            recent: VecDeque::with_capacity(period),
            ready: false,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.adx.period()
    }
}

impl Default for AverageDirectionalIndexRating {
    fn default() -> Self {
        Self {
            adx: AverageDirectionalIndex::default(),
            recent: VecDeque::with_capacity(Self::DEFAULT_PERIOD),
            ready: false,
        }
    }
}

impl Indicator for AverageDirectionalIndexRating {
    type Output = f64;

    fn reset(&mut self) {
        self.adx.reset();
        self.recent.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for AverageDirectionalIndexRating {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let adx = self.adx.next(bar)?.adx?;
        if self.recent.len() == self.adx.period() {
            self.recent.pop_front();
        }
        self.recent.push_back(adx);
        if self.recent.len() < self.adx.period() {
            return None;
        }
        self.ready = true;
        let old = self.recent.front().copied().unwrap_or(adx);
        Some((adx + old) / 2.0)
    }
}

bar_based!(AverageDirectionalIndexRating, run_bars);
columns_based!(AverageDirectionalIndexRating, high, low, close);
