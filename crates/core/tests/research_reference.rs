//! The overfitting statistics of `tradeterm_core::research` against an
//! independent Python reference (numpy 2.4.6, scipy 1.17.1): the normal CDF
//! and its inverse against `scipy.stats.norm`, the deflated Sharpe ratio of
//! the best of 16 momentum variants of EUR/USD hourly returns, CSCV's
//! probability of backtest overfitting on the same 4 983 × 16 matrix, and
//! Monte Carlo of a trade sequence with the same generator re-implemented in
//! Python. The fixtures are made by `scripts/fixtures/research_fixtures.py`;
//! comparisons are within a relative 1e-9 unless stated.

use std::path::Path;

use serde_json::Value;
use tradeterm_core::research::deflated_sharpe::{
    SharpeStats, deflated_sharpe_ratio, probabilistic_sharpe_ratio, sharpe_variance,
};
use tradeterm_core::research::monte_carlo::{
    Distribution, MonteCarloConfig, Resampling, Xoshiro256StarStar, monte_carlo, percentile, sequence_stats,
};
use tradeterm_core::research::normal;
use tradeterm_core::research::pbo::{CscvConfig, CscvMetric, probability_of_backtest_overfitting};

fn load(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/research")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("expected a number, got {v}"))
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(num).collect()
}

/// Relative difference, with an absolute floor of `floor`.
fn rel(got: f64, want: f64, floor: f64) -> f64 {
    (got - want).abs() / want.abs().max(floor)
}

#[track_caller]
fn assert_close(name: &str, got: f64, want: f64, tol: f64) {
    assert!(
        rel(got, want, 1.0) <= tol,
        "{name}: got {got}, reference {want} (difference {})",
        got - want
    );
}

/// The closes of `data/market/eurusd_1h_backtesting.csv`.
fn closes() -> Vec<f64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/market/eurusd_1h_backtesting.csv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let bars = tradeterm_core::bars::parse_csv(&text).expect("bars");
    bars.iter().map(|b| b.close).collect()
}

/// Returns of the 16 momentum variants, as the script builds them: trial k
/// holds `sign(c[t−1] − c[t−1−k])`, its return at `t` that sign times
/// `c[t]/c[t−1] − 1`, for `t = 17..len`. Rows are periods, columns trials.
fn trial_matrix() -> Vec<Vec<f64>> {
    let c = closes();
    let trials = 16;
    (trials + 1..c.len())
        .map(|t| {
            let r = c[t] / c[t - 1] - 1.0;
            (1..=trials)
                .map(|k| {
                    let d = c[t - 1] - c[t - 1 - k];
                    let sign = if d > 0.0 {
                        1.0
                    } else if d < 0.0 {
                        -1.0
                    } else {
                        0.0
                    };
                    sign * r
                })
                .collect()
        })
        .collect()
}

#[test]
fn normal_cdf_and_inverse_match_scipy() {
    let fx = load("normal.json");
    let mut worst = 0.0_f64;
    for pair in fx["cdf"].as_array().unwrap() {
        let (x, want) = (num(&pair[0]), num(&pair[1]));
        let got = normal::cdf(x);
        // Relative in the lower tail, where the values are tiny.
        let d = rel(got, want, 1e-300);
        worst = worst.max(d);
        assert!(d <= 1e-12, "cdf({x}): got {got}, scipy {want}");
    }
    for pair in fx["ppf"].as_array().unwrap() {
        let (p, want) = (num(&pair[0]), num(&pair[1]));
        let got = normal::inverse_cdf(p).unwrap();
        let d = rel(got, want, 1e-300);
        worst = worst.max(d);
        assert!(d <= 1e-12, "ppf({p}): got {got}, scipy {want}");
    }
    eprintln!("normal: worst relative difference {worst:e}");
}

