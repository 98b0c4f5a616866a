//! Reference comparison with smartmoneyconcepts 0.0.27 ("smc").
//!
//! The fixtures in `tests/fixtures/smc/` are smc's own output on real series
//! of `data/market/` (written by `scripts/fixtures/smc_fixtures.py`), for
//! smc's default parameters and one non-default set. Each test compares one
//! family:
//!
//! - where the definitions agree (swing positions once confirmed, gap
//!   positions and bounds and mitigation), the results must be equal;
//! - where this crate deliberately differs (smc looks ahead, or has a bug),
//!   every difference must be explained by a documented cause, checked here
//!   with the data, and agreement must stay above thresholds justified in
//!   `docs/structure.md`.
//!
//! Run with `--nocapture` to see the agreement figures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tradeterm_core::Bar;
use tradeterm_core::structure::{
    BosChochConfig, BreakKind, Direction, FvgConfig, LiquidityConfig, LiquidityTolerance, OrderBlockConfig,
    StructureConfig, StructureEvent, detect,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fixture: smc's output for one series and one parameter set.
struct Fixture {
    name: String,
    bars: Vec<Bar>,
    swing_length: usize,
    join_consecutive: bool,
    close_mitigation: bool,
    range_percent: f64,
    close_break: bool,
    pip_range: f64,
    /// (index, sign, level); includes smc's artificial first/last-bar swings.
    swings: Vec<(usize, i8, f64)>,
    /// (index, sign, top, bottom, mitigated index or 0).
    fvg: Vec<(usize, i8, f64, f64, usize)>,
    /// (index, sign, top, bottom, volume, mitigated index or 0, percentage), float32 values widened.
    ob: Vec<(usize, i8, f64, f64, f64, usize, f64)>,
    /// (index, sign, level, end, swept or 0).
    liquidity: Vec<(usize, i8, f64, usize, usize)>,
    /// (index, kind, sign, level, broken index).
    bos_choch: Vec<(usize, BreakKind, i8, f64, usize)>,
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn idx(v: &Value) -> usize {
    v.as_u64().unwrap_or(0) as usize
}

fn sign(v: &Value) -> i8 {
    v.as_i64().unwrap_or(0) as i8
}

fn table<T>(fx: &Value, key: &str, row: impl Fn(&[Value]) -> T) -> Vec<T> {
    fx[key]
        .as_array()
        .expect(key)
        .iter()
        .map(|r| row(r.as_array().expect("row")))
        .collect()
}

fn fixtures() -> Vec<Fixture> {
    let dir = root().join("crates/core/tests/fixtures/smc");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 6,
        "expected at least 3 series x 2 parameter sets in {}",
        dir.display()
    );
    paths
        .iter()
        .map(|path| {
            let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
            assert_eq!(fx["smc_version"], "0.0.27");
            let file = fx["file"].as_str().expect("file");
            let text = std::fs::read_to_string(root().join("data/market").join(file)).expect("csv");
            let bars = tradeterm_core::bars::parse_csv(&text).expect("parse");
            assert_eq!(bars.len(), idx(&fx["rows"]), "{file}: fixture is stale (row count)");
            let p = &fx["params"];
            Fixture {
                name: path.file_stem().expect("stem").to_string_lossy().into_owned(),
                swing_length: idx(&p["swing_length"]),
                join_consecutive: p["join_consecutive"].as_bool().expect("join"),
                close_mitigation: p["close_mitigation"].as_bool().expect("close_mitigation"),
                range_percent: num(&p["range_percent"]),
                close_break: p["close_break"].as_bool().expect("close_break"),
                pip_range: num(&fx["liquidity_pip_range"]),
                swings: table(&fx, "swings", |r| (idx(&r[0]), sign(&r[1]), num(&r[2]))),
                fvg: table(&fx, "fvg", |r| {
                    (idx(&r[0]), sign(&r[1]), num(&r[2]), num(&r[3]), idx(&r[4]))
                }),
                ob: table(&fx, "ob", |r| {
                    (
                        idx(&r[0]),
                        sign(&r[1]),
                        num(&r[2]),
                        num(&r[3]),
                        num(&r[4]),
                        idx(&r[5]),
                        num(&r[6]),
                    )
                }),
                liquidity: table(&fx, "liquidity", |r| {
                    (idx(&r[0]), sign(&r[1]), num(&r[2]), idx(&r[3]), idx(&r[4]))
                }),
                bos_choch: table(&fx, "bos_choch", |r| {
                    let (bos, choch) = (sign(&r[1]), sign(&r[2]));
                    let kind = if bos != 0 { BreakKind::Bos } else { BreakKind::Choch };
                    (idx(&r[0]), kind, bos + choch, num(&r[3]), idx(&r[4]))
                }),
                bars,
            }
        })
        .collect()
}

impl Fixture {
    fn config(&self, tolerance: LiquidityTolerance) -> StructureConfig {
        StructureConfig {
            swing_length: self.swing_length,
            fvg: Some(FvgConfig {
                join_consecutive: self.join_consecutive,
            }),
            order_blocks: Some(OrderBlockConfig {
                close_mitigation: self.close_mitigation,
            }),
            liquidity: Some(LiquidityConfig { tolerance }),
            bos_choch: Some(BosChochConfig {
                close_break: self.close_break,
            }),
        }
    }

    fn causal(&self) -> Vec<StructureEvent> {
        let tol = LiquidityTolerance::RangePercent {
            range_percent: self.range_percent,
        };
        detect(&self.bars, &self.config(tol)).expect("detect")
    }

    /// smc's swings without the two artificial ones it writes on the first
    /// and last bars.
    fn real_swings(&self) -> Vec<(usize, i8, f64)> {
        let last = self.bars.len() - 1;
        self.swings
            .iter()
            .copied()
            .filter(|s| s.0 != 0 && s.0 != last)
            .collect()
    }
}

/// `f64` widened from smc's float32 column equals ours rounded to float32.
fn f32_eq(ours: f64, smc: f64) -> bool {
    (ours as f32).to_bits() == (smc as f32).to_bits()
}

fn pct(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        100.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

#[test]
fn swings_equal_smc_once_confirmed() {
    for fx in fixtures() {
        let events = fx.causal();
        let swings: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StructureEvent::Swing(s) => Some(s),
                _ => None,
            })
            .collect();
        for s in &swings {
            assert_eq!(
                s.confirmed_at,
                s.index + fx.swing_length,
                "{}: swing confirmation",
                fx.name
            );
        }
        let superseded: BTreeSet<usize> = swings.iter().filter_map(|s| s.supersedes).collect();
        let ours: Vec<(usize, i8, f64)> = swings
            .iter()
            .filter(|s| !superseded.contains(&s.index))
            .map(|s| (s.index, s.kind.sign(), s.level))
            .collect();
        let real = fx.real_swings();
        assert_eq!(ours, real, "{}: final swings differ from smc's", fx.name);
        // smc's two extra rows are exactly the artificial endpoint swings.
        assert_eq!(fx.swings.len(), real.len() + 2, "{}", fx.name);
        assert_eq!(fx.swings[0].0, 0, "{}", fx.name);
        assert_eq!(fx.swings[fx.swings.len() - 1].0, fx.bars.len() - 1, "{}", fx.name);
        eprintln!(
            "{:45} swings: smc {} (+2 artificial), ours final {} (equal), ours emitted {} ({} superseded later)",
            fx.name,
            real.len(),
            ours.len(),
            swings.len(),
            superseded.len()
        );
    }
}

