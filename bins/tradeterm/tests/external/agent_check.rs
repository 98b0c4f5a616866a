//! The agent conformance kit (`tradeterm agent check`) against the simulated
//! agent (everything passes, in gateway and REST mode, read-only and with
//! `--trading`), against deliberately broken agents (the kit fails and names
//! the broken command), and the gateway's raw command route it uses.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tradeterm::agent_check::{CheckArgs, Report, check};
use tradeterm_core::TradeMode;
use tradeterm_protocol::agent::{AgentFrame, GatewayFrame, Platform, Response};
use tradeterm_protocol::{CommandResult, Dispatch};
use tradeterm_sim::{SimSettings, Simulator, SystemClock};

use crate::harness::process::tradeterm;
use crate::harness::{Expect, Options, TestStack, WEDNESDAY_NOON, spawn, wait_until};

/// How long an agent may take to connect or to close its session.
const CONNECT: Duration = Duration::from_secs(10);

fn gateway_args(t: &TestStack, terminal: &str, trading: bool) -> CheckArgs {
    CheckArgs {
        gateway_url: Some(t.gateway.clone()),
        master_key: Some(t.creds.license_key.clone()),
        rest_url: None,
        api_key: None,
        terminal: terminal.to_owned(),
        trading,
        json: true,
        symbol: "EURUSD".into(),
        ca_file: None,
        calls: 2,
    }
}

fn rest_args(t: &TestStack, terminal: &str, trading: bool) -> CheckArgs {
    CheckArgs {
        gateway_url: None,
        master_key: None,
        rest_url: Some(t.rest.clone()),
        api_key: Some(t.creds.api_key.clone()),
        ..gateway_args(t, terminal, trading)
    }
}

fn failures(r: &Report) -> String {
    r.checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| format!("{} [{}]: {}", c.name, c.command, c.why))
        .collect::<Vec<_>>()
        .join("\n")
}

fn commands(r: &Report) -> Vec<&str> {
    r.checks.iter().map(|c| c.command.as_str()).collect()
}

const READ_COMMANDS: [&str; 12] = [
    "account_info",
    "positions",
    "orders",
    "history_deals",
    "history_orders",
    "symbols",
    "symbol_spec",
    "tick",
    "bars",
    "ticks",
    "order_check",
    "calendar",
];

const TRADE_COMMANDS: [&str; 5] = [
    "place_order",
    "modify_position",
    "close_position",
    "reverse_position",
    "cancel_order",
];

/// The simulator implements the later v1 commands: each is exercised and
/// passes, none is reported as "not supported".
fn later_commands_exercised(r: &Report, mode: &str) {
    for cmd in ["modify_order", "close_by", "market_book_get", "market_book_release"] {
        let c = r
            .checks
            .iter()
            .find(|c| c.command == cmd)
            .unwrap_or_else(|| panic!("{mode}: {cmd} not checked"));
        assert!(c.pass && !c.why.contains("not supported"), "{mode}: {cmd}: {}", c.why);
    }
    assert!(
        r.checks
            .iter()
            .any(|c| c.name.starts_with("place_order BUY_STOP_LIMIT") && c.pass && !c.why.contains("not supported")),
        "{mode}: no stop-limit order checked"
    );
}

