//! The calendar tools end to end: REST over the real stack with simulated
//! (MT5) terminals, and the server calendar of `CALENDAR_FILE`.

use serde_json::{Value, json};
use tradeterm::Settings;
use tradeterm::stack::{Stack, StackOptions};
use tradeterm_core::events::{self, EconomicEvent, EventRiskConfig, Importance, MINUTE_MS, Verdict};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};

use crate::harness::data::event_of;
use crate::harness::{Expect, Options, TestStack, spawn_with};

/// The stack with one simulated terminal and `calendar` as the server calendar file.
async fn spawn_with_calendar(calendar: &Value) -> (TestStack, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calendar.json");
    std::fs::write(&file, calendar.to_string()).unwrap();
    let t = spawn_with(
        Options {
            sims: 1,
            ..Options::default()
        },
        |s| s.calendar_file = Some(file),
    )
    .await;
    (t, dir)
}

#[tokio::test]
async fn calendar_and_event_risk_over_rest() {
    let now = chrono::Utc::now().timestamp_millis();
    let release = now + 10 * MINUTE_MS;
    let server_calendar = json!([
        { "id": "srv-1", "time": to_iso(release), "currency": "USD", "country": "US",
          "name": "Server payrolls", "importance": "high", "category": "employment" },
        { "id": "srv-2", "time": to_iso(release), "currency": "JPY", "country": "JP",
          "name": "Elsewhere", "importance": "high", "category": "growth" }
    ]);
    let (t, _calendar_dir) = spawn_with_calendar(&server_calendar).await;

    // The terminal's calendar (MT5), with filters.
    let week = json!({ "from": to_iso(now), "to": to_iso(now + 7 * DAY_MS) });
    let all = t.tool("get_economic_calendar", &week).await.data();
    assert_eq!(all["source"], "terminal");
    assert_eq!(all["available"], true);
    assert!(all.get("stale").is_none(), "no feed age for the terminal's calendar");
    let all: Vec<EconomicEvent> = all["events"].as_array().unwrap().iter().map(event_of).collect();
    assert!(!all.is_empty(), "the simulated calendar has events every week");
    assert!(all.windows(2).all(|w| w[0].time <= w[1].time), "by time");
    assert!(all.iter().all(|e| e.time >= now && e.time < now + 7 * DAY_MS));
    let mut input = week.clone();
    input["currencies"] = json!(["usd"]);
    input["min_importance"] = json!("high");
    let some = t.tool("get_economic_calendar", &input).await.data();
    let some: Vec<EconomicEvent> = some["events"].as_array().unwrap().iter().map(event_of).collect();
    let expected: Vec<&EconomicEvent> = all
        .iter()
        .filter(|e| e.currency == "USD" && e.importance == Importance::High)
        .collect();
    assert_eq!(some.iter().collect::<Vec<_>>(), expected);

    // Event risk from the terminal's calendar equals the core rule applied to
    // the same calendar at the same instant.
    let risk = &t.tool("get_event_risk", &json!({ "symbol": "EURUSD" })).await.data();
    assert_eq!(risk["currencies"], json!(["EUR", "USD"]));
    assert_eq!(risk["source"], "terminal");
    let as_of = parse_iso(risk["as_of"].as_str().unwrap()).unwrap();
    let range = json!({ "from": to_iso(as_of - DAY_MS), "to": to_iso(as_of + DAY_MS), "currencies": ["EUR", "USD"] });
    let cal = t.tool("get_economic_calendar", &range).await.data();
    let cal: Vec<EconomicEvent> = cal["events"].as_array().unwrap().iter().map(event_of).collect();
    let core = events::event_risk(&cal, &["EUR".into(), "USD".into()], as_of, &EventRiskConfig::default()).unwrap();
    let verdict: Verdict = serde_json::from_value(risk["verdict"].clone()).unwrap();
    assert_eq!(verdict, core.verdict, "{risk}");
    assert_eq!(
        risk["resume_after"].as_str().map(|s| parse_iso(s).unwrap()),
        core.resume_after
    );
    assert_eq!(risk["active_events"].as_array().unwrap().len(), core.active.len());
    assert!(!risk["reasons"].as_array().unwrap().is_empty());

    // The server calendar: a USD release in 10 minutes blocks EURUSD until
    // 15 minutes after it; the JPY one does not count.
    let risk = &t
        .tool("get_event_risk", &json!({ "symbol": "EURUSD", "source": "server" }))
        .await
        .data();
    assert_eq!(
        (
            risk["source"].as_str(),
            risk["verdict"].as_str(),
            risk["calendar_available"].as_bool()
        ),
        (Some("server"), Some("block"), Some(true))
    );
    assert_eq!(
        risk["resume_after"].as_str(),
        Some(to_iso(release + 15 * MINUTE_MS).as_str())
    );
    assert_eq!(risk["active_events"][0]["event"]["id"], "srv-1");
    assert_eq!(risk["active_events"][0]["window"], "block");
    assert_eq!(risk["active_events"].as_array().unwrap().len(), 1);
    // Narrower windows: the release is 10 minutes away, so 5-minute block
    // windows leave only caution.
    let risk = t
        .tool(
            "get_event_risk",
            &json!({ "symbol": "EURUSD", "source": "server", "block_before_minutes": 5, "block_after_minutes": 5 }),
        )
        .await
        .data();
    assert_eq!(risk["verdict"], "caution");
    let cal = t
        .tool(
            "get_economic_calendar",
            &json!({ "source": "server", "categories": ["employment"] }),
        )
        .await
        .data();
    assert_eq!(cal["events"].as_array().unwrap().len(), 1);
    assert_eq!(cal["events"][0]["id"], "srv-1");

    // Validation: the error envelope only (the client checks it).
    for (tool, bad) in [
        (
            "get_event_risk",
            json!({ "symbol": "EURUSD", "block_before_minutes": 2000 }),
        ),
        ("get_event_risk", json!({ "symbol": "EUR USD" })),
        ("get_event_risk", json!({ "symbol": "EURUSD", "extra": 1 })),
        ("get_economic_calendar", json!({ "currencies": ["dollars"] })),
    ] {
        t.tool(tool, &bad)
            .await
            .failure_for(400, "VALIDATION_ERROR", format!("{tool} {bad}"));
    }
    // Relations the schema cannot state are not errors: a caution window
    // narrower than its block window widens to it; a calendar range over 31
    // days is cut to 31 days after `from`.
    t.tool(
        "get_event_risk",
        &json!({ "symbol": "EURUSD", "caution_before_minutes": 5 }),
    )
    .await
    .data();
    let cut = t
        .tool(
            "get_economic_calendar",
            &json!({ "from": to_iso(now), "to": to_iso(now + 40 * DAY_MS) }),
        )
        .await
        .data();
    assert_eq!(cut["to"], to_iso(now + 31 * DAY_MS), "{cut}");
    t.stack.stop().await;
}

#[tokio::test]
async fn an_invalid_calendar_file_stops_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calendar.json");
    std::fs::write(
        &file,
        r#"[{"id": "x", "time": "tomorrow", "currency": "USD", "name": "n", "importance": "high"}]"#,
    )
    .unwrap();
    let settings = Settings {
        port: 0,
        gateway_port: 0,
        mcp_port: 0,
        calendar_file: Some(file),
        ..Settings::default()
    };
    let started = Stack::start(StackOptions {
        data_dir: dir.path().to_path_buf(),
        sim_terminals: 0,
        sim_allow_trading: false,
        sim_start_ms: None,
        settings,
    })
    .await;
    let Err(err) = started else {
        panic!("a bad calendar file must stop the start");
    };
    assert!(format!("{err:#}").contains("CALENDAR_FILE"), "{err:#}");
}
