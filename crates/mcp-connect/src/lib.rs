//! # tradeterm-mcp-connect
//!
//! The stdio connector behind `tradeterm-connect`: a local AI client speaks MCP over stdin/stdout, and
//! every message is relayed to a hosted `/mcp/v1` over HTTP(S) with the
//! terminal key as `Authorization: Bearer`.
//!
//! The relay works message by message with rmcp's transports (newline-
//! delimited JSON-RPC locally, streamable HTTP upstream), so requests,
//! responses and server notifications pass through unchanged, and the local
//! client negotiates with the hosted server itself. That includes requests
//! from the server to the client: the `elicitation/create` that asks the
//! user to confirm a live trade reaches the client, and the client's answer
//! goes back upstream as any other message (checked with the official Python
//! SDK by `bins/tradeterm/tests/external/mcp_confirm.rs`). An answer that
//! cannot be delivered is not sent again: the server then gives up at its
//! time limit and sends nothing to the terminal.
//!
//! **Reconnection.** When the upstream connection drops (the server cannot
//! be reached, restarted and forgot the session, or the upstream stream
//! ended), the connector opens a new upstream session on its own: it replays
//! the client's `initialize` (under a private request id whose answer is not
//! relayed), sends `notifications/initialized`, restores `paper` trading mode
//! if the client had set it (and waits until the server confirms it), and
//! then sends the message that failed. A message is sent again only when it
//! provably did not reach the server (the connection was refused, or the
//! server answered that it does not know the session), or when running it
//! twice is harmless (requests other than tool calls, and tools the server
//! annotates read-only or idempotent); otherwise the client gets a JSON-RPC
//! error for it, since a trading call must never run twice. Connections are
//! not pooled, so a stale connection never blurs that line. While the server
//! is unreachable the connector keeps retrying with backoff for
//! [`ConnectSettings::reconnect_for`].
//!
//! **Architecture invariant:** this crate relays MCP frames and knows nothing
//! else of tradeterm: no tool catalog, no store, no database driver, no
//! server. It depends on rmcp's client and stdio transports only, so the
//! connector binary stays small (`cargo xtask layering` checks it).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, JsonRpcError, RequestId, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig, StreamableHttpError,
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

/// Settings of the connector.
#[derive(Clone)]
pub struct ConnectSettings {
    /// URL of the hosted endpoint, e.g. `https://mcp.example.com/mcp/v1`.
    pub url: String,
    /// The terminal key (`Authorization: Bearer`).
    pub terminal_key: String,
    /// How long to keep retrying an unreachable endpoint for one message
    /// before answering it with an error.
    pub reconnect_for: Duration,
}

impl std::fmt::Debug for ConnectSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectSettings")
            .field("url", &self.url)
            .field("reconnect_for", &self.reconnect_for)
            .finish_non_exhaustive()
    }
}

impl ConnectSettings {
    /// Settings with the default reconnection window (60 s).
    pub fn new(url: impl Into<String>, terminal_key: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            terminal_key: terminal_key.into(),
            reconnect_for: Duration::from_secs(60),
        }
    }
}

/// The command line of the connector (`tradeterm-connect`, and `tradeterm
/// connect` of the all-in-one binary).
#[derive(Clone, clap::Args)]
pub struct ConnectArgs {
    /// URL of the hosted MCP endpoint.
    #[arg(long, env = "TRADETERM_MCP_URL", default_value = "http://127.0.0.1:8090/mcp/v1")]
    pub url: String,
    /// Terminal key (prefer the environment variable: command lines are visible to other local users).
    #[arg(long, env = "TRADETERM_TERMINAL_KEY", hide_env_values = true)]
    pub terminal_key: String,
    /// How long to keep retrying while the endpoint is unreachable, in seconds.
    #[arg(long, default_value_t = 60)]
    pub reconnect_secs: u64,
    /// Tool groups to load, comma-separated (e.g. `market,trading`; `all` for
    /// every group): fewer tools, less of the model's context. Default: the
    /// server's default groups. `set_mode`/`get_mode` are always loaded.
    #[arg(long = "tools", value_name = "GROUP,...", env = "TRADETERM_MCP_TOOLS")]
    pub tools: Option<String>,
    /// Ask for each tool's output schema too (larger tool list; off by default).
    #[arg(long)]
    pub output_schemas: bool,
}

