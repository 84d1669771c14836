//! Hotset's Lua scripting engine: Redis 7.0's EVAL and FUNCTION semantics on an embedded
//! Lua 5.1 (mlua, built from source), independent of the server.
//!
//! The server owns dispatch, atomicity, BUSY replies and persistence; this crate owns the Lua
//! states, the sandbox, the script cache, function libraries and the conversions between
//! replies and Lua values. Everything a script asks of the data goes through the [`Host`]
//! trait, the `hotset` table of procedures over documents (`hotset.get`, `hotset.query`,
//! `hotset.sql`, `hotset.insert/upsert/update/delete`) too. Each module's `//!` header says what it owns and what it must never do.

// One module may use `unsafe`: `current`, which makes the host of a run reachable from
// functions made once per state (an mlua scope per run cost more than a small script).
#![deny(unsafe_code)]

mod cache;
mod convert;
mod current;
mod dump;
mod engine;
pub mod errors;
mod flags;
mod functions;
mod glob;
mod host;
mod hotset_api;
pub mod json;
mod libs;
mod limits;
mod random;
mod redis_api;
mod resp;
mod run;
mod sandbox;
mod value;

pub use dump::RestorePolicy;
pub use engine::{Answer, Engine, KeysAndArgs, Profile, RunOptions, split_keys};
pub use errors::ScriptError;
pub use flags::{EvalShebang, LibraryShebang, ScriptFlags, parse_eval_shebang, parse_library_shebang};
pub use functions::{ENGINE_NAME, LibraryExport, RunningScript, stats_value as function_stats_value};
pub use host::{CallContext, DocumentCall, DocumentError, Host, LogLevel, Replication, Tick, WriteMode};
pub use limits::Limits;
pub use redis_api::{Logger, REDIS_VERSION, REDIS_VERSION_NUM};
pub use resp::{RespError, format_g, parse_resp};
pub use value::{Protocol, Value};

/// The SHA1 of `bytes` as 40 lowercase hex digits: a script's name in the cache and what
/// `redis.sha1hex` returns.
pub fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// Whether Lua code names the `hotset` table (procedures over documents): a server runs
/// such a script where its document calls are atomic with everything else. A name built
/// at run time escapes this look; the server then finds out at the first call.
pub fn mentions_documents(code: &[u8]) -> bool {
    code.windows(b"hotset".len()).any(|window| window == b"hotset")
}
