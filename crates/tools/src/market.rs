//! Market-data tools: quotes, symbols, specifications, bars.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::time::{UnixMs, parse_iso};
use tradeterm_core::{Bar, SymbolSpec, Tick, Timeframe};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Largest number of bars one call returns.
pub const MAX_BARS: u32 = 10_000;

/// Checks a symbol name: 1–32 characters of letters, digits and `._#-+!`
/// ([`crate::schema::SYMBOL_PATTERN`], which the schemas state).
pub(crate) fn check_symbol(symbol: &str) -> Result<(), ToolError> {
    if crate::schema::is_symbol(symbol) {
        Ok(())
    } else {
        Err(ToolError::InvalidInput(format!(
            "invalid symbol `{}`: use 1-32 letters, digits or ._#-+!",
            symbol.chars().take(40).collect::<String>()
        )))
    }
}

/// Input of `get_tick`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TickInput {
    /// Instrument name, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
}

/// Input of `get_symbols`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// Symbols offered by the terminal.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SymbolsOutput {
    /// Symbol names.
    pub symbols: Vec<String>,
}

/// Input of `get_bars`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BarsInput {
    /// Instrument name.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Number of most recent bars (1–10000, default 100). Ignored when `from` is given.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_BARS))]
    pub count: Option<u32>,
    /// Range start, ISO 8601 (inclusive).
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub from: Option<String>,
    /// Range end, ISO 8601 (exclusive; default now).
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub to: Option<String>,
}

/// Bars, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BarsOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars, oldest first; the last one may still be forming.
    pub bars: Vec<Bar>,
}

fn parse_time(field: &str, v: &Option<String>) -> Result<Option<UnixMs>, ToolError> {
    v.as_deref()
        .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput(format!("`{field}` must be an ISO 8601 time"))))
        .transpose()
}

