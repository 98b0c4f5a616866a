//! The probabilistic and the deflated Sharpe ratio (Bailey and López de
//! Prado).
//!
//! # Formula
//!
//! With `SR` the selected strategy's per-period (not annualised) Sharpe ratio
//! over `T` returns, `γ₃` their skewness and `γ₄` their (non-excess) kurtosis,
//! the **probabilistic Sharpe ratio** against a benchmark `SR*` is
//!
//! ```text
//! PSR(SR*) = Φ( (SR − SR*)·√(T − 1) / √(1 − γ₃·SR + (γ₄ − 1)/4·SR²) )
//! ```
//!
//! the probability that the true Sharpe ratio exceeds `SR*`. After `N`
//! independent trials whose Sharpe ratios have variance `V`, the expected
//! maximum Sharpe ratio under the null hypothesis (all true Sharpe ratios
//! zero) is
//!
//! ```text
//! E[max SR] = √V · ( (1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e)) )
//! ```
//!
//! with `γ ≈ 0.5772` the Euler–Mascheroni constant, and the **deflated Sharpe
//! ratio** is `DSR = PSR(E[max SR])`: the probability that the selected
//! strategy's Sharpe ratio is not just the best of `N` lucky draws.
//!
//! # Conventions
//!
//! * `SR = mean / s` with `s` the sample standard deviation (divisor `T − 1`);
//! * skewness and kurtosis are the population (biased) moment ratios
//!   `m₃/m₂^1.5` and `m₄/m₂²` (scipy's `skew` and `kurtosis(fisher=False)`
//!   defaults; a normal distribution has `γ₄ = 3`);
//! * `V` is the variance of the `N` trials' per-period Sharpe ratios, on the
//!   same scale as `SR` (the sample variance, divisor `N − 1`, is the usual
//!   choice: [`sharpe_variance`]).
//!
//! # Reference
//!
//! D. H. Bailey and M. López de Prado, "The Deflated Sharpe Ratio: Correcting
//! for Selection Bias, Backtest Overfitting and Non-Normality", *Journal of
//! Portfolio Management* 40(5), 2014, pp. 94–107 (equations 2 and 4; the
//! probabilistic Sharpe ratio is from their 2012 "The Sharpe Ratio Efficient
//! Frontier", *Journal of Risk* 15(2)).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::research::deflated_sharpe::{deflated_sharpe_ratio, SharpeStats};
//!
//! // 1 000 daily returns with SR 0.1, slightly negatively skewed and fat-tailed,
//! // the best of 100 trials whose Sharpe ratios have variance 0.002.
//! let stats = SharpeStats { sharpe: 0.1, skewness: -0.5, kurtosis: 5.0, observations: 1000 };
//! let dsr = deflated_sharpe_ratio(&stats, 100, 0.002)?;
//! assert!((dsr.expected_max_sharpe - 0.1132).abs() < 1e-4);
//! assert!(dsr.deflated_sharpe < 0.5); // not better than the best of 100 lucky trials
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::normal;
use crate::CoreError;

/// The Euler–Mascheroni constant `γ`.
pub const EULER_MASCHERONI: f64 = 0.577_215_664_901_532_9;

/// The sample statistics of a return series that the probabilistic Sharpe
/// ratio needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SharpeStats {
    /// Per-period Sharpe ratio `mean / s` (sample standard deviation, divisor `T − 1`).
    pub sharpe: f64,
    /// Skewness `m₃ / m₂^1.5` (population moments).
    pub skewness: f64,
    /// Kurtosis `m₄ / m₂²` (population moments, not excess: 3 for a normal distribution).
    pub kurtosis: f64,
    /// Number of returns `T` (at least 2).
    pub observations: usize,
}

