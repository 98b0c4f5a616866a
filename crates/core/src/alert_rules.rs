//! Alert rules: conditions the server watches for a trader and the pure
//! state machine that decides when one fires.
//!
//! Four families, each fed by what the terminal-side agent pushes:
//!
//! - **price** crossing a level ([`AlertCondition::Price`]), fed with quotes;
//! - **indicator** conditions in the `check_confluence` language
//!   ([`AlertCondition::Indicator`]), fed with closed bars;
//! - **structure** events ([`AlertCondition::Structure`]: a new break of
//!   structure or change of character, a fair value gap filled), fed with
//!   closed bars;
//! - **account** thresholds ([`AlertCondition::EquityBelow`],
//!   [`AlertCondition::DrawdownAbove`]), fed with account states.
//!
//! Every family is **edge-triggered**: a rule fires when its condition
//! *becomes* true, exactly once per crossing, and is re-armed when the
//! condition stops holding. The first observation after a rule is set is its
//! baseline: a price already above the level, or an RSI already above 70,
//! does not fire until it goes back and crosses again. Account thresholds are
//! the one exception: a risk alarm must not stay silent, so equity already
//! below the floor (or a drawdown already beyond the limit) fires at the
//! first observation.
//!
//! The state ([`AlertState`]) is a small serialisable value, so the server
//! can store it after every step and a restart neither repeats nor loses a
//! firing.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::Tick;
//! use tradeterm_core::alert_rules::{AlertCondition, AlertState, Crossing, PriceSource, on_quote};
//!
//! let rule = AlertCondition::Price {
//!     symbol: "EURUSD".into(),
//!     level: 1.1000,
//!     direction: Crossing::Above,
//!     source: PriceSource::Bid,
//! };
//! let mut state = AlertState::default();
//! let quote = |bid: f64, time: i64| Tick { symbol: "EURUSD".into(), bid, ask: bid + 0.0001, time };
//! assert!(on_quote(&rule, &mut state, &quote(1.0990, 1_000)).is_none()); // baseline: below
//! let fired = on_quote(&rule, &mut state, &quote(1.1002, 2_000)).expect("crossed above");
//! assert_eq!(fired.time, 2_000);
//! assert!(on_quote(&rule, &mut state, &quote(1.1005, 3_000)).is_none()); // still above: no repeat
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::confluence::{Op, Operand, SeriesRef, evaluate};
use crate::structure::{BosChochConfig, BreakKind, Direction, FvgConfig, StructureConfig, StructureEvent, detect};
use crate::time::UnixMs;
use crate::{AccountInfo, Bar, CoreError, Tick, Timeframe};

/// Largest swing length of a structure alert.
pub const MAX_ALERT_SWING_LENGTH: usize = 200;
/// Default swing length of a structure alert.
pub const DEFAULT_ALERT_SWING_LENGTH: usize = 10;
/// Most newly closed bars one evaluation looks at (older ones are skipped,
/// e.g. after a long disconnection, and the rule re-baselines).
pub const MAX_CATCH_UP_BARS: usize = 50;

/// Which way a price must cross its level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Crossing {
    /// From below (or at) the level to above it.
    Above,
    /// From above (or at) the level to below it.
    Below,
    /// Either way.
    #[default]
    Either,
}

/// Which price of a quote is compared with the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// The bid (the price a chart draws).
    #[default]
    Bid,
    /// The ask.
    Ask,
    /// `(bid + ask) / 2`.
    Mid,
}

/// Which structure event fires a structure alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StructureTrigger {
    /// A new break of structure.
    Bos,
    /// A new change of character.
    Choch,
    /// A new break of structure or change of character.
    AnyBreak,
    /// Price traded back into a fair value gap (the gap is filled).
    FvgFilled,
}

