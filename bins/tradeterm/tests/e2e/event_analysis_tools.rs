//! `get_holding_risk` and `get_event_sensitivity` end to end: REST over the
//! real stack with a simulated terminal, checked against `tradeterm-core` run
//! on the calendar, symbol specification and bars fetched through the other
//! tools.

use serde_json::{Value, json};
use tradeterm_core::events::EconomicEvent;
use tradeterm_core::holding;
use tradeterm_core::market::SessionWindow;
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};
use tradeterm_core::{Bar, SymbolSpec, Timeframe};

use crate::harness::data::{bars_of, event_of};
use crate::harness::{Expect, Options, spawn};

#[tokio::test]
async fn holding_risk_and_event_sensitivity_over_rest() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;

    // A week's hold of EURUSD: every release of EUR/USD of medium or high
    // importance in the window, the weekend closure from the sessions, the
    // swap nights of the swap calendar.
    let r = &t
        .tool(
            "get_holding_risk",
            &json!({ "symbol": "EURUSD", "hold_hours": 168, "side": "buy", "volume": 2 }),
        )
        .await
        .data();
    assert_eq!(r["currencies"], json!(["EUR", "USD"]));
    assert_eq!(r["calendar_source"], "terminal");
    let (from, until) = (
        parse_iso(r["from"].as_str().unwrap()).unwrap(),
        parse_iso(r["until"].as_str().unwrap()).unwrap(),
    );
    assert_eq!(until - from, 7 * DAY_MS);
    let cal = t
        .tool(
            "get_economic_calendar",
            &json!({ "from": to_iso(from), "to": to_iso(until), "currencies": ["EUR", "USD"], "min_importance": "medium" }),
        )
        .await
        .data();
    let expected: Vec<String> = cal["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let got: Vec<String> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, expected);
    let spec = t.tool("get_symbol_spec", &json!({ "symbol": "EURUSD" })).await.data();
    let spec: SymbolSpec = serde_json::from_value(spec).unwrap();
    let sessions: Vec<SessionWindow> = spec.sessions.clone();
    let closures = holding::closures(&sessions, from, until);
    let gaps = r["gaps"].as_array().unwrap();
    let expected_gaps: Vec<&holding::Closure> = closures
        .iter()
        .filter(|c| c.weekend || c.end - c.start >= holding::MIN_GAP_MS)
        .collect();
    assert_eq!(gaps.len(), expected_gaps.len());
    assert!(
        gaps.iter().any(|g| g["weekend"] == true),
        "a week always holds through a weekend: {r}"
    );
    for (g, c) in gaps.iter().zip(&expected_gaps) {
        assert_eq!(parse_iso(g["start"].as_str().unwrap()).unwrap(), c.start);
        assert_eq!(parse_iso(g["end"].as_str().unwrap()).unwrap(), c.end);
    }
    assert_eq!(r["level"], "high", "a weekend gap is high: {r}");
    // A weekend alone is caution; a high-importance release landing blocks.
    let high_release = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["importance"] == "high");
    assert_eq!(
        r["verdict"],
        if high_release { "block" } else { "caution" },
        "the spec's verdict: {r}"
    );
    assert_eq!(r["calendar_available"], true, "{r}");
    assert!(
        r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "weekend_gap")
    );
    // Swap: the rollovers of the swap calendar inside the window.
    let sc = t
        .tool(
            "get_swap_calendar",
            &json!({ "symbol": "EURUSD", "volume": 2, "days": 9 }),
        )
        .await
        .data();
    let inside: Vec<&Value> = sc["rollovers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| parse_iso(x["time"].as_str().unwrap()).unwrap() < until)
        .collect();
    let nights: u64 = inside.iter().map(|x| x["nights"].as_u64().unwrap()).sum();
    assert_eq!(r["swap"]["nights"].as_u64(), Some(nights), "{r} {sc}");
    assert_eq!(r["swap"]["rollovers"].as_u64(), Some(inside.len() as u64));
    assert!(r["swap"]["short"].is_null(), "only the side asked for");
    let triples = inside.iter().filter(|x| x["triple"] == true).count();
    assert_eq!(
        r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "triple_swap")
            .count(),
        triples
    );

    // Event sensitivity recomputed with core on the same bars and releases.
    let input = json!({ "symbol": "EURUSD", "lookback_days": 20, "timeframe": "M15", "window_minutes": 60, "min_importance": "medium" });
    let d = &t.tool("get_event_sensitivity", &input).await.data();
    let start = parse_iso(d["from"].as_str().unwrap()).unwrap();
    let now = start + 20 * DAY_MS;
    let cal = t
        .tool(
            "get_economic_calendar",
            &json!({ "from": to_iso(start), "to": to_iso(now), "currencies": ["EUR", "USD"], "min_importance": "medium" }),
        )
        .await
        .data();
    let releases: Vec<EconomicEvent> = cal["events"].as_array().unwrap().iter().map(event_of).collect();
    assert_eq!(d["releases"].as_u64(), Some(releases.len() as u64));
    let bars: Vec<Bar> = bars_of(
        &t.tool(
            "get_bars",
            &json!({ "symbol": "EURUSD", "timeframe": "M15", "from": to_iso(start - DAY_MS), "to": to_iso(now) }),
        )
        .await
        .data(),
    );
    let core = holding::event_sensitivity(&bars, Timeframe::M15.duration_ms(), &releases, 3_600_000).unwrap();
    assert_eq!(d["skipped"].as_u64(), Some(core.skipped as u64));
    let reactions = d["reactions"].as_array().unwrap();
    assert_eq!(reactions.len(), core.reactions.len());
    assert!(
        !reactions.is_empty(),
        "the simulated history has releases with bars: {d}"
    );
    for (got, want) in reactions.iter().zip(&core.reactions) {
        assert_eq!(got["event"]["id"].as_str(), Some(want.event.id.as_str()));
        let points = got["change_points"].as_f64().unwrap();
        assert!((points * spec.point - want.change).abs() < 1e-9, "{got}");
    }
    assert_eq!(d["baseline_samples"].as_u64(), Some(core.baseline_samples as u64));

    // Validation: the error envelope only (the client checks it).
    for (tool, bad) in [
        ("get_holding_risk", json!({ "symbol": "EURUSD", "hold_hours": 0 })),
        ("get_holding_risk", json!({ "symbol": "EURUSD", "hold_hours": 745 })),
        ("get_holding_risk", json!({ "symbol": "EURUSD", "volume": -1 })),
        ("get_holding_risk", json!({ "symbol": "EURUSD", "side": "long" })),
        (
            "get_event_sensitivity",
            json!({ "symbol": "EURUSD", "timeframe": "D1" }),
        ),
        (
            "get_event_sensitivity",
            json!({ "symbol": "EURUSD", "window_minutes": 0 }),
        ),
        (
            "get_event_sensitivity",
            json!({ "symbol": "EURUSD", "lookback_days": 0 }),
        ),
        (
            "get_event_sensitivity",
            json!({ "symbol": "EURUSD", "currencies": ["euro"] }),
        ),
        (
            "get_event_sensitivity",
            json!({ "symbol": "EURUSD", "name_contains": "" }),
        ),
    ] {
        t.tool(tool, &bad)
            .await
            .failure_for(400, "VALIDATION_ERROR", format!("{tool} {bad}"));
    }
    // A volume the symbol cannot trade is analysed, with a warning (an
    // analysis is not an order).
    let big = t
        .tool("get_holding_risk", &json!({ "symbol": "EURUSD", "volume": 1000000 }))
        .await
        .data();
    assert!(
        big["warnings"][0].as_str().unwrap().contains("above the maximum")
            && big["swap"]["rollovers"].as_u64() > Some(0),
        "{big}"
    );
    assert_eq!(r["warnings"], json!([]), "2 lots are tradable: {r}");
    // The look-back ends at the terminal's clock (its latest quote), which
    // the bars follow, whatever the server's clock says: the simulated
    // terminal replays a past week, so a one-day look-back ending at the
    // server's now would ask for bars past the terminal's clock.
    let tick = t.tool("get_tick", &json!({ "symbol": "EURUSD" })).await.data();
    let recent = t
        .tool(
            "get_event_sensitivity",
            &json!({ "symbol": "EURUSD", "lookback_days": 1 }),
        )
        .await
        .data();
    let (from, to) = (
        parse_iso(recent["from"].as_str().unwrap()).unwrap(),
        parse_iso(recent["to"].as_str().unwrap()).unwrap(),
    );
    let quoted = parse_iso(tick["time"].as_str().unwrap()).unwrap();
    assert_eq!(to - from, DAY_MS, "{recent}");
    assert!((quoted..quoted + 60_000).contains(&to), "{recent} {tick}");
    // A reaction window shorter than one bar is one bar (not an error: the
    // schema cannot tie it to the timeframe).
    let short = t
        .tool(
            "get_event_sensitivity",
            &json!({ "symbol": "EURUSD", "lookback_days": 20, "timeframe": "M15", "window_minutes": 5 }),
        )
        .await
        .data();
    assert_eq!(short["window_minutes"], 15, "{short}");
    // 90 days of M1 bars would be about 129 600 bars: the look-back is cut
    // to the 12 days that 20 000 bars cover.
    let cut = t
        .tool(
            "get_event_sensitivity",
            &json!({ "symbol": "EURUSD", "timeframe": "M1", "lookback_days": 90 }),
        )
        .await
        .data();
    // `now` is the 20-day look-back's end above (the simulated clock moves a little).
    let from = parse_iso(cut["from"].as_str().unwrap()).unwrap();
    assert!(now - from <= 13 * DAY_MS && now - from >= 11 * DAY_MS, "{cut}");
    t.stack.stop().await;
}