impl SharpeStats {
    /// The statistics of a series of per-period returns.
    ///
    /// # Errors
    ///
    /// [`CoreError::InvalidInput`] with fewer than 2 returns, a non-finite
    /// return, or returns that are all equal (zero standard deviation).
    pub fn from_returns(returns: &[f64]) -> Result<Self, CoreError> {
        let t = returns.len();
        if t < 2 {
            return Err(CoreError::InvalidInput(format!(
                "need at least 2 returns for a Sharpe ratio, got {t}"
            )));
        }
        if let Some(i) = returns.iter().position(|r| !r.is_finite()) {
            return Err(CoreError::InvalidInput(format!(
                "return {i} is not finite ({})",
                returns[i]
            )));
        }
        let n = t as f64;
        let mean = returns.iter().sum::<f64>() / n;
        let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
        for r in returns {
            let d = r - mean;
            let d2 = d * d;
            m2 += d2;
            m3 += d2 * d;
            m4 += d2 * d2;
        }
        // All-equal returns leave only rounding noise in the deviations.
        let scale = returns.iter().fold(0.0_f64, |m, r| m.max(r.abs()));
        if (m2 / n).sqrt() <= 16.0 * f64::EPSILON * scale || m2 <= 0.0 {
            return Err(CoreError::InvalidInput(
                "the returns are all equal: zero standard deviation, no Sharpe ratio".into(),
            ));
        }
        let sample_sd = (m2 / (n - 1.0)).sqrt();
        let (m2, m3, m4) = (m2 / n, m3 / n, m4 / n);
        Ok(Self {
            sharpe: mean / sample_sd,
            skewness: m3 / m2.powf(1.5),
            kurtosis: m4 / (m2 * m2),
            observations: t,
        })
    }

    fn validate(&self) -> Result<(), CoreError> {
        for (name, v) in [
            ("sharpe", self.sharpe),
            ("skewness", self.skewness),
            ("kurtosis", self.kurtosis),
        ] {
            if !v.is_finite() {
                return Err(CoreError::param(name, format!("must be finite, got {v}")));
            }
        }
        if self.kurtosis < 1.0 {
            return Err(CoreError::param(
                "kurtosis",
                format!("a (non-excess) kurtosis is at least 1, got {}", self.kurtosis),
            ));
        }
        if self.observations < 2 {
            return Err(CoreError::param(
                "observations",
                format!("need at least 2, got {}", self.observations),
            ));
        }
        Ok(())
    }
}

/// The deflated Sharpe ratio and its parts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeflatedSharpe {
    /// `E[max SR]` of the trials under the null hypothesis: the benchmark `SR*`.
    pub expected_max_sharpe: f64,
    /// `PSR(0)`: the probability that the true Sharpe ratio is positive, ignoring selection.
    pub probabilistic_sharpe: f64,
    /// `DSR = PSR(E[max SR])`, in `[0, 1]`.
    pub deflated_sharpe: f64,
}

/// The probabilistic Sharpe ratio `PSR(SR*)`: the probability that the true
/// per-period Sharpe ratio exceeds `benchmark`, given the sample statistics.
///
/// `PSR(SR*) = Φ((SR − SR*)·√(T − 1) / √(1 − γ₃·SR + (γ₄ − 1)/4·SR²))`
/// (Bailey and López de Prado, 2012 and 2014).
///
/// # Errors
///
/// [`CoreError::InvalidParameter`] for a non-finite statistic or benchmark, a
/// kurtosis below 1, fewer than 2 observations, or statistics for which
/// `1 − γ₃·SR + (γ₄ − 1)/4·SR²` is not positive.
///
/// # Example
///
/// ```
/// use tradeterm_core::research::deflated_sharpe::{probabilistic_sharpe_ratio, SharpeStats};
///
/// // Normal returns (skewness 0, kurtosis 3): PSR(0) = Φ(SR·√(T−1)/√(1 + SR²/2)).
/// let stats = SharpeStats { sharpe: 0.1, skewness: 0.0, kurtosis: 3.0, observations: 101 };
/// let psr = probabilistic_sharpe_ratio(&stats, 0.0)?;
/// assert!((psr - 0.8407).abs() < 1e-4);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
pub fn probabilistic_sharpe_ratio(stats: &SharpeStats, benchmark: f64) -> Result<f64, CoreError> {
    stats.validate()?;
    if !benchmark.is_finite() {
        return Err(CoreError::param(
            "benchmark",
            format!("must be finite, got {benchmark}"),
        ));
    }
    let sr = stats.sharpe;
    let denominator = 1.0 - stats.skewness * sr + (stats.kurtosis - 1.0) / 4.0 * sr * sr;
    if denominator.is_nan() || denominator <= 0.0 {
        return Err(CoreError::param(
            "skewness",
            format!(
                "1 − skewness·SR + (kurtosis − 1)/4·SR² = {denominator} is not positive: \
                 the statistics are inconsistent"
            ),
        ));
    }
    let z = (sr - benchmark) * ((stats.observations - 1) as f64).sqrt() / denominator.sqrt();
    Ok(normal::cdf(z))
}

