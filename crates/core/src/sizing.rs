//! Risk sizing: the volume of a new trade for a given risk, and a summary of
//! the open positions' exposure, margin and risk to their stops (pure
//! functions; the `tradeterm-tools` wrappers fetch the symbol, account,
//! positions and quotes).
//!
//! # Lot sizing ([`calculate_position_size`])
//!
//! 1. **Risk budget** (account currency): a percentage of the balance or of
//!    the equity, or an amount of money.
//! 2. **Stop distance** (price units): `|entry − stop|` for a stop price (which
//!    must lie on the losing side of the entry), `points × point`,
//!    `pips × pip` (a pip is 10 points on 3- and 5-digit symbols, else 1
//!    point), or `multiple × ATR` with the ATR value given by the caller.
//! 3. **Loss per lot** (account currency):
//!    `distance / tick_size × tick_value × rate + commission_per_lot`, where
//!    `tick_value` is the value of one tick for one lot in the symbol's
//!    *profit* currency and `rate` converts the profit currency into the
//!    account currency. The caller supplies `rate` (from the terminal's
//!    quotes, see [`crate::trading::conversion_rate`]); without one the
//!    computation stops with [`SizingError::NoConversion`]: a rate is never
//!    guessed.
//! 4. **Volume**: `risk / loss_per_lot`, rounded **down** to the volume step,
//!    then clamped to `[volume_min, volume_max]`. A clamp is reported; a
//!    volume raised to the minimum risks more than the budget, and the result
//!    says so (`exceeds_risk_budget`).
//! 5. **Margin** with [`crate::trading::margin_required`] (the symbol's margin
//!    mode, leverage, contract size and margin rate) and the free margin left.
//!
//! The **tick value self-check** compares the reported `tick_value` with
//! `tick_size × contract_size` (its value in the profit currency by
//! definition). Brokers often report it in the account currency instead
//! (MetaTrader 5's convention) or round it; a relative difference above
//! [`TICK_VALUE_TOLERANCE`] is flagged, and the check says when the reported
//! value matches the account-currency value, in which case converting it again
//! would be wrong. [`TickValueSource::Contract`] sizes with the computed value.
//!
//! # Portfolio summary ([`portfolio_summary`])
//!
//! Open positions grouped by symbol and by currency. A buy of `v` lots of
//! `BASE/QUOTE` with contract size `c` at price `p` is `+v·c` units of `BASE`
//! and `−v·c·p` units of `QUOTE` (CFDs: the instrument is the base).
//! Amounts are converted to the account currency with the caller's rates; a
//! currency without a rate is listed as unconverted, never guessed. Gross
//! exposure is the sum of the positions' notionals in the account currency;
//! net exposure is the sum of the absolute net amounts of every currency other
//! than the account currency. Money at risk to the stops is what equity would
//! lose from the current price if every stop were hit; a position without a
//! stop is listed as unbounded.
//!
//! Formulas and worked examples: `docs/sizing.md`.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::sizing::{AccountSnapshot, ConversionRates, RiskSpec, SizingRequest, StopSpec, calculate_position_size};
//! use tradeterm_core::{Side, SymbolSpec};
//! # use tradeterm_core::market::{MarginMode, SwapMode};
//! # let eurusd = SymbolSpec { name: "EURUSD".into(), description: String::new(), currency_base: "EUR".into(),
//! #   currency_profit: "USD".into(), currency_margin: "EUR".into(), digits: 5, point: 0.00001,
//! #   contract_size: 100_000.0, tick_size: 0.00001, tick_value: 1.0, volume_min: 0.01, volume_max: 100.0,
//! #   volume_step: 0.01, stops_level: 0, swap_long: 0.0, swap_short: 0.0, swap_mode: SwapMode::Disabled,
//! #   swap_triple_day: 3, margin_mode: MarginMode::Forex, margin_rate: 1.0, sessions: vec![],
//! #   expiration_modes: vec![], filling_modes: vec![] };
//!
//! // Risk 1 % of a 10 000 USD balance with a 50-pip stop on EURUSD.
//! let account = AccountSnapshot { currency: "USD".into(), balance: 10_000.0, equity: 10_000.0, free_margin: 10_000.0, leverage: 100 };
//! let request = SizingRequest {
//!     side: Side::Buy,
//!     entry_price: 1.10000,
//!     risk: RiskSpec::PercentOfBalance { percent: 1.0 },
//!     stop: StopSpec::Pips { pips: 50.0 },
//!     commission_per_lot: None,
//!     tick_value_source: Default::default(),
//! };
//! let rates = ConversionRates { profit_to_account: Some(1.0), margin_to_account: Some(1.10000) };
//! let size = calculate_position_size(&eurusd, &account, &request, &rates)?;
//! assert_eq!(size.volume, 0.2); // 100 USD / (500 points × 1 USD per point per lot)
//! assert!((size.money_at_risk - 100.0).abs() < 1e-9);
//! # Ok::<(), tradeterm_core::sizing::SizingError>(())
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::account::{Position, Side};
use crate::market::SymbolSpec;
use crate::trading;

