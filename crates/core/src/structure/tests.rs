//! Unit tests of the structure module: hand-made series per family, input
//! safety, and a property test that batch equals streaming without look-ahead.

use proptest::prelude::*;

use super::*;

const MIN: i64 = 60_000;

fn bar(i: usize, open: f64, high: f64, low: f64, close: f64) -> Bar {
    Bar {
        time: i as i64 * MIN,
        open,
        high,
        low,
        close,
        volume: 10.0 + i as f64,
    }
}

/// Bars walking through `path` one step per bar: bar k opens at `path[k]`
/// and closes at `path[k + 1]`.
fn walk(path: &[f64]) -> Vec<Bar> {
    path.windows(2)
        .enumerate()
        .map(|(k, w)| bar(k, w[0], w[0].max(w[1]), w[0].min(w[1]), w[1]))
        .collect()
}

/// A path through the given turning points in steps of 1.
fn zigzag(points: &[f64]) -> Vec<f64> {
    let mut path = vec![points[0]];
    for w in points.windows(2) {
        let mut p = w[0];
        while (p - w[1]).abs() > 1e-9 {
            p += (w[1] - p).clamp(-1.0, 1.0);
            path.push(p);
        }
    }
    path
}

fn only_swings(n: usize) -> StructureConfig {
    StructureConfig {
        swing_length: n,
        fvg: None,
        order_blocks: None,
        liquidity: None,
        bos_choch: None,
    }
}

fn swings(events: &[StructureEvent]) -> Vec<&Swing> {
    events
        .iter()
        .filter_map(|e| match e {
            StructureEvent::Swing(s) => Some(s),
            _ => None,
        })
        .collect()
}

