//! Running the server: open the store, bind the listeners, serve until a signal, close.
//!
//! Owns: the tokio runtime, the accept loops, the active-expiry task, the ready line and
//! shutdown order (stop accepting, then close the store so everything acknowledged is
//! fsynced). Never: handle a request itself.

use crate::config::Config;
use crate::state::ServerState;
use crate::{http, resp};
use hotset_storage::{Store, StoreOptions};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// How often active expiry runs (Redis' default `hz 10`), and how many keys with a TTL it
/// may examine per keyspace each time.
/// How often TTL indexes are checked (documents go within about this long of their time),
/// and the most documents one index deletes under one lock.
const TTL_INDEX_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);
const TTL_INDEX_BATCH: usize = 10_000;
const EXPIRY_PERIOD: Duration = Duration::from_millis(100);
const EXPIRY_BUDGET: usize = 200;

/// Serves until SIGINT or SIGTERM; returns the process exit code.
pub fn serve(config: Config) -> Result<(), String> {
    config.validate()?;
    let mut options = StoreOptions::new(&config.data);
    options.fsync = config.fsync_policy()?;
    options.recovery = config.recovery_mode()?;
    tracing::info!(data = %config.data.display(), fsync = %config.fsync, "opening the data folder");
    let store = Store::open(options).map_err(|e| format!("opening {}: {e}", config.data.display()))?;
    let report = store.recovery();
    tracing::info!(
        snapshot = ?report.snapshot.as_ref().map(|s| s.path.display().to_string()),
        log_records = report.records,
        ms = report.duration_ms,
        "recovered"
    );
    let threads =
        if config.threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { config.threads };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("hotset-io")
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let state = ServerState::new(store, config);
    let served = runtime.block_on(run(Arc::clone(&state)));
    // Connections still open are dropped with the runtime; then the log is closed, so
    // every write that was acknowledged is on disk.
    runtime.shutdown_timeout(Duration::from_secs(5));
    if let Some(store) = state.store.write().take() {
        store.close().map_err(|e| format!("closing the store: {e}"))?;
    }
    tracing::info!("stopped");
    served
}

async fn run(state: Arc<ServerState>) -> Result<(), String> {
    let config = &state.config;
    let resp_addr = format!("{}:{}", config.bind, config.resp_port);
    let http_addr = format!("{}:{}", config.bind, config.http_port);
    let resp_listener = TcpListener::bind(&resp_addr).await.map_err(|e| format!("binding RESP {resp_addr}: {e}"))?;
    let http_listener = TcpListener::bind(&http_addr).await.map_err(|e| format!("binding HTTP {http_addr}: {e}"))?;
    let resp_local = resp_listener.local_addr().map_err(|e| e.to_string())?;
    let http_local = http_listener.local_addr().map_err(|e| e.to_string())?;

    let accept_state = Arc::clone(&state);
    tokio::spawn(async move {
        loop {
            match resp_listener.accept().await {
                Ok((stream, addr)) => {
                    tokio::spawn(resp::conn::serve(Arc::clone(&accept_state), stream, addr));
                }
                // Out of descriptors and the like: log, pause briefly, go on accepting.
                Err(error) => {
                    tracing::warn!(%error, "accepting a RESP connection failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
    let app = http::router(Arc::clone(&state));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(http_listener, app).await {
            tracing::error!(%error, "the HTTP listener stopped");
        }
    });
    let expiry_state = Arc::clone(&state);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EXPIRY_PERIOD);
        loop {
            tick.tick().await;
            expiry_state.db.keyspaces().active_expire_cycle(EXPIRY_BUDGET);
        }
    });
    let ttl_state = Arc::clone(&state);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TTL_INDEX_PERIOD);
        loop {
            tick.tick().await;
            let db = Arc::clone(&ttl_state.db);
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            // Deleting documents takes namespace write locks and may take a while: off the
            // I/O threads. Steps of TTL_INDEX_BATCH release the locks in between; a full
            // step means more may be due, so this goes on until one comes back short.
            let expire_due = move || {
                let mut total = 0;
                loop {
                    let count = db.expire_documents(now, TTL_INDEX_BATCH)?;
                    total += count;
                    if count < TTL_INDEX_BATCH {
                        return Ok::<_, hotset_core::Error>(total);
                    }
                }
            };
            match tokio::task::spawn_blocking(expire_due).await {
                Ok(Ok(0)) => {}
                Ok(Ok(count)) => tracing::debug!(count, "ttl indexes expired documents"),
                Ok(Err(error)) => tracing::warn!(%error, "ttl index expiry failed; retrying next second"),
                Err(error) => tracing::error!(%error, "ttl index expiry panicked"),
            }
        }
    });

    // Tools wait for this line (and for /health) before they connect.
    println!("hotset ready: resp {resp_local} http {http_local} data {}", state.config.data.display());
    tracing::info!(%resp_local, %http_local, "ready");
    shutdown_signal().await;
    tracing::info!("shutting down");
    Ok(())
}

async fn shutdown_signal() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
