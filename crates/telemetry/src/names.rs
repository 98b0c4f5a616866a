//! The metric names, with their labels. Every name starts with `tradeterm_`;
//! every label takes its values from a closed set (no raw paths, ids or
//! user input), so the number of series stays bounded.

/// Counter of HTTP requests answered. Labels: `service` (`rest`, `mcp`,
/// `gateway`), `route` (the route pattern, e.g.
/// `/api/v1/market/tick/{symbol}`; `unmatched` for a path no route serves),
/// `method`, `status` (the HTTP status code).
pub const HTTP_REQUESTS_TOTAL: &str = "tradeterm_http_requests_total";

/// Histogram of the time to answer an HTTP request (up to the response
/// head; a streamed body may last longer), seconds. Labels: `service`,
/// `route`, `method`.
pub const HTTP_REQUEST_DURATION_SECONDS: &str = "tradeterm_http_request_duration_seconds";

/// Counter of commands dispatched to terminals. Labels: `side` (`gateway`:
/// counted where the agent is reached, once per command, whoever asked;
/// `client`: counted by a REST or MCP process that reaches a remote gateway
/// over HTTP), `command` (the agent protocol's command name), `outcome`
/// (`ok`, `not_found`, `unreachable`, `timeout`, `command_failed`,
/// `gateway_error`).
pub const DISPATCH_TOTAL: &str = "tradeterm_dispatch_total";

/// Histogram of the time a dispatch took, seconds. Labels: `side`,
/// `command`, `outcome`.
pub const DISPATCH_DURATION_SECONDS: &str = "tradeterm_dispatch_duration_seconds";

/// Counter of rate-limit decisions. Labels: `bucket` (`rest`, `mcp`),
/// `decision` (`allowed`, `limited`, `revoked`), `counter` (`redis`, or
/// `local` when Redis was unreachable and the instance counted alone).
pub const RATE_LIMIT_DECISIONS_TOTAL: &str = "tradeterm_rate_limit_decisions_total";

/// Gauge of agents connected to this gateway process now. Labels:
/// `transport` (`websocket`, `poll`), `platform` (`MT4`, `MT5`).
pub const AGENTS_CONNECTED: &str = "tradeterm_agents_connected";

/// Counter of agent connections accepted by this gateway process. Labels:
/// `transport`, `platform`.
pub const AGENT_CONNECTIONS_TOTAL: &str = "tradeterm_agent_connections_total";

/// Counter of failed Redis calls. Labels: `component` (`ratelimit`: the
/// rate limiter's count, which then falls back to local counting;
/// `revocation`: publishing a revoked key; `readiness`: the `/readyz` check).
pub const REDIS_ERRORS_TOTAL: &str = "tradeterm_redis_errors_total";

/// Counter of failed database calls (every error the database driver
/// returned). Labels: `kind` (`database`, `io`, `pool_timed_out`,
/// `pool_closed`, `row_not_found`, `protocol`, `tls`, `decode`, `other`).
pub const DB_ERRORS_TOTAL: &str = "tradeterm_db_errors_total";

/// Gauge of MCP sessions open in this process.
pub const MCP_SESSIONS_OPEN: &str = "tradeterm_mcp_sessions_open";

/// Counter of MCP sessions opened by this process.
pub const MCP_SESSIONS_TOTAL: &str = "tradeterm_mcp_sessions_total";

/// Gauge of dispatch channels (`GET /internal/v1/channel`) open on this
/// gateway process now: one per thread of each REST or MCP instance (or
/// relaying gateway) that dispatches here.
pub const DISPATCH_CHANNELS_OPEN: &str = "tradeterm_dispatch_channels_open";

/// Counter of failed authentications counted against a source address by
/// the credential-guessing throttle. Labels: `surface` (`token`: the
/// gateway's token exchange; `rest`; `mcp`; `agent`: WebSocket and
/// long-poll `hello`; `dashboard`: the sign-in and master-key routes).
pub const AUTH_FAILURES_TOTAL: &str = "tradeterm_auth_failures_total";

