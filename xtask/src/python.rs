//! The project's Python virtual environment.
//!
//! Every Python tool the tests, benchmarks and fixture scripts drive lives in
//! one virtual environment made by this module (`.venv` at the workspace
//! root, or `TRADETERM_VENV`), never in the system interpreter:
//!
//! - `scripts/requirements-test.txt`: the packages the Rust test suite drives
//!   (OpenAPI validation, the MCP SDK);
//! - `agents/python/requirements-test.txt` and the bridge itself
//!   (`agents/python`, installed editable): the Python agent's test suite;
//! - benchmark references (TA-Lib, smartmoneyconcepts) when a bench asks.
//!
//! Installing is skipped when the requirement files are unchanged since the
//! last successful install (a stamp file in the environment), so a warm run
//! costs one `stat` per file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Result, run, workspace_root};

/// Folder of the virtual environment.
pub fn venv_dir() -> PathBuf {
    std::env::var_os("TRADETERM_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv"))
}

/// The environment's `bin` folder (put first on `PATH` so `python3` is ours).
pub fn bin_dir() -> PathBuf {
    venv_dir().join("bin")
}

/// The environment's interpreter.
pub fn python() -> PathBuf {
    bin_dir().join("python")
}

/// `PATH` with the environment's `bin` first.
pub fn path_env() -> std::ffi::OsString {
    let mut parts = vec![bin_dir()];
    if let Some(path) = std::env::var_os("PATH") {
        parts.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(parts).unwrap_or_default()
}

/// Creates the environment if it is missing.
pub fn ensure_venv() -> Result<()> {
    if python().is_file() {
        return Ok(());
    }
    let dir = venv_dir();
    println!("creating the Python virtual environment {}", dir.display());
    run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
    run(Command::new(python()).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--upgrade",
        "pip",
    ]))
}

/// A cheap fingerprint of the files an install depends on.
fn fingerprint(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            // FNV-1a: stable across runs and Rust versions.
            let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            format!("{}={hash:016x}", f.display())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Installs what the test suite needs into the environment.
pub fn ensure_test_packages() -> Result<()> {
    ensure_venv()?;
    let root = workspace_root();
    let mut reqs = vec![root.join("scripts/requirements-test.txt")];
    let agent = root.join("agents/python");
    let agent_reqs = agent.join("requirements-test.txt");
    if agent_reqs.is_file() {
        reqs.push(agent_reqs);
    }
    let pyproject = agent.join("pyproject.toml");
    let mut watched = reqs.clone();
    if pyproject.is_file() {
        watched.push(pyproject.clone());
    }
    let stamp = venv_dir().join(".tradeterm-test-stamp");
    let want = fingerprint(&watched);
    if std::fs::read_to_string(&stamp).is_ok_and(|have| have == want) {
        return Ok(());
    }
    let mut pip = Command::new(python());
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]);
    for r in reqs.iter().filter(|r| r.is_file()) {
        pip.arg("-r").arg(r);
    }
    if pyproject.is_file() {
        pip.arg("-e").arg(&agent);
    }
    run(&mut pip)?;
    std::fs::write(&stamp, want).map_err(|e| format!("writing {}: {e}", stamp.display()))
}

/// Whether the environment imports `module`; installs `pins` if not.
pub fn ready(module: &str, pins: &[&str]) -> Result<()> {
    ensure_venv()?;
    let imports = |m: &str| {
        Command::new(python())
            .args(["-c", &format!("import {m}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
    };
    match imports(module) {
        Err(e) => return Err(format!("the virtual environment's python is not usable ({e})")),
        Ok(true) => return Ok(()),
        Ok(false) => {}
    }
    println!("installing {} into {}", pins.join(" "), venv_dir().display());
    run(Command::new(python())
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(pins))?;
    if !imports(module).unwrap_or(false) {
        return Err(format!("could not install {}", pins.join(" ")));
    }
    Ok(())
}

/// Runs the Python agent's test suite (pytest) against the binaries in
/// `target_debug`. pytest's "no tests collected" (exit 5) is a failure: the
/// suite must exist and run.
pub fn agent_tests(target_debug: &Path) -> Result<()> {
    let root = workspace_root();
    let tests = root.join("agents/python/tests");
    if !tests.is_dir() {
        return Ok(());
    }
    run(Command::new(python())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        .current_dir(root.join("agents/python"))
        .env("PATH", path_env())
        .env("CI", "true")
        .env("TRADETERM_BIN", target_debug.join("tradeterm"))
        .env("TRADETERM_SIM_BIN", target_debug.join("tradeterm-sim")))
}
