//! The public face of the engine: one value the server keeps, with a method per script
//! command.
//!
//! Owns [`Engine`] (the EVAL side, the FUNCTION side and what they share), [`RunOptions`],
//! and [`split_keys`] (numkeys, with Redis' texts). Locking, atomicity, BUSY replies to other
//! clients, replication and persistence are the server's: this module must never assume it
//! runs on any particular thread or that nothing else happened between two calls.

use std::sync::{Arc, Mutex};

use crate::cache::{Scripts, lowercase};
use crate::dump::{self, RestorePolicy};
use crate::errors::ScriptError;
use crate::flags::ScriptFlags;
use crate::functions::{self, Functions, LibraryExport, RunningScript};
use crate::host::Host;
use crate::limits::Limits;
use crate::random::Rand48;
use crate::redis_api::{Logger, Shared};
use crate::value::Value;

/// What a server decides a run by before it starts: the declared flags (`None`: EVAL
/// without a shebang) and whether the code names the `hotset` table (so it may reach the
/// documents: `crate::mentions_documents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub flags: Option<ScriptFlags>,
    pub documents: bool,
}

/// How a script is invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunOptions {
    /// EVAL_RO / EVALSHA_RO / FCALL_RO: write commands are refused, and a script that declared
    /// flags without `no-writes` is refused before it runs.
    pub read_only: bool,
    /// What the script's return value becomes: Redis' reply (EVAL, FCALL) or JSON text.
    pub answer: Answer,
}

/// The form of a script's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Answer {
    /// Redis' conversion of a Lua value to a reply (`convert.rs`): EVAL and FCALL.
    #[default]
    Reply,
    /// The value as JSON text by the document mapping (`json.rs`), in a bulk reply; a
    /// returned `{err = ...}` table is that error reply, and a value with no JSON form is
    /// an error naming its path. Procedures called from every interface (`DOC.CALL`,
    /// HTTP, Python) answer so, and so answer the same.
    Json,
}

/// The scripting engine: the EVAL interpreter with its script cache, and the FUNCTION
/// interpreter with its libraries.
pub struct Engine {
    scripts: Scripts,
    functions: Functions,
}

impl Engine {
    /// A new engine; `logger` receives `redis.log` lines.
    pub fn new(limits: Limits, logger: Logger) -> Result<Engine, ScriptError> {
        let shared = Shared { logger, random: Arc::new(Mutex::new(Rand48::default())) };
        Ok(Engine { scripts: Scripts::new(limits, shared.clone())?, functions: Functions::new(limits, shared)? })
    }

    /// EVAL / EVAL_RO: compiles `body` if it is not cached, then runs it.
    pub fn eval(
        &mut self,
        body: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        options: RunOptions,
    ) -> Result<Value, ScriptError> {
        let sha = self.scripts.load(body)?;
        self.scripts.run(&sha, keys, args, host, options)
    }

    /// EVALSHA / EVALSHA_RO: runs a cached script.
    pub fn evalsha(
        &mut self,
        sha: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        options: RunOptions,
    ) -> Result<Value, ScriptError> {
        if sha.len() != 40 {
            return Err(ScriptError::NoScript);
        }
        self.scripts.run(&lowercase(sha), keys, args, host, options)
    }

    /// SCRIPT LOAD: compiles and caches `body`; its SHA1.
    pub fn script_load(&mut self, body: &[u8]) -> Result<String, ScriptError> {
        self.scripts.load(body)
    }

    /// SCRIPT EXISTS for one SHA1 (any case).
    pub fn script_exists(&self, sha: &[u8]) -> bool {
        self.scripts.exists(sha)
    }

    /// SCRIPT FLUSH: forgets every script and starts a fresh EVAL interpreter.
    pub fn script_flush(&mut self) -> Result<(), ScriptError> {
        self.scripts.flush()
    }

    /// The body cached under `sha`, so the server can propagate EVALSHA as EVAL.
    pub fn script_body(&self, sha: &[u8]) -> Option<&[u8]> {
        self.scripts.body(sha)
    }

    /// The flags of the script EVAL would run for `body`, so the server can check OOM, stale
    /// replica and cluster rules before running it: `Ok(None)` without a shebang (the command's
    /// own flags apply), an error for a bad shebang.
    pub fn eval_flags(&self, body: &[u8]) -> Result<Option<ScriptFlags>, ScriptError> {
        if let Some(flags) = self.scripts.flags(crate::sha1_hex(body).as_bytes()) {
            return Ok(flags);
        }
        crate::flags::parse_eval_shebang(body).map(|shebang| shebang.flags).map_err(ScriptError::Shebang)
    }

    /// The flags of the cached script `sha`; `None` if it is not cached.
    pub fn evalsha_flags(&self, sha: &[u8]) -> Option<Option<ScriptFlags>> {
        self.scripts.flags(sha)
    }

    /// Cached scripts and the bytes of their bodies; bytes used by the EVAL Lua state.
    pub fn script_stats(&self) -> (usize, usize, usize) {
        let (count, body_bytes) = self.scripts.stats();
        (count, body_bytes, self.scripts.used_memory())
    }
}

