//! The news guard: one configuration per license.

use super::rows::RowExt;
use super::{SqlStore, WritePool, lock_license, now_ms, on_pool};
use crate::{NewsGuardRecord, StoreError, StoreResult};

/// Largest stored news-guard configuration, bytes of JSON.
const MAX_NEWS_GUARD_BYTES: usize = 16 * 1024;

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

pub(super) async fn set_news_guard(
    store: &SqlStore,
    license_id: &str,
    config: &serde_json::Value,
) -> StoreResult<NewsGuardRecord> {
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
    on_pool!(store, pool => {
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

pub(super) async fn news_guard(store: &SqlStore, license_id: &str) -> StoreResult<Option<NewsGuardRecord>> {
    const SELECT: &str = "SELECT config, created_at, updated_at FROM news_guards WHERE license_id = $1";
    on_pool!(store, pool => sqlx::query(SELECT)
        .bind(license_id)
        .fetch_optional(pool)
        .await?
        .map(|r| news_guard_record(license_id, &r))
        .transpose())
}

pub(super) async fn remove_news_guard(store: &SqlStore, license_id: &str) -> StoreResult<bool> {
    const SQL: &str = "DELETE FROM news_guards WHERE license_id = $1";
    let n = on_pool!(store, pool => sqlx::query(SQL).bind(license_id).execute(pool).await?.rows_affected());
    Ok(n == 1)
}

pub(super) async fn all_news_guards(store: &SqlStore) -> StoreResult<Vec<NewsGuardRecord>> {
    const SELECT: &str = "SELECT g.license_id, g.config, g.created_at, g.updated_at FROM news_guards g \
                          JOIN licenses l ON l.id = g.license_id WHERE l.disabled = $1 ORDER BY g.license_id";
    on_pool!(store, pool => {
        let rows = sqlx::query(SELECT).bind(false).fetch_all(pool).await?;
        rows.iter()
            .map(|r| news_guard_record(&r.text("license_id")?, r))
            .collect()
    })
}
