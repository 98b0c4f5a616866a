//! How the catalog's JSON Schemas are generated: schemars (draft 2020-12)
//! plus one transform, [`StandardFormats`], so that every surface (the REST
//! OpenAPI document, `GET /api/v1/tools`, the MCP tool list) carries the same
//! standard schemas.
//!
//! schemars writes a `format` for every Rust number type (`uint32`, `uint64`,
//! `int64`, `double`, `float`, `uint8`, …). None of them is a format of JSON
//! Schema 2020-12, and client validators (Ajv in the MCP Inspector, for one)
//! warn about each. The transform states an integer's width with `minimum`
//! and `maximum` instead (keeping a tighter bound already there) and drops
//! every `format` outside [`STANDARD_FORMATS`].
//!
//! The constraints the tools enforce on their inputs are stated in the
//! schemas from the same constants: the shapes of symbols, currencies and
//! calendar categories ([`SYMBOL_PATTERN`], [`CURRENCY_PATTERN`],
//! [`CATEGORY_PATTERN`], built from the character sets the checks use, see the
//! tests), every range and list size as `#[schemars(range(..), length(..))]`
//! next to the field with the constant its check reads, and times as
//! `format: date-time` (what [`tradeterm_core::time::parse_iso`] reads).
//!
//! JSON Schema counts an integral number (`48.0`) as an integer; so do the
//! tools: [`integral_numbers`] rewrites them before an input is deserialised.

use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::{Map, Number, Value};

/// The `format` values defined by JSON Schema 2020-12 (Validation, §7.3);
/// every other `format` is removed from generated schemas.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

pub use tradeterm_core::market::{SYMBOL_MAX_LEN, SYMBOL_PATTERN, SYMBOL_PUNCTUATION, is_symbol};
/// An ISO 4217-style currency code: three ASCII letters, any case.
pub const CURRENCY_PATTERN: &str = "^[A-Za-z]{3}$";
/// A symbol of a currency pair (what `symbol_currencies` reads): a symbol
/// ([`SYMBOL_PATTERN`]) whose leading letters are exactly six (`EURUSD`,
/// `EURUSD.m`, `gbpjpy#`).
pub const CURRENCY_PAIR_PATTERN: &str = "^[A-Za-z]{6}([0-9._#+!-][A-Za-z0-9._#+!-]{0,25})?$";
/// Longest calendar category name.
pub const CATEGORY_MAX_LEN: usize = 32;
/// A calendar category: 1–[`CATEGORY_MAX_LEN`] ASCII letters, digits or `_`.
pub const CATEGORY_PATTERN: &str = "^[A-Za-z0-9_]{1,32}$";
/// An `Idempotency-Key`: 1–255 visible ASCII characters or spaces, neither
/// first nor last a space (HTTP trims the spaces around a header value).
pub const IDEMPOTENCY_KEY_PATTERN: &str = "^[!-~]([ -~]{0,253}[!-~])?$";

/// Whether `key` is an `Idempotency-Key` ([`IDEMPOTENCY_KEY_PATTERN`]).
pub fn is_idempotency_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    (1..=255).contains(&bytes.len())
        && bytes.iter().all(|b| (b' '..=b'~').contains(b))
        && bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
}

/// Text without control characters (`char::is_control`: U+0000–U+001F,
/// U+007F–U+009F), as a JSON Schema `pattern`.
pub const NO_CONTROL_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// Whether `code` is a currency code ([`CURRENCY_PATTERN`]).
pub fn is_currency(code: &str) -> bool {
    code.len() == 3 && code.chars().all(|c| c.is_ascii_alphabetic())
}

/// Whether `category` is a calendar category name ([`CATEGORY_PATTERN`]).
pub fn is_category(category: &str) -> bool {
    !category.is_empty()
        && category.len() <= CATEGORY_MAX_LEN
        && category.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Rewrites every integral JSON number written with a fraction or an
/// exponent (`48.0`, `4.8e1`) as an integer, in a value and everything in it,
/// so that an integer field takes it as JSON Schema says it should. A
/// floating-point field reads the integer as the same number. Numbers
/// outside the 64-bit integer range stay as they are.
pub fn integral_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(int) = n.as_f64().and_then(integral) {
                *n = int;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// `x` as an integer JSON number when it is integral and fits in `i64` or `u64`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "the casts are guarded: x is integral and inside the target range"
)]
fn integral(x: f64) -> Option<Number> {
    if !x.is_finite() || x.fract() != 0.0 {
        return None;
    }
    if x >= i64::MIN as f64 && x < i64::MAX as f64 {
        Some(Number::from(x as i64))
    } else if x >= 0.0 && x < u64::MAX as f64 {
        Some(Number::from(x as u64))
    } else {
        None
    }
}

/// Reads a struct from a JSON object only: serde would also read a struct
/// from an array of its fields in order (`[null, null]`), which its schema
/// (`"type": "object"`) refuses. For `#[serde(deserialize_with = "…")]`.
pub fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::Deserialize as _;
    use serde::de::Error as _;
    match Value::deserialize(deserializer)? {
        value @ Value::Object(_) => serde_json::from_value(value).map_err(D::Error::custom),
        other => Err(D::Error::custom(format!("expected an object, got {}", kind(&other)))),
    }
}