impl std::fmt::Debug for ConnectArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectArgs")
            .field("url", &self.url)
            .field("reconnect_secs", &self.reconnect_secs)
            .field("tools", &self.tools)
            .field("output_schemas", &self.output_schemas)
            .finish_non_exhaustive()
    }
}

impl ConnectArgs {
    /// The connector's settings: `--tools` and `--output-schemas` become the
    /// `groups` and `output_schemas` query parameters of the endpoint URL.
    pub fn settings(self) -> ConnectSettings {
        let mut url = self.url;
        if let Some(tools) = self.tools.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            url = with_query(&url, "groups", tools);
        }
        if self.output_schemas {
            url = with_query(&url, "output_schemas", "true");
        }
        ConnectSettings {
            reconnect_for: Duration::from_secs(self.reconnect_secs),
            ..ConnectSettings::new(url, self.terminal_key)
        }
    }
}

/// `url` with `key=value` added to its query (`value` percent-encoded
/// except for letters, digits, `-`, `_`, `.`, `,` and `*`).
pub fn with_query(url: &str, key: &str, value: &str) -> String {
    use std::fmt::Write as _;

    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let mut out = String::from(base);
    out.push(if base.contains('?') { '&' } else { '?' });
    out.push_str(key);
    out.push('=');
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b',' | b'*') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// Why the connector stopped.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The local side (stdout) failed.
    #[error("writing to the local client failed: {0}")]
    Local(#[from] std::io::Error),
    /// The settings are unusable.
    #[error("{0}")]
    Settings(String),
}

type Upstream = StreamableHttpClientTransport<reqwest::Client>;
type UpstreamError = StreamableHttpError<reqwest::Error>;

/// Prefix of the request ids the connector uses for its own upstream requests.
const PRIVATE_ID: &str = "tradeterm-connect-";

/// Runs the connector on the process's stdin and stdout until stdin closes.
pub async fn run_stdio(settings: ConnectSettings) -> Result<(), ConnectError> {
    let (stdin, stdout) = rmcp::transport::io::stdio();
    run(settings, stdin, stdout).await
}

/// Runs the connector on `read`/`write` (newline-delimited JSON-RPC) until `read` closes.
pub async fn run<R, W>(settings: ConnectSettings, read: R, write: W) -> Result<(), ConnectError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    if !(settings.url.starts_with("http://") || settings.url.starts_with("https://")) {
        return Err(ConnectError::Settings(format!(
            "--url must be an http(s) URL, not `{}`",
            settings.url
        )));
    }
    if settings.terminal_key.trim().is_empty() {
        return Err(ConnectError::Settings(
            "no terminal key: set TRADETERM_TERMINAL_KEY or pass --terminal-key".into(),
        ));
    }
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        // A new connection per message: a pooled connection that went stale when the
        // server restarted would make it impossible to tell whether a message arrived.
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| ConnectError::Settings(format!("HTTP client: {e}")))?;
    let mut local = AsyncRwTransport::<RoleServer, R, W>::new_server(read, write);
    let mut relay = Relay {
        settings,
        http,
        upstream: None,
        generation: 0,
        init: None,
        paper: false,
        mode_calls: HashMap::new(),
        pending: HashSet::new(),
        repeatable_tools: ["get_mode", "set_mode"].into_iter().map(str::to_owned).collect(),
        private_seq: 0,
        init_pending: None,
        held: VecDeque::new(),
        release: false,
    };
    let mut sends: JoinSet<(ClientJsonRpcMessage, u64, Result<(), UpstreamError>)> = JoinSet::new();
    // Once the client closes stdin, answers still due are relayed for up to 30 s.
    let mut closing: Option<tokio::time::Instant> = None;
    loop {
        if let Some(deadline) = closing
            && (relay.pending.is_empty() || tokio::time::Instant::now() >= deadline)
        {
            break;
        }
        tokio::select! {
            msg = local.receive(), if closing.is_none() => {
                let Some(msg) = msg else {
                    closing = Some(tokio::time::Instant::now() + Duration::from_secs(30));
                    continue;
                };
                if let Some(reply) = relay.on_client_message(msg, &mut sends).await {
                    relay.answered(&reply);
                    local.send(reply).await?;
                }
                relay.release_held(&mut local, &mut sends).await?;
            }
            _ = tokio::time::sleep_until(closing.unwrap_or_else(tokio::time::Instant::now)), if closing.is_some() => {}
            msg = relay.upstream_receive() => match msg {
                Some(msg) => {
                    if let Some(msg) = relay.on_server_message(msg) {
                        relay.answered(&msg);
                        local.send(msg).await?;
                    }
                    relay.release_held(&mut local, &mut sends).await?;
                }
                None => {
                    tracing::warn!("the upstream MCP connection ended; reconnecting on the next message");
                    relay.drop_upstream().await;
                }
            },
            Some(done) = sends.join_next() => {
                let Ok((msg, generation, result)) = done else { continue };
                if let Err(e) = result
                    && let Some(reply) = relay.send_failed(msg, generation, e, &mut sends).await
                {
                    relay.answered(&reply);
                    local.send(reply).await?;
                }
                relay.release_held(&mut local, &mut sends).await?;
            }
        }
    }
    relay.drop_upstream().await;
    let _ = local.close().await;
    Ok(())
}

