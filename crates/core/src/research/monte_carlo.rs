//! Monte Carlo of a trade sequence: how much of a backtest's result is the
//! order (or the draw) of its trades.
//!
//! # Method
//!
//! Given the trades' P&L in account currency and the initial equity, each of
//! `runs` simulations builds a new sequence of the same length, either
//!
//! * [`Resampling::Bootstrap`]: drawn **with** replacement (each position an
//!   independent uniform pick among the trades), or
//! * [`Resampling::Permutation`]: a uniformly random **reordering** of the
//!   trades (Fisher–Yates on a fresh copy of the original order), which keeps
//!   the final equity and changes only the path,
//!
//! and measures on it, with `E₀` the initial equity and `Eₖ = E₀ + p₁ + … + pₖ`:
//!
//! * the final equity `E_n`;
//! * the maximum drawdown `max_k (P_k − E_k)` with `P_k = max(E₀, …, E_k)`
//!   the running peak (the initial equity counts as a peak), in currency, and
//!   in percent `max_k (P_k − E_k)/P_k × 100` (the two maxima may fall at
//!   different trades);
//! * the longest losing streak: the most consecutive trades with P&L < 0 (a
//!   zero trade ends a streak).
//!
//! Each distribution is summarised by its mean, minimum, maximum and
//! percentiles with numpy's default (`"linear"`) interpolation: for sorted
//! values `x₀ ≤ … ≤ x_(n−1)` and percentile `p`, `h = (n − 1)·p/100` and the
//! value is `x_⌊h⌋ + (h − ⌊h⌋)·(x_(⌊h⌋+1) − x_⌊h⌋)` ([`percentile`]).
//!
//! # Random numbers
//!
//! The generator is xoshiro256** (D. Blackman and S. Vigna, "Scrambled
//! Linear Pseudorandom Number Generators", *ACM Transactions on Mathematical
//! Software* 47(4), 2021) with its state filled by four outputs of SplitMix64
//! from the seed, as its authors recommend; integers below `n` use D.
//! Lemire's multiply-and-reject method ("Fast Random Integer Generation in an
//! Interval", *ACM TOMACS* 29(1), 2019), so they are exactly uniform. One
//! generator serves all runs in order; a bootstrap run draws `n` indices, a
//! permutation run swaps position `i` with a draw below `i + 1` for
//! `i = n − 1, …, 1`. The same seed gives the same result on every platform
//! and in every version that keeps this documented algorithm
//! (`scripts/fixtures/research_fixtures.py` re-implements it in Python).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::research::monte_carlo::{monte_carlo, MonteCarloConfig, Resampling};
//!
//! let trades = [120.0, -80.0, 45.0, -60.0, -30.0, 200.0, -90.0, 75.0];
//! let config = MonteCarloConfig { runs: 1000, seed: 42, resampling: Resampling::Permutation, ..Default::default() };
//! let mc = monte_carlo(&trades, 10_000.0, &config)?;
//! // A reordering keeps the final equity; the drawdown depends on the order.
//! assert_eq!(mc.final_equity.min, mc.final_equity.max);
//! assert!(mc.max_drawdown.min >= 0.0);
//! assert_eq!(mc.max_drawdown.percentiles.len(), 5); // 5, 25, 50, 75, 95
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::CoreError;

/// The largest number of runs accepted.
pub const MAX_RUNS: usize = 1_000_000;

/// The percentiles reported when none are asked for.
pub const DEFAULT_PERCENTILES: [f64; 5] = [5.0, 25.0, 50.0, 75.0, 95.0];

/// The xoshiro256** generator seeded by SplitMix64 (see the [module
/// documentation](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xoshiro256StarStar {
    s: [u64; 4],
}

impl Xoshiro256StarStar {
    /// A generator whose state is four SplitMix64 outputs from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut splitmix = || {
            sm = sm.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Self {
            s: [splitmix(), splitmix(), splitmix(), splitmix()],
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform integer in `[0, n)` (Lemire's method); 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// How each simulated sequence is drawn from the trades.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resampling {
    /// With replacement: `n` independent uniform picks.
    #[default]
    Bootstrap,
    /// Without replacement: a random order of the same trades (keeps the final equity).
    Permutation,
}

/// Parameters of [`monte_carlo`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MonteCarloConfig {
    /// Number of simulated sequences, 1 to [`MAX_RUNS`].
    pub runs: usize,
    /// Seed of the generator: the same seed gives the same result.
    pub seed: u64,
    /// With or without replacement.
    #[serde(default)]
    pub resampling: Resampling,
    /// Percentiles to report, each in `[0, 100]` (default 5, 25, 50, 75, 95).
    #[serde(default = "default_percentiles")]
    pub percentiles: Vec<f64>,
}

fn default_percentiles() -> Vec<f64> {
    DEFAULT_PERCENTILES.to_vec()
}

impl Default for MonteCarloConfig {
    fn default() -> Self {
        Self {
            runs: 1000,
            seed: 0,
            resampling: Resampling::Bootstrap,
            percentiles: default_percentiles(),
        }
    }
}

/// The statistics of one trade sequence's equity path.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SequenceStats {
    /// Equity after the last trade.
    pub final_equity: f64,
    /// Largest fall from a running peak, in account currency (≥ 0).
    pub max_drawdown: f64,
    /// Largest fall from a running peak in percent of that peak (≥ 0).
    pub max_drawdown_pct: f64,
    /// Most consecutive trades with P&L < 0.
    pub longest_losing_streak: usize,
}

