//! The `tradeterm` binary's local commands: `analyze` and `admin`.

use std::process::Command;

fn tradeterm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tradeterm"))
}

fn data(file: &str) -> String {
    format!("{}/../../data/market/{file}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn analyze_indicator_prints_one_array_per_output_as_long_as_the_input() {
    let out = tradeterm()
        .args([
            "analyze",
            "indicator",
            "macd",
            "--data",
            &data("goog_1d_backtesting.csv"),
            "--param",
            "fast=12",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = v["bars"].as_u64().unwrap() as usize;
    assert_eq!(n, 2148);
    for (name, series) in v["series"].as_object().unwrap() {
        let s = series.as_array().unwrap();
        assert_eq!(s.len(), n, "{name}");
        assert!(s[0].is_null(), "{name} is null during warm-up");
        assert!(s[n - 1].is_number(), "{name}");
    }
    assert_eq!(v["series"].as_object().unwrap().len(), 3);
}

#[test]
fn analyze_structure_reports_confirmation_bars() {
    let out = tradeterm()
        .args([
            "analyze",
            "structure",
            "--data",
            &data("eurusd_1h_backtesting.csv"),
            "--swing-length",
            "10",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = v["events"].as_array().unwrap();
    assert!(events.len() > 50);
    for e in events {
        assert!(
            e["confirmed_time"].as_str().unwrap() >= e["time"].as_str().unwrap(),
            "{e}"
        );
    }
}

#[test]
fn analyze_refuses_bad_input_with_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "time,open,high,low,close,volume\n2020-01-01T00:00:00Z,1,1,1,NaN,1\n",
    )
    .unwrap();
    for args in [
        vec!["analyze", "indicator", "rsi", "--data", bad.to_str().unwrap()],
        vec![
            "analyze",
            "indicator",
            "nope",
            "--data",
            &data("goog_1d_backtesting.csv"),
        ],
        vec![
            "analyze",
            "indicator",
            "rsi",
            "--data",
            &data("goog_1d_backtesting.csv"),
            "--param",
            "period=0",
        ],
        vec!["analyze", "structure", "--data", "/does/not/exist.csv"],
    ] {
        let out = tradeterm().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("error:") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn admin_commands_create_list_and_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let run = |args: &[&str]| -> serde_json::Value {
        let out = tradeterm()
            .args(["admin", "--data-dir", d])
            .args(args)
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let lic = run(&["create-license", "--name", "acme", "--tier", "team"]);
    assert!(lic["license_key"].as_str().unwrap().starts_with("tt_lic_"));
    let id = lic["license"]["id"].as_str().unwrap().to_owned();
    let term = run(&["create-terminal", "--license", &id, "--name", "mt5"]);
    assert!(term["terminal_key"].as_str().unwrap().starts_with("tt_term_"));
    let key = run(&["create-api-key", "--license", &id, "--label", "ci"]);
    let secret = key["api_key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("svc_api_"));
    let list = run(&["list-api-keys", "--license", &id]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert!(!list.to_string().contains(&secret), "listing never shows the secret");
    let key_id = key["key"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        run(&["revoke-api-key", "--license", &id, "--id", &key_id])["revoked"],
        true
    );
    let out = tradeterm()
        .args([
            "admin",
            "--data-dir",
            d,
            "revoke-api-key",
            "--license",
            &id,
            "--id",
            &key_id,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success(), "revoking twice is an error");
    let out = tradeterm()
        .args([
            "admin",
            "--data-dir",
            d,
            "create-license",
            "--name",
            "x",
            "--tier",
            "gold",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
