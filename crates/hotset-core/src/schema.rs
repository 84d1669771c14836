//! Index definitions: what a namespace declares about its fields.
//!
//! Owns: `IndexDef` (fields, kind, type, options), its validation, the naming of
//! composite indexes (`a+b`) and its JSON form (the HTTP API's, and the user's: it may be
//! tightened at will). Never: hold data (indexes themselves live in `index`), or let the
//! JSON form reach a file: log records and snapshots hold the binary form of `codec`
//! (format 2 on), and format 1's JSON is read by the frozen copy in `json_v1`.

pub mod codec;
pub(crate) mod json_v1;

use crate::collate::Collation;
use crate::doc::FieldPath;
use crate::error::{Error, Result};
use crate::text::TextConfig;
use crate::value::FieldType;
use serde_json::{Map, Value, json};

/// The lookup structure of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// Equality and IN through a hash map.
    Hash,
    /// Ordered: equality, ranges, prefixes and sorting through an ordered map.
    Tree,
    /// Store only (`-`): a typed column for fast filtering and sorting, no lookup.
    Store,
    /// Full-text search over one or more string fields (`text`): matched with
    /// `Op::Match`, ranked, never used for comparisons.
    Text,
}

impl IndexKind {
    /// The kind an API name stands for (`hash`, `tree`, `-`/`store`/`column`,
    /// `text`/`fulltext`); `None` for any other (`ttl` is a tree with `expire_after`, read
    /// by the JSON form).
    pub fn parse(name: &str) -> Option<IndexKind> {
        match name {
            "hash" => Some(IndexKind::Hash),
            "tree" => Some(IndexKind::Tree),
            "-" | "store" | "column" => Some(IndexKind::Store),
            "text" | "fulltext" => Some(IndexKind::Text),
            _ => None,
        }
    }

    /// The kind's API name, as `parse` reads it back.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Hash => "hash",
            IndexKind::Tree => "tree",
            IndexKind::Store => "-",
            IndexKind::Text => "text",
        }
    }
}

/// One index of a namespace. Build with `IndexDef::hash`, `tree`, `store` or `composite`
/// and the option methods.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    /// Unique in its namespace; the fields joined by `+` unless named otherwise.
    pub name: String,
    /// The indexed field paths (dotted for nested fields); several for a composite key or
    /// a text index over several fields.
    pub fields: Vec<String>,
    /// How the index looks values up.
    pub kind: IndexKind,
    /// The type of every field, unless `field_types` gives one per field.
    pub field_type: FieldType,
    /// Per-field types of a composite index (`[name: string, year: int]`); empty when
    /// every field has `field_type`.
    pub field_types: Vec<FieldType>,
    /// The namespace's primary key: unique, required in every document (one per namespace).
    pub pk: bool,
    /// The field holds an array; each element is indexed.
    pub array: bool,
    /// Documents without the field are allowed and left out of the index.
    pub sparse: bool,
    /// How string keys compare (case-insensitive, numeric...); strings only.
    pub collate: Collation,
    /// A TTL index (`"index": "ttl"`): a tree index over an int field holding a Unix time
    /// in seconds; a document is deleted `expire_after` seconds after that time
    /// (`Database::expire_documents`, which maintenance runs every second).
    pub expire_after: Option<u64>,
    /// The options of a text index (present exactly when `kind` is `Text`).
    pub text: Option<Box<TextConfig>>,
}

impl IndexDef {
    /// An index of `kind` over one field, named after it, with every option off.
    pub fn new(field: &str, kind: IndexKind, field_type: FieldType) -> IndexDef {
        IndexDef {
            name: field.to_string(),
            fields: vec![field.to_string()],
            kind,
            field_type,
            field_types: Vec::new(),
            pk: false,
            array: false,
            sparse: false,
            collate: Collation::None,
            expire_after: None,
            text: None,
        }
    }

    /// A hash index over one field.
    pub fn hash(field: &str, field_type: FieldType) -> IndexDef {
        IndexDef::new(field, IndexKind::Hash, field_type)
    }

    /// A tree (ordered) index over one field.
    pub fn tree(field: &str, field_type: FieldType) -> IndexDef {
        IndexDef::new(field, IndexKind::Tree, field_type)
    }

