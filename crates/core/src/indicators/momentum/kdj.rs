//! KDJ (stochastic with a J line).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::util::check_period;
use crate::indicators::{
    AnyMovingAverage, FastStochastic, HullMovingAverage, Indicator, Next, WildersMovingAverage,
    ZeroLagExponentialMovingAverage, run_bars, run_columns,
};
use crate::{Bar, CoreError};

/// One KDJ step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KdjOutput {
    /// K: the smoothed fast %K.
    pub k: f64,
    /// D: the smoothed K.
    pub d: f64,
    /// J: `3K − 2D`.
    pub j: f64,
}

/// Batch KDJ: one value per bar and line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KdjSeries {
    /// K.
    pub k: Vec<Option<f64>>,
    /// D.
    pub d: Vec<Option<f64>>,
    /// J.
    pub j: Vec<Option<f64>>,
}

/// A moving average of one of TA-Lib 0.8's types 0 ..= 13.
#[derive(Debug, Clone)]
enum Smoother {
    Classic(Box<AnyMovingAverage>),
    Hull(Box<HullMovingAverage>),
    Identity,
    ZeroLag(Box<ZeroLagExponentialMovingAverage>),
    Wilder(WildersMovingAverage),
}

impl Smoother {
    /// TA-Lib's type number: 0-8 the classic types, 9 HMA, 10 none, 12
    /// ZLEMA, 13 and 11 (KDJ's own default) Wilder's average.
    fn new(name: &str, period: usize, matype: usize) -> Result<Self, CoreError> {
        Ok(match matype {
            0..=8 => Self::Classic(Box::new(AnyMovingAverage::new(period, matype)?)),
            9 => Self::Hull(Box::new(HullMovingAverage::new(period)?)),
            10 => Self::Identity,
            12 => Self::ZeroLag(Box::new(ZeroLagExponentialMovingAverage::new(period)?)),
            11 | 13 => Self::Wilder(WildersMovingAverage::new(period)?),
            _ => return Err(CoreError::param(name, format!("must be within [0, 13], got {matype}"))),
        })
    }

    fn reset(&mut self) {
        match self {
            Self::Classic(m) => m.reset(),
            Self::Hull(m) => m.reset(),
            Self::Identity => {}
            Self::ZeroLag(m) => m.reset(),
            Self::Wilder(m) => m.reset(),
        }
    }

    fn next(&mut self, x: f64) -> Option<f64> {
        match self {
            Self::Classic(m) => m.next(x),
            Self::Hull(m) => m.next(x),
            Self::Identity => Some(x),
            Self::ZeroLag(m) => m.next(x),
            Self::Wilder(m) => m.next(x),
        }
    }
}

/// KDJ, as TA-Lib's `TA_KDJ`: a slow stochastic whose K and D are smoothed
/// by Wilder's average by default, with `J = 3K − 2D`.
///
/// # Formula
///
/// Fast `%K` of `fastk` bars (TA-Lib's STOCHF, 0 on a flat window);
/// `K = MA(%K, slowk)`, `D = MA(K, slowd)`, `J = 3K − 2D`. K, D and J are
/// reported from the first bar where D exists (TA-Lib aligns them).
///
/// # Parameters
///
/// - `fastk` (default 9), `slowk` (default 3), `slowd` (default 3): each
///   1 ..= 10 000;
/// - `slowk_matype`, `slowd_matype` (default 13): TA-Lib 0.8's types 0 SMA,
///   1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3, 9 HMA,
///   10 none, 11 the function's default (13), 12 ZLEMA, 13 Wilder's.
///
/// Warm-up: `fastk − 1` plus the two averages' lookbacks (12 at the defaults).
#[doc(alias = "KDJ")]
#[derive(Debug, Clone)]
pub struct Kdj {
    stoch: FastStochastic,
    k: Smoother,
    d: Smoother,
    ready: bool,
}

impl Kdj {
    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 1 ..= 10 000 or a
    /// type outside 0 ..= 13.
    pub fn new(
        fastk: usize,
        slowk: usize,
        slowk_matype: usize,
        slowd: usize,
        slowd_matype: usize,
    ) -> Result<Self, CoreError> {
        let slowk = check_period("slowk", slowk, 1)?;
        let slowd = check_period("slowd", slowd, 1)?;
        Ok(Self {
            stoch: FastStochastic::new(fastk, 1)?,
            k: Smoother::new("slowk_matype", slowk, slowk_matype)?,
            d: Smoother::new("slowd_matype", slowd, slowd_matype)?,
            ready: false,
        })
    }

    /// Batch form: one value per bar and line, `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<KdjSeries, CoreError> {
        Ok(Self::split(&run_bars(self, bars)?))
    }

    /// Column form over highs, lows and closes (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64], close: &[f64]) -> Result<KdjSeries, CoreError> {
        let columns = [("high", high), ("low", low), ("close", close)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            close: close[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(Self::split(&outs))
    }

    fn split(outs: &[Option<KdjOutput>]) -> KdjSeries {
        KdjSeries {
            k: outs.iter().map(|o| o.map(|x| x.k)).collect(),
            d: outs.iter().map(|o| o.map(|x| x.d)).collect(),
            j: outs.iter().map(|o| o.map(|x| x.j)).collect(),
        }
    }
}

impl Default for Kdj {
    fn default() -> Self {
        match Self::new(9, 3, 13, 3, 13) {
            Ok(k) => k,
            Err(_) => unreachable!("the defaults are valid"),
        }
    }
}

impl Indicator for Kdj {
    type Output = KdjOutput;

    fn reset(&mut self) {
        self.stoch.reset();
        self.k.reset();
        self.d.reset();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for Kdj {
    fn next(&mut self, bar: &Bar) -> Option<KdjOutput> {
        let fast = self.stoch.next(bar)?;
        let k = self.k.next(fast.k)?;
        let d = self.d.next(k)?;
        self.ready = true;
        Some(KdjOutput {
            k,
            d,
            j: 3.0 * k - 2.0 * d,
        })
    }
}
