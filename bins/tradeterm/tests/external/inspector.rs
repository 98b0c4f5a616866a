//! The official MCP Inspector CLI (`@modelcontextprotocol/inspector --cli`,
//! pinned in `tests/mcp-inspector`, installed by `cargo xtask test` or
//! `cargo xtask inspector`) against `tradeterm serve` on free ports with an
//! embedded SQLite in a temporary directory and one simulated terminal:
//!
//! - over HTTP (`/mcp/v1`, the terminal key as bearer): the default
//!   `tools/list` (every tool, no output schemas, at most 48 KiB), with
//!   groups, with output schemas; `get_tick`; `get_bars` and
//!   `backtest_strategy` with `chart: true` (an image content: a decodable
//!   PNG of the stated size); `prompts/list` and `prompts/get`;
//!   `resources/list` (the five resources of the key's terminal) and
//!   `resources/read` of each (its JSON content checked), another
//!   terminal's URI refused;
//! - through `tradeterm connect` (stdio, the relay of `tradeterm-connect`):
//!   the default list and the `--tools market --output-schemas` list,
//!   `get_tick`, `detect_structure` with `chart: true`, `prompts/get`,
//!   `resources/list` and `resources/read` of the account.
//!
//! The test fails, never skips, when the Inspector is not installed.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

const START: Duration = Duration::from_secs(60);
const CALL: Duration = Duration::from_secs(120);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pinned Inspector's launcher.
fn inspector_bin() -> PathBuf {
    let bin = repo_root().join("tests/mcp-inspector/node_modules/.bin/mcp-inspector");
    assert!(
        bin.is_file(),
        "the MCP Inspector CLI is not installed at {}: run `cargo xtask inspector` (or `npm ci` in tests/mcp-inspector)",
        bin.display()
    );
    bin
}

/// `tradeterm serve` on free ports, in a temporary data directory.
struct Stack {
    child: Child,
    mcp_url: String,
    key: String,
    /// The terminal the key is bound to.
    terminal: String,
    /// Data directory of the stack, and the Inspector's home (its catalog and storage).
    dir: tempfile::TempDir,
}

