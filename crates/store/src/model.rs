//! Records held by the store.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use tradeterm_core::license::{Capability, Tier};

/// A license: the unit of tenancy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct License {
    /// Id (`lic_…`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Tier.
    pub tier: Tier,
    /// Creation time, unix ms.
    pub created_at: i64,
    /// Disabled licenses authenticate nothing.
    pub disabled: bool,
}

/// Settings of a license that its owner changes (master key: the gateway's
/// `/api/dashboard/license-settings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LicenseSettings {
    /// Whether every live trade requested over MCP asks the user first with
    /// MCP elicitation (`docs/mcp.md`, "Trade confirmation"). Default `true`.
    pub mcp_trade_confirmation: bool,
}

impl Default for LicenseSettings {
    fn default() -> Self {
        Self {
            mcp_trade_confirmation: true,
        }
    }
}

/// A terminal slot of a license and what its agent last reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Terminal {
    /// Id (`term_…`), used in `X-Terminal-Id`.
    pub id: String,
    /// Owning license.
    pub license_id: String,
    /// Label.
    pub name: String,
    /// Installation fingerprint bound by the first agent connection.
    pub fingerprint: Option<String>,
    /// When it was bound, unix ms.
    pub bound_at: Option<i64>,
    /// Creation time, unix ms.
    pub created_at: i64,
    /// Last time an agent frame was seen, unix ms.
    pub last_seen: Option<i64>,
    /// Last reported details.
    pub info: Option<TerminalInfo>,
}

/// What an agent reports about its terminal and account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalInfo {
    /// `MT4` or `MT5`.
    pub platform: String,
    /// Terminal build.
    pub build: u32,
    /// Account number.
    pub account_login: u64,
    /// Trade server.
    pub account_server: String,
    /// Deposit currency.
    pub account_currency: String,
    /// `demo`, `real` or `contest`.
    pub trade_mode: String,
}

/// Outcome of [`crate::Store::rotate_terminal_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotatedTerminalKey {
    /// The new key (shown once).
    pub key: crate::Secret,
    /// Record id of the new key.
    pub key_id: String,
    /// Record ids of the keys this rotation revoked (usually one), so that
    /// the caller can publish their revocation: session tokens exchanged
    /// for them carry these ids (`cred_id`).
    pub revoked_key_ids: Vec<String>,
    /// The scope generation each revoked key had (same order), so that the
    /// caller marks the name its current tokens carry too.
    pub revoked_generations: Vec<u32>,
    /// The new key's record (its scope: the one given, else the old key's).
    pub record: TerminalKey,
}

/// A terminal key's record (never the secret nor its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalKey {
    /// Id (`tkey_…`), the `cred_id` of the session tokens exchanged for it.
    pub id: String,
    /// Owning license.
    pub license_id: String,
    /// The terminal the key belongs to.
    pub terminal_id: String,
    /// The key's scope (`docs/security.md`, "Scoped keys"); `null`: the license's full capabilities.
    pub permissions: Option<serde_json::Value>,
    /// Changes of the scope in place so far (0: never changed).
    #[serde(default)]
    pub scope_generation: u32,
    /// Last change of the scope in place, unix ms.
    #[serde(default)]
    pub scope_changed_at: Option<i64>,
    /// Creation time, unix ms.
    pub created_at: i64,
    /// Revocation time, unix ms.
    pub revoked_at: Option<i64>,
}

/// An active terminal key resolved to its terminal and license.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalKeyAuth {
    /// Key record id.
    pub key_id: String,
    /// The key's scope as stored (`permissions`), if any.
    pub permissions: Option<serde_json::Value>,
    /// Generation of the key's scope.
    pub scope_generation: u32,
    /// The terminal the key belongs to.
    pub terminal: Terminal,
    /// The owning license.
    pub license: License,
}

/// Outcome of [`crate::Store::bind_terminal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindOutcome {
    /// First binding, done now.
    Bound,
    /// Already bound to this same fingerprint.
    AlreadyBound,
    /// Bound to another installation: refuse the connection.
    Conflict,
}

/// A REST API key (never the secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApiKey {
    /// Id (`key_…`).
    pub id: String,
    /// Owning license.
    pub license_id: String,
    /// Label chosen at creation.
    pub label: String,
    /// First characters of the key (`svc_api_AbCd`), to recognise it.
    pub prefix: String,
    /// The key's scope (`docs/security.md`, "Scoped keys"); `null` means the license's full capabilities.
    pub permissions: Option<serde_json::Value>,
    /// Changes of the scope in place so far (0: never changed).
    #[serde(default)]
    pub scope_generation: u32,
    /// Last change of the scope in place, unix ms.
    #[serde(default)]
    pub scope_changed_at: Option<i64>,
    /// Creation time, unix ms.
    pub created_at: i64,
    /// Revocation time, unix ms.
    pub revoked_at: Option<i64>,
    /// Last successful use, unix ms.
    pub last_used_at: Option<i64>,
}

/// An active API key resolved with its license.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyAuth {
    /// The key record.
    pub key: ApiKey,
    /// The owning license.
    pub license: License,
}

/// A journal entry. The body is free-form JSON validated by the journal tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JournalEntry {
    /// Id (`jrn_…`).
    pub id: String,
    /// Owning license.
    pub license_id: String,
    /// Terminal attribution; `None` is "unassigned".
    pub terminal_id: Option<String>,
    /// Creation time, unix ms.
    pub created_at: i64,
    /// Last update, unix ms.
    pub updated_at: i64,
    /// Entry content.
    pub body: serde_json::Value,
}