#[test]
fn fvg_equal_smc() {
    for fx in fixtures() {
        let events = fx.causal();
        let mut superseded = BTreeSet::new();
        let mut mitigated = BTreeMap::new();
        let mut gaps = Vec::new();
        for e in &events {
            match e {
                StructureEvent::FairValueGap(g) => {
                    assert_eq!(g.confirmed_at, g.index + 1, "{}", fx.name);
                    if let Some(s) = g.supersedes {
                        assert!(fx.join_consecutive, "{}: supersedes without join", fx.name);
                        assert_eq!(s + 1, g.index, "{}", fx.name);
                        superseded.insert(s);
                    }
                    gaps.push(g);
                }
                StructureEvent::FvgMitigated(m) => {
                    assert!(m.mitigated_index >= m.index + 2, "{}", fx.name);
                    assert_eq!(m.confirmed_at, m.mitigated_index, "{}", fx.name);
                    assert!(
                        mitigated.insert(m.index, m.mitigated_index).is_none(),
                        "{}: mitigated twice",
                        fx.name
                    );
                }
                _ => {}
            }
        }
        let ours: Vec<(usize, i8, f64, f64, usize)> = gaps
            .iter()
            .filter(|g| !superseded.contains(&g.index))
            .map(|g| {
                (
                    g.index,
                    g.direction.sign(),
                    g.top,
                    g.bottom,
                    mitigated.get(&g.index).copied().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            ours, fx.fvg,
            "{}: gaps (position, bounds, mitigation) differ from smc's",
            fx.name
        );
        assert!(superseded.iter().all(|s| !mitigated.contains_key(s)), "{}", fx.name);
        eprintln!(
            "{:45} fvg: smc {} = ours {} (equal incl. mitigation); {} joined away",
            fx.name,
            fx.fvg.len(),
            ours.len(),
            superseded.len()
        );
    }
}

#[test]
fn bos_choch_relation() {
    let (mut smc_total, mut ours_total, mut matched_total) = (0, 0, 0);
    for fx in fixtures() {
        let events = fx.causal();
        let last = fx.bars.len() - 1;
        let ours: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StructureEvent::StructureBreak(b) => Some(b),
                _ => None,
            })
            .collect();
        for b in &ours {
            assert!(
                b.confirmed_at >= b.broken_index && b.broken_index >= b.index + 2,
                "{}",
                fx.name
            );
            assert_eq!(b.swings[1], b.index, "{}", fx.name);
        }
        let key =
            |i: usize, k: BreakKind, s: i8, level: f64, broken: usize| (i, k, s, (level as f32).to_bits(), broken);
        let ours_keys: BTreeSet<_> = ours
            .iter()
            .map(|b| key(b.index, b.kind, b.direction.sign(), b.level, b.broken_index))
            .collect();
        let smc_keys: BTreeSet<_> = fx.bos_choch.iter().map(|r| key(r.0, r.1, r.2, r.3, r.4)).collect();
        let matched = ours_keys.intersection(&smc_keys).count();

        // smc-only: (a) the pattern uses an artificial endpoint swing, or
        // (b) the break exists only through smc's float32 level: the price at
        // smc's break bar equals the level exactly (not beyond it).
        let (mut artificial, mut float32) = (Vec::new(), Vec::new());
        for r in fx
            .bos_choch
            .iter()
            .filter(|r| !ours_keys.contains(&key(r.0, r.1, r.2, r.3, r.4)))
        {
            let p = fx
                .swings
                .iter()
                .position(|s| s.0 == r.0)
                .expect("smc event on a smc swing");
            let s4 = fx.swings[p - 1].0;
            let s1 = fx.swings.get(p + 2).map_or(last, |s| s.0);
            let bar = fx.bars[r.4];
            let level = if r.2 > 0 { fx.bars[r.0].high } else { fx.bars[r.0].low };
            let price = match (fx.close_break, r.2 > 0) {
                (true, _) => bar.close,
                (false, true) => bar.high,
                (false, false) => bar.low,
            };
            if s4 == 0 || s1 == last {
                artificial.push(*r);
            } else if price == level {
                float32.push(*r);
            } else {
                panic!("{}: unexplained smc-only break {r:?}", fx.name);
            }
        }
        // ours-only: (c) smc deletes it afterwards because a later pattern,
        // confirmed after ours was reported, broke at or before it (we show
        // that later event too); or (d) a consequence of (a)/(b): the smc-only
        // event deleted it in smc, or replaced it at the same swing.
        let smc_only: Vec<_> = artificial.iter().chain(&float32).collect();
        let (mut retro, mut knock_on) = (0, 0);
        for b in ours
            .iter()
            .filter(|b| !smc_keys.contains(&key(b.index, b.kind, b.direction.sign(), b.level, b.broken_index)))
        {
            let later = ours
                .iter()
                .any(|o| o.index > b.index && o.broken_index <= b.broken_index && o.confirmed_at > b.confirmed_at);
            let caused = smc_only
                .iter()
                .any(|r| (r.0 > b.index && r.4 <= b.broken_index) || r.0 == b.index);
            if later {
                retro += 1;
            } else if caused {
                knock_on += 1;
            } else {
                panic!("{}: unexplained extra break {b:?}", fx.name);
            }
        }
        eprintln!(
            "{:45} bos/choch: smc {}, ours {}, equal {} ({:.1}% of smc, {:.1}% of ours); smc-only: {} artificial swing, {} float32; ours-only: {} deleted later by smc, {} knock-on",
            fx.name,
            smc_keys.len(),
            ours_keys.len(),
            matched,
            pct(matched, smc_keys.len()),
            pct(matched, ours_keys.len()),
            artificial.len(),
            float32.len(),
            retro,
            knock_on
        );
        // Thresholds (docs/structure.md): per series at least 85 % of smc's
        // events are reproduced exactly, and at least 85 % of ours are smc's.
        assert!(pct(matched, smc_keys.len() - artificial.len()) >= 85.0, "{}", fx.name);
        assert!(pct(matched, ours_keys.len()) >= 85.0, "{}", fx.name);
        smc_total += smc_keys.len();
        ours_total += ours_keys.len();
        matched_total += matched;
    }
    eprintln!(
        "bos/choch overall: {matched_total} equal of smc {smc_total} ({:.1}%) and ours {ours_total} ({:.1}%)",
        pct(matched_total, smc_total),
        pct(matched_total, ours_total)
    );
    assert!(pct(matched_total, smc_total) >= 95.0);
    assert!(pct(matched_total, ours_total) >= 95.0);
}

