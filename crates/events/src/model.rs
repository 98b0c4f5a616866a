//! The event envelope, the closed list of event types, and the typed data of
//! each type (with its JSON Schema, from which `docs/events.md`'s schemas are
//! checked).
//!
//! On the wire an event is
//!
//! ```json
//! {"id": "1764615600000-0", "type": "position.closed", "version": 1,
//!  "time": "2026-12-01T19:00:00Z", "terminal_id": "term_…", "symbol": "EURUSD",
//!  "data": { … }}
//! ```
//!
//! `id` is strictly increasing per license (`<unix ms>-<sequence>`, compared
//! as two numbers); `version` is the version of the event model (1); `data`
//! is the type's own object.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{AccountInfo, Bar, Deal, Tick, Timeframe};

/// Version of the event model carried by every event.
pub const MODEL_VERSION: u32 = 1;

/// Id of an event: unix milliseconds and a sequence number within that
/// millisecond, written `<ms>-<seq>`. Strictly increasing per license (the
/// order of the license's log), so a client resumes after the last id it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence within the millisecond.
    pub seq: u64,
}

impl EventId {
    /// The id `ms-seq`.
    pub const fn new(ms: u64, seq: u64) -> Self {
        Self { ms, seq }
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Why a text is not an event id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event id is `<unix ms>-<sequence>` (two integers), e.g. `1764615600000-0`")]
pub struct BadEventId;

impl FromStr for EventId {
    type Err = BadEventId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (ms, seq) = s.trim().split_once('-').ok_or(BadEventId)?;
        let digits = |t: &str| !t.is_empty() && t.len() <= 20 && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(ms) || !digits(seq) {
            return Err(BadEventId);
        }
        Ok(Self {
            ms: ms.parse().map_err(|_| BadEventId)?,
            seq: seq.parse().map_err(|_| BadEventId)?,
        })
    }
}

impl Serialize for EventId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for EventId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EventId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9]{1,19}-[0-9]{1,19}$",
            "description": "`<unix ms>-<sequence>`, strictly increasing per license.",
        })
    }
}

macro_rules! event_types {
    ($( $desc:literal $variant:ident = $name:literal, $data:ty, $group:literal; )*) => {
        /// Every type of event, as its dotted name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventType {
            $( #[doc = $desc] $variant, )*
        }

        impl EventType {
            /// Every type, in the order of `docs/events.md`.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),*];

            /// What the type means, for a person (`docs/events.md`).
            pub const fn description(self) -> &'static str {
                match self { $(EventType::$variant => $desc,)* }
            }

            /// The dotted name (`order.filled`).
            pub const fn as_str(self) -> &'static str {
                match self { $(EventType::$variant => $name,)* }
            }

            /// The group the type belongs to (`market`, `trading`, `rules`,
            /// `webhooks`, `connectivity`, `stream`).
            pub const fn group(self) -> &'static str {
                match self { $(EventType::$variant => $group,)* }
            }

            /// The JSON Schema of the type's `data`.
            pub fn data_schema(self) -> Value {
                let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
                let mut generator = generator;
                match self {
                    $(EventType::$variant => serde_json::to_value(generator.root_schema_for::<$data>()).unwrap_or(Value::Null),)*
                }
            }
        }

        impl FromStr for EventType {
            type Err = UnknownEventType;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(EventType::$variant),)*
                    _ => Err(UnknownEventType(s.chars().take(64).collect())),
                }
            }
        }
    };
}

