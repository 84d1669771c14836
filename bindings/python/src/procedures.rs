//! Procedures in the Python package: Lua function libraries loaded, listed and called,
//! embedded or as a client, with the answers the server gives (`DOC.CALL`).
//!
//! Embedded, a database has a Lua engine of its own (`hotset-script`), made at the first
//! procedure call with the libraries the database keeps, and a host whose document calls
//! go to the database's `hotset_ops::Engine` through `hotset_ops::procedure`, the code the
//! server's host runs: reads as requests, writes buffered and committed as one transaction
//! when the function returns without an error, refusals worded alike. `redis.call` is
//! refused: an embedded database has no key-value keyspace. Libraries are logged as the
//! server logs them (the metadata entry `redis:functions`), so a database on a folder
//! keeps them and a server opened on that folder has them too; in memory they last as
//! long as the database.
//!
//! Procedures of one embedded database run one at a time, commit included (the engine's
//! lock), but nothing holds off the other threads' writes meanwhile as the server's script
//! gate does: a procedure's reads and its commit are not isolated from a write made by
//! another thread of the same process in between. A function that never returns is not
//! stopped (there is no FUNCTION KILL in-process).
//!
//! Owns: [`Procedures`] (the embedded engine and its lock) and [`EmbeddedHost`]. Never: run
//! a document operation itself, or hold the GIL (its callers run it detached).

use crate::backend::{Failure, Outcome};
use hotset_core::Durability;
use hotset_ops::Engine;
use hotset_ops::procedure::{self, LibrariesError, Procedure};
use hotset_script::{Answer, CallContext, DocumentCall, DocumentError, Host, Limits, RunOptions, Value as LuaReply};
use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;
use std::sync::Arc;

/// The text `redis.call` fails with in an embedded database.
const NO_KEYSPACE: &str = "ERR redis.call is not available in an embedded database: it has no key-value keyspace (procedures reach \
     documents through hotset.get, hotset.query, hotset.sql, hotset.insert...)";

/// An embedded database's Lua engine, made at first use.
#[derive(Default)]
pub struct Procedures {
    scripts: Mutex<Option<hotset_script::Engine>>,
}

impl Procedures {
    /// The engine, locked; made (with the libraries `engine`'s database keeps) the first
    /// time.
    fn lock(&self, engine: &Engine) -> Outcome<MutexGuard<'_, Option<hotset_script::Engine>>> {
        let mut scripts = self.scripts.lock();
        if scripts.is_none() {
            // `redis.log` has nowhere to go in a library: its lines are dropped.
            let logger: hotset_script::Logger = Arc::new(|_, _: &[u8]| {});
            let mut made = hotset_script::Engine::new(Limits::default(), logger)
                .map_err(|error| Failure::Storage(format!("starting Lua: {error}")))?;
            procedure::load_libraries(engine, &mut made).map_err(|error| {
                Failure::Storage(format!("the function libraries the database keeps did not load: {error}"))
            })?;
            *scripts = Some(made);
        }
        Ok(scripts)
    }

    /// Calls function `name` with `arguments` (no keys); its return value as JSON text.
    pub fn call(&self, engine: &Engine, name: &str, arguments: &[Vec<u8>]) -> Outcome<Vec<u8>> {
        let mut scripts = self.lock(engine)?;
        let scripts = scripts.as_mut().expect("made by lock");
        let arguments: Vec<&[u8]> = arguments.iter().map(Vec::as_slice).collect();
        let mut host = EmbeddedHost { engine, procedure: Procedure::new(true) };
        let options = RunOptions { read_only: false, answer: Answer::Json };
        // The lock is held through the commit: procedures run one at a time, whole.
        match scripts.fcall(name.as_bytes(), &[], &arguments, &mut host, options) {
            Ok(LuaReply::Bulk(json)) => {
                procedure::commit(host.procedure, |request| engine.apply(request))
                    .map_err(|refused| Failure::Server(procedure::commit_error(&refused)))?;
                Ok(json)
            }
            Ok(LuaReply::Error(text)) => Err(Failure::Server(String::from_utf8_lossy(&text).into_owned())),
            Ok(other) => Err(Failure::Storage(format!("the Lua engine gave an unexpected answer: {other:?}"))),
            Err(error) => Err(Failure::Server(error.to_string())),
        }
    }

    /// FUNCTION LOAD [REPLACE]: the library's name; logged before it returns.
    pub fn load(&self, engine: &Engine, code: &[u8], replace: bool) -> Outcome<String> {
        let mut scripts = self.lock(engine)?;
        let scripts = scripts.as_mut().expect("made by lock");
        procedure::change_libraries(engine, Durability::Wait, scripts, |scripts| scripts.function_load(code, replace))
            .map_err(|error| match error {
                LibrariesError::Script(error) => Failure::Server(error.to_string()),
                LibrariesError::Log(reason) => Failure::Storage(reason),
            })
    }

    /// Every library and its functions (`hotset_script::Engine::function_catalog`).
    pub fn list(&self, engine: &Engine) -> Outcome<Value> {
        let scripts = self.lock(engine)?;
        Ok(scripts.as_ref().expect("made by lock").function_catalog())
    }
}

/// What an embedded procedure asks of the database.
struct EmbeddedHost<'e> {
    engine: &'e Engine,
    procedure: Procedure,
}

impl Host for EmbeddedHost<'_> {
    fn call(&mut self, _args: &[&[u8]], _context: &CallContext) -> LuaReply {
        LuaReply::error(NO_KEYSPACE)
    }

    fn acl_check_cmd(&mut self, _args: &[&[u8]]) -> Option<bool> {
        // No command is known here.
        None
    }

    fn documents(&mut self, call: DocumentCall<'_>, context: &CallContext) -> Result<Vec<u8>, DocumentError> {
        procedure::documents(self.engine, &mut self.procedure, call, context, false)
    }
}
