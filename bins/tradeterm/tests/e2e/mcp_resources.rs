//! MCP resources of the session's terminal over real streamable HTTP with
//! the rmcp client: `resources/list`, `resources/read` (the same tools as
//! every surface), and `resources/subscribe` delivering
//! `notifications/resources/updated` from the event pipeline when a live
//! order changes the positions; another terminal's URI is not found.

use std::time::Duration;

use rmcp::model::{
    ReadResourceRequestParams, ResourceContents, ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::{Expect, Options, mcp, spawn};

/// A client that hands every `notifications/resources/updated` over.
#[derive(Clone)]
struct Updates(mpsc::UnboundedSender<String>);

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

fn text(contents: &ResourceContents) -> Value {
    match contents {
        ResourceContents::TextResourceContents { text, mime_type, .. } => {
            assert_eq!(mime_type.as_deref(), Some("application/json"));
            serde_json::from_str(text).unwrap()
        }
        other => panic!("a text resource, not {other:?}"),
    }
}

#[tokio::test]
#[allow(
    deprecated,
    reason = "resources/subscribe is the subscription of the 2025-11-25 revision this server speaks"
)]
async fn resources_list_read_and_notify_when_a_live_order_changes_them() {
    let t = spawn(Options {
        sims: 2,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let terminal = t.terminal(0).to_owned();
    let other_terminal = t.terminal(1).to_owned();
    let (tx, mut updates) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(mcp::url(t.stack.mcp_port))
            .auth_header(&t.creds.terminals[0].key),
    );
    let client = Updates(tx).serve(transport).await.unwrap();
    let caps = client.peer_info().unwrap().capabilities.resources.clone().unwrap();
    assert_eq!(caps.subscribe, Some(true));

    let listed = client.list_all_resources().await.unwrap();
    let uris: Vec<String> = listed.iter().map(|r| r.uri.clone()).collect();
    let base = format!("tradeterm://terminals/{terminal}");
    assert_eq!(
        uris,
        ["account", "positions", "orders", "alerts", "status"].map(|k| format!("{base}/{k}"))
    );
    let read = |uri: String| {
        let client = client.clone();
        async move { client.read_resource(ReadResourceRequestParams::new(uri)).await }
    };
    let account = text(&read(format!("{base}/account")).await.unwrap().contents[0]);
    assert_eq!(account["trade_mode"], "demo");
    let status = text(&read(format!("{base}/status")).await.unwrap().contents[0]);
    assert_eq!(
        (&status["id"], &status["connected"]),
        (&json!(terminal), &json!(true)),
        "{status}"
    );
    let positions = text(&read(format!("{base}/positions")).await.unwrap().contents[0]);
    let before = positions["positions"].as_array().unwrap().len();
    // Another terminal of the license, and strangers, are not this key's.
    for bad in [
        format!("tradeterm://terminals/{other_terminal}/account"),
        format!("{base}/moon"),
        "file:///etc/passwd".into(),
    ] {
        assert!(read(bad.clone()).await.is_err(), "{bad} must not be readable");
        assert!(
            client
                .subscribe(SubscribeRequestParams::new(bad.clone()))
                .await
                .is_err(),
            "{bad}"
        );
    }

    client
        .subscribe(SubscribeRequestParams::new(format!("{base}/positions")))
        .await
        .unwrap();
    let order = json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false });
    let trade = t.api().on(&terminal).place_order(&order).await.data();
    let position = trade["trade"]["position"].as_u64().unwrap();
    let uri = tokio::time::timeout(Duration::from_secs(10), updates.recv())
        .await
        .expect("a resource update")
        .unwrap();
    assert_eq!(
        uri,
        format!("{base}/positions"),
        "only the subscribed resource is notified"
    );
    let positions = text(&read(format!("{base}/positions")).await.unwrap().contents[0]);
    let list = positions["positions"].as_array().unwrap();
    assert_eq!(list.len(), before + 1);
    assert!(list.iter().any(|p| p["ticket"].as_u64() == Some(position)));
    // Unsubscribed: a close notifies nothing.
    client
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(format!("{base}/positions")))
        .await
        .unwrap();
    while updates.try_recv().is_ok() {}
    t.api()
        .on(&terminal)
        .close_position(position, &json!({ "dry_run": false }))
        .await
        .data();
    assert!(
        tokio::time::timeout(Duration::from_millis(700), updates.recv())
            .await
            .is_err(),
        "no update after unsubscribing"
    );
    client.cancel().await.unwrap();
    t.stack.stop().await;
}
