//! `set_trailing_stop` and `set_breakeven`: exits that protect an open position.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::indicators::AverageTrueRange;
use tradeterm_core::managed::{Action, Decision, ManagedSpec, ManagedState, Paper, TrailDistance, View, decide};
use tradeterm_core::trading::retcode;
use tradeterm_core::{Position, SymbolSpec, Tick};

use super::{ManagedOrder, Stored, check_label, create, rule_spec};
use crate::account::position;
use crate::{Tool, ToolContext, ToolError};

/// Largest distance, step, trigger or offset, in points.
pub const MAX_POINTS: f64 = 1_000_000.0;
/// Largest ATR multiple.
pub const MAX_ATR_MULTIPLE: f64 = 100.0;
/// ATR periods accepted.
pub const ATR_PERIODS: (usize, usize) = (2, 200);

/// Input of `set_trailing_stop`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTrailingStopInput {
    /// The open position's ticket.
    pub ticket: u64,
    /// How far behind the price the stop follows: `{"unit": "points", "value": 200}`,
    /// `{"unit": "pips", "value": 20}` or `{"unit": "atr", "multiple": 2, "period": 14, "timeframe": "H1"}`
    /// (points and pips above zero and at most 1 000 000 points; an ATR multiple above zero and at most 100, a period of 2-200).
    pub distance: TrailDistance,
    /// The stop moves only by at least this many points (0-1 000 000; default 0: every tick).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1_000_000))]
    pub step_points: Option<f64>,
    /// Trailing starts once the position is this many points in profit (0-1 000 000; absent: at once).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1_000_000))]
    pub activation_points: Option<f64>,
    /// Your label (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = super::MAX_LABEL_CHARS), pattern(crate::schema::NO_CONTROL_PATTERN))]
    pub label: Option<String>,
    /// `true` (the default) simulates the rule over a paper copy of the position and reports what it would do; `false` manages the real position.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Input of `set_breakeven`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetBreakevenInput {
    /// The open position's ticket.
    pub ticket: u64,
    /// Profit in points that triggers the move (above zero, at most 1 000 000).
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1_000_000))]
    pub trigger_points: f64,
    /// Points beyond the entry, in the position's favour, the stop moves to (0-1 000 000, below the trigger by at least the symbol's stops level; default 0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1_000_000))]
    pub offset_points: Option<f64>,
    /// Your label (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = super::MAX_LABEL_CHARS), pattern(crate::schema::NO_CONTROL_PATTERN))]
    pub label: Option<String>,
    /// `true` (the default) simulates over a paper copy of the position; `false` manages the real position.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// A managed exit just set.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ManagedCreated {
    /// The rule.
    pub managed: ManagedOrder,
    /// What it would send on the current quote (the engine decides again on every quote).
    pub next_action: Option<Action>,
    /// The distance it trails by now, in price units (trailing stops).
    pub distance: Option<f64>,
    /// What was placed for it (OCO orders, the bracket's entry): the `place_order` outcomes.
    pub placed: Vec<crate::trading::OrderOutcome>,
}

fn points(name: &str, v: f64, above_zero: bool) -> Result<(), ToolError> {
    if !v.is_finite() || v < 0.0 || (above_zero && v == 0.0) || v > MAX_POINTS {
        let range = if above_zero { "above 0" } else { "0 or more" };
        return Err(ToolError::InvalidInput(format!(
            "`{name}` must be {range} and at most {MAX_POINTS} points"
        )));
    }
    Ok(())
}

pub(crate) fn check_distance(d: &TrailDistance) -> Result<(), ToolError> {
    match *d {
        TrailDistance::Points { value } => points("distance.value", value, true),
        TrailDistance::Pips { value } => points("distance.value", value * 10.0, true),
        TrailDistance::Atr { multiple, period, .. } => {
            if !(multiple.is_finite() && multiple > 0.0 && multiple <= MAX_ATR_MULTIPLE) {
                return Err(ToolError::InvalidInput(format!(
                    "`distance.multiple` must be above 0 and at most {MAX_ATR_MULTIPLE}"
                )));
            }
            if !(ATR_PERIODS.0..=ATR_PERIODS.1).contains(&period) {
                return Err(ToolError::InvalidInput(format!(
                    "`distance.period` must be {}-{}",
                    ATR_PERIODS.0, ATR_PERIODS.1
                )));
            }
            Ok(())
        }
    }
}

/// A refusal on the symbol's live specification or history, as the trade
/// server would refuse the stops it leads to (422 `ORDER_REJECTED`).
fn rejected(retcode: &str, message: String) -> ToolError {
    ToolError::Rejected {
        retcode: retcode.to_owned(),
        message,
    }
}

/// The ATR of closed bars now, and the end of the forming bar (when it is read again).
pub(crate) async fn atr_now(
    ctx: &ToolContext,
    symbol: &str,
    d: &TrailDistance,
) -> Result<Option<(f64, i64)>, ToolError> {
    let TrailDistance::Atr { period, timeframe, .. } = *d else {
        return Ok(None);
    };
    let bars = crate::alert_rules::closed_bars(ctx, symbol, timeframe, period * 3 + 1, ctx.now_ms).await?;
    let atr = AverageTrueRange::new(period)
        .map_err(|e| ToolError::InvalidInput(e.to_string()))?
        .over(&bars)
        .map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    let Some(Some(value)) = atr.last().copied() else {
        return Err(rejected(
            retcode::INVALID_REQUEST,
            format!(
                "the terminal has {} closed {timeframe:?} bars of {symbol}: too few for an ATR of period {period}",
                bars.len()
            ),
        ));
    };
    let until = timeframe.bar_open(ctx.now_ms) + timeframe.duration_ms();
    Ok(Some((value, until)))
}