struct Relay {
    settings: ConnectSettings,
    http: reqwest::Client,
    upstream: Option<Upstream>,
    /// Incremented each time a new upstream session is opened.
    generation: u64,
    /// The client's `initialize`, replayed on reconnection.
    init: Option<ClientJsonRpcMessage>,
    /// Whether the client set `paper` mode (restored on reconnection).
    paper: bool,
    /// `set_mode` calls in flight: request id → requested mode.
    mode_calls: HashMap<String, String>,
    /// Ids of the client's requests not answered yet.
    pending: HashSet<String>,
    /// Tools the server annotates read-only or idempotent (from `tools/list`
    /// answers): calls of these may be sent again when a connection fails.
    repeatable_tools: HashSet<String>,
    private_seq: u64,
    /// Id of the client's `initialize` while its answer is awaited: the
    /// upstream session (its `Mcp-Session-Id`) exists only once the server has
    /// answered, so the client's next messages wait in `held` until then.
    init_pending: Option<String>,
    /// Client messages received while `initialize` was unanswered, in order.
    held: VecDeque<ClientJsonRpcMessage>,
    /// Set when the answer to `init_pending` went to the client: `held` may go.
    release: bool,
}

fn to_value<T: serde::Serialize>(msg: &T) -> Value {
    serde_json::to_value(msg).unwrap_or(Value::Null)
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

/// A JSON-RPC error for the local client.
fn error_reply(id: RequestId, message: String) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::Error(JsonRpcError::new(
        Some(id),
        ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None),
    ))
}

