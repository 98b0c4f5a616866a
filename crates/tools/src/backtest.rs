//! `backtest_strategy`: runs a declarative strategy over the terminal's bars
//! with `tradeterm_core::backtest` and returns metrics, trades and a
//! downsampled equity curve.
//!
//! `simulate_ea_action`: what the same strategy's rules would do at the next
//! bar's open, and why, from the last closed bar and the position assumed
//! (read from the terminal by default), with `tradeterm_core::backtest::explain`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::backtest::{
    self, Action, BacktestError, Metrics, OrderPlan, PositionSide, RulesReport, RunOptions, Trade,
};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_core::{Side, Timeframe};

use crate::market::{MAX_BARS, fetch_bars};
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Most trades returned; the rest are counted in the metrics and flagged with `truncated`.
pub const MAX_TRADES: usize = 1_000;
/// Most points of the returned equity curve.
pub const MAX_EQUITY_POINTS: usize = 500;

/// Schema of `strategy` (what `backtest::parse_strategy` reads): a strategy
/// of the DSL (docs/backtest-dsl.md), or a legacy form tagged by `type`.
fn strategy_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let dsl = generator.subschema_for::<tradeterm_core::backtest::Strategy>();
    // The periods' bounds are those of the indicators they run (the catalog's).
    let period = |names: &[&str]| {
        let bounds = names
            .iter()
            .filter_map(|n| tradeterm_core::indicators::find(n))
            .flat_map(|i| i.params.iter().filter(|p| p.name == "period").map(|p| (p.min, p.max)));
        let (min, max) = bounds.fold((f64::MIN, f64::MAX), |(lo, hi), (min, max)| (lo.max(min), hi.min(max)));
        serde_json::json!({ "type": "integer", "minimum": min, "maximum": max })
    };
    let ma_period = period(&["sma", "ema"]);
    let rsi_period = period(&["rsi"]);
    schemars::json_schema!({
        "anyOf": [
            dsl,
            {
                "type": "object",
                "description": "Legacy moving-average cross (any order of the periods: fast above slow inverts the signals, equal ones never cross; `warnings` says so).",
                "required": ["type", "fast", "slow"],
                "additionalProperties": false,
                "properties": {
                    "type": { "const": "ma_cross" },
                    "fast": ma_period,
                    "slow": ma_period,
                    "ma": { "type": "string", "pattern": "^([sS][mM][aA]|[eE][mM][aA])$" },
                },
            },
            {
                "type": "object",
                "description": "Legacy RSI reversal (oversold not below overbought reads it as momentum; `warnings` says so).",
                "required": ["type"],
                "additionalProperties": false,
                "properties": {
                    "type": { "const": "rsi" },
                    "period": rsi_period,
                    "oversold": { "type": "number", "minimum": 0, "maximum": 100 },
                    "overbought": { "type": "number", "minimum": 0, "maximum": 100 },
                },
            },
        ],
    })
}

/// Input of `backtest_strategy`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BacktestInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Number of most recent bars to test on (1-10000, default 2000).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_BARS))]
    pub bars: Option<u32>,
    /// The strategy: a condition tree (see docs/backtest-dsl.md), e.g.
    /// `{"entry_long": {"left": {"indicator": "sma", "params": {"period": 10}}, "op": "cross_above",
    /// "right": {"indicator": "sma", "params": {"period": 20}}}, "exit_long": {...}, "entry_short": ...,
    /// "stop_loss": {"type": "atr", "multiple": 2}, "sizing": {"type": "all_in"},
    /// "costs": {"spread": 0.0001, "commission": 0, "slippage": 0}}`; or a legacy flat form
    /// `{"type": "ma_cross", "fast": 10, "slow": 20, "ma": "sma"}` /
    /// `{"type": "rsi", "period": 14, "oversold": 30, "overbought": 70}`.
    #[schemars(schema_with = "strategy_schema")]
    pub strategy: serde_json::Value,
    /// Starting equity (default 10000).
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub initial_equity: Option<f64>,
}

