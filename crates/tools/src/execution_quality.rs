//! `get_execution_quality`: slippage, latency, rejections and spread of the
//! trade requests tradeterm sent, from what the gateway recorded at dispatch
//! (see the gateway's `executions` module), completed with the deal history
//! (the symbol, side, volume and price of each fill) and the symbols'
//! contract specifications (points and money). Trades placed outside
//! tradeterm (by hand, by another expert advisor) have no record: they are
//! counted, not measured. Definitions: `docs/execution-quality.md`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tradeterm_core::account::DealEntry;
use tradeterm_core::execution::{
    ExecutionOutcome, ExecutionQuality, ExecutionRecord, QualityGroup, QuoteAtRequest, TickValue, quality,
};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Deal, Side};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::market::check_symbol;
use crate::trade_stats::range_of;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// The symbol of a ticket command that never filled (the gateway does not
/// know a ticket's symbol, and there is no deal to read it from).
pub const UNKNOWN_SYMBOL: &str = "unknown";

/// Most recorded requests one call reads.
pub const MAX_EXECUTIONS: u32 = 10_000;

/// Input of `get_execution_quality`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutionQualityInput {
    /// Range start, ISO 8601 (inclusive). Default: 30 days before `to`. Earlier starts are cut to 366 days before `to`; a `from` at or after `to` is an empty range.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub from: Option<String>,
    /// Range end, ISO 8601 (exclusive). Default: now.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub to: Option<String>,
    /// Only this instrument.
    #[serde(default)]
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: Option<String>,
}

/// Output of `get_execution_quality`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExecutionQualityOutput {
    /// Range start (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Range end (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Account currency of the money figures.
    pub currency: String,
    /// Every request tradeterm sent in the range.
    pub overall: QualityGroup,
    /// Per symbol.
    pub by_symbol: BTreeMap<String, QualityGroup>,
    /// Per session of the request time (`asia`, `london`, `new_york` overlap; `off_session` otherwise).
    pub by_session: BTreeMap<String, QualityGroup>,
    /// Fills with no pushed quote at request time (no slippage or spread for them).
    pub fills_without_quote: usize,
    /// Fills of a symbol whose specification could not be read (no points or money).
    pub unpriced_fills: usize,
    /// Trading deals in the range that tradeterm did not send (manual trades, other expert
    /// advisors, stop-loss and take-profit hits): their slippage, latency and rejections are unknown.
    pub untracked_deals: usize,
    /// What is missing and why.
    pub notes: Vec<String>,
}

/// Reads one stored record into the core type, with the deal history's
/// symbol, side, volume and price for fills. `None` for a record without
/// its times (never written by the gateway).
fn to_record(stored: &Value, deals: &HashMap<u64, &Deal>) -> Option<(ExecutionRecord, Vec<u64>)> {
    let deal_tickets: Vec<u64> = stored["results"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|t| t["deal"].as_u64())
                .filter(|d| *d != 0)
                .collect()
        })
        .unwrap_or_default();
    let first_deal = deal_tickets.first().and_then(|t| deals.get(t));
    let symbol = stored["symbol"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| first_deal.map(|d| d.symbol.clone()))
        .unwrap_or_else(|| UNKNOWN_SYMBOL.to_owned());
    let side = first_deal.map(|d| d.side).or(match stored["order_type"].as_str() {
        Some("buy") => Some(Side::Buy),
        Some("sell") => Some(Side::Sell),
        _ => None,
    });
    let outcome = match stored["outcome"]["status"].as_str() {
        Some("filled") => {
            let reported = stored["outcome"]["price"].as_f64().unwrap_or(f64::NAN);
            ExecutionOutcome::Filled {
                price: first_deal.map_or(reported, |d| d.price),
            }
        }
        Some("rejected") => ExecutionOutcome::Rejected {
            code: stored["outcome"]["code"].as_str().unwrap_or("unknown").to_owned(),
        },
        Some("timed_out") => ExecutionOutcome::TimedOut,
        _ => ExecutionOutcome::Accepted,
    };
    let quote = &stored["quotes"][symbol.as_str()];
    let quote = match (quote["bid"].as_f64(), quote["ask"].as_f64()) {
        (Some(bid), Some(ask)) => Some(QuoteAtRequest {
            bid,
            ask,
            age_ms: quote["age_ms"].as_u64().unwrap_or(0),
        }),
        _ => None,
    };
    let volume = first_deal
        .map(|d| d.volume)
        .or_else(|| stored["volume"].as_f64())
        .unwrap_or(0.0);
    let record = ExecutionRecord {
        symbol,
        side,
        volume,
        requested_at: stored["requested_at"].as_i64()?,
        answered_at: stored["answered_at"].as_i64()?,
        quote,
        outcome,
    };
    Some((record, deal_tickets))
}

