//! Market data types: timeframes, bars, ticks and symbol specifications.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::Timeframe;
//! use tradeterm_core::time::{parse_iso, to_iso};
//!
//! let h4: Timeframe = "H4".parse()?;
//! assert_eq!(h4.duration_ms(), 4 * 3_600_000);
//! let t = parse_iso("2024-01-02T09:30:00Z")?;
//! assert_eq!(to_iso(h4.bar_open(t)), "2024-01-02T08:00:00Z");
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use std::fmt;
use std::str::FromStr;

/// Longest symbol name accepted in any input.
pub const SYMBOL_MAX_LEN: usize = 32;
/// The characters a symbol name may hold besides ASCII letters and digits.
pub const SYMBOL_PUNCTUATION: &str = "._#+!-";
/// A symbol name as a JSON Schema `pattern`: 1–[`SYMBOL_MAX_LEN`] ASCII
/// letters, digits or [`SYMBOL_PUNCTUATION`] (what [`is_symbol`] accepts).
pub const SYMBOL_PATTERN: &str = "^[A-Za-z0-9._#+!-]{1,32}$";

/// Whether `symbol` is a symbol name ([`SYMBOL_PATTERN`]).
pub fn is_symbol(symbol: &str) -> bool {
    !symbol.is_empty()
        && symbol.len() <= SYMBOL_MAX_LEN
        && symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || SYMBOL_PUNCTUATION.contains(c))
}

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::CoreError;
use crate::time::UnixMs;

/// Bar timeframe, with MetaTrader's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Timeframe {
    /// 1 minute.
    M1,
    /// 5 minutes.
    M5,
    /// 15 minutes.
    M15,
    /// 30 minutes.
    M30,
    /// 1 hour.
    H1,
    /// 4 hours.
    H4,
    /// 1 day.
    D1,
    /// 1 week (weeks start on Monday 00:00 UTC here; brokers may differ).
    W1,
    /// 1 month (calendar month).
    MN1,
}

impl Timeframe {
    /// Every timeframe, shortest first.
    pub const ALL: [Timeframe; 9] = [
        Self::M1,
        Self::M5,
        Self::M15,
        Self::M30,
        Self::H1,
        Self::H4,
        Self::D1,
        Self::W1,
        Self::MN1,
    ];

    /// Nominal length in milliseconds (30 days for `MN1`).
    pub const fn duration_ms(self) -> i64 {
        const MIN: i64 = 60_000;
        match self {
            Self::M1 => MIN,
            Self::M5 => 5 * MIN,
            Self::M15 => 15 * MIN,
            Self::M30 => 30 * MIN,
            Self::H1 => 60 * MIN,
            Self::H4 => 240 * MIN,
            Self::D1 => 1_440 * MIN,
            Self::W1 => 7 * 1_440 * MIN,
            Self::MN1 => 30 * 1_440 * MIN,
        }
    }

    /// MetaTrader name (`"H1"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::M1 => "M1",
            Self::M5 => "M5",
            Self::M15 => "M15",
            Self::M30 => "M30",
            Self::H1 => "H1",
            Self::H4 => "H4",
            Self::D1 => "D1",
            Self::W1 => "W1",
            Self::MN1 => "MN1",
        }
    }

    /// Open time of the bar of this timeframe that contains `t`.
    /// Weeks start on Monday 00:00 UTC; months on the 1st.
    pub fn bar_open(self, t: UnixMs) -> UnixMs {
        match self {
            Self::W1 => {
                // 1970-01-05 was a Monday.
                let monday0 = 4 * crate::time::DAY_MS;
                t - (t - monday0).rem_euclid(self.duration_ms())
            }
            Self::MN1 => {
                use chrono::{DateTime, Datelike, NaiveDate, Utc};
                let Some(dt) = DateTime::<Utc>::from_timestamp_millis(t) else {
                    return t;
                };
                NaiveDate::from_ymd_opt(dt.year(), dt.month(), 1)
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map(|d| d.and_utc().timestamp_millis())
                    .unwrap_or(t)
            }
            _ => t - t.rem_euclid(self.duration_ms()),
        }
    }
}

