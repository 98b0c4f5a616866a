//! No-look-ahead replay: every series of `data/market/` is fed bar by bar to
//! the streaming `StructureDetector`, and the test proves that
//!
//! (a) no event is emitted before its `confirmed_at` bar has been fed (in
//!     fact every event is emitted exactly while that bar is fed);
//! (b) emitted events are never revised or removed: what a consumer holds
//!     after bar `k` is exactly the full-series result filtered to
//!     `confirmed_at <= k`, for many `k`, so later bars never change an
//!     earlier answer (the repaint count, summed over all checkpoints, is 0);
//! (c) the list after bars `0..=k` equals the batch result on bars `0..=k`,
//!     and the final list equals the batch result on the whole series.
//!
//! Checkpoints: every 97th bar and the last one. Run with `--nocapture` for
//! the per-series figures.

use std::path::Path;

use tradeterm_core::structure::{
    BosChochConfig, FvgConfig, LiquidityConfig, LiquidityTolerance, OrderBlockConfig, StructureConfig,
    StructureDetector, StructureEvent, detect,
};
use tradeterm_core::{Bar, CoreError};

fn series() -> Vec<(String, Vec<Bar>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/market");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("data/market") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "csv") {
            let text = std::fs::read_to_string(&path).expect("read");
            let bars = tradeterm_core::bars::parse_csv(&text).expect("parse");
            out.push((path.file_name().expect("name").to_string_lossy().into_owned(), bars));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 9, "expected the 9 series of data/market");
    out
}

fn configs() -> Vec<(&'static str, StructureConfig)> {
    vec![
        ("default", StructureConfig::default()),
        (
            "short",
            StructureConfig {
                swing_length: 5,
                fvg: Some(FvgConfig { join_consecutive: true }),
                order_blocks: Some(OrderBlockConfig { close_mitigation: true }),
                liquidity: Some(LiquidityConfig {
                    tolerance: LiquidityTolerance::RangePercent { range_percent: 0.005 },
                }),
                bos_choch: Some(BosChochConfig { close_break: false }),
            },
        ),
    ]
}

/// Events in `a` not in `b` plus events in `b` not in `a`, as multisets
/// (order-insensitive), so a reordering is not mistaken for a repaint.
fn difference(a: &[StructureEvent], b: &[StructureEvent]) -> usize {
    let key = |e: &StructureEvent| serde_json::to_string(e).expect("serialise");
    let mut left: Vec<String> = a.iter().map(key).collect();
    let mut right: Vec<String> = b.iter().map(key).collect();
    left.sort();
    right.sort();
    let (mut i, mut j, mut diff) = (0, 0, 0);
    while i < left.len() && j < right.len() {
        match left[i].cmp(&right[j]) {
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => {
                diff += 1;
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                diff += 1;
                j += 1;
            }
        }
    }
    diff + (left.len() - i) + (right.len() - j)
}

#[test]
fn replay_has_no_look_ahead_and_never_repaints() {
    let mut repaints = 0usize;
    let mut reorders = 0usize;
    let mut checkpoints = 0usize;
    let mut events_total = 0usize;
    for (name, bars) in series() {
        for (label, config) in configs() {
            let full = detect(&bars, &config).expect("batch");
            assert!(full.windows(2).all(|w| w[0].confirmed_at() <= w[1].confirmed_at()));
            let mut detector = StructureDetector::new(config.clone()).expect("config");
            let mut streamed: Vec<StructureEvent> = Vec::new();
            let mut per_type = std::collections::BTreeMap::<&str, usize>::new();
            let mut file_checkpoints = 0;
            for (k, bar) in bars.iter().enumerate() {
                let new = detector.update(bar).expect("valid bar");
                for e in new {
                    // (a) never before its confirmation bar; in fact exactly at it.
                    assert!(e.confirmed_at() <= k, "{name}/{label}: {e:?} emitted at {k}");
                    assert_eq!(e.confirmed_at(), k, "{name}/{label}: {e:?} emitted late at {k}");
                    assert!(e.index() <= k, "{name}/{label}: {e:?} refers to a future bar");
                    *per_type.entry(e.type_name()).or_default() += 1;
                }
                streamed.extend_from_slice(new);
                if k % 97 == 96 || k + 1 == bars.len() {
                    file_checkpoints += 1;
                    // (b) what was known at k is what the whole series says about bars <= k.
                    // `full` is in emission order, so the events confirmed by k are a prefix.
                    let known_then = &full[..full.partition_point(|e| e.confirmed_at() <= k)];
                    if streamed != known_then {
                        let diff = difference(&streamed, known_then);
                        eprintln!("{name}/{label}: {diff} repainted events at k = {k}");
                        repaints += diff;
                        reorders += usize::from(diff == 0);
                    }
                    // (c) the batch result on the prefix.
                    match detect(&bars[..=k], &config) {
                        Ok(prefix) => assert_eq!(prefix, streamed, "{name}/{label}: batch on 0..={k}"),
                        Err(CoreError::InvalidParameter { .. }) => {
                            assert!(
                                k + 1 < config.min_bars(),
                                "{name}/{label}: refused a long enough prefix"
                            );
                            assert!(
                                streamed.iter().all(|e| !matches!(e, StructureEvent::Swing(_))),
                                "{name}/{label}"
                            );
                        }
                        Err(e) => panic!("{name}/{label}: {e}"),
                    }
                }
            }
            // (c) batch equals the streaming detector's final list.
            assert_eq!(streamed, full, "{name}/{label}: batch differs from streaming");
            assert_eq!(detector.bars_seen(), bars.len());
            checkpoints += file_checkpoints;
            events_total += streamed.len();
            eprintln!(
                "{name:40} {label:7} bars {:6} events {:6} checkpoints {:4} repaints so far {repaints}  {per_type:?}",
                bars.len(),
                streamed.len(),
                file_checkpoints
            );
        }
    }
    eprintln!("total: {events_total} events, {checkpoints} checkpoints, repaint count {repaints}");
    assert_eq!(
        repaints, 0,
        "events known at a checkpoint differ from the full-series result"
    );
    assert_eq!(reorders, 0, "same events, different order");
}

/// A detector rejects bad bars with a typed error and keeps its state.
#[test]
fn replay_survives_bad_bars() {
    let (_, bars) = series()
        .into_iter()
        .find(|(n, _)| n.starts_with("eurusd_1h_backtesting"))
        .expect("series");
    let config = StructureConfig {
        swing_length: 5,
        ..StructureConfig::default()
    };
    let mut clean = StructureDetector::new(config.clone()).expect("config");
    let mut noisy = StructureDetector::new(config).expect("config");
    for (k, bar) in bars.iter().enumerate().take(2000) {
        if k > 0 && k % 100 == 0 {
            let mut nan = *bar;
            nan.close = f64::NAN;
            assert!(matches!(noisy.update(&nan), Err(CoreError::InvalidInput(_))));
            let mut old = *bar;
            old.time = bars[k - 1].time;
            assert!(matches!(noisy.update(&old), Err(CoreError::InvalidInput(_))));
        }
        let a = clean.update(bar).expect("clean").to_vec();
        let b = noisy.update(bar).expect("noisy").to_vec();
        assert_eq!(a, b, "state changed by a rejected bar at {k}");
    }
}
