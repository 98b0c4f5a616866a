//! `tradeterm-sim swarm` and `tradeterm-sim provision`: the process side of
//! the capacity benchmark (`cargo xtask bench scale`).
//!
//! `swarm` starts one light agent per key of the keys file
//! ([`tradeterm_sim::swarm`]), reports its progress on stdout as JSON lines
//! (`{"event":"progress",…}` every second, then `{"event":"ready",…}` once
//! every agent is welcomed or `--ramp-timeout` has passed), and then obeys
//! commands read from stdin, one per line:
//!
//! - `load dispatch RATE SECONDS` / `load rest RATE SECONDS`: one second of
//!   warm-up at RATE, then RATE `tick` requests per second for SECONDS
//!   through the gateway's internal dispatch route (`--dispatch-url`, token
//!   in `GATEWAY_INTERNAL_TOKEN`) or the REST API (`--api-url`, the keys
//!   file's API key), spread over every connected agent; prints
//!   `{"event":"load",…}` with the latency percentiles and the agents' own
//!   answer times over the same requests;
//! - `load baseline RATE SECONDS`: the same against the REST API's bare
//!   `GET /healthz` (no terminal): the floor of an HTTP round trip here;
//! - `status`: prints `{"event":"status",…}`;
//! - `quit` (or the end of stdin): closes every connection and exits.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tradeterm_protocol::http_client::HttpDispatch;
use tradeterm_sim::swarm::load::{LoadTarget, run_load};
use tradeterm_sim::swarm::provision::Provisioned;
use tradeterm_sim::swarm::{Swarm, SwarmKey, SwarmSettings, percentile, spawn_swarm};

/// Arguments of `tradeterm-sim swarm`.
#[derive(Debug, clap::Args)]
pub struct SwarmArgs {
    /// The gateway's WebSocket agent endpoint.
    #[arg(long, default_value = "ws://127.0.0.1:8081/agent/v1")]
    gateway: String,
    /// Keys file written by `tradeterm-sim provision`.
    #[arg(long)]
    keys_file: PathBuf,
    /// Use only the first N keys (default: all).
    #[arg(long)]
    agents: Option<usize>,
    /// Agents started per second.
    #[arg(long, default_value_t = 500.0)]
    connects_per_sec: f64,
    /// Longest wait for every agent to be welcomed, in seconds.
    #[arg(long, default_value_t = 300)]
    ramp_timeout: u64,
    /// Gateway base URL for `load dispatch` (`http://HOST:PORT`).
    #[arg(long)]
    dispatch_url: Option<String>,
    /// REST API base URL for `load rest` (`http://HOST:PORT`).
    #[arg(long)]
    api_url: Option<String>,
    /// Shared secret of the gateway's `/internal/v1/*` routes.
    #[arg(long, env = "GATEWAY_INTERNAL_TOKEN", hide_env_values = true)]
    internal_token: Option<String>,
}

/// Arguments of `tradeterm-sim provision`.
#[derive(Debug, clap::Args)]
pub struct ProvisionArgs {
    /// Gateway base URL (`http://HOST:PORT`).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    gateway_http: String,
    /// The license's master key.
    #[arg(long, env = "TRADETERM_MASTER_KEY", hide_env_values = true)]
    master_key: String,
    /// Terminals to create.
    #[arg(long)]
    count: usize,
    /// Name prefix of the terminals and the API key.
    #[arg(long, default_value = "swarm")]
    prefix: String,
    /// Where to write the keys (JSON, mode 0600).
    #[arg(long)]
    out: PathBuf,
}

fn emit(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

pub async fn provision(args: ProvisionArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let p = tradeterm_sim::swarm::provision::provision(&args.gateway_http, &args.master_key, args.count, &args.prefix)
        .await
        .map_err(anyhow::Error::msg)?;
    let json = serde_json::to_vec(&p)?;
    write_private(&args.out, &json).with_context(|| format!("writing {}", args.out.display()))?;
    emit(&json!({
        "event": "provisioned",
        "terminals": p.terminals.len(),
        "license_id": p.license_id,
        "ms": started.elapsed().as_millis() as u64,
    }));
    Ok(())
}

fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

pub async fn swarm(args: SwarmArgs) -> anyhow::Result<()> {
    let raw = std::fs::read(&args.keys_file).with_context(|| format!("reading {}", args.keys_file.display()))?;
    let provisioned: Provisioned = serde_json::from_slice(&raw).context("the keys file is not valid")?;
    let count = args.agents.unwrap_or(provisioned.terminals.len());
    if count == 0 || count > provisioned.terminals.len() {
        bail!(
            "--agents must be between 1 and the {} keys of the keys file",
            provisioned.terminals.len()
        );
    }
    let keys = provisioned
        .terminals
        .iter()
        .take(count)
        .enumerate()
        .map(|(i, t)| SwarmKey {
            terminal_key: t.key.clone(),
            uid: format!("swarm-{i}-{}", t.id),
        })
        .collect();
    let swarm = spawn_swarm(SwarmSettings {
        url: args.gateway.clone(),
        keys,
        connects_per_sec: args.connects_per_sec,
    });
    ramp(&swarm, Duration::from_secs(args.ramp_timeout)).await;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = tokio::signal::ctrl_c() => Ok(None),
        };
        let Ok(Some(line)) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["quit"] => break,
            ["status"] => emit(&status(&swarm, None)),
            ["load", target, rate, seconds] => match load(&args, &provisioned, &swarm, target, rate, seconds).await {
                Ok(v) => emit(&v),
                Err(e) => emit(&json!({ "event": "error", "message": format!("{e:#}") })),
            },
            [] => {}
            _ => emit(&json!({ "event": "error", "message": format!("unknown command `{line}`") })),
        }
    }
    swarm.shutdown().await;
    Ok(())
}