/// One point of the equity curve.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EquityPoint {
    /// Bar open time (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Equity at that bar's close.
    pub equity: f64,
}

/// Output of `backtest_strategy`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BacktestOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// Bars tested.
    pub bars: usize,
    /// First bar open time (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub from: UnixMs,
    /// Last bar open time (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub to: UnixMs,
    /// Summary statistics over every trade.
    pub metrics: Metrics,
    /// Closed trades, oldest first (at most 1000).
    pub trades: Vec<Trade>,
    /// True when `trades` was cut to 1000 (the most recent ones are dropped).
    pub truncated: bool,
    /// Equity curve downsampled to at most 500 points (always including the last bar).
    pub equity_curve: Vec<EquityPoint>,
    /// Notes on a legacy strategy whose levels are in an unusual order (an `ma_cross` with `fast` above `slow`
    /// trades the usual signals inverted, equal periods never cross); empty otherwise.
    pub warnings: Vec<String>,
}

async fn backtest_strategy(ctx: ToolContext, input: BacktestInput) -> Result<BacktestOutput, ToolError> {
    let count = input.bars.unwrap_or(2_000);
    if count == 0 || count > MAX_BARS {
        return Err(ToolError::InvalidInput(format!(
            "`bars` must be between 1 and {MAX_BARS}"
        )));
    }
    let strategy = backtest::parse_strategy(&input.strategy).map_err(strategy_error)?;
    let initial_equity = input.initial_equity.unwrap_or(10_000.0);
    if !(initial_equity.is_finite() && initial_equity > 0.0) {
        return Err(ToolError::InvalidInput("`initial_equity` must be a number > 0".into()));
    }
    let bars = fetch_bars(&ctx, &input.symbol, input.timeframe, Some(count), None, None).await?;
    let (Some(first), Some(last)) = (bars.first().map(|b| b.time), bars.last().map(|b| b.time)) else {
        return Err(ToolError::NotFound(format!(
            "no bars for {} {}",
            input.symbol, input.timeframe
        )));
    };
    let opts = RunOptions {
        initial_equity,
        ..RunOptions::default()
    };
    // Off the serving thread (crate::compute); the bars come back for the times.
    let (result, bars) = crate::compute::cpu(move || (backtest::run(&strategy, &bars, &opts), bars)).await?;
    let result = result.map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    let step = result.equity.len().div_ceil(MAX_EQUITY_POINTS - 1).max(1);
    let points = result.equity.len();
    let equity_curve = (0..points)
        .filter(|i| i % step == 0 || i + 1 == points)
        .map(|i| EquityPoint {
            time: bars[i].time,
            equity: result.equity[i],
        })
        .collect();
    let truncated = result.trades.len() > MAX_TRADES;
    let mut trades = result.trades;
    trades.truncate(MAX_TRADES);
    Ok(BacktestOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        bars: bars.len(),
        from: first,
        to: last,
        metrics: result.metrics,
        trades,
        truncated,
        equity_curve,
        warnings: backtest::legacy_warnings(&input.strategy),
    })
}

/// A strategy fault as a validation error naming its JSON path in the input
/// (`strategy.entry_long.all[1].left.indicator: unknown indicator "smaa"`).
fn strategy_error(e: BacktestError) -> ToolError {
    ToolError::InvalidInput(format!("strategy.{e}").replace("strategy.: ", "strategy: "))
}

/// Fewest bars `simulate_ea_action` loads by default (up to 10000 can be asked with `bars`).
pub const SIMULATE_DEFAULT_MIN_BARS: usize = 300;

/// The position `simulate_ea_action` assumes open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PositionMode {
    /// Read the terminal's open positions on the symbol: net long, net short or flat.
    #[default]
    Auto,
    /// Assume no open trade.
    Flat,
    /// Assume a long trade is open.
    Long,
    /// Assume a short trade is open.
    Short,
}

