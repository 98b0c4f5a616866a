//! Fixtures of the conformance suite: a fresh store on each backend, raw
//! access to its tables, and teardown that runs even when a scenario fails.
//!
//! - SQLite: a database file in a new temporary directory.
//! - PostgreSQL: a new uniquely named schema in the database named by
//!   `TRADETERM_STORE_TEST_PG_URL` (default
//!   `postgres://postgres@127.0.0.1:5432/test`), dropped at the end. An
//!   unreachable server fails the test; it is never skipped.

#![allow(dead_code, reason = "each test binary uses a different part of the support module")]

use std::collections::BTreeMap;
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor, Row};
use tradeterm_store::SqlStore;

/// The PostgreSQL server used when `TRADETERM_STORE_TEST_PG_URL` is unset.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Prefix of the per-test schemas.
const SCHEMA_PREFIX: &str = "tt_store_test_";
/// Schemas of this suite older than this are left over from killed runs and dropped.
const STALE_SCHEMA_MS: i64 = 60 * 60 * 1000;

/// Which backend a fixture runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// A value bound to a raw query.
#[derive(Debug, Clone, Copy)]
pub enum Val<'a> {
    Text(&'a str),
    Int(i64),
}

/// Every table's rows, each cell cast to text, rows sorted: equal snapshots
/// mean nothing changed.
pub type Snapshot = BTreeMap<String, Vec<Vec<Option<String>>>>;

/// Direct access to the store's tables, bypassing the store.
#[derive(Debug, Clone)]
pub enum Raw {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

macro_rules! on_raw {
    ($raw:expr, $pool:ident => $body:expr) => {
        match $raw {
            Raw::Sqlite($pool) => $body,
            Raw::Postgres($pool) => $body,
        }
    };
}

macro_rules! bind_all {
    ($query:expr, $binds:expr) => {{
        let mut q = $query;
        for v in $binds {
            q = match *v {
                Val::Text(s) => q.bind(s.to_owned()),
                Val::Int(i) => q.bind(i),
            };
        }
        q
    }};
}

impl Raw {
    /// Runs a statement and returns the rows affected.
    pub async fn exec(&self, sql: &str, binds: &[Val<'_>]) -> u64 {
        on_raw!(self, pool => bind_all!(sqlx::query(AssertSqlSafe(sql.to_owned())), binds)
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("raw statement failed: {sql}: {e}"))
            .rows_affected())
    }

