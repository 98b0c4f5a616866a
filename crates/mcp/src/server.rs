//! One MCP session: the rmcp server handler.
//!
//! rmcp creates one [`Session`] per MCP session (at `initialize`), so the
//! session trading mode lives here. The server speaks the protocol revisions
//! that have sessions (up to `2025-11-25`): the trading mode is session state,
//! and the stateless revision (`2026-07-28`) has no session to hold it.
//! Clients that probe `server/discover` first fall back to `initialize`.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, SubscribeRequestParams, Tool as McpTool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;
use tradeterm_tools::{Invocation, TerminalChoice, ToolError};

use crate::McpState;
use crate::auth::Caller;
use crate::sessions::{Live, SessionRecord};
use crate::tools::{ToolListOptions, annotations, charted_success, failure, success, tool_error};

/// Names of the MCP-only session tools.
pub const SESSION_TOOLS: [&str; 2] = ["set_mode", "get_mode"];

/// Trading mode of an MCP session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TradingMode {
    /// Trading tools behave as on every surface: dry run unless `"dry_run": false`.
    #[default]
    Live,
    /// Every trading tool is a dry run, whatever its `dry_run` says.
    Paper,
}

/// Input of `set_mode`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetModeInput {
    /// `paper`: from now on every trading tool of this session is a dry run,
    /// even with `"dry_run": false`. `live`: trading tools follow their
    /// `dry_run` input again (which still defaults to `true`; `live` is not a
    /// trading confirmation).
    mode: TradingMode,
}

/// Input of `get_mode`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetModeInput {}

/// Output of `set_mode` and `get_mode`.
#[derive(Debug, Serialize, JsonSchema)]
struct ModeOutput {
    /// The session's trading mode.
    mode: TradingMode,
    /// Whether trading tools are forced to dry runs (`paper` mode).
    forces_dry_run: bool,
    /// What the mode means for the next trading calls.
    note: &'static str,
}

fn mode_output(mode: TradingMode) -> Value {
    let out = ModeOutput {
        mode,
        forces_dry_run: mode == TradingMode::Paper,
        note: match mode {
            TradingMode::Paper => "paper mode: every trading tool is a dry run for the rest of this session",
            TradingMode::Live => {
                "live mode: trading tools are dry runs unless called with \"dry_run\": false (live execution also needs the trade capability and the terminal's trading permission)"
            }
        },
    };
    serde_json::to_value(out).unwrap_or(Value::Null)
}

fn object_schema(v: Value) -> Arc<rmcp::model::JsonObject> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

/// The MCP definitions of `set_mode` and `get_mode` (input schemas in lean
/// form; output schemas when asked for).
pub(crate) fn session_tools(output_schemas: bool, budgets: crate::compact::Budgets) -> Vec<McpTool> {
    let output = object_schema(tradeterm_tools::output_schema_of::<ModeOutput>());
    let input = |schema: Value| object_schema(crate::compact::compact_input_schema(&schema, budgets));
    let describe = |text: &str| crate::compact::shorten(text, budgets.tool);
    let tools = vec![
        McpTool::new(
            "set_mode",
            describe("Sets this MCP session's trading mode. `paper` forces every trading tool (place_order, close_position, \
             modify_position, reverse_position, cancel_order) to a dry run for the rest of the session; `live` returns to \
             normal behaviour, where trading tools are still dry runs unless called with \"dry_run\": false. The mode \
             belongs to this session only; a new session starts in `live`."),
            input(tradeterm_tools::schema_of::<SetModeInput>()),
        )
        .with_annotations(annotations(false, false, true, false)),
        McpTool::new(
            "get_mode",
            describe("This MCP session's trading mode: `live` (the default) or `paper` (every trading tool is a dry run)."),
            input(tradeterm_tools::schema_of::<GetModeInput>()),
        )
        .with_annotations(annotations(true, false, true, false)),
    ];
    if !output_schemas {
        return tools;
    }
    tools
        .into_iter()
        .zip(["Set the session trading mode", "Get the session trading mode"])
        .map(|(t, title)| t.with_title(title).with_raw_output_schema(output.clone()))
        .collect()
}

