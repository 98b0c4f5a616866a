//! The Redis Streams engine against the machine's Redis (127.0.0.1:6379, or
//! `TEST_REDIS_URL`): never skipped under `CI=true`.

use std::sync::Arc;
use std::time::Duration;

use tradeterm_events::model::DisconnectedData;
use tradeterm_events::redis::{RedisBus, RedisSettings};
use tradeterm_events::subscriber::{Filter, Item, SubscriberSettings, subscribe};
use tradeterm_events::{Draft, EventBus, EventType, Live, now_ms};

fn url() -> String {
    std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

async fn bus(retention_ms: i64, max: usize) -> Option<RedisBus> {
    let pool = deadpool_redis::Config::from_url(url())
        .create_pool(Some(deadpool_redis::Runtime::Tokio1))
        .unwrap();
    if let Err(e) = pool.get().await {
        assert!(std::env::var_os("CI").is_none(), "Redis is required under CI: {e}");
        eprintln!("SKIPPED: no Redis at {} ({e})", url());
        return None;
    }
    Some(
        RedisBus::new(
            pool,
            RedisSettings {
                url: url(),
                retention_ms,
                max_per_license: max,
            },
        )
        .unwrap(),
    )
}

fn license() -> String {
    format!("lic_test_{}_{}", std::process::id(), now_ms())
}

fn draft(n: usize) -> Draft {
    Draft::new(
        EventType::TerminalDisconnected,
        now_ms(),
        Some("term_a"),
        &DisconnectedData {
            reason: format!("r{n}"),
        },
    )
}

/// Waits until the instance's subscription is up (its first `Resync`).
async fn subscribed(bus: &RedisBus) {
    let mut live = bus.live();
    let up = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(Live::Resync) = live.recv().await {
                return;
            }
        }
    })
    .await;
    assert!(up.is_ok(), "the event channel subscription did not come up");
}

#[tokio::test]
async fn appends_replay_in_order_with_strictly_increasing_ids_and_reach_another_instance_live() {
    let Some(a) = bus(86_400_000, 1000).await else { return };
    let Some(b) = bus(86_400_000, 1000).await else { return };
    let (a, b) = (Arc::new(a), Arc::new(b));
    subscribed(&b).await;
    let lic = license();
    let other = license() + "_other";
    // A subscriber on instance b, from now on.
    let mut sub = subscribe(
        b.clone(),
        lic.clone(),
        None,
        Filter::default(),
        SubscriberSettings::default(),
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    for n in 0..30 {
        let bus = if n % 2 == 0 { &a } else { &b };
        ids.push(bus.append(&lic, draft(n)).await.unwrap().id.unwrap());
        a.append(&other, draft(n)).await.unwrap();
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let replay = a.replay(&lic, Some(ids[9]), 10).await.unwrap();
    let got: Vec<_> = replay.events.iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(got, ids[10..20]);
    assert!(replay.more && !replay.gap);
    assert_eq!(replay.events[0].data["reason"], "r10");
    assert_eq!(a.last_id(&lic).await.unwrap(), ids.last().copied());
    // Live on b, appended on both: every one, once, in order, no other license.
    for expected in &ids {
        let item = tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap()
            .unwrap();
        let Item::Event(e) = item else { panic!("{item:?}") };
        assert_eq!(e.id, Some(*expected));
    }
    // Quotes reach the live feed without an id and are not retained.
    let mut live = b.live();
    a.broadcast(
        &lic,
        Draft::new(
            EventType::Quote,
            now_ms(),
            Some("term_a"),
            &tradeterm_events::model::QuoteData {
                symbol: "EURUSD".into(),
                bid: 1.1,
                ask: 1.1001,
                time: now_ms(),
            },
        ),
    )
    .await
    .unwrap();
    let quote = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(Live::Event { license, event }) = live.recv().await
                && *license == *lic
            {
                return event;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!((quote.kind, quote.id), (EventType::Quote, None));
    assert_eq!(a.last_id(&lic).await.unwrap(), ids.last().copied());
}

#[tokio::test]
async fn retention_trims_and_a_replay_from_before_the_trim_says_gap() {
    let Some(bus) = bus(86_400_000, 5).await else { return };
    let lic = license();
    let mut ids = Vec::new();
    for n in 0..12 {
        ids.push(bus.append(&lic, draft(n)).await.unwrap().id.unwrap());
    }
    let from_old = bus.replay(&lic, Some(ids[2]), 100).await.unwrap();
    assert!(from_old.gap);
    let got: Vec<_> = from_old.events.iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(got, ids[7..]);
    let recent = bus.replay(&lic, Some(ids[7]), 100).await.unwrap();
    assert!(!recent.gap, "nothing after ids[7] was dropped");
    // Time retention: with a window of 0 ms every older entry goes at the next append.
    let Some(short) = self::bus(0, 1000).await else { return };
    let lic = license();
    let first = short.append(&lic, draft(0)).await.unwrap().id.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = short.append(&lic, draft(1)).await.unwrap().id.unwrap();
    let replay = short.replay(&lic, Some(first), 10).await.unwrap();
    assert!(!replay.gap, "only `first` itself was dropped");
    assert!(short.replay(&lic, None, 10).await.unwrap().gap);
    assert_eq!(
        replay.events.iter().map(|e| e.id.unwrap()).collect::<Vec<_>>(),
        vec![second]
    );
}
