//! The SQL implementation of [`Store`]: one [`SqlStore`] over either SQLite
//! or PostgreSQL.
//!
//! **Design.** `SqlStore` holds an enum of the two native sqlx pools. Every
//! query is written once, in SQL that both databases accept (`$n`
//! placeholders, `ON CONFLICT`, `IS NULL`, `LIMIT/OFFSET`), and the
//! [`on_pool!`] macro compiles the code that runs it once per backend, so each
//! arm is checked against its own driver's types. The native drivers (not
//! sqlx's `Any`) are used so that booleans, integers and transactions behave
//! as each database defines them. The only SQL that differs is how a write
//! transaction serializes with its rivals (see [`WritePool`]); the schema
//! differs only in column types (`migrations/{sqlite,postgres}`).
//!
//! **Layout.** This file holds the pools, the connection setup and the
//! machinery every query shares ([`on_pool!`], [`WritePool`] and the lock
//! macros). Each section of [`Store`] lives in its own module as plain
//! `async fn`s taking `&SqlStore`: [`licenses`], [`terminals`] (and terminal
//! keys), [`api_keys`], [`journal`], [`prop_firm`] (rules and high-water
//! mark), [`news_guard`], [`snapshots`], [`equity_guards`], [`alerts`] (alert
//! rules, their firings, and the gateway's execution records) and
//! [`idempotency`]. A trait can only be implemented in one block, so the
//! `impl Store for SqlStore` at the end of this file is a thin table that
//! forwards each method to its section, in the trait's order.
//!
//! **Invariant:** no plaintext secret and no hash is ever logged or put into
//! an error message; the connection URL (which may hold a password) is never
//! logged either.

mod alerts;
mod api_keys;
mod audit;
mod dashboard;
mod equity_guards;
mod idempotency;
mod journal;
mod licenses;
mod managed;
mod migrate;
mod news_guard;
mod prop_firm;
mod rows;
mod snapshots;
mod terminals;
mod validate;
mod webhooks;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, Postgres};
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor, Transaction};

use crate::{
    AlertEventRecord, AlertRuleRecord, ApiKey, ApiKeyAuth, BindOutcome, EquityGuardRecord, ExecutionRecordRow,
    IdempotencyBegin, JournalEntry, JournalFilter, License, LicenseSettings, NewAlertEvent, NewAlertRule,
    NewsGuardRecord, PropFirmRecord, RotatedTerminalKey, Secret, StateSnapshot, Store, StoreError, StoreResult,
    Terminal, TerminalInfo, TerminalKey, TerminalKeyAuth, Tier,
};

/// SQLite waits this long for a lock held by another connection.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections of a file-backed SQLite pool.
const SQLITE_MAX_CONNECTIONS: u32 = 8;
/// Connections of a PostgreSQL pool.
const PG_MAX_CONNECTIONS: u32 = 10;

/// The store over SQLite or PostgreSQL. Cheap to clone (the pool is shared).
#[derive(Debug, Clone)]
pub struct SqlStore {
    pool: Pool,
}

#[derive(Debug, Clone)]
enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the concrete pool of the backend. The
/// body is compiled once per backend; both arms must produce the same type.
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.pool {
            $crate::sql::Pool::Sqlite($pool) => $body,
            $crate::sql::Pool::Postgres($pool) => $body,
        }
    };
}

/// Inside a write transaction of `on_pool!`: locks the license's row (see
/// [`WritePool::lock_license_sql`]), returning `NotFound("license")` from the
/// enclosing function when there is none.
macro_rules! lock_license {
    ($pool:ident, $tx:ident, $license_id:expr) => {
        if sqlx::query($pool.lock_license_sql())
            .bind($license_id)
            .fetch_optional(&mut *$tx)
            .await?
            .is_none()
        {
            return Err($crate::StoreError::NotFound("license"));
        }
    };
}

/// As [`lock_license!`] for a terminal of the license:
/// `NotFound("terminal")` when the terminal is not the license's.
macro_rules! lock_terminal {
    ($pool:ident, $tx:ident, $terminal_id:expr, $license_id:expr) => {
        if sqlx::query($pool.lock_terminal_sql())
            .bind($terminal_id)
            .bind($license_id)
            .fetch_optional(&mut *$tx)
            .await?
            .is_none()
        {
            return Err($crate::StoreError::NotFound("terminal"));
        }
    };
}

