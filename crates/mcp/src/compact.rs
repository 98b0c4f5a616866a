//! The lean form of the MCP tool list: what a model needs to call a tool,
//! in as few bytes as the schema format allows.
//!
//! AI clients put every tool definition into the model's context on every
//! turn, so the default `tools/list` carries:
//!
//! - a short description: the catalog description cut to its first whole
//!   sentences within a character budget ([`BUDGET_LEVELS`]; trading tools,
//!   which can change the account, get twice the room);
//! - the input schema with every constraint (types, enums, bounds,
//!   `required`, `additionalProperties`, non-null defaults) but without what
//!   a model never reads: `$schema` (2020-12 is MCP's default dialect),
//!   `title`s (Rust type names), the root description (the tool's
//!   description says it), `"default": null`; property descriptions are cut
//!   the same way (nested ones have a smaller budget, possibly none);
//! - `oneOf` lists of string constants become an `enum` (same accepted
//!   values);
//! - a `$defs` entry referenced once is inlined at its use (MCP input
//!   schemas are self-contained per tool, so definitions cannot be shared
//!   between tools; within a tool, a definition used twice or more stays in
//!   `$defs`);
//! - an optional property whose `null` means the same as leaving it out (no
//!   non-null default) is listed without the `null` alternative: leaving it
//!   out is the way to say "none", and the server still accepts `null`.
//!
//! Four deep parts are stated in the opt-in list only
//! ([`without_deep_choices`]), as they would take the default list past its
//! budget: the per-indicator parameter schemas of an indicator choice (the
//! `oneOf` of `get_indicator`, `check_confluence` and `set_alert`, with the
//! `enum` of indicator names: the name is a string there, the catalogue
//! being `list_indicators`, so the default list does not grow with it), the
//! `enum` of `detect_patterns`' pattern names (strings; the tool's
//! description names them, and an unknown one is refused with the list),
//! the backtest DSL's schema of `strategy` and `detect_structure`'s tuning
//! `config` (objects, described). The server checks them the same way on
//! every surface.
//!
//! Keywords another keyword implies are left out too (the `"type":
//! "string"` of a string `enum` or `const`), as is an integer's `maximum`
//! of `u64::MAX` (beyond what a JSON number holds exactly).
//!
//! Output schemas are left out unless asked for (see the crate
//! documentation); the OpenAPI document keeps every full schema.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// Description budgets of the lean list, in characters: tool description,
/// top-level property description, nested description. The list uses the
/// first level whose whole list fits in [`LIST_TARGET_BYTES`], so that tools
/// added to the catalog shorten descriptions instead of overflowing the
/// budget.
pub const BUDGET_LEVELS: [Budgets; 14] = [
    Budgets {
        tool: 240,
        property: 120,
        nested: 90,
    },
    Budgets {
        tool: 200,
        property: 100,
        nested: 70,
    },
    Budgets {
        tool: 170,
        property: 90,
        nested: 60,
    },
    Budgets {
        tool: 140,
        property: 80,
        nested: 50,
    },
    Budgets {
        tool: 120,
        property: 64,
        nested: 40,
    },
    Budgets {
        tool: 120,
        property: 64,
        nested: 0,
    },
    Budgets {
        tool: 100,
        property: 56,
        nested: 0,
    },
    Budgets {
        tool: 90,
        property: 48,
        nested: 0,
    },
    Budgets {
        tool: 80,
        property: 40,
        nested: 0,
    },
    Budgets {
        tool: 72,
        property: 32,
        nested: 0,
    },
    Budgets {
        tool: 64,
        property: 24,
        nested: 0,
    },
    Budgets {
        tool: 60,
        property: 16,
        nested: 0,
    },
    Budgets {
        tool: 56,
        property: 0,
        nested: 0,
    },
    Budgets {
        tool: 50,
        property: 0,
        nested: 0,
    },
];

/// What the default `tools/list` aims at, in bytes of JSON: the hard limit,
/// checked in the tests, is 48 KiB; 512 bytes are left for the JSON-RPC
/// envelope.
pub const LIST_TARGET_BYTES: usize = 48 * 1024 - 512;

