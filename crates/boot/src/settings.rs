//! Typed settings, loaded once: built-in defaults → optional TOML file →
//! environment variables with the spec's names (`PORT`, `GATEWAY_PORT`,
//! `MCP_PORT`, `NODE_ENV`, `JWT_PUBLIC_KEY_PATH`, …).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;

/// Deployment settings shared by the tradeterm binaries.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Interface to bind (default `127.0.0.1`; use `0.0.0.0` in containers).
    pub host: String,
    /// REST API port (spec `PORT`, default 4000).
    pub port: u16,
    /// Gateway port (`GATEWAY_PORT`, default 8081).
    pub gateway_port: u16,
    /// MCP port (`MCP_PORT`, default 8090).
    pub mcp_port: u16,
    /// Host names (or `host:port`) the MCP listener accepts in `Host` headers,
    /// comma-separated (`MCP_ALLOWED_HOSTS`); loopback names are always accepted.
    pub mcp_allowed_hosts: Option<String>,
    /// Tool groups `/mcp/v1` lists by default, comma-separated, or `all`
    /// (`MCP_TOOL_GROUPS`; default all; docs/mcp.md).
    pub mcp_tool_groups: Option<String>,
    /// Whether `tools/list` carries output schemas by default
    /// (`MCP_OUTPUT_SCHEMAS`, `true`/`false`; default false).
    pub mcp_output_schemas: Option<String>,
    /// `development` (default) or `production` (`NODE_ENV`).
    pub node_env: String,
    /// Database URL (`DATABASE_URL`). `tradeterm serve` and `tradeterm admin`
    /// default to SQLite under the data dir; the split binaries require it
    /// (`postgres://` in production, see [`Settings::check_split_start`]).
    pub database_url: Option<String>,
    /// RS256 private key PEM used by the gateway to sign (`JWT_PRIVATE_KEY_PATH`).
    pub jwt_private_key_path: Option<PathBuf>,
    /// RS256 public key PEM used to verify (`JWT_PUBLIC_KEY_PATH`).
    pub jwt_public_key_path: Option<PathBuf>,
    /// Token issuer (`JWT_ISSUER`).
    pub jwt_issuer: String,
    /// Token audience (`JWT_AUDIENCE`).
    pub jwt_audience: String,
    /// Lifetime of terminal-key session tokens in seconds (`TOKEN_LIFETIME_SECS`, default 86400).
    pub token_lifetime_secs: u64,
    /// Shared secret of the gateway's internal dispatch routes (`GATEWAY_INTERNAL_TOKEN`).
    pub gateway_internal_token: Option<String>,
    /// Gateway base URL for separate REST/MCP processes (`GATEWAY_URL`).
    pub gateway_url: Option<String>,
    /// Whether separate REST/MCP processes keep dispatch channels open to
    /// the gateways (`GATEWAY_DISPATCH_CHANNEL`, default true; false sends
    /// every dispatch as an HTTP request). See `docs/gateway.md`.
    pub gateway_dispatch_channel: bool,
    /// Key-value store URL for rate limiting (`KEYVALUE_URL`).
    pub keyvalue_url: Option<String>,
    /// Rate-limit window in ms (`API_RATE_LIMIT_WINDOW_MS`, default 60000).
    pub api_rate_limit_window_ms: u64,
    /// Free-tier requests per window (`API_RATE_LIMIT_FREE`, default 10).
    pub api_rate_limit_free: u64,
    /// Pro-tier requests per window (`API_RATE_LIMIT_PRO`, default 60).
    pub api_rate_limit_pro: u64,
    /// Team-tier requests per window (`API_RATE_LIMIT_TEAM`, default 300).
    pub api_rate_limit_team: u64,
    /// Enterprise-tier requests per window (`API_RATE_LIMIT_ENTERPRISE`, default 1000).
    pub api_rate_limit_enterprise: u64,
    /// Agent heartbeat interval in ms (`HEARTBEAT_INTERVAL_MS`, default 10000).
    pub heartbeat_interval_ms: u64,
    /// Agent heartbeat timeout in ms (`HEARTBEAT_TIMEOUT_MS`, default 30000).
    pub heartbeat_timeout_ms: u64,
    /// How long a quote pushed by an agent answers `get_tick` without asking
    /// the terminal, in ms (`QUOTE_CACHE_MS`, default 1000; 0 turns it off).
    pub quote_cache_ms: u64,
    /// The server's economic calendar, a JSON file (`CALENDAR_FILE`), used by
    /// the calendar tools when a terminal has no calendar (MT4) or is
    /// disconnected. Overrides `CALENDAR_FEED_URL`. See `docs/calendar.md`.
    pub calendar_file: Option<std::path::PathBuf>,
    /// A weekly calendar feed in the ForexFactory JSON format
    /// (`CALENDAR_FEED_URL`, off by default), fetched and refreshed as the
    /// server calendar when `CALENDAR_FILE` is unset.
    pub calendar_feed_url: Option<String>,
    /// Refresh interval of the calendar feed, seconds
    /// (`CALENDAR_FEED_REFRESH_SECS`, default 3600, at least 1).
    pub calendar_feed_refresh_secs: u64,
    /// Key of the news provider (`NEWS_API_KEY`); unset, `get_news` is a
    /// no-op that says so. Never logged.
    pub news_api_key: Option<String>,
    /// News provider endpoint (`NEWS_API_URL`, default Finnhub's market news).
    pub news_api_url: Option<String>,
    /// Secret of the support widget's identity verification
    /// (`SUPPORT_IDENTITY_SECRET`; the gateway's
    /// `/api/dashboard/support/identity` answers 404 without it). Never logged.
    pub support_identity_secret: Option<String>,
    /// ETF flows data file (`ETF_FLOWS_FILE`): the feature flag of
    /// `get_etf_flows`, which is disabled when unset. See `docs/etf-flows.md`.
    pub etf_flows_file: Option<std::path::PathBuf>,
    /// PEM certificate chain of the gateway listener (`GATEWAY_TLS_CERT`,
    /// leaf first). With `GATEWAY_TLS_KEY`, the gateway serves HTTPS and
    /// agents connect with `wss://`.
    pub gateway_tls_cert: Option<PathBuf>,
    /// PEM private key of that certificate (`GATEWAY_TLS_KEY`; PKCS#8, RSA or EC).
    pub gateway_tls_key: Option<PathBuf>,
    /// Lets a production gateway run without TLS (`AGENT_ALLOW_PLAIN_WS=true`),
    /// for an operator whose TLS proxy is in front of it. Default false.
    pub agent_allow_plain_ws: bool,
    /// Minutes without a request after which a dashboard session ends
    /// (`DASHBOARD_SESSION_MINUTES`, 1-1440, default 30). See `docs/dashboard.md`.
    pub dashboard_session_minutes: u64,
    /// Threads serving the gateway's listener (`GATEWAY_WORKERS`, 1-64,
    /// default 2). An agent's connection and a dispatch for it are often
    /// served by different threads; with one, no dispatch crosses threads
    /// (lower latency and CPU per dispatch, one core per instance). See
    /// `docs/performance.md`.
    pub gateway_workers: usize,
    /// Name of this gateway instance in the cluster's route table and logs
    /// (`GATEWAY_INSTANCE_ID`; default `HOST:GATEWAY_PORT`). Only with
    /// `KEYVALUE_URL`. See `docs/deploy.md`.
    pub gateway_instance_id: Option<String>,
    /// Base URL at which API, MCP and other gateway instances reach this
    /// gateway's internal routes (`GATEWAY_ADVERTISE_URL`; default
    /// `http(s)://HOST:GATEWAY_PORT`, required when `HOST` is a wildcard
    /// address). Only with `KEYVALUE_URL`. See `docs/deploy.md`.
    pub gateway_advertise_url: Option<String>,
    /// How long events are kept for streams to resume from, hours
    /// (`EVENTS_RETENTION_HOURS`, 1-168, default 24). See `docs/events.md`.
    pub events_retention_hours: u64,
    /// Quotes of one symbol on one event stream at most this often, ms
    /// (`EVENTS_QUOTE_INTERVAL_MS`, 10-60000, default 250; the latest wins).
    pub events_quote_interval_ms: u64,
    /// Events an event stream buffers for a client that does not read
    /// before it is cut with the id to resume from (`EVENTS_STREAM_BUFFER`,
    /// 16-65536, default 4096).
    pub events_stream_buffer: usize,
    /// A comment line goes to an idle event stream this often, ms
    /// (`EVENTS_HEARTBEAT_MS`, 1000-60000, default 15000): proxies keep the
    /// connection, and a client that left is noticed.
    pub events_heartbeat_ms: u64,
    /// Webhook targets may be loopback, private, link-local or metadata
    /// addresses (`WEBHOOK_ALLOW_PRIVATE=true`; default false). See
    /// `docs/events.md`, "Webhooks".
    pub webhook_allow_private: bool,
    /// Days trade audit rows are kept (`AUDIT_RETENTION_DAYS`, 1-36500,
    /// default 400); older rows are pruned hourly, the chain kept verifiable
    /// (`docs/audit.md`).
    pub audit_retention_days: u32,
    /// Time limit of each webhook delivery, ms (`WEBHOOK_TIMEOUT_MS`,
    /// 100-30000, default 10000).
    pub webhook_timeout_ms: u64,
    /// First retry delay of a failed webhook delivery, ms, doubled per
    /// attempt with jitter (`WEBHOOK_RETRY_BASE_MS`, 10-600000, default 5000).
    pub webhook_retry_base_ms: u64,
    /// Longest delay between two attempts of a webhook delivery, ms
    /// (`WEBHOOK_RETRY_MAX_MS`, at least `WEBHOOK_RETRY_BASE_MS`, at most
    /// 86400000, default 3600000).
    pub webhook_retry_max_ms: u64,
    /// Proxies whose `X-Forwarded-For` names the client (`TRUSTED_PROXIES`,
    /// comma-separated addresses or CIDR blocks; default none: the peer
    /// address is the client). See `docs/security.md`.
    pub trusted_proxies: Option<String>,
    /// Failed authentications from one address before it gets 429
    /// (`AUTH_GUESS_THRESHOLD`, default 10; 0 turns the throttle off).
    pub auth_guess_threshold: u32,
    /// Failed authentications with one key prefix, from any addresses,
    /// before the prefix is refused to addresses that failed
    /// (`AUTH_GUESS_KEY_THRESHOLD`, default 50; 0 off).
    pub auth_guess_key_threshold: u32,
    /// A streak of failures is forgotten this long after its last failure or
    /// block, seconds (`AUTH_GUESS_WINDOW_SECS`, 1-86400, default 900).
    pub auth_guess_window_secs: u64,
    /// First block of a guessing address, ms, doubled by each further
    /// failure (`AUTH_GUESS_BLOCK_MS`, 10-3600000, default 1000).
    pub auth_guess_block_ms: u64,
    /// Longest block, seconds (`AUTH_GUESS_MAX_BLOCK_SECS`, 1-86400, default 900).
    pub auth_guess_max_block_secs: u64,
    /// Largest agent WebSocket frame before its `hello`, bytes
    /// (`AGENT_HELLO_MAX_FRAME_BYTES`, 1024-1048576, default 65536).
    pub agent_hello_max_frame_bytes: usize,
    /// Largest agent WebSocket frame or message after the handshake, bytes
    /// (`AGENT_MAX_FRAME_BYTES`, 65536-16777216, default 16777216).
    pub agent_max_frame_bytes: usize,
    /// Largest REST request body, bytes (`REST_MAX_BODY_BYTES`, default 262144).
    pub rest_max_body_bytes: usize,
    /// Largest body of a REST trading route (orders, positions),
    /// bytes (`REST_MAX_ORDER_BODY_BYTES`, default 16384).
    pub rest_max_order_body_bytes: usize,
    /// Largest body of a REST backtest route, bytes
    /// (`REST_MAX_BACKTEST_BODY_BYTES`, default 4194304).
    pub rest_max_backtest_body_bytes: usize,
    /// MCP sessions one credential may hold open at once
    /// (`MCP_MAX_SESSIONS_PER_KEY`, 1-100000, default 50).
    pub mcp_max_sessions_per_key: usize,
    /// An MCP session with no request for this long is closed, seconds
    /// (`MCP_SESSION_IDLE_SECS`, 1-86400, default 300).
    pub mcp_session_idle_secs: u64,
    /// How long the user has to confirm a live trade requested over MCP
    /// before nothing is sent, seconds (`MCP_TRADE_CONFIRM_TIMEOUT_SECS`,
    /// 1-3600, default 120; `docs/mcp.md`, "Trade confirmation").
    pub mcp_trade_confirm_timeout_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 4000,
            gateway_port: 8081,
            mcp_port: 8090,
            mcp_allowed_hosts: None,
            mcp_tool_groups: None,
            mcp_output_schemas: None,
            node_env: "development".into(),
            database_url: None,
            jwt_private_key_path: None,
            jwt_public_key_path: None,
            jwt_issuer: tradeterm_protocol::token::DEFAULT_ISSUER.into(),
            jwt_audience: tradeterm_protocol::token::DEFAULT_AUDIENCE.into(),
            token_lifetime_secs: tradeterm_protocol::token::DEFAULT_LIFETIME_SECS,
            gateway_internal_token: None,
            gateway_dispatch_channel: true,
            gateway_url: None,
            keyvalue_url: None,
            api_rate_limit_window_ms: 60_000,
            api_rate_limit_free: 10,
            api_rate_limit_pro: 60,
            api_rate_limit_team: 300,
            api_rate_limit_enterprise: 1000,
            heartbeat_interval_ms: 10_000,
            heartbeat_timeout_ms: 30_000,
            quote_cache_ms: 1_000,
            calendar_file: None,
            calendar_feed_url: None,
            calendar_feed_refresh_secs: 3_600,
            news_api_key: None,
            news_api_url: None,
            support_identity_secret: None,
            etf_flows_file: None,
            gateway_tls_cert: None,
            gateway_tls_key: None,
            agent_allow_plain_ws: false,
            dashboard_session_minutes: 30,
            gateway_workers: 2,
            gateway_instance_id: None,
            gateway_advertise_url: None,
            events_retention_hours: 24,
            events_quote_interval_ms: 250,
            events_stream_buffer: 4096,
            events_heartbeat_ms: 15_000,
            webhook_allow_private: false,
            audit_retention_days: 400,
            webhook_timeout_ms: 10_000,
            webhook_retry_base_ms: 5_000,
            webhook_retry_max_ms: 3_600_000,
            trusted_proxies: None,
            auth_guess_threshold: 10,
            auth_guess_key_threshold: 50,
            auth_guess_window_secs: 900,
            auth_guess_block_ms: 1_000,
            auth_guess_max_block_secs: 900,
            agent_hello_max_frame_bytes: 64 * 1024,
            agent_max_frame_bytes: 16 * 1024 * 1024,
            rest_max_body_bytes: 256 * 1024,
            rest_max_order_body_bytes: 16 * 1024,
            rest_max_backtest_body_bytes: 4 * 1024 * 1024,
            mcp_max_sessions_per_key: 50,
            mcp_session_idle_secs: 300,
            mcp_trade_confirm_timeout_secs: 120,
        }
    }
}

