//! One Lua state ready to compile and run scripts, and how a run is carried out.
//!
//! Owns [`Vm`] (a sandboxed state, its memory limit, its error handler) and the life of a run:
//! the per-run state ([`RunState`]), the host lent for exactly the run's length
//! (`current`: every function is made once per state), the instruction-count hook that asks the host whether to go on and raises
//! Redis' kill error, and turning the outcome into a reply or a [`ScriptError`] with Redis'
//! texts (`... script: <name>, on @user_script:<line>.`). This module must never decide what a
//! command does: everything the script asks of the server goes through the [`Host`].

use std::time::Instant;

use mlua::chunk::ChunkMode;
use mlua::{Function, HookTriggers, Lua, MultiValue, Table, Value as LuaValue, VmState};

use crate::convert::lua_to_reply;
use crate::engine::{Answer, RunOptions};
use crate::errors::ScriptError;
use crate::flags::ScriptFlags;
use crate::host::{CallContext, Host, Replication};
use crate::limits::{HOOK_INSTRUCTIONS, Limits};
use crate::redis_api::{self, Shared};
use crate::sandbox::{self, Mode, PRELUDE_CHUNK, Sandbox};
use crate::value::{Protocol, Value};

/// What the running script has set or been told; kept in the state's app data so the Rust
/// functions and the hook reach it.
#[derive(Debug, Clone)]
pub(crate) struct RunState {
    /// The reply protocol the script asked for (`redis.setresp`).
    pub protocol: Protocol,
    /// Writes are refused.
    pub read_only: bool,
    /// The script's declared flags (`None`: EVAL without shebang).
    pub flags: Option<ScriptFlags>,
    /// `redis.set_repl`.
    pub replication: Replication,
    /// When the run started.
    pub started: Instant,
    /// The host asked for the script to be killed.
    pub killed: bool,
    /// While a library loads: when it must have finished.
    pub load_deadline: Option<Instant>,
    /// The library load ran past its deadline.
    pub load_timed_out: bool,
}

impl RunState {
    fn new(read_only: bool, flags: Option<ScriptFlags>) -> RunState {
        RunState {
            protocol: Protocol::Resp2,
            read_only,
            flags,
            replication: Replication::ALL,
            started: Instant::now(),
            killed: false,
            load_deadline: None,
            load_timed_out: false,
        }
    }

    /// The context handed to the host with a command.
    pub fn call_context(&self) -> CallContext {
        CallContext {
            protocol: self.protocol,
            read_only: self.read_only,
            flags: self.flags,
            replication: self.replication,
        }
    }
}

/// A sandboxed Lua state.
pub(crate) struct Vm {
    pub lua: Lua,
    pub sandbox: Sandbox,
    mode: Mode,
    limits: Limits,
    runs: u64,
}

/// How a run failed, before it is named after its script.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The error table's message, and where the script was when it failed.
    Raised { message: Vec<u8>, location: Option<(Vec<u8>, i64)>, killed: bool },
    /// The state ran out of memory.
    Memory,
    /// The library load ran past its deadline.
    LoadTimeout,
}

impl Vm {
    pub fn new(mode: Mode, limits: Limits, shared: Shared) -> mlua::Result<Vm> {
        let lua = sandbox::new_state()?;
        lua.set_app_data(shared);
        let parts = sandbox::Parts {
            redis: redis_api::redis_parts(&lua, mode == Mode::Eval)?,
            load_redis: redis_api::load_redis_parts(&lua)?,
            libraries: crate::libs::library_parts(&lua)?,
            math: redis_api::math_parts(&lua)?,
            hotset: crate::hotset_api::hotset_parts(&lua)?,
            handler: lua.create_function(error_handler)?,
            killed: lua
                .create_function(|lua, ()| Ok(lua.app_data_ref::<RunState>().is_some_and(|state| state.killed)))?,
        };
        let sandbox = sandbox::build(&lua, mode, parts)?;
        install_hook(&lua)?;
        lua.gc_collect()?;
        lua.set_memory_limit(limits.memory_bytes_max)?;
        Ok(Vm { lua, sandbox, mode, limits, runs: 0 })
    }

    /// Compiles `body` as a text chunk named `chunk_name`; the error is Lua's message.
    pub fn compile(&self, body: &[u8], chunk_name: &str) -> Result<Function, String> {
        let chunk = self.lua.load(body).set_name(chunk_name).set_mode(ChunkMode::Text);
        chunk.into_function().map_err(|error| match error {
            mlua::Error::SyntaxError { message, .. } => message,
            mlua::Error::MemoryError(_) => "not enough memory".to_string(),
            other => other.to_string(),
        })
    }

