//! `tradeterm agent check`: the agent conformance kit.
//!
//! It tells a user whether the agent of one terminal works, by talking to a
//! running stack as any client would, in one of two modes:
//!
//! - **gateway** (`--gateway-url` + `--master-key`): raw protocol commands
//!   through the gateway's `POST /api/dashboard/terminals/{id}/command`. The
//!   agent's answers arrive as it sent them: this is the precise mode.
//! - **REST** (`--rest-url` + `--api-key`): through the REST API's tools
//!   (`POST /api/v1/tools/{name}`); answers are converted back to the
//!   protocol's types (ISO times → unix ms). Some checks cannot be made
//!   there (see [`REST_LIMITS`]).
//!
//! Every read command of the protocol is dispatched `--calls` times and each
//! answer is checked against the protocol's types and invariants
//! (docs/agent-protocol.md); `--trading` then runs a full trade cycle on a
//! demo account and closes whatever it opened, even when a step fails.
//!
//! Exit codes: 0 every check passed, 1 a check failed (or `--trading` was
//! refused), 2 usage or connection errors.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use serde_json::json;
use tradeterm_core::account::{DealEntry, OrderType};
use tradeterm_core::time::{DAY_MS, UnixMs, to_iso};
use tradeterm_core::{AccountInfo, Bar, Position, SymbolSpec, Tick, Timeframe, TradeMode};
use tradeterm_protocol::agent::{OrderRequest, Platform, codes};
use tradeterm_protocol::{Command, CommandResult};

/// What REST mode cannot check, said in the report and the docs.
pub const REST_LIMITS: &str = "REST mode cannot check: `ticks` (REST has no tick-history route; only that get_order_flow, which reads ticks, answers), \
order_check's own answer (REST validates first and reports only valid/rejected), \
the agent's idempotency (the REST server replays a repeated Idempotency-Key from its own record), \
and bars beyond 10 000 or range-limited history (REST caps them)";

/// Start of plausible times: 2000-01-01 UTC, unix ms.
const TIME_FLOOR_MS: UnixMs = 946_684_800_000;
/// Magic number of the orders the kit places.
const KIT_MAGIC: u64 = 7_401_001;
/// Per-command timeout asked of the gateway.
const COMMAND_TIMEOUT_MS: u64 = 30_000;
/// Symbol that no terminal has.
const UNKNOWN_SYMBOL: &str = "TTNOSUCHSYMBOL9";

/// Arguments of `tradeterm agent check`.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["gateway_url", "rest_url"])))]
pub struct CheckArgs {
    /// Gateway base URL (`http(s)://HOST:PORT`): raw protocol commands through the
    /// master-key command route (the precise mode). Needs `--master-key`.
    #[arg(long, requires = "master_key")]
    pub gateway_url: Option<String>,
    /// The license's master key (`tt_lic_…`) for `--gateway-url`.
    #[arg(long, env = "TRADETERM_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<String>,
    /// REST API base URL (`http(s)://HOST:PORT`): the checks go through the REST
    /// API's tools. Needs `--api-key`.
    #[arg(long, requires = "api_key", conflicts_with = "gateway_url")]
    pub rest_url: Option<String>,
    /// A REST API key (`svc_api_…`) for `--rest-url`.
    #[arg(long, env = "TRADETERM_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// The terminal to check (`term_…`).
    #[arg(long)]
    pub terminal: String,
    /// Also run the trade cycle (demo accounts only): open, idempotent re-send,
    /// modify, partial close, reverse, close, pending order and cancel.
    #[arg(long)]
    pub trading: bool,
    /// Print one JSON report on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The symbol to test with.
    #[arg(long, default_value = "EURUSD")]
    pub symbol: String,
    /// PEM file of a CA to trust for `https://` (a self-signed gateway).
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    /// Calls per read command for the latency figures (p50, p99).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub calls: u32,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct CheckOutcome {
    /// What was checked.
    pub name: String,
    /// The protocol command it exercises.
    pub command: String,
    /// Whether it passed.
    pub pass: bool,
    /// Why it failed, or a note when it passed.
    pub why: String,
    /// Median latency of the calls, ms (client side, round trip).
    pub p50_ms: Option<f64>,
    /// 99th percentile latency, ms.
    pub p99_ms: Option<f64>,
    /// The check could not be made in this mode (it passes, `why` says why).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// The whole report (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Every check passed.
    pub ok: bool,
    /// The terminal checked.
    pub terminal: String,
    /// MT5 or MT4.
    pub platform: Option<Platform>,
    /// As the account reports it.
    pub trade_mode: Option<TradeMode>,
    /// `gateway` or `rest`.
    pub mode: &'static str,
    /// The checks, in the order they ran.
    pub checks: Vec<CheckOutcome>,
}

impl Report {
    /// The commands with at least one failed check, in order, without repeats.
    pub fn failed_commands(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.checks.iter().filter(|c| !c.pass) {
            if !out.contains(&c.command) {
                out.push(c.command.clone());
            }
        }
        out
    }
}

/// A command's failure as the kit sees it: the agent's error (code, message,
/// retcode) or a transport/gateway problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Agent code (`INVALID_ARGUMENT`, `NOT_FOUND`, …) or the gateway's
    /// (`TERMINAL_UNREACHABLE`, `TERMINAL_TIMEOUT`, `HTTP`, …).
    pub code: String,
    /// Explanation.
    pub message: String,
    /// Trade return code of a rejection.
    pub retcode: Option<String>,
}

impl Failure {
    fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
            retcode: None,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(r) = &self.retcode {
            write!(f, " (retcode {r})")?;
        }
        Ok(())
    }
}