    /// A typed column over one field, with no lookup structure.
    pub fn store(field: &str, field_type: FieldType) -> IndexDef {
        IndexDef::new(field, IndexKind::Store, field_type)
    }

    /// A text index over string fields, named after them (`a+b`) until `named`; each
    /// field weighs 1 until `text_config` says otherwise.
    pub fn text(fields: &[&str]) -> IndexDef {
        IndexDef {
            text: Some(Box::new(TextConfig::new(fields.len()))),
            ..IndexDef::composite(fields, IndexKind::Text, FieldType::String)
        }
    }

    /// Sets the options of a text index.
    pub fn text_config(mut self, config: TextConfig) -> Self {
        self.text = Some(Box::new(config));
        self
    }

    /// A composite index over several fields of one type, named `a+b`.
    pub fn composite(fields: &[&str], kind: IndexKind, field_type: FieldType) -> IndexDef {
        IndexDef {
            name: fields.join("+"),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            ..IndexDef::new(fields.first().copied().unwrap_or(""), kind, field_type)
        }
    }

    /// A composite index whose fields have different types, named `a+b`.
    pub fn composite_typed(fields: &[(&str, FieldType)], kind: IndexKind) -> IndexDef {
        let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
        let first = fields.first().map_or(FieldType::String, |(_, t)| *t);
        IndexDef { field_types: fields.iter().map(|(_, t)| *t).collect(), ..IndexDef::composite(&names, kind, first) }
    }

    /// The type of the `position`-th field.
    pub fn type_of(&self, position: usize) -> FieldType {
        self.field_types.get(position).copied().unwrap_or(self.field_type)
    }

    /// The collation of the `position`-th field (collations apply to strings only).
    pub fn collation_of(&self, position: usize) -> Collation {
        if self.type_of(position) == FieldType::String { self.collate } else { Collation::None }
    }

    /// Makes this the primary key.
    pub fn pk(mut self) -> Self {
        self.pk = true;
        self
    }
    /// Indexes each element of an array field.
    pub fn array(mut self) -> Self {
        self.array = true;
        self
    }
    /// Lets documents leave the field out.
    pub fn sparse(mut self) -> Self {
        self.sparse = true;
        self
    }
    /// Sets how string keys compare.
    pub fn collate(mut self, collate: Collation) -> Self {
        self.collate = collate;
        self
    }
    /// Makes this a TTL index: documents go `seconds` after the time in the field.
    pub fn expire_after(mut self, seconds: u64) -> Self {
        self.expire_after = Some(seconds);
        self
    }
    /// Names the index (instead of its fields joined by `+`).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Several fields making one key (a text index over several fields is not one: it
    /// indexes each field's words).
    pub fn is_composite(&self) -> bool {
        self.fields.len() > 1 && self.kind != IndexKind::Text
    }

    /// The fields as parsed paths, in order.
    pub fn paths(&self) -> Vec<FieldPath> {
        self.fields.iter().map(|f| FieldPath::new(f)).collect()
    }

    /// Checks the definition on its own (not against other indexes).
    pub fn validate(&self) -> Result<()> {
        let fail = |reason: &str| Err(Error::InvalidIndex { index: self.name.clone(), reason: reason.to_string() });
        if self.name.is_empty() {
            return fail("the index has no name");
        }
        if self.fields.is_empty() || self.fields.iter().any(|f| f.is_empty() || f.split('.').any(str::is_empty)) {
            return fail("every field path must be non-empty (dotted parts too)");
        }
        if self.pk && (self.array || self.sparse) {
            return fail("a primary key cannot be array or sparse");
        }
        if self.pk && self.kind == IndexKind::Store {
            return fail("a primary key needs a hash or tree index");
        }
        if self.is_composite() && self.array {
            return fail("a composite index cannot be an array index");
        }
        if !self.field_types.is_empty() && self.field_types.len() != self.fields.len() {
            return fail("give one type per field, or one type for all");
        }
        let has_string = (0..self.fields.len()).any(|i| self.type_of(i) == FieldType::String);
        if self.collate != Collation::None && !has_string {
            return fail("a collation applies to string fields only");
        }
        if self.expire_after.is_some()
            && (self.kind != IndexKind::Tree
                || self.is_composite()
                || self.field_type != FieldType::Int
                || self.pk
                || self.array)
        {
            return fail("a ttl index is one int field (a Unix time in seconds), not a primary key or an array");
        }
        let mut seen = std::collections::HashSet::new();
        if !self.fields.iter().all(|f| seen.insert(f)) {
            return fail("an index lists a field twice");
        }
        if self.kind == IndexKind::Text {
            if self.pk
                || self.sparse
                || self.array
                || self.field_type != FieldType::String
                || self.collate != Collation::None
            {
                return fail(
                    "a text index is over string fields (or arrays of strings), without pk, array, sparse or collate",
                );
            }
            if self.fields.len() > crate::text::index::FIELDS_MAX {
                return fail("a text index covers at most 64 fields");
            }
            if self.text.as_ref().is_none_or(|t| t.weights.len() != self.fields.len()) {
                return fail("a text index needs its options, one weight per field");
            }
        } else if self.text.is_some() {
            return fail("\"text\" options apply to a text index only");
        }
        Ok(())
    }
}