/// Counter of requests refused with 429 by the credential-guessing
/// throttle, before their credential was checked. Labels: `surface`,
/// `scope` (`source`: the address was blocked; `key`: the key prefix was).
pub const AUTH_THROTTLED_TOTAL: &str = "tradeterm_auth_throttled_total";

/// Counter of requests or frames refused for a resource limit. Labels:
/// `limit` (`body`: a REST request body over its route's limit, 413;
/// `agent_frame`: an agent WebSocket frame announced over the limit, before
/// its `hello` or after; `mcp_sessions`: an MCP `initialize` over the
/// credential's session cap, 429), `service` (`rest`, `gateway`, `mcp`).
pub const LIMIT_REFUSALS_TOTAL: &str = "tradeterm_limit_refusals_total";

/// Counter of trade audit rows that could not be appended (the call was
/// answered; the failure is logged). Labels: `surface` (`rest`, `mcp`,
/// `managed`, `management`, …).
pub const AUDIT_APPEND_FAILURES_TOTAL: &str = "tradeterm_audit_append_failures_total";

/// Every metric: name, kind and help text (the `# HELP` lines of `/metrics`).
pub const ALL: &[(&str, Kind, &str)] = &[
    (
        AUDIT_APPEND_FAILURES_TOTAL,
        Kind::Counter,
        "Trade audit rows that could not be appended, by surface.",
    ),
    (
        HTTP_REQUESTS_TOTAL,
        Kind::Counter,
        "HTTP requests answered, by route pattern, method and status.",
    ),
    (
        HTTP_REQUEST_DURATION_SECONDS,
        Kind::Histogram,
        "Time to answer an HTTP request, by route pattern and method (seconds).",
    ),
    (
        DISPATCH_TOTAL,
        Kind::Counter,
        "Commands dispatched to terminals, by side, command and outcome.",
    ),
    (
        DISPATCH_DURATION_SECONDS,
        Kind::Histogram,
        "Time a dispatch to a terminal took, by side, command and outcome (seconds).",
    ),
    (
        RATE_LIMIT_DECISIONS_TOTAL,
        Kind::Counter,
        "Rate-limit decisions, by bucket, decision and counter.",
    ),
    (
        AGENTS_CONNECTED,
        Kind::Gauge,
        "Agents connected to this gateway now, by transport and platform.",
    ),
    (
        AGENT_CONNECTIONS_TOTAL,
        Kind::Counter,
        "Agent connections accepted by this gateway, by transport and platform.",
    ),
    (REDIS_ERRORS_TOTAL, Kind::Counter, "Failed Redis calls, by component."),
    (
        DB_ERRORS_TOTAL,
        Kind::Counter,
        "Failed database calls, by kind of error.",
    ),
    (MCP_SESSIONS_OPEN, Kind::Gauge, "MCP sessions open in this process."),
    (
        DISPATCH_CHANNELS_OPEN,
        Kind::Gauge,
        "Dispatch channels from API, MCP and gateway instances open on this gateway now.",
    ),
    (
        MCP_SESSIONS_TOTAL,
        Kind::Counter,
        "MCP sessions opened by this process.",
    ),
    (
        AUTH_FAILURES_TOTAL,
        Kind::Counter,
        "Failed authentications counted by the credential-guessing throttle, by surface.",
    ),
    (
        AUTH_THROTTLED_TOTAL,
        Kind::Counter,
        "Requests refused (429) by the credential-guessing throttle, by surface and scope.",
    ),
    (
        LIMIT_REFUSALS_TOTAL,
        Kind::Counter,
        "Requests or frames refused for a resource limit, by limit and service.",
    ),
];

/// The Prometheus type of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations in buckets.
    Histogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_unique_and_counters_end_in_total() {
        let mut seen = std::collections::BTreeSet::new();
        for (name, kind, help) in ALL {
            assert!(name.starts_with("tradeterm_"), "{name}");
            assert!(seen.insert(*name), "{name} twice");
            assert!(!help.is_empty());
            assert_eq!(*kind == Kind::Counter, name.ends_with("_total"), "{name}");
            if *kind == Kind::Histogram {
                assert!(name.ends_with("_seconds"), "{name}");
            }
        }
        assert_eq!(seen.len(), ALL.len(), "every name once");
    }
}
