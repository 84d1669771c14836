//! Redis' runtime parameters: the ones CONFIG GET reports and CONFIG SET changes, their
//! types, defaults and current values, and the mirrors the server reads on its hot paths.
//!
//! Owns: the parameter table (name, alias, type, default), parsing a value the way Redis
//! does (memory units, yes/no, enumerations, keyspace-event flags) and writing it back in
//! Redis' normal form, an all-or-nothing change of several parameters, and the atomics the
//! connections and the key-value engine read (`maxmemory`, `notify-keyspace-events`,
//! `timeout`, `proto-max-bulk-len`, `maxclients`, `tracking-table-max-keys`,
//! `busy-reply-threshold`). Never: take effect anywhere else than
//! through those mirrors, or accept a value it cannot honour: parameters fixed at start
//! (ports, the data folder, the password) are refused as immutable.
//!
//! Parameters about Redis' own encodings (`list-max-listpack-size`, `zset-max-listpack-
//! entries`...) are accepted, checked and reported: a client or test that tunes them goes
//! on working, and Hotset's own encodings do not depend on them.

use hotset_core::kv::EvictionPolicy;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

/// What values a parameter takes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    /// Bytes, with Redis' units (`100mb`, `1gb`, `5k`); reported as a plain number.
    Memory {
        min: u64,
    },
    Bool,
    Enum(&'static [&'static str]),
    /// Free text (a list of numbers such as `save`, a file name).
    Text,
    /// `notify-keyspace-events`' letters.
    Events,
    /// Fixed at start: reported, and refused by CONFIG SET.
    Immutable,
}

struct Param {
    name: &'static str,
    /// The older name Redis keeps for it (`ziplist` for `listpack`).
    alias: Option<&'static str>,
    kind: Kind,
    default: &'static str,
}

const fn p(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param { name, alias: None, kind, default }
}

const fn aliased(name: &'static str, alias: &'static str, kind: Kind, default: &'static str) -> Param {
    Param { name, alias: Some(alias), kind, default }
}

const INT: Kind = Kind::Int { min: 0, max: i32::MAX as i64 };
const ANY_INT: Kind = Kind::Int { min: i64::MIN, max: i64::MAX };

