//! The layering check of `docs/ARCHITECTURE.md`, computed from `cargo metadata`:
//!
//! - `tradeterm-core` depends on no other workspace crate and on no I/O crate
//!   (async runtimes, web frameworks, HTTP clients, databases), directly or
//!   transitively, through its normal dependencies.
//! - The adapters (`tradeterm-rest`, `tradeterm-mcp`, `tradeterm-gateway`)
//!   never depend on each other.
//! - `tradeterm-tools` depends on no adapter; `tradeterm-sim` depends on
//!   neither the gateway nor the store.
//! - The gateway never depends on the tool catalog (it dispatches and never
//!   computes tools); the MCP connector (`tradeterm-mcp-connect`) depends on
//!   no other workspace crate and no database driver; the start-up crate
//!   (`tradeterm-boot`) knows no adapter.
//! - The dashboard (`tradeterm-dashboard`, the gateway's web page) depends on
//!   the gateway but never on the tool catalog, the REST or MCP adapters or
//!   the simulator; nothing but binaries depends on it.
//! - The observability crate (`tradeterm-telemetry`) is a leaf: it depends
//!   on no workspace crate, and neither core, the renderer nor the MCP
//!   connector depends on it.
//! - The renderer (`tradeterm-charts`) is pure: no I/O crate and no
//!   workspace crate but core. Plotting and image encoding ([`RENDERING`])
//!   reach nothing else through core or the tool catalog, and the adapters
//!   that draw charts (REST, MCP) reach them only through the renderer
//!   ([`DIRECT_RULES`]: no direct dependency on plotters or png).
//!
//! And per binary package, from `cargo tree -p <package> -e normal` (the
//! features that package alone enables, i.e. what its binary links):
//! [`BINARIES`] lists which workspace crates and which heavy external crates
//! each must not reach. [`core_alone`] (run by `cargo xtask lint`) builds
//! `tradeterm-core` on its own, so that a feature another crate enables (a
//! clock in chrono, say) cannot hide a broken "no clock, no I/O" promise.

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

/// Crates only the CLI may link: progress bars.
const CLI_ONLY: &[&str] = &["indicatif"];

/// The renderer and the plotting and encoding crates it alone uses directly
/// (the CLI and the REST and MCP servers link them through it).
const RENDERING: &[&str] = &["tradeterm-charts", "plotters", "png"];

/// What one binary package must not link.
pub struct BinaryRule {
    /// Package name (as in its `Cargo.toml`).
    pub package: &'static str,
    /// Crates it must not reach.
    pub forbidden: &'static [&'static str],
    /// Also follow dev-dependencies (`cargo tree` without `-e normal`).
    pub with_dev: bool,
    /// Why.
    pub why: &'static str,
}

/// The binaries and what they serve: each links only that.
pub const BINARIES: &[BinaryRule] = &[
    BinaryRule {
        package: "tradeterm-api",
        forbidden: &[
            "tradeterm-gateway",
            "tradeterm-dashboard",
            "tradeterm-mcp",
            "tradeterm-mcp-connect",
            "tradeterm-sim",
            "rmcp",
            "axum",
            "indicatif",
        ],
        with_dev: false,
        why: "the REST API links no gateway, MCP or simulator code, nor the CLI's progress bars (charts: through tradeterm-charts only)",
    },
    BinaryRule {
        package: "tradeterm-mcp-server",
        forbidden: &[
            "tradeterm-rest",
            "tradeterm-gateway",
            "tradeterm-dashboard",
            "tradeterm-sim",
            "tradeterm-mcp-connect",
            "actix-web",
            "indicatif",
        ],
        with_dev: false,
        why: "the MCP server links no REST, gateway or simulator code, nor the CLI's progress bars (charts: through tradeterm-charts only)",
    },
    BinaryRule {
        package: "tradeterm-gateway-bin",
        forbidden: &[
            "tradeterm-tools",
            "tradeterm-rest",
            "tradeterm-mcp",
            "tradeterm-mcp-connect",
            "tradeterm-sim",
            "rmcp",
            "axum",
            "tradeterm-charts",
            "plotters",
            "png",
            "indicatif",
        ],
        with_dev: false,
        why: "the gateway links no tool, adapter or simulator code, nor charts",
    },
    BinaryRule {
        package: "tradeterm-connect",
        forbidden: &[
            "sqlx",
            "tradeterm-telemetry",
            "tradeterm-store",
            "tradeterm-core",
            "tradeterm-protocol",
            "tradeterm-tools",
            "tradeterm-gateway",
            "tradeterm-dashboard",
            "tradeterm-rest",
            "tradeterm-mcp",
            "tradeterm-sim",
            "actix-web",
            "axum",
            "tradeterm-charts",
            "plotters",
            "png",
            "indicatif",
        ],
        with_dev: true,
        why: "the stdio connector only relays MCP frames (not even its tests pull a database driver)",
    },
    BinaryRule {
        package: "tradeterm-sim-bin",
        forbidden: &[
            "sqlx",
            "tradeterm-store",
            "tradeterm-tools",
            "tradeterm-gateway",
            "tradeterm-dashboard",
            "tradeterm-rest",
            "tradeterm-mcp",
            "actix-web",
            "tradeterm-charts",
            "plotters",
            "png",
            "indicatif",
        ],
        with_dev: false,
        why: "the simulator speaks the agent protocol and links no server, database or charts",
    },
];