event_types! {
    "A new quote of a symbol (conflated: the latest wins; not retained)."
    Quote = "quote", QuoteData, "market";
    "A bar closed (the terminal formed the next one): the symbol, the timeframe and the bar, as `get_bars` returns it. Only for the symbols and timeframes a stream asks for (`symbols` and `timeframes`) or a webhook endpoint subscribes to (`bars`), once per bar and license, and only bars the terminal returns."
    BarClosed = "bar.closed", BarClosedData, "market";
    "A pending order was placed."
    OrderPlaced = "order.placed", OrderData, "trading";
    "A pending order's price, levels or expiry changed."
    OrderModified = "order.modified", OrderData, "trading";
    "An order was executed (a market order, or a pending order triggered): the deal it made."
    OrderFilled = "order.filled", OrderFilledData, "trading";
    "A pending order was cancelled."
    OrderCancelled = "order.cancelled", OrderData, "trading";
    "A pending order expired."
    OrderExpired = "order.expired", OrderData, "trading";
    "An order was rejected by the trade server."
    OrderRejected = "order.rejected", OrderData, "trading";
    "A position was opened (its opening deal)."
    PositionOpened = "position.opened", PositionOpenedData, "trading";
    "A position's stop loss or take profit changed, or part of it was closed."
    PositionModified = "position.modified", PositionModifiedData, "trading";
    "A position was closed: the closing deal, its price and profit, and why."
    PositionClosed = "position.closed", PositionClosedData, "trading";
    "A deal was added to the account history (every fill, balance operations too)."
    DealAdded = "deal.added", DealData, "trading";
    "Balance, equity or margin changed (throttled: at most one a second per terminal, the latest wins)."
    AccountChanged = "account.changed", AccountData, "trading";
    "An alert rule (`set_alert`) fired."
    AlertFired = "alert.fired", RuleData, "rules";
    "A news guard warned of an event ahead."
    NewsGuardAlert = "news_guard.alert", RuleData, "rules";
    "An equity guard rule was breached."
    EquityGuardBreached = "equity_guard.breached", RuleData, "rules";
    "An equity guard that was breached is within its rules again (a new day anchor, or removed)."
    EquityGuardRecovered = "equity_guard.recovered", RuleData, "rules";
    "The prop-firm verdict moved between `ok`, `warning`, `critical` and `breached`."
    PropFirmStatusChanged = "prop_firm.status_changed", RuleData, "rules";
    "A managed exit (`set_trailing_stop`, `set_breakeven`, `place_oco`, `place_bracket`) sent an order, or in dry run would have: the action and its outcome."
    ManagedAction = "managed.action", ManagedData, "managed";
    "A managed exit stopped acting: its terminal is unreachable (it acts once on the current price when it is back)."
    ManagedPaused = "managed.paused", ManagedData, "managed";
    "A paused managed exit acts again: its terminal is back."
    ManagedResumed = "managed.resumed", ManagedData, "managed";
    "A managed exit ended: it did what it was for, its position or order went away, or it was removed (`reason`)."
    ManagedEnded = "managed.ended", ManagedData, "managed";
    "A webhook endpoint was disabled: its deliveries kept failing for 3 days (enable it again with `update_webhook`)."
    WebhookDisabled = "webhook.disabled", WebhookDisabledData, "webhooks";
    "The terminal's agent connected."
    TerminalConnected = "terminal.connected", ConnectedData, "connectivity";
    "The terminal's agent disconnected."
    TerminalDisconnected = "terminal.disconnected", DisconnectedData, "connectivity";
    "The agent's allow-trading input or the terminal's automated-trading switch changed."
    TradingPermissionChanged = "terminal.trading_permission_changed", PermissionData, "connectivity";
    "Stream control: events after the id asked for were dropped by retention (sent once, before the replay)."
    StreamGap = "stream.gap", GapData, "stream";
    "Stream control: the consumer did not keep up; the stream ends here and is resumed from `resume_after`."
    StreamCut = "stream.cut", CutData, "stream";
}

/// A name that is no event type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event type `{0}`")]
pub struct UnknownEventType(pub String);

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for EventType {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EventType".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// An event before the engine gave it an id.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// Its type.
    pub kind: EventType,
    /// When it happened (unix ms).
    pub time: UnixMs,
    /// The terminal it concerns (`None` for license-wide events).
    pub terminal_id: Option<String>,
    /// The symbol it concerns, when one.
    pub symbol: Option<String>,
    /// The type's data (an object of the type's schema).
    pub data: Value,
}

