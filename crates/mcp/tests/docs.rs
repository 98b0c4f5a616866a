//! `docs/tools.md` says what the MCP server really lists.

#[test]
fn docs_tools_md_marks_every_mcp_tool_available_on_mcp() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tools.md")).unwrap();
    for tool in tradeterm_mcp::mcp_tools() {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", tool.name)))
            .unwrap_or_else(|| panic!("docs/tools.md has no row for `{}`", tool.name));
        let expected = if tradeterm_mcp::SESSION_TOOLS.contains(&tool.name.as_ref()) {
            "available (MCP only)"
        } else {
            "available (REST and MCP)"
        };
        assert!(
            row.contains(expected),
            "docs/tools.md must mark `{}` {expected}: {row}",
            tool.name
        );
    }
}
