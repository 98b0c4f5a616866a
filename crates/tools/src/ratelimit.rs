//! Per-license rate limiting over a fixed window, shared by every API
//! instance through Redis (spec §8). Both adapters meter tool calls with it:
//! REST in the `rest` bucket, MCP in its own `mcp` bucket, with the same tier
//! limits.
//!
//! Windows are aligned on the unix epoch (`window_index = now_ms / window`),
//! so every instance agrees on when a window resets without coordination.
//! The counter `tt:rl:rest:{license}:{window_index}` is incremented by a Lua
//! script (atomic in Redis) that also sets its expiry; the REST bucket is
//! separate from the MCP dispatch bucket (`tt:rl:mcp:…`).
//!
//! **Combining.** Concurrent requests for the same counter (same license,
//! bucket, window and credential) share one Redis call: while a call is in
//! flight, newcomers queue; when it returns, the first of them sends one
//! `INCRBY n` for the whole queue and hands each request its own count
//! (`total - n + 1 ..= total`, in arrival order). Counting stays exact (the
//! counter moves by exactly the number of requests, each request gets a
//! distinct count, so exactly `limit` are admitted across every instance);
//! under load, Redis sees one call per batch instead of one per request. A
//! lone request is sent at once, as before: combining never waits for company.
//! Batches and connections are per thread, so that an actix worker never
//! waits on, or wakes, another thread to count its requests.
//!
//! **When Redis is unreachable** (error or no answer within 50 ms; a request
//! queued behind a call in flight waits at most twice that) the request is
//! not failed: the limiter falls back to a per-instance counter
//! with the same window and limits (so one instance still enforces the tier
//! limit on its own traffic), logs a warning at most once per window, and
//! counts the event in [`RateLimiter::fallbacks`]. No 5xx is ever caused by
//! the rate limiter.
//!
//! **Counting beside the work.** A read-only call need not wait for its
//! count: [`RateLimiter::ahead`] lets the caller start the work while the
//! count is in flight, and the caller answers only once the count admits
//! the request (a refused or revoked request gets its 429/401 and none of
//! the work's output, so counting stays exact). It is granted only for a
//! credential whose previous count on this instance, in the same window,
//! admitted it with ample room left (more than a tenth of the limit,
//! at least 2, beyond the calls already going ahead): the first call of a
//! credential in a window, a credential near its limit, a revoked one and
//! any call while Redis is unreachable wait for their count, so a client
//! over its limit never reaches the terminal.
//!
//! **Counting behind the work.** Under steady traffic a read-only call
//! need not wait for Redis at all: [`RateLimiter::count_behind`] admits it
//! on what this instance knows and queues its count, which reaches Redis
//! (with the revocation check) within [`BEHIND_FLUSH_AFTER`], combined with
//! the other calls queued meanwhile. It is granted only while the limiter
//! hears revocations ([`RateLimiter::hear_revocations`]: a credential heard
//! revoked is counted first from then on, and refused), when Redis answered
//! a count of the credential less than [`CONFIRMED_FOR`] ago (so even a
//! revocation that went unheard is learnt within that time plus a flush),
//! in the same window, and while far from the limit: the calls queued on
//! this instance stay under a sixteenth of the room left beyond half the
//! limit (at least [`BEHIND_FLOOR`]). The last half of every window is
//! therefore counted before the answer, which keeps the number admitted per
//! window exact across instances, unless the other instances together admit
//! more than half the limit within one flush (10 ms), a rate no tier
//! reaches. A call counted behind whose count then finds the credential
//! revoked has been answered; the next call is refused.
//!
//! **Metrics.** Every decision counts in
//! `tradeterm_rate_limit_decisions_total{bucket, decision, counter}`
//! (`allowed` / `limited` / `revoked`; `redis` or `local`), and every failed
//! Redis count in `tradeterm_redis_errors_total{component="ratelimit"}`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deadpool_redis::redis;
use tradeterm_cluster::conn::ThreadConnections;
use tradeterm_core::license::Tier;

/// Requests per window for each tier (`API_RATE_LIMIT_FREE/_PRO/_TEAM/_ENTERPRISE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierLimits {
    /// Free tier (default 10).
    pub free: u64,
    /// Pro tier (default 60).
    pub pro: u64,
    /// Team tier (default 300).
    pub team: u64,
    /// Enterprise tier (default 1000).
    pub enterprise: u64,
}

impl Default for TierLimits {
    fn default() -> Self {
        Self {
            free: 10,
            pro: 60,
            team: 300,
            enterprise: 1000,
        }
    }
}

impl TierLimits {
    /// The limit of a tier.
    pub fn of(&self, tier: Tier) -> u64 {
        match tier {
            Tier::Free => self.free,
            Tier::Pro => self.pro,
            Tier::Team => self.team,
            Tier::Enterprise => self.enterprise,
        }
    }
}

/// The state of a license's bucket after counting one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// `X-RateLimit-Limit`.
    pub limit: u64,
    /// `X-RateLimit-Remaining`.
    pub remaining: u64,
    /// `X-RateLimit-Reset`: unix seconds when the window ends.
    pub reset: u64,
    /// `Retry-After` seconds (for refused requests).
    pub retry_after: u64,
    /// The credential checked with [`RateLimiter::check_credential`] has been
    /// revoked (the request is not counted).
    pub revoked: bool,
}

/// Counts `ARGV[2]` requests unless the credential is revoked: `-1` when
/// `KEYS[2]` (the revocation marker) exists, else the new count of `KEYS[1]`.
/// The expiry (`ARGV[1]` ms) is set when the counter is created.
const SCRIPT: &str = r"
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local n = tonumber(ARGV[2])
local c = redis.call('INCRBY', KEYS[1], n)
if c == n then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return c
";

