//! The command table: every command the RESP listener knows, its arity, group and flags.
//!
//! Owns: looking a command up by name (ASCII case-insensitive, no allocation), the arity
//! check with Redis' error text, and what COMMAND COUNT/INFO/DOCS report. Never: execute
//! anything; the group modules do.

/// How a command may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Key-value command: runs on a keyspace, or on the locked keyspace inside EXEC.
    Kv,
    /// Changes the connection or reports on the server; may be queued in MULTI only when
    /// `in_multi` is set.
    Connection,
    /// Document command (`DOC.*`) on the database's namespaces; not inside MULTI (a
    /// transaction's lock covers one keyspace).
    Document,
}

/// One command.
#[derive(Debug)]
pub struct Spec {
    /// Upper-case name.
    pub name: &'static str,
    /// Redis convention: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    pub kind: Kind,
    /// Whether it writes (COMMAND INFO flags; `write` or `readonly`).
    pub write: bool,
    /// Whether MULTI may queue it.
    pub in_multi: bool,
    /// Redis command group, for COMMAND DOCS.
    pub group: &'static str,
    pub summary: &'static str,
}

const fn kv(name: &'static str, arity: i32, write: bool, group: &'static str, summary: &'static str) -> Spec {
    Spec { name, arity, kind: Kind::Kv, write, in_multi: true, group, summary }
}

const fn conn(name: &'static str, arity: i32, in_multi: bool, summary: &'static str) -> Spec {
    Spec { name, arity, kind: Kind::Connection, write: false, in_multi, group: "connection", summary }
}

const fn doc(name: &'static str, arity: i32, write: bool, summary: &'static str) -> Spec {
    Spec { name, arity, kind: Kind::Document, write, in_multi: false, group: "document", summary }
}

