//! Alert rules with their evaluation state (compare-and-swap on a version),
//! their recorded firings, and the executions the gateway records.

use sqlx::AssertSqlSafe;

use super::rows::{RowExt, json_col, json_text};
use super::{SqlStore, WritePool, lock_terminal, now_ms, on_pool, validate};
use crate::keys::new_id;
use crate::{
    AlertEventRecord, AlertRuleRecord, ExecutionRecordRow, MAX_ALERT_RULES_PER_TERMINAL, NewAlertEvent, NewAlertRule,
    StoreError, StoreResult,
};

/// Largest stored condition, label, state, firing or execution, bytes of JSON.
const MAX_CONDITION_BYTES: usize = 16 * 1024;
const MAX_LABEL_CHARS: usize = 200;
const MAX_STATE_BYTES: usize = 64 * 1024;
const MAX_PAYLOAD_BYTES: usize = 16 * 1024;
const MAX_EXECUTION_BYTES: usize = 16 * 1024;

/// Columns of `alert_rules` as [`rule_record`] reads them.
const RULE_COLS: &str =
    "id, license_id, terminal_id, label, condition, once_only, active, state, version, created_at, updated_at";

fn rule_record<R: RowExt>(r: &R) -> StoreResult<AlertRuleRecord> {
    Ok(AlertRuleRecord {
        id: r.text("id")?,
        license_id: r.text("license_id")?,
        terminal_id: r.text("terminal_id")?,
        label: r.text("label")?,
        condition: json_col(r, "condition", "alert condition")?,
        once: r.flag("once_only")?,
        active: r.flag("active")?,
        state: json_col(r, "state", "alert state")?,
        version: r.int("version")?,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
    })
}

