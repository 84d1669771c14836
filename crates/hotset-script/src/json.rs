//! Documents between JSON and Lua, both ways: what `hotset.*` hands a procedure and what it
//! takes from one.
//!
//! Owns the mapping, chosen so a document survives a trip through Lua unchanged (but for
//! the order of an object's keys, which Lua tables do not keep):
//!
//! | JSON | Lua |
//! |---|---|
//! | `null` | `hotset.null` (the same light userdata as `cjson.null`), never `nil`, which a table cannot hold |
//! | `true` / `false` | booleans |
//! | an integer within ±2^53 | a number (Lua 5.1 numbers are doubles: exact up to 2^53) |
//! | an integer beyond ±2^53 (up to the range of i64 and u64) | a boxed integer ([`Exact`], a userdata): `tostring` gives its digits, `==` `<` `<=` compare it with another, `hotset.int` makes one |
//! | any other number | a number |
//! | a string | a string (JSON text is UTF-8; a Lua string that is not is refused on the way back) |
//! | an array | a table with keys 1..n whose metatable is `hotset.array_mt`, so an empty array stays an array |
//! | an object | a table with string keys (no metatable) |
//!
//! Back to JSON: a table marked `hotset.array_mt` is an array (its keys must be 1..n); any
//! other table is an array when its keys are exactly 1..n and an object when they are all
//! strings; an empty unmarked table is an object (`hotset.array()` makes an empty array);
//! other key mixes, NaN, infinities, functions and other userdata are refused with a
//! message naming the path (`doc.tags[2]`). Integral numbers within the range of i64 become
//! JSON integers. Tables nest at most [`JSON_DEPTH_MAX`] levels (a table that holds itself
//! is refused, not recursed forever).
//!
//! This module must never call the host or run Lua code: it reads tables raw (no
//! metamethods) and builds values.

use mlua::{AnyUserData, LightUserData, Lua, MetaMethod, Table, UserData, UserDataMethods, Value as LuaValue};
use serde_json::{Map, Number, Value as Json};

/// How deep a table may nest on its way to JSON (the engine's document depth limit).
pub const JSON_DEPTH_MAX: usize = 128;

/// The largest integer a Lua 5.1 number holds exactly: 2^53.
pub const EXACT_NUMBER_MAX: i64 = 1 << 53;

/// An integer beyond ±2^53 kept exact: the range of i64 and u64 together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Exact(pub i128);

impl Exact {
    /// The integer as JSON: i64 when it fits, u64 otherwise.
    fn to_json(self) -> Option<Number> {
        i64::try_from(self.0).map(Number::from).or_else(|_| u64::try_from(self.0).map(Number::from)).ok()
    }

    /// Whether `value` is within what JSON integers hold here (i64 and u64).
    fn in_range(value: i128) -> bool {
        (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(&value)
    }
}

impl UserData for Exact {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| Ok(this.0.to_string()));
        methods.add_meta_function(MetaMethod::Eq, |_, (a, b): (AnyUserData, AnyUserData)| {
            Ok(matches!((a.borrow::<Exact>(), b.borrow::<Exact>()), (Ok(a), Ok(b)) if *a == *b))
        });
        methods.add_meta_function(MetaMethod::Lt, |lua, (a, b): (AnyUserData, AnyUserData)| {
            let (a, b) = exact_pair(lua, &a, &b)?;
            Ok(a < b)
        });
        methods.add_meta_function(MetaMethod::Le, |lua, (a, b): (AnyUserData, AnyUserData)| {
            let (a, b) = exact_pair(lua, &a, &b)?;
            Ok(a <= b)
        });
    }
}

fn exact_pair(lua: &Lua, a: &AnyUserData, b: &AnyUserData) -> mlua::Result<(Exact, Exact)> {
    match (a.borrow::<Exact>(), b.borrow::<Exact>()) {
        (Ok(a), Ok(b)) => Ok((*a, *b)),
        _ => Err(crate::sandbox::raise_message(lua, "attempt to compare a boxed integer with another userdata")),
    }
}

/// `hotset.null`, the same value as `cjson.null`.
pub fn null() -> LuaValue {
    crate::libs::cjson::null()
}

fn is_null(value: &LuaValue) -> bool {
    matches!(value, LuaValue::LightUserData(LightUserData(pointer)) if pointer.is_null())
}

