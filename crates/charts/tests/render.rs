//! Every tool chart drawn from real data, decoded again with the `png` crate:
//! the stated size, within the byte cap, and not blank (a white background,
//! dark text, and the colours of what the chart draws).
//!
//! The outputs are built in the tools' JSON shapes from `tradeterm-core`
//! results on the files of `data/market/`. With `CHARTS_OUT=<dir>` the
//! pictures are also written there, to look at.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tradeterm_charts::{KINDS, MAX_PNG_BYTES, Png, TOOL_CHART_SIZE, render_tool_chart};
use tradeterm_core::Bar;
use tradeterm_core::time::to_iso;

fn bars(file: &str) -> Vec<Bar> {
    let path = format!("{}/../../data/market/{file}", env!("CARGO_MANIFEST_DIR"));
    tradeterm_core::bars::parse_csv(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A `get_bars` output over `bars`.
fn bars_output(symbol: &str, timeframe: &str, bars: &[Bar]) -> Value {
    json!({
        "symbol": symbol,
        "timeframe": timeframe,
        "bars": bars.iter().map(|b| json!({
            "time": to_iso(b.time), "open": b.open, "high": b.high, "low": b.low, "close": b.close, "volume": b.volume,
        })).collect::<Vec<_>>(),
    })
}

/// Decoded RGB pixels of a PNG, after checking its header.
struct Decoded {
    width: u32,
    height: u32,
    pixels: Vec<[u8; 3]>,
}

fn decode(png: &Png) -> Decoded {
    let mut reader = png::Decoder::new(std::io::Cursor::new(&png.bytes)).read_info().unwrap();
    let info = reader.info();
    let (width, height) = (info.width, info.height);
    assert_eq!(
        (width, height),
        (png.width, png.height),
        "the stated size is the image's"
    );
    assert_eq!(
        (info.color_type, info.bit_depth),
        (png::ColorType::Rgb, png::BitDepth::Eight)
    );
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    let pixels: Vec<[u8; 3]> = buf[..frame.buffer_size()]
        .chunks(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    assert_eq!(pixels.len(), (width * height) as usize);
    Decoded { width, height, pixels }
}

impl Decoded {
    fn count(&self, f: impl Fn(&[u8; 3]) -> bool) -> usize {
        self.pixels.iter().filter(|p| f(p)).count()
    }

    /// The common checks: mostly white, dark text, many colours.
    fn assert_not_blank(&self, what: &str) {
        let white = self.count(|p| *p == [255, 255, 255]);
        assert!(white > self.pixels.len() / 3, "{what}: a white background ({white})");
        let dark = self.count(|p| p.iter().all(|c| *c < 90));
        assert!(dark > 1500, "{what}: dark axes and text ({dark})");
        let colours: BTreeSet<[u8; 3]> = self.pixels.iter().copied().collect();
        assert!(colours.len() > 30, "{what}: {} distinct colours", colours.len());
    }
}

fn green(p: &[u8; 3]) -> bool {
    p[1] > 120 && p[0] < 80 && p[2] < 120
}

fn red(p: &[u8; 3]) -> bool {
    p[0] > 180 && p[1] < 80 && p[2] < 80
}

fn blue(p: &[u8; 3]) -> bool {
    p[2] > 150 && p[0] < 100
}

fn save(name: &str, png: &Png) {
    if let Some(dir) = std::env::var_os("CHARTS_OUT") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), &png.bytes).unwrap();
    }
}

fn render(name: &str, kind: &str, output: &Value, bars: Option<&Value>) -> Decoded {
    let png = render_tool_chart(kind, output, bars).unwrap();
    save(name, &png);
    assert!(png.bytes.len() <= MAX_PNG_BYTES, "{name}: {} bytes", png.bytes.len());
    let d = decode(&png);
    assert_eq!(
        (d.width, d.height),
        (TOOL_CHART_SIZE.width, TOOL_CHART_SIZE.height),
        "{name}"
    );
    d.assert_not_blank(name);
    d
}

#[test]
fn candles_show_rising_and_falling_bars() {
    let all = bars("eurusd_1h_backtesting.csv");
    let d = render(
        "candles",
        "candles",
        &bars_output("EURUSD", "H1", &all[all.len() - 120..]),
        None,
    );
    let (g, r) = (d.count(green), d.count(red));
    assert!(g > 2000 && r > 2000, "green and red candles: {g} {r}");

    // 5000 bars are merged into at most 200 candles: still wide enough to see.
    let merged = render(
        "candles_merged",
        "candles",
        &bars_output("EURUSD", "H1", &all[all.len() - 5000..]),
        None,
    );
    assert!(merged.count(green) > 2000 && merged.count(red) > 2000);

    let daily = bars("goog_1d_backtesting.csv");
    render(
        "candles_daily",
        "candles",
        &bars_output("GOOG", "D1", &daily[..60]),
        None,
    );
}

