//! `docs/rest-api.md` carries tables generated from the code: the
//! endpoint-to-capability table (from the tool catalog and `ROUTES`) and the
//! error-code table (from `openapi::ERROR_CODES`). This test fails when the
//! committed document differs from what the code generates;
//! `UPDATE_DOCS=1 cargo test -p tradeterm-rest --test capability_table`
//! rewrites the sections instead.

use std::path::PathBuf;

use tradeterm_rest::openapi::ERROR_CODES;
use tradeterm_rest::routes::{Auth, ROUTES};
use tradeterm_tools::{Gate, Target, catalog};

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/rest-api.md")
}

/// One row per catalog tool, in catalog order.
fn capability_table() -> String {
    let mut out = String::from("| Tool | REST route | Generic route | Capability | Target |\n|---|---|---|---|---|\n");
    for tool in catalog() {
        let named: Vec<String> = ROUTES
            .iter()
            .filter(|r| r.tool == tool.name)
            .map(|r| match r.auth {
                Auth::Bearer => format!("`{} {}`", r.method, r.path),
                Auth::MasterKey => format!("`{} {}` (master key)", r.method, r.path),
            })
            .collect();
        let named = if named.is_empty() {
            "—".to_owned()
        } else {
            named.join("<br>")
        };
        let capability = match tool.gate {
            Gate::Always => format!("`{}`", tool.capability.as_str()),
            Gate::LiveOnly => format!("`{}` for live calls; dry runs: any tier", tool.capability.as_str()),
        };
        let target = match tool.target {
            Target::Terminal => "terminal (`X-Terminal-Id`)",
            Target::License => "license-wide",
        };
        out.push_str(&format!(
            "| `{}` | {named} | `POST /api/v1/tools/{}` | {capability} | {target} |\n",
            tool.name, tool.name
        ));
    }
    out
}

fn error_table() -> String {
    let mut out = String::from("| Code | HTTP status | When |\n|---|---|---|\n");
    for c in ERROR_CODES {
        out.push_str(&format!("| `{}` | {} | {} |\n", c.code, c.status, c.meaning));
    }
    out
}

/// The text between `<!-- NAME:start -->` and `<!-- NAME:end -->`.
fn section<'a>(doc: &'a str, name: &str) -> (usize, usize, &'a str) {
    let start = format!("<!-- {name}:start -->\n");
    let end = format!("<!-- {name}:end -->");
    let s = doc
        .find(&start)
        .unwrap_or_else(|| panic!("docs/rest-api.md lacks the marker {start:?}"))
        + start.len();
    let e = s + doc[s..]
        .find(&end)
        .unwrap_or_else(|| panic!("docs/rest-api.md lacks the marker {end:?}"));
    (s, e, &doc[s..e])
}

#[test]
fn rest_api_doc_tables_match_the_code() {
    let path = doc_path();
    let mut doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let update = std::env::var("UPDATE_DOCS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, generated) in [("capability-table", capability_table()), ("error-table", error_table())] {
        let (s, e, current) = section(&doc, name);
        if current != generated {
            if update {
                doc.replace_range(s..e, &generated);
            } else {
                stale.push(format!(
                    "--- {name} in docs/rest-api.md:\n{current}\n--- generated:\n{generated}"
                ));
            }
        }
    }
    if update {
        std::fs::write(&path, doc).expect("write docs/rest-api.md");
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/rest-api.md is out of date; run `UPDATE_DOCS=1 cargo test -p tradeterm-rest --test capability_table`\n{}",
        stale.join("\n")
    );
}

#[test]
fn every_route_appears_in_the_table() {
    let table = capability_table();
    for r in ROUTES {
        assert!(
            table.contains(&format!("`{} {}`", r.method, r.path)),
            "{} {}",
            r.method,
            r.path
        );
    }
    assert_eq!(table.lines().count(), catalog().len() + 2);
}
