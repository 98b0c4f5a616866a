//! The probability of backtest overfitting (PBO) by combinatorially
//! symmetric cross-validation (CSCV).
//!
//! # Method
//!
//! The input is a `T × N` matrix: the per-period performance (returns,
//! usually) of `N` trials (parameter sets) over the same `T` periods.
//!
//! 1. The rows are split into `S` (even) contiguous blocks; when `S` does not
//!    divide `T`, the first `T mod S` blocks hold one row more (numpy's
//!    `array_split`).
//! 2. For each of the `C(S, S/2)` ways to choose `S/2` blocks as the
//!    in-sample half (in lexicographic order of the block indices), the other
//!    blocks form the out-of-sample half; both halves keep the rows in time
//!    order.
//! 3. Each trial's metric is computed on each half (by default its Sharpe
//!    ratio `mean / s`, `s` the sample standard deviation with divisor
//!    `n − 1`, not annualised; or its mean: [`CscvMetric`]). The best
//!    in-sample trial `n*` is the one with the largest in-sample metric (the
//!    lowest index on ties).
//! 4. Its out-of-sample rank `r` among the `N` trials runs from 1 (worst) to
//!    `N` (best), ties taking the average of the ranks they span
//!    (`r = #{worse} + (#{equal, itself included} + 1)/2`, scipy's
//!    `rankdata(method="average")`). The relative rank is
//!    `ω = r / (N + 1)` and the logit `λ = ln(ω / (1 − ω)) = ln(r / (N + 1 − r))`.
//! 5. `PBO = #{λ ≤ 0} / C(S, S/2)`: the share of splits in which the best
//!    in-sample trial is at or below the median out of sample.
//!
//! A PBO near 0 says that in-sample selection carries over out of sample; a
//! PBO near or above ½ says that the selection process is overfit.
//!
//! # Reference
//!
//! D. H. Bailey, J. M. Borwein, M. López de Prado and Q. J. Zhu, "The
//! Probability of Backtest Overfitting", *Journal of Computational Finance*
//! 20(4), 2017, pp. 39–69 (working paper 2015).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::research::pbo::{probability_of_backtest_overfitting, CscvConfig, CscvMetric};
//!
//! // 3 trials over 8 periods, 4 blocks of 2 rows: trial 0 improves, trial 1
//! // degrades, trial 2 is flat. Rows are periods, columns trials.
//! let blocks = [[1.0, 4.0, 2.0], [2.0, 3.0, 2.0], [3.0, 2.0, 2.0], [4.0, 1.0, 2.0]];
//! let rows: Vec<Vec<f64>> = blocks.iter().flat_map(|b| [b.to_vec(), b.to_vec()]).collect();
//! let config = CscvConfig { blocks: 4, metric: CscvMetric::Mean };
//! let result = probability_of_backtest_overfitting(&rows, &config)?;
//! assert_eq!(result.splits.len(), 6); // C(4, 2)
//! assert!((result.pbo - 4.0 / 6.0).abs() < 1e-15);
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::CoreError;

/// The largest number of blocks accepted: `C(20, 10) = 184 756` splits.
pub const MAX_BLOCKS: usize = 20;

/// The performance measure of a trial on each half.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CscvMetric {
    /// `mean / s` of the half's rows, `s` with divisor `n − 1` (not annualised).
    #[default]
    Sharpe,
    /// The mean of the half's rows.
    Mean,
}

/// Parameters of CSCV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CscvConfig {
    /// Number of blocks `S`: even, from 2 to [`MAX_BLOCKS`], with at least 2
    /// rows per block (`T ≥ 2·S`). Bailey et al. use 16.
    pub blocks: usize,
    /// The metric ranked on each half.
    #[serde(default)]
    pub metric: CscvMetric,
}

impl Default for CscvConfig {
    fn default() -> Self {
        Self {
            blocks: 16,
            metric: CscvMetric::Sharpe,
        }
    }
}

/// One in-sample/out-of-sample split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CscvSplit {
    /// The in-sample blocks (0-based, ascending); the others are out of sample.
    pub in_sample_blocks: Vec<usize>,
    /// The trial (column) with the best in-sample metric.
    pub best_trial: usize,
    /// Its in-sample metric.
    pub in_sample: f64,
    /// Its out-of-sample metric.
    pub out_of_sample: f64,
    /// Its relative out-of-sample rank `ω = r / (N + 1)`, in `(0, 1)`.
    pub relative_rank: f64,
    /// `λ = ln(ω / (1 − ω))`.
    pub logit: f64,
}

