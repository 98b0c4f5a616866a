//! The trade audit log (`docs/audit.md`): every call of a trade-capability
//! tool, dry or live, from every surface, is appended to the license's hash
//! chain in the store ([`tradeterm_store::AuditStore`]); `get_audit_log`
//! reads it back (filters, cursor, CSV); [`spawn_retention`] prunes it.
//!
//! **How a call is recorded.** [`crate::invoke`] asks [`start`] for a
//! [`Pending`] row before it runs the call: `None` for every tool without
//! the `trade` capability, so reads do no audit work at all. For a trade
//! tool, [`recorded`] runs the call inside a task-local trail; [`around`],
//! which `run` calls instead of `Tool::call`, notes on the trail the
//! terminal the call resolved to and the handler's time. Once the call
//! answered, the row is written: its decision is `refused` (a gate before
//! or inside the handler: the code names it), `dry_run`, `sent` (a live
//! call that went to the terminal and came back), `applied` (a trade
//! setting without a dry run: guards, rules), `rejected` (the trade server
//! or the preflight refused: its retcode) or `failed` (a dispatch or
//! internal error: the outcome at the terminal is unknown).
//!
//! **Invariants:** auditing never changes a call's answer: a row that
//! cannot be written is logged and counted
//! (`tradeterm_audit_append_failures_total`), and the answer waits for the
//! append at most [`APPEND_WAIT`]. No secret is recorded: the request is the
//! tool's input (with the effective `dry_run` and the idempotency key, which
//! is the client's de-duplication token, not a credential), and fields whose
//! name says secret, password, token or key are redacted.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tradeterm_core::license::Capability;
use tradeterm_core::time::{UnixMs, iso, parse_iso};
use tradeterm_store::audit::{MAX_AUDIT_JSON_BYTES, MAX_AUDIT_PAGE, audit_csv};
use tradeterm_store::{AuditFilter, AuditRecord, NewAuditRecord, Store};

use crate::{Annotations, Gate, Invocation, Services, Target, TerminalChoice, Tool, ToolContext, ToolError, ToolSpec};

/// The longest an answer waits for its row to be written (the append goes
/// on after that, and a failure is still logged and counted).
pub const APPEND_WAIT: Duration = Duration::from_secs(2);

/// Default retention of audit rows, days (`AUDIT_RETENTION_DAYS`).
pub const DEFAULT_RETENTION_DAYS: u32 = 400;

/// How often [`spawn_retention`] prunes.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// What [`around`] learnt inside the call.
#[derive(Debug, Clone)]
struct Reached {
    terminal_id: Option<String>,
    handler_us: i64,
}

/// What the call noted on its way: where the handler was reached, and the
/// human confirmation of a live trade (`crate::confirm`).
#[derive(Debug, Default)]
struct Trail {
    reached: Option<Reached>,
    confirmation: Option<Value>,
}

tokio::task_local! {
    static TRAIL: RefCell<Trail>;
}

/// Notes the confirmation of a live trade (asked or not, and the answer) on
/// the call's audit row: `request.confirmation`. Nothing outside a recorded call.
pub(crate) fn note_confirmation(note: Value) {
    let _ = TRAIL.try_with(|t| t.borrow_mut().confirmation = Some(note));
}

/// A row being recorded: what was known before the call.
#[derive(Debug)]
pub(crate) struct Pending {
    started: Instant,
    at: UnixMs,
    license_id: String,
    credential_id: String,
    credential_label: Option<String>,
    surface: &'static str,
    source: Option<String>,
    request_id: Option<String>,
    tool: &'static str,
    terminal_id: Option<String>,
    request: Value,
    dry_run: Option<bool>,
}

