//! Schemathesis (pinned in `scripts/requirements-test.txt`, run from `.venv`)
//! fuzzes the served `GET /api/v1/openapi.json` of a stack with one
//! simulated terminal: every operation, authenticated (the API key for the
//! `bearerAuth` operations, the master key for `masterKey`), `--checks all`,
//! at least [`EXAMPLES`] examples per operation, every phase (examples,
//! coverage, fuzzing, stateful), a fixed seed in deterministic mode. The
//! test asserts 0 failures and prints schemathesis's summary.
//!
//! The stack has no Redis, so rate limiting is off (a 429 would still be
//! documented: every metered operation lists `RATE_LIMITED`). Orders are dry
//! runs unless the input says `"dry_run": false`, and the simulated
//! terminal's allow-trading input is off, so nothing the fuzzer sends can
//! trade. Under `CI=true` the test runs, never skips; elsewhere it skips
//! with a message when `.venv` has no schemathesis.

use std::process::Command;

use serde_json::Value;

use crate::harness::process::venv_program;
use crate::harness::{Options, spawn};

/// Examples per operation and phase.
const EXAMPLES: u32 = 100;
/// The fixed seed (with `--generation-deterministic`): the same requests every run.
const SEED: u32 = 20_261_126;

#[allow(clippy::print_stdout, reason = "schemathesis's summary is the test's report")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_failure_in_the_served_openapi_document() {
    let Some(schemathesis) = venv_program("schemathesis") else {
        return;
    };
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("schemathesis.toml");
    std::fs::write(
        &config,
        format!(
            "[auth.openapi.bearerAuth]\nbearer = \"{}\"\n\n[auth.openapi.masterKey]\nbearer = \"{}\"\n",
            t.creds.api_key, t.creds.license_key
        ),
    )
    .unwrap();
    let report = dir.path().join("report.json");
    let url = format!("{}/api/v1/openapi.json", t.rest);
    let mut cmd = Command::new(schemathesis);
    cmd.arg("--config-file")
        .arg(&config)
        .args(["run", &url, "--checks", "all", "--max-examples", &EXAMPLES.to_string()])
        .args(["--seed", &SEED.to_string(), "--generation-deterministic"])
        .args(["--workers", "2", "--request-timeout", "60"])
        .args(["--no-color", "--report", "json", "--report-json-path"])
        .arg(&report)
        .current_dir(dir.path())
        .env("NO_COLOR", "1");
    let started = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("running schemathesis"))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout
        .find("=== SUMMARY")
        .map_or(stdout.as_ref(), |at| &stdout[stdout[..at].rfind('\n').unwrap_or(0)..]);
    println!("schemathesis ({:.0} s):{summary}", elapsed.as_secs_f64());
    let run: Value = serde_json::from_slice(&std::fs::read(&report).unwrap_or_default())
        .unwrap_or_else(|e| panic!("schemathesis wrote no JSON report ({e}):\n{stdout}\n{stderr}"));
    // One entry per kind of failure, with how many unique failures it covers.
    let failures: u64 = run["failures"]
        .as_array()
        .map_or(0, |kinds| kinds.iter().map(|k| k["count"].as_u64().unwrap_or(1)).sum());
    let errors = run["errors"].as_array().map_or(0, Vec::len);
    assert!(
        out.status.success() && failures == 0 && errors == 0,
        "schemathesis: {failures} failures, {errors} errors (exit {:?}):\n{stdout}\n{stderr}",
        out.status.code()
    );
    let operations = run["operations"]["tested"].as_u64().unwrap_or(0);
    assert!(operations >= 100, "every operation is tested: {}", run["operations"]);
    t.stack.stop().await;
}
