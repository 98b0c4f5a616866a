//! The OpenAPI 3.1 description of the REST API, generated at run time from
//! [`crate::routes::ROUTES`], the tool catalog ([`tradeterm_tools::catalog`])
//! and the fixed routes. Nothing here is written per tool: a tool or route
//! added to the catalog or the route table appears in the document with its
//! title, description, schemas and capability.
//!
//! - Every named route is one operation (operationId = tool name, suffixed
//!   only to stay unique); every catalog tool is also one
//!   `POST /api/v1/tools/<name>` operation (operationId `tool_<name>`).
//! - Input and output schemas come from schemars (JSON Schema 2020-12, which
//!   OpenAPI 3.1 takes as is). Their `$defs` move to `components/schemas`
//!   and `$ref`s are rewritten; a name used by two different schemas keeps
//!   its first owner (catalog order) and the other gets the smallest free
//!   suffix `_2`, `_3`, … (identical schemas share one component).
//! - A chartable tool (`tradeterm_tools::ChartKind`) takes `chart` in its
//!   input (its schema says so); its 200 response also lists `image/png`
//!   (sent for `Accept: image/png`) and the envelope's optional `chart`
//!   (schema `Chart`, the PNG in base64).
//! - Every error response references the `ErrorEnvelope` schema, whose
//!   `code` enumerates [`ERROR_CODES`]. Every operation also declares the
//!   shared 405 response `METHOD_NOT_ALLOWED` (header `Allow`): another
//!   method on its path.
//!
//! [`document`] builds the document afresh; the route serving it caches it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};
use tradeterm_tools::{Gate, Target, Tool};

use crate::ratelimit::TierLimits;
use crate::routes::{Auth, InputFrom, ROUTES, Route};

/// One error code of the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode {
    /// The `error.code` value.
    pub code: &'static str,
    /// The HTTP status it comes with.
    pub status: u16,
    /// When it happens.
    pub meaning: &'static str,
}

const fn code(code: &'static str, status: u16, meaning: &'static str) -> ErrorCode {
    ErrorCode { code, status, meaning }
}

/// Every error code the REST API answers with (spec §7 and the codes of the
/// tool errors), ordered by status. A test keeps this in step with
/// `ToolError` and the codes used in this crate.
pub const ERROR_CODES: &[ErrorCode] = &[
    code(
        "VALIDATION_ERROR",
        400,
        "The input does not match the schema or is out of range (also: malformed JSON, a bad query string, a path parameter repeated in the body).",
    ),
    code(
        "MISSING_TERMINAL",
        400,
        "No `X-Terminal-Id` header and no terminal of the license is connected.",
    ),
    code(
        "TERMINAL_ID_REQUIRED",
        400,
        "No `X-Terminal-Id` header and more than one terminal of the license is connected.",
    ),
    code(
        "UNAUTHORIZED",
        401,
        "Missing, malformed, invalid, expired or revoked API key or JWT.",
    ),
    code(
        "FORBIDDEN",
        403,
        "The license's tier does not include the capability the operation needs.",
    ),
    code(
        "TRADING_DISABLED",
        403,
        "A live call (`\"dry_run\": false`) without the `trade` capability, or with trading disabled on the terminal (agent input `inp_AllowTrading` off, or the terminal's automated-trading switch off).",
    ),
    code(
        "TRADE_NOT_CONFIRMED",
        403,
        "MCP only (never answered by REST): a live trade from an AI client needed its user's confirmation (MCP elicitation) and was declined, cancelled, not answered in time, or could not be asked (the client declared no elicitation capability); nothing was sent.",
    ),
    code(
        "NOT_FOUND",
        404,
        "The route, terminal, position, order or journal entry does not exist.",
    ),
    code(
        "METHOD_NOT_ALLOWED",
        405,
        "The path exists but does not serve this method; the `Allow` header lists the methods it serves. Answered before authentication.",
    ),
    code(
        "IDEMPOTENCY_CONFLICT",
        409,
        "The `Idempotency-Key` belongs to a request still in progress, or was already used with a different request.",
    ),
    code(
        "API_KEY_LIMIT",
        409,
        "The license already has 5 active API keys; revoke one first.",
    ),
    code(
        "WEBHOOK_LIMIT",
        409,
        "The license already has 10 webhook endpoints; delete one first.",
    ),
    code(
        "PAYLOAD_TOO_LARGE",
        413,
        "The request body is larger than the route accepts (trading tools 16 KiB, backtests 4 MiB, everything else 256 KiB); refused as soon as `Content-Length` says so.",
    ),
    code(
        "ORDER_REJECTED",
        422,
        "The order was (or would be) refused; `retcode` says why (`invalid_volume`, `invalid_stops`, `no_money`, …).",
    ),
    code(
        "RATE_LIMITED",
        429,
        "Too many requests for this license in the current window, or too many failed authentications from this address (the guessing throttle, which answers on every authenticated route); retry after `Retry-After` seconds.",
    ),
    code(
        "INTERNAL_ERROR",
        500,
        "Unexpected failure. The message carries a request id to quote; details are hidden in production.",
    ),
    code(
        "DISPATCH_ERROR",
        502,
        "The terminal is unreachable, did not answer in time, or the command failed.",
    ),
    code("GATEWAY_ERROR", 502, "Communication with the gateway failed."),
    code(
        "EVENTS_UNAVAILABLE",
        503,
        "The event engine cannot be read now (`GET /api/v1/events`); retry shortly.",
    ),
];

const SCHEMA_REF: &str = "#/components/schemas/";
const RATE_HEADERS: [&str; 3] = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"];
const TERMINAL_PARAM: &str = "X-Terminal-Id";
const IDEMPOTENCY_PARAM: &str = "Idempotency-Key";
/// Name of the shared 405 response in `components/responses`.
const METHOD_NOT_ALLOWED: &str = "METHOD_NOT_ALLOWED";

/// The OpenAPI document.
pub fn document() -> Value {
    let mut doc = Builder::default();
    doc.fixed_schemas();
    for route in ROUTES.iter().filter(|r| r.auth == Auth::Bearer) {
        doc.named_route(route);
    }
    for tool in tradeterm_tools::catalog() {
        doc.tool_route(tool);
    }
    // Last, so that the component names of the API routes do not depend on them.
    for route in ROUTES.iter().filter(|r| r.auth == Auth::MasterKey) {
        doc.named_route(route);
    }
    doc.fixed_routes();
    let mut document = doc.finish();
    constant_unions_to_enums(&mut document);
    document
}