/// The JSON form: `{"name": "a+b", "field": "a" | ["a", "b"], "type": "int" | ["string", "int"],
/// "index": "hash" | "tree" | "-" | "ttl" | "text", "pk": true, "array": true, "sparse": true,
/// "collate": "utf8_ci", "expire_after": 3600, "text": {...}}` (`text`: see `text::config`). Options that are off are left out; `name`
/// defaults to the fields joined by `+`; `ttl` is a tree index with `expire_after` seconds.
impl IndexDef {
    /// The JSON form above, as the API shows it (and `from_json` reads it back).
    pub fn to_json(&self) -> Value {
        let fields = if self.fields.len() > 1 { json!(self.fields) } else { json!(self.fields[0]) };
        let types = if self.field_types.is_empty() {
            json!(self.field_type.name())
        } else {
            Value::Array(self.field_types.iter().map(|t| json!(t.name())).collect())
        };
        let mut object = Map::new();
        object.insert("name".into(), json!(self.name));
        object.insert("field".into(), fields);
        object.insert("type".into(), types);
        match self.expire_after {
            Some(seconds) => {
                object.insert("index".into(), json!("ttl"));
                object.insert("expire_after".into(), json!(seconds));
            }
            None => {
                object.insert("index".into(), json!(self.kind.name()));
            }
        }
        for (option, on) in [("pk", self.pk), ("array", self.array), ("sparse", self.sparse)] {
            if on {
                object.insert(option.into(), json!(true));
            }
        }
        if self.collate != Collation::None {
            object.insert("collate".into(), json!(self.collate.name()));
        }
        if let Some(text) = &self.text {
            object.insert("text".into(), text.to_json(&self.fields));
        }
        Value::Object(object)
    }

