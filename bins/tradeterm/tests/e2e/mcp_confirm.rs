//! Live MCP trades confirmed by a human (MCP elicitation, issue 31 item 3)
//! against the real stack: an rmcp client without the elicitation
//! capability is refused (dry runs work), a client with it is asked and only
//! its accept executes, the license owner's setting turns confirmation off,
//! and every answer is on the audit row. The simulator's deals prove what
//! executed.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::mcp::{self, Answer, Confirming, call, connect, connect_confirming, err, ok};
use crate::harness::{Expect, Options, TestStack, spawn_with};

fn deals(t: &TestStack) -> usize {
    t.stack.simulators()[0].deals().len()
}

async fn start() -> TestStack {
    spawn_with(
        Options {
            sims: 1,
            allow_trading: true,
            ..Options::default()
        },
        // The user has one second to answer (the default is 120 s).
        |s| s.mcp_trade_confirm_timeout_secs = 1,
    )
    .await
}

fn live() -> Value {
    json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01, "stop_loss": 1.0, "dry_run": false })
}

/// The MCP rows of `place_order` in the audit log, oldest first: (decision, code, request.confirmation).
async fn mcp_rows(t: &TestStack) -> Vec<(String, Option<String>, Value)> {
    let page = t
        .master()
        .get("/api/v1/audit?tool=place_order&limit=100")
        .await
        .data_for("audit");
    let mut rows: Vec<(String, Option<String>, Value)> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["surface"] == "mcp")
        .map(|r| {
            (
                r["decision"].as_str().unwrap().to_owned(),
                r["code"].as_str().map(str::to_owned),
                r["request"]["confirmation"].clone(),
            )
        })
        .collect();
    rows.reverse();
    rows
}

#[tokio::test]
async fn a_client_without_elicitation_is_refused_live_trades_until_the_owner_turns_confirmation_off() {
    let t = start().await;
    let url = mcp::url(t.stack.mcp_port);
    let client = connect(&url, &t.creds.terminals[0].key).await.unwrap();
    let before = deals(&t);

    let (code, message) = err(&call(&client, "place_order", live()).await);
    assert_eq!(code, "TRADE_NOT_CONFIRMED", "{message}");
    assert!(
        message.contains("elicitation") && message.contains("nothing was sent"),
        "{message}"
    );
    // Every live trade tool is held, not only place_order; a dry run never asks.
    let (code, _) = err(&call(&client, "close_all_positions", json!({ "dry_run": false })).await);
    assert_eq!(code, "TRADE_NOT_CONFIRMED");
    let dry = call(
        &client,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01 }),
    )
    .await;
    assert_eq!(ok(&dry)["dry_run"], true, "dry runs still work");
    assert_eq!(deals(&t), before, "nothing reached the simulated account");

    // The owner's setting, on the gateway with the master key.
    let owner = t.gateway_as(&t.creds.license_key);
    let settings = owner
        .get("/api/dashboard/license-settings")
        .await
        .data_for("license settings");
    assert_eq!(settings, json!({ "mcp_trade_confirmation": true }), "on by default");
    owner
        .put(
            "/api/dashboard/license-settings",
            &json!({ "mcp_trade_confirmation": "no" }),
        )
        .await
        .failure_for(400, "VALIDATION_ERROR", "a non-boolean setting");
    owner
        .put("/api/dashboard/license-settings", &json!({ "confirm": false }))
        .await
        .failure_for(400, "VALIDATION_ERROR", "an unknown setting");
    t.gateway_as(&t.creds.api_key)
        .put(
            "/api/dashboard/license-settings",
            &json!({ "mcp_trade_confirmation": false }),
        )
        .await
        .failure_for(401, "UNAUTHORIZED", "an API key is not the master key");
    let off = owner
        .put(
            "/api/dashboard/license-settings",
            &json!({ "mcp_trade_confirmation": false }),
        )
        .await
        .data_for("confirmation off");
    assert_eq!(off, json!({ "mcp_trade_confirmation": false }));

    let sent = call(&client, "place_order", live()).await;
    assert_eq!(ok(&sent)["executed"], true, "{:?}", sent.structured_content);
    assert_eq!(deals(&t), before + 1, "confirmation off: the live order executed once");

    let rows = mcp_rows(&t).await;
    let decisions: Vec<(&str, Option<&str>)> = rows.iter().map(|(d, c, _)| (d.as_str(), c.as_deref())).collect();
    assert_eq!(
        decisions,
        [
            ("refused", Some("TRADE_NOT_CONFIRMED")),
            ("dry_run", None),
            ("sent", None)
        ]
    );
    assert_eq!(
        rows[0].2,
        json!({ "required": true, "asked": false, "answer": "unsupported" })
    );
    assert_eq!(rows[1].2, Value::Null, "a dry run has no confirmation");
    assert_eq!(rows[2].2, json!({ "required": false }));
    client.cancel().await.unwrap();
    t.stack.stop().await;
}

