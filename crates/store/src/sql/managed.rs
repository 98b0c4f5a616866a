//! [`ManagedStore`] for [`SqlStore`]: the `managed_orders` table (migration
//! 0008), the same SQL on both backends.
//!
//! **Claims.** One `UPDATE` renews the caller's leases and takes lapsed ones;
//! on PostgreSQL a rival `UPDATE` of the same row waits for the first to
//! commit and then re-checks the `WHERE` against the new row (owner and
//! lease just written), so two claimers never both take a rule; SQLite runs
//! one writer at a time. The held rules are then read back by owner.

use async_trait::async_trait;
use sqlx::AssertSqlSafe;

use super::rows::{RowExt, json_col, json_text};
use super::{SqlStore, WritePool, lock_terminal, now_ms, on_pool, validate};
use crate::keys::new_id;
use crate::managed::{
    MAX_MANAGED_PER_TERMINAL, ManagedOrderRecord, ManagedStatus, ManagedStep, ManagedStore, NewManagedOrder,
};
use crate::{StoreError, StoreResult};

const MAX_SPEC_BYTES: usize = 16 * 1024;
const MAX_STATE_BYTES: usize = 64 * 1024;
const MAX_CALLER_BYTES: usize = 4 * 1024;
const MAX_LABEL_CHARS: usize = 200;
const MAX_REASON_CHARS: usize = 200;

const COLS: &str = "id, license_id, terminal_id, kind, label, spec, state, caller, dry_run, status, ended_reason, \
                    version, owner, lease_until, created_at, updated_at";

fn record<R: RowExt>(r: &R) -> StoreResult<ManagedOrderRecord> {
    let status = r.text("status")?;
    Ok(ManagedOrderRecord {
        id: r.text("id")?,
        license_id: r.text("license_id")?,
        terminal_id: r.text("terminal_id")?,
        kind: r.text("kind")?,
        label: r.text("label")?,
        spec: json_col(r, "spec", "managed order spec")?,
        state: json_col(r, "state", "managed order state")?,
        caller: json_col(r, "caller", "managed order caller")?,
        dry_run: r.flag("dry_run")?,
        status: ManagedStatus::parse(&status)
            .ok_or_else(|| StoreError::Database(format!("unknown managed order status {status:?}")))?,
        ended_reason: r.opt_text("ended_reason")?,
        version: r.int("version")?,
        owner: r.opt_text("owner")?,
        lease_until: r.opt_int("lease_until")?,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
    })
}

fn check_text(what: &str, s: &str, max: usize) -> StoreResult<()> {
    if s.chars().count() > max || s.chars().any(char::is_control) {
        return Err(StoreError::Invalid(format!(
            "a managed order's {what} may be at most {max} characters, without control characters"
        )));
    }
    Ok(())
}