impl Draft {
    /// A draft of `kind` with typed `data`.
    pub fn new<T: Serialize>(kind: EventType, time: UnixMs, terminal_id: Option<&str>, data: &T) -> Self {
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
        let symbol = symbol_of(&data);
        Self {
            kind,
            time,
            terminal_id: terminal_id.map(str::to_owned),
            symbol,
            data,
        }
    }

    /// The event of this draft with `id`.
    pub fn with_id(self, id: EventId) -> Event {
        Event {
            id: Some(id),
            kind: self.kind,
            version: MODEL_VERSION,
            time: self.time,
            terminal_id: self.terminal_id,
            symbol: self.symbol,
            data: self.data,
        }
    }

    /// The live-only event of this draft (no id: quotes and stream control).
    pub fn without_id(self) -> Event {
        Event {
            id: None,
            kind: self.kind,
            version: MODEL_VERSION,
            time: self.time,
            terminal_id: self.terminal_id,
            symbol: self.symbol,
            data: self.data,
        }
    }
}

/// The symbol an event's data names (`symbol`, or its deal's).
fn symbol_of(data: &Value) -> Option<String> {
    data.get("symbol")
        .or_else(|| data.get("deal").and_then(|d| d.get("symbol")))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// One event as clients receive it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Id, strictly increasing per license; absent on quotes and stream
    /// control events, which are not retained and cannot be resumed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<EventId>,
    /// Type.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// Version of the event model (1).
    pub version: u32,
    /// When it happened, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// The terminal it concerns (absent for license-wide events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_id: Option<String>,
    /// The symbol it concerns, when one (quotes, orders, deals, positions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The type's data.
    pub data: Value,
}

/// `quote`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuoteData {
    /// Instrument.
    pub symbol: String,
    /// Bid.
    pub bid: f64,
    /// Ask.
    pub ask: f64,
    /// Quote time, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
}

impl From<&Tick> for QuoteData {
    fn from(t: &Tick) -> Self {
        Self {
            symbol: t.symbol.clone(),
            bid: t.bid,
            ask: t.ask,
            time: t.time,
        }
    }
}

/// `bar.closed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BarClosedData {
    /// Instrument.
    pub symbol: String,
    /// Timeframe, MetaTrader's name (`M1` … `MN1`).
    pub timeframe: Timeframe,
    /// The closed bar as the terminal returned it (the fields of `get_bars`):
    /// open time, open, high, low, close and volume (tick volume for FX).
    pub bar: Bar,
}

impl BarClosedData {
    /// The timeframe a `bar.closed` event's data names (`None` for another
    /// type's data, or a data without one).
    pub fn timeframe_of(data: &Value) -> Option<Timeframe> {
        data.get("timeframe")?.as_str()?.parse().ok()
    }
}

/// `order.placed`, `order.modified`, `order.cancelled`, `order.expired`,
/// `order.rejected`: the order's ticket (read it with `get_orders` or
/// `get_order_history` for its details).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderData {
    /// Order ticket.
    pub order: u64,
    /// Position ticket the order belongs to (0 if none).
    pub position: u64,
    /// Instrument, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The trade server's reason (for `order.rejected`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `order.filled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderFilledData {
    /// Order ticket.
    pub order: u64,
    /// Position ticket.
    pub position: u64,
    /// The deal the fill made.
    pub deal: Deal,
}

/// `position.opened`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PositionOpenedData {
    /// Position ticket.
    pub position: u64,
    /// The opening deal (symbol, side, volume, price).
    pub deal: Deal,
}

/// What changed a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModifiedBy {
    /// Its stop loss or take profit.
    Levels,
    /// Part of it was closed (the deal says how much, `volume` what is left).
    PartialClose,
    /// Volume was added to it (a netting account).
    Added,
}

