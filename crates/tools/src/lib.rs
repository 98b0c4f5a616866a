//! # tradeterm-tools
//!
//! The tool catalog: the single source of truth for what tradeterm can do.
//! Each tool has a name, a description written for the AI clients and
//! developers who read it, a required capability, truthful annotations
//! (read-only, destructive, idempotent), an input and an output JSON Schema
//! generated from its Rust types, and an async handler.
//!
//! The REST routes (`POST /api/v1/tools/{name}` and the named routes), the
//! OpenAPI document and the MCP tool list are all generated from
//! [`catalog()`], so a tool added here appears everywhere with the same name,
//! schema and capability.
//!
//! Handlers reach terminals only through [`tradeterm_protocol::Dispatch`] and
//! persistence only through [`tradeterm_store::Store`]; they compute with
//! `tradeterm-core`.
//!
//! Every adapter calls a tool the same way ([`services`]): the binary builds
//! one [`Services`] bundle, the adapter authenticates a [`Caller`], and
//! [`invoke`] does the rest (capability gate, terminal resolution, the one
//! [`ToolContext`] constructor, tracing, logging of failures).
//!
//! **Architecture invariant:** no adapter (REST, MCP, gateway) is known here.
//! **Safety invariant:** every trade-affecting tool is a dry run unless the
//! input says `"dry_run": false` and the context does not force dry runs; a
//! live call needs the `trade` capability and the terminal's trading
//! permissions, else [`ToolError::TradingDisabled`]. Invalid requests fail
//! closed: nothing is sent.

mod account;
pub mod alert_engine;
mod alert_rules;
mod alerts;
mod analytics;
pub mod audit;
mod backtest;
pub mod bar_watch;
pub mod calendar_feed;
pub mod chart;
mod coaching;
mod compute;
pub mod confirm;
mod context;
mod costs;
mod equity_guard;
mod error;
pub mod etf;
mod event_analysis;
pub mod events;
mod execution_quality;
pub mod groups;
mod journal;
mod levels;
mod macro_context;
pub mod managed;
mod market;
mod market_analysis;
pub mod monitor;
pub mod news;
pub mod news_watch;
mod patterns;
mod portfolio;
mod prop_firm;
pub mod ratelimit;
pub mod schema;
mod scope;
pub mod services;
mod sizing;
mod state;
mod structure;
mod trade_stats;
mod trading;
pub mod webhooks;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

pub use chart::{ChartData, ChartKind, Charted, invoke_charted};
pub use context::ToolContext;
pub use error::ToolError;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
pub use services::{
    Caller, Invocation, RateLimits, ServiceSettings, Services, TerminalChoice, invoke, reads_terminal_only,
    valid_terminal_id,
};
pub use tradeterm_core::license::Capability;

/// Boxed future of a tool call.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send>>;
type Handler = Arc<dyn Fn(ToolContext, Value) -> ToolFuture + Send + Sync>;

/// Behavioural hints for clients (MCP tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Annotations {
    /// The tool never changes anything.
    pub read_only: bool,
    /// The tool may change the trading account irreversibly (when live).
    pub destructive: bool,
    /// Calling it twice with the same input has the effect of calling it once.
    pub idempotent: bool,
    /// The tool talks to a world outside tradeterm (the trading terminal).
    pub open_world: bool,
}

/// How a tool is gated by capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The caller must hold the capability for any call.
    Always,
    /// Trade tools: dry runs are open to every tier; live calls need `trade`
    /// (else `TRADING_DISABLED`).
    LiveOnly,
}

/// Whether a tool works on one terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Needs a terminal (`X-Terminal-Id`, or the only connected one).
    Terminal,
    /// License-wide (journal, terminal list).
    License,
}

