//! Linear regression over a period: value, slope, intercept, angle and
//! time-series forecast (TA-Lib's LINEARREG family).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::CoreError;
use crate::indicators::util::{Window, check_period};
use crate::indicators::{Indicator, Next, close_based};

/// One least-squares fit of the last `period` values against their bar
/// index, in every form TA-Lib offers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinearRegressionOutput {
    /// `LINEARREG`: the fitted value at the newest bar, `b + m · (period − 1)`.
    pub value: f64,
    /// `LINEARREG_SLOPE`: `m`, per bar.
    pub slope: f64,
    /// `LINEARREG_INTERCEPT`: `b`, the fitted value at the oldest bar.
    pub intercept: f64,
    /// `LINEARREG_ANGLE`: `atan(m)` in degrees.
    pub angle: f64,
    /// `TSF`: the fit extended one bar ahead, `b + m · period`.
    pub forecast: f64,
}

/// Linear regression of the last `period` values, as TA-Lib's
/// `TA_LINEARREG`, `TA_LINEARREG_SLOPE`, `TA_LINEARREG_INTERCEPT`,
/// `TA_LINEARREG_ANGLE` and `TA_TSF` (one pass gives all five).
///
/// # Formula
///
/// With the window's values weighted by how many bars ago they are
/// (`k = period − 1` for the oldest, 0 for the newest): `ΣY`, `ΣkY`,
/// `ΣX = n(n−1)/2`, `ΣX² = n(n−1)(2n−1)/6` (whole), `D = ΣX·ΣX − n·ΣX²`;
/// `m = (n·ΣkY − ΣX·ΣY) / D`,
/// `b = (ΣY − m·ΣX) / n`.
///
/// Evaluation, as TA-Lib 0.8 (bit for bit): the first window's sums are
/// taken oldest first; each later bar moves them in O(1),
/// `ΣkY += ΣY − n·x_{t−n}` then `ΣY += x_t − x_{t−n}`, and every
/// `32 · period` bars the sums are taken afresh from the window.
///
/// # Parameters
///
/// - `period`: 2 ..= 10 000 (default 14).
///
/// Warm-up: the first value is at index `period − 1`.
///
/// # Example
///
/// ```
/// use tradeterm_core::indicators::{LinearRegression, Next};
///
/// let mut lr = LinearRegression::new(3)?;
/// lr.next(1.0);
/// lr.next(3.0);
/// let fit = lr.next(5.0).unwrap();
/// assert_eq!((fit.slope, fit.intercept, fit.value, fit.forecast), (2.0, 1.0, 5.0, 7.0));
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
#[doc(alias = "LINEARREG")]
#[doc(alias = "LINEARREG_SLOPE")]
#[doc(alias = "LINEARREG_INTERCEPT")]
#[doc(alias = "LINEARREG_ANGLE")]
#[doc(alias = "TSF")]
#[derive(Debug, Clone)]
pub struct LinearRegression {
    period: usize,
    sum_x: f64,
    divisor: f64,
    /// The last `period + 1` inputs, the current one included.
    window: Window,
    sum_y: f64,
    sum_xy: f64,
    since_fresh: usize,
    ready: bool,
}

impl LinearRegression {
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
        let n = period as f64;
        let sum_x = n * (n - 1.0) * 0.5;
        // Whole, as TA-Lib's integer expression.
        let sum_x_sqr = (period * (period - 1) * (2 * period - 1) / 6) as f64;
        Self {
            period,
            sum_x,
            divisor: sum_x * sum_x - n * sum_x_sqr,
            window: Window::new(period + 1),
            sum_y: 0.0,
            sum_xy: 0.0,
            since_fresh: 0,
            ready: false,
        }
    }

    /// The period.
    pub fn period(&self) -> usize {
        self.period
    }

    /// The sums over the newest `period` values, taken afresh (oldest first).
    fn fresh(&mut self) {
        let p = self.period;
        let skip = self.window.len() - p;
        let (mut sum_y, mut sum_xy) = (0.0, 0.0);
        for (j, v) in self.window.iter().skip(skip).enumerate() {
            sum_y += v;
            sum_xy += (p - 1 - j) as f64 * v;
        }
        (self.sum_y, self.sum_xy) = (sum_y, sum_xy);
        self.since_fresh = 0;
    }

    /// Batch form over the closes of `bars`: every fit (all five outputs), `None` during warm-up.
    ///
    /// # Errors
    /// [`CoreError::InvalidInput`] on an empty series or a non-finite value.
    pub fn over_fits(&self, bars: &[crate::Bar]) -> Result<Vec<Option<LinearRegressionOutput>>, CoreError> {
        crate::indicators::run_bars(self, bars)
    }
}

impl Default for LinearRegression {
    fn default() -> Self {
        Self::unchecked(Self::DEFAULT_PERIOD)
    }
}

impl Indicator for LinearRegression {
    type Output = LinearRegressionOutput;

    fn reset(&mut self) {
        *self = Self::unchecked(self.period);
    }

    fn is_ready(&self) -> bool {
        self.ready
    }
}