/// Key of the revocation marker of a credential (an API key id). Whoever
/// revokes a key sets it ([`mark_revoked`]); every limiter check of that
/// credential then answers "revoked" in the same round trip as the count.
pub use tradeterm_protocol::dispatch::revocation_key;

/// How long a revocation marker lives (seconds).
pub use tradeterm_protocol::dispatch::REVOCATION_MARK_SECS as REVOCATION_TTL_SECS;

/// Records in Redis that a credential was revoked, so that every instance
/// refuses it at once despite its caches, and publishes it on
/// `REVOCATIONS_CHANNEL` for the limiters counting calls behind their work.
pub async fn mark_revoked(pool: &deadpool_redis::Pool, credential_id: &str) -> Result<(), String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    redis::pipe()
        .cmd("SET")
        .arg(revocation_key(credential_id))
        .arg(1)
        .arg("EX")
        .arg(REVOCATION_TTL_SECS)
        .ignore()
        .cmd("PUBLISH")
        .arg(tradeterm_protocol::dispatch::REVOCATIONS_CHANNEL)
        .arg(credential_id)
        .ignore()
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    tradeterm_protocol::dispatch::revoked_here(credential_id);
    Ok(())
}

/// How long one Redis call may take before the requests it counts fall back
/// to local counting.
const CALL_TIMEOUT: Duration = Duration::from_millis(50);

/// What a queued request receives from the request that sent its batch.
enum Handoff {
    /// The request's own count (or the batch's error).
    Count(Result<i64, String>),
    /// The previous call returned: send the next batch, made of these requests and yourself.
    Lead(Vec<Waiter>),
}

type Waiter = tokio::sync::oneshot::Sender<Handoff>;
/// A counter and the revocation marker checked with it, per thread (so that
/// a batch is answered on the thread its requests run on).
type BatchKey = (std::thread::ThreadId, String, Option<String>);

/// The limiter.
pub struct RateLimiter {
    /// One multiplexed connection per thread, shared by that thread's
    /// requests (a pooled connection per request would cost an extra round
    /// trip each time).
    conns: ThreadConnections,
    script: redis::Script,
    window_ms: u64,
    limits: TierLimits,
    bucket: &'static str,
    fallback: Mutex<HashMap<String, (u64, u64)>>,
    fallbacks: AtomicU64,
    last_warned_window: AtomicU64,
    /// Counters with a Redis call in flight, and the requests queued behind it.
    combining: Mutex<HashMap<BatchKey, Vec<Waiter>>>,
    /// Redis calls made (each counts one batch).
    calls: AtomicU64,
    /// How long one Redis call may take ([`CALL_TIMEOUT`] by default).
    call_timeout: Duration,
    /// What the last count told of each credential (see [`RateLimiter::ahead`]).
    headroom: Mutex<HashMap<String, Headroom>>,
    /// Counts queued by [`RateLimiter::count_behind`], per counter.
    behind: Mutex<HashMap<BehindKey, Behind>>,
    /// Since when revocations are heard ([`RateLimiter::hear_revocations`]);
    /// nothing is counted behind while they are not.
    hearing_since: Mutex<Option<Instant>>,
    /// Credentials heard revoked lately, and when.
    heard_revoked: Mutex<HashMap<String, Instant>>,
    /// Kept while the limiter hears the revocations made in its own process.
    revocations_here: Mutex<Option<tradeterm_protocol::dispatch::RevocationListener>>,
}

/// How long a credential heard revoked is remembered as such (far longer
/// than any count in flight when it was heard).
const HEARD_REVOKED_FOR: Duration = Duration::from_secs(10);

/// A counter and the revocation marker checked with it.
type BehindKey = (String, String);

/// Calls counted behind their work, waiting for their flush.
#[derive(Debug)]
struct Behind {
    n: u64,
    license: String,
    credential: String,
    window: u64,
    limit: u64,
}

/// How long after the first call counted behind its queued counts go to Redis.
pub const BEHIND_FLUSH_AFTER: Duration = Duration::from_millis(10);

/// How recent the last count that Redis answered for a credential must be
/// for a call of it to be counted behind its work: the bound on how long a
/// revoked credential may still be served by an instance that counts behind.
pub const CONFIRMED_FOR: Duration = Duration::from_millis(250);

/// Room a credential must have left beyond half its limit to be counted behind.
pub const BEHIND_FLOOR: u64 = 64;

/// Share of the room beyond half the limit that one instance may admit
/// before Redis counted it.
const BEHIND_SHARE: u64 = 16;

/// The room a credential had left at its last count on this instance.
#[derive(Debug, Clone, Copy)]
struct Headroom {
    /// Window index of that count.
    window: u64,
    /// Requests the license had left in that window.
    remaining: u64,
    /// Calls of the credential going ahead of their count now.
    ahead: u64,
    /// When the count that told `remaining` was sent.
    at: Instant,
    /// Calls counted behind whose counts Redis has not answered yet.
    behind: u64,
}

/// Headroom entries kept at most (all are forgotten beyond it).
const HEADROOM_MAX: usize = 100_000;

/// A call going ahead of its count ([`RateLimiter::ahead`]); releases its
/// share of the headroom when dropped.
#[derive(Debug)]
pub struct Ahead<'a> {
    limiter: &'a RateLimiter,
    key: String,
}

impl Drop for Ahead<'_> {
    fn drop(&mut self) {
        let mut map = self
            .limiter
            .headroom
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(h) = map.get_mut(&self.key) {
            h.ahead = h.ahead.saturating_sub(1);
        }
    }
}

fn headroom_key(license: &str, credential: &str) -> String {
    format!("{license}\u{0}{credential}")
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("bucket", &self.bucket)
            .field("window_ms", &self.window_ms)
            .field("limits", &self.limits)
            .finish()
    }
}

impl RateLimiter {
    /// A REST limiter over `pool`.
    pub fn new(pool: deadpool_redis::Pool, window: Duration, limits: TierLimits) -> Self {
        Self::with_bucket(pool, window, limits, "rest")
    }

