//! What every connection of a running server shares: the store, the configuration, the
//! client list and the counters INFO and /metrics report.
//!
//! Owns: `ServerState` and `ClientInfo`. Never: hold a lock while a command runs on the
//! engine (the client list is locked only to register, rename or list clients).

use crate::config::Config;
use crate::metrics::Histogram;
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
    pub started: Instant,
    pub clients: Mutex<BTreeMap<u64, ClientInfo>>,
    next_client_id: AtomicU64,
    pub stats: Stats,
    /// The TLS listeners' acceptors, once they serve (for their handshake failure counts).
    pub tls: std::sync::OnceLock<[Arc<crate::tls::Tls>; 2]>,
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
}

/// Counters, all monotonic except `connected`.
#[derive(Default)]
pub struct Stats {
    pub connections_received: AtomicU64,
    pub connections_rejected: AtomicU64,
    pub commands: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub batches: AtomicU64,
    pub http_requests: AtomicU64,
    pub resp_latency: Histogram,
    pub http_latency: Histogram,
}

impl ServerState {
    /// The state of a server on `store`; its sources' tasks will run on `runtime`.
    pub fn new(store: Store, config: Config, runtime: tokio::runtime::Handle) -> Arc<ServerState> {
        let settings = Settings { query_timeout: config.query_time_limit() };
        let engine = Arc::new(Engine::on_store(store, settings));
        let syncs = hotset_sync::Syncs::new(Arc::clone(&engine), runtime);
        Arc::new(ServerState {
            engine,
            syncs,
            config,
            started: Instant::now(),
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            stats: Stats::default(),
            tls: std::sync::OnceLock::new(),
        })
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

    /// Registers a new connection; `None` when `max_clients` are connected already.
    pub fn connect(&self, addr: SocketAddr) -> Option<u64> {
        self.stats.connections_received.fetch_add(1, Ordering::Relaxed);
        let mut clients = self.clients.lock();
        if clients.len() >= self.config.limits.max_clients {
            self.stats.connections_rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let id = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        let info = ClientInfo {
            id,
            addr,
            name: String::new(),
            lib_name: String::new(),
            lib_ver: String::new(),
            connected: Instant::now(),
            keyspace: "0".into(),
            protocol: 2,
        };
        clients.insert(id, info);
        Some(id)
    }

    pub fn disconnect(&self, id: u64) {
        self.clients.lock().remove(&id);
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
