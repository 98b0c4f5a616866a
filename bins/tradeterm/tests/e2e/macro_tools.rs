//! The macro tools end to end: REST over the real stack with a simulated MT5
//! terminal (EURUSD, GBPUSD, USDJPY, XAUUSD, US500; no DXY, VIX or US10Y) and
//! its deterministic calendar. Each answer is checked against the raw data
//! fetched through `get_bars` and `get_economic_calendar` and the core
//! functions of `tradeterm_core::macro_context`.

use serde_json::{Value, json};
use tradeterm_core::events::EconomicEvent;
use tradeterm_core::macro_context::{self as mc, RiskComponent, StanceConfig, SurpriseConfig};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};

use crate::harness::data::{event_of, num};
use crate::harness::{Expect, Options, TestStack, close_to, spawn};

/// The tools compute with core on the same bars and events: the answers
/// agree to float formatting.
const REL: f64 = 1e-9;

/// The calendar of `[from, to)` through `get_economic_calendar`, 31 days at a time.
async fn calendar(t: &TestStack, from: i64, to: i64, currencies: &[&str]) -> Vec<EconomicEvent> {
    let mut out = Vec::new();
    let mut start = from;
    while start < to {
        let end = (start + 31 * DAY_MS).min(to);
        let cal = t
            .tool(
                "get_economic_calendar",
                &json!({ "from": to_iso(start), "to": to_iso(end), "currencies": currencies }),
            )
            .await
            .data();
        assert_eq!(cal["source"], "terminal");
        out.extend(cal["events"].as_array().unwrap().iter().map(event_of));
        start = end;
    }
    out
}

fn input<'a>(ctx: &'a Value, name: &str) -> &'a Value {
    ctx["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["input"] == name)
        .unwrap_or_else(|| panic!("no input {name}: {ctx}"))
}

fn has_key_containing(v: &Value, needle: &str) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.contains(needle) || has_key_containing(v, needle)),
        Value::Array(a) => a.iter().any(|v| has_key_containing(v, needle)),
        _ => false,
    }
}