/// Runs the real binary; returns (exit code, stdout, stderr).
async fn run_binary(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = tradeterm().args(&args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn the_simulated_agent_passes_every_check_in_both_modes() {
    let t = spawn(Options {
        sims: 2,
        allow_trading: true,
        ..Options::default()
    })
    .await;

    // Gateway mode, read-only.
    let r = check(&gateway_args(&t, t.terminal(0), false)).await.unwrap();
    assert!(r.ok, "gateway read-only failures:\n{}", failures(&r));
    assert_eq!(
        (r.platform, r.trade_mode, r.mode),
        (Some(Platform::MT5), Some(TradeMode::Demo), "gateway")
    );
    for c in READ_COMMANDS {
        assert!(commands(&r).contains(&c), "{c} not checked");
    }
    assert!(!commands(&r).contains(&"place_order"), "read-only must not trade");
    let tick = r.checks.iter().find(|c| c.name == "tick").unwrap();
    assert!(tick.p50_ms.is_some() && tick.p99_ms >= tick.p50_ms);
    for tf in ["M1", "H1", "D1"] {
        assert!(r.checks.iter().any(|c| c.name == format!("bars {tf} range") && c.pass));
    }
    assert!(t.stack.simulators()[0].positions().is_empty());

    // Gateway mode, trading: the whole cycle, and nothing left open.
    let r = check(&gateway_args(&t, t.terminal(0), true)).await.unwrap();
    assert!(r.ok, "gateway trading failures:\n{}", failures(&r));
    for c in TRADE_COMMANDS {
        assert!(commands(&r).contains(&c), "{c} not checked");
    }
    later_commands_exercised(&r, "gateway");
    let sim = &t.stack.simulators()[0];
    assert!(sim.positions().is_empty(), "positions left open: {:?}", sim.positions());
    assert!(sim.pending_orders().is_empty());
    // Open 0.02, partial close 0.01, reverse (close + open), full close.
    let kit_deals = sim.deals().into_iter().filter(|d| d.magic == 7_401_001).count();
    assert!(kit_deals >= 4, "{kit_deals} kit deals");

    // REST mode with trading, on the other terminal.
    let r = check(&rest_args(&t, t.terminal(1), true)).await.unwrap();
    assert!(r.ok, "REST trading failures:\n{}", failures(&r));
    assert_eq!(r.mode, "rest");
    for c in READ_COMMANDS.iter().chain(TRADE_COMMANDS.iter()) {
        assert!(commands(&r).contains(c), "{c} not checked in REST mode");
    }
    assert!(r.checks.iter().any(|c| c.command == "ticks" && c.skipped));
    later_commands_exercised(&r, "REST");
    assert!(t.stack.simulators()[1].positions().is_empty());

    // REST mode read-only through the real binary, JSON report.
    let (code, stdout, stderr) = run_binary(vec![
        "agent".into(),
        "check".into(),
        "--rest-url".into(),
        t.rest.clone(),
        "--api-key".into(),
        t.creds.api_key.clone(),
        "--terminal".into(),
        t.terminal(1).into(),
        "--json".into(),
        "--calls".into(),
        "3".into(),
    ])
    .await;
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["ok"], json!(true));
    assert_eq!(v["terminal"], json!(t.terminal(1)));
    assert_eq!(
        (v["platform"].as_str(), v["trade_mode"].as_str()),
        (Some("MT5"), Some("demo"))
    );
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.len() > 20);
    for c in checks {
        for field in ["name", "command", "pass", "why", "p50_ms", "p99_ms"] {
            assert!(c.get(field).is_some(), "{field} missing in {c}");
        }
    }

    // The table, gateway mode, through the binary.
    let (code, stdout, stderr) = run_binary(vec![
        "agent".into(),
        "check".into(),
        "--gateway-url".into(),
        t.gateway.clone(),
        "--master-key".into(),
        t.creds.license_key.clone(),
        "--terminal".into(),
        t.terminal(0).into(),
    ])
    .await;
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("all ") && stdout.contains("checks passed"), "{stdout}");
    assert!(stdout.contains("bars H1 count 50"));
}

/// How the fake agent misbehaves.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    BarsNewestFirst,
    BidAboveAsk,
    RealAccount,
}

