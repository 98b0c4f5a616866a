//! The agent protocol, version 1: frames exchanged between the gateway and a
//! terminal-side agent. Every frame is one JSON object with a `type` field.
//!
//! Life of a connection:
//! 1. The agent opens the transport and sends [`AgentFrame::Hello`] with its
//!    terminal key, terminal identity, account and trading permissions.
//! 2. The gateway answers [`GatewayFrame::Welcome`] (with the terminal id and
//!    heartbeat timings) or [`GatewayFrame::Error`] followed by a close.
//! 3. The gateway sends [`GatewayFrame::Request`]s; the agent answers each with
//!    an [`AgentFrame::Response`] carrying the same `id`, in any order.
//! 4. The agent pushes [`AgentFrame::Event`]s (ticks, trade transactions,
//!    account and permission changes) whenever it likes.
//! 5. Either side sends `ping`; the other answers `pong`. A side that hears
//!    nothing for `heartbeat_timeout_ms` treats the connection as dead.
//!
//! Malformed or unknown frames are answered with [`GatewayFrame::Error`]
//! (code `MALFORMED_FRAME` or `UNKNOWN_FRAME`) and the connection stays up.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::account::{ExpirationMode, FillingMode, OrderType};
use tradeterm_core::time::UnixMs;
use tradeterm_core::{AccountInfo, Bar, Deal, PendingOrder, Position, SymbolSpec, Tick, Timeframe, TradeMode};

/// Version of this protocol. Sent in `hello` and `welcome`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Trading platform of a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Platform {
    /// MetaTrader 4.
    MT4,
    /// MetaTrader 5.
    MT5,
}

/// Identity of the terminal installation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalIdentity {
    /// Stable identifier of this terminal installation, chosen by the agent
    /// (for MetaTrader: a hash of the terminal's data path). The first
    /// successful connection binds the terminal key to it; another `uid`
    /// presenting the same key is refused.
    pub uid: String,
    /// MT4 or MT5.
    pub platform: Platform,
    /// Terminal build number.
    pub build: u32,
}

/// Account the terminal is logged in to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AccountIdentity {
    /// Account number.
    pub login: u64,
    /// Trade server name.
    pub server: String,
    /// Broker company.
    pub company: String,
    /// Deposit currency.
    pub currency: String,
    /// Leverage (100 = 1:100).
    pub leverage: u32,
    /// Demo, real or contest, as the terminal reports it (never guessed).
    pub trade_mode: TradeMode,
}

/// Trading permissions as the terminal sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Permissions {
    /// The agent's `inp_AllowTrading` input (default `false`).
    pub allow_trading: bool,
    /// The terminal's automated-trading switch ("Algo Trading" button).
    pub automated_trading: bool,
}

impl Permissions {
    /// Both switches on: live orders may be sent.
    pub const fn trading_enabled(self) -> bool {
        self.allow_trading && self.automated_trading
    }
}

/// Name and version of the agent software.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentInfo {
    /// Agent name (`tradeterm-agent-mql5`, `tradeterm-sim`).
    pub name: String,
    /// Agent version.
    pub version: String,
}

/// First frame of every connection, agent → gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hello {
    /// Protocol version the agent speaks; must be [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// The terminal key. Master license keys and REST API keys are refused.
    pub terminal_key: String,
    /// Terminal identity.
    pub terminal: TerminalIdentity,
    /// Logged-in account.
    pub account: AccountIdentity,
    /// Current trading permissions.
    pub permissions: Permissions,
    /// Agent software.
    pub agent: AgentInfo,
}

/// A frame sent by the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(
    clippy::large_enum_variant,
    reason = "responses are the common frame; boxing them would change every constructor for a few hundred bytes per frame"
)]
pub enum AgentFrame {
    /// Handshake; must be the first frame.
    Hello(Box<Hello>),
    /// Answer to a gateway request.
    Response(Response),
    /// Unsolicited push.
    Event {
        /// The event.
        event: Event,
    },
    /// Heartbeat.
    Ping {
        /// Sender's clock, unix ms (informational).
        ts: UnixMs,
    },
    /// Heartbeat answer.
    Pong {
        /// The `ts` of the ping being answered.
        ts: UnixMs,
    },
}

