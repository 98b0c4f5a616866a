//! Fast stochastic and stochastic RSI.

use super::{RelativeStrengthIndex, StochasticSeries};
use crate::indicators::trend::{MovingAverage, MovingAverageType};
use crate::indicators::util::{RollingExtreme, RunningSma, check_period, is_zero_scaled};
use crate::indicators::{Indicator, Next, run_bars, run_columns, run_values};
use crate::{Bar, CoreError};

use super::StochasticOutput;

/// The %D smoothing: TA-Lib's running-sum SMA for `matype` 0 (bit-identical
/// to TA-Lib's STOCHF), any other [`MovingAverageType`] otherwise.
#[derive(Debug, Clone)]
pub(crate) enum Smoothing {
    Sma(RunningSma),
    Other(Box<MovingAverage>),
}

impl Smoothing {
    /// The smoothing of TA-Lib's `matype` (named `name` in errors) over `period`.
    pub(crate) fn new(name: &str, period: usize, matype: usize) -> Result<(Self, MovingAverageType), CoreError> {
        let kind = MovingAverageType::from_talib(name, matype)?;
        let smoothing = match kind {
            MovingAverageType::Sma => Self::Sma(RunningSma::new(period)),
            other => Self::Other(Box::new(MovingAverage::new(other, period)?)),
        };
        Ok((smoothing, kind))
    }

    pub(crate) fn push(&mut self, x: f64) -> Option<f64> {
        match self {
            Self::Sma(s) => s.push(x),
            Self::Other(m) => m.next(x),
        }
    }

    pub(crate) fn clear(&mut self) {
        match self {
            Self::Sma(s) => s.clear(),
            Self::Other(m) => m.reset(),
        }
    }
}

/// The fast %K of the last `fastk` highs/lows and its moving average.
#[derive(Debug, Clone)]
struct FastStoch {
    hi: RollingExtreme,
    lo: RollingExtreme,
    d_sma: Smoothing,
    matype: MovingAverageType,
}

impl FastStoch {
    fn new(fastk: usize, fastd: usize) -> Self {
        Self {
            hi: RollingExtreme::max(fastk),
            lo: RollingExtreme::min(fastk),
            d_sma: Smoothing::Sma(RunningSma::new(fastd)),
            matype: MovingAverageType::Sma,
        }
    }

    fn with_matype(fastk: usize, fastd: usize, matype: usize) -> Result<Self, CoreError> {
        let (d_sma, kind) = Smoothing::new("fastd_matype", fastd, matype)?;
        Ok(Self {
            d_sma,
            matype: kind,
            ..Self::new(fastk, fastd)
        })
    }

    fn push(&mut self, high: f64, low: f64, close: f64) -> Option<StochasticOutput> {
        let highest = self.hi.push(high);
        let lowest = self.lo.push(low);
        let (highest, lowest) = (highest?, lowest?);
        let range = highest - lowest;
        let k = if is_zero_scaled(range, highest.abs() + lowest.abs()) {
            0.0
        } else {
            ((close - lowest) / range) * 100.0
        };
        let d = self.d_sma.push(k)?;
        Some(StochasticOutput { k, d })
    }

    fn clear(&mut self) {
        self.hi.clear();
        self.lo.clear();
        self.d_sma.clear();
    }
}

fn split(outs: &[Option<StochasticOutput>]) -> StochasticSeries {
    StochasticSeries {
        k: outs.iter().map(|o| o.map(|s| s.k)).collect(),
        d: outs.iter().map(|o| o.map(|s| s.d)).collect(),
    }
}

/// Fast stochastic, as TA-Lib's `TA_STOCHF`.
///
/// # Formula
///
/// `%K = (close − LL) / (HH − LL) · 100` over the last `fastk` bars (0 when
/// the window is flat: `HH − LL` within `1e-14 · (|HH| + |LL|)`, as
/// [`StochasticOscillator`](super::StochasticOscillator)); `%D = MA_fastd(%K)`
/// with the moving average of `fastd_matype` (TA-Lib's default SMA).
///
/// # Parameters
///
/// - `fastk`: 1 ..= 10 000 (default 5).
/// - `fastd`: 1 ..= 10 000 (default 3).
/// - `fastd_matype` ([`with_matype`](Self::with_matype)): TA-Lib's number,
///   0 ..= 8 (default 0, SMA).
///
/// Warm-up: both lines start where %D does: index `fastk + fastd − 2` (6)
/// with an SMA, as TA-Lib (which does not emit %K before %D exists).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::FastStochastic;
///
/// let out = FastStochastic::new(2, 1)?.over_columns(&[2.0, 4.0], &[0.0, 1.0], &[1.0, 3.0])?;
/// assert_eq!(out.k, vec![None, Some(75.0)]);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "STOCHF")]
#[derive(Debug, Clone)]
pub struct FastStochastic {
    fastk: usize,
    fastd: usize,
    stoch: FastStoch,
    ready: bool,
}

impl FastStochastic {
    /// Default `(fastk, fastd)` (TA-Lib's).
    pub const DEFAULTS: (usize, usize) = (5, 3);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a period is 0 or above 10 000.
    pub fn new(fastk: usize, fastd: usize) -> Result<Self, CoreError> {
        let fastk = check_period("fastk", fastk, 1)?;
        let fastd = check_period("fastd", fastd, 1)?;
        Ok(Self::unchecked(fastk, fastd))
    }

    /// Builds the indicator with TA-Lib's `fastd_matype` for %D.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a period is 0 or above 10 000, or
    /// `matype` is outside 0 ..= 8.
    pub fn with_matype(fastk: usize, fastd: usize, matype: usize) -> Result<Self, CoreError> {
        let fastk = check_period("fastk", fastk, 1)?;
        let fastd = check_period("fastd", fastd, 1)?;
        Ok(Self {
            stoch: FastStoch::with_matype(fastk, fastd, matype)?,
            ..Self::unchecked(fastk, fastd)
        })
    }