    /// Reads the JSON form; unknown keys, kinds, types and collations are errors naming
    /// what was wrong. The result is validated.
    pub fn from_json(value: &Value) -> Result<IndexDef> {
        let object = value.as_object().ok_or_else(|| bad_def("?", "an index definition is a JSON object"))?;
        if object.contains_key("field") && object.contains_key("fields") {
            return Err(bad_def("?", "give \"field\" or \"fields\", not both"));
        }
        let fields: Vec<String> = match object.get("field").or_else(|| object.get("fields")) {
            Some(Value::String(field)) => vec![field.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .map(|f| f.as_str().map(str::to_string).ok_or_else(|| bad_def("?", "field names are strings")))
                .collect::<Result<_>>()?,
            _ => return Err(bad_def("?", "\"field\" must be a name or a list of names")),
        };
        let name = match object.get("name") {
            None => fields.join("+"),
            Some(Value::String(name)) => name.clone(),
            Some(_) => return Err(bad_def("?", "\"name\" must be a string")),
        };
        let text = |key: &str, default: &str| -> Result<String> {
            match object.get(key) {
                None => Ok(default.to_string()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(bad_def(&name, &format!("\"{key}\" must be a string"))),
            }
        };
        let parse_type =
            |t: &str| FieldType::parse(t).ok_or_else(|| bad_def(&name, &format!("unknown field type \"{t}\"")));
        let (field_type, field_types) = match object.get("type") {
            Some(Value::Array(list)) => {
                let types = list
                    .iter()
                    .map(|t| t.as_str().ok_or_else(|| bad_def(&name, "types are strings")).and_then(parse_type))
                    .collect::<Result<Vec<_>>>()?;
                (types.first().copied().unwrap_or(FieldType::String), types)
            }
            Some(_) => (parse_type(&text("type", "")?)?, Vec::new()),
            // A text index only ever holds strings; for every other kind the type decides
            // how values compare, and a guess (string) would silently misorder numbers.
            None if object.get("index").and_then(Value::as_str) == Some("text") => (FieldType::String, Vec::new()),
            None => {
                return Err(bad_def(&name, "\"type\" is required (int, double, string or bool)"));
            }
        };
        let kind_name = text("index", "hash")?;
        let ttl = kind_name == "ttl";
        let kind = if ttl { Some(IndexKind::Tree) } else { IndexKind::parse(&kind_name) }
            .ok_or_else(|| bad_def(&name, &format!("unknown index kind \"{kind_name}\"")))?;
        let expire_after = match (object.get("expire_after"), ttl) {
            (None, false) => None,
            (Some(seconds), true) => Some(
                seconds
                    .as_u64()
                    .ok_or_else(|| bad_def(&name, "\"expire_after\" must be a whole number of seconds (0 or more)"))?,
            ),
            (None, true) => return Err(bad_def(&name, "a ttl index needs \"expire_after\" (seconds)")),
            (Some(_), false) => return Err(bad_def(&name, "\"expire_after\" applies to a ttl index only")),
        };
        let collate_name = text("collate", "none")?;
        let collate = Collation::parse(&collate_name)
            .ok_or_else(|| bad_def(&name, &format!("unknown collation \"{collate_name}\"")))?;
        let flag = |key: &str| -> Result<bool> {
            match object.get(key) {
                None => Ok(false),
                Some(Value::Bool(on)) => Ok(*on),
                Some(_) => Err(bad_def(&name, &format!("\"{key}\" must be true or false"))),
            }
        };
        const KNOWN: [&str; 11] =
            ["name", "field", "fields", "type", "index", "pk", "array", "sparse", "collate", "expire_after", "text"];
        if let Some(unknown) = object.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(bad_def(&name, &format!("unknown key \"{unknown}\"")));
        }
        let text = match (kind, object.get("text")) {
            (IndexKind::Text, options) => {
                Some(Box::new(TextConfig::from_json(options, &fields).map_err(|reason| bad_def(&name, &reason))?))
            }
            (_, None) => None,
            (_, Some(_)) => return Err(bad_def(&name, "\"text\" options apply to a text index only")),
        };
        let def = IndexDef {
            text,
            name: name.clone(),
            fields,
            kind,
            field_type,
            field_types,
            pk: flag("pk")?,
            array: flag("array")?,
            sparse: flag("sparse")?,
            collate,
            expire_after,
        };
        def.validate()?;
        Ok(def)
    }
}

fn bad_def(index: &str, reason: &str) -> Error {
    Error::InvalidIndex { index: index.to_string(), reason: reason.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Regression: an index without `type` silently became a string index (so numbers
    /// sorted as text), and `"INT"` was refused while `"integer"` and `"bigint"` passed.
    #[test]
    fn the_type_is_required_and_read_in_any_case() {
        let error = IndexDef::from_json(&json!({"field": "year", "index": "tree"})).unwrap_err();
        assert!(error.to_string().contains("\"type\" is required"), "{error}");
        for name in ["INT", "Int", "integer", "BIGINT"] {
            let def = IndexDef::from_json(&json!({"field": "year", "type": name, "index": "tree"})).unwrap();
            assert_eq!(def.field_type, FieldType::Int, "{name}");
        }
        let def = IndexDef::from_json(&json!({"fields": ["year", "name"], "type": ["INT", "String"], "index": "tree"}))
            .unwrap();
        assert_eq!(def.field_types, [FieldType::Int, FieldType::String]);
        assert!(IndexDef::from_json(&json!({"field": "year", "type": "integr", "index": "tree"})).is_err());
        // A text index holds strings whatever it is told; it needs no type.
        let def = IndexDef::from_json(&json!({"field": "body", "index": "text"})).unwrap();
        assert_eq!(def.field_type, FieldType::String);
        // What an index writes of itself reads back the same (logs and snapshots hold it).
        let def = IndexDef::from_json(&json!({"field": "year", "type": "INT", "index": "tree"})).unwrap();
        assert_eq!(IndexDef::from_json(&def.to_json()).unwrap(), def);
    }
}