/// Answer to a [`GatewayFrame::Request`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Response {
    /// The request's `id`.
    pub id: String,
    /// Result on success (exactly one of `result` and `error` is present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CommandResult>,
    /// Error on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl Response {
    /// A successful response.
    pub fn ok(id: impl Into<String>, result: CommandResult) -> Self {
        Self {
            id: id.into(),
            result: Some(result),
            error: None,
        }
    }

    /// A failed response.
    pub fn err(id: impl Into<String>, error: ErrorBody) -> Self {
        Self {
            id: id.into(),
            result: None,
            error: Some(error),
        }
    }
}

/// Error payload used in responses and error frames.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// Machine-readable code, see [`codes`].
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Trade server return code for rejected trades (`invalid_stops`, `no_money`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retcode: Option<String>,
}

impl ErrorBody {
    /// Builds an error body.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
            retcode: None,
        }
    }

    /// A trade rejection with a return code.
    pub fn rejected(retcode: &str, message: impl Into<String>) -> Self {
        Self {
            code: codes::TRADE_REJECTED.to_owned(),
            message: message.into(),
            retcode: Some(retcode.to_owned()),
        }
    }
}

/// Error codes of the agent protocol.
pub mod codes {
    /// The frame is not valid JSON or misses required fields.
    pub const MALFORMED_FRAME: &str = "MALFORMED_FRAME";
    /// The frame's `type` (or a command's `cmd`) is not known.
    pub const UNKNOWN_FRAME: &str = "UNKNOWN_FRAME";
    /// The first frame was not `hello`, or `hello` came twice.
    pub const PROTOCOL_ERROR: &str = "PROTOCOL_ERROR";
    /// Protocol version not supported.
    pub const UNSUPPORTED_VERSION: &str = "UNSUPPORTED_VERSION";
    /// Terminal key unknown, revoked, a master license key, or bound to another terminal.
    pub const AUTH_FAILED: &str = "AUTH_FAILED";
    /// The command is not known to the agent.
    pub const UNKNOWN_COMMAND: &str = "UNKNOWN_COMMAND";
    /// An argument is invalid (unknown symbol, bad range, ...).
    pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";
    /// The referenced position, order or symbol does not exist.
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// The platform cannot do this (economic calendar on MT4).
    pub const NOT_SUPPORTED: &str = "NOT_SUPPORTED";
    /// Live trading is switched off on the terminal side.
    pub const TRADING_DISABLED: &str = "TRADING_DISABLED";
    /// The trade server rejected the request; see `retcode`.
    pub const TRADE_REJECTED: &str = "TRADE_REJECTED";
    /// Unexpected failure inside the agent.
    pub const INTERNAL: &str = "INTERNAL";
    /// Sent by a gateway that is shutting down, before it closes the
    /// connection (or refuses a new one): the agent reconnects after its
    /// usual backoff, and behind a load balancer reaches another instance.
    pub const SHUTTING_DOWN: &str = "SHUTTING_DOWN";
    /// Too many failed `hello`s from this address: the gateway refuses it
    /// for a while without checking the key (the long-poll binding answers
    /// 429 with `Retry-After`); the agent retries after its usual backoff.
    pub const RATE_LIMITED: &str = "RATE_LIMITED";
    /// A frame larger than the gateway accepts (announced over its limit:
    /// before `hello` a small one, after it the largest frame); the
    /// connection is closed with 1009.
    pub const FRAME_TOO_LARGE: &str = "FRAME_TOO_LARGE";
}

/// A frame sent by the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GatewayFrame {
    /// Handshake accepted.
    Welcome {
        /// Protocol version in use.
        protocol_version: u32,
        /// The terminal id this connection serves.
        terminal_id: String,
        /// The agent should send a ping at least this often.
        heartbeat_interval_ms: u64,
        /// Silence longer than this marks the connection dead.
        heartbeat_timeout_ms: u64,
    },
    /// A command to execute.
    Request {
        /// Correlation id, echoed in the response.
        id: String,
        /// How long the gateway will wait for the answer, in ms.
        timeout_ms: u64,
        /// The command.
        command: Command,
    },
    /// A protocol error. `id` is set when it concerns a request.
    Error {
        /// Correlation id, if the error concerns one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Error details.
        #[serde(flatten)]
        error: ErrorBody,
    },
    /// Heartbeat.
    Ping {
        /// Sender's clock, unix ms.
        ts: UnixMs,
    },
    /// Heartbeat answer.
    Pong {
        /// The `ts` of the ping being answered.
        ts: UnixMs,
    },
}