#[test]
fn config_validation() {
    assert!(StructureConfig::default().validate().is_ok());
    let bad = |c: StructureConfig| matches!(c.validate(), Err(CoreError::InvalidParameter { .. }));
    assert!(bad(StructureConfig {
        swing_length: 0,
        ..Default::default()
    }));
    assert!(bad(StructureConfig {
        swing_length: MAX_SWING_LENGTH + 1,
        ..Default::default()
    }));
    assert!(bad(StructureConfig {
        swing_length: usize::MAX,
        ..Default::default()
    }));
    for tolerance in [
        LiquidityTolerance::RangePercent { range_percent: 0.0 },
        LiquidityTolerance::RangePercent { range_percent: -0.01 },
        LiquidityTolerance::RangePercent {
            range_percent: f64::NAN,
        },
        LiquidityTolerance::RangePercent { range_percent: 1.5 },
        LiquidityTolerance::Price { distance: 0.0 },
        LiquidityTolerance::Price {
            distance: f64::INFINITY,
        },
    ] {
        let c = StructureConfig {
            liquidity: Some(LiquidityConfig { tolerance }),
            ..Default::default()
        };
        assert!(bad(c.clone()), "{tolerance:?}");
        assert!(StructureDetector::new(c).is_err());
    }
    // Families can be switched off from JSON with null; missing fields take defaults.
    let c: StructureConfig = serde_json::from_str(r#"{"swing_length": 5, "order_blocks": null}"#).unwrap();
    assert_eq!(c.swing_length, 5);
    assert!(c.order_blocks.is_none() && c.fvg.is_some());
}

#[test]
fn batch_rejects_bad_series() {
    let cfg = StructureConfig {
        swing_length: 2,
        ..Default::default()
    };
    let good = walk(&zigzag(&[10.0, 20.0, 12.0, 18.0]));
    assert!(detect(&good, &cfg).is_ok());
    assert!(matches!(detect(&[], &cfg), Err(CoreError::InvalidInput(_))));
    let mut nan = good.clone();
    nan[7].high = f64::NAN;
    assert!(matches!(detect(&nan, &cfg), Err(CoreError::InvalidInput(_))));
    let mut inconsistent = good.clone();
    inconsistent[3].low = inconsistent[3].high + 1.0;
    assert!(matches!(detect(&inconsistent, &cfg), Err(CoreError::InvalidInput(_))));
    let mut unordered = good.clone();
    unordered.swap(4, 5);
    assert!(matches!(detect(&unordered, &cfg), Err(CoreError::InvalidInput(_))));
    let mut duplicate = good.clone();
    duplicate[5].time = duplicate[4].time;
    assert!(matches!(detect(&duplicate, &cfg), Err(CoreError::InvalidInput(_))));
    // Oversized for the series: no swing could be confirmed.
    let long = StructureConfig {
        swing_length: good.len() / 3 + 1,
        ..Default::default()
    };
    assert!(matches!(detect(&good, &long), Err(CoreError::InvalidParameter { .. })));
    let huge = StructureConfig {
        swing_length: MAX_SWING_LENGTH,
        ..Default::default()
    };
    assert!(matches!(detect(&good, &huge), Err(CoreError::InvalidParameter { .. })));
}

#[test]
fn streaming_rejects_bad_bars_and_keeps_state() {
    let bars = walk(&zigzag(&[10.0, 20.0, 12.0, 18.0, 11.0]));
    let cfg = StructureConfig {
        swing_length: 2,
        ..Default::default()
    };
    let mut d = StructureDetector::new(cfg.clone()).unwrap();
    let mut events = Vec::new();
    for (k, b) in bars.iter().enumerate() {
        if k == 5 {
            let mut bad = *b;
            bad.volume = -1.0;
            assert!(matches!(d.update(&bad), Err(CoreError::InvalidInput(_))));
            bad = *b;
            bad.open = f64::INFINITY;
            assert!(matches!(d.update(&bad), Err(CoreError::InvalidInput(_))));
            assert!(matches!(d.update(&bars[k - 1]), Err(CoreError::InvalidInput(_))));
            assert_eq!(d.bars_seen(), k);
        }
        events.extend_from_slice(d.update(b).unwrap());
    }
    assert_eq!(events, detect(&bars, &cfg).unwrap());
    d.reset();
    assert_eq!(d.bars_seen(), 0);
    let again: Vec<StructureEvent> = bars.iter().flat_map(|b| d.update(b).unwrap().to_vec()).collect();
    assert_eq!(again, events);
}

#[test]
fn swing_window_warm_up_and_confirmation() {
    // n = 2: window i-1 ..= i+2, first candidate bar 3.
    let highs = [1.0, 9.0, 3.0, 5.0, 3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0];
    let bars: Vec<Bar> = highs
        .iter()
        .enumerate()
        .map(|(i, &h)| bar(i, h - 0.5, h, h - 1.0, h - 0.5))
        .collect();
    let events = detect(&bars, &only_swings(2)).unwrap();
    let s = swings(&events);
    // Bar 1 (9.0) is a pivot but before smc's first candidate; bar 3 is the
    // highest of bars 2..=5; bar 6 the lowest of bars 5..=8; bar 9 the
    // highest of bars 8..=11.
    let got: Vec<(usize, SwingKind, f64, usize)> =
        s.iter().map(|s| (s.index, s.kind, s.level, s.confirmed_at)).collect();
    assert_eq!(
        got,
        [
            (3, SwingKind::High, 5.0, 5),
            (6, SwingKind::Low, 0.0, 8),
            (9, SwingKind::High, 4.0, 11)
        ]
    );
}

#[test]
fn swing_leg_supersedes_and_ties_keep_first() {
    // Two pivot highs in one leg (no pivot low between): 5 then 7 (n = 2),
    // then an equal 7 which must not be emitted.
    // Lows rise until bar 12, so no pivot low splits the leg.
    let highs = [
        1.0, 2.0, 3.0, 5.0, 4.0, 4.5, 4.2, 7.0, 6.5, 6.8, 6.6, 7.0, 6.9, 6.0, 5.0, 4.0, 3.0,
    ];
    let lows = [
        0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.1, 1.0, 0.9, 0.8,
    ];
    let bars: Vec<Bar> = highs
        .iter()
        .zip(lows)
        .enumerate()
        .map(|(i, (&h, l))| bar(i, l, h, l, l))
        .collect();
    let events = detect(&bars, &only_swings(2)).unwrap();
    let s = swings(&events);
    assert_eq!(s[0].index, 3);
    assert_eq!(s[0].supersedes, None);
    assert_eq!((s[1].index, s[1].supersedes), (7, Some(3)));
    assert!(
        s.iter().all(|x| x.index != 11),
        "an equal high later in the leg is not a new extreme"
    );
}

#[test]
fn outside_bar_counts_as_high() {
    // Bar 3 has both the highest high and the lowest low of its window.
    let mut bars: Vec<Bar> = (0..8).map(|i| bar(i, 5.0, 5.5, 4.5, 5.0)).collect();
    bars[3] = bar(3, 5.0, 9.0, 1.0, 5.0);
    let events = detect(&bars, &only_swings(2)).unwrap();
    let s = swings(&events);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].index, s[0].kind), (3, SwingKind::High));
}