/// Fetches bars (used by analytics tools too).
pub(crate) async fn fetch_bars(
    ctx: &ToolContext,
    symbol: &str,
    timeframe: Timeframe,
    count: Option<u32>,
    from: Option<UnixMs>,
    to: Option<UnixMs>,
) -> Result<Vec<Bar>, ToolError> {
    check_symbol(symbol)?;
    // `to` at or before `from` is an empty range (not an error: JSON Schema
    // cannot state an order between two fields).
    if let (Some(f), Some(t)) = (from, to)
        && f >= t
    {
        return Ok(Vec::new());
    }
    let count = match (count, from) {
        (_, Some(_)) => None,
        (Some(c), None) if c == 0 || c > MAX_BARS => {
            return Err(ToolError::InvalidInput(format!(
                "`count` must be between 1 and {MAX_BARS}"
            )));
        }
        (c, None) => Some(c.unwrap_or(100)),
    };
    let answer = match ctx
        .run(Command::Bars {
            symbol: symbol.to_owned(),
            timeframe,
            count,
            from,
            to,
        })
        .await
    {
        // A range that starts after the terminal's clock (`to` defaults to
        // its now, which may run behind the server's) is refused by some
        // agents as `from` after `to`: it is the empty range it is.
        Err(ToolError::InvalidInput(why)) if from.is_some() => match ctx.tick(symbol).await {
            Ok(tick) if from.is_some_and(|f| f > tick.time) => return Ok(Vec::new()),
            _ => return Err(ToolError::InvalidInput(why)),
        },
        answer => answer?,
    };
    match answer {
        CommandResult::Bars { mut bars, .. } => {
            if bars.len() > MAX_BARS as usize {
                bars.drain(..bars.len() - MAX_BARS as usize);
            }
            Ok(bars)
        }
        other => Err(unexpected("bars", &other)),
    }
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_tick",
            title: "Latest quote",
            description: "Latest bid/ask quote of a symbol on the terminal, with its time (ISO 8601 UTC).",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: TickInput| async move {
            check_symbol(&input.symbol)?;
            let tick: Tick = ctx.tick(&input.symbol).await?;
            Ok(tick)
        }),
        ToolSpec {
            name: "get_symbols",
            title: "Symbols",
            description: "Names of the symbols the terminal offers.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, _: NoInput| async move {
            match ctx.run(Command::Symbols).await? {
                CommandResult::Symbols { symbols } => Ok(SymbolsOutput { symbols }),
                other => Err(unexpected("symbols", &other)),
            }
        }),
        ToolSpec {
            name: "get_symbol_spec",
            title: "Symbol specification",
            description: "Contract specification of a symbol: digits, point, contract size, tick size and value, volume limits and step, stops level, swaps and triple-swap day, margin mode, trading sessions (UTC).",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: TickInput| async move {
            check_symbol(&input.symbol)?;
            let spec: SymbolSpec = ctx.spec(&input.symbol).await?;
            Ok(spec)
        }),
        ToolSpec {
            name: "get_bars",
            title: "Price bars",
            description: "OHLCV bars of a symbol, oldest first: the last `count` bars (default 100, at most 10000), or the bars opened in [`from`, `to`).",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(|ctx: ToolContext, input: BarsInput| async move {
            let from = parse_time("from", &input.from)?;
            let to = parse_time("to", &input.to)?;
            let bars = fetch_bars(&ctx, &input.symbol, input.timeframe, input.count, from, to).await?;
            Ok(BarsOutput { symbol: input.symbol, timeframe: input.timeframe, bars })
        }),
    ]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tradeterm_core::time::parse_iso;
    use tradeterm_protocol::agent::{ErrorBody, codes};
    use tradeterm_protocol::{DispatchError, TerminalStatus};

    use super::*;

    /// A terminal whose clock is at `NOW`: it refuses a range starting after
    /// it (`from` after its default `to`), as the simulator does.
    struct BehindClock;

    const NOW: &str = "2026-11-18T12:00:00Z";

    #[async_trait::async_trait]
    impl tradeterm_protocol::Dispatch for BehindClock {
        async fn execute(
            &self,
            _license: &str,
            _terminal: &str,
            command: Command,
            _timeout: std::time::Duration,
        ) -> Result<CommandResult, DispatchError> {
            let now = parse_iso(NOW).unwrap();
            match command {
                Command::Bars { from: Some(from), .. } if from > now => Err(DispatchError::CommandFailed(
                    ErrorBody::new(codes::INVALID_ARGUMENT, "`from` is after `to`"),
                )),
                Command::Bars { symbol, timeframe, .. } => Ok(CommandResult::Bars {
                    symbol,
                    timeframe,
                    bars: Vec::new(),
                }),
                Command::Tick { symbol } => Ok(CommandResult::Tick(Tick {
                    symbol,
                    bid: 1.1,
                    ask: 1.1002,
                    time: now - 1_000,
                })),
                _ => Err(DispatchError::Unreachable),
            }
        }

        async fn terminals(&self, _license: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
            Ok(Vec::new())
        }
    }

    async fn get_bars(input: serde_json::Value) -> Result<serde_json::Value, ToolError> {
        let store = tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap();
        let services = crate::Services::new(Arc::new(BehindClock), Arc::new(store));
        let caller = crate::Caller {
            license_id: "lic_test".into(),
            credential: "key_test".into(),
            caps: vec![Capability::Read],
        };
        let ctx = ToolContext::new(Arc::new(services), caller, Some("term_test".into()));
        crate::find("get_bars").unwrap().call(ctx, input).await
    }

    #[tokio::test]
    async fn a_range_after_the_terminals_clock_is_empty_not_refused() {
        for input in [
            serde_json::json!({ "symbol": "EURUSD", "timeframe": "H1", "from": "2026-11-20T00:00:00Z" }),
            serde_json::json!({ "symbol": "EURUSD", "timeframe": "H1", "from": "2026-11-20T00:00:00Z",
                                "to": "2026-11-21T00:00:00Z" }),
            // `to` before `from`: empty, without asking the terminal.
            serde_json::json!({ "symbol": "EURUSD", "timeframe": "H1", "from": "2026-11-20T00:00:00Z",
                                "to": "2026-11-01T00:00:00Z" }),
        ] {
            let out = get_bars(input.clone()).await.unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(out["bars"], serde_json::json!([]), "{input}");
        }
        let ok = get_bars(serde_json::json!({ "symbol": "EURUSD", "timeframe": "H1", "from": "2026-11-01T00:00:00Z" }));
        assert!(ok.await.is_ok());
    }
}