/// A setup problem: bad URL, bad key, terminal unknown or offline (exit 2).
#[derive(Debug)]
pub struct SetupError(String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// Runs the kit and prints its outcome; returns the process exit code
/// (0 pass, 1 a failure, 2 usage/connection error).
#[allow(clippy::print_stdout, reason = "the report is the command's output")]
pub async fn run(args: CheckArgs) -> u8 {
    match check(&args).await {
        Ok(report) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
            } else {
                print!("{}", render_table(&report, &args));
            }
            let failed = report.failed_commands();
            if failed.is_empty() {
                0
            } else {
                eprintln!("agent check FAILED: {}", failed.join(", "));
                1
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// Runs every check and returns the report (no printing).
pub async fn check(args: &CheckArgs) -> Result<Report, SetupError> {
    let backend = Backend::new(args)?;
    let status = backend.terminal_status(&args.terminal).await?;
    if !status.connected {
        return Err(SetupError(format!(
            "terminal {} is not connected (no agent is online for it)",
            args.terminal
        )));
    }
    let mut kit = Kit {
        backend,
        args: args.clone(),
        platform: status.platform,
        report: Vec::new(),
        wall_now: now_ms(),
        ref_time: now_ms(),
        spec: None,
        trade_mode: status.trade_mode,
    };
    kit.run_all().await;
    let ok = kit.report.iter().all(|c| c.pass);
    Ok(Report {
        ok,
        terminal: args.terminal.clone(),
        platform: kit.platform,
        trade_mode: kit.trade_mode,
        mode: kit.backend.mode_name(),
        checks: kit.report,
    })
}

fn now_ms() -> UnixMs {
    chrono::Utc::now().timestamp_millis()
}

mod backend;

use backend::Backend;

// ---------------------------------------------------------------------------
// The checks.

struct Kit {
    backend: Backend,
    args: CheckArgs,
    platform: Option<Platform>,
    trade_mode: Option<TradeMode>,
    report: Vec<CheckOutcome>,
    /// The kit's clock at the start.
    wall_now: UnixMs,
    /// The terminal's "now": the latest of its quote time and the kit's clock.
    ref_time: UnixMs,
    spec: Option<SymbolSpec>,
}

/// Ok(note) or Err(why it failed).
type Verdict = Result<String, String>;

/// Percentile by nearest rank of sorted samples.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    let i = rank.clamp(1, sorted.len()) - 1;
    Some((sorted[i] * 100.0).round() / 100.0)
}

fn wrong_kind(expected: &str, got: &CommandResult) -> String {
    let kind = serde_json::to_value(got)
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_owned))
        .unwrap_or_default();
    format!("answered a `{kind}` result, expected `{expected}`")
}

/// Finite and > 0 (NaN is not).
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// `t` in `[from, to)`.
fn within(t: UnixMs, from: UnixMs, to: UnixMs) -> bool {
    t >= from && t < to
}