#[tokio::test]
async fn an_eliciting_client_is_asked_and_only_its_accept_executes() {
    let t = start().await;
    let url = mcp::url(t.stack.mcp_port);
    let handler = Confirming::answering([
        Answer::Decline,
        Answer::Cancel,
        Answer::AcceptSayingNo,
        Answer::Late(Duration::from_secs(3)),
        Answer::Accept,
    ]);
    let client = connect_confirming(&url, &t.creds.terminals[0].key, handler.clone())
        .await
        .unwrap();
    let before = deals(&t);

    for expected in ["declined", "cancelled", "declined", "did not answer in time"] {
        let (code, message) = err(&call(&client, "place_order", live()).await);
        assert_eq!(code, "TRADE_NOT_CONFIRMED", "{message}");
        assert!(message.contains(expected), "{expected}: {message}");
        assert_eq!(deals(&t), before, "{expected}: nothing was sent");
    }
    let dry = call(
        &client,
        "place_order",
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.01 }),
    )
    .await;
    assert_eq!(ok(&dry)["dry_run"], true);
    assert_eq!(handler.requests().len(), 4, "a dry run never asks");

    let sent = call(&client, "place_order", live()).await;
    let out = ok(&sent);
    assert_eq!(
        (out["dry_run"].clone(), out["executed"].clone()),
        (json!(false), json!(true)),
        "{out}"
    );
    assert_eq!(deals(&t), before + 1, "the accepted order executed exactly once");

    // What the user was shown: a form with one required boolean, and the trade.
    let asked = handler.requests();
    assert_eq!(asked.len(), 5);
    let request = &asked[4];
    assert_eq!(request["mode"], "form");
    assert_eq!(request["requestedSchema"]["required"], json!(["confirm"]));
    assert_eq!(request["requestedSchema"]["properties"]["confirm"]["type"], "boolean");
    let message = request["message"].as_str().unwrap();
    for part in [
        "LIVE trade (place_order)",
        t.terminal(0),
        "OPEN BUY 0.01 lots EURUSD at ",
        "SL 1 TP none",
        "Money at risk at the stop loss: ",
        "USD",
        "within 1 s",
    ] {
        assert!(message.contains(part), "`{part}` missing from:\n{message}");
    }

    // Closing the position is a live trade too: asked, and declined by default.
    let ticket = out["trade"]["position"].as_u64().unwrap();
    let (code, _) = err(&call(&client, "close_position", json!({ "ticket": ticket, "dry_run": false })).await);
    assert_eq!(code, "TRADE_NOT_CONFIRMED");
    let close = handler.requests()[5]["message"].as_str().unwrap().to_owned();
    assert!(
        close.contains(&format!("CLOSE BUY 0.01 lots EURUSD #{ticket}")) && close.contains("floating P&L"),
        "{close}"
    );
    handler.then(Answer::Accept);
    let closed = call(&client, "close_position", json!({ "ticket": ticket, "dry_run": false })).await;
    assert_eq!(ok(&closed)["executed"], true);
    assert_eq!(deals(&t), before + 2);

    // Every answer is on the audit row.
    let rows = mcp_rows(&t).await;
    let answers: Vec<(&str, Option<&str>, Option<&str>)> = rows
        .iter()
        .map(|(d, c, conf)| (d.as_str(), c.as_deref(), conf["answer"].as_str()))
        .collect();
    assert_eq!(
        answers,
        [
            ("refused", Some("TRADE_NOT_CONFIRMED"), Some("decline")),
            ("refused", Some("TRADE_NOT_CONFIRMED"), Some("cancel")),
            ("refused", Some("TRADE_NOT_CONFIRMED"), Some("decline")),
            ("refused", Some("TRADE_NOT_CONFIRMED"), Some("timeout")),
            ("dry_run", None, None),
            ("sent", None, Some("accept")),
        ]
    );
    let accepted = &rows[5].2;
    assert_eq!(accepted["asked"], true);
    assert!(accepted["summary"].as_str().unwrap().contains("EURUSD"), "{accepted}");
    assert!(accepted["money_at_risk"].as_f64().unwrap() > 0.0, "{accepted}");
    client.cancel().await.unwrap();
    t.stack.stop().await;
}
