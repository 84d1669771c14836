//! Durability benchmarks for `hotset-storage` (issue 3): acknowledged writes under each
//! fsync policy (what group commit buys), recovery from the log and from a snapshot, and
//! the latency readers and writers see while snapshots run. Each subcommand prints one
//! JSON line last, like the other runners, so `../shared/bench/median_runs.py` can take the
//! median of several runs; `bench/run_durable.py` runs them side by side with Redis.
//!
//! Owns: the `durable` binary of `hotset-bench`, its temporary data folders (created under
//! `--dir`, default the system temp folder, and removed when the subcommand ends), the
//! synthetic catalogue generator and the latency histogram. Never: changes the storage
//! code's options beyond the fsync policy and switching off automatic snapshots (so the
//! figures are the shipped defaults' otherwise), or sleeps to wait for another thread.
//!
//! The stall benchmark runs five phases of S seconds on one loaded store, 1 reader (get by
//! random key, then a page-of-10 query) and 1 writer (upsert of random documents) each:
//! `baseline`; `snapshots` (a third thread takes snapshots back to back); `cpu_control`
//! (a third thread only burns CPU, to tell scheduling on 2 cores from snapshot effects);
//! and `baseline_writer_elsewhere`, `snapshots_writer_elsewhere`, where the writer upserts
//! into a second namespace of the same schema, so the reader and the writer do not
//! contend for one namespace's lock and what is left is the snapshot's own effect.
//!
//! usage:
//!   durable writes --writers N --seconds S [--fsync always|periodic|never]
//!                  [--data ITEMS.jsonl] [--keys K] [--dir D]
//!   durable recovery --data USERS.jsonl [--dir D]
//!   durable stall --data USERS.jsonl|ITEMS.jsonl --seconds S [--dir D]
//!   durable open --dir D --namespace NS --expect DOCS   (one recovery in a fresh process;
//!                [--keyspace K --expect-keys N]         `recovery` runs it as a child)
//!   durable recovery-mixed --data USERS.jsonl [--keys 1000000] [--runs 3] [--dir D]
//!
//! `recovery-mixed` (issue 15) loads the user profiles into `users` with the four indexes
//! of `bench/profile_search.py` (id pk, first_name, last_name, first_name+last_name, the
//! strings utf8_ci) and `--keys` string keys `key:NNNNNNN` into keyspace `0` (20-100
//! byte values, as SET writes them), one record per document and per key, from two
//! threads at once so the log interleaves them as a server's would. It then times `--runs`
//! recoveries in fresh processes from the log alone, takes a snapshot, and times as many
//! from the snapshot; each child checks the document and key counts and every 997th key's
//! value, and fails otherwise.

/// The allocator a Hotset server links (glibc malloc spends much of a bulk load in
/// `malloc_consolidate` and cross-arena frees).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use hotset_core::kv::{KvOps, SetOptions};
use hotset_core::query::{Op, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind};
use hotset_storage::{FsyncPolicy, Store, StoreOptions};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        eprintln!("usage: durable writes|recovery|stall|open [flags] (see the file's doc comment)");
        std::process::exit(2);
    };
    let flags = Flags(&args[1..]);
    let report = match command.as_str() {
        "writes" => writes(&flags),
        "recovery" => recovery(&flags),
        "stall" => stall(&flags),
        "open" => open_once(&flags),
        "recovery-mixed" => recovery_mixed(&flags),
        other => {
            eprintln!("unknown subcommand {other}; expected writes, recovery, stall or open");
            std::process::exit(2);
        }
    };
    println!("{}", serde_json::to_string(&report).expect("a report serialises"));
}

/// `--name value` flags.
struct Flags<'a>(&'a [String]);

impl Flags<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().position(|a| a == name).and_then(|i| self.0.get(i + 1)).map(String::as_str)
    }

    fn parse<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        match self.get(name) {
            None => default,
            Some(text) => text.parse().unwrap_or_else(|_| panic!("{name} {text}: not a valid value")),
        }
    }

    fn required(&self, name: &str) -> &str {
        self.get(name).unwrap_or_else(|| panic!("{name} is required"))
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `VmRSS` and `VmHWM` (peak) of this process, in MB.
fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        (kb / 1024.0 * 10.0).round() / 10.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A data folder for one run, removed on drop (also when the run panics).
struct TempDir(PathBuf);

impl TempDir {
    fn new(flags: &Flags, tag: &str) -> TempDir {
        let base = flags.get("--dir").map_or_else(std::env::temp_dir, PathBuf::from);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = base.join(format!("hotset-durable-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("HOTSET_BENCH_KEEP").is_some() {
            eprintln!("kept {} (HOTSET_BENCH_KEEP is set)", self.0.display());
            return;
        }
        if let Err(error) = std::fs::remove_dir_all(&self.0) {
            eprintln!("warning: could not remove {}: {error}", self.0.display());
        }
    }
}

/// Bytes of the regular files directly in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
        })
        .unwrap_or(0)
}