/// Crates that must not depend *directly* on some crates they may reach
/// through another: `(crate, forbidden direct dependencies, why)`.
pub const DIRECT_RULES: &[(&str, &[&str], &str)] = &[
    (
        "tradeterm-rest",
        &["plotters", "png"],
        "the REST API draws charts through tradeterm-charts only",
    ),
    (
        "tradeterm-mcp",
        &["plotters", "png"],
        "the MCP server draws charts through tradeterm-charts only",
    ),
];

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
                    "tradeterm-telemetry",
                ])
                .chain(RENDERING.iter().copied())
                .collect(),
            why: "core is pure: no I/O, no runtime, no other workspace crate, no plotting",
        },
        Rule {
            krate: "tradeterm-telemetry",
            forbidden: vec![
                "tradeterm-core",
                "tradeterm-protocol",
                "tradeterm-store",
                "tradeterm-tools",
                "tradeterm-gateway",
                "tradeterm-rest",
                "tradeterm-mcp",
                "tradeterm-mcp-connect",
                "tradeterm-boot",
                "tradeterm-dashboard",
                "tradeterm-sim",
                "tradeterm-charts",
            ],
            why: "telemetry is a leaf: the adapters, the store and the protocol client depend on it, never the reverse",
        },
        Rule {
            krate: "tradeterm-tools",
            forbidden: ADAPTERS.iter().chain(RENDERING).copied().collect(),
            why: "the tool catalog knows no adapter and draws nothing (it says which tools have a chart)",
        },
        Rule {
            krate: "tradeterm-charts",
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
                    "tradeterm-mcp-connect",
                    "tradeterm-boot",
                    "tradeterm-sim",
                    "tradeterm-telemetry",
                ])
                .chain(CLI_ONLY.iter().copied())
                .collect(),
            why: "the renderer is pure: data in, image bytes out; no I/O, no runtime, no workspace crate but core",
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
        Rule {
            krate: "tradeterm-cluster",
            forbidden: vec![
                "tradeterm-store",
                "tradeterm-gateway",
                "tradeterm-rest",
                "tradeterm-mcp",
                "tradeterm-tools",
                "tradeterm-sim",
                "tradeterm-boot",
                "sqlx",
            ],
            why: "the route table and its dispatch client: Redis and the protocol's client, no adapter, no store",
        },
    ];
    for a in ADAPTERS {
        rules.push(Rule {
            krate: a,
            forbidden: ADAPTERS.iter().copied().filter(|b| b != a).collect(),
            why: "adapters never depend on each other",
        });
    }
    rules.push(Rule {
        krate: "tradeterm-gateway",
        forbidden: vec!["tradeterm-tools", "tradeterm-sim", "tradeterm-dashboard"],
        why: "the gateway dispatches and never computes tools (its web page is a crate on top of it)",
    });
    rules.push(Rule {
        krate: "tradeterm-dashboard",
        forbidden: vec![
            "tradeterm-tools",
            "tradeterm-rest",
            "tradeterm-mcp",
            "tradeterm-mcp-connect",
            "tradeterm-sim",
        ],
        why: "the dashboard is the gateway's page: rules and alerts come through the `Insights` the binary gives it",
    });
    for adapter in ["tradeterm-rest", "tradeterm-mcp", "tradeterm-tools"] {
        rules.push(Rule {
            krate: adapter,
            forbidden: vec!["tradeterm-dashboard"],
            why: "only binaries mount the dashboard",
        });
    }
    rules.push(Rule {
        krate: "tradeterm-mcp-connect",
        forbidden: vec![
            "tradeterm-core",
            "tradeterm-protocol",
            "tradeterm-store",
            "tradeterm-tools",
            "tradeterm-gateway",
            "tradeterm-rest",
            "tradeterm-mcp",
            "tradeterm-sim",
            "tradeterm-telemetry",
            "sqlx",
        ],
        why: "the connector relays MCP frames and knows nothing else",
    });
    rules.push(Rule {
        krate: "tradeterm-boot",
        forbidden: ADAPTERS
            .iter()
            .copied()
            .chain(["tradeterm-sim", "tradeterm-dashboard"])
            .chain(CLI_ONLY.iter().copied())
            .chain(RENDERING.iter().copied())
            .collect(),
        why: "start-up glue shared by single-purpose binaries knows no adapter and draws nothing",
    });
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
    let mut violations = violations(&meta)?;
    for rule in BINARIES {
        violations.extend(binary_violations(rule, &linked(rule)?));
    }
    if violations.is_empty() {
        println!("layering: ok");
        Ok(())
    } else {
        Err(format!("layering violations:\n  {}", violations.join("\n  ")))
    }
}

