//! `get_order_flow`: tick-rule buy/sell pressure over recent tick history.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::orderflow::{self, FlowBucket};
use tradeterm_core::time::{UnixMs, iso};
use tradeterm_protocol::{Command, CommandResult};

use super::{MAX_BUCKET_MINUTES, MAX_FLOW_MINUTES, MAX_FLOW_TICKS, core_err, spec};
use crate::context::unexpected;
use crate::market::check_symbol;
use crate::{Tool, ToolContext, ToolError};

/// Input of `get_order_flow`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderFlowInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Minutes of tick history before the latest quote (1-1440, default 60).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_FLOW_MINUTES))]
    pub minutes: Option<u32>,
    /// Bucket size of the delta series in minutes (1-60; default: minutes / 60, at least 1).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_BUCKET_MINUTES))]
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

async fn handle(ctx: ToolContext, input: OrderFlowInput) -> Result<OrderFlowOutput, ToolError> {
    let minutes = input.minutes.unwrap_or(60);
    if !(1..=MAX_FLOW_MINUTES).contains(&minutes) {
        return Err(ToolError::InvalidInput(format!(
            "`minutes` must be between 1 and {MAX_FLOW_MINUTES}, got {minutes}"
        )));
    }
    let bucket = input.bucket_minutes.unwrap_or((minutes / 60).max(1));
    if !(1..=MAX_BUCKET_MINUTES).contains(&bucket) {
        return Err(ToolError::InvalidInput(format!(
            "`bucket_minutes` must be between 1 and {MAX_BUCKET_MINUTES}, got {bucket}"
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
    let flow = orderflow::tick_rule_flow(&ticks, i64::from(bucket) * 60_000).map_err(core_err)?;
    Ok(OrderFlowOutput {
        symbol: input.symbol,
        method: "tick_rule_tick_count".into(),
        from,
        to: latest.time,
        ticks: flow.ticks,
        truncated: ticks.len() >= MAX_FLOW_TICKS as usize,
        buy_ticks: flow.buy_ticks,
        sell_ticks: flow.sell_ticks,
        unsigned_ticks: flow.unsigned_ticks,
        delta: flow.delta,
        imbalance: flow.imbalance,
        first_mid: flow.first_mid,
        last_mid: flow.last_mid,
        bucket_minutes: bucket,
        buckets: flow.buckets,
    })
}

pub(super) fn tool() -> Tool {
    spec(
        "get_order_flow",
        "Tick-rule order flow",
        "Buy/sell pressure over the last N minutes of tick history by the tick rule on mid prices (uptick +1, downtick -1, an unchanged mid repeats the previous sign): buy and sell tick counts, delta, cumulative delta per bucket and the imbalance ratio. FX has no real traded volume: this counts ticks, it does not measure volume.",
    )
    .build(handle)
}
