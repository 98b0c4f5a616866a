//! The store's conformance suite: every scenario runs against SQLite (a
//! temporary file) and PostgreSQL (a fresh schema), as `sqlite::NAME` and
//! `postgres::NAME`. See `docs/store.md` for how to run it.

mod support;

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;
use tokio::sync::Barrier;
use tradeterm_store::keys::{self, API_KEY_PREFIX, LICENSE_KEY_PREFIX, TERMINAL_KEY_PREFIX};
use tradeterm_store::{
    BindOutcome, IdempotencyBegin, JournalFilter, MAX_ACTIVE_API_KEYS, MAX_ALERT_RULES_PER_TERMINAL, NewAlertEvent,
    NewAlertRule, StateSnapshot, Store, StoreError, TerminalFilter, TerminalInfo, Tier, hash_key,
};

use support::{Fixture, Kind, Val};

type Fx = Arc<Fixture>;

/// Declares each scenario once per backend.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    crate::support::run(crate::Kind::Sqlite, super::$name).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    crate::support::run(crate::Kind::Postgres, super::$name).await;
                }
            )*
        }
    };
}

conformance!(
    licenses_create_lookup_tier_and_list,
    license_names_are_validated,
    disabled_license_authenticates_nothing,
    terminal_create_and_key_resolution,
    terminal_key_rotation,
    terminal_binding,
    concurrent_binds_bind_exactly_once,
    terminal_info_and_last_seen,
    terminals_are_touched_in_batches,
    revoked_credentials_are_listed_since_a_time,
    api_key_format_and_only_hash_stored,
    api_key_lifecycle,
    api_key_limit,
    concurrent_api_key_creation_respects_limit,
    api_key_labels_are_validated,
    journal_crud_and_attribution,
    journal_filters_and_order,
    journal_body_limit,
    cross_license_matrix,
    idempotency_flow,
    concurrent_idempotency_begin_starts_once,
    idempotency_keys_are_per_license,
    abandoned_idempotency_claims_are_resumed_once,
    migrations_are_idempotent,
    unknown_parents_are_not_found,
    prop_firm_rules_set_get_replace_remove,
    prop_firm_high_water_mark_only_rises,
    prop_firm_rules_are_per_license,
    news_guard_set_get_replace_remove_per_license,
    state_snapshots_swap_per_caller_and_terminal,
    equity_guards_set_update_remove_per_license,
    equity_guard_state_updates_are_compare_and_swap,
    alert_rules_create_list_remove_per_license,
    alert_steps_are_compare_and_swap_and_record_firings,
    executions_are_recorded_per_terminal_and_range,
);

fn info(login: u64) -> TerminalInfo {
    TerminalInfo {
        platform: "MT5".to_owned(),
        build: 4410,
        account_login: login,
        account_server: "Broker-Demo".to_owned(),
        account_currency: "USD".to_owned(),
        trade_mode: "demo".to_owned(),
    }
}

fn assert_invalid<T: std::fmt::Debug>(r: Result<T, StoreError>) {
    assert!(matches!(r, Err(StoreError::Invalid(_))), "expected Invalid, got {r:?}");
}

/// Sets an entry's `created_at` so that time filters can be checked exactly.
async fn set_created_at(fx: &Fixture, entry_id: &str, ms: i64) {
    let n = fx
        .raw
        .exec(
            "UPDATE journal_entries SET created_at = $1 WHERE id = $2",
            &[Val::Int(ms), Val::Text(entry_id)],
        )
        .await;
    assert_eq!(n, 1);
}

// ----- licenses -----

async fn licenses_create_lookup_tier_and_list(fx: Fx) {
    let s = &fx.store;
    let (a, a_key) = s.create_license("Alpha", Tier::Free).await.unwrap();
    let (b, b_key) = s.create_license("Beta", Tier::Pro).await.unwrap();
    assert!(a.id.starts_with("lic_"));
    assert!(a_key.expose().starts_with(LICENSE_KEY_PREFIX));
    assert_eq!(a_key.expose().len(), LICENSE_KEY_PREFIX.len() + 43);
    assert_ne!(a_key, b_key);
    assert_eq!((a.name.as_str(), a.tier, a.disabled), ("Alpha", Tier::Free, false));
    assert!(a.created_at > 1_600_000_000_000, "unix milliseconds");

    assert_eq!(s.license(&a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.license("lic_missing").await.unwrap(), None);

    assert_eq!(s.license_by_master_key(a_key.expose()).await.unwrap(), Some(a.clone()));
    assert_eq!(s.license_by_master_key(b_key.expose()).await.unwrap(), Some(b.clone()));
    let mut tampered = a_key.expose().to_owned();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    assert_eq!(s.license_by_master_key(&tampered).await.unwrap(), None);
    assert_eq!(s.license_by_master_key("").await.unwrap(), None);
    // The hash itself is not a key.
    assert_eq!(s.license_by_master_key(&hash_key(a_key.expose())).await.unwrap(), None);

    s.set_license_tier(&a.id, Tier::Enterprise).await.unwrap();
    assert_eq!(s.license(&a.id).await.unwrap().unwrap().tier, Tier::Enterprise);
    assert_eq!(
        s.license(&b.id).await.unwrap().unwrap().tier,
        Tier::Pro,
        "other license untouched"
    );
    assert!(matches!(
        s.set_license_tier("lic_missing", Tier::Pro).await,
        Err(StoreError::NotFound(_))
    ));

    // The owner's settings: MCP trade confirmation on by default, per license.
    assert!(s.license_settings(&a.id).await.unwrap().mcp_trade_confirmation);
    let off = tradeterm_store::LicenseSettings {
        mcp_trade_confirmation: false,
    };
    s.set_license_settings(&a.id, &off).await.unwrap();
    assert_eq!(s.license_settings(&a.id).await.unwrap(), off);
    assert!(
        s.license_settings(&b.id).await.unwrap().mcp_trade_confirmation,
        "other license untouched"
    );
    s.set_license_settings(&a.id, &Default::default()).await.unwrap();
    assert!(s.license_settings(&a.id).await.unwrap().mcp_trade_confirmation);
    assert!(matches!(
        s.license_settings("lic_missing").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.set_license_settings("lic_missing", &off).await,
        Err(StoreError::NotFound(_))
    ));

    let (c, _) = s.create_license("Gamma", Tier::Team).await.unwrap();
    let listed: Vec<String> = s.list_licenses().await.unwrap().into_iter().map(|l| l.id).collect();
    assert_eq!(listed, vec![a.id.clone(), b.id.clone(), c.id.clone()], "oldest first");

    // Only the hash of the master key is stored.
    let cells = fx.raw.all_cells().await;
    assert!(
        cells
            .iter()
            .all(|c| !c.contains(a_key.expose()) && !c.contains(&a_key.expose()[8..]))
    );
    assert!(cells.contains(&hash_key(a_key.expose())));
}

async fn license_names_are_validated(fx: Fx) {
    let s = &fx.store;
    assert_invalid(s.create_license("", Tier::Free).await);
    assert_invalid(s.create_license("   ", Tier::Free).await);
    assert_invalid(s.create_license(&"x".repeat(101), Tier::Free).await);
    let (l, _) = s.create_license(&"é".repeat(100), Tier::Free).await.unwrap();
    assert_eq!(l.name.chars().count(), 100);
    assert_eq!(
        s.list_licenses().await.unwrap().len(),
        1,
        "refused creations stored nothing"
    );
}

async fn disabled_license_authenticates_nothing(fx: Fx) {
    let s = &fx.store;
    let (l, master) = s.create_license("Off", Tier::Pro).await.unwrap();
    let (_, term_key) = s.create_terminal(&l.id, "T").await.unwrap();
    let term_key_id = s.terminal_key(term_key.expose()).await.unwrap().unwrap().key_id;
    let (api, api_secret) = s.create_api_key(&l.id, "k").await.unwrap();
    fx.raw.disable_license(&l.id).await;
    assert!(!s.terminal_key_active(&term_key_id).await.unwrap());

    assert_eq!(s.license_by_master_key(master.expose()).await.unwrap(), None);
    assert!(s.terminal_key(term_key.expose()).await.unwrap().is_none());
    assert!(s.api_key(api_secret.expose()).await.unwrap().is_none());
    assert!(!s.api_key_active(&api.id).await.unwrap());
    // Still visible to the admin.
    assert!(s.license(&l.id).await.unwrap().unwrap().disabled);
    assert!(s.list_licenses().await.unwrap()[0].disabled);
}

// ----- terminals -----

async fn terminal_create_and_key_resolution(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t, key) = s.create_terminal(&l.id, "Desk 1").await.unwrap();
    assert!(t.id.starts_with("term_"));
    assert!(key.expose().starts_with(TERMINAL_KEY_PREFIX));
    assert_eq!(key.expose().len(), TERMINAL_KEY_PREFIX.len() + 43);
    assert_eq!(format!("{key:?}"), "Secret(***)");
    assert_eq!((t.license_id.as_str(), t.name.as_str()), (l.id.as_str(), "Desk 1"));
    assert_eq!(
        (t.fingerprint.as_ref(), t.bound_at, t.last_seen, t.info.as_ref()),
        (None, None, None, None)
    );

    let auth = s.terminal_key(key.expose()).await.unwrap().expect("key resolves");
    assert_eq!(auth.terminal, t);
    assert_eq!(auth.license, l);
    assert!(!auth.key_id.is_empty());
    assert!(s.terminal_key("tt_term_nope").await.unwrap().is_none());
    assert!(s.terminal_key(&hash_key(key.expose())).await.unwrap().is_none());

    assert_eq!(s.terminal(&l.id, &t.id).await.unwrap(), Some(t.clone()));
    let (t2, key2) = s.create_terminal(&l.id, "Desk 2").await.unwrap();
    assert_ne!(key, key2);
    let ids: Vec<String> = s
        .list_terminals(&l.id)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, vec![t.id.clone(), t2.id.clone()], "oldest first");
    assert_eq!(s.terminal_key(key2.expose()).await.unwrap().unwrap().terminal.id, t2.id);

    assert_invalid(s.create_terminal(&l.id, "").await);
    assert_invalid(s.create_terminal(&l.id, &"n".repeat(101)).await);

    let cells = fx.raw.all_cells().await;
    assert!(
        cells
            .iter()
            .all(|c| !c.contains(&key.expose()[TERMINAL_KEY_PREFIX.len()..]))
    );
    assert!(cells.contains(&hash_key(key.expose())));
}