/// Relative difference between the reported tick value and
/// `tick_size × contract_size` above which the tick value is flagged (0.5 %).
pub const TICK_VALUE_TOLERANCE: f64 = 0.005;

/// Slack when rounding a volume down to its step, in steps, so that binary
/// noise (`0.29999999999999999 / 0.01`) does not lose a whole step.
const STEP_EPS: f64 = 1e-9;

/// Why a sizing or summary could not be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SizingError {
    /// An input is missing, not finite or out of range.
    #[error("invalid `{field}`: {reason}")]
    Invalid {
        /// The input's name, as in the request.
        field: String,
        /// Why it is refused.
        reason: String,
    },
    /// The profit currency cannot be converted into the account currency with
    /// the quotes available.
    #[error(
        "no conversion rate from {from} to {to}: the terminal has no quote linking the two currencies, so the value of a price move in {to} is unknown"
    )]
    NoConversion {
        /// Currency to convert from (the symbol's profit currency).
        from: String,
        /// Currency to convert into (the account currency).
        to: String,
    },
}

impl SizingError {
    fn invalid(field: &str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// How much to risk on the trade.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RiskSpec {
    /// A percentage of the account balance (`1.0` = 1 %).
    PercentOfBalance {
        /// Percentage, above 0 and at most 100.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
        percent: f64,
    },
    /// A percentage of the account equity (`1.0` = 1 %).
    PercentOfEquity {
        /// Percentage, above 0 and at most 100.
        #[schemars(extend("exclusiveMinimum" = 0), range(max = 100))]
        percent: f64,
    },
    /// A fixed amount of money in the account currency.
    Money {
        /// Amount, above 0.
        #[schemars(extend("exclusiveMinimum" = 0))]
        amount: f64,
    },
}

/// Where the stop loss is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StopSpec {
    /// A stop loss price: below the entry for a buy, above it for a sell.
    Price {
        /// Stop loss price.
        price: f64,
    },
    /// A distance from the entry in points (the symbol's smallest price digit).
    Points {
        /// Distance in points, above 0.
        points: f64,
    },
    /// A distance from the entry in pips: 10 points on 3- and 5-digit symbols
    /// (EURUSD 0.0001, USDJPY 0.01), 1 point otherwise.
    Pips {
        /// Distance in pips, above 0.
        pips: f64,
    },
    /// A multiple of the Average True Range; the caller supplies the ATR value
    /// (price units, e.g. from `get_indicator`).
    Atr {
        /// ATR value in price units, above 0.
        atr: f64,
        /// Multiple of the ATR, above 0 (e.g. 1.5).
        multiple: f64,
    },
}

/// Which tick value the loss per lot is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TickValueSource {
    /// The tick value the broker reports (profit currency), as MetaTrader's
    /// order calculations use it.
    #[default]
    Reported,
    /// `tick_size × contract_size`, computed from the contract specification
    /// (use it when the self-check flags the reported value).
    Contract,
}

/// A sizing request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SizingRequest {
    /// Direction of the planned trade.
    pub side: Side,
    /// Planned entry price (the ask for a market buy, the bid for a market
    /// sell, or a pending order's price).
    pub entry_price: f64,
    /// How much to risk.
    pub risk: RiskSpec,
    /// Where the stop loss is.
    pub stop: StopSpec,
    /// Round-turn commission per lot in the account currency (a positive
    /// cost), counted as part of the risk. Omit when there is none.
    #[serde(default)]
    pub commission_per_lot: Option<f64>,
    /// Which tick value to size with; default `reported`.
    #[serde(default)]
    pub tick_value_source: TickValueSource,
}

/// The account figures sizing needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccountSnapshot {
    /// Deposit currency (`USD`).
    pub currency: String,
    /// Balance.
    pub balance: f64,
    /// Equity.
    pub equity: f64,
    /// Free margin.
    pub free_margin: f64,
    /// Leverage (100 means 1:100).
    pub leverage: u32,
}

impl From<&crate::account::AccountInfo> for AccountSnapshot {
    fn from(a: &crate::account::AccountInfo) -> Self {
        Self {
            currency: a.currency.clone(),
            balance: a.balance,
            equity: a.equity,
            free_margin: a.free_margin,
            leverage: a.leverage,
        }
    }
}

/// Conversion rates into the account currency, found by the caller from the
/// terminal's quotes (`None`: no quote links the currencies).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConversionRates {
    /// Profit currency → account currency (1 when they are the same).
    pub profit_to_account: Option<f64>,
    /// Margin currency → account currency (1 when they are the same).
    pub margin_to_account: Option<f64>,
}

