//! Managed exits ([`ManagedStore`]) on both backends, as `sqlite::NAME` and
//! `postgres::NAME`: rules per terminal with their limit, listing and ending
//! by the license only, claims exclusive across evaluators and taken over
//! once lapsed, steps written only by the holder at the version decided.

mod support;

use std::sync::Arc;

use serde_json::json;
use tradeterm_store::{
    MAX_MANAGED_PER_TERMINAL, ManagedStatus, ManagedStep, ManagedStore, NewManagedOrder, Store, StoreError, Tier,
};

use support::Fixture;

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
    rules_are_per_terminal_with_a_limit_and_end_once,
    claims_are_exclusive_and_lapsed_ones_are_taken_over,
    steps_are_written_by_the_holder_at_the_decided_version,
    another_license_reaches_nothing,
);

fn new<'a>(license: &'a str, terminal: &'a str, spec: &'a serde_json::Value) -> NewManagedOrder<'a> {
    NewManagedOrder {
        license_id: license,
        terminal_id: terminal,
        kind: "trailing_stop",
        label: "trail",
        spec,
        state: &serde_json::Value::Null,
        caller: spec,
        dry_run: false,
    }
}

async fn rules_are_per_terminal_with_a_limit_and_end_once(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
    let spec = json!({"kind": "trailing_stop", "position": 1});
    let r = s.create_managed_order(&new(&l.id, &t.id, &spec)).await.unwrap();
    assert!(r.id.starts_with("mxo_"));
    assert_eq!(
        (r.status, r.version, r.owner.as_deref()),
        (ManagedStatus::Active, 1, None)
    );
    assert_eq!(s.managed_order(&l.id, &r.id).await.unwrap(), Some(r.clone()));
    for _ in 1..MAX_MANAGED_PER_TERMINAL {
        s.create_managed_order(&new(&l.id, &t.id, &spec)).await.unwrap();
    }
    let over = s.create_managed_order(&new(&l.id, &t.id, &spec)).await;
    assert!(
        matches!(over, Err(StoreError::Invalid(ref m)) if m.contains("100")),
        "{over:?}"
    );
    // Ending one frees a slot; ending it again finds nothing.
    let ended = s.end_managed_order(&l.id, &r.id, "removed").await.unwrap().unwrap();
    assert_eq!(
        (ended.status, ended.ended_reason.as_deref(), ended.version),
        (ManagedStatus::Ended, Some("removed"), 2)
    );
    assert_eq!(s.end_managed_order(&l.id, &r.id, "removed").await.unwrap(), None);
    s.create_managed_order(&new(&l.id, &t.id, &spec)).await.unwrap();
    let open = s.managed_orders(&l.id, Some(&t.id), false).await.unwrap();
    assert_eq!(open.len(), MAX_MANAGED_PER_TERMINAL);
    assert!(open.iter().all(|r| r.status != ManagedStatus::Ended));
    let all = s.managed_orders(&l.id, None, true).await.unwrap();
    assert_eq!(all.len(), MAX_MANAGED_PER_TERMINAL + 1);
    assert_eq!(all[0].id, r.id, "oldest first");
    // Bad input changes nothing.
    let long = "x".repeat(201);
    let mut bad = new(&l.id, &t.id, &spec);
    bad.label = &long;
    assert!(matches!(
        s.create_managed_order(&bad).await,
        Err(StoreError::Invalid(_))
    ));
    let mut bad = new(&l.id, "t_nope", &spec);
    bad.terminal_id = "t_nope";
    assert!(matches!(
        s.create_managed_order(&bad).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn claims_are_exclusive_and_lapsed_ones_are_taken_over(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
    let spec = json!({});
    for _ in 0..20 {
        s.create_managed_order(&new(&l.id, &t.id, &spec)).await.unwrap();
    }
    let now = 1_000_000;
    // Two evaluators claim at once: every rule is held by exactly one.
    let (a, b) = tokio::join!(
        s.claim_managed_orders("inst_a", now, now + 6000),
        s.claim_managed_orders("inst_b", now, now + 6000)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        a.len() + b.len(),
        20,
        "each rule claimed once: {} + {}",
        a.len(),
        b.len()
    );
    assert!(a.iter().all(|r| !b.iter().any(|x| x.id == r.id)));
    let (holder, other, held) = if a.is_empty() {
        ("inst_b", "inst_a", b)
    } else {
        ("inst_a", "inst_b", a)
    };
    // The holder renews; the other gets nothing while the lease holds.
    assert_eq!(
        s.claim_managed_orders(holder, now + 2000, now + 8000)
            .await
            .unwrap()
            .len(),
        held.len()
    );
    assert!(
        s.claim_managed_orders(other, now + 7000, now + 13000)
            .await
            .unwrap()
            .len()
            < 20
    );
    // The holder stops renewing: after its lease the other takes everything.
    let taken = s.claim_managed_orders(other, now + 8001, now + 14001).await.unwrap();
    assert_eq!(taken.len(), 20);
    assert!(
        s.claim_managed_orders(holder, now + 8002, now + 14002)
            .await
            .unwrap()
            .is_empty()
    );
    // A graceful stop gives the claims up at once.
    assert_eq!(s.release_managed_orders(other).await.unwrap(), 20);
    assert_eq!(
        s.claim_managed_orders(holder, now + 8003, now + 14003)
            .await
            .unwrap()
            .len(),
        20
    );
    // Ended rules are never claimed.
    s.end_managed_order(&l.id, &taken[0].id, "removed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        s.claim_managed_orders(holder, now + 8004, now + 14004)
            .await
            .unwrap()
            .len(),
        19
    );
}

async fn steps_are_written_by_the_holder_at_the_decided_version(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
    let spec = json!({});
    let r = s.create_managed_order(&new(&l.id, &t.id, &spec)).await.unwrap();
    let state = json!({"steps": 1});
    let step = |owner: &'static str, v: i64| ManagedStep {
        id: &r.id,
        owner,
        expected_version: v,
        state: &state,
        status: ManagedStatus::Active,
        ended_reason: None,
    };
    // Unclaimed: nobody may write.
    assert_eq!(s.record_managed_step(&step("inst_a", 1)).await.unwrap(), None);
    s.claim_managed_orders("inst_a", 0, 10_000).await.unwrap();
    assert_eq!(
        s.record_managed_step(&step("inst_b", 1)).await.unwrap(),
        None,
        "not the holder"
    );
    assert_eq!(s.record_managed_step(&step("inst_a", 1)).await.unwrap(), Some(2));
    assert_eq!(
        s.record_managed_step(&step("inst_a", 1)).await.unwrap(),
        None,
        "stale version"
    );
    let stored = s.managed_order(&l.id, &r.id).await.unwrap().unwrap();
    assert_eq!((stored.version, stored.state.clone()), (2, state.clone()));
    // Pause, then end with a reason.
    let mut paused = step("inst_a", 2);
    paused.status = ManagedStatus::Paused;
    assert_eq!(s.record_managed_step(&paused).await.unwrap(), Some(3));
    assert_eq!(
        s.managed_order(&l.id, &r.id).await.unwrap().unwrap().status,
        ManagedStatus::Paused
    );
    let mut end = step("inst_a", 3);
    end.status = ManagedStatus::Ended;
    end.ended_reason = Some("position_closed");
    assert_eq!(s.record_managed_step(&end).await.unwrap(), Some(4));
    let stored = s.managed_order(&l.id, &r.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.ended_reason.as_deref()),
        (ManagedStatus::Ended, Some("position_closed"))
    );
    // Ended: no step is written any more.
    assert_eq!(s.record_managed_step(&step("inst_a", 4)).await.unwrap(), None);
    // The client ending a rule another instance holds makes the holder's write fail.
    let r2 = s.create_managed_order(&new(&l.id, &t.id, &spec)).await.unwrap();
    s.claim_managed_orders("inst_a", 0, 10_000).await.unwrap();
    s.end_managed_order(&l.id, &r2.id, "removed").await.unwrap().unwrap();
    let late = ManagedStep {
        id: &r2.id,
        owner: "inst_a",
        expected_version: 1,
        state: &state,
        status: ManagedStatus::Active,
        ended_reason: None,
    };
    assert_eq!(s.record_managed_step(&late).await.unwrap(), None);
}

async fn another_license_reaches_nothing(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    let (ta, _) = s.create_terminal(&a.id, "TA").await.unwrap();
    let spec = json!({});
    let r = s.create_managed_order(&new(&a.id, &ta.id, &spec)).await.unwrap();
    // B cannot create on A's terminal, read, list or end A's rule.
    assert!(matches!(
        s.create_managed_order(&new(&b.id, &ta.id, &spec)).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(s.managed_order(&b.id, &r.id).await.unwrap(), None);
    assert!(s.managed_orders(&b.id, None, true).await.unwrap().is_empty());
    assert!(s.managed_orders(&b.id, Some(&ta.id), true).await.unwrap().is_empty());
    assert_eq!(s.end_managed_order(&b.id, &r.id, "removed").await.unwrap(), None);
    assert_eq!(
        s.managed_order(&a.id, &r.id).await.unwrap().unwrap().status,
        ManagedStatus::Active
    );
}