/// Input of `simulate_ea_action`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulateInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// The strategy, as for `backtest_strategy`: a condition tree
    /// (`entry_long`, `exit_long`, `entry_short`, `exit_short`, `stop_loss`,
    /// `take_profit`, `sizing`, `costs`; see docs/backtest-dsl.md) or a legacy
    /// form `{"type": "ma_cross", "fast": 10, "slow": 20}` /
    /// `{"type": "rsi", "period": 14, "oversold": 30, "overbought": 70}`.
    #[schemars(schema_with = "strategy_schema")]
    pub strategy: serde_json::Value,
    /// Closed bars to evaluate over (1-10000). Default: enough for every
    /// indicator's warm-up (three times the periods of the slowest one, plus
    /// its shift), at least 300.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_BARS))]
    pub bars: Option<u32>,
    /// Position to assume: `auto` (default: the terminal's open positions on
    /// the symbol; if both long and short positions are open, the net volume
    /// decides and `position.hedged` says so), `flat`, `long` or `short`.
    #[serde(default)]
    pub position: PositionMode,
    /// Equity the sizing uses (> 0). Default: the account's current equity.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub equity: Option<f64>,
}

/// The position assumed, and where it came from.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AssumedPosition {
    /// `flat`, `long` or `short`: what the rules were evaluated with.
    pub side: PositionSide,
    /// `auto`, `flat`, `long` or `short`, as asked.
    pub mode: PositionMode,
    /// Open long volume on the symbol in lots (`auto` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_volume: Option<f64>,
    /// Open short volume on the symbol in lots (`auto` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_volume: Option<f64>,
    /// Open positions on the symbol (`auto` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub positions: Option<usize>,
    /// True when long and short positions are both open (a hedging account):
    /// the net volume decided the side (flat when equal).
    pub hedged: bool,
}

/// The bar the rules were evaluated on.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DecisionBar {
    /// Open time (ISO 8601 UTC).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Open.
    pub open: f64,
    /// High.
    pub high: f64,
    /// Low.
    pub low: f64,
    /// Close: the value the conditions read.
    pub close: f64,
    /// Always true: only a complete bar is evaluated.
    pub complete: bool,
}

/// Output of `simulate_ea_action`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SimulateOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// What the rules do at the next bar's open: `open_long`, `open_short`,
    /// `close_long`, `close_short`, `reverse_to_long`, `reverse_to_short`,
    /// `reenter_long`, `reenter_short` (a same-direction entry with
    /// `same_direction_entry: reenter`), `hold` (a trade is open and stays)
    /// or `stay_flat`.
    pub action: Action,
    /// One sentence saying which rule decided it.
    pub reason: String,
    /// The last complete bar, on whose close the rules were evaluated.
    pub decided_on: DecisionBar,
    /// Open time (ISO 8601 UTC) of the still-forming bar that was left out,
    /// if the terminal returned one. An order decided on `decided_on` fills
    /// at the open of the bar after it (this one, when present).
    #[serde(with = "iso::option")]
    #[schemars(with = "Option<iso::Schema>")]
    pub forming_bar_skipped: Option<UnixMs>,
    /// Closed bars evaluated over (the last one is `decided_on`).
    pub bars: usize,
    /// The position assumed.
    pub position: AssumedPosition,
    /// Equity used for sizing.
    pub equity: f64,
    /// `entry_long`, `exit_long`, `entry_short`, `exit_short` evaluated on
    /// `decided_on`: the strategy's tree with each node's `result`, each
    /// comparison's operand values (`value`, and `previous` for crosses),
    /// and `ready: false` (values `null`) while an indicator warms up.
    pub rules: RulesReport,
    /// When the action opens a trade: direction, estimated fill (last close ±
    /// half spread and slippage), stop-loss and take-profit prices and size in
    /// units as the strategy's stops and sizing give them.
    pub order: Option<OrderPlan>,
    /// Notes on a legacy strategy whose levels are in an unusual order, as `backtest_strategy` gives them.
    pub warnings: Vec<String>,
}