#[test]
fn no_bars_draw_a_picture_that_says_so() {
    let empty = json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": [] });
    let png = render_tool_chart("candles", &empty, None).unwrap();
    let d = decode(&png);
    let dark = d.count(|p| p.iter().all(|c| *c < 140));
    assert!(dark > 300, "title and message: {dark}");
    assert!(render_tool_chart("candles", &json!({ "rows": [] }), None).is_err());
    let one = bars_output("EURUSD", "H1", &bars("eurusd_1h_backtesting.csv")[..1]);
    decode(&render_tool_chart("candles", &one, None).unwrap());
}

/// A `detect_structure` output as the tool builds it.
fn structure_output(symbol: &str, timeframe: &str, bars: &[Bar], swing_length: usize) -> Value {
    let config = tradeterm_core::structure::StructureConfig {
        swing_length,
        ..Default::default()
    };
    let events = tradeterm_core::structure::detect(bars, &config).unwrap();
    json!({
        "symbol": symbol,
        "timeframe": timeframe,
        "bars": bars.len(),
        "from": to_iso(bars[0].time),
        "to": to_iso(bars[bars.len() - 1].time),
        "events": events.iter().map(|e| json!({
            "time": to_iso(bars[e.index()].time),
            "confirmed_time": to_iso(bars[e.confirmed_at()].time),
            "event": e,
        })).collect::<Vec<_>>(),
    })
}

#[test]
fn structure_draws_zones_breaks_and_swings_over_the_candles() {
    let all = bars("eurusd_15m_smc_upstream.csv");
    let analysed = &all[all.len() - 600..];
    let output = structure_output("EURUSD", "M15", analysed, 10);
    let kinds: BTreeSet<&str> = output["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"]["type"].as_str())
        .collect();
    for k in ["swing", "fair_value_gap", "order_block", "structure_break"] {
        assert!(kinds.contains(k), "the fixture has {k} events: {kinds:?}");
    }
    // The bars come from get_bars over [from, to]: here with more before and after.
    let fetched = bars_output("EURUSD", "M15", &all[all.len() - 700..]);
    let d = render("structure", "structure", &output, Some(&fetched));
    // Zones are translucent fills: light greens, reds, blues or oranges.
    let zones = d.count(|p| {
        let [r, g, b] = *p;
        p != &[255, 255, 255] && r > 190 && g > 190 && b > 190 && (r.max(g).max(b) - r.min(g).min(b)) > 12
    });
    assert!(zones > 3000, "translucent zones: {zones}");
    assert!(d.count(green) > 1000 && d.count(red) > 1000);

    // Without bars (the fetch found none), the picture says so.
    let none = render_tool_chart("structure", &output, None).unwrap();
    decode(&none);
    // Daily bars, default swing length, every family.
    let daily = bars("goog_1d_backtesting.csv");
    let out = structure_output("GOOG", "D1", &daily[..1000], 50);
    render(
        "structure_daily",
        "structure",
        &out,
        Some(&bars_output("GOOG", "D1", &daily[..1000])),
    );
}