/// One tool of the catalog.
#[derive(Clone)]
pub struct Tool {
    /// Name (snake_case, ≤ 64 characters), the same on every surface.
    pub name: &'static str,
    /// Short human title.
    pub title: &'static str,
    /// What it does, for the reader of a tool list.
    pub description: &'static str,
    /// Capability it needs.
    pub capability: Capability,
    /// How the capability is enforced.
    pub gate: Gate,
    /// Terminal-scoped or license-wide.
    pub target: Target,
    /// A terminal-scoped tool that still answers with no terminal connected
    /// (a license-level read whose only terminal data, the calendar, has the
    /// server's as fallback): without `X-Terminal-Id` and with no terminal
    /// of the license connected, it runs with no terminal.
    pub terminal_optional: bool,
    /// Behavioural hints.
    pub annotations: Annotations,
    /// JSON Schema of the input (an object).
    pub input_schema: Value,
    /// JSON Schema of the output.
    pub output_schema: Value,
    /// What the tool's chart shows, for the tools that draw one on request
    /// (`"chart": true`, see [`chart`]); set by [`catalog`] from
    /// [`ChartKind::of`].
    pub chart: Option<ChartKind>,
    handler: Handler,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("capability", &self.capability)
            .finish()
    }
}

impl Tool {
    /// Marks a terminal-scoped tool [`terminal_optional`](Self::terminal_optional).
    pub(crate) fn terminal_optional(mut self) -> Self {
        self.terminal_optional = true;
        self
    }

    /// Runs the tool on a ready context: capability gate, input validation,
    /// handler. Adapters call [`invoke`], which makes the context. The
    /// `chart` flag of a chartable tool is taken out here, so no handler
    /// sees it ([`chart::take_chart_flag`]).
    pub async fn call(&self, ctx: ToolContext, input: Value) -> Result<Value, ToolError> {
        services::gate(self, &ctx.caps)?;
        if self.target == Target::Terminal && ctx.terminal_id.is_none() && !self.terminal_optional {
            return Err(ToolError::TerminalRequired);
        }
        let mut input = if input.is_null() {
            Value::Object(Default::default())
        } else {
            input
        };
        chart::take_chart_flag(self, &mut input)?;
        (self.handler)(ctx, input).await
    }
}

/// Builder of a [`Tool`] from typed input, output and handler.
pub(crate) struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub capability: Capability,
    pub gate: Gate,
    pub target: Target,
    pub annotations: Annotations,
}

/// Read-only annotations for tools that query a terminal.
pub(crate) const READ_TERMINAL: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};

/// JSON Schema of a type, as a JSON value (draft 2020-12, only standard
/// `format` values: see [`schema`]).
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = schema::input_settings().into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null)
}

/// JSON Schema of a type as it is serialised (outputs), with the same rules
/// as [`schema_of`].
pub fn output_schema_of<T: JsonSchema>() -> Value {
    let generator = schema::output_settings().into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null)
}

/// An input that does not deserialize, named by where it went wrong
/// (`bars.timeframes[0]: unknown variant …`). The path is found by a second
/// pass that runs only on this error path, so a valid input costs nothing.
fn input_error<I: DeserializeOwned>(raw: &Value, e: serde_json::Error) -> String {
    match serde_path_to_error::deserialize::<_, I>(raw) {
        Err(p) if p.path().iter().next().is_some() => format!("{}: {}", p.path(), p.inner()),
        _ => e.to_string(),
    }
}

impl ToolSpec {
    pub fn build<I, O, F, Fut>(self, handler_fn: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(ToolContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let handler_fn = Arc::new(handler_fn);
        let handler: Handler = Arc::new(move |ctx, mut raw| {
            let handler_fn = handler_fn.clone();
            Box::pin(async move {
                schema::integral_numbers(&mut raw);
                let input: I = <I as serde::Deserialize>::deserialize(&raw)
                    .map_err(|e| ToolError::InvalidInput(input_error::<I>(&raw, e)))?;
                let out = handler_fn(ctx, input).await?;
                serde_json::to_value(out).map_err(|e| ToolError::Internal(e.to_string()))
            })
        });
        Tool {
            name: self.name,
            title: self.title,
            description: self.description,
            capability: self.capability,
            gate: self.gate,
            target: self.target,
            terminal_optional: false,
            annotations: self.annotations,
            input_schema: schema_of::<I>(),
            output_schema: output_schema_of::<O>(),
            chart: None,
            handler,
        }
    }
}

/// The catalog, in a stable order.
pub fn catalog() -> &'static [Tool] {
    static CATALOG: OnceLock<Vec<Tool>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut tools = Vec::new();
        tools.extend(market::tools());
        tools.extend(account::tools());
        tools.extend(trading::tools());
        tools.extend(managed::tools());
        tools.extend(journal::tools());
        tools.extend(analytics::tools());
        tools.extend(backtest::tools());
        tools.extend(structure::tools());
        tools.extend(market_analysis::tools());
        tools.extend(coaching::tools());
        tools.extend(portfolio::tools());
        tools.extend(costs::tools());
        tools.extend(events::tools());
        tools.extend(event_analysis::tools());
        tools.extend(macro_context::tools());
        tools.extend(prop_firm::tools());
        tools.extend(equity_guard::tools());
        tools.extend(news::tools());
        tools.extend(alerts::tools());
        tools.extend(alert_rules::tools());
        tools.extend(state::tools());
        tools.extend(etf::tools());
        tools.extend(sizing::tools());
        tools.extend(trade_stats::tools());
        tools.extend(execution_quality::tools());
        tools.extend(levels::tools());
        tools.extend(patterns::tools());
        tools.extend(webhooks::tools());
        tools.extend(audit::tools());
        // Chartable tools: marked, and their input takes `chart`, here in one place.
        for tool in &mut tools {
            tool.chart = ChartKind::of(tool.name);
            if let Some(kind) = tool.chart {
                chart::add_chart_property(&mut tool.input_schema, kind);
            }
        }
        tools
    })
}