/// The expected maximum of `trials` independent Sharpe ratios whose true
/// value is zero and whose variance is `variance`:
/// `√V·((1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e)))`.
///
/// # Errors
///
/// [`CoreError::InvalidParameter`] for `trials < 2` (`Φ⁻¹(0)` is `−∞`) or a
/// negative or non-finite `variance`.
///
/// # Example
///
/// ```
/// use tradeterm_core::research::deflated_sharpe::expected_max_sharpe;
///
/// // The best of 1 000 trials with unit variance is about 3.25 standard deviations.
/// assert!((expected_max_sharpe(1000, 1.0)? - 3.2551).abs() < 1e-4);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
pub fn expected_max_sharpe(trials: usize, variance: f64) -> Result<f64, CoreError> {
    if trials < 2 {
        return Err(CoreError::param(
            "trials",
            format!("need at least 2 trials, got {trials}"),
        ));
    }
    if !(variance.is_finite() && variance >= 0.0) {
        return Err(CoreError::param(
            "variance",
            format!("must be finite and ≥ 0, got {variance}"),
        ));
    }
    let n = trials as f64;
    let g = EULER_MASCHERONI;
    let z1 = normal::inverse_cdf(1.0 - 1.0 / n)?;
    let z2 = normal::inverse_cdf(1.0 - 1.0 / (n * std::f64::consts::E))?;
    Ok(variance.sqrt() * ((1.0 - g) * z1 + g * z2))
}

/// The deflated Sharpe ratio of the selected strategy after `trials`
/// independent trials whose per-period Sharpe ratios have variance
/// `variance`: `DSR = PSR(E[max SR])`.
///
/// `trials` is the number of configurations actually tried, not only the ones
/// reported.
///
/// # Errors
///
/// Those of [`probabilistic_sharpe_ratio`] and [`expected_max_sharpe`].
pub fn deflated_sharpe_ratio(stats: &SharpeStats, trials: usize, variance: f64) -> Result<DeflatedSharpe, CoreError> {
    let expected_max = expected_max_sharpe(trials, variance)?;
    Ok(DeflatedSharpe {
        expected_max_sharpe: expected_max,
        probabilistic_sharpe: probabilistic_sharpe_ratio(stats, 0.0)?,
        deflated_sharpe: probabilistic_sharpe_ratio(stats, expected_max)?,
    })
}