// Path-based names for the section modules (`use super::on_pool`).
use {lock_license, lock_terminal, on_pool};

/// How each backend starts a write transaction that serializes with rival
/// writers, and how it locks the parent row inside one.
///
/// - SQLite: `BEGIN IMMEDIATE` takes the database's write lock up front
///   (waiting up to the busy timeout), so the reads that follow cannot be
///   invalidated by another writer before the transaction commits. The lock
///   queries are plain `SELECT`s.
/// - PostgreSQL: a `READ COMMITTED` transaction that locks the parent row
///   with `SELECT … FOR UPDATE`; a rival waits on that row lock and its next
///   statement sees what the first one committed.
trait WritePool {
    type Db: sqlx::Database;
    /// Begins a write transaction.
    fn begin_write(&self) -> impl Future<Output = Result<Transaction<'static, Self::Db>, sqlx::Error>> + Send;
    /// `SELECT id FROM licenses WHERE id = $1`, locking the row where that is how the backend serializes.
    fn lock_license_sql(&self) -> &'static str;
    /// `SELECT id FROM terminals WHERE id = $1 AND license_id = $2`, locking likewise.
    fn lock_terminal_sql(&self) -> &'static str;
}

impl WritePool for SqlitePool {
    type Db = Sqlite;
    fn begin_write(&self) -> impl Future<Output = Result<Transaction<'static, Sqlite>, sqlx::Error>> + Send {
        self.begin_with("BEGIN IMMEDIATE")
    }
    fn lock_license_sql(&self) -> &'static str {
        "SELECT id FROM licenses WHERE id = $1"
    }
    fn lock_terminal_sql(&self) -> &'static str {
        "SELECT id FROM terminals WHERE id = $1 AND license_id = $2"
    }
}

impl WritePool for PgPool {
    type Db = Postgres;
    fn begin_write(&self) -> impl Future<Output = Result<Transaction<'static, Postgres>, sqlx::Error>> + Send {
        self.begin()
    }
    fn lock_license_sql(&self) -> &'static str {
        "SELECT id FROM licenses WHERE id = $1 FOR UPDATE"
    }
    fn lock_terminal_sql(&self) -> &'static str {
        "SELECT id FROM terminals WHERE id = $1 AND license_id = $2 FOR UPDATE"
    }
}

/// Now, unix milliseconds.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn is_sqlite_url(url: &str) -> bool {
    url.starts_with("sqlite:")
}

fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