#[tokio::test]
async fn market_context_and_risk_regime_from_the_terminal_bars() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;

    // The simulator quotes none of DXY, VIX and US10Y: all missing, nothing zeroed.
    let ctx = t.tool("get_market_context", &json!({})).await.data();
    assert_eq!(ctx["missing"], json!(["dxy", "vix", "us10y"]), "{ctx}");
    assert_eq!(ctx["risk_tone"], "unknown");
    assert!(ctx["tone_score"].is_null());
    for name in ["dxy", "vix", "us10y"] {
        let i = input(&ctx, name);
        assert_eq!(i["available"], false);
        assert!(
            i["level"].is_null() && i["change_pct"].is_null() && i["symbol"].is_null(),
            "{i}"
        );
        assert!(!i["candidates"].as_array().unwrap().is_empty());
        assert!(i["reason"].as_str().unwrap().contains("name a symbol"), "{i}");
    }

    // Mapping an input to a symbol the terminal has (US500 as "VIX", only to
    // exercise the path): its level is read from the daily bars and votes.
    let ctx = t
        .tool(
            "get_market_context",
            &json!({ "vix": "US500", "dxy": "NOPE", "change_bars": 3 }),
        )
        .await
        .data();
    assert_eq!(ctx["missing"], json!(["dxy", "us10y"]), "{ctx}");
    let vix = input(&ctx, "vix");
    assert_eq!(
        (vix["available"].as_bool(), vix["symbol"].as_str()),
        (Some(true), Some("US500"))
    );
    assert_eq!(vix["resolved_by"], "explicit");
    assert!(input(&ctx, "dxy")["reason"].as_str().unwrap().contains("NOPE"));
    let bars = t
        .tool(
            "get_bars",
            &json!({ "symbol": "US500", "timeframe": "D1", "count": 10 }),
        )
        .await
        .data();
    let bars = bars["bars"].as_array().unwrap();
    let last = bars.last().unwrap();
    assert_eq!(vix["bar_time"], last["time"]);
    let level = num(&vix["level"]);
    assert!(
        level >= num(&last["low"]) && level <= num(&last["high"]),
        "{vix} vs {last}"
    );
    let base = num(&bars[bars.len() - 4]["close"]);
    assert!(
        close_to(num(&vix["change_pct"]), (level / base - 1.0) * 100.0, REL),
        "{vix}"
    );
    // A "VIX" of several thousand points is far above 25: risk-off, the only vote.
    assert_eq!(
        (ctx["risk_tone"].as_str(), ctx["tone_score"].as_f64()),
        (Some("risk_off"), Some(-1.0))
    );

    // Risk regime: equities (US500), yen (USDJPY) and gold (XAUUSD) are
    // available; VIX and the franc are not: coverage 0.35 + 0.15 + 0.15.
    let regime = t.tool("get_risk_regime", &json!({})).await.data();
    assert_eq!(regime["timeframe"], "D1");
    assert_eq!(regime["lookback"], 20);
    assert!(close_to(num(&regime["coverage"]), 0.65, REL), "{regime}");
    assert_eq!(regime["missing"], json!(["vix", "franc"]));
    let mut parts = Vec::new();
    for c in regime["components"].as_array().unwrap() {
        let kind: RiskComponent = serde_json::from_value(c["component"].clone()).unwrap();
        assert!(close_to(num(&c["weight"]), kind.weight(), REL));
        if c["available"] == false {
            assert!(c["score"].is_null(), "{c}");
            parts.push((kind.weight(), None));
            continue;
        }
        // Recompute from the closed bars fetched through get_bars.
        let symbol = c["symbol"].as_str().unwrap();
        let bars = t
            .tool("get_bars", &json!({ "symbol": symbol, "timeframe": "D1", "count": 40 }))
            .await
            .data();
        let (from, to) = (
            parse_iso(c["from"].as_str().unwrap()).unwrap(),
            parse_iso(c["to"].as_str().unwrap()).unwrap(),
        );
        let all = bars["bars"].as_array().unwrap();
        let closes: Vec<f64> = all
            .iter()
            .filter(|b| {
                let time = parse_iso(b["time"].as_str().unwrap()).unwrap();
                time >= from && time <= to
            })
            .map(|b| num(&b["close"]))
            .collect();
        assert_eq!(closes.len(), 21, "lookback + 1 closes: {c}");
        assert_eq!(c["bars"], 21);
        assert_ne!(all.last().unwrap()["time"], c["to"], "the forming bar is not used");
        let m = mc::momentum(&closes, kind.sign()).unwrap();
        assert!(close_to(num(&c["score"]), m.score, REL), "{c} vs {m:?}");
        assert!(close_to(num(&c["momentum"]["z"]), m.z, REL));
        parts.push((kind.weight(), Some(m.score)));
    }
    let expected = mc::composite(&parts).unwrap();
    assert!(close_to(num(&regime["score"]), expected.score.unwrap(), REL));
    assert_eq!(regime["regime"], serde_json::to_value(expected.regime).unwrap());

    // An explicit VIX symbol (EURUSD, ~1.1 "points", only to exercise the
    // path) adds its weight: coverage 0.90 and a full risk-on VIX score.
    let regime = t
        .tool(
            "get_risk_regime",
            &json!({ "symbols": { "vix": "EURUSD" }, "lookback": 10 }),
        )
        .await
        .data();
    assert!(close_to(num(&regime["coverage"]), 0.90, REL), "{regime}");
    let vix = &regime["components"][1];
    assert_eq!(
        (vix["component"].as_str(), vix["symbol"].as_str()),
        (Some("vix"), Some("EURUSD"))
    );
    assert!(close_to(num(&vix["score"]), 1.0, REL));
    assert_eq!(regime["components"][0]["bars"], 11);

    // Validation.
    let bad = [
        ("get_market_context", json!({ "vix": "VIX INDEX" }), "vix"),
        ("get_market_context", json!({ "change_bars": 0 }), "change_bars"),
        (
            "get_market_context",
            json!({ "dxy": "DXY", "extra": 1 }),
            "unknown field",
        ),
        ("get_risk_regime", json!({ "lookback": 2 }), "lookback"),
        ("get_risk_regime", json!({ "timeframe": "H2" }), "H2"),
        (
            "get_risk_regime",
            json!({ "symbols": { "oil": "WTI" } }),
            "unknown field",
        ),
    ];
    for (name, body, needle) in bad {
        t.assert_invalid(name, &body, needle).await;
    }
}

