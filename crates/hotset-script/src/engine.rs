//! The public face of the engine: one value the server keeps, with a method per script
//! command.
//!
//! Owns [`Engine`] (the EVAL side, the FUNCTION side and what they share), [`RunOptions`],
//! and [`split_keys`] (numkeys, with Redis' texts). Locking, atomicity, BUSY replies to other
//! clients, replication and persistence are the server's: this module must never assume it
//! runs on any particular thread or that nothing else happened between two calls.

use std::sync::{Arc, Mutex};

use crate::cache::{Scripts, lowercase};
use crate::errors::ScriptError;
use crate::flags::ScriptFlags;
use crate::host::Host;
use crate::limits::Limits;
use crate::random::Rand48;
use crate::redis_api::{Logger, Shared};
use crate::value::Value;

/// How a script is invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunOptions {
    /// EVAL_RO / EVALSHA_RO / FCALL_RO: write commands are refused, and a script that declared
    /// flags without `no-writes` is refused before it runs.
    pub read_only: bool,
}

/// The scripting engine: the EVAL interpreter with its script cache, and the FUNCTION
/// interpreter with its libraries.
pub struct Engine {
    scripts: Scripts,
}

impl Engine {
    /// A new engine; `logger` receives `redis.log` lines.
    pub fn new(limits: Limits, logger: Logger) -> Result<Engine, ScriptError> {
        let shared = Shared { logger, random: Arc::new(Mutex::new(Rand48::default())) };
        Ok(Engine { scripts: Scripts::new(limits, shared)? })
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
        self.scripts.run(&sha, keys, args, host, options.read_only)
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
        self.scripts.run(&lowercase(sha), keys, args, host, options.read_only)
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