/// `position.modified`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PositionModifiedData {
    /// Position ticket.
    pub position: u64,
    /// What changed.
    pub change: ModifiedBy,
    /// Volume left in the position, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<f64>,
    /// The deal of a partial close or an addition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deal: Option<Deal>,
}

/// Why a position was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    /// Its stop loss was hit.
    Sl,
    /// Its take profit was hit.
    Tp,
    /// The broker closed it for lack of margin.
    StopOut,
    /// A client (a tool call, the trader, another expert) closed it.
    Client,
}

impl CloseReason {
    /// The reason a closing deal's comment gives (MetaTrader writes `[sl …]`,
    /// `[tp …]`, `[so …]`; the simulator `sl`, `tp`, `stop out`).
    pub fn of_comment(comment: &str) -> Self {
        let c = comment.trim().trim_start_matches('[').to_ascii_lowercase();
        if c.starts_with("sl") {
            Self::Sl
        } else if c.starts_with("tp") {
            Self::Tp
        } else if c.starts_with("so") || c.starts_with("stop out") || c.starts_with("stop-out") {
            Self::StopOut
        } else {
            Self::Client
        }
    }
}

/// `position.closed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PositionClosedData {
    /// Position ticket.
    pub position: u64,
    /// Instrument.
    pub symbol: String,
    /// Closing price.
    pub price: f64,
    /// Realised profit of the closing deal, account currency.
    pub profit: f64,
    /// Why it was closed.
    pub reason: CloseReason,
    /// The closing deal.
    pub deal: Deal,
}

/// `deal.added`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DealData {
    /// The deal.
    pub deal: Deal,
}

/// `account.changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccountData {
    /// Deposit currency.
    pub currency: String,
    /// Balance.
    pub balance: f64,
    /// Equity.
    pub equity: f64,
    /// Margin in use.
    pub margin: f64,
    /// Free margin.
    pub free_margin: f64,
    /// Margin level, percent (absent without open positions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_level: Option<f64>,
    /// Floating profit.
    pub profit: f64,
}

impl From<&AccountInfo> for AccountData {
    fn from(a: &AccountInfo) -> Self {
        Self {
            currency: a.currency.clone(),
            balance: a.balance,
            equity: a.equity,
            margin: a.margin,
            free_margin: a.free_margin,
            margin_level: a.margin_level,
            profit: a.profit,
        }
    }
}

/// `alert.fired`, `news_guard.alert`, `equity_guard.breached`,
/// `equity_guard.recovered`, `prop_firm.status_changed`: which rule, what
/// it says, and the rule family's own details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RuleData {
    /// The rule's id or name (an alert's id, a guard rule's name, the prop-firm rule set).
    pub rule: String,
    /// What happened, for a person.
    pub message: String,
    /// Instrument, when the rule watches one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The rule family's details (the same fields its tools show).
    #[serde(default)]
    pub details: Value,
}

/// `managed.action`, `managed.paused`, `managed.resumed`, `managed.ended`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ManagedData {
    /// The managed exit's id (`mxo_…`).
    pub managed: String,
    /// `trailing_stop`, `breakeven`, `oco` or `bracket`.
    pub kind: String,
    /// The caller's label.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Instrument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Simulated: nothing was sent.
    pub dry_run: bool,
    /// What happened, for a person.
    pub message: String,
    /// The action (`managed.action`): `set_stop`, `cancel_order` or `close_partial` with its ticket and level or volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Value>,
    /// The action's outcome: `done`, `would_do` (dry run), `rejected`, `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Why it ended (`managed.ended`: `completed`, `position_closed`, `entry_cancelled`, `removed`), or why it paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `webhook.disabled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookDisabledData {
    /// The endpoint's id (`whk_…`).
    pub webhook: String,
    /// The endpoint's URL.
    pub url: String,
    /// Since when its deliveries have failed, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub failing_since: UnixMs,
    /// Why, for a person.
    pub message: String,
}

/// `terminal.connected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConnectedData {
    /// Agent software name.
    pub agent: String,
    /// Agent software version.
    pub agent_version: String,
    /// Whether live orders may be sent now (both switches on).
    pub trading_enabled: bool,
}

