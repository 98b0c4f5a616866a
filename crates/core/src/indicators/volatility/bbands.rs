//! Bollinger Bands.

use crate::indicators::trend::{AnyMovingAverage, MovingAverageType};
use crate::indicators::util::{PandasSma, RollingVariance, check_period, check_real};
use crate::indicators::{BandsOutput, BandsSeries, Indicator, Next, run_bars, run_values};
use crate::{Bar, CoreError};

/// Bollinger Bands: a moving average (simple by default) with bands a
/// multiple of the population standard deviation away, as TA-Lib's
/// `TA_BBANDS`.
///
/// # Formula
///
/// `middle = SMA(period)` (the same bits as
/// [`SimpleMovingAverage`](crate::indicators::SimpleMovingAverage): pandas'
/// rolling mean), `σ` = population standard deviation of the same
/// window ([`StandardDeviation`](crate::indicators::StandardDeviation)'s
/// computation), `upper = middle + nbdev_up · σ`, `lower = middle − nbdev_dn · σ`.
/// With another `matype` ([`with_matype`](Self::with_matype)) the middle line
/// is that moving average ([`AnyMovingAverage`]) and σ the standard
/// deviation of the last `period` values around their own mean, as TA-Lib.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 20, TA-Lib 0.8's).
/// - `nbdev_up`, `nbdev_dn`: finite, 0 ..= 100 (default 2 each).
/// - `matype`: TA-Lib's moving-average number, 0 ..= 8 (default 0, SMA).
///
/// Warm-up: the first value is at index `max(period − 1, lookback of the
/// moving average)` (`period − 1` with an SMA).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{BollingerBands, Next};
///
/// let mut bb = BollingerBands::new(2, 2.0, 2.0)?;
/// assert!(bb.next(1.0).is_none());
/// let b = bb.next(3.0).unwrap();
/// assert_eq!((b.lower, b.middle, b.upper), (0.0, 2.0, 4.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "BBANDS")]
#[doc(alias = "Bollinger")]
#[derive(Debug, Clone)]
pub struct BollingerBands {
    period: usize,
    nbdev_up: f64,
    nbdev_dn: f64,
    matype: MovingAverageType,
    sma: PandasSma,
    /// The middle line when `matype` is not SMA.
    other: Option<AnyMovingAverage>,
    var: RollingVariance,
    ready: bool,
}

impl BollingerBands {
    /// Default period.
    pub const DEFAULT_PERIOD: usize = 20;
    /// Default band multiplier.
    pub const DEFAULT_NBDEV: f64 = 2.0;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000 or a
    /// multiplier that is not finite or outside 0 ..= 100.
    pub fn new(period: usize, nbdev_up: f64, nbdev_dn: f64) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        let nbdev_up = check_real("nbdev_up", nbdev_up, 0.0, 100.0)?;
        let nbdev_dn = check_real("nbdev_dn", nbdev_dn, 0.0, 100.0)?;
        Ok(Self::unchecked(period, nbdev_up, nbdev_dn))
    }

    /// [`Self::new`] with TA-Lib's `matype` of the middle line
    /// ([`MovingAverageType::from_talib`]).
    ///
    /// # Errors
    /// As [`Self::new`], and a `matype` outside 0 ..= 8.
    pub fn with_matype(period: usize, nbdev_up: f64, nbdev_dn: f64, matype: usize) -> Result<Self, CoreError> {
        let kind = MovingAverageType::from_talib("matype", matype)?;
        let mut bb = Self::new(period, nbdev_up, nbdev_dn)?;
        if kind != MovingAverageType::Sma {
            bb.other = Some(AnyMovingAverage::of_type(bb.period, kind)?);
        }
        bb.matype = kind;
        Ok(bb)
    }

    /// The moving-average type of the middle line.
    pub fn matype(&self) -> MovingAverageType {
        self.matype
    }

    fn unchecked(period: usize, nbdev_up: f64, nbdev_dn: f64) -> Self {
        Self {
            period,
            nbdev_up,
            nbdev_dn,
            matype: MovingAverageType::Sma,
            sma: PandasSma::new(period),
            other: None,
            var: RollingVariance::new(period),
            ready: false,
        }
    }

    /// `(period, nbdev_up, nbdev_dn)`.
    pub fn params(&self) -> (usize, f64, f64) {
        (self.period, self.nbdev_up, self.nbdev_dn)
    }

    /// Batch form over the closes of `bars`.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<BandsSeries, CoreError> {
        Ok(BandsSeries::from_outputs(&run_bars(self, bars)?))
    }

    /// Batch form over any series of values.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_values(&self, values: &[f64]) -> Result<BandsSeries, CoreError> {
        Ok(BandsSeries::from_outputs(&run_values(self, values)?))
    }
}

impl Default for BollingerBands {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD, Self::DEFAULT_NBDEV, Self::DEFAULT_NBDEV)
    }
}

impl Indicator for BollingerBands {
    type Output = BandsOutput;

    fn reset(&mut self) {
        self.sma.clear();
        if let Some(ma) = &mut self.other {
            ma.reset();
        }
        self.var.clear();
        self.ready = false;
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for BollingerBands {
    fn next(&mut self, x: f64) -> Option<BandsOutput> {
        let middle = match &mut self.other {
            None => self.sma.push(x),
            Some(ma) => ma.next(x),
        };
        let var = self.var.push(x);
        let (middle, var) = (middle?, var?);
        self.ready = true;
        let sd = if var != 0.0 { var.sqrt() } else { 0.0 };
        // TA-Lib 0.8's two branches (the second with fused multiply-adds).
        let (upper, lower) = if self.nbdev_up == self.nbdev_dn {
            let w = sd * self.nbdev_up;
            (middle + w, middle - w)
        } else {
            (sd.mul_add(self.nbdev_up, middle), (-sd).mul_add(self.nbdev_dn, middle))
        };
        Some(BandsOutput { upper, middle, lower })
    }
}

impl Next<&Bar> for BollingerBands {
    fn next(&mut self, bar: &Bar) -> Option<BandsOutput> {
        Next::<f64>::next(self, bar.close)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_are_symmetric() {
        let bb = BollingerBands::new(3, 1.0, 1.0).unwrap();
        let out = bb.over_values(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(out.middle[3], Some(3.0));
        let sd = (2.0f64 / 3.0).sqrt();
        assert!((out.upper[3].unwrap() - (3.0 + sd)).abs() < 1e-12);
        assert!((out.lower[3].unwrap() - (3.0 - sd)).abs() < 1e-12);
        assert!(BollingerBands::new(20, -1.0, 2.0).is_err());
        assert!(BollingerBands::with_matype(20, 2.0, 2.0, 9).is_err());
        let ema = BollingerBands::with_matype(3, 1.0, 1.0, 1).unwrap();
        let out = ema.over_values(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        // EMA(3) seeded with the SMA 2, then 2 + 0.5 · (4 − 2).
        assert_eq!(out.middle[3], Some(3.0));
        assert!((out.upper[3].unwrap() - (3.0 + sd)).abs() < 1e-12);
    }
}
