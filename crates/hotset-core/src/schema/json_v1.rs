//! Format 1's index definitions: the JSON that `IndexDef::to_json` wrote into log records
//! and snapshot blocks before format 2 gave them a binary form (`schema::codec`).
//!
//! Owns: reading that JSON, for files of format 1 only. Frozen: this is a private copy of
//! the parsing `IndexDef::from_json` and `TextConfig::from_json` did when format 1 was
//! retired, with the names of types, kinds, collations and languages spelled out here, so
//! the API's JSON can change (a key renamed, an alias dropped, a check tightened) without
//! making an old file unreadable. Never: call the API's parsers or their checks
//! (`from_json`, `validate`, range checks, word folding); the definition was checked when
//! it was written, and it is checked again as any definition is when the change is
//! applied. Never changed, except to read more of what format 1 files really hold.
//!
//! Every key the API accepted then is accepted (aliases included), although only
//! `to_json`'s spelling was ever written; an unknown key or value is an error, never
//! ignored, so nothing is misread.

use super::{IndexDef, IndexKind};
use crate::collate::Collation;
use crate::error::{Error, Result};
use crate::text::{Language, Ranking, StopWords, TextConfig};
use crate::value::FieldType;
use serde_json::{Map, Value};

/// Reads one format-1 index definition.
pub fn decode(value: &Value) -> Result<IndexDef> {
    let object = value.as_object().ok_or_else(|| bad("?", "an index definition is not a JSON object"))?;
    const KNOWN: [&str; 11] =
        ["name", "field", "fields", "type", "index", "pk", "array", "sparse", "collate", "expire_after", "text"];
    if let Some(unknown) = object.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(bad("?", &format!("unknown key \"{unknown}\"")));
    }
    let fields: Vec<String> = match object.get("field").or_else(|| object.get("fields")) {
        Some(Value::String(field)) => vec![field.clone()],
        Some(Value::Array(list)) => list
            .iter()
            .map(|f| f.as_str().map(str::to_string).ok_or_else(|| bad("?", "field names are strings")))
            .collect::<Result<_>>()?,
        _ => return Err(bad("?", "\"field\" is not a name or a list of names")),
    };
    let name = match object.get("name") {
        None => fields.join("+"),
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err(bad("?", "\"name\" is not a string")),
    };
    let string = |key: &str, default: &str| -> Result<String> {
        match object.get(key) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(bad(&name, &format!("\"{key}\" is not a string"))),
        }
    };
    let kind_name = string("index", "hash")?;
    let (kind, ttl) = match kind_name.as_str() {
        "hash" => (IndexKind::Hash, false),
        "tree" => (IndexKind::Tree, false),
        "ttl" => (IndexKind::Tree, true),
        "-" | "store" | "column" => (IndexKind::Store, false),
        "text" | "fulltext" => (IndexKind::Text, false),
        _ => return Err(bad(&name, &format!("unknown index kind \"{kind_name}\""))),
    };
    let (field_type, field_types) = match object.get("type") {
        Some(Value::Array(list)) => {
            let types = list
                .iter()
                .map(|t| t.as_str().ok_or_else(|| bad(&name, "types are strings")).and_then(|t| field_type(&name, t)))
                .collect::<Result<Vec<_>>>()?;
            (types.first().copied().unwrap_or(FieldType::String), types)
        }
        Some(_) => (field_type(&name, &string("type", "")?)?, Vec::new()),
        None if kind == IndexKind::Text => (FieldType::String, Vec::new()),
        None => return Err(bad(&name, "\"type\" is missing")),
    };
    let expire_after = match (object.get("expire_after"), ttl) {
        (None, false) => None,
        (Some(seconds), true) => {
            Some(seconds.as_u64().ok_or_else(|| bad(&name, "\"expire_after\" is not a whole number of seconds"))?)
        }
        (None, true) => return Err(bad(&name, "a ttl index without \"expire_after\"")),
        (Some(_), false) => return Err(bad(&name, "\"expire_after\" on an index that is not a ttl index")),
    };
    let collate = collation(&name, &string("collate", "none")?)?;
    let flag = |key: &str| -> Result<bool> {
        match object.get(key) {
            None => Ok(false),
            Some(Value::Bool(on)) => Ok(*on),
            Some(_) => Err(bad(&name, &format!("\"{key}\" is not true or false"))),
        }
    };
    let text = match (kind, object.get("text")) {
        (IndexKind::Text, options) => {
            Some(Box::new(text_config(options, &fields).map_err(|reason| bad(&name, &reason))?))
        }
        (_, None) => None,
        (_, Some(_)) => return Err(bad(&name, "\"text\" options on an index that is not a text index")),
    };
    let (pk, array, sparse) = (flag("pk")?, flag("array")?, flag("sparse")?);
    Ok(IndexDef { name, fields, kind, field_type, field_types, pk, array, sparse, collate, expire_after, text })
}

