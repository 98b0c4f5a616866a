//! Derived market-analytics tools: volatility regime, strategy style, market
//! structure per timeframe, confluence checks, Fibonacci levels, session
//! statistics and profiles, tick-rule order flow.
//!
//! Each handler validates its input, fetches bars or ticks from the terminal
//! and computes with the pure functions of `tradeterm-core`
//! (`regime`, `fibonacci`, `sessions`, `orderflow`, `confluence`); the rules
//! and thresholds are documented in `docs/analytics.md`.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::confluence::{self, Op, Operand, SeriesRef};
use tradeterm_core::fibonacci::{self, FibLevel, LegDirection};
use tradeterm_core::orderflow::{self, FlowBucket};
use tradeterm_core::regime::{
    self, ADX_TRENDING, ATR_CHANGE_BARS, ATR_RISE_EXPANDING_PCT, BANDWIDTH_COMPRESSED_PCT, BANDWIDTH_EXPANDING_PCT,
    Bias, ER_TRENDING, LastBreak, Regime, RegimeConfig, RegimeMetrics, Style, SwingLabel, SwingPoint, Trend,
    TrendReport,
};
use tradeterm_core::sessions::{self, SessionSummary};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Bar, CoreError, Timeframe};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::market::{MAX_BARS, check_symbol, fetch_bars};
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

// ---------------------------------------------------------------- regime

/// Input of `get_volatility_regime`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VolatilityRegimeInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Bars of history to analyse (150-5000, default 300).
    #[serde(default)]
    pub bars: Option<u32>,
}

/// Output of `get_volatility_regime`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VolatilityRegimeOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars analysed.
    pub bars: usize,
    /// Open time of the last bar (ISO 8601 UTC): the regime is as of this bar's close.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// `compressed`, `expanding`, `trending` or `choppy`.
    pub regime: Regime,
    /// The rule that matched, with its numbers.
    pub rule: String,
    /// ATR(14) and its percentile, Bollinger(20, 2) bandwidth and its percentile, ADX(14) with ±DI, efficiency ratio(20).
    pub metrics: RegimeMetrics,
    /// The thresholds of the rules.
    pub thresholds: RegimeThresholds,
}

async fn get_volatility_regime(
    ctx: ToolContext,
    input: VolatilityRegimeInput,
) -> Result<VolatilityRegimeOutput, ToolError> {
    let n = bars_arg(input.bars, 300, 150)?;
    let bars = bars_of(&ctx, &input.symbol, input.timeframe, n).await?;
    let config = RegimeConfig::default();
    let r = regime::volatility_regime(&bars, &config).map_err(core_err)?;
    Ok(VolatilityRegimeOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        bars: bars.len(),
        time: last_time(&bars),
        regime: r.regime,
        rule: r.rule,
        metrics: r.metrics,
        thresholds: thresholds(&config),
    })
}

// ---------------------------------------------------------------- structure

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

/// Input of `get_market_structure`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarketStructureInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// 1 to 4 distinct timeframes, e.g. `["H4", "H1", "M15"]`.
    pub timeframes: Vec<Timeframe>,
    /// Swing window in bars on each side (1-100, default 10): a swing high is the highest high of
    /// `2 · swing_length` bars and is confirmed `swing_length` bars later.
    #[serde(default)]
    pub swing_length: Option<u32>,
    /// Bars of history per timeframe (100-5000, default 500).
    #[serde(default)]
    pub bars: Option<u32>,
}

/// Output of `get_market_structure`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MarketStructureOutput {
    /// Instrument.
    pub symbol: String,
    /// Swing length used.
    pub swing_length: usize,
    /// One entry per requested timeframe, in the order given.
    pub timeframes: Vec<TimeframeStructure>,
}