/// The result of CSCV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Pbo {
    /// Probability of backtest overfitting: the share of splits with `λ ≤ 0`.
    pub pbo: f64,
    /// Every split, in lexicographic order of its in-sample blocks.
    pub splits: Vec<CscvSplit>,
}

impl Pbo {
    /// The distribution of the logits `λ`, one per split, in split order.
    pub fn logits(&self) -> Vec<f64> {
        self.splits.iter().map(|s| s.logit).collect()
    }
}

/// Count, mean and sum of squared deviations of some rows of one trial.
#[derive(Clone, Copy)]
struct Moments {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn of(values: impl Iterator<Item = f64> + Clone) -> Self {
        let (n, sum) = values.clone().fold((0.0, 0.0), |(n, s), v| (n + 1.0, s + v));
        let mean = sum / n;
        let m2 = values.map(|v| (v - mean) * (v - mean)).sum();
        Self { n, mean, m2 }
    }

    /// Chan, Golub and LeVeque's pairwise combination.
    fn merge(self, other: Self) -> Self {
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        Self {
            n,
            mean: self.mean + delta * other.n / n,
            m2: self.m2 + other.m2 + delta * delta * self.n * other.n / n,
        }
    }
}

/// The probability of backtest overfitting of the trials whose per-period
/// performance is `performance` (rows are periods, columns trials), by CSCV
/// (Bailey, Borwein, López de Prado and Zhu): see the [module
/// documentation](self) for the method, the rank convention and the metric.
///
/// # Errors
///
/// * [`CoreError::InvalidParameter`] (`blocks`) when `S` is odd, below 2 or
///   above [`MAX_BLOCKS`], or when there are fewer than `2·S` rows;
/// * [`CoreError::InvalidInput`] for an empty matrix, fewer than 2 trials,
///   rows of different lengths, a non-finite value, or (Sharpe metric) a
///   trial whose returns are constant on a half.
pub fn probability_of_backtest_overfitting(performance: &[Vec<f64>], config: &CscvConfig) -> Result<Pbo, CoreError> {
    let s = config.blocks;
    if s < 2 || !s.is_multiple_of(2) || s > MAX_BLOCKS {
        return Err(CoreError::param(
            "blocks",
            format!("must be even, from 2 to {MAX_BLOCKS}, got {s}"),
        ));
    }
    let t = performance.len();
    if t == 0 {
        return Err(CoreError::InvalidInput("empty performance matrix".into()));
    }
    let n = performance[0].len();
    if n < 2 {
        return Err(CoreError::InvalidInput(format!(
            "need at least 2 trials (columns), got {n}"
        )));
    }
    for (i, row) in performance.iter().enumerate() {
        if row.len() != n {
            return Err(CoreError::InvalidInput(format!(
                "row {i} has {} trials, row 0 has {n}",
                row.len()
            )));
        }
        if let Some(j) = row.iter().position(|v| !v.is_finite()) {
            return Err(CoreError::InvalidInput(format!(
                "row {i}, trial {j} is not finite ({})",
                row[j]
            )));
        }
    }
    if t < 2 * s {
        return Err(CoreError::param(
            "blocks",
            format!("{s} blocks need at least {} rows (2 per block), got {t}", 2 * s),
        ));
    }

    // Block boundaries as numpy's array_split, and each block's moments per trial.
    let (base, extra) = (t / s, t % s);
    let mut bounds = Vec::with_capacity(s);
    let mut start = 0;
    for b in 0..s {
        let len = base + usize::from(b < extra);
        bounds.push(start..start + len);
        start += len;
    }
    let moments: Vec<Vec<Moments>> = bounds
        .iter()
        .map(|range| {
            (0..n)
                .map(|j| Moments::of(performance[range.clone()].iter().map(move |row| row[j])))
                .collect()
        })
        .collect();
    let scale: Vec<f64> = (0..n)
        .map(|j| performance.iter().fold(0.0_f64, |m, row| m.max(row[j].abs())))
        .collect();

    let metric = |blocks: &[usize], j: usize| -> Result<f64, CoreError> {
        let mut m = moments[blocks[0]][j];
        for &b in &blocks[1..] {
            m = m.merge(moments[b][j]);
        }
        match config.metric {
            CscvMetric::Mean => Ok(m.mean),
            CscvMetric::Sharpe => {
                let sd = (m.m2 / (m.n - 1.0)).sqrt();
                if sd <= 16.0 * f64::EPSILON * scale[j] || sd == 0.0 {
                    return Err(CoreError::InvalidInput(format!(
                        "trial {j} has constant returns on the half made of blocks {blocks:?}: \
                         no Sharpe ratio (use the mean metric)"
                    )));
                }
                Ok(m.mean / sd)
            }
        }
    };

    let half = s / 2;
    let mut combination: Vec<usize> = (0..half).collect();
    let mut splits = Vec::new();
    let mut at_or_below = 0_usize;
    loop {
        let out_of_sample: Vec<usize> = (0..s).filter(|b| !combination.contains(b)).collect();
        let mut best = (0, f64::NEG_INFINITY);
        for j in 0..n {
            let v = metric(&combination, j)?;
            if v > best.1 {
                best = (j, v);
            }
        }
        let oos: Vec<f64> = (0..n).map(|j| metric(&out_of_sample, j)).collect::<Result<_, _>>()?;
        let target = oos[best.0];
        let worse = oos.iter().filter(|&&v| v < target).count();
        let equal = oos.iter().filter(|&&v| v == target).count();
        let rank = worse as f64 + (equal as f64 + 1.0) / 2.0;
        let trials = n as f64;
        let logit = (rank / (trials + 1.0 - rank)).ln();
        if logit <= 0.0 {
            at_or_below += 1;
        }
        splits.push(CscvSplit {
            in_sample_blocks: combination.clone(),
            best_trial: best.0,
            in_sample: best.1,
            out_of_sample: target,
            relative_rank: rank / (trials + 1.0),
            logit,
        });
        if !next_combination(&mut combination, s) {
            break;
        }
    }
    Ok(Pbo {
        pbo: at_or_below as f64 / splits.len() as f64,
        splits,
    })
}

