//! Authentication of MCP requests: `Authorization: Bearer <TERMINAL_KEY>`.
//!
//! The terminal key is exchanged at the gateway (`POST /api/token`) for an
//! RS256 session token, which is verified with the public key. The verified
//! claims are cached per instance under the key's SHA-256 (never the key
//! itself) and used until the first of:
//!
//! - three quarters of the token's lifetime have passed (the token is
//!   refreshed before it expires, so a client never sees an expired token);
//! - `key_recheck` (60 s by default) has passed, so that a revoked or rotated
//!   terminal key stops working within that time even with a 24 h token.
//!
//! With Redis (`KEYVALUE_URL`), every request served from the cache also
//! checks the revocation mark the gateway sets when the key is rotated
//! (`tt:revoked:{key id}`, as the REST server does): a rotated key, and the
//! session tokens exchanged for it, are refused at once on every instance.
//! While Redis cannot be read, the key is checked in the store instead.
//! A key whose scope changed in place has its previous scope generation
//! marked (`Claims::credential`): a cached grant so marked is exchanged
//! again at once, and runs under the new scope (a revoked key is refused by
//! that exchange); a change made in this process drops the grants at once.
//!
//! When a refresh fails because the gateway cannot be reached, the cached
//! token keeps being used until it actually expires. The gateway refuses
//! master license keys; the key must also be bound to a terminal (its agent
//! has connected once), which is checked in the store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use tradeterm_cluster::conn::ThreadConnections;
use tradeterm_protocol::auth::parse_bearer;
use tradeterm_protocol::http_client::{ExchangeError, GatewayClient};
use tradeterm_protocol::token::{Claims, CredentialKind, TokenVerifier};
use tradeterm_store::Store;

/// The authenticated caller of an MCP request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Verified claims of the session token exchanged for the terminal key.
    pub claims: Arc<Claims>,
}

impl Caller {
    /// License id.
    pub fn license_id(&self) -> &str {
        &self.claims.sub
    }

    /// The terminal the key is bound to.
    pub fn terminal_id(&self) -> &str {
        self.claims.terminal.as_deref().unwrap_or_default()
    }
}

/// Why a request was refused before reaching MCP, answered as
/// `{ "error": { "code", "message" } }` with an HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct AuthError {
    /// HTTP status.
    pub status: u16,
    /// Spec error code (`UNAUTHORIZED`, `FORBIDDEN`, `GATEWAY_ERROR`, `INTERNAL_ERROR`).
    pub code: &'static str,
    /// What to do about it.
    pub message: String,
    /// `Retry-After` of a 429, seconds.
    pub retry_after: Option<u64>,
}

impl AuthError {
    fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            status: 401,
            code: "UNAUTHORIZED",
            message: message.into(),
            retry_after: None,
        }
    }

    /// 429 `RATE_LIMITED` with `Retry-After` (`retry_after` seconds).
    pub(crate) fn limited(message: impl Into<String>, retry_after: u64) -> Self {
        Self {
            status: 429,
            code: "RATE_LIMITED",
            message: message.into(),
            retry_after: Some(retry_after),
        }
    }

    fn forbidden(message: impl Into<String>) -> Self {
        Self {
            status: 403,
            code: "FORBIDDEN",
            message: message.into(),
            retry_after: None,
        }
    }

    fn gateway(detail: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %detail, "terminal-key exchange failed");
        Self {
            status: 502,
            code: "GATEWAY_ERROR",
            message: "the gateway could not be reached; retry shortly".into(),
            retry_after: None,
        }
    }

    fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "MCP authentication failed internally");
        Self {
            status: 500,
            code: "INTERNAL_ERROR",
            message: "internal error while authenticating".into(),
            retry_after: None,
        }
    }
}

impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        let status =
            axum::http::StatusCode::from_u16(self.status).unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        let mut body = serde_json::json!({ "error": { "code": self.code, "message": self.message } });
        // The request's id (also in `X-Request-Id`), as in the REST envelope.
        if let Some(id) = tradeterm_telemetry::request_id::current() {
            body["error"]["request_id"] = serde_json::json!(id.as_str());
        }
        let mut res = (status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(value) = axum::http::HeaderValue::from_str(&secs.to_string())
        {
            res.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
        }
        res
    }
}

#[derive(Clone)]
struct Grant {
    claims: Arc<Claims>,
    obtained: Instant,
    /// Unix seconds after which the token is refreshed.
    refresh_at: i64,
    /// The key's terminal was seen bound (bindings are never undone).
    bound: bool,
}

/// How long reading a revocation mark may take before the store is asked instead.
const MARK_TIMEOUT: Duration = Duration::from_millis(100);

