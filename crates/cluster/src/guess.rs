//! The credential-guessing throttle: failed authentications counted per
//! source address (and per key prefix), shared by every instance through
//! Redis (`KEYVALUE_URL`), else counted in this process.
//!
//! Every surface that checks a credential (the gateway's token exchange,
//! the REST API, the MCP endpoint, the agents' `hello`, the dashboard
//! sign-in) asks [`GuessGuard::check`] before checking it and tells
//! [`GuessGuard::failed`] when it was wrong. Only failures count: a source
//! whose credentials are right is never slowed, however fast it goes.
//!
//! - **Per source.** After `threshold` failures from one address (an IPv6
//!   address counts as its /64) within `window` of each other, the address
//!   is blocked for `block`; every further failure once the streak passed
//!   the threshold blocks it again for twice as long, up to `max_block`.
//!   A blocked address gets 429 `RATE_LIMITED` with `Retry-After` for every
//!   credential, before the credential is checked (so a blocked guess tells
//!   the guesser nothing). The streak ends `window` after the last block or
//!   failure.
//! - **Per key prefix.** Failures are also counted by the credential's first
//!   [`KEY_PREFIX_CHARS`] characters, with their own threshold: a guesser
//!   spread over many addresses who keeps the start of one key. A blocked
//!   prefix is refused only to sources that have failed themselves; a
//!   source with a clean record is checked as usual, so the key's owner
//!   keeps working.
//!
//! The source address is the peer address, or, when the peer is a trusted
//! proxy ([`TrustedProxies`], `TRUSTED_PROXIES`), the right-most address of
//! `X-Forwarded-For` that is not itself one.
//!
//! Redis keys: `tt:guess:src:{address}` and `tt:guess:key:{prefix}`, hashes
//! of the streak's failures (`f`), the block level (`l`) and the blocked-until
//! time in unix ms (`u`), expiring `window` after the block ends; each check
//! and each failure is one atomic script. While Redis cannot be reached the
//! instance counts alone (and says so in `tradeterm_redis_errors_total`,
//! component `guess`). Nothing of a credential but the prefix is kept.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use deadpool_redis::redis;

use crate::conn::ThreadConnections;

/// Characters of a credential the per-prefix counter is keyed by.
pub const KEY_PREFIX_CHARS: usize = 12;

/// The throttle's settings (`AUTH_GUESS_*`, docs/security.md).
#[derive(Debug, Clone)]
pub struct GuessSettings {
    /// Failures from one source before it is blocked (0 turns the throttle off).
    pub threshold: u32,
    /// Failures with one key prefix, from any sources, before the prefix is
    /// blocked for sources that failed (0 turns the per-prefix counter off).
    pub key_threshold: u32,
    /// A streak of failures ends this long after its last failure or block.
    pub window: Duration,
    /// The first block; each further one doubles.
    pub block: Duration,
    /// The longest block.
    pub max_block: Duration,
}

impl Default for GuessSettings {
    fn default() -> Self {
        Self {
            threshold: 10,
            key_threshold: 50,
            window: Duration::from_secs(15 * 60),
            block: Duration::from_secs(1),
            max_block: Duration::from_secs(15 * 60),
        }
    }
}

/// A refusal: the source (or the key prefix) is blocked for `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked {
    /// How long until the block ends.
    pub retry_after: Duration,
    /// `source` or `key`: what is blocked (a metric label).
    pub scope: &'static str,
}

impl Blocked {
    /// `Retry-After` in whole seconds (at least 1).
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after.as_millis().div_ceil(1000).max(1) as u64
    }

    /// The message of the 429.
    pub fn message(&self) -> String {
        format!(
            "too many failed authentications from this address; retry after {} s",
            self.retry_after_secs()
        )
    }
}

/// One counter's state (the hash fields of the Redis keys).
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    failures: u32,
    level: u32,
    until_ms: i64,
    expires_ms: i64,
}

