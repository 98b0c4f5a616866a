//! The portfolio tools end to end: REST over the real stack with simulated
//! terminals (`POST /api/v1/tools/{name}`), checked against
//! `tradeterm_core::portfolio` run on the same bars fetched through `get_bars`.

use serde_json::{Value, json};
use tradeterm_core::portfolio::{self, CorrelationMethod};
use tradeterm_core::time::to_iso;

use crate::harness::data::{bars_of, num};
use crate::harness::{Expect, Options, TestStack, close_to, spawn};

/// (time, close) of a `get_bars` answer.
fn closes_of(data: &Value) -> Vec<(i64, f64)> {
    bars_of(data).iter().map(|b| (b.time, b.close)).collect()
}

/// Calls `get_correlation_matrix` between two identical rounds of `get_bars`
/// (the last simulated bar is forming: retry until no tick landed in between).
async fn matrix_on_stable_bars(t: &TestStack, input: &Value) -> (Vec<Vec<(i64, f64)>>, Value) {
    let symbols: Vec<String> = input["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    let fetch = || async {
        let mut all = Vec::new();
        for s in &symbols {
            let req = json!({ "symbol": s, "timeframe": input["timeframe"], "count": input["bars"] });
            all.push(t.tool("get_bars", &req).await.data());
        }
        all
    };
    for _ in 0..30 {
        let before = fetch().await;
        let out = t.tool("get_correlation_matrix", input).await.data();
        let after = fetch().await;
        if before == after {
            return (before.iter().map(closes_of).collect(), out);
        }
    }
    panic!("the bars never held still across three requests");
}