/// An order to place or check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderRequest {
    /// Instrument.
    pub symbol: String,
    /// Market, limit or stop; buy or sell.
    pub order_type: OrderType,
    /// Volume in lots.
    pub volume: f64,
    /// Trigger price for pending orders; ignored for market orders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// Stop loss attached at entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_loss: Option<f64>,
    /// Take profit attached at entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub take_profit: Option<f64>,
    /// Maximum slippage for market orders, in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviation_points: Option<u32>,
    /// Order comment; any printable text, literal dots included (at most 31 characters on MetaTrader).
    #[serde(default)]
    pub comment: String,
    /// Expert magic number.
    #[serde(default)]
    pub magic: u64,
    /// Client idempotency key: a second request with the same key returns the
    /// first outcome instead of executing again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Stop-limit orders: price of the limit order placed when the stop
    /// `price` is reached (MT5 `MqlTradeRequest.stoplimit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_limit_price: Option<f64>,
    /// Pending orders: how long the order lives (MT5 `type_time`); absent is
    /// `GTC`. Must be one of the symbol's `expiration_modes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_mode: Option<ExpirationMode>,
    /// Expiry, unix ms, for `SPECIFIED` (the instant) and `SPECIFIED_DAY` (its day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<UnixMs>,
    /// Filling policy (MT5 `type_filling`); absent: the agent picks the
    /// first of `FOK`, `IOC`, `RETURN` the symbol allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filling: Option<FillingMode>,
}

impl OrderRequest {
    /// A market or pending order with only the required fields set.
    pub fn new(symbol: impl Into<String>, order_type: OrderType, volume: f64) -> Self {
        Self {
            symbol: symbol.into(),
            order_type,
            volume,
            price: None,
            stop_loss: None,
            take_profit: None,
            deviation_points: None,
            comment: String::new(),
            magic: 0,
            idempotency_key: None,
            stop_limit_price: None,
            expiration_mode: None,
            expiration: None,
            filling: None,
        }
    }
}

/// One level of a depth of market (MT5 `MqlBookInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BookLevel {
    /// `sell` (an offer: buyers pay it) or `buy` (a bid: sellers get it);
    /// `sell_market` / `buy_market` for market orders in the book.
    #[serde(rename = "type")]
    pub side: BookSide,
    /// Price of the level.
    pub price: f64,
    /// Volume offered or bid at the price, in lots.
    pub volume: f64,
}

/// Side of a book level (MT5 `ENUM_BOOK_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BookSide {
    /// `BOOK_TYPE_SELL`: an offer.
    Sell,
    /// `BOOK_TYPE_BUY`: a bid.
    Buy,
    /// `BOOK_TYPE_SELL_MARKET`: a sell market order.
    SellMarket,
    /// `BOOK_TYPE_BUY_MARKET`: a buy market order.
    BuyMarket,
}

