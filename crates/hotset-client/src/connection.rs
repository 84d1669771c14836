//! One blocking connection to a server.
//!
//! Owns: [`Connection`]: connecting to the first of an address's resolutions that accepts
//! within the time limit, AUTH, commands queued with `send` and written by `flush`, replies
//! taken in order by `read`, and the text of a failure, which names the address and, for a
//! time limit, the limit (a server that accepts and never answers must not hang a tool).
//! Never: retry, or keep using a connection whose stream failed (the caller drops it).

use crate::reply::{self, Reply};
use std::io::{BufReader, ErrorKind, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The server answered with an error line (its text, without the `-`).
    Server(String),
    /// The connection could not be made, broke, timed out, or carried something that is
    /// not RESP; the text says which, naming the address.
    Connection(String),
    /// The server refused the password, or wants one (its `WRONGPASS`/`NOAUTH` line).
    Auth(String),
    /// The pool was closed.
    Closed,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Server(line) | CallError::Connection(line) | CallError::Auth(line) => write!(f, "{line}"),
            CallError::Closed => write!(f, "the client was closed"),
        }
    }
}

impl std::error::Error for CallError {}

/// Where a server listens and how to talk to it.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// `host:port`.
    pub addr: &'a str,
    /// Sent with AUTH right after connecting.
    pub password: Option<&'a str>,
    /// The longest wait to connect, and for each read or write to make progress (for a
    /// reply: until its next byte); `None` waits for ever. Must not be zero.
    pub timeout: Option<Duration>,
    /// Appended to a time limit's message: where the user sets it (the CLI says
    /// ` (--timeout, HOTSET_TIMEOUT)`).
    pub timeout_hint: &'a str,
}

/// One connection that pipelines: `send` queues commands, `flush` writes them all, and
/// `read` takes their replies in order.
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    out: Vec<u8>,
    addr: String,
    timeout: Option<Duration>,
    timeout_hint: String,
}

impl Connection {
    /// Connects and, with a password, authenticates (a refused AUTH is `CallError::Auth`
    /// carrying the server's line).
    pub fn connect(target: &Target<'_>) -> Result<Connection, CallError> {
        assert!(target.timeout.is_none_or(|t| !t.is_zero()), "a zero timeout means none: pass None");
        let stream = open(target)?;
        let failed = |e: std::io::Error| CallError::Connection(format!("connecting to {}: {e}", target.addr));
        stream.set_read_timeout(target.timeout).map_err(failed)?;
        stream.set_write_timeout(target.timeout).map_err(failed)?;
        stream.set_nodelay(true).map_err(failed)?;
        let reader = stream.try_clone().map_err(failed)?;
        let mut connection = Connection {
            reader: BufReader::with_capacity(1 << 16, reader),
            writer: stream,
            out: Vec::new(),
            addr: target.addr.to_string(),
            timeout: target.timeout,
            timeout_hint: target.timeout_hint.to_string(),
        };
        if let Some(password) = target.password {
            connection.call(&[b"AUTH", password.as_bytes()]).map_err(|e| match e {
                CallError::Server(line) => CallError::Auth(line),
                other => other,
            })?;
        }
        Ok(connection)
    }

    /// `host:port` as given.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// Queues one command (not written until `flush`).
    pub fn send(&mut self, args: &[&[u8]]) {
        self.out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            self.out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            self.out.extend_from_slice(arg);
            self.out.extend_from_slice(b"\r\n");
        }
    }

    /// Writes every queued command.
    pub fn flush(&mut self) -> Result<(), CallError> {
        let written = self.writer.write_all(&self.out);
        self.out.clear();
        written.map_err(|e| self.failure("sending to", "it took none of the request", &e))
    }

    /// The next reply; a server error line as `CallError::Server`.
    pub fn read(&mut self) -> Result<Reply, CallError> {
        let read = reply::read(&mut self.reader);
        reply::outcome(read, |e| self.failure("reading from", "no reply", &e))
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<Reply, CallError> {
        self.send(args);
        self.flush()?;
        self.read()
    }

    /// The text of a failed read or write: a time limit names the address and the limit.
    fn failure(&self, doing: &str, stalled: &str, error: &std::io::Error) -> CallError {
        CallError::Connection(match (error.kind(), self.timeout) {
            (ErrorKind::WouldBlock | ErrorKind::TimedOut, Some(limit)) => {
                format!("{doing} {}: {stalled} within {}{}", self.addr, seconds(limit), self.timeout_hint)
            }
            (ErrorKind::UnexpectedEof, _) => format!("{doing} {}: the server closed the connection", self.addr),
            _ => format!("{doing} {}: {error}", self.addr),
        })
    }
}

/// A connection to the first of the address's resolutions that accepts one in time.
fn open(target: &Target<'_>) -> Result<TcpStream, CallError> {
    let addr = target.addr;
    let failed = |text: String| CallError::Connection(format!("connecting to {addr}: {text}"));
    let Some(limit) = target.timeout else {
        return TcpStream::connect(addr).map_err(|e| failed(e.to_string()));
    };
    let resolved = addr.to_socket_addrs().map_err(|e| failed(e.to_string()))?;
    let mut last = None;
    for socket in resolved {
        match TcpStream::connect_timeout(&socket, limit) {
            Ok(stream) => return Ok(stream),
            Err(error) => last = Some(error),
        }
    }
    Err(match last {
        Some(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            failed(format!("no connection within {}{}", seconds(limit), target.timeout_hint))
        }
        Some(error) => failed(error.to_string()),
        None => failed("the name resolves to no address".to_string()),
    })
}

/// A time limit as the user typed it: `10 s`, `0.5 s`.
fn seconds(limit: Duration) -> String {
    format!("{} s", limit.as_secs_f64())
}
