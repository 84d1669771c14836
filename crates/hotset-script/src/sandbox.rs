//! The sandboxed Lua state: which globals exist and which tables are read-only.
//!
//! Owns the globals a script sees (Redis 7.0's allow list, with the later hardening that removed
//! `getfenv`, `setfenv` and `newproxy` and protects the metatables of basic types), the
//! read-only tables (`_G`, every library and `redis`), the nonexistent-global error, and how an
//! error a Rust function raises reaches Lua code as the plain string or table Redis' C
//! functions would raise.
//!
//! Stock Lua 5.1 has no read-only tables (Redis patched its copy), so a protected table is made
//! a proxy: its contents move to a hidden table reached through `__index`, and `__newindex`
//! refuses writes. The functions that would see through a proxy (`rawset`, `rawget`, `next`,
//! `pairs`, `ipairs`, `setmetatable`, `getmetatable`, `table.insert`, `table.remove`) are
//! replaced by Rust functions that read the hidden table and refuse writes with Redis' text.
//! The hidden tables and the original functions are reachable only from Rust and from upvalues
//! of the prelude, which no script can reach (no `debug` library, no `getfenv`).
//!
//! mlua turns an `Err` returned by a Rust function into a userdata error, not the string or
//! table a script expects. So a Rust function that fails returns [`raise`]'s error, which
//! carries the Lua value to raise; every place that catches errors (the `pcall`, `xpcall` and
//! `coroutine.resume` wrappers, and the run's error handler) hands it to [`caught`] first,
//! which gives back that value.
//!
//! This module must never let a script reach a table that other scripts share without going
//! through a proxy.

use std::fmt;

use mlua::{Function, Lua, LuaOptions, MultiValue, RegistryKey, StdLib, Table, Value as LuaValue};

/// The chunk name of the prelude.
pub const PRELUDE_CHUNK: &str = "=hotset";

/// Which kind of state: the EVAL state has `KEYS`/`ARGV` globals and the debugger stubs; the
/// FUNCTION state swaps its globals for the load-time API while a library loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// EVAL / EVALSHA.
    Eval,
    /// FUNCTION LOAD / FCALL.
    Functions,
}

/// Handles into a built sandbox that the engine needs.
pub struct Sandbox {
    /// The hidden table behind `_G`: where `KEYS` and `ARGV` are set.
    pub real_globals: Table,
    /// The metatable of the `_G` proxy; its `__index` is swapped to `load_api` while a library
    /// loads (Functions mode).
    pub globals_meta: Table,
    /// The hidden load-time globals (Functions mode; empty in Eval mode).
    pub load_api: Table,
    /// The hidden table behind the load-time `redis`, where each load sets
    /// `register_function` (Functions mode).
    pub real_load_redis: Table,
    /// `run(f, keys, args)`: calls `f` under `xpcall` with the error handler; `keys`/`args` are
    /// passed only in Functions mode. Returns `true, result` or `false, error table`.
    pub run: Function,
}

/// The globals a script may see, as in Redis 7.0 after its sandbox hardening.
const ALLOWED_GLOBALS: &[&str] = &[
    "xpcall",
    "tostring",
    "setmetatable",
    "next",
    "assert",
    "tonumber",
    "rawequal",
    "collectgarbage",
    "getmetatable",
    "rawset",
    "pcall",
    "coroutine",
    "type",
    "_G",
    "select",
    "unpack",
    "gcinfo",
    "pairs",
    "rawget",
    "loadstring",
    "ipairs",
    "_VERSION",
    "load",
    "error",
    "string",
    "math",
    "table",
    "cjson",
    "bit",
    "cmsgpack",
    "struct",
    "redis",
    "hotset",
];

const READONLY: &str = "Attempt to modify a readonly table";

/// A fresh Lua 5.1 state with the standard libraries Redis loads (base, table, string, math;
/// not io, os, package or debug).
pub fn new_state() -> mlua::Result<Lua> {
    Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::new())
}

/// A Lua value on its way to being raised, inside the error mlua carries.
#[derive(Debug)]
pub struct Raised(RegistryKey);

impl fmt::Display for Raised {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a script error")
    }
}

impl std::error::Error for Raised {}

/// The error that raises `value` as it is (a string without position, or a table).
pub fn raise(lua: &Lua, value: LuaValue) -> mlua::Error {
    match lua.create_registry_value(value) {
        Ok(key) => mlua::Error::external(Raised(key)),
        Err(error) => error,
    }
}