impl fmt::Display for Timeframe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Timeframe {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let up = s.trim().to_ascii_uppercase();
        Self::ALL.into_iter().find(|tf| tf.as_str() == up).ok_or_else(|| {
            CoreError::Parse(format!(
                "unknown timeframe `{s}` (expected one of M1, M5, M15, M30, H1, H4, D1, W1, MN1)"
            ))
        })
    }
}

/// One OHLCV bar, labelled by its open time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bar {
    /// Open time, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Open price.
    pub open: f64,
    /// High price.
    pub high: f64,
    /// Low price.
    pub low: f64,
    /// Close price.
    pub close: f64,
    /// Volume (tick volume for FX).
    pub volume: f64,
}

impl Bar {
    /// `(high + low + close) / 3`.
    pub fn typical(&self) -> f64 {
        (self.high + self.low + self.close) / 3.0
    }

    /// Checks the bar is well formed: finite values, `low <= open, close <= high`, volume ≥ 0.
    pub fn validate(&self) -> Result<(), CoreError> {
        let vals = [self.open, self.high, self.low, self.close, self.volume];
        if vals.iter().any(|v| !v.is_finite()) {
            return Err(CoreError::InvalidInput(format!(
                "bar at {} has a non-finite value",
                self.time
            )));
        }
        if self.low > self.high
            || self.open > self.high
            || self.open < self.low
            || self.close > self.high
            || self.close < self.low
        {
            return Err(CoreError::InvalidInput(format!(
                "bar at {} is inconsistent (low/high do not contain open/close)",
                self.time
            )));
        }
        if self.volume < 0.0 {
            return Err(CoreError::InvalidInput(format!(
                "bar at {} has negative volume",
                self.time
            )));
        }
        Ok(())
    }
}

/// A price quote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tick {
    /// Instrument name.
    pub symbol: String,
    /// Bid price (sell side).
    pub bid: f64,
    /// Ask price (buy side).
    pub ask: f64,
    /// Quote time, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
}

impl Tick {
    /// `ask - bid`.
    pub fn spread(&self) -> f64 {
        self.ask - self.bid
    }

    /// `(bid + ask) / 2`.
    pub fn mid(&self) -> f64 {
        (self.bid + self.ask) / 2.0
    }
}

/// How a symbol's swap rates are expressed (MetaTrader's `SYMBOL_SWAP_MODE`, simplified).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SwapMode {
    /// Swap disabled.
    Disabled,
    /// Swap in points per lot per night.
    Points,
    /// Swap in account currency per lot per night.
    Currency,
    /// Swap as an annual interest percentage of the position's notional.
    Interest,
}

/// How margin is computed for a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MarginMode {
    /// FX: `volume * contract_size * price_in_account_ccy / leverage`.
    Forex,
    /// CFD with leverage: same formula as forex (`contract_size * price * volume / leverage`).
    CfdLeverage,
    /// CFD: `volume * contract_size * price * margin_rate` (no leverage).
    Cfd,
}

/// A weekly trading window: from `open` to `close` minutes after midnight UTC
/// on weekday `day` (0 = Sunday). `close` may be 1440.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionWindow {
    /// Weekday, 0 = Sunday … 6 = Saturday.
    pub day: u8,
    /// Minutes after midnight UTC when trading opens.
    pub open: u16,
    /// Minutes after midnight UTC when trading closes (≤ 1440).
    pub close: u16,
}

