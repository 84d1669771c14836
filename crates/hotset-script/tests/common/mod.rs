//! A fake host for the engine's tests: a few commands over an in-memory map, with Redis'
//! refusals, so scripts can be run without a server.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hotset_script::errors;
use hotset_script::{
    CallContext, DocumentCall, DocumentError, Engine, Host, Limits, LogLevel, Protocol, RunOptions, ScriptError, Tick,
    Value,
};

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Text(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
}

/// What the fake host saw.
#[derive(Default)]
pub struct FakeHost {
    pub data: BTreeMap<Vec<u8>, Entry>,
    pub calls: Vec<(Vec<Vec<u8>>, CallContext)>,
    pub wrote: bool,
    pub ticks: u32,
    /// Kill the script at this tick (SCRIPT KILL arriving), unless it wrote.
    pub kill_at_tick: Option<u32>,
    pub kill_refused: bool,
    /// Documents by namespace and key (the key as JSON text), for `hotset.*`.
    pub documents: BTreeMap<(String, String), serde_json::Value>,
    /// The document calls seen, as JSON: `{"get"|"query"|"sql": ...}`.
    pub document_calls: Vec<serde_json::Value>,
}

fn error(text: &str) -> Value {
    Value::Error(text.as_bytes().to_vec())
}

impl FakeHost {
    pub fn new() -> FakeHost {
        FakeHost::default()
    }

    fn write_command(name: &str) -> bool {
        matches!(name, "set" | "incr" | "del" | "hset" | "sadd")
    }

    fn arity(name: &str) -> Option<(usize, bool)> {
        // (count, at least) like Redis' arity: exact or minimum.
        Some(match name {
            "ping" => (1, true),
            "get" | "incr" | "hgetall" | "smembers" | "type" => (2, false),
            "set" => (3, true),
            "del" => (2, true),
            "hset" => (4, true),
            "sadd" => (3, true),
            "proto" => (2, false),
            "echo" => (2, false),
            "multi" => (1, false),
            _ => return None,
        })
    }
}

impl Host for FakeHost {
    fn call(&mut self, args: &[&[u8]], context: &CallContext) -> Value {
        self.calls.push((args.iter().map(|arg| arg.to_vec()).collect(), *context));
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        let Some((count, at_least)) = FakeHost::arity(&name) else {
            return error(errors::UNKNOWN_COMMAND);
        };
        if (at_least && args.len() < count) || (!at_least && args.len() != count) {
            return error(errors::WRONG_ARITY);
        }
        if name == "multi" {
            return error(errors::NOT_ALLOWED_FROM_SCRIPT);
        }
        if FakeHost::write_command(&name) {
            if context.read_only {
                return error(errors::WRITE_IN_READ_ONLY_SCRIPT);
            }
            self.wrote = true;
        }
        let resp3 = context.protocol == Protocol::Resp3;
        match name.as_str() {
            "ping" => Value::Simple(b"PONG".to_vec()),
            "echo" => Value::Bulk(args[1].to_vec()),
            "get" => match self.data.get(args[1]) {
                None => Value::Null,
                Some(Entry::Text(text)) => Value::Bulk(text.clone()),
                Some(_) => error("WRONGTYPE Operation against a key holding the wrong kind of value"),
            },
            "set" => {
                self.data.insert(args[1].to_vec(), Entry::Text(args[2].to_vec()));
                Value::ok()
            }
            "del" => {
                let removed = args[1..].iter().filter(|key| self.data.remove(**key).is_some()).count();
                Value::Int(removed as i64)
            }
            "incr" => {
                let current = match self.data.get(args[1]) {
                    None => 0,
                    Some(Entry::Text(text)) => {
                        match std::str::from_utf8(text).ok().and_then(|text| text.parse::<i64>().ok()) {
                            Some(number) => number,
                            None => return error("ERR value is not an integer or out of range"),
                        }
                    }
                    Some(_) => return error("WRONGTYPE Operation against a key holding the wrong kind of value"),
                };
                self.data.insert(args[1].to_vec(), Entry::Text((current + 1).to_string().into_bytes()));
                Value::Int(current + 1)
            }
            "hset" => {
                let entry = self.data.entry(args[1].to_vec()).or_insert_with(|| Entry::Hash(BTreeMap::new()));
                let Entry::Hash(hash) = entry else {
                    return error("WRONGTYPE Operation against a key holding the wrong kind of value");
                };
                let mut added = 0;
                for pair in args[2..].chunks(2) {
                    if pair.len() == 2 && hash.insert(pair[0].to_vec(), pair[1].to_vec()).is_none() {
                        added += 1;
                    }
                }
                Value::Int(added)
            }
            "hgetall" => {
                let pairs: Vec<(Value, Value)> = match self.data.get(args[1]) {
                    Some(Entry::Hash(hash)) => {
                        hash.iter().map(|(k, v)| (Value::Bulk(k.clone()), Value::Bulk(v.clone()))).collect()
                    }
                    _ => Vec::new(),
                };
                if resp3 {
                    Value::Map(pairs)
                } else {
                    Value::Array(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect())
                }
            }
            "sadd" => {
                let entry = self.data.entry(args[1].to_vec()).or_insert_with(|| Entry::Set(BTreeSet::new()));
                let Entry::Set(set) = entry else {
                    return error("WRONGTYPE Operation against a key holding the wrong kind of value");
                };
                Value::Int(args[2..].iter().filter(|member| set.insert(member.to_vec())).count() as i64)
            }
            "smembers" => {
                let members: Vec<Value> = match self.data.get(args[1]) {
                    Some(Entry::Set(set)) => set.iter().map(|member| Value::Bulk(member.clone())).collect(),
                    _ => Vec::new(),
                };
                if resp3 { Value::Set(members) } else { Value::Array(members) }
            }
            // The replies of Redis' DEBUG PROTOCOL, in the protocol asked for.
            "proto" => proto_reply(args[1], resp3),
            _ => unreachable!("every command with an arity is handled"),
        }
    }