/// The error that raises `message` prefixed with the calling script line, as `luaL_error`
/// does (`user_script:1: ...`).
pub fn raise_message(lua: &Lua, message: impl AsRef<[u8]>) -> mlua::Error {
    let mut text = caller_position(lua);
    text.extend_from_slice(message.as_ref());
    match lua.create_string(text) {
        Ok(text) => raise(lua, LuaValue::String(text)),
        Err(error) => error,
    }
}

/// `luaL_where(L, 1)` seen from a Rust function: the caller's `short_src:line: `, or nothing
/// when the caller is not Lua code with line information.
fn caller_position(lua: &Lua) -> Vec<u8> {
    let frame = lua
        .inspect_stack(1, |debug| (debug.source().short_src.map(|source| source.into_owned()), debug.current_line()));
    match frame {
        Some((Some(source), Some(line))) if line > 0 => format!("{source}:{line}: ").into_bytes(),
        _ => Vec::new(),
    }
}

/// The value a caught error stands for: the raised value for a [`raise`]d error, the value
/// itself otherwise.
pub fn caught(lua: &Lua, error: LuaValue) -> mlua::Result<LuaValue> {
    if let LuaValue::Error(inner) = &error
        && let Some(raised) = find_raised(inner)
    {
        return lua.registry_value(&raised.0);
    }
    Ok(error)
}

fn find_raised(error: &mlua::Error) -> Option<&Raised> {
    match error {
        mlua::Error::CallbackError { cause, .. } => find_raised(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<Raised>(),
        _ => None,
    }
}

/// Lua's own `next` on `table` (no proxy look-through): the pair after `key`, `(nil, nil)` at
/// the end. For walking a table without holding every pair at once.
pub fn raw_next(lua: &Lua, table: &Table, key: LuaValue) -> mlua::Result<(LuaValue, LuaValue)> {
    let next = with_guard(lua, |guard| guard.next.clone())?;
    next.call::<(LuaValue, LuaValue)>((table.clone(), key)).map_err(|error| reraise(lua, error))
}

/// An error from calling one of Lua's own functions, raised again as Lua raised it.
fn reraise(lua: &Lua, error: mlua::Error) -> mlua::Error {
    match error {
        // mlua appends a traceback to errors of functions it calls: Lua's own text stops
        // before it.
        mlua::Error::RuntimeError(message) => {
            match lua.create_string(message.split("\nstack traceback:").next().unwrap_or_default()) {
                Ok(message) => raise(lua, LuaValue::String(message)),
                Err(error) => error,
            }
        }
        other => other,
    }
}

/// What the Rust side hands the prelude.
pub struct Parts {
    /// The `redis` table's functions and constants.
    pub redis: Table,
    /// The load-time `redis` table's functions and constants (Functions mode).
    pub load_redis: Table,
    /// The libraries (`cjson`, `bit`, `cmsgpack`, `struct`), by name.
    pub libraries: Table,
    /// `math.random` and `math.randomseed`.
    pub math: Table,
    /// The `hotset` table's functions and constants (procedures over documents).
    pub hotset: Table,
    /// The error handler.
    pub handler: Function,
    /// Whether the running script was killed, checked when `pcall` catches an error.
    pub killed: Function,
}

/// The hidden tables and original functions the guard functions use, in the app data.
struct Guard {
    real_of: Table,
    meta_view_of: Table,
    string_view: Table,
    next: Function,
    safe_next: Option<Function>,
    ipairs: Function,
    rawset: Function,
    setmetatable: Function,
    getmetatable: Function,
    insert: Function,
    remove: Function,
}

fn weak_keyed(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__mode", "k")?;
    table.set_metatable(Some(meta))?;
    Ok(table)
}

/// Builds the sandbox in `lua`'s globals.
pub fn build(lua: &Lua, mode: Mode, parts: Parts) -> mlua::Result<Sandbox> {
    let globals = lua.globals();
    let table_library: Table = globals.raw_get("table")?;
    let guard = Guard {
        real_of: weak_keyed(lua)?,
        meta_view_of: weak_keyed(lua)?,
        string_view: lua.create_table()?,
        next: globals.raw_get("next")?,
        safe_next: None,
        ipairs: globals.raw_get("ipairs")?,
        rawset: globals.raw_get("rawset")?,
        setmetatable: globals.raw_get("setmetatable")?,
        getmetatable: globals.raw_get("getmetatable")?,
        insert: table_library.raw_get("insert")?,
        remove: table_library.raw_get("remove")?,
    };
    let guard_functions = guard_functions(lua, &guard)?;
    let real_of = guard.real_of.clone();
    let meta_view_of = guard.meta_view_of.clone();
    let string_view = guard.string_view.clone();
    lua.set_app_data(guard);
    let safe_next: Function = guard_functions.raw_get("next")?;
    if let Some(mut guard) = lua.app_data_mut::<Guard>() {
        guard.safe_next = Some(safe_next);
    }
    let allowed = lua.create_table()?;
    for name in ALLOWED_GLOBALS {
        allowed.raw_set(*name, true)?;
    }
    let prelude = lua.load(PRELUDE).set_name(PRELUDE_CHUNK).into_function()?;
    let arguments = MultiValue::from_iter([
        LuaValue::Table(globals),
        LuaValue::Table(allowed),
        LuaValue::Table(guard_functions),
        LuaValue::Table(real_of),
        LuaValue::Table(meta_view_of),
        LuaValue::Table(string_view),
        LuaValue::Table(parts.redis),
        LuaValue::Table(parts.load_redis),
        LuaValue::Table(parts.libraries),
        LuaValue::Table(parts.math),
        LuaValue::Table(parts.hotset),
        LuaValue::Function(parts.handler),
        LuaValue::Function(parts.killed),
        LuaValue::Boolean(mode == Mode::Functions),
    ]);
    let (real_globals, globals_meta, load_api, _real_redis, real_load_redis, run): (
        Table,
        Table,
        Table,
        Table,
        Table,
        Function,
    ) = prelude.call(arguments)?;
    Ok(Sandbox { real_globals, globals_meta, load_api, real_load_redis, run })
}

fn with_guard<R>(lua: &Lua, f: impl FnOnce(&Guard) -> R) -> mlua::Result<R> {
    let guard = lua.app_data_ref::<Guard>().ok_or_else(|| mlua::Error::runtime("the sandbox guard is missing"))?;
    Ok(f(&guard))
}

/// Lua 5.1's name for the type of `value` (mlua reads integral numbers as integers).
pub fn type_name(value: &LuaValue) -> &'static str {
    match value {
        LuaValue::Integer(_) | LuaValue::Number(_) => "number",
        LuaValue::LightUserData(_) | LuaValue::UserData(_) | LuaValue::Error(_) => "userdata",
        other => other.type_name(),
    }
}