/// smc's order-block formations, recomputed from smc's own (look-ahead) swing
/// list: (breaking bar, swing index, block index, sign).
fn smc_formations(fx: &Fixture) -> Vec<(usize, usize, usize, i8)> {
    let mut out = Vec::new();
    for dir in [1i8, -1] {
        let swings: Vec<usize> = fx.swings.iter().filter(|s| s.1 == dir).map(|s| s.0).collect();
        let mut crossed = BTreeSet::new();
        for t in 1..fx.bars.len() {
            let p = swings.partition_point(|&s| s < t);
            let Some(&s) = p.checked_sub(1).and_then(|p| swings.get(p)) else {
                continue;
            };
            let close = fx.bars[t].close;
            let hit = if dir > 0 {
                close > fx.bars[s].high
            } else {
                close < fx.bars[s].low
            };
            if hit && crossed.insert(s) {
                let mut best = t - 1;
                if t - s > 1 {
                    best = s + 1;
                    for k in s + 1..t {
                        let b = &fx.bars[k];
                        if (dir > 0 && b.low <= fx.bars[best].low) || (dir < 0 && b.high >= fx.bars[best].high) {
                            best = k;
                        }
                    }
                }
                out.push((t, s, best, dir));
            }
        }
    }
    out
}

#[test]
fn order_blocks_relation() {
    let (mut smc_total, mut matched_total, mut ours_total) = (0, 0, 0);
    for fx in fixtures() {
        let events = fx.causal();
        let mut mitigated = BTreeMap::new();
        let mut invalidated = BTreeSet::new();
        let mut blocks = Vec::new();
        let mut swings = Vec::new();
        for e in &events {
            match e {
                StructureEvent::OrderBlock(o) => blocks.push(o),
                StructureEvent::OrderBlockMitigated(m) => {
                    mitigated
                        .entry((m.direction.sign(), m.index))
                        .or_insert(m.mitigated_index);
                }
                StructureEvent::OrderBlockInvalidated(m) => {
                    invalidated.insert((m.direction.sign(), m.index));
                }
                StructureEvent::Swing(s) => swings.push(s),
                _ => {}
            }
        }
        // smc deletes invalidated blocks; compare with the ones we never invalidated.
        let surviving: Vec<_> = blocks
            .iter()
            .filter(|o| !invalidated.contains(&(o.direction.sign(), o.index)))
            .collect();
        let formations = smc_formations(&fx);
        let mut matched = 0;
        let mut basis = 0;
        for r in &fx.ob {
            let Some(o) = surviving.iter().find(|o| o.index == r.0 && o.direction.sign() == r.1) else {
                // Documented cause: smc formed it from a swing that was not the
                // last swing known at the breaking bar (smc's swing list skips
                // pivots that are superseded later).
                let (t, s, _, _) = *formations
                    .iter()
                    .find(|f| f.2 == r.0 && f.3 == r.1)
                    .unwrap_or_else(|| panic!("{}: smc block {r:?} not reproduced by the reference", fx.name));
                let known = swings.iter().rfind(|w| w.kind.sign() == r.1 && w.confirmed_at <= t);
                assert!(
                    known.is_none_or(|w| w.index != s),
                    "{}: unexplained missing block {r:?}",
                    fx.name
                );
                basis += 1;
                continue;
            };
            // Same block: equal bounds, volume and strength (smc stores float32),
            // and smc's mitigation index is ours minus one for bullish blocks
            // (smc bug) and ours for bearish ones.
            assert!(
                f32_eq(o.top, r.2) && f32_eq(o.bottom, r.3),
                "{}: {o:?} vs {r:?}",
                fx.name
            );
            assert!(f32_eq(o.volume, r.4), "{}: {o:?} vs {r:?}", fx.name);
            assert!(
                (o.strength_percent - r.6).abs() <= 1e-4 * r.6.max(1.0),
                "{}: {o:?} vs {r:?}",
                fx.name
            );
            let ours_mit = mitigated
                .get(&(r.1, r.0))
                .map_or(0, |&m| if r.1 > 0 { m - 1 } else { m });
            assert_eq!(ours_mit, r.5, "{}: mitigation of {r:?}", fx.name);
            matched += 1;
        }
        // Ours that smc lacks: formed from a swing smc's list does not have at
        // that bar (the same look-ahead), or deleted/overwritten by smc.
        let mut extra_basis = 0;
        let mut extra_other = 0;
        for o in surviving
            .iter()
            .filter(|o| !fx.ob.iter().any(|r| r.0 == o.index && r.1 == o.direction.sign()))
        {
            if formations.iter().any(|f| f.0 == o.confirmed_at && f.1 == o.swing_index) {
                extra_other += 1;
            } else {
                extra_basis += 1;
            }
        }
        eprintln!(
            "{:45} order blocks: smc {}, ours {} ({} before invalidation), equal {} ({:.1}% of smc); smc-only {} (swing basis); ours-only {} swing basis, {} other",
            fx.name,
            fx.ob.len(),
            surviving.len(),
            blocks.len(),
            matched,
            pct(matched, fx.ob.len()),
            basis,
            extra_basis,
            extra_other
        );
        assert_eq!(extra_other, 0, "{}: blocks smc formed but does not report", fx.name);
        assert!(pct(matched, fx.ob.len()) >= 80.0, "{}", fx.name);
        smc_total += fx.ob.len();
        ours_total += surviving.len();
        matched_total += matched;
    }
    eprintln!(
        "order blocks overall: {matched_total} equal of smc {smc_total} ({:.1}%), ours {ours_total}",
        pct(matched_total, smc_total)
    );
    assert!(pct(matched_total, smc_total) >= 88.0);
}