impl ConversionRates {
    /// The rates for `spec` on an account in `account_currency`, from the
    /// quotes the terminal has (direct, inverse or one cross; see
    /// [`trading::conversion_rate`]). `None` where no quote links the currencies.
    pub fn from_quotes(spec: &SymbolSpec, account_currency: &str, quotes: &[trading::Quote<'_>]) -> Self {
        Self {
            profit_to_account: trading::conversion_rate(&spec.currency_profit, account_currency, quotes),
            margin_to_account: trading::conversion_rate(&spec.currency_margin, account_currency, quotes),
        }
    }
}

/// Rates converting each currency (base, profit and margin currency of every
/// spec) into `account_currency`, for [`PortfolioInput::rates`]; currencies
/// without a linking quote are left out.
pub fn rates_from_quotes<'s>(
    specs: impl IntoIterator<Item = &'s SymbolSpec>,
    account_currency: &str,
    quotes: &[trading::Quote<'_>],
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for spec in specs {
        for c in [&spec.currency_base, &spec.currency_profit, &spec.currency_margin] {
            if out.contains_key(c) {
                continue;
            }
            if let Some(r) = trading::conversion_rate(c, account_currency, quotes) {
                out.insert(c.clone(), r);
            }
        }
    }
    out
}

/// How the volume was clamped to the symbol's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VolumeClamp {
    /// The rounded volume was within the limits.
    None,
    /// The rounded volume was below `volume_min` and was raised to it: the
    /// trade risks more than the budget.
    RaisedToMinimum,
    /// The volume was above `volume_max` and was lowered to it.
    LoweredToMaximum,
}

/// The tick value self-check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TickValueCheck {
    /// Tick value reported by the broker (profit currency by definition).
    pub reported: f64,
    /// `tick_size × contract_size`: one tick for one lot in the profit currency.
    pub computed: f64,
    /// `|reported − computed| / computed`.
    pub relative_difference: f64,
    /// Whether the two agree within the tolerance.
    pub consistent: bool,
    /// Whether the reported value matches `computed × rate` (the value in the
    /// account currency), MetaTrader 5's convention, rather than the profit
    /// currency value.
    pub matches_account_currency: bool,
    /// The tolerance used (relative).
    pub tolerance: f64,
    /// Which value the sizing used.
    pub used: TickValueSource,
}

/// Result of [`calculate_position_size`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SizingResult {
    /// Volume to trade in lots: rounded down to the volume step and clamped to
    /// the symbol's limits.
    pub volume: f64,
    /// The exact volume for the risk budget, before rounding and clamping; `null` when the loss per lot is 0 (a
    /// stop distance below the price's resolution): any volume fits the budget, so `volume` is the symbol's
    /// maximum (said in `warnings`).
    pub raw_volume: Option<f64>,
    /// Whether and how the volume was clamped.
    pub clamp: VolumeClamp,
    /// Risk budget, account currency.
    pub risk_budget: f64,
    /// Loss at the stop of `volume` lots, commission included, account currency.
    pub money_at_risk: f64,
    /// `money_at_risk` in percent of the balance.
    pub risk_percent_of_balance: Option<f64>,
    /// Whether `money_at_risk` exceeds the budget (only when raised to the minimum volume).
    pub exceeds_risk_budget: bool,
    /// Stop loss price (given, or entry ∓ distance; at or below zero for a buy
    /// whose distance exceeds the entry, with a warning).
    pub stop_price: f64,
    /// Stop distance in price units.
    pub stop_distance: f64,
    /// Stop distance in points.
    pub stop_points: f64,
    /// Loss of one lot at the stop, commission included, account currency.
    pub loss_per_lot: f64,
    /// Value of one tick for one lot in the account currency, as used.
    pub tick_value_account: f64,
    /// Profit currency → account currency rate used.
    pub conversion_rate: f64,
    /// Margin for `volume` lots, account currency (`None` without a margin-currency rate).
    pub margin_required: Option<f64>,
    /// Free margin after opening, account currency (`None` without margin).
    pub free_margin_after: Option<f64>,
    /// Tick value self-check.
    pub tick_value_check: TickValueCheck,
    /// Plain-language notes: clamps, a flagged tick value, missing rates, not enough margin.
    pub warnings: Vec<String>,
}

fn finite_pos(field: &str, v: f64) -> Result<f64, SizingError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(SizingError::invalid(
            field,
            format!("must be a finite number above 0 (got {v})"),
        ))
    }
}

fn percent(field: &str, v: f64) -> Result<f64, SizingError> {
    if v.is_finite() && v > 0.0 && v <= 100.0 {
        Ok(v)
    } else {
        Err(SizingError::invalid(
            field,
            format!("must be above 0 and at most 100 (got {v})"),
        ))
    }
}

/// Checks the fields of a symbol specification that sizing divides by.
fn check_spec(spec: &SymbolSpec) -> Result<(), SizingError> {
    finite_pos("symbol.tick_size", spec.tick_size)?;
    finite_pos("symbol.tick_value", spec.tick_value)?;
    finite_pos("symbol.contract_size", spec.contract_size)?;
    finite_pos("symbol.point", spec.point)?;
    finite_pos("symbol.volume_step", spec.volume_step)?;
    finite_pos("symbol.volume_min", spec.volume_min)?;
    finite_pos("symbol.volume_max", spec.volume_max)?;
    if spec.volume_max < spec.volume_min {
        return Err(SizingError::invalid("symbol.volume_max", "is below volume_min"));
    }
    Ok(())
}