    /// Runs `function`: an EVAL body (keys and args as globals) or a library function (keys
    /// and args as its two parameters). Returns the reply or how it failed.
    pub fn run(
        &mut self,
        function: &Function,
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        options: RunOptions,
        flags: Option<ScriptFlags>,
    ) -> Result<Result<Value, Failure>, mlua::Error> {
        let read_only = options.read_only;
        // KEYS and ARGV are made with the memory limit lifted: under a limit mlua guards every
        // step against Lua's out-of-memory jump, which cost more than a small script's run;
        // they hold what the client sent, which the server's request limits bound.
        self.lua.set_memory_limit(0)?;
        let made = self.string_array(keys).and_then(|keys_table| Ok((keys_table, self.string_array(args)?)));
        let made = made.and_then(|(keys_table, args_table)| {
            if self.mode == Mode::Eval {
                self.sandbox.real_globals.raw_set("KEYS", keys_table.clone())?;
                self.sandbox.real_globals.raw_set("ARGV", args_table.clone())?;
            }
            Ok((keys_table, args_table))
        });
        self.lua.set_memory_limit(self.limits.memory_bytes_max)?;
        let (keys_table, args_table) = made?;
        self.lua.set_app_data(RunState::new(read_only, flags));
        let loan = crate::current::lend(&self.lua, host);
        let outcome = self.sandbox.run.call::<MultiValue>((function.clone(), keys_table, args_table));
        drop(loan);
        let state = self.lua.remove_app_data::<RunState>().expect("the run state lives until the run ends");
        let outcome = self.settle(outcome, &state)?;
        self.collect_garbage_now_and_then()?;
        Ok(match options.answer {
            Answer::Reply => outcome.map(|value| lua_to_reply(&value, state.protocol)),
            Answer::Json => outcome.map(|value| json_answer(&self.lua, &value)),
        })
    }

    /// A Lua array of `items`, built one string at a time: mlua holds each live value in a
    /// reference slot, and there are only a few thousand.
    fn string_array(&self, items: &[&[u8]]) -> mlua::Result<Table> {
        let table = self.lua.create_table_with_capacity(items.len(), 0)?;
        for (index, item) in items.iter().enumerate() {
            table.raw_set(index + 1, self.lua.create_string(item)?)?;
        }
        Ok(table)
    }

    /// Runs a library's top-level code (Functions mode) with `register_function` in the load-time
    /// table and the load-time API as globals, under the load deadline.
    pub fn run_load(&mut self, function: &Function, register: Function) -> Result<Result<(), Failure>, mlua::Error> {
        let mut state = RunState::new(true, None);
        state.load_deadline = Some(Instant::now() + self.limits.load_time_max);
        self.lua.set_app_data(state);
        let real_globals = self.sandbox.real_globals.clone();
        self.sandbox.globals_meta.raw_set("__index", self.sandbox.load_api.clone())?;
        self.sandbox.real_load_redis.raw_set("register_function", register)?;
        let result = self.sandbox.run.call::<MultiValue>((function.clone(), LuaValue::Nil, LuaValue::Nil));
        // A library that kept the load-time `redis` table learns why it cannot register
        // from a function, in Redis' words.
        let refuse = self.lua.create_function(|lua, _: MultiValue| -> mlua::Result<()> {
            Err(redis_api::raise_error_table(
                lua,
                b"redis.register_function can only be called on FUNCTION LOAD command",
            ))
        })?;
        self.sandbox.real_load_redis.raw_set("register_function", refuse)?;
        self.sandbox.globals_meta.raw_set("__index", real_globals)?;
        let state = self.lua.remove_app_data::<RunState>().expect("the load state lives until the load ends");
        Ok(self.settle(result, &state)?.map(|_| ()))
    }

