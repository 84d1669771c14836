//! The FUNCTION side: its Lua state and the function libraries.
//!
//! Owns [`Functions`]: libraries by name (each with its code, as the server must log and
//! snapshot it, and its functions with description and flags), the function-name index (case
//! insensitive, as Redis' is), and Redis 7.0's FUNCTION LOAD [REPLACE] / DELETE / FLUSH / LIST /
//! STATS and FCALL semantics, with `redis.register_function` in both its forms. A library's
//! top-level code runs once, at load, with only the load-time API as globals (`redis` with
//! `register_function`, `log`, the log levels and the version) and under a deadline. Dump and
//! restore are `dump.rs`'s. This module must never leave a half-loaded library visible: a load
//! that fails changes nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use mlua::{Function, Lua, MultiValue, RegistryKey, Table, Value as LuaValue};

use crate::engine::RunOptions;
use crate::errors::ScriptError;
use crate::flags::{ScriptFlags, is_valid_name, parse_library_shebang};
use crate::host::Host;
use crate::limits::Limits;
use crate::redis_api::{Shared, raise_error_table, to_bytes};
use crate::run::{Failure, Vm, name_failure};
use crate::sandbox::Mode;
use crate::value::Value;

/// The chunk name Redis gives library code: errors read `user_function:<line>: ...`.
const LIBRARY_CHUNK: &str = "@user_function";

/// The one engine this crate runs, as FUNCTION LIST and STATS name it.
pub const ENGINE_NAME: &str = "LUA";

const INVALID_NAME: &str =
    "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// A function a library registered.
#[derive(Debug)]
pub(crate) struct RegisteredFunction {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: ScriptFlags,
    callback: Arc<RegistryKey>,
}

/// A loaded library.
#[derive(Debug)]
pub(crate) struct Library {
    pub name: String,
    /// The whole code, shebang included: what FUNCTION LOAD received and LIST WITHCODE shows.
    pub code: Vec<u8>,
    pub functions: Vec<RegisteredFunction>,
    /// Its code names the `hotset` table (`crate::mentions_documents`).
    pub documents: bool,
}

/// A library as data: what the server logs and snapshots, and loads back with FUNCTION LOAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryExport {
    /// The library's name.
    pub name: String,
    /// Its code, shebang line included.
    pub code: Vec<u8>,
}

/// What FUNCTION STATS reports about the script running now; the server knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningScript {
    /// The function's name (or the script's SHA1).
    pub name: String,
    /// The command that started it, arguments included.
    pub command: Vec<Vec<u8>>,
    /// How long it has run.
    pub duration_ms: i64,
}

/// The FUNCTION interpreter and its libraries.
pub(crate) struct Functions {
    vm: Vm,
    libraries: BTreeMap<String, Library>,
    /// Lowercased function name → its library.
    index: HashMap<String, String>,
}

fn function_error(text: impl AsRef<str>) -> ScriptError {
    ScriptError::Function(format!("ERR {}", text.as_ref()))
}

impl Functions {
    pub fn new(limits: Limits, shared: Shared) -> Result<Functions, ScriptError> {
        Ok(Functions {
            vm: Vm::new(Mode::Functions, limits, shared)?,
            libraries: BTreeMap::new(),
            index: HashMap::new(),
        })
    }

    /// FUNCTION LOAD [REPLACE]: the library's name, or Redis' error.
    pub fn load(&mut self, code: &[u8], replace: bool) -> Result<String, ScriptError> {
        // Redis refuses an existing name before it compiles anything.
        let name = checked_metadata(code)?;
        if self.libraries.contains_key(&name) && !replace {
            return Err(function_error(format!("Library '{name}' already exists")));
        }
        let library = self.build(code)?;
        self.check_collisions(&library, Some(&library.name))?;
        let name = library.name.clone();
        self.unlink(&name);
        self.link(library);
        Ok(name)
    }

