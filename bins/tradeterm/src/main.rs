//! `tradeterm`: the all-in-one single node, the local analysis and backtest
//! commands, and the admin commands.

/// mimalloc: the request path allocates many small, short-lived objects
/// (headers, JSON values, futures); the system allocator cost about 9 % of the
/// REST API's CPU under load (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod backtest_cli;
mod chart;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tradeterm::Settings;
use tradeterm::stack::{Stack, StackOptions};
use tradeterm_store::Tier;

#[derive(Debug, Parser)]
#[command(
    name = "tradeterm",
    version,
    about = "Safe, fast API for MetaTrader-style trading terminals"
)]
struct Cli {
    /// Optional TOML configuration file (environment variables override it).
    #[arg(long, global = true, env = "TRADETERM_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the single-node stack: gateway and simulated terminals on SQLite.
    Serve {
        /// Directory for the database, keys and demo credentials.
        #[arg(long, default_value = ".tradeterm", env = "TRADETERM_DATA_DIR")]
        data_dir: PathBuf,
        /// Simulated terminals to run in process (default 2; 0 in production).
        #[arg(long)]
        sim_terminals: Option<usize>,
        /// Turn the simulated agents' allow-trading input on (default off, as on a real agent).
        #[arg(long)]
        sim_allow_trading: bool,
        /// Start the simulated clock at this ISO 8601 time (e.g. a weekday, to trade FX at weekends).
        #[arg(long)]
        sim_start: Option<String>,
    },
    /// Analytics on a local CSV bar file (`time,open,high,low,close,volume`, `Date,Open,…`
    /// exports or MetaTrader 5 history; docs/backtest-cli.md), printed as JSON.
    Analyze {
        #[command(subcommand)]
        command: AnalyzeCommand,
    },
    /// Backtest a strategy file (docs/backtest-dsl.md) on a local CSV file: summary table,
    /// `--json` document, `--chart` equity and drawdown chart (docs/backtest-cli.md).
    Backtest(backtest_cli::BacktestArgs),
    /// Administration of a real deployment (licenses, terminals, API keys).
    Admin {
        /// Directory of the SQLite database (ignored when DATABASE_URL is set).
        #[arg(long, default_value = ".tradeterm", env = "TRADETERM_DATA_DIR")]
        data_dir: PathBuf,
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Relay a local AI client's MCP (stdin/stdout) to a hosted `/mcp/v1`,
    /// as the `tradeterm-connect` binary does.
    Connect(tradeterm_mcp_connect::ConnectArgs),
    /// Print a server's live event stream (fills, positions, alerts, breaches,
    /// connections; docs/events.md), with filters and resume; reconnects after
    /// the last event printed. Exit 2 when the server refuses the request.
    Events(tradeterm::events_cli::EventsArgs),
    /// Terminal agents: the conformance kit (`agent check`).
    Agent {
        #[command(subcommand)]
        command: AgentCommand,
    },
}

#[derive(Debug, Subcommand)]
enum AgentCommand {
    /// Check that the agent of one terminal works: every read command against the
    /// protocol's invariants, with latencies; `--trading` adds a trade cycle on a demo
    /// account. Exit 0 when every check passes, 1 on a failure, 2 on usage or
    /// connection errors (docs/agents.md).
    Check(tradeterm::agent_check::CheckArgs),
}

#[derive(Debug, Subcommand)]
enum AnalyzeCommand {
    /// One indicator: one array per output, as long as the input, `null` during warm-up.
    Indicator {
        /// Indicator name or alias (sma, ema, rsi, macd, atr, bbands, stoch, sar, ...).
        name: String,
        /// CSV bar file (formats: docs/backtest-cli.md), times ascending.
        #[arg(long)]
        data: PathBuf,
        /// Parameter as `key=value` (repeatable), e.g. `--param period=14`.
        #[arg(long = "param", value_parser = parse_param)]
        params: Vec<(String, f64)>,
    },
    /// Market structure: swings, fair value gaps, order blocks, liquidity, BOS/CHoCH,
    /// each event with the bar at which it became known.
    Structure {
        /// CSV bar file (formats: docs/backtest-cli.md), times ascending.
        #[arg(long)]
        data: PathBuf,
        /// Swing window (bars on each side), default 50.
        #[arg(long)]
        swing_length: Option<usize>,
    },
}

fn parse_param(s: &str) -> Result<(String, f64), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("`{s}` is not key=value"))?;
    let v: f64 = v.trim().parse().map_err(|_| format!("`{v}` is not a number"))?;
    Ok((k.trim().to_owned(), v))
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Create a license and print its master key (shown once).
    CreateLicense {
        /// Display name.
        #[arg(long)]
        name: String,
        /// free, pro, team or enterprise.
        #[arg(long, default_value = "free")]
        tier: String,
    },
    /// List licenses.
    ListLicenses,
    /// Create a terminal for a license and print its terminal key (shown once).
    CreateTerminal {
        /// License id.
        #[arg(long)]
        license: String,
        /// Label.
        #[arg(long)]
        name: String,
        /// The terminal key's scope as JSON (docs/security.md, "Scoped keys"; no
        /// `terminals`), e.g. '{"symbols":["EURUSD"],"max_volume_per_order":0.1}'.
        #[arg(long)]
        scope: Option<String>,
    },
    /// Change the scope of an API key (`--api-key key_…`) or of a terminal's key
    /// (`--terminal term_…`) in place, keeping its secret; `--scope null` lifts it.
    /// Tokens of the old scope stop working at once (with KEYVALUE_URL, on every instance).
    SetKeyScope {
        /// License id.
        #[arg(long)]
        license: String,
        /// API key id (`key_…`).
        #[arg(long, conflicts_with = "terminal", required_unless_present = "terminal")]
        api_key: Option<String>,
        /// Terminal id (`term_…`): its active key.
        #[arg(long)]
        terminal: Option<String>,
        /// The new scope as JSON, or `null`.
        #[arg(long)]
        scope: String,
    },
    /// Revoke a terminal's key and print a new one (the binding is kept). Session
    /// tokens exchanged for the old key stop working at once, and an agent
    /// connected with it is disconnected within a minute.
    RotateTerminalKey {
        /// License id.
        #[arg(long)]
        license: String,
        /// Terminal id.
        #[arg(long)]
        terminal: String,
    },
    /// Create a REST API key and print it (shown once).
    CreateApiKey {
        /// License id.
        #[arg(long)]
        license: String,
        /// Label.
        #[arg(long, default_value = "API key")]
        label: String,
        /// The key's scope as JSON (docs/security.md, "Scoped keys"), e.g.
        /// '{"symbols":["EUR*"],"max_volume_per_order":0.1,"dry_run_only":true}'.
        #[arg(long)]
        scope: Option<String>,
    },
    /// List a license's API keys (never the secrets).
    ListApiKeys {
        /// License id.
        #[arg(long)]
        license: String,
    },
    /// Revoke an API key.
    RevokeApiKey {
        /// License id.
        #[arg(long)]
        license: String,
        /// Key id (`key_…`).
        #[arg(long)]
        id: String,
    },
    /// Check the trade audit log's hash chain (docs/audit.md) of one license, or of
    /// every license: one JSON line per license; exit 1 naming the first broken
    /// row (edited, deleted or moved).
    VerifyAudit {
        /// License id (default: every license).
        #[arg(long)]
        license: Option<String>,
    },
    /// Print a license's owner settings, or change them (as `PUT
    /// /api/dashboard/license-settings` and the dashboard's settings page do).
    LicenseSettings {
        /// License id.
        #[arg(long)]
        license: String,
        /// Whether live trades over MCP ask the user first (docs/mcp.md, "Trade
        /// confirmation"): `on` or `off`.
        #[arg(long, value_parser = parse_on_off)]
        mcp_trade_confirmation: Option<bool>,
    },
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("`{s}`: give on or off")),
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tradeterm::init_tracing();
    let cli = Cli::parse();
    let cli = match cli.command {
        Command::Agent {
            command: AgentCommand::Check(args),
        } => return std::process::ExitCode::from(tradeterm::agent_check::run(args).await),
        Command::Events(args) => {
            let result = tradeterm::events_cli::run(&args, &mut std::io::stdout()).await;
            if let Err(e) = &result {
                eprintln!("tradeterm events: {e:#}");
            }
            return std::process::ExitCode::from(tradeterm::events_cli::exit_code(&result));
        }
        Command::Connect(args) => {
            return match tradeterm_mcp_connect::run_stdio(args.settings()).await {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("tradeterm connect: {e}");
                    std::process::ExitCode::FAILURE
                }
            };
        }
        command => Cli { command, ..cli },
    };
    match run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // The local commands read only their files, not the configuration, so a
    // bad TRADETERM_CONFIG or environment cannot break them.
    let settings = || Settings::load(cli.config.as_deref());
    match cli.command {
        Command::Serve {
            data_dir,
            sim_terminals,
            sim_allow_trading,
            sim_start,
        } => {
            let sim_start_ms = sim_start
                .map(|s| tradeterm_core::time::parse_iso(&s).context("--sim-start must be an ISO 8601 time"))
                .transpose()?;
            let config = cli.config.clone();
            serve(
                settings()?,
                config,
                data_dir,
                sim_terminals,
                sim_allow_trading,
                sim_start_ms,
            )
            .await
        }
        Command::Admin { data_dir, command } => admin(settings()?, data_dir, command).await,
        Command::Analyze { command } => analyze(command),
        Command::Backtest(args) => backtest_cli::run(args),
        Command::Agent { .. } | Command::Connect(_) | Command::Events(_) => anyhow::bail!("handled in main"),
    }
}