/// A command sent to the agent, tagged by `cmd`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Account state → [`CommandResult::AccountInfo`].
    AccountInfo,
    /// Open positions → [`CommandResult::Positions`].
    Positions {
        /// Only this symbol.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        symbol: Option<String>,
    },
    /// Pending orders → [`CommandResult::Orders`].
    Orders {
        /// Only this symbol.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        symbol: Option<String>,
    },
    /// Deals in `[from, to)` → [`CommandResult::Deals`].
    HistoryDeals {
        /// Start, unix ms inclusive.
        from: UnixMs,
        /// End, unix ms exclusive.
        to: UnixMs,
    },
    /// Historical (finished) orders in `[from, to)` → [`CommandResult::HistoryOrders`].
    HistoryOrders {
        /// Start, unix ms inclusive.
        from: UnixMs,
        /// End, unix ms exclusive.
        to: UnixMs,
    },
    /// Symbols offered → [`CommandResult::Symbols`].
    Symbols,
    /// Contract specification → [`CommandResult::SymbolSpec`].
    SymbolSpec {
        /// Instrument.
        symbol: String,
    },
    /// Latest quote → [`CommandResult::Tick`].
    Tick {
        /// Instrument.
        symbol: String,
    },
    /// Bars → [`CommandResult::Bars`]: either the last `count` bars (ending at
    /// `to`, or now), or all bars with open time in `[from, to)`.
    Bars {
        /// Instrument.
        symbol: String,
        /// Timeframe.
        timeframe: Timeframe,
        /// Number of most recent bars (≤ 100 000).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u32>,
        /// Range start, unix ms inclusive.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<UnixMs>,
        /// Range end, unix ms exclusive.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<UnixMs>,
    },
    /// Tick history in `[from, to)` → [`CommandResult::Ticks`].
    Ticks {
        /// Instrument.
        symbol: String,
        /// Start, unix ms inclusive.
        from: UnixMs,
        /// End, unix ms exclusive.
        to: UnixMs,
        /// At most this many ticks (the most recent ones).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// Validates an order and computes its margin without sending it → [`CommandResult::OrderCheck`].
    OrderCheck {
        /// The order.
        order: OrderRequest,
    },
    /// Sends an order → [`CommandResult::Trade`].
    PlaceOrder {
        /// The order.
        order: OrderRequest,
    },
    /// Closes a position fully or partly → [`CommandResult::Trade`].
    ClosePosition {
        /// Position ticket.
        ticket: u64,
        /// Volume to close; the whole position when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        volume: Option<f64>,
        /// Maximum slippage in points.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deviation_points: Option<u32>,
        /// Idempotency key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<String>,
    },
    /// Sets a position's SL and TP (absent or null removes it) → [`CommandResult::Trade`].
    ModifyPosition {
        /// Position ticket.
        ticket: u64,
        /// New stop loss, or none.
        #[serde(default)]
        stop_loss: Option<f64>,
        /// New take profit, or none.
        #[serde(default)]
        take_profit: Option<f64>,
    },
    /// Cancels a pending order → [`CommandResult::Trade`].
    CancelOrder {
        /// Order ticket.
        ticket: u64,
    },
    /// Changes a pending order (MT5 `TRADE_ACTION_MODIFY`) → [`CommandResult::Trade`].
    /// Carries the order's whole new state: an absent or null SL/TP removes
    /// it, an absent `expiration_mode` is `GTC`.
    ModifyOrder {
        /// Order ticket.
        ticket: u64,
        /// New price (the stop price of a stop-limit order).
        price: f64,
        /// New stop-limit price (stop-limit orders only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_limit_price: Option<f64>,
        /// New stop loss, or none.
        #[serde(default)]
        stop_loss: Option<f64>,
        /// New take profit, or none.
        #[serde(default)]
        take_profit: Option<f64>,
        /// New expiration mode (`GTC` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expiration_mode: Option<ExpirationMode>,
        /// New expiry, unix ms (`SPECIFIED`, `SPECIFIED_DAY`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expiration: Option<UnixMs>,
        /// Idempotency key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<String>,
    },
    /// Closes a position by an opposite one of the same symbol (hedging
    /// accounts; MT5 `TRADE_ACTION_CLOSE_BY`) → [`CommandResult::Trade`].
    CloseBy {
        /// The position to close.
        ticket: u64,
        /// The opposite position it is closed by.
        ticket_by: u64,
        /// Idempotency key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<String>,
    },
    /// Subscribes to a symbol's depth of market (MT5 `MarketBookAdd`) →
    /// [`CommandResult::MarketBookSubscription`].
    MarketBookAdd {
        /// Instrument.
        symbol: String,
    },
    /// The symbol's depth of market now (MT5 `MarketBookGet`; needs
    /// `market_book_add` first) → [`CommandResult::MarketBook`].
    MarketBookGet {
        /// Instrument.
        symbol: String,
    },
    /// Ends a depth-of-market subscription (MT5 `MarketBookRelease`) →
    /// [`CommandResult::MarketBookSubscription`].
    MarketBookRelease {
        /// Instrument.
        symbol: String,
    },
    /// Closes a position and opens the same volume the other way → [`CommandResult::Reverse`].
    ReversePosition {
        /// Position ticket.
        ticket: u64,
        /// Idempotency key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<String>,
    },
    /// Economic calendar events in `[from, to)` (MT5 only; MT4 answers `NOT_SUPPORTED`) → [`CommandResult::Calendar`].
    Calendar {
        /// Start, unix ms inclusive.
        from: UnixMs,
        /// End, unix ms exclusive.
        to: UnixMs,
        /// Only these currencies (ISO codes).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        currencies: Vec<String>,
    },
}

