//! Running the server: read the TLS files, bind every listener, open the store (recovery),
//! serve until a signal, close.
//!
//! Owns: the tokio runtime, the accept loops, the active-expiry task, the ready line and
//! the order of start-up and shutdown. Start-up binds before it recovers, so a port in use
//! or a bad certificate is reported at once, not after replaying the log; connections
//! made during recovery wait in the listen backlog and are served once the data is
//! loaded. Shutdown stops accepting, then closes the store so everything acknowledged is
//! fsynced. Never: handle a request itself.

use crate::config::{Config, Port};
use crate::state::ServerState;
use crate::tls::{HttpsListener, Tls, TlsListeners};
use crate::{http, resp};
use hotset_storage::{Store, StoreOptions};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Serves until SIGINT, SIGTERM or SHUTDOWN; returns the process exit code.
pub fn serve(config: Config) -> Result<(), String> {
    config.validate()?;
    let tls = if config.tls_enabled() { Some(TlsListeners::load(&config)?) } else { None };
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
    let state = ServerState::new(store, config, runtime.handle().clone());
    // Sources start before the listeners serve: their namespaces are read-only to clients
    // from the first request on.
    let sources = state.config.sources.clone();
    if let Some(refused) = runtime.block_on(async { state.syncs.start_all(sources) }).first() {
        return Err(format!("[[sources]] in the config: {refused}"));
    }
    let served = runtime.block_on(run(Arc::clone(&state), listeners, tls));
    if state.gate.is_closed() {
        // SHUTDOWN while a script runs (Redis' way out of one that wrote and will not end):
        // its writes were never logged (a script's block is one record, appended when it
        // ends), and the runtime would wait for it for ever. Acknowledged writes are in the
        // log already, as after a kill -9.
        tracing::warn!("stopping while a script runs: its changes are dropped");
        // Under `never` an acknowledged write may still be queued: write it out first.
        if let Some(store) = state.store().read().as_ref()
            && let Err(error) = store.sync()
        {
            tracing::error!(%error, "writing the log before stopping failed");
        }
        std::process::exit(0);
    }
    // The sources stop first, so no apply is half-way when the log closes.
    runtime.block_on(state.syncs.shutdown());
    // Connections still open are dropped with the runtime; then the log is closed, so
    // every write that was acknowledged is on disk.
    runtime.shutdown_timeout(Duration::from_secs(5));
    if let Some(store) = state.store().write().take() {
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
    options.limits.document_bytes_max = config.limits.max_document_bytes;
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

/// Every listener the config asks for, bound (the kernel queues connections from then
/// on) but not yet accepting.
struct Listeners {
    resp: Option<TcpListener>,
    http: Option<TcpListener>,
    tls: Option<TcpListener>,
    https: Option<TcpListener>,
}

impl Listeners {
    async fn bind(config: &Config) -> Result<Listeners, String> {
        Ok(Listeners {
            resp: bind(config, "resp_port", config.resp_port).await?,
            http: bind(config, "http_port", config.http_port).await?,
            tls: bind(config, "tls_port", config.tls_port).await?,
            https: bind(config, "http_tls_port", config.http_tls_port).await?,
        })
    }
}

async fn bind(config: &Config, setting: &str, port: Port) -> Result<Option<TcpListener>, String> {
    let Some(port) = port.number() else { return Ok(None) };
    let addr = format!("{}:{port}", config.bind);
    let listener = TcpListener::bind(&addr).await.map_err(|e| format!("binding {addr} ({setting}): {e}"))?;
    Ok(Some(listener))
}

fn local_addr(listener: &Option<TcpListener>) -> Result<Option<SocketAddr>, String> {
    listener.as_ref().map(|l| l.local_addr().map_err(|e| format!("reading a listener's address: {e}"))).transpose()
}

/// The ready line tools wait for: `hotset ready: resp ADDR http ADDR data DIR`, then
/// ` tls ADDR https ADDR` when a TLS port is set; `-` stands for a listener that is off.
fn ready_line(listeners: &Listeners, config: &Config) -> Result<String, String> {
    let shown = |listener: &Option<TcpListener>| {
        local_addr(listener).map(|addr| addr.map_or_else(|| "-".to_string(), |addr| addr.to_string()))
    };
    let mut line = format!(
        "hotset ready: resp {} http {} data {}",
        shown(&listeners.resp)?,
        shown(&listeners.http)?,
        config.data.display()
    );
    if config.tls_enabled() {
        line += &format!(" tls {} https {}", shown(&listeners.tls)?, shown(&listeners.https)?);
    }
    Ok(line)
}

/// Accepts RESP connections, each served by a task of its own; over TLS that task runs
/// the handshake first.
fn accept_resp(state: &Arc<ServerState>, listener: TcpListener, tls: Option<Arc<Tls>>) {
    let state = Arc::clone(state);
    tokio::spawn(async move {
        loop {
            let (stream, addr) = match listener.accept().await {
                Ok(accepted) => accepted,
                // Out of descriptors and the like: log, pause briefly, go on accepting.
                Err(error) => {
                    tracing::warn!(%error, "accepting a RESP connection failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let state = Arc::clone(&state);
            match &tls {
                None => {
                    tokio::spawn(resp::conn::serve(state, stream, addr));
                }
                Some(tls) => {
                    let tls = Arc::clone(tls);
                    tokio::spawn(async move {
                        if let Some(stream) = tls.handshake(stream, addr).await {
                            resp::conn::serve(state, stream, addr).await;
                        }
                    });
                }
            }
        }
    });
}

/// Serves the HTTP API on `listener` (plain, or `HttpsListener`).
fn serve_http<L: axum::serve::Listener<Addr = SocketAddr>>(app: axum::Router, listener: L, name: &'static str) {
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the {name} listener stopped");
        }
    });
}

async fn run(state: Arc<ServerState>, listeners: Listeners, tls: Option<TlsListeners>) -> Result<(), String> {
    let ready = ready_line(&listeners, &state.config)?;
    let Listeners { resp: resp_listener, http: http_listener, tls: tls_listener, https: https_listener } = listeners;
    if let Some(listener) = resp_listener {
        accept_resp(&state, listener, None);
    }
    let app = http::router(Arc::clone(&state));
    if let Some(listener) = http_listener {
        serve_http(app.clone(), listener, "HTTP");
    }
    if let Some(tls) = tls {
        let _ = state.tls.set([Arc::clone(&tls.resp), Arc::clone(&tls.https)]);
        if let Some(listener) = tls_listener {
            accept_resp(&state, listener, Some(tls.resp));
        }
        if let Some(listener) = https_listener {
            let listener = HttpsListener::start(listener, tls.https).map_err(|e| format!("starting HTTPS: {e}"))?;
            serve_http(app, listener, "HTTPS");
        }
    }
    // Key expiry, ttl index expiry and snapshots are the store's maintenance (hotset-core).
    // The handlers go in before the ready line: a tool that stops the server as soon as
    // it has seen the line must get a clean shutdown, not the signal's default (death).
    let mut signals = ShutdownSignals::install()?;
    // Tools wait for this line (and for /health) before they connect.
    println!("{ready}");
    tracing::info!(listeners = %ready.trim_start_matches("hotset ready: "), "ready");
    tokio::select! {
        () = signals.wait() => {}
        // SHUTDOWN: the same clean stop as a signal.
        () = state.shutdown.notified() => {}
    }
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