fn approx(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

impl Kit {
    fn push(&mut self, name: &str, command: &str, verdict: Verdict, latencies: Option<&[f64]>) {
        let (p50, p99) = match latencies {
            Some(l) => {
                let mut s = l.to_vec();
                s.sort_by(f64::total_cmp);
                (percentile(&s, 50.0), percentile(&s, 99.0))
            }
            None => (None, None),
        };
        let (pass, why) = match verdict {
            Ok(note) => (true, note),
            Err(why) => (false, why),
        };
        self.report.push(CheckOutcome {
            name: name.to_owned(),
            command: command.to_owned(),
            pass,
            why,
            p50_ms: p50,
            p99_ms: p99,
            skipped: false,
        });
    }

    fn skip(&mut self, name: &str, command: &str, why: &str) {
        self.report.push(CheckOutcome {
            name: name.to_owned(),
            command: command.to_owned(),
            pass: true,
            why: why.to_owned(),
            p50_ms: None,
            p99_ms: None,
            skipped: true,
        });
    }

    async fn call(&self, command: &Command) -> Result<CommandResult, Failure> {
        self.backend.call(command).await
    }

    /// Runs `command` `--calls` times; returns the latencies and every answer.
    async fn sample(&self, command: &Command) -> (Vec<f64>, Vec<Result<CommandResult, Failure>>) {
        let mut lat = Vec::new();
        let mut out = Vec::new();
        for _ in 0..self.args.calls {
            let t = Instant::now();
            let r = self.call(command).await;
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
            out.push(r);
        }
        (lat, out)
    }

    /// Samples `command` and checks every answer with `check`; the first
    /// answer's value (when it passed) is returned for later checks.
    async fn sampled<T>(
        &mut self,
        name: &str,
        command: Command,
        check: impl Fn(&Self, CommandResult) -> Result<(T, String), String>,
    ) -> Option<T> {
        let (lat, results) = self.sample(&command).await;
        let mut first = None;
        let mut verdict: Verdict = Ok(String::new());
        for (i, r) in results.into_iter().enumerate() {
            let one = match r {
                Ok(r) => check(self, r),
                Err(f) => Err(format!("failed: {f}")),
            };
            match one {
                Ok((v, note)) => {
                    if i == 0 {
                        first = Some(v);
                        verdict = Ok(note);
                    }
                }
                Err(why) => {
                    let prefix = if i == 0 {
                        String::new()
                    } else {
                        format!("call {}: ", i + 1)
                    };
                    verdict = Err(format!("{prefix}{why}"));
                    first = None;
                    break;
                }
            }
        }
        self.push(name, command.name(), verdict, Some(&lat));
        first
    }

    fn plausible(&self, what: &str, t: UnixMs) -> Result<(), String> {
        if t < TIME_FLOOR_MS {
            let hint = if (TIME_FLOOR_MS / 1000..self.wall_now / 1000 + DAY_MS / 1000).contains(&t) {
                " (looks like unix seconds: times are unix milliseconds)"
            } else {
                ""
            };
            return Err(format!("{what} {t} is before 2000-01-01{hint}"));
        }
        if t > self.wall_now + DAY_MS {
            return Err(format!("{what} {t} ({}) is more than a day in the future", to_iso(t)));
        }
        Ok(())
    }

    fn history_range(&self) -> (UnixMs, UnixMs) {
        let lo = self.ref_time.min(self.wall_now);
        let hi = self.ref_time.max(self.wall_now);
        (lo - 30 * DAY_MS, hi + DAY_MS)
    }

    async fn run_all(&mut self) {
        let symbol = self.args.symbol.clone();
        // account_info first: --trading is refused unless the account is a demo.
        let account = self
            .sampled("account_info", Command::AccountInfo, |k, r| k.check_account_fields(r))
            .await;
        if let Some(a) = &account {
            self.trade_mode = Some(a.trade_mode);
        }
        if self.args.trading {
            match &account {
                Some(a) if a.trade_mode == TradeMode::Demo => {}
                Some(a) => {
                    let why = format!(
                        "--trading refused: the account reports trade_mode `{}`; the trade cycle runs only on `demo` accounts",
                        a.trade_mode.as_str()
                    );
                    eprintln!("{why}");
                    self.push("trading", "trading", Err(why), None);
                    return;
                }
                None => {
                    let why = "--trading refused: account_info failed, so the account cannot be confirmed to be a demo"
                        .to_owned();
                    eprintln!("{why}");
                    self.push("trading", "trading", Err(why), None);
                    return;
                }
            }
        }
        let tick = self
            .sampled("tick", Command::Tick { symbol: symbol.clone() }, |k, r| k.check_tick(r))
            .await;
        if let Some(t) = &tick {
            self.ref_time = t.time;
        }
        let positions = self
            .sampled("positions", Command::Positions { symbol: None }, |k, r| {
                k.check_positions(r, None)
            })
            .await;
        self.sampled(
            "positions (symbol filter)",
            Command::Positions {
                symbol: Some(symbol.clone()),
            },
            |k, r| k.check_positions(r, Some(&symbol)),
        )
        .await;
        if let (Some(a), Some(p)) = (&account, &positions) {
            let v = check_margin_level(a, p);
            self.push("account margin_level", "account_info", v, None);
        }
        self.sampled("orders", Command::Orders { symbol: None }, |k, r| k.check_orders(r))
            .await;
        self.check_symbols_and_specs().await;
        self.check_bars().await;
        self.check_ticks(tick.as_ref()).await;
        self.check_history().await;
        self.check_order_check().await;
        self.check_calendar().await;
        self.check_unknown_symbol().await;
        if self.args.trading {
            crate::agent_check::trading::run(self).await;
        }
    }

    // --- account, positions, orders -------------------------------------

    fn check_account_fields(&self, r: CommandResult) -> Result<(AccountInfo, String), String> {
        let CommandResult::AccountInfo(a) = r else {
            return Err(wrong_kind("account_info", &r));
        };
        if a.login == 0 {
            return Err("login is 0".into());
        }
        if a.currency.len() != 3 || !a.currency.chars().all(|c| c.is_ascii_uppercase()) {
            return Err(format!("currency `{}` is not a 3-letter ISO code", a.currency));
        }
        if a.leverage == 0 {
            return Err("leverage is 0".into());
        }
        for (name, v) in [
            ("balance", a.balance),
            ("equity", a.equity),
            ("margin", a.margin),
            ("free_margin", a.free_margin),
            ("profit", a.profit),
        ] {
            if !v.is_finite() {
                return Err(format!("{name} is not a finite number"));
            }
        }
        if a.margin < 0.0 {
            return Err(format!("margin {} is negative", a.margin));
        }
        let tol = 0.01 + a.equity.abs() * 1e-6;
        if !approx(a.free_margin, a.equity - a.margin, tol) {
            return Err(format!(
                "free_margin {} is not equity {} - margin {}",
                a.free_margin, a.equity, a.margin
            ));
        }
        let note = format!("trade_mode {}, {} {}", a.trade_mode.as_str(), a.balance, a.currency);
        Ok((a, note))
    }

    fn check_tick(&self, r: CommandResult) -> Result<(Tick, String), String> {
        let CommandResult::Tick(t) = r else {
            return Err(wrong_kind("tick", &r));
        };
        if t.symbol != self.args.symbol {
            return Err(format!("symbol `{}` instead of `{}`", t.symbol, self.args.symbol));
        }
        check_quote(&t)?;
        self.plausible("time", t.time)?;
        let note = format!("bid {} ask {} at {}", t.bid, t.ask, to_iso(t.time));
        Ok((t, note))
    }

    fn check_positions(&self, r: CommandResult, symbol: Option<&str>) -> Result<(Vec<Position>, String), String> {
        let CommandResult::Positions { positions } = r else {
            return Err(wrong_kind("positions", &r));
        };
        let mut tickets = BTreeSet::new();
        for p in &positions {
            let id = format!("position {}", p.ticket);
            if !tickets.insert(p.ticket) {
                return Err(format!("{id} is listed twice"));
            }
            if let Some(s) = symbol
                && p.symbol != s
            {
                return Err(format!("{id} of {} returned for the filter symbol {s}", p.symbol));
            }
            if !(p.volume > 0.0 && p.volume.is_finite()) {
                return Err(format!("{id}: volume {} is not > 0", p.volume));
            }
            if !positive(p.open_price) || !positive(p.current_price) {
                return Err(format!("{id}: open_price/current_price not > 0"));
            }
            self.plausible(&format!("{id} open_time"), p.open_time)?;
            if p.symbol.is_empty() {
                return Err(format!("{id}: empty symbol"));
            }
            for (name, v) in [("stop_loss", p.stop_loss), ("take_profit", p.take_profit)] {
                if v.is_some_and(|x| !positive(x)) {
                    return Err(format!("{id}: {name} must be null or > 0 (0 means none: send null)"));
                }
            }
        }
        let note = format!("{} open", positions.len());
        Ok((positions, note))
    }

    fn check_orders(&self, r: CommandResult) -> Result<((), String), String> {
        let CommandResult::Orders { orders } = r else {
            return Err(wrong_kind("orders", &r));
        };
        for o in &orders {
            let id = format!("order {}", o.ticket);
            if o.order_type.is_market() {
                return Err(format!(
                    "{id} is a market type ({:?}) among pending orders",
                    o.order_type
                ));
            }
            if !positive(o.volume) || !positive(o.price) {
                return Err(format!("{id}: volume and price must be > 0"));
            }
            self.plausible(&format!("{id} time_setup"), o.time_setup)?;
        }
        Ok(((), format!("{} pending", orders.len())))
    }

    // --- symbols and specifications -------------------------------------

    async fn check_symbols_and_specs(&mut self) {
        let symbol = self.args.symbol.clone();
        let symbols = self
            .sampled("symbols", Command::Symbols, |k, r| {
                let CommandResult::Symbols { symbols } = r else {
                    return Err(wrong_kind("symbols", &r));
                };
                if symbols.is_empty() {
                    return Err("no symbols".into());
                }
                let unique: BTreeSet<&String> = symbols.iter().collect();
                if unique.len() != symbols.len() {
                    return Err("a symbol is listed twice".into());
                }
                if symbols.iter().any(|s| s.trim().is_empty()) {
                    return Err("an empty symbol name".into());
                }
                if !symbols.contains(&k.args.symbol) {
                    return Err(format!(
                        "the test symbol {} is not listed (choose one with --symbol)",
                        k.args.symbol
                    ));
                }
                let n = symbols.len();
                Ok((symbols, format!("{n} symbols")))
            })
            .await
            .unwrap_or_default();
        let mut to_check = vec![symbol.clone()];
        to_check.extend(symbols.iter().filter(|s| **s != symbol).take(2).cloned());
        for s in to_check {
            let spec = self
                .sampled(
                    &format!("symbol_spec {s}"),
                    Command::SymbolSpec { symbol: s.clone() },
                    |_, r| check_spec(r, &s),
                )
                .await;
            if s == symbol {
                self.spec = spec;
            }
        }
    }

    // --- bars -------------------------------------------------------------

    async fn check_bars(&mut self) {
        let symbol = self.args.symbol.clone();
        for tf in [Timeframe::M1, Timeframe::H1, Timeframe::D1] {
            let count = 50u32;
            let bars = self
                .sampled(
                    &format!("bars {tf} count {count}"),
                    Command::Bars {
                        symbol: symbol.clone(),
                        timeframe: tf,
                        count: Some(count),
                        from: None,
                        to: None,
                    },
                    |k, r| k.check_bar_list(r, &symbol, tf, Some(count), None),
                )
                .await;
            let Some(bars) = bars else { continue };
            if bars.len() < 12 {
                self.push(
                    &format!("bars {tf} range"),
                    "bars",
                    Err(format!("only {} bars to build a range from", bars.len())),
                    None,
                );
                continue;
            }
            // [from, to) between two known bars: exactly the bars in between.
            let (from, to) = (bars[bars.len() - 12].time, bars[bars.len() - 2].time);
            let expected: Vec<UnixMs> = bars.iter().map(|b| b.time).filter(|t| *t >= from && *t < to).collect();
            self.sampled(
                &format!("bars {tf} range"),
                Command::Bars {
                    symbol: symbol.clone(),
                    timeframe: tf,
                    count: None,
                    from: Some(from),
                    to: Some(to),
                },
                |k, r| {
                    let (got, note) = k.check_bar_list(r, &symbol, tf, None, Some((from, to)))?;
                    let times: Vec<UnixMs> = got.iter().map(|b| b.time).collect();
                    if times != expected {
                        return Err(format!(
                            "range [{}, {}) gave {} bars, the count query had {} bars in it",
                            to_iso(from),
                            to_iso(to),
                            times.len(),
                            expected.len()
                        ));
                    }
                    Ok(((), note))
                },
            )
            .await;
        }
    }

    fn check_bar_list(
        &self,
        r: CommandResult,
        symbol: &str,
        tf: Timeframe,
        count: Option<u32>,
        range: Option<(UnixMs, UnixMs)>,
    ) -> Result<(Vec<Bar>, String), String> {
        let CommandResult::Bars {
            symbol: got_symbol,
            timeframe,
            bars,
        } = r
        else {
            return Err(wrong_kind("bars", &r));
        };
        if got_symbol != symbol || timeframe != tf {
            return Err(format!("answered {got_symbol} {timeframe} for {symbol} {tf}"));
        }
        if bars.is_empty() {
            return Err("no bars".into());
        }
        if let Some(c) = count
            && bars.len() != c as usize
        {
            return Err(format!("count {c} asked, {} bars answered", bars.len()));
        }
        let mut offset = None;
        for (i, b) in bars.iter().enumerate() {
            let id = format!("bar {i} ({})", to_iso(b.time));
            if i > 0 && b.time <= bars[i - 1].time {
                return Err(format!(
                    "{id}: times not strictly increasing (bars must be oldest first)"
                ));
            }
            self.plausible(&id, b.time)?;
            let off = alignment_offset(tf, b.time);
            if off.is_err() || offset.is_some_and(|o| Ok(o) != off) {
                return Err(format!("{id}: open time not aligned to {tf}"));
            }
            offset = off.ok();
            if ![b.open, b.high, b.low, b.close]
                .iter()
                .all(|p| p.is_finite() && *p > 0.0)
            {
                return Err(format!("{id}: prices must be finite and > 0"));
            }
            if b.high < b.open.max(b.close) || b.low > b.open.min(b.close) || b.low > b.high {
                return Err(format!(
                    "{id}: high {} / low {} do not contain open {} and close {}",
                    b.high, b.low, b.open, b.close
                ));
            }
            if !(b.volume.is_finite() && b.volume >= 0.0) {
                return Err(format!("{id}: volume {} is negative", b.volume));
            }
            if let Some((from, to)) = range
                && !within(b.time, from, to)
            {
                return Err(format!("{id}: outside [{}, {})", to_iso(from), to_iso(to)));
            }
        }
        let note = format!("{} bars", bars.len());
        Ok((bars, note))
    }

    // --- tick history -----------------------------------------------------

    async fn check_ticks(&mut self, latest: Option<&Tick>) {
        let symbol = self.args.symbol.clone();
        if self.backend.is_rest() {
            let t = Instant::now();
            let r = self
                .backend
                .rest_tool("get_order_flow", json!({ "symbol": symbol, "minutes": 60 }), None)
                .await;
            let lat = [t.elapsed().as_secs_f64() * 1000.0];
            let note = "REST has no tick-history route: only that get_order_flow (which reads `ticks`) answers was checked; use --gateway-url for the tick checks";
            match r {
                Ok(v) => self.push(
                    "ticks (via get_order_flow)",
                    "ticks",
                    Ok(format!("{} ticks; {note}", v["ticks"])),
                    Some(&lat),
                ),
                Err(f) if f.code == codes::NOT_FOUND => self.push(
                    "ticks (via get_order_flow)",
                    "ticks",
                    Ok(format!("no recent ticks; {note}")),
                    Some(&lat),
                ),
                Err(f) if f.code == codes::NOT_SUPPORTED && self.platform == Some(Platform::MT4) => self.push(
                    "ticks (via get_order_flow)",
                    "ticks",
                    Ok("not supported on MT4".into()),
                    Some(&lat),
                ),
                Err(f) => self.push(
                    "ticks (via get_order_flow)",
                    "ticks",
                    Err(format!("failed: {f}")),
                    Some(&lat),
                ),
            }
            if let Some(last) = self.report.last_mut().filter(|c| c.pass) {
                last.skipped = true;
            }
            return;
        }
        let end = latest.map_or(self.ref_time, |t| t.time) + 1;
        let (from, to) = (end - 3_600_000, end);
        let limit = 200u32;
        let command = Command::Ticks {
            symbol: symbol.clone(),
            from,
            to,
            limit: Some(limit),
        };
        let (lat, results) = self.sample(&command).await;
        let mut verdict = Ok(String::new());
        for (i, r) in results.into_iter().enumerate() {
            let v = match r {
                Err(f) if f.code == codes::NOT_SUPPORTED && self.platform == Some(Platform::MT4) => {
                    Ok("not supported on MT4".to_owned())
                }
                Err(f) => Err(format!("failed: {f}")),
                Ok(r) => self.check_tick_list(r, &symbol, from, to, limit),
            };
            if i == 0 || v.is_err() {
                verdict = v;
            }
            if verdict.is_err() {
                break;
            }
        }
        self.push("ticks", "ticks", verdict, Some(&lat));
    }

    fn check_tick_list(&self, r: CommandResult, symbol: &str, from: UnixMs, to: UnixMs, limit: u32) -> Verdict {
        let CommandResult::Ticks { symbol: s, ticks } = r else {
            return Err(wrong_kind("ticks", &r));
        };
        if s != symbol {
            return Err(format!("answered {s} for {symbol}"));
        }
        if ticks.len() > limit as usize {
            return Err(format!("limit {limit} asked, {} ticks answered", ticks.len()));
        }
        for (i, t) in ticks.iter().enumerate() {
            if i > 0 && t.time < ticks[i - 1].time {
                return Err(format!("tick {i}: times decrease (ticks must be oldest first)"));
            }
            if !within(t.time, from, to) {
                return Err(format!("tick {i} at {} outside [{}, {})", t.time, from, to));
            }
            check_quote(t).map_err(|e| format!("tick {i}: {e}"))?;
            self.plausible(&format!("tick {i} time"), t.time)?;
        }
        Ok(format!("{} ticks in the last hour", ticks.len()))
    }

    // --- history ----------------------------------------------------------

    async fn check_history(&mut self) {
        let (from, to) = self.history_range();
        let deals = self
            .sampled("history_deals", Command::HistoryDeals { from, to }, |k, r| {
                let CommandResult::Deals { deals } = r else {
                    return Err(wrong_kind("deals", &r));
                };
                for (i, d) in deals.iter().enumerate() {
                    let id = format!("deal {}", d.ticket);
                    if !within(d.time, from, to) {
                        return Err(format!(
                            "{id} at {} is outside [{}, {})",
                            to_iso(d.time),
                            to_iso(from),
                            to_iso(to)
                        ));
                    }
                    if i > 0 && d.time < deals[i - 1].time {
                        return Err(format!("{id}: deals not oldest first"));
                    }
                    k.plausible(&id, d.time)?;
                    if d.entry != DealEntry::Balance && !(positive(d.volume) && positive(d.price)) {
                        return Err(format!("{id}: a trade deal needs volume and price > 0"));
                    }
                }
                let n = deals.len();
                Ok((deals, format!("{n} deals in the last 30 days")))
            })
            .await;
        if let Some(deals) = deals {
            let v = if let Some(d) = deals.first() {
                // The sub-range [t, t+1) holds that deal; [t - 1 day, t) does not.
                let t = d.time;
                let inside = self.call(&Command::HistoryDeals { from: t, to: t + 1 }).await;
                let before = self
                    .call(&Command::HistoryDeals {
                        from: t - DAY_MS,
                        to: t,
                    })
                    .await;
                let expect: BTreeSet<u64> = deals.iter().filter(|x| x.time == t).map(|x| x.ticket).collect();
                match (inside, before) {
                    (Ok(CommandResult::Deals { deals: a }), Ok(CommandResult::Deals { deals: b })) => {
                        let got: BTreeSet<u64> = a.iter().map(|x| x.ticket).collect();
                        if got != expect {
                            Err(format!(
                                "[{t}, {}) answered deals {got:?}, expected {expect:?} (from is inclusive)",
                                t + 1
                            ))
                        } else if b.iter().any(|x| x.time >= t || expect.contains(&x.ticket)) {
                            Err(format!(
                                "[{}, {t}) answered a deal at or after {t} (to is exclusive)",
                                t - DAY_MS
                            ))
                        } else {
                            Ok(format!("sub-ranges honoured around deal {}", d.ticket))
                        }
                    }
                    (Err(f), _) | (_, Err(f)) => Err(format!("failed: {f}")),
                    (Ok(r), _) => Err(wrong_kind("deals", &r)),
                }
            } else {
                Ok("no deals to test sub-ranges with".into())
            };
            self.push("history_deals sub-range", "history_deals", v, None);
        }
        self.sampled("history_orders", Command::HistoryOrders { from, to }, |k, r| {
            let CommandResult::HistoryOrders { orders } = r else {
                return Err(wrong_kind("history_orders", &r));
            };
            for o in &orders {
                let id = format!("order {}", o.ticket);
                k.plausible(&format!("{id} time_setup"), o.time_setup)?;
                k.plausible(&format!("{id} time_done"), o.time_done)?;
                if o.time_done < o.time_setup {
                    return Err(format!("{id}: time_done before time_setup"));
                }
                if !within(o.time_done, from, to) {
                    return Err(format!("{id}: time_done outside the range asked"));
                }
                if !positive(o.volume) {
                    return Err(format!("{id}: volume not > 0"));
                }
            }
            Ok(((), format!("{} finished orders", orders.len())))
        })
        .await;
    }

    // --- order_check --------------------------------------------------------

    async fn check_order_check(&mut self) {
        let Some(spec) = self.spec.clone() else {
            self.push(
                "order_check",
                "order_check",
                Err("no symbol_spec of the test symbol to build an order from".into()),
                None,
            );
            return;
        };
        let order = kit_order(&spec, OrderType::Buy, spec.volume_min, None, None);
        let before = self.call(&Command::Positions { symbol: None }).await;
        self.sampled("order_check", Command::OrderCheck { order }, |_, r| {
            let CommandResult::OrderCheck(c) = r else {
                return Err(wrong_kind("order_check", &r));
            };
            if c.valid {
                if c.retcode != "done" {
                    return Err(format!("valid, but retcode `{}` instead of `done`", c.retcode));
                }
                let sane =
                    positive(c.price) && c.margin.is_finite() && c.margin >= 0.0 && c.free_margin_after.is_finite();
                if !sane {
                    return Err("valid, but price/margin/free_margin_after are not sane".into());
                }
                Ok(((), format!("valid at {}, margin {}", c.price, c.margin)))
            } else if c.retcode.is_empty() || c.retcode == "done" {
                Err(format!("invalid without a reason (retcode `{}`)", c.retcode))
            } else {
                Ok(((), format!("invalid now: {} ({})", c.retcode, c.comment)))
            }
        })
        .await;
        // Below the minimum volume is never valid.
        let tiny = spec.volume_min / 2.0;
        let r = self
            .call(&Command::OrderCheck {
                order: kit_order(&spec, OrderType::Buy, tiny, None, None),
            })
            .await;
        let v = match r {
            Ok(CommandResult::OrderCheck(c)) if !c.valid => Ok(format!("rejected: {}", c.retcode)),
            Ok(CommandResult::OrderCheck(_)) => {
                Err(format!("a volume of {tiny} (half the minimum) was reported valid"))
            }
            Ok(other) => Err(wrong_kind("order_check", &other)),
            Err(f) if f.code == codes::INVALID_ARGUMENT => Ok(format!("refused: {f}")),
            Err(f) => Err(format!("failed: {f}")),
        };
        self.push("order_check below volume_min", "order_check", v, None);
        let after = self.call(&Command::Positions { symbol: None }).await;
        let v = match (before, after) {
            (Ok(CommandResult::Positions { positions: a }), Ok(CommandResult::Positions { positions: b })) => {
                let ta: BTreeSet<u64> = a.iter().map(|p| p.ticket).collect();
                let tb: BTreeSet<u64> = b.iter().map(|p| p.ticket).collect();
                if ta == tb {
                    Ok("no position opened by order_check".into())
                } else {
                    Err("positions changed across order_check calls: order_check must not trade".into())
                }
            }
            _ => Err("positions could not be read around order_check".into()),
        };
        self.push("order_check changes nothing", "order_check", v, None);
    }

    // --- calendar -----------------------------------------------------------

    async fn check_calendar(&mut self) {
        let from = self.ref_time - DAY_MS;
        let to = self.ref_time + 7 * DAY_MS;
        let command = Command::Calendar {
            from,
            to,
            currencies: Vec::new(),
        };
        let (lat, results) = self.sample(&command).await;
        let mut verdict = Ok(String::new());
        for (i, r) in results.into_iter().enumerate() {
            let v = match r {
                Err(f) if f.code == codes::NOT_SUPPORTED && self.platform == Some(Platform::MT4) => {
                    Ok("not supported on MT4".to_owned())
                }
                // An MT5 agent without calendar access (the MetaTrader5
                // Python package has no calendar API) may say so: the gateway
                // then answers calendar tools from the server calendar.
                Err(f) if f.code == codes::NOT_SUPPORTED => Ok(format!(
                    "not supported by this agent ({}); the gateway uses the server calendar",
                    f.message
                )),
                Err(f) => Err(format!("failed: {f}")),
                Ok(CommandResult::Calendar { events }) => {
                    let mut v = Ok(format!("{} events in 8 days", events.len()));
                    for (j, e) in events.iter().enumerate() {
                        if j > 0 && e.time < events[j - 1].time {
                            v = Err(format!("event {}: events not by time", e.id));
                        } else if !within(e.time, from, to) {
                            v = Err(format!("event {} at {} outside the range asked", e.id, to_iso(e.time)));
                        } else if e.currency.len() != 3 {
                            v = Err(format!("event {}: currency `{}` is not an ISO code", e.id, e.currency));
                        }
                        if v.is_err() {
                            break;
                        }
                    }
                    v
                }
                Ok(other) => Err(wrong_kind("calendar", &other)),
            };
            if i == 0 || v.is_err() {
                verdict = v;
            }
            if verdict.is_err() {
                break;
            }
        }
        self.push("calendar", "calendar", verdict, Some(&lat));
    }

    // --- unknown symbol -----------------------------------------------------

    async fn check_unknown_symbol(&mut self) {
        let s = UNKNOWN_SYMBOL.to_owned();
        let commands = [
            Command::Tick { symbol: s.clone() },
            Command::SymbolSpec { symbol: s.clone() },
            Command::Bars {
                symbol: s.clone(),
                timeframe: Timeframe::H1,
                count: Some(10),
                from: None,
                to: None,
            },
        ];
        for c in commands {
            let name = format!("{} unknown symbol", c.name());
            let v = match self.call(&c).await {
                Ok(_) => Err(format!("an unknown symbol ({s}) answered success")),
                Err(f) if f.code == codes::INVALID_ARGUMENT || f.code == codes::NOT_FOUND => Ok(f.code.clone()),
                Err(f) => Err(format!("expected INVALID_ARGUMENT or NOT_FOUND, got {f}")),
            };
            self.push(&name, c.name(), v, None);
        }
    }
}

/// ask >= bid > 0, finite.
fn check_quote(t: &Tick) -> Result<(), String> {
    if !(t.bid.is_finite() && t.ask.is_finite() && t.bid > 0.0) {
        return Err(format!("bid {} must be finite and > 0", t.bid));
    }
    if t.ask < t.bid {
        return Err(format!("ask {} < bid {}", t.ask, t.bid));
    }
    Ok(())
}

/// How far `t` is past the timeframe's grid: M1..H1 must be on the UTC grid;
/// H4 and D1 on whole hours (brokers' days start at their server midnight),
/// consistently across bars; W1 and MN1 on whole hours.
fn alignment_offset(tf: Timeframe, t: UnixMs) -> Result<i64, ()> {
    const HOUR: i64 = 3_600_000;
    match tf {
        Timeframe::M1 | Timeframe::M5 | Timeframe::M15 | Timeframe::M30 | Timeframe::H1 => {
            if t.rem_euclid(tf.duration_ms()) == 0 {
                Ok(0)
            } else {
                Err(())
            }
        }
        Timeframe::H4 | Timeframe::D1 => {
            if t.rem_euclid(HOUR) == 0 {
                Ok(t.rem_euclid(tf.duration_ms()))
            } else {
                Err(())
            }
        }
        Timeframe::W1 | Timeframe::MN1 => {
            if t.rem_euclid(HOUR) == 0 {
                Ok(0)
            } else {
                Err(())
            }
        }
    }
}

fn check_spec(r: CommandResult, symbol: &str) -> Result<(SymbolSpec, String), String> {
    let CommandResult::SymbolSpec(s) = r else {
        return Err(wrong_kind("symbol_spec", &r));
    };
    if s.name != symbol {
        return Err(format!("name `{}` for `{symbol}`", s.name));
    }
    if s.digits > 10 {
        return Err(format!("digits {} is implausible", s.digits));
    }
    let expect_point = 10f64.powi(-(s.digits as i32));
    if !positive(s.point) || ((s.point - expect_point).abs() / expect_point) > 1e-6 {
        return Err(format!(
            "point {} does not match digits {} (10^-{})",
            s.point, s.digits, s.digits
        ));
    }
    if !positive(s.volume_min) || !positive(s.volume_step) {
        return Err(format!(
            "volume_min {} and volume_step {} must be > 0",
            s.volume_min, s.volume_step
        ));
    }
    if s.volume_min > s.volume_max {
        return Err(format!("volume_min {} > volume_max {}", s.volume_min, s.volume_max));
    }
    let steps = s.volume_min / s.volume_step;
    if (steps - steps.round()).abs() > 1e-6 {
        return Err(format!(
            "volume_min {} is not a multiple of volume_step {}",
            s.volume_min, s.volume_step
        ));
    }
    let sizes = positive(s.contract_size) && positive(s.tick_size) && s.tick_value.is_finite() && s.tick_value >= 0.0;
    if !sizes {
        return Err("contract_size and tick_size must be > 0, tick_value finite".into());
    }
    if s.swap_triple_day > 6 {
        return Err(format!("swap_triple_day {} is not 0..6", s.swap_triple_day));
    }
    if let Some(w) = s.sessions.iter().find(|w| w.day > 6 || w.open > 1440 || w.close > 1440) {
        return Err(format!("session {w:?}: day must be 0..6 and minutes 0..1440"));
    }
    let note = format!(
        "digits {}, volume {}..{} step {}",
        s.digits, s.volume_min, s.volume_max, s.volume_step
    );
    Ok((s, note))
}

/// margin_level: null without positions, else equity / margin × 100.
fn check_margin_level(a: &AccountInfo, positions: &[Position]) -> Verdict {
    match a.margin_level {
        None if positions.is_empty() || a.margin == 0.0 => Ok("null (no margin used)".into()),
        None => Err(format!(
            "null with {} open positions and margin {}",
            positions.len(),
            a.margin
        )),
        Some(l) if positions.is_empty() && a.margin == 0.0 => Err(format!(
            "{l} without positions: margin_level must be null when no margin is used"
        )),
        Some(l) => {
            let expect = a.equity / a.margin * 100.0;
            if approx(l, expect, 0.01 + expect.abs() * 1e-4) {
                Ok(format!("{l:.2} %"))
            } else {
                Err(format!("{l} is not equity/margin×100 = {expect:.4}"))
            }
        }
    }
}

/// An order of the kit (magic [`KIT_MAGIC`]).
fn kit_order(
    spec: &SymbolSpec,
    order_type: OrderType,
    volume: f64,
    price: Option<f64>,
    key: Option<String>,
) -> OrderRequest {
    OrderRequest {
        symbol: spec.name.clone(),
        order_type,
        volume,
        price,
        stop_loss: None,
        take_profit: None,
        deviation_points: Some(50),
        comment: "tradeterm agent check".into(),
        magic: KIT_MAGIC,
        idempotency_key: key,
        stop_limit_price: None,
        expiration_mode: None,
        expiration: None,
        filling: None,
    }
}

fn round_volume(spec: &SymbolSpec, v: f64) -> f64 {
    let steps = (v / spec.volume_step).round();
    (steps * spec.volume_step * 1e8).round() / 1e8
}

fn round_price(spec: &SymbolSpec, p: f64) -> f64 {
    let f = 10f64.powi(spec.digits as i32);
    (p * f).round() / f
}

mod trading;

/// Renders the table.
fn render_table(report: &Report, args: &CheckArgs) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let platform = report.platform.map_or("?".to_owned(), |p| format!("{p:?}"));
    let mode = report.trade_mode.map_or("?", TradeMode::as_str);
    let _ = writeln!(
        out,
        "tradeterm agent check: terminal {} ({platform}, {mode}) through the {} ({} calls per read command)",
        report.terminal,
        if report.mode == "rest" { "REST API" } else { "gateway" },
        args.calls
    );
    let width = report.checks.iter().map(|c| c.name.len()).max().unwrap_or(5).max(5);
    let _ = writeln!(
        out,
        "{:<width$}  {:<16}  {:<4}  {:>8}  {:>8}  WHY",
        "CHECK", "COMMAND", "", "P50 ms", "P99 ms"
    );
    for c in &report.checks {
        let status = if !c.pass {
            "FAIL"
        } else if c.skipped {
            "skip"
        } else {
            "ok"
        };
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |x| format!("{x:.2}"));
        let _ = writeln!(
            out,
            "{:<width$}  {:<16}  {:<4}  {:>8}  {:>8}  {}",
            c.name,
            c.command,
            status,
            ms(c.p50_ms),
            ms(c.p99_ms),
            c.why
        );
    }
    let failed = report.failed_commands();
    if failed.is_empty() {
        let _ = writeln!(out, "\nall {} checks passed", report.checks.len());
    } else {
        let n = report.checks.iter().filter(|c| !c.pass).count();
        let _ = writeln!(
            out,
            "\n{n} of {} checks FAILED; broken: {}",
            report.checks.len(),
            failed.join(", ")
        );
    }
    if report.mode == "rest" {
        let _ = writeln!(out, "note: {REST_LIMITS}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let s = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(percentile(&s, 50.0), Some(3.0));
        assert_eq!(percentile(&s, 99.0), Some(100.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn alignment() {
        let h = 3_600_000;
        assert!(alignment_offset(Timeframe::H1, 1_795_003_200_000).is_ok());
        assert!(alignment_offset(Timeframe::H1, 1_795_003_200_000 + 60_000).is_err());
        // A broker day starting at 22:00 UTC is fine for D1, a minute offset is not.
        assert_eq!(alignment_offset(Timeframe::D1, 1_795_003_200_000 - 14 * h), Ok(22 * h));
        assert!(alignment_offset(Timeframe::D1, 1_795_003_200_000 + 60_000).is_err());
    }

    #[test]
    fn specs_are_checked() {
        let mut s = SymbolSpec {
            name: "EURUSD".into(),
            description: String::new(),
            currency_base: "EUR".into(),
            currency_profit: "USD".into(),
            currency_margin: "EUR".into(),
            digits: 5,
            point: 0.00001,
            contract_size: 100_000.0,
            tick_size: 0.00001,
            tick_value: 1.0,
            volume_min: 0.01,
            volume_max: 100.0,
            volume_step: 0.01,
            stops_level: 0,
            swap_long: 0.0,
            swap_short: 0.0,
            swap_mode: tradeterm_core::market::SwapMode::Points,
            swap_triple_day: 3,
            margin_mode: tradeterm_core::market::MarginMode::Forex,
            margin_rate: 1.0,
            sessions: Vec::new(),
            expiration_modes: Vec::new(),
            filling_modes: Vec::new(),
        };
        assert!(check_spec(CommandResult::SymbolSpec(s.clone()), "EURUSD").is_ok());
        s.point = 0.0001;
        assert!(check_spec(CommandResult::SymbolSpec(s.clone()), "EURUSD").is_err());
        s.point = 0.00001;
        s.volume_min = 0.015;
        assert!(check_spec(CommandResult::SymbolSpec(s), "EURUSD").is_err());
    }

    #[test]
    fn margin_level_rules() {
        let a = AccountInfo {
            login: 1,
            name: String::new(),
            server: String::new(),
            company: String::new(),
            currency: "USD".into(),
            leverage: 100,
            trade_mode: TradeMode::Demo,
            balance: 1000.0,
            equity: 1000.0,
            margin: 0.0,
            free_margin: 1000.0,
            margin_level: Some(0.0),
            profit: 0.0,
        };
        assert!(check_margin_level(&a, &[]).is_err());
        let a = AccountInfo {
            margin_level: None,
            ..a
        };
        assert!(check_margin_level(&a, &[]).is_ok());
        let a = AccountInfo {
            margin: 100.0,
            margin_level: Some(1000.0),
            ..a
        };
        assert!(check_margin_level(&a, &[]).is_ok());
    }
}