    /// A limiter with its own bucket name (`rest`, `mcp`).
    pub fn with_bucket(pool: deadpool_redis::Pool, window: Duration, limits: TierLimits, bucket: &'static str) -> Self {
        Self {
            conns: ThreadConnections::new(pool),
            script: redis::Script::new(SCRIPT),
            window_ms: (window.as_millis() as u64).max(1),
            limits,
            bucket,
            fallback: Mutex::new(HashMap::new()),
            fallbacks: AtomicU64::new(0),
            last_warned_window: AtomicU64::new(u64::MAX),
            combining: Mutex::new(HashMap::new()),
            calls: AtomicU64::new(0),
            call_timeout: CALL_TIMEOUT,
            headroom: Mutex::new(HashMap::new()),
            behind: Mutex::new(HashMap::new()),
            hearing_since: Mutex::new(None),
            heard_revoked: Mutex::new(HashMap::new()),
            revocations_here: Mutex::new(None),
        }
    }

    /// Subscribes to the revocations published on `REVOCATIONS_CHANNEL` of
    /// the Redis at `url`, on a thread of its own that ends with the
    /// limiter, and listens to those made in this process
    /// (`tradeterm_protocol::dispatch::revoked_here`, heard before the
    /// revoking call returns): a credential heard revoked is at once no
    /// longer counted behind its work on this instance (its next call is
    /// counted first, and refused). Nothing is counted behind until the
    /// subscription is up, nor while it is lost.
    ///
    /// # Errors
    /// `url` is not a Redis URL, or the thread could not start.
    pub fn hear_revocations(self: &Arc<Self>, url: &str) -> Result<(), String> {
        // Revocations made in this process are heard at once, without Redis.
        let me = Arc::downgrade(self);
        let here: tradeterm_protocol::dispatch::RevocationListener = Arc::new(move |credential: &str| {
            if let Some(limiter) = me.upgrade() {
                limiter.revoked(credential);
            }
        });
        tradeterm_protocol::dispatch::listen_to_revocations_here(&here);
        *self
            .revocations_here
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(here);
        tradeterm_cluster::subscribe::spawn(
            url,
            tradeterm_protocol::dispatch::REVOCATIONS_CHANNEL,
            "tt-revocations",
            RevocationsHeard(Arc::downgrade(self)),
        )
    }

    /// Whether revocations are heard now.
    pub fn hearing_revocations(&self) -> bool {
        self.hearing_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }

    /// A credential was revoked: forget what Redis told of it.
    fn revoked(&self, credential: &str) {
        let now = Instant::now();
        {
            let mut heard = self
                .heard_revoked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            heard.retain(|_, at| now.duration_since(*at) < HEARD_REVOKED_FOR);
            heard.insert(credential.to_owned(), now);
        }
        let suffix = format!("\u{0}{credential}");
        let mut map = self.headroom.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.retain(|k, _| !k.ends_with(&suffix));
    }

    /// The same limiter with another limit on one Redis call's time (tests
    /// that must not fall back when a loaded machine slows Redis down).
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How many Redis calls were made; with combining, at most the number of
    /// requests counted.
    pub fn redis_calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// How many requests were counted by the local fallback because Redis failed.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Counts one request of `license` at `now_ms` and decides.
    pub async fn check(&self, license: &str, tier: Tier, now_ms: u64) -> Decision {
        self.check_inner(license, tier, now_ms, None).await
    }

    /// As [`RateLimiter::check`], and in the same atomic Redis call, whether
    /// the credential `credential_id` has been revoked ([`mark_revoked`]).
    /// When Redis is unreachable the revocation is not known here (`revoked`
    /// is false): callers then check the store.
    pub async fn check_credential(&self, license: &str, tier: Tier, now_ms: u64, credential_id: &str) -> Decision {
        self.check_inner(license, tier, now_ms, Some(credential_id)).await
    }

    /// Whether the last check reached Redis (false while falling back).
    pub fn redis_healthy(&self) -> bool {
        self.last_warned_window.load(Ordering::Relaxed) == u64::MAX
    }

