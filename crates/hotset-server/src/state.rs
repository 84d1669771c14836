//! What every connection of a running server shares: the store, the configuration, the
//! client list and the counters INFO and /metrics report.
//!
//! Owns: `ServerState` and `ClientInfo`. Never: hold a lock while a command runs on the
//! engine (the client list is locked only to register, rename or list clients).

use crate::config::Config;
use crate::metrics::Histogram;
use crate::pubsub::{Inbox, Outbox, PubSub};
use hotset_core::Database;
use hotset_ops::{Engine, Settings};
use hotset_storage::Store;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Shared by all connections.
pub struct ServerState {
    /// The database and its store, which every interface's requests are applied to.
    pub engine: Arc<Engine>,
    /// The live-sync sources following into it (started by `server` once it runs).
    pub syncs: Arc<hotset_sync::Syncs>,
    pub config: Config,
    /// Redis' runtime parameters (CONFIG GET/SET), started from `config`.
    pub params: crate::params::Params,
    pub started: Instant,
    pub clients: Mutex<BTreeMap<u64, ClientInfo>>,
    /// Every pub/sub subscription (shared with the keyspace-event listener).
    pub pubsub: Arc<PubSub>,
    /// Clients blocked on lists.
    pub blocking: crate::blocking::Blocking,
    /// Keys watched for MULTI/EXEC.
    pub watches: Arc<crate::watch::Watches>,
    /// Client-side caching: who tracks which keys.
    pub tracking: Arc<crate::tracking::Tracking>,
    /// SHUTDOWN's request to stop, which the serving loop awaits beside the signals (a
    /// permit is kept if it comes before the loop waits).
    pub shutdown: tokio::sync::Notify,
    next_client_id: AtomicU64,
    pub stats: Stats,
    /// `maxmemory`'s eviction state and counters.
    pub memory: crate::memory::Memory,
    /// The TLS listeners' acceptors, once they serve (for their handshake failure counts).
    pub tls: std::sync::OnceLock<[Arc<crate::tls::Tls>; 2]>,
    /// The script gate every batch passes: a running script holds it closed.
    pub gate: Arc<crate::gate::Gate>,
    /// Lua scripting: the engine, the running script, the libraries' counts.
    pub scripts: crate::scripting::Scripts,
}

/// What CLIENT LIST / CLIENT INFO show of a connection.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    pub id: u64,
    pub addr: SocketAddr,
    pub name: String,
    pub lib_name: String,
    pub lib_ver: String,
    pub connected: Instant,
    pub keyspace: String,
    pub protocol: u8,
    /// Where pushes for this connection go (pub/sub messages, CLIENT KILL).
    pub outbox: Outbox,
}

/// Counters, all monotonic except `connected`.
pub struct Stats {
    pub connections_received: AtomicU64,
    pub connections_rejected: AtomicU64,
    pub commands: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub batches: AtomicU64,
    pub http_requests: AtomicU64,
    pub resp_latency: Histogram,
    pub http_latency: Histogram,
    /// Per command (by its place in the command table): calls, failed calls, rejected
    /// calls, and microseconds.
    pub per_command: std::sync::LazyLock<Box<[CommandStats]>>,
    /// Error replies by their first word (`ERR`, `WRONGTYPE`...), for INFO errorstats.
    pub errors: Mutex<BTreeMap<String, u64>>,
    /// The last snapshot INFO saw (its file's modification time) and the keyspaces'
    /// change count then: `rdb_changes_since_last_save` counts from it.
    pub save_mark: Mutex<(Option<std::time::SystemTime>, u64)>,
}

/// One command's counters (INFO commandstats).
#[derive(Default)]
pub struct CommandStats {
    pub calls: AtomicU64,
    pub failed: AtomicU64,
    pub rejected: AtomicU64,
    pub usec: AtomicU64,
}

impl Stats {
    /// Adds a batch's tallies; the batch's time is shared among its calls (commands are
    /// timed per batch, not one by one: two clock reads per command cost a measurable
    /// share of a pipelined GET).
    pub fn add_tallies(&self, tallies: &[crate::commands::Tally], elapsed: std::time::Duration) {
        let calls: u64 = tallies.iter().map(|t| t.calls).sum();
        let usec_each = elapsed.as_micros() as u64 / calls.max(1);
        for tally in tallies {
            let stats = &self.per_command[tally.command];
            if tally.calls > 0 {
                stats.calls.fetch_add(tally.calls, Ordering::Relaxed);
                stats.usec.fetch_add(usec_each * tally.calls, Ordering::Relaxed);
            }
            if tally.failed > 0 {
                stats.failed.fetch_add(tally.failed, Ordering::Relaxed);
            }
            if tally.rejected > 0 {
                stats.rejected.fetch_add(tally.rejected, Ordering::Relaxed);
            }
        }
    }