/// The table argument at `index` (0-based) or Lua's "bad argument" error.
fn table_argument(lua: &Lua, arguments: &MultiValue, index: usize, function: &str) -> mlua::Result<Table> {
    match arguments.get(index) {
        Some(LuaValue::Table(table)) => Ok(table.clone()),
        other => {
            let got = other.map_or("no value", type_name);
            Err(raise_message(lua, format!("bad argument #{} to '{function}' (table expected, got {got})", index + 1)))
        }
    }
}

/// The hidden table behind `table` if it is a protected proxy.
fn real_of(lua: &Lua, table: &Table) -> mlua::Result<Option<Table>> {
    let real = with_guard(lua, |guard| guard.real_of.raw_get::<Option<Table>>(table.clone()))??;
    Ok(real)
}

fn refuse_if_protected(lua: &Lua, table: &Table) -> mlua::Result<()> {
    if real_of(lua, table)?.is_some() {
        return Err(raise(lua, LuaValue::String(lua.create_string(READONLY)?)));
    }
    Ok(())
}

fn call_original(lua: &Lua, pick: impl FnOnce(&Guard) -> Function, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let function = with_guard(lua, pick)?;
    function.call::<MultiValue>(arguments).map_err(|error| reraise(lua, error))
}

/// The Rust replacements of the functions that would see through a proxy.
fn guard_functions(lua: &Lua, guard: &Guard) -> mlua::Result<Table> {
    let functions = lua.create_table()?;
    let _ = guard;
    functions.raw_set(
        "next",
        lua.create_function(|lua, arguments: MultiValue| {
            let table = table_argument(lua, &arguments, 0, "next")?;
            let real = real_of(lua, &table)?.unwrap_or(table);
            let key = arguments.get(1).cloned().unwrap_or(LuaValue::Nil);
            call_original(lua, |guard| guard.next.clone(), MultiValue::from_iter([LuaValue::Table(real), key]))
        })?,
    )?;
    functions.raw_set(
        "pairs",
        lua.create_function(|lua, arguments: MultiValue| {
            let table = table_argument(lua, &arguments, 0, "pairs")?;
            let protected = real_of(lua, &table)?.is_some();
            let iterator =
                with_guard(lua, |guard| if protected { guard.safe_next.clone() } else { Some(guard.next.clone()) })?;
            let iterator = iterator.ok_or_else(|| mlua::Error::runtime("the guarded next is missing"))?;
            Ok(MultiValue::from_iter([LuaValue::Function(iterator), LuaValue::Table(table), LuaValue::Nil]))
        })?,
    )?;
    functions.raw_set(
        "ipairs",
        lua.create_function(|lua, arguments: MultiValue| {
            let table = table_argument(lua, &arguments, 0, "ipairs")?;
            let real = real_of(lua, &table)?.unwrap_or(table);
            call_original(lua, |guard| guard.ipairs.clone(), MultiValue::from_iter([LuaValue::Table(real)]))
        })?,
    )?;
    functions.raw_set(
        "rawget",
        lua.create_function(|lua, arguments: MultiValue| {
            let table = table_argument(lua, &arguments, 0, "rawget")?;
            let Some(key) = arguments.get(1).cloned() else {
                return Err(raise_message(lua, "bad argument #2 to 'rawget' (value expected)"));
            };
            let real = real_of(lua, &table)?.unwrap_or(table);
            real.raw_get::<LuaValue>(key)
        })?,
    )?;
    functions.raw_set(
        "rawset",
        lua.create_function(|lua, arguments: MultiValue| {
            let table = table_argument(lua, &arguments, 0, "rawset")?;
            refuse_if_protected(lua, &table)?;
            for (index, what) in [(1, "#2"), (2, "#3")] {
                if arguments.len() <= index {
                    return Err(raise_message(lua, format!("bad argument {what} to 'rawset' (value expected)")));
                }
            }
            call_original(lua, |guard| guard.rawset.clone(), arguments)
        })?,
    )?;
    functions.raw_set(
        "setmetatable",
        lua.create_function(|lua, arguments: MultiValue| {
            let table = table_argument(lua, &arguments, 0, "setmetatable")?;
            refuse_if_protected(lua, &table)?;
            match arguments.get(1) {
                Some(LuaValue::Nil | LuaValue::Table(_)) => {}
                _ => return Err(raise_message(lua, "bad argument #2 to 'setmetatable' (nil or table expected)")),
            }
            call_original(lua, |guard| guard.setmetatable.clone(), arguments)
        })?,
    )?;
    functions.raw_set(
        "getmetatable",
        lua.create_function(|lua, arguments: MultiValue| {
            let Some(value) = arguments.front().cloned() else {
                return Err(raise_message(lua, "bad argument #1 to 'getmetatable' (value expected)"));
            };
            match &value {
                LuaValue::String(_) => with_guard(lua, |guard| LuaValue::Table(guard.string_view.clone()))
                    .map(|view| MultiValue::from_iter([view])),
                LuaValue::Table(table) => {
                    let view = with_guard(lua, |guard| guard.meta_view_of.raw_get::<LuaValue>(table.clone()))??;
                    match view {
                        LuaValue::Nil => call_original(lua, |guard| guard.getmetatable.clone(), arguments),
                        LuaValue::Table(view) => Ok(MultiValue::from_iter([LuaValue::Table(view)])),
                        _ => Ok(MultiValue::from_iter([LuaValue::Nil])),
                    }
                }
                // Other types' metatables are Redis' business only: scripts see none.
                _ => Ok(MultiValue::from_iter([LuaValue::Nil])),
            }
        })?,
    )?;
    for (name, pick) in [("insert", 0), ("remove", 1)] {
        functions.raw_set(
            name,
            lua.create_function(move |lua, arguments: MultiValue| {
                let table = table_argument(lua, &arguments, 0, name)?;
                refuse_if_protected(lua, &table)?;
                call_original(
                    lua,
                    |guard| if pick == 0 { guard.insert.clone() } else { guard.remove.clone() },
                    arguments,
                )
            })?,
        )?;
    }
    functions.raw_set("caught", lua.create_function(|lua, error: LuaValue| caught(lua, error))?)?;
    Ok(functions)
}

