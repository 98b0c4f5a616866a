//! Risk sizing tools: `calculate_position_size`, `get_portfolio_summary`.
//!
//! Both read the terminal (symbol specifications, quotes, account,
//! positions, and bars for an ATR stop) and compute with
//! [`tradeterm_core::sizing`]. Conversion rates into the account currency
//! come from the terminal's own quotes (the symbol's, then the
//! `CCYACC`/`ACCCCY` pairs, then a cross through USD); a currency nothing
//! converts is reported, never guessed. Formulas and worked examples:
//! `docs/sizing.md`.

use std::collections::BTreeMap;

use futures_util::future::{join_all, try_join, try_join3};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::indicators::AverageTrueRange;
use tradeterm_core::sizing::{
    self, AccountSnapshot, ConversionRates, PortfolioInput, PortfolioSummary, RiskSpec, SizingError, SizingRequest,
    SizingResult, StopSpec, TickValueSource,
};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::trading::Quote;
use tradeterm_core::{Side, SymbolSpec, Tick, Timeframe};

use crate::account::positions;
use crate::costs::core_err;
use crate::market::check_symbol;
use crate::patterns::closed_bars;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Default ATR period of an ATR stop.
pub const DEFAULT_ATR_PERIOD: usize = 14;
/// Largest ATR period of an ATR stop.
pub const MAX_ATR_PERIOD: usize = 1_000;
/// Smallest ATR multiple of an ATR stop.
pub const MIN_ATR_MULTIPLE: f64 = 0.01;
/// Largest price, stop distance (points, pips) or commission the sizing
/// takes: far above any instrument, low enough that no result overflows.
pub const MAX_SIZING_VALUE: f64 = 1e9;
/// Bars fetched per unit of ATR period (Wilder's smoothing settles after a few periods).
const ATR_BARS_PER_PERIOD: usize = 5;

/// The pivot currency of the last-resort cross rate.
const CROSS_VIA: &str = "USD";

// ================================================================ quotes

/// Specification and quote of a symbol.
async fn spec_and_tick(ctx: &ToolContext, symbol: &str) -> Result<(SymbolSpec, Tick), ToolError> {
    try_join(ctx.spec(symbol), ctx.tick(symbol)).await
}

fn rate_in(known: &[(SymbolSpec, Tick)], from: &str, to: &str) -> Option<f64> {
    let quotes: Vec<Quote<'_>> = known.iter().map(|(s, t)| Quote::of(s, t)).collect();
    tradeterm_core::trading::conversion_rate(from, to, &quotes)
}

/// Adds to `known` the terminal's quotes that convert each of `currencies`
/// into `account`: first `CCYACC` / `ACCCCY`, then `CCYUSD`/`USDCCY` with
/// `USDACC`/`ACCUSD` for a cross. Symbols the terminal does not have are
/// skipped; the result holds every quote found.
pub(crate) async fn conversion_quotes(
    ctx: &ToolContext,
    account: &str,
    currencies: &[String],
    mut known: Vec<(SymbolSpec, Tick)>,
) -> Vec<(SymbolSpec, Tick)> {
    for round in 0..2 {
        let missing: Vec<&String> = currencies
            .iter()
            .filter(|currency| rate_in(&known, currency, account).is_none())
            .collect();
        // Crossing through USD adds nothing when the account is in USD.
        if missing.is_empty() || (round == 1 && account.eq_ignore_ascii_case(CROSS_VIA)) {
            break;
        }
        let mut probes: Vec<String> = Vec::new();
        for currency in missing {
            let pairs = if round == 0 {
                vec![format!("{currency}{account}"), format!("{account}{currency}")]
            } else {
                vec![
                    format!("{currency}{CROSS_VIA}"),
                    format!("{CROSS_VIA}{currency}"),
                    format!("{CROSS_VIA}{account}"),
                    format!("{account}{CROSS_VIA}"),
                ]
            };
            for pair in pairs {
                if check_symbol(&pair).is_ok() && !probes.contains(&pair) && !known.iter().any(|(k, _)| k.name == pair)
                {
                    probes.push(pair);
                }
            }
        }
        known.extend(
            join_all(probes.iter().map(|s| spec_and_tick(ctx, s)))
                .await
                .into_iter()
                .flatten(),
        );
    }
    known
}