impl Command {
    /// The `cmd` tag.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AccountInfo => "account_info",
            Self::Positions { .. } => "positions",
            Self::Orders { .. } => "orders",
            Self::HistoryDeals { .. } => "history_deals",
            Self::HistoryOrders { .. } => "history_orders",
            Self::Symbols => "symbols",
            Self::SymbolSpec { .. } => "symbol_spec",
            Self::Tick { .. } => "tick",
            Self::Bars { .. } => "bars",
            Self::Ticks { .. } => "ticks",
            Self::OrderCheck { .. } => "order_check",
            Self::PlaceOrder { .. } => "place_order",
            Self::ClosePosition { .. } => "close_position",
            Self::ModifyPosition { .. } => "modify_position",
            Self::CancelOrder { .. } => "cancel_order",
            Self::ReversePosition { .. } => "reverse_position",
            Self::Calendar { .. } => "calendar",
            Self::ModifyOrder { .. } => "modify_order",
            Self::CloseBy { .. } => "close_by",
            Self::MarketBookAdd { .. } => "market_book_add",
            Self::MarketBookGet { .. } => "market_book_get",
            Self::MarketBookRelease { .. } => "market_book_release",
        }
    }

    /// Whether the command changes the account (needs live-trading permission).
    pub fn is_trade(&self) -> bool {
        matches!(
            self,
            Self::PlaceOrder { .. }
                | Self::ClosePosition { .. }
                | Self::ModifyPosition { .. }
                | Self::CancelOrder { .. }
                | Self::ReversePosition { .. }
                | Self::ModifyOrder { .. }
                | Self::CloseBy { .. }
        )
    }
}

/// State of a finished order in history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderState {
    /// Fully executed.
    Filled,
    /// Cancelled by the client.
    Canceled,
    /// Rejected by the server.
    Rejected,
    /// Expired.
    Expired,
}

/// A finished order in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryOrder {
    /// Order ticket.
    pub ticket: u64,
    /// Instrument.
    pub symbol: String,
    /// Order type.
    pub order_type: OrderType,
    /// Requested volume.
    pub volume: f64,
    /// Requested (pending) or filled (market) price.
    pub price: f64,
    /// Final state.
    pub state: OrderState,
    /// Placement time.
    pub time_setup: UnixMs,
    /// Completion time.
    pub time_done: UnixMs,
    /// Position the order opened or closed (0 if none).
    pub position: u64,
    /// Comment.
    pub comment: String,
    /// Magic number.
    pub magic: u64,
}

/// Outcome of an order check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderCheck {
    /// Whether the order would be accepted.
    pub valid: bool,
    /// `done` when valid, otherwise the reason (`invalid_volume`, `invalid_stops`, `market_closed`, `no_money`, ...).
    pub retcode: String,
    /// Human explanation.
    pub comment: String,
    /// Price the order would fill at now (ask for buys, bid for sells; the trigger price for pending orders).
    pub price: f64,
    /// Margin the order would require, account currency.
    pub margin: f64,
    /// Free margin after the order.
    pub free_margin_after: f64,
    /// Margin level after the order, percent (None when no margin would be used).
    pub margin_level_after: Option<f64>,
}

/// Result of a successful trade operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TradeResult {
    /// `done`, `placed` (pending order accepted) or `done_partial` (an `IOC`
    /// order filled in part: `volume` is what was filled).
    pub retcode: String,
    /// Order ticket (0 if none).
    pub order: u64,
    /// Deal ticket (0 if no fill).
    pub deal: u64,
    /// Position ticket affected (0 if none).
    pub position: u64,
    /// Executed or placed volume.
    pub volume: f64,
    /// Fill or placement price.
    pub price: f64,
    /// Server comment.
    pub comment: String,
}