/// Description budgets (characters) of one lean list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// A tool's description.
    pub tool: usize,
    /// A property of the input object.
    pub property: usize,
    /// Anything deeper (nested properties, variants, definitions); 0
    /// leaves those descriptions out.
    pub nested: usize,
}

/// Words after which a `.` does not end a sentence.
const ABBREVIATIONS: [&str; 6] = ["e.g", "i.e", "etc", "vs", "approx", "cf"];

/// `text` with its whitespace collapsed, cut to the whole sentences that fit
/// in `budget` characters; if even the first sentence is longer, cut at a
/// word boundary and marked with `…`.
pub fn shorten(text: &str, budget: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= budget {
        return text;
    }
    let mut end = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        if text[..at].chars().count() >= budget {
            break;
        }
        let next_is_space = chars.get(i + 1).is_none_or(|&(_, n)| n == ' ');
        if matches!(c, '.' | '!' | '?') && next_is_space {
            let word = text[..at].rsplit(' ').next().unwrap_or_default();
            if c == '.' && ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a)) {
                continue;
            }
            end = at + c.len_utf8();
        }
    }
    if end > 0 {
        return text[..end].to_owned();
    }
    let mut out = String::new();
    for word in text.split(' ') {
        if out.chars().count() + word.chars().count() + 2 > budget {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.push('…');
    out
}

/// The lean form of an input schema (see the module documentation).
pub fn compact_input_schema(schema: &Value, budgets: Budgets) -> Value {
    let Some(root) = schema.as_object() else {
        return schema.clone();
    };
    let defs: Map<String, Value> = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut counts = BTreeMap::new();
    count_refs(schema, &mut counts);
    let c = Compactor {
        defs: &defs,
        counts,
        budgets,
    };
    let mut root = root.clone();
    root.remove("description");
    let mut out = c.object(root, false, 0);
    let kept: Map<String, Value> = defs
        .iter()
        .filter(|(name, _)| !c.inlined(name))
        .map(|(name, d)| (name.clone(), c.value(d, 2)))
        .collect();
    if !kept.is_empty()
        && let Some(o) = out.as_object_mut()
    {
        o.insert("$defs".into(), Value::Object(kept));
    }
    out
}

/// The properties whose schema the default list gives as `{"type":
/// "object"}` with their description: the backtest DSL's `strategy` and
/// `detect_structure`'s tuning `config` (every part optional, with defaults).
const DEEP_OBJECTS: [&str; 2] = ["strategy", "config"];

/// An input schema without its deep choices (see the module documentation):
/// a `oneOf` (or `anyOf`) whose every branch names `indicator`s is removed (and the
/// `enum` of the `indicator` property beside it becomes a string), a `strategy`
/// property becomes `{"type": "object"}` with its description, and the
/// `$defs` no longer referenced go.
pub fn without_deep_choices(schema: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                // The catalog's choices are a `oneOf` (disjoint names); an
                // `anyOf` of them is stripped the same way.
                let indicator_choice = ["oneOf", "anyOf"].into_iter().find(|key| {
                    o.get(*key).and_then(Value::as_array).is_some_and(|branches| {
                        !branches.is_empty() && branches.iter().all(|b| b["properties"]["indicator"]["enum"].is_array())
                    })
                });
                if let Some(key) = indicator_choice {
                    o.remove(key);
                    // The name itself: a string (the names are those of list_indicators).
                    if let Some(name) = o
                        .get_mut("properties")
                        .and_then(|p| p.get_mut("indicator"))
                        .and_then(Value::as_object_mut)
                        && name.remove("enum").is_some()
                    {
                        name.insert("type".into(), Value::from("string"));
                    }
                }
                if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
                    for name in DEEP_OBJECTS {
                        if let Some(deep) = props.get_mut(name) {
                            let mut lean = Map::new();
                            lean.insert("type".into(), Value::from("object"));
                            if let Some(d) = deep.get("description") {
                                lean.insert("description".into(), d.clone());
                            }
                            *deep = Value::Object(lean);
                        }
                    }
                    // The names of `patterns` (detect_patterns): strings.
                    if let Some(items) = props
                        .get_mut("patterns")
                        .and_then(|p| p.get_mut("items"))
                        .and_then(Value::as_object_mut)
                        && items.remove("enum").is_some()
                    {
                        items.insert("type".into(), Value::from("string"));
                    }
                }
                o.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut out = schema.clone();
    strip(&mut out);
    // Keep the definitions still reachable from the schema outside `$defs`.
    let Some(defs) = out.get("$defs").and_then(Value::as_object).cloned() else {
        return out;
    };
    let mut body = out.clone();
    if let Some(o) = body.as_object_mut() {
        o.remove("$defs");
    }
    let mut reachable = BTreeSet::new();
    let mut todo = vec![body];
    while let Some(v) = todo.pop() {
        let mut counts = BTreeMap::new();
        count_refs(&v, &mut counts);
        for name in counts.into_keys() {
            if reachable.insert(name.clone())
                && let Some(d) = defs.get(&name)
            {
                todo.push(d.clone());
            }
        }
    }
    let kept: Map<String, Value> = defs.into_iter().filter(|(name, _)| reachable.contains(name)).collect();
    if let Some(o) = out.as_object_mut() {
        if kept.is_empty() {
            o.remove("$defs");
        } else {
            o.insert("$defs".into(), Value::Object(kept));
        }
    }
    out
}