fn sizing_err(e: SizingError) -> ToolError {
    match &e {
        SizingError::Invalid { field, .. }
            if field.starts_with("symbol.") || field == "positions" || field == "account" =>
        {
            ToolError::Dispatch(format!("the terminal's data is unusable: {e}"))
        }
        _ => ToolError::InvalidInput(e.to_string()),
    }
}

// ================================================================ calculate_position_size

/// Where the stop loss is.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum StopInput {
    /// A stop loss price: below the entry for a buy, above it for a sell.
    Price {
        /// Stop loss price.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_SIZING_VALUE))]
        price: f64,
    },
    /// A distance from the entry in points (the symbol's smallest price step, `point`).
    Points {
        /// Distance in points, above 0.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_SIZING_VALUE))]
        points: f64,
    },
    /// A distance from the entry in pips: 10 points on 3- and 5-digit symbols (EURUSD 0.0001, USDJPY 0.01), 1 point otherwise.
    Pips {
        /// Distance in pips, above 0.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_SIZING_VALUE))]
        pips: f64,
    },
    /// A multiple of the Average True Range, computed by the server from the symbol's closed bars.
    Atr {
        /// Multiple of the ATR, at least 0.01 (e.g. 1.5).
        #[schemars(range(min = MIN_ATR_MULTIPLE, max = MAX_SIZING_VALUE))]
        multiple: f64,
        /// Timeframe of the bars (default H1).
        #[serde(default)]
        timeframe: Option<Timeframe>,
        /// ATR period in bars (1-1000, default 14).
        #[serde(default)]
        #[schemars(range(min = 1, max = MAX_ATR_PERIOD))]
        period: Option<usize>,
    },
}

/// Input of `calculate_position_size`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionSizeInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// `buy` or `sell`: the direction of the planned trade.
    pub side: Side,
    /// Planned entry price. Default: the current ask for a buy, the bid for a sell (a market order).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_SIZING_VALUE))]
    pub entry_price: Option<f64>,
    /// How much to risk: `{"type":"percent_of_balance","percent":1}`, `{"type":"percent_of_equity","percent":0.5}` (above 0, at most 100) or `{"type":"money","amount":100}` (account currency).
    pub risk: RiskSpec,
    /// Where the stop is: `{"type":"price","price":1.095}`, `{"type":"points","points":150}`, `{"type":"pips","pips":15}` or `{"type":"atr","multiple":1.5,"timeframe":"H1","period":14}` (ATR of the closed bars, computed by the server).
    pub stop: StopInput,
    /// Round-turn commission per lot in the account currency (a positive cost), counted in the risk. Omit when there is none.
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_SIZING_VALUE))]
    pub commission_per_lot: Option<f64>,
    /// Tick value to size with: `reported` (default, the broker's tick value in the profit currency) or `contract` (`tick_size × contract_size`; use it when `tick_value_check` flags the reported value).
    #[serde(default)]
    pub tick_value_source: Option<TickValueSource>,
}

/// The ATR behind an ATR stop.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AtrUsed {
    /// ATR value at the last closed bar, price units.
    pub value: f64,
    /// Multiple applied.
    pub multiple: f64,
    /// Timeframe of the bars.
    pub timeframe: Timeframe,
    /// ATR period.
    pub period: usize,
    /// Open time of the last closed bar the ATR is taken at, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub bar_time: UnixMs,
    /// Closed bars the ATR was computed over.
    pub bars: usize,
}

/// Output of `calculate_position_size`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PositionSizeOutput {
    /// Instrument.
    pub symbol: String,
    /// Direction.
    pub side: Side,
    /// Account currency of every amount.
    pub currency: String,
    /// Entry price used.
    pub entry_price: f64,
    /// Bid of the quote used, at `quote_time`.
    pub bid: f64,
    /// Ask of the quote used.
    pub ask: f64,
    /// Time of the quote, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub quote_time: UnixMs,
    /// The ATR of an ATR stop; null for other stops.
    pub atr: Option<AtrUsed>,
    /// The sizing: volume, clamp, money at risk, margin, tick value self-check, warnings.
    #[serde(flatten)]
    pub result: SizingResult,
}