/// What an alert watches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AlertCondition {
    /// A quote crosses a price level.
    Price {
        /// Instrument.
        #[schemars(pattern(crate::market::SYMBOL_PATTERN))]
        symbol: String,
        /// The price level.
        #[schemars(extend("exclusiveMinimum" = 0))]
        level: f64,
        /// `above`, `below` or `either` (default).
        #[serde(default)]
        direction: Crossing,
        /// `bid` (default), `ask` or `mid`.
        #[serde(default)]
        source: PriceSource,
    },
    /// A `check_confluence` condition becomes true at a bar close.
    #[schemars(extend("oneOf" = crate::indicators::choice_schemas(true, true)))]
    Indicator {
        /// Instrument.
        #[schemars(pattern(crate::market::SYMBOL_PATTERN))]
        symbol: String,
        /// Timeframe of the bars.
        timeframe: Timeframe,
        /// Indicator name or alias (`rsi`, `ema`, ...), or `price`.
        indicator: String,
        /// Indicator parameters; missing ones take their defaults.
        #[serde(default)]
        params: BTreeMap<String, f64>,
        /// Output series; default the indicator's first output.
        #[serde(default)]
        output: Option<String>,
        /// `gt`, `lt`, `gte`, `lte`, `cross_above`, `cross_below`.
        op: Op,
        /// A number or another series on the same bars.
        value: Operand,
    },
    /// A structure event is confirmed at a bar close.
    Structure {
        /// Instrument.
        #[schemars(pattern(crate::market::SYMBOL_PATTERN))]
        symbol: String,
        /// Timeframe of the bars.
        timeframe: Timeframe,
        /// `bos`, `choch`, `any_break` or `fvg_filled`.
        event: StructureTrigger,
        /// Only events of this direction (`bullish`/`bearish`); both when absent.
        #[serde(default)]
        direction: Option<Direction>,
        /// Swing length of the detector (1-200, default 10).
        #[serde(default)]
        #[schemars(range(min = 1, max = MAX_ALERT_SWING_LENGTH))]
        swing_length: Option<usize>,
    },
    /// Account equity falls below a level (account currency).
    EquityBelow {
        /// The equity floor.
        #[schemars(extend("exclusiveMinimum" = 0))]
        level: f64,
    },
    /// Drawdown of equity from its peak rises above a percentage. The peak
    /// starts at the larger of balance and equity when the rule is first
    /// evaluated and follows equity up.
    DrawdownAbove {
        /// Percent of the peak (0-100, exclusive).
        #[schemars(extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 100))]
        percent: f64,
    },
}

/// What a condition must be fed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feed<'a> {
    /// Quotes of this symbol.
    Quotes(&'a str),
    /// Closed bars of this symbol and timeframe, at least this many.
    Bars(&'a str, Timeframe, usize),
    /// Account states.
    Account,
}

impl AlertCondition {
    /// The family name (`price`, `indicator`, `structure`, `equity_below`, `drawdown_above`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Price { .. } => "price",
            Self::Indicator { .. } => "indicator",
            Self::Structure { .. } => "structure",
            Self::EquityBelow { .. } => "equity_below",
            Self::DrawdownAbove { .. } => "drawdown_above",
        }
    }

    /// The instrument watched, for market conditions.
    pub fn symbol(&self) -> Option<&str> {
        match self {
            Self::Price { symbol, .. } | Self::Indicator { symbol, .. } | Self::Structure { symbol, .. } => {
                Some(symbol)
            }
            Self::EquityBelow { .. } | Self::DrawdownAbove { .. } => None,
        }
    }

    /// What the condition is evaluated on. `bars` is the history an indicator
    /// or structure condition asks for (its warm-up).
    pub fn feed(&self, bars: usize) -> Feed<'_> {
        match self {
            Self::Price { symbol, .. } => Feed::Quotes(symbol),
            Self::Indicator { symbol, timeframe, .. } => Feed::Bars(symbol, *timeframe, bars),
            Self::Structure {
                symbol,
                timeframe,
                swing_length,
                ..
            } => {
                let swing = swing_length.unwrap_or(DEFAULT_ALERT_SWING_LENGTH);
                Feed::Bars(symbol, *timeframe, bars.max(swing.saturating_mul(6)))
            }
            Self::EquityBelow { .. } | Self::DrawdownAbove { .. } => Feed::Account,
        }
    }

    /// Checks the numbers and names of the condition as its schema states
    /// them (an indicator condition: [`crate::indicators::check_choice`] on
    /// both sides; whether its warm-up fits the history is seen on real bars).
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] naming the field.
    pub fn validate(&self) -> Result<(), CoreError> {
        match self {
            Self::Price { level, .. } => {
                if !(level.is_finite() && *level > 0.0) {
                    return Err(CoreError::param("level", "must be a positive price"));
                }
            }
            Self::Indicator {
                indicator,
                params,
                output,
                value,
                ..
            } => {
                // As the schema states it: exact names, the indicator's own
                // parameters of their kind and bounds, its outputs.
                crate::indicators::check_choice("", indicator, params, output.as_deref(), true)?;
                match value {
                    Operand::Number(x) if !x.is_finite() => {
                        return Err(CoreError::param("value", "must be a finite number"));
                    }
                    Operand::Number(_) => {}
                    Operand::Series(series) => series.check("value.")?,
                }
            }
            Self::Structure { swing_length, .. } => {
                if let Some(n) = swing_length
                    && !(1..=MAX_ALERT_SWING_LENGTH).contains(n)
                {
                    return Err(CoreError::param(
                        "swing_length",
                        format!("must be 1 to {MAX_ALERT_SWING_LENGTH}"),
                    ));
                }
            }
            Self::EquityBelow { level } => {
                if !(level.is_finite() && *level > 0.0) {
                    return Err(CoreError::param("level", "must be a positive amount"));
                }
            }
            Self::DrawdownAbove { percent } => {
                if !(percent.is_finite() && *percent > 0.0 && *percent < 100.0) {
                    return Err(CoreError::param("percent", "must be above 0 and below 100"));
                }
            }
        }
        Ok(())
    }
}