    /// Whether a read-only call of `credential` may start its work before
    /// its count ([`RateLimiter::check_credential`]) answers; see the module
    /// docs. The caller keeps the returned guard until the count answered,
    /// and must still refuse the call if the count does.
    pub fn ahead(&self, license: &str, tier: Tier, now_ms: u64, credential: &str) -> Option<Ahead<'_>> {
        if !self.redis_healthy() {
            return None;
        }
        let margin = (self.limits.of(tier) / 10).max(2);
        let key = headroom_key(license, credential);
        let mut map = self.headroom.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let h = map.get_mut(&key)?;
        if h.window != now_ms / self.window_ms || h.remaining.saturating_sub(h.ahead) <= margin {
            return None;
        }
        h.ahead += 1;
        Some(Ahead { limiter: self, key })
    }

    /// Records the room a count of `credential` sent at `sent` left (none
    /// when refused, revoked or counted locally); `flushed` calls counted
    /// behind were part of it.
    fn learn(&self, license: &str, credential: &str, window: u64, remaining: Option<u64>, sent: Instant, flushed: u64) {
        let key = headroom_key(license, credential);
        let mut map = self.headroom.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match remaining {
            Some(remaining) => {
                if map.len() >= HEADROOM_MAX && !map.contains_key(&key) {
                    map.retain(|_, h| h.ahead > 0 || h.behind > 0);
                }
                let h = map.entry(key).or_insert(Headroom {
                    window,
                    remaining,
                    ahead: 0,
                    at: sent,
                    behind: 0,
                });
                h.behind = h.behind.saturating_sub(flushed);
                // An older count answering late tells less than the one kept.
                if h.window < window || (h.window == window && sent >= h.at) {
                    h.window = window;
                    h.remaining = remaining;
                    h.at = sent;
                }
            }
            None => {
                if let Some(h) = map.get_mut(&key) {
                    h.behind = h.behind.saturating_sub(flushed);
                    h.remaining = 0;
                }
            }
        }
    }

    async fn check_inner(&self, license: &str, tier: Tier, now_ms: u64, credential: Option<&str>) -> Decision {
        let sent = Instant::now();
        let decision = self.count(license, tier, now_ms, credential).await;
        if let Some(credential) = credential {
            let room = (decision.allowed && self.redis_healthy()).then_some(decision.remaining);
            self.learn(license, credential, now_ms / self.window_ms, room, sent, 0);
        }
        decision
    }

    /// Admits a read-only call of `credential` without waiting for Redis, if
    /// Redis counted the credential recently with ample room left (see the
    /// module docs), and queues its count: the decision for the response's
    /// headers. `None`: count it the usual way. Needs a Tokio runtime (the
    /// flush runs on it); without one, nothing is counted behind.
    pub fn count_behind(
        self: &Arc<Self>,
        license: &str,
        tier: Tier,
        now_ms: u64,
        credential: &str,
    ) -> Option<Decision> {
        if !self.redis_healthy() {
            return None;
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let hearing_since = (*self
            .hearing_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))?;
        if self
            .heard_revoked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(credential)
            .is_some_and(|at| at.elapsed() < HEARD_REVOKED_FOR)
        {
            return None;
        }
        let limit = self.limits.of(tier);
        let window = now_ms / self.window_ms;
        let reserve = (limit / 2).max(BEHIND_FLOOR);
        let remaining = {
            let mut map = self.headroom.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let h = map.get_mut(&headroom_key(license, credential))?;
            let room = h.remaining.saturating_sub(h.ahead).saturating_sub(reserve);
            if h.window != window
                || h.at < hearing_since
                || h.at.elapsed() >= CONFIRMED_FOR
                || h.behind >= room / BEHIND_SHARE
            {
                return None;
            }
            h.behind += 1;
            h.remaining.saturating_sub(h.ahead + h.behind)
        };
        let key = (
            format!("tt:rl:{}:{license}:{window}", self.bucket),
            revocation_key(credential),
        );
        let first = {
            let mut queued = self.behind.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match queued.get_mut(&key) {
                Some(b) => {
                    b.n += 1;
                    false
                }
                None => {
                    queued.insert(
                        key.clone(),
                        Behind {
                            n: 1,
                            license: license.to_owned(),
                            credential: credential.to_owned(),
                            window,
                            limit,
                        },
                    );
                    true
                }
            }
        };
        if first {
            let limiter = self.clone();
            runtime.spawn(async move {
                tokio::time::sleep(BEHIND_FLUSH_AFTER).await;
                limiter.flush_behind(&key).await;
            });
        }
        let reset_ms = (window + 1) * self.window_ms;
        Some(Decision {
            allowed: true,
            limit,
            remaining,
            reset: reset_ms.div_ceil(1000),
            retry_after: 0,
            revoked: false,
        })
    }

    /// Sends the counts queued behind their work for one counter.
    async fn flush_behind(&self, key: &BehindKey) {
        let Some(b) = self
            .behind
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key)
        else {
            return;
        };
        let sent = Instant::now();
        let result = match tokio::time::timeout(self.call_timeout, self.incr_by(&key.0, Some(&key.1), b.n as i64)).await
        {
            Ok(r) => r,
            Err(_) => {
                self.drop_connection();
                Err(format!("timed out after {} ms", self.call_timeout.as_millis()))
            }
        };
        let room = match result {
            Ok(c) if c < 0 => {
                tracing::info!(
                    bucket = self.bucket,
                    calls = b.n,
                    "credential revoked: its next calls are refused"
                );
                tradeterm_telemetry::record::rate_limit(self.bucket, "revoked", true);
                None
            }
            Ok(c) => {
                self.last_warned_window.store(u64::MAX, Ordering::Relaxed);
                let over = (c as u64).saturating_sub(b.limit).min(b.n);
                if over > 0 {
                    tracing::warn!(
                        bucket = self.bucket,
                        over,
                        "calls counted behind their work went over the limit"
                    );
                }
                // Each was admitted (and answered) already.
                for _ in 0..b.n {
                    tradeterm_telemetry::record::rate_limit(self.bucket, "allowed", true);
                }
                (over == 0).then(|| b.limit.saturating_sub(c as u64))
            }
            Err(e) => {
                for _ in 0..b.n {
                    self.local(&b.license, b.window, &e);
                }
                None
            }
        };
        self.learn(&b.license, &b.credential, b.window, room, sent, b.n);
    }

    async fn count(&self, license: &str, tier: Tier, now_ms: u64, credential: Option<&str>) -> Decision {
        let limit = self.limits.of(tier);
        let window = now_ms / self.window_ms;
        let reset_ms = (window + 1) * self.window_ms;
        let key = format!("tt:rl:{}:{license}:{window}", self.bucket);
        let revoke_key = credential.map(revocation_key);
        let mut redis = true;
        let count = match self.incr(&key, revoke_key.as_deref()).await {
            Ok(c) if c < 0 => {
                tradeterm_telemetry::record::rate_limit(self.bucket, "revoked", true);
                return Decision {
                    allowed: false,
                    limit,
                    remaining: 0,
                    reset: reset_ms.div_ceil(1000),
                    retry_after: 0,
                    revoked: true,
                };
            }
            Ok(c) => {
                self.last_warned_window.store(u64::MAX, Ordering::Relaxed);
                c as u64
            }
            Err(e) => {
                redis = false;
                self.local(license, window, &e)
            }
        };
        let allowed = count <= limit;
        let decision = if allowed { "allowed" } else { "limited" };
        tradeterm_telemetry::record::rate_limit(self.bucket, decision, redis);
        Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(count),
            reset: reset_ms.div_ceil(1000),
            retry_after: if allowed {
                0
            } else {
                (reset_ms - now_ms).div_ceil(1000).max(1)
            },
            revoked: false,
        }
    }

    /// Forgets this thread's connection (after an error or a timeout).
    fn drop_connection(&self) {
        self.conns.forget();
    }

    /// This thread's connection, opened on first use.
    async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, String> {
        self.conns.get().await
    }

    /// Counts one request of `key` (checking `revoke_key`), combined with the
    /// concurrent requests of the same counter (see the module docs): the
    /// request's own count, or -1 when revoked.
    async fn incr(&self, key: &str, revoke_key: Option<&str>) -> Result<i64, String> {
        let batch_key: BatchKey = (
            std::thread::current().id(),
            key.to_owned(),
            revoke_key.map(str::to_owned),
        );
        let queued = {
            let Ok(mut map) = self.combining.lock() else {
                return self.incr_by(key, revoke_key, 1).await;
            };
            match map.get_mut(&batch_key) {
                Some(queue) => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    queue.push(tx);
                    Some(rx)
                }
                None => {
                    map.insert(batch_key.clone(), Vec::new());
                    None
                }
            }
        };
        let followers = match queued {
            None => Vec::new(),
            Some(rx) => match rx.await {
                Ok(Handoff::Count(r)) => return r,
                Ok(Handoff::Lead(batch)) => batch,
                Err(_) => return Err("the rate-limit batch was abandoned".into()),
            },
        };
        let count = 1 + followers.len();
        let mut lead = Lead {
            limiter: self,
            key: batch_key,
            followers,
            done: false,
        };
        // Only the call is timed: a queued request waits for the call in
        // flight (at most the call timeout), then for its own batch's call (at most
        // the call timeout again), and needs no timer of its own.
        let result = match tokio::time::timeout(self.call_timeout, self.incr_by(key, revoke_key, count as i64)).await {
            Ok(r) => r,
            Err(_) => {
                // A timed-out call may have left the connection in an unknown state.
                self.drop_connection();
                Err(format!("timed out after {} ms", self.call_timeout.as_millis()))
            }
        };
        lead.finish(result)
    }

    /// Runs the script with `EVALSHA` (the script is loaded on first use and
    /// again after a Redis restart, transparently): counts `n` requests.
    async fn incr_by(&self, key: &str, revoke_key: Option<&str>, n: i64) -> Result<i64, String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.connection().await?;
        let mut call = self.script.key(key);
        if let Some(r) = revoke_key {
            call.key(r);
        }
        let r = call.arg(self.window_ms * 2).arg(n).invoke_async::<i64>(&mut conn).await;
        if r.is_err() {
            self.drop_connection();
        }
        r.map_err(|e| e.to_string())
    }

    /// Passes the lead of `key` to the first request still waiting behind it,
    /// with the others as its batch; forgets the key when nobody waits.
    fn hand_over(&self, key: &BatchKey) {
        let Ok(mut map) = self.combining.lock() else { return };
        let mut queue = match map.get_mut(key) {
            Some(q) => std::mem::take(q),
            None => return,
        };
        // Under the lock, so that nobody queues behind a key being forgotten.
        while !queue.is_empty() {
            let next = queue.remove(0);
            match next.send(Handoff::Lead(queue)) {
                Ok(()) => return,
                // That request gave up (timed out or cancelled): try the next one.
                Err(Handoff::Lead(rest)) => queue = rest,
                Err(Handoff::Count(_)) => return,
            }
        }
        map.remove(key);
    }

    fn local(&self, license: &str, window: u64, error: &dyn std::fmt::Display) -> u64 {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        tradeterm_telemetry::record::redis_error("ratelimit");
        if self.last_warned_window.swap(window, Ordering::Relaxed) != window {
            tracing::warn!(bucket = self.bucket, %error, "rate-limit store unreachable; counting locally on this instance");
        }
        let Ok(mut map) = self.fallback.lock() else { return 0 };
        if map.len() > 100_000 {
            map.retain(|_, (w, _)| *w == window);
        }
        let entry = map.entry(license.to_owned()).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        entry.1 += 1;
        entry.1
    }
}

