//! Webhooks ([`WebhookStore`]) on both backends, as `sqlite::NAME` and
//! `postgres::NAME` (the fixtures of the conformance suite): endpoints per
//! license with their limit, idempotent enqueuing with the cursor, claims
//! exclusive across claimers (and taken again after their lease), attempts
//! recorded only by the claim's holder, the failure streak, and license
//! isolation of every method.

mod support;

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::Barrier;
use tradeterm_store::{
    MAX_WEBHOOKS_PER_LICENSE, NewWebhookDelivery, Store, StoreError, Tier, WebhookAttemptOutcome, WebhookBars,
    WebhookStore, WebhookUpdate,
};

use support::{Fixture, Val};

type Fx = Arc<Fixture>;

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    crate::support::run(crate::support::Kind::Sqlite, super::$name).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    crate::support::run(crate::support::Kind::Postgres, super::$name).await;
                }
            )*
        }
    };
}

scenarios!(
    endpoints_are_per_license_with_a_limit_and_a_secret_shown_once,
    enqueuing_is_idempotent_and_moves_the_cursor,
    claims_are_exclusive_across_claimers_and_expire,
    attempts_are_recorded_by_the_holder_and_keep_the_failure_streak,
    another_license_reaches_nothing,
    bar_subscriptions_are_kept_changed_and_cleared,
);

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn delivery(n: u32) -> NewWebhookDelivery {
    NewWebhookDelivery {
        event_id: format!("1000-{n}"),
        event_type: "deal.added".into(),
        body: format!(r#"{{"id":"1000-{n}","type":"deal.added"}}"#),
    }
}

fn types(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| (*s).to_owned()).collect()
}

async fn endpoints_are_per_license_with_a_limit_and_a_secret_shown_once(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (w, secret) = s
        .create_webhook(&a.id, "https://example.com/h", &types(&["order.filled"]), Some("5-1"))
        .await
        .unwrap();
    assert!(w.id.starts_with("whk_"));
    assert!(secret.expose().starts_with("whsec_"));
    assert_eq!(format!("{secret:?}"), "Secret(***)");
    assert_eq!((w.cursor.as_deref(), w.enabled), (Some("5-1"), true));
    assert_eq!(s.webhook(&a.id, &w.id).await.unwrap(), Some(w.clone()));
    assert_eq!(s.list_webhooks(&a.id).await.unwrap(), vec![w.clone()]);
    for i in 1..MAX_WEBHOOKS_PER_LICENSE {
        s.create_webhook(&a.id, &format!("https://example.com/{i}"), &[], None)
            .await
            .unwrap();
    }
    let over = s.create_webhook(&a.id, "https://example.com/11", &[], None).await;
    assert!(
        matches!(over, Err(ref e @ StoreError::WebhookLimit) if e.to_string().contains("at most 10")),
        "{over:?}"
    );
    assert_eq!(s.list_webhooks(&a.id).await.unwrap().len(), MAX_WEBHOOKS_PER_LICENSE);
    // Update: the filter, disabling by the owner, enabling clears the reason.
    let off = WebhookUpdate {
        enabled: Some(false),
        types: Some(types(&["position.closed"])),
        ..Default::default()
    };
    let changed = s.update_webhook(&a.id, &w.id, &off).await.unwrap().unwrap();
    assert_eq!(
        (changed.enabled, changed.types.clone()),
        (false, types(&["position.closed"]))
    );
    assert!(changed.disabled_reason.is_some());
    assert!(!s.enabled_webhooks().await.unwrap().iter().any(|e| e.id == w.id));
    let on = WebhookUpdate {
        enabled: Some(true),
        url: Some("https://example.com/new".into()),
        ..Default::default()
    };
    let changed = s.update_webhook(&a.id, &w.id, &on).await.unwrap().unwrap();
    assert_eq!(
        (changed.enabled, changed.url.as_str(), changed.disabled_reason),
        (true, "https://example.com/new", None)
    );
    assert!(s.enabled_webhooks().await.unwrap().iter().any(|e| e.id == w.id));
    // Delete frees a slot.
    assert!(s.delete_webhook(&a.id, &w.id).await.unwrap());
    assert!(!s.delete_webhook(&a.id, &w.id).await.unwrap());
    assert_eq!(s.webhook(&a.id, &w.id).await.unwrap(), None);
    s.create_webhook(&a.id, "https://example.com/again", &[], None)
        .await
        .unwrap();
}