/// An integer as Lua holds it: a number within ±2^53, a boxed [`Exact`] beyond.
pub fn integer_to_lua(lua: &Lua, value: i128) -> mlua::Result<LuaValue> {
    if (-i128::from(EXACT_NUMBER_MAX)..=i128::from(EXACT_NUMBER_MAX)).contains(&value) {
        // Within ±2^53 the cast is exact, and Lua holds it exactly.
        return Ok(LuaValue::Number(value as f64));
    }
    Ok(LuaValue::UserData(lua.create_userdata(Exact(value))?))
}

/// JSON as a Lua value; arrays get `array_mt` as their metatable.
pub fn json_to_lua(lua: &Lua, value: &Json, array_mt: &Table) -> mlua::Result<LuaValue> {
    Ok(match value {
        Json::Array(_) | Json::Object(_) => LuaValue::Table(table_of(lua, value, array_mt)?),
        Json::String(text) => LuaValue::String(lua.create_string(text)?),
        scalar => scalar_to_lua(lua, scalar)?,
    })
}

/// A JSON scalar (not a string) as a Lua value.
fn scalar_to_lua(lua: &Lua, value: &Json) -> mlua::Result<LuaValue> {
    Ok(match value {
        Json::Bool(truth) => LuaValue::Boolean(*truth),
        Json::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(integer), _) => integer_to_lua(lua, i128::from(integer))?,
            (None, Some(integer)) => integer_to_lua(lua, i128::from(integer))?,
            (None, None) => LuaValue::Number(number.as_f64().unwrap_or(f64::NAN)),
        },
        _ => null(),
    })
}

/// A JSON array or object as a table. Strings, keys and values alike, are set as `&str`,
/// which mlua pushes straight onto the stack: a `LuaString` handle each would cost a
/// reference slot made and freed, most of a page of documents' conversion.
fn table_of(lua: &Lua, value: &Json, array_mt: &Table) -> mlua::Result<Table> {
    match value {
        Json::Array(elements) => {
            let table = lua.create_table_with_capacity(elements.len(), 0)?;
            for (index, element) in elements.iter().enumerate() {
                set(lua, &table, index + 1, element, array_mt)?;
            }
            table.set_metatable(Some(array_mt.clone()))?;
            Ok(table)
        }
        Json::Object(fields) => {
            let table = lua.create_table_with_capacity(0, fields.len())?;
            for (key, field) in fields {
                set(lua, &table, key.as_str(), field, array_mt)?;
            }
            Ok(table)
        }
        _ => unreachable!("only arrays and objects are tables"),
    }
}

/// `table[key] = value`, raw, the value converted by its kind.
fn set<K: mlua::IntoLua>(lua: &Lua, table: &Table, key: K, value: &Json, array_mt: &Table) -> mlua::Result<()> {
    match value {
        Json::String(text) => table.raw_set(key, text.as_str()),
        Json::Array(_) | Json::Object(_) => table.raw_set(key, table_of(lua, value, array_mt)?),
        scalar => table.raw_set(key, scalar_to_lua(lua, scalar)?),
    }
}

/// A Lua value as JSON; the error names the path of what could not be converted, starting
/// at `path`. `nil` is JSON null here (an argument left out), never inside a table.
pub fn lua_to_json(value: &LuaValue, array_mt: &Table, path: &str) -> Result<Json, String> {
    to_json(value, array_mt, 0).map_err(|failure| {
        let inner: String = failure.path.iter().rev().map(String::as_str).collect();
        format!("{path}{inner}: {}", failure.why)
    })
}

/// Why a value is not JSON, and where: the path's segments innermost first, each added as
/// the error passes a level on its way out (nothing is spent on paths when all is well).
struct Failure {
    path: Vec<String>,
    why: String,
}

impl Failure {
    fn new(why: impl Into<String>) -> Failure {
        Failure { path: Vec::new(), why: why.into() }
    }

    fn at(mut self, segment: impl FnOnce() -> String) -> Failure {
        self.path.push(segment());
        self
    }
}