/// The subscription of [`RateLimiter::hear_revocations`].
struct RevocationsHeard(std::sync::Weak<RateLimiter>);

impl tradeterm_cluster::subscribe::Subscription for RevocationsHeard {
    async fn heard(&self, what: tradeterm_cluster::subscribe::Heard) {
        use tradeterm_cluster::subscribe::Heard;
        let Some(limiter) = self.0.upgrade() else { return };
        match what {
            // What was learnt before may predate an unheard revocation.
            Heard::Up => {
                *limiter
                    .hearing_since
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now())
            }
            Heard::Down => {
                *limiter
                    .hearing_since
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = None
            }
            Heard::Messages(credentials) => {
                for credential in &credentials {
                    limiter.revoked(credential);
                }
            }
        }
    }

    fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// The request that sends a batch. Dropping it without [`Lead::finish`]
/// (the request was cancelled or timed out mid-call) fails its followers,
/// which then count locally, and still hands the lead over, so no request
/// ever waits behind a call that will not answer.
struct Lead<'a> {
    limiter: &'a RateLimiter,
    key: BatchKey,
    followers: Vec<Waiter>,
    done: bool,
}

impl Lead<'_> {
    /// Gives every follower its count and returns the leader's own.
    fn finish(&mut self, result: Result<i64, String>) -> Result<i64, String> {
        self.done = true;
        let followers = std::mem::take(&mut self.followers);
        let n = 1 + followers.len() as i64;
        let own = match &result {
            Ok(total) if *total >= 0 => Ok(total - n + 1),
            other => other.clone(),
        };
        for (i, f) in followers.into_iter().enumerate() {
            let count = match &own {
                Ok(first) => Ok(first + 1 + i as i64),
                Err(e) => Err(e.clone()),
            };
            let r = if matches!(result, Ok(-1)) { Ok(-1) } else { count };
            let _ = f.send(Handoff::Count(r));
        }
        self.limiter.hand_over(&self.key);
        own
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        for f in std::mem::take(&mut self.followers) {
            let _ = f.send(Handoff::Count(Err("the rate-limit call was abandoned".into())));
        }
        self.limiter.hand_over(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(url: &str) -> deadpool_redis::Pool {
        deadpool_redis::Config::from_url(url)
            .create_pool(Some(deadpool_redis::Runtime::Tokio1))
            .unwrap()
    }

    fn unique(prefix: &str) -> String {
        format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
    }

    #[tokio::test]
    async fn counts_exactly_in_redis_and_resets_with_the_window() {
        let limiter = RateLimiter::new(
            pool("redis://127.0.0.1:6379"),
            Duration::from_secs(60),
            TierLimits::default(),
        );
        let license = unique("lic");
        let t0 = 1_000_000 * 60_000 + 5_000; // 5 s into a window
        for call in 1..=10u64 {
            let decision = limiter.check(&license, Tier::Free, t0).await;
            assert!(decision.allowed, "request {call}");
            assert_eq!((decision.limit, decision.remaining), (10, 10 - call));
            assert_eq!(decision.reset, (1_000_001 * 60_000) / 1000);
        }
        let decision = limiter.check(&license, Tier::Free, t0 + 1_000).await;
        assert!(!decision.allowed);
        assert_eq!(decision.retry_after, 54);
        assert_eq!(limiter.fallbacks(), 0, "Redis was used, not the fallback");
        // Next window: a fresh bucket.
        let decision = limiter.check(&license, Tier::Free, t0 + 60_000).await;
        assert!(decision.allowed && decision.remaining == 9);
        // REST and MCP buckets are separate.
        let mcp = RateLimiter::with_bucket(
            pool("redis://127.0.0.1:6379"),
            Duration::from_secs(60),
            TierLimits::default(),
            "mcp",
        );
        assert_eq!(mcp.check(&license, Tier::Free, t0).await.remaining, 9);
    }

    #[tokio::test]
    async fn concurrent_requests_are_counted_atomically() {
        let limiter = std::sync::Arc::new(RateLimiter::new(
            pool("redis://127.0.0.1:6379"),
            Duration::from_secs(60),
            TierLimits::default(),
        ));
        let license = unique("lic");
        let now = 2_000_000 * 60_000;
        let tasks: Vec<_> = (0..60)
            .map(|_| {
                let shared = limiter.clone();
                let lic = license.clone();
                tokio::spawn(async move { shared.check(&lic, Tier::Pro, now).await.allowed })
            })
            .collect();
        let mut allowed = 0;
        for task in tasks {
            allowed += usize::from(task.await.unwrap());
        }
        assert_eq!(allowed, 60);
        assert!(
            !limiter.check(&license, Tier::Pro, now).await.allowed,
            "the 61st Pro request is refused"
        );
    }

    #[tokio::test]
    async fn concurrent_requests_share_redis_calls_and_each_gets_its_own_count() {
        // A loaded machine may take longer than 50 ms for a Redis call; the
        // fallback is tested elsewhere, combining is tested here.
        let limiter = std::sync::Arc::new(
            RateLimiter::new(
                pool("redis://127.0.0.1:6379"),
                Duration::from_secs(60),
                TierLimits::default(),
            )
            .with_call_timeout(Duration::from_secs(5)),
        );
        let license = unique("lic");
        let now = 5_000_000 * 60_000;
        // 1200 Enterprise requests (limit 1000) at once, then the counter in Redis.
        let tasks: Vec<_> = (0..1200)
            .map(|_| {
                let shared = limiter.clone();
                let lic = license.clone();
                tokio::spawn(async move { shared.check(&lic, Tier::Enterprise, now).await })
            })
            .collect();
        let mut remaining = Vec::new();
        let mut allowed = 0;
        for task in tasks {
            let decision = task.await.unwrap();
            allowed += usize::from(decision.allowed);
            if decision.allowed {
                remaining.push(decision.remaining);
            }
        }
        assert_eq!(limiter.fallbacks(), 0);
        assert_eq!(allowed, 1000, "exactly the limit is admitted");
        remaining.sort_unstable();
        assert_eq!(
            remaining,
            (0..1000).collect::<Vec<u64>>(),
            "every admitted request got its own count"
        );
        assert!(
            limiter.redis_calls() < 1200,
            "requests queued behind a call in flight were combined ({} calls)",
            limiter.redis_calls()
        );
        let mut conn = pool("redis://127.0.0.1:6379").get().await.unwrap();
        let stored: i64 = redis::cmd("GET")
            .arg(format!("tt:rl:rest:{license}:{}", now / 60_000))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(stored, 1200, "the counter moved by exactly the number of requests");
        assert!(limiter.combining.lock().unwrap().is_empty(), "nothing left in flight");
        // A lone request afterwards is sent at once and counted.
        let calls = limiter.redis_calls();
        assert_eq!(limiter.check(&license, Tier::Enterprise, now).await.remaining, 0);
        assert_eq!(limiter.redis_calls(), calls + 1);
    }

    #[tokio::test]
    async fn a_call_that_never_answers_releases_everyone_queued_behind_it() {
        // A server that accepts connections and never answers: every call times out.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = silent.local_addr().unwrap().port();
        let _keep = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((sock, _)) = silent.accept().await {
                open.push(sock);
            }
        });
        let limiter = std::sync::Arc::new(RateLimiter::new(
            pool(&format!("redis://127.0.0.1:{port}")),
            Duration::from_secs(60),
            TierLimits::default(),
        ));
        let now = 6_000_000 * 60_000;
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let shared = limiter.clone();
                tokio::spawn(async move { shared.check("lic-silent", Tier::Pro, now).await })
            })
            .collect();
        // Liveness, not speed: without the hand-over the queued requests would wait forever.
        let all = tokio::time::timeout(Duration::from_secs(30), futures_util::future::join_all(tasks))
            .await
            .expect("every request was released");
        let mut remaining: Vec<u64> = all.into_iter().map(|d| d.unwrap().remaining).collect();
        remaining.sort_unstable();
        assert_eq!(remaining, (40..60).collect::<Vec<u64>>(), "counted locally, one each");
        assert_eq!(limiter.fallbacks(), 20);
        assert!(
            limiter.combining.lock().unwrap().is_empty(),
            "no counter is left marked as in flight after abandoned calls"
        );
    }

    #[tokio::test]
    async fn revoked_credentials_are_refused_in_the_same_round_trip() {
        let p = pool("redis://127.0.0.1:6379");
        let limiter = RateLimiter::new(p.clone(), Duration::from_secs(60), TierLimits::default());
        let license = unique("lic");
        let key_id = unique("key");
        let now = 4_000_000 * 60_000;
        let d = limiter.check_credential(&license, Tier::Pro, now, &key_id).await;
        assert!(d.allowed && !d.revoked && d.remaining == 59);
        mark_revoked(&p, &key_id).await.unwrap();
        let d = limiter.check_credential(&license, Tier::Pro, now, &key_id).await;
        assert!(!d.allowed && d.revoked);
        // The refused request was not counted; other credentials of the license still work.
        let d = limiter.check_credential(&license, Tier::Pro, now, &unique("key")).await;
        assert!(d.allowed && d.remaining == 58, "{d:?}");
    }

    #[tokio::test]
    async fn only_a_credential_with_ample_room_left_goes_ahead_of_its_count() {
        let p = pool("redis://127.0.0.1:6379");
        let limiter = RateLimiter::new(p.clone(), Duration::from_secs(60), TierLimits::default());
        let license = unique("lic");
        let key = unique("key");
        let now = 8_000_000 * 60_000;
        // Nothing counted yet on this instance: the first call waits.
        assert!(limiter.ahead(&license, Tier::Pro, now, &key).is_none());
        // 59 left of 60: calls go ahead while more than 6 (a tenth) would stay.
        assert!(limiter.check_credential(&license, Tier::Pro, now, &key).await.allowed);
        let held: Vec<_> = (0..53)
            .map_while(|_| limiter.ahead(&license, Tier::Pro, now, &key))
            .collect();
        assert_eq!(held.len(), 53, "the 53rd: 59 - 52 = 7 > 6");
        assert!(
            limiter.ahead(&license, Tier::Pro, now, &key).is_none(),
            "59 - 53 = 6: wait"
        );
        drop(held);
        // Another credential of the same license learns its own room.
        assert!(limiter.ahead(&license, Tier::Pro, now, &unique("key")).is_none());
        // The next window starts with a count that waits.
        assert!(limiter.ahead(&license, Tier::Pro, now + 60_000, &key).is_none());
        // Near the limit: counts wait, so requests over it never start work.
        for _ in 0..52 {
            assert!(limiter.check_credential(&license, Tier::Pro, now, &key).await.allowed);
        }
        assert!(limiter.ahead(&license, Tier::Pro, now, &key).is_some(), "7 left");
        assert!(limiter.check_credential(&license, Tier::Pro, now, &key).await.allowed);
        assert!(limiter.ahead(&license, Tier::Pro, now, &key).is_none(), "6 left: wait");
        // A revoked credential waits for its count (which refuses it).
        let other = unique("key");
        assert!(
            limiter
                .check_credential(&license, Tier::Enterprise, now, &other)
                .await
                .allowed
        );
        assert!(limiter.ahead(&license, Tier::Enterprise, now, &other).is_some());
        mark_revoked(&p, &other).await.unwrap();
        assert!(
            limiter
                .check_credential(&license, Tier::Enterprise, now, &other)
                .await
                .revoked
        );
        assert!(limiter.ahead(&license, Tier::Enterprise, now, &other).is_none());
    }

    /// The counter of `license` in the REST bucket, read from Redis.
    async fn counted(p: &deadpool_redis::Pool, license: &str, window: u64) -> i64 {
        let mut c = p.get().await.unwrap();
        redis::cmd("GET")
            .arg(format!("tt:rl:rest:{license}:{window}"))
            .query_async::<Option<i64>>(&mut c)
            .await
            .unwrap()
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn calls_counted_behind_their_work_reach_redis_and_stop_near_the_limit_or_once_revoked() {
        let p = pool("redis://127.0.0.1:6379");
        let limiter = Arc::new(RateLimiter::new(
            p.clone(),
            Duration::from_secs(60),
            TierLimits::default(),
        ));
        let license = unique("lic");
        let key = unique("key");
        let window = 8_100_000;
        let now = window * 60_000;
        // Not hearing revocations: nothing is counted behind.
        assert!(
            limiter
                .check_credential(&license, Tier::Enterprise, now, &key)
                .await
                .allowed
        );
        assert!(limiter.count_behind(&license, Tier::Enterprise, now, &key).is_none());
        limiter.hear_revocations("redis://127.0.0.1:6379").unwrap();
        for _ in 0..250 {
            if limiter.hearing_revocations() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(limiter.hearing_revocations());
        // What was learnt before hearing began is not enough either.
        assert!(limiter.count_behind(&license, Tier::Enterprise, now, &key).is_none());
        let license = unique("lic");
        assert!(
            limiter
                .check_credential(&license, Tier::Enterprise, now, &key)
                .await
                .allowed
        );
        // 999 of 1000 left: (999 - 500) / 16 = 31 calls may go before Redis counts them.
        let behind: Vec<Decision> = (0..40)
            .map_while(|_| limiter.count_behind(&license, Tier::Enterprise, now, &key))
            .collect();
        assert_eq!(behind.len(), 31);
        assert!(behind.iter().all(|d| d.allowed && d.limit == 1000));
        assert_eq!(behind.last().unwrap().remaining, 999 - 31);
        assert_eq!(counted(&p, &license, window).await, 1, "not flushed yet");
        // Flushed in one call: every call counted, and the room learnt again.
        let calls = limiter.redis_calls();
        tokio::time::sleep(BEHIND_FLUSH_AFTER * 5).await;
        assert_eq!(counted(&p, &license, window).await, 32);
        assert_eq!(limiter.redis_calls(), calls + 1);
        let d = limiter.count_behind(&license, Tier::Enterprise, now, &key).unwrap();
        assert_eq!(d.remaining, 1000 - 32 - 1);
        // Another window starts with a count.
        assert!(
            limiter
                .count_behind(&license, Tier::Enterprise, now + 60_000, &key)
                .is_none()
        );
        // No count answered for CONFIRMED_FOR: the next call is counted first.
        tokio::time::sleep(CONFIRMED_FOR + Duration::from_millis(20)).await;
        assert_eq!(counted(&p, &license, window).await, 33);
        assert!(limiter.count_behind(&license, Tier::Enterprise, now, &key).is_none());

        // A revocation made in this process is heard before the revoking
        // call returns, without Redis.
        let here = unique("key");
        assert!(
            limiter
                .check_credential(&license, Tier::Enterprise, now, &here)
                .await
                .allowed
        );
        assert!(limiter.count_behind(&license, Tier::Enterprise, now, &here).is_some());
        tradeterm_protocol::dispatch::revoked_here(&here);
        assert!(limiter.count_behind(&license, Tier::Enterprise, now, &here).is_none());

        // A small limit is never counted behind: half of 60 is under the floor.
        let pro = unique("key");
        assert!(limiter.check_credential(&license, Tier::Pro, now, &pro).await.allowed);
        assert!(limiter.count_behind(&license, Tier::Pro, now, &pro).is_none());

        // A revocation is heard at once: the next call is counted first, and refused.
        let revoked = unique("key");
        let other = unique("lic");
        assert!(
            limiter
                .check_credential(&other, Tier::Enterprise, now, &revoked)
                .await
                .allowed
        );
        mark_revoked(&p, &revoked).await.unwrap();
        let mut heard = false;
        for _ in 0..100 {
            if limiter.heard_revoked.lock().unwrap().contains_key(&revoked) {
                heard = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(heard, "the revocation was heard");
        assert!(limiter.count_behind(&other, Tier::Enterprise, now, &revoked).is_none());
        assert!(limiter.ahead(&other, Tier::Enterprise, now, &revoked).is_none());
        assert!(
            limiter
                .check_credential(&other, Tier::Enterprise, now, &revoked)
                .await
                .revoked
        );

        // A revocation that was not heard (a mark written without its
        // message): the calls queued meanwhile were admitted, their flush
        // learns the revocation, and nothing more goes behind.
        let unheard = unique("key");
        assert!(
            limiter
                .check_credential(&other, Tier::Enterprise, now, &unheard)
                .await
                .allowed
        );
        let mut c = p.get().await.unwrap();
        let _: () = redis::cmd("SET")
            .arg(revocation_key(&unheard))
            .arg(1)
            .arg("EX")
            .arg(60)
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(limiter.count_behind(&other, Tier::Enterprise, now, &unheard).is_some());
        tokio::time::sleep(BEHIND_FLUSH_AFTER * 5).await;
        assert!(limiter.count_behind(&other, Tier::Enterprise, now, &unheard).is_none());
        assert!(limiter.ahead(&other, Tier::Enterprise, now, &unheard).is_none());
        assert!(
            limiter
                .check_credential(&other, Tier::Enterprise, now, &unheard)
                .await
                .revoked
        );
        assert_eq!(
            counted(&p, &other, window).await,
            2,
            "one count of each credential before its revocation; none after"
        );
    }

    #[tokio::test]
    async fn nothing_is_counted_behind_while_redis_is_unreachable() {
        let limiter = Arc::new(RateLimiter::new(
            pool("redis://127.0.0.1:1"),
            Duration::from_secs(60),
            TierLimits::default(),
        ));
        let now = 9_100_000 * 60_000;
        assert!(
            limiter
                .check_credential("lic-z", Tier::Enterprise, now, "k")
                .await
                .allowed
        );
        assert!(limiter.count_behind("lic-z", Tier::Enterprise, now, "k").is_none());
    }

    #[tokio::test]
    async fn nothing_goes_ahead_while_redis_is_unreachable() {
        let limiter = RateLimiter::new(
            pool("redis://127.0.0.1:1"),
            Duration::from_secs(60),
            TierLimits::default(),
        );
        let now = 9_000_000 * 60_000;
        assert!(
            limiter
                .check_credential("lic-y", Tier::Enterprise, now, "k")
                .await
                .allowed
        );
        assert!(limiter.ahead("lic-y", Tier::Enterprise, now, "k").is_none());
    }

    #[tokio::test]
    async fn unreachable_redis_falls_back_to_local_counting_without_failing() {
        // Nothing listens on port 1.
        let limiter = RateLimiter::new(
            pool("redis://127.0.0.1:1"),
            Duration::from_secs(60),
            TierLimits::default(),
        );
        let now = 3_000_000 * 60_000;
        for i in 1..=10u64 {
            let d = limiter.check("lic-x", Tier::Free, now).await;
            assert!(d.allowed, "request {i} must not fail because Redis is down");
            assert_eq!(d.remaining, 10 - i);
        }
        assert!(
            !limiter.check("lic-x", Tier::Free, now).await.allowed,
            "the tier limit still holds locally"
        );
        assert_eq!(limiter.fallbacks(), 11);
    }
}
