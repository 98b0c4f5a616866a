//! Terminals and terminal keys: creation, key rotation and resolution,
//! binding to an installation fingerprint, and what a connected agent
//! reported.

use super::rows::{self, RowExt, license_cols, terminal_cols, terminal_key_cols};
use super::{SqlStore, WritePool, lock_license, lock_terminal, now_ms, on_pool, validate};
use crate::keys::{self, TERMINAL_KEY_PREFIX, hash_key, hashes_equal};
use crate::{
    BindOutcome, RotatedTerminalKey, Secret, StoreError, StoreResult, Terminal, TerminalInfo, TerminalKey,
    TerminalKeyAuth,
};

pub(super) async fn create_terminal(
    store: &SqlStore,
    license_id: &str,
    name: &str,
    permissions: Option<serde_json::Value>,
) -> StoreResult<(Terminal, Secret)> {
    validate::name("terminal name", name)?;
    let permissions_text = permissions.as_ref().map(serde_json::Value::to_string);
    let secret = keys::generate(TERMINAL_KEY_PREFIX);
    let hash = hash_key(secret.expose());
    let now = now_ms();
    let terminal = Terminal {
        id: keys::new_id("term_"),
        license_id: license_id.to_owned(),
        name: name.to_owned(),
        fingerprint: None,
        bound_at: None,
        created_at: now,
        last_seen: None,
        info: None,
    };
    let key_id = keys::new_id("tkey_");
    const INSERT_TERMINAL: &str = "INSERT INTO terminals (id, license_id, name, created_at) VALUES ($1, $2, $3, $4)";
    const INSERT_KEY: &str = "INSERT INTO terminal_keys (id, license_id, terminal_id, key_hash, created_at, permissions) \
                              VALUES ($1, $2, $3, $4, $5, $6)";
    on_pool!(store, pool => {
        let mut tx = pool.begin_write().await?;
        lock_license!(pool, tx, license_id);
        sqlx::query(INSERT_TERMINAL)
            .bind(&terminal.id)
            .bind(license_id)
            .bind(name)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(INSERT_KEY)
            .bind(&key_id)
            .bind(license_id)
            .bind(&terminal.id)
            .bind(&hash)
            .bind(now)
            .bind(&permissions_text)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
    });
    Ok((terminal, secret))
}

/// `scope`: `None` keeps the old key's scope for the new key, `Some` sets it.
pub(super) async fn rotate_terminal_key(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
    scope: Option<Option<serde_json::Value>>,
) -> StoreResult<RotatedTerminalKey> {
    let secret = keys::generate(TERMINAL_KEY_PREFIX);
    let hash = hash_key(secret.expose());
    let key_id = keys::new_id("tkey_");
    let now = now_ms();
    const ACTIVE: &str =
        "SELECT id, scope_gen, permissions FROM terminal_keys WHERE terminal_id = $1 AND revoked_at IS NULL";
    const REVOKE: &str = "UPDATE terminal_keys SET revoked_at = $1 WHERE terminal_id = $2 AND revoked_at IS NULL";
    const INSERT_KEY: &str = "INSERT INTO terminal_keys (id, license_id, terminal_id, key_hash, created_at, permissions) \
                              VALUES ($1, $2, $3, $4, $5, $6)";
    let (revoked, permissions) = on_pool!(store, pool => {
        let mut tx = pool.begin_write().await?;
        lock_terminal!(pool, tx, terminal_id, license_id);
        // The terminal row is locked: no other rotation can change its keys
        // between this read and the update.
        let mut revoked: Vec<(String, u32)> = Vec::new();
        let mut kept: Option<String> = None;
        for r in sqlx::query(ACTIVE).bind(terminal_id).fetch_all(&mut *tx).await? {
            revoked.push((r.text("id")?, rows::generation(r.int("scope_gen")?)));
            kept = r.opt_text("permissions")?.or(kept);
        }
        // The new key keeps the old key's scope unless the rotation gives one.
        let permissions = match &scope {
            Some(given) => given.as_ref().map(serde_json::Value::to_string),
            None => kept,
        };
        sqlx::query(REVOKE).bind(now).bind(terminal_id).execute(&mut *tx).await?;
        sqlx::query(INSERT_KEY)
            .bind(&key_id)
            .bind(license_id)
            .bind(terminal_id)
            .bind(&hash)
            .bind(now)
            .bind(&permissions)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        (revoked, permissions)
    });
    let permissions = permissions
        .map(|p| serde_json::from_str(&p).map_err(|e| StoreError::Database(format!("stored permissions: {e}"))))
        .transpose()?;
    Ok(RotatedTerminalKey {
        key: secret,
        revoked_key_ids: revoked.iter().map(|(id, _)| id.clone()).collect(),
        revoked_generations: revoked.iter().map(|(_, g)| *g).collect(),
        record: TerminalKey {
            id: key_id.clone(),
            license_id: license_id.to_owned(),
            terminal_id: terminal_id.to_owned(),
            permissions,
            scope_generation: 0,
            scope_changed_at: None,
            created_at: now,
            revoked_at: None,
        },
        key_id,
    })
}

