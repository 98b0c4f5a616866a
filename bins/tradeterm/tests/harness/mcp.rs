//! An rmcp client of the stack's MCP endpoint (`/mcp/v1`) over real HTTP.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// A connected MCP client session.
pub type Client = RunningService<RoleClient, ()>;

/// The MCP endpoint of a server listening on `port`.
pub fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp/v1")
}

/// An rmcp client of `url` authenticated with `key` (initialized), or the
/// connection error as text.
pub async fn connect(url: &str, key: &str) -> Result<Client, String> {
    let transport = StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(key),
    );
    ().serve(transport).await.map_err(|e| e.to_string())
}

/// `tools/call` of `name` with `args` (an object); a protocol error fails the test.
pub async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Structured content of a successful call.
#[track_caller]
pub fn ok(r: &CallToolResult) -> &Value {
    assert_ne!(r.is_error, Some(true), "tool error: {:?}", r.structured_content);
    r.structured_content.as_ref().expect("structured content")
}

/// `(code, message)` of a tool error, checking the text carries the code too.
#[track_caller]
pub fn err(r: &CallToolResult) -> (String, String) {
    assert_eq!(
        r.is_error,
        Some(true),
        "expected a tool error, got {:?}",
        r.structured_content
    );
    let s = r.structured_content.as_ref().expect("structured error");
    let code = s["code"].as_str().unwrap().to_owned();
    let text = serde_json::to_value(&r.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with(&format!("{code}: ")),
        "text `{text}` must carry the code"
    );
    (code, s["message"].as_str().unwrap().to_owned())
}
