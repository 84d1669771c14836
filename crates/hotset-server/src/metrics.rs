//! `/metrics` in the Prometheus text format, and the latency histograms behind it.
//!
//! Owns: `Histogram` (fixed buckets, lock-free counters) and `render`, which reads every
//! figure at the moment of the scrape. Never: keep per-key or per-client series (their
//! number would grow without bound).

use crate::state::ServerState;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] =
    [0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.1, 1.0];

/// A latency histogram with Prometheus' cumulative buckets.
#[derive(Default)]
pub struct Histogram {
    /// Per bucket (not cumulative), then one for larger values.
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Histogram {
    pub fn record(&self, elapsed: Duration) {
        self.record_many(elapsed, 1);
    }

    /// Records `count` requests that each took `elapsed`: the requests of one RESP batch,
    /// whose replies all leave together, so each one's latency is the batch's. One update
    /// per batch keeps these shared counters off the per-command path.
    pub fn record_many(&self, elapsed: Duration, count: u64) {
        if count == 0 {
            return;
        }
        let seconds = elapsed.as_secs_f64();
        let bucket = BUCKETS.iter().position(|&bound| seconds <= bound).unwrap_or(BUCKETS.len());
        self.counts[bucket].fetch_add(count, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(nanos.saturating_mul(count), Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            cumulative += count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.counts[BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(
            out,
            "{name}_sum{{{}}} {}",
            labels.trim_end_matches(','),
            self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9
        );
        let _ = writeln!(out, "{name}_count{{{}}} {cumulative}", labels.trim_end_matches(','));
    }
}

/// Every metric, now.
pub fn render(state: &ServerState, keyspaces: bool) -> String {
    let mut out = String::new();
    let stats = &state.stats;
    single(
        &mut out,
        "hotset_uptime_seconds",
        "Seconds since the server started.",
        "gauge",
        state.started.elapsed().as_secs_f64(),
    );
    single(
        &mut out,
        "hotset_connected_clients",
        "RESP connections open now.",
        "gauge",
        state.connected_clients() as f64,
    );
    single(
        &mut out,
        "hotset_connections_received_total",
        "RESP connections accepted.",
        "counter",
        load(&stats.connections_received),
    );
    single(
        &mut out,
        "hotset_connections_rejected_total",
        "RESP connections refused (max_clients).",
        "counter",
        load(&stats.connections_rejected),
    );
    single(&mut out, "hotset_resp_commands_total", "RESP commands executed.", "counter", load(&stats.commands));
    single(
        &mut out,
        "hotset_resp_protocol_errors_total",
        "RESP connections closed for a malformed frame.",
        "counter",
        load(&stats.protocol_errors),
    );
    single(
        &mut out,
        "hotset_resp_batches_total",
        "Batches of RESP requests read in one go.",
        "counter",
        load(&stats.batches),
    );
    single(&mut out, "hotset_http_requests_total", "HTTP requests answered.", "counter", load(&stats.http_requests));
    single(
        &mut out,
        "hotset_tls_handshake_failures_total",
        "TLS handshakes that failed, timed out or were refused (both TLS ports).",
        "counter",
        state.tls_handshake_failures() as f64,
    );

    let store = state.store().read();
    if let Some(store) = store.as_ref() {
        let wal = store.wal_stats();
        let (snapshot, snapshot_error) = store.snapshot_state();
        single(
            &mut out,
            "hotset_wal_next_lsn",
            "Sequence number the next log record gets.",
            "gauge",
            wal.next_lsn as f64,
        );
        single(&mut out, "hotset_wal_durable_lsn", "Last log record fsynced.", "gauge", wal.durable_lsn as f64);
        single(
            &mut out,
            "hotset_wal_bytes_written_total",
            "Bytes written to the log since start.",
            "counter",
            wal.bytes_written as f64,
        );
        single(&mut out, "hotset_wal_fsyncs_total", "Log fsyncs since start.", "counter", wal.fsyncs as f64);
        single(
            &mut out,
            "hotset_wal_batches_total",
            "Log writes (group commits) since start.",
            "counter",
            wal.batches as f64,
        );
        single(&mut out, "hotset_wal_segments", "Log segment files.", "gauge", wal.segments as f64);
        single(
            &mut out,
            "hotset_wal_failed",
            "1 while the log refuses writes (full disk, failed fsync).",
            "gauge",
            f64::from(u8::from(wal.failed.is_some())),
        );
        single(
            &mut out,
            "hotset_snapshot_last_bytes",
            "Size of the last snapshot.",
            "gauge",
            snapshot.as_ref().map_or(0.0, |s| s.bytes as f64),
        );
        single(
            &mut out,
            "hotset_snapshot_last_duration_seconds",
            "How long the last snapshot took.",
            "gauge",
            snapshot.as_ref().map_or(0.0, |s| s.duration_ms as f64 / 1000.0),
        );
        single(
            &mut out,
            "hotset_snapshot_failed",
            "1 when the last snapshot attempt failed.",
            "gauge",
            f64::from(u8::from(snapshot_error.is_some())),
        );
    }
    drop(store);
    single(
        &mut out,
        "hotset_memory_used_bytes",
        "Bytes the process holds by its allocator's count (INFO used_memory).",
        "gauge",
        crate::memory::used(state) as f64,
    );
    single(
        &mut out,
        "hotset_memory_max_bytes",
        "The maxmemory limit (0: none).",
        "gauge",
        state.params.maxmemory.load(std::sync::atomic::Ordering::Relaxed) as f64,
    );
    single(
        &mut out,
        "hotset_evicted_keys_total",
        "Keys evicted under maxmemory.",
        "counter",
        state.memory.evicted_keys.load(std::sync::atomic::Ordering::Relaxed) as f64,
    );

    let _ = writeln!(
        out,
        "# HELP hotset_namespace_documents Documents per namespace.\n# TYPE hotset_namespace_documents gauge"
    );
    let namespaces: Vec<_> = state.db().namespace_names().iter().filter_map(|n| state.db().describe(n).ok()).collect();
    for info in &namespaces {
        let _ = writeln!(out, "hotset_namespace_documents{{namespace=\"{}\"}} {}", escape(&info.name), info.documents);
    }
    let _ = writeln!(
        out,
        "# HELP hotset_namespace_memory_bytes Approximate bytes per namespace.\n# TYPE hotset_namespace_memory_bytes gauge"
    );
    for info in &namespaces {
        let _ = writeln!(
            out,
            "hotset_namespace_memory_bytes{{namespace=\"{}\"}} {}",
            escape(&info.name),
            info.memory_bytes
        );
    }
    let _ = writeln!(
        out,
        "# HELP hotset_index_memory_bytes Approximate bytes per index lookup structure.\n# TYPE hotset_index_memory_bytes gauge"
    );
    for info in &namespaces {
        for (index, bytes) in &info.index_memory {
            let (ns, index) = (escape(&info.name), escape(index));
            let _ = writeln!(out, "hotset_index_memory_bytes{{namespace=\"{ns}\",index=\"{index}\"}} {bytes}");
        }
    }
    if keyspaces {
        keyspace_series(&mut out, state);
    } else {
        let _ = writeln!(out, "# keyspaces left out: a running script has them locked");
    }
    let _ = writeln!(
        out,
        "# HELP hotset_request_duration_seconds Time to execute one request (RESP: the command; HTTP: the whole request).\n# TYPE hotset_request_duration_seconds histogram"
    );
    stats.resp_latency.render(&mut out, "hotset_request_duration_seconds", "protocol=\"resp\",");
    stats.http_latency.render(&mut out, "hotset_request_duration_seconds", "protocol=\"http\",");
    sources(&mut out, state);
    out
}

/// Keys and bytes per keyspace (reads every shard: only from inside the script gate).
fn keyspace_series(out: &mut String, state: &ServerState) {
    let _ =
        writeln!(out, "# HELP hotset_keyspace_keys Keys per key-value keyspace.\n# TYPE hotset_keyspace_keys gauge");
    let keyspaces = state.db().keyspaces();
    let spaces: Vec<_> = keyspaces.list().into_iter().filter_map(|n| keyspaces.get(&n).map(|k| (n, k))).collect();
    for (name, space) in &spaces {
        let _ = writeln!(out, "hotset_keyspace_keys{{keyspace=\"{}\"}} {}", escape(name), space.len());
    }
    let _ = writeln!(
        out,
        "# HELP hotset_keyspace_memory_bytes Approximate bytes per keyspace.\n# TYPE hotset_keyspace_memory_bytes gauge"
    );
    for (name, space) in &spaces {
        let _ = writeln!(out, "hotset_keyspace_memory_bytes{{keyspace=\"{}\"}} {}", escape(name), space.memory_bytes());
    }
}

/// A per-source series: name, help, type, and its value in a status.
type SourceFamily = (&'static str, &'static str, &'static str, fn(&hotset_sync::Status) -> Option<u64>);

/// The live-sync sources: the figures of their status, per source (and table).
fn sources(out: &mut String, state: &ServerState) {
    let statuses = state.syncs.statuses();
    let families: [SourceFamily; 4] = [
        (
            "hotset_source_lag_ms",
            "Commit on the source to visible in Hotset, for the last transaction applied (ms).",
            "gauge",
            |status| status.lag_ms,
        ),
        ("hotset_source_pending_events", "Events received from the source, not applied yet.", "gauge", |status| {
            Some(status.pending_events)
        }),
        (
            "hotset_source_lag_bytes",
            "Bytes of the source's log past the position applied (PostgreSQL).",
            "gauge",
            |status| status.lag_bytes,
        ),
        ("hotset_source_transactions_total", "Source transactions applied since start.", "counter", |status| {
            Some(status.transactions)
        }),
    ];
    for (name, help, kind, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for status in &statuses {
            if let Some(value) = value(status) {
                let _ = writeln!(out, "{name}{{source=\"{}\"}} {value}", escape(&status.name));
            }
        }
    }
    let _ = writeln!(
        out,
        "# HELP hotset_source_state What each source is doing (1 for its state).\n# TYPE hotset_source_state gauge"
    );
    for status in &statuses {
        let name = serde_json::to_value(status.state).ok().and_then(|v| v.as_str().map(str::to_string));
        let _ = writeln!(
            out,
            "hotset_source_state{{source=\"{}\",state=\"{}\"}} 1",
            escape(&status.name),
            name.unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "# HELP hotset_source_rows_copied Rows of a table copied by its latest copy.\n# TYPE hotset_source_rows_copied gauge"
    );
    for status in &statuses {
        for table in &status.tables {
            let _ = writeln!(
                out,
                "hotset_source_rows_copied{{source=\"{}\",table=\"{}\"}} {}",
                escape(&status.name),
                escape(&table.table),
                table.rows_copied
            );
        }
    }
}

/// One unlabelled series with its HELP and TYPE lines.
fn single(out: &mut String, name: &str, help: &str, kind: &str, value: f64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

fn load(counter: &AtomicU64) -> f64 {
    counter.load(Ordering::Relaxed) as f64
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative() {
        let histogram = Histogram::default();
        histogram.record(Duration::from_micros(5));
        histogram.record(Duration::from_micros(70));
        histogram.record(Duration::from_secs(3));
        let mut out = String::new();
        histogram.render(&mut out, "h", "p=\"x\",");
        assert!(out.contains("h_bucket{p=\"x\",le=\"0.00001\"} 1\n"), "{out}");
        assert!(out.contains("h_bucket{p=\"x\",le=\"0.0001\"} 2\n"), "{out}");
        assert!(out.contains("h_bucket{p=\"x\",le=\"1\"} 2\n"), "{out}");
        assert!(out.contains("h_bucket{p=\"x\",le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("h_count{p=\"x\"} 3\n"), "{out}");
    }
}
