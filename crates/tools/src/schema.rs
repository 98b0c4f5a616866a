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

/// The inclusive range of an integer `format` written by schemars, as
/// `(minimum, maximum)`; `None` on a side the JSON number has no limit.
fn width(format: &str) -> Option<(Option<i64>, Option<u64>)> {
    Some(match format {
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint64" | "uint128" | "uint" => (Some(0), None),
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.unsigned_abs().into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.unsigned_abs().into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.unsigned_abs().into())),
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
        assert_eq!(range("d"), (json!(0), Value::Null));
        assert_eq!(range("e"), (json!(0), Value::Null));
        assert_eq!(range("f"), (json!(-128), json!(127)));
        assert_eq!(range("g"), (json!(-32768), json!(32767)));
        assert_eq!(range("h"), (json!(-2_147_483_648_i64), json!(2_147_483_647)));
        for unbounded in ["i", "j", "k"] {
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
    fn output_settings_apply_the_same_rule() {
        let s = serde_json::to_value(output_settings().into_generator().into_root_schema_for::<Inner>()).unwrap();
        assert_eq!(
            s["properties"]["x"],
            json!({ "type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64 })
        );
    }
}