async fn serve(
    settings: Settings,
    config: Option<PathBuf>,
    data_dir: PathBuf,
    sim_terminals: Option<usize>,
    sim_allow_trading: bool,
    sim_start_ms: Option<i64>,
) -> anyhow::Result<()> {
    let sim_terminals = sim_terminals.unwrap_or(if settings.production() { 0 } else { 2 });
    let notes = StartNotes {
        config,
        data_dir: data_dir.clone(),
        sim_terminals,
        tls_cert: settings
            .gateway_tls_cert
            .clone()
            .filter(|_| settings.gateway_tls_enabled()),
        database_url: settings.database_url.is_some(),
    };
    let stack = Stack::start(StackOptions {
        data_dir,
        sim_terminals,
        sim_allow_trading,
        sim_start_ms,
        settings,
    })
    .await?;
    tracing::info!(
        gateway = stack.gateway_port,
        rest = stack.rest_port,
        mcp = stack.mcp_port,
        tls = notes.tls_cert.is_some(),
        "listening"
    );
    // Poll Ctrl-C once so that its handler is installed before "Stop with
    // Ctrl-C." is printed: a signal sent right after the message stops us.
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    let early = std::future::poll_fn(|cx| std::task::Poll::Ready(ctrl_c.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(r) = early {
        r.context("waiting for Ctrl-C")?;
    } else {
        notes.print(&stack);
        tokio::select! {
            r = &mut ctrl_c => r.context("waiting for Ctrl-C")?,
            connected = stack.wait_connected(Duration::from_secs(10)) => {
                if !connected {
                    tracing::warn!("not every simulated terminal connected within 10 s; they keep retrying");
                }
                ctrl_c.await.context("waiting for Ctrl-C")?;
            }
        }
    }
    tracing::info!("shutting down");
    stack.stop().await;
    Ok(())
}

/// What `serve` prints once it listens.
struct StartNotes {
    config: Option<PathBuf>,
    data_dir: PathBuf,
    sim_terminals: usize,
    tls_cert: Option<PathBuf>,
    database_url: bool,
}

impl StartNotes {
    /// URLs, the license and its keys (only when just created: a restart
    /// points to the credentials file), and how to add a real terminal.
    #[allow(
        clippy::print_stdout,
        reason = "the license keys and the admin command are printed for the user on purpose"
    )]
    fn print(&self, stack: &Stack) {
        let Some(c) = &stack.credentials else {
            return;
        };
        let file = self.data_dir.join(tradeterm::demo::FILE_NAME);
        let urls = &stack.agent_urls;
        println!();
        println!("tradeterm is running ({} simulated terminals).", self.sim_terminals);
        println!(
            "  REST API     {}/api/v1   (docs: {}/api/v1/docs)",
            c.rest_url, c.rest_url
        );
        println!("  gateway      {}   (agents: {})", c.gateway_url, urls.websocket);
        println!(
            "  dashboard    {}/dashboard   (sign in with the license key)",
            c.gateway_url
        );
        println!(
            "  MCP          {}   (Bearer: a terminal key; stdio clients: tradeterm-connect)",
            c.mcp_url
        );
        println!("  license id   {}", c.license_id);
        if stack.credentials_created {
            println!("  license key  {}   (master key: the dashboard)", c.license_key);
            println!("  REST API key {}", c.api_key);
            for t in &c.terminals {
                println!("  terminal     {}  key {}", t.id, t.key);
            }
            println!("  saved to {} (mode 0600)", file.display());
        } else {
            for t in &c.terminals {
                println!("  terminal     {}", t.id);
            }
            println!("  keys: reused, in {} (mode 0600)", file.display());
        }
        println!();
        println!("Add a real terminal (shows its key once):");
        println!(
            "  {}",
            create_terminal_command(self.config.as_deref(), &self.data_dir, &c.license_id)
        );
        if self.database_url {
            println!("  (in a shell with the same DATABASE_URL)");
        }
        println!(
            "  then point its agent at {} (MT5, Python) or {} (MT4 long-poll)",
            urls.websocket, urls.poll
        );
        if let Some(cert) = &self.tls_cert {
            println!(
                "  agents must trust the certificate of GATEWAY_TLS_CERT ({}); tradeterm-sim: --ca-file",
                cert.display()
            );
        }
        if let Some(t) = c.terminals.first().filter(|_| stack.credentials_created) {
            println!();
            println!(
                "Try: curl -s {}/api/v1/market/tick/EURUSD -H \"Authorization: Bearer {}\" -H \"X-Terminal-Id: {}\"",
                c.rest_url, c.api_key, t.id
            );
        }
        println!("Stop with Ctrl-C.");
    }
}

