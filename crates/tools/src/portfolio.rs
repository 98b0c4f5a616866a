//! Portfolio tools: `get_correlation_matrix`, `check_portfolio_exposure`.
//!
//! Both read the terminal (bars, positions, account, specifications, quotes)
//! and compute with [`tradeterm_core::portfolio`]; formulas, limits and the
//! verdict rules are documented in `docs/portfolio.md`.

use std::collections::BTreeMap;

use futures_util::future::{join_all, try_join, try_join_all};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::portfolio::{
    self, CorrelatedPair, CorrelationMethod, ExposureLeg, ExposureLimits, ExposureReport, ExposureRequest, MAX_SYMBOLS,
    MIN_SYMBOLS, SymbolCorrelations,
};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::trading::{Quote, conversion_rate};
use tradeterm_core::{CoreError, Side, SymbolSpec, Tick, Timeframe};

use crate::account::positions;
use crate::market::{check_symbol, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Fewest bars a correlation may be asked over.
pub const MIN_CORRELATION_BARS: u32 = 20;
/// Most bars a correlation may be asked over.
pub const MAX_CORRELATION_BARS: u32 = 5_000;
/// Default lookback of both tools, in bars.
pub const DEFAULT_CORRELATION_BARS: u32 = 200;
/// Pairs listed in `most_correlated` and `least_correlated`.
pub const PAIRS_LISTED: usize = 3;
/// Largest `proposed_trade.volume`, in lots: far above any symbol's volume
/// limit, and small enough that its notional stays a finite number.
pub const MAX_PROPOSED_VOLUME: f64 = 1_000_000.0;

/// Input of `get_correlation_matrix`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrelationInput {
    /// 2 to 12 distinct instruments, e.g. `["EURUSD", "GBPUSD", "XAUUSD"]`. The matrix rows and columns follow this order.
    #[schemars(inner(pattern(crate::schema::SYMBOL_PATTERN)), length(min = MIN_SYMBOLS, max = MAX_SYMBOLS), extend("uniqueItems" = true))]
    pub symbols: Vec<String>,
    /// Timeframe of the bars: M1, M5, M15, M30, H1, H4, D1, W1 or MN1 (default H1).
    #[serde(default)]
    pub timeframe: Option<Timeframe>,
    /// Lookback: most recent bars fetched per symbol (20-5000, default 200). Only bar times present for every
    /// symbol are used, so the number of returns can be lower (see `returns` in the answer).
    #[serde(default)]
    #[schemars(range(min = MIN_CORRELATION_BARS, max = MAX_CORRELATION_BARS))]
    pub bars: Option<u32>,
    /// `pearson` (default: linear correlation of log returns) or `spearman` (rank correlation, robust to outliers).
    #[serde(default)]
    pub method: Option<CorrelationMethod>,
}

/// Output of `get_correlation_matrix`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CorrelationOutput {
    /// Symbols, in the order of the matrix rows and columns.
    pub symbols: Vec<String>,
    /// Timeframe of the bars.
    pub timeframe: Timeframe,
    /// `pearson` or `spearman`.
    pub method: CorrelationMethod,
    /// Bars requested per symbol.
    pub bars: u32,
    /// Aligned log returns every correlation was computed from (common bar times minus one).
    pub returns: usize,
    /// Open time of the first aligned bar, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Open time of the last aligned bar, ISO 8601 UTC (it may still be forming).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// N×N correlations of log returns in [-1, 1]: `matrix[i][j]` pairs `symbols[i]` with `symbols[j]`; symmetric,
    /// 1 on the diagonal; `null` for a symbol whose price did not move over the window (undefined correlation).
    pub matrix: Vec<Vec<Option<f64>>>,
    /// Up to 3 pairs with the highest correlation, highest first (they move together).
    pub most_correlated: Vec<CorrelatedPair>,
    /// Up to 3 pairs with the lowest correlation, lowest first (most negative: they move against each other).
    pub least_correlated: Vec<CorrelatedPair>,
    /// Symbols whose correlations are undefined (`null`) because their price did not move.
    pub undefined: Vec<String>,
    /// What is surprising about the input (two names that differ only in case); empty otherwise.
    pub warnings: Vec<String>,
}

fn core_err(e: CoreError) -> ToolError {
    match e {
        CoreError::InvalidParameter { name, reason } => ToolError::InvalidInput(format!("`{name}` {reason}")),
        other => ToolError::InvalidInput(other.to_string()),
    }
}