#[tokio::test]
async fn calendar_macro_tools_match_the_calendar() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;

    // Economic surprise recomputed from get_economic_calendar with the core function.
    let s = t
        .tool(
            "get_economic_surprise",
            &json!({ "currencies": ["usd", "EUR", "SEK"], "lookback_days": 120, "half_life_days": 45 }),
        )
        .await
        .data();
    assert_eq!(s["source"], "terminal");
    let as_of = parse_iso(s["as_of"].as_str().unwrap()).unwrap();
    let from = parse_iso(s["from"].as_str().unwrap()).unwrap();
    assert_eq!(as_of - from, 120 * DAY_MS);
    let events = calendar(&t, from, as_of, &["USD", "EUR", "SEK"]).await;
    let cfg = SurpriseConfig {
        half_life_days: 45.0,
        min_releases: 3,
    };
    for (i, cur) in ["USD", "EUR", "SEK"].iter().enumerate() {
        let got = &s["currencies"][i];
        assert_eq!(got["currency"], *cur);
        let core = mc::surprise_index(&events, cur, as_of, &cfg).unwrap();
        assert_eq!(got["events_used"], core.events_used, "{got}");
        assert_eq!(got["skipped"].as_array().unwrap().len(), core.skipped.len());
        assert_eq!(got["label"], serde_json::to_value(core.label).unwrap());
        match core.index {
            Some(x) => assert!(close_to(num(&got["index"]), x, REL), "{got} vs {x}"),
            None => assert!(got["index"].is_null()),
        }
    }
    let usd = &s["currencies"][0];
    assert!(num(&usd["events_used"]) > 0.0, "payrolls, CPI, claims...: {usd}");
    let directions: Vec<(String, f64)> = usd["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), num(&c["direction"])))
        .collect();
    assert!(
        directions.iter().any(|(n, d)| n.contains("Unemployment") && *d == -1.0),
        "{directions:?}"
    );
    let skipped = usd["skipped"].as_array().unwrap();
    assert!(
        skipped.iter().any(|k| k["reason"] == "direction_unclear"),
        "rate decisions are left to the stance"
    );
    // No calendar event for SEK: no index, never zero.
    assert_eq!(
        (s["currencies"][2]["index"].clone(), s["currencies"][2]["label"].clone()),
        (Value::Null, json!("no_data"))
    );

    // Rate expectations: calendar only, no probability anywhere.
    let r = t.tool("get_rate_expectations", &json!({})).await.data();
    assert_eq!(r["data_quality"], "calendar_only");
    assert!(!has_key_containing(&r, "prob"), "{r}");
    let banks = r["banks"].as_array().unwrap();
    assert_eq!(banks.len(), 10);
    let as_of = parse_iso(r["as_of"].as_str().unwrap()).unwrap();
    let events = calendar(&t, as_of - 366 * DAY_MS, as_of + 180 * DAY_MS, &[]).await;
    for b in banks {
        assert_eq!(b["data_quality"], "calendar_only");
        let cur = b["currency"].as_str().unwrap();
        let core = mc::rate_expectation(&events, cur, as_of).unwrap();
        assert_eq!(b["current_rate"].as_f64(), core.current_rate, "{b}");
        assert_eq!(b["missing"], json!(core.missing));
        assert_eq!(
            b["pending_decision"]["event_id"].as_str(),
            core.pending_decision.as_ref().map(|d| d.event_id.as_str())
        );
        assert_eq!(
            b["next_meeting"]["event_id"].as_str(),
            core.next_meeting.as_ref().map(|d| d.event_id.as_str())
        );
    }
    let usd = &banks[0];
    assert_eq!(usd["bank"], "Federal Reserve");
    assert_eq!(usd["current_rate_source"], "last_decision_actual");
    assert_eq!(usd["current_rate"], usd["last_decision"]["actual"]);
    assert!(usd["next_meeting"]["event_id"].as_str().unwrap().starts_with("US-FOMC"));
    assert!(parse_iso(usd["next_meeting"]["time"].as_str().unwrap()).unwrap() > as_of);
    let sek = banks.iter().find(|b| b["currency"] == "SEK").unwrap();
    assert!(sek["current_rate"].is_null() && sek["next_meeting"].is_null(), "{sek}");
    assert_eq!(
        sek["missing"],
        json!(["current_rate", "last_decision", "next_meeting", "consensus"])
    );

    // Central-bank stance: labels follow the thresholds and the core function.
    let st = t
        .tool(
            "get_cb_stance",
            &json!({ "currencies": ["USD", "EUR", "GBP", "JPY", "NOK"] }),
        )
        .await
        .data();
    assert_eq!(st["data_quality"], "calendar_derived");
    let as_of = parse_iso(st["as_of"].as_str().unwrap()).unwrap();
    let from = parse_iso(st["from"].as_str().unwrap()).unwrap();
    let events = calendar(&t, from, as_of, &["USD", "EUR", "GBP", "JPY", "NOK"]).await;
    for b in st["banks"].as_array().unwrap() {
        let cur = b["currency"].as_str().unwrap();
        let core = mc::cb_stance(&events, cur, as_of, &StanceConfig::default()).unwrap();
        assert_eq!(b["stance"], serde_json::to_value(core.stance).unwrap(), "{b}");
        match core.score {
            Some(x) => {
                assert!(close_to(num(&b["score"]), x, REL));
                let label = if x >= 0.2 {
                    "hawkish"
                } else if x <= -0.2 {
                    "dovish"
                } else {
                    "neutral"
                };
                assert_eq!(b["stance"], label);
            }
            None => assert!(b["score"].is_null()),
        }
        assert_eq!(b["decisions"].as_array().unwrap().len(), core.decisions.len());
    }
    let usd = &st["banks"][0];
    assert!(!usd["decisions"].as_array().unwrap().is_empty(), "{usd}");
    assert!(usd["rate_component"].is_number());
    let nok = &st["banks"][4];
    assert_eq!(
        (nok["stance"].as_str(), nok["score"].is_null()),
        (Some("unknown"), true)
    );

    // Validation.
    let bad = [
        (
            "get_economic_surprise",
            json!({ "lookback_days": 400 }),
            "lookback_days",
        ),
        (
            "get_economic_surprise",
            json!({ "half_life_days": 0 }),
            "half_life_days",
        ),
        ("get_economic_surprise", json!({ "currencies": ["dollars"] }), "dollars"),
        ("get_rate_expectations", json!({ "currencies": ["MXN"] }), "G10"),
        ("get_rate_expectations", json!({ "horizon_days": 0 }), "horizon_days"),
        (
            "get_rate_expectations",
            json!({ "probabilities": true }),
            "unknown field",
        ),
        ("get_cb_stance", json!({ "lookback_days": 10 }), "lookback_days"),
        ("get_cb_stance", json!({ "currencies": ["TRY"] }), "G10"),
    ];
    for (name, body, needle) in bad {
        t.assert_invalid(name, &body, needle).await;
    }
}