fn request_id(msg: &ClientJsonRpcMessage) -> Option<RequestId> {
    match msg {
        ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

fn is_initialize(msg: &ClientJsonRpcMessage) -> bool {
    to_value(msg)["method"] == "initialize"
}

/// Whether the message provably did not reach the server, so sending it again is safe.
fn not_delivered(e: &UpstreamError) -> bool {
    match e {
        StreamableHttpError::Client(e) => e.is_connect(),
        StreamableHttpError::SessionExpired | StreamableHttpError::TransportChannelClosed => true,
        StreamableHttpError::HttpStatus(s) => s.status == 503,
        _ => false,
    }
}

/// Whether the connection failed (the message may or may not have arrived).
fn connection_failed(e: &UpstreamError) -> bool {
    matches!(
        e,
        StreamableHttpError::Client(_)
            | StreamableHttpError::Sse(_)
            | StreamableHttpError::Io(_)
            | StreamableHttpError::UnexpectedEndOfStream
    ) || not_delivered(e)
}

impl Relay {
    fn new_upstream(&self) -> Upstream {
        let config = StreamableHttpClientTransportConfig::with_uri(self.settings.url.as_str())
            .auth_header(self.settings.terminal_key.clone())
            .reinit_on_expired_session(false);
        StreamableHttpClientTransport::with_client(self.http.clone(), config)
    }

    fn private_id(&mut self) -> Value {
        self.private_seq += 1;
        json!(format!("{PRIVATE_ID}{}", self.private_seq))
    }

    async fn upstream_receive(&mut self) -> Option<ServerJsonRpcMessage> {
        match &mut self.upstream {
            Some(u) => u.receive().await,
            None => std::future::pending().await,
        }
    }

    async fn drop_upstream(&mut self) {
        if let Some(mut u) = self.upstream.take() {
            // Ends the upstream session (DELETE) when the server can still be reached.
            let _ = tokio::time::timeout(Duration::from_secs(2), u.close()).await;
        }
    }

    /// Opens an upstream session for the messages after `initialize`: replays
    /// the client's `initialize` privately, then `initialized`, then `paper` mode.
    async fn open_session(&mut self) -> Result<(), String> {
        self.drop_upstream().await;
        let mut upstream = self.new_upstream();
        self.generation += 1;
        if let Some(init) = &self.init {
            let mut replay = to_value(init);
            replay["id"] = self.private_id();
            let replay: ClientJsonRpcMessage = serde_json::from_value(replay).map_err(|e| e.to_string())?;
            upstream.send(replay).await.map_err(|e| describe(&e))?;
            let answer = tokio::time::timeout(Duration::from_secs(30), upstream.receive())
                .await
                .map_err(|_| "the hosted server did not answer initialize".to_owned())?
                .ok_or_else(|| "the upstream connection closed during initialize".to_owned())?;
            if let ServerJsonRpcMessage::Error(e) = answer {
                return Err(format!("the hosted server refused initialize: {}", e.error.message));
            }
            let initialized: ClientJsonRpcMessage =
                serde_json::from_value(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                    .map_err(|e| e.to_string())?;
            upstream.send(initialized).await.map_err(|e| describe(&e))?;
            if self.paper {
                // Paper mode must be in force before any client message reaches the
                // new session, so its answer is awaited (fail closed otherwise).
                let id = self.private_id();
                let restore: ClientJsonRpcMessage = serde_json::from_value(json!({
                    "jsonrpc": "2.0",
                    "id": id.clone(),
                    "method": "tools/call",
                    "params": { "name": "set_mode", "arguments": { "mode": "paper" } }
                }))
                .map_err(|e| e.to_string())?;
                upstream.send(restore).await.map_err(|e| describe(&e))?;
                let answered = tokio::time::timeout(Duration::from_secs(30), async {
                    while let Some(msg) = upstream.receive().await {
                        let v = to_value(&msg);
                        if v["id"] == id {
                            return v["result"]["structuredContent"]["mode"] == "paper";
                        }
                    }
                    false
                })
                .await;
                if answered != Ok(true) {
                    return Err("could not restore paper mode on the new session".to_owned());
                }
            }
            tracing::info!("upstream MCP session re-initialised");
        }
        self.upstream = Some(upstream);
        Ok(())
    }

    /// Sends `msg` upstream (opening a session first when there is none).
    async fn forward(
        &mut self,
        msg: ClientJsonRpcMessage,
        sends: &mut JoinSet<(ClientJsonRpcMessage, u64, Result<(), UpstreamError>)>,
    ) -> Option<ServerJsonRpcMessage> {
        if self.upstream.is_none() || is_initialize(&msg) {
            if is_initialize(&msg) {
                // The client's own initialize opens the session; its answer is relayed.
                self.drop_upstream().await;
                self.upstream = Some(self.new_upstream());
                self.generation += 1;
            } else if let Err(e) = self.reconnect().await {
                return request_id(&msg).map(|id| error_reply(id, e));
            }
        }
        let upstream = self.upstream.as_mut()?;
        let send = upstream.send(msg.clone());
        let generation = self.generation;
        if to_value(&msg)["method"] == "notifications/initialized" {
            // The server must have taken `initialized` before any request of the
            // session arrives (separate HTTP requests may otherwise be handled
            // out of order, and a request before `initialized` is refused): this
            // one is sent before the relay goes on.
            let result = send.await;
            sends.spawn(async move { (msg, generation, result) });
            return None;
        }
        sends.spawn(async move { (msg, generation, send.await) });
        None
    }

    /// Opens a new upstream session, retrying with backoff while the server is unreachable.
    async fn reconnect(&mut self) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + self.settings.reconnect_for;
        let mut delay = Duration::from_millis(200);
        loop {
            match self.open_session().await {
                Ok(()) => return Ok(()),
                Err(e) if tokio::time::Instant::now() + delay < deadline => {
                    tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, "cannot reach the hosted MCP server");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Err(e) => {
                    self.drop_upstream().await;
                    return Err(format!(
                        "tradeterm-connect: cannot reach {} ({e}); retried for {} s",
                        self.settings.url,
                        self.settings.reconnect_for.as_secs()
                    ));
                }
            }
        }
    }

    /// Whether running `msg` twice has the effect of running it once: requests
    /// other than `tools/call` (lists, ping), and calls of read-only or
    /// idempotent tools.
    fn repeatable(&self, msg: &ClientJsonRpcMessage) -> bool {
        let v = to_value(msg);
        match v["method"].as_str() {
            Some("tools/call") => v["params"]["name"]
                .as_str()
                .is_some_and(|n| self.repeatable_tools.contains(n)),
            Some("initialize") | None => false,
            Some(_) => v.get("id").is_some(),
        }
    }

    async fn on_client_message(
        &mut self,
        msg: ClientJsonRpcMessage,
        sends: &mut JoinSet<(ClientJsonRpcMessage, u64, Result<(), UpstreamError>)>,
    ) -> Option<ServerJsonRpcMessage> {
        let v = to_value(&msg);
        if v.get("method").is_some() && v.get("id").is_some() {
            self.pending.insert(id_key(&v["id"]));
        }
        if self.init_pending.is_some() && !is_initialize(&msg) {
            // Not before the session exists (see `init_pending`).
            self.held.push_back(msg);
            return None;
        }
        match v["method"].as_str() {
            Some("initialize") => {
                self.init = Some(msg.clone());
                self.init_pending = Some(id_key(&v["id"]));
            }
            Some("tools/call") if v["params"]["name"] == "set_mode" => {
                if let Some(mode) = v["params"]["arguments"]["mode"].as_str() {
                    self.mode_calls.insert(id_key(&v["id"]), mode.to_owned());
                }
            }
            _ => {}
        }
        self.forward(msg, sends).await
    }

    /// Records that a message to the client answers one of its requests.
    fn answered(&mut self, msg: &ServerJsonRpcMessage) {
        let v = to_value(msg);
        if v.get("method").is_none() {
            let id = id_key(&v["id"]);
            if self.init_pending.as_ref() == Some(&id) {
                self.init_pending = None;
                self.release = true;
            }
            self.pending.remove(&id);
        }
    }

    /// Once `initialize` is answered, forwards the messages held meanwhile, in order.
    async fn release_held<R, W>(
        &mut self,
        local: &mut AsyncRwTransport<RoleServer, R, W>,
        sends: &mut JoinSet<(ClientJsonRpcMessage, u64, Result<(), UpstreamError>)>,
    ) -> Result<(), ConnectError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        if !std::mem::take(&mut self.release) {
            return Ok(());
        }
        while self.init_pending.is_none()
            && let Some(msg) = self.held.pop_front()
        {
            if let Some(reply) = self.on_client_message(msg, sends).await {
                self.answered(&reply);
                local.send(reply).await?;
            }
        }
        Ok(())
    }

    /// A message from the server: relayed, unless it answers one of the connector's own requests.
    fn on_server_message(&mut self, msg: ServerJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        let v = to_value(&msg);
        if v["id"].as_str().is_some_and(|id| id.starts_with(PRIVATE_ID)) {
            if v.get("error").is_some() {
                tracing::warn!(answer = %v, "the hosted server refused a request of the connector");
            }
            return None;
        }
        if let Some(tools) = v["result"]["tools"].as_array() {
            for t in tools {
                let (Some(name), a) = (t["name"].as_str(), &t["annotations"]) else {
                    continue;
                };
                if a["readOnlyHint"] == true || a["idempotentHint"] == true {
                    self.repeatable_tools.insert(name.to_owned());
                } else {
                    self.repeatable_tools.remove(name);
                }
            }
        }
        if let Some(mode) = self.mode_calls.remove(&id_key(&v["id"]))
            && v["result"]["isError"] != json!(true)
            && v.get("result").is_some()
        {
            self.paper = mode == "paper";
        }
        Some(msg)
    }

    /// An upstream send failed: re-send after reconnecting when that is safe,
    /// else answer the client's request with an error.
    async fn send_failed(
        &mut self,
        msg: ClientJsonRpcMessage,
        generation: u64,
        error: UpstreamError,
        sends: &mut JoinSet<(ClientJsonRpcMessage, u64, Result<(), UpstreamError>)>,
    ) -> Option<ServerJsonRpcMessage> {
        if !(not_delivered(&error) || (connection_failed(&error) && self.repeatable(&msg))) {
            tracing::warn!(error = %error, "upstream request failed");
            if matches!(error, StreamableHttpError::Client(_) | StreamableHttpError::Sse(_))
                && generation == self.generation
            {
                self.drop_upstream().await;
            }
            return request_id(&msg).map(|id| error_reply(id, format!("tradeterm-connect: {}", describe(&error))));
        }
        tracing::warn!(error = %error, "upstream connection lost; reconnecting");
        if generation == self.generation {
            self.drop_upstream().await;
        }
        if is_initialize(&msg) {
            // The first session never opened: retry the client's initialize itself.
            let deadline = tokio::time::Instant::now() + self.settings.reconnect_for;
            let mut delay = Duration::from_millis(200);
            loop {
                let mut upstream = self.new_upstream();
                match upstream.send(msg.clone()).await {
                    Ok(()) => {
                        self.generation += 1;
                        self.upstream = Some(upstream);
                        return None;
                    }
                    Err(e) if not_delivered(&e) && tokio::time::Instant::now() + delay < deadline => {
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(2));
                    }
                    Err(e) => {
                        return request_id(&msg)
                            .map(|id| error_reply(id, format!("tradeterm-connect: {}", describe(&e))));
                    }
                }
            }
        }
        if self.upstream.is_none()
            && let Err(e) = self.reconnect().await
        {
            return request_id(&msg).map(|id| error_reply(id, e));
        }
        self.forward(msg, sends).await
    }
}