/// Rewrites every `oneOf` whose branches are all string constants (how
/// schemars writes a Rust enum with documented variants) as one `enum`, the
/// variants' descriptions appended to the schema's own (`` `M1`: 1
/// minute.``). Same accepted values; client generators read an `enum` well
/// where a union of constants trips them (openapi-python-client builds a
/// parser that only accepts the first constant).
fn constant_unions_to_enums(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let constants: Option<Vec<(Value, Option<String>)>> =
                o.get("oneOf").and_then(Value::as_array).and_then(|branches| {
                    branches
                        .iter()
                        .map(|b| {
                            let c = b.get("const").filter(|c| c.is_string())?;
                            let plain = b
                                .as_object()?
                                .keys()
                                .all(|k| ["const", "type", "description"].contains(&k.as_str()));
                            plain.then(|| {
                                (
                                    c.clone(),
                                    b.get("description").and_then(Value::as_str).map(str::to_owned),
                                )
                            })
                        })
                        .collect()
                });
            if let Some(constants) = constants.filter(|c| !c.is_empty()) {
                o.remove("oneOf");
                let notes: Vec<String> = constants
                    .iter()
                    .filter_map(|(c, d)| Some(format!("`{}`: {}", c.as_str()?, d.as_deref()?)))
                    .collect();
                if !notes.is_empty() {
                    let own = o.get("description").and_then(Value::as_str).unwrap_or_default();
                    let text = if own.is_empty() {
                        notes.join(" ")
                    } else {
                        format!("{own} {}", notes.join(" "))
                    };
                    o.insert("description".into(), Value::String(text));
                }
                o.insert("type".into(), json!("string"));
                o.insert(
                    "enum".into(),
                    Value::Array(constants.into_iter().map(|(c, _)| c).collect()),
                );
            }
            o.values_mut().for_each(constant_unions_to_enums);
        }
        Value::Array(items) => items.iter_mut().for_each(constant_unions_to_enums),
        _ => {}
    }
}

/// The tag of a named route: the master-key routes are `management`, trade
/// tools `trading`, the rest by the first path segment under `/api/v1`
/// (`market`, `journal`; everything else is `account`).
fn area(route: &Route, tool: &Tool) -> &'static str {
    if route.auth == Auth::MasterKey {
        return "management";
    }
    if tool.gate == Gate::LiveOnly {
        return "trading";
    }
    match route.path.trim_start_matches("/api/v1/").split('/').next() {
        Some("market") => "market",
        Some("journal") => "journal",
        _ => "account",
    }
}

/// Names of the `{param}` segments of an actix path.
pub fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .map(|s| s.split(':').next().unwrap_or(s))
        .collect()
}

#[derive(Default)]
struct Builder {
    schemas: Schemas,
    paths: BTreeMap<String, Map<String, Value>>,
    operation_ids: BTreeSet<String>,
    inputs: BTreeMap<&'static str, (String, Value)>,
    outputs: BTreeMap<&'static str, String>,
    responses: BTreeMap<String, Value>,
}

impl Builder {
    fn fixed_schemas(&mut self) {
        let codes: Vec<&str> = ERROR_CODES.iter().map(|c| c.code).collect();
        let code_list: Vec<String> = ERROR_CODES
            .iter()
            .map(|c| format!("- `{}` ({}): {}", c.code, c.status, c.meaning))
            .collect();
        self.schemas.register(
            "ErrorEnvelope",
            json!({
                "title": "ErrorEnvelope",
                "description": "Every error: `{ \"error\": { \"code\", \"message\" } }` (spec §7).",
                "type": "object",
                "required": ["error"],
                "properties": {
                    "error": {
                        "type": "object",
                        "required": ["code", "message"],
                        "properties": {
                            "code": {
                                "type": "string",
                                "enum": codes,
                                "description": format!("Machine-readable error code:\n\n{}", code_list.join("\n")),
                            },
                            "message": { "type": "string", "description": "Explanation for a person." },
                            "retcode": {
                                "type": "string",
                                "description": "Trade-server return code; only with `ORDER_REJECTED`.",
                            },
                        },
                    },
                },
            }),
        );
        let types: Vec<&str> = tradeterm_events::EventType::ALL.iter().map(|t| t.as_str()).collect();
        self.schemas.register(
            "Event",
            json!({
                "title": "Event",
                "description": "One event of `GET /api/v1/events` (the `data:` line of each Server-Sent Event). The schema of `data` per type is in docs/events.md.",
                "type": "object",
                "required": ["type", "version", "time", "data"],
                "properties": {
                    "id": { "type": "string", "pattern": "^[0-9]{1,19}-[0-9]{1,19}$", "description": "`<unix ms>-<sequence>`, strictly increasing per license; absent on quotes and stream control events." },
                    "type": { "type": "string", "enum": types },
                    "version": { "type": "integer", "const": 1, "description": "Version of the event model." },
                    "time": { "type": "string", "format": "date-time" },
                    "terminal_id": { "type": "string", "description": "The terminal it concerns (absent for license-wide events)." },
                    "symbol": { "type": "string", "description": "The symbol it concerns, when one." },
                    "data": { "type": "object", "description": "The type's own data." },
                },
            }),
        );
        self.schemas.register(
            "TokenRequest",
            json!({
                "title": "TokenRequest",
                "type": "object",
                "required": ["license_key"],
                "properties": {
                    "license_key": { "type": "string", "description": "A terminal key (`<TERMINAL_KEY>`); master license keys are refused." },
                },
            }),
        );
        self.schemas.register(
            "TokenResponse",
            json!({
                "title": "TokenResponse",
                "description": "The gateway's answer, passed through unchanged (not wrapped in `data`).",
                "type": "object",
                "required": ["token"],
                "properties": {
                    "token": { "type": "string", "description": "RS256 session token (JWT); send it as `Authorization: Bearer <token>`." },
                    "token_type": { "type": "string", "const": "Bearer" },
                    "expires_in": { "type": "integer", "minimum": 0, "description": "Lifetime in seconds (default 24 h)." },
                    "expires_at": { "type": ["string", "null"], "format": "date-time", "description": "Expiry, ISO 8601 UTC." },
                    "license_id": { "type": "string" },
                    "tier": { "type": "string", "enum": ["free", "pro", "team", "enterprise"] },
                    "terminal_id": { "type": ["string", "null"], "description": "The terminal the key is bound to." },
                },
            }),
        );
        self.schemas.register(
            "ToolInfo",
            json!({
                "title": "ToolInfo",
                "description": "One tool of the catalog, as listed by `GET /api/v1/tools`.",
                "type": "object",
                "required": ["name", "title", "description", "capability", "annotations", "terminal", "input_schema", "output_schema", "route", "chart"],
                "properties": {
                    "name": { "type": "string" },
                    "title": { "type": "string" },
                    "description": { "type": "string" },
                    "capability": { "type": "string", "enum": ["read", "analytics", "trade", "audit"] },
                    "annotations": {
                        "type": "object",
                        "properties": {
                            "read_only": { "type": "boolean" },
                            "destructive": { "type": "boolean" },
                            "idempotent": { "type": "boolean" },
                            "open_world": { "type": "boolean" },
                        },
                    },
                    "terminal": { "type": "boolean", "description": "Whether the tool works on one terminal (`X-Terminal-Id`)." },
                    "input_schema": { "type": "object", "description": "JSON Schema 2020-12 of the input." },
                    "output_schema": { "type": "object", "description": "JSON Schema 2020-12 of `data`." },
                    "route": { "type": "string", "description": "`POST` path running the tool." },
                    "chart": {
                        "type": ["string", "null"],
                        "enum": tradeterm_tools::ChartKind::ALL.iter().map(|k| json!(k.name())).chain([Value::Null]).collect::<Vec<_>>(),
                        "description": "What the tool's chart shows (`\"chart\": true` in its input, or `Accept: image/png`); null for a tool without a chart.",
                    },
                },
            }),
        );
        self.schemas.register(
            "Chart",
            json!({
                "title": "Chart",
                "description": "The tool's result drawn as a PNG image, in the success envelope beside `data` when the input said `\"chart\": true` (`Accept: image/png` answers the image itself).",
                "type": "object",
                "required": ["mime_type", "width", "height", "data"],
                "properties": {
                    "mime_type": { "type": "string", "const": tradeterm_charts::PNG_MIME },
                    "width": { "type": "integer", "minimum": 1, "maximum": tradeterm_charts::TOOL_CHART_SIZE.width, "description": "Width in pixels." },
                    "height": { "type": "integer", "minimum": 1, "maximum": tradeterm_charts::TOOL_CHART_SIZE.height, "description": "Height in pixels." },
                    "data": {
                        "type": "string",
                        "contentEncoding": "base64",
                        "contentMediaType": tradeterm_charts::PNG_MIME,
                        "description": "The PNG file, base64 (standard alphabet, padded).",
                    },
                },
            }),
        );
        self.schemas.register(
            "Health",
            json!({
                "title": "Health",
                "type": "object",
                "required": ["status", "service"],
                "properties": { "status": { "type": "string", "const": "ok" }, "service": { "type": "string" } },
            }),
        );
    }