fn field_type(index: &str, name: &str) -> Result<FieldType> {
    match name.to_ascii_lowercase().as_str() {
        "int" | "int64" | "integer" | "bigint" => Ok(FieldType::Int),
        "double" | "float" | "number" => Ok(FieldType::Double),
        "string" | "str" | "text" => Ok(FieldType::String),
        "bool" | "boolean" => Ok(FieldType::Bool),
        _ => Err(bad(index, &format!("unknown field type \"{name}\""))),
    }
}

fn collation(index: &str, name: &str) -> Result<Collation> {
    match name {
        "" | "none" => Ok(Collation::None),
        "ascii_ci" | "ascii" => Ok(Collation::AsciiCi),
        "utf8_ci" | "utf8" => Ok(Collation::Utf8Ci),
        "numeric" => Ok(Collation::Numeric),
        _ => Err(bad(index, &format!("unknown collation \"{name}\""))),
    }
}

/// The text options as `TextConfig::to_json` wrote them (`None`: every default).
fn text_config(value: Option<&Value>, fields: &[String]) -> std::result::Result<TextConfig, String> {
    let mut config = TextConfig::new(fields.len());
    let Some(value) = value else { return Ok(config) };
    let object = value.as_object().ok_or("\"text\" is not an object")?;
    const KNOWN: [&str; 6] = ["weights", "languages", "stop_words", "synonyms", "typos", "ranking"];
    if let Some(unknown) = object.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!("unknown key \"text.{unknown}\""));
    }
    if let Some(weights) = object.get("weights") {
        let weights = weights.as_object().ok_or("\"text.weights\" is not an object")?;
        for (field, weight) in weights {
            let position = fields
                .iter()
                .position(|f| f == field)
                .ok_or_else(|| format!("\"text.weights\" names '{field}', which the index does not cover"))?;
            config.weights[position] = number(weight, &format!("text.weights.{field}"))?;
        }
    }
    if let Some(languages) = object.get("languages") {
        let list = languages.as_array().ok_or("\"text.languages\" is not a list")?;
        config.languages = list.iter().map(language).collect::<std::result::Result<_, _>>()?;
    }
    config.stop_words = match object.get("stop_words") {
        None | Some(Value::Bool(false)) => StopWords::None,
        Some(Value::Bool(true)) => StopWords::Builtin,
        Some(Value::Array(words)) => StopWords::List(words_of(words, "text.stop_words")?),
        Some(_) => return Err("\"text.stop_words\" is not true, false or a list of words".to_string()),
    };
    if let Some(groups) = object.get("synonyms") {
        let groups = groups.as_array().ok_or("\"text.synonyms\" is not a list")?;
        config.synonyms = groups
            .iter()
            .map(|group| words_of(group.as_array().ok_or("a synonym group is not a list")?, "text.synonyms"))
            .collect::<std::result::Result<_, String>>()?;
    }
    match object.get("typos") {
        None => {}
        Some(Value::Bool(on)) => config.typos = *on,
        Some(_) => return Err("\"text.typos\" is not true or false".to_string()),
    }
    if let Some(ranking) = object.get("ranking") {
        config.ranking = ranking_of(ranking.as_object().ok_or("\"text.ranking\" is not an object")?)?;
    }
    Ok(config)
}

fn ranking_of(object: &Map<String, Value>) -> std::result::Result<Ranking, String> {
    let mut ranking = Ranking::default();
    for (key, value) in object {
        let slot = match key.as_str() {
            "k1" => &mut ranking.k1,
            "b" => &mut ranking.b,
            "proximity" => &mut ranking.proximity,
            "stem" => &mut ranking.stem,
            "prefix" => &mut ranking.prefix,
            "suffix" => &mut ranking.suffix,
            "typo" => &mut ranking.typo,
            "translit" => &mut ranking.translit,
            "layout" => &mut ranking.layout,
            "synonym" => &mut ranking.synonym,
            _ => return Err(format!("unknown key \"text.ranking.{key}\"")),
        };
        *slot = number(value, &format!("text.ranking.{key}"))?;
    }
    Ok(ranking)
}

/// A factor or weight: `to_json` wrote each `f32` widened to `f64`, which narrows back
/// to the same `f32` exactly.
fn number(value: &Value, path: &str) -> std::result::Result<f32, String> {
    value.as_f64().filter(|n| n.is_finite()).map(|n| n as f32).ok_or_else(|| format!("\"{path}\" is not a number"))
}