    /// Compiles and runs a library's code into a [`Library`] that is not linked yet.
    pub fn build(&mut self, code: &[u8]) -> Result<Library, ScriptError> {
        let name = checked_metadata(code)?;
        let line_bytes = parse_library_shebang(code).map_err(function_error)?.line_bytes;
        let body = &code[line_bytes..];
        let chunk = self
            .vm
            .compile(body, LIBRARY_CHUNK)
            .map_err(|message| function_error(format!("Error compiling function: {message}")))?;
        let registered: Arc<Mutex<Vec<RegisteredFunction>>> = Arc::default();
        let register = register_function(&self.vm.lua, registered.clone())?;
        let outcome = self.vm.run_load(&chunk, register)?;
        let functions = std::mem::take(
            &mut *registered.lock().map_err(|_| ScriptError::Internal("registration lock poisoned".into()))?,
        );
        if let Err(failure) = outcome {
            let message = match failure {
                Failure::LoadTimeout => b"ERR FUNCTION LOAD timeout".to_vec(),
                Failure::Memory => b"ERR not enough memory".to_vec(),
                Failure::Raised { message, .. } => message,
            };
            return Err(function_error(format!("Error registering functions: {}", String::from_utf8_lossy(&message))));
        }
        if functions.is_empty() {
            return Err(function_error("No functions registered"));
        }
        Ok(Library { name, code: code.to_vec(), functions, documents: crate::mentions_documents(code) })
    }

    /// Refuses `library` if one of its functions is another library's (`except` is the one it
    /// replaces).
    pub fn check_collisions(&self, library: &Library, except: Option<&str>) -> Result<(), ScriptError> {
        for function in &library.functions {
            if let Some(owner) = self.index.get(&function.name.to_ascii_lowercase())
                && Some(owner.as_str()) != except
            {
                return Err(function_error(format!("Function {} already exists", function.name)));
            }
        }
        Ok(())
    }

    pub fn link(&mut self, library: Library) {
        for function in &library.functions {
            let previous = self.index.insert(function.name.to_ascii_lowercase(), library.name.clone());
            debug_assert!(previous.is_none(), "collisions are checked before linking");
        }
        self.libraries.insert(library.name.clone(), library);
    }

    pub fn unlink(&mut self, name: &str) -> Option<Library> {
        let library = self.libraries.remove(name)?;
        for function in &library.functions {
            self.index.remove(&function.name.to_ascii_lowercase());
        }
        Some(library)
    }

    /// FUNCTION DELETE.
    pub fn delete(&mut self, name: &[u8]) -> Result<(), ScriptError> {
        let name = String::from_utf8_lossy(name);
        self.unlink(&name).map(drop).ok_or_else(|| function_error("Library not found"))?;
        self.vm.lua.expire_registry_values();
        Ok(())
    }

    /// FUNCTION FLUSH.
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.index.clear();
        self.vm.lua.expire_registry_values();
    }

    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    /// Takes every library out (RESTORE FLUSH puts others in their place).
    pub fn take_all(&mut self) -> Vec<Library> {
        self.index.clear();
        std::mem::take(&mut self.libraries).into_values().collect()
    }

    pub fn contains_library(&self, name: &str) -> bool {
        self.libraries.contains_key(name)
    }

    /// What the server decides a run by (flags, documents) for function `name`; `None` if
    /// no library registered it. One lookup: a keyed FCALL asks it per call.
    pub fn profile(&self, name: &[u8]) -> Option<crate::Profile> {
        let library = self.library_of(name)?;
        let function = library.functions.iter().find(|function| function.name.as_bytes().eq_ignore_ascii_case(name))?;
        Some(crate::Profile { flags: Some(function.flags), documents: library.documents })
    }

    fn library_of(&self, name: &[u8]) -> Option<&Library> {
        let library = self.index.get(&String::from_utf8_lossy(name).to_ascii_lowercase())?;
        self.libraries.get(library)
    }

    fn find(&self, name: &[u8]) -> Option<&RegisteredFunction> {
        self.library_of(name)?.functions.iter().find(|function| function.name.as_bytes().eq_ignore_ascii_case(name))
    }

    /// The flags of function `name`; `None` if no library registered it.
    pub fn flags(&self, name: &[u8]) -> Option<ScriptFlags> {
        self.find(name).map(|function| function.flags)
    }

    /// FCALL / FCALL_RO.
    pub fn call(
        &mut self,
        name: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        options: RunOptions,
    ) -> Result<Value, ScriptError> {
        let read_only = options.read_only;
        let function = self.find(name).ok_or(ScriptError::FunctionNotFound)?;
        let flags = function.flags;
        if read_only && !flags.contains(ScriptFlags::NO_WRITES) {
            return Err(ScriptError::WriteFlagWithReadOnlyCommand);
        }
        let read_only = read_only || flags.contains(ScriptFlags::NO_WRITES);
        let function_name = function.name.clone();
        let callback: Function = self.vm.lua.registry_value(&function.callback)?;
        match self.vm.run(&callback, keys, args, host, RunOptions { read_only, ..options }, Some(flags))? {
            Ok(value) => Ok(value),
            Err(failure) => Err(name_failure(failure, &function_name, self.vm.memory_bytes_max())),
        }
    }

    /// Libraries and functions loaded.
    pub fn counts(&self) -> (usize, usize) {
        (self.libraries.len(), self.index.len())
    }

    /// Bytes the FUNCTION Lua state uses.
    pub fn used_memory(&self) -> usize {
        self.vm.used_memory()
    }
}

