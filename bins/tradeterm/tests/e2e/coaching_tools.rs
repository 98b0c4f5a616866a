//! The coaching tools end to end: REST over the real stack with simulated
//! terminals (`POST /api/v1/tools/{name}`), checked against `tradeterm-core`
//! run on the same bars fetched through `get_bars`.

use serde_json::{Value, json};
use tradeterm_core::Bar;
use tradeterm_core::coaching::journal_score::{self, JournalFacts};
use tradeterm_core::coaching::setup::{self, SetupParams};
use tradeterm_core::regime::{self, RegimeConfig};
use tradeterm_core::structure::{self, StructureConfig, StructureEvent};
use tradeterm_core::time::{parse_iso, to_iso};
use tradeterm_core::{Side, fibonacci};
use tradeterm_store::Tier;

use crate::harness::data::{bars_of, num};
use crate::harness::{Expect, Options, TestStack, assert_json_close, close_to, spawn};

/// JSON numbers that went through a float parser once may be one ulp off:
/// core's values and the tool's are compared within this relative tolerance.
const REL: f64 = 1e-9;

/// Numbers written in `text` after removing its text sources (times, labels).
fn numbers_in(text: &str, sources: &[Value]) -> Vec<(f64, usize)> {
    let mut text = text.to_owned();
    for s in sources {
        if let Some(t) = s["value"].as_str() {
            text = text.replace(t, " ");
        }
    }
    tradeterm_core::coaching::setup::numbers_written_in(&text)
        .into_iter()
        .map(|(v, d, _)| (v, d))
        .collect()
}

/// Calls `explain_setup` between two identical `get_bars` answers (the last
/// simulated bar is forming, so retry until no tick landed in between).
async fn explain_on_stable_bars(t: &TestStack, input: &Value) -> (Vec<Bar>, Value) {
    let bars_req = json!({ "symbol": input["symbol"], "timeframe": input["timeframe"], "count": input["bars"] });
    for _ in 0..30 {
        let before = t.tool("get_bars", &bars_req).await.data();
        let out = t.tool("explain_setup", input).await.data();
        let after = t.tool("get_bars", &bars_req).await.data();
        if before == after {
            return (bars_of(&before), out);
        }
    }
    panic!("the bars never held still across three requests");
}

