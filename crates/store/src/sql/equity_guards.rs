//! Equity guards: rules per (license, terminal, source) with their
//! evaluation state, updated by compare-and-swap on a version.

use sqlx::AssertSqlSafe;

use super::rows::RowExt;
use super::{SqlStore, WritePool, lock_terminal, now_ms, on_pool, validate};
use crate::{EquityGuardRecord, StoreError, StoreResult};

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

pub(super) async fn set_equity_guard(
    store: &SqlStore,
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
    on_pool!(store, pool => {
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

pub(super) async fn equity_guards(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
) -> StoreResult<Vec<EquityGuardRecord>> {
    let select = format!(
        "SELECT {EQUITY_GUARD_COLS} FROM equity_guards WHERE license_id = $1 AND terminal_id = $2 ORDER BY source"
    );
    on_pool!(store, pool => sqlx::query(AssertSqlSafe(select.as_str()))
        .bind(license_id)
        .bind(terminal_id)
        .fetch_all(pool)
        .await?
        .iter()
        .map(equity_guard_record)
        .collect())
}

pub(super) async fn remove_equity_guard(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
    source: &str,
) -> StoreResult<bool> {
    const SQL: &str = "DELETE FROM equity_guards WHERE license_id = $1 AND terminal_id = $2 AND source = $3";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .bind(terminal_id)
        .bind(source)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(n == 1)
}

pub(super) async fn update_equity_guard_state(
    store: &SqlStore,
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
    let n = on_pool!(store, pool => sqlx::query(CAS)
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

pub(super) async fn guarded_terminals(store: &SqlStore) -> StoreResult<Vec<(String, String)>> {
    const SQL: &str = "SELECT DISTINCT license_id, terminal_id FROM equity_guards ORDER BY license_id, terminal_id";
    on_pool!(store, pool => sqlx::query(SQL)
        .fetch_all(pool)
        .await?
        .iter()
        .map(|r| Ok((r.text("license_id")?, r.text("terminal_id")?)))
        .collect())
}
