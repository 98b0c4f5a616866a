//! Account types: account state, open positions, pending orders and deals.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::{Side, TradeMode};
//!
//! assert_eq!(Side::Buy.opposite(), Side::Sell);
//! assert_eq!(Side::Sell.sign(), -1.0);
//! // Wire names are lower case, as the terminals report them.
//! assert_eq!(serde_json::to_string(&TradeMode::Demo)?, r#""demo""#);
//! # Ok::<(), serde_json::Error>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::UnixMs;

/// Kind of trading account, reported truthfully by the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TradeMode {
    /// Demo account (no real money).
    Demo,
    /// Real-money account.
    Real,
    /// Contest account.
    Contest,
}

impl TradeMode {
    /// Lower-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Demo => "demo",
            Self::Real => "real",
            Self::Contest => "contest",
        }
    }
}

/// Direction of a position or order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Long.
    Buy,
    /// Short.
    Sell,
}

impl Side {
    /// The other side.
    pub const fn opposite(self) -> Self {
        match self {
            Self::Buy => Self::Sell,
            Self::Sell => Self::Buy,
        }
    }

    /// `+1.0` for buys, `-1.0` for sells.
    pub const fn sign(self) -> f64 {
        match self {
            Self::Buy => 1.0,
            Self::Sell => -1.0,
        }
    }
}

/// Account state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccountInfo {
    /// Account number.
    pub login: u64,
    /// Account holder name.
    pub name: String,
    /// Trade server name.
    pub server: String,
    /// Broker company.
    pub company: String,
    /// Deposit currency.
    pub currency: String,
    /// Leverage (100 means 1:100).
    pub leverage: u32,
    /// Demo, real or contest.
    pub trade_mode: TradeMode,
    /// Balance (closed P&L included).
    pub balance: f64,
    /// Equity (balance plus floating P&L and swaps).
    pub equity: f64,
    /// Margin in use.
    pub margin: f64,
    /// `equity - margin`.
    pub free_margin: f64,
    /// `equity / margin * 100`, or `None` without open positions.
    pub margin_level: Option<f64>,
    /// Floating profit of open positions.
    pub profit: f64,
}

/// An open position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Position {
    /// Position ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// `buy` (long) or `sell` (short).
    pub side: Side,
    /// Volume in lots.
    pub volume: f64,
    /// Entry price.
    pub open_price: f64,
    /// Open time, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub open_time: UnixMs,
    /// Stop loss price, if any.
    pub stop_loss: Option<f64>,
    /// Take profit price, if any.
    pub take_profit: Option<f64>,
    /// Current close price (bid for longs, ask for shorts).
    pub current_price: f64,
    /// Accumulated swap.
    pub swap: f64,
    /// Commission charged.
    pub commission: f64,
    /// Floating profit, account currency.
    pub profit: f64,
    /// Expert magic number.
    pub magic: u64,
    /// Order comment.
    pub comment: String,
}

/// Kind of order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderType {
    /// Market buy.
    Buy,
    /// Market sell.
    Sell,
    /// Buy when the ask falls to the price.
    BuyLimit,
    /// Sell when the bid rises to the price.
    SellLimit,
    /// Buy when the ask rises to the price.
    BuyStop,
    /// Sell when the bid falls to the price.
    SellStop,
    /// When the ask rises to the price (the stop), a buy limit is placed at
    /// the stop-limit price, below the stop (MT5 `ORDER_TYPE_BUY_STOP_LIMIT`).
    BuyStopLimit,
    /// When the bid falls to the price (the stop), a sell limit is placed at
    /// the stop-limit price, above the stop (MT5 `ORDER_TYPE_SELL_STOP_LIMIT`).
    SellStopLimit,
    /// What a close-by records in the order history (MT5
    /// `ORDER_TYPE_CLOSE_BY`): one position closed by an opposite one of the
    /// same symbol. Never an order to place: the `close_by` tool does that.
    CloseBy,
}

impl OrderType {
    /// Direction of the resulting position. A close-by has none of its own
    /// (it closes one position of each side, opening nothing): it answers
    /// `Buy`, and is never placed or left pending, so nothing that asks an
    /// order for its side (pricing, filters, risk) sees one.
    pub const fn side(self) -> Side {
        match self {
            Self::Buy | Self::BuyLimit | Self::BuyStop | Self::BuyStopLimit | Self::CloseBy => Side::Buy,
            Self::Sell | Self::SellLimit | Self::SellStop | Self::SellStopLimit => Side::Sell,
        }
    }

    /// Whether the order executes immediately at market.
    pub const fn is_market(self) -> bool {
        matches!(self, Self::Buy | Self::Sell)
    }

    /// Whether the order is a stop-limit order (it needs a stop-limit price).
    pub const fn is_stop_limit(self) -> bool {
        matches!(self, Self::BuyStopLimit | Self::SellStopLimit)
    }

    /// The limit order a triggered stop-limit order becomes (itself otherwise).
    pub const fn limit_of_stop_limit(self) -> Self {
        match self {
            Self::BuyStopLimit => Self::BuyLimit,
            Self::SellStopLimit => Self::SellLimit,
            other => other,
        }
    }
}

