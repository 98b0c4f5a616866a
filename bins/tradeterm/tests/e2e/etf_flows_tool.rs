//! `get_etf_flows` over REST: disabled by default (403), and with a flows
//! file: per-asset daily sums, totals, the last five days and the streak.

use serde_json::json;

use crate::harness::{Expect, Options, spawn, spawn_with};

#[tokio::test]
async fn etf_flows_are_off_by_default_and_summed_from_the_file() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    t.tool("get_etf_flows", &json!({}))
        .await
        .failure(403, "FORBIDDEN")
        .mentions("ETF_FLOWS_FILE");
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
    let d = t
        .tool("get_etf_flows", &json!({ "asset": "btc", "days": 5 }))
        .await
        .data();
    let a = &d["assets"][0];
    assert_eq!(d["assets"].as_array().unwrap().len(), 1);
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
    assert_eq!(d["latest_date"], "2026-11-16");
    assert!(d["days_behind"].as_i64().unwrap() >= 0);
    let d = t.tool("get_etf_flows", &json!({})).await.data();
    let assets: Vec<&str> = d["assets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["asset"].as_str().unwrap())
        .collect();
    assert_eq!(assets, ["BTC", "ETH"]);
    assert_eq!(d["assets"][1]["streak_days"], -7);
    t.tool("get_etf_flows", &json!({ "asset": "SOL" }))
        .await
        .failure(404, "NOT_FOUND");
    for bad in [
        json!({ "days": 0 }),
        json!({ "days": 367 }),
        json!({ "asset": "B T C" }),
        json!({ "fund": "IBIT" }),
    ] {
        t.tool("get_etf_flows", &bad)
            .await
            .failure_for(400, "VALIDATION_ERROR", &bad);
    }
    t.stack.stop().await;
}
