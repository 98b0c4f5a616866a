//! Parabolic SAR, extended (TA-Lib's `SAREXT`).

use crate::indicators::util::check_real;
use crate::indicators::{Indicator, Next};
use crate::{Bar, CoreError};

/// Largest magnitude TA-Lib accepts for a `SAREXT` parameter.
const REAL_MAX: f64 = 3.0e37;
/// Largest magnitude of `start_value` (a price; TA-Lib's bound is 3·10³⁷).
const START_MAX: f64 = 1.0e12;

/// Parabolic SAR with a start value, an offset on reversal and separate
/// acceleration factors for long and short positions, as TA-Lib's
/// `TA_SAREXT`. Short positions are reported as negative values (TA-Lib's
/// convention: `|value|` is the SAR, the sign the direction).
///
/// # Formula
///
/// As [`ParabolicSar`](super::ParabolicSar), except:
/// - `start_value` 0 picks the first direction from the first two bars (as
///   SAR), a positive value starts long with that SAR, a negative value
///   starts short with SAR `|start_value|`;
/// - on a reversal to short the SAR is raised by `offset_on_reverse · SAR`,
///   on a reversal to long lowered by it;
/// - the factor starts at `acceleration_init_long` (`_short`), grows by
///   `acceleration_long` (`_short`) on each new extreme up to
///   `acceleration_max_long` (`_short`).
///
/// # Parameters
///
/// - `start_value`: within ±10¹² (default 0, automatic).
/// - `offset_on_reverse`: 0 ..= 3·10³⁷ (default 0).
/// - `acceleration_init_long`, `acceleration_long`, `acceleration_init_short`,
///   `acceleration_short`: 0 ..= 3·10³⁷ (default 0.02); `acceleration_max_long`,
///   `acceleration_max_short`: 0 ..= 3·10³⁷ (default 0.2). TA-Lib's
///   correction applies: an initial factor or step above its maximum is
///   lowered to it ([`Self::factors`]
///   reports them as used). A factor of 0 is 0 (TA-Lib's C core; some
///   ports read it as the default).
///
/// Warm-up: the first value is at index 1.
///
/// # Example
///
/// ```
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::ParabolicSarExtended;
///
/// let bar = |i: i64, h: f64, l: f64| Bar { time: i, open: l, high: h, low: l, close: h, volume: 0.0 };
/// let bars = [bar(0, 10.0, 9.0), bar(1, 11.0, 10.0), bar(2, 12.0, 11.0)];
/// let sar = ParabolicSarExtended::default().over(&bars)?;
/// assert_eq!(sar[1], Some(9.0)); // long from the first bar's low
/// let short = ParabolicSarExtended::new(-13.0, 0.0, 0.02, 0.02, 0.2, 0.02, 0.02, 0.2)?.over(&bars)?;
/// assert_eq!(short[1], Some(-13.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "SAREXT")]
#[derive(Debug, Clone)]
pub struct ParabolicSarExtended {
    start_value: f64,
    offset: f64,
    /// `[init, step, max]` for long positions.
    long: [f64; 3],
    /// `[init, step, max]` for short positions.
    short: [f64; 3],
    count: usize,
    is_long: bool,
    af_long: f64,
    af_short: f64,
    ep: f64,
    sar: f64,
    new_high: f64,
    new_low: f64,
}

impl ParabolicSarExtended {
    /// TA-Lib's defaults: `(start_value, offset_on_reverse, init_long,
    /// long, max_long, init_short, short, max_short)`.
    pub const DEFAULTS: [f64; 8] = [0.0, 0.0, 0.02, 0.02, 0.2, 0.02, 0.02, 0.2];

    /// Builds the indicator.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] when a parameter is not finite or out
    /// of range.
    #[allow(clippy::too_many_arguments, reason = "TA-Lib's eight parameters, in TA-Lib's order")]
    pub fn new(
        start_value: f64,
        offset_on_reverse: f64,
        acceleration_init_long: f64,
        acceleration_long: f64,
        acceleration_max_long: f64,
        acceleration_init_short: f64,
        acceleration_short: f64,
        acceleration_max_short: f64,
    ) -> Result<Self, CoreError> {
        let start_value = check_real("start_value", start_value, -START_MAX, START_MAX)?;
        let offset = check_real("offset_on_reverse", offset_on_reverse, 0.0, REAL_MAX)?;
        let factor = |name: &str, v: f64| check_real(name, v, 0.0, REAL_MAX);
        let mut long = [
            factor("acceleration_init_long", acceleration_init_long)?,
            factor("acceleration_long", acceleration_long)?,
            factor("acceleration_max_long", acceleration_max_long)?,
        ];
        let mut short = [
            factor("acceleration_init_short", acceleration_init_short)?,
            factor("acceleration_short", acceleration_short)?,
            factor("acceleration_max_short", acceleration_max_short)?,
        ];
        // TA-Lib's corrections: neither the initial factor nor the step above the maximum.
        for f in [&mut long, &mut short] {
            f[0] = f[0].min(f[2]);
            f[1] = f[1].min(f[2]);
        }
        Ok(Self::unchecked(start_value, offset, long, short))
    }