/// The `tradeterm admin … create-terminal` command line for this data dir and license.
fn create_terminal_command(config: Option<&std::path::Path>, data_dir: &std::path::Path, license: &str) -> String {
    let quote = |p: &std::path::Path| {
        let p = std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
        let s = p.display().to_string();
        if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c)) {
            s
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    let config = config.map(|c| format!(" --config {}", quote(c))).unwrap_or_default();
    format!(
        "tradeterm{config} admin --data-dir {} create-terminal --license {license} --name my-terminal",
        quote(data_dir)
    )
}

#[allow(clippy::print_stdout, reason = "the analysis is printed as JSON on stdout")]
fn analyze(command: AnalyzeCommand) -> anyhow::Result<()> {
    use std::io::Write;
    let read = backtest_cli::read_bars;
    let value = match command {
        AnalyzeCommand::Indicator { name, data, params } => {
            let bars = read(&data)?;
            let params = params.into_iter().collect();
            let out = tradeterm_core::indicators::compute(&name, &params, &bars)?;
            let mut series = serde_json::Map::new();
            for s in out.series {
                series.insert(s.name, serde_json::json!(s.values));
            }
            serde_json::json!({
                "indicator": out.indicator,
                "params": out.params,
                "bars": bars.len(),
                "time": bars.iter().map(|b| tradeterm_core::time::to_iso(b.time)).collect::<Vec<_>>(),
                "series": series,
            })
        }
        AnalyzeCommand::Structure { data, swing_length } => {
            let bars = read(&data)?;
            let mut config = tradeterm_core::structure::StructureConfig::default();
            if let Some(n) = swing_length {
                config.swing_length = n;
            }
            let events = tradeterm_core::structure::detect(&bars, &config)?;
            let time = |i: usize| bars.get(i).map(|b| tradeterm_core::time::to_iso(b.time));
            let events: Vec<_> = events
                .iter()
                .map(|e| {
                    let mut v = serde_json::to_value(e).unwrap_or_default();
                    v["time"] = serde_json::json!(time(e.index()));
                    v["confirmed_time"] = serde_json::json!(time(e.confirmed_at()));
                    v
                })
                .collect();
            serde_json::json!({ "bars": bars.len(), "config": config, "events": events })
        }
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &value)?;
    writeln!(out)?;
    Ok(())
}

