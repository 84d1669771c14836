//! Reply encoding for RESP2 and RESP3, written straight into a connection's output buffer.
//!
//! Owns: the wire shape of every reply type and how each degrades under RESP2 (maps as
//! flat arrays, doubles as bulk strings, booleans as integers, null as `$-1` or `*-1`).
//! Never: decide what a command answers (the command modules do), or allocate: numbers are
//! formatted on the stack.

/// The protocol a connection speaks (`HELLO 3` switches to RESP3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Resp2,
    Resp3,
}

/// Writes replies into `out`.
pub struct Reply<'a> {
    pub out: &'a mut Vec<u8>,
    pub protocol: Protocol,
}

impl Reply<'_> {
    /// `+OK`-style status line. `text` must not contain CR or LF.
    pub fn simple(&mut self, text: &str) {
        self.line(b'+', text.as_bytes());
    }

    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    /// An error line; `text` is the full message after `-` (`ERR ...`, `WRONGTYPE ...`).
    /// Line breaks in it are replaced so the frame stays intact.
    pub fn error(&mut self, text: &str) {
        self.out.push(b'-');
        self.out.extend(text.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, value: i64) {
        self.out.push(b':');
        self.number(value);
    }

    pub fn bulk(&mut self, bytes: &[u8]) {
        self.out.push(b'$');
        self.number(bytes.len() as i64);
        self.out.extend_from_slice(bytes);
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn bulk_or_null(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            Some(bytes) => self.bulk(bytes),
            None => self.null(),
        }
    }

    /// The null reply: `_` in RESP3, the null bulk string in RESP2.
    pub fn null(&mut self) {
        match self.protocol {
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
            Protocol::Resp2 => self.out.extend_from_slice(b"$-1\r\n"),
        }
    }

    /// The null array (EXEC of a discarded transaction): `_` in RESP3, `*-1` in RESP2.
    pub fn null_array(&mut self) {
        match self.protocol {
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
            Protocol::Resp2 => self.out.extend_from_slice(b"*-1\r\n"),
        }
    }

    pub fn array(&mut self, len: usize) {
        self.out.push(b'*');
        self.number(len as i64);
    }

    /// A push (RESP3 `>`: pub/sub messages and confirmations); an array in RESP2.
    pub fn push(&mut self, len: usize) {
        self.out.push(if self.protocol == Protocol::Resp3 { b'>' } else { b'*' });
        self.number(len as i64);
    }

    /// A set (RESP3 `~`); an array in RESP2.
    pub fn set(&mut self, len: usize) {
        self.out.push(if self.protocol == Protocol::Resp3 { b'~' } else { b'*' });
        self.number(len as i64);
    }

    /// A map of `len` pairs (RESP3 `%`); a flat array of `2 * len` items in RESP2.
    pub fn map(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp3 => {
                self.out.push(b'%');
                self.number(len as i64);
            }
            Protocol::Resp2 => self.array(len * 2),
        }
    }

    /// A verbatim text (RESP3 `=` with format `txt`); a bulk string in RESP2.
    pub fn verbatim(&mut self, text: &str) {
        match self.protocol {
            Protocol::Resp3 => {
                self.out.push(b'=');
                self.number(text.len() as i64 + 4);
                self.out.extend_from_slice(b"txt:");
                self.out.extend_from_slice(text.as_bytes());
                self.out.extend_from_slice(b"\r\n");
            }
            Protocol::Resp2 => self.bulk(text.as_bytes()),
        }
    }

    /// A double (RESP3 `,`; a bulk string in RESP2), printed as Redis 7.0 prints scores
    /// (`%.17g`: `1.1000000000000001`, `inf`).
    pub fn double(&mut self, value: f64) {
        match self.protocol {
            Protocol::Resp3 => {
                self.out.push(b',');
                hotset_core::kv::write_g17(value, self.out);
                self.out.extend_from_slice(b"\r\n");
            }
            Protocol::Resp2 => {
                // The text goes first, then its length header is slid in before it.
                let start = self.out.len();
                hotset_core::kv::write_g17(value, self.out);
                let len = self.out.len() - start;
                let (digits, at) = hotset_core::kv::format_i64_inline(len as i64);
                let header = [&b"$"[..], &digits[at..], b"\r\n"];
                self.out.splice(start..start, header.into_iter().flatten().copied());
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A double or a null.
    pub fn double_or_null(&mut self, value: Option<f64>) {
        match value {
            Some(value) => self.double(value),
            None => self.null(),
        }
    }

    fn line(&mut self, kind: u8, text: &[u8]) {
        self.out.push(kind);
        self.out.extend_from_slice(text);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A decimal number and CRLF.
    fn number(&mut self, value: i64) {
        let (digits, at) = hotset_core::kv::format_i64_inline(value);
        self.out.extend_from_slice(&digits[at..]);
        self.out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(protocol: Protocol, f: impl FnOnce(&mut Reply<'_>)) -> String {
        let mut out = Vec::new();
        f(&mut Reply { out: &mut out, protocol });
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn shapes_per_protocol() {
        for (protocol, null, map, set) in
            [(Protocol::Resp2, "$-1\r\n", "*2\r\n", "*1\r\n"), (Protocol::Resp3, "_\r\n", "%1\r\n", "~1\r\n")]
        {
            assert_eq!(encode(protocol, |r| r.null()), null);
            assert_eq!(encode(protocol, |r| r.map(1)), map);
            assert_eq!(encode(protocol, |r| r.set(1)), set);
        }
        assert_eq!(encode(Protocol::Resp2, |r| r.int(i64::MIN)), ":-9223372036854775808\r\n");
        assert_eq!(encode(Protocol::Resp2, |r| r.int(0)), ":0\r\n");
        assert_eq!(encode(Protocol::Resp2, |r| r.bulk(b"a\r\nb")), "$4\r\na\r\nb\r\n");
        assert_eq!(encode(Protocol::Resp2, |r| r.error("ERR bad\r\nthing")), "-ERR bad  thing\r\n");
        assert_eq!(encode(Protocol::Resp3, |r| r.verbatim("hi")), "=6\r\ntxt:hi\r\n");
        assert_eq!(encode(Protocol::Resp2, |r| r.double(1.1)), "$18\r\n1.1000000000000001\r\n");
        assert_eq!(encode(Protocol::Resp3, |r| r.double(f64::NEG_INFINITY)), ",-inf\r\n");
        assert_eq!(encode(Protocol::Resp2, |r| r.double(2.0)), "$1\r\n2\r\n");
    }
}
