//! Benchmark runner for the embedded engine on the shared data sets
//! (`../shared/bench/gen_dataset.py`), asking the same seeded queries as the peer
//! scripts (`bench/params.py`). Prints one JSON line last, like the peer scripts, so
//! `median_runs.py` can take the median of several runs.
//!
//! usage: hotset-bench items ITEMS.jsonl PARAMS.json [--seconds S] [--warmup S]
//!        hotset-bench users USERS.jsonl PREFIXES.json [--seconds S] [--warmup S]
//!        hotset-bench profile USERS.jsonl PAIRS.json [--seconds S] [--warmup S]
//!          (PAIRS from bench/profile_search.py: first and last name prefix pairs; each
//!          variant is timed under every plan choice, so the planner's pick can be
//!          compared with the plans it did not pick)
//!        hotset-bench fulltext ITEMS.jsonl FTPARAMS.json [--seconds S] [--warmup S]
//!          (FTPARAMS from bench/fulltext_params.py; the report has the keys of
//!          bench/fulltext_peers.py so bench/run_fulltext.py lines them up)

use hotset_core::query::{Choice, Op, PlanChoice, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind};
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

struct Options {
    seconds: f64,
    warmup: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: hotset-bench items|users DATA.jsonl PARAMS.json [--seconds S] [--warmup S]");
        std::process::exit(2);
    }
    let flag = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let options = Options { seconds: flag("--seconds", 3.0), warmup: flag("--warmup", 0.5) };
    let lines: Vec<String> =
        std::fs::read_to_string(&args[2]).expect("reading the data set").lines().map(String::from).collect();
    let params: Value = serde_json::from_str(&std::fs::read_to_string(&args[3]).expect("reading the parameters"))
        .expect("parameters are JSON");
    let report = match args[1].as_str() {
        "items" => items(&lines, &params, &options),
        "users" => users(&lines, &params, &options),
        "profile" => profile(&lines, &params, &options),
        "fulltext" => fulltext(&lines, &params, &options),
        other => panic!("unknown data set kind {other}"),
    };
    println!("{}", serde_json::to_string(&report).expect("a report serialises"));
}

