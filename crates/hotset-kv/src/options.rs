//! Public option and result types of keyspace commands.
//!
//! Owns: the plain-data arguments/results that mirror Redis command flags
//! (SET's EX/PX/EXAT/PXAT/KEEPTTL/NX/XX/GET, EXPIRE's NX/XX/GT/LT).
//!
//! Must never: contain behaviour beyond trivial constructors; semantics live
//! with the commands so there is one place to read them.
//!
//! Invariants: all times are milliseconds. Relative times are converted to
//! absolute ones with the operation's single "now".

/// Expiry to apply with SET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetExpiry {
    /// Expire this many milliseconds from now (EX/PX). Must be > 0.
    Ex(u64),
    /// Expire at this absolute time in ms since the epoch (EXAT/PXAT). Must
    /// be > 0; a time already passed stores nothing (the key ends up absent).
    At(u64),
}

/// Existence precondition of SET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetCondition {
    /// Only set when the key does not exist (NX).
    Nx,
    /// Only set when the key exists (XX).
    Xx,
}

/// Flags of SET. `Default` is a plain `SET key value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetOptions {
    /// New expiry; `None` clears any TTL unless `keep_ttl`.
    pub expiry: Option<SetExpiry>,
    /// KEEPTTL: retain the existing TTL. Combining it with `expiry` is a
    /// syntax error, as in Redis.
    pub keep_ttl: bool,
    /// NX / XX.
    pub condition: Option<SetCondition>,
    /// GET: also return the previous string value (WRONGTYPE if it is not a
    /// string, in which case nothing is written).
    pub get_old: bool,
}

/// Result of SET.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetOutcome {
    /// Whether the value was written (false when NX/XX prevented it).
    pub applied: bool,
    /// The previous string value; only filled when `get_old` was requested.
    pub old: Option<Vec<u8>>,
}

/// Flags of RESTORE (Redis' REPLACE, ABSTTL, IDLETIME, FREQ). `Default` is a plain
/// `RESTORE key ttl payload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RestoreOptions {
    /// REPLACE: overwrite an existing key (else BUSYKEY).
    pub replace: bool,
    /// ABSTTL: the ttl is a Unix time in milliseconds.
    pub absolute: bool,
    /// IDLETIME: the key's idle time in seconds, kept when stamps are LRU clocks.
    pub idle_secs: Option<u64>,
    /// FREQ: the key's access counter, kept when stamps are LFU counters.
    pub freq: Option<u8>,
}

/// What OBJECT IDLETIME and OBJECT FREQ read of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyAccess {
    /// Seconds since the last access (meaningful under an LRU policy).
    pub idle_secs: u64,
    /// The decayed access counter (meaningful under an LFU policy).
    pub freq: u8,
}

/// Precondition of EXPIRE-family commands (Redis 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpireCondition {
    /// Only when the key has no expiry.
    Nx,
    /// Only when the key has an expiry.
    Xx,
    /// Only when the new expiry is later than the current one (a key without
    /// expiry counts as infinitely late, so GT never applies to it).
    Gt,
    /// Only when the new expiry is earlier than the current one (a key
    /// without expiry counts as infinitely late, so LT always applies).
    Lt,
    /// XX and LT together: only when the key has an expiry and the new one is earlier.
    XxLt,
}