/// Advances `c` (ascending indices below `s`) to the next combination in
/// lexicographic order; `false` after the last one.
fn next_combination(c: &mut [usize], s: usize) -> bool {
    let k = c.len();
    let Some(i) = (0..k).rev().find(|&i| c[i] < s - k + i) else {
        return false;
    };
    c[i] += 1;
    for j in i + 1..k {
        c[j] = c[j - 1] + 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each block value repeated on two rows, so a block's mean is its value.
    fn matrix(blocks: &[[f64; 3]]) -> Vec<Vec<f64>> {
        blocks.iter().flat_map(|b| [b.to_vec(), b.to_vec()]).collect()
    }

    #[test]
    fn hand_worked_mean_case() {
        // Block values of trials 0, 1, 2: [1,2,3,4], [4,3,2,1], [2,2,2,2].
        let rows = matrix(&[[1.0, 4.0, 2.0], [2.0, 3.0, 2.0], [3.0, 2.0, 2.0], [4.0, 1.0, 2.0]]);
        let config = CscvConfig {
            blocks: 4,
            metric: CscvMetric::Mean,
        };
        let r = probability_of_backtest_overfitting(&rows, &config).unwrap();
        // Split by split (IS blocks: best IS trial; its OOS values → rank):
        // {0,1}: t1 (3.5); OOS t0 3.5, t1 1.5, t2 2   → rank 1.
        // {0,2}: t1 (3);   OOS t0 3, t1 2, t2 2       → tie with t2, rank 1.5.
        // {0,3}: t0 and t1 tie at 2.5 → t0; OOS 2.5, 2.5, 2 → rank 2.5.
        // {1,2}: t0 (tie with t1 → lowest index); OOS 2.5, 2.5, 2 → rank 2.5.
        // {1,3}: t0 (3);   OOS t0 2, t1 3, t2 2       → tie with t2, rank 1.5.
        // {2,3}: t0 (3.5); OOS t0 1.5 → rank 1.
        let want = [
            (vec![0, 1], 1, 1.0),
            (vec![0, 2], 1, 1.5),
            (vec![0, 3], 0, 2.5),
            (vec![1, 2], 0, 2.5),
            (vec![1, 3], 0, 1.5),
            (vec![2, 3], 0, 1.0),
        ];
        assert_eq!(r.splits.len(), want.len());
        for (split, (blocks, best, rank)) in r.splits.iter().zip(want) {
            assert_eq!(split.in_sample_blocks, blocks);
            assert_eq!(split.best_trial, best, "{blocks:?}");
            assert_eq!(split.relative_rank, rank / 4.0, "{blocks:?}");
            assert!((split.logit - (rank / (4.0 - rank)).ln()).abs() < 1e-15);
        }
        assert_eq!(r.pbo, 4.0 / 6.0);
        assert_eq!(r.logits().len(), 6);
    }

    #[test]
    fn a_consistent_winner_is_not_overfit() {
        // Trial 1 beats trial 0 on every block (Sharpe): λ > 0 everywhere.
        let rows: Vec<Vec<f64>> = (0..40)
            .map(|i| {
                let noise = if i % 2 == 0 { 0.01 } else { -0.01 };
                vec![noise, 0.002 + noise]
            })
            .collect();
        let r = probability_of_backtest_overfitting(
            &rows,
            &CscvConfig {
                blocks: 4,
                metric: CscvMetric::Sharpe,
            },
        )
        .unwrap();
        assert_eq!(r.pbo, 0.0);
        assert!(r.splits.iter().all(|s| s.best_trial == 1 && s.logit > 0.0));
    }

    #[test]
    fn uneven_blocks_follow_array_split() {
        // 9 rows, 4 blocks: sizes 3, 2, 2, 2. Trial 0 is 1 on block 0 only.
        let rows: Vec<Vec<f64>> = (0..9).map(|i| vec![if i < 3 { 1.0 } else { 0.0 }, 0.5]).collect();
        let config = CscvConfig {
            blocks: 4,
            metric: CscvMetric::Mean,
        };
        let r = probability_of_backtest_overfitting(&rows, &config).unwrap();
        // In-sample {0, 1}: trial 0's mean is 3/5 (3 ones over 5 rows).
        assert_eq!(r.splits[0].in_sample, 0.6);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let rows = matrix(&[[1.0, 4.0, 2.0], [2.0, 3.0, 2.0], [3.0, 2.0, 2.0], [4.0, 1.0, 2.0]]);
        let cfg = |blocks| CscvConfig {
            blocks,
            metric: CscvMetric::Mean,
        };
        for s in [0, 1, 3, 22] {
            assert!(matches!(
                probability_of_backtest_overfitting(&rows, &cfg(s)),
                Err(CoreError::InvalidParameter { .. })
            ));
        }
        // 8 rows cannot make 6 blocks of 2.
        assert!(probability_of_backtest_overfitting(&rows, &cfg(6)).is_err());
        assert!(probability_of_backtest_overfitting(&[], &cfg(2)).is_err());
        let one_trial = vec![vec![1.0]; 8];
        assert!(probability_of_backtest_overfitting(&one_trial, &cfg(2)).is_err());
        let mut ragged = rows.clone();
        ragged[3].pop();
        assert!(probability_of_backtest_overfitting(&ragged, &cfg(2)).is_err());
        let mut nan = rows.clone();
        nan[5][1] = f64::NAN;
        assert!(probability_of_backtest_overfitting(&nan, &cfg(2)).is_err());
        // Trial 2 is constant: no Sharpe ratio.
        let sharpe = CscvConfig {
            blocks: 2,
            metric: CscvMetric::Sharpe,
        };
        assert!(matches!(
            probability_of_backtest_overfitting(&rows, &sharpe),
            Err(CoreError::InvalidInput(_))
        ));
    }

    #[test]
    fn combinations_are_lexicographic_and_complete() {
        let mut c = vec![0, 1, 2];
        let mut count = 1;
        let mut last = c.clone();
        while next_combination(&mut c, 6) {
            assert!(c > last);
            last = c.clone();
            count += 1;
        }
        assert_eq!(count, 20); // C(6, 3)
        assert_eq!(last, vec![3, 4, 5]);
    }
}