    /// The moving average of %D.
    pub fn matype(&self) -> MovingAverageType {
        self.stoch.matype
    }

    fn unchecked(fastk: usize, fastd: usize) -> Self {
        Self {
            fastk,
            fastd,
            stoch: FastStoch::new(fastk, fastd),
            ready: false,
        }
    }

    /// `(fastk, fastd)`.
    pub fn periods(&self) -> (usize, usize) {
        (self.fastk, self.fastd)
    }

    /// Batch form.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<StochasticSeries, CoreError> {
        Ok(split(&run_bars(self, bars)?))
    }

    /// Column form over highs, lows and closes (`None` during warm-up).
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on empty columns, columns of different
    /// lengths or a non-finite value.
    pub fn over_columns(&self, high: &[f64], low: &[f64], close: &[f64]) -> Result<StochasticSeries, CoreError> {
        let columns = [("high", high), ("low", low), ("close", close)];
        let outs = run_columns(self, &columns, |i| Bar {
            high: high[i],
            low: low[i],
            close: close[i],
            ..crate::indicators::ZERO_BAR
        })?;
        Ok(split(&outs))
    }
}

impl Default for FastStochastic {
    fn default() -> Self {
        let (k, d) = Self::DEFAULTS;
        Self::unchecked(k, d)
    }
}

impl Indicator for FastStochastic {
    type Output = StochasticOutput;

    fn reset(&mut self) {
        self.stoch.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<&Bar> for FastStochastic {
    fn next(&mut self, bar: &Bar) -> Option<StochasticOutput> {
        let out = self.stoch.push(bar.high, bar.low, bar.close);
        self.ready = out.is_some();
        out
    }
}

/// Stochastic RSI, as TA-Lib's `TA_STOCHRSI`: the fast stochastic of the RSI.
///
/// # Formula
///
/// `RSI` as [`RelativeStrengthIndex`] over `period`; then the fast
/// stochastic of [`FastStochastic`] with the RSI as high, low and close:
/// `%K = (RSI − min RSI) / (max RSI − min RSI) · 100` over `fastk` values,
/// `%D = MA_fastd(%K)` with the moving average of `fastd_matype` (default SMA).
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
/// - `fastk`: 1 ..= 10 000 (default 5).
/// - `fastd`: 1 ..= 10 000 (default 3).
/// - `fastd_matype` ([`with_matype`](Self::with_matype)): TA-Lib's number,
///   0 ..= 8 (default 0, SMA).
///
/// Warm-up: both lines start at index `period + fastk + fastd − 2` (20) with
/// an SMA.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::StochasticRsi;
///
/// let closes: Vec<f64> = (0..40).map(|i| 100.0 + (i as f64 * 0.9).sin() * 5.0).collect();
/// let out = StochasticRsi::default().over_values(&closes)?;
/// assert!(out.k[19].is_none() && out.k[20].is_some());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "STOCHRSI")]
#[derive(Debug, Clone)]
pub struct StochasticRsi {
    fastk: usize,
    fastd: usize,
    rsi: RelativeStrengthIndex,
    stoch: FastStoch,
    ready: bool,
}

impl StochasticRsi {
    /// Default `(period, fastk, fastd)` (TA-Lib's).
    pub const DEFAULTS: (usize, usize, usize) = (14, 5, 3);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000 or a
    /// `fastk` / `fastd` outside 1 ..= 10 000.
    pub fn new(period: usize, fastk: usize, fastd: usize) -> Result<Self, CoreError> {
        Self::with_matype(period, fastk, fastd, 0)
    }

    /// Builds the indicator with TA-Lib's `fastd_matype` for %D.
    ///
    /// # Errors
    /// As [`new`](Self::new), and for a `matype` outside 0 ..= 8.
    pub fn with_matype(period: usize, fastk: usize, fastd: usize, matype: usize) -> Result<Self, CoreError> {
        let rsi = RelativeStrengthIndex::new(period)?;
        let fastk = check_period("fastk", fastk, 1)?;
        let fastd = check_period("fastd", fastd, 1)?;
        Ok(Self {
            fastk,
            fastd,
            rsi,
            stoch: FastStoch::with_matype(fastk, fastd, matype)?,
            ready: false,
        })
    }

    /// `(period, fastk, fastd)`.
    pub fn periods(&self) -> (usize, usize, usize) {
        (self.rsi.period(), self.fastk, self.fastd)
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<StochasticSeries, CoreError> {
        Ok(split(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<StochasticSeries, CoreError> {
        Ok(split(&run_values(self, values)?))
    }
}

impl Default for StochasticRsi {
    fn default() -> Self {
        let (_, k, d) = Self::DEFAULTS;
        Self {
            fastk: k,
            fastd: d,
            rsi: RelativeStrengthIndex::default(),
            stoch: FastStoch::new(k, d),
            ready: false,
        }
    }
}

impl Indicator for StochasticRsi {
    type Output = StochasticOutput;

    fn reset(&mut self) {
        self.rsi.reset();
        self.stoch.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for StochasticRsi {
    fn next(&mut self, x: f64) -> Option<StochasticOutput> {
        let out = self.rsi.next(x).and_then(|r| self.stoch.push(r, r, r));
        self.ready = out.is_some();
        out
    }
}

impl Next<&Bar> for StochasticRsi {
    fn next(&mut self, bar: &Bar) -> Option<StochasticOutput> {
        Next::<f64>::next(self, bar.close)
    }
}
