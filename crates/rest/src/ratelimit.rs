//! Per-license rate limiting over a fixed window, shared by every API
//! instance through Redis (spec §8).
//!
//! Windows are aligned on the unix epoch (`window_index = now_ms / window`),
//! so every instance agrees on when a window resets without coordination.
//! The counter `tt:rl:rest:{license}:{window_index}` is incremented by a Lua
//! script (atomic in Redis) that also sets its expiry; the REST bucket is
//! separate from the MCP dispatch bucket (`tt:rl:mcp:…`).
//!
//! **When Redis is unreachable** (error or no answer within 50 ms) the
//! request is not failed: the limiter falls back to a per-instance counter
//! with the same window and limits (so one instance still enforces the tier
//! limit on its own traffic), logs a warning at most once per window, and
//! counts the event in [`RateLimiter::fallbacks`]. No 5xx is ever caused by
//! the rate limiter.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_redis::redis;
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
        Self { free: 10, pro: 60, team: 300, enterprise: 1000 }
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
}

const SCRIPT: &str = r"
local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return c
";

/// The limiter.
pub struct RateLimiter {
    pool: deadpool_redis::Pool,
    window_ms: u64,
    limits: TierLimits,
    bucket: &'static str,
    fallback: Mutex<HashMap<String, (u64, u64)>>,
    fallbacks: AtomicU64,
    last_warned_window: AtomicU64,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter").field("window_ms", &self.window_ms).field("limits", &self.limits).finish()
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
            pool,
            window_ms: (window.as_millis() as u64).max(1),
            limits,
            bucket,
            fallback: Mutex::new(HashMap::new()),
            fallbacks: AtomicU64::new(0),
            last_warned_window: AtomicU64::new(u64::MAX),
        }
    }

    /// How many requests were counted by the local fallback because Redis failed.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Counts one request of `license` at `now_ms` and decides.
    pub async fn check(&self, license: &str, tier: Tier, now_ms: u64) -> Decision {
        let limit = self.limits.of(tier);
        let window = now_ms / self.window_ms;
        let reset_ms = (window + 1) * self.window_ms;
        let key = format!("tt:rl:{}:{license}:{window}", self.bucket);
        let count = match tokio::time::timeout(Duration::from_millis(50), self.incr(&key)).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => self.local(license, window, &e),
            Err(_) => self.local(license, window, &"timed out after 50 ms"),
        };
        let allowed = count <= limit;
        Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(count),
            reset: reset_ms.div_ceil(1000),
            retry_after: if allowed { 0 } else { (reset_ms - now_ms).div_ceil(1000).max(1) },
        }
    }

    async fn incr(&self, key: &str) -> Result<u64, String> {
        let mut conn = self.pool.get().await.map_err(|e| e.to_string())?;
        redis::cmd("EVAL")
            .arg(SCRIPT)
            .arg(1)
            .arg(key)
            .arg(self.window_ms * 2)
            .query_async::<u64>(&mut conn)
            .await
            .map_err(|e| e.to_string())
    }

    fn local(&self, license: &str, window: u64, error: &dyn std::fmt::Display) -> u64 {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        if self.last_warned_window.swap(window, Ordering::Relaxed) != window {
            tracing::warn!(%error, "rate-limit store unreachable; counting locally on this instance");
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