async fn get_market_structure(
    ctx: ToolContext,
    input: MarketStructureInput,
) -> Result<MarketStructureOutput, ToolError> {
    if input.timeframes.is_empty() || input.timeframes.len() > MAX_TIMEFRAMES {
        return Err(ToolError::InvalidInput(format!(
            "`timeframes` must list 1 to {MAX_TIMEFRAMES} timeframes, got {}",
            input.timeframes.len()
        )));
    }
    let mut seen = BTreeSet::new();
    if let Some(dup) = input.timeframes.iter().find(|tf| !seen.insert(**tf)) {
        return Err(ToolError::InvalidInput(format!(
            "timeframe {dup} is listed twice in `timeframes`"
        )));
    }
    let swing_length = swing_arg(input.swing_length)?;
    let n = bars_arg(input.bars, 500, 100)?;
    if (n as usize) < 3 * swing_length {
        return Err(ToolError::InvalidInput(format!(
            "`bars` ({n}) must be at least 3 × swing_length ({})",
            3 * swing_length
        )));
    }
    let mut out = Vec::with_capacity(input.timeframes.len());
    for tf in &input.timeframes {
        let bars = bars_of(&ctx, &input.symbol, *tf, n).await?;
        let t = regime::trend_state(&bars, swing_length).map_err(|e| ToolError::InvalidInput(format!("{tf}: {e}")))?;
        out.push(structure_out(*tf, &bars, t));
    }
    Ok(MarketStructureOutput {
        symbol: input.symbol,
        swing_length,
        timeframes: out,
    })
}

// ---------------------------------------------------------------- style

/// Input of `recommend_strategy_style`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrategyStyleInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Swing window of the structure analysis (1-100, default 10).
    #[serde(default)]
    pub swing_length: Option<u32>,
}

/// Output of `recommend_strategy_style`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StrategyStyleOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Open time of the last bar analysed.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// `trend-follow`, `mean-revert`, `breakout` or `stand-aside`.
    pub style: Style,
    /// Favoured direction: `long`, `short` or `neutral`.
    pub bias: Bias,
    /// Why, each reason citing the measured numbers.
    pub reasons: Vec<String>,
    /// The volatility regime it rests on.
    pub regime: Regime,
    /// The regime's numbers.
    pub metrics: RegimeMetrics,
    /// The market structure it rests on.
    pub structure: TimeframeStructure,
}

async fn recommend_strategy_style(
    ctx: ToolContext,
    input: StrategyStyleInput,
) -> Result<StrategyStyleOutput, ToolError> {
    let swing_length = swing_arg(input.swing_length)?;
    let bars = bars_of(&ctx, &input.symbol, input.timeframe, 500).await?;
    let r = regime::volatility_regime(&bars, &RegimeConfig::default()).map_err(core_err)?;
    let t = regime::trend_state(&bars, swing_length).map_err(core_err)?;
    let s = regime::strategy_style(&r, &t);
    Ok(StrategyStyleOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        time: last_time(&bars),
        style: s.style,
        bias: s.bias,
        reasons: s.reasons,
        regime: r.regime,
        metrics: r.metrics,
        structure: structure_out(input.timeframe, &bars, t),
    })
}

// ---------------------------------------------------------------- confluence

/// One condition of `check_confluence`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConditionInput {
    /// Timeframe of the bars the condition is evaluated on.
    pub timeframe: Timeframe,
    /// Indicator name or alias of `list_indicators` (`rsi`, `ema`, `macd`, `bbands`, ...), or `price`
    /// (outputs `close`, `open`, `high`, `low`).
    pub indicator: String,
    /// Indicator parameters (e.g. `{"period": 14}`); missing ones take their defaults.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
    /// Output series (`signal`, `upper`, ...); default the indicator's first output.
    #[serde(default)]
    pub output: Option<String>,
    /// `gt`, `lt`, `gte`, `lte` (last bar), `cross_above`, `cross_below` (last two bars).
    pub op: Op,
    /// A number, or another series `{"indicator": "ema", "params": {"period": 50}, "output": null}` on the same bars.
    pub value: Operand,
}