/// Where a price stands against a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Above the level.
    Above,
    /// Below the level.
    Below,
}

/// The memory of one rule between observations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlertState {
    /// Price rules: the side of the level the last quote was on (a quote at
    /// the level keeps the previous side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// Indicator and account rules: whether the condition held at the last
    /// observation (`None` before the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<bool>,
    /// Bar rules: open time of the last closed bar evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_bar: Option<UnixMs>,
    /// Drawdown rules: the equity peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_equity: Option<f64>,
    /// Times the rule fired.
    #[serde(default)]
    pub fired: u64,
    /// When it last fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fired_at: Option<UnixMs>,
    /// The last evaluation error (an indicator without enough history, an
    /// unknown output), cleared by the next good evaluation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One firing of a rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Firing {
    /// When it fired: the quote's time, the close of the bar, or the account
    /// observation's time (unix ms UTC).
    pub time: UnixMs,
    /// The observed value (price, indicator value, equity, drawdown percent).
    pub value: f64,
    /// The level it was compared with, when there is one.
    pub level: Option<f64>,
    /// One line for a person.
    pub message: String,
}

fn fire(state: &mut AlertState, time: UnixMs, value: f64, level: Option<f64>, message: String) -> Firing {
    state.fired += 1;
    state.last_fired_at = Some(time);
    Firing {
        time,
        value,
        level,
        message,
    }
}

/// Feeds a quote to a price rule (other rules, and quotes of other symbols,
/// are ignored). Returns the firing, if the quote crossed the level.
pub fn on_quote(condition: &AlertCondition, state: &mut AlertState, tick: &Tick) -> Option<Firing> {
    let AlertCondition::Price {
        symbol,
        level,
        direction,
        source,
    } = condition
    else {
        return None;
    };
    if !tick.symbol.eq_ignore_ascii_case(symbol) {
        return None;
    }
    let price = match source {
        PriceSource::Bid => tick.bid,
        PriceSource::Ask => tick.ask,
        PriceSource::Mid => (tick.bid + tick.ask) / 2.0,
    };
    if !price.is_finite() || price <= 0.0 {
        return None;
    }
    let side = if price > *level {
        Side::Above
    } else if price < *level {
        Side::Below
    } else {
        return None; // at the level: not across it yet
    };
    let previous = state.side.replace(side);
    let crossed = matches!(
        (previous, side, direction),
        (Some(Side::Below), Side::Above, Crossing::Above | Crossing::Either)
            | (Some(Side::Above), Side::Below, Crossing::Below | Crossing::Either)
    );
    crossed.then(|| {
        let way = if side == Side::Above { "above" } else { "below" };
        fire(
            state,
            tick.time,
            price,
            Some(*level),
            format!("{symbol} crossed {way} {level} ({} {price})", source_name(*source)),
        )
    })
}