/// How long a pending order lives (MT5 `ENUM_ORDER_TYPE_TIME`; the symbol
/// allows a subset, `SYMBOL_EXPIRATION_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExpirationMode {
    /// Good till cancelled (`ORDER_TIME_GTC`).
    #[default]
    Gtc,
    /// Good till the end of the current trading day (`ORDER_TIME_DAY`).
    Day,
    /// Good till the `expiration` instant (`ORDER_TIME_SPECIFIED`).
    Specified,
    /// Good till 23:59:59 of the day of `expiration` (`ORDER_TIME_SPECIFIED_DAY`).
    SpecifiedDay,
}

impl ExpirationMode {
    /// Whether the mode needs an `expiration` time.
    pub const fn needs_time(self) -> bool {
        matches!(self, Self::Specified | Self::SpecifiedDay)
    }
}

/// What happens to the part of an order that cannot be filled at once (MT5
/// `ENUM_ORDER_TYPE_FILLING`; the symbol allows a subset, `SYMBOL_FILLING_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FillingMode {
    /// Fill or kill: the whole volume or nothing (`ORDER_FILLING_FOK`).
    Fok,
    /// Immediate or cancel: what is available now, the rest cancelled (`ORDER_FILLING_IOC`).
    Ioc,
    /// Return: what is available now, the rest stays as an order (`ORDER_FILLING_RETURN`).
    Return,
}

/// A pending (not yet triggered) order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingOrder {
    /// Order ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Limit or stop, buy or sell.
    pub order_type: OrderType,
    /// Volume in lots.
    pub volume: f64,
    /// Trigger price.
    pub price: f64,
    /// Price of the limit order a stop-limit order places when its stop
    /// `price` is reached (stop-limit orders only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_limit_price: Option<f64>,
    /// Stop loss to attach on fill.
    pub stop_loss: Option<f64>,
    /// Take profit to attach on fill.
    pub take_profit: Option<f64>,
    /// Placement time.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time_setup: UnixMs,
    /// How long the order lives (`GTC` when not reported).
    #[serde(default)]
    pub expiration_mode: ExpirationMode,
    /// Expiry time of `SPECIFIED` (the instant) and `SPECIFIED_DAY` (its day) orders.
    #[serde(default, with = "crate::time::iso::option", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::time::iso::Schema>")]
    pub expiration: Option<UnixMs>,
    /// Expert magic number.
    pub magic: u64,
    /// Order comment.
    pub comment: String,
}

/// Whether a deal opened or closed exposure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DealEntry {
    /// Opened a position.
    In,
    /// Closed (part of) a position.
    Out,
    /// Closed (part of) a position by an opposite one (MT5
    /// `DEAL_ENTRY_OUT_BY`): a close-by makes one such deal for each of the
    /// two positions, both at the opening price of the one closed by.
    #[serde(rename = "out_by")]
    OutBy,
    /// Balance operation (deposit, withdrawal) or swap/commission charge.
    Balance,
}

impl DealEntry {
    /// Whether the deal closed (part of) a position: `out` or `out_by`.
    pub const fn is_exit(self) -> bool {
        matches!(self, Self::Out | Self::OutBy)
    }
}

/// An executed deal (fill) in the account history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Deal {
    /// Deal ticket.
    pub ticket: u64,
    /// Order that caused it.
    pub order: u64,
    /// Position it belongs to (0 for balance deals).
    pub position: u64,
    /// Instrument (empty for balance deals).
    pub symbol: String,
    /// Direction of the deal itself (a close of a long is a `sell`).
    pub side: Side,
    /// `in`, `out`, `out_by` (a close-by) or `balance`.
    pub entry: DealEntry,
    /// Volume in lots.
    pub volume: f64,
    /// Fill price.
    pub price: f64,
    /// Execution time.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// Realised profit, account currency.
    pub profit: f64,
    /// Swap realised with this deal.
    pub swap: f64,
    /// Commission.
    pub commission: f64,
    /// Expert magic number.
    pub magic: u64,
    /// Comment (`sl`, `tp`, or the order comment).
    pub comment: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_by_names_follow_the_json_naming_of_their_enums() {
        let names = |v: serde_json::Value| v.as_str().unwrap_or_default().to_owned();
        assert_eq!(names(serde_json::json!(OrderType::CloseBy)), "CLOSE_BY");
        assert_eq!(names(serde_json::json!(OrderType::BuyStopLimit)), "BUY_STOP_LIMIT");
        assert_eq!(names(serde_json::json!(DealEntry::OutBy)), "out_by");
        assert_eq!(names(serde_json::json!(DealEntry::Out)), "out");
        let back: DealEntry = serde_json::from_str("\"out_by\"").unwrap();
        assert_eq!(back, DealEntry::OutBy);
        assert!(DealEntry::OutBy.is_exit() && DealEntry::Out.is_exit());
        assert!(!DealEntry::In.is_exit() && !DealEntry::Balance.is_exit());
        assert!(!OrderType::CloseBy.is_market() && !OrderType::CloseBy.is_stop_limit());
    }
}