/// Sorted by name (CONFIG GET * lists them in this order).
static PARAMS: &[Param] = &[
    p("active-expire-effort", Kind::Int { min: 1, max: 10 }, "1"),
    p("activedefrag", Kind::Bool, "no"),
    p("appendfsync", Kind::Immutable, "everysec"),
    p("appendonly", Kind::Immutable, "yes"),
    p("bind", Kind::Immutable, "127.0.0.1"),
    aliased("busy-reply-threshold", "lua-time-limit", INT, "5000"),
    p("client-output-buffer-limit", Kind::Text, "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"),
    p("client-query-buffer-limit", Kind::Memory { min: 1 << 20 }, "1073741824"),
    p("daemonize", Kind::Immutable, "no"),
    p("databases", Kind::Immutable, "16"),
    p("dir", Kind::Immutable, ""),
    p("dynamic-hz", Kind::Bool, "yes"),
    aliased("hash-max-listpack-entries", "hash-max-ziplist-entries", INT, "128"),
    aliased("hash-max-listpack-value", "hash-max-ziplist-value", INT, "64"),
    p("hll-sparse-max-bytes", Kind::Memory { min: 0 }, "3000"),
    p("hz", Kind::Int { min: 0, max: i32::MAX as i64 }, "10"),
    p("latency-monitor-threshold", Kind::Int { min: 0, max: i64::MAX }, "0"),
    p("lazyfree-lazy-eviction", Kind::Bool, "no"),
    p("lazyfree-lazy-expire", Kind::Bool, "no"),
    p("lazyfree-lazy-server-del", Kind::Bool, "no"),
    p("lazyfree-lazy-user-del", Kind::Bool, "no"),
    p("lazyfree-lazy-user-flush", Kind::Bool, "no"),
    p("lfu-decay-time", INT, "1"),
    p("lfu-log-factor", INT, "10"),
    p("list-compress-depth", INT, "0"),
    aliased(
        "list-max-listpack-size",
        "list-max-ziplist-size",
        Kind::Int { min: i32::MIN as i64, max: i32::MAX as i64 },
        "-2",
    ),
    p("loglevel", Kind::Enum(&["debug", "verbose", "notice", "warning"]), "notice"),
    p("maxclients", Kind::Int { min: 1, max: i32::MAX as i64 }, "10000"),
    p("maxmemory", Kind::Memory { min: 0 }, "0"),
    p("maxmemory-clients", Kind::Memory { min: 0 }, "0"),
    p("maxmemory-eviction-tenacity", Kind::Int { min: 0, max: 100 }, "10"),
    p("maxmemory-policy", Kind::Enum(&EvictionPolicy::NAMES), "noeviction"),
    p("maxmemory-samples", Kind::Int { min: 1, max: i32::MAX as i64 }, "5"),
    p("min-replicas-max-lag", INT, "10"),
    p("min-replicas-to-write", INT, "0"),
    p("notify-keyspace-events", Kind::Events, ""),
    p("port", Kind::Immutable, "6379"),
    p("proto-max-bulk-len", Kind::Memory { min: 1 << 20 }, "536870912"),
    p("rdb-key-save-delay", ANY_INT, "0"),
    p("replica-read-only", Kind::Bool, "yes"),
    p("replica-serve-stale-data", Kind::Bool, "yes"),
    p("requirepass", Kind::Immutable, ""),
    p("save", Kind::Text, ""),
    p("set-max-intset-entries", INT, "512"),
    p("set-max-listpack-entries", INT, "128"),
    p("set-max-listpack-value", INT, "64"),
    p("slowlog-log-slower-than", ANY_INT, "10000"),
    p("slowlog-max-len", Kind::Int { min: 0, max: i64::MAX }, "128"),
    p("stream-node-max-bytes", Kind::Memory { min: 0 }, "4096"),
    p("stream-node-max-entries", INT, "100"),
    p("tcp-keepalive", INT, "300"),
    p("timeout", INT, "0"),
    p("tracking-table-max-keys", Kind::Int { min: 0, max: i64::MAX }, "1000000"),
    aliased("zset-max-listpack-entries", "zset-max-ziplist-entries", INT, "128"),
    aliased("zset-max-listpack-value", "zset-max-ziplist-value", INT, "64"),
];

/// Keyspace-event flags (Redis' letters), as `notify_flags` holds them.
pub mod events {
    pub const KEYSPACE: u32 = 1 << 0; // K
    pub const KEYEVENT: u32 = 1 << 1; // E
    pub const GENERIC: u32 = 1 << 2; // g
    pub const STRING: u32 = 1 << 3; // $
    pub const LIST: u32 = 1 << 4; // l
    pub const SET: u32 = 1 << 5; // s
    pub const HASH: u32 = 1 << 6; // h
    pub const ZSET: u32 = 1 << 7; // z
    pub const EXPIRED: u32 = 1 << 8; // x
    pub const EVICTED: u32 = 1 << 9; // e
    pub const STREAM: u32 = 1 << 10; // t
    pub const KEY_MISS: u32 = 1 << 11; // m
    pub const MODULE: u32 = 1 << 12; // d
    pub const NEW: u32 = 1 << 13; // n
    /// `A`: every class but key misses and new keys.
    pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
    /// The class letters in the order Redis writes them.
    pub(super) const LETTERS: [(char, u32); 11] = [
        ('g', GENERIC),
        ('$', STRING),
        ('l', LIST),
        ('s', SET),
        ('h', HASH),
        ('z', ZSET),
        ('x', EXPIRED),
        ('e', EVICTED),
        ('t', STREAM),
        ('d', MODULE),
        ('n', NEW),
    ];
}

