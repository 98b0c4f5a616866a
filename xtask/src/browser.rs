//! What the dashboard's browser tests need (`bins/tradeterm/tests/external/dashboard.rs`
//! runs `crates/dashboard/e2e/dashboard.test.mjs`):
//!
//! - Debian's Chromium (`/usr/bin/chromium`, package `chromium`, with the
//!   DejaVu fonts for readable screenshots), installed with apt-get when
//!   missing (as root; otherwise the test says what to install). Playwright
//!   drives it over the DevTools protocol, so no ChromeDriver is needed, and
//!   playwright-core never downloads a browser of its own.
//! - The npm packages pinned in `crates/dashboard/e2e/package.json` and
//!   `package-lock.json` (playwright-core, axe-core), installed with `npm ci`
//!   into that folder's `node_modules` when the lock file changed since the
//!   last install (a stamp file), with install scripts off.
//!
//! `cargo xtask browser` makes sure of both; `cargo xtask test` does it
//! before the Rust suite; `cargo xtask screenshots` then writes a PNG of
//! every dashboard page.

use std::path::PathBuf;
use std::process::Command;

use crate::{Result, cargo, run, workspace_root};

/// The browser the tests drive.
const CHROMIUM: &str = "/usr/bin/chromium";
/// Oldest Node.js that playwright-core supports.
const MIN_NODE_MAJOR: u32 = 20;

fn e2e_dir() -> PathBuf {
    workspace_root().join("crates/dashboard/e2e")
}

/// Installs Chromium and the npm packages when missing.
pub fn ensure() -> Result<()> {
    ensure_chromium()?;
    ensure_node_modules()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n") || o.stdout == b"0")
}

fn ensure_chromium() -> Result<()> {
    if std::path::Path::new(CHROMIUM).is_file() {
        return Ok(());
    }
    if !is_root() {
        println!("Chromium is missing and this is not root: install it with `apt-get install chromium`");
        return Ok(());
    }
    println!("installing Debian's Chromium for the dashboard's browser tests");
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .args([
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "chromium",
            "fonts-dejavu-core",
        ])
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// The major version of `node`, if it runs.
fn node_major() -> Option<u32> {
    let out = Command::new("node").arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout);
    version.trim().trim_start_matches('v').split('.').next()?.parse().ok()
}

fn ensure_node_modules() -> Result<()> {
    match node_major() {
        Some(v) if v >= MIN_NODE_MAJOR => {}
        Some(v) => {
            return Err(format!(
                "Node.js {v} is too old for the browser tests (>= {MIN_NODE_MAJOR})"
            ));
        }
        None => return Err("Node.js (`node`, >= 20) is needed for the dashboard's browser tests".into()),
    }
    let dir = e2e_dir();
    let lock = dir.join("package-lock.json");
    let stamp = dir.join("node_modules/.tradeterm-stamp");
    let want = crate::python::fingerprint(&[dir.join("package.json"), lock]);
    if std::fs::read_to_string(&stamp).is_ok_and(|have| have == want) {
        return Ok(());
    }
    println!(
        "installing the browser tests' npm packages into {}",
        dir.join("node_modules").display()
    );
    run(Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
        .current_dir(&dir)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"))?;
    std::fs::write(&stamp, want).map_err(|e| format!("writing {}: {e}", stamp.display()))
}

/// `cargo xtask screenshots`: runs the browser test with `TT_SCREENSHOTS`
/// and lists the PNGs it wrote (`$CARGO_TARGET_DIR/dashboard-screenshots`).
pub fn screenshots() -> Result<()> {
    ensure()?;
    crate::ensure_services()?;
    let dir = crate::target_dir().join("dashboard-screenshots");
    if dir.is_dir() {
        for entry in std::fs::read_dir(&dir).map_err(|e| e.to_string())?.flatten() {
            if entry.path().extension().is_some_and(|e| e == "png") {
                std::fs::remove_file(entry.path()).map_err(|e| e.to_string())?;
            }
        }
    }
    run(cargo()
        .current_dir(workspace_root())
        .args([
            "test",
            "-p",
            "tradeterm",
            "--test",
            "external",
            "--",
            "--exact",
            "dashboard::the_dashboard_in_a_real_browser",
        ])
        .env("TT_SCREENSHOTS", &dir)
        .env("CI", "true"))?;
    let mut shots: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    shots.sort();
    if shots.is_empty() {
        return Err(format!("no screenshot was written to {}", dir.display()));
    }
    println!("{} screenshots of the dashboard:", shots.len());
    for shot in shots {
        println!("  {}", shot.display());
    }
    Ok(())
}