fn source_name(source: PriceSource) -> &'static str {
    match source {
        PriceSource::Bid => "bid",
        PriceSource::Ask => "ask",
        PriceSource::Mid => "mid",
    }
}

/// Feeds account state (observed at `time`) to an account rule.
pub fn on_account(
    condition: &AlertCondition,
    state: &mut AlertState,
    account: &AccountInfo,
    time: UnixMs,
) -> Option<Firing> {
    if !account.equity.is_finite() {
        return None;
    }
    let (holds, value, level, message) = match condition {
        AlertCondition::EquityBelow { level } => (
            account.equity < *level,
            account.equity,
            *level,
            format!("equity {:.2} fell below {level:.2}", account.equity),
        ),
        AlertCondition::DrawdownAbove { percent } => {
            let start = if account.balance.is_finite() {
                account.balance.max(account.equity)
            } else {
                account.equity
            };
            let peak = state.peak_equity.unwrap_or(start).max(account.equity);
            state.peak_equity = Some(peak);
            let drawdown = if peak > 0.0 {
                (peak - account.equity) / peak * 100.0
            } else {
                0.0
            };
            (
                drawdown > *percent,
                drawdown,
                *percent,
                format!(
                    "drawdown {drawdown:.2}% from the equity peak {peak:.2} rose above {percent}% (equity {:.2})",
                    account.equity
                ),
            )
        }
        _ => return None,
    };
    // Account thresholds fire at the first observation too (see the module docs).
    let was = state.holds.replace(holds).unwrap_or(false);
    (holds && !was).then(|| fire(state, time, value, Some(level), message))
}

/// Feeds closed bars (oldest first; the forming bar excluded) to an indicator
/// or structure rule on this symbol and timeframe. Every bar closed since the
/// last evaluation is evaluated in order (at most [`MAX_CATCH_UP_BARS`]), so a
/// crossing on a bar between two evaluations is not missed; the first
/// evaluation only sets the baseline.
///
/// # Errors
/// The condition cannot be evaluated on these bars (unknown output, a
/// warm-up longer than the history). The state records the error too.
pub fn on_closed_bars(
    condition: &AlertCondition,
    state: &mut AlertState,
    bars: &[Bar],
) -> Result<Vec<Firing>, CoreError> {
    let result = match condition {
        AlertCondition::Indicator { .. } => indicator_step(condition, state, bars),
        AlertCondition::Structure { .. } => structure_step(condition, state, bars),
        _ => Ok(Vec::new()),
    };
    state.error = result.as_ref().err().map(ToString::to_string);
    result
}

/// The bars not yet evaluated: positions in `bars` after `state.last_bar`.
fn new_positions(state: &AlertState, bars: &[Bar]) -> std::ops::Range<usize> {
    let end = bars.len();
    match state.last_bar {
        None => end.saturating_sub(1)..end,
        Some(last) => {
            let first_new = bars.partition_point(|b| b.time <= last);
            first_new.max(end.saturating_sub(MAX_CATCH_UP_BARS))..end
        }
    }
}

fn indicator_step(condition: &AlertCondition, state: &mut AlertState, bars: &[Bar]) -> Result<Vec<Firing>, CoreError> {
    let AlertCondition::Indicator {
        symbol,
        timeframe,
        indicator,
        params,
        output,
        op,
        value,
    } = condition
    else {
        return Ok(Vec::new());
    };
    let left = SeriesRef {
        indicator: indicator.clone(),
        params: params.clone(),
        output: output.clone(),
    };
    let baseline = state.last_bar.is_none();
    let mut firings = Vec::new();
    for end in new_positions(state, bars) {
        let bar = &bars[end];
        let outcome = evaluate(&bars[..=end], &left, *op, value)?;
        let crossing_op = matches!(op, Op::CrossAbove | Op::CrossBelow);
        let was = state.holds.replace(outcome.passed);
        state.last_bar = Some(bar.time);
        let fires = !baseline && outcome.passed && (crossing_op || was == Some(false));
        if fires {
            let close_time = bar.time + timeframe.duration_ms();
            let message = format!(
                "{symbol} {timeframe:?}: {} {} {} ({} vs {})",
                outcome.left_name,
                op_text(*op),
                outcome.right_name,
                outcome.left,
                outcome.right
            );
            firings.push(fire(state, close_time, outcome.left, Some(outcome.right), message));
        }
    }
    Ok(firings)
}

