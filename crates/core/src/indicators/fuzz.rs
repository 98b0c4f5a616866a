//! The property the fuzz target (`fuzz/fuzz_targets/indicators.rs`) checks,
//! shared with the seeded test `tests/indicators_fuzz.rs` so that the normal
//! test suite runs it too. Not part of the API (`#[doc(hidden)]`).
//!
//! [`check`] decodes arbitrary bytes into an indicator name, a parameter map
//! and a bar series — NaN, infinities, huge and negative values, unordered or
//! repeated times and empty series included — and asserts the contract of the
//! batch API:
//!
//! - nothing panics;
//! - `compute` returns series exactly as long as the input, or a typed error
//!   ([`CoreError::InvalidParameter`] or [`CoreError::InvalidInput`]);
//! - `Ok` implies a non-empty series of finite bars;
//! - the column forms (`over_column`, `over_columns`) agree with `compute`
//!   value for value (NaN where `compute` has `None`), or fail alike;
//! - structure detection (batch and streaming) never panics, and every event
//!   it reports is confirmed within the series, never before the bar it is
//!   about.

use std::collections::BTreeMap;

use crate::indicators::{AverageTrueRange, ExponentialMovingAverage, RelativeStrengthIndex, catalog, compute};
use crate::structure::{
    BosChochConfig, FvgConfig, LiquidityConfig, LiquidityTolerance, OrderBlockConfig, StructureConfig,
    StructureDetector, detect,
};
use crate::{Bar, CoreError};

/// Reads the input front to back; past the end every read is 0.
#[derive(Debug)]
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        b.iter_mut().for_each(|x| *x = self.u8());
        u64::from_le_bytes(b)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A number, biased towards the interesting ones.
    fn number(&mut self) -> f64 {
        match self.u8() % 16 {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => f64::from_bits(self.u64()),
            4 => 0.0,
            5 => -(f64::from(self.u16())),
            6 => 1e300,
            7 => f64::MIN_POSITIVE,
            8 => f64::from(self.u16()) + 0.5,
            _ => f64::from(self.u16() % 200),
        }
    }

    /// A price: mostly a small walk around `around`; when `wild`, sometimes anything.
    fn price(&mut self, around: f64, wild: bool) -> f64 {
        match self.u8() % 32 {
            0 if wild => self.number(),
            1 => -around,
            b => around + (f64::from(b) - 16.0) * 0.25,
        }
    }
}

/// Decodes a bar series: a count, whether values may be wild (NaN, ±∞,
/// anything; otherwise every series is finite, so long series reach the `Ok`
/// paths too), then per bar a time step and the fields.
fn bars(input: &mut Bytes<'_>) -> Vec<Bar> {
    let n = usize::from(input.u16() % 700);
    let wild = input.u8().is_multiple_of(2);
    let mut out = Vec::with_capacity(n);
    let mut time = 1_600_000_000_000i64;
    let mut last = 100.0;
    for _ in 0..n {
        if input.is_empty() {
            break;
        }
        time = match input.u8() % 16 {
            0 => time,                                          // repeated
            1 => time.saturating_sub(60_000),                   // backwards
            2 => i64::from_le_bytes(input.u64().to_le_bytes()), // anywhere
            k => time.saturating_add(i64::from(k) * 3_600_000),
        };
        let open = input.price(last, wild);
        let close = input.price(last, wild);
        let (hi, lo) = if open > close { (open, close) } else { (close, open) };
        let (high, low) = match input.u8() % 8 {
            0 => (input.price(last, wild), input.price(last, wild)), // possibly inconsistent
            k => (hi + f64::from(k) * 0.1, lo - f64::from(k) * 0.1),
        };
        let volume = match input.u8() % 8 {
            0 if wild => input.number(),
            1 => 0.0,
            k => f64::from(k) * 10.0,
        };
        if close.is_finite() && close.abs() < 1e6 {
            last = close;
        }
        out.push(Bar {
            time,
            open,
            high,
            low,
            close,
            volume,
        });
    }
    out
}

/// An indicator name: a catalog name or alias (with case and separators
/// varied), or arbitrary text.
fn name(input: &mut Bytes<'_>) -> String {
    let cat = catalog();
    let pick = usize::from(input.u8());
    let Some(info) = cat.get(pick % (cat.len() + 2)) else {
        let len = usize::from(input.u8() % 12);
        return (0..len).map(|_| char::from(input.u8())).collect();
    };
    let base = match info.aliases.get(usize::from(input.u8() % 4)) {
        Some(alias) if pick & 1 == 1 => alias,
        _ => info.name,
    };
    match input.u8() % 4 {
        0 => base.to_ascii_uppercase(),
        1 => format!(" {} ", base.replace('_', "-")),
        _ => base.to_string(),
    }
}

/// A parameter map: keys of the named indicator (or any indicator, or junk)
/// with arbitrary values.
fn params(input: &mut Bytes<'_>, name: &str) -> BTreeMap<String, f64> {
    let own = crate::indicators::find(name).map(|i| i.params).unwrap_or(&[]);
    let count = input.u8() % 5;
    let mut out = BTreeMap::new();
    for _ in 0..count {
        let key = match input.u8() % 8 {
            0 => "period".to_string(),
            1 => "length".to_string(),
            _ if !own.is_empty() => own[usize::from(input.u8()) % own.len()].name.to_string(),
            _ => "fast".to_string(),
        };
        let value = match input.u8() % 4 {
            0 => input.number(),
            _ => f64::from(input.u8() % 40),
        };
        out.insert(key, value);
    }
    out
}

fn typed(err: &CoreError) -> bool {
    matches!(err, CoreError::InvalidParameter { .. } | CoreError::InvalidInput(_))
}