/// Importance of a calendar event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Importance {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

/// An economic calendar event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CalendarEvent {
    /// Event id (stable per provider).
    pub id: String,
    /// Release time, unix ms UTC.
    pub time: UnixMs,
    /// Currency affected (ISO code).
    pub currency: String,
    /// Country code.
    pub country: String,
    /// Event name.
    pub name: String,
    /// Importance.
    pub importance: Importance,
    /// Category (`inflation`, `employment`, `central_bank`, `growth`, ...).
    pub category: String,
    /// Actual value, once released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<f64>,
    /// Consensus forecast.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forecast: Option<f64>,
    /// Previous value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<f64>,
}

/// Result of a command, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CommandResult {
    /// For `account_info`.
    AccountInfo(AccountInfo),
    /// For `positions`.
    Positions {
        /// Open positions.
        #[serde(with = "crate::wire::vec")]
        #[schemars(with = "Vec<crate::wire::PositionWire>")]
        positions: Vec<Position>,
    },
    /// For `orders`.
    Orders {
        /// Pending orders.
        #[serde(with = "crate::wire::vec")]
        #[schemars(with = "Vec<crate::wire::PendingOrderWire>")]
        orders: Vec<PendingOrder>,
    },
    /// For `history_deals`.
    Deals {
        /// Deals, oldest first.
        #[serde(with = "crate::wire::vec")]
        #[schemars(with = "Vec<crate::wire::DealWire>")]
        deals: Vec<Deal>,
    },
    /// For `history_orders`.
    HistoryOrders {
        /// Orders, oldest first.
        orders: Vec<HistoryOrder>,
    },
    /// For `symbols`.
    Symbols {
        /// Symbol names.
        symbols: Vec<String>,
    },
    /// For `symbol_spec`.
    SymbolSpec(SymbolSpec),
    /// For `tick`.
    Tick(
        #[serde(with = "crate::wire::one")]
        #[schemars(with = "crate::wire::TickWire")]
        Tick,
    ),
    /// For `bars`.
    Bars {
        /// Instrument.
        symbol: String,
        /// Timeframe.
        timeframe: Timeframe,
        /// Bars, oldest first.
        #[serde(with = "crate::wire::vec")]
        #[schemars(with = "Vec<crate::wire::BarWire>")]
        bars: Vec<Bar>,
    },
    /// For `ticks`.
    Ticks {
        /// Instrument.
        symbol: String,
        /// Ticks, oldest first.
        #[serde(with = "crate::wire::vec")]
        #[schemars(with = "Vec<crate::wire::TickWire>")]
        ticks: Vec<Tick>,
    },
    /// For `order_check`.
    OrderCheck(OrderCheck),
    /// For `place_order`, `close_position`, `modify_position`, `cancel_order`,
    /// `modify_order`, `close_by`.
    Trade(TradeResult),
    /// For `reverse_position`.
    Reverse {
        /// The closing trade.
        close: TradeResult,
        /// The opening trade in the other direction.
        open: TradeResult,
    },
    /// For `calendar`.
    Calendar {
        /// Events, by time.
        events: Vec<CalendarEvent>,
    },
    /// For `market_book_add` and `market_book_release`.
    MarketBookSubscription {
        /// Instrument.
        symbol: String,
        /// Whether the symbol's book is subscribed after the command.
        subscribed: bool,
    },
    /// For `market_book_get`.
    MarketBook {
        /// Instrument.
        symbol: String,
        /// Time of the book, unix ms.
        time: UnixMs,
        /// Levels as MT5 lists them: offers (`sell`) from the highest price
        /// down to the best ask, then bids (`buy`) from the best bid down.
        levels: Vec<BookLevel>,
    },
}

/// Kind of trade transaction pushed by the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionKind {
    /// A deal was executed.
    DealAdded,
    /// A pending order was placed.
    OrderAdded,
    /// A pending order was cancelled, triggered or expired (`order_state` says which, when the agent knows).
    OrderRemoved,
    /// A position's SL/TP changed.
    PositionModified,
    /// A pending order's price, stop loss, take profit or expiry changed.
    OrderModified,
}

