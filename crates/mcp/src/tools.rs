//! The MCP tool list, generated from the catalog (plus the two session
//! tools), and the mapping of tool outcomes onto MCP results.

use std::sync::{Arc, OnceLock};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::{Value, json};
use tradeterm_tools::{Tool, ToolError};

/// Every tool the MCP server lists: the catalog in its order, then the
/// session tools (`set_mode`, `get_mode`).
pub fn mcp_tools() -> &'static [McpTool] {
    static TOOLS: OnceLock<Vec<McpTool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let mut tools: Vec<McpTool> = tradeterm_tools::catalog().iter().map(from_catalog).collect();
        tools.extend(crate::server::session_tools());
        tools
    })
}

fn object(schema: &Value) -> Arc<JsonObject> {
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

/// One catalog tool as an MCP tool: same name, description, schemas; annotations
/// from the catalog's.
fn from_catalog(t: &Tool) -> McpTool {
    let a = t.annotations;
    let annotations = ToolAnnotations::with_title(t.title)
        .read_only(a.read_only)
        .destructive(a.destructive)
        .idempotent(a.idempotent)
        .open_world(a.open_world);
    let mut tool = McpTool::new(t.name, t.description, object(&t.input_schema))
        .with_title(t.title)
        .with_annotations(annotations);
    if t.output_schema.is_object() {
        tool = tool.with_raw_output_schema(object(&t.output_schema));
    }
    tool
}

/// A successful tool result: the output as structured content, and as JSON text
/// for clients that only read text.
pub(crate) fn success(output: Value) -> CallToolResult {
    CallToolResult::structured(output)
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
    fn every_catalog_tool_is_listed_with_its_schemas_and_annotations() {
        let tools = mcp_tools();
        for (t, m) in tradeterm_tools::catalog().iter().zip(tools) {
            assert_eq!(m.name, t.name);
            assert!(m.name.len() <= 64);
            assert_eq!(m.description.as_deref(), Some(t.description));
            assert_eq!(Value::Object((*m.input_schema).clone()), t.input_schema);
            assert_eq!(
                m.output_schema.as_ref().map(|s| Value::Object((**s).clone())),
                Some(t.output_schema.clone())
            );
            let a = m.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint, Some(t.annotations.read_only));
            assert_eq!(a.destructive_hint, Some(t.annotations.destructive));
            assert_eq!(a.idempotent_hint, Some(t.annotations.idempotent));
            assert_eq!(a.open_world_hint, Some(t.annotations.open_world));
        }
        assert_eq!(tools.len(), tradeterm_tools::catalog().len() + 2);
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
