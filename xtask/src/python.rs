//! The project's Python virtual environment.
//!
//! Every Python tool the Rust tests and benchmarks drive lives in one virtual
//! environment made by this module (`.venv` at the workspace root, or
//! `TRADETERM_VENV`), never in the system interpreter (the Python agent has
//! its own, `agents/python/.venv`, made by `agents/python/run-tests.sh`):
//!
//! - `scripts/requirements-test.txt`: the packages the Rust test suite drives
//!   (OpenAPI validation, the MCP SDK);
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
    run(venv_pip_install().args(["--upgrade", "pip"]))
}

/// `pip install` of the project's venv (quiet), never the system interpreter's.
fn venv_pip_install() -> Command {
    let mut cmd = Command::new(python()); // the venv's interpreter
    cmd.args(VENV_PIP_INSTALL);
    cmd
}

/// Arguments of the venv interpreter that run its pip.
const VENV_PIP_INSTALL: &[&str] = &["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]; // venv only

/// A cheap fingerprint of the files an install depends on.
pub(crate) fn fingerprint(files: &[PathBuf]) -> String {
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

/// Installs what the Rust test suite drives into the environment
/// (`scripts/requirements-test.txt`). The Python agent keeps its own
/// environment (`agents/python/.venv`, made by `agents/python/run-tests.sh`),
/// since it is a separate product with its own pins.
pub fn ensure_test_packages() -> Result<()> {
    ensure_venv()?;
    let req = workspace_root().join("scripts/requirements-test.txt");
    let stamp = venv_dir().join(".tradeterm-test-stamp");
    let want = fingerprint(std::slice::from_ref(&req));
    if std::fs::read_to_string(&stamp).is_ok_and(|have| have == want) {
        return Ok(());
    }
    run(venv_pip_install().arg("-r").arg(&req))?;
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
    run(venv_pip_install().args(pins))?;
    if !imports(module).unwrap_or(false) {
        return Err(format!("could not install {}", pins.join(" ")));
    }
    Ok(())
}

/// Runs the Python agent's test suite (`agents/python/run-tests.sh`: its own
/// virtual environment, then pytest) against the binaries in `target_debug`.
/// Under `CI=true` its tests fail rather than skip when a binary is missing.
pub fn agent_tests(target_debug: &Path) -> Result<()> {
    let script = workspace_root().join("agents/python/run-tests.sh");
    if !script.is_file() {
        return Err(format!("{} is missing", script.display()));
    }
    run(Command::new("bash")
        .arg(&script)
        .env("CI", "true")
        .env("TRADETERM_BIN", target_debug.join("tradeterm"))
        .env("TRADETERM_SIM_BIN", target_debug.join("tradeterm-sim")))
}
