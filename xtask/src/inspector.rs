//! The official MCP Inspector CLI (`@modelcontextprotocol/inspector`), which
//! `bins/tradeterm/tests/external/inspector.rs` drives against a test stack. It is
//! pinned in a small npm project of its own, `tests/mcp-inspector`
//! (`package.json` and `package-lock.json`), and installed there with
//! `npm ci`; never globally, never with `npx` at test time.
//!
//! Installing is skipped when the lock file is unchanged since the last
//! successful install (a stamp file in `node_modules`).

use std::path::PathBuf;
use std::process::Command;

use crate::{Result, run, workspace_root};

/// The npm project of the Inspector.
pub fn dir() -> PathBuf {
    workspace_root().join("tests/mcp-inspector")
}

/// Installs the pinned Inspector (`npm ci` in [`dir`]) unless its lock file
/// is unchanged since the last install.
pub fn ensure() -> Result<()> {
    let dir = dir();
    let lock = dir.join("package-lock.json");
    let stamp = dir.join("node_modules/.tradeterm-stamp");
    let want = crate::python::fingerprint(&[dir.join("package.json"), lock]);
    let installed = dir.join("node_modules/.bin/mcp-inspector").is_file();
    if installed && std::fs::read_to_string(&stamp).is_ok_and(|have| have == want) {
        return Ok(());
    }
    println!("installing the MCP Inspector CLI into {}", dir.display());
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]))?;
    std::fs::write(&stamp, want).map_err(|e| format!("writing {}: {e}", stamp.display()))
}