/// As [`object`], for an optional struct (`null` is `None`).
pub fn optional_object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::Deserialize as _;
    use serde::de::Error as _;
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(None),
        value @ Value::Object(_) => serde_json::from_value(value).map(Some).map_err(D::Error::custom),
        other => Err(D::Error::custom(format!(
            "expected an object or null, got {}",
            kind(&other)
        ))),
    }
}

/// The order types an order can be placed with: every
/// [`OrderType`](tradeterm_core::account::OrderType) but `CLOSE_BY`, which
/// only the order history holds (a close-by is made by `close_by`).
pub const PLACEABLE_ORDER_TYPES: [&str; 8] = [
    "BUY",
    "SELL",
    "BUY_LIMIT",
    "SELL_LIMIT",
    "BUY_STOP",
    "SELL_STOP",
    "BUY_STOP_LIMIT",
    "SELL_STOP_LIMIT",
];

/// The schema of an order type to place: [`PLACEABLE_ORDER_TYPES`]. For
/// `#[schemars(schema_with = "…")]`, with [`placeable_order_type`].
pub fn placeable_order_type_schema(_: &mut schemars::SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": PLACEABLE_ORDER_TYPES,
        "description": "The order type: BUY or SELL (market) or a pending type."
    })
}

/// Reads an order type to place: `CLOSE_BY` is refused as serde refuses an
/// unknown variant, so the input fails as its schema says. For
/// `#[serde(deserialize_with = "…")]`.
pub fn placeable_order_type<'de, D>(deserializer: D) -> Result<tradeterm_core::account::OrderType, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize as _;
    use serde::de::Error as _;
    use tradeterm_core::account::OrderType;
    match OrderType::deserialize(deserializer)? {
        OrderType::CloseBy => Err(D::Error::unknown_variant("CLOSE_BY", &PLACEABLE_ORDER_TYPES)),
        placeable => Ok(placeable),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The inclusive range of an integer `format` written by schemars, as
/// `(minimum, maximum)`; `None` on a side the JSON number has no limit.
fn width(format: &str) -> Option<(Option<i64>, Option<u64>)> {
    Some(match format {
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint64" | "uint" => (Some(0), Some(u64::MAX)),
        "uint128" => (Some(0), None),
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.unsigned_abs().into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.unsigned_abs().into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.unsigned_abs().into())),
        "int64" | "int" => (Some(i64::MIN), Some(i64::MAX.unsigned_abs())),
        _ => return None,
    })
}

/// Sets `key` to `bound` unless it already holds a tighter number
/// (`tighter(existing, bound)`).
fn bound(o: &mut Map<String, Value>, key: &str, bound: Number, tighter: fn(f64, f64) -> bool) {
    let keep = o
        .get(key)
        .and_then(Value::as_f64)
        .zip(bound.as_f64())
        .is_some_and(|(old, new)| tighter(old, new));
    if !keep {
        o.insert(key.to_owned(), Value::Number(bound));
    }
}

/// Replaces non-standard `format` values by bounds, in a schema and all its
/// subschemas (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct StandardFormats;

impl StandardFormats {
    /// Applies the rule to one schema object (not its subschemas).
    fn fix(object: &mut Map<String, Value>) {
        let Some(format) = object.get("format").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        if STANDARD_FORMATS.contains(&format.as_str()) {
            return;
        }
        object.remove("format");
        if let Some((min, max)) = width(&format) {
            if let Some(min) = min {
                bound(object, "minimum", min.into(), |old, new| old >= new);
            }
            if let Some(max) = max {
                bound(object, "maximum", max.into(), |old, new| old <= new);
            }
        }
    }
}

impl Transform for StandardFormats {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(o) = schema.as_object_mut() {
            Self::fix(o);
        }
        transform_subschemas(self, schema);
    }
}

/// Generator settings for input schemas (how requests are deserialised).
pub(crate) fn input_settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with_transform(StandardFormats)
}