#[async_trait]
impl ManagedStore for SqlStore {
    async fn create_managed_order(&self, new: &NewManagedOrder<'_>) -> StoreResult<ManagedOrderRecord> {
        validate::token("terminal id", new.terminal_id)?;
        check_text("label", new.label, MAX_LABEL_CHARS)?;
        check_text("kind", new.kind, 32)?;
        let spec = json_text(new.spec, "managed order spec", MAX_SPEC_BYTES)?;
        let state = json_text(new.state, "managed order state", MAX_STATE_BYTES)?;
        let caller = json_text(new.caller, "managed order caller", MAX_CALLER_BYTES)?;
        let now = now_ms();
        let rec = ManagedOrderRecord {
            id: new_id("mxo_"),
            license_id: new.license_id.to_owned(),
            terminal_id: new.terminal_id.to_owned(),
            kind: new.kind.to_owned(),
            label: new.label.to_owned(),
            spec: new.spec.clone(),
            state: new.state.clone(),
            caller: new.caller.clone(),
            dry_run: new.dry_run,
            status: ManagedStatus::Active,
            ended_reason: None,
            version: 1,
            owner: None,
            lease_until: None,
            created_at: now,
            updated_at: now,
        };
        const COUNT: &str =
            "SELECT COUNT(*) AS n FROM managed_orders WHERE license_id = $1 AND terminal_id = $2 AND status <> 'ended'";
        const INSERT: &str = "INSERT INTO managed_orders (id, license_id, terminal_id, kind, label, spec, state, \
                              caller, dry_run, status, version, created_at, updated_at) \
                              VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'active', 1, $10, $10)";
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            lock_terminal!(pool, tx, new.terminal_id, new.license_id);
            let n = sqlx::query(COUNT)
                .bind(new.license_id)
                .bind(new.terminal_id)
                .fetch_one(&mut *tx)
                .await?
                .int("n")?;
            if n >= MAX_MANAGED_PER_TERMINAL as i64 {
                return Err(StoreError::Invalid(format!(
                    "the terminal already has {MAX_MANAGED_PER_TERMINAL} managed orders that have not ended; remove one first"
                )));
            }
            sqlx::query(INSERT)
                .bind(&rec.id)
                .bind(new.license_id)
                .bind(new.terminal_id)
                .bind(new.kind)
                .bind(new.label)
                .bind(&spec)
                .bind(&state)
                .bind(&caller)
                .bind(new.dry_run)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(rec)
        })
    }

    async fn managed_orders(
        &self,
        license_id: &str,
        terminal_id: Option<&str>,
        include_ended: bool,
    ) -> StoreResult<Vec<ManagedOrderRecord>> {
        let select = format!(
            "SELECT {COLS} FROM managed_orders WHERE license_id = $1 AND ($2 IS NULL OR terminal_id = $2) \
             AND ($3 OR status <> 'ended') ORDER BY created_at, id"
        );
        on_pool!(self, pool => sqlx::query(AssertSqlSafe(select.as_str()))
            .bind(license_id)
            .bind(terminal_id)
            .bind(include_ended)
            .fetch_all(pool)
            .await?
            .iter()
            .map(record)
            .collect())
    }

    async fn managed_order(&self, license_id: &str, id: &str) -> StoreResult<Option<ManagedOrderRecord>> {
        let select = format!("SELECT {COLS} FROM managed_orders WHERE license_id = $1 AND id = $2");
        on_pool!(self, pool => sqlx::query(AssertSqlSafe(select.as_str()))
            .bind(license_id)
            .bind(id)
            .fetch_optional(pool)
            .await?
            .as_ref()
            .map(record)
            .transpose())
    }

    async fn end_managed_order(
        &self,
        license_id: &str,
        id: &str,
        reason: &str,
    ) -> StoreResult<Option<ManagedOrderRecord>> {
        check_text("reason", reason, MAX_REASON_CHARS)?;
        const END: &str = "UPDATE managed_orders SET status = 'ended', ended_reason = $1, version = version + 1, \
                           updated_at = $2 WHERE license_id = $3 AND id = $4 AND status <> 'ended'";
        let n = on_pool!(self, pool => sqlx::query(END)
            .bind(reason)
            .bind(now_ms())
            .bind(license_id)
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected());
        if n != 1 {
            return Ok(None);
        }
        self.managed_order(license_id, id).await
    }

    async fn claim_managed_orders(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until: i64,
    ) -> StoreResult<Vec<ManagedOrderRecord>> {
        const CLAIM: &str = "UPDATE managed_orders SET owner = $1, lease_until = $2 WHERE status <> 'ended' \
                             AND (owner IS NULL OR owner = $1 OR lease_until IS NULL OR lease_until < $3)";
        let select = format!(
            "SELECT {COLS} FROM managed_orders WHERE owner = $1 AND lease_until = $2 AND status <> 'ended' \
             ORDER BY created_at, id"
        );
        on_pool!(self, pool => {
            sqlx::query(CLAIM)
                .bind(owner)
                .bind(lease_until)
                .bind(now_ms)
                .execute(pool)
                .await?;
            sqlx::query(AssertSqlSafe(select.as_str()))
                .bind(owner)
                .bind(lease_until)
                .fetch_all(pool)
                .await?
                .iter()
                .map(record)
                .collect()
        })
    }

    async fn release_managed_orders(&self, owner: &str) -> StoreResult<u64> {
        const RELEASE: &str = "UPDATE managed_orders SET owner = NULL, lease_until = NULL WHERE owner = $1";
        Ok(on_pool!(self, pool => sqlx::query(RELEASE)
            .bind(owner)
            .execute(pool)
            .await?
            .rows_affected()))
    }

    async fn record_managed_step(&self, step: &ManagedStep<'_>) -> StoreResult<Option<i64>> {
        let state = json_text(step.state, "managed order state", MAX_STATE_BYTES)?;
        if let Some(r) = step.ended_reason {
            check_text("reason", r, MAX_REASON_CHARS)?;
        }
        const CAS: &str = "UPDATE managed_orders SET state = $1, status = $2, ended_reason = $3, \
                           version = version + 1, updated_at = $4 \
                           WHERE id = $5 AND version = $6 AND owner = $7 AND status <> 'ended'";
        let n = on_pool!(self, pool => sqlx::query(CAS)
            .bind(&state)
            .bind(step.status.as_str())
            .bind(step.ended_reason)
            .bind(now_ms())
            .bind(step.id)
            .bind(step.expected_version)
            .bind(step.owner)
            .execute(pool)
            .await?
            .rows_affected());
        Ok((n == 1).then_some(step.expected_version + 1))
    }
}