/// The store as the benchmarks open it: the given fsync policy, and snapshots only when a
/// benchmark asks for one (so a background snapshot never lands in a measurement).
fn store_options(dir: &Path, fsync: FsyncPolicy) -> StoreOptions {
    let mut options = StoreOptions::new(dir);
    options.fsync = fsync;
    options.snapshot_log_bytes = u64::MAX;
    options.snapshot_interval = None;
    options
}

fn fsync_policy(name: &str) -> FsyncPolicy {
    match name {
        "always" => FsyncPolicy::Always,
        "periodic" => FsyncPolicy::default(),
        "never" => FsyncPolicy::Never,
        other => panic!("--fsync {other}: expected always, periodic or never"),
    }
}

/// The catalogue's indexes, as `main.rs` declares them.
fn item_indexes() -> Vec<IndexDef> {
    vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::hash("name", FieldType::String),
        IndexDef::tree("year", FieldType::Int),
    ]
}

/// The user profiles' indexes, as `main.rs` declares them.
fn user_indexes() -> Vec<IndexDef> {
    vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String)
            .collate(Collation::Utf8Ci),
    ]
}

/// Which shared data set a JSONL file holds: `("users", indexes)` or `("items", indexes)`.
fn kind_of(lines: &[String]) -> (&'static str, Vec<IndexDef>) {
    let first: Value = serde_json::from_str(lines.first().expect("the data set is not empty")).expect("JSON line");
    if first.get("first_name").is_some() { ("users", user_indexes()) } else { ("items", item_indexes()) }
}

fn read_lines(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    text.lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

/// Upserts every line, one call each (the way a client loads data); returns the seconds.
fn load(db: &Database, namespace: &str, lines: &[String]) -> f64 {
    let start = Instant::now();
    for line in lines {
        db.upsert_json(namespace, line.as_bytes()).expect("data set documents are valid");
    }
    start.elapsed().as_secs_f64()
}

/// SplitMix64: a small seeded generator, so runs upsert the same sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}

/// Catalogue documents shaped like `gen_dataset.py items` (pseudo-word dictionary of 100k
/// words, ~1000 two-word names, year 2000–2050, 50-word description; ~490 bytes), from
/// this file's generator rather than Python's, so not byte-identical to the shared set.
mod catalogue {
    use super::Rng;

    const CONSONANTS: &[u8] = b"bcdfghjklmnprstvwz";
    const VOWELS: &[u8] = b"aeiou";
    const CLUSTERS: &[&str] = &["br", "ch", "cl", "dr", "fl", "gr", "kr", "pl", "pr", "sh", "st", "th", "tr", "qu"];

    fn word(rng: &mut Rng, min_syllables: u64, max_syllables: u64) -> String {
        let mut out = String::new();
        for i in 0..rng.range(min_syllables, max_syllables) {
            if i > 0 || rng.below(100) < 85 {
                let onsets = CONSONANTS.len() + CLUSTERS.len();
                let pick = rng.below(onsets);
                match pick.checked_sub(CONSONANTS.len()) {
                    None => out.push(CONSONANTS[pick] as char),
                    Some(cluster) => out.push_str(CLUSTERS[cluster]),
                }
            }
            out.push(VOWELS[rng.below(VOWELS.len())] as char);
        }
        if rng.below(100) < 35 {
            out.push(CONSONANTS[rng.below(CONSONANTS.len())] as char);
        }
        out
    }

    /// `versions * keys` JSON lines: `versions` different documents for each id in `0..keys`,
    /// in the order id 0..keys for version 0, then for version 1, and so on.
    pub fn documents(keys: usize, versions: usize, seed: u64) -> Vec<String> {
        let mut rng = Rng(seed);
        let dictionary: Vec<String> = (0..100_000).map(|_| word(&mut rng, 2, 4)).collect();
        let names: Vec<String> =
            (0..1000).map(|_| format!("{} {}", word(&mut rng, 2, 3), word(&mut rng, 1, 2))).collect();
        let mut lines = Vec::with_capacity(keys * versions);
        for _ in 0..versions {
            for id in 0..keys {
                let description: Vec<&str> =
                    (0..50).map(|_| dictionary[rng.below(dictionary.len())].as_str()).collect();
                let doc = serde_json::json!({
                    "id": id,
                    "name": names[rng.below(names.len())],
                    "year": rng.range(2000, 2050),
                    "description": description.join(" "),
                });
                lines.push(doc.to_string());
            }
        }
        lines
    }
}

/// Log-linear latency histogram over nanoseconds: 32 buckets per power of two, so a
/// percentile is off by at most ~3%; the maximum is exact.
#[derive(Clone)]
struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;

impl Histogram {
    fn new() -> Histogram {
        Histogram { counts: vec![0; (64 - SUB_BITS as usize + 1) * SUB], total: 0, max: 0 }
    }

    fn bucket(nanos: u64) -> usize {
        let top = 63 - nanos.max(1).leading_zeros();
        if top < SUB_BITS {
            return nanos as usize;
        }
        let shift = top - SUB_BITS;
        ((shift as usize + 1) << SUB_BITS) + ((nanos >> shift) as usize & (SUB - 1))
    }

    /// The middle of a bucket's range, in nanoseconds.
    fn middle(bucket: usize) -> f64 {
        if bucket < 2 * SUB {
            return bucket as f64;
        }
        let shift = (bucket >> SUB_BITS) - 1;
        let low = ((SUB + (bucket & (SUB - 1))) as u64) << shift;
        low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
    }

    fn record(&mut self, elapsed: Duration) {
        let nanos = elapsed.as_nanos().min(u64::MAX as u128) as u64;
        self.counts[Self::bucket(nanos)] += 1;
        self.total += 1;
        self.max = self.max.max(nanos);
    }

    fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }

    /// The `q` quantile (0 < q <= 1) in µs.
    fn quantile_us(&self, q: f64) -> f64 {
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total.max(1));
        let mut seen = 0;
        for (bucket, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return micros(Self::middle(bucket).min(self.max as f64));
            }
        }
        0.0
    }

    fn summary(&self) -> Value {
        json!({
            "ops": self.total,
            "p50_us": self.quantile_us(0.50),
            "p99_us": self.quantile_us(0.99),
            "p999_us": self.quantile_us(0.999),
            "max_us": micros(self.max as f64),
        })
    }
}

