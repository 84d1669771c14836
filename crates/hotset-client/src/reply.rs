//! A reply as the server sends it, and reading one off a stream.
//!
//! Owns: [`Reply`] and `read`, which takes exactly one reply (nested arrays included) or
//! fails; RESP2, plus RESP3's null, verbatim string and set (as `Nil`, `Bulk`, `Array`).
//! Never: accept a line without CRLF, a negative length other than -1, or an unknown type.

use crate::connection::CallError;
use std::io::BufRead;

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A simple string (`+OK`).
    Status(String),
    /// An integer.
    Int(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// A null bulk string or array.
    Nil,
    /// An array, in order.
    Array(Vec<Reply>),
}

impl Reply {
    /// The reply as text: a status or bulk string (lossy UTF-8); `None` for other kinds.
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Status(text) => Some(text.clone()),
            Reply::Bulk(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }
}

/// As a terminal shows it: strings as text, `(nil)`, an array one item a line.
impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Status(text) => write!(f, "{text}"),
            Reply::Bulk(bytes) => write!(f, "{}", String::from_utf8_lossy(bytes)),
            Reply::Int(n) => write!(f, "{n}"),
            Reply::Nil => write!(f, "(nil)"),
            Reply::Array(items) => items.iter().try_for_each(|item| writeln!(f, "{item}")),
        }
    }
}

/// What a read gives: the outer `Err` is the stream failing (or carrying something that
/// is not RESP), the inner one the server's error line.
pub(crate) type Read = std::io::Result<Result<Reply, String>>;

fn bad(what: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.into())
}

/// Reads one reply. An error line inside an array ends the array as that error.
pub(crate) fn read(reader: &mut impl BufRead) -> Read {
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    if !line.ends_with(b"\r\n") {
        return Err(bad("the server sent a line without CRLF"));
    }
    line.truncate(line.len() - 2);
    let line = String::from_utf8(line).map_err(|_| bad("the server sent a line that is not UTF-8"))?;
    let (kind, rest) = line.split_at(line.len().min(1));
    let length = || rest.parse::<i64>().map_err(|_| bad(format!("the server sent a bad length in {line:?}")));
    let reply = match kind {
        "+" => Reply::Status(rest.to_string()),
        "-" => return Ok(Err(rest.to_string())),
        ":" => Reply::Int(length()?),
        "_" => Reply::Nil,
        "$" | "=" => match length()? {
            -1 => Reply::Nil,
            n if n < 0 => return Err(bad("the server sent a negative bulk length")),
            n => {
                let mut data = vec![0; n as usize + 2];
                reader.read_exact(&mut data)?;
                if !data.ends_with(b"\r\n") {
                    return Err(bad("the server sent a bulk string without CRLF"));
                }
                data.truncate(n as usize);
                Reply::Bulk(data)
            }
        },
        "*" | "~" => match length()? {
            -1 => Reply::Nil,
            n if n < 0 => return Err(bad("the server sent a negative array length")),
            n => {
                let mut items = Vec::with_capacity((n as usize).min(1024));
                for _ in 0..n {
                    match read(reader)? {
                        Ok(item) => items.push(item),
                        Err(error) => return Ok(Err(error)),
                    }
                }
                Reply::Array(items)
            }
        },
        _ => return Err(bad(format!("the server sent an unknown reply type in {line:?}"))),
    };
    Ok(Ok(reply))
}

/// A read as a call's outcome: the server's error line as `CallError::Server`.
pub(crate) fn outcome(read: Read, failed: impl FnOnce(std::io::Error) -> CallError) -> Result<Reply, CallError> {
    match read {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(line)) => Err(CallError::Server(line)),
        Err(error) => Err(failed(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse() {
        let mut input: &[u8] =
            b"*3\r\n$3\r\nabc\r\n:-4\r\n$-1\r\n-ERR nope\r\n+OK\r\n_\r\n*2\r\n:1\r\n-NOT_FOUND x\r\n";
        let list = Reply::Array(vec![Reply::Bulk(b"abc".to_vec()), Reply::Int(-4), Reply::Nil]);
        assert_eq!(read(&mut input).unwrap(), Ok(list));
        assert_eq!(read(&mut input).unwrap(), Err("ERR nope".into()));
        assert_eq!(read(&mut input).unwrap(), Ok(Reply::Status("OK".into())));
        assert_eq!(read(&mut input).unwrap(), Ok(Reply::Nil));
        assert_eq!(read(&mut input).unwrap(), Err("NOT_FOUND x".into()), "an error inside an array ends it");
        assert_eq!(read(&mut input).unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof, "end of input");
    }

    #[test]
    fn what_is_not_resp_is_refused() {
        for input in [&b"$3\r\nab\r\n"[..], b"+OK\n", b"?x\r\n", b"$-2\r\n", b":x\r\n", b"$3\r\nabcde"] {
            let error = read(&mut &input[..]).expect_err(&String::from_utf8_lossy(input));
            assert!(
                matches!(error.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof),
                "{error}"
            );
        }
    }
}
