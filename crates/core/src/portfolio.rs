//! Portfolio analytics: correlation matrices across symbols and exposure
//! checks of open positions (pure functions; the `tradeterm-tools` wrappers
//! fetch the terminal data).
//!
//! # Correlation
//!
//! [`correlation_matrix`] takes one close series per symbol as
//! `(bar open time, close)` pairs, keeps the times present in **every**
//! series (the intersection), and correlates the **log returns**
//! `ln(close[t] / close[t-1])` between consecutive aligned times. Pearson is
//! the plain sample correlation of the returns; Spearman is Pearson on their
//! ranks (ties share their average rank). A series whose returns have zero
//! variance (a constant price) has no defined correlation: its row and
//! column, diagonal included, are `None`.
//!
//! # Exposure
//!
//! [`assess_exposure`] splits each position (and an optional proposed trade)
//! into its two currency legs: buying `v` lots of `BASE/QUOTE` with a
//! contract size `c` at price `p` is `+v·c` units of `BASE` and `−v·c·p`
//! units of `QUOTE` (CFDs: the instrument itself is the base "currency").
//! Amounts are converted to the account currency with the rates the caller
//! supplies; a currency without a rate is reported as unconverted, never
//! guessed. Gross exposure is the sum of the positions' notionals; net
//! exposure is the sum of the absolute net amounts of every currency other
//! than the account currency. Correlated concentration groups symbols whose
//! direction-adjusted correlation reaches a threshold. The verdict
//! (`proceed`, `caution`, `block`) compares those figures, in percent of
//! equity, with [`ExposureLimits`].
//!
//! # Example
//!
//! ```
//! use tradeterm_core::portfolio::{log_returns, pearson};
//!
//! let a = log_returns(&[100.0, 101.0, 100.5, 102.0, 103.0]);
//! let b = log_returns(&[50.0, 50.5, 50.25, 51.0, 51.5]); // the same moves at half the price
//! let r = pearson(&a, &b).ok_or("undefined correlation")?;
//! assert!((r - 1.0).abs() < 1e-9);
//! assert_eq!(pearson(&a, &[0.0; 4]), None); // zero variance: undefined, not 0
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::account::Side;
use crate::error::CoreError;
use crate::time::UnixMs;

/// Fewest symbols of a correlation matrix.
pub const MIN_SYMBOLS: usize = 2;
/// Most symbols of a correlation matrix.
pub const MAX_SYMBOLS: usize = 12;
/// Fewest aligned log returns a correlation is computed from.
pub const MIN_RETURNS: usize = 10;

/// How correlations are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CorrelationMethod {
    /// Pearson's linear correlation of the log returns.
    #[default]
    Pearson,
    /// Spearman's rank correlation of the log returns (Pearson on ranks,
    /// ties averaged): robust to outliers and to non-linear but monotonic
    /// relationships.
    Spearman,
}

impl CorrelationMethod {
    /// Lower-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pearson => "pearson",
            Self::Spearman => "spearman",
        }
    }
}

/// An N×N correlation matrix of log returns over aligned bar times.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CorrelationMatrix {
    /// Row `i`, column `j`: correlation of series `i` with series `j`, in
    /// [-1, 1]; symmetric, 1 on the diagonal; `None` for a series whose
    /// returns have zero variance.
    pub matrix: Vec<Vec<Option<f64>>>,
    /// Aligned log returns each correlation was computed from.
    pub returns: usize,
    /// Open time of the first aligned bar (its close is the base of the first return).
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub from: UnixMs,
    /// Open time of the last aligned bar.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub to: UnixMs,
}

/// Checks one close series: times strictly increasing, prices finite and positive.
fn check_series(i: usize, s: &[(UnixMs, f64)]) -> Result<(), CoreError> {
    for (k, &(t, p)) in s.iter().enumerate() {
        if !p.is_finite() || p <= 0.0 {
            return Err(CoreError::InvalidInput(format!(
                "series {i}: price {p} at index {k} is not a finite positive number"
            )));
        }
        if k > 0 && t <= s[k - 1].0 {
            return Err(CoreError::InvalidInput(format!(
                "series {i}: times must be strictly increasing (index {k})"
            )));
        }
    }
    Ok(())
}

/// Log returns `ln(p[k] / p[k-1])` of positive prices (one fewer than the prices).
pub fn log_returns(prices: &[f64]) -> Vec<f64> {
    prices.windows(2).map(|w| (w[1] / w[0]).ln()).collect()
}

/// Pearson correlation of two equally long samples (two-pass, mean-centred).
/// `None` when the lengths differ, fewer than 2 values are given, a value is
/// not finite or either sample has zero variance. The result is clamped to
/// [-1, 1] against rounding.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    let r = sxy / (sxx.sqrt() * syy.sqrt());
    r.is_finite().then(|| r.clamp(-1.0, 1.0))
}

/// Ranks 1..=n of the values, ties sharing their average rank.
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut out = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            out[k] = avg;
        }
        i = j + 1;
    }
    out
}

/// Spearman rank correlation: [`pearson`] on the [`ranks`]. Same `None` cases.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    pearson(&ranks(x), &ranks(y))
}

/// Correlation matrix of the log returns of `series` (one `(time, close)`
/// series per symbol, oldest first), aligned on the bar times common to all.
///
/// # Errors
/// [`CoreError::InvalidParameter`] for fewer than [`MIN_SYMBOLS`] or more
/// than [`MAX_SYMBOLS`] series; [`CoreError::InvalidInput`] for an unordered
/// series, a non-finite or non-positive price, or fewer than
/// [`MIN_RETURNS`] aligned returns.
pub fn correlation_matrix(
    series: &[&[(UnixMs, f64)]],
    method: CorrelationMethod,
) -> Result<CorrelationMatrix, CoreError> {
    if series.len() < MIN_SYMBOLS || series.len() > MAX_SYMBOLS {
        return Err(CoreError::param(
            "symbols",
            format!(
                "between {MIN_SYMBOLS} and {MAX_SYMBOLS} series are needed, got {}",
                series.len()
            ),
        ));
    }
    for (i, s) in series.iter().enumerate() {
        check_series(i, s)?;
    }
    // Intersection of the times: those of the first series found in every other.
    let times: Vec<UnixMs> = series[0]
        .iter()
        .map(|&(t, _)| t)
        .filter(|t| {
            series[1..]
                .iter()
                .all(|s| s.binary_search_by_key(t, |&(u, _)| u).is_ok())
        })
        .collect();
    let returns = times.len().saturating_sub(1);
    if returns < MIN_RETURNS {
        return Err(CoreError::InvalidInput(format!(
            "only {returns} aligned returns (bar times common to every symbol); at least {MIN_RETURNS} are needed"
        )));
    }
    let rets: Vec<Vec<f64>> = series
        .iter()
        .map(|s| {
            let closes: Vec<f64> = times
                .iter()
                .filter_map(|t| s.binary_search_by_key(t, |&(u, _)| u).ok().map(|k| s[k].1))
                .collect();
            log_returns(&closes)
        })
        .collect();
    let corr = |a: &[f64], b: &[f64]| match method {
        CorrelationMethod::Pearson => pearson(a, b),
        CorrelationMethod::Spearman => spearman(a, b),
    };
    let n = series.len();
    let mut matrix = vec![vec![None; n]; n];
    for i in 0..n {
        // The diagonal is 1 only where the correlation is defined (non-zero variance).
        matrix[i][i] = corr(&rets[i], &rets[i]).map(|_| 1.0);
        for j in i + 1..n {
            let r = corr(&rets[i], &rets[j]);
            matrix[i][j] = r;
            matrix[j][i] = r;
        }
    }
    Ok(CorrelationMatrix {
        matrix,
        returns,
        from: times[0],
        to: times[times.len() - 1],
    })
}

