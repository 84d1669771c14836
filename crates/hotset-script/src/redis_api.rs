//! The `redis` table: the API a script calls, with Redis 7.0's argument rules and error texts.
//!
//! Owns the functions that need no host (`setresp`, `sha1hex`, `error_reply`, `status_reply`,
//! `log`, `set_repl`, `replicate_commands`, `breakpoint`, `debug`), the constants (`LOG_*`,
//! `REPL_*`, `REDIS_VERSION*`), `math.random`/`math.randomseed`, and the functions that reach
//! the host of the run in progress (`call`, `pcall`, `acl_check_cmd`; `current::with_host`). Every
//! function here fails with [`raise`]'s error, so scripts catch the plain string or table
//! Redis' C functions raise. This module must never keep a host past a run.

use std::sync::{Arc, Mutex};

use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};

use crate::convert::{command_arguments, error_table, reply_to_lua};
use crate::current::with_host;
use crate::errors::with_error_code;
use crate::host::{LogLevel, Replication};
use crate::random::Rand48;
use crate::run::RunState;
use crate::sandbox::{raise, raise_message};

/// The Redis version scripts see.
pub const REDIS_VERSION: &str = "7.0.15";
/// `REDIS_VERSION_NUM`: major, minor and patch in the three low bytes.
pub const REDIS_VERSION_NUM: i64 = 0x07_00_0f;

/// Where `redis.log` lines go: the server's log.
pub type Logger = Arc<dyn Fn(LogLevel, &[u8]) + Send + Sync>;

/// State shared by every Lua state of one engine, as Redis shares it between its EVAL and
/// FUNCTION interpreters.
#[derive(Clone)]
pub struct Shared {
    /// `redis.log`'s destination.
    pub logger: Logger,
    /// `math.random`'s generator.
    pub random: Arc<Mutex<Rand48>>,
}

/// The error raising Redis' error table for `message` (`ERR` added unless it starts with
/// `-CODE`).
pub(crate) fn raise_error_table(lua: &Lua, message: &[u8]) -> mlua::Error {
    match error_table(lua, message, false) {
        Ok(table) => raise(lua, table),
        Err(error) => error,
    }
}

fn single(value: LuaValue) -> MultiValue {
    MultiValue::from_iter([value])
}

/// `lua_tonumber`: numbers, and strings that read as numbers; anything else is 0.
pub(crate) fn to_number(lua: &Lua, value: &LuaValue) -> Option<f64> {
    match value {
        LuaValue::Integer(number) => Some(*number as f64),
        LuaValue::Number(number) => Some(*number),
        LuaValue::String(_) => lua.coerce_number(value.clone()).ok().flatten(),
        _ => None,
    }
}

/// `lua_tolstring`: strings, and numbers written as Lua writes them (`%.14g`).
pub(crate) fn to_bytes(value: &LuaValue) -> Option<Vec<u8>> {
    match value {
        LuaValue::String(text) => Some(text.as_bytes().to_vec()),
        LuaValue::Integer(number) => Some(crate::resp::format_g(*number as f64, 14).into_bytes()),
        LuaValue::Number(number) => Some(crate::resp::format_g(*number, 14).into_bytes()),
        _ => None,
    }
}

/// The `redis` table's host-free functions and constants. `eval_extras` adds what only the
/// EVAL interpreter has (`breakpoint`, `debug`, `replicate_commands`).
pub(crate) fn redis_parts(lua: &Lua, eval_extras: bool) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    add_log(lua, &parts)?;
    add_version(&parts)?;
    parts.raw_set("setresp", lua.create_function(set_resp)?)?;
    parts.raw_set("sha1hex", lua.create_function(sha1_hex)?)?;
    parts.raw_set("error_reply", lua.create_function(error_reply)?)?;
    parts.raw_set("status_reply", lua.create_function(status_reply)?)?;
    parts.raw_set("set_repl", lua.create_function(set_repl)?)?;
    for name in ["call", "pcall", "acl_check_cmd"] {
        parts.raw_set(name, host_function(lua, name)?)?;
    }
    for (name, value) in [("REPL_NONE", 0), ("REPL_AOF", 1), ("REPL_SLAVE", 2), ("REPL_REPLICA", 2), ("REPL_ALL", 3)] {
        parts.raw_set(name, value)?;
    }
    if eval_extras {
        parts.raw_set("replicate_commands", lua.create_function(|_, _: MultiValue| Ok(true))?)?;
        parts.raw_set("breakpoint", lua.create_function(|_, _: MultiValue| Ok(false))?)?;
        parts.raw_set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    }
    Ok(parts)
}

/// The load-time `redis` table of a library (`register_function` is added per load).
pub(crate) fn load_redis_parts(lua: &Lua) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    add_log(lua, &parts)?;
    add_version(&parts)?;
    Ok(parts)
}