#[tokio::test]
async fn correlation_matrix_matches_core_on_the_terminal_bars() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let input = json!({ "symbols": ["EURUSD", "GBPUSD", "XAUUSD"], "timeframe": "H1", "bars": 300 });
    let (series, out) = matrix_on_stable_bars(&t, &input).await;
    let d = &out;
    assert_eq!(d["symbols"], json!(["EURUSD", "GBPUSD", "XAUUSD"]));
    assert_eq!(
        (d["timeframe"].as_str(), d["method"].as_str()),
        (Some("H1"), Some("pearson"))
    );
    assert_eq!(d["bars"], 300);

    // Exactly core's matrix of the same closes.
    let refs: Vec<&[(i64, f64)]> = series.iter().map(Vec::as_slice).collect();
    let want = portfolio::correlation_matrix(&refs, CorrelationMethod::Pearson).unwrap();
    assert!(want.returns >= 100, "aligned returns: {}", want.returns);
    assert_eq!(d["returns"], want.returns);
    assert_eq!(d["from"], to_iso(want.from));
    assert_eq!(d["to"], to_iso(want.to));
    let m = d["matrix"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    for (i, (row, want_row)) in m.iter().zip(&want.matrix).enumerate() {
        assert_eq!(row.as_array().unwrap().len(), 3);
        assert_eq!(row[i], 1.0, "diagonal");
        for (j, want) in want_row.iter().enumerate() {
            let (got, exp) = (num(&row[j]), want.unwrap());
            assert!(close_to(got, exp, 1e-12), "[{i}][{j}] {got} != {exp}");
            assert!((-1.0..=1.0).contains(&got));
            assert_eq!(row[j], m[j][i], "symmetric");
        }
    }
    // Pairs: highest first in `most_correlated`, lowest first in `least_correlated`.
    let names: Vec<String> = ["EURUSD", "GBPUSD", "XAUUSD"].map(String::from).to_vec();
    let pairs = portfolio::ranked_pairs(&names, &want.matrix);
    let most = d["most_correlated"].as_array().unwrap();
    let least = d["least_correlated"].as_array().unwrap();
    assert_eq!((most.len(), least.len()), (3, 3));
    for (k, p) in pairs.iter().enumerate() {
        assert_eq!(
            (most[k]["a"].as_str(), most[k]["b"].as_str()),
            (Some(&*p.a), Some(&*p.b))
        );
        assert!(close_to(num(&most[k]["correlation"]), p.correlation, 1e-12));
        assert_eq!(least[2 - k]["a"], most[k]["a"]);
    }
    assert!(d["undefined"].as_array().unwrap().is_empty());

    // Spearman on the same request differs from Pearson but keeps the shape.
    let mut sp = input.clone();
    sp["method"] = json!("spearman");
    let b = t.tool("get_correlation_matrix", &sp).await.data();
    assert_eq!(b["method"], "spearman");
    assert_eq!(b["matrix"][1][1], 1.0);
    assert_eq!(b["matrix"][0][2], b["matrix"][2][0]);

    // Defaults: H1, 200 bars, pearson.
    let b = t
        .tool("get_correlation_matrix", &json!({ "symbols": ["EURUSD", "USDJPY"] }))
        .await
        .data();
    assert_eq!((b["timeframe"].as_str(), b["bars"].as_u64()), (Some("H1"), Some(200)));
    assert!(b["returns"].as_u64().unwrap() <= 199);

    // Input limits, in the spec's error envelope and nothing else.
    let thirteen: Vec<String> = (0..13).map(|i| format!("SYM{i}")).collect();
    for (bad, needle) in [
        (json!({ "symbols": ["EURUSD"] }), "between 2 and 12"),
        (json!({ "symbols": [] }), "between 2 and 12"),
        (json!({ "symbols": thirteen }), "between 2 and 12"),
        (json!({ "symbols": ["EURUSD", "GBPUSD", "EURUSD"] }), "twice"),
        (json!({ "symbols": ["EURUSD", "GBP USD"] }), "invalid symbol"),
        (json!({ "symbols": ["EURUSD", "GBPUSD"], "bars": 19 }), "`bars`"),
        (json!({ "symbols": ["EURUSD", "GBPUSD"], "bars": 5001 }), "`bars`"),
        (
            json!({ "symbols": ["EURUSD", "GBPUSD"], "method": "kendall" }),
            "kendall",
        ),
        (json!({ "symbols": ["EURUSD", "GBPUSD"], "timeframe": "H7" }), "H7"),
        (json!({ "symbols": ["EURUSD", "GBPUSD"], "lookback": 100 }), "lookback"),
        (json!({ "symbols": "EURUSD" }), "invalid type"),
        (json!({}), "symbols"),
    ] {
        t.assert_invalid("get_correlation_matrix", &bad, needle).await;
    }
    // Fewer bars than asked: the simulated history holds about a year of
    // monthly bars, so 20 MN1 bars give fewer returns than 19, yet at least
    // core's minimum (`portfolio::MIN_RETURNS`; below it, core refuses with
    // "aligned returns", checked in its unit tests).
    let d = t
        .tool(
            "get_correlation_matrix",
            &json!({ "symbols": ["EURUSD", "GBPUSD"], "timeframe": "MN1", "bars": 20 }),
        )
        .await
        .data();
    let returns = d["returns"].as_u64().unwrap() as usize;
    assert!(
        (portfolio::MIN_RETURNS..19).contains(&returns),
        "{returns} returns: {d}"
    );
    assert_eq!(d["matrix"][0][1], d["matrix"][1][0], "{d}");
    // An unknown symbol is an error from the terminal, not a matrix.
    let unknown = t
        .tool("get_correlation_matrix", &json!({ "symbols": ["EURUSD", "NOPE"] }))
        .await
        .failure(404, "NOT_FOUND");
    assert!(unknown.message.contains("NOPE"), "{unknown}");

    // A Free-tier key can call it (analytics is in Free).
    let free = t.api_as(&t.free_tier_key().await);
    let b = free
        .tool(
            "get_correlation_matrix",
            &json!({ "symbols": ["EURUSD", "GBPUSD"], "bars": 50 }),
        )
        .await
        .data();
    assert_eq!(b["bars"], 50);
    t.stack.stop().await;
}

fn currency<'a>(d: &'a Value, c: &str) -> &'a Value {
    d["currencies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["currency"] == c)
        .unwrap_or_else(|| panic!("no {c} in {d}"))
}

