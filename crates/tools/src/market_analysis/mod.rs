//! Derived market-analytics tools: volatility regime, strategy style, market
//! structure per timeframe, confluence checks, Fibonacci levels, session
//! statistics and profiles, tick-rule order flow.
//!
//! Each handler validates its input, fetches bars or ticks from the terminal
//! and computes with the pure functions of `tradeterm-core`
//! (`regime`, `fibonacci`, `sessions`, `orderflow`, `confluence`); the rules
//! and thresholds are documented in `docs/analytics.md`.
//!
//! One file per tool; the argument checks and the swing, structure and
//! session helpers several of them share are here.

mod check_confluence;
mod get_fibonacci_levels;
mod get_market_structure;
mod get_order_flow;
mod get_session_stats;
mod get_symbol_session_profile;
mod get_volatility_regime;
mod recommend_strategy_style;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::regime::{
    ADX_TRENDING, ATR_CHANGE_BARS, ATR_RISE_EXPANDING_PCT, BANDWIDTH_COMPRESSED_PCT, BANDWIDTH_EXPANDING_PCT,
    ER_TRENDING, LastBreak, RegimeConfig, SwingLabel, SwingPoint, Trend, TrendReport,
};
use tradeterm_core::sessions;
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Bar, CoreError, Timeframe};

use crate::market::{MAX_BARS, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Most timeframes `get_market_structure` accepts.
pub const MAX_TIMEFRAMES: usize = 4;
/// Most conditions `check_confluence` accepts.
pub const MAX_CONDITIONS: usize = 8;
/// Largest `swing_length` of these tools.
pub const MAX_SWING_LENGTH: usize = 100;
/// Default `swing_length` of these tools.
pub const DEFAULT_SWING_LENGTH: usize = 10;
/// Largest `bars` of these tools.
pub const MAX_ANALYSIS_BARS: u32 = 5_000;
/// Most days of session statistics.
pub const MAX_SESSION_DAYS: u32 = 120;
/// Most minutes of order flow.
pub const MAX_FLOW_MINUTES: u32 = 1_440;
/// Most ticks fetched for order flow.
pub const MAX_FLOW_TICKS: u32 = 20_000;
/// Largest bucket of `get_order_flow`, minutes.
pub const MAX_BUCKET_MINUTES: u32 = 60;

fn core_err(e: CoreError) -> ToolError {
    ToolError::InvalidInput(e.to_string())
}

fn bars_arg(bars: Option<u32>, default: u32, min: u32) -> Result<u32, ToolError> {
    let n = bars.unwrap_or(default);
    if !(min..=MAX_ANALYSIS_BARS).contains(&n) {
        return Err(ToolError::InvalidInput(format!(
            "`bars` must be between {min} and {MAX_ANALYSIS_BARS}, got {n}"
        )));
    }
    Ok(n)
}

fn swing_arg(swing_length: Option<u32>) -> Result<usize, ToolError> {
    let n = swing_length.map(|v| v as usize).unwrap_or(DEFAULT_SWING_LENGTH);
    if !(1..=MAX_SWING_LENGTH).contains(&n) {
        return Err(ToolError::InvalidInput(format!(
            "`swing_length` must be between 1 and {MAX_SWING_LENGTH}, got {n}"
        )));
    }
    Ok(n)
}

async fn bars_of(ctx: &ToolContext, symbol: &str, timeframe: Timeframe, n: u32) -> Result<Vec<Bar>, ToolError> {
    let bars = fetch_bars(ctx, symbol, timeframe, Some(n.min(MAX_BARS)), None, None).await?;
    if bars.is_empty() {
        return Err(ToolError::NotFound(format!("no bars for {symbol} {timeframe}")));
    }
    Ok(bars)
}

/// Why `bars` are too few for an analysis needing `need` of them (the
/// terminal's history is shorter than that), if they are: the tools answer
/// with what there is and say so, rather than refusing a valid request.
fn short_history(bars: &[Bar], need: usize, symbol: &str, timeframe: Timeframe, what: &str) -> Option<String> {
    (bars.len() < need).then(|| {
        format!(
            "the terminal has {} {timeframe} bars of {symbol}; {what} need at least {need}",
            bars.len()
        )
    })
}

/// Open time of the last bar (0 for no bars; the tools only call it with some).
fn last_time(bars: &[Bar]) -> UnixMs {
    bars.last().map_or(0, |b| b.time)
}

/// The thresholds the regime rules use (see `docs/analytics.md`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RegimeThresholds {
    /// Trending needs ADX at least this.
    pub adx_trending: f64,
    /// Trending needs an efficiency ratio at least this.
    pub efficiency_ratio_trending: f64,
    /// Expanding when the bandwidth percentile is at least this.
    pub bandwidth_expanding_percentile: f64,
    /// Expanding when ATR rose at least this many percent over `atr_change_bars` bars.
    pub atr_rise_expanding_pct: f64,
    /// Bars of the ATR change.
    pub atr_change_bars: usize,
    /// Compressed when the bandwidth percentile is at most this.
    pub bandwidth_compressed_percentile: f64,
    /// Percentile lookback (indicator values).
    pub percentile_lookback: usize,
}