fn language(value: &Value) -> std::result::Result<Language, String> {
    match value.as_str() {
        Some("en" | "english") => Ok(Language::English),
        Some("ru" | "russian") => Ok(Language::Russian),
        _ => Err(format!("unknown language {value} in \"text.languages\"")),
    }
}

/// The words as written: `to_json` wrote them folded already, so they are taken as they
/// are (folding them again could change them, were folding ever changed).
fn words_of(list: &[Value], path: &str) -> std::result::Result<Vec<String>, String> {
    list.iter()
        .map(|w| w.as_str().map(str::to_string).ok_or_else(|| format!("\"{path}\" holds a non-string")))
        .collect()
}

fn bad(index: &str, reason: &str) -> Error {
    Error::BadChange { reason: format!("format-1 index definition '{index}': {reason}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The JSON of format-1 files, as `to_json` wrote it then (copied from the golden
    /// files), reads to the definitions that wrote it.
    #[test]
    fn reads_what_format_1_wrote() {
        let written = json!([
            {"name":"id","field":"id","type":"int","index":"tree","pk":true},
            {"name":"at","field":"at","type":"int","index":"ttl","expire_after":0},
            {"name":"a+b+c","field":["a","b","c"],"type":["bool","double","string"],"index":"tree","collate":"numeric"},
            {"name":"tags","field":"tags","type":"string","index":"tree","array":true,"sparse":true,"collate":"ascii_ci"},
            {"name":"price","field":"price","type":"double","index":"-"},
            {"name":"notes","field":["message","note"],"type":"string","index":"text","text":{"weights":{"message":2.0,
              "note":1.0},"languages":["ru","en"],"stop_words":["the","a"],"synonyms":[["tv","television"]],
              "typos":false,"ranking":{"k1":1.2000000476837158,"b":0.75,"proximity":0.5,"stem":0.800000011920929,
              "prefix":0.6000000238418579,"suffix":0.5,"typo":0.6000000238418579,"translit":0.699999988079071,
              "layout":0.699999988079071,"synonym":0.800000011920929}}},
            {"name":"search","field":"message","type":"string","index":"text","text":{"weights":{"message":1.0},
              "languages":["en","ru"],"stop_words":true,"synonyms":[],"typos":true,"ranking":{"k1":1.2000000476837158,
              "b":0.75,"proximity":0.5,"stem":0.800000011920929,"prefix":0.6000000238418579,"suffix":0.5,
              "typo":0.6000000238418579,"translit":0.699999988079071,"layout":0.699999988079071,"synonym":0.800000011920929}}},
        ]);
        let mut notes = TextConfig::new(2);
        notes.weights = vec![2.0, 1.0];
        notes.languages = vec![Language::Russian, Language::English];
        notes.stop_words = StopWords::List(vec!["the".into(), "a".into()]);
        notes.synonyms = vec![vec!["tv".into(), "television".into()]];
        notes.typos = false;
        let mut builtin = TextConfig::new(1);
        builtin.stop_words = StopWords::Builtin;
        let expected = vec![
            IndexDef::tree("id", FieldType::Int).pk(),
            IndexDef::tree("at", FieldType::Int).expire_after(0),
            IndexDef::composite_typed(
                &[("a", FieldType::Bool), ("b", FieldType::Double), ("c", FieldType::String)],
                IndexKind::Tree,
            )
            .collate(Collation::Numeric),
            IndexDef::tree("tags", FieldType::String).array().sparse().collate(Collation::AsciiCi),
            IndexDef::store("price", FieldType::Double),
            IndexDef::text(&["message", "note"]).named("notes").text_config(notes),
            IndexDef::text(&["message"]).named("search").text_config(builtin),
        ];
        let read: Vec<IndexDef> = written.as_array().unwrap().iter().map(|d| decode(d).unwrap()).collect();
        assert_eq!(read, expected);
    }

    #[test]
    fn anything_else_is_an_error() {
        for bad in [
            json!([]),
            json!({"field": "a", "type": "int", "index": "tree", "colour": "red"}),
            json!({"field": "a", "type": "integr"}),
            json!({"field": "a", "type": "int", "index": "btree"}),
            json!({"field": "a", "type": "int", "index": "ttl"}),
            json!({"field": "a", "type": "string", "collate": "klingon"}),
            json!({"field": "a", "index": "text", "text": {"languages": ["fr"]}}),
            json!({"field": "a", "index": "text", "text": {"ranking": {"k2": 1}}}),
            json!({"field": "a", "index": "text", "text": {"weights": {"b": 1}}}),
            json!({"field": "a", "type": "int", "text": {}}),
            json!({"field": 5, "type": "int"}),
        ] {
            assert!(decode(&bad).is_err(), "{bad}");
        }
    }
}