fn parse_events(text: &str) -> Option<u32> {
    let mut flags = 0;
    for c in text.chars() {
        flags |= match c {
            'A' => events::ALL,
            'K' => events::KEYSPACE,
            'E' => events::KEYEVENT,
            'm' => events::KEY_MISS,
            c => events::LETTERS.iter().find(|(letter, _)| *letter == c)?.1,
        };
    }
    Some(flags)
}

fn format_events(flags: u32) -> String {
    let mut text = String::new();
    if flags & events::ALL == events::ALL {
        text.push('A');
        if flags & events::NEW != 0 {
            text.push('n');
        }
    } else {
        text.extend(events::LETTERS.iter().filter(|(_, bit)| flags & bit != 0).map(|(c, _)| *c));
    }
    for (c, bit) in [('K', events::KEYSPACE), ('E', events::KEYEVENT), ('m', events::KEY_MISS)] {
        if flags & bit != 0 {
            text.push(c);
        }
    }
    text
}

/// `100mb`, `1gb`, `5k`, `1024`: bytes (Redis' units: `k`/`m`/`g` are powers of 1000,
/// `kb`/`mb`/`gb` of 1024).
pub fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let digits_end = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits_end);
    let multiplier: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(multiplier)
}

/// Why a value was refused (the text after Redis' "CONFIG SET failed ... - ").
fn check(param: &Param, value: &str) -> Result<String, String> {
    match param.kind {
        Kind::Int { min, max } => {
            let n: i64 = value.parse().map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if n < min || n > max {
                return Err(format!("argument must be between {min} and {max} inclusive"));
            }
            Ok(n.to_string())
        }
        Kind::Memory { min } => {
            let n = parse_memory(value).ok_or("argument must be a memory value")?;
            if n < min {
                return Err(format!("argument must be between {min} and {} inclusive", i64::MAX));
            }
            Ok(n.to_string())
        }
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Enum(options) => {
            let lower = value.to_ascii_lowercase();
            options
                .iter()
                .find(|o| **o == lower)
                .map(|o| o.to_string())
                .ok_or_else(|| format!("argument(s) must be one of the following: {}", options.join(", ")))
        }
        Kind::Text => Ok(value.to_string()),
        Kind::Events => parse_events(value)
            .map(format_events)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        Kind::Immutable => Err("can't set immutable config".into()),
    }
}

/// The current values, and the mirrors read on hot paths.
pub struct Params {
    values: Mutex<BTreeMap<&'static str, String>>,
    /// `maxmemory` in bytes (0: no limit).
    pub maxmemory: AtomicU64,
    /// `notify-keyspace-events` as `events` bits (shared with the engine's event
    /// listener, `notify.rs`).
    pub notify_flags: std::sync::Arc<AtomicU32>,
    /// `timeout`: seconds a client may stay idle (0: forever).
    pub timeout_secs: AtomicU64,
    /// `proto-max-bulk-len`: the longest bulk string a request may carry.
    pub proto_max_bulk_len: AtomicU64,
    /// `maxclients`.
    pub maxclients: AtomicU64,
    /// `maxmemory-policy`, as `EvictionPolicy as u8` (read with `eviction_policy`).
    eviction: AtomicU8,
    /// `maxmemory-samples`.
    pub eviction_samples: AtomicU64,
    /// `tracking-table-max-keys` (shared with client-side caching, `tracking.rs`).
    pub tracking_max_keys: std::sync::Arc<AtomicU64>,
    /// `busy-reply-threshold` (`lua-time-limit`) in milliseconds: how long a script runs
    /// before other clients are answered `-BUSY` (read with `busy_reply_threshold`).
    busy_reply_ms: AtomicU64,
}

/// CONFIG SET's refusal, in Redis' words.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