pub(super) async fn create_alert_rule(store: &SqlStore, new: &NewAlertRule<'_>) -> StoreResult<AlertRuleRecord> {
    validate::token("terminal id", new.terminal_id)?;
    if new.label.chars().count() > MAX_LABEL_CHARS {
        return Err(StoreError::Invalid(format!(
            "an alert label may be at most {MAX_LABEL_CHARS} characters"
        )));
    }
    let condition = json_text(new.condition, "alert condition", MAX_CONDITION_BYTES)?;
    let now = now_ms();
    let record = AlertRuleRecord {
        id: new_id("alr_"),
        license_id: new.license_id.to_owned(),
        terminal_id: new.terminal_id.to_owned(),
        label: new.label.to_owned(),
        condition: new.condition.clone(),
        once: new.once,
        active: true,
        state: serde_json::json!({}),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    const COUNT: &str = "SELECT COUNT(*) AS n FROM alert_rules WHERE license_id = $1 AND terminal_id = $2";
    const INSERT: &str = "INSERT INTO alert_rules \
                          (id, license_id, terminal_id, label, condition, once_only, active, state, version, \
                          created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, '{}', 1, $8, $8)";
    on_pool!(store, pool => {
        let mut tx = pool.begin_write().await?;
        // The terminal must be the license's; its row lock serializes the
        // count and the insert of rival creators.
        lock_terminal!(pool, tx, new.terminal_id, new.license_id);
        let n = sqlx::query(COUNT)
            .bind(new.license_id)
            .bind(new.terminal_id)
            .fetch_one(&mut *tx)
            .await?
            .int("n")?;
        if n >= MAX_ALERT_RULES_PER_TERMINAL as i64 {
            return Err(StoreError::Invalid(format!(
                "the terminal already has {MAX_ALERT_RULES_PER_TERMINAL} alert rules; remove one first"
            )));
        }
        sqlx::query(INSERT)
            .bind(&record.id)
            .bind(new.license_id)
            .bind(new.terminal_id)
            .bind(new.label)
            .bind(&condition)
            .bind(new.once)
            .bind(true)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(record)
    })
}

pub(super) async fn alert_rules(
    store: &SqlStore,
    license_id: &str,
    terminal_id: Option<&str>,
) -> StoreResult<Vec<AlertRuleRecord>> {
    let select = format!(
        "SELECT {RULE_COLS} FROM alert_rules WHERE license_id = $1 AND ($2 IS NULL OR terminal_id = $2) \
         ORDER BY created_at, id"
    );
    on_pool!(store, pool => sqlx::query(AssertSqlSafe(select.as_str()))
        .bind(license_id)
        .bind(terminal_id)
        .fetch_all(pool)
        .await?
        .iter()
        .map(rule_record)
        .collect())
}

pub(super) async fn active_alert_rules(store: &SqlStore) -> StoreResult<Vec<AlertRuleRecord>> {
    let select = format!("SELECT {RULE_COLS} FROM alert_rules WHERE active = $1 ORDER BY created_at, id");
    on_pool!(store, pool => sqlx::query(AssertSqlSafe(select.as_str()))
        .bind(true)
        .fetch_all(pool)
        .await?
        .iter()
        .map(rule_record)
        .collect())
}

pub(super) async fn remove_alert_rule(store: &SqlStore, license_id: &str, alert_id: &str) -> StoreResult<bool> {
    const SQL: &str = "DELETE FROM alert_rules WHERE license_id = $1 AND id = $2";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .bind(alert_id)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(n == 1)
}

pub(super) async fn record_alert_step(
    store: &SqlStore,
    alert_id: &str,
    expected_version: i64,
    state: &serde_json::Value,
    firings: &[NewAlertEvent],
    deactivate: bool,
) -> StoreResult<Option<i64>> {
    let state_text = json_text(state, "alert state", MAX_STATE_BYTES)?;
    let payloads = firings
        .iter()
        .map(|f| json_text(&f.payload, "alert firing", MAX_PAYLOAD_BYTES))
        .collect::<StoreResult<Vec<_>>>()?;
    const CAS: &str = "UPDATE alert_rules SET state = $1, version = version + 1, updated_at = $2, \
                       active = CASE WHEN $3 THEN $4 ELSE active END \
                       WHERE id = $5 AND version = $6";
    const OWNER: &str = "SELECT license_id, terminal_id FROM alert_rules WHERE id = $1";
    const INSERT: &str = "INSERT INTO alert_events (id, alert_id, license_id, terminal_id, fired_at, payload) \
                          VALUES ($1, $2, $3, $4, $5, $6)";
    on_pool!(store, pool => {
        let mut tx = pool.begin_write().await?;
        // One statement decides: exactly one of two racing writers of a version wins.
        let n = sqlx::query(CAS)
            .bind(&state_text)
            .bind(now_ms())
            .bind(deactivate)
            .bind(false)
            .bind(alert_id)
            .bind(expected_version)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n != 1 {
            tx.rollback().await?;
            return Ok(None);
        }
        if !firings.is_empty() {
            let owner = sqlx::query(OWNER).bind(alert_id).fetch_one(&mut *tx).await?;
            let (license_id, terminal_id) = (owner.text("license_id")?, owner.text("terminal_id")?);
            for (firing, payload) in firings.iter().zip(&payloads) {
                sqlx::query(INSERT)
                    .bind(new_id("alev_"))
                    .bind(alert_id)
                    .bind(&license_id)
                    .bind(&terminal_id)
                    .bind(firing.fired_at)
                    .bind(payload)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(Some(expected_version + 1))
    })
}

pub(super) async fn alert_events(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
    since_ms: i64,
    limit: u32,
) -> StoreResult<Vec<AlertEventRecord>> {
    const SQL: &str = "SELECT id, alert_id, fired_at, payload FROM alert_events \
                       WHERE license_id = $1 AND terminal_id = $2 AND fired_at >= $3 \
                       ORDER BY fired_at, id LIMIT $4";
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .bind(terminal_id)
        .bind(since_ms)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?
        .iter()
        .map(|r| {
            Ok(AlertEventRecord {
                id: r.text("id")?,
                alert_id: r.text("alert_id")?,
                fired_at: r.int("fired_at")?,
                payload: json_col(r, "payload", "alert firing")?,
            })
        })
        .collect())
}

pub(super) async fn record_execution(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
    requested_at: i64,
    record: &serde_json::Value,
) -> StoreResult<()> {
    validate::token("terminal id", terminal_id)?;
    let text = json_text(record, "execution record", MAX_EXECUTION_BYTES)?;
    const SQL: &str = "INSERT INTO executions (id, license_id, terminal_id, requested_at, record) \
                       VALUES ($1, $2, $3, $4, $5)";
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(new_id("exe_"))
        .bind(license_id)
        .bind(terminal_id)
        .bind(requested_at)
        .bind(&text)
        .execute(pool)
        .await
        .map(|_| ())?);
    Ok(())
}

pub(super) async fn executions(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
    from: i64,
    to: i64,
    limit: u32,
) -> StoreResult<Vec<ExecutionRecordRow>> {
    const SQL: &str = "SELECT id, requested_at, record FROM executions \
                       WHERE license_id = $1 AND terminal_id = $2 AND requested_at >= $3 AND requested_at < $4 \
                       ORDER BY requested_at, id LIMIT $5";
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .bind(terminal_id)
        .bind(from)
        .bind(to)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?
        .iter()
        .map(|r| {
            Ok(ExecutionRecordRow {
                id: r.text("id")?,
                requested_at: r.int("requested_at")?,
                record: json_col(r, "record", "execution record")?,
            })
        })
        .collect())
}