    fn settle(
        &mut self,
        outcome: mlua::Result<MultiValue>,
        state: &RunState,
    ) -> Result<Result<LuaValue, Failure>, mlua::Error> {
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(mlua::Error::MemoryError(_)) => return Ok(Err(self.memory_failure()?)),
            Err(error) => return Err(error),
        };
        let mut values = outcome.into_iter();
        let ok = matches!(values.next(), Some(LuaValue::Boolean(true)));
        let value = values.next().unwrap_or(LuaValue::Nil);
        if ok {
            return Ok(Ok(value));
        }
        if state.load_timed_out {
            return Ok(Err(Failure::LoadTimeout));
        }
        match value {
            LuaValue::Table(table) => {
                if table.raw_get::<bool>("memory").unwrap_or(false) {
                    return Ok(Err(self.memory_failure()?));
                }
                let message =
                    table.raw_get::<mlua::LuaString>("err").map(|text| text.as_bytes().to_vec()).unwrap_or_default();
                let source = table.raw_get::<Option<mlua::LuaString>>("source").ok().flatten();
                let line = table.raw_get::<Option<i64>>("line").ok().flatten();
                let location = source.zip(line).map(|(source, line)| (source.as_bytes().to_vec(), line));
                Ok(Err(Failure::Raised { message, location, killed: state.killed }))
            }
            // Lua 5.1 does not call the error handler for memory errors: xpcall hands back
            // its bare message.
            _ => Ok(Err(self.memory_failure()?)),
        }
    }

    fn memory_failure(&mut self) -> mlua::Result<Failure> {
        // What the failed script allocated is garbage now; give it back before the next run.
        self.lua.gc_collect()?;
        Ok(Failure::Memory)
    }

    /// Redis steps the collector every 50 runs rather than leave it to the allocator's pace.
    fn collect_garbage_now_and_then(&mut self) -> mlua::Result<()> {
        self.runs += 1;
        if self.runs.is_multiple_of(crate::limits::GC_STEP_RUNS) {
            self.lua.gc_step()?;
        }
        Ok(())
    }

    /// The state's memory limit.
    pub fn memory_bytes_max(&self) -> usize {
        self.limits.memory_bytes_max
    }

    /// Bytes the state uses now.
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }
}

/// Runs `f` with the state's memory limit lifted, for building Lua values out of what the
/// server answered (a command's reply, a query's documents) or reading a script's values
/// into JSON: under a limit mlua guards every table and string it makes against Lua's
/// out-of-memory jump, which cost more than the query itself for a page of documents. What
/// is built is bounded by the server's own limits on replies and queries; the script's own
/// allocations stay under the limit (a state over it fails its next one).
pub(crate) fn unguarded<R>(lua: &Lua, f: impl FnOnce() -> mlua::Result<R>) -> mlua::Result<R> {
    let limit = lua.set_memory_limit(0)?;
    let result = f();
    lua.set_memory_limit(limit)?;
    result
}

/// A script's return value as JSON text in a bulk reply (`Answer::Json`): a table holding
/// a string `err` is that error reply, as Redis' conversion makes it; a value with no JSON
/// form is an error naming where it failed.
fn json_answer(lua: &Lua, value: &LuaValue) -> Value {
    if let LuaValue::Table(table) = value
        && let Ok(LuaValue::String(message)) = table.raw_get::<LuaValue>("err")
    {
        return Value::Error(crate::value::one_line(&message.as_bytes()));
    }
    let converted = crate::hotset_api::array_mark(lua).map_err(|error| error.to_string()).and_then(|mark| {
        unguarded(lua, || Ok(crate::json::lua_to_json(value, &mark, "value"))).map_err(|error| error.to_string())?
    });
    match converted {
        Ok(json) => Value::Bulk(json.to_string().into_bytes()),
        Err(why) => Value::error(format!("ERR the function's return value is not JSON: {why}")),
    }
}

/// The count hook, set once per state: every [`HOOK_INSTRUCTIONS`] instructions of a run or
/// a library load it checks the load deadline, or asks the host whether to go on. Once a script is killed every later firing raises again,
/// so a `pcall` cannot swallow the kill.
fn install_hook(lua: &Lua) -> mlua::Result<()> {
    lua.set_global_hook(HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS), move |lua, _| {
        let (killed, deadline, started) = match lua.app_data_ref::<RunState>() {
            Some(state) => (state.killed, state.load_deadline, state.started),
            None => return Ok(VmState::Continue),
        };
        if killed {
            return Err(mlua::Error::runtime("Script killed by user with SCRIPT KILL..."));
        }
        if let Some(deadline) = deadline {
            if Instant::now() >= deadline {
                if let Some(mut state) = lua.app_data_mut::<RunState>() {
                    state.load_timed_out = true;
                }
                return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
            }
            return Ok(VmState::Continue);
        }
        if crate::current::with_host(lua, |host| host.tick(started.elapsed())) == Some(crate::host::Tick::Kill) {
            if let Some(mut state) = lua.app_data_mut::<RunState>() {
                state.killed = true;
            }
            return Err(mlua::Error::runtime("Script killed by user with SCRIPT KILL..."));
        }
        Ok(VmState::Continue)
    })
}

