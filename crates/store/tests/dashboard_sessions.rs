//! The dashboard's sessions ([`SessionStore`]) on both backends, as
//! `sqlite::NAME` and `postgres::NAME` (the fixtures of the conformance
//! suite: a temporary SQLite file, a fresh PostgreSQL schema).

mod support;

use std::sync::Arc;

use tradeterm_store::session::SESSION_TOKEN_PREFIX;
use tradeterm_store::{SessionStore, Store, StoreError, Tier, hash_key};

use support::{Fixture, Val};

type Fx = Arc<Fixture>;

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::support::run(crate::support::Kind::Sqlite, super::$name).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::support::run(crate::support::Kind::Postgres, super::$name).await;
                }
            )*
        }
    };
}

scenarios!(
    sessions_resolve_to_their_license_and_store_only_a_hash,
    sessions_expire_extend_forward_and_end,
    sessions_of_disabled_or_unknown_licenses_resolve_nothing,
);

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

const HOUR: i64 = 3_600_000;

async fn sessions_resolve_to_their_license_and_store_only_a_hash(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Free).await.unwrap();
    let expires = now_ms() + HOUR;
    let ta = s.create_dashboard_session(&a.id, expires).await.unwrap();
    let tb = s.create_dashboard_session(&b.id, expires).await.unwrap();
    assert!(ta.expose().starts_with(SESSION_TOKEN_PREFIX));
    assert_eq!(ta.expose().len(), SESSION_TOKEN_PREFIX.len() + 43);
    assert_ne!(ta, tb);
    assert_eq!(format!("{ta:?}"), "Secret(***)");

    let sa = s.dashboard_session(ta.expose()).await.unwrap().unwrap();
    assert_eq!(sa.license, a);
    assert_eq!(sa.expires_at, expires);
    assert!(sa.created_at <= now_ms() && sa.created_at > now_ms() - 60_000);
    assert_eq!(s.dashboard_session(tb.expose()).await.unwrap().unwrap().license, b);
    // A made-up or mangled token resolves nothing.
    assert!(s.dashboard_session("tt_dash_nope").await.unwrap().is_none());
    let mut mangled = ta.expose().to_owned();
    mangled.pop();
    assert!(s.dashboard_session(&mangled).await.unwrap().is_none());

    // Only hashes are stored.
    let stored = fx
        .raw
        .texts("SELECT token_hash FROM dashboard_sessions ORDER BY token_hash", &[])
        .await;
    let mut want = vec![Some(hash_key(ta.expose())), Some(hash_key(tb.expose()))];
    want.sort();
    assert_eq!(stored, want);
    let dump = format!("{:?}", fx.raw.snapshot().await);
    assert!(!dump.contains(ta.expose()) && !dump.contains(tb.expose()));
}

async fn sessions_expire_extend_forward_and_end(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let now = now_ms();
    assert!(matches!(
        s.create_dashboard_session(&l.id, now - 1).await,
        Err(StoreError::Invalid(_))
    ));
    let token = s.create_dashboard_session(&l.id, now + HOUR).await.unwrap();

    // Forward only.
    assert!(
        !s.extend_dashboard_session(token.expose(), now + HOUR / 2)
            .await
            .unwrap()
    );
    assert_eq!(
        s.dashboard_session(token.expose()).await.unwrap().unwrap().expires_at,
        now + HOUR
    );
    assert!(
        s.extend_dashboard_session(token.expose(), now + 2 * HOUR)
            .await
            .unwrap()
    );
    assert_eq!(
        s.dashboard_session(token.expose()).await.unwrap().unwrap().expires_at,
        now + 2 * HOUR
    );

    // An expired session resolves nothing and cannot be revived.
    let old = s.create_dashboard_session(&l.id, now + HOUR).await.unwrap();
    fx.raw
        .exec(
            "UPDATE dashboard_sessions SET expires_at = $1 WHERE token_hash = $2",
            &[Val::Int(now - 1), Val::Text(&hash_key(old.expose()))],
        )
        .await;
    assert!(s.dashboard_session(old.expose()).await.unwrap().is_none());
    assert!(!s.extend_dashboard_session(old.expose(), now + 3 * HOUR).await.unwrap());
    assert!(s.dashboard_session(old.expose()).await.unwrap().is_none());
    // Creating a session purges expired ones.
    let _third = s.create_dashboard_session(&l.id, now + HOUR).await.unwrap();
    assert_eq!(
        fx.raw
            .int(
                "SELECT COUNT(*) FROM dashboard_sessions WHERE token_hash = $1",
                &[Val::Text(&hash_key(old.expose()))]
            )
            .await,
        0
    );

    // Sign-out ends exactly that session.
    assert!(s.end_dashboard_session(token.expose()).await.unwrap());
    assert!(s.dashboard_session(token.expose()).await.unwrap().is_none());
    assert!(!s.end_dashboard_session(token.expose()).await.unwrap());
    assert!(
        !s.extend_dashboard_session(token.expose(), now + 5 * HOUR)
            .await
            .unwrap()
    );
    assert!(s.dashboard_session(_third.expose()).await.unwrap().is_some());
}

async fn sessions_of_disabled_or_unknown_licenses_resolve_nothing(fx: Fx) {
    let s = &fx.store;
    assert!(matches!(
        s.create_dashboard_session("lic_missing", now_ms() + HOUR).await,
        Err(StoreError::NotFound("license"))
    ));
    let (l, _) = s.create_license("Off", Tier::Pro).await.unwrap();
    let token = s.create_dashboard_session(&l.id, now_ms() + HOUR).await.unwrap();
    fx.raw.disable_license(&l.id).await;
    assert!(s.dashboard_session(token.expose()).await.unwrap().is_none());
    // The store trait reaches the sessions too (as `Arc<dyn Store>`).
    let dynamic: Arc<dyn Store> = Arc::new(fx.store.clone());
    assert!(dynamic.dashboard_session(token.expose()).await.unwrap().is_none());
}