impl Params {
    /// The defaults, with what the server's start-up configuration fixes (`fixed`:
    /// pairs of a parameter name and its value, for immutable ones and start values).
    pub fn new(fixed: &[(&'static str, String)]) -> Params {
        let mut values: BTreeMap<&'static str, String> =
            PARAMS.iter().map(|param| (param.name, param.default.to_string())).collect();
        for (name, value) in fixed {
            let param = find(name).unwrap_or_else(|| panic!("{name} is a parameter"));
            values.insert(param.name, value.clone());
        }
        let params = Params {
            values: Mutex::new(BTreeMap::new()),
            maxmemory: AtomicU64::new(0),
            notify_flags: std::sync::Arc::new(AtomicU32::new(0)),
            timeout_secs: AtomicU64::new(0),
            proto_max_bulk_len: AtomicU64::new(0),
            maxclients: AtomicU64::new(0),
            eviction: AtomicU8::new(0),
            eviction_samples: AtomicU64::new(5),
            tracking_max_keys: std::sync::Arc::new(AtomicU64::new(0)),
            busy_reply_ms: AtomicU64::new(0),
        };
        for (name, value) in &values {
            params.mirror(name, value);
        }
        *params.values.lock() = values;
        params
    }

    /// `maxmemory-policy`.
    pub fn eviction_policy(&self) -> EvictionPolicy {
        let stored = self.eviction.load(Ordering::Relaxed);
        EvictionPolicy::ALL.into_iter().find(|policy| *policy as u8 == stored).unwrap_or_default()
    }

    /// `busy-reply-threshold`.
    pub fn busy_reply_threshold(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.busy_reply_ms.load(Ordering::Relaxed))
    }

    /// CONFIG GET: every parameter (aliases too) whose name matches one of `patterns`.
    pub fn get(&self, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
        let values = self.values.lock();
        let mut found = BTreeMap::new();
        for param in PARAMS {
            for name in std::iter::once(param.name).chain(param.alias) {
                if patterns
                    .iter()
                    .any(|pattern| hotset_core::kv::glob_match(&pattern.to_ascii_lowercase(), name.as_bytes()))
                {
                    found.insert(name, values[param.name].clone());
                }
            }
        }
        found.into_iter().collect()
    }

    /// The current value of one parameter.
    pub fn value(&self, name: &str) -> Option<String> {
        let param = find(name)?;
        self.values.lock().get(param.name).cloned()
    }

    /// CONFIG SET name value [name value ...]: all of them or none.
    pub fn set(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), Refused> {
        let mut checked = Vec::with_capacity(pairs.len());
        for (name, value) in pairs {
            let text = String::from_utf8_lossy(name).to_ascii_lowercase();
            let Some(param) = find(&text) else {
                return Err(Refused(format!("ERR Unknown option or number of arguments for CONFIG SET - '{text}'")));
            };
            if checked.iter().any(|(p, _): &(&Param, String)| p.name == param.name) {
                return Err(Refused(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{text}') - duplicate parameter"
                )));
            }
            let value = check(param, &String::from_utf8_lossy(value)).map_err(|why| {
                Refused(format!("ERR CONFIG SET failed (possibly related to argument '{text}') - {why}"))
            })?;
            checked.push((param, value));
        }
        let mut values = self.values.lock();
        for (param, value) in checked {
            self.mirror(param.name, &value);
            values.insert(param.name, value);
        }
        Ok(())
    }