#[tokio::test]
async fn explain_setup_is_sourced_from_the_terminal_bars() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let input = json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 500, "side": "buy" });
    let (bars, out) = explain_on_stable_bars(&t, &input).await;
    assert_eq!(bars.len(), 500);
    let d = &out;
    assert_eq!(
        (d["symbol"].as_str(), d["timeframe"].as_str()),
        (Some("EURUSD"), Some("H1"))
    );

    // The tool's answer is exactly core's explanation of the same bars.
    let params = SetupParams {
        swing_length: 10,
        side: Some(Side::Buy),
    };
    let want = serde_json::to_value(setup::explain(&bars, &params).unwrap()).unwrap();
    let mut got = d.clone();
    got.as_object_mut().unwrap().remove("symbol");
    got.as_object_mut().unwrap().remove("timeframe");
    // The request asked for enough bars: nothing was adjusted.
    assert_eq!(got.as_object_mut().unwrap().remove("warnings"), Some(json!([])));
    // JSON float parsing may differ from the exact value by one ulp: compare with a tolerance.
    assert_json_close(&got, &want, REL, "data");

    // And its sources are the numbers of the independent core computations.
    let reg = regime::volatility_regime(&bars, &RegimeConfig::default()).unwrap();
    let trend = regime::trend_state(&bars, 10).unwrap();
    let fib = fibonacci::from_bars(&bars, 10).ok();
    let last = bars.last().unwrap();
    let m = &reg.metrics;
    let mut checked = 0;
    for o in d["observations"].as_array().unwrap() {
        let text = o["text"].as_str().unwrap();
        let sources = o["sources"].as_array().unwrap();
        assert!(!text.is_empty());
        for (v, decimals) in numbers_in(text, sources) {
            let tol = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
            assert!(
                sources
                    .iter()
                    .any(|s| s["value"].as_f64().is_some_and(|x| (x - v).abs() <= tol)),
                "{v} in `{text}` is not among its sources {sources:?}"
            );
        }
        for s in sources {
            let name = s["source"].as_str().unwrap();
            let value = &s["value"];
            let expect: Option<Value> = match name {
                "regime.adx" => Some(json!(m.adx)),
                "regime.plus_di" => Some(json!(m.plus_di)),
                "regime.minus_di" => Some(json!(m.minus_di)),
                "regime.efficiency_ratio" => Some(json!(m.efficiency_ratio)),
                "regime.bandwidth_percentile" => Some(json!(m.bandwidth_percentile)),
                "regime.atr" => Some(json!(m.atr)),
                "regime.atr_percentile" => Some(json!(m.atr_percentile)),
                "regime.atr_change_pct" => Some(json!(m.atr_change_pct)),
                "regime.percentile_samples" => Some(json!(m.percentile_samples as f64)),
                "regime.regime" => Some(json!(reg.regime.as_str())),
                "structure.trend" => Some(json!(trend.trend.as_str())),
                "structure.swings" => Some(json!(trend.swings as f64)),
                "structure.last_swing_high" => trend.last_swing_high.map(|p| json!(p.price)),
                "structure.last_swing_low" => trend.last_swing_low.map(|p| json!(p.price)),
                "structure.last_break.level" => trend.last_break.map(|b| json!(b.level)),
                "structure.last_break.broken_time" => trend.last_break.map(|b| json!(to_iso(b.broken_time))),
                "structure.last_break.swing_time" => trend.last_break.map(|b| json!(to_iso(b.swing_time))),
                "price.close" => Some(json!(last.close)),
                "threshold.adx_trending" => Some(json!(25.0)),
                "bars" => Some(json!(500.0)),
                _ => None,
            };
            if let Some(e) = expect {
                assert_json_close(value, &e, REL, &format!("source {name} of `{text}`"));
                checked += 1;
            }
            if name.starts_with("fibonacci.leg_") && !name.ends_with("_time") {
                let f = fib.as_ref().unwrap();
                let v = num(value);
                assert!(
                    close_to(v, f.high.price, REL) || close_to(v, f.low.price, REL),
                    "{name} = {v}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 15, "only {checked} sources checked");

    // Each reported zone is an open event of core's structure detection on these bars.
    let events = structure::detect(
        &bars,
        &StructureConfig {
            swing_length: 10,
            ..StructureConfig::default()
        },
    )
    .unwrap();
    let close = last.close;
    for family in ["fair_value_gaps", "order_blocks", "liquidity_pools"] {
        for slot in ["above", "below", "at_price"] {
            let z = &d["levels"][family][slot];
            if z.is_null() {
                continue;
            }
            let (top, bottom) = (num(&z["top"]), num(&z["bottom"]));
            let time = parse_iso(z["time"].as_str().unwrap()).unwrap();
            let index = bars.iter().position(|b| b.time == time).unwrap();
            let found = events.iter().any(|e| match e {
                StructureEvent::FairValueGap(g) => {
                    g.index == index && close_to(g.top, top, REL) && close_to(g.bottom, bottom, REL)
                }
                StructureEvent::OrderBlock(o) => {
                    o.index == index && close_to(o.top, top, REL) && close_to(o.bottom, bottom, REL)
                }
                StructureEvent::LiquidityPool(p) => p.index == index && close_to(p.level, top, REL),
                _ => false,
            });
            assert!(found, "{family}.{slot} {z} is not a detected zone");
            let closed = events.iter().any(|e| match e {
                StructureEvent::FvgMitigated(x) => family == "fair_value_gaps" && x.index == index,
                StructureEvent::OrderBlockMitigated(x) => family == "order_blocks" && x.index == index,
                StructureEvent::LiquiditySwept(x) => family == "liquidity_pools" && x.index == index,
                _ => false,
            });
            assert!(!closed, "{family}.{slot} {z} was mitigated or swept");
            match slot {
                "above" => assert!(bottom > close && (num(&z["distance"]) - (bottom - close)).abs() < 1e-12),
                "below" => assert!(top < close && (num(&z["distance"]) - (close - top)).abs() < 1e-12),
                _ => assert!(bottom <= close && close <= top),
            }
        }
    }

    let bias = d["bias"].as_str().unwrap();
    assert!(["bullish", "bearish", "neutral"].contains(&bias), "{bias}");
    let (want_bias, _) = setup::decide_bias(trend.trend, m.adx, m.plus_di, m.minus_di);
    assert_eq!(json!(want_bias), d["bias"]);
    assert_eq!(d["side"]["side"], "buy");
    assert_eq!(d["observations"].as_array().unwrap().last().unwrap()["id"], "bias");
    let codes: Vec<&str> = d["caveats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"forming_bar"), "{codes:?}");
    assert_eq!(d["structure"]["trend"], json!(trend.trend.as_str()));
    if let Some(f) = &fib {
        assert_eq!(
            num(&d["fibonacci"]["retracements"][2]["price"]),
            f.retracements[2].price
        );
    }

    // Input limits, in the spec's error envelope.
    for (bad, needle) in [
        (json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 50 }), "`bars`"),
        (json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 6000 }), "`bars`"),
        (
            json!({ "symbol": "EURUSD", "timeframe": "H1", "swing_length": 0 }),
            "swing_length",
        ),
        (json!({ "symbol": "EURUSD", "timeframe": "H1", "side": "long" }), "long"),
        (json!({ "symbol": "EURUSD", "timeframe": "H7" }), "H7"),
        (
            json!({ "symbol": "EURUSD", "timeframe": "H1", "colour": "red" }),
            "colour",
        ),
    ] {
        t.assert_invalid("explain_setup", &bad, needle).await;
    }
    // Fewer bars than three swing lengths: read 3 × swing_length and say so.
    let raised = t
        .tool(
            "explain_setup",
            &json!({ "symbol": "EURUSD", "timeframe": "H1", "bars": 120, "swing_length": 50 }),
        )
        .await
        .data();
    assert_eq!(raised["bars"], 150, "{raised}");
    assert!(
        raised["warnings"][0].as_str().unwrap().contains("3 × swing_length"),
        "{raised}"
    );
    // An unknown symbol is the terminal's NOT_FOUND, not a result.
    let unknown = t
        .tool("explain_setup", &json!({ "symbol": "NOPE", "timeframe": "H1" }))
        .await
        .failure(404, "NOT_FOUND");
    assert!(unknown.message.contains("NOPE"), "{unknown}");

    // A Free-tier key can call it (analytics is in Free).
    let free = t.api_as(&t.free_tier_key().await);
    let d = free
        .tool(
            "explain_setup",
            &json!({ "symbol": "EURUSD", "timeframe": "M15", "bars": 300 }),
        )
        .await
        .data();
    assert_eq!(d["bars"], 300);
    let d = free
        .tool(
            "score_journal_entry",
            &json!({ "entry": { "plan": "p", "stop_loss": 1.0 } }),
        )
        .await
        .data();
    assert_eq!(d["max_points"], 30.0);
    t.stack.stop().await;
}