/// The throttle. Cheap to share behind an `Arc`; one per process.
pub struct GuessGuard {
    settings: GuessSettings,
    trusted: TrustedProxies,
    redis: Option<ThreadConnections>,
    local: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for GuessGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuessGuard")
            .field("settings", &self.settings)
            .field("redis", &self.redis.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for GuessGuard {
    fn default() -> Self {
        Self::new(GuessSettings::default(), TrustedProxies::default(), None)
    }
}

const CHECK_SCRIPT: &str = r"
local now = tonumber(ARGV[1])
local u = tonumber(redis.call('HGET', KEYS[1], 'u') or '0')
if u > now then return {u - now, 1} end
if #KEYS > 1 then
  local f = tonumber(redis.call('HGET', KEYS[1], 'f') or '0')
  if f > 0 then
    local ku = tonumber(redis.call('HGET', KEYS[2], 'u') or '0')
    if ku > now then return {ku - now, 2} end
  end
end
return {0, 0}
";

const FAILED_SCRIPT: &str = r"
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local block = tonumber(ARGV[3])
local maxb = tonumber(ARGV[4])
for i, key in ipairs(KEYS) do
  local threshold = tonumber(ARGV[4 + i])
  local f = tonumber(redis.call('HGET', key, 'f') or '0') + 1
  local l = tonumber(redis.call('HGET', key, 'l') or '0')
  local u = tonumber(redis.call('HGET', key, 'u') or '0')
  if f >= threshold then
    if l < 40 then l = l + 1 end
    local d = block * math.pow(2, l - 1)
    if d > maxb then d = maxb end
    u = now + d
  end
  redis.call('HSET', key, 'f', f, 'l', l, 'u', u)
  local ttl = window
  if u > now then ttl = (u - now) + window end
  redis.call('PEXPIRE', key, math.floor(ttl))
end
return 1
";

static CHECK: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| redis::Script::new(CHECK_SCRIPT));
static FAILED: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| redis::Script::new(FAILED_SCRIPT));

