//! The built `tradeterm` binary and other child processes.

use std::process::{Child, Command};

/// The built `tradeterm` binary with no configuration of the machine
/// leaking in (only what a test sets), logging warnings and errors only.
pub fn tradeterm() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tradeterm"));
    for var in [
        "DATABASE_URL",
        "NODE_ENV",
        "KEYVALUE_URL",
        "HOST",
        "GATEWAY_TLS_CERT",
        "GATEWAY_TLS_KEY",
        "AGENT_ALLOW_PLAIN_WS",
        "TRADETERM_CONFIG",
        "TRADETERM_DATA_DIR",
        "TRADETERM_MASTER_KEY",
        "JWT_PRIVATE_KEY_PATH",
        "JWT_PUBLIC_KEY_PATH",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("RUST_LOG", "warn");
    cmd
}

/// Three free loopback ports (REST, gateway, MCP).
pub fn free_ports() -> [u16; 3] {
    let listeners: Vec<_> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let ports: Vec<u16> = listeners.iter().map(|l| l.local_addr().unwrap().port()).collect();
    [ports[0], ports[1], ports[2]]
}

/// Kills the child when dropped (a failing assertion must not leave servers behind).
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // The child may have exited already: nothing to report then.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The project's Python virtual environment (`.venv` at the workspace root,
/// or `TRADETERM_VENV`), made by `cargo xtask venv` from
/// `scripts/requirements-test.txt`.
pub fn venv_dir() -> std::path::PathBuf {
    std::env::var_os("TRADETERM_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv"))
}

/// The program `name` of the virtual environment (`.venv/bin/<name>`).
/// Missing: under `CI=true` the test fails (it must run there); elsewhere
/// it says why it skips and answers `None`.
pub fn venv_program(name: &str) -> Option<std::path::PathBuf> {
    let path = venv_dir().join("bin").join(name);
    if path.is_file() {
        return Some(path);
    }
    let hint = "run `cargo xtask venv` (installs scripts/requirements-test.txt into .venv)";
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing under CI=true: {hint}",
        path.display()
    );
    eprintln!("skipped: {} is missing; {hint}", path.display());
    None
}
