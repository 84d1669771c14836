//! A load driver for a Redis-protocol server whose commands vary per request, which
//! redis-benchmark cannot do (it repeats one command line): `bench/procedure_search.py`
//! drives Hotset's procedure calls with it, one command of a list after another.
//!
//! Owns: the `resp_drive` binary of `hotset-bench`. Each of `--connections` threads opens
//! one connection (`hotset-client`'s, RESP2, Nagle off) and sends one command, waits for
//! its reply, and sends the next (pipelining 1); thread `i` starts at command
//! `i * commands / connections` of the list and cycles through it, so the connections ask
//! different things at once. A warm-up of `--warmup` seconds runs first and is not
//! counted. Never: counts a request that failed (an error reply or a broken connection
//! stops the run with the server's words, so a wrong command cannot pass as a fast one),
//! or sleeps to wait for another thread.
//!
//! usage: resp_drive --addr HOST:PORT --commands FILE [--connections 8] [--seconds 10]
//!                   [--warmup 1]
//!   FILE: one command a line, as a JSON array of its arguments (strings or numbers):
//!   `["FCALL_RO", "search_profiles", "0", "aj", "ni", 0, 20]`
//!
//! Prints one JSON line: requests, seconds, requests_s, mean_us, p50_us, p99_us, and
//! reply_bytes_mean (the mean size of a reply's payload, to tell a page from an empty one).

use hotset_client::{Connection, Reply, Target};
use serde_json::{Value, json};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What one connection measured: each counted request's latency in nanoseconds and the
/// payload bytes of its replies.
struct Measured {
    latencies_ns: Vec<u64>,
    reply_bytes: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| -> Option<&str> {
        args.chunks(2).find(|pair| pair[0] == name).and_then(|pair| pair.get(1)).map(String::as_str)
    };
    let number = |name: &str, default: f64| -> f64 {
        value(name).map_or(default, |text| text.parse().unwrap_or_else(|_| panic!("{name} {text}: not a number")))
    };
    let (Some(addr), Some(file)) = (value("--addr"), value("--commands")) else {
        eprintln!("usage: resp_drive --addr HOST:PORT --commands FILE [--connections 8] [--seconds 10] [--warmup 1]");
        std::process::exit(2);
    };
    let connections = number("--connections", 8.0) as usize;
    assert!(connections >= 1, "--connections must be at least 1");
    let commands = read_commands(file);
    let (seconds, warmup) = (number("--seconds", 10.0), number("--warmup", 1.0));
    let measured =
        drive(addr, &commands, connections, Duration::from_secs_f64(warmup), Duration::from_secs_f64(seconds));
    println!("{}", serde_json::to_string(&report(measured, seconds)).expect("a report serialises"));
}

/// The commands of FILE, each as its arguments' bytes.
fn read_commands(file: &str) -> Vec<Vec<Vec<u8>>> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {file}: {e}"));
    let commands: Vec<Vec<Vec<u8>>> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let arguments: Vec<Value> =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{file}: {line:?} is not a JSON array: {e}"));
            arguments
                .into_iter()
                .map(|argument| match argument {
                    Value::String(text) => text.into_bytes(),
                    other => other.to_string().into_bytes(),
                })
                .collect()
        })
        .collect();
    assert!(!commands.is_empty(), "{file} holds no command");
    assert!(commands.iter().all(|command| !command.is_empty()), "{file} holds an empty command");
    commands
}

/// Runs every connection's loop on its own thread; all start timing together, after the
/// warm-up, and stop at the same deadline.
fn drive(
    addr: &str,
    commands: &[Vec<Vec<u8>>],
    connections: usize,
    warmup: Duration,
    seconds: Duration,
) -> Vec<Measured> {
    let ready = Barrier::new(connections + 1);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..connections)
            .map(|i| {
                let ready = &ready;
                scope.spawn(move || {
                    let target =
                        Target { addr, password: None, timeout: Some(Duration::from_secs(60)), timeout_hint: "" };
                    let mut connection =
                        Connection::connect(&target).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
                    ready.wait();
                    let start = i * commands.len() / connections;
                    let timed_from = Instant::now() + warmup;
                    run(&mut connection, commands, start, timed_from, timed_from + seconds)
                })
            })
            .collect();
        ready.wait();
        threads.into_iter().map(|thread| thread.join().expect("a connection's thread panicked")).collect()
    })
}

/// One connection's loop: a command, its reply, the next; counts what ends after
/// `timed_from` and stops at `deadline`.
fn run(
    connection: &mut Connection,
    commands: &[Vec<Vec<u8>>],
    start: usize,
    timed_from: Instant,
    deadline: Instant,
) -> Measured {
    let mut measured = Measured { latencies_ns: Vec::with_capacity(1 << 16), reply_bytes: 0 };
    let mut arguments: Vec<&[u8]> = Vec::new();
    for command in commands.iter().cycle().skip(start) {
        arguments.clear();
        arguments.extend(command.iter().map(Vec::as_slice));
        let sent = Instant::now();
        if sent >= deadline {
            break;
        }
        let reply = connection.call(&arguments).unwrap_or_else(|e| {
            let shown: Vec<String> = command.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            panic!("{shown:?}: {e}")
        });
        let answered = Instant::now();
        if sent >= timed_from {
            measured.latencies_ns.push((answered - sent).as_nanos() as u64);
            measured.reply_bytes += payload_bytes(&reply) as u64;
        }
    }
    measured
}

/// The bytes of a reply's strings, nested arrays included.
fn payload_bytes(reply: &Reply) -> usize {
    match reply {
        Reply::Bulk(bytes) => bytes.len(),
        Reply::Status(text) => text.len(),
        Reply::Int(_) => 8,
        Reply::Nil => 0,
        Reply::Array(items) => items.iter().map(payload_bytes).sum(),
    }
}

fn report(measured: Vec<Measured>, seconds: f64) -> Value {
    let reply_bytes: u64 = measured.iter().map(|m| m.reply_bytes).sum();
    let mut latencies: Vec<u64> = measured.into_iter().flat_map(|m| m.latencies_ns).collect();
    assert!(!latencies.is_empty(), "no request finished in the timed window");
    latencies.sort_unstable();
    let requests = latencies.len();
    let quantile_us = |q: f64| latencies[((requests - 1) as f64 * q).round() as usize] as f64 / 1000.0;
    let mean_us = latencies.iter().sum::<u64>() as f64 / requests as f64 / 1000.0;
    let round = |x: f64| (x * 100.0).round() / 100.0;
    json!({
        "requests": requests,
        "seconds": seconds,
        "requests_s": round(requests as f64 / seconds),
        "mean_us": round(mean_us),
        "p50_us": round(quantile_us(0.50)),
        "p99_us": round(quantile_us(0.99)),
        "reply_bytes_mean": round(reply_bytes as f64 / requests as f64),
    })
}