/// A terminal-side agent written in the test: speaks the protocol over
/// tokio-tungstenite and answers from a `Simulator`, corrupting per `fault`.
async fn fake_agent(t: &TestStack, name: &str, platform: Platform, fault: Fault) -> (String, Simulator) {
    let (terminal, key) = t.stack.store.create_terminal(&t.creds.license_id, name).await.unwrap();
    let settings = SimSettings {
        platform,
        ..SimSettings::demo(40)
    };
    let sim = Simulator::new(settings, Arc::new(SystemClock::starting_at(WEDNESDAY_NOON, 1.0)));
    let url = format!("ws://127.0.0.1:{}/agent/v1", t.stack.gateway_port);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let mut hello = sim.hello(key.expose(), &format!("fake-{name}"));
    if fault == Fault::RealAccount {
        hello.account.trade_mode = TradeMode::Real;
    }
    ws.send(Message::text(AgentFrame::Hello(Box::new(hello)).to_json()))
        .await
        .unwrap();
    let agent_sim = sim.clone();
    tokio::spawn(async move {
        while let Some(Ok(msg)) = ws.next().await {
            let Message::Text(text) = msg else { continue };
            let reply = match GatewayFrame::parse(&text) {
                Ok(GatewayFrame::Ping { ts }) => AgentFrame::Pong { ts },
                Ok(GatewayFrame::Request { id, command, .. }) => {
                    let response = match agent_sim.execute(command) {
                        Ok(result) => Response::ok(id, corrupt(result, fault)),
                        Err(e) => Response::err(id, e),
                    };
                    AgentFrame::Response(response)
                }
                _ => continue,
            };
            if ws.send(Message::text(reply.to_json())).await.is_err() {
                break;
            }
        }
    });
    wait_until("the fake agent to connect", CONNECT, || async {
        t.stack.gateway.is_connected(&terminal.id).then_some(())
    })
    .await;
    (terminal.id, sim)
}

fn corrupt(result: CommandResult, fault: Fault) -> CommandResult {
    match (fault, result) {
        (
            Fault::BarsNewestFirst,
            CommandResult::Bars {
                symbol,
                timeframe,
                mut bars,
            },
        ) => {
            bars.reverse();
            CommandResult::Bars {
                symbol,
                timeframe,
                bars,
            }
        }
        (Fault::BidAboveAsk, CommandResult::Tick(mut tick)) => {
            std::mem::swap(&mut tick.bid, &mut tick.ask);
            tick.bid += 0.0001;
            CommandResult::Tick(tick)
        }
        (Fault::RealAccount, CommandResult::AccountInfo(mut a)) => {
            a.trade_mode = TradeMode::Real;
            CommandResult::AccountInfo(a)
        }
        (_, other) => other,
    }
}