#[test]
fn backtests_draw_equity_over_drawdown() {
    let all = bars("eurusd_1h_backtesting.csv");
    let test_bars = &all[all.len() - 2000..];
    let strategy_file = format!(
        "{}/../../examples/strategies/sma_cross.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let strategy: Value = serde_json::from_str(&std::fs::read_to_string(strategy_file).unwrap()).unwrap();
    let strategy = tradeterm_core::backtest::parse_strategy(&strategy).unwrap();
    let opts = tradeterm_core::backtest::RunOptions::default();
    let r = tradeterm_core::backtest::run(&strategy, test_bars, &opts).unwrap();
    assert!(r.metrics.trades > 3);
    let step = r.equity.len().div_ceil(499);
    let curve: Vec<Value> = (0..r.equity.len())
        .filter(|i| i % step == 0 || i + 1 == r.equity.len())
        .map(|i| json!({ "time": to_iso(test_bars[i].time), "equity": r.equity[i] }))
        .collect();
    let output = json!({
        "symbol": "EURUSD", "timeframe": "H1", "bars": test_bars.len(),
        "from": to_iso(test_bars[0].time), "to": to_iso(test_bars[test_bars.len() - 1].time),
        "metrics": r.metrics, "trades": r.trades, "truncated": false, "equity_curve": curve,
    });
    let d = render("backtest", "backtest", &output, None);
    assert!(d.count(blue) > 800, "the equity line: {}", d.count(blue));
    assert!(d.count(red) > 300, "the drawdown border: {}", d.count(red));
}

#[test]
fn equity_curves_draw_the_balance_with_cash_flows() {
    let t0 = tradeterm_core::time::parse_iso("2026-11-02T00:00:00Z").unwrap();
    let mut points =
        vec![json!({ "time": to_iso(t0), "value": 10_000.0, "change": 0.0, "kind": "start", "deal": null })];
    let mut balance = 10_000.0;
    for i in 1..60_i64 {
        let (change, kind) = match i {
            20 => (5_000.0, "deposit"),
            45 => (-2_000.0, "withdrawal"),
            _ => ((((i * 7919) % 41) as f64 - 18.0) * 9.0, "trade"),
        };
        balance += change;
        points.push(json!({ "time": to_iso(t0 + i * 3_600_000 * 3), "value": balance, "change": change, "kind": kind, "deal": i }));
    }
    let output = json!({
        "from": to_iso(t0), "to": to_iso(t0 + 200 * 3_600_000), "currency": "USD", "points": points,
        "total_points": 60, "thinned": false, "starting_balance": 10_000.0, "ending_balance": balance,
        "current_equity": null, "floating_profit": null, "net_profit": balance - 13_000.0, "gross_profit": 0.0,
        "total_commission": 0.0, "total_swap": 0.0, "deposits": 5_000.0, "withdrawals": 2_000.0, "trades": 57,
        "max_drawdown": { "amount": 300.0, "percent": 2.1, "peak_time": to_iso(t0), "peak_value": 1.0, "trough_time": to_iso(t0), "trough_value": 1.0 },
    });
    let d = render("equity_curve", "equity_curve", &output, None);
    assert!(d.count(blue) > 800 && d.count(red) > 200);
    // One point (no deal in the range) still draws.
    let single = json!({ "currency": "USD", "points": [points[0].clone()], "max_drawdown": {} });
    decode(&render_tool_chart("equity_curve", &single, None).unwrap());
}

#[test]
fn correlation_matrices_are_heat_maps() {
    let series: Vec<Vec<(i64, f64)>> = ["sp500_1d_arch.csv", "nasdaq_1d_arch.csv", "goog_1d_backtesting.csv"]
        .iter()
        .map(|f| bars(f).iter().map(|b| (b.time, b.close)).collect())
        .collect();
    // A mirror of the S&P 500 (negatively correlated) and a flat series (undefined).
    let mirror: Vec<(i64, f64)> = series[0].iter().map(|&(t, p)| (t, 1e6 / p)).collect();
    let flat: Vec<(i64, f64)> = series[0].iter().map(|&(t, _)| (t, 1.0)).collect();
    let mut all: Vec<&[(i64, f64)]> = series.iter().map(Vec::as_slice).collect();
    all.push(&mirror);
    all.push(&flat);
    let m = tradeterm_core::portfolio::correlation_matrix(&all, tradeterm_core::portfolio::CorrelationMethod::Pearson)
        .unwrap();
    let symbols: Vec<String> = ["US500", "NAS100", "GOOG", "US500_INV", "FLAT"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let ranked = tradeterm_core::portfolio::ranked_pairs(&symbols, &m.matrix);
    let output = json!({
        "symbols": symbols, "timeframe": "D1", "method": "pearson", "bars": 5000, "returns": m.returns,
        "from": to_iso(m.from), "to": to_iso(m.to), "matrix": m.matrix,
        "most_correlated": ranked.iter().take(3).collect::<Vec<_>>(),
        "least_correlated": ranked.iter().rev().take(3).collect::<Vec<_>>(),
        "undefined": ["FLAT"],
    });
    let d = render("correlation", "correlation", &output, None);
    let deep_red = d.count(|p| p[0] > 150 && p[1] < 60 && p[2] < 70);
    let deep_blue = d.count(|p| p[2] > 150 && p[0] < 70);
    let grey = d.count(|p| *p == [215, 215, 215]);
    assert!(deep_red > 5000, "+1 cells: {deep_red}");
    assert!(deep_blue > 2000, "-1 cells: {deep_blue}");
    assert!(grey > 2000, "undefined cells: {grey}");

    // Twelve symbols still fit.
    let twelve: Vec<String> = (0..12).map(|i| format!("SYMBOL{i:02}")).collect();
    let matrix: Vec<Vec<f64>> = (0..12)
        .map(|i| {
            (0..12)
                .map(|j| if i == j { 1.0 } else { ((i * j) % 7) as f64 / 7.0 - 0.4 })
                .collect()
        })
        .collect();
    let output =
        json!({ "symbols": twelve, "timeframe": "H1", "method": "spearman", "returns": 199, "matrix": matrix });
    render("correlation_12", "correlation", &output, None);
}

#[test]
fn every_chart_kind_of_the_catalog_is_drawn_here() {
    for kind in tradeterm_tools::ChartKind::ALL {
        assert!(KINDS.contains(&kind.name()), "{kind:?}");
    }
    assert_eq!(KINDS.len(), tradeterm_tools::ChartKind::ALL.len());
}
