//! Charts over REST, both ways: `Accept: image/png` answers the chart itself;
//! `"chart": true` in the input adds a base64 `chart` beside `data`. The
//! terminal is a stand-in serving real bars (`data/market/`); the caller is a
//! REST API key of an in-memory store (resolved in the store, as when the
//! gateway is unreachable). Every picture is decoded with the `png` crate.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Value, json};
use tradeterm_core::Bar;
use tradeterm_core::license::Tier;
use tradeterm_protocol::http_client::GatewayClient;
use tradeterm_protocol::token::{DEFAULT_AUDIENCE, DEFAULT_ISSUER, TokenVerifier, generate_rsa_pem_pair};
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError, TerminalStatus};
use tradeterm_rest::{AppState, RestServer, RestSettings, ServerHandle};
use tradeterm_store::{SqlStore, Store};

/// One bar request: `count`, `from`, `to`.
type BarsRequest = (Option<u32>, Option<i64>, Option<i64>);

/// A terminal with hourly EURUSD bars (and `USDEUR`, their inverse); it
/// records the bar requests it gets.
#[derive(Debug)]
struct BarsTerminal {
    bars: Vec<Bar>,
    requests: Mutex<Vec<BarsRequest>>,
}

#[async_trait]
impl Dispatch for BarsTerminal {
    async fn execute(&self, _: &str, _: &str, command: Command, _: Duration) -> Result<CommandResult, DispatchError> {
        let Command::Bars {
            symbol,
            timeframe,
            count,
            from,
            to,
        } = command
        else {
            return Err(DispatchError::NotFound);
        };
        self.requests.lock().unwrap().push((count, from, to));
        let mut bars: Vec<Bar> = match from {
            Some(f) => self
                .bars
                .iter()
                .filter(|b| b.time >= f && to.is_none_or(|t| b.time < t))
                .copied()
                .collect(),
            None => self.bars[self.bars.len() - count.unwrap_or(100) as usize..].to_vec(),
        };
        match symbol.as_str() {
            "EURUSD" => {}
            "USDEUR" => {
                for b in &mut bars {
                    (b.open, b.high, b.low, b.close) = (1.0 / b.open, 1.0 / b.low, 1.0 / b.high, 1.0 / b.close);
                }
            }
            _ => return Err(DispatchError::NotFound),
        }
        Ok(CommandResult::Bars {
            symbol,
            timeframe,
            bars,
        })
    }

    async fn terminals(&self, _: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        Err(DispatchError::NotFound)
    }
}

struct App {
    base: String,
    key: String,
    http: reqwest::Client,
    terminal: Arc<BarsTerminal>,
    handle: ServerHandle,
}

async fn spawn_app() -> App {
    let store = SqlStore::connect("sqlite::memory:").await.unwrap();
    let (license, _) = store.create_license("charts", Tier::Pro).await.unwrap();
    let (_, key) = store.create_api_key(&license.id, "charts").await.unwrap();
    let csv = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/market/eurusd_1h_backtesting.csv"
    ))
    .unwrap();
    let terminal = Arc::new(BarsTerminal {
        bars: tradeterm_core::bars::parse_csv(&csv).unwrap(),
        requests: Mutex::new(Vec::new()),
    });
    let (_private, public) = generate_rsa_pem_pair().unwrap();
    let verifier = TokenVerifier::from_pem(public.as_bytes(), DEFAULT_ISSUER, DEFAULT_AUDIENCE).unwrap();
    let services = Arc::new(tradeterm_tools::Services::new(terminal.clone(), Arc::new(store)));
    let state = AppState::new(
        RestSettings {
            workers: 1,
            ..RestSettings::default()
        },
        services,
        verifier,
        // Unreachable: API keys are resolved in the store.
        GatewayClient::new("http://127.0.0.1:9").unwrap(),
    );
    let server = RestServer::build(state, TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
    let base = format!("http://127.0.0.1:{}", server.port());
    let handle = server.handle();
    tokio::spawn(server.run_until_stopped());
    App {
        base,
        key: key.expose().to_owned(),
        http: reqwest::Client::new(),
        terminal,
        handle,
    }
}