fn add_version(parts: &Table) -> mlua::Result<()> {
    parts.raw_set("REDIS_VERSION", REDIS_VERSION)?;
    parts.raw_set("REDIS_VERSION_NUM", REDIS_VERSION_NUM)
}

fn add_log(lua: &Lua, parts: &Table) -> mlua::Result<()> {
    parts.raw_set("log", lua.create_function(log)?)?;
    for (name, level) in [("LOG_DEBUG", 0), ("LOG_VERBOSE", 1), ("LOG_NOTICE", 2), ("LOG_WARNING", 3)] {
        parts.raw_set(name, level)?;
    }
    Ok(())
}

fn set_resp(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    if arguments.len() != 1 {
        return Err(raise_error_table(lua, b"redis.setresp() requires one argument."));
    }
    let number = to_number(lua, &arguments[0]).unwrap_or(0.0) as i64;
    let Some(protocol) = crate::value::Protocol::from_number(number) else {
        return Err(raise_error_table(lua, b"RESP version must be 2 or 3."));
    };
    if let Some(mut state) = lua.app_data_mut::<RunState>() {
        state.protocol = protocol;
    }
    Ok(MultiValue::new())
}

fn sha1_hex(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    if arguments.len() != 1 {
        return Err(raise_error_table(lua, b"wrong number of arguments"));
    }
    // Redis hashes `lua_tolstring`'s result: nothing (the empty string) for other types.
    let bytes = to_bytes(&arguments[0]).unwrap_or_default();
    Ok(single(LuaValue::String(lua.create_string(crate::sha1_hex(&bytes))?)))
}

fn only_string_argument(arguments: &MultiValue) -> Option<Vec<u8>> {
    match arguments.iter().collect::<Vec<_>>().as_slice() {
        [LuaValue::String(text)] => Some(text.as_bytes().to_vec()),
        _ => None,
    }
}

const WRONG_NUMBER_OR_TYPE: &[u8] = b"wrong number or type of arguments";

fn error_reply(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let Some(text) = only_string_argument(&arguments) else {
        return Ok(single(error_table(lua, WRONG_NUMBER_OR_TYPE, false)?));
    };
    let dashed = if text.starts_with(b"-") { text } else { [b"-".as_slice(), &text].concat() };
    let table = lua.create_table()?;
    table.raw_set("err", lua.create_string(with_error_code(&dashed))?)?;
    Ok(single(LuaValue::Table(table)))
}

fn status_reply(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let Some(text) = only_string_argument(&arguments) else {
        return Ok(single(error_table(lua, WRONG_NUMBER_OR_TYPE, false)?));
    };
    let table = lua.create_table()?;
    table.raw_set("ok", lua.create_string(text)?)?;
    Ok(single(LuaValue::Table(table)))
}

fn set_repl(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    if arguments.len() != 1 {
        // Redis' text says two although it takes one.
        return Err(raise_error_table(lua, b"redis.set_repl() requires two arguments."));
    }
    let flags = to_number(lua, &arguments[0]).unwrap_or(0.0) as i64;
    if flags & !3 != 0 {
        return Err(raise_error_table(
            lua,
            b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        ));
    }
    if let Some(mut state) = lua.app_data_mut::<RunState>() {
        state.replication = Replication(flags as u8);
    }
    Ok(MultiValue::new())
}

fn log(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    if arguments.len() < 2 {
        return Err(raise_error_table(lua, b"redis.log() requires two arguments or more."));
    }
    let Some(level) = to_number(lua, &arguments[0]) else {
        return Err(raise_error_table(lua, b"First argument must be a number (log level)."));
    };
    let Some(level) = LogLevel::from_number(level as i64) else {
        return Err(raise_error_table(lua, b"Invalid debug level."));
    };
    // Redis glues the printable arguments with spaces, skipping the others but still putting
    // a space before every argument after the first.
    let mut message = Vec::new();
    for (index, argument) in arguments.iter().enumerate().skip(1) {
        if let Some(bytes) = to_bytes(argument) {
            if index != 1 {
                message.push(b' ');
            }
            message.extend_from_slice(&bytes);
        }
    }
    let logger = lua.app_data_ref::<Shared>().map(|shared| shared.logger.clone());
    if let Some(logger) = logger {
        logger(level, &message);
    }
    Ok(MultiValue::new())
}

/// `math.random` and `math.randomseed` on Redis' generator.
pub(crate) fn math_parts(lua: &Lua) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    parts.raw_set("random", lua.create_function(math_random)?)?;
    parts.raw_set("randomseed", lua.create_function(math_randomseed)?)?;
    Ok(parts)
}