fn to_json(value: &LuaValue, array_mt: &Table, depth: usize) -> Result<Json, Failure> {
    Ok(match value {
        LuaValue::Nil => Json::Null,
        value if is_null(value) => Json::Null,
        LuaValue::Boolean(truth) => Json::Bool(*truth),
        LuaValue::Integer(integer) => Json::from(*integer),
        LuaValue::Number(number) => {
            number_to_json(*number).ok_or_else(|| Failure::new(format!("{number} is not a JSON number")))?
        }
        LuaValue::String(text) => match std::str::from_utf8(&text.as_bytes()) {
            Ok(text) => Json::String(text.to_string()),
            Err(_) => return Err(Failure::new("a string that is not UTF-8")),
        },
        LuaValue::UserData(data) => match data.borrow::<Exact>() {
            Ok(exact) => Json::Number(exact.to_json().ok_or_else(|| Failure::new("integer out of range"))?),
            Err(_) => return Err(Failure::new("a userdata is not JSON")),
        },
        LuaValue::Table(_) if depth >= JSON_DEPTH_MAX => {
            return Err(Failure::new(format!("tables nest deeper than {JSON_DEPTH_MAX} levels")));
        }
        LuaValue::Table(table) => table_to_json(table, array_mt, depth)?,
        other => return Err(Failure::new(format!("a {} is not JSON", crate::sandbox::type_name(other)))),
    })
}

/// A Lua number as JSON: integral ones within i64 as integers (mlua reads most of those as
/// `Integer` already), finite others as floats; NaN and infinities have no JSON form.
fn number_to_json(number: f64) -> Option<Json> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if number.fract() == 0.0 && (-LIMIT..LIMIT).contains(&number) {
        return Some(Json::from(number as i64));
    }
    Number::from_f64(number).map(Json::Number)
}

/// A table as a JSON array or object, its pairs walked once: keys 1..n make an array (so
/// does the mark `array_mt`, for an empty one), string keys an object.
fn table_to_json(table: &Table, array_mt: &Table, depth: usize) -> Result<Json, Failure> {
    let mut pairs = Vec::new();
    let (mut strings, mut largest) = (0usize, 0i64);
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, value) = pair.map_err(|_| Failure::new("a table that cannot be walked"))?;
        match &key {
            LuaValue::Integer(index) if *index >= 1 => largest = largest.max(*index),
            LuaValue::String(_) => strings += 1,
            _ => return Err(Failure::new("a table key that is neither a string nor a positive integer")),
        }
        pairs.push((key, value));
    }
    let integers = pairs.len() - strings;
    let marked = || table.metatable().is_some_and(|meta| meta == *array_mt);
    match (integers, strings) {
        (0, 0) if marked() => Ok(Json::Array(Vec::new())),
        (0, 0) => Ok(Json::Object(Map::new())),
        (_, 0) if usize::try_from(largest).is_ok_and(|largest| largest == integers) => {
            // `pairs` walks the array part in order, but the hash part in any: placed by key.
            let mut elements = vec![Json::Null; integers];
            for (key, value) in &pairs {
                let LuaValue::Integer(index) = key else { unreachable!("only integer keys here") };
                let at = usize::try_from(*index - 1).expect("keys are 1..n");
                elements[at] =
                    to_json(value, array_mt, depth + 1).map_err(|failure| failure.at(|| format!("[{index}]")))?;
            }
            Ok(Json::Array(elements))
        }
        (_, 0) => Err(Failure::new("an array with holes (its keys are not 1..n)")),
        (0, _) if marked() => Err(Failure::new("a table marked as an array has string keys")),
        (0, _) => {
            let mut fields = Map::with_capacity(strings);
            for (key, value) in &pairs {
                let LuaValue::String(key) = key else { unreachable!("only string keys here") };
                let key = key.to_str().map_err(|_| Failure::new("a key that is not UTF-8"))?.to_string();
                let field = to_json(value, array_mt, depth + 1).map_err(|failure| failure.at(|| format!(".{key}")))?;
                fields.insert(key, field);
            }
            Ok(Json::Object(fields))
        }
        _ => Err(Failure::new("a table mixes integer and string keys (neither an array nor an object)")),
    }
}