async fn enqueuing_is_idempotent_and_moves_the_cursor(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (w, _) = s
        .create_webhook(&a.id, "https://example.com/h", &[], None)
        .await
        .unwrap();
    let batch = [delivery(1), delivery(2)];
    assert_eq!(
        s.enqueue_webhook_deliveries(&a.id, &w.id, &batch, "1000-2")
            .await
            .unwrap(),
        2
    );
    // The same events again (a replay after a restart, another instance): nothing added.
    assert_eq!(
        s.enqueue_webhook_deliveries(&a.id, &w.id, &batch, "1000-2")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        s.enqueue_webhook_deliveries(&a.id, &w.id, &[delivery(2), delivery(3)], "1000-3")
            .await
            .unwrap(),
        1
    );
    let rows = fx
        .raw
        .int(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = $1",
            &[Val::Text(&w.id)],
        )
        .await;
    assert_eq!(rows, 3);
    assert_eq!(
        s.webhook(&a.id, &w.id).await.unwrap().unwrap().cursor.as_deref(),
        Some("1000-3")
    );
    assert_eq!(s.webhook_counts(&a.id, &w.id).await.unwrap().pending, 3);
    // A disabled endpoint gets nothing.
    s.disable_webhook(&a.id, &w.id, "test").await.unwrap();
    assert_eq!(
        s.enqueue_webhook_deliveries(&a.id, &w.id, &[delivery(4)], "1000-4")
            .await
            .unwrap(),
        0
    );
}

