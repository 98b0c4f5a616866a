//! One function per thing worth counting, so that every caller spells the
//! names and labels of [`crate::names`] the same way. Without an installed
//! recorder ([`crate::metrics::install`]) each call costs next to nothing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use metrics::{Counter, Histogram, counter, gauge, histogram};

use crate::names;

/// Label of a route no pattern matched (a 404): raw paths never become labels.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// One HTTP request answered by `service` (`rest`, `mcp`, `gateway`).
///
/// The hottest metric of every server: its handles are kept per worker
/// thread ([`cached_http`]), so a request of a known route costs two atomic
/// updates instead of two label-map lookups with their allocations.
pub fn http_request(service: &'static str, route: &str, method: &str, status: u16, elapsed: Duration) {
    let recorded = cached_http(service, route, method, status, |(c, h)| {
        c.increment(1);
        h.record(elapsed.as_secs_f64());
    });
    if !recorded {
        let (c, h) = http_handles(service, route, method, status);
        c.increment(1);
        h.record(elapsed.as_secs_f64());
    }
}

fn http_handles(service: &'static str, route: &str, method: &str, status: u16) -> (Counter, Histogram) {
    let counter = counter!(
        names::HTTP_REQUESTS_TOTAL,
        "service" => service,
        "route" => route.to_owned(),
        "method" => method.to_owned(),
        "status" => status.to_string()
    );
    let histogram = histogram!(
        names::HTTP_REQUEST_DURATION_SECONDS,
        "service" => service,
        "route" => route.to_owned(),
        "method" => method.to_owned()
    );
    (counter, histogram)
}

/// The handles of one (service, method, status) of a route.
struct HttpEntry {
    service: &'static str,
    method: Box<str>,
    status: u16,
    handles: (Counter, Histogram),
}

/// Bounds of the per-thread handle cache: route labels are patterns (a
/// bounded set), but methods and statuses come from clients and handlers;
/// past these the uncached path is taken, so nothing grows without bound.
const MAX_CACHED_ROUTES: usize = 1024;
const MAX_ENTRIES_PER_ROUTE: usize = 32;

thread_local! {
    static HTTP_HANDLES: RefCell<HashMap<Box<str>, Vec<HttpEntry>>> = RefCell::new(HashMap::new());
}

/// Runs `f` on the cached handles of the labels (taken and kept on first
/// use); `false` when they are not kept (no recorder installed yet, or the
/// cache is full), and `f` was not run.
fn cached_http(
    service: &'static str,
    route: &str,
    method: &str,
    status: u16,
    f: impl FnOnce(&(Counter, Histogram)),
) -> bool {
    if !crate::metrics::installed() {
        return false;
    }
    HTTP_HANDLES.with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return false;
        };
        if !cache.contains_key(route) {
            if cache.len() >= MAX_CACHED_ROUTES {
                return false;
            }
            cache.insert(route.into(), Vec::new());
        }
        let Some(entries) = cache.get_mut(route) else {
            return false;
        };
        let found = entries
            .iter()
            .position(|e| e.status == status && e.service == service && &*e.method == method);
        let at = match found {
            Some(at) => at,
            None if entries.len() < MAX_ENTRIES_PER_ROUTE => {
                entries.push(HttpEntry {
                    service,
                    method: method.into(),
                    status,
                    handles: http_handles(service, route, method, status),
                });
                entries.len() - 1
            }
            None => return false,
        };
        f(&entries[at].handles);
        true
    })
}

/// Where a dispatch is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchSide {
    /// In the gateway, where the agent is reached (every command once).
    Gateway,
    /// In a REST or MCP process reaching a remote gateway over HTTP.
    Client,
}

impl DispatchSide {
    fn label(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            Self::Client => "client",
        }
    }
}