/// Checks the symbol list: 2-12 valid, distinct names.
fn check_symbols(symbols: &[String]) -> Result<(), ToolError> {
    if symbols.len() < MIN_SYMBOLS || symbols.len() > MAX_SYMBOLS {
        return Err(ToolError::InvalidInput(format!(
            "`symbols` must list between {MIN_SYMBOLS} and {MAX_SYMBOLS} distinct symbols, got {}",
            symbols.len()
        )));
    }
    for (i, s) in symbols.iter().enumerate() {
        check_symbol(s)?;
        // What the schema's `uniqueItems` says: the same name twice.
        if symbols[..i].contains(s) {
            return Err(ToolError::InvalidInput(format!(
                "`symbols` lists `{s}` twice; the symbols must be distinct"
            )));
        }
    }
    Ok(())
}

/// Names listed more than once in another case (`EURUSD`, `eurusd`):
/// distinct for the schema, so both are answered; most terminals read them
/// as one instrument, which correlates 1 with itself.
fn case_duplicates(symbols: &[String]) -> Vec<String> {
    symbols
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            symbols[..i].iter().find(|o| o.eq_ignore_ascii_case(s)).map(|o| {
                format!("`{o}` and `{s}` differ only in case: most terminals read them as one symbol (correlation 1)")
            })
        })
        .collect()
}

fn check_bars(field: &str, bars: Option<u32>) -> Result<u32, ToolError> {
    let bars = bars.unwrap_or(DEFAULT_CORRELATION_BARS);
    if !(MIN_CORRELATION_BARS..=MAX_CORRELATION_BARS).contains(&bars) {
        return Err(ToolError::InvalidInput(format!(
            "`{field}` must be between {MIN_CORRELATION_BARS} and {MAX_CORRELATION_BARS}"
        )));
    }
    Ok(bars)
}

/// Closes of every symbol, fetched concurrently, as `(open time, close)`.
async fn closes(
    ctx: &ToolContext,
    symbols: &[String],
    timeframe: Timeframe,
    bars: u32,
) -> Result<Vec<Vec<(UnixMs, f64)>>, ToolError> {
    let all = try_join_all(
        symbols
            .iter()
            .map(|s| fetch_bars(ctx, s, timeframe, Some(bars), None, None)),
    )
    .await?;
    Ok(all
        .into_iter()
        .map(|b| b.into_iter().map(|b| (b.time, b.close)).collect())
        .collect())
}

fn matrix_of(
    symbols: &[String],
    series: &[Vec<(UnixMs, f64)>],
    method: CorrelationMethod,
) -> Result<portfolio::CorrelationMatrix, ToolError> {
    for (s, bars) in symbols.iter().zip(series) {
        if bars.is_empty() {
            return Err(ToolError::NotFound(format!("no bars for {s}")));
        }
    }
    let refs: Vec<&[(UnixMs, f64)]> = series.iter().map(Vec::as_slice).collect();
    portfolio::correlation_matrix(&refs, method).map_err(core_err)
}

async fn get_correlation_matrix(ctx: ToolContext, input: CorrelationInput) -> Result<CorrelationOutput, ToolError> {
    check_symbols(&input.symbols)?;
    let bars = check_bars("bars", input.bars)?;
    let timeframe = input.timeframe.unwrap_or(Timeframe::H1);
    let method = input.method.unwrap_or_default();
    let series = closes(&ctx, &input.symbols, timeframe, bars).await?;
    let correlations = matrix_of(&input.symbols, &series, method)?;
    let pairs = portfolio::ranked_pairs(&input.symbols, &correlations.matrix);
    let most_correlated = pairs.iter().take(PAIRS_LISTED).cloned().collect();
    let least_correlated = pairs.iter().rev().take(PAIRS_LISTED).cloned().collect();
    let undefined = input
        .symbols
        .iter()
        .zip(&correlations.matrix)
        .enumerate()
        .filter(|(i, (_, row))| row[*i].is_none())
        .map(|(_, (s, _))| s.clone())
        .collect();
    let warnings = case_duplicates(&input.symbols);
    Ok(CorrelationOutput {
        symbols: input.symbols,
        timeframe,
        method,
        bars,
        returns: correlations.returns,
        from: correlations.from,
        to: correlations.to,
        matrix: correlations.matrix,
        most_correlated,
        least_correlated,
        undefined,
        warnings,
    })
}

