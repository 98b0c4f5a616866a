//! The layering check of `docs/ARCHITECTURE.md`, computed from `cargo metadata`:
//!
//! - `tradeterm-core` depends on no other workspace crate and on no I/O crate
//!   (async runtimes, web frameworks, HTTP clients, databases), directly or
//!   transitively, through its normal dependencies.
//! - The adapters (`tradeterm-rest`, `tradeterm-mcp`, `tradeterm-gateway`)
//!   never depend on each other.
//! - `tradeterm-tools` depends on no adapter; `tradeterm-sim` depends on
//!   neither the gateway nor the store.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::Result;

/// Crates that mean I/O (or a runtime) and must never reach core.
const IO_CRATES: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "actix-web",
    "actix-rt",
    "actix-ws",
    "axum",
    "hyper",
    "reqwest",
    "sqlx",
    "rusqlite",
    "redis",
    "deadpool-redis",
    "tokio-tungstenite",
    "tungstenite",
    "mio",
    "rmcp",
];

const ADAPTERS: &[&str] = &["tradeterm-rest", "tradeterm-mcp", "tradeterm-gateway"];

/// A rule: `krate` must not depend (transitively, normal deps) on any of `forbidden`.
struct Rule {
    krate: &'static str,
    forbidden: Vec<&'static str>,
    why: &'static str,
}

fn rules() -> Vec<Rule> {
    let mut rules = vec![
        Rule {
            krate: "tradeterm-core",
            forbidden: IO_CRATES
                .iter()
                .copied()
                .chain([
                    "tradeterm-protocol",
                    "tradeterm-store",
                    "tradeterm-tools",
                    "tradeterm-gateway",
                    "tradeterm-rest",
                    "tradeterm-mcp",
                    "tradeterm-sim",
                ])
                .collect(),
            why: "core is pure: no I/O, no runtime, no other workspace crate",
        },
        Rule {
            krate: "tradeterm-tools",
            forbidden: ADAPTERS.to_vec(),
            why: "the tool catalog knows no adapter",
        },
        Rule {
            krate: "tradeterm-sim",
            forbidden: vec![
                "tradeterm-gateway",
                "tradeterm-store",
                "tradeterm-rest",
                "tradeterm-mcp",
            ],
            why: "the simulator speaks the protocol and never depends on the gateway",
        },
        Rule {
            krate: "tradeterm-protocol",
            forbidden: vec![
                "tradeterm-store",
                "tradeterm-gateway",
                "tradeterm-rest",
                "tradeterm-mcp",
                "tradeterm-tools",
            ],
            why: "the protocol is types plus one client",
        },
    ];
    for a in ADAPTERS {
        rules.push(Rule {
            krate: a,
            forbidden: ADAPTERS.iter().copied().filter(|b| b != a).collect(),
            why: "adapters never depend on each other",
        });
    }
    rules
}

/// Runs `cargo metadata` and checks every rule.
pub fn check() -> Result<()> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(crate::workspace_root())
        .args(["metadata", "--format-version", "1", "--all-features"])
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let meta: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata output: {e}"))?;
    let violations = violations(&meta)?;
    if violations.is_empty() {
        println!("layering: ok");
        Ok(())
    } else {
        Err(format!("layering violations:\n  {}", violations.join("\n  ")))
    }
}

/// Package name by package id.
type Names = BTreeMap<String, String>;
/// Normal-dependency edges by package id.
type Edges = BTreeMap<String, Vec<String>>;

/// Package name of each id, and the normal-dependency edges of the resolve graph.
fn graph(meta: &Value) -> Result<(Names, Edges)> {
    let mut names = BTreeMap::new();
    for p in meta["packages"].as_array().ok_or("metadata without packages")? {
        if let (Some(id), Some(name)) = (p["id"].as_str(), p["name"].as_str()) {
            names.insert(id.to_owned(), name.to_owned());
        }
    }
    let mut edges = BTreeMap::new();
    for node in meta["resolve"]["nodes"]
        .as_array()
        .ok_or("metadata without resolve graph")?
    {
        let Some(id) = node["id"].as_str() else { continue };
        let mut deps = Vec::new();
        for d in node["deps"].as_array().into_iter().flatten() {
            let normal = d["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null() || k["kind"].as_str() == Some("normal"));
            if normal && let Some(pkg) = d["pkg"].as_str() {
                deps.push(pkg.to_owned());
            }
        }
        edges.insert(id.to_owned(), deps);
    }
    Ok((names, edges))
}

fn violations(meta: &Value) -> Result<Vec<String>> {
    let (names, edges) = graph(meta)?;
    let mut found = Vec::new();
    for rule in rules() {
        let Some(start) = names
            .iter()
            .find(|(_, n)| n.as_str() == rule.krate)
            .map(|(id, _)| id.clone())
        else {
            continue; // crate not in the workspace (yet)
        };
        let mut seen = BTreeSet::new();
        let mut stack = vec![(start, vec![rule.krate.to_owned()])];
        while let Some((id, path)) = stack.pop() {
            for dep in edges.get(&id).into_iter().flatten() {
                if !seen.insert(dep.clone()) {
                    continue;
                }
                let name = names.get(dep).cloned().unwrap_or_default();
                let mut p = path.clone();
                p.push(name.clone());
                if rule.forbidden.contains(&name.as_str()) {
                    found.push(format!("{} ({}): {}", rule.krate, rule.why, p.join(" -> ")));
                }
                stack.push((dep.clone(), p));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(edges: &[(&str, &[&str])]) -> Value {
        let mut all: BTreeSet<&str> = BTreeSet::new();
        for (a, bs) in edges {
            all.insert(a);
            all.extend(bs.iter());
        }
        json!({
            "packages": all.iter().map(|n| json!({"id": n, "name": n})).collect::<Vec<_>>(),
            "resolve": {"nodes": all.iter().map(|n| json!({
                "id": n,
                "deps": edges.iter().filter(|(a, _)| a == n).flat_map(|(_, bs)| bs.iter())
                    .map(|b| json!({"pkg": b, "dep_kinds": [{"kind": null}]})).collect::<Vec<_>>()
            })).collect::<Vec<_>>()}
        })
    }

    #[test]
    fn detects_transitive_io_in_core_and_adapter_cycles() {
        let bad = meta(&[("tradeterm-core", &["helper"]), ("helper", &["tokio"])]);
        let v = violations(&bad).unwrap();
        assert_eq!(v.len(), 1);
        assert!(v[0].contains("tradeterm-core -> helper -> tokio"));

        let bad = meta(&[("tradeterm-rest", &["tradeterm-gateway"])]);
        assert_eq!(violations(&bad).unwrap().len(), 1);

        let good = meta(&[
            ("tradeterm-core", &["serde"]),
            ("tradeterm-rest", &["tradeterm-tools", "tokio"]),
            ("tradeterm-tools", &["tradeterm-core"]),
        ]);
        assert!(violations(&good).unwrap().is_empty());
    }

    #[test]
    fn the_real_workspace_is_layered() {
        check().unwrap();
    }
}