    fn operation_id(&mut self, wanted: &str) -> String {
        let mut id = wanted.to_owned();
        let mut n = 2;
        while self.operation_ids.contains(&id) {
            id = format!("{wanted}_{n}");
            n += 1;
        }
        self.operation_ids.insert(id.clone());
        id
    }

    /// Component name and (rewritten) schema of a tool's input.
    fn input(&mut self, tool: &'static Tool) -> (String, Value) {
        if let Some(found) = self.inputs.get(tool.name) {
            return found.clone();
        }
        let name = self
            .schemas
            .absorb(&tool.input_schema, &format!("{}Input", camel(tool.name)));
        let schema = self
            .schemas
            .map
            .get(&name)
            .cloned()
            .unwrap_or_else(|| json!({ "type": "object" }));
        self.inputs.insert(tool.name, (name.clone(), schema.clone()));
        (name, schema)
    }

    /// Component name of a tool's output.
    fn output(&mut self, tool: &'static Tool) -> String {
        if let Some(found) = self.outputs.get(tool.name) {
            return found.clone();
        }
        let name = self
            .schemas
            .absorb(&tool.output_schema, &format!("{}Output", camel(tool.name)));
        self.outputs.insert(tool.name, name.clone());
        name
    }

    /// Adds an operation; every operation also declares the shared 405
    /// (another method on its path).
    fn add(&mut self, method: &str, path: &str, mut op: Value) {
        if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
            responses.insert(
                "405".into(),
                json!({ "$ref": format!("#/components/responses/{METHOD_NOT_ALLOWED}") }),
            );
            self.responses
                .entry(METHOD_NOT_ALLOWED.to_owned())
                .or_insert_with(method_not_allowed_response);
        }
        self.paths
            .entry(path.to_owned())
            .or_default()
            .insert(method.to_ascii_lowercase(), op);
    }

    fn named_route(&mut self, route: &Route) {
        let Some(tool) = tradeterm_tools::find(route.tool) else {
            // A route naming an unknown tool is a bug the route tests catch;
            // the document still describes the path.
            let id = self.operation_id(route.tool);
            let op = json!({
                "operationId": id,
                "summary": route.tool,
                "responses": self.error_responses(&["INTERNAL_ERROR"], true),
            });
            self.add(route.method, route.path, op);
            return;
        };
        let (input_name, input) = self.input(tool);
        let path_names = path_params(route.path);
        let props = input
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required = required_of(&input);
        let mut parameters = Vec::new();
        for name in &path_names {
            let prop = props.get(*name).cloned().unwrap_or_else(|| json!({ "type": "string" }));
            parameters.push(parameter(name, "path", &prop, true));
        }
        let mut body = None;
        match route.input {
            InputFrom::Query => {
                for (name, prop) in &props {
                    if !path_names.contains(&name.as_str()) {
                        parameters.push(parameter(name, "query", prop, required.contains(name)));
                    }
                }
            }
            InputFrom::Body => {
                let (schema, needed) = if path_names.is_empty() {
                    (
                        json!({ "$ref": format!("{SCHEMA_REF}{input_name}") }),
                        body_needed(&input),
                    )
                } else {
                    let mut reduced = input.clone();
                    if let Some(p) = reduced.get_mut("properties").and_then(Value::as_object_mut) {
                        p.retain(|k, _| !path_names.contains(&k.as_str()));
                    }
                    let left: Vec<String> = required
                        .iter()
                        .filter(|r| !path_names.contains(&r.as_str()))
                        .cloned()
                        .collect();
                    if let Some(o) = reduced.as_object_mut() {
                        o.insert("required".into(), json!(left));
                        o.insert(
                            "description".into(),
                            json!(format!(
                                "{} The path gives {}.",
                                input.get("description").and_then(Value::as_str).unwrap_or("Input."),
                                path_names
                                    .iter()
                                    .map(|p| format!("`{p}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )),
                        );
                        if left.is_empty() {
                            o.remove("required");
                        }
                        o.insert("title".into(), json!(format!("{input_name}Body")));
                    }
                    let needed = body_needed(&reduced);
                    let name = self.schemas.register(&format!("{input_name}Body"), reduced);
                    (json!({ "$ref": format!("{SCHEMA_REF}{name}") }), needed)
                };
                body = Some(request_body(schema, needed));
            }
        }
        let tag = area(route, tool);
        let id = self.operation_id(tool.name);
        let op = self.tool_operation(tool, id, tag, parameters, body, route.auth);
        self.add(route.method, route.path, op);
    }

    fn tool_route(&mut self, tool: &'static Tool) {
        let (input_name, input) = self.input(tool);
        let body = request_body(
            json!({ "$ref": format!("{SCHEMA_REF}{input_name}") }),
            body_needed(&input),
        );
        let id = self.operation_id(&format!("tool_{}", tool.name));
        let op = self.tool_operation(tool, id, "tools", Vec::new(), Some(body), Auth::Bearer);
        self.add("post", &format!("/api/v1/tools/{}", tool.name), op);
    }

    fn tool_operation(
        &mut self,
        tool: &'static Tool,
        id: String,
        tag: &str,
        mut parameters: Vec<Value>,
        body: Option<Value>,
        auth: Auth,
    ) -> Value {
        if tool.target == Target::Terminal {
            parameters.push(json!({ "$ref": format!("#/components/parameters/{TERMINAL_PARAM}") }));
        }
        if tool.gate == Gate::LiveOnly {
            parameters.push(json!({ "$ref": format!("#/components/parameters/{IDEMPOTENCY_PARAM}") }));
        }
        let output = self.output(tool);
        let capability = tool.capability.as_str();
        let access = match tool.gate {
            Gate::Always => format!("Needs the `{capability}` capability."),
            Gate::LiveOnly => format!(
                "Dry runs (the default) are open to every tier; a live call (`\"dry_run\": false`) needs the `{capability}` capability and trading enabled on the terminal, else `TRADING_DISABLED`."
            ),
        };
        let target = match tool.target {
            Target::Terminal => {
                "Works on one terminal: `X-Terminal-Id`, or the only connected terminal when the header is omitted."
            }
            Target::License => "License-wide: needs no terminal.",
        };
        let (security, who) = match auth {
            Auth::Bearer => ("bearerAuth", ""),
            Auth::MasterKey => (
                "masterKey",
                " Authenticated with the license's master key (the dashboard's credential), not rate-limited; served on the gateway's port too.",
            ),
        };
        let mut op = json!({
            "operationId": id,
            "summary": tool.title,
            "description": format!("{}\n\n{access} {target}{who}", tool.description),
            "tags": [tag],
            "security": [{ security: [] }],
            "x-capability": capability,
            "x-tool": tool.name,
            "responses": self.tool_responses(tool, &output, auth == Auth::Bearer),
        });
        if tool.name == "get_audit_log" && auth == Auth::MasterKey {
            // The master key, or a REST credential holding `audit` (docs/audit.md).
            op["security"] = json!([{ "masterKey": [] }, { "bearerAuth": [] }]);
        }
        if !parameters.is_empty() {
            op["parameters"] = json!(parameters);
        }
        if let Some(b) = body {
            op["requestBody"] = b;
        }
        op
    }

    /// Responses of a tool's operation; `metered`: counted by the rate limiter.
    fn tool_responses(&mut self, tool: &Tool, output: &str, metered: bool) -> Value {
        let mut codes = vec![
            "VALIDATION_ERROR",
            "UNAUTHORIZED",
            "INTERNAL_ERROR",
            "DISPATCH_ERROR",
            "GATEWAY_ERROR",
            // Metered or not: the guessing throttle answers 429 on every
            // authenticated route.
            "RATE_LIMITED",
        ];
        let props = tool.input_schema.get("properties").and_then(Value::as_object);
        let has = |p: &str| props.is_some_and(|m| m.contains_key(p));
        if tool.target == Target::Terminal {
            codes.extend(["MISSING_TERMINAL", "TERMINAL_ID_REQUIRED"]);
        }
        match tool.gate {
            Gate::Always => codes.push("FORBIDDEN"),
            Gate::LiveOnly => codes.extend(["TRADING_DISABLED", "IDEMPOTENCY_CONFLICT", "ORDER_REJECTED"]),
        }
        if tool.target == Target::Terminal
            || has("id")
            || has("ticket")
            || has("entry_id")
            || has("webhook_id")
            || (has("terminal_id") && !tool.annotations.read_only)
        {
            codes.push("NOT_FOUND");
        }
        // The one tool that creates what a license may hold only so many of.
        if tool.name == "create_webhook" {
            codes.push("WEBHOOK_LIMIT");
        }
        let mut responses = self.error_responses(&codes, metered);
        let mut envelope = json!({
            "type": "object",
            "required": ["data"],
            "properties": { "data": { "$ref": format!("{SCHEMA_REF}{output}") } },
        });
        let description = if tool.chart.is_some() {
            envelope["properties"]["chart"] = json!({ "$ref": format!("{SCHEMA_REF}Chart") });
            format!(
                "{} (`data`: the tool's output; `chart`: its PNG chart when the input said `\"chart\": true`). With `Accept: image/png`, the body is the chart itself (at most {}×{} pixels).",
                tool.title,
                tradeterm_charts::TOOL_CHART_SIZE.width,
                tradeterm_charts::TOOL_CHART_SIZE.height
            )
        } else {
            format!("{} (`data`: the tool's output).", tool.title)
        };
        responses["200"] = success(&description, envelope, metered);
        if tool.chart.is_some() {
            responses["200"]["content"][tradeterm_charts::PNG_MIME] = json!({});
        }
        if tool.name == "get_audit_log" {
            // `format=csv`: the page as a CSV document (`X-Next-Cursor` names the next page).
            responses["200"]["content"]["text/csv"] = json!({ "schema": { "type": "string" } });
        }
        responses
    }

    /// Error responses for `codes`, one per status, as references to
    /// `components/responses` (named after their codes). With `rate_limited`,
    /// every response but 401 (answered before the request is counted)
    /// documents the rate-limit headers, and 429 also `Retry-After`.
    fn error_responses(&mut self, codes: &[&str], rate_limited: bool) -> Value {
        let mut by_status: BTreeMap<u16, Vec<&ErrorCode>> = BTreeMap::new();
        for c in ERROR_CODES.iter().filter(|c| codes.contains(&c.code)) {
            by_status.entry(c.status).or_default().push(c);
        }
        let mut out = Map::new();
        for (status, list) in by_status {
            let metered = rate_limited && status != 401;
            let mut name = list.iter().map(|c| c.code).collect::<Vec<_>>().join(".");
            if !metered && status != 429 && status != 401 {
                name.push_str(".unmetered");
            }
            if !self.responses.contains_key(&name) {
                let description = list
                    .iter()
                    .map(|c| format!("`{}`: {}", c.code, c.meaning))
                    .collect::<Vec<_>>()
                    .join(" ");
                let mut examples = Map::new();
                for c in &list {
                    let mut error = json!({ "code": c.code, "message": c.meaning });
                    if c.code == "ORDER_REJECTED" {
                        error["retcode"] = json!("invalid_volume");
                    }
                    examples.insert(c.code.into(), json!({ "summary": c.code, "value": { "error": error } }));
                }
                let mut r = json!({
                    "description": description,
                    "content": { "application/json": {
                        "schema": { "$ref": format!("{SCHEMA_REF}ErrorEnvelope") },
                        "examples": examples,
                    } },
                });
                if status == 429 {
                    r["headers"] = rate_headers(true);
                } else if metered {
                    r["headers"] = rate_headers(false);
                }
                self.responses.insert(name.clone(), r);
            }
            out.insert(
                status.to_string(),
                json!({ "$ref": format!("#/components/responses/{name}") }),
            );
        }
        Value::Object(out)
    }

    fn fixed_routes(&mut self) {
        let id = self.operation_id("create_token");
        let mut token_responses = self.error_responses(
            &[
                "VALIDATION_ERROR",
                "UNAUTHORIZED",
                "RATE_LIMITED",
                "INTERNAL_ERROR",
                "GATEWAY_ERROR",
            ],
            false,
        );
        token_responses["200"] = success(
            "A session token, as issued by the gateway.",
            json!({ "$ref": format!("{SCHEMA_REF}TokenResponse") }),
            false,
        );
        self.add(
            "post",
            "/api/token",
            json!({
                "operationId": id,
                "summary": "Exchange a terminal key for a session token",
                "description": "Forwards `{ \"license_key\": \"<TERMINAL_KEY>\" }` to the gateway and returns its answer: an RS256 session token (JWT, default lifetime 24 h) to send as `Authorization: Bearer <token>`. Refresh it before it expires. Needs no authentication and is not rate-limited.",
                "tags": ["auth"],
                "security": [],
                "requestBody": request_body(json!({ "$ref": format!("{SCHEMA_REF}TokenRequest") }), true),
                "responses": token_responses,
            }),
        );

        let id = self.operation_id("list_tools");
        let mut list_responses = self.error_responses(
            &["UNAUTHORIZED", "RATE_LIMITED", "INTERNAL_ERROR", "GATEWAY_ERROR"],
            true,
        );
        list_responses["200"] = success(
            "The catalog.",
            json!({
                "type": "object",
                "required": ["data"],
                "properties": { "data": { "type": "array", "items": { "$ref": format!("{SCHEMA_REF}ToolInfo") } } },
            }),
            true,
        );
        self.add(
            "get",
            "/api/v1/tools",
            json!({
                "operationId": id,
                "summary": "List the tools",
                "description": "Every tool of the catalog with its capability, annotations and input/output JSON Schemas. Each one runs with `POST /api/v1/tools/<name>`.",
                "tags": ["tools"],
                "security": [{ "bearerAuth": [] }],
                "responses": list_responses,
            }),
        );

        let id = self.operation_id("stream_events");
        let mut event_responses = self.error_responses(
            &[
                "VALIDATION_ERROR",
                "UNAUTHORIZED",
                "FORBIDDEN",
                "NOT_FOUND",
                "RATE_LIMITED",
                "INTERNAL_ERROR",
                "GATEWAY_ERROR",
                "EVENTS_UNAVAILABLE",
            ],
            true,
        );
        let types: Vec<&str> = tradeterm_events::EventType::ALL.iter().map(|t| t.as_str()).collect();
        let type_names = types
            .iter()
            .map(|t| t.replace('.', "\\."))
            .collect::<Vec<_>>()
            .join("|");
        let types_pattern = format!("^({type_names})(,({type_names}))*$");
        let symbol = tradeterm_core::market::SYMBOL_PATTERN
            .trim_start_matches('^')
            .trim_end_matches('$');
        let symbols_pattern = format!("^({symbol})(,({symbol}))*$");
        let timeframe_names = tradeterm_core::Timeframe::ALL
            .iter()
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join("|");
        let timeframes_pattern = format!("^({timeframe_names})(,({timeframe_names}))*$");
        let id_pattern = "^[0-9]{1,19}-[0-9]{1,19}$";
        // Each Server-Sent Event, as schema tools read `text/event-stream`
        // (the fields of one event; OpenAPI 3.2's `itemSchema` convention).
        event_responses["200"] = json!({
            "description": "The stream, as Server-Sent Events: each event is `id:` (absent on quotes and stream control), `event:` (the type) and `data:` (the `Event` schema, as one line of JSON); comment lines are heartbeats. The stream ends with `stream.cut` (resume from its `data.resume_after`) when the client does not keep up.",
            "content": {
                "text/event-stream": {
                    "schema": {
                        "type": "object",
                        "description": "One Server-Sent Event of the stream.",
                        "required": ["event", "data"],
                        "properties": {
                            "event": { "type": "string", "enum": types },
                            "id": { "type": "string", "pattern": id_pattern },
                            "retry": { "type": "integer", "minimum": 0 },
                            "data": {
                                "type": "string",
                                "contentMediaType": "application/json",
                                "contentSchema": { "$ref": format!("{SCHEMA_REF}Event") },
                            },
                        },
                    },
                },
            },
            "headers": rate_headers(false),
        });
        let string_param = |name: &str, description: &str, pattern: &str| {
            json!({
                "name": name, "in": "query", "required": false, "description": description,
                "schema": { "type": "string", "minLength": 1, "pattern": pattern },
            })
        };
        self.add(
            "get",
            crate::events::EVENTS_PATH,
            json!({
                "operationId": id,
                "summary": "Stream the license's events (Server-Sent Events)",
                "description": format!(
                    "What happens on the license's terminals and in its rules, as it happens: fills, positions opened and closed (with the closing deal and its reason), orders, deals, account changes, alerts, equity-guard breaches, connections, and the closed bars of the symbols and timeframes asked for (`symbols` and `timeframes`). Ids increase strictly per license; resume with `Last-Event-ID` (or `after`) and every event after that id within retention (default 24 h) comes once, in order; beyond retention the stream starts with `stream.gap`. Quotes are conflated per symbol and carry no id. Opening counts as one request; events are not counted. Concurrent streams per license: Free {}, Pro {}, Team {}, Enterprise {} (beyond: 429 with `Retry-After`). Needs the `read` capability. Types: {}. See docs/events.md.",
                    crate::events::stream_limit(tradeterm_core::license::Tier::Free),
                    crate::events::stream_limit(tradeterm_core::license::Tier::Pro),
                    crate::events::stream_limit(tradeterm_core::license::Tier::Team),
                    crate::events::stream_limit(tradeterm_core::license::Tier::Enterprise),
                    types.join(", ")
                ),
                "tags": ["events"],
                "security": [{ "bearerAuth": [] }],
                "x-capability": "read",
                "parameters": [
                    string_param("types", "Comma-separated event types (every type when absent).", &types_pattern),
                    string_param(
                        "terminal_id",
                        "Only this terminal's events (license-wide events pass too); another license's terminal is 404.",
                        "^[A-Za-z0-9_-]{1,64}$",
                    ),
                    string_param(
                        "symbols",
                        "Comma-separated symbols (events that name no symbol pass too). With `timeframes`: the symbols whose bars `bar.closed` carries.",
                        &symbols_pattern,
                    ),
                    string_param(
                        "timeframes",
                        &format!(
                            "Comma-separated MetaTrader timeframes (M1, M5, M15, M30, H1, H4, D1, W1, MN1) of the `bar.closed` events wanted: while the stream is open, every bar of each symbol of `symbols` × each timeframe that the terminal closes comes once, as the terminal returns it. Together with `symbols` (alone, or with a `types` that leaves `bar.closed` out, it asks for no bars); at most {} pairs (400 beyond). Without both no `bar.closed` is sent.",
                            crate::events::MAX_BAR_PAIRS
                        ),
                        &timeframes_pattern,
                    ),
                    string_param(
                        "after",
                        "Resume after this event id (`Last-Event-ID` wins when both are given).",
                        id_pattern,
                    ),
                    {
                        "name": "Last-Event-ID", "in": "header", "required": false,
                        "description": "Resume after this event id (what an `EventSource` sends when it reconnects).",
                        "schema": { "type": "string", "pattern": id_pattern },
                    },
                ],
                "responses": event_responses,
            }),
        );

        let id = self.operation_id("get_openapi");
        self.add(
            "get",
            "/api/v1/openapi.json",
            json!({
                "operationId": id,
                "summary": "This OpenAPI 3.1 description",
                "description": "Generated from the route table and the tool catalog. Public; not rate-limited.",
                "tags": ["meta"],
                "security": [],
                "responses": {
                    "200": { "description": "The OpenAPI document.", "content": { "application/json": { "schema": { "type": "object" } } } },
                },
            }),
        );

        let id = self.operation_id("get_docs");
        self.add(
            "get",
            "/api/v1/docs",
            json!({
                "operationId": id,
                "summary": "Interactive API reference",
                "description": "Swagger UI over this description, served from the binary (works offline). Public; not rate-limited.",
                "tags": ["meta"],
                "security": [],
                "responses": {
                    "200": { "description": "An HTML page.", "content": { "text/html": { "schema": { "type": "string" } } } },
                },
            }),
        );

        let id = self.operation_id("healthz");
        self.add(
            "get",
            "/healthz",
            json!({
                "operationId": id,
                "summary": "Liveness",
                "description": "Answers while the server runs. Public; not rate-limited.",
                "tags": ["meta"],
                "security": [],
                "responses": {
                    "200": { "description": "The server is up.", "content": { "application/json": { "schema": { "$ref": format!("{SCHEMA_REF}Health") } } } },
                },
            }),
        );
    }

    fn finish(self) -> Value {
        let limits = TierLimits::default();
        let description = format!(
            "The tradeterm REST API: the {} tools of the catalog (market data, account, trading, journal, analytics) for the connected trading terminals of a license. Every tool runs with `POST /api/v1/tools/<name>`; the common ones also have named routes.\n\n\
             **Authentication.** Every request except `POST /api/token`, `GET /healthz`, `GET /api/v1/openapi.json` and `GET /api/v1/docs` carries `Authorization: Bearer <token>`, where the token is a REST API key (`svc_api_…`, recommended) or an RS256 session token (JWT) from `POST /api/token`. A missing or invalid token is 401 `UNAUTHORIZED`; a tier without the needed capability (`read`, `analytics`, `trade`; each operation's `x-capability`) is 403 `FORBIDDEN`.\n\n\
             **Dry runs.** Every trade-affecting operation is a dry run unless the request says `\"dry_run\": false`: without it the request is validated and the would-be outcome is reported without touching the account. Live calls need the `trade` capability (Pro tier and above) and trading enabled on the terminal, else 403 `TRADING_DISABLED`; an optional `Idempotency-Key` header makes a live call safe to retry.\n\n\
             **Terminals.** Terminal operations pick the terminal with the `X-Terminal-Id` header; without it the only connected terminal is used (none: 400 `MISSING_TERMINAL`; several: 400 `TERMINAL_ID_REQUIRED`). `GET /api/v1/terminals` lists them. The journal needs no connected terminal.\n\n\
             **Methods.** A path answers only the methods this document lists for it: any other method is 405 `METHOD_NOT_ALLOWED` with an `Allow` header naming the methods it serves (checked before authentication). A path that is not listed is 404 `NOT_FOUND`.\n\n\
             **Envelopes.** Success: `{{ \"data\": … }}`. Error: `{{ \"error\": {{ \"code\", \"message\" }} }}` (schema `ErrorEnvelope`).\n\n\
             **Rate limits.** Per license and window (default 60 s): {} requests for Free, {} for Pro, {} for Team, {} for Enterprise. Counted responses carry `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (unix seconds); 429 `RATE_LIMITED` adds `Retry-After` (seconds).",
            tradeterm_tools::catalog().len(),
            limits.free,
            limits.pro,
            limits.team,
            limits.enterprise
        );
        let rate_header = |what: &str| json!({ "description": what, "schema": { "type": "integer", "minimum": 0 } });
        let mut paths = Map::new();
        for (path, ops) in self.paths {
            paths.insert(path, Value::Object(ops));
        }
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": "tradeterm REST API",
                "version": env!("CARGO_PKG_VERSION"),
                "description": description,
                "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
            },
            "servers": [{ "url": "/", "description": "This server." }],
            "security": [{ "bearerAuth": [] }],
            "tags": [
                { "name": "market", "description": "Quotes, symbols and bars." },
                { "name": "account", "description": "Account, positions, orders, history and terminals." },
                { "name": "trading", "description": "Trade-affecting operations: dry runs unless `\"dry_run\": false`." },
                { "name": "journal", "description": "The license's trading journal; needs no connected terminal." },
                { "name": "tools", "description": "Every catalog tool by name: `POST /api/v1/tools/<name>` with the tool's input as the body." },
                { "name": "auth", "description": "Session tokens." },
                { "name": "meta", "description": "Health, this description and the interactive reference." },
                { "name": "management", "description": "The spec's management endpoints, with the license's master key; served on the gateway's port too (`{gateway_url}/api/…`)." },
            ],
            "paths": paths,
            "components": {
                "securitySchemes": {
                    "bearerAuth": {
                        "type": "http",
                        "scheme": "bearer",
                        "description": "REST API key (`svc_api_…`) or RS256 JWT from POST /api/token",
                    },
                    "masterKey": {
                        "type": "http",
                        "scheme": "bearer",
                        "description": "The license's master key (`tt_lic_…`): the management endpoints only.",
                    },
                },
                "parameters": {
                    TERMINAL_PARAM: {
                        "name": TERMINAL_PARAM,
                        "in": "header",
                        "required": false,
                        "description": "Terminal to act on. Optional when exactly one terminal of the license is connected; required (400 `TERMINAL_ID_REQUIRED`) when several are.",
                        "schema": { "type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$" },
                    },
                    IDEMPOTENCY_PARAM: {
                        "name": IDEMPOTENCY_PARAM,
                        "in": "header",
                        "required": false,
                        "description": "Makes a live call safe to retry: a repeat with the same key and request returns the first outcome without executing again; the same key with a different request, or while the first is still running, is 409 `IDEMPOTENCY_CONFLICT`. Ignored by dry runs.",
                        "schema": { "type": "string", "minLength": 1, "maxLength": 255, "pattern": tradeterm_tools::schema::IDEMPOTENCY_KEY_PATTERN },
                    },
                },
                "headers": {
                    "X-RateLimit-Limit": rate_header("Requests allowed per window for the license's tier. Sent on requests counted by the rate limiter (when rate limiting is on)."),
                    "X-RateLimit-Remaining": rate_header("Requests left in the current window."),
                    "X-RateLimit-Reset": rate_header("When the current window ends, unix seconds."),
                    "Retry-After": {
                        "description": "Seconds to wait before retrying.",
                        "required": true,
                        "schema": { "type": "integer", "minimum": 1 },
                    },
                    "Allow": {
                        "description": "The methods the path serves, comma-separated (RFC 9110 §10.2.1).",
                        "required": true,
                        "schema": { "type": "string", "pattern": "^[A-Z]+(, [A-Z]+)*$" },
                    },
                },
                "responses": self.responses,
                "schemas": self.schemas.map,
            },
        })
    }
}