pub(super) async fn terminal_key_active(store: &SqlStore, key_id: &str) -> StoreResult<bool> {
    Ok(terminal_key_generation(store, key_id).await?.is_some())
}

pub(super) async fn terminal_key_generation(store: &SqlStore, key_id: &str) -> StoreResult<Option<u32>> {
    const SQL: &str = "SELECT k.scope_gen AS g FROM terminal_keys k JOIN licenses l ON l.id = k.license_id \
                       WHERE k.id = $1 AND k.revoked_at IS NULL AND l.disabled = FALSE";
    let found = on_pool!(store, pool => match sqlx::query(SQL).bind(key_id).fetch_optional(pool).await? {
        Some(r) => Some(rows::generation(r.int("g")?)),
        None => None,
    });
    Ok(found)
}

pub(super) async fn terminal_key_record(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
) -> StoreResult<Option<TerminalKey>> {
    const SQL: &str = concat!(
        "SELECT ",
        terminal_key_cols!(),
        " FROM terminal_keys tk WHERE tk.terminal_id = $1 AND tk.license_id = $2 AND tk.revoked_at IS NULL"
    );
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(terminal_id)
        .bind(license_id)
        .fetch_optional(pool)
        .await?
        .map(|r| rows::terminal_key(&r))
        .transpose())
}

pub(super) async fn set_terminal_key_scope(
    store: &SqlStore,
    license_id: &str,
    terminal_id: &str,
    permissions: Option<serde_json::Value>,
) -> StoreResult<Option<TerminalKey>> {
    const SQL: &str = "UPDATE terminal_keys SET permissions = $1, scope_gen = scope_gen + 1, scope_changed_at = $2 \
                       WHERE terminal_id = $3 AND license_id = $4 AND revoked_at IS NULL";
    let text = permissions.as_ref().map(serde_json::Value::to_string);
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(&text)
        .bind(now_ms())
        .bind(terminal_id)
        .bind(license_id)
        .execute(pool)
        .await?
        .rows_affected());
    if n == 0 {
        return Ok(None);
    }
    terminal_key_record(store, license_id, terminal_id).await
}

pub(super) async fn terminal_key(store: &SqlStore, key: &str) -> StoreResult<Option<TerminalKeyAuth>> {
    const SQL: &str = concat!(
        "SELECT tk.id AS tk_id, tk.key_hash AS tk_hash, tk.permissions AS tk_permissions, tk.scope_gen AS tk_scope_gen, ",
        terminal_cols!(),
        ", ",
        license_cols!(),
        " FROM terminal_keys tk",
        " JOIN terminals t ON t.id = tk.terminal_id AND t.license_id = tk.license_id",
        " JOIN licenses l ON l.id = tk.license_id",
        " WHERE tk.key_hash = $1 AND tk.revoked_at IS NULL AND l.disabled = FALSE"
    );
    let hash = hash_key(key);
    let found = on_pool!(store, pool => match sqlx::query(SQL).bind(&hash).fetch_optional(pool).await? {
        Some(r) => Some((
            TerminalKeyAuth {
                key_id: r.text("tk_id")?,
                permissions: r
                    .opt_text("tk_permissions")?
                    .map(|p| serde_json::from_str(&p))
                    .transpose()
                    .map_err(|e| StoreError::Database(format!("stored permissions: {e}")))?,
                scope_generation: rows::generation(r.int("tk_scope_gen")?),
                terminal: rows::terminal(&r)?,
                license: rows::license(&r)?,
            },
            r.text("tk_hash")?,
        )),
        None => None,
    });
    Ok(found.and_then(|(auth, stored)| hashes_equal(&stored, &hash).then_some(auth)))
}

