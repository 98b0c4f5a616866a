use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::memory::{MemoryBus, MemorySettings};
use crate::model::{DisconnectedData, QuoteData};

fn disconnected(terminal: &str, n: usize) -> Draft {
    Draft::new(
        EventType::TerminalDisconnected,
        now_ms(),
        Some(terminal),
        &DisconnectedData {
            reason: format!("r{n}"),
        },
    )
}

fn quote(symbol: &str, bid: f64) -> Draft {
    Draft::new(
        EventType::Quote,
        now_ms(),
        Some("term_a"),
        &QuoteData {
            symbol: symbol.into(),
            bid,
            ask: bid + 0.0002,
            time: now_ms(),
        },
    )
}

async fn next_event(sub: &mut Subscription) -> Arc<Event> {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), sub.next()).await {
            Ok(Some(Item::Event(e))) => return e,
            Ok(Some(Item::Heartbeat)) => continue,
            Ok(None) => panic!("the subscription ended"),
            Err(_) => panic!("no event within 5 s"),
        }
    }
}

fn settings(buffer: usize) -> SubscriberSettings {
    SubscriberSettings {
        buffer,
        quote_interval: Duration::from_millis(50),
        heartbeat: Duration::from_secs(60),
        replay_batch: 7,
    }
}

#[tokio::test]
async fn a_resumed_subscription_replays_then_follows_each_event_once_in_order() {
    let bus = Arc::new(MemoryBus::default());
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(
            bus.append("lic_a", disconnected("term_a", n))
                .await
                .unwrap()
                .id
                .unwrap(),
        );
    }
    let mut sub = subscribe(
        bus.clone(),
        "lic_a".into(),
        Some(ids[4]),
        Filter::default(),
        settings(100),
    )
    .await
    .unwrap();
    for expected in &ids[5..] {
        assert_eq!(next_event(&mut sub).await.id, Some(*expected));
    }
    // Live now.
    for n in 20..25 {
        let id = bus.append("lic_a", disconnected("term_a", n)).await.unwrap().id;
        assert_eq!(next_event(&mut sub).await.id, id);
    }
}

#[tokio::test]
async fn a_lagging_live_feed_is_caught_up_from_the_log_without_duplicates_or_holes() {
    let bus = Arc::new(MemoryBus::default());
    let first = bus
        .append("lic_a", disconnected("term_a", 0))
        .await
        .unwrap()
        .id
        .unwrap();
    // The worker does not run before this test yields: the live feed lags
    // behind the appends below (more than its capacity).
    let mut sub = subscribe(
        bus.clone(),
        "lic_a".into(),
        Some(first),
        Filter::default(),
        settings(10_000),
    )
    .await
    .unwrap();
    let mut appended = Vec::new();
    for n in 0..(crate::memory::LIVE_CAPACITY + 500) {
        appended.push(
            bus.append("lic_a", disconnected("term_a", n))
                .await
                .unwrap()
                .id
                .unwrap(),
        );
    }
    let mut got = Vec::new();
    while got.len() < appended.len() {
        got.push(next_event(&mut sub).await.id.unwrap());
    }
    assert_eq!(got, appended);
    let late = bus.append("lic_a", disconnected("term_a", 0)).await.unwrap().id;
    assert_eq!(next_event(&mut sub).await.id, late, "nothing twice, then live again");
}

#[tokio::test]
async fn another_license_s_events_never_reach_a_subscription() {
    let bus = Arc::new(MemoryBus::default());
    bus.append("lic_b", disconnected("term_b", 0)).await.unwrap();
    let mut sub = subscribe(bus.clone(), "lic_a".into(), None, Filter::default(), settings(100))
        .await
        .unwrap();
    let mut from_start = subscribe(
        bus.clone(),
        "lic_a".into(),
        Some(EventId::new(0, 0)),
        Filter::default(),
        settings(100),
    )
    .await
    .unwrap();
    bus.append("lic_b", disconnected("term_b", 1)).await.unwrap();
    bus.broadcast("lic_b", quote("EURUSD", 1.1)).await.unwrap();
    let mine = bus.append("lic_a", disconnected("term_a", 2)).await.unwrap();
    let e = next_event(&mut sub).await;
    assert_eq!((e.id, e.terminal_id.as_deref()), (mine.id, Some("term_a")));
    let e = next_event(&mut from_start).await;
    assert_eq!(
        e.id, mine.id,
        "a replay of the whole log holds no other license's event"
    );
}