/// A trade to check before placing it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposedTrade {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// `buy` (long) or `sell` (short).
    pub side: Side,
    /// Volume in lots (above 0, at most 1000000). One the symbol cannot trade (below its minimum, above its maximum,
    /// off its step) is assessed all the same, with a warning.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = MAX_PROPOSED_VOLUME))]
    pub volume: f64,
}

/// Input of `check_portfolio_exposure`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExposureInput {
    /// A trade to add to the open positions before checking (valued at the current ask for a buy, bid for a sell).
    /// Omit it to check the open positions alone.
    #[serde(default, deserialize_with = "crate::schema::optional_object")]
    pub proposed_trade: Option<ProposedTrade>,
    /// `caution` above this gross exposure, in percent of equity (1-10000, default 500, i.e. 5:1 effective leverage).
    #[serde(default)]
    #[schemars(range(min = portfolio::LIMIT_PCT_RANGE.0, max = portfolio::LIMIT_PCT_RANGE.1))]
    pub caution_gross_pct: Option<f64>,
    /// `block` above this gross exposure, in percent of equity (1-10000, default 1000). `block` takes precedence:
    /// a caution level at or above it never fires on its own (said in `warnings`).
    #[serde(default)]
    #[schemars(range(min = portfolio::LIMIT_PCT_RANGE.0, max = portfolio::LIMIT_PCT_RANGE.1))]
    pub block_gross_pct: Option<f64>,
    /// `caution` when one currency's net exposure or one group of correlated positions exceeds this percentage of
    /// equity (1-10000, default 300).
    #[serde(default)]
    #[schemars(range(min = portfolio::LIMIT_PCT_RANGE.0, max = portfolio::LIMIT_PCT_RANGE.1))]
    pub caution_concentration_pct: Option<f64>,
    /// `block` when that concentration exceeds this percentage of equity (1-10000, default 600). `block` takes
    /// precedence: a caution level at or above it never fires on its own (said in `warnings`).
    #[serde(default)]
    #[schemars(range(min = portfolio::LIMIT_PCT_RANGE.0, max = portfolio::LIMIT_PCT_RANGE.1))]
    pub block_concentration_pct: Option<f64>,
    /// Absolute correlation from which two symbols count as correlated (0.3-0.99, default 0.7).
    #[serde(default)]
    #[schemars(range(min = portfolio::CORRELATION_THRESHOLD_RANGE.0, max = portfolio::CORRELATION_THRESHOLD_RANGE.1))]
    pub correlation_threshold: Option<f64>,
    /// Timeframe of the bars the correlations are computed on (default H1).
    #[serde(default)]
    pub correlation_timeframe: Option<Timeframe>,
    /// Bars of lookback for the correlations (20-5000, default 200).
    #[serde(default)]
    #[schemars(range(min = MIN_CORRELATION_BARS, max = MAX_CORRELATION_BARS))]
    pub correlation_bars: Option<u32>,
}

/// The correlations behind the concentration figures.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExposureCorrelation {
    /// Timeframe of the bars.
    pub timeframe: Timeframe,
    /// Bars requested per symbol.
    pub bars: u32,
    /// Always `pearson` (log returns).
    pub method: CorrelationMethod,
    /// Symbols of the matrix (those of the positions and the proposed trade).
    pub symbols: Vec<String>,
    /// Pearson correlations of log returns, `null` where undefined; `null` as a whole when they could not be
    /// computed (see `note`).
    pub matrix: Option<Vec<Vec<Option<f64>>>>,
    /// Aligned returns used; `null` when not computed.
    pub returns: Option<usize>,
    /// Why no correlations were computed (fewer than two symbols, too few common bars, a symbol without bars...).
    pub note: Option<String>,
}

/// Output of `check_portfolio_exposure`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExposureOutput {
    /// Account (deposit) currency every amount is converted to.
    pub account_currency: String,
    /// Equity, account currency: the base of every percentage.
    pub equity: f64,
    /// Open positions counted (the proposed trade excluded).
    pub open_positions: usize,
    /// The exposure figures and the verdict.
    #[serde(flatten)]
    pub report: ExposureReport,
    /// The correlations behind `correlated_pairs` and `correlated_groups`.
    pub correlation: ExposureCorrelation,
}

/// Specification and quote of a symbol, if the terminal has it.
async fn spec_and_tick(ctx: &ToolContext, symbol: &str) -> Result<(SymbolSpec, Tick), ToolError> {
    try_join(ctx.spec(symbol), ctx.tick(symbol)).await
}

