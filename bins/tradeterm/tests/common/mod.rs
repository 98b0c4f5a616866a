//! Spawns the single-node stack on port 0 for end-to-end tests.

#![allow(dead_code, reason = "each test binary uses a different part of these helpers")]

use std::time::Duration;

use serde_json::Value;
use tradeterm::Settings;
use tradeterm::demo::DemoCredentials;
use tradeterm::stack::{Stack, StackOptions};

/// Wednesday 2026-11-18 12:00 UTC: markets open.
pub const WEDNESDAY_NOON: i64 = 1_795_003_200_000;

pub struct TestStack {
    pub stack: Stack,
    pub rest: String,
    pub gateway: String,
    pub creds: DemoCredentials,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
}

pub struct Options {
    pub sims: usize,
    pub allow_trading: bool,
    pub redis: bool,
    pub window_ms: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            sims: 2,
            allow_trading: false,
            redis: false,
            window_ms: 60_000,
        }
    }
}

pub async fn spawn(opts: Options) -> TestStack {
    spawn_with(opts, |_| {}).await
}

/// As [`spawn`], with the settings adjusted by `adjust` before the start.
pub async fn spawn_with(opts: Options, adjust: impl FnOnce(&mut Settings)) -> TestStack {
    let dir = tempfile::tempdir().unwrap();
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
    }
    adjust(&mut settings);
    let stack = Stack::start(StackOptions {
        data_dir: dir.path().to_path_buf(),
        sim_terminals: opts.sims,
        sim_allow_trading: opts.allow_trading,
        sim_start_ms: Some(WEDNESDAY_NOON),
        settings,
    })
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
        dir,
    }
}

impl TestStack {
    /// GET with the demo API key, optional terminal.
    pub async fn get(&self, path: &str, terminal: Option<&str>) -> (u16, Value, reqwest::header::HeaderMap) {
        self.get_as(&self.creds.api_key, path, terminal).await
    }

    pub async fn get_as(
        &self,
        key: &str,
        path: &str,
        terminal: Option<&str>,
    ) -> (u16, Value, reqwest::header::HeaderMap) {
        let mut req = self.http.get(format!("{}{path}", self.rest)).bearer_auth(key);
        if let Some(t) = terminal {
            req = req.header("X-Terminal-Id", t);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.json().await.unwrap_or(Value::Null);
        (status, body, headers)
    }

    pub async fn post(&self, path: &str, terminal: Option<&str>, body: &Value, idem: Option<&str>) -> (u16, Value) {
        self.send_as(
            &self.creds.api_key,
            reqwest::Method::POST,
            path,
            terminal,
            Some(body),
            idem,
        )
        .await
    }

    pub async fn send_as(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        terminal: Option<&str>,
        body: Option<&Value>,
        idem: Option<&str>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.rest))
            .bearer_auth(key);
        if let Some(t) = terminal {
            req = req.header("X-Terminal-Id", t);
        }
        if let Some(k) = idem {
            req = req.header("Idempotency-Key", k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub fn terminal(&self, i: usize) -> &str {
        &self.creds.terminals[i].id
    }

    /// Moves the demo license to the Free tier and returns a new API key of
    /// it (the demo key's cached exchange still carries the old tier).
    pub async fn free_tier_key(&self) -> String {
        let store = &self.stack.store;
        store
            .set_license_tier(&self.creds.license_id, tradeterm_store::Tier::Free)
            .await
            .unwrap();
        let (_, key) = store.create_api_key(&self.creds.license_id, "free").await.unwrap();
        key.expose().to_owned()
    }
}

/// An economic event as the calendar tools return it.
pub fn event_of(v: &Value) -> tradeterm_core::events::EconomicEvent {
    use tradeterm_core::events::Importance;
    let importance = match v["importance"].as_str().unwrap() {
        "low" => Importance::Low,
        "medium" => Importance::Medium,
        _ => Importance::High,
    };
    tradeterm_core::events::EconomicEvent {
        id: v["id"].as_str().unwrap().into(),
        time: tradeterm_core::time::parse_iso(v["time"].as_str().unwrap()).unwrap(),
        currency: v["currency"].as_str().unwrap().into(),
        country: v["country"].as_str().unwrap().into(),
        name: v["name"].as_str().unwrap().into(),
        importance,
        category: v["category"].as_str().unwrap().into(),
        actual: v["actual"].as_f64(),
        forecast: v["forecast"].as_f64(),
        previous: v["previous"].as_f64(),
    }
}