#[test]
fn deflated_sharpe_matches_scipy() {
    let fx = load("deflated_sharpe.json");
    let m = trial_matrix();
    assert_eq!(m.len() as u64, fx["observations"].as_u64().unwrap());
    let mut worst = 0.0_f64;
    let mut check = |name: &str, got: f64, want: f64| {
        worst = worst.max(rel(got, want, 1e-300));
        assert_close(name, got, want, 1e-9);
    };
    let mut all = Vec::new();
    for (k, want) in fx["trials"].as_array().unwrap().iter().enumerate() {
        let column: Vec<f64> = m.iter().map(|row| row[k]).collect();
        let s = SharpeStats::from_returns(&column).unwrap();
        check(&format!("trial {k} sharpe"), s.sharpe, num(&want["sharpe"]));
        check(&format!("trial {k} skewness"), s.skewness, num(&want["skewness"]));
        check(&format!("trial {k} kurtosis"), s.kurtosis, num(&want["kurtosis"]));
        all.push(s);
    }
    let sharpes: Vec<f64> = all.iter().map(|s| s.sharpe).collect();
    let variance = sharpe_variance(&sharpes).unwrap();
    check("variance", variance, num(&fx["sharpe_variance"]));
    let best = (0..all.len())
        .max_by(|&a, &b| sharpes[a].total_cmp(&sharpes[b]))
        .unwrap();
    assert_eq!(best as u64, fx["best_trial"].as_u64().unwrap());
    for case in fx["cases"].as_array().unwrap() {
        let n = case["trials"].as_u64().unwrap() as usize;
        let d = deflated_sharpe_ratio(&all[best], n, variance).unwrap();
        check("E[max SR]", d.expected_max_sharpe, num(&case["expected_max_sharpe"]));
        check("PSR(0)", d.probabilistic_sharpe, num(&case["probabilistic_sharpe"]));
        check("DSR", d.deflated_sharpe, num(&case["deflated_sharpe"]));
    }
    for pair in fx["psr_at_benchmarks"].as_array().unwrap() {
        let got = probabilistic_sharpe_ratio(&all[best], num(&pair[0])).unwrap();
        check("PSR(SR*)", got, num(&pair[1]));
    }
    eprintln!("deflated Sharpe: worst relative difference {worst:e}");
}

#[test]
fn pbo_matches_numpy_itertools_cscv() {
    let fx = load("pbo.json");
    let m = trial_matrix();
    assert_eq!(m.len() as u64, fx["rows"].as_u64().unwrap());
    let mut worst = 0.0_f64;
    for case in fx["cases"].as_array().unwrap() {
        let blocks = case["blocks"].as_u64().unwrap() as usize;
        let metric = match case["metric"].as_str().unwrap() {
            "sharpe" => CscvMetric::Sharpe,
            "mean" => CscvMetric::Mean,
            other => panic!("metric {other}"),
        };
        let r = probability_of_backtest_overfitting(&m, &CscvConfig { blocks, metric }).unwrap();
        let name = format!("S = {blocks}, {metric:?}");
        assert_eq!(r.splits.len() as u64, case["combinations"].as_u64().unwrap(), "{name}");
        // The PBO is a count over the splits: equal, not close.
        assert_eq!(r.pbo, num(&case["pbo"]), "{name}: PBO");
        let best: Vec<u64> = case["best"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let logits = nums(&case["logits"]);
        for (i, split) in r.splits.iter().enumerate() {
            assert_eq!(split.best_trial as u64, best[i], "{name}: split {i} best trial");
            worst = worst.max(rel(split.logit, logits[i], 1e-300));
            assert_close(&format!("{name}: split {i} logit"), split.logit, logits[i], 1e-9);
        }
        if let (Some(is), Some(oos)) = (case.get("in_sample"), case.get("out_of_sample")) {
            let (is, oos) = (nums(is), nums(oos));
            for (i, split) in r.splits.iter().enumerate() {
                worst = worst.max(rel(split.in_sample, is[i], 1e-300));
                worst = worst.max(rel(split.out_of_sample, oos[i], 1e-300));
                // Means of returns are ~1e-6: relative to the value itself.
                assert!(
                    rel(split.in_sample, is[i], 1e-300) <= 1e-9,
                    "{name}: split {i} in-sample"
                );
                assert!(
                    rel(split.out_of_sample, oos[i], 1e-300) <= 1e-9,
                    "{name}: split {i} out-of-sample"
                );
            }
        }
        eprintln!("{name}: PBO {} over {} splits", r.pbo, r.splits.len());
    }
    eprintln!("PBO: worst relative difference {worst:e}");
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_str().expect("decimal string").parse().expect("u64"))
        .collect()
}