/// The handler of one MCP session while its rmcp worker runs.
///
/// What the session is (owner, trading mode, tool list, slot) lives in its
/// [`SessionRecord`], which outlives the handler when the session is parked
/// (`crate::sessions`) and is taken back when it returns, so the handler
/// itself holds nearly nothing.
#[derive(Clone)]
pub(crate) struct Session {
    state: McpState,
    /// The session's record, taken at `initialize`: from the opening
    /// request, or from the records when a parked session comes back.
    record: Arc<OnceLock<Arc<SessionRecord>>>,
    /// Counts this handler in the record while it runs (none: parked).
    live: Arc<OnceLock<Live>>,
    /// `resources/subscribe` of this session (`crate::resources`); they end
    /// with the worker, so a session with subscriptions is never parked.
    subscriptions: Arc<crate::resources::Subscriptions>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("mode", &self.mode())
            .finish_non_exhaustive()
    }
}

fn caller(extensions: &rmcp::model::Extensions) -> Option<Caller> {
    extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Caller>()
        .cloned()
}

impl Session {
    pub(crate) fn new(state: McpState) -> Self {
        Self {
            state,
            record: Arc::default(),
            live: Arc::default(),
            subscriptions: Arc::default(),
        }
    }

    /// The session's tool-list options (the operator's defaults until `initialize` fixed them).
    fn list_options(&self) -> ToolListOptions {
        self.record
            .get()
            .and_then(|r| r.list.get().cloned())
            .unwrap_or_else(|| self.state.default_list())
    }

    /// The trading mode (`paper` if it cannot be read: never more than asked).
    fn mode(&self) -> TradingMode {
        self.record
            .get()
            .and_then(|r| r.mode.lock().ok().map(|m| *m))
            .unwrap_or(TradingMode::Paper)
    }

    fn set_mode(&self, mode: TradingMode) {
        if let Some(r) = self.record.get()
            && let Ok(mut m) = r.mode.lock()
        {
            *m = mode;
        }
    }