/// One off-diagonal entry of a correlation matrix.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CorrelatedPair {
    /// First symbol.
    pub a: String,
    /// Second symbol.
    pub b: String,
    /// Correlation of their returns.
    pub correlation: f64,
}

/// The defined off-diagonal pairs (`i < j`) of `matrix`, highest correlation
/// first (ties keep matrix order). Undefined (`None`) pairs are left out.
pub fn ranked_pairs(symbols: &[String], matrix: &[Vec<Option<f64>>]) -> Vec<CorrelatedPair> {
    let mut pairs = Vec::new();
    for (i, row) in matrix.iter().enumerate() {
        for (j, r) in row.iter().enumerate().skip(i + 1) {
            if let (Some(r), Some(a), Some(b)) = (r, symbols.get(i), symbols.get(j)) {
                pairs.push(CorrelatedPair {
                    a: a.clone(),
                    b: b.clone(),
                    correlation: *r,
                });
            }
        }
    }
    pairs.sort_by(|x, y| y.correlation.total_cmp(&x.correlation));
    pairs
}

/// A position (or a proposed trade) as the exposure check sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposureLeg {
    /// Position ticket; `None` for a proposed trade.
    pub ticket: Option<u64>,
    /// Instrument.
    pub symbol: String,
    /// Long or short.
    pub side: Side,
    /// Volume in lots.
    pub volume: f64,
    /// Units per lot.
    pub contract_size: f64,
    /// Price the notional is valued at (quote currency per base unit).
    pub price: f64,
    /// Base currency (the instrument itself for CFDs).
    pub base: String,
    /// Quote / profit currency.
    pub quote: String,
}

/// Thresholds of the exposure verdict, in percent of equity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct ExposureLimits {
    /// `caution` when gross exposure exceeds this percentage of equity.
    pub caution_gross_pct: f64,
    /// `block` when gross exposure exceeds this percentage of equity.
    pub block_gross_pct: f64,
    /// `caution` when the largest concentration (one currency's net
    /// exposure, or one group of correlated positions) exceeds this
    /// percentage of equity.
    pub caution_concentration_pct: f64,
    /// `block` when the largest concentration exceeds this percentage of equity.
    pub block_concentration_pct: f64,
    /// Absolute correlation from which two symbols count as correlated.
    pub correlation_threshold: f64,
}

impl Default for ExposureLimits {
    fn default() -> Self {
        Self {
            caution_gross_pct: 500.0,
            block_gross_pct: 1_000.0,
            caution_concentration_pct: 300.0,
            block_concentration_pct: 600.0,
            correlation_threshold: 0.7,
        }
    }
}

/// Bounds of every exposure percentage threshold.
pub const LIMIT_PCT_RANGE: (f64, f64) = (1.0, 10_000.0);
/// Bounds of the correlation threshold.
pub const CORRELATION_THRESHOLD_RANGE: (f64, f64) = (0.3, 0.99);

impl ExposureLimits {
    /// Checks the bounds: every percentage in [`LIMIT_PCT_RANGE`], the
    /// correlation threshold in [`CORRELATION_THRESHOLD_RANGE`]. A caution
    /// level at or above its block level is valid (see [`Self::warnings`]).
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] naming the first offending field.
    pub fn validate(&self) -> Result<(), CoreError> {
        let (lo, hi) = LIMIT_PCT_RANGE;
        for (name, v) in [
            ("caution_gross_pct", self.caution_gross_pct),
            ("block_gross_pct", self.block_gross_pct),
            ("caution_concentration_pct", self.caution_concentration_pct),
            ("block_concentration_pct", self.block_concentration_pct),
        ] {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return Err(CoreError::param(name, format!("must be between {lo} and {hi}")));
            }
        }
        let (clo, chi) = CORRELATION_THRESHOLD_RANGE;
        let c = self.correlation_threshold;
        if !(c.is_finite() && (clo..=chi).contains(&c)) {
            return Err(CoreError::param(
                "correlation_threshold",
                format!("must be between {clo} and {chi}"),
            ));
        }
        Ok(())
    }
}

impl ExposureLimits {
    /// Notes on thresholds that behave in a way a trader may not expect: a
    /// caution level at or above its block level never raises `caution` on
    /// its own, since `block` takes precedence above the block level and
    /// nothing is left between the two. Empty for the usual ordering.
    pub fn warnings(&self) -> Vec<String> {
        [
            ("gross", self.caution_gross_pct, self.block_gross_pct),
            ("concentration", self.caution_concentration_pct, self.block_concentration_pct),
        ]
        .into_iter()
        .filter(|(_, caution, block)| caution >= block)
        .map(|(what, caution, block)| {
            format!(
                "caution_{what}_pct ({caution}%) is not below block_{what}_pct ({block}%): above {block}% the verdict is \
                 `block` (it takes precedence), so the {what} caution level never raises `caution` on its own"
            )
        })
        .collect()
    }
}

/// Correlations between the symbols of the legs, as computed by [`correlation_matrix`].
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolCorrelations {
    /// Symbols, in matrix order.
    pub symbols: Vec<String>,
    /// The matrix.
    pub matrix: Vec<Vec<Option<f64>>>,
}

impl SymbolCorrelations {
    fn get(&self, a: &str, b: &str) -> Option<f64> {
        let i = self.symbols.iter().position(|s| s == a)?;
        let j = self.symbols.iter().position(|s| s == b)?;
        self.matrix.get(i)?.get(j).copied().flatten()
    }
}

/// Everything [`assess_exposure`] needs.
#[derive(Debug, Clone, Copy)]
pub struct ExposureRequest<'a> {
    /// Open positions, then the proposed trade if any (`ticket: None`).
    pub legs: &'a [ExposureLeg],
    /// Account equity, account currency.
    pub equity: f64,
    /// Account currency.
    pub account_currency: &'a str,
    /// Rate converting one unit of a currency into the account currency,
    /// by currency; the account currency itself needs no entry.
    pub rates: &'a BTreeMap<String, f64>,
    /// Correlations of the legs' symbols, if they could be computed.
    pub correlations: Option<&'a SymbolCorrelations>,
    /// Verdict thresholds.
    pub limits: ExposureLimits,
}

/// Verdict of an exposure check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Within every threshold.
    Proceed,
    /// A caution threshold is exceeded, or part of the exposure could not be assessed.
    Caution,
    /// A block threshold is exceeded, or the account has no positive equity.
    Block,
}

/// One position's or the proposed trade's notional.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LegExposure {
    /// Position ticket; `null` for the proposed trade.
    pub ticket: Option<u64>,
    /// Whether this is the proposed trade.
    pub proposed: bool,
    /// Instrument.
    pub symbol: String,
    /// `buy` or `sell`.
    pub side: Side,
    /// Volume in lots.
    pub volume: f64,
    /// Price the notional is valued at.
    pub price: f64,
    /// Notional `volume × contract_size × price` in the quote currency.
    pub notional_quote: f64,
    /// Quote currency.
    pub quote_currency: String,
    /// Notional in the account currency; `null` when the quote currency could not be converted.
    pub notional: Option<f64>,
    /// `notional / equity × 100`; `null` when not converted.
    pub pct_equity: Option<f64>,
}

