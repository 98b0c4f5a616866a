//! `tradeterm-mcp` refuses a production start without the shared store,
//! Redis, the public key and the internal token, naming every missing
//! setting in one message; never opens a private SQLite file; and starts
//! with them (it needs no running gateway to start).

#[path = "../../support/start.rs"]
mod start;

const BIN: &str = env!("CARGO_BIN_EXE_tradeterm-mcp");

#[test]
fn production_without_settings_is_refused_naming_them_all() {
    let stderr = start::refused(BIN, &[("NODE_ENV", "production".into())]);
    start::names_all(
        &stderr,
        &[
            "tradeterm-mcp",
            "DATABASE_URL",
            "KEYVALUE_URL",
            "JWT_PUBLIC_KEY_PATH",
            "GATEWAY_INTERNAL_TOKEN",
            "docs/deploy.md",
        ],
    );

    start::each_missing_is_named(
        BIN,
        &[
            "DATABASE_URL",
            "KEYVALUE_URL",
            "GATEWAY_INTERNAL_TOKEN",
            "JWT_PUBLIC_KEY_PATH",
        ],
    );
}

#[test]
fn development_opens_no_private_sqlite_file() {
    start::writes_no_private_sqlite(BIN);
}

#[test]
fn production_starts_with_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    let port = start::free_port();
    let mut env = start::production_env(dir.path());
    env.push(("MCP_PORT", port.to_string()));
    env.push(("GATEWAY_URL", format!("http://127.0.0.1:{}", start::free_port())));
    let _mcp = start::start_healthy(BIN, &env, port);
}
