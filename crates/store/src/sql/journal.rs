//! Journal entries: create, read, filtered listing, update and delete, all
//! scoped to a license.

use sqlx::AssertSqlSafe;

use super::rows::{self, journal_cols};
use super::{SqlStore, WritePool, now_ms, on_pool, validate};
use crate::keys;
use crate::{JournalEntry, JournalFilter, StoreError, StoreResult, TerminalFilter};

/// Journal page size when the filter leaves `limit` at 0.
const DEFAULT_JOURNAL_LIMIT: u32 = 100;
/// Largest journal page, whatever the caller asks.
const MAX_JOURNAL_LIMIT: u32 = 1000;

/// A value bound to a dynamically assembled query.
enum Bind {
    Text(String),
    Int(i64),
}

fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_foreign_key_violation())
}

pub(super) async fn create_journal_entry(
    store: &SqlStore,
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
    let done = on_pool!(store, pool => sqlx::query(SQL)
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

pub(super) async fn journal_entry(
    store: &SqlStore,
    license_id: &str,
    entry_id: &str,
) -> StoreResult<Option<JournalEntry>> {
    const SQL: &str = concat!(
        "SELECT ",
        journal_cols!(),
        " FROM journal_entries j WHERE j.id = $1 AND j.license_id = $2"
    );
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(entry_id)
        .bind(license_id)
        .fetch_optional(pool)
        .await?
        .map(|r| rows::journal_entry(&r))
        .transpose())
}

pub(super) async fn list_journal(
    store: &SqlStore,
    license_id: &str,
    filter: &JournalFilter,
) -> StoreResult<Vec<JournalEntry>> {
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
    on_pool!(store, pool => {
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

pub(super) async fn update_journal_entry(
    store: &SqlStore,
    license_id: &str,
    entry_id: &str,
    terminal_id: Option<Option<&str>>,
    body: &serde_json::Value,
) -> StoreResult<Option<JournalEntry>> {
    let text = validate::journal_body(body)?;
    if let Some(Some(t)) = terminal_id {
        validate::token("terminal id", t)?;
    }
    const UPDATE_BODY: &str = "UPDATE journal_entries SET body = $1, updated_at = $2 WHERE id = $3 AND license_id = $4";
    const UPDATE_ALL: &str = "UPDATE journal_entries SET body = $1, updated_at = $2, terminal_id = $5 \
                              WHERE id = $3 AND license_id = $4";
    const SELECT: &str = concat!(
        "SELECT ",
        journal_cols!(),
        " FROM journal_entries j WHERE j.id = $1 AND j.license_id = $2"
    );
    on_pool!(store, pool => {
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

pub(super) async fn delete_journal_entry(store: &SqlStore, license_id: &str, entry_id: &str) -> StoreResult<bool> {
    const SQL: &str = "DELETE FROM journal_entries WHERE id = $1 AND license_id = $2";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(entry_id)
        .bind(license_id)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(n == 1)
}