/// One percentile of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Percentile {
    /// The percentile asked for, in `[0, 100]`.
    pub percentile: f64,
    /// Its value (numpy's linear interpolation).
    pub value: f64,
}

/// The summary of one simulated statistic over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Distribution {
    /// Mean over the runs.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// The percentiles asked for, in the order asked.
    pub percentiles: Vec<Percentile>,
}

/// The result of [`monte_carlo`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MonteCarlo {
    /// Number of simulated sequences.
    pub runs: usize,
    /// How they were drawn.
    pub resampling: Resampling,
    /// The sequence as given (not simulated), for comparison.
    pub original: SequenceStats,
    /// Final equity.
    pub final_equity: Distribution,
    /// Maximum drawdown in account currency.
    pub max_drawdown: Distribution,
    /// Maximum drawdown in percent of the running peak.
    pub max_drawdown_pct: Distribution,
    /// Longest losing streak (a count of trades).
    pub longest_losing_streak: Distribution,
}

fn check_equity(initial_equity: f64) -> Result<(), CoreError> {
    if !(initial_equity.is_finite() && initial_equity > 0.0) {
        return Err(CoreError::param(
            "initial_equity",
            format!("must be finite and > 0, got {initial_equity}"),
        ));
    }
    Ok(())
}

fn check_trades(trades: &[f64]) -> Result<(), CoreError> {
    if trades.is_empty() {
        return Err(CoreError::InvalidInput("no trades".into()));
    }
    if let Some(i) = trades.iter().position(|t| !t.is_finite()) {
        return Err(CoreError::InvalidInput(format!(
            "trade {i} has a non-finite P&L ({})",
            trades[i]
        )));
    }
    Ok(())
}

/// Final equity, maximum drawdown (currency and percent of the running peak,
/// the initial equity counting as a peak) and longest losing streak of the
/// trades in the order given.
///
/// # Errors
///
/// [`CoreError::InvalidParameter`] for a non-positive or non-finite initial
/// equity; [`CoreError::InvalidInput`] for no trades or a non-finite P&L.
///
/// # Example
///
/// ```
/// use tradeterm_core::research::monte_carlo::sequence_stats;
///
/// // Equity 100 → 110 → 90 → 85 → 95 → 65 → 105: peak 110, trough 65.
/// let s = sequence_stats(100.0, &[10.0, -20.0, -5.0, 10.0, -30.0, 40.0])?;
/// assert_eq!((s.final_equity, s.max_drawdown, s.longest_losing_streak), (105.0, 45.0, 2));
/// assert!((s.max_drawdown_pct - 45.0 / 110.0 * 100.0).abs() < 1e-12);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
pub fn sequence_stats(initial_equity: f64, trades: &[f64]) -> Result<SequenceStats, CoreError> {
    check_equity(initial_equity)?;
    check_trades(trades)?;
    Ok(stats_of(initial_equity, trades.iter().copied()))
}

fn stats_of(initial_equity: f64, trades: impl Iterator<Item = f64>) -> SequenceStats {
    let (mut equity, mut peak) = (initial_equity, initial_equity);
    let (mut dd, mut dd_pct) = (0.0_f64, 0.0_f64);
    let (mut streak, mut longest) = (0_usize, 0_usize);
    for pnl in trades {
        equity += pnl;
        peak = peak.max(equity);
        dd = dd.max(peak - equity);
        // The peak is at least the initial equity, so positive.
        dd_pct = dd_pct.max((peak - equity) / peak * 100.0);
        streak = if pnl < 0.0 { streak + 1 } else { 0 };
        longest = longest.max(streak);
    }
    SequenceStats {
        final_equity: equity,
        max_drawdown: dd,
        max_drawdown_pct: dd_pct,
        longest_losing_streak: longest,
    }
}