/// Input of `check_confluence`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfluenceInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// 1 to 8 conditions.
    pub conditions: Vec<ConditionInput>,
    /// Bars of history per timeframe, for indicator warm-up (50-5000, default 500).
    #[serde(default)]
    pub bars: Option<u32>,
}

/// Result of one condition.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConditionResult {
    /// Position of the condition in the input (0-based).
    pub index: usize,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Operator.
    pub op: Op,
    /// Whether it holds at the last bar.
    pub passed: bool,
    /// Open time of the last bar of the timeframe.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Left series (`indicator.output`).
    pub left_name: String,
    /// Left value at the last bar.
    pub left: f64,
    /// Left value one bar earlier (crosses only).
    pub left_prev: Option<f64>,
    /// Right side (`value` for a number, else `indicator.output`).
    pub right_name: String,
    /// Right value at the last bar.
    pub right: f64,
    /// Right value one bar earlier (crosses only).
    pub right_prev: Option<f64>,
}

/// Output of `check_confluence`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfluenceOutput {
    /// Instrument.
    pub symbol: String,
    /// One result per condition, in input order.
    pub results: Vec<ConditionResult>,
    /// Conditions that hold.
    pub passed: usize,
    /// Conditions that do not.
    pub failed: usize,
    /// Conditions checked.
    pub total: usize,
    /// `passed / total` (0-1).
    pub score: f64,
    /// Whether every condition holds.
    pub all_passed: bool,
}

async fn check_confluence(ctx: ToolContext, input: ConfluenceInput) -> Result<ConfluenceOutput, ToolError> {
    if input.conditions.is_empty() || input.conditions.len() > MAX_CONDITIONS {
        return Err(ToolError::InvalidInput(format!(
            "`conditions` must hold 1 to {MAX_CONDITIONS} conditions, got {}",
            input.conditions.len()
        )));
    }
    let n = bars_arg(input.bars, 500, 50)?;
    check_symbol(&input.symbol)?;
    let mut by_tf: BTreeMap<Timeframe, Vec<Bar>> = BTreeMap::new();
    for c in &input.conditions {
        if let std::collections::btree_map::Entry::Vacant(slot) = by_tf.entry(c.timeframe) {
            slot.insert(bars_of(&ctx, &input.symbol, c.timeframe, n).await?);
        }
    }
    let mut results = Vec::with_capacity(input.conditions.len());
    for (i, c) in input.conditions.into_iter().enumerate() {
        let bars = by_tf.get(&c.timeframe).map(Vec::as_slice).unwrap_or_default();
        let left = SeriesRef {
            indicator: c.indicator,
            params: c.params,
            output: c.output,
        };
        let o = confluence::evaluate(bars, &left, c.op, &c.value)
            .map_err(|e| ToolError::InvalidInput(format!("condition {i} ({}): {e}", c.timeframe)))?;
        results.push(ConditionResult {
            index: i,
            timeframe: c.timeframe,
            op: c.op,
            passed: o.passed,
            time: last_time(bars),
            left_name: o.left_name,
            left: o.left,
            left_prev: o.left_prev,
            right_name: o.right_name,
            right: o.right,
            right_prev: o.right_prev,
        });
    }
    let total = results.len();
    let passed = results.iter().filter(|r| r.passed).count();
    Ok(ConfluenceOutput {
        symbol: input.symbol,
        results,
        passed,
        failed: total - passed,
        total,
        score: passed as f64 / total as f64,
        all_passed: passed == total,
    })
}

// ---------------------------------------------------------------- fibonacci

/// Input of `get_fibonacci_levels`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FibonacciInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Swing window (1-100, default 10).
    #[serde(default)]
    pub swing_length: Option<u32>,
    /// Bars of history (100-5000, default 500).
    #[serde(default)]
    pub bars: Option<u32>,
}

