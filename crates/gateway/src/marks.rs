//! Revocation marks that outlive a Redis restarting empty.
//!
//! A revoked API key or rotated terminal key is marked in Redis
//! (`tt:revoked:{credential}`, 24 h) so that every REST and MCP instance
//! refuses it at once. A Redis that restarts without persistence forgets
//! those marks, and instances would accept a revoked credential's cached
//! grant again. So every gateway checks, every [`CHECK_EVERY`], that Redis
//! still holds the marker [`READY_KEY`]; when it does not (Redis came back
//! empty, or the deployment starts for the first time) the gateway writes
//! the marks of every credential the store says was revoked in the last
//! 24 hours again, each with the time it has left, then the marker.

use std::sync::Arc;
use std::time::Duration;

use deadpool_redis::redis;
use tradeterm_store::Store;

use crate::Inner;

/// Present while Redis holds the revocation marks the gateways wrote.
pub(crate) const READY_KEY: &str = "tt:marks:ready";
/// How often a gateway checks [`READY_KEY`].
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(2);
/// Life of a revocation mark, from the revocation, ms.
const MARK_LIFE_MS: i64 = tradeterm_protocol::dispatch::REVOCATION_MARK_SECS as i64 * 1000;

/// Starts the check, for as long as the gateway lives (with Redis only).
pub(crate) fn spawn_keeper(inner: &Arc<Inner>) {
    if inner.settings.redis.is_none() {
        return;
    }
    crate::spawn_round(inner, "revocation marks", CHECK_EVERY, async |inner| {
        let Some(pool) = &inner.settings.redis else { return };
        match restore(pool, inner.store.as_ref(), READY_KEY).await {
            Ok(Some(n)) => tracing::info!(
                marks = n,
                "Redis held no revocation marks: written again from the store"
            ),
            Ok(None) => {}
            Err(e) => tracing::debug!(error = %e, "revocation marks not checked"),
        }
    });
}

/// One check against the marker `ready_key`: `Some(marks written)` when
/// the marks had to be restored, `None` when Redis still had them.
///
/// # Errors
/// Redis or the store failed (the next check tries again).
pub(crate) async fn restore(
    pool: &deadpool_redis::Pool,
    store: &dyn Store,
    ready_key: &str,
) -> Result<Option<usize>, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    let ready: bool = redis::cmd("EXISTS")
        .arg(ready_key)
        .query_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if ready {
        return Ok(None);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let revoked = store
        .revoked_credentials_since(now - MARK_LIFE_MS)
        .await
        .map_err(|e| e.to_string())?;
    let mut pipe = redis::pipe();
    for (id, at) in &revoked {
        let left_s = ((at + MARK_LIFE_MS - now) / 1000).max(1);
        pipe.cmd("SET")
            .arg(tradeterm_protocol::dispatch::revocation_key(id))
            .arg(1)
            .arg("EX")
            .arg(left_s)
            .ignore();
    }
    pipe.cmd("SET").arg(ready_key).arg(now).ignore();
    pipe.query_async::<()>(&mut conn).await.map_err(|e| e.to_string())?;
    Ok(Some(revoked.len()))
}

#[cfg(test)]
mod tests {
    use tradeterm_store::{SqlStore, Tier};

    use super::*;

    #[tokio::test]
    async fn marks_are_written_again_when_redis_comes_back_empty() {
        let store = SqlStore::connect("sqlite::memory:").await.unwrap();
        let pool = deadpool_redis::Config::from_url("redis://127.0.0.1:6379")
            .create_pool(Some(deadpool_redis::Runtime::Tokio1))
            .unwrap();
        // A marker of this test's own: other tests share the machine's Redis.
        let ready = format!("tt:marks:ready:test-{}", uuid::Uuid::new_v4().simple());
        let (license, _) = store.create_license("L", Tier::Team).await.unwrap();
        let (key, _) = store.create_api_key(&license.id, "gone").await.unwrap();
        let (kept, _) = store.create_api_key(&license.id, "kept").await.unwrap();
        assert!(store.revoke_api_key(&license.id, &key.id).await.unwrap());
        let mark = tradeterm_protocol::dispatch::revocation_key(&key.id);
        let mut conn = pool.get().await.unwrap();
        let exists = async |conn: &mut deadpool_redis::Connection, k: &str| -> bool {
            redis::cmd("EXISTS").arg(k).query_async(conn).await.unwrap()
        };
        let _: () = redis::cmd("DEL").arg(&mark).query_async(&mut conn).await.unwrap();

        // No marker (an empty Redis): the revoked key's mark is written again.
        assert_eq!(restore(&pool, &store, &ready).await.unwrap(), Some(1));
        assert!(exists(&mut conn, &mark).await);
        let ttl: i64 = redis::cmd("TTL").arg(&mark).query_async(&mut conn).await.unwrap();
        assert!(
            (86_000..=86_400).contains(&ttl),
            "the mark keeps its remaining life: {ttl}"
        );
        assert!(!exists(&mut conn, &tradeterm_protocol::dispatch::revocation_key(&kept.id)).await);
        // The marker is there now: nothing more to do until it disappears.
        let _: () = redis::cmd("DEL").arg(&mark).query_async(&mut conn).await.unwrap();
        assert_eq!(restore(&pool, &store, &ready).await.unwrap(), None);
        assert!(!exists(&mut conn, &mark).await);
        let _: () = redis::cmd("DEL").arg(&ready).query_async(&mut conn).await.unwrap();
        assert_eq!(restore(&pool, &store, &ready).await.unwrap(), Some(1));
        assert!(exists(&mut conn, &mark).await);
        let _: () = redis::cmd("DEL")
            .arg(&ready)
            .arg(&mark)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}