/// Net exposure to one currency (or CFD instrument).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CurrencyExposure {
    /// Currency code, or the instrument name for CFDs whose base is the instrument.
    pub currency: String,
    /// Net amount in units of that currency: positive long, negative short.
    pub amount: f64,
    /// The amount in the account currency; `null` when no rate converts it.
    pub amount_account: Option<f64>,
    /// `amount_account / equity × 100` (signed); `null` when not converted.
    pub pct_equity: Option<f64>,
    /// Symbols contributing to it.
    pub symbols: Vec<String>,
}

/// Two symbols held in directions whose returns move together.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExposurePair {
    /// First symbol.
    pub a: String,
    /// Second symbol.
    pub b: String,
    /// Correlation of their returns.
    pub correlation: f64,
    /// Correlation times the signs of the net directions held: positive means
    /// the two positions gain and lose together (risk adds up), negative means
    /// they offset each other (a hedge).
    pub effective_correlation: f64,
}

/// Symbols linked by effective correlations at or above the threshold: in
/// effect one bet.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CorrelatedGroup {
    /// Symbols of the group.
    pub symbols: Vec<String>,
    /// Sum of the group's position notionals, account currency (converted ones only).
    pub notional: f64,
    /// `notional / equity × 100`.
    pub pct_equity: f64,
}

/// Something that could not be converted to the account currency.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Unconverted {
    /// Currency without a conversion rate.
    pub currency: String,
    /// Symbols whose exposure it affects.
    pub symbols: Vec<String>,
}

/// Result of [`assess_exposure`].
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExposureReport {
    /// Every position, then the proposed trade.
    pub legs: Vec<LegExposure>,
    /// Net exposure per currency, largest absolute share of equity first
    /// (unconverted ones last).
    pub currencies: Vec<CurrencyExposure>,
    /// Sum of the converted notionals, account currency.
    pub gross_exposure: f64,
    /// `gross_exposure / equity × 100`.
    pub gross_pct_equity: f64,
    /// Sum of the absolute net amounts of every converted currency other
    /// than the account currency, account currency.
    pub net_exposure: f64,
    /// `net_exposure / equity × 100`.
    pub net_pct_equity: f64,
    /// Symbol pairs whose absolute correlation reaches the threshold.
    pub correlated_pairs: Vec<ExposurePair>,
    /// Groups of two or more symbols moving together, largest first.
    pub correlated_groups: Vec<CorrelatedGroup>,
    /// Largest concentration: the larger of the largest absolute currency
    /// net exposure (account currency excluded) and the largest correlated
    /// group, in percent of equity.
    pub concentration_pct_equity: f64,
    /// What the concentration is (`currency EUR`, `correlated group EURUSD+GBPUSD`); `null` without exposure.
    pub concentration_source: Option<String>,
    /// Currencies without a conversion rate to the account currency.
    pub unconverted: Vec<Unconverted>,
    /// `proceed`, `caution` or `block`.
    pub verdict: Verdict,
    /// Why, one sentence each; every threshold crossed is listed.
    pub reasons: Vec<String>,
    /// The thresholds applied.
    pub limits: ExposureLimits,
    /// Notes on the thresholds (a caution level not below its block level
    /// never fires on its own); empty for the usual ones.
    pub warnings: Vec<String>,
}

fn check_leg(k: usize, l: &ExposureLeg) -> Result<(), CoreError> {
    for (name, v) in [
        ("volume", l.volume),
        ("contract_size", l.contract_size),
        ("price", l.price),
    ] {
        if !v.is_finite() || v <= 0.0 {
            return Err(CoreError::InvalidInput(format!(
                "leg {k} ({}): {name} {v} is not a finite positive number",
                l.symbol
            )));
        }
    }
    if l.base.is_empty() || l.quote.is_empty() {
        return Err(CoreError::InvalidInput(format!(
            "leg {k} ({}): currencies missing",
            l.symbol
        )));
    }
    Ok(())
}

fn pct(amount: f64, equity: f64) -> f64 {
    amount / equity * 100.0
}

/// Splits the legs into currency exposures, measures gross, net and
/// correlated concentration against equity, and gives the verdict.
///
/// Rules, in percent of equity (`limits`): `block` when equity is not
/// positive, gross exposure exceeds `block_gross_pct`, or the largest
/// concentration exceeds `block_concentration_pct`; else `caution` when gross
/// exceeds `caution_gross_pct`, the concentration exceeds
/// `caution_concentration_pct`, or a currency could not be converted; else
/// `proceed`.
///
/// # Errors
/// [`CoreError::InvalidInput`] for a non-finite equity or rate, or a leg
/// with a non-finite or non-positive volume, contract size or price;
/// [`CoreError::InvalidParameter`] for limits out of bounds.
pub fn assess_exposure(req: &ExposureRequest<'_>) -> Result<ExposureReport, CoreError> {
    check_request(req)?;
    let account = AccountMoney {
        currency: req.account_currency,
        rates: req.rates,
        equity: req.equity,
    };
    let LegTotals {
        legs,
        by_currency,
        gross,
    } = leg_exposures(req.legs, &account);
    let CurrencyTotals {
        currencies,
        unconverted,
        net,
    } = currency_exposures(by_currency, &account);
    let held = SymbolsHeld::of(req.legs, &legs);
    let threshold = req.limits.correlation_threshold;
    let mut groups = UnionFind::new(held.symbols.len());
    let correlated_pairs = req
        .correlations
        .map(|correlations| correlated_pairs(correlations, &held, threshold, &mut groups))
        .unwrap_or_default();
    let correlated_groups = correlated_groups(&mut groups, &held, &account);
    let concentration = largest_concentration(&currencies, &correlated_groups, req.account_currency);

    let gross_pct = account.share(gross).unwrap_or(0.0);
    let net_pct = account.share(net).unwrap_or(0.0);
    let conc_pct = concentration
        .as_ref()
        .and_then(|(value, _)| account.share(*value))
        .unwrap_or(0.0);
    let (verdict, reasons) = judge(
        req,
        &Measured {
            gross_pct,
            conc_pct,
            concentration: concentration.as_ref().map(|(_, what)| what.as_str()),
        },
        &unconverted,
    );

    let report = ExposureReport {
        legs,
        currencies,
        gross_exposure: gross,
        gross_pct_equity: gross_pct,
        net_exposure: net,
        net_pct_equity: net_pct,
        correlated_pairs,
        correlated_groups,
        concentration_pct_equity: conc_pct,
        concentration_source: concentration.map(|(_, what)| what),
        unconverted,
        verdict,
        reasons,
        limits: req.limits,
        warnings: req.limits.warnings(),
    };
    if let Some(field) = non_finite_field(&report) {
        return Err(CoreError::InvalidInput(format!(
            "`{field}` is not a finite number: the volumes, contract sizes, prices or rates are too large to measure"
        )));
    }
    Ok(report)
}

