//! Weighted moving average.

use crate::CoreError;
use crate::indicators::util::{ExactWma, Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// Linearly weighted moving average: the newest value weighs `period`, the
/// oldest weighs 1.
///
/// # Formula
///
/// `WMA_t = Σ_{i=0}^{period-1} (period - i) · x_{t-i} / (period · (period + 1) / 2)`.
///
/// Exact ties stay ties: when the window's values are decimals of at most 9
/// places (prices as written), the weighted sum is kept exactly in integers
/// and the result is the double nearest to the exact average, so two
/// mathematically equal averages are the same bits. (The SMA instead follows
/// pandas' rolling mean bit for bit, as backtesting.py does; no common
/// reference fixes the WMA's last bit, so the exact average is kept.) Otherwise (more decimals, or sums past 2^53)
/// it is TA-Lib's: two running sums (`periodSum`, `periodSub`) updated in
/// TA-Lib's order and rebuilt from the window every `8 · period` bars, as
/// TA-Lib 0.8 does, so rounding residue does not build up on long series.
///
/// # Parameters
///
/// - `period`: 1 ..= 10 000 (default 30, TA-Lib's). Period 1 returns the input.
///
/// Warm-up: the first value is at index `period - 1` (`TA_WMA`).
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{Next, WeightedMovingAverage};
///
/// let mut wma = WeightedMovingAverage::new(2)?;
/// assert_eq!(wma.next(3.0), None);
/// assert_eq!(wma.next(6.0), Some(5.0)); // (1·3 + 2·6) / 3
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "WMA")]
#[derive(Debug, Clone)]
pub struct WeightedMovingAverage {
    period: usize,
    window: Window,
    count: usize,
    period_sum: f64,
    period_sub: f64,
    trailing: f64,
    since_reseed: usize,
    exact: ExactWma,
}

impl WeightedMovingAverage {
    /// Default period (TA-Lib's).
    pub const DEFAULT_PERIOD: usize = 30;

    /// Builds a WMA over `period` values.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when `period` is 0 or above 10 000.
    pub fn new(period: usize) -> Result<Self, CoreError> {
        let period = check_period("period", period, 1)?;
        Ok(Self::build(period))
    }

    fn build(period: usize) -> Self {
        Self {
            period,
            window: Window::new(period),
            count: 0,
            period_sum: 0.0,
            period_sub: 0.0,
            trailing: 0.0,
            since_reseed: 8 * period,
            exact: ExactWma::new(period),
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }
}

impl Default for WeightedMovingAverage {
    fn default() -> Self {
        Self::build(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for WeightedMovingAverage {
    type Output = f64;

    fn reset(&mut self) {
        self.window.clear();
        self.count = 0;
        self.period_sum = 0.0;
        self.period_sub = 0.0;
        self.trailing = 0.0;
        self.since_reseed = 8 * self.period;
        self.exact = ExactWma::new(self.period);
    }

    fn is_ready(&self) -> bool {
        self.count >= self.period
    }
}

impl Next<f64> for WeightedMovingAverage {
    fn next(&mut self, x: f64) -> Option<f64> {
        self.count += 1;
        if self.period == 1 {
            return Some(x);
        }
        self.window.push(x);
        let exact = self.exact.push(x);
        if self.count < self.period {
            self.period_sub += x;
            self.period_sum += x * self.count as f64;
            return None;
        }
        let n = self.period as f64;
        self.period_sub += x;
        self.period_sub -= self.trailing;
        self.period_sum += x * n;
        // TA-Lib 0.8 rebuilds both sums from the window every 8·period bars so
        // rounding residue cannot accumulate over long series.
        self.since_reseed -= 1;
        if self.since_reseed == 0 {
            self.since_reseed = 8 * self.period;
            let (mut sub, mut sum) = (0.0, 0.0);
            for (w, v) in self.window.iter().enumerate() {
                sub += v;
                sum += v * (w + 1) as f64;
            }
            self.period_sub = sub;
            self.period_sum = sum;
        }
        self.trailing = self.window.oldest().unwrap_or(0.0);
        let divider = (self.period * (self.period + 1) / 2) as f64;
        let out = self.period_sum / divider;
        self.period_sum -= self.period_sub;
        Some(exact.unwrap_or(out))
    }
}

close_based!(WeightedMovingAverage);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_linearly() {
        let wma = WeightedMovingAverage::new(3).unwrap();
        let out = wma.over_values(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(out[..2], [None, None]);
        assert!((out[2].unwrap() - 14.0 / 6.0).abs() < 1e-12);
        assert!((out[3].unwrap() - 20.0 / 6.0).abs() < 1e-12);
        // Exact ties: WMA(2) and WMA(4) compare as their exact decimal averages
        // (a tie on bar 4: 10 · (1.0 + 2 · 1.00003) = 3 · (1.00002 + 2 · 1.00003 + 3 · 1.0 + 4 · 1.00003)).
        let xs = [1.00004, 1.00002, 1.00003, 1.0, 1.00003, 1.00001];
        let w2 = WeightedMovingAverage::new(2).unwrap().over_values(&xs).unwrap();
        let w4 = WeightedMovingAverage::new(4).unwrap().over_values(&xs).unwrap();
        for i in 3..xs.len() {
            let m: Vec<i64> = xs.iter().map(|x| (x * 1e5).round() as i64).collect();
            let e2 = (m[i - 1] + 2 * m[i]) * 10;
            let e4 = (m[i - 3] + 2 * m[i - 2] + 3 * m[i - 1] + 4 * m[i]) * 3;
            assert_eq!(w2[i] == w4[i], e2 == e4, "bar {i}");
            assert_eq!(
                w2[i].unwrap().partial_cmp(&w4[i].unwrap()),
                Some(e2.cmp(&e4)),
                "bar {i}"
            );
        }
        assert_eq!(w2[4], w4[4]);
        let one = WeightedMovingAverage::new(1).unwrap();
        assert_eq!(one.over_values(&[7.0, 8.0]).unwrap(), vec![Some(7.0), Some(8.0)]);
    }
}