/// The library name of `code`'s metadata line, checked as Redis checks it.
fn checked_metadata(code: &[u8]) -> Result<String, ScriptError> {
    let shebang = parse_library_shebang(code).map_err(function_error)?;
    if !is_valid_name(&shebang.name) {
        return Err(function_error(INVALID_NAME));
    }
    if !shebang.engine.eq_ignore_ascii_case(b"lua") {
        return Err(function_error(format!("Engine '{}' not found", String::from_utf8_lossy(&shebang.engine))));
    }
    Ok(String::from_utf8_lossy(&shebang.name).into_owned())
}

/// `redis.register_function` for one load: collects what the library registers.
fn register_function(lua: &Lua, registered: Arc<Mutex<Vec<RegisteredFunction>>>) -> mlua::Result<Function> {
    lua.create_function(move |lua, arguments: MultiValue| {
        let function =
            read_registration(lua, &arguments).map_err(|message| raise_error_table(lua, message.as_bytes()))?;
        let mut registered = registered.lock().map_err(|_| mlua::Error::runtime("registration lock poisoned"))?;
        if !is_valid_name(function.name.as_bytes()) {
            // Redis' text speaks of libraries here too.
            return Err(raise_error_table(lua, INVALID_NAME.as_bytes()));
        }
        if registered.iter().any(|existing| existing.name == function.name) {
            return Err(raise_error_table(lua, b"Function already exists in the library"));
        }
        registered.push(function);
        Ok(())
    })
}

fn read_registration(lua: &Lua, arguments: &MultiValue) -> Result<RegisteredFunction, &'static str> {
    match arguments.len() {
        1 => read_named_arguments(lua, &arguments[0]),
        2 => {
            let name = to_bytes(&arguments[0]).ok_or("first argument to redis.register_function must be a string")?;
            let LuaValue::Function(callback) = &arguments[1] else {
                return Err("second argument to redis.register_function must be a function");
            };
            let callback = lua.create_registry_value(callback.clone()).map_err(|_| "not enough memory")?;
            Ok(RegisteredFunction {
                name: String::from_utf8_lossy(&name).into_owned(),
                description: None,
                flags: ScriptFlags::empty(),
                callback: Arc::new(callback),
            })
        }
        _ => Err("wrong number of arguments to redis.register_function"),
    }
}

fn read_named_arguments(lua: &Lua, argument: &LuaValue) -> Result<RegisteredFunction, &'static str> {
    let LuaValue::Table(table) = argument else {
        return Err(
            "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        );
    };
    let (mut name, mut description, mut callback, mut flags) = (None, None, None, ScriptFlags::empty());
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let (key, value) = pair.map_err(|_| "named argument key given to redis.register_function is not a string")?;
        let key = to_bytes(&key).ok_or("named argument key given to redis.register_function is not a string")?;
        if key.eq_ignore_ascii_case(b"function_name") {
            name = Some(
                to_bytes(&value).ok_or("function_name argument given to redis.register_function must be a string")?,
            );
        } else if key.eq_ignore_ascii_case(b"description") {
            description =
                Some(to_bytes(&value).ok_or("description argument given to redis.register_function must be a string")?);
        } else if key.eq_ignore_ascii_case(b"callback") {
            let LuaValue::Function(function) = value else {
                return Err("callback argument given to redis.register_function must be a function");
            };
            callback = Some(function);
        } else if key.eq_ignore_ascii_case(b"flags") {
            let LuaValue::Table(list) = value else {
                return Err("flags argument to redis.register_function must be a table representing function flags");
            };
            flags = read_flags(&list).ok_or("unknown flag given")?;
        } else {
            return Err("unknown argument given to redis.register_function");
        }
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("redis.register_function must get a callback argument")?;
    let callback = lua.create_registry_value(callback).map_err(|_| "not enough memory")?;
    Ok(RegisteredFunction {
        name: String::from_utf8_lossy(&name).into_owned(),
        description,
        flags,
        callback: Arc::new(callback),
    })
}