fn is_sqlite_memory_url(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// A PostgreSQL schema name this crate will create: lower-case ASCII letters,
/// digits and `_`, not starting with a digit, at most 63 bytes. Keeping to
/// this set makes the quoted identifier safe to splice into SQL.
fn valid_schema_name(schema: &str) -> bool {
    let mut chars = schema.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && schema.len() <= 63
}

impl SqlStore {
    /// Opens the store and runs the embedded migrations.
    ///
    /// `url` is `sqlite://PATH?mode=rwc` (file, created if missing),
    /// `sqlite::memory:` (one private in-memory database: the pool keeps a
    /// single connection open for the store's lifetime) or
    /// `postgres://…`. SQLite connections use WAL, `foreign_keys=ON` and a
    /// 5 s busy timeout.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        if is_sqlite_url(url) {
            Self::connect_sqlite(url).await
        } else if is_postgres_url(url) {
            Self::connect_postgres(url, None).await
        } else {
            Err(StoreError::Invalid(
                "unsupported database URL: expected sqlite:… or postgres://…".to_owned(),
            ))
        }
    }

    /// Opens a PostgreSQL store inside `schema`, creating the schema if
    /// missing and setting `search_path` to it on every pooled connection, so
    /// that tables and the migrations table live there. Used to isolate test
    /// runs (and possible for multi-tenant deployments). The schema name must
    /// be lower-case ASCII letters, digits and `_`.
    pub async fn connect_with_schema(pg_url: &str, schema: &str) -> StoreResult<Self> {
        if !is_postgres_url(pg_url) {
            return Err(StoreError::Invalid("a schema needs a postgres:// URL".to_owned()));
        }
        if !valid_schema_name(schema) {
            return Err(StoreError::Invalid(format!(
                "schema name {schema:?} must be lower-case letters, digits and _, at most 63 bytes"
            )));
        }
        Self::connect_postgres(pg_url, Some(schema)).await
    }

    async fn connect_sqlite(url: &str) -> StoreResult<Self> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError::Invalid(format!("SQLite URL: {e}")))?
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(SQLITE_BUSY_TIMEOUT);
        let in_memory = is_sqlite_memory_url(url);
        let pool_options = if in_memory {
            // Each connection to `:memory:` is its own database: keep exactly
            // one, forever.
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            SqlitePoolOptions::new().max_connections(SQLITE_MAX_CONNECTIONS)
        };
        let pool = pool_options.connect_with(options).await?;
        migrate::migrator(migrate::SQLITE)
            .run(&pool)
            .await
            .map_err(|e| StoreError::Database(format!("SQLite migrations: {e}")))?;
        tracing::info!(backend = "sqlite", in_memory, "store opened");
        Ok(Self {
            pool: Pool::Sqlite(pool),
        })
    }

    async fn connect_postgres(url: &str, schema: Option<&str>) -> StoreResult<Self> {
        let options =
            PgConnectOptions::from_str(url).map_err(|e| StoreError::Invalid(format!("PostgreSQL URL: {e}")))?;
        let mut pool_options = PgPoolOptions::new().max_connections(PG_MAX_CONNECTIONS);
        if let Some(schema) = schema {
            let mut conn: PgConnection = options.connect().await?;
            conn.execute(AssertSqlSafe(format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"")))
                .await?;
            conn.close().await?;
            let set_path: Arc<str> = format!("SET search_path TO \"{schema}\"").into();
            pool_options = pool_options.after_connect(move |conn, _meta| {
                let set_path = Arc::clone(&set_path);
                Box::pin(async move {
                    conn.execute(AssertSqlSafe(set_path)).await?;
                    Ok(())
                })
            });
        }
        let pool = pool_options.connect_with(options).await?;
        migrate::migrator(migrate::POSTGRES)
            .run(&pool)
            .await
            .map_err(|e| StoreError::Database(format!("PostgreSQL migrations: {e}")))?;
        tracing::info!(
            backend = "postgres",
            schema = schema.unwrap_or("(default)"),
            "store opened"
        );
        Ok(Self {
            pool: Pool::Postgres(pool),
        })
    }

    /// `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Postgres(_) => "postgres",
        }
    }

    /// Checks that the database answers (for readiness probes).
    pub async fn ping(&self) -> StoreResult<()> {
        on_pool!(self, pool => { sqlx::query("SELECT 1").execute(pool).await?; });
        Ok(())
    }

    /// Closes the pool, waiting for connections in use to be returned.
    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await);
    }
}

#[async_trait]
impl Store for SqlStore {
    async fn ping(&self) -> StoreResult<()> {
        SqlStore::ping(self).await
    }

    // ----- licenses -----

    async fn create_license(&self, name: &str, tier: Tier) -> StoreResult<(License, Secret)> {
        licenses::create_license(self, name, tier).await
    }

    async fn license(&self, license_id: &str) -> StoreResult<Option<License>> {
        licenses::license(self, license_id).await
    }

    async fn license_by_master_key(&self, master_key: &str) -> StoreResult<Option<License>> {
        licenses::license_by_master_key(self, master_key).await
    }

    async fn list_licenses(&self) -> StoreResult<Vec<License>> {
        licenses::list_licenses(self).await
    }

    async fn set_license_tier(&self, license_id: &str, tier: Tier) -> StoreResult<()> {
        licenses::set_license_tier(self, license_id, tier).await
    }

    async fn license_settings(&self, license_id: &str) -> StoreResult<LicenseSettings> {
        licenses::license_settings(self, license_id).await
    }

    async fn set_license_settings(&self, license_id: &str, settings: &LicenseSettings) -> StoreResult<()> {
        licenses::set_license_settings(self, license_id, settings).await
    }

    // ----- terminals and terminal keys -----

