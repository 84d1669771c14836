//! The reply tree that crosses the seam between the engine and its host.
//!
//! Owns [`Value`], a RESP3 reply with the two RESP2 nulls kept apart, and [`Protocol`]. A host
//! answers `redis.call` with a `Value`; the engine answers EVAL and FCALL with one. Turning a
//! `Value` into bytes (and bytes into a `Value`) is `resp.rs`'s job; turning it into Lua values
//! and back is `convert.rs`'s. This module must never know about Lua or about sockets.

/// The protocol a reply is written in: the caller's (HELLO 2/3) or the script's
/// (`redis.setresp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// RESP2: no maps, sets, doubles, booleans or typed nulls; they are written down-converted
    /// the way Redis 7.0 writes them to a RESP2 client.
    Resp2,
    /// RESP3.
    Resp3,
}

impl Protocol {
    /// The protocol for `HELLO n` / `redis.setresp(n)`, if `n` names one.
    pub fn from_number(number: i64) -> Option<Protocol> {
        match number {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => None,
        }
    }

    /// 2 or 3.
    pub fn number(self) -> u8 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// One reply, possibly nested.
///
/// Texts are bytes: Redis replies are binary-safe and scripts handle arbitrary bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `+text`: a status reply. The text holds no CR or LF.
    Simple(Vec<u8>),
    /// `-CODE message`: an error reply, without the leading `-`. The text holds no CR or LF.
    Error(Vec<u8>),
    /// `:n`.
    Int(i64),
    /// `$len` bytes.
    Bulk(Vec<u8>),
    /// The null of a missing value: `$-1` in RESP2, `_` in RESP3.
    Null,
    /// The null of a missing aggregate: `*-1` in RESP2, `_` in RESP3.
    NullArray,
    /// `*n`.
    Array(Vec<Value>),
    /// `%n` in RESP3; a flat array of keys and values in RESP2. Pairs keep their order.
    Map(Vec<(Value, Value)>),
    /// `~n` in RESP3; an array in RESP2.
    Set(Vec<Value>),
    /// `,d` in RESP3; a bulk string of the number in RESP2.
    Double(f64),
    /// `#t`/`#f` in RESP3; `:1`/`:0` in RESP2.
    Bool(bool),
    /// `(digits` in RESP3; a bulk string in RESP2. The text holds no CR or LF.
    BigNumber(Vec<u8>),
    /// `=len fmt:text` in RESP3; a bulk string of the text in RESP2.
    Verbatim {
        /// Three bytes, such as `txt` or `mkd`.
        format: [u8; 3],
        /// The text after the `fmt:` prefix.
        text: Vec<u8>,
    },
}

impl Value {
    /// `+OK`.
    pub fn ok() -> Value {
        Value::Simple(b"OK".to_vec())
    }

    /// A status reply from text; CR and LF become spaces, as Redis does for a status a script
    /// returns, so the reply stays one line.
    pub fn simple(text: impl AsRef<[u8]>) -> Value {
        Value::Simple(one_line(text.as_ref()))
    }

    /// An error reply from text without the leading `-`; CR and LF become spaces.
    pub fn error(text: impl AsRef<[u8]>) -> Value {
        Value::Error(one_line(text.as_ref()))
    }

    /// A bulk string.
    pub fn bulk(bytes: impl AsRef<[u8]>) -> Value {
        Value::Bulk(bytes.as_ref().to_vec())
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error(_))
    }
}

/// `text` with every CR and LF replaced by a space.
pub(crate) fn one_line(text: &[u8]) -> Vec<u8> {
    text.iter().map(|&byte| if byte == b'\r' || byte == b'\n' { b' ' } else { byte }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_error_texts_are_kept_on_one_line() {
        assert_eq!(Value::simple("a\r\nb"), Value::Simple(b"a  b".to_vec()));
        assert_eq!(Value::error("ERR x\ny"), Value::Error(b"ERR x y".to_vec()));
    }

    #[test]
    fn protocol_numbers_round_trip() {
        assert_eq!(Protocol::from_number(2), Some(Protocol::Resp2));
        assert_eq!(Protocol::from_number(3).map(Protocol::number), Some(3));
        assert_eq!(Protocol::from_number(4), None);
    }
}