/// The side a set of open positions amounts to: (side, long lots, short lots, hedged).
fn net_side(positions: &[tradeterm_core::Position]) -> (PositionSide, f64, f64, bool) {
    let sum = |side: Side| {
        positions
            .iter()
            .filter(|p| p.side == side)
            .map(|p| p.volume)
            // `+ 0.0`: the sum of nothing is -0.0, which would print as `-0.0`.
            .sum::<f64>()
            + 0.0
    };
    let (long, short) = (sum(Side::Buy), sum(Side::Sell));
    let side = if long > short {
        PositionSide::Long
    } else if short > long {
        PositionSide::Short
    } else {
        PositionSide::Flat
    };
    (side, long, short, long > 0.0 && short > 0.0)
}

async fn simulate_ea_action(ctx: ToolContext, input: SimulateInput) -> Result<SimulateOutput, ToolError> {
    let strategy = backtest::parse_strategy(&input.strategy).map_err(strategy_error)?;
    let count = match input.bars {
        Some(asked) if asked == 0 || asked > MAX_BARS => {
            return Err(ToolError::InvalidInput(format!(
                "`bars` must be between 1 and {MAX_BARS}"
            )));
        }
        Some(asked) => asked as usize,
        None => backtest::warm_up_bars(&strategy, SIMULATE_DEFAULT_MIN_BARS).min(MAX_BARS as usize),
    };
    if let Some(asked) = input.equity
        && !(asked.is_finite() && asked > 0.0)
    {
        return Err(ToolError::InvalidInput("`equity` must be a number > 0".into()));
    }
    // The quote time is read before the bars: a last bar that had not closed
    // by then may have been sampled while forming, and is left out.
    let quote_time = ctx.tick(&input.symbol).await.ok().map(|t| t.time);
    let fetch = (count + 1).min(MAX_BARS as usize) as u32;
    let mut bars = fetch_bars(&ctx, &input.symbol, input.timeframe, Some(fetch), None, None).await?;
    let forming = match (bars.last(), quote_time) {
        (Some(last), Some(t)) => input.timeframe.bar_open(t) <= last.time,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let forming_bar_skipped = if forming { bars.pop().map(|b| b.time) } else { None };
    if bars.len() > count {
        bars.drain(..bars.len() - count);
    }
    let Some(last) = bars.last().cloned() else {
        return Err(ToolError::NotFound(format!(
            "no complete bar for {} {}",
            input.symbol, input.timeframe
        )));
    };
    let position = match input.position {
        PositionMode::Auto => {
            let open = crate::account::positions(&ctx, Some(input.symbol.clone())).await?;
            let (side, long, short, hedged) = net_side(&open);
            AssumedPosition {
                side,
                mode: PositionMode::Auto,
                long_volume: Some(long),
                short_volume: Some(short),
                positions: Some(open.len()),
                hedged,
            }
        }
        mode => AssumedPosition {
            side: match mode {
                PositionMode::Long => PositionSide::Long,
                PositionMode::Short => PositionSide::Short,
                _ => PositionSide::Flat,
            },
            mode,
            long_volume: None,
            short_volume: None,
            positions: None,
            hedged: false,
        },
    };
    let equity = match input.equity {
        Some(e) => e,
        None => ctx.account().await?.equity,
    };
    if !(equity.is_finite() && equity > 0.0) {
        return Err(ToolError::InvalidInput(format!(
            "the account's equity is {equity}; give `equity` (> 0) for sizing"
        )));
    }
    let explanation = backtest::explain(&strategy, &bars, position.side, equity).map_err(|e| match e {
        BacktestError::Data(d) => ToolError::Dispatch(format!("the terminal's bars are unusable: {d}")),
        other => strategy_error(other),
    })?;
    Ok(SimulateOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        action: explanation.action,
        reason: explanation.reason,
        decided_on: DecisionBar {
            time: last.time,
            open: last.open,
            high: last.high,
            low: last.low,
            close: last.close,
            complete: true,
        },
        forming_bar_skipped,
        bars: bars.len(),
        position,
        equity,
        rules: explanation.rules,
        order: explanation.order,
        warnings: backtest::legacy_warnings(&input.strategy),
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "backtest_strategy",
            title: "Backtest a strategy",
            description: "Backtests a declarative strategy on the terminal's recent bars (default 2000, max 10000) and returns metrics (return %, max drawdown %, win rate, profit factor, Sharpe, Sortino, exposure, expectancy), the trade list (max 1000) and a downsampled equity curve. Strategy: a JSON condition tree with entry_long/exit_long/entry_short/exit_short conditions (all/any/not, comparisons gt/gte/lt/lte/cross_above/cross_below between indicator outputs, prices and constants), optional stop_loss/take_profit (price, pips or ATR multiple), sizing (fixed_lots, risk_percent, all_in) and costs (spread, commission, slippage); or a legacy form {type: ma_cross, fast, slow, ma} (backtesting.py's SmaCross: a same-direction cross closes and re-opens) / {type: rsi, period, oversold, overbought}. Signals on a bar's close fill at the next open; an opposite entry reverses the trade; a same-direction entry is ignored unless same_direction_entry is reenter; if stop and target are both touched in one bar the stop is assumed first.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(backtest_strategy),
        ToolSpec {
            name: "simulate_ea_action",
            title: "What would the rules do now",
            description: "Evaluates a strategy's rules (the backtest_strategy DSL tree or legacy form) on the last complete bar of the terminal's symbol/timeframe and says what they would do at the next bar's open: open_long, open_short, close_long, close_short, reverse_to_long, reverse_to_short, reenter_long, reenter_short, hold or stay_flat, with the same priority as the backtest engine (entry_long first, then entry_short, then the exit of the open side; an opposite entry reverses; a same-direction entry holds, or re-enters with same_direction_entry: reenter; no pyramiding). The still-forming bar is left out. Explains why: every condition of entry_long/exit_long/entry_short/exit_short as a tree with each comparison's operand values (current and previous bar for crosses), its result, and ready=false (null values) during indicator warm-up. When the action opens a trade, gives the estimated fill, stop-loss and take-profit prices and size from the strategy's stops and sizing. position: auto (default: the terminal's open positions on the symbol, net of long and short), flat, long or short. Read-only: nothing is sent to the market.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(simulate_ea_action),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(side: Side, volume: f64) -> tradeterm_core::Position {
        tradeterm_core::Position {
            ticket: 1,
            symbol: "EURUSD".into(),
            side,
            volume,
            open_price: 1.1,
            open_time: 0,
            stop_loss: None,
            take_profit: None,
            current_price: 1.1,
            swap: 0.0,
            commission: 0.0,
            profit: 0.0,
            magic: 0,
            comment: String::new(),
        }
    }

    #[test]
    fn the_net_volume_decides_the_side() {
        assert_eq!(net_side(&[]), (PositionSide::Flat, 0.0, 0.0, false));
        // No positive zero printed as `-0.0`.
        assert!(net_side(&[]).1.is_sign_positive() && net_side(&[]).2.is_sign_positive());
        let long = [position(Side::Buy, 0.1), position(Side::Buy, 0.2)];
        assert_eq!(net_side(&long).0, PositionSide::Long);
        assert!(!net_side(&long).3);
        let hedged = [position(Side::Buy, 0.1), position(Side::Sell, 0.3)];
        assert_eq!(net_side(&hedged), (PositionSide::Short, 0.1, 0.3, true));
        let even = [position(Side::Sell, 0.2), position(Side::Buy, 0.2)];
        assert_eq!(net_side(&even), (PositionSide::Flat, 0.2, 0.2, true));
    }
}