/// The `p`-th percentile of `values` with numpy's default linear
/// interpolation (`numpy.percentile(values, p)`).
///
/// # Errors
///
/// [`CoreError::InvalidInput`] for no values or a NaN;
/// [`CoreError::InvalidParameter`] (`percentile`) unless `0 ≤ p ≤ 100`.
///
/// # Example
///
/// ```
/// use tradeterm_core::research::monte_carlo::percentile;
///
/// assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 25.0)?, 1.75);
/// assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 50.0)?, 2.5);
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
pub fn percentile(values: &[f64], p: f64) -> Result<f64, CoreError> {
    if values.is_empty() {
        return Err(CoreError::InvalidInput("no values".into()));
    }
    if values.iter().any(|v| v.is_nan()) {
        return Err(CoreError::InvalidInput("a value is NaN".into()));
    }
    check_percentile(p)?;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(sorted_percentile(&sorted, p))
}

fn check_percentile(p: f64) -> Result<(), CoreError> {
    if !(0.0..=100.0).contains(&p) {
        return Err(CoreError::param("percentile", format!("must be in [0, 100], got {p}")));
    }
    Ok(())
}

/// numpy's `linear` method on sorted values, including its two-sided lerp.
fn sorted_percentile(sorted: &[f64], p: f64) -> f64 {
    let last = sorted.len() - 1;
    let h = last as f64 * (p / 100.0);
    let lo = (h.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    let t = h - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    let d = b - a;
    if t >= 0.5 { b - d * (1.0 - t) } else { a + d * t }
}

fn distribution(mut values: Vec<f64>, percentiles: &[f64]) -> Distribution {
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    values.sort_by(f64::total_cmp);
    Distribution {
        mean,
        min: values[0],
        max: values[values.len() - 1],
        percentiles: percentiles
            .iter()
            .map(|&p| Percentile {
                percentile: p,
                value: sorted_percentile(&values, p),
            })
            .collect(),
    }
}

/// Monte Carlo of the trade sequence `trades` (P&L per trade, in order)
/// starting from `initial_equity`: see the [module documentation](self) for
/// the resampling, the statistics and the generator.
///
/// # Errors
///
/// * [`CoreError::InvalidParameter`]: initial equity not finite and > 0,
///   `runs` outside 1 to [`MAX_RUNS`], a percentile outside `[0, 100]`;
/// * [`CoreError::InvalidInput`]: no trades or a non-finite P&L.
pub fn monte_carlo(trades: &[f64], initial_equity: f64, config: &MonteCarloConfig) -> Result<MonteCarlo, CoreError> {
    check_equity(initial_equity)?;
    check_trades(trades)?;
    if config.runs == 0 || config.runs > MAX_RUNS {
        return Err(CoreError::param(
            "runs",
            format!("must be from 1 to {MAX_RUNS}, got {}", config.runs),
        ));
    }
    for &p in &config.percentiles {
        check_percentile(p)?;
    }
    let mut rng = Xoshiro256StarStar::new(config.seed);
    let n = trades.len();
    let mut sequence = trades.to_vec();
    let mut samples: [Vec<f64>; 4] = std::array::from_fn(|_| Vec::with_capacity(config.runs));
    for _ in 0..config.runs {
        match config.resampling {
            Resampling::Bootstrap => {
                for slot in &mut sequence {
                    *slot = trades[rng.below(n as u64) as usize];
                }
            }
            Resampling::Permutation => {
                sequence.copy_from_slice(trades);
                for i in (1..n).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    sequence.swap(i, j);
                }
            }
        }
        let s = stats_of(initial_equity, sequence.iter().copied());
        samples[0].push(s.final_equity);
        samples[1].push(s.max_drawdown);
        samples[2].push(s.max_drawdown_pct);
        samples[3].push(s.longest_losing_streak as f64);
    }
    let [final_equity, max_drawdown, max_drawdown_pct, streak] = samples;
    let p = &config.percentiles;
    Ok(MonteCarlo {
        runs: config.runs,
        resampling: config.resampling,
        original: stats_of(initial_equity, trades.iter().copied()),
        final_equity: distribution(final_equity, p),
        max_drawdown: distribution(max_drawdown, p),
        max_drawdown_pct: distribution(max_drawdown_pct, p),
        longest_losing_streak: distribution(streak, p),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRADES: [f64; 10] = [120.0, -80.0, 45.0, -60.0, -30.0, 200.0, -90.0, 75.0, -15.0, 10.0];

    fn config(resampling: Resampling, seed: u64) -> MonteCarloConfig {
        MonteCarloConfig {
            runs: 500,
            seed,
            resampling,
            percentiles: vec![0.0, 5.0, 50.0, 95.0, 100.0],
        }
    }

    #[test]
    fn hand_worked_sequence() {
        let s = sequence_stats(100.0, &[10.0, -20.0, -5.0, 10.0, -30.0, 40.0]).unwrap();
        assert_eq!(s.final_equity, 105.0);
        assert_eq!(s.max_drawdown, 45.0);
        assert_eq!(s.max_drawdown_pct, 45.0 / 110.0 * 100.0);
        assert_eq!(s.longest_losing_streak, 2);
        // A first loss is measured from the initial equity; zero trades end streaks.
        let s = sequence_stats(1000.0, &[-100.0, -100.0, 0.0, -100.0]).unwrap();
        assert_eq!((s.max_drawdown, s.max_drawdown_pct), (300.0, 30.0));
        assert_eq!(s.longest_losing_streak, 2);
        let s = sequence_stats(50.0, &[5.0, 5.0]).unwrap();
        assert_eq!((s.max_drawdown, s.longest_losing_streak), (0.0, 0));
    }

    #[test]
    fn percentiles_of_a_known_list() {
        let v = [15.0, 20.0, 35.0, 40.0, 50.0];
        // numpy.percentile(v, [0, 5, 25, 40, 50, 75, 100]).
        for (p, want) in [
            (0.0, 15.0),
            (5.0, 16.0),
            (25.0, 20.0),
            (40.0, 29.0),
            (50.0, 35.0),
            (75.0, 40.0),
            (100.0, 50.0),
        ] {
            assert!((percentile(&v, p).unwrap() - want).abs() < 1e-12, "p {p}");
        }
        assert_eq!(percentile(&[7.0], 33.0).unwrap(), 7.0);
    }

    #[test]
    fn permutation_keeps_the_final_equity_exactly() {
        // Integer P&L: every order sums exactly.
        let mc = monte_carlo(&TRADES, 10_000.0, &config(Resampling::Permutation, 3)).unwrap();
        let total = 10_000.0 + TRADES.iter().sum::<f64>();
        assert_eq!(mc.final_equity.min, total);
        assert_eq!(mc.final_equity.max, total);
        assert_eq!(mc.original.final_equity, total);
        assert!(mc.max_drawdown.min >= 0.0 && mc.max_drawdown_pct.min >= 0.0);
        // Some order has a deeper drawdown than the original, some a shallower one.
        assert!(mc.max_drawdown.max > mc.original.max_drawdown);
        assert!(mc.max_drawdown.min < mc.original.max_drawdown);
        // All losses in a row is the worst streak a permutation can reach (5 losses).
        assert!(mc.longest_losing_streak.max <= 5.0);
    }

    #[test]
    fn bootstrap_varies_and_is_reproducible() {
        let a = monte_carlo(&TRADES, 10_000.0, &config(Resampling::Bootstrap, 11)).unwrap();
        let b = monte_carlo(&TRADES, 10_000.0, &config(Resampling::Bootstrap, 11)).unwrap();
        let c = monte_carlo(&TRADES, 10_000.0, &config(Resampling::Bootstrap, 12)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.final_equity.min < a.final_equity.max);
        let p = &a.final_equity.percentiles;
        assert!(p.windows(2).all(|w| w[0].value <= w[1].value));
        assert_eq!(p[0].value, a.final_equity.min);
        assert_eq!(p[4].value, a.final_equity.max);
    }

    #[test]
    fn generator_is_uniform_enough_and_bounded() {
        let mut rng = Xoshiro256StarStar::new(1);
        let mut counts = [0_u32; 6];
        for _ in 0..60_000 {
            counts[rng.below(6) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (9_500..10_500).contains(&c)), "{counts:?}");
        assert_eq!(rng.below(1), 0);
        assert_eq!(rng.below(0), 0);
        // SplitMix64's first output from seed 0 is 0xE220A8397B1DCDAF.
        assert_eq!(Xoshiro256StarStar::new(0).s[0], 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let ok = config(Resampling::Bootstrap, 1);
        assert!(monte_carlo(&[], 100.0, &ok).is_err());
        assert!(monte_carlo(&[1.0, f64::NAN], 100.0, &ok).is_err());
        for equity in [0.0, -5.0, f64::INFINITY, f64::NAN] {
            assert!(monte_carlo(&TRADES, equity, &ok).is_err());
        }
        for runs in [0, MAX_RUNS + 1] {
            let c = MonteCarloConfig { runs, ..ok.clone() };
            assert!(monte_carlo(&TRADES, 100.0, &c).is_err());
        }
        for p in [-1.0, 100.5, f64::NAN] {
            let c = MonteCarloConfig {
                percentiles: vec![p],
                ..ok.clone()
            };
            assert!(monte_carlo(&TRADES, 100.0, &c).is_err());
            assert!(percentile(&[1.0], p).is_err());
        }
        assert!(percentile(&[], 50.0).is_err());
        assert!(percentile(&[1.0, f64::NAN], 50.0).is_err());
        assert!(sequence_stats(100.0, &[]).is_err());
    }
}