type DispatchLabels = (&'static str, &'static str, &'static str);

thread_local! {
    static DISPATCH_HANDLES: RefCell<HashMap<DispatchLabels, (Counter, Histogram)>> = RefCell::new(HashMap::new());
}

/// Times one dispatch; [`DispatchTimer::finish`] records it with its outcome.
#[derive(Debug)]
pub struct DispatchTimer {
    side: DispatchSide,
    command: &'static str,
    started: Instant,
}

impl DispatchTimer {
    /// Starts timing `command` (the agent protocol's command name).
    pub fn start(side: DispatchSide, command: &'static str) -> Self {
        Self {
            side,
            command,
            started: Instant::now(),
        }
    }

    /// Records the dispatch with its `outcome` (`ok`, `not_found`,
    /// `unreachable`, `timeout`, `command_failed`, `gateway_error`) and
    /// returns how long it took.
    pub fn finish(self, outcome: &'static str) -> Duration {
        let elapsed = self.started.elapsed();
        let side = self.side.label();
        let handles = || {
            (
                counter!(names::DISPATCH_TOTAL, "side" => side, "command" => self.command, "outcome" => outcome),
                histogram!(
                    names::DISPATCH_DURATION_SECONDS,
                    "side" => side,
                    "command" => self.command,
                    "outcome" => outcome
                ),
            )
        };
        let record = |(c, h): &(Counter, Histogram)| {
            c.increment(1);
            h.record(elapsed.as_secs_f64());
        };
        // Every label is static (a bounded set): the handles are kept per
        // thread once the recorder is installed.
        let kept = crate::metrics::installed()
            && DISPATCH_HANDLES.with(|cache| {
                let Ok(mut cache) = cache.try_borrow_mut() else {
                    return false;
                };
                record(cache.entry((side, self.command, outcome)).or_insert_with(handles));
                true
            });
        if !kept {
            record(&handles());
        }
        elapsed
    }
}

/// A rate-limit decision in `bucket` (`rest`, `mcp`): `decision` is
/// `allowed`, `limited` or `revoked`; `redis` whether Redis counted it (else
/// the instance's local fallback did).
pub fn rate_limit(bucket: &'static str, decision: &'static str, redis: bool) {
    let counted = if redis { "redis" } else { "local" };
    counter!(
        names::RATE_LIMIT_DECISIONS_TOTAL,
        "bucket" => bucket,
        "decision" => decision,
        "counter" => counted
    )
    .increment(1);
}

/// A failed Redis call of `component` (`ratelimit`, `revocation`, `readiness`).
pub fn redis_error(component: &'static str) {
    counter!(names::REDIS_ERRORS_TOTAL, "component" => component).increment(1);
}

/// A failed authentication at `surface` (`token`, `rest`, `mcp`, `agent`,
/// `dashboard`), counted by the credential-guessing throttle.
pub fn auth_failure(surface: &'static str) {
    counter!(names::AUTH_FAILURES_TOTAL, "surface" => surface).increment(1);
}

/// A request refused by the credential-guessing throttle at `surface`;
/// `scope` is `source` (the address is blocked) or `key` (the key prefix is).
pub fn auth_throttled(surface: &'static str, scope: &'static str) {
    counter!(names::AUTH_THROTTLED_TOTAL, "surface" => surface, "scope" => scope).increment(1);
}

/// A request or frame refused for the resource limit `limit` (`body`,
/// `agent_frame`, `mcp_sessions`) by `service` (`rest`, `gateway`, `mcp`).
pub fn limit_refused(limit: &'static str, service: &'static str) {
    counter!(names::LIMIT_REFUSALS_TOTAL, "limit" => limit, "service" => service).increment(1);
}

/// A trade audit row of a call on `surface` that could not be appended.
pub fn audit_append_failed(surface: &'static str) {
    counter!(names::AUDIT_APPEND_FAILURES_TOTAL, "surface" => surface).increment(1);
}

/// A failed database call; `kind` names the driver's error class.
pub fn db_error(kind: &'static str) {
    counter!(names::DB_ERRORS_TOTAL, "kind" => kind).increment(1);
}

/// An agent connected (`transport`: `websocket` or `poll`; `platform`: `MT4` or `MT5`).
pub fn agent_connected(transport: &'static str, platform: &'static str) {
    gauge!(names::AGENTS_CONNECTED, "transport" => transport, "platform" => platform).increment(1.0);
    counter!(names::AGENT_CONNECTIONS_TOTAL, "transport" => transport, "platform" => platform).increment(1);
}

/// A dispatch channel opened on this gateway.
pub fn dispatch_channel_opened() {
    gauge!(names::DISPATCH_CHANNELS_OPEN).increment(1.0);
}

/// A dispatch channel counted by [`dispatch_channel_opened`] closed.
pub fn dispatch_channel_closed() {
    gauge!(names::DISPATCH_CHANNELS_OPEN).decrement(1.0);
}

/// An agent counted by [`agent_connected`] is gone.
pub fn agent_disconnected(transport: &'static str, platform: &'static str) {
    gauge!(names::AGENTS_CONNECTED, "transport" => transport, "platform" => platform).decrement(1.0);
}

/// An open MCP session: counted on creation, uncounted when dropped. Keep it
/// in the session's state (behind an `Arc` when the state is cloned).
#[derive(Debug)]
pub struct McpSessionGuard(());

impl McpSessionGuard {
    /// Counts a new MCP session.
    pub fn open() -> Self {
        counter!(names::MCP_SESSIONS_TOTAL).increment(1);
        gauge!(names::MCP_SESSIONS_OPEN).increment(1.0);
        Self(())
    }
}

impl Drop for McpSessionGuard {
    fn drop(&mut self) {
        gauge!(names::MCP_SESSIONS_OPEN).decrement(1.0);
    }
}