/// Size of one pip in price units: 10 points on 3- and 5-digit symbols, else 1 point.
pub fn pip_size(spec: &SymbolSpec) -> f64 {
    if spec.digits == 3 || spec.digits == 5 {
        spec.point * 10.0
    } else {
        spec.point
    }
}

/// Rounds `volume` down to a multiple of `step` (with a tiny slack for binary
/// noise), with the binary noise of the product removed.
pub fn floor_to_step(volume: f64, step: f64) -> f64 {
    if !(step.is_finite() && step > 0.0 && volume.is_finite()) {
        return volume;
    }
    let n = (volume / step + STEP_EPS).floor();
    ((n * step) * 1e8).round() / 1e8
}

/// Risk budget in the account currency.
fn risk_budget(risk: &RiskSpec, account: &AccountSnapshot) -> Result<f64, SizingError> {
    match *risk {
        RiskSpec::PercentOfBalance { percent: p } => {
            let p = percent("risk.percent", p)?;
            let b = finite_pos("account.balance", account.balance)?;
            Ok(b * p / 100.0)
        }
        RiskSpec::PercentOfEquity { percent: p } => {
            let p = percent("risk.percent", p)?;
            let e = finite_pos("account.equity", account.equity)?;
            Ok(e * p / 100.0)
        }
        RiskSpec::Money { amount } => finite_pos("risk.amount", amount),
    }
}