/// Full-text search on the catalogue's descriptions: build time and memory of the text
/// index, then queries/s of each query type, LIMIT 10 with the total, best rank first.
fn fulltext(lines: &[String], params: &Value, options: &Options) -> Value {
    let rss_start = rss_mb();
    let db = Database::new();
    db.create_namespace("items", item_indexes()).expect("schema");
    let load_s = load(&db, "items", lines);
    let rss_plain = rss_mb();
    let raw_text: usize = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).ok().and_then(|d| d["description"].as_str().map(str::len)).unwrap_or(0)
        })
        .sum();
    // The text index built over the loaded documents: its build time and memory alone.
    let start = Instant::now();
    db.add_index("items", IndexDef::text(&["description"])).expect("text index");
    let ft_build_s = start.elapsed().as_secs_f64();
    let rss_loaded = rss_mb();
    let info = db.describe("items").expect("namespace exists");
    let index_bytes = info.index_memory.iter().find(|(name, _)| name == "description").map_or(0, |(_, b)| *b);
    let typo_table_bytes =
        info.text.iter().find(|(name, _)| name == "description").map_or(0, |(_, s)| s.typo_table_bytes);
    let strings = |key: &str| -> Vec<String> {
        params[key]
            .as_array()
            .map(|l| l.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    /// How each query type writes its parameters as query text.
    fn shaped(kind: &str, words: &str) -> String {
        match kind {
            "two_words_and" => words.split_whitespace().map(|x| format!("+{x}")).collect::<Vec<_>>().join(" "),
            "prefix" => format!("{words}*"),
            "typo" => format!("{words}~"),
            _ => words.to_string(),
        }
    }
    let kinds = ["one_word", "two_words_and", "two_words_or", "prefix", "typo"];
    let (mut qps, mut totals, mut latency) = (Map::new(), Map::new(), Map::new());
    let mut out = Vec::new();
    for kind in kinds {
        let source = if kind.starts_with("two_words") { "two_words" } else { kind };
        let texts: Vec<String> = strings(source).iter().map(|w| shaped(kind, w)).collect();
        if texts.is_empty() {
            continue;
        }
        let query = |text: &String| Query::new("items").matching("description", text).limit(10).with_total();
        let sample = texts.len().min(500);
        let total: usize = texts[..sample].iter().map(|t| db.query(&query(t)).expect("valid").total.unwrap_or(0)).sum();
        totals.insert(kind.into(), json!((total as f64 / sample as f64 * 10.0).round() / 10.0));
        let report = timed(&texts, options, |text| render(&db, &query(text), &mut out));
        qps.insert(kind.into(), report["ops_s"].clone());
        latency.insert(kind.into(), json!({"p50_us": report["p50_us"], "p99_us": report["p99_us"]}));
    }
    json!({
        "system": "hotset",
        "load_s": round3(load_s),
        "ft_build_s": round3(ft_build_s),
        "rss_mb_start": rss_start,
        "rss_mb_before_text_index": rss_plain,
        "rss_mb_loaded": rss_loaded,
        "raw_text_mb": (raw_text as f64 / 1048576.0 * 10.0).round() / 10.0,
        "text_index_mb": (index_bytes as f64 / 1048576.0 * 10.0).round() / 10.0,
        "typo_table_mb": (typo_table_bytes as f64 / 1048576.0 * 10.0).round() / 10.0,
        "qps": qps,
        "mean_total": totals,
        "latency": latency,
    })
}

fn round3(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    (kb / 1024.0 * 10.0).round() / 10.0
}

/// Calls `op` with successive parameters for `warmup` seconds (discarded), then for
/// `seconds`; reports throughput and latency percentiles like `bench_common.timed_run`.
fn timed<P>(params: &[P], options: &Options, mut op: impl FnMut(&P) -> usize) -> Value {
    let mut at = 0usize;
    let mut next = || {
        at = (at + 1) % params.len();
        &params[at]
    };
    let warm_end = Instant::now() + Duration::from_secs_f64(options.warmup);
    while Instant::now() < warm_end {
        op(next());
    }
    let (mut latencies, mut rows) = (Vec::new(), 0usize);
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(options.seconds);
    let mut last = start;
    while last < end {
        rows += op(next());
        let now = Instant::now();
        latencies.push(now - last);
        last = now;
    }
    latencies.sort_unstable();
    let count = latencies.len();
    let micros = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    json!({
        "ops": count,
        "ops_s": (count as f64 / (last - start).as_secs_f64()).round(),
        "p50_us": micros(latencies[count / 2]),
        "p99_us": micros(latencies[(count * 99 / 100).min(count - 1)]),
        "avg_rows": (rows as f64 / count as f64 * 100.0).round() / 100.0,
    })
}

/// Runs a query and renders its page to JSON bytes, as a server would.
fn render(db: &Database, query: &Query, out: &mut Vec<u8>) -> usize {
    let result = db.query(query).expect("benchmark queries are valid");
    out.clear();
    for item in &result.items {
        item.write_json(out);
    }
    std::hint::black_box(result.total);
    result.items.len()
}

/// Query b: `name = ? AND year > 2010 ORDER BY year LIMIT 10` with the total.
fn name_year(name: &Value) -> Query {
    let query = Query::new("items").where_("name", Op::Eq, name.clone()).where_("year", Op::Gt, 2010);
    query.sort("year", false).limit(10).with_total()
}

fn item_indexes() -> Vec<IndexDef> {
    vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::hash("name", FieldType::String),
        IndexDef::tree("year", FieldType::Int),
    ]
}

fn load(db: &Database, namespace: &str, lines: &[String]) -> f64 {
    let start = Instant::now();
    for line in lines {
        db.upsert_json(namespace, line.as_bytes()).expect("data set documents are valid");
    }
    start.elapsed().as_secs_f64()
}