impl Stack {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ports: Vec<u16> = (0..3)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect::<Vec<_>>()
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
        let data = dir.path().join("data");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tradeterm"));
        for var in [
            "DATABASE_URL",
            "NODE_ENV",
            "KEYVALUE_URL",
            "HOST",
            "TRADETERM_CONFIG",
            "TRADETERM_DATA_DIR",
            "JWT_PRIVATE_KEY_PATH",
            "JWT_PUBLIC_KEY_PATH",
            "MCP_TOOL_GROUPS",
            "MCP_OUTPUT_SCHEMAS",
        ] {
            cmd.env_remove(var);
        }
        let mut child = cmd
            .env("RUST_LOG", "warn")
            .env("PORT", ports[0].to_string())
            .env("GATEWAY_PORT", ports[1].to_string())
            .env("MCP_PORT", ports[2].to_string())
            .args(["serve", "--sim-terminals", "1", "--data-dir"])
            .arg(&data)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let until = Instant::now() + START;
        let mut printed = String::new();
        while !printed.contains("Stop with Ctrl-C.") {
            let left = until.saturating_duration_since(Instant::now());
            let line = lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("tradeterm serve started within {START:?}; printed:\n{printed}"));
            printed.push_str(&line);
            printed.push('\n');
        }
        let creds: Value = serde_json::from_slice(&std::fs::read(data.join("demo-credentials.json")).unwrap()).unwrap();
        let key = creds["terminals"][0]["key"].as_str().unwrap().to_owned();
        let terminal = creds["terminals"][0]["id"].as_str().unwrap().to_owned();
        let stack = Self {
            child,
            mcp_url: format!("http://127.0.0.1:{}/mcp/v1", ports[2]),
            key,
            terminal,
            dir,
        };
        stack.wait_for_terminal();
        stack
    }

    /// Polls `get_tick` through the Inspector until the simulated terminal answers.
    fn wait_for_terminal(&self) {
        let until = Instant::now() + START;
        loop {
            let (ok, out, err) = self.try_http(
                "",
                &[],
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "get_tick",
                    "--tool-arg",
                    "symbol=EURUSD",
                ],
            );
            if ok && serde_json::from_str::<Value>(&out).is_ok_and(|v| v["isError"] == false) {
                return;
            }
            assert!(
                Instant::now() < until,
                "the simulated terminal answers get_tick:\n{out}\n{err}"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// The Inspector CLI over HTTP to `/mcp/v1{query}` with the terminal key
    /// and `headers`; (success, stdout, stderr).
    fn try_http(&self, query: &str, headers: &[&str], args: &[&str]) -> (bool, String, String) {
        let mut cmd = self.inspector();
        cmd.args(["--cli", "--transport", "http", "--server-url"])
            .arg(format!("{}{query}", self.mcp_url))
            .arg("--header")
            .arg(format!("Authorization: Bearer {}", self.key));
        for h in headers {
            cmd.args(["--header", h]);
        }
        cmd.args(args);
        run(cmd)
    }

    /// As [`Stack::try_http`], which must succeed; stdout as JSON.
    fn http(&self, query: &str, headers: &[&str], args: &[&str]) -> Value {
        let (ok, out, err) = self.try_http(query, headers, args);
        assert!(ok, "inspector {args:?} over HTTP failed:\n{out}\n{err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("JSON from the inspector ({e}):\n{out}\n{err}"))
    }

    /// The Inspector CLI over stdio, starting `tradeterm connect --url … {connect_args}`
    /// (the relay of `tradeterm-connect`); stdout as JSON.
    fn stdio(&self, connect_args: &[&str], args: &[&str]) -> Value {
        let mut cmd = self.inspector();
        cmd.args(["--cli", "-e"])
            .arg(format!("TRADETERM_TERMINAL_KEY={}", self.key))
            .args(["-e", "RUST_LOG=warn"])
            .args(args)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_tradeterm"))
            .args(["connect", "--url", &self.mcp_url])
            .args(connect_args);
        let (ok, out, err) = run(cmd);
        assert!(ok, "inspector {args:?} over stdio failed:\n{out}\n{err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("JSON from the inspector ({e}):\n{out}\n{err}"))
    }
}

impl Stack {
    /// The Inspector launcher, with its state (catalog, storage) in the
    /// stack's temporary directory rather than the user's home.
    fn inspector(&self) -> Command {
        let home = self.dir.path().join("inspector-home");
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = Command::new(inspector_bin());
        cmd.env("HOME", &home)
            .env("MCP_CATALOG_PATH", home.join("mcp.json"))
            .env("NO_COLOR", "1")
            .env_remove("TRADETERM_TERMINAL_KEY");
        cmd
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` to completion within [`CALL`]; (success, stdout, stderr).
fn run(mut cmd: Command) -> (bool, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let until = Instant::now() + CALL;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {CALL:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.success(), out.join().unwrap(), err.join().unwrap())
}

/// The resources of a terminal, in `resources/list` order.
const RESOURCE_KINDS: [&str; 5] = ["account", "positions", "orders", "alerts", "status"];

/// The URIs of a `resources/list` answer; every resource is JSON, named and described.
fn resource_uris(list: &Value) -> Vec<String> {
    let resources = list["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("no resources in {list}"));
    for r in resources {
        assert_eq!(r["mimeType"], "application/json", "{r}");
        assert!(
            r["name"].as_str().is_some_and(|n| !n.is_empty()) && r["description"].is_string(),
            "{r}"
        );
    }
    resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_owned())
        .collect()
}

/// The JSON of a `resources/read` answer: one `application/json` text of `uri`.
fn resource_json(read: &Value, uri: &str) -> Value {
    let contents = read["contents"]
        .as_array()
        .unwrap_or_else(|| panic!("no contents in {read}"));
    assert_eq!(contents.len(), 1, "{read}");
    assert_eq!(
        (contents[0]["uri"].as_str(), contents[0]["mimeType"].as_str()),
        (Some(uri), Some("application/json")),
        "{read}"
    );
    serde_json::from_str(
        contents[0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {read}")),
    )
    .unwrap_or_else(|e| panic!("{uri}: the text is not JSON ({e}): {read}"))
}

/// Checks the content of the `kind` resource of `terminal`.
fn check_resource(kind: &str, terminal: &str, v: &Value) {
    match kind {
        "account" => {
            for field in ["balance", "equity", "margin", "free_margin"] {
                assert!(v[field].is_number(), "account has {field}: {v}");
            }
            assert_eq!(v["trade_mode"], "demo", "{v}");
            assert!(v["equity"].as_f64().unwrap() > 0.0, "{v}");
        }
        "positions" | "orders" | "alerts" => assert!(v[kind].is_array(), "{kind} is a list: {v}"),
        "status" => assert_eq!(
            (v["id"].as_str(), v["connected"].as_bool()),
            (Some(terminal), Some(true)),
            "{v}"
        ),
        other => panic!("unknown resource kind {other}"),
    }
}

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The image content of a `tools/call` result, decoded: width and height.
fn png_of(result: &Value) -> (u32, u32) {
    assert_eq!(result["isError"], false, "{result}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "text");
    let image = content
        .iter()
        .find(|c| c["type"] == "image")
        .unwrap_or_else(|| panic!("no image content in {content:?}"));
    assert_eq!(image["mimeType"], "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image["data"].as_str().unwrap())
        .unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    let (w, h) = (reader.info().width, reader.info().height);
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    let colours: BTreeSet<&[u8]> = buf[..frame.buffer_size()].chunks(3).collect();
    assert!(colours.len() > 30, "a real picture: {} colours", colours.len());
    (w, h)
}

#[test]
fn the_mcp_inspector_cli_lists_calls_charts_prompts_and_resources_over_http_and_stdio() {
    inspector_bin();
    let stack = Stack::start();
    let all: Vec<String> = tradeterm_mcp::mcp_tools().iter().map(|t| t.name.to_string()).collect();

    // Default list: every tool, no output schemas, within 48 KiB (docs/mcp.md); charts announced.
    let list = stack.http("", &[], &["--method", "tools/list"]);
    assert_eq!(names(&list), all);
    let tools = list["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t.get("outputSchema").is_none()));
    let bytes = serde_json::to_vec(&list).unwrap().len();
    assert!(bytes <= 48 * 1024, "{bytes} bytes");
    for t in tools {
        let chartable = tradeterm_tools::find(t["name"].as_str().unwrap()).is_some_and(|c| c.chart.is_some());
        assert_eq!(
            t["inputSchema"]["properties"]["chart"]["type"] == "boolean",
            chartable,
            "{}",
            t["name"]
        );
    }

    // Groups by query parameter; output schemas by header.
    let grouped = stack.http("?groups=market,trading", &[], &["--method", "tools/list"]);
    let want: Vec<String> = tradeterm_mcp::list_for(&tradeterm_mcp::ToolListOptions {
        groups: vec![
            tradeterm_tools::groups::ToolGroup::Market,
            tradeterm_tools::groups::ToolGroup::Trading,
        ],
        output_schemas: false,
    })
    .iter()
    .map(|t| t.name.to_string())
    .collect();
    assert_eq!(names(&grouped), want);
    let full = stack.http("", &["X-MCP-Output-Schemas: true"], &["--method", "tools/list"]);
    assert_eq!(names(&full), all);
    assert!(
        full["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["outputSchema"].is_object())
    );

    // Calls: a quote, then charts.
    let tick = stack.http(
        "",
        &[],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "get_tick",
            "--tool-arg",
            "symbol=EURUSD",
        ],
    );
    let q = &tick["structuredContent"];
    assert!(q["bid"].as_f64().unwrap() < q["ask"].as_f64().unwrap(), "{tick}");
    let bars = stack.http(
        "",
        &[],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "get_bars",
            "--tool-arg",
            "symbol=EURUSD",
            "timeframe=H1",
            "count=120",
            "chart=true",
        ],
    );
    assert_eq!(bars["structuredContent"]["bars"].as_array().unwrap().len(), 120);
    assert_eq!(png_of(&bars), (1200, 800));
    let backtest = stack.http(
        "",
        &[],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "backtest_strategy",
            "--tool-arg",
            "symbol=EURUSD",
            "timeframe=H1",
            "bars=500",
            r#"strategy={"type":"ma_cross","fast":10,"slow":30,"ma":"sma"}"#,
            "chart=true",
        ],
    );
    assert_eq!(png_of(&backtest), (1200, 800));

    // Prompts.
    let prompts = stack.http("", &[], &["--method", "prompts/list"]);
    let prompt_names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(prompt_names, ["pre_trade_check", "market_brief", "journal_review"]);
    let brief = stack.http(
        "",
        &[],
        &[
            "--method",
            "prompts/get",
            "--prompt-name",
            "market_brief",
            "--prompt-args",
            "symbol=XAUUSD",
            "timeframes=H4,H1",
        ],
    );
    let text = brief["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("XAUUSD") && text.contains("get_key_levels") && text.contains("H4"),
        "{text}"
    );

    // Resources of the key's terminal (docs/mcp.md, "Resources and subscriptions").
    let base = format!("tradeterm://terminals/{}", stack.terminal);
    let listed = stack.http("", &[], &["--method", "resources/list"]);
    assert_eq!(
        resource_uris(&listed),
        RESOURCE_KINDS.map(|k| format!("{base}/{k}")),
        "{listed}"
    );
    for kind in RESOURCE_KINDS {
        let uri = format!("{base}/{kind}");
        let read = stack.http("", &[], &["--method", "resources/read", "--uri", &uri]);
        check_resource(kind, &stack.terminal, &resource_json(&read, &uri));
    }
    // Another terminal's resource, and an unknown kind, are "resource not found"
    // (the Inspector exits non-zero with the server's message).
    for bad in [
        "tradeterm://terminals/term_not_this_key/account".to_owned(),
        format!("{base}/moon"),
    ] {
        let (ok, out, err) = stack.try_http("", &[], &["--method", "resources/read", "--uri", &bad]);
        assert!(
            !ok && format!("{out}{err}").contains(&format!("no resource `{bad}`")),
            "{bad} must not be readable:\n{out}\n{err}"
        );
    }

    // Through the stdio connector.
    let list = stack.stdio(&[], &["--method", "tools/list"]);
    assert_eq!(names(&list), all);
    let market = stack.stdio(&["--tools", "market", "--output-schemas"], &["--method", "tools/list"]);
    let market_names = names(&market);
    assert!(market_names.contains(&"get_bars".to_owned()) && !market_names.contains(&"place_order".to_owned()));
    assert!(
        market["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["outputSchema"].is_object())
    );
    let tick = stack.stdio(
        &[],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "get_tick",
            "--tool-arg",
            "symbol=EURUSD",
        ],
    );
    assert_eq!(tick["structuredContent"]["symbol"], "EURUSD", "{tick}");
    let structure = stack.stdio(
        &[],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "detect_structure",
            "--tool-arg",
            "symbol=EURUSD",
            "timeframe=H1",
            "bars=400",
            r#"config={"swing_length":10}"#,
            "chart=true",
        ],
    );
    assert!(structure["structuredContent"]["events"].is_array(), "{structure}");
    assert_eq!(png_of(&structure), (1200, 800));
    let review = stack.stdio(
        &[],
        &[
            "--method",
            "prompts/get",
            "--prompt-name",
            "journal_review",
            "--prompt-args",
            "days=14",
        ],
    );
    let text = review["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("get_journal") && text.contains("14"), "{text}");
    let listed = stack.stdio(&[], &["--method", "resources/list"]);
    assert_eq!(
        resource_uris(&listed),
        RESOURCE_KINDS.map(|k| format!("{base}/{k}")),
        "{listed}"
    );
    let uri = format!("{base}/account");
    let read = stack.stdio(&[], &["--method", "resources/read", "--uri", &uri]);
    check_resource("account", &stack.terminal, &resource_json(&read, &uri));
}