#[tokio::test]
async fn broken_agents_fail_and_the_broken_command_is_named() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: false,
        ..Options::default()
    })
    .await;

    // Bars newest first: `bars` fails, nothing else.
    let (bars_term, _) = fake_agent(&t, "bars-newest-first", Platform::MT5, Fault::BarsNewestFirst).await;
    let r = check(&gateway_args(&t, &bars_term, false)).await.unwrap();
    assert!(!r.ok);
    assert_eq!(r.failed_commands(), vec!["bars".to_owned()], "{}", failures(&r));
    let why = &r.checks.iter().find(|c| !c.pass).unwrap().why;
    assert!(why.contains("oldest first"), "{why}");
    // The same through REST.
    let r = check(&rest_args(&t, &bars_term, false)).await.unwrap();
    assert_eq!(r.failed_commands(), vec!["bars".to_owned()], "{}", failures(&r));

    // bid > ask: `tick` fails.
    let (tick_term, _) = fake_agent(&t, "bid-above-ask", Platform::MT5, Fault::BidAboveAsk).await;
    let r = check(&gateway_args(&t, &tick_term, false)).await.unwrap();
    assert_eq!(r.failed_commands(), vec!["tick".to_owned()], "{}", failures(&r));
    assert!(r.checks.iter().any(|c| !c.pass && c.why.contains("< bid")));

    // The binary exits 1 and names the command.
    let (code, stdout, stderr) = run_binary(vec![
        "agent".into(),
        "check".into(),
        "--gateway-url".into(),
        t.gateway.clone(),
        "--master-key".into(),
        t.creds.license_key.clone(),
        "--terminal".into(),
        bars_term.clone(),
        "--json".into(),
        "--calls".into(),
        "1".into(),
    ])
    .await;
    assert_eq!(code, 1, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["ok"], json!(false));
    assert!(stderr.contains("FAILED: bars"), "{stderr}");

    // --trading on a real account is refused before anything is sent.
    let (real_term, real_sim) = fake_agent(&t, "real-account", Platform::MT5, Fault::RealAccount).await;
    real_sim.set_allow_trading(true);
    let r = check(&gateway_args(&t, &real_term, true)).await.unwrap();
    assert!(!r.ok);
    assert_eq!(r.trade_mode, Some(TradeMode::Real));
    let refused = r.checks.iter().find(|c| c.name == "trading").unwrap();
    assert!(!refused.pass && refused.why.contains("refused") && refused.why.contains("real"));
    assert!(!commands(&r).contains(&"place_order"));
    assert!(real_sim.positions().is_empty() && real_sim.deals().len() == 1);
    let (code, _, stderr) = run_binary(vec![
        "agent".into(),
        "check".into(),
        "--gateway-url".into(),
        t.gateway.clone(),
        "--master-key".into(),
        t.creds.license_key.clone(),
        "--terminal".into(),
        real_term.clone(),
        "--trading".into(),
    ])
    .await;
    assert_eq!(code, 1);
    assert!(stderr.contains("--trading refused"), "{stderr}");

    // An MT4 agent: calendar (and nothing else) answers NOT_SUPPORTED, which passes.
    let (mt4_term, _) = fake_agent(&t, "mt4", Platform::MT4, Fault::None).await;
    let r = check(&gateway_args(&t, &mt4_term, false)).await.unwrap();
    assert!(r.ok, "{}", failures(&r));
    assert_eq!(r.platform, Some(Platform::MT4));
    let cal = r.checks.iter().find(|c| c.command == "calendar").unwrap();
    assert_eq!(cal.why, "not supported on MT4");

    // Usage and connection errors exit 2.
    let (code, _, stderr) = run_binary(vec![
        "agent".into(),
        "check".into(),
        "--gateway-url".into(),
        t.gateway.clone(),
        "--master-key".into(),
        t.creds.license_key.clone(),
        "--terminal".into(),
        "term_doesnotexist".into(),
    ])
    .await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no terminal term_doesnotexist"), "{stderr}");
    let (code, _, _) = run_binary(vec!["agent".into(), "check".into(), "--terminal".into(), "x".into()]).await;
    assert_eq!(code, 2);
}

