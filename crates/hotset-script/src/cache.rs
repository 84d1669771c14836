//! The EVAL side: its Lua state and the script cache.
//!
//! Owns [`Scripts`]: SHA1 of a body → its compiled function, body and declared flags, with
//! Redis' EVAL / EVALSHA / SCRIPT LOAD / EXISTS / FLUSH semantics (a body is compiled once and
//! kept until SCRIPT FLUSH, which also starts a fresh Lua state as Redis does). Compiled
//! functions sit in the Lua registry, not on mlua's reference stack, so the cache may grow
//! past the few thousand references that stack holds. This module must never run a script
//! it has not compiled itself.

use std::collections::HashMap;

use mlua::RegistryKey;

use crate::engine::RunOptions;
use crate::errors::ScriptError;
use crate::flags::{ScriptFlags, parse_eval_shebang};
use crate::host::Host;
use crate::limits::Limits;
use crate::redis_api::Shared;
use crate::run::{Vm, name_failure};
use crate::sandbox::Mode;
use crate::value::Value;

/// The chunk name Redis gives EVAL bodies: errors read `user_script:<line>: ...`.
const SCRIPT_CHUNK: &str = "@user_script";

struct CachedScript {
    function: RegistryKey,
    body: Vec<u8>,
    flags: Option<ScriptFlags>,
    /// The body names the `hotset` table (`crate::mentions_documents`).
    documents: bool,
}

/// The EVAL interpreter and its cache.
pub(crate) struct Scripts {
    vm: Vm,
    scripts: HashMap<String, CachedScript>,
    body_bytes: usize,
    limits: Limits,
    shared: Shared,
}

impl Scripts {
    pub fn new(limits: Limits, shared: Shared) -> Result<Scripts, ScriptError> {
        let vm = Vm::new(Mode::Eval, limits, shared.clone())?;
        Ok(Scripts { vm, scripts: HashMap::new(), body_bytes: 0, limits, shared })
    }

    /// Compiles and caches `body` unless cached; its SHA1.
    pub fn load(&mut self, body: &[u8]) -> Result<String, ScriptError> {
        let sha = crate::sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let shebang = parse_eval_shebang(body).map_err(ScriptError::Shebang)?;
        // The shebang line is skipped but its LF kept, so line numbers stay the author's.
        let function = self.vm.compile(&body[shebang.line_bytes..], SCRIPT_CHUNK).map_err(ScriptError::Compile)?;
        let function = self.vm.lua.create_registry_value(function)?;
        self.body_bytes += body.len();
        self.scripts.insert(
            sha.clone(),
            CachedScript {
                function,
                body: body.to_vec(),
                flags: shebang.flags,
                documents: crate::mentions_documents(body),
            },
        );
        Ok(sha)
    }

    /// Whether `sha` (any case) names a cached script.
    pub fn exists(&self, sha: &[u8]) -> bool {
        self.scripts.contains_key(&lowercase(sha))
    }

    /// The cached body for `sha`, to replicate EVALSHA as EVAL.
    pub fn body(&self, sha: &[u8]) -> Option<&[u8]> {
        self.scripts.get(&lowercase(sha)).map(|script| script.body.as_slice())
    }

    /// What the server decides a run by (flags, documents) for the cached script `sha`;
    /// `None` if not cached. One lookup: a keyed EVALSHA asks it per call.
    pub fn profile(&self, sha: &[u8]) -> Option<crate::Profile> {
        self.scripts
            .get(&lowercase(sha))
            .map(|script| crate::Profile { flags: script.flags, documents: script.documents })
    }

    /// The flags declared by the cached script `sha`: `Some(None)` without a shebang.
    pub fn flags(&self, sha: &[u8]) -> Option<Option<ScriptFlags>> {
        self.scripts.get(&lowercase(sha)).map(|script| script.flags)
    }

    /// Empties the cache and starts a fresh Lua state.
    pub fn flush(&mut self) -> Result<(), ScriptError> {
        self.vm = Vm::new(Mode::Eval, self.limits, self.shared.clone())?;
        self.scripts.clear();
        self.body_bytes = 0;
        Ok(())
    }

    /// How many scripts are cached, and the bytes of their bodies.
    pub fn stats(&self) -> (usize, usize) {
        (self.scripts.len(), self.body_bytes)
    }

    /// Bytes the EVAL Lua state uses.
    pub fn used_memory(&self) -> usize {
        self.vm.used_memory()
    }

    /// Runs the cached script `sha` (lowercase, 40 digits).
    pub fn run(
        &mut self,
        sha: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        host: &mut dyn Host,
        options: RunOptions,
    ) -> Result<Value, ScriptError> {
        let read_only = options.read_only;
        let script = self.scripts.get(sha).ok_or(ScriptError::NoScript)?;
        let flags = script.flags;
        if let Some(flags) = flags
            && read_only
            && !flags.contains(ScriptFlags::NO_WRITES)
        {
            return Err(ScriptError::WriteFlagWithReadOnlyCommand);
        }
        let read_only = read_only || flags.is_some_and(|flags| flags.contains(ScriptFlags::NO_WRITES));
        let function = self.vm.lua.registry_value(&script.function)?;
        match self.vm.run(&function, keys, args, host, RunOptions { read_only, ..options }, flags)? {
            Ok(value) => Ok(value),
            Err(failure) => Err(name_failure(failure, sha, self.vm.memory_bytes_max())),
        }
    }
}

/// SHA1 names are matched without regard to case, as Redis does.
pub(crate) fn lowercase(sha: &[u8]) -> String {
    String::from_utf8_lossy(sha).to_ascii_lowercase()
}