pub(super) async fn bind_terminal(store: &SqlStore, terminal_id: &str, fingerprint: &str) -> StoreResult<BindOutcome> {
    validate::token("fingerprint", fingerprint)?;
    // One conditional UPDATE claims an unbound terminal. Both backends
    // serialize writers of the row (SQLite: one writer at a time;
    // PostgreSQL: the row lock, then the WHERE is re-checked against the
    // committed row), so exactly one concurrent caller changes it.
    const CLAIM: &str = "UPDATE terminals SET fingerprint = $1, bound_at = $2 WHERE id = $3 AND fingerprint IS NULL";
    const CURRENT: &str = "SELECT fingerprint AS t_fingerprint FROM terminals WHERE id = $1";
    let (claimed, current) = on_pool!(store, pool => {
        let claimed = sqlx::query(CLAIM)
            .bind(fingerprint)
            .bind(now_ms())
            .bind(terminal_id)
            .execute(pool)
            .await?
            .rows_affected()
            == 1;
        let current = if claimed {
            None
        } else {
            match sqlx::query(CURRENT).bind(terminal_id).fetch_optional(pool).await? {
                Some(r) => Some(r.opt_text("t_fingerprint")?),
                None => return Err(StoreError::NotFound("terminal")),
            }
        };
        (claimed, current)
    });
    Ok(match (claimed, current) {
        (true, _) => BindOutcome::Bound,
        (false, Some(Some(bound))) if bound == fingerprint => BindOutcome::AlreadyBound,
        (false, Some(Some(_))) => BindOutcome::Conflict,
        // No operation unbinds a terminal, so a failed claim always finds a fingerprint.
        (false, _) => {
            return Err(StoreError::Database("terminal binding changed concurrently".to_owned()));
        }
    })
}

pub(super) async fn update_terminal_info(store: &SqlStore, terminal_id: &str, info: &TerminalInfo) -> StoreResult<()> {
    let account_login = validate::terminal_info(info)?;
    const SQL: &str = "UPDATE terminals SET platform = $1, build = $2, account_login = $3, account_server = $4, \
                       account_currency = $5, trade_mode = $6, last_seen = $7 WHERE id = $8";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(&info.platform)
        .bind(i64::from(info.build))
        .bind(account_login)
        .bind(&info.account_server)
        .bind(&info.account_currency)
        .bind(&info.trade_mode)
        .bind(now_ms())
        .bind(terminal_id)
        .execute(pool)
        .await?
        .rows_affected());
    if n == 0 {
        return Err(StoreError::NotFound("terminal"));
    }
    Ok(())
}

pub(super) async fn touch_terminal(store: &SqlStore, terminal_id: &str) -> StoreResult<()> {
    const SQL: &str = "UPDATE terminals SET last_seen = $1 WHERE id = $2";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(now_ms())
        .bind(terminal_id)
        .execute(pool)
        .await?
        .rows_affected());
    if n == 0 {
        return Err(StoreError::NotFound("terminal"));
    }
    Ok(())
}

/// Ids per `UPDATE … WHERE id IN (…)` of [`touch_terminals`] (well under
/// SQLite's and PostgreSQL's limits on bound parameters).
const TOUCH_CHUNK: usize = 500;

pub(super) async fn touch_terminals(store: &SqlStore, terminal_ids: &[String]) -> StoreResult<u64> {
    let now = now_ms();
    let mut updated = 0;
    for chunk in terminal_ids.chunks(TOUCH_CHUNK) {
        let placeholders: Vec<String> = (2..chunk.len() + 2).map(|i| format!("${i}")).collect();
        let sql = format!(
            "UPDATE terminals SET last_seen = $1 WHERE id IN ({})",
            placeholders.join(", ")
        );
        updated += on_pool!(store, pool => {
            // Only numbered placeholders are formatted in; the ids are bound.
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.as_str())).bind(now);
            for id in chunk {
                q = q.bind(id);
            }
            q.execute(pool).await?.rows_affected()
        });
    }
    Ok(updated)
}

pub(super) async fn terminal(store: &SqlStore, license_id: &str, terminal_id: &str) -> StoreResult<Option<Terminal>> {
    const SQL: &str = concat!(
        "SELECT ",
        terminal_cols!(),
        " FROM terminals t WHERE t.id = $1 AND t.license_id = $2"
    );
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(terminal_id)
        .bind(license_id)
        .fetch_optional(pool)
        .await?
        .map(|r| rows::terminal(&r))
        .transpose())
}

pub(super) async fn list_terminals(store: &SqlStore, license_id: &str) -> StoreResult<Vec<Terminal>> {
    const SQL: &str = concat!(
        "SELECT ",
        terminal_cols!(),
        " FROM terminals t WHERE t.license_id = $1 ORDER BY t.created_at, t.seq"
    );
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .fetch_all(pool)
        .await?
        .iter()
        .map(rows::terminal)
        .collect())
}