impl Next<f64> for LinearRegression {
    fn next(&mut self, x: f64) -> Option<LinearRegressionOutput> {
        let p = self.period;
        let seen = self.window.len();
        self.window.push(x);
        if seen + 1 < p {
            return None;
        }
        if seen + 1 == p {
            self.fresh();
        } else {
            self.since_fresh += 1;
            if self.since_fresh == 32 * p {
                self.fresh();
            } else {
                let leaving = self.window.oldest().unwrap_or(x);
                self.sum_xy = self.sum_xy + self.sum_y - p as f64 * leaving;
                self.sum_y = self.sum_y - leaving + x;
            }
        }
        self.ready = true;
        let n = p as f64;
        let m = (n * self.sum_xy - self.sum_x * self.sum_y) / self.divisor;
        let b = (self.sum_y - m * self.sum_x) / n;
        Some(LinearRegressionOutput {
            value: b + m * (n - 1.0),
            slope: m,
            intercept: b,
            angle: m.atan() * (180.0 / std::f64::consts::PI),
            forecast: b + m * n,
        })
    }
}

impl Next<&crate::Bar> for LinearRegression {
    fn next(&mut self, bar: &crate::Bar) -> Option<LinearRegressionOutput> {
        Next::<f64>::next(self, bar.close)
    }
}

/// The single-output views of [`LinearRegression`], one per TA-Lib function.
macro_rules! view {
    ($(#[$doc:meta])* $ty:ident, $alias:literal, $field:ident) => {
        $(#[$doc])*
        #[doc(alias = $alias)]
        #[derive(Debug, Clone, Default)]
        pub struct $ty {
            fit: LinearRegression,
        }

        impl $ty {
            /// Default period (TA-Lib's).
            pub const DEFAULT_PERIOD: usize = 14;

            /// Builds the indicator.
            ///
            /// # Errors
            /// [`CoreError::InvalidParameter`] on a period outside 2 ..= 10 000.
            pub fn new(period: usize) -> Result<Self, CoreError> {
                Ok(Self {
                    fit: LinearRegression::new(period)?,
                })
            }

            /// The period.
            pub fn period(&self) -> usize {
                self.fit.period()
            }
        }

        impl Indicator for $ty {
            type Output = f64;

            fn reset(&mut self) {
                self.fit.reset();
            }

            fn is_ready(&self) -> bool {
                self.fit.is_ready()
            }
        }

        impl Next<f64> for $ty {
            fn next(&mut self, x: f64) -> Option<f64> {
                self.fit.next(x).map(|f| f.$field)
            }
        }

        close_based!($ty);
    };
}

view!(
    /// Linear regression value at the newest bar, as TA-Lib's `TA_LINEARREG`
    /// (see [`LinearRegression`] for the formula). Period 2 ..= 10 000
    /// (default 14); first value at index `period − 1`.
    ///
    /// ```
    /// use tradeterm_core::indicators::LinearRegressionValue;
    /// let out = LinearRegressionValue::new(2)?.over_values(&[1.0, 3.0])?;
    /// assert_eq!(out, vec![None, Some(3.0)]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    LinearRegressionValue, "LINEARREG", value
);
view!(
    /// Linear regression slope, as TA-Lib's `TA_LINEARREG_SLOPE` (see
    /// [`LinearRegression`]). Period 2 ..= 10 000 (default 14); first value at
    /// index `period − 1`.
    ///
    /// ```
    /// use tradeterm_core::indicators::LinearRegressionSlope;
    /// let out = LinearRegressionSlope::new(2)?.over_values(&[1.0, 3.0])?;
    /// assert_eq!(out, vec![None, Some(2.0)]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    LinearRegressionSlope, "LINEARREG_SLOPE", slope
);
view!(
    /// Linear regression intercept (the fit at the oldest bar of the window),
    /// as TA-Lib's `TA_LINEARREG_INTERCEPT` (see [`LinearRegression`]). Period
    /// 2 ..= 10 000 (default 14); first value at index `period − 1`.
    ///
    /// ```
    /// use tradeterm_core::indicators::LinearRegressionIntercept;
    /// let out = LinearRegressionIntercept::new(2)?.over_values(&[1.0, 3.0])?;
    /// assert_eq!(out, vec![None, Some(1.0)]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    LinearRegressionIntercept, "LINEARREG_INTERCEPT", intercept
);
view!(
    /// Linear regression angle, `atan(slope)` in degrees, as TA-Lib's
    /// `TA_LINEARREG_ANGLE` (see [`LinearRegression`]). Period 2 ..= 10 000
    /// (default 14); first value at index `period − 1`.
    ///
    /// ```
    /// use tradeterm_core::indicators::LinearRegressionAngle;
    /// let out = LinearRegressionAngle::new(2)?.over_values(&[1.0, 2.0])?;
    /// assert!((out[1].unwrap() - 45.0).abs() < 1e-12);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    LinearRegressionAngle, "LINEARREG_ANGLE", angle
);
view!(
    /// Time-series forecast, the regression line one bar ahead, as TA-Lib's
    /// `TA_TSF` (see [`LinearRegression`]). Period 2 ..= 10 000 (default 14);
    /// first value at index `period − 1`.
    ///
    /// ```
    /// use tradeterm_core::indicators::TimeSeriesForecast;
    /// let out = TimeSeriesForecast::new(2)?.over_values(&[1.0, 3.0])?;
    /// assert_eq!(out, vec![None, Some(5.0)]);
    /// # Ok::<(), tradeterm_core::CoreError>(())
    /// ```
    TimeSeriesForecast, "TSF", forecast
);