fn items(lines: &[String], params: &Value, options: &Options) -> Value {
    let mut results = Map::new();
    let rss_start = rss_mb();
    let db = Database::new();
    // f) bulk insert, one JSON line per call, into the namespace the queries then use; the
    // RSS growth it causes is the engine's memory (the harness holds the lines either way).
    db.create_namespace("items", item_indexes()).expect("schema");
    let seconds = load(&db, "items", lines);
    results.insert(
        "f_bulk_insert_loop".into(),
        json!({"seconds": round3(seconds), "rows_s": (lines.len() as f64 / seconds).round()}),
    );
    let rss_loaded = rss_mb();
    // ... and as one transaction of parsed documents, into a namespace dropped afterwards.
    db.create_namespace("items_tx", item_indexes()).expect("schema");
    let parsed: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    let start = Instant::now();
    let mut tx = db.transaction("items_tx").expect("namespace");
    for doc in parsed {
        tx.insert(doc).expect("within limits");
    }
    tx.commit().expect("bulk insert");
    let seconds = start.elapsed().as_secs_f64();
    results.insert(
        "f_bulk_insert_tx".into(),
        json!({"seconds": round3(seconds), "rows_s": (lines.len() as f64 / seconds).round()}),
    );
    db.drop_namespace("items_tx").expect("drop");

    let list = |key: &str| params[key].as_array().expect("parameter list").clone();
    let ids = list("ids");
    let names = list("names");
    let mut out = Vec::with_capacity(1 << 16);
    results.insert(
        "a_get_by_id".into(),
        timed(&ids, options, |id| {
            let doc = db.get("items", id).expect("valid key");
            out.clear();
            out.extend_from_slice(doc.as_deref().unwrap_or_default());
            usize::from(doc.is_some())
        }),
    );
    results.insert("b_name_year".into(), timed(&names, options, |name| render(&db, &name_year(name), &mut out)));
    let range = Query::new("items")
        .filter(hotset_core::Cond::new("year", Op::Range, json!([2010, 2020])))
        .sort("year", true)
        .offset(100)
        .limit(20);
    results.insert("c_year_range".into(), timed(&[()], options, |_| render(&db, &range, &mut out)));
    // The same query once a composite tree index on (name, year) exists: the planner walks
    // it after the name equality, so neither the page nor the total depends on how many
    // documents share the name. Adding it to the live namespace is timed too.
    let start = Instant::now();
    let composite =
        IndexDef::composite_typed(&[("name", FieldType::String), ("year", FieldType::Int)], IndexKind::Tree);
    db.add_index("items", composite).expect("composite index");
    let seconds = start.elapsed().as_secs_f64();
    results.insert("add_index_name_year".into(), json!({"seconds": round3(seconds)}));
    results
        .insert("b_name_year_composite".into(), timed(&names, options, |name| render(&db, &name_year(name), &mut out)));
    db.drop_index("items", "name+year").expect("drop");
    let upserts = list("upserts");
    results.insert(
        "e_upsert".into(),
        timed(&upserts, options, |doc| {
            db.upsert("items", doc).expect("valid document");
            1
        }),
    );
    report(
        "hotset_core_items",
        &db.describe("items").expect("namespace"),
        lines,
        options,
        results,
        (rss_start, rss_loaded),
    )
}

fn users(lines: &[String], params: &Value, options: &Options) -> Value {
    let mut results = Map::new();
    let rss_start = rss_mb();
    let db = Database::new();
    let indexes = vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String)
            .collate(Collation::Utf8Ci),
    ];
    db.create_namespace("users", indexes).expect("schema");
    let seconds = load(&db, "users", lines);
    results.insert(
        "load".into(),
        json!({"seconds": (seconds * 1000.0).round() / 1000.0, "rows_s": (lines.len() as f64 / seconds).round()}),
    );
    let rss_loaded = rss_mb();
    let prefixes = params["prefixes"].as_array().expect("prefix list").clone();
    let mut out = Vec::with_capacity(1 << 16);
    let query = |p: &Value, total: bool| {
        let pattern = format!("{}%", p["prefix"].as_str().expect("prefix"));
        let page = p["page"].as_u64().expect("page") as usize;
        let q = Query::new("users")
            .where_("first_name", Op::Like, pattern)
            .sort("first_name", false)
            .sort("last_name", false)
            .offset(page * 10)
            .limit(10);
        if total { q.with_total() } else { q }
    };
    results.insert("g_prefix_page".into(), timed(&prefixes, options, |p| render(&db, &query(p, false), &mut out)));
    results.insert("g_prefix_page_total".into(), timed(&prefixes, options, |p| render(&db, &query(p, true), &mut out)));
    report(
        "hotset_core_users",
        &db.describe("users").expect("namespace"),
        lines,
        options,
        results,
        (rss_start, rss_loaded),
    )
}

