//! `GET /readyz`: whether this process can serve now. Each dependency is a
//! named check ([`Readiness::add`]): the database, Redis when configured
//! ([`Readiness::add_redis`]), and for the gateway its listener
//! ([`Readiness::add_listener`]; in `tradeterm serve` the REST and MCP
//! listeners check the in-process gateway's listener too, as `gateway`). The checks run concurrently, each within
//! [`CHECK_TIMEOUT`]; the answer is 200 when all pass and 503 otherwise,
//! with a JSON body naming what is down:
//!
//! ```json
//! { "status": "not_ready", "down": ["redis"], "checks": { "database": "ok", "redis": "down" } }
//! ```
//!
//! Why a check failed is logged (warning), never answered: the probe is
//! unauthenticated. `/healthz` stays the liveness probe (the process
//! answers at all); `/readyz` is for load balancers and orchestrators.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Map, Value, json};

/// Longest time one check may take before it counts as down.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
type CheckFn = Arc<dyn Fn() -> CheckFuture + Send + Sync>;

/// The readiness checks of one listener (cheap to clone; clones share the
/// checks, so a check added later is seen by every clone).
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Arc<RwLock<Vec<(&'static str, CheckFn)>>>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness").field("checks", &self.names()).finish()
    }
}

impl Readiness {
    /// No checks (always ready).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the check `name`: an async function answering
    /// `Err(reason)` when the dependency is down.
    pub fn add<F, Fut>(&self, name: &'static str, check: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let check: CheckFn = Arc::new(move || Box::pin(check()));
        if let Ok(mut checks) = self.checks.write() {
            checks.retain(|(n, _)| *n != name);
            checks.push((name, check));
        }
    }

    /// The names of the checks, in the order they were added.
    pub fn names(&self) -> Vec<&'static str> {
        self.checks
            .read()
            .map(|c| c.iter().map(|(n, _)| *n).collect())
            .unwrap_or_default()
    }

    /// Adds the check `name` (the gateway calls its own `listener`): a TCP
    /// connection to `addr` (a listener bound to an unspecified address is
    /// reached on loopback) must be accepted.
    pub fn add_listener(&self, name: &'static str, addr: SocketAddr) {
        let target = match addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port()),
            IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), addr.port()),
            _ => addr,
        };
        self.add(name, move || async move {
            tokio::net::TcpStream::connect(target)
                .await
                .map(drop)
                .map_err(|e| format!("connecting to {target}: {e}"))
        });
    }

    /// Adds `redis`: a connection from `pool` must answer `PING`. Failures
    /// count in `tradeterm_redis_errors_total{component="readiness"}`.
    #[cfg(feature = "redis")]
    pub fn add_redis(&self, pool: deadpool_redis::Pool) {
        self.add("redis", move || {
            let pool = pool.clone();
            async move {
                let result = async {
                    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
                    deadpool_redis::redis::cmd("PING")
                        .query_async::<String>(&mut conn)
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                }
                .await;
                if result.is_err() {
                    crate::record::redis_error("readiness");
                }
                result
            }
        });
    }

    /// Runs every check (concurrently, each within [`CHECK_TIMEOUT`]).
    pub async fn report(&self) -> Report {
        let checks: Vec<(&'static str, CheckFn)> = self.checks.read().map(|c| c.clone()).unwrap_or_default();
        let running: Vec<_> = checks
            .into_iter()
            .map(|(name, check)| {
                let fut = check();
                (
                    name,
                    tokio::spawn(async move {
                        match tokio::time::timeout(CHECK_TIMEOUT, fut).await {
                            Ok(r) => r,
                            Err(_) => Err(format!("no answer within {} ms", CHECK_TIMEOUT.as_millis())),
                        }
                    }),
                )
            })
            .collect();
        let mut results = Vec::with_capacity(running.len());
        for (name, task) in running {
            let result = task.await.unwrap_or_else(|e| Err(format!("check failed: {e}")));
            if let Err(reason) = &result {
                tracing::warn!(check = name, %reason, "readiness check failed");
            }
            results.push((name, result));
        }
        Report { checks: results }
    }
}

/// The outcome of [`Readiness::report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Each check with its result, in the order they were added.
    pub checks: Vec<(&'static str, Result<(), String>)>,
}

impl Report {
    /// Whether every check passed.
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|(_, r)| r.is_ok())
    }

    /// 200 when ready, else 503.
    pub fn status(&self) -> u16 {
        if self.ready() { 200 } else { 503 }
    }

    /// The checks that failed.
    pub fn down(&self) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter(|(_, r)| r.is_err())
            .map(|(n, _)| *n)
            .collect()
    }

    /// The JSON body: `status` (`ready` / `not_ready`), `down` (names) and
    /// `checks` (`ok` / `down` by name). Reasons stay in the logs.
    pub fn body(&self) -> Value {
        let checks: Map<String, Value> = self
            .checks
            .iter()
            .map(|(n, r)| ((*n).to_owned(), json!(if r.is_ok() { "ok" } else { "down" })))
            .collect();
        json!({
            "status": if self.ready() { "ready" } else { "not_ready" },
            "down": self.down(),
            "checks": checks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ready_only_when_every_check_passes_and_the_body_names_what_is_down() {
        let r = Readiness::new();
        assert_eq!(r.report().await.status(), 200, "no checks: ready");
        r.add("database", || async { Ok(()) });
        r.add("redis", || async { Err("connection refused".to_owned()) });
        let report = r.report().await;
        assert_eq!(report.status(), 503);
        assert_eq!(report.down(), vec!["redis"]);
        let body = report.body();
        assert_eq!(body["status"], "not_ready");
        assert_eq!(body["checks"]["database"], "ok");
        assert_eq!(body["checks"]["redis"], "down");
        assert!(
            !body.to_string().contains("refused"),
            "reasons are logged, not answered"
        );
        // Replacing a check by name.
        r.add("redis", || async { Ok(()) });
        assert_eq!(r.names(), vec!["database", "redis"]);
        assert_eq!(r.report().await.body()["status"], "ready");
    }

    #[tokio::test]
    async fn a_listener_check_connects_and_a_slow_check_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let r = Readiness::new();
        r.add_listener(
            "listener",
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), addr.port()),
        );
        assert!(r.report().await.ready());
        drop(listener);
        assert_eq!(r.report().await.down(), vec!["listener"]);
        let slow = Readiness::new();
        slow.add("slow", || async {
            tokio::time::sleep(CHECK_TIMEOUT * 3).await;
            Ok(())
        });
        let started = std::time::Instant::now();
        let report = slow.report().await;
        assert_eq!(report.down(), vec!["slow"]);
        assert!(
            started.elapsed() < CHECK_TIMEOUT * 2,
            "the check was cut at its timeout"
        );
    }
}