impl Engine {
    /// The cached script `sha`'s flags and whether it may reach the documents; `None` if
    /// it is not cached.
    pub fn evalsha_profile(&self, sha: &[u8]) -> Option<Profile> {
        self.scripts.profile(sha)
    }

    /// Function `name`'s flags and whether it may reach the documents; `None` if no library
    /// registered it.
    pub fn function_profile(&self, name: &[u8]) -> Option<Profile> {
        self.functions.profile(name)
    }

    /// FUNCTION LOAD [REPLACE]: loads a library (its code starts with `#!lua name=<name>`);
    /// returns its name. The server must log the code (see [`Engine::libraries`]).
    pub fn function_load(&mut self, code: &[u8], replace: bool) -> Result<String, ScriptError> {
        self.functions.load(code, replace)
    }

    /// FCALL / FCALL_RO. The server checks that the function exists ([`Engine::function_flags`])
    /// before it parses numkeys, as Redis does.
    pub fn fcall(
        &mut self,
        name: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        options: RunOptions,
    ) -> Result<Value, ScriptError> {
        self.functions.call(name, keys, args, host, options)
    }

    /// The flags of function `name` (any case), so the server can apply OOM, stale-replica and
    /// cluster rules before FCALL; `None` if no library registered it.
    pub fn function_flags(&self, name: &[u8]) -> Option<ScriptFlags> {
        self.functions.flags(name)
    }

    /// FUNCTION DELETE.
    pub fn function_delete(&mut self, library: &[u8]) -> Result<(), ScriptError> {
        self.functions.delete(library)
    }

    /// FUNCTION FLUSH (SYNC and ASYNC alike: the libraries are small).
    pub fn function_flush(&mut self) {
        self.functions.flush();
    }

    /// FUNCTION LIST with the arguments after LIST (`LIBRARYNAME pattern`, `WITHCODE`).
    pub fn function_list(&self, arguments: &[&[u8]]) -> Result<Value, ScriptError> {
        functions::list(&self.functions, arguments)
    }

    /// Every library and its functions as JSON (what FUNCTION LIST tells, its code left
    /// out): `[{"library_name", "engine", "functions": [{"name", "description", "flags"}]}]`,
    /// libraries and functions by name. The HTTP API and the embedded Python database list
    /// functions with it.
    pub fn function_catalog(&self) -> serde_json::Value {
        functions::catalog(&self.functions)
    }

    /// FUNCTION STATS; what is running now is the server's to tell.
    pub fn function_stats(&self, running: Option<&RunningScript>) -> Value {
        functions::stats(&self.functions, running)
    }

    /// FUNCTION DUMP: every library in one payload.
    pub fn function_dump(&self) -> Vec<u8> {
        let codes: Vec<&[u8]> = self.functions.libraries().map(|library| library.code.as_slice()).collect();
        dump::encode(codes.into_iter())
    }

    /// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: all or nothing.
    pub fn function_restore(&mut self, payload: &[u8], policy: RestorePolicy) -> Result<(), ScriptError> {
        let codes = dump::decode(payload)?;
        dump::restore(&mut self.functions, &codes, policy)
    }

    /// Every library as data (name and code), for the server's log and snapshots. Loading the
    /// codes back with [`Engine::function_load`] (or [`Engine::restore_libraries`]) rebuilds
    /// the same libraries.
    pub fn libraries(&self) -> Vec<LibraryExport> {
        self.functions
            .libraries()
            .map(|library| LibraryExport { name: library.name.clone(), code: library.code.clone() })
            .collect()
    }

    /// Loads libraries from their codes (a snapshot), all or nothing, by `policy`.
    pub fn restore_libraries(&mut self, codes: &[Vec<u8>], policy: RestorePolicy) -> Result<(), ScriptError> {
        dump::restore(&mut self.functions, codes, policy)
    }

    /// Libraries and functions loaded, and bytes used by the FUNCTION Lua state.
    pub fn function_counts(&self) -> (usize, usize, usize) {
        let (libraries, functions) = self.functions.counts();
        (libraries, functions, self.functions.used_memory())
    }
}

/// The keys and the arguments of a script call.
pub type KeysAndArgs<'a> = (&'a [&'a [u8]], &'a [&'a [u8]]);

/// Splits EVAL / FCALL arguments after the script or function name: `numkeys` then keys then
/// arguments, with Redis' errors (`function` selects FCALL's text for a non-integer count).
pub fn split_keys<'a>(numkeys: &[u8], rest: &'a [&'a [u8]], function: bool) -> Result<KeysAndArgs<'a>, ScriptError> {
    let count: i64 = std::str::from_utf8(numkeys).ok().and_then(|text| text.parse().ok()).ok_or(if function {
        ScriptError::FunctionNumKeysNotInteger
    } else {
        ScriptError::NumKeysNotInteger
    })?;
    if count < 0 {
        return Err(ScriptError::NegativeKeys);
    }
    let count = usize::try_from(count).map_err(|_| ScriptError::TooManyKeys)?;
    if count > rest.len() {
        return Err(ScriptError::TooManyKeys);
    }
    Ok(rest.split_at(count))
}