/// (level, end, swept index or 0, members) of a pool.
type PoolState = (f64, usize, usize, Vec<usize>);

/// Final pools: the last snapshot per (kind, anchor), with its sweep.
fn pools(events: &[StructureEvent]) -> BTreeMap<(i8, usize), PoolState> {
    let mut out: BTreeMap<(i8, usize), PoolState> = BTreeMap::new();
    for e in events {
        match e {
            StructureEvent::LiquidityPool(p) => {
                let swept = out.get(&(p.kind.sign(), p.index)).map_or(0, |v| v.2);
                out.insert((p.kind.sign(), p.index), (p.level, p.end, swept, p.members.clone()));
            }
            StructureEvent::LiquiditySwept(s) => {
                let v = out.get_mut(&(s.kind.sign(), s.index)).expect("sweep after its pool");
                v.2 = s.swept_index;
            }
            _ => {}
        }
    }
    out
}

#[test]
fn liquidity_relation() {
    let (mut smc_total, mut exact_total, mut causal_total) = (0, 0, 0);
    for fx in fixtures() {
        let key = |s: i8, i: usize, level: f64, end: usize, swept: usize| (i, s, (level as f32).to_bits(), end, swept);
        let smc: BTreeSet<_> = fx.liquidity.iter().map(|r| key(r.1, r.0, r.2, r.3, r.4)).collect();
        let last_real = fx.real_swings().last().map_or(0, |s| s.0);

        // With smc's whole-series distance given up front, the pools are
        // smc's, except those built on smc's artificial first-bar swing or on
        // the last real swing (final in smc because the series ends; never
        // final here since no opposite swing follows it).
        let tol = LiquidityTolerance::Price { distance: fx.pip_range };
        let events = detect(&fx.bars, &fx.config(tol)).expect("detect");
        let exact = pools(&events);
        let ours: BTreeSet<_> = exact.iter().map(|(k, v)| key(k.0, k.1, v.0, v.1, v.2)).collect();
        assert!(
            ours.is_subset(&smc),
            "{}: pools smc does not have: {:?}",
            fx.name,
            ours.difference(&smc)
        );
        for r in smc.difference(&ours) {
            assert!(
                r.0 == 0 || r.3 >= last_real,
                "{}: unexplained missing pool {r:?}",
                fx.name
            );
        }
        for p in events.iter().filter_map(|e| match e {
            StructureEvent::LiquidityPool(p) => Some(p),
            _ => None,
        }) {
            assert!(p.members.len() >= 2 && p.members[0] == p.index && p.end == *p.members.last().unwrap());
            assert!(
                p.confirmed_at > p.end + fx.swing_length,
                "{}: a member is final only after the next swing",
                fx.name
            );
        }

        // Causal tolerance (range of the bars seen so far): agreement only.
        let causal = pools(&fx.causal());
        let causal_keys: BTreeSet<_> = causal.iter().map(|(k, v)| key(k.0, k.1, v.0, v.1, v.2)).collect();
        let causal_equal = causal_keys.intersection(&smc).count();
        eprintln!(
            "{:45} liquidity: smc {}; smc's distance: ours {} all equal to smc's ({} missing: artificial/last swing); causal range: ours {}, equal {} ({:.1}% of smc)",
            fx.name,
            smc.len(),
            ours.len(),
            smc.len() - ours.len(),
            causal_keys.len(),
            causal_equal,
            pct(causal_equal, smc.len())
        );
        smc_total += smc.len();
        exact_total += ours.len();
        causal_total += causal_equal;
    }
    eprintln!(
        "liquidity overall: smc {smc_total}; with smc's distance {exact_total} equal ({:.1}%); causal {causal_total} equal ({:.1}%)",
        pct(exact_total, smc_total),
        pct(causal_total, smc_total)
    );
    assert!(pct(exact_total, smc_total) >= 95.0);
    assert!(pct(causal_total, smc_total) >= 50.0);
}

#[test]
fn events_serialise_with_a_type_tag() {
    let fx = fixtures().into_iter().next().expect("a fixture");
    let events = fx.causal();
    let mut seen = BTreeSet::new();
    for e in &events {
        let v = serde_json::to_value(e).expect("serialise");
        assert_eq!(v["type"], e.type_name());
        assert_eq!(v["index"], e.index());
        assert_eq!(v["confirmed_at"], e.confirmed_at());
        if seen.insert(e.type_name()) {
            let back: StructureEvent = serde_json::from_value(v).expect("deserialise");
            assert_eq!(&back, e);
        }
    }
    assert!(seen.len() >= 8, "{seen:?}");
    let _ = Direction::Bullish;
}