/// The prelude: runs once per state, before any script, with the state's real globals.
const PRELUDE: &str = r#"
local G, allowed, guard, real_of, meta_view_of, string_view, redis_parts, load_redis_parts, library_parts, math_parts, hotset_parts, handler, killed, functions_mode = ...

local next, rawset, setmetatable, getmetatable, type, error, select = next, rawset, setmetatable, getmetatable, type, error, select
local tostring, pcall, xpcall, loadstring, load = tostring, pcall, xpcall, loadstring, load
local resume, byte, collectgarbage = coroutine.resume, string.byte, collectgarbage
local caught = guard.caught

local READONLY = 'Attempt to modify a readonly table'

local function deny_write() error(READONLY, 2) end

local function missing_global(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end

-- Turns `t` into a read-only proxy of its current contents (and so every table reachable from
-- it). `missing`, if given, is called for absent keys. Returns the hidden table.
local function protect(t, missing)
  if real_of[t] then return real_of[t] end
  local real = {}
  for k, v in next, t do real[k] = v end
  for k in next, real do rawset(t, k, nil) end
  real_of[t] = real
  meta_view_of[t] = false
  setmetatable(t, {__index = real, __newindex = deny_write})
  if missing then setmetatable(real, {__index = missing}) end
  for _, v in next, real do
    if type(v) == 'table' then protect(v) end
  end
  return real
end

local function copy(parts)
  local t = {}
  for k, v in next, parts do t[k] = v end
  return t
end

G.redis = copy(redis_parts)
G.hotset = copy(hotset_parts)
for name, parts in next, library_parts do G[name] = copy(parts) end
for name, f in next, math_parts do G.math[name] = f end

-- Redis' pcall hands back the message of an error table rather than the table; an error a
-- killed script catches is raised again so SCRIPT KILL cannot be swallowed.
local function pcall_result(ok, ...)
  if ok then return true, ... end
  local e = caught((...))
  if killed() then error(e, 0) end
  -- Lua 5.1 has no emergency collection: what the failed call allocated is garbage, and the
  -- script can only go on if it is collected now.
  if e == 'not enough memory' then collectgarbage('collect') end
  if type(e) == 'table' then
    local message = e.err
    if type(message) == 'string' or type(message) == 'number' then e = message end
  end
  return false, e
end
G.pcall = function(...)
  if select('#', ...) == 0 then return false, "bad argument #1 to 'pcall' (value expected)" end
  return pcall_result(pcall(...))
end

local function caught_result(ok, ...)
  if ok then return true, ... end
  local e = caught((...))
  if killed() then error(e, 0) end
  return false, e
end
G.xpcall = function(f, h)
  if type(h) == 'function' then
    return caught_result(xpcall(f, function(e) return h(caught(e)) end))
  end
  return caught_result(xpcall(f, h))
end
G.coroutine.resume = function(...) return caught_result(resume(...)) end

G.next, G.pairs, G.ipairs = guard.next, guard.pairs, guard.ipairs
G.rawget, G.rawset = guard.rawget, guard.rawset
G.setmetatable, G.getmetatable = guard.setmetatable, guard.getmetatable
G.table.insert, G.table.remove = guard.insert, guard.remove

-- Only text chunks: a binary chunk is read as text, so it fails to compile as Redis' does.
G.loadstring = function(...)
  local s, name = ...
  if type(s) == 'string' and byte(s, 1) == 27 then return loadstring(' ' .. s, name or s) end
  return loadstring(...)
end
G.load = function(reader, ...)
  if type(reader) ~= 'function' then return load(reader, ...) end
  local first = true
  return load(function()
    local piece = reader()
    if first and type(piece) == 'string' and #piece > 0 then
      first = false
      if byte(piece, 1) == 27 then return ' ' .. piece end
    end
    return piece
  end, ...)
end

for name in next, G do
  if not allowed[name] then rawset(G, name, nil) end
end
if not functions_mode then G.__redis__err__handler = handler end

local real_globals = protect(G, missing_global)
local globals_view = {__index = missing_global}
protect(globals_view)
meta_view_of[G] = globals_view
string_view.__index = G.string
protect(string_view)
-- The string metatable itself stays hidden: scripts get the protected view above.
getmetatable('').__index = G.string
local globals_meta = getmetatable(G)

local load_api, real_load_redis = {}, {}
if functions_mode then
  load_api.redis = copy(load_redis_parts)
  real_load_redis = protect(load_api.redis, missing_global)
  load_api = protect(load_api, missing_global)
end

local run
if functions_mode then
  run = function(f, keys, args)
    return xpcall(function() return f(keys, args) end, handler)
  end
else
  run = function(f) return xpcall(f, handler) end
end
return real_globals, globals_meta, load_api, real_of[G.redis], real_load_redis, run
"#;