/// `hotset.int(value)`: an integer, exact, from a number or its decimal digits: a number
/// within ±2^53, a boxed integer beyond.
pub fn int_from(lua: &Lua, value: &LuaValue) -> Result<LuaValue, String> {
    let integer: i128 = match value {
        LuaValue::Integer(integer) => i128::from(*integer),
        LuaValue::Number(number) if number.fract() == 0.0 && number.abs() < 1.8e19 => *number as i128,
        LuaValue::String(text) => {
            let text = String::from(&*text.to_str().map_err(|_| "hotset.int: the text is not UTF-8".to_string())?);
            text.trim().parse::<i128>().map_err(|_| format!("hotset.int: '{text}' is not an integer"))?
        }
        LuaValue::UserData(data) => {
            data.borrow::<Exact>().map(|exact| exact.0).map_err(|_| "hotset.int: not an integer")?
        }
        _ => return Err("hotset.int: expects an integer, as a number or its digits".into()),
    };
    if !Exact::in_range(integer) {
        return Err("hotset.int: out of the range of 64-bit integers".into());
    }
    integer_to_lua(lua, integer).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(lua: &Lua, marker: &Table, value: Json) -> Json {
        let lua_value = json_to_lua(lua, &value, marker).unwrap();
        lua_to_json(&lua_value, marker, "doc").unwrap()
    }

    #[test]
    fn documents_survive_a_round_trip() {
        let lua = Lua::new();
        let marker = lua.create_table().unwrap();
        for value in [
            json!({"id": 1, "name": "ada", "none": null, "tags": [], "meta": {}, "list": [1, null, "x", [2, []]]}),
            json!([]),
            json!({}),
            json!([{"a": [null]}, {}]),
            json!({"pi": 3.25, "neg": -7, "yes": true, "no": false}),
            json!({"big": 9_007_199_254_740_993i64, "min": i64::MIN, "max": u64::MAX, "edge": 9_007_199_254_740_992i64}),
        ] {
            assert_eq!(round_trip(&lua, &marker, value.clone()), value);
        }
    }

    #[test]
    fn integers_beyond_two_to_the_53_are_boxed_and_exact() {
        let lua = Lua::new();
        let marker = lua.create_table().unwrap();
        let boxed = json_to_lua(&lua, &json!(9_007_199_254_740_993i64), &marker).unwrap();
        assert!(matches!(boxed, LuaValue::UserData(_)));
        lua.globals().set("b", boxed).unwrap();
        assert_eq!(lua.load("return tostring(b)").eval::<String>().unwrap(), "9007199254740993");
        let plain = json_to_lua(&lua, &json!(9_007_199_254_740_992i64), &marker).unwrap();
        assert!(matches!(plain, LuaValue::Number(_)));
        lua.globals().set("c", json_to_lua(&lua, &json!(9_007_199_254_740_993i64), &marker).unwrap()).unwrap();
        lua.globals().set("d", json_to_lua(&lua, &json!(9_007_199_254_740_994i64), &marker).unwrap()).unwrap();
        assert!(lua.load("return b == c and b ~= d and b < d and d >= c").eval::<bool>().unwrap());
        let made = int_from(&lua, &LuaValue::String(lua.create_string("-18446744073709551615").unwrap()));
        assert!(made.is_err(), "below i64::MIN");
        let made = int_from(&lua, &LuaValue::String(lua.create_string("18446744073709551615").unwrap())).unwrap();
        assert_eq!(lua_to_json(&made, &marker, "x").unwrap(), json!(u64::MAX));
    }

    #[test]
    fn tables_made_in_lua_take_the_shape_of_their_keys() {
        let lua = Lua::new();
        let marker = lua.create_table().unwrap();
        lua.globals().set("marker", marker.clone()).unwrap();
        let convert = |code: &str| {
            let value: LuaValue = lua.load(code).eval().unwrap();
            lua_to_json(&value, &marker, "doc")
        };
        assert_eq!(convert("return {1, 2, 'x'}"), Ok(json!([1, 2, "x"])));
        assert_eq!(convert("return {}"), Ok(json!({})));
        assert_eq!(convert("return setmetatable({}, marker)"), Ok(json!([])));
        assert_eq!(convert("return {a = {b = {1.5}}}"), Ok(json!({"a": {"b": [1.5]}})));
        assert_eq!(convert("return 2^60"), Ok(json!(1_152_921_504_606_846_976i64)));
        assert_eq!(convert("return nil"), Ok(json!(null)));
        assert!(convert("return {1, nil, 3}").unwrap_err().contains("holes"));
        assert!(convert("return {1, a = 2}").unwrap_err().contains("mixes"));
        assert!(convert("return {a = {b = 0/0}}").unwrap_err().starts_with("doc.a.b:"));
        assert!(convert("return {f = print}").unwrap_err().contains("function"));
        assert!(convert("return {x = {1, {y = 1/0}}}").unwrap_err().starts_with("doc.x[2].y:"));
        assert!(convert("return setmetatable({a = 1}, marker)").unwrap_err().contains("marked"));
        assert!(convert("local t = {} t.t = t return t").unwrap_err().contains("nest deeper"));
        assert!(convert("return {[2.5] = 1}").unwrap_err().contains("neither"));
        assert!(convert("return '\\255'").unwrap_err().contains("UTF-8"));
    }
}