/// The profile-search task in process: first AND last name prefixes over the four
/// indexes of the HTTP benchmark, LIMIT 20, with and without the sort and the total, each
/// under the plan chosen by cost and with skip scans forced on and off.
fn profile(lines: &[String], params: &Value, options: &Options) -> Value {
    let mut results = Map::new();
    let rss_start = rss_mb();
    let db = Database::new();
    let indexes = vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::new("first_name", IndexKind::Tree, FieldType::String).collate(Collation::Utf8Ci),
        IndexDef::new("last_name", IndexKind::Tree, FieldType::String).collate(Collation::Utf8Ci),
        IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String)
            .collate(Collation::Utf8Ci),
    ];
    db.create_namespace("users", indexes).expect("schema");
    let seconds = load(&db, "users", lines);
    results.insert(
        "load".into(),
        json!({"seconds": (seconds * 1000.0).round() / 1000.0, "rows_s": (lines.len() as f64 / seconds).round()}),
    );
    let rss_loaded = rss_mb();
    let pairs: Vec<(String, String)> = params
        .as_array()
        .expect("a list of pairs")
        .iter()
        .map(|p| (p[0].as_str().expect("first").to_string(), p[1].as_str().expect("last").to_string()))
        .collect();
    let mut out = Vec::with_capacity(1 << 16);
    let choices = [("cost", Choice::Cost), ("skip", Choice::Always), ("apart", Choice::Never)];
    for (variant, sorted, total) in
        [("plain", false, false), ("sorted", true, false), ("total", false, true), ("sorted_total", true, true)]
    {
        for (name, skip) in choices {
            db.set_plan_choice(PlanChoice { skip, ..PlanChoice::default() });
            let query = |(first, last): &(String, String)| {
                let mut q = Query::new("users")
                    .where_("first_name", Op::Like, format!("{first}%"))
                    .where_("last_name", Op::Like, format!("{last}%"))
                    .limit(20);
                if sorted {
                    q = q.sort("first_name", false).sort("last_name", false);
                }
                if total { q.with_total() } else { q }
            };
            results.insert(format!("{variant}_{name}"), timed(&pairs, options, |p| render(&db, &query(p), &mut out)));
        }
    }
    db.set_plan_choice(PlanChoice::default());
    report(
        "hotset_core_profile",
        &db.describe("users").expect("namespace"),
        lines,
        options,
        results,
        (rss_start, rss_loaded),
    )
}

/// The report line: figures, and memory against the data set's JSON size.
fn report(
    bench: &str,
    info: &hotset_core::namespace::NamespaceInfo,
    lines: &[String],
    options: &Options,
    results: Map<String, Value>,
    (rss_start, rss_loaded): (f64, f64),
) -> Value {
    let json_bytes: usize = lines.iter().map(|l| l.len()).sum();
    json!({
        "bench": bench,
        "records": lines.len(),
        "seconds": options.seconds,
        "results": results,
        "json_bytes": json_bytes,
        "engine_memory_bytes": info.memory_bytes,
        "engine_bytes_per_doc": (info.memory_bytes as f64 / info.documents as f64).round(),
        "json_bytes_per_doc": (json_bytes as f64 / lines.len() as f64).round(),
        "rss_mb_before_load": rss_start,
        "rss_mb_after_load": rss_loaded,
    })
}
