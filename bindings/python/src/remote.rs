//! The client side of the server's Redis protocol, for `hotset.connect`.
//!
//! Owns: the `hotset://[:password@]host[:port]` address, a pool of RESP2 connections
//! (a call takes an idle one or opens one, so threads run calls in parallel), each
//! switched to JSON errors (`DOC.ERRORS JSON`, after AUTH) when it opens, encoding a
//! command and reading its reply, and closing the pool. Never: retry a command on its own
//! (a write that may have reached the server must not be sent twice); a connection that
//! failed is dropped and the next call opens a fresh one; once closed, no call opens one.

use parking_lot::Mutex;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The server's Redis protocol port when the address names none.
pub const DEFAULT_PORT: u16 = 7379;

/// One RESP reply.
#[derive(Debug)]
pub enum Reply {
    Status(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
    /// An error line (read only inside this module: `call` turns it into `CallError`).
    Error(String),
}

/// Why a call failed.
#[derive(Debug)]
pub enum CallError {
    /// The server answered with an error line.
    Server(String),
    /// The connection could not be made, broke, or carried something that is not RESP.
    Connection(String),
    /// `close()` was called.
    Closed,
}

pub struct Remote {
    host: String,
    port: u16,
    password: Option<String>,
    timeout: Option<Duration>,
    idle: Mutex<Vec<Connection>>,
    closed: AtomicBool,
}

/// Idle connections kept for reuse; more than this many threads at once open extra
/// connections that are closed after their call.
const IDLE_MAX: usize = 16;

impl Remote {
    /// Parses the address and opens a first connection, so a wrong address or password
    /// fails here rather than at the first query.
    pub fn connect(url: &str, timeout: Option<Duration>) -> Result<Remote, CallError> {
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
            Some((host, port)) => {
                let port = port.parse().map_err(|_| CallError::Connection(format!("'{port}' is not a port number")))?;
                (host.trim_start_matches('[').trim_end_matches(']').to_string(), port)
            }
            None => (hostport.to_string(), DEFAULT_PORT),
        };
        if host.is_empty() {
            return Err(CallError::Connection(format!("'{url}' names no host")));
        }
        let remote =
            Remote { host, port, password, timeout, idle: Mutex::new(Vec::new()), closed: AtomicBool::new(false) };
        let first = remote.open()?;
        remote.idle.lock().push(first);
        Ok(remote)
    }

    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Sends one command and reads its reply.
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
            Err(broken) => Err(broken),
        }
    }

    /// Closes the idle connections; a call under way closes its own when it ends, and
    /// calls after this fail with `CallError::Closed`.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.idle.lock().clear();
    }

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
        let lost = |e: std::io::Error| CallError::Connection(format!("{}: {e}", self.address()));
        let addrs: Vec<_> = (self.host.as_str(), self.port).to_socket_addrs().map_err(lost)?.collect();
        let mut last = None;
        let mut stream = None;
        for addr in addrs {
            let attempt = match self.timeout {
                Some(timeout) => TcpStream::connect_timeout(&addr, timeout),
                None => TcpStream::connect(addr),
            };
            match attempt {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            lost(last.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address")))
        })?;
        stream.set_nodelay(true).map_err(lost)?;
        stream.set_read_timeout(self.timeout).map_err(lost)?;
        stream.set_write_timeout(self.timeout).map_err(lost)?;
        let writer = stream.try_clone().map_err(lost)?;
        let mut connection = Connection { reader: BufReader::with_capacity(64 << 10, stream), writer, out: Vec::new() };
        if let Some(password) = &self.password {
            connection.call(&[b"AUTH", password.as_bytes()]).map_err(|e| match e {
                CallError::Server(line) => CallError::Connection(line),
                other => other,
            })?;
        }
        // Errors as `CODE {json}`, which `errors::server` rebuilds into the engine's error;
        // a server that cannot is refused here rather than have its errors lose their kind.
        connection.call(&[b"DOC.ERRORS", b"JSON"]).map_err(|e| match e {
            CallError::Server(line) if line.starts_with("ERR unknown command") => CallError::Connection(format!(
                "{}: the server does not know DOC.ERRORS: it is older than this client",
                self.address()
            )),
            CallError::Server(line) => CallError::Connection(line),
            other => other,
        })?;
        Ok(connection)
    }
}

struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    out: Vec<u8>,
}

impl Connection {
    fn call(&mut self, args: &[&[u8]]) -> Result<Reply, CallError> {
        self.out.clear();
        self.out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            self.out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            self.out.extend_from_slice(arg);
            self.out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&self.out).map_err(broken)?;
        match read_reply(&mut self.reader)? {
            Reply::Error(line) => Err(CallError::Server(line)),
            reply => Ok(reply),
        }
    }
}

fn broken(e: std::io::Error) -> CallError {
    CallError::Connection(format!("connection lost: {e}"))
}

fn bad(what: &str) -> CallError {
    CallError::Connection(format!("the server sent {what}"))
}

fn read_line(reader: &mut BufReader<TcpStream>) -> Result<String, CallError> {
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line).map_err(broken)?;
    if line.is_empty() {
        return Err(CallError::Connection("connection closed by the server".into()));
    }
    if !line.ends_with(b"\r\n") {
        return Err(bad("a line without CRLF"));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| bad("a line that is not UTF-8"))
}

fn length(text: &str) -> Result<i64, CallError> {
    text.parse().map_err(|_| bad("a bad length"))
}

/// Reads one reply; an error line is `Reply::Error` at the top and `CallError::Server`
/// inside an array.
fn read_reply(reader: &mut BufReader<TcpStream>) -> Result<Reply, CallError> {
    let line = read_line(reader)?;
    let (kind, rest) = line.split_at(line.len().min(1));
    Ok(match kind {
        "+" => Reply::Status(rest.to_string()),
        "-" => Reply::Error(rest.to_string()),
        ":" => Reply::Int(length(rest)?),
        "$" => match length(rest)? {
            -1 => Reply::Nil,
            n if n < 0 => return Err(bad("a negative bulk length")),
            n => {
                let mut data = vec![0; n as usize + 2];
                reader.read_exact(&mut data).map_err(broken)?;
                if !data.ends_with(b"\r\n") {
                    return Err(bad("a bulk string without CRLF"));
                }
                data.truncate(n as usize);
                Reply::Bulk(data)
            }
        },
        "*" => match length(rest)? {
            -1 => Reply::Nil,
            n if n < 0 => return Err(bad("a negative array length")),
            n => {
                let mut items = Vec::with_capacity((n as usize).min(1024));
                for _ in 0..n {
                    match read_reply(reader)? {
                        Reply::Error(line) => return Err(CallError::Server(line)),
                        item => items.push(item),
                    }
                }
                Reply::Array(items)
            }
        },
        _ => return Err(bad(&format!("an unknown reply type '{kind}'"))),
    })
}