const DEFS_PREFIX: &str = "#/$defs/";

fn count_refs(v: &Value, counts: &mut BTreeMap<String, usize>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix(DEFS_PREFIX) {
                            *counts.entry(name.to_owned()).or_default() += 1;
                        }
                    }
                    _ => count_refs(v, counts),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| count_refs(v, counts)),
        _ => {}
    }
}

struct Compactor<'a> {
    defs: &'a Map<String, Value>,
    counts: BTreeMap<String, usize>,
    budgets: Budgets,
}

/// Deeper than this, definitions are no longer inlined (a guard against cycles).
const MAX_DEPTH: usize = 24;

impl Budgets {
    /// The budgets of a tool that can change the account irreversibly
    /// (trading tools): what they say about dry runs and confirmations
    /// matters most, so their descriptions get twice the room.
    pub fn for_destructive(self) -> Self {
        Self {
            tool: self.tool * 2,
            property: self.property * 2,
            nested: self.nested * 2,
        }
    }
}

impl Compactor<'_> {
    /// Whether a definition is inlined at its only use.
    fn inlined(&self, name: &str) -> bool {
        self.counts.get(name) == Some(&1) && self.defs.contains_key(name)
    }

    fn value(&self, v: &Value, depth: usize) -> Value {
        match v {
            Value::Object(o) => self.object(o.clone(), false, depth),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.value(v, depth)).collect()),
            other => other.clone(),
        }
    }

    /// One schema object; `optional`: it is a property outside `required`.
    fn object(&self, mut o: Map<String, Value>, optional: bool, depth: usize) -> Value {
        // First, so that the `$ref` of an `anyOf: [{$ref}, {type: null}]` it
        // lifts is inlined below (a definition used once is not kept in
        // `$defs`: left here, the reference would dangle).
        if optional {
            drop_null_alternative(&mut o);
        }
        // Inline a definition used once (the use's own keywords win).
        if depth < MAX_DEPTH
            && let Some(name) = o
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(DEFS_PREFIX))
                .map(str::to_owned)
            && self.inlined(&name)
            && let Some(Value::Object(def)) = self.defs.get(&name)
        {
            o.remove("$ref");
            let mut merged = def.clone();
            if o.contains_key("description") {
                merged.remove("description");
            }
            merged.extend(o);
            o = merged;
            if optional {
                drop_null_alternative(&mut o);
            }
        }
        let required: BTreeSet<String> = o
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        for (k, v) in o {
            match k.as_str() {
                "$schema" | "title" | "$defs" => {}
                "default" if v.is_null() => {}
                "description" => {
                    if let Value::String(s) = &v {
                        let budget = if depth == 1 {
                            self.budgets.property
                        } else {
                            self.budgets.nested
                        };
                        if budget > 0 {
                            out.insert(k, Value::String(shorten(s, budget)));
                        }
                    }
                }
                "properties" => {
                    let props = match v {
                        Value::Object(p) => p
                            .into_iter()
                            .map(|(name, s)| {
                                let s = match s {
                                    Value::Object(so) => self.object(so, !required.contains(&name), depth + 1),
                                    other => other,
                                };
                                (name, s)
                            })
                            .collect(),
                        _ => Map::new(),
                    };
                    out.insert(k, Value::Object(props));
                }
                "oneOf" | "anyOf" if string_constants(&v).is_some() => {
                    if let Some(values) = string_constants(&v) {
                        out.insert("type".into(), Value::String("string".into()));
                        out.insert("enum".into(), Value::Array(values));
                    }
                }
                _ => {
                    out.insert(k, self.value(&v, depth + 1));
                }
            }
        }
        drop_implied(&mut out);
        Value::Object(out)
    }
}