/// How long a Redis call of the throttle may take before this instance counts alone.
const REDIS_TIMEOUT: Duration = Duration::from_millis(200);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl GuessGuard {
    /// A throttle with `settings`, reading sources through `trusted`, shared
    /// through Redis when `redis` is given.
    pub fn new(settings: GuessSettings, trusted: TrustedProxies, redis: Option<deadpool_redis::Pool>) -> Self {
        Self {
            settings,
            trusted,
            redis: redis.map(ThreadConnections::new),
            local: Mutex::new(HashMap::new()),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &GuessSettings {
        &self.settings
    }

    /// The trusted proxies.
    pub fn trusted(&self) -> &TrustedProxies {
        &self.trusted
    }

    /// The source address of a request from `peer` with these
    /// `X-Forwarded-For` values (see [`TrustedProxies::client`]).
    pub fn source<'a>(&self, peer: IpAddr, forwarded_for: impl IntoIterator<Item = &'a str>) -> IpAddr {
        self.trusted.client(peer, forwarded_for)
    }

    fn keys(&self, source: IpAddr, credential: Option<&str>) -> Vec<String> {
        let mut keys = vec![format!("tt:guess:src:{}", source_label(source))];
        if self.settings.key_threshold > 0
            && let Some(prefix) = credential.and_then(key_prefix)
        {
            keys.push(format!("tt:guess:key:{prefix}"));
        }
        keys
    }

    /// Whether a request from `source` presenting `credential` may be
    /// checked: `Err` with how long to wait when the source is blocked, or
    /// the credential's prefix is and the source has failed before.
    /// `surface` names the caller in the metrics.
    ///
    /// # Errors
    /// [`Blocked`]: answer 429 `RATE_LIMITED` with `Retry-After`.
    pub async fn check(&self, surface: &'static str, source: IpAddr, credential: Option<&str>) -> Result<(), Blocked> {
        if self.settings.threshold == 0 {
            return Ok(());
        }
        let keys = self.keys(source, credential);
        let now = now_ms();
        let (wait_ms, scope) = match self.redis_check(&keys, now).await {
            Some(answer) => answer,
            None => self.local_check(&keys, now),
        };
        if wait_ms <= 0 {
            return Ok(());
        }
        let scope = if scope == 2 { "key" } else { "source" };
        tradeterm_telemetry::record::auth_throttled(surface, scope);
        Err(Blocked {
            retry_after: Duration::from_millis(wait_ms as u64),
            scope,
        })
    }

    /// [`GuessGuard::check`] for a credential this process already knows to
    /// be valid (a cached API-key exchange, a token whose signature
    /// verified): no I/O, only the blocks this process counted itself. Valid
    /// traffic, the hot path, never waits on Redis; a guess is never a known
    /// credential, so it always takes [`GuessGuard::check`].
    pub fn check_known(&self, surface: &'static str, source: IpAddr, credential: Option<&str>) -> Result<(), Blocked> {
        if self.settings.threshold == 0 || self.local.lock().map(|m| m.is_empty()).unwrap_or(true) {
            return Ok(());
        }
        let (wait_ms, scope) = self.local_check(&self.keys(source, credential), now_ms());
        if wait_ms <= 0 {
            return Ok(());
        }
        let scope = if scope == 2 { "key" } else { "source" };
        tradeterm_telemetry::record::auth_throttled(surface, scope);
        Err(Blocked {
            retry_after: Duration::from_millis(wait_ms as u64),
            scope,
        })
    }

    /// Counts a failed authentication from `source` presenting `credential`.
    pub async fn failed(&self, surface: &'static str, source: IpAddr, credential: Option<&str>) {
        if self.settings.threshold == 0 {
            return;
        }
        tradeterm_telemetry::record::auth_failure(surface);
        let keys = self.keys(source, credential);
        let now = now_ms();
        // Counted here too, shared or not: what [`GuessGuard::check_known`] reads.
        self.redis_failed(&keys, now).await;
        self.local_failed(&keys, now);
        tracing::debug!(%surface, source = %source_label(source), "failed authentication counted");
    }

    /// [`GuessGuard::check`] then, when `ok` says the credential was wrong,
    /// [`GuessGuard::failed`]: the shape of most callers.
    ///
    /// # Errors
    /// The source is blocked (the credential was not checked), or `Inner`'s error.
    pub async fn guard<T, E>(
        &self,
        surface: &'static str,
        source: IpAddr,
        credential: Option<&str>,
        attempt: impl Future<Output = Result<T, E>>,
        is_failure: impl FnOnce(&E) -> bool,
    ) -> Result<Result<T, E>, Blocked> {
        self.check(surface, source, credential).await?;
        let outcome = attempt.await;
        if let Err(e) = &outcome
            && is_failure(e)
        {
            self.failed(surface, source, credential).await;
        }
        Ok(outcome)
    }

    async fn redis_check(&self, keys: &[String], now: i64) -> Option<(i64, i64)> {
        let conns = self.redis.as_ref()?;
        let call = async {
            let mut conn = conns.get().await?;
            let mut script = CHECK.prepare_invoke();
            for k in keys {
                script.key(k);
            }
            script
                .arg(now)
                .invoke_async::<(i64, i64)>(&mut conn)
                .await
                .map_err(|e| e.to_string())
        };
        match tokio::time::timeout(REDIS_TIMEOUT, call).await {
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(e)) => {
                self.redis_failure(&e);
                None
            }
            Err(_) => {
                self.redis_failure("timed out");
                None
            }
        }
    }

    async fn redis_failed(&self, keys: &[String], now: i64) -> bool {
        let Some(conns) = self.redis.as_ref() else {
            return false;
        };
        let s = &self.settings;
        let call = async {
            let mut conn = conns.get().await?;
            let mut script = FAILED.prepare_invoke();
            for k in keys {
                script.key(k);
            }
            script
                .arg(now)
                .arg(s.window.as_millis() as i64)
                .arg(s.block.as_millis() as i64)
                .arg(s.max_block.as_millis() as i64)
                .arg(s.threshold)
                .arg(s.key_threshold)
                .invoke_async::<i64>(&mut conn)
                .await
                .map_err(|e| e.to_string())
        };
        match tokio::time::timeout(REDIS_TIMEOUT, call).await {
            Ok(Ok(_)) => true,
            Ok(Err(e)) => {
                self.redis_failure(&e);
                false
            }
            Err(_) => {
                self.redis_failure("timed out");
                false
            }
        }
    }

    fn redis_failure(&self, error: &str) {
        if let Some(conns) = &self.redis {
            conns.forget();
        }
        tradeterm_telemetry::record::redis_error("guess");
        tracing::warn!(%error, "guess throttle: Redis failed; counting locally");
    }

    fn local_check(&self, keys: &[String], now: i64) -> (i64, i64) {
        let Ok(map) = self.local.lock() else {
            return (0, 0);
        };
        let live = |k: &String| map.get(k).filter(|e| e.expires_ms > now).copied();
        let source = live(&keys[0]).unwrap_or_default();
        if source.until_ms > now {
            return (source.until_ms - now, 1);
        }
        if source.failures > 0
            && let Some(key) = keys.get(1).and_then(live)
            && key.until_ms > now
        {
            return (key.until_ms - now, 2);
        }
        (0, 0)
    }

    fn local_failed(&self, keys: &[String], now: i64) {
        let Ok(mut map) = self.local.lock() else {
            return;
        };
        if map.len() > 100_000 {
            map.retain(|_, e| e.expires_ms > now);
        }
        let s = &self.settings;
        for (i, key) in keys.iter().enumerate() {
            let threshold = if i == 0 { s.threshold } else { s.key_threshold };
            let entry = map.entry(key.clone()).or_default();
            if entry.expires_ms <= now {
                *entry = Entry::default();
            }
            entry.failures = entry.failures.saturating_add(1);
            if entry.failures >= threshold {
                entry.level = (entry.level + 1).min(40);
                let block = (s.block.as_millis() as f64 * 2f64.powi(entry.level as i32 - 1))
                    .min(s.max_block.as_millis() as f64);
                entry.until_ms = now + block as i64;
            }
            entry.expires_ms = now.max(entry.until_ms) + s.window.as_millis() as i64;
        }
    }
}