    fn unchecked(start_value: f64, offset: f64, long: [f64; 3], short: [f64; 3]) -> Self {
        Self {
            start_value,
            offset,
            long,
            short,
            count: 0,
            is_long: true,
            af_long: long[0],
            af_short: short[0],
            ep: 0.0,
            sar: 0.0,
            new_high: 0.0,
            new_low: 0.0,
        }
    }

    /// `(start_value, offset_on_reverse, [init, step, max] long, [init, step, max] short)` as used.
    pub fn factors(&self) -> (f64, f64, [f64; 3], [f64; 3]) {
        (self.start_value, self.offset, self.long, self.short)
    }

    /// Whether the current position is long (meaningful once ready).
    pub fn is_long(&self) -> bool {
        self.is_long
    }
}

impl Default for ParabolicSarExtended {
    fn default() -> Self {
        Self::unchecked(0.0, 0.0, [0.02, 0.02, 0.2], [0.02, 0.02, 0.2])
    }
}

crate::indicators::bar_based!(ParabolicSarExtended, crate::indicators::run_bars);

impl Indicator for ParabolicSarExtended {
    type Output = f64;

    fn reset(&mut self) {
        *self = Self::unchecked(self.start_value, self.offset, self.long, self.short);
    }

    fn is_ready(&self) -> bool {
        self.count >= 2
    }
}

/// TA-Lib's clamps: replace only when strictly beyond (keeps the left value on ties).
#[inline]
fn at_least(x: f64, floor: f64) -> f64 {
    if x < floor { floor } else { x }
}

#[inline]
fn at_most(x: f64, ceil: f64) -> f64 {
    if x > ceil { ceil } else { x }
}

impl Next<&Bar> for ParabolicSarExtended {
    fn next(&mut self, bar: &Bar) -> Option<f64> {
        let idx = self.count;
        self.count += 1;
        if idx == 0 {
            self.new_high = bar.high;
            self.new_low = bar.low;
            return None;
        }
        if idx == 1 {
            if self.start_value == 0.0 {
                let up = bar.high - self.new_high;
                let down = self.new_low - bar.low;
                let minus_dm = if down > 0.0 && up < down { down } else { 0.0 };
                self.is_long = minus_dm <= 0.0;
                self.sar = if self.is_long { self.new_low } else { self.new_high };
            } else {
                self.is_long = self.start_value > 0.0;
                self.sar = self.start_value.abs();
            }
            self.ep = if self.is_long { bar.high } else { bar.low };
            // TA-Lib treats the second bar as its own previous bar.
            self.new_high = bar.high;
            self.new_low = bar.low;
        }
        let (prev_low, prev_high) = (self.new_low, self.new_high);
        let (new_low, new_high) = (bar.low, bar.high);
        self.new_low = new_low;
        self.new_high = new_high;
        let out;
        if self.is_long {
            if new_low <= self.sar {
                self.is_long = false;
                self.sar = at_least(at_least(self.ep, prev_high), new_high);
                if self.offset != 0.0 {
                    self.sar += self.sar * self.offset;
                }
                out = -self.sar;
                self.af_short = self.short[0];
                self.ep = new_low;
                self.sar = self.af_short.mul_add(self.ep - self.sar, self.sar);
                self.sar = at_least(at_least(self.sar, prev_high), new_high);
            } else {
                out = self.sar;
                if new_high > self.ep {
                    self.ep = new_high;
                    self.af_long = at_most(self.af_long + self.long[1], self.long[2]);
                }
                self.sar = self.af_long.mul_add(self.ep - self.sar, self.sar);
                self.sar = at_most(at_most(self.sar, prev_low), new_low);
            }
        } else if new_high >= self.sar {
            self.is_long = true;
            self.sar = at_most(at_most(self.ep, prev_low), new_low);
            if self.offset != 0.0 {
                self.sar -= self.sar * self.offset;
            }
            out = self.sar;
            self.af_long = self.long[0];
            self.ep = new_high;
            self.sar = self.af_long.mul_add(self.ep - self.sar, self.sar);
            self.sar = at_most(at_most(self.sar, prev_low), new_low);
        } else {
            out = -self.sar;
            if new_low < self.ep {
                self.ep = new_low;
                self.af_short = at_most(self.af_short + self.short[1], self.short[2]);
            }
            self.sar = self.af_short.mul_add(self.ep - self.sar, self.sar);
            self.sar = at_least(at_least(self.sar, prev_high), new_high);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_and_errors() {
        let s = ParabolicSarExtended::new(0.0, 0.0, 0.0, 0.5, 0.3, 0.4, 0.0, 0.1).unwrap();
        assert_eq!(s.factors().2, [0.0, 0.3, 0.3]);
        assert_eq!(s.factors().3, [0.1, 0.0, 0.1]);
        assert!(ParabolicSarExtended::new(0.0, -0.1, 0.02, 0.02, 0.2, 0.02, 0.02, 0.2).is_err());
        assert!(ParabolicSarExtended::new(f64::NAN, 0.0, 0.02, 0.02, 0.2, 0.02, 0.02, 0.2).is_err());
    }
}
