//! What a license owner does to credentials, in one place for every surface
//! that offers it (the JSON dashboard routes of [`crate::http`] and the
//! dashboard web page, `crates/dashboard`): revoking a REST API key and
//! rotating a terminal key, each with its revocation published to Redis (so
//! every REST instance refuses the old credential at once despite its
//! exchange cache) and, for a rotation, the agent connected with the old key
//! disconnected at once; changing a key's scope in place, published the same
//! way (the tokens of the previous scope count as revoked).

use tradeterm_core::scope::credential_mark;
use tradeterm_store::{ApiKey, Secret, StoreError, TerminalKey};

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
    /// The new key's record (its scope included; never the secret).
    pub key: TerminalKey,
}

impl Gateway {
    /// Revokes a REST API key of the license and publishes the revocation.
    /// `Ok(false)` when the license has no active key with this id.
    ///
    /// # Errors
    /// The store failed.
    pub async fn revoke_api_key(&self, license_id: &str, key_id: &str) -> Result<bool, StoreError> {
        // The generation its latest tokens carry, marked with the record id.
        let generation = self.store().api_key_generation(key_id).await?.unwrap_or(0);
        if !self.store().revoke_api_key(license_id, key_id).await? {
            return Ok(false);
        }
        tracing::info!(license = %license_id, key_id = %key_id, "API key revoked");
        if let Some(pool) = &self.settings().redis {
            mark_revoked(pool, key_id).await;
            if generation > 0 {
                mark_revoked(pool, &credential_mark(key_id, generation)).await;
            }
        }
        Ok(true)
    }

    /// Changes the scope of an active API key of the license in place
    /// (`permissions` validated by the caller; `None` lifts it): the secret
    /// is kept, and the tokens and cached exchanges of the key's previous
    /// scope are refused on every instance at once, as a revocation is
    /// (the previous generation's name is marked revoked, see
    /// `tradeterm_core::scope::credential_mark`), so the next call of the
    /// key is exchanged again and runs under the new scope. `Ok(None)` when
    /// the license has no active key with this id.
    ///
    /// # Errors
    /// The store failed.
    pub async fn change_api_key_scope(
        &self,
        license_id: &str,
        key_id: &str,
        permissions: Option<serde_json::Value>,
    ) -> Result<Option<ApiKey>, StoreError> {
        let Some(key) = self.store().set_api_key_scope(license_id, key_id, permissions).await? else {
            return Ok(None);
        };
        tracing::info!(license = %license_id, key_id = %key_id, generation = key.scope_generation, "API key scope changed");
        self.scope_changed(key_id, key.scope_generation).await;
        Ok(Some(key))
    }

    /// [`Gateway::change_api_key_scope`] for the active key of a terminal of
    /// the license (a terminal-key scope names no `terminals`; the caller
    /// checks it). `Ok(None)` when the license has no such terminal.
    ///
    /// # Errors
    /// The store failed.
    pub async fn change_terminal_key_scope(
        &self,
        license_id: &str,
        terminal_id: &str,
        permissions: Option<serde_json::Value>,
    ) -> Result<Option<TerminalKey>, StoreError> {
        let Some(key) = self
            .store()
            .set_terminal_key_scope(license_id, terminal_id, permissions)
            .await?
        else {
            return Ok(None);
        };
        tracing::info!(license = %license_id, terminal = %terminal_id, key_id = %key.id, generation = key.scope_generation, "terminal key scope changed");
        self.scope_changed(&key.id, key.scope_generation).await;
        Ok(Some(key))
    }

    /// Publishes that `key_id` is at scope generation `generation` now: the
    /// previous generation's name is marked revoked in Redis (and heard in
    /// this process at once, Redis or not).
    async fn scope_changed(&self, key_id: &str, generation: u32) {
        let previous = credential_mark(key_id, generation.saturating_sub(1));
        match &self.settings().redis {
            Some(pool) => mark_revoked(pool, &previous).await,
            None => tradeterm_protocol::dispatch::revoked_here(&previous),
        }
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
        self.rotate_terminal_key_with_scope(license_id, terminal_id, None).await
    }

    /// [`Gateway::rotate_terminal_key`]; `scope`: `None` keeps the old key's
    /// scope for the new key, `Some(permissions)` sets it (validated by the caller).
    ///
    /// # Errors
    /// As [`Gateway::rotate_terminal_key`].
    pub async fn rotate_terminal_key_with_scope(
        &self,
        license_id: &str,
        terminal_id: &str,
        scope: Option<Option<serde_json::Value>>,
    ) -> Result<KeyRotation, StoreError> {
        let rotated = self
            .store()
            .rotate_scoped_terminal_key(license_id, terminal_id, scope)
            .await?;
        tracing::info!(license = %license_id, terminal = %terminal_id, "terminal key rotated");
        if let Some(pool) = &self.settings().redis {
            for (id, generation) in rotated.revoked_key_ids.iter().zip(&rotated.revoked_generations) {
                mark_revoked(pool, id).await;
                if *generation > 0 {
                    mark_revoked(pool, &credential_mark(id, *generation)).await;
                }
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
            key: rotated.record,
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