/// The counter's name for an address: IPv4 as is, IPv6 by its /64 (one
/// host usually holds a whole /64), IPv4-mapped IPv6 as IPv4.
fn source_label(addr: IpAddr) -> String {
    match addr.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

/// The first [`KEY_PREFIX_CHARS`] characters of a credential, when it has
/// that many (a shorter one has no prefix worth counting); only characters
/// that can be part of a key name (anything else would be a Redis key
/// nobody meant).
pub fn key_prefix(credential: &str) -> Option<String> {
    let prefix: String = credential.chars().take(KEY_PREFIX_CHARS).collect();
    (prefix.chars().count() == KEY_PREFIX_CHARS
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    .then_some(prefix)
}

/// The proxies whose `X-Forwarded-For` is believed (`TRUSTED_PROXIES`):
/// addresses or CIDR blocks. Empty (the default): the peer address is the
/// source and the header is ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    nets: Vec<(IpAddr, u8)>,
}

impl TrustedProxies {
    /// Parses a comma-separated list of addresses and CIDR blocks
    /// (`10.0.0.0/8, 192.168.1.7, ::1`).
    ///
    /// # Errors
    /// An entry that is neither, named.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut nets = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (addr, bits) = match entry.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (entry, None),
            };
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| format!("`{entry}` is not an IP address or CIDR block"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                Some(b) => b
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("`{entry}`: the prefix length must be 0..={max}"))?,
                None => max,
            };
            nets.push((addr.to_canonical(), bits));
        }
        Ok(Self { nets })
    }

    /// Whether none is configured.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// Whether `addr` is one of the trusted proxies.
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        self.nets.iter().any(|(net, bits)| in_net(addr, *net, *bits))
    }

    /// The client of a request from `peer` carrying these `X-Forwarded-For`
    /// header values: `peer` unless it is a trusted proxy; then the
    /// right-most listed address that is not a trusted proxy (each proxy
    /// appends the address it heard from, so the ones to its left are
    /// the client's to write), or the left-most when all are. An unreadable
    /// entry stops the walk at the proxy that added it.
    pub fn client<'a>(&self, peer: IpAddr, forwarded_for: impl IntoIterator<Item = &'a str>) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.contains(peer) {
            return peer;
        }
        let listed: Vec<&str> = forwarded_for
            .into_iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let mut client = peer;
        for entry in listed.iter().rev() {
            let Ok(addr) = entry.parse::<IpAddr>() else {
                break;
            };
            client = addr.to_canonical();
            if !self.contains(client) {
                break;
            }
        }
        client
    }
}