fn all_finite(bars: &[Bar]) -> bool {
    bars.iter()
        .all(|b| [b.open, b.high, b.low, b.close, b.volume].iter().all(|v| v.is_finite()))
}

/// Column output equals `compute`'s (NaN for `None`, bit for bit otherwise).
fn same_column(column: &[f64], values: &[Option<f64>]) -> bool {
    column.len() == values.len()
        && column.iter().zip(values).all(|(c, v)| match v {
            Some(v) => c.to_bits() == v.to_bits(),
            None => c.is_nan(),
        })
}

/// Checks the column forms against `compute` where they exist.
fn check_columns(name: &str, params: &BTreeMap<String, f64>, bars: &[Bar], series: Option<&[Option<f64>]>) {
    let period = |default: usize| match params.get("period") {
        Some(&p) if p.fract() == 0.0 && (0.0..=1e6).contains(&p) => p as usize,
        Some(_) => usize::MAX,
        None => default,
    };
    // Only `period` is a parameter of these three; other keys make `compute`
    // fail where the column form (which takes no map) does not.
    if params.keys().any(|k| k != "period") {
        return;
    }
    let close: Vec<f64> = bars.iter().map(|b| b.close).collect();
    let column = match crate::indicators::find(name).map(|i| i.name) {
        Some("rsi") => RelativeStrengthIndex::new(period(RelativeStrengthIndex::DEFAULT_PERIOD))
            .and_then(|r| r.over_column(&close)),
        Some("ema") => ExponentialMovingAverage::new(period(ExponentialMovingAverage::DEFAULT_PERIOD))
            .and_then(|e| e.over_column(&close)),
        Some("atr") => {
            let high: Vec<f64> = bars.iter().map(|b| b.high).collect();
            let low: Vec<f64> = bars.iter().map(|b| b.low).collect();
            AverageTrueRange::new(period(AverageTrueRange::DEFAULT_PERIOD))
                .and_then(|a| a.over_columns(&high, &low, &close))
        }
        _ => return,
    };
    match (series, column) {
        (Some(values), Ok(column)) => assert!(same_column(&column, values), "{name}: column form differs"),
        (None, Err(e)) => assert!(typed(&e), "{name}: untyped error {e:?}"),
        // The column forms check only the columns they read, `compute` the
        // whole bar: a non-finite open or volume fails only the latter.
        (None, Ok(_)) => assert!(!all_finite(bars), "{name}: compute failed on finite bars"),
        (Some(_), Err(e)) => panic!("{name}: column form failed where compute succeeded: {e}"),
    }
}

/// Checks structure detection on the same bars.
fn check_structure(input: &mut Bytes<'_>, bars: &[Bar]) {
    let flags = input.u8();
    let tolerance = match input.u8() % 4 {
        0 => LiquidityTolerance::Price {
            distance: input.number(),
        },
        1 => LiquidityTolerance::RangePercent {
            range_percent: input.number(),
        },
        _ => LiquidityTolerance::default(),
    };
    let config = StructureConfig {
        swing_length: usize::from(input.u8() % 12),
        fvg: (flags & 1 != 0).then_some(FvgConfig {
            join_consecutive: flags & 2 != 0,
        }),
        order_blocks: (flags & 4 != 0).then_some(OrderBlockConfig {
            close_mitigation: flags & 8 != 0,
        }),
        liquidity: (flags & 16 != 0).then_some(LiquidityConfig { tolerance }),
        bos_choch: (flags & 32 != 0).then_some(BosChochConfig {
            close_break: flags & 64 != 0,
        }),
    };
    match detect(bars, &config) {
        Ok(events) => {
            assert!(!bars.is_empty() && all_finite(bars), "detect accepted a bad series");
            for e in &events {
                assert!(
                    e.confirmed_at() < bars.len(),
                    "event confirmed after the last bar: {e:?}"
                );
                assert!(e.index() <= e.confirmed_at(), "event confirmed before its bar: {e:?}");
            }
        }
        Err(e) => assert!(typed(&e), "detect: untyped error {e:?}"),
    }
    let Ok(mut detector) = StructureDetector::new(config) else {
        return;
    };
    for bar in bars {
        let seen = detector.bars_seen();
        match detector.update(bar) {
            Ok(events) => assert!(
                events.iter().all(|e| e.confirmed_at() == seen),
                "streaming confirmation index"
            ),
            Err(e) => {
                assert!(typed(&e), "update: untyped error {e:?}");
                assert_eq!(detector.bars_seen(), seen, "a refused bar changed the detector");
            }
        }
    }
}

/// Decodes `data` and checks the batch indicator API and structure detection
/// on it; panics (fails the fuzz target or the test) on a contract breach.
pub fn check(data: &[u8]) {
    let mut input = Bytes(data);
    let name = name(&mut input);
    let params = params(&mut input, &name);
    let with_structure = input.u8().is_multiple_of(4);
    let bars = bars(&mut input);
    let result = compute(&name, &params, &bars);
    let series = match &result {
        Ok(out) => {
            assert!(!bars.is_empty(), "{name}: Ok on an empty series");
            assert!(all_finite(&bars), "{name}: Ok on a non-finite series");
            assert!(!out.series.is_empty(), "{name}: no output series");
            for s in &out.series {
                assert_eq!(s.values.len(), bars.len(), "{name}/{}: output length", s.name);
                assert_eq!(
                    s.first_valid,
                    s.values.iter().position(Option::is_some),
                    "{name}/{}: first_valid",
                    s.name
                );
            }
            out.series.first().map(|s| s.values.as_slice())
        }
        Err(e) => {
            assert!(typed(e), "{name}: untyped error {e:?}");
            None
        }
    };
    check_columns(&name, &params, &bars, series);
    if with_structure {
        check_structure(&mut input, &bars);
    }
}