fn op_text(op: Op) -> &'static str {
    match op {
        Op::Gt => ">",
        Op::Lt => "<",
        Op::Gte => "≥",
        Op::Lte => "≤",
        Op::CrossAbove => "crossed above",
        Op::CrossBelow => "crossed below",
    }
}

fn structure_step(condition: &AlertCondition, state: &mut AlertState, bars: &[Bar]) -> Result<Vec<Firing>, CoreError> {
    let AlertCondition::Structure {
        symbol,
        timeframe,
        event,
        direction,
        swing_length,
    } = condition
    else {
        return Ok(Vec::new());
    };
    let config = StructureConfig {
        swing_length: swing_length.unwrap_or(DEFAULT_ALERT_SWING_LENGTH),
        fvg: matches!(event, StructureTrigger::FvgFilled).then(FvgConfig::default),
        order_blocks: None,
        liquidity: None,
        bos_choch: (!matches!(event, StructureTrigger::FvgFilled)).then(BosChochConfig::default),
    };
    config.validate()?;
    let fresh = new_positions(state, bars);
    let baseline = state.last_bar.is_none();
    if let Some(last) = bars.last() {
        state.last_bar = Some(last.time);
    }
    if baseline || fresh.is_empty() {
        return Ok(Vec::new());
    }
    let events = detect(bars, &config)?;
    let mut firings = Vec::new();
    for e in events.iter().filter(|e| fresh.contains(&e.confirmed_at())) {
        let hit = match e {
            StructureEvent::StructureBreak(b) => {
                let wanted = match event {
                    StructureTrigger::AnyBreak => true,
                    StructureTrigger::Bos => b.kind == BreakKind::Bos,
                    StructureTrigger::Choch => b.kind == BreakKind::Choch,
                    StructureTrigger::FvgFilled => false,
                };
                wanted.then(|| (b.direction, break_name(b.kind), b.level))
            }
            StructureEvent::FvgMitigated(m) if *event == StructureTrigger::FvgFilled => {
                let middle = events.iter().find_map(|g| match g {
                    StructureEvent::FairValueGap(g) if g.index == m.index => Some((g.top + g.bottom) / 2.0),
                    _ => None,
                });
                Some((m.direction, "fair value gap filled", middle.unwrap_or(f64::NAN)))
            }
            _ => None,
        };
        let Some((dir, what, level)) = hit else { continue };
        if direction.is_some_and(|d| d != dir) {
            continue;
        }
        let bar = &bars[e.confirmed_at()];
        let close_time = bar.time + timeframe.duration_ms();
        let dir_name = match dir {
            Direction::Bullish => "bullish",
            Direction::Bearish => "bearish",
        };
        let message = format!("{symbol} {timeframe:?}: {dir_name} {what} at {level}");
        let level = level.is_finite().then_some(level);
        firings.push(fire(state, close_time, bar.close, level, message));
    }
    Ok(firings)
}