/// The integer width bounds schemars states that say nothing to a JSON
/// client: `u64::MAX` is beyond what a JSON number holds exactly (2^53), so
/// no caller can mean a value near it. Narrower widths (`u32::MAX`) are real
/// limits and stay.
const WIDTH_MAXIMA: [u64; 1] = [u64::MAX];

/// Removes keywords another keyword of the same schema already implies, so
/// the schema accepts the same values in fewer bytes: the `"type":
/// "string"` of a string `enum` or `const`. Also drops an integer's
/// `maximum` of `u64::MAX` ([`WIDTH_MAXIMA`]; the OpenAPI document keeps
/// it).
fn drop_implied(o: &mut Map<String, Value>) {
    let strings_only = |v: Option<&Value>| match v {
        Some(Value::Array(values)) => !values.is_empty() && values.iter().all(Value::is_string),
        Some(v) => v.is_string(),
        None => false,
    };
    if o.get("type").is_some_and(|t| t == "string") && (strings_only(o.get("enum")) || strings_only(o.get("const"))) {
        o.remove("type");
    }
    if o.get("type").is_some_and(|t| t == "integer")
        && o.get("maximum")
            .and_then(Value::as_u64)
            .is_some_and(|m| WIDTH_MAXIMA.contains(&m))
    {
        o.remove("maximum");
    }
}

/// The constants of a `oneOf` whose every branch is a string `const` (with
/// at most a `type` and a `description`).
fn string_constants(v: &Value) -> Option<Vec<Value>> {
    let branches = v.as_array()?;
    if branches.is_empty() {
        return None;
    }
    branches
        .iter()
        .map(|b| {
            let o = b.as_object()?;
            let c = o.get("const").filter(|c| c.is_string())?;
            let only_known = o.keys().all(|k| matches!(k.as_str(), "const" | "type" | "description"));
            let string_type = o.get("type").is_none_or(|t| t == "string");
            (only_known && string_type).then(|| c.clone())
        })
        .collect()
}

