//! The MCP tool list, generated from the catalog (plus the two session
//! tools), and the mapping of tool outcomes onto MCP results.

use std::sync::{Arc, OnceLock};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::{Value, json};
use tradeterm_tools::groups::{ToolGroup, group_of};
use tradeterm_tools::{Charted, Tool, ToolError};

use crate::compact;

/// What one session's `tools/list` holds: the tools of some groups, with or
/// without output schemas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolListOptions {
    /// Groups whose tools are listed (`set_mode`/`get_mode` always are).
    pub groups: Vec<ToolGroup>,
    /// Whether each tool carries its output schema.
    pub output_schemas: bool,
}

impl Default for ToolListOptions {
    /// Every group, no output schemas: the default list.
    fn default() -> Self {
        Self {
            groups: ToolGroup::ALL.to_vec(),
            output_schemas: false,
        }
    }
}

impl ToolListOptions {
    /// Whether a tool may be listed and called under these options.
    pub fn allows(&self, name: &str) -> bool {
        crate::server::SESSION_TOOLS.contains(&name) || self.groups.contains(&group_of(name))
    }
}

/// Every tool of the default list: the catalog in its order, then the session
/// tools (`set_mode`, `get_mode`), in lean form (short descriptions, compact
/// input schemas, no output schemas; see [`crate::compact`]).
pub fn mcp_tools() -> &'static [McpTool] {
    static TOOLS: OnceLock<Vec<McpTool>> = OnceLock::new();
    TOOLS.get_or_init(|| build(false, compact::BUDGET_LEVELS[lean_level()]))
}

/// The index in [`compact::BUDGET_LEVELS`] of the default list's budgets:
/// the first level whose list fits in [`compact::LIST_TARGET_BYTES`] (the
/// last level when none does).
pub fn lean_level() -> usize {
    static LEVEL: OnceLock<usize> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let last = compact::BUDGET_LEVELS.len() - 1;
        (0..last)
            .find(|&i| {
                let list = build(false, compact::BUDGET_LEVELS[i]);
                serde_json::to_vec(&list).map_or(usize::MAX, |v| v.len()) <= compact::LIST_TARGET_BYTES
            })
            .unwrap_or(last)
    })
}

/// Every tool, each with its output schema (the opt-in list).
pub fn mcp_tools_with_output_schemas() -> &'static [McpTool] {
    static TOOLS: OnceLock<Vec<McpTool>> = OnceLock::new();
    TOOLS.get_or_init(|| build(true, compact::BUDGET_LEVELS[0]))
}

/// The tools a session with `options` lists.
pub fn list_for(options: &ToolListOptions) -> Vec<McpTool> {
    let all = if options.output_schemas {
        mcp_tools_with_output_schemas()
    } else {
        mcp_tools()
    };
    all.iter().filter(|t| options.allows(&t.name)).cloned().collect()
}

fn build(output_schemas: bool, budgets: compact::Budgets) -> Vec<McpTool> {
    let mut tools: Vec<McpTool> = tradeterm_tools::mcp_catalog()
        .map(|t| from_catalog(t, output_schemas, budgets))
        .collect();
    tools.extend(crate::server::session_tools(output_schemas, budgets));
    tools
}