/// The row to record for a call of `tool`, or `None` when the tool is not
/// trade-affecting (no work on the read path).
pub(crate) fn start(tool: &Tool, call: &Invocation, input: &Value) -> Option<Pending> {
    if tool.capability != Capability::Trade {
        return None;
    }
    let (request, dry_run) = normalise(tool, call, input);
    Some(Pending {
        started: Instant::now(),
        at: chrono::Utc::now().timestamp_millis(),
        license_id: call.caller.license_id.clone(),
        credential_id: call.caller.credential.clone(),
        credential_label: call.credential_label.clone(),
        surface: call.surface,
        source: call.source.map(|ip| ip.to_string()),
        request_id: call
            .request_id
            .clone()
            .or_else(|| tradeterm_telemetry::request_id::current().map(|r| r.as_str().to_owned())),
        tool: tool.name,
        terminal_id: match &call.terminal {
            TerminalChoice::Bound(id) | TerminalChoice::Header(Some(id)) => Some(id.trim().to_owned()),
            TerminalChoice::Header(None) => None,
        },
        request,
        dry_run,
    })
}

/// Runs `call` and records its row when `pending` is one; otherwise only runs it.
pub(crate) async fn recorded<F>(services: &Arc<Services>, pending: Option<Pending>, call: F) -> Result<Value, ToolError>
where
    F: Future<Output = Result<Value, ToolError>>,
{
    let Some(pending) = pending else {
        return call.await;
    };
    let (result, trail) = TRAIL
        .scope(RefCell::new(Trail::default()), async move {
            let result = call.await;
            (result, TRAIL.with(|t| std::mem::take(&mut *t.borrow_mut())))
        })
        .await;
    pending.finish(services, &result, trail).await;
    result
}

