//! `get_etf_flows` over REST: disabled by default (403), and with a flows
//! file: per-asset daily sums, totals, the last five days and the streak.

mod common;

use common::{Options, spawn, spawn_with};
use serde_json::json;

#[tokio::test]
async fn etf_flows_are_off_by_default_and_summed_from_the_file() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let (s, b) = t.post("/api/v1/tools/get_etf_flows", None, &json!({}), None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (403, Some("FORBIDDEN")), "{b}");
    assert!(b["error"]["message"].as_str().unwrap().contains("ETF_FLOWS_FILE"));
    t.stack.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flows.json");
    let mut records = Vec::new();
    // Seven days of BTC (IBIT and FBTC) and one ETH fund.
    let btc = [
        (100.0, -20.0),
        (50.0, 10.0),
        (-30.0, -40.0),
        (10.0, 5.0),
        (20.0, 0.0),
        (5.0, 1.0),
        (7.0, 3.0),
    ];
    for (i, (ibit, fbtc)) in btc.iter().enumerate() {
        let date = format!("2026-11-{:02}", 10 + i);
        records.push(json!({ "date": date, "fund": "IBIT", "asset": "BTC", "flow_usd": ibit * 1e6 }));
        records.push(json!({ "date": date, "fund": "FBTC", "asset": "BTC", "flow_usd": fbtc * 1e6 }));
        records.push(json!({ "date": date, "fund": "ETHA", "asset": "ETH", "flow_usd": -1e6 }));
    }
    std::fs::write(&file, serde_json::to_string(&records).unwrap()).unwrap();
    let t = spawn_with(
        Options {
            sims: 1,
            ..Options::default()
        },
        |s| s.etf_flows_file = Some(file),
    )
    .await;
    let (s, b) = t
        .post(
            "/api/v1/tools/get_etf_flows",
            None,
            &json!({ "asset": "btc", "days": 5 }),
            None,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let a = &b["data"]["assets"][0];
    assert_eq!(b["data"]["assets"].as_array().unwrap().len(), 1);
    assert_eq!(a["asset"], "BTC");
    let days = a["days"].as_array().unwrap();
    assert_eq!(days.len(), 5, "the last five days of the data");
    assert_eq!(days[0]["date"], "2026-11-12");
    assert_eq!(days[0]["net_usd"], -70e6);
    assert_eq!(days[0]["funds"]["IBIT"], -30e6);
    // 12th..16th: -70 + 15 + 20 + 6 + 10 = -19 (millions); streak: 4 inflow days.
    assert_eq!(a["total_usd"].as_f64(), Some(-19e6));
    assert_eq!(a["last_5_days_usd"].as_f64(), Some(-19e6));
    assert_eq!(a["streak_days"], 4);
    assert_eq!(b["data"]["latest_date"], "2026-11-16");
    assert!(b["data"]["days_behind"].as_i64().unwrap() >= 0);
    let (_, b) = t.post("/api/v1/tools/get_etf_flows", None, &json!({}), None).await;
    let assets: Vec<&str> = b["data"]["assets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["asset"].as_str().unwrap())
        .collect();
    assert_eq!(assets, ["BTC", "ETH"]);
    assert_eq!(b["data"]["assets"][1]["streak_days"], -7);
    let (s, b) = t
        .post("/api/v1/tools/get_etf_flows", None, &json!({ "asset": "SOL" }), None)
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (404, Some("NOT_FOUND")), "{b}");
    for bad in [
        json!({ "days": 0 }),
        json!({ "days": 367 }),
        json!({ "asset": "B T C" }),
        json!({ "fund": "IBIT" }),
    ] {
        let (s, b) = t.post("/api/v1/tools/get_etf_flows", None, &bad, None).await;
        assert_eq!(
            (s, b["error"]["code"].as_str()),
            (400, Some("VALIDATION_ERROR")),
            "{bad}: {b}"
        );
    }
    t.stack.stop().await;
}