/// The shared 405: `Allow` and the error envelope; not rate-limited (answered
/// before authentication).
fn method_not_allowed_response() -> Value {
    let meaning = ERROR_CODES
        .iter()
        .find(|c| c.code == METHOD_NOT_ALLOWED)
        .map(|c| c.meaning)
        .unwrap_or_default();
    json!({
        "description": format!("`{METHOD_NOT_ALLOWED}`: {meaning}"),
        "headers": { "Allow": { "$ref": "#/components/headers/Allow" } },
        "content": { "application/json": {
            "schema": { "$ref": format!("{SCHEMA_REF}ErrorEnvelope") },
            "examples": { METHOD_NOT_ALLOWED: {
                "summary": METHOD_NOT_ALLOWED,
                "value": { "error": { "code": METHOD_NOT_ALLOWED, "message": "this path does not serve this method; it serves GET, POST" } },
            } },
        } },
    })
}

/// Whether a request body with this schema must be sent: it names required
/// properties, or requires a choice among them (`anyOf`/`oneOf`, also
/// inside `allOf`).
fn body_needed(schema: &Value) -> bool {
    !required_of(schema).is_empty()
        || schema.get("anyOf").is_some()
        || schema.get("oneOf").is_some()
        || schema
            .get("allOf")
            .and_then(Value::as_array)
            .is_some_and(|all| all.iter().any(body_needed))
}