/// `Tool::call`, noting for the audit row of a trade tool the terminal it
/// acts on and the handler's time.
pub(crate) async fn around(tool: &Tool, ctx: ToolContext, input: Value) -> Result<Value, ToolError> {
    if tool.capability != Capability::Trade {
        return tool.call(ctx, input).await;
    }
    let terminal_id = ctx.terminal_id.clone();
    let started = Instant::now();
    let result = tool.call(ctx, input).await;
    let handler_us = micros(started.elapsed());
    let _ = TRAIL.try_with(|t| {
        t.borrow_mut().reached = Some(Reached {
            terminal_id,
            handler_us,
        })
    });
    result
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// The normalised request: the input without the chart flag and with
/// secrets redacted, the effective `dry_run` of a tool that has one, and
/// the idempotency key.
fn normalise(tool: &Tool, call: &Invocation, input: &Value) -> (Value, Option<bool>) {
    let mut input = match input {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => Map::from_iter([("value".to_owned(), other.clone())]),
    };
    input.remove(crate::chart::CHART_PROPERTY);
    redact(&mut input);
    let dry_run = tool.input_schema["properties"].get("dry_run").map(|_| {
        let live = !call.force_dry_run && input.get("dry_run").and_then(Value::as_bool) == Some(false);
        !live
    });
    let mut request = Map::new();
    request.insert("input".into(), Value::Object(input));
    if let Some(dry) = dry_run {
        request.insert("dry_run".into(), Value::Bool(dry));
    }
    if call.force_dry_run {
        request.insert("paper_mode".into(), Value::Bool(true));
    }
    if let Some(key) = &call.idempotency_key {
        request.insert("idempotency_key".into(), Value::String(key.clone()));
    }
    (Value::Object(request), dry_run)
}

/// Replaces the value of every field whose name says it holds a secret.
fn redact(map: &mut Map<String, Value>) {
    for (k, v) in map.iter_mut() {
        let name = k.to_ascii_lowercase();
        if [
            "secret",
            "password",
            "token",
            "api_key",
            "master_key",
            "license_key",
            "terminal_key",
        ]
        .iter()
        .any(|s| name.contains(s))
        {
            *v = Value::String("[redacted]".into());
        } else if let Value::Object(inner) = v {
            redact(inner);
        } else if let Value::Array(items) = v {
            for item in items {
                if let Value::Object(inner) = item {
                    redact(inner);
                }
            }
        }
    }
}

/// JSON text of at most [`MAX_AUDIT_JSON_BYTES`]: `value`, or its scalar
/// top-level fields and `trade` with `"truncated": true`.
fn bounded(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_AUDIT_JSON_BYTES {
        return text;
    }
    let mut kept = Map::new();
    if let Value::Object(m) = value {
        for (k, v) in m {
            if !v.is_object() && !v.is_array() || k == "trade" {
                kept.insert(k.clone(), v.clone());
            }
        }
    }
    kept.insert("truncated".into(), Value::Bool(true));
    kept.insert("bytes".into(), json!(text.len()));
    let text = Value::Object(kept).to_string();
    if text.len() <= MAX_AUDIT_JSON_BYTES {
        text
    } else {
        json!({ "truncated": true }).to_string()
    }
}

impl Pending {
    async fn finish(mut self, services: &Arc<Services>, result: &Result<Value, ToolError>, trail: Trail) {
        let latency_us = micros(self.started.elapsed());
        let reached = trail.reached;
        if let (Some(note), Value::Object(request)) = (trail.confirmation, &mut self.request) {
            request.insert("confirmation".into(), note);
        }
        let (decision, code, answer) = decide(result, reached.is_some(), self.dry_run);
        let (terminal_id, handler_us) = match reached {
            Some(r) => (r.terminal_id.or(self.terminal_id), Some(r.handler_us)),
            None => (self.terminal_id, None),
        };
        let label = self.credential_label.or_else(|| {
            self.credential_id
                .starts_with("master:")
                .then(|| "master key".to_owned())
        });
        let row = NewAuditRecord {
            license_id: self.license_id,
            at: self.at,
            credential_id: self.credential_id,
            credential_label: label,
            surface: self.surface.to_owned(),
            source: self.source,
            request_id: self.request_id,
            tool: self.tool.to_owned(),
            terminal_id,
            request: bounded(&self.request),
            decision: decision.to_owned(),
            code: code.map(str::to_owned),
            answer: Some(bounded(&answer)),
            latency_us,
            handler_us,
        };
        let store = services.store.clone();
        let surface = self.surface;
        let append = tokio::spawn(async move {
            let mut row = row;
            if row.credential_label.is_none() {
                row.credential_label = api_key_label(&*store, &row.license_id, &row.credential_id).await;
            }
            if let Err(e) = store.append_audit(&row).await {
                tradeterm_telemetry::record::audit_append_failed(surface);
                tracing::error!(
                    error = %e,
                    license = %row.license_id,
                    tool = %row.tool,
                    decision = %row.decision,
                    "the trade audit row could not be appended"
                );
            }
        });
        if tokio::time::timeout(APPEND_WAIT, append).await.is_err() {
            tracing::warn!(
                tool = self.tool,
                "the trade audit row is still being appended; the call is answered"
            );
        }
    }
}

/// The label of an API key credential (`key_…`), if it is one of the license's.
async fn api_key_label(store: &dyn Store, license_id: &str, credential_id: &str) -> Option<String> {
    if !credential_id.starts_with("key_") {
        return None;
    }
    let keys = store.list_api_keys(license_id).await.ok()?;
    keys.into_iter().find(|k| k.id == credential_id).map(|k| k.label)
}

/// The decision, the error code and the answer of a finished call.
fn decide(
    result: &Result<Value, ToolError>,
    reached: bool,
    dry_request: Option<bool>,
) -> (&'static str, Option<&'static str>, Value) {
    match result {
        Ok(out) => {
            let decision = match out.get("dry_run").and_then(Value::as_bool).or(dry_request) {
                Some(true) => "dry_run",
                Some(false) => "sent",
                None => "applied",
            };
            (decision, None, out.clone())
        }
        Err(e) => {
            let mut answer = json!({ "code": e.code(), "message": e.to_string() });
            let decision = match e {
                _ if !reached => "refused",
                ToolError::Rejected { retcode, .. } => {
                    answer["retcode"] = Value::String(retcode.clone());
                    "rejected"
                }
                ToolError::Dispatch(_) | ToolError::Gateway(_) | ToolError::Internal(_) => "failed",
                _ => "refused",
            };
            (decision, Some(e.code()), answer)
        }
    }
}

/// Starts the periodic prune of rows older than `retention_days` (every
/// hour, the first at once). Every process serving tools may run it: a
/// prune is one transaction per license under its chain's lock.
pub fn spawn_retention(store: Arc<dyn Store>, retention_days: u32) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let retention_ms = i64::from(retention_days) * 86_400_000;
        loop {
            let cutoff = chrono::Utc::now().timestamp_millis() - retention_ms;
            match store.prune_audit(cutoff).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, retention_days, "trade audit rows past the retention pruned"),
                Err(e) => tracing::warn!(error = %e, "pruning the trade audit log failed; retried in an hour"),
            }
            tokio::time::sleep(PRUNE_EVERY).await;
        }
    })
}