/// Nanoseconds as µs with one decimal.
fn micros(nanos: f64) -> f64 {
    (nanos / 100.0).round() / 10.0
}

/// Acknowledged upserts from N threads for S seconds, under one fsync policy.
fn writes(flags: &Flags) -> Value {
    let writers: usize = flags.parse("--writers", 1);
    let seconds: f64 = flags.parse("--seconds", 5.0);
    let policy_name = flags.get("--fsync").unwrap_or("always");
    let policy = fsync_policy(policy_name);
    assert!(writers >= 1, "--writers is at least 1");
    // The documents written: two versions of each of `keys` catalogue documents, so every
    // timed upsert replaces a document with a different one (with --data, the file's lines,
    // each replacing itself).
    let (pool, keys, source) = match flags.get("--data") {
        Some(path) => {
            let lines = read_lines(path);
            let keys = lines.len();
            (lines, keys, path.to_string())
        }
        None => {
            let keys: usize = flags.parse("--keys", 10_000);
            (catalogue::documents(keys, 2, 42), keys, "synthetic catalogue".into())
        }
    };
    let doc_bytes_avg = pool.iter().map(String::len).sum::<usize>() as f64 / pool.len() as f64;
    let dir = TempDir::new(flags, "writes");
    let store = Store::open(store_options(&dir.0, policy)).expect("open the store");
    store.create_namespace("items", item_indexes()).expect("schema");
    // Preloaded in transactions of 1000 (one log record each), not timed.
    for chunk in pool[..keys].chunks(1000) {
        let mut tx = store.transaction("items").expect("namespace");
        for line in chunk {
            tx.upsert(serde_json::from_str(line).expect("JSON line")).expect("valid document");
        }
        tx.commit().expect("preload");
    }
    let before = store.wal_stats();
    let barrier = Barrier::new(writers + 1);
    let (histograms, elapsed) = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..writers)
            .map(|w| {
                let (store, pool, barrier) = (&store, &pool, &barrier);
                spawn(scope, format!("bench-writer-{w}"), move || {
                    let mut histogram = Histogram::new();
                    let mut at = w * pool.len() / writers;
                    barrier.wait();
                    let end = Instant::now() + Duration::from_secs_f64(seconds);
                    loop {
                        let line = &pool[at];
                        at = (at + 1) % pool.len();
                        let start = Instant::now();
                        store.upsert_json("items", line.as_bytes()).expect("acknowledged upsert");
                        let done = Instant::now();
                        histogram.record(done - start);
                        if done >= end {
                            return histogram;
                        }
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let histograms: Vec<Histogram> = threads.into_iter().map(|t| t.join().expect("writer")).collect();
        (histograms, start.elapsed().as_secs_f64())
    });
    let after = store.wal_stats();
    let mut all = Histogram::new();
    for histogram in &histograms {
        all.merge(histogram);
    }
    let per_writer: Vec<u64> = histograms.iter().map(|h| h.total).collect();
    let fsyncs = after.fsyncs - before.fsyncs;
    let batches = after.batches - before.batches;
    let ops = all.total;
    store.close().expect("close");
    let mut report = json!({
        "bench": "durable_writes",
        "writers": writers,
        "fsync": policy_name,
        "seconds": round3(elapsed),
        "source": source,
        "keys": keys,
        "doc_bytes_avg": doc_bytes_avg.round(),
        "ops": ops,
        "ops_s": (ops as f64 / elapsed).round(),
        "fsyncs": fsyncs,
        "batches": batches,
        "records_per_fsync": if fsyncs > 0 { round3(ops as f64 / fsyncs as f64) } else { 0.0 },
        "records_per_batch": if batches > 0 { round3(ops as f64 / batches as f64) } else { 0.0 },
        "log_bytes": after.bytes_written - before.bytes_written,
        "ops_min_writer": per_writer.iter().min(),
        "ops_max_writer": per_writer.iter().max(),
    });
    merge_into(&mut report, all.summary());
    report
}

/// A scoped thread with a name, so `perf` and `top` can tell the benchmark's threads apart.
fn spawn<'scope, 'env, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    name: String,
    body: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new().name(name).spawn_scoped(scope, body).expect("spawn a benchmark thread")
}

fn merge_into(target: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (target.as_object_mut(), extra) {
        target.extend(extra);
    }
}

/// One recovery in this (fresh) process: opens the folder, checks the documents, reports.
fn open_once(flags: &Flags) -> Value {
    let dir = PathBuf::from(flags.required("--dir"));
    let namespace = flags.required("--namespace");
    let expect: usize = flags.parse("--expect", 0);
    let start = Instant::now();
    let store = Store::open(store_options(&dir, FsyncPolicy::default())).expect("recovery");
    let open_s = start.elapsed().as_secs_f64();
    let documents = store.describe(namespace).expect("namespace recovered").documents;
    assert_eq!(documents, expect, "documents recovered");
    let keys = flags.get("--keyspace").map(|name| check_keys(&store, name, flags.parse("--expect-keys", 0)));
    let cpu_s = cpu_seconds();
    let (rss, peak) = rss_mb();
    let recovery = store.recovery();
    let report = json!({
        "bench": "durable_open",
        "open_s": round3(open_s),
        "open_cpu_s": cpu_s,
        "recovery_ms": recovery.duration_ms,
        "documents": documents,
        "keys": keys,
        "log_records_replayed": recovery.records,
        "log_bytes_replayed": recovery.log_bytes,
        "snapshot_loaded": recovery.snapshot.as_ref().map(|s| s.path.display().to_string()),
        "snapshot_bytes": recovery.snapshot.as_ref().map(|s| s.bytes),
        "snapshot_load_ms": recovery.snapshot.as_ref().map(|s| s.duration_ms),
        "index_build_ms": recovery.index_build_ms,
        "rss_mb": rss,
        "rss_peak_mb": peak,
    });
    // The process ends right after the report: freeing a million documents one by one is
    // not part of recovery, and would only blur a profile of this subcommand. Nothing was
    // written, so there is nothing to flush; the folder lock goes with the process.
    std::mem::forget(store);
    report
}

/// Runs `durable open` on `dir` in a child process and returns its report.
fn open_in_child(dir: &Path, namespace: &str, expect: usize) -> Value {
    open_child(dir, &["--namespace", namespace, "--expect", &expect.to_string()])
}

/// Runs `durable open --dir dir ARGS` in a child process and returns its report.
fn open_child(dir: &Path, args: &[&str]) -> Value {
    let exe = std::env::current_exe().expect("the runner's path");
    let out = std::process::Command::new(exe)
        .args(["open", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .expect("run the recovery child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "recovery child failed: {}{}", stdout, String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().rfind(|l| l.starts_with('{')).expect("the child's report");
    serde_json::from_str(last).expect("the child's report is JSON")
}

/// Recovery of a loaded data set: from the log alone, then from a snapshot.
fn recovery(flags: &Flags) -> Value {
    let path = flags.required("--data");
    let lines = read_lines(path);
    let (namespace, indexes) = kind_of(&lines);
    let expect = lines.len();
    let dir = TempDir::new(flags, "recovery");
    let options = store_options(&dir.0, FsyncPolicy::default());
    let store = Store::open(options.clone()).expect("open");
    store.create_namespace(namespace, indexes).expect("schema");
    let load_s = load(&store, namespace, &lines);
    let json_bytes: usize = lines.iter().map(String::len).sum();
    drop(lines);
    let wal = store.wal_stats();
    store.close().expect("close");
    let log_bytes = dir_bytes(&dir.0.join("wal"));

    // (a) from the log only, in a fresh process.
    let from_log = open_in_child(&dir.0, namespace, expect);

    // Reopen here to take the snapshot (this replay is timed too, as a second sample).
    let start = Instant::now();
    let store = Store::open(options).expect("reopen");
    let reopen_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let info = store.snapshot().expect("snapshot");
    let snapshot_s = start.elapsed().as_secs_f64();
    assert_eq!(info.counts.documents as usize, expect, "documents in the snapshot");
    store.close().expect("close");
    let snapshot_bytes = dir_bytes(&dir.0.join("snapshots"));
    let log_bytes_after_snapshot = dir_bytes(&dir.0.join("wal"));

    // (b) from the snapshot, in a fresh process.
    let from_snapshot = open_in_child(&dir.0, namespace, expect);
    json!({
        "bench": "durable_recovery",
        "source": path,
        "documents": expect,
        "json_bytes": json_bytes,
        "load_s": round3(load_s),
        "load_rows_s": (expect as f64 / load_s).round(),
        "log_records": wal.next_lsn - 1,
        "log_bytes": log_bytes,
        "from_log_s": from_log["open_s"],
        "from_log": from_log,
        "reopen_in_process_s": round3(reopen_s),
        "snapshot_s": round3(snapshot_s),
        "snapshot_ms_reported": info.duration_ms,
        "snapshot_bytes": snapshot_bytes,
        "log_bytes_after_snapshot": log_bytes_after_snapshot,
        "from_snapshot_s": from_snapshot["open_s"],
        "from_snapshot": from_snapshot,
    })
}

/// The user profiles' indexes as `bench/profile_search.py` declares them (issue 15).
fn profile_indexes() -> Vec<IndexDef> {
    vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::tree("first_name", FieldType::String).collate(Collation::Utf8Ci),
        IndexDef::tree("last_name", FieldType::String).collate(Collation::Utf8Ci),
        IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String)
            .collate(Collation::Utf8Ci),
    ]
}

/// Key `i` of the mixed recovery benchmark and its value: 20 to 100 lower-case letters,
/// a function of `i` alone, so a recovered key can be checked without keeping the data.
fn mixed_key(i: usize) -> (String, Vec<u8>) {
    let mut rng = Rng(0x5EED ^ (i as u64).wrapping_mul(0x9E37_79B9));
    let len = rng.range(20, 100) as usize;
    let value = (0..len).map(|_| b'a' + rng.below(26) as u8).collect();
    (format!("key:{i:07}"), value)
}

/// Checks a recovered keyspace: `expect` keys, and every 997th key's value; returns the
/// key count.
fn check_keys(db: &Database, name: &str, expect: usize) -> usize {
    let keyspace = db.keyspaces().get(name).expect("keyspace recovered");
    assert_eq!(keyspace.len(), expect, "keys recovered");
    for i in (0..expect).step_by(997) {
        let (key, value) = mixed_key(i);
        assert_eq!(keyspace.get(key.as_bytes()).expect("a string key"), Some(value), "the value of {key}");
    }
    keyspace.len()
}

/// Median of `runs` reports' numeric fields, each on its own (the first report's other
/// fields).
fn median_reports(runs: &[Value]) -> Value {
    let mut out = runs[0].clone();
    let Some(fields) = out.as_object_mut() else { return out };
    for (name, value) in fields.iter_mut() {
        let mut numbers: Vec<&Value> = runs.iter().map(|run| &run[name.as_str()]).filter(|v| v.is_number()).collect();
        if value.is_number() && !numbers.is_empty() {
            numbers.sort_by(|a, b| a.as_f64().unwrap_or(0.0).total_cmp(&b.as_f64().unwrap_or(0.0)));
            *value = numbers[numbers.len() / 2].clone();
        }
    }
    out
}

/// CPU seconds this process used so far (user + system, from `/proc/self/stat`, in the
/// kernel's 100 Hz ticks): beside wall time, what a busy machine inflates less.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at the closing ')'.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    round3((ticks(11) + ticks(12)) / 100.0)
}

/// Issue 15: recovery of 1M profiles with four indexes beside 1M key-value keys, from the
/// log alone and from a snapshot, `--runs` fresh processes each (see the module docs).
fn recovery_mixed(flags: &Flags) -> Value {
    let path = flags.required("--data");
    let lines = read_lines(path);
    let keys: usize = flags.parse("--keys", 1_000_000);
    let runs: usize = flags.parse("--runs", 3);
    let expect = lines.len();
    let dir = TempDir::new(flags, "recovery-mixed");
    let options = store_options(&dir.0, FsyncPolicy::default());
    let store = Store::open(options.clone()).expect("open");
    store.create_namespace("users", profile_indexes()).expect("schema");
    let keyspace = store.keyspaces().get_or_create("0");
    let start = Instant::now();
    std::thread::scope(|scope| {
        spawn(scope, "load-kv".into(), || {
            for i in 0..keys {
                let (key, value) = mixed_key(i);
                keyspace.set(key.as_bytes(), &value, SetOptions::default()).expect("SET");
            }
        });
        load(&store, "users", &lines);
    });
    let load_s = start.elapsed().as_secs_f64();
    drop(lines);
    let wal = store.wal_stats();
    store.close().expect("close");
    let log_bytes = dir_bytes(&dir.0.join("wal"));
    if std::env::var_os("HOTSET_BENCH_KEEP").is_some() {
        // A copy to profile recovery from the log alone (the snapshot below retires it).
        let copy = dir.0.with_extension("log-only");
        std::fs::create_dir_all(copy.join("wal")).expect("create the copy");
        for entry in std::fs::read_dir(dir.0.join("wal")).expect("list the log").flatten() {
            std::fs::copy(entry.path(), copy.join("wal").join(entry.file_name())).expect("copy a segment");
        }
        eprintln!("kept a copy of the log alone in {}", copy.display());
    }
    let (expect_docs, expect_keys) = (expect.to_string(), keys.to_string());
    let child_args =
        ["--namespace", "users", "--expect", &expect_docs, "--keyspace", "0", "--expect-keys", &expect_keys];
    let timed = |what: &str| -> Vec<Value> {
        (0..runs)
            .map(|run| {
                let report = open_child(&dir.0, &child_args);
                eprintln!("{what} run {}: {} s", run + 1, report["open_s"]);
                report
            })
            .collect()
    };
    let from_log = timed("from the log");

    let store = Store::open(options).expect("reopen");
    let start = Instant::now();
    let info = store.snapshot().expect("snapshot");
    let snapshot_s = start.elapsed().as_secs_f64();
    assert_eq!(info.counts.documents as usize, expect, "documents in the snapshot");
    assert_eq!(info.counts.keys as usize, keys, "keys in the snapshot");
    store.close().expect("close");
    let snapshot_bytes = dir_bytes(&dir.0.join("snapshots"));
    let from_snapshot = timed("from the snapshot");
    let seconds = |reports: &[Value]| reports.iter().map(|r| r["open_s"].clone()).collect::<Vec<_>>();
    json!({
        "bench": "durable_recovery_mixed",
        "source": path,
        "documents": expect,
        "keys": keys,
        "load_s": round3(load_s),
        "log_records": wal.next_lsn - 1,
        "log_bytes": log_bytes,
        "snapshot_s": round3(snapshot_s),
        "snapshot_bytes": snapshot_bytes,
        "from_log_s": median_reports(&from_log)["open_s"],
        "from_log_runs_s": seconds(&from_log),
        "from_log": median_reports(&from_log),
        "from_snapshot_s": median_reports(&from_snapshot)["open_s"],
        "from_snapshot_runs_s": seconds(&from_snapshot),
        "from_snapshot": median_reports(&from_snapshot),
    })
}

/// What the reader asks in the stall benchmark.
enum Lookups {
    /// Users: a case-insensitive first-name prefix, page of 10 in (first_name, last_name) order.
    Prefixes(Vec<String>),
    /// Items: `name = ?` sorted by year, page of 10.
    Names(Vec<String>),
}

impl Lookups {
    fn of(namespace: &str, values: &[String], rng: &mut Rng) -> Lookups {
        let sample: Vec<&String> = (0..1000).map(|_| &values[rng.below(values.len())]).collect();
        if namespace == "users" {
            let prefix = |name: &&String| format!("{}%", name.chars().take(3).collect::<String>().to_lowercase());
            Lookups::Prefixes(sample.iter().map(prefix).collect())
        } else {
            Lookups::Names(sample.into_iter().cloned().collect())
        }
    }

    fn query(&self, rng: &mut Rng) -> Query {
        match self {
            Lookups::Prefixes(prefixes) => Query::new("users")
                .where_("first_name", Op::Like, prefixes[rng.below(prefixes.len())].clone())
                .sort("first_name", false)
                .sort("last_name", false)
                .limit(10),
            Lookups::Names(names) => Query::new("items")
                .where_("name", Op::Eq, names[rng.below(names.len())].clone())
                .sort("year", false)
                .limit(10),
        }
    }
}

/// One phase of the stall benchmark: a reader and a writer for S seconds, and in some
/// phases a third thread taking snapshots back to back or (the control) only burning CPU.
#[derive(Clone, Copy, PartialEq)]
enum Third {
    Nothing,
    Snapshots,
    BusyLoop,
}

/// Read and write latency while snapshots run, against a baseline without them.
fn stall(flags: &Flags) -> Value {
    let path = flags.required("--data");
    let seconds: f64 = flags.parse("--seconds", 5.0);
    let lines = read_lines(path);
    let (namespace, indexes) = kind_of(&lines);
    // The keys to get, and the field the queries look up (a first-name prefix or a name).
    let field = if namespace == "users" { "first_name" } else { "name" };
    let (ids, values): (Vec<Value>, Vec<String>) = lines
        .iter()
        .map(|line| {
            let mut doc: Value = serde_json::from_str(line).expect("JSON line");
            let value = doc[field].as_str().expect("a string field").to_owned();
            (doc["id"].take(), value)
        })
        .unzip();
    let lookups = Lookups::of(namespace, &values, &mut Rng(7));
    drop(values);
    let dir = TempDir::new(flags, "stall");
    let store = Store::open(store_options(&dir.0, FsyncPolicy::default())).expect("open");
    store.create_namespace(namespace, indexes).expect("schema");
    let load_s = load(&store, namespace, &lines);
    // The load's log reaches the disk before anything is timed, and a short run first
    // warms the caches and the threads (discarded).
    store.sync().expect("sync");
    let elsewhere = format!("{namespace}_writes");
    store.create_namespace(&elsewhere, kind_of(&lines).1).expect("schema");
    let work = Workload { store: &store, namespace, lines: &lines, ids: &ids, lookups: &lookups };
    stall_phase(&work, seconds.min(1.0), Third::Nothing, namespace);
    // The last two phases have the writer upsert into a second namespace with the same
    // schema: what is left is the snapshot's own effect, without the reader and the
    // writer contending for one namespace's lock.
    let plan = [
        ("baseline", Third::Nothing, namespace),
        ("snapshots", Third::Snapshots, namespace),
        ("cpu_control", Third::BusyLoop, namespace),
        ("baseline_writer_elsewhere", Third::Nothing, elsewhere.as_str()),
        ("snapshots_writer_elsewhere", Third::Snapshots, elsewhere.as_str()),
    ];
    let mut phases = serde_json::Map::new();
    for (name, third, write_to) in plan {
        phases.insert(name.into(), stall_phase(&work, seconds, third, write_to));
    }
    let (rss, _) = rss_mb();
    store.close().expect("close");
    json!({
        "bench": "durable_stall",
        "source": path,
        "namespace": namespace,
        "documents": lines.len(),
        "load_s": round3(load_s),
        "seconds": seconds,
        "rss_mb": rss,
        "phases": phases,
    })
}

/// What every phase of the stall benchmark shares.
struct Workload<'a> {
    store: &'a Store,
    /// Where the reader reads.
    namespace: &'a str,
    /// Documents the writer upserts (random ones).
    lines: &'a [String],
    ids: &'a [Value],
    lookups: &'a Lookups,
}