/// Turns terminal keys into verified callers, with the cached, refreshed exchange.
pub struct Authenticator {
    gateway: GatewayClient,
    verifier: TokenVerifier,
    store: Arc<dyn Store>,
    recheck: Duration,
    cache: Arc<Mutex<HashMap<[u8; 32], Grant>>>,
    /// Drops the cached grants of a credential revoked in this process (a
    /// key's scope changed on the gateway of `tradeterm serve`, Redis or not).
    _revoked_here: tradeterm_protocol::dispatch::RevocationListener,
    exchanges: AtomicU64,
    /// Where the gateway marks revoked credentials (`KEYVALUE_URL`).
    marks: Option<ThreadConnections>,
    /// Unix seconds of the last warning that the marks could not be read.
    marks_warned: AtomicU64,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("recheck", &self.recheck)
            .finish_non_exhaustive()
    }
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

impl Authenticator {
    /// An authenticator exchanging keys at `gateway`.
    pub fn new(gateway: GatewayClient, verifier: TokenVerifier, store: Arc<dyn Store>, recheck: Duration) -> Self {
        let cache: Arc<Mutex<HashMap<[u8; 32], Grant>>> = Arc::default();
        let held = Arc::downgrade(&cache);
        let revoked_here: tradeterm_protocol::dispatch::RevocationListener = Arc::new(move |credential: &str| {
            if let Some(cache) = held.upgrade()
                && let Ok(mut c) = cache.lock()
            {
                c.retain(|_, g| g.claims.credential() != credential);
            }
        });
        tradeterm_protocol::dispatch::listen_to_revocations_here(&revoked_here);
        Self {
            gateway,
            verifier,
            store,
            recheck,
            cache,
            _revoked_here: revoked_here,
            exchanges: AtomicU64::new(0),
            marks: None,
            marks_warned: AtomicU64::new(0),
        }
    }

    /// Checks the Redis revocation marks of `pool` on every request served
    /// from the cache (see the module docs); `None` keeps the periodic
    /// re-exchange only.
    pub fn with_revocation_marks(mut self, pool: Option<deadpool_redis::Pool>) -> Self {
        self.marks = pool.map(ThreadConnections::new);
        self
    }

    /// Successful token exchanges so far (first exchanges and refreshes).
    pub fn exchanges(&self) -> u64 {
        self.exchanges.load(Ordering::Relaxed)
    }

    /// Claims currently cached for `terminal_key`, if any (for tests).
    pub fn cached_claims(&self, terminal_key: &str) -> Option<Arc<Claims>> {
        let digest: [u8; 32] = Sha256::digest(terminal_key.as_bytes()).into();
        self.cache.lock().ok()?.get(&digest).map(|g| g.claims.clone())
    }

    /// Authenticates an `Authorization` header value.
    pub async fn authenticate(&self, header: Option<&str>) -> Result<Caller, AuthError> {
        let Some(key) = header.and_then(parse_bearer) else {
            return Err(AuthError::unauthorized(
                "missing or malformed `Authorization: Bearer <TERMINAL_KEY>` header",
            ));
        };
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let now = now_secs();
        let cached = self.cache.lock().ok().and_then(|c| c.get(&digest).cloned());
        // `true`: the grant comes from the cache, not from the gateway just now.
        let (mut grant, cached) = match cached {
            Some(g) if now < g.refresh_at && g.obtained.elapsed() < self.recheck => (g, true),
            Some(old) => match self.exchange(key).await {
                Ok(mut fresh) => {
                    fresh.bound = old.bound && old.claims.terminal == fresh.claims.terminal;
                    (fresh, false)
                }
                Err(e) if e.code == "GATEWAY_ERROR" && old.claims.exp > now => {
                    tracing::warn!("token refresh failed; the current session token is still valid and stays in use");
                    (old, true)
                }
                Err(e) => {
                    self.evict(&digest);
                    return Err(e);
                }
            },
            None => (self.exchange(key).await?, false),
        };
        if let Err(e) = self.ensure_not_revoked(&grant.claims).await {
            self.evict(&digest);
            if !cached {
                // Just exchanged and already marked: the gateway has not
                // seen the revocation yet; refused.
                return Err(e);
            }
            // The mark may be of the key's previous scope generation only (its
            // scope changed in place): exchanged again, under the new scope; a
            // revoked key is refused there. A fresh token of the same
            // generation is still of the marked credential: refused (fails
            // closed whatever the gateway answered).
            let old = grant;
            let marked = old.claims.credential();
            grant = match self.exchange(key).await {
                Ok(fresh) if fresh.claims.credential() != marked => fresh,
                _ => return Err(e),
            };
            grant.bound = old.bound && old.claims.terminal == grant.claims.terminal;
        }
        if !grant.bound {
            self.ensure_bound(&grant.claims).await?;
            grant.bound = true;
        }
        let claims = grant.claims.clone();
        if let Ok(mut c) = self.cache.lock() {
            if c.len() > 100_000 {
                c.retain(|_, g| g.claims.exp > now);
            }
            c.insert(digest, grant);
        }
        Ok(Caller { claims })
    }

