//! Errors returned by keyspace operations.
//!
//! Owns: [`KvError`], the single error type of the `kv` module.
//!
//! Must never: carry I/O or protocol concerns. The server writes
//! `-{Display}\r\n` verbatim, so every `Display` string is the exact Redis
//! error text without the leading `-`; changing one is a wire-visible change.
//!
//! Invariants: variants are cheap to clone and compare, so tests and the
//! transaction layer can store and match them freely.

use thiserror::Error;

/// Every way a keyspace operation can fail.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum KvError {
    /// A string command hit a hash, or a hash command hit a string.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// INCR/DECR family on a value that is not a canonical 64-bit integer.
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    /// INCRBY/DECRBY/HINCRBY result outside `i64`.
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    /// DECRBY with `i64::MIN`, whose negation does not exist.
    #[error("ERR decrement would overflow")]
    DecrementOverflow,
    /// INCRBYFLOAT on a value that does not parse as a float.
    #[error("ERR value is not a valid float")]
    NotFloat,
    /// INCRBYFLOAT/HINCRBYFLOAT whose result is NaN or infinite.
    #[error("ERR increment would produce NaN or Infinity")]
    NanOrInfinity,
    /// ZADD INCR or ZINCRBY whose result is NaN (inf plus -inf).
    #[error("ERR resulting score is not a number (NaN)")]
    ScoreNan,
    /// SORT without ALPHA of an element (or BY value) that is no number.
    #[error("ERR One or more scores can't be converted into double")]
    SortNotNumber,
    /// LCS of a key holding another type than a string.
    #[error("ERR The specified keys must contain string values")]
    LcsNotString,
    /// LCS whose table would take more than the limit allows.
    #[error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")]
    LcsTooLarge,
    /// RESTORE of a payload that does not read back.
    #[error("ERR DUMP payload version or checksum are wrong")]
    BadPayload,
    /// RESTORE onto an existing key without REPLACE.
    #[error("BUSYKEY Target key name already exists.")]
    BusyKey,
    /// RESTORE of a negative TTL.
    #[error("ERR Invalid TTL value, must be >= 0")]
    InvalidTtl,
    /// A geo search centred on a member the set does not hold.
    #[error("ERR could not decode requested zset member")]
    GeoMemberMissing,
    /// A HyperLogLog command on a string that is none, or a damaged one (Redis' text).
    #[error("{0}")]
    Hll(&'static str),
    /// PFDEBUG of a missing key.
    #[error("ERR The specified key does not exist")]
    PfDebugMissing,
    /// RENAME or LSET of a missing key.
    #[error("ERR no such key")]
    NoSuchKey,
    /// A stream command's refusal, with Redis' whole text (its prefix varies: ERR,
    /// NOGROUP, BUSYGROUP, UNBLOCKED).
    #[error("{0}")]
    Stream(String),
    /// LSET at an index outside the list.
    #[error("ERR index out of range")]
    IndexOutOfRange,
    /// A string value would exceed [`KvLimits::value_bytes_max`](super::KvLimits).
    #[error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")]
    ValueTooLarge {
        /// The configured maximum in bytes.
        limit: usize,
        /// The size the value would have had.
        actual: usize,
    },
    /// HINCRBY on a field that is not a canonical 64-bit integer.
    #[error("ERR hash value is not an integer")]
    HashNotInteger,
    /// HINCRBYFLOAT on a field that does not parse as a float.
    #[error("ERR hash value is not a float")]
    HashNotFloat,
    /// An expire time that is zero/negative where Redis forbids it, or that
    /// overflows when added to the current time. `command` is the lowercase
    /// command name Redis would print (the server may substitute its own,
    /// e.g. `pexpire` for `expire`).
    #[error("ERR invalid expire time in '{command}' command")]
    InvalidExpireTime {
        /// Lowercase command name used in the message.
        command: &'static str,
    },
    /// Mutually exclusive options, e.g. an expiry together with KEEPTTL.
    #[error("ERR syntax error")]
    Syntax,
    /// A request this engine cannot carry out as asked (the text says why).
    #[error("ERR {0}")]
    Unsupported(&'static str),
    /// [`Keyspaces::create`](super::Keyspaces::create) of a name in use.
    #[error("ERR keyspace '{0}' already exists")]
    KeyspaceExists(String),
    /// An operation inside [`Keyspace::atomic`](super::Keyspace::atomic)
    /// touched a key whose shard the block did not lock (declare every key
    /// up front, or use `atomic_all`).
    #[error("ERR key was not declared by the atomic block")]
    KeyNotLocked,
    /// The write-ahead log refused or failed the write (e.g. a full disk); like Redis
    /// when it cannot persist, the write is refused with `MISCONF`.
    #[error("MISCONF {0}")]
    Storage(String),
}
