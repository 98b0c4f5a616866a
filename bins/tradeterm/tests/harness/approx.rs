//! Approximate equality of numbers and of JSON documents holding numbers.
//!
//! One rule everywhere: two numbers are equal when they differ by at most
//! `rel` times the larger magnitude, or `rel` itself near zero. Every caller
//! names its tolerance: `1e-12` for a float that went through JSON once (the
//! parser may be one unit in the last place off), `1e-9` for results computed
//! again from JSON inputs, wider where the test says why.

use serde_json::Value;

/// Whether `a` and `b` are equal within the relative tolerance `rel`
/// (`|a - b| <= rel * max(|a|, |b|, 1)`).
pub fn close_to(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

/// Asserts [`close_to`], naming `what` in the failure.
#[track_caller]
pub fn assert_close(got: f64, want: f64, rel: f64, what: &str) {
    assert!(
        close_to(got, want, rel),
        "{what}: got {got}, want {want} (relative tolerance {rel})"
    );
}

/// Equal JSON documents: the same keys in the same order, the same array
/// lengths, every number within `rel` ([`close_to`]) and every other value
/// equal. `path` names the document in failures.
#[track_caller]
pub fn assert_json_close(got: &Value, want: &Value, rel: f64, path: &str) {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!(close_to(a, b, rel), "{path}: {a} != {b} (relative tolerance {rel})");
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: lengths");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_json_close(x, y, rel, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            assert_eq!(
                a.keys().collect::<Vec<_>>(),
                b.keys().collect::<Vec<_>>(),
                "{path}: keys"
            );
            for (k, y) in b {
                assert_json_close(&a[k], y, rel, &format!("{path}.{k}"));
            }
        }
        _ => assert_eq!(got, want, "{path}"),
    }
}

/// Every key of `want` is in `got` with the same value, numbers within `rel`
/// ([`close_to`]); arrays have the same length. Keys only `got` has are
/// allowed.
#[track_caller]
pub fn assert_json_contains(got: &Value, want: &Value, rel: f64, path: &str) {
    match want {
        Value::Object(m) => {
            for (k, w) in m {
                assert_json_contains(&got[k.as_str()], w, rel, &format!("{path}.{k}"));
            }
        }
        Value::Array(a) => {
            let g = got.as_array().unwrap_or_else(|| panic!("{path}: not an array: {got}"));
            assert_eq!(g.len(), a.len(), "{path}: lengths");
            for (i, w) in a.iter().enumerate() {
                assert_json_contains(&g[i], w, rel, &format!("{path}[{i}]"));
            }
        }
        Value::Number(n) => {
            let w = n.as_f64().unwrap();
            let g = got.as_f64().unwrap_or_else(|| panic!("{path}: not a number: {got}"));
            assert!(
                close_to(g, w, rel),
                "{path}: got {g}, want {w} (relative tolerance {rel})"
            );
        }
        other => assert_eq!(got, other, "{path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tolerance_is_relative_and_absolute_near_zero() {
        assert!(close_to(1e6, 1e6 + 0.5, 1e-6));
        assert!(!close_to(1e6, 1e6 + 2.0, 1e-6));
        assert!(close_to(0.0, 1e-10, 1e-9));
        assert!(!close_to(0.0, 1e-8, 1e-9));
        assert!(!close_to(1.0, f64::NAN, 1.0));
    }
}