#[test]
fn monte_carlo_matches_python() {
    let fx = load("monte_carlo.json");
    let initial = num(&fx["initial_equity"]);
    let trades = nums(&fx["trades"]);
    let mut worst = 0.0_f64;

    // The generator, bit for bit.
    let mut rng = Xoshiro256StarStar::new(7);
    let first: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
    assert_eq!(first, u64s(&fx["xoshiro_seed_7"]));
    let bounds = [1_u64, 2, 3, 10, 1000, (1 << 63) + 5];
    let below: Vec<u64> = bounds.iter().map(|&n| rng.below(n)).collect();
    assert_eq!(below, u64s(&fx["below_after"]));

    // The statistics of the sequence as given.
    let seq = sequence_stats(initial, &trades).unwrap();
    let want = &fx["sequence"];
    for (name, got) in [
        ("final_equity", seq.final_equity),
        ("max_drawdown", seq.max_drawdown),
        ("max_drawdown_pct", seq.max_drawdown_pct),
    ] {
        worst = worst.max(rel(got, num(&want[name]), 1e-300));
        assert_close(name, got, num(&want[name]), 1e-9);
    }
    assert_eq!(
        seq.longest_losing_streak as u64,
        want["longest_losing_streak"].as_u64().unwrap()
    );

    // numpy.percentile of fixed lists.
    for (list, pairs) in fx["percentiles"].as_object().unwrap() {
        let values = if list == "trades" {
            trades.clone()
        } else {
            vec![3.0, -1.5, 7.25, 0.0, 2.0, 10.0, -4.0]
        };
        for pair in pairs.as_array().unwrap() {
            let (p, want) = (num(&pair[0]), num(&pair[1]));
            let got = percentile(&values, p).unwrap();
            worst = worst.max(rel(got, want, 1.0));
            assert_close(&format!("{list}: percentile {p}"), got, want, 1e-12);
        }
    }

    // Whole runs with the same generator.
    let mut check = |name: &str, got: &Distribution, want: &Value| {
        for (field, g) in [("mean", got.mean), ("min", got.min), ("max", got.max)] {
            worst = worst.max(rel(g, num(&want[field]), 1.0));
            assert_close(&format!("{name} {field}"), g, num(&want[field]), 1e-9);
        }
        let pairs = want["percentiles"].as_array().unwrap();
        assert_eq!(got.percentiles.len(), pairs.len());
        for (g, pair) in got.percentiles.iter().zip(pairs) {
            assert_eq!(g.percentile, num(&pair[0]));
            worst = worst.max(rel(g.value, num(&pair[1]), 1.0));
            assert_close(&format!("{name} p{}", g.percentile), g.value, num(&pair[1]), 1e-9);
        }
    };
    for run in fx["runs"].as_array().unwrap() {
        let resampling = match run["mode"].as_str().unwrap() {
            "bootstrap" => Resampling::Bootstrap,
            "permutation" => Resampling::Permutation,
            other => panic!("mode {other}"),
        };
        let pcts: Vec<f64> = run["final_equity"]["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| num(&pair[0]))
            .collect();
        let config = MonteCarloConfig {
            runs: run["runs"].as_u64().unwrap() as usize,
            seed: run["seed"].as_u64().unwrap(),
            resampling,
            percentiles: pcts,
        };
        let mc = monte_carlo(&trades, initial, &config).unwrap();
        let mode = format!("{resampling:?}");
        check(&format!("{mode} final equity"), &mc.final_equity, &run["final_equity"]);
        check(&format!("{mode} max drawdown"), &mc.max_drawdown, &run["max_drawdown"]);
        check(
            &format!("{mode} max drawdown %"),
            &mc.max_drawdown_pct,
            &run["max_drawdown_pct"],
        );
        check(
            &format!("{mode} losing streak"),
            &mc.longest_losing_streak,
            &run["longest_losing_streak"],
        );
        eprintln!(
            "{mode}: final equity p5 {:.2} p50 {:.2} p95 {:.2}; max drawdown % p50 {:.2} p95 {:.2}; streak p95 {}",
            mc.final_equity.percentiles[0].value,
            mc.final_equity.percentiles[2].value,
            mc.final_equity.percentiles[4].value,
            mc.max_drawdown_pct.percentiles[2].value,
            mc.max_drawdown_pct.percentiles[4].value,
            mc.longest_losing_streak.percentiles[4].value,
        );
    }
    eprintln!("Monte Carlo: worst relative difference {worst:e}");
}
