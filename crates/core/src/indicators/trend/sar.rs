//! Parabolic SAR.

use crate::indicators::util::check_real;
use crate::indicators::{Indicator, Next};
use crate::{Bar, CoreError};

/// Wilder's parabolic stop-and-reverse, with TA-Lib's start-up rules
/// (`TA_SAR`).
///
/// # Formula
///
/// Start-up (TA-Lib): the first bar is consumed. The initial direction is
/// short when the first-to-second bar −DM is positive (`low_0 - low_1 > 0` and
/// greater than `high_1 - high_0`), long otherwise; the initial SAR is the
/// first bar's low (long) or high (short) and the initial extreme point the
/// second bar's high (long) or low (short).
///
/// Each bar then: if price penetrates the SAR (`low <= SAR` when long,
/// `high >= SAR` when short) the position reverses, the SAR becomes the
/// extreme point (kept outside the last two bars' range) and the acceleration
/// factor restarts at `acceleration`; otherwise a new extreme raises the
/// factor by `acceleration` up to `maximum`. The SAR reported for a bar is
/// the one computed on the previous bar; the next one is
/// `SAR + af · (EP − SAR)` (one fused multiply-add, as TA-Lib 0.8), clamped to
/// stay beyond the current and previous bars' lows (long) or highs (short).
///
/// # Parameters
///
/// - `acceleration`: step and initial factor, in [0.0001, 1] (default 0.02).
/// - `maximum`: cap of the factor, in [0.0001, 1] (default 0.2); an
///   `acceleration` above it is lowered to it (TA-Lib's rule).
///
/// Warm-up: the first value is at index 1.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::ParabolicSar;
///
/// let bar = |i: i64, h: f64, l: f64| Bar { time: i, open: l, high: h, low: l, close: h, volume: 0.0 };
/// let bars = [bar(0, 10.0, 9.0), bar(1, 11.0, 10.0), bar(2, 12.0, 11.0)];
/// let sar = ParabolicSar::default().over(&bars)?;
/// assert_eq!(sar[0], None);
/// assert_eq!(sar[1], Some(9.0)); // long from the first bar's low
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "SAR")]
#[doc(alias = "PSAR")]
#[derive(Debug, Clone)]
pub struct ParabolicSar {
    acceleration: f64,
    maximum: f64,
    count: usize,
    is_long: bool,
    af: f64,
    ep: f64,
    sar: f64,
    new_high: f64,
    new_low: f64,
}

impl ParabolicSar {
    /// Default acceleration factor step.
    pub const DEFAULT_ACCELERATION: f64 = 0.02;
    /// Default maximum acceleration factor.
    pub const DEFAULT_MAXIMUM: f64 = 0.2;
    /// Smallest accepted factor.
    pub const MIN_FACTOR: f64 = 0.0001;

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a factor is not finite or not in
    /// [0.0001, 1]. An `acceleration` above `maximum` is lowered to it, as
    /// `TA_SAR` does ([`Self::factors`] reports the factors as used).
    pub fn new(acceleration: f64, maximum: f64) -> Result<Self, CoreError> {
        let acceleration = check_real("acceleration", acceleration, Self::MIN_FACTOR, 1.0)?;
        let maximum = check_real("maximum", maximum, Self::MIN_FACTOR, 1.0)?;
        Ok(Self::unchecked(acceleration.min(maximum), maximum))
    }

    fn unchecked(acceleration: f64, maximum: f64) -> Self {
        Self {
            acceleration,
            maximum,
            count: 0,
            is_long: true,
            af: acceleration,
            ep: 0.0,
            sar: 0.0,
            new_high: 0.0,
            new_low: 0.0,
        }
    }

    /// `(acceleration, maximum)`.
    pub fn factors(&self) -> (f64, f64) {
        (self.acceleration, self.maximum)
    }

    /// Whether the current position is long (meaningful once ready).
    pub fn is_long(&self) -> bool {
        self.is_long
    }
}

impl Default for ParabolicSar {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_ACCELERATION, Self::DEFAULT_MAXIMUM)
    }
}

crate::indicators::bar_based!(ParabolicSar, crate::indicators::run_bars);

impl Indicator for ParabolicSar {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.acceleration, self.maximum);
    }

    fn is_ready(&self) -> bool {
        self.count >= 2
    }
}

