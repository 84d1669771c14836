//! INFO: the server's state in Redis' sections and field names, plus Hotset's own
//! (`used_memory_namespaces`, the WAL's counters, `# Sources` for live sync).
//!
//! Owns: which sections a request selects (names, `default`, `all`, `everything`, several
//! at once, any letter case) and each section's text. Never: change anything, or hold
//! a lock while formatting beyond the one it reads (the client list, the store).

use super::table::COMMANDS;
use crate::state::ServerState;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// Every section in the order INFO prints them, and whether `default` includes it
/// (`all` adds the rest but `modules`; `everything` adds that too).
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", false),
    ("errorstats", true),
    ("cluster", true),
    ("sources", true),
    ("keyspace", true),
    ("commandstats", false),
    ("latencystats", false),
];

/// The INFO text for the section arguments `asked` (none: `default`).
pub fn text(state: &ServerState, asked: &[&[u8]]) -> String {
    let mut wanted = vec![false; SECTIONS.len()];
    let mark = |wanted: &mut Vec<bool>, pick: &dyn Fn(&str, bool) -> bool| {
        for (i, (name, default)) in SECTIONS.iter().enumerate() {
            wanted[i] |= pick(name, *default);
        }
    };
    if asked.is_empty() {
        mark(&mut wanted, &|_, default| default);
    }
    for word in asked {
        let word = String::from_utf8_lossy(word).to_ascii_lowercase();
        match word.as_str() {
            "default" => mark(&mut wanted, &|_, default| default),
            "all" => mark(&mut wanted, &|name, _| name != "modules"),
            "everything" => mark(&mut wanted, &|_, _| true),
            _ => mark(&mut wanted, &|name, _| name == word),
        }
    }
    let mut text = String::new();
    for (i, (name, _)) in SECTIONS.iter().enumerate() {
        if !wanted[i] {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        section(state, name, &mut text);
    }
    text
}

fn section(state: &ServerState, name: &str, text: &mut String) {
    let stats = &state.stats;
    match name {
        "server" => {
            let uptime = state.started.elapsed().as_secs();
            let _ = write!(
                text,
                "# Server\r\nredis_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_mode:standalone\r\nhotset_version:{}\r\nos:{} {}\r\narch_bits:64\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:{}\r\nexecutable:{}\r\nconfig_file:{}\r\n",
                super::server::REDIS_COMPAT_VERSION,
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                state.config.resp_port.number().unwrap_or(0),
                uptime / 86_400,
                state.params.value("hz").unwrap_or_default(),
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
                state.config.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            );
        }
        "clients" => {
            let _ = write!(
                text,
                "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\npubsub_clients:{}\r\n",
                state.connected_clients(),
                state.params.maxclients.load(Ordering::Relaxed),
                state.blocking.blocked(),
                state.tracking.totals().clients,
                state.pubsub.clients(),
            );
        }
        "memory" => {
            let db = state.db();
            let keyspaces: usize =
                db.keyspaces().list().iter().filter_map(|n| db.keyspaces().get(n)).map(|k| k.memory_bytes()).sum();
            // Documents and their indexes are most of what a server holds: used_memory
            // counts them too.
            let namespaces: usize =
                db.namespace_names().iter().filter_map(|n| db.describe(n).ok()).map(|i| i.memory_bytes).sum();
            // The allocator's count (everything the process holds: keys, documents,
            // indexes, buffers); the engines' own counts of keys and documents beside it.
            let used = crate::memory::used(state);
            let peak = state.memory.peak.load(Ordering::Relaxed);
            let rss = resident_bytes();
            let maxmemory = state.params.maxmemory.load(Ordering::Relaxed);
            // Memory is freed in place (FLUSHALL ASYNC too): no lazy free ever pends.
            let _ = write!(
                text,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\nused_memory_namespaces:{namespaces}\r\nused_memory_keyspaces:{keyspaces}\r\nmaxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_not_counted_for_evict:{}\r\nmem_allocator:mimalloc\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n",
                human(used as u64),
                human(rss),
                human(peak),
                human(maxmemory),
                state.params.value("maxmemory-policy").unwrap_or_default(),
                rss as f64 / used.max(1) as f64,
                crate::memory::Memory::not_counted(state),
            );
            // Lua's states and what their caches hold, in Redis' fields (counted as the
            // engine last reported them: a running script holds the engine).
            let lua = state.scripts.counts();
            let vm_total = lua.eval_vm_bytes + lua.functions_vm_bytes;
            let _ = write!(
                text,
                "used_memory_lua:{eval_vm}\r\nused_memory_vm_eval:{eval_vm}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:{}\r\nused_memory_vm_total:{vm_total}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:0\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\n",
                human(lua.eval_vm_bytes as u64),
                lua.cached_script_bytes,
                lua.cached_scripts,
                lua.functions,
                lua.libraries,
                lua.functions_vm_bytes,
                human(vm_total as u64),
                lua.cached_script_bytes,
                human(lua.cached_script_bytes as u64),
                eval_vm = lua.eval_vm_bytes,
            );
        }
        "persistence" => {
            let store = state.store().read();
            let _ = write!(
                text,
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\n",
                super::server::changes_since_save(state)
            );
            if let Some(store) = store.as_ref() {
                let wal = store.wal_stats();
                let (snapshot, snapshot_error) = store.snapshot_state();
                let _ = write!(
                    text,
                    "rdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\naof_enabled:1\r\naof_rewrite_in_progress:0\r\naof_last_write_status:{}\r\nappendfsync:{}\r\nwal_next_lsn:{}\r\nwal_durable_lsn:{}\r\nwal_bytes_written:{}\r\nwal_fsyncs:{}\r\nwal_segments:{}\r\nwal_failed:{}\r\nlast_snapshot_bytes:{}\r\nlast_snapshot_error:{}\r\n",
                    super::server::last_save(state),
                    if snapshot_error.is_some() { "err" } else { "ok" },
                    if wal.failed.is_some() { "err" } else { "ok" },
                    state.config.fsync,
                    wal.next_lsn,
                    wal.durable_lsn,
                    wal.bytes_written,
                    wal.fsyncs,
                    wal.segments,
                    wal.failed.as_deref().unwrap_or(""),
                    snapshot.map_or(0, |s| s.bytes),
                    snapshot_error.unwrap_or_default().replace(['\r', '\n'], " "),
                );
            }
        }
        "stats" => {
            let errors: u64 = stats.errors.lock().values().sum();
            let tracking = state.tracking.totals();
            let _ = write!(
                text,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:{}\r\ntotal_eviction_exceeded_time:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\ntotal_error_replies:{errors}\r\nprotocol_errors:{}\r\nrequest_batches:{}\r\ntls_handshake_failures:{}\r\n",
                stats.connections_received.load(Ordering::Relaxed),
                stats.commands.load(Ordering::Relaxed),
                stats.connections_rejected.load(Ordering::Relaxed),
                state.db().keyspaces().expired_keys(),
                state.memory.evicted_keys.load(Ordering::Relaxed),
                state.memory.exceeded_micros.load(Ordering::Relaxed) / 1000,
                state.pubsub.names(crate::pubsub::Kind::Channel),
                state.pubsub.patterns(),
                state.pubsub.names(crate::pubsub::Kind::Shard),
                tracking.keys,
                tracking.items,
                tracking.prefixes,
                stats.protocol_errors.load(Ordering::Relaxed),
                stats.batches.load(Ordering::Relaxed),
                state.tls_handshake_failures(),
            );
        }
        "replication" => {
            // No replicas yet: a primary with none, at offset 0.
            text.push_str("# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_repl_offset:0\r\nrepl_backlog_active:0\r\n");
        }
        "cpu" => {
            let (user, system) = cpu_seconds();
            let _ = write!(
                text,
                "# CPU\r\nused_cpu_sys:{system:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
            );
        }
        "modules" => text.push_str("# Modules\r\n"),
        "errorstats" => {
            text.push_str("# Errorstats\r\n");
            for (code, count) in stats.errors.lock().iter() {
                let _ = write!(text, "errorstat_{code}:count={count}\r\n");
            }
        }
        "cluster" => text.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
        "sources" => {
            // Live-sync sources: one line each, as Redis writes its replicas.
            text.push_str("# Sources\r\n");
            for status in state.syncs.statuses() {
                let state_name = serde_json::to_value(status.state).ok().and_then(|v| v.as_str().map(str::to_string));
                let _ = write!(
                    text,
                    "source_{}:state={},position={},lag_ms={},lag_bytes={},pending_events={},transactions={}\r\n",
                    status.name,
                    state_name.unwrap_or_default(),
                    status.position.as_deref().unwrap_or("-"),
                    status.lag_ms.map_or("-".to_string(), |lag| lag.to_string()),
                    status.lag_bytes.map_or("-".to_string(), |lag| lag.to_string()),
                    status.pending_events,
                    status.transactions,
                );
            }
        }
        "keyspace" => {
            text.push_str("# Keyspace\r\n");
            for name in state.db().keyspaces().list() {
                let Some(space) = state.db().keyspaces().get(&name) else { continue };
                if space.is_empty() {
                    continue;
                }
                // Numbered keyspaces print as Redis' db<n>; named ones under their name.
                let label = if name.bytes().all(|b| b.is_ascii_digit()) { format!("db{name}") } else { name };
                let _ = write!(text, "{label}:keys={},expires={},avg_ttl=0\r\n", space.len(), space.volatile_len());
            }
        }
        "commandstats" => {
            text.push_str("# Commandstats\r\n");
            for (spec, counts) in COMMANDS.iter().zip(stats.per_command.iter()) {
                let calls = counts.calls.load(Ordering::Relaxed);
                let rejected = counts.rejected.load(Ordering::Relaxed);
                if calls == 0 && rejected == 0 {
                    continue;
                }
                let usec = counts.usec.load(Ordering::Relaxed);
                let _ = write!(
                    text,
                    "cmdstat_{}:calls={calls},usec={usec},usec_per_call={:.2},rejected_calls={rejected},failed_calls={}\r\n",
                    spec.name.to_ascii_lowercase(),
                    usec as f64 / calls.max(1) as f64,
                    counts.failed.load(Ordering::Relaxed),
                );
            }
        }
        "latencystats" => text.push_str("# Latencystats\r\n"),
        _ => unreachable!("a section of SECTIONS"),
    }
}

/// Redis' `used_memory_human` form: `1.50M`.
fn human(bytes: u64) -> String {
    let units = [("G", 1u64 << 30), ("M", 1 << 20), ("K", 1 << 10)];
    for (unit, size) in units {
        if bytes >= size {
            return format!("{:.2}{unit}", bytes as f64 / size as f64);
        }
    }
    format!("{bytes}B")
}

/// The process's resident memory, from `/proc/self/statm` (0 where there is none).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|pages| pages.parse::<u64>().ok()).unwrap_or(0) * 4096
}

/// User and system CPU seconds of the process, from `/proc/self/stat` (in the kernel's
/// fixed USER_HZ of 100 ticks a second).
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    // utime and stime are the 14th and 15th fields of the line, 12th and 13th after ')'.
    (ticks(11), ticks(12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_redis_writes_them() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(1536), "1.50K");
        assert_eq!(human(3 << 30), "3.00G");
    }

    #[test]
    fn cpu_time_is_read_from_proc() {
        // Burn some CPU (well over one 10 ms tick): the process has used some.
        let mut x = 0u64;
        for i in 0..200_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let (user, system) = cpu_seconds();
        assert!(user + system >= 0.01, "{user} {system}");
        assert!(resident_bytes() > 0);
    }
}