    /// Counts a failure of `spec` that ended a blocked call (its call was counted when it
    /// blocked).
    pub fn count_failure(&self, spec: &'static crate::commands::table::Spec) {
        self.per_command[crate::commands::table::index_of(spec)].failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an error reply by its code (the first word of its message).
    pub fn count_error(&self, message: &str) {
        let code = message.split(' ').next().unwrap_or("ERR");
        *self.errors.lock().entry(code.to_string()).or_default() += 1;
    }
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            connections_received: AtomicU64::default(),
            connections_rejected: AtomicU64::default(),
            commands: AtomicU64::default(),
            protocol_errors: AtomicU64::default(),
            batches: AtomicU64::default(),
            http_requests: AtomicU64::default(),
            resp_latency: Histogram::default(),
            http_latency: Histogram::default(),
            per_command: std::sync::LazyLock::new(|| {
                crate::commands::table::COMMANDS.iter().map(|_| CommandStats::default()).collect()
            }),
            errors: Mutex::new(BTreeMap::new()),
            save_mark: Mutex::new((None, 0)),
        }
    }
}

impl ServerState {
    /// The state of a server on `store`; its sources' tasks will run on `runtime`.
    pub fn new(store: Store, config: Config, runtime: tokio::runtime::Handle) -> Arc<ServerState> {
        let settings = Settings { query_timeout: config.query_time_limit() };
        let engine = Arc::new(Engine::on_store(store, settings));
        let syncs = hotset_sync::Syncs::new(Arc::clone(&engine), runtime);
        let params = crate::params::Params::new(&config.fixed_params());
        params.set_all(&config.redis_params()).expect("Config::validate checked the [redis] table");
        // WATCH and client-side caching share the engine's one watcher slot, and the count
        // that says whether anyone listens.
        let listeners = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let watches = Arc::new(crate::watch::Watches::new(Arc::clone(&listeners)));
        let max_keys = Arc::clone(&params.tracking_max_keys);
        let tracking = Arc::new(crate::tracking::Tracking::new(Arc::clone(&listeners), max_keys));
        let hooks = crate::hooks::KeyHooks { watches: Arc::clone(&watches), tracking: Arc::clone(&tracking) };
        assert!(engine.database().keyspaces().set_watch(Arc::new(hooks), listeners), "a database has one watcher");
        let pubsub = Arc::new(PubSub::default());
        let flags = Arc::clone(&params.notify_flags);
        let listener = Arc::new(crate::notify::KeyspaceEvents { pubsub: Arc::clone(&pubsub), flags: flags.clone() });
        assert!(engine.database().keyspaces().set_notify(listener, flags), "a database has one event listener");
        let state = Arc::new(ServerState {
            params,
            engine,
            syncs,
            config,
            started: Instant::now(),
            clients: Mutex::new(BTreeMap::new()),
            pubsub,
            blocking: crate::blocking::Blocking::default(),
            watches,
            tracking,
            shutdown: tokio::sync::Notify::new(),
            next_client_id: AtomicU64::new(1),
            stats: Stats::default(),
            memory: crate::memory::Memory::default(),
            tls: std::sync::OnceLock::new(),
            gate: Arc::default(),
            scripts: crate::scripting::Scripts::default(),
        });
        // Function libraries are data: FUNCTION LOAD logged them, recovery restored the
        // entry.
        state.scripts.load_libraries(state.db());
        let gate = crate::memory::DocumentGate(Arc::downgrade(&state));
        assert!(state.engine.set_memory_gate(Arc::new(gate)), "an engine has one memory gate");
        state
    }

    /// The engine's database (key-value commands and INFO reach it directly).
    pub fn db(&self) -> &Database {
        self.engine.database()
    }

    /// The engine's store; `None` once the server has shut it down.
    pub fn store(&self) -> &RwLock<Option<Store>> {
        self.engine.store()
    }

    /// TLS handshakes that failed, timed out or were refused, over both TLS listeners.
    pub fn tls_handshake_failures(&self) -> u64 {
        self.tls
            .get()
            .map_or(0, |listeners| listeners.iter().map(|tls| tls.handshake_failures.load(Ordering::Relaxed)).sum())
    }

    /// Registers a new connection: its id and both ends of its push queue; `None` when
    /// `max_clients` are connected already.
    pub fn connect(&self, addr: SocketAddr) -> Option<(u64, Outbox, Inbox)> {
        self.stats.connections_received.fetch_add(1, Ordering::Relaxed);
        let mut clients = self.clients.lock();
        if clients.len() as u64 >= self.params.maxclients.load(Ordering::Relaxed) {
            self.stats.connections_rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let id = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        let (outbox, inbox) = crate::pubsub::outbox();
        let info = ClientInfo {
            id,
            addr,
            name: String::new(),
            lib_name: String::new(),
            lib_ver: String::new(),
            connected: Instant::now(),
            keyspace: "0".into(),
            protocol: 2,
            outbox: outbox.clone(),
        };
        clients.insert(id, info);
        Some((id, outbox, inbox))
    }

    /// An id for a session that is no client of the RESP listener (an HTTP request that
    /// runs a command as a batch of one): taken from the clients' sequence, so it never
    /// names a connection.
    pub fn session_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn disconnect(&self, id: u64) {
        self.clients.lock().remove(&id);
        self.pubsub.disconnect(id);
        self.blocking.cancel(id);
        self.watches.unwatch(id);
        self.tracking.disable(id);
    }

    /// Changes what the client list shows for connection `id`.
    pub fn update_client(&self, id: u64, change: impl FnOnce(&mut ClientInfo)) {
        if let Some(info) = self.clients.lock().get_mut(&id) {
            change(info);
        }
    }

    pub fn connected_clients(&self) -> usize {
        self.clients.lock().len()
    }
}
