//! Confluence conditions: "indicator X compared with a number or with
//! indicator Y, at the last bar".
//!
//! A condition's left side is a series of the indicator catalog
//! ([`crate::indicators::compute`]) or the pseudo-indicator `price` (outputs
//! `close` (default), `open`, `high`, `low`); its right side is a number or
//! another such series on the same bars. Comparisons (`gt`, `lt`, `gte`,
//! `lte`) use the values at the last bar; crosses use the last two bars:
//! `cross_above` is `left[t−1] ≤ right[t−1]` and `left[t] > right[t]`,
//! `cross_below` is `left[t−1] ≥ right[t−1]` and `left[t] < right[t]`.
//! A series without a value where one is needed (warm-up longer than the
//! history) makes the condition unevaluable: [`assess`] says so, with the
//! bars it needs and has ([`Unevaluable`]), and [`evaluate`] makes it an
//! error; never a silent `false`, and never a `true`.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use tradeterm_core::Bar;
//! use tradeterm_core::confluence::{Op, Operand, SeriesRef, evaluate};
//!
//! // A steady rise: RSI(14) is 100 at the last bar.
//! let bars: Vec<Bar> = (0..30)
//!     .map(|i| {
//!         let c = 100.0 + i as f64;
//!         Bar { time: i * 60_000, open: c - 0.5, high: c + 1.0, low: c - 1.0, close: c, volume: 1.0 }
//!     })
//!     .collect();
//! let rsi = SeriesRef { indicator: "rsi".into(), params: BTreeMap::from([("period".into(), 14.0)]), output: None };
//! let outcome = evaluate(&bars, &rsi, Op::Gt, &Operand::Number(70.0))?;
//! assert!(outcome.passed);
//! assert_eq!((outcome.left, outcome.right), (100.0, 70.0));
//! # Ok::<(), tradeterm_core::CoreError>(())
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::{compute, find};
use crate::{Bar, CoreError};

/// Comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Left > right at the last bar.
    Gt,
    /// Left < right at the last bar.
    Lt,
    /// Left ≥ right at the last bar.
    Gte,
    /// Left ≤ right at the last bar.
    Lte,
    /// Left was ≤ right one bar earlier and is > right now.
    CrossAbove,
    /// Left was ≥ right one bar earlier and is < right now.
    CrossBelow,
}

/// A series: an indicator of the catalog (or `price`) with parameters and an output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = crate::indicators::choice_schemas(true, true)))]
pub struct SeriesRef {
    /// Indicator name or alias (`rsi`, `ema`, `bbands`, ...), or `price`.
    pub indicator: String,
    /// Parameters by name; missing ones take their defaults.
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
    /// Output series (`upper`, `signal`, `close`, ...); default the indicator's first output.
    #[serde(default)]
    pub output: Option<String>,
}

impl SeriesRef {
    /// Checks the series as its schema states it ([`crate::indicators::check_choice`]
    /// with `price`); `field` prefixes the names in errors.
    ///
    /// # Errors
    /// [`CoreError::InvalidParameter`] naming the field.
    pub fn check(&self, field: &str) -> Result<(), CoreError> {
        crate::indicators::check_choice(field, &self.indicator, &self.params, self.output.as_deref(), true)
    }
}

/// Right-hand side: a number or a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Operand {
    /// A constant.
    Number(f64),
    /// Another series on the same bars.
    Series(SeriesRef),
}

/// Outcome of one condition.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Outcome {
    /// Whether the condition holds.
    pub passed: bool,
    /// `indicator.output` of the left side, canonical.
    pub left_name: String,
    /// Left value at the last bar.
    pub left: f64,
    /// Left value one bar earlier (crosses only).
    pub left_prev: Option<f64>,
    /// Name of the right side (`value` for a number).
    pub right_name: String,
    /// Right value at the last bar.
    pub right: f64,
    /// Right value one bar earlier (crosses only).
    pub right_prev: Option<f64>,
}

const PRICE_OUTPUTS: [&str; 4] = ["close", "open", "high", "low"];