async fn claims_are_exclusive_across_claimers_and_expire(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (w, secret) = s
        .create_webhook(&a.id, "https://example.com/h", &[], None)
        .await
        .unwrap();
    let batch: Vec<_> = (0..40).map(delivery).collect();
    s.enqueue_webhook_deliveries(&a.id, &w.id, &batch, "1000-39")
        .await
        .unwrap();
    let now = now_ms();
    // Four claimers at once, each taking up to 15: every delivery claimed once.
    let barrier = Arc::new(Barrier::new(4));
    let mut tasks = Vec::new();
    for c in 0..4 {
        let store = fx.store.clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim_webhook_deliveries(&format!("claimer-{c}"), now, now + 30_000, 15)
                    .await
                    .unwrap();
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got);
            }
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for t in tasks {
        for d in t.await.unwrap() {
            assert_eq!(
                (d.license_id.as_str(), d.url.as_str()),
                (a.id.as_str(), "https://example.com/h")
            );
            assert_eq!(d.secret, secret, "the sender gets the secret to sign");
            assert!(seen.insert(d.id), "delivery {} claimed twice", d.id);
            total += 1;
        }
    }
    assert_eq!(total, 40);
    // Held: nobody else gets them until the lease ends.
    assert!(
        s.claim_webhook_deliveries("late", now + 1_000, now + 31_000, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // The lease ended (a claimer that died): taken again, once.
    let again = s
        .claim_webhook_deliveries("next", now + 30_001, now + 60_000, 100)
        .await
        .unwrap();
    assert_eq!(again.len(), 40);
    s.delete_webhook(&a.id, &w.id).await.unwrap();
    // Not yet due: not claimed.
    let (w2, _) = s
        .create_webhook(&a.id, "https://example.com/2", &[], None)
        .await
        .unwrap();
    s.enqueue_webhook_deliveries(&a.id, &w2.id, &[delivery(1)], "1000-1")
        .await
        .unwrap();
    let d = s
        .claim_webhook_deliveries("c", now_ms() + 60_000, now_ms() + 90_000, 10)
        .await
        .unwrap();
    assert_eq!(d.len(), 1);
    let retry_at = now_ms() + 3_600_000;
    let outcome = WebhookAttemptOutcome {
        at: now_ms(),
        status: Some(500),
        latency_ms: 3,
        error: Some("HTTP 500".into()),
        delivered: false,
        next_attempt_at: Some(retry_at),
    };
    assert!(
        s.record_webhook_attempt(&a.id, d[0].id, &d[0].claim, &outcome)
            .await
            .unwrap()
    );
    assert!(
        s.claim_webhook_deliveries("c", now_ms() + 60_000, now_ms() + 90_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let later = s
        .claim_webhook_deliveries("c", retry_at, retry_at + 30_000, 10)
        .await
        .unwrap();
    assert_eq!((later.len(), later[0].attempts), (1, 1));
    // A disabled endpoint's deliveries are not claimed.
    s.disable_webhook(&a.id, &w2.id, "test").await.unwrap();
    assert!(
        s.claim_webhook_deliveries("c", retry_at + 60_000, retry_at + 90_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn attempts_are_recorded_by_the_holder_and_keep_the_failure_streak(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (w, _) = s
        .create_webhook(&a.id, "https://example.com/h", &[], None)
        .await
        .unwrap();
    s.enqueue_webhook_deliveries(&a.id, &w.id, &[delivery(1)], "1000-1")
        .await
        .unwrap();
    let now = now_ms();
    let claimed = s.claim_webhook_deliveries("me", now, now + 30_000, 1).await.unwrap();
    let d = &claimed[0];
    let fail = WebhookAttemptOutcome {
        at: now,
        status: Some(503),
        latency_ms: 12,
        error: Some("HTTP 503".into()),
        delivered: false,
        next_attempt_at: Some(now),
    };
    // Not the holder: nothing recorded.
    assert!(!s.record_webhook_attempt(&a.id, d.id, "me#other", &fail).await.unwrap());
    assert!(s.record_webhook_attempt(&a.id, d.id, &d.claim, &fail).await.unwrap());
    assert!(
        !s.record_webhook_attempt(&a.id, d.id, &d.claim, &fail).await.unwrap(),
        "the claim was released"
    );
    assert_eq!(s.webhook(&a.id, &w.id).await.unwrap().unwrap().failing_since, Some(now));
    // Again, then delivered: the streak ends.
    let d = s
        .claim_webhook_deliveries("me", now + 1, now + 30_000, 1)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(d.event_id, "1000-1");
    let fail2 = WebhookAttemptOutcome {
        at: now + 5,
        ..fail.clone()
    };
    assert!(s.record_webhook_attempt(&a.id, d.id, &d.claim, &fail2).await.unwrap());
    assert_eq!(
        s.webhook(&a.id, &w.id).await.unwrap().unwrap().failing_since,
        Some(now),
        "the streak starts at the first failure"
    );
    let d = s
        .claim_webhook_deliveries("me", now + 10, now + 30_000, 1)
        .await
        .unwrap()
        .remove(0);
    let ok = WebhookAttemptOutcome {
        at: now + 20,
        status: Some(204),
        latency_ms: 7,
        error: None,
        delivered: true,
        next_attempt_at: None,
    };
    assert!(s.record_webhook_attempt(&a.id, d.id, &d.claim, &ok).await.unwrap());
    assert_eq!(s.webhook(&a.id, &w.id).await.unwrap().unwrap().failing_since, None);
    // Another one fails for good.
    s.enqueue_webhook_deliveries(&a.id, &w.id, &[delivery(2)], "1000-2")
        .await
        .unwrap();
    let d = s
        .claim_webhook_deliveries("me", now_ms(), now_ms() + 30_000, 1)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(d.event_id, "1000-2");
    let given_up = WebhookAttemptOutcome {
        at: now + 40,
        next_attempt_at: None,
        ..fail.clone()
    };
    assert!(
        s.record_webhook_attempt(&a.id, d.id, &d.claim, &given_up)
            .await
            .unwrap()
    );
    let counts = s.webhook_counts(&a.id, &w.id).await.unwrap();
    assert_eq!((counts.pending, counts.delivered, counts.failed), (0, 1, 1));
    // The log, newest first.
    let log = s.webhook_attempts(&a.id, &w.id, 10).await.unwrap();
    let summary: Vec<_> = log
        .iter()
        .map(|l| (l.event_id.as_str(), l.attempt, l.status, l.outcome.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("1000-2", 1, Some(503), "failed"),
            ("1000-1", 3, Some(204), "delivered"),
            ("1000-1", 2, Some(503), "retrying"),
            ("1000-1", 1, Some(503), "retrying"),
        ]
    );
    assert_eq!(log[1].latency_ms, 7);
    // Disabling is reported once.
    assert!(s.disable_webhook(&a.id, &w.id, "failing for 3 days").await.unwrap());
    assert!(!s.disable_webhook(&a.id, &w.id, "failing for 3 days").await.unwrap());
    let w = s.webhook(&a.id, &w.id).await.unwrap().unwrap();
    assert_eq!(
        (w.enabled, w.disabled_reason.as_deref()),
        (false, Some("failing for 3 days"))
    );
}

async fn another_license_reaches_nothing(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    let (w, _) = s
        .create_webhook(&a.id, "https://example.com/a", &[], None)
        .await
        .unwrap();
    s.enqueue_webhook_deliveries(&a.id, &w.id, &[delivery(1)], "1000-1")
        .await
        .unwrap();
    let before = fx.raw.snapshot().await;
    // B names A's endpoint everywhere: nothing found, nothing changed.
    assert_eq!(s.webhook(&b.id, &w.id).await.unwrap(), None);
    assert!(s.list_webhooks(&b.id).await.unwrap().is_empty());
    let update = WebhookUpdate {
        url: Some("https://evil.example/".into()),
        ..Default::default()
    };
    assert_eq!(s.update_webhook(&b.id, &w.id, &update).await.unwrap(), None);
    assert!(!s.delete_webhook(&b.id, &w.id).await.unwrap());
    assert!(!s.disable_webhook(&b.id, &w.id, "x").await.unwrap());
    assert_eq!(
        s.enqueue_webhook_deliveries(&b.id, &w.id, &[delivery(2)], "1000-2")
            .await
            .unwrap(),
        0
    );
    assert!(s.webhook_attempts(&b.id, &w.id, 10).await.unwrap().is_empty());
    assert_eq!(s.webhook_counts(&b.id, &w.id).await.unwrap().pending, 0);
    assert_eq!(fx.raw.snapshot().await, before, "nothing of A changed");
    // A claimed delivery of A cannot be recorded as B.
    let now = now_ms();
    let d = s
        .claim_webhook_deliveries("me", now, now + 30_000, 10)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(d.license_id, a.id);
    let ok = WebhookAttemptOutcome {
        at: now,
        status: Some(200),
        latency_ms: 1,
        error: None,
        delivered: true,
        next_attempt_at: None,
    };
    assert!(!s.record_webhook_attempt(&b.id, d.id, &d.claim, &ok).await.unwrap());
    assert!(s.record_webhook_attempt(&a.id, d.id, &d.claim, &ok).await.unwrap());
    // B's own endpoints count against B's limit only.
    for i in 0..MAX_WEBHOOKS_PER_LICENSE {
        s.create_webhook(&b.id, &format!("https://example.com/b{i}"), &[], None)
            .await
            .unwrap();
    }
    assert_eq!(s.list_webhooks(&a.id).await.unwrap().len(), 1);
    assert!(matches!(
        s.create_webhook("lic_nope", "https://example.com/", &[], None).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn bar_subscriptions_are_kept_changed_and_cleared(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let bars = WebhookBars {
        symbols: types(&["EURUSD", "XAUUSD"]),
        timeframes: types(&["M1", "H1"]),
    };
    let (w, _) = s
        .create_webhook_with_bars(
            &a.id,
            "https://example.com/b",
            &types(&["bar.closed"]),
            Some(&bars),
            None,
        )
        .await
        .unwrap();
    assert_eq!(w.bars.as_ref(), Some(&bars));
    assert_eq!(s.webhook(&a.id, &w.id).await.unwrap().unwrap().bars, Some(bars.clone()));
    let listed = s.enabled_webhooks().await.unwrap();
    assert_eq!(listed.iter().find(|e| e.id == w.id).unwrap().bars, Some(bars.clone()));
    // Without bars: none, and an empty list is refused without a change.
    let (plain, _) = s
        .create_webhook(&a.id, "https://example.com/p", &[], None)
        .await
        .unwrap();
    assert_eq!(s.webhook(&a.id, &plain.id).await.unwrap().unwrap().bars, None);
    let empty = WebhookBars {
        symbols: vec![],
        timeframes: types(&["M1"]),
    };
    let refused = s
        .create_webhook_with_bars(&a.id, "https://example.com/e", &[], Some(&empty), None)
        .await;
    assert!(matches!(refused, Err(StoreError::Invalid(_))), "{refused:?}");
    assert_eq!(s.list_webhooks(&a.id).await.unwrap().len(), 2);
    // Another change leaves the bars; a new subscription replaces them; `Some(None)` clears.
    let other = WebhookUpdate {
        url: Some("https://example.com/b2".into()),
        ..Default::default()
    };
    assert_eq!(
        s.update_webhook(&a.id, &w.id, &other).await.unwrap().unwrap().bars,
        Some(bars)
    );
    let h4 = WebhookBars {
        symbols: types(&["GBPUSD"]),
        timeframes: types(&["H4"]),
    };
    let replace = WebhookUpdate {
        bars: Some(Some(h4.clone())),
        ..Default::default()
    };
    assert_eq!(
        s.update_webhook(&a.id, &w.id, &replace).await.unwrap().unwrap().bars,
        Some(h4)
    );
    let clear = WebhookUpdate {
        bars: Some(None),
        ..Default::default()
    };
    assert_eq!(
        s.update_webhook(&a.id, &w.id, &clear).await.unwrap().unwrap().bars,
        None
    );
    assert_eq!(s.webhook(&a.id, &w.id).await.unwrap().unwrap().bars, None);
}
