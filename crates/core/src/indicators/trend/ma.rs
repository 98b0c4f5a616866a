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