fn status(swarm: &Swarm, event: Option<&str>) -> serde_json::Value {
    let s = swarm.status();
    json!({
        "event": event.unwrap_or("status"),
        "agents": swarm.size(),
        "connected": s.connected,
        "welcomed": s.welcomed,
        "lost": s.lost,
        "failed": s.failed,
        "answered": s.answered,
    })
}

/// Reports progress every second until every agent is welcomed (or the
/// timeout), then `ready` with the ramp's duration.
async fn ramp(swarm: &Swarm, timeout: Duration) {
    let started = Instant::now();
    let mut every = tokio::time::interval(Duration::from_millis(50));
    let mut reported = Instant::now();
    loop {
        every.tick().await;
        let done = swarm.status().connected >= swarm.size();
        if done || started.elapsed() >= timeout {
            let mut v = status(swarm, Some("ready"));
            v["ramp_ms"] = json!(started.elapsed().as_millis() as u64);
            v["complete"] = json!(done);
            emit(&v);
            return;
        }
        if reported.elapsed() >= Duration::from_secs(1) {
            reported = Instant::now();
            let mut v = status(swarm, Some("progress"));
            v["elapsed_ms"] = json!(started.elapsed().as_millis() as u64);
            emit(&v);
        }
    }
}

async fn load(
    args: &SwarmArgs,
    provisioned: &Provisioned,
    swarm: &Swarm,
    target: &str,
    rate: &str,
    seconds: &str,
) -> anyhow::Result<serde_json::Value> {
    let rate: f64 = rate.parse().context("RATE is not a number")?;
    let seconds: f64 = seconds.parse().context("SECONDS is not a number")?;
    if !(seconds.is_finite() && seconds > 0.0) {
        bail!("SECONDS must be a positive number");
    }
    let target = match target {
        "dispatch" => {
            let url = args
                .dispatch_url
                .as_deref()
                .context("`load dispatch` needs --dispatch-url")?;
            let token = args
                .internal_token
                .as_deref()
                .context("`load dispatch` needs GATEWAY_INTERNAL_TOKEN")?;
            LoadTarget::Dispatch {
                client: HttpDispatch::new(url, token).map_err(|e| anyhow::anyhow!("{e}"))?,
                license_id: provisioned.license_id.clone(),
            }
        }
        "rest" => {
            let url = args.api_url.as_deref().context("`load rest` needs --api-url")?;
            LoadTarget::rest(url, &provisioned.api_key).map_err(anyhow::Error::msg)?
        }
        "baseline" => {
            let url = args.api_url.as_deref().context("`load baseline` needs --api-url")?;
            LoadTarget::baseline(url).map_err(anyhow::Error::msg)?
        }
        other => bail!("unknown target `{other}` (dispatch, rest or baseline)"),
    };
    let terminals = swarm.terminal_ids();
    // Warm-up: connections to the server, the REST key exchange.
    run_load(&target, &terminals, rate, Duration::from_secs(1))
        .await
        .map_err(anyhow::Error::msg)?;
    swarm.start_recording();
    let report = run_load(&target, &terminals, rate, Duration::from_secs_f64(seconds))
        .await
        .map_err(anyhow::Error::msg)?;
    let mut agent = swarm.take_recording();
    agent.sort_unstable();
    let mut v = serde_json::to_value(&report)?;
    v["event"] = json!("load");
    v["agent_samples"] = json!(agent.len());
    v["agent_p50_us"] = json!(percentile(&agent, 50.0));
    v["agent_p99_us"] = json!(percentile(&agent, 99.0));
    v["connected"] = json!(swarm.status().connected);
    Ok(v)
}