/// Tools only the license's master key may call (the webhook management
/// tools): an MCP session, which always authenticates with a terminal key,
/// could only get `FORBIDDEN` from them, so the MCP tool list leaves them
/// out ([`mcp_catalog`]); REST serves them (`/api/webhooks`).
pub const MASTER_KEY_ONLY: &[&str] = &[
    "create_webhook",
    "list_webhooks",
    "get_webhook",
    "update_webhook",
    "delete_webhook",
    "test_webhook",
    // The `audit` capability is the master key's (no tier holds it), and MCP
    // sessions authenticate with terminal keys.
    "get_audit_log",
];

/// The catalog as MCP lists it: every tool but [`MASTER_KEY_ONLY`].
pub fn mcp_catalog() -> impl Iterator<Item = &'static Tool> {
    catalog().iter().filter(|t| !MASTER_KEY_ONLY.contains(&t.name))
}

/// A tool by name.
pub fn find(name: &str) -> Option<&'static Tool> {
    catalog().iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_names_are_unique_short_and_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for tool in catalog() {
            assert!(seen.insert(tool.name), "duplicate tool {}", tool.name);
            assert!(tool.name.len() <= 64);
            assert!(
                tool.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                tool.name
            );
            assert!(!tool.description.is_empty());
            assert_eq!(
                tool.input_schema["type"], "object",
                "{} input must be an object schema",
                tool.name
            );
            if tool.annotations.destructive {
                assert!(!tool.annotations.read_only, "{}", tool.name);
            }
        }
        for spec_tool in [
            "get_tick",
            "place_order",
            "close_position",
            "modify_position",
            "reverse_position",
        ] {
            assert!(find(spec_tool).is_some(), "{spec_tool} missing");
        }
    }

    #[test]
    fn an_input_error_names_where_it_is() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            timeframes: Vec<tradeterm_core::Timeframe>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Input {
            name: String,
            bars: Option<Inner>,
        }
        let bad = serde_json::json!({ "name": "x", "bars": { "timeframes": ["M1", "M7"] } });
        let e = <Input as serde::Deserialize>::deserialize(&bad).unwrap_err();
        let msg = input_error::<Input>(&bad, e);
        assert!(msg.starts_with("bars.timeframes[1]: unknown variant `M7`"), "{msg}");
        // At the top level there is no path to name: serde's message as is.
        let top = serde_json::json!({ "bars": null });
        let e = <Input as serde::Deserialize>::deserialize(&top).unwrap_err();
        assert_eq!(input_error::<Input>(&top, e), "missing field `name`");
    }
}

#[cfg(test)]
mod doc_tests {
    #[test]
    fn docs_tools_md_lists_every_catalog_tool() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tools.md")).unwrap();
        for t in super::catalog() {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", t.name)))
                .unwrap_or_else(|| panic!("docs/tools.md has no row for `{}`", t.name));
            assert!(
                row.contains(&format!("`{}`", t.capability.as_str())),
                "capability of {} in docs/tools.md",
                t.name
            );
            assert!(
                row.contains("available"),
                "docs/tools.md must mark `{}` available",
                t.name
            );
        }
    }
}
