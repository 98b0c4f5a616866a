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
//! **Invariant:** no plaintext secret and no hash is ever logged or put into
//! an error message; the connection URL (which may hold a password) is never
//! logged either.

mod dashboard;
mod migrate;
mod rows;
mod validate;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, Postgres};
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor, Transaction};

use crate::keys::{self, API_KEY_PREFIX, LICENSE_KEY_PREFIX, TERMINAL_KEY_PREFIX, hash_key, hashes_equal};
use crate::{
    ApiKey, ApiKeyAuth, BindOutcome, EquityGuardRecord, IdempotencyBegin, JournalEntry, JournalFilter, License,
    MAX_ACTIVE_API_KEYS, NewsGuardRecord, PropFirmRecord, RotatedTerminalKey, Secret, StateSnapshot, Store, StoreError,
    StoreResult, Terminal, TerminalFilter, TerminalInfo, TerminalKeyAuth, Tier,
};
use rows::{RowExt, api_key_cols, journal_cols, license_cols, terminal_cols};

/// SQLite waits this long for a lock held by another connection.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections of a file-backed SQLite pool.
const SQLITE_MAX_CONNECTIONS: u32 = 8;
/// Connections of a PostgreSQL pool.
const PG_MAX_CONNECTIONS: u32 = 10;
/// Journal page size when the filter leaves `limit` at 0.
const DEFAULT_JOURNAL_LIMIT: u32 = 100;
/// Largest journal page, whatever the caller asks.
const MAX_JOURNAL_LIMIT: u32 = 1000;

/// Largest stored prop-firm rule set, bytes of JSON.
const MAX_PROP_FIRM_RULES_BYTES: usize = 16 * 1024;

/// Largest stored news-guard configuration, bytes of JSON.
const MAX_NEWS_GUARD_BYTES: usize = 16 * 1024;
/// Largest stored state snapshot, bytes of JSON.
const MAX_SNAPSHOT_BYTES: usize = 4 * 1024 * 1024;

/// Prop-firm columns of `prop_firm_rules p`.
const PROP_FIRM_COLS: &str = "p.license_id AS p_license_id, p.terminal_id AS p_terminal_id, p.rules AS p_rules, \
                              p.high_water_mark AS p_hwm, p.created_at AS p_created_at, p.updated_at AS p_updated_at";

/// Maps a `news_guards` row (`config`, `created_at`, `updated_at`).
fn news_guard_record<R>(license_id: &str, r: &R) -> StoreResult<NewsGuardRecord>
where
    R: RowExt,
{
    let config = serde_json::from_str(&r.text("config")?)
        .map_err(|_| StoreError::Database("a stored news guard is not valid".to_owned()))?;
    Ok(NewsGuardRecord {
        license_id: license_id.to_owned(),
        config,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
    })
}

/// Maps a `prop_firm_rules p` row (selected with [`PROP_FIRM_COLS`]).
fn prop_firm_record<R>(r: &R) -> StoreResult<PropFirmRecord>
where
    R: RowExt + sqlx::Row,
    for<'a> Option<f64>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    let rules = serde_json::from_str(&r.text("p_rules")?)
        .map_err(|_| StoreError::Database("stored prop-firm rules are not valid".to_owned()))?;
    Ok(PropFirmRecord {
        license_id: r.text("p_license_id")?,
        terminal_id: r.text("p_terminal_id")?,
        rules,
        high_water_mark: r.try_get("p_hwm")?,
        created_at: r.int("p_created_at")?,
        updated_at: r.int("p_updated_at")?,
    })
}

/// Largest stored equity-guard rule set, bytes of JSON.
const MAX_EQUITY_GUARD_RULES_BYTES: usize = 16 * 1024;
/// Largest stored equity-guard state, bytes of JSON.
const MAX_EQUITY_GUARD_STATE_BYTES: usize = 256 * 1024;

/// Columns of `equity_guards` as [`equity_guard_record`] reads them.
const EQUITY_GUARD_COLS: &str = "license_id, terminal_id, source, rules, state, version, created_at, updated_at";

/// Maps an `equity_guards` row (selected with [`EQUITY_GUARD_COLS`]).
fn equity_guard_record<R>(r: &R) -> StoreResult<EquityGuardRecord>
where
    R: RowExt,
{
    let json = |col: &str| -> StoreResult<serde_json::Value> {
        serde_json::from_str(&r.text(col)?)
            .map_err(|_| StoreError::Database("a stored equity guard is not valid".to_owned()))
    };
    Ok(EquityGuardRecord {
        license_id: r.text("license_id")?,
        terminal_id: r.text("terminal_id")?,
        source: r.text("source")?,
        rules: json("rules")?,
        state: json("state")?,
        version: r.int("version")?,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
    })
}

/// An equity guard's source: 1-32 characters of `a-z` and `_`.
fn check_guard_source(source: &str) -> StoreResult<()> {
    if source.is_empty() || source.len() > 32 || !source.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return Err(StoreError::Invalid(
            "an equity guard source is 1-32 characters of a-z and _".to_owned(),
        ));
    }
    Ok(())
}

