//! Authentication of REST requests (spec §5).
//!
//! - `Authorization: Bearer svc_api_…`: the key is exchanged with the gateway
//!   for a short-lived JWT on first use; the verified claims are cached per
//!   instance for 60 s under the key's SHA-256 (never the key itself). Every
//!   request also checks that the key is still active, so a revocation takes
//!   effect at once despite the cache: with Redis, in the same atomic call as
//!   the rate-limit count (the gateway marks revoked keys there); without
//!   Redis, or while it is unreachable, in the store (see `routes::admit`). When the gateway cannot be reached, the
//!   key is resolved in the shared store instead, so store-only endpoints
//!   (the journal) keep working through a gateway outage.
//! - `Authorization: Bearer <JWT>`: RS256 only, verified with the public key;
//!   issuer, audience, expiry and not-before enforced. A token exchanged for
//!   a terminal key names the key (`cred_id`); it is refused as soon as the
//!   key is revoked or rotated, checked as for API keys.
//! - A key's scope changed in place (`docs/security.md`, "Scoped keys")
//!   counts as the revocation of its previous scope generation
//!   (`Claims::credential`): a cached exchange of an API key is then
//!   dropped and the key exchanged again on the same request, so the call
//!   runs under the new scope; a session token of the previous generation is
//!   refused (401: request a new token).
//!
//! Anything else, or a failure, is 401 `UNAUTHORIZED`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tradeterm_protocol::auth::parse_bearer;
use tradeterm_protocol::http_client::{ExchangeError, GatewayClient};
use tradeterm_protocol::token::{Claims, CredentialKind, TokenVerifier};
use tradeterm_store::Store;

use crate::RestError;

/// Prefix of REST API keys.
pub const API_KEY_PREFIX: &str = "svc_api_";

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Verified token claims (license, tier, capabilities).
    pub claims: Arc<Claims>,
}

impl Caller {
    /// License id.
    pub fn license_id(&self) -> &str {
        &self.claims.sub
    }
}

struct Cached {
    claims: Arc<Claims>,
    at: Instant,
}