/// The values of `series` over `bars`, with its canonical `indicator.output` name.
///
/// # Errors
/// [`CoreError::InvalidParameter`] for an unknown indicator, parameter or
/// output; the errors of [`compute`].
pub fn resolve(bars: &[Bar], series: &SeriesRef) -> Result<(String, Vec<Option<f64>>), CoreError> {
    let key = series.indicator.trim().to_ascii_lowercase();
    if key == "price" {
        if !series.params.is_empty() {
            return Err(CoreError::param("params", "`price` takes no parameters"));
        }
        crate::bars::validate_series(bars)?;
        let out = series.output.as_deref().unwrap_or("close").to_ascii_lowercase();
        let pick: fn(&Bar) -> f64 = match out.as_str() {
            "close" => |b| b.close,
            "open" => |b| b.open,
            "high" => |b| b.high,
            "low" => |b| b.low,
            _ => {
                return Err(CoreError::param(
                    "output",
                    format!(
                        "unknown output `{out}` of `price`; one of: {}",
                        PRICE_OUTPUTS.join(", ")
                    ),
                ));
            }
        };
        return Ok((format!("price.{out}"), bars.iter().map(|b| Some(pick(b))).collect()));
    }
    let info = find(&series.indicator).ok_or_else(|| {
        let names: Vec<&str> = crate::indicators::catalog().iter().map(|i| i.name).collect();
        CoreError::param(
            "indicator",
            format!(
                "unknown indicator `{}`; one of: price, {}",
                series.indicator,
                names.join(", ")
            ),
        )
    })?;
    let output = match &series.output {
        Some(o) => {
            let o = o.trim().to_ascii_lowercase();
            if !info.outputs.contains(&o.as_str()) {
                return Err(CoreError::param(
                    "output",
                    format!(
                        "`{}` has no output `{o}`; one of: {}",
                        info.name,
                        info.outputs.join(", ")
                    ),
                ));
            }
            o
        }
        None => info.outputs.first().map(|s| s.to_string()).unwrap_or_default(),
    };
    let computed = compute(info.name, &series.params, bars)?;
    let values = computed
        .get(&output)
        .ok_or_else(|| CoreError::param("output", format!("`{}` produced no `{output}`", info.name)))?
        .to_vec();
    Ok((format!("{}.{output}", info.name), values))
}

/// The finite value `back` bars before the last one, if any.
fn at(values: &[Option<f64>], back: usize) -> Option<f64> {
    values
        .len()
        .checked_sub(1 + back)
        .and_then(|i| values[i])
        .filter(|v| v.is_finite())
}

/// Why a condition cannot be evaluated on the bars given: one of its series
/// has no value at a bar it needs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Unevaluable {
    /// `indicator.output` of the series without a value.
    pub series: String,
    /// Bars given.
    pub bars_available: usize,
    /// Bars the series needs for a value at every bar the operator reads
    /// (the last one, and the one before for a cross); `null` when no history
    /// length gives one (a series plotted into the past, such as Ichimoku's
    /// `chikou`).
    pub bars_needed: Option<usize>,
    /// One sentence for a trader.
    pub reason: String,
}

/// Outcome of [`assess`]: evaluated, or why not.
#[derive(Debug, Clone, PartialEq)]
pub enum Assessment {
    /// Both sides have their values.
    Evaluated(Outcome),
    /// A side has no value where one is needed.
    Unevaluable(Unevaluable),
}

/// Bars a synthetic history has when [`assess`] measures a warm-up: room for
/// the longest warm-up of the catalog (three periods of at most
/// [`crate::indicators::MAX_PERIOD`] bars, as in the stochastic).
const SYNTHETIC_BARS: usize = 4 * crate::indicators::MAX_PERIOD;

/// A deterministic, always-moving history of `n` bars ending at `last_time`,
/// `step` apart: warm-ups do not depend on the prices, only on a series that
/// moves (a flat one leaves some indicators undefined).
fn synthetic_bars(n: usize, last_time: i64, step: i64) -> Vec<Bar> {
    (0..n)
        .map(|i| {
            let x = i as f64;
            let close = 100.0 + 5.0 * (x * 0.3).sin() + (i % 7) as f64 * 0.1;
            Bar {
                time: last_time - (n - 1 - i) as i64 * step,
                open: close - 0.2,
                high: close + 1.0,
                low: close - 1.0,
                close,
                volume: 1.0 + (i % 5) as f64,
            }
        })
        .collect()
}