/// `terminal.disconnected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DisconnectedData {
    /// Why, when known (`closed`, `heartbeat timeout`, `replaced`, `key revoked`, `shutdown`).
    pub reason: String,
}

/// `terminal.trading_permission_changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionData {
    /// The agent's allow-trading input.
    pub allow_trading: bool,
    /// The terminal's automated-trading switch.
    pub automated_trading: bool,
    /// Both on: live orders may be sent.
    pub trading_enabled: bool,
}

/// `stream.gap`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GapData {
    /// The id the stream was asked to resume after.
    pub after: EventId,
    /// Why: events after it are older than the retention window and were dropped.
    pub message: String,
}

/// `stream.cut`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CutData {
    /// Resume from here (`Last-Event-ID` or `after`): the last event this stream delivered.
    pub resume_after: Option<EventId>,
    /// Why the stream ends.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_order_as_numbers_and_parse_strictly() {
        let a: EventId = "1764615600000-9".parse().unwrap();
        let b: EventId = "1764615600000-10".parse().unwrap();
        assert!(a < b, "compared as numbers, not text");
        assert!(b < "1764615600001-0".parse().unwrap());
        assert_eq!(b.to_string(), "1764615600000-10");
        for bad in [
            "",
            "1",
            "-",
            "1-",
            "-1",
            "a-1",
            "1-2-3",
            "1 -2",
            "+1-2",
            "123456789012345678901-0",
        ] {
            assert!(bad.parse::<EventId>().is_err(), "{bad:?}");
        }
        assert_eq!(serde_json::to_value(a).unwrap(), "1764615600000-9");
    }

    #[test]
    fn every_type_has_a_unique_name_that_parses_back_and_a_schema() {
        let mut names = std::collections::BTreeSet::new();
        for t in EventType::ALL {
            assert!(names.insert(t.as_str()), "{t} twice");
            assert_eq!(t.as_str().parse::<EventType>().unwrap(), *t);
            let schema = t.data_schema();
            assert_eq!(schema["type"], "object", "{t}: {schema}");
        }
        assert!("order.fill".parse::<EventType>().is_err());
    }

    #[test]
    fn close_reasons_from_metatrader_and_simulator_comments() {
        for (comment, reason) in [
            ("[sl 1.08500]", CloseReason::Sl),
            ("sl", CloseReason::Sl),
            ("[tp 1.09]", CloseReason::Tp),
            ("tp", CloseReason::Tp),
            ("[so 45.12%/30.00%/1000.00]", CloseReason::StopOut),
            ("stop out", CloseReason::StopOut),
            ("", CloseReason::Client),
            ("reverse", CloseReason::Client),
            ("my slot", CloseReason::Client),
        ] {
            assert_eq!(CloseReason::of_comment(comment), reason, "{comment}");
        }
    }

    #[test]
    fn the_envelope_names_its_symbol_and_skips_what_it_lacks() {
        let tick = Tick {
            symbol: "EURUSD".into(),
            bid: 1.1,
            ask: 1.1002,
            time: 1_796_151_600_000,
        };
        let draft = Draft::new(EventType::Quote, tick.time, Some("term_1"), &QuoteData::from(&tick));
        assert_eq!(draft.symbol.as_deref(), Some("EURUSD"));
        let wire = serde_json::to_value(draft.clone().without_id()).unwrap();
        assert!(wire.get("id").is_none(), "{wire}");
        assert_eq!(wire["type"], "quote");
        assert_eq!(wire["version"], 1);
        assert_eq!(wire["time"], "2026-12-01T19:00:00Z");
        let with_id = serde_json::to_value(draft.with_id(EventId::new(5, 1))).unwrap();
        assert_eq!(with_id["id"], "5-1");
        let back: Event = serde_json::from_value(with_id).unwrap();
        assert_eq!(back.id, Some(EventId::new(5, 1)));
    }
}