impl Next<&Bar> for ParabolicSar {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let idx = self.count;
        self.count += 1;
        if idx == 0 {
            self.new_high = bar.high;
            self.new_low = bar.low;
            return None;
        }
        if idx == 1 {
            let up = bar.high - self.new_high;
            let down = self.new_low - bar.low;
            let minus_dm = if down > 0.0 && up < down { down } else { 0.0 };
            self.is_long = minus_dm <= 0.0;
            if self.is_long {
                self.ep = bar.high;
                self.sar = self.new_low;
            } else {
                self.ep = bar.low;
                self.sar = self.new_high;
            }
            self.af = self.acceleration;
            // TA-Lib treats the second bar as its own previous bar.
            self.new_high = bar.high;
            self.new_low = bar.low;
        }
        let prev_low = self.new_low;
        let prev_high = self.new_high;
        self.new_low = bar.low;
        self.new_high = bar.high;
        let (new_low, new_high) = (bar.low, bar.high);
        let out;
        if self.is_long {
            if new_low <= self.sar {
                self.is_long = false;
                self.sar = self.ep.max_keep(prev_high).max_keep(new_high);
                out = self.sar;
                self.af = self.acceleration;
                self.ep = new_low;
                self.sar = self.af.mul_add(self.ep - self.sar, self.sar);
                self.sar = self.sar.max_keep(prev_high).max_keep(new_high);
            } else {
                out = self.sar;
                if new_high > self.ep {
                    self.ep = new_high;
                    self.af = (self.af + self.acceleration).min_keep(self.maximum);
                }
                self.sar = self.af.mul_add(self.ep - self.sar, self.sar);
                self.sar = self.sar.min_keep(prev_low).min_keep(new_low);
            }
        } else if new_high >= self.sar {
            self.is_long = true;
            self.sar = self.ep.min_keep(prev_low).min_keep(new_low);
            out = self.sar;
            self.af = self.acceleration;
            self.ep = new_high;
            self.sar = self.af.mul_add(self.ep - self.sar, self.sar);
            self.sar = self.sar.min_keep(prev_low).min_keep(new_low);
        } else {
            out = self.sar;
            if new_low < self.ep {
                self.ep = new_low;
                self.af = (self.af + self.acceleration).min_keep(self.maximum);
            }
            self.sar = self.af.mul_add(self.ep - self.sar, self.sar);
            self.sar = self.sar.max_keep(prev_high).max_keep(new_high);
        }
        Some(out)
    }
}

/// TA-Lib's clamps: replace only when strictly beyond (keeps the left value on ties).
trait Clamp {
    fn max_keep(self, other: f64) -> f64;
    fn min_keep(self, other: f64) -> f64;
}

impl Clamp for f64 {
    #[inline]
    fn max_keep(self, other: f64) -> f64 {
        if self < other { other } else { self }
    }

    #[inline]
    fn min_keep(self, other: f64) -> f64 {
        if self > other { other } else { self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates() {
        assert!(ParabolicSar::new(0.0, 0.2).is_err());
        // Lowered to the maximum like TA_SAR: the same values as (0.2, 0.2).
        let lowered = ParabolicSar::new(0.3, 0.2).unwrap();
        assert_eq!(lowered.factors(), (0.2, 0.2));
        assert!(ParabolicSar::new(f64::NAN, 0.2).is_err());
        assert!(ParabolicSar::new(0.02, 0.2).is_ok());
    }

    #[test]
    fn reverses_on_penetration() {
        let bar = |i: i64, h: f64, l: f64| Bar {
            time: i,
            open: l,
            high: h,
            low: l,
            close: l,
            volume: 0.0,
        };
        let bars = [
            bar(0, 10.0, 9.0),
            bar(1, 11.0, 10.0),
            bar(2, 12.0, 11.0),
            bar(3, 9.0, 8.0),
        ];
        let out = ParabolicSar::default().over(&bars).unwrap();
        assert_eq!(out[1], Some(9.0));
        // long: 9 + 0.02 * (11 - 9) = 9.04; bar 2 makes a new high: af 0.04.
        assert!((out[2].unwrap() - 9.04).abs() < 1e-12);
        // bar 3 penetrates: SAR jumps to the extreme point 12.
        assert_eq!(out[3], Some(12.0));
    }
}
