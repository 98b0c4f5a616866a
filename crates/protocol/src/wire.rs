//! The wire form of the core types that travel in [`CommandResult`] and
//! [`Event`]: times as unix milliseconds (integers).
//!
//! The core types write their times as ISO 8601 text (the form of every tool
//! output, `tradeterm_core::time::iso`), but agents speak protocol v1, where
//! every time is an integer of unix milliseconds (`docs/agent-protocol.md`).
//! The frames keep the core types in Rust; their fields carry
//! `#[serde(with = "crate::wire::…")]`, which reads and writes them through
//! the mirrors below, so the bytes on the wire are those of the protocol. The
//! mirrors' JSON Schemas keep the core types' names.
//!
//! Each conversion destructures its type without `..`, so a field added to a
//! core type fails to compile here until the wire form says what to do.
//!
//! [`CommandResult`]: crate::CommandResult
//! [`Event`]: crate::Event

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tradeterm_core::account::{DealEntry, ExpirationMode, OrderType};
use tradeterm_core::time::UnixMs;
use tradeterm_core::{Bar, Deal, PendingOrder, Position, Side, Tick};

/// A core type with a wire form.
pub(crate) trait Wire: Sized {
    /// The mirror written on the wire.
    type Form: Serialize + DeserializeOwned;
    /// The wire form of a value.
    fn to_wire(&self) -> Self::Form;
    /// The value of a wire form.
    fn from_wire(form: Self::Form) -> Self;
}

/// `#[serde(with)]` for one value.
pub(crate) mod one {
    use super::*;

    pub(crate) fn serialize<T: Wire, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        value.to_wire().serialize(serializer)
    }

    pub(crate) fn deserialize<'de, T: Wire, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
        T::Form::deserialize(deserializer).map(T::from_wire)
    }
}

/// `#[serde(with)]` for a list.
pub(crate) mod vec {
    use super::*;

    pub(crate) fn serialize<T: Wire, S: Serializer>(values: &[T], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(values.iter().map(Wire::to_wire))
    }

    pub(crate) fn deserialize<'de, T: Wire, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<T>, D::Error> {
        Vec::<T::Form>::deserialize(deserializer).map(|forms| forms.into_iter().map(T::from_wire).collect())
    }
}

/// `#[serde(with)]` for an optional value (`null` or absent is `None`).
pub(crate) mod option {
    use super::*;

    pub(crate) fn serialize<T: Wire, S: Serializer>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
        value.as_ref().map(Wire::to_wire).serialize(serializer)
    }

    pub(crate) fn deserialize<'de, T: Wire, D: Deserializer<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
        Option::<T::Form>::deserialize(deserializer).map(|form| form.map(T::from_wire))
    }
}

/// [`Bar`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Bar", description = "One OHLCV bar, labelled by its open time.")]
pub(crate) struct BarWire {
    /// Open time, unix milliseconds UTC.
    time: UnixMs,
    /// Open price.
    open: f64,
    /// High price.
    high: f64,
    /// Low price.
    low: f64,
    /// Close price.
    close: f64,
    /// Volume (tick volume for FX).
    volume: f64,
}

impl Wire for Bar {
    type Form = BarWire;

    fn to_wire(&self) -> BarWire {
        let Bar {
            time,
            open,
            high,
            low,
            close,
            volume,
        } = *self;
        BarWire {
            time,
            open,
            high,
            low,
            close,
            volume,
        }
    }

    fn from_wire(form: BarWire) -> Self {
        let BarWire {
            time,
            open,
            high,
            low,
            close,
            volume,
        } = form;
        Bar {
            time,
            open,
            high,
            low,
            close,
            volume,
        }
    }
}

/// [`Tick`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Tick", description = "A price quote.")]
pub(crate) struct TickWire {
    /// Instrument name.
    symbol: String,
    /// Bid price (sell side).
    bid: f64,
    /// Ask price (buy side).
    ask: f64,
    /// Quote time, unix milliseconds UTC.
    time: UnixMs,
}

impl Wire for Tick {
    type Form = TickWire;

    fn to_wire(&self) -> TickWire {
        let Tick { symbol, bid, ask, time } = self;
        TickWire {
            symbol: symbol.clone(),
            bid: *bid,
            ask: *ask,
            time: *time,
        }
    }