async fn terminal_key_rotation(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t, old) = s.create_terminal(&l.id, "T").await.unwrap();
    assert_eq!(s.bind_terminal(&t.id, "fp-1").await.unwrap(), BindOutcome::Bound);

    let old_id = s
        .terminal_key(old.expose())
        .await
        .unwrap()
        .expect("old key works")
        .key_id;
    assert!(s.terminal_key_active(&old_id).await.unwrap());
    let rotated = s.rotate_terminal_key(&l.id, &t.id).await.unwrap();
    let new = rotated.key.clone();
    assert!(new.expose().starts_with(TERMINAL_KEY_PREFIX));
    assert_ne!(old, new);
    assert_eq!(
        rotated.revoked_key_ids,
        vec![old_id.clone()],
        "the revoked key is reported"
    );
    assert!(!s.terminal_key_active(&old_id).await.unwrap(), "old key inactive");
    assert!(s.terminal_key_active(&rotated.key_id).await.unwrap(), "new key active");
    assert!(!s.terminal_key_active("tkey_missing").await.unwrap());
    assert!(s.terminal_key(old.expose()).await.unwrap().is_none(), "old key refused");
    let auth = s.terminal_key(new.expose()).await.unwrap().expect("new key works");
    assert_eq!(auth.key_id, rotated.key_id);
    assert_eq!(auth.terminal.id, t.id);
    assert_eq!(auth.terminal.fingerprint.as_deref(), Some("fp-1"), "binding kept");
    assert_eq!(s.bind_terminal(&t.id, "fp-1").await.unwrap(), BindOutcome::AlreadyBound);

    let newer = s.rotate_terminal_key(&l.id, &t.id).await.unwrap();
    assert_eq!(newer.revoked_key_ids, vec![rotated.key_id.clone()]);
    assert!(s.terminal_key(new.expose()).await.unwrap().is_none());
    assert!(s.terminal_key(newer.key.expose()).await.unwrap().is_some());
    let active = fx
        .raw
        .int(
            "SELECT COUNT(*) FROM terminal_keys WHERE terminal_id = $1 AND revoked_at IS NULL",
            &[Val::Text(&t.id)],
        )
        .await;
    assert_eq!(active, 1);
    assert!(matches!(
        s.rotate_terminal_key(&l.id, "term_missing").await,
        Err(StoreError::NotFound(_))
    ));
}

async fn terminal_binding(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();

    assert_eq!(s.bind_terminal(&t.id, "install-A").await.unwrap(), BindOutcome::Bound);
    let bound = s.terminal(&l.id, &t.id).await.unwrap().unwrap();
    assert_eq!(bound.fingerprint.as_deref(), Some("install-A"));
    assert!(bound.bound_at.is_some());

    assert_eq!(
        s.bind_terminal(&t.id, "install-A").await.unwrap(),
        BindOutcome::AlreadyBound
    );
    assert_eq!(
        s.bind_terminal(&t.id, "install-B").await.unwrap(),
        BindOutcome::Conflict
    );
    let after = s.terminal(&l.id, &t.id).await.unwrap().unwrap();
    assert_eq!(
        after.fingerprint.as_deref(),
        Some("install-A"),
        "a conflict changes nothing"
    );
    assert_eq!(after.bound_at, bound.bound_at);

    assert!(matches!(
        s.bind_terminal("term_missing", "x").await,
        Err(StoreError::NotFound(_))
    ));
    assert_invalid(s.bind_terminal(&t.id, "").await);
}