fn facts(entry: &Value, risk_percent: Option<f64>) -> JournalFacts {
    let strings = |k: &str| -> Vec<String> {
        entry[k]
            .as_array()
            .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    JournalFacts {
        side: serde_json::from_value(entry["side"].clone()).unwrap(),
        entry_price: entry["entry_price"].as_f64(),
        exit_price: entry["exit_price"].as_f64(),
        stop_loss: entry["stop_loss"].as_f64(),
        take_profit: entry["take_profit"].as_f64(),
        setup: entry["setup"].as_str().map(str::to_owned),
        plan: entry["plan"].as_str().map(str::to_owned),
        rules_followed: entry["rules_followed"].as_bool(),
        emotions: strings("emotions"),
        tags: strings("tags"),
        risk_percent,
    }
}

#[tokio::test]
async fn score_journal_entry_by_id_inline_and_license_scoped() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let entry = json!({
        "symbol": "EURUSD", "side": "buy", "volume": 0.1,
        "entry_price": 1.1, "stop_loss": 1.098, "take_profit": 1.105, "exit_price": 1.097,
        "setup": "pullback", "plan": "Buy the retest of the broken high; stop under the swing low.",
        "rules_followed": true, "emotions": ["fomo", "calm"], "tags": ["moved-stop"]
    });
    let created = t.api().create_journal_entry(&json!({ "entry": entry })).await.data();
    let id = created["id"].as_str().unwrap().to_owned();

    let d = &t
        .tool("score_journal_entry", &json!({ "entry_id": id, "risk_percent": 3.0 }))
        .await
        .data();
    assert_eq!(d["entry_id"], id.as_str());
    let want = serde_json::to_value(journal_score::score(&facts(&entry, Some(3.0))).unwrap()).unwrap();
    for k in [
        "score",
        "grade",
        "points",
        "max_points",
        "criteria",
        "not_scored",
        "suggestions",
    ] {
        assert_eq!(d[k], want[k], "{k}");
    }
    // What this entry is worth, criterion by criterion.
    let crit = |name: &str| {
        d["criteria"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {d}"))
            .clone()
    };
    assert_eq!(crit("plan")["points"], 15.0);
    assert_eq!(crit("risk_size")["points"], 7.0);
    assert!(crit("risk_size")["reason"].as_str().unwrap().contains("3%"));
    assert_eq!(crit("planned_rr")["points"], 10.0); // 0.005 / 0.002 = 2.5R
    assert_eq!(crit("realised_r")["points"], 0.0); // -1.5R: beyond the stop
    assert!(crit("realised_r")["reason"].as_str().unwrap().contains("-1.50R"));
    assert_eq!(crit("rule_adherence")["points"], 14.0); // moved_stop
    assert_eq!(crit("emotions")["points"], 10.0); // fomo
    let points: f64 = d["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| num(&c["points"]))
        .sum();
    assert_eq!(num(&d["points"]), points);
    assert_eq!(d["max_points"], 100.0);
    assert_eq!(num(&d["score"]), points);
    assert_eq!(d["grade"], "B");
    assert!(d["not_scored"].as_array().unwrap().is_empty());
    assert!(!d["suggestions"].as_array().unwrap().is_empty());

    // Inline: the same entry scores the same.
    let inline = t
        .tool("score_journal_entry", &json!({ "entry": entry, "risk_percent": 3.0 }))
        .await
        .data();
    assert!(inline["entry_id"].is_null());
    assert_eq!(inline["criteria"], d["criteria"]);
    assert_eq!(inline["score"], d["score"]);

    // Without risk_percent nor a risk tag, risk_size is not scored and the score is normalised.
    let b = t.tool("score_journal_entry", &json!({ "entry_id": id })).await.data();
    let ns = &b["not_scored"];
    assert_eq!(ns[0]["name"], "risk_size", "{b}");
    assert_eq!(ns[0]["missing"], json!(["risk_percent"]));
    assert_eq!(b["max_points"], 85.0);
    // A sparse stored entry: only what it records is scored; the risk comes from its tag.
    let created = t
        .api()
        .create_journal_entry(&json!({ "entry": { "notes": "quick scalp", "tags": ["risk:0.5%"] } }))
        .await
        .data();
    let sparse = created["id"].as_str().unwrap().to_owned();
    let b = t
        .tool("score_journal_entry", &json!({ "entry_id": sparse }))
        .await
        .data();
    let names: Vec<&str> = b["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["plan", "stop_loss", "risk_size"]);
    assert_eq!(b["risk_percent_source"], "tag");
    let missing: Vec<&str> = b["not_scored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(missing, ["planned_rr", "realised_r", "rule_adherence", "emotions"]);

    // Another license's entry is indistinguishable from a missing one.
    let (_, other_key) = t.other_license(Tier::Pro).await;
    let other = t.api_as(&other_key);
    let fake = "jrn_00000000000000000000000000";
    let theirs = other
        .tool("score_journal_entry", &json!({ "entry_id": id }))
        .await
        .failure(404, "NOT_FOUND");
    let missing = other
        .tool("score_journal_entry", &json!({ "entry_id": fake }))
        .await
        .failure(404, "NOT_FOUND");
    assert_eq!(
        theirs.message.replace(&id, "<id>"),
        missing.message.replace(fake, "<id>"),
    );

    // Invalid input: the spec's error envelope with VALIDATION_ERROR.
    for (bad, needle) in [
        (json!({}), "entry_id"),
        (json!({ "entry_id": id, "entry": {} }), "not both"),
        (json!({ "entry": { "stop_loss": "low" } }), "invalid type"),
        (json!({ "entry": { "mood": "calm" } }), "mood"),
        (json!({ "entry_id": id, "risk_percent": 150 }), "between 0 and 100"),
        (json!({ "entry": { "entry_price": -1.0 } }), "entry_price"),
    ] {
        t.assert_invalid("score_journal_entry", &bad, needle).await;
    }

    t.stack.stop().await;
}
