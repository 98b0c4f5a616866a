//! # tradeterm-store
//!
//! Persistence behind one trait, [`Store`], with two backends that pass the
//! same conformance suite: SQLite (embedded, the default for a single node)
//! and PostgreSQL (production, shared by several instances). Migrations live
//! in `migrations/{sqlite,postgres}` and run on open.
//!
//! It holds licenses (with a hashed master key), terminals, terminal keys
//! (hashed; bound to one terminal installation by the first successful agent
//! connection), REST API keys (`svc_api_…`, SHA-256 hashed, at most
//! [`MAX_ACTIVE_API_KEYS`] active per license), journal entries, prop-firm
//! rule sets (one per terminal, with a high-water mark), equity guards with
//! their evaluation state, idempotency records, and webhook endpoints with
//! their outbox of deliveries ([`webhook`]).
//!
//! **Invariants:** plaintext secrets are never stored and never logged; they
//! leave this crate once, wrapped in [`Secret`], when created. The one
//! exception is a webhook's signing secret, which must be kept to sign (see
//! [`webhook`]): stored, never listed or logged. Every read that
//! a caller makes on behalf of a license is filtered by that license id, so
//! nothing of one license is reachable from another. Key lookups hash the
//! presented key and compare hashes in constant time.

pub mod audit;
pub mod keys;
pub mod managed;
mod model;
pub mod session;
mod sql;
pub mod webhook;

pub use audit::{
    AuditChainHead, AuditFilter, AuditRecord, AuditStore, ChainBreak, ChainReport, NewAuditRecord, verify_chain,
};
pub use keys::{Secret, hash_key};
pub use managed::{
    MAX_MANAGED_PER_TERMINAL, ManagedOrderRecord, ManagedStatus, ManagedStep, ManagedStore, NewManagedOrder,
};
pub use model::*;
pub use session::{DashboardSession, SessionStore};
pub use sql::SqlStore;
pub use webhook::{
    ClaimedDelivery, MAX_WEBHOOKS_PER_LICENSE, NewWebhookDelivery, WebhookAttempt, WebhookAttemptOutcome, WebhookBars,
    WebhookCounts, WebhookEndpoint, WebhookStore, WebhookUpdate,
};

use async_trait::async_trait;

/// At most this many active REST API keys per license (spec §8).
pub const MAX_ACTIVE_API_KEYS: usize = 5;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The license already has [`MAX_ACTIVE_API_KEYS`] active API keys.
    #[error("the license already has {MAX_ACTIVE_API_KEYS} active API keys; revoke one first")]
    ApiKeyLimit,
    /// The license already has [`MAX_WEBHOOKS_PER_LICENSE`] webhook endpoints.
    #[error("a license has at most {MAX_WEBHOOKS_PER_LICENSE} webhook endpoints; delete one first")]
    WebhookLimit,
    /// A referenced record does not exist (for this license).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// Input refused (empty label, oversized body, ...).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// Database failure. The message is for logs, not for clients.
    #[error("database error: {0}")]
    Database(String),
}

impl From<sqlx::Error> for StoreError {
    /// Every driver error passes here: counted in
    /// `tradeterm_db_errors_total{kind}` (`docs/observability.md`).
    fn from(e: sqlx::Error) -> Self {
        tradeterm_telemetry::record::db_error(db_error_kind(&e));
        Self::Database(e.to_string())
    }
}

/// The `kind` label of a database error.
fn db_error_kind(e: &sqlx::Error) -> &'static str {
    match e {
        sqlx::Error::Database(_) => "database",
        sqlx::Error::Io(_) => "io",
        sqlx::Error::Tls(_) => "tls",
        sqlx::Error::Protocol(_) => "protocol",
        sqlx::Error::RowNotFound => "row_not_found",
        sqlx::Error::PoolTimedOut => "pool_timed_out",
        sqlx::Error::PoolClosed => "pool_closed",
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) | sqlx::Error::TypeNotFound { .. } => "decode",
        _ => "other",
    }
}

/// Result alias of this crate.
pub type StoreResult<T> = Result<T, StoreError>;