/// Where agents reach a gateway (see [`Settings::agent_urls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentUrls {
    /// Gateway base URL (`http(s)://HOST:PORT`): token exchange, dashboard.
    pub base: String,
    /// WebSocket endpoint (`ws(s)://HOST:PORT/agent/v1`): MT5 and Python agents.
    pub websocket: String,
    /// Long-poll base (`http(s)://HOST:PORT/agent/v1/poll`): MT4 agents.
    pub poll: String,
}

/// A server binary of the split deployment (`tradeterm-gateway`,
/// `tradeterm-api`, `tradeterm-mcp`): what it needs before it starts
/// ([`Settings::check_split_start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `tradeterm-gateway`: agents, tokens, keys, dispatch.
    Gateway,
    /// `tradeterm-api`: the REST API.
    Api,
    /// `tradeterm-mcp`: the MCP server.
    Mcp,
}

impl Role {
    /// The binary's name, as error messages say it.
    pub fn binary(self) -> &'static str {
        match self {
            Self::Gateway => "tradeterm-gateway",
            Self::Api => "tradeterm-api",
            Self::Mcp => "tradeterm-mcp",
        }
    }
}

/// Environment variables read, lower-cased as they map onto [`Settings`].
const ENV_KEYS: &[&str] = &[
    "HOST",
    "PORT",
    "GATEWAY_PORT",
    "MCP_PORT",
    "MCP_ALLOWED_HOSTS",
    "MCP_TOOL_GROUPS",
    "MCP_OUTPUT_SCHEMAS",
    "NODE_ENV",
    "DATABASE_URL",
    "JWT_PRIVATE_KEY_PATH",
    "JWT_PUBLIC_KEY_PATH",
    "JWT_ISSUER",
    "JWT_AUDIENCE",
    "TOKEN_LIFETIME_SECS",
    "GATEWAY_INTERNAL_TOKEN",
    "GATEWAY_URL",
    "GATEWAY_DISPATCH_CHANNEL",
    "KEYVALUE_URL",
    "API_RATE_LIMIT_WINDOW_MS",
    "API_RATE_LIMIT_FREE",
    "API_RATE_LIMIT_PRO",
    "API_RATE_LIMIT_TEAM",
    "API_RATE_LIMIT_ENTERPRISE",
    "HEARTBEAT_INTERVAL_MS",
    "HEARTBEAT_TIMEOUT_MS",
    "QUOTE_CACHE_MS",
    "CALENDAR_FILE",
    "CALENDAR_FEED_URL",
    "CALENDAR_FEED_REFRESH_SECS",
    "NEWS_API_KEY",
    "NEWS_API_URL",
    "SUPPORT_IDENTITY_SECRET",
    "ETF_FLOWS_FILE",
    "GATEWAY_TLS_CERT",
    "GATEWAY_TLS_KEY",
    "AGENT_ALLOW_PLAIN_WS",
    "DASHBOARD_SESSION_MINUTES",
    "GATEWAY_WORKERS",
    "GATEWAY_INSTANCE_ID",
    "GATEWAY_ADVERTISE_URL",
    "EVENTS_RETENTION_HOURS",
    "EVENTS_QUOTE_INTERVAL_MS",
    "EVENTS_STREAM_BUFFER",
    "EVENTS_HEARTBEAT_MS",
    "WEBHOOK_ALLOW_PRIVATE",
    "WEBHOOK_TIMEOUT_MS",
    "AUDIT_RETENTION_DAYS",
    "WEBHOOK_RETRY_BASE_MS",
    "WEBHOOK_RETRY_MAX_MS",
    "TRUSTED_PROXIES",
    "AUTH_GUESS_THRESHOLD",
    "AUTH_GUESS_KEY_THRESHOLD",
    "AUTH_GUESS_WINDOW_SECS",
    "AUTH_GUESS_BLOCK_MS",
    "AUTH_GUESS_MAX_BLOCK_SECS",
    "AGENT_HELLO_MAX_FRAME_BYTES",
    "AGENT_MAX_FRAME_BYTES",
    "REST_MAX_BODY_BYTES",
    "REST_MAX_ORDER_BODY_BYTES",
    "REST_MAX_BACKTEST_BODY_BYTES",
    "MCP_MAX_SESSIONS_PER_KEY",
    "MCP_SESSION_IDLE_SECS",
    "MCP_TRADE_CONFIRM_TIMEOUT_SECS",
];