fn thresholds(config: &RegimeConfig) -> RegimeThresholds {
    RegimeThresholds {
        adx_trending: ADX_TRENDING,
        efficiency_ratio_trending: ER_TRENDING,
        bandwidth_expanding_percentile: BANDWIDTH_EXPANDING_PCT,
        atr_rise_expanding_pct: ATR_RISE_EXPANDING_PCT,
        atr_change_bars: ATR_CHANGE_BARS,
        bandwidth_compressed_percentile: BANDWIDTH_COMPRESSED_PCT,
        percentile_lookback: config.lookback,
    }
}

/// A swing point with ISO times.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SwingOut {
    /// Price of the swing (the bar's high for a high, low for a low).
    pub price: f64,
    /// Open time of the swing bar (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Open time of the bar at whose close the swing was confirmed.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub confirmed_time: UnixMs,
}

/// `None` if the swing's confirmation bar is not in `bars` (it always is for
/// swings detected on them).
fn swing_out(p: &SwingPoint, bars: &[Bar]) -> Option<SwingOut> {
    Some(SwingOut {
        price: p.price,
        time: p.time,
        confirmed_time: bars.get(p.confirmed_at)?.time,
    })
}

/// Market structure of one timeframe.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TimeframeStructure {
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars analysed.
    pub bars: usize,
    /// Open time of the last bar analysed.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// `bullish`, `bearish` or `ranging`.
    pub trend: Trend,
    /// The rule that decided the trend.
    pub rule: String,
    /// Last swing high vs the previous one: `HH` or `LH` (null with fewer than two highs).
    pub high_label: Option<SwingLabel>,
    /// Last swing low vs the previous one: `HL` or `LL` (null with fewer than two lows).
    pub low_label: Option<SwingLabel>,
    /// Last confirmed swing high.
    pub last_swing_high: Option<SwingOut>,
    /// Last confirmed swing low.
    pub last_swing_low: Option<SwingOut>,
    /// Last BOS / CHoCH.
    pub last_break: Option<LastBreak>,
}

fn structure_out(timeframe: Timeframe, bars: &[Bar], t: TrendReport) -> TimeframeStructure {
    TimeframeStructure {
        timeframe,
        bars: bars.len(),
        time: last_time(bars),
        trend: t.trend,
        rule: t.rule,
        high_label: t.high_label,
        low_label: t.low_label,
        last_swing_high: t.last_swing_high.as_ref().and_then(|p| swing_out(p, bars)),
        last_swing_low: t.last_swing_low.as_ref().and_then(|p| swing_out(p, bars)),
        last_break: t.last_break,
    }
}

/// Input of `get_session_stats` and `get_symbol_session_profile`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// UTC days with quotes to analyse, most recent last (1-120, default 20). Days without bars (weekends) are skipped.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_SESSION_DAYS))]
    pub days: Option<u32>,
}

fn days_arg(days: Option<u32>) -> Result<usize, ToolError> {
    let d = days.unwrap_or(20);
    if !(1..=MAX_SESSION_DAYS).contains(&d) {
        return Err(ToolError::InvalidInput(format!(
            "`days` must be between 1 and {MAX_SESSION_DAYS}, got {d}"
        )));
    }
    Ok(d as usize)
}

async fn session_bars(ctx: &ToolContext, symbol: &str, days: usize) -> Result<Vec<Bar>, ToolError> {
    let want = sessions::bars_for_days(days, Timeframe::H1.duration_ms()).min(MAX_BARS as usize) as u32;
    bars_of(ctx, symbol, Timeframe::H1, want).await
}

/// The spec of a tool of this module: `analytics`, terminal-scoped, read-only.
fn spec(name: &'static str, title: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        capability: Capability::Analytics,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
}

/// The tools of this module, in catalog order.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        get_volatility_regime::tool(),
        recommend_strategy_style::tool(),
        get_market_structure::tool(),
        check_confluence::tool(),
        get_fibonacci_levels::tool(),
        get_session_stats::tool(),
        get_symbol_session_profile::tool(),
        get_order_flow::tool(),
    ]
}

#[cfg(test)]
pub(crate) mod fake {
    //! A terminal with a short history, for the "answer with what there is" rules.

    use std::sync::Arc;

    use tradeterm_protocol::{Command, CommandResult, DispatchError, TerminalStatus};

    use super::*;

    /// Answers every `bars` command with `count` H1 bars: a zig-zag when
    /// `swinging`, else a steady rise (no swing high/low pair).
    pub(crate) struct ShortHistory {
        pub count: usize,
        pub swinging: bool,
    }

