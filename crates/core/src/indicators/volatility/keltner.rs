//! Keltner channels.

use crate::indicators::trend::ExponentialMovingAverage;
use crate::indicators::util::{Window, check_period, check_real, true_range, typical};
use crate::indicators::volatility::WilderWeights;
use crate::indicators::{BandsOutput, BandsSeries, Indicator, Next, run_bars};
use crate::{Bar, CoreError};

/// Keltner channels: an EMA of the typical price with bands a multiple of
/// the average true range away. Same definition and alignment as TA-Lib
/// 0.8's `TA_KC`.
///
/// # Formula
///
/// `middle = EMA_period(typical price)`, `typical = (high + low + close) / 3`;
/// `upper = middle + multiplier · ATR_atr_period`, `lower = middle − multiplier · ATR_atr_period`.
///
/// Both averages start on the same bar, `s = max(period − 1, atr_period)`:
/// the EMA is seeded there with the SMA of the `period` typical prices ending
/// at `s`, and the ATR with the mean of the `atr_period` true ranges ending
/// at `s` (Wilder smoothing afterwards, as [`AverageTrueRange`](crate::indicators::AverageTrueRange)). With the defaults the ATR therefore
/// starts later than a stand-alone ATR(10) and the values differ from it on
/// the first bars; this is TA-Lib's choice and is kept for agreement.
///
/// (Chester Keltner's original used a 10-day SMA of the typical price and the
/// average high-low range; Linda Raschke's popular variant uses an EMA of the
/// close. Use the parameters to get close to either.)
///
/// # Parameters
///
/// - `period`: EMA period, 2 ..= 10 000 (default 20).
/// - `atr_period`: 1 ..= 10 000 (default 10).
/// - `multiplier`: finite, 0 ..= 100 (default 2).
///
/// Warm-up: the first value is at index `max(period − 1, atr_period)` (19).
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::KeltnerChannels;
///
/// let bars: Vec<Bar> = (0..30)
///     .map(|i| Bar { time: i, open: 10.0, high: 11.0, low: 9.0, close: 10.0, volume: 0.0 })
///     .collect();
/// let kc = KeltnerChannels::default().over(&bars)?;
/// assert_eq!(kc.middle[18], None);
/// assert_eq!((kc.lower[19], kc.middle[19], kc.upper[19]), (Some(6.0), Some(10.0), Some(14.0)));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "KC")]
#[doc(alias = "Keltner")]
#[derive(Debug, Clone)]
pub struct KeltnerChannels {
    period: usize,
    atr_period: usize,
    multiplier: f64,
    count: usize,
    prev_close: f64,
    typicals: Window,
    ranges: Window,
    ema: f64,
    atr: f64,
    k: f64,
    weights: WilderWeights,
}

impl KeltnerChannels {
    /// Default `(period, atr_period, multiplier)`.
    pub const DEFAULTS: (usize, usize, f64) = (20, 10, 2.0);

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] on an out-of-range period or a
    /// multiplier that is not finite or outside 0 ..= 100.
    pub fn new(period: usize, atr_period: usize, multiplier: f64) -> Result<Self, CoreError> {
        let period = check_period("period", period, 2)?;
        let atr_period = check_period("atr_period", atr_period, 1)?;
        let multiplier = check_real("multiplier", multiplier, 0.0, 100.0)?;
        Ok(Self::unchecked(period, atr_period, multiplier))
    }

    fn unchecked(period: usize, atr_period: usize, multiplier: f64) -> Self {
        Self {
            period,
            atr_period,
            multiplier,
            count: 0,
            prev_close: 0.0,
            typicals: Window::new(period),
            ranges: Window::new(atr_period),
            ema: 0.0,
            atr: 0.0,
            k: 2.0 / (period + 1) as f64,
            weights: WilderWeights::new(atr_period),
        }
    }

    /// `(period, atr_period, multiplier)`.
    pub fn params(&self) -> (usize, usize, f64) {
        (self.period, self.atr_period, self.multiplier)
    }

    fn start(&self) -> usize {
        (self.period - 1).max(self.atr_period)
    }

    /// Batch form.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over(&self, bars: &[Bar]) -> Result<BandsSeries, CoreError> {
        Ok(BandsSeries::from_outputs(&run_bars(self, bars)?))
    }
}

impl Default for KeltnerChannels {
    fn default() -> Self {
        let (p, a, m) = Self::DEFAULTS;
        Self::unchecked(p, a, m)
    }
}

impl Indicator for KeltnerChannels {
    type Output = BandsOutput;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period, self.atr_period, self.multiplier);
    }

    fn is_ready(&self) -> bool {
        self.count > self.start()
    }
}

impl Next<&Bar> for KeltnerChannels {
    fn next(&mut self, bar: &Bar) -> Option<BandsOutput> {
        let idx = self.count;
        self.count += 1;
        let tp = typical(bar);
        let tr = if idx > 0 {
            Some(true_range(bar.high, bar.low, self.prev_close))
        } else {
            None
        };
        self.prev_close = bar.close;
        let start = self.start();
        if idx > start {
            self.ema = ExponentialMovingAverage::step(self.ema, tp, self.k);
            self.atr = self.weights.step(self.atr, tr.unwrap_or(0.0));
        } else {
            self.typicals.push(tp);
            if let Some(tr) = tr {
                self.ranges.push(tr);
            }
            if idx < start {
                return None;
            }
            self.ema = self.typicals.iter().sum::<f64>() / self.period as f64;
            self.atr = self.ranges.iter().sum::<f64>() / self.atr_period as f64;
        }
        let band = self.multiplier * self.atr;
        Some(BandsOutput {
            upper: self.ema + band,
            middle: self.ema,
            lower: self.ema - band,
        })
    }
}