#[tokio::test]
async fn the_command_route_is_license_scoped_and_needs_live_for_trades() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: false,
        ..Options::default()
    })
    .await;
    let term = t.terminal(0);
    let master = t.gateway_as(&t.creds.license_key);

    // A read command: the agent's result as is.
    let body = master
        .terminal_command(term, &json!({ "command": { "cmd": "tick", "symbol": "EURUSD" } }))
        .await
        .data();
    assert_eq!(body["result"]["kind"], json!("tick"));
    assert!(body["elapsed_ms"].as_f64().unwrap() >= 0.0);
    let result: CommandResult = serde_json::from_value(body["result"].clone()).unwrap();
    assert!(matches!(result, CommandResult::Tick(ref q) if q.ask >= q.bid));

    // An agent error comes back with its code and message.
    let f = master
        .terminal_command(term, &json!({ "command": { "cmd": "tick", "symbol": "NOSUCH" } }))
        .await
        .failure(502, "COMMAND_FAILED");
    assert_eq!(f.error["detail"]["code"], json!("NOT_FOUND"));

    // Another license's master key: the terminal does not exist for it.
    let (_, other_key) = t
        .stack
        .store
        .create_license("other", tradeterm_store::Tier::Enterprise)
        .await
        .unwrap();
    t.gateway_as(other_key.expose())
        .terminal_command(term, &json!({ "command": { "cmd": "symbols" } }))
        .await
        .failure(404, "NOT_FOUND");
    // Neither an API key nor a terminal key is a master key.
    for key in [&t.creds.api_key, &t.creds.terminals[0].key] {
        t.gateway_as(key)
            .terminal_command(term, &json!({ "command": { "cmd": "symbols" } }))
            .await
            .failure(401, "UNAUTHORIZED");
    }

    // A trade command without `live` is refused before dispatch.
    let order = json!({ "cmd": "place_order", "order": { "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01 } });
    master
        .terminal_command(term, &json!({ "command": order }))
        .await
        .failure(400, "VALIDATION_ERROR")
        .mentions("live");
    // With `live` it goes through the gateway's fail-closed check: trading is off here.
    let f = master
        .terminal_command(term, &json!({ "command": order, "live": true }))
        .await
        .failure(502, "COMMAND_FAILED");
    assert_eq!(f.error["detail"]["code"], json!("TRADING_DISABLED"));
    assert!(t.stack.simulators()[0].positions().is_empty());

    // Bad bodies.
    for bad in [
        json!({ "command": { "cmd": "bogus" } }),
        json!({ "command": { "cmd": "symbols" }, "timeout_ms": 0 }),
    ] {
        master
            .terminal_command(term, &bad)
            .await
            .failure_for(400, "VALIDATION_ERROR", &bad);
    }
}

/// The HTTP long-poll binding passes the kit: a simulated terminal connected
/// over `POST /agent/v1/poll` (the sim's transport on the protocol crate's
/// `PollClient`) passes every read check and the whole `--trading` cycle,
/// idempotent re-send included, through the gateway and through REST.
#[tokio::test]
async fn the_kit_passes_over_the_long_poll_binding() {
    let t = spawn(Options::default()).await;
    let (terminal, key) = t
        .stack
        .store
        .create_terminal(&t.creds.license_id, "poll agent")
        .await
        .unwrap();
    for platform in [Platform::MT5, Platform::MT4] {
        let settings = SimSettings {
            platform,
            allow_trading: true,
            ..SimSettings::demo(41)
        };
        let sim = Simulator::new(settings, Arc::new(SystemClock::starting_at(WEDNESDAY_NOON, 1.0)));
        let agent = tradeterm_sim::spawn_agent(
            sim.clone(),
            tradeterm_sim::AgentSettings {
                url: format!("http://127.0.0.1:{}", t.stack.gateway_port),
                terminal_key: key.expose().to_owned(),
                uid: "poll-agent".into(),
                ca_file: None,
            },
        );
        wait_until("the long-poll agent to connect", CONNECT, || async {
            t.stack.gateway.is_connected(&terminal.id).then_some(())
        })
        .await;
        let listed = t.stack.gateway.terminals(&t.creds.license_id).await.unwrap();
        let status = listed.iter().find(|s| s.id == terminal.id).unwrap();
        assert_eq!(status.platform, Some(platform));

        let r = check(&gateway_args(&t, &terminal.id, true)).await.unwrap();
        assert!(r.ok, "{platform:?} over long-poll, gateway mode:\n{}", failures(&r));
        assert_eq!(r.platform, Some(platform));
        for c in [
            "place_order",
            "modify_position",
            "close_position",
            "reverse_position",
            "cancel_order",
        ] {
            assert!(commands(&r).contains(&c), "{c} not checked over long-poll");
        }
        let r = check(&rest_args(&t, &terminal.id, true)).await.unwrap();
        assert!(r.ok, "{platform:?} over long-poll, REST mode:\n{}", failures(&r));
        assert!(sim.positions().is_empty(), "the kit left positions open");
        agent.shutdown().await;
        wait_until("the long-poll agent to close its session", CONNECT, || async {
            (!t.stack.gateway.is_connected(&terminal.id)).then_some(())
        })
        .await;
    }
}
