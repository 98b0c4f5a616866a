//! Hand-checked pivots, previous periods, zones and round numbers.

use super::*;
use crate::time::parse_iso;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn all_close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y))
}

fn t(s: &str) -> UnixMs {
    parse_iso(s).unwrap()
}

#[test]
fn classic_and_fibonacci() {
    let prev = Hlc {
        high: 110.0,
        low: 100.0,
        close: 105.0,
    };
    let c = pivot_points(PivotMethod::Classic, &prev, None).unwrap();
    assert!(close(c.pivot, 105.0));
    assert!(all_close(&c.resistances, &[110.0, 115.0, 120.0]));
    assert!(all_close(&c.supports, &[100.0, 95.0, 90.0]));
    let f = pivot_points(PivotMethod::Fibonacci, &prev, None).unwrap();
    assert!(
        all_close(&f.resistances, &[108.82, 111.18, 115.0]),
        "{:?}",
        f.resistances
    );
    assert!(all_close(&f.supports, &[101.18, 98.82, 95.0]));
    // An asymmetric close: P = (1.0950 + 1.0850 + 1.0920) / 3 = 1.0906667.
    let eur = Hlc {
        high: 1.0950,
        low: 1.0850,
        close: 1.0920,
    };
    let c = pivot_points(PivotMethod::Classic, &eur, None).unwrap();
    let p = 3.272 / 3.0;
    assert!(close(c.pivot, p));
    assert!(close(c.resistances[0], 2.0 * p - 1.0850));
    assert!(close(c.supports[2], 1.0850 - 2.0 * (1.0950 - p)));
}

#[test]
fn camarilla_and_woodie() {
    let prev = Hlc {
        high: 110.0,
        low: 100.0,
        close: 108.0,
    };
    let cam = pivot_points(PivotMethod::Camarilla, &prev, None).unwrap();
    // C ± 10 × 1.1 / {12, 6, 4, 2}.
    assert!(all_close(
        &cam.resistances,
        &[108.0 + 11.0 / 12.0, 108.0 + 11.0 / 6.0, 110.75, 113.5]
    ));
    assert!(all_close(
        &cam.supports,
        &[108.0 - 11.0 / 12.0, 108.0 - 11.0 / 6.0, 105.25, 102.5]
    ));
    // Woodie with the current open 106: P = (110 + 100 + 212) / 4 = 105.5.
    let w = pivot_points(PivotMethod::Woodie, &prev, Some(106.0)).unwrap();
    assert!(close(w.pivot, 105.5));
    assert!(all_close(&w.resistances, &[111.0, 115.5, 121.0]));
    assert!(all_close(&w.supports, &[101.0, 95.5, 91.0]));
    assert!(w.basis.contains("open"));
    // Without the open: P = (110 + 100 + 216) / 4 = 106.5.
    let w = pivot_points(PivotMethod::Woodie, &prev, None).unwrap();
    assert!(close(w.pivot, 106.5));
    // Bad input is an error.
    let bad = Hlc {
        high: 100.0,
        low: 110.0,
        close: 105.0,
    };
    assert!(pivot_points(PivotMethod::Classic, &bad, None).is_err());
    let nan = Hlc {
        close: f64::NAN,
        ..prev
    };
    assert!(pivot_points(PivotMethod::Classic, &nan, None).is_err());
}

fn bar(time: &str, open: f64, high: f64, low: f64, close: f64) -> Bar {
    Bar {
        time: t(time),
        open,
        high,
        low,
        close,
        volume: 1.0,
    }
}