fn object(schema: &Value) -> Arc<JsonObject> {
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

/// The MCP annotations of a tool. `readOnlyHint` is written only for
/// read-only tools, `openWorldHint` only when false and `idempotentHint`
/// only when true (MCP's defaults are false, true and false: a client
/// that reads a missing hint as "no" is then still right); a tool that
/// writes states `destructiveHint` explicitly, `true` included, so that a
/// client which does not apply MCP's default still sees a trading tool as
/// destructive (it means nothing for read-only tools). The title is the
/// tool's own, not repeated here.
pub(crate) fn annotations(read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> ToolAnnotations {
    let mut a = ToolAnnotations::default();
    a.read_only_hint = read_only.then_some(true);
    if !read_only {
        a.destructive_hint = Some(destructive);
        a.idempotent_hint = idempotent.then_some(true);
    }
    a.open_world_hint = (!open_world).then_some(false);
    a
}

/// What a trading tool's description says of its dry run, kept whatever the
/// budget.
const DRY_RUN_NOTE: &str = "DRY RUN BY DEFAULT";

/// A tool's description within `budget` characters. A tool that can change
/// the account gets twice the room, and one whose description says it runs
/// dry by default keeps that, however short the rest: its first sentences
/// within the budget, then `DRY RUN BY DEFAULT.`.
fn lean_description(full: &str, budget: usize, destructive: bool) -> String {
    if !destructive {
        return compact::shorten(full, budget);
    }
    match full.find(DRY_RUN_NOTE) {
        Some(at) => format!("{} {DRY_RUN_NOTE}.", compact::shorten(full[..at].trim_end(), budget)),
        None => compact::shorten(full, budget * 2),
    }
}

/// One catalog tool as an MCP tool: same name; the description shortened
/// and the input schema compacted ([`crate::compact`]); the title and the
/// output schema only in the opt-in list (`full`).
fn from_catalog(t: &Tool, full: bool, budgets: compact::Budgets) -> McpTool {
    let a = t.annotations;
    let destructive = a.destructive && !a.read_only;
    let description = lean_description(t.description, budgets.tool, destructive);
    let budgets = if destructive {
        budgets.for_destructive()
    } else {
        budgets
    };
    let input = if full {
        t.input_schema.clone()
    } else {
        compact::without_deep_choices(&t.input_schema)
    };
    let mut schema = compact::compact_input_schema(&input, budgets);
    keep_chart_description(t, &mut schema);
    let mut tool = McpTool::new(t.name, description, object(&schema)).with_annotations(annotations(
        a.read_only,
        a.destructive,
        a.idempotent,
        a.open_world,
    ));
    if full {
        tool = tool.with_title(t.title);
        if t.output_schema.is_object() {
            tool = tool.with_raw_output_schema(object(&t.output_schema));
        }
    }
    tool
}

/// Characters of the `chart` flag's description kept at every budget level.
const CHART_DESCRIPTION_CHARS: usize = 60;

/// The `chart` flag keeps a short description at every budget level (a
/// model cannot guess that it returns a picture): the catalog's, cut to
/// [`CHART_DESCRIPTION_CHARS`], where the level dropped or cut it shorter.
fn keep_chart_description(t: &Tool, lean: &mut Value) {
    let chart = tradeterm_tools::chart::CHART_PROPERTY;
    let Some(full) = t.input_schema["properties"][chart]["description"].as_str() else {
        return;
    };
    if let Some(prop) = lean
        .get_mut("properties")
        .and_then(|p| p.get_mut(chart))
        .and_then(Value::as_object_mut)
    {
        let kept = prop.get("description").and_then(Value::as_str).map_or(0, str::len);
        if kept < CHART_DESCRIPTION_CHARS.min(full.len()) {
            prop.insert(
                "description".into(),
                Value::String(compact::shorten(full, CHART_DESCRIPTION_CHARS)),
            );
        }
    }
}

/// A successful tool result: the output as structured content, and as JSON text
/// for clients that only read text.
pub(crate) fn success(output: Value) -> CallToolResult {
    CallToolResult::structured(output)
}

/// A successful tool result with its chart, when one was asked for: the
/// structured output and its JSON text as in [`success`], then the chart as
/// an image content (`image/png`, base64). A chart that cannot be drawn (a
/// malformed output: a bug, never the caller's input) is a tool error.
pub(crate) fn charted_success(charted: Charted, production: bool) -> CallToolResult {
    let Some(chart) = charted.chart else {
        return success(charted.output);
    };
    match tradeterm_charts::render_tool_chart(chart.kind.name(), &charted.output, chart.bars.as_ref()) {
        Ok(png) => {
            let mut result = success(charted.output);
            result
                .content
                .push(ContentBlock::image(png.base64(), tradeterm_charts::PNG_MIME));
            result
        }
        Err(e) => tool_error(&ToolError::Internal(format!("chart: {e}")), production),
    }
}

/// A tool error: `isError: true`, `{ "code", "message" }` (plus `retcode` for
/// rejected orders) in structured content, and `CODE: message` as text.
pub(crate) fn failure(code: &str, message: &str, retcode: Option<&str>) -> CallToolResult {
    let mut body = json!({ "code": code, "message": message });
    if let Some(r) = retcode {
        body["retcode"] = json!(r);
    }
    let mut result = CallToolResult::structured_error(body);
    result.content = vec![ContentBlock::text(format!("{code}: {message}"))];
    result
}

/// The MCP form of a catalog tool error. In production, internal details stay in the logs.
pub(crate) fn tool_error(e: &ToolError, production: bool) -> CallToolResult {
    let retcode = match e {
        ToolError::Rejected { retcode, .. } => Some(retcode.as_str()),
        _ => None,
    };
    let message = match e {
        ToolError::Internal(detail) if production => {
            tracing::error!(error = %detail, "internal error in an MCP tool call");
            "internal error".to_owned()
        }
        ToolError::Gateway(detail) if production => {
            tracing::warn!(error = %detail, "gateway failure in an MCP tool call");
            "the gateway could not be reached".to_owned()
        }
        other => other.to_string(),
    };
    failure(e.code(), &message, retcode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_tool_is_listed_lean_by_default_and_full_on_request() {
        let lean = mcp_tools();
        let full = mcp_tools_with_output_schemas();
        let catalog: Vec<_> = tradeterm_tools::mcp_catalog().collect();
        assert_eq!(lean.len(), catalog.len() + 2);
        assert_eq!(full.len(), lean.len());
        for ((t, m), f) in catalog.into_iter().zip(lean).zip(full) {
            assert_eq!(m.name, t.name);
            assert!(m.name.len() <= 64);
            let d = m.description.as_deref().unwrap_or_default();
            assert!(
                !d.is_empty() && d.chars().count() <= compact::BUDGET_LEVELS[0].tool,
                "{}",
                t.name
            );
            // Shortening keeps the catalog's words, from its start (and the
            // dry-run note of a trading tool, which the catalog says too).
            let normalised = t.description.split_whitespace().collect::<Vec<_>>().join(" ");
            let stem = match d.strip_suffix(" DRY RUN BY DEFAULT.") {
                Some(stem) => {
                    assert!(t.description.contains(DRY_RUN_NOTE), "{}", t.name);
                    stem
                }
                None => d,
            };
            assert!(normalised.starts_with(stem.trim_end_matches('…')), "{}: {d}", t.name);
            assert!(m.output_schema.is_none() && m.title.is_none(), "{}", t.name);
            assert_eq!(m.input_schema["type"], "object");
            assert!(m.input_schema.get("$schema").is_none());
            assert_eq!(
                m.input_schema.get("required"),
                t.input_schema.get("required"),
                "{}: required inputs",
                t.name
            );
            assert_eq!(
                f.output_schema.as_ref().map(|s| Value::Object((**s).clone())),
                Some(t.output_schema.clone())
            );
            assert_eq!(f.title.as_deref(), Some(t.title));
            let a = m.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint.unwrap_or(false), t.annotations.read_only);
            if !t.annotations.read_only {
                assert_eq!(
                    a.destructive_hint.unwrap_or(true),
                    t.annotations.destructive,
                    "{}",
                    t.name
                );
                assert_eq!(
                    a.idempotent_hint.unwrap_or(false),
                    t.annotations.idempotent,
                    "{}",
                    t.name
                );
            }
            assert_eq!(a.open_world_hint.unwrap_or(true), t.annotations.open_world);
        }
    }

    #[allow(clippy::print_stdout, reason = "the measured size is the benchmark's output")]
    #[test]
    fn the_default_list_fits_in_48_kib() {
        let bytes = serde_json::to_vec(mcp_tools()).unwrap().len();
        let full = serde_json::to_vec(mcp_tools_with_output_schemas()).unwrap().len();
        println!(
            "tools/list: {} tools, {bytes} bytes lean (budget level {}: {:?}), {full} bytes with output schemas",
            mcp_tools().len(),
            lean_level(),
            compact::BUDGET_LEVELS[lean_level()]
        );
        assert!(bytes <= compact::LIST_TARGET_BYTES, "{bytes} bytes");
        assert!(full > bytes);
        // The smallest level is the headroom left for tools still to come.
        for (i, budgets) in compact::BUDGET_LEVELS.iter().enumerate() {
            let size = serde_json::to_vec(&build(false, *budgets)).unwrap().len();
            println!("level {i} {budgets:?}: {size} bytes");
        }
    }

    /// Every trading tool that runs dry by default says so in the default
    /// list, at every budget level.
    #[test]
    fn trading_tools_keep_their_dry_run_note() {
        let dry: Vec<&Tool> = tradeterm_tools::catalog()
            .iter()
            .filter(|t| t.description.contains(DRY_RUN_NOTE))
            .collect();
        assert!(dry.len() >= 10, "{}", dry.len());
        for level in compact::BUDGET_LEVELS {
            for t in &dry {
                let d = lean_description(
                    t.description,
                    level.tool,
                    t.annotations.destructive && !t.annotations.read_only,
                );
                if t.annotations.destructive && !t.annotations.read_only {
                    assert!(d.ends_with("DRY RUN BY DEFAULT."), "{}: {d}", t.name);
                    assert!(
                        d.chars().count() <= level.tool + DRY_RUN_NOTE.len() + 2,
                        "{}: {d}",
                        t.name
                    );
                }
            }
        }
        assert_eq!(lean_description("Does a thing. More.", 56, true), "Does a thing. More.");
    }

    #[test]
    fn groups_filter_the_list_and_keep_the_session_tools() {
        let options = ToolListOptions {
            groups: vec![ToolGroup::Market],
            output_schemas: false,
        };
        let names: Vec<String> = list_for(&options).iter().map(|t| t.name.to_string()).collect();
        assert!(names.contains(&"get_tick".to_owned()) && names.contains(&"set_mode".to_owned()));
        assert!(!names.contains(&"place_order".to_owned()));
        assert!(
            names
                .iter()
                .all(|n| crate::SESSION_TOOLS.contains(&n.as_str()) || group_of(n) == ToolGroup::Market)
        );
        let none = ToolListOptions {
            groups: vec![],
            output_schemas: true,
        };
        let only: Vec<McpTool> = list_for(&none);
        assert_eq!(only.len(), 2);
        assert!(only.iter().all(|t| t.output_schema.is_some()));
    }

    #[test]
    fn errors_carry_the_code_in_structured_content_and_text() {
        let r = tool_error(
            &ToolError::Rejected {
                retcode: "no_money".into(),
                message: "not enough".into(),
            },
            true,
        );
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.unwrap();
        assert_eq!(
            (s["code"].as_str(), s["retcode"].as_str()),
            (Some("ORDER_REJECTED"), Some("no_money"))
        );
        let ContentBlock::Text(text) = &r.content[0] else {
            panic!("text content")
        };
        assert_eq!(text.text, "ORDER_REJECTED: not enough");
        let hidden = tool_error(&ToolError::Internal("postgres://admin:hunter2@db".into()), true);
        assert!(!hidden.structured_content.unwrap().to_string().contains("hunter2"));
    }
}
