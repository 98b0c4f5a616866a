//! Live MCP trades confirmed by a human, with the official MCP Python SDK's
//! elicitation callback (`scripts/interop/mcp_confirm.py`): no capability,
//! decline, cancel, timeout and accept over the SDK's streamable HTTP
//! client, then a decline and an accept relayed by the stdio connector. The
//! simulator's deals (and, in the script, `get_deal_history`) prove that
//! only the accepted order and its accepted close executed, once each.

use std::process::Command;

use serde_json::json;

use crate::connect::{connector, interop_summary, repo_root, require_python_mcp};
use crate::harness::{Expect, Options, spawn_with};

/// The server's confirmation limit in this test, seconds.
const LIMIT_SECS: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_confirms_live_trades_with_its_elicitation_callback() {
    require_python_mcp();
    let t = spawn_with(
        Options {
            sims: 1,
            allow_trading: true,
            ..Options::default()
        },
        |s| s.mcp_trade_confirm_timeout_secs = LIMIT_SECS,
    )
    .await;
    let url = format!("http://127.0.0.1:{}/mcp/v1", t.stack.mcp_port);
    let key = t.creds.terminals[0].key.clone();
    let deals_before = t.stack.simulators()[0].deals().len();
    let script = repo_root().join("scripts/interop/mcp_confirm.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .args(["--url", &url, "--connector", connector()])
        .args(["--limit-secs", &LIMIT_SECS.to_string()])
        .env("TRADETERM_TERMINAL_KEY", key);
    let summary = interop_summary(cmd).await;
    assert_eq!(summary["no_capability"], "TRADE_NOT_CONFIRMED", "{summary}");
    assert_eq!(
        summary["http"],
        json!([
            "TRADE_NOT_CONFIRMED",
            "TRADE_NOT_CONFIRMED",
            "TRADE_NOT_CONFIRMED",
            "accepted"
        ]),
        "{summary}"
    );
    assert_eq!(summary["connector"], json!(["TRADE_NOT_CONFIRMED", "accepted"]));
    assert_eq!(summary["new_deals"], 2, "{summary}");
    // The simulator agrees: the accepted order and its accepted close, nothing else.
    let deals = t.stack.simulators()[0].deals();
    assert_eq!(deals.len(), deals_before + 2, "{summary}");
    let position = summary["position"].as_u64().unwrap();
    assert!(
        deals[deals_before..].iter().all(|d| d.position == position),
        "{deals:?}"
    );

    // Each answer is on the audit row of its call.
    let page = t.master().get("/api/v1/audit?limit=100").await.data_for("audit");
    let answers: Vec<(String, String, Option<String>)> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .filter(|r| r["surface"] == "mcp" && r["request"]["dry_run"] == false)
        .map(|r| {
            (
                r["tool"].as_str().unwrap().to_owned(),
                r["decision"].as_str().unwrap().to_owned(),
                r["request"]["confirmation"]["answer"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let expect =
        |tool: &str, decision: &str, answer: &str| (tool.to_owned(), decision.to_owned(), Some(answer.to_owned()));
    assert_eq!(
        answers,
        [
            expect("place_order", "refused", "unsupported"),
            expect("place_order", "refused", "decline"),
            expect("place_order", "refused", "cancel"),
            expect("place_order", "refused", "timeout"),
            expect("place_order", "sent", "accept"),
            expect("close_position", "refused", "decline"),
            expect("close_position", "sent", "accept"),
        ]
    );
    t.stack.stop().await;
}