/// Stop distance (price units) and stop price.
fn stop_distance(spec: &SymbolSpec, side: Side, entry: f64, stop: &StopSpec) -> Result<(f64, f64), SizingError> {
    let distance = match *stop {
        StopSpec::Price { price } => {
            let price = finite_pos("stop.price", price)?;
            let d = (entry - price) * side.sign();
            if d <= 0.0 {
                let want = match side {
                    Side::Buy => "below",
                    Side::Sell => "above",
                };
                return Err(SizingError::invalid(
                    "stop.price",
                    format!(
                        "a {} stop must be {want} the entry {entry} (got {price})",
                        side_name(side)
                    ),
                ));
            }
            return Ok((d, price));
        }
        StopSpec::Points { points } => finite_pos("stop.points", points)? * spec.point,
        StopSpec::Pips { pips } => finite_pos("stop.pips", pips)? * pip_size(spec),
        StopSpec::Atr { atr, multiple } => finite_pos("stop.atr", atr)? * finite_pos("stop.multiple", multiple)?,
    };
    // A distance past zero (a buy only) is kept: the size needs only the
    // distance; `calculate_position_size` warns that no stop can sit there.
    let price = entry - side.sign() * distance;
    Ok((distance, spec.normalize_price(price)))
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

/// Compares the reported tick value with `tick_size × contract_size`.
pub fn check_tick_value(spec: &SymbolSpec, profit_to_account: f64, used: TickValueSource) -> TickValueCheck {
    let computed = spec.tick_size * spec.contract_size;
    let rel = |a: f64, b: f64| if b != 0.0 { ((a - b) / b).abs() } else { f64::INFINITY };
    let relative_difference = rel(spec.tick_value, computed);
    let consistent = relative_difference <= TICK_VALUE_TOLERANCE;
    let matches_account_currency = (profit_to_account - 1.0).abs() > TICK_VALUE_TOLERANCE
        && rel(spec.tick_value, computed * profit_to_account) <= TICK_VALUE_TOLERANCE;
    TickValueCheck {
        reported: spec.tick_value,
        computed,
        relative_difference,
        consistent,
        matches_account_currency,
        tolerance: TICK_VALUE_TOLERANCE,
        used,
    }
}

/// The warning of a flagged tick value, if any.
fn tick_warning(check: &TickValueCheck, account_currency: &str) -> Option<String> {
    if check.consistent {
        return None;
    }
    let mut w = format!(
        "the broker's tick value {} differs from tick_size × contract_size = {} ({:.2} % apart)",
        check.reported,
        check.computed,
        check.relative_difference * 100.0
    );
    if check.matches_account_currency {
        w += &format!(
            "; it matches the value in {account_currency} (already converted), so sizing with it converts twice: use tick_value_source `contract`"
        );
    }
    Some(w)
}

/// Rounds a volume down to the step and clamps it to the symbol's limits.
fn clamp_volume(spec: &SymbolSpec, raw: f64) -> (f64, VolumeClamp) {
    let volume = floor_to_step(raw, spec.volume_step);
    if volume < spec.volume_min {
        (spec.volume_min, VolumeClamp::RaisedToMinimum)
    } else if volume > spec.volume_max {
        let max = floor_to_step(spec.volume_max, spec.volume_step).max(spec.volume_min);
        (max, VolumeClamp::LoweredToMaximum)
    } else {
        (volume, VolumeClamp::None)
    }
}

/// Volume of a new trade for a risk budget. See the module documentation for
/// the formulas.
///
/// # Errors
/// [`SizingError::Invalid`] for a non-finite or out-of-range input (a zero
/// tick size, a stop on the wrong side of the entry, ...);
/// [`SizingError::NoConversion`] without a profit-currency rate.
pub fn calculate_position_size(
    spec: &SymbolSpec,
    account: &AccountSnapshot,
    request: &SizingRequest,
    rates: &ConversionRates,
) -> Result<SizingResult, SizingError> {
    check_spec(spec)?;
    let entry = finite_pos("entry_price", request.entry_price)?;
    let rate = match rates.profit_to_account {
        Some(r) => finite_pos("rates.profit_to_account", r)?,
        None => {
            return Err(SizingError::NoConversion {
                from: spec.currency_profit.clone(),
                to: account.currency.clone(),
            });
        }
    };
    let commission = match request.commission_per_lot {
        Some(c) if !(c.is_finite() && c >= 0.0) => {
            return Err(SizingError::invalid(
                "commission_per_lot",
                "must be a finite number ≥ 0",
            ));
        }
        Some(c) => c,
        None => 0.0,
    };
    let budget = risk_budget(&request.risk, account)?;
    let (distance, stop_price) = stop_distance(spec, request.side, entry, &request.stop)?;

    let mut warnings = Vec::new();
    if stop_price <= 0.0 {
        warnings.push(format!(
            "the stop distance {distance} puts the stop at {stop_price}, at or below zero: no stop order can be placed \
             there, and a long position cannot lose more than its entry {entry}, so the volume, sized on the full \
             distance, risks less than the budget"
        ));
    }
    let check = check_tick_value(spec, rate, request.tick_value_source);
    warnings.extend(tick_warning(&check, &account.currency));
    let tick_value_profit = match request.tick_value_source {
        TickValueSource::Reported => spec.tick_value,
        TickValueSource::Contract => check.computed,
    };
    let tick_value_account = tick_value_profit * rate;
    let loss_per_lot = distance / spec.tick_size * tick_value_account + commission;
    let raw_volume = budget / loss_per_lot;
    if raw_volume.is_nan() || !loss_per_lot.is_finite() {
        return Err(SizingError::invalid("stop", "the loss per lot is not a finite number"));
    }
    // A loss per lot of 0 (or so small that the budget over it overflows):
    // any volume fits the budget; the symbol's maximum is the answer.
    let raw_volume = raw_volume.is_finite().then_some(raw_volume);
    if raw_volume.is_none() {
        warnings.push(format!(
            "the stop distance {distance} loses {loss_per_lot} {} per lot: any volume fits the budget, so the volume \
             is the symbol's maximum",
            account.currency
        ));
    }

    let (volume, clamp) = clamp_volume(spec, raw_volume.unwrap_or(f64::INFINITY));
    let money_at_risk = volume * loss_per_lot;
    let exceeds_risk_budget = money_at_risk > budget * (1.0 + 1e-9);
    match (clamp, raw_volume) {
        (VolumeClamp::RaisedToMinimum, Some(raw_volume)) => warnings.push(format!(
            "the volume for the budget ({raw_volume:.4} lots) is below the minimum {} lots: the minimum risks {money_at_risk:.2} {} instead of {budget:.2}",
            spec.volume_min, account.currency
        )),
        (VolumeClamp::LoweredToMaximum, Some(raw_volume)) => warnings.push(format!(
            "the volume for the budget ({raw_volume:.2} lots) is above the maximum {} lots: lowered to it",
            spec.volume_max
        )),
        _ => {}
    }

    let margin = rates
        .margin_to_account
        .filter(|r| r.is_finite() && *r > 0.0)
        .map(|r| trading::margin_required(spec, volume, entry, account.leverage, r));
    if margin.is_none() {
        warnings.push(format!(
            "no conversion rate from the margin currency {} to {}: margin not computed",
            spec.currency_margin, account.currency
        ));
    }
    let free_margin_after = margin.map(|m| account.free_margin - m);
    if let Some(f) = free_margin_after
        && f < 0.0
    {
        warnings.push(format!(
            "not enough free margin: the trade needs {:.2} {} more than is free",
            -f, account.currency
        ));
    }
    Ok(SizingResult {
        volume,
        raw_volume,
        clamp,
        risk_budget: budget,
        money_at_risk,
        risk_percent_of_balance: (account.balance > 0.0).then(|| money_at_risk / account.balance * 100.0),
        exceeds_risk_budget,
        stop_price,
        stop_distance: distance,
        stop_points: distance / spec.point,
        loss_per_lot,
        tick_value_account,
        conversion_rate: rate,
        margin_required: margin,
        free_margin_after,
        tick_value_check: check,
        warnings,
    })
}

// ================================================================ portfolio summary

/// Inputs of [`portfolio_summary`].
#[derive(Debug, Clone)]
pub struct PortfolioInput<'a> {
    /// Account figures (`free_margin` and `leverage` included).
    pub account: &'a AccountSnapshot,
    /// Margin in use as the terminal reports it.
    pub account_margin: f64,
    /// The open positions.
    pub positions: &'a [Position],
    /// Symbol specifications by symbol name; a position whose symbol is
    /// missing is summarised without notional, margin and risk (listed in
    /// [`PortfolioSummary::unknown_symbols`]).
    pub specs: &'a BTreeMap<String, SymbolSpec>,
    /// Rates converting one unit of a currency into the account currency
    /// (the account currency itself need not be listed).
    pub rates: &'a BTreeMap<String, f64>,
}