async fn history(ctx: &ToolContext, from: i64, to: i64) -> Result<Vec<Deal>, ToolError> {
    // Deals of requests sent just before `to` may carry a terminal time a
    // little after it: read a minute more.
    match ctx
        .run(Command::HistoryDeals {
            from,
            to: to.saturating_add(60_000),
        })
        .await?
    {
        CommandResult::Deals { deals } => Ok(deals),
        other => Err(unexpected("history_deals", &other)),
    }
}

async fn get_execution_quality(
    ctx: ToolContext,
    input: ExecutionQualityInput,
) -> Result<ExecutionQualityOutput, ToolError> {
    let (from, to) = range_of(&ctx, &input.from, &input.to)?;
    if let Some(s) = &input.symbol {
        check_symbol(s)?;
    }
    let terminal = ctx.terminal()?.to_owned();
    let stored = ctx
        .services
        .store
        .executions(&ctx.license_id, &terminal, from, to, MAX_EXECUTIONS)
        .await?;
    let deals = history(&ctx, from, to).await?;
    let by_ticket: HashMap<u64, &Deal> = deals.iter().map(|d| (d.ticket, d)).collect();
    let mut records = Vec::with_capacity(stored.len());
    let mut tracked: BTreeSet<u64> = BTreeSet::new();
    for row in &stored {
        if let Some((record, tickets)) = to_record(&row.record, &by_ticket) {
            tracked.extend(tickets);
            if input
                .symbol
                .as_ref()
                .is_none_or(|s| s.eq_ignore_ascii_case(&record.symbol))
            {
                records.push(record);
            }
        }
    }
    let account = ctx.account().await?;
    let mut notes = Vec::new();
    let mut specs = BTreeMap::new();
    let symbols: BTreeSet<String> = records
        .iter()
        .map(|r| r.symbol.clone())
        .filter(|s| s != UNKNOWN_SYMBOL)
        .collect();
    for symbol in symbols {
        match ctx.spec(&symbol).await {
            Ok(s) => {
                specs.insert(
                    symbol,
                    TickValue {
                        point: s.point,
                        tick_size: s.tick_size,
                        tick_value: s.tick_value,
                    },
                );
            }
            Err(e) => notes.push(format!(
                "{symbol}: no contract specification ({e}); its fills have no points or money"
            )),
        }
    }
    let ExecutionQuality {
        overall,
        by_symbol,
        by_session,
        unpriced_fills,
        fills_without_quote,
    } = quality(&records, &specs);
    let untracked_deals = deals
        .iter()
        .filter(|d| d.time >= from && d.time < to && d.entry != DealEntry::Balance)
        .filter(|d| input.symbol.as_ref().is_none_or(|s| s.eq_ignore_ascii_case(&d.symbol)))
        .filter(|d| !tracked.contains(&d.ticket))
        .count();
    if stored.len() as u32 >= MAX_EXECUTIONS {
        notes.push(format!(
            "only the first {MAX_EXECUTIONS} requests of the range are measured; ask for a shorter range"
        ));
    }
    if overall.requests == 0 {
        notes.push("tradeterm sent no live trade request on this terminal in the range".into());
    }
    if untracked_deals > 0 {
        notes.push(format!(
            "{untracked_deals} deals in the range were not sent through tradeterm (manual trades, other expert \
             advisors, stop-loss or take-profit hits): their slippage, latency and rejections are unknown"
        ));
    }
    if fills_without_quote > 0 {
        notes.push(format!(
            "{fills_without_quote} fills had no quote pushed by the agent in the 5 s before the request: no \
             slippage or spread for them"
        ));
    }
    Ok(ExecutionQualityOutput {
        from,
        to,
        currency: account.currency,
        overall,
        by_symbol,
        by_session,
        fills_without_quote,
        unpriced_fills,
        untracked_deals,
        notes,
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_execution_quality",
            title: "Execution quality",
            description: "How well the broker filled the live trade requests tradeterm sent in [`from`, `to`) (default: the last 30 days), measured by the gateway at dispatch: slippage of market fills against the quote at request time (points and account currency; positive = better than quoted), request-to-answer latency percentiles, rejections and requotes by code, fill rate and spread paid, overall, per symbol and per session. Trades placed outside tradeterm are counted as untracked, not measured.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(get_execution_quality),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deal(ticket: u64, symbol: &str, side: Side, price: f64) -> Deal {
        Deal {
            ticket,
            order: 1,
            position: 1,
            symbol: symbol.into(),
            side,
            entry: DealEntry::Out,
            volume: 0.3,
            price,
            time: 0,
            profit: 0.0,
            swap: 0.0,
            commission: 0.0,
            magic: 0,
            comment: String::new(),
        }
    }

    #[test]
    fn a_close_takes_symbol_side_volume_and_price_from_its_deal() {
        let stored = json!({
            "command": "close_position", "symbol": null, "ticket": 5,
            "requested_at": 1_000, "answered_at": 1_030,
            "quotes": { "EURUSD": { "bid": 1.1, "ask": 1.1002, "age_ms": 50 }, "USDJPY": { "bid": 150.0, "ask": 150.02, "age_ms": 10 } },
            "outcome": { "status": "filled", "price": 1.0 },
            "results": [ { "deal": 77 } ]
        });
        let d = deal(77, "EURUSD", Side::Sell, 1.09995);
        let deals = HashMap::from([(77, &d)]);
        let (record, tickets) = to_record(&stored, &deals).unwrap();
        assert_eq!(tickets, [77]);
        assert_eq!(record.symbol, "EURUSD");
        assert_eq!(record.side, Some(Side::Sell));
        assert_eq!(record.volume, 0.3);
        assert_eq!(record.outcome, ExecutionOutcome::Filled { price: 1.09995 });
        assert_eq!(record.quote.unwrap().bid, 1.1);
    }

    #[test]
    fn a_rejected_order_keeps_its_own_symbol_and_code() {
        let stored = json!({
            "command": "place_order", "symbol": "XAUUSD", "order_type": "buy", "volume": 0.1,
            "requested_at": 5, "answered_at": 9, "quotes": {},
            "outcome": { "status": "rejected", "code": "requote" }, "results": []
        });
        let (record, tickets) = to_record(&stored, &HashMap::new()).unwrap();
        assert!(tickets.is_empty());
        assert_eq!(
            (record.symbol.as_str(), record.side, record.quote),
            ("XAUUSD", Some(Side::Buy), None)
        );
        assert_eq!(record.outcome, ExecutionOutcome::Rejected { code: "requote".into() });
        // A ticket command that never filled names no symbol: counted under `unknown`.
        let unknown = json!({ "command": "close_position", "symbol": null, "requested_at": 1, "answered_at": 2,
                              "outcome": { "status": "rejected", "code": "market_closed" }, "results": [] });
        assert_eq!(to_record(&unknown, &HashMap::new()).unwrap().0.symbol, UNKNOWN_SYMBOL);
        assert!(to_record(&json!({ "symbol": "EURUSD" }), &HashMap::new()).is_none());
    }

    #[test]
    fn in_the_catalog() {
        let t = crate::find("get_execution_quality").unwrap();
        assert_eq!(t.capability, Capability::Analytics);
        assert!(t.annotations.read_only);
    }
}
