//! The command-line client of a running server: `hotset sql`, `hotset status`, and the
//! connection `hotset import` and `hotset export` pipeline over.
//!
//! Owns: one blocking RESP connection (AUTH when a password is given), sending commands and
//! reading their replies, and the time limits on both: a connection that is not made, or a
//! reply of which no byte arrives, within the timeout is an error naming the address and
//! the limit (a server that accepts and never answers must not hang the CLI). Never:
//! retry, or hide a server error (it is printed and the process exits with 1).

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A reply, as far as the CLI needs one.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Text(String),
    Int(i64),
    Null,
    List(Vec<Reply>),
}

/// Where a running server listens and how long to wait for it.
pub struct Target<'a> {
    pub addr: &'a str,
    pub password: Option<&'a str>,
    /// The longest wait to connect, and for each read or write to make progress (for a
    /// reply: until its next byte); `None` waits for ever.
    pub timeout: Option<Duration>,
}

/// Connects to the target, authenticates if asked, runs one command and returns its reply;
/// a server error comes back as `Err` with its text.
pub fn call(target: &Target<'_>, args: &[&str]) -> Result<Reply, String> {
    let mut client = Client::connect(target)?;
    client.send(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
    client.flush()?;
    client.read()
}

/// One connection that pipelines: `send` queues commands, `flush` writes them all, and
/// `read` takes their replies in order.
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    out: Vec<u8>,
    addr: String,
    timeout: Option<Duration>,
}

impl Client {
    pub fn connect(target: &Target<'_>) -> Result<Client, String> {
        assert!(target.timeout.is_none_or(|t| !t.is_zero()), "a zero timeout means none: pass None");
        let stream = open(target.addr, target.timeout)?;
        let configured = stream
            .set_read_timeout(target.timeout)
            .and_then(|()| stream.set_write_timeout(target.timeout))
            .and_then(|()| stream.set_nodelay(true));
        configured.map_err(|e| format!("connecting to {}: {e}", target.addr))?;
        let reader = stream.try_clone().map_err(|e| format!("connecting to {}: {e}", target.addr))?;
        let mut client = Client {
            reader: BufReader::with_capacity(1 << 16, reader),
            writer: stream,
            out: Vec::new(),
            addr: target.addr.to_string(),
            timeout: target.timeout,
        };
        if let Some(password) = target.password {
            client.send(&[b"AUTH", password.as_bytes()]);
            client.flush()?;
            client.read()?;
        }
        Ok(client)
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

    pub fn flush(&mut self) -> Result<(), String> {
        let written =
            self.writer.write_all(&self.out).map_err(|e| self.failure("sending to", "it took none of the request", &e));
        self.out.clear();
        written
    }

    /// The next reply; a server error as `Err` with its text.
    pub fn read(&mut self) -> Result<Reply, String> {
        match read(&mut self.reader) {
            Ok(reply) => reply,
            Err(error) => Err(self.failure("reading from", "no reply", &error)),
        }
    }

    /// The text of a failed read or write: a timeout names the address and the limit.
    fn failure(&self, doing: &str, stalled: &str, error: &std::io::Error) -> String {
        match (error.kind(), self.timeout) {
            (ErrorKind::WouldBlock | ErrorKind::TimedOut, Some(limit)) => {
                format!("{doing} {}: {stalled} within {} (--timeout, HOTSET_TIMEOUT)", self.addr, seconds(limit))
            }
            (ErrorKind::UnexpectedEof, _) => format!("{doing} {}: the server closed the connection", self.addr),
            _ => format!("{doing} {}: {error}", self.addr),
        }
    }
}

/// A connection to the first of the address's resolutions that accepts one in time.
fn open(addr: &str, timeout: Option<Duration>) -> Result<TcpStream, String> {
    let Some(limit) = timeout else {
        return TcpStream::connect(addr).map_err(|e| format!("connecting to {addr}: {e}"));
    };
    let resolved = addr.to_socket_addrs().map_err(|e| format!("connecting to {addr}: {e}"))?;
    let mut last = None;
    for socket in resolved {
        match TcpStream::connect_timeout(&socket, limit) {
            Ok(stream) => return Ok(stream),
            Err(error) => last = Some(error),
        }
    }
    Err(match last {
        Some(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            format!("connecting to {addr}: no connection within {} (--timeout, HOTSET_TIMEOUT)", seconds(limit))
        }
        Some(error) => format!("connecting to {addr}: {error}"),
        None => format!("connecting to {addr}: the name resolves to no address"),
    })
}

/// A timeout as the user typed it: `10 s`, `0.5 s`.
fn seconds(limit: Duration) -> String {
    format!("{} s", limit.as_secs_f64())
}

/// The next reply: the outer `Err` is the connection failing (or a reply that is not
/// RESP), the inner one the server's error reply.
fn read(reader: &mut impl BufRead) -> std::io::Result<Result<Reply, String>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(ErrorKind::UnexpectedEof.into());
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let (kind, rest) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
    let number = || {
        rest.parse::<i64>().map_err(|_| std::io::Error::new(ErrorKind::InvalidData, format!("bad reply line {line:?}")))
    };
    let reply = match kind {
        "+" => Reply::Text(rest.to_string()),
        "-" => return Ok(Err(rest.to_string())),
        ":" => Reply::Int(number()?),
        "_" => Reply::Null,
        "$" | "=" if number()? < 0 => Reply::Null,
        "$" | "=" => {
            let mut bytes = vec![0; number()? as usize + 2];
            reader.read_exact(&mut bytes)?;
            bytes.truncate(bytes.len() - 2);
            Reply::Text(String::from_utf8_lossy(&bytes).into_owned())
        }
        "*" if number()? < 0 => Reply::Null,
        "*" | "~" => {
            let mut items = Vec::new();
            for _ in 0..number()? {
                match read(reader)? {
                    Ok(item) => items.push(item),
                    Err(error) => return Ok(Err(error)),
                }
            }
            Reply::List(items)
        }
        _ => return Err(std::io::Error::new(ErrorKind::InvalidData, format!("unexpected reply line {line:?}"))),
    };
    Ok(Ok(reply))
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Text(text) => write!(f, "{text}"),
            Reply::Int(n) => write!(f, "{n}"),
            Reply::Null => write!(f, "(nil)"),
            Reply::List(items) => items.iter().try_for_each(|item| writeln!(f, "{item}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse() {
        let mut input: &[u8] = b"*3\r\n$3\r\nabc\r\n:-4\r\n$-1\r\n-ERR nope\r\n+OK\r\n";
        let list = Reply::List(vec![Reply::Text("abc".into()), Reply::Int(-4), Reply::Null]);
        assert_eq!(read(&mut input).unwrap(), Ok(list));
        assert_eq!(read(&mut input).unwrap(), Err("ERR nope".into()));
        assert_eq!(read(&mut input).unwrap(), Ok(Reply::Text("OK".into())));
        assert_eq!(read(&mut input).unwrap_err().kind(), ErrorKind::UnexpectedEof, "end of input");
    }
}