/// Output of `get_fibonacci_levels`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FibonacciOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// `up` (low then high: retracements below the high) or `down` (high then low: retracements above the low).
    pub direction: LegDirection,
    /// Swing high of the leg.
    pub swing_high: SwingOut,
    /// Swing low of the leg.
    pub swing_low: SwingOut,
    /// `high − low`.
    pub range: f64,
    /// Retracements 0.236, 0.382, 0.5, 0.618, 0.786.
    pub retracements: Vec<FibLevel>,
    /// Extensions 1.272, 1.618, 2.618 beyond the leg's end.
    pub extensions: Vec<FibLevel>,
    /// Close of the last bar, to place price among the levels.
    pub last_close: f64,
    /// Open time of the last bar.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
}

async fn get_fibonacci_levels(ctx: ToolContext, input: FibonacciInput) -> Result<FibonacciOutput, ToolError> {
    let swing_length = swing_arg(input.swing_length)?;
    let n = bars_arg(input.bars, 500, 100)?;
    if (n as usize) < 3 * swing_length {
        return Err(ToolError::InvalidInput(format!(
            "`bars` ({n}) must be at least 3 × swing_length ({})",
            3 * swing_length
        )));
    }
    let bars = bars_of(&ctx, &input.symbol, input.timeframe, n).await?;
    let f = fibonacci::from_bars(&bars, swing_length).map_err(core_err)?;
    let swing = |p: &SwingPoint| {
        swing_out(p, &bars).ok_or_else(|| ToolError::Internal("a swing was confirmed outside the bars".into()))
    };
    Ok(FibonacciOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        direction: f.direction,
        swing_high: swing(&f.high)?,
        swing_low: swing(&f.low)?,
        range: f.range,
        retracements: f.retracements,
        extensions: f.extensions,
        last_close: bars.last().map(|b| b.close).unwrap_or_default(),
        time: last_time(&bars),
    })
}

// ---------------------------------------------------------------- sessions

/// Input of `get_session_stats` and `get_symbol_session_profile`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// UTC days with quotes to analyse, most recent last (1-120, default 20). Days without bars (weekends) are skipped.
    #[serde(default)]
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

/// Output of `get_session_stats`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionStatsOutput {
    /// Instrument.
    pub symbol: String,
    /// Bars used (always H1; session highs and lows are timed to the hour).
    pub timeframe: Timeframe,
    /// Days analysed.
    pub days: usize,
    /// First day analysed (midnight UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Last day analysed (midnight UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Mean daily range.
    pub average_daily_range: f64,
    /// Asia 00:00-08:00, London 07:00-16:00, New York 12:00-21:00 UTC (fixed, no daylight-saving shift).
    pub sessions: Vec<SessionSummary>,
}

async fn get_session_stats(ctx: ToolContext, input: SessionInput) -> Result<SessionStatsOutput, ToolError> {
    let days = days_arg(input.days)?;
    let bars = session_bars(&ctx, &input.symbol, days).await?;
    let s = sessions::session_stats(&bars, days).map_err(core_err)?;
    Ok(SessionStatsOutput {
        symbol: input.symbol,
        timeframe: Timeframe::H1,
        days: s.days,
        from: s.from_day,
        to: s.to_day,
        average_daily_range: s.average_daily_range,
        sessions: s.sessions,
    })
}

/// Output of `get_symbol_session_profile`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionProfileOutput {
    /// Instrument.
    pub symbol: String,
    /// Bars used (always H1).
    pub timeframe: Timeframe,
    /// Days analysed.
    pub days: usize,
    /// 24 entries, UTC hour 0 first: samples, mean and median range, activity relative to the average hour.
    pub hours: Vec<sessions::HourProfile>,
    /// The three UTC hours with the largest mean range, largest first.
    pub most_active_hours: Vec<u8>,
    /// The three UTC hours with the smallest mean range, smallest first.
    pub quietest_hours: Vec<u8>,
}

