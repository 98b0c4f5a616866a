//! The trade audit log ([`AuditStore`]) on both backends, as `sqlite::NAME`
//! and `postgres::NAME`: appends make one hash chain per license, also when
//! several stores append at once; an edited, a deleted and a truncated row
//! are each found and named; filters and the cursor; another license sees
//! nothing; pruning keeps the rest verifiable.

mod support;

use std::sync::Arc;

use tradeterm_store::audit::GENESIS_HASH;
use tradeterm_store::{AuditFilter, AuditStore, ChainBreak, NewAuditRecord, Store, StoreError, Tier, verify_chain};

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
    appends_make_a_verifiable_chain,
    concurrent_appends_from_several_stores_keep_one_chain,
    an_edited_row_is_named,
    a_deleted_row_is_named,
    a_deleted_last_row_is_found,
    filters_and_cursor,
    another_license_sees_nothing,
    pruning_keeps_the_chain_verifiable,
);

fn row(license: &str, at: i64, tool: &str, decision: &str) -> NewAuditRecord {
    NewAuditRecord {
        license_id: license.to_owned(),
        at,
        credential_id: "key_1".into(),
        credential_label: Some("bot".into()),
        surface: "rest".into(),
        source: Some("203.0.113.7".into()),
        request_id: Some("req-1".into()),
        tool: tool.to_owned(),
        terminal_id: Some("term_1".into()),
        request: r#"{"dry_run":true,"symbol":"EURUSD","volume":0.1}"#.into(),
        decision: decision.to_owned(),
        code: None,
        answer: Some(r#"{"price":1.1}"#.into()),
        latency_us: 1200,
        handler_us: Some(900),
    }
}

async fn license(s: &dyn Store, name: &str) -> String {
    s.create_license(name, Tier::Pro).await.unwrap().0.id
}

async fn appends_make_a_verifiable_chain(fx: Fx) {
    let s = &fx.store;
    let l = license(s, "A").await;
    let empty = verify_chain(s, &l).await.unwrap();
    assert_eq!((empty.rows, empty.broken, empty.head.last_seq), (0, None, 0));
    let mut prev = GENESIS_HASH.to_owned();
    for i in 1..=5 {
        let r = s
            .append_audit(&row(&l, 1000 + i, "place_order", "dry_run"))
            .await
            .unwrap();
        assert_eq!(r.seq, i);
        assert!(r.id.starts_with("aud_"));
        assert_eq!(r.prev_hash, prev);
        assert_eq!(r.hash, tradeterm_store::audit::row_hash(&r));
        prev = r.hash.clone();
    }
    let report = verify_chain(s, &l).await.unwrap();
    assert_eq!(report.rows, 5);
    assert_eq!(report.broken, None, "{report:?}");
    assert_eq!(
        (report.head.last_seq, report.head.last_hash.as_str()),
        (5, prev.as_str())
    );
    // What was stored is what is read back.
    let page = s.audit_page(&l, &AuditFilter::default()).await.unwrap();
    assert_eq!(page[0].request, row(&l, 0, "", "").request);
    assert_eq!(page[0].source.as_deref(), Some("203.0.113.7"));
    // A missing license.
    let missing = s.append_audit(&row("lic_missing", 1, "place_order", "sent")).await;
    assert!(matches!(missing, Err(StoreError::NotFound("license"))), "{missing:?}");
    // Oversized request.
    let mut big = row(&l, 1, "place_order", "sent");
    big.request = format!("\"{}\"", "x".repeat(20_000));
    assert!(matches!(s.append_audit(&big).await, Err(StoreError::Invalid(_))));
    assert_eq!(verify_chain(s, &l).await.unwrap().broken, None);
}

async fn concurrent_appends_from_several_stores_keep_one_chain(fx: Fx) {
    let l = license(&fx.store, "A").await;
    // Four stores with their own pools, as four instances would have.
    let mut stores = vec![fx.store.clone()];
    for _ in 0..3 {
        stores.push(fx.reopen().await);
    }
    let mut tasks = Vec::new();
    for (n, store) in stores.into_iter().enumerate() {
        let l = l.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                store
                    .append_audit(&row(&l, (n * 100 + i) as i64, "place_order", "sent"))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let report = verify_chain(&fx.store, &l).await.unwrap();
    assert_eq!((report.rows, report.head.last_seq), (40, 40));
    assert_eq!(report.broken, None, "{report:?}");
    let seqs = fx
        .raw
        .texts(
            "SELECT CAST(seq AS TEXT) AS s FROM audit_log WHERE license_id = $1 ORDER BY audit_log.seq",
            &[Val::Text(&l)],
        )
        .await;
    let expected: Vec<Option<String>> = (1..=40).map(|i: i64| Some(i.to_string())).collect();
    assert_eq!(seqs, expected);
}

/// Appends `n` rows and returns their ids, oldest first.
async fn appended(fx: &Fixture, l: &str, n: i64) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 1..=n {
        ids.push(
            fx.store
                .append_audit(&row(l, i, "place_order", "sent"))
                .await
                .unwrap()
                .id,
        );
    }
    ids
}

async fn an_edited_row_is_named(fx: Fx) {
    let l = license(&fx.store, "A").await;
    let ids = appended(&fx, &l, 5).await;
    let n = fx
        .raw
        .exec(
            r#"UPDATE audit_log SET request = '{"dry_run":true,"symbol":"EURUSD","volume":9}' WHERE id = $1"#,
            &[Val::Text(&ids[2])],
        )
        .await;
    assert_eq!(n, 1);
    let report = verify_chain(&fx.store, &l).await.unwrap();
    assert_eq!(
        report.broken,
        Some(ChainBreak::Edited {
            seq: 3,
            id: ids[2].clone()
        })
    );
    let message = report.broken.unwrap().to_string();
    assert!(message.contains(&ids[2]) && message.contains("row 3"), "{message}");

    // Rewriting the row's hash too leaves the next row unlinked.
    let l2 = license(&fx.store, "B").await;
    let ids = appended(&fx, &l2, 3).await;
    let r = fx.store.audit_chain(&l2, 1, 1).await.unwrap().remove(0);
    let mut forged = r.clone();
    forged.decision = "refused".into();
    forged.hash = tradeterm_store::audit::row_hash(&forged);
    fx.raw
        .exec(
            "UPDATE audit_log SET decision = $1, hash = $2 WHERE id = $3",
            &[Val::Text("refused"), Val::Text(&forged.hash), Val::Text(&r.id)],
        )
        .await;
    let report = verify_chain(&fx.store, &l2).await.unwrap();
    assert_eq!(
        report.broken,
        Some(ChainBreak::Unlinked {
            seq: 3,
            id: ids[2].clone()
        })
    );
}

async fn a_deleted_row_is_named(fx: Fx) {
    let l = license(&fx.store, "A").await;
    let ids = appended(&fx, &l, 5).await;
    fx.raw
        .exec("DELETE FROM audit_log WHERE id = $1", &[Val::Text(&ids[1])])
        .await;
    let report = verify_chain(&fx.store, &l).await.unwrap();
    let broken = report.broken.clone().unwrap();
    assert_eq!(
        broken,
        ChainBreak::Gap {
            expected: 2,
            seq: 3,
            id: ids[2].clone()
        }
    );
    assert!(broken.to_string().starts_with("row 2 was deleted"), "{broken}");
}

async fn a_deleted_last_row_is_found(fx: Fx) {
    let l = license(&fx.store, "A").await;
    let ids = appended(&fx, &l, 3).await;
    fx.raw
        .exec("DELETE FROM audit_log WHERE id = $1", &[Val::Text(&ids[2])])
        .await;
    let report = verify_chain(&fx.store, &l).await.unwrap();
    assert_eq!(report.broken, Some(ChainBreak::Truncated { last_found: 2, head: 3 }));
    // Every row gone: still found.
    fx.raw
        .exec("DELETE FROM audit_log WHERE license_id = $1", &[Val::Text(&l)])
        .await;
    let report = verify_chain(&fx.store, &l).await.unwrap();
    assert_eq!(report.broken, Some(ChainBreak::Truncated { last_found: 0, head: 3 }));
}

async fn filters_and_cursor(fx: Fx) {
    let s = &fx.store;
    let l = license(s, "A").await;
    for i in 0..10 {
        let mut r = row(
            &l,
            1000 + i,
            if i % 2 == 0 { "place_order" } else { "close_position" },
            "sent",
        );
        if i == 9 {
            r.decision = "refused".into();
            r.code = Some("TRADING_DISABLED".into());
            r.credential_id = "master:x".into();
            r.terminal_id = Some("term_2".into());
        }
        if i == 3 {
            r.surface = "mcp".into();
        }
        s.append_audit(&r).await.unwrap();
    }
    let all = s.audit_page(&l, &AuditFilter::default()).await.unwrap();
    assert_eq!(
        all.iter().map(|r| r.seq).collect::<Vec<_>>(),
        (1..=10).rev().collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(
            s,
            &l,
            AuditFilter {
                tool: Some("close_position".into()),
                ..Default::default()
            }
        )
        .await,
        vec![10, 8, 6, 4, 2]
    );
    assert_eq!(
        seqs(
            s,
            &l,
            AuditFilter {
                decision: Some("refused".into()),
                ..Default::default()
            }
        )
        .await,
        vec![10]
    );
    assert_eq!(
        seqs(
            s,
            &l,
            AuditFilter {
                credential_id: Some("master:x".into()),
                terminal_id: Some("term_2".into()),
                ..Default::default()
            }
        )
        .await,
        vec![10]
    );
    assert_eq!(
        seqs(
            s,
            &l,
            AuditFilter {
                surface: Some("mcp".into()),
                ..Default::default()
            }
        )
        .await,
        vec![4]
    );
    assert_eq!(
        seqs(
            s,
            &l,
            AuditFilter {
                from: Some(1002),
                to: Some(1005),
                ..Default::default()
            }
        )
        .await,
        vec![5, 4, 3]
    );
    // Pages of 4 by the cursor.
    let first = seqs(
        s,
        &l,
        AuditFilter {
            limit: 4,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(first, vec![10, 9, 8, 7]);
    let second = seqs(
        s,
        &l,
        AuditFilter {
            limit: 4,
            before_seq: Some(7),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(second, vec![6, 5, 4, 3]);
    let last = seqs(
        s,
        &l,
        AuditFilter {
            limit: 4,
            before_seq: Some(3),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(last, vec![2, 1]);
    // A value that looks like SQL is a value.
    assert!(
        seqs(
            s,
            &l,
            AuditFilter {
                tool: Some("x' OR '1'='1".into()),
                ..Default::default()
            }
        )
        .await
        .is_empty()
    );
}

async fn seqs(s: &dyn Store, license: &str, filter: AuditFilter) -> Vec<i64> {
    s.audit_page(license, &filter)
        .await
        .unwrap()
        .iter()
        .map(|r| r.seq)
        .collect()
}

async fn another_license_sees_nothing(fx: Fx) {
    let s = &fx.store;
    let a = license(s, "A").await;
    let b = license(s, "B").await;
    appended(&fx, &a, 3).await;
    assert!(s.audit_page(&b, &AuditFilter::default()).await.unwrap().is_empty());
    assert!(s.audit_chain(&b, 0, 100).await.unwrap().is_empty());
    assert_eq!(s.audit_head(&b).await.unwrap().last_seq, 0);
    // B's chain starts at 1, from the genesis, whatever A holds.
    let rb = s.append_audit(&row(&b, 1, "place_order", "sent")).await.unwrap();
    assert_eq!((rb.seq, rb.prev_hash.as_str()), (1, GENESIS_HASH));
    assert_eq!(verify_chain(s, &a).await.unwrap().rows, 3);
    assert_eq!(verify_chain(s, &b).await.unwrap().rows, 1);
    assert_eq!(verify_chain(s, &b).await.unwrap().broken, None);
}

async fn pruning_keeps_the_chain_verifiable(fx: Fx) {
    let s = &fx.store;
    let a = license(s, "A").await;
    let b = license(s, "B").await;
    for i in 1..=6 {
        s.append_audit(&row(&a, i * 100, "place_order", "sent")).await.unwrap();
    }
    s.append_audit(&row(&b, 100, "place_order", "sent")).await.unwrap();
    // Rows before 350: A's 100, 200, 300 and B's 100.
    assert_eq!(s.prune_audit(350).await.unwrap(), 4);
    let head = s.audit_head(&a).await.unwrap();
    assert_eq!(head.anchor_seq, 3);
    let report = verify_chain(s, &a).await.unwrap();
    assert_eq!((report.rows, report.broken), (3, None));
    // B has no row left: its anchor is its head, still verifiable; the next row joins it.
    assert_eq!(verify_chain(s, &b).await.unwrap().broken, None);
    let next = s.append_audit(&row(&b, 900, "place_order", "sent")).await.unwrap();
    assert_eq!(next.seq, 2);
    assert_eq!(verify_chain(s, &b).await.unwrap().broken, None);
    // Pruning again finds nothing; deleting the first kept row is still found.
    assert_eq!(s.prune_audit(350).await.unwrap(), 0);
    let first = s.audit_chain(&a, 0, 1).await.unwrap().remove(0);
    assert_eq!(first.seq, 4);
    fx.raw
        .exec("DELETE FROM audit_log WHERE id = $1", &[Val::Text(&first.id)])
        .await;
    assert!(matches!(
        verify_chain(s, &a).await.unwrap().broken,
        Some(ChainBreak::Gap {
            expected: 4,
            seq: 5,
            ..
        })
    ));
}
