//! The single-node stack on port 0 for end-to-end tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tradeterm::Settings;
use tradeterm::demo::DemoCredentials;
use tradeterm::stack::{Stack, StackHooks, StackOptions};
use tradeterm_sim::Clock;
use tradeterm_tools::managed::engine::ManagedSettings;
use tradeterm_tools::monitor::MonitorSettings;

use super::client::{Api, ApiResult, Expect};

/// Wednesday 2026-11-18 12:00 UTC: markets open. The simulated terminals'
/// clock starts here unless a test gives its own.
pub const WEDNESDAY_NOON: i64 = 1_795_003_200_000;

/// What to start.
pub struct Options {
    /// Simulated terminals connected over the agent protocol.
    pub sims: usize,
    /// Whether their allow-trading input is on.
    pub allow_trading: bool,
    /// Rate limiting (and session revocation markers) through the machine's Redis.
    pub redis: bool,
    /// The REST rate-limit window.
    pub window_ms: u64,
    /// The simulated terminals' clock; `None`: the system clock from [`WEDNESDAY_NOON`].
    pub sim_clock: Option<Arc<dyn Clock>>,
    /// Timing of the equity-guard monitor.
    pub monitor: MonitorSettings,
    /// Timing of the managed exits' engine.
    pub managed: ManagedSettings,
    /// Timing of the news guard's watcher.
    pub news_watch: tradeterm_tools::news_watch::NewsWatchSettings,
    /// The data directory; `None`: a new temporary one. A test restarting a
    /// stack on the same data passes the first stack's [`TestStack::data_dir`].
    pub data_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            sims: 2,
            allow_trading: false,
            redis: false,
            window_ms: 60_000,
            sim_clock: None,
            monitor: MonitorSettings::default(),
            managed: ManagedSettings::default(),
            news_watch: Default::default(),
            data_dir: None,
        }
    }
}

/// A running stack, its demo credentials and clients of it.
pub struct TestStack {
    /// The stack (store, gateway, simulators).
    pub stack: Stack,
    /// The REST base URL.
    pub rest: String,
    /// The gateway's base URL.
    pub gateway: String,
    /// The demo license, its keys and terminals.
    pub creds: DemoCredentials,
    /// One HTTP client for everything.
    pub http: reqwest::Client,
    data_dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

/// Starts the stack with `opts` and waits until its simulated terminals are connected.
pub async fn spawn(opts: Options) -> TestStack {
    spawn_with(opts, |_| {}).await
}

/// As [`spawn`], with the settings adjusted by `adjust` before the start.
pub async fn spawn_with(opts: Options, adjust: impl FnOnce(&mut Settings)) -> TestStack {
    let temp = match opts.data_dir {
        Some(_) => None,
        None => Some(tempfile::tempdir().unwrap()),
    };
    let data_dir = opts
        .data_dir
        .clone()
        .unwrap_or_else(|| temp.as_ref().unwrap().path().to_path_buf());
    let mut settings = Settings {
        port: 0,
        gateway_port: 0,
        mcp_port: 0,
        heartbeat_interval_ms: 200,
        heartbeat_timeout_ms: 3000,
        ..Settings::default()
    };
    settings.api_rate_limit_window_ms = opts.window_ms;
    if opts.redis {
        settings.keyvalue_url = Some("redis://127.0.0.1:6379".into());
        // The guessing throttle counts failures per address in Redis, which
        // every test on this machine shares: one test's failed logins from
        // 127.0.0.1 would block another's. It is off on Redis stacks; its
        // Redis form is tested on its own (crates/cluster, crates/gateway).
        settings.auth_guess_threshold = 0;
        settings.auth_guess_key_threshold = 0;
    }
    adjust(&mut settings);
    let stack = Stack::start_with(
        StackOptions {
            data_dir: data_dir.clone(),
            sim_terminals: opts.sims,
            sim_allow_trading: opts.allow_trading,
            sim_start_ms: Some(WEDNESDAY_NOON),
            settings,
        },
        StackHooks {
            sim_clock: opts.sim_clock,
            monitor: opts.monitor,
            managed: opts.managed,
            news_watch: opts.news_watch,
        },
    )
    .await
    .unwrap();
    assert!(
        stack.wait_connected(Duration::from_secs(15)).await,
        "simulated terminals did not connect"
    );
    let creds = stack.credentials.clone().unwrap();
    TestStack {
        rest: format!("http://127.0.0.1:{}", stack.rest_port),
        gateway: format!("http://127.0.0.1:{}", stack.gateway_port),
        stack,
        creds,
        http: reqwest::Client::new(),
        data_dir,
        _temp: temp,
    }
}

impl TestStack {
    /// The REST API with the demo API key, no terminal named.
    pub fn api(&self) -> Api {
        self.api_as(&self.creds.api_key)
    }

    /// The REST API with `key` (an API key, a session token, anything).
    pub fn api_as(&self, key: &str) -> Api {
        Api::new(&self.http, &self.rest).key(key)
    }

    /// The REST API without a credential.
    pub fn anonymous(&self) -> Api {
        Api::new(&self.http, &self.rest)
    }

    /// The REST server's management routes with the demo master key.
    pub fn master(&self) -> Api {
        self.api_as(&self.creds.license_key)
    }

    /// The gateway with `key` (its dashboard and management routes).
    pub fn gateway_as(&self, key: &str) -> Api {
        Api::new(&self.http, &self.gateway).key(key)
    }

    /// `POST /api/v1/tools/{name}` with the demo API key, no terminal named.
    pub async fn tool(&self, name: &str, input: &Value) -> ApiResult {
        self.api().tool(name, input).await
    }

    /// Asserts that tool `name` refuses `input` with 400 VALIDATION_ERROR
    /// whose message mentions `needle` (in the error envelope alone).
    pub async fn assert_invalid(&self, name: &str, input: &Value, needle: &str) {
        self.tool(name, input)
            .await
            .failure_for(400, "VALIDATION_ERROR", format!("{name} {input}"))
            .mentions(needle);
    }

    /// The id of demo terminal `i`.
    pub fn terminal(&self, i: usize) -> &str {
        &self.creds.terminals[i].id
    }

    /// Where the store, the keys and the demo credentials live.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The paths of the stack's JWT key pair.
    pub fn key_paths(&self) -> tradeterm::keys::KeyPaths {
        tradeterm::keys::KeyPaths {
            private: self.data_dir.join("keys/jwt-private.pem"),
            public: self.data_dir.join("keys/jwt-public.pem"),
        }
    }

    /// Moves the demo license to the Free tier and returns a new API key of
    /// it (the demo key's cached exchange still carries the old tier).
    pub async fn free_tier_key(&self) -> String {
        self.tier_key(tradeterm_store::Tier::Free).await.1
    }

    /// Moves the demo license to `tier` and returns a new API key of it:
    /// (its record id, the key).
    pub async fn tier_key(&self, tier: tradeterm_store::Tier) -> (String, String) {
        let store = &self.stack.store;
        store.set_license_tier(&self.creds.license_id, tier).await.unwrap();
        let (record, key) = store
            .create_api_key(&self.creds.license_id, &format!("{tier:?}").to_lowercase())
            .await
            .unwrap();
        (record.id, key.expose().to_owned())
    }

    /// A new license of `tier` and an API key of it: (license id, API key).
    pub async fn other_license(&self, tier: tradeterm_store::Tier) -> (String, String) {
        let store = &self.stack.store;
        let (license, _) = store.create_license("other", tier).await.unwrap();
        let (_, key) = store.create_api_key(&license.id, "k").await.unwrap();
        (license.id, key.expose().to_owned())
    }
}
