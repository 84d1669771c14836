//! Running the server: bind every listener, open the store (recovery), serve until a
//! signal, close.
//!
//! Owns: the tokio runtime, the accept loops, the active-expiry task, the ready line and
//! the order of start-up and shutdown. Start-up binds before it recovers, so a port in use
//! is reported at once, not after replaying the log; connections
//! made during recovery wait in the listen backlog and are served once the data is
//! loaded. Shutdown stops accepting, then closes the store so everything acknowledged is
//! fsynced. Never: handle a request itself.

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
    let threads =
        if config.threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { config.threads };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("hotset-io")
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let listeners = runtime.block_on(Listeners::bind(&config))?;
    let store = open_store(&config)?;
    let state = ServerState::new(store, config);
    let served = runtime.block_on(run(Arc::clone(&state), listeners));
    // Connections still open are dropped with the runtime; then the log is closed, so
    // every write that was acknowledged is on disk.
    runtime.shutdown_timeout(Duration::from_secs(5));
    if let Some(store) = state.store.write().take() {
        store.close().map_err(|e| format!("closing the store: {e}"))?;
    }
    tracing::info!("stopped");
    served
}

/// Opens the data folder and recovers it: the long part of start-up.
fn open_store(config: &Config) -> Result<Store, String> {
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
    Ok(store)
}

/// Both listeners, bound (the kernel queues connections from then on) but not yet
/// accepting.
struct Listeners {
    resp: TcpListener,
    http: TcpListener,
}

impl Listeners {
    async fn bind(config: &Config) -> Result<Listeners, String> {
        Ok(Listeners {
            resp: bind(config, "resp_port", config.resp_port).await?,
            http: bind(config, "http_port", config.http_port).await?,
        })
    }
}

async fn bind(config: &Config, setting: &str, port: u16) -> Result<TcpListener, String> {
    let addr = format!("{}:{port}", config.bind);
    TcpListener::bind(&addr).await.map_err(|e| format!("binding {addr} ({setting}): {e}"))
}

/// The ready line tools wait for: `hotset ready: resp ADDR http ADDR data DIR`.
fn ready_line(listeners: &Listeners, config: &Config) -> Result<String, String> {
    let shown =
        |listener: &TcpListener| listener.local_addr().map_err(|e| format!("reading a listener's address: {e}"));
    Ok(format!(
        "hotset ready: resp {} http {} data {}",
        shown(&listeners.resp)?,
        shown(&listeners.http)?,
        config.data.display()
    ))
}

/// Accepts RESP connections, each served by a task of its own.
fn accept_resp(state: &Arc<ServerState>, listener: TcpListener) {
    let state = Arc::clone(state);
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, addr)) => {
                    tokio::spawn(resp::conn::serve(Arc::clone(&state), stream, addr));
                }
                // Out of descriptors and the like: log, pause briefly, go on accepting.
                Err(error) => {
                    tracing::warn!(%error, "accepting a RESP connection failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
}

async fn run(state: Arc<ServerState>, listeners: Listeners) -> Result<(), String> {
    let ready = ready_line(&listeners, &state.config)?;
    accept_resp(&state, listeners.resp);
    let app = http::router(Arc::clone(&state));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listeners.http, app).await {
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

    // The handlers go in before the ready line: a tool that stops the server as soon as
    // it has seen the line must get a clean shutdown, not the signal's default (death).
    let mut signals = ShutdownSignals::install()?;
    // Tools wait for this line (and for /health) before they connect.
    println!("{ready}");
    tracing::info!(listeners = %ready.trim_start_matches("hotset ready: "), "ready");
    signals.wait().await;
    tracing::info!("shutting down");
    Ok(())
}

/// SIGINT and SIGTERM, caught from `install` on.
struct ShutdownSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn install() -> Result<ShutdownSignals, String> {
        use tokio::signal::unix::{SignalKind, signal};
        let handler =
            |kind: SignalKind, name: &str| signal(kind).map_err(|e| format!("installing the {name} handler: {e}"));
        Ok(ShutdownSignals {
            interrupt: handler(SignalKind::interrupt(), "SIGINT")?,
            terminate: handler(SignalKind::terminate(), "SIGTERM")?,
        })
    }

    async fn wait(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
