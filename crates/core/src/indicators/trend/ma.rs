//! TA-Lib's moving-average types (`matype`), for the functions that take one.

use super::{
    DoubleExponentialMovingAverage, ExponentialMovingAverage, KaufmanAdaptiveMovingAverage, MesaAdaptiveMovingAverage,
    SimpleMovingAverage, T3MovingAverage, TriangularMovingAverage, TripleExponentialMovingAverage,
    WeightedMovingAverage,
};
use crate::CoreError;
use crate::indicators::{Indicator, Next};

/// TA-Lib's `TA_MAType`: the moving average a function such as APO or PPO
/// smooths with, numbered as TA-Lib numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MovingAverageType {
    /// 0: [`SimpleMovingAverage`].
    Sma,
    /// 1: [`ExponentialMovingAverage`].
    Ema,
    /// 2: [`WeightedMovingAverage`].
    Wma,
    /// 3: [`DoubleExponentialMovingAverage`].
    Dema,
    /// 4: [`TripleExponentialMovingAverage`].
    Tema,
    /// 5: [`TriangularMovingAverage`].
    Trima,
    /// 6: [`KaufmanAdaptiveMovingAverage`].
    Kama,
    /// 7: [`MesaAdaptiveMovingAverage`]'s MAMA line with TA-Lib's default
    /// limits (0.5, 0.05); the period is not used, as in TA-Lib's `TA_MA`.
    Mama,
    /// 8: [`T3MovingAverage`] with TA-Lib's default volume factor 0.7.
    T3,
}

impl MovingAverageType {
    /// The type of TA-Lib's number `code`.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] (naming `name`) outside 0 ..= 8.
    pub fn from_talib(name: &str, code: usize) -> Result<Self, CoreError> {
        Ok(match code {
            0 => Self::Sma,
            1 => Self::Ema,
            2 => Self::Wma,
            3 => Self::Dema,
            4 => Self::Tema,
            5 => Self::Trima,
            6 => Self::Kama,
            7 => Self::Mama,
            8 => Self::T3,
            _ => return Err(CoreError::param(name, format!("must be within 0 ..= 8, got {code}"))),
        })
    }

    /// TA-Lib's number of the type.
    pub fn talib_code(self) -> usize {
        match self {
            Self::Sma => 0,
            Self::Ema => 1,
            Self::Wma => 2,
            Self::Dema => 3,
            Self::Tema => 4,
            Self::Trima => 5,
            Self::Kama => 6,
            Self::Mama => 7,
            Self::T3 => 8,
        }
    }
}

/// A running moving average of a [`MovingAverageType`] (the period checked
/// by the caller).
#[derive(Debug, Clone)]
pub(crate) enum MovingAverage {
    Sma(SimpleMovingAverage),
    Ema(ExponentialMovingAverage),
    Wma(WeightedMovingAverage),
    Dema(DoubleExponentialMovingAverage),
    Tema(TripleExponentialMovingAverage),
    Trima(TriangularMovingAverage),
    Kama(KaufmanAdaptiveMovingAverage),
    Mama(Box<MesaAdaptiveMovingAverage>),
    T3(T3MovingAverage),
}

impl MovingAverage {
    pub(crate) fn new(kind: MovingAverageType, period: usize) -> Result<Self, CoreError> {
        Ok(match kind {
            MovingAverageType::Sma => Self::Sma(SimpleMovingAverage::new(period)?),
            MovingAverageType::Ema => Self::Ema(ExponentialMovingAverage::new(period)?),
            MovingAverageType::Wma => Self::Wma(WeightedMovingAverage::new(period)?),
            MovingAverageType::Dema => Self::Dema(DoubleExponentialMovingAverage::new(period)?),
            MovingAverageType::Tema => Self::Tema(TripleExponentialMovingAverage::new(period)?),
            MovingAverageType::Trima => Self::Trima(TriangularMovingAverage::new(period)?),
            MovingAverageType::Kama => Self::Kama(KaufmanAdaptiveMovingAverage::new(period)?),
            MovingAverageType::Mama => {
                // The period is checked (as every MA type's) but not used.
                crate::indicators::util::check_period("period", period, 1)?;
                let (fast, slow) = MesaAdaptiveMovingAverage::DEFAULTS;
                Self::Mama(Box::new(MesaAdaptiveMovingAverage::unchecked(fast, slow)))
            }
            MovingAverageType::T3 => Self::T3(T3MovingAverage::new(period, 0.7)?),
        })
    }

    pub(crate) fn next(&mut self, x: f64) -> Option<f64> {
        match self {
            Self::Sma(m) => m.next(x),
            Self::Ema(m) => m.next(x),
            Self::Wma(m) => m.next(x),
            Self::Dema(m) => m.next(x),
            Self::Tema(m) => m.next(x),
            Self::Trima(m) => m.next(x),
            Self::Kama(m) => m.next(x),
            Self::Mama(m) => m.next(x).map(|o| o.mama),
            Self::T3(m) => m.next(x),
        }
    }

    pub(crate) fn reset(&mut self) {
        match self {
            Self::Sma(m) => m.reset(),
            Self::Ema(m) => m.reset(),
            Self::Wma(m) => m.reset(),
            Self::Dema(m) => m.reset(),
            Self::Tema(m) => m.reset(),
            Self::Trima(m) => m.reset(),
            Self::Kama(m) => m.reset(),
            Self::Mama(m) => m.reset(),
            Self::T3(m) => m.reset(),
        }
    }
}