#[allow(clippy::print_stdout, reason = "admin commands print their results")]
async fn admin(settings: Settings, data_dir: PathBuf, command: AdminCommand) -> anyhow::Result<()> {
    let store = tradeterm::boot::open_store(&settings, &data_dir).await?;
    match command {
        AdminCommand::CreateLicense { name, tier } => {
            let tier = Tier::parse(&tier).context("tier must be free, pro, team or enterprise")?;
            let (license, key) = store.create_license(&name, tier).await?;
            println!(
                "{}",
                serde_json::json!({ "license": license, "license_key": key.expose() })
            );
        }
        AdminCommand::ListLicenses => {
            println!("{}", serde_json::to_string_pretty(&store.list_licenses().await?)?);
        }
        AdminCommand::CreateTerminal { license, name, scope } => {
            let Some(lic) = store.license(&license).await? else {
                anyhow::bail!("no license {license}");
            };
            let permissions = match scope {
                Some(text) => parse_scope(&text, &lic, true)?,
                None => None,
            };
            let (terminal, key) = store.create_scoped_terminal(&license, &name, permissions).await?;
            // Where its agent connects (a bad TLS setting only loses the certificate's host name here).
            let tls = tradeterm::gateway_tls(&settings).ok().flatten();
            // With TLS, the name the certificate is valid for.
            let host = settings.local_host();
            let host = tls
                .as_ref()
                .and_then(|t| t.loopback_name(host).ok())
                .unwrap_or_else(|| host.to_owned());
            let urls = settings.agent_urls(&host, settings.gateway_port);
            println!(
                "{}",
                serde_json::json!({
                    "terminal": terminal,
                    "terminal_key": key.expose(),
                    "agent": { "websocket": urls.websocket, "poll": urls.poll, "gateway": urls.base },
                })
            );
        }
        AdminCommand::RotateTerminalKey { license, terminal } => {
            let rotated = store.rotate_terminal_key(&license, &terminal).await?;
            if let Some(pool) = settings.keyvalue_pool()? {
                // Session tokens exchanged for the old key carry its id: every
                // REST instance refuses them from now on (a connected agent
                // using the old key is dropped by its gateway within a minute).
                for (id, generation) in rotated.revoked_key_ids.iter().zip(&rotated.revoked_generations) {
                    for name in [
                        id.clone(),
                        tradeterm_core::scope::credential_mark(id, *generation).into_owned(),
                    ] {
                        tradeterm_tools::ratelimit::mark_revoked(&pool, &name)
                            .await
                            .map_err(|e| {
                                anyhow::anyhow!("rotated in the database, but publishing to KEYVALUE_URL failed: {e}")
                            })?;
                    }
                }
            }
            println!(
                "{}",
                serde_json::json!({
                    "terminal_id": terminal,
                    "terminal_key": rotated.key.expose(),
                    "revoked_key_ids": rotated.revoked_key_ids,
                })
            );
        }
        AdminCommand::CreateApiKey { license, label, scope } => {
            let Some(lic) = store.license(&license).await? else {
                anyhow::bail!("no license {license}");
            };
            let permissions = match scope {
                Some(text) => parse_scope(&text, &lic, false)?,
                None => None,
            };
            let (key, secret) = store.create_scoped_api_key(&license, &label, permissions).await?;
            println!("{}", serde_json::json!({ "key": key, "api_key": secret.expose() }));
        }
        AdminCommand::ListApiKeys { license } => {
            println!(
                "{}",
                serde_json::to_string_pretty(&store.list_api_keys(&license).await?)?
            );
        }
        AdminCommand::SetKeyScope {
            license,
            api_key,
            terminal,
            scope,
        } => {
            let Some(lic) = store.license(&license).await? else {
                anyhow::bail!("no license {license}");
            };
            let (id, generation, record) = match (&api_key, &terminal) {
                (Some(id), _) => {
                    let permissions = parse_scope(&scope, &lic, false)?;
                    let Some(key) = store.set_api_key_scope(&license, id, permissions).await? else {
                        anyhow::bail!("no active API key {id} on license {license}");
                    };
                    (key.id.clone(), key.scope_generation, serde_json::to_value(&key)?)
                }
                (None, Some(t)) => {
                    let permissions = parse_scope(&scope, &lic, true)?;
                    let Some(key) = store.set_terminal_key_scope(&license, t, permissions).await? else {
                        anyhow::bail!("no terminal {t} with an active key on license {license}");
                    };
                    (key.id.clone(), key.scope_generation, serde_json::to_value(&key)?)
                }
                (None, None) => anyhow::bail!("give --api-key or --terminal"),
            };
            if let Some(pool) = settings.keyvalue_pool()? {
                // The tokens of the previous scope count as revoked on every instance.
                let previous = tradeterm_core::scope::credential_mark(&id, generation.saturating_sub(1));
                tradeterm_tools::ratelimit::mark_revoked(&pool, &previous)
                    .await
                    .map_err(|e| {
                        anyhow::anyhow!("changed in the database, but publishing to KEYVALUE_URL failed: {e}")
                    })?;
            }
            println!("{}", serde_json::json!({ "key": record }));
        }
        AdminCommand::RevokeApiKey { license, id } => {
            let generation = store.api_key_generation(&id).await?.unwrap_or(0);
            anyhow::ensure!(
                store.revoke_api_key(&license, &id).await?,
                "no active API key {id} on license {license}"
            );
            if let Some(pool) = settings.keyvalue_pool()? {
                // Tell every REST instance at once (they check this marker with each request).
                for name in [
                    id.clone(),
                    tradeterm_core::scope::credential_mark(&id, generation).into_owned(),
                ] {
                    tradeterm_tools::ratelimit::mark_revoked(&pool, &name)
                        .await
                        .map_err(|e| {
                            anyhow::anyhow!("revoked in the database, but publishing to KEYVALUE_URL failed: {e}")
                        })?;
                }
            }
            println!("{}", serde_json::json!({ "id": id, "revoked": true }));
        }
        AdminCommand::VerifyAudit { license } => {
            tradeterm::audit_cli::verify_audit(&*store, license.as_deref(), &mut std::io::stdout().lock()).await?;
        }
        AdminCommand::LicenseSettings {
            license,
            mcp_trade_confirmation,
        } => {
            anyhow::ensure!(store.license(&license).await?.is_some(), "no license {license}");
            let mut current = store.license_settings(&license).await?;
            if let Some(on) = mcp_trade_confirmation {
                current.mcp_trade_confirmation = on;
                store.set_license_settings(&license, &current).await?;
            }
            println!("{}", serde_json::json!({ "license": license, "settings": current }));
        }
    }
    Ok(())
}

/// A `--scope` JSON as stored (`null` lifts a scope), validated for the
/// license's tier; a terminal key's names no `terminals`.
fn parse_scope(
    text: &str,
    license: &tradeterm_store::License,
    terminal_key: bool,
) -> anyhow::Result<Option<serde_json::Value>> {
    let scope: Option<tradeterm_core::scope::KeyScope> =
        serde_json::from_str(text).map_err(|e| anyhow::anyhow!("--scope: {e}"))?;
    let Some(scope) = scope else { return Ok(None) };
    let now = chrono::Utc::now().timestamp_millis();
    let caps = license.tier.capabilities();
    let stored = if terminal_key {
        scope.for_terminal_key(caps, now)
    } else {
        scope.for_new_key(caps, now)
    };
    stored.map_err(|m| anyhow::anyhow!("--scope: {m}"))
}