fn required_of(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn request_body(schema: Value, required: bool) -> Value {
    json!({ "required": required, "content": { "application/json": { "schema": schema } } })
}

fn rate_headers(retry_after: bool) -> Value {
    let mut headers = Map::new();
    for h in RATE_HEADERS {
        headers.insert(h.into(), json!({ "$ref": format!("#/components/headers/{h}") }));
    }
    if retry_after {
        headers.insert(
            "Retry-After".into(),
            json!({ "$ref": "#/components/headers/Retry-After" }),
        );
    }
    Value::Object(headers)
}

fn success(description: &str, schema: Value, rate_limited: bool) -> Value {
    let mut r = json!({ "description": description, "content": { "application/json": { "schema": schema } } });
    if rate_limited {
        r["headers"] = rate_headers(false);
    }
    r
}

/// A path, query or header parameter from an input-schema property.
fn parameter(name: &str, location: &str, prop: &Value, required: bool) -> Value {
    let mut schema = non_null(prop.clone());
    let description = schema.as_object_mut().and_then(|o| o.remove("description"));
    let array = schema.get("type").and_then(Value::as_str) == Some("array");
    let mut p = json!({ "name": name, "in": location, "required": required || location == "path", "schema": schema });
    if array && location == "query" {
        // A list is one comma-separated value (`?currencies=USD,EUR`), as the server reads it.
        p["style"] = json!("form");
        p["explode"] = json!(false);
    }
    if let Some(d) = description {
        p["description"] = d;
    }
    p
}

/// A property schema without its `null` alternative (a parameter is either
/// given or absent) and without `default: null`.
fn non_null(mut schema: Value) -> Value {
    let Some(o) = schema.as_object_mut() else { return schema };
    if o.get("default").is_some_and(Value::is_null) {
        o.remove("default");
    }
    if let Some(Value::Array(types)) = o.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        let replacement = if kept.len() == 1 {
            kept[0].clone()
        } else {
            Value::Array(kept)
        };
        o.insert("type".into(), replacement);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = o.get(key) {
            let kept: Vec<Value> = alts
                .iter()
                .filter(|a| **a != json!({ "type": "null" }))
                .cloned()
                .collect();
            if kept.len() == 1 {
                let mut only = kept[0].clone();
                o.remove(key);
                if let Some(inner) = only.as_object_mut() {
                    for (k, v) in std::mem::take(o) {
                        inner.entry(k).or_insert(v);
                    }
                }
                return only;
            }
            o.insert(key.into(), Value::Array(kept));
        }
    }
    schema
}