// ----- get_audit_log -----

/// Largest page of `get_audit_log`.
const MAX_LIMIT: u32 = MAX_AUDIT_PAGE;

/// A decision of the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditDecision {
    /// A gate refused it; nothing was sent.
    Refused,
    /// A dry run: nothing was sent.
    DryRun,
    /// Live: sent to the terminal, which answered.
    Sent,
    /// A trade setting without a dry run was applied.
    Applied,
    /// The trade server or the preflight rejected it.
    Rejected,
    /// A dispatch or internal error: the outcome at the terminal is unknown.
    Failed,
}

impl AuditDecision {
    fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::DryRun => "dry_run",
            Self::Sent => "sent",
            Self::Applied => "applied",
            Self::Rejected => "rejected",
            Self::Failed => "failed",
        }
    }
}

/// A surface of the audit log: where the call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditSurface {
    /// The REST API, its management routes included (`master:` credential).
    Rest,
    /// The MCP server.
    Mcp,
    /// The managed-exit engine.
    Managed,
    /// The dashboard.
    Dashboard,
}

impl AuditSurface {
    fn as_str(self) -> &'static str {
        match self {
            Self::Rest => "rest",
            Self::Mcp => "mcp",
            Self::Managed => "managed",
            Self::Dashboard => "dashboard",
        }
    }
}

/// How `get_audit_log` answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuditFormat {
    /// The rows as JSON (default).
    #[default]
    Json,
    /// The rows as JSON and as a CSV document (REST answers the CSV as `text/csv`).
    Csv,
}

/// Input of `get_audit_log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only rows of calls at or after this ISO 8601 time.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub from: Option<String>,
    /// Only rows of calls before this ISO 8601 time.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub to: Option<String>,
    /// Only calls of this tool (1-64 characters).
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    pub tool: Option<String>,
    /// Only calls on this terminal (1-64 characters).
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    pub terminal_id: Option<String>,
    /// Only calls with this credential: its record id (`key_…`, `tkey_…`,
    /// `master:<license>`; 1-255 characters).
    #[serde(default)]
    #[schemars(length(min = 1, max = 255))]
    pub credential: Option<String>,
    /// Only rows with this decision.
    #[serde(default)]
    pub decision: Option<AuditDecision>,
    /// Only calls from this surface.
    #[serde(default)]
    pub surface: Option<AuditSurface>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    #[schemars(length(min = 1, max = 19), pattern(r"^[1-9][0-9]{0,18}$"))]
    pub cursor: Option<String>,
    /// At most this many rows (1-1000, default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    pub limit: Option<u32>,
    /// `json` (default) or `csv`.
    #[serde(default)]
    pub format: AuditFormat,
}

/// One row of the audit log.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditEntry {
    /// `aud_…`.
    pub id: String,
    /// Position in the license's chain, from 1.
    pub seq: i64,
    /// When the call started, ISO 8601 UTC.
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub at: UnixMs,
    /// Record id of the credential (never its secret).
    pub credential_id: String,
    /// The credential's label.
    pub credential_label: Option<String>,
    /// `rest` (the management routes included), `mcp`, `managed`, `dashboard`.
    pub surface: String,
    /// The client's address.
    pub source: Option<String>,
    /// The request id (`X-Request-Id`).
    pub request_id: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The terminal it acted on.
    pub terminal_id: Option<String>,
    /// The normalised request: `input`, the effective `dry_run`,
    /// `idempotency_key`, `paper_mode`.
    pub request: Value,
    /// `refused`, `dry_run`, `sent`, `applied`, `rejected` or `failed`.
    pub decision: String,
    /// The error code of a refusal, rejection or failure (`FORBIDDEN`,
    /// `TRADING_DISABLED`, `ORDER_REJECTED`, …).
    pub code: Option<String>,
    /// The answer: the tool's output (the agent's trade result with its
    /// retcode, order, deal and price), or the error's code, message and retcode.
    pub answer: Value,
    /// Time of the whole call, milliseconds.
    pub latency_ms: f64,
    /// Time of the tool's handler (terminal round trip included), milliseconds.
    pub handler_ms: Option<f64>,
    /// The previous row's hash (lower-case hex SHA-256).
    pub prev_hash: String,
    /// This row's hash (`docs/audit.md` says how to recompute it).
    pub hash: String,
}

