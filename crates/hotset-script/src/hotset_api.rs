//! The `hotset` table: what a procedure (an EVAL script or a library's function) asks of
//! the documents, beside `redis.call` for keys.
//!
//! Owns `hotset.get(ns, key)`, `hotset.query(ns, dsl)`, `hotset.sql(text, ...)` and the
//! writes `hotset.insert|upsert|update(ns, doc, ...)` and `hotset.delete(ns, key, ...)`
//! (each answers how many operations it took; when they become visible is the host's to
//! decide: all of a procedure's, at once, or none), which
//! reach the host's [`Host::documents`] while a run lasts (`current::with_host`), and the
//! host-free helpers: `hotset.null` (`cjson.null`), `hotset.array_mt`
//! and `hotset.array(t)` (marks a table as a JSON array, so an empty one stays an array),
//! `hotset.int(x)` (an exact integer, boxed beyond ±2^53), `hotset.tojson(v)` and
//! `hotset.fromjson(text)` (the same mapping, without the host). How documents become Lua
//! values and back is `json.rs`'s. A refusal of the host becomes a Lua error table
//! `{err = "CODE message"}` (`NOT_FOUND namespace 'x' does not exist`), a bad argument
//! `{err = "ERR hotset.get: ..."}`; `pcall` catches both and the server goes on.
//!
//! This module must never keep a host past a run, or call the host outside one.

use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use serde_json::Value as Json;

use crate::current::with_host;
use crate::host::{DocumentCall, WriteMode};
use crate::json::{int_from, json_to_lua, lua_to_json, null};
use crate::redis_api::raise_error_table;
use crate::run::RunState;

/// The operations the per-run function serves, by the number the helpers pass it.
const GET: i64 = 1;
const QUERY: i64 = 2;
const SQL: i64 = 3;
const INSERT: i64 = 4;
const UPSERT: i64 = 5;
const UPDATE: i64 = 6;
const DELETE: i64 = 7;

/// The array marker (`hotset.array_mt`), kept in the state's app data so conversions can
/// tell a marked table by identity.
#[derive(Clone)]
pub(crate) struct ArrayMark(pub Table);

/// The marker of this state.
pub(crate) fn array_mark(lua: &Lua) -> mlua::Result<Table> {
    lua.app_data_ref::<ArrayMark>()
        .map(|mark| mark.0.clone())
        .ok_or_else(|| mlua::Error::runtime("the array marker is missing"))
}

fn single(value: LuaValue) -> MultiValue {
    MultiValue::from_iter([value])
}

/// The `hotset` table's functions and constants, made once per state.
pub(crate) fn hotset_parts(lua: &Lua) -> mlua::Result<Table> {
    let marker = lua.create_table()?;
    lua.set_app_data(ArrayMark(marker.clone()));
    let parts = lua.create_table()?;
    parts.raw_set("null", null())?;
    parts.raw_set("array_mt", marker)?;
    let operations = [
        ("get", GET),
        ("query", QUERY),
        ("sql", SQL),
        ("insert", INSERT),
        ("upsert", UPSERT),
        ("update", UPDATE),
        ("delete", DELETE),
    ];
    for (name, op) in operations {
        parts
            .raw_set(name, lua.create_function(move |lua, arguments: MultiValue| document_call(lua, op, arguments))?)?;
    }
    parts.raw_set("array", lua.create_function(array)?)?;
    parts.raw_set(
        "int",
        lua.create_function(|lua, value: LuaValue| {
            int_from(lua, &value).map_err(|message| raise_error_table(lua, message.as_bytes()))
        })?,
    )?;
    parts.raw_set("tojson", lua.create_function(to_json_text)?)?;
    parts.raw_set("fromjson", lua.create_function(from_json_text)?)?;
    Ok(parts)
}

/// `hotset.array([t])`: `t` (or a new table) marked as a JSON array.
fn array(lua: &Lua, arguments: MultiValue) -> mlua::Result<Table> {
    let table = match arguments.front() {
        None | Some(LuaValue::Nil) => lua.create_table()?,
        Some(LuaValue::Table(table)) => table.clone(),
        Some(_) => return Err(raise_error_table(lua, b"hotset.array: expects a table or nothing")),
    };
    let mark = array_mark(lua)?;
    // A table with a metatable of its own (a protected proxy among them) is left alone.
    if table.metatable().is_some_and(|meta| meta != mark) {
        return Err(raise_error_table(lua, b"hotset.array: the table has a metatable of its own"));
    }
    table.set_metatable(Some(mark))?;
    Ok(table)
}