/// A readable description of an upstream failure (HTTP status and the
/// server's `{ "error": { "message" } }` when it sent one).
fn describe(e: &UpstreamError) -> String {
    match e {
        StreamableHttpError::UnexpectedServerResponse(text) => {
            let body = text.split_once(": ").map(|(_, b)| b).unwrap_or(text);
            match serde_json::from_str::<Value>(body) {
                Ok(v) if v["error"]["message"].is_string() => {
                    format!(
                        "{} ({})",
                        v["error"]["message"].as_str().unwrap_or_default(),
                        text.split(':').next().unwrap_or("")
                    )
                }
                _ => text.to_string(),
            }
        }
        StreamableHttpError::Client(c) if c.is_connect() => format!("cannot connect: {c}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: ConnectArgs,
    }

    fn parse(args: &[&str]) -> ConnectSettings {
        use clap::Parser as _;
        let mut argv = vec!["tradeterm-connect", "--terminal-key", "k"];
        argv.extend_from_slice(args);
        Cli::parse_from(argv).args.settings()
    }

    #[test]
    fn tools_and_output_schemas_flags_become_query_parameters() {
        let base = "http://127.0.0.1:8090/mcp/v1";
        assert_eq!(parse(&["--url", base]).url, base);
        assert_eq!(
            parse(&["--url", base, "--tools", "market,prop-firm"]).url,
            format!("{base}?groups=market,prop-firm")
        );
        assert_eq!(
            parse(&["--url", base, "--tools", "market", "--output-schemas"]).url,
            format!("{base}?groups=market&output_schemas=true")
        );
        assert_eq!(
            with_query("https://h/mcp/v1?x=1#f", "groups", "a b&c"),
            "https://h/mcp/v1?x=1&groups=a%20b%26c#f"
        );
    }

    #[test]
    fn server_error_bodies_are_made_readable() {
        let e: UpstreamError = StreamableHttpError::UnexpectedServerResponse(
            "HTTP 401 Unauthorized: {\"error\":{\"code\":\"UNAUTHORIZED\",\"message\":\"invalid or revoked terminal key\"}}".into(),
        );
        assert_eq!(describe(&e), "invalid or revoked terminal key (HTTP 401 Unauthorized)");
        assert!(not_delivered(&StreamableHttpError::SessionExpired));
        assert!(!not_delivered(&e));
    }

    /// What the fake server saw: (JSON-RPC method, `Mcp-Session-Id` header).
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

    /// A streamable-HTTP MCP server that answers `initialize` slowly (and
    /// only then assigns a session), like a loaded server.
    async fn slow_initialize_server(seen: Seen) -> String {
        use axum::http::{HeaderMap, StatusCode, header};
        use axum::response::IntoResponse;
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let seen = seen.clone();
                async move {
                    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let method = v["method"].as_str().unwrap_or_default().to_owned();
                    let session = headers
                        .get("mcp-session-id")
                        .and_then(|h| h.to_str().ok())
                        .map(str::to_owned);
                    if method == "notifications/initialized" {
                        // Slow to take `initialized`: a request sent meanwhile would overtake it.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    seen.lock().unwrap().push((method.clone(), session));
                    let json = [(header::CONTENT_TYPE, "application/json")];
                    match method.as_str() {
                        "initialize" => {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            let answer = json!({ "jsonrpc": "2.0", "id": v["id"], "result": {
                                "protocolVersion": "2025-06-18", "capabilities": { "tools": {} },
                                "serverInfo": { "name": "slow", "version": "1" } } });
                            (
                                [
                                    (header::CONTENT_TYPE, "application/json"),
                                    (header::HeaderName::from_static("mcp-session-id"), "s1"),
                                ],
                                answer.to_string(),
                            )
                                .into_response()
                        }
                        m if m.starts_with("notifications/") => StatusCode::ACCEPTED.into_response(),
                        _ => {
                            let answer = json!({ "jsonrpc": "2.0", "id": v["id"], "result": { "tools": [] } });
                            (json, answer.to_string()).into_response()
                        }
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// Sends are spawned tasks: on a multi-threaded runtime they would reach
    /// the upstream transport in any order. The transport takes its first
    /// message as the session's start, so a request that overtook
    /// `initialize` would open a session-less (stateless) exchange, which the
    /// server refuses. Repeated to give a reordering a chance to show.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn messages_sent_right_after_initialize_wait_for_the_session() {
        for _ in 0..6 {
            client_that_does_not_wait_for_initialize().await;
        }
    }

    async fn client_that_does_not_wait_for_initialize() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let seen = Seen::default();
        let url = slow_initialize_server(seen.clone()).await;
        let (client, connector) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(connector);
        let relay = tokio::spawn(run(ConnectSettings::new(url, "key"), read, write));
        let (client_read, mut client_write) = tokio::io::split(client);
        // A client that does not wait for the initialize answer before sending on.
        for line in [
            json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
        ] {
            client_write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        }
        let mut lines = tokio::io::BufReader::new(client_read).lines();
        let mut ids = Vec::new();
        while ids.len() < 2 {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("answers arrive")
                .unwrap()
                .expect("the connector is running");
            ids.push(serde_json::from_str::<Value>(&line).unwrap()["id"].clone());
        }
        assert_eq!(ids, [json!(1), json!(2)], "answers in order");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen[0], ("initialize".to_owned(), None), "{seen:?}");
        for (method, session) in &seen[1..] {
            assert_eq!(
                session.as_deref(),
                Some("s1"),
                "{method} was sent before the session existed: {seen:?}"
            );
        }
        let order: Vec<&str> = seen.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            order,
            ["initialize", "notifications/initialized", "tools/list"],
            "the server took the messages in the client's order"
        );
        drop(client_write);
        relay.abort();
    }
}