    fn from_wire(form: TickWire) -> Self {
        let TickWire { symbol, bid, ask, time } = form;
        Tick { symbol, bid, ask, time }
    }
}

/// [`Position`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Position", description = "An open position.")]
pub(crate) struct PositionWire {
    /// Position ticket.
    ticket: u64,
    /// Instrument.
    symbol: String,
    /// Long or short.
    side: Side,
    /// Volume in lots.
    volume: f64,
    /// Entry price.
    open_price: f64,
    /// Open time, unix ms UTC.
    open_time: UnixMs,
    /// Stop loss price, if any.
    stop_loss: Option<f64>,
    /// Take profit price, if any.
    take_profit: Option<f64>,
    /// Current close price (bid for longs, ask for shorts).
    current_price: f64,
    /// Accumulated swap.
    swap: f64,
    /// Commission charged.
    commission: f64,
    /// Floating profit, account currency.
    profit: f64,
    /// Expert magic number.
    magic: u64,
    /// Order comment.
    comment: String,
}

impl Wire for Position {
    type Form = PositionWire;

    fn to_wire(&self) -> PositionWire {
        let Position {
            ticket,
            symbol,
            side,
            volume,
            open_price,
            open_time,
            stop_loss,
            take_profit,
            current_price,
            swap,
            commission,
            profit,
            magic,
            comment,
        } = self.clone();
        PositionWire {
            ticket,
            symbol,
            side,
            volume,
            open_price,
            open_time,
            stop_loss,
            take_profit,
            current_price,
            swap,
            commission,
            profit,
            magic,
            comment,
        }
    }

    fn from_wire(form: PositionWire) -> Self {
        let PositionWire {
            ticket,
            symbol,
            side,
            volume,
            open_price,
            open_time,
            stop_loss,
            take_profit,
            current_price,
            swap,
            commission,
            profit,
            magic,
            comment,
        } = form;
        Position {
            ticket,
            symbol,
            side,
            volume,
            open_price,
            open_time,
            stop_loss,
            take_profit,
            current_price,
            swap,
            commission,
            profit,
            magic,
            comment,
        }
    }
}

/// [`PendingOrder`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "PendingOrder", description = "A pending (not yet triggered) order.")]
pub(crate) struct PendingOrderWire {
    /// Order ticket.
    ticket: u64,
    /// Instrument.
    symbol: String,
    /// Limit or stop, buy or sell.
    order_type: OrderType,
    /// Volume in lots.
    volume: f64,
    /// Trigger price.
    price: f64,
    /// Stop loss to attach on fill.
    stop_loss: Option<f64>,
    /// Take profit to attach on fill.
    take_profit: Option<f64>,
    /// Placement time.
    time_setup: UnixMs,
    /// Expert magic number.
    magic: u64,
    /// Order comment.
    comment: String,
    /// Stop-limit orders: price of the limit order placed at the stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stop_limit_price: Option<f64>,
    /// How long the order lives (`GTC` when absent).
    #[serde(default)]
    expiration_mode: ExpirationMode,
    /// Expiry, unix ms (`SPECIFIED`, `SPECIFIED_DAY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expiration: Option<UnixMs>,
}

impl Wire for PendingOrder {
    type Form = PendingOrderWire;

    fn to_wire(&self) -> PendingOrderWire {
        let PendingOrder {
            ticket,
            symbol,
            order_type,
            volume,
            price,
            stop_loss,
            take_profit,
            time_setup,
            magic,
            comment,
            stop_limit_price,
            expiration_mode,
            expiration,
        } = self.clone();
        PendingOrderWire {
            ticket,
            symbol,
            order_type,
            volume,
            price,
            stop_loss,
            take_profit,
            time_setup,
            magic,
            comment,
            stop_limit_price,
            expiration_mode,
            expiration,
        }
    }

    fn from_wire(form: PendingOrderWire) -> Self {
        let PendingOrderWire {
            ticket,
            symbol,
            order_type,
            volume,
            price,
            stop_loss,
            take_profit,
            time_setup,
            magic,
            comment,
            stop_limit_price,
            expiration_mode,
            expiration,
        } = form;
        PendingOrder {
            ticket,
            symbol,
            order_type,
            volume,
            price,
            stop_loss,
            take_profit,
            time_setup,
            magic,
            comment,
            stop_limit_price,
            expiration_mode,
            expiration,
        }
    }
}

