//! Trading tools: `place_order`, `close_position`, `modify_position`,
//! `reverse_position`, `cancel_order`, `modify_order`, `close_by`,
//! `close_all_positions`, `cancel_all_orders`, and the read-only
//! `get_market_depth`.
//!
//! Every one is a **dry run unless `dry_run` is `false`**. A dry run validates
//! fully against the symbol's specification, the current quote and the
//! account (volume limits and step, price and SL/TP sides and stops level,
//! market open, margin) and reports the would-be outcome without touching the
//! account. A live call passes the same preflight, then needs the `trade`
//! capability and the terminal's trading permissions (else
//! `TRADING_DISABLED`). Invalid requests fail closed: nothing is sent.
//!
//! With an idempotency key (REST `Idempotency-Key`), a live call is recorded
//! in the store before it is sent: a retry with the same key returns the first
//! outcome and never executes twice. The key is also passed to the agent,
//! which is what makes the two recovery paths safe: when the terminal did not
//! answer (outcome unknown) the claim is released so that a retry runs again,
//! and a claim left unfinished by a process that died is taken over after
//! [`ABANDONED_CLAIM_MS`]; in both cases an agent that already executed the
//! request returns its first result instead of executing twice.

mod bulk;
mod cancel_order;
mod close_by;
mod close_position;
mod market_depth;
mod modify_order;
mod modify_position;
mod place_order;
mod reverse_position;

pub(crate) use place_order::OrderOutcome;

use futures_util::future::try_join3;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tradeterm_core::trading;
use tradeterm_core::{AccountInfo, Side, SymbolSpec, Tick};
use tradeterm_store::IdempotencyBegin;

use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

const TRADE_ANNOTATIONS: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Longest order comment MetaTrader keeps.
pub const MAX_COMMENT: usize = 31;
/// An order comment holds no control character.
pub const COMMENT_PATTERN: &str = crate::schema::NO_CONTROL_PATTERN;

fn finite_positive(name: &str, v: Option<f64>) -> Result<(), ToolError> {
    match v {
        Some(x) if !x.is_finite() || x < 0.0 => Err(ToolError::InvalidInput(format!(
            "`{name}` must be a finite, non-negative price"
        ))),
        _ => Ok(()),
    }
}

fn check_comment(c: &str) -> Result<(), ToolError> {
    if c.chars().count() > MAX_COMMENT {
        return Err(ToolError::InvalidInput(format!(
            "`comment` may have at most {MAX_COMMENT} characters"
        )));
    }
    if c.chars().any(char::is_control) {
        return Err(ToolError::InvalidInput(
            "`comment` may not contain control characters".into(),
        ));
    }
    Ok(())
}

/// Symbol spec, quote and account, fetched concurrently.
struct Market {
    spec: SymbolSpec,
    tick: Tick,
    account: AccountInfo,
}

async fn fetch_market(ctx: &ToolContext, symbol: &str) -> Result<Market, ToolError> {
    let (spec, tick, account) = try_join3(ctx.spec(symbol), ctx.tick(symbol), ctx.account()).await?;
    Ok(Market { spec, tick, account })
}

/// Rate converting `from` into the account currency (see
/// [`ToolContext::rate_to_account`]).
async fn rate_to_account(ctx: &ToolContext, from: &str, market: &Market) -> Option<f64> {
    ctx.rate_to_account(from, &market.account.currency, &market.spec, &market.tick)
        .await
}

/// A stop-loss or take-profit level with its distance and money value.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LevelInfo {
    /// Price of the level.
    pub price: f64,
    /// Distance from the entry (or current close price), in points.
    pub distance_points: f64,
    /// Money at the level in the account currency: negative for a loss (stop
    /// loss), positive for a gain; `null` when no quote converts the profit
    /// currency to the account currency.
    pub money: Option<f64>,
}

fn level_info(spec: &SymbolSpec, side: Side, volume: f64, entry: f64, level: f64, rate: Option<f64>) -> LevelInfo {
    let distance = if spec.point > 0.0 {
        ((level - entry).abs() / spec.point).round()
    } else {
        0.0
    };
    LevelInfo {
        price: level,
        distance_points: distance,
        money: rate.map(|r| trading::profit(spec, side, volume, entry, level, r)),
    }
}