fn guard_json(value: &serde_json::Value, what: &str, max: usize) -> StoreResult<String> {
    let text = serde_json::to_string(value).map_err(|e| StoreError::Invalid(format!("{what}: {e}")))?;
    if text.len() > max {
        return Err(StoreError::Invalid(format!(
            "the equity guard's {what} may be at most {max} bytes of JSON"
        )));
    }
    Ok(text)
}

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
            Pool::Sqlite($pool) => $body,
            Pool::Postgres($pool) => $body,
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
            return Err(StoreError::NotFound("license"));
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
            return Err(StoreError::NotFound("terminal"));
        }
    };
}

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

/// A value bound to a dynamically assembled query.
enum Bind {
    Text(String),
    Int(i64),
}

/// Now, unix milliseconds.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_foreign_key_violation())
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

    /// Deletes idempotency records created before `before_ms` (unix ms),
    /// finished or not, and returns how many went. Callers choose the
    /// retention; nothing expires on its own.
    pub async fn purge_idempotency(&self, before_ms: i64) -> StoreResult<u64> {
        let n = on_pool!(self, pool => sqlx::query("DELETE FROM idempotency WHERE created_at < $1")
            .bind(before_ms)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n)
    }

    /// Closes the pool, waiting for connections in use to be returned.
    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await);
    }
}

#[async_trait]
impl Store for SqlStore {
    // ----- licenses -----

    async fn create_license(&self, name: &str, tier: Tier) -> StoreResult<(License, Secret)> {
        validate::name("license name", name)?;
        let secret = keys::generate(LICENSE_KEY_PREFIX);
        let hash = hash_key(secret.expose());
        let license = License {
            id: keys::new_id("lic_"),
            name: name.to_owned(),
            tier,
            created_at: now_ms(),
            disabled: false,
        };
        const SQL: &str =
            "INSERT INTO licenses (id, name, tier, master_key_hash, created_at) VALUES ($1, $2, $3, $4, $5)";
        on_pool!(self, pool => {
            sqlx::query(SQL)
                .bind(&license.id)
                .bind(&license.name)
                .bind(tier.as_str())
                .bind(&hash)
                .bind(license.created_at)
                .execute(pool)
                .await?;
        });
        Ok((license, secret))
    }