/// The `xpcall` message handler: turns any error into Redis' error table `{err=, source=,
/// line=}`, where source and line are those of the innermost script frame (C frames and the
/// prelude's wrappers skipped, as Redis skips the C function that raised).
fn error_handler(lua: &Lua, error: LuaValue) -> mlua::Result<Table> {
    let error = crate::sandbox::caught(lua, error)?;
    let table = lua.create_table()?;
    let killed = lua.app_data_ref::<RunState>().is_some_and(|state| state.killed);
    let message: Vec<u8> = if killed {
        b"ERR Script killed by user with SCRIPT KILL...".to_vec()
    } else {
        match &error {
            LuaValue::Table(error) => {
                if let Ok(true) = error.raw_get::<bool>("ignore_error_stats_update") {
                    table.raw_set("ignore_error_stats_update", true)?;
                }
                match error.get::<LuaValue>("err") {
                    Ok(message) => match redis_api::to_bytes(&message) {
                        Some(message) => message,
                        None => b"ERR unknown error".to_vec(),
                    },
                    Err(_) => b"ERR unknown error".to_vec(),
                }
            }
            LuaValue::Error(inner) if is_memory_error(inner) => {
                table.raw_set("memory", true)?;
                b"ERR not enough memory".to_vec()
            }
            LuaValue::Error(inner) => format!("ERR {}", innermost_message(inner)).into_bytes(),
            other => [b"ERR ".as_slice(), &lua_tostring(other)].concat(),
        }
    };
    table.raw_set("err", lua.create_string(message)?)?;
    if let Some((source, line)) = script_location(lua) {
        table.raw_set("source", lua.create_string(source)?)?;
        table.raw_set("line", line)?;
    }
    Ok(table)
}

fn is_memory_error(error: &mlua::Error) -> bool {
    match error {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } => is_memory_error(cause),
        _ => false,
    }
}

fn innermost_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => innermost_message(cause),
        mlua::Error::RuntimeError(message) => message.clone(),
        other => other.to_string(),
    }
}

/// `tostring` for the values an error can be.
fn lua_tostring(value: &LuaValue) -> Vec<u8> {
    match value {
        LuaValue::Nil => b"nil".to_vec(),
        LuaValue::Boolean(truth) => truth.to_string().into_bytes(),
        other => redis_api::to_bytes(other)
            .unwrap_or_else(|| format!("{}: {:p}", other.type_name(), other.to_pointer()).into_bytes()),
    }
}

/// The source and current line of the innermost frame that is script code.
fn script_location(lua: &Lua) -> Option<(Vec<u8>, i64)> {
    for level in 1..crate::limits::HANDLER_FRAMES_MAX {
        let frame = lua.inspect_stack(level, |debug| {
            let source = debug.source();
            let what = source.what.to_string();
            let name = source.source.map(|name| name.into_owned());
            (what, name, debug.current_line())
        })?;
        let (what, source, line) = frame;
        // C functions, the prelude's wrappers and the stand-ins of lost tail calls are not
        // script lines.
        if what == "C" || what == "tail" || source.as_deref() == Some(PRELUDE_CHUNK) {
            continue;
        }
        return Some((source.unwrap_or_default().into_bytes(), line.map_or(-1, |line| line as i64)));
    }
    None
}

/// Names a failure after its script: Redis' runtime error text, or the kill or memory error.
pub(crate) fn name_failure(failure: Failure, name: &str, memory_bytes_max: usize) -> ScriptError {
    match failure {
        Failure::Memory => ScriptError::MemoryLimit { name: name.to_string(), limit_bytes: memory_bytes_max },
        Failure::LoadTimeout => ScriptError::Internal("load timeout outside a library load".to_string()),
        Failure::Raised { message, location, killed } => {
            let location_text = location.map(|(source, line)| format!("{}:{line}", String::from_utf8_lossy(&source)));
            if killed {
                return ScriptError::Killed { name: name.to_string(), location: location_text.unwrap_or_default() };
            }
            let mut text = String::from_utf8_lossy(&message).into_owned();
            if let Some(location) = location_text {
                text.push_str(&format!(" script: {name}, on {location}."));
            }
            ScriptError::Runtime(text)
        }
    }
}