/// Risk of one position to its stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PositionRisk {
    /// Position ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Long or short.
    pub side: Side,
    /// Volume in lots.
    pub volume: f64,
    /// Stop loss price, `None` when the position has no stop (unbounded risk).
    pub stop_loss: Option<f64>,
    /// What equity loses from the current price if the stop is hit, account
    /// currency (0 when the stop is beyond the current price); `None` without
    /// a stop or without a rate.
    pub at_risk: Option<f64>,
    /// Result of the trade if closed at the stop (from the open price, swap
    /// and commission included): positive when the stop locks in a profit.
    pub pnl_at_stop: Option<f64>,
}

/// Summary of one symbol's positions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SymbolExposure {
    /// Instrument.
    pub symbol: String,
    /// Number of open positions.
    pub positions: usize,
    /// Lots held long.
    pub long_lots: f64,
    /// Lots held short.
    pub short_lots: f64,
    /// `long_lots − short_lots`.
    pub net_lots: f64,
    /// Net notional in base units (`net_lots × contract_size`).
    pub net_units: Option<f64>,
    /// Gross notional in the account currency (Σ `volume × contract_size × price`, converted).
    pub gross_notional: Option<f64>,
    /// Net notional in the account currency (long minus short, converted).
    pub net_notional: Option<f64>,
    /// Floating profit, account currency.
    pub profit: f64,
    /// Accumulated swap, account currency.
    pub swap: f64,
    /// Commission charged, account currency.
    pub commission: f64,
    /// Margin computed from the specification, account currency (`None` without a rate).
    pub margin: Option<f64>,
    /// Money at risk to the stops of the positions that have one.
    pub at_risk: f64,
    /// Tickets of positions without a stop (unbounded risk).
    pub unbounded: Vec<u64>,
}

/// Exposure to one currency across the positions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CurrencyExposureSummary {
    /// Currency (or a CFD's instrument name).
    pub currency: String,
    /// Signed lots of positions where it is the base (bought EUR in EURUSD: +).
    pub net_lots_as_base: f64,
    /// Signed lots of positions where it is the quote (bought EURUSD: − for USD).
    pub net_lots_as_quote: f64,
    /// Net amount in units of the currency (long +, short −).
    pub net_units: f64,
    /// Gross amount in units (Σ of absolute leg amounts).
    pub gross_units: f64,
    /// `net_units` in the account currency; `None` without a rate.
    pub net_account: Option<f64>,
    /// `gross_units` in the account currency; `None` without a rate.
    pub gross_account: Option<f64>,
}

/// Result of [`portfolio_summary`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioSummary {
    /// Account currency.
    pub currency: String,
    /// Number of open positions.
    pub positions: usize,
    /// By symbol, in name order.
    pub by_symbol: Vec<SymbolExposure>,
    /// By currency, in name order.
    pub by_currency: Vec<CurrencyExposureSummary>,
    /// Σ of position notionals, account currency (positions with a rate).
    pub gross_exposure: f64,
    /// Σ |net amount| of every currency other than the account currency, account currency.
    pub net_exposure: f64,
    /// `gross_exposure / equity` (effective leverage); `None` for equity ≤ 0.
    pub gross_leverage: Option<f64>,
    /// Floating profit, account currency.
    pub floating_profit: f64,
    /// Accumulated swap.
    pub swap: f64,
    /// Commission charged.
    pub commission: f64,
    /// Margin in use as the terminal reports it.
    pub margin_used: f64,
    /// Margin computed from the specifications (positions with a rate).
    pub margin_computed: f64,
    /// Margin level in percent (`equity / margin × 100`), `None` without margin.
    pub margin_level: Option<f64>,
    /// `margin_used / equity × 100`.
    pub margin_use_percent: Option<f64>,
    /// Money at risk to the stops of the positions that have one, account currency.
    pub at_risk: f64,
    /// `at_risk` in percent of equity.
    pub at_risk_percent: Option<f64>,
    /// Whether every position has a stop (otherwise the total risk is unbounded).
    pub risk_bounded: bool,
    /// Risk of every position, in ticket order.
    pub position_risk: Vec<PositionRisk>,
    /// Currencies without a conversion rate into the account currency.
    pub unconverted: Vec<String>,
    /// Symbols of positions without a specification.
    pub unknown_symbols: Vec<String>,
}