fn in_net(addr: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(bits))
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(bits))
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn fast() -> GuessSettings {
        GuessSettings {
            threshold: 3,
            key_threshold: 5,
            window: Duration::from_secs(60),
            block: Duration::from_millis(200),
            max_block: Duration::from_millis(800),
        }
    }

    /// The scenario, from addresses `{net}.2`, `.3` and `.4` with keys tagged `tag`.
    async fn run(guard: &GuessGuard, net: &str, tag: &str) {
        let a = ip(&format!("{net}.2"));
        let b = ip(&format!("{net}.3"));
        let key = format!("svc_api_{tag}_wrong");
        for _ in 0..3 {
            guard.check("rest", a, Some(&key)).await.unwrap();
            guard.failed("rest", a, Some(&key)).await;
        }
        let blocked = guard.check("rest", a, Some("another")).await.unwrap_err();
        assert_eq!(blocked.scope, "source");
        assert!(blocked.retry_after <= Duration::from_millis(200), "{blocked:?}");
        assert_eq!(blocked.retry_after_secs(), 1);
        // Another source is not affected.
        guard.check("rest", b, Some("svc_api_other")).await.unwrap();
        // After the block, one more failure blocks twice as long, then capped.
        tokio::time::sleep(blocked.retry_after + Duration::from_millis(20)).await;
        guard.check("rest", a, Some(&key)).await.unwrap();
        guard.failed("rest", a, Some(&key)).await;
        let again = guard.check("rest", a, None).await.unwrap_err();
        assert!(again.retry_after > Duration::from_millis(200), "{again:?}");
        for _ in 0..4 {
            guard.failed("rest", a, Some(&key)).await;
        }
        let capped = guard.check("rest", a, None).await.unwrap_err();
        assert!(capped.retry_after <= Duration::from_millis(800), "{capped:?}");
        // The key prefix has failed 8 times (threshold 5): blocked for a source
        // that failed once, not for one with a clean record.
        guard.failed("rest", b, Some(&format!("svc_api_z{tag}"))).await;
        let by_key = guard.check("rest", b, Some(&key)).await.unwrap_err();
        assert_eq!(by_key.scope, "key");
        guard.check("rest", ip(&format!("{net}.4")), Some(&key)).await.unwrap();
    }

    #[tokio::test]
    async fn in_process_blocks_after_the_threshold_and_backs_off() {
        run(
            &GuessGuard::new(fast(), TrustedProxies::default(), None),
            "127.0.0",
            "local",
        )
        .await;
    }

    /// The same through Redis (127.0.0.1:6379); under `CI=true` it never skips.
    #[tokio::test]
    async fn through_redis_blocks_after_the_threshold_and_backs_off() {
        let url = std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        let pool = deadpool_redis::Config::from_url(url)
            .create_pool(Some(deadpool_redis::Runtime::Tokio1))
            .unwrap();
        if pool.get().await.is_err() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "Redis must run under CI");
            eprintln!("skipped: no Redis at 127.0.0.1:6379");
            return;
        }
        // Distinct addresses and keys per run: the keys outlive the test.
        let n = now_ms();
        let run_id = format!("{:06x}", n & 0xff_ffff);
        let net = format!("10.{}.{}", (n >> 8) & 0xff, n & 0xff);
        let guard = GuessGuard::new(fast(), TrustedProxies::default(), Some(pool.clone()));
        let a = ip(&format!("{net}.9"));
        let key = format!("svc_api_f{run_id}");
        for _ in 0..3 {
            guard.failed("rest", a, Some(&key)).await;
        }
        // A second instance on the same Redis sees the block.
        let other = GuessGuard::new(fast(), TrustedProxies::default(), Some(pool));
        let blocked = other.check("rest", a, None).await.unwrap_err();
        assert_eq!(blocked.scope, "source");
        assert!(
            !guard.local.lock().unwrap().is_empty(),
            "counted here too (what check_known reads)"
        );
        assert!(
            other.local.lock().unwrap().is_empty(),
            "the other instance knows it from Redis only"
        );
        assert!(
            other.check_known("rest", a, None).is_ok(),
            "check_known: this process's own blocks only"
        );
        assert!(
            guard.check_known("rest", a, None).is_err(),
            "the instance that counted the failures blocks known credentials too"
        );
        run(&guard, &net, &run_id).await;
    }

    #[test]
    fn forwarded_for_is_believed_from_trusted_proxies_only() {
        let trusted = TrustedProxies::parse("10.0.0.0/8, 192.168.1.7,::1").unwrap();
        let xff = ["203.0.113.9, 10.1.2.3"];
        assert_eq!(trusted.client(ip("192.168.1.7"), xff), ip("203.0.113.9"));
        assert_eq!(trusted.client(ip("192.168.1.8"), xff), ip("192.168.1.8"));
        // What the client wrote left of the first untrusted hop is ignored.
        assert_eq!(
            trusted.client(ip("10.0.0.1"), ["1.1.1.1", "203.0.113.9"]),
            ip("203.0.113.9")
        );
        assert_eq!(trusted.client(ip("10.0.0.1"), ["garbage"]), ip("10.0.0.1"));
        assert_eq!(trusted.client(ip("10.0.0.1"), []), ip("10.0.0.1"));
        assert_eq!(
            trusted.client(ip("::ffff:10.0.0.1"), ["198.51.100.1"]),
            ip("198.51.100.1")
        );
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("proxy.local").is_err());
        assert!(TrustedProxies::parse("").unwrap().is_empty());
    }

    #[test]
    fn sources_and_prefixes() {
        assert_eq!(source_label(ip("2001:db8:1:2:3:4:5:6")), "2001:db8:1:2::/64");
        assert_eq!(source_label(ip("::ffff:127.0.0.2")), "127.0.0.2");
        assert_eq!(key_prefix("svc_api_abcdefgh").as_deref(), Some("svc_api_abcd"));
        assert_eq!(key_prefix("short"), None);
        assert_eq!(key_prefix("svc api {}:*xxxxx"), None);
    }
}