async fn get_symbol_session_profile(ctx: ToolContext, input: SessionInput) -> Result<SessionProfileOutput, ToolError> {
    let days = days_arg(input.days)?;
    let bars = session_bars(&ctx, &input.symbol, days).await?;
    let p = sessions::session_profile(&bars, days).map_err(core_err)?;
    Ok(SessionProfileOutput {
        symbol: input.symbol,
        timeframe: Timeframe::H1,
        days: p.days,
        hours: p.hours,
        most_active_hours: p.most_active_hours,
        quietest_hours: p.quietest_hours,
    })
}

// ---------------------------------------------------------------- order flow

/// Input of `get_order_flow`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderFlowInput {
    /// Instrument, e.g. `EURUSD`.
    pub symbol: String,
    /// Minutes of tick history before the latest quote (1-1440, default 60).
    #[serde(default)]
    pub minutes: Option<u32>,
    /// Bucket size of the delta series in minutes (1-60; default: minutes / 60, at least 1).
    #[serde(default)]
    pub bucket_minutes: Option<u32>,
}

/// Output of `get_order_flow`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrderFlowOutput {
    /// Instrument.
    pub symbol: String,
    /// Always `tick_rule_tick_count`: FX has no real volume, so buy/sell pressure is counted in ticks.
    pub method: String,
    /// Start of the window (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// End of the window: the latest quote's time.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Ticks analysed.
    pub ticks: usize,
    /// Whether the tick limit (20000) was reached: then only the most recent ticks were analysed.
    pub truncated: bool,
    /// Ticks signed +1 (uptick, or zero tick after an uptick).
    pub buy_ticks: usize,
    /// Ticks signed −1 (downtick, or zero tick after a downtick).
    pub sell_ticks: usize,
    /// Ticks without a sign (first tick, zero ticks before any move).
    pub unsigned_ticks: usize,
    /// `buy_ticks − sell_ticks` = final cumulative delta.
    pub delta: i64,
    /// `delta / (buy_ticks + sell_ticks)`, −1 (all selling) to 1 (all buying).
    pub imbalance: f64,
    /// Mid of the first tick.
    pub first_mid: f64,
    /// Mid of the last tick.
    pub last_mid: f64,
    /// Bucket size, minutes.
    pub bucket_minutes: u32,
    /// Delta per bucket with the cumulative delta, oldest first (empty buckets omitted).
    pub buckets: Vec<FlowBucket>,
}

async fn get_order_flow(ctx: ToolContext, input: OrderFlowInput) -> Result<OrderFlowOutput, ToolError> {
    let minutes = input.minutes.unwrap_or(60);
    if !(1..=MAX_FLOW_MINUTES).contains(&minutes) {
        return Err(ToolError::InvalidInput(format!(
            "`minutes` must be between 1 and {MAX_FLOW_MINUTES}, got {minutes}"
        )));
    }
    let bucket = input.bucket_minutes.unwrap_or((minutes / 60).max(1));
    if !(1..=60).contains(&bucket) {
        return Err(ToolError::InvalidInput(format!(
            "`bucket_minutes` must be between 1 and 60, got {bucket}"
        )));
    }
    check_symbol(&input.symbol)?;
    let latest = ctx.tick(&input.symbol).await?;
    let to = latest.time + 1;
    let from = to - i64::from(minutes) * 60_000;
    let command = Command::Ticks {
        symbol: input.symbol.clone(),
        from,
        to,
        limit: Some(MAX_FLOW_TICKS),
    };
    let ticks = match ctx.run(command).await? {
        CommandResult::Ticks { ticks, .. } => ticks,
        other => return Err(unexpected("ticks", &other)),
    };
    if ticks.is_empty() {
        return Err(ToolError::NotFound(format!(
            "no ticks for {} in the last {minutes} minutes",
            input.symbol
        )));
    }
    let f = orderflow::tick_rule_flow(&ticks, i64::from(bucket) * 60_000).map_err(core_err)?;
    Ok(OrderFlowOutput {
        symbol: input.symbol,
        method: "tick_rule_tick_count".into(),
        from,
        to: latest.time,
        ticks: f.ticks,
        truncated: ticks.len() >= MAX_FLOW_TICKS as usize,
        buy_ticks: f.buy_ticks,
        sell_ticks: f.sell_ticks,
        unsigned_ticks: f.unsigned_ticks,
        delta: f.delta,
        imbalance: f.imbalance,
        first_mid: f.first_mid,
        last_mid: f.last_mid,
        bucket_minutes: bucket,
        buckets: f.buckets,
    })
}

