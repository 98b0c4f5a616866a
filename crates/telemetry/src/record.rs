//! One function per thing worth counting, so that every caller spells the
//! names and labels of [`crate::names`] the same way. Without an installed
//! recorder ([`crate::metrics::install`]) each call costs next to nothing.

use std::time::{Duration, Instant};

use metrics::{counter, gauge, histogram};

use crate::names;

/// Label of a route no pattern matched (a 404): raw paths never become labels.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// One HTTP request answered by `service` (`rest`, `mcp`, `gateway`).
pub fn http_request(service: &'static str, route: &str, method: &str, status: u16, elapsed: Duration) {
    let route = route.to_owned();
    let method = method.to_owned();
    counter!(
        names::HTTP_REQUESTS_TOTAL,
        "service" => service,
        "route" => route.clone(),
        "method" => method.clone(),
        "status" => status.to_string()
    )
    .increment(1);
    histogram!(
        names::HTTP_REQUEST_DURATION_SECONDS,
        "service" => service,
        "route" => route,
        "method" => method
    )
    .record(elapsed.as_secs_f64());
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
        counter!(names::DISPATCH_TOTAL, "side" => side, "command" => self.command, "outcome" => outcome).increment(1);
        histogram!(
            names::DISPATCH_DURATION_SECONDS,
            "side" => side,
            "command" => self.command,
            "outcome" => outcome
        )
        .record(elapsed.as_secs_f64());
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
