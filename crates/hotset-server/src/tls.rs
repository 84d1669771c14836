//! TLS for the Redis protocol and HTTP listeners (rustls, with the `ring` crypto provider).
//!
//! Owns: reading the certificate, key and client CA files named in the config into rustls
//! server configurations (every failure names its file), the handshake of each accepted
//! connection (in that connection's own task, under `tls.handshake_timeout_ms`, at most
//! `limits.max_clients` at once per listener), and the listener that hands axum only
//! connections whose handshake finished. Never: serve a request (the RESP and HTTP code
//! see a byte stream and do not know it is encrypted), or let a failed handshake reach
//! beyond its own connection: it is logged at debug level, counted, and the socket closed.

use crate::config::Config;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerConfig, WebPkiClientVerifier};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Connections whose handshake finished and that axum has not taken yet. Handshake tasks
/// wait while it is full, so it bounds nothing but the hand-over.
const HTTPS_HANDOVER_CAPACITY: usize = 64;

/// One TLS listener's acceptor, its limits and its failure count.
pub struct Tls {
    acceptor: TlsAcceptor,
    handshake_timeout: Duration,
    /// One permit per handshake in progress: a flood of clients that connect and never
    /// finish the handshake holds at most this many sockets, each for at most the timeout.
    handshakes: Semaphore,
    /// Handshakes that failed, timed out or were refused for lack of a permit.
    pub handshake_failures: AtomicU64,
}

/// The TLS side of both listeners: one server configuration, two ALPN offers.
pub struct TlsListeners {
    pub resp: Arc<Tls>,
    pub https: Arc<Tls>,
}

impl TlsListeners {
    /// Reads `tls.cert_file`, `tls.key_file` and `tls.ca_file`; errors name the file.
    pub fn load(config: &Config) -> Result<TlsListeners, String> {
        let server_config = server_config(config)?;
        let mut https_config = server_config.clone();
        // axum serves HTTP/1.1 here (its `http2` feature is off).
        https_config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tls = |server_config: ServerConfig| {
            Arc::new(Tls {
                acceptor: TlsAcceptor::from(Arc::new(server_config)),
                handshake_timeout: config.tls_handshake_timeout(),
                handshakes: Semaphore::new(config.limits.max_clients),
                handshake_failures: AtomicU64::new(0),
            })
        };
        Ok(TlsListeners { resp: tls(server_config), https: tls(https_config) })
    }
}

fn server_config(config: &Config) -> Result<ServerConfig, String> {
    let (Some(cert_file), Some(key_file)) = (&config.tls.cert_file, &config.tls.key_file) else {
        return Err("tls_port and http_tls_port need tls.cert_file and tls.key_file".into());
    };
    let certificates = read_certificates("tls.cert_file", cert_file)?;
    let key = read_private_key(key_file)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("setting up TLS: {e}"))?;
    let builder = match &config.tls.ca_file {
        None => builder.with_no_client_auth(),
        Some(ca_file) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in read_certificates("tls.ca_file", ca_file)? {
                roots.add(certificate).map_err(|e| format!("tls.ca_file {}: {e}", ca_file.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("tls.ca_file {}: {e}", ca_file.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    // rustls checks here that the key is the certificate's.
    builder.with_single_cert(certificates, key).map_err(|e| match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => format!(
            "tls.key_file {} is not the private key of tls.cert_file {} (its first certificate)",
            key_file.display(),
            cert_file.display()
        ),
        e => format!("tls.cert_file {} with tls.key_file {}: {e}", cert_file.display(), key_file.display()),
    })
}

fn read_file(setting: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("reading {setting} {}: {e}", path.display()))
}

/// Every certificate of a PEM file, in order; at least one.
fn read_certificates(setting: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_file(setting, path)?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{setting} {}: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("{setting} {}: no PEM certificate (BEGIN CERTIFICATE) in it", path.display()));
    }
    Ok(certificates)
}

/// The first private key of a PEM file: PKCS#8, RSA (PKCS#1) or SEC1.
fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let pem = read_file("tls.key_file", path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => {
            format!("tls.key_file {}: no PKCS#8, RSA or SEC1 private key in it", path.display())
        }
        e => format!("tls.key_file {}: {e}", path.display()),
    })
}