fn check_finite_pos(field: &str, v: f64) -> Result<(), ToolError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ToolError::InvalidInput(format!(
            "`{field}` must be a finite number above 0, got {v}"
        )))
    }
}

/// ATR of the closed bars of `symbol` at the last closed bar.
async fn atr_of(
    ctx: &ToolContext,
    symbol: &str,
    timeframe: Timeframe,
    period: usize,
    quote_time: UnixMs,
) -> Result<(f64, UnixMs, usize), ToolError> {
    let count = (period * ATR_BARS_PER_PERIOD + 1).min(crate::market::MAX_BARS as usize) as u32;
    let (bars, _) = closed_bars(ctx, symbol, timeframe, count, Some(quote_time)).await?;
    let atr = AverageTrueRange::new(period).map_err(core_err)?;
    let series = atr.over(&bars).map_err(core_err)?;
    match (series.last().copied().flatten(), bars.last()) {
        (Some(v), Some(last)) if v.is_finite() && v > 0.0 => Ok((v, last.time, bars.len())),
        (Some(_), Some(_)) => Err(ToolError::InvalidInput(format!(
            "the ATR({period}) of {symbol} {timeframe} is 0 (the price did not move): use another stop"
        ))),
        _ => Err(ToolError::NotFound(format!(
            "{} closed {timeframe} bars of {symbol}: too few for ATR({period})",
            bars.len()
        ))),
    }
}

async fn calculate_position_size(ctx: ToolContext, input: PositionSizeInput) -> Result<PositionSizeOutput, ToolError> {
    check_symbol(&input.symbol)?;
    if let Some(asked) = input.entry_price {
        check_finite_pos("entry_price", asked)?;
    }
    let stop_value = match input.stop {
        StopInput::Price { price } => Some(("stop.price", price)),
        StopInput::Points { points } => Some(("stop.points", points)),
        StopInput::Pips { pips } => Some(("stop.pips", pips)),
        StopInput::Atr { .. } => None,
    };
    for (field, value) in [
        ("entry_price", input.entry_price),
        ("commission_per_lot", input.commission_per_lot),
    ]
    .into_iter()
    .chain(stop_value.map(|(f, v)| (f, Some(v))))
    {
        if value.is_some_and(|v| v > MAX_SIZING_VALUE) {
            return Err(ToolError::InvalidInput(format!(
                "`{field}` must be at most {MAX_SIZING_VALUE}"
            )));
        }
    }
    let atr_params = match input.stop {
        StopInput::Atr {
            multiple,
            timeframe,
            period,
        } => {
            if !(MIN_ATR_MULTIPLE..=MAX_SIZING_VALUE).contains(&multiple) {
                return Err(ToolError::InvalidInput(format!(
                    "`stop.multiple` must be between {MIN_ATR_MULTIPLE} and {MAX_SIZING_VALUE}, got {multiple}"
                )));
            }
            let period = period.unwrap_or(DEFAULT_ATR_PERIOD);
            if !(1..=MAX_ATR_PERIOD).contains(&period) {
                return Err(ToolError::InvalidInput(format!(
                    "`stop.period` must be between 1 and {MAX_ATR_PERIOD}, got {period}"
                )));
            }
            Some((multiple, timeframe.unwrap_or(Timeframe::H1), period))
        }
        _ => None,
    };
    let (spec, tick, account) = try_join3(ctx.spec(&input.symbol), ctx.tick(&input.symbol), ctx.account()).await?;
    let entry = input.entry_price.unwrap_or(match input.side {
        Side::Buy => tick.ask,
        Side::Sell => tick.bid,
    });
    let (stop, atr) = match (input.stop, atr_params) {
        (_, Some((multiple, timeframe, period))) => {
            let (value, bar_time, bars) = atr_of(&ctx, &input.symbol, timeframe, period, tick.time).await?;
            let used = AtrUsed {
                value,
                multiple,
                timeframe,
                period,
                bar_time,
                bars,
            };
            (StopSpec::Atr { atr: value, multiple }, Some(used))
        }
        (StopInput::Price { price }, None) => (StopSpec::Price { price }, None),
        (StopInput::Points { points }, None) => (StopSpec::Points { points }, None),
        (StopInput::Pips { pips }, None) => (StopSpec::Pips { pips }, None),
        (StopInput::Atr { .. }, None) => return Err(ToolError::Internal("ATR stop without parameters".into())),
    };
    let currencies = vec![spec.currency_profit.clone(), spec.currency_margin.clone()];
    let known = conversion_quotes(&ctx, &account.currency, &currencies, vec![(spec.clone(), tick.clone())]).await;
    let quotes: Vec<Quote<'_>> = known.iter().map(|(s, t)| Quote::of(s, t)).collect();
    let rates = ConversionRates::from_quotes(&spec, &account.currency, &quotes);
    let request = SizingRequest {
        side: input.side,
        entry_price: entry,
        risk: input.risk,
        stop,
        commission_per_lot: input.commission_per_lot,
        tick_value_source: input.tick_value_source.unwrap_or_default(),
    };
    let result = sizing::calculate_position_size(&spec, &AccountSnapshot::from(&account), &request, &rates)
        .map_err(sizing_err)?;
    Ok(PositionSizeOutput {
        symbol: spec.name.clone(),
        side: input.side,
        currency: account.currency,
        entry_price: entry,
        bid: tick.bid,
        ask: tick.ask,
        quote_time: tick.time,
        atr,
        result,
    })
}

