//! The single-node stack end to end: demo credentials, listeners, and every
//! agent-protocol command round-tripping through the gateway to a simulated
//! terminal over the real WebSocket protocol.

use std::time::Duration;

use tradeterm_core::Timeframe;
use tradeterm_core::account::OrderType;
use tradeterm_protocol::agent::{OrderRequest, codes};
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError};

use crate::harness::{Api, Options, spawn};

#[tokio::test]
async fn demo_credentials_are_written_private_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let t = spawn(Options {
        data_dir: Some(dir.path().to_path_buf()),
        ..Options::default()
    })
    .await;
    let file = t.data_dir().join("demo-credentials.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    for field in [
        "license_key",
        "api_key",
        "terminals",
        "rest_url",
        "gateway_url",
        "mcp_url",
    ] {
        assert!(json.get(field).is_some(), "missing {field}");
    }
    assert!(json["api_key"].as_str().unwrap().starts_with("svc_api_"));
    assert_eq!(json["terminals"].as_array().unwrap().len(), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    assert!(t.stack.credentials_created);
    for api in [Api::new(&t.http, &t.rest), Api::new(&t.http, &t.gateway)] {
        let (status, body) = api.healthz().await;
        assert_eq!(status, 200, "{}: {body}", api.base());
    }
    let creds = t.creds.clone();
    t.stack.stop().await;

    // A second start on the same data dir reuses the license and keys, and
    // the bound terminals reconnect (`spawn` waits for them).
    let again = spawn(Options {
        data_dir: Some(dir.path().to_path_buf()),
        ..Options::default()
    })
    .await;
    assert!(!again.stack.credentials_created);
    assert_eq!(again.creds.license_key, creds.license_key);
    assert_eq!(again.creds.api_key, creds.api_key);
    assert_eq!(again.creds.terminals, creds.terminals);
    again.stack.stop().await;
}