/// Age after which an unfinished idempotency claim is presumed abandoned:
/// longer than the longest dispatch timeout (120 s) with a wide margin.
pub(crate) const ABANDONED_CLAIM_MS: i64 = 5 * 60 * 1000;

/// Runs a live operation once per idempotency key: the first call executes
/// and records its outcome; later calls with the same key and input get the
/// recorded outcome; the same key with other input is a conflict.
async fn idempotent<I, O, Fut>(ctx: &ToolContext, tool: &str, input: &I, run: Fut) -> Result<O, ToolError>
where
    I: Serialize,
    O: Serialize + DeserializeOwned,
    Fut: std::future::Future<Output = Result<O, ToolError>>,
{
    let Some(key) = ctx.idempotency_key.as_deref() else {
        return run.await;
    };
    if !crate::schema::is_idempotency_key(key) {
        return Err(ToolError::InvalidInput(
            "Idempotency-Key must be 1-255 printable ASCII characters".into(),
        ));
    }
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(serde_json::to_vec(input).unwrap_or_default());
    hasher.update([0]);
    hasher.update(ctx.terminal_id.as_deref().unwrap_or_default().as_bytes());
    let hash = hex::encode(hasher.finalize());
    match ctx
        .services
        .store
        .idempotency_begin(&ctx.license_id, key, &hash)
        .await?
    {
        IdempotencyBegin::Started => {}
        IdempotencyBegin::InProgress => {
            // A claim older than any dispatch can last belongs to a process
            // that died before recording the outcome: take it over and run
            // again. The key also travels to the agent, which returns the
            // first result instead of executing twice if the order went out.
            let abandoned_before = ctx.now_ms - ABANDONED_CLAIM_MS;
            if !ctx
                .services
                .store
                .idempotency_resume(&ctx.license_id, key, &hash, abandoned_before)
                .await?
            {
                return Err(ToolError::Conflict(
                    "a request with this Idempotency-Key is still in progress; retry later".into(),
                ));
            }
            tracing::warn!(license = %ctx.license_id, tool, "resuming an abandoned idempotent request");
        }
        IdempotencyBegin::Mismatch => {
            return Err(ToolError::Conflict(
                "this Idempotency-Key was already used with a different request".into(),
            ));
        }
        IdempotencyBegin::Done { status, response } => {
            return replay(status, response);
        }
    }
    let result = run.await;
    if let Err(ToolError::Dispatch(_) | ToolError::Gateway(_) | ToolError::Internal(_)) = &result {
        // The outcome is unknown (the terminal may have executed without
        // answering): record nothing, so a retry with the same key runs again
        // and the agent, which got the key too, returns the first result
        // instead of executing twice.
        if let Err(failure) = ctx.services.store.idempotency_release(&ctx.license_id, key).await {
            tracing::error!(error = %failure, "could not release an idempotency claim");
        }
        return result;
    }
    let (status, stored) = match &result {
        Ok(v) => (200, serde_json::json!({ "ok": v })),
        Err(failure) => (
            failure.http_status(),
            serde_json::json!({ "error": { "code": failure.code(), "message": failure.to_string(), "retcode": match failure {
                ToolError::Rejected { retcode, .. } => Some(retcode.clone()),
                _ => None,
            } } }),
        ),
    };
    if let Err(failure) = ctx
        .services
        .store
        .idempotency_finish(&ctx.license_id, key, status, &stored)
        .await
    {
        tracing::error!(error = %failure, "could not record the idempotent outcome");
    }
    result
}

