use super::*;

fn bar(time: i64, open: f64, high: f64, low: f64, close: f64) -> Bar {
    Bar {
        time,
        open,
        high,
        low,
        close,
        volume: 0.0,
    }
}

/// `n` identical quiet bars: body 0.2, range 1.0 (no pattern but doji-free).
fn quiet(n: i64) -> Vec<Bar> {
    (0..n).map(|t| bar(t, 100.0, 100.6, 99.6, 100.2)).collect()
}

/// A deterministic pseudo-random walk with well-formed bars.
fn walk(n: usize, seed: u64) -> Vec<Bar> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64) / ((1u64 << 53) as f64)
    };
    let mut close = 100.0;
    (0..n)
        .map(|t| {
            let open = close + (next() - 0.5) * 0.4;
            close = open + (next() - 0.5) * 2.0;
            let high = open.max(close) + next() * 0.8;
            let low = open.min(close) - next() * 0.8;
            bar(t as i64, open, high, low, close)
        })
        .collect()
}

#[test]
fn lookbacks_are_talibs() {
    let expected = [
        (Pattern::Engulfing, 2),
        (Pattern::Hammer, 11),
        (Pattern::InvertedHammer, 11),
        (Pattern::Doji, 10),
        (Pattern::DragonflyDoji, 10),
        (Pattern::LongLeggedDoji, 10),
        (Pattern::DojiStar, 11),
        (Pattern::Harami, 11),
        (Pattern::MorningStar, 12),
        (Pattern::EveningDojiStar, 12),
        (Pattern::Piercing, 11),
        (Pattern::DarkCloudCover, 11),
        (Pattern::ThreeWhiteSoldiers, 12),
        (Pattern::ThreeBlackCrows, 13),
        (Pattern::Marubozu, 10),
        (Pattern::SpinningTop, 10),
        (Pattern::RickshawMan, 10),
        (Pattern::Counterattack, 11),
        (Pattern::MatchingLow, 6),
        (Pattern::ThreeOutside, 3),
        (Pattern::ThreeLineStrike, 8),
        (Pattern::AdvanceBlock, 12),
        (Pattern::Breakaway, 14),
        (Pattern::ConcealingBabySwallow, 13),
        (Pattern::GapSideBySideWhite, 7),
        (Pattern::Hikkake, 5),
        (Pattern::ModifiedHikkake, 10),
        (Pattern::MatHold, 14),
        (Pattern::StickSandwich, 7),
        (Pattern::GapThreeMethods, 2),
    ];
    for (p, lb) in expected {
        assert_eq!(p.lookback(), lb, "{p}");
    }
}

#[test]
fn names_round_trip_and_talib_names_parse() {
    for p in Pattern::ALL {
        assert_eq!(p.name().parse::<Pattern>(), Ok(p));
        assert_eq!(p.talib_name().parse::<Pattern>(), Ok(p));
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, format!("\"{}\"", p.name()));
    }
    assert_eq!("Morning-Star".parse::<Pattern>(), Ok(Pattern::MorningStar));
    assert_eq!("3blackcrows".parse::<Pattern>(), Ok(Pattern::ThreeBlackCrows));
    assert!(matches!(
        "cup_and_handle".parse::<Pattern>(),
        Err(CoreError::InvalidParameter { name, .. }) if name == "pattern"
    ));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    assert!(matches!(detect(Pattern::Doji, &[]), Err(CoreError::InvalidInput(_))));
    assert!(matches!(scan(&[]), Err(CoreError::InvalidInput(_))));

    let mut bars = quiet(20);
    bars[7].close = f64::NAN;
    let err = detect(Pattern::Hammer, &bars).unwrap_err();
    assert!(
        matches!(&err, CoreError::InvalidInput(m) if m.contains("bar 7")),
        "{err}"
    );

    let mut bars = quiet(20);
    bars[3].high = 99.0; // below the low
    assert!(matches!(scan(&bars), Err(CoreError::InvalidInput(_))));

    let mut bars = quiet(20);
    bars[4].low = f64::NEG_INFINITY;
    assert!(detect(Pattern::Engulfing, &bars).is_err());
}

#[test]
fn penetration_is_checked() {
    let bars = quiet(20);
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            detect_with(Pattern::MorningStar, &bars, Some(bad)),
            Err(CoreError::InvalidParameter { name, .. }) if name == "penetration"
        ));
    }
    assert!(detect_with(Pattern::Hammer, &bars, Some(0.3)).is_err());
    assert!(detect_with(Pattern::DarkCloudCover, &bars, Some(0.0)).is_ok());
    assert!(detect_with(Pattern::AbandonedBaby, &bars, Some(0.5)).is_ok());
    assert!(detect_with(Pattern::MatHold, &bars, Some(0.2)).is_ok());
    assert!(detect_with(Pattern::Hikkake, &bars, Some(0.2)).is_err());
}

#[test]
fn short_series_give_zeros_of_the_same_length() {
    for n in 1..15 {
        let bars = walk(n, 7);
        for p in Pattern::ALL {
            let out = detect(p, &bars).unwrap();
            assert_eq!(out.len(), n);
            assert!(out[..p.lookback().min(n)].iter().all(|&v| v == 0), "{p} n={n}");
        }
    }
}