    /// `people` holds the documents; `echo` answers the call itself (the query, or the SQL
    /// text and parameters) so tests see what the script's tables became; any other
    /// namespace is unknown.
    fn documents(&mut self, call: DocumentCall<'_>, _: &CallContext) -> Result<Vec<u8>, DocumentError> {
        let (namespace, seen) = match call {
            DocumentCall::Get { namespace, key } => (namespace, serde_json::json!({"get": key})),
            DocumentCall::Query { namespace, query } => (namespace, serde_json::json!({"query": query})),
            DocumentCall::Sql { text, parameters } => {
                ("echo", serde_json::json!({"sql": text, "parameters": parameters}))
            }
        };
        self.document_calls.push(seen.clone());
        match (namespace, call) {
            ("people", DocumentCall::Get { key, .. }) => {
                let found = self.documents.get(&("people".to_string(), key.to_string()));
                Ok(found.map_or_else(|| b"null".to_vec(), |doc| doc.to_string().into_bytes()))
            }
            ("people", _) => {
                let items: Vec<&serde_json::Value> = self.documents.values().collect();
                Ok(serde_json::json!({"items": items, "total": items.len()}).to_string().into_bytes())
            }
            ("echo", _) => Ok(seen.to_string().into_bytes()),
            (other, _) => {
                Err(DocumentError { code: "not_found".into(), message: format!("namespace '{other}' does not exist") })
            }
        }
    }

    fn tick(&mut self, _elapsed: Duration) -> Tick {
        self.ticks += 1;
        if self.kill_at_tick.is_some_and(|tick| self.ticks >= tick) {
            if self.wrote {
                self.kill_refused = true;
                return Tick::Continue;
            }
            return Tick::Kill;
        }
        Tick::Continue
    }
}

fn proto_reply(kind: &[u8], resp3: bool) -> Value {
    match (kind, resp3) {
        (b"null", true) => Value::Null,
        (b"null", false) => Value::Null,
        // Redis's DEBUG PROTOCOL double, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        (b"double", true) => Value::Double(3.141),
        (b"double", false) => Value::Bulk(b"3.141".to_vec()),
        (b"true", true) => Value::Bool(true),
        (b"true", false) => Value::Int(1),
        (b"false", true) => Value::Bool(false),
        (b"false", false) => Value::Int(0),
        (b"bignum", true) => Value::BigNumber(b"1234567999999999999999999999999999999".to_vec()),
        (b"bignum", false) => Value::Bulk(b"1234567999999999999999999999999999999".to_vec()),
        (b"verbatim", true) => Value::Verbatim { format: *b"txt", text: b"This is a verbatim\nstring".to_vec() },
        (b"verbatim", false) => Value::Bulk(b"This is a verbatim\nstring".to_vec()),
        (b"map", true) => Value::Map(vec![
            (Value::Int(0), Value::Bool(false)),
            (Value::Int(1), Value::Bool(true)),
            (Value::Int(2), Value::Bool(false)),
        ]),
        (b"map", false) => {
            Value::Array(vec![Value::Int(0), Value::Int(0), Value::Int(1), Value::Int(1), Value::Int(2), Value::Int(0)])
        }
        (b"set", true) => Value::Set(vec![Value::Int(0), Value::Int(1), Value::Int(2)]),
        (b"set", false) => Value::Array(vec![Value::Int(0), Value::Int(1), Value::Int(2)]),
        _ => error("ERR unknown protocol type"),
    }
}

pub type Logged = Arc<Mutex<Vec<(LogLevel, Vec<u8>)>>>;

pub fn engine() -> (Engine, Logged) {
    engine_with(Limits::default())
}

pub fn engine_with(limits: Limits) -> (Engine, Logged) {
    let logged: Logged = Arc::default();
    let sink = logged.clone();
    let engine = Engine::new(
        limits,
        Arc::new(move |level, message: &[u8]| sink.lock().unwrap().push((level, message.to_vec()))),
    )
    .unwrap();
    (engine, logged)
}

/// EVAL with no keys: the reply or the error's text.
pub fn eval(engine: &mut Engine, host: &mut FakeHost, body: &str) -> Result<Value, String> {
    eval_with(engine, host, body, &[], &[], RunOptions::default())
}

pub fn eval_with(
    engine: &mut Engine,
    host: &mut FakeHost,
    body: &str,
    keys: &[&str],
    args: &[&str],
    options: RunOptions,
) -> Result<Value, String> {
    let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
    engine.eval(body.as_bytes(), &keys, &args, host, options).map_err(|error: ScriptError| error.to_string())
}

/// The reply written for a client of `protocol`, as text for readable asserts.
pub fn wire(value: &Value, protocol: Protocol) -> String {
    String::from_utf8_lossy(&value.to_bytes(protocol)).into_owned()
}

pub fn bulk(text: &str) -> Value {
    Value::Bulk(text.as_bytes().to_vec())
}

pub fn sha1(text: &str) -> String {
    hotset_script::sha1_hex(text.as_bytes())
}