/// The first figure of a report that is not a finite number (an overflow of
/// `volume × contract_size × price × rate`, or a share of a tiny equity), so
/// that no report carries one (JSON has no infinity: it would be `null`
/// where a number is promised).
fn non_finite_field(report: &ExposureReport) -> Option<&'static str> {
    let bad = |x: f64| !x.is_finite();
    let bad_opt = |x: Option<f64>| x.is_some_and(bad);
    for leg in &report.legs {
        if bad(leg.notional_quote) {
            return Some("notional_quote");
        }
        if bad_opt(leg.notional) {
            return Some("notional");
        }
        if bad_opt(leg.pct_equity) {
            return Some("pct_equity");
        }
    }
    for currency in &report.currencies {
        if bad(currency.amount) {
            return Some("amount");
        }
        if bad_opt(currency.amount_account) {
            return Some("amount_account");
        }
        if bad_opt(currency.pct_equity) {
            return Some("pct_equity");
        }
    }
    for group in &report.correlated_groups {
        if bad(group.notional) || bad(group.pct_equity) {
            return Some("correlated_groups");
        }
    }
    [
        ("gross_exposure", report.gross_exposure),
        ("gross_pct_equity", report.gross_pct_equity),
        ("net_exposure", report.net_exposure),
        ("net_pct_equity", report.net_pct_equity),
        ("concentration_pct_equity", report.concentration_pct_equity),
    ]
    .into_iter()
    .find(|(_, x)| bad(*x))
    .map(|(name, _)| name)
}

/// Rejects bad limits, a non-finite equity, a bad rate or a bad leg.
fn check_request(req: &ExposureRequest<'_>) -> Result<(), CoreError> {
    req.limits.validate()?;
    if !req.equity.is_finite() {
        return Err(CoreError::InvalidInput("equity is not a finite number".into()));
    }
    for (currency, rate) in req.rates {
        if !rate.is_finite() || *rate <= 0.0 {
            return Err(CoreError::InvalidInput(format!(
                "rate of {currency} is not a finite positive number"
            )));
        }
    }
    for (index, leg) in req.legs.iter().enumerate() {
        check_leg(index, leg)?;
    }
    Ok(())
}

/// The account an exposure is measured against: converts amounts into its
/// currency and into percent of its equity.
struct AccountMoney<'a> {
    currency: &'a str,
    rates: &'a BTreeMap<String, f64>,
    equity: f64,
}

impl AccountMoney<'_> {
    /// Rate converting one unit of `currency` into the account currency, if known.
    fn rate(&self, currency: &str) -> Option<f64> {
        if currency.eq_ignore_ascii_case(self.currency) {
            Some(1.0)
        } else {
            self.rates.get(currency).copied()
        }
    }

    fn has_positive_equity(&self) -> bool {
        self.equity > 0.0
    }

    /// `amount` in percent of equity; none without positive equity.
    fn share(&self, amount: f64) -> Option<f64> {
        self.has_positive_equity().then(|| pct(amount, self.equity))
    }
}

/// Net amount by currency (in that currency) and the symbols that hold it.
type ByCurrency = BTreeMap<String, (f64, Vec<String>)>;

/// The legs' notionals, what they hold per currency, and the gross exposure.
struct LegTotals {
    legs: Vec<LegExposure>,
    by_currency: ByCurrency,
    /// Sum of the notionals that could be converted, account currency.
    gross: f64,
}

/// Each leg's notional, and its base and quote amounts added to the currencies.
fn leg_exposures(legs: &[ExposureLeg], account: &AccountMoney<'_>) -> LegTotals {
    let mut totals = LegTotals {
        legs: Vec::with_capacity(legs.len()),
        by_currency: BTreeMap::new(),
        gross: 0.0,
    };
    let mut add = |currency: &str, amount: f64, symbol: &str| {
        let entry = totals
            .by_currency
            .entry(currency.to_owned())
            .or_insert((0.0, Vec::new()));
        entry.0 += amount;
        if !entry.1.iter().any(|held| held == symbol) {
            entry.1.push(symbol.to_owned());
        }
    };
    for leg in legs {
        let units = leg.volume * leg.contract_size;
        let notional_quote = units * leg.price;
        add(&leg.base, leg.side.sign() * units, &leg.symbol);
        add(&leg.quote, -leg.side.sign() * notional_quote, &leg.symbol);
        let notional = account.rate(&leg.quote).map(|rate| notional_quote * rate);
        if let Some(notional) = notional {
            totals.gross += notional;
        }
        totals.legs.push(LegExposure {
            ticket: leg.ticket,
            proposed: leg.ticket.is_none(),
            symbol: leg.symbol.clone(),
            side: leg.side,
            volume: leg.volume,
            price: leg.price,
            notional_quote,
            quote_currency: leg.quote.clone(),
            notional,
            pct_equity: notional.and_then(|notional| account.share(notional)),
        });
    }
    totals
}

/// The currency exposures, the currencies that could not be converted, and
/// the net exposure (the converted amounts of the currencies other than the
/// account's, in absolute value).
struct CurrencyTotals {
    currencies: Vec<CurrencyExposure>,
    unconverted: Vec<Unconverted>,
    net: f64,
}

/// One exposure per currency, largest converted amount first, unconverted last.
fn currency_exposures(by_currency: ByCurrency, account: &AccountMoney<'_>) -> CurrencyTotals {
    let mut totals = CurrencyTotals {
        currencies: Vec::new(),
        unconverted: Vec::new(),
        net: 0.0,
    };
    for (currency, (amount, symbols)) in by_currency {
        let amount_account = account.rate(&currency).map(|rate| amount * rate);
        match amount_account {
            Some(converted) if !currency.eq_ignore_ascii_case(account.currency) => totals.net += converted.abs(),
            Some(_) => {}
            None => totals.unconverted.push(Unconverted {
                currency: currency.clone(),
                symbols: symbols.clone(),
            }),
        }
        totals.currencies.push(CurrencyExposure {
            currency,
            amount,
            amount_account,
            pct_equity: amount_account.and_then(|converted| account.share(converted)),
            symbols,
        });
    }
    totals.currencies.sort_by(|a, b| {
        let key = |exposure: &CurrencyExposure| exposure.amount_account.map_or(-1.0, f64::abs);
        key(b).total_cmp(&key(a))
    });
    totals
}

/// The symbols of the legs in first-seen order, with the net direction held
/// (signed volume) and the converted notional of each.
struct SymbolsHeld {
    symbols: Vec<String>,
    net_direction: Vec<f64>,
    notional: Vec<f64>,
}

impl SymbolsHeld {
    fn of(legs: &[ExposureLeg], exposures: &[LegExposure]) -> Self {
        let mut held = Self {
            symbols: Vec::new(),
            net_direction: Vec::new(),
            notional: Vec::new(),
        };
        for (leg, exposure) in legs.iter().zip(exposures) {
            let index = match held.symbols.iter().position(|symbol| symbol == &leg.symbol) {
                Some(index) => index,
                None => {
                    held.symbols.push(leg.symbol.clone());
                    held.net_direction.push(0.0);
                    held.notional.push(0.0);
                    held.symbols.len() - 1
                }
            };
            held.net_direction[index] += leg.side.sign() * leg.volume;
            held.notional[index] += exposure.notional.unwrap_or(0.0);
        }
        held
    }
}

/// Disjoint sets of symbol indices (path halving), for the correlated groups.
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(len: usize) -> Self {
        Self {
            parent: (0..len).collect(),
        }
    }

    fn root(&mut self, mut index: usize) -> usize {
        while self.parent[index] != index {
            self.parent[index] = self.parent[self.parent[index]];
            index = self.parent[index];
        }
        index
    }

    fn join(&mut self, a: usize, b: usize) {
        let (root_a, root_b) = (self.root(a), self.root(b));
        self.parent[root_a] = root_b;
    }
}