#[test]
fn previous_day_week_month() {
    let bars = vec![
        bar("2026-10-30T10:00:00Z", 1.0, 1.5, 0.5, 1.2), // October
        bar("2026-11-09T10:00:00Z", 2.0, 2.5, 1.9, 2.1), // Monday of the previous week
        bar("2026-11-12T10:00:00Z", 3.0, 3.6, 2.8, 3.1), // Thursday
        bar("2026-11-13T08:00:00Z", 3.1, 3.3, 3.0, 3.2), // Friday
        bar("2026-11-13T12:00:00Z", 3.2, 3.9, 2.9, 3.4),
        bar("2026-11-13T20:00:00Z", 3.4, 3.5, 3.3, 3.45),
        bar("2026-11-16T08:00:00Z", 3.5, 3.7, 3.4, 3.6), // Monday, current day
        bar("2026-11-16T11:00:00Z", 3.6, 9.9, 0.1, 3.6), // after `now`: ignored
    ];
    let now = t("2026-11-16T10:30:00Z");
    let day = period_levels(&bars, LevelPeriod::Day, now).unwrap();
    let prev = day.previous.unwrap();
    // Friday (no weekend bars): open 3.1, high 3.9, low 2.9, close 3.45.
    assert_eq!(prev.start, t("2026-11-13T00:00:00Z"));
    assert_eq!(
        (prev.open, prev.high, prev.low, prev.close, prev.bars),
        (3.1, 3.9, 2.9, 3.45, 3)
    );
    let cur = day.current.unwrap();
    assert_eq!((cur.open, cur.high, cur.low, cur.bars), (3.5, 3.7, 3.4, 1));
    let week = period_levels(&bars, LevelPeriod::Week, now).unwrap().previous.unwrap();
    assert_eq!(week.start, t("2026-11-09T00:00:00Z"));
    assert_eq!(
        (week.open, week.high, week.low, week.close, week.bars),
        (2.0, 3.9, 1.9, 3.45, 5)
    );
    let month = period_levels(&bars, LevelPeriod::Month, now).unwrap();
    let oct = month.previous.unwrap();
    assert_eq!(oct.start, t("2026-10-01T00:00:00Z"));
    assert_eq!((oct.high, oct.low, oct.close), (1.5, 0.5, 1.2));
    assert_eq!(month.current.unwrap().high, 3.9);
    // Nothing before: no previous period.
    assert_eq!(period_levels(&bars[6..], LevelPeriod::Day, now).unwrap().previous, None);
    // Unordered bars are an error.
    let mut bad = bars.clone();
    bad.swap(1, 2);
    assert!(period_levels(&bad, LevelPeriod::Day, now).is_err());
    assert!(period_levels(&bars, LevelPeriod::Week, i64::MIN).is_err());
}

/// A zigzag: 105 → 100 → 110 → 100.3 → 110.2 → 99.8 → 109.9 → 105, five
/// bars per leg, hourly; each bar's high and low 0.05 around its close.
fn zigzag() -> Vec<Bar> {
    let turns = [105.0, 100.0, 110.0, 100.3, 110.2, 99.8, 109.9, 105.0];
    let mut closes = vec![turns[0]];
    for w in turns.windows(2) {
        for k in 1..=5 {
            closes.push(w[0] + (w[1] - w[0]) * k as f64 / 5.0);
        }
    }
    let t0 = t("2026-11-02T00:00:00Z");
    closes
        .iter()
        .enumerate()
        .map(|(i, c)| Bar {
            time: t0 + i as i64 * 3_600_000,
            open: *c,
            high: c + 0.05,
            low: c - 0.05,
            close: *c,
            volume: 1.0,
        })
        .collect()
}

#[test]
fn zones_cluster_swings_with_touches() {
    let bars = zigzag();
    let config = ZoneConfig {
        swing_length: 2,
        width: ZoneWidth::Percent { percent: 1.0 },
        min_touches: 1,
        max_zones: 10,
    };
    let z = sr_zones(&bars, &config, None).unwrap();
    assert!(close(z.price, 105.0));
    assert!(close(z.width, 1.05));
    assert_eq!(z.swings, 6);
    assert_eq!(z.zones.len(), 2);
    // Lows 99.75, 99.95, 100.25: mid 100.0, widened to 1.05 → [99.475, 100.525].
    let s = &z.zones[0];
    assert_eq!(s.role, ZoneRole::Support);
    assert_eq!((s.touches, s.swing_lows, s.swing_highs), (3, 3, 0));
    assert!(close(s.low, 99.475) && close(s.high, 100.525), "{s:?}");
    assert!(close(s.distance, 4.475));
    assert_eq!(s.last_touch, bars[25].time);
    assert_eq!(s.first_touch, bars[5].time);
    // Highs 109.95, 110.05, 110.25: mid 110.1 → [109.575, 110.625].
    let r = &z.zones[1];
    assert_eq!(r.role, ZoneRole::Resistance);
    assert_eq!(r.touches, 3);
    assert!(close(r.low, 109.575) && close(r.high, 110.625), "{r:?}");
    assert_eq!(r.last_touch, bars[30].time);
    // A narrow width splits the clusters; min_touches filters them.
    let narrow = ZoneConfig {
        width: ZoneWidth::Percent { percent: 0.1 },
        min_touches: 2,
        ..config
    };
    let z = sr_zones(&bars, &narrow, None).unwrap();
    assert!(z.zones.iter().all(|x| x.touches >= 2));
    // ATR width: 0.5 × ATR(14) at the last bar.
    let atr_cfg = ZoneConfig {
        width: ZoneWidth::Atr {
            period: 14,
            multiple: 0.5,
        },
        ..config
    };
    let z = sr_zones(&bars, &atr_cfg, Some(104.0)).unwrap();
    let atr = AverageTrueRange::new(14).unwrap().over(&bars).unwrap();
    assert!(close(z.width, 0.5 * atr.last().copied().flatten().unwrap()));
    // A multiple above the schema's maximum (one near the largest double
    // made the zone bounds infinite, answered as null) is refused, naming it.
    for multiple in [MAX_ATR_MULTIPLE * 1.01, f64::MAX] {
        let wide = ZoneConfig {
            width: ZoneWidth::Atr { period: 14, multiple },
            ..config
        };
        let e = sr_zones(&bars, &wide, Some(104.0)).unwrap_err();
        assert!(e.to_string().contains("width.multiple"), "{e}");
    }
    let widest = ZoneConfig {
        width: ZoneWidth::Atr {
            period: 14,
            multiple: MAX_ATR_MULTIPLE,
        },
        ..config
    };
    let z = sr_zones(&bars, &widest, Some(104.0)).unwrap();
    assert!(z.zones.iter().all(|x| x.high.is_finite() && x.low.is_finite()));
    // Too few bars is an error, not a panic.
    assert!(sr_zones(&bars[..4], &config, None).is_err());
    assert!(sr_zones(&[], &config, None).is_err());
}