impl Tls {
    /// Runs the server side of the handshake; `None` (logged and counted) when the client
    /// fails it, takes longer than the timeout, or too many handshakes are under way.
    pub async fn handshake(&self, stream: TcpStream, peer: SocketAddr) -> Option<TlsStream<TcpStream>> {
        let Ok(_permit) = self.handshakes.try_acquire() else {
            self.handshake_failures.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, "TLS handshake refused: too many handshakes under way");
            return None;
        };
        let failure = match tokio::time::timeout(self.handshake_timeout, self.acceptor.accept(stream)).await {
            Ok(Ok(stream)) => return Some(stream),
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no handshake within {} ms", self.handshake_timeout.as_millis()),
        };
        let failures = self.handshake_failures.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(%peer, error = %failure, failures, "TLS handshake failed");
        None
    }
}

/// An axum listener over TLS: a task accepts TCP connections, runs each handshake in a
/// task of its own, and passes the finished streams here, so one slow client never holds
/// up the others' handshakes.
pub struct HttpsListener {
    handshaken: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl HttpsListener {
    /// Starts accepting on `listener` (within the current runtime).
    pub fn start(listener: TcpListener, tls: Arc<Tls>) -> std::io::Result<HttpsListener> {
        let local = listener.local_addr()?;
        let (sender, handshaken) = mpsc::channel(HTTPS_HANDOVER_CAPACITY);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    // Out of descriptors and the like: log, pause briefly, go on accepting.
                    Err(error) => {
                        tracing::warn!(%error, "accepting an HTTPS connection failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let (tls, sender) = (Arc::clone(&tls), sender.clone());
                tokio::spawn(async move {
                    if let Some(stream) = tls.handshake(stream, peer).await {
                        // Fails only once axum has stopped serving, when nothing is left to do.
                        let _ = sender.send((stream, peer)).await;
                    }
                });
            }
        });
        Ok(HttpsListener { handshaken, local })
    }
}

impl axum::serve::Listener for HttpsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.handshaken.recv().await {
            Some(accepted) => accepted,
            // The accept task holds a sender for as long as the runtime runs.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A config naming a fresh self-signed certificate (its files in `dir`).
    fn config_with_certificate(dir: &Path, handshake_timeout_ms: Option<u64>) -> Config {
        let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, certified.cert.pem()).unwrap();
        std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
        let mut config = Config::default();
        config.tls.cert_file = Some(cert);
        config.tls.key_file = Some(key);
        if let Some(ms) = handshake_timeout_ms {
            config.tls.handshake_timeout_ms = ms;
        }
        config
    }

    /// On tokio's paused clock, which moves only when every task waits (and then straight
    /// to the next timer), a client that connects and never starts its handshake is dropped
    /// when `tls.handshake_timeout_ms` has passed, not before and not at the default's 10 s,
    /// and counted; its side sees the connection closed.
    #[tokio::test(start_paused = true)]
    async fn a_silent_client_is_dropped_when_the_handshake_timeout_passes() {
        let dir = tempfile::tempdir().unwrap();
        for (setting, expected) in [(Some(200), Duration::from_millis(200)), (None, Duration::from_secs(10))] {
            let listeners = TlsListeners::load(&config_with_certificate(dir.path(), setting)).unwrap();
            for tls in [&listeners.resp, &listeners.https] {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
                let (stream, peer) = listener.accept().await.unwrap();
                let started = tokio::time::Instant::now();
                assert!(tls.handshake(stream, peer).await.is_none(), "a silent client never handshakes");
                let took = started.elapsed();
                // The timer wheel counts whole milliseconds, rounding a deadline up.
                assert!(took >= expected && took < expected + Duration::from_millis(1), "{setting:?}: {took:?}");
                assert_eq!(tls.handshake_failures.load(Ordering::Relaxed), 1);
                let mut buf = [0u8; 8];
                match client.read(&mut buf).await {
                    Ok(0) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
                    other => panic!("the client's side is still open: {other:?}"),
                }
            }
        }
    }
}
