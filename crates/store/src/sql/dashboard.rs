//! [`SessionStore`] for [`SqlStore`]: the `dashboard_sessions` table
//! (migration 0005), one statement per operation, the same SQL on both
//! backends.

use async_trait::async_trait;

use super::rows::{self, RowExt, license_cols};
use super::{Pool, SqlStore};
use crate::keys::{self, hash_key, hashes_equal};
use crate::session::{DashboardSession, SESSION_TOKEN_PREFIX, SessionStore};
use crate::{Secret, StoreError, StoreResult};

/// Runs `$body` once per backend with `$pool` bound to the native pool.
macro_rules! on_backend {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.pool {
            Pool::Sqlite($pool) => $body,
            Pool::Postgres($pool) => $body,
        }
    };
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_foreign_key_violation())
}

#[async_trait]
impl SessionStore for SqlStore {
    async fn create_dashboard_session(&self, license_id: &str, expires_at: i64) -> StoreResult<Secret> {
        let now = now_ms();
        if expires_at <= now {
            return Err(StoreError::Invalid("a session must expire in the future".to_owned()));
        }
        let token = keys::generate(SESSION_TOKEN_PREFIX);
        let hash = hash_key(token.expose());
        const PURGE: &str = "DELETE FROM dashboard_sessions WHERE expires_at <= $1";
        const INSERT: &str = "INSERT INTO dashboard_sessions (token_hash, license_id, created_at, expires_at) \
                              SELECT $1, id, $3, $4 FROM licenses WHERE id = $2";
        let inserted = on_backend!(self, pool => {
            sqlx::query(PURGE).bind(now).execute(pool).await?;
            sqlx::query(INSERT)
                .bind(&hash)
                .bind(license_id)
                .bind(now)
                .bind(expires_at)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
        });
        match inserted {
            Ok(1) => Ok(token),
            Ok(_) => Err(StoreError::NotFound("license")),
            Err(e) if is_foreign_key_violation(&e) => Err(StoreError::NotFound("license")),
            Err(e) => Err(e.into()),
        }
    }

    async fn dashboard_session(&self, token: &str) -> StoreResult<Option<DashboardSession>> {
        const SQL: &str = concat!(
            "SELECT ",
            license_cols!(),
            ", s.token_hash AS s_hash, s.created_at AS s_created_at, s.expires_at AS s_expires_at \
             FROM dashboard_sessions s JOIN licenses l ON l.id = s.license_id \
             WHERE s.token_hash = $1 AND s.expires_at > $2 AND l.disabled = FALSE"
        );
        let hash = hash_key(token);
        let found = on_backend!(self, pool => match sqlx::query(SQL)
            .bind(&hash)
            .bind(now_ms())
            .fetch_optional(pool)
            .await?
        {
            Some(r) => Some((
                r.text("s_hash")?,
                DashboardSession {
                    license: rows::license(&r)?,
                    created_at: r.int("s_created_at")?,
                    expires_at: r.int("s_expires_at")?,
                },
            )),
            None => None,
        });
        Ok(found.and_then(|(stored, session)| hashes_equal(&stored, &hash).then_some(session)))
    }

    async fn extend_dashboard_session(&self, token: &str, expires_at: i64) -> StoreResult<bool> {
        const SQL: &str = "UPDATE dashboard_sessions SET expires_at = $2 \
                           WHERE token_hash = $1 AND expires_at > $3 AND expires_at < $2";
        let n = on_backend!(self, pool => sqlx::query(SQL)
            .bind(hash_key(token))
            .bind(expires_at)
            .bind(now_ms())
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    async fn end_dashboard_session(&self, token: &str) -> StoreResult<bool> {
        const SQL: &str = "DELETE FROM dashboard_sessions WHERE token_hash = $1";
        let n = on_backend!(self, pool => sqlx::query(SQL)
            .bind(hash_key(token))
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }
}