async fn concurrent_binds_bind_exactly_once(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    for round in 0..5 {
        let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
        let contenders = if round == 0 { 2 } else { 8 };
        let barrier = Arc::new(Barrier::new(contenders));
        let tasks: Vec<_> = (0..contenders)
            .map(|i| {
                let (store, barrier, id) = (fx.store.clone(), Arc::clone(&barrier), t.id.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    (i, store.bind_terminal(&id, &format!("fp-{i}")).await.unwrap())
                })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            let (i, outcome) = task.await.unwrap();
            match outcome {
                BindOutcome::Bound => winners.push(i),
                BindOutcome::Conflict => {}
                BindOutcome::AlreadyBound => panic!("distinct fingerprints cannot be AlreadyBound"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one Bound, got {winners:?}");
        let stored = s.terminal(&l.id, &t.id).await.unwrap().unwrap().fingerprint;
        assert_eq!(
            stored,
            Some(format!("fp-{}", winners[0])),
            "the winner's fingerprint is stored"
        );
    }
}

async fn terminal_info_and_last_seen(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();

    s.update_terminal_info(&t.id, &info(12_345_678)).await.unwrap();
    let got = s.terminal(&l.id, &t.id).await.unwrap().unwrap();
    assert_eq!(got.info, Some(info(12_345_678)));
    let seen = got.last_seen.expect("last_seen set with info");
    assert!(seen >= t.created_at);

    s.touch_terminal(&t.id).await.unwrap();
    let touched = s.terminal(&l.id, &t.id).await.unwrap().unwrap();
    assert!(touched.last_seen.unwrap() >= seen);
    assert_eq!(touched.info, Some(info(12_345_678)), "touch keeps the info");

    // Largest login that fits; one beyond is refused.
    s.update_terminal_info(&t.id, &info(i64::MAX as u64)).await.unwrap();
    assert_eq!(
        s.terminal(&l.id, &t.id).await.unwrap().unwrap().info,
        Some(info(i64::MAX as u64))
    );
    assert_invalid(s.update_terminal_info(&t.id, &info(i64::MAX as u64 + 1)).await);

    assert!(matches!(
        s.update_terminal_info("term_missing", &info(1)).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.touch_terminal("term_missing").await,
        Err(StoreError::NotFound(_))
    ));
}

async fn revoked_credentials_are_listed_since_a_time(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Team).await.unwrap();
    let (kept, _) = s.create_api_key(&l.id, "kept").await.unwrap();
    let (gone, _) = s.create_api_key(&l.id, "gone").await.unwrap();
    let (t, old) = s.create_terminal(&l.id, "T").await.unwrap();
    let old_id = s.terminal_key(old.expose()).await.unwrap().unwrap().key_id;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 1;
    assert!(s.revoke_api_key(&l.id, &gone.id).await.unwrap());
    s.rotate_terminal_key(&l.id, &t.id).await.unwrap();
    let listed = s.revoked_credentials_since(before).await.unwrap();
    let at = |id: &str| listed.iter().find(|(k, _)| k == id).map(|(_, at)| *at);
    assert!(at(&gone.id).is_some_and(|t| t >= before), "{listed:?}");
    assert!(at(&old_id).is_some_and(|t| t >= before), "{listed:?}");
    assert_eq!(at(&kept.id), None, "an active key is not listed");
    let later = s.revoked_credentials_since(i64::MAX).await.unwrap();
    assert!(later.is_empty(), "{later:?}");
}

async fn terminals_are_touched_in_batches(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (other, _) = s.create_terminal(&l.id, "untouched").await.unwrap();
    // More than one statement's worth of ids, one unknown among them.
    let mut ids = Vec::new();
    for i in 0..3 {
        let (t, _) = s.create_terminal(&l.id, &format!("T{i}")).await.unwrap();
        ids.push(t.id);
    }
    let mut many: Vec<String> = (0..1_200).map(|i| format!("term_missing_{i}")).collect();
    many.splice(600..600, ids.iter().cloned());
    assert_eq!(s.touch_terminals(&[]).await.unwrap(), 0);
    assert_eq!(s.touch_terminals(&many).await.unwrap(), 3);
    for id in &ids {
        let t = s.terminal(&l.id, id).await.unwrap().unwrap();
        assert!(t.last_seen.is_some_and(|seen| seen >= t.created_at), "{t:?}");
    }
    let untouched = s.terminal(&l.id, &other.id).await.unwrap().unwrap();
    assert_eq!(untouched.last_seen, None, "only the named terminals are touched");
}

// ----- API keys -----

async fn api_key_format_and_only_hash_stored(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (key, secret) = s.create_api_key(&l.id, "ci").await.unwrap();
    let plain = secret.expose();
    assert!(plain.starts_with(API_KEY_PREFIX));
    let body = &plain[API_KEY_PREFIX.len()..];
    assert_eq!(body.len(), 43);
    assert!(
        body.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "URL-safe"
    );
    assert!(key.id.starts_with("key_"));
    assert_eq!(key.prefix, keys::display_prefix(plain));
    assert_eq!(key.prefix.len(), API_KEY_PREFIX.len() + 4);
    assert_eq!(key.permissions, None);
    assert_eq!((key.revoked_at, key.last_used_at), (None, None));

    // The table holds the SHA-256 and nothing of the plaintext beyond the displayed prefix.
    let hashes = fx
        .raw
        .texts("SELECT key_hash FROM api_keys WHERE id = $1", &[Val::Text(&key.id)])
        .await;
    assert_eq!(hashes, vec![Some(hash_key(plain))]);
    assert_eq!(hash_key(plain).len(), 64);
    for cell in fx.raw.all_cells().await {
        assert!(!cell.contains(plain), "plaintext key stored");
        assert!(!cell.contains(&body[4..]), "secret part of the key stored");
    }
    if let Some(path) = &fx.sqlite_path {
        // Nothing in the database files either (WAL included).
        for file in [path.clone(), path.with_extension("db-wal")] {
            if let Ok(bytes) = std::fs::read(&file) {
                assert!(
                    !bytes.windows(body.len()).any(|w| w == body.as_bytes()),
                    "plaintext in {}",
                    file.display()
                );
            }
        }
    }
    let perms = fx
        .raw
        .texts("SELECT permissions FROM api_keys WHERE id = $1", &[Val::Text(&key.id)])
        .await;
    assert_eq!(perms, vec![None], "permissions is NULL by default");
}

async fn api_key_lifecycle(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Team).await.unwrap();
    let (key, secret) = s.create_api_key(&l.id, "deploy").await.unwrap();

    let auth = s.api_key(secret.expose()).await.unwrap().expect("resolves");
    assert_eq!(auth.key, key);
    assert_eq!(auth.license, l);
    assert_eq!(auth.license.tier, Tier::Team);
    assert!(s.api_key("svc_api_nope").await.unwrap().is_none());
    assert!(s.api_key(&hash_key(secret.expose())).await.unwrap().is_none());
    assert!(s.api_key_active(&key.id).await.unwrap());
    assert!(!s.api_key_active("key_missing").await.unwrap());

    s.touch_api_key(&key.id).await.unwrap();
    let used = s.list_api_keys(&l.id).await.unwrap()[0]
        .last_used_at
        .expect("last_used_at set");
    assert!(used >= key.created_at);
    assert!(matches!(
        s.touch_api_key("key_missing").await,
        Err(StoreError::NotFound(_))
    ));

    // Tier changes show on resolution.
    s.set_license_tier(&l.id, Tier::Free).await.unwrap();
    assert_eq!(
        s.api_key(secret.expose()).await.unwrap().unwrap().license.tier,
        Tier::Free
    );

    assert!(s.revoke_api_key(&l.id, &key.id).await.unwrap());
    assert!(!s.revoke_api_key(&l.id, &key.id).await.unwrap(), "already revoked");
    assert!(
        s.api_key(secret.expose()).await.unwrap().is_none(),
        "revoked key does not resolve"
    );
    assert!(!s.api_key_active(&key.id).await.unwrap());
    let listed = s.list_api_keys(&l.id).await.unwrap();
    assert_eq!(listed.len(), 1, "revoked keys stay listed");
    assert!(listed[0].revoked_at.is_some());
}

async fn api_key_limit(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..MAX_ACTIVE_API_KEYS {
        ids.push(s.create_api_key(&l.id, &format!("k{i}")).await.unwrap().0.id);
    }
    assert!(matches!(
        s.create_api_key(&l.id, "sixth").await,
        Err(StoreError::ApiKeyLimit)
    ));
    let labels: Vec<String> = s
        .list_api_keys(&l.id)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.label)
        .collect();
    assert_eq!(
        labels,
        vec!["k4", "k3", "k2", "k1", "k0"],
        "newest first, the refused one absent"
    );

    assert!(s.revoke_api_key(&l.id, &ids[2]).await.unwrap());
    let (again, _) = s.create_api_key(&l.id, "replacement").await.unwrap();
    assert!(matches!(
        s.create_api_key(&l.id, "seventh").await,
        Err(StoreError::ApiKeyLimit)
    ));
    assert_eq!(s.list_api_keys(&l.id).await.unwrap()[0].id, again.id);

    // The limit is per license.
    let (other, _) = s.create_license("Other", Tier::Pro).await.unwrap();
    s.create_api_key(&other.id, "mine").await.unwrap();
}

async fn concurrent_api_key_creation_respects_limit(fx: Fx) {
    let (l, _) = fx.store.create_license("L", Tier::Pro).await.unwrap();
    for round in 0..2 {
        let barrier = Arc::new(Barrier::new(10));
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let (store, barrier, id) = (fx.store.clone(), Arc::clone(&barrier), l.id.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.create_api_key(&id, &format!("r{round}-{i}")).await
                })
            })
            .collect();
        let (mut created, mut refused) = (0, 0);
        for task in tasks {
            match task.await.unwrap() {
                Ok(_) => created += 1,
                Err(StoreError::ApiKeyLimit) => refused += 1,
                Err(e) => panic!("unexpected error under concurrency: {e}"),
            }
        }
        assert_eq!(
            (created, refused),
            (MAX_ACTIVE_API_KEYS, 10 - MAX_ACTIVE_API_KEYS),
            "round {round}"
        );
        let active = fx
            .raw
            .int(
                "SELECT COUNT(*) FROM api_keys WHERE license_id = $1 AND revoked_at IS NULL",
                &[Val::Text(&l.id)],
            )
            .await;
        assert_eq!(active, MAX_ACTIVE_API_KEYS as i64);
        // Free every slot for the next round.
        for k in fx.store.list_api_keys(&l.id).await.unwrap() {
            fx.store.revoke_api_key(&l.id, &k.id).await.unwrap();
        }
    }
}

async fn api_key_labels_are_validated(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    assert_invalid(s.create_api_key(&l.id, "").await);
    assert_invalid(s.create_api_key(&l.id, " \t").await);
    assert_invalid(s.create_api_key(&l.id, &"x".repeat(101)).await);
    s.create_api_key(&l.id, &"x".repeat(100)).await.unwrap();
    s.create_api_key(&l.id, "y").await.unwrap();
    assert_eq!(s.list_api_keys(&l.id).await.unwrap().len(), 2);
}

// ----- journal -----