impl MovingAverageType {
    /// TA-Lib's lookback of `TA_MA` with this type and `period` (the index
    /// of its first value): 0 for a period of 1 (`TA_MA` then copies its
    /// input), `period − 1` for SMA, EMA, WMA and TRIMA, `2·(period − 1)` for
    /// DEMA, `3·(period − 1)` for TEMA, `period` for KAMA, 32 for MAMA and
    /// `6·(period − 1)` for T3.
    pub fn lookback(self, period: usize) -> usize {
        if period <= 1 {
            return 0;
        }
        let p = period - 1;
        match self {
            Self::Sma | Self::Ema | Self::Wma | Self::Trima => p,
            Self::Dema => 2 * p,
            Self::Tema => 3 * p,
            Self::Kama => period,
            Self::Mama => 32,
            Self::T3 => 6 * p,
        }
    }
}

/// A moving average of any TA-Lib type, as TA-Lib's `TA_MA`.
///
/// # Formula
///
/// The moving average of the [`MovingAverageType`] (each exactly as its own
/// type computes it from the first input). A period of 1 copies the input,
/// whatever the type, as `TA_MA` does. With MAMA the period is checked but
/// not used: the MAMA line with TA-Lib's default limits (0.5, 0.05).
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30).
/// - `matype`: TA-Lib's number, 0 ..= 8 (default 0, SMA).
///
/// Warm-up: [`MovingAverageType::lookback`] (29 with the defaults).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{AnyMovingAverage, MovingAverageType};
///
/// let ma = AnyMovingAverage::new(2, 2)?; // WMA(2)
/// assert_eq!(ma.matype(), MovingAverageType::Wma);
/// let out = ma.over_values(&[1.0, 4.0, 7.0])?;
/// assert_eq!(out, vec![None, Some(3.0), Some(6.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "MA")]
#[derive(Debug, Clone)]
pub struct AnyMovingAverage {
    period: usize,
    kind: MovingAverageType,
    /// `None` for a period of 1 (the input copied).
    ma: Option<MovingAverage>,
    ready: bool,
}

impl AnyMovingAverage {
    /// Default `(period, matype)` (TA-Lib's: 30, SMA).
    pub const DEFAULTS: (usize, usize) = (30, 0);

    /// Builds the moving average; `matype` is TA-Lib's number
    /// ([`MovingAverageType::from_talib`]).
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000 or a
    /// `matype` outside 0 ..= 8.
    pub fn new(period: usize, matype: usize) -> Result<Self, CoreError> {
        let kind = MovingAverageType::from_talib("matype", matype)?;
        Self::of_type(period, kind)
    }

    /// [`Self::new`] with the type given as a [`MovingAverageType`].
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000.
    pub fn of_type(period: usize, kind: MovingAverageType) -> Result<Self, CoreError> {
        let period = crate::indicators::util::check_period("period", period, 1)?;
        let ma = if period == 1 {
            None
        } else {
            Some(MovingAverage::new(kind, period)?)
        };
        Ok(Self {
            period,
            kind,
            ma,
            ready: false,
        })
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// The moving-average type.
    pub fn matype(&self) -> MovingAverageType {
        self.kind
    }

    /// TA-Lib's lookback (index of the first value).
    pub fn lookback(&self) -> usize {
        self.kind.lookback(self.period)
    }
}

impl Default for AnyMovingAverage {
    fn default() -> Self {
        Self {
            period: Self::DEFAULTS.0,
            kind: MovingAverageType::Sma,
            ma: Some(MovingAverage::Sma(SimpleMovingAverage::default())),
            ready: false,
        }
    }
}

impl Indicator for AnyMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        if let Some(ma) = &mut self.ma {
            ma.reset();
        }
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for AnyMovingAverage {
    #[inline]
    fn next(&mut self, x: f64) -> Option<f64> {
        let v = match &mut self.ma {
            Some(ma) => ma.next(x)?,
            None => x,
        };
        self.ready = true;
        Some(v)
    }
}

crate::indicators::close_based!(AnyMovingAverage);

/// A [`AnyMovingAverage`] started `skip` inputs late: TA-Lib's functions
/// that combine moving averages of different lookbacks (MACDEXT, MAVP, BBANDS)
/// start each one so that all have their first value on the same bar, which
/// matters for the recursive types (EMA, DEMA, TEMA, KAMA, MAMA, T3).
#[derive(Debug, Clone)]
pub(crate) struct AlignedMovingAverage {
    skip: usize,
    left: usize,
    ma: AnyMovingAverage,
}

impl AlignedMovingAverage {
    /// `ma` whose first value falls on input `start` (at least its own lookback).
    pub(crate) fn new(ma: AnyMovingAverage, start: usize) -> Self {
        let skip = start.saturating_sub(ma.lookback());
        Self { skip, left: skip, ma }
    }

    #[inline]
    pub(crate) fn next(&mut self, x: f64) -> Option<f64> {
        if self.left > 0 {
            self.left -= 1;
            return None;
        }
        self.ma.next(x)
    }

    pub(crate) fn reset(&mut self) {
        self.left = self.skip;
        self.ma.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_one_copies_and_lookbacks_are_talibs() {
        for code in 0..=8 {
            let ma = AnyMovingAverage::new(1, code).unwrap();
            let xs = [1.0, 2.5, -3.0];
            assert_eq!(ma.over_values(&xs).unwrap(), xs.map(Some).to_vec());
            let kind = MovingAverageType::from_talib("matype", code).unwrap();
            for period in [2, 5, 9] {
                let ma = AnyMovingAverage::of_type(period, kind).unwrap();
                let ys: Vec<f64> = (0..200).map(|i| (f64::from(i) * 0.37).sin() + 10.0).collect();
                let first = ma.over_values(&ys).unwrap().iter().position(Option::is_some);
                assert_eq!(first, Some(kind.lookback(period)), "{kind:?} {period}");
            }
        }
        assert!(AnyMovingAverage::new(0, 0).is_err());
        assert!(AnyMovingAverage::new(5, 9).is_err());
    }
}
