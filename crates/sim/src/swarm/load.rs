//! An open-loop load generator for the capacity benchmark: `tick` requests
//! at a fixed rate, spread round-robin over the swarm's terminals, either
//! through the gateway's internal dispatch route (what a REST or MCP
//! instance in another process does, [`HttpDispatch`]) or through the REST
//! API (`GET /api/v1/market/tick/{symbol}` with an API key and
//! `X-Terminal-Id`). A third target, [`LoadTarget::Baseline`], asks a bare
//! route (`GET /healthz` of the REST API) with the same client and pacing:
//! the cost of an HTTP round trip on the machine, below which no path goes.
//!
//! Open loop: request `i` is sent at `start + i / rate` whether or not
//! earlier ones were answered, so a slow server meets the same offered load
//! as a fast one (no coordinated omission). Latency is measured from the
//! moment the request leaves the generator to the moment its whole answer
//! is read; how late the generator was against its schedule is reported
//! separately (tokio's timers have a 1 ms resolution, so at 1 000 requests/s
//! requests leave in small bursts).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tradeterm_protocol::Dispatch;
use tradeterm_protocol::agent::{Command, CommandResult};
use tradeterm_protocol::http_client::HttpDispatch;

use super::percentile;

/// Symbol of every quote asked for.
pub const LOAD_SYMBOL: &str = "EURUSD";

/// Where the requests go.
#[derive(Debug, Clone)]
pub enum LoadTarget {
    /// `POST /internal/v1/dispatch` of the gateway.
    Dispatch {
        /// The client (gateway base URL and internal token).
        client: HttpDispatch,
        /// License owning the terminals.
        license_id: String,
    },
    /// `GET {url}` of a route that reaches no terminal (the REST API's
    /// `/healthz`): the floor of an HTTP round trip.
    Baseline {
        /// Full URL.
        url: String,
        /// The HTTP client.
        http: reqwest::Client,
    },
    /// `GET /api/v1/market/tick/{symbol}` of the REST API.
    Rest {
        /// Base URL, `http://127.0.0.1:8080`.
        base: String,
        /// A REST API key of the terminals' license (a secret).
        api_key: String,
        /// The HTTP client.
        http: reqwest::Client,
    },
}

impl LoadTarget {
    /// The target's name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Dispatch { .. } => "dispatch",
            Self::Baseline { .. } => "baseline",
            Self::Rest { .. } => "rest",
        }
    }

    fn client() -> Result<reqwest::Client, String> {
        reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .build()
            .map_err(|e| e.to_string())
    }

    /// A REST target with a pooled client.
    pub fn rest(base: &str, api_key: &str) -> Result<Self, String> {
        Ok(Self::Rest {
            base: base.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
            http: Self::client()?,
        })
    }

    /// The baseline target: `GET {base}/healthz` with the same kind of client.
    pub fn baseline(base: &str) -> Result<Self, String> {
        Ok(Self::Baseline {
            url: format!("{}/healthz", base.trim_end_matches('/')),
            http: Self::client()?,
        })
    }

    /// One request; the error says why it failed.
    async fn call(&self, terminal: &str) -> Result<(), String> {
        match self {
            Self::Dispatch { client, license_id } => {
                let command = Command::Tick {
                    symbol: LOAD_SYMBOL.to_owned(),
                };
                match client
                    .execute(license_id, terminal, command, Duration::from_secs(10))
                    .await
                {
                    Ok(CommandResult::Tick(t)) if t.symbol == LOAD_SYMBOL => Ok(()),
                    Ok(other) => Err(format!("unexpected result {other:?}")),
                    Err(e) => Err(e.to_string()),
                }
            }
            Self::Baseline { url, http } => {
                let resp = http
                    .get(url)
                    .timeout(Duration::from_secs(12))
                    .send()
                    .await
                    .map_err(|e| format!("request failed: {e}"))?;
                read_answer(resp).await
            }
            Self::Rest { base, api_key, http } => {
                let resp = http
                    .get(format!("{base}/api/v1/market/tick/{LOAD_SYMBOL}"))
                    .bearer_auth(api_key)
                    .header("X-Terminal-Id", terminal)
                    .timeout(Duration::from_secs(12))
                    .send()
                    .await
                    .map_err(|e| format!("request failed: {e}"))?;
                read_answer(resp).await
            }
        }
    }
}