impl App {
    async fn call(&self, tool: &str, input: Value, accept: Option<&str>) -> reqwest::Response {
        let mut r = self
            .http
            .post(format!("{}/api/v1/tools/{tool}", self.base))
            .bearer_auth(&self.key)
            .header("X-Terminal-Id", "t1")
            .json(&input);
        if let Some(a) = accept {
            r = r.header("Accept", a);
        }
        r.send().await.unwrap()
    }
}

/// Decodes a PNG: its size and RGB pixels.
fn decode(bytes: &[u8]) -> (u32, u32, Vec<[u8; 3]>) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    let (w, h) = (reader.info().width, reader.info().height);
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    assert_eq!(frame.color_type, png::ColorType::Rgb);
    let pixels = buf[..frame.buffer_size()]
        .chunks(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (w, h, pixels)
}

/// A real chart: 1200×800, a white background, dark text, many colours,
/// and green and red candles when `candles`.
fn assert_chart(bytes: &[u8], candles: bool) {
    let (w, h, pixels) = decode(bytes);
    assert_eq!((w, h), (1200, 800));
    assert!(bytes.len() <= tradeterm_charts::MAX_PNG_BYTES);
    let count = |f: &dyn Fn(&[u8; 3]) -> bool| pixels.iter().filter(|p| f(p)).count();
    assert!(count(&|p| *p == [255, 255, 255]) > pixels.len() / 3, "white background");
    assert!(count(&|p| p.iter().all(|c| *c < 90)) > 1500, "dark text and axes");
    let colours: BTreeSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(colours.len() > 30, "{} colours", colours.len());
    if candles {
        let green = count(&|p| p[1] > 120 && p[0] < 80 && p[2] < 120);
        let red = count(&|p| p[0] > 180 && p[1] < 80 && p[2] < 80);
        assert!(green > 1000 && red > 1000, "candles: {green} green, {red} red");
    }
}

#[tokio::test]
async fn accept_image_png_answers_the_chart_itself() {
    let app = spawn_app().await;
    let resp = app
        .call(
            "get_bars",
            json!({ "symbol": "EURUSD", "timeframe": "H1", "count": 150 }),
            Some("image/png"),
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert!(
        resp.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("get_bars.png")
    );
    assert_chart(&resp.bytes().await.unwrap(), true);

    // The named route too, with the usual quality values.
    let resp = app
        .http
        .get(format!("{}/api/v1/market/bars/EURUSD?timeframe=H1&count=80", app.base))
        .bearer_auth(&app.key)
        .header("X-Terminal-Id", "t1")
        .header("Accept", "image/png, application/json;q=0.5")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert_chart(&resp.bytes().await.unwrap(), true);

    // Errors stay JSON envelopes.
    let resp = app
        .call("get_bars", json!({ "symbol": "EURUSD" }), Some("image/png"))
        .await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");

    // A tool without a chart answers JSON whatever the Accept says.
    let resp = app.call("list_indicators", json!({}), Some("image/png")).await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    app.handle.stop(true).await;
}

#[tokio::test]
async fn chart_true_adds_a_base64_chart_beside_the_data() {
    let app = spawn_app().await;
    let input = json!({ "symbol": "EURUSD", "timeframe": "H1", "count": 120, "chart": true });
    let resp = app.call("get_bars", input, None).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["data"]["bars"].as_array().unwrap().len(), 120);
    let chart = &body["chart"];
    assert_eq!(chart["mime_type"], "image/png");
    assert_eq!(
        (chart["width"].as_u64(), chart["height"].as_u64()),
        (Some(1200), Some(800))
    );
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(chart["data"].as_str().unwrap())
        .unwrap();
    assert_chart(&bytes, true);

    // Without the flag (or with false): the data alone, byte for byte the same.
    for input in [
        json!({ "symbol": "EURUSD", "timeframe": "H1", "count": 120 }),
        json!({ "symbol": "EURUSD", "timeframe": "H1", "count": 120, "chart": false }),
    ] {
        let plain: Value = app.call("get_bars", input, None).await.json().await.unwrap();
        assert!(plain.get("chart").is_none());
        assert_eq!(plain["data"], body["data"]);
    }

    // A flag that is not a boolean, or on a tool without a chart, is refused.
    for (tool, input) in [
        (
            "get_bars",
            json!({ "symbol": "EURUSD", "timeframe": "H1", "chart": "yes" }),
        ),
        ("list_indicators", json!({ "chart": true })),
    ] {
        let resp = app.call(tool, input, None).await;
        assert_eq!(resp.status(), 400, "{tool}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{tool}: {body}");
    }
    app.handle.stop(true).await;
}