impl PortfolioSummary {
    /// The open risk for an equity guard observation
    /// ([`crate::equity_guard::Observation::open_risk`]).
    pub fn open_risk(&self) -> crate::equity_guard::OpenRisk {
        crate::equity_guard::OpenRisk {
            amount: self.at_risk,
            unbounded_positions: self.position_risk.iter().filter(|r| r.stop_loss.is_none()).count() as u32,
        }
    }
}

fn rate_of(rates: &BTreeMap<String, f64>, account_ccy: &str, ccy: &str) -> Option<f64> {
    if ccy.eq_ignore_ascii_case(account_ccy) {
        return Some(1.0);
    }
    rates
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(ccy))
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite() && *v > 0.0)
}

fn check_position(p: &Position) -> Result<(), SizingError> {
    let vals = [p.volume, p.open_price, p.current_price, p.swap, p.commission, p.profit];
    if vals.iter().any(|v| !v.is_finite()) || p.volume < 0.0 {
        return Err(SizingError::invalid(
            "positions",
            format!("position {} has a non-finite or negative value", p.ticket),
        ));
    }
    Ok(())
}

/// Summarises the open positions (see the module documentation).
///
/// # Errors
/// [`SizingError::Invalid`] for a non-finite account figure or position value.
pub fn portfolio_summary(input: &PortfolioInput<'_>) -> Result<PortfolioSummary, SizingError> {
    let acc = input.account;
    if !(acc.equity.is_finite() && acc.balance.is_finite() && input.account_margin.is_finite()) {
        return Err(SizingError::invalid(
            "account",
            "balance, equity and margin must be finite",
        ));
    }
    let mut tally = Tally::new(input);
    let mut positions: Vec<&Position> = input.positions.iter().collect();
    positions.sort_by_key(|p| p.ticket);
    for p in positions {
        check_position(p)?;
        tally.add(p);
    }
    Ok(tally.finish())
}

/// Sum of two optional amounts: `None` once either is unknown.
fn add_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

impl SymbolExposure {
    fn new(symbol: &str) -> Self {
        Self {
            symbol: symbol.to_string(),
            positions: 0,
            long_lots: 0.0,
            short_lots: 0.0,
            net_lots: 0.0,
            net_units: Some(0.0),
            gross_notional: Some(0.0),
            net_notional: Some(0.0),
            profit: 0.0,
            swap: 0.0,
            commission: 0.0,
            margin: Some(0.0),
            at_risk: 0.0,
            unbounded: Vec::new(),
        }
    }

    /// Adds the parts of a position that need no specification.
    fn add_plain(&mut self, p: &Position) {
        self.positions += 1;
        match p.side {
            Side::Buy => self.long_lots += p.volume,
            Side::Sell => self.short_lots += p.volume,
        }
        self.net_lots = self.long_lots - self.short_lots;
        self.profit += p.profit;
        self.swap += p.swap;
        self.commission += p.commission;
        if trading::level(p.stop_loss).is_none() {
            self.unbounded.push(p.ticket);
        }
    }
}

impl CurrencyExposureSummary {
    fn new(currency: &str) -> Self {
        Self {
            currency: currency.to_string(),
            net_lots_as_base: 0.0,
            net_lots_as_quote: 0.0,
            net_units: 0.0,
            gross_units: 0.0,
            net_account: None,
            gross_account: None,
        }
    }
}

/// Running totals of [`portfolio_summary`].
struct Tally<'a> {
    input: &'a PortfolioInput<'a>,
    by_symbol: BTreeMap<String, SymbolExposure>,
    by_ccy: BTreeMap<String, CurrencyExposureSummary>,
    unconverted: Vec<String>,
    unknown: Vec<String>,
    risks: Vec<PositionRisk>,
    gross_exposure: f64,
    margin_computed: f64,
}

impl<'a> Tally<'a> {
    fn new(input: &'a PortfolioInput<'a>) -> Self {
        Self {
            input,
            by_symbol: BTreeMap::new(),
            by_ccy: BTreeMap::new(),
            unconverted: Vec::new(),
            unknown: Vec::new(),
            risks: Vec::new(),
            gross_exposure: 0.0,
            margin_computed: 0.0,
        }
    }

    /// The rate of `ccy` into the account currency, noting a missing one.
    fn rate(&mut self, ccy: &str) -> Option<f64> {
        let r = rate_of(self.input.rates, &self.input.account.currency, ccy);
        if r.is_none() && !self.unconverted.iter().any(|c| c == ccy) {
            self.unconverted.push(ccy.to_string());
        }
        r
    }