fn replay<O: DeserializeOwned>(status: u16, response: serde_json::Value) -> Result<O, ToolError> {
    if status == 200 {
        return serde_json::from_value(response["ok"].clone())
            .map_err(|e| ToolError::Internal(format!("stored idempotent outcome unreadable: {e}")));
    }
    let message = response["error"]["message"].as_str().unwrap_or("failed").to_owned();
    Err(match response["error"]["code"].as_str().unwrap_or_default() {
        "ORDER_REJECTED" => ToolError::Rejected {
            retcode: response["error"]["retcode"].as_str().unwrap_or("rejected").to_owned(),
            message,
        },
        "TRADING_DISABLED" => ToolError::TradingDisabled(message),
        "NOT_FOUND" => ToolError::NotFound(message),
        "VALIDATION_ERROR" => ToolError::InvalidInput(message),
        "GATEWAY_ERROR" => ToolError::Gateway(message),
        _ => ToolError::Dispatch(message),
    })
}

/// The spec of a trading tool: `trade` capability, live calls gated.
fn spec(name: &'static str, title: &'static str, description: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        capability: Capability::Trade,
        gate: Gate::LiveOnly,
        target: Target::Terminal,
        annotations: TRADE_ANNOTATIONS,
    }
}

/// The tools of this module, in catalog order.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        place_order::tool(),
        close_position::tool(),
        modify_position::tool(),
        reverse_position::tool(),
        cancel_order::tool(),
        modify_order::tool(),
        close_by::tool(),
        bulk::close_all_tool(),
        bulk::cancel_all_tool(),
        market_depth::tool(),
    ]
}

/// Runs a command that came later in protocol version 1 (`modify_order`,
/// `close_by`, `market_book_*`): an agent that does not implement it answers
/// `UNKNOWN_COMMAND` (or `NOT_SUPPORTED` when its platform cannot), which is
/// reported as such instead of as a failed command.
async fn run_optional(
    ctx: &ToolContext,
    command: tradeterm_protocol::Command,
) -> Result<tradeterm_protocol::CommandResult, ToolError> {
    use tradeterm_protocol::DispatchError;
    use tradeterm_protocol::agent::codes;
    let name = command.name();
    let terminal = ctx.terminal()?;
    match ctx
        .services
        .dispatch
        .execute(&ctx.license_id, terminal, command, ctx.timeout)
        .await
    {
        Ok(result) => Ok(result),
        Err(DispatchError::CommandFailed(body))
            if body.code == codes::UNKNOWN_COMMAND || body.code == codes::NOT_SUPPORTED =>
        {
            Err(ToolError::Dispatch(format!(
                "not supported by this terminal's agent: `{name}` answered {} ({})",
                body.message, body.code
            )))
        }
        Err(e) => Err(e.into()),
    }
}

/// Which positions or orders a bulk tool acts on.
#[derive(Debug, Clone, Default)]
struct BulkFilter {
    symbol: Option<String>,
    side: Option<Side>,
    magic: Option<u64>,
}

impl BulkFilter {
    fn matches(&self, symbol: &str, side: Side, magic: u64) -> bool {
        self.symbol.as_deref().is_none_or(|s| s.eq_ignore_ascii_case(symbol))
            && self.side.is_none_or(|x| x == side)
            && self.magic.is_none_or(|m| m == magic)
    }
}

/// What happened to one position or order of a bulk tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Dry run: it would be closed or cancelled.
    WouldSucceed,
    /// Dry run: the preflight says it would fail (`error` says why).
    WouldFail,
    /// Closed or cancelled.
    Done,
    /// The terminal refused or did not answer (`error` says why).
    Failed,
}

/// Why one item of a bulk tool failed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ItemError {
    /// The error code (`ORDER_REJECTED`, `DISPATCH_ERROR`, ...).
    pub code: String,
    /// Trade-server return code of a rejection.
    pub retcode: Option<String>,
    /// Explanation.
    pub message: String,
}

impl From<&ToolError> for ItemError {
    fn from(e: &ToolError) -> Self {
        Self {
            code: e.code().to_owned(),
            retcode: match e {
                ToolError::Rejected { retcode, .. } => Some(retcode.clone()),
                _ => None,
            },
            message: e.to_string(),
        }
    }
}

/// The per-item idempotency key of a bulk call: the caller's key and the
/// ticket, so that a retried bulk call never closes the same position twice.
fn item_key(ctx: &ToolContext, ticket: u64) -> Option<String> {
    ctx.idempotency_key.as_ref().map(|k| format!("{k}:{ticket}"))
}