/// The flags listed in `list` (1, 2, ... up to the first nil), matched without regard to case.
fn read_flags(list: &Table) -> Option<ScriptFlags> {
    let mut flags = ScriptFlags::empty();
    for index in 1.. {
        match list.get::<LuaValue>(index).ok()? {
            LuaValue::Nil => return Some(flags),
            value => flags = flags.union(ScriptFlags::from_name(&to_bytes(&value)?, false)?),
        }
    }
    Some(flags)
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE], from the arguments after LIST.
pub(crate) fn list(functions: &Functions, arguments: &[&[u8]]) -> Result<Value, ScriptError> {
    let (mut with_code, mut pattern) = (false, None);
    let mut index = 0;
    while index < arguments.len() {
        let argument = arguments[index];
        if !with_code && argument.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && argument.eq_ignore_ascii_case(b"libraryname") {
            index += 1;
            pattern = Some(*arguments.get(index).ok_or_else(|| function_error("library name argument was not given"))?);
        } else {
            return Err(function_error(format!("Unknown argument {}", String::from_utf8_lossy(argument))));
        }
        index += 1;
    }
    let mut entries = Vec::new();
    for library in functions.libraries() {
        if let Some(pattern) = pattern
            && !crate::glob::matches(pattern, library.name.as_bytes(), true)
        {
            continue;
        }
        entries.push(library_entry(library, with_code));
    }
    Ok(Value::Array(entries))
}

/// Every library as JSON, sorted by name, its functions too (`Engine::function_catalog`).
pub(crate) fn catalog(functions: &Functions) -> serde_json::Value {
    let mut libraries: Vec<&Library> = functions.libraries().collect();
    libraries.sort_by(|a, b| a.name.cmp(&b.name));
    let libraries = libraries.into_iter().map(|library| {
        let mut registered: Vec<&RegisteredFunction> = library.functions.iter().collect();
        registered.sort_by(|a, b| a.name.cmp(&b.name));
        let registered: Vec<serde_json::Value> = registered
            .into_iter()
            .map(|function| {
                serde_json::json!({
                    "name": function.name,
                    "description": function.description.as_ref().map(|text| String::from_utf8_lossy(text).into_owned()),
                    "flags": function.flags.names(),
                })
            })
            .collect();
        serde_json::json!({"library_name": library.name, "engine": ENGINE_NAME, "functions": registered})
    });
    serde_json::Value::Array(libraries.collect())
}

fn library_entry(library: &Library, with_code: bool) -> Value {
    let mut functions: Vec<&RegisteredFunction> = library.functions.iter().collect();
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    let functions = functions
        .into_iter()
        .map(|function| {
            Value::Map(vec![
                (Value::bulk("name"), Value::bulk(&function.name)),
                (Value::bulk("description"), function.description.as_ref().map_or(Value::Null, Value::bulk)),
                (Value::bulk("flags"), Value::Set(function.flags.names().into_iter().map(Value::simple).collect())),
            ])
        })
        .collect();
    let mut fields = vec![
        (Value::bulk("library_name"), Value::bulk(&library.name)),
        (Value::bulk("engine"), Value::bulk(ENGINE_NAME)),
        (Value::bulk("functions"), Value::Array(functions)),
    ];
    if with_code {
        fields.push((Value::bulk("library_code"), Value::bulk(&library.code)));
    }
    Value::Map(fields)
}

/// FUNCTION STATS: the running script (the server's to say) and the engine's counts.
pub(crate) fn stats(functions: &Functions, running: Option<&RunningScript>) -> Value {
    let (libraries, functions) = functions.counts();
    stats_value(running, libraries, functions)
}

/// FUNCTION STATS' reply from its parts: what runs now, and the libraries and functions
/// loaded. A server answers FUNCTION STATS with it while a function holds the engine.
pub fn stats_value(running: Option<&RunningScript>, libraries: usize, functions: usize) -> Value {
    let running = match running {
        None => Value::Null,
        Some(running) => Value::Map(vec![
            (Value::bulk("name"), Value::bulk(&running.name)),
            (Value::bulk("command"), Value::Array(running.command.iter().map(Value::bulk).collect())),
            (Value::bulk("duration_ms"), Value::Int(running.duration_ms)),
        ]),
    };
    let engine = Value::Map(vec![
        (Value::bulk("libraries_count"), Value::Int(libraries as i64)),
        (Value::bulk("functions_count"), Value::Int(functions as i64)),
    ]);
    Value::Map(vec![
        (Value::bulk("running_script"), running),
        (Value::bulk("engines"), Value::Map(vec![(Value::bulk(ENGINE_NAME), engine)])),
    ])
}
