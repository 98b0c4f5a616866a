//! Statistic functions: variance, linear regression (value, slope,
//! intercept, angle, time-series forecast), correlation and beta.
//!
//! CORREL and BETA take two series. Their streaming form is
//! `Next<(f64, f64)>` and their column form `over_columns(x, y)`; fed with
//! bars (`Next<&Bar>`, `over(&[Bar])`, the catalogue) they read the high as
//! the first series and the low as the second, the defaults of TA-Lib's
//! Python abstract API (`price0 = high`, `price1 = low`).

mod correl;
mod linreg;
mod percentile;
mod var;

pub use correl::{Beta, PearsonCorrelation};
pub use linreg::{
    LinearRegression, LinearRegressionAngle, LinearRegressionIntercept, LinearRegressionOutput, LinearRegressionSlope,
    LinearRegressionValue, TimeSeriesForecast,
};
pub use percentile::{PercentRank, RollingPercentile};
pub use var::Variance;