    fn add(&mut self, p: &Position) {
        let sym = self
            .by_symbol
            .entry(p.symbol.clone())
            .or_insert_with(|| SymbolExposure::new(&p.symbol));
        sym.add_plain(p);
        let stop = trading::level(p.stop_loss);
        let mut risk = PositionRisk {
            ticket: p.ticket,
            symbol: p.symbol.clone(),
            side: p.side,
            volume: p.volume,
            stop_loss: stop,
            at_risk: None,
            pnl_at_stop: None,
        };
        let Some(spec) = self.input.specs.get(&p.symbol) else {
            sym.net_units = None;
            sym.gross_notional = None;
            sym.net_notional = None;
            sym.margin = None;
            if !self.unknown.contains(&p.symbol) {
                self.unknown.push(p.symbol.clone());
            }
            self.risks.push(risk);
            return;
        };
        let profit_rate = self.rate(&spec.currency_profit);
        self.rate(&spec.currency_base);
        let margin_rate = self.rate(&spec.currency_margin);

        let units = p.volume * spec.contract_size * p.side.sign();
        let notional = profit_rate.map(|r| p.volume * spec.contract_size * p.current_price * r);
        let margin = margin_rate
            .map(|r| trading::margin_required(spec, p.volume, p.current_price, self.input.account.leverage, r));
        self.gross_exposure += notional.unwrap_or(0.0);
        self.margin_computed += margin.unwrap_or(0.0);
        if let (Some(sl), Some(r)) = (stop, profit_rate) {
            let move_to_stop = (sl - p.current_price) * p.side.sign() * p.volume * spec.contract_size * r;
            risk.at_risk = Some((-move_to_stop).max(0.0));
            risk.pnl_at_stop =
                Some(trading::profit(spec, p.side, p.volume, p.open_price, sl, r) + p.swap + p.commission);
        }
        if let Some(sym) = self.by_symbol.get_mut(&p.symbol) {
            sym.net_units = sym.net_units.map(|u| u + units);
            sym.gross_notional = add_opt(sym.gross_notional, notional);
            sym.net_notional = add_opt(sym.net_notional, notional.map(|n| n * p.side.sign()));
            sym.margin = add_opt(sym.margin, margin);
            sym.at_risk += risk.at_risk.unwrap_or(0.0);
        }
        self.add_legs(spec, p, units);
        self.risks.push(risk);
    }

    /// The two currency legs of a position: `+units` of the base, `−units × price` of the quote.
    fn add_legs(&mut self, spec: &SymbolSpec, p: &Position, units: f64) {
        let lots = p.volume * p.side.sign();
        let legs = [
            (&spec.currency_base, units, lots, 0.0),
            (&spec.currency_profit, -units * p.current_price, 0.0, -lots),
        ];
        for (ccy, amount, as_base, as_quote) in legs {
            let e = self
                .by_ccy
                .entry(ccy.clone())
                .or_insert_with(|| CurrencyExposureSummary::new(ccy));
            e.net_lots_as_base += as_base;
            e.net_lots_as_quote += as_quote;
            e.net_units += amount;
            e.gross_units += amount.abs();
        }
    }

    fn finish(mut self) -> PortfolioSummary {
        let acc = self.input.account;
        let mut net_exposure = 0.0;
        for e in self.by_ccy.values_mut() {
            let r = rate_of(self.input.rates, &acc.currency, &e.currency);
            e.net_account = r.map(|r| e.net_units * r);
            e.gross_account = r.map(|r| e.gross_units * r);
            if !e.currency.eq_ignore_ascii_case(&acc.currency) {
                net_exposure += e.net_account.map_or(0.0, f64::abs);
            }
        }
        let at_risk: f64 = self.risks.iter().filter_map(|r| r.at_risk).sum();
        self.unconverted.sort();
        self.unknown.sort();
        let positions = self.input.positions;
        let eq_pos = acc.equity > 0.0;
        PortfolioSummary {
            currency: acc.currency.clone(),
            positions: positions.len(),
            by_symbol: self.by_symbol.into_values().collect(),
            by_currency: self.by_ccy.into_values().collect(),
            gross_exposure: self.gross_exposure,
            net_exposure,
            gross_leverage: eq_pos.then(|| self.gross_exposure / acc.equity),
            floating_profit: positions.iter().map(|p| p.profit).sum(),
            swap: positions.iter().map(|p| p.swap).sum(),
            commission: positions.iter().map(|p| p.commission).sum(),
            margin_used: self.input.account_margin,
            margin_computed: self.margin_computed,
            margin_level: trading::margin_level(acc.equity, self.input.account_margin),
            margin_use_percent: eq_pos.then(|| self.input.account_margin / acc.equity * 100.0),
            at_risk,
            at_risk_percent: eq_pos.then(|| at_risk / acc.equity * 100.0),
            risk_bounded: self.risks.iter().all(|r| r.stop_loss.is_some()),
            position_risk: self.risks,
            unconverted: self.unconverted,
            unknown_symbols: self.unknown,
        }
    }
}

#[cfg(test)]
mod tests;