#[test]
fn values_are_talibs_codes_and_nothing_looks_ahead() {
    let bars = walk(600, 42);
    let mut seen = 0;
    for p in Pattern::ALL {
        let full = detect(p, &bars).unwrap();
        for &v in &full {
            assert!([0, 80, -80, 100, -100, 200, -200].contains(&v), "{p}: {v}");
            let hikkake = matches!(p, Pattern::Hikkake | Pattern::ModifiedHikkake);
            assert!(v.abs() != 200 || hikkake, "{p}: {v}");
            if !p.is_directional() {
                assert!(v == 0 || v == 100, "{p}: {v}");
            }
        }
        seen += full.iter().filter(|&&v| v != 0).count();
        for cut in [1, 13, 200, 599] {
            let prefix = detect(p, &bars[..cut]).unwrap();
            assert_eq!(prefix[..], full[..cut], "{p} prefix {cut}");
        }
    }
    assert!(seen > 100, "the random walk should show patterns, saw {seen}");
}

#[test]
fn engulfing_full_and_matching_end() {
    let mut bars = quiet(12);
    bars.push(bar(12, 100.5, 100.6, 99.4, 99.5)); // black
    bars.push(bar(13, 99.3, 101.2, 99.2, 101.0)); // white, engulfs strictly
    bars.push(bar(14, 101.0, 101.1, 99.0, 99.2)); // black, opens at the prior close
    let out = detect(Pattern::Engulfing, &bars).unwrap();
    assert_eq!(out[13], 100);
    assert_eq!(out[14], -80);
}

#[test]
fn hammer_and_doji_on_built_candles() {
    let mut bars = quiet(12);
    // Body 0.15 (< average 0.2, > doji 0.1), lower shadow 1.45, upper
    // shadow 0.02, at the prior low: a hammer.
    bars.push(bar(12, 99.65, 99.82, 98.2, 99.8));
    // Open = close: a doji; shadows 0.5 each, longer than the zero body.
    bars.push(bar(13, 100.0, 100.5, 99.5, 100.0));
    let hammer = detect(Pattern::Hammer, &bars).unwrap();
    assert_eq!(hammer[12], 100);
    let doji = detect(Pattern::Doji, &bars).unwrap();
    assert_eq!((doji[12], doji[13]), (0, 100));
    assert_eq!(detect(Pattern::LongLeggedDoji, &bars).unwrap()[13], 100);
    let hits = scan(&bars).unwrap();
    let doji_hit = hits.iter().find(|h| h.pattern == Pattern::Doji).expect("doji hit");
    assert_eq!(
        (doji_hit.index, doji_hit.time, doji_hit.direction),
        (13, 13, Direction::Neutral)
    );
    assert!(hits.windows(2).all(|w| w[0].index <= w[1].index));
}

#[test]
fn morning_star_respects_penetration() {
    let mut bars = quiet(12);
    bars.push(bar(12, 101.0, 101.1, 98.9, 99.0)); // long black, body 2
    bars.push(bar(13, 98.8, 98.9, 98.5, 98.7)); // short body gapping down
    bars.push(bar(14, 98.9, 100.3, 98.8, 100.2)); // white, closes 1.2 into the body (60 %)
    assert_eq!(detect(Pattern::MorningStar, &bars).unwrap()[14], 100);
    assert_eq!(detect_with(Pattern::MorningStar, &bars, Some(0.5)).unwrap()[14], 100);
    assert_eq!(detect_with(Pattern::MorningStar, &bars, Some(0.7)).unwrap()[14], 0);
    let hit = scan(&bars)
        .unwrap()
        .into_iter()
        .find(|h| h.pattern == Pattern::MorningStar)
        .expect("morning star hit");
    assert_eq!((hit.index, hit.direction, hit.value), (14, Direction::Bullish, 100));
}

#[test]
fn hikkake_signals_then_confirms() {
    let mut bars = quiet(6);
    bars.push(bar(6, 100.0, 102.0, 98.0, 101.0)); // wide bar
    bars.push(bar(7, 100.5, 101.5, 99.0, 100.0)); // inside it
    bars.push(bar(8, 99.5, 101.0, 98.5, 99.0)); // lower high and lower low: bullish hikkake
    bars.push(bar(9, 99.0, 100.0, 98.4, 99.5)); // no confirmation yet, not inside bar 8
    bars.push(bar(10, 99.6, 102.0, 99.5, 101.8)); // closes above the inside bar's high
    let out = detect(Pattern::Hikkake, &bars).unwrap();
    assert_eq!(&out[8..], &[100, 0, 200]);
    let hit = scan(&bars)
        .unwrap()
        .into_iter()
        .find(|h| h.pattern == Pattern::Hikkake && h.index == 10)
        .expect("confirmation hit");
    assert_eq!((hit.direction, hit.value), (Direction::Bullish, 200));
}

#[test]
fn marubozu_and_belt_hold_on_built_candles() {
    let mut bars = quiet(12);
    // Body 2.0 (> average 0.2), no shadows: marubozu, closing marubozu,
    // belt hold and long line at once.
    bars.push(bar(12, 100.0, 102.0, 100.0, 102.0));
    // Black, long, no upper shadow but a lower one: belt hold, not marubozu.
    bars.push(bar(13, 102.0, 102.0, 99.0, 100.0));
    let marubozu = detect(Pattern::Marubozu, &bars).unwrap();
    assert_eq!((marubozu[12], marubozu[13]), (100, 0));
    let belt = detect(Pattern::BeltHold, &bars).unwrap();
    assert_eq!((belt[12], belt[13]), (100, -100));
    assert_eq!(detect(Pattern::ClosingMarubozu, &bars).unwrap()[13], 0);
    assert_eq!(detect(Pattern::LongLine, &bars).unwrap()[12], 100);
}