/// The pairs of held symbols correlated at `threshold` or more in absolute
/// value, joining in `groups` those whose correlation on the directions held
/// (`effective_correlation`) reaches it.
fn correlated_pairs(
    correlations: &SymbolCorrelations,
    held: &SymbolsHeld,
    threshold: f64,
    groups: &mut UnionFind,
) -> Vec<ExposurePair> {
    let symbols = &held.symbols;
    let mut pairs = Vec::new();
    for first in 0..symbols.len() {
        for second in first + 1..symbols.len() {
            let Some(correlation) = correlations.get(&symbols[first], &symbols[second]) else {
                continue;
            };
            if correlation.abs() < threshold {
                continue;
            }
            let same_direction = held.net_direction[first].signum() * held.net_direction[second].signum();
            let effective = correlation * same_direction;
            pairs.push(ExposurePair {
                a: symbols[first].clone(),
                b: symbols[second].clone(),
                correlation,
                effective_correlation: effective,
            });
            if effective >= threshold {
                groups.join(first, second);
            }
        }
    }
    pairs
}

/// The groups of two or more symbols joined in `groups`, largest notional first.
fn correlated_groups(groups: &mut UnionFind, held: &SymbolsHeld, account: &AccountMoney<'_>) -> Vec<CorrelatedGroup> {
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for index in 0..held.symbols.len() {
        let root = groups.root(index);
        members.entry(root).or_default().push(index);
    }
    let mut correlated: Vec<CorrelatedGroup> = members
        .into_values()
        .filter(|group| group.len() >= 2)
        .map(|group| {
            let notional: f64 = group.iter().map(|&index| held.notional[index]).sum();
            CorrelatedGroup {
                symbols: group.iter().map(|&index| held.symbols[index].clone()).collect(),
                notional,
                pct_equity: account.share(notional).unwrap_or(0.0),
            }
        })
        .collect();
    correlated.sort_by(|a, b| b.notional.total_cmp(&a.notional));
    correlated
}

/// The largest concentration, in account currency, and what holds it: one
/// currency other than the account's, or one correlated group (the first
/// seen wins a tie).
fn largest_concentration(
    currencies: &[CurrencyExposure],
    groups: &[CorrelatedGroup],
    account_currency: &str,
) -> Option<(f64, String)> {
    let mut concentration: Option<(f64, String)> = None;
    let mut consider = |value: f64, what: String| {
        if value > 0.0 && concentration.as_ref().is_none_or(|(largest, _)| value > *largest) {
            concentration = Some((value, what));
        }
    };
    for exposure in currencies {
        if let (Some(amount), false) = (
            exposure.amount_account,
            exposure.currency.eq_ignore_ascii_case(account_currency),
        ) {
            consider(amount.abs(), format!("currency {}", exposure.currency));
        }
    }
    for group in groups {
        consider(group.notional, format!("correlated group {}", group.symbols.join("+")));
    }
    concentration
}

/// The percentages the verdict is made from.
struct Measured<'a> {
    gross_pct: f64,
    conc_pct: f64,
    /// What holds the largest concentration, if anything does.
    concentration: Option<&'a str>,
}