/// [`Deal`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Deal", description = "An executed deal (fill) in the account history.")]
pub(crate) struct DealWire {
    /// Deal ticket.
    ticket: u64,
    /// Order that caused it.
    order: u64,
    /// Position it belongs to (0 for balance deals).
    position: u64,
    /// Instrument (empty for balance deals).
    symbol: String,
    /// Direction of the deal itself (a close of a long is a `sell`).
    side: Side,
    /// In, out or balance.
    entry: DealEntry,
    /// Volume in lots.
    volume: f64,
    /// Fill price.
    price: f64,
    /// Execution time.
    time: UnixMs,
    /// Realised profit, account currency.
    profit: f64,
    /// Swap realised with this deal.
    swap: f64,
    /// Commission.
    commission: f64,
    /// Expert magic number.
    magic: u64,
    /// Comment (`sl`, `tp`, or the order comment).
    comment: String,
}

impl Wire for Deal {
    type Form = DealWire;

    fn to_wire(&self) -> DealWire {
        let Deal {
            ticket,
            order,
            position,
            symbol,
            side,
            entry,
            volume,
            price,
            time,
            profit,
            swap,
            commission,
            magic,
            comment,
        } = self.clone();
        DealWire {
            ticket,
            order,
            position,
            symbol,
            side,
            entry,
            volume,
            price,
            time,
            profit,
            swap,
            commission,
            magic,
            comment,
        }
    }

    fn from_wire(form: DealWire) -> Self {
        let DealWire {
            ticket,
            order,
            position,
            symbol,
            side,
            entry,
            volume,
            price,
            time,
            profit,
            swap,
            commission,
            magic,
            comment,
        } = form;
        Deal {
            ticket,
            order,
            position,
            symbol,
            side,
            entry,
            volume,
            price,
            time,
            profit,
            swap,
            commission,
            magic,
            comment,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{CommandResult, Event};

    fn position() -> Position {
        Position {
            ticket: 7,
            symbol: "EURUSD".into(),
            side: Side::Buy,
            volume: 0.1,
            open_price: 1.1,
            open_time: 1_700_000_000_123,
            stop_loss: None,
            take_profit: Some(1.2),
            current_price: 1.105,
            swap: 0.0,
            commission: -0.7,
            profit: 5.0,
            magic: 0,
            comment: String::new(),
        }
    }

    #[test]
    fn frames_carry_unix_ms_and_tool_outputs_iso() {
        let result = CommandResult::Positions {
            positions: vec![position()],
        };
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(wire["positions"][0]["open_time"], json!(1_700_000_000_123_i64));
        assert_eq!(serde_json::from_value::<CommandResult>(wire).unwrap(), result);
        // The same position outside a frame is written as a tool output.
        assert_eq!(
            serde_json::to_value(position()).unwrap()["open_time"],
            "2023-11-14T22:13:20.123Z"
        );
    }

    #[test]
    fn frames_refuse_iso_times() {
        // The wire is strict: protocol v1 times are integers.
        let text = json!({
            "kind": "tick", "symbol": "EURUSD", "bid": 1.0, "ask": 1.1, "time": "2024-01-02T00:00:00Z"
        });
        assert!(serde_json::from_value::<Event>(text).is_err());
        let bars = json!({
            "kind": "bars", "symbol": "EURUSD", "timeframe": "H1",
            "bars": [{ "time": "2024-01-02T00:00:00Z", "open": 1.0, "high": 1.0, "low": 1.0, "close": 1.0, "volume": 0.0 }]
        });
        assert!(serde_json::from_value::<CommandResult>(bars).is_err());
    }

    #[test]
    fn frame_schemas_keep_integer_times() {
        let schema = serde_json::to_value(schemars::schema_for!(CommandResult)).unwrap();
        let defs = &schema["$defs"];
        for (name, field) in [
            ("Bar", "time"),
            ("Tick", "time"),
            ("Position", "open_time"),
            ("PendingOrder", "time_setup"),
            ("Deal", "time"),
        ] {
            assert_eq!(
                defs[name]["properties"][field]["type"], "integer",
                "{name}.{field}: {schema}"
            );
        }
    }
}