/// An unsolicited event, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// New quote.
    Tick(
        #[serde(with = "crate::wire::one")]
        #[schemars(with = "crate::wire::TickWire")]
        Tick,
    ),
    /// Trade transaction.
    TradeTransaction {
        /// What happened.
        transaction: TransactionKind,
        /// Deal involved, if any.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::wire::option")]
        #[schemars(with = "Option<crate::wire::DealWire>")]
        deal: Option<Deal>,
        /// Order ticket involved (0 if none).
        #[serde(default)]
        order: u64,
        /// Position ticket involved (0 if none).
        #[serde(default)]
        position: u64,
        /// For `order_removed`: how the order ended (MQL5's
        /// `MqlTradeTransaction.order_state`): `filled` when a pending order
        /// was triggered, `canceled`, `expired` or `rejected`. Optional:
        /// without it the gateway reports a cancellation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        order_state: Option<OrderState>,
        /// For `deal_added` and `position_modified`: the volume left in the
        /// position afterwards (0 when the deal closed it). Optional: without
        /// it the gateway counts volumes from the deals it saw.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        position_volume: Option<f64>,
    },
    /// Account state changed (balance, equity, margin).
    Account(AccountInfo),
    /// Trading permissions changed.
    Permissions(Permissions),
}

/// Why a received frame could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Not JSON, or fields missing / of the wrong type.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// Valid JSON object with an unknown `type`.
    #[error("unknown frame type `{0}`")]
    UnknownType(String),
}

impl FrameError {
    /// The protocol error code for this failure.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Malformed(_) => codes::MALFORMED_FRAME,
            Self::UnknownType(_) => codes::UNKNOWN_FRAME,
        }
    }
}

/// Largest frame the gateway accepts, in bytes (16 MiB: a full bar history fits).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

fn parse_frame<T: for<'de> Deserialize<'de>>(text: &str, known: &[&str]) -> Result<T, FrameError> {
    if text.len() > MAX_FRAME_BYTES {
        return Err(FrameError::Malformed(format!(
            "frame larger than {MAX_FRAME_BYTES} bytes"
        )));
    }
    match serde_json::from_str::<T>(text) {
        Ok(frame) => Ok(frame),
        Err(e) => {
            // Distinguish an unknown `type` from a malformed frame.
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e2| FrameError::Malformed(e2.to_string()))?;
            match value.get("type").and_then(|t| t.as_str()) {
                Some(t) if !known.contains(&t) => Err(FrameError::UnknownType(t.chars().take(64).collect())),
                None => Err(FrameError::Malformed("missing string field `type`".into())),
                Some(_) => Err(FrameError::Malformed(e.to_string())),
            }
        }
    }
}

impl AgentFrame {
    /// Parses a frame sent by an agent.
    pub fn parse(text: &str) -> Result<Self, FrameError> {
        parse_frame(text, &["hello", "response", "event", "ping", "pong"])
    }

