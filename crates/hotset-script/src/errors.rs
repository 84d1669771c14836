//! Redis' error texts and the engine's error type.
//!
//! Owns [`ScriptError`] (why EVAL, FCALL or a script command failed, each variant writing the
//! exact text Redis 7.0 replies with) and the texts a host needs to answer `redis.call` the way
//! Redis does. Texts carry their error code (`ERR`, `NOSCRIPT`, ...) but never the leading `-`
//! or the CRLF: that is the writer's. This module must never decide anything: it only names.

use crate::value::Value;

/// `redis.call` of a command the host does not know.
pub const UNKNOWN_COMMAND: &str = "ERR Unknown Redis command called from script";
/// `redis.call` with the wrong number of arguments for the command.
pub const WRONG_ARITY: &str = "ERR Wrong number of args calling Redis command from script";
/// `redis.call` of a command flagged `noscript` (MULTI, WATCH, SUBSCRIBE, ...).
pub const NOT_ALLOWED_FROM_SCRIPT: &str = "ERR This Redis command is not allowed from script";
/// A write (or may-replicate) command from EVAL_RO, FCALL_RO or a `no-writes` script.
pub const WRITE_IN_READ_ONLY_SCRIPT: &str = "ERR Write commands are not allowed from read-only scripts.";
/// A deny-oom command while used memory is over `maxmemory` and the script has not written.
pub const OOM_COMMAND: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// EVAL on a script whose flags refuse to run under OOM (server-side check before running).
pub const OOM_SCRIPT: &str =
    "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'";
/// A script with `no-cluster` in cluster mode (server-side check before running).
pub const NO_CLUSTER_SCRIPT: &str = "ERR Can not run script on cluster, 'no-cluster' flag is set.";
/// SCRIPT KILL / FUNCTION KILL with nothing running.
pub const NOT_BUSY: &str = "NOTBUSY No scripts in execution right now.";
/// SCRIPT KILL / FUNCTION KILL of a script that already wrote.
pub const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";
/// What other clients get while an EVAL script is past the busy threshold.
pub const BUSY_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// What other clients get while a function is past the busy threshold.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
/// SCRIPT KILL while a function runs.
pub const KILL_FUNCTION_WITH_SCRIPT_KILL: &str = BUSY_FUNCTION;
/// FUNCTION KILL while an EVAL script runs.
pub const KILL_EVAL_WITH_FUNCTION_KILL: &str = BUSY_EVAL;

/// Why a script command failed. `Display` writes Redis' reply text (code included, no `-`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// EVALSHA of a script not in the cache.
    #[error("NOSCRIPT No matching script. Please use EVAL.")]
    NoScript,
    /// The numkeys argument is not an integer.
    #[error("ERR value is not an integer or out of range")]
    NumKeysNotInteger,
    /// FCALL's numkeys argument is not an integer.
    #[error("ERR Bad number of keys provided")]
    FunctionNumKeysNotInteger,
    /// More keys declared than arguments given.
    #[error("ERR Number of keys can't be greater than number of args")]
    TooManyKeys,
    /// A negative number of keys.
    #[error("ERR Number of keys can't be negative")]
    NegativeKeys,
    /// The shebang line is not valid (the text is Redis').
    #[error("ERR {0}")]
    Shebang(String),
    /// The body does not compile.
    #[error("ERR Error compiling script (new function): {0}")]
    Compile(String),
    /// A `*_RO` command on a script that declared flags without `no-writes`.
    #[error("ERR Can not execute a script with write flag using *_ro command.")]
    WriteFlagWithReadOnlyCommand,
    /// The script raised an error: the text is complete (`ERR ... script: <name>, on ...`).
    #[error("{0}")]
    Runtime(String),
    /// SCRIPT KILL / FUNCTION KILL stopped the script.
    #[error("ERR Script killed by user with SCRIPT KILL... script: {name}, on {location}.")]
    Killed {
        /// The script's SHA1 or the function's name.
        name: String,
        /// `@user_script:<line>` where it was stopped.
        location: String,
    },
    /// The Lua state ran out of its memory budget.
    #[error("ERR Lua memory limit of {limit_bytes} bytes reached running {name}")]
    MemoryLimit {
        /// The script's SHA1 or the function's name.
        name: String,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// FCALL of a function no library registered.
    #[error("ERR Function not found")]
    FunctionNotFound,
    /// A FUNCTION command failed; the text is Redis' (code included).
    #[error("{0}")]
    Function(String),
    /// The Lua VM failed in a way a script cannot cause (a bug of the engine).
    #[error("ERR Lua engine failure: {0}")]
    Internal(String),
}

impl ScriptError {
    /// The error as a reply value.
    pub fn to_value(&self) -> Value {
        Value::error(self.to_string())
    }
}

impl From<mlua::Error> for ScriptError {
    fn from(error: mlua::Error) -> ScriptError {
        ScriptError::Internal(error.to_string())
    }
}

/// Prefixes `ERR ` to a message that carries no code, as Redis' `luaPushError` does: a message
/// starting with `-` keeps its own code (the dash dropped), any other gets `ERR`. A trailing
/// CR/LF is trimmed.
pub fn with_error_code(message: &[u8]) -> Vec<u8> {
    let trimmed = trim_crlf(message);
    if let Some(rest) = trimmed.strip_prefix(b"-") {
        return match rest.iter().position(|&byte| byte == b' ') {
            Some(_) => rest.to_vec(),
            None => [b"ERR ".as_slice(), rest].concat(),
        };
    }
    [b"ERR ".as_slice(), trimmed].concat()
}

fn trim_crlf(mut text: &[u8]) -> &[u8] {
    while let [rest @ .., b'\r' | b'\n'] = text {
        text = rest;
    }
    while let [b'\r' | b'\n', rest @ ..] = text {
        text = rest;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_added_like_redis() {
        assert_eq!(with_error_code(b"wrong number of arguments"), b"ERR wrong number of arguments");
        assert_eq!(with_error_code(b"-WRONGTYPE Operation"), b"WRONGTYPE Operation");
        assert_eq!(with_error_code(b"-NOCODE"), b"ERR NOCODE");
        assert_eq!(with_error_code(b"-ERR x\r\n"), b"ERR x");
    }

    #[test]
    fn texts_match_redis() {
        assert_eq!(ScriptError::NoScript.to_string(), "NOSCRIPT No matching script. Please use EVAL.");
        assert_eq!(
            ScriptError::Compile("user_script:1: '=' expected near 'x'".into()).to_value(),
            Value::Error(b"ERR Error compiling script (new function): user_script:1: '=' expected near 'x'".to_vec())
        );
    }
}