#[tokio::test]
async fn exposure_of_a_live_position_with_verdicts_and_tiers() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    let exposure = |body: Value| {
        let t = &t;
        async move { t.tool("check_portfolio_exposure", &body).await }
    };

    // No positions: nothing exposed.
    let d = &exposure(json!({})).await.data();
    assert_eq!(
        (d["open_positions"].as_u64(), d["verdict"].as_str()),
        (Some(0), Some("proceed")),
        "{d}"
    );
    assert_eq!(d["account_currency"], "USD");
    assert_eq!(d["gross_exposure"], 0.0);
    assert!(d["reasons"][0].as_str().unwrap().contains("no open positions"));
    assert!(d["correlation"]["matrix"].is_null() && d["correlation"]["note"].is_string());

    // Open 0.1 lot EURUSD live.
    let order =
        json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false, "comment": "exposure.1" });
    let o = t.api().place_order(&order).await.data();
    assert_eq!(o["executed"], true, "{o}");
    let ticket = o["trade"]["position"].as_u64().unwrap();

    let d = &exposure(json!({})).await.data();
    assert_eq!(d["open_positions"], 1);
    let equity = num(&d["equity"]);
    assert!(equity > 9_000.0 && equity < 11_000.0, "{equity}");
    let leg = &d["legs"][0];
    assert_eq!(
        (leg["ticket"].as_u64(), leg["proposed"].as_bool()),
        (Some(ticket), Some(false))
    );
    assert_eq!(
        (leg["symbol"].as_str(), leg["side"].as_str()),
        (Some("EURUSD"), Some("buy"))
    );
    let price = num(&leg["price"]);
    assert!(price > 0.5 && price < 2.0, "{price}");
    // Notional: 0.1 lot × 100 000 × price, already in USD.
    let notional = 0.1 * 100_000.0 * price;
    assert!(close_to(num(&leg["notional"]), notional, 1e-9), "{leg}");
    assert!(
        close_to(num(&leg["pct_equity"]), notional / equity * 100.0, 1e-9),
        "{leg}"
    );
    // +10 000 EUR, −notional USD.
    let eur = currency(d, "EUR");
    assert!(close_to(num(&eur["amount"]), 10_000.0, 1e-9), "{eur}");
    // EUR converted at the EURUSD mid, within a spread of the position's bid.
    assert!(close_to(num(&eur["amount_account"]), notional, 1e-3), "{eur}");
    let usd = currency(d, "USD");
    assert!(close_to(num(&usd["amount"]), -notional, 1e-9), "{usd}");
    assert!(close_to(num(&usd["amount_account"]), -notional, 1e-9), "{usd}");
    assert!(close_to(num(&d["gross_exposure"]), notional, 1e-9));
    assert!(close_to(num(&d["gross_pct_equity"]), notional / equity * 100.0, 1e-9));
    assert!(close_to(num(&d["net_exposure"]), num(&eur["amount_account"]), 1e-9));
    assert_eq!(d["concentration_source"], "currency EUR");
    assert_eq!(d["verdict"], "proceed", "{d}");
    assert!(d["unconverted"].as_array().unwrap().is_empty());
    assert_eq!(d["limits"]["caution_gross_pct"], 500.0);
    assert_eq!(d["limits"]["block_concentration_pct"], 600.0);

    // A proposed 0.5 lot buy on top: ~700 % of equity in EUR → block (and gross caution).
    let d = &exposure(json!({ "proposed_trade": { "symbol": "EURUSD", "side": "buy", "volume": 0.5 } }))
        .await
        .data();
    assert_eq!(d["verdict"], "block", "{d}");
    let proposed = &d["legs"][1];
    assert_eq!(
        (proposed["proposed"].as_bool(), proposed["ticket"].is_null()),
        (Some(true), true)
    );
    assert!(close_to(num(&currency(d, "EUR")["amount"]), 60_000.0, 1e-9));
    let reasons: Vec<&str> = d["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(reasons.iter().any(|r| r.contains("block level of 600%")), "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("caution level of 500%")),
        "{reasons:?}"
    );
    // The proposal changed nothing: still one position.
    assert_eq!(exposure(json!({})).await.data()["open_positions"], 1);

    // Hedging it with a proposed sell nets EUR to zero.
    let b = exposure(json!({ "proposed_trade": { "symbol": "EURUSD", "side": "sell", "volume": 0.1 } }))
        .await
        .data();
    assert!(num(&currency(&b, "EUR")["amount"]).abs() < 1e-9);
    assert_eq!(b["verdict"], "proceed");

    // A proposed USDJPY trade: JPY exposure converted through the USDJPY quote, and correlations computed.
    let d = &exposure(json!({
        "proposed_trade": { "symbol": "USDJPY", "side": "buy", "volume": 0.1 },
        "correlation_bars": 100
    }))
    .await
    .data();
    let jpy = currency(d, "JPY");
    assert!(num(&jpy["amount"]) < 0.0 && num(&jpy["amount_account"]) < 0.0, "{jpy}");
    assert_eq!(d["correlation"]["symbols"], json!(["EURUSD", "USDJPY"]));
    assert_eq!(d["correlation"]["bars"], 100);
    let r = num(&d["correlation"]["matrix"][0][1]);
    assert!(
        (-1.0..=1.0).contains(&r) && d["correlation"]["returns"].as_u64().unwrap() >= 10,
        "{d}"
    );
    assert!(d["correlation"]["note"].is_null());

    // Caller thresholds move the verdict.
    let b = exposure(json!({ "caution_concentration_pct": 50, "caution_gross_pct": 60 }))
        .await
        .data();
    assert_eq!(b["verdict"], "caution", "{b}");
    assert!(b["reasons"].to_string().contains("currency EUR concentrates"), "{b}");

    // A caution level above block is kept, with a warning; a volume the
    // symbol cannot trade is assessed, with a warning.
    let w = exposure(json!({
        "caution_gross_pct": 2000,
        "proposed_trade": { "symbol": "EURUSD", "side": "buy", "volume": 1000 }
    }))
    .await
    .data();
    assert_eq!(w["verdict"], "block", "{w}");
    let warnings = w["warnings"].to_string();
    assert!(
        warnings.contains("never raises `caution`") && warnings.contains("above the maximum of 100 lots"),
        "{w}"
    );

    // Input limits.
    for (bad, needle) in [
        (json!({ "caution_gross_pct": 20000 }), "caution_gross_pct"),
        (json!({ "block_gross_pct": 0 }), "block_gross_pct"),
        (json!({ "block_concentration_pct": 20000 }), "block_concentration_pct"),
        (json!({ "correlation_threshold": 1.5 }), "correlation_threshold"),
        (json!({ "correlation_bars": 10 }), "correlation_bars"),
        (
            json!({ "proposed_trade": { "symbol": "EURUSD", "side": "buy", "volume": 0 } }),
            "volume",
        ),
        (
            json!({ "proposed_trade": { "symbol": "EURUSD", "side": "long", "volume": 1 } }),
            "long",
        ),
        (
            json!({ "proposed_trade": { "symbol": "EURUSD", "side": "buy" } }),
            "volume",
        ),
        (json!({ "leverage": 5 }), "leverage"),
    ] {
        t.assert_invalid("check_portfolio_exposure", &bad, needle).await;
    }

    // A Free-tier key may check exposure (analytics is in Free) but not trade live.
    let free = t.api_as(&t.free_tier_key().await);
    let b = free
        .tool(
            "check_portfolio_exposure",
            &json!({ "proposed_trade": { "symbol": "EURUSD", "side": "sell", "volume": 0.1 } }),
        )
        .await
        .data();
    assert_eq!(b["open_positions"], 1);
    free.place_order(&json!({ "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "dry_run": false }))
        .await
        .failure(403, "TRADING_DISABLED");
    t.stack.stop().await;
}