// ================================================================ get_portfolio_summary

/// Input of `get_portfolio_summary`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortfolioSummaryInput {
    /// Only the positions of this instrument (e.g. `EURUSD`). Default: every open position.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: Option<String>,
}

/// Output of `get_portfolio_summary`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PortfolioSummaryOutput {
    /// The symbol filter, null for every position.
    pub symbol: Option<String>,
    /// Account balance.
    pub balance: f64,
    /// Account equity.
    pub equity: f64,
    /// Free margin.
    pub free_margin: f64,
    /// The summary: by symbol, by currency, exposures, floating P&L, swap, margin, risk to the stops.
    #[serde(flatten)]
    pub summary: PortfolioSummary,
}

async fn get_portfolio_summary(
    ctx: ToolContext,
    input: PortfolioSummaryInput,
) -> Result<PortfolioSummaryOutput, ToolError> {
    if let Some(symbol) = &input.symbol {
        check_symbol(symbol)?;
    }
    let (account, open) = try_join(ctx.account(), positions(&ctx, input.symbol.clone())).await?;
    let mut symbols: Vec<String> = Vec::new();
    for position in &open {
        if !symbols.contains(&position.symbol) {
            symbols.push(position.symbol.clone());
        }
    }
    // A symbol the terminal cannot describe is listed in `unknown_symbols` by core.
    let market: Vec<(SymbolSpec, Tick)> = join_all(symbols.iter().map(|s| spec_and_tick(&ctx, s)))
        .await
        .into_iter()
        .flatten()
        .collect();
    let specs: BTreeMap<String, SymbolSpec> = market.iter().map(|(s, _)| (s.name.clone(), s.clone())).collect();
    let mut currencies: Vec<String> = Vec::new();
    for spec in specs.values() {
        for currency in [&spec.currency_base, &spec.currency_profit, &spec.currency_margin] {
            if !currencies.contains(currency) {
                currencies.push(currency.clone());
            }
        }
    }
    let known = conversion_quotes(&ctx, &account.currency, &currencies, market).await;
    let quotes: Vec<Quote<'_>> = known.iter().map(|(s, t)| Quote::of(s, t)).collect();
    let rates = sizing::rates_from_quotes(specs.values(), &account.currency, &quotes);
    let snapshot = AccountSnapshot::from(&account);
    let summary = sizing::portfolio_summary(&PortfolioInput {
        account: &snapshot,
        account_margin: account.margin,
        positions: &open,
        specs: &specs,
        rates: &rates,
    })
    .map_err(sizing_err)?;
    Ok(PortfolioSummaryOutput {
        symbol: input.symbol,
        balance: account.balance,
        equity: account.equity,
        free_margin: account.free_margin,
        summary,
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "calculate_position_size",
            title: "Position size for a risk",
            description: "Lot size of a planned trade for a risk given as % of balance, % of equity or money, with the stop as a price, a distance in points or pips, or an ATR multiple (ATR computed from the symbol's closed bars). Uses the symbol's tick size and tick value converted into the account currency with the terminal's quotes (fails with a clear error when no quote converts the profit currency, never guesses), includes a commission per lot when given, rounds down to the volume step and clamps to the symbol's minimum/maximum (saying so, with `exceeds_risk_budget` when the minimum risks more than asked). Reports the money at risk, margin required and free margin after, and a tick-value self-check that flags a broker tick value that does not match the contract (e.g. already in the account currency). Read-only: nothing is sent.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(calculate_position_size),
        ToolSpec {
            name: "get_portfolio_summary",
            title: "Portfolio summary",
            description: "Open positions (optionally of one symbol) grouped by symbol (long/short/net lots, notionals, floating profit, swap, commission, margin, money at risk to the stops) and by currency (net and gross units and their account-currency value), with totals: gross and net exposure, gross leverage, floating P&L, swap, margin used and margin level, money at risk to the stops in money and % of equity. Positions without a stop loss are listed as unbounded risk; currencies no quote converts are listed, never guessed.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_portfolio_summary),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_tools_are_in_the_catalog_with_described_inputs() {
        for name in ["calculate_position_size", "get_portfolio_summary"] {
            let t = crate::find(name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(t.capability, Capability::Analytics);
            assert!(t.annotations.read_only);
            for (field, schema) in t.input_schema["properties"].as_object().into_iter().flatten() {
                assert!(schema.get("description").is_some(), "{name}.{field} has no description");
            }
        }
        let size = crate::find("calculate_position_size").map(|t| &t.input_schema);
        let required = size.and_then(|s| s["required"].as_array()).cloned().unwrap_or_default();
        assert_eq!(
            required.len(),
            4,
            "symbol, side, risk and stop are required: {required:?}"
        );
    }

    /// Issue 16 item 9: every tool maps to a coverage area of the spec's §1,
    /// and no area is left without a tool.
    #[test]
    fn docs_tools_md_maps_every_tool_to_a_coverage_area() {
        const AREAS: [&str; 9] = [
            "market data",
            "account, positions, orders and history",
            "indicators",
            "key levels and patterns",
            "coaching",
            "analytics",
            "risk",
            "macro, sentiment, news and risk regime",
            "management configuration",
        ];
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tools.md")).unwrap();
        let mut used = std::collections::BTreeSet::new();
        for tool in crate::catalog() {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", tool.name)))
                .unwrap_or_else(|| panic!("docs/tools.md has no row for `{}`", tool.name));
            let cells: Vec<&str> = row.split(" | ").collect();
            assert_eq!(
                cells.len(),
                6,
                "`{}`: name, route, capability, status, coverage area, what: {row}",
                tool.name
            );
            let area = AREAS
                .iter()
                .find(|coverage| cells[4].starts_with(**coverage))
                .unwrap_or_else(|| panic!("`{}`: `{}` is not a coverage area of the spec", tool.name, cells[4]));
            used.insert(*area);
        }
        for coverage in AREAS {
            assert!(used.contains(coverage), "no catalog tool covers `{coverage}`");
        }
    }

    #[test]
    fn sizing_errors_split_between_the_caller_and_the_terminal() {
        let no_rate = SizingError::NoConversion {
            from: "JPY".into(),
            to: "USD".into(),
        };
        assert_eq!(sizing_err(no_rate).code(), "VALIDATION_ERROR");
        let bad_spec = SizingError::Invalid {
            field: "symbol.tick_size".into(),
            reason: "0".into(),
        };
        assert_eq!(sizing_err(bad_spec).code(), "DISPATCH_ERROR");
        let bad_stop = SizingError::Invalid {
            field: "stop".into(),
            reason: "wrong side".into(),
        };
        assert_eq!(sizing_err(bad_stop).code(), "VALIDATION_ERROR");
    }
}