/// Rates converting each currency into `account`: from the quotes of the
/// symbols involved, else the terminal's `CCYACC` / `ACCCCY` symbols when it
/// has them; currencies nothing converts are left out.
async fn rates_to_account(
    ctx: &ToolContext,
    account: &str,
    currencies: &[String],
    mut known: Vec<(SymbolSpec, Tick)>,
) -> BTreeMap<String, f64> {
    let quotes = |k: &[(SymbolSpec, Tick)], c: &str| {
        let pairs: Vec<Quote<'_>> = k.iter().map(|(s, t)| Quote::of(s, t)).collect();
        conversion_rate(c, account, &pairs)
    };
    let missing: Vec<&String> = currencies
        .iter()
        .filter(|c| !c.eq_ignore_ascii_case(account) && quotes(&known, c).is_none())
        .collect();
    let probes: Vec<String> = missing
        .iter()
        .flat_map(|c| [format!("{c}{account}"), format!("{account}{c}")])
        .filter(|s| check_symbol(s).is_ok() && !known.iter().any(|(k, _)| &k.name == s))
        .collect();
    // Symbols the terminal does not have are skipped.
    known.extend(
        join_all(probes.iter().map(|s| spec_and_tick(ctx, s)))
            .await
            .into_iter()
            .flatten(),
    );
    currencies
        .iter()
        .filter(|c| !c.eq_ignore_ascii_case(account))
        .filter_map(|c| quotes(&known, c).map(|r| (c.clone(), r)))
        .collect()
}

fn limits_of(input: &ExposureInput) -> Result<ExposureLimits, ToolError> {
    let d = ExposureLimits::default();
    let limits = ExposureLimits {
        caution_gross_pct: input.caution_gross_pct.unwrap_or(d.caution_gross_pct),
        block_gross_pct: input.block_gross_pct.unwrap_or(d.block_gross_pct),
        caution_concentration_pct: input.caution_concentration_pct.unwrap_or(d.caution_concentration_pct),
        block_concentration_pct: input.block_concentration_pct.unwrap_or(d.block_concentration_pct),
        correlation_threshold: input.correlation_threshold.unwrap_or(d.correlation_threshold),
    };
    limits.validate().map_err(core_err)?;
    Ok(limits)
}

async fn correlations_of(
    ctx: &ToolContext,
    symbols: &[String],
    timeframe: Timeframe,
    bars: u32,
) -> Result<(SymbolCorrelations, usize), String> {
    if symbols.len() < MIN_SYMBOLS {
        return Err("fewer than two symbols: no correlation to compute".into());
    }
    if symbols.len() > MAX_SYMBOLS {
        return Err(format!(
            "{} symbols: correlations are computed for at most {MAX_SYMBOLS}",
            symbols.len()
        ));
    }
    let series = closes(ctx, symbols, timeframe, bars)
        .await
        .map_err(|e| format!("bars unavailable: {e}"))?;
    let correlations = matrix_of(symbols, &series, CorrelationMethod::Pearson).map_err(|e| e.to_string())?;
    Ok((
        SymbolCorrelations {
            symbols: symbols.to_vec(),
            matrix: correlations.matrix,
        },
        correlations.returns,
    ))
}

/// Checks the proposed trade: a symbol, and a volume above 0 and at most
/// [`MAX_PROPOSED_VOLUME`] (what the schema says), so that its notional is
/// a finite number.
fn check_proposed(proposed: &ProposedTrade) -> Result<(), ToolError> {
    check_symbol(&proposed.symbol)?;
    if !proposed.volume.is_finite() || proposed.volume <= 0.0 || proposed.volume > MAX_PROPOSED_VOLUME {
        return Err(ToolError::InvalidInput(format!(
            "`proposed_trade.volume` must be a number of lots above 0 and at most {MAX_PROPOSED_VOLUME}"
        )));
    }
    Ok(())
}

