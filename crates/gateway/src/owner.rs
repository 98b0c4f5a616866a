//! What a license owner does to credentials, in one place for every surface
//! that offers it (the JSON dashboard routes of [`crate::http`] and the
//! dashboard web page, `crates/dashboard`): revoking a REST API key and
//! rotating a terminal key, each with its revocation published to Redis (so
//! every REST instance refuses the old credential at once despite its
//! exchange cache) and, for a rotation, the agent connected with the old key
//! disconnected at once.

use tradeterm_store::{Secret, StoreError};

use crate::Gateway;

/// Outcome of [`Gateway::rotate_terminal_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRotation {
    /// The terminal.
    pub terminal_id: String,
    /// The new terminal key (shown to its owner once).
    pub terminal_key: Secret,
    /// Record ids of the keys the rotation revoked.
    pub revoked_key_ids: Vec<String>,
    /// Whether an agent connected with a revoked key was disconnected.
    pub agent_disconnected: bool,
}

impl Gateway {
    /// Revokes a REST API key of the license and publishes the revocation.
    /// `Ok(false)` when the license has no active key with this id.
    ///
    /// # Errors
    /// The store failed.
    pub async fn revoke_api_key(&self, license_id: &str, key_id: &str) -> Result<bool, StoreError> {
        if !self.store().revoke_api_key(license_id, key_id).await? {
            return Ok(false);
        }
        tracing::info!(license = %license_id, key_id = %key_id, "API key revoked");
        if let Some(pool) = &self.settings().redis {
            mark_revoked(pool, key_id).await;
        }
        Ok(true)
    }

    /// Revokes the terminal's key and issues a new one (the binding to the
    /// installation is kept): session tokens exchanged for the old key are
    /// refused at once (Redis marker, else the store), and an agent connected
    /// here with it is disconnected at once.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the terminal is not the license's; the
    /// store failed.
    pub async fn rotate_terminal_key(&self, license_id: &str, terminal_id: &str) -> Result<KeyRotation, StoreError> {
        let rotated = self.store().rotate_terminal_key(license_id, terminal_id).await?;
        tracing::info!(license = %license_id, terminal = %terminal_id, "terminal key rotated");
        if let Some(pool) = &self.settings().redis {
            for id in &rotated.revoked_key_ids {
                mark_revoked(pool, id).await;
            }
        }
        let mut agent_disconnected = self.inner.registry.drop_revoked(terminal_id, &rotated.revoked_key_ids);
        if !agent_disconnected {
            // Its agent may be connected to another instance of the cluster.
            agent_disconnected =
                crate::cluster::drop_revoked_elsewhere(self, license_id, terminal_id, &rotated.revoked_key_ids).await;
        }
        Ok(KeyRotation {
            terminal_id: terminal_id.to_owned(),
            terminal_key: rotated.key,
            revoked_key_ids: rotated.revoked_key_ids,
            agent_disconnected,
        })
    }
}

/// Marks a revoked credential (API key or terminal key) in Redis (three
/// attempts). The store already holds the revocation; if Redis cannot be
/// written, instances keep accepting cached exchanges of the key for at most
/// their cache lifetime, so this is logged as an error.
async fn mark_revoked(pool: &deadpool_redis::Pool, key_id: &str) {
    use deadpool_redis::redis;
    for attempt in 1..=3 {
        let result = async {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            redis::pipe()
                .cmd("SET")
                .arg(tradeterm_protocol::dispatch::revocation_key(key_id))
                .arg(1)
                .arg("EX")
                .arg(tradeterm_protocol::dispatch::REVOCATION_MARK_SECS)
                .ignore()
                .cmd("PUBLISH")
                .arg(tradeterm_protocol::dispatch::REVOCATIONS_CHANNEL)
                .arg(key_id)
                .ignore()
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| e.to_string())
        }
        .await;
        match result {
            Ok(()) => break,
            Err(e) if attempt == 3 => {
                tradeterm_telemetry::record::redis_error("revocation");
                tracing::error!(key_id, error = %e, "could not publish an API-key revocation to Redis");
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50 * attempt)).await,
        }
    }
    // This process's own limiters forget the credential whatever Redis said.
    tradeterm_protocol::dispatch::revoked_here(key_id);
}