fn to_json_text(lua: &Lua, value: LuaValue) -> mlua::Result<mlua::LuaString> {
    let marker = array_mark(lua)?;
    let json = crate::run::unguarded(lua, || Ok(lua_to_json(&value, &marker, "value")))?
        .map_err(|why| raise_error_table(lua, format!("hotset.tojson: {why}").as_bytes()))?;
    lua.create_string(json.to_string())
}

fn from_json_text(lua: &Lua, text: LuaValue) -> mlua::Result<LuaValue> {
    let LuaValue::String(text) = text else {
        return Err(raise_error_table(lua, b"hotset.fromjson: expects a string of JSON"));
    };
    let json: Json = serde_json::from_slice(&text.as_bytes())
        .map_err(|error| raise_error_table(lua, format!("hotset.fromjson: {error}").as_bytes()))?;
    json_to_lua(lua, &json, &array_mark(lua)?)
}

/// `hotset.get|query|sql|insert|upsert|update|delete` (`op`): the arguments checked and
/// handed to the host of the run in progress (`current::with_host`).
fn document_call(lua: &Lua, op: i64, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let marker = array_mark(lua)?;
    let name = match op {
        GET => "hotset.get",
        QUERY => "hotset.query",
        SQL => "hotset.sql",
        INSERT => "hotset.insert",
        UPSERT => "hotset.upsert",
        UPDATE => "hotset.update",
        _ => "hotset.delete",
    };
    let refuse = |message: String| raise_error_table(lua, format!("{name}: {message}").as_bytes());
    let argument = |index: usize| arguments.get(index).cloned().unwrap_or(LuaValue::Nil);
    let first = match argument(0) {
        LuaValue::String(text) => String::from(&*text.to_str().map_err(|_| refuse("argument #1 is not UTF-8".into()))?),
        _ => {
            let what = if op == SQL { "the SQL text" } else { "the namespace" };
            return Err(refuse(format!("{what} must be a string (argument #1)")));
        }
    };
    let json = |index: usize, what: &str| lua_to_json(&argument(index), &marker, what).map_err(&refuse);
    // Reading the script's tables unguarded (`run::unguarded`).
    let values = crate::run::unguarded(lua, || {
        Ok(match op {
            GET => vec![json(1, "key")?],
            QUERY => vec![json(1, "query")?],
            SQL => (1..arguments.len())
                .map(|index| json(index, &format!("parameter {index}")))
                .collect::<Result<_, _>>()?,
            DELETE => {
                (1..arguments.len()).map(|index| json(index, &format!("key {index}"))).collect::<Result<_, _>>()?
            }
            _ => {
                (1..arguments.len()).map(|index| json(index, &format!("document {index}"))).collect::<Result<_, _>>()?
            }
        })
    })?;
    let call = match op {
        GET | DELETE if values.is_empty() || values.iter().any(Json::is_null) => {
            return Err(refuse("a key is required (argument #2 on)".into()));
        }
        GET => DocumentCall::Get { namespace: &first, key: &values[0] },
        QUERY if !values[0].is_object() => {
            return Err(refuse("the query must be a table of the JSON query DSL (argument #2)".into()));
        }
        QUERY => DocumentCall::Query { namespace: &first, query: &values[0] },
        SQL => DocumentCall::Sql { text: &first, parameters: &values },
        DELETE => DocumentCall::Delete { namespace: &first, keys: &values },
        _ => {
            if values.is_empty() {
                return Err(refuse("a document is required (argument #2 on)".into()));
            }
            if let Some(at) = values.iter().position(|document| !document.is_object()) {
                let message = format!("document {} must be a table with string keys (an object)", at + 1);
                return Err(refuse(message));
            }
            let mode = match op {
                INSERT => WriteMode::Insert,
                UPDATE => WriteMode::Update,
                _ => WriteMode::Upsert,
            };
            DocumentCall::Write { namespace: &first, mode, documents: &values }
        }
    };
    let context = match lua.app_data_ref::<RunState>() {
        Some(state) => state.call_context(),
        None => return Err(raise_error_table(lua, b"hotset functions can only be called inside a script invocation")),
    };
    let answer = with_host(lua, |host| host.documents(call, &context))
        .ok_or_else(|| raise_error_table(lua, b"hotset functions can only be called inside a script invocation"))?;
    let text = match answer {
        Ok(text) => text,
        Err(error) => {
            let line = format!("-{} {}", error.code.to_ascii_uppercase(), error.message);
            return Err(raise_error_table(lua, line.as_bytes()));
        }
    };
    let json: Json = serde_json::from_slice(&text).map_err(|error| {
        raise_error_table(lua, format!("{name}: unreadable answer from the server: {error}").as_bytes())
    })?;
    if op == GET && json.is_null() {
        return Ok(single(LuaValue::Nil));
    }
    Ok(single(crate::run::unguarded(lua, || json_to_lua(lua, &json, &marker))?))
}