/// Bars `series` needs to have a value `back` bars before the last one
/// (its warm-up plus `back + 1`), measured on a synthetic history shaped
/// like `bars` (same spacing and last time); `None` when even that history
/// has no value there.
fn bars_needed(bars: &[Bar], series: &SeriesRef, back: usize) -> Option<usize> {
    let last_time = bars.last().map_or(0, |b| b.time);
    let step = match bars {
        [.., a, b] if b.time > a.time => b.time - a.time,
        _ => 60_000,
    };
    let (_, values) = resolve(&synthetic_bars(SYNTHETIC_BARS, last_time, step), series).ok()?;
    let valid = |v: &Option<f64>| v.is_some_and(f64::is_finite);
    // A value at the end of the long history, and from which bar on.
    if !values.iter().rev().take(back + 1).all(valid) {
        return None;
    }
    values.iter().position(valid).map(|first| first + back + 1)
}

/// `name` has no value `missing` bars before the last; the operator reads
/// the last `back + 1` bars.
fn unevaluable(bars: &[Bar], name: &str, series: Option<&SeriesRef>, missing: usize, back: usize) -> Unevaluable {
    let needed = series.map_or(Some(back + 1), |s| bars_needed(bars, s, back));
    let at = if missing == 0 {
        "at the last bar"
    } else {
        "one bar before the last"
    };
    let available = bars.len();
    let reason = match needed {
        Some(n) if n > available => format!(
            "`{name}` has no value {at}: its warm-up needs {n} bars and the history has {available} (insufficient history)"
        ),
        Some(_) => format!("`{name}` has no value {at}: the indicator is undefined there on these prices"),
        None => format!(
            "`{name}` has no value {at} for any length of history (a series plotted into the past, such as Ichimoku's chikou)"
        ),
    };
    Unevaluable {
        series: name.to_owned(),
        bars_available: available,
        bars_needed: needed,
        reason,
    }
}

/// Evaluates `left op right` on `bars` (see the module documentation).
///
/// # Errors
/// Those of [`resolve`]; [`CoreError::InvalidInput`] when a needed value is
/// missing (the reason of [`assess`]) or the constant is not finite.
pub fn evaluate(bars: &[Bar], left: &SeriesRef, op: Op, right: &Operand) -> Result<Outcome, CoreError> {
    match assess(bars, left, op, right)? {
        Assessment::Evaluated(outcome) => Ok(outcome),
        Assessment::Unevaluable(u) => Err(CoreError::InvalidInput(u.reason)),
    }
}

