//! Schemathesis (pinned in `scripts/requirements-test.txt`, run from `.venv`)
//! fuzzes the served `GET /api/v1/openapi.json` of a stack with one
//! simulated terminal: every operation, authenticated (the API key for the
//! `bearerAuth` operations, the master key for `masterKey`), `--checks all`,
//! at least [`EXAMPLES`] examples per operation, every phase (examples,
//! coverage, fuzzing, stateful), a fixed seed in deterministic mode. It
//! prints schemathesis's summary and fails on any failure outside
//! [`OPEN`]: the operations still answering a schema-valid request with a
//! 4xx because the rule at stake links two fields or depends on the
//! terminal's data (JSON Schema cannot state it). Issue 15 stays open until
//! that list is empty; an operation leaves it as soon as its failure is
//! fixed in the server or the schema, never by turning a check off.
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

/// Operations with a known, still open "schema-valid request rejected"
/// failure (ST202), and why. Any other failure fails the test.
const OPEN: &[(&str, &str)] = &[
    (
        "POST /api/v1/orders",
        "volume outside the symbol's min/max/step: 422 ORDER_REJECTED (dry run)",
    ),
    (
        "POST /api/v1/tools/place_order",
        "volume outside the symbol's min/max/step: 422 ORDER_REJECTED",
    ),
    (
        "POST /api/v1/tools/estimate_fill",
        "volume outside the symbol's trading rules",
    ),
    (
        "POST /api/v1/tools/get_holding_risk",
        "volume outside the symbol's trading rules",
    ),
    (
        "POST /api/v1/tools/backtest_strategy",
        "legacy strategy: fast period must be below slow",
    ),
    (
        "POST /api/v1/tools/simulate_ea_action",
        "legacy strategy: fast period must be below slow",
    ),
    (
        "POST /api/v1/tools/check_portfolio_exposure",
        "caution threshold must stay below block",
    ),
    (
        "POST /api/v1/tools/set_prop_firm_rules",
        "daily loss ≤ max loss; trailing drawdown needs max_loss_percent",
    ),
    (
        "PUT /api/prop-firm-rules",
        "daily loss ≤ max loss; trailing drawdown needs max_loss_percent",
    ),
    (
        "POST /api/v1/tools/calculate_position_size",
        "a stop distance putting the stop below zero at the live price",
    ),
    (
        "POST /api/v1/tools/check_confluence",
        "an indicator warm-up longer than the terminal's history",
    ),
    (
        "POST /api/v1/tools/get_event_sensitivity",
        "the simulated terminal's clock behind the server's (`from` after `to`)",
    ),
];

/// Examples per operation and phase.
const EXAMPLES: u32 = 100;
/// The fixed seed (with `--generation-deterministic`): the same requests every run.
const SEED: u32 = 20_261_126;

#[allow(clippy::print_stdout, reason = "schemathesis's summary is the test's report")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_failure_beyond_the_open_ones() {
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
    // One entry per kind of failure, with the operations it was seen on.
    let kinds = run["failures"].as_array().cloned().unwrap_or_default();
    let failures: u64 = kinds.iter().map(|k| k["count"].as_u64().unwrap_or(1)).sum();
    let errors = run["errors"].as_array().map_or(0, Vec::len);
    let mut unexpected = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for kind in &kinds {
        let code = kind["code"].as_str().unwrap_or_default();
        for op in kind["operations"].as_array().into_iter().flatten() {
            let op = op.as_str().unwrap_or_default();
            seen.insert(op.to_owned());
            if code != "ST202" || !OPEN.iter().any(|(known, _)| *known == op) {
                unexpected.push(format!("{code} {} on {op}", kind["title"]));
            }
        }
    }
    assert!(
        errors == 0 && unexpected.is_empty(),
        "schemathesis: {failures} failures ({} not among the open ones: {unexpected:#?}), {errors} errors (exit {:?}):\n{stdout}\n{stderr}",
        unexpected.len(),
        out.status.code()
    );
    let fixed: Vec<&str> = OPEN
        .iter()
        .map(|(op, _)| *op)
        .filter(|op| !seen.contains(*op))
        .collect();
    println!(
        "schemathesis: {failures} failures, all among the {} open ones; not seen this run: {fixed:?}",
        OPEN.len()
    );
    let operations = run["operations"]["tested"].as_u64().unwrap_or(0);
    assert!(operations >= 100, "every operation is tested: {}", run["operations"]);
    t.stack.stop().await;
}