    /// The first column of every row, cast to text by the query.
    pub async fn texts(&self, sql: &str, binds: &[Val<'_>]) -> Vec<Option<String>> {
        on_raw!(self, pool => bind_all!(sqlx::query(AssertSqlSafe(sql.to_owned())), binds)
            .fetch_all(pool)
            .await
            .unwrap_or_else(|e| panic!("raw query failed: {sql}: {e}"))
            .iter()
            .map(|r| r.try_get::<Option<String>, _>(0).expect("text column"))
            .collect())
    }

    /// A single integer (e.g. `SELECT COUNT(*) …`).
    pub async fn int(&self, sql: &str, binds: &[Val<'_>]) -> i64 {
        on_raw!(self, pool => bind_all!(sqlx::query(AssertSqlSafe(sql.to_owned())), binds)
            .fetch_one(pool)
            .await
            .unwrap_or_else(|e| panic!("raw query failed: {sql}: {e}"))
            .try_get::<i64, _>(0)
            .expect("integer column"))
    }

    /// Marks a license disabled (no store operation does this).
    pub async fn disable_license(&self, license_id: &str) {
        let n = self
            .exec(
                "UPDATE licenses SET disabled = TRUE WHERE id = $1",
                &[Val::Text(license_id)],
            )
            .await;
        assert_eq!(n, 1, "license to disable exists");
    }

    /// The store's tables (not the migrator's or the engine's).
    pub async fn tables(&self) -> Vec<String> {
        let sql = match self {
            Raw::Sqlite(_) => {
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name"
            }
            Raw::Postgres(_) => {
                "SELECT CAST(table_name AS TEXT) FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name <> '_sqlx_migrations' ORDER BY table_name"
            }
        };
        self.texts(sql, &[]).await.into_iter().flatten().collect()
    }

    /// The columns of a table, in order.
    pub async fn columns(&self, table: &str) -> Vec<String> {
        let sql = match self {
            Raw::Sqlite(_) => "SELECT name FROM pragma_table_info($1) ORDER BY cid",
            Raw::Postgres(_) => {
                "SELECT CAST(column_name AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position"
            }
        };
        self.texts(sql, &[Val::Text(table)])
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Every cell of every table, as text.
    pub async fn snapshot(&self) -> Snapshot {
        let mut out = Snapshot::new();
        for table in self.tables().await {
            let columns = self.columns(&table).await;
            let select = columns
                .iter()
                .map(|c| format!("CAST({c} AS TEXT)"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!("SELECT {select} FROM {table}");
            let mut rows: Vec<Vec<Option<String>>> = on_raw!(self, pool => sqlx::query(AssertSqlSafe(sql.clone()))
                .fetch_all(pool)
                .await
                .unwrap_or_else(|e| panic!("raw query failed: {sql}: {e}"))
                .iter()
                .map(|r| (0..columns.len()).map(|i| r.try_get::<Option<String>, _>(i).expect("text cell")).collect())
                .collect());
            rows.sort();
            out.insert(table, rows);
        }
        out
    }

    /// Every cell of every table, flattened.
    pub async fn all_cells(&self) -> Vec<String> {
        self.snapshot()
            .await
            .into_values()
            .flatten()
            .flatten()
            .flatten()
            .collect()
    }

    async fn close(&self) {
        on_raw!(self, pool => pool.close().await);
    }
}

/// A store under test and raw access to the same database.
#[derive(Debug)]
pub struct Fixture {
    pub kind: Kind,
    pub store: SqlStore,
    pub raw: Raw,
    /// The URL the store was opened with (the schema for PostgreSQL is separate).
    pub url: String,
    /// PostgreSQL only: the schema of this test.
    pub schema: Option<String>,
    /// SQLite only: the database file (kept while the fixture lives).
    pub sqlite_path: Option<std::path::PathBuf>,
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    /// A fresh, migrated store on `kind`.
    pub async fn new(kind: Kind) -> Self {
        match kind {
            Kind::Sqlite => Self::sqlite().await,
            Kind::Postgres => Self::postgres().await,
        }
    }

    async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("store.db");
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let store = SqlStore::connect(&url).await.expect("open SQLite store");
        let raw_options = SqliteConnectOptions::new().filename(&path).foreign_keys(true);
        let raw = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(raw_options)
            .await
            .expect("raw SQLite");
        Self {
            kind: Kind::Sqlite,
            store,
            raw: Raw::Sqlite(raw),
            url,
            schema: None,
            sqlite_path: Some(path),
            _dir: Some(dir),
        }
    }

    async fn postgres() -> Self {
        let url = pg_url();
        let mut admin = pg_admin(&url).await;
        drop_stale_schemas(&mut admin).await;
        admin.close().await.expect("close admin connection");
        let schema = unique_schema();
        let store = SqlStore::connect_with_schema(&url, &schema)
            .await
            .expect("open PostgreSQL store");
        let raw_options = PgConnectOptions::from_str(&url)
            .expect("PostgreSQL URL")
            .options([("search_path", &schema)]);
        let raw = PgPoolOptions::new()
            .max_connections(2)
            .connect_with(raw_options)
            .await
            .expect("raw PostgreSQL");
        Self {
            kind: Kind::Postgres,
            store,
            raw: Raw::Postgres(raw),
            url,
            schema: Some(schema),
            sqlite_path: None,
            _dir: None,
        }
    }

    /// Opens another store on the same database (runs the migrations again).
    pub async fn reopen(&self) -> SqlStore {
        match &self.schema {
            None => SqlStore::connect(&self.url).await.expect("reopen SQLite store"),
            Some(schema) => SqlStore::connect_with_schema(&self.url, schema)
                .await
                .expect("reopen PostgreSQL store"),
        }
    }

    async fn teardown(&self) {
        self.store.close().await;
        self.raw.close().await;
        if let Some(schema) = &self.schema {
            let mut admin = pg_admin(&self.url).await;
            admin
                .execute(AssertSqlSafe(format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")))
                .await
                .expect("drop test schema");
            admin.close().await.expect("close admin connection");
        }
    }
}

/// Runs `scenario` on a fresh fixture of `kind` and tears the fixture down
/// whether the scenario passes or panics (the panic is then re-raised).
pub async fn run<F, Fut>(kind: Kind, scenario: F)
where
    F: FnOnce(Arc<Fixture>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let fixture = Arc::new(Fixture::new(kind).await);
    let outcome = tokio::spawn(scenario(Arc::clone(&fixture))).await;
    fixture.teardown().await;
    if let Err(e) = outcome {
        match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("scenario did not finish: {e}"),
        }
    }
}

/// The PostgreSQL URL of the suite.
pub fn pg_url() -> String {
    std::env::var("TRADETERM_STORE_TEST_PG_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_owned())
}

async fn pg_admin(url: &str) -> PgConnection {
    let unreachable = |e: sqlx::Error| -> ! {
        panic!(
            "the PostgreSQL half of the store conformance suite needs a reachable server \
             (TRADETERM_STORE_TEST_PG_URL, default {DEFAULT_PG_URL}); connecting failed: {e}"
        )
    };
    match PgConnection::connect(url).await {
        Ok(conn) => conn,
        // A fresh server without the test database: create it through the
        // maintenance database, then connect again.
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("3D000") => {
            let options = PgConnectOptions::from_str(url).expect("PostgreSQL URL");
            let database = options.get_database().unwrap_or("postgres").to_owned();
            let mut maintenance = options
                .database("postgres")
                .connect()
                .await
                .unwrap_or_else(|e| unreachable(e));
            // A parallel test may create it at the same moment: the retry below decides.
            let _ = maintenance
                .execute(AssertSqlSafe(format!("CREATE DATABASE \"{database}\"")))
                .await;
            let _ = maintenance.close().await;
            PgConnection::connect(url).await.unwrap_or_else(|e| unreachable(e))
        }
        Err(e) => unreachable(e),
    }
}

fn unique_schema() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    format!(
        "{SCHEMA_PREFIX}{}_{}_{}",
        chrono::Utc::now().timestamp_millis(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Drops schemas of this suite left by runs that were killed before their teardown.
async fn drop_stale_schemas(admin: &mut PgConnection) {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT CAST(nspname AS TEXT) FROM pg_namespace WHERE starts_with(nspname, $1)")
            .bind(SCHEMA_PREFIX)
            .fetch_all(&mut *admin)
            .await
            .expect("list test schemas");
    let cutoff = chrono::Utc::now().timestamp_millis() - STALE_SCHEMA_MS;
    for name in names {
        let created = name[SCHEMA_PREFIX.len()..]
            .split('_')
            .next()
            .and_then(|ms| ms.parse::<i64>().ok());
        if created.is_some_and(|ms| ms < cutoff) {
            // Another run may drop it at the same time: ignore failures.
            let _ = admin
                .execute(AssertSqlSafe(format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE")))
                .await;
        }
    }
}