    fn evict(&self, digest: &[u8; 32]) {
        if let Ok(mut c) = self.cache.lock() {
            c.remove(digest);
        }
    }

    async fn exchange(&self, key: &str) -> Result<Grant, AuthError> {
        let grant = match self.gateway.exchange_terminal_key(key).await {
            Ok(g) => g,
            Err(ExchangeError::Refused(message)) => return Err(AuthError::unauthorized(message)),
            Err(ExchangeError::Gateway(detail)) => return Err(AuthError::gateway(detail)),
        };
        let claims = self
            .verifier
            .verify(&grant.token)
            .map_err(|e| AuthError::internal(format!("the gateway's session token does not verify: {e}")))?;
        if claims.cred != CredentialKind::TerminalKey || claims.terminal.is_none() {
            return Err(AuthError::unauthorized("the MCP endpoint takes a terminal key"));
        }
        self.exchanges.fetch_add(1, Ordering::Relaxed);
        let lifetime = (claims.exp - claims.iat).max(0);
        let refresh_at = claims.iat + lifetime * 3 / 4;
        Ok(Grant {
            claims: Arc::new(claims),
            obtained: Instant::now(),
            refresh_at,
            bound: false,
        })
    }

    /// Refuses a cached grant whose terminal key was revoked or rotated since:
    /// the Redis mark when there is Redis, else (or while it cannot be read)
    /// the store. Without Redis configured, nothing is checked here (the
    /// periodic re-exchange does it).
    async fn ensure_not_revoked(&self, claims: &Claims) -> Result<(), AuthError> {
        let Some(conns) = &self.marks else {
            return Ok(());
        };
        let marked = tokio::time::timeout(MARK_TIMEOUT, revocation_marked(conns, &claims.credential())).await;
        if !matches!(marked, Ok(Ok(_))) {
            // A failed or timed-out call may have left the connection broken.
            conns.forget();
        }
        let revoked = match marked {
            Ok(Ok(marked)) => marked,
            failed => {
                let detail = match failed {
                    Ok(Err(e)) => e,
                    _ => format!("no answer within {MARK_TIMEOUT:?}"),
                };
                let now = now_secs().max(0) as u64;
                let last = self.marks_warned.load(Ordering::Relaxed);
                let due = last + 10 <= now;
                if due
                    && self
                        .marks_warned
                        .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    tracing::warn!(error = %detail, "revocation marks unreadable in Redis; checking keys in the store");
                }
                match self.store.terminal_key_generation(&claims.cred_id).await {
                    Ok(generation) => generation != Some(claims.cred_gen),
                    Err(e) => return Err(AuthError::internal(e)),
                }
            }
        };
        if revoked {
            return Err(AuthError::unauthorized(
                "this terminal key has been revoked or rotated; connect with the terminal's new key",
            ));
        }
        Ok(())
    }

    async fn ensure_bound(&self, claims: &Claims) -> Result<(), AuthError> {
        let terminal = claims.terminal.as_deref().unwrap_or_default();
        match self.store.terminal(&claims.sub, terminal).await {
            Ok(Some(t)) if t.fingerprint.is_some() => Ok(()),
            Ok(Some(_)) => Err(AuthError::forbidden(format!(
                "this terminal key is not bound to a terminal yet: start the tradeterm agent on terminal `{terminal}` \
                 with this key once (the first agent connection binds it), then connect the AI client again"
            ))),
            Ok(None) => Err(AuthError::unauthorized("the terminal of this key no longer exists")),
            Err(e) => Err(AuthError::internal(e)),
        }
    }
}

/// Whether the gateway marked the credential revoked (`EXISTS tt:revoked:{id}`).
async fn revocation_marked(conns: &ThreadConnections, credential_id: &str) -> Result<bool, String> {
    let mut conn = conns.get().await?;
    deadpool_redis::redis::cmd("EXISTS")
        .arg(tradeterm_protocol::dispatch::revocation_key(credential_id))
        .query_async::<bool>(&mut conn)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_errors_use_the_spec_envelope() {
        let e = AuthError::forbidden("not bound");
        let resp = e.into_response();
        assert_eq!(resp.status(), 403);
    }
}