/// `luaL_checkint`: a number (or numeric string) truncated to an int.
fn check_int(lua: &Lua, arguments: &MultiValue, index: usize, function: &str) -> Result<i32, String> {
    let argument = arguments.get(index).cloned().unwrap_or(LuaValue::Nil);
    match to_number(lua, &argument) {
        Some(number) => Ok(number as i64 as i32),
        None => {
            let got = if index < arguments.len() { crate::sandbox::type_name(&argument) } else { "no value" };
            Err(format!("bad argument #{} to '{function}' (number expected, got {got})", index + 1))
        }
    }
}

fn math_random(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let draw = match lua.app_data_ref::<Shared>() {
        Some(shared) => shared.random.lock().map(|mut random| random.next_fraction()).unwrap_or(0.0),
        None => 0.0,
    };
    let result = match arguments.len() {
        0 => draw,
        1 => match check_int(lua, &arguments, 0, "random") {
            Err(message) => return Err(raise_message(lua, message)),
            Ok(upper) if upper < 1 => {
                return Err(raise_message(lua, "bad argument #1 to 'random' (interval is empty)"));
            }
            Ok(upper) => (draw * f64::from(upper)).floor() + 1.0,
        },
        2 => {
            let bounds = check_int(lua, &arguments, 0, "random")
                .and_then(|lower| Ok((lower, check_int(lua, &arguments, 1, "random")?)));
            match bounds {
                Err(message) => return Err(raise_message(lua, message)),
                Ok((lower, upper)) if lower > upper => {
                    return Err(raise_message(lua, "bad argument #2 to 'random' (interval is empty)"));
                }
                Ok((lower, upper)) => (draw * (f64::from(upper) - f64::from(lower) + 1.0)).floor() + f64::from(lower),
            }
        }
        _ => return Err(raise_message(lua, "wrong number of arguments")),
    };
    Ok(single(LuaValue::Number(result)))
}

fn math_randomseed(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let seed = match check_int(lua, &arguments, 0, "randomseed") {
        Ok(seed) => seed,
        Err(message) => return Err(raise_message(lua, message)),
    };
    if let Some(shared) = lua.app_data_ref::<Shared>()
        && let Ok(mut random) = shared.random.lock()
    {
        random.seed(seed);
    }
    Ok(MultiValue::new())
}

/// `redis.call`, `redis.pcall` or `redis.acl_check_cmd` (`name`): made once per state, they
/// reach the host of the run in progress (`current::with_host`), and refuse outside a run
/// (a function that kept a reference to them can call them then).
fn host_function(lua: &Lua, name: &'static str) -> mlua::Result<Function> {
    lua.create_function(move |lua, arguments: MultiValue| match name {
        "call" => redis_call(lua, arguments, true),
        "pcall" => redis_call(lua, arguments, false),
        _ => acl_check(lua, arguments),
    })
}

/// Redis' refusal of a host function called outside a run.
fn outside_run(lua: &Lua, name: &str) -> mlua::Error {
    let message = if name == "acl_check_cmd" {
        "redis.acl_check_cmd can only be called inside a script invocation"
    } else {
        "redis.call/pcall can only be called inside a script invocation"
    };
    raise_error_table(lua, message.as_bytes())
}

fn redis_call(lua: &Lua, arguments: MultiValue, raise_errors: bool) -> mlua::Result<MultiValue> {
    let arguments: Vec<LuaValue> = arguments.into_iter().collect();
    let command = match command_arguments(&arguments) {
        Ok(command) => command,
        Err(error) if raise_errors => return Err(raise_error_table(lua, error.message())),
        Err(error) => return Ok(single(error_table(lua, error.message(), false)?)),
    };
    let context = match lua.app_data_ref::<RunState>() {
        Some(state) => state.call_context(),
        None => return Err(outside_run(lua, "call")),
    };
    let slices: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
    let reply = with_host(lua, |host| host.call(&slices, &context)).ok_or_else(|| outside_run(lua, "call"))?;
    let value = crate::run::unguarded(lua, || reply_to_lua(lua, &reply, context.protocol))?;
    if raise_errors && reply.is_error() {
        return Err(raise(lua, value));
    }
    Ok(single(value))
}

fn acl_check(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let arguments: Vec<LuaValue> = arguments.into_iter().collect();
    let command = match command_arguments(&arguments) {
        Ok(command) => command,
        Err(error) => return Err(raise_error_table(lua, error.message())),
    };
    let slices: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
    match with_host(lua, |host| host.acl_check_cmd(&slices)).ok_or_else(|| outside_run(lua, "acl_check_cmd"))? {
        Some(allowed) => Ok(single(LuaValue::Boolean(allowed))),
        None => Err(raise_error_table(lua, b"Invalid command passed to redis.acl_check_cmd()")),
    }
}