fn break_name(kind: BreakKind) -> &'static str {
    match kind {
        BreakKind::Bos => "break of structure",
        BreakKind::Choch => "change of character",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TradeMode;

    fn tick(bid: f64, time: i64) -> Tick {
        Tick {
            symbol: "EURUSD".into(),
            bid,
            ask: bid + 0.0002,
            time,
        }
    }

    fn price_rule(direction: Crossing) -> AlertCondition {
        AlertCondition::Price {
            symbol: "EURUSD".into(),
            level: 1.1,
            direction,
            source: PriceSource::Bid,
        }
    }

    #[test]
    fn an_indicator_condition_is_validated_as_its_schema_states() {
        let condition = |fields: serde_json::Value| -> AlertCondition {
            let mut c = serde_json::json!({ "kind": "indicator", "symbol": "EURUSD", "timeframe": "H1",
                "indicator": "rsi", "op": "gt", "value": 70 });
            c.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
            serde_json::from_value(c).unwrap()
        };
        let field = |fields: serde_json::Value| match condition(fields).validate() {
            Err(CoreError::InvalidParameter { name, .. }) => name,
            other => panic!("refused with a field, got {other:?}"),
        };
        assert_eq!(condition(serde_json::json!({})).validate(), Ok(()));
        assert_eq!(
            condition(serde_json::json!({ "indicator": "bbands", "params": { "period": 20, "nbdev_up": 2.5 }, "output": "upper",
                "value": { "indicator": "price", "output": "close" } }))
            .validate(),
            Ok(())
        );
        // The schema's enums are exact: no other case, no `-` for `_`.
        assert_eq!(field(serde_json::json!({ "indicator": "RSI" })), "indicator");
        assert_eq!(field(serde_json::json!({ "indicator": " rsi" })), "indicator");
        assert_eq!(field(serde_json::json!({ "output": "RSI" })), "output");
        assert_eq!(field(serde_json::json!({ "output": "signal" })), "output");
        // Parameters of the indicator only, integers whole, within bounds.
        assert_eq!(
            field(serde_json::json!({ "params": { "period": 14.5 } })),
            "params.period"
        );
        assert_eq!(
            field(serde_json::json!({ "params": { "period": 1.0e6 } })),
            "params.period"
        );
        assert_eq!(field(serde_json::json!({ "params": { "fast": 12 } })), "params.fast");
        assert_eq!(
            field(serde_json::json!({ "indicator": "price", "params": { "period": 3 } })),
            "params.period"
        );
        // The series on the right is held to the same rules.
        assert_eq!(
            field(serde_json::json!({ "value": { "indicator": "Ema" } })),
            "value.indicator"
        );
        assert_eq!(
            field(serde_json::json!({ "value": { "indicator": "ema", "output": "close" } })),
            "value.output"
        );
    }

    #[test]
    fn price_fires_once_per_crossing_either_way() {
        let rule = price_rule(Crossing::Either);
        let mut state = AlertState::default();
        let path = [1.09, 1.095, 1.1, 1.101, 1.102, 1.1, 1.099, 1.098, 1.103];
        let fired: Vec<i64> = path
            .iter()
            .enumerate()
            .filter_map(|(i, p)| on_quote(&rule, &mut state, &tick(*p, i as i64)).map(|f| f.time))
            .collect();
        // Up at 3 (1.101), down at 6 (1.099), up at 8 (1.103); quotes at the level change nothing.
        assert_eq!(fired, [3, 6, 8]);
        assert_eq!(state.fired, 3);
    }

    #[test]
    fn price_direction_filters_and_baseline_does_not_fire() {
        let above = price_rule(Crossing::Above);
        let mut state = AlertState::default();
        assert!(
            on_quote(&above, &mut state, &tick(1.2, 0)).is_none(),
            "already above: baseline"
        );
        assert!(
            on_quote(&above, &mut state, &tick(1.05, 1)).is_none(),
            "crossing below is not watched"
        );
        assert!(on_quote(&above, &mut state, &tick(1.15, 2)).is_some());
        let other = Tick {
            symbol: "GBPUSD".into(),
            ..tick(1.0, 3)
        };
        assert!(on_quote(&above, &mut state, &other).is_none());
        assert_eq!(state.side, Some(Side::Above));
    }

    #[test]
    fn mid_and_ask_sources() {
        let rule = AlertCondition::Price {
            symbol: "EURUSD".into(),
            level: 1.1001,
            direction: Crossing::Above,
            source: PriceSource::Ask,
        };
        let mut state = AlertState::default();
        assert!(on_quote(&rule, &mut state, &tick(1.0998, 0)).is_none()); // ask 1.1000 below
        let f = on_quote(&rule, &mut state, &tick(1.09995, 1)).expect("ask 1.10015 above");
        assert!((f.value - 1.10015).abs() < 1e-12);
    }

    fn account(balance: f64, equity: f64) -> AccountInfo {
        AccountInfo {
            login: 1,
            name: String::new(),
            server: String::new(),
            company: String::new(),
            currency: "USD".into(),
            leverage: 100,
            trade_mode: TradeMode::Demo,
            balance,
            equity,
            margin: 0.0,
            free_margin: equity,
            margin_level: None,
            profit: equity - balance,
        }
    }

    #[test]
    fn equity_below_fires_on_each_fall_and_at_first_observation() {
        let rule = AlertCondition::EquityBelow { level: 9_000.0 };
        let mut state = AlertState::default();
        let equities = [8_900.0, 8_800.0, 9_100.0, 9_050.0, 8_999.0];
        let fired: Vec<i64> = equities
            .iter()
            .enumerate()
            .filter_map(|(i, e)| on_account(&rule, &mut state, &account(10_000.0, *e), i as i64).map(|f| f.time))
            .collect();
        assert_eq!(fired, [0, 4]);
    }

    #[test]
    fn drawdown_from_peak_starts_at_balance_and_follows_equity_up() {
        let rule = AlertCondition::DrawdownAbove { percent: 5.0 };
        let mut state = AlertState::default();
        assert!(on_account(&rule, &mut state, &account(10_000.0, 9_600.0), 0).is_none()); // 4 %
        let f = on_account(&rule, &mut state, &account(10_000.0, 9_400.0), 1).expect("6 % from 10 000");
        assert!((f.value - 6.0).abs() < 1e-9);
        // Recovery to a new peak re-arms; 5 % below the new peak fires again.
        assert!(on_account(&rule, &mut state, &account(10_000.0, 11_000.0), 2).is_none());
        assert_eq!(state.peak_equity, Some(11_000.0));
        assert!(on_account(&rule, &mut state, &account(10_000.0, 10_460.0), 3).is_none()); // 4.9 %
        assert!(on_account(&rule, &mut state, &account(10_000.0, 10_440.0), 4).is_some()); // 5.09 %
    }

    fn bars(closes: &[f64]) -> Vec<Bar> {
        closes
            .iter()
            .enumerate()
            .map(|(i, c)| Bar {
                time: i as i64 * 3_600_000,
                open: *c,
                high: c + 0.5,
                low: c - 0.5,
                close: *c,
                volume: 1.0,
            })
            .collect()
    }

    fn indicator(name: &str, params: &[(&str, f64)], op: Op, level: f64) -> AlertCondition {
        AlertCondition::Indicator {
            symbol: "EURUSD".into(),
            timeframe: Timeframe::H1,
            indicator: name.into(),
            params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            output: None,
            op,
            value: Operand::Number(level),
        }
    }

    fn price_gt(level: f64) -> AlertCondition {
        indicator("price", &[], Op::Gt, level)
    }

    #[test]
    fn indicator_comparison_is_edge_triggered_per_closed_bar() {
        let rule = price_gt(10.0);
        let mut state = AlertState::default();
        let series = [9.0, 9.5, 11.0, 12.0, 9.0, 10.5, 10.6];
        // Baseline on the first 2 bars.
        assert!(
            on_closed_bars(&rule, &mut state, &bars(&series[..2]))
                .unwrap()
                .is_empty()
        );
        // Then all the rest arrive at once: every new bar is evaluated in order.
        let fired = on_closed_bars(&rule, &mut state, &bars(&series)).unwrap();
        let hours: Vec<i64> = fired.iter().map(|f| f.time / 3_600_000).collect();
        // Rises above 10 at bar 2 (closes at hour 3) and at bar 5 (hour 6).
        assert_eq!(hours, [3, 6]);
        // Feeding the same bars again changes nothing.
        assert!(on_closed_bars(&rule, &mut state, &bars(&series)).unwrap().is_empty());
    }

    #[test]
    fn indicator_cross_fires_on_the_crossing_bar_only() {
        let rule = indicator("price", &[], Op::CrossAbove, 10.0);
        let mut state = AlertState::default();
        let series = [9.0, 9.5, 11.0, 12.0, 9.0, 10.5];
        on_closed_bars(&rule, &mut state, &bars(&series[..2])).unwrap();
        let fired = on_closed_bars(&rule, &mut state, &bars(&series)).unwrap();
        assert_eq!(fired.len(), 2);
        assert_eq!(state.fired, 2);
    }

    #[test]
    fn indicator_without_history_is_an_error_recorded_in_the_state() {
        let rule = indicator("rsi", &[("period", 14.0)], Op::Gt, 70.0);
        let mut state = AlertState::default();
        assert!(on_closed_bars(&rule, &mut state, &bars(&[1.0, 2.0, 3.0])).is_err());
        assert!(state.error.is_some());
    }

    #[test]
    fn structure_break_fires_once_when_confirmed() {
        // Zig-zag with rising highs: swing highs at 10, 12, ...; a close above
        // the last swing high is a bullish break.
        let mut closes = Vec::new();
        for leg in 0..8 {
            let base = 100.0 + leg as f64 * 2.0;
            closes.extend([base, base + 3.0, base + 6.0, base + 3.0, base]);
        }
        let all = bars(&closes);
        let rule = AlertCondition::Structure {
            symbol: "EURUSD".into(),
            timeframe: Timeframe::H1,
            event: StructureTrigger::AnyBreak,
            direction: None,
            swing_length: Some(2),
        };
        // Reference: the breaks the batch detector confirms on the whole series.
        let config = StructureConfig {
            swing_length: 2,
            fvg: None,
            order_blocks: None,
            liquidity: None,
            bos_choch: Some(BosChochConfig::default()),
        };
        let expected: Vec<usize> = detect(&all, &config)
            .unwrap()
            .iter()
            .filter(|e| matches!(e, StructureEvent::StructureBreak(_)) && e.confirmed_at() >= 10)
            .map(StructureEvent::confirmed_at)
            .collect();
        assert!(!expected.is_empty(), "the series must have breaks");
        // Feed bar by bar after a baseline of 10 bars.
        let mut state = AlertState::default();
        let mut fired = Vec::new();
        for end in 10..=all.len() {
            for f in on_closed_bars(&rule, &mut state, &all[..end]).unwrap() {
                fired.push(((f.time / 3_600_000) - 1) as usize);
            }
        }
        assert_eq!(fired, expected);
    }

    #[test]
    fn validation_names_the_field() {
        let bad = [
            (price_rule(Crossing::Above), None),
            (
                AlertCondition::Price {
                    symbol: "X".into(),
                    level: f64::NAN,
                    direction: Crossing::Above,
                    source: PriceSource::Bid,
                },
                Some("level"),
            ),
            (AlertCondition::DrawdownAbove { percent: 100.0 }, Some("percent")),
            (AlertCondition::EquityBelow { level: -1.0 }, Some("level")),
            (indicator("nope", &[], Op::Gt, 1.0), Some("indicator")),
            (
                AlertCondition::Structure {
                    symbol: "X".into(),
                    timeframe: Timeframe::H1,
                    event: StructureTrigger::Bos,
                    direction: None,
                    swing_length: Some(0),
                },
                Some("swing_length"),
            ),
        ];
        for (rule, field) in bad {
            match (rule.validate(), field) {
                (Ok(()), None) => {}
                (Err(e), Some(f)) => assert!(e.to_string().contains(f), "{e}"),
                (r, f) => panic!("{rule:?}: {r:?} expected {f:?}"),
            }
        }
    }

    #[test]
    fn conditions_round_trip_as_tagged_json() {
        let rule = price_rule(Crossing::Below);
        let json = serde_json::to_value(&rule).unwrap();
        assert_eq!(json["kind"], "price");
        assert_eq!(json["direction"], "below");
        let back: AlertCondition = serde_json::from_value(json).unwrap();
        assert_eq!(back, rule);
        let err = serde_json::from_value::<AlertCondition>(
            serde_json::json!({"kind": "price", "symbol": "X", "level": 1, "bogus": 1}),
        );
        assert!(err.is_err());
    }
}