impl From<AuditRecord> for AuditEntry {
    fn from(r: AuditRecord) -> Self {
        let json = |t: &str| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_owned()));
        Self {
            request: json(&r.request),
            answer: r.answer.as_deref().map_or(Value::Null, json),
            id: r.id,
            seq: r.seq,
            at: r.at,
            credential_id: r.credential_id,
            credential_label: r.credential_label,
            surface: r.surface,
            source: r.source,
            request_id: r.request_id,
            tool: r.tool,
            terminal_id: r.terminal_id,
            decision: r.decision,
            code: r.code,
            latency_ms: r.latency_us as f64 / 1000.0,
            handler_ms: r.handler_us.map(|v| v as f64 / 1000.0),
            prev_hash: r.prev_hash,
            hash: r.hash,
        }
    }
}

/// A document the REST adapter answers as its body.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Document {
    /// Its media type (`text/csv`).
    pub media_type: String,
    /// A file name for it.
    pub filename: String,
    /// Its text.
    pub text: String,
}

/// Output of `get_audit_log`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditPage {
    /// Rows, newest first.
    pub entries: Vec<AuditEntry>,
    /// Pass as `cursor` for the next (older) page; absent on the last page.
    pub next_cursor: Option<String>,
    /// The page as CSV (`format=csv`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<Document>,
}

fn parse_opt_time(name: &str, v: &Option<String>) -> Result<Option<i64>, ToolError> {
    v.as_deref()
        .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput(format!("`{name}` must be an ISO 8601 time"))))
        .transpose()
}