impl Settings {
    /// Loads defaults, then `file` if given, then the process environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let env: Vec<(String, String)> = std::env::vars().collect();
        Self::load_from(file, &env)
    }

    /// As [`Settings::load`] with an explicit environment (for tests).
    pub fn load_from(file: Option<&Path>, env: &[(String, String)]) -> anyhow::Result<Self> {
        let mut builder = config::Config::builder();
        if let Some(path) = file {
            builder = builder.add_source(config::File::from(path).format(config::FileFormat::Toml).required(true));
        }
        for (k, v) in env {
            if ENV_KEYS.contains(&k.as_str()) && !v.is_empty() {
                builder = builder.set_override(k.to_ascii_lowercase(), v.clone())?;
            }
        }
        let settings: Settings = builder
            .build()
            .context("reading configuration")?
            .try_deserialize()
            .context("invalid configuration")?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> anyhow::Result<()> {
        match self.node_env.as_str() {
            "development" | "production" | "test" => {}
            other => bail!("NODE_ENV must be `development`, `production` or `test`, not `{other}`"),
        }
        if self.heartbeat_interval_ms == 0 || self.heartbeat_timeout_ms <= self.heartbeat_interval_ms {
            bail!("HEARTBEAT_TIMEOUT_MS must be greater than HEARTBEAT_INTERVAL_MS (> 0)");
        }
        if self.api_rate_limit_window_ms == 0 {
            bail!("API_RATE_LIMIT_WINDOW_MS must be positive");
        }
        if self.token_lifetime_secs < 60 {
            bail!("TOKEN_LIFETIME_SECS must be at least 60");
        }
        if !(1..=1440).contains(&self.dashboard_session_minutes) {
            bail!("DASHBOARD_SESSION_MINUTES must be between 1 and 1440");
        }
        if !(1..=64).contains(&self.gateway_workers) {
            bail!("GATEWAY_WORKERS must be between 1 and 64");
        }
        if !(1..=168).contains(&self.events_retention_hours) {
            bail!("EVENTS_RETENTION_HOURS must be between 1 and 168");
        }
        if !(10..=60_000).contains(&self.events_quote_interval_ms) {
            bail!("EVENTS_QUOTE_INTERVAL_MS must be between 10 and 60000");
        }
        if !(16..=65_536).contains(&self.events_stream_buffer) {
            bail!("EVENTS_STREAM_BUFFER must be between 16 and 65536");
        }
        if !(1_000..=60_000).contains(&self.events_heartbeat_ms) {
            bail!("EVENTS_HEARTBEAT_MS must be between 1000 and 60000");
        }
        if !(1..=36_500).contains(&self.audit_retention_days) {
            bail!("AUDIT_RETENTION_DAYS must be between 1 and 36500");
        }
        if !(100..=30_000).contains(&self.webhook_timeout_ms) {
            bail!("WEBHOOK_TIMEOUT_MS must be between 100 and 30000");
        }
        if !(10..=600_000).contains(&self.webhook_retry_base_ms) {
            bail!("WEBHOOK_RETRY_BASE_MS must be between 10 and 600000");
        }
        if !(self.webhook_retry_base_ms..=86_400_000).contains(&self.webhook_retry_max_ms) {
            bail!("WEBHOOK_RETRY_MAX_MS must be between WEBHOOK_RETRY_BASE_MS and 86400000");
        }
        self.validate_limits()
    }

    /// The credential-guessing throttle's and the resource limits' ranges.
    fn validate_limits(&self) -> anyhow::Result<()> {
        tradeterm_cluster::guess::TrustedProxies::parse(self.trusted_proxies.as_deref().unwrap_or(""))
            .map_err(|e| anyhow::anyhow!("TRUSTED_PROXIES: {e}"))?;
        let ranges: [(&str, u64, u64, u64); 12] = [
            ("AUTH_GUESS_WINDOW_SECS", self.auth_guess_window_secs, 1, 86_400),
            ("AUTH_GUESS_BLOCK_MS", self.auth_guess_block_ms, 10, 3_600_000),
            ("AUTH_GUESS_MAX_BLOCK_SECS", self.auth_guess_max_block_secs, 1, 86_400),
            (
                "AGENT_HELLO_MAX_FRAME_BYTES",
                self.agent_hello_max_frame_bytes as u64,
                1024,
                1 << 20,
            ),
            (
                "AGENT_MAX_FRAME_BYTES",
                self.agent_max_frame_bytes as u64,
                1 << 16,
                16 << 20,
            ),
            ("REST_MAX_BODY_BYTES", self.rest_max_body_bytes as u64, 1024, 64 << 20),
            (
                "REST_MAX_ORDER_BODY_BYTES",
                self.rest_max_order_body_bytes as u64,
                1024,
                64 << 20,
            ),
            (
                "REST_MAX_BACKTEST_BODY_BYTES",
                self.rest_max_backtest_body_bytes as u64,
                1024,
                64 << 20,
            ),
            (
                "MCP_MAX_SESSIONS_PER_KEY",
                self.mcp_max_sessions_per_key as u64,
                1,
                100_000,
            ),
            ("MCP_SESSION_IDLE_SECS", self.mcp_session_idle_secs, 1, 86_400),
            (
                "MCP_TRADE_CONFIRM_TIMEOUT_SECS",
                self.mcp_trade_confirm_timeout_secs,
                1,
                3_600,
            ),
            (
                "AUTH_GUESS_THRESHOLD",
                u64::from(self.auth_guess_threshold),
                0,
                1_000_000,
            ),
        ];
        for (name, value, min, max) in ranges {
            if !(min..=max).contains(&value) {
                bail!("{name} must be between {min} and {max}");
            }
        }
        Ok(())
    }

    /// What a split-deployment binary needs before it starts, checked at once
    /// so that one error names every missing or unusable setting (see
    /// `docs/deploy.md`, "Settings"):
    ///
    /// - every role: `DATABASE_URL`, the store all instances share (nothing
    ///   falls back to a private SQLite file; in development an explicit
    ///   `sqlite://` URL is allowed, in production it must be `postgres://`);
    ///   in production also `KEYVALUE_URL` (rate limits, revocation marks, the
    ///   terminal registry);
    /// - `tradeterm-api` and `tradeterm-mcp`: `JWT_PUBLIC_KEY_PATH` and
    ///   `GATEWAY_INTERNAL_TOKEN` (the secret of the gateway's dispatch route);
    /// - `tradeterm-gateway` in production: `JWT_PRIVATE_KEY_PATH`,
    ///   `JWT_PUBLIC_KEY_PATH`, `GATEWAY_INTERNAL_TOKEN` (without it the API
    ///   and MCP instances cannot dispatch), and TLS (`GATEWAY_TLS_CERT` and
    ///   `GATEWAY_TLS_KEY`, or `AGENT_ALLOW_PLAIN_WS=true` behind a TLS proxy).
    ///
    /// # Errors
    /// One message naming the binary and every problem, ending with where the
    /// settings are documented.
    pub fn check_split_start(&self, role: Role) -> anyhow::Result<()> {
        let problems = self.split_start_problems(role);
        if problems.is_empty() {
            return Ok(());
        }
        let mode = if self.production() {
            "NODE_ENV=production"
        } else {
            "development"
        };
        bail!(
            "{} refuses to start ({mode}): {}. Every setting is listed in docs/deploy.md",
            role.binary(),
            problems.join("; ")
        )
    }

    fn split_start_problems(&self, role: Role) -> Vec<String> {
        let mut problems = Vec::new();
        let set = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
        match self.database_url.as_deref().map(str::trim) {
            None | Some("") => problems.push(if self.production() {
                "DATABASE_URL is missing (postgres://…: the PostgreSQL database every instance shares)".to_owned()
            } else {
                "DATABASE_URL is missing (the database every instance shares: postgres://…, or in development an \
                 explicit sqlite://PATH?mode=rwc that the gateway, API and MCP processes all open)"
                    .to_owned()
            }),
            Some(url) if self.production() && !(url.starts_with("postgres://") || url.starts_with("postgresql://")) => {
                problems.push(
                    "DATABASE_URL must be a postgres:// URL in production (a SQLite file is private to one machine)"
                        .to_owned(),
                );
            }
            Some(_) => {}
        }
        if self.production() && !set(&self.keyvalue_url) {
            problems.push(
                "KEYVALUE_URL is missing (redis://…: rate limits, revocations and the terminal registry every \
                 instance shares)"
                    .to_owned(),
            );
        }
        let needs_keys_and_token = role != Role::Gateway || self.production();
        if role == Role::Gateway && self.production() && self.jwt_private_key_path.is_none() {
            problems
                .push("JWT_PRIVATE_KEY_PATH is missing (the RS256 private key PEM that signs session tokens)".into());
        }
        if needs_keys_and_token && self.jwt_public_key_path.is_none() {
            problems
                .push("JWT_PUBLIC_KEY_PATH is missing (the RS256 public key PEM that verifies session tokens)".into());
        }
        if needs_keys_and_token && !set(&self.gateway_internal_token) {
            problems.push(
                "GATEWAY_INTERNAL_TOKEN is missing (the shared secret of the gateway's internal dispatch route; the \
                 same value on every gateway, API and MCP instance)"
                    .to_owned(),
            );
        }
        if role == Role::Gateway && self.production() && !self.gateway_tls_enabled() && !self.agent_allow_plain_ws {
            problems.push(
                "GATEWAY_TLS_CERT and GATEWAY_TLS_KEY are missing (TLS for agents; or AGENT_ALLOW_PLAIN_WS=true when \
                 a TLS proxy in front of the gateway terminates it)"
                    .to_owned(),
            );
        }
        problems
    }

    /// This gateway's membership of a cluster, as `(instance id, advertised
    /// internal URL)`: `None` without `KEYVALUE_URL` (a lone gateway).
    ///
    /// # Errors
    /// `HOST` is a wildcard address (`0.0.0.0`, `::`) and
    /// `GATEWAY_ADVERTISE_URL` is unset: other instances could not reach
    /// this one; or the URL is not `http(s)://`.
    pub fn gateway_cluster(&self) -> anyhow::Result<Option<(String, String)>> {
        if self.keyvalue_url.is_none() {
            return Ok(None);
        }
        let url = match &self.gateway_advertise_url {
            Some(url) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    bail!("GATEWAY_ADVERTISE_URL must be an http:// or https:// URL, not `{url}`");
                }
                url.trim_end_matches('/').to_owned()
            }
            None if matches!(self.host.as_str(), "0.0.0.0" | "::" | "[::]") => bail!(
                "GATEWAY_ADVERTISE_URL is required with KEYVALUE_URL when HOST is {}: the internal URL at which \
                 the other instances reach this gateway (for example http://10.0.0.5:{})",
                self.host,
                self.gateway_port
            ),
            None => {
                let scheme = if self.gateway_tls_enabled() { "https" } else { "http" };
                format!("{scheme}://{}:{}", self.host, self.gateway_port)
            }
        };
        let instance = self
            .gateway_instance_id
            .clone()
            .unwrap_or_else(|| format!("{}:{}", self.host, self.gateway_port));
        Ok(Some((instance, url)))
    }

    /// How long a dashboard session lasts without a request (`DASHBOARD_SESSION_MINUTES`).
    pub fn dashboard_session_idle(&self) -> Duration {
        Duration::from_secs(self.dashboard_session_minutes * 60)
    }

    /// Whether `NODE_ENV=production`.
    pub fn production(&self) -> bool {
        self.node_env == "production"
    }

    /// Host names the MCP listener accepts in `Host` headers:
    /// `MCP_ALLOWED_HOSTS`, plus `HOST` when it names a specific interface
    /// (loopback names are always accepted by the server).
    pub fn mcp_allowed_hosts(&self) -> Vec<String> {
        let mut allowed_hosts: Vec<String> = self
            .mcp_allowed_hosts
            .iter()
            .flat_map(|list| list.split(','))
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .collect();
        if self.host != "0.0.0.0" && self.host != "::" {
            allowed_hosts.push(self.host.clone());
        }
        allowed_hosts
    }

    /// A Redis pool for `KEYVALUE_URL`, when set. Used by the REST API, which
    /// refuses to start in production without it (spec §5.9).
    pub fn redis_pool(&self) -> anyhow::Result<Option<deadpool_redis::Pool>> {
        if self.keyvalue_url.is_none() && self.production() {
            bail!(
                "NODE_ENV=production requires KEYVALUE_URL (the Redis URL used for rate limiting); refusing to start"
            );
        }
        self.keyvalue_pool()
    }

    /// A Redis pool for `KEYVALUE_URL` when set (the gateway publishes API-key
    /// revocations there), with no production requirement.
    pub fn keyvalue_pool(&self) -> anyhow::Result<Option<deadpool_redis::Pool>> {
        let Some(url) = &self.keyvalue_url else {
            return Ok(None);
        };
        let pool = deadpool_redis::Config::from_url(url.clone())
            .create_pool(Some(deadpool_redis::Runtime::Tokio1))
            .map_err(|e| anyhow::anyhow!("KEYVALUE_URL is not a usable Redis URL: {e}"))?;
        Ok(Some(pool))
    }

    /// The event pipeline of this process (`docs/events.md`): Redis Streams
    /// with `KEYVALUE_URL` (every instance of a deployment reads and hears
    /// the same events), else one process's memory (`tradeterm serve` on its
    /// embedded defaults). Kept `EVENTS_RETENTION_HOURS`. Needs a tokio
    /// runtime (the publisher's tasks).
    ///
    /// # Errors
    /// `KEYVALUE_URL` is not a usable Redis URL.
    pub fn event_publisher(&self) -> anyhow::Result<tradeterm_events::Publisher> {
        use tradeterm_events::memory::{MemoryBus, MemorySettings};
        use tradeterm_events::redis::{RedisBus, RedisSettings};
        const MAX_PER_LICENSE: usize = 100_000;
        let retention_ms = self.events_retention_hours as i64 * 3_600_000;
        let bus: std::sync::Arc<dyn tradeterm_events::EventBus> = match (&self.keyvalue_url, self.keyvalue_pool()?) {
            (Some(url), Some(pool)) => std::sync::Arc::new(
                RedisBus::new(
                    pool,
                    RedisSettings {
                        url: url.clone(),
                        retention_ms,
                        max_per_license: MAX_PER_LICENSE,
                    },
                )
                .map_err(|e| anyhow::anyhow!("KEYVALUE_URL: the event stream cannot use it: {e}"))?,
            ),
            _ => std::sync::Arc::new(MemoryBus::new(MemorySettings {
                retention_ms,
                max_per_license: MAX_PER_LICENSE,
            })),
        };
        Ok(tradeterm_events::Publisher::spawn(bus, Default::default()))
    }

    /// Settings of each event stream subscription (`EVENTS_QUOTE_INTERVAL_MS`,
    /// `EVENTS_STREAM_BUFFER`).
    pub fn event_stream_settings(&self) -> tradeterm_events::subscriber::SubscriberSettings {
        tradeterm_events::subscriber::SubscriberSettings {
            buffer: self.events_stream_buffer,
            quote_interval: Duration::from_millis(self.events_quote_interval_ms),
            heartbeat: Duration::from_millis(self.events_heartbeat_ms),
            ..Default::default()
        }
    }

    /// The credential-guessing throttle of this process (`AUTH_GUESS_*`,
    /// `TRUSTED_PROXIES`), shared through Redis with `KEYVALUE_URL`: build it
    /// once and hand it to every listener of the process.
    ///
    /// # Errors
    /// `KEYVALUE_URL` or `TRUSTED_PROXIES` is unusable.
    pub fn guess_guard(&self) -> anyhow::Result<std::sync::Arc<tradeterm_cluster::guess::GuessGuard>> {
        use tradeterm_cluster::guess::{GuessGuard, GuessSettings, TrustedProxies};
        let trusted = TrustedProxies::parse(self.trusted_proxies.as_deref().unwrap_or(""))
            .map_err(|e| anyhow::anyhow!("TRUSTED_PROXIES: {e}"))?;
        let settings = GuessSettings {
            threshold: self.auth_guess_threshold,
            key_threshold: self.auth_guess_key_threshold,
            window: Duration::from_secs(self.auth_guess_window_secs),
            block: Duration::from_millis(self.auth_guess_block_ms),
            max_block: Duration::from_secs(self.auth_guess_max_block_secs),
        };
        Ok(std::sync::Arc::new(GuessGuard::new(
            settings,
            trusted,
            self.keyvalue_pool()?,
        )))
    }

    /// Whether the gateway terminates TLS (`GATEWAY_TLS_CERT` and
    /// `GATEWAY_TLS_KEY` both set): `https://` and `wss://` URLs.
    pub fn gateway_tls_enabled(&self) -> bool {
        self.gateway_tls_cert.is_some() && self.gateway_tls_key.is_some()
    }

    /// The gateway's certificate and key files (`GATEWAY_TLS_CERT`,
    /// `GATEWAY_TLS_KEY`; `None`: plain HTTP and `ws://`), which
    /// `tradeterm_gateway::load_tls` loads.
    ///
    /// # Errors
    /// Only one of the two is set; or `NODE_ENV=production` without TLS and
    /// without `AGENT_ALLOW_PLAIN_WS=true` (terminal keys must not cross the
    /// network in clear). Every message names the setting.
    pub fn gateway_tls_files(&self) -> anyhow::Result<Option<(&Path, &Path)>> {
        match (&self.gateway_tls_cert, &self.gateway_tls_key) {
            (Some(cert), Some(key)) => Ok(Some((cert, key))),
            (Some(_), None) => bail!("GATEWAY_TLS_CERT is set but GATEWAY_TLS_KEY is not: set both, or neither"),
            (None, Some(_)) => bail!("GATEWAY_TLS_KEY is set but GATEWAY_TLS_CERT is not: set both, or neither"),
            (None, None) => {
                if self.production() && !self.agent_allow_plain_ws {
                    bail!(
                        "NODE_ENV=production requires TLS on the gateway: set GATEWAY_TLS_CERT and GATEWAY_TLS_KEY \
                         (PEM files; agents then connect with wss://), or AGENT_ALLOW_PLAIN_WS=true if a TLS proxy \
                         in front of the gateway terminates TLS; refusing to start"
                    );
                }
                Ok(None)
            }
        }
    }

    /// The host this machine reaches its own listeners at: `HOST`, or
    /// `127.0.0.1` when `HOST` is a wildcard address (`0.0.0.0`, `::`).
    pub fn local_host(&self) -> &str {
        match self.host.as_str() {
            "0.0.0.0" | "::" | "[::]" => "127.0.0.1",
            host => host,
        }
    }

    /// The URLs of the gateway at `host:port`, as agents use them.
    pub fn agent_urls(&self, host: &str, port: u16) -> AgentUrls {
        let (http, ws) = if self.gateway_tls_enabled() {
            ("https", "wss")
        } else {
            ("http", "ws")
        };
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        AgentUrls {
            base: format!("{http}://{host}:{port}"),
            websocket: format!("{ws}://{host}:{port}/agent/v1"),
            poll: format!("{http}://{host}:{port}/agent/v1/poll"),
        }
    }

    /// Heartbeat interval.
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_millis(self.heartbeat_interval_ms)
    }

    /// Heartbeat timeout.
    pub fn heartbeat_timeout(&self) -> Duration {
        Duration::from_millis(self.heartbeat_timeout_ms)
    }

    /// Age limit of pushed quotes answering `get_tick`.
    pub fn quote_cache(&self) -> Duration {
        Duration::from_millis(self.quote_cache_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn defaults_and_spec_variable_names() {
        let s = Settings::load_from(None, &[]).unwrap();
        assert_eq!((s.port, s.gateway_port, s.mcp_port), (4000, 8081, 8090));
        assert!(!s.production());
        let s = Settings::load_from(
            None,
            &env(&[
                ("PORT", "5000"),
                ("GATEWAY_PORT", "9000"),
                ("NODE_ENV", "production"),
                ("KEYVALUE_URL", "redis://127.0.0.1:6379"),
                ("API_RATE_LIMIT_FREE", "3"),
                ("HOME", "/x"),
            ]),
        )
        .unwrap();
        assert_eq!(s.api_rate_limit_free, 3);
        assert_eq!((s.port, s.gateway_port), (5000, 9000));
        assert!(s.production());
    }

    #[test]
    fn a_split_binary_names_every_missing_setting_at_once() {
        let prod = Settings::load_from(None, &env(&[("NODE_ENV", "production")])).unwrap();
        for role in [Role::Gateway, Role::Api, Role::Mcp] {
            let err = prod.check_split_start(role).unwrap_err().to_string();
            assert!(err.starts_with(role.binary()), "{err}");
            for name in [
                "DATABASE_URL",
                "KEYVALUE_URL",
                "JWT_PUBLIC_KEY_PATH",
                "GATEWAY_INTERNAL_TOKEN",
                "docs/deploy.md",
            ] {
                assert!(err.contains(name), "{role:?}: {name} not in {err}");
            }
            let gateway_only = ["JWT_PRIVATE_KEY_PATH", "GATEWAY_TLS_CERT", "AGENT_ALLOW_PLAIN_WS"];
            for name in gateway_only {
                assert_eq!(err.contains(name), role == Role::Gateway, "{role:?}: {name} in {err}");
            }
        }
    }

    #[test]
    fn production_wants_postgres_and_development_an_explicit_database() {
        let complete = [
            ("NODE_ENV", "production"),
            ("DATABASE_URL", "postgres://tt@db/tradeterm"),
            ("KEYVALUE_URL", "redis://127.0.0.1:6379"),
            ("JWT_PRIVATE_KEY_PATH", "/k/private.pem"),
            ("JWT_PUBLIC_KEY_PATH", "/k/public.pem"),
            ("GATEWAY_INTERNAL_TOKEN", "s3cret"),
            ("AGENT_ALLOW_PLAIN_WS", "true"),
        ];
        let ok = Settings::load_from(None, &env(&complete)).unwrap();
        for role in [Role::Gateway, Role::Api, Role::Mcp] {
            ok.check_split_start(role).unwrap();
        }
        // A SQLite file in production is refused, and only that is named.
        let mut sqlite = complete;
        sqlite[1] = ("DATABASE_URL", "sqlite:///var/lib/tt.db?mode=rwc");
        let err = Settings::load_from(None, &env(&sqlite))
            .unwrap()
            .check_split_start(Role::Api)
            .unwrap_err()
            .to_string();
        assert!(err.contains("DATABASE_URL must be a postgres:// URL"), "{err}");
        assert!(!err.contains("KEYVALUE_URL"), "{err}");

        // Development: no private fallback, but an explicit sqlite:// is a choice;
        // Redis optional; the gateway generates development keys.
        let dev = Settings::load_from(None, &[]).unwrap();
        for role in [Role::Gateway, Role::Api, Role::Mcp] {
            let err = dev.check_split_start(role).unwrap_err().to_string();
            assert!(
                err.contains("DATABASE_URL is missing") && err.contains("sqlite://"),
                "{err}"
            );
            assert!(!err.contains("KEYVALUE_URL"), "{err}");
        }
        let dev = Settings::load_from(None, &env(&[("DATABASE_URL", "sqlite:///tmp/shared.db?mode=rwc")])).unwrap();
        dev.check_split_start(Role::Gateway).unwrap();
        let err = dev.check_split_start(Role::Mcp).unwrap_err().to_string();
        assert!(
            err.contains("JWT_PUBLIC_KEY_PATH")
                && err.contains("GATEWAY_INTERNAL_TOKEN")
                && !err.contains("DATABASE_URL"),
            "{err}"
        );
    }

    #[test]
    fn dashboard_session_minutes() {
        let s = Settings::load_from(None, &[]).unwrap();
        assert_eq!(s.dashboard_session_idle(), Duration::from_secs(30 * 60));
        let s = Settings::load_from(None, &env(&[("DASHBOARD_SESSION_MINUTES", "5")])).unwrap();
        assert_eq!(s.dashboard_session_idle(), Duration::from_secs(5 * 60));
        for bad in ["0", "1441"] {
            let e = Settings::load_from(None, &env(&[("DASHBOARD_SESSION_MINUTES", bad)])).unwrap_err();
            assert!(format!("{e:#}").contains("DASHBOARD_SESSION_MINUTES"), "{bad}");
        }
    }

    #[test]
    fn guessing_and_resource_limits() {
        let s = Settings::load_from(None, &[]).unwrap();
        assert_eq!((s.auth_guess_threshold, s.agent_hello_max_frame_bytes), (10, 65_536));
        assert!(s.guess_guard().unwrap().trusted().is_empty());
        let s = Settings::load_from(
            None,
            &env(&[
                ("TRUSTED_PROXIES", "10.0.0.0/8,127.0.0.1"),
                ("AUTH_GUESS_THRESHOLD", "3"),
                ("MCP_MAX_SESSIONS_PER_KEY", "2"),
                ("REST_MAX_ORDER_BODY_BYTES", "2048"),
            ]),
        )
        .unwrap();
        assert_eq!(s.guess_guard().unwrap().settings().threshold, 3);
        assert!(s.guess_guard().unwrap().trusted().contains("10.1.2.3".parse().unwrap()));
        assert_eq!((s.mcp_max_sessions_per_key, s.rest_max_order_body_bytes), (2, 2048));
        for (name, bad) in [
            ("TRUSTED_PROXIES", "proxy.example"),
            ("AGENT_HELLO_MAX_FRAME_BYTES", "10"),
            ("MCP_MAX_SESSIONS_PER_KEY", "0"),
            ("AUTH_GUESS_BLOCK_MS", "1"),
        ] {
            let e = Settings::load_from(None, &env(&[(name, bad)])).unwrap_err();
            assert!(format!("{e:#}").contains(name), "{name}={bad}: {e:#}");
        }
    }

    #[test]
    fn gateway_workers() {
        assert_eq!(Settings::load_from(None, &[]).unwrap().gateway_workers, 2);
        let s = Settings::load_from(None, &env(&[("GATEWAY_WORKERS", "1")])).unwrap();
        assert_eq!(s.gateway_workers, 1);
        for bad in ["0", "65"] {
            let e = Settings::load_from(None, &env(&[("GATEWAY_WORKERS", bad)])).unwrap_err();
            assert!(format!("{e:#}").contains("GATEWAY_WORKERS"), "{bad}");
        }
    }

    #[test]
    fn the_mcp_list_defaults_come_from_the_environment() {
        let s = Settings::load_from(None, &[]).unwrap();
        assert_eq!(
            (s.mcp_tool_groups.as_deref(), s.mcp_output_schemas.as_deref()),
            (None, None)
        );
        let s = Settings::load_from(
            None,
            &env(&[("MCP_TOOL_GROUPS", "market,trading"), ("MCP_OUTPUT_SCHEMAS", "true")]),
        )
        .unwrap();
        assert_eq!(
            (s.mcp_tool_groups.as_deref(), s.mcp_output_schemas.as_deref()),
            (Some("market,trading"), Some("true"))
        );
    }

    #[test]
    fn the_calendar_feed_settings() {
        let s = Settings::load_from(None, &[]).unwrap();
        assert_eq!(
            (s.calendar_feed_url.as_deref(), s.calendar_feed_refresh_secs),
            (None, 3600)
        );
        let s = Settings::load_from(
            None,
            &env(&[
                ("CALENDAR_FEED_URL", "http://127.0.0.1:9/ff_calendar_thisweek.json"),
                ("CALENDAR_FEED_REFRESH_SECS", "600"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (s.calendar_feed_url.as_deref(), s.calendar_feed_refresh_secs),
            (Some("http://127.0.0.1:9/ff_calendar_thisweek.json"), 600)
        );
    }

    #[cfg(feature = "services")]
    #[test]
    fn the_calendar_feed_makes_the_server_calendar() {
        let s = Settings::load_from(None, &[]).unwrap();
        assert!(!s.server_calendar().unwrap().is_configured(), "off by default");
        let s = Settings::load_from(
            None,
            &env(&[
                ("CALENDAR_FEED_URL", "http://127.0.0.1:9/ff_calendar_thisweek.json"),
                ("CALENDAR_FEED_REFRESH_SECS", "600"),
            ]),
        )
        .unwrap();
        assert_eq!(s.calendar_feed_refresh_secs, 600);
        // No runtime here: configured, not fetched yet, not an error.
        let calendar = s.server_calendar().unwrap();
        assert!(calendar.is_configured() && !calendar.snapshot(0).available);
        let bad = Settings::load_from(None, &env(&[("CALENDAR_FEED_URL", "file:///etc/passwd")])).unwrap();
        assert!(
            bad.server_calendar()
                .unwrap_err()
                .to_string()
                .contains("CALENDAR_FEED_URL")
        );
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(Settings::load_from(None, &env(&[("PORT", "not-a-port")])).is_err());
        assert!(Settings::load_from(None, &env(&[("NODE_ENV", "prod")])).is_err());
        assert!(Settings::load_from(None, &env(&[("HEARTBEAT_TIMEOUT_MS", "10")])).is_err());
        let prod = Settings::load_from(None, &env(&[("NODE_ENV", "production")])).unwrap();
        let err = prod.redis_pool().unwrap_err().to_string();
        assert!(err.contains("KEYVALUE_URL"), "{err}");
        assert!(
            Settings::default().redis_pool().unwrap().is_none(),
            "rate limiting is off in development"
        );
    }

    #[test]
    fn gateway_tls_settings_and_the_production_rule() {
        // Development: plain ws:// is fine.
        let dev = Settings::load_from(None, &[]).unwrap();
        assert!(dev.gateway_tls_files().unwrap().is_none());
        assert!(!dev.gateway_tls_enabled());

        // Production without TLS refuses, naming the settings...
        let prod = Settings::load_from(None, &env(&[("NODE_ENV", "production")])).unwrap();
        let err = prod.gateway_tls_files().unwrap_err().to_string();
        for name in ["GATEWAY_TLS_CERT", "GATEWAY_TLS_KEY", "AGENT_ALLOW_PLAIN_WS"] {
            assert!(err.contains(name), "{err}");
        }
        // ...unless the operator says a TLS proxy is in front.
        let proxied = Settings::load_from(
            None,
            &env(&[("NODE_ENV", "production"), ("AGENT_ALLOW_PLAIN_WS", "true")]),
        )
        .unwrap();
        assert!(proxied.agent_allow_plain_ws);
        assert!(proxied.gateway_tls_files().unwrap().is_none());

        // Half a pair names the missing setting; both files, in production: TLS on.
        let half = Settings::load_from(None, &env(&[("GATEWAY_TLS_CERT", "/c.pem")])).unwrap();
        assert!(
            half.gateway_tls_files()
                .unwrap_err()
                .to_string()
                .contains("GATEWAY_TLS_KEY is not")
        );
        let tls = Settings::load_from(
            None,
            &env(&[
                ("NODE_ENV", "production"),
                ("GATEWAY_TLS_CERT", "/c.pem"),
                ("GATEWAY_TLS_KEY", "/k.pem"),
            ]),
        )
        .unwrap();
        assert!(tls.gateway_tls_enabled());
        assert_eq!(
            tls.gateway_tls_files().unwrap(),
            Some((Path::new("/c.pem"), Path::new("/k.pem")))
        );
    }

    #[test]
    fn agent_urls_follow_tls_and_the_host() {
        let plain = Settings::load_from(None, &env(&[("HOST", "0.0.0.0")])).unwrap();
        assert_eq!(plain.local_host(), "127.0.0.1");
        let urls = plain.agent_urls(plain.local_host(), 8081);
        assert_eq!(urls.websocket, "ws://127.0.0.1:8081/agent/v1");
        assert_eq!(urls.poll, "http://127.0.0.1:8081/agent/v1/poll");
        assert_eq!(urls.base, "http://127.0.0.1:8081");
        let tls = Settings::load_from(
            None,
            &env(&[("GATEWAY_TLS_CERT", "/c.pem"), ("GATEWAY_TLS_KEY", "/k.pem")]),
        )
        .unwrap();
        let urls = tls.agent_urls("gw.example.com", 443);
        assert_eq!(urls.websocket, "wss://gw.example.com:443/agent/v1");
        assert_eq!(urls.poll, "https://gw.example.com:443/agent/v1/poll");
        assert_eq!(tls.agent_urls("::1", 9).websocket, "wss://[::1]:9/agent/v1");
    }

    #[test]
    fn file_then_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tradeterm.toml");
        std::fs::write(&path, "port = 4100\ngateway_port = 8100\n").unwrap();
        let s = Settings::load_from(Some(&path), &env(&[("PORT", "4200")])).unwrap();
        assert_eq!((s.port, s.gateway_port), (4200, 8100));
    }
}
