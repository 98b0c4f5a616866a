//! `tradeterm-gateway` refuses a production start without the shared store,
//! Redis, its keys, the internal token and TLS, naming every missing setting
//! in one message; never opens a private SQLite file; and starts with them.

#[path = "../../support/start.rs"]
mod start;

const BIN: &str = env!("CARGO_BIN_EXE_tradeterm-gateway");

#[test]
fn production_without_settings_is_refused_naming_them_all() {
    let stderr = start::refused(BIN, &[("NODE_ENV", "production".into())]);
    start::names_all(
        &stderr,
        &[
            "tradeterm-gateway",
            "DATABASE_URL",
            "KEYVALUE_URL",
            "JWT_PRIVATE_KEY_PATH",
            "JWT_PUBLIC_KEY_PATH",
            "GATEWAY_INTERNAL_TOKEN",
            "GATEWAY_TLS_CERT",
            "AGENT_ALLOW_PLAIN_WS",
            "docs/deploy.md",
        ],
    );

    // Each required setting alone is named when it is the one missing.
    start::each_missing_is_named(
        BIN,
        &[
            "DATABASE_URL",
            "KEYVALUE_URL",
            "GATEWAY_INTERNAL_TOKEN",
            "JWT_PRIVATE_KEY_PATH",
        ],
    );
    // A SQLite file is refused in production.
    let dir = tempfile::tempdir().unwrap();
    let complete = start::production_env(dir.path());
    let mut sqlite = start::without(&complete, "DATABASE_URL");
    sqlite.push((
        "DATABASE_URL",
        format!("sqlite://{}/tt.db?mode=rwc", dir.path().display()),
    ));
    let stderr = start::refused(BIN, &sqlite);
    assert!(stderr.contains("DATABASE_URL must be a postgres:// URL"), "{stderr}");
}

#[test]
fn development_opens_no_private_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = start::refused(BIN, &[("TRADETERM_DATA_DIR", dir.path().display().to_string())]);
    assert!(stderr.contains("DATABASE_URL is missing"), "{stderr}");
    assert!(
        !dir.path().join("tradeterm.db").exists(),
        "no database file was created"
    );
}

#[test]
fn production_starts_with_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    let port = start::free_port();
    let mut env = start::production_env(dir.path());
    env.push(("GATEWAY_PORT", port.to_string()));
    let _gateway = start::start_healthy(BIN, &env, port);
}