/// Removes the `null` alternative of an optional property whose `null`
/// means "not given" (no non-null default).
fn drop_null_alternative(o: &mut Map<String, Value>) {
    if o.get("default").is_some_and(|d| !d.is_null()) {
        return;
    }
    if let Some(Value::Array(types)) = o.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() < types.len() && !rest.is_empty() {
            let t = if rest.len() == 1 {
                rest[0].clone()
            } else {
                Value::Array(rest)
            };
            o.insert("type".into(), t);
        }
    }
    let null = serde_json::json!({ "type": "null" });
    if let Some(Value::Array(branches)) = o.get("anyOf")
        && branches.len() == 2
        && branches.contains(&null)
        && let Some(Value::Object(other)) = branches.iter().find(|b| **b != null).cloned()
    {
        o.remove("anyOf");
        for (k, v) in other {
            o.entry(k).or_insert(v);
        }
        // The `enum` of an optional enum may list `null` too.
    }
    if let Some(Value::Array(values)) = o.get_mut("enum")
        && values.len() > 1
    {
        values.retain(|v| !v.is_null());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn descriptions_keep_whole_sentences_within_the_budget() {
        assert_eq!(shorten("  One.\n Two.  ", 100), "One. Two.");
        assert_eq!(
            shorten("Instrument, e.g. `EURUSD`. Then more words here.", 30),
            "Instrument, e.g. `EURUSD`."
        );
        // A `;` does not end a sentence (it would cut inside parentheses).
        let semi = shorten("First part; second part is long.", 15);
        assert!(semi.starts_with("First part;") && semi.ends_with('…'), "{semi}");
        let cut = shorten("averyveryverylongword and more words after it", 30);
        assert!(cut.ends_with('…') && cut.chars().count() <= 30, "{cut}");
        assert_eq!(shorten("Price 1.5 is fine. Second.", 20), "Price 1.5 is fine.");
    }

    #[test]
    fn compaction_keeps_every_constraint() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Input",
            "description": "Input of `x`.",
            "type": "object",
            "additionalProperties": false,
            "required": ["symbol", "tf"],
            "properties": {
                "symbol": { "type": "string", "description": "Instrument." },
                "tf": { "$ref": "#/$defs/Tf", "description": "Timeframe." },
                "other_tf": { "anyOf": [{ "$ref": "#/$defs/Tf" }, { "type": "null" }], "default": null },
                "count": { "type": ["integer", "null"], "minimum": 1, "maximum": 100, "default": null },
                "skip": { "anyOf": [{ "$ref": "#/$defs/Once" }, { "type": "null" }], "default": { "a": 1 } },
                "title": { "type": "string" }
            },
            "$defs": {
                "Tf": { "title": "Tf", "description": "Bar timeframe.", "oneOf": [
                    { "const": "M1", "type": "string", "description": "1 minute." },
                    { "const": "H1", "type": "string", "description": "1 hour." }
                ] },
                "Once": { "type": "object", "properties": { "a": { "type": "integer", "minimum": 0 } } }
            }
        });
        let c = compact_input_schema(&schema, BUDGET_LEVELS[0]);
        assert_eq!(
            c,
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["symbol", "tf"],
                "properties": {
                    "symbol": { "type": "string", "description": "Instrument." },
                    "tf": { "$ref": "#/$defs/Tf", "description": "Timeframe." },
                    "other_tf": { "$ref": "#/$defs/Tf" },
                    "count": { "type": "integer", "minimum": 1, "maximum": 100 },
                    "skip": {
                        "anyOf": [
                            { "type": "object", "properties": { "a": { "type": "integer", "minimum": 0 } } },
                            { "type": "null" }
                        ],
                        "default": { "a": 1 }
                    },
                    "title": { "type": "string" }
                },
                "$defs": { "Tf": { "description": "Bar timeframe.", "enum": ["M1", "H1"] } }
            })
        );
    }

    /// The deep parts of the catalog's schemas are plain in the default
    /// list: `detect_structure`'s `config` and the backtest `strategy` are
    /// described objects, `detect_patterns`' names strings, an indicator
    /// choice has no per-indicator branches; everything else stays.
    #[test]
    fn deep_parts_are_plain_in_the_default_list() {
        let lean = |name: &str| {
            let t = tradeterm_tools::find(name).unwrap();
            (t.input_schema.clone(), without_deep_choices(&t.input_schema))
        };
        let (full, plain) = lean("detect_structure");
        assert!(full["properties"]["config"].to_string().len() > 200);
        assert_eq!(plain["properties"]["config"]["type"], "object");
        assert!(plain["properties"]["config"].get("properties").is_none());
        assert_eq!(plain["properties"]["symbol"], full["properties"]["symbol"]);
        let (full, plain) = lean("detect_patterns");
        assert!(
            full["properties"]["patterns"]["items"]["enum"]
                .as_array()
                .is_some_and(|names| names.len() >= 40)
        );
        assert_eq!(plain["properties"]["patterns"]["items"], json!({ "type": "string" }));
        assert_eq!(
            plain["properties"]["patterns"]["maxItems"],
            full["properties"]["patterns"]["maxItems"]
        );
        let (_, plain) = lean("backtest_strategy");
        assert_eq!(plain["properties"]["strategy"]["type"], "object");
        let (full, plain) = lean("get_indicator");
        assert!(full.get("oneOf").is_some() && plain.get("oneOf").is_none());
    }

    /// A string `enum` or `const` implies its type, and `u64::MAX` is no
    /// limit a JSON number can meet: both go, every other bound (`u32::MAX`
    /// included) and type stays.
    #[test]
    fn implied_keywords_go_and_real_bounds_stay() {
        let schema = json!({
            "type": "object",
            "properties": {
                "side": { "type": "string", "enum": ["buy", "sell"] },
                "unit": { "type": "string", "const": "points" },
                "mixed": { "type": "string", "enum": ["a", 1] },
                "n": { "type": "number", "enum": [1, 2] },
                "ticket": { "type": "integer", "minimum": 0, "maximum": 18_446_744_073_709_551_615_u64 },
                "count": { "type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64 },
                "period": { "type": "integer", "minimum": 2, "maximum": 200 },
                "price": { "type": "number", "maximum": 4_294_967_295_u64 }
            }
        });
        let c = compact_input_schema(&schema, BUDGET_LEVELS[0]);
        assert_eq!(
            c["properties"],
            json!({
                "side": { "enum": ["buy", "sell"] },
                "unit": { "const": "points" },
                "mixed": { "type": "string", "enum": ["a", 1] },
                "n": { "type": "number", "enum": [1, 2] },
                "ticket": { "type": "integer", "minimum": 0 },
                "count": { "type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64 },
                "period": { "type": "integer", "minimum": 2, "maximum": 200 },
                "price": { "type": "number", "maximum": 4_294_967_295_u64 }
            })
        );
    }

    /// Every `$ref` of `schema` names one of its `$defs`.
    fn dangling_refs(schema: &Value) -> Vec<String> {
        let mut counts = BTreeMap::new();
        count_refs(schema, &mut counts);
        let defs = schema.get("$defs").and_then(Value::as_object);
        counts
            .into_keys()
            .filter(|name| !defs.is_some_and(|d| d.contains_key(name)))
            .collect()
    }

    #[test]
    fn an_optional_reference_used_once_is_inlined_not_left_dangling() {
        // schemars' form of an `Option<Tf>` property and of a variant's
        // optional field: `anyOf: [{$ref}, {type: null}]`, the definition
        // used once.
        let schema = json!({
            "type": "object",
            "properties": {
                "source": { "anyOf": [{ "$ref": "#/$defs/Source" }, { "type": "null" }] },
                "stop": { "oneOf": [{
                    "type": "object",
                    "properties": { "tf": { "anyOf": [{ "$ref": "#/$defs/Tf" }, { "type": "null" }] } }
                }] }
            },
            "$defs": {
                "Source": { "type": "string", "enum": ["a", "b"] },
                "Tf": { "type": "string", "enum": ["M1", "H1"] }
            }
        });
        for level in BUDGET_LEVELS {
            let c = compact_input_schema(&schema, level);
            assert_eq!(dangling_refs(&c), Vec::<String>::new(), "{c:#}");
            assert_eq!(c["properties"]["source"], json!({ "enum": ["a", "b"] }), "{c:#}");
            assert_eq!(
                c["properties"]["stop"]["oneOf"][0]["properties"]["tf"],
                json!({ "enum": ["M1", "H1"] }),
                "{c:#}"
            );
        }
    }

    #[test]
    fn no_catalog_tool_has_a_dangling_reference_in_its_lean_schema() {
        for tool in tradeterm_tools::mcp_catalog() {
            for schema in [&tool.input_schema, &without_deep_choices(&tool.input_schema)] {
                let c = compact_input_schema(schema, BUDGET_LEVELS[BUDGET_LEVELS.len() - 1]);
                assert_eq!(dangling_refs(&c), Vec::<String>::new(), "{}: {c:#}", tool.name);
            }
        }
    }
}
