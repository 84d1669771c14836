//! Every limit of the scripting engine, named, with its default.
//!
//! Owns [`Limits`] (what the server may configure per engine) and the fixed bounds the engine
//! keeps for itself. This module must never enforce anything: the state (memory), the hook
//! (time, kill) and the readers (depth) do, each naming its limit from here.

use std::time::Duration;

/// The Lua instructions between two calls of the count hook (Redis uses 100,000): often
/// enough that SCRIPT KILL and BUSY replies come within about a millisecond, rare enough to
/// cost nothing measurable.
pub const HOOK_INSTRUCTIONS: u32 = 100_000;

/// Runs between two incremental steps of the Lua collector, as Redis does.
pub const GC_STEP_RUNS: u64 = 50;

/// How many stack frames the error handler looks through for the script line to blame.
pub const HANDLER_FRAMES_MAX: usize = 64;

/// How deep a MessagePack payload may nest when `cmsgpack.unpack` reads it: deeper input is
/// refused as bad data rather than recursed into.
pub const DECODE_DEPTH_MAX: usize = 128;

/// Per-engine limits the server may configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes one Lua state may allocate (the EVAL state and the FUNCTION state each have this
    /// budget). A script that needs more fails with [`crate::ScriptError::MemoryLimit`].
    pub memory_bytes_max: usize,
    /// How long a library's top-level code may run at FUNCTION LOAD (Redis: 500 ms) before it
    /// fails with `FUNCTION LOAD timeout`.
    pub load_time_max: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { memory_bytes_max: 256 * 1024 * 1024, load_time_max: Duration::from_millis(500) }
    }
}