/// `get_tick` → `GetTick`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// A component name OpenAPI accepts (`^[a-zA-Z0-9._-]+$`).
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "Schema".into() } else { s }
}

/// `components/schemas`, filled from schemars root schemas.
#[derive(Default)]
struct Schemas {
    map: BTreeMap<String, Value>,
    /// Name-independent form of each component (see [`canonical`]), to tell
    /// "the same schema again" from "another schema with the same name".
    canon: BTreeMap<String, Value>,
}

/// One schema of a root being absorbed: the root itself (index 0) or a `$defs` entry.
struct Local {
    /// Name in the root (`$defs` key; empty for the root).
    raw: String,
    /// Preferred component name.
    base: String,
    /// The schema as schemars wrote it (without `$defs` and `$schema`).
    schema: Value,
}

impl Schemas {
    /// The first of `base`, `base_2`, `base_3`, … that is free or holds `canon`.
    fn free_name(&self, base: &str, canon: &Value, also_taken: &[(String, Value)]) -> String {
        let mut name = base.to_owned();
        let mut n = 2;
        while self.canon.get(&name).is_some_and(|c| c != canon)
            || also_taken.iter().any(|(t, c)| *t == name && c != canon)
        {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }

    /// Adds a standalone schema under `preferred`, or `preferred_2`, … when
    /// that name holds a different schema. Returns the name used.
    fn register(&mut self, preferred: &str, schema: Value) -> String {
        let mut canon = schema.clone();
        if let Some(o) = canon.as_object_mut() {
            o.remove("title");
        }
        let name = self.free_name(&sanitize(preferred), &canon, &[]);
        self.canon.insert(name.clone(), canon);
        self.map.insert(name.clone(), schema);
        name
    }

    /// Moves a schemars root schema and its `$defs` into the components,
    /// rewriting `$ref`s; returns the component name of the root.
    fn absorb(&mut self, root: &Value, fallback: &str) -> String {
        let mut root = root.clone();
        let defs = root
            .as_object_mut()
            .and_then(|o| {
                o.remove("$schema");
                o.remove("$defs").or_else(|| o.remove("definitions"))
            })
            .and_then(|d| match d {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .unwrap_or_default();
        let title = root.get("title").and_then(Value::as_str).unwrap_or(fallback).to_owned();
        let mut locals = vec![Local {
            raw: String::new(),
            base: sanitize(&title),
            schema: root,
        }];
        locals.extend(defs.into_iter().map(|(raw, schema)| Local {
            base: sanitize(&raw),
            raw,
            schema,
        }));
        let index: BTreeMap<String, usize> = locals.iter().enumerate().map(|(i, l)| (l.raw.clone(), i)).collect();

        // The root first, then the definitions in name order: each takes its
        // preferred name unless another schema holds it.
        let mut chosen: Vec<(String, Value)> = Vec::with_capacity(locals.len());
        for i in 0..locals.len() {
            let canon = canonical(&locals, &index, i, &mut Vec::new());
            let name = self.free_name(&locals[i].base, &canon, &chosen);
            chosen.push((name, canon));
        }
        let names: Vec<String> = chosen.iter().map(|(n, _)| n.clone()).collect();
        for (local, (name, canon)) in locals.iter().zip(chosen) {
            self.map.insert(name.clone(), rewrite(&local.schema, &index, &names));
            self.canon.insert(name, canon);
        }
        names.into_iter().next().unwrap_or_default()
    }
}

/// A form of local `i` that does not depend on component names: local
/// references are replaced by the canonical form of their target (a
/// reference back into the current chain by its depth), so two schemas have
/// the same canonical form exactly when they describe the same structure.
fn canonical(locals: &[Local], index: &BTreeMap<String, usize>, i: usize, chain: &mut Vec<usize>) -> Value {
    if let Some(depth) = chain.iter().position(|&c| c == i) {
        return json!({ "$cycle": depth });
    }
    chain.push(i);
    let mut v = canonical_value(&locals[i].schema, locals, index, chain);
    chain.pop();
    // The component name stands for the title: a type's root schema (titled)
    // and its `$defs` entry (untitled) are one component.
    if let Some(o) = v.as_object_mut() {
        o.remove("title");
    }
    v
}

fn canonical_value(v: &Value, locals: &[Local], index: &BTreeMap<String, usize>, chain: &mut Vec<usize>) -> Value {
    match v {
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, x) in o {
                if k == "$ref"
                    && let Some((j, tail)) = x.as_str().and_then(|r| local_ref(r, index))
                {
                    out.insert(
                        "$ref".into(),
                        json!({ "target": canonical(locals, index, j, chain), "tail": tail }),
                    );
                    continue;
                }
                out.insert(k.clone(), canonical_value(x, locals, index, chain));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| canonical_value(x, locals, index, chain)).collect()),
        other => other.clone(),
    }
}

/// The local referenced by a `$ref` (`#` or `#/$defs/<name>[/…]`), with the rest of the pointer.
fn local_ref<'a>(reference: &'a str, index: &BTreeMap<String, usize>) -> Option<(usize, &'a str)> {
    if reference == "#" {
        return Some((0, ""));
    }
    let rest = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    let (segment, tail) = match rest.find('/') {
        Some(p) => (&rest[..p], &rest[p..]),
        None => (rest, ""),
    };
    let name = segment.replace("~1", "/").replace("~0", "~");
    index.get(&name).map(|&i| (i, tail))
}