    /// Serialises the frame to JSON text.
    pub fn to_json(&self) -> String {
        // Serialising these types cannot fail: no maps with non-string keys.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl GatewayFrame {
    /// Parses a frame sent by the gateway.
    pub fn parse(text: &str) -> Result<Self, FrameError> {
        parse_frame(text, &["welcome", "request", "error", "ping", "pong"])
    }

    /// Serialises the frame to JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// An error frame.
    pub fn error(id: Option<String>, code: &str, message: impl Into<String>) -> Self {
        Self::Error {
            id,
            error: ErrorBody::new(code, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_wire_form() {
        let f = GatewayFrame::Request {
            id: "r1".into(),
            timeout_ms: 5000,
            command: Command::Bars {
                symbol: "EURUSD".into(),
                timeframe: Timeframe::H1,
                count: Some(10),
                from: None,
                to: None,
            },
        };
        let json = f.to_json();
        assert_eq!(
            json,
            r#"{"type":"request","id":"r1","timeout_ms":5000,"command":{"cmd":"bars","symbol":"EURUSD","timeframe":"H1","count":10}}"#
        );
        assert_eq!(GatewayFrame::parse(&json).unwrap(), f);
    }

    #[test]
    fn error_frame_is_flat() {
        let f = GatewayFrame::error(Some("7".into()), codes::UNKNOWN_COMMAND, "nope");
        assert_eq!(
            f.to_json(),
            r#"{"type":"error","id":"7","code":"UNKNOWN_COMMAND","message":"nope"}"#
        );
        assert_eq!(GatewayFrame::parse(&f.to_json()).unwrap(), f);
    }

    #[test]
    fn parse_errors_are_typed() {
        assert!(matches!(AgentFrame::parse("not json"), Err(FrameError::Malformed(_))));
        assert!(matches!(AgentFrame::parse("[1,2]"), Err(FrameError::Malformed(_))));
        assert!(matches!(AgentFrame::parse(r#"{"type":"bogus"}"#), Err(FrameError::UnknownType(t)) if t == "bogus"));
        assert!(matches!(
            AgentFrame::parse(r#"{"type":"ping"}"#),
            Err(FrameError::Malformed(_))
        ));
        let e = AgentFrame::parse(r#"{"type":"bogus"}"#).unwrap_err();
        assert_eq!(e.code(), codes::UNKNOWN_FRAME);
    }

    #[test]
    fn response_round_trip_with_comment_dots() {
        let r = AgentFrame::Response(Response::ok(
            "abc",
            CommandResult::Trade(TradeResult {
                retcode: "done".into(),
                order: 1,
                deal: 2,
                position: 3,
                volume: 0.1,
                price: 1.1,
                comment: "v1.2.3 entry...".into(),
            }),
        ));
        let text = r.to_json();
        assert_eq!(AgentFrame::parse(&text).unwrap(), r);
        assert!(text.contains(r#""kind":"trade""#));
    }

    #[test]
    fn new_commands_and_fields_round_trip() {
        let c: Command = serde_json::from_str(
            r#"{"cmd":"place_order","order":{"symbol":"EURUSD","order_type":"BUY_STOP_LIMIT","volume":0.1,"price":1.1,"stop_limit_price":1.09,"expiration_mode":"SPECIFIED_DAY","expiration":1763790000000,"filling":"IOC"}}"#,
        )
        .unwrap();
        let Command::PlaceOrder { order } = &c else {
            panic!("{c:?}")
        };
        assert_eq!(order.order_type, OrderType::BuyStopLimit);
        assert_eq!(order.stop_limit_price, Some(1.09));
        assert_eq!(order.expiration_mode, Some(ExpirationMode::SpecifiedDay));
        assert_eq!(order.filling, Some(FillingMode::Ioc));
        for json in [
            r#"{"cmd":"modify_order","ticket":7,"price":1.1,"stop_loss":1.09,"take_profit":null}"#,
            r#"{"cmd":"close_by","ticket":7,"ticket_by":8}"#,
            r#"{"cmd":"market_book_add","symbol":"EURUSD"}"#,
            r#"{"cmd":"market_book_get","symbol":"EURUSD"}"#,
            r#"{"cmd":"market_book_release","symbol":"EURUSD"}"#,
        ] {
            let c: Command = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&c).unwrap(), json, "{}", c.name());
        }
        let modify: Command = serde_json::from_str(r#"{"cmd":"modify_order","ticket":7,"price":1.1}"#).unwrap();
        assert!(modify.is_trade());
        let book = CommandResult::MarketBook {
            symbol: "EURUSD".into(),
            time: 5,
            levels: vec![BookLevel {
                side: BookSide::Sell,
                price: 1.1,
                volume: 2.0,
            }],
        };
        let text = serde_json::to_string(&book).unwrap();
        assert!(
            text.contains(r#""kind":"market_book""#) && text.contains(r#""type":"sell""#),
            "{text}"
        );
    }

    #[test]
    fn order_request_defaults() {
        let c: Command = serde_json::from_str(
            r#"{"cmd":"place_order","order":{"symbol":"EURUSD","order_type":"BUY","volume":0.1}}"#,
        )
        .unwrap();
        match c {
            Command::PlaceOrder { order } => {
                assert_eq!(order.comment, "");
                assert_eq!(order.magic, 0);
                assert!(order.stop_loss.is_none());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
