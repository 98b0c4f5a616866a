//! State snapshots: what each caller last saw of a terminal, swapped
//! atomically (the base of `get_state_delta`).

use super::rows::RowExt;
use super::{SqlStore, WritePool, lock_terminal, on_pool, validate};
use crate::{StateSnapshot, StoreError, StoreResult};

/// Largest stored state snapshot, bytes of JSON.
const MAX_SNAPSHOT_BYTES: usize = 4 * 1024 * 1024;

pub(super) async fn swap_state_snapshot(
    store: &SqlStore,
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
    on_pool!(store, pool => {
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