    #[async_trait::async_trait]
    impl tradeterm_protocol::Dispatch for ShortHistory {
        async fn execute(
            &self,
            _license: &str,
            _terminal: &str,
            command: Command,
            _timeout: std::time::Duration,
        ) -> Result<CommandResult, DispatchError> {
            let Command::Bars { symbol, timeframe, .. } = command else {
                return Err(DispatchError::Unreachable);
            };
            let bars = (0..self.count)
                .map(|i| {
                    let x = i as f64;
                    let mid = if self.swinging {
                        1.1 + 0.01 * (x / 7.0).sin() + 0.0001 * (x * 1.3).cos()
                    } else {
                        1.1 + 0.001 * x
                    };
                    Bar {
                        time: 1_700_000_000_000 + i as i64 * 3_600_000,
                        open: mid,
                        high: mid + 0.0008,
                        low: mid - 0.0008,
                        close: mid + 0.0002,
                        volume: 100.0,
                    }
                })
                .collect();
            Ok(CommandResult::Bars {
                symbol,
                timeframe,
                bars,
            })
        }

        async fn terminals(&self, _license: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
            Ok(Vec::new())
        }
    }

    /// Calls `tool` on a terminal of `count` bars.
    pub(crate) async fn call(
        tool: &str,
        count: usize,
        swinging: bool,
        input: serde_json::Value,
    ) -> Result<serde_json::Value, ToolError> {
        let store = tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap();
        let services = crate::Services::new(Arc::new(ShortHistory { count, swinging }), Arc::new(store));
        let caller = crate::Caller {
            license_id: "lic_test".into(),
            credential: "key_test".into(),
            caps: vec![Capability::Read, Capability::Analytics],
        };
        let ctx = ToolContext::new(Arc::new(services), caller, Some("term_test".into()));
        crate::find(tool).unwrap().call(ctx, input).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn a_short_history_is_answered_with_what_there_is() {
        let input = json!({ "symbol": "EURUSD", "timeframe": "MN1" });
        let out = fake::call("get_volatility_regime", 30, true, input.clone())
            .await
            .unwrap();
        assert!(out["regime"].is_null() && out["metrics"].is_null(), "{out}");
        assert_eq!(out["bars"], 30);
        assert!(
            out["warnings"][0]
                .as_str()
                .unwrap()
                .contains("the terminal has 30 MN1 bars"),
            "{out}"
        );
        let out = fake::call("get_volatility_regime", 400, true, input.clone())
            .await
            .unwrap();
        assert!(out["regime"].is_string() && out["warnings"] == json!([]), "{out}");

        let style = json!({ "symbol": "EURUSD", "timeframe": "MN1", "swing_length": 63 });
        let out = fake::call("recommend_strategy_style", 150, true, style.clone())
            .await
            .unwrap();
        assert_eq!(
            (out["style"].as_str(), out["bias"].as_str()),
            (Some("stand-aside"), Some("neutral")),
            "{out}"
        );
        assert!(out["regime"].is_null() && out["structure"].is_null(), "{out}");
        assert!(out["warnings"][0].as_str().unwrap().contains("at least 189"), "{out}");
        let out = fake::call("recommend_strategy_style", 500, true, style).await.unwrap();
        assert!(out["regime"].is_string() && out["structure"].is_object(), "{out}");

        let fib = json!({ "symbol": "EURUSD", "timeframe": "MN1", "swing_length": 20 });
        let out = fake::call("get_fibonacci_levels", 40, true, fib.clone()).await.unwrap();
        assert!(out["direction"].is_null() && out["swing_high"].is_null(), "{out}");
        assert_eq!(out["retracements"], json!([]));
        assert!(
            out["warnings"][0].as_str().unwrap().contains("needs at least 60"),
            "{out}"
        );
        // Enough bars, no swing high/low pair: a result too.
        let out = fake::call("get_fibonacci_levels", 500, false, fib.clone())
            .await
            .unwrap();
        assert!(out["direction"].is_null(), "{out}");
        assert!(
            out["warnings"][0].as_str().unwrap().contains("no confirmed swing"),
            "{out}"
        );
        let out = fake::call("get_fibonacci_levels", 500, true, fib).await.unwrap();
        assert!(out["direction"].is_string() && out["warnings"] == json!([]), "{out}");
    }

    #[test]
    fn every_tool_is_analytics_read_only_and_terminal_scoped() {
        let tools = tools();
        assert_eq!(tools.len(), 8);
        for t in &tools {
            assert_eq!(t.capability, Capability::Analytics, "{}", t.name);
            assert_eq!(t.gate, Gate::Always);
            assert_eq!(t.target, Target::Terminal);
            assert!(t.annotations.read_only && !t.annotations.destructive);
            assert_eq!(t.input_schema["type"], "object");
        }
    }

    #[test]
    fn argument_bounds() {
        assert!(bars_arg(Some(10), 300, 150).is_err());
        assert!(bars_arg(None, 300, 150).is_ok());
        assert!(swing_arg(Some(0)).is_err());
        assert!(swing_arg(Some(101)).is_err());
        assert_eq!(swing_arg(None).unwrap(), DEFAULT_SWING_LENGTH);
        assert!(days_arg(Some(121)).is_err());
        let e = days_arg(Some(0)).unwrap_err().to_string();
        assert!(e.contains("between 1 and 120"), "{e}");
    }
}
