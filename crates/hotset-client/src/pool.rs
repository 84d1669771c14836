//! Connections to one server shared by many threads, behind a `hotset://` address.
//!
//! Owns: parsing `hotset://[:password@]host[:port]`, [`Pool`]: a call takes an idle
//! connection or opens one (so threads run calls in parallel), sends the pool's setup
//! commands on each new connection, and gives it back unless its stream failed; closing.
//! Never: retry a command; pool a connection after `close`, or one whose stream failed.

use crate::connection::{CallError, Connection, Target};
use crate::reply::Reply;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The server's Redis protocol port when the address names none.
pub const DEFAULT_PORT: u16 = 7379;

/// Idle connections kept for reuse; more threads at once than this open extra connections
/// that are closed after their call.
const IDLE_MAX: usize = 16;

/// A pool of connections to one server.
pub struct Pool {
    addr: String,
    password: Option<String>,
    timeout: Option<Duration>,
    /// Commands every new connection sends first (after AUTH); a refusal fails the open
    /// (a server that does not know one is named as older than this client).
    setup: Vec<Vec<Vec<u8>>>,
    idle: Mutex<Vec<Connection>>,
    closed: AtomicBool,
}

impl Pool {
    /// Parses the address and opens a first connection, so a wrong address, password or
    /// setup command fails here rather than at the first call.
    pub fn connect(url: &str, timeout: Option<Duration>, setup: &[&[&[u8]]]) -> Result<Pool, CallError> {
        let (addr, password) = parse_url(url)?;
        let setup = setup.iter().map(|command| command.iter().map(|arg| arg.to_vec()).collect()).collect();
        let pool =
            Pool { addr, password, timeout, setup, idle: Mutex::new(Vec::new()), closed: AtomicBool::new(false) };
        let first = pool.open()?;
        pool.idle.lock().push(first);
        Ok(pool)
    }

    /// `host:port`.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// Sends one command on a pooled connection and reads its reply.
    pub fn call(&self, args: &[&[u8]]) -> Result<Reply, CallError> {
        if self.is_closed() {
            return Err(CallError::Closed);
        }
        let taken = self.idle.lock().pop();
        let mut connection = match taken {
            Some(connection) => connection,
            None => self.open()?,
        };
        match connection.call(args) {
            Ok(reply) => {
                self.give_back(connection);
                Ok(reply)
            }
            Err(CallError::Server(line)) => {
                self.give_back(connection);
                Err(CallError::Server(line))
            }
            // The stream failed: the connection is dropped, the next call opens another.
            Err(broken) => Err(broken),
        }
    }

    /// Closes the idle connections; a call under way closes its own when it ends, and
    /// calls after this fail with `CallError::Closed`.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.idle.lock().clear();
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn give_back(&self, connection: Connection) {
        let mut idle = self.idle.lock();
        // Checked under the lock `close` clears the pool under, so no connection is
        // pooled after the pool was closed.
        if idle.len() < IDLE_MAX && !self.is_closed() {
            idle.push(connection);
        }
    }

    fn open(&self) -> Result<Connection, CallError> {
        let target =
            Target { addr: &self.addr, password: self.password.as_deref(), timeout: self.timeout, timeout_hint: "" };
        let mut connection = Connection::connect(&target)?;
        for command in &self.setup {
            let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
            let name = String::from_utf8_lossy(&command[0]);
            connection.call(&args).map_err(|e| match e {
                // Redis' own code words: a password wanted or refused.
                CallError::Server(line) if line.starts_with("NOAUTH") || line.starts_with("WRONGPASS") => {
                    CallError::Auth(line)
                }
                // Redis' own text for a command a server does not have.
                CallError::Server(line) if line.starts_with("ERR unknown command") => CallError::Connection(format!(
                    "{}: the server does not know {name}: it is older than this client",
                    self.addr
                )),
                CallError::Server(line) => {
                    CallError::Connection(format!("{}: the server refused {name}: {line}", self.addr))
                }
                other => other,
            })?;
        }
        Ok(connection)
    }
}

/// `hotset://[:password@]host[:port]` as `host:port` and the password.
fn parse_url(url: &str) -> Result<(String, Option<String>), CallError> {
    let rest = url.strip_prefix("hotset://").ok_or_else(|| {
        CallError::Connection(format!("'{url}' is not a hotset:// address (hotset://[:password@]host[:port])"))
    })?;
    let rest = rest.trim_end_matches('/');
    let (password, hostport) = match rest.rsplit_once('@') {
        Some((auth, hostport)) => {
            let password = auth.split_once(':').map_or(auth, |(_, p)| p);
            (Some(password.to_string()).filter(|p| !p.is_empty()), hostport)
        }
        None => (None, rest),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        // An IPv6 address in brackets has colons of its own: the port follows the bracket.
        Some((host, port)) if !port.contains(']') => {
            let port: u16 =
                port.parse().map_err(|_| CallError::Connection(format!("'{port}' is not a port number")))?;
            (host.to_string(), port)
        }
        _ => (hostport.to_string(), DEFAULT_PORT),
    };
    if host.is_empty() {
        return Err(CallError::Connection(format!("'{url}' names no host")));
    }
    Ok((format!("{host}:{port}"), password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        let parsed = |url| parse_url(url).unwrap();
        assert_eq!(parsed("hotset://127.0.0.1:7000"), ("127.0.0.1:7000".into(), None));
        assert_eq!(parsed("hotset://localhost"), ("localhost:7379".into(), None));
        assert_eq!(parsed("hotset://:pw@h:1/"), ("h:1".into(), Some("pw".into())));
        assert_eq!(parsed("hotset://user:pw@h"), ("h:7379".into(), Some("pw".into())));
        assert_eq!(parsed("hotset://[::1]:9"), ("[::1]:9".into(), None));
        assert_eq!(parsed("hotset://[::1]"), ("[::1]:7379".into(), None));
        for bad in ["redis://h", "hotset://", "hotset://h:port", "hotset://:pw@"] {
            assert!(matches!(parse_url(bad), Err(CallError::Connection(_))), "{bad}");
        }
    }
}