/// Persistence operations. Every method that acts for a license takes its id
/// and never returns another license's data. The dashboard's sessions are the
/// [`SessionStore`] section (`session.rs`), the webhooks the
/// [`WebhookStore`] section (`webhook.rs`), the managed exits the
/// [`ManagedStore`] section (`managed.rs`), the trade audit log the
/// [`AuditStore`] section (`audit.rs`).
#[async_trait]
pub trait Store: SessionStore + WebhookStore + ManagedStore + AuditStore + Send + Sync + 'static {
    /// Checks that the database answers (the readiness probes' `database` check).
    async fn ping(&self) -> StoreResult<()>;

    // ----- licenses -----

    /// Creates a license and returns it with its master key (shown once).
    async fn create_license(&self, name: &str, tier: Tier) -> StoreResult<(License, Secret)>;
    /// A license by id.
    async fn license(&self, license_id: &str) -> StoreResult<Option<License>>;
    /// The license whose master key this is, if any (and not disabled).
    async fn license_by_master_key(&self, master_key: &str) -> StoreResult<Option<License>>;
    /// All licenses, oldest first (admin use).
    async fn list_licenses(&self) -> StoreResult<Vec<License>>;
    /// Changes a license's tier.
    async fn set_license_tier(&self, license_id: &str, tier: Tier) -> StoreResult<()>;
    /// The owner's settings of a license (`NotFound` for an unknown one).
    async fn license_settings(&self, license_id: &str) -> StoreResult<LicenseSettings>;
    /// Replaces the owner's settings of a license (`NotFound` for an unknown one).
    async fn set_license_settings(&self, license_id: &str, settings: &LicenseSettings) -> StoreResult<()>;

    // ----- terminals and terminal keys -----

    /// Creates a terminal slot for the license with a new terminal key (shown once).
    async fn create_terminal(&self, license_id: &str, name: &str) -> StoreResult<(Terminal, Secret)> {
        self.create_scoped_terminal(license_id, name, None).await
    }
    /// [`Store::create_terminal`] with a scope for its key (`permissions`,
    /// the JSON of `tradeterm_core::scope::KeyScope`, validated by the caller).
    async fn create_scoped_terminal(
        &self,
        license_id: &str,
        name: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<(Terminal, Secret)>;
    /// Revokes the terminal's active key and issues a new one. The binding to
    /// the terminal installation is kept, and so is the key's scope. Returns
    /// the new key and the ids of the revoked ones.
    async fn rotate_terminal_key(&self, license_id: &str, terminal_id: &str) -> StoreResult<RotatedTerminalKey> {
        self.rotate_scoped_terminal_key(license_id, terminal_id, None).await
    }
    /// [`Store::rotate_terminal_key`]; `scope`: `None` keeps the old key's
    /// scope, `Some(permissions)` gives the new key this one (`Some(None)`: none).
    async fn rotate_scoped_terminal_key(
        &self,
        license_id: &str,
        terminal_id: &str,
        scope: Option<Option<serde_json::Value>>,
    ) -> StoreResult<RotatedTerminalKey>;
    /// The active key's record of a terminal of the license (never the secret).
    async fn terminal_key_record(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<TerminalKey>>;
    /// Changes the scope of a terminal's active key in place (the secret is
    /// kept; its scope generation moves on by one). `None` when the license
    /// has no such terminal with an active key.
    async fn set_terminal_key_scope(
        &self,
        license_id: &str,
        terminal_id: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<Option<TerminalKey>>;
    /// The scope generation of the terminal key with this record id while it
    /// is active and its license enabled; `None` otherwise.
    async fn terminal_key_generation(&self, key_id: &str) -> StoreResult<Option<u32>>;
    /// Whether the terminal key with this record id is active and its license
    /// enabled (used to honour a rotation at once for session tokens
    /// exchanged for the key, and by connected agents).
    async fn terminal_key_active(&self, key_id: &str) -> StoreResult<bool>;
    /// Resolves an active (not revoked) terminal key.
    async fn terminal_key(&self, key: &str) -> StoreResult<Option<TerminalKeyAuth>>;
    /// Binds a terminal to an installation fingerprint. The first call binds;
    /// the same fingerprint again is [`BindOutcome::AlreadyBound`]; another
    /// fingerprint is [`BindOutcome::Conflict`] and changes nothing. Atomic.
    async fn bind_terminal(&self, terminal_id: &str, fingerprint: &str) -> StoreResult<BindOutcome>;
    /// Records what a connected agent reported and the time it was last seen.
    async fn update_terminal_info(&self, terminal_id: &str, info: &TerminalInfo) -> StoreResult<()>;
    /// Updates only `last_seen` to now.
    async fn touch_terminal(&self, terminal_id: &str) -> StoreResult<()>;
    /// Updates `last_seen` to now for many terminals in few statements (the
    /// gateway's periodic round over its connected agents); unknown ids are
    /// skipped. The number of terminals updated.
    async fn touch_terminals(&self, terminal_ids: &[String]) -> StoreResult<u64>;
    /// One terminal of a license.
    async fn terminal(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<Terminal>>;
    /// The terminals of a license, oldest first.
    async fn list_terminals(&self, license_id: &str) -> StoreResult<Vec<Terminal>>;

    // ----- REST API keys -----

    /// Creates an API key (`svc_api_…`), refusing with [`StoreError::ApiKeyLimit`]
    /// when the license already has [`MAX_ACTIVE_API_KEYS`] active keys. Atomic
    /// with respect to concurrent creations on the same license.
    async fn create_api_key(&self, license_id: &str, label: &str) -> StoreResult<(ApiKey, Secret)> {
        self.create_scoped_api_key(license_id, label, None).await
    }
    /// [`Store::create_api_key`] with a scope (`permissions`, the JSON of
    /// `tradeterm_core::scope::KeyScope`, validated by the caller), stored
    /// with the key and shown with it.
    async fn create_scoped_api_key(
        &self,
        license_id: &str,
        label: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<(ApiKey, Secret)>;
    /// The license's API keys (active and revoked), newest first. Never the secrets.
    async fn list_api_keys(&self, license_id: &str) -> StoreResult<Vec<ApiKey>>;
    /// Revokes a key of this license. `Ok(false)` when no such active key exists for it.
    async fn revoke_api_key(&self, license_id: &str, key_id: &str) -> StoreResult<bool>;
    /// Resolves an active API key (with its license's tier).
    async fn api_key(&self, key: &str) -> StoreResult<Option<ApiKeyAuth>>;
    /// Whether the key with this id is active (used to honour revocation at once).
    async fn api_key_active(&self, key_id: &str) -> StoreResult<bool>;
    /// The scope generation of the API key with this id while it is active
    /// and its license enabled; `None` otherwise.
    async fn api_key_generation(&self, key_id: &str) -> StoreResult<Option<u32>>;
    /// Changes the scope of an active API key of the license in place (the
    /// secret is kept; its scope generation moves on by one). `None` when
    /// the license has no such active key.
    async fn set_api_key_scope(
        &self,
        license_id: &str,
        key_id: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<Option<ApiKey>>;
    /// Every credential name to mark revoked for what happened at or after
    /// `since_ms`, with when, across licenses: the keys revoked (their
    /// record id, and their scope generation's name) and the older scope
    /// generations of the keys whose scope changed
    /// (`tradeterm_core::scope::credential_mark`). What a gateway publishes
    /// again as revocation marks when Redis comes back empty.
    async fn revoked_credentials_since(&self, since_ms: i64) -> StoreResult<Vec<(String, i64)>>;
    /// Sets `last_used_at` to now.
    async fn touch_api_key(&self, key_id: &str) -> StoreResult<()>;

    // ----- journal -----

    /// Adds a journal entry; `terminal_id` is the optional attribution.
    async fn create_journal_entry(
        &self,
        license_id: &str,
        terminal_id: Option<&str>,
        body: &serde_json::Value,
    ) -> StoreResult<JournalEntry>;
    /// One entry of the license.
    async fn journal_entry(&self, license_id: &str, entry_id: &str) -> StoreResult<Option<JournalEntry>>;
    /// Entries of the license matching the filter, newest first.
    async fn list_journal(&self, license_id: &str, filter: &JournalFilter) -> StoreResult<Vec<JournalEntry>>;
    /// Replaces an entry's body (and, when given, its attribution).
    async fn update_journal_entry(
        &self,
        license_id: &str,
        entry_id: &str,
        terminal_id: Option<Option<&str>>,
        body: &serde_json::Value,
    ) -> StoreResult<Option<JournalEntry>>;
    /// Deletes an entry. `Ok(false)` when it did not exist for this license.
    async fn delete_journal_entry(&self, license_id: &str, entry_id: &str) -> StoreResult<bool>;

    // ----- prop-firm rules -----

    /// Sets (or replaces) the prop-firm rule set of a terminal of the license.
    /// Replacing keeps `created_at` and clears the high-water mark. A terminal
    /// that is not the license's is [`StoreError::NotFound`].
    async fn set_prop_firm_rules(
        &self,
        license_id: &str,
        terminal_id: &str,
        rules: &serde_json::Value,
    ) -> StoreResult<PropFirmRecord>;
    /// The rule set of a terminal of the license, if any.
    async fn prop_firm_rules(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<PropFirmRecord>>;
    /// Removes the rule set. `Ok(false)` when there was none for this license and terminal.
    async fn remove_prop_firm_rules(&self, license_id: &str, terminal_id: &str) -> StoreResult<bool>;
    /// Raises the stored high-water mark to `value` when it is higher (or
    /// unset); never lowers it. Atomic. Returns the mark now stored, or `None`
    /// when the terminal has no rule set for this license.
    async fn raise_prop_firm_high_water_mark(
        &self,
        license_id: &str,
        terminal_id: &str,
        value: f64,
    ) -> StoreResult<Option<f64>>;

    // ----- news guard and state snapshots -----

    /// Sets (or replaces) the license's news guard; replacing keeps `created_at`.
    async fn set_news_guard(&self, license_id: &str, config: &serde_json::Value) -> StoreResult<NewsGuardRecord>;
    /// The license's news guard, if any.
    async fn news_guard(&self, license_id: &str) -> StoreResult<Option<NewsGuardRecord>>;
    /// Removes the news guard. `Ok(false)` when the license had none.
    async fn remove_news_guard(&self, license_id: &str) -> StoreResult<bool>;
    /// The news guards of every enabled license, for the server's watcher
    /// that publishes `news_guard.alert` (not for a license's callers).
    async fn all_news_guards(&self) -> StoreResult<Vec<NewsGuardRecord>>;
    /// Stores `snapshot` as what `caller` (a credential id) last saw of a
    /// terminal of the license, taken at `taken_at`, and returns what it saw
    /// before, if anything. Atomic per (license, caller, terminal). A terminal
    /// that is not the license's is [`StoreError::NotFound`].
    async fn swap_state_snapshot(
        &self,
        license_id: &str,
        caller: &str,
        terminal_id: &str,
        snapshot: &serde_json::Value,
        taken_at: i64,
    ) -> StoreResult<Option<StateSnapshot>>;

    // ----- equity guards -----

    /// Sets (or replaces) the equity guard of `source` (`user` or
    /// `prop_firm`) on a terminal of the license. Setting starts the guard
    /// afresh: the state becomes `{}` (replacing keeps `created_at`). A
    /// terminal that is not the license's is [`StoreError::NotFound`].
    async fn set_equity_guard(
        &self,
        license_id: &str,
        terminal_id: &str,
        source: &str,
        rules: &serde_json::Value,
    ) -> StoreResult<EquityGuardRecord>;
    /// The equity guards of a terminal of the license, by source.
    async fn equity_guards(&self, license_id: &str, terminal_id: &str) -> StoreResult<Vec<EquityGuardRecord>>;
    /// Removes the guard of `source`. `Ok(false)` when there was none.
    async fn remove_equity_guard(&self, license_id: &str, terminal_id: &str, source: &str) -> StoreResult<bool>;
    /// Stores a new evaluation state when the guard is still at
    /// `expected_version` (compare-and-swap): `Some(new version)`, or `None`
    /// when another writer moved it first (or it was removed); re-read and
    /// evaluate again.
    async fn update_equity_guard_state(
        &self,
        license_id: &str,
        terminal_id: &str,
        source: &str,
        expected_version: i64,
        state: &serde_json::Value,
    ) -> StoreResult<Option<i64>>;
    /// Every (license id, terminal id) with at least one equity guard, for the
    /// server's live monitor (not for a license's callers).
    async fn guarded_terminals(&self) -> StoreResult<Vec<(String, String)>>;

    // ----- alert rules and their firings -----

    /// Creates an active alert rule on a terminal of the license, with an
    /// empty state. At most [`MAX_ALERT_RULES_PER_TERMINAL`] rules per
    /// terminal ([`StoreError::Invalid`] beyond); a terminal that is not the
    /// license's is [`StoreError::NotFound`].
    async fn create_alert_rule(&self, new: &NewAlertRule<'_>) -> StoreResult<AlertRuleRecord>;
    /// The license's alert rules, of one terminal or of all, oldest first.
    async fn alert_rules(&self, license_id: &str, terminal_id: Option<&str>) -> StoreResult<Vec<AlertRuleRecord>>;
    /// Every active alert rule of every license, for the server's alert
    /// engine (not for a license's callers).
    async fn active_alert_rules(&self) -> StoreResult<Vec<AlertRuleRecord>>;
    /// Removes a rule of the license (its recorded firings stay deliverable).
    /// `Ok(false)` when there was none.
    async fn remove_alert_rule(&self, license_id: &str, alert_id: &str) -> StoreResult<bool>;
    /// Stores a rule's new state, and its firings, when the rule is still at
    /// `expected_version` (compare-and-swap, one transaction): `Some(new
    /// version)`, or `None` when another writer moved it first or it was
    /// removed (nothing is written then). `deactivate` ends a `once` rule.
    async fn record_alert_step(
        &self,
        alert_id: &str,
        expected_version: i64,
        state: &serde_json::Value,
        firings: &[NewAlertEvent],
        deactivate: bool,
    ) -> StoreResult<Option<i64>>;
    /// Firings on a terminal of the license with `fired_at >= since_ms`,
    /// oldest first, at most `limit`.
    async fn alert_events(
        &self,
        license_id: &str,
        terminal_id: &str,
        since_ms: i64,
        limit: u32,
    ) -> StoreResult<Vec<AlertEventRecord>>;

    // ----- executions (trade requests the gateway dispatched) -----

    /// Records one trade request and its answer (JSON, at most 16 KiB).
    async fn record_execution(
        &self,
        license_id: &str,
        terminal_id: &str,
        requested_at: i64,
        record: &serde_json::Value,
    ) -> StoreResult<()>;
    /// Executions on a terminal of the license requested in `[from, to)`,
    /// oldest first, at most `limit`.
    async fn executions(
        &self,
        license_id: &str,
        terminal_id: &str,
        from: i64,
        to: i64,
        limit: u32,
    ) -> StoreResult<Vec<ExecutionRecordRow>>;

    // ----- idempotency (live trade calls) -----

    /// Claims an idempotency key for a request. Exactly one concurrent caller
    /// gets [`IdempotencyBegin::Started`]; later callers see the stored outcome,
    /// [`IdempotencyBegin::InProgress`], or [`IdempotencyBegin::Mismatch`] when
    /// the same key comes with a different request hash.
    async fn idempotency_begin(&self, license_id: &str, key: &str, request_hash: &str)
    -> StoreResult<IdempotencyBegin>;
    /// Takes over an unfinished claim of `key` for the same request when it
    /// was made before `claimed_before_ms` (unix ms): the process holding it is
    /// presumed dead. Exactly one concurrent caller gets `true`, and the claim
    /// time restarts, so the record is not taken over again until it is stale
    /// once more. A finished record, another request hash or an unknown key
    /// gives `false`.
    async fn idempotency_resume(
        &self,
        license_id: &str,
        key: &str,
        request_hash: &str,
        claimed_before_ms: i64,
    ) -> StoreResult<bool>;
    /// Drops an unfinished claim of `key` (a finished record stays), so that a
    /// retry runs again: used when the outcome of the first attempt is
    /// unknown (the terminal did not answer). Unknown keys are fine.
    async fn idempotency_release(&self, license_id: &str, key: &str) -> StoreResult<()>;
    /// Stores the outcome of a claimed key (status code and body).
    async fn idempotency_finish(
        &self,
        license_id: &str,
        key: &str,
        status: u16,
        response: &serde_json::Value,
    ) -> StoreResult<()>;
}