/// Verifies bearer credentials; caches API-key exchanges.
pub struct Authenticator {
    verifier: TokenVerifier,
    gateway: GatewayClient,
    store: Arc<dyn Store>,
    ttl: Duration,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// The 401 for a revoked credential.
pub(crate) fn revoked(caller: &Caller) -> RestError {
    match caller.claims.cred {
        CredentialKind::ApiKey => RestError::unauthorized("this API key has been revoked"),
        CredentialKind::TerminalKey => RestError::unauthorized(
            "the terminal key this token was issued for has been revoked or rotated; request a new token",
        ),
    }
}

/// The 401 for a token of a credential whose scope changed since it was issued.
pub(crate) fn outdated(caller: &Caller) -> RestError {
    match caller.claims.cred {
        CredentialKind::ApiKey => {
            RestError::unauthorized("this API key's scope changed since this token was issued; request a new token")
        }
        CredentialKind::TerminalKey => RestError::unauthorized(
            "the scope of the terminal key this token was issued for changed since; request a new token",
        ),
    }
}

/// What the store says of the credential a caller's token was issued for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Active, with the token's scope.
    Current,
    /// Active, but its scope changed since the token was issued (exchange again).
    Outdated,
    /// Revoked, rotated, or its license disabled.
    Revoked,
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

impl Authenticator {
    /// Builds an authenticator with the given exchange-cache lifetime.
    pub fn new(verifier: TokenVerifier, gateway: GatewayClient, store: Arc<dyn Store>, ttl: Duration) -> Self {
        Self {
            verifier,
            gateway,
            store,
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Evicts a cached exchange for this API key (called on revocation).
    pub fn revoke(&self, api_key: &str) {
        let digest: [u8; 32] = Sha256::digest(api_key.as_bytes()).into();
        if let Ok(mut c) = self.cache.lock() {
            c.remove(&digest);
        }
    }

    /// Evicts every cached exchange of the caller's credential.
    pub fn forget(&self, caller: &Caller) {
        if let Ok(mut c) = self.cache.lock() {
            c.retain(|_, e| e.claims.cred_id != caller.claims.cred_id);
        }
    }

    /// Number of cached exchanges (for tests and metrics).
    pub fn cached(&self) -> usize {
        self.cache.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Authenticates an `Authorization` header value.
    pub async fn authenticate(&self, header: Option<&str>) -> Result<Caller, RestError> {
        let Some(token) = header.and_then(parse_bearer) else {
            return Err(RestError::unauthorized(
                "missing or malformed `Authorization: Bearer <API_KEY or JWT>` header",
            ));
        };
        if token.starts_with(API_KEY_PREFIX) {
            self.api_key(token).await
        } else {
            let claims = self
                .verifier
                .verify(token)
                .map_err(|_| RestError::unauthorized("invalid or expired token"))?;
            Ok(Caller {
                claims: Arc::new(claims),
            })
        }
    }

    /// A cached exchange of the API key with this digest, while it is fresh.
    fn cached_claims(&self, digest: &[u8; 32]) -> Option<Arc<Claims>> {
        self.cache.lock().ok().and_then(|c| {
            c.get(digest)
                .filter(|e| e.at.elapsed() < self.ttl && e.claims.exp > now_secs() + 5)
                .map(|e| e.claims.clone())
        })
    }

    /// The caller of a credential known valid without asking anyone: an
    /// API key whose exchange is cached, or a token whose signature and
    /// expiry verify here. `None`: it must be checked (and may be a guess).
    pub fn known(&self, header: Option<&str>) -> Option<Caller> {
        let token = header.and_then(parse_bearer)?;
        if token.starts_with(API_KEY_PREFIX) {
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            self.cached_claims(&digest).map(|claims| Caller { claims })
        } else {
            let claims = self.verifier.verify(token).ok()?;
            Some(Caller {
                claims: Arc::new(claims),
            })
        }
    }

    /// Fails with 401 when the credential the caller authenticated with (an
    /// API key, or the terminal key a session token was exchanged for) is no
    /// longer active in the store.
    pub async fn ensure_active(&self, caller: &Caller) -> Result<(), RestError> {
        match self.standing(caller).await? {
            Standing::Current => Ok(()),
            Standing::Outdated => Err(outdated(caller)),
            Standing::Revoked => Err(revoked(caller)),
        }
    }

    /// Whether the credential the caller authenticated with is still active
    /// in the store, with the scope generation of the caller's token.
    pub(crate) async fn standing(&self, caller: &Caller) -> Result<Standing, RestError> {
        let id = &caller.claims.cred_id;
        let generation = match caller.claims.cred {
            CredentialKind::ApiKey => self.store.api_key_generation(id).await,
            CredentialKind::TerminalKey => self.store.terminal_key_generation(id).await,
        };
        match generation {
            Ok(Some(g)) if g == caller.claims.cred_gen => Ok(Standing::Current),
            Ok(Some(_)) => Ok(Standing::Outdated),
            Ok(None) => Ok(Standing::Revoked),
            Err(e) => Err(RestError::internal(e, true)),
        }
    }

    async fn api_key(&self, key: &str) -> Result<Caller, RestError> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if let Some(claims) = self.cached_claims(&digest) {
            return Ok(Caller { claims });
        }
        let grant = match self.gateway.exchange_api_key(key).await {
            Ok(g) => g,
            // A scoped key past its expiry says so (only its holder can learn it).
            Err(ExchangeError::Refused(m)) if m.contains("(`expires_at`)") => return Err(RestError::unauthorized(m)),
            Err(ExchangeError::Refused(_)) => return Err(RestError::unauthorized("invalid or revoked API key")),
            Err(ExchangeError::Gateway(detail)) => {
                // The gateway is down: resolve the key in the shared store so that
                // store-only endpoints (the journal) keep working.
                tracing::warn!(error = %detail, "API-key exchange failed; resolving the key in the store");
                return self.api_key_from_store(key, digest).await;
            }
        };
        let claims = self
            .verifier
            .verify(&grant.token)
            .map_err(|e| RestError::internal(format!("gateway token does not verify: {e}"), true))?;
        let claims = Arc::new(claims);
        if let Ok(mut c) = self.cache.lock() {
            if c.len() > 100_000 {
                c.retain(|_, e| e.at.elapsed() < self.ttl);
            }
            c.insert(
                digest,
                Cached {
                    claims: claims.clone(),
                    at: Instant::now(),
                },
            );
        }
        Ok(Caller { claims })
    }
}

impl Authenticator {
    async fn api_key_from_store(&self, key: &str, digest: [u8; 32]) -> Result<Caller, RestError> {
        let auth = match self.store.api_key(key).await {
            Ok(Some(a)) if !a.license.disabled => a,
            Ok(_) => return Err(RestError::unauthorized("invalid or revoked API key")),
            Err(e) => {
                tracing::error!(error = %e, "store failure while resolving an API key");
                return Err(RestError::new(502, "GATEWAY_ERROR", "could not verify the API key"));
            }
        };
        let now = now_secs();
        // As the gateway's exchange: a stored scope that does not read back
        // refuses the key; the token ends no later than the key.
        let scope = tradeterm_core::scope::KeyScope::from_permissions(auth.key.permissions.as_ref()).map_err(|e| {
            tracing::error!(key_id = %auth.key.id, error = %e, "an API key's stored scope does not read back");
            RestError::unauthorized("this API key's scope cannot be read; create a new key")
        })?;
        if let Some(expired) = scope.as_ref().and_then(|s| s.check_time(now * 1000).err()) {
            return Err(RestError::unauthorized(expired.message));
        }
        let caps = match &scope {
            Some(s) => s.narrow(auth.license.tier.capabilities()),
            None => auth.license.tier.capabilities().to_vec(),
        };
        let exp = (now + self.ttl.as_secs() as i64).min(
            scope
                .as_ref()
                .and_then(|s| s.expires_at)
                .map_or(i64::MAX, |ms| ms.div_euclid(1000)),
        );
        let claims = Arc::new(Claims {
            iss: String::new(),
            aud: String::new(),
            sub: auth.license.id.clone(),
            iat: now,
            nbf: now,
            exp,
            jti: String::new(),
            tier: auth.license.tier,
            caps,
            cred: CredentialKind::ApiKey,
            cred_id: auth.key.id.clone(),
            terminal: None,
            scope,
            cred_gen: auth.key.scope_generation,
        });
        if let Ok(mut c) = self.cache.lock() {
            c.insert(
                digest,
                Cached {
                    claims: claims.clone(),
                    at: Instant::now(),
                },
            );
        }
        Ok(Caller { claims })
    }
}