    async fn license(&self, license_id: &str) -> StoreResult<Option<License>> {
        const SQL: &str = concat!("SELECT ", license_cols!(), " FROM licenses l WHERE l.id = $1");
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .map(|r| rows::license(&r))
            .transpose())
    }

    async fn license_by_master_key(&self, master_key: &str) -> StoreResult<Option<License>> {
        const SQL: &str = concat!(
            "SELECT ",
            license_cols!(),
            ", l.master_key_hash AS l_hash FROM licenses l WHERE l.master_key_hash = $1 AND l.disabled = FALSE"
        );
        let hash = hash_key(master_key);
        let found = on_pool!(self, pool => match sqlx::query(SQL).bind(&hash).fetch_optional(pool).await? {
            Some(r) => Some((rows::license(&r)?, r.text("l_hash")?)),
            None => None,
        });
        Ok(found.and_then(|(license, stored)| hashes_equal(&stored, &hash).then_some(license)))
    }

    async fn list_licenses(&self) -> StoreResult<Vec<License>> {
        const SQL: &str = concat!(
            "SELECT ",
            license_cols!(),
            " FROM licenses l ORDER BY l.created_at, l.seq"
        );
        on_pool!(self, pool => sqlx::query(SQL)
            .fetch_all(pool)
            .await?
            .iter()
            .map(rows::license)
            .collect())
    }

    async fn set_license_tier(&self, license_id: &str, tier: Tier) -> StoreResult<()> {
        const SQL: &str = "UPDATE licenses SET tier = $1 WHERE id = $2";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(tier.as_str())
            .bind(license_id)
            .execute(pool)
            .await?
            .rows_affected());
        if n == 0 {
            return Err(StoreError::NotFound("license"));
        }
        Ok(())
    }

    // ----- terminals and terminal keys -----

    async fn create_terminal(&self, license_id: &str, name: &str) -> StoreResult<(Terminal, Secret)> {
        validate::name("terminal name", name)?;
        let secret = keys::generate(TERMINAL_KEY_PREFIX);
        let hash = hash_key(secret.expose());
        let now = now_ms();
        let terminal = Terminal {
            id: keys::new_id("term_"),
            license_id: license_id.to_owned(),
            name: name.to_owned(),
            fingerprint: None,
            bound_at: None,
            created_at: now,
            last_seen: None,
            info: None,
        };
        let key_id = keys::new_id("tkey_");
        const INSERT_TERMINAL: &str =
            "INSERT INTO terminals (id, license_id, name, created_at) VALUES ($1, $2, $3, $4)";
        const INSERT_KEY: &str = "INSERT INTO terminal_keys (id, license_id, terminal_id, key_hash, created_at) \
                                  VALUES ($1, $2, $3, $4, $5)";
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            lock_license!(pool, tx, license_id);
            sqlx::query(INSERT_TERMINAL)
                .bind(&terminal.id)
                .bind(license_id)
                .bind(name)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            sqlx::query(INSERT_KEY)
                .bind(&key_id)
                .bind(license_id)
                .bind(&terminal.id)
                .bind(&hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok((terminal, secret))
    }

    async fn rotate_terminal_key(&self, license_id: &str, terminal_id: &str) -> StoreResult<RotatedTerminalKey> {
        let secret = keys::generate(TERMINAL_KEY_PREFIX);
        let hash = hash_key(secret.expose());
        let key_id = keys::new_id("tkey_");
        let now = now_ms();
        const ACTIVE: &str = "SELECT id FROM terminal_keys WHERE terminal_id = $1 AND revoked_at IS NULL";
        const REVOKE: &str = "UPDATE terminal_keys SET revoked_at = $1 WHERE terminal_id = $2 AND revoked_at IS NULL";
        const INSERT_KEY: &str = "INSERT INTO terminal_keys (id, license_id, terminal_id, key_hash, created_at) \
                                  VALUES ($1, $2, $3, $4, $5)";
        let revoked_key_ids = on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            lock_terminal!(pool, tx, terminal_id, license_id);
            // The terminal row is locked: no other rotation can change its keys
            // between this read and the update.
            let revoked: Vec<String> = sqlx::query_scalar(ACTIVE).bind(terminal_id).fetch_all(&mut *tx).await?;
            sqlx::query(REVOKE).bind(now).bind(terminal_id).execute(&mut *tx).await?;
            sqlx::query(INSERT_KEY)
                .bind(&key_id)
                .bind(license_id)
                .bind(terminal_id)
                .bind(&hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            revoked
        });
        Ok(RotatedTerminalKey {
            key: secret,
            key_id,
            revoked_key_ids,
        })
    }

    async fn terminal_key_active(&self, key_id: &str) -> StoreResult<bool> {
        const SQL: &str = "SELECT k.id FROM terminal_keys k JOIN licenses l ON l.id = k.license_id \
                           WHERE k.id = $1 AND k.revoked_at IS NULL AND l.disabled = FALSE";
        let found = on_pool!(self, pool => sqlx::query(SQL).bind(key_id).fetch_optional(pool).await?.is_some());
        Ok(found)
    }

    async fn terminal_key(&self, key: &str) -> StoreResult<Option<TerminalKeyAuth>> {
        const SQL: &str = concat!(
            "SELECT tk.id AS tk_id, tk.key_hash AS tk_hash, ",
            terminal_cols!(),
            ", ",
            license_cols!(),
            " FROM terminal_keys tk",
            " JOIN terminals t ON t.id = tk.terminal_id AND t.license_id = tk.license_id",
            " JOIN licenses l ON l.id = tk.license_id",
            " WHERE tk.key_hash = $1 AND tk.revoked_at IS NULL AND l.disabled = FALSE"
        );
        let hash = hash_key(key);
        let found = on_pool!(self, pool => match sqlx::query(SQL).bind(&hash).fetch_optional(pool).await? {
            Some(r) => Some((
                TerminalKeyAuth { key_id: r.text("tk_id")?, terminal: rows::terminal(&r)?, license: rows::license(&r)? },
                r.text("tk_hash")?,
            )),
            None => None,
        });
        Ok(found.and_then(|(auth, stored)| hashes_equal(&stored, &hash).then_some(auth)))
    }

    async fn bind_terminal(&self, terminal_id: &str, fingerprint: &str) -> StoreResult<BindOutcome> {
        validate::token("fingerprint", fingerprint)?;
        // One conditional UPDATE claims an unbound terminal. Both backends
        // serialize writers of the row (SQLite: one writer at a time;
        // PostgreSQL: the row lock, then the WHERE is re-checked against the
        // committed row), so exactly one concurrent caller changes it.
        const CLAIM: &str =
            "UPDATE terminals SET fingerprint = $1, bound_at = $2 WHERE id = $3 AND fingerprint IS NULL";
        const CURRENT: &str = "SELECT fingerprint AS t_fingerprint FROM terminals WHERE id = $1";
        let (claimed, current) = on_pool!(self, pool => {
            let claimed = sqlx::query(CLAIM)
                .bind(fingerprint)
                .bind(now_ms())
                .bind(terminal_id)
                .execute(pool)
                .await?
                .rows_affected()
                == 1;
            let current = if claimed {
                None
            } else {
                match sqlx::query(CURRENT).bind(terminal_id).fetch_optional(pool).await? {
                    Some(r) => Some(r.opt_text("t_fingerprint")?),
                    None => return Err(StoreError::NotFound("terminal")),
                }
            };
            (claimed, current)
        });
        Ok(match (claimed, current) {
            (true, _) => BindOutcome::Bound,
            (false, Some(Some(bound))) if bound == fingerprint => BindOutcome::AlreadyBound,
            (false, Some(Some(_))) => BindOutcome::Conflict,
            // No operation unbinds a terminal, so a failed claim always finds a fingerprint.
            (false, _) => {
                return Err(StoreError::Database("terminal binding changed concurrently".to_owned()));
            }
        })
    }

    async fn update_terminal_info(&self, terminal_id: &str, info: &TerminalInfo) -> StoreResult<()> {
        let account_login = validate::terminal_info(info)?;
        const SQL: &str = "UPDATE terminals SET platform = $1, build = $2, account_login = $3, account_server = $4, \
                           account_currency = $5, trade_mode = $6, last_seen = $7 WHERE id = $8";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(&info.platform)
            .bind(i64::from(info.build))
            .bind(account_login)
            .bind(&info.account_server)
            .bind(&info.account_currency)
            .bind(&info.trade_mode)
            .bind(now_ms())
            .bind(terminal_id)
            .execute(pool)
            .await?
            .rows_affected());
        if n == 0 {
            return Err(StoreError::NotFound("terminal"));
        }
        Ok(())
    }

    async fn touch_terminal(&self, terminal_id: &str) -> StoreResult<()> {
        const SQL: &str = "UPDATE terminals SET last_seen = $1 WHERE id = $2";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(now_ms())
            .bind(terminal_id)
            .execute(pool)
            .await?
            .rows_affected());
        if n == 0 {
            return Err(StoreError::NotFound("terminal"));
        }
        Ok(())
    }

    async fn terminal(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<Terminal>> {
        const SQL: &str = concat!(
            "SELECT ",
            terminal_cols!(),
            " FROM terminals t WHERE t.id = $1 AND t.license_id = $2"
        );
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(terminal_id)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .map(|r| rows::terminal(&r))
            .transpose())
    }

    async fn list_terminals(&self, license_id: &str) -> StoreResult<Vec<Terminal>> {
        const SQL: &str = concat!(
            "SELECT ",
            terminal_cols!(),
            " FROM terminals t WHERE t.license_id = $1 ORDER BY t.created_at, t.seq"
        );
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(license_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(rows::terminal)
            .collect())
    }

    // ----- REST API keys -----

    async fn create_api_key(&self, license_id: &str, label: &str) -> StoreResult<(ApiKey, Secret)> {
        validate::name("label", label)?;
        let secret = keys::generate(API_KEY_PREFIX);
        let hash = hash_key(secret.expose());
        let key = ApiKey {
            id: keys::new_id("key_"),
            license_id: license_id.to_owned(),
            label: label.to_owned(),
            prefix: keys::display_prefix(secret.expose()),
            permissions: None,
            created_at: now_ms(),
            revoked_at: None,
            last_used_at: None,
        };
        const COUNT: &str = "SELECT COUNT(*) AS n FROM api_keys WHERE license_id = $1 AND revoked_at IS NULL";
        const INSERT: &str = "INSERT INTO api_keys (id, license_id, label, prefix, key_hash, created_at) \
                              VALUES ($1, $2, $3, $4, $5, $6)";
        // Count and insert inside one write transaction that holds the
        // license's lock (see `WritePool`), so concurrent creations on one
        // license run one after another and the limit holds.
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            lock_license!(pool, tx, license_id);
            let active = sqlx::query(COUNT).bind(license_id).fetch_one(&mut *tx).await?.int("n")?;
            if active >= MAX_ACTIVE_API_KEYS as i64 {
                return Err(StoreError::ApiKeyLimit);
            }
            sqlx::query(INSERT)
                .bind(&key.id)
                .bind(license_id)
                .bind(label)
                .bind(&key.prefix)
                .bind(&hash)
                .bind(key.created_at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok((key, secret))
    }

    async fn list_api_keys(&self, license_id: &str) -> StoreResult<Vec<ApiKey>> {
        const SQL: &str = concat!(
            "SELECT ",
            api_key_cols!(),
            " FROM api_keys k WHERE k.license_id = $1 ORDER BY k.created_at DESC, k.seq DESC"
        );
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(license_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(rows::api_key)
            .collect())
    }

    async fn revoke_api_key(&self, license_id: &str, key_id: &str) -> StoreResult<bool> {
        const SQL: &str =
            "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND license_id = $3 AND revoked_at IS NULL";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(now_ms())
            .bind(key_id)
            .bind(license_id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    async fn api_key(&self, key: &str) -> StoreResult<Option<ApiKeyAuth>> {
        const SQL: &str = concat!(
            "SELECT ",
            api_key_cols!(),
            ", k.key_hash AS k_hash, ",
            license_cols!(),
            " FROM api_keys k JOIN licenses l ON l.id = k.license_id",
            " WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND l.disabled = FALSE"
        );
        let hash = hash_key(key);
        let found = on_pool!(self, pool => match sqlx::query(SQL).bind(&hash).fetch_optional(pool).await? {
            Some(r) => Some((ApiKeyAuth { key: rows::api_key(&r)?, license: rows::license(&r)? }, r.text("k_hash")?)),
            None => None,
        });
        Ok(found.and_then(|(auth, stored)| hashes_equal(&stored, &hash).then_some(auth)))
    }

    async fn api_key_active(&self, key_id: &str) -> StoreResult<bool> {
        const SQL: &str = "SELECT k.id FROM api_keys k JOIN licenses l ON l.id = k.license_id \
                           WHERE k.id = $1 AND k.revoked_at IS NULL AND l.disabled = FALSE";
        let found = on_pool!(self, pool => sqlx::query(SQL).bind(key_id).fetch_optional(pool).await?.is_some());
        Ok(found)
    }

    async fn touch_api_key(&self, key_id: &str) -> StoreResult<()> {
        const SQL: &str = "UPDATE api_keys SET last_used_at = $1 WHERE id = $2";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(now_ms())
            .bind(key_id)
            .execute(pool)
            .await?
            .rows_affected());
        if n == 0 {
            return Err(StoreError::NotFound("api key"));
        }
        Ok(())
    }

    // ----- journal -----

    async fn create_journal_entry(
        &self,
        license_id: &str,
        terminal_id: Option<&str>,
        body: &serde_json::Value,
    ) -> StoreResult<JournalEntry> {
        let text = validate::journal_body(body)?;
        if let Some(t) = terminal_id {
            validate::token("terminal id", t)?;
        }
        let now = now_ms();
        let entry = JournalEntry {
            id: keys::new_id("jrn_"),
            license_id: license_id.to_owned(),
            terminal_id: terminal_id.map(str::to_owned),
            created_at: now,
            updated_at: now,
            body: body.clone(),
        };
        const SQL: &str = "INSERT INTO journal_entries (id, license_id, terminal_id, created_at, updated_at, body) \
                           VALUES ($1, $2, $3, $4, $5, $6)";
        let done = on_pool!(self, pool => sqlx::query(SQL)
            .bind(&entry.id)
            .bind(license_id)
            .bind(terminal_id)
            .bind(now)
            .bind(now)
            .bind(&text)
            .execute(pool)
            .await
            .map(|_| ()));
        match done {
            Ok(()) => Ok(entry),
            Err(e) if is_foreign_key_violation(&e) => Err(StoreError::NotFound("license")),
            Err(e) => Err(e.into()),
        }
    }

    async fn journal_entry(&self, license_id: &str, entry_id: &str) -> StoreResult<Option<JournalEntry>> {
        const SQL: &str = concat!(
            "SELECT ",
            journal_cols!(),
            " FROM journal_entries j WHERE j.id = $1 AND j.license_id = $2"
        );
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(entry_id)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .map(|r| rows::journal_entry(&r))
            .transpose())
    }

    async fn list_journal(&self, license_id: &str, filter: &JournalFilter) -> StoreResult<Vec<JournalEntry>> {
        let mut sql = String::from(concat!(
            "SELECT ",
            journal_cols!(),
            " FROM journal_entries j WHERE j.license_id = $1"
        ));
        let mut binds = vec![Bind::Text(license_id.to_owned())];
        // Appends ` AND <column> <op> $n` binding `value` as the next parameter.
        let mut and = |sql: &mut String, condition: &str, value: Bind| {
            binds.push(value);
            sql.push_str(&format!(" AND {condition} ${}", binds.len()));
        };
        match &filter.terminal {
            TerminalFilter::All => {}
            TerminalFilter::Unassigned => sql.push_str(" AND j.terminal_id IS NULL"),
            TerminalFilter::Terminal(id) => and(&mut sql, "j.terminal_id =", Bind::Text(id.clone())),
        }
        if let Some(since) = filter.since {
            and(&mut sql, "j.created_at >=", Bind::Int(since));
        }
        if let Some(until) = filter.until {
            and(&mut sql, "j.created_at <", Bind::Int(until));
        }
        let limit = match filter.limit {
            0 => DEFAULT_JOURNAL_LIMIT,
            n => n.min(MAX_JOURNAL_LIMIT),
        };
        binds.push(Bind::Int(i64::from(limit)));
        binds.push(Bind::Int(i64::from(filter.offset)));
        sql.push_str(&format!(
            " ORDER BY j.created_at DESC, j.seq DESC LIMIT ${} OFFSET ${}",
            binds.len() - 1,
            binds.len()
        ));
        // Only fixed fragments above are spliced in; every value is bound.
        on_pool!(self, pool => {
            let mut query = sqlx::query(AssertSqlSafe(sql.as_str()));
            for bind in &binds {
                query = match bind {
                    Bind::Text(s) => query.bind(s.as_str()),
                    Bind::Int(i) => query.bind(*i),
                };
            }
            query.fetch_all(pool).await?.iter().map(rows::journal_entry).collect()
        })
    }

    async fn update_journal_entry(
        &self,
        license_id: &str,
        entry_id: &str,
        terminal_id: Option<Option<&str>>,
        body: &serde_json::Value,
    ) -> StoreResult<Option<JournalEntry>> {
        let text = validate::journal_body(body)?;
        if let Some(Some(t)) = terminal_id {
            validate::token("terminal id", t)?;
        }
        const UPDATE_BODY: &str =
            "UPDATE journal_entries SET body = $1, updated_at = $2 WHERE id = $3 AND license_id = $4";
        const UPDATE_ALL: &str = "UPDATE journal_entries SET body = $1, updated_at = $2, terminal_id = $5 \
                                  WHERE id = $3 AND license_id = $4";
        const SELECT: &str = concat!(
            "SELECT ",
            journal_cols!(),
            " FROM journal_entries j WHERE j.id = $1 AND j.license_id = $2"
        );
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            let query = match terminal_id {
                None => sqlx::query(UPDATE_BODY),
                Some(_) => sqlx::query(UPDATE_ALL),
            }
            .bind(&text)
            .bind(now_ms())
            .bind(entry_id)
            .bind(license_id);
            let query = match terminal_id {
                None => query,
                Some(t) => query.bind(t),
            };
            if query.execute(&mut *tx).await?.rows_affected() == 0 {
                return Ok(None);
            }
            let row = sqlx::query(SELECT).bind(entry_id).bind(license_id).fetch_one(&mut *tx).await?;
            let entry = rows::journal_entry(&row)?;
            tx.commit().await?;
            Ok(Some(entry))
        })
    }

    async fn delete_journal_entry(&self, license_id: &str, entry_id: &str) -> StoreResult<bool> {
        const SQL: &str = "DELETE FROM journal_entries WHERE id = $1 AND license_id = $2";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(entry_id)
            .bind(license_id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    // ----- prop-firm rules -----

    async fn set_prop_firm_rules(
        &self,
        license_id: &str,
        terminal_id: &str,
        rules: &serde_json::Value,
    ) -> StoreResult<PropFirmRecord> {
        validate::token("terminal id", terminal_id)?;
        let text = serde_json::to_string(rules).map_err(|e| StoreError::Invalid(format!("rules: {e}")))?;
        if text.len() > MAX_PROP_FIRM_RULES_BYTES {
            return Err(StoreError::Invalid(format!(
                "the rule set may be at most {MAX_PROP_FIRM_RULES_BYTES} bytes of JSON"
            )));
        }
        // Replacing a rule set starts its tracking afresh: the mark is cleared.
        const UPSERT: &str = "INSERT INTO prop_firm_rules \
                              (license_id, terminal_id, rules, high_water_mark, created_at, updated_at) \
                              VALUES ($1, $2, $3, NULL, $4, $4) \
                              ON CONFLICT (license_id, terminal_id) DO UPDATE \
                              SET rules = excluded.rules, high_water_mark = NULL, updated_at = excluded.updated_at";
        let select =
            format!("SELECT {PROP_FIRM_COLS} FROM prop_firm_rules p WHERE p.license_id = $1 AND p.terminal_id = $2");
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            // The terminal must be this license's (and stays so while we write).
            lock_terminal!(pool, tx, terminal_id, license_id);
            sqlx::query(UPSERT)
                .bind(license_id)
                .bind(terminal_id)
                .bind(&text)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
            let row = sqlx::query(AssertSqlSafe(select.as_str()))
                .bind(license_id)
                .bind(terminal_id)
                .fetch_one(&mut *tx)
                .await?;
            let record = prop_firm_record(&row)?;
            tx.commit().await?;
            Ok(record)
        })
    }

    async fn prop_firm_rules(&self, license_id: &str, terminal_id: &str) -> StoreResult<Option<PropFirmRecord>> {
        let select =
            format!("SELECT {PROP_FIRM_COLS} FROM prop_firm_rules p WHERE p.license_id = $1 AND p.terminal_id = $2");
        on_pool!(self, pool => sqlx::query(AssertSqlSafe(select.as_str()))
            .bind(license_id)
            .bind(terminal_id)
            .fetch_optional(pool)
            .await?
            .map(|r| prop_firm_record(&r))
            .transpose())
    }

    async fn remove_prop_firm_rules(&self, license_id: &str, terminal_id: &str) -> StoreResult<bool> {
        const SQL: &str = "DELETE FROM prop_firm_rules WHERE license_id = $1 AND terminal_id = $2";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(license_id)
            .bind(terminal_id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    async fn set_news_guard(&self, license_id: &str, config: &serde_json::Value) -> StoreResult<NewsGuardRecord> {
        let text = serde_json::to_string(config).map_err(|e| StoreError::Invalid(format!("news guard: {e}")))?;
        if text.len() > MAX_NEWS_GUARD_BYTES {
            return Err(StoreError::Invalid(format!(
                "the news guard may be at most {MAX_NEWS_GUARD_BYTES} bytes of JSON"
            )));
        }
        const UPSERT: &str = "INSERT INTO news_guards (license_id, config, created_at, updated_at) \
                              VALUES ($1, $2, $3, $3) \
                              ON CONFLICT (license_id) DO UPDATE \
                              SET config = excluded.config, updated_at = excluded.updated_at";
        const SELECT: &str = "SELECT config, created_at, updated_at FROM news_guards WHERE license_id = $1";
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            lock_license!(pool, tx, license_id);
            sqlx::query(UPSERT)
                .bind(license_id)
                .bind(&text)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
            let row = sqlx::query(SELECT).bind(license_id).fetch_one(&mut *tx).await?;
            tx.commit().await?;
            news_guard_record(license_id, &row)
        })
    }

    async fn news_guard(&self, license_id: &str) -> StoreResult<Option<NewsGuardRecord>> {
        const SELECT: &str = "SELECT config, created_at, updated_at FROM news_guards WHERE license_id = $1";
        on_pool!(self, pool => sqlx::query(SELECT)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .map(|r| news_guard_record(license_id, &r))
            .transpose())
    }

    async fn remove_news_guard(&self, license_id: &str) -> StoreResult<bool> {
        const SQL: &str = "DELETE FROM news_guards WHERE license_id = $1";
        let n = on_pool!(self, pool => sqlx::query(SQL).bind(license_id).execute(pool).await?.rows_affected());
        Ok(n == 1)
    }

    async fn swap_state_snapshot(
        &self,
        license_id: &str,
        caller: &str,
        terminal_id: &str,
        snapshot: &serde_json::Value,
        taken_at: i64,
    ) -> StoreResult<Option<StateSnapshot>> {
        validate::token("terminal id", terminal_id)?;
        if caller.is_empty() || caller.len() > 128 {
            return Err(StoreError::Invalid("the caller id must be 1-128 characters".into()));
        }
        let text = serde_json::to_string(snapshot).map_err(|e| StoreError::Invalid(format!("snapshot: {e}")))?;
        if text.len() > MAX_SNAPSHOT_BYTES {
            return Err(StoreError::Invalid(format!(
                "a state snapshot may be at most {MAX_SNAPSHOT_BYTES} bytes of JSON"
            )));
        }
        const SELECT: &str = "SELECT snapshot, taken_at FROM state_snapshots \
                              WHERE license_id = $1 AND caller = $2 AND terminal_id = $3";
        const UPSERT: &str = "INSERT INTO state_snapshots (license_id, caller, terminal_id, snapshot, taken_at) \
                              VALUES ($1, $2, $3, $4, $5) \
                              ON CONFLICT (license_id, caller, terminal_id) DO UPDATE \
                              SET snapshot = excluded.snapshot, taken_at = excluded.taken_at";
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            // The terminal must be this license's; its row lock serializes the
            // swaps of every caller of the terminal.
            lock_terminal!(pool, tx, terminal_id, license_id);
            let before = sqlx::query(SELECT)
                .bind(license_id)
                .bind(caller)
                .bind(terminal_id)
                .fetch_optional(&mut *tx)
                .await?;
            let before = match before {
                Some(r) => Some(StateSnapshot {
                    snapshot: serde_json::from_str(&r.text("snapshot")?)
                        .map_err(|_| StoreError::Database("a stored state snapshot is not valid".to_owned()))?,
                    taken_at: r.int("taken_at")?,
                }),
                None => None,
            };
            sqlx::query(UPSERT)
                .bind(license_id)
                .bind(caller)
                .bind(terminal_id)
                .bind(&text)
                .bind(taken_at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(before)
        })
    }

    async fn raise_prop_firm_high_water_mark(
        &self,
        license_id: &str,
        terminal_id: &str,
        value: f64,
    ) -> StoreResult<Option<f64>> {
        if !value.is_finite() {
            return Err(StoreError::Invalid(
                "the high-water mark must be a finite number".to_owned(),
            ));
        }
        // One statement: concurrent raises keep the highest value.
        const RAISE: &str = "UPDATE prop_firm_rules SET high_water_mark = $1 \
                             WHERE license_id = $2 AND terminal_id = $3 \
                             AND (high_water_mark IS NULL OR high_water_mark < $1)";
        const READ: &str = "SELECT high_water_mark AS p_hwm FROM prop_firm_rules \
                            WHERE license_id = $1 AND terminal_id = $2";
        on_pool!(self, pool => {
            sqlx::query(RAISE).bind(value).bind(license_id).bind(terminal_id).execute(pool).await?;
            match sqlx::query(READ).bind(license_id).bind(terminal_id).fetch_optional(pool).await? {
                Some(r) => Ok(Some(sqlx::Row::try_get::<Option<f64>, _>(&r, "p_hwm")?.unwrap_or(value))),
                None => Ok(None),
            }
        })
    }

    // ----- equity guards -----

    async fn set_equity_guard(
        &self,
        license_id: &str,
        terminal_id: &str,
        source: &str,
        rules: &serde_json::Value,
    ) -> StoreResult<EquityGuardRecord> {
        validate::token("terminal id", terminal_id)?;
        check_guard_source(source)?;
        let text = guard_json(rules, "rules", MAX_EQUITY_GUARD_RULES_BYTES)?;
        // Setting starts afresh: empty state; the version keeps rising so a
        // stale compare-and-swap of the old guard never lands on the new one.
        const UPSERT: &str = "INSERT INTO equity_guards \
                              (license_id, terminal_id, source, rules, state, version, created_at, updated_at) \
                              VALUES ($1, $2, $3, $4, '{}', 1, $5, $5) \
                              ON CONFLICT (license_id, terminal_id, source) DO UPDATE \
                              SET rules = excluded.rules, state = '{}', version = equity_guards.version + 1, \
                              updated_at = excluded.updated_at";
        let select = format!(
            "SELECT {EQUITY_GUARD_COLS} FROM equity_guards WHERE license_id = $1 AND terminal_id = $2 AND source = $3"
        );
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            lock_terminal!(pool, tx, terminal_id, license_id);
            sqlx::query(UPSERT)
                .bind(license_id)
                .bind(terminal_id)
                .bind(source)
                .bind(&text)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
            let row = sqlx::query(AssertSqlSafe(select.as_str()))
                .bind(license_id)
                .bind(terminal_id)
                .bind(source)
                .fetch_one(&mut *tx)
                .await?;
            let record = equity_guard_record(&row)?;
            tx.commit().await?;
            Ok(record)
        })
    }

    async fn equity_guards(&self, license_id: &str, terminal_id: &str) -> StoreResult<Vec<EquityGuardRecord>> {
        let select = format!(
            "SELECT {EQUITY_GUARD_COLS} FROM equity_guards WHERE license_id = $1 AND terminal_id = $2 ORDER BY source"
        );
        on_pool!(self, pool => sqlx::query(AssertSqlSafe(select.as_str()))
            .bind(license_id)
            .bind(terminal_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(equity_guard_record)
            .collect())
    }

    async fn remove_equity_guard(&self, license_id: &str, terminal_id: &str, source: &str) -> StoreResult<bool> {
        const SQL: &str = "DELETE FROM equity_guards WHERE license_id = $1 AND terminal_id = $2 AND source = $3";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(license_id)
            .bind(terminal_id)
            .bind(source)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    async fn update_equity_guard_state(
        &self,
        license_id: &str,
        terminal_id: &str,
        source: &str,
        expected_version: i64,
        state: &serde_json::Value,
    ) -> StoreResult<Option<i64>> {
        let text = guard_json(state, "state", MAX_EQUITY_GUARD_STATE_BYTES)?;
        // One statement: exactly one of two racing writers of a version wins.
        const CAS: &str = "UPDATE equity_guards SET state = $1, version = version + 1, updated_at = $2 \
                           WHERE license_id = $3 AND terminal_id = $4 AND source = $5 AND version = $6";
        let n = on_pool!(self, pool => sqlx::query(CAS)
            .bind(&text)
            .bind(now_ms())
            .bind(license_id)
            .bind(terminal_id)
            .bind(source)
            .bind(expected_version)
            .execute(pool)
            .await?
            .rows_affected());
        Ok((n == 1).then_some(expected_version + 1))
    }

    async fn guarded_terminals(&self) -> StoreResult<Vec<(String, String)>> {
        const SQL: &str = "SELECT DISTINCT license_id, terminal_id FROM equity_guards ORDER BY license_id, terminal_id";
        on_pool!(self, pool => sqlx::query(SQL)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|r| Ok((r.text("license_id")?, r.text("terminal_id")?)))
            .collect())
    }

    // ----- idempotency -----

    async fn idempotency_begin(
        &self,
        license_id: &str,
        key: &str,
        request_hash: &str,
    ) -> StoreResult<IdempotencyBegin> {
        validate::token("idempotency key", key)?;
        validate::token("request hash", request_hash)?;
        // The primary key (license_id, key) decides: exactly one concurrent
        // INSERT creates the row (PostgreSQL makes the others wait for it and
        // then do nothing; SQLite runs them one at a time).
        const CLAIM: &str = "INSERT INTO idempotency (license_id, key, request_hash, created_at) \
                             VALUES ($1, $2, $3, $4) ON CONFLICT (license_id, key) DO NOTHING";
        const READ: &str = "SELECT request_hash AS i_hash, status AS i_status, response AS i_response \
                            FROM idempotency WHERE license_id = $1 AND key = $2";
        // A record purged between the two statements is claimed on the next round.
        for _ in 0..3 {
            let stored = on_pool!(self, pool => {
                let claimed = sqlx::query(CLAIM)
                    .bind(license_id)
                    .bind(key)
                    .bind(request_hash)
                    .bind(now_ms())
                    .execute(pool)
                    .await?
                    .rows_affected()
                    == 1;
                if claimed {
                    return Ok(IdempotencyBegin::Started);
                }
                match sqlx::query(READ).bind(license_id).bind(key).fetch_optional(pool).await? {
                    Some(r) => Some((r.text("i_hash")?, r.opt_int("i_status")?, r.opt_text("i_response")?)),
                    None => None,
                }
            });
            let Some((stored_hash, status, response)) = stored else {
                continue;
            };
            if stored_hash != request_hash {
                return Ok(IdempotencyBegin::Mismatch);
            }
            return Ok(match status {
                None => IdempotencyBegin::InProgress,
                Some(status) => IdempotencyBegin::Done {
                    status: u16::try_from(status)
                        .map_err(|_| StoreError::Database("stored status is not valid".to_owned()))?,
                    response: match response {
                        Some(text) => serde_json::from_str(&text)
                            .map_err(|_| StoreError::Database("stored response is not valid".to_owned()))?,
                        None => serde_json::Value::Null,
                    },
                },
            });
        }
        Err(StoreError::Database("idempotency record kept disappearing".to_owned()))
    }

    async fn idempotency_resume(
        &self,
        license_id: &str,
        key: &str,
        request_hash: &str,
        claimed_before_ms: i64,
    ) -> StoreResult<bool> {
        validate::token("idempotency key", key)?;
        validate::token("request hash", request_hash)?;
        // One statement: the condition on `created_at` makes exactly one of
        // several concurrent takers match the row.
        const RESUME: &str = "UPDATE idempotency SET created_at = $1 \
                              WHERE license_id = $2 AND key = $3 AND request_hash = $4 \
                              AND status IS NULL AND created_at < $5";
        let now = now_ms().max(claimed_before_ms);
        let n = on_pool!(self, pool => sqlx::query(RESUME)
            .bind(now)
            .bind(license_id)
            .bind(key)
            .bind(request_hash)
            .bind(claimed_before_ms)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    async fn idempotency_release(&self, license_id: &str, key: &str) -> StoreResult<()> {
        validate::token("idempotency key", key)?;
        const RELEASE: &str = "DELETE FROM idempotency WHERE license_id = $1 AND key = $2 AND status IS NULL";
        on_pool!(self, pool => {
            sqlx::query(RELEASE).bind(license_id).bind(key).execute(pool).await?;
        });
        Ok(())
    }

    async fn idempotency_finish(
        &self,
        license_id: &str,
        key: &str,
        status: u16,
        response: &serde_json::Value,
    ) -> StoreResult<()> {
        let text = serde_json::to_string(response).map_err(|e| StoreError::Invalid(format!("response: {e}")))?;
        // Only an unfinished record is written: the first outcome stays.
        const FINISH: &str = "UPDATE idempotency SET status = $1, response = $2 \
                              WHERE license_id = $3 AND key = $4 AND status IS NULL";
        const EXISTS: &str = "SELECT key FROM idempotency WHERE license_id = $1 AND key = $2";
        let found = on_pool!(self, pool => {
            let finished = sqlx::query(FINISH)
                .bind(i64::from(status))
                .bind(&text)
                .bind(license_id)
                .bind(key)
                .execute(pool)
                .await?
                .rows_affected()
                == 1;
            finished || sqlx::query(EXISTS).bind(license_id).bind(key).fetch_optional(pool).await?.is_some()
        });
        if !found {
            return Err(StoreError::NotFound("idempotency key"));
        }
        Ok(())
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
}