async fn get_audit_log(ctx: ToolContext, q: AuditQuery) -> Result<AuditPage, ToolError> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ToolError::InvalidInput(format!(
            "`limit` must be between 1 and {MAX_LIMIT}"
        )));
    }
    // The schema's bounds of the text filters, in characters as JSON Schema counts.
    for (name, value, max) in [
        ("tool", &q.tool, 64),
        ("terminal_id", &q.terminal_id, 64),
        ("credential", &q.credential, 255),
    ] {
        if let Some(v) = value
            && !(1..=max).contains(&v.chars().count())
        {
            return Err(ToolError::InvalidInput(format!(
                "`{name}` must have 1 to {max} characters"
            )));
        }
    }
    let before_seq = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(
            c.parse::<i64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| ToolError::InvalidInput("`cursor` is not a cursor this log gave".into()))?,
        ),
    };
    let filter = AuditFilter {
        from: parse_opt_time("from", &q.from)?,
        to: parse_opt_time("to", &q.to)?,
        tool: q.tool,
        terminal_id: q.terminal_id,
        credential_id: q.credential,
        decision: q.decision.map(|d| d.as_str().to_owned()),
        surface: q.surface.map(|v| v.as_str().to_owned()),
        before_seq,
        limit,
    };
    let rows = ctx.services.store.audit_page(&ctx.license_id, &filter).await?;
    let next_cursor = (rows.len() == limit as usize)
        .then(|| rows.last().map(|r| r.seq))
        .flatten()
        .filter(|seq| *seq > 1)
        .map(|seq| seq.to_string());
    // The store's one CSV writer (the dashboard's export uses it too).
    let document = (q.format == AuditFormat::Csv).then(|| Document {
        media_type: "text/csv; charset=utf-8".into(),
        filename: "audit.csv".into(),
        text: audit_csv(&rows),
    });
    let entries: Vec<AuditEntry> = rows.into_iter().map(AuditEntry::from).collect();
    Ok(AuditPage {
        entries,
        next_cursor,
        document,
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_audit_log",
            title: "Read the trade audit log",
            description: "The license's trade audit log, newest first: every trade-affecting call, dry or live, from every surface (REST, MCP, managed exits), with the credential (never a secret), source address, request id, the normalised request, the decision (refused with the gate's code, dry_run, sent, applied, rejected, failed), the terminal's answer and latencies, each row chained by SHA-256 to the one before. Filters: from, to, tool, terminal_id, credential, decision, surface; pages with `cursor`; `format: csv` adds the page as CSV. Needs the `audit` capability: the master key, or a key scoped with it.",
            capability: Capability::Audit,
            gate: Gate::Always,
            target: Target::License,
            annotations: Annotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }
        .build(get_audit_log),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_at_any_depth() {
        let mut m =
            json!({"symbol": "EURUSD", "api_key": "svc_api_x", "nested": {"Secret": "s"}, "legs": [{"token": "t"}]})
                .as_object()
                .cloned()
                .unwrap_or_default();
        redact(&mut m);
        let text = Value::Object(m).to_string();
        assert!(
            !text.contains("svc_api_x") && !text.contains("\"s\"") && !text.contains("\"t\""),
            "{text}"
        );
        assert!(text.contains("EURUSD"));
    }

    #[test]
    fn decisions() {
        let ok = |v: Value| Ok::<_, ToolError>(v);
        assert_eq!(decide(&ok(json!({"dry_run": true})), true, Some(true)).0, "dry_run");
        assert_eq!(decide(&ok(json!({"dry_run": false})), true, Some(false)).0, "sent");
        assert_eq!(decide(&ok(json!({"ok": 1})), true, None).0, "applied");
        let refused = Err(ToolError::Forbidden("no".into()));
        assert_eq!(decide(&refused, false, Some(false)).0, "refused");
        let disabled = Err(ToolError::TradingDisabled("off".into()));
        assert_eq!(decide(&disabled, true, Some(false)).1, Some("TRADING_DISABLED"));
        let rejected = Err(ToolError::Rejected {
            retcode: "TRADE_RETCODE_NO_MONEY".into(),
            message: "no money".into(),
        });
        let (d, _, answer) = decide(&rejected, true, Some(false));
        assert_eq!(
            (d, answer["retcode"].as_str()),
            ("rejected", Some("TRADE_RETCODE_NO_MONEY"))
        );
        assert_eq!(
            decide(&Err(ToolError::Dispatch("timeout".into())), true, Some(false)).0,
            "failed"
        );
    }

    #[test]
    fn the_surface_filter_names_the_stored_surfaces() {
        // The names the adapters give `Invocation::new`, as stored in a row.
        for name in ["rest", "mcp", "managed", "dashboard"] {
            let surface: AuditSurface = serde_json::from_value(json!(name)).unwrap();
            assert_eq!(surface.as_str(), name);
        }
        assert!(serde_json::from_value::<AuditSurface>(json!("management")).is_err());
    }

    #[test]
    fn large_values_are_bounded() {
        let big = json!({"dry_run": false, "trade": {"retcode": "DONE"}, "notes": ["x".repeat(MAX_AUDIT_JSON_BYTES)]});
        let text = bounded(&big);
        assert!(text.len() <= MAX_AUDIT_JSON_BYTES);
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            (v["truncated"].as_bool(), v["trade"]["retcode"].as_str()),
            (Some(true), Some("DONE"))
        );
    }

    #[test]
    fn only_trade_tools_are_audited() {
        let caller = crate::Caller {
            license_id: "lic".into(),
            credential: "key_1".into(),
            caps: vec![],
        };
        let call = Invocation::new("rest", caller, TerminalChoice::Header(None));
        for tool in crate::catalog() {
            let pending = start(tool, &call, &json!({}));
            assert_eq!(pending.is_some(), tool.capability == Capability::Trade, "{}", tool.name);
        }
        let place = crate::find("place_order").unwrap_or_else(|| unreachable!());
        let mut paper = call.clone();
        paper.force_dry_run = true;
        paper.idempotency_key = Some("k1".into());
        let p = start(
            place,
            &paper,
            &json!({"symbol": "EURUSD", "dry_run": false, "chart": true}),
        );
        let p = p.unwrap_or_else(|| unreachable!());
        assert_eq!(p.request["dry_run"], json!(true));
        assert_eq!(p.request["paper_mode"], json!(true));
        assert_eq!(p.request["idempotency_key"], json!("k1"));
        assert!(p.request["input"].get("chart").is_none());
    }
}
