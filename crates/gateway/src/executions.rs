//! What the gateway records of every trade request it dispatches, for
//! `get_execution_quality`: when it was sent, the quote the agent had pushed
//! at that moment, the answer and when it arrived. Measured on the gateway's
//! clock at the gateway, so slippage and latency are observed, not inferred.
//!
//! The record is written to the store after the answer has been returned to
//! the caller (a spawned task): recording never delays or fails a trade.
//!
//! A record (JSON, `executions.record`):
//!
//! ```json
//! {
//!   "command": "place_order",
//!   "symbol": "EURUSD",            // null for ticket commands (close, reverse, modify, cancel)
//!   "order_type": "buy",           // place_order only
//!   "volume": 0.1,                 // requested, when the command says
//!   "ticket": null,                // the position or order ticket of ticket commands
//!   "requested_at": 1795003200000,
//!   "answered_at": 1795003200045,
//!   "quotes": { "EURUSD": { "bid": 1.1, "ask": 1.1002, "age_ms": 180 } },
//!   "outcome": { "status": "filled", "price": 1.10021 },
//!   "results": [ { "retcode": "done", "order": 7, "deal": 9, "position": 7, "volume": 0.1, "price": 1.10021 } ]
//! }
//! ```
//!
//! `quotes` holds the pushed quote of the order's symbol, or for ticket
//! commands (whose symbol the gateway does not know) every quote pushed in
//! the last [`QUOTE_WINDOW`]; the tool picks the right one from the deal.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tradeterm_protocol::agent::TradeResult;
use tradeterm_protocol::{Command, CommandResult, DispatchError};
use tradeterm_store::Store;

use crate::agent::now_ms;
use crate::registry::Conn;

/// Quotes older than this are not recorded as "the quote at request time".
pub const QUOTE_WINDOW: Duration = Duration::from_secs(5);

/// A trade request on its way: what was known when it was sent.
pub(crate) struct Probe {
    license_id: String,
    terminal_id: String,
    head: serde_json::Map<String, Value>,
    requested_at: i64,
}

impl Probe {
    /// Notes a trade command about to be sent on `conn`; `None` for other commands.
    pub(crate) fn start(license_id: &str, terminal_id: &str, command: &Command, conn: &Conn) -> Option<Self> {
        if !command.is_trade() {
            return None;
        }
        let mut head = serde_json::Map::new();
        head.insert("command".into(), json!(command.name()));
        let (symbol, ticket) = match command {
            Command::PlaceOrder { order } => {
                head.insert("order_type".into(), json!(order.order_type));
                head.insert("volume".into(), json!(order.volume));
                (Some(order.symbol.clone()), None)
            }
            Command::ClosePosition { ticket, volume, .. } => {
                head.insert("volume".into(), json!(volume));
                (None, Some(*ticket))
            }
            Command::ModifyPosition { ticket, .. }
            | Command::CancelOrder { ticket }
            | Command::ReversePosition { ticket, .. } => (None, Some(*ticket)),
            _ => (None, None),
        };
        head.insert("symbol".into(), json!(symbol));
        head.insert("ticket".into(), json!(ticket));
        head.insert("quotes".into(), quotes(conn, symbol.as_deref()));
        Some(Self {
            license_id: license_id.to_owned(),
            terminal_id: terminal_id.to_owned(),
            head,
            requested_at: now_ms(),
        })
    }

    /// Records the answer (in the background).
    pub(crate) fn finish(self, store: &Arc<dyn Store>, result: &Result<CommandResult, DispatchError>) {
        let mut record = self.head;
        record.insert("requested_at".into(), json!(self.requested_at));
        record.insert("answered_at".into(), json!(now_ms()));
        let (outcome, results) = outcome(result);
        record.insert("outcome".into(), outcome);
        record.insert("results".into(), Value::Array(results));
        let store = store.clone();
        let (license_id, terminal_id, requested_at) = (self.license_id, self.terminal_id, self.requested_at);
        tokio::spawn(async move {
            let record = Value::Object(record);
            if let Err(e) = store
                .record_execution(&license_id, &terminal_id, requested_at, &record)
                .await
            {
                tracing::warn!(terminal = %terminal_id, error = %e, "could not record an execution");
            }
        });
    }
}