fn stall_phase(work: &Workload, seconds: f64, third: Third, write_to: &str) -> Value {
    let Workload { store, namespace, lines, ids, lookups } = *work;
    let threads = if third == Third::Nothing { 2 } else { 3 };
    let barrier = Barrier::new(threads);
    let stop = AtomicBool::new(false);
    let (get, query, write, snapshots) = std::thread::scope(|scope| {
        let barrier = &barrier;
        let stop = &stop;
        let reader = spawn(scope, "bench-reader".into(), move || {
            let (mut get, mut query) = (Histogram::new(), Histogram::new());
            let mut rng = Rng(11);
            let mut out = Vec::with_capacity(1 << 16);
            barrier.wait();
            let end = Instant::now() + Duration::from_secs_f64(seconds);
            loop {
                let key = &ids[rng.below(ids.len())];
                let start = Instant::now();
                let doc = store.get(namespace, key).expect("valid key");
                std::hint::black_box(doc.as_deref().map(<[u8]>::len));
                let got = Instant::now();
                get.record(got - start);
                let q = lookups.query(&mut rng);
                let start = Instant::now();
                let result = store.query(&q).expect("valid query");
                out.clear();
                for item in &result.items {
                    item.write_json(&mut out);
                }
                let done = Instant::now();
                query.record(done - start);
                if done >= end {
                    return (get, query);
                }
            }
        });
        let writer = spawn(scope, "bench-writer".into(), move || {
            let mut write = Histogram::new();
            let mut rng = Rng(13);
            barrier.wait();
            let end = Instant::now() + Duration::from_secs_f64(seconds);
            loop {
                let line = &lines[rng.below(lines.len())];
                let start = Instant::now();
                store.upsert_json(write_to, line.as_bytes()).expect("upsert");
                let done = Instant::now();
                write.record(done - start);
                if done >= end {
                    stop.store(true, Ordering::Release);
                    return write;
                }
            }
        });
        let third = match third {
            Third::Nothing => None,
            Third::Snapshots => Some(spawn(scope, "bench-snapshot".into(), move || {
                let mut taken = Vec::new();
                barrier.wait();
                let end = Instant::now() + Duration::from_secs_f64(seconds);
                while Instant::now() < end {
                    let start = Instant::now();
                    let info = store.snapshot().expect("snapshot");
                    taken.push((start.elapsed().as_secs_f64() * 1000.0, info.bytes));
                }
                taken
            })),
            Third::BusyLoop => Some(spawn(scope, "bench-burner".into(), move || {
                barrier.wait();
                let mut x = 0u64;
                while !stop.load(Ordering::Acquire) {
                    for i in 0..1000 {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                    }
                }
                Vec::new()
            })),
        };
        let (get, query) = reader.join().expect("reader");
        let write = writer.join().expect("writer");
        let snapshots = third.map(|t| t.join().expect("third thread")).unwrap_or_default();
        (get, query, write, snapshots)
    });
    let mut reads = get.clone();
    reads.merge(&query);
    let mut report = json!({
        "writer_namespace": write_to,
        "get": get.summary(),
        "query": query.summary(),
        "reads": reads.summary(),
        "writes": write.summary(),
    });
    if third == Third::Snapshots {
        let mut ms: Vec<f64> = snapshots.iter().map(|(ms, _)| *ms).collect();
        ms.sort_by(f64::total_cmp);
        merge_into(
            &mut report,
            json!({
                "snapshots_completed": snapshots.len(),
                "snapshot_ms_median": ms.get(ms.len() / 2).map(|m| round3(*m)),
                "snapshot_ms_max": ms.last().map(|m| round3(*m)),
                "snapshot_bytes": snapshots.last().map(|(_, bytes)| *bytes),
            }),
        );
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_contiguous_and_within_3_percent() {
        let mut last = 0;
        for nanos in 1..200_000u64 {
            let bucket = Histogram::bucket(nanos);
            assert!(bucket == last || bucket == last + 1, "bucket of {nanos} skips");
            last = bucket;
            let middle = Histogram::middle(bucket);
            assert!((middle - nanos as f64).abs() <= nanos as f64 / 32.0, "{nanos} ns reads back as {middle}");
        }
        assert!(Histogram::bucket(u64::MAX) < Histogram::new().counts.len());
    }

    #[test]
    fn quantiles_and_max() {
        let mut histogram = Histogram::new();
        for micros in 1..=1000u64 {
            histogram.record(Duration::from_micros(micros));
        }
        let near = |got: f64, want: f64| (got - want).abs() <= want / 32.0;
        assert!(near(histogram.quantile_us(0.5), 500.0), "{}", histogram.quantile_us(0.5));
        assert!(near(histogram.quantile_us(0.99), 990.0), "{}", histogram.quantile_us(0.99));
        assert_eq!(histogram.summary()["max_us"], json!(1000.0));
        let mut other = Histogram::new();
        other.record(Duration::from_millis(7));
        histogram.merge(&other);
        assert_eq!(histogram.total, 1001);
        assert_eq!(histogram.quantile_us(1.0), 7000.0);
    }
}