/// The packages `rule.package` reaches, with the features it alone enables.
fn linked(rule: &BinaryRule) -> Result<BTreeSet<String>> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(crate::workspace_root())
        .args(["tree", "-p", rule.package, "--prefix", "none", "-f", "{p}"]);
    if !rule.with_dev {
        cmd.args(["-e", "normal"]);
    }
    let out = cmd.output().map_err(|e| format!("cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo tree -p {} failed: {}",
            rule.package,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// The crates of `rule.forbidden` among `linked`.
fn binary_violations(rule: &BinaryRule, linked: &BTreeSet<String>) -> Vec<String> {
    rule.forbidden
        .iter()
        .filter(|f| linked.contains(**f))
        .map(|f| {
            format!(
                "binary {} ({}): links {f} (see `cargo tree -p {} -e normal -i {f}`)",
                rule.package, rule.why, rule.package
            )
        })
        .collect()
}

/// Builds `tradeterm-core` alone (`cargo check -p tradeterm-core --lib`): with
/// only its own features, so that a feature enabled by another workspace
/// crate cannot hide an I/O or clock dependency; then `tradeterm-connect`
/// alone, as `cargo install` builds it.
pub fn core_alone() -> Result<()> {
    crate::run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(crate::workspace_root())
            .args(["check", "-p", "tradeterm-core", "--lib"]),
    )?;
    // The stdio connector is what users install on its own (`cargo install
    // --path bins/tradeterm-connect`): built alone, its crates get only the
    // features they ask for, which a workspace build hides (it once lacked
    // rmcp's `server`).
    crate::run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(crate::workspace_root())
            .args(["check", "-p", "tradeterm-connect", "--bins"]),
    )
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
    for (krate, forbidden, why) in DIRECT_RULES {
        let Some((start, _)) = names.iter().find(|(_, n)| n.as_str() == *krate) else {
            continue;
        };
        for dep in edges.get(start).into_iter().flatten() {
            let name = names.get(dep).map(String::as_str).unwrap_or_default();
            if forbidden.contains(&name) {
                found.push(format!("{krate} ({why}): depends directly on {name}"));
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
    fn binary_rules_name_what_a_binary_must_not_link() {
        let rule = BINARIES.iter().find(|r| r.package == "tradeterm-connect").unwrap();
        let linked: BTreeSet<String> = ["tradeterm-connect", "rmcp", "sqlx"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let v = binary_violations(rule, &linked);
        assert_eq!(v.len(), 1);
        assert!(v[0].contains("links sqlx"), "{v:?}");
        let clean: BTreeSet<String> = ["tradeterm-connect", "rmcp"].iter().map(|s| (*s).to_owned()).collect();
        assert!(binary_violations(rule, &clean).is_empty());
        let bad = meta(&[("tradeterm-gateway", &["tradeterm-tools"])]);
        assert_eq!(violations(&bad).unwrap().len(), 1, "gateway -> tools is refused");
        let bad = meta(&[("tradeterm-dashboard", &["tradeterm-gateway", "tradeterm-tools"])]);
        let v = violations(&bad).unwrap();
        assert_eq!(v.len(), 1, "dashboard -> tools is refused: {v:?}");
        assert!(v[0].contains("tradeterm-dashboard -> tradeterm-tools"));
        let good = meta(&[("tradeterm-dashboard", &["tradeterm-gateway", "tradeterm-store"])]);
        assert!(violations(&good).unwrap().is_empty());
    }

    #[test]
    fn charts_are_drawn_by_the_renderer_only() {
        let good = meta(&[
            ("tradeterm-rest", &["tradeterm-charts", "tradeterm-tools"]),
            ("tradeterm-charts", &["plotters", "png", "tradeterm-core"]),
        ]);
        assert!(violations(&good).unwrap().is_empty());
        let direct = meta(&[("tradeterm-mcp", &["tradeterm-charts", "plotters"])]);
        let v = violations(&direct).unwrap();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("depends directly on plotters"), "{v:?}");
        let impure = meta(&[
            ("tradeterm-charts", &["tradeterm-tools"]),
            ("tradeterm-tools", &["tokio"]),
        ]);
        assert_eq!(
            violations(&impure).unwrap().len(),
            2,
            "charts reaches tools, and tokio through it"
        );
        let drawing_catalog = meta(&[("tradeterm-tools", &["tradeterm-charts"])]);
        assert_eq!(violations(&drawing_catalog).unwrap().len(), 1);
    }

    #[test]
    fn telemetry_is_a_leaf_that_core_never_reaches() {
        let good = meta(&[
            ("tradeterm-rest", &["tradeterm-telemetry", "tradeterm-tools"]),
            ("tradeterm-store", &["tradeterm-telemetry"]),
            ("tradeterm-telemetry", &["metrics"]),
        ]);
        assert!(violations(&good).unwrap().is_empty());
        let core = meta(&[("tradeterm-core", &["tradeterm-telemetry"])]);
        assert_eq!(violations(&core).unwrap().len(), 1, "core -> telemetry is refused");
        let up = meta(&[("tradeterm-telemetry", &["tradeterm-store"])]);
        let v = violations(&up).unwrap();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("tradeterm-telemetry -> tradeterm-store"), "{v:?}");
    }

    #[test]
    fn the_real_workspace_is_layered() {
        check().unwrap();
    }
}