#[tokio::test]
async fn structure_charts_fetch_the_analysed_bars_and_other_kinds_draw_too() {
    let app = spawn_app().await;
    let input =
        json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 600, "config": { "swing_length": 10 }, "chart": true });
    let resp = app.call("detect_structure", input, None).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert!(body["data"]["events"].as_array().unwrap().len() > 20);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(body["chart"]["data"].as_str().unwrap())
        .unwrap();
    assert_chart(&bytes, true);
    // The tool's own request (600 bars), then the chart's: exactly its range.
    let requests = app.terminal.requests.lock().unwrap().clone();
    let bars = &app.terminal.bars;
    let (first, last) = (bars[bars.len() - 600].time, bars[bars.len() - 1].time);
    assert_eq!(requests, [(Some(600), None, None), (None, Some(first), Some(last + 1))]);

    let strategy = json!({ "type": "ma_cross", "fast": 10, "slow": 30, "ma": "sma" });
    for (tool, input) in [
        (
            "backtest_strategy",
            json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 1500, "strategy": strategy }),
        ),
        (
            "get_correlation_matrix",
            json!({ "symbols": ["EURUSD", "USDEUR"], "timeframe": "H1", "bars": 300 }),
        ),
    ] {
        let resp = app.call(tool, input, Some("image/png")).await;
        assert_eq!(resp.status(), 200, "{tool}");
        assert_eq!(resp.headers()["content-type"], "image/png", "{tool}");
        assert_chart(&resp.bytes().await.unwrap(), false);
    }
    app.handle.stop(true).await;
}

#[test]
fn the_openapi_document_declares_the_charts() {
    let doc = tradeterm_rest::openapi::document();
    let chart = &doc["components"]["schemas"]["Chart"];
    assert_eq!(chart["properties"]["mime_type"]["const"], "image/png");
    assert_eq!(chart["properties"]["data"]["contentEncoding"], "base64");
    for t in tradeterm_tools::catalog() {
        let ok = &doc["paths"][format!("/api/v1/tools/{}", t.name)]["post"]["responses"]["200"];
        let content = ok["content"].as_object().unwrap();
        let envelope = &content["application/json"]["schema"]["properties"];
        if t.chart.is_some() {
            assert!(content.contains_key("image/png"), "{}", t.name);
            assert_eq!(envelope["chart"]["$ref"], "#/components/schemas/Chart", "{}", t.name);
            assert!(ok["description"].as_str().unwrap().contains("Accept: image/png"));
        } else {
            // `get_audit_log` also answers `text/csv` (`format=csv`), never a chart.
            let others = usize::from(t.name == "get_audit_log" && content.contains_key("text/csv"));
            assert_eq!(content.len(), 1 + others, "{}", t.name);
            assert!(envelope.get("chart").is_none(), "{}", t.name);
        }
    }
    // The named route of get_bars takes `chart` as a query parameter and may answer the image.
    let op = &doc["paths"]["/api/v1/market/bars/{symbol}"]["get"];
    assert!(
        op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "chart" && p["in"] == "query" && p["schema"]["type"] == "boolean"),
        "{}",
        op["parameters"]
    );
    assert!(op["responses"]["200"]["content"].get("image/png").is_some());
}