#[tokio::test]
async fn every_protocol_command_round_trips_to_the_simulator() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let gw = &t.stack.gateway;
    let lic = &t.creds.license_id;
    let term = t.terminal(0);
    let run = |c: Command| async move { gw.execute(lic, term, c, Duration::from_secs(10)).await };

    let account = match run(Command::AccountInfo).await.unwrap() {
        CommandResult::AccountInfo(a) => a,
        other => panic!("{other:?}"),
    };
    assert_eq!(account.trade_mode, tradeterm_core::TradeMode::Demo);
    assert!(account.balance > 0.0);
    let symbols = match run(Command::Symbols).await.unwrap() {
        CommandResult::Symbols { symbols } => symbols,
        other => panic!("{other:?}"),
    };
    for s in ["EURUSD", "GBPUSD", "USDJPY", "XAUUSD"] {
        assert!(symbols.iter().any(|x| x == s), "{s} missing from {symbols:?}");
    }
    match run(Command::SymbolSpec {
        symbol: "EURUSD".into(),
    })
    .await
    .unwrap()
    {
        CommandResult::SymbolSpec(s) => {
            assert_eq!(s.digits, 5);
            assert!(s.volume_step > 0.0 && s.contract_size > 0.0);
        }
        other => panic!("{other:?}"),
    }
    let tick = match run(Command::Tick {
        symbol: "EURUSD".into(),
    })
    .await
    .unwrap()
    {
        CommandResult::Tick(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(tick.ask > tick.bid && tick.bid > 0.5);
    match run(Command::Bars {
        symbol: "EURUSD".into(),
        timeframe: Timeframe::H1,
        count: Some(50),
        from: None,
        to: None,
    })
    .await
    .unwrap()
    {
        CommandResult::Bars { bars, .. } => {
            assert_eq!(bars.len(), 50);
            assert!(bars.windows(2).all(|w| w[0].time < w[1].time));
        }
        other => panic!("{other:?}"),
    }
    let day = 86_400_000;
    match run(Command::Bars {
        symbol: "EURUSD".into(),
        timeframe: Timeframe::M15,
        count: None,
        from: Some(tick.time - day),
        to: Some(tick.time),
    })
    .await
    .unwrap()
    {
        CommandResult::Bars { bars, .. } => {
            assert!(!bars.is_empty());
            assert!(bars.iter().all(|b| b.time >= tick.time - day && b.time < tick.time));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        run(Command::Ticks {
            symbol: "EURUSD".into(),
            from: tick.time - day,
            to: tick.time + 1,
            limit: Some(10)
        })
        .await
        .unwrap(),
        CommandResult::Ticks { .. }
    ));
    assert!(matches!(
        run(Command::Positions { symbol: None }).await.unwrap(),
        CommandResult::Positions { .. }
    ));
    assert!(matches!(
        run(Command::Orders { symbol: None }).await.unwrap(),
        CommandResult::Orders { .. }
    ));
    assert!(matches!(
        run(Command::HistoryDeals {
            from: 0,
            to: tick.time + day
        })
        .await
        .unwrap(),
        CommandResult::Deals { .. }
    ));
    assert!(matches!(
        run(Command::HistoryOrders {
            from: 0,
            to: tick.time + day
        })
        .await
        .unwrap(),
        CommandResult::HistoryOrders { .. }
    ));
    assert!(matches!(
        run(Command::Calendar {
            from: tick.time - 7 * day,
            to: tick.time + 7 * day,
            currencies: vec![]
        })
        .await
        .unwrap(),
        CommandResult::Calendar { .. }
    ));
    let order = OrderRequest {
        symbol: "EURUSD".into(),
        order_type: OrderType::Buy,
        volume: 0.1,
        price: None,
        stop_loss: None,
        take_profit: None,
        deviation_points: None,
        comment: "v1.2 test...".into(),
        magic: 7,
        idempotency_key: None,
        stop_limit_price: None,
        expiration_mode: None,
        expiration: None,
        filling: None,
    };
    match run(Command::OrderCheck { order: order.clone() }).await.unwrap() {
        CommandResult::OrderCheck(c) => {
            assert!(c.valid, "{c:?}");
            assert!(c.margin > 0.0);
        }
        other => panic!("{other:?}"),
    }
    // Trade commands are refused while the agent's allow-trading input is off
    // (the gateway refuses before the agent sees them).
    for cmd in [
        Command::PlaceOrder { order },
        Command::ClosePosition {
            ticket: 1,
            volume: None,
            deviation_points: None,
            idempotency_key: None,
        },
        Command::ModifyPosition {
            ticket: 1,
            stop_loss: None,
            take_profit: None,
        },
        Command::CancelOrder { ticket: 1 },
        Command::ReversePosition {
            ticket: 1,
            idempotency_key: None,
        },
    ] {
        match run(cmd).await.unwrap_err() {
            DispatchError::CommandFailed(b) => assert_eq!(b.code, codes::TRADING_DISABLED),
            other => panic!("{other:?}"),
        }
    }
    t.stack.stop().await;
}

#[tokio::test]
async fn trade_commands_round_trip_when_trading_is_allowed() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let gw = &t.stack.gateway;
    let lic = &t.creds.license_id;
    let term = t.terminal(0);
    let run = |c: Command| async move { gw.execute(lic, term, c, Duration::from_secs(10)).await };
    let order = |order_type, price| OrderRequest {
        symbol: "EURUSD".into(),
        order_type,
        volume: 0.2,
        price,
        stop_loss: None,
        take_profit: None,
        deviation_points: None,
        comment: "e2e.test".into(),
        magic: 1,
        idempotency_key: None,
        stop_limit_price: None,
        expiration_mode: None,
        expiration: None,
        filling: None,
    };
    let trade = match run(Command::PlaceOrder {
        order: order(OrderType::Buy, None),
    })
    .await
    .unwrap()
    {
        CommandResult::Trade(tr) => tr,
        other => panic!("{other:?}"),
    };
    let ticket = trade.position;
    assert!(ticket > 0);
    let tick = t.stack.simulators()[0].tick("EURUSD").unwrap();
    let sl = ((tick.bid - 0.0050) * 1e5).round() / 1e5;
    assert!(matches!(
        run(Command::ModifyPosition {
            ticket,
            stop_loss: Some(sl),
            take_profit: None
        })
        .await
        .unwrap(),
        CommandResult::Trade(_)
    ));
    assert!(matches!(
        run(Command::ClosePosition {
            ticket,
            volume: Some(0.1),
            deviation_points: None,
            idempotency_key: None
        })
        .await
        .unwrap(),
        CommandResult::Trade(_)
    ));
    assert!(matches!(
        run(Command::ReversePosition {
            ticket,
            idempotency_key: None
        })
        .await
        .unwrap(),
        CommandResult::Reverse { .. }
    ));
    let limit_price = ((tick.ask - 0.0100) * 1e5).round() / 1e5;
    let placed = match run(Command::PlaceOrder {
        order: order(OrderType::BuyLimit, Some(limit_price)),
    })
    .await
    .unwrap()
    {
        CommandResult::Trade(tr) => tr,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        run(Command::CancelOrder { ticket: placed.order }).await.unwrap(),
        CommandResult::Trade(_)
    ));
    let deals = t.stack.simulators()[0].deals();
    assert!(
        deals.iter().any(|d| d.comment == "e2e.test"),
        "comment with dots kept: {deals:?}"
    );
    t.stack.stop().await;
}