/// Generator settings for output schemas (how values are serialised).
pub(crate) fn output_settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(StandardFormats)
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Widths {
        a: u8,
        b: u16,
        c: u32,
        d: u64,
        e: usize,
        f: i8,
        g: i16,
        h: i32,
        i: i64,
        j: f32,
        k: f64,
        l: Option<u32>,
        #[schemars(range(min = 1, max = 100))]
        m: u32,
        #[schemars(range(min = -5))]
        n: i32,
        o: Vec<Inner>,
        #[schemars(extend("format" = "date-time"))]
        p: String,
        q: std::net::IpAddr,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Inner {
        x: u32,
    }

    fn schema() -> Value {
        serde_json::to_value(input_settings().into_generator().into_root_schema_for::<Widths>()).unwrap()
    }

    #[test]
    fn integer_widths_become_bounds_and_other_formats_go() {
        let generated = schema();
        let props = &generated["properties"];
        let range = |name: &str| (props[name]["minimum"].clone(), props[name]["maximum"].clone());
        assert_eq!(range("a"), (json!(0), json!(255)));
        assert_eq!(range("b"), (json!(0), json!(65535)));
        assert_eq!(range("c"), (json!(0), json!(4_294_967_295_u64)));
        assert_eq!(range("d"), (json!(0), json!(u64::MAX)));
        assert_eq!(range("e"), (json!(0), json!(u64::MAX)));
        assert_eq!(range("f"), (json!(-128), json!(127)));
        assert_eq!(range("g"), (json!(-32768), json!(32767)));
        assert_eq!(range("h"), (json!(-2_147_483_648_i64), json!(2_147_483_647)));
        assert_eq!(range("i"), (json!(i64::MIN), json!(i64::MAX)));
        for unbounded in ["j", "k"] {
            assert_eq!(range(unbounded), (Value::Null, Value::Null), "{unbounded}");
        }
        assert_eq!(props["l"]["type"], json!(["integer", "null"]));
        assert_eq!(range("l"), (json!(0), json!(4_294_967_295_u64)));
        // Tighter bounds stay.
        assert_eq!(range("m").0.as_f64(), Some(1.0));
        assert_eq!(range("m").1.as_f64(), Some(100.0));
        assert_eq!(range("n").0.as_f64(), Some(-5.0));
        assert_eq!(range("n").1, json!(2_147_483_647));
        // Subschemas in `$defs` too.
        assert_eq!(
            generated["$defs"]["Inner"]["properties"]["x"]["maximum"],
            json!(4_294_967_295_u64)
        );
        // Standard formats stay, the rest go.
        assert_eq!(props["p"]["format"], "date-time");
        assert!(props["q"].get("format").is_none(), "{}", props["q"]);
        let text = generated.to_string();
        for gone in ["uint", "int8", "int16", "int32", "int64", "double", "float"] {
            assert!(!text.contains(&format!("\"format\":\"{gone}")), "{gone}: {text}");
        }
    }

    #[test]
    fn patterns_are_built_from_the_checks_character_sets() {
        assert_eq!(
            SYMBOL_PATTERN,
            format!("^[A-Za-z0-9{SYMBOL_PUNCTUATION}]{{1,{SYMBOL_MAX_LEN}}}$")
        );
        assert!(SYMBOL_PUNCTUATION.ends_with('-'), "`-` last: literal in a class");
        assert_eq!(CATEGORY_PATTERN, format!("^[A-Za-z0-9_]{{1,{CATEGORY_MAX_LEN}}}$"));
        assert!(is_symbol("EURUSD") && is_symbol("US30.cash") && is_symbol(&"A".repeat(32)));
        assert!(!is_symbol("") && !is_symbol(&"A".repeat(33)) && !is_symbol("EUR/USD") && !is_symbol("É"));
        assert!(is_currency("usd") && !is_currency("US") && !is_currency("US1"));
        assert!(is_idempotency_key("order-1 retry") && is_idempotency_key("x") && is_idempotency_key(&"k".repeat(255)));
        assert!(
            !is_idempotency_key("")
                && !is_idempotency_key(" x")
                && !is_idempotency_key("x ")
                && !is_idempotency_key("é")
        );
        assert!(!is_idempotency_key("a\tb") && !is_idempotency_key(&"k".repeat(256)));
        let pair = regex_lite_free_pair;
        assert!(pair("EURUSD") && pair("eurusd.m") && pair("GBPJPY#") && pair(&format!("EURUSD.{}", "x".repeat(25))));
        assert!(!pair("EUR") && !pair("EURUSDX") && !pair("0EURUSD") && !pair(&format!("EURUSD.{}", "x".repeat(26))));
        assert!(is_category("cpi_yoy") && !is_category("") && !is_category("a-b"));
    }

    /// [`CURRENCY_PAIR_PATTERN`] spelled out (the crate has no regex engine):
    /// six letters, then nothing or a non-letter symbol character and more
    /// symbol characters, 32 in all.
    fn regex_lite_free_pair(s: &str) -> bool {
        let letters = s.chars().take_while(char::is_ascii_alphabetic).count();
        is_symbol(s) && letters == 6
    }

    #[test]
    fn integral_numbers_become_integers_and_the_rest_stays() {
        let mut v = json!({ "a": 48.0, "b": [1.5, -3.0, 1e20, 1e19], "c": { "d": 0.0 }, "e": "1.0", "f": 7 });
        integral_numbers(&mut v);
        assert_eq!(
            v,
            json!({ "a": 48, "b": [1.5, -3, 1e20, 10_000_000_000_000_000_000_u64], "c": { "d": 0 }, "e": "1.0", "f": 7 })
        );
        assert!(v["a"].is_u64() && v["b"][1].is_i64());
    }

    #[test]
    fn output_settings_apply_the_same_rule() {
        let s = serde_json::to_value(output_settings().into_generator().into_root_schema_for::<Inner>()).unwrap();
        assert_eq!(
            s["properties"]["x"],
            json!({ "type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64 })
        );
    }
}