// ---------------------------------------------------------------- catalog

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

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        spec(
            "get_volatility_regime",
            "Volatility regime",
            "Classifies the market at the last bar as `compressed`, `expanding`, `trending` or `choppy`, with the numbers behind it: ATR(14) and its percentile over the last 100 values, Bollinger(20, 2) bandwidth and its percentile, ADX(14) with +DI/-DI, and the 20-bar efficiency ratio. Rules, first match wins: trending if ADX >= 25 and efficiency ratio >= 0.30; expanding if bandwidth percentile >= 80 or ATR rose >= 20% over 5 bars; compressed if bandwidth percentile <= 20; else choppy.",
        )
        .build(get_volatility_regime),
        spec(
            "recommend_strategy_style",
            "Strategy style",
            "Recommends `trend-follow`, `mean-revert`, `breakout` or `stand-aside` (with a long/short/neutral bias) from the volatility regime and the swing structure of one timeframe, with reasons that cite the measured numbers. A rule table, not a prediction: trending + directional structure -> trend-follow; compressed -> breakout; expanding + directional structure -> breakout; choppy with ADX < 20 -> mean-revert; otherwise stand-aside.",
        )
        .build(recommend_strategy_style),
        spec(
            "get_market_structure",
            "Market structure by timeframe",
            "Trend state (`bullish`, `bearish` or `ranging`) of 1 to 4 timeframes from the last break of structure / change of character and the swing sequence (HH/HL vs LH/LL), with the last confirmed swing high and low and their times. Swings are confirmed `swing_length` bars after they form; nothing is inferred from unconfirmed bars.",
        )
        .build(get_market_structure),
        spec(
            "check_confluence",
            "Confluence check",
            "Evaluates 1 to 8 conditions at the last bar, each on its own timeframe: an indicator of `list_indicators` (or `price`) compared with a number or another indicator using gt, lt, gte, lte, cross_above or cross_below. Returns each condition's values and result, and the overall passed count and score.",
        )
        .build(check_confluence),
        spec(
            "get_fibonacci_levels",
            "Fibonacci levels",
            "Fibonacci retracements (0.236, 0.382, 0.5, 0.618, 0.786) and extensions (1.272, 1.618, 2.618) of the last confirmed swing leg (the last swing high and swing low), with the leg's direction and the swings' prices and times.",
        )
        .build(get_fibonacci_levels),
        spec(
            "get_session_stats",
            "Session statistics",
            "Statistics of the Asia (00:00-08:00 UTC), London (07:00-16:00 UTC) and New York (12:00-21:00 UTC) sessions over the last N days with quotes, from H1 bars: average and median range, share of the daily range, the hours at which session highs and lows are usually set, and the latest session's high and low with times. Hours are fixed UTC, without daylight-saving shifts.",
        )
        .build(get_session_stats),
        spec(
            "get_symbol_session_profile",
            "Session profile by hour",
            "Typical range of each UTC hour (mean and median of the hour's high-low over the last N days, from H1 bars), activity relative to the average hour, and the most active and quietest hours.",
        )
        .build(get_symbol_session_profile),
        spec(
            "get_order_flow",
            "Tick-rule order flow",
            "Buy/sell pressure over the last N minutes of tick history by the tick rule on mid prices (uptick +1, downtick -1, an unchanged mid repeats the previous sign): buy and sell tick counts, delta, cumulative delta per bucket and the imbalance ratio. FX has no real traded volume: this counts ticks, it does not measure volume.",
        )
        .build(get_order_flow),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

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