/// Contract specification of a symbol, as a terminal reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SymbolSpec {
    /// Instrument name (`EURUSD`).
    pub name: String,
    /// Human description.
    pub description: String,
    /// Base currency (`EUR`), or the instrument's own name for CFDs.
    pub currency_base: String,
    /// Quote / profit currency (`USD`).
    pub currency_profit: String,
    /// Margin currency.
    pub currency_margin: String,
    /// Decimal digits of the price.
    pub digits: u32,
    /// Point size (`10^-digits`).
    pub point: f64,
    /// Units per lot.
    pub contract_size: f64,
    /// Smallest price change.
    pub tick_size: f64,
    /// Value of one `tick_size` move for one lot, in the profit currency.
    pub tick_value: f64,
    /// Smallest volume.
    pub volume_min: f64,
    /// Largest volume.
    pub volume_max: f64,
    /// Volume step.
    pub volume_step: f64,
    /// Minimum distance of SL/TP and pending prices from the market, in points.
    pub stops_level: u32,
    /// Swap for long positions (unit given by `swap_mode`).
    pub swap_long: f64,
    /// Swap for short positions (unit given by `swap_mode`).
    pub swap_short: f64,
    /// Unit of the swap rates.
    pub swap_mode: SwapMode,
    /// Weekday on which triple swap is charged (0 = Sunday … 6 = Saturday; usually 3).
    pub swap_triple_day: u8,
    /// Margin calculation mode.
    pub margin_mode: MarginMode,
    /// Margin rate multiplier (1.0 = plain formula).
    pub margin_rate: f64,
    /// Weekly trading windows (UTC). Empty means always open.
    pub sessions: Vec<SessionWindow>,
    /// Expiration modes pending orders may use (`SYMBOL_EXPIRATION_MODE`).
    /// Empty: not reported by the agent (an older agent), nothing is checked.
    #[serde(default)]
    pub expiration_modes: Vec<crate::account::ExpirationMode>,
    /// Filling policies orders may use (`SYMBOL_FILLING_MODE`, with `RETURN`
    /// where the execution mode allows it). Empty: not reported by the agent.
    #[serde(default)]
    pub filling_modes: Vec<crate::account::FillingMode>,
}

impl SymbolSpec {
    /// Whether trading is open at `t` according to [`SymbolSpec::sessions`].
    pub fn is_open(&self, t: UnixMs) -> bool {
        if self.sessions.is_empty() {
            return true;
        }
        let day = crate::time::weekday(t);
        let minute = (crate::time::ms_of_day(t) / 60_000) as u16;
        self.sessions
            .iter()
            .any(|w| w.day == day && minute >= w.open && minute < w.close)
    }

    /// Rounds a price to the symbol's tick size.
    pub fn normalize_price(&self, price: f64) -> f64 {
        if self.tick_size > 0.0 {
            let p = (price / self.tick_size).round() * self.tick_size;
            let f = 10f64.powi(self.digits as i32);
            (p * f).round() / f
        } else {
            price
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_iso;

    #[test]
    fn timeframe_parse_and_bar_open() {
        assert_eq!("h1".parse::<Timeframe>().unwrap(), Timeframe::H1);
        assert!("H2".parse::<Timeframe>().is_err());
        let t = parse_iso("2026-11-18T13:47:12Z").unwrap();
        assert_eq!(Timeframe::H4.bar_open(t), parse_iso("2026-11-18T12:00:00Z").unwrap());
        assert_eq!(Timeframe::W1.bar_open(t), parse_iso("2026-11-16T00:00:00Z").unwrap());
        assert_eq!(Timeframe::MN1.bar_open(t), parse_iso("2026-11-01T00:00:00Z").unwrap());
        assert_eq!(Timeframe::M15.bar_open(t), parse_iso("2026-11-18T13:45:00Z").unwrap());
    }

    #[test]
    fn bar_validation() {
        let mut b = Bar {
            time: 0,
            open: 1.0,
            high: 2.0,
            low: 0.5,
            close: 1.5,
            volume: 1.0,
        };
        assert!(b.validate().is_ok());
        b.close = 3.0;
        assert!(b.validate().is_err());
        b.close = f64::NAN;
        assert!(b.validate().is_err());
    }
}
