//! REST API keys (`svc_api_…`): creation within the per-license limit,
//! listing, revocation and resolution.

use super::rows::{self, RowExt, api_key_cols, license_cols};
use super::{SqlStore, WritePool, lock_license, now_ms, on_pool, validate};
use crate::keys::{self, API_KEY_PREFIX, hash_key, hashes_equal};
use crate::{ApiKey, ApiKeyAuth, MAX_ACTIVE_API_KEYS, Secret, StoreError, StoreResult};

pub(super) async fn create_api_key(
    store: &SqlStore,
    license_id: &str,
    label: &str,
    permissions: Option<serde_json::Value>,
) -> StoreResult<(ApiKey, Secret)> {
    validate::name("label", label)?;
    let permissions_text = permissions.as_ref().map(serde_json::Value::to_string);
    let secret = keys::generate(API_KEY_PREFIX);
    let hash = hash_key(secret.expose());
    let key = ApiKey {
        id: keys::new_id("key_"),
        license_id: license_id.to_owned(),
        label: label.to_owned(),
        prefix: keys::display_prefix(secret.expose()),
        permissions,
        created_at: now_ms(),
        revoked_at: None,
        last_used_at: None,
        scope_generation: 0,
        scope_changed_at: None,
    };
    const COUNT: &str = "SELECT COUNT(*) AS n FROM api_keys WHERE license_id = $1 AND revoked_at IS NULL";
    const INSERT: &str = "INSERT INTO api_keys (id, license_id, label, prefix, key_hash, created_at, permissions) \
                          VALUES ($1, $2, $3, $4, $5, $6, $7)";
    // Count and insert inside one write transaction that holds the
    // license's lock (see `WritePool`), so concurrent creations on one
    // license run one after another and the limit holds.
    on_pool!(store, pool => {
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
            .bind(&permissions_text)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
    });
    Ok((key, secret))
}

pub(super) async fn list_api_keys(store: &SqlStore, license_id: &str) -> StoreResult<Vec<ApiKey>> {
    const SQL: &str = concat!(
        "SELECT ",
        api_key_cols!(),
        " FROM api_keys k WHERE k.license_id = $1 ORDER BY k.created_at DESC, k.seq DESC"
    );
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .fetch_all(pool)
        .await?
        .iter()
        .map(rows::api_key)
        .collect())
}

pub(super) async fn revoke_api_key(store: &SqlStore, license_id: &str, key_id: &str) -> StoreResult<bool> {
    const SQL: &str = "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND license_id = $3 AND revoked_at IS NULL";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(now_ms())
        .bind(key_id)
        .bind(license_id)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(n == 1)
}

pub(super) async fn api_key(store: &SqlStore, key: &str) -> StoreResult<Option<ApiKeyAuth>> {
    const SQL: &str = concat!(
        "SELECT ",
        api_key_cols!(),
        ", k.key_hash AS k_hash, ",
        license_cols!(),
        " FROM api_keys k JOIN licenses l ON l.id = k.license_id",
        " WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND l.disabled = FALSE"
    );
    let hash = hash_key(key);
    let found = on_pool!(store, pool => match sqlx::query(SQL).bind(&hash).fetch_optional(pool).await? {
        Some(r) => Some((ApiKeyAuth { key: rows::api_key(&r)?, license: rows::license(&r)? }, r.text("k_hash")?)),
        None => None,
    });
    Ok(found.and_then(|(auth, stored)| hashes_equal(&stored, &hash).then_some(auth)))
}

pub(super) async fn api_key_active(store: &SqlStore, key_id: &str) -> StoreResult<bool> {
    Ok(api_key_generation(store, key_id).await?.is_some())
}

pub(super) async fn api_key_generation(store: &SqlStore, key_id: &str) -> StoreResult<Option<u32>> {
    const SQL: &str = "SELECT k.scope_gen AS g FROM api_keys k JOIN licenses l ON l.id = k.license_id \
                       WHERE k.id = $1 AND k.revoked_at IS NULL AND l.disabled = FALSE";
    let found = on_pool!(store, pool => match sqlx::query(SQL).bind(key_id).fetch_optional(pool).await? {
        Some(r) => Some(rows::generation(r.int("g")?)),
        None => None,
    });
    Ok(found)
}

pub(super) async fn set_api_key_scope(
    store: &SqlStore,
    license_id: &str,
    key_id: &str,
    permissions: Option<serde_json::Value>,
) -> StoreResult<Option<ApiKey>> {
    const SQL: &str = "UPDATE api_keys SET permissions = $1, scope_gen = scope_gen + 1, scope_changed_at = $2 \
                       WHERE id = $3 AND license_id = $4 AND revoked_at IS NULL";
    const READ: &str = concat!(
        "SELECT ",
        api_key_cols!(),
        " FROM api_keys k WHERE k.id = $1 AND k.license_id = $2"
    );
    let text = permissions.as_ref().map(serde_json::Value::to_string);
    on_pool!(store, pool => {
        let n = sqlx::query(SQL)
            .bind(&text)
            .bind(now_ms())
            .bind(key_id)
            .bind(license_id)
            .execute(pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Ok(None);
        }
        sqlx::query(READ)
            .bind(key_id)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .map(|r| rows::api_key(&r))
            .transpose()
    })
}

pub(super) async fn touch_api_key(store: &SqlStore, key_id: &str) -> StoreResult<()> {
    const SQL: &str = "UPDATE api_keys SET last_used_at = $1 WHERE id = $2";
    let n = on_pool!(store, pool => sqlx::query(SQL)
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

pub(super) async fn revoked_credentials_since(store: &SqlStore, since_ms: i64) -> StoreResult<Vec<(String, i64)>> {
    // Revoked keys: the record id and the current generation's name (what
    // its latest tokens carry). Keys whose scope changed since: the names
    // of every older generation (`tradeterm_core::scope::credential_mark`).
    const SQL: &str = "SELECT id, revoked_at AS at, scope_gen, CAST(1 AS BIGINT) AS revoked FROM api_keys WHERE revoked_at >= $1 \
                       UNION ALL SELECT id, revoked_at AS at, scope_gen, CAST(1 AS BIGINT) AS revoked FROM terminal_keys WHERE revoked_at >= $1 \
                       UNION ALL SELECT id, scope_changed_at AS at, scope_gen, CAST(0 AS BIGINT) AS revoked FROM api_keys \
                       WHERE scope_changed_at >= $1 AND revoked_at IS NULL \
                       UNION ALL SELECT id, scope_changed_at AS at, scope_gen, CAST(0 AS BIGINT) AS revoked FROM terminal_keys \
                       WHERE scope_changed_at >= $1 AND revoked_at IS NULL";
    let rows: Vec<(String, i64, u32, bool)> = on_pool!(store, pool => sqlx::query(SQL)
        .bind(since_ms)
        .fetch_all(pool)
        .await?
        .iter()
        .map(|r| Ok((r.text("id")?, r.int("at")?, rows::generation(r.int("scope_gen")?), r.int("revoked")? == 1)))
        .collect::<StoreResult<Vec<_>>>()?);
    let mut marks = Vec::new();
    for (id, at, generation, revoked) in rows {
        if revoked {
            if generation > 0 {
                marks.push((tradeterm_core::scope::credential_mark(&id, generation).into_owned(), at));
            }
            marks.push((id, at));
        } else {
            for older in 0..generation {
                marks.push((tradeterm_core::scope::credential_mark(&id, older).into_owned(), at));
            }
        }
    }
    Ok(marks)
}