/// The position, its symbol's specification and quote.
async fn position_market(ctx: &ToolContext, ticket: u64) -> Result<(Position, SymbolSpec, Tick), ToolError> {
    let pos = position(ctx, ticket).await?;
    let (spec, tick) = futures_util::future::try_join(ctx.spec(&pos.symbol), ctx.tick(&pos.symbol)).await?;
    Ok((pos, spec, tick))
}

fn preview(spec: &ManagedSpec, view: &View<'_>, distance: Option<f64>) -> Option<Action> {
    let mut state = ManagedState::default();
    match decide(spec, &mut state, view, distance) {
        Decision::Act(a) => Some(a),
        _ => None,
    }
}

async fn set_trailing_stop(ctx: ToolContext, input: SetTrailingStopInput) -> Result<ManagedCreated, ToolError> {
    check_distance(&input.distance)?;
    let step = input.step_points.unwrap_or(0.0);
    points("step_points", step, false)?;
    if let Some(a) = input.activation_points {
        points("activation_points", a, false)?;
    }
    let label = check_label(&input.label)?;
    let live = ctx.is_live(input.dry_run);
    let (pos, spec, tick) = position_market(&ctx, input.ticket).await?;
    let atr = atr_now(&ctx, &pos.symbol, &input.distance).await?;
    let distance = input
        .distance
        .price(&spec, atr.map(|a| a.0))
        .filter(|d| d.is_finite() && *d > 0.0)
        .ok_or_else(|| {
            rejected(
                retcode::INVALID_STOPS,
                "the trailing distance is not a positive price distance".into(),
            )
        })?;
    let min = f64::from(spec.stops_level) * spec.point;
    if distance + spec.point * 1e-3 < min {
        return Err(rejected(
            retcode::INVALID_STOPS,
            format!(
                "the trailing distance ({:.0} points) is inside {}'s stops level ({} points): the terminal would refuse every stop",
                distance / spec.point,
                spec.name,
                spec.stops_level
            ),
        ));
    }
    if live {
        ctx.ensure_live_allowed().await?;
    }
    let rule = ManagedSpec::TrailingStop {
        position: pos.ticket,
        distance: input.distance,
        step_points: step,
        activation_points: input.activation_points,
    };
    let positions = [pos.clone()];
    let view = View {
        spec: &spec,
        tick: &tick,
        positions: &positions,
        orders: &[],
    };
    let next_action = preview(&rule, &view, Some(distance));
    let stored = Stored {
        symbol: pos.symbol.clone(),
        paper: (!live).then(|| Paper {
            positions: vec![pos],
            ..Paper::default()
        }),
        atr: atr.map(|a| a.0),
        atr_until: atr.map(|a| a.1),
        ..Stored::default()
    };
    let managed = create(&ctx, &rule, &label, &stored, !live).await?;
    Ok(ManagedCreated {
        managed,
        next_action,
        distance: Some(distance),
        placed: Vec::new(),
    })
}

async fn set_breakeven(ctx: ToolContext, input: SetBreakevenInput) -> Result<ManagedCreated, ToolError> {
    points("trigger_points", input.trigger_points, true)?;
    let offset = input.offset_points.unwrap_or(0.0);
    points("offset_points", offset, false)?;
    let label = check_label(&input.label)?;
    let live = ctx.is_live(input.dry_run);
    let (pos, spec, tick) = position_market(&ctx, input.ticket).await?;
    if input.trigger_points - offset + 1e-9 < f64::from(spec.stops_level) {
        return Err(rejected(
            retcode::INVALID_STOPS,
            format!(
                "`trigger_points` must exceed `offset_points` by at least {}'s stops level ({} points): at the trigger the stop would be too close to the price",
                spec.name, spec.stops_level
            ),
        ));
    }
    if live {
        ctx.ensure_live_allowed().await?;
    }
    let rule = ManagedSpec::Breakeven {
        position: pos.ticket,
        trigger_points: input.trigger_points,
        offset_points: offset,
    };
    let positions = [pos.clone()];
    let view = View {
        spec: &spec,
        tick: &tick,
        positions: &positions,
        orders: &[],
    };
    let next_action = preview(&rule, &view, None);
    let stored = Stored {
        symbol: pos.symbol.clone(),
        paper: (!live).then(|| Paper {
            positions: vec![pos],
            ..Paper::default()
        }),
        ..Stored::default()
    };
    let managed = create(&ctx, &rule, &label, &stored, !live).await?;
    Ok(ManagedCreated {
        managed,
        next_action,
        distance: None,
        placed: Vec::new(),
    })
}

pub(super) fn trailing_tool() -> Tool {
    rule_spec(
        "set_trailing_stop",
        "Set a trailing stop",
        "Has the server trail an open position's stop loss behind the price (a distance in points, pips or an ATR multiple; a step; optionally only once the position is some points in profit). Runs on the server on every quote the terminal pushes, whether or not the trader's terminal window is open, unlike MetaTrader's own trailing stop; the stop only ever tightens. DRY RUN BY DEFAULT: the rule is simulated over a paper copy of the position and reports what it would do; `\"dry_run\": false` manages the real position (needs live trading). Ends by itself when the position closes. See `list_managed_orders`, `remove_managed_order`.",
    )
    .build(set_trailing_stop)
}

pub(super) fn breakeven_tool() -> Tool {
    rule_spec(
        "set_breakeven",
        "Set a breakeven move",
        "Has the server move an open position's stop loss to its entry price plus an offset, once, when the position is `trigger_points` in profit. DRY RUN BY DEFAULT (simulated over a paper copy); `\"dry_run\": false` manages the real position. Ends once moved, or when the position closes.",
    )
    .build(set_breakeven)
}