fn quotes(conn: &Conn, symbol: Option<&str>) -> Value {
    let Ok(cache) = conn.quotes.lock() else {
        return json!({});
    };
    let mut out = serde_json::Map::new();
    for (name, (tick, at)) in cache.iter() {
        let age = at.elapsed();
        if age > QUOTE_WINDOW || symbol.is_some_and(|s| s != name) {
            continue;
        }
        out.insert(
            name.clone(),
            json!({ "bid": tick.bid, "ask": tick.ask, "age_ms": age.as_millis() as u64 }),
        );
    }
    Value::Object(out)
}

fn trade_json(t: &TradeResult) -> Value {
    json!({
        "retcode": t.retcode,
        "order": t.order,
        "deal": t.deal,
        "position": t.position,
        "volume": t.volume,
        "price": t.price,
    })
}

/// The outcome (`filled` with the price of the first fill, `accepted`,
/// `rejected` with the code, `timed_out`) and the trade results.
fn outcome(result: &Result<CommandResult, DispatchError>) -> (Value, Vec<Value>) {
    match result {
        Ok(CommandResult::Trade(t)) => (fill_or_accept(t), vec![trade_json(t)]),
        Ok(CommandResult::Reverse { close, open }) => {
            (fill_or_accept(close), vec![trade_json(close), trade_json(open)])
        }
        Ok(_) => (json!({ "status": "accepted" }), Vec::new()),
        Err(DispatchError::CommandFailed(e)) => (json!({ "status": "rejected", "code": e.code }), Vec::new()),
        Err(DispatchError::Timeout(_)) => (json!({ "status": "timed_out" }), Vec::new()),
        Err(e) => (json!({ "status": "rejected", "code": dispatch_code(e) }), Vec::new()),
    }
}

fn fill_or_accept(t: &TradeResult) -> Value {
    if t.deal != 0 && t.price.is_finite() && t.price > 0.0 {
        json!({ "status": "filled", "price": t.price })
    } else {
        json!({ "status": "accepted" })
    }
}

fn dispatch_code(e: &DispatchError) -> &'static str {
    match e {
        DispatchError::Unreachable => "terminal_unreachable",
        DispatchError::NotFound => "terminal_not_found",
        _ => "gateway_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tradeterm_protocol::agent::ErrorBody;

    fn trade(deal: u64, price: f64) -> TradeResult {
        TradeResult {
            retcode: "done".into(),
            order: 1,
            deal,
            position: 1,
            volume: 0.1,
            price,
            comment: String::new(),
        }
    }

    #[test]
    fn outcomes() {
        let (o, r) = outcome(&Ok(CommandResult::Trade(trade(9, 1.1))));
        assert_eq!(o, json!({ "status": "filled", "price": 1.1 }));
        assert_eq!(r[0]["deal"], 9);
        // A pending order placed: no deal, no fill.
        assert_eq!(
            outcome(&Ok(CommandResult::Trade(trade(0, 1.2)))).0["status"],
            "accepted"
        );
        let (o, r) = outcome(&Ok(CommandResult::Reverse {
            close: trade(3, 1.3),
            open: trade(4, 1.3),
        }));
        assert_eq!((o["status"].as_str(), r.len()), (Some("filled"), 2));
        let rejected = Err(DispatchError::CommandFailed(ErrorBody::new("requote", "price changed")));
        assert_eq!(outcome(&rejected).0, json!({ "status": "rejected", "code": "requote" }));
        assert_eq!(
            outcome(&Err(DispatchError::Timeout(Duration::from_secs(1)))).0["status"],
            "timed_out"
        );
    }
}