/// Which entries [`crate::Store::list_journal`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JournalFilter {
    /// Terminal selection.
    pub terminal: TerminalFilter,
    /// Only entries created at or after this unix ms.
    pub since: Option<i64>,
    /// Only entries created before this unix ms.
    pub until: Option<i64>,
    /// At most this many (default 100, capped at 1000 by callers).
    pub limit: u32,
    /// Skip this many.
    pub offset: u32,
}

/// Terminal selection of a journal query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TerminalFilter {
    /// Every entry of the license.
    #[default]
    All,
    /// Only entries without terminal attribution.
    Unassigned,
    /// Only entries attributed to this terminal.
    Terminal(String),
}

/// Outcome of [`crate::Store::idempotency_begin`].
#[derive(Debug, Clone, PartialEq)]
pub enum IdempotencyBegin {
    /// New key: the caller executes and then calls `idempotency_finish`.
    Started,
    /// Another call with this key is executing now.
    InProgress,
    /// Finished before: return this stored outcome.
    Done {
        /// HTTP status of the first outcome.
        status: u16,
        /// Body of the first outcome.
        response: serde_json::Value,
    },
    /// The key was used with a different request.
    Mismatch,
}

/// The prop-firm rule set of one terminal, with the tracker's state. The rule
/// set is free-form JSON validated by the prop-firm tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PropFirmRecord {
    /// Owning license.
    pub license_id: String,
    /// The terminal the rules apply to.
    pub terminal_id: String,
    /// The rule set.
    pub rules: serde_json::Value,
    /// Highest equity or balance observed so far (trailing drawdown reference);
    /// reset when the rules are replaced.
    pub high_water_mark: Option<f64>,
    /// When the rules were first set, unix ms.
    pub created_at: i64,
    /// When they were last replaced, unix ms.
    pub updated_at: i64,
}

/// An equity guard of one terminal with its evaluation state (see
/// `docs/equity-guard.md`). Rules and state are JSON validated by the tools.
#[derive(Debug, Clone, PartialEq)]
pub struct EquityGuardRecord {
    /// Owning license.
    pub license_id: String,
    /// The terminal it guards.
    pub terminal_id: String,
    /// Who installed it: `user` (`set_equity_guard`) or `prop_firm` (the
    /// prop-firm rule set of the terminal).
    pub source: String,
    /// The guard's rules.
    pub rules: serde_json::Value,
    /// The evaluation state (`{}` until the first observation).
    pub state: serde_json::Value,
    /// Rises on every write: the token of [`crate::Store::update_equity_guard_state`].
    pub version: i64,
    /// When the guard was first set, unix ms.
    pub created_at: i64,
    /// When its rules or state were last written, unix ms.
    pub updated_at: i64,
}

/// The news guard of a license (see `docs/alerts.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewsGuardRecord {
    /// Owning license.
    pub license_id: String,
    /// The guard's configuration, as the tool stored it.
    pub config: serde_json::Value,
    /// When it was first set, unix ms.
    pub created_at: i64,
    /// When it was last replaced, unix ms.
    pub updated_at: i64,
}

/// A caller's last seen state of a terminal (`get_state_delta`).
#[derive(Debug, Clone, PartialEq)]
pub struct StateSnapshot {
    /// The state, as the tool stored it.
    pub snapshot: serde_json::Value,
    /// When it was taken, unix ms.
    pub taken_at: i64,
}

/// Most alert rules one terminal may have.
pub const MAX_ALERT_RULES_PER_TERMINAL: usize = 100;

/// A new alert rule (see `docs/alerts.md`). The condition is JSON validated
/// by the tools.
#[derive(Debug, Clone, Copy)]
pub struct NewAlertRule<'a> {
    /// Owning license.
    pub license_id: &'a str,
    /// The terminal it watches.
    pub terminal_id: &'a str,
    /// The caller's label (may be empty).
    pub label: &'a str,
    /// What it watches.
    pub condition: &'a serde_json::Value,
    /// Whether it ends after its first firing.
    pub once: bool,
}

/// A stored alert rule.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertRuleRecord {
    /// Id (`alr_…`).
    pub id: String,
    /// Owning license.
    pub license_id: String,
    /// The terminal it watches.
    pub terminal_id: String,
    /// The caller's label.
    pub label: String,
    /// What it watches.
    pub condition: serde_json::Value,
    /// Whether it ends after its first firing.
    pub once: bool,
    /// Whether it is still watched (a `once` rule that fired is not).
    pub active: bool,
    /// The evaluation state (`{}` until the first observation).
    pub state: serde_json::Value,
    /// Rises on every write: the token of [`crate::Store::record_alert_step`].
    pub version: i64,
    /// When it was set, unix ms.
    pub created_at: i64,
    /// When its state was last written, unix ms.
    pub updated_at: i64,
}

/// A firing to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAlertEvent {
    /// When it fired, unix ms.
    pub fired_at: i64,
    /// What to deliver (JSON, at most 16 KiB).
    pub payload: serde_json::Value,
}

/// A recorded firing of an alert rule.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertEventRecord {
    /// Id (`alev_…`), stable: the delivery id of the alert.
    pub id: String,
    /// The rule that fired.
    pub alert_id: String,
    /// When it fired, unix ms.
    pub fired_at: i64,
    /// What to deliver.
    pub payload: serde_json::Value,
}

/// A recorded trade request (see `get_execution_quality`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionRecordRow {
    /// Id (`exe_…`).
    pub id: String,
    /// When the gateway sent it, unix ms.
    pub requested_at: i64,
    /// The record (JSON written by the gateway).
    pub record: serde_json::Value,
}