async fn journal_crud_and_attribution(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t1, _) = s.create_terminal(&l.id, "T1").await.unwrap();
    let (t2, _) = s.create_terminal(&l.id, "T2").await.unwrap();

    let body = json!({"note": "entered long EURUSD", "tags": ["breakout"], "r": 1.5});
    let attributed = s.create_journal_entry(&l.id, Some(&t1.id), &body).await.unwrap();
    assert!(attributed.id.starts_with("jrn_"));
    assert_eq!(attributed.terminal_id.as_deref(), Some(t1.id.as_str()));
    assert_eq!(attributed.body, body);
    assert_eq!(attributed.created_at, attributed.updated_at);
    let unassigned = s.create_journal_entry(&l.id, None, &json!("plain text")).await.unwrap();
    assert_eq!(unassigned.terminal_id, None);
    // Attribution is a label: an id that is no terminal (any more) does not fail the write.
    let loose = s
        .create_journal_entry(&l.id, Some("term_gone"), &json!(1))
        .await
        .unwrap();
    assert_eq!(loose.terminal_id.as_deref(), Some("term_gone"));

    assert_eq!(
        s.journal_entry(&l.id, &attributed.id).await.unwrap(),
        Some(attributed.clone())
    );
    assert_eq!(s.journal_entry(&l.id, "jrn_missing").await.unwrap(), None);

    // Body only: attribution kept.
    let v2 = s
        .update_journal_entry(&l.id, &attributed.id, None, &json!({"note": "v2"}))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v2.body, json!({"note": "v2"}));
    assert_eq!(v2.terminal_id.as_deref(), Some(t1.id.as_str()));
    assert_eq!(v2.created_at, attributed.created_at);
    assert!(v2.updated_at >= attributed.updated_at);
    // New attribution.
    let v3 = s
        .update_journal_entry(&l.id, &attributed.id, Some(Some(&t2.id)), &json!(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((v3.terminal_id.as_deref(), &v3.body), (Some(t2.id.as_str()), &json!(3)));
    // Unassign.
    let v4 = s
        .update_journal_entry(&l.id, &attributed.id, Some(None), &json!(4))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v4.terminal_id, None);
    assert_eq!(s.journal_entry(&l.id, &attributed.id).await.unwrap(), Some(v4));
    assert_eq!(
        s.update_journal_entry(&l.id, "jrn_missing", None, &json!(0))
            .await
            .unwrap(),
        None
    );

    assert!(s.delete_journal_entry(&l.id, &attributed.id).await.unwrap());
    assert!(!s.delete_journal_entry(&l.id, &attributed.id).await.unwrap());
    assert_eq!(s.journal_entry(&l.id, &attributed.id).await.unwrap(), None);
    let left = s.list_journal(&l.id, &JournalFilter::default()).await.unwrap();
    assert_eq!(left.len(), 2);
}

