//! `get_market_depth`: a symbol's depth of market (MT5 `MarketBookAdd`,
//! `MarketBookGet`, `MarketBookRelease`), read-only.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::time::UnixMs;
use tradeterm_protocol::agent::{BookLevel, BookSide};
use tradeterm_protocol::{Command, CommandResult};

use super::run_optional;
use crate::context::unexpected;
use crate::market::check_symbol;
use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Input of `get_market_depth`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketDepthInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Keep the terminal subscribed to the book afterwards (faster next
    /// reads); by default the subscription is released.
    #[serde(default)]
    pub keep_subscribed: bool,
}

/// One price level.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DepthLevel {
    /// Price.
    pub price: f64,
    /// Volume at the price, lots.
    pub volume: f64,
}

/// Output of `get_market_depth`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MarketDepth {
    /// Instrument.
    pub symbol: String,
    /// Time of the book.
    #[serde(with = "tradeterm_core::time::iso")]
    #[schemars(with = "tradeterm_core::time::iso::Schema")]
    pub time: UnixMs,
    /// Offers, best (lowest) first.
    pub asks: Vec<DepthLevel>,
    /// Bids, best (highest) first.
    pub bids: Vec<DepthLevel>,
    /// Total volume offered, lots.
    pub ask_volume: f64,
    /// Total volume bid, lots.
    pub bid_volume: f64,
    /// Bid volume minus ask volume over their sum, -1 … 1 (null for an empty book).
    pub imbalance: Option<f64>,
}

/// Splits MT5's book (offers from the highest price down, then bids) into
/// best-first sides; market-order entries count with their side.
fn sides(levels: &[BookLevel]) -> (Vec<DepthLevel>, Vec<DepthLevel>) {
    let mut asks: Vec<DepthLevel> = levels
        .iter()
        .filter(|l| matches!(l.side, BookSide::Sell | BookSide::SellMarket))
        .map(|l| DepthLevel {
            price: l.price,
            volume: l.volume,
        })
        .collect();
    let mut bids: Vec<DepthLevel> = levels
        .iter()
        .filter(|l| matches!(l.side, BookSide::Buy | BookSide::BuyMarket))
        .map(|l| DepthLevel {
            price: l.price,
            volume: l.volume,
        })
        .collect();
    asks.sort_by(|a, b| a.price.total_cmp(&b.price));
    bids.sort_by(|a, b| b.price.total_cmp(&a.price));
    (asks, bids)
}

fn round(x: f64) -> f64 {
    (x * 1e8).round() / 1e8
}

async fn handle(ctx: ToolContext, input: MarketDepthInput) -> Result<MarketDepth, ToolError> {
    check_symbol(&input.symbol)?;
    run_optional(
        &ctx,
        Command::MarketBookAdd {
            symbol: input.symbol.clone(),
        },
    )
    .await?;
    let got = run_optional(
        &ctx,
        Command::MarketBookGet {
            symbol: input.symbol.clone(),
        },
    )
    .await;
    if !input.keep_subscribed {
        let release = Command::MarketBookRelease {
            symbol: input.symbol.clone(),
        };
        if let Err(e) = run_optional(&ctx, release).await {
            tracing::debug!(error = %e, "market_book_release failed");
        }
    }
    let (symbol, time, levels) = match got? {
        CommandResult::MarketBook { symbol, time, levels } => (symbol, time, levels),
        other => return Err(unexpected("market_book_get", &other)),
    };
    let (asks, bids) = sides(&levels);
    let ask_volume = round(asks.iter().map(|l| l.volume).sum());
    let bid_volume = round(bids.iter().map(|l| l.volume).sum());
    let total = ask_volume + bid_volume;
    Ok(MarketDepth {
        symbol,
        time,
        asks,
        bids,
        ask_volume,
        bid_volume,
        imbalance: (total > 0.0).then(|| round((bid_volume - ask_volume) / total)),
    })
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_market_depth",
        title: "Depth of market",
        description: "A symbol's depth of market from the terminal (MT5 market book): offers and bids best first with their volumes, the totals and the bid/ask imbalance. MT4 terminals and agents without depth of market answer that it is not supported.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: true,
        },
    }
    .build(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_book_splits_into_best_first_sides() {
        let l = |side, price, volume| BookLevel { side, price, volume };
        let (asks, bids) = sides(&[
            l(BookSide::Sell, 1.1003, 3.0),
            l(BookSide::Sell, 1.1002, 2.0),
            l(BookSide::Buy, 1.1000, 1.0),
            l(BookSide::Buy, 1.0999, 4.0),
        ]);
        assert_eq!(asks.iter().map(|a| a.price).collect::<Vec<_>>(), vec![1.1002, 1.1003]);
        assert_eq!(bids.iter().map(|a| a.price).collect::<Vec<_>>(), vec![1.1000, 1.0999]);
    }
}
