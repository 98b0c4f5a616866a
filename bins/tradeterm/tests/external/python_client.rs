//! A Python client generated from the served OpenAPI document works: the
//! pinned `openapi-python-client` (`scripts/requirements-test.txt`, run from
//! `.venv`) generates a client package from `GET /api/v1/openapi.json` of a
//! stack with one simulated terminal, offline, into a temporary directory;
//! `scripts/tests/generated_client.py` then calls through it: a quote, a
//! dry-run order, the positions, a journal entry written and read back, and
//! two catalog tools (`get_bars`, `calculate_position_size`), asserting on
//! the values. Under `CI=true` the test runs, never skips; elsewhere it
//! skips with a message when `.venv` lacks the generator.

use std::path::Path;
use std::process::Command;

use crate::harness::process::venv_program;
use crate::harness::{Options, spawn};

/// Name of the generated package.
const PACKAGE: &str = "tradeterm_client";

#[allow(clippy::print_stdout, reason = "the script's lines are the test's report")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_python_client_quotes_orders_journals_and_calls_tools() {
    let Some(generator) = venv_program("openapi-python-client") else {
        return;
    };
    let python = venv_program("python").expect("the virtual environment has python");
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let document = t
        .http
        .get(format!("{}/api/v1/openapi.json", t.rest))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let doc_path = dir.path().join("openapi.json");
    std::fs::write(&doc_path, &document).unwrap();
    let package = dir.path().join(PACKAGE);
    let bin = generator.parent().unwrap().to_path_buf();
    let (gen_out, run_out) = {
        let (package, parent, rest, key) = (
            package.clone(),
            dir.path().to_path_buf(),
            t.rest.clone(),
            t.creds.api_key.clone(),
        );
        tokio::task::spawn_blocking(move || {
            // The generator formats its output with ruff when it finds it on PATH (the venv's).
            let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
            let generated = Command::new(&generator)
                .args(["generate", "--meta", "none", "--path"])
                .arg(&doc_path)
                .arg("--output-path")
                .arg(&package)
                .env("PATH", &path)
                .output()
                .expect("running openapi-python-client");
            if !generated.status.success() {
                return (generated, None);
            }
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tests/generated_client.py");
            let ran = Command::new(&python)
                .arg(script)
                .arg(&parent)
                .arg(PACKAGE)
                .arg(&rest)
                .arg(&key)
                .output()
                .expect("running the generated client script");
            (generated, Some(ran))
        })
        .await
        .unwrap()
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        gen_out.status.success(),
        "openapi-python-client failed:\n{}\n{}",
        text(&gen_out.stdout),
        text(&gen_out.stderr)
    );
    assert!(
        package.join("api").is_dir() && package.join("models").is_dir(),
        "a client package in {}",
        package.display()
    );
    let run = run_out.unwrap();
    let stdout = text(&run.stdout);
    println!("{stdout}");
    assert!(
        run.status.success() && stdout.contains("generated client: all calls passed"),
        "the generated client's calls failed:\n{stdout}\n{}",
        text(&run.stderr)
    );
    t.stack.stop().await;
}