/// The verdict and the reasons for it, in the order the rules are checked.
fn judge(req: &ExposureRequest<'_>, measured: &Measured<'_>, unconverted: &[Unconverted]) -> (Verdict, Vec<String>) {
    let acc = req.account_currency;
    let lim = req.limits;
    let Measured {
        gross_pct, conc_pct, ..
    } = *measured;
    let mut verdict = Verdict::Proceed;
    let mut reasons = Vec::new();
    let mut raise = |level: Verdict, reason: String| {
        verdict = verdict.max(level);
        reasons.push(reason);
    };
    if req.equity <= 0.0 {
        raise(
            Verdict::Block,
            format!(
                "equity is {:.2} {acc}: no positive equity to carry exposure",
                req.equity
            ),
        );
    }
    if gross_pct > lim.block_gross_pct {
        raise(
            Verdict::Block,
            format!(
                "gross exposure {gross_pct:.1}% of equity is above the block level of {}%",
                lim.block_gross_pct
            ),
        );
    } else if gross_pct > lim.caution_gross_pct {
        raise(
            Verdict::Caution,
            format!(
                "gross exposure {gross_pct:.1}% of equity is above the caution level of {}%",
                lim.caution_gross_pct
            ),
        );
    }
    if let Some(what) = measured.concentration {
        if conc_pct > lim.block_concentration_pct {
            raise(
                Verdict::Block,
                format!(
                    "{what} concentrates {conc_pct:.1}% of equity, above the block level of {}%",
                    lim.block_concentration_pct
                ),
            );
        } else if conc_pct > lim.caution_concentration_pct {
            raise(
                Verdict::Caution,
                format!(
                    "{what} concentrates {conc_pct:.1}% of equity, above the caution level of {}%",
                    lim.caution_concentration_pct
                ),
            );
        }
    }
    for missing in unconverted {
        raise(
            Verdict::Caution,
            format!(
                "no quote converts {} to {acc}: the exposure of {} is left out of the percentages",
                missing.currency,
                missing.symbols.join(", ")
            ),
        );
    }
    if reasons.is_empty() {
        reasons.push(if req.legs.is_empty() {
            "no open positions: nothing is exposed".to_owned()
        } else {
            format!(
                "gross exposure {gross_pct:.1}% and largest concentration {conc_pct:.1}% of equity are within the caution levels ({}% and {}%)",
                lim.caution_gross_pct, lim.caution_concentration_pct
            )
        });
    }
    (verdict, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal within 1e-12, relative to the larger magnitude (at least 1).
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    fn series(prices: &[f64]) -> Vec<(UnixMs, f64)> {
        prices
            .iter()
            .enumerate()
            .map(|(i, &p)| (i as i64 * 3_600_000, p))
            .collect()
    }

    /// Prices whose log returns are exactly `rets`, starting at 100.
    fn from_returns(rets: &[f64]) -> Vec<f64> {
        let mut p = vec![100.0];
        for r in rets {
            let last = *p.last().unwrap();
            p.push(last * r.exp());
        }
        p
    }

    const R: [f64; 12] = [
        0.01, -0.02, 0.015, 0.003, -0.007, 0.012, -0.004, 0.009, -0.011, 0.006, 0.002, -0.001,
    ];

    #[test]
    fn pearson_hand_computed() {
        // x = 1,2,3,4,5; y = 2,4,5,4,5: mean 3 and 4, sxy = 6, sxx = 10, syy = 6.
        let r = pearson(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 5.0, 4.0, 5.0]).unwrap();
        assert!(close(r, 6.0 / (10.0f64.sqrt() * 6.0f64.sqrt())), "{r}");
        assert!(close(r, 0.774_596_669_241_483_4), "{r}");
        assert!(close(pearson(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap(), -1.0));
        assert_eq!(pearson(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(pearson(&[1.0, 2.0], &[1.0]), None);
        assert_eq!(pearson(&[1.0], &[1.0]), None);
        assert_eq!(pearson(&[1.0, f64::NAN, 2.0], &[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn spearman_hand_computed() {
        assert_eq!(ranks(&[10.0, 30.0, 20.0, 20.0]), vec![1.0, 4.0, 2.5, 2.5]);
        // Monotonic but non-linear: Spearman 1, Pearson below 1.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [1.0, 8.0, 27.0, 64.0, 125.0];
        assert!(close(spearman(&x, &y).unwrap(), 1.0));
        assert!(pearson(&x, &y).unwrap() < 0.99);
        // y = 2,4,5,4,5 → ranks 1, 2.5, 4.5, 2.5, 4.5 (mean 3): sxy = 7, sxx = 10, syy = 9.
        let r = spearman(&x, &[2.0, 4.0, 5.0, 4.0, 5.0]).unwrap();
        assert!(close(r, 7.0 / 90.0f64.sqrt()), "{r}");
    }

    #[test]
    fn matrix_of_identical_inverse_and_scaled_series() {
        let a = series(&from_returns(&R));
        let neg: Vec<f64> = R.iter().map(|r| -r).collect();
        let b = series(&from_returns(&neg));
        // Scaled prices have identical log returns.
        let c: Vec<(UnixMs, f64)> = a.iter().map(|&(t, p)| (t, p * 1.7)).collect();
        let m = correlation_matrix(&[&a, &b, &c], CorrelationMethod::Pearson).unwrap();
        assert_eq!(m.returns, 12);
        assert_eq!((m.from, m.to), (0, 12 * 3_600_000));
        for i in 0..3 {
            assert_eq!(m.matrix[i][i], Some(1.0));
        }
        assert!(close(m.matrix[0][1].unwrap(), -1.0));
        assert!(close(m.matrix[0][2].unwrap(), 1.0));
        assert!(close(m.matrix[1][2].unwrap(), -1.0));
        let s = correlation_matrix(&[&a, &b, &c], CorrelationMethod::Spearman).unwrap();
        assert!(close(s.matrix[0][1].unwrap(), -1.0));
        assert!(close(s.matrix[0][2].unwrap(), 1.0));
    }

    #[test]
    fn matrix_hand_computed_on_known_returns() {
        // Returns x = 1..=10 % and y = [2,4,5,4,5] twice (scaled to %): compare with pearson on the returns.
        let x: Vec<f64> = (1..=10).map(|k| f64::from(k) / 100.0).collect();
        let y: Vec<f64> = [2.0, 4.0, 5.0, 4.0, 5.0, 2.0, 4.0, 5.0, 4.0, 5.0]
            .iter()
            .map(|v| v / 100.0)
            .collect();
        let a = series(&from_returns(&x));
        let b = series(&from_returns(&y));
        let m = correlation_matrix(&[&a, &b], CorrelationMethod::Pearson).unwrap();
        // By hand: mean x 0.055, mean y 0.04; in percent the deviations are
        // x: -4.5..4.5 step 1, y: -2,0,1,0,1,-2,0,1,0,1.
        let mx = x.iter().sum::<f64>() / 10.0;
        let my = y.iter().sum::<f64>() / 10.0;
        let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
        let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
        let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
        // sxx = 82.5e-4, syy = 12e-4, sxy = (9 - 2.5 - 0.5 - 1 + 2.5 + 4.5)e-4 = 12e-4.
        assert!((sxx - 0.00825).abs() < 1e-12 && (syy - 0.0012).abs() < 1e-12 && (sxy - 0.0012).abs() < 1e-12);
        let want = 0.0012 / (0.00825f64 * 0.0012).sqrt(); // 0.381385...
        let got = m.matrix[0][1].unwrap();
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        assert!((got - 0.381_385_2).abs() < 1e-6, "{got}");
    }

    #[test]
    fn alignment_uses_common_times_only() {
        let a = series(&from_returns(&R));
        // b lacks bar 5 and has two extra bars after the end.
        let mut b: Vec<(UnixMs, f64)> = a.iter().map(|&(t, p)| (t, p * 2.0)).collect();
        b.remove(5);
        b.push((13 * 3_600_000, 1.0));
        b.push((14 * 3_600_000, 2.0));
        let m = correlation_matrix(&[&a, &b], CorrelationMethod::Pearson).unwrap();
        assert_eq!(m.returns, 11, "13 bars, one missing in b: 12 common times");
        assert!(close(m.matrix[0][1].unwrap(), 1.0));
        assert_eq!(m.to, 12 * 3_600_000);
    }

    #[test]
    fn properties_symmetry_bounds_diagonal() {
        // Three pseudo-random walks from a fixed LCG.
        let mut seed = 42u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) / 50.0
        };
        let walks: Vec<Vec<(UnixMs, f64)>> = (0..4)
            .map(|_| {
                let r: Vec<f64> = (0..300).map(|_| next()).collect();
                series(&from_returns(&r))
            })
            .collect();
        let refs: Vec<&[(UnixMs, f64)]> = walks.iter().map(Vec::as_slice).collect();
        for method in [CorrelationMethod::Pearson, CorrelationMethod::Spearman] {
            let m = correlation_matrix(&refs, method).unwrap();
            for i in 0..4 {
                assert_eq!(m.matrix[i][i], Some(1.0));
                for j in 0..4 {
                    let r = m.matrix[i][j].unwrap();
                    assert!((-1.0..=1.0).contains(&r));
                    assert_eq!(m.matrix[i][j], m.matrix[j][i]);
                }
            }
        }
    }

    #[test]
    fn constant_series_gives_none_not_nan() {
        let a = series(&from_returns(&R));
        let flat = series(&[1.25; 13]);
        let m = correlation_matrix(&[&a, &flat], CorrelationMethod::Pearson).unwrap();
        assert_eq!(m.matrix[0][0], Some(1.0));
        assert_eq!(m.matrix[0][1], None);
        assert_eq!(m.matrix[1][0], None);
        assert_eq!(m.matrix[1][1], None);
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains("null") && !json.contains("NaN"), "{json}");
        let names = vec!["A".to_owned(), "B".to_owned()];
        assert!(ranked_pairs(&names, &m.matrix).is_empty());
    }

    #[test]
    fn typed_errors_never_panics() {
        let a = series(&from_returns(&R));
        let p = CorrelationMethod::Pearson;
        // Too few and too many series.
        assert!(matches!(
            correlation_matrix(&[&a], p),
            Err(CoreError::InvalidParameter { .. })
        ));
        assert!(matches!(
            correlation_matrix(&[], p),
            Err(CoreError::InvalidParameter { .. })
        ));
        let many: Vec<&[(UnixMs, f64)]> = (0..13).map(|_| a.as_slice()).collect();
        let e = correlation_matrix(&many, p).unwrap_err().to_string();
        assert!(e.contains("12"), "{e}");
        // Empty series: no aligned returns.
        let empty: Vec<(UnixMs, f64)> = Vec::new();
        let e = correlation_matrix(&[&a, &empty], p).unwrap_err().to_string();
        assert!(e.contains("only 0 aligned returns"), "{e}");
        // Mismatched lengths beyond the overlap: too few common times.
        let short = &a[..5];
        let e = correlation_matrix(&[&a, short], p).unwrap_err().to_string();
        assert!(e.contains("only 4 aligned returns") && e.contains("at least 10"), "{e}");
        // Disjoint times.
        let shifted: Vec<(UnixMs, f64)> = a.iter().map(|&(t, v)| (t + 1, v)).collect();
        assert!(correlation_matrix(&[&a, &shifted], p).is_err());
        // NaN, zero, negative and infinite prices.
        for bad in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
            let mut b = a.clone();
            b[3].1 = bad;
            assert!(matches!(
                correlation_matrix(&[&a, &b], p),
                Err(CoreError::InvalidInput(_))
            ));
        }
        // Unordered or duplicate times.
        let mut b = a.clone();
        b.swap(2, 3);
        assert!(matches!(
            correlation_matrix(&[&a, &b], p),
            Err(CoreError::InvalidInput(_))
        ));
        let mut b = a.clone();
        b[4].0 = b[3].0;
        assert!(matches!(
            correlation_matrix(&[&a, &b], p),
            Err(CoreError::InvalidInput(_))
        ));
    }

    #[test]
    fn ranked_pairs_order() {
        let names: Vec<String> = ["A", "B", "C"].iter().map(|s| (*s).to_owned()).collect();
        let m = vec![
            vec![Some(1.0), Some(0.2), Some(-0.5)],
            vec![Some(0.2), Some(1.0), Some(0.9)],
            vec![Some(-0.5), Some(0.9), Some(1.0)],
        ];
        let p = ranked_pairs(&names, &m);
        let got: Vec<(&str, &str, f64)> = p.iter().map(|x| (x.a.as_str(), x.b.as_str(), x.correlation)).collect();
        assert_eq!(got, vec![("B", "C", 0.9), ("A", "B", 0.2), ("A", "C", -0.5)]);
    }

    fn leg(ticket: Option<u64>, symbol: &str, side: Side, volume: f64, price: f64) -> ExposureLeg {
        let (base, quote) = symbol.split_at(3);
        ExposureLeg {
            ticket,
            symbol: symbol.into(),
            side,
            volume,
            contract_size: 100_000.0,
            price,
            base: base.into(),
            quote: quote.into(),
        }
    }

    fn rates(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(c, r)| ((*c).to_owned(), *r)).collect()
    }

    fn req<'a>(
        legs: &'a [ExposureLeg],
        equity: f64,
        rates: &'a BTreeMap<String, f64>,
        corr: Option<&'a SymbolCorrelations>,
    ) -> ExposureRequest<'a> {
        ExposureRequest {
            legs,
            equity,
            account_currency: "USD",
            rates,
            correlations: corr,
            limits: ExposureLimits::default(),
        }
    }

    fn ccy<'a>(r: &'a ExposureReport, c: &str) -> &'a CurrencyExposure {
        r.currencies.iter().find(|x| x.currency == c).unwrap()
    }

    #[test]
    fn long_eurusd_one_lot_hand_checked() {
        let legs = [leg(Some(7), "EURUSD", Side::Buy, 1.0, 1.1)];
        let rt = rates(&[("EUR", 1.1)]);
        let r = assess_exposure(&req(&legs, 50_000.0, &rt, None)).unwrap();
        // +100 000 EUR = +110 000 USD; −110 000 USD.
        let eur = ccy(&r, "EUR");
        assert!(close(eur.amount, 100_000.0));
        assert!(close(eur.amount_account.unwrap(), 110_000.0));
        assert!(close(eur.pct_equity.unwrap(), 220.0));
        let usd = ccy(&r, "USD");
        assert!(close(usd.amount, -110_000.0));
        assert!(close(usd.pct_equity.unwrap(), -220.0));
        assert!(close(r.gross_exposure, 110_000.0));
        assert!(close(r.gross_pct_equity, 220.0));
        assert!(
            close(r.net_exposure, 110_000.0),
            "USD, the account currency, is not counted"
        );
        assert!(close(r.legs[0].notional.unwrap(), 110_000.0));
        assert!(!r.legs[0].proposed);
        assert!(close(r.concentration_pct_equity, 220.0));
        assert_eq!(r.concentration_source.as_deref(), Some("currency EUR"));
        assert_eq!(r.verdict, Verdict::Proceed, "{:?}", r.reasons);
        assert_eq!(r.reasons.len(), 1);
    }

    #[test]
    fn an_overflowing_exposure_is_refused_not_infinite() {
        // 1e305 lots of 100 000 units: the notional overflows to infinity.
        let legs = [leg(None, "EURUSD", Side::Buy, 1e305, 1.1)];
        let rt = rates(&[("EUR", 1.1)]);
        let e = assess_exposure(&req(&legs, 50_000.0, &rt, None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a finite number"), "{e}");
        // A finite notional over a tiny equity overflows the percentages.
        let legs = [leg(None, "EURUSD", Side::Buy, 1e6, 1.1)];
        let e = assess_exposure(&req(&legs, 1e-300, &rt, None)).unwrap_err().to_string();
        assert!(e.contains("pct_equity"), "{e}");
    }

    #[test]
    fn hedged_positions_cancel_in_net_not_gross() {
        let legs = [
            leg(Some(1), "EURUSD", Side::Buy, 1.0, 1.1),
            leg(Some(2), "EURUSD", Side::Sell, 1.0, 1.1),
        ];
        let rt = rates(&[("EUR", 1.1)]);
        let r = assess_exposure(&req(&legs, 100_000.0, &rt, None)).unwrap();
        assert!(close(r.gross_exposure, 220_000.0));
        assert!(close(r.net_exposure, 0.0));
        assert!(close(ccy(&r, "EUR").amount, 0.0));
        assert_eq!(r.verdict, Verdict::Proceed);
    }

    #[test]
    fn gross_thresholds_caution_and_block() {
        let rt = rates(&[("EUR", 1.1)]);
        // 0.3 lot long and short: gross 66 000 USD = 660 % of 10 000 → caution; the net is zero.
        let legs = [
            leg(Some(1), "EURUSD", Side::Buy, 0.3, 1.1),
            leg(Some(2), "EURUSD", Side::Sell, 0.3, 1.1),
        ];
        let r = assess_exposure(&req(&legs, 10_000.0, &rt, None)).unwrap();
        assert!(close(r.gross_pct_equity, 660.0));
        assert_eq!(r.verdict, Verdict::Caution, "{:?}", r.reasons);
        assert!(r.reasons[0].contains("caution level of 500%"), "{:?}", r.reasons);
        let legs = [
            leg(Some(1), "EURUSD", Side::Buy, 0.5, 1.1),
            leg(Some(2), "EURUSD", Side::Sell, 0.5, 1.1),
        ];
        let r = assess_exposure(&req(&legs, 10_000.0, &rt, None)).unwrap();
        assert_eq!(r.verdict, Verdict::Block);
        assert!(r.reasons[0].contains("block level of 1000%"), "{:?}", r.reasons);
        // Custom limits move the verdict.
        let mut q = req(&legs, 10_000.0, &rt, None);
        q.limits.block_gross_pct = 2_000.0;
        q.limits.caution_gross_pct = 1_500.0;
        let r = assess_exposure(&q).unwrap();
        assert_eq!(r.verdict, Verdict::Proceed);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn a_caution_level_not_below_block_is_kept_with_a_warning() {
        let rt = rates(&[("EUR", 1.1)]);
        let hedged = |volume: f64| {
            [
                leg(Some(1), "EURUSD", Side::Buy, volume, 1.1),
                leg(Some(2), "EURUSD", Side::Sell, volume, 1.1),
            ]
        };
        for caution in [1_000.0, 2_000.0] {
            // Gross 1 100 %: above block, which takes precedence.
            let legs = hedged(0.5);
            let mut q = req(&legs, 10_000.0, &rt, None);
            q.limits.caution_gross_pct = caution;
            let r = assess_exposure(&q).unwrap();
            assert_eq!(r.verdict, Verdict::Block, "{:?}", r.reasons);
            assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
            assert!(
                r.warnings[0].contains("gross caution level never raises `caution`"),
                "{:?}",
                r.warnings
            );
            // Gross 660 %: below block, and below (or at) caution: proceed.
            let legs = hedged(0.3);
            let mut q = req(&legs, 10_000.0, &rt, None);
            q.limits.caution_gross_pct = caution;
            assert_eq!(assess_exposure(&q).unwrap().verdict, Verdict::Proceed);
        }
        let limits = ExposureLimits {
            caution_concentration_pct: 600.0,
            ..ExposureLimits::default()
        };
        limits.validate().unwrap();
        assert!(
            limits.warnings()[0].contains("caution_concentration_pct (600%)"),
            "{:?}",
            limits.warnings()
        );
        assert!(ExposureLimits::default().warnings().is_empty());
    }

    #[test]
    fn concentration_threshold_and_proposed_trade() {
        let rt = rates(&[("EUR", 1.1)]);
        // 0.3 lot long: EUR 33 000 USD = 330 % of 10 000 → caution (concentration), gross 330 % fine.
        let legs = [leg(None, "EURUSD", Side::Buy, 0.3, 1.1)];
        let r = assess_exposure(&req(&legs, 10_000.0, &rt, None)).unwrap();
        assert!(r.legs[0].proposed && r.legs[0].ticket.is_none());
        assert_eq!(r.verdict, Verdict::Caution);
        assert!(
            r.reasons[0].contains("currency EUR concentrates 330.0%"),
            "{:?}",
            r.reasons
        );
        let legs = [leg(None, "EURUSD", Side::Buy, 0.7, 1.1)];
        let r = assess_exposure(&req(&legs, 10_000.0, &rt, None)).unwrap();
        assert_eq!(r.verdict, Verdict::Block, "770 % > 600 %: {:?}", r.reasons);
    }

    #[test]
    fn correlated_longs_form_a_group_and_opposite_sides_a_hedge() {
        let rt = rates(&[("EUR", 1.1), ("GBP", 1.25)]);
        let corr = SymbolCorrelations {
            symbols: vec!["EURUSD".into(), "GBPUSD".into()],
            matrix: vec![vec![Some(1.0), Some(0.8)], vec![Some(0.8), Some(1.0)]],
        };
        let legs = [
            leg(Some(1), "EURUSD", Side::Buy, 0.2, 1.1),
            leg(None, "GBPUSD", Side::Buy, 0.2, 1.25),
        ];
        // Notionals 22 000 + 25 000 = 47 000 = 470 % of 10 000: above the concentration caution (300 %),
        // though EUR (220 %) and GBP (250 %) alone are not.
        let r = assess_exposure(&req(&legs, 10_000.0, &rt, Some(&corr))).unwrap();
        assert_eq!(r.correlated_pairs.len(), 1);
        assert!(close(r.correlated_pairs[0].effective_correlation, 0.8));
        assert_eq!(r.correlated_groups.len(), 1);
        assert_eq!(r.correlated_groups[0].symbols, vec!["EURUSD", "GBPUSD"]);
        assert!(close(r.correlated_groups[0].notional, 47_000.0));
        assert!(close(r.concentration_pct_equity, 470.0));
        assert_eq!(
            r.concentration_source.as_deref(),
            Some("correlated group EURUSD+GBPUSD")
        );
        assert_eq!(r.verdict, Verdict::Caution, "{:?}", r.reasons);
        // Without correlations: EUR 220 %, GBP 250 % → proceed.
        let r = assess_exposure(&req(&legs, 10_000.0, &rt, None)).unwrap();
        assert_eq!(r.verdict, Verdict::Proceed);
        // Long one, short the other: a hedge, no group.
        let legs = [
            leg(Some(1), "EURUSD", Side::Buy, 0.2, 1.1),
            leg(None, "GBPUSD", Side::Sell, 0.2, 1.25),
        ];
        let r = assess_exposure(&req(&legs, 10_000.0, &rt, Some(&corr))).unwrap();
        assert!(close(r.correlated_pairs[0].effective_correlation, -0.8));
        assert!(r.correlated_groups.is_empty());
        assert_eq!(r.verdict, Verdict::Proceed);
    }

    #[test]
    fn unconverted_currency_is_reported_not_guessed() {
        // A CHF account holding EURUSD with no USD→CHF or EUR→CHF rate.
        let legs = [leg(Some(1), "EURUSD", Side::Buy, 0.1, 1.1)];
        let rt = BTreeMap::new();
        let mut q = req(&legs, 10_000.0, &rt, None);
        q.account_currency = "CHF";
        let r = assess_exposure(&q).unwrap();
        assert_eq!(r.legs[0].notional, None);
        assert!(close(r.legs[0].notional_quote, 11_000.0));
        let missing: Vec<&str> = r.unconverted.iter().map(|u| u.currency.as_str()).collect();
        assert_eq!(missing, ["EUR", "USD"]);
        assert_eq!(r.gross_exposure, 0.0);
        assert_eq!(r.verdict, Verdict::Caution);
        assert!(r.reasons.iter().any(|x| x.contains("no quote converts EUR to CHF")));
    }

    #[test]
    fn empty_and_invalid_inputs() {
        let rt = BTreeMap::new();
        let r = assess_exposure(&req(&[], 10_000.0, &rt, None)).unwrap();
        assert_eq!(r.verdict, Verdict::Proceed);
        assert_eq!(r.gross_exposure, 0.0);
        assert!(r.concentration_source.is_none());
        assert!(r.reasons[0].contains("no open positions"));
        // No equity blocks.
        let r = assess_exposure(&req(&[], 0.0, &rt, None)).unwrap();
        assert_eq!(r.verdict, Verdict::Block);
        assert!(matches!(
            assess_exposure(&req(&[], f64::NAN, &rt, None)),
            Err(CoreError::InvalidInput(_))
        ));
        for (vol, price) in [
            (f64::NAN, 1.1),
            (0.0, 1.1),
            (-1.0, 1.1),
            (1.0, f64::INFINITY),
            (1.0, 0.0),
        ] {
            let legs = [leg(Some(1), "EURUSD", Side::Buy, vol, price)];
            assert!(matches!(
                assess_exposure(&req(&legs, 10_000.0, &rt, None)),
                Err(CoreError::InvalidInput(_))
            ));
        }
        let bad = rates(&[("EUR", f64::NAN)]);
        assert!(assess_exposure(&req(&[], 10_000.0, &bad, None)).is_err());
        let mut q = req(&[], 10_000.0, &rt, None);
        q.limits.caution_gross_pct = 20_000.0;
        let e = assess_exposure(&q).unwrap_err();
        assert!(
            matches!(e, CoreError::InvalidParameter { ref name, .. } if name == "caution_gross_pct"),
            "{e}"
        );
        q.limits = ExposureLimits {
            correlation_threshold: 1.5,
            ..ExposureLimits::default()
        };
        assert!(assess_exposure(&q).is_err());
        q.limits = ExposureLimits {
            block_concentration_pct: f64::NAN,
            ..ExposureLimits::default()
        };
        assert!(assess_exposure(&q).is_err());
    }
}