/// Reads a whole answer; an error unless its status is a success.
async fn read_answer(resp: reqwest::Response) -> Result<(), String> {
    let status = resp.status();
    let body = resp.bytes().await.map_err(|e| format!("reading the answer: {e}"))?;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&body).chars().take(200).collect::<String>()
        ))
    }
}

/// Outcome of one load phase.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// `dispatch` or `rest`.
    pub target: &'static str,
    /// Rate asked for, requests/s.
    pub rate: f64,
    /// Length of the measured phase, s.
    pub seconds: f64,
    /// Terminals the requests were spread over.
    pub terminals: usize,
    /// Requests sent.
    pub sent: u64,
    /// Requests answered successfully.
    pub ok: u64,
    /// Requests that failed.
    pub failed: u64,
    /// The first failure's message.
    pub first_error: Option<String>,
    /// Requests answered per second of the phase.
    pub achieved_rate: f64,
    /// Latency of successful requests, µs.
    pub p50_us: Option<u32>,
    /// 90th percentile, µs.
    pub p90_us: Option<u32>,
    /// 99th percentile, µs.
    pub p99_us: Option<u32>,
    /// Slowest, µs.
    pub max_us: Option<u32>,
    /// How late requests left against the schedule: 99th percentile, µs.
    pub lag_p99_us: Option<u32>,
}

/// Sends `rate` requests per second for `duration` to `target`, request `i`
/// to terminal `terminals[i % len]`, and waits for the answers.
///
/// # Errors
/// No terminal to send to, or a rate that is not a positive number.
pub async fn run_load(
    target: &LoadTarget,
    terminals: &[String],
    rate: f64,
    duration: Duration,
) -> Result<LoadReport, String> {
    if terminals.is_empty() {
        return Err("no terminal to send requests to".into());
    }
    if !(rate.is_finite() && rate > 0.0) {
        return Err("the rate must be a positive number".into());
    }
    let total = (rate * duration.as_secs_f64()).round() as u64;
    let target = Arc::new(target.clone());
    let terminals: Arc<[String]> = terminals.into();
    let start = tokio::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut lags = Vec::with_capacity(total as usize);
    for i in 0..total {
        let due = start + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(due).await;
        lags.push(due.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
        let target = target.clone();
        let terminals = terminals.clone();
        tasks.spawn(async move {
            let terminal = &terminals[(i % terminals.len() as u64) as usize];
            let sent = Instant::now();
            let outcome = target.call(terminal).await;
            (sent.elapsed(), outcome)
        });
    }
    let sending = start.elapsed();
    let mut latencies = Vec::with_capacity(total as usize);
    let (mut ok, mut failed, mut first_error) = (0u64, 0u64, None);
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((took, Ok(()))) => {
                ok += 1;
                latencies.push(took.as_micros().min(u128::from(u32::MAX)) as u32);
            }
            Ok((_, Err(e))) => {
                failed += 1;
                first_error.get_or_insert(e);
            }
            Err(e) => {
                failed += 1;
                first_error.get_or_insert(format!("request task failed: {e}"));
            }
        }
    }
    latencies.sort_unstable();
    lags.sort_unstable();
    let seconds = sending.as_secs_f64().max(duration.as_secs_f64());
    Ok(LoadReport {
        target: target.name(),
        rate,
        seconds: duration.as_secs_f64(),
        terminals: terminals.len(),
        sent: total,
        ok,
        failed,
        first_error,
        achieved_rate: ok as f64 / seconds,
        p50_us: percentile(&latencies, 50.0),
        p90_us: percentile(&latencies, 90.0),
        p99_us: percentile(&latencies, 99.0),
        max_us: latencies.last().copied(),
        lag_p99_us: percentile(&lags, 99.0),
    })
}