#[tokio::test]
async fn filters_select_types_terminals_and_symbols() {
    let bus = Arc::new(MemoryBus::default());
    let filter = Filter {
        types: Some([EventType::Quote, EventType::TerminalDisconnected].into()),
        terminal_id: Some("term_a".into()),
        symbols: Some(["EURUSD".to_owned()].into()),
        timeframes: None,
    };
    let mut sub = subscribe(bus.clone(), "lic_a".into(), None, filter, settings(100))
        .await
        .unwrap();
    tokio::task::yield_now().await;
    bus.append("lic_a", disconnected("term_b", 0)).await.unwrap();
    bus.append(
        "lic_a",
        Draft::new(
            EventType::TerminalConnected,
            now_ms(),
            Some("term_a"),
            &crate::model::ConnectedData {
                agent: "a".into(),
                agent_version: "1".into(),
                trading_enabled: false,
            },
        ),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    bus.broadcast("lic_a", quote("GBPUSD", 1.2)).await.unwrap();
    bus.broadcast("lic_a", quote("EURUSD", 1.1)).await.unwrap();
    let wanted = bus.append("lic_a", disconnected("term_a", 1)).await.unwrap();
    let e = next_event(&mut sub).await;
    assert_eq!((e.kind, e.symbol.as_deref()), (EventType::Quote, Some("EURUSD")));
    assert_eq!(next_event(&mut sub).await.id, wanted.id);
}

fn bar(symbol: &str, timeframe: tradeterm_core::Timeframe, time: i64) -> Draft {
    Draft::new(
        EventType::BarClosed,
        now_ms(),
        Some("term_a"),
        &crate::model::BarClosedData {
            symbol: symbol.into(),
            timeframe,
            bar: tradeterm_core::Bar {
                time,
                open: 1.1,
                high: 1.2,
                low: 1.0,
                close: 1.15,
                volume: 42.0,
            },
        },
    )
}

#[test]
fn bars_pass_only_a_filter_naming_their_timeframe_and_symbol() {
    use tradeterm_core::Timeframe::{H1, M1, M5};
    let event = |d: Draft| d.with_id(EventId::new(1, 0));
    let m1 = event(bar("EURUSD", M1, 0));
    assert_eq!(
        m1.symbol.as_deref(),
        Some("EURUSD"),
        "the envelope names the bar's symbol"
    );
    let asked = Filter {
        types: Some([EventType::BarClosed].into()),
        symbols: Some(["EURUSD".to_owned()].into()),
        timeframes: Some([M1, H1].into()),
        ..Filter::default()
    };
    assert!(asked.accepts(&m1));
    assert!(asked.accepts(&event(bar("EURUSD", H1, 0))));
    assert!(
        !asked.accepts(&event(bar("EURUSD", M5, 0))),
        "a timeframe another stream asked for"
    );
    assert!(!asked.accepts(&event(bar("GBPUSD", M1, 0))), "another symbol");
    // Every type, no timeframes: no bars (they are produced for those who ask).
    assert!(!Filter::default().accepts(&m1));
    let every_type = Filter {
        timeframes: Some([M1].into()),
        ..Filter::default()
    };
    assert!(every_type.accepts(&m1));
    let mut broken = m1.clone();
    broken.data["timeframe"] = serde_json::json!("M2");
    assert!(
        !asked.accepts(&broken),
        "a data without a known timeframe passes nothing"
    );
}

#[tokio::test]
async fn a_consumer_that_does_not_read_is_cut_with_the_id_to_resume_from() {
    let bus = Arc::new(MemoryBus::default());
    let mut sub = subscribe(bus.clone(), "lic_a".into(), None, Filter::default(), settings(3))
        .await
        .unwrap();
    tokio::task::yield_now().await;
    let mut ids = Vec::new();
    for n in 0..10 {
        ids.push(
            bus.append("lic_a", disconnected("term_a", n))
                .await
                .unwrap()
                .id
                .unwrap(),
        );
        tokio::task::yield_now().await;
    }
    let mut got = Vec::new();
    let cut = loop {
        let e = next_event(&mut sub).await;
        if e.kind == EventType::StreamCut {
            break e;
        }
        got.push(e.id.unwrap());
    };
    assert_eq!(got, ids[..3], "the buffer's worth");
    assert_eq!(cut.data["resume_after"], ids[2].to_string(), "{:?}", cut.data);
    assert!(cut.id.is_none());
    assert!(sub.next().await.is_none(), "nothing after the cut");
    // Resuming from there gets the rest, once.
    let mut resumed = subscribe(
        bus.clone(),
        "lic_a".into(),
        Some(ids[2]),
        Filter::default(),
        settings(100),
    )
    .await
    .unwrap();
    for expected in &ids[3..] {
        assert_eq!(next_event(&mut resumed).await.id, Some(*expected));
    }
}

#[tokio::test]
async fn a_resume_from_beyond_retention_starts_with_a_gap() {
    let bus = Arc::new(MemoryBus::new(MemorySettings {
        retention_ms: crate::DEFAULT_RETENTION_MS,
        max_per_license: 5,
    }));
    let mut ids = Vec::new();
    for n in 0..10 {
        ids.push(
            bus.append("lic_a", disconnected("term_a", n))
                .await
                .unwrap()
                .id
                .unwrap(),
        );
    }
    let mut sub = subscribe(
        bus.clone(),
        "lic_a".into(),
        Some(ids[1]),
        Filter::default(),
        settings(100),
    )
    .await
    .unwrap();
    let gap = next_event(&mut sub).await;
    assert_eq!(gap.kind, EventType::StreamGap);
    assert_eq!(gap.data["after"], ids[1].to_string());
    for expected in &ids[5..] {
        assert_eq!(next_event(&mut sub).await.id, Some(*expected));
    }
    // From within retention: no gap.
    let mut sub = subscribe(
        bus.clone(),
        "lic_a".into(),
        Some(ids[6]),
        Filter::default(),
        settings(100),
    )
    .await
    .unwrap();
    assert_eq!(next_event(&mut sub).await.id, Some(ids[7]));
}

#[tokio::test]
async fn quotes_are_conflated_per_symbol_and_the_latest_arrives() {
    let bus = Arc::new(MemoryBus::default());
    let mut sub = subscribe(bus.clone(), "lic_a".into(), None, Filter::default(), settings(100))
        .await
        .unwrap();
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    for n in 0..200 {
        bus.broadcast("lic_a", quote("EURUSD", 1.0 + n as f64 * 1e-4))
            .await
            .unwrap();
        tokio::task::yield_now().await;
    }
    let mut got = Vec::new();
    loop {
        let e = next_event(&mut sub).await;
        let bid = e.data["bid"].as_f64().unwrap();
        got.push(bid);
        if (bid - (1.0 + 199.0 * 1e-4)).abs() < 1e-12 {
            break;
        }
    }
    assert!(
        got.len() < 20,
        "200 quotes within one or two intervals conflate: got {}",
        got.len()
    );
}

#[tokio::test]
async fn an_idle_subscription_gets_heartbeats() {
    let bus = Arc::new(MemoryBus::default());
    let mut sub = subscribe(
        bus,
        "lic_a".into(),
        None,
        Filter::default(),
        SubscriberSettings {
            heartbeat: Duration::from_millis(20),
            ..settings(10)
        },
    )
    .await
    .unwrap();
    let item = tokio::time::timeout(Duration::from_secs(5), sub.next()).await.unwrap();
    assert!(matches!(item, Some(Item::Heartbeat)), "{item:?}");
}

#[test]
fn sse_frames_follow_the_whatwg_format() {
    let draft = disconnected("term_a", 1);
    let frame = sse::frame(&Item::Event(Arc::new(draft.clone().with_id(EventId::new(7, 2)))));
    let lines: Vec<&str> = frame.lines().collect();
    assert_eq!(lines[0], "id: 7-2");
    assert_eq!(lines[1], "event: terminal.disconnected");
    assert!(lines[2].starts_with("data: {"), "{frame}");
    assert_eq!(lines.len(), 4, "one data line, then the blank line: {frame}");
    assert_eq!(lines[3], "");
    assert!(frame.ends_with("\n\n"));
    let quote = sse::frame(&Item::Event(Arc::new(quote("EURUSD", 1.1).without_id())));
    assert!(quote.starts_with("event: quote\n"), "no id on a quote: {quote}");
    assert_eq!(sse::frame(&Item::Heartbeat), ": heartbeat\n\n");
    assert!(sse::preamble(3000).starts_with("retry: 3000\n"));
}
