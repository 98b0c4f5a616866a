//! Prop-firm rule sets (one per terminal of a license) and their
//! high-water mark.

use sqlx::AssertSqlSafe;

use super::rows::RowExt;
use super::{SqlStore, WritePool, lock_terminal, now_ms, on_pool, validate};
use crate::{PropFirmRecord, StoreError, StoreResult};

/// Largest stored prop-firm rule set, bytes of JSON.
const MAX_PROP_FIRM_RULES_BYTES: usize = 16 * 1024;

/// Prop-firm columns of `prop_firm_rules p`.
const PROP_FIRM_COLS: &str = "p.license_id AS p_license_id, p.terminal_id AS p_terminal_id, p.rules AS p_rules, \
                              p.high_water_mark AS p_hwm, p.created_at AS p_created_at, p.updated_at AS p_updated_at";

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

pub(super) async fn set_prop_firm_rules(
    store: &SqlStore,
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
    on_pool!(store, pool => {
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

pub(super) async fn prop_firm_rules(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
) -> StoreResult<Option<PropFirmRecord>> {
    let select =
        format!("SELECT {PROP_FIRM_COLS} FROM prop_firm_rules p WHERE p.license_id = $1 AND p.terminal_id = $2");
    on_pool!(store, pool => sqlx::query(AssertSqlSafe(select.as_str()))
        .bind(license_id)
        .bind(terminal_id)
        .fetch_optional(pool)
        .await?
        .map(|r| prop_firm_record(&r))
        .transpose())
}

pub(super) async fn remove_prop_firm_rules(store: &SqlStore, license_id: &str, terminal_id: &str) -> StoreResult<bool> {
    const SQL: &str = "DELETE FROM prop_firm_rules WHERE license_id = $1 AND terminal_id = $2";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .bind(terminal_id)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(n == 1)
}

pub(super) async fn raise_prop_firm_high_water_mark(
    store: &SqlStore,
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
    on_pool!(store, pool => {
        sqlx::query(RAISE).bind(value).bind(license_id).bind(terminal_id).execute(pool).await?;
        match sqlx::query(READ).bind(license_id).bind(terminal_id).fetch_optional(pool).await? {
            Some(r) => Ok(Some(sqlx::Row::try_get::<Option<f64>, _>(&r, "p_hwm")?.unwrap_or(value))),
            None => Ok(None),
        }
    })
}