#[test]
fn fair_value_gap_and_mitigation() {
    let bars = vec![
        bar(0, 10.0, 10.5, 9.5, 10.2),
        bar(1, 10.2, 12.0, 10.1, 11.8), // bullish middle bar
        bar(2, 11.8, 12.5, 11.0, 12.3), // low 11.0 > high[0] 10.5: gap 10.5..11.0
        bar(3, 12.3, 12.6, 11.5, 12.0),
        bar(4, 12.0, 12.1, 10.9, 11.0), // low 10.9 <= top 11.0: mitigated
        bar(5, 11.0, 11.2, 10.0, 10.1),
    ];
    let cfg = StructureConfig {
        swing_length: 1,
        ..Default::default()
    };
    let events = detect(&bars, &cfg).unwrap();
    let gaps: Vec<&FairValueGap> = events
        .iter()
        .filter_map(|e| match e {
            StructureEvent::FairValueGap(g) => Some(g),
            _ => None,
        })
        .collect();
    assert_eq!(gaps.len(), 2);
    let g = gaps[0];
    assert_eq!(
        (g.index, g.direction, g.top, g.bottom, g.confirmed_at),
        (1, Direction::Bullish, 11.0, 10.5, 2)
    );
    // Bar 4 closes down and low[3] 11.5 > high[5] 11.2: a bearish gap.
    let g = gaps[1];
    assert_eq!(
        (g.index, g.direction, g.top, g.bottom, g.confirmed_at),
        (4, Direction::Bearish, 11.5, 11.2, 5)
    );
    let m: Vec<&FvgMitigation> = events
        .iter()
        .filter_map(|e| match e {
            StructureEvent::FvgMitigated(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(m.len(), 1);
    assert_eq!((m[0].index, m[0].mitigated_index, m[0].confirmed_at), (1, 4, 4));
}

#[test]
fn joined_gaps_supersede() {
    // A steady climb: every middle bar is a bullish gap.
    let bars = walk(&zigzag(&[10.0, 16.0]));
    let plain = StructureConfig {
        swing_length: 1,
        ..Default::default()
    };
    let joined = StructureConfig {
        fvg: Some(FvgConfig { join_consecutive: true }),
        ..plain.clone()
    };
    let gaps = |cfg: &StructureConfig| -> Vec<FairValueGap> {
        detect(&bars, cfg)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e {
                StructureEvent::FairValueGap(g) => Some(g),
                _ => None,
            })
            .collect()
    };
    let p = gaps(&plain);
    let j = gaps(&joined);
    assert_eq!(p.len(), 4);
    assert_eq!(j.len(), 4);
    assert_eq!(j[0].supersedes, None);
    for w in j.windows(2) {
        assert_eq!(w[1].supersedes, Some(w[0].index));
        assert_eq!(w[1].bottom, p[0].bottom);
    }
    assert_eq!(j[3].top, p[3].top);
}

#[test]
fn bullish_bos_is_reported_once_the_pattern_is_confirmed() {
    // Higher highs and higher lows: L15 H25 L18 H30 is a bullish BOS at H25.
    let bars = walk(&zigzag(&[10.0, 20.0, 15.0, 25.0, 18.0, 30.0, 22.0, 35.0, 28.0]));
    let n = 2;
    let cfg = StructureConfig {
        swing_length: n,
        ..Default::default()
    };
    let events = detect(&bars, &cfg).unwrap();
    let h25 = bars.iter().position(|b| b.high == 25.0).unwrap();
    let h30 = bars.iter().position(|b| b.high == 30.0).unwrap();
    let brk = bars.iter().position(|b| b.close > 25.0).unwrap();
    let b = events
        .iter()
        .find_map(|e| match e {
            StructureEvent::StructureBreak(b) if b.index == h25 => Some(b),
            _ => None,
        })
        .expect("bullish BOS at the 25 high");
    assert_eq!(
        (b.kind, b.direction, b.level, b.broken_index),
        (BreakKind::Bos, Direction::Bullish, 25.0, brk)
    );
    assert_eq!(b.swings[3], h30);
    assert_eq!(b.confirmed_at, h30 + n, "known only when the next high is confirmed");
    assert!(brk < b.confirmed_at);
}

#[test]
fn bearish_choch_after_an_uptrend() {
    // Up, then a lower low: H20 L15 H25 L12 -> bearish CHoCH at L15 (l1 < l3 < l4 < l2).
    let bars = walk(&zigzag(&[10.0, 20.0, 15.0, 25.0, 12.0, 18.0]));
    let events = detect(
        &bars,
        &StructureConfig {
            swing_length: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let h20 = bars.iter().position(|b| b.high == 20.0).unwrap();
    let l15 = h20 + bars[h20..].iter().position(|b| b.low == 15.0).unwrap();
    let b = events
        .iter()
        .find_map(|e| match e {
            StructureEvent::StructureBreak(b) => Some(b),
            _ => None,
        })
        .expect("a break");
    assert_eq!(
        (b.kind, b.direction, b.index, b.level),
        (BreakKind::Choch, Direction::Bearish, l15, 15.0)
    );
    assert_eq!(
        b.broken_index,
        l15 + 2 + bars[l15 + 2..].iter().position(|b| b.close < 15.0).unwrap()
    );
}

#[test]
fn order_block_mitigation_and_invalidation() {
    // Swing high 20, pull back to 15, close above 20: the bullish block is
    // the lowest candle of the pull-back; then price falls through it
    // (mitigated) and rallies back above its top (invalidated).
    let bars = walk(&zigzag(&[10.0, 20.0, 15.0, 24.0, 13.0, 26.0]));
    let events = detect(
        &bars,
        &StructureConfig {
            swing_length: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let ob = events
        .iter()
        .find_map(|e| match e {
            StructureEvent::OrderBlock(o) if o.direction == Direction::Bullish => Some(o),
            _ => None,
        })
        .expect("bullish order block");
    let h20 = bars.iter().position(|b| b.high == 20.0).unwrap();
    assert_eq!(ob.swing_index, h20);
    assert_eq!(ob.confirmed_at, bars.iter().position(|b| b.close > 20.0).unwrap());
    assert_eq!(ob.bottom, 15.0);
    let pull_back = &bars[h20 + 1..ob.confirmed_at];
    assert_eq!(
        ob.index,
        h20 + 1 + pull_back.iter().rposition(|b| b.low == 15.0).unwrap()
    );
    assert!(ob.strength_percent > 0.0 && ob.strength_percent <= 100.0);
    let mitigated = events
        .iter()
        .find_map(|e| match e {
            StructureEvent::OrderBlockMitigated(m) if m.index == ob.index => Some(m.mitigated_index),
            _ => None,
        })
        .expect("mitigated");
    let after = ob.confirmed_at + 1;
    assert_eq!(
        mitigated,
        after + bars[after..].iter().position(|b| b.low < 15.0).unwrap()
    );
    let invalidated = events
        .iter()
        .find_map(|e| match e {
            StructureEvent::OrderBlockInvalidated(m) if m.index == ob.index => Some(m.invalidated_index),
            _ => None,
        })
        .expect("invalidated");
    assert!(invalidated > mitigated && bars[invalidated].high > ob.top);
}

#[test]
fn equal_highs_form_a_pool_and_get_swept() {
    // Highs at 20, 20.1 and a break to 23: a pool of equal highs, swept.
    let bars = walk(&zigzag(&[10.0, 20.0, 14.0, 20.1, 12.0, 23.0, 15.0, 22.0]));
    let cfg = StructureConfig {
        swing_length: 2,
        liquidity: Some(LiquidityConfig {
            tolerance: LiquidityTolerance::Price { distance: 0.5 },
        }),
        ..Default::default()
    };
    let events = detect(&bars, &cfg).unwrap();
    let h1 = bars.iter().position(|b| b.high == 20.0).unwrap();
    let h2 = bars.iter().position(|b| b.high == 20.1).unwrap();
    let pool = events
        .iter()
        .find_map(|e| match e {
            StructureEvent::LiquidityPool(p) => Some(p),
            _ => None,
        })
        .expect("pool");
    assert_eq!((pool.kind, pool.index, pool.end), (SwingKind::High, h1, h2));
    assert_eq!(pool.members, [h1, h2]);
    assert!((pool.level - 20.05).abs() < 1e-12);
    let sweep = events
        .iter()
        .find_map(|e| match e {
            StructureEvent::LiquiditySwept(s) => Some(s),
            _ => None,
        })
        .expect("sweep");
    assert_eq!(sweep.index, h1);
    assert_eq!(sweep.swept_index, bars.iter().position(|b| b.high >= 20.5).unwrap());
    assert!(sweep.confirmed_at >= pool.confirmed_at && sweep.confirmed_at >= sweep.swept_index);
}

#[test]
fn schema_and_serde_round_trip() {
    let schema = schemars::schema_for!(StructureEvent);
    let text = serde_json::to_string(&schema).unwrap();
    assert!(text.contains("confirmed_at") && text.contains("fair_value_gap"));
    let _ = schemars::schema_for!(StructureConfig);
    let cfg = StructureConfig::default();
    let back: StructureConfig = serde_json::from_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
    assert_eq!(back, cfg);
}

/// A random walk of well-formed bars.
fn arb_bars() -> impl Strategy<Value = Vec<Bar>> {
    prop::collection::vec(
        (-1.0f64..1.0, 0.0f64..0.6, 0.0f64..0.6, -1.0f64..1.0, 0.0f64..100.0),
        20..300,
    )
    .prop_map(|steps| {
        let mut price = 100.0;
        steps
            .iter()
            .enumerate()
            .map(|(i, &(drift, up, down, body, volume))| {
                let open = price;
                // Coarse prices make equal highs/lows (ties) common.
                let close = ((open + drift + body * 0.3) * 4.0).round() / 4.0;
                price = close;
                Bar {
                    time: i as i64 * MIN,
                    open,
                    high: ((open.max(close) + up) * 4.0).round() / 4.0,
                    low: ((open.min(close) - down) * 4.0).round() / 4.0,
                    close,
                    volume: volume.round(),
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn batch_equals_streaming_without_look_ahead(
        bars in arb_bars(),
        n in 1usize..6,
        join: bool,
        close_break: bool,
        close_mitigation: bool,
        distance in prop::option::of(0.1f64..3.0),
    ) {
        let tolerance = match distance {
            Some(distance) => LiquidityTolerance::Price { distance },
            None => LiquidityTolerance::default(),
        };
        let cfg = StructureConfig {
            swing_length: n,
            fvg: Some(FvgConfig { join_consecutive: join }),
            order_blocks: Some(OrderBlockConfig { close_mitigation }),
            liquidity: Some(LiquidityConfig { tolerance }),
            bos_choch: Some(BosChochConfig { close_break }),
        };
        prop_assume!(bars.len() >= cfg.min_bars());
        let full = detect(&bars, &cfg).unwrap();
        let mut d = StructureDetector::new(cfg.clone()).unwrap();
        let mut streamed = Vec::new();
        for (k, b) in bars.iter().enumerate() {
            let new = d.update(b).unwrap();
            prop_assert!(new.iter().all(|e| e.confirmed_at() == k && e.index() <= k));
            streamed.extend_from_slice(new);
            let known: Vec<&StructureEvent> = full.iter().filter(|e| e.confirmed_at() <= k).collect();
            prop_assert_eq!(streamed.iter().collect::<Vec<_>>(), known);
        }
        prop_assert_eq!(streamed, full);
    }
}