    /// `set` for owned pairs (the config file's `[redis]` table).
    pub fn set_all(&self, pairs: &[(String, String)]) -> Result<(), Refused> {
        let borrowed: Vec<(&[u8], &[u8])> = pairs.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())).collect();
        self.set(&borrowed)
    }

    /// Parameters whose value differs from Redis' default (what CONFIG REWRITE keeps).
    pub fn changed(&self) -> Vec<(&'static str, String)> {
        let values = self.values.lock();
        PARAMS
            .iter()
            .filter(|param| !matches!(param.kind, Kind::Immutable) && values[param.name] != param.default)
            .map(|param| (param.name, values[param.name].clone()))
            .collect()
    }

    fn mirror(&self, name: &str, value: &str) {
        let number = || value.parse::<u64>().unwrap_or(0);
        match name {
            "maxmemory" => self.maxmemory.store(number(), Ordering::Relaxed),
            "notify-keyspace-events" => self.notify_flags.store(parse_events(value).unwrap_or(0), Ordering::Relaxed),
            "timeout" => self.timeout_secs.store(number(), Ordering::Relaxed),
            "proto-max-bulk-len" => self.proto_max_bulk_len.store(number(), Ordering::Relaxed),
            "maxclients" => self.maxclients.store(number(), Ordering::Relaxed),
            // Server-wide in the engine, as in Redis: read by every XADD.
            "stream-node-max-entries" => hotset_core::kv::set_node_limits(Some(number() as usize), None),
            "stream-node-max-bytes" => hotset_core::kv::set_node_limits(None, Some(number() as usize)),
            "maxmemory-policy" => {
                let policy = EvictionPolicy::parse(value).unwrap_or_default();
                self.eviction.store(policy as u8, Ordering::Relaxed);
                hotset_core::kv::set_lfu_mode(policy.is_lfu());
            }
            "maxmemory-samples" => self.eviction_samples.store(number(), Ordering::Relaxed),
            "tracking-table-max-keys" => self.tracking_max_keys.store(number(), Ordering::Relaxed),
            "busy-reply-threshold" => self.busy_reply_ms.store(number(), Ordering::Relaxed),
            "lfu-log-factor" => hotset_core::kv::set_lfu_log_factor(number().min(u64::from(u32::MAX)) as u32),
            "lfu-decay-time" => hotset_core::kv::set_lfu_decay_time(number().min(u64::from(u32::MAX)) as u32),
            _ => {}
        }
    }
}

fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|param| {
        param.name.eq_ignore_ascii_case(name) || param.alias.is_some_and(|a| a.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_every_default_is_valid() {
        assert!(PARAMS.windows(2).all(|w| w[0].name < w[1].name));
        for param in PARAMS {
            if !matches!(param.kind, Kind::Immutable) {
                assert_eq!(check(param, param.default).as_deref(), Ok(param.default), "{}", param.name);
            }
        }
    }

    #[test]
    fn values_are_parsed_and_reported_in_redis_form() {
        let params = Params::new(&[("port", "7379".into())]);
        params.set(&[(b"maxmemory", b"100mb"), (b"notify-keyspace-events", b"KA")]).unwrap();
        assert_eq!(params.value("maxmemory").as_deref(), Some("104857600"));
        assert_eq!(params.maxmemory.load(Ordering::Relaxed), 100 << 20);
        assert_eq!(params.value("notify-keyspace-events").as_deref(), Some("AK"));
        params.set(&[(b"notify-keyspace-events", b"$lshzxeKE")]).unwrap();
        assert_eq!(params.value("notify-keyspace-events").as_deref(), Some("$lshzxeKE"));
        params.set(&[(b"hash-max-ziplist-entries", b"5")]).unwrap();
        assert_eq!(
            params.get(&[b"hash-max-*-entries"]),
            [("hash-max-listpack-entries", "5".into()), ("hash-max-ziplist-entries", "5".into())],
            "an alias and its name share one value"
        );
        assert_eq!(params.value("port").as_deref(), Some("7379"));
    }

    #[test]
    fn a_refused_value_changes_nothing() {
        let params = Params::new(&[]);
        let refused = params.set(&[(b"maxmemory", b"1mb"), (b"maxmemory-policy", b"sometimes")]).unwrap_err();
        assert!(
            refused.0.starts_with("ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy')"),
            "{refused:?}"
        );
        assert_eq!(params.value("maxmemory").as_deref(), Some("0"), "all or nothing");
        assert!(params.set(&[(b"port", b"1")]).unwrap_err().0.contains("can't set immutable config"));
        assert!(params.set(&[(b"nosuch", b"1")]).unwrap_err().0.contains("Unknown option"));
        assert!(params.set(&[(b"notify-keyspace-events", b"Q")]).is_err());
        assert!(params.set(&[(b"maxmemory", b"12xb")]).is_err());
        assert!(params.set(&[(b"hz", b"1"), (b"hz", b"2")]).is_err());
    }
}