/// The sample variance (divisor `N − 1`) of the trials' Sharpe ratios, the
/// usual `V` for [`expected_max_sharpe`].
///
/// # Errors
///
/// [`CoreError::InvalidInput`] with fewer than 2 values or a non-finite one.
pub fn sharpe_variance(sharpes: &[f64]) -> Result<f64, CoreError> {
    if sharpes.len() < 2 {
        return Err(CoreError::InvalidInput(format!(
            "need the Sharpe ratios of at least 2 trials, got {}",
            sharpes.len()
        )));
    }
    if let Some(i) = sharpes.iter().position(|s| !s.is_finite()) {
        return Err(CoreError::InvalidInput(format!(
            "Sharpe ratio {i} is not finite ({})",
            sharpes[i]
        )));
    }
    let n = sharpes.len() as f64;
    let mean = sharpes.iter().sum::<f64>() / n;
    Ok(sharpes.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / (n - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_of_a_hand_worked_series() {
        // Returns 1, 2, 3, 6: mean 3, deviations −2, −1, 0, 3.
        // Σd² = 14, Σd³ = −8 − 1 + 27 = 18, Σd⁴ = 16 + 1 + 81 = 98.
        let s = SharpeStats::from_returns(&[1.0, 2.0, 3.0, 6.0]).unwrap();
        assert!((s.sharpe - 3.0 / (14.0_f64 / 3.0).sqrt()).abs() < 1e-15);
        assert!((s.skewness - 4.5 / 3.5_f64.powf(1.5)).abs() < 1e-15);
        assert!((s.kurtosis - 24.5 / 12.25).abs() < 1e-15);
        assert_eq!(s.observations, 4);
    }

    #[test]
    fn psr_of_normal_returns_and_equal_benchmark() {
        let s = SharpeStats {
            sharpe: 0.2,
            skewness: 0.0,
            kurtosis: 3.0,
            observations: 51,
        };
        // z = 0.2·√50/√(1 + 0.02) = 1.40028...
        let z = 0.2 * 50.0_f64.sqrt() / 1.02_f64.sqrt();
        let want = normal::cdf(z);
        assert!((probabilistic_sharpe_ratio(&s, 0.0).unwrap() - want).abs() < 1e-15);
        assert_eq!(probabilistic_sharpe_ratio(&s, 0.2).unwrap(), 0.5);
    }

    #[test]
    fn dsr_falls_with_the_number_of_trials() {
        let s = SharpeStats {
            sharpe: 0.08,
            skewness: -0.3,
            kurtosis: 4.0,
            observations: 2000,
        };
        let few = deflated_sharpe_ratio(&s, 2, 0.0005).unwrap();
        let many = deflated_sharpe_ratio(&s, 10_000, 0.0005).unwrap();
        assert!(few.deflated_sharpe > many.deflated_sharpe);
        assert!(few.expected_max_sharpe < many.expected_max_sharpe);
        assert_eq!(few.probabilistic_sharpe, many.probabilistic_sharpe);
        // Zero variance: E[max] = 0 and DSR = PSR(0).
        let flat = deflated_sharpe_ratio(&s, 10, 0.0).unwrap();
        assert_eq!(flat.expected_max_sharpe, 0.0);
        assert_eq!(flat.deflated_sharpe, flat.probabilistic_sharpe);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(SharpeStats::from_returns(&[]).is_err());
        assert!(SharpeStats::from_returns(&[0.1]).is_err());
        assert!(SharpeStats::from_returns(&[0.1, f64::NAN]).is_err());
        assert!(SharpeStats::from_returns(&[0.1, 0.1, 0.1]).is_err());
        let ok = SharpeStats {
            sharpe: 0.1,
            skewness: 0.0,
            kurtosis: 3.0,
            observations: 100,
        };
        assert!(expected_max_sharpe(1, 1.0).is_err());
        assert!(expected_max_sharpe(0, 1.0).is_err());
        assert!(expected_max_sharpe(10, -1.0).is_err());
        assert!(expected_max_sharpe(10, f64::NAN).is_err());
        assert!(probabilistic_sharpe_ratio(&ok, f64::INFINITY).is_err());
        for bad in [
            SharpeStats { sharpe: f64::NAN, ..ok },
            SharpeStats { kurtosis: 0.5, ..ok },
            SharpeStats { observations: 1, ..ok },
            // 1 − 5·1 + 0 < 0.
            SharpeStats {
                sharpe: 1.0,
                skewness: 5.0,
                kurtosis: 1.0,
                observations: 10,
            },
        ] {
            assert!(deflated_sharpe_ratio(&bad, 10, 0.01).is_err(), "{bad:?}");
        }
        assert!(sharpe_variance(&[0.1]).is_err());
        assert!(sharpe_variance(&[0.1, f64::NAN]).is_err());
        assert!((sharpe_variance(&[1.0, 2.0, 3.0]).unwrap() - 1.0).abs() < 1e-15);
    }
}