    /// The record this handler serves, at `initialize`: its own once set; a
    /// parked session's when rmcp brings it back (the replayed `initialize`
    /// carries the session id); else the opening request's.
    fn take_record(&self, context: &RequestContext<RoleServer>) -> Result<Arc<SessionRecord>, McpError> {
        if let Some(record) = self.record.get() {
            return Ok(record.clone());
        }
        let record = match context
            .extensions
            .get::<rmcp::transport::streamable_http_server::SessionRestoreMarker>()
        {
            Some(marker) => self
                .state
                .sessions()
                .get(marker.id.as_ref())
                .ok_or_else(|| McpError::invalid_request("this MCP session has expired; open a new one", None))?,
            None => context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.extensions.get::<Arc<SessionRecord>>())
                .cloned()
                .ok_or_else(|| McpError::internal_error("an MCP session opened without its record", None))?,
        };
        let record = self.record.get_or_init(|| record).clone();
        let _ = self.live.set(record.live());
        Ok(record)
    }

    /// The caller of this request, who must be the session's owner.
    fn authorized(&self, context: &RequestContext<RoleServer>) -> Result<Caller, McpError> {
        let Some(caller) = caller(&context.extensions) else {
            return Err(McpError::internal_error(
                "request reached the MCP handler unauthenticated",
                None,
            ));
        };
        let Some(record) = self.record.get() else {
            return Err(McpError::invalid_request("this MCP session is not initialized", None));
        };
        let me = (caller.license_id().to_owned(), caller.terminal_id().to_owned());
        let owner = record.owner.get_or_init(|| me.clone());
        if *owner != me {
            return Err(McpError::invalid_request(
                "this MCP session belongs to another terminal key",
                None,
            ));
        }
        Ok(caller)
    }

    fn session_tool(&self, name: &str, args: Value) -> CallToolResponse {
        let result = match name {
            "set_mode" => match serde_json::from_value::<SetModeInput>(args) {
                Ok(input) => {
                    self.set_mode(input.mode);
                    tracing::info!(mode = ?input.mode, "MCP session trading mode set");
                    success(mode_output(input.mode))
                }
                Err(e) => failure(
                    "VALIDATION_ERROR",
                    &format!("{e}; expected {{ \"mode\": \"live\" | \"paper\" }}"),
                    None,
                ),
            },
            _ => match serde_json::from_value::<GetModeInput>(args) {
                Ok(_) => success(mode_output(self.mode())),
                Err(e) => failure("VALIDATION_ERROR", &e.to_string(), None),
            },
        };
        result.into()
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> InitializeResult {
        let mut info = InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        );
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info.server_info = Implementation::new("tradeterm", env!("CARGO_PKG_VERSION"));
        info.server_info.title = Some("tradeterm trading terminal".into());
        info.instructions = Some(
            "Tools of one MetaTrader-style trading terminal (the one the terminal key is bound to): market data, \
             account, positions, orders, journal and analytics. Trading tools are dry runs unless called with \
             \"dry_run\": false; `set_mode` with `paper` forces dry runs for the rest of the session. A live trade \
             asks the user to confirm it first (MCP elicitation) unless the license owner turned that off; without \
             an accept nothing is sent (TRADE_NOT_CONFIRMED). Errors come back as tool errors with a `code` \
             (VALIDATION_ERROR, FORBIDDEN, TRADING_DISABLED, TRADE_NOT_CONFIRMED, ORDER_REJECTED, RATE_LIMITED, \
             DISPATCH_ERROR, ...). Resources `tradeterm://terminals/{id}/account|positions|orders|alerts|status` \
             read the terminal's state; subscribe to them to be told when they change."
                .into(),
        );
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let record = self.take_record(&context)?;
        let caller = self.authorized(&context)?;
        if record.init.get().is_some() {
            // A parked session back: its tool list and mode are the record's.
            tracing::debug!(terminal = %caller.terminal_id(), "MCP session resumed");
            context.peer.set_peer_info(request.clone());
            return self.negotiate_initialize(&request);
        }
        let options = match context.extensions.get::<axum::http::request::Parts>() {
            Some(parts) => crate::list_options(&self.state, parts).map_err(|e| McpError::invalid_params(e, None))?,
            None => self.state.default_list(),
        };
        tracing::info!(
            license = %caller.license_id(),
            terminal = %caller.terminal_id(),
            client = %request.client_info.name,
            groups = %options.groups.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(","),
            output_schemas = options.output_schemas,
            "MCP session opened"
        );
        let _ = record.list.set(options);
        let _ = record.init.set(request.clone());
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.authorized(&context)?;
        Ok(ListToolsResult::with_all_items(crate::tools::list_for(
            &self.list_options(),
        )))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.authorized(&context)?;
        Ok(ListPromptsResult::with_all_items(crate::prompts::prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.authorized(&context)?;
        crate::prompts::get(&request.name, request.arguments.as_ref())
            .map(Into::into)
            .map_err(|e| McpError::invalid_params(e.to_string(), None))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let caller = self.authorized(&context)?;
        Ok(ListResourcesResult::with_all_items(crate::resources::list(
            caller.terminal_id(),
        )))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let caller = self.authorized(&context)?;
        let (terminal, kind) = self.resource_of(&caller, &request.uri)?;
        let production = self.state.services().settings.production;
        if let Some(limiter) = self.state.limiter() {
            let now = chrono::Utc::now().timestamp_millis().max(0) as u64;
            let d = limiter.check(caller.license_id(), caller.claims.tier, now).await;
            if !d.allowed {
                return Err(McpError::invalid_request(
                    format!(
                        "too many calls for this license ({} per window); retry after {} s",
                        d.limit, d.retry_after
                    ),
                    Some(serde_json::json!({ "code": "RATE_LIMITED", "retry_after": d.retry_after })),
                ));
            }
        }
        let tool = tradeterm_tools::find(kind.tool())
            .ok_or_else(|| McpError::internal_error("a resource's tool is not in the catalog", None))?;
        let mut call = Invocation::new("mcp", tool_caller(&caller), TerminalChoice::Bound(terminal.clone()));
        call.scope = caller.claims.scope.clone().map(Arc::new);
        match tradeterm_tools::invoke(self.state.services(), tool, call, Value::Object(Default::default())).await {
            Ok(output) => {
                Ok(
                    ReadResourceResult::new(vec![crate::resources::contents(&request.uri, &terminal, kind, output)])
                        .into(),
                )
            }
            Err(e) => {
                let shown = if production && e.is_internal() {
                    "internal error".to_owned()
                } else {
                    e.to_string()
                };
                Err(McpError::internal_error(
                    format!("{}: {shown}", e.code()),
                    Some(serde_json::json!({ "code": e.code() })),
                ))
            }
        }
    }

    #[allow(
        deprecated,
        reason = "resources/subscribe is what the 2025-11-25 revision this server speaks has"
    )]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let caller = self.authorized(&context)?;
        let (terminal, _) = self.resource_of(&caller, &request.uri)?;
        let Some(events) = &self.state.services().events else {
            return Err(McpError::internal_error("this server publishes no events", None));
        };
        let added = self
            .subscriptions
            .add(
                request.uri.clone(),
                events.bus().clone(),
                caller.license_id().to_owned(),
                terminal,
                context.peer.clone(),
            )
            .await
            .map_err(|e| McpError::internal_error(format!("the event engine is unavailable: {e}"), None));
        self.note_subscriptions();
        added
    }

    #[allow(
        deprecated,
        reason = "resources/unsubscribe is what the 2025-11-25 revision this server speaks has"
    )]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let caller = self.authorized(&context)?;
        self.resource_of(&caller, &request.uri)?;
        self.subscriptions.remove(&request.uri);
        self.note_subscriptions();
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The tool call runs in the session's task: it takes the HTTP
        // request's id with it, so the gateway and the agent see that id.
        let id = request_id(&context);
        let span = tracing::info_span!(target: tradeterm_telemetry::logging::REQUEST_SPAN_TARGET, "mcp_tool", request_id = %id, tool = %request.name);
        tradeterm_telemetry::request_id::scope(id, self.call_tool_in_request(request, context))
            .instrument(span)
            .await
    }
}