/// Every command, sorted by name (the order COMMAND lists them in).
pub static COMMANDS: &[Spec] = &[
    kv("APPEND", 3, true, "string", "Appends a string to the value of a key."),
    conn("AUTH", -2, false, "Authenticates the connection."),
    conn("BGSAVE", -1, false, "Takes a snapshot of the database in the background."),
    conn("CLIENT", -2, false, "Connection management: SETNAME, GETNAME, ID, INFO, LIST, SETINFO."),
    conn("COMMAND", -1, false, "Information about the commands: COUNT, DOCS, INFO, LIST."),
    conn("CONFIG", -2, false, "Reads or changes server settings: GET, SET, RESETSTAT."),
    kv("DBSIZE", 1, false, "server", "Number of keys in the selected keyspace."),
    kv("DECR", 2, true, "string", "Decrements the integer value of a key by one."),
    kv("DECRBY", 3, true, "string", "Decrements the integer value of a key by a number."),
    kv("DEL", -2, true, "generic", "Deletes keys."),
    conn("DISCARD", 1, false, "Discards a transaction."),
    doc("DOC.DEL", 3, true, "Deletes a document by primary key; 1 if it existed."),
    doc("DOC.ERRORS", -1, false, "Sets the connection's DOC.* error form: TEXT (-ERR message) or JSON (-CODE {json})."),
    doc("DOC.EXPLAIN", -2, false, "Runs a JSON DSL query and returns its result with the plan and timings."),
    doc("DOC.GET", 3, false, "A document by primary key (JSON), or null."),
    doc("DOC.INDEXADD", 3, true, "Adds an index (JSON definition) to a namespace and builds it."),
    doc("DOC.INDEXDROP", 3, true, "Drops an index of a namespace."),
    doc("DOC.INSERT", -3, true, "Inserts documents (JSON); fails on an existing key; all or nothing."),
    doc("DOC.NSCREATE", -2, true, "Creates a namespace with index definitions (JSON list)."),
    doc("DOC.NSDROP", 2, true, "Drops a namespace and its documents."),
    doc("DOC.NSINFO", 2, false, "A namespace's indexes, document count and memory (JSON)."),
    doc("DOC.NSLIST", 1, false, "The names of the namespaces."),
    doc("DOC.NSTRUNCATE", 2, true, "Removes every document of a namespace, keeping its indexes."),
    doc("DOC.QUERY", -2, false, "Runs a JSON DSL query; returns items, total and aggregations (JSON)."),
    doc("DOC.SCAN", -3, false, "Walks a namespace's documents: [next cursor, [documents]]; cursor 0 starts and ends."),
    doc("DOC.SEARCH", 2, false, "Full-text search across namespaces, merged by rank (JSON in, JSON out)."),
    doc("DOC.SQL", 2, true, "Runs one SQL statement; returns its JSON answer (items, total, aggregations, affected)."),
    doc(
        "DOC.TXN",
        -4,
        true,
        "Applies UPSERT/INSERT/UPDATE document and DELETE key operations to one namespace, all or nothing.",
    ),
    doc("DOC.UPDATE", -3, true, "Updates existing documents (JSON); fails on a missing key; all or nothing."),
    doc("DOC.UPSERT", -3, true, "Inserts or replaces documents (JSON); all or nothing."),
    conn("ECHO", 2, true, "Returns the given string."),
    conn("EXEC", 1, false, "Executes the queued commands atomically."),
    kv("EXISTS", -2, false, "generic", "Counts how many of the keys exist."),
    kv("EXPIRE", -3, true, "generic", "Sets a key's time to live in seconds."),
    kv("EXPIREAT", -3, true, "generic", "Sets a key's expiry as a Unix time in seconds."),
    kv("EXPIRETIME", 2, false, "generic", "A key's expiry as a Unix time in seconds."),
    kv("FLUSHALL", -1, true, "server", "Removes every key of every keyspace."),
    kv("FLUSHDB", -1, true, "server", "Removes every key of the selected keyspace."),
    kv("GET", 2, false, "string", "The string value of a key."),
    kv("GETDEL", 2, true, "string", "Returns a key's string value and deletes the key."),
    kv("GETSET", 3, true, "string", "Sets a key's string value and returns the old one."),
    kv("HDEL", -3, true, "hash", "Deletes fields of a hash."),
    conn("HELLO", -1, false, "Handshake: protocol version, authentication, client name."),
    kv("HEXISTS", 3, false, "hash", "Whether a hash field exists."),
    kv("HGET", 3, false, "hash", "The value of a hash field."),
    kv("HGETALL", 2, false, "hash", "Every field and value of a hash."),
    kv("HINCRBY", 4, true, "hash", "Increments the integer value of a hash field."),
    kv("HINCRBYFLOAT", 4, true, "hash", "Increments the floating-point value of a hash field."),
    kv("HKEYS", 2, false, "hash", "Every field of a hash."),
    kv("HLEN", 2, false, "hash", "Number of fields in a hash."),
    kv("HMGET", -3, false, "hash", "The values of several hash fields."),
    kv("HMSET", -4, true, "hash", "Sets several hash fields (deprecated form of HSET)."),
    kv("HSCAN", -3, false, "hash", "Iterates over the fields of a hash."),
    kv("HSET", -4, true, "hash", "Sets hash fields; returns how many were new."),
    kv("HSETNX", 4, true, "hash", "Sets a hash field only if it does not exist."),
    kv("HSTRLEN", 3, false, "hash", "Length of a hash field's value."),
    kv("HVALS", 2, false, "hash", "Every value of a hash."),
    kv("INCR", 2, true, "string", "Increments the integer value of a key by one."),
    kv("INCRBY", 3, true, "string", "Increments the integer value of a key by a number."),
    kv("INCRBYFLOAT", 3, true, "string", "Increments the floating-point value of a key."),
    conn("INFO", -1, true, "Server information and statistics."),
    kv("KEYS", 2, false, "generic", "Every key matching a glob pattern."),
    conn("LASTSAVE", 1, true, "Unix time of the last successful snapshot."),
    kv("MGET", -2, false, "string", "The values of several keys."),
    kv("MSET", -3, true, "string", "Sets several keys atomically."),
    kv("MSETNX", -3, true, "string", "Sets several keys only if none of them exists."),
    conn("MULTI", 1, false, "Starts a transaction."),
    kv("PERSIST", 2, true, "generic", "Removes a key's expiry."),
    kv("PEXPIRE", -3, true, "generic", "Sets a key's time to live in milliseconds."),
    kv("PEXPIREAT", -3, true, "generic", "Sets a key's expiry as a Unix time in milliseconds."),
    kv("PEXPIRETIME", 2, false, "generic", "A key's expiry as a Unix time in milliseconds."),
    conn("PING", -1, true, "Returns PONG, or the given message."),
    kv("PSETEX", 4, true, "string", "Sets a key's value and time to live in milliseconds."),
    kv("PTTL", 2, false, "generic", "A key's time to live in milliseconds."),
    conn("QUIT", -1, false, "Closes the connection."),
    kv("RENAME", 3, true, "generic", "Renames a key, replacing the destination."),
    kv("RENAMENX", 3, true, "generic", "Renames a key only if the destination does not exist."),
    conn("RESET", 1, false, "Resets the connection's state."),
    conn("SAVE", 1, false, "Takes a snapshot of the database and waits for it."),
    kv("SCAN", -2, false, "generic", "Iterates over the keys of the keyspace."),
    conn("SELECT", 2, false, "Selects a keyspace by number or by name."),
    kv("SET", -3, true, "string", "Sets a key's string value, with expiry and condition options."),
    kv("SETEX", 4, true, "string", "Sets a key's value and time to live in seconds."),
    kv("SETNX", 3, true, "string", "Sets a key's value only if the key does not exist."),
    kv("STRLEN", 2, false, "string", "Length of a key's string value."),
    conn("TIME", 1, true, "The server's time."),
    kv("TTL", 2, false, "generic", "A key's time to live in seconds."),
    kv("TYPE", 2, false, "generic", "The type of a key's value."),
    kv("UNLINK", -2, true, "generic", "Deletes keys (the same as DEL here: memory is freed at once)."),
];