#[test]
fn round_numbers_scale_with_digits() {
    let eur = round_numbers(1.08437, 5, 2, None).unwrap();
    assert!(close(eur.step, 0.01));
    let got: Vec<(f64, RoundKind)> = eur.levels.iter().map(|l| (l.price, l.kind)).collect();
    assert_eq!(
        got,
        vec![
            (1.075, RoundKind::Half),
            (1.08, RoundKind::Major),
            (1.085, RoundKind::Half),
            (1.09, RoundKind::Major)
        ]
    );
    let jpy = round_numbers(150.237, 3, 1, None).unwrap();
    assert_eq!(
        jpy.levels.iter().map(|l| l.price).collect::<Vec<_>>(),
        vec![150.0, 150.5]
    );
    let gold = round_numbers(2013.4, 2, 2, None).unwrap();
    assert_eq!(
        gold.levels.iter().map(|l| l.price).collect::<Vec<_>>(),
        vec![2005.0, 2010.0, 2015.0, 2020.0]
    );
    assert_eq!(gold.levels[1].kind, RoundKind::Major);
    let custom = round_numbers(5012.0, 2, 1, Some(100.0)).unwrap();
    assert_eq!(
        custom.levels.iter().map(|l| l.price).collect::<Vec<_>>(),
        vec![5000.0, 5050.0]
    );
    assert!(round_numbers(f64::NAN, 5, 2, None).is_err());
    assert!(round_numbers(1.1, 5, 0, None).is_err());
    assert!(round_numbers(1.1, 5, 2, Some(0.0)).is_err());
    // A step below one point is one point; no overflow for tiny steps (found by schemathesis).
    let fine = round_numbers(1.08437, 5, 1, Some(4.8e-234)).unwrap();
    assert_eq!(fine.step, 0.00001);
    assert_eq!(fine.levels.len(), 2);
    assert!(round_numbers(1e12, 12, 1, Some(1e-300)).is_err());
}

#[test]
fn key_levels_together() {
    let bars = zigzag();
    let input = KeyLevelsInput {
        period_bars: &bars,
        zone_bars: &bars,
        price: 105.0,
        digits: 2,
        now: bars[bars.len() - 1].time + 3_600_000,
        config: KeyLevelsConfig {
            zones: ZoneConfig {
                swing_length: 2,
                ..ZoneConfig::default()
            },
            ..KeyLevelsConfig::default()
        },
    };
    // All bars fall on 2026-11-02 (36 hourly bars spill into 11-03): the previous day is 11-02.
    let k = key_levels(&input).unwrap();
    assert_eq!(k.pivots.len(), 4);
    let day = &k.periods[0];
    assert_eq!(day.previous.as_ref().unwrap().start, t("2026-11-02T00:00:00Z"));
    assert!(k.zones.is_some());
    assert_eq!(k.round_numbers.levels.len(), 4);
    // Too few zone bars: a note, not an error.
    let short = KeyLevelsInput {
        zone_bars: &bars[..3],
        ..input
    };
    let k = key_levels(&short).unwrap();
    assert!(k.zones.is_none());
    assert!(k.notes.iter().any(|n| n.contains("zones")));
}
