//! An rmcp client of the stack's MCP endpoint (`/mcp/v1`) over real HTTP.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

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

/// How a [`Confirming`] client answers the next `elicitation/create`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `accept` with `{"confirm": true}`.
    Accept,
    /// `accept` with `{"confirm": false}`.
    AcceptSayingNo,
    /// `decline`.
    Decline,
    /// `cancel`.
    Cancel,
    /// Accepts only after this long (past the server's limit).
    Late(Duration),
}

/// A client declaring the elicitation capability that answers with the
/// queued [`Answer`]s in order (`decline` once they run out) and keeps
/// every request it was sent.
#[derive(Debug, Clone, Default)]
pub struct Confirming {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    /// The `elicitation/create` parameters received, in order (as JSON).
    pub asked: Arc<Mutex<Vec<Value>>>,
}

impl Confirming {
    /// A client answering `answers` in order.
    pub fn answering(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            asked: Arc::default(),
        }
    }

    /// Queues one more answer.
    pub fn then(&self, answer: Answer) {
        self.answers.lock().unwrap().push_back(answer);
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for Confirming {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities = serde_json::from_value::<ClientCapabilities>(json!({ "elicitation": { "form": {} } }))
            .expect("client capabilities");
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.lock().unwrap().push(serde_json::to_value(&request).unwrap());
        let answer = self.answers.lock().unwrap().pop_front().unwrap_or(Answer::Decline);
        let yes = || ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "confirm": true }));
        Ok(match answer {
            Answer::Accept => yes(),
            Answer::AcceptSayingNo => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "confirm": false }))
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Answer::Late(after) => {
                tokio::time::sleep(after).await;
                yes()
            }
        })
    }
}

/// An rmcp client of `url` with `key` that answers elicitation with `handler`.
pub async fn connect_confirming(
    url: &str,
    key: &str,
    handler: Confirming,
) -> Result<RunningService<RoleClient, Confirming>, String> {
    let transport = StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(key),
    );
    handler.serve(transport).await.map_err(|e| e.to_string())
}

/// `tools/call` of `name` with `args` (an object); a protocol error fails the test.
pub async fn call<H: ClientHandler>(client: &RunningService<RoleClient, H>, name: &str, args: Value) -> CallToolResult {
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