/// As [`evaluate`], with a missing value (a warm-up longer than the
/// history, an indicator undefined on these prices) reported as
/// [`Assessment::Unevaluable`] with the bars needed and available, not as an
/// error.
///
/// # Errors
/// Those of [`resolve`]; [`CoreError::InvalidInput`] when the constant is
/// not finite.
pub fn assess(bars: &[Bar], left: &SeriesRef, op: Op, right: &Operand) -> Result<Assessment, CoreError> {
    let (left_name, lv) = resolve(bars, left)?;
    let (right_name, rv) = match right {
        Operand::Number(x) if x.is_finite() => ("value".to_string(), vec![Some(*x); bars.len()]),
        Operand::Number(x) => return Err(CoreError::InvalidInput(format!("value {x} is not a finite number"))),
        Operand::Series(s) => resolve(bars, s)?,
    };
    let right_series = match right {
        Operand::Series(s) => Some(s),
        Operand::Number(_) => None,
    };
    let cross = matches!(op, Op::CrossAbove | Op::CrossBelow);
    let back = usize::from(cross);
    for (name, values, series) in [(&left_name, &lv, Some(left)), (&right_name, &rv, right_series)] {
        if let Some(missing) = (0..=back).find(|b| at(values, *b).is_none()) {
            // `price` needs no warm-up: one bar per bar read.
            let series = series.filter(|s| !s.indicator.trim().eq_ignore_ascii_case("price"));
            return Ok(Assessment::Unevaluable(unevaluable(bars, name, series, missing, back)));
        }
    }
    let (Some(l), Some(r)) = (at(&lv, 0), at(&rv, 0)) else {
        return Err(CoreError::InvalidInput("a checked value is missing".into()));
    };
    let (lp, rp) = if cross { (at(&lv, 1), at(&rv, 1)) } else { (None, None) };
    let passed = match (op, lp, rp) {
        (Op::Gt, ..) => l > r,
        (Op::Lt, ..) => l < r,
        (Op::Gte, ..) => l >= r,
        (Op::Lte, ..) => l <= r,
        (Op::CrossAbove, Some(lp), Some(rp)) => lp <= rp && l > r,
        (Op::CrossBelow, Some(lp), Some(rp)) => lp >= rp && l < r,
        _ => false,
    };
    Ok(Assessment::Evaluated(Outcome {
        passed,
        left_name,
        left: l,
        left_prev: lp,
        right_name,
        right: r,
        right_prev: rp,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regime::tests::from_closes;

    fn price() -> SeriesRef {
        SeriesRef {
            indicator: "price".into(),
            params: BTreeMap::new(),
            output: None,
        }
    }

    fn sma(p: f64) -> SeriesRef {
        SeriesRef {
            indicator: "SMA".into(),
            params: BTreeMap::from([("period".into(), p)]),
            output: None,
        }
    }

    #[test]
    fn comparisons_by_hand() {
        let bars = from_closes(&[1.0, 2.0, 3.0, 4.0], &[0.5; 4]);
        let o = evaluate(&bars, &price(), Op::Gt, &Operand::Number(3.5)).unwrap();
        assert!(o.passed);
        assert_eq!((o.left, o.right, o.left_name.as_str()), (4.0, 3.5, "price.close"));
        assert!(!evaluate(&bars, &price(), Op::Lt, &Operand::Number(3.5)).unwrap().passed);
        assert!(
            evaluate(&bars, &price(), Op::Gte, &Operand::Number(4.0))
                .unwrap()
                .passed
        );
        assert!(
            evaluate(&bars, &price(), Op::Lte, &Operand::Number(4.0))
                .unwrap()
                .passed
        );
        // SMA(3) at the last bar = 3; close 4 > 3.
        let o = evaluate(&bars, &price(), Op::Gt, &Operand::Series(sma(3.0))).unwrap();
        assert_eq!((o.passed, o.right, o.right_name.as_str()), (true, 3.0, "sma.sma"));
    }

    #[test]
    fn crosses_by_hand() {
        // Closes 3, 2, 1, 4: SMA(2) = -, 2.5, 1.5, 2.5; close crosses above (1 ≤ 1.5, 4 > 2.5).
        let bars = from_closes(&[3.0, 2.0, 1.0, 4.0], &[0.5; 4]);
        let o = evaluate(&bars, &price(), Op::CrossAbove, &Operand::Series(sma(2.0))).unwrap();
        assert!(o.passed, "{o:?}");
        assert_eq!((o.left_prev, o.right_prev), (Some(1.0), Some(1.5)));
        assert!(
            !evaluate(&bars, &price(), Op::CrossBelow, &Operand::Series(sma(2.0)))
                .unwrap()
                .passed
        );
        let bars = from_closes(&[3.0, 2.0, 3.0, 1.0], &[0.5; 4]);
        assert!(
            evaluate(&bars, &price(), Op::CrossBelow, &Operand::Number(2.0))
                .unwrap()
                .passed
        );
        // Touching then staying equal is not a cross.
        let bars = from_closes(&[2.0, 2.0], &[0.5; 2]);
        assert!(
            !evaluate(&bars, &price(), Op::CrossAbove, &Operand::Number(2.0))
                .unwrap()
                .passed
        );
    }

    #[test]
    fn a_warm_up_longer_than_the_history_is_unevaluable_with_the_bars_needed() {
        let bars = from_closes(&[1.0, 2.0, 3.0], &[0.5; 3]);
        let un = |left: &SeriesRef, op: Op, right: &Operand| match assess(&bars, left, op, right).unwrap() {
            Assessment::Unevaluable(u) => u,
            Assessment::Evaluated(o) => panic!("evaluated: {o:?}"),
        };
        // SMA(10): a value from the 10th bar on.
        let u = un(&sma(10.0), Op::Gt, &Operand::Number(1.0));
        assert_eq!(
            (u.series.as_str(), u.bars_available, u.bars_needed),
            ("sma.sma", 3, Some(10))
        );
        assert!(u.reason.contains("needs 10 bars and the history has 3"), "{}", u.reason);
        // A cross reads one bar more; the right side is checked too.
        let u = un(&price(), Op::CrossAbove, &Operand::Series(sma(3.0)));
        assert_eq!((u.series.as_str(), u.bars_needed), ("sma.sma", Some(4)));
        assert!(u.reason.contains("one bar before the last"), "{}", u.reason);
        // MACD's default warm-up: slow + signal − 2 = 33, so 34 bars.
        let macd = SeriesRef {
            indicator: "macd".into(),
            params: BTreeMap::new(),
            output: Some("signal".into()),
        };
        assert_eq!(un(&macd, Op::Gt, &Operand::Number(0.0)).bars_needed, Some(34));
        // Chikou is plotted 26 bars into the past: never a value at the last bar.
        let chikou = SeriesRef {
            indicator: "ichimoku".into(),
            params: BTreeMap::new(),
            output: Some("chikou".into()),
        };
        let long = from_closes(&[1.0; 200], &[0.5; 200]);
        match assess(&long, &chikou, Op::Gt, &Operand::Number(0.0)).unwrap() {
            Assessment::Unevaluable(u) => assert_eq!((u.bars_needed, u.bars_available), (None, 200)),
            Assessment::Evaluated(o) => panic!("evaluated: {o:?}"),
        }
        // Enough history: evaluated, the same as `evaluate`.
        let ten = from_closes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], &[0.5; 10]);
        let Assessment::Evaluated(o) = assess(&ten, &price(), Op::Gt, &Operand::Series(sma(10.0))).unwrap() else {
            panic!("not evaluated");
        };
        assert_eq!(
            o,
            evaluate(&ten, &price(), Op::Gt, &Operand::Series(sma(10.0))).unwrap()
        );
    }

    #[test]
    fn errors_are_clear() {
        let bars = from_closes(&[1.0, 2.0, 3.0], &[0.5; 3]);
        let e = evaluate(&bars, &sma(10.0), Op::Gt, &Operand::Number(1.0)).unwrap_err();
        assert!(e.to_string().contains("warm-up"), "{e}");
        let bad = SeriesRef {
            indicator: "nope".into(),
            ..price()
        };
        assert!(
            evaluate(&bars, &bad, Op::Gt, &Operand::Number(1.0))
                .unwrap_err()
                .to_string()
                .contains("unknown")
        );
        let bad = SeriesRef {
            output: Some("upper".into()),
            ..sma(2.0)
        };
        assert!(evaluate(&bars, &bad, Op::Gt, &Operand::Number(1.0)).is_err());
        assert!(evaluate(&bars, &price(), Op::Gt, &Operand::Number(f64::NAN)).is_err());
        let bad = SeriesRef {
            output: Some("volume".into()),
            ..price()
        };
        assert!(evaluate(&bars, &bad, Op::Gt, &Operand::Number(1.0)).is_err());
        assert!(evaluate(&[], &price(), Op::Gt, &Operand::Number(1.0)).is_err());
    }

    #[test]
    fn operand_json_forms() {
        let n: Operand = serde_json::from_str("70").unwrap();
        assert_eq!(n, Operand::Number(70.0));
        let s: Operand = serde_json::from_str(r#"{"indicator":"ema","params":{"period":50}}"#).unwrap();
        assert!(matches!(s, Operand::Series(ref r) if r.indicator == "ema"));
    }

    #[test]
    fn real_data_bands_contain_price_mostly() {
        let bars = crate::bars::parse_csv(include_str!("../../../data/market/eurusd_1h_gym_anytrading.csv")).unwrap();
        let upper = SeriesRef {
            indicator: "bbands".into(),
            params: BTreeMap::new(),
            output: Some("upper".into()),
        };
        let mut inside = 0;
        let mut total = 0;
        for end in (100..bars.len()).step_by(50) {
            total += 1;
            if evaluate(&bars[..end], &price(), Op::Lte, &Operand::Series(upper.clone()))
                .unwrap()
                .passed
            {
                inside += 1;
            }
        }
        assert!(inside * 10 >= total * 8, "{inside}/{total}");
    }
}
