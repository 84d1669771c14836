//! The command-line client of a running server: `hotset sql` and `hotset status`.
//!
//! Owns: one blocking RESP connection (AUTH when a password is given), sending one
//! command and reading its reply. Never: retry, or hide a server error (it is printed and
//! the process exits with 1).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

/// A reply, as far as the CLI needs one.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Text(String),
    Int(i64),
    Null,
    List(Vec<Reply>),
}

/// Connects to `addr`, authenticates if asked, runs one command and returns its reply; a
/// server error comes back as `Err` with its text.
pub fn call(addr: &str, password: Option<&str>, args: &[&str]) -> Result<Reply, String> {
    let mut client = Client::connect(addr, password)?;
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
}

impl Client {
    pub fn connect(addr: &str, password: Option<&str>) -> Result<Client, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connecting to {addr}: {e}"))?;
        let reader = BufReader::with_capacity(1 << 16, stream.try_clone().map_err(|e| e.to_string())?);
        let mut client = Client { reader, writer: stream, out: Vec::new() };
        if let Some(password) = password {
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
        let written = self.writer.write_all(&self.out).map_err(|e| format!("sending: {e}"));
        self.out.clear();
        written
    }

    /// The next reply; a server error as `Err` with its text.
    pub fn read(&mut self) -> Result<Reply, String> {
        read(&mut self.reader)
    }
}

fn read(reader: &mut impl BufRead) -> Result<Reply, String> {
    let mut line = String::new();
    if reader.read_line(&mut line).map_err(|e| format!("reading: {e}"))? == 0 {
        return Err("the server closed the connection".into());
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let (kind, rest) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
    let number = || rest.parse::<i64>().map_err(|_| format!("bad reply line {line:?}"));
    match kind {
        "+" => Ok(Reply::Text(rest.to_string())),
        "-" => Err(rest.to_string()),
        ":" => Ok(Reply::Int(number()?)),
        "_" => Ok(Reply::Null),
        "$" | "=" if number()? < 0 => Ok(Reply::Null),
        "$" | "=" => {
            let mut bytes = vec![0; number()? as usize + 2];
            reader.read_exact(&mut bytes).map_err(|e| format!("reading: {e}"))?;
            bytes.truncate(bytes.len() - 2);
            Ok(Reply::Text(String::from_utf8_lossy(&bytes).into_owned()))
        }
        "*" if number()? < 0 => Ok(Reply::Null),
        "*" | "~" => (0..number()?).map(|_| read(reader)).collect::<Result<_, _>>().map(Reply::List),
        _ => Err(format!("unexpected reply line {line:?}")),
    }
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
        assert_eq!(read(&mut input), Ok(Reply::List(vec![Reply::Text("abc".into()), Reply::Int(-4), Reply::Null])));
        assert_eq!(read(&mut input), Err("ERR nope".into()));
        assert_eq!(read(&mut input), Ok(Reply::Text("OK".into())));
        assert!(read(&mut input).is_err(), "end of input");
    }
}