/// The schema with local `$ref`s pointing into `components/schemas` and no `$schema` keys.
fn rewrite(schema: &Value, index: &BTreeMap<String, usize>, names: &[String]) -> Value {
    match schema {
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, v) in o {
                if k == "$schema" {
                    continue;
                }
                if k == "$ref"
                    && let Some((i, tail)) = v.as_str().and_then(|r| local_ref(r, index))
                {
                    out.insert(k.clone(), json!(format!("{SCHEMA_REF}{}{tail}", names[i])));
                    continue;
                }
                out.insert(k.clone(), rewrite(v, index, names));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| rewrite(v, index, names)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_of_string_constants_become_enums_and_tagged_unions_stay() {
        let mut v = json!({
            "Timeframe": { "description": "Bar timeframe.", "oneOf": [
                { "const": "M1", "type": "string", "description": "1 minute." },
                { "const": "H1", "type": "string", "description": "1 hour." },
            ] },
            "Stop": { "oneOf": [
                { "type": "object", "properties": { "type": { "const": "atr", "type": "string" } } },
                { "const": "none", "type": "string" },
            ] },
        });
        constant_unions_to_enums(&mut v);
        assert_eq!(
            v["Timeframe"],
            json!({ "type": "string", "enum": ["M1", "H1"], "description": "Bar timeframe. `M1`: 1 minute. `H1`: 1 hour." })
        );
        assert!(
            v["Stop"]["oneOf"].is_array(),
            "a union with an object branch stays: {}",
            v["Stop"]
        );
        let doc = document();
        let text = doc.to_string();
        assert!(!text.contains(r#""oneOf":[{"const""#), "no union of constants is left");
        assert_eq!(doc["components"]["schemas"]["Timeframe"]["enum"][0], "M1");
    }

    fn root(title: &str, defs: Value, props: Value) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": title,
            "type": "object",
            "properties": props,
            "$defs": defs,
        })
    }

    #[test]
    fn defs_move_to_components_and_refs_are_rewritten() {
        let mut s = Schemas::default();
        let name = s.absorb(
            &root(
                "A",
                json!({ "Side": { "enum": ["buy", "sell"] } }),
                json!({ "side": { "$ref": "#/$defs/Side" } }),
            ),
            "X",
        );
        assert_eq!(name, "A");
        assert_eq!(s.map["A"]["properties"]["side"]["$ref"], "#/components/schemas/Side");
        assert!(s.map["A"].get("$schema").is_none() && s.map["A"].get("$defs").is_none());
        assert_eq!(s.map["Side"], json!({ "enum": ["buy", "sell"] }));
    }

    #[test]
    fn clashes_get_suffixes_and_dependents_follow() {
        let mut s = Schemas::default();
        let a = root(
            "A",
            json!({ "Side": { "enum": ["buy", "sell"] }, "Leg": { "properties": { "s": { "$ref": "#/$defs/Side" } } } }),
            json!({ "leg": { "$ref": "#/$defs/Leg" } }),
        );
        let b = root(
            "B",
            json!({ "Side": { "enum": ["long", "short"] }, "Leg": { "properties": { "s": { "$ref": "#/$defs/Side" } } } }),
            json!({ "leg": { "$ref": "#/$defs/Leg" } }),
        );
        assert_eq!(s.absorb(&a, "X"), "A");
        assert_eq!(s.absorb(&b, "X"), "B");
        // Same again: identical schemas share components.
        assert_eq!(s.absorb(&b, "X"), "B");
        assert_eq!(s.map["Side_2"], json!({ "enum": ["long", "short"] }));
        assert_eq!(s.map["Leg_2"]["properties"]["s"]["$ref"], "#/components/schemas/Side_2");
        assert_eq!(s.map["B"]["properties"]["leg"]["$ref"], "#/components/schemas/Leg_2");
        assert_eq!(s.map["Leg"]["properties"]["s"]["$ref"], "#/components/schemas/Side");
        assert_eq!(s.map.len(), 6);
        // A different root with a clashing title.
        let a2 = root("A", json!({}), json!({ "x": { "type": "string" } }));
        assert_eq!(s.absorb(&a2, "X"), "A_2");
    }

    #[test]
    fn a_root_and_the_same_type_as_a_definition_share_one_component() {
        let mut s = Schemas::default();
        let item = json!({ "type": "object", "properties": { "id": { "type": "string" } } });
        let mut titled = item.clone();
        titled["title"] = json!("Item");
        assert_eq!(
            s.absorb(
                &root(
                    "List",
                    json!({ "Item": item }),
                    json!({ "items": { "$ref": "#/$defs/Item" } })
                ),
                "X"
            ),
            "List"
        );
        assert_eq!(s.absorb(&titled, "X"), "Item");
        assert!(!s.map.contains_key("Item_2"));
    }

    #[test]
    fn recursive_root_refs_point_at_the_root_component() {
        let mut s = Schemas::default();
        let name = s.absorb(
            &root("Tree", json!({}), json!({ "kids": { "items": { "$ref": "#" } } })),
            "X",
        );
        assert_eq!(
            s.map[&name]["properties"]["kids"]["items"]["$ref"],
            "#/components/schemas/Tree"
        );
    }

    #[test]
    fn parameters_drop_null() {
        let p = parameter(
            "count",
            "query",
            &json!({ "type": ["integer", "null"], "default": null, "description": "n" }),
            false,
        );
        assert_eq!(p["schema"], json!({ "type": "integer" }));
        assert_eq!(p["description"], "n");
        let p = parameter(
            "tf",
            "query",
            &json!({ "anyOf": [{ "$ref": "#/components/schemas/T" }, { "type": "null" }], "default": null }),
            false,
        );
        assert_eq!(p["schema"], json!({ "$ref": "#/components/schemas/T" }));
        assert_eq!(path_params("/a/{symbol}/b/{id:\\d+}"), vec!["symbol", "id"]);
    }
}