async fn journal_filters_and_order(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (ta, _) = s.create_terminal(&l.id, "A").await.unwrap();
    let (tb, _) = s.create_terminal(&l.id, "B").await.unwrap();
    // (name, terminal, created_at); "e3b" shares e3's millisecond and was written later.
    let plan: [(&str, Option<&str>, i64); 7] = [
        ("e1", Some(&ta.id), 1_000),
        ("e2", None, 2_000),
        ("e3", Some(&tb.id), 3_000),
        ("e3b", Some(&ta.id), 3_000),
        ("e4", Some(&ta.id), 4_000),
        ("e5", None, 5_000),
        ("e6", Some(&tb.id), 6_000),
    ];
    for (name, terminal, at) in plan {
        let e = s
            .create_journal_entry(&l.id, terminal, &json!({ "n": name }))
            .await
            .unwrap();
        set_created_at(&fx, &e.id, at).await;
    }
    let names = |filter: JournalFilter| {
        let fx = Arc::clone(&fx);
        let id = l.id.clone();
        async move {
            fx.store
                .list_journal(&id, &filter)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.body["n"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    let all = JournalFilter::default();
    assert_eq!(
        names(all.clone()).await,
        ["e6", "e5", "e4", "e3b", "e3", "e2", "e1"],
        "newest first"
    );
    let unassigned = JournalFilter {
        terminal: TerminalFilter::Unassigned,
        ..all.clone()
    };
    assert_eq!(names(unassigned).await, ["e5", "e2"]);
    let only_a = JournalFilter {
        terminal: TerminalFilter::Terminal(ta.id.clone()),
        ..all.clone()
    };
    assert_eq!(names(only_a.clone()).await, ["e4", "e3b", "e1"]);
    let only_b = JournalFilter {
        terminal: TerminalFilter::Terminal(tb.id.clone()),
        ..all.clone()
    };
    assert_eq!(names(only_b).await, ["e6", "e3"]);
    let none = JournalFilter {
        terminal: TerminalFilter::Terminal("term_other".into()),
        ..all.clone()
    };
    assert!(names(none).await.is_empty());

    // since is inclusive, until exclusive.
    assert_eq!(
        names(JournalFilter {
            since: Some(4_000),
            ..all.clone()
        })
        .await,
        ["e6", "e5", "e4"]
    );
    assert_eq!(
        names(JournalFilter {
            until: Some(3_000),
            ..all.clone()
        })
        .await,
        ["e2", "e1"]
    );
    let window = JournalFilter {
        since: Some(2_000),
        until: Some(5_000),
        ..all.clone()
    };
    assert_eq!(names(window.clone()).await, ["e4", "e3b", "e3", "e2"]);
    assert_eq!(
        names(JournalFilter {
            terminal: TerminalFilter::Terminal(ta.id.clone()),
            ..window
        })
        .await,
        ["e4", "e3b"]
    );

    // Paging.
    assert_eq!(
        names(JournalFilter {
            limit: 2,
            ..all.clone()
        })
        .await,
        ["e6", "e5"]
    );
    assert_eq!(
        names(JournalFilter {
            limit: 2,
            offset: 2,
            ..all.clone()
        })
        .await,
        ["e4", "e3b"]
    );
    assert_eq!(
        names(JournalFilter {
            limit: 3,
            offset: 5,
            ..all.clone()
        })
        .await,
        ["e2", "e1"]
    );
    assert!(
        names(JournalFilter {
            offset: 7,
            ..all.clone()
        })
        .await
        .is_empty()
    );
    assert_eq!(
        names(JournalFilter {
            limit: 1,
            offset: 1,
            ..only_a
        })
        .await,
        ["e3b"]
    );

    // limit 0 means the default page of 100.
    for i in 0..100 {
        s.create_journal_entry(&l.id, None, &json!({ "n": format!("bulk{i}") }))
            .await
            .unwrap();
    }
    assert_eq!(names(all.clone()).await.len(), 100);
    assert_eq!(names(JournalFilter { limit: 1000, ..all }).await.len(), 107);
}

async fn journal_body_limit(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    // A JSON string serializes with its two quotes.
    let largest = json!("x".repeat(64 * 1024 - 2));
    let too_large = json!("x".repeat(64 * 1024 - 1));
    let e = s.create_journal_entry(&l.id, None, &largest).await.unwrap();
    assert_eq!(s.journal_entry(&l.id, &e.id).await.unwrap().unwrap().body, largest);
    assert_invalid(s.create_journal_entry(&l.id, None, &too_large).await);
    assert_invalid(s.update_journal_entry(&l.id, &e.id, None, &too_large).await);
    assert_eq!(
        s.journal_entry(&l.id, &e.id).await.unwrap().unwrap().body,
        largest,
        "refused update changed nothing"
    );
}

// ----- isolation between licenses -----

/// Every operation that takes a license id, called with license B's id on
/// license A's records, finds nothing and changes nothing.
async fn cross_license_matrix(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    let (a_term, _) = s.create_terminal(&a.id, "A's terminal").await.unwrap();
    let (a_key, _) = s.create_api_key(&a.id, "A's key").await.unwrap();
    let a_entry = s
        .create_journal_entry(&a.id, Some(&a_term.id), &json!({"owner": "A"}))
        .await
        .unwrap();
    let a_loose = s
        .create_journal_entry(&a.id, None, &json!({"owner": "A", "loose": true}))
        .await
        .unwrap();
    assert_eq!(
        s.idempotency_begin(&a.id, "idem-1", "h1").await.unwrap(),
        IdempotencyBegin::Started
    );
    let before = fx.raw.snapshot().await;

    // Reads.
    assert_eq!(s.terminal(&b.id, &a_term.id).await.unwrap(), None);
    assert!(s.list_terminals(&b.id).await.unwrap().is_empty());
    assert!(s.list_api_keys(&b.id).await.unwrap().is_empty());
    for entry in [&a_entry, &a_loose] {
        assert_eq!(s.journal_entry(&b.id, &entry.id).await.unwrap(), None);
    }
    for terminal in [
        TerminalFilter::All,
        TerminalFilter::Unassigned,
        TerminalFilter::Terminal(a_term.id.clone()),
    ] {
        let filter = JournalFilter {
            terminal,
            limit: 1000,
            ..JournalFilter::default()
        };
        assert!(s.list_journal(&b.id, &filter).await.unwrap().is_empty());
    }
    // Writes.
    assert!(matches!(
        s.rotate_terminal_key(&b.id, &a_term.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(!s.revoke_api_key(&b.id, &a_key.id).await.unwrap());
    for entry in [&a_entry, &a_loose] {
        for attribution in [None, Some(None), Some(Some(a_term.id.as_str()))] {
            assert_eq!(
                s.update_journal_entry(&b.id, &entry.id, attribution, &json!("B"))
                    .await
                    .unwrap(),
                None
            );
        }
        assert!(!s.delete_journal_entry(&b.id, &entry.id).await.unwrap());
    }
    assert!(matches!(
        s.idempotency_finish(&b.id, "idem-1", 200, &json!("B")).await,
        Err(StoreError::NotFound(_))
    ));

    assert_eq!(fx.raw.snapshot().await, before, "license B's calls changed nothing");
    // And A still sees all of its own.
    assert!(s.api_key_active(&a_key.id).await.unwrap());
    assert_eq!(s.journal_entry(&a.id, &a_entry.id).await.unwrap(), Some(a_entry));
    assert_eq!(s.list_terminals(&a.id).await.unwrap(), vec![a_term]);
}

// ----- idempotency -----

async fn idempotency_flow(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    assert_eq!(
        s.idempotency_begin(&l.id, "k1", "hash-a").await.unwrap(),
        IdempotencyBegin::Started
    );
    assert_eq!(
        s.idempotency_begin(&l.id, "k1", "hash-a").await.unwrap(),
        IdempotencyBegin::InProgress
    );
    assert_eq!(
        s.idempotency_begin(&l.id, "k1", "hash-b").await.unwrap(),
        IdempotencyBegin::Mismatch
    );

    let response = json!({"order": 42, "status": "filled"});
    s.idempotency_finish(&l.id, "k1", 201, &response).await.unwrap();
    let done = IdempotencyBegin::Done {
        status: 201,
        response: response.clone(),
    };
    assert_eq!(s.idempotency_begin(&l.id, "k1", "hash-a").await.unwrap(), done);
    assert_eq!(
        s.idempotency_begin(&l.id, "k1", "hash-b").await.unwrap(),
        IdempotencyBegin::Mismatch
    );

    // The first outcome stays.
    s.idempotency_finish(&l.id, "k1", 500, &json!("late")).await.unwrap();
    assert_eq!(s.idempotency_begin(&l.id, "k1", "hash-a").await.unwrap(), done);

    assert!(matches!(
        s.idempotency_finish(&l.id, "never-begun", 200, &json!(null)).await,
        Err(StoreError::NotFound(_))
    ));
    assert_invalid(s.idempotency_begin(&l.id, "", "h").await);
    assert_invalid(s.idempotency_begin(&l.id, &"k".repeat(256), "h").await);

    // Retention.
    let purged = fx
        .store
        .purge_idempotency(chrono::Utc::now().timestamp_millis() + 1)
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert_eq!(
        s.idempotency_begin(&l.id, "k1", "hash-b").await.unwrap(),
        IdempotencyBegin::Started
    );
}

async fn abandoned_idempotency_claims_are_resumed_once(fx: Fx) {
    let s = fx.store.clone();
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (other, _) = s.create_license("M", Tier::Pro).await.unwrap();
    let before_claim = chrono::Utc::now().timestamp_millis() - 1;
    assert_eq!(
        s.idempotency_begin(&l.id, "k", "h").await.unwrap(),
        IdempotencyBegin::Started
    );
    // A claim newer than the limit is not taken over.
    assert!(!s.idempotency_resume(&l.id, "k", "h", before_claim).await.unwrap());
    let later = chrono::Utc::now().timestamp_millis() + 10;
    // Not with another request, another license or an unknown key.
    assert!(!s.idempotency_resume(&l.id, "k", "other-hash", later).await.unwrap());
    assert!(!s.idempotency_resume(&other.id, "k", "h", later).await.unwrap());
    assert!(!s.idempotency_resume(&l.id, "unknown", "h", later).await.unwrap());
    // Concurrent takers: exactly one wins.
    let takers: Vec<_> = (0..8)
        .map(|_| {
            let s = s.clone();
            let id = l.id.clone();
            tokio::spawn(async move { s.idempotency_resume(&id, "k", "h", later).await.unwrap() })
        })
        .collect();
    let mut won = 0;
    for t in takers {
        won += usize::from(t.await.unwrap());
    }
    assert_eq!(won, 1);
    // The claim time restarted: not stale for the same limit any more.
    assert!(!s.idempotency_resume(&l.id, "k", "h", later).await.unwrap());
    assert_eq!(
        s.idempotency_begin(&l.id, "k", "h").await.unwrap(),
        IdempotencyBegin::InProgress
    );
    // A finished record is never taken over.
    s.idempotency_finish(&l.id, "k", 200, &json!("first")).await.unwrap();
    assert!(!s.idempotency_resume(&l.id, "k", "h", i64::MAX).await.unwrap());
    assert_eq!(
        s.idempotency_begin(&l.id, "k", "h").await.unwrap(),
        IdempotencyBegin::Done {
            status: 200,
            response: json!("first")
        }
    );
    assert_invalid(s.idempotency_resume(&l.id, "", "h", later).await);
    // Release drops only unfinished claims, and only the license's own.
    s.idempotency_release(&l.id, "k").await.unwrap();
    assert!(matches!(
        s.idempotency_begin(&l.id, "k", "h").await.unwrap(),
        IdempotencyBegin::Done { .. }
    ));
    assert_eq!(
        s.idempotency_begin(&l.id, "k2", "h").await.unwrap(),
        IdempotencyBegin::Started
    );
    s.idempotency_release(&other.id, "k2").await.unwrap();
    assert_eq!(
        s.idempotency_begin(&l.id, "k2", "h").await.unwrap(),
        IdempotencyBegin::InProgress
    );
    s.idempotency_release(&l.id, "k2").await.unwrap();
    assert_eq!(
        s.idempotency_begin(&l.id, "k2", "h").await.unwrap(),
        IdempotencyBegin::Started
    );
    s.idempotency_release(&l.id, "never-used").await.unwrap();
}

async fn concurrent_idempotency_begin_starts_once(fx: Fx) {
    let (l, _) = fx.store.create_license("L", Tier::Pro).await.unwrap();
    for round in 0..3 {
        let key = format!("order-{round}");
        let barrier = Arc::new(Barrier::new(10));
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let (store, barrier, id, key) = (fx.store.clone(), Arc::clone(&barrier), l.id.clone(), key.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.idempotency_begin(&id, &key, "same-request").await.unwrap()
                })
            })
            .collect();
        let mut started = 0;
        for task in tasks {
            match task.await.unwrap() {
                IdempotencyBegin::Started => started += 1,
                IdempotencyBegin::InProgress => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(started, 1, "round {round}");
    }
}

async fn idempotency_keys_are_per_license(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    assert_eq!(
        s.idempotency_begin(&a.id, "shared", "ha").await.unwrap(),
        IdempotencyBegin::Started
    );
    assert_eq!(
        s.idempotency_begin(&b.id, "shared", "hb").await.unwrap(),
        IdempotencyBegin::Started
    );
    s.idempotency_finish(&a.id, "shared", 200, &json!("A")).await.unwrap();
    assert_eq!(
        s.idempotency_begin(&b.id, "shared", "hb").await.unwrap(),
        IdempotencyBegin::InProgress
    );
    s.idempotency_finish(&b.id, "shared", 409, &json!("B")).await.unwrap();
    assert_eq!(
        s.idempotency_begin(&a.id, "shared", "ha").await.unwrap(),
        IdempotencyBegin::Done {
            status: 200,
            response: json!("A")
        }
    );
    assert_eq!(
        s.idempotency_begin(&b.id, "shared", "hb").await.unwrap(),
        IdempotencyBegin::Done {
            status: 409,
            response: json!("B")
        }
    );
}

// ----- schema -----

async fn migrations_are_idempotent(fx: Fx) {
    let (l, master) = fx.store.create_license("Persisted", Tier::Pro).await.unwrap();
    let tables = fx.raw.tables().await;
    assert_eq!(
        tables,
        [
            "alert_events",
            "alert_rules",
            "api_keys",
            "audit_chains",
            "audit_log",
            "dashboard_sessions",
            "equity_guards",
            "executions",
            "idempotency",
            "journal_entries",
            "licenses",
            "managed_orders",
            "news_guards",
            "prop_firm_rules",
            "state_snapshots",
            "terminal_keys",
            "terminals",
            "webhook_attempts",
            "webhook_deliveries",
            "webhook_endpoints"
        ]
    );
    let applied = fx.raw.int("SELECT COUNT(*) FROM _sqlx_migrations", &[]).await;

    for _ in 0..2 {
        let again = fx.reopen().await;
        assert_eq!(
            again.license_by_master_key(master.expose()).await.unwrap(),
            Some(l.clone()),
            "data kept"
        );
        again.close().await;
    }
    assert_eq!(
        fx.raw.int("SELECT COUNT(*) FROM _sqlx_migrations", &[]).await,
        applied,
        "nothing re-applied"
    );
    assert_eq!(fx.raw.tables().await, tables);

    if fx.kind == Kind::Sqlite {
        let mode = fx.raw.texts("PRAGMA journal_mode", &[]).await;
        assert_eq!(mode, vec![Some("wal".to_owned())], "the database file is in WAL mode");
    }
}

/// Writes naming a missing license are refused as NotFound (foreign keys are enforced).
async fn unknown_parents_are_not_found(fx: Fx) {
    let s = &fx.store;
    assert!(matches!(
        s.create_terminal("lic_missing", "T").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.create_api_key("lic_missing", "k").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.create_journal_entry("lic_missing", None, &json!(1)).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.set_prop_firm_rules("lic_missing", "term_missing", &json!({})).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.set_news_guard("lic_missing", &json!({})).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.set_equity_guard("lic_missing", "term_missing", "user", &json!({}))
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.swap_state_snapshot("lic_missing", "key_x", "term_missing", &json!({}), 1)
            .await,
        Err(StoreError::NotFound(_))
    ));
    let counts: HashSet<i64> = row_counts(&fx).await;
    assert_eq!(counts, HashSet::from([0]), "nothing was written");
}

async fn row_counts(fx: &Fixture) -> HashSet<i64> {
    let mut counts = HashSet::new();
    for table in [
        "terminals",
        "terminal_keys",
        "api_keys",
        "journal_entries",
        "prop_firm_rules",
        "news_guards",
        "state_snapshots",
        "equity_guards",
    ] {
        counts.insert(fx.raw.int(&format!("SELECT COUNT(*) FROM {table}"), &[]).await);
    }
    counts
}

// ----- prop-firm rules -----

async fn prop_firm_rules_set_get_replace_remove(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t1, _) = s.create_terminal(&l.id, "T1").await.unwrap();
    let (t2, _) = s.create_terminal(&l.id, "T2").await.unwrap();
    assert_eq!(s.prop_firm_rules(&l.id, &t1.id).await.unwrap(), None);

    let v1 = json!({"initial_balance": 100000.0, "max_daily_loss_percent": 5.0});
    let set = s.set_prop_firm_rules(&l.id, &t1.id, &v1).await.unwrap();
    assert_eq!(
        (set.license_id.as_str(), set.terminal_id.as_str()),
        (l.id.as_str(), t1.id.as_str())
    );
    assert_eq!(set.rules, v1);
    assert_eq!(set.high_water_mark, None);
    assert_eq!(set.created_at, set.updated_at);
    assert_eq!(s.prop_firm_rules(&l.id, &t1.id).await.unwrap(), Some(set.clone()));
    // Per terminal: the other terminal has none.
    assert_eq!(s.prop_firm_rules(&l.id, &t2.id).await.unwrap(), None);

    // Replace: one record, new rules, created_at kept, the mark cleared.
    assert_eq!(
        s.raise_prop_firm_high_water_mark(&l.id, &t1.id, 101_000.5)
            .await
            .unwrap(),
        Some(101_000.5)
    );
    let v2 = json!({"initial_balance": 50000.0, "max_loss_percent": 8.0});
    let replaced = s.set_prop_firm_rules(&l.id, &t1.id, &v2).await.unwrap();
    assert_eq!(replaced.rules, v2);
    assert_eq!(replaced.created_at, set.created_at);
    assert!(replaced.updated_at >= set.updated_at);
    assert_eq!(replaced.high_water_mark, None);
    assert_eq!(fx.raw.int("SELECT COUNT(*) FROM prop_firm_rules", &[]).await, 1);

    // Oversized rules are refused and change nothing.
    let huge = json!({ "x": "a".repeat(20_000) });
    assert_invalid(s.set_prop_firm_rules(&l.id, &t1.id, &huge).await);
    assert_eq!(s.prop_firm_rules(&l.id, &t1.id).await.unwrap().unwrap().rules, v2);
    // An unknown terminal is not found.
    assert!(matches!(
        s.set_prop_firm_rules(&l.id, "term_missing", &v1).await,
        Err(StoreError::NotFound(_))
    ));

    assert!(s.remove_prop_firm_rules(&l.id, &t1.id).await.unwrap());
    assert!(!s.remove_prop_firm_rules(&l.id, &t1.id).await.unwrap());
    assert_eq!(s.prop_firm_rules(&l.id, &t1.id).await.unwrap(), None);
    assert_eq!(
        s.raise_prop_firm_high_water_mark(&l.id, &t1.id, 1.0).await.unwrap(),
        None
    );
}

async fn prop_firm_high_water_mark_only_rises(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
    s.set_prop_firm_rules(&l.id, &t.id, &json!({"a": 1})).await.unwrap();
    for (value, stored) in [(100.0, 100.0), (90.0, 100.0), (100.25, 100.25), (-5.0, 100.25)] {
        assert_eq!(
            s.raise_prop_firm_high_water_mark(&l.id, &t.id, value).await.unwrap(),
            Some(stored)
        );
    }
    assert_invalid(s.raise_prop_firm_high_water_mark(&l.id, &t.id, f64::NAN).await);
    assert_eq!(
        s.prop_firm_rules(&l.id, &t.id).await.unwrap().unwrap().high_water_mark,
        Some(100.25)
    );
}

async fn prop_firm_rules_are_per_license(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    let (a_term, _) = s.create_terminal(&a.id, "TA").await.unwrap();
    let (b_term, _) = s.create_terminal(&b.id, "TB").await.unwrap();
    let a_rules = json!({"owner": "A"});
    s.set_prop_firm_rules(&a.id, &a_term.id, &a_rules).await.unwrap();
    s.raise_prop_firm_high_water_mark(&a.id, &a_term.id, 10.0)
        .await
        .unwrap();
    let a_record = s.prop_firm_rules(&a.id, &a_term.id).await.unwrap().unwrap();
    assert_eq!(a_record.high_water_mark, Some(10.0));

    // B cannot read, set, raise or remove A's rule set through A's terminal id.
    assert_eq!(s.prop_firm_rules(&b.id, &a_term.id).await.unwrap(), None);
    assert!(matches!(
        s.set_prop_firm_rules(&b.id, &a_term.id, &json!({"owner": "B"})).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        s.raise_prop_firm_high_water_mark(&b.id, &a_term.id, 1e9).await.unwrap(),
        None
    );
    assert!(!s.remove_prop_firm_rules(&b.id, &a_term.id).await.unwrap());
    // Nor A through B's terminal.
    assert!(matches!(
        s.set_prop_firm_rules(&a.id, &b_term.id, &a_rules).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(s.prop_firm_rules(&a.id, &b_term.id).await.unwrap(), None);
    // A's record is untouched.
    assert_eq!(s.prop_firm_rules(&a.id, &a_term.id).await.unwrap(), Some(a_record));
    assert_eq!(fx.raw.int("SELECT COUNT(*) FROM prop_firm_rules", &[]).await, 1);
}

// ----- news guard and state snapshots -----

async fn news_guard_set_get_replace_remove_per_license(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    assert_eq!(s.news_guard(&a.id).await.unwrap(), None);
    let set = s.set_news_guard(&a.id, &json!({"currencies": ["USD"]})).await.unwrap();
    assert_eq!(set.config, json!({"currencies": ["USD"]}));
    assert_eq!(set.created_at, set.updated_at);
    assert_eq!(s.news_guard(&a.id).await.unwrap(), Some(set.clone()));
    assert_eq!(s.news_guard(&b.id).await.unwrap(), None, "per license");
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let replaced = s.set_news_guard(&a.id, &json!({"currencies": ["EUR"]})).await.unwrap();
    assert_eq!(replaced.created_at, set.created_at, "replacing keeps created_at");
    assert!(replaced.updated_at > set.updated_at);
    assert_eq!(fx.raw.int("SELECT COUNT(*) FROM news_guards", &[]).await, 1);
    let huge = json!({ "x": "y".repeat(20_000) });
    assert_invalid(s.set_news_guard(&a.id, &huge).await);
    assert!(!s.remove_news_guard(&b.id).await.unwrap(), "B cannot remove A's guard");
    assert!(s.remove_news_guard(&a.id).await.unwrap());
    assert!(!s.remove_news_guard(&a.id).await.unwrap());
    assert_eq!(s.news_guard(&a.id).await.unwrap(), None);
    let again = s.set_news_guard(&a.id, &json!({"currencies": ["USD"]})).await.unwrap();
    // The watcher's list: every enabled license's guard, none of a disabled one.
    s.set_news_guard(&b.id, &json!({"currencies": ["JPY"]})).await.unwrap();
    let all = s.all_news_guards().await.unwrap();
    let mut ids: Vec<&str> = all.iter().map(|g| g.license_id.as_str()).collect();
    ids.sort_unstable();
    let mut want = vec![a.id.as_str(), b.id.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want);
    assert_eq!(all.iter().find(|g| g.license_id == a.id), Some(&again));
    fx.raw.disable_license(&b.id).await;
    let all = s.all_news_guards().await.unwrap();
    assert_eq!(
        all.iter().map(|g| g.license_id.as_str()).collect::<Vec<_>>(),
        [a.id.as_str()]
    );
}

async fn state_snapshots_swap_per_caller_and_terminal(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    let (t1, _) = s.create_terminal(&a.id, "T1").await.unwrap();
    let (t2, _) = s.create_terminal(&a.id, "T2").await.unwrap();
    assert_eq!(
        s.swap_state_snapshot(&a.id, "key_1", &t1.id, &json!({"v": 1}), 10)
            .await
            .unwrap(),
        None
    );
    let before = s
        .swap_state_snapshot(&a.id, "key_1", &t1.id, &json!({"v": 2}), 20)
        .await
        .unwrap();
    assert_eq!(
        before,
        Some(StateSnapshot {
            snapshot: json!({"v": 1}),
            taken_at: 10
        })
    );
    // Another caller, another terminal: their own histories.
    assert_eq!(
        s.swap_state_snapshot(&a.id, "key_2", &t1.id, &json!({"v": 9}), 30)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        s.swap_state_snapshot(&a.id, "key_1", &t2.id, &json!({"v": 9}), 30)
            .await
            .unwrap(),
        None
    );
    let before = s
        .swap_state_snapshot(&a.id, "key_1", &t1.id, &json!({"v": 3}), 40)
        .await
        .unwrap();
    assert_eq!(before.map(|b| (b.snapshot, b.taken_at)), Some((json!({"v": 2}), 20)));
    // Another license cannot reach the terminal.
    assert!(matches!(
        s.swap_state_snapshot(&b.id, "key_1", &t1.id, &json!({}), 50).await,
        Err(StoreError::NotFound(_))
    ));
    assert_invalid(s.swap_state_snapshot(&a.id, "", &t1.id, &json!({}), 50).await);
    assert_eq!(fx.raw.int("SELECT COUNT(*) FROM state_snapshots", &[]).await, 3);
}

// ----- equity guards -----

async fn equity_guards_set_update_remove_per_license(fx: Fx) {
    let s = &fx.store;
    let (a, _) = s.create_license("A", Tier::Pro).await.unwrap();
    let (b, _) = s.create_license("B", Tier::Pro).await.unwrap();
    let (t1, _) = s.create_terminal(&a.id, "T1").await.unwrap();
    let (t2, _) = s.create_terminal(&a.id, "T2").await.unwrap();
    assert!(s.equity_guards(&a.id, &t1.id).await.unwrap().is_empty());
    assert!(s.guarded_terminals().await.unwrap().is_empty());

    let rules = json!({"daily_loss": {"type": "percent", "percent": 5.0}});
    let user = s.set_equity_guard(&a.id, &t1.id, "user", &rules).await.unwrap();
    assert_eq!(
        (user.source.as_str(), &user.rules, &user.state, user.created_at),
        ("user", &rules, &json!({}), user.updated_at)
    );
    let pf = s
        .set_equity_guard(&a.id, &t1.id, "prop_firm", &json!({"equity_floor": 9000.0}))
        .await
        .unwrap();
    // Both sources side by side, ordered by source.
    let both = s.equity_guards(&a.id, &t1.id).await.unwrap();
    assert_eq!(
        both.iter().map(|g| g.source.as_str()).collect::<Vec<_>>(),
        ["prop_firm", "user"]
    );
    assert_eq!(both[0], pf);
    assert!(s.equity_guards(&a.id, &t2.id).await.unwrap().is_empty(), "per terminal");

    // The state survives a reopen (restart) with its breach record.
    let state = json!({"high_water_mark": 10500.0, "breaches": [{"rule": "daily_loss", "time": 5, "equity": 9400.0}]});
    let v = s
        .update_equity_guard_state(&a.id, &t1.id, "user", user.version, &state)
        .await
        .unwrap()
        .expect("the version matched");
    assert_eq!(v, user.version + 1);
    let again = fx.reopen().await;
    let stored = again.equity_guards(&a.id, &t1.id).await.unwrap();
    assert_eq!((&stored[1].state, stored[1].version), (&state, v));
    again.close().await;

    // Replacing starts afresh (state cleared, version still rising, created_at kept).
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let replaced = s
        .set_equity_guard(&a.id, &t1.id, "user", &json!({"equity_floor": 1.0}))
        .await
        .unwrap();
    assert_eq!(replaced.state, json!({}));
    assert!(replaced.version > v);
    assert_eq!(replaced.created_at, user.created_at);
    assert!(replaced.updated_at > user.updated_at);

    // Another license reaches nothing of A's.
    assert!(s.equity_guards(&b.id, &t1.id).await.unwrap().is_empty());
    assert!(matches!(
        s.set_equity_guard(&b.id, &t1.id, "user", &rules).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        s.update_equity_guard_state(&b.id, &t1.id, "user", replaced.version, &json!({}))
            .await
            .unwrap(),
        None
    );
    assert!(!s.remove_equity_guard(&b.id, &t1.id, "user").await.unwrap());
    assert_eq!(
        s.guarded_terminals().await.unwrap(),
        vec![(a.id.clone(), t1.id.clone())]
    );

    // Validation: sizes and sources.
    assert_invalid(s.set_equity_guard(&a.id, &t1.id, "User!", &rules).await);
    assert_invalid(
        s.set_equity_guard(&a.id, &t1.id, "user", &json!({"x": "y".repeat(20_000)}))
            .await,
    );
    assert_invalid(
        s.update_equity_guard_state(
            &a.id,
            &t1.id,
            "user",
            replaced.version,
            &json!({"x": "y".repeat(300_000)}),
        )
        .await,
    );

    // Remove one source, then the other.
    assert!(s.remove_equity_guard(&a.id, &t1.id, "user").await.unwrap());
    assert!(!s.remove_equity_guard(&a.id, &t1.id, "user").await.unwrap());
    assert_eq!(s.equity_guards(&a.id, &t1.id).await.unwrap().len(), 1);
    assert!(s.remove_equity_guard(&a.id, &t1.id, "prop_firm").await.unwrap());
    assert!(s.guarded_terminals().await.unwrap().is_empty());
    assert_eq!(fx.raw.int("SELECT COUNT(*) FROM equity_guards", &[]).await, 0);
}

async fn equity_guard_state_updates_are_compare_and_swap(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
    let g = s
        .set_equity_guard(&l.id, &t.id, "user", &json!({"equity_floor": 1.0}))
        .await
        .unwrap();
    // Eight writers race on the same version: exactly one wins.
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = fx.store.clone();
        let (lic, term, barrier) = (l.id.clone(), t.id.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store
                .update_equity_guard_state(&lic, &term, "user", g.version, &json!({ "writer": i }))
                .await
                .unwrap()
        }));
    }
    let mut won = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        if task.await.unwrap().is_some() {
            won.push(i);
        }
    }
    assert_eq!(won.len(), 1, "exactly one compare-and-swap wins: {won:?}");
    let stored = &s.equity_guards(&l.id, &t.id).await.unwrap()[0];
    assert_eq!(stored.state, json!({ "writer": won[0] }));
    assert_eq!(stored.version, g.version + 1);
    // A stale version never lands.
    assert_eq!(
        s.update_equity_guard_state(&l.id, &t.id, "user", g.version, &json!({}))
            .await
            .unwrap(),
        None
    );
}

// ----- alert rules and executions -----

fn rule<'a>(license_id: &'a str, terminal_id: &'a str, condition: &'a serde_json::Value) -> NewAlertRule<'a> {
    NewAlertRule {
        license_id,
        terminal_id,
        label: "watch",
        condition,
        once: false,
    }
}

async fn alert_rules_create_list_remove_per_license(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (other, _) = s.create_license("M", Tier::Pro).await.unwrap();
    let (t1, _) = s.create_terminal(&l.id, "T1").await.unwrap();
    let (t2, _) = s.create_terminal(&l.id, "T2").await.unwrap();
    let (u, _) = s.create_terminal(&other.id, "U").await.unwrap();
    let cond = json!({"kind": "price", "symbol": "EURUSD", "level": 1.1});
    let a = s.create_alert_rule(&rule(&l.id, &t1.id, &cond)).await.unwrap();
    assert!(a.id.starts_with("alr_") && a.active && !a.once);
    assert_eq!(
        (a.condition.clone(), a.state.clone(), a.version),
        (cond.clone(), json!({}), 1)
    );
    let b = s
        .create_alert_rule(&NewAlertRule {
            once: true,
            ..rule(&l.id, &t2.id, &cond)
        })
        .await
        .unwrap();
    // A terminal of another license is not found, and nothing is created.
    assert!(matches!(
        s.create_alert_rule(&rule(&l.id, &u.id, &cond)).await,
        Err(StoreError::NotFound("terminal"))
    ));
    // Oldest first; two rules set within one millisecond are in id order.
    let all = s.alert_rules(&l.id, None).await.unwrap();
    let mut expected = [&a, &b];
    expected.sort_by(|x, y| (x.created_at, &x.id).cmp(&(y.created_at, &y.id)));
    assert_eq!(
        all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        expected.iter().map(|r| r.id.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(s.alert_rules(&l.id, Some(&t2.id)).await.unwrap(), vec![b.clone()]);
    assert!(s.alert_rules(&other.id, None).await.unwrap().is_empty());
    assert_eq!(s.active_alert_rules().await.unwrap().len(), 2);
    // Another license cannot remove it.
    assert!(!s.remove_alert_rule(&other.id, &a.id).await.unwrap());
    assert!(s.remove_alert_rule(&l.id, &a.id).await.unwrap());
    assert!(!s.remove_alert_rule(&l.id, &a.id).await.unwrap());
    assert_eq!(s.alert_rules(&l.id, None).await.unwrap(), vec![b]);
    // Labels and sizes are bounded; the per-terminal limit holds.
    assert_invalid(
        s.create_alert_rule(&NewAlertRule {
            label: &"x".repeat(201),
            ..rule(&l.id, &t1.id, &cond)
        })
        .await,
    );
    let big = json!({ "kind": "x".repeat(20_000) });
    assert_invalid(s.create_alert_rule(&rule(&l.id, &t1.id, &big)).await);
    for _ in 0..MAX_ALERT_RULES_PER_TERMINAL {
        s.create_alert_rule(&rule(&l.id, &t1.id, &cond)).await.unwrap();
    }
    assert_invalid(s.create_alert_rule(&rule(&l.id, &t1.id, &cond)).await);
}

async fn alert_steps_are_compare_and_swap_and_record_firings(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
    let (t2, _) = s.create_terminal(&l.id, "T2").await.unwrap();
    let cond = json!({"kind": "equity_below", "level": 100.0});
    let a = s
        .create_alert_rule(&NewAlertRule {
            once: true,
            ..rule(&l.id, &t.id, &cond)
        })
        .await
        .unwrap();
    // Eight writers race on version 1, each with a firing: exactly one lands.
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for i in 0..8i64 {
        let (store, id, barrier) = (fx.store.clone(), a.id.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let firing = NewAlertEvent {
                fired_at: 1_000 + i,
                payload: json!({ "writer": i }),
            };
            store
                .record_alert_step(&id, 1, &json!({ "writer": i }), &[firing], false)
                .await
                .unwrap()
        }));
    }
    let mut won = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        if let Some(v) = task.await.unwrap() {
            assert_eq!(v, 2);
            won.push(i as i64);
        }
    }
    assert_eq!(won.len(), 1, "{won:?}");
    let events = s.alert_events(&l.id, &t.id, 0, 100).await.unwrap();
    assert_eq!(events.len(), 1, "only the winner's firing is recorded");
    assert_eq!(events[0].payload, json!({ "writer": won[0] }));
    assert_eq!(
        (events[0].alert_id.as_str(), events[0].fired_at),
        (a.id.as_str(), 1_000 + won[0])
    );
    // Deactivating ends the rule; it leaves the engine's list, not the license's.
    assert_eq!(
        s.record_alert_step(&a.id, 2, &json!({}), &[], true).await.unwrap(),
        Some(3)
    );
    assert!(s.active_alert_rules().await.unwrap().is_empty());
    let stored = &s.alert_rules(&l.id, None).await.unwrap()[0];
    assert!(!stored.active && stored.version == 3);
    // Firings are read per terminal, from a time, in order, bounded; they outlive the rule.
    let b = s.create_alert_rule(&rule(&l.id, &t.id, &cond)).await.unwrap();
    let firings: Vec<NewAlertEvent> = [5_000, 3_000, 4_000]
        .iter()
        .map(|at| NewAlertEvent {
            fired_at: *at,
            payload: json!({ "at": at }),
        })
        .collect();
    s.record_alert_step(&b.id, 1, &json!({}), &firings, false)
        .await
        .unwrap()
        .unwrap();
    assert!(s.remove_alert_rule(&l.id, &b.id).await.unwrap());
    let times = |v: Vec<tradeterm_store::AlertEventRecord>| v.iter().map(|e| e.fired_at).collect::<Vec<_>>();
    assert_eq!(
        times(s.alert_events(&l.id, &t.id, 3_000, 100).await.unwrap()),
        [3_000, 4_000, 5_000]
    );
    assert_eq!(times(s.alert_events(&l.id, &t.id, 3_500, 1).await.unwrap()), [4_000]);
    assert!(s.alert_events(&l.id, &t2.id, 0, 100).await.unwrap().is_empty());
    let (other, _) = s.create_license("M", Tier::Pro).await.unwrap();
    assert!(s.alert_events(&other.id, &t.id, 0, 100).await.unwrap().is_empty());
    // A removed rule's step lands nowhere.
    assert_eq!(
        s.record_alert_step(&b.id, 2, &json!({}), &[], false).await.unwrap(),
        None
    );
}

async fn executions_are_recorded_per_terminal_and_range(fx: Fx) {
    let s = &fx.store;
    let (l, _) = s.create_license("L", Tier::Pro).await.unwrap();
    let (other, _) = s.create_license("M", Tier::Pro).await.unwrap();
    let (t, _) = s.create_terminal(&l.id, "T").await.unwrap();
    for at in [3_000, 1_000, 2_000] {
        s.record_execution(&l.id, &t.id, at, &json!({ "at": at }))
            .await
            .unwrap();
    }
    let rows = s.executions(&l.id, &t.id, 1_000, 3_000, 100).await.unwrap();
    assert_eq!(rows.iter().map(|r| r.requested_at).collect::<Vec<_>>(), [1_000, 2_000]);
    assert_eq!(rows[1].record, json!({ "at": 2_000 }));
    assert!(rows[0].id.starts_with("exe_"));
    assert_eq!(s.executions(&l.id, &t.id, 0, 10_000, 1).await.unwrap().len(), 1);
    assert!(s.executions(&other.id, &t.id, 0, 10_000, 100).await.unwrap().is_empty());
    assert_invalid(
        s.record_execution(&l.id, &t.id, 1, &json!({ "x": "y".repeat(20_000) }))
            .await,
    );
}