/// Longest command name the index covers (longer names are unknown).
const NAME_MAX: usize = 16;

/// Commands by (name length, first letter folded to 5 bits): each bucket holds one to
/// three names, so a lookup is an index and a short case-insensitive compare. A binary
/// search over the table cost about seven `memcmp` calls per request, measured at ~4% of
/// a pipelined INCR.
static INDEX: std::sync::LazyLock<Vec<Vec<&'static Spec>>> = std::sync::LazyLock::new(|| {
    let mut index = vec![Vec::new(); (NAME_MAX + 1) * 32];
    for spec in COMMANDS {
        index[bucket(spec.name.as_bytes()).expect("command names fit the index")].push(spec);
    }
    index
});

fn bucket(name: &[u8]) -> Option<usize> {
    let first = *name.first()?;
    (name.len() <= NAME_MAX).then(|| name.len() * 32 + usize::from(first & 0x1f))
}

/// The command named `name`, in any letter case.
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    let candidates = INDEX.get(bucket(name)?)?;
    candidates.iter().copied().find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

impl Spec {
    /// Whether `args` (the name included) fit the arity.
    pub fn arity_ok(&self, args: usize) -> bool {
        let args = args as i32;
        if self.arity >= 0 { args == self.arity } else { args >= -self.arity }
    }

    /// Redis' text for a wrong number of arguments.
    pub fn arity_error(&self) -> String {
        format!("ERR wrong number of arguments for '{}' command", self.name.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_found_in_any_case() {
        assert!(COMMANDS.windows(2).all(|w| w[0].name < w[1].name), "sorted, as COMMAND lists them");
        assert_eq!(lookup(b"get").map(|s| s.name), Some("GET"));
        assert_eq!(lookup(b"HiNcRbYfLoAt").map(|s| s.name), Some("HINCRBYFLOAT"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(b"GEt\0").is_none() && lookup(b"gex").is_none() && lookup(&[b'G'; 40]).is_none());
        // Every command is found under its own name, lower-cased too.
        for spec in COMMANDS {
            assert!(std::ptr::eq(lookup(spec.name.as_bytes()).unwrap(), spec), "{}", spec.name);
            assert!(std::ptr::eq(lookup(spec.name.to_ascii_lowercase().as_bytes()).unwrap(), spec));
        }
        assert!(lookup(b"").is_none());
        let set = lookup(b"set").unwrap();
        assert!(!set.arity_ok(2) && set.arity_ok(3) && set.arity_ok(7));
        assert_eq!(set.arity_error(), "ERR wrong number of arguments for 'set' command");
    }
}
