//! Idempotency records: claim, resume, release and finish a request by its
//! key, and purge old records.

use super::rows::RowExt;
use super::{SqlStore, now_ms, on_pool, validate};
use crate::{IdempotencyBegin, StoreError, StoreResult};

impl SqlStore {
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
}

pub(super) async fn idempotency_begin(
    store: &SqlStore,
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
        let stored = on_pool!(store, pool => {
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

pub(super) async fn idempotency_resume(
    store: &SqlStore,
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
    let n = on_pool!(store, pool => sqlx::query(RESUME)
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

pub(super) async fn idempotency_release(store: &SqlStore, license_id: &str, key: &str) -> StoreResult<()> {
    validate::token("idempotency key", key)?;
    const RELEASE: &str = "DELETE FROM idempotency WHERE license_id = $1 AND key = $2 AND status IS NULL";
    on_pool!(store, pool => {
        sqlx::query(RELEASE).bind(license_id).bind(key).execute(pool).await?;
    });
    Ok(())
}

pub(super) async fn idempotency_finish(
    store: &SqlStore,
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
    let found = on_pool!(store, pool => {
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