    async fn create_scoped_terminal(
        &self,
        license_id: &str,
        name: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<(Terminal, Secret)> {
        terminals::create_terminal(self, license_id, name, permissions).await
    }

    async fn rotate_scoped_terminal_key(
        &self,
        license_id: &str,
        terminal_id: &str,
        scope: Option<Option<serde_json::Value>>,
    ) -> StoreResult<RotatedTerminalKey> {
        terminals::rotate_terminal_key(self, license_id, terminal_id, scope).await
    }

    async fn terminal_key_record(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<TerminalKey>> {
        terminals::terminal_key_record(self, license_id, terminal_id).await
    }

    async fn set_terminal_key_scope(
        &self,
        license_id: &str,
        terminal_id: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<Option<TerminalKey>> {
        terminals::set_terminal_key_scope(self, license_id, terminal_id, permissions).await
    }

    async fn terminal_key_generation(&self, key_id: &str) -> StoreResult<Option<u32>> {
        terminals::terminal_key_generation(self, key_id).await
    }

    async fn terminal_key_active(&self, key_id: &str) -> StoreResult<bool> {
        terminals::terminal_key_active(self, key_id).await
    }

    async fn terminal_key(&self, key: &str) -> StoreResult<Option<TerminalKeyAuth>> {
        terminals::terminal_key(self, key).await
    }

    async fn bind_terminal(&self, terminal_id: &str, fingerprint: &str) -> StoreResult<BindOutcome> {
        terminals::bind_terminal(self, terminal_id, fingerprint).await
    }

    async fn update_terminal_info(&self, terminal_id: &str, info: &TerminalInfo) -> StoreResult<()> {
        terminals::update_terminal_info(self, terminal_id, info).await
    }

    async fn touch_terminal(&self, terminal_id: &str) -> StoreResult<()> {
        terminals::touch_terminal(self, terminal_id).await
    }

    async fn touch_terminals(&self, terminal_ids: &[String]) -> StoreResult<u64> {
        terminals::touch_terminals(self, terminal_ids).await
    }

    async fn terminal(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<Terminal>> {
        terminals::terminal(self, license_id, terminal_id).await
    }

    async fn list_terminals(&self, license_id: &str) -> StoreResult<Vec<Terminal>> {
        terminals::list_terminals(self, license_id).await
    }

    // ----- REST API keys -----

    async fn create_scoped_api_key(
        &self,
        license_id: &str,
        label: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<(ApiKey, Secret)> {
        api_keys::create_api_key(self, license_id, label, permissions).await
    }

    async fn list_api_keys(&self, license_id: &str) -> StoreResult<Vec<ApiKey>> {
        api_keys::list_api_keys(self, license_id).await
    }

    async fn revoke_api_key(&self, license_id: &str, key_id: &str) -> StoreResult<bool> {
        api_keys::revoke_api_key(self, license_id, key_id).await
    }

    async fn api_key(&self, key: &str) -> StoreResult<Option<ApiKeyAuth>> {
        api_keys::api_key(self, key).await
    }

    async fn api_key_active(&self, key_id: &str) -> StoreResult<bool> {
        api_keys::api_key_active(self, key_id).await
    }

    async fn api_key_generation(&self, key_id: &str) -> StoreResult<Option<u32>> {
        api_keys::api_key_generation(self, key_id).await
    }

    async fn set_api_key_scope(
        &self,
        license_id: &str,
        key_id: &str,
        permissions: Option<serde_json::Value>,
    ) -> StoreResult<Option<ApiKey>> {
        api_keys::set_api_key_scope(self, license_id, key_id, permissions).await
    }

    async fn revoked_credentials_since(&self, since_ms: i64) -> StoreResult<Vec<(String, i64)>> {
        api_keys::revoked_credentials_since(self, since_ms).await
    }

    async fn touch_api_key(&self, key_id: &str) -> StoreResult<()> {
        api_keys::touch_api_key(self, key_id).await
    }

    // ----- journal -----

    async fn create_journal_entry(
        &self,
        license_id: &str,
        terminal_id: Option<&str>,
        body: &serde_json::Value,
    ) -> StoreResult<JournalEntry> {
        journal::create_journal_entry(self, license_id, terminal_id, body).await
    }

    async fn journal_entry(&self, license_id: &str, entry_id: &str) -> StoreResult<Option<JournalEntry>> {
        journal::journal_entry(self, license_id, entry_id).await
    }

    async fn list_journal(&self, license_id: &str, filter: &JournalFilter) -> StoreResult<Vec<JournalEntry>> {
        journal::list_journal(self, license_id, filter).await
    }

    async fn update_journal_entry(
        &self,
        license_id: &str,
        entry_id: &str,
        terminal_id: Option<Option<&str>>,
        body: &serde_json::Value,
    ) -> StoreResult<Option<JournalEntry>> {
        journal::update_journal_entry(self, license_id, entry_id, terminal_id, body).await
    }

    async fn delete_journal_entry(&self, license_id: &str, entry_id: &str) -> StoreResult<bool> {
        journal::delete_journal_entry(self, license_id, entry_id).await
    }

    // ----- prop-firm rules -----

    async fn set_prop_firm_rules(
        &self,
        license_id: &str,
        terminal_id: &str,
        rules: &serde_json::Value,
    ) -> StoreResult<PropFirmRecord> {
        prop_firm::set_prop_firm_rules(self, license_id, terminal_id, rules).await
    }

    async fn prop_firm_rules(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<PropFirmRecord>> {
        prop_firm::prop_firm_rules(self, license_id, terminal_id).await
    }

    async fn remove_prop_firm_rules(&self, license_id: &str, terminal_id: &str) -> StoreResult<bool> {
        prop_firm::remove_prop_firm_rules(self, license_id, terminal_id).await
    }

    // ----- news guard and state snapshots -----

    async fn set_news_guard(&self, license_id: &str, config: &serde_json::Value) -> StoreResult<NewsGuardRecord> {
        news_guard::set_news_guard(self, license_id, config).await
    }

    async fn news_guard(&self, license_id: &str) -> StoreResult<Option<NewsGuardRecord>> {
        news_guard::news_guard(self, license_id).await
    }

    async fn remove_news_guard(&self, license_id: &str) -> StoreResult<bool> {
        news_guard::remove_news_guard(self, license_id).await
    }

    async fn all_news_guards(&self) -> StoreResult<Vec<NewsGuardRecord>> {
        news_guard::all_news_guards(self).await
    }

    async fn swap_state_snapshot(
        &self,
        license_id: &str,
        caller: &str,
        terminal_id: &str,
        snapshot: &serde_json::Value,
        taken_at: i64,
    ) -> StoreResult<Option<StateSnapshot>> {
        snapshots::swap_state_snapshot(self, license_id, caller, terminal_id, snapshot, taken_at).await
    }

    async fn raise_prop_firm_high_water_mark(
        &self,
        license_id: &str,
        terminal_id: &str,
        value: f64,
    ) -> StoreResult<Option<f64>> {
        prop_firm::raise_prop_firm_high_water_mark(self, license_id, terminal_id, value).await
    }

    // ----- equity guards -----

    async fn set_equity_guard(
        &self,
        license_id: &str,
        terminal_id: &str,
        source: &str,
        rules: &serde_json::Value,
    ) -> StoreResult<EquityGuardRecord> {
        equity_guards::set_equity_guard(self, license_id, terminal_id, source, rules).await
    }

    async fn equity_guards(&self, license_id: &str, terminal_id: &str) -> StoreResult<Vec<EquityGuardRecord>> {
        equity_guards::equity_guards(self, license_id, terminal_id).await
    }

    async fn remove_equity_guard(&self, license_id: &str, terminal_id: &str, source: &str) -> StoreResult<bool> {
        equity_guards::remove_equity_guard(self, license_id, terminal_id, source).await
    }

    async fn update_equity_guard_state(
        &self,
        license_id: &str,
        terminal_id: &str,
        source: &str,
        expected_version: i64,
        state: &serde_json::Value,
    ) -> StoreResult<Option<i64>> {
        equity_guards::update_equity_guard_state(self, license_id, terminal_id, source, expected_version, state).await
    }

    async fn guarded_terminals(&self) -> StoreResult<Vec<(String, String)>> {
        equity_guards::guarded_terminals(self).await
    }

    async fn create_alert_rule(&self, new: &NewAlertRule<'_>) -> StoreResult<AlertRuleRecord> {
        alerts::create_alert_rule(self, new).await
    }

    async fn alert_rules(&self, license_id: &str, terminal_id: Option<&str>) -> StoreResult<Vec<AlertRuleRecord>> {
        alerts::alert_rules(self, license_id, terminal_id).await
    }

    async fn active_alert_rules(&self) -> StoreResult<Vec<AlertRuleRecord>> {
        alerts::active_alert_rules(self).await
    }

    async fn remove_alert_rule(&self, license_id: &str, alert_id: &str) -> StoreResult<bool> {
        alerts::remove_alert_rule(self, license_id, alert_id).await
    }

    async fn record_alert_step(
        &self,
        alert_id: &str,
        expected_version: i64,
        state: &serde_json::Value,
        firings: &[NewAlertEvent],
        deactivate: bool,
    ) -> StoreResult<Option<i64>> {
        alerts::record_alert_step(self, alert_id, expected_version, state, firings, deactivate).await
    }

    async fn alert_events(
        &self,
        license_id: &str,
        terminal_id: &str,
        since_ms: i64,
        limit: u32,
    ) -> StoreResult<Vec<AlertEventRecord>> {
        alerts::alert_events(self, license_id, terminal_id, since_ms, limit).await
    }

    async fn record_execution(
        &self,
        license_id: &str,
        terminal_id: &str,
        requested_at: i64,
        record: &serde_json::Value,
    ) -> StoreResult<()> {
        alerts::record_execution(self, license_id, terminal_id, requested_at, record).await
    }

    async fn executions(
        &self,
        license_id: &str,
        terminal_id: &str,
        from: i64,
        to: i64,
        limit: u32,
    ) -> StoreResult<Vec<ExecutionRecordRow>> {
        alerts::executions(self, license_id, terminal_id, from, to, limit).await
    }

    // ----- idempotency -----

    async fn idempotency_begin(
        &self,
        license_id: &str,
        key: &str,
        request_hash: &str,
    ) -> StoreResult<IdempotencyBegin> {
        idempotency::idempotency_begin(self, license_id, key, request_hash).await
    }

    async fn idempotency_resume(
        &self,
        license_id: &str,
        key: &str,
        request_hash: &str,
        claimed_before_ms: i64,
    ) -> StoreResult<bool> {
        idempotency::idempotency_resume(self, license_id, key, request_hash, claimed_before_ms).await
    }

    async fn idempotency_release(&self, license_id: &str, key: &str) -> StoreResult<()> {
        idempotency::idempotency_release(self, license_id, key).await
    }

    async fn idempotency_finish(
        &self,
        license_id: &str,
        key: &str,
        status: u16,
        response: &serde_json::Value,
    ) -> StoreResult<()> {
        idempotency::idempotency_finish(self, license_id, key, status, response).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names() {
        assert!(valid_schema_name("tt_store_test_1"));
        assert!(valid_schema_name("_x"));
        assert!(!valid_schema_name(""));
        assert!(!valid_schema_name("1abc"));
        assert!(!valid_schema_name("Abc"));
        assert!(!valid_schema_name("a\"; DROP SCHEMA public; --"));
        assert!(!valid_schema_name(&"a".repeat(64)));
    }

    #[test]
    fn url_kinds() {
        assert!(is_sqlite_url("sqlite::memory:"));
        assert!(is_sqlite_memory_url("sqlite::memory:"));
        assert!(!is_sqlite_memory_url("sqlite:///tmp/x.db?mode=rwc"));
        assert!(is_postgres_url("postgres://u@h/db"));
        assert!(is_postgres_url("postgresql://u@h/db"));
        assert!(!is_postgres_url("mysql://u@h/db"));
    }

    #[tokio::test]
    async fn unsupported_url_is_refused_without_echoing_it() {
        let err = SqlStore::connect("mysql://user:hunter2@host/db").await.unwrap_err();
        assert!(
            matches!(&err, StoreError::Invalid(m) if !m.contains("hunter2")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn in_memory_store_keeps_its_data() {
        let store = SqlStore::connect("sqlite::memory:").await.unwrap();
        let (license, _) = store.create_license("mem", Tier::Free).await.unwrap();
        // With more than one connection each would see its own empty database.
        for _ in 0..3 {
            assert_eq!(store.license(&license.id).await.unwrap().as_ref(), Some(&license));
        }
        assert_eq!(store.backend(), "sqlite");
        store.ping().await.unwrap();
    }

    #[tokio::test]
    async fn database_errors_are_counted_by_kind() {
        use tradeterm_telemetry::{names, scrape::Scrape};

        tradeterm_telemetry::metrics::install();
        let closed = [("kind", "pool_closed")];
        let before = Scrape::parse(&tradeterm_telemetry::metrics::render()).value(names::DB_ERRORS_TOTAL, &closed);
        let store = SqlStore::connect("sqlite::memory:").await.unwrap();
        store.close().await;
        assert!(matches!(store.ping().await, Err(StoreError::Database(_))));
        assert!(matches!(Store::ping(&store).await, Err(StoreError::Database(_))));
        let after = Scrape::parse(&tradeterm_telemetry::metrics::render()).value(names::DB_ERRORS_TOTAL, &closed);
        assert_eq!(after - before, 2.0);
    }
}