/// The id of the HTTP request carrying an MCP message (set by the
/// `observe` middleware), or a new one.
fn request_id(context: &RequestContext<RoleServer>) -> tradeterm_telemetry::RequestId {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<tradeterm_telemetry::RequestId>())
        .cloned()
        .unwrap_or_else(tradeterm_telemetry::RequestId::generate)
}

/// The tool caller of an MCP caller.
fn tool_caller(caller: &Caller) -> tradeterm_tools::Caller {
    tradeterm_tools::Caller {
        license_id: caller.license_id().to_owned(),
        credential: caller.claims.cred_id.clone(),
        caps: caller.claims.caps.clone(),
    }
}

impl Session {
    /// Tells the record whether the session has subscriptions (never parked then).
    fn note_subscriptions(&self) {
        if let Some(r) = self.record.get() {
            r.subscribed
                .store(!self.subscriptions.is_empty(), std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The terminal and kind of a resource URI, which must name the session's
    /// own terminal (a terminal key reaches only its terminal).
    fn resource_of(&self, caller: &Caller, uri: &str) -> Result<(String, crate::resources::Kind), McpError> {
        let Some((terminal, kind)) = crate::resources::parse(uri) else {
            return Err(McpError::resource_not_found(
                format!("no resource `{uri}`; resources/list lists them"),
                None,
            ));
        };
        if terminal != caller.terminal_id() {
            return Err(McpError::resource_not_found(
                format!("no resource `{uri}` for this terminal key"),
                None,
            ));
        }
        Ok((terminal.to_owned(), kind))
    }

    async fn call_tool_in_request(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = self.authorized(&context)?;
        let name = request.name.as_ref();
        let args = Value::Object(request.arguments.unwrap_or_default());
        if SESSION_TOOLS.contains(&name) {
            return Ok(self.session_tool(name, args));
        }
        let options = self.list_options();
        if tradeterm_tools::find(name).is_some() && !options.allows(name) {
            let group = tradeterm_tools::groups::group_of(name);
            let groups = options.groups.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(",");
            return Err(McpError::invalid_params(
                format!(
                    "tool `{name}` (group `{group}`) is not enabled in this session (groups: {groups}); open a \
                     session with `groups={group}` added (query parameter or X-MCP-Tool-Groups header of /mcp/v1, \
                     or tradeterm-connect --tools)"
                ),
                Some(serde_json::json!({ "code": "TOOL_NOT_ENABLED", "tool": name, "group": group.as_str() })),
            ));
        }
        let Some(tool) = tradeterm_tools::find(name) else {
            return Err(McpError::invalid_params(
                format!("unknown tool `{name}`; tools/list lists them"),
                None,
            ));
        };
        let production = self.state.services().settings.production;
        if let Some(limiter) = self.state.limiter() {
            let now = chrono::Utc::now().timestamp_millis().max(0) as u64;
            let d = limiter.check(caller.license_id(), caller.claims.tier, now).await;
            if !d.allowed {
                let message = format!(
                    "too many tool calls for this license ({} per window); retry after {} s",
                    d.limit, d.retry_after
                );
                return Ok(failure("RATE_LIMITED", &message, None).into());
            }
        }
        // The terminal is always the key's; the gate, the context and the span are `invoke`'s.
        let terminal = TerminalChoice::Bound(caller.terminal_id().to_owned());
        let scope = caller.claims.scope.clone().map(Arc::new);
        let caller = tradeterm_tools::Caller {
            license_id: caller.license_id().to_owned(),
            credential: caller.claims.cred_id.clone(),
            caps: caller.claims.caps.clone(),
        };
        let mut call = Invocation::new("mcp", caller, terminal);
        call.force_dry_run = self.mode() == TradingMode::Paper;
        call.source = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<crate::ClientSource>())
            .map(|s| s.0);
        call.scope = scope;
        // Live trades ask the person behind the client first (crate::confirm).
        call.confirm = Some(tradeterm_tools::confirm::Confirmer(Arc::new(
            crate::confirm::Elicitation {
                peer: context.peer.clone(),
                timeout: self.state.settings().trade_confirm_timeout,
            },
        )));
        let result = match tradeterm_tools::invoke_charted(self.state.services(), tool, call, args).await {
            // Drawing takes tens of milliseconds of CPU: off the async workers.
            Ok(charted) if charted.chart.is_some() => {
                tokio::task::spawn_blocking(move || charted_success(charted, production))
                    .await
                    .unwrap_or_else(|e| tool_error(&ToolError::Internal(format!("chart task: {e}")), production))
            }
            Ok(charted) => success(charted.output),
            Err(e) => tool_error(&e, production),
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn session_tool_schemas() {
        let tools = session_tools(true, crate::compact::BUDGET_LEVELS[0]);
        assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), SESSION_TOOLS);
        let set = json!(*tools[0].input_schema);
        assert_eq!(set["required"], json!(["mode"]));
        assert_eq!(set["type"], "object");
        assert!(set.to_string().contains("paper") && set.to_string().contains("live"));
        assert_eq!(json!(mode_output(TradingMode::Paper))["forces_dry_run"], true);
    }
}