async fn check_portfolio_exposure(ctx: ToolContext, input: ExposureInput) -> Result<ExposureOutput, ToolError> {
    let limits = limits_of(&input)?;
    let timeframe = input.correlation_timeframe.unwrap_or(Timeframe::H1);
    let bars = check_bars("correlation_bars", input.correlation_bars)?;
    if let Some(proposed) = &input.proposed_trade {
        check_proposed(proposed)?;
    }
    let (account, open) = try_join(ctx.account(), positions(&ctx, None)).await?;

    // Every symbol involved, with its specification and quote.
    let mut symbols: Vec<String> = Vec::new();
    for symbol in open
        .iter()
        .map(|p| &p.symbol)
        .chain(input.proposed_trade.as_ref().map(|p| &p.symbol))
    {
        if !symbols.contains(symbol) {
            symbols.push(symbol.clone());
        }
    }
    let market = try_join_all(symbols.iter().map(|s| spec_and_tick(&ctx, s))).await?;
    // `market` follows the order of `symbols`.
    let of = |s: &str| symbols.iter().position(|x| x == s).and_then(|i| market.get(i));

    let mut legs = Vec::with_capacity(open.len() + 1);
    let mut volume_note = None;
    for position in &open {
        let (spec, _) =
            of(&position.symbol).ok_or_else(|| ToolError::Internal(format!("no spec for {}", position.symbol)))?;
        legs.push(ExposureLeg {
            ticket: Some(position.ticket),
            symbol: position.symbol.clone(),
            side: position.side,
            volume: position.volume,
            contract_size: spec.contract_size,
            price: position.current_price,
            base: spec.currency_base.clone(),
            quote: spec.currency_profit.clone(),
        });
    }
    if let Some(proposed) = &input.proposed_trade {
        let (spec, tick) =
            of(&proposed.symbol).ok_or_else(|| ToolError::Internal(format!("no spec for {}", proposed.symbol)))?;
        // An analysis, not an order: any positive volume is assessed.
        volume_note = crate::costs::volume_warning(spec, proposed.volume).map(|w| format!("proposed_trade: {w}"));
        legs.push(ExposureLeg {
            ticket: None,
            symbol: proposed.symbol.clone(),
            side: proposed.side,
            volume: proposed.volume,
            contract_size: spec.contract_size,
            price: match proposed.side {
                Side::Buy => tick.ask,
                Side::Sell => tick.bid,
            },
            base: spec.currency_base.clone(),
            quote: spec.currency_profit.clone(),
        });
    }

    let mut currencies: Vec<String> = Vec::new();
    for leg in &legs {
        for currency in [&leg.base, &leg.quote] {
            if !currencies.contains(currency) {
                currencies.push(currency.clone());
            }
        }
    }
    let rates = rates_to_account(&ctx, &account.currency, &currencies, market.clone()).await;
    let corr = correlations_of(&ctx, &symbols, timeframe, bars).await;
    let (correlations, correlation) = match corr {
        Ok((c, returns)) => {
            let info = ExposureCorrelation {
                timeframe,
                bars,
                method: CorrelationMethod::Pearson,
                symbols: c.symbols.clone(),
                matrix: Some(c.matrix.clone()),
                returns: Some(returns),
                note: None,
            };
            (Some(c), info)
        }
        Err(note) => (
            None,
            ExposureCorrelation {
                timeframe,
                bars,
                method: CorrelationMethod::Pearson,
                symbols: symbols.clone(),
                matrix: None,
                returns: None,
                note: Some(note),
            },
        ),
    };
    let mut report = portfolio::assess_exposure(&ExposureRequest {
        legs: &legs,
        equity: account.equity,
        account_currency: &account.currency,
        rates: &rates,
        correlations: correlations.as_ref(),
        limits,
    })
    .map_err(|e| ToolError::Dispatch(format!("the terminal's data could not be assessed: {e}")))?;
    report.warnings.extend(volume_note);
    Ok(ExposureOutput {
        account_currency: account.currency,
        equity: account.equity,
        open_positions: open.len(),
        report,
        correlation,
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_correlation_matrix",
            title: "Correlation matrix",
            description: "N×N correlation matrix of 2-12 symbols, computed on the server from the terminal's bars: log returns of the closes, aligned on the bar times every symbol has, Pearson (default) or Spearman. Returns the matrix (symmetric, 1 on the diagonal, null where a price did not move), the number of aligned returns and their time range, and the most and least correlated pairs. Use it to spot positions that are in effect the same bet, or hedges.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_correlation_matrix),
        ToolSpec {
            name: "check_portfolio_exposure",
            title: "Portfolio exposure check",
            description: "Checks the open positions, plus an optional proposed trade, for currency exposure and concentration before trading. Splits every position into its currency legs (long 1 lot EURUSD = +100000 EUR / -notional USD), converts them to the account currency with the terminal's quotes (unconvertible currencies are listed, never guessed), and reports gross and net exposure and the largest concentration (one currency, or a group of positions whose returns are correlated) in percent of equity. Verdict `proceed`, `caution` or `block` against thresholds you may override, with a reason for each threshold crossed. Read-only: nothing is traded.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(check_portfolio_exposure),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_entries() {
        let tools = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name).collect();
        assert_eq!(names, ["get_correlation_matrix", "check_portfolio_exposure"]);
        for t in &tools {
            assert_eq!(t.capability, Capability::Analytics, "{}", t.name);
            assert_eq!((t.gate, t.target), (Gate::Always, Target::Terminal));
            assert_eq!(t.annotations, READ_TERMINAL);
            assert_eq!(t.input_schema["type"], "object");
            assert_eq!(t.input_schema["additionalProperties"], false, "{}", t.name);
        }
        let props = &tools[0].input_schema["properties"];
        assert!(props["symbols"]["description"].as_str().unwrap().contains("2 to 12"));
        let out = &tools[1].output_schema["properties"];
        for k in ["verdict", "reasons", "currencies", "gross_pct_equity", "correlation"] {
            assert!(out.get(k).is_some(), "output schema lacks {k}: {out}");
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("SYM{i}")).collect()
    }

    #[test]
    fn symbol_list_limits() {
        assert!(check_symbols(&names(2)).is_ok());
        assert!(check_symbols(&names(12)).is_ok());
        for n in [0, 1, 13] {
            let e = check_symbols(&names(n)).unwrap_err().to_string();
            assert!(e.contains("between 2 and 12"), "{e}");
        }
        let e = check_symbols(&["EURUSD".into(), "EURUSD".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("twice"), "{e}");
        // Distinct for the schema's `uniqueItems`: answered, with a warning.
        let case = ["EURUSD".to_owned(), "eurusd".to_owned()];
        assert!(check_symbols(&case).is_ok());
        let warnings = case_duplicates(&case);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("differ only in case"), "{warnings:?}");
        assert!(case_duplicates(&names(3)).is_empty());
        assert!(check_symbols(&["EURUSD".into(), "BAD SYMBOL".into()]).is_err());
    }

    #[test]
    fn bars_and_limits_bounds() {
        assert_eq!(check_bars("bars", None).unwrap(), 200);
        assert_eq!(check_bars("bars", Some(20)).unwrap(), 20);
        assert!(check_bars("bars", Some(19)).is_err());
        assert!(check_bars("bars", Some(5001)).is_err());
        assert_eq!(limits_of(&ExposureInput::default()).unwrap(), ExposureLimits::default());
        let error = limits_of(&ExposureInput {
            caution_gross_pct: Some(12_000.0),
            ..ExposureInput::default()
        })
        .unwrap_err();
        assert_eq!(error.code(), "VALIDATION_ERROR");
        assert!(
            error
                .to_string()
                .contains("`caution_gross_pct` must be between 1 and 10000"),
            "{error}"
        );
        // A caution level above block is kept (a warning says block takes precedence).
        let limits = limits_of(&ExposureInput {
            caution_gross_pct: Some(1_200.0),
            ..ExposureInput::default()
        })
        .unwrap();
        assert_eq!((limits.caution_gross_pct, limits.block_gross_pct), (1_200.0, 1_000.0));
        assert_eq!(limits.warnings().len(), 1);
        let error = limits_of(&ExposureInput {
            correlation_threshold: Some(0.1),
            ..ExposureInput::default()
        })
        .unwrap_err();
        assert!(error.to_string().contains("correlation_threshold"), "{error}");
    }

    #[test]
    fn the_proposed_volume_is_bounded_in_the_schema_and_the_check() {
        let t = crate::find("check_portfolio_exposure").unwrap();
        let volume = &t.input_schema["$defs"]["ProposedTrade"]["properties"]["volume"];
        assert_eq!(volume["maximum"].as_f64(), Some(MAX_PROPOSED_VOLUME), "{volume}");
        let trade = |volume| ProposedTrade {
            symbol: "EURUSD".into(),
            side: Side::Buy,
            volume,
        };
        assert!(check_proposed(&trade(MAX_PROPOSED_VOLUME)).is_ok());
        for volume in [0.0, -1.0, 1e300, f64::INFINITY] {
            let e = check_proposed(&trade(volume)).unwrap_err();
            assert_eq!(e.code(), "VALIDATION_ERROR");
            assert!(e.to_string().contains("`proposed_trade.volume`"), "{e}");
        }
    }

    #[test]
    fn empty_series_is_not_found() {
        let e = matrix_of(&names(2), &[vec![], vec![(0, 1.0)]], CorrelationMethod::Pearson).unwrap_err();
        assert_eq!(e.code(), "NOT_FOUND");
    }
}
